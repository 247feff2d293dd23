//===- Conv.cpp - N-D convolution, transposed convolution, pooling --------===//
//
// 1, 2 or 3 spatial dims. Convolutions are im2col + SGEMM, transposed
// convolutions SGEMM + col2im; pooling walks each window directly. The 2-D
// entry points are the N-D kernels with two spatial dims.
//
// Every input read is bounds-checked against the input plane (not derived from
// the output shape), so an output shape that disagrees with pooledSize can
// give wrong numbers but never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Gemm.h"
#include "runtime/kernels/Kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace mixprec::runtime::cpu {

namespace {

int64_t floorDiv(int64_t a, int64_t b) {
  assert(b > 0);
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

/// Tap indices t in [lo, hi) for which start + t * step lies in [0, size),
/// restricted to [0, count).
void validRange(int64_t start, int64_t step, int64_t count, int64_t size,
                int64_t *lo, int64_t *hi) {
  int64_t l = start >= 0 ? 0 : ceilDiv(-start, step);
  int64_t h = floorDiv(size - 1 - start, step) + 1;
  l = std::clamp<int64_t>(l, 0, count);
  h = std::clamp<int64_t>(h, l, count);
  *lo = l;
  *hi = h;
}

int64_t product(const int64_t *v, size_t n) {
  int64_t p = 1;
  for (size_t i = 0; i < n; ++i)
    p *= v[i];
  return p;
}

/// Steps the row-major multi-index `idx` over `sizes` (the odometer).
void advance(std::vector<int64_t> &idx, const int64_t *sizes) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < sizes[d])
      return;
    idx[d] = 0;
  }
}

/// The geometry im2col and col2im share: grid point g of a window op and
/// kernel tap k meet at plane position q = g * stride + k * dilation -
/// padBegin, per spatial dim. For im2col the grid is the output and the
/// plane the input; for col2im (transposed convolution) the other way round.
struct TapGeom {
  size_t dims;
  const int64_t *grid, *plane, *kernel, *strides, *dilations, *padBegin;
};

/// Calls fn(tap, gridOffset, planeOffset, count, step) for every kernel tap
/// and every run of grid points along the last dim whose plane positions
/// lie inside the plane: `count` points from flat grid offset `gridOffset`
/// meet the plane at `planeOffset + j * step`.
template <typename Fn> void forEachRun(const TapGeom &g, Fn fn) {
  const size_t last = g.dims - 1;
  const int64_t taps = product(g.kernel, g.dims), points = product(g.grid, g.dims);
  if (taps == 0 || points == 0)
    return;
  const int64_t outer = points / g.grid[last];
  std::vector<int64_t> k(g.dims, 0), o(last, 0);
  for (int64_t tap = 0; tap < taps; ++tap, advance(k, g.kernel)) {
    const int64_t off = k[last] * g.dilations[last] - g.padBegin[last];
    int64_t lo, hi;
    validRange(off, g.strides[last], g.grid[last], g.plane[last], &lo, &hi);
    if (lo >= hi)
      continue;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t r = 0; r < outer; ++r, advance(o, g.grid)) {
      int64_t planeOffset = 0;
      bool inside = true;
      for (size_t s = 0; s < last && inside; ++s) {
        const int64_t q = o[s] * g.strides[s] + k[s] * g.dilations[s] - g.padBegin[s];
        inside = q >= 0 && q < g.plane[s];
        planeOffset = planeOffset * g.plane[s] + q;
      }
      if (inside)
        fn(tap, r * g.grid[last] + lo,
           planeOffset * g.plane[last] + lo * g.strides[last] + off, hi - lo,
           g.strides[last]);
    }
  }
}

/// col[c * taps + tap][p] = x[c][position of output p and tap], 0 in the
/// padding; `channels` planes of `g.plane`'s size.
template <typename T>
void im2col(const T *src, int64_t channels, const TapGeom &g, T *col) {
  const int64_t taps = product(g.kernel, g.dims), points = product(g.grid, g.dims);
  const int64_t planeSize = product(g.plane, g.dims);
  std::fill(col, col + channels * taps * points, T(0));
  forEachRun(g, [&](int64_t tap, int64_t gridOffset, int64_t planeOffset, int64_t count,
                    int64_t step) {
    for (int64_t c = 0; c < channels; ++c) {
      T *r = col + (c * taps + tap) * points + gridOffset;
      const T *x = src + c * planeSize + planeOffset;
      if (step == 1)
        std::copy(x, x + count, r);
      else
        for (int64_t j = 0; j < count; ++j)
          r[j] = x[j * step];
    }
  });
}

