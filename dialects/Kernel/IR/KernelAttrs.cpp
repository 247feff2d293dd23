//===- KernelAttrs.cpp - routines and their typed options ------------------===//
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h" // the generated attribute printer

using namespace mlir;

#include "dialects/Kernel/IR/KernelAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kernel/IR/KernelAttrs.cpp.inc"

namespace mixprec::kernel {

void KernelDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Kernel/IR/KernelAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Parameter syntax
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> parseIntList(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}

void printIntList(AsmPrinter &printer, ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

/// Fails without a message of its own: the attribute parser names the
/// parameter and its type.
FailureOr<bool> parseBoolKeyword(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return failure();
}

FailureOr<APFloat> parseF32(AsmParser &parser) {
  APFloat value(APFloat::IEEEsingle());
  if (parser.parseFloat(APFloat::IEEEsingle(), value))
    return failure();
  return value;
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

namespace {

/// Fails unless `values` (the parameter `name`) has `count` entries.
LogicalResult expectCount(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                          ArrayRef<int64_t> values, size_t count) {
  if (values.size() != count)
    return emitError() << name << " needs " << count << " entries, got " << values.size();
  return success();
}

} // namespace

LogicalResult Conv2dOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                        ArrayRef<int64_t> dilations, int64_t groups, bool) {
  if (failed(expectCount(emitError, "strides", strides, 2)) ||
      failed(expectCount(emitError, "pads", pads, 4)) ||
      failed(expectCount(emitError, "dilations", dilations, 2)))
    return failure();
  if (groups < 1)
    return emitError() << "groups must be at least 1, got " << groups;
  return success();
}

LogicalResult Pool2dOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                        bool, bool) {
  return success(succeeded(expectCount(emitError, "kernel", kernel, 2)) &&
                 succeeded(expectCount(emitError, "strides", strides, 2)) &&
                 succeeded(expectCount(emitError, "pads", pads, 4)) &&
                 succeeded(expectCount(emitError, "dilations", dilations, 2)));
}

/// Fails unless `dims` (the spatial dims of an N-D window) is 1 to 3.
static LogicalResult expectSpatialDims(function_ref<InFlightDiagnostic()> emitError,
                                       StringRef name, size_t dims) {
  if (dims < 1 || dims > 3)
    return emitError() << name << " needs 1 to 3 entries (one per spatial dim), got " << dims;
  return success();
}

LogicalResult ConvOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> dilations, int64_t groups, bool,
                                      ArrayRef<int64_t> outputPadding) {
  if (failed(expectSpatialDims(emitError, "strides", strides.size())) ||
      failed(expectCount(emitError, "pads", pads, 2 * strides.size())) ||
      failed(expectCount(emitError, "dilations", dilations, strides.size())))
    return failure();
  if (!outputPadding.empty() &&
      failed(expectCount(emitError, "output_padding", outputPadding, strides.size())))
    return failure();
  if (groups < 1)
    return emitError() << "groups must be at least 1, got " << groups;
  return success();
}

LogicalResult PoolOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                      bool, bool, int64_t storageOrder) {
  if (failed(expectSpatialDims(emitError, "kernel", kernel.size())) ||
      failed(expectCount(emitError, "strides", strides, kernel.size())) ||
      failed(expectCount(emitError, "pads", pads, 2 * kernel.size())) ||
      failed(expectCount(emitError, "dilations", dilations, kernel.size())))
    return failure();
  if (storageOrder != 0 && storageOrder != 1)
    return emitError() << "storage_order must be 0 or 1, got " << storageOrder;
  return success();
}

LogicalResult SliceOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  if (failed(expectCount(emitError, "steps", steps, starts.size())))
    return failure();
  if (llvm::is_contained(steps, 0))
    return emitError() << "steps must not be 0";
  return success();
}

LogicalResult Fp8ScaleOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          int64_t, Type format) {
  if (!llvm::isa<Float8E4M3FNType, Float8E5M2Type>(format))
    return emitError() << "format must be f8E4M3FN or f8E5M2, got " << format;
  return success();
}

LogicalResult BlockScaleOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                            int64_t blockRows, int64_t blockCols, int64_t recipe,
                                            int64_t margin, Type format) {
  if (blockRows < 1 || blockCols < 1)
    return emitError() << "block sizes must be positive, got " << blockRows << "x" << blockCols;
  if (recipe != 0 && recipe != 1)
    return emitError() << "block scaling recipe must be 0 (block) or 1 (mx), got " << recipe;
  if (margin < 0)
    return emitError() << "margin must be non-negative, got " << margin;
  if (!llvm::isa<Float8E4M3FNType, Float8E5M2Type>(format))
    return emitError() << "format must be f8E4M3FN or f8E5M2, got " << format;
  return success();
}

LogicalResult BlockGemmOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           int64_t aBlockRows, int64_t bBlockRows, int64_t kBlock,
                                           int64_t epilogue) {
  if (aBlockRows < 1 || bBlockRows < 1 || kBlock < 1)
    return emitError() << "block sizes must be positive, got a " << aBlockRows << "x" << kBlock
                       << ", b " << bBlockRows << "x" << kBlock;
  if (epilogue < 0 || epilogue > 2)
    return emitError() << "block_gemm epilogue must be 0 (none), 1 (relu) or 2 (gelu), got "
                       << epilogue;
  return success();
}

LogicalResult AllReduceOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           int64_t reduction) {
  if (reduction < 0 || reduction > 2)
    return emitError() << "all_reduce reduction must be 0 (sum), 1 (mean) or 2 (max), got "
                       << reduction;
  return success();
}

LogicalResult ShardOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t world) {
  if (world < 1)
    return emitError() << "rank_slice/all_gather world must be >= 1, got " << world;
  return success();
}

LogicalResult ScatterNdOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           int64_t reduction) {
  if (reduction < 0 || reduction > 4)
    return emitError() << "scatter_nd reduction must be in [0, 4], got " << reduction;
  return success();
}

LogicalResult AttentionOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           APFloat scale, bool causal, bool lse, int64_t grad) {
  if (grad < 0 || grad > 2)
    return emitError() << "attention grad must be 0 (dq), 1 (dk) or 2 (dv), got " << grad;
  if (!scale.isFinite())
    return emitError() << "attention scale must be finite";
  return success();
}

LogicalResult IntElementwiseOptionsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                                int64_t op) {
  if (op < 0 || op > 17)
    return emitError() << "int_elementwise op must be in [0, 17], got " << op;
  return success();
}

} // namespace mixprec::kernel
