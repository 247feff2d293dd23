//===- CpuConvFusion.cpp - kernels and layouts around oneDNN steps --------===//
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
// copies.) A BF16 or F16 convolution output with such a kernel in its
// dtype (every access; its instructions in that dtype or FP32) takes a
// narrow epilogue instead: oneDNN adds and applies nothing (its sum
// post-op would add before the rounding), the step rounds the FP32 result
// to the dtype as it would store it, adds the addend itself (the kernel's
// operands in its order, the sum rounded where the kernel's Add is in the
// dtype), applies the ReLU and stores what the kernel stores: the
// kernel's bits by construction, one pass where there were two (the
// addend and the output the same bytes or none shared).
// MIXPREC_CPU_CONV_FUSION=0 turns both off (tests compare).
// Where a max pool is that output's only reader (ResNet's stem: relu(conv1)
// then a 3x3 max pool), the pool applies the ReLU to its own output
// instead (poolTakingRelu; its input and output of one dtype, whose values
// it moves exactly): ReLU is monotonic, so relu(max) equals
// max(relu) bit for bit (NaN taps: the first NaN either way, which ReLU
// keeps; a largest tap <= 0, -0 included: +0 either way), and the pass
// runs over the pooled values, a quarter of the convolution's with a 3x3
// stride-2 pool. Not for max_pool_indices (the argmax of ReLU'd taps
// differs). MIXPREC_CPU_POOL_RELU=0 turns it off (tests compare the two).
//
// Between convolutions, activations stay in the layout of oneDNN's
// convolutions (findKeptLayouts): a oneDNN convolution on AVX-512 reads and
// writes nhwc, on AVX2 (and Winograd's) channels in blocks of 8 (16),
// nChw8c (nChw16c), and reordering every src from the arena's NCHW and
// every dst back costs two passes over each activation (ResNet-18: ~0.1 ms
// a convolution, its max pool 7x onnxruntime's on NCHW planes). An
// activation is kept in such a layout, in its own arena bytes (nhwc, and
// a blocked layout whose block divides the channels, have no padding: the
// plain bytes permuted), when every step that writes or reads it can take
// it so, all in one layout: a oneDNN convolution whose primitive writes
// (reads) it, as its dst, its src or the addend of its sum post-op; the
// max pool (cpu::maxPool2dChannelsLast: the same taps in the same order,
// all channels of a position at once; a blocked tensor [N, C/B, H, W, B]
// is N C/B channels-last images of B channels, its output in the input's
// layout or plain); an element-wise
// kernel (no row reduction, every access one contiguous run of the same
// shape or a broadcast scalar: kernels compute from loaded values alone, so
// a permutation of the points permutes the results), which keeps all the
// tensors it walks in one layout. Not a module input, output or state, and
// its bytes read as no other tensor while it lives. The bits are the plain
// layout's: reorders move values, and every step computes each element
// from the same elements as before. MIXPREC_CPU_CHANNELS_LAST=0 turns it
// off (tests compare the two).
//
// Narrow activations stored wide (findWideStorage): a oneDNN GEMM widens
// an A its kernel does not take (exactly) to the dtype it computes in
// (CpuDnnl.h: FP8 to BF16, or FP8, BF16 and FP16 to FP32 where the CPU's
// BF16 or FP16 kernels do not pay) before every run: the kernel before it
// wrote one or two bytes a value, the widening reads them back and writes
// two or four. Where only kernels write such an activation (its Stores)
// and only such GEMMs read it (as A, or through a view: a reshape, the
// same bytes and dtype, which no step writes), and its bytes are read as
// nothing else while it lives and are no module input, output or state,
// the kernels round each value to its dtype exactly as before (FP8
// saturating) and write it widened to a buffer of its own, which the
// GEMMs read as it is: one pass less, the same bits by construction. The
// buffer is laid out as the arena is, by the steps in which each lives;
// where it would be larger than the arena, or the session's memory limit
// has no room for it, the tensors stay in the arena.
// MIXPREC_CPU_WIDE_STORE=0 turns it off (tests compare the two).
//
// A GEMM output's amax taken by the very next step (findGemmAmaxes: the
// kernel exactly Load, Amax, Store to a scalar FP32 tensor, over the GEMM
// output's contiguous elements in its dtype; current scaling's amax in
// the FP8 recipes) is taken in the GEMM's epilogue (CpuGemmStep.cpp) over
// the rows as they are stored, and the kernel step skipped: the GEMM
// output is still written (the quantize after it reads it), one pass over
// it and a step fewer. The same value by construction: the amax of the
// FP32 rows, merged in any order (a max), then rounded to the output's
// dtype as its store rounds each value (rounding is monotonic and odd, so
// the largest magnitude stored is the largest one rounded; a NaN stays).
// MIXPREC_CPU_GEMM_AMAX=0 turns it off (tests compare the two).
//
// The same amax after a kernel that stores the tensor (findKernelAmaxes:
// the current-scaling amax of a LayerNorm's or a residual add's output)
// is taken by that kernel: its program grows by an Amax of the value its
// Store writes and a Store of the amax after the run (addAmax), and the
// amax step is skipped. Where that Store writes all of the tensor once (a
// walk of the kernel's space that covers its elements injectively) and
// its value already has the tensor's dtype (its register holds the stored
// values: not a Quantize the Store rounds), the same value by
// construction. The kernel may read the amax's bytes (it is written once
// they are all read) but not write them. MIXPREC_CPU_KERNEL_AMAX=0 turns
// it off (tests compare the two).
//
// A GEMM's output quantized to FP8 by the very next step (findGemmQuantizes:
// the kernel exactly Load, Const or scalar Load, Quantize, Store over the
// GEMM output's contiguous elements; the FP8 operand of the next GEMM in
// FP8 recipes) is quantized in the GEMM's epilogue (CpuGemmStep.cpp) as each
// row leaves it: the row rounded to the GEMM output's dtype, as its store
// would, then quantized by the function the kernel's Quantize calls and
// stored (wide where the FP8 tensor is stored wide), and the kernel step
// skipped. The GEMM output, read by nothing else, is not written: one pass
// over it and a step fewer, the same bits by construction.
// MIXPREC_CPU_GEMM_QUANTIZE=0 turns it off (tests compare the two).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include <cstdlib>
#include <cstring>