/// The adjoint of im2col: dst[c][position of input p and tap] +=
/// col[c * taps + tap][p]; the grid is the input, the plane the output.
template <typename T>
void col2im(const T *col, int64_t channels, const TapGeom &g, T *dst) {
  const int64_t taps = product(g.kernel, g.dims), points = product(g.grid, g.dims);
  const int64_t planeSize = product(g.plane, g.dims);
  forEachRun(g, [&](int64_t tap, int64_t gridOffset, int64_t planeOffset, int64_t count,
                    int64_t step) {
    for (int64_t c = 0; c < channels; ++c) {
      const T *r = col + (c * taps + tap) * points + gridOffset;
      T *y = dst + c * planeSize + planeOffset;
      for (int64_t j = 0; j < count; ++j)
        y[j * step] += r[j];
    }
  });
}

/// Fills `planes` planes of `size` floats with bias[c] (0 without a bias).
template <typename T>
void fillBias(T *dst, int64_t planes, int64_t size, const T *bias) {
  for (int64_t c = 0; c < planes; ++c)
    std::fill(dst + c * size, dst + (c + 1) * size, bias ? bias[c] : T(0));
}

/// The window of output position `o` along every spatial dim: its first
/// input coordinate and its valid tap range.
struct WindowTaps {
  std::vector<int64_t> start, lo, hi;
};

void windowTaps(const Window &win, const int64_t *in, const std::vector<int64_t> &o,
                WindowTaps &t) {
  const size_t dims = o.size();
  for (size_t s = 0; s < dims; ++s) {
    t.start[s] = o[s] * win.strides[s] - win.pads[s];
    validRange(t.start[s], win.dilations[s], win.kernel[s], in[s], &t.lo[s], &t.hi[s]);
  }
}

/// Taps of a window starting at `start` that lie in the padded extent
/// [-padBegin, size + padEnd). The window never starts before -padBegin, so
/// only its end is clipped: the ceil-mode overhang is not counted even with
/// count_include_pad (onnxruntime's divisor).
int64_t paddedTaps(int64_t start, int64_t k, int64_t dil, int64_t size, int64_t padEnd) {
  const int64_t end = std::min(start + k * dil, size + padEnd);
  return end > start ? 1 + (end - start - 1) / dil : 0;
}

