//===- CudaGemm.cpp - a module's GEMM steps on cuBLASLt -------------------===//
//
// prepare(): 1. a GemmPlan per step (GemmPlan.h), refusing what cuBLASLt
// cannot compute as the CPU backend does; 2. device memory: one workspace
// (kWorkspaceBytes, 32 MiB as cuBLASLt on Hopper likes) shared by the steps,
// which one stream runs one after the other, and a scratch buffer of
// 256-byte aligned slots, one per FP8 step (its scale reciprocals) and per
// one-element bias (expanded to n values); 3. descriptors per step, the
// algorithm per distinct plan from cublasLtMatmulAlgoGetHeuristic, kept in a
// map keyed by the plan. run(): the helper kernels a step needs, then
// cublasLtMatmul, on the caller's stream, never synchronizing.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/CudaGemm.h"

#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/CudaDriver.h"
#include "runtime/src/backends/cuda/GemmDescriptors.h"
#include "runtime/src/backends/cuda/GemmKernels.h"
#include "runtime/src/backends/cuda/GemmPlan.h"

#include <map>
#include <optional>

namespace mixprec::runtime::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// The alignment the algorithms are chosen for, and that run() checks.
constexpr uint32_t kPointerAlignment = 16;
/// Scratch slots are this far apart (cuMemAlloc's own alignment).
constexpr uint64_t kSlotAlignment = 256;
/// The lowest compute capability with FP8 tensor cores (Ada).
constexpr int kMinFp8Sm = 89;

/// The status of a failed driver call: "<step>: <what>: <error name>".
Status driverError(const Driver &driver, CUresult result, const std::string &step,
                   const std::string &what) {
  const char *name = "unknown CUresult";
  driver.api.cuGetErrorName(result, &name);
  return Status(result == CUDA_ERROR_OUT_OF_MEMORY ? MIXPREC_OUT_OF_MEMORY
                                                   : MIXPREC_EXECUTION_ERROR,
                "CUDA backend: " + step + ": " + what + ": " + name);
}

/// One prepared step.
struct Step {
  GemmPlan plan;
  std::unique_ptr<GemmDescriptors> descriptors;
  const cublasLtMatmulHeuristicResult_t *algorithm = nullptr;
  /// Scratch offsets of the scale reciprocals and of the expanded bias,
  /// each in a slot of its own when the step has them.
  uint64_t scalesSlot = 0, biasSlot = 0;
  int64_t biasCount = 0; ///< elements of an expanded bias (0: none)
};

class LtGemmRunner final : public GemmRunner {
public:
  LtGemmRunner(std::vector<GemmDesc> gemms, std::vector<TensorDesc> tensors,
               const Driver &driver, const CublasLt &lt, cublasLtHandle_t handle)
      : gemms_(std::move(gemms)), tensors_(std::move(tensors)), driver_(driver), lt_(lt),
        handle_(handle) {}
  ~LtGemmRunner() override;

  Status prepare() override;
  Status run(size_t index, const GemmPointers &pointers, CUstream stream) override;

private:
  Status prepareOnce();
  Status planSteps();
  Status allocate();
  Status loadKernels();
  Status prepareStep(size_t index);
  Status chooseAlgorithm(size_t index);
  Status checkPointers(size_t index, const GemmPointers &p) const;
  Status launchHelpers(size_t index, const GemmPointers &p, CUstream stream);
  Status zeroOutput(size_t index, CUdeviceptr out, CUstream stream);
  Status launch(size_t index, CUfunction function, unsigned blocks, unsigned threads,
                void **args, CUstream stream);

  std::vector<GemmDesc> gemms_;
  std::vector<TensorDesc> tensors_;
  const Driver &driver_;
  const CublasLt &lt_;
  cublasLtHandle_t handle_;
  std::vector<Step> steps_;
  std::map<GemmPlan, cublasLtMatmulHeuristicResult_t> algorithms_;
  CUdeviceptr workspace_ = 0, scratch_ = 0;
  CUmodule kernels_ = nullptr;
  CUfunction reciprocals_ = nullptr, fill16_ = nullptr, fill32_ = nullptr;
  std::optional<Status> prepareStatus_;
};