namespace mixprec::runtime {

using schema::DType;
using schema::OpCode;

bool turnedOff(const char *name) {
  const char *value = std::getenv(name);
  return value && !std::strcmp(value, "0");
}

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
/// `t` by step `reader` (by any step when `anyReader`) until steps' writes
/// have covered them all (the arena planner reuses them piece by piece),
/// and are no module output or state. `views` (findWideStorage): reads of an
/// exact view of t (its bytes and dtype, all of them still t's) allowed
/// too, and the views listed.
bool readOnlyBy(const LoadedModule &module, const std::vector<StepTensors> &steps, int32_t t,
                size_t from, size_t reader, bool anyReader = false,
                std::vector<int32_t> *views = nullptr) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  const TensorDesc &d = tensors[t];
  // The byte ranges of t not yet overwritten, [begin, end).
  std::vector<std::pair<uint64_t, uint64_t>> live = {{d.offset, d.offset + d.bytes}};
  auto isView = [&](int32_t r) {
    const TensorDesc &x = tensors[r];
    return views && x.offset == d.offset && x.bytes == d.bytes && x.dtype == d.dtype &&
           live.size() == 1 && live[0].first == d.offset && live[0].second == d.offset + d.bytes;
  };
  auto touches = [&](const TensorDesc &x) {
    if (x.isConstant() || x.bytes == 0)
      return false;
    for (const auto &[begin, end] : live)
      if (x.offset < end && begin < x.offset + x.bytes)
        return true;
    return false;
  };
  for (size_t s = from + 1; s < steps.size() && !live.empty(); ++s) {
    for (int32_t r : steps[s].reads) {
      if (r != t && touches(tensors[r]) && isView(r)) {
        views->push_back(r);
        continue;
      }
      if ((r == t || touches(tensors[r])) && !((s == reader || anyReader) && r == t))
        return false;
    }
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
/// stored to one tensor, every access walking the same contiguous elements
/// in conv's dtype (FP32, or BF16 / F16: a narrow epilogue); sets addend
/// (-1: none), output, whether the Add takes the addend first and whether
/// it rounds its sum to that dtype.
bool matchEpilogue(const LoadedModule &module, const KernelPlan &k, int32_t conv, int32_t &addend,
                   int32_t &output, bool &addendFirst, bool &sumRounded) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  if (k.empty || !k.outerDims.empty() || k.rowDims.size() != 1 ||
      k.rowDims[0] != tensors[conv].elements)
    return false;
  // Every access in the convolution output's dtype: FP32, or (a narrow
  // epilogue) BF16 or F16; the instructions in FP32 or that dtype.
  const DType dtype = tensors[conv].dtype;
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    return false;
  for (const KernelPlan::Access &a : k.accesses)
    if (a.dtype != dtype || a.wide || a.rowStrides != std::vector<int64_t>{1})
      return false;
  const std::vector<KernelPlan::Inst> &p = k.program;
  for (const KernelPlan::Inst &inst : p)
    if (inst.dtype != dtype && inst.dtype != DType::F32)
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
  addendFirst = a != conv;
  sumRounded = p[x].dtype != DType::F32;
  return true;
}

/// How many steps run each routine, each kernel and each GEMM.
struct StepCounts {
  std::vector<int> routines, kernels, gemms;
  StepCounts(const LoadedModule &module, const std::vector<KernelPlan> &kernelPlans)
      : routines(module.routines().size(), 0), kernels(kernelPlans.size(), 0),
        gemms(module.gemms().size(), 0) {
    const auto *steps = module.root().steps();
    for (size_t i = 0; steps && i < steps->size(); ++i) {
      const schema::Step *step = steps->Get(i);
      switch (step->kind()) {
      case schema::StepKind::Routine:
        ++routines[step->index()];
        break;
      case schema::StepKind::Kernel:
        ++kernels[step->index()];
        break;
      case schema::StepKind::Gemm:
        ++gemms[step->index()];
        break;
      }
    }
  }
};

/// Calls fn(i, index, kernel) for each step i of `kind` (a routine, a GEMM
/// or a kernel: its index) right before a kernel step (kernel `kernel`),
/// both run by those steps alone: the steps that may compute the kernel
/// after them.
template <typename Fn>
void forEachStepBeforeAKernel(const LoadedModule &module, const std::vector<KernelPlan> &kernels,
                              schema::StepKind kind, Fn fn) {
  const auto *steps = module.root().steps();
  const StepCounts counts(module, kernels);
  const std::vector<int> &runs = kind == schema::StepKind::Gemm     ? counts.gemms
                                 : kind == schema::StepKind::Kernel ? counts.kernels
                                                                    : counts.routines;
  for (size_t i = 0; steps && i + 1 < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i), *next = steps->Get(i + 1);
    if (step->kind() == kind && next->kind() == schema::StepKind::Kernel &&
        runs[step->index()] == 1 && counts.kernels[next->index()] == 1)
      fn(i, step->index(), next->index());
  }
}

