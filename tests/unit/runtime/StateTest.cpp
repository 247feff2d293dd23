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

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

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
  bytes[8] = 2;
  writeAll(bad, bytes);
  expectRefused(session, bad, MIXPREC_UNSUPPORTED_VERSION,
                "format version 2 is newer than this runtime reads (version 1)");

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

} // namespace