LtGemmRunner::~LtGemmRunner() {
  steps_.clear(); // descriptors before the handle
  if (kernels_)
    driver_.api.cuModuleUnload(kernels_);
  for (CUdeviceptr p : {workspace_, scratch_})
    if (p)
      driver_.api.cuMemFree(p);
  lt_.api.cublasLtDestroy(handle_);
}

/// Plans every step and lays out their scratch slots.
Status LtGemmRunner::planSteps() {
  steps_.clear();
  steps_.resize(gemms_.size());
  uint64_t scratchBytes = 0;
  for (size_t i = 0; i < gemms_.size(); ++i) {
    Step &step = steps_[i];
    const GemmDesc &g = gemms_[i];
    if (Status s = planGemm(g, tensors_, step.plan); !s.ok())
      return s;
    if (step.plan.mode != GemmMode::Matmul)
      continue;
    if (step.plan.fp8Scales && driver_.smVersion < kMinFp8Sm)
      return Status(MIXPREC_UNIMPLEMENTED,
                    "CUDA backend: " + g.name + ": FP8 GEMMs need sm_" +
                        std::to_string(kMinFp8Sm) + " or newer; the device is sm_" +
                        std::to_string(driver_.smVersion));
    // Reserves `bytes` of scratch in a slot of its own; returns its offset.
    auto reserve = [&](uint64_t bytes) {
      const uint64_t at = scratchBytes;
      scratchBytes += (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
      return at;
    };
    if (step.plan.fp8Scales)
      step.scalesSlot = reserve(kGemmScaleStride + sizeof(float));
    if (step.plan.bias == GemmBias::Scalar) {
      step.biasCount = g.n;
      step.biasSlot = reserve(g.n * dtypeSize(tensors_[g.bias].dtype));
    }
  }
  if (scratchBytes) {
    if (CUresult r = driver_.api.cuMemAlloc(&scratch_, scratchBytes); r != CUDA_SUCCESS)
      return driverError(driver_, r, "GEMM steps",
                         "allocating " + std::to_string(scratchBytes) + " bytes of scratch");
  }
  return okStatus();
}

/// The workspace, when some step calls cuBLASLt.
Status LtGemmRunner::allocate() {
  for (const Step &step : steps_)
    if (step.plan.mode == GemmMode::Matmul) {
      if (CUresult r = driver_.api.cuMemAlloc(&workspace_, kWorkspaceBytes); r != CUDA_SUCCESS)
        return driverError(driver_, r, "GEMM steps", "allocating the 32 MiB cuBLASLt workspace");
      return okStatus();
    }
  return okStatus();
}

/// Loads GemmKernels.h's PTX when a step needs one of its kernels.
Status LtGemmRunner::loadKernels() {
  bool needed = false;
  for (const Step &step : steps_)
    needed |= step.plan.fp8Scales || step.biasCount > 0;
  if (!needed)
    return okStatus();
  const DriverSymbols &api = driver_.api;
  if (CUresult r = api.cuModuleLoadData(&kernels_, kGemmKernelsPtx); r != CUDA_SUCCESS)
    return driverError(driver_, r, "GEMM steps", "loading the GEMM helper kernels (PTX)");
  for (auto [name, function] : {std::pair{kGemmReciprocalsKernel, &reciprocals_},
                                std::pair{kGemmFill16Kernel, &fill16_},
                                std::pair{kGemmFill32Kernel, &fill32_}})
    if (CUresult r = api.cuModuleGetFunction(function, kernels_, name); r != CUDA_SUCCESS)
      return driverError(driver_, r, "GEMM steps", std::string("finding kernel ") + name);
  return okStatus();
}

/// Builds step `index`'s descriptors and sets the pointers known now (the
/// FP8 scale reciprocals' slot).
Status LtGemmRunner::prepareStep(size_t index) {
  Step &step = steps_[index];
  const std::string &name = gemms_[index].name;
  step.descriptors = std::make_unique<GemmDescriptors>(lt_);
  if (Status s = step.descriptors->build(step.plan, name); !s.ok())
    return s;
  cublasLtMatmulDesc_t desc = step.descriptors->matmul;
  const CublasLtSymbols &api = lt_.api;
  if (step.plan.fp8Scales) {
    // cuBLASLt's A is the step's b: its scale is the slot's first float.
    const void *aScale = reinterpret_cast<const void *>(scratch_ + step.scalesSlot);
    const void *bScale =
        reinterpret_cast<const void *>(scratch_ + step.scalesSlot + kGemmScaleStride);
    if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &aScale, sizeof(aScale));
        s != CUBLAS_STATUS_SUCCESS)
      return cublasLtError(lt_, s, name, "setting A_SCALE_POINTER");
    if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bScale, sizeof(bScale));
        s != CUBLAS_STATUS_SUCCESS)
      return cublasLtError(lt_, s, name, "setting B_SCALE_POINTER");
  }
  if (step.plan.bias == GemmBias::Vector || step.plan.bias == GemmBias::Scalar) {
    // The heuristic reads the bias pointer's alignment: the slot's for an
    // expanded bias; for the tensor's, an address aligned exactly as run()
    // requires, so any pointer run() accepts suits the algorithm.
    const void *bias = step.plan.bias == GemmBias::Scalar
                           ? reinterpret_cast<const void *>(scratch_ + step.biasSlot)
                           : reinterpret_cast<const void *>(uintptr_t(kPointerAlignment));
    if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
        s != CUBLAS_STATUS_SUCCESS)
      return cublasLtError(lt_, s, name, "setting BIAS_POINTER");
  }
  return chooseAlgorithm(index);
}

