//===- ShimSemanticsTest.cpp - The CUDA shim behaves as a GPU does ---------===//
//
// Indices, shuffles, __syncwarp, atomics and shared memory against what the
// CUDA programming guide specifies, and every misuse the shim refuses:
// wrong launches, wrong arguments, synchronization no GPU would complete,
// sources that do not compile.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda_shim/ShimTestUtil.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <numeric>

#if MIXPREC_CUDA_SHIM_TEST_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

namespace mixprec::cudashim::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ShimIndices, EveryThreadOfA3DGridSeesItsIndices) {
  const Program *program = kernels("indices.cu");
  ASSERT_NE(program, nullptr);
  const Dim3 grid{2, 3, 2}, block{5, 4, 3};
  const unsigned blocks = 12, threads = 60;
  Buffer<unsigned> out(8 * blocks * threads);
  std::string error;
  ASSERT_TRUE(program->launch("write_indices", grid, block, 0, KernelArgs().add(out.data()), error))
      << error;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 3; ++by)
      for (unsigned bx = 0; bx < 2; ++bx)
        for (unsigned tz = 0; tz < 3; ++tz)
          for (unsigned ty = 0; ty < 4; ++ty)
            for (unsigned tx = 0; tx < 5; ++tx) {
              const unsigned b = bx + 2 * (by + 3 * bz), t = tx + 5 * (ty + 4 * tz);
              const unsigned *slot = &out[8 * (b * threads + t)];
              const std::vector<unsigned> got(slot, slot + 8);
              EXPECT_EQ(got, (std::vector<unsigned>{tx, ty, tz, bx, by, bz, 5004003, 2003002}))
                  << "block " << b << " thread " << t;
            }
}

TEST(ShimIndices, KernelParamsAsTheCudaBackendPassesThem) {
  const Program *program = kernels("indices.cu");
  ASSERT_NE(program, nullptr);
  Buffer<unsigned> out(8 * 4);
  unsigned *pointer = out.data();
  void *params[] = {&pointer};
  std::string error;
  ASSERT_TRUE(program->launchRaw("write_indices", {2}, {2}, 0, params, error)) << error;
  EXPECT_EQ(out[8 * 3 + 3], 1u); // block 1, thread 1: blockIdx.x
  EXPECT_EQ(out[8 * 3 + 0], 1u); // threadIdx.x
}

/// The lane a shuffle reads, as the CUDA programming guide describes each
/// intrinsic (mode 0 __shfl_sync, 1 up, 2 down, 3 xor). The deltas of up
/// and down are unsigned.
int guideSource(int mode, int lane, int arg, int width) {
  const int base = lane / width * width;
  const int64_t delta = static_cast<unsigned>(arg);
  switch (mode) {
  case 0:
    return base + (arg % width + width) % width;
  case 1:
    return lane - base >= delta ? lane - arg : lane;
  case 2:
    return lane - base + delta < width ? lane + arg : lane;
  default:
    // Lanes may read earlier segments but not later ones.
    return (lane ^ arg) < base + width ? lane ^ arg : lane;
  }
}

TEST(ShimWarp, ShufflesFollowTheProgrammingGuideForEveryModeAndWidth) {
  const Program *program = kernels("warp.cu");
  ASSERT_NE(program, nullptr);
  for (int mode = 0; mode < 4; ++mode)
    for (int width : {1, 2, 4, 8, 16, 32})
      for (int arg : {0, 1, 3, 5, 16, 31, 40, -1}) {
        if (mode == 3 && arg < 0)
          continue; // a negative lane mask means nothing
        Buffer<int> out(64);
        std::string error;
        ASSERT_TRUE(program->launch("shuffle_ints", {1}, {64}, 0,
                                    KernelArgs().add(out.data()).add(mode).add(arg).add(width),
                                    error))
            << error;
        for (int t = 0; t < 64; ++t) {
          const int warpBase = t / 32 * 32;
          const int source = warpBase + guideSource(mode, t % 32, arg, width);
          EXPECT_EQ(out[t], source * 7 + 1000)
              << "mode " << mode << " width " << width << " arg " << arg << " thread " << t;
        }
      }
}