/// Union-find over tensors.
struct Classes {
  std::vector<int32_t> parent;
  explicit Classes(size_t n) : parent(n) {
    for (size_t i = 0; i < n; ++i)
      parent[i] = static_cast<int32_t>(i);
  }
  int32_t find(int32_t t) {
    while (parent[t] != t)
      t = parent[t] = parent[parent[t]];
    return t;
  }
  void join(int32_t a, int32_t b) { parent[find(a)] = find(b); }
};

/// Whether kernel `k` is element-wise over contiguous tensors: one merged
/// dim, no row reduction, every access walking it with stride 1 or 0.
bool elementWise(const KernelPlan &k) {
  if (k.empty || k.reductionPasses > 0 || !k.outerDims.empty() || k.rowDims.size() != 1)
    return false;
  for (const KernelPlan::Access &a : k.accesses)
    if (a.rowStrides.size() != 1 || (a.rowStrides[0] != 1 && a.rowStrides[0] != 0))
      return false;
  return true;
}

} // namespace

std::vector<uint8_t> findKeptLayouts(const LoadedModule &module,
                                     const std::vector<KernelPlan> &kernels,
                                     const std::vector<ConvEpilogue> &epilogues,
                                     const DnnlConvs &convs) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  std::vector<uint8_t> last(tensors.size(), 0);
  if (turnedOff("MIXPREC_CPU_CHANNELS_LAST"))
    return last;
  const auto *steps = module.root().steps();
  if (!steps || tensors.empty())
    return last;
  const std::vector<RoutineOp> &routines = module.routines();
  // What each step reads and writes, a fused epilogue's kernel step folded
  // into its convolution's: the convolution writes the kernel's output and
  // reads its addend.
  std::vector<StepTensors> access = tensorsOfSteps(module, kernels);
  std::vector<uint8_t> fused(access.size(), 0);
  const StepCounts counts(module, kernels);
  auto produced = [&](size_t r) {
    return r < epilogues.size() && epilogues[r].kernelStep >= 0 ? epilogues[r].output
                                                                : routines[r].output;
  };
  for (size_t i = 0; i < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i);
    const size_t r = step->index();
    if (step->kind() != schema::StepKind::Routine || r >= epilogues.size() ||
        epilogues[r].kernelStep < 0)
      continue;
    const auto k = static_cast<size_t>(epilogues[r].kernelStep);
    access[i].writes = {epilogues[r].output};
    if (epilogues[r].addend >= 0)
      access[i].reads.push_back(epilogues[r].addend);
    access[k] = StepTensors();
    fused[k] = 1;
  }

  // Per tensor: a step writes it that can write it channels-last
  // (candidate), and some reader or writer cannot (veto). Per class of
  // tensors that must share a layout, the verdict.
  std::vector<uint8_t> candidate(tensors.size(), 0), veto(tensors.size(), 0);
  // The layout a convolution writes (reads) the tensor in (0: none asked).
  std::vector<uint8_t> wants(tensors.size(), 0);
  auto want = [&](int32_t t, uint8_t layout) {
    if (wants[t] && wants[t] != layout)
      veto[t] = 1; // two convolutions, two layouts
    wants[t] = layout;
  };
  Classes classes(tensors.size());
  // Max pools: output channels-last only if the input is.
  std::vector<std::pair<int32_t, int32_t>> pools;
  auto isFloat = [&](int32_t t) { return isFloatDType(tensors[t].dtype); };
  for (size_t i = 0; i < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i);
    const size_t index = step->index();
    if (fused[i])
      continue;
    if (step->kind() == schema::StepKind::Routine) {
      const RoutineOp &op = routines[index];
      const bool once = counts.routines[index] == 1;
      if (once && convs.handles(index)) {
        const int32_t out = produced(index);
        candidate[out] = convs.dstLayout(index) != 0 && isFloat(out);
        if (candidate[out])
          want(out, convs.dstLayout(index));
        if (convs.srcLayout(index) == 0)
          veto[op.inputs[0]] = 1;
        else
          want(op.inputs[0], convs.srcLayout(index));
        for (size_t j = 1; j < op.inputs.size(); ++j) // weight, bias
          if (op.inputs[j] >= 0)
            veto[op.inputs[j]] = 1;
        if (index < epilogues.size() && epilogues[index].addend >= 0)
          classes.join(epilogues[index].addend, out);
        continue;
      }
      const bool pool = op.kind == RoutineKind::MaxPool2d ||
                        (op.kind == RoutineKind::MaxPool && op.window.kernel.size() == 2);
      if (once && pool && isFloat(op.inputs[0]) && isFloat(op.output)) {
        candidate[op.output] = 1;
        pools.push_back({op.inputs[0], op.output});
        continue;
      }
    } else if (step->kind() == schema::StepKind::Kernel && counts.kernels[index] == 1 &&
               elementWise(kernels[index])) {
      // Every tensor it walks in one layout; its outputs written in it.
      const KernelPlan &k = kernels[index];
      int32_t first = -1;
      for (const KernelPlan::Access &a : k.accesses) {
        if (a.rowStrides[0] == 0)
          continue;
        if (first >= 0 && tensors[a.tensor].shape != tensors[first].shape)
          veto[a.tensor] = veto[first] = 1;
        if (first >= 0)
          classes.join(a.tensor, first);
        first = a.tensor;
      }
      for (int32_t t : access[i].writes)
        candidate[t] = 1;
      continue;
    }
    for (int32_t t : access[i].reads)
      veto[t] = 1;
    for (int32_t t : access[i].writes)
      veto[t] = 1;
  }
  // A candidate's bytes read as no other tensor while it lives (and as it
  // only while all of them are its), no module output or state.
  for (size_t i = 0; i < steps->size(); ++i)
    for (int32_t t : access[i].writes) {
      const size_t rank = tensors[t].shape.size();
      if (!candidate[t] || veto[t] || rank < 3 || rank > 5 || tensors[t].elements == 0 ||
          !readOnlyBy(module, access, t, i, SIZE_MAX, /*anyReader=*/true))
        veto[t] = 1;
    }
  for (uint32_t t : module.inputs())
    veto[t] = 1;
  // The verdict per class, and its one layout: the convolutions' (two
  // layouts in a class: kept in neither); then the max pools' rule (the
  // output in the input's layout, or plain) until nothing changes. A class
  // no convolution asks a layout of takes its pool input's, else none.
  std::vector<uint8_t> ok(tensors.size(), 1), layout(tensors.size(), 0);
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int32_t c = classes.find(static_cast<int32_t>(t));
    if (!candidate[t] || veto[t] || tensors[t].isConstant())
      ok[c] = 0;
    if (wants[t] && layout[c] && layout[c] != wants[t])
      ok[c] = 0;
    if (wants[t])
      layout[c] = wants[t];
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &[in, out] : pools) {
      const int32_t i = classes.find(in), o = classes.find(out);
      if (!ok[o])
        continue;
      if (ok[i] && !layout[o]) {
        layout[o] = layout[i];
        changed = true;
      } else if (!ok[i] || layout[o] != layout[i]) {
        ok[o] = 0;
        changed = true;
      }
    }
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int32_t c = classes.find(static_cast<int32_t>(t));
    last[t] = candidate[t] && ok[c] ? layout[c] : 0;
  }
  return last;
}