/// The algorithm of step `index`'s plan: cached, else cuBLASLt's first
/// heuristic choice for the workspace and alignment run() guarantees.
Status LtGemmRunner::chooseAlgorithm(size_t index) {
  Step &step = steps_[index];
  if (auto it = algorithms_.find(step.plan); it != algorithms_.end()) {
    step.algorithm = &it->second;
    return okStatus();
  }
  const std::string &name = gemms_[index].name;
  const CublasLtSymbols &api = lt_.api;
  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasStatus_t s = api.cublasLtMatmulPreferenceCreate(&preference);
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(lt_, s, name, "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  cublasStatus_t s = api.cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  for (auto attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (s == CUBLAS_STATUS_SUCCESS)
      s = api.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &kPointerAlignment,
                                                   sizeof(kPointerAlignment));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS) {
    const GemmDescriptors &d = *step.descriptors;
    s = api.cublasLtMatmulAlgoGetHeuristic(handle_, d.matmul, d.a, d.b, d.c, d.d, preference, 1,
                                           &result, &found);
  }
  api.cublasLtMatmulPreferenceDestroy(preference);
  if (s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(lt_, s, name, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    return Status(MIXPREC_UNIMPLEMENTED,
                  "CUDA backend: " + name + ": cuBLASLt has no algorithm for this GEMM on sm_" +
                      std::to_string(driver_.smVersion));
  step.algorithm = &algorithms_.emplace(step.plan, result).first->second;
  return okStatus();
}

Status LtGemmRunner::prepare() {
  // Once: a second call returns the first one's status (and allocates
  // nothing again).
  if (!prepareStatus_)
    prepareStatus_ = prepareOnce();
  return *prepareStatus_;
}

Status LtGemmRunner::prepareOnce() {
  if (Status s = planSteps(); !s.ok())
    return s;
  if (Status s = allocate(); !s.ok())
    return s;
  if (Status s = loadKernels(); !s.ok())
    return s;
  for (size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].plan.mode == GemmMode::Matmul)
      if (Status s = prepareStep(i); !s.ok())
        return s;
  return okStatus();
}