TEST(ShimWarp, ShufflesKeepEveryBitOfFloatsIntsAndUnsigneds) {
  const Program *program = kernels("warp.cu");
  ASSERT_NE(program, nullptr);
  std::vector<float> f(32);
  std::vector<unsigned> u(32);
  std::vector<int> i(32);
  for (int t = 0; t < 32; ++t) {
    f[t] = bitsFloat(0x7fc00001u + 0x1000u * t); // NaNs with payloads
    u[t] = 0xfffffff0u + t;
    i[t] = -1000000 * t;
  }
  f[4] = -0.0f;
  f[6] = 1e-45f;
  Buffer<float> fin(f), fout(32);
  Buffer<unsigned> uin(u), uout(32);
  Buffer<int> iin(i), iout(32);
  std::string error;
  ASSERT_TRUE(program->launch("shuffle_types", {1}, {32}, 0,
                              KernelArgs()
                                  .add<const float *>(fin.data())
                                  .add<const unsigned *>(uin.data())
                                  .add<const int *>(iin.data())
                                  .add(fout.data())
                                  .add(uout.data())
                                  .add(iout.data()),
                              error))
      << error;
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(floatBits(fout[t]), floatBits(f[t ^ 1])) << t;
    EXPECT_EQ(uout[t], u[t + 3 < 32 ? t + 3 : t]) << t;
    EXPECT_EQ(iout[t], i[t ^ 16]) << t;
  }
}

TEST(ShimWarp, SyncwarpOnEachHalfInItsOwnBranch) {
  const Program *program = kernels("warp.cu");
  ASSERT_NE(program, nullptr);
  Buffer<int> out(32);
  std::string error;
  for (bool reverse : {false, true}) {
    LaunchOptions options;
    options.reverseThreadOrder = reverse;
    ASSERT_TRUE(program->launch("syncwarp_halves", {1}, {32}, 0, KernelArgs().add(out.data()),
                                error, options))
        << error;
    for (int lane = 0; lane < 32; ++lane)
      EXPECT_EQ(out[lane], (lane < 16 ? 15 - lane : 47 - lane) * 3) << lane;
  }
}

TEST(ShimWarp, ButterflySumInEveryWarpOfAFullBlock) {
  const Program *program = kernels("warp.cu");
  ASSERT_NE(program, nullptr);
  std::vector<float> in(1024);
  std::iota(in.begin(), in.end(), 0.0f);
  Buffer<float> input(in), out(1024);
  std::string error;
  ASSERT_TRUE(program->launch("warp_sums", {1}, {1024}, 0,
                              KernelArgs().add<const float *>(input.data()).add(out.data()), error))
      << error;
  for (int t = 0; t < 1024; ++t) {
    const int base = t / 32 * 32;
    EXPECT_EQ(out[t], static_cast<float>(32 * base + 31 * 32 / 2)) << t;
  }
}

