//===- CpuBackend.cpp - the plan on the host, every rounding point kept ---===//
//
// The session: the arena and its memory limits, kernel plans, and the step
// loop. CpuBackend.h says how memory and numerics work and where each
// piece lives.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/kernels/HostMemory.h"
#include "runtime/kernels/Kernels.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>

namespace mixprec::runtime {

Status outOfMemory(const std::string &what, int64_t bytes) {
  return Status(MIXPREC_OUT_OF_MEMORY,
                what + ": cannot allocate " + std::to_string(bytes) + " bytes of scratch memory");
}

Status CpuBackend::prepare() {
  const uint64_t arenaBytes = module->arenaBytesNeeded();
  // oneDNN's primitives run on OpenMP threads (Debian's libdnnl uses
  // libgomp) and size their work for the count when they are made: an
  // explicit count applies to them too, set for the calling thread before
  // they are made and before each run.
  if (options.numThreads > 0)
    ThreadPool::setOpenMpThreads(options.numThreads);
  // Convolutions on oneDNN where it takes them, their weights packed now:
  // their buffers (layouts, scratchpad) count below instead of im2col. The
  // packed weights, like the GEMMs', are not counted.
  // (The kernels are planned first: a convolution may compute the kernel
  // after it, CpuConvFusion.cpp.)
  size_t longest = 0;
  const auto *list = module->root().kernels();
  for (size_t i = 0; list && i < list->size(); ++i) {
    kernels.push_back(planKernel(*module, i));
    longest = std::max(longest, kernels.back().program.size());
  }
  const auto *steps = module->root().steps();
  fusedSteps.assign(steps ? steps->size() : 0, FusedInto::None);
  if (options.cpuGemms) {
    std::vector<ConvEpilogue> epilogues = findConvEpilogues(*module, kernels);
    std::vector<uint8_t> sums(epilogues.size(), 0);
    for (size_t i = 0; i < epilogues.size(); ++i)
      sums[i] = epilogues[i].kernelStep >= 0 && epilogues[i].addend >= 0 && !epilogues[i].narrow;
    if (Status s = dnnlConvs.prepare(
            *module, [&](int32_t t) { return tensorData(t); }, sums);
        !s.ok())
      return s;
    // The epilogues of the convolutions oneDNN runs (with the addition,
    // where there is one: oneDNN's, or the step's after a narrow output's
    // rounding).
    convEpilogues.assign(epilogues.size(), ConvEpilogue());
    for (size_t i = 0; i < epilogues.size(); ++i)
      if (epilogues[i].kernelStep >= 0 && dnnlConvs.handles(i) &&
          (epilogues[i].addend < 0 || epilogues[i].narrow || dnnlConvs.addsAddend(i))) {
        convEpilogues[i] = epilogues[i];
        fusedSteps[static_cast<size_t>(epilogues[i].kernelStep)] = FusedInto::Convolution;
      }
    poolRelus.assign(epilogues.size(), 0);
    for (const ConvEpilogue &e : convEpilogues)
      if (e.reluInPool >= 0)
        poolRelus[static_cast<size_t>(e.reluInPool)] = 1;
    // Activations between them in the layouts of oneDNN's convolutions.
    keptLayouts = findKeptLayouts(*module, kernels, convEpilogues, dnnlConvs);
    for (size_t i = 0; i < module->routines().size(); ++i)
      if (dnnlConvs.handles(i)) {
        const RoutineOp &op = module->routines()[i];
        const int32_t out = convEpilogues[i].kernelStep >= 0 ? convEpilogues[i].output : op.output;
        dnnlConvs.keepLayouts(i, keptLayouts[op.inputs[0]] != 0, keptLayouts[out] != 0);
      }
  }
  keptLayouts.resize(module->tensors().size(), 0);
  poolRelus.resize(module->routines().size(), 0);
  // FP8 quantize kernels computed by the GEMM before them.
  gemmQuantizes = options.cpuGemms ? findGemmQuantizes(*module, kernels)
                                   : std::vector<GemmQuantize>(module->gemms().size());
  for (const GemmQuantize &q : gemmQuantizes)
    if (q.kernelStep >= 0)
      fusedSteps[static_cast<size_t>(q.kernelStep)] = FusedInto::Gemm;
  // Amax kernels computed by the GEMM before them.
  gemmAmaxes = options.cpuGemms ? findGemmAmaxes(*module, kernels)
                                : std::vector<GemmAmax>(module->gemms().size());
  for (const GemmAmax &a : gemmAmaxes)
    if (a.kernelStep >= 0)
      fusedSteps[static_cast<size_t>(a.kernelStep)] = FusedInto::GemmAmax;
  // Amax kernels taken by the kernel before them (a program grows by an
  // Amax and its Store).
  {
    std::vector<uint8_t> taken(fusedSteps.size());
    for (size_t i = 0; i < fusedSteps.size(); ++i)
      taken[i] = fusedSteps[i] != FusedInto::None;
    for (const KernelAmax &a : findKernelAmaxes(*module, kernels, taken)) {
      addAmax(kernels[static_cast<size_t>(a.kernel)], a.store, a.output);
      fusedSteps[static_cast<size_t>(a.amaxStep)] = FusedInto::KernelAmax;
      longest = std::max(longest, kernels[static_cast<size_t>(a.kernel)].program.size());
    }
  }
  // The largest scratch buffer that is not a copy of a tensor: the
  // reference convolutions' im2col, plus oneDNN's convolution buffers.
  uint64_t im2colBytes = 0;
  for (size_t i = 0; i < module->routines().size(); ++i) {
    const RoutineOp &op = module->routines()[i];
    const bool transposed = op.kind == RoutineKind::ConvTranspose;
    if ((op.kind != RoutineKind::Conv2d && op.kind != RoutineKind::Conv && !transposed) ||
        dnnlConvs.handles(i))
      continue;
    const auto &ws = module->tensors()[op.inputs[1]].shape;
    const auto &xs = module->tensors()[op.inputs[0]].shape;
    const auto &os = module->tensors()[op.output].shape;
    // The GEMM's inner dim and the column buffer's rows and columns: conv
    // [C/g * taps] x [out plane]; conv_transpose [M/g * taps] x [in plane]
    // (plus its transposed weight, [M/g * taps] x [C/g]).
    __int128 taps = 1, plane = 1;
    for (size_t d = 2; d < ws.size(); ++d) {
      taps *= ws[d];
      plane *= transposed ? xs[d] : os[d];
    }
    const __int128 rows = ws[1] * taps;
    const __int128 inner = transposed ? xs[1] / op.groups : rows;
    const __int128 floats = rows * plane + (transposed ? rows * inner : 0);
    if (floats > kMaxScratchFloats || rows > INT_MAX || plane > INT_MAX || inner > INT_MAX ||
        ws[0] > INT_MAX)
      return Status(MIXPREC_UNIMPLEMENTED,
                    op.name + ": the im2col buffer or GEMM exceeds the CPU backend's limits");
    im2colBytes = std::max<uint64_t>(im2colBytes, static_cast<uint64_t>(floats) * 4);
  }
  im2colBytes += dnnlConvs.workspaceBytes();
  if (options.maxMemoryBytes && (arenaBytes > options.maxMemoryBytes ||
                                 im2colBytes > options.maxMemoryBytes - arenaBytes))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: the module needs a " + std::to_string(arenaBytes) +
                      "-byte arena and " + std::to_string(im2colBytes) +
                      " bytes of convolution scratch, beyond the session's max_memory_bytes (" +
                      std::to_string(options.maxMemoryBytes) + ")");
  // The interpreter's rule for its live tensors (cpu::fitsInMemory): refused
  // up front, not killed after touching overcommitted pages.
  if (!cpu::fitsInMemory(arenaBytes, im2colBytes))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: the module needs a " + std::to_string(arenaBytes) +
                      "-byte arena and " + std::to_string(im2colBytes) +
                      " bytes of convolution scratch, more than " + cpu::describeUsableMemory());
  if (!arena.allocate(arenaBytes))
    return Status(MIXPREC_OUT_OF_MEMORY, "CPU backend: cannot allocate the " +
                                             std::to_string(arenaBytes) + "-byte arena");
  // Zeroed, so a plan that reads memory before writing it is at least
  // deterministic.
  std::memset(arena.data(), 0, arenaBytes);

  // Registers stay below ~32 MB even for the longest program allowed.
  pieceCapacity = longest <= 4096 ? 512 : 128;
  // Rows of row-reduction kernels (LayerNorm's 768, softmax's) in one piece
  // where they fit 4096 points and the registers stay within 32 MB.
  rowCapacity = pieceCapacity;
  for (const KernelPlan &k : kernels)
    if (k.reductionPasses > 0) {
      int64_t points = 1;
      for (int64_t d : k.rowDims)
        points *= d;
      if (points <= 4096 && int64_t(longest) * ((points + 63) / 64 * 64) * 4 <= (32 << 20))
        rowCapacity = std::max(rowCapacity, (points + 63) / 64 * 64);
    }
  registerStride = std::max(pieceCapacity, rowCapacity);
  pool = std::make_unique<ThreadPool>(options.numThreads > 0 ? options.numThreads
                                                             : ThreadPool::defaultThreads());
  workers.resize(pool->size());
  if (const char *points = std::getenv("MIXPREC_CPU_PARALLEL_POINTS"))
    parallelPoints = std::max<int64_t>(std::atoll(points), 1);
  for (Worker &w : workers) {
    w.registers.assign(longest * registerStride, 0.0f);
    w.rowValue.assign(longest * kMaxGroupRows, 0.0f);
    w.values.assign(longest, nullptr);
    w.rowLanes.assign(longest * kMaxGroupRows * kReductionLanes, 0.0f);
    w.rowPosition.assign(longest * kMaxGroupRows, 0);
    w.gathered.assign(4 * kMaxGroupRows, 0.0f);
    w.amaxValue.assign(longest, 0.0f);
  }

  // GEMM steps on oneDNN where it takes them, their weights packed now.
  if (options.cpuGemms)
    if (Status s = dnnl.prepare(
            *module, [&](int32_t t) { return tensorData(t); }, pool.get());
        !s.ok())
      return s;
  // Narrow activations only those GEMMs read, stored widened by the kernels
  // that write them: where that takes no more than the arena again and the
  // session's memory allows (else narrow; a training step's activations
  // saved for its backward GEMMs would take up to 4x their FP8 bytes).
  // (A quantize kernel in its GEMM's epilogue stores its output all the
  // same, wide where that is.)
  std::vector<uint8_t> inConvolution(fusedSteps.size());
  for (size_t i = 0; i < fusedSteps.size(); ++i)
    inConvolution[i] = fusedSteps[i] == FusedInto::Convolution;
  wideStore =
      options.cpuGemms ? findWideStorage(*module, kernels, inConvolution, dnnl) : WideStorage();
  wideStore.offset.resize(module->tensors().size(), -1);
  const uint64_t wideBytes = static_cast<uint64_t>(wideStore.bytes);
  const bool wideFits =
      wideBytes <= arenaBytes &&
      (!options.maxMemoryBytes || arenaBytes + im2colBytes + wideBytes <= options.maxMemoryBytes);
  if (wideBytes && (!wideFits || !cpu::fitsInMemory(arenaBytes + wideBytes, im2colBytes) ||
                    !wideBuffer.allocate(wideBytes)))
    wideStore = WideStorage{std::vector<int64_t>(module->tensors().size(), -1), {}, 0};
  if (wideStore.bytes) {
    std::memset(wideBuffer.data(), 0, wideStore.bytes);
    for (KernelPlan &k : kernels)
      for (KernelPlan::Access &a : k.accesses)
        if ((a.wide = wideStore.offset[a.tensor] >= 0))
          a.wideType = wideStore.type[a.tensor];
  }
  // 32-bit BLAS: refuse now what cpu::detail::sgemm could not pass on.
  for (const GemmDesc &g : module->gemms()) {
    const bool tall = g.batch == 1 || (g.strideB == 0 && g.strideA == g.m * g.k);
    const int64_t rows = tall ? g.batch * g.m : g.m;
    if (rows > INT_MAX || g.n > INT_MAX || g.k > INT_MAX)
      return Status(MIXPREC_UNIMPLEMENTED,
                    g.name + ": dimensions beyond the CPU backend's 32-bit BLAS limit");
  }
  // GEMM biases and routine operands that are constants of a narrow dtype,
  // decoded to FP32 now rather than in every run.
  auto decodeOnce = [&](int32_t t) {
    const TensorDesc &d = module->tensors()[t];
    using schema::DType;
    const bool narrowFloat = d.dtype == DType::F16 || d.dtype == DType::BF16 ||
                             d.dtype == DType::F8E4M3FN || d.dtype == DType::F8E5M2;
    if (!d.isConstant() || !narrowFloat || decodedConstants.count(t))
      return;
    std::vector<float> &out = decodedConstants[t];
    out.resize(static_cast<size_t>(d.elements));
    loadRun(d.dtype, tensorData(t), 0, 1, d.elements, out.data());
  };
  for (const GemmDesc &g : module->gemms())
    if (g.bias != -1)
      decodeOnce(g.bias);
  for (size_t i = 0; i < module->routines().size(); ++i)
    if (!dnnlConvs.handles(i)) // oneDNN's convolutions packed theirs
      for (int32_t t : module->routines()[i].inputs)
        if (t >= 0)
          decodeOnce(t);
  if (const char *on = std::getenv("MIXPREC_CPU_PROFILE"); on && *on && std::strcmp(on, "0")) {
    for (size_t i = 0; steps && i < steps->size(); ++i) {
      const schema::Step *step = steps->Get(i);
      std::string name;
      switch (step->kind()) {
      case schema::StepKind::Kernel:
        name = kernels[step->index()].name +
               (fusedSteps[i] == FusedInto::Convolution  ? " (in the convolution before)"
                : fusedSteps[i] == FusedInto::KernelAmax ? " (in the kernel before)"
                : fusedSteps[i] != FusedInto::None       ? " (in the GEMM before)"
                                                         : "");
        break;
      case schema::StepKind::Gemm:
        name = module->gemms()[step->index()].name;
        if (!options.cpuGemms || !dnnl.handles(step->index()))
          name += " (OpenBLAS: " + dnnl.reason(step->index()) + ")";
        else if (!dnnl.ownKernel(step->index()))
          name += std::string(" (oneDNN, ") + dtypeName(dnnl.computeType(step->index())) + ")";
        else if (dnnl.packedWeightType(step->index()) == schema::DType::F32)
          name += " (own packed GEMM, f32)";
        else
          name += std::string(" (own packed GEMM, f32, ") +
                  dtypeName(dnnl.packedWeightType(step->index())) + " weight)";
        break;
      case schema::StepKind::Routine:
        name = module->routines()[step->index()].name;
        if (step->index() < convEpilogues.size() && convEpilogues[step->index()].kernelStep >= 0)
          name += convEpilogues[step->index()].addend >= 0 ? " + add + relu" : " + relu";
        if (dnnlConvs.winograd(step->index()))
          name += " on Winograd F(2x2,3x3)";
        if (convEpilogues.size() > step->index() && convEpilogues[step->index()].reluInPool >= 0)
          name += " (in the max pool after)";
        if (poolRelus[step->index()])
          name += " + relu";
        break;
      }
      profile.push_back(StepTime{name, 0.0});
    }
  }
  return okStatus();
}