/// Every pointer step `index` reads or writes is set and aligned as the
/// algorithm was chosen for.
Status LtGemmRunner::checkPointers(size_t index, const GemmPointers &p) const {
  const GemmPlan &plan = steps_[index].plan;
  // The scales are read by the reciprocal kernel only: float alignment.
  struct Use {
    const char *role;
    CUdeviceptr pointer;
    bool used;
    uint32_t alignment;
  } uses[] = {{"a", p.a, true, kPointerAlignment},
              {"b", p.b, true, kPointerAlignment},
              {"out", p.out, true, kPointerAlignment},
              {"bias", p.bias, plan.bias != GemmBias::None, kPointerAlignment},
              {"a_scale", p.aScale, plan.fp8Scales, sizeof(float)},
              {"b_scale", p.bScale, plan.fp8Scales, sizeof(float)}};
  for (const Use &u : uses) {
    if (!u.used)
      continue;
    if (u.pointer == 0)
      return Status(MIXPREC_INVALID_ARGUMENT,
                    "CUDA backend: " + gemms_[index].name + ": no device address for " + u.role);
    if (u.pointer % u.alignment)
      return Status(MIXPREC_INVALID_ARGUMENT,
                    "CUDA backend: " + gemms_[index].name + ": " + u.role + " is not " +
                        std::to_string(u.alignment) + "-byte aligned (address " +
                        std::to_string(u.pointer) + ")");
  }
  return okStatus();
}

Status LtGemmRunner::launch(size_t index, CUfunction function, unsigned blocks,
                            unsigned threads, void **args, CUstream stream) {
  if (CUresult r = driver_.api.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream,
                                              args, nullptr);
      r != CUDA_SUCCESS)
    return driverError(driver_, r, gemms_[index].name, "launching a GEMM helper kernel");
  return okStatus();
}

/// Launches the kernels that fill step `index`'s scratch slots, if any.
Status LtGemmRunner::launchHelpers(size_t index, const GemmPointers &p, CUstream stream) {
  const Step &step = steps_[index];
  if (step.plan.fp8Scales) {
    // slot[0] = 1/b_scale (cuBLASLt's A), slot[kGemmScaleStride] = 1/a_scale.
    CUdeviceptr x = p.bScale, y = p.aScale, out = scratch_ + step.scalesSlot;
    void *args[] = {&x, &y, &out};
    if (Status s = launch(index, reciprocals_, 1, 1, args, stream); !s.ok())
      return s;
  }
  if (step.biasCount > 0) {
    CUdeviceptr src = p.bias, dst = scratch_ + step.biasSlot;
    uint64_t count = static_cast<uint64_t>(step.biasCount);
    void *args[] = {&src, &dst, &count};
    const bool wide = step.plan.biasType == CUDA_R_32F;
    const unsigned blocks = static_cast<unsigned>((count + kGemmFillBlock - 1) / kGemmFillBlock);
    if (Status s = launch(index, wide ? fill32_ : fill16_, blocks, kGemmFillBlock, args, stream);
        !s.ok())
      return s;
  }
  return okStatus();
}

/// Writes step `index`'s k = 0 result, all zeros, batch by batch unless
/// the batches are dense.
Status LtGemmRunner::zeroOutput(size_t index, CUdeviceptr out, CUstream stream) {
  const GemmPlan &plan = steps_[index].plan;
  if (out == 0)
    return Status(MIXPREC_INVALID_ARGUMENT,
                  "CUDA backend: " + gemms_[index].name + ": no device address for out");
  const bool dense = plan.zeroStride == plan.zeroBytes;
  const int64_t calls = dense ? 1 : plan.zeroBatches;
  const size_t bytes = dense ? plan.zeroBatches * plan.zeroBytes : plan.zeroBytes;
  for (int64_t i = 0; i < calls; ++i)
    if (CUresult r = driver_.api.cuMemsetD8Async(out + i * plan.zeroStride, 0, bytes, stream);
        r != CUDA_SUCCESS)
      return driverError(driver_, r, gemms_[index].name, "zeroing the output (k = 0)");
  return okStatus();
}