namespace {

/// The max pool routine that step `at` runs, if it may apply the ReLU of
/// the kernel before it, whose output `relu` it pools (and nothing else
/// reads), to its own output instead; -1 if not.
int32_t poolTakingRelu(const LoadedModule &module, const std::vector<StepTensors> &access,
                       const StepCounts &counts, size_t at, int32_t relu) {
  const auto *steps = module.root().steps();
  if (turnedOff("MIXPREC_CPU_POOL_RELU") || at >= steps->size() ||
      steps->Get(at)->kind() != schema::StepKind::Routine)
    return -1;
  const size_t index = steps->Get(at)->index();
  const RoutineOp &op = module.routines()[index];
  const std::vector<TensorDesc> &tensors = module.tensors();
  const bool max = op.kind == RoutineKind::MaxPool2d || op.kind == RoutineKind::MaxPool;
  if (!max || counts.routines[index] != 1 || op.inputs.size() != 1 || op.inputs[0] != relu ||
      tensors[op.output].dtype != tensors[relu].dtype ||
      !readOnlyBy(module, access, relu, at - 1, at))
    return -1;
  return static_cast<int32_t>(index);
}

} // namespace

std::vector<ConvEpilogue> findConvEpilogues(const LoadedModule &module,
                                            const std::vector<KernelPlan> &kernels) {
  std::vector<ConvEpilogue> out(module.routines().size());
  if (turnedOff("MIXPREC_CPU_CONV_FUSION"))
    return out;
  const std::vector<StepTensors> access = tensorsOfSteps(module, kernels);
  const std::vector<TensorDesc> &tensors = module.tensors();
  const StepCounts counts(module, kernels);
  forEachStepBeforeAKernel(
      module, kernels, schema::StepKind::Routine, [&](size_t i, size_t routine, size_t kernel) {
        const RoutineOp &op = module.routines()[routine];
        if (op.kind != RoutineKind::Conv2d && op.kind != RoutineKind::Conv)
          return;
        const int32_t conv = op.output;
        int32_t addend = -1, output = -1;
        bool addendFirst = false, sumRounded = false;
        if (!matchEpilogue(module, kernels[kernel], conv, addend, output, addendFirst,
                           sumRounded) ||
            !readOnlyBy(module, access, conv, i, i + 1))
          return;
        if (tensors[output].elements != tensors[conv].elements ||
            (addend >= 0 && tensors[addend].elements != tensors[conv].elements))
          return;
        // Narrow: the step reads the addend and writes the output element by
        // element, in slices over the threads: the same bytes or none shared.
        const bool narrow = tensors[conv].dtype != DType::F32;
        if (narrow && addend >= 0 && sharesBytes(tensors[addend], tensors[output]) &&
            (tensors[addend].offset != tensors[output].offset ||
             tensors[addend].bytes != tensors[output].bytes))
          return;
        bool dies = addend >= 0 && readOnlyBy(module, access, addend, i + 1, SIZE_MAX);
        for (uint32_t t : module.inputs())
          dies = dies && !sharesBytes(tensors[t], tensors[addend]);
        out[routine] = ConvEpilogue{static_cast<int64_t>(i + 1), addend, output, dies};
        out[routine].narrow = narrow;
        out[routine].addendFirst = addendFirst;
        out[routine].sumRounded = sumRounded;
        out[routine].reluInPool = poolTakingRelu(module, access, counts, i + 2, output);
      });
  return out;
}

