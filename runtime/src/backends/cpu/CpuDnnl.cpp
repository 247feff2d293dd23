//===- CpuDnnl.cpp - GEMM steps on oneDNN's matmul ------------------------===//
//
// CpuDnnl.h says what runs here and how it rounds. oneDNN's C API (no
// exceptions: the runtime builds without them); one engine and stream per
// session, one matmul primitive per GEMM step, created when the session is.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuDnnl.h"
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/src/ThreadPool.h"
#include "runtime/src/backends/cpu/CpuDnnlCommon.h"

#include "common/numerics/Rounding.h"
#include "runtime/kernels/PackedGemm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace mixprec::runtime {

#if MIXPREC_HAVE_DNNL

namespace {

using dnnl::exactType;
using dnnl::isFp8;
using dnnl::statusText;
using dnnl::typeOf;
using dnnl::widen;

/// A tile of a GEMM step run as its own single-threaded matmul (Plan::
/// tiles): the primitive of its shape, its memory objects and its
/// operands' offsets (elements) from A's, B's and the output's bases.
struct Tile {
  int shape = 0;
  int64_t a = 0, b = 0, out = 0;
  dnnl_memory_t src = nullptr, weights = nullptr, dst = nullptr;
};

/// The tile sizes of a tiled GEMM: a function of the problem's shape alone
/// (never of the thread count), so every output element is summed by the
/// same single-threaded call, in the same order, for any thread count.
constexpr int64_t kTileRows = 256, kTileCols = 384;
/// The rows of a tile whose weight is packed at load (Impl::planTiles).
constexpr int64_t kPackedTileRows = 64;
/// The least multiply-adds of an own GEMM tile split for the threads
/// (Impl::planOwn): about 3 us at one core's 90 GFLOP/s, beside 1-2 us
/// per parallel loop (OpenMP, 2 threads, an EPYC VM).
constexpr int64_t kOwnTileMacs = int64_t(1) << 17;

/// One GEMM step's primitive, its memory objects (their data handles set
/// per run) and, for a constant weight, its packed copy.
struct Plan {
  bool ok = false;
  std::string reason;
  dnnl_primitive_t matmul = nullptr;
  dnnl_memory_desc_t src{}, weights{}, dst{};
  dnnl_memory_t srcMemory = nullptr, weightsMemory = nullptr, dstMemory = nullptr;
  /// The weight in the primitive's layout (a constant), else empty.
  void *packed = nullptr;
  /// The operands' dtypes, and the dtype the primitive takes: theirs, or
  /// the one they are widened to exactly first (dnnl::exactType: FP8 to
  /// BF16, or BF16 and FP8 to FP32 where BF16 kernels do not pay; FP16 to
  /// FP32 where the CPU has no FP16 matmul).
  schema::DType aType = schema::DType::F32, bType = schema::DType::F32;
  schema::DType computeType = schema::DType::F32;
  /// Bytes of the operands widened per run (the weight's widened copy is
  /// packed): 0 for an operand taken as it is. They are widened into the
  /// buffers all plans share (runs are one at a time), which the previous
  /// GEMM's widening left in the cache.
  size_t wideBytesA = 0, wideBytesB = 0;
  int64_t elementsA = 0, elementsB = 0;
  /// Tiled (oneDNN's GEMM-based matmul, "gemm:jit": its threading splits
  /// k when m and n are small, and the partial sums' order then follows
  /// the thread count: other bits at 2 threads than at 1, seen on AVX2):
  /// the output in tiles of at most kTileRows (kPackedTileRows with a
  /// packed weight) x kTileCols per batch entry, each a one-thread matmul of
  /// its own (over all of k), spread over the session's threads. matmul is
  /// null then; shapes[w][s] is worker w's primitive for tile shape s (each
  /// primitive runs on one worker only).
  bool tiled = false;
  std::vector<std::vector<dnnl_primitive_t>> shapes;
  std::vector<Tile> tiles;
  /// Tiled, on the own packed GEMM (cpu::packedGemm, PackedGemm.h) instead
  /// of oneDNN's: an FP32 constant weight packed in its panels (`packed`)
  /// on AVX2 (what makes oneDNN's matmul gemm:jit), unless
  /// MIXPREC_CPU_OWN_GEMM=0; a BF16, FP8 or FP16 constant weight widened to
  /// FP32 likewise, its panels in BF16 (FP8's values are BF16 values) or
  /// FP16 (`ownFormat`; MIXPREC_CPU_NARROW_PANELS=0: FP32 panels): half the
  /// bytes, the same bits. The tiles are the rows [r0, r1) x columns [c0,
  /// c1) of each `own` entry (no primitives, no memory objects).
  bool own = false;
  cpu::PackedFormat ownFormat = cpu::PackedFormat::F32;
  /// Bytes of `packed`.
  size_t packedBytes = 0;
  struct OwnTile {
    int64_t r0, r1, c0, c1;
  };
  std::vector<OwnTile> ownTiles;
  int64_t k = 0, n = 0;
};

/// dnnl::bf16Native's rule, from what the CPU is (never from a timing: two
/// processes of one job must take the same kernels, or their sums' order
/// and so their bits differ): BF16 kernels where oneDNN finds AMX, and
/// with AVX512-BF16 alone on AMD's CPUs (Zen 4 and later: VDPBF16PS at the
/// FMA's instruction rate, twice its flops; measured on an EPYC), not on
/// Intel's (a Xeon with AVX512-FP16 and no AMX enabled ran it at a quarter
/// of the FMA's rate, half its flops: build/bench/cpu_matmul_bench).
bool bf16PaysHere() {
  if ((dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx)
    return true;
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_is("amd");
#else
  return false;
#endif
}

} // namespace

bool dnnl::bf16Native() {
  if (const char *how = std::getenv("MIXPREC_CPU_BF16")) { // read each time: tests set it
    if (!std::strcmp(how, "native"))
      return true;
    if (!std::strcmp(how, "fp32"))
      return false;
  }
  static const bool native = bf16PaysHere();
  return native;
}

struct DnnlGemms::Impl {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  std::vector<Plan> plans;
  /// Where operands are widened per run (Plan::wideBytesA/B), shared.
  std::vector<uint8_t> wideA, wideB;
  int64_t packsAtLoad = 0;
  /// The session's threads (tiled plans run on them), and a stream each.
  ThreadPool *pool = nullptr;
  std::vector<dnnl_stream_t> workerStreams;