Status CpuBackend::setInput(uint32_t tensor, const void *data, size_t bytes) {
  const TensorDesc &d = module->tensors()[tensor];
  if (d.isConstant() || bytes != d.bytes)
    return Status(MIXPREC_INTERNAL, "CPU backend: bad input binding for '" + d.name + "'");
  if (bytes)
    std::memcpy(arena.data() + d.offset, data, bytes);
  return okStatus();
}

Status CpuBackend::readTensor(uint32_t tensor, const void **data) {
  *data = tensorData(static_cast<int32_t>(tensor));
  return okStatus();
}

namespace {

/// Host memory standing in for device memory, so that applications use one
/// API whatever the backend.
class HostBuffer final : public DeviceBuffer {
public:
  bool allocate(size_t bytes, const void *owner) {
    if (!bytes_.allocate(bytes))
      return false;
    if (bytes)
      std::memset(bytes_.data(), 0, bytes);
    size_ = bytes;
    address_ = reinterpret_cast<uintptr_t>(bytes_.data());
    owner_ = owner;
    return true;
  }
  Status copyFromHost(size_t offset, const void *data, size_t bytes) override {
    if (bytes)
      std::memcpy(bytes_.data() + offset, data, bytes);
    return okStatus();
  }
  Status copyToHost(size_t offset, void *data, size_t bytes) const override {
    if (bytes)
      std::memcpy(data, bytes_.data() + offset, bytes);
    return okStatus();
  }

private:
  AlignedBytes bytes_;
};

} // namespace

