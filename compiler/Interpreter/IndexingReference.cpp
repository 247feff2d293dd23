//===- IndexingReference.cpp - gathers, scatter_nd, arg_max, topk, cumsum -===//
//
// The index-driven ops run the CPU backend's kernels (runtime/kernels/Indexing.h)
// on the interpreter's host tensors: floats as stored (already rounded to
// their dtype, so comparisons happen in it; double in the FP64 mode),
// integers as int64.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/kernels/Indexing.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {
namespace {

/// A host tensor of `kind` and `shape` with room for its elements (floats
/// as T).
template <typename T> HostTensor allocate(HostTensor::Kind kind, std::vector<int64_t> shape) {
  HostTensor t;
  t.kind = kind;
  t.shape = std::move(shape);
  int64_t n = cpu::numElements(t.shape);
  if (kind == HostTensor::Kind::Float)
    floatStorage<T>(t).resize(n);
  else if (kind == HostTensor::Kind::Int)
    t.ints.resize(n);
  else
    t.bools.resize(n);
  return t;
}

/// The storage of `t` (floats as T) as raw bytes and the size of one element.
template <typename T> const void *rawData(const HostTensor &t, size_t &elemSize) {
  switch (t.kind) {
  case HostTensor::Kind::Float:
    return elemSize = sizeof(T), floatStorage<T>(t).data();
  case HostTensor::Kind::Int:
    return elemSize = sizeof(int64_t), t.ints.data();
  case HostTensor::Kind::Bool:
    break;
  }
  return elemSize = sizeof(uint8_t), t.bools.data();
}
template <typename T> void *rawData(HostTensor &t, size_t &elemSize) {
  return const_cast<void *>(rawData<T>(static_cast<const HostTensor &>(t), elemSize));
}

/// The message of an index out of range (as the CPU backend words it).
std::string indexError(const cpu::BadIndex &bad) {
  return "index " + std::to_string(bad.value) + " (element " + std::to_string(bad.position) +
         " of the indices) is out of range for dim " + std::to_string(bad.dim) + " of size " +
         std::to_string(bad.size);
}

/// Runs a gather kernel `fn(data, out, elemSize) -> BadIndex` into the
/// output of `op`, failing with the index at fault.
template <typename T, typename Fn>
LogicalResult runGather(Operation *op, Value data, Value output, Evaluator &e, Fn &&fn) {
  const HostTensor &in = e.get(data);
  HostTensor out = allocate<T>(in.kind, shapeOf(output));
  size_t elemSize = 0;
  const void *src = rawData<T>(in, elemSize);
  cpu::BadIndex bad = fn(src, rawData<T>(out, elemSize), elemSize);
  if (!bad.ok())
    return e.fail(indexError(bad));
  e.set(output, std::move(out));
  return success();
}

/// Wraps int64 results to the range of a narrower integer element type (as
/// the CPU backend stores them).
void wrapIntegers(Type elementType, std::vector<int64_t> &values) {
  if (elementType.isInteger(32))
    for (int64_t &v : values)
      v = static_cast<int32_t>(v);
}

struct GatherElementsReference
    : ReferenceModel<GatherElementsReference, graph::GatherElementsOp> {
  template <typename T> static LogicalResult run(graph::GatherElementsOp op, Evaluator &e) {
    const HostTensor &idx = e.get(op.getIndices());
    std::vector<int64_t> ds = shapeOf(op.getData());
    return runGather<T>(op, op.getData(), op.getOutput(), e,
                     [&](const void *src, void *dst, size_t elemSize) {
                       return cpu::gatherElementsRaw(src, ds, idx.ints.data(), idx.shape,
                                                     op.getAxis(), dst, elemSize);
                     });
  }
};

struct GatherNdReference : ReferenceModel<GatherNdReference, graph::GatherNdOp> {
  template <typename T> static LogicalResult run(graph::GatherNdOp op, Evaluator &e) {
    const HostTensor &idx = e.get(op.getIndices());
    std::vector<int64_t> ds = shapeOf(op.getData());
    return runGather<T>(op, op.getData(), op.getOutput(), e,
                     [&](const void *src, void *dst, size_t elemSize) {
                       return cpu::gatherNdRaw(src, ds, idx.ints.data(), idx.shape,
                                               op.getBatchDims(), dst, elemSize);
                     });
  }
};

/// ArgMax (`isMax`) and ArgMin.
template <typename Derived, typename OpT, bool isMax>
struct ArgReduceReference : ReferenceModel<Derived, OpT> {
  template <typename T> static LogicalResult run(OpT op, Evaluator &e) {
    const HostTensor &in = e.get(op.getInput());
    HostTensor out = allocate<T>(HostTensor::Kind::Int, shapeOf(op.getOutput()));
    if (in.kind == HostTensor::Kind::Float)
      cpu::argReduce(floatStorage<T>(in).data(), in.shape, op.getAxis(), isMax,
                     op.getSelectLastIndex(), out.ints.data());
    else
      cpu::argReduce(in.ints.data(), in.shape, op.getAxis(), isMax, op.getSelectLastIndex(),
                     out.ints.data());
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};
struct ArgMaxReference : ArgReduceReference<ArgMaxReference, graph::ArgMaxOp, true> {};
struct ArgMinReference : ArgReduceReference<ArgMinReference, graph::ArgMinOp, false> {};

struct TopKReference : ReferenceModel<TopKReference, graph::TopKOp> {
  template <typename T> static LogicalResult run(graph::TopKOp op, Evaluator &e) {
    const HostTensor &in = e.get(op.getInput());
    HostTensor values = allocate<T>(in.kind, shapeOf(op.getValues()));
    HostTensor indices = allocate<T>(HostTensor::Kind::Int, shapeOf(op.getIndices()));
    if (in.kind == HostTensor::Kind::Float)
      cpu::topK(floatStorage<T>(in).data(), in.shape, op.getAxis(), op.getK(), op.getLargest(),
                floatStorage<T>(values).data(), indices.ints.data());
    else
      cpu::topK(in.ints.data(), in.shape, op.getAxis(), op.getK(), op.getLargest(),
                values.ints.data(), indices.ints.data());
    e.set(op.getValues(), std::move(values));
    e.set(op.getIndices(), std::move(indices));
    return success();
  }
};

struct CumSumReference : ReferenceModel<CumSumReference, graph::CumSumOp> {
  template <typename T> static LogicalResult run(graph::CumSumOp op, Evaluator &e) {
    const HostTensor &in = e.get(op.getInput());
    if (in.kind == HostTensor::Kind::Float) {
      std::vector<T> out = e.alloc<T>(op.getOutput());
      cpu::cumSum(floatStorage<T>(in).data(), in.shape, op.getAxis(), op.getExclusive(),
                  op.getReverse(), out.data());
      e.setFloat(op.getOutput(), std::move(out));
      return success();
    }
    HostTensor out = allocate<T>(HostTensor::Kind::Int, shapeOf(op.getOutput()));
    cpu::cumSum(in.ints.data(), in.shape, op.getAxis(), op.getExclusive(), op.getReverse(),
                out.ints.data());
    wrapIntegers(elementTypeOf(op.getOutput()), out.ints);
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

struct ScatterNdReference : ReferenceModel<ScatterNdReference, graph::ScatterNdOp> {
  template <typename T> static LogicalResult run(graph::ScatterNdOp op, Evaluator &e) {
    const HostTensor &data = e.get(op.getData()), &idx = e.get(op.getIndices());
    const HostTensor &updates = e.get(op.getUpdates());
    auto reduction = llvm::StringSwitch<cpu::ScatterReduction>(op.getReduction())
                         .Case("add", cpu::ScatterReduction::Add)
                         .Case("mul", cpu::ScatterReduction::Mul)
                         .Case("max", cpu::ScatterReduction::Max)
                         .Case("min", cpu::ScatterReduction::Min)
                         .Default(cpu::ScatterReduction::None);
    HostTensor out = allocate<T>(data.kind, data.shape);
    cpu::BadIndex bad =
        data.kind == HostTensor::Kind::Float
            ? cpu::scatterNd(floatStorage<T>(data).data(), data.shape, idx.ints.data(),
                             idx.shape, floatStorage<T>(updates).data(), reduction,
                             floatStorage<T>(out).data())
            : cpu::scatterNd(data.ints.data(), data.shape, idx.ints.data(), idx.shape,
                             updates.ints.data(), reduction, out.ints.data());
    if (!bad.ok())
      return e.fail(indexError(bad));
    if (out.kind == HostTensor::Kind::Float) {
      e.setFloat(op.getOutput(), std::move(floatStorage<T>(out))); // add/mul round (FP32)
      return success();
    }
    wrapIntegers(elementTypeOf(op.getOutput()), out.ints);
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

} // namespace

void attachIndexingReferenceModels(MLIRContext *ctx) {
  graph::GatherElementsOp::attachInterface<GatherElementsReference>(*ctx);
  graph::GatherNdOp::attachInterface<GatherNdReference>(*ctx);
  graph::ArgMaxOp::attachInterface<ArgMaxReference>(*ctx);
  graph::ArgMinOp::attachInterface<ArgMinReference>(*ctx);
  graph::TopKOp::attachInterface<TopKReference>(*ctx);
  graph::CumSumOp::attachInterface<CumSumReference>(*ctx);
  graph::ScatterNdOp::attachInterface<ScatterNdReference>(*ctx);
}

} // namespace mixprec::compiler
