//===- CpuConvFusion.cpp - kernels a oneDNN convolution computes ----------===//
//
// A convolution's output is often read once, by the very next step: a
// kernel computing relu(conv) or relu(conv + residual) (every ResNet
// block). The CPU backend then computes that kernel in the convolution's
// step (CpuRoutineStep.cpp): oneDNN adds the residual as the result
// leaves its registers (the sum post-op, CpuDnnlConv.cpp), the ReLU runs
// over the output in place (cpu::unary, the function the kernel's Relu
// calls) and the kernel step is skipped: one pass over the tensor where
// there were three, and the same bits by construction (the same FP32
// roundings in the same order). Only where that holds: FP32 tensors; the
// kernel exactly Load, [Load, Add,] Relu, Store over contiguous elements
// of the convolution output's shape; that output read by nothing else, its
// bytes by no other tensor (an alias) before they are overwritten, and no
// module output or state. (Where the kernel's output shares bytes with the
// convolution's operands, the arena planner's reuse of a dead input, and
// oneDNN would write it while reading them, the step writes a buffer and
// copies.) MIXPREC_CPU_CONV_FUSION=0 turns it off (tests compare the two).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include <cstdlib>
#include <cstring>

namespace mixprec::runtime {

using schema::DType;
using schema::OpCode;

namespace {

/// The tensors a step reads and writes.
struct StepTensors {
  std::vector<int32_t> reads, writes;
};

std::vector<StepTensors> tensorsOfSteps(const LoadedModule &module,
                                        const std::vector<KernelPlan> &kernels) {
  const auto *steps = module.root().steps();
  std::vector<StepTensors> out(steps ? steps->size() : 0);
  for (size_t i = 0; i < out.size(); ++i) {
    const schema::Step *step = steps->Get(i);
    StepTensors &t = out[i];
    switch (step->kind()) {
    case schema::StepKind::Kernel: {
      const KernelPlan &k = kernels[step->index()];
      for (const KernelPlan::Inst &inst : k.program)
        if (inst.op == OpCode::Load)
          t.reads.push_back(k.accesses[inst.access].tensor);
        else if (inst.op == OpCode::Store)
          t.writes.push_back(k.accesses[inst.access].tensor);
      break;
    }
    case schema::StepKind::Gemm: {
      const GemmDesc &g = module.gemms()[step->index()];
      for (int32_t r : {g.a, g.b, g.bias, g.aScale, g.bScale})
        if (r >= 0)
          t.reads.push_back(r);
      t.writes.push_back(g.out);
      break;
    }
    case schema::StepKind::Routine: {
      const RoutineOp &op = module.routines()[step->index()];
      for (int32_t r : op.inputs)
        if (r >= 0)
          t.reads.push_back(r);
      t.writes.push_back(op.output);
      break;
    }
    }
  }
  return out;
}

/// Whether the bytes of activation `t` after step `from` are read only as
/// `t` by step `reader` until steps' writes have covered them all (the
/// arena planner reuses them piece by piece), and are no module output or
/// state.
bool readOnlyBy(const LoadedModule &module, const std::vector<StepTensors> &steps, int32_t t,
                size_t from, size_t reader) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  const TensorDesc &d = tensors[t];
  // The byte ranges of t not yet overwritten, [begin, end).
  std::vector<std::pair<uint64_t, uint64_t>> live = {{d.offset, d.offset + d.bytes}};
  auto touches = [&](const TensorDesc &x) {
    if (x.isConstant() || x.bytes == 0)
      return false;
    for (const auto &[begin, end] : live)
      if (x.offset < end && begin < x.offset + x.bytes)
        return true;
    return false;
  };
  for (size_t s = from + 1; s < steps.size() && !live.empty(); ++s) {
    for (int32_t r : steps[s].reads)
      if ((r == t || touches(tensors[r])) && !(s == reader && r == t))
        return false;
    for (int32_t w : steps[s].writes) {
      const TensorDesc &x = tensors[w];
      if (x.isConstant() || x.bytes == 0)
        continue;
      std::vector<std::pair<uint64_t, uint64_t>> left;
      for (const auto &[begin, end] : live) {
        if (x.offset > begin)
          left.push_back({begin, std::min(end, x.offset)});
        if (x.offset + x.bytes < end)
          left.push_back({std::max(begin, x.offset + x.bytes), end});
      }
      live.clear();
      for (const auto &range : left)
        if (range.first < range.second)
          live.push_back(range);
    }
  }
  if (live.empty())
    return true;
  for (uint32_t o : module.outputs())
    if (static_cast<int32_t>(o) == t || touches(tensors[o]))
      return false;
  for (const StateDesc &state : module.states())
    for (int32_t x : {state.tensor, state.update})
      if (x == t || touches(tensors[x]))
        return false;
  return true;
}

/// Whether kernel `k` is relu(Load conv) or relu(Load conv + Load addend)
/// stored to one FP32 tensor, every access walking the same contiguous
/// elements; sets addend (-1: none) and output.
bool matchEpilogue(const LoadedModule &module, const KernelPlan &k, int32_t conv, int32_t &addend,
                   int32_t &output) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  if (k.empty || !k.outerDims.empty() || k.rowDims.size() != 1 ||
      k.rowDims[0] != tensors[conv].elements)
    return false;
  for (const KernelPlan::Access &a : k.accesses)
    if (a.dtype != DType::F32 || a.rowStrides != std::vector<int64_t>{1})
      return false;
  const std::vector<KernelPlan::Inst> &p = k.program;
  for (const KernelPlan::Inst &inst : p)
    if (inst.dtype != DType::F32)
      return false;
  auto loads = [&](size_t j, int32_t &tensor) {
    if (j >= p.size() || p[j].op != OpCode::Load)
      return false;
    tensor = k.accesses[p[j].access].tensor;
    return true;
  };
  // The one Store, last, of a Relu.
  if (p.size() < 3 || p.back().op != OpCode::Store)
    return false;
  const KernelPlan::Inst &relu = p[static_cast<size_t>(p.back().operand[0])];
  if (relu.op != OpCode::Relu)
    return false;
  output = k.accesses[p.back().access].tensor;
  int32_t a = -1, b = -1;
  const size_t x = static_cast<size_t>(relu.operand[0]);
  if (p.size() == 3 && loads(x, a) && a == conv) {
    addend = -1;
    return true;
  }
  if (p.size() != 5 || x >= p.size() || p[x].op != OpCode::Add ||
      !loads(static_cast<size_t>(p[x].operand[0]), a) ||
      !loads(static_cast<size_t>(p[x].operand[1]), b) || (a == conv) == (b == conv))
    return false;
  addend = a == conv ? b : a;
  return true;
}

} // namespace

