//===- ShardTest.cpp - rank_slice, all_gather and the collective's all_gather -===//
//
// Optimizer-state sharding (ZeRO stage 1, issue 26): a module whose
// rank_slice steps take this rank's slice of a vector and whose all_gather
// steps call the session's collective's all_gather. Without a collective a
// world-1 step copies and a world-2 step fails naming the cause; with a
// world of 2 (rank 1) rank_slice gives elements [S, 2S) and all_gather's
// callback gets this rank's part, the element count per rank and the dtype,
// and what it leaves in its recv buffer is the output; bf16 as f32; a
// collective of the first version (up to all_reduce) is taken and fails an
// all_gather step saying why; a failing callback fails the run naming the
// step and the rank, leaving every state as it was; the loader refuses a
// forged world, lengths that are not world x part, a non-vector and a
// dtype it cannot move.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestUtil.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace mixprec::testing {
namespace {

fb::RoutineOptionsUnion shardOptions(int64_t world) {
  fb::ShardOptionsT t;
  t.world = world;
  fb::RoutineOptionsUnion u;
  u.Set(std::move(t));
  return u;
}

/// For a job of `world` ranks (S = 3 for f32, 2 for bf16):
///   x  [world*3] f32  -> rank_slice "slice"       -> xs [3]        output 0
///   p  [3] f32        -> all_gather "gather"      -> pa [world*3]  output 1
///   hb [world*2] bf16 -> rank_slice "slice_bf16"  -> hs [2]        output 2
///   hp [2] bf16       -> all_gather "gather_bf16" -> ha [world*2]  output 3
/// and a state m [world*2] f32 (1, 2, ...) updated with all_gather(rank_slice(m)),
/// so that a failed run can be seen to leave the state alone.
ModuleBuilder shardBuilder(int64_t world = 2) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {world * 3});
  const int p = b.input("p", fb::DType::F32, {3});
  const int hb = b.input("hb", fb::DType::BF16, {world * 2});
  const int hp = b.input("hp", fb::DType::BF16, {2});
  const int xs = b.activation("xs", fb::DType::F32, {3});
  const int pa = b.activation("pa", fb::DType::F32, {world * 3});
  const int hs = b.activation("hs", fb::DType::BF16, {2});
  const int ha = b.activation("ha", fb::DType::BF16, {world * 2});
  std::vector<float> initial;
  for (int64_t i = 0; i < world * 2; ++i)
    initial.push_back(static_cast<float>(i + 1));
  const int m = b.state("m", fb::DType::F32, {world * 2}, initial);
  const int mPart = b.activation("m_part", fb::DType::F32, {2});
  const int mNext = b.activation("m_next", fb::DType::F32, {world * 2});
  b.states.back().update = static_cast<uint32_t>(mNext);
  b.routine({"slice", "rank_slice", {x}, {xs}, shardOptions(world)});
  b.routine({"gather", "all_gather", {p}, {pa}, shardOptions(world)});
  b.routine({"slice_bf16", "rank_slice", {hb}, {hs}, shardOptions(world)});
  b.routine({"gather_bf16", "all_gather", {hp}, {ha}, shardOptions(world)});
  b.routine({"m_slice", "rank_slice", {m}, {mPart}, shardOptions(world)});
  b.routine({"m_gather", "all_gather", {mPart}, {mNext}, shardOptions(world)});
  for (int out : {xs, pa, hs, ha})
    b.output(out);
  return b;
}

/// The element size of the dtypes the fake moves.
size_t elementSize(mixprec_dtype_t dtype) { return dtype == MIXPREC_DTYPE_F32 ? 4 : 2; }

/// Rank `rank` of a job of `world` whose other ranks' parts are made up
/// (f32: 100 * r + i; 16-bit dtypes: the bits 0x4100 + 0x10 * r + i) and
/// whose own part is what it sent, as NCCL's all_gather leaves recv;
/// records each call and what was sent.
struct FakeWorld {
  struct Call {
    const void *send;
    void *recv;
    size_t count;
    mixprec_dtype_t dtype;
    void *stream;
    std::vector<uint8_t> sent;
  };
  std::vector<Call> calls;
  int rank = 1;
  int world = 2;
  int failOnCall = -1;
  int allReduceCalls = 0;

