//===- DeviceApiTest.cpp - buffers, binding, async runs on the CPU --------===//
//
// The device API (mixprec_buffer_*, bind_*_buffer, run_async, wait, stream)
// on the CPU backend, where a "device buffer" is host memory and a run is
// over when run_async returns: results equal those of host bindings bit for
// bit, and every bad argument is a status naming what is wrong.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestModules.h"
#include "tests/unit/runtime/TestUtil.h"

namespace mixprec::testing {
namespace {

/// Whether `status` has `code` and its message contains `text`.
::testing::AssertionResult failsWith(const Status &status, mixprec_status_code_t code,
                                     const std::string &text) {
  if (status.code() == code && std::string(status.message()).find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.codeName() << ": " << status.message()
                                       << " (expected " << mixprec_status_code_name(code)
                                       << " containing '" << text << "')";
}

constexpr size_t kXBytes = 5 * 24 * 4, kLogitsBytes = 5 * 10 * 4;

TEST(DeviceApi, BuffersHoldHostBytes) {
  Module module;
  Session session;
  openCpu(mlpBuilder(false).build(), module, session);
  EXPECT_EQ(session.stream(), nullptr); // the CPU backend has no stream
  Buffer buffer;
  ASSERT_OK(Buffer::create(session, 64, buffer));
  EXPECT_EQ(buffer.size(), 64u);
  EXPECT_EQ(buffer.backend(), MIXPREC_BACKEND_CPU);
  EXPECT_NE(buffer.deviceAddress(), 0u);
  std::vector<uint8_t> zeros(64, 0xff), bytes(16);
  ASSERT_OK(buffer.copyToHost(zeros.data(), 64));
  EXPECT_EQ(zeros, std::vector<uint8_t>(64, 0)); // created cleared
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i + 1);
  ASSERT_OK(buffer.copyFromHost(bytes.data(), 16, 40));
  std::vector<uint8_t> back(16);
  ASSERT_OK(buffer.copyToHost(back.data(), 16, 40));
  EXPECT_EQ(back, bytes);
  EXPECT_TRUE(failsWith(buffer.copyToHost(back.data(), 16, 49), MIXPREC_SHAPE_MISMATCH,
                        "16 bytes at offset 49 do not fit the buffer's 64 bytes"));
  EXPECT_TRUE(failsWith(buffer.copyFromHost(nullptr, 4), MIXPREC_INVALID_ARGUMENT,
                        "data must not be NULL"));
  // A huge offset does not wrap around.
  EXPECT_EQ(buffer.copyToHost(back.data(), 16, SIZE_MAX - 4).code(), MIXPREC_SHAPE_MISMATCH);
  Buffer empty;
  ASSERT_OK(Buffer::create(session, 0, empty));
  EXPECT_EQ(empty.size(), 0u);
  ASSERT_OK(empty.copyFromHost(nullptr, 0));
}

TEST(DeviceApi, BoundBuffersGiveTheHostBindingsResults) {
  Module module;
  Session session;
  openCpu(mlpBuilder(false).build(), module, session);
  const std::vector<float> x = seededFloats(5 * 24, 7, -3, 3);
  // Host bindings: the reference.
  ASSERT_OK(session.bindInput("x", {5, 24}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(50);
  ASSERT_OK(session.copyOutput(1, MIXPREC_DTYPE_F32, want.data(), kLogitsBytes));

  // The same through buffers, asynchronously.
  Buffer in, out;
  ASSERT_OK(Buffer::create(session, kXBytes, in));
  ASSERT_OK(Buffer::create(session, kLogitsBytes, out));
  ASSERT_OK(in.copyFromHost(x.data(), kXBytes));
  ASSERT_OK(session.bindInputBuffer(0, in));
  ASSERT_OK(session.bindOutputBuffer(1, out));
  ASSERT_OK(session.runAsync());
  ASSERT_OK(session.wait());
  std::vector<float> got(50);
  ASSERT_OK(out.copyToHost(got.data(), kLogitsBytes));
  EXPECT_TRUE(bitEqual(got, want));
  // A bound output still reads through copy_output.
  std::vector<float> copied(50);
  ASSERT_OK(session.copyOutput(1, MIXPREC_DTYPE_F32, copied.data(), kLogitsBytes));
  EXPECT_TRUE(bitEqual(copied, want));
  // wait with nothing in flight returns at once.
  ASSERT_OK(session.wait());

  // New input bytes in the buffer are read by the next run; the released
  // handles' memory stays with the session while bound.
  const std::vector<float> x2 = seededFloats(5 * 24, 8, -3, 3);
  ASSERT_OK(in.copyFromHost(x2.data(), kXBytes));
  const uint64_t outAddress = out.deviceAddress();
  in = Buffer();
  out = Buffer();
  ASSERT_OK(session.run());
  std::vector<float> viaBuffer(50);
  const auto *written = reinterpret_cast<const float *>(static_cast<uintptr_t>(outAddress));
  viaBuffer.assign(written, written + 50); // host memory on the CPU backend
  ASSERT_OK(session.bindInput("x", {5, 24}, x2.data())); // replaces the buffer binding
  ASSERT_OK(session.unbindOutputBuffer(1));
  ASSERT_OK(session.run());
  std::vector<float> viaHost(50);
  ASSERT_OK(session.copyOutput(1, MIXPREC_DTYPE_F32, viaHost.data(), kLogitsBytes));
  EXPECT_TRUE(bitEqual(viaBuffer, viaHost));
  EXPECT_FALSE(bitEqual(viaHost, want));
}

TEST(DeviceApi, RunAsyncHoldsTheSessionUntilWait) {
  Module module;
  Session session;
  openCpu(mlpBuilder(false).build(), module, session);
  const std::vector<float> x(5 * 24, 0.5f);
  ASSERT_OK(session.bindInput("x", {5, 24}, x.data()));
  ASSERT_OK(session.runAsync());
  const std::string inFlight = "a run is in flight: call mixprec_session_wait first";
  std::vector<float> logits(50);
  EXPECT_TRUE(failsWith(session.copyOutput(1, MIXPREC_DTYPE_F32, logits.data(), kLogitsBytes),
                        MIXPREC_FAILED_PRECONDITION, "copy_output: " + inFlight));
  EXPECT_TRUE(failsWith(session.bindInput("x", {5, 24}, x.data()), MIXPREC_FAILED_PRECONDITION,
                        "bind_input: " + inFlight));
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION, "run: " + inFlight));
  EXPECT_TRUE(failsWith(session.runAsync(), MIXPREC_FAILED_PRECONDITION, inFlight));
  Buffer buffer;
  ASSERT_OK(Buffer::create(session, kLogitsBytes, buffer));
  EXPECT_TRUE(failsWith(session.bindOutputBuffer(1, buffer), MIXPREC_FAILED_PRECONDITION,
                        "bind_output_buffer: " + inFlight));
  ASSERT_OK(session.wait());
  ASSERT_OK(session.copyOutput(1, MIXPREC_DTYPE_F32, logits.data(), kLogitsBytes));
}

TEST(DeviceApi, BadBindingsAreStatuses) {
  Module module;
  Session session, other;
  openCpu(mlpBuilder(false).build(), module, session);
  ASSERT_OK(Session::create(module, other, MIXPREC_BACKEND_CPU));
  Buffer small, right, foreign;
  ASSERT_OK(Buffer::create(session, kXBytes - 4, small));
  ASSERT_OK(Buffer::create(session, kXBytes, right));
  ASSERT_OK(Buffer::create(other, kXBytes, foreign));
  EXPECT_TRUE(failsWith(session.bindInputBuffer(0, small), MIXPREC_SHAPE_MISMATCH,
                        "input 'x' is [5,24] f32 (480 bytes), the buffer has 476 bytes"));
  EXPECT_TRUE(failsWith(session.bindOutputBuffer(0, right), MIXPREC_SHAPE_MISMATCH,
                        "output 'probs' is [5,10] f32 (200 bytes), the buffer has 480 bytes"));
  EXPECT_TRUE(failsWith(session.bindInputBuffer(0, foreign), MIXPREC_INVALID_ARGUMENT,
                        "input 'x': the buffer was created by another session (on the cpu "
                        "backend; this session runs on cpu)"));
  EXPECT_TRUE(failsWith(session.bindInputBuffer(1, right), MIXPREC_INVALID_ARGUMENT,
                        "input index 1 out of range: the module has 1 inputs"));
  EXPECT_TRUE(failsWith(session.bindOutputBuffer(5, right), MIXPREC_INVALID_ARGUMENT,
                        "output index 5 out of range: the module has 5 outputs"));
  // A failed binding leaves the input unbound.
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION, "'x' is not bound"));

