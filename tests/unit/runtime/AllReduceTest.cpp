//===- AllReduceTest.cpp - the all_reduce routine and the session's hook ---===//
//
// Data parallelism (issue 26): a module whose all_reduce steps call the
// session's collective (mixprec_session_set_collective). Without one the
// step copies; with a world of 2 the callback gets the output buffer, its
// element count, dtype and the routine's reduction, and what it leaves is
// the output; a failing callback fails the run naming the step and the
// rank, leaving every state as it was; the C API refuses a bad table; the
// loader refuses a forged reduction or dtype.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestUtil.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace mixprec::testing {
namespace {

fb::RoutineOptionsUnion allReduceOptions(int64_t reduction) {
  fb::AllReduceOptionsT t;
  t.reduction = reduction;
  fb::RoutineOptionsUnion u;
  u.Set(std::move(t));
  return u;
}

/// g[6] (f32) -> all_reduce mean -> output; h[4] (bf16) -> all_reduce max ->
/// output; and a state `count` whose update is a third all_reduce (sum), so
/// that a failed run can be seen to leave the state alone.
ModuleBuilder allReduceBuilder(int64_t firstReduction = 1,
                               fb::DType secondDType = fb::DType::BF16) {
  ModuleBuilder b;
  const int g = b.input("g", fb::DType::F32, {6});
  const int h = b.input("h", secondDType, {4});
  const int gm = b.activation("g_mean", fb::DType::F32, {6});
  const int hm = b.activation("h_max", secondDType, {4});
  const int count = b.state("count", fb::DType::F32, {1}, {3.0f});
  const int next = b.activation("count_next", fb::DType::F32, {1});
  b.states.back().update = static_cast<uint32_t>(next);
  b.routine({"grads", "all_reduce", {g}, {gm}, allReduceOptions(firstReduction)});
  b.routine({"flags", "all_reduce", {h}, {hm}, allReduceOptions(2)});
  b.routine({"count", "all_reduce", {count}, {next}, allReduceOptions(0)});
  b.output(gm);
  b.output(hm);
  return b;
}

/// A world of 2 where the other rank contributed `other` (per dtype), as
/// the collective would combine it; records each call.
struct FakeWorld {
  struct Call {
    size_t count;
    mixprec_dtype_t dtype;
    mixprec_reduce_op_t op;
    void *stream;
  };
  std::vector<Call> calls;
  float other = 1.0f;
  int failOnCall = -1;

  static int allReduce(void *context, void *data, size_t count, mixprec_dtype_t dtype,
                       mixprec_reduce_op_t op, void *stream, char *error, size_t errorSize) {
    auto *self = static_cast<FakeWorld *>(context);
    if (static_cast<int>(self->calls.size()) == self->failOnCall) {
      std::snprintf(error, errorSize, "rank 1 did not answer");
      self->calls.push_back({count, dtype, op, stream});
      return 1;
    }
    self->calls.push_back({count, dtype, op, stream});
    if (dtype == MIXPREC_DTYPE_F32) {
      float *x = static_cast<float *>(data);
      for (size_t i = 0; i < count; ++i)
        x[i] = op == MIXPREC_REDUCE_MAX   ? std::max(x[i], self->other)
               : op == MIXPREC_REDUCE_SUM ? x[i] + self->other
                                          : (x[i] + self->other) / 2;
    } else if (dtype == MIXPREC_DTYPE_BF16) {
      // bf16 bits: the max against `other` (exact in BF16 here).
      uint16_t *x = static_cast<uint16_t *>(data);
      uint32_t bits;
      std::memcpy(&bits, &self->other, 4);
      for (size_t i = 0; i < count; ++i) {
        uint32_t wide = uint32_t(x[i]) << 16;
        float v;
        std::memcpy(&v, &wide, 4);
        if (self->other > v)
          x[i] = static_cast<uint16_t>(bits >> 16);
      }
    }
    return 0;
  }

  mixprec_collective_t table(int rank = 1, int world = 2) {
    mixprec_collective_t c{};
    c.struct_size = sizeof c;
    c.context = this;
    c.rank = rank;
    c.world_size = world;
    c.device_buffers = 0;
    c.all_reduce = &FakeWorld::allReduce;
    return c;
  }
};

const std::vector<float> kG = {1, 2, 3, 4, 5, 6};

void bindBoth(Session &session) {
  ASSERT_OK(session.bindInput("g", {6}, kG.data()));
  // BF16 bits of -1, 0.5, 2, 0.25.
  const std::vector<uint16_t> h = {0xBF80, 0x3F00, 0x4000, 0x3E80};
  ASSERT_OK(session.bindInput("h", MIXPREC_DTYPE_BF16, {4}, h.data(), h.size() * 2));
}

float countState(Session &session) {
  float v = 0;
  EXPECT_TRUE(session.readState("count", &v, sizeof v).ok());
  return v;
}

TEST(AllReduce, WithoutACollectiveItCopies) {
  Module module;
  Session session;
  openCpu(allReduceBuilder().build(), module, session);
  bindBoth(session);
  ASSERT_OK(session.run());
  std::vector<float> out;
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, kG);
  ASSERT_OK(session.copyOutput(1, out));
  EXPECT_EQ(out, (std::vector<float>{-1, 0.5f, 2, 0.25f}));
  EXPECT_EQ(countState(session), 3.0f);
  // A world of one: the callback is never called.
  FakeWorld one;
  mixprec_collective_t c = one.table(0, 1);
  ASSERT_OK(session.setCollective(&c));
  ASSERT_OK(session.run());
  EXPECT_TRUE(one.calls.empty());
}