Status LtGemmRunner::run(size_t index, const GemmPointers &p, CUstream stream) {
  if (!prepareStatus_ || !prepareStatus_->ok())
    return Status(MIXPREC_FAILED_PRECONDITION,
                  "CUDA backend: GEMM steps run before a successful prepare()");
  if (index >= steps_.size())
    return Status(MIXPREC_INVALID_ARGUMENT, "CUDA backend: no gemm #" + std::to_string(index) +
                                                " (" + std::to_string(steps_.size()) +
                                                " Gemm steps)");
  const Step &step = steps_[index];
  const GemmPlan &plan = step.plan;
  const std::string &name = gemms_[index].name;
  if (plan.mode == GemmMode::Empty)
    return okStatus();
  if (plan.mode == GemmMode::Zero)
    return zeroOutput(index, p.out, stream);
  if (Status s = checkPointers(index, p); !s.ok())
    return s;
  if (Status s = launchHelpers(index, p, stream); !s.ok())
    return s;
  const CublasLtSymbols &api = lt_.api;
  const GemmDescriptors &d = *step.descriptors;
  if (plan.bias == GemmBias::Vector) {
    const void *bias = reinterpret_cast<const void *>(p.bias);
    if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(
            d.matmul, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
        s != CUBLAS_STATUS_SUCCESS)
      return cublasLtError(lt_, s, name, "setting BIAS_POINTER");
  }
  const float alpha = 1.0f, beta = plan.beta;
  // The step's b is cuBLASLt's A, its a cuBLASLt's B; C is the bias for a
  // Matrix bias (beta 1), else D itself (beta 0).
  const CUdeviceptr c = plan.bias == GemmBias::Matrix ? p.bias : p.out;
  if (cublasStatus_t s = api.cublasLtMatmul(
          handle_, d.matmul, &alpha, reinterpret_cast<const void *>(p.b), d.a,
          reinterpret_cast<const void *>(p.a), d.b, &beta, reinterpret_cast<const void *>(c),
          d.c, reinterpret_cast<void *>(p.out), d.d, &step.algorithm->algo,
          reinterpret_cast<void *>(workspace_), step.algorithm->workspaceSize,
          reinterpret_cast<cudaStream_t>(stream));
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(lt_, s, name, "cublasLtMatmul");
  return okStatus();
}

} // namespace

Status createGemmRunner(std::vector<GemmDesc> gemms, std::vector<TensorDesc> tensors,
                        const Driver &driver, const CublasLt &lt,
                        std::unique_ptr<GemmRunner> &out) {
  // What cuBLASLt cannot run (dtypes, layouts, epilogues) is refused, naming
  // the step, before any library call: also where cuBLASLt cannot start.
  for (const GemmDesc &g : gemms) {
    GemmPlan plan;
    if (Status s = planGemm(g, tensors, plan); !s.ok())
      return s;
  }
  cublasLtHandle_t handle = nullptr;
  if (cublasStatus_t s = lt.api.cublasLtCreate(&handle); s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(lt, s, "GEMM steps", "cublasLtCreate");
  out = std::make_unique<LtGemmRunner>(std::move(gemms), std::move(tensors), driver, lt, handle);
  return okStatus();
}

Status createGemmRunner(std::shared_ptr<const LoadedModule> module, const Driver &driver,
                        const CublasLt &lt, std::unique_ptr<GemmRunner> &out) {
  return createGemmRunner(module->gemms(), module->tensors(), driver, lt, out);
}

} // namespace mixprec::runtime::cuda
