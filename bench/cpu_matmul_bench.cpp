//===- cpu_matmul_bench.cpp - BF16 against FP32 on this CPU ---------------===//
//
// What decides whether the CPU backend runs BF16 and FP8 GEMMs on oneDNN's
// BF16 kernels or widens them to FP32 (dnnl::bf16Native, CpuDnnl.cpp):
//  1. the throughput of VDPBF16PS (32 products) and VFMADD231PS (16) on zmm
//     registers, 12 independent chains each;
//  2. every oneDNN matmul implementation but the reference one for an
//     M x K x N product (default 128 x 768 x 2304, GPT-2's QKV projection
//     of 128 tokens), FP32 and BF16 operands, FP32 result, the weight in the
//     layout the primitive picks; best of 20 runs.
// Usage: OMP_NUM_THREADS=1 build/bench/cpu_matmul_bench [M K N]
//
//===----------------------------------------------------------------------===//
#include <oneapi/dnnl/dnnl.h>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace {

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

__attribute__((target("avx512f,avx512bf16"))) double perSecond(bool bf16) {
  __m512 acc[12];
  for (__m512 &a : acc)
    a = _mm512_setzero_ps();
  const __m512 x = _mm512_set1_ps(1e-3f);
  const __m512bh xb = (__m512bh)_mm512_set1_epi16(0x3a83);
  constexpr long kIters = 10000000;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < kIters; ++i) {
    if (bf16) {
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j)
        acc[j] = _mm512_dpbf16_ps(acc[j], xb, xb);
    } else {
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j)
        acc[j] = _mm512_fmadd_ps(x, x, acc[j]);
    }
  }
  const double s = seconds(start);
  alignas(64) float lanes[16];
  volatile float sink = 0.0f;
  for (__m512 &a : acc) {
    _mm512_store_ps(lanes, a);
    sink = sink + lanes[0];
  }
  return kIters * 12.0 / s;
}

void matmuls(int64_t m, int64_t k, int64_t n) {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  dnnl_engine_create(&engine, dnnl_cpu, 0);
  dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  for (dnnl_data_type_t type : {dnnl_f32, dnnl_bf16}) {
    dnnl_memory_desc_t src, weights, dst;
    const dnnl_dims_t srcDims = {m, k}, weightDims = {k, n}, dstDims = {m, n};
    dnnl_memory_desc_init_by_tag(&src, 2, srcDims, type, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&weights, 2, weightDims, type, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst, 2, dstDims, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t desc;
    dnnl_matmul_desc_init(&desc, &src, &weights, nullptr, &dst);
    dnnl_primitive_desc_iterator_t it;
    if (dnnl_primitive_desc_iterator_create(&it, &desc, nullptr, engine, nullptr) !=
        dnnl_success) {
      std::printf("%s: no matmul\n", type == dnnl_f32 ? "f32" : "bf16");
      continue;
    }
    do {
      dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
      const char *name = "?";
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
      if (std::strncmp(name, "ref", 3) != 0) {
        const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        dnnl_primitive_t p;
        dnnl_primitive_create(&p, pd);
        dnnl_memory_t ms, mw, md;
        dnnl_memory_create(&ms, &src, engine, DNNL_MEMORY_ALLOCATE);
        dnnl_memory_create(&mw, w, engine, DNNL_MEMORY_ALLOCATE);
        dnnl_memory_create(&md, &dst, engine, DNNL_MEMORY_ALLOCATE);
        using Pair = std::pair<dnnl_memory_t, const dnnl_memory_desc_t *>;
        for (auto [mem, md_] : {Pair{ms, &src}, Pair{mw, w}}) {
          void *h = nullptr;
          dnnl_memory_get_data_handle(mem, &h);
          std::memset(h, 0, dnnl_memory_desc_get_size(md_));
        }
        const dnnl_exec_arg_t args[] = {
            {DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
        double best = 1e30;
        for (int r = 0; r < 20; ++r) {
          const auto start = std::chrono::steady_clock::now();
          dnnl_primitive_execute(p, stream, 3, args);
          dnnl_stream_wait(stream);
          if (r >= 3)
            best = std::min(best, seconds(start));
        }
        std::printf("%-5s %-24s %8.3f ms %7.1f GFLOPS\n", type == dnnl_f32 ? "f32" : "bf16",
                    name, best * 1e3, 2.0 * m * n * k / best / 1e9);
        dnnl_primitive_destroy(p);
        for (dnnl_memory_t mem : {ms, mw, md})
          dnnl_memory_destroy(mem);
      }
      dnnl_primitive_desc_destroy(pd);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
  }
  dnnl_stream_destroy(stream);
  dnnl_engine_destroy(engine);
}

} // namespace

int main(int argc, char **argv) {
  const int64_t m = argc > 3 ? std::atoll(argv[1]) : 128, k = argc > 3 ? std::atoll(argv[2]) : 768,
                n = argc > 3 ? std::atoll(argv[3]) : 2304;
  if (__builtin_cpu_supports("avx512bf16")) {
    const double fma = perSecond(false), bf16 = perSecond(true);
    std::printf("VFMADD231PS zmm %.2f G/s (%.1f GFLOPS), VDPBF16PS zmm %.2f G/s (%.1f GFLOPS): "
                "BF16 dot products at %.2fx the FMA's flops\n",
                fma / 1e9, fma * 32 / 1e9, bf16 / 1e9, bf16 * 64 / 1e9, bf16 * 2 / fma);
  } else {
    std::printf("no AVX512-BF16 on this CPU\n");
  }
  std::printf("oneDNN matmul %lld x %lld x %lld, one run at a time:\n", (long long)m,
              (long long)k, (long long)n);
  matmuls(m, k, n);
  return 0;
}
