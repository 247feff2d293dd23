//===- LowerRoutines.cpp - mp ops to backend routines ----------------------===//
//
// One conversion pattern per op a routine runs, made of the routine and the
// options builder of its family (dialects/Kernel/IR/KernelAttrs.td): the
// builder knows the op's attributes; RoutinePattern leaves what a kernel or
// a GEMM step runs (row reductions, GEMM-step matmuls) to the other
// lowering patterns and replaces the op by an mpk.call of its routine.
//
//===----------------------------------------------------------------------===//
#include "conversion/GraphToKernel/LowerRoutines.h"

#include "conversion/GraphToKernel/KernelUtils.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace mixprec::passes {
namespace {

using kernel::Routine;

/// Whether a routine runs `op`: a reduction unless it is a row reduction
/// (a kernel), a GEMM op unless one GEMM step expresses it; any other op
/// with a routine pattern always.
bool lowersToRoutine(Operation *op) {
  if (isReductionOp(op))
    return rowReductionDims(op) < 0;
  if (isGemmOp(op))
    return !cast<graph::GemmOpInterface>(op).fitsOneGemmCall();
  return true;
}

/// Replaces an `OpTy` that a routine runs by an mpk.call of `routine` with
/// the options its family's builder makes.
template <typename OpTy> struct RoutinePattern : OpConversionPattern<OpTy> {
  using BuildOptions = Attribute (*)(OpTy);

  RoutinePattern(MLIRContext *ctx, Routine routine, BuildOptions buildOptions)
      : OpConversionPattern<OpTy>(ctx), routine(routine), buildOptions(buildOptions) {}

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!lowersToRoutine(op))
      return rewriter.notifyMatchFailure(op, "a kernel or a GEMM step runs it");
    auto options = cast<kernel::RoutineOptionsInterface>(buildOptions(op));
    rewriter.replaceOpWithNewOp<kernel::CallOp>(op, op->getResultTypes(), routine,
                                                adaptor.getOperands(), options,
                                                namesOf(op->getContext(), {op}));
    return success();
  }

  Routine routine;
  BuildOptions buildOptions;
};

/// Adds the pattern that lowers `OpTy` to `routine` (OpTy is what
/// `buildOptions` takes).
template <typename OpTy>
void addRoutine(RewritePatternSet &patterns, Routine routine, Attribute (*buildOptions)(OpTy)) {
  patterns.add<RoutinePattern<OpTy>>(patterns.getContext(), routine, buildOptions);
}

//===----------------------------------------------------------------------===//
// The options of each family
//===----------------------------------------------------------------------===//

/// conv2d: its window, groups, and TF32 from the precision plan.
Attribute conv2dOptions(graph::Conv2dOp op) {
  return kernel::Conv2dOptionsAttr::get(op.getContext(), op.getStrides(), op.getPads(),
                                        op.getDilations(), op.getGroups(), graph::computesInTf32(op));
}

/// max_pool2d: dilations 1 unless given; no padding count.
Attribute maxPool2dOptions(graph::MaxPool2dOp op) {
  SmallVector<int64_t> dilations{1, 1};
  if (std::optional<ArrayRef<int64_t>> given = op.getDilations())
    dilations.assign(given->begin(), given->end());
  return kernel::Pool2dOptionsAttr::get(op.getContext(), op.getKernelShape(), op.getStrides(),
                                        op.getPads(), dilations, op.getCeilMode(),
                                        /*countIncludePad=*/false);
}

/// avg_pool2d: no dilations (ONNX AveragePool before opset 19 has none).
Attribute avgPool2dOptions(graph::AvgPool2dOp op) {
  return kernel::Pool2dOptionsAttr::get(op.getContext(), op.getKernelShape(), op.getStrides(),
                                        op.getPads(), {1, 1}, op.getCeilMode(),
                                        op.getCountIncludePad());
}

