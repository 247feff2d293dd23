//===- Indexing.h - index-driven reference kernels --------------*- C++ -*-===//
//
// ONNX GatherElements, GatherND, ArgMax/ArgMin, TopK and CumSum, shared by
// the reference interpreter and the CPU backend (the conventions of
// Kernels.h). The gathers move raw elements of any dtype and check every
// index before writing anything; the others run on float or int64 values
// (narrower dtypes are decoded exactly by the callers).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_INDEXING_H
#define MIXPREC_RUNTIME_CPU_INDEXING_H

#include "runtime/kernels/Kernels.h"

namespace mixprec::runtime::cpu {

/// Where a gather met an index out of range: the flat position in the
/// indices, the index, and the size of the dim it addresses.
struct BadIndex {
  int64_t position = -1; ///< -1: every index is in range
  int64_t value = 0;
  int64_t dim = 0; ///< the data dim the index addresses
  int64_t size = 0;
  bool ok() const { return position < 0; }
};

/// ONNX GatherElements: `out` has the shape `is` of the indices (rank of
/// `ds`, each dim off `axis` at most the data's); out[i] = data[i with
/// dim `axis` replaced by idx[i]]. Negative indices count from the end.
/// Writes nothing when an index is out of range.
BadIndex gatherElementsRaw(const void *data, const Shape &ds, const int64_t *idx, const Shape &is,
                           int64_t axis, void *out, size_t elemSize);

/// ONNX GatherND with `batchDims` leading batch dims shared by data and
/// indices: out shape = is[:-1] + ds[batchDims + is.back():]. Writes
/// nothing when an index is out of range.
BadIndex gatherNdRaw(const void *data, const Shape &ds, const int64_t *idx, const Shape &is,
                     int64_t batchDims, void *out, size_t elemSize);

/// ONNX ArgMax (`isMax`) / ArgMin along `axis` (normalized, dim > 0): the
/// first index of the extreme value, the last with `selectLast`. `out`
/// holds one index per position off the axis (keepdims only changes the
/// logical shape).
template <typename T>
void argReduce(const T *in, const Shape &s, int64_t axis, bool isMax, bool selectLast,
               int64_t *out);

/// ONNX TopK along `axis` (normalized), k <= s[axis]: the k largest
/// (smallest) values and their indices; equal values keep the lower index
/// first, as onnxruntime does. The results are always sorted (ONNX leaves
/// the order free when `sorted` is 0).
template <typename T>
void topK(const T *in, const Shape &s, int64_t axis, int64_t k, bool largest, T *values,
          int64_t *indices);

/// ONNX CumSum along `axis` (normalized): running sums, `exclusive` leaving
/// out the element itself, `reverse` summing from the end. Floats
/// accumulate in double and round once per output.
template <typename T>
void cumSum(const T *in, const Shape &s, int64_t axis, bool exclusive, bool reverse, T *out);

/// How ScatterND combines an update with the data (the schema's numbers).
enum class ScatterReduction { None = 0, Add = 1, Mul = 2, Max = 3, Min = 4 };

/// ONNX ScatterND: `out` = data (shape `ds`) with the slice each index
/// tuple (the last dim of `is`) addresses replaced by, or combined with,
/// the matching slice of `updates` (shape is[:-1] + ds[is.back():]), tuple
/// after tuple. `out` may alias `data`. Writes nothing when an index is out
/// of range.
template <typename T>
BadIndex scatterNd(const T *data, const Shape &ds, const int64_t *idx, const Shape &is,
                   const T *updates, ScatterReduction reduction, T *out);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_INDEXING_H
