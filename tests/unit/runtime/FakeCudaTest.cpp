//===- FakeCudaTest.cpp - the CUDA backend on a fake driver ---------------===//
//
// Runs without a GPU: the runtime loads runtime/tests/FakeCudaDriver.c as
// its driver (a "Fake GPU", sm_90, whose device memory is host memory and
// whose kernel launches do nothing). So the CUDA backend's own paths are
// checked here: modules without CUDA code or without code for the device,
// out of device memory, routine steps run on the host (results equal to the
// CPU backend's, through device memory) unless they have a kernel, the `zeroed` tensors of a
// launch, device buffers and their bindings, the graph option, and the error record routine kernels
// report into (the fake's launches report on demand). Kernels and GEMMs computing on a device are
// the `gpu` tests' part.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestModules.h"
#include "tests/unit/runtime/TestUtil.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#ifndef MIXPREC_FAKE_CUDA_DRIVER
#error "MIXPREC_FAKE_CUDA_DRIVER must name the fake driver library"
#endif

namespace mixprec::testing {
namespace {

// Before any session: the runtime loads its driver once per process.
const bool kFakeDriver = ::setenv("MIXPREC_CUDA_DRIVER_LIBRARY", MIXPREC_FAKE_CUDA_DRIVER, 1) == 0;

::testing::AssertionResult failsWith(const Status &status, mixprec_status_code_t code,
                                     const std::string &text) {
  if (status.code() == code && std::string(status.message()).find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.codeName() << ": " << status.message()
                                       << " (expected " << mixprec_status_code_name(code)
                                       << " containing '" << text << "')";
}

/// The fake's program: its "PTX" is never compiled.
fb::CudaProgramT program(int sm, bool ptx = true) {
  fb::CudaProgramT p;
  p.sm_version = sm;
  p.nvrtc_version = "13.0";
  p.source = "// kernels";
  if (ptx)
    p.ptx = "// ptx";
  p.cubin = {0x7f, 'E', 'L', 'F'};
  return p;
}

fb::CudaLaunchT launch(const std::string &function, int64_t grid, std::vector<int32_t> params,
                       std::vector<int32_t> zeroed = {}) {
  fb::CudaLaunchT l;
  l.function = function;
  l.grid_size = grid;
  l.block_size = 256;
  l.params = std::move(params);
  l.zeroed = std::move(zeroed);
  return l;
}

/// x [4,6] f32 -> transpose -> t [6,4] -> softmax -> y [6,4]; then
/// reduce_max(x) -> peak, which the kernel "amax" (|x|'s maximum, with
/// `peak` in its `zeroed` list) overwrites. Outputs y, t, peak.
ModuleBuilder routineModule() {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {4, 6});
  const int t = b.activation("t", fb::DType::F32, {6, 4});
  const int y = b.activation("y", fb::DType::F32, {6, 4});
  const int peak = b.activation("peak", fb::DType::F32, {});
  b.routine({"flip", "transpose", {x}, {t}, transposeOptions({1, 0})});
  b.routine({"probs", "softmax", {t}, {y}, axisOptions(1)});
  b.routine({"max", "reduce_max", {x}, {peak}, reduceOptions({0, 1}, false)});
  KernelSpec &k = b.kernel("amax", {4, 6}, 0);
  k.store(peak, k.unary(fb::OpCode::Amax, k.load(x, {6, 1})), {0, 0}, fb::DType::F32);
  k.cuda = launch("mixprec_amax", 1, {x, peak}, {peak});
  for (int out : {y, t, peak})
    b.output(out);
  b.cuda = program(90);
  return b;
}

/// x [256] f32 -> kernel "twice" -> y: no routine step, so graphs apply.
ModuleBuilder kernelModule(int sm = 90, bool ptx = true) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {256});
  const int y = b.activation("y", fb::DType::F32, {256});
  KernelSpec &k = b.kernel("twice", {256}, 0);
  // One Load per parameter, as the compiler writes kernels (the loader checks it).
  const int32_t v = k.load(x, {1});
  k.store(y, k.binary(fb::OpCode::Add, v, v), {1}, fb::DType::F32);
  k.cuda = launch("mixprec_twice", 1, {x, y});
  b.output(y);
  b.cuda = program(sm, ptx);
  return b;
}

/// Runs `session` on x and returns output `index` as f32.
std::vector<float> runOn(Session &session, const std::vector<int64_t> &dims,
                         const std::vector<float> &x, size_t index) {
  std::vector<float> out;
  Status s = session.bindInput("x", dims, x.data());
  if (s.ok())
    s = session.run();
  if (s.ok())
    s = session.copyOutput(index, out);
  EXPECT_TRUE(s.ok()) << s.codeName() << ": " << s.message();
  return out;
}

/// x [2,2] input, state s [1,2] from [1,2]: s_new = s @ x and y = sum(s_new),
/// both routines on the host; the CUDA backend keeps s in device memory.
ModuleBuilder stateModule() {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {2, 2});
  const int s = b.state("s", fb::DType::F32, {1, 2}, {1, 2});
  const int next = b.activation("s_new", fb::DType::F32, {1, 2});
  const int y = b.activation("y", fb::DType::F32, {});
  fb::RoutineOptionsUnion matmul;
  matmul.Set(fb::MatmulOptionsT());
  b.routine({"step", "matmul", {s, x}, {next}, matmul});
  b.routine({"sum", "reduce_sum", {next}, {y}, reduceOptions({0, 1}, false)});
  b.states.back().update = static_cast<uint32_t>(next);
  b.output(y);
  b.cuda = program(90);
  return b;
}