  static uint16_t otherBf16(int r, size_t i) {
    return static_cast<uint16_t>(0x4100 + 0x10 * r + i);
  }
  static float otherF32(int r, size_t i) { return static_cast<float>(100 * r + i); }

  static int allReduce(void *context, void *, size_t, mixprec_dtype_t, mixprec_reduce_op_t, void *,
                       char *, size_t) {
    ++static_cast<FakeWorld *>(context)->allReduceCalls;
    return 0;
  }

  static int allGather(void *context, const void *send, void *recv, size_t count,
                       mixprec_dtype_t dtype, void *stream, char *error, size_t errorSize) {
    auto *self = static_cast<FakeWorld *>(context);
    const size_t size = elementSize(dtype);
    const auto *bytes = static_cast<const uint8_t *>(send);
    self->calls.push_back(
        {send, recv, count, dtype, stream, std::vector<uint8_t>(bytes, bytes + count * size)});
    if (static_cast<int>(self->calls.size()) - 1 == self->failOnCall) {
      std::snprintf(error, errorSize, "rank 0 did not answer");
      return 1;
    }
    auto *out = static_cast<uint8_t *>(recv);
    for (int r = 0; r < self->world; ++r)
      for (size_t i = 0; i < count; ++i) {
        uint8_t *at = out + (r * count + i) * size;
        if (r == self->rank) {
          std::memcpy(at, bytes + i * size, size);
        } else if (dtype == MIXPREC_DTYPE_F32) {
          const float v = otherF32(r, i);
          std::memcpy(at, &v, 4);
        } else {
          const uint16_t v = otherBf16(r, i);
          std::memcpy(at, &v, 2);
        }
      }
    return 0;
  }

  mixprec_collective_t table() {
    mixprec_collective_t c{};
    c.struct_size = sizeof c;
    c.context = this;
    c.rank = rank;
    c.world_size = world;
    c.device_buffers = 0;
    c.all_reduce = &FakeWorld::allReduce;
    c.all_gather = &FakeWorld::allGather;
    return c;
  }
};

/// BF16 bits of 0.5, 1, 2, 4, -1, -2 ... as many as asked for.
std::vector<uint16_t> bf16Pattern(size_t n) {
  const uint16_t values[] = {0x3F00, 0x3F80, 0x4000, 0x4080, 0xBF80, 0xC000, 0x3E80, 0x4100};
  std::vector<uint16_t> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(values[i % 8]);
  return out;
}

std::vector<float> iota(size_t n, float from) {
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(from + static_cast<float>(i));
  return out;
}

/// Binds x = 1.., p = 10, 11, 12, hb and hp from bf16Pattern (hp from its
/// third element).
void bindAll(Session &session, int64_t world) {
  const std::vector<float> x = iota(world * 3, 1);
  const std::vector<float> p = {10, 11, 12};
  ASSERT_OK(session.bindInput("x", {world * 3}, x.data()));
  ASSERT_OK(session.bindInput("p", {3}, p.data()));
  const std::vector<uint16_t> hb = bf16Pattern(world * 2);
  ASSERT_OK(session.bindInput("hb", MIXPREC_DTYPE_BF16, {world * 2}, hb.data(), hb.size() * 2));
  const std::vector<uint16_t> all = bf16Pattern(4);
  const std::vector<uint16_t> hp = {all[2], all[3]};
  ASSERT_OK(session.bindInput("hp", MIXPREC_DTYPE_BF16, {2}, hp.data(), hp.size() * 2));
}