/// conv: its N-D window, groups, and TF32 from the precision plan.
Attribute convOptions(graph::ConvOp op) {
  return kernel::ConvOptionsAttr::get(op.getContext(), op.getStrides(), op.getPads(),
                                      op.getDilations(), op.getGroups(),
                                      graph::computesInTf32(op), {});
}

/// conv_transpose: as conv, with the output padding.
Attribute convTransposeOptions(graph::ConvTransposeOp op) {
  return kernel::ConvOptionsAttr::get(op.getContext(), op.getStrides(), op.getPads(),
                                      op.getDilations(), op.getGroups(),
                                      graph::computesInTf32(op), op.getOutputPadding());
}

/// max_pool, avg_pool, max_pool_indices: the N-D window; the padding count
/// and the storage order where they apply.
template <typename OpTy> Attribute poolOptions(OpTy op) {
  bool countIncludePad = false;
  int64_t storageOrder = 0;
  if constexpr (std::is_same_v<OpTy, graph::AvgPoolOp>)
    countIncludePad = op.getCountIncludePad();
  if constexpr (std::is_same_v<OpTy, graph::MaxPoolIndicesOp>)
    storageOrder = op.getStorageOrder();
  return kernel::PoolOptionsAttr::get(op.getContext(), op.getKernelShape(), op.getStrides(),
                                      op.getPads(), op.getDilations(), op.getCeilMode(),
                                      countIncludePad, storageOrder);
}

Attribute transposeOptions(graph::TransposeOp op) {
  return kernel::TransposeOptionsAttr::get(op.getContext(), op.getPerm());
}

Attribute sliceOptions(graph::SliceOp op) {
  return kernel::SliceOptionsAttr::get(op.getContext(), op.getStarts(), op.getSteps());
}

/// concat, gather, softmax, log_softmax: one axis.
template <typename OpTy> Attribute axisOptions(OpTy op) {
  return kernel::AxisOptionsAttr::get(op.getContext(), op.getAxis());
}

/// layer_norm, rms_norm: the first normalized axis and epsilon.
template <typename OpTy> Attribute normOptions(OpTy op) {
  return kernel::NormOptionsAttr::get(op.getContext(), op.getAxis(), op.getEpsilon());
}

Attribute batchNormOptions(graph::BatchNormOp op) {
  return kernel::BatchNormOptionsAttr::get(op.getContext(), op.getEpsilon());
}

/// reduce_sum, reduce_mean, reduce_max over leading or scattered axes.
template <typename OpTy> Attribute reduceOptions(OpTy op) {
  return kernel::ReduceOptionsAttr::get(op.getContext(), op.getAxes(), op.getKeepdims());
}

Attribute fp8ScaleOptions(graph::Fp8ScaleOp op) {
  return kernel::Fp8ScaleOptionsAttr::get(op.getContext(), op.getMargin(), op.getFormat());
}

/// block_scale and block_quantize: the block, recipe, margin and format.
Attribute blockScaleOptions(graph::BlockScaleOp op) {
  return kernel::BlockScaleOptionsAttr::get(op.getContext(), op.getBlock()[0], op.getBlock()[1],
                                            op.getRecipe() == "mx" ? 1 : 0,
                                            static_cast<int64_t>(op.getMargin()), op.getFormat());
}
Attribute blockQuantizeOptions(graph::BlockQuantizeOp op) {
  return kernel::BlockScaleOptionsAttr::get(op.getContext(), op.getBlock()[0], op.getBlock()[1], 0,
                                            0, op.getOutput().getType().getElementType());
}

/// all_reduce: its reduction (0 sum, 1 mean, 2 max).
Attribute allReduceOptions(graph::AllReduceOp op) {
  int64_t reduction = op.getReduction() == "sum" ? 0 : op.getReduction() == "mean" ? 1 : 2;
  return kernel::AllReduceOptionsAttr::get(op.getContext(), reduction);
}

/// rank_slice and all_gather: the ranks the step was compiled for.
template <typename Op> Attribute shardOptions(Op op) {
  return kernel::ShardOptionsAttr::get(op.getContext(), op.getWorld());
}

