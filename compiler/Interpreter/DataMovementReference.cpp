//===- DataMovementReference.cpp - reshape, transpose, slice, concat, gather -===//
//
// Data movement copies stored values without arithmetic, so it works on
// every element kind (float, integer, bool) and never rounds; floats are
// held as T (float, or double in the FP64 mode).
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/kernels/Kernels.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {
namespace {

/// Applies a data-movement kernel `fn(in, out)` to whichever storage `in`
/// uses (floats as T), into a tensor of shape `outShape`.
template <typename T, typename Fn>
HostTensor moveData(const HostTensor &in, std::vector<int64_t> outShape, Fn &&fn) {
  HostTensor out;
  out.kind = in.kind;
  out.shape = std::move(outShape);
  int64_t n = cpu::numElements(out.shape);
  switch (in.kind) {
  case HostTensor::Kind::Float:
    floatStorage<T>(out).resize(n);
    fn(floatStorage<T>(in).data(), floatStorage<T>(out).data());
    break;
  case HostTensor::Kind::Int:
    out.ints.resize(n);
    fn(in.ints.data(), out.ints.data());
    break;
  case HostTensor::Kind::Bool:
    out.bools.resize(n);
    fn(in.bools.data(), out.bools.data());
    break;
  }
  return out;
}

struct ReshapeReference : ReferenceModel<ReshapeReference, graph::ReshapeOp> {
  /// Row-major order is kept: the same values under another shape.
  template <typename T> static LogicalResult run(graph::ReshapeOp op, Evaluator &e) {
    HostTensor r = e.get(op.getInput());
    r.shape = shapeOf(op.getOutput());
    e.set(op.getOutput(), std::move(r));
    return success();
  }
};

struct TransposeReference : ReferenceModel<TransposeReference, graph::TransposeOp> {
  template <typename T> static LogicalResult run(graph::TransposeOp op, Evaluator &e) {
    std::vector<int64_t> perm(op.getPerm().begin(), op.getPerm().end());
    std::vector<int64_t> inShape = shapeOf(op.getInput());
    e.set(op.getOutput(), moveData<T>(e.get(op.getInput()), shapeOf(op.getOutput()),
                                      [&](const auto *in, auto *out) {
                                        cpu::transpose(in, inShape, perm, out);
                                      }));
    return success();
  }
};

struct SliceReference : ReferenceModel<SliceReference, graph::SliceOp> {
  template <typename T> static LogicalResult run(graph::SliceOp op, Evaluator &e) {
    std::vector<int64_t> starts(op.getStarts().begin(), op.getStarts().end());
    std::vector<int64_t> steps(op.getSteps().begin(), op.getSteps().end());
    std::vector<int64_t> inShape = shapeOf(op.getInput()), outShape = shapeOf(op.getOutput());
    e.set(op.getOutput(),
          moveData<T>(e.get(op.getInput()), outShape, [&](const auto *in, auto *out) {
            cpu::slice(in, inShape, starts, steps, outShape, out);
          }));
    return success();
  }
};

struct ConcatReference : ReferenceModel<ConcatReference, graph::ConcatOp> {
  template <typename T> static LogicalResult run(graph::ConcatOp op, Evaluator &e) {
    HostTensor out;
    out.kind = e.get(op.getInputs().front()).kind;
    out.shape = shapeOf(op.getOutput());
    std::vector<cpu::Shape> shapes;
    for (Value v : op.getInputs())
      shapes.push_back(shapeOf(v));
    int64_t n = cpu::numElements(out.shape);
    // Joins the inputs' storage of one kind (`member`) into `dest`.
    auto join = [&](auto member, auto &dest) {
      using Elem = typename std::decay_t<decltype(dest)>::value_type;
      std::vector<const Elem *> ins;
      for (Value v : op.getInputs())
        ins.push_back((e.get(v).*member).data());
      dest.resize(n);
      cpu::concat(ins, shapes, op.getAxis(), dest.data());
    };
    switch (out.kind) {
    case HostTensor::Kind::Float:
      if constexpr (std::is_same_v<T, float>)
        join(&HostTensor::floats, out.floats);
      else
        join(&HostTensor::doubles, out.doubles);
      break;
    case HostTensor::Kind::Int:
      join(&HostTensor::ints, out.ints);
      break;
    case HostTensor::Kind::Bool:
      join(&HostTensor::bools, out.bools);
      break;
    }
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

struct GatherReference : ReferenceModel<GatherReference, graph::GatherOp> {
  /// An index out of range is a run-time error (negative ones count from the end).
  template <typename T> static LogicalResult run(graph::GatherOp op, Evaluator &e) {
    const HostTensor &indices = e.get(op.getIndices());
    std::vector<int64_t> dataShape = shapeOf(op.getData());
    bool inRange = true;
    HostTensor out =
        moveData<T>(e.get(op.getData()), shapeOf(op.getOutput()), [&](const auto *in, auto *out) {
          inRange = cpu::gather(in, dataShape, indices.ints.data(), indices.shape, op.getAxis(),
                                out);
        });
    if (!inRange)
      return e.fail("an index is out of range for dimension " + std::to_string(op.getAxis()) +
                    " of size " + std::to_string(dataShape[op.getAxis()]));
    e.set(op.getOutput(), std::move(out));
    return success();
  }
};

} // namespace

void attachDataMovementReferenceModels(MLIRContext *ctx) {
  graph::ReshapeOp::attachInterface<ReshapeReference>(*ctx);
  graph::TransposeOp::attachInterface<TransposeReference>(*ctx);
  graph::SliceOp::attachInterface<SliceReference>(*ctx);
  graph::ConcatOp::attachInterface<ConcatReference>(*ctx);
  graph::GatherOp::attachInterface<GatherReference>(*ctx);
}

} // namespace mixprec::compiler
