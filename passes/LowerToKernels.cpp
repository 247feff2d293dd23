//===- LowerToKernels.cpp - --mp-lower-to-kernels --------------------------===//
#include "passes/KernelUtils.h"
#include "passes/Passes.h"
#include "passes/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_LOWERTOKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// The graph op names a lowered op keeps.
ArrayAttr namesOf(MLIRContext *ctx, ArrayRef<Operation *> ops) {
  SmallVector<Attribute> names;
  for (Operation *op : ops) {
    std::string name = opName(op);
    names.push_back(StringAttr::get(ctx, name.empty() ? opTypeName(op) : StringRef(name)));
  }
  return ArrayAttr::get(ctx, names);
}

/// Iteration space and row dims of a kernel body: its row reduction's
/// input, else the first stored value.
std::pair<SmallVector<int64_t>, int64_t> iterationSpace(Block &body) {
  for (Operation &op : body.without_terminator()) {
    int64_t dims = rowReductionDims(&op);
    if (dims >= 0) {
      ArrayRef<int64_t> s = shapeOf(op.getOperand(0));
      return {SmallVector<int64_t>(s.begin(), s.end()), dims};
    }
  }
  ArrayRef<int64_t> s = shapeOf(body.getTerminator()->getOperand(0));
  return {SmallVector<int64_t>(s.begin(), s.end()), 0};
}

/// Moves a fusion's body into a new mpk.kernel.
void lowerFusionToKernel(graph::FusionOp fusion) {
  OpBuilder b(fusion);
  auto [shape, rowDims] = iterationSpace(fusion.getBody().front());
  auto kernel = b.create<kernel::KernelOp>(fusion.getLoc(), fusion.getResultTypes(),
                                           fusion.getInputs(), b.getDenseI64ArrayAttr(shape),
                                           b.getI64IntegerAttr(rowDims), fusion.getOps());
  kernel.getBody().takeBody(fusion.getBody());
  Block &body = kernel.getBody().front();
  auto yield = cast<graph::YieldOp>(body.getTerminator());
  OpBuilder::atBlockEnd(&body).create<kernel::YieldOp>(yield.getLoc(), yield.getValues());
  yield.erase();
  fusion.replaceAllUsesWith(kernel.getResults());
  fusion.erase();
}

/// Wraps one element-wise or row-reduction op in an mpk.kernel.
void lowerOpToKernel(Operation *op) {
  OpBuilder b(op);
  MLIRContext *ctx = op->getContext();
  SmallVector<Value> inputs;
  for (Value operand : op->getOperands())
    if (!isScalarConstant(operand) && !llvm::is_contained(inputs, operand))
      inputs.push_back(operand);
  int64_t rowDims = std::max<int64_t>(rowReductionDims(op), 0);
  // An amax reads every element of its input (one value for the tensor).
  bool overInput = rowDims || isa<graph::AmaxOp>(op);
  ArrayRef<int64_t> shape = shapeOf(overInput ? op->getOperand(0) : op->getResult(0));
  auto kernelOp = b.create<kernel::KernelOp>(op->getLoc(), op->getResultTypes(), inputs,
                                             b.getDenseI64ArrayAttr(shape),
                                             b.getI64IntegerAttr(rowDims), namesOf(ctx, {op}));
  Block *body = new Block();
  kernelOp.getBody().push_back(body);
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Value operand : op->getOperands())
    if (isScalarConstant(operand) && !mapping.contains(operand))
      mapping.map(operand, inner.clone(*operand.getDefiningOp())->getResult(0));
  Operation *clone = inner.clone(*op, mapping);
  inner.create<kernel::YieldOp>(op->getLoc(), clone->getResults());
  op->replaceAllUsesWith(kernelOp.getResults());
  op->erase();
}