Status CpuBackend::allocate(size_t bytes, std::shared_ptr<DeviceBuffer> &out) {
  auto buffer = std::make_shared<HostBuffer>();
  if (!buffer->allocate(bytes, this))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: cannot allocate a buffer of " + std::to_string(bytes) + " bytes");
  out = std::move(buffer);
  return okStatus();
}

/// Bound inputs are read from their buffers, bound outputs written to
/// theirs, then the state updated: the CPU backend runs at once, so wait()
/// has nothing left to do.
Status CpuBackend::launch(const Bindings &bindings) {
  const std::vector<uint32_t> &inputs = module->inputs(), &outputs = module->outputs();
  for (size_t i = 0; i < bindings.inputs.size(); ++i)
    if (const DeviceBuffer *b = bindings.inputs[i].get()) {
      const TensorDesc &d = module->tensors()[inputs[i]];
      if (Status s = b->copyToHost(0, arena.data() + d.offset, d.bytes); !s.ok())
        return s;
    }
  if (Status s = runSteps(); !s.ok())
    return s;
  for (size_t i = 0; i < bindings.outputs.size(); ++i)
    if (DeviceBuffer *b = bindings.outputs[i].get()) {
      const TensorDesc &d = module->tensors()[outputs[i]];
      if (Status s = b->copyFromHost(0, tensorData(outputs[i]), d.bytes); !s.ok())
        return s;
    }
  // Every step succeeded: each state takes its update (a failed run
  // returned above, leaving the state as it was). States share no bytes
  // with other states' updates (the loader checks), so order is free.
  for (const StateDesc &state : module->states())
    if (state.tensor != state.update && module->tensors()[state.tensor].bytes)
      std::memmove(tensorData(state.tensor), tensorData(state.update),
                   module->tensors()[state.tensor].bytes);
  return okStatus();
}