TEST(FakeCuda, StateIsKeptInDeviceMemoryAndCommittedAfterEachRun) {
  Module module;
  ASSERT_OK(loadBuilt(stateModule().build(), module));
  Session cuda, cpu;
  ASSERT_OK(Session::create(module, cuda, MIXPREC_BACKEND_CUDA));
  ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
  const std::vector<float> x = {1, 1, 0, 1};
  std::vector<float> state(2), cpuState(2);
  ASSERT_OK(cuda.readState("s", state.data(), 8));
  EXPECT_EQ(state, (std::vector<float>{1, 2}));
  for (int run = 1; run <= 3; ++run) {
    EXPECT_EQ(runOn(cuda, {2, 2}, x, 0), runOn(cpu, {2, 2}, x, 0)) << "run " << run;
    ASSERT_OK(cuda.readState("s", state.data(), 8));
    ASSERT_OK(cpu.readState("s", cpuState.data(), 8));
    EXPECT_EQ(state, (std::vector<float>{1, float(2 + run)})) << "run " << run;
    EXPECT_EQ(state, cpuState);
  }
  // Written, reset, and through a checkpoint into the CPU session.
  const std::vector<float> written = {5, -1};
  ASSERT_OK(cuda.writeState("s", written.data(), 8));
  ASSERT_OK(cuda.readState("s", state.data(), 8));
  EXPECT_EQ(state, written);
  const std::string path = ::testing::TempDir() + "fake_cuda_state.ckpt";
  ASSERT_OK(cuda.saveCheckpoint(path.c_str()));
  ASSERT_OK(cuda.resetState());
  ASSERT_OK(cuda.readState("s", state.data(), 8));
  EXPECT_EQ(state, (std::vector<float>{1, 2}));
  ASSERT_OK(cpu.loadCheckpoint(path.c_str()));
  ASSERT_OK(cpu.readState("s", cpuState.data(), 8));
  EXPECT_EQ(cpuState, written);
  ASSERT_OK(cuda.loadCheckpoint(path.c_str()));
  EXPECT_EQ(runOn(cuda, {2, 2}, x, 0), runOn(cpu, {2, 2}, x, 0));
  ASSERT_OK(cuda.readState("s", state.data(), 8));
  EXPECT_EQ(state, (std::vector<float>{5, 4}));
  std::remove(path.c_str());
}

TEST(FakeCuda, ModuleWithoutCudaCode) {
  ASSERT_TRUE(kFakeDriver);
  Module module;
  ASSERT_OK(loadBuilt(mlpBuilder(false).build(), module));
  Session session;
  Status s = Session::create(module, session, MIXPREC_BACKEND_CUDA);
  EXPECT_EQ(s.code(), MIXPREC_FAILED_PRECONDITION);
  EXPECT_STREQ(s.message(), "CUDA backend: module has no CUDA code: compile it with --arch sm_90");
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_AUTO));
  EXPECT_EQ(session.backend(), MIXPREC_BACKEND_CPU);
  EXPECT_EQ(std::string(session.backendReason()),
            std::string("auto chose the CPU backend: ") + s.message());
}

TEST(FakeCuda, CodeForAnotherArchitecture) {
  Module module;
  Session session;
  ASSERT_OK(loadBuilt(kernelModule(100).build(), module));
  EXPECT_TRUE(failsWith(Session::create(module, session, MIXPREC_BACKEND_CUDA),
                        MIXPREC_FAILED_PRECONDITION,
                        "CUDA backend: the module was compiled for sm_100, newer than this sm_90 "
                        "device (Fake GPU): compile it with --arch sm_90"));
  ASSERT_OK(loadBuilt(kernelModule(80, /*ptx=*/false).build(), module));
  EXPECT_TRUE(failsWith(Session::create(module, session, MIXPREC_BACKEND_CUDA),
                        MIXPREC_FAILED_PRECONDITION,
                        "CUDA backend: module compiled for sm_80 has no PTX for this sm_90 device "
                        "(Fake GPU): compile it with --arch sm_90"));
  // With PTX, an older architecture's module loads (the driver JITs it).
  ASSERT_OK(loadBuilt(kernelModule(80).build(), module));
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CUDA));
  EXPECT_NE(std::string(session.backendReason()).find("code for sm_80"), std::string::npos)
      << session.backendReason();
}

TEST(FakeCuda, BadLaunchTableIsAnInvalidModule) {
  ModuleBuilder b = kernelModule();
  b.kernels[0].cuda->params.push_back(99);
  Module module;
  Session session;
  // The loader or the backend refuses it; never a wild pointer.
  Status s = loadBuilt(b.build(), module);
  if (s.ok())
    s = Session::create(module, session, MIXPREC_BACKEND_CUDA);
  EXPECT_EQ(s.code(), MIXPREC_INVALID_MODULE) << s.message();
  EXPECT_NE(std::string(s.message()).find("99"), std::string::npos) << s.message();
}

