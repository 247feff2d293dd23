//===- StateTest.cpp - module state and checkpoints, from mp IR -------------===//
//
// A hand-written training-step-shaped graph with one state (GraphBase.td,
// mp.state) compiled by the compiler API into a module and run on the CPU
// backend through the C++ API: the state persists and advances run by run
// as computed by hand, reads, writes and resets, checkpoints that resume bit
// for bit, checkpoints refused (another model, a newer format, truncated,
// corrupted) with the state untouched, a failed run that commits nothing,
// and a process killed in the middle of writing a checkpoint.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile/Compile.h"
#include "mixprec/runtime.hpp"
#include "runtime/format/ModuleHash.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using mixprec::Module;
using mixprec::Session;
using mixprec::Status;

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    Status s_ = (expr);                                                                            \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.codeName() << ": " << s_.message();              \
  } while (0)

/// step(s, x, idx): s_new = s * 0.5 + x; out = reduce_sum(s_new); g =
/// gather(s_new, idx), which fails on an index out of range after s_new is
/// computed. The state comes first, so its bytes are the arena's lowest: a
/// plan that let a later buffer reuse them would put g there, where the
/// commit would overwrite it (the memory plan reserves them; the loader
/// refuses an output sharing a state's bytes).
constexpr const char *kStep = R"(
func.func @main(%s: tensor<4xf32> {mp.name = "s", mp.state = "s",
                       mp.state_init = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>},
    %x: tensor<4xf32> {mp.name = "x"},
    %idx: tensor<2xi64> {mp.name = "idx"})
    -> (tensor<1xf32> {mp.name = "out"}, tensor<2xf32> {mp.name = "g"},
        tensor<4xf32> {mp.state_update = "s"}) {
  %half = mp.constant dense<0.5> : tensor<4xf32>
  %m = mp.mul %s, %half : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %n = mp.add %m, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %out = mp.reduce_sum %n {axes = array<i64: 0>} : tensor<4xf32> -> tensor<1xf32>
  %g = mp.gather %n, %idx {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %out, %g, %n : tensor<1xf32>, tensor<2xf32>, tensor<4xf32>
}
)";

/// The same with its state called `t` (another model's checkpoint).
std::string otherModel() {
  std::string ir = kStep;
  for (const char *from : {"mp.state = \"s\"", "mp.state_update = \"s\""}) {
    std::string to = from;
    to[to.size() - 2] = 't';
    ir.replace(ir.find(from), std::strlen(from), to);
  }
  return ir;
}

/// Compiles `ir` at FP32 into a loaded module; the test fails with the
/// compiler's first error otherwise.
Module compile(const std::string &ir) {
  mlir::MLIRContext context;
  mixprec::compiler::prepareContext(context);
  std::string first;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (first.empty())
      first = diag.str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
  Module loaded;
  if (!module) {
    ADD_FAILURE() << "parse: " << first;
    return loaded;
  }
  mixprec::passes::PrecisionPipelineOptions precision;
  if (failed(mixprec::compiler::compilePrecision(*module, precision,
                                                  mixprec::compiler::ExistingPlan::Keep))) {
    ADD_FAILURE() << "precision: " << first;
    return loaded;
  }
  mixprec::codegen::ModuleWriteOptions options;
  mixprec::codegen::ModuleStats stats;
  auto image = mixprec::compiler::buildModule(*module, "step.mpk.weights", options, stats);
  if (failed(image)) {
    ADD_FAILURE() << "build: " << first;
    return loaded;
  }
  Status s = Module::loadFromMemory(image->module.data(), image->module.size(), loaded);
  EXPECT_TRUE(s.ok()) << s.message();
  return loaded;
}

class StateTest : public ::testing::Test {
protected:
  void SetUp() override {
    module = compile(kStep);
    ASSERT_TRUE(module.valid());
    ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CPU));
    dir = ::testing::TempDir() + "mixprec_state_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    ASSERT_OK(bind(session, {0.5f, -1.0f, 2.0f, 0.0f}, {3, 0}));
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  static Status bind(Session &on, const std::vector<float> &x, const std::vector<int64_t> &idx) {
    Status s = on.bindInput("x", {4}, x.data());
    if (!s.ok())
      return s;
    return on.bindInput("idx", MIXPREC_DTYPE_I64, {2}, idx.data(), idx.size() * 8);
  }
  static std::vector<float> state(Session &of) {
    std::vector<float> s(4);
    Status status = of.readState("s", s.data(), 16);
    EXPECT_TRUE(status.ok()) << status.message();
    return s;
  }
  /// Runs once; returns out, then g.
  static std::vector<float> run(Session &on) {
    std::vector<float> out, g;
    Status s = on.run();
    if (s.ok())
      s = on.copyOutput(0, out);
    if (s.ok())
      s = on.copyOutput(1, g);
    EXPECT_TRUE(s.ok()) << s.message();
    out.insert(out.end(), g.begin(), g.end());
    return out;
  }
  static bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
  }

  Module module;
  Session session;
  std::string dir;
};