  ~Impl() {
    for (Plan &p : plans) {
      if (p.matmul)
        dnnl_primitive_destroy(p.matmul);
      for (dnnl_memory_t m : {p.srcMemory, p.weightsMemory, p.dstMemory})
        if (m)
          dnnl_memory_destroy(m);
      for (auto &worker : p.shapes)
        for (dnnl_primitive_t prim : worker)
          if (prim)
            dnnl_primitive_destroy(prim);
      for (Tile &t : p.tiles)
        for (dnnl_memory_t m : {t.src, t.weights, t.dst})
          if (m)
            dnnl_memory_destroy(m);
      std::free(p.packed);
    }
    for (dnnl_stream_t st : workerStreams)
      if (st)
        dnnl_stream_destroy(st);
    if (stream)
      dnnl_stream_destroy(stream);
    if (engine)
      dnnl_engine_destroy(engine);
  }

  /// Runs `primitive` with `args` (memory objects over the given handles)
  /// and waits for it: the packing at load.
  dnnl_status_t
  execute(dnnl_primitive_t primitive,
          const std::vector<std::pair<int, std::pair<const dnnl_memory_desc_t *, void *>>> &args) {
    std::vector<dnnl_memory_t> memories;
    std::vector<dnnl_exec_arg_t> exec;
    dnnl_status_t s = dnnl_success;
    for (const auto &[arg, mem] : args) {
      dnnl_memory_t m = nullptr;
      if ((s = dnnl_memory_create(&m, mem.first, engine, mem.second)) != dnnl_success)
        break;
      memories.push_back(m);
      exec.push_back({arg, m});
    }
    if (s == dnnl_success)
      s = dnnl_primitive_execute(primitive, stream, int(exec.size()), exec.data());
    if (s == dnnl_success)
      s = dnnl_stream_wait(stream);
    for (dnnl_memory_t m : memories)
      dnnl_memory_destroy(m);
    return s;
  }