TEST(FakeCuda, OutOfDeviceMemoryNamesBytesAskedAndFree) {
  Module module;
  ASSERT_OK(loadBuilt(routineModule().build(), module));
  ::setenv("MIXPREC_FAKE_CUDA_MEMORY", "500", 1);
  Session session;
  Status s = Session::create(module, session, MIXPREC_BACKEND_CUDA);
  ::unsetenv("MIXPREC_FAKE_CUDA_MEMORY");
  // x at 0, t at 256, y at 512 (96 bytes each), peak at 768 (4 bytes).
  EXPECT_TRUE(failsWith(s, MIXPREC_OUT_OF_MEMORY,
                        "CUDA backend: cannot allocate the arena of 772 bytes on device 0 "
                        "(Fake GPU): 500 bytes free of 500"));
  // Buffers too.
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CUDA));
  Buffer buffer;
  EXPECT_TRUE(failsWith(Buffer::create(session, size_t(1) << 40, buffer), MIXPREC_OUT_OF_MEMORY,
                        "cannot allocate a buffer of 1099511627776 bytes on device 0 (Fake GPU)"));
}

TEST(FakeCuda, RoutineStepsRunOnTheHostAsOnTheCpu) {
  Module module;
  ASSERT_OK(loadBuilt(routineModule().build(), module));
  Session cuda, cpu;
  ASSERT_OK(Session::create(module, cuda, MIXPREC_BACKEND_CUDA));
  ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
  EXPECT_EQ(cuda.backend(), MIXPREC_BACKEND_CUDA);
  EXPECT_STREQ(cuda.backendReason(),
               "CUDA backend on Fake GPU (sm_90, driver 13.0), code for sm_90; 3 routine steps "
               "(transpose, softmax, reduce_max) run on the host, so runs are launched step by "
               "step");
  EXPECT_NE(cuda.stream(), nullptr);
  const std::vector<float> x = seededFloats(24, 3, -4, 4);
  for (size_t out : {0, 1})
    EXPECT_TRUE(bitEqual(runOn(cuda, {4, 6}, x, out), runOn(cpu, {4, 6}, x, out))) << out;
  // `peak` is in the amax launch's `zeroed` list: cleared before the
  // (fake, empty) kernel, so the reduce_max result is gone.
  EXPECT_EQ(runOn(cuda, {4, 6}, x, 2), std::vector<float>{0.0f});
  EXPECT_NE(runOn(cpu, {4, 6}, x, 2), std::vector<float>{0.0f});
  // auto picks CUDA and says where it runs.
  Session chosen;
  ASSERT_OK(Session::create(module, chosen, MIXPREC_BACKEND_AUTO));
  EXPECT_EQ(chosen.backend(), MIXPREC_BACKEND_CUDA);
  EXPECT_EQ(std::string(chosen.backendReason()),
            std::string("auto chose the CUDA backend: ") + cuda.backendReason());
}

TEST(FakeCuda, DeviceBuffersBindInputsAndOutputs) {
  Module module;
  ASSERT_OK(loadBuilt(routineModule().build(), module));
  Session session, cpu;
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CUDA));
  ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
  const std::vector<float> x = seededFloats(24, 4, -4, 4);
  const std::vector<float> want = runOn(cpu, {4, 6}, x, 0);
  Buffer in, out, foreign;
  ASSERT_OK(Buffer::create(session, 96, in));
  ASSERT_OK(Buffer::create(session, 96, out));
  ASSERT_OK(Buffer::create(cpu, 96, foreign));
  EXPECT_EQ(in.backend(), MIXPREC_BACKEND_CUDA);
  EXPECT_TRUE(failsWith(session.bindInputBuffer(0, foreign), MIXPREC_INVALID_ARGUMENT,
                        "input 'x': the buffer was created by another session (on the cpu "
                        "backend; this session runs on cuda)"));
  EXPECT_TRUE(failsWith(cpu.bindOutputBuffer(0, out), MIXPREC_INVALID_ARGUMENT,
                        "(on the cuda backend; this session runs on cpu)"));
  ASSERT_OK(in.copyFromHost(x.data(), 96));
  ASSERT_OK(session.bindInputBuffer(0, in));
  ASSERT_OK(session.bindOutputBuffer(0, out));
  ASSERT_OK(session.runAsync());
  ASSERT_OK(session.wait());
  std::vector<float> got(24);
  ASSERT_OK(out.copyToHost(got.data(), 96));
  EXPECT_TRUE(bitEqual(got, want));
}

