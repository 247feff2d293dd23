//===- IndexingRoutinesTest.cpp - index routines on the CPU backend -------===//
//
// gather_elements, gather_nd, arg_max, topk and cumsum (issue 10): a module
// that runs each on values worked out by hand, the loader's refusal of
// each forged option or shape, and an index out of range at run time.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestUtil.h"

#include <cstring>

namespace mixprec::testing {
namespace {

template <typename T> fb::RoutineOptionsUnion unionOf(T table) {
  fb::RoutineOptionsUnion u;
  u.Set(std::move(table));
  return u;
}

fb::RoutineOptionsUnion gatherNdOptions(int64_t batchDims) {
  fb::GatherNdOptionsT t;
  t.batch_dims = batchDims;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion argReduceOptions(int64_t axis, bool keepdims, bool last) {
  fb::ArgReduceOptionsT t;
  t.axis = axis;
  t.keepdims = keepdims;
  t.select_last_index = last;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion topKOptions(int64_t axis, int64_t k, bool largest, bool indices) {
  fb::TopKOptionsT t;
  t.axis = axis;
  t.k = k;
  t.largest = largest;
  t.indices = indices;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion cumSumOptions(int64_t axis, bool exclusive, bool reverse) {
  fb::CumSumOptionsT t;
  t.axis = axis;
  t.exclusive = exclusive;
  t.reverse = reverse;
  return unionOf(std::move(t));
}

/// x[2,5], idx[2,3] (run-time) and a constant nd[2,2] through every index
/// routine; routine i is output i.
ModuleBuilder indexingBuilder() {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {2, 5});
  const int idx = b.input("idx", fb::DType::I64, {2, 3});
  const std::vector<int64_t> ndValues = {1, -1, 0, 2};
  std::vector<uint8_t> ndBytes(ndValues.size() * 8);
  std::memcpy(ndBytes.data(), ndValues.data(), ndBytes.size());
  const int nd = b.constantBytes("nd", fb::DType::I64, {2, 2}, ndBytes);
  const int ge = b.activation("ge", fb::DType::F32, {2, 3});
  const int gn = b.activation("gn", fb::DType::F32, {2});
  const int am = b.activation("am", fb::DType::I64, {2, 1});
  const int tv = b.activation("tv", fb::DType::F32, {2, 2});
  const int ti = b.activation("ti", fb::DType::I64, {2, 2});
  const int cs = b.activation("cs", fb::DType::F32, {2, 5});
  b.routine({"ge", "gather_elements", {x, idx}, {ge}, axisOptions(1)});
  b.routine({"gn", "gather_nd", {x, nd}, {gn}, gatherNdOptions(0)});
  b.routine({"am", "arg_max", {x}, {am}, argReduceOptions(-1, true, true)});
  b.routine({"tv", "topk", {x}, {tv}, topKOptions(1, 2, false, false)});
  b.routine({"ti", "topk", {x}, {ti}, topKOptions(1, 2, false, true)});
  b.routine({"cs", "cumsum", {x}, {cs}, cumSumOptions(1, true, true)});
  for (int t : {ge, gn, am, tv, ti, cs})
    b.output(t);
  return b;
}

const std::vector<float> kX = {3, 1, 4, 1, 5, /**/ 9, 2, 6, 5, 3};

std::vector<int64_t> intsOut(Session &session, size_t index, size_t count) {
  std::vector<int64_t> out(count);
  Status s = session.copyOutput(index, MIXPREC_DTYPE_I64, out.data(), count * 8);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

void bindInputs(Session &session, const std::vector<int64_t> &idx) {
  ASSERT_OK(session.bindInput("x", {2, 5}, kX.data()));
  ASSERT_OK(session.bindInput("idx", MIXPREC_DTYPE_I64, {2, 3}, idx.data(), idx.size() * 8));
}

TEST(IndexRoutines, RunOnTheCpuBackend) {
  Module module;
  Session session;
  openCpu(indexingBuilder().build(), module, session);
  bindInputs(session, {4, -5, 2, 0, -1, 1});
  ASSERT_OK(session.run());
  std::vector<float> out;
  ASSERT_OK(session.copyOutput(0, out));
  EXPECT_EQ(out, (std::vector<float>{5, 3, 4, 9, 3, 2}));
  ASSERT_OK(session.copyOutput(1, out)); // x[1, -1], x[0, 2]
  EXPECT_EQ(out, (std::vector<float>{3, 4}));
  // The maxima (select_last_index: no ties here; the e2e test has them).
  EXPECT_EQ(intsOut(session, 2, 2), (std::vector<int64_t>{4, 0}));
  ASSERT_OK(session.copyOutput(3, out)); // the two smallest, ties lower index first
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 3}));
  EXPECT_EQ(intsOut(session, 4, 4), (std::vector<int64_t>{1, 3, 1, 4}));
  ASSERT_OK(session.copyOutput(5, out)); // exclusive, reverse
  EXPECT_EQ(out, (std::vector<float>{11, 10, 6, 5, 0, /**/ 16, 14, 8, 3, 0}));
}

TEST(IndexRoutines, IndexOutOfRangeIsAnExecutionError) {
  Module module;
  Session session;
  openCpu(indexingBuilder().build(), module, session);
  bindInputs(session, {0, 1, 2, 3, 5, 0});
  Status s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_EXECUTION_ERROR);
  EXPECT_NE(std::string(s.message())
                .find("routine #0 'ge' (gather_elements): index 5 (element 4 of the indices) is "
                      "out of range for dim 1 of size 5"),
            std::string::npos)
      << s.message();
}

void expectLoadError(ModuleBuilder b, const std::string &fragment) {
  std::string message;
  EXPECT_EQ(loadCode(b.build(), &message), MIXPREC_INVALID_MODULE) << message;
  EXPECT_NE(message.find(fragment), std::string::npos)
      << "message: " << message << "\nexpected to contain: " << fragment;
}

TEST(IndexRoutines, LoaderRefusesForgedOptionsAndShapes) {
  EXPECT_EQ(loadCode(indexingBuilder().build()), MIXPREC_OK);
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[1].options = axisOptions(0);
    expectLoadError(b, "routine #1 'gn' (gather_nd): takes GatherNdOptions, got AxisOptions");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[0].options.AsAxisOptions()->axis = 2;
    expectLoadError(b, "(gather_elements): axis 2 is out of range for rank 2");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.tensors[b.routines[0].inputs[1]].dtype = fb::DType::F32;
    expectLoadError(b, "(gather_elements): indices 'idx' must be i64 or i32, got f32");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[1].options.AsGatherNdOptions()->batch_dims = 2;
    expectLoadError(b, "(gather_nd): data [2,5] and indices [2,2] do not fit batch_dims 2");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[2].options.AsArgReduceOptions()->keepdims = false;
    expectLoadError(b, "(arg_max): output 'am' has shape [2,1], expected [2]");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[2].options.AsArgReduceOptions()->axis = -3;
    expectLoadError(b, "(arg_max): axis -3 is out of range for rank 2");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[3].options.AsTopKOptions()->k = 6;
    expectLoadError(b, "routine #3 'tv' (topk): k 6 is out of range [0, 5]");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[3].options.AsTopKOptions()->indices = true;
    expectLoadError(b, "(topk): output 'tv' must be i64, got f32");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[5].options.AsCumSumOptions()->axis = 2;
    expectLoadError(b, "(cumsum): axis 2 is out of range for rank 2");
  }
  {
    ModuleBuilder b = indexingBuilder();
    b.routines[5].inputs = {b.routines[0].inputs[1]};
    expectLoadError(b, "(cumsum): output 'cs' is f32, the input is i64");
  }
}