TEST(ShimAtomics, EveryThreadOfEveryBlockTakesPart) {
  const Program *program = kernels("atomics.cu");
  ASSERT_NE(program, nullptr);
  const unsigned blocks = 5, threads = 96, n = blocks * threads;
  Buffer<int> imax(std::vector<int>{INT32_MIN}), imin(std::vector<int>{INT32_MAX});
  Buffer<unsigned> umax(std::vector<unsigned>{0}), umin(std::vector<unsigned>{UINT32_MAX});
  Buffer<unsigned> counter(1), tickets(n);
  Buffer<float> sum(1), sumBefore(n);
  std::string error;
  ASSERT_TRUE(program->launch("atomics", {blocks}, {threads}, 0,
                              KernelArgs()
                                  .add(imax.data())
                                  .add(imin.data())
                                  .add(umax.data())
                                  .add(umin.data())
                                  .add(counter.data())
                                  .add(tickets.data())
                                  .add(sum.data())
                                  .add(sumBefore.data()),
                              error))
      << error;
  std::vector<int> values(n);
  for (unsigned g = 0; g < n; ++g)
    values[g] = static_cast<int>((g * 2654435761u) >> 8) - (1 << 22);
  EXPECT_EQ(imax[0], *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(imin[0], *std::min_element(values.begin(), values.end()));
  std::vector<unsigned> asUnsigned(values.begin(), values.end());
  EXPECT_EQ(umax[0], *std::max_element(asUnsigned.begin(), asUnsigned.end()));
  EXPECT_EQ(umin[0], *std::min_element(asUnsigned.begin(), asUnsigned.end()));
  EXPECT_EQ(counter[0], n);
  EXPECT_EQ(sum[0], static_cast<float>(n));
  // The values the atomics returned are each old value exactly once.
  std::vector<unsigned> gotTickets = tickets.values();
  std::vector<float> gotSums = sumBefore.values();
  std::sort(gotTickets.begin(), gotTickets.end());
  std::sort(gotSums.begin(), gotSums.end());
  for (unsigned k = 0; k < n; ++k) {
    EXPECT_EQ(gotTickets[k], k);
    EXPECT_EQ(gotSums[k], static_cast<float>(k));
  }
}

TEST(ShimSharedMemory, DynamicSharedMemoryIsPoisonedAtEveryBlockStart) {
  const Program *program = kernels("shared.cu");
  ASSERT_NE(program, nullptr);
  const int count = 300;
  Buffer<unsigned> out(3 * count);
  std::string error;
  ASSERT_TRUE(program->launch("read_fresh_smem", {3}, {64}, count * sizeof(float),
                              KernelArgs().add(out.data()).add(count), error))
      << error;
  for (int i = 0; i < 3 * count; ++i)
    EXPECT_EQ(out[i], 0xffffffffu) << i;
}

// ---- Misuse ----------------------------------------------------------------------

TEST(ShimErrors, LaunchesNoGpuWouldAccept) {
  const Program *program = kernels("indices.cu");
  ASSERT_NE(program, nullptr);
  Buffer<unsigned> out(8 * 2048);
  const KernelArgs args = KernelArgs().add(out.data());
  std::string error;
  EXPECT_FALSE(program->launch("write_indices", {1}, {1025}, 0, args, error));
  EXPECT_EQ(error, "kernel write_indices: the block (1025,1,1) exceeds the limits (1024, 1024, 64; "
                   "1024 threads in all)");
  EXPECT_FALSE(program->launch("write_indices", {1}, {32, 32, 2}, 0, args, error));
  EXPECT_THAT(error, HasSubstr("the block (32,32,2) exceeds the limits"));
  EXPECT_FALSE(program->launch("write_indices", {0}, {1}, 0, args, error));
  EXPECT_EQ(error,
            "kernel write_indices: the grid (0,1,1) or the block (1,1,1) has a zero dimension");
  EXPECT_FALSE(program->launch("write_indices", {1, 70000}, {1}, 0, args, error));
  EXPECT_THAT(error, HasSubstr("the grid (1,70000,1) exceeds the limits"));
  EXPECT_FALSE(program->launch("write_indices", {1}, {1}, 300000, args, error));
  EXPECT_EQ(error, "kernel write_indices: dynamic shared memory of 300000 bytes exceeds the limit "
                   "of 232448");
  EXPECT_FALSE(program->launch("write_index", {1}, {1}, 0, args, error));
  EXPECT_EQ(error, "no kernel named write_index (the program has write_indices)");
}

TEST(ShimErrors, ArgumentsThatDoNotMatchTheParameters) {
  const Program *program = kernels("indices.cu");
  ASSERT_NE(program, nullptr);
  std::string error;
  EXPECT_FALSE(program->launch("write_indices", {1}, {1}, 0, KernelArgs(), error));
  EXPECT_EQ(error, "kernel write_indices takes 1 parameter, got 0");
  EXPECT_FALSE(program->launch("write_indices", {1}, {1}, 0, KernelArgs().add(7), error));
  EXPECT_EQ(error,
            "kernel write_indices: parameter #0 is a pointer of 8 bytes, got an integer of 4 "
            "bytes");
  EXPECT_FALSE(program->launch("write_indices", {1}, {1}, 0, KernelArgs().add(int64_t{7}), error));
  EXPECT_EQ(error,
            "kernel write_indices: parameter #0 is a pointer of 8 bytes, got an integer of 8 "
            "bytes");
}

/// Launches `kernel` of errors.cu on one block of `threads` and returns its
/// error ("" if it succeeded).
std::string errorOf(const std::string &kernel, unsigned threads) {
  const Program *program = kernels("errors.cu");
  if (program == nullptr)
    return "errors.cu did not compile";
  Buffer<int> out(64);
  std::string error;
  if (program->launch(kernel, {1}, {threads}, 0, KernelArgs().add(out.data()), error))
    return "";
  return error;
}

TEST(ShimErrors, SynchronizationNoGpuWouldComplete) {
  const struct {
    const char *kernel;
    unsigned threads;
    const char *error; // after "kernel KERNEL: block (0,0,0), "
  } cases[] = {
      {"exit_before_barrier", 32,
       "thread (0,0,0) waits at __syncthreads (errors.cu:8), but thread (3,0,0) has exited "
       "without reaching it"},
      {"divergent_barriers", 32,
       "threads wait at different barriers: thread (0,0,0) at __syncthreads (errors.cu:15), "
       "thread (16,0,0) at __syncthreads (errors.cu:17)"},
      {"shuffle_missing_lane", 16,
       "thread (0,0,0): __shfl_xor_sync (errors.cu:24) with mask 0xffffffff: lane 0 reads lane "
       "16, which does not exist (the block has 16 threads)"},
      {"shuffle_outside_mask", 32,
       "thread (0,0,0): __shfl_xor_sync (errors.cu:30) with mask 0x0000ffff: lane 0 reads lane "
       "16, which is not in the mask"},
      {"mask_without_self", 32,
       "thread (0,0,0): __shfl_sync (errors.cu:36) with mask 0x00000002: the mask does not "
       "include the calling lane 0"},
      {"warp_against_barrier", 32,
       "thread (0,0,0) waits at __shfl_xor_sync (errors.cu:42) with mask 0xffffffff, but lane 16 "
       "(thread (16,0,0)) waits at __syncthreads (errors.cu:44)"},
      {"bad_width", 32,
       "thread (0,0,0): __shfl_down_sync (errors.cu:49) with mask 0xffffffff: width 12 is not a "
       "power of two from 1 to 32"},
      {"exit_before_shuffle", 32,
       "thread (0,0,0) waits at __shfl_xor_sync (errors.cu:56) with mask 0xffffffff, but lane 5 "
       "(thread (5,0,0)) has exited"},
  };
  for (const auto &c : cases)
    EXPECT_EQ(errorOf(c.kernel, c.threads),
              "kernel " + std::string(c.kernel) + ": block (0,0,0), " + c.error);
}

TEST(ShimErrors, AFailureInALaterBlockNamesThatBlock) {
  const Program *program = kernels("errors.cu");
  ASSERT_NE(program, nullptr);
  Buffer<int> out(4);
  std::string error;
  EXPECT_FALSE(
      program->launch("fails_in_block_two", {4}, {32}, 0, KernelArgs().add(out.data()), error));
  EXPECT_EQ(error, "kernel fails_in_block_two: block (2,0,0), thread (0,0,0) waits at "
                   "__syncthreads (errors.cu:63), but thread (3,0,0) has exited without reaching "
                   "it");
  EXPECT_EQ(out.values(), (std::vector<int>{1, 1, 0, 0}));
}

TEST(ShimErrors, AProgramRunsOnAfterAFailedLaunch) {
  EXPECT_NE(errorOf("warp_against_barrier", 32), "");
  const Program *program = kernels("indices.cu");
  ASSERT_NE(program, nullptr);
  Buffer<unsigned> out(8 * 64);
  std::string error;
  ASSERT_TRUE(program->launch("write_indices", {1}, {64}, 0, KernelArgs().add(out.data()), error))
      << error;
  EXPECT_EQ(out[8 * 63], 63u);
}

TEST(ShimErrors, SourcesThatDoNotCompile) {
  std::string error;
  EXPECT_EQ(Program::compileSource("broken.cu",
                                   "extern \"C\" __global__ void k(int *p) {\n"
                                   "  p[0] = undeclared_name;\n"
                                   "}\n",
                                   {}, error),
            nullptr);
  EXPECT_THAT(error, StartsWith("cannot compile broken.cu: broken.cu:2:"));
  EXPECT_THAT(error, HasSubstr("undeclared_name"));
  EXPECT_EQ(error.find('\n'), std::string::npos);

  EXPECT_EQ(Program::compileSource("helpers.cu", "__device__ int twice(int x) { return 2 * x; }\n",
                                   {}, error),
            nullptr);
  EXPECT_EQ(error, "helpers.cu has no kernel (no `__global__ void NAME(`)");

  CompileOptions named;
  named.kernels = {"missing"};
  EXPECT_EQ(Program::compileSource("k.cu", "extern \"C\" __global__ void k() {}\n", named, error),
            nullptr);
  EXPECT_THAT(error, StartsWith("cannot compile k.cu: "));
  EXPECT_THAT(error, HasSubstr("missing"));

  EXPECT_EQ(Program::compileSource("other.cu",
                                   "extern \"C\" __global__ void k(float *out) {\n"
                                   "  extern __shared__ float buffer[];\n"
                                   "  out[0] = buffer[0];\n"
                                   "}\n",
                                   {}, error),
            nullptr);
  EXPECT_EQ(error, "cannot load the kernels of other.cu: undefined symbol: buffer (an `extern` "
                   "declaration the shim does not define? dynamic shared memory is `extern "
                   "__shared__ float smem[];`)");

  EXPECT_EQ(Program::compileSource("../k.cu", "", {}, error), nullptr);
  EXPECT_EQ(error, "the source name '../k.cu' is not a plain file name");

  EXPECT_EQ(Program::compileFile(MIXPREC_CUDA_SHIM_TEST_KERNELS "/absent.cu", {}, error), nullptr);
  EXPECT_THAT(error, HasSubstr("absent.cu"));
}

TEST(ShimHarness, FindsKernelsButNotInCommentsOrStrings) {
  const std::string source = R"(
// __global__ void in_a_comment(int *p)
/* __global__ void in_a_block_comment(int *p) */
const char *text = "__global__ void in_a_string(";
template <int N>
__global__ void templated(int *p) {}
extern "C" __global__ void first(float *p) {}
extern "C" __global__
void
second (int n) {}
extern "C" __global__ void __launch_bounds__(256) bounded(int n) {}
__device__ void not_a_kernel(int *p) {}
)";
  EXPECT_EQ(findKernelNames(source), (std::vector<std::string>{"first", "second", "bounded"}));
}

