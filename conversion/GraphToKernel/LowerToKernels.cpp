//===- LowerToKernels.cpp - --mp-lower-to-kernels --------------------------===//
#include "conversion/GraphToKernel/LowerToKernels.h"
#include "conversion/GraphToKernel/KernelUtils.h"
#include "conversion/GraphToKernel/LowerRoutines.h"
#include "passes/Passes.h"
#include "passes/Precision/PrecisionUtils.h"

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

/// Whether `op` is a step of the function (not inside a fusion or kernel).
bool atFunctionLevel(Operation *op) { return isa<func::FuncOp>(op->getParentOp()); }

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

/// Replaces `op` (a step-level op) by an mpk.kernel over `space` whose body
/// is a copy of `op`: scalar-constant operands are copied in as immediates,
/// the others (`operands`, as converted) become the kernel's inputs. The
/// copy is then legalized inside the kernel (KernelBodyPatterns.cpp).
void wrapInKernel(Operation *op, ArrayRef<Value> operands, ArrayRef<int64_t> space,
                  int64_t rowDims, ConversionPatternRewriter &rewriter) {
  SmallVector<Value> originals, inputs;
  SmallVector<Location> locs;
  for (auto [original, converted] : llvm::zip(op->getOperands(), operands)) {
    if (isScalarConstant(original) || llvm::is_contained(originals, original))
      continue;
    originals.push_back(original);
    inputs.push_back(converted);
    locs.push_back(original.getLoc());
  }
  auto kernel = rewriter.create<kernel::KernelOp>(
      op->getLoc(), op->getResultTypes(), inputs, rewriter.getDenseI64ArrayAttr(space),
      rewriter.getI64IntegerAttr(rowDims), namesOf(op->getContext(), {op}));
  Block *body = rewriter.createBlock(&kernel.getBody(), {}, ValueRange(inputs).getTypes(), locs);
  IRMapping mapping;
  mapping.map(originals, body->getArguments());
  for (Value operand : op->getOperands())
    if (isScalarConstant(operand) && !mapping.contains(operand))
      mapping.map(operand, rewriter.clone(*operand.getDefiningOp())->getResult(0));
  Operation *copy = rewriter.clone(*op, mapping);
  rewriter.create<kernel::YieldOp>(op->getLoc(), copy->getResults());
  rewriter.replaceOp(op, kernel.getResults());
}

/// Builds the step of a GEMM whose operands (`gemm`, mapped to values
/// outside any fusion) take an optional bias and activation epilogue: an
/// mpk.gemm, or for a block-scaled GEMM (FP8 block scaling) the routine
/// block_scaled_gemm, whose exact per-block sums no GEMM library computes
/// (common/numerics/BlockScaling.h).
Value buildGemm(ConversionPatternRewriter &rewriter, Location loc, const graph::GemmOperands &gemm,
                StringRef epilogue, bool tf32, ArrayAttr sourceNames, Type resultType) {
  if (!gemm.aBlock.empty()) {
    SmallVector<Value> inputs{gemm.a, gemm.b, gemm.aScale, gemm.bScale};
    if (gemm.bias)
      inputs.push_back(gemm.bias);
    int64_t code = epilogue == "relu" ? 1 : epilogue == "gelu" ? 2 : 0;
    auto options = kernel::BlockGemmOptionsAttr::get(rewriter.getContext(), gemm.aBlock[0],
                                                     gemm.bBlock[0], gemm.aBlock[1], code);
    return rewriter
        .create<kernel::CallOp>(loc, TypeRange{resultType}, kernel::Routine::BlockScaledGemm,
                                inputs, cast<kernel::RoutineOptionsInterface>(options), sourceNames)
        .getResult(0);
  }
  return rewriter.create<kernel::GemmOp>(loc, resultType, gemm.a, gemm.b, gemm.bias, gemm.aScale,
                                         gemm.bScale, rewriter.getBoolAttr(gemm.transposeB),
                                         rewriter.getStringAttr(epilogue),
                                         rewriter.getBoolAttr(tf32), sourceNames);
}

