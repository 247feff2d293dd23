//===- KernelBodyPatterns.cpp - mp ops into kernel instructions ------------===//
//
// Inside an mpk.kernel body only expression-program instructions may stay
// (kernel::isKernelInstruction). These patterns of --mp-lower-to-kernels
// decompose the rest: softmax, log-softmax, layer and RMS norms and
// reductions over the kernel's row into element-wise instructions and
// mpk.row_reduce, silu into a sigmoid and a mul, an activation's FP32
// parameters into constant operands, amax into mpk.amax, and a
// fusion's yield into the kernel's.
// Intermediates are FP32 and only the op's result is rounded to its dtype,
// in the order the runtime's CPU reference computes them; the instructions
// are built in program order, so the module writer serializes them as they
// stand.
//
//===----------------------------------------------------------------------===//
#include "conversion/GraphToKernel/LowerToKernels.h"

#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

using namespace mlir;

namespace mixprec::passes {
namespace {

using graph::ScalarFn;
using kernel::RowReduceKind;

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// The kernel whose body holds `op`, or null.
kernel::KernelOp enclosingKernel(Operation *op) {
  return dyn_cast<kernel::KernelOp>(op->getParentOp());
}

/// Whether `op` reduces exactly its kernel's row: its first operand spans
/// the kernel's space and its reduced dims are the kernel's row dims.
bool reducesKernelRow(Operation *op) {
  kernel::KernelOp kernel = enclosingKernel(op);
  return kernel && shapeOf(op->getOperand(0)) == kernel.getShape() &&
         graph::rowReductionDimsOf(op) == static_cast<int64_t>(kernel.getRowDims());
}

/// Builds instructions at an op of a kernel body, in program order.
class InstructionBuilder {
public:
  InstructionBuilder(Operation *op, ConversionPatternRewriter &rewriter)
      : rewriter(rewriter), loc(op->getLoc()), kernel(enclosingKernel(op)) {
    rewriter.setInsertionPoint(op);
  }

  /// `fn` of `operands` (broadcast), rounded once to `elementType`.
  Value apply(ScalarFn fn, ValueRange operands, Type elementType) {
    shapes::Shape shape(shapeOf(operands.front()));
    for (Value operand : operands.drop_front())
      shape = shapes::broadcastShapes(shape, shapeOf(operand)).shape;
    return rewriter.create<kernel::ElementwiseOp>(loc, RankedTensorType::get(shape, elementType),
                                                  fn, operands);
  }

  /// The row value (row dims 1) of reducing `x` over the kernel's row.
  Value rowReduce(RowReduceKind kind, Value x, Type elementType) {
    auto type = RankedTensorType::get(kernel.getRowValueShape(), elementType);
    return rewriter.create<kernel::RowReduceOp>(loc, type, kind, x);
  }

  /// The largest |x| over the kernel's space, a rank-0 f32.
  Value amax(Value x) {
    auto type = RankedTensorType::get({}, rewriter.getF32Type());
    return rewriter.create<kernel::AmaxOp>(loc, type, x);
  }

  /// A rank-0 FP32 immediate.
  Value constant(float value) {
    auto type = RankedTensorType::get({}, rewriter.getF32Type());
    return rewriter.create<graph::ConstantOp>(loc, type,
                                              DenseElementsAttr::get(type, APFloat(value)));
  }

  /// The factor that turns a row sum into a mean: 1 / (points in a row),
  /// and 0 for an empty row, whose mean is then 0 as onnxruntime gives.
  Value inverseRowSize() {
    int64_t size = kernel.getRowSize();
    return constant(size ? 1.0f / static_cast<float>(size) : 0.0f);
  }

  Type f32() { return rewriter.getF32Type(); }

private:
  ConversionPatternRewriter &rewriter;
  Location loc;
  kernel::KernelOp kernel;
};

/// Whether the row value that replaces a reduction fits where its result
/// is read: it has the result's shape, or only the kernel's yield reads
/// the result (a reduction without keepdims, stored without its row dims).
bool rowValueFits(Operation *op) {
  Value result = op->getResult(0);
  if (shapeOf(result) == ArrayRef<int64_t>(enclosingKernel(op).getRowValueShape()))
    return true;
  return llvm::all_of(result.getUsers(), [](Operation *user) {
    return user->hasTrait<OpTrait::IsTerminator>();
  });
}

/// One op of a kernel body rewritten as instructions: `build` emits them
/// in program order and returns the value that replaces the op. By
/// default it applies to an op that reduces exactly the kernel's row; a
/// reduction's row value may replace a result without the row dims only
/// where the yield stores it.
template <typename OpT>
struct Decomposition : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using Adaptor = typename OpT::Adaptor;

