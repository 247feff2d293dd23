//===- ReductionReference.cpp - softmax, norms, reductions and pooling ----===//
//
// The ops that combine many input elements into one output element. Each
// computes in FP32 (reductions accumulate in double) and rounds its result
// once to the result dtype; in the FP64 mode (T = double) each computes in
// double and keeps it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/kernels/Kernels.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {
namespace {

/// An optional parameter operand's values, or null.
template <typename T> const T *optionalValues(Value v, Evaluator &e) {
  return v ? e.values<T>(v) : nullptr;
}

/// mp.softmax and mp.log_softmax (`log`): cpu::softmax or cpu::logSoftmax
/// over the op's axis.
template <typename OpT, bool log>
struct SoftmaxLikeReference : ReferenceModel<SoftmaxLikeReference<OpT, log>, OpT> {
  template <typename T> static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    if constexpr (log)
      cpu::logSoftmax(e.values<T>(op.getInput()), shapeOf(op.getInput()), op.getAxis(),
                      r.data());
    else
      cpu::softmax(e.values<T>(op.getInput()), shapeOf(op.getInput()), op.getAxis(), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct LayerNormReference : ReferenceModel<LayerNormReference, graph::LayerNormOp> {
  template <typename T> static LogicalResult run(graph::LayerNormOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    std::vector<int64_t> in = shapeOf(op.getInput());
    // Without a scale, one per normalized element (the product of the dims
    // from axis on; not a quotient, which an empty leading dim makes 0/0).
    std::vector<T> ones;
    if (!op.getScale())
      ones.assign(cpu::numElements(std::vector<int64_t>(in.begin() + op.getAxis(), in.end())),
                  T(1));
    const T *scale = op.getScale() ? e.values<T>(op.getScale()) : ones.data();
    cpu::layerNorm(e.values<T>(op.getInput()), in, op.getAxis(), scale,
                   optionalValues<T>(op.getBias(), e), floatAttrAs<T>(op.getEpsilon()), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct RmsNormReference : ReferenceModel<RmsNormReference, graph::RmsNormOp> {
  template <typename T> static LogicalResult run(graph::RmsNormOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    cpu::rmsNorm(e.values<T>(op.getInput()), shapeOf(op.getInput()), op.getAxis(),
                 optionalValues<T>(op.getScale(), e), floatAttrAs<T>(op.getEpsilon()), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct BatchNormReference : ReferenceModel<BatchNormReference, graph::BatchNormOp> {
  template <typename T> static LogicalResult run(graph::BatchNormOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    cpu::batchNormInference(e.values<T>(op.getInput()), shapeOf(op.getInput()),
                            e.values<T>(op.getScale()), e.values<T>(op.getBias()),
                            e.values<T>(op.getMean()), e.values<T>(op.getVariance()),
                            floatAttrAs<T>(op.getEpsilon()), r.data());
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

/// mp.reduce_sum, mp.reduce_mean, mp.reduce_max and mp.reduce_prod:
/// cpu::reduce with `Kind`.
template <typename OpT, cpu::ReduceOp Kind>
struct ReduceReference : ReferenceModel<ReduceReference<OpT, Kind>, OpT> {
  template <typename T> static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    cpu::reduce(Kind, e.values<T>(op.getInput()), shapeOf(op.getInput()),
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
  template <typename T> static LogicalResult run(graph::MaxPool2dOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    std::array<int64_t, 2> dilations{1, 1};
    if (auto d = op.getDilations())
      dilations = pairOf(*d);
    cpu::maxPool2d(e.values<T>(op.getInput()), shapeOf(op.getInput()), pairOf(op.getKernelShape()),
                   pairOf(op.getStrides()), quadOf(op.getPads()), dilations, r.data(),
                   shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct AvgPool2dReference : ReferenceModel<AvgPool2dReference, graph::AvgPool2dOp> {
  template <typename T> static LogicalResult run(graph::AvgPool2dOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    cpu::avgPool2d(e.values<T>(op.getInput()), shapeOf(op.getInput()), pairOf(op.getKernelShape()),
                   pairOf(op.getStrides()), quadOf(op.getPads()), op.getCountIncludePad(),
                   r.data(), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

/// mp.max_pool and mp.avg_pool: the N-D kernels.
template <typename Derived, typename OpT>
struct PoolNdReference : ReferenceModel<Derived, OpT> {
  template <typename T> static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    runtime::cpu::Window win =
        windowOf(op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations());
    if constexpr (std::is_same_v<OpT, graph::AvgPoolOp>)
      cpu::avgPool(e.values<T>(op.getInput()), shapeOf(op.getInput()), win,
                   op.getCountIncludePad(), r.data(), shapeOf(op.getOutput()));
    else
      cpu::maxPool(e.values<T>(op.getInput()), shapeOf(op.getInput()), win, r.data(),
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
  template <typename T> static LogicalResult run(graph::MaxPoolIndicesOp op, Evaluator &e) {
    HostTensor out;
    out.kind = HostTensor::Kind::Int;
    out.shape = shapeOf(op.getOutput());
    out.ints.resize(cpu::numElements(out.shape));
    std::vector<T> values(out.ints.size());
    cpu::maxPool(e.values<T>(op.getInput()), shapeOf(op.getInput()),
                 windowOf(op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations()),
                 values.data(), out.shape, out.ints.data(), op.getStorageOrder() == 1);
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

} // namespace

void attachReductionReferenceModels(MLIRContext *ctx) {
  graph::SoftmaxOp::attachInterface<SoftmaxLikeReference<graph::SoftmaxOp, false>>(*ctx);
  graph::LogSoftmaxOp::attachInterface<SoftmaxLikeReference<graph::LogSoftmaxOp, true>>(*ctx);
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