TEST_F(StateTest, StateIsNeitherInputNorOutput) {
  EXPECT_EQ(module.schemaVersion(), 3u);
  ASSERT_EQ(module.inputCount(), 2u);
  ASSERT_EQ(module.outputCount(), 2u);
  mixprec_tensor_info_t info;
  ASSERT_OK(module.inputInfo(0, info));
  EXPECT_STREQ(info.name, "x");
  ASSERT_OK(module.inputInfo(1, info));
  EXPECT_STREQ(info.name, "idx");
  ASSERT_OK(module.outputInfo(1, info));
  EXPECT_STREQ(info.name, "g");
  ASSERT_EQ(module.stateCount(), 1u);
  ASSERT_OK(module.stateInfo(0, info));
  EXPECT_STREQ(info.name, "s");
  EXPECT_EQ(info.dtype, MIXPREC_DTYPE_F32);
  ASSERT_EQ(info.rank, 1u);
  EXPECT_EQ(info.dims[0], 4);
  size_t index = 0;
  EXPECT_EQ(module.findInput("s", index).code(), MIXPREC_NOT_FOUND);
}

TEST_F(StateTest, ThreeRunsAsComputedByHand) {
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.0f};
  std::vector<float> s = {1, 2, 3, 4};
  EXPECT_EQ(state(session), s);
  for (int r = 1; r <= 3; ++r) {
    float sum = 0;
    for (int i = 0; i < 4; ++i) {
      s[i] = s[i] * 0.5f + x[i];
      sum += s[i];
    }
    EXPECT_EQ(run(session), (std::vector<float>{sum, s[3], s[0]})) << "run " << r;
    EXPECT_EQ(state(session), s) << "run " << r;
  }
  // By hand: [1,2,3,4] -> [1,0,3.5,2] -> [1,-1,3.75,1] -> [1,-1.5,3.875,0.5].
  EXPECT_EQ(s, (std::vector<float>{1.0f, -1.5f, 3.875f, 0.5f}));
}

