//===- KernelOps.cpp - the mpk kernel dialect ------------------------------===//
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using mixprec::kernel::Routine;
using mixprec::kernel::RoutineAttr;

/// `mpk.call transpose(...)`: the routine as a bare keyword.
static ParseResult parseRoutine(OpAsmParser &parser, RoutineAttr &routine) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Routine> value = mixprec::kernel::symbolizeRoutine(keyword);
  if (!value)
    return parser.emitError(loc) << "unknown routine '" << keyword << "'";
  routine = RoutineAttr::get(parser.getContext(), *value);
  return success();
}

static void printRoutine(OpAsmPrinter &printer, Operation *, RoutineAttr routine) {
  printer << mixprec::kernel::stringifyRoutine(routine.getValue());
}

#include "dialects/Kernel/IR/KernelDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/Kernel/IR/KernelOps.cpp.inc"

namespace mixprec::kernel {

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Kernel/IR/KernelOps.cpp.inc"
      >();
  registerAttributes();
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "body arguments must match the inputs";
  if (cast<YieldOp>(body.getTerminator()).getValues().getTypes() != getResultTypes())
    return emitOpError() << "yielded types must match the results";
  int64_t rowDims = static_cast<int64_t>(getRowDims());
  if (rowDims < 0 || rowDims > static_cast<int64_t>(getShape().size()))
    return emitOpError() << "row_dims " << rowDims << " is out of range for a rank-"
                         << getShape().size() << " iteration space";
  return success();
}

LogicalResult GemmOp::verify() {
  if (static_cast<bool>(getAScale()) != static_cast<bool>(getBScale()))
    return emitOpError() << "FP8 scales come in pairs (a_scale and b_scale)";
  StringRef e = getEpilogue();
  if (e != "none" && e != "relu" && e != "gelu")
    return emitOpError() << "epilogue must be none, relu or gelu, got '" << e << "'";
  return success();
}

LogicalResult CallOp::verify() {
  if (!getOptions().appliesTo(getOpType()))
    return emitOpError() << "routine '" << stringifyRoutine(getOpType())
                         << "' does not take options " << getOptionsAttr();
  return success();
}

LogicalResult AliasOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getOutput().getType());
  if (in.getElementType() != out.getElementType() ||
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "an alias keeps the element type and count";
  return success();
}

} // namespace mixprec::kernel
