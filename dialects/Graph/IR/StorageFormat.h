//===- StorageFormat.h - storage dtypes and float constants -----*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_STORAGEFORMAT_H
#define MIXPREC_DIALECTS_GRAPH_IR_STORAGEFORMAT_H

#include "common/numerics/Rounding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <vector>

namespace mixprec::graph {

/// The rounding-library format that stores values of a float element type,
/// or nothing for types that are not a storage dtype (integers, tf32).
inline std::optional<numerics::Format> storageFormatOf(mlir::Type t) {
  if (t.isF32())
    return numerics::Format::F32;
  if (t.isF16())
    return numerics::Format::F16;
  if (t.isBF16())
    return numerics::Format::BF16;
  if (mlir::isa<mlir::Float8E4M3FNType>(t))
    return numerics::Format::F8E4M3FN;
  if (mlir::isa<mlir::Float8E5M2Type>(t))
    return numerics::Format::F8E5M2;
  return std::nullopt;
}

/// How a store to `format` rounds (DESIGN.md numerics rules): FP8
/// saturates to its largest finite value, F16 and BF16 overflow to inf.
inline numerics::RoundOptions storeRoundOptions(numerics::Format format) {
  numerics::RoundOptions options;
  options.saturate = format == numerics::Format::F8E4M3FN || format == numerics::Format::F8E5M2;
  return options;
}

/// Whether every value of float storage dtype `from` is exactly a value of
/// `to` (so a cast from -> to loses nothing): FP8 fits in F16, BF16 and F32;
/// F16 and BF16 fit in F32 but not in each other.
inline bool isExactWidening(mlir::Type from, mlir::Type to) {
  if (from == to)
    return true;
  if (!storageFormatOf(from) || !storageFormatOf(to))
    return false;
  if (to.isF32())
    return true;
  return mlir::isa<mlir::Float8E4M3FNType, mlir::Float8E5M2Type>(from) &&
         (to.isF16() || to.isBF16());
}

/// A constant of `type` (a float storage dtype) holding `values` rounded
/// as a store to that dtype rounds them; null for other element types.
mlir::DenseElementsAttr storeFloatConstant(mlir::RankedTensorType type,
                                           llvm::ArrayRef<float> values);

/// A float constant's values as float32: exact for every storage dtype
/// (each F16/BF16/FP8 value is a float32).
inline std::vector<float> readFloatConstant(mlir::DenseElementsAttr attr) {
  std::vector<float> values;
  values.reserve(attr.getNumElements());
  if (attr.getElementType().isF32()) {
    auto range = attr.getValues<float>();
    values.assign(range.begin(), range.end());
    return values;
  }
  for (llvm::APFloat v : attr.getValues<llvm::APFloat>()) {
    bool losesInfo = false;
    v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    values.push_back(v.convertToFloat());
  }
  return values;
}

} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_STORAGEFORMAT_H
