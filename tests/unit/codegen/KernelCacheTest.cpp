//===- KernelCacheTest.cpp - the on-disk NVRTC cache ----------------------===//
//
// Runs without a GPU (NVRTC needs none). Compilations are counted with
// nvrtcCompileCount(): a cache hit must not call NVRTC at all.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/KernelCache.h"

#include "common/FileIO.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace mixprec::codegen;

constexpr const char *kKernel = R"cuda(
#include <cuda_bf16.h>
extern "C" __global__ void mp_scale(const __nv_bfloat16 *in, float *out, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __bfloat162float(in[i]) * s;
}
)cuda";

/// A fresh folder per test, removed afterwards.
class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/mixprec-kernel-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + root + "'").c_str()); }

  /// A cache in `root` whose warnings land in `warnings`.
  KernelCacheOptions options() {
    KernelCacheOptions o;
    o.directory = root;
    o.warn = [this](const std::string &w) {
      std::lock_guard<std::mutex> lock(warningsMutex);
      warnings.push_back(w);
    };
    return o;
  }

  /// Compiles kKernel through a new cache (as a new process would).
  NvrtcResult compileFresh(const NvrtcOptions &nvrtc = {}) {
    KernelCache cache(options());
    NvrtcResult result;
    std::string error;
    EXPECT_TRUE(cache.compile("mp_scale.cu", kKernel, nvrtc, result, error)) << error;
    return result;
  }

  std::string root;
  std::mutex warningsMutex;
  std::vector<std::string> warnings;
};

/// The whole file (common/FileIO: the cache's own reader and writer).
std::string readAll(const std::string &path) {
  std::string bytes, error;
  EXPECT_TRUE(mixprec::common::readRegularFile(path, bytes, error)) << error;
  return bytes;
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::string error;
  ASSERT_TRUE(mixprec::common::writeFileAtomically(path, bytes.data(), bytes.size(), error))
      << error;
}

void expectSame(const NvrtcResult &a, const NvrtcResult &b) {
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.log, b.log);
}

TEST_F(KernelCacheTest, SecondCompileCompilesNothing) {
  uint64_t before = nvrtcCompileCount();
  NvrtcResult first = compileFresh();
  EXPECT_EQ(nvrtcCompileCount(), before + 1);
  ASSERT_FALSE(first.cubin.empty());
  ASSERT_NE(first.ptx.find(".entry mp_scale"), std::string::npos);

  KernelCache cache(options());
  NvrtcResult second;
  std::string error;
  ASSERT_TRUE(cache.compile("mp_scale.cu", kKernel, NvrtcOptions{}, second, error)) << error;
  EXPECT_EQ(nvrtcCompileCount(), before + 1);
  expectSame(first, second);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_TRUE(warnings.empty());
  // Entries live in root/nvrtc/, named by the key's hash.
  EXPECT_EQ(cache.entryDirectory(), root + "/nvrtc");
  struct stat st;
  EXPECT_EQ(::stat(cache.entryPath(kernelCacheKey("mp_scale.cu", kKernel, {})).c_str(), &st), 0);
}

TEST_F(KernelCacheTest, KeyCoversSourceNameArchitectureAndOptions) {
  compileFresh();
  uint64_t before = nvrtcCompileCount();
  NvrtcOptions sm80;
  sm80.smVersion = 80;
  NvrtcResult other = compileFresh(sm80);
  EXPECT_NE(other.ptx.find(".target sm_80"), std::string::npos);
  NvrtcOptions ptxOnly;
  ptxOnly.cubin = false;
  EXPECT_TRUE(compileFresh(ptxOnly).cubin.empty());
  NvrtcOptions extra;
  extra.extraOptions = {"--use_fast_math"};
  compileFresh(extra);
  EXPECT_EQ(nvrtcCompileCount(), before + 3);

  KernelCache cache(options());
  NvrtcResult result;
  std::string error;
  ASSERT_TRUE(cache.compile("renamed.cu", kKernel, {}, result, error)) << error;
  ASSERT_TRUE(cache.compile("mp_scale.cu", std::string(kKernel) + "\n", {}, result, error));
  EXPECT_EQ(nvrtcCompileCount(), before + 5);
  // All of them are cached now.
  for (const NvrtcOptions &o : {sm80, ptxOnly, extra, NvrtcOptions{}})
    compileFresh(o);
  EXPECT_EQ(nvrtcCompileCount(), before + 5);

  KernelCacheKey a = kernelCacheKey("k.cu", "x", {}), b = kernelCacheKey("k.cu", "y", {});
  EXPECT_NE(a.hash, b.hash);
  EXPECT_NE(a.text.find("nvrtc " + nvrtcVersionString()), std::string::npos);
  EXPECT_NE(a.text.find("--gpu-architecture=sm_90"), std::string::npos);
}

TEST_F(KernelCacheTest, DamagedEntryIsRebuiltWithWarningNeverUsed) {
  NvrtcResult original = compileFresh();
  KernelCache probe(options());
  const std::string path = probe.entryPath(kernelCacheKey("mp_scale.cu", kKernel, {}));
  const std::string good = readAll(path);
  ASSERT_GT(good.size(), 1000u);

  std::vector<std::pair<std::string, std::string>> damages;
  for (size_t at : {size_t(0), size_t(9), size_t(12), size_t(20), size_t(40), size_t(60),
                    good.size() / 2, good.size() - 9, good.size() - 1}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    damages.push_back({"flip at " + std::to_string(at), flipped});
  }
  for (size_t length : {size_t(0), size_t(7), size_t(56), size_t(100), good.size() / 2,
                        good.size() - 1})
    damages.push_back({"truncated to " + std::to_string(length), good.substr(0, length)});
  damages.push_back({"appended", good + "x"});
  damages.push_back({"garbage", std::string(good.size(), 'g')});

  for (const auto &[what, bytes] : damages) {
    SCOPED_TRACE(what);
    writeAll(path, bytes);
    warnings.clear();
    uint64_t before = nvrtcCompileCount();
    NvrtcResult rebuilt = compileFresh();
    EXPECT_EQ(nvrtcCompileCount(), before + 1) << "a damaged entry must not be used";
    expectSame(original, rebuilt);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].rfind("kernel cache: ignoring damaged entry '" + path + "' (", 0), 0u)
        << warnings[0];
    EXPECT_NE(warnings[0].find("); compiling again"), std::string::npos) << warnings[0];
    // Rebuilt: the next compile uses it again.
    EXPECT_EQ(readAll(path), good);
    compileFresh();
    EXPECT_EQ(nvrtcCompileCount(), before + 1);
  }
}

