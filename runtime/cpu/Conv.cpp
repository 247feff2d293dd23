//===- Conv.cpp - Conv2d (im2col + SGEMM) and 2-D pooling -----------------===//
//
// Every input read is bounds-checked against the input plane (not derived from
// the output shape), so an output shape that disagrees with pooledSize can
// give wrong numbers but never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
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

struct Conv2dGeom {
  int64_t c, h, w;    // per-group input channels and plane
  int64_t kh, kw;     // kernel
  int64_t oh, ow;     // output plane
  int64_t sh, sw;     // strides
  int64_t dh, dw;     // dilations
  int64_t padT, padL; // begin pads
};

// col[(c*kh + i)*kw + j][oh*OW + ow] = x[c][oh*sh + i*dh - padT]
//                                          [ow*sw + j*dw - padL], 0 outside.
void im2col(const float *src, const Conv2dGeom &g, float *col) {
  const int64_t plane = g.oh * g.ow;
  for (int64_t c = 0; c < g.c; ++c) {
    const float *x = src + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        float *row = col + ((c * g.kh + i) * g.kw + j) * plane;
        const int64_t wOff = j * g.dw - g.padL;
        int64_t owLo, owHi;
        validRange(wOff, g.sw, g.ow, g.w, &owLo, &owHi);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          float *r = row + oh * g.ow;
          const int64_t ih = oh * g.sh + i * g.dh - g.padT;
          if (ih < 0 || ih >= g.h) {
            std::fill(r, r + g.ow, 0.0f);
            continue;
          }
          std::fill(r, r + owLo, 0.0f);
          if (owLo < owHi) {
            // First valid tap; never form a pointer before the row.
            const float *xr = x + ih * g.w + owLo * g.sw + wOff;
            if (g.sw == 1) {
              std::copy(xr, xr + (owHi - owLo), r + owLo);
            } else {
              for (int64_t ow = owLo; ow < owHi; ++ow)
                r[ow] = xr[(ow - owLo) * g.sw];
            }
          }
          std::fill(r + owHi, r + g.ow, 0.0f);
        }
      }
  }
}

} // namespace

int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                   int64_t padEnd, int64_t dilation, bool ceilMode) {
  assert(stride > 0 && dilation > 0 && kernel > 0);
  const int64_t span = (kernel - 1) * dilation + 1;
  const int64_t room = in + padBegin + padEnd - span;
  if (room < 0)
    return 0;
  int64_t out = (ceilMode ? ceilDiv(room, stride) : room / stride) + 1;
  // A ceil-mode window that would start in the end padding is dropped.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

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

void conv2d(const float *in, const Shape &is, const float *w, const Shape &ws,
            const float *bias, const std::array<int64_t, 2> &strides,
            const std::array<int64_t, 4> &pads,
            const std::array<int64_t, 2> &dilations, int64_t groups, float *out,
            const Shape &os) {
  assert(is.size() == 4 && ws.size() == 4 && os.size() == 4);
  assert(groups > 0 && is[1] == ws[1] * groups && ws[0] % groups == 0);
  assert(os[0] == is[0] && os[1] == ws[0]);
  const int64_t n = is[0], c = is[1], m = ws[0];
  Conv2dGeom g;
  g.c = ws[1];
  g.h = is[2];
  g.w = is[3];
  g.kh = ws[2];
  g.kw = ws[3];
  g.oh = os[2];
  g.ow = os[3];
  g.sh = strides[0];
  g.sw = strides[1];
  g.dh = dilations[0];
  g.dw = dilations[1];
  g.padT = pads[0];
  g.padL = pads[1];
  assert(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0);
  const int64_t mg = m / groups;
  const int64_t kc = g.c * g.kh * g.kw;
  const int64_t plane = g.oh * g.ow;
  if (n == 0 || m == 0 || plane == 0)
    return;
  // A 1x1, stride-1, unpadded conv reads the input plane as-is: it already
  // is the [C, H*W] column matrix.
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
                      pads[0] == 0 && pads[1] == 0 && pads[2] == 0 &&
                      pads[3] == 0 && g.oh == g.h && g.ow == g.w;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(kc * plane));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t grp = 0; grp < groups; ++grp) {
      const float *src = in + (b * c + grp * g.c) * g.h * g.w;
      float *dst = out + (b * m + grp * mg) * plane;
      float beta = 0.0f;
      if (bias) {
        for (int64_t oc = 0; oc < mg; ++oc)
          std::fill(dst + oc * plane, dst + (oc + 1) * plane,
                    bias[grp * mg + oc]);
        beta = 1.0f;
      }
      const float *cols = src;
      if (!direct) {
        im2col(src, g, col.data());
        cols = col.data();
      }
      detail::sgemm(false, mg, plane, kc, w + grp * mg * kc, kc, cols, plane,
                    dst, plane, beta);
    }
}

void maxPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads,
               const std::array<int64_t, 2> &dilations, float *out,
               const Shape &os) {
  assert(is.size() == 4 && os.size() == 4 && os[0] == is[0] && os[1] == is[1]);
  const int64_t planes = is[0] * is[1], h = is[2], w = is[3];
  const int64_t oh = os[2], ow = os[3];
  for (int64_t p = 0; p < planes; ++p) {
    const float *x = in + p * h * w;
    float *y = out + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t hs = i * strides[0] - pads[0];
      int64_t khLo, khHi;
      validRange(hs, dilations[0], kernel[0], h, &khLo, &khHi);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t wsIdx = j * strides[1] - pads[1];
        int64_t kwLo, kwHi;
        validRange(wsIdx, dilations[1], kernel[1], w, &kwLo, &kwHi);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t kh = khLo; kh < khHi; ++kh) {
          const float *row = x + (hs + kh * dilations[0]) * w;
          for (int64_t kw = kwLo; kw < kwHi; ++kw) {
            const float v = row[wsIdx + kw * dilations[1]];
            mx = (v > mx || v != v) ? v : mx;
          }
        }
        y[i * ow + j] = mx;
      }
    }
  }
}

void avgPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads, bool countIncludePad,
               float *out, const Shape &os,
               const std::array<int64_t, 2> &dilations) {
  assert(is.size() == 4 && os.size() == 4 && os[0] == is[0] && os[1] == is[1]);
  const int64_t planes = is[0] * is[1], h = is[2], w = is[3];
  const int64_t oh = os[2], ow = os[3];
  const int64_t dh = dilations[0], dw = dilations[1];
  // Taps of a window starting at `start` that lie in the padded extent
  // [-padBegin, size + padEnd). The window never starts before -padBegin, so
  // only its end is clipped: the ceil-mode overhang is not counted even with
  // count_include_pad (onnxruntime's divisor).
  auto paddedTaps = [](int64_t start, int64_t k, int64_t dil, int64_t size,
                       int64_t padEnd) {
    const int64_t end = std::min(start + k * dil, size + padEnd);
    return end > start ? 1 + (end - start - 1) / dil : 0;
  };
  for (int64_t p = 0; p < planes; ++p) {
    const float *x = in + p * h * w;
    float *y = out + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t hs = i * strides[0] - pads[0];
      int64_t khLo, khHi;
      validRange(hs, dh, kernel[0], h, &khLo, &khHi);
      const int64_t padH = paddedTaps(hs, kernel[0], dh, h, pads[2]);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t ws0 = j * strides[1] - pads[1];
        int64_t kwLo, kwHi;
        validRange(ws0, dw, kernel[1], w, &kwLo, &kwHi);
        float sum = 0.0f;
        for (int64_t kh = khLo; kh < khHi; ++kh) {
          const float *row = x + (hs + kh * dh) * w;
          for (int64_t kw = kwLo; kw < kwHi; ++kw)
            sum += row[ws0 + kw * dw];
        }
        const int64_t valid = (khHi - khLo) * (kwHi - kwLo);
        const int64_t count =
            countIncludePad ? padH * paddedTaps(ws0, kernel[1], dw, w, pads[3])
                            : valid;
        // A window with no input element yields 0, as in onnxruntime;
        // pooledSize never produces one.
        y[i * ow + j] = valid == 0 ? 0.0f : sum / static_cast<float>(count);
      }
    }
  }
}

} // namespace mixprec::runtime::cpu
