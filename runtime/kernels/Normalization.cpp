//===- Normalization.cpp - Softmax, LayerNorm, RMSNorm, BatchNorm ---------===//
//
// Row statistics accumulate in double: rows here are at most a few thousand
// elements, so this costs little and removes summation order from the error
// budget when comparing against onnxruntime.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace mixprec::runtime::cpu {

namespace {

struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit splitAtAxis(const Shape &s, int64_t axis) {
  AxisSplit r;
  for (int64_t i = 0; i < axis; ++i)
    r.outer *= s[i];
  r.len = s[axis];
  for (size_t i = axis + 1; i < s.size(); ++i)
    r.inner *= s[i];
  return r;
}

// Shared softmax / log-softmax driver. The reduced axis is either innermost
// (contiguous rows) or has `inner` > 1 trailing elements; the latter is
// processed as a [len, inner] block with per-column statistics so the inner
// loops stay contiguous instead of striding by `inner`.
template <bool Log, typename T>
void softmaxImpl(const T *in, const Shape &s, int64_t axis, T *out) {
  const int64_t rank = static_cast<int64_t>(s.size());
  // A scalar behaves like a one-element vector.
  if (rank == 0)
    return softmaxImpl<Log, T>(in, Shape{1}, 0, out);
  axis = normalizeAxis(axis, rank);
  assert(axis >= 0 && "softmax axis out of range");
  const AxisSplit sp = splitAtAxis(s, axis);
  if (sp.len == 0 || sp.outer == 0 || sp.inner == 0)
    return;

  if (sp.inner == 1) {
    for (int64_t o = 0; o < sp.outer; ++o) {
      const T *x = in + o * sp.len;
      T *y = out + o * sp.len;
      T mx = x[0];
      for (int64_t i = 1; i < sp.len; ++i)
        mx = x[i] > mx ? x[i] : mx;
      double sum = 0.0;
      if (Log) {
        for (int64_t i = 0; i < sp.len; ++i)
          sum += std::exp(x[i] - mx);
        const T shift = mx + static_cast<T>(std::log(sum));
        for (int64_t i = 0; i < sp.len; ++i)
          y[i] = x[i] - shift;
      } else {
        for (int64_t i = 0; i < sp.len; ++i) {
          const T e = std::exp(x[i] - mx);
          y[i] = e;
          sum += e;
        }
        const T inv = static_cast<T>(1.0 / sum);
        for (int64_t i = 0; i < sp.len; ++i)
          y[i] *= inv;
      }
    }
    return;
  }

  std::vector<T> mx(sp.inner);
  std::vector<double> sum(sp.inner);
  for (int64_t o = 0; o < sp.outer; ++o) {
    const T *x = in + o * sp.len * sp.inner;
    T *y = out + o * sp.len * sp.inner;
    for (int64_t j = 0; j < sp.inner; ++j)
      mx[j] = x[j];
    for (int64_t i = 1; i < sp.len; ++i)
      for (int64_t j = 0; j < sp.inner; ++j)
        mx[j] = x[i * sp.inner + j] > mx[j] ? x[i * sp.inner + j] : mx[j];
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t i = 0; i < sp.len; ++i)
      for (int64_t j = 0; j < sp.inner; ++j) {
        const T e = std::exp(x[i * sp.inner + j] - mx[j]);
        if (!Log)
          y[i * sp.inner + j] = e;
        sum[j] += e;
      }
    if (Log) {
      for (int64_t j = 0; j < sp.inner; ++j)
        mx[j] += static_cast<T>(std::log(sum[j]));
      for (int64_t i = 0; i < sp.len; ++i)
        for (int64_t j = 0; j < sp.inner; ++j)
          y[i * sp.inner + j] = x[i * sp.inner + j] - mx[j];
    } else {
      for (int64_t j = 0; j < sp.inner; ++j)
        mx[j] = static_cast<T>(1.0 / sum[j]); // reuse as reciprocal
      for (int64_t i = 0; i < sp.len; ++i)
        for (int64_t j = 0; j < sp.inner; ++j)
          y[i * sp.inner + j] *= mx[j];
    }
  }
}

