//===- CudaLaunchSequence.cpp - a run: steps on the stream, graph replay --===//
//
// One sequence for both ways of running (CudaBackend.h): enqueued straight
// on the stream, or enqueued once while the stream captures it into a CUDA
// graph that later runs replay. Nothing here synchronizes with the host
// except routine steps without a kernel, which are the reason a module is
// not captured, and wait(), which reads the error record (when the module
// has one) and then commits the states.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/CudaBackend.h"

namespace mixprec::runtime::cuda {

Status CudaBackend::enqueueKernel(const Launch &launch) {
  for (int32_t t : launch.zeroed) {
    const uint64_t bytes = module->tensors()[t].bytes;
    if (bytes)
      if (CUresult r = api.cuMemsetD8Async(pointers[t], 0, bytes, stream_); r != CUDA_SUCCESS)
        return cudaError(driver, r, launch.name + ": clearing '" + module->tensors()[t].name + "'");
  }
  if (launch.grid == 0)
    return okStatus(); // an empty space: only the cleared accumulators
  if (CUresult r = api.cuLaunchKernel(launch.function, launch.grid, 1, 1, launch.block, 1, 1, 0,
                                      stream_, const_cast<void **>(launch.args.data()), nullptr);
      r != CUDA_SUCCESS)
    return cudaError(driver, r, launch.name + ": cuLaunchKernel");
  return okStatus();
}

Status CudaBackend::enqueueGemm(size_t index) {
  if (!gemms)
    return Status(MIXPREC_INTERNAL, "CUDA backend: GEMM step without a GEMM runner");
  const GemmDesc &g = module->gemms()[index];
  GemmPointers p;
  p.a = tensorPointer(g.a);
  p.b = tensorPointer(g.b);
  p.bias = tensorPointer(g.bias);
  p.out = tensorPointer(g.out);
  p.aScale = tensorPointer(g.aScale);
  p.bScale = tensorPointer(g.bScale);
  return gemms->run(index, p, stream_);
}

/// Routine `index` on the host: its activation operands device -> host,
/// the CPU routine, its output host -> device.
Status CudaBackend::runHostStep(size_t index) {
  const RoutineOp &op = module->routines()[index];
  const std::vector<TensorDesc> &tensors = module->tensors();
  for (int32_t t : op.inputs) {
    if (t < 0 || tensors[t].isConstant() || !tensors[t].bytes)
      continue; // constants are in host memory already
    if (CUresult r = api.cuMemcpyDtoHAsync(host->hostTensor(t), pointers[t], tensors[t].bytes,
                                           stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, op.name + ": copying '" + tensors[t].name + "' to the host");
  }
  if (CUresult r = api.cuStreamSynchronize(stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, op.name + ": waiting for its operands");
  if (Status s = host->runRoutineStep(index); !s.ok())
    return s;
  const TensorDesc &y = tensors[op.output];
  if (y.bytes)
    if (CUresult r = api.cuMemcpyHtoDAsync(pointers[op.output], host->hostTensor(op.output),
                                           y.bytes, stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, op.name + ": copying '" + y.name + "' to the device");
  // The copy reads the host arena, which the next host step may rewrite.
  if (CUresult r = api.cuStreamSynchronize(stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, op.name + ": copying its output to the device");
  return okStatus();
}

/// all_reduce with a collective on device buffers (NCCL): the input copied
/// to the output on the stream, then reduced there in place.
Status CudaBackend::enqueueAllReduce(size_t index) {
  const RoutineOp &op = module->routines()[index];
  const TensorDesc &y = module->tensors()[op.output];
  if (pointers[op.output] != pointers[op.inputs[0]])
    if (Status s = copyTensor(op.output, pointers[op.output], pointers[op.inputs[0]],
                              "all_reduce: copying its input to");
        !s.ok())
      return s;
  return allReduceInPlace(op.name, reinterpret_cast<void *>(pointers[op.output]),
                          static_cast<size_t>(y.elements), static_cast<mixprec_dtype_t>(y.dtype),
                          op.reduction, stream_);
}

/// A host step, except the collectives' steps that run on the device:
/// all_reduce and all_gather with a device collective (NCCL), rank_slice
/// always, all_gather without a collective (a copy).
Status CudaBackend::runCollectiveStep(size_t index) {
  const bool device = hasCollective && collective.device_buffers;
  switch (module->routines()[index].kind) {
  case RoutineKind::AllReduce:
    return device ? enqueueAllReduce(index) : runHostStep(index);
  case RoutineKind::RankSlice:
    return enqueueRankSlice(index);
  case RoutineKind::AllGather:
    return device || !hasCollective ? enqueueAllGather(index) : runHostStep(index);
  default:
    return runHostStep(index);
  }
}

/// rank_slice on the device: this rank's slice copied on the stream.
Status CudaBackend::enqueueRankSlice(size_t index) {
  const RoutineOp &op = module->routines()[index];
  const TensorDesc &y = module->tensors()[op.output];
  return rankSlice(op.name, op.world, y.bytes, [&](size_t offset) -> Status {
    if (!y.bytes)
      return okStatus();
    if (CUresult r = api.cuMemcpyDtoDAsync(pointers[op.output], pointers[op.inputs[0]] + offset,
                                           y.bytes, stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, op.name + ": copying this rank's slice to '" + y.name + "'");
    return okStatus();
  });
}

/// all_gather on device buffers: a device collective (NCCL) on the stream,
/// or (a job of one rank) a copy.
Status CudaBackend::enqueueAllGather(size_t index) {
  const RoutineOp &op = module->routines()[index];
  const TensorDesc &x = module->tensors()[op.inputs[0]];
  const TensorDesc &y = module->tensors()[op.output];
  return allGather(op.name, op.world, reinterpret_cast<const void *>(pointers[op.inputs[0]]),
                   reinterpret_cast<void *>(pointers[op.output]), static_cast<size_t>(x.elements),
                   static_cast<mixprec_dtype_t>(y.dtype), stream_, [&] {
                     return copyTensor(op.output, pointers[op.output], pointers[op.inputs[0]],
                                       "all_gather: copying its input to");
                   });
}

Status CudaBackend::copyTensor(int32_t t, CUdeviceptr to, CUdeviceptr from, const char *what) {
  const TensorDesc &d = module->tensors()[t];
  if (!d.bytes)
    return okStatus();
  if (CUresult r = api.cuMemcpyDtoDAsync(to, from, d.bytes, stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, std::string(what) + " '" + d.name + "'");
  return okStatus();
}

/// Fails the run if a routine kernel reported into the error record; no-op
/// without one. Synchronizes with the stream.
Status CudaBackend::readErrorRecord() {
  if (!errorRecord)
    return okStatus();
  MpErrorRecord record{};
  if (CUresult r = api.cuMemcpyDtoHAsync(&record, errorRecord, sizeof record, stream_);
      r != CUDA_SUCCESS || (r = api.cuStreamSynchronize(stream_)) != CUDA_SUCCESS)
    return cudaError(driver, r, "reading the error record");
  return record.tag ? deviceErrorStatus(*module, record) : okStatus();
}

/// Each state takes its update: copies on the stream.
Status CudaBackend::commitStates() {
  for (const StateDesc &state : module->states())
    if (pointers[state.tensor] != pointers[state.update])
      if (Status s = copyTensor(state.tensor, pointers[state.tensor], pointers[state.update],
                                "committing the update of state");
          !s.ok())
        return s;
  return okStatus();
}

/// Bound inputs in, every step, bound outputs out, the state updated (in
/// wait() when the module has an error record).
Status CudaBackend::enqueueSequence(const Bindings &bindings) {
  const std::vector<uint32_t> &inputs = module->inputs(), &outputs = module->outputs();
  // A record left by an earlier run that failed would fail this one.
  if (errorRecord)
    if (CUresult r = api.cuMemsetD8Async(errorRecord, 0, sizeof(MpErrorRecord), stream_);
        r != CUDA_SUCCESS)
      return cudaError(driver, r, "clearing the error record");
  for (size_t i = 0; i < bindings.inputs.size(); ++i)
    if (const DeviceBuffer *b = bindings.inputs[i].get())
      if (Status s = copyTensor(inputs[i], pointers[inputs[i]], b->address(),
                                "copying the bound buffer of input");
          !s.ok())
        return s;
  const auto *steps = module->root().steps();
  for (size_t i = 0; steps && i < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i);
    Status s;
    switch (step->kind()) {
    case schema::StepKind::Kernel:
      s = enqueueKernel(launches[step->index()]);
      break;
    case schema::StepKind::Gemm:
      s = enqueueGemm(step->index());
      break;
    case schema::StepKind::Routine:
      if (routineLaunches[step->index()] >= 0) {
        s = enqueueKernel(launches[routineLaunches[step->index()]]);
        break;
      }
      // A kernel before it that failed left its output unwritten: the run
      // stops with that kernel's error (which names its own step), never
      // the host's error on what it left.
      if (Status failed = readErrorRecord(); !failed.ok())
        return failed;
      s = runCollectiveStep(step->index());
      break;
    }
    if (!s.ok())
      return s.withContext("step #" + std::to_string(i) + ": ");
  }
  // Outputs not written in place (applyBindings) are copied.
  for (size_t i = 0; i < bindings.outputs.size(); ++i)
    if (const DeviceBuffer *b = bindings.outputs[i].get())
      if (pointers[outputs[i]] != b->address())
        if (Status s = copyTensor(outputs[i], b->address(), pointers[outputs[i]],
                                  "copying into the bound buffer of output");
            !s.ok())
          return s;
  // The run got this far: each state takes its update (a copy on the
  // stream, captured with the rest), so a run that failed before leaves the
  // state as it was. A kernel's failure shows only in the error record,
  // which wait() reads before it commits.
  if (errorRecord)
    return okStatus();
  return commitStates();
}

/// Points the outputs that have their bytes to themselves at their bound
/// buffers, and the kernels' parameters with them.
void CudaBackend::applyBindings(const Bindings &bindings) {
  pointers = planned;
  const std::vector<uint32_t> &outputs = module->outputs();
  for (size_t i = 0; i < bindings.outputs.size(); ++i) {
    const uint32_t t = outputs[i];
    // The first buffer bound to a tensor listed twice gets it in place.
    if (bindings.outputs[i] && exclusive[t] && pointers[t] == planned[t])
      pointers[t] = bindings.outputs[i]->address();
  }
  for (Launch &launch : launches)
    for (size_t j = 0; j < launch.tensors.size(); ++j)
      launch.params[j] = pointers[launch.tensors[j]];
  applied = bindings;
}

void CudaBackend::dropGraph() {
  if (graph)
    api.cuGraphExecDestroy(graph);
  graph = nullptr;
  graphBindings = Bindings();
}

/// Captures the sequence for `bindings` (the addresses it copies to and
/// from are part of the graph) and instantiates it.
Status CudaBackend::captureGraph(const Bindings &bindings) {
  dropGraph();
  if (CUresult r = api.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return cudaError(driver, r, "cuStreamBeginCapture");
  Status enqueued = enqueueSequence(bindings);
  CUgraph captured = nullptr;
  // Always ended, so that a failed capture leaves the stream usable.
  CUresult ended = api.cuStreamEndCapture(stream_, &captured);
  if (!enqueued.ok()) {
    if (captured)
      api.cuGraphDestroy(captured);
    return enqueued.withContext("while capturing the CUDA graph: ");
  }
  if (ended != CUDA_SUCCESS)
    return cudaError(driver, ended, "cuStreamEndCapture");
  CUresult r = api.cuGraphInstantiateWithFlags(&graph, captured, 0);
  api.cuGraphDestroy(captured);
  if (r != CUDA_SUCCESS) {
    graph = nullptr;
    return cudaError(driver, r, "cuGraphInstantiateWithFlags");
  }
  graphBindings = bindings;
  return okStatus();
}

Status CudaBackend::launch(const Bindings &bindings) {
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  readBack.clear();
  commitPending = false;
  applyBindings(bindings);
  if (!useGraphs) {
    if (Status s = enqueueSequence(bindings); !s.ok())
      return s;
  } else {
    if (!graph || !(graphBindings == bindings))
      if (Status s = captureGraph(bindings); !s.ok())
        return s;
    if (CUresult r = api.cuGraphLaunch(graph, stream_); r != CUDA_SUCCESS)
      return cudaError(driver, r, "cuGraphLaunch");
  }
  commitPending = errorRecord != 0;
  return okStatus();
}

Status CudaBackend::wait() {
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  if (CUresult r = api.cuStreamSynchronize(stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, "the run failed on the device");
  if (!commitPending)
    return okStatus();
  // The states take their updates only from a run whose record reads clean.
  commitPending = false;
  if (Status s = readErrorRecord(); !s.ok())
    return s;
  if (Status s = commitStates(); !s.ok())
    return s;
  if (CUresult r = api.cuStreamSynchronize(stream_); r != CUDA_SUCCESS)
    return cudaError(driver, r, "committing the states");
  return okStatus();
}

} // namespace mixprec::runtime::cuda
