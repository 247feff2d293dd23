//===- CollectiveMpiTest.cpp - the MPI collective, 2 ranks under mpirun ---===//
//
// Run by tests/unit/train/run_mpi_test.sh as `mpirun -np 2` (ctest
// collective_mpi, collective_mpi_kill, collective_mpi_hang). Every rank checks every result and
// prints "rank R: FAIL: ..." for each wrong one; the failure counts are
// summed over the ranks at the end, so every rank exits 1 when any failed.
//
//   collective_mpi_tests          every operation and dtype on values whose
//                                 result is known exactly; a timeout (rank 1
//                                 joins an all-reduce late: rank 0 fails
//                                 naming itself and the operation, then both
//                                 end cleanly)
//   collective_mpi_tests kill     barriers until rank 1 SIGKILLs itself; the
//                                 wrapper checks how the job ends
//   collective_mpi_tests hang     the same with SIGSTOP: rank 0's barrier
//                                 times out (5 s) and it aborts the job
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "tests/unit/FloatBits.h"
#include "train/Collective.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace mixprec::trainer;
namespace numerics = mixprec::numerics;

namespace {

int rank = -1;
int failures = 0;

/// Counts and prints a failed check.
void check(bool ok, const std::string &what) {
  if (ok)
    return;
  ++failures;
  std::printf("rank %d: FAIL: %s\n", rank, what.c_str());
  std::fflush(stdout);
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Checks that `error` is empty.
void ok(const std::string &error, const std::string &what) {
  check(error.empty(), what + ": " + error);
}

using mixprec::test::bitsOf;
using mixprec::test::floatOf;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void testF32(Collective &c) {
  // Sums of small integers: exact.
  const size_t n = 1000;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float((i + 1) * (rank + 1));
  ok(c.allReduce(v.data(), n, MIXPREC_DTYPE_F32, Reduce::Sum), "f32 sum");
  for (size_t i = 0; i < n; ++i)
    check(v[i] == float((i + 1) * 3), "f32 sum element " + std::to_string(i));

  // Mean: the sum divided by 2 in FP32.
  std::vector<float> mean = {float(rank + 1), rank == 0 ? 1.f : 0x1p-149f, -3.f};
  ok(c.allReduce(mean.data(), 3, MIXPREC_DTYPE_F32, Reduce::Mean), "f32 mean");
  check(mean[0] == 1.5f && mean[1] == (1.f + 0x1p-149f) / 2 && mean[2] == -3.f, "f32 mean values");

  // Max with negatives, and +0 over -0 on every rank.
  float a[] = {-5.f, 3.f, -0.f, -1e30f, 7.f};
  float b[] = {-7.f, -1.f, 0.f, -1e31f, 7.f};
  float expected[] = {-5.f, 3.f, 0.f, -1e30f, 7.f};
  std::vector<float> m(rank == 0 ? a : b, (rank == 0 ? a : b) + 5);
  ok(c.allReduce(m.data(), 5, MIXPREC_DTYPE_F32, Reduce::Max), "f32 max");
  for (int i = 0; i < 5; ++i)
    check(bitsOf(m[i]) == bitsOf(expected[i]),
          "f32 max element " + std::to_string(i) + ": " + std::to_string(m[i]));

  // NaNs of different payloads: the same bits (the canonical NaN) on both.
  float nan[] = {floatOf(rank == 0 ? 0x7fc00001u : 0xffc00002u), 1.f};
  ok(c.allReduce(nan, 2, MIXPREC_DTYPE_F32, Reduce::Sum), "f32 sum of NaNs");
  check(bitsOf(nan[0]) == 0x7fc00000u, "f32 NaN sum is the canonical NaN");
  check(nan[1] == 2.f, "f32 sum beside a NaN");
  float nanMax[] = {rank == 0 ? floatOf(0x7fc00001u) : 1.f};
  ok(c.allReduce(nanMax, 1, MIXPREC_DTYPE_F32, Reduce::Max), "f32 max with a NaN");
  check(bitsOf(nanMax[0]) == 0x7fc00000u, "f32 max with a NaN is NaN on every rank");

  // Big enough for MPI to segment and pipeline it.
  const size_t big = size_t(1) << 21;
  std::vector<float> g(big);
  for (size_t i = 0; i < big; ++i)
    g[i] = float(i % 1000) * (rank == 0 ? 1.f : -2.f);
  ok(c.allReduce(g.data(), big, MIXPREC_DTYPE_F32, Reduce::Sum), "f32 sum of 2M elements");
  size_t wrong = 0;
  for (size_t i = 0; i < big; ++i)
    wrong += g[i] != -float(i % 1000);
  check(wrong == 0, "f32 sum of 2M elements: " + std::to_string(wrong) + " wrong");
}

/// F16 or BF16: small integers exactly, sums that need rounding as the
/// numerics round them, max with negatives.
void testHalf(Collective &c, numerics::Format format, mixprec_dtype_t dtype, const char *name) {
  auto encode = [&](float x) { return uint16_t(numerics::encode(format, x)); };
  auto decode = [&](uint16_t b) { return numerics::decode(format, b); };
  const int n = 64; // 3 * 63 fits BF16's 8 significant bits
  std::vector<uint16_t> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = encode(float(i * (rank + 1)));
  ok(c.allReduce(v.data(), n, dtype, Reduce::Sum), std::string(name) + " sum");
  for (int i = 0; i < n; ++i)
    check(decode(v[i]) == float(3 * i), std::string(name) + " sum element " + std::to_string(i));

  // Pairs whose exact sum lies between two values of the format, ties
  // included: the result is the numerics' round to nearest even of the FP32
  // sum, never the truncated one.
  const float ulpAt1 = format == numerics::Format::BF16 ? 0x1p-7f : 0x1p-10f;
  std::vector<float> x = {1.f, 1.f + ulpAt1, 1.f, 3.f, 1000.f, -2.5f, 65504.f};
  std::vector<float> y = {ulpAt1 / 2, ulpAt1 / 2, ulpAt1 * 0.75f, ulpAt1 * 3.5f,
                          0.3f,       1.3f,       65504.f};
  std::vector<uint16_t> r(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    r[i] = encode(rank == 0 ? x[i] : y[i]);
  ok(c.allReduce(r.data(), r.size(), dtype, Reduce::Sum), std::string(name) + " rounded sum");
  for (size_t i = 0; i < x.size(); ++i) {
    float sum = decode(encode(x[i])) + decode(encode(y[i]));
    uint16_t expected = encode(sum);
    char text[96];
    std::snprintf(text, sizeof text, " rounded sum %zu: got 0x%04x, expected 0x%04x", i, r[i],
                  expected);
    check(r[i] == expected, name + std::string(text));
  }
  // The ties, by hand: 1 + half an ulp stays 1 (even), (1 + ulp) + half an
  // ulp goes up to 1 + 2 ulp (even).
  check(decode(r[0]) == 1.f, std::string(name) + ": 1 + ulp/2 rounds to 1");
  check(decode(r[1]) == 1.f + 2 * ulpAt1, std::string(name) + ": 1 + 1.5 ulp rounds to 1 + 2 ulp");
  check(decode(r[2]) == 1.f + ulpAt1, std::string(name) + ": 1 + 0.75 ulp rounds up");

  // Mean: summed in FP32, divided, rounded once. F16's 60000 + 60000
  // overflows F16 (a per-pair rounding would give inf), not FP32.
  std::vector<float> mx = {1.f, 1.f + ulpAt1, 60000.f, -7.f, 0.3f};
  std::vector<float> my = {ulpAt1 / 2, ulpAt1, 60000.f, 2.f, 0.1f};
  std::vector<uint16_t> mean(mx.size());
  for (size_t i = 0; i < mx.size(); ++i)
    mean[i] = encode(rank == 0 ? mx[i] : my[i]);
  ok(c.allReduce(mean.data(), mean.size(), dtype, Reduce::Mean), std::string(name) + " mean");
  for (size_t i = 0; i < mx.size(); ++i) {
    uint16_t expected = encode((decode(encode(mx[i])) + decode(encode(my[i]))) / 2.f);
    char text[96];
    std::snprintf(text, sizeof text, " mean %zu: got 0x%04x, expected 0x%04x", i, mean[i],
                  expected);
    check(mean[i] == expected, name + std::string(text));
  }
  check(mean[2] == encode(60000.f), std::string(name) + ": the mean of 60000 and 60000 is 60000");

  std::vector<float> p = {-3.f, 2.f, -0.f, -100.f};
  std::vector<float> q = {-4.f, -2.f, 0.f, -99.f};
  std::vector<uint16_t> m(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    m[i] = encode(rank == 0 ? p[i] : q[i]);
  ok(c.allReduce(m.data(), m.size(), dtype, Reduce::Max), std::string(name) + " max");
  float expected[] = {-3.f, 2.f, 0.f, -99.f};
  for (size_t i = 0; i < p.size(); ++i)
    check(m[i] == encode(expected[i]), std::string(name) + " max element " + std::to_string(i));

  // Many elements (the user-defined operation runs on MPI's segments).
  const size_t big = size_t(1) << 20;
  std::vector<uint16_t> g(big);
  for (size_t i = 0; i < big; ++i)
    g[i] = encode(float(i % 32) * (rank == 0 ? 1.f : 2.f));
  ok(c.allReduce(g.data(), big, dtype, Reduce::Sum), std::string(name) + " sum of 1M elements");
  size_t wrong = 0;
  for (size_t i = 0; i < big; ++i)
    wrong += decode(g[i]) != float(3 * (i % 32));
  check(wrong == 0, std::string(name) + " sum of 1M elements: " + std::to_string(wrong) + " wrong");
}

void testIntegers(Collective &c) {
  int32_t a[] = {rank == 0 ? -5 : 7, rank == 0 ? INT32_MIN / 2 : INT32_MIN / 2 + 1, 1000000};
  ok(c.allReduce(a, 3, MIXPREC_DTYPE_I32, Reduce::Sum), "i32 sum");
  check(a[0] == 2 && a[1] == INT32_MIN + 1 && a[2] == 2000000, "i32 sum values");
  int32_t b[] = {rank == 0 ? -5 : -7, rank == 0 ? 3 : -3};
  ok(c.allReduce(b, 2, MIXPREC_DTYPE_I32, Reduce::Max), "i32 max");
  check(b[0] == -5 && b[1] == 3, "i32 max values");

  // Beyond 2^53: a double (or a float path) would lose the low bits.
  const int64_t two53 = int64_t(1) << 53, two60 = int64_t(1) << 60;
  int64_t s[] = {rank == 0 ? two53 + 1 : two60 + 3, rank == 0 ? -two60 - 1 : 5};
  ok(c.allReduce(s, 2, MIXPREC_DTYPE_I64, Reduce::Sum), "i64 sum");
  check(s[0] == two53 + two60 + 4, "i64 sum beyond 2^53: " + std::to_string(s[0]));
  check(s[1] == -two60 + 4, "i64 sum with a negative: " + std::to_string(s[1]));
  int32_t im[] = {rank == 0 ? -3 : -4, rank == 0 ? 7 : 8};
  ok(c.allReduce(im, 2, MIXPREC_DTYPE_I32, Reduce::Mean), "i32 mean");
  check(im[0] == -3 && im[1] == 7, "i32 mean truncates toward zero");
  int64_t lm[] = {rank == 0 ? two60 + 3 : two60 + 6};
  ok(c.allReduce(lm, 1, MIXPREC_DTYPE_I64, Reduce::Mean), "i64 mean");
  check(lm[0] == two60 + 4, "i64 mean: " + std::to_string(lm[0]));
  int64_t m[] = {rank == 0 ? -two60 : -two60 - 1, rank == 0 ? two53 + 1 : two53};
  ok(c.allReduce(m, 2, MIXPREC_DTYPE_I64, Reduce::Max), "i64 max");
  check(m[0] == -two60 && m[1] == two53 + 1, "i64 max values");
}

void testBroadcastGatherBarrier(Collective &c) {
  std::vector<unsigned char> data(1000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = rank == 1 ? (unsigned char)(i * 7 + 3) : 0;
  ok(c.broadcast(data.data(), data.size(), 1), "broadcast from rank 1");
  size_t wrong = 0;
  for (size_t i = 0; i < data.size(); ++i)
    wrong += data[i] != (unsigned char)(i * 7 + 3);
  check(wrong == 0, "broadcast from rank 1: " + std::to_string(wrong) + " bytes wrong");

  // All-gather: rank order, from a separate buffer and in place.
  char mine[16];
  std::memset(mine, 'a' + rank, sizeof mine);
  char out[32] = {0};
  ok(c.allGather(mine, out, sizeof mine), "all_gather");
  check(std::string(out, 32) == std::string(16, 'a') + std::string(16, 'b'), "all_gather order");
  char inPlace[32] = {0};
  std::memset(inPlace + 16 * rank, 'x' + rank, 16);
  ok(c.allGather(inPlace + 16 * rank, inPlace, 16), "all_gather in place");
  check(std::string(inPlace, 32) == std::string(16, 'x') + std::string(16, 'y'),
        "all_gather in place order");

  ok(c.barrier(), "barrier");
}

void testHookAndErrors(Collective &c) {
  mixprec_collective_t hook = c.hook();
  check(hook.struct_size == sizeof hook && hook.rank == rank && hook.world_size == 2 &&
            hook.device_buffers == 0 && hook.all_reduce,
        "hook's fields");
  float v[] = {float(rank + 1)};
  char error[256] = "untouched";
  check(hook.all_reduce(hook.context, v, 1, MIXPREC_DTYPE_F32, MIXPREC_REDUCE_SUM, nullptr, error,
                        sizeof error) == 0 &&
            v[0] == 3.f,
        "hook's all_reduce sums");
  // Errors found before anything is sent fail on every rank alike and
  // leave the collective usable.
  uint8_t f8[4] = {0};
  int status = hook.all_reduce(hook.context, f8, 4, MIXPREC_DTYPE_F8E4M3FN, MIXPREC_REDUCE_SUM,
                               nullptr, error, sizeof error);
  std::string prefix = "rank " + std::to_string(rank) + " of 2: ";
  check(status != 0 && contains(error, prefix + "all_reduce of 4 f8E4M3FN elements"),
        std::string("an unsupported dtype fails naming the rank: ") + error);
  std::string e = c.broadcast(v, 4, 5);
  check(contains(e, prefix + "broadcast of 4 bytes from rank 5: no such rank"),
        "broadcast from a rank that does not exist: " + e);
  ok(c.barrier(), "barrier after the errors");
}

/// Rank 1 joins rank 0's all-reduce only after rank 0 gave up: rank 0 fails
/// naming itself and the operation, refuses the next one, and both end
/// cleanly once rank 1 has joined.
void testTimeout(Collective &main) {
  std::string error;
  auto quick = openMpiCollective(2.0, error);
  check(quick != nullptr, "a second collective (timeout 2 s): " + error);
  if (!quick)
    return;
  static float late[3] = {1, 2, 3}; // MPI may write it after the failure
  ok(main.barrier(), "barrier before the timeout");
  if (rank == 0) {
    auto start = std::chrono::steady_clock::now();
    std::string e = quick->allReduce(late, 3, MIXPREC_DTYPE_F32, Reduce::Sum);
    double seconds = secondsSince(start);
    std::printf("rank 0: the all-reduce rank 1 skipped failed after %.2f s: %s\n", seconds,
                e.c_str());
    check(contains(e, "rank 0 of 2: all_reduce of 3 f32 elements: no reply from the other "
                      "ranks within 2 s"),
          "the timeout's message: " + e);
    check(seconds >= 1.9 && seconds < 10, "the timeout took " + std::to_string(seconds) + " s");
    std::string next = quick->barrier();
    check(contains(next, "rank 0 of 2: barrier: not started: an earlier all_reduce of 3 f32 "
                         "elements (no reply"),
          "the operation after a timeout is refused: " + next);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    // Rank 0 progresses this while it waits in the barrier below.
    ok(quick->allReduce(late, 3, MIXPREC_DTYPE_F32, Reduce::Sum), "rank 1's late all-reduce");
  }
  ok(main.barrier(), "barrier after the timeout");
  quick.reset(); // rank 0: the late all-reduce has completed, so MPI can finalise
}

/// Barriers until rank 1 kills (`signal` SIGKILL) or stops (SIGSTOP)
/// itself; rank 0 reports how its wait ended and aborts the job.
int stopRank1(Collective &c, int signal) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (rank == 1 && i == 3) {
      std::printf("rank 1: %s to myself at %.2f s\n", signal == SIGKILL ? "SIGKILL" : "SIGSTOP",
                  secondsSince(start));
      std::fflush(stdout);
      raise(signal);
    }
    std::string e = c.barrier();
    if (!e.empty()) {
      std::printf("rank %d: barrier %d failed after %.2f s: %s\n", rank, i, secondsSince(start),
                  e.c_str());
      std::fflush(stdout);
      c.abort(3);
      return 3;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  double timeout = mode == "kill" ? 20 : mode == "hang" ? 5 : 60;
  std::string error;
  auto c = openMpiCollective(timeout, error);
  if (!c) {
    std::printf("openMpiCollective: %s\n", error.c_str());
    return 1;
  }
  rank = c->rank();
  LaunchInfo launch = launchInfo();
  check(c->worldSize() == 2, "world size " + std::to_string(c->worldSize()));
  check(launch.launcher == "openmpi" && launch.rank == rank && launch.worldSize == 2,
        "launchInfo: " + launch.launcher + " rank " + std::to_string(launch.rank) + " of " +
            std::to_string(launch.worldSize));
  check(c->name() == "mpi" && !c->deviceBuffers(), "name and buffers");
  if (mode == "kill" || mode == "hang")
    return stopRank1(*c, mode == "kill" ? SIGKILL : SIGSTOP);

  testF32(*c);
  testHalf(*c, numerics::Format::BF16, MIXPREC_DTYPE_BF16, "bf16");
  testHalf(*c, numerics::Format::F16, MIXPREC_DTYPE_F16, "f16");
  testIntegers(*c);
  testBroadcastGatherBarrier(*c);
  testHookAndErrors(*c);
  testTimeout(*c);

  // Every rank fails when one did.
  int32_t total = failures;
  std::string e = c->allReduce(&total, 1, MIXPREC_DTYPE_I32, Reduce::Sum);
  if (!e.empty()) {
    std::printf("rank %d: summing the failures: %s\n", rank, e.c_str());
    return 1;
  }
  std::printf("rank %d: %d failure(s) here, %d on all ranks\n", rank, failures, total);
  c.reset();
  // A second start of MPI in one process is refused clearly.
  auto again = openMpiCollective(1, error);
  if (again || !contains(error, "already finalised")) {
    std::printf("rank %d: FAIL: reopening after finalise: %s\n", rank, error.c_str());
    return 1;
  }
  return total == 0 ? 0 : 1;
}