/// Calls fn(flat input offset in the plane, tap coordinates) for every
/// in-bounds tap of a window, in row-major tap order.
template <typename Fn>
void forEachTap(const Window &win, const int64_t *in, const WindowTaps &t,
                std::vector<int64_t> &coord, Fn fn) {
  const size_t dims = coord.size();
  for (size_t s = 0; s < dims; ++s)
    if (t.lo[s] >= t.hi[s])
      return;
  std::vector<int64_t> k(t.lo);
  while (true) {
    int64_t offset = 0;
    for (size_t s = 0; s < dims; ++s) {
      coord[s] = t.start[s] + k[s] * win.dilations[s];
      offset = offset * in[s] + coord[s];
    }
    fn(offset);
    size_t d = dims;
    while (d-- > 0) {
      if (++k[d] < t.hi[d])
        break;
      k[d] = t.lo[d];
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

/// Calls fn(plane input, window taps, coordinate scratch, flat output
/// index) for every output position of a pooling op, in order: each
/// [N, C] plane of `in` and each position of the output plane.
template <typename T, typename Fn>
void forEachWindow(const Shape &is, const Window &win, const Shape &os, Fn fn, const T *in) {
  const size_t dims = is.size() - 2;
  assert(dims >= 1 && os.size() == is.size() && os[0] == is[0] && os[1] == is[1]);
  const int64_t planes = is[0] * is[1];
  const int64_t planeIn = product(is.data() + 2, dims), plane = product(os.data() + 2, dims);
  WindowTaps t{std::vector<int64_t>(dims), std::vector<int64_t>(dims),
               std::vector<int64_t>(dims)};
  std::vector<int64_t> o(dims, 0), coord(dims, 0);
  for (int64_t p = 0; p < planes; ++p) {
    std::fill(o.begin(), o.end(), 0);
    for (int64_t q = 0; q < plane; ++q, advance(o, os.data() + 2)) {
      windowTaps(win, is.data() + 2, o, t);
      fn(in + p * planeIn, t, coord, p * plane + q);
    }
  }
}

/// The window of a 2-D entry point: pads {top, left, bottom, right}.
Window window2d(const std::array<int64_t, 2> &kernel, const std::array<int64_t, 2> &strides,
                const std::array<int64_t, 4> &pads,
                const std::array<int64_t, 2> &dilations) {
  return {{kernel.begin(), kernel.end()},
          {strides.begin(), strides.end()},
          {pads.begin(), pads.end()},
          {dilations.begin(), dilations.end()}};
}

} // namespace

void samePads(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
              bool upper, int64_t *padBegin, int64_t *padEnd) {
  assert(stride > 0 && dilation > 0 && kernel > 0);
  const int64_t out = ceilDiv(in, stride);
  const int64_t span = (kernel - 1) * dilation + 1;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
  const int64_t small = total / 2, large = total - total / 2;
  *padBegin = upper ? small : large;
  *padEnd = upper ? large : small;
}

namespace {

/// conv() in T.
template <typename T>
void convT(const T *in, const Shape &is, const T *w, const Shape &ws,
          const T *bias, const Window &win, int64_t groups, T *out,
          const Shape &os) {
  const size_t dims = is.size() - 2;
  assert(dims >= 1 && ws.size() == is.size() && os.size() == is.size());
  assert(groups > 0 && is[1] == ws[1] * groups && ws[0] % groups == 0);
  assert(os[0] == is[0] && os[1] == ws[0]);
  const int64_t n = is[0], c = is[1], m = ws[0], cg = ws[1], mg = m / groups;
  const int64_t planeIn = product(is.data() + 2, dims);
  const int64_t plane = product(os.data() + 2, dims);
  const int64_t kc = cg * product(ws.data() + 2, dims);
  if (n == 0 || m == 0 || plane == 0)
    return;
  TapGeom g{dims, os.data() + 2, is.data() + 2, ws.data() + 2, win.strides.data(),
            win.dilations.data(), win.pads.data()};
  // A 1x1, stride-1, unpadded conv reads the input plane as-is: it already
  // is the [C, spatial] column matrix.
  bool direct = plane == planeIn;
  for (size_t s = 0; s < dims; ++s)
    direct = direct && ws[2 + s] == 1 && win.strides[s] == 1 && win.pads[s] == 0 &&
             win.pads[dims + s] == 0;
  std::vector<T> col(direct ? 0 : static_cast<size_t>(kc * plane));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t grp = 0; grp < groups; ++grp) {
      const T *src = in + (b * c + grp * cg) * planeIn;
      T *dst = out + (b * m + grp * mg) * plane;
      const T *cols = src;
      if (!direct) {
        im2col(src, cg, g, col.data());
        cols = col.data();
      }
      if (bias)
        fillBias(dst, mg, plane, bias + grp * mg);
      detail::gemm(false, mg, plane, kc, w + grp * mg * kc, kc, cols, plane, dst, plane,
                    bias ? T(1) : T(0));
    }
}

/// convTranspose() in T.
template <typename T>
void convTransposeT(const T *in, const Shape &is, const T *w, const Shape &ws,
                   const T *bias, const Window &win, int64_t groups, T *out,
                   const Shape &os) {
  const size_t dims = is.size() - 2;
  assert(dims >= 1 && ws.size() == is.size() && os.size() == is.size());
  assert(groups > 0 && is[1] == ws[0] && ws[0] % groups == 0);
  const int64_t n = is[0], c = is[1], cg = c / groups, mg = ws[1], m = mg * groups;
  assert(os[0] == n && os[1] == m);
  const int64_t planeIn = product(is.data() + 2, dims);
  const int64_t plane = product(os.data() + 2, dims);
  const int64_t taps = product(ws.data() + 2, dims), rows = mg * taps;
  if (n == 0 || m == 0 || plane == 0)
    return;
  TapGeom g{dims, is.data() + 2, os.data() + 2, ws.data() + 2, win.strides.data(),
            win.dilations.data(), win.pads.data()};
  // Per group, col = W_g^T x_g: W_g is [C/g, M/g * taps], so its transpose
  // is formed once per group.
  std::vector<T> wt(static_cast<size_t>(rows * cg)), col(static_cast<size_t>(rows * planeIn));
  for (int64_t grp = 0; grp < groups; ++grp) {
    const T *wg = w + grp * cg * rows;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t r = 0; r < rows; ++r)
        wt[r * cg + ci] = wg[ci * rows + r];
    for (int64_t b = 0; b < n; ++b) {
      const T *src = in + (b * c + grp * cg) * planeIn;
      T *dst = out + (b * m + grp * mg) * plane;
      detail::gemm(false, rows, planeIn, cg, wt.data(), cg, src, planeIn, col.data(), planeIn,
                    T(0));
      fillBias(dst, mg, plane, bias ? bias + grp * mg : nullptr);
      col2im(col.data(), mg, g, dst);
    }
  }
}

/// maxPool() in T.
/// forEachWindow for 2-D pooling, without its per-window bookkeeping (the
/// CPU backend's ResNet-18 max pool took 14 ms of a 31 ms run through it):
/// fn(plane input, row start, row taps [lo, hi), column start, column taps
/// [lo, hi), flat output index, output column) for every output position,
/// in the same order; the taps are forEachTap's, row-major.
template <typename T, typename Fn>
void forEachWindow2d(const Shape &is, const Window &win, const Shape &os, Fn fn, const T *in) {
  const int64_t planes = is[0] * is[1], height = is[2], width = is[3];
  const int64_t outHeight = os[2], outWidth = os[3];
  std::vector<int64_t> startW(outWidth), loW(outWidth), hiW(outWidth);
  for (int64_t ow = 0; ow < outWidth; ++ow) {
    startW[ow] = ow * win.strides[1] - win.pads[1];
    validRange(startW[ow], win.dilations[1], win.kernel[1], width, &loW[ow], &hiW[ow]);
  }
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < outHeight; ++oh) {
      const int64_t startH = oh * win.strides[0] - win.pads[0];
      int64_t loH = 0, hiH = 0;
      validRange(startH, win.dilations[0], win.kernel[0], height, &loH, &hiH);
      for (int64_t ow = 0; ow < outWidth; ++ow)
        fn(in + p * height * width, startH, loH, hiH, startW[ow], loW[ow], hiW[ow],
           (p * outHeight + oh) * outWidth + ow, ow);
    }
}

