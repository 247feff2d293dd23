//===- FakeCudaTest.cpp - the CUDA backend on a fake driver ---------------===//
//
// Runs without a GPU: the runtime loads runtime/tests/FakeCudaDriver.c as
// its driver (a "Fake GPU", sm_90, whose device memory is host memory and
// whose kernel launches do nothing). So the CUDA backend's own paths are
// checked here: modules without CUDA code or without code for the device,
// out of device memory, routine steps run on the host (results equal to the
// CPU backend's, through device memory) unless they have a kernel, the `zeroed` tensors of a launch,
// device buffers and their bindings, and the graph option. Kernels and
// GEMMs computing on a device are the `gpu` tests' part.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestModules.h"
#include "tests/unit/runtime/TestUtil.h"

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