  /// Plans step `g`; false (with p.reason) when oneDNN does not take it.
  bool plan(const LoadedModule &module, const GemmDesc &g,
            const std::function<const uint8_t *(int32_t)> &constant, Plan &p,
            bool widenF16 = false) {
    const TensorDesc &a = module.tensors()[g.a], &b = module.tensors()[g.b];
    if (g.tf32)
      return p.reason = "TF32-rounded operands", false;
    const bool fp8 = isFp8(a.dtype);
    if (a.dtype != b.dtype && !(fp8 && isFp8(b.dtype)))
      return p.reason = "operands of two dtypes", false;
    p.aType = a.dtype;
    p.bType = b.dtype;
    // FP8 (E4M3 and E5M2 may meet) through BF16, which holds every value
    // (or FP32, where BF16 kernels do not pay).
    p.computeType = exactType(a.dtype, widenF16);
    const dnnl_data_type_t type = typeOf(p.computeType);
    if (type == dnnl_data_type_undef)
      return p.reason = std::string("operands of dtype ") + dtypeName(a.dtype), false;
    const bool tall = g.batch == 1 || (g.strideB == 0 && g.strideA == g.m * g.k);
    const bool batched =
        !tall && g.strideA == g.m * g.k && g.strideB == g.k * g.n && g.strideOut == g.m * g.n;
    if (!tall && !batched)
      return p.reason = "strided batches", false;
    const int64_t m = g.m, n = g.n, k = g.k;
    if (tall) {
      const dnnl_dims_t srcDims = {g.batch * m, k}, srcStrides = {k, 1};
      const dnnl_dims_t weiDims = {k, n};
      const dnnl_dims_t weiStrides = {g.transB ? 1 : n, g.transB ? k : 1};
      const dnnl_dims_t dstDims = {g.batch * m, n}, dstStrides = {n, 1};
      dnnl_memory_desc_init_by_strides(&p.src, 2, srcDims, type, srcStrides);
      dnnl_memory_desc_init_by_strides(&p.weights, 2, weiDims, type, weiStrides);
      dnnl_memory_desc_init_by_strides(&p.dst, 2, dstDims, dnnl_f32, dstStrides);
    } else {
      const dnnl_dims_t srcDims = {g.batch, m, k}, srcStrides = {m * k, k, 1};
      const dnnl_dims_t weiDims = {g.batch, k, n};
      const dnnl_dims_t weiStrides = {k * n, g.transB ? 1 : n, g.transB ? k : 1};
      const dnnl_dims_t dstDims = {g.batch, m, n}, dstStrides = {m * n, n, 1};
      dnnl_memory_desc_init_by_strides(&p.src, 3, srcDims, type, srcStrides);
      dnnl_memory_desc_init_by_strides(&p.weights, 3, weiDims, type, weiStrides);
      dnnl_memory_desc_init_by_strides(&p.dst, 3, dstDims, dnnl_f32, dstStrides);
    }
    // A constant weight: the primitive picks its layout, packed once here.
    const bool packWeight = b.isConstant() && tall;
    dnnl_memory_desc_t weightsAny = p.weights;
    if (packWeight) {
      const dnnl_dims_t weiDims = {k, n};
      dnnl_memory_desc_init_by_tag(&weightsAny, 2, weiDims, type, dnnl_format_tag_any);
    }
    dnnl_matmul_desc_t desc;
    dnnl_status_t s = dnnl_matmul_desc_init(&desc, &p.src, &weightsAny, nullptr, &p.dst);
    dnnl_primitive_desc_t pd = nullptr;
    if (s == dnnl_success)
      s = dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr);
    if (s == dnnl_unimplemented && p.computeType == schema::DType::F16) {
      // No FP16 matmul on this CPU (it needs AVX512-FP16): FP16 widened to
      // FP32, exactly (its products are exact in FP32 as well).
      return plan(module, g, constant, p, /*widenF16=*/true);
    }
    if (s != dnnl_success)
      return p.reason = "oneDNN's matmul: " + statusText(s), false;
    dnnl_memory_desc_t chosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const char *info = nullptr;
    p.tiled = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success &&
              info && std::strncmp(info, "gemm:", 5) == 0 &&
              (!packWeight || plainStrides(chosen, nullptr));
    if (!p.tiled)
      s = dnnl_primitive_create(&p.matmul, pd);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success)
      return p.reason = "oneDNN's matmul: " + statusText(s), false;
    p.elementsA = a.elements;
    p.elementsB = b.elements;
    const size_t wideBytes = p.computeType == schema::DType::F32 ? 4 : 2;
    const bool widened = p.computeType != a.dtype;
    if (widened)
      p.wideBytesA = static_cast<size_t>(a.elements) * wideBytes;
    const uint8_t *packFrom = nullptr; // the constant weight, in the compute dtype
    std::vector<uint8_t> wide;
    if (packWeight) {
      packFrom = constant(g.b);
      if (b.dtype != p.computeType) { // widened once, here, then packed
        wide.resize(static_cast<size_t>(b.elements) * wideBytes);
        widen(b.dtype, p.computeType, packFrom, b.elements, wide.data());
        packFrom = wide.data();
      }
      if (!p.tiled) {
        if (!packConstant(p, chosen, packFrom))
          return false;
        p.weights = chosen;
      }
    } else if (b.dtype != p.computeType) {
      p.wideBytesB = static_cast<size_t>(b.elements) * wideBytes;
    }
    // A BF16, FP8 or FP16 weight widened to FP32 (the CPU's BF16 kernels do
    // not pay, or it has no FP16 ones) is packed for the own GEMM in half
    // the bytes (exact): where the GEMM reads its weight once (a few rows)
    // twice as fast as FP32 panels.
    const cpu::PackedFormat narrow = turnedOff("MIXPREC_CPU_NARROW_PANELS") ? cpu::PackedFormat::F32
                                     : b.dtype == schema::DType::BF16 || isFp8(b.dtype)
                                         ? cpu::PackedFormat::BF16
                                     : b.dtype == schema::DType::F16 ? cpu::PackedFormat::F16
                                                                     : cpu::PackedFormat::F32;
    if (p.tiled && packFrom && type == dnnl_f32 && cpu::packedGemmAvailable() &&
        !turnedOff("MIXPREC_CPU_OWN_GEMM"))
      return planOwn(g, p, packFrom, narrow);
    if (p.tiled) {
      if (!planTiles(g, type, p, packFrom)) {
        if (p.reason.empty())
          p.reason = "oneDNN's matmul: cannot plan its tiles";
        return false;
      }
      return p.ok = true;
    }
    // The memory objects, once; runs set their data handles.
    if (dnnl_memory_create(&p.srcMemory, &p.src, engine, DNNL_MEMORY_NONE) != dnnl_success ||
        dnnl_memory_create(&p.weightsMemory, &p.weights, engine, DNNL_MEMORY_NONE) !=
            dnnl_success ||
        dnnl_memory_create(&p.dstMemory, &p.dst, engine, DNNL_MEMORY_NONE) != dnnl_success)
      return p.reason = "cannot create its memory objects", false;
    return p.ok = true;
  }

  /// Whether `md` is a plain strided 2-D layout (no blocks), its strides
  /// into `strides` (if given).
  static bool plainStrides(const dnnl_memory_desc_t &md, dnnl_dim_t *strides) {
    if (md.ndims != 2 || md.format_kind != dnnl_blocked || md.format_desc.blocking.inner_nblks != 0)
      return false;
    if (strides)
      strides[0] = md.format_desc.blocking.strides[0],
      strides[1] = md.format_desc.blocking.strides[1];
    return true;
  }

  /// p's tiles (Plan::tiled): per batch entry (or the batch as rows, when
  /// tall), rows in tiles of kTileRows and columns of kTileCols, each tile
  /// shape's primitive made once per worker with OpenMP at one thread (the
  /// GEMM driver reads the count when it runs too: run() sets it there),
  /// each tile's memory objects over the full operands' strides. A constant
  /// weight (`packFrom`, p.weights' plain layout, tall only) is packed here,
  /// each column tile's k x c block contiguous, row by row (its rows
  /// packedLd(c) apart), and its tiles have kPackedTileRows rows. On an AVX2
  /// EPYC (gemm:jit, one thread, 384-column tiles) row by row took 6-27%
  /// less time than column by column with 8-64 rows (64 x 768 x 3072: 3.24
  /// ms vs 3.49; 32 x 2048 x 2048: 3.26 vs 4.01; but 8 x 4096 x 4096: 9.1
  /// vs 8.1) and 3-8% more with 80-256 rows (128 x 768 x 3072: 7.5 vs 6.9,
  /// so two tiles of 64 rows, 6.5, beat one of 128); the whole weight row by
  /// row (rows 3072 floats apart) was up to 2.3x slower. BERT's 12 layers
  /// (128 rows) at one thread: 294 -> 281 ms.
  bool planTiles(const GemmDesc &g, dnnl_data_type_t type, Plan &p,
                 const uint8_t *packFrom = nullptr) {
    const bool tall = p.src.ndims == 2;
    const int64_t rows = tall ? g.batch * g.m : g.m, cols = g.n, k = g.k;
    const int64_t batches = tall ? 1 : g.batch;
    dnnl_dim_t weightStrides[2] = {0, 0};
    if (tall) {
      if (!plainStrides(p.weights, weightStrides))
        return false;
    } else {
      weightStrides[0] = p.weights.format_desc.blocking.strides[1];
      weightStrides[1] = p.weights.format_desc.blocking.strides[2];
    }
    auto tileOf = [](int64_t extent, int64_t tile) {
      return extent <= tile + tile / 2 ? extent : tile;
    };
    const int64_t tileRows = packFrom ? std::min(rows, kPackedTileRows) : tileOf(rows, kTileRows);
    const int64_t tileCols = tileOf(cols, kTileCols);
    const int64_t width = type == dnnl_f32 ? 4 : 2;
    // A packed tile's row stride: its width, one cache line more where rows
    // would be a multiple of 2 KB apart (512 floats: 35% slower than 384).
    auto packedLd = [&](int64_t c) { return c * width % 2048 == 0 ? c + 64 / width : c; };
    // The packed weight's element offset of the column tile at c0.
    auto packedAt = [&](int64_t c0) { return c0 / tileCols * k * packedLd(tileCols); };
    if (packFrom) {
      if (!tall)
        return false;
      const int64_t last = cols - (cols - 1) / tileCols * tileCols;
      const size_t bytes = size_t((packedAt(cols - last) + k * packedLd(last)) * width);
      p.packedBytes = bytes;
      if (posix_memalign(&p.packed, 64, bytes) != 0) {
        p.packed = nullptr;
        return p.reason = "cannot allocate its packed weight", false;
      }
      for (int64_t c0 = 0; c0 < cols; c0 += tileCols) {
        const int64_t c = std::min(tileCols, cols - c0);
        dnnl_memory_desc_t from, to;
        const dnnl_dims_t dims = {k, c}, toStrides = {packedLd(c), 1};
        dnnl_memory_desc_init_by_strides(&from, 2, dims, type, weightStrides);
        dnnl_memory_desc_init_by_strides(&to, 2, dims, type, toStrides);
        if (!reorder(p, from, const_cast<uint8_t *>(packFrom) + c0 * weightStrides[1] * width, to,
                     static_cast<uint8_t *>(p.packed) + packedAt(c0) * width))
          return false;
      }
      ++packsAtLoad;
    }
    // Shapes: (full or last rows) x (full or last columns).
    std::vector<std::pair<int64_t, int64_t>> shapeDims;
    std::vector<std::array<dnnl_memory_desc_t, 3>> descs;
    auto shapeIndex = [&](int64_t r, int64_t c) {
      for (size_t i = 0; i < shapeDims.size(); ++i)
        if (shapeDims[i] == std::make_pair(r, c))
          return int(i);
      shapeDims.push_back({r, c});
      std::array<dnnl_memory_desc_t, 3> d;
      const dnnl_dims_t srcDims = {r, k}, srcStrides = {k, 1};
      const dnnl_dims_t weiDims = {k, c};
      const dnnl_dims_t weiStrides = {packFrom ? packedLd(c) : weightStrides[0],
                                      packFrom ? 1 : weightStrides[1]};
      const dnnl_dims_t dstDims = {r, c}, dstStrides = {cols, 1};
      dnnl_memory_desc_init_by_strides(&d[0], 2, srcDims, type, srcStrides);
      dnnl_memory_desc_init_by_strides(&d[1], 2, weiDims, type, weiStrides);
      dnnl_memory_desc_init_by_strides(&d[2], 2, dstDims, dnnl_f32, dstStrides);
      descs.push_back(d);
      return int(shapeDims.size() - 1);
    };
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t r0 = 0; r0 < rows; r0 += tileRows)
        for (int64_t c0 = 0; c0 < cols; c0 += tileCols) {
          Tile t;
          t.shape = shapeIndex(std::min(tileRows, rows - r0), std::min(tileCols, cols - c0));
          t.a = b * (tall ? 0 : g.strideA) + r0 * k;
          t.b = packFrom ? packedAt(c0) : b * (tall ? 0 : g.strideB) + c0 * weightStrides[1];
          t.out = b * (tall ? 0 : g.strideOut) + r0 * cols + c0;
          const auto &d = descs[size_t(t.shape)];
          if (dnnl_memory_create(&t.src, &d[0], engine, DNNL_MEMORY_NONE) != dnnl_success ||
              dnnl_memory_create(&t.weights, &d[1], engine, DNNL_MEMORY_NONE) != dnnl_success ||
              dnnl_memory_create(&t.dst, &d[2], engine, DNNL_MEMORY_NONE) != dnnl_success) {
            p.tiles.push_back(t);
            return false;
          }
          p.tiles.push_back(t);
        }
    const int workers = pool ? pool->size() : 1;
    const int before = ThreadPool::openMpThreads();
    ThreadPool::setOpenMpThreads(1);
    bool ok = true;
    p.shapes.assign(size_t(workers), std::vector<dnnl_primitive_t>(descs.size(), nullptr));
    for (int w = 0; w < workers && ok; ++w)
      for (size_t i = 0; i < descs.size() && ok; ++i) {
        dnnl_matmul_desc_t desc;
        dnnl_primitive_desc_t pd = nullptr;
        ok = dnnl_matmul_desc_init(&desc, &descs[i][0], &descs[i][1], nullptr, &descs[i][2]) ==
                 dnnl_success &&
             dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr) == dnnl_success &&
             dnnl_primitive_create(&p.shapes[size_t(w)][i], pd) == dnnl_success;
        if (pd)
          dnnl_primitive_desc_destroy(pd);
      }
    ThreadPool::setOpenMpThreads(before);
    return ok;
  }

  /// Plans tall step g on the own packed GEMM (Plan::own): its constant
  /// weight at `packFrom` (FP32, p.weights' plain layout) packed into
  /// panels of `format` (FP32 where a value is not one of format's), its
  /// output in tiles of kPackedTileRows rows and kTileCols columns (as
  /// oneDNN's tiles; each sums all of k), or smaller ones for the threads.
  bool planOwn(const GemmDesc &g, Plan &p, const uint8_t *packFrom, cpu::PackedFormat format) {
    dnnl_dim_t strides[2] = {0, 0};
    if (!plainStrides(p.weights, strides))
      return p.reason = "an unexpected weight layout", false;
    const int64_t rows = g.batch * g.m;
    p.k = g.k;
    p.n = g.n;
    const auto *from = reinterpret_cast<const float *>(packFrom);
    for (cpu::PackedFormat f : {format, cpu::PackedFormat::F32}) {
      std::free(p.packed);
      p.packedBytes = cpu::packedGemmWeightBytes(p.k, p.n, f);
      if (posix_memalign(&p.packed, 64, std::max<size_t>(p.packedBytes, 64)) != 0) {
        p.packed = nullptr;
        return p.reason = "cannot allocate its packed weight", false;
      }
      p.ownFormat = f;
      if (cpu::packGemmWeight(from, p.k, p.n, strides[0], strides[1], p.packed, f))
        break; // (FP32 always packs)
    }
    ++packsAtLoad;
    // Its sums do not depend on the tiles: where the grid gives fewer than
    // two tiles per thread, narrower ones (16 columns, then 6 rows at a
    // time), each of kOwnTileMacs multiply-adds or more.
    int64_t tileCols = p.n <= kTileCols + kTileCols / 2 ? p.n : kTileCols;
    int64_t tileRows = std::min(rows, kPackedTileRows);
    const int64_t threads = pool ? pool->size() : 1, want = threads > 1 ? 2 * threads : 1;
    auto count = [&](int64_t r, int64_t c) { return ((rows + r - 1) / r) * ((p.n + c - 1) / c); };
    while (count(tileRows, tileCols) < want) {
      const int64_t c = (tileCols / 2 + 15) / 16 * 16, r = (tileRows / 2 + 5) / 6 * 6;
      if (tileCols >= 32 && c * tileRows * p.k >= kOwnTileMacs)
        tileCols = c;
      else if (tileRows >= 12 && tileCols * r * p.k >= kOwnTileMacs)
        tileRows = r;
      else
        break;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += tileRows)
      for (int64_t c0 = 0; c0 < p.n; c0 += tileCols)
        p.ownTiles.push_back({r0, std::min(rows, r0 + tileRows), c0, std::min(p.n, c0 + tileCols)});
    return p.own = p.ok = true;
  }

  /// Reorders the constant weight at `data` (p.weights' plain layout) into
  /// `packed` (the primitive's); false with p.reason.
  bool packConstant(Plan &p, const dnnl_memory_desc_t &packed, const uint8_t *data) {
    const size_t bytes = dnnl_memory_desc_get_size(&packed);
    p.packedBytes = bytes;
    if (posix_memalign(&p.packed, 64, bytes ? bytes : 64) != 0) {
      p.packed = nullptr;
      return p.reason = "cannot allocate its packed weight", false;
    }
    if (!reorder(p, p.weights, const_cast<uint8_t *>(data), packed, p.packed))
      return false;
    ++packsAtLoad;
    return true;
  }

  /// Copies `from` at `fromData` into `to` at `toData` (oneDNN's reorder);
  /// false with p.reason.
  bool reorder(Plan &p, const dnnl_memory_desc_t &from, void *fromData,
               const dnnl_memory_desc_t &to, void *toData) {
    dnnl_primitive_desc_t rpd = nullptr;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&rpd, &from, engine, &to, engine, nullptr);
    dnnl_primitive_t primitive = nullptr;
    if (s == dnnl_success)
      s = dnnl_primitive_create(&primitive, rpd);
    if (rpd)
      dnnl_primitive_desc_destroy(rpd);
    if (s == dnnl_success)
      s = execute(primitive, {{DNNL_ARG_FROM, {&from, fromData}}, {DNNL_ARG_TO, {&to, toData}}});
    if (primitive)
      dnnl_primitive_destroy(primitive);
    if (s != dnnl_success)
      return p.reason = "packing its weight: " + statusText(s), false;
    return true;
  }
};