/// `gemm` with every operand passed through `map` (null stays null).
graph::GemmOperands mapOperands(graph::GemmOperands gemm, function_ref<Value(Value)> map) {
  for (Value *v : {&gemm.a, &gemm.b, &gemm.bias, &gemm.aScale, &gemm.bScale})
    if (*v)
      *v = map(*v);
  return gemm;
}

//===----------------------------------------------------------------------===//
// Step patterns
//===----------------------------------------------------------------------===//

/// An mp.fusion of kind elementwise or reduction becomes an mpk.kernel with
/// its body, over its row reduction's input (or its first stored value).
struct FusionToKernel : OpConversionPattern<graph::FusionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::FusionOp fusion, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (fusion.getKind() == graph::FusionKind::gemm)
      return failure();
    auto [shape, rowDims] = iterationSpace(fusion.getBody().front());
    auto kernel = rewriter.create<kernel::KernelOp>(
        fusion.getLoc(), fusion.getResultTypes(), adaptor.getInputs(),
        rewriter.getDenseI64ArrayAttr(shape), rewriter.getI64IntegerAttr(rowDims),
        fusion.getOps());
    // Moved before the fusion is replaced, so that its ops, yield included,
    // stay to be legalized inside the kernel (KernelBodyPatterns.cpp).
    rewriter.inlineRegionBefore(fusion.getBody(), kernel.getBody(), kernel.getBody().end());
    rewriter.replaceOp(fusion, kernel.getResults());
    return success();
  }
};

/// An mp.fusion of kind gemm (a GEMM, an optional bias add, an optional
/// activation) becomes one mpk.gemm with that epilogue.
struct GemmFusionToGemm : OpConversionPattern<graph::FusionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::FusionOp fusion, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (fusion.getKind() != graph::FusionKind::gemm)
      return failure();
    Block &body = fusion.getBody().front();
    graph::GemmOpInterface gemm;
    Value extraBias;
    StringRef epilogue = "none";
    for (Operation &op : body.without_terminator()) {
      auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(op);
      if (auto g = dyn_cast<graph::GemmOpInterface>(op))
        gemm = g;
      else if (gemm && elementwise && elementwise.getScalarFn() == graph::ScalarFn::Add)
        extraBias = op.getOperand(0) == gemm->getResult(0) ? op.getOperand(1) : op.getOperand(0);
      else if (std::optional<StringRef> e = gemmEpilogueOf(&op))
        epilogue = *e;
    }
    if (!gemm)
      return rewriter.notifyMatchFailure(fusion, "a GEMM fusion without a GEMM");
    // Casts inside a GEMM fusion only widen operands to the FP32 epilogue
    // (exact); the GEMM call reads the stored values themselves.
    auto outside = [&](Value v) -> Value {
      while (auto c = v.getDefiningOp<graph::CastOp>())
        v = c.getInput();
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &body ? adaptor.getInputs()[arg.getArgNumber()] : v;
    };
    graph::GemmOperands operands = gemm.getGemmOperands();
    if (extraBias)
      operands.bias = extraBias;
    Value step =
        buildGemm(rewriter, fusion.getLoc(), mapOperands(operands, outside), epilogue,
                  graph::computesInTf32(gemm), fusion.getOps(), fusion.getResult(0).getType());
    rewriter.replaceOp(fusion, step);
    return success();
  }
};

/// A GEMM outside any fusion becomes an mpk.gemm without epilogue (a
/// matmul no GEMM step expresses is a routine: conversion/GraphToKernel/LowerRoutines.cpp).
struct GemmToGemm : OpInterfaceConversionPattern<graph::GemmOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult matchAndRewrite(graph::GemmOpInterface gemm, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    Operation *op = gemm;
    if (!atFunctionLevel(op) || !gemm.fitsOneGemmCall())
      return failure();
    auto converted = [&](Value v) { return rewriter.getRemappedValue(v); };
    Value step = buildGemm(rewriter, op->getLoc(), mapOperands(gemm.getGemmOperands(), converted),
                           "none", graph::computesInTf32(op), namesOf(op->getContext(), {op}),
                           op->getResult(0).getType());
    rewriter.replaceOp(op, step);
    return success();
  }
};