TEST(FakeCuda, OutputBuffersAreWrittenInPlaceUnlessShared) {
  const std::vector<float> x = seededFloats(24, 5, -4, 4);
  Module module, cpuModule;
  ASSERT_OK(loadBuilt(routineModule().build(), module));
  Session cuda, cpu;
  ASSERT_OK(Session::create(module, cuda, MIXPREC_BACKEND_CUDA));
  ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
  const std::vector<float> want = runOn(cpu, {4, 6}, x, 0);
  Buffer out;
  ASSERT_OK(Buffer::create(cuda, 96, out));
  ASSERT_OK(cuda.bindOutputBuffer(0, out));
  ASSERT_OK(cuda.bindInput("x", {4, 6}, x.data()));
  ASSERT_OK(cuda.run());
  std::vector<float> got(24);
  ASSERT_OK(out.copyToHost(got.data(), 96));
  EXPECT_TRUE(bitEqual(got, want));
  // `y` has its bytes to itself: the run wrote it in the buffer, which is
  // where the session now reads it from.
  const std::vector<float> zeros(24, 0.0f);
  ASSERT_OK(out.copyFromHost(zeros.data(), 96));
  std::vector<float> read;
  ASSERT_OK(cuda.copyOutput(0, read));
  EXPECT_TRUE(bitEqual(read, zeros));

  // `y2` shares y's bytes (an alias, as an output listed under two names):
  // neither lives in its buffer; both are copied there after the run.
  ModuleBuilder b = routineModule();
  const int y2 = b.activation("y2", fb::DType::F32, {6, 4});
  b.output(y2);
  // x, t, y, peak at their own offsets; y2 at y's.
  ASSERT_EQ(b.tensors[2].name, "y");
  for (uint64_t t : {0, 1, 2, 3})
    b.tensors[t].offset = 256 * t;
  b.tensors[y2].offset = b.tensors[2].offset;
  Module aliased;
  ASSERT_OK(loadBuilt(b.build(/*keepOffsets=*/true), aliased));
  Session session;
  ASSERT_OK(Session::create(aliased, session, MIXPREC_BACKEND_CUDA));
  Buffer first, second;
  ASSERT_OK(Buffer::create(session, 96, first));
  ASSERT_OK(Buffer::create(session, 96, second));
  ASSERT_OK(session.bindOutputBuffer(0, first));
  ASSERT_OK(session.bindOutputBuffer(3, second));
  ASSERT_OK(session.bindInput("x", {4, 6}, x.data()));
  ASSERT_OK(session.run());
  for (Buffer *buffer : {&first, &second}) {
    ASSERT_OK(buffer->copyToHost(got.data(), 96));
    EXPECT_TRUE(bitEqual(got, want));
  }
  ASSERT_OK(first.copyFromHost(zeros.data(), 96));
  ASSERT_OK(session.copyOutput(0, read));
  EXPECT_TRUE(bitEqual(read, want)); // the arena's copy, untouched
}

/// x [4,6] f32 -> transpose "flip" -> t [6,4], the routine as a kernel of
/// the program (Routine.cuda); with `softmax`, t -> softmax -> y [6,4] on the
/// host after it. Outputs t (and y).
ModuleBuilder routineKernelModule(bool softmax) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {4, 6});
  const int t = b.activation("t", fb::DType::F32, {6, 4});
  RoutineSpec flip{"flip", "transpose", {x}, {t}, transposeOptions({1, 0})};
  flip.cuda = launch("mp_main_r0_flip", 1, {x, t});
  b.routine(flip);
  b.output(t);
  if (softmax) {
    const int y = b.activation("y", fb::DType::F32, {6, 4});
    b.routine({"probs", "softmax", {t}, {y}, axisOptions(1)});
    b.output(y);
  }
  b.cuda = program(90);
  return b;
}

TEST(FakeCuda, RoutinesWithKernelsRunOnTheDevice) {
  // Only the softmax, which has no kernel, runs on the host.
  Module mixed;
  ASSERT_OK(loadBuilt(routineKernelModule(true).build(), mixed));
  Session session;
  ASSERT_OK(Session::create(mixed, session, MIXPREC_BACKEND_CUDA));
  EXPECT_STREQ(session.backendReason(),
               "CUDA backend on Fake GPU (sm_90, driver 13.0), code for sm_90; 1 routine step "
               "(softmax) run on the host, so runs are launched step by step");

  // Every routine a kernel: the module is captured into a graph (which the
  // fake cannot do, and says so).
  Module module;
  ASSERT_OK(loadBuilt(routineKernelModule(false).build(), module));
  Session graphs;
  ASSERT_OK(Session::create(module, graphs, MIXPREC_BACKEND_CUDA));
  EXPECT_STREQ(graphs.backendReason(),
               "CUDA backend on Fake GPU (sm_90, driver 13.0), code for sm_90; runs replay a "
               "CUDA graph");
  const std::vector<float> x = seededFloats(24, 6, -4, 4);
  ASSERT_OK(graphs.bindInput("x", {4, 6}, x.data()));
  EXPECT_TRUE(failsWith(graphs.run(), MIXPREC_EXECUTION_ERROR,
                        "CUDA backend: cuStreamBeginCapture: CUDA_ERROR_NOT_SUPPORTED"));

  // Step by step, the transpose is a launch, which the fake does not run:
  // the output buffer keeps what it held (the host routine would have
  // written x's transpose into it).
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = MIXPREC_BACKEND_CUDA;
  options.disable_cuda_graphs = 1;
  Session steps;
  ASSERT_OK(Session::create(module, steps, options));
  Buffer out;
  ASSERT_OK(Buffer::create(steps, 96, out));
  const std::vector<float> marks(24, -7.0f);
  ASSERT_OK(out.copyFromHost(marks.data(), 96));
  ASSERT_OK(steps.bindOutputBuffer(0, out));
  ASSERT_OK(steps.bindInput("x", {4, 6}, x.data()));
  ASSERT_OK(steps.run());
  std::vector<float> got(24);
  ASSERT_OK(out.copyToHost(got.data(), 96));
  EXPECT_TRUE(bitEqual(got, marks));
}

