//===- CudaBackend.cpp - sessions on device 0: program, memory, buffers ---===//
//
// CudaBackend.h says how a session is laid out. Everything the module's
// CUDA tables say is checked here before it is used (Module.cpp's loader
// verifies the rest of the module; these tables are read raw), so a
// malformed launch is a status, never a wild pointer handed to the driver.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/CudaBackend.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace mixprec::runtime {
namespace cuda {

namespace {

/// Device allocations are aligned to this (as the plan's arena offsets).
constexpr uint64_t kAlignment = kArenaAlignment;

uint64_t alignUp(uint64_t value) { return (value + kAlignment - 1) / kAlignment * kAlignment; }

Status failedPrecondition(const std::string &message) {
  return Status(MIXPREC_FAILED_PRECONDITION, "CUDA backend: " + message);
}

/// Whether MIXPREC_CUDA_GRAPHS turns graph replay off for every session.
bool graphsDisabledByEnvironment() {
  const char *value = std::getenv("MIXPREC_CUDA_GRAPHS");
  return value && std::strcmp(value, "0") == 0;
}

/// Device memory handed to the application.
class CudaBuffer final : public DeviceBuffer {
public:
  CudaBuffer(std::shared_ptr<Context> context, CUdeviceptr pointer, size_t bytes,
             const void *owner)
      : context(std::move(context)) {
    size_ = bytes;
    address_ = pointer;
    owner_ = owner;
  }
  ~CudaBuffer() override {
    if (context->makeCurrent().ok())
      context->driver.api.cuMemFree(address_);
  }
  // On the legacy default stream, which waits for the sessions' (blocking)
  // streams: a copy sees every run enqueued before it.
  Status copyFromHost(size_t offset, const void *data, size_t bytes) override {
    if (Status s = context->makeCurrent(); !s.ok())
      return s;
    const DriverSymbols &api = context->driver.api;
    if (CUresult r = api.cuMemcpyHtoDAsync(address_ + offset, data, bytes, nullptr);
        r != CUDA_SUCCESS)
      return cudaError(context->driver, r, "copying to a device buffer");
    if (CUresult r = api.cuStreamSynchronize(nullptr); r != CUDA_SUCCESS)
      return cudaError(context->driver, r, "copying to a device buffer");
    return okStatus();
  }
  Status copyToHost(size_t offset, void *data, size_t bytes) const override {
    if (Status s = context->makeCurrent(); !s.ok())
      return s;
    const DriverSymbols &api = context->driver.api;
    if (CUresult r = api.cuMemcpyDtoHAsync(data, address_ + offset, bytes, nullptr);
        r != CUDA_SUCCESS)
      return cudaError(context->driver, r, "copying from a device buffer");
    if (CUresult r = api.cuStreamSynchronize(nullptr); r != CUDA_SUCCESS)
      return cudaError(context->driver, r, "copying from a device buffer");
    return okStatus();
  }

private:
  std::shared_ptr<Context> context;
};

} // namespace

Status cudaError(const Driver &driver, CUresult result, const std::string &what,
                 mixprec_status_code_t code) {
  const char *name = nullptr, *text = nullptr;
  if (driver.api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (driver.api.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string error = name ? name : "CUresult " + std::to_string(result);
  if (text)
    error += std::string(" (") + text + ")";
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    code = MIXPREC_OUT_OF_MEMORY;
  return Status(code, "CUDA backend: " + what + ": " + error);
}

Status Context::makeCurrent() const {
  if (CUresult r = driver.api.cuCtxSetCurrent(context); r != CUDA_SUCCESS)
    return cudaError(driver, r, "making device 0's context current", MIXPREC_INTERNAL);
  return okStatus();
}

Status Context::allocate(size_t bytes, const std::string &what, CUdeviceptr &out) const {
  CUresult r = driver.api.cuMemAlloc(&out, bytes ? bytes : 1);
  if (r == CUDA_SUCCESS)
    return okStatus();
  if (r != CUDA_ERROR_OUT_OF_MEMORY)
    return cudaError(driver, r, "cannot allocate " + what, MIXPREC_INTERNAL);
  size_t free = 0, total = 0;
  std::string room = driver.api.cuMemGetInfo(&free, &total) == CUDA_SUCCESS
                         ? std::to_string(free) + " bytes free of " + std::to_string(total)
                         : "free memory unknown";
  return Status(MIXPREC_OUT_OF_MEMORY, "CUDA backend: cannot allocate " + what + " of " +
                                           std::to_string(bytes) + " bytes on device 0 (" +
                                           driver.deviceName + "): " + room);
}

CudaBackend::~CudaBackend() {
  if (!context || !context->makeCurrent().ok())
    return;
  if (stream_)
    api.cuStreamSynchronize(stream_);
  dropGraph();
  gemms.reset();
  if (arena)
    api.cuMemFree(arena);
  if (constants)
    api.cuMemFree(constants);
  if (errorRecord)
    api.cuMemFree(errorRecord);
  if (program)
    api.cuModuleUnload(program);
  if (stream_)
    api.cuStreamDestroy(stream_);
}

Status CudaBackend::makeContext() {
  CUdevice device = 0;
  if (CUresult r = api.cuDeviceGet(&device, 0); r != CUDA_SUCCESS)
    return cudaError(driver, r, "cuDeviceGet(0)", MIXPREC_NO_DEVICE);
  CUcontext primary = nullptr;
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&primary, device); r != CUDA_SUCCESS)
    return cudaError(driver, r, "cannot retain device 0's primary context", MIXPREC_NO_DEVICE);
  context = std::make_shared<Context>(driver, device, primary);
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  if (CUresult r = api.cuStreamCreate(&stream_, CU_STREAM_DEFAULT); r != CUDA_SUCCESS)
    return cudaError(driver, r, "cannot create a stream", MIXPREC_INTERNAL);
  return okStatus();
}

/// The CUBIN when it was built for this device, else the PTX.
Status CudaBackend::loadProgram() {
  const schema::CudaProgram &code = *module->root().cuda();
  const int built = code.sm_version(), device = driver.smVersion;
  const std::string target = "sm_" + std::to_string(device);
  const std::string compiled = "sm_" + std::to_string(built);
  bool needed = false;
  if (const auto *kernels = module->root().kernels())
    for (const schema::Kernel *k : *kernels)
      needed |= k->cuda() && k->cuda()->grid_size() > 0;
  const bool hasCubin = code.cubin() && code.cubin()->size() > 0;
  const bool hasPtx = code.ptx() && code.ptx()->size() > 0;
  if (!needed && !hasCubin && !hasPtx)
    return okStatus(); // GEMMs and routines only
  if (built > device)
    return failedPrecondition("the module was compiled for " + compiled + ", newer than this " +
                              target + " device (" + driver.deviceName +
                              "): compile it with --arch " + target);
  const void *image = nullptr;
  std::string what;
  if (built == device && hasCubin) {
    image = code.cubin()->data();
    what = "the module's CUBIN for " + compiled;
  } else if (hasPtx) {
    image = code.ptx()->c_str();
    what = "the module's PTX for " + compiled + " on this " + target + " device";
  } else {
    return failedPrecondition("module compiled for " + compiled + " has no PTX for this " +
                              target + " device (" + driver.deviceName +
                              "): compile it with --arch " + target);
  }
  if (CUresult r = api.cuModuleLoadData(&program, image); r != CUDA_SUCCESS)
    return cudaError(driver, r, "cannot load " + what, MIXPREC_FAILED_PRECONDITION);
  return okStatus();
}

/// Every kernel's launch (Kernel.cuda, which the loader verified:
/// LoadedModule::cudaLaunches), resolved once.
/// `desc` as a launch named `name`: its function found in the program.
Status CudaBackend::makeLaunch(const CudaLaunchDesc &desc, const std::string &name,
                               Launch &launch) {
  launch.name = name;
  launch.grid = static_cast<unsigned>(desc.gridSize);
  launch.block = static_cast<unsigned>(desc.blockSize);
  launch.zeroed = desc.zeroed;
  for (int32_t t : desc.params)
    launch.params.push_back(pointers[t]);
  if (desc.errorRecord)
    launch.params.push_back(errorRecord);
  launch.tensors = desc.params;
  if (launch.grid > 0)
    if (CUresult r = api.cuModuleGetFunction(&launch.function, program, desc.function.c_str());
        r != CUDA_SUCCESS)
      return cudaError(driver, r,
                       launch.name + ": the module's program has no function '" +
                           desc.function + "'",
                       MIXPREC_INVALID_MODULE);
  return okStatus();
}

Status CudaBackend::prepareLaunches() {
  const std::vector<CudaLaunchDesc> &descs = module->cudaLaunches();
  for (size_t i = 0; i < descs.size(); ++i) {
    Launch launch;
    if (Status s = makeLaunch(descs[i], module->kernelName(i), launch); !s.ok())
      return s;
    launches.push_back(std::move(launch));
  }
  // Routine kernels after the kernels' (a kernel step's index is its
  // launch's).
  const std::vector<std::optional<CudaLaunchDesc>> &routines = module->routineCudaLaunches();
  routineLaunches.assign(module->routines().size(), -1);
  for (size_t i = 0; i < routines.size(); ++i) {
    if (!routines[i])
      continue;
    Launch launch;
    if (Status s = makeLaunch(*routines[i], module->routines()[i].name, launch); !s.ok())
      return s;
    routineLaunches[i] = static_cast<int64_t>(launches.size());
    launches.push_back(std::move(launch));
  }
  // Addresses of the parameters, now that no vector moves any more.
  for (Launch &launch : launches)
    for (CUdeviceptr &p : launch.params)
      launch.args.push_back(&p);
  return okStatus();
}

/// The arena and the constants block, laid out as the plan says.
Status CudaBackend::allocateMemory() {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const uint64_t arenaBytes = module->arenaBytesNeeded();
  std::vector<uint64_t> constantOffsets;
  uint64_t constantBytes = 0;
  for (const TensorDesc &t : tensors) {
    if (!t.isConstant())
      continue;
    if (constantOffsets.size() <= static_cast<size_t>(t.constantIndex))
      constantOffsets.resize(t.constantIndex + 1, UINT64_MAX);
    if (constantOffsets[t.constantIndex] == UINT64_MAX) {
      constantOffsets[t.constantIndex] = constantBytes;
      constantBytes = alignUp(constantBytes + t.bytes);
    }
  }
  if (options.maxMemoryBytes && (arenaBytes > options.maxMemoryBytes ||
                                 constantBytes > options.maxMemoryBytes - arenaBytes))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CUDA backend: the module needs a " + std::to_string(arenaBytes) +
                      "-byte arena and " + std::to_string(constantBytes) +
                      " bytes of constants, beyond the session's max_memory_bytes (" +
                      std::to_string(options.maxMemoryBytes) + ")");
  if (Status s = context->allocate(arenaBytes, "the arena", arena); !s.ok())
    return s;
  if (Status s = context->allocate(constantBytes, "the constants", constants); !s.ok())
    return s;
  const std::vector<std::optional<CudaLaunchDesc>> &routines = module->routineCudaLaunches();
  if (std::any_of(routines.begin(), routines.end(),
                  [](const auto &launch) { return launch && launch->errorRecord; })) {
    if (Status s = context->allocate(sizeof(MpErrorRecord), "the error record", errorRecord);
        !s.ok())
      return s;
    if (CUresult r = api.cuMemsetD8Async(errorRecord, 0, sizeof(MpErrorRecord), stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, "clearing the error record", MIXPREC_INTERNAL);
  }
  planned.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorDesc &t = tensors[i];
    planned[i] = t.isConstant() ? constants + constantOffsets[t.constantIndex] : arena + t.offset;
  }
  pointers = planned;
  // Zeroed like the CPU backend's arena: a plan that reads before it
  // writes is at least deterministic.
  if (CUresult r = api.cuMemsetD8Async(arena, 0, arenaBytes, stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, "clearing the arena", MIXPREC_INTERNAL);
  std::vector<bool> copied(constantOffsets.size(), false);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorDesc &t = tensors[i];
    if (!t.isConstant() || !t.bytes || copied[t.constantIndex])
      continue;
    copied[t.constantIndex] = true;
    if (CUresult r = api.cuMemcpyHtoDAsync(pointers[i], t.constantData, t.bytes, stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, "copying constant '" + t.name + "' to the device",
                       MIXPREC_INTERNAL);
  }
  if (CUresult r = api.cuStreamSynchronize(stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, "copying the constants to the device", MIXPREC_INTERNAL);
  return okStatus();
}

void CudaBackend::findExclusiveOutputs() {
  const std::vector<TensorDesc> &tensors = module->tensors();
  exclusive.assign(tensors.size(), false);
  auto activation = [&](size_t t) { return !tensors[t].isConstant() && tensors[t].bytes; };
  for (uint32_t out : module->outputs()) {
    if (!activation(out) ||
        std::find(module->inputs().begin(), module->inputs().end(), out) !=
            module->inputs().end())
      continue;
    const TensorDesc &o = tensors[out];
    bool alone = true;
    for (size_t u = 0; alone && u < tensors.size(); ++u)
      alone = u == out || !activation(u) || tensors[u].offset >= o.offset + o.bytes ||
              o.offset >= tensors[u].offset + tensors[u].bytes;
    exclusive[out] = alone;
  }
}

std::vector<size_t> hostRoutineSteps(const LoadedModule &module) {
  std::vector<size_t> out;
  const auto *steps = module.root().steps();
  for (size_t i = 0; steps && i < steps->size(); ++i)
    if (steps->Get(i)->kind() == schema::StepKind::Routine &&
        !module.routineCudaLaunches()[steps->Get(i)->index()])
      out.push_back(steps->Get(i)->index());
  return out;
}

std::string describeHostSteps(const LoadedModule &module, const std::vector<size_t> &steps) {
  std::vector<std::string> kinds;
  const auto *routines = module.root().routines();
  for (size_t index : steps) {
    const flatbuffers::String *type = routines->Get(index)->op_type();
    std::string name = type ? type->str() : "?";
    if (std::find(kinds.begin(), kinds.end(), name) == kinds.end())
      kinds.push_back(name);
  }
  std::string list;
  for (const std::string &k : kinds)
    list += (list.empty() ? "" : ", ") + k;
  return std::to_string(steps.size()) + " routine step" + (steps.size() == 1 ? "" : "s") + " (" +
         list + ") run on the host";
}

Status deviceErrorStatus(const LoadedModule &module, const MpErrorRecord &record) {
  const size_t routine = record.tag - 1;
  const std::vector<std::optional<CudaLaunchDesc>> &launches = module.routineCudaLaunches();
  const auto *steps = module.root().steps();
  size_t step = 0;
  while (steps && step < steps->size() &&
         !(steps->Get(step)->kind() == schema::StepKind::Routine &&
           steps->Get(step)->index() == routine))
    ++step;
  if (routine >= launches.size() || !launches[routine] || !launches[routine]->errorRecord ||
      !steps || step == steps->size())
    return Status(MIXPREC_INTERNAL, "CUDA backend: the device's error record has tag " +
                                        std::to_string(record.tag) +
                                        ", which names no routine that reports into it");
  const RoutineOp &op = module.routines()[routine];
  const std::vector<TensorDesc> &tensors = module.tensors();
  const cpu::Shape &data = tensors[op.inputs[0]].shape, &indices = tensors[op.inputs[1]].shape;
  // The lowest failing position, stored as its complement (0: none).
  const uint64_t position = ~record.position;
  if (record.position == 0 || position >= static_cast<uint64_t>(tensors[op.inputs[1]].elements))
    return Status(MIXPREC_INTERNAL, "CUDA backend: " + op.name +
                                        ": the device's error record holds no index position");
  const auto at = static_cast<int64_t>(position);
  const auto value = static_cast<int64_t>(record.value);
  // Worded as CpuRoutineStep.cpp's errors: gather names the index only;
  // scatter_nd's index tuples address the leading dims of the data.
  int64_t dim = op.axis;
  if (op.kind == RoutineKind::ScatterNd)
    dim = at % indices.back();
  std::string message =
      indexOutOfRangeMessage(op.name, value, op.kind != RoutineKind::Gather, at, dim, data[dim]);
  return Status(MIXPREC_EXECUTION_ERROR, "step #" + std::to_string(step) + ": " + message);
}

/// Routine steps without a kernel (Routine.cuda) run on the host: a CPU
/// backend of the module holds their operands.
Status CudaBackend::prepareHostSteps() {
  hostSteps = hostRoutineSteps(*module);
  if (hostSteps.empty())
    return okStatus();
  BackendOptions hostOptions = options;
  hostOptions.cpuGemms = false; // its GEMMs run on cuBLASLt
  hostOptions.numThreads = 1;   // routine steps only: no kernel runs there
  host = std::make_unique<CpuBackend>(module, hostOptions);
  if (Status s = host->prepare(); !s.ok())
    return s.withContext("CUDA backend: the host half of the routine steps: ");
  return okStatus();
}

Status CudaBackend::prepare() {
  if (!module->root().cuda())
    return failedPrecondition("module has no CUDA code: compile it with --arch sm_" +
                              std::to_string(driver.smVersion));
  if (Status s = makeContext(); !s.ok())
    return s;
  if (Status s = loadProgram(); !s.ok())
    return s;
  if (Status s = allocateMemory(); !s.ok())
    return s;
  if (Status s = prepareLaunches(); !s.ok())
    return s;
  if (!module->gemms().empty()) {
    const CublasLt *lt = nullptr;
    if (Status s = cublasLt(&lt); !s.ok())
      return s.withContext("CUDA backend: the module's GEMMs need cuBLASLt: ");
    // Their statuses name the backend already.
    if (Status s = createGemmRunner(module, driver, *lt, gemms); !s.ok())
      return s;
    if (Status s = gemms->prepare(); !s.ok())
      return s;
  }
  if (Status s = prepareHostSteps(); !s.ok())
    return s;
  findExclusiveOutputs();
  useGraphs = options.cudaGraphs && !graphsDisabledByEnvironment() && hostSteps.empty();
  const schema::CudaProgram &code = *module->root().cuda();
  description_ = "CUDA backend on " + driver.deviceName + " (sm_" +
                 std::to_string(driver.smVersion) + ", driver " +
                 cudaVersionString(driver.version) + "), code for sm_" +
                 std::to_string(code.sm_version()) + "; ";
  if (!hostSteps.empty())
    description_ += describeHostSteps(*module, hostSteps) + ", so runs are launched step by step";
  else
    description_ += useGraphs ? "runs replay a CUDA graph" : "runs are launched step by step";
  return okStatus();
}

Status CudaBackend::setInput(uint32_t tensor, const void *data, size_t bytes) {
  const TensorDesc &d = module->tensors()[tensor];
  if (d.isConstant() || bytes != d.bytes)
    return Status(MIXPREC_INTERNAL, "CUDA backend: bad input binding for '" + d.name + "'");
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  readBack.clear();
  if (bytes)
    if (CUresult r = api.cuMemcpyHtoDAsync(pointers[tensor], data, bytes, stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, "copying input '" + d.name + "' to the device");
  return okStatus();
}

Status CudaBackend::readTensor(uint32_t tensor, const void **data) {
  auto [it, fresh] = readBack.try_emplace(tensor);
  if (fresh) {
    const TensorDesc &d = module->tensors()[tensor];
    Status s = context->makeCurrent();
    if (s.ok() && !it->second.allocate(d.bytes))
      s = Status(MIXPREC_OUT_OF_MEMORY, "CUDA backend: cannot allocate " +
                                            std::to_string(d.bytes) + " host bytes for '" +
                                            d.name + "'");
    CUresult r = CUDA_SUCCESS;
    if (s.ok() && d.bytes)
      r = api.cuMemcpyDtoHAsync(it->second.data(), pointers[tensor], d.bytes, stream_);
    if (s.ok() && r == CUDA_SUCCESS)
      r = api.cuStreamSynchronize(stream_);
    if (s.ok() && r != CUDA_SUCCESS)
      s = cudaError(driver, r, "copying output '" + d.name + "' to the host");
    if (!s.ok()) {
      readBack.erase(it);
      return s;
    }
  }
  *data = it->second.data();
  return okStatus();
}

Status CudaBackend::allocate(size_t bytes, std::shared_ptr<DeviceBuffer> &out) {
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  CUdeviceptr pointer = 0;
  if (Status s = context->allocate(bytes, "a buffer", pointer); !s.ok())
    return s;
  // Device memory is not cleared by cuMemAlloc; the CPU backend's buffers
  // start at zero, and so do these.
  if (CUresult r = api.cuMemsetD8Async(pointer, 0, bytes, stream_);
      r != CUDA_SUCCESS || (r = api.cuStreamSynchronize(stream_)) != CUDA_SUCCESS) {
    api.cuMemFree(pointer);
    return cudaError(driver, r, "clearing a new buffer", MIXPREC_INTERNAL);
  }
  out = std::make_shared<CudaBuffer>(context, pointer, bytes, this);
  return okStatus();
}

} // namespace cuda

Status createCudaBackend(std::shared_ptr<const LoadedModule> module,
                         const BackendOptions &options, std::unique_ptr<Backend> &out) {
  const cuda::Driver *driver = nullptr;
  if (Status s = cuda::driver(&driver); !s.ok())
    return s.withContext("CUDA backend: ");
  auto backend = std::make_unique<cuda::CudaBackend>(std::move(module), *driver, options);
  if (Status s = backend->prepare(); !s.ok())
    return s;
  out = std::move(backend);
  return okStatus();
}

} // namespace mixprec::runtime
