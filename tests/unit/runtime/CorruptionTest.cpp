//===- CorruptionTest.cpp - seeded random corruption of real modules ------===//
//
// Takes serialized modules (the MLP and the convolutional plan, sealed and
// unsealed: an unsealed module lets a corruption get past the content hash
// into the verifier, the backend and the kernels) and applies random byte
// flips, overwrites with boundary values, truncations, insertions and
// deletions. Every result must come back as a status; corruptions that
// still load must run (or fail) cleanly. scripts/test.sh also runs this in
// the AddressSanitizer and UBSan build (build-asan), where any out-of-bounds
// access or undefined behaviour aborts the test.
//
// MIXPREC_CORRUPTION_ITERATIONS overrides the iteration count.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/ExerciseModule.h"
#include "tests/unit/runtime/TestModules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

namespace mixprec::testing {
namespace {

/// One random corruption of `bytes`.
std::vector<uint8_t> corrupt(const std::vector<uint8_t> &bytes, std::mt19937_64 &rng) {
  std::vector<uint8_t> out = bytes;
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  switch (rng() % 6) {
  case 0: { // flip 1-8 random bytes
    for (int i = 0, count = 1 + static_cast<int>(rng() % 8); i < count && !out.empty(); ++i)
      out[pick(out.size())] ^= static_cast<uint8_t>(1 + rng() % 255);
    break;
  }
  case 1: { // overwrite an aligned word with a boundary value
    static const uint64_t kValues[] = {0,          1,          0xff,       0x7f,
                                       0x80,       0xffff,     0x7fffffff, 0x80000000,
                                       0xffffffff, ~0ull,      1ull << 40, 0x7fffffffffffffffull,
                                       256,        255,        64,         8};
    const size_t width = (rng() % 2) ? 4 : 8;
    if (out.size() >= width) {
      size_t at = pick(out.size() - width + 1) / width * width;
      uint64_t v = kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
      std::memcpy(out.data() + at, &v, width);
    }
    break;
  }
  case 2: // truncate
    out.resize(pick(out.size()));
    break;
  case 3: { // insert 1-16 random bytes
    size_t at = pick(out.size() + 1);
    std::vector<uint8_t> extra(1 + rng() % 16);
    for (uint8_t &b : extra)
      b = static_cast<uint8_t>(rng());
    out.insert(out.begin() + at, extra.begin(), extra.end());
    break;
  }
  case 4: { // delete a range
    size_t at = pick(out.size());
    size_t count = std::min(out.size() - at, 1 + pick(32));
    out.erase(out.begin() + at, out.begin() + at + count);
    break;
  }
  default: { // duplicate a range over another place
    size_t from = pick(out.size()), to = pick(out.size());
    size_t count = std::min({out.size() - from, out.size() - to, 1 + pick(64)});
    std::memmove(out.data() + to, bytes.data() + from, count);
    break;
  }
  }
  return out;
}

TEST(Corruption, RandomMutationsNeverCrash) {
  int iterations = 50000;
  if (const char *env = std::getenv("MIXPREC_CORRUPTION_ITERATIONS"))
    iterations = std::atoi(env);

  std::vector<std::vector<uint8_t>> seeds;
  for (bool seal : {false, true}) {
    ModuleBuilder mlp = mlpBuilder(false), conv = convBuilder();
    mlp.seal = conv.seal = seal;
    seeds.push_back(mlp.build().module);
    seeds.push_back(conv.build().module);
  }
  // The seeds themselves load and run.
  for (const auto &seed : seeds) {
    fuzz::Outcome o = fuzz::exerciseModule(seed.data(), seed.size());
    ASSERT_TRUE(o.ran) << "seed module fails with " << mixprec_status_code_name(o.code);
  }

  std::mt19937_64 rng(20261130);
  std::map<mixprec_status_code_t, int> codes;
  int loaded = 0, ran = 0;
  for (int i = 0; i < iterations; ++i) {
    // Three in four from the unsealed seeds: they reach the deeper checks.
    const size_t which = (rng() % 4 == 0 ? 2 : 0) + rng() % 2;
    const std::vector<uint8_t> mutated = corrupt(seeds[which], rng);
    fuzz::Outcome o = fuzz::exerciseModule(mutated.data(), mutated.size());
    ++codes[o.code];
    loaded += o.loaded;
    ran += o.ran;
  }
  std::printf("corruption: %d modules, %d loaded, %d ran; outcomes:", iterations, loaded, ran);
  for (const auto &[code, count] : codes)
    std::printf(" %s=%d", mixprec_status_code_name(code), count);
  std::printf("\n");
  // Most corruptions must be caught at load time.
  EXPECT_GT(codes[MIXPREC_INVALID_MODULE], iterations / 2);
}

} // namespace
} // namespace mixprec::testing