/// x [4,2] f32 gathered at ids [3] (i64) along axis 0 by the kernel "pick"
/// (routine #0, tag 1), which reports into the error record, into the
/// state's update g [3,2]; with `hostStep`, a gather_nd on the host reads g
/// at nd [1,1] (i64) into y [1,2] after it. Outputs g (and y).
ModuleBuilder errorRecordModule(bool hostStep) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {4, 2});
  const int ids = b.input("ids", fb::DType::I64, {3});
  b.state("s", fb::DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  const int g = b.activation("g", fb::DType::F32, {3, 2});
  RoutineSpec pick{"pick", "gather", {x, ids}, {g}, axisOptions(0)};
  pick.cuda = launch("mp_main_r0_pick", 1, {x, ids, g});
  pick.cuda->error_record = true;
  b.routine(pick);
  b.states.back().update = static_cast<uint32_t>(g);
  b.output(g);
  if (hostStep) {
    const int nd = b.input("nd", fb::DType::I64, {1, 1});
    const int y = b.activation("y", fb::DType::F32, {1, 2});
    fb::GatherNdOptionsT options;
    fb::RoutineOptionsUnion gatherNd;
    gatherNd.Set(std::move(options));
    b.routine({"lookup", "gather_nd", {g, nd}, {y}, gatherNd});
    b.output(y);
  }
  b.cuda = program(90);
  b.version = 4;
  return b;
}

/// Binds errorRecordModule's inputs: `ids`, and nd = {`nd`} with a host step.
Status bindIds(Session &session, const std::vector<int64_t> &ids, int64_t nd, bool hostStep) {
  const std::vector<float> x = {10, 11, 20, 21, 30, 31, 40, 41};
  Status s = session.bindInput("x", {4, 2}, x.data());
  if (s.ok())
    s = session.bindInput("ids", MIXPREC_DTYPE_I64, {3}, ids.data(), 24);
  if (s.ok() && hostStep)
    s = session.bindInput("nd", MIXPREC_DTYPE_I64, {1, 1}, &nd, 8);
  return s;
}

/// Sessions that launch step by step (the fake cannot capture a graph).
Status stepByStep(Module &module, Session &session) {
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = MIXPREC_BACKEND_CUDA;
  options.disable_cuda_graphs = 1;
  return Session::create(module, session, options);
}

std::vector<float> stateOf(Session &session) {
  std::vector<float> state(6);
  Status s = session.readState("s", state.data(), 24);
  EXPECT_TRUE(s.ok()) << s.message();
  return state;
}