/// layerNorm() in T.
template <typename T>
void layerNormT(const T *in, const Shape &s, int64_t axis,
               const T *scale, const T *bias, T eps, T *out) {
  const int64_t rank = static_cast<int64_t>(s.size());
  axis = normalizeAxis(axis, rank);
  assert(axis >= 0 && "layerNorm axis out of range");
  assert(scale);
  int64_t outer = 1, norm = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : norm) *= s[i];
  if (norm == 0)
    return;
  for (int64_t o = 0; o < outer; ++o) {
    const T *x = in + o * norm;
    T *y = out + o * norm;
    // Two passes over a row that is already in cache: the centered variance
    // avoids the cancellation of E[x^2] - E[x]^2 for rows with a large mean.
    double sum = 0.0;
    for (int64_t i = 0; i < norm; ++i)
      sum += x[i];
    const double mean = sum / static_cast<double>(norm);
    double sq = 0.0;
    for (int64_t i = 0; i < norm; ++i) {
      const double d = x[i] - mean;
      sq += d * d;
    }
    const double var = sq / static_cast<double>(norm);
    const T meanF = static_cast<T>(mean);
    const T invStd =
        static_cast<T>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    if (bias) {
      for (int64_t i = 0; i < norm; ++i)
        y[i] = (x[i] - meanF) * invStd * scale[i] + bias[i];
    } else {
      for (int64_t i = 0; i < norm; ++i)
        y[i] = (x[i] - meanF) * invStd * scale[i];
    }
  }
}

/// rmsNorm() in T.
template <typename T>
void rmsNormT(const T *in, const Shape &s, int64_t axis, const T *scale,
             T eps, T *out) {
  const int64_t rank = static_cast<int64_t>(s.size());
  axis = normalizeAxis(axis, rank);
  assert(axis >= 0 && "rmsNorm axis out of range");
  int64_t outer = 1, norm = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : norm) *= s[i];
  if (norm == 0)
    return;
  for (int64_t o = 0; o < outer; ++o) {
    const T *x = in + o * norm;
    T *y = out + o * norm;
    double sq = 0.0;
    for (int64_t i = 0; i < norm; ++i)
      sq += static_cast<double>(x[i]) * x[i];
    const T inv =
        static_cast<T>(1.0 / std::sqrt(sq / static_cast<double>(norm) +
                                           static_cast<double>(eps)));
    if (scale) {
      for (int64_t i = 0; i < norm; ++i)
        y[i] = x[i] * inv * scale[i];
    } else {
      for (int64_t i = 0; i < norm; ++i)
        y[i] = x[i] * inv;
    }
  }
}

/// batchNormInference() in T.
template <typename T>
void batchNormInferenceT(const T *in, const Shape &s, const T *scale,
                        const T *bias, const T *mean, const T *var,
                        T eps, T *out) {
  assert(s.size() >= 2 && "BatchNormalization input must be [N, C, ...]");
  const int64_t n = s[0], c = s[1];
  int64_t spatial = 1;
  for (size_t i = 2; i < s.size(); ++i)
    spatial *= s[i];
  // Fold into y = x * a + b per channel, as onnxruntime does.
  std::vector<T> a(c), b(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
    a[ch] = static_cast<T>(scale[ch] * inv);
    b[ch] = static_cast<T>(bias[ch] - mean[ch] * (scale[ch] * inv));
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const T *x = in + (i * c + ch) * spatial;
      T *y = out + (i * c + ch) * spatial;
      const T av = a[ch], bv = b[ch];
      for (int64_t j = 0; j < spatial; ++j)
        y[j] = x[j] * av + bv;
    }
}

} // namespace

void softmax(const float *in, const Shape &s, int64_t axis, float *out) {
  softmaxImpl<false>(in, s, axis, out);
}

void logSoftmax(const float *in, const Shape &s, int64_t axis, float *out) {
  softmaxImpl<true>(in, s, axis, out);
}

void layerNorm(const float *in, const Shape &s, int64_t axis,
               const float *scale, const float *bias, float eps, float *out) {
  layerNormT(in, s, axis, scale, bias, eps, out);
}

void rmsNorm(const float *in, const Shape &s, int64_t axis, const float *scale,
             float eps, float *out) {
  rmsNormT(in, s, axis, scale, eps, out);
}

void batchNormInference(const float *in, const Shape &s, const float *scale,
                        const float *bias, const float *mean, const float *var,
                        float eps, float *out) {
  batchNormInferenceT(in, s, scale, bias, mean, var, eps, out);
}

void softmax(const double *in, const Shape &s, int64_t axis, double *out) {
  softmaxImpl<false>(in, s, axis, out);
}

void logSoftmax(const double *in, const Shape &s, int64_t axis, double *out) {
  softmaxImpl<true>(in, s, axis, out);
}

void layerNorm(const double *in, const Shape &s, int64_t axis,
               const double *scale, const double *bias, double eps, double *out) {
  layerNormT(in, s, axis, scale, bias, eps, out);
}

void rmsNorm(const double *in, const Shape &s, int64_t axis, const double *scale,
             double eps, double *out) {
  rmsNormT(in, s, axis, scale, eps, out);
}

void batchNormInference(const double *in, const Shape &s, const double *scale,
                        const double *bias, const double *mean, const double *var,
                        double eps, double *out) {
  batchNormInferenceT(in, s, scale, bias, mean, var, eps, out);
}

} // namespace mixprec::runtime::cpu