/// maxPoolT for 2-D windows without indices. Per output: the first tap,
/// then each later one (row-major) that is larger or the first NaN (a NaN
/// then stays): maxPoolT's rule and order. The columns whose window lies
/// inside the row are done together, tap by tap (a loop over columns the
/// compiler keeps free of branches); the edge columns one by one.
template <typename T>
void maxPool2dDirect(const T *in, const Shape &is, const Window &win, T *out, const Shape &os) {
  const int64_t width = is[3], outWidth = os[3];
  const int64_t sw = win.strides[1], dh = win.dilations[0], dw = win.dilations[1];
  const int64_t kw = win.kernel[1];
  // Columns [first, last) have every horizontal tap inside the row.
  int64_t first = 0, last = 0;
  for (int64_t ow = 0; ow < outWidth; ++ow) {
    const int64_t start = ow * sw - win.pads[1];
    const bool inside = start >= 0 && start + (kw - 1) * dw < width;
    if (inside && last == first)
      first = ow, last = ow + 1;
    else if (inside && last == ow)
      last = ow + 1;
  }
  auto update = [](T &mx, T v) { mx = (v > mx || (v != v && mx == mx)) ? v : mx; };
  forEachWindow2d(
      is, win, os,
      [&](const T *x, int64_t startH, int64_t loH, int64_t hiH, int64_t startW, int64_t loW,
          int64_t hiW, int64_t at, int64_t ow) {
        if (ow >= first && ow < last && hiH > loH) {
          if (ow != first)
            return; // done with the row's inside columns
          T *o = out + at;
          const int64_t n = last - first;
          const T *base = x + startW;
          for (int64_t j = 0; j < n; ++j)
            o[j] = base[(startH + loH * dh) * width + j * sw];
          for (int64_t kh = loH; kh < hiH; ++kh) {
            const T *row = base + (startH + kh * dh) * width;
            for (int64_t t = kh == loH ? 1 : 0; t < kw; ++t)
              for (int64_t j = 0; j < n; ++j)
                update(o[j], row[j * sw + t * dw]);
          }
          return;
        }
        if (loH >= hiH || loW >= hiW) {
          out[at] = -std::numeric_limits<T>::infinity();
          return;
        }
        T mx = x[(startH + loH * dh) * width + startW + loW * dw];
        for (int64_t kh = loH; kh < hiH; ++kh) {
          const T *row = x + (startH + kh * dh) * width + startW;
          for (int64_t t = kh == loH ? loW + 1 : loW; t < hiW; ++t)
            update(mx, row[t * dw]);
        }
        out[at] = mx;
      },
      in);
}