  virtual bool applies(OpT op) const { return reducesKernelRow(op); }
  virtual Value build(OpT op, Adaptor adaptor, InstructionBuilder &b) const = 0;

  LogicalResult matchAndRewrite(OpT op, Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const final {
    if (!applies(op))
      return failure();
    InstructionBuilder b(op, rewriter);
    Value replacement = build(op, adaptor, b);
    Value result = op->getResult(0);
    if (result.getType() == replacement.getType()) {
      rewriter.replaceOp(op, replacement);
      return success();
    }
    // A row value for a result without the row dims: the yield takes it.
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses()))
      rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(replacement); });
    rewriter.eraseOp(op);
    return success();
  }
};

/// softmax(x) = e / rowsum(e), log_softmax(x) = d - log(rowsum(e)), with
/// d = x - rowmax(x) and e = exp(d).
template <typename SoftmaxLikeOp, bool isLog>
struct DecomposeSoftmax : Decomposition<SoftmaxLikeOp> {
  using Decomposition<SoftmaxLikeOp>::Decomposition;

  Value build(SoftmaxLikeOp op, typename SoftmaxLikeOp::Adaptor adaptor,
              InstructionBuilder &b) const override {
    Type out = elementTypeOf(op.getOutput());
    Value x = adaptor.getInput();
    Value max = b.rowReduce(RowReduceKind::max, x, b.f32());
    Value d = b.apply(ScalarFn::Sub, {x, max}, b.f32());
    Value e = b.apply(ScalarFn::Exp, {d}, b.f32());
    Value sum = b.rowReduce(RowReduceKind::sum, e, b.f32());
    if (!isLog)
      return b.apply(ScalarFn::Div, {e, sum}, out);
    Value logSum = b.apply(ScalarFn::Log, {sum}, b.f32());
    return b.apply(ScalarFn::Sub, {d, logSum}, out);
  }
};

/// The tail both norms share: x * rsqrt(meanSquare + eps) [* scale]
/// [+ bias] in FP32, cast once to `out`.
Value normalize(InstructionBuilder &b, Value x, Value meanSquare, float epsilon, Value scale,
                Value bias, Type out) {
  Value eps = b.constant(epsilon);
  Value shifted = b.apply(ScalarFn::Add, {meanSquare, eps}, b.f32());
  Value rstd = b.apply(ScalarFn::Rsqrt, {shifted}, b.f32());
  Value y = b.apply(ScalarFn::Mul, {x, rstd}, b.f32());
  if (scale)
    y = b.apply(ScalarFn::Mul, {y, scale}, b.f32());
  if (bias)
    y = b.apply(ScalarFn::Add, {y, bias}, b.f32());
  return b.apply(ScalarFn::Cast, {y}, out);
}

/// (x - mean) * rsqrt(var + eps) [* scale] [+ bias], mean and (population)
/// variance over the row, cast once to the output dtype.
struct DecomposeLayerNorm : Decomposition<graph::LayerNormOp> {
  using Decomposition::Decomposition;

  Value build(graph::LayerNormOp op, Adaptor adaptor, InstructionBuilder &b) const override {
    Value x = adaptor.getInput();
    Value inv = b.inverseRowSize();
    Value sum = b.rowReduce(RowReduceKind::sum, x, b.f32());
    Value mean = b.apply(ScalarFn::Mul, {sum, inv}, b.f32());
    Value centered = b.apply(ScalarFn::Sub, {x, mean}, b.f32());
    Value square = b.apply(ScalarFn::Mul, {centered, centered}, b.f32());
    Value squareSum = b.rowReduce(RowReduceKind::sum, square, b.f32());
    Value var = b.apply(ScalarFn::Mul, {squareSum, inv}, b.f32());
    return normalize(b, centered, var, op.getEpsilon().convertToFloat(), adaptor.getScale(),
                     adaptor.getBias(), elementTypeOf(op.getOutput()));
  }
};

/// x * rsqrt(mean(x * x) + eps) [* scale], cast once to the output dtype.
struct DecomposeRmsNorm : Decomposition<graph::RmsNormOp> {
  using Decomposition::Decomposition;

  Value build(graph::RmsNormOp op, Adaptor adaptor, InstructionBuilder &b) const override {
    Value x = adaptor.getInput();
    Value square = b.apply(ScalarFn::Mul, {x, x}, b.f32());
    Value squareSum = b.rowReduce(RowReduceKind::sum, square, b.f32());
    Value inv = b.inverseRowSize();
    Value meanSquare = b.apply(ScalarFn::Mul, {squareSum, inv}, b.f32());
    return normalize(b, x, meanSquare, op.getEpsilon().convertToFloat(), adaptor.getScale(),
                     Value(), elementTypeOf(op.getOutput()));
  }
};