TEST_F(KernelCacheTest, FolderThatCannotBeCreatedTurnsCacheOff) {
  // A path below a regular file cannot be a folder, even for root.
  writeAll(root + "/file", "x");
  KernelCacheOptions o = options();
  o.directory = root + "/file/cache";
  KernelCache cache(o);
  EXPECT_FALSE(cache.enabled());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "kernel cache off: cannot create folder '" + root +
                             "/file/cache': a part of the path is not a folder (set "
                             "MIXPREC_CACHE_DIR to a writable folder)");
  uint64_t before = nvrtcCompileCount();
  NvrtcResult result;
  std::string error;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(cache.compile("mp_scale.cu", kKernel, {}, result, error)) << error;
  EXPECT_EQ(nvrtcCompileCount(), before + 2);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(KernelCacheTest, DisabledCacheTouchesNoFile) {
  KernelCacheOptions o = options();
  o.enabled = false;
  KernelCache cache(o);
  NvrtcResult result;
  std::string error;
  ASSERT_TRUE(cache.compile("mp_scale.cu", kKernel, {}, result, error)) << error;
  struct stat st;
  EXPECT_NE(::stat((root + "/nvrtc").c_str(), &st), 0);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(KernelCacheTest, CompileErrorsAreNotCached) {
  KernelCache cache(options());
  uint64_t before = nvrtcCompileCount();
  NvrtcResult result;
  std::string error;
  const std::string broken = "extern \"C\" __global__ void mp_k() { undeclared = 1; }\n";
  EXPECT_FALSE(cache.compile("mp_k.cu", broken, {}, result, error));
  EXPECT_NE(error.find("in kernel 'mp_k'"), std::string::npos) << error;
  EXPECT_FALSE(cache.compile("mp_k.cu", broken, {}, result, error));
  EXPECT_EQ(nvrtcCompileCount(), before + 2);
  EXPECT_EQ(cache.stats().stores, 0u);
}

TEST_F(KernelCacheTest, EnvironmentChoosesFolder) {
  auto saved = [](const char *name) {
    const char *v = std::getenv(name);
    return std::pair<bool, std::string>(v != nullptr, v ? v : "");
  };
  auto restore = [](const char *name, const std::pair<bool, std::string> &v) {
    if (v.first)
      ::setenv(name, v.second.c_str(), 1);
    else
      ::unsetenv(name);
  };
  auto mixprec = saved("MIXPREC_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  ::setenv("MIXPREC_CACHE_DIR", "/a/mixprec-cache", 1);
  ::setenv("XDG_CACHE_HOME", "/b/xdg", 1);
  ::setenv("HOME", "/c/home", 1);
  EXPECT_EQ(defaultCacheDirectory(), "/a/mixprec-cache");
  ::unsetenv("MIXPREC_CACHE_DIR");
  EXPECT_EQ(defaultCacheDirectory(), "/b/xdg/mixprec");
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(defaultCacheDirectory(), "/c/home/.cache/mixprec");
  ::unsetenv("HOME");
  EXPECT_EQ(defaultCacheDirectory(), "");
  ::setenv("MIXPREC_CACHE_DIR", root.c_str(), 1);
  KernelCacheOptions o = options();
  o.directory.clear();
  EXPECT_EQ(KernelCache(o).entryDirectory(), root + "/nvrtc");
  restore("MIXPREC_CACHE_DIR", mixprec);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

// Writers replace an entry while readers read it, each with its own cache
// (as separate processes would): a reader sees the whole old entry or the
// whole new one, never a part, so no reader ever finds a damaged entry.
TEST_F(KernelCacheTest, ConcurrentWritersNeverShowHalfAnEntry) {
  const KernelCacheKey key = kernelCacheKey("big.cu", "a large kernel", {});
  auto resultOf = [](char fill) {
    NvrtcResult r;
    r.ptx = std::string(4 << 20, fill); // large, so writes take a while
    r.cubin.assign(1 << 20, fill);
    r.log = std::string(1, fill);
    return r;
  };
  std::atomic<bool> stop{false};
  std::atomic<int> hits{0}, wrong{0};
  std::vector<std::thread> threads;
  for (char fill : {'a', 'b'})
    threads.emplace_back([&, fill] {
      KernelCache cache(options());
      NvrtcResult r = resultOf(fill);
      for (int i = 0; i < 20; ++i)
        cache.store(key, r);
    });
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      KernelCache cache(options());
      for (int seen = 0; !stop || seen == 0;) {
        NvrtcResult r;
        if (!cache.lookup(key, r))
          continue;
        ++seen;
        ++hits;
        char fill = r.log.empty() ? '?' : r.log[0];
        if (r.ptx != std::string(4 << 20, fill) || r.cubin.size() != (1u << 20))
          ++wrong;
      }
    });
  threads[0].join();
  threads[1].join();
  stop = true;
  threads[2].join();
  threads[3].join();
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

} // namespace