DnnlGemms::DnnlGemms() : impl(std::make_unique<Impl>()) {}
DnnlGemms::~DnnlGemms() = default;

bool DnnlGemms::available() { return true; }

Status DnnlGemms::prepare(const LoadedModule &module,
                          const std::function<const uint8_t *(int32_t)> &constant,
                          ThreadPool *pool) {
  Impl &d = *impl;
  d.pool = pool;
  d.plans.assign(module.gemms().size(), Plan());
  if (d.plans.empty())
    return okStatus();
  if (const char *why = dnnl::offByEnvironment()) {
    for (Plan &p : d.plans)
      p.reason = why;
    return okStatus();
  }
  if (dnnl_engine_create(&d.engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&d.stream, d.engine, dnnl_stream_default_flags) != dnnl_success) {
    for (Plan &p : d.plans)
      p.reason = "oneDNN's CPU engine did not start";
    return okStatus();
  }
  d.workerStreams.assign(size_t(pool ? pool->size() : 1), nullptr);
  for (dnnl_stream_t &st : d.workerStreams)
    if (dnnl_stream_create(&st, d.engine, dnnl_stream_default_flags) != dnnl_success) {
      for (Plan &p : d.plans)
        p.reason = "oneDNN's CPU engine did not start";
      return okStatus();
    }
  for (size_t i = 0; i < d.plans.size(); ++i)
    if (!d.plan(module, module.gemms()[i], constant, d.plans[i]) &&
        d.plans[i].reason.rfind("cannot allocate", 0) == 0)
      return Status(MIXPREC_OUT_OF_MEMORY,
                    module.gemms()[i].name + ": oneDNN: " + d.plans[i].reason);
  size_t wideA = 0, wideB = 0;
  for (const Plan &p : d.plans) {
    wideA = std::max(wideA, p.wideBytesA);
    wideB = std::max(wideB, p.wideBytesB);
  }
  d.wideA.resize(wideA);
  d.wideB.resize(wideB);
  return okStatus();
}