TEST(FakeCuda, ErrorRecordFailsTheRunAsTheCpuBackendDoes) {
  for (bool hostStep : {true, false}) {
    SCOPED_TRACE(hostStep ? "a host step after the kernel" : "the kernel last");
    Module module;
    ASSERT_OK(loadBuilt(errorRecordModule(hostStep).build(), module));
    Session cuda, cpu;
    ASSERT_OK(stepByStep(module, cuda));
    ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
    // ids[1] = 7 is out of range for x's 4 rows: the CPU's gather fails
    // there. The host step's gather_nd would fail on nd = 5, with another
    // message, if it ran on what the failed kernel left.
    ASSERT_OK(bindIds(cpu, {0, 7, -9}, 5, hostStep));
    Status want = cpu.run();
    ASSERT_EQ(want.code(), MIXPREC_EXECUTION_ERROR) << want.message();
    EXPECT_STREQ(
        want.message(),
        "step #0: routine #0 'pick' (gather): index 7 is out of range for dim 0 of size 4");
    // The fake kernel reports what the device's would: tag 1 (routine #0),
    // the lowest position 1 and its index 7, into parameter #3.
    ::setenv("MIXPREC_FAKE_CUDA_REPORT", "mp_main_r0_pick 3 1 1 7", 1);
    ASSERT_OK(bindIds(cuda, {0, 7, -9}, 5, hostStep));
    Status got = hostStep ? cuda.run() : cuda.runAsync();
    if (!hostStep) {
      // Launched; the failure shows when the run is waited for.
      ASSERT_TRUE(got.ok()) << got.message();
      got = cuda.wait();
    }
    ::unsetenv("MIXPREC_FAKE_CUDA_REPORT");
    EXPECT_EQ(got.code(), want.code());
    EXPECT_STREQ(got.message(), want.message());
    // A failed run commits no state.
    EXPECT_EQ(stateOf(cuda), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(stateOf(cuda), stateOf(cpu));
    // The next run starts from a clear record, and commits (the fake
    // kernel writes nothing: g keeps the arena's zeros).
    ASSERT_OK(bindIds(cuda, {0, 1, -1}, 0, hostStep));
    ASSERT_OK(cuda.run());
    EXPECT_EQ(stateOf(cuda), std::vector<float>(6, 0.0f));
  }
}

TEST(FakeCuda, ErrorRecordNamingNoReportingRoutineIsInternal) {
  Module module;
  ASSERT_OK(loadBuilt(errorRecordModule(false).build(), module));
  Session cuda;
  ASSERT_OK(stepByStep(module, cuda));
  ::setenv("MIXPREC_FAKE_CUDA_REPORT", "mp_main_r0_pick 3 2 0 7", 1);
  ASSERT_OK(bindIds(cuda, {0, 1, 2}, 0, false));
  Status s = cuda.run();
  ::unsetenv("MIXPREC_FAKE_CUDA_REPORT");
  EXPECT_TRUE(failsWith(s, MIXPREC_INTERNAL,
                        "CUDA backend: the device's error record has tag 2, which names no "
                        "routine that reports into it"));
  EXPECT_EQ(stateOf(cuda), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

/// Each reporting routine's error from the record, word for word the CPU
/// backend's on indices that fail at the same position.
TEST(FakeCuda, ErrorRecordWordsEachRoutinesError) {
  struct Case {
    std::string opType;
    fb::RoutineOptionsUnion options;
    std::vector<int64_t> dataShape, indexShape, updateShape, outShape;
    std::vector<int64_t> indices;
    int64_t position;
  };
  fb::ScatterNdOptionsT add;
  add.reduction = 1;
  fb::RoutineOptionsUnion scatter;
  scatter.Set(std::move(add));
  std::vector<Case> cases;
  // gather_elements on axis 1 of [2,3]: indices [2,2], -4 at element 2.
  cases.push_back(
      {"gather_elements", axisOptions(1), {2, 3}, {2, 2}, {}, {2, 2}, {0, -3, -4, 9}, 2});
  // scatter_nd into [4,3] at tuples [2,2]: 9 at element 3, dim 1 (size 3).
  cases.push_back({"scatter_nd", scatter, {4, 3}, {2, 2}, {2}, {4, 3}, {0, 1, 2, 9}, 3});
  for (const Case &c : cases) {
    SCOPED_TRACE(c.opType);
    ModuleBuilder b;
    const int x = b.input("x", fb::DType::F32, c.dataShape);
    const int idx = b.input("idx", fb::DType::I64, c.indexShape);
    std::vector<int32_t> inputs = {x, idx};
    if (!c.updateShape.empty())
      inputs.push_back(b.input("u", fb::DType::F32, c.updateShape));
    const int y = b.activation("y", fb::DType::F32, c.outShape);
    RoutineSpec spec{"r", c.opType, inputs, {y}, c.options};
    std::vector<int32_t> params = inputs;
    params.push_back(y);
    spec.cuda = launch("mp_main_r0_r", 1, params);
    spec.cuda->error_record = true;
    b.routine(spec);
    b.output(y);
    b.cuda = program(90);
    b.version = 4;
    Module module;
    ASSERT_OK(loadBuilt(b.build(), module));
    Session cuda, cpu;
    ASSERT_OK(stepByStep(module, cuda));
    ASSERT_OK(Session::create(module, cpu, MIXPREC_BACKEND_CPU));
    int64_t elements = 1;
    for (int64_t d : c.dataShape)
      elements *= d;
    const std::vector<float> data(elements, 1.0f), updates(2, 2.0f);
    for (Session *session : {&cuda, &cpu}) {
      ASSERT_OK(session->bindInput("x", c.dataShape, data.data()));
      ASSERT_OK(session->bindInput("idx", MIXPREC_DTYPE_I64, c.indexShape, c.indices.data(),
                                   c.indices.size() * 8));
      if (!c.updateShape.empty())
        ASSERT_OK(session->bindInput("u", c.updateShape, updates.data()));
    }
    const std::string report = "mp_main_r0_r " + std::to_string(params.size()) + " 1 " +
                               std::to_string(c.position) + " " +
                               std::to_string(c.indices[c.position]);
    ::setenv("MIXPREC_FAKE_CUDA_REPORT", report.c_str(), 1);
    Status got = cuda.run();
    ::unsetenv("MIXPREC_FAKE_CUDA_REPORT");
    Status want = cpu.run();
    ASSERT_EQ(want.code(), MIXPREC_EXECUTION_ERROR) << want.message();
    EXPECT_EQ(got.code(), want.code());
    EXPECT_STREQ(got.message(), want.message());
  }
}

TEST(FakeCuda, ErrorRecordNeedsVersion4AndAReportingRoutine) {
  ModuleBuilder b = errorRecordModule(false);
  b.version = 3;
  Module module;
  Status s = loadBuilt(b.build(), module);
  EXPECT_TRUE(failsWith(s, MIXPREC_INVALID_MODULE,
                        "routine #0 'pick' (gather): CUDA launch: takes the error record, which "
                        "needs schema version 4 (the module says 3)"));
  b = errorRecordModule(false);
  b.routines[0].opType = "transpose";
  b.routines[0].options = transposeOptions({1, 0});
  b.routines[0].inputs = {0};
  b.routines[0].cuda->params = {0, b.routines[0].outputs[0]};
  b.tensors[b.routines[0].outputs[0]].shape = {2, 4};
  s = loadBuilt(b.build(), module);
  EXPECT_EQ(s.code(), MIXPREC_INVALID_MODULE) << s.message();
  EXPECT_NE(std::string(s.message()).find("takes the error record, which only gather"),
            std::string::npos)
      << s.message();
}

TEST(FakeCuda, GraphCaptureAndItsOption) {
  // The fake driver cannot capture: a kernel-only module tries to (and says
  // so) unless graphs are turned off, and then runs step by step.
  Module module;
  ASSERT_OK(loadBuilt(kernelModule().build(), module));
  Session graphs, steps;
  ASSERT_OK(Session::create(module, graphs, MIXPREC_BACKEND_CUDA));
  EXPECT_NE(std::string(graphs.backendReason()).find("runs replay a CUDA graph"),
            std::string::npos)
      << graphs.backendReason();
  const std::vector<float> x(256, 1.0f);
  ASSERT_OK(graphs.bindInput("x", {256}, x.data()));
  EXPECT_TRUE(failsWith(graphs.run(), MIXPREC_EXECUTION_ERROR,
                        "CUDA backend: cuStreamBeginCapture: CUDA_ERROR_NOT_SUPPORTED"));
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = MIXPREC_BACKEND_CUDA;
  options.disable_cuda_graphs = 1;
  ASSERT_OK(Session::create(module, steps, options));
  EXPECT_NE(std::string(steps.backendReason()).find("runs are launched step by step"),
            std::string::npos)
      << steps.backendReason();
  ASSERT_OK(steps.bindInput("x", {256}, x.data()));
  ASSERT_OK(steps.run());
  // The environment variable does the same for every session.
  ::setenv("MIXPREC_CUDA_GRAPHS", "0", 1);
  Session fromEnvironment;
  ASSERT_OK(Session::create(module, fromEnvironment, MIXPREC_BACKEND_CUDA));
  ::unsetenv("MIXPREC_CUDA_GRAPHS");
  ASSERT_OK(fromEnvironment.bindInput("x", {256}, x.data()));
  ASSERT_OK(fromEnvironment.run());
}

} // namespace
} // namespace mixprec::testing

namespace mixprec::testing {
namespace {

/// x [6] f32 -> all_reduce (sum) -> y: a data-parallel step's reduction.
ModuleBuilder allReduceModule() {
  ModuleBuilder b;
  const int g = b.input("x", fb::DType::F32, {6});
  const int y = b.activation("y", fb::DType::F32, {6});
  fb::AllReduceOptionsT options;
  options.reduction = 0;
  fb::RoutineOptionsUnion u;
  u.Set(std::move(options));
  b.routine({"grads", "all_reduce", {g}, {y}, u});
  b.output(y);
  b.cuda = program(90);
  return b;
}

/// A world of 2 whose other rank contributed 10 to every element; records
/// the pointers and streams it was given. Device memory is host memory on
/// the fake driver, so it can add in place either way.
struct TwoRanks {
  std::vector<std::pair<void *, void *>> calls;
  static int allReduce(void *context, void *data, size_t count, mixprec_dtype_t,
                       mixprec_reduce_op_t, void *stream, char *, size_t) {
    auto *self = static_cast<TwoRanks *>(context);
    self->calls.push_back({data, stream});
    for (size_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] += 10;
    return 0;
  }
  mixprec_collective_t table(bool device) {
    mixprec_collective_t c{};
    c.struct_size = sizeof c;
    c.context = this;
    c.rank = 0;
    c.world_size = 2;
    c.device_buffers = device ? 1 : 0;
    c.all_reduce = &TwoRanks::allReduce;
    return c;
  }
};

TEST(FakeCuda, AllReduceOnDeviceBuffersOrThroughTheHost) {
  Module module;
  ASSERT_OK(loadBuilt(allReduceModule().build(), module));
  const std::vector<float> g = {1, 2, 3, 4, 5, 6};
  const std::vector<float> want = {11, 12, 13, 14, 15, 16};
  for (bool device : {true, false}) {
    Session session;
    ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CUDA));
    TwoRanks world;
    mixprec_collective_t c = world.table(device);
    ASSERT_OK(session.setCollective(&c));
    EXPECT_EQ(runOn(session, {6}, g, 0), want) << "device buffers " << device;
    ASSERT_EQ(world.calls.size(), 1u);
    // A device collective (NCCL) gets the session's stream; a host one
    // (MPI) a host copy and no stream.
    EXPECT_EQ(world.calls[0].second, device ? session.stream() : nullptr);
    // Without a collective: a copy, on either path.
    ASSERT_OK(session.setCollective(nullptr));
    EXPECT_EQ(runOn(session, {6}, g, 0), g);
  }
}

/// For a job of `world` ranks: x [world*3] f32 -> rank_slice "slice" -> xs
/// [3] (output 0), p [3] f32 -> all_gather "gather" -> pa [world*3] (output
/// 1); both on the host in the module (no Routine.cuda), which the CUDA
/// backend runs on the device all the same.
ModuleBuilder shardModule(int64_t world) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {world * 3});
  const int p = b.input("p", fb::DType::F32, {3});
  const int xs = b.activation("xs", fb::DType::F32, {3});
  const int pa = b.activation("pa", fb::DType::F32, {world * 3});
  fb::ShardOptionsT options;
  options.world = world;
  fb::RoutineOptionsUnion u;
  u.Set(options);
  b.routine({"slice", "rank_slice", {x}, {xs}, u});
  b.routine({"gather", "all_gather", {p}, {pa}, u});
  b.output(xs);
  b.output(pa);
  b.cuda = program(90);
  return b;
}