namespace {

/// Whether element-wise kernel `k` walks GEMM g's whole output as one run
/// (g one block of rows) and `load` reads it there, contiguous, in its
/// dtype: what a kernel the GEMM's epilogue computes instead must read.
bool readsGemmOutput(const LoadedModule &module, const KernelPlan &k, const GemmDesc &g,
                     const KernelPlan::Access &load) {
  const TensorDesc &out = module.tensors()[g.out];
  return (g.batch == 1 || g.strideOut == g.m * g.n) && elementWise(k) &&
         k.rowDims[0] == out.elements && load.tensor == g.out && load.rowStrides[0] == 1 &&
         !load.wide && load.dtype == out.dtype;
}

/// Whether kernel `k` is exactly Store(Quantize(Load(g.out), scale)) over
/// the contiguous elements of GEMM g's output (one block of rows), the
/// scale a constant or a scalar FP32 tensor, storing to a tensor apart
/// from g.out: then `q` gets its output, dtype and scale.
bool matchQuantize(const LoadedModule &module, const KernelPlan &k, const GemmDesc &g,
                   GemmQuantize &q) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  const std::vector<KernelPlan::Inst> &p = k.program;
  if (p.size() != 4 || p[3].op != OpCode::Store)
    return false;
  const KernelPlan::Inst &quantize = p[static_cast<size_t>(p[3].operand[0])];
  if (quantize.op != OpCode::Quantize)
    return false;
  const KernelPlan::Inst &value = p[static_cast<size_t>(quantize.operand[0])];
  const KernelPlan::Inst &scale = p[static_cast<size_t>(quantize.operand[1])];
  if (value.op != OpCode::Load)
    return false;
  const KernelPlan::Access &store = k.accesses[p[3].access];
  if (!readsGemmOutput(module, k, g, k.accesses[value.access]) || store.rowStrides[0] != 1 ||
      store.dtype != quantize.dtype || tensors[store.tensor].elements != tensors[g.out].elements ||
      sharesBytes(tensors[store.tensor], tensors[g.out]))
    return false;
  if (scale.op == OpCode::Const) {
    q.value = scale.value;
  } else if (scale.op == OpCode::Load && k.accesses[scale.access].rowStrides[0] == 0 &&
             k.accesses[scale.access].dtype == DType::F32 &&
             tensors[k.accesses[scale.access].tensor].elements == 1) {
    q.scale = k.accesses[scale.access].tensor;
  } else {
    return false;
  }
  q.output = store.tensor;
  q.dtype = store.dtype;
  return true;
}