bool DnnlGemms::handles(size_t index) const {
  return index < impl->plans.size() && impl->plans[index].ok;
}

std::string DnnlGemms::reason(size_t index) const {
  return index < impl->plans.size() ? impl->plans[index].reason : "no such step";
}

int64_t DnnlGemms::wideElementsA(size_t index) const {
  return handles(index) && impl->plans[index].wideBytesA ? impl->plans[index].elementsA : 0;
}

schema::DType DnnlGemms::computeType(size_t index) const { return impl->plans[index].computeType; }

void DnnlGemms::widenA(size_t index, const void *a, int64_t begin, int64_t count) {
  Impl &d = *impl;
  const Plan &p = d.plans[index];
  const size_t from = num::formatBytes(formatOf(p.aType)),
               to = p.computeType == schema::DType::F32 ? 4 : 2;
  widen(p.aType, p.computeType, static_cast<const uint8_t *>(a) + begin * from, count,
        d.wideA.data() + begin * to);
}

const void *DnnlGemms::widenedA() const { return impl->wideA.data(); }

Status DnnlGemms::run(size_t index, const void *a, const void *b, float *acc, const void *aWide,
                      const float *bias, const float *scale) {
  Impl &d = *impl;
  Plan &p = d.plans[index];
  // Activations in a dtype the primitive does not take: widened (exact).
  if (p.wideBytesA) {
    if (!aWide)
      widen(p.aType, p.computeType, a, p.elementsA, d.wideA.data());
    a = aWide ? aWide : d.wideA.data();
  }
  if (!p.packed && p.wideBytesB) {
    widen(p.bType, p.computeType, b, p.elementsB, d.wideB.data());
    b = d.wideB.data();
  }
  void *weights = p.packed ? p.packed : const_cast<void *>(b);
  if (p.own) {
    const auto *x = static_cast<const float *>(a);
    auto tile = [&](int64_t i, int) {
      const Plan::OwnTile &t = p.ownTiles[size_t(i)];
      cpu::packedGemm(x, p.packed, acc, p.k, p.n, t.r0, t.r1, t.c0, t.c1, bias, scale, p.ownFormat);
    };
    if (d.pool) // (one worker or one tile: on the calling thread)
      d.pool->run(int64_t(p.ownTiles.size()), tile);
    else
      for (size_t i = 0; i < p.ownTiles.size(); ++i)
        tile(int64_t(i), 0);
    return okStatus();
  }
  if (p.tiled) {
    const size_t width = p.computeType == schema::DType::F32 ? 4 : 2;
    std::atomic<int> failed{dnnl_success};
    auto tile = [&](int64_t i, int worker) {
      Tile &t = p.tiles[size_t(i)];
      ThreadPool::setOpenMpThreads(1); // oneDNN's GEMM driver: this tile on this thread alone
      dnnl_status_t st = dnnl_memory_set_data_handle(
          t.src, const_cast<uint8_t *>(static_cast<const uint8_t *>(a)) + t.a * width);
      if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(t.weights, static_cast<uint8_t *>(weights) + t.b * width);
      if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(t.dst, acc + t.out);
      const dnnl_exec_arg_t args[] = {
          {DNNL_ARG_SRC, t.src}, {DNNL_ARG_WEIGHTS, t.weights}, {DNNL_ARG_DST, t.dst}};
      dnnl_stream_t stream = d.workerStreams[size_t(worker)];
      if (st == dnnl_success)
        st = dnnl_primitive_execute(p.shapes[size_t(worker)][size_t(t.shape)], stream, 3, args);
      if (st == dnnl_success)
        st = dnnl_stream_wait(stream);
      if (st != dnnl_success)
        failed = st;
    };
    const int before = ThreadPool::openMpThreads();
    if (d.pool) // (one worker or one tile: on the calling thread)
      d.pool->run(int64_t(p.tiles.size()), tile);
    else
      for (size_t i = 0; i < p.tiles.size(); ++i)
        tile(int64_t(i), 0);
    ThreadPool::setOpenMpThreads(before);
    if (failed != dnnl_success)
      return Status(MIXPREC_EXECUTION_ERROR,
                    "oneDNN's matmul failed: " + statusText(dnnl_status_t(failed.load())));
    return okStatus();
  }
  dnnl_status_t s = dnnl_memory_set_data_handle(p.srcMemory, const_cast<void *>(a));
  if (s == dnnl_success)
    s = dnnl_memory_set_data_handle(p.weightsMemory, weights);
  if (s == dnnl_success)
    s = dnnl_memory_set_data_handle(p.dstMemory, acc);
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, p.srcMemory},
                                  {DNNL_ARG_WEIGHTS, p.weightsMemory},
                                  {DNNL_ARG_DST, p.dstMemory}};
  if (s == dnnl_success)
    s = dnnl_primitive_execute(p.matmul, d.stream, 3, args);
  if (s == dnnl_success)
    s = dnnl_stream_wait(d.stream);
  if (s != dnnl_success)
    return Status(MIXPREC_EXECUTION_ERROR, "oneDNN's matmul failed: " + statusText(s));
  return okStatus();
}

