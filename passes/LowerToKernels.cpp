//===- LowerToKernels.cpp - --mp-lower-to-kernels --------------------------===//
#include "passes/KernelUtils.h"
#include "passes/LowerRoutines.h"
#include "passes/Passes.h"
#include "passes/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_LOWERTOKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

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
  bool tf32 = computesInTf32(gemmOp);
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
      } else if (isGemmOp(op) && isGemmStep(op)) {
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
      }
    }
    // Every other mp op runs as a backend routine.
    ConversionTarget target(*ctx);
    target.addLegalDialect<kernel::KernelDialect>();
    target.addIllegalDialect<graph::GraphDialect>();
    target.addLegalOp<graph::ConstantOp, kernel::KernelOp>();
    target.markOpRecursivelyLegal<kernel::KernelOp>(); // its body holds mp ops
    RewritePatternSet patterns(ctx);
    populateRoutineLoweringPatterns(patterns);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      return signalPassFailure();
    // Scalars now live inside kernels; drop the ones nothing reads.
    SmallVector<graph::ConstantOp> constants(func.getOps<graph::ConstantOp>());
    for (graph::ConstantOp c : constants)
      if (c->use_empty())
        c.erase();
  }
};

} // namespace
} // namespace mixprec::passes