/// A matmul no GEMM step expresses (vector operands, partially broadcast
/// batches): numpy.matmul, TF32 from the precision plan.
Attribute matmulOptions(graph::MatmulOp op) {
  return kernel::MatmulOptionsAttr::get(op.getContext(), graph::computesInTf32(op));
}

Attribute gatherNdOptions(graph::GatherNdOp op) {
  return kernel::GatherNdOptionsAttr::get(op.getContext(), op.getBatchDims());
}

/// arg_max, arg_min: the axis, keepdims, which of equal extremes.
template <typename OpTy> Attribute argReduceOptions(OpTy op) {
  return kernel::ArgReduceOptionsAttr::get(op.getContext(), op.getAxis(), op.getKeepdims(),
                                           op.getSelectLastIndex());
}

/// scatter_nd: the reduction's number in the schema (none, add, mul, max, min).
Attribute scatterNdOptions(graph::ScatterNdOp op) {
  int64_t reduction = llvm::StringSwitch<int64_t>(op.getReduction())
                          .Case("add", 1)
                          .Case("mul", 2)
                          .Case("max", 3)
                          .Case("min", 4)
                          .Default(0);
  return kernel::ScatterNdOptionsAttr::get(op.getContext(), reduction);
}

Attribute cumSumOptions(graph::CumSumOp op) {
  return kernel::CumSumOptionsAttr::get(op.getContext(), op.getAxis(), op.getExclusive(),
                                        op.getReverse());
}

/// mp.topk has two results and a routine writes one, so each result
/// becomes one topk call (the values, then the indices).
struct TopKPattern : OpConversionPattern<graph::TopKOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::TopKOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> replacements;
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      auto options = kernel::TopKOptionsAttr::get(op.getContext(), op.getAxis(), op.getK(),
                                                  op.getLargest(), /*indices=*/i == 1);
      auto call = rewriter.create<kernel::CallOp>(
          op.getLoc(), TypeRange{result.getType()}, Routine::TopK, adaptor.getOperands(),
          cast<kernel::RoutineOptionsInterface>(options), namesOf(op->getContext(), {op}));
      replacements.push_back(call.getResult(0));
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

/// mp.attention and mp.attention_grad have several results and a routine
/// writes one: one call per result that is read, each recomputing what it
/// needs (the forward's output always; its log-sum-exp when training reads
/// it; each of dq, dk, dv the step reads).
template <typename OpT> struct AttentionPattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  static constexpr bool kGrad = std::is_same_v<OpT, graph::AttentionGradOp>;

  LogicalResult matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> replacements;
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      if (result.use_empty() && (kGrad || i == 1)) {
        replacements.push_back(nullptr);
        continue;
      }
      auto options = kernel::AttentionOptionsAttr::get(
          op.getContext(), APFloat(static_cast<float>(op.getScale().convertToDouble())),
          op.getCausal(), /*lse=*/!kGrad && i == 1,
          /*grad=*/kGrad ? static_cast<int64_t>(i) : 0);
      auto call = rewriter.create<kernel::CallOp>(
          op.getLoc(), TypeRange{result.getType()},
          kGrad ? Routine::AttentionGrad : Routine::Attention, adaptor.getOperands(),
          cast<kernel::RoutineOptionsInterface>(options), namesOf(op->getContext(), {op}));
      replacements.push_back(call.getResult(0));
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