/// Rank `rank` of 2 whose other rank sent 100, 101, ...; records the
/// pointers, the count and the stream it was given, and what `send` held.
/// Device memory is host memory on the fake driver, so it can read `send`
/// and write `recv` either way.
struct TwoRankGather {
  struct Call {
    const void *send;
    void *recv;
    size_t count;
    mixprec_dtype_t dtype;
    void *stream;
    std::vector<float> sent;
  };
  std::vector<Call> calls;
  int rank = 1;
  static int allReduce(void *, void *, size_t, mixprec_dtype_t, mixprec_reduce_op_t, void *, char *,
                       size_t) {
    return 1; // never called here
  }
  static int allGather(void *context, const void *send, void *recv, size_t count,
                       mixprec_dtype_t dtype, void *stream, char *, size_t) {
    auto *self = static_cast<TwoRankGather *>(context);
    const float *in = static_cast<const float *>(send);
    self->calls.push_back({send, recv, count, dtype, stream, std::vector<float>(in, in + count)});
    float *out = static_cast<float *>(recv);
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < count; ++i)
        out[r * count + i] = r == self->rank ? in[i] : static_cast<float>(100 + i);
    return 0;
  }
  mixprec_collective_t table(bool device) {
    mixprec_collective_t c{};
    c.struct_size = sizeof c;
    c.context = this;
    c.rank = rank;
    c.world_size = 2;
    c.device_buffers = device ? 1 : 0;
    c.all_reduce = &TwoRankGather::allReduce;
    c.all_gather = &TwoRankGather::allGather;
    return c;
  }
};

