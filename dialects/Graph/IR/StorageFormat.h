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