CpuBackend::~CpuBackend() {
  if (profile.empty())
    return;
  // MIXPREC_CPU_PROFILE: the steps by total time, each with its share.
  double total = 0;
  std::vector<size_t> order(profile.size());
  for (size_t i = 0; i < profile.size(); ++i) {
    order[i] = i;
    total += profile[i].seconds;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return profile[a].seconds > profile[b].seconds; });
  std::fprintf(
      stderr,
      "mixprec CPU profile: %d thread(s), %.3f ms in %lld runs (the first not "
      "counted) of %zu steps; %lld "
      "constant(s) decoded in runs, %lld weight(s) packed at load (GEMMs' %.1f MiB), %lld "
      "activation(s) kept in a convolution's layout, %lld narrow activation(s) stored widened, "
      "%lld quantize and %lld amax kernel(s) in their GEMM's epilogue, %lld quantize(s) "
      "stored in one pass\n",
      threads(), total * 1e3, static_cast<long long>(profileRuns), profile.size(),
      static_cast<long long>(weightDecodes),
      static_cast<long long>(dnnl.packsAtLoad() + dnnlConvs.packsAtLoad()),
      double(dnnl.packedBytes()) / (1 << 20), static_cast<long long>(keptLayoutTensors()),
      static_cast<long long>(wideTensors()), static_cast<long long>(fusedGemmQuantizes()),
      static_cast<long long>(fusedGemmAmaxes()), static_cast<long long>(quantizeStores()));
  for (size_t i : order)
    std::fprintf(stderr, "  %8.3f ms/run %5.1f%%  step #%zu %s\n",
                 profile[i].seconds * 1e3 / std::max<int64_t>(profileRuns, 1),
                 total > 0 ? 100.0 * profile[i].seconds / total : 0.0, i, profile[i].name.c_str());
}