TEST(FakeCuda, ShardedStepsOnDeviceBuffersOrThroughTheHost) {
  Module module;
  ASSERT_OK(loadBuilt(shardModule(2).build(), module));
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> p = {10, 11, 12};
  for (bool device : {true, false}) {
    SCOPED_TRACE(device ? "device buffers" : "host buffers");
    Session session;
    ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CUDA));
    // The outputs in device buffers: pa, with its bytes to itself, is
    // written in place, so a device collective's recv is this buffer.
    Buffer slice, gathered;
    ASSERT_OK(Buffer::create(session, 12, slice));
    ASSERT_OK(Buffer::create(session, 24, gathered));
    ASSERT_OK(session.bindOutputBuffer(0, slice));
    ASSERT_OK(session.bindOutputBuffer(1, gathered));
    ASSERT_OK(session.bindInput("x", {6}, x.data()));
    ASSERT_OK(session.bindInput("p", {3}, p.data()));

    // Without a collective: a job of one process, not of two.
    EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                          "routine #0 'slice' (rank_slice): the step was compiled for a job of 2 "
                          "ranks (sharded optimizer state); this session's is one process "
                          "without a collective"));

    TwoRankGather world;
    mixprec_collective_t c = world.table(device);
    ASSERT_OK(session.setCollective(&c));
    ASSERT_OK(session.run());
    std::vector<float> got(3);
    ASSERT_OK(slice.copyToHost(got.data(), 12));
    EXPECT_EQ(got, (std::vector<float>{4, 5, 6})); // rank 1's slice
    got.resize(6);
    ASSERT_OK(gathered.copyToHost(got.data(), 24));
    EXPECT_EQ(got, (std::vector<float>{100, 101, 102, 10, 11, 12}));
    ASSERT_EQ(world.calls.size(), 1u);
    const TwoRankGather::Call &call = world.calls[0];
    EXPECT_EQ(call.count, 3u);
    EXPECT_EQ(call.dtype, MIXPREC_DTYPE_F32);
    EXPECT_EQ(call.sent, p);
    EXPECT_NE(call.send, static_cast<const void *>(p.data()));
    if (device) {
      // A device collective (NCCL) gets device pointers and the stream.
      EXPECT_EQ(call.stream, session.stream());
      EXPECT_NE(call.stream, nullptr);
      EXPECT_EQ(reinterpret_cast<uint64_t>(call.recv), gathered.deviceAddress());
    } else {
      // A host one (MPI) host copies, no stream; the result goes back to
      // the device.
      EXPECT_EQ(call.stream, nullptr);
      EXPECT_NE(reinterpret_cast<uint64_t>(call.recv), gathered.deviceAddress());
    }

    // Rank 0: the first slice, its part first.
    TwoRankGather first;
    first.rank = 0;
    c = first.table(device);
    ASSERT_OK(session.setCollective(&c));
    ASSERT_OK(session.run());
    got.resize(3);
    ASSERT_OK(slice.copyToHost(got.data(), 12));
    EXPECT_EQ(got, (std::vector<float>{1, 2, 3}));
    got.resize(6);
    ASSERT_OK(gathered.copyToHost(got.data(), 24));
    EXPECT_EQ(got, (std::vector<float>{10, 11, 12, 100, 101, 102}));
    EXPECT_EQ(first.calls.size(), 1u);

    // The first version of the table (no all_gather): the step says why.
    TwoRankGather old;
    c = old.table(device);
    c.struct_size = offsetof(mixprec_collective_t, all_gather);
    ASSERT_OK(session.setCollective(&c));
    EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                          "routine #1 'gather' (all_gather): the session's collective has no "
                          "all_gather"));
    EXPECT_TRUE(old.calls.empty());
  }

  // A job of one rank without a collective: both steps copy on the device.
  Module single;
  ASSERT_OK(loadBuilt(shardModule(1).build(), single));
  Session session;
  ASSERT_OK(Session::create(single, session, MIXPREC_BACKEND_CUDA));
  const std::vector<float> x1 = {7, 8, 9};
  ASSERT_OK(session.bindInput("x", {3}, x1.data()));
  ASSERT_OK(session.bindInput("p", {3}, p.data()));
  ASSERT_OK(session.run());
  std::vector<float> out;
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, x1);
  ASSERT_OK(session.copyOutput(1, out));
  EXPECT_EQ(out, p);
}

} // namespace
} // namespace mixprec::testing
