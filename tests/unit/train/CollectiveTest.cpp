//===- CollectiveTest.cpp - collectives without a job or a GPU ------------===//
//
// ctest collective_local: the one-process collective, the session's hook
// (the C callback writes the message and returns non-zero on an error), the
// launcher's facts, and the MPI plugin's loader failing clearly.
// ctest collective_nccl_probe: libnccl loads and has every entry point the
// NCCL collective calls (no GPU needed); a missing one is named.
//
//===----------------------------------------------------------------------===//
#include "train/Collective.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

using namespace mixprec::trainer;
using ::testing::HasSubstr;

namespace {

/// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadValue = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { hadValue ? setenv(name, saved.c_str(), 1) : unsetenv(name); }

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

TEST(CollectiveLocal, Operations) {
  auto c = localCollective();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->worldSize(), 1);
  EXPECT_EQ(c->name(), "local");
  EXPECT_FALSE(c->deviceBuffers());

  std::vector<float> v = {1.5f, -2.f, 3.f};
  for (mixprec_dtype_t dtype : {MIXPREC_DTYPE_F32, MIXPREC_DTYPE_F16, MIXPREC_DTYPE_BF16,
                                MIXPREC_DTYPE_I32, MIXPREC_DTYPE_I64})
    for (Reduce op : {Reduce::Sum, Reduce::Mean, Reduce::Max})
      EXPECT_EQ(c->allReduce(v.data(), 1, dtype, op), "");
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.f, 3.f})) << "one rank's reduction is its input";
  EXPECT_EQ(c->allReduce(nullptr, 0, MIXPREC_DTYPE_F32, Reduce::Sum), "");
  EXPECT_EQ(c->allReduce(v.data(), 3, MIXPREC_DTYPE_F8E4M3FN, Reduce::Sum),
            "rank 0 of 1: all_reduce of 3 f8E4M3FN elements: not supported (f32, f16, bf16, i32 "
            "and i64 are)");
  EXPECT_THAT(c->allReduce(v.data(), 3, MIXPREC_DTYPE_F32, static_cast<Reduce>(9)),
              HasSubstr("rank 0 of 1: all_reduce of 3 f32 elements: unknown reduction 9"));

  char data[4] = {'a', 'b', 'c', 'd'};
  EXPECT_EQ(c->broadcast(data, 4, 0), "");
  EXPECT_EQ(std::string(data, 4), "abcd");
  EXPECT_EQ(c->broadcast(data, 4, 1),
            "rank 0 of 1: broadcast of 4 bytes from rank 1: no such rank");

  char out[4] = {0};
  EXPECT_EQ(c->allGather(data, out, 4), "");
  EXPECT_EQ(std::string(out, 4), "abcd");
  EXPECT_EQ(c->allGather(out, out, 4), "") << "in place";
  EXPECT_EQ(std::string(out, 4), "abcd");
  EXPECT_THAT(c->allGather(nullptr, out, 4), HasSubstr("rank 0 of 1: all_gather of 4 bytes"));

  EXPECT_EQ(c->barrier(), "");
  c->abort(3); // no job: returns
}