// The channel loops of the channels-last max pool compiled for AVX-512 and
// AVX2 too (the runtime is built for baseline x86-64): compares and
// selects only, so every clone gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__clang__)
#define MIXPREC_POOL_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MIXPREC_POOL_CLONES
#endif

/// mx[c] takes v[c] where maxPoolT's rule says: larger, or the first NaN.
/// Inlined into each clone of maxPool2dChannelsLast (a cloned function of
/// its own cost an indirect call per tap: with 8 channels a position, the
/// channel-blocked layout's, ResNet-18's max pool took 1.1 ms, not 0.2).
[[gnu::always_inline]] inline void maxUpdateChannels(float *mx, const float *v, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    const float m = mx[c], x = v[c];
    mx[c] = (x > m || (x != x && m == m)) ? x : m;
  }
}

template <typename T>
void maxPoolT(const T *in, const Shape &is, const Window &win, T *out,
             const Shape &os, int64_t *indices, bool columnMajor) {
  const size_t dims = is.size() - 2;
  if (dims == 2 && !indices) {
    maxPool2dDirect(in, is, win, out, os);
    return;
  }
  const int64_t *spatial = is.data() + 2;
  std::vector<int64_t> best(dims, 0);
  forEachWindow(is, win, os, [&](const T *x, const WindowTaps &t, std::vector<int64_t> &coord,
                                 int64_t at) {
    T mx = -std::numeric_limits<T>::infinity();
    bool found = false;
    forEachTap(win, spatial, t, coord, [&](int64_t offset) {
      const T v = x[offset];
      // NaN propagates; the first of equal maxima keeps its index.
      if (!found || v > mx || (v != v && mx == mx)) {
        mx = v;
        best = coord;
        found = true;
      }
    });
    out[at] = mx;
    if (!indices)
      return;
    // The flat index in the whole input, its spatial part row-major (last
    // dim fastest) or column-major (first dim fastest).
    int64_t flat = 0;
    if (columnMajor)
      for (size_t s = dims; s-- > 0;)
        flat = flat * spatial[s] + best[s];
    else
      for (size_t s = 0; s < dims; ++s)
        flat = flat * spatial[s] + best[s];
    indices[at] = (x - in) + (found ? flat : 0);
  }, in);
}

} // namespace