  // NULL handles.
  auto code = [](mixprec_status_t s) {
    Status owned(s);
    return owned.code();
  };
  mixprec_buffer_t raw = nullptr;
  EXPECT_EQ(code(mixprec_buffer_create(nullptr, 4, &raw)), MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_buffer_create(session.handle(), 4, nullptr)), MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_session_bind_input_buffer(session.handle(), 0, nullptr)),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_session_bind_input_buffer(nullptr, 0, right.handle())),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_session_bind_output_buffer(nullptr, 0, nullptr)),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_session_run_async(nullptr)), MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_session_wait(nullptr)), MIXPREC_INVALID_ARGUMENT);
  uint8_t byte = 0;
  EXPECT_EQ(code(mixprec_buffer_copy_from_host(nullptr, 0, &byte, 1)), MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(code(mixprec_buffer_copy_to_host(nullptr, 0, &byte, 1)), MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(mixprec_buffer_size(nullptr), 0u);
  EXPECT_EQ(mixprec_buffer_device_address(nullptr), 0u);
  EXPECT_EQ(mixprec_buffer_backend(nullptr), MIXPREC_BACKEND_AUTO);
  EXPECT_EQ(mixprec_session_stream(nullptr), nullptr);
  mixprec_buffer_release(nullptr);
}

TEST(DeviceApi, OlderOptionsStructsKeepGraphsOn) {
  // A caller built before disable_cuda_graphs passes a smaller struct: still
  // accepted, the new field at its default.
  Module module;
  ASSERT_OK(loadBuilt(mlpBuilder(false).build(), module));
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  EXPECT_EQ(options.disable_cuda_graphs, 0);
  options.backend = MIXPREC_BACKEND_CPU;
  options.struct_size = offsetof(mixprec_session_options_t, disable_cuda_graphs);
  Session session;
  ASSERT_OK(Session::create(module, session, options));
  options.struct_size = sizeof(options);
  options.disable_cuda_graphs = 1;
  ASSERT_OK(Session::create(module, session, options));
}

} // namespace
} // namespace mixprec::testing
