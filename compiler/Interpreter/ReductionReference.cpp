//===- ReductionReference.cpp - softmax, norms, reductions and pooling ----===//
//
// The ops that combine many input elements into one output element. Each
// computes in FP32 (reductions accumulate in double) and rounds its result
// once to the result dtype.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/cpu/Kernels.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {
namespace {

/// An optional parameter operand's values, or null.
const float *optionalFloats(Value v, Evaluator &e) { return v ? e.floats(v) : nullptr; }

/// mp.softmax and mp.log_softmax: `Kernel` over the op's axis.
template <typename OpT, void (*Kernel)(const float *, const cpu::Shape &, int64_t, float *)>
struct SoftmaxLikeReference : ReferenceModel<SoftmaxLikeReference<OpT, Kernel>, OpT> {
  static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    Kernel(e.floats(op.getInput()), shapeOf(op.getInput()), op.getAxis(), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct LayerNormReference : ReferenceModel<LayerNormReference, graph::LayerNormOp> {
  static LogicalResult run(graph::LayerNormOp op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    std::vector<int64_t> in = shapeOf(op.getInput());
    // Without a scale, one per normalized element (the product of the dims
    // from axis on; not a quotient, which an empty leading dim makes 0/0).
    std::vector<float> ones;
    if (!op.getScale())
      ones.assign(cpu::numElements(std::vector<int64_t>(in.begin() + op.getAxis(), in.end())),
                  1.0f);
    const float *scale = op.getScale() ? e.floats(op.getScale()) : ones.data();
    cpu::layerNorm(e.floats(op.getInput()), in, op.getAxis(), scale,
                   optionalFloats(op.getBias(), e), op.getEpsilon().convertToFloat(), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct RmsNormReference : ReferenceModel<RmsNormReference, graph::RmsNormOp> {
  static LogicalResult run(graph::RmsNormOp op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    cpu::rmsNorm(e.floats(op.getInput()), shapeOf(op.getInput()), op.getAxis(),
                 optionalFloats(op.getScale(), e), op.getEpsilon().convertToFloat(), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct BatchNormReference : ReferenceModel<BatchNormReference, graph::BatchNormOp> {
  static LogicalResult run(graph::BatchNormOp op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    cpu::batchNormInference(e.floats(op.getInput()), shapeOf(op.getInput()),
                            e.floats(op.getScale()), e.floats(op.getBias()),
                            e.floats(op.getMean()), e.floats(op.getVariance()),
                            op.getEpsilon().convertToFloat(), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

/// mp.reduce_sum, mp.reduce_mean, mp.reduce_max and mp.reduce_prod:
/// cpu::reduce with `Kind`.
template <typename OpT, cpu::ReduceOp Kind>
struct ReduceReference : ReferenceModel<ReduceReference<OpT, Kind>, OpT> {
  static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    cpu::reduce(Kind, e.floats(op.getInput()), shapeOf(op.getInput()),
                std::vector<int64_t>(op.getAxes().begin(), op.getAxes().end()), op.getKeepdims(),
                r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }

  /// cpu::reduce accumulates each output element in a double.
  uint64_t getScratchBytes(Operation *op) const {
    return mulBytes(hostBytesOf(op->getResult(0).getType()), 2);
  }
};

struct MaxPool2dReference : ReferenceModel<MaxPool2dReference, graph::MaxPool2dOp> {
  static LogicalResult run(graph::MaxPool2dOp op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    std::array<int64_t, 2> dilations{1, 1};
    if (auto d = op.getDilations())
      dilations = pairOf(*d);
    cpu::maxPool2d(e.floats(op.getInput()), shapeOf(op.getInput()), pairOf(op.getKernelShape()),
                   pairOf(op.getStrides()), quadOf(op.getPads()), dilations, r.data(),
                   shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct AvgPool2dReference : ReferenceModel<AvgPool2dReference, graph::AvgPool2dOp> {
  static LogicalResult run(graph::AvgPool2dOp op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    cpu::avgPool2d(e.floats(op.getInput()), shapeOf(op.getInput()), pairOf(op.getKernelShape()),
                   pairOf(op.getStrides()), quadOf(op.getPads()), op.getCountIncludePad(),
                   r.data(), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

/// mp.max_pool and mp.avg_pool: the N-D kernels.
template <typename Derived, typename OpT>
struct PoolNdReference : ReferenceModel<Derived, OpT> {
  static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<float> r = e.allocFloats(op.getOutput());
    runtime::cpu::Window win =
        windowOf(op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations());
    if constexpr (std::is_same_v<OpT, graph::AvgPoolOp>)
      cpu::avgPool(e.floats(op.getInput()), shapeOf(op.getInput()), win,
                   op.getCountIncludePad(), r.data(), shapeOf(op.getOutput()));
    else
      cpu::maxPool(e.floats(op.getInput()), shapeOf(op.getInput()), win, r.data(),
                   shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};
struct MaxPoolReference : PoolNdReference<MaxPoolReference, graph::MaxPoolOp> {};
struct AvgPoolReference : PoolNdReference<AvgPoolReference, graph::AvgPoolOp> {};

/// mp.max_pool_indices: max_pool's indices (its values are dropped).
struct MaxPoolIndicesReference
    : ReferenceModel<MaxPoolIndicesReference, graph::MaxPoolIndicesOp> {
  static LogicalResult run(graph::MaxPoolIndicesOp op, Evaluator &e) {
    HostTensor out;
    out.kind = HostTensor::Kind::Int;
    out.shape = shapeOf(op.getOutput());
    out.ints.resize(cpu::numElements(out.shape));
    std::vector<float> values(out.ints.size());
    cpu::maxPool(e.floats(op.getInput()), shapeOf(op.getInput()),
                 windowOf(op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations()),
                 values.data(), out.shape, out.ints.data(), op.getStorageOrder() == 1);
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

} // namespace

void attachReductionReferenceModels(MLIRContext *ctx) {
  graph::SoftmaxOp::attachInterface<SoftmaxLikeReference<graph::SoftmaxOp, cpu::softmax>>(*ctx);
  graph::LogSoftmaxOp::attachInterface<
      SoftmaxLikeReference<graph::LogSoftmaxOp, cpu::logSoftmax>>(*ctx);
  graph::LayerNormOp::attachInterface<LayerNormReference>(*ctx);
  graph::RmsNormOp::attachInterface<RmsNormReference>(*ctx);
  graph::BatchNormOp::attachInterface<BatchNormReference>(*ctx);
  graph::ReduceSumOp::attachInterface<ReduceReference<graph::ReduceSumOp, cpu::ReduceOp::Sum>>(
      *ctx);
  graph::ReduceMeanOp::attachInterface<
      ReduceReference<graph::ReduceMeanOp, cpu::ReduceOp::Mean>>(*ctx);
  graph::ReduceProdOp::attachInterface<
      ReduceReference<graph::ReduceProdOp, cpu::ReduceOp::Prod>>(*ctx);
  graph::ReduceMaxOp::attachInterface<ReduceReference<graph::ReduceMaxOp, cpu::ReduceOp::Max>>(
      *ctx);
  graph::MaxPool2dOp::attachInterface<MaxPool2dReference>(*ctx);
  graph::AvgPool2dOp::attachInterface<AvgPool2dReference>(*ctx);
  graph::MaxPoolOp::attachInterface<MaxPoolReference>(*ctx);
  graph::AvgPoolOp::attachInterface<AvgPoolReference>(*ctx);
  graph::MaxPoolIndicesOp::attachInterface<MaxPoolIndicesReference>(*ctx);
}

} // namespace mixprec::compiler
