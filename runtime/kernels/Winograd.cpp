//===- Winograd.cpp - FP32 3x3 convolution on Winograd F(2x2, 3x3), AVX2 -===//
//
// Winograd.h says what is computed and in which order. Layouts:
//   V[xi][t][c] and M[xi][t][kp]: row-major per xi, tiles t of all images
//   in (image, tile row, tile column) order;
//   U[xi][kb][c][16]: per xi and block kb of 16 output channels, the c x 16
//   block the multiply streams, one row of 16 per input channel.
// The multiply keeps a 6 x 16 block of M in twelve registers (six tiles,
// two vectors of eight output channels), one fused multiply-add per
// register per input channel (Avx2Microkernel.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Winograd.h"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include "runtime/kernels/Avx2Microkernel.h"
#define MIXPREC_WINOGRAD_ISA MIXPREC_AVX2_FMA
#endif

namespace mixprec::runtime::cpu {

bool winogradTakes(const WinogradShape &s) {
  const int64_t padBottom = s.ho + 2 - s.h - s.padTop, padRight = s.wo + 2 - s.w - s.padLeft;
  for (int64_t pad : {s.padTop, s.padLeft, padBottom, padRight})
    if (pad < 0 || pad > 2)
      return false;
  const bool band = s.bandTileRows >= 0;
  if (band && (s.n != 1 || s.bandTileRows < 1 || s.firstTileRow < 0 ||
               s.firstTileRow + s.bandTileRows > s.tileRows()))
    return false;
  return s.n > 0 && s.c > 0 && s.k > 0 && s.c % 8 == 0 && s.k % 8 == 0 && s.h > 0 && s.w > 0 &&
         s.ho > 0 && s.wo > 0 && (band || s.firstTileRow == 0);
}

size_t winogradWeightFloats(const WinogradShape &s) {
  return size_t(16) * size_t(s.c) * size_t(s.paddedK());
}
size_t winogradInputFloats(const WinogradShape &s) {
  return size_t(16) * size_t(s.tiles()) * size_t(s.c);
}
size_t winogradProductFloats(const WinogradShape &s) {
  return size_t(16) * size_t(s.tiles()) * size_t(s.paddedK());
}

int64_t winogradInputUnits(const WinogradShape &s) { return s.n * (s.c / 8) * s.bandRows(); }
int64_t winogradMultiplyUnits(const WinogradShape &s) { return 16 * (s.paddedK() / 16); }
int64_t winogradOutputUnits(const WinogradShape &s) { return s.n * (s.k / 8) * s.bandRows(); }

/// x rounded to the nearest float (ties to even), past the float range to
/// an infinity, as an IEEE conversion does: spelled out, since C++ leaves
/// a conversion beyond the largest finite float to the implementation.
static float toFloat(double x) {
  const double limit = 0x1.ffffffp+127; // halfway from FLT_MAX to 2^128
  if (x >= limit)
    return std::numeric_limits<float>::infinity();
  if (x <= -limit)
    return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

void winogradTransformWeight(const WinogradShape &s, const float *g, float *u) {
  const int64_t blocks = s.paddedK() / 16;
  std::fill(u, u + winogradWeightFloats(s), 0.0f);
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], in double: each U
  // element rounded once.
  static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < s.c; ++c) {
      const float *f = g + (k * s.c + c) * 9;
      double gg[4][3]; // G g
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          gg[i][j] = G[i][0] * f[j] + G[i][1] * f[3 + j] + G[i][2] * f[6 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const double x = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
          const int64_t xi = i * 4 + j;
          u[((xi * blocks + k / 16) * s.c + c) * 16 + k % 16] = toFloat(x);
        }
    }
}

#if defined(__x86_64__)

bool winogradAvailable() { return avx2::cpuRuns(); }

void winogradInput(const WinogradShape &s, const float *src, float *v, int64_t begin,
                   int64_t end) MIXPREC_WINOGRAD_ISA;
void winogradInput(const WinogradShape &s, const float *src, float *v, int64_t begin, int64_t end) {
  const int64_t blocks = s.c / 8, rows = s.bandRows(), cols = s.tileCols();
  const int64_t tiles = s.tiles();
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t ty = unit % rows, cb = unit / rows % blocks, image = unit / rows / blocks;
    const float *plane = src + (image * blocks + cb) * s.h * s.w * 8;
    const int64_t y0 = 2 * (s.firstTileRow + ty) - s.padTop;
    for (int64_t tx = 0; tx < cols; ++tx) {
      const int64_t x0 = 2 * tx - s.padLeft;
      __m256 d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const int64_t y = y0 + i, x = x0 + j;
          d[i][j] = y >= 0 && y < s.h && x >= 0 && x < s.w
                        ? _mm256_loadu_ps(plane + (y * s.w + x) * 8)
                        : _mm256_setzero_ps();
        }
      // t = B^T d, then V = t B; B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
      __m256 t[4][4];
      for (int j = 0; j < 4; ++j) {
        t[0][j] = _mm256_sub_ps(d[0][j], d[2][j]);
        t[1][j] = _mm256_add_ps(d[1][j], d[2][j]);
        t[2][j] = _mm256_sub_ps(d[2][j], d[1][j]);
        t[3][j] = _mm256_sub_ps(d[1][j], d[3][j]);
      }
      const int64_t tile = (image * rows + ty) * cols + tx;
      float *out = v + tile * s.c + cb * 8;
      const size_t step = size_t(tiles) * size_t(s.c); // from one xi to the next
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(out + (i * 4 + 0) * step, _mm256_sub_ps(t[i][0], t[i][2]));
        _mm256_storeu_ps(out + (i * 4 + 1) * step, _mm256_add_ps(t[i][1], t[i][2]));
        _mm256_storeu_ps(out + (i * 4 + 2) * step, _mm256_sub_ps(t[i][2], t[i][1]));
        _mm256_storeu_ps(out + (i * 4 + 3) * step, _mm256_sub_ps(t[i][1], t[i][3]));
      }
    }
  }
}