int64_t DnnlGemms::tiles(size_t index) const {
  if (!handles(index))
    return 0;
  const Plan &p = impl->plans[index];
  return p.own ? int64_t(p.ownTiles.size()) : p.tiled ? int64_t(p.tiles.size()) : 0;
}

bool DnnlGemms::ownKernel(size_t index) const { return handles(index) && impl->plans[index].own; }

schema::DType DnnlGemms::packedWeightType(size_t index) const {
  if (!ownKernel(index))
    return handles(index) ? computeType(index) : schema::DType::F32;
  switch (impl->plans[index].ownFormat) {
  case cpu::PackedFormat::BF16:
    return schema::DType::BF16;
  case cpu::PackedFormat::F16:
    return schema::DType::F16;
  case cpu::PackedFormat::F32:
    break;
  }
  return schema::DType::F32;
}

int64_t DnnlGemms::packsAtLoad() const { return impl->packsAtLoad; }

size_t DnnlGemms::packedBytes() const {
  size_t bytes = 0;
  for (const Plan &p : impl->plans)
    if (p.packed)
      bytes += p.packedBytes;
  return bytes;
}

#else // !MIXPREC_HAVE_DNNL

struct DnnlGemms::Impl {};

DnnlGemms::DnnlGemms() : impl(std::make_unique<Impl>()) {}
DnnlGemms::~DnnlGemms() = default;
bool DnnlGemms::available() { return false; }
Status DnnlGemms::prepare(const LoadedModule &, const std::function<const uint8_t *(int32_t)> &,
                          ThreadPool *) {
  return okStatus();
}
bool DnnlGemms::handles(size_t) const { return false; }
std::string DnnlGemms::reason(size_t) const { return "this runtime was built without oneDNN"; }
Status DnnlGemms::run(size_t, const void *, const void *, float *, const void *, const float *,
                      const float *) {
  return Status(MIXPREC_INTERNAL, "oneDNN: not built in");
}
int64_t DnnlGemms::wideElementsA(size_t) const { return 0; }
schema::DType DnnlGemms::computeType(size_t) const { return schema::DType::F32; }
void DnnlGemms::widenA(size_t, const void *, int64_t, int64_t) {}
const void *DnnlGemms::widenedA() const { return nullptr; }
int64_t DnnlGemms::tiles(size_t) const { return 0; }
int64_t DnnlGemms::packsAtLoad() const { return 0; }
size_t DnnlGemms::packedBytes() const { return 0; }
bool DnnlGemms::ownKernel(size_t) const { return false; }
schema::DType DnnlGemms::packedWeightType(size_t) const { return schema::DType::F32; }

#endif // MIXPREC_HAVE_DNNL

} // namespace mixprec::runtime
