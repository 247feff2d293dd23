//===- BlockScaling.cpp - FP8 block scaling and MXFP8 ---------------------===//
#include "common/numerics/BlockScaling.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <limits>

namespace mixprec::numerics {

const char *blockRecipeName(BlockRecipe r) { return r == BlockRecipe::Mx ? "mx" : "block"; }

BlockLayout BlockLayout::of(const std::vector<int64_t> &shape, int64_t blockRows,
                            int64_t blockCols) {
  assert(shape.size() >= 2 && blockRows > 0 && blockCols > 0);
  BlockLayout l;
  for (size_t i = 0; i + 2 < shape.size(); ++i)
    l.batch *= shape[i];
  l.rows = shape[shape.size() - 2];
  l.cols = shape.back();
  l.blockRows = blockRows;
  l.blockCols = blockCols;
  return l;
}

std::vector<int64_t> blockScaleShape(const std::vector<int64_t> &shape, int64_t blockRows,
                                     int64_t blockCols) {
  std::vector<int64_t> out = shape;
  BlockLayout l = BlockLayout::of(shape, blockRows, blockCols);
  out[out.size() - 2] = l.scaleRows();
  out.back() = l.scaleCols();
  return out;
}

namespace {
/// log2 of the smallest subnormal: every value of the format is an integer
/// times 2^-shift.
int formatShift(Format f) {
  switch (f) {
  case Format::F8E4M3FN:
    return 9;
  case Format::F8E5M2:
    return 16;
  default:
    return 0;
  }
}
} // namespace

float blockScale(Format f, BlockRecipe r, float amax, int64_t margin) {
  if (!std::isfinite(amax))
    return std::numeric_limits<float>::quiet_NaN();
  if (!(amax > 0))
    return 1.0f;
  // Both recipes (the file comment). frexp: q = m 2^e with m in [0.5, 1),
  // so the largest power of two <= q is 2^(e - 1). q >= fp8_max / FLT_MAX
  // > 2^-127, so the E8M0 floor never applies unless a margin pushes it.
  (void)r;
  int exponent;
  double q = formatMaxFinite(f) / static_cast<double>(amax);
  (void)std::frexp(q, &exponent);
  int64_t e = static_cast<int64_t>(exponent) - 1 - margin;
  return std::ldexp(1.0f, static_cast<int>(std::clamp<int64_t>(e, -127, 127)));
}

void computeBlockScales(Format f, BlockRecipe r, int64_t margin, const BlockLayout &l,
                        const float *x, float *scales) {
  const int64_t sr = l.scaleRows(), sc = l.scaleCols();
  std::vector<float> amax(static_cast<size_t>(sc));
  for (int64_t b = 0; b < l.batch; ++b) {
    const float *matrix = x + b * l.rows * l.cols;
    for (int64_t i = 0; i < sr; ++i) {
      std::fill(amax.begin(), amax.end(), 0.0f);
      const int64_t rowEnd = std::min(l.rows, (i + 1) * l.blockRows);
      for (int64_t row = i * l.blockRows; row < rowEnd; ++row)
        for (int64_t c = 0; c < l.cols; ++c) {
          float v = std::fabs(matrix[row * l.cols + c]);
          float &m = amax[static_cast<size_t>(c / l.blockCols)];
          // NaN sticks: once m is NaN it stays NaN.
          m = std::isnan(v) || std::isnan(m) ? std::numeric_limits<float>::quiet_NaN()
                                             : std::max(m, v);
        }
      for (int64_t j = 0; j < sc; ++j)
        scales[(b * sr + i) * sc + j] = blockScale(f, r, amax[static_cast<size_t>(j)], margin);
    }
  }
}

void blockQuantize(Format f, const BlockLayout &l, const float *x, const float *scales,
                   float *out) {
  const int64_t sr = l.scaleRows(), sc = l.scaleCols();
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t row = 0; row < l.rows; ++row) {
      const int64_t base = (b * l.rows + row) * l.cols;
      const float *rowScales = scales + (b * sr + row / l.blockRows) * sc;
      for (int64_t c0 = 0; c0 < l.cols; c0 += l.blockCols) {
        const int64_t count = std::min(l.blockCols, l.cols - c0);
        quantizeFp8Array(f, x + base + c0, rowScales[c0 / l.blockCols], out + base + c0,
                         static_cast<size_t>(count));
      }
    }
}

namespace {
/// FP8 values as exact integers (value * 2^shift) and, per (row, k-block),
/// whether the block is all finite.
struct IntegerOperand {
  std::vector<int64_t> values;
  std::vector<uint8_t> finite;
};

IntegerOperand toIntegers(Format f, const float *v, int64_t rows, int64_t k, int64_t kBlock) {
  IntegerOperand out;
  const int64_t blocks = (k + kBlock - 1) / kBlock;
  out.values.assign(static_cast<size_t>(rows * k), 0);
  out.finite.assign(static_cast<size_t>(rows * blocks), 1);
  const int shift = formatShift(f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c) {
      float x = v[r * k + c];
      if (!std::isfinite(x)) {
        out.finite[static_cast<size_t>(r * blocks + c / kBlock)] = 0;
        continue;
      }
      out.values[static_cast<size_t>(r * k + c)] =
          static_cast<int64_t>(std::ldexp(static_cast<double>(x), shift));
    }
  return out;
}

template <typename Acc>
float blockDot(const int64_t *a, const int64_t *b, int64_t count) {
  Acc sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += static_cast<Acc>(a[i]) * static_cast<Acc>(b[i]);
  return static_cast<float>(sum); // one rounding (int -> float is correctly rounded)
}
} // namespace

void blockScaledGemm(Format fa, const float *a, const float *aScales, int64_t aBlockRows,
                     Format fb, const float *b, const float *bScales, int64_t bBlockRows,
                     int64_t kBlock, int64_t m, int64_t n, int64_t k, float *out) {
  const int64_t blocks = (k + kBlock - 1) / kBlock;
  IntegerOperand ia = toIntegers(fa, a, m, k, kBlock);
  IntegerOperand ib = toIntegers(fb, b, n, k, kBlock);
  // |a| <= 448 * 2^9 or 57344 * 2^16: an int64 sum of kBlock products
  // holds unless both are E5M2 (then __int128).
  const bool wide = fa == Format::F8E5M2 && fb == Format::F8E5M2;
  const float shift = std::ldexp(1.0f, -(formatShift(fa) + formatShift(fb)));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        const int64_t k0 = kb * kBlock, count = std::min(kBlock, k - k0);
        const float sa = aScales[(i / aBlockRows) * blocks + kb];
        const float sb = bScales[(j / bBlockRows) * blocks + kb];
        float term;
        if (!ia.finite[static_cast<size_t>(i * blocks + kb)] ||
            !ib.finite[static_cast<size_t>(j * blocks + kb)]) {
          term = nan;
        } else {
          const int64_t *pa = ia.values.data() + i * k + k0;
          const int64_t *pb = ib.values.data() + j * k + k0;
          float p = wide ? blockDot<__int128>(pa, pb, count) : blockDot<int64_t>(pa, pb, count);
          term = ((p * shift) / sa) / sb;
        }
        acc = acc + term;
      }
      out[i * n + j] = acc;
    }
}

} // namespace mixprec::numerics