TEST_F(StateTest, ReadWriteReset) {
  const std::vector<float> written = {10, 20, 30, 40};
  ASSERT_OK(session.writeState("s", written.data(), 16));
  EXPECT_EQ(state(session), written);
  EXPECT_EQ(run(session), (std::vector<float>{51.5f, 20.0f, 5.5f}));
  ASSERT_OK(session.resetState());
  EXPECT_EQ(state(session), (std::vector<float>{1, 2, 3, 4}));
  // Wrong size, unknown name.
  EXPECT_EQ(session.writeState("s", written.data(), 12).code(), MIXPREC_SHAPE_MISMATCH);
  std::vector<float> buffer(4);
  Status s = session.readState("w", buffer.data(), 16);
  EXPECT_EQ(s.code(), MIXPREC_NOT_FOUND);
  EXPECT_NE(std::string(s.message()).find("the module's states are: s"), std::string::npos)
      << s.message();
  EXPECT_EQ(state(session), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(StateTest, FailedRunLeavesStateUntouched) {
  run(session);
  const std::vector<float> before = state(session);
  // Index 7 is out of range for the gather, which runs after s_new is computed.
  ASSERT_OK(bind(session, {0.5f, -1.0f, 2.0f, 0.0f}, {0, 7}));
  Status s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_EXECUTION_ERROR) << s.message();
  EXPECT_TRUE(sameBits(state(session), before));
  ASSERT_OK(bind(session, {0.5f, -1.0f, 2.0f, 0.0f}, {0, 1}));
  run(session);
  EXPECT_EQ(state(session), (std::vector<float>{1.0f, -1.0f, 3.75f, 1.0f}));
}

TEST_F(StateTest, CheckpointResumesBitForBit) {
  // Inputs whose arithmetic rounds, different every run.
  auto inputs = [](int r) {
    return std::vector<float>{0.1f * r, -0.37f / r, 1.0f / 3 + r, 2.7182817f * r};
  };
  const std::string path = dir + "/step.ckpt";
  for (int r = 1; r <= 2; ++r) {
    ASSERT_OK(bind(session, inputs(r), {0, 3}));
    run(session);
  }
  const char blob[] = "step=2 rng=12345";
  ASSERT_OK(session.saveCheckpoint(path.c_str(), blob, sizeof(blob)));
  std::vector<std::vector<float>> uninterrupted;
  for (int r = 3; r <= 5; ++r) {
    ASSERT_OK(bind(session, inputs(r), {0, 3}));
    uninterrupted.push_back(run(session));
    uninterrupted.push_back(state(session));
  }

  Session resumed;
  ASSERT_OK(Session::create(module, resumed, MIXPREC_BACKEND_CPU));
  char back[64] = {};
  size_t backBytes = 0;
  ASSERT_OK(resumed.loadCheckpoint(path.c_str(), back, sizeof(back), backBytes));
  EXPECT_EQ(backBytes, sizeof(blob));
  EXPECT_STREQ(back, blob);
  for (int r = 3; r <= 5; ++r) {
    ASSERT_OK(bind(resumed, inputs(r), {0, 3}));
    EXPECT_TRUE(sameBits(run(resumed), uninterrupted[2 * (r - 3)])) << "run " << r;
    EXPECT_TRUE(sameBits(state(resumed), uninterrupted[2 * (r - 3) + 1])) << "run " << r;
  }
  // A user blob larger than the buffer given: refused, nothing changed.
  ASSERT_OK(resumed.resetState());
  Status s = resumed.loadCheckpoint(path.c_str(), back, 4, backBytes);
  EXPECT_EQ(s.code(), MIXPREC_SHAPE_MISMATCH) << s.message();
  EXPECT_EQ(state(resumed), (std::vector<float>{1, 2, 3, 4}));
}

/// Loading `path` into `session` fails with `code` and a message holding
/// `text`, and leaves the state as it was.
void expectRefused(Session &session, const std::string &path, mixprec_status_code_t code,
                   const std::string &text) {
  std::vector<float> before(4), after(4);
  ASSERT_OK(session.readState("s", before.data(), 16));
  Status s = session.loadCheckpoint(path.c_str());
  EXPECT_EQ(s.code(), code) << s.codeName() << ": " << s.message();
  EXPECT_NE(std::string(s.message()).find(text), std::string::npos) << s.message();
  ASSERT_OK(session.readState("s", after.data(), 16));
  EXPECT_EQ(std::memcmp(before.data(), after.data(), 16), 0);
}

std::vector<char> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

TEST_F(StateTest, BadCheckpointsAreRefusedAndChangeNothing) {
  const std::string path = dir + "/good.ckpt", bad = dir + "/bad.ckpt";
  run(session);
  ASSERT_OK(session.saveCheckpoint(path.c_str(), "abc", 3));
  run(session); // the state now differs from the checkpoint's
  const std::vector<char> good = readAll(path);
  ASSERT_GT(good.size(), 40u);

  // Another model's checkpoint (its state is called t).
  Module other = compile(otherModel());
  ASSERT_TRUE(other.valid());
  Session otherSession;
  ASSERT_OK(Session::create(other, otherSession, MIXPREC_BACKEND_CPU));
  ASSERT_OK(otherSession.saveCheckpoint(bad.c_str()));
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT,
                "it has no state 's' (a checkpoint of another model)");

  // A newer format version.
  std::vector<char> bytes = good;
  bytes[8] = 3;
  writeAll(bad, bytes);
  expectRefused(session, bad, MIXPREC_UNSUPPORTED_VERSION,
                "format version 3 is newer than this runtime reads (version 2)");

  // Version 1 (FNV-1a 64 checksum, the rest the same) still loads, and is
  // checked by its own checksum: the version 2 file relabelled fails it.
  ASSERT_EQ(good[8], 2);
  bytes = good;
  bytes[8] = 1;
  writeAll(bad, bytes);
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT, "checksum mismatch");
  const uint64_t fnv = mixprec::runtime::fnv1a64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &fnv, 8);
  const std::string v1 = dir + "/v1.ckpt";
  writeAll(v1, bytes);
  {
    size_t v1Blob = 0;
    char blob[3];
    ASSERT_OK(session.loadCheckpoint(v1.c_str(), blob, 3, v1Blob));
    EXPECT_EQ(std::string(blob, 3), "abc");
  }
  bytes[bytes.size() / 2] ^= 0x40;
  writeAll(bad, bytes);
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT, "checksum mismatch");
  // The version 2 checksum is XXH64 of the bytes before it.
  {
    uint64_t stored = 0;
    std::memcpy(&stored, good.data() + good.size() - 8, 8);
    EXPECT_EQ(stored, mixprec::runtime::xxh64(good.data(), good.size() - 8));
  }

  // Truncated anywhere, or one byte changed.
  for (size_t size : {size_t(0), size_t(7), size_t(12), good.size() / 2, good.size() - 1}) {
    writeAll(bad, std::vector<char>(good.begin(), good.begin() + size));
    expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT, "checkpoint '" + bad + "': ");
  }
  bytes = good;
  bytes[bytes.size() / 2] ^= 0x40;
  writeAll(bad, bytes);
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT, "checksum mismatch");
  expectRefused(session, dir + "/missing.ckpt", MIXPREC_IO_ERROR, "missing.ckpt");

  // The good one still loads.
  size_t blobBytes = 0;
  ASSERT_OK(session.loadCheckpoint(path.c_str(), bytes.data(), 3, blobBytes));
  EXPECT_EQ(blobBytes, 3u);
}