std::vector<float> output(Session &session, size_t index) {
  std::vector<float> out;
  Status s = session.copyOutput(index, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

std::vector<uint16_t> bf16Output(Session &session, size_t index, size_t n) {
  std::vector<uint16_t> out(n);
  Status s = session.copyOutput(index, MIXPREC_DTYPE_BF16, out.data(), n * 2);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

std::vector<float> mState(Session &session, size_t n) {
  std::vector<float> v(n);
  Status s = session.readState("m", v.data(), n * 4);
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

::testing::AssertionResult failsWith(const Status &status, mixprec_status_code_t code,
                                     const std::string &text) {
  if (status.code() == code && std::string(status.message()).find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << status.codeName() << ": " << status.message() << " (expected "
         << mixprec_status_code_name(code) << " containing '" << text << "')";
}

TEST(Shard, WithoutACollectiveAWorldOfOneCopies) {
  Module module;
  Session session;
  openCpu(shardBuilder(1).build(), module, session);
  bindAll(session, 1);
  ASSERT_OK(session.run());
  EXPECT_EQ(output(session, 0), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(output(session, 1), (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(bf16Output(session, 2, 2), (std::vector<uint16_t>{0x3F00, 0x3F80}));
  EXPECT_EQ(bf16Output(session, 3, 2), (std::vector<uint16_t>{0x4000, 0x4080}));
  EXPECT_EQ(mState(session, 2), (std::vector<float>{1, 2}));
  // A collective of one rank: the same, and all_gather is never called.
  FakeWorld one;
  one.rank = 0;
  one.world = 1;
  mixprec_collective_t c = one.table();
  ASSERT_OK(session.setCollective(&c));
  const std::vector<float> x = {7, 8, 9};
  ASSERT_OK(session.bindInput("x", {3}, x.data()));
  ASSERT_OK(session.run());
  EXPECT_EQ(output(session, 0), x);
  EXPECT_EQ(output(session, 1), (std::vector<float>{10, 11, 12}));
  EXPECT_TRUE(one.calls.empty());
  EXPECT_EQ(one.allReduceCalls, 0);
}

TEST(Shard, AStepForTwoRanksFailsWithoutACollectiveOrWithAnotherWorld) {
  Module module;
  Session session;
  openCpu(shardBuilder(2).build(), module, session);
  bindAll(session, 2);
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                        "routine #0 'slice' (rank_slice): the step was compiled for a job of 2 "
                        "ranks (sharded optimizer state); this session's is one process without "
                        "a collective"));
  EXPECT_EQ(mState(session, 4), (std::vector<float>{1, 2, 3, 4}));
  // A job of 3 ranks is not one of 2 either.
  FakeWorld three;
  three.rank = 2;
  three.world = 3;
  mixprec_collective_t c = three.table();
  ASSERT_OK(session.setCollective(&c));
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                        "routine #0 'slice' (rank_slice): the step was compiled for a job of 2 "
                        "ranks (sharded optimizer state); this session's is a job of 3"));
  EXPECT_TRUE(three.calls.empty());
  EXPECT_EQ(mState(session, 4), (std::vector<float>{1, 2, 3, 4}));

  // all_gather checks the world as well (a module with that step alone).
  ModuleBuilder b;
  const int p = b.input("p", fb::DType::F32, {3});
  const int pa = b.activation("pa", fb::DType::F32, {6});
  b.routine({"gather", "all_gather", {p}, {pa}, shardOptions(2)});
  b.output(pa);
  Module gatherOnly;
  Session gather;
  openCpu(b.build(), gatherOnly, gather);
  const std::vector<float> pv = {1, 2, 3};
  ASSERT_OK(gather.bindInput("p", {3}, pv.data()));
  EXPECT_TRUE(failsWith(gather.run(), MIXPREC_FAILED_PRECONDITION,
                        "routine #0 'gather' (all_gather): the step was compiled for a job of 2 "
                        "ranks (sharded optimizer state); this session's is one process without "
                        "a collective"));
  ASSERT_OK(gather.setCollective(&c));
  EXPECT_TRUE(failsWith(gather.run(), MIXPREC_FAILED_PRECONDITION, "this session's is a job of 3"));
  EXPECT_TRUE(three.calls.empty());
}

TEST(Shard, RankOneOfTwoTakesItsSliceAndGathersThroughTheCollective) {
  Module module;
  Session session;
  openCpu(shardBuilder(2).build(), module, session);
  FakeWorld world; // rank 1 of 2
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  bindAll(session, 2);
  ASSERT_OK(session.run());

  // rank_slice: elements [S, 2S).
  EXPECT_EQ(output(session, 0), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(bf16Output(session, 2, 2), (std::vector<uint16_t>{0x4000, 0x4080}));

  // all_gather: three calls (gather, gather_bf16, m_gather) with this rank's
  // part, the elements per rank and the dtype; no stream on the CPU.
  ASSERT_EQ(world.calls.size(), 3u);
  EXPECT_EQ(world.calls[0].count, 3u);
  EXPECT_EQ(world.calls[0].dtype, MIXPREC_DTYPE_F32);
  EXPECT_EQ(world.calls[0].stream, nullptr);
  std::vector<float> sent(3);
  std::memcpy(sent.data(), world.calls[0].sent.data(), 12);
  EXPECT_EQ(sent, (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(world.calls[1].count, 2u);
  EXPECT_EQ(world.calls[1].dtype, MIXPREC_DTYPE_BF16);
  EXPECT_EQ(world.calls[1].sent, (std::vector<uint8_t>{0x00, 0x40, 0x80, 0x40})); // 2, 4
  EXPECT_EQ(world.calls[2].count, 2u);
  EXPECT_EQ(world.calls[2].dtype, MIXPREC_DTYPE_F32);
  std::memcpy(sent.data(), world.calls[2].sent.data(), 8);
  EXPECT_EQ((std::vector<float>{sent[0], sent[1]}), (std::vector<float>{3, 4})); // m[2:4]
  for (const FakeWorld::Call &call : world.calls)
    EXPECT_NE(call.send, call.recv);

  // What the callback left in recv is the output: rank 0's part made up,
  // rank 1's its own.
  EXPECT_EQ(output(session, 1), (std::vector<float>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(bf16Output(session, 3, 4),
            (std::vector<uint16_t>{FakeWorld::otherBf16(0, 0), FakeWorld::otherBf16(0, 1), 0x4000,
                                   0x4080}));
  EXPECT_EQ(mState(session, 4), (std::vector<float>{0, 1, 3, 4}));
  EXPECT_EQ(world.allReduceCalls, 0);

  // Rank 0 of the same job: its slice and its place in the gather.
  FakeWorld first;
  first.rank = 0;
  c = first.table();
  ASSERT_OK(session.setCollective(&c));
  ASSERT_OK(session.resetState());
  ASSERT_OK(session.run());
  EXPECT_EQ(output(session, 0), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(output(session, 1), (std::vector<float>{10, 11, 12, 100, 101, 102}));
  EXPECT_EQ(bf16Output(session, 2, 2), (std::vector<uint16_t>{0x3F00, 0x3F80}));
  EXPECT_EQ(bf16Output(session, 3, 4),
            (std::vector<uint16_t>{0x4000, 0x4080, FakeWorld::otherBf16(1, 0),
                                   FakeWorld::otherBf16(1, 1)}));
  EXPECT_EQ(mState(session, 4), (std::vector<float>{1, 2, 100, 101}));
  ASSERT_EQ(first.calls.size(), 3u);
  EXPECT_TRUE(world.calls.size() == 3u) << "the replaced collective was called";
}

TEST(Shard, Bf16AsF32) {
  // The bf16 steps' outputs decoded to f32: exact values.
  Module module;
  Session session;
  openCpu(shardBuilder(2).build(), module, session);
  FakeWorld world;
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  bindAll(session, 2);
  ASSERT_OK(session.run());
  EXPECT_EQ(output(session, 2), (std::vector<float>{2, 4}));
  // 0x4100 = 8, 0x4101 = 8.0625.
  EXPECT_EQ(output(session, 3), (std::vector<float>{8, 8.0625f, 2, 4}));
}

TEST(Shard, TheFirstCollectiveVersionIsTakenAndFailsAnAllGatherSayingWhy) {
  Module module;
  Session session;
  openCpu(shardBuilder(2).build(), module, session);
  FakeWorld world;
  mixprec_collective_t c = world.table();
  // The table of the first version ends with all_reduce: what follows is
  // not read (an older application's struct is shorter).
  c.struct_size = offsetof(mixprec_collective_t, all_gather);
  ASSERT_OK(session.setCollective(&c));
  bindAll(session, 2);
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                        "routine #1 'gather' (all_gather): the session's collective has no "
                        "all_gather (an older mixprec_collective_t"));
  EXPECT_TRUE(world.calls.empty());
  EXPECT_EQ(mState(session, 4), (std::vector<float>{1, 2, 3, 4}));

  // One byte less is refused, naming the first version's size.
  c.struct_size = offsetof(mixprec_collective_t, all_gather) - 1;
  const std::string firstVersion = std::to_string(offsetof(mixprec_collective_t, all_gather));
  EXPECT_TRUE(failsWith(session.setCollective(&c), MIXPREC_INVALID_ARGUMENT,
                        "set_collective: struct_size " +
                            std::to_string(offsetof(mixprec_collective_t, all_gather) - 1) +
                            " is below " + firstVersion));

  // The current size with all_gather NULL: taken, and the step fails the same way.
  c = world.table();
  c.all_gather = nullptr;
  ASSERT_OK(session.setCollective(&c));
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_FAILED_PRECONDITION,
                        "the session's collective has no all_gather"));

  // The first version in a world of one needs no all_gather: a copy.
  FakeWorld one;
  one.rank = 0;
  one.world = 1;
  Module single;
  Session alone;
  openCpu(shardBuilder(1).build(), single, alone);
  c = one.table();
  c.struct_size = offsetof(mixprec_collective_t, all_gather);
  ASSERT_OK(alone.setCollective(&c));
  bindAll(alone, 1);
  ASSERT_OK(alone.run());
  EXPECT_EQ(output(alone, 1), (std::vector<float>{10, 11, 12}));
}

TEST(Shard, AFailedAllGatherFailsTheRunAndKeepsTheState) {
  Module module;
  Session session;
  openCpu(shardBuilder(2).build(), module, session);
  FakeWorld world;
  world.failOnCall = 2; // m_gather
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  bindAll(session, 2);
  ASSERT_OK(session.writeState("m", std::vector<float>{5, 6, 7, 8}.data(), 16));
  Status s = session.run();
  EXPECT_TRUE(failsWith(s, MIXPREC_EXECUTION_ERROR,
                        "routine #5 'm_gather' (all_gather): the collective failed on rank 1 of "
                        "2: rank 0 did not answer"));
  ASSERT_EQ(world.calls.size(), 3u);
  EXPECT_EQ(mState(session, 4), (std::vector<float>{5, 6, 7, 8}));
  // The first call failing: the same, naming that step.
  FakeWorld early;
  early.failOnCall = 0;
  c = early.table();
  ASSERT_OK(session.setCollective(&c));
  EXPECT_TRUE(failsWith(session.run(), MIXPREC_EXECUTION_ERROR,
                        "routine #1 'gather' (all_gather): the collective failed on rank 1 of 2: "
                        "rank 0 did not answer"));
  EXPECT_EQ(early.calls.size(), 1u);
  EXPECT_EQ(mState(session, 4), (std::vector<float>{5, 6, 7, 8}));
  // And once it answers, the state moves.
  world.failOnCall = -1;
  world.calls.clear();
  c = world.table();
  ASSERT_OK(session.setCollective(&c));
  ASSERT_OK(session.run());
  EXPECT_EQ(mState(session, 4), (std::vector<float>{0, 1, 7, 8}));
}

/// x [6] -> rank_slice -> y [3] (world 2) with `edit` applied before build.
template <typename Edit> BuiltModule sliceModule(Edit edit) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {6});
  const int y = b.activation("y", fb::DType::F32, {3});
  b.routine({"slice", "rank_slice", {x}, {y}, shardOptions(2)});
  b.output(y);
  edit(b);
  return b.build();
}

TEST(Shard, LoaderRefusesAForgedWorldLengthsRankOrDtype) {
  auto none = [](ModuleBuilder &) {};
  EXPECT_EQ(loadCode(sliceModule(none)), MIXPREC_OK);
  std::string message;
  auto expectRefused = [&](const BuiltModule &built, const std::string &fragment) {
    EXPECT_EQ(loadCode(built, &message), MIXPREC_INVALID_MODULE) << fragment;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  };
  auto world = [](int64_t w) {
    return [w](ModuleBuilder &b) { b.routines[0].options.AsShardOptions()->world = w; };
  };
  expectRefused(sliceModule(world(0)),
                "routine #0 'slice' (rank_slice): world 0 out of range [1, 2^20]");
  expectRefused(sliceModule(world(-2)), "(rank_slice): world -2 out of range [1, 2^20]");
  expectRefused(sliceModule(world((int64_t(1) << 20) + 1)),
                "(rank_slice): world 1048577 out of range [1, 2^20]");
  // world 3: 6 is not 3 x 3.
  expectRefused(sliceModule(world(3)), "(rank_slice): 'x' has 6 elements, not world (3) x 3");
  // The part's length: [6] -> [2] with world 2.
  expectRefused(sliceModule([](ModuleBuilder &b) { b.tensors[1].shape = {2}; }),
                "(rank_slice): 'x' has 6 elements, not world (2) x 2");
  // A non-vector: [2, 3] -> [3].
  expectRefused(sliceModule([](ModuleBuilder &b) {
                  b.tensors[0].shape = {2, 3};
                }),
                "(rank_slice): takes vectors, got 'x' of rank 2 and 'y' of rank 1");
  expectRefused(sliceModule([](ModuleBuilder &b) {
                  b.tensors[1].shape = {1, 3};
                }),
                "(rank_slice): takes vectors, got 'x' of rank 1 and 'y' of rank 2");
  // Dtypes: i32 is not moved; the output is the input's.
  expectRefused(sliceModule([](ModuleBuilder &b) {
                  b.tensors[0].dtype = fb::DType::I32;
                  b.tensors[1].dtype = fb::DType::I32;
                }),
                "(rank_slice): input 'x' is i32, not f32, f16 or bf16");
  expectRefused(sliceModule([](ModuleBuilder &b) { b.tensors[1].dtype = fb::DType::BF16; }),
                "(rank_slice): output 'y' is bf16, the input is f32");
  // Two inputs.
  expectRefused(sliceModule([](ModuleBuilder &b) { b.routines[0].inputs.push_back(0); }),
                "(rank_slice): takes 1 inputs, got 2");

  // all_gather: the whole is its output.
  ModuleBuilder g;
  const int p = g.input("p", fb::DType::F16, {3});
  const int pa = g.activation("pa", fb::DType::F16, {6});
  g.routine({"gather", "all_gather", {p}, {pa}, shardOptions(2)});
  g.output(pa);
  EXPECT_EQ(loadCode(g.build()), MIXPREC_OK);
  g.tensors[1].shape = {7};
  expectRefused(g.build(), "routine #0 'gather' (all_gather): 'pa' has 7 elements, not world "
                           "(2) x 3");
  g.tensors[1].shape = {6};
  g.routines[0].options.AsShardOptions()->world = 0;
  expectRefused(g.build(), "routine #0 'gather' (all_gather): world 0 out of range");
  g.routines[0].options.AsShardOptions()->world = 2;
  g.tensors[1].shape = {2, 3};
  expectRefused(g.build(), "(all_gather): takes vectors, got 'p' of rank 1 and 'pa' of rank 2");
}

TEST(Shard, F16MovesAsItsBits) {
  // f16 (allowed as well): rank 1's slice and a gather, bit for bit.
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F16, {4});
  const int xs = b.activation("xs", fb::DType::F16, {2});
  const int xa = b.activation("xa", fb::DType::F16, {4});
  b.routine({"slice", "rank_slice", {x}, {xs}, shardOptions(2)});
  b.routine({"gather", "all_gather", {xs}, {xa}, shardOptions(2)});
  b.output(xs);
  b.output(xa);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  FakeWorld world;
  mixprec_collective_t c = world.table();
  ASSERT_OK(session.setCollective(&c));
  const std::vector<uint16_t> in = {0x3C00, 0x4000, 0x4200, 0x4400}; // 1, 2, 3, 4
  ASSERT_OK(session.bindInput("x", MIXPREC_DTYPE_F16, {4}, in.data(), 8));
  ASSERT_OK(session.run());
  std::vector<uint16_t> out(2);
  ASSERT_OK(session.copyOutput(0, MIXPREC_DTYPE_F16, out.data(), 4));
  EXPECT_EQ(out, (std::vector<uint16_t>{0x4200, 0x4400}));
  ASSERT_EQ(world.calls.size(), 1u);
  EXPECT_EQ(world.calls[0].dtype, MIXPREC_DTYPE_F16);
  EXPECT_EQ(world.calls[0].count, 2u);
  out.resize(4);
  ASSERT_OK(session.copyOutput(1, MIXPREC_DTYPE_F16, out.data(), 8));
  EXPECT_EQ(out, (std::vector<uint16_t>{FakeWorld::otherBf16(0, 0), FakeWorld::otherBf16(0, 1),
                                        0x4200, 0x4400}));
}

} // namespace
} // namespace mixprec::testing
