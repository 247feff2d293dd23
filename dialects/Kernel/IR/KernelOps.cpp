//===- KernelOps.cpp - the mpk kernel dialect ------------------------------===//
#include "dialects/Kernel/IR/KernelOps.h"
#include "dialects/Kernel/IR/StepVisitor.h"

#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

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
#include "dialects/Kernel/IR/KernelEnums.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/Kernel/IR/KernelOps.cpp.inc"

namespace mixprec::kernel {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// How many operands the scalar function takes (runtime/format/ScalarFns.def).
unsigned arityOf(graph::ScalarFn fn) {
  switch (fn) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, ...)                                            \
  case graph::ScalarFn::Name:                                                                      \
    return arity;
#include "runtime/format/ScalarFns.def"
  }
  return 0;
}

/// Whether an expression program computes the function in one instruction:
/// all but the lowered ones (silu is a sigmoid kept in FP32, then a mul).
bool isOneInstruction(graph::ScalarFn fn) {
  switch (fn) {
#define MP_SCALAR_FN(Name, ...)                                                                    \
  case graph::ScalarFn::Name:                                                                      \
    return true;
#define MP_SCALAR_FN_LOWERED(Name, ...)                                                            \
  case graph::ScalarFn::Name:                                                                      \
    return false;
#include "runtime/format/ScalarFns.def"
  }
  return false;
}

/// Whether `result` is `yielded` stored without its (size-1) row dims.
bool storesRowValueWithoutRowDims(RankedTensorType yielded, RankedTensorType result,
                                  int64_t rowDims) {
  ArrayRef<int64_t> in = yielded.getShape();
  return rowDims > 0 && yielded.getElementType() == result.getElementType() &&
         in.size() == result.getShape().size() + rowDims &&
         in.drop_back(rowDims) == result.getShape() &&
         llvm::all_of(in.take_back(rowDims), [](int64_t d) { return d == 1; });
}

/// Fails unless `input` has the shape of the kernel that holds `op`.
LogicalResult verifyOverKernelShape(Operation *op, Value input) {
  auto kernel = cast<KernelOp>(op->getParentOp());
  if (shapeOf(input) != kernel.getShape())
    return op->emitOpError() << "input shape " << shapes::formatShape(shapeOf(input))
                             << " must be the kernel's shape "
                             << shapes::formatShape(kernel.getShape());
  return success();
}

} // namespace

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Kernel/IR/KernelOps.cpp.inc"
      >();
  registerAttributes();
}

bool isKernelInstruction(Operation *op) {
  if (isa<ElementwiseOp, RowReduceOp, AmaxOp, YieldOp>(op))
    return true;
  // An mp op with FP32 parameters becomes an mpk.elementwise reading them
  // as constants (--mp-lower-to-kernels).
  if (auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(op))
    return isOneInstruction(elementwise.getScalarFn()) && elementwise.getScalarParams().empty();
  if (op->hasTrait<OpTrait::ConstantLike>() && op->getNumResults() == 1)
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
      return type.getNumElements() == 1;
  return false;
}

/// row_dims as a count of trailing dims of `shape` (0 when out of range,
/// which the verifier reports).
static size_t rowDimCount(KernelOp kernel) {
  auto rowDims = static_cast<int64_t>(kernel.getRowDims());
  bool inRange = rowDims >= 0 && rowDims <= static_cast<int64_t>(kernel.getShape().size());
  return inRange ? static_cast<size_t>(rowDims) : 0;
}

SmallVector<int64_t> KernelOp::getRowValueShape() {
  SmallVector<int64_t> shape(getShape());
  for (size_t i = shape.size() - rowDimCount(*this); i < shape.size(); ++i)
    shape[i] = 1;
  return shape;
}

int64_t KernelOp::getRowSize() {
  int64_t size = 1;
  for (int64_t d : getShape().take_back(rowDimCount(*this)))
    size *= d;
  return size;
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "body arguments must match the inputs";
  int64_t rowDims = static_cast<int64_t>(getRowDims());
  if (rowDims < 0 || rowDims > static_cast<int64_t>(getShape().size()))
    return emitOpError() << "row_dims " << rowDims << " is out of range for a rank-"
                         << getShape().size() << " iteration space";
  ValueRange yielded = cast<YieldOp>(body.getTerminator()).getValues();
  if (yielded.size() != getNumResults())
    return emitOpError() << "yielded types must match the results";
  for (auto [value, result] : llvm::zip(yielded, getResults())) {
    auto in = cast<RankedTensorType>(value.getType());
    auto out = cast<RankedTensorType>(result.getType());
    if (in != out && !storesRowValueWithoutRowDims(in, out, rowDims))
      return emitOpError() << "yielded types must match the results";
  }
  for (Operation &op : body)
    if (!isKernelInstruction(&op))
      return emitOpError() << "body op '" << op.getName()
                           << "' is no expression-program instruction (--mp-lower-to-kernels "
                              "decomposes softmax, norms, reductions and silu)";
  return success();
}

LogicalResult ElementwiseOp::verify() {
  graph::ScalarFn fn = getFn();
  if (!isOneInstruction(fn))
    return emitOpError() << "'" << graph::stringifyScalarFn(fn)
                         << "' is more than one instruction";
  if (getNumOperands() != arityOf(fn))
    return emitOpError() << "'" << graph::stringifyScalarFn(fn) << "' takes " << arityOf(fn)
                         << " operands, got " << getNumOperands();
  shapes::Shape shape(shapeOf(getOperand(0)));
  for (Value operand : getOperands().drop_front()) {
    shapes::ShapeOrError joined = shapes::broadcastShapes(shape, shapeOf(operand));
    if (!joined.ok())
      return emitOpError() << joined.error;
    shape = joined.shape;
  }
  if (shapeOf(getOutput()) != ArrayRef<int64_t>(shape))
    return emitOpError() << "result shape " << shapes::formatShape(shapeOf(getOutput()))
                         << " must be the operands' broadcast " << shapes::formatShape(shape);
  return success();
}

LogicalResult RowReduceOp::verify() {
  if (failed(verifyOverKernelShape(*this, getInput())))
    return failure();
  SmallVector<int64_t> row = cast<KernelOp>((*this)->getParentOp()).getRowValueShape();
  if (shapeOf(getOutput()) != ArrayRef<int64_t>(row))
    return emitOpError() << "result shape " << shapes::formatShape(shapeOf(getOutput()))
                         << " must be the kernel's shape with its row dims 1, "
                         << shapes::formatShape(row);
  return success();
}

LogicalResult AmaxOp::verify() { return verifyOverKernelShape(*this, getInput()); }

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

LogicalResult StepVisitor::visit(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<KernelOp>([&](KernelOp kernel) { return visitKernel(kernel); })
      .Case<GemmOp>([&](GemmOp gemm) { return visitGemm(gemm); })
      .Case<CallOp>([&](CallOp call) { return visitCall(call); })
      .Case<AliasOp>([&](AliasOp alias) { return visitAlias(alias); })
      .Default([&](Operation *other) { return visitOther(other); });
}

} // namespace mixprec::kernel