std::vector<ConvEpilogue> findConvEpilogues(const LoadedModule &module,
                                            const std::vector<KernelPlan> &kernels) {
  std::vector<ConvEpilogue> out(module.routines().size());
  if (const char *on = std::getenv("MIXPREC_CPU_CONV_FUSION"); on && !std::strcmp(on, "0"))
    return out;
  const auto *steps = module.root().steps();
  if (!steps)
    return out;
  const std::vector<StepTensors> access = tensorsOfSteps(module, kernels);
  const std::vector<TensorDesc> &tensors = module.tensors();
  // A routine or kernel run by more than one step is left alone.
  std::vector<int> routineSteps(module.routines().size(), 0), kernelSteps(kernels.size(), 0);
  for (size_t i = 0; i < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i);
    if (step->kind() == schema::StepKind::Routine)
      ++routineSteps[step->index()];
    else if (step->kind() == schema::StepKind::Kernel)
      ++kernelSteps[step->index()];
  }
  for (size_t i = 0; i + 1 < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i), *next = steps->Get(i + 1);
    if (step->kind() != schema::StepKind::Routine || next->kind() != schema::StepKind::Kernel)
      continue;
    const RoutineOp &op = module.routines()[step->index()];
    if ((op.kind != RoutineKind::Conv2d && op.kind != RoutineKind::Conv) ||
        routineSteps[step->index()] != 1 || kernelSteps[next->index()] != 1)
      continue;
    const int32_t conv = op.output;
    int32_t addend = -1, output = -1;
    if (tensors[conv].dtype != DType::F32 ||
        !matchEpilogue(module, kernels[next->index()], conv, addend, output) ||
        !readOnlyBy(module, access, conv, i, i + 1))
      continue;
    if (tensors[output].elements != tensors[conv].elements ||
        (addend >= 0 && tensors[addend].elements != tensors[conv].elements))
      continue;
    out[step->index()] = ConvEpilogue{static_cast<int64_t>(i + 1), addend, output};
  }
  return out;
}

} // namespace mixprec::runtime