TEST(CollectiveLocal, HookWritesTheError) {
  auto c = localCollective();
  mixprec_collective_t hook = c->hook();
  EXPECT_EQ(hook.struct_size, sizeof(mixprec_collective_t));
  EXPECT_EQ(hook.context, c.get());
  EXPECT_EQ(hook.rank, 0);
  EXPECT_EQ(hook.world_size, 1);
  EXPECT_EQ(hook.device_buffers, 0);
  ASSERT_NE(hook.all_reduce, nullptr);

  float v[2] = {1.f, 2.f};
  char error[128] = "untouched";
  EXPECT_EQ(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_F32, MIXPREC_REDUCE_SUM, nullptr,
                            error, sizeof error),
            0);
  EXPECT_STREQ(error, "untouched") << "no message on success";
  EXPECT_EQ(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_F32, MIXPREC_REDUCE_MAX, nullptr,
                            error, sizeof error),
            0);
  EXPECT_EQ(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_BF16, MIXPREC_REDUCE_MEAN, nullptr,
                            error, sizeof error),
            0);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(v[1], 2.f);

  EXPECT_NE(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_BOOL, MIXPREC_REDUCE_SUM, nullptr,
                            error, sizeof error),
            0);
  EXPECT_STREQ(error, "rank 0 of 1: all_reduce of 2 bool elements: not supported (f32, f16, "
                      "bf16, i32 and i64 are)");
  EXPECT_NE(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_F32, 5, nullptr, error, sizeof error),
            0);
  EXPECT_STREQ(error, "rank 0 of 1: all_reduce: unknown reduction 5");

  // Truncated to the buffer, always NUL-terminated; no buffer at all.
  char small[8];
  std::memset(small, 'x', sizeof small);
  EXPECT_NE(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_BOOL, MIXPREC_REDUCE_SUM, nullptr,
                            small, sizeof small),
            0);
  EXPECT_STREQ(small, "rank 0 ");
  EXPECT_NE(hook.all_reduce(hook.context, v, 2, MIXPREC_DTYPE_BOOL, MIXPREC_REDUCE_SUM, nullptr,
                            nullptr, 0),
            0);
}