TEST(ShimHarness, KernelNamesAndExplicitSelection) {
  const Program *program = kernels("errors.cu");
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->kernelNames().size(), 9u);
  CompileOptions options;
  options.kernels = {"bad_width", "bad_width"};
  std::string error;
  std::unique_ptr<Program> one =
      Program::compileFile(MIXPREC_CUDA_SHIM_TEST_KERNELS "/errors.cu", options, error);
  ASSERT_NE(one, nullptr) << error;
  EXPECT_EQ(one->kernelNames(), std::vector<std::string>{"bad_width"});
}

#if MIXPREC_CUDA_SHIM_TEST_SANITIZED
// A sanitizer build compiles the kernels with ASan and UBSan: a kernel's
// memory error is reported at its source line. (In other builds these
// kernels would just be undefined behaviour, so they do not run there.)
TEST(ShimSanitizers, KernelMemoryErrorsAreReportedAtTheirSourceLine) {
  const Program *program = kernels("sanitizers.cu");
  ASSERT_NE(program, nullptr);
  Buffer<float> out(64);
  std::string error;
  const size_t shared = 32 * sizeof(float);
  ASSERT_TRUE(program->launch("smem_overflow", {1}, {32}, shared,
                              KernelArgs().add(out.data()).add(31), error))
      << error;
  // The child reports on stderr, where EXPECT_DEATH reads, even when
  // scripts/test.sh sends reports to files (any such file fails the run).
  EXPECT_DEATH((__sanitizer_set_report_path("stderr"),
                program->launch("smem_overflow", {1}, {32}, shared,
                                KernelArgs().add(out.data()).add(32), error)),
               "use-after-poison.*\n(.*\n)*.*sanitizers.cu:11");
  EXPECT_DEATH((__sanitizer_set_report_path("stderr"),
                program->launch("heap_overflow", {1}, {4}, 0,
                                KernelArgs().add(out.data() + 60).add(4), error)),
               "heap-buffer-overflow.*\n(.*\n)*.*sanitizers.cu:15");
  EXPECT_DEATH(
      (__sanitizer_set_report_path("stderr"),
       program->launch("misaligned_vector", {1}, {1}, 0,
                       KernelArgs().add<const float *>(out.data()).add(out.data()), error)),
      "sanitizers.cu:19:.*misaligned address");
}
#endif

} // namespace
} // namespace mixprec::cudashim::test