TEST(AllReduce, CallsTheCollectiveInPlaceWithTheRoutinesReduction) {
  Module module;
  Session session;
  openCpu(allReduceBuilder().build(), module, session);
  FakeWorld world;
  world.other = 1.0f;
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  bindBoth(session);
  ASSERT_OK(session.run());
  ASSERT_EQ(world.calls.size(), 3u);
  EXPECT_EQ(world.calls[0].count, 6u);
  EXPECT_EQ(world.calls[0].dtype, MIXPREC_DTYPE_F32);
  EXPECT_EQ(world.calls[0].op, MIXPREC_REDUCE_MEAN);
  EXPECT_EQ(world.calls[0].stream, nullptr);
  EXPECT_EQ(world.calls[1].count, 4u);
  EXPECT_EQ(world.calls[1].dtype, MIXPREC_DTYPE_BF16);
  EXPECT_EQ(world.calls[1].op, MIXPREC_REDUCE_MAX);
  EXPECT_EQ(world.calls[2].op, MIXPREC_REDUCE_SUM);
  std::vector<float> out;
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, (std::vector<float>{1, 1.5f, 2, 2.5f, 3, 3.5f}));
  ASSERT_OK(session.copyOutput(1, out));
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 1}));
  EXPECT_EQ(countState(session), 4.0f); // 3 + the other rank's 1
  // The input is untouched (the routine reduces a copy).
  ASSERT_OK(session.run());
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, (std::vector<float>{1, 1.5f, 2, 2.5f, 3, 3.5f}));
  EXPECT_EQ(countState(session), 5.0f);
  // Removed: copies again.
  ASSERT_OK(session.setCollective(nullptr));
  ASSERT_OK(session.run());
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, kG);
}

TEST(AllReduce, AFailedCollectiveFailsTheRunAndKeepsTheState) {
  Module module;
  Session session;
  openCpu(allReduceBuilder().build(), module, session);
  FakeWorld world;
  world.failOnCall = 1;
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  bindBoth(session);
  Status s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_EXECUTION_ERROR);
  const std::string message = s.message();
  EXPECT_NE(message.find("routine #1 'flags' (all_reduce): the collective failed on rank 1 of 2: "
                         "rank 1 did not answer"),
            std::string::npos)
      << message;
  EXPECT_EQ(countState(session), 3.0f);
}

TEST(AllReduce, SetCollectiveChecksTheTable) {
  Module module;
  Session session;
  openCpu(allReduceBuilder().build(), module, session);
  FakeWorld world;
  auto expectInvalid = [&](mixprec_collective_t c, const std::string &fragment) {
    Status s = session.setCollective(&c);
    EXPECT_EQ(s.code(), MIXPREC_INVALID_ARGUMENT);
    EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s.message();
  };
  mixprec_collective_t c = world.table();
  c.all_reduce = nullptr;
  expectInvalid(c, "all_reduce must not be NULL");
  c = world.table(2, 2);
  expectInvalid(c, "rank 2 of world size 2");
  c = world.table(0, 0);
  expectInvalid(c, "world size 0");
  c = world.table();
  c.struct_size = 8;
  expectInvalid(c, "struct_size 8");
  EXPECT_EQ(Status(mixprec_session_set_collective(nullptr, &c)).code(), MIXPREC_INVALID_ARGUMENT);
}

TEST(AllReduce, LoaderRefusesAForgedReductionOrDtype) {
  EXPECT_EQ(loadCode(allReduceBuilder().build()), MIXPREC_OK);
  std::string message;
  EXPECT_EQ(loadCode(allReduceBuilder(3).build(), &message), MIXPREC_INVALID_MODULE);
  EXPECT_NE(message.find("routine #0 'grads' (all_reduce): reduction 3 out of range"),
            std::string::npos)
      << message;
  EXPECT_EQ(loadCode(allReduceBuilder(1, fb::DType::I64).build(), &message),
            MIXPREC_INVALID_MODULE);
  EXPECT_NE(message.find("(all_reduce): input 'h' is i64, not f32, f16 or bf16"), std::string::npos)
      << message;
}

} // namespace
} // namespace mixprec::testing