TEST_F(StateTest, KilledWhileWritingACheckpointLeavesThePreviousOne) {
  const std::string path = dir + "/step.ckpt";
  run(session);
  ASSERT_OK(session.saveCheckpoint(path.c_str(), "one", 3));
  const std::vector<float> saved = state(session);
  run(session);
  const std::vector<float> later = state(session);
  ASSERT_NE(later, saved);

  // The child writes the later state with the test hook that stops the
  // writer halfway through the file; it is killed there.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("MIXPREC_TEST_CHECKPOINT_STALL", "1", 1);
    Status s = session.saveCheckpoint(path.c_str(), "two", 3);
    _exit(s.ok() ? 3 : 4); // not reached: the hook stalls the writer
  }
  bool started = false;
  for (int i = 0; i < 1000 && !started; ++i) {
    for (const auto &entry : std::filesystem::directory_iterator(dir))
      started |= entry.path().filename().string().rfind(".step.ckpt.tmp-", 0) == 0 &&
                 entry.file_size() > 0;
    if (!started)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited with " << WEXITSTATUS(status);
  ASSERT_TRUE(started) << "the child never started writing the checkpoint";

  char blob[8] = {};
  size_t blobBytes = 0;
  ASSERT_OK(session.loadCheckpoint(path.c_str(), blob, sizeof(blob), blobBytes));
  EXPECT_EQ(std::string(blob, blobBytes), "one");
  EXPECT_EQ(state(session), saved);
}

//===----------------------------------------------------------------------===//
// The checkpoint C API without a session (mixprec_checkpoint_write and
// mixprec_checkpoint_read_states): an application that keeps part of a
// state itself (a rank's slice of a sharded optimizer state) writes the
// whole; what it writes loads into a session of the module, reads back as
// written, and is the same file the session would have saved.
//===----------------------------------------------------------------------===//

/// A state of the API's form for `name`, `dtype`, `dims` and `data`, with
/// the element count and byte size of that shape.
mixprec_checkpoint_state_t apiState(const char *name, mixprec_dtype_t dtype,
                                    const std::vector<int64_t> &dims, const void *data) {
  mixprec_checkpoint_state_t state{};
  state.info.name = name;
  state.info.dtype = dtype;
  state.info.rank = dims.size();
  state.info.dims = dims.data();
  size_t elements = 1;
  for (int64_t d : dims)
    elements *= static_cast<size_t>(d);
  state.info.element_count = elements;
  state.info.byte_size = elements * mixprec_dtype_size(dtype);
  state.data = data;
  return state;
}

/// What read_states gave for one state, copied.
struct SeenState {
  std::string name;
  mixprec_dtype_t dtype;
  std::vector<int64_t> dims;
  size_t elementCount, byteSize;
  std::vector<uint8_t> bytes;
};

