//===- KernelUtils.cpp - what kernels are made of --------------------------===//
#include "conversion/GraphToKernel/KernelUtils.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Precision/PrecisionUtils.h"

using namespace mlir;

namespace mixprec::passes {

std::optional<StringRef> gemmEpilogueOf(Operation *op) {
  auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(op);
  if (!elementwise)
    return std::nullopt;
  // The epilogue column of runtime/format/ScalarFns.def.
#define MP_EPILOGUE_EPILOGUE(name) StringRef(#name)
#define MP_EPILOGUE_NO_EPILOGUE std::nullopt
  switch (elementwise.getScalarFn()) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, eval, intOp, epilogue,   \
                     ...)                                                                          \
  case graph::ScalarFn::Name:                                                                      \
    return MP_EPILOGUE_##epilogue;
#include "runtime/format/ScalarFns.def"
  }
#undef MP_EPILOGUE_EPILOGUE
#undef MP_EPILOGUE_NO_EPILOGUE
  return std::nullopt;
}

bool isElementwiseKernelOp(Operation *op) {
  // Integer ops run exactly in the int_elementwise routine, not in FP32
  // kernel registers (exact only to 2^24).
  return isa<graph::ElementwiseOpInterface>(op) && !graph::computesOnIntegers(op);
}

bool isGemmOp(Operation *op) { return op->hasTrait<graph::OpTrait::GemmKernel>(); }

bool isReductionOp(Operation *op) { return op->hasTrait<graph::OpTrait::RowReductionKernel>(); }

int64_t rowReductionDims(Operation *op) { return graph::rowReductionDimsOf(op); }

bool isScalarConstant(Value v) {
  return v.getDefiningOp<graph::ConstantOp>() &&
         cast<RankedTensorType>(v.getType()).getNumElements() == 1;
}

ArrayAttr namesOf(MLIRContext *ctx, ArrayRef<Operation *> ops) {
  SmallVector<Attribute> names;
  for (Operation *op : ops) {
    std::string name = opName(op);
    names.push_back(StringAttr::get(ctx, name.empty() ? opTypeName(op) : StringRef(name)));
  }
  return ArrayAttr::get(ctx, names);
}

} // namespace mixprec::passes