Status CpuBackend::runSteps() {
  if (options.numThreads > 0)
    ThreadPool::setOpenMpThreads(options.numThreads);
  const auto *steps = module->root().steps();
  // The first run is not profiled: it pays for oneDNN's kernels compiled
  // on first use and the first touch of the session's buffers.
  const bool profiling = !profile.empty() && warmedUp;
  warmedUp = true;
  profileRuns += profiling;
  for (size_t i = 0; steps && i < steps->size(); ++i) {
    if (fusedSteps[i] != FusedInto::None)
      continue; // computed by the convolution or GEMM before it
    const schema::Step *step = steps->Get(i);
    const auto start =
        profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status s;
    switch (step->kind()) {
    case schema::StepKind::Kernel:
      s = runKernel(kernels[step->index()]);
      break;
    case schema::StepKind::Gemm:
      s = runGemm(module->gemms()[step->index()]);
      break;
    case schema::StepKind::Routine:
      s = runRoutine(module->routines()[step->index()]);
      break;
    }
    if (!s.ok())
      return s.withContext("step #" + std::to_string(i) + ": ");
    if (profiling)
      profile[i].seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return okStatus();
}

Status createCpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options,
                        std::unique_ptr<Backend> &out) {
  std::unique_ptr<CpuBackend> backend(new CpuBackend(std::move(module), options));
  if (Status s = backend->prepare(); !s.ok())
    return s;
  out = std::move(backend);
  return okStatus();
}

} // namespace mixprec::runtime