TEST(CollectiveLaunch, Environment) {
  ScopedEnv a("OMPI_COMM_WORLD_RANK", nullptr), b("OMPI_COMM_WORLD_SIZE", nullptr),
      c("OMPI_COMM_WORLD_LOCAL_RANK", nullptr), d("PMI_RANK", nullptr), e("PMI_SIZE", nullptr),
      f("MPI_LOCALRANKID", nullptr), g("PMIX_RANK", nullptr), h("SLURM_STEP_NUM_TASKS", nullptr),
      i("SLURM_LOCALID", nullptr);
  LaunchInfo none = launchInfo();
  EXPECT_EQ(none.rank, 0);
  EXPECT_EQ(none.worldSize, 1);
  EXPECT_EQ(none.localRank, 0);
  EXPECT_EQ(none.launcher, "");

  {
    ScopedEnv r("PMI_RANK", "2"), s("PMI_SIZE", "3"), l("MPI_LOCALRANKID", "1");
    LaunchInfo pmi = launchInfo();
    EXPECT_EQ(pmi.launcher, "pmi");
    EXPECT_EQ(pmi.rank, 2);
    EXPECT_EQ(pmi.worldSize, 3);
    EXPECT_EQ(pmi.localRank, 1);
    // Open MPI's variables come first.
    ScopedEnv or_("OMPI_COMM_WORLD_RANK", "1"), os("OMPI_COMM_WORLD_SIZE", "4"),
        ol("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    LaunchInfo ompi = launchInfo();
    EXPECT_EQ(ompi.launcher, "openmpi");
    EXPECT_EQ(ompi.rank, 1);
    EXPECT_EQ(ompi.worldSize, 4);
    EXPECT_EQ(ompi.localRank, 1);
  }
  {
    ScopedEnv r("PMIX_RANK", "5"), s("SLURM_STEP_NUM_TASKS", "8"), l("SLURM_LOCALID", "1");
    LaunchInfo pmix = launchInfo();
    EXPECT_EQ(pmix.launcher, "pmix");
    EXPECT_EQ(pmix.rank, 5);
    EXPECT_EQ(pmix.worldSize, 8);
    EXPECT_EQ(pmix.localRank, 1);
  }
  {
    // Inconsistent or malformed: ignored.
    ScopedEnv r("OMPI_COMM_WORLD_RANK", "4"), s("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(launchInfo().launcher, "");
    ScopedEnv p("PMI_RANK", "1x"), q("PMI_SIZE", "2");
    EXPECT_EQ(launchInfo().launcher, "");
  }
}

TEST(CollectiveMpiLoad, MissingPluginNamesThePath) {
  ScopedEnv plugin("MIXPREC_MPI_PLUGIN", "/nonexistent/libmixprec_mpi.so");
  std::string error;
  EXPECT_EQ(openMpiCollective(60, error), nullptr);
  EXPECT_THAT(error, HasSubstr("/nonexistent/libmixprec_mpi.so"));
  EXPECT_THAT(error, HasSubstr("No such file or directory"));
}

TEST(CollectiveMpiLoad, NotThePlugin) {
  // libmixprec_runtime.so loads, but has no plugin table.
  Dl_info info{};
  void *symbol = dlsym(RTLD_DEFAULT, "mixprec_dtype_size");
  ASSERT_TRUE(symbol && dladdr(symbol, &info) && info.dli_fname);
  ScopedEnv plugin("MIXPREC_MPI_PLUGIN", info.dli_fname);
  std::string error;
  EXPECT_EQ(openMpiCollective(60, error), nullptr);
  EXPECT_THAT(error, HasSubstr(std::string(info.dli_fname) +
                               "' is not the MPI plugin: it lacks mixprec_mpi_plugin"));
}

TEST(CollectiveMpiLoad, BadTimeout) {
  std::string error;
  EXPECT_EQ(openMpiCollective(0, error), nullptr);
  EXPECT_THAT(error, HasSubstr("timeout must be above 0 s"));
}

TEST(CollectiveNccl, MissingLibraryNamesThePath) {
  ScopedEnv library("MIXPREC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  std::string version = "unset";
  std::string error = probeNccl(&version);
#if MIXPREC_HAVE_NCCL
  EXPECT_THAT(error, HasSubstr("/nonexistent/libnccl.so.2"));
  EXPECT_EQ(version, "unset");
  std::string openError;
  EXPECT_EQ(openNcclCollective(nullptr, "/tmp/unused-id", 0, 1, 60, openError), nullptr);
  EXPECT_THAT(openError, HasSubstr("/nonexistent/libnccl.so.2"));
#else
  EXPECT_THAT(error, HasSubstr("built without nccl.h"));
#endif
}

TEST(CollectiveNccl, Probe) {
#if !MIXPREC_HAVE_NCCL
  GTEST_SKIP() << "built without nccl.h: " << probeNccl();
#else
  std::string version;
  std::string error = probeNccl(&version);
#if !MIXPREC_TEST_HAVE_LIBNCCL
  if (!error.empty())
    GTEST_SKIP() << "no libnccl.so.2 was found at configure time: " << error;
#endif
  ASSERT_EQ(error, "");
  EXPECT_TRUE(std::regex_match(version, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+"))) << version;
  std::printf("NCCL %s\n", version.c_str());
#endif
}

TEST(CollectiveNccl, OpenWithoutADriverOrWithBadArguments) {
#if !MIXPREC_HAVE_NCCL
  GTEST_SKIP() << "built without nccl.h";
#else
  std::string error;
  EXPECT_EQ(openNcclCollective(nullptr, "/tmp/unused-id", 2, 2, 60, error), nullptr);
  EXPECT_EQ(error, "NCCL: rank 2 of 2: no such rank");
  EXPECT_EQ(openNcclCollective(nullptr, "", 0, 2, 60, error), nullptr);
  EXPECT_THAT(error, HasSubstr("neither a bootstrap collective nor an id file"));
  if (!probeNccl().empty())
    GTEST_SKIP() << "no libnccl: " << probeNccl();
  ScopedEnv driver("MIXPREC_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
  EXPECT_EQ(openNcclCollective(nullptr, "/tmp/unused-id", 0, 1, 60, error), nullptr);
  EXPECT_THAT(error, HasSubstr("NCCL: rank 0 of 1: no CUDA driver: cannot load "
                               "/nonexistent/libcuda.so.1"));
#endif
}

} // namespace