/// Whether kernel `k` is exactly Store(Amax(Load(g.out))) over the
/// contiguous elements of GEMM g's output (one block of rows), read in its
/// dtype, the amax stored to a scalar FP32 tensor apart from g.out: then
/// `amax` gets that tensor.
bool matchAmax(const LoadedModule &module, const KernelPlan &k, const GemmDesc &g, int32_t &amax) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  const std::vector<KernelPlan::Inst> &p = k.program;
  if (p.size() != 3 || p[0].op != OpCode::Load || p[1].op != OpCode::Amax || p[1].operand[0] != 0 ||
      p[2].op != OpCode::Store || p[2].operand[0] != 1)
    return false;
  const KernelPlan::Access &store = k.accesses[p[2].access];
  if (!readsGemmOutput(module, k, g, k.accesses[p[0].access]) || store.rowStrides[0] != 0 ||
      store.wide || store.dtype != DType::F32 || tensors[store.tensor].dtype != DType::F32 ||
      tensors[store.tensor].elements != 1 || sharesBytes(tensors[store.tensor], tensors[g.out]))
    return false;
  amax = store.tensor;
  return true;
}

} // namespace

std::vector<GemmAmax> findGemmAmaxes(const LoadedModule &module,
                                     const std::vector<KernelPlan> &kernels) {
  std::vector<GemmAmax> out(module.gemms().size());
  if (turnedOff("MIXPREC_CPU_GEMM_AMAX"))
    return out;
  forEachStepBeforeAKernel(module, kernels, schema::StepKind::Gemm,
                           [&](size_t i, size_t gemm, size_t kernel) {
                             int32_t amax = -1;
                             if (matchAmax(module, kernels[kernel], module.gemms()[gemm], amax))
                               out[gemm] = GemmAmax{static_cast<int64_t>(i + 1), amax};
                           });
  return out;
}