/// Every state of `path`, in order; the status of the reading to `status`.
std::vector<SeenState> readStates(const std::string &path, Status &status) {
  std::vector<SeenState> seen;
  status = Session::readCheckpointStates(path.c_str(), [&](const mixprec_checkpoint_state_t &s) {
    const auto *bytes = static_cast<const uint8_t *>(s.data);
    seen.push_back({s.info.name, s.info.dtype,
                    std::vector<int64_t>(s.info.dims, s.info.dims + s.info.rank),
                    s.info.element_count, s.info.byte_size,
                    std::vector<uint8_t>(bytes, bytes + s.info.byte_size)});
    return true;
  });
  return seen;
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  const auto *p = reinterpret_cast<const uint8_t *>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

TEST_F(StateTest, CheckpointWrittenWithTheModulesStatesLoads) {
  ASSERT_EQ(module.stateCount(), 1u);
  mixprec_tensor_info_t info;
  ASSERT_OK(module.stateInfo(0, info));
  ASSERT_STREQ(info.name, "s");
  const std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  ASSERT_EQ(dims, (std::vector<int64_t>{4}));

  const std::vector<float> values = {9.0f, -1.5f, 0.25f, 7.0f};
  const mixprec_checkpoint_state_t whole = apiState("s", MIXPREC_DTYPE_F32, dims, values.data());
  const std::string path = dir + "/whole.ckpt";
  const char blob[] = "step=42";
  ASSERT_OK(Session::writeCheckpoint(path.c_str(), &whole, 1, blob, sizeof(blob)));

  char back[16] = {};
  size_t backBytes = 0;
  ASSERT_OK(session.loadCheckpoint(path.c_str(), back, sizeof(back), backBytes));
  EXPECT_EQ(backBytes, sizeof(blob));
  EXPECT_STREQ(back, blob);
  EXPECT_EQ(state(session), values);
  // And the session runs on from it: s = s * 0.5 + x (x = 0.5, -1, 2, 0).
  run(session);
  EXPECT_EQ(state(session), (std::vector<float>{5.0f, -1.75f, 2.125f, 3.5f}));

  // Another shape, dtype or name, or one state more: another model's, refused
  // with the state unchanged.
  const std::string bad = dir + "/bad.ckpt";
  const std::vector<int64_t> square = {2, 2};
  mixprec_checkpoint_state_t other = apiState("s", MIXPREC_DTYPE_F32, square, values.data());
  ASSERT_OK(Session::writeCheckpoint(bad.c_str(), &other, 1));
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT,
                "state 's' is f32 [2,2], the module's is f32 [4] (a checkpoint of another model)");
  const std::vector<uint16_t> halves(4, 0x3C00);
  other = apiState("s", MIXPREC_DTYPE_F16, dims, halves.data());
  ASSERT_OK(Session::writeCheckpoint(bad.c_str(), &other, 1));
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT,
                "state 's' is f16 [4], the module's is f32");
  other = apiState("t", MIXPREC_DTYPE_F32, dims, values.data());
  ASSERT_OK(Session::writeCheckpoint(bad.c_str(), &other, 1));
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT,
                "it has no state 's' (a checkpoint of another model)");
  const mixprec_checkpoint_state_t two[2] = {
      whole, apiState("extra", MIXPREC_DTYPE_F32, dims, values.data())};
  ASSERT_OK(Session::writeCheckpoint(bad.c_str(), two, 2));
  expectRefused(session, bad, MIXPREC_INVALID_ARGUMENT,
                "it has 2 states, the module 1 (a checkpoint of another model)");
}

/// Two states, a [2] and b [2,3], each halved every run; out = sum(a + x).
constexpr const char *kTwoStates = R"(
func.func @main(%a: tensor<2xf32> {mp.name = "a", mp.state = "a",
                       mp.state_init = dense<[1.0, 2.0]> : tensor<2xf32>},
    %b: tensor<2x3xf32> {mp.name = "b", mp.state = "b",
                       mp.state_init = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>},
    %x: tensor<2xf32> {mp.name = "x"})
    -> (tensor<1xf32> {mp.name = "out"}, tensor<2xf32> {mp.state_update = "a"},
        tensor<2x3xf32> {mp.state_update = "b"}) {
  %h2 = mp.constant dense<0.5> : tensor<2xf32>
  %h6 = mp.constant dense<0.5> : tensor<2x3xf32>
  %na = mp.mul %a, %h2 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %nb = mp.mul %b, %h6 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %s = mp.add %a, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %out = mp.reduce_sum %s {axes = array<i64: 0>} : tensor<2xf32> -> tensor<1xf32>
  return %out, %na, %nb : tensor<1xf32>, tensor<2xf32>, tensor<2x3xf32>
}
)";