/// Builds the mpk.gemm for a GEMM op with an optional bias and epilogue
/// (values as seen from outside any fusion, through `outer`).
void buildGemm(OpBuilder &b, Operation *gemmOp, Value extraBias, StringRef epilogue,
               ArrayAttr sourceNames, Type resultType, Location loc,
               function_ref<Value(Value)> outer, Value replaceMe) {
  MLIRContext *ctx = b.getContext();
  Value a, w, bias, sa, sb;
  bool transB = false;
  llvm::TypeSwitch<Operation *>(gemmOp)
      .Case<graph::MatmulOp>([&](auto o) { a = o.getLhs(), w = o.getRhs(); })
      .Case<graph::LinearOp>([&](auto o) {
        a = o.getInput(), w = o.getWeight(), bias = o.getBias();
        transB = o.getTransposeWeight();
      })
      .Case<graph::ScaledMatmulOp>([&](auto o) {
        a = o.getLhs(), w = o.getRhs(), sa = o.getLhsScale(), sb = o.getRhsScale();
      })
      .Case<graph::ScaledLinearOp>([&](auto o) {
        a = o.getInput(), w = o.getWeight(), bias = o.getBias();
        sa = o.getInputScale(), sb = o.getWeightScale();
        transB = o.getTransposeWeight();
      });
  if (extraBias)
    bias = extraBias;
  auto precision = gemmOp->getAttrOfType<TypeAttr>(graph::GraphDialect::kPrecisionAttr);
  bool tf32 = precision && isa<FloatTF32Type>(precision.getValue());
  auto map = [&](Value v) { return v ? outer(v) : Value(); };
  auto gemm = b.create<kernel::GemmOp>(loc, resultType, map(a), map(w), map(bias), map(sa),
                                       map(sb), b.getBoolAttr(transB),
                                       StringAttr::get(ctx, epilogue), b.getBoolAttr(tf32),
                                       sourceNames);
  replaceMe.replaceAllUsesWith(gemm.getResult());
}

/// Lowers a fusion of kind gemm: GEMM, optional bias add, optional activation.
void lowerGemmFusion(graph::FusionOp fusion) {
  Block &body = fusion.getBody().front();
  IRMapping outer;
  for (auto [arg, input] : llvm::zip(body.getArguments(), fusion.getInputs()))
    outer.map(arg, input);
  // Casts inside a GEMM fusion only widen operands to the FP32 epilogue
  // (exact); the GEMM call reads the stored values themselves.
  auto outside = [&](Value v) {
    while (auto c = v.getDefiningOp<graph::CastOp>())
      v = c.getInput();
    return outer.lookupOrDefault(v);
  };
  Operation *gemmOp = nullptr;
  Value extraBias;
  StringRef epilogue = "none";
  for (Operation &op : body.without_terminator()) {
    if (isGemmOp(&op))
      gemmOp = &op;
    else if (auto add = dyn_cast<graph::AddOp>(op))
      extraBias = add.getLhs() == gemmOp->getResult(0) ? add.getRhs() : add.getLhs();
    else if (std::optional<StringRef> e = gemmEpilogueOf(&op))
      epilogue = *e;
  }
  OpBuilder b(fusion);
  buildGemm(b, gemmOp, extraBias, epilogue, fusion.getOps(), fusion.getResult(0).getType(),
            fusion.getLoc(), outside, fusion.getResult(0));
  fusion.erase();
}

/// Whether a matmul fits one (batched) GEMM step: matrices, and batch dims
/// that each operand either has in full or not at all.
bool isGemmStep(graph::MatmulOp op) {
  ArrayRef<int64_t> a = shapeOf(op.getLhs()), b = shapeOf(op.getRhs()),
                    out = shapeOf(op.getOutput());
  if (a.size() < 2 || b.size() < 2)
    return false;
  auto fits = [&](ArrayRef<int64_t> s) {
    return s.size() == 2 || s.drop_back(2) == out.drop_back(2);
  };
  return fits(a) && fits(b);
}

/// The flattened integer attributes of a backend routine (the layouts of
/// runtime/src/OpaqueOps.h).
SmallVector<int64_t> routineIntAttrs(Operation *op) {
  using namespace graph;
  SmallVector<int64_t> attrs;
  auto append = [&](ArrayRef<int64_t> v) { attrs.append(v.begin(), v.end()); };
  llvm::TypeSwitch<Operation *>(op)
      .Case<TransposeOp>([&](auto o) { append(o.getPerm()); })
      .Case<SliceOp>([&](auto o) {
        append(o.getStarts());
        append(o.getSteps());
      })
      .Case<ConcatOp, GatherOp>([&](auto o) { attrs.push_back(o.getAxis()); })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) { attrs.push_back(o.getAxis()); })
      .Case<LayerNormOp, RmsNormOp>([&](auto o) { attrs.push_back(o.getAxis()); })
      .Case<Conv2dOp>([&](auto o) {
        append(o.getStrides());
        append(o.getPads());
        append(o.getDilations());
        attrs.push_back(o.getGroups());
      })
      .Case<MaxPool2dOp>([&](auto o) {
        append(o.getKernelShape());
        append(o.getStrides());
        append(o.getPads());
        if (auto d = o.getDilations())
          append(*d);
        else
          append({1, 1});
        attrs.push_back(o.getCeilMode());
      })
      .Case<AvgPool2dOp>([&](auto o) {
        append(o.getKernelShape());
        append(o.getStrides());
        append(o.getPads());
        attrs.push_back(o.getCountIncludePad());
        attrs.push_back(o.getCeilMode());
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto o) {
        attrs.push_back(o.getKeepdims());
        append(o.getAxes());
      })
      .Case<Fp8ScaleOp>([&](auto o) {
        attrs.push_back(o.getMargin());
        attrs.push_back(o.getFormat().isFloat8E5M2() ? 4 : 3); // schema DType
      });
  return attrs;
}