std::vector<KernelAmax> findKernelAmaxes(const LoadedModule &module,
                                         const std::vector<KernelPlan> &kernels,
                                         const std::vector<uint8_t> &fused) {
  std::vector<KernelAmax> out;
  if (turnedOff("MIXPREC_CPU_KERNEL_AMAX"))
    return out;
  const std::vector<TensorDesc> &tensors = module.tensors();
  forEachStepBeforeAKernel(
      module, kernels, schema::StepKind::Kernel, [&](size_t i, size_t kernel, size_t amaxKernel) {
        if (fused[i] || fused[i + 1])
          return;
        // The amax kernel: all of h, contiguous, into a scalar FP32 tensor that
        // is not h's.
        const KernelPlan &k = kernels[amaxKernel];
        const std::vector<KernelPlan::Inst> &p = k.program;
        if (k.empty || p.size() != 3 || p[0].op != OpCode::Load || p[1].op != OpCode::Amax ||
            p[1].operand[0] != 0 || p[2].op != OpCode::Store || p[2].operand[0] != 1)
          return;
        const KernelPlan::Access &load = k.accesses[p[0].access], &store = k.accesses[p[2].access];
        const TensorDesc &h = tensors[load.tensor], &amax = tensors[store.tensor];
        if (!allStridesZero(store) || store.wide || amax.dtype != DType::F32 ||
            amax.elements != 1 || !coversOnce(k, load, h.elements) || sharesBytes(h, amax) ||
            (h.dtype != DType::F32 && h.dtype != DType::BF16 && h.dtype != DType::F16))
          return;
        // The kernel before: one Store of h, writing all of it, of a value of
        // h's dtype (its register holds the stored values), and no Store that
        // shares bytes with the amax's tensor (its Loads may: the amax is
        // written once they have all been read).
        const KernelPlan &before = kernels[kernel];
        int32_t hStore = -1;
        bool clear = true;
        for (size_t j = 0; j < before.program.size(); ++j) {
          const KernelPlan::Inst &inst = before.program[j];
          if (inst.op != OpCode::Store)
            continue;
          const int32_t t = before.accesses[inst.access].tensor;
          if (t == load.tensor) {
            clear = clear && hStore < 0;
            hStore = static_cast<int32_t>(j);
          } else if (t == store.tensor || sharesBytes(tensors[t], amax)) {
            clear = false;
          }
        }
        if (!clear || hStore < 0)
          return;
        const KernelPlan::Inst &value = before.program[before.program[hStore].operand[0]];
        const KernelPlan::Access &written = before.accesses[before.program[hStore].access];
        if (value.dtype != h.dtype || value.scaleOnly || written.wide ||
            !coversOnce(before, written, h.elements))
          return;
        out.push_back(KernelAmax{static_cast<int64_t>(i + 1), static_cast<int32_t>(kernel), hStore,
                                 store.tensor});
      });
  return out;
}

std::vector<GemmQuantize> findGemmQuantizes(const LoadedModule &module,
                                            const std::vector<KernelPlan> &kernels) {
  std::vector<GemmQuantize> out(module.gemms().size());
  if (turnedOff("MIXPREC_CPU_GEMM_QUANTIZE"))
    return out;
  const std::vector<StepTensors> access = tensorsOfSteps(module, kernels);
  forEachStepBeforeAKernel(module, kernels, schema::StepKind::Gemm,
                           [&](size_t i, size_t gemm, size_t kernel) {
                             const GemmDesc &g = module.gemms()[gemm];
                             GemmQuantize q;
                             if (!matchQuantize(module, kernels[kernel], g, q) ||
                                 !readOnlyBy(module, access, g.out, i, i + 1))
                               return;
                             q.kernelStep = static_cast<int64_t>(i + 1);
                             out[gemm] = q;
                           });
  return out;
}