TEST_F(StateTest, CheckpointWriteTakesTheModulesStatesInOrder) {
  Module two = compile(kTwoStates);
  ASSERT_TRUE(two.valid());
  ASSERT_EQ(two.stateCount(), 2u);
  Session on;
  ASSERT_OK(Session::create(two, on, MIXPREC_BACKEND_CPU));
  // The module's states in its order, with data of their sizes.
  const std::vector<float> a = {-3, 0.5f}, b = {10, 20, 30, 40, 50, 60};
  std::vector<mixprec_checkpoint_state_t> states;
  std::vector<std::vector<int64_t>> dims(2);
  for (size_t i = 0; i < 2; ++i) {
    mixprec_tensor_info_t info;
    ASSERT_OK(two.stateInfo(i, info));
    dims[i].assign(info.dims, info.dims + info.rank);
    const bool isA = std::string(info.name) == "a";
    states.push_back(apiState(isA ? "a" : "b", info.dtype, dims[i], isA ? a.data() : b.data()));
  }
  const std::string path = dir + "/two.ckpt";
  ASSERT_OK(Session::writeCheckpoint(path.c_str(), states.data(), 2));
  ASSERT_OK(on.loadCheckpoint(path.c_str()));
  std::vector<float> got(2);
  ASSERT_OK(on.readState("a", got.data(), 8));
  EXPECT_EQ(got, a);
  got.resize(6);
  ASSERT_OK(on.readState("b", got.data(), 24));
  EXPECT_EQ(got, b);
  // The same states the other way round: another fingerprint, refused.
  std::swap(states[0], states[1]);
  ASSERT_OK(Session::writeCheckpoint(path.c_str(), states.data(), 2));
  ASSERT_OK(on.resetState());
  Status s = on.loadCheckpoint(path.c_str());
  EXPECT_EQ(s.code(), MIXPREC_INVALID_ARGUMENT) << s.message();
  EXPECT_NE(std::string(s.message()).find("its state fingerprint differs from the module's"),
            std::string::npos)
      << s.message();
  got.resize(2);
  ASSERT_OK(on.readState("a", got.data(), 8));
  EXPECT_EQ(got, (std::vector<float>{1, 2}));
}

TEST_F(StateTest, CheckpointWriteIsTheFileTheSessionSaves) {
  // A state that is not the initial one, and a blob; then none.
  run(session);
  const std::vector<float> now = state(session);
  ASSERT_NE(now, (std::vector<float>{1, 2, 3, 4}));
  const std::vector<int64_t> dims = {4};
  const mixprec_checkpoint_state_t s = apiState("s", MIXPREC_DTYPE_F32, dims, now.data());
  const std::string saved = dir + "/saved.ckpt", written = dir + "/written.ckpt";
  const char blob[] = "epoch 3, rng 0xdeadbeef";
  ASSERT_OK(session.saveCheckpoint(saved.c_str(), blob, sizeof(blob)));
  ASSERT_OK(Session::writeCheckpoint(written.c_str(), &s, 1, blob, sizeof(blob)));
  const std::vector<char> a = readAll(saved), b = readAll(written);
  ASSERT_GT(a.size(), 16u + 4 * 4 + sizeof(blob));
  EXPECT_TRUE(a == b) << a.size() << " bytes saved, " << b.size() << " written";
  ASSERT_OK(session.saveCheckpoint(saved.c_str()));
  ASSERT_OK(Session::writeCheckpoint(written.c_str(), &s, 1));
  EXPECT_TRUE(readAll(saved) == readAll(written));
  // Another value: another file.
  const std::vector<float> other = {now[0], now[1], now[2], now[3] + 1};
  const mixprec_checkpoint_state_t changed = apiState("s", MIXPREC_DTYPE_F32, dims, other.data());
  ASSERT_OK(Session::writeCheckpoint(written.c_str(), &changed, 1));
  EXPECT_FALSE(readAll(saved) == readAll(written));
}

