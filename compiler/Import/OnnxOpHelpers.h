//===- OnnxOpHelpers.h - small helpers of the op converters -----*- C++ -*-===//
//
// Free helpers used by several op families' converter files (OnnxGemm.cpp,
// OnnxElementwise.cpp, ...); the Importer member helpers are in
// OnnxOpHelpers.cpp. Internal to compiler/Import.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_IMPORT_ONNXOPHELPERS_H
#define MIXPREC_COMPILER_IMPORT_ONNXOPHELPERS_H

#include "compiler/Import/OnnxImporterImpl.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace mixprec::compiler::onnx_import {

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline mlir::Type elemOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}

inline bool isFloat(mlir::Type t) { return mlir::isa<mlir::FloatType>(t); }
/// INT32 or INT64: the integers mixprec computes at run time, exactly.
inline bool isRuntimeInteger(mlir::Type t) { return t.isInteger(32) || t.isInteger(64); }

/// Product of dims [begin, end); callers pass shapes whose total fits int64.
inline int64_t product(llvm::ArrayRef<int64_t> shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

/// Row-major strides of `shape`.
inline llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Compile-time folds stay small: they are for shape arithmetic, not data.
constexpr int64_t kMaxFoldElements = int64_t(1) << 20;

inline std::string twineStr(const llvm::Twine &t) { return t.str(); }

/// The shape a Reshape to `target` gives a tensor of shape `in` (0 copies
/// the input's dim unless `allowZero`, one -1 is inferred), or why not.
shapes::ShapeOrError reshapeShape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> target,
                                  bool allowZero);

/// Window attributes (kernel, strides, dilations) must be positive and small
/// enough that the window arithmetic cannot overflow.
inline std::optional<std::string> checkWindowValues(llvm::StringRef name,
                                                    llvm::ArrayRef<int64_t> values, size_t count) {
  if (values.size() != count)
    return "attribute '" + name.str() + "' must have " + std::to_string(count) + " values, got " +
           std::to_string(values.size());
  for (int64_t v : values)
    if (v <= 0 || v > std::numeric_limits<int32_t>::max())
      return "attribute '" + name.str() + "' must hold positive values, got " +
             shapes::formatShape(values);
  return std::nullopt;
}

} // namespace mixprec::compiler::onnx_import

#endif // MIXPREC_COMPILER_IMPORT_ONNXOPHELPERS_H