/// reduce_sum and reduce_max: one row reduction, rounded to the output dtype.
template <typename ReduceOp, RowReduceKind kind>
struct DecomposeReduce : Decomposition<ReduceOp> {
  using Decomposition<ReduceOp>::Decomposition;

  bool applies(ReduceOp op) const override { return reducesKernelRow(op) && rowValueFits(op); }
  Value build(ReduceOp op, typename ReduceOp::Adaptor adaptor,
              InstructionBuilder &b) const override {
    return b.rowReduce(kind, adaptor.getInput(), elementTypeOf(op.getOutput()));
  }
};

/// reduce_mean: an FP32 row sum times 1 / (points in a row), rounded once.
struct DecomposeReduceMean : Decomposition<graph::ReduceMeanOp> {
  using Decomposition::Decomposition;

  bool applies(graph::ReduceMeanOp op) const override {
    return reducesKernelRow(op) && rowValueFits(op);
  }
  Value build(graph::ReduceMeanOp op, Adaptor adaptor, InstructionBuilder &b) const override {
    Value sum = b.rowReduce(RowReduceKind::sum, adaptor.getInput(), b.f32());
    Value inv = b.inverseRowSize();
    return b.apply(ScalarFn::Mul, {sum, inv}, elementTypeOf(op.getOutput()));
  }
};

/// silu(x) = x * sigmoid(x) with the sigmoid kept in FP32: one rounding, as
/// the reference kernel (cpu::UnaryOp::Silu) computes it.
struct DecomposeSilu : Decomposition<graph::SiluOp> {
  using Decomposition::Decomposition;

  bool applies(graph::SiluOp op) const override { return enclosingKernel(op) != nullptr; }
  Value build(graph::SiluOp op, Adaptor adaptor, InstructionBuilder &b) const override {
    Value x = adaptor.getInput();
    Value sigmoid = b.apply(ScalarFn::Sigmoid, {x}, b.f32());
    return b.apply(ScalarFn::Mul, {x, sigmoid}, elementTypeOf(op.getOutput()));
  }
};

/// An element-wise op with FP32 parameters (leaky_relu's alpha, ...) is one
/// instruction of its function that reads them as constants: FP32 values,
/// never rounded to the op's dtype.
struct ParamsToConstants : OpInterfaceConversionPattern<graph::ElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult matchAndRewrite(graph::ElementwiseOpInterface op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<float, 2> params = op.getScalarParams();
    if (params.empty() || !enclosingKernel(op))
      return failure();
    InstructionBuilder b(op, rewriter);
    SmallVector<Value> args(operands);
    for (float param : params)
      args.push_back(b.constant(param));
    rewriter.replaceOp(op, b.apply(op.getScalarFn(), args, elementTypeOf(op->getResult(0))));
    return success();
  }
};

/// An amax over the kernel's space is the kernel's amax primitive.
struct AmaxToPrimitive : Decomposition<graph::AmaxOp> {
  using Decomposition::Decomposition;

  bool applies(graph::AmaxOp op) const override {
    kernel::KernelOp kernel = enclosingKernel(op);
    return kernel && shapeOf(op.getInput()) == kernel.getShape();
  }
  Value build(graph::AmaxOp op, Adaptor adaptor, InstructionBuilder &b) const override {
    return b.amax(adaptor.getInput());
  }
};

/// A fusion's yield, moved into a kernel, is the kernel's yield.
struct YieldToKernelYield : OpConversionPattern<graph::YieldOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::YieldOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!enclosingKernel(op))
      return failure();
    rewriter.replaceOpWithNewOp<kernel::YieldOp>(op, adaptor.getOperands());
    return success();
  }
};

} // namespace

void populateKernelBodyPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeSoftmax<graph::SoftmaxOp, false>,
               DecomposeSoftmax<graph::LogSoftmaxOp, true>, DecomposeLayerNorm, DecomposeRmsNorm,
               DecomposeReduce<graph::ReduceSumOp, RowReduceKind::sum>,
               DecomposeReduce<graph::ReduceMaxOp, RowReduceKind::max>, DecomposeReduceMean,
               DecomposeSilu, ParamsToConstants, AmaxToPrimitive, YieldToKernelYield>(
      patterns.getContext());
}

} // namespace mixprec::passes