TEST_F(StateTest, CheckpointReadStatesGivesBackWhatWasWritten) {
  const std::vector<float> alpha = {1, -2, 3.5f, 0, 1e-3f, -7};
  const std::vector<uint16_t> beta = {0x3F80, 0xC000, 0x7F80, 0x0001}; // bf16 1, -2, inf, tiny
  const std::vector<int64_t> gamma = {-1234567890123};
  const std::vector<int64_t> alphaDims = {2, 3}, betaDims = {4}, gammaDims = {}, emptyDims = {0, 5};
  const mixprec_checkpoint_state_t states[4] = {
      apiState("alpha", MIXPREC_DTYPE_F32, alphaDims, alpha.data()),
      apiState("beta", MIXPREC_DTYPE_BF16, betaDims, beta.data()),
      apiState("gamma", MIXPREC_DTYPE_I64, gammaDims, gamma.data()),
      apiState("empty", MIXPREC_DTYPE_F16, emptyDims, nullptr)};
  const std::string path = dir + "/states.ckpt";
  const std::string blob = "user record";
  ASSERT_OK(Session::writeCheckpoint(path.c_str(), states, 4, blob.data(), blob.size()));

  Status status;
  const std::vector<SeenState> seen = readStates(path, status);
  ASSERT_TRUE(status.ok()) << status.codeName() << ": " << status.message();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].name, "alpha");
  EXPECT_EQ(seen[0].dtype, MIXPREC_DTYPE_F32);
  EXPECT_EQ(seen[0].dims, alphaDims);
  EXPECT_EQ(seen[0].elementCount, 6u);
  EXPECT_EQ(seen[0].byteSize, 24u);
  EXPECT_EQ(seen[0].bytes, bytesOf(alpha));
  EXPECT_EQ(seen[1].name, "beta");
  EXPECT_EQ(seen[1].dtype, MIXPREC_DTYPE_BF16);
  EXPECT_EQ(seen[1].dims, betaDims);
  EXPECT_EQ(seen[1].elementCount, 4u);
  EXPECT_EQ(seen[1].byteSize, 8u);
  EXPECT_EQ(seen[1].bytes, bytesOf(beta));
  EXPECT_EQ(seen[2].name, "gamma");
  EXPECT_EQ(seen[2].dtype, MIXPREC_DTYPE_I64);
  EXPECT_EQ(seen[2].dims, gammaDims);
  EXPECT_EQ(seen[2].elementCount, 1u);
  EXPECT_EQ(seen[2].byteSize, 8u);
  EXPECT_EQ(seen[2].bytes, bytesOf(gamma));
  EXPECT_EQ(seen[3].name, "empty");
  EXPECT_EQ(seen[3].dtype, MIXPREC_DTYPE_F16);
  EXPECT_EQ(seen[3].dims, emptyDims);
  EXPECT_EQ(seen[3].elementCount, 0u);
  EXPECT_EQ(seen[3].byteSize, 0u);
  char back[32] = {};
  size_t backBytes = 0;
  ASSERT_OK(Session::readCheckpointUserBlob(path.c_str(), back, sizeof(back), backBytes));
  EXPECT_EQ(std::string(back, backBytes), blob);

  // A visit that returns non-zero stops the reading there.
  struct Stop {
    std::vector<std::string> names;
    static int visit(void *context, const mixprec_checkpoint_state_t *state) {
      auto *self = static_cast<Stop *>(context);
      self->names.push_back(state->info.name);
      return self->names.size() == 2 ? 7 : 0;
    }
  } stop;
  Status stopped(mixprec_checkpoint_read_states(path.c_str(), &Stop::visit, &stop));
  EXPECT_EQ(stopped.code(), MIXPREC_EXECUTION_ERROR);
  EXPECT_NE(std::string(stopped.message())
                .find("checkpoint '" + path + "': reading it stopped at state 'beta'"),
            std::string::npos)
      << stopped.message();
  EXPECT_EQ(stop.names, (std::vector<std::string>{"alpha", "beta"}));
  // The C++ form: false stops.
  size_t visited = 0;
  Status first = Session::readCheckpointStates(
      path.c_str(), [&](const mixprec_checkpoint_state_t &) { return ++visited < 1; });
  EXPECT_EQ(first.code(), MIXPREC_EXECUTION_ERROR);
  EXPECT_NE(std::string(first.message()).find("stopped at state 'alpha'"), std::string::npos)
      << first.message();
  EXPECT_EQ(visited, 1u);

  // A file the session saved reads back as its state.
  run(session);
  const std::vector<float> now = state(session);
  const std::string saved = dir + "/saved.ckpt";
  ASSERT_OK(session.saveCheckpoint(saved.c_str()));
  const std::vector<SeenState> one = readStates(saved, status);
  ASSERT_TRUE(status.ok()) << status.codeName() << ": " << status.message();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name, "s");
  EXPECT_EQ(one[0].dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(one[0].bytes, bytesOf(now));

  // No states at all: a blob alone.
  const std::string empty = dir + "/empty.ckpt";
  ASSERT_OK(Session::writeCheckpoint(empty.c_str(), nullptr, 0, "x", 1));
  EXPECT_TRUE(readStates(empty, status).empty());
  ASSERT_TRUE(status.ok()) << status.codeName() << ": " << status.message();

  // Bad files: as loading them.
  std::vector<char> bytes = readAll(path);
  bytes[bytes.size() / 2] ^= 0x10;
  const std::string bad = dir + "/bad.ckpt";
  writeAll(bad, bytes);
  EXPECT_TRUE(readStates(bad, status).empty());
  EXPECT_EQ(status.code(), MIXPREC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(status.message()).find("checksum mismatch"), std::string::npos)
      << status.message();
  readStates(dir + "/missing.ckpt", status);
  EXPECT_EQ(status.code(), MIXPREC_IO_ERROR);
  EXPECT_EQ(Status(mixprec_checkpoint_read_states(path.c_str(), nullptr, nullptr)).code(),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(Status(mixprec_checkpoint_read_states(nullptr, &Stop::visit, &stop)).code(),
            MIXPREC_INVALID_ARGUMENT);
}

TEST_F(StateTest, CheckpointWriteRefusesBadStates) {
  const std::string path = dir + "/refused.ckpt";
  const std::vector<float> values = {1, 2, 3, 4};
  const std::vector<int64_t> dims = {4};
  auto expectInvalid = [&](const std::vector<mixprec_checkpoint_state_t> &states,
                           const std::string &fragment) {
    Status s = Session::writeCheckpoint(path.c_str(), states.data(), states.size());
    EXPECT_EQ(s.code(), MIXPREC_INVALID_ARGUMENT) << fragment << ": " << s.message();
    EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(path)) << fragment;
  };
  const mixprec_checkpoint_state_t good = apiState("s", MIXPREC_DTYPE_F32, dims, values.data());
  mixprec_checkpoint_state_t s = good;
  s.info.name = nullptr;
  expectInvalid({good, s}, "checkpoint_write: state #1 has no name");
  s.info.name = "";
  expectInvalid({s}, "checkpoint_write: state #0 has no name");
  expectInvalid({good, good}, "checkpoint_write: state #1: two states are named 's'");
  s = good;
  s.info.dtype = 8;
  expectInvalid({s}, "state #0 's' has an unknown dtype 8");
  s.info.dtype = -1;
  expectInvalid({s}, "state #0 's' has an unknown dtype -1");
  s = good;
  s.info.element_count = 5;
  expectInvalid({s}, "state #0 's': element_count 5 and byte_size 16 must be the shape's (4, 16)");
  s = good;
  s.info.byte_size = 8;
  expectInvalid({s}, "state #0 's': element_count 4 and byte_size 8 must be the shape's (4, 16)");
  s = good;
  s.info.dtype = MIXPREC_DTYPE_F16; // 4 elements of f16 are 8 bytes, not 16
  expectInvalid({s}, "element_count 4 and byte_size 16 must be the shape's (4, 8)");
  s = good;
  s.data = nullptr;
  expectInvalid({s}, "state #0 's': element_count 4 and byte_size 16 must be the shape's (4, 16)");
  s = good;
  s.info.dims = nullptr;
  expectInvalid({s}, "state #0 's': rank 1 (at most 8, with dims)");
  const std::vector<int64_t> nine(9, 1);
  s = apiState("s", MIXPREC_DTYPE_F32, nine, values.data());
  expectInvalid({s}, "state #0 's': rank 9 (at most 8, with dims)");
  const std::vector<int64_t> negative = {-4};
  s = apiState("s", MIXPREC_DTYPE_F32, negative, values.data());
  expectInvalid({s}, "state #0 's': a dim out of range");
  // NULL arguments.
  EXPECT_EQ(Status(mixprec_checkpoint_write(nullptr, &good, 1, nullptr, 0)).code(),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(Status(mixprec_checkpoint_write(path.c_str(), nullptr, 1, nullptr, 0)).code(),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(Status(mixprec_checkpoint_write(path.c_str(), &good, 1, nullptr, 3)).code(),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_FALSE(std::filesystem::exists(path));
  // A folder that does not exist: an I/O error.
  Status io = Session::writeCheckpoint((dir + "/no/such/dir.ckpt").c_str(), &good, 1);
  EXPECT_EQ(io.code(), MIXPREC_IO_ERROR) << io.message();
  // The good one is written.
  ASSERT_OK(Session::writeCheckpoint(path.c_str(), &good, 1));
  EXPECT_TRUE(std::filesystem::exists(path));
}

} // namespace