namespace {

/// 8 channels as one vector (GCC's vector extension: one AVX register, or
/// two SSE ones).
typedef float Vec8 __attribute__((vector_size(32)));

/// maxUpdateChannels' rule lane by lane, written as masks (a loop of 8
/// became scalar branches): m takes x where x is larger, or the first NaN.
/// (By reference: a vector returned by value warns of the non-AVX ABI.)
[[gnu::always_inline]] inline void maxRule8(Vec8 &m, const Vec8 &x) {
  m = x > m || (x != x && m == m) ? x : m;
}

/// maxUpdateChannels for 8 channels.
[[gnu::always_inline]] inline void maxUpdate8(float *mx, const float *v) {
  Vec8 m, x;
  std::memcpy(&m, mx, sizeof m);
  std::memcpy(&x, v, sizeof x);
  maxRule8(m, x);
  std::memcpy(mx, &m, sizeof m);
}

/// Four neighbouring positions of maxPoolRows (`Fixed` channels, whole
/// windows): the first of `at`'s taps, then each later one in row-major
/// order, as there, but the four positions' compares interleaved: one
/// position's are a chain (each select waits for the one before), so one
/// position at a time ran at about one instruction a cycle (ResNet-18's
/// pool: 26 ns a position on an AVX2 EPYC).
template <int Fixed>
[[gnu::always_inline]] inline void maxPoolFour(const float *at, int64_t step, int64_t kernelH,
                                               int64_t kernelW, int64_t rowStep, int64_t tapStep,
                                               float *out) {
  for (int c = 0; c < Fixed; c += 8) {
    Vec8 m[4];
    for (int j = 0; j < 4; ++j)
      std::memcpy(&m[j], at + j * step + c, sizeof(Vec8));
    for (int64_t kh = 0; kh < kernelH; ++kh)
      for (int64_t kw = kh == 0 ? 1 : 0; kw < kernelW; ++kw) {
        const float *tap = at + kh * rowStep + kw * tapStep + c;
        for (int j = 0; j < 4; ++j) {
          Vec8 x;
          std::memcpy(&x, tap + j * step, sizeof(Vec8));
          maxRule8(m[j], x);
        }
      }
    for (int j = 0; j < 4; ++j)
      std::memcpy(out + j * Fixed + c, &m[j], sizeof(Vec8));
  }
}

/// maxPool2dChannelsLast's rows for `Fixed` channels (0: is[1], at run
/// time): with a fixed count (8 and 16, the channel blocks of oneDNN's
/// layouts) a position's maxima stay in registers and each tap is a few
/// vector instructions, where a loop over a run-time count cost its
/// set-up and alias checks per tap (ResNet-18's max pool over nChw8c: 1.1
/// ms). The same compares and selects in the same order either way.
template <int Fixed>
[[gnu::always_inline]] inline void maxPoolRows(const float *in, const Shape &is, const Window &win,
                                               float *out, const Shape &os, bool channelsLastOut,
                                               int64_t firstRow, int64_t endRow) {
  const int64_t channels = Fixed ? Fixed : is[1], height = is[2], width = is[3];
  const int64_t outHeight = os[2], outWidth = os[3];
  const int64_t dh = win.dilations[0], dw = win.dilations[1];
  std::vector<float> plain(Fixed || channelsLastOut ? 0 : static_cast<size_t>(channels));
  float local[Fixed ? Fixed : 1];
  for (int64_t row = firstRow; row < endRow; ++row) {
    const int64_t n = row / outHeight, oh = row % outHeight;
    const int64_t startH = oh * win.strides[0] - win.pads[0];
    int64_t loH = 0, hiH = 0;
    validRange(startH, dh, win.kernel[0], height, &loH, &hiH);
    const float *image = in + n * height * width * channels;
    // Positions [innerBegin, innerEnd) of a row whose windows are whole
    // (Fixed channels, channels-last out): four at a time below.
    int64_t innerBegin = 0, innerEnd = 0;
    if (Fixed && channelsLastOut && loH == 0 && hiH == win.kernel[0]) {
      const int64_t sw = win.strides[1], pw = win.pads[1], span = (win.kernel[1] - 1) * dw;
      innerBegin = (pw + sw - 1) / sw;
      innerEnd =
          width - 1 - span + pw >= 0 ? std::min(outWidth, (width - 1 - span + pw) / sw + 1) : 0;
    }
    for (int64_t ow = 0; ow < outWidth; ++ow) {
      if constexpr (Fixed != 0) {
        if (ow >= innerBegin && ow + 4 <= innerEnd) {
          maxPoolFour<Fixed>(image + (startH * width + ow * win.strides[1] - win.pads[1]) * Fixed,
                             win.strides[1] * Fixed, win.kernel[0], win.kernel[1],
                             dh * width * Fixed, dw * Fixed, out + (row * outWidth + ow) * Fixed);
          ow += 3;
          continue;
        }
      }
      const int64_t startW = ow * win.strides[1] - win.pads[1];
      int64_t loW = 0, hiW = 0;
      validRange(startW, dw, win.kernel[1], width, &loW, &hiW);
      float *mx = Fixed             ? local
                  : channelsLastOut ? out + (row * outWidth + ow) * channels
                                    : plain.data();
      auto tap = [&](int64_t kh, int64_t kw) {
        return image + ((startH + kh * dh) * width + startW + kw * dw) * channels;
      };
      if (loH >= hiH || loW >= hiW) {
        std::fill(mx, mx + channels, -std::numeric_limits<float>::infinity());
      } else {
        // The first tap, then each later one in row-major order.
        std::copy(tap(loH, loW), tap(loH, loW) + channels, mx);
        for (int64_t kh = loH; kh < hiH; ++kh)
          for (int64_t kw = kh == loH ? loW + 1 : loW; kw < hiW; ++kw) {
            if constexpr (Fixed == 0) {
              maxUpdateChannels(mx, tap(kh, kw), channels);
            } else {
              for (int c = 0; c < Fixed; c += 8)
                maxUpdate8(mx + c, tap(kh, kw) + c);
            }
          }
      }
      if (Fixed && channelsLastOut)
        std::copy(mx, mx + channels, out + (row * outWidth + ow) * channels);
      else if (!channelsLastOut)
        for (int64_t c = 0; c < channels; ++c)
          out[((n * channels + c) * outHeight + oh) * outWidth + ow] = mx[c];
    }
  }
}

} // namespace