/// An element-wise op on integers (graph::computesOnIntegers) becomes an
/// int_elementwise call: exact in int64, where a kernel's FP32 registers
/// would round past 2^24.
struct IntElementwisePattern : OpInterfaceConversionPattern<graph::ElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult matchAndRewrite(graph::ElementwiseOpInterface op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    if (!graph::computesOnIntegers(op))
      return rewriter.notifyMatchFailure(op, "not an integer op");
    int64_t intOp = graph::intElementwiseOpOf(op);
    if (intOp < 0)
      return op->emitOpError() << "has no integer form (int_elementwise computes add, sub, "
                                  "mul, div, mod, fmod, pow, max, min, neg, abs, select, the "
                                  "comparisons and casts)";
    auto options = cast<kernel::RoutineOptionsInterface>(
        kernel::IntElementwiseOptionsAttr::get(op->getContext(), intOp));
    rewriter.replaceOpWithNewOp<kernel::CallOp>(op, op->getResultTypes(),
                                                Routine::IntElementwise, operands, options,
                                                namesOf(op->getContext(), {op}));
    return success();
  }
};

} // namespace

void populateRoutineLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<IntElementwisePattern>(patterns.getContext());
  using namespace graph;
  addRoutine(patterns, Routine::Conv2d, conv2dOptions);
  addRoutine(patterns, Routine::MaxPool2d, maxPool2dOptions);
  addRoutine(patterns, Routine::AvgPool2d, avgPool2dOptions);
  addRoutine(patterns, Routine::Conv, convOptions);
  addRoutine(patterns, Routine::ConvTranspose, convTransposeOptions);
  addRoutine(patterns, Routine::MaxPool, poolOptions<MaxPoolOp>);
  addRoutine(patterns, Routine::AvgPool, poolOptions<AvgPoolOp>);
  addRoutine(patterns, Routine::MaxPoolIndices, poolOptions<MaxPoolIndicesOp>);
  addRoutine(patterns, Routine::Transpose, transposeOptions);
  addRoutine(patterns, Routine::Slice, sliceOptions);
  addRoutine(patterns, Routine::Concat, axisOptions<ConcatOp>);
  addRoutine(patterns, Routine::Gather, axisOptions<GatherOp>);
  addRoutine(patterns, Routine::Softmax, axisOptions<SoftmaxOp>);
  addRoutine(patterns, Routine::LogSoftmax, axisOptions<LogSoftmaxOp>);
  addRoutine(patterns, Routine::LayerNorm, normOptions<LayerNormOp>);
  addRoutine(patterns, Routine::RmsNorm, normOptions<RmsNormOp>);
  addRoutine(patterns, Routine::BatchNorm, batchNormOptions);
  addRoutine(patterns, Routine::ReduceSum, reduceOptions<ReduceSumOp>);
  addRoutine(patterns, Routine::ReduceMean, reduceOptions<ReduceMeanOp>);
  addRoutine(patterns, Routine::ReduceMax, reduceOptions<ReduceMaxOp>);
  addRoutine(patterns, Routine::Fp8Scale, fp8ScaleOptions);
  addRoutine(patterns, Routine::BlockScale, blockScaleOptions);
  addRoutine(patterns, Routine::BlockQuantize, blockQuantizeOptions);
  addRoutine(patterns, Routine::Matmul, matmulOptions);
  addRoutine(patterns, Routine::GatherElements, axisOptions<GatherElementsOp>);
  addRoutine(patterns, Routine::GatherNd, gatherNdOptions);
  addRoutine(patterns, Routine::ArgMax, argReduceOptions<ArgMaxOp>);
  addRoutine(patterns, Routine::ArgMin, argReduceOptions<ArgMinOp>);
  addRoutine(patterns, Routine::CumSum, cumSumOptions);
  addRoutine(patterns, Routine::ReduceProd, reduceOptions<ReduceProdOp>);
  addRoutine(patterns, Routine::ScatterNd, scatterNdOptions);
  addRoutine(patterns, Routine::AllReduce, allReduceOptions);
  addRoutine(patterns, Routine::RankSlice, shardOptions<graph::RankSliceOp>);
  addRoutine(patterns, Routine::AllGather, shardOptions<graph::AllGatherOp>);
  patterns.add<TopKPattern>(patterns.getContext());
  patterns.add<AttentionPattern<graph::AttentionOp>, AttentionPattern<graph::AttentionGradOp>>(
      patterns.getContext());
}

} // namespace mixprec::passes