/// scatter_nd: data[3,4] with rows idx[2,1] combined with updates[2,4].
ModuleBuilder scatterBuilder(int64_t reduction) {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {3, 4});
  const int idx = b.input("idx", fb::DType::I64, {2, 1});
  const int u = b.input("u", fb::DType::F32, {2, 4});
  const int y = b.activation("y", fb::DType::F32, {3, 4});
  fb::ScatterNdOptionsT t;
  t.reduction = reduction;
  b.routine({"sn", "scatter_nd", {x, idx, u}, {y}, unionOf(std::move(t))});
  b.output(y);
  return b;
}

TEST(IndexRoutines, ScatterNdCombinesRepeatedRowsInOrder) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<float> u = {10, 10, 10, 10, 2, 2, 2, 2};
  const std::vector<int64_t> idx = {-2, 1};
  // none: the later tuple wins; add and mul combine both with row 1.
  const std::vector<std::pair<int64_t, std::vector<float>>> cases = {
      {0, {1, 2, 3, 4, 2, 2, 2, 2, 9, 10, 11, 12}},
      {1, {1, 2, 3, 4, 17, 18, 19, 20, 9, 10, 11, 12}},
      {2, {1, 2, 3, 4, 100, 120, 140, 160, 9, 10, 11, 12}},
      {4, {1, 2, 3, 4, 2, 2, 2, 2, 9, 10, 11, 12}},
  };
  for (const auto &[reduction, want] : cases) {
    Module module;
    Session session;
    openCpu(scatterBuilder(reduction).build(), module, session);
    ASSERT_OK(session.bindInput("x", {3, 4}, x.data()));
    ASSERT_OK(session.bindInput("idx", MIXPREC_DTYPE_I64, {2, 1}, idx.data(), 16));
    ASSERT_OK(session.bindInput("u", {2, 4}, u.data()));
    ASSERT_OK(session.run());
    std::vector<float> out;
    ASSERT_OK(session.copyOutput(0, out));
    EXPECT_EQ(out, want) << "reduction " << reduction;
  }
}

TEST(IndexRoutines, ScatterNdLoaderChecks) {
  EXPECT_EQ(loadCode(scatterBuilder(3).build()), MIXPREC_OK);
  expectLoadError(scatterBuilder(5), "routine #0 'sn' (scatter_nd): reduction 5 out of range [0, 4]");
  {
    ModuleBuilder b = scatterBuilder(0);
    b.tensors[b.routines[0].inputs[2]].shape = {2, 3};
    expectLoadError(b, "(scatter_nd): updates 'u' have shape [2,3], expected [2,4]");
  }
  {
    ModuleBuilder b = scatterBuilder(0);
    b.tensors[b.routines[0].inputs[1]].shape = {2, 3};
    expectLoadError(b, "(scatter_nd): indices [2,3] do not address data [3,4]");
  }
}

} // namespace
} // namespace mixprec::testing