MIXPREC_POOL_CLONES void maxPool2dChannelsLast(const float *in, const Shape &is, const Window &win,
                                               float *out, const Shape &os, bool channelsLastOut,
                                               int64_t firstRow, int64_t endRow) {
  assert(is.size() == 4 && os.size() == 4 && win.kernel.size() == 2);
  if (is[1] == 8)
    maxPoolRows<8>(in, is, win, out, os, channelsLastOut, firstRow, endRow);
  else if (is[1] == 16)
    maxPoolRows<16>(in, is, win, out, os, channelsLastOut, firstRow, endRow);
  else
    maxPoolRows<0>(in, is, win, out, os, channelsLastOut, firstRow, endRow);
}

namespace {

/// avgPool() in T.
template <typename T>
void avgPoolT(const T *in, const Shape &is, const Window &win, bool countIncludePad,
             T *out, const Shape &os) {
  const size_t dims = is.size() - 2;
  const int64_t *spatial = is.data() + 2;
  if (dims == 2) {
    const int64_t height = is[2], width = is[3], dh = win.dilations[0], dw = win.dilations[1];
    forEachWindow2d(
        is, win, os,
        [&](const T *x, int64_t startH, int64_t loH, int64_t hiH, int64_t startW, int64_t loW,
            int64_t hiW, int64_t at, int64_t) {
          // The generic path's sum, in its order, and its divisor.
          T sum = T(0);
          for (int64_t kh = loH; kh < hiH; ++kh) {
            const T *row = x + (startH + kh * dh) * width + startW;
            for (int64_t kw = loW; kw < hiW; ++kw)
              sum += row[kw * dw];
          }
          const int64_t valid = (hiH - loH) * (hiW - loW);
          const int64_t padded = paddedTaps(startH, win.kernel[0], dh, height, win.pads[2]) *
                                 paddedTaps(startW, win.kernel[1], dw, width, win.pads[3]);
          out[at] = valid == 0 ? T(0) : sum / static_cast<T>(countIncludePad ? padded : valid);
        },
        in);
    return;
  }
  forEachWindow(is, win, os, [&](const T *x, const WindowTaps &t, std::vector<int64_t> &coord,
                                 int64_t at) {
    T sum = T(0);
    forEachTap(win, spatial, t, coord, [&](int64_t offset) { sum += x[offset]; });
    int64_t valid = 1, padded = 1;
    for (size_t s = 0; s < dims; ++s) {
      valid *= t.hi[s] - t.lo[s];
      padded *= paddedTaps(t.start[s], win.kernel[s], win.dilations[s], spatial[s],
                           win.pads[dims + s]);
    }
    // A window with no input element yields 0, as in onnxruntime;
    // pooledSize never produces one.
    out[at] = valid == 0 ? T(0) : sum / static_cast<T>(countIncludePad ? padded : valid);
  }, in);
}

} // namespace