/// A lone element-wise op becomes a kernel over its result.
struct ElementwiseToKernel : OpInterfaceConversionPattern<graph::ElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult matchAndRewrite(graph::ElementwiseOpInterface op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    if (!atFunctionLevel(op) || !isElementwiseKernelOp(op))
      return failure();
    wrapInKernel(op, operands, shapeOf(op->getResult(0)), 0, rewriter);
    return success();
  }
};

/// A lone reduction over trailing dims becomes a kernel over its input,
/// those dims its row.
struct RowReductionToKernel : OpInterfaceConversionPattern<graph::RowReductionOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult matchAndRewrite(graph::RowReductionOpInterface op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    int64_t rowDims = op.getRowReductionDims();
    if (!atFunctionLevel(op) || rowDims < 0)
      return failure();
    wrapInKernel(op, operands, shapeOf(op->getOperand(0)), rowDims, rewriter);
    return success();
  }
};

/// An amax reads every element of its input: a kernel over the input.
struct AmaxToKernel : OpConversionPattern<graph::AmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::AmaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!atFunctionLevel(op))
      return failure();
    SmallVector<Value> operands(adaptor.getOperands());
    wrapInKernel(op, operands, shapeOf(op.getInput()), 0, rewriter);
    return success();
  }
};

/// A reshape is the same bytes under another shape: an alias, no step. A
/// reshaped constant is a constant of the new shape (constants live in the
/// module's constant table, not in the arena an alias points into).
struct ReshapeToAlias : OpConversionPattern<graph::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto constant = adaptor.getInput().getDefiningOp<graph::ConstantOp>();
    if (auto value = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr) {
      auto reshaped = rewriter.create<graph::ConstantOp>(
          op.getLoc(), op.getType(), value.reshape(cast<ShapedType>(op.getType())));
      rewriter.replaceOp(op, reshaped.getResult());
      return success();
    }
    rewriter.replaceOpWithNewOp<kernel::AliasOp>(op, op.getType(), adaptor.getInput());
    return success();
  }
};

} // namespace

void configureKernelTarget(ConversionTarget &target, bool routinesLater) {
  target.addLegalDialect<kernel::KernelDialect, func::FuncDialect>();
  target.addDynamicallyLegalDialect<graph::GraphDialect>(
      [routinesLater](Operation *op) -> std::optional<bool> {
        if (isa<kernel::KernelOp>(op->getParentOp()))
          return kernel::isKernelInstruction(op);
        // In a fusion: lowered with it, or reported with it.
        if (!atFunctionLevel(op))
          return std::nullopt;
        if (op->hasTrait<OpTrait::ConstantLike>())
          return true;
        return routinesLater ? std::nullopt : std::optional<bool>(false);
      });
}

void populateStepLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<FusionToKernel, GemmFusionToGemm, GemmToGemm, ElementwiseToKernel, RowReductionToKernel, AmaxToKernel, ReshapeToAlias>(
      patterns.getContext());
}

void populateRoutineFallbackPatterns(RewritePatternSet &patterns) {
  populateRoutineLoweringPatterns(patterns);
}

//===----------------------------------------------------------------------===//
// --mp-lower-to-kernels
//===----------------------------------------------------------------------===//

namespace {

/// 1. Lower every op a step pattern takes, and legalize kernel bodies
///    (a partial conversion: the rest waits for step 2).
/// 2. What is left at function level runs as a backend routine; anything
///    else (an op in a kernel body no pattern decomposes, a fusion no
///    pattern lowers, an op of another dialect) fails to legalize, at its
///    location. Two conversions, because the driver orders patterns rooted
///    on an op and patterns for any op by unrelated ranks: the routine
///    pattern, which matches any mp op, cannot be ranked after the others.
struct LowerToKernelsPass : public impl::LowerToKernelsPassBase<LowerToKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *ctx = &getContext();
    ConversionTarget stepTarget(*ctx), target(*ctx);
    configureKernelTarget(stepTarget, /*routinesLater=*/true);
    configureKernelTarget(target);
    RewritePatternSet steps(ctx);
    populateStepLoweringPatterns(steps);
    populateKernelBodyPatterns(steps);
    if (failed(applyPartialConversion(func, stepTarget, std::move(steps))))
      return signalPassFailure();
    RewritePatternSet routines(ctx);
    populateRoutineFallbackPatterns(routines);
    if (failed(applyFullConversion(func, target, std::move(routines))))
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