void winogradMultiply(const WinogradShape &s, const float *v, const float *u, float *m,
                      int64_t begin, int64_t end) MIXPREC_WINOGRAD_ISA;
void winogradMultiply(const WinogradShape &s, const float *v, const float *u, float *m,
                      int64_t begin, int64_t end) {
  const int64_t kp = s.paddedK(), blocks = kp / 16, tiles = s.tiles();
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t xi = unit / blocks, kb = unit % blocks;
    const float *a = v + xi * tiles * s.c;
    const float *b = u + (xi * blocks + kb) * s.c * 16;
    float *out = m + xi * tiles * kp + kb * 16;
    // U's next panel (the next unit's: s.c lines of 64 bytes) fetched
    // meanwhile: the 7 x 7 layers' U (16.8 MB) comes from memory.
    const bool next = unit + 1 < 16 * blocks;
    avx2::multiplyPanel(tiles, a, s.c, b, s.c, out, kp, /*accumulate=*/false, 16,
                        next ? reinterpret_cast<const char *>(b + s.c * 16) : nullptr,
                        next ? s.c : 0);
  }
}

void winogradOutput(const WinogradShape &s, const float *m, const float *bias, const float *addend,
                    bool relu, float *dst, int64_t begin, int64_t end) MIXPREC_WINOGRAD_ISA;
void winogradOutput(const WinogradShape &s, const float *m, const float *bias, const float *addend,
                    bool relu, float *dst, int64_t begin, int64_t end) {
  const int64_t blocks = s.k / 8, rows = s.bandRows(), cols = s.tileCols();
  const int64_t tiles = s.tiles(), kp = s.paddedK();
  const size_t step = size_t(tiles) * size_t(kp); // from one xi to the next
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t ty = unit % rows, kb = unit / rows % blocks, image = unit / rows / blocks;
    const size_t plane = size_t((image * blocks + kb) * s.ho * s.wo * 8);
    const __m256 b = bias ? _mm256_loadu_ps(bias + kb * 8) : _mm256_setzero_ps();
    for (int64_t tx = 0; tx < cols; ++tx) {
      const int64_t tile = (image * rows + ty) * cols + tx;
      const float *in = m + tile * kp + kb * 8;
      __m256 x[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          x[i][j] = _mm256_loadu_ps(in + (i * 4 + j) * step);
      // q = A^T x (2 x 4), then Y = q A; A^T = [1 1 1 0; 0 1 -1 -1].
      __m256 q[2][4];
      for (int j = 0; j < 4; ++j) {
        q[0][j] = _mm256_add_ps(_mm256_add_ps(x[0][j], x[1][j]), x[2][j]);
        q[1][j] = _mm256_sub_ps(_mm256_sub_ps(x[1][j], x[2][j]), x[3][j]);
      }
      for (int i = 0; i < 2; ++i) {
        const int64_t y = 2 * (s.firstTileRow + ty) + i;
        if (y >= s.ho)
          break;
        const __m256 out[2] = {_mm256_add_ps(_mm256_add_ps(q[i][0], q[i][1]), q[i][2]),
                               _mm256_sub_ps(_mm256_sub_ps(q[i][1], q[i][2]), q[i][3])};
        for (int j = 0; j < 2; ++j) {
          const int64_t xx = 2 * tx + j;
          if (xx >= s.wo)
            break;
          const size_t at = plane + size_t(y * s.wo + xx) * 8;
          __m256 value = out[j];
          if (bias)
            value = _mm256_add_ps(value, b);
          if (addend)
            value = _mm256_add_ps(value, _mm256_loadu_ps(addend + at));
          if (relu) // x < 0 ? 0 : x (cpu::unary's Relu: NaN and -0 kept)
            value = _mm256_blendv_ps(value, _mm256_setzero_ps(),
                                     _mm256_cmp_ps(value, _mm256_setzero_ps(), _CMP_LT_OQ));
          _mm256_storeu_ps(dst + at, value);
        }
      }
    }
  }
}

#else // not x86-64: nothing here runs.

bool winogradAvailable() { return false; }
void winogradInput(const WinogradShape &, const float *, float *, int64_t, int64_t) {}
void winogradMultiply(const WinogradShape &, const float *, const float *, float *, int64_t,
                      int64_t) {}
void winogradOutput(const WinogradShape &, const float *, const float *, const float *, bool,
                    float *, int64_t, int64_t) {}

#endif

} // namespace mixprec::runtime::cpu