SmallVector<float> routineFloatAttrs(Operation *op) {
  if (auto bn = dyn_cast<graph::BatchNormOp>(op))
    return {bn.getEpsilon().convertToFloat()};
  if (auto ln = dyn_cast<graph::LayerNormOp>(op))
    return {ln.getEpsilon().convertToFloat()};
  if (auto rn = dyn_cast<graph::RmsNormOp>(op))
    return {rn.getEpsilon().convertToFloat()};
  return {};
}

//===----------------------------------------------------------------------===//
// --mp-lower-to-kernels
//===----------------------------------------------------------------------===//

struct LowerToKernelsPass : public impl::LowerToKernelsPassBase<LowerToKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *ctx = &getContext();
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto fusion = dyn_cast<graph::FusionOp>(op)) {
        if (fusion.getKind() == graph::FusionKind::gemm)
          lowerGemmFusion(fusion);
        else
          lowerFusionToKernel(fusion);
      } else if (auto matmul = dyn_cast<graph::MatmulOp>(op); matmul && !isGemmStep(matmul)) {
        // Vector operands and partially broadcast batches: a routine with
        // numpy.matmul semantics (same products, same FP32 accumulation).
        OpBuilder b(op);
        SmallVector<int64_t> ints;
        auto precision = op->getAttrOfType<TypeAttr>(graph::GraphDialect::kPrecisionAttr);
        if (precision && isa<FloatTF32Type>(precision.getValue()))
          ints.push_back(1);
        auto call = b.create<kernel::CallOp>(
            op->getLoc(), op->getResultTypes(), StringAttr::get(ctx, "matmul"),
            op->getOperands(), b.getDenseI64ArrayAttr(ints), b.getDenseF32ArrayAttr({}),
            namesOf(ctx, {op}));
        op->replaceAllUsesWith(call.getResults());
        op->erase();
      } else if (isGemmOp(op)) {
        OpBuilder b(op);
        buildGemm(b, op, Value(), "none", namesOf(ctx, {op}), op->getResult(0).getType(), op->getLoc(),
                  [](Value v) { return v; }, op->getResult(0));
        op->erase();
      } else if (isElementwiseKernelOp(op) || rowReductionDims(op) >= 0 ||
                 isa<graph::AmaxOp>(op)) {
        lowerOpToKernel(op);
      } else if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
        OpBuilder b(op);
        Value alias = b.create<kernel::AliasOp>(op->getLoc(), reshape.getType(),
                                                reshape.getInput());
        reshape.replaceAllUsesWith(alias);
        op->erase();
      } else if (isa<graph::GraphDialect>(op->getDialect()) && !isa<graph::ConstantOp>(op)) {
        OpBuilder b(op);
        auto call = b.create<kernel::CallOp>(
            op->getLoc(), op->getResultTypes(), StringAttr::get(ctx, opTypeName(op)),
            op->getOperands(), b.getDenseI64ArrayAttr(routineIntAttrs(op)),
            b.getDenseF32ArrayAttr(routineFloatAttrs(op)), namesOf(ctx, {op}));
        op->replaceAllUsesWith(call.getResults());
        op->erase();
      }
    }
    // Scalars now live inside kernels; drop the ones nothing reads.
    SmallVector<graph::ConstantOp> constants(func.getOps<graph::ConstantOp>());
    for (graph::ConstantOp c : constants)
      if (c->use_empty())
        c.erase();
  }
};

} // namespace
} // namespace mixprec::passes