void conv(const float *in, const Shape &is, const float *w, const Shape &ws,
          const float *bias, const Window &win, int64_t groups, float *out,
          const Shape &os) {
  convT(in, is, w, ws, bias, win, groups, out, os);
}

void convTranspose(const float *in, const Shape &is, const float *w, const Shape &ws,
                   const float *bias, const Window &win, int64_t groups, float *out,
                   const Shape &os) {
  convTransposeT(in, is, w, ws, bias, win, groups, out, os);
}

void maxPool(const float *in, const Shape &is, const Window &win, float *out,
             const Shape &os, int64_t *indices, bool columnMajor) {
  maxPoolT(in, is, win, out, os, indices, columnMajor);
}

void avgPool(const float *in, const Shape &is, const Window &win, bool countIncludePad,
             float *out, const Shape &os) {
  avgPoolT(in, is, win, countIncludePad, out, os);
}

void conv(const double *in, const Shape &is, const double *w, const Shape &ws,
          const double *bias, const Window &win, int64_t groups, double *out,
          const Shape &os) {
  convT(in, is, w, ws, bias, win, groups, out, os);
}

void convTranspose(const double *in, const Shape &is, const double *w, const Shape &ws,
                   const double *bias, const Window &win, int64_t groups, double *out,
                   const Shape &os) {
  convTransposeT(in, is, w, ws, bias, win, groups, out, os);
}

void maxPool(const double *in, const Shape &is, const Window &win, double *out,
             const Shape &os, int64_t *indices, bool columnMajor) {
  maxPoolT(in, is, win, out, os, indices, columnMajor);
}

void avgPool(const double *in, const Shape &is, const Window &win, bool countIncludePad,
             double *out, const Shape &os) {
  avgPoolT(in, is, win, countIncludePad, out, os);
}

void conv2d(const float *in, const Shape &is, const float *w, const Shape &ws,
            const float *bias, const std::array<int64_t, 2> &strides,
            const std::array<int64_t, 4> &pads,
            const std::array<int64_t, 2> &dilations, int64_t groups, float *out,
            const Shape &os) {
  assert(is.size() == 4 && ws.size() == 4 && os.size() == 4);
  conv(in, is, w, ws, bias, window2d({ws[2], ws[3]}, strides, pads, dilations), groups, out,
       os);
}

void maxPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads,
               const std::array<int64_t, 2> &dilations, float *out,
               const Shape &os) {
  assert(is.size() == 4 && os.size() == 4);
  maxPool(in, is, window2d(kernel, strides, pads, dilations), out, os);
}

void avgPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads, bool countIncludePad,
               float *out, const Shape &os,
               const std::array<int64_t, 2> &dilations) {
  assert(is.size() == 4 && os.size() == 4);
  avgPool(in, is, window2d(kernel, strides, pads, dilations), countIncludePad, out, os);
}

void conv2d(const double *in, const Shape &is, const double *w, const Shape &ws,
            const double *bias, const std::array<int64_t, 2> &strides,
            const std::array<int64_t, 4> &pads,
            const std::array<int64_t, 2> &dilations, int64_t groups, double *out,
            const Shape &os) {
  assert(is.size() == 4 && ws.size() == 4 && os.size() == 4);
  conv(in, is, w, ws, bias, window2d({ws[2], ws[3]}, strides, pads, dilations), groups, out,
       os);
}

void maxPool2d(const double *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads,
               const std::array<int64_t, 2> &dilations, double *out,
               const Shape &os) {
  assert(is.size() == 4 && os.size() == 4);
  maxPool(in, is, window2d(kernel, strides, pads, dilations), out, os);
}

void avgPool2d(const double *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads, bool countIncludePad,
               double *out, const Shape &os,
               const std::array<int64_t, 2> &dilations) {
  assert(is.size() == 4 && os.size() == 4);
  avgPool(in, is, window2d(kernel, strides, pads, dilations), countIncludePad, out, os);
}

} // namespace mixprec::runtime::cpu