WideStorage findWideStorage(const LoadedModule &module, const std::vector<KernelPlan> &kernels,
                            const std::vector<uint8_t> &fused, const DnnlGemms &gemms) {
  const std::vector<TensorDesc> &tensors = module.tensors();
  WideStorage out;
  out.offset.assign(tensors.size(), -1);
  if (turnedOff("MIXPREC_CPU_WIDE_STORE"))
    return out;
  const auto *steps = module.root().steps();
  if (!steps || tensors.empty())
    return out;
  const std::vector<StepTensors> access = tensorsOfSteps(module, kernels);
  const size_t n = tensors.size();
  // Per tensor: every step that touches it may (ok: a kernel storing it,
  // a oneDNN GEMM widening it as A), and which do.
  std::vector<uint8_t> ok(n, 0), stored(n, 0), read(n, 0);
  out.type.assign(n, DType::F32); // what its GEMMs widen it to
  for (size_t t = 0; t < n; ++t)
    ok[t] = tensors[t].dtype != DType::F32 && isFloatDType(tensors[t].dtype) &&
            !tensors[t].isConstant() && tensors[t].bytes > 0;
  for (uint32_t t : module.inputs())
    ok[t] = 0;
  std::vector<std::pair<int64_t, int64_t>> live(n, {INT64_MAX, -1}); // first, last step
  for (size_t i = 0; i < access.size(); ++i) {
    for (const std::vector<int32_t> *list : {&access[i].reads, &access[i].writes})
      for (int32_t t : *list)
        live[t] = {std::min<int64_t>(live[t].first, i), std::max<int64_t>(live[t].second, i)};
    const schema::Step *step = steps->Get(i);
    const size_t index = step->index();
    if (step->kind() == schema::StepKind::Kernel && !fused[i]) {
      const KernelPlan &k = kernels[index];
      for (const KernelPlan::Inst &inst : k.program)
        if (inst.op == OpCode::Load)
          ok[k.accesses[inst.access].tensor] = 0;
        else if (inst.op == OpCode::Store)
          stored[k.accesses[inst.access].tensor] = 1;
      continue;
    }
    if (step->kind() == schema::StepKind::Gemm && gemms.wideElementsA(index) > 0) {
      const GemmDesc &g = module.gemms()[index];
      const DType type = gemms.computeType(index);
      if (read[g.a] && out.type[g.a] != type)
        ok[g.a] = 0; // GEMMs that widen it to two dtypes
      read[g.a] = 1;
      out.type[g.a] = type;
      for (int32_t t : {g.b, g.bias, g.aScale, g.bScale, g.out})
        if (t >= 0)
          ok[t] = 0;
      continue;
    }
    for (const std::vector<int32_t> *list : {&access[i].reads, &access[i].writes})
      for (int32_t t : *list)
        ok[t] = 0;
  }
  // A stored tensor's bytes, after each step that writes it, read only as
  // it or as an exact view of it (a reshape, which no step writes and only
  // such GEMMs read) until overwritten, and no module output or state.
  std::vector<int32_t> owner(n, -1); // a view's tensor
  std::vector<uint8_t> wide(n, 0);
  for (size_t t = 0; t < n; ++t)
    wide[t] = ok[t] && stored[t];
  for (size_t i = 0; i < access.size(); ++i)
    for (int32_t t : access[i].writes) {
      std::vector<int32_t> views;
      if (!wide[t] || !readOnlyBy(module, access, t, i, SIZE_MAX, /*anyReader=*/true, &views)) {
        wide[t] = 0;
        continue;
      }
      for (int32_t v : views) {
        if (!ok[v] || stored[v] || (owner[v] >= 0 && owner[v] != t)) {
          wide[t] = 0; // and a view of two tensors: neither
          if (owner[v] >= 0)
            wide[owner[v]] = 0;
        }
        owner[v] = t;
      }
    }
  // Each wide tensor and its views, live from its first step to their last,
  // placed in the wide buffer at the lowest 64-aligned offset no group live
  // at the same time occupies.
  struct Group {
    int32_t tensor;
    int64_t first, last, bytes, offset = -1;
  };
  std::vector<Group> groups;
  for (size_t t = 0; t < n; ++t)
    if (wide[t]) {
      // Read as itself or as views, which must agree on the dtype (and
      // read at all).
      DType type = out.type[t];
      bool first = !read[t];
      for (size_t v = 0; v < n; ++v)
        if (owner[v] == static_cast<int32_t>(t)) {
          if (!first && out.type[v] != type)
            wide[t] = 0;
          type = out.type[v];
          first = false;
        }
      if (first || !wide[t]) {
        wide[t] = 0;
        continue;
      }
      out.type[t] = type;
      const int64_t width = type == DType::F32 ? 4 : 2;
      Group g{static_cast<int32_t>(t), live[t].first, live[t].second,
              (tensors[t].elements * width + 63) / 64 * 64};
      for (size_t v = 0; v < n; ++v)
        if (owner[v] == static_cast<int32_t>(t))
          g.last = std::max(g.last, live[v].second);
      groups.push_back(g);
    }
  for (Group &g : groups) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (const Group &h : groups)
      if (h.offset >= 0 && h.first <= g.last && g.first <= h.last)
        taken.push_back({h.offset, h.offset + h.bytes});
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto &[begin, end] : taken)
      if (at + g.bytes <= begin)
        break;
      else
        at = std::max(at, end);
    g.offset = at;
    out.bytes = std::max(out.bytes, at + g.bytes);
    out.offset[g.tensor] = at;
  }
  for (size_t v = 0; v < n; ++v)
    if (owner[v] >= 0 && wide[owner[v]])
      out.offset[v] = out.offset[owner[v]];
  return out;
}

} // namespace mixprec::runtime
