//===- CpuKernelRun.cpp - the expression-program interpreter --------------===//
//
// A kernel runs row by row over its outer dims; each row is evaluated in
// pieces of up to pieceCapacity points held in registers (one array per
// instruction), one pass per level of nested row reduction. Short rows of
// a row-reduction kernel share a piece; a value the same at every point of
// a row (KernelPlan::Inst::uniform) is computed once a row.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/format/KernelProgram.h"
#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/ScalarFunctions.h"

#include <cmath>
#include <cstring>
#include <limits>

// The instruction loops compiled for AVX-512 and AVX2 too (the runtime is
// built for the baseline x86-64, SSE2), the loader picking one through an
// ifunc. This file is built with -ffp-contract=off: no clone fuses a
// multiply and an add, so every clone gives the interpreter's bits.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__clang__)
#define MIXPREC_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MIXPREC_KERNEL_CLONES
#endif

namespace mixprec::runtime {

using schema::DType;
using schema::OpCode;

namespace {

namespace scalar = cpu::scalar;

/// r[i] = f(a[i]).
template <typename F> void map1(F f, const float *a, float *r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    r[i] = f(a[i]);
}

/// r[i] = f(a[i], b[i]).
template <typename F> void map2(F f, const float *a, const float *b, float *r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    r[i] = f(a[i], b[i]);
}

/// r[i] = f(a[i], b[i], c[i]).
template <typename F>
void map3(F f, const float *a, const float *b, const float *c, float *r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    r[i] = f(a[i], b[i], c[i]);
}

// How the CPU backend computes each form of ScalarFns.def's eval column,
// over registers a, b, c into r: UNARY calls cpu::unary, the others map
// their FP32 formula over the points (PRED as 1 or 0); REF_ONLY opcodes are
// runKernel's own (they concern dtypes).
#define MP_CPU_PARAMS_1 [[maybe_unused]] float x
#define MP_CPU_PARAMS_2 MP_CPU_PARAMS_1, [[maybe_unused]] float y
#define MP_CPU_PARAMS_3 MP_CPU_PARAMS_2, [[maybe_unused]] float z
#define MP_CPU_REGS_1 a
#define MP_CPU_REGS_2 a, b
#define MP_CPU_REGS_3 a, b, c
#define MP_CPU_MAP(arity, ...)                                                                     \
  map##arity([](MP_CPU_PARAMS_##arity) { return __VA_ARGS__; }, MP_CPU_REGS_##arity, r, n)
#define MP_CPU_UNARY(K) cpu::unary(cpu::UnaryOp::K, a, r, n)
#define MP_CPU_BINARY(K, ...) MP_CPU_MAP(2, __VA_ARGS__)
#define MP_CPU_PRED(arity, ...) MP_CPU_MAP(arity, scalar::truth(__VA_ARGS__))
#define MP_CPU_FN(arity, ...) MP_CPU_MAP(arity, __VA_ARGS__)
#define MP_CPU_REF(f, arity, ...) MP_CPU_MAP(arity, __VA_ARGS__)
#define MP_CPU_REF_ONLY(f) return false

/// Runs the instruction of a scalar function's opcode over `n` points, as
/// runtime/format/ScalarFns.def's eval column says; false for any other
/// opcode.
MIXPREC_KERNEL_CLONES bool runScalarFunction(OpCode op, const float *a, const float *b,
                                             const float *c, float *r, int64_t n) {
  switch (op) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, eval, ...)               \
  case OpCode::Name:                                                                               \
    MP_CPU_##eval;                                                                                 \
    return true;
#define MP_SCALAR_FN_SHARED(...)
#include "runtime/format/ScalarFns.def"
  default:
    return false;
  }
}

#undef MP_CPU_PARAMS_1
#undef MP_CPU_PARAMS_2
#undef MP_CPU_PARAMS_3
#undef MP_CPU_REGS_1
#undef MP_CPU_REGS_2
#undef MP_CPU_REGS_3
#undef MP_CPU_MAP
#undef MP_CPU_UNARY
#undef MP_CPU_BINARY
#undef MP_CPU_PRED
#undef MP_CPU_FN
#undef MP_CPU_REF
#undef MP_CPU_REF_ONLY

/// Advances a row-major counter over `dims`, moving each access's base
/// offset along; returns false after the last point.
bool advance(const std::vector<int64_t> &dims, size_t rank, std::vector<int64_t> &index,
             std::vector<int64_t> &base, const std::vector<const std::vector<int64_t> *> &strides) {
  for (size_t d = rank; d-- > 0;) {
    if (++index[d] < dims[d]) {
      for (size_t a = 0; a < base.size(); ++a)
        base[a] += (*strides[a])[d];
      return true;
    }
    for (size_t a = 0; a < base.size(); ++a)
      base[a] -= (dims[d] - 1) * (*strides[a])[d];
    index[d] = 0;
  }
  return false;
}

/// Rounds `n` register values to `dtype`, kept as FP32: floats to the
/// nearest value of the format (FP8 saturating), integers toward zero,
/// bools to 0 or 1.
void roundRegisters(DType dtype, const float *in, float *out, int64_t n) {
  switch (dtype) {
  case DType::F32:
    std::copy(in, in + n, out);
    break;
  case DType::I64:
  case DType::I32:
    // Registers stay FP32: the integer value, still a float (a Store to an
    // integer tensor checks its range).
    for (int64_t i = 0; i < n; ++i)
      out[i] = std::trunc(in[i]);
    break;
  case DType::Bool:
    for (int64_t i = 0; i < n; ++i)
      out[i] = in[i] != 0.0f ? 1.0f : 0.0f;
    break;
  default:
    num::roundArray(formatOf(dtype), in, out, n, storeOptions(dtype));
    break;
  }
}

/// Whether instruction `inst`'s result, just computed in pass `pass`, still
/// needs rounding to its dtype. The schema has every result rounded to its
/// dtype (a bf16 value of the IR holds bf16 values in registers too); the
/// arithmetic runs in FP32, so each result is rounded once here. Loads hold
/// their tensor's values, constants are FP32, casts and quantizes round
/// themselves, an Amax is FP32 and only stored, and a row reduction's
/// register is filled (and so rounded) only in the passes after its own.
bool roundsResult(const KernelPlan::Inst &inst, int32_t pass) {
  if (inst.dtype == DType::F32)
    return false;
  switch (inst.op) {
  case OpCode::Load:
  case OpCode::Store:
  case OpCode::Const:
  case OpCode::Cast:
  case OpCode::Quantize:
  case OpCode::Amax:
    return false;
  case OpCode::RowSum:
  case OpCode::RowMax:
    return inst.pass != pass;
  default:
    return true;
  }
}

/// The offsets of row `row` (row-major over `dims`) in each access.
void rowBase(const std::vector<int64_t> &dims, int64_t row,
             const std::vector<const std::vector<int64_t> *> &strides, std::vector<int64_t> &base) {
  std::fill(base.begin(), base.end(), 0);
  for (size_t d = dims.size(); d-- > 0;) {
    const int64_t i = row % dims[d];
    row /= dims[d];
    for (size_t a = 0; a < base.size(); ++a)
      base[a] += i * (*strides[a])[d];
  }
}

/// storeRun to the access's tensor (storeRunWide where it is stored
/// wide).
bool storeAccess(const KernelPlan::Access &access, uint8_t *base, int64_t offset, int64_t stride,
                 int64_t n, const float *in, float &bad) {
  if (!access.wide)
    return storeRun(access.dtype, base, offset, stride, n, in, bad);
  storeRunWide(access.dtype, access.wideType, base, offset, stride, n, in);
  return true;
}

/// RowMax's step: x where it is larger or NaN, else acc (a NaN stays).
inline float maxStep(float acc, float x) { return (x > acc || x != x) ? x : acc; }

/// Half of kReductionLanes floats, one vector (GCC's vector extension: each
/// clone its own registers, an element-wise operation the same bits in
/// all); the lanes are kept in two (GCC kept one vector of all 16 on the
/// stack in the AVX2 clone, storing it whole and reloading it in halves
/// every step: a store-forwarding stall each, 2 ns a point).
using HalfLaneVector = float __attribute__((vector_size(kReductionLanes / 2 * sizeof(float))));

/// The floats of vector v at p (a macro: an inline function returning the
/// vector would have the baseline clone's ABI).
#define MIXPREC_LOAD_LANES(v, p) std::memcpy(&(v), (p), sizeof(v))

/// Adds (RowSum) or max-merges (RowMax) points x[0, n), at positions
/// [offset, offset + n) of their row, into the row's lanes: the point at
/// position p goes to lane p % kReductionLanes, each lane in point order
/// (kReductionLanes says why).
template <bool Sum>
MIXPREC_KERNEL_CLONES void accumulateLanes(const float *x, int64_t n, int64_t offset,
                                           float *lanes) {
  constexpr int64_t L = kReductionLanes;
  auto step = [](float a, float v) { return Sum ? a + v : maxStep(a, v); };
  int64_t i = 0;
  for (; i < n && (offset + i) % L != 0; ++i)
    lanes[(offset + i) % L] = step(lanes[(offset + i) % L], x[i]);
  HalfLaneVector low, high;
  MIXPREC_LOAD_LANES(low, lanes);
  MIXPREC_LOAD_LANES(high, lanes + L / 2);
  for (; i + L <= n; i += L) {
    HalfLaneVector v, w;
    MIXPREC_LOAD_LANES(v, x + i);
    MIXPREC_LOAD_LANES(w, x + i + L / 2);
    if constexpr (Sum) {
      low += v;
      high += w;
    } else {
      low = (v > low || v != v) ? v : low;
      high = (w > high || w != w) ? w : high;
    }
  }
  std::memcpy(lanes, &low, sizeof(low));
  std::memcpy(lanes + L / 2, &high, sizeof(high));
  for (; i < n; ++i)
    lanes[(offset + i) % L] = step(lanes[(offset + i) % L], x[i]);
}

/// The lanes' value: lane l combined with lane l + 8, then + 4, + 2, + 1.
template <bool Sum> float combineLanes(const float *lanes) {
  constexpr int64_t L = kReductionLanes;
  float acc[L];
  std::copy(lanes, lanes + L, acc);
  for (int64_t width = L / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      acc[l] = Sum ? acc[l] + acc[l + width] : maxStep(acc[l], acc[l + width]);
  return acc[0];
}

} // namespace

float mergeAmax(float x, float y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }

// In lanes: the same value in any order.
MIXPREC_KERNEL_CLONES float amaxOf(const float *x, int64_t n, float amax) {
  constexpr int64_t L = kReductionLanes / 2;
  HalfLaneVector acc[2] = {}, nan[2] = {};
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L)
    for (int h = 0; h < 2; ++h) {
      HalfLaneVector v;
      MIXPREC_LOAD_LANES(v, x + i + h * L);
      const HalfLaneVector magnitude = v < 0 ? -v : v; // -0 and 0 alike to max
      nan[h] = v != v ? v : nan[h];
      acc[h] = magnitude > acc[h] ? magnitude : acc[h];
    }
  bool anyNan = false;
  for (int h = 0; h < 2; ++h)
    for (int64_t l = 0; l < L; ++l) {
      anyNan |= nan[h][l] != nan[h][l];
      amax = mergeAmax(amax, acc[h][l]);
    }
  for (; i < n; ++i)
    amax = mergeAmax(amax, std::fabs(x[i]));
  return anyNan ? NAN : amax;
}

Status CpuBackend::runKernel(const KernelPlan &plan) {
  const size_t numAccess = plan.accesses.size();
  accessData.resize(numAccess);
  for (size_t a = 0; a < numAccess; ++a)
    accessData[a] = plan.accesses[a].wide ? wideData(plan.accesses[a].tensor)
                                          : tensorData(plan.accesses[a].tensor);
  for (Worker &w : workers)
    std::fill(w.amaxValue.begin(), w.amaxValue.begin() + plan.program.size(), 0.0f);

  // Each point of the outer (non-row) dims is one row; a kernel without row
  // reductions has a single row (CpuKernelPlan.cpp), whose slices of
  // pieceCapacity points are then the units of work instead. An empty space
  // runs none (and its accesses were not bounds-checked, having none).
  if (!plan.empty) {
    int64_t rows = 1, rowPoints = 1;
    for (int64_t d : plan.outerDims)
      rows *= d;
    for (int64_t d : plan.rowDims)
      rowPoints *= d;
    const bool splitRows = plan.reductionPasses > 0;
    const int64_t runLength = plan.rowDims.empty() ? 1 : plan.rowDims.back();
    const int64_t capacity = capacityOf(plan);
    const int64_t slicesPerRun = (runLength + capacity - 1) / capacity;
    const int64_t slices = rowPoints / runLength * slicesPerRun;
    const int64_t units = splitRows ? rows : slices;
    const int threads = pool->size();
    const int64_t points = rows * rowPoints;
    const bool worthIt = points >= parallelPoints || points * plan.pointCost >= 2 * parallelPoints;
    if (threads == 1 || !plan.parallel || !worthIt || units < 2) {
      if (Status s = runRows(plan, workers[0], 0, rows); !s.ok())
        return s.withContext(plan.name + ": ");
    } else {
      // Contiguous units per chunk, a few chunks per thread; each chunk's
      // results depend on its units alone.
      const int64_t chunks = std::min<int64_t>(units, int64_t(threads) * 4);
      ++parallelRuns;
      std::vector<Status> status(chunks);
      pool->run(chunks, [&](int64_t chunk, int worker) {
        const int64_t first = units * chunk / chunks, end = units * (chunk + 1) / chunks;
        Worker &w = workers[worker];
        status[chunk] = splitRows ? runRows(plan, w, first, end)
                                  : runRow(plan, w, std::vector<int64_t>(numAccess, 0), first, end);
      });
      for (const Status &s : status)
        if (!s.ok())
          return Status(s).withContext(plan.name + ": ");
    }
  }

  // An Amax is known only now; its Stores (all strides 0) write element 0.
  for (size_t j = 0; j < plan.program.size(); ++j) {
    const KernelPlan::Inst &inst = plan.program[j];
    if (inst.op != OpCode::Store || plan.program[inst.operand[0]].op != OpCode::Amax)
      continue;
    float amax = 0.0f;
    for (const Worker &w : workers)
      amax = mergeAmax(amax, w.amaxValue[inst.operand[0]]);
    const KernelPlan::Access &access = plan.accesses[inst.access];
    float bad = 0.0f;
    if (!storeAccess(access, const_cast<uint8_t *>(accessData[inst.access]), 0, 0, 1, &amax, bad))
      return Status(MIXPREC_EXECUTION_ERROR,
                    plan.name + ": instruction #" + std::to_string(j) + " (Store) cannot store " +
                        std::to_string(bad) + " in the " + dtypeName(access.dtype) + " tensor '" +
                        module->tensors()[access.tensor].name + "'");
  }
  return okStatus();
}

/// Rows [firstRow, endRow), each whole, in order.
Status CpuBackend::runRows(const KernelPlan &plan, Worker &w, int64_t firstRow, int64_t endRow) {
  const size_t numAccess = plan.accesses.size();
  std::vector<const std::vector<int64_t> *> outerStrides(numAccess);
  for (size_t a = 0; a < numAccess; ++a)
    outerStrides[a] = &plan.accesses[a].outerStrides;
  const int64_t runLength = plan.rowDims.empty() ? 1 : plan.rowDims.back();
  const int64_t capacity = capacityOf(plan);
  const int64_t slicesPerRun = (runLength + capacity - 1) / capacity;
  int64_t rowPoints = 1;
  for (int64_t d : plan.rowDims)
    rowPoints *= d;
  const int64_t slices = rowPoints / runLength * slicesPerRun;
  std::vector<int64_t> index(plan.outerDims.size(), 0), base(numAccess, 0);
  for (size_t d = plan.outerDims.size(), row = firstRow; d-- > 0; row /= plan.outerDims[d])
    index[d] = static_cast<int64_t>(row) % plan.outerDims[d];
  rowBase(plan.outerDims, firstRow, outerStrides, base);
  // Rows of at most half a piece: several to a piece, so that each
  // instruction runs once for them all (the encoder's LayerNorm rows of 64
  // points: 8 a piece).
  const int64_t group = plan.reductionPasses > 0 && 2 * rowPoints <= capacity
                            ? std::min(capacity / rowPoints, kMaxGroupRows)
                            : 1;
  w.groupRows = 1;
  for (int64_t row = firstRow; row < endRow;) {
    if (group > 1) {
      w.groupRows = std::min(group, endRow - row);
      w.groupRowPoints = rowPoints;
      w.groupBase.clear();
      for (int64_t g = 0; g < w.groupRows; ++g, ++row) {
        w.groupBase.insert(w.groupBase.end(), base.begin(), base.end());
        advance(plan.outerDims, plan.outerDims.size(), index, base, outerStrides);
      }
      Status s = runRowGroup(plan, w);
      w.groupRows = 1;
      if (!s.ok())
        return s;
      continue;
    }
    if (Status s = runRow(plan, w, base, 0, slices); !s.ok())
      return s;
    advance(plan.outerDims, plan.outerDims.size(), index, base, outerStrides);
    ++row;
  }
  return okStatus();
}

/// The worker's view of the row dims' runs (the accesses' row and
/// innermost strides, the row dims but the innermost), for runRow and
/// runRowGroup; the worker's vectors allocate nothing once grown.
void CpuBackend::prepareRuns(const KernelPlan &plan, Worker &w) {
  const size_t numAccess = plan.accesses.size();
  const size_t rowRank = plan.rowDims.size();
  const size_t runRank = rowRank ? rowRank - 1 : 0;
  w.rowStrides.resize(numAccess);
  w.innerStride.resize(numAccess);
  for (size_t a = 0; a < numAccess; ++a) {
    w.rowStrides[a] = &plan.accesses[a].rowStrides;
    w.innerStride[a] = rowRank ? plan.accesses[a].rowStrides.back() : 0;
  }
  w.runDims.assign(plan.rowDims.begin(), plan.rowDims.begin() + runRank);
  w.runIndex.resize(runRank);
  w.runBase.resize(numAccess);
}

/// Evaluates every pass of slices [firstSlice, endSlice) of one row (the
/// whole row when the kernel has row reductions), in pieces of up to
/// capacityOf(plan) points made of whole runs of the innermost row dim, or
/// slices of a long run: slice s is the (s % slicesPerRun)-th piece-long
/// part of run s / slicesPerRun.
Status CpuBackend::runRow(const KernelPlan &plan, Worker &w, const std::vector<int64_t> &outerBase,
                          int64_t firstSlice, int64_t endSlice) {
  const size_t numAccess = plan.accesses.size();
  const size_t rowRank = plan.rowDims.size();
  const int64_t runLength = rowRank ? plan.rowDims.back() : 1;
  const int64_t capacity = capacityOf(plan);
  const int64_t sliceLength = std::min(runLength, capacity);
  const int64_t slicesPerRun = (runLength + sliceLength - 1) / sliceLength;
  const size_t runRank = rowRank ? rowRank - 1 : 0;
  prepareRuns(plan, w);
  // A row that is one piece (a row reduction's row of up to rowCapacity
  // points): its segments are the same in every pass, and a value computed
  // in an earlier pass is still in its register (`kept`), so each pass
  // evaluates only what it adds.
  const bool onePiece = plan.reductionPasses > 0 && endSlice > firstSlice &&
                        (endSlice - firstSlice) * sliceLength <= capacity;
  if (onePiece)
    w.kept.assign(plan.program.size(), 0);
  for (int32_t pass = 0; pass <= plan.reductionPasses; ++pass) {
    startReductions(plan, w, pass, 1);
    if (onePiece && pass > 0) {
      if (Status s = evalPiece(plan, w, pass, w.pieceCount, w.kept.data()); !s.ok())
        return s;
      finishReductions(plan, w, pass, 1);
      continue;
    }
    // Where the first slice's run starts.
    rowBase(w.runDims, firstSlice / slicesPerRun, w.rowStrides, w.runBase);
    for (size_t a = 0; a < numAccess; ++a)
      w.runBase[a] += outerBase[a];
    for (size_t d = runRank, run = firstSlice / slicesPerRun; d-- > 0; run /= plan.rowDims[d])
      w.runIndex[d] = static_cast<int64_t>(run) % plan.rowDims[d];
    int64_t start = firstSlice % slicesPerRun * sliceLength;
    w.segments.clear();
    w.segmentBase.clear();
    int64_t count = 0;
    for (int64_t slice = firstSlice; slice < endSlice; ++slice) {
      const int64_t length = std::min(sliceLength, runLength - start);
      if (count + length > capacity) {
        if (Status s = evalPiece(plan, w, pass, count); !s.ok())
          return s;
        w.segments.clear();
        w.segmentBase.clear();
        count = 0;
      }
      w.segments.push_back(Segment{length, count});
      for (size_t a = 0; a < numAccess; ++a)
        w.segmentBase.push_back(w.runBase[a] + start * w.innerStride[a]);
      count += length;
      start += sliceLength;
      if (start >= runLength) {
        start = 0;
        advance(plan.rowDims, runRank, w.runIndex, w.runBase, w.rowStrides);
      }
    }
    w.pieceCount = count;
    if (count > 0)
      if (Status s = evalPiece(plan, w, pass, count, onePiece ? w.kept.data() : nullptr); !s.ok())
        return s;
    finishReductions(plan, w, pass, 1);
  }
  return okStatus();
}

/// Sets the lanes of pass `pass`'s row reductions, for `rows` rows, to
/// their identity (RowSum 0, RowMax -inf), at row position 0.
void CpuBackend::startReductions(const KernelPlan &plan, Worker &w, int32_t pass, int64_t rows) {
  for (size_t j = 0; j < plan.program.size(); ++j) {
    const KernelPlan::Inst &inst = plan.program[j];
    if (!isRowReduction(inst.op) || inst.pass != pass)
      continue;
    const float identity =
        inst.op == OpCode::RowSum ? 0.0f : -std::numeric_limits<float>::infinity();
    const size_t slot = j * kMaxGroupRows;
    std::fill_n(w.rowLanes.begin() + slot * kReductionLanes, rows * kReductionLanes, identity);
    std::fill_n(w.rowPosition.begin() + slot, rows, 0);
  }
}

/// Combines the lanes of pass `pass`'s row reductions into their values,
/// which the later passes read.
void CpuBackend::finishReductions(const KernelPlan &plan, Worker &w, int32_t pass, int64_t rows) {
  for (size_t j = 0; j < plan.program.size(); ++j) {
    const KernelPlan::Inst &inst = plan.program[j];
    if (!isRowReduction(inst.op) || inst.pass != pass)
      continue;
    for (int64_t g = 0; g < rows; ++g) {
      const size_t slot = j * kMaxGroupRows + g;
      const float *lanes = w.rowLanes.data() + slot * kReductionLanes;
      w.rowValue[slot] =
          inst.op == OpCode::RowSum ? combineLanes<true>(lanes) : combineLanes<false>(lanes);
    }
  }
}

Status CpuBackend::runRowGroup(const KernelPlan &plan, Worker &w) {
  const size_t numAccess = plan.accesses.size();
  const size_t rowRank = plan.rowDims.size();
  const int64_t runLength = rowRank ? plan.rowDims.back() : 1;
  const size_t runRank = rowRank ? rowRank - 1 : 0;
  const int64_t rows = w.groupRows, rowPoints = w.groupRowPoints;
  // Each row's runs of the innermost dim, one segment each, row after row.
  prepareRuns(plan, w);
  w.segments.clear();
  w.segmentBase.clear();
  for (int64_t g = 0; g < rows; ++g) {
    std::fill(w.runBase.begin(), w.runBase.end(), 0);
    std::fill(w.runIndex.begin(), w.runIndex.end(), 0);
    for (int64_t position = g * rowPoints; position < (g + 1) * rowPoints; position += runLength) {
      w.segments.push_back(Segment{runLength, position});
      for (size_t a = 0; a < numAccess; ++a)
        w.segmentBase.push_back(w.groupBase[g * numAccess + a] + w.runBase[a]);
      advance(w.runDims, runRank, w.runIndex, w.runBase, w.rowStrides);
    }
  }
  const int64_t count = rows * rowPoints;
  w.pieceCount = count;
  w.kept.assign(plan.program.size(), 0);
  for (int32_t pass = 0; pass <= plan.reductionPasses; ++pass) {
    startReductions(plan, w, pass, rows);
    if (Status s = evalPiece(plan, w, pass, count, w.kept.data()); !s.ok())
      return s;
    finishReductions(plan, w, pass, rows);
  }
  return okStatus();
}

/// A fused quantize Store (KernelPlan::Inst::fusedQuantize): each segment
/// scaled, rounded and written in one pass, from the tensor of the
/// operand's Load, or from `values` (the operand's register).
void CpuBackend::storeQuantized(const KernelPlan &plan, const KernelPlan::Inst &store,
                                const float *values, const std::vector<Segment> &segments,
                                const std::vector<int64_t> &segmentBase) {
  const size_t numAccess = plan.accesses.size();
  const KernelPlan::Access &scaleAccess = plan.accesses[store.scaleAccess];
  float scale = 0.0f;
  loadRun(scaleAccess.dtype, accessData[store.scaleAccess], 0, 0, 1, &scale);
  const KernelPlan::Access &out = plan.accesses[store.access];
  const num::Format format = formatOf(out.dtype);
  const num::Fp8Storage to = !out.wide                    ? num::Fp8Storage::Codes
                             : out.wideType == DType::F32 ? num::Fp8Storage::WideF32
                                                          : num::Fp8Storage::WideBF16;
  const size_t outBytes = num::formatBytes(formatOf(out.wide ? out.wideType : out.dtype));
  uint8_t *outData = const_cast<uint8_t *>(accessData[store.access]);
  // The source: a Load's tensor (in its own dtype, or the wide one it is
  // stored in), or the register's FP32 values.
  num::Format from = num::Format::F32;
  size_t inBytes = 4;
  const uint8_t *inData = nullptr;
  if (store.quantizeLoad >= 0) {
    const KernelPlan::Access &in = plan.accesses[store.quantizeLoad];
    const DType dtype = in.wide ? in.wideType : in.dtype;
    from = formatOf(dtype);
    inBytes = num::formatBytes(from);
    inData = accessData[store.quantizeLoad];
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    const void *source =
        inData ? static_cast<const void *>(
                     inData + segmentBase[s * numAccess + store.quantizeLoad] * inBytes)
               : static_cast<const void *>(values + segments[s].position);
    num::quantizeFp8Store(format, from, source, scale, to,
                          outData + segmentBase[s * numAccess + store.access] * outBytes,
                          static_cast<size_t>(segments[s].length));
  }
}

/// Runs the instructions of pass `pass` over `count` points.
MIXPREC_KERNEL_CLONES Status CpuBackend::evalPiece(const KernelPlan &plan, Worker &w, int32_t pass,
                                                   int64_t count, uint8_t *kept) {
  const std::vector<Segment> &segments = w.segments;
  const std::vector<int64_t> &segmentBase = w.segmentBase;
  const std::vector<uint8_t> &need = plan.needed[pass];
  const size_t numAccess = plan.accesses.size();
  // The rows of the piece: several whole rows (runRowGroup), or one row or
  // part of one.
  const int64_t rows = w.groupRows, rowPoints = rows > 1 ? w.groupRowPoints : count;
  auto reg = [&](int32_t j) {
    return w.registers.data() + static_cast<size_t>(j) * registerStride;
  };

  for (size_t jj = 0; jj < plan.program.size(); ++jj) {
    if (!need[jj] || (kept && kept[jj]))
      continue;
    const int32_t j = static_cast<int32_t>(jj);
    const KernelPlan::Inst &inst = plan.program[j];
    // Its register holds its value for the later passes of this piece: not
    // a Store or an Amax (effects), nor a row reduction in the pass that
    // accumulates it (its register is filled in the passes after).
    if (kept)
      kept[jj] = inst.op != OpCode::Store && inst.op != OpCode::Amax &&
                 !(isRowReduction(inst.op) && inst.pass == pass);
    // A value the same at every point of a row is computed at the row's
    // first point and spread over the row (a row reduction in its own pass
    // accumulates instead); in a piece of several rows, from the operands'
    // values gathered at each row's first point.
    const bool atOne =
        inst.uniform && count > rows && !(isRowReduction(inst.op) && inst.pass == pass);
    const int64_t n = atOne ? rows : count;
    float *const out = reg(j);
    float *r = out;
    w.values[jj] = out;
    const int operands = operandCount(inst.op);
    const float *a = operands > 0 ? w.values[inst.operand[0]] : nullptr;
    const float *b = operands > 1 ? w.values[inst.operand[1]] : nullptr;
    const float *c = operands > 2 ? w.values[inst.operand[2]] : nullptr;
    if (atOne && rows > 1) {
      float *g = w.gathered.data();
      for (int o = 0; o < operands; ++o)
        for (int64_t row = 0; row < rows; ++row)
          g[o * kMaxGroupRows + row] = w.values[inst.operand[o]][row * rowPoints];
      a = g;
      b = g + kMaxGroupRows;
      c = g + 2 * kMaxGroupRows;
      r = g + 3 * kMaxGroupRows;
    }
    switch (inst.op) {
    case OpCode::Load: {
      const KernelPlan::Access &access = plan.accesses[inst.access];
      const int64_t stride = access.rowStrides.empty() ? 0 : access.rowStrides.back();
      if (atOne) { // every row stride 0: each of a row's segments starts here
        const size_t perRow = segments.size() / static_cast<size_t>(rows);
        for (int64_t row = 0; row < rows; ++row)
          loadRun(access.dtype, accessData[inst.access],
                  segmentBase[row * perRow * numAccess + inst.access], 0, 1, r + row);
        break;
      }
      // FP32 values laid out in memory as in the register, which no Store
      // of the kernel can overwrite: read where they are.
      if (inst.direct && stride == 1) {
        const int64_t first = segmentBase[inst.access];
        bool inPlace = true;
        for (size_t s = 1; s < segments.size() && inPlace; ++s)
          inPlace = segmentBase[s * numAccess + inst.access] == first + segments[s].position;
        if (inPlace && segments[0].position == 0) {
          w.values[jj] = reinterpret_cast<const float *>(accessData[inst.access]) + first;
          break;
        }
      }
      for (size_t s = 0; s < segments.size(); ++s)
        loadRun(access.dtype, accessData[inst.access], segmentBase[s * numAccess + inst.access],
                stride, segments[s].length, r + segments[s].position);
      break;
    }
    case OpCode::Store: {
      const KernelPlan::Access &access = plan.accesses[inst.access];
      const int64_t stride = access.rowStrides.empty() ? 0 : access.rowStrides.back();
      if (plan.program[inst.operand[0]].op == OpCode::Amax)
        break; // written once the kernel has finished
      if (inst.fusedQuantize) {
        storeQuantized(plan, inst, w.values[plan.program[inst.operand[0]].operand[0]], segments,
                       segmentBase);
        break;
      }
      for (size_t s = 0; s < segments.size(); ++s) {
        float bad = 0.0f;
        if (!storeAccess(access, const_cast<uint8_t *>(accessData[inst.access]),
                         segmentBase[s * numAccess + inst.access], stride, segments[s].length,
                         a + segments[s].position, bad))
          return Status(MIXPREC_EXECUTION_ERROR,
                        "instruction #" + std::to_string(j) + " (Store) cannot store " +
                            std::to_string(bad) + " in the " + dtypeName(access.dtype) +
                            " tensor '" + module->tensors()[access.tensor].name + "'");
      }
      break;
    }
    case OpCode::Const:
      std::fill(r, r + n, inst.value);
      break;
    case OpCode::Cast:
      // To FP32: the operand's values (of its dtype) as they are.
      if (inst.dtype == DType::F32 && !atOne) {
        w.values[jj] = a;
        break;
      }
      roundRegisters(inst.dtype, a, r, n);
      break;
    case OpCode::Quantize: {
      if (inst.scaleOnly) { // rounded by its Store (saturating)
        num::scaleForQuantize(a, b, r, static_cast<size_t>(n));
        break;
      }
      // As the interpreter: finite values saturate, an inf or NaN (or a NaN
      // scale) is NaN. The scale is one value, broadcast.
      const bool oneScale = std::all_of(b, b + n, [&](float s) { return bitsEqual(s, b[0]); });
      if (n > 0 && oneScale) {
        num::quantizeFp8Array(formatOf(inst.dtype), a, b[0], r, n);
      } else {
        for (int64_t i = 0; i < n; ++i)
          r[i] = num::quantizeFp8(formatOf(inst.dtype), a[i], b[i]);
      }
      break;
    }
    case OpCode::RowSum:
    case OpCode::RowMax: {
      // One value per row of the piece.
      const int64_t span = n / rows; // (1 where at each row's first point)
      float *value = w.rowValue.data() + static_cast<size_t>(j) * kMaxGroupRows;
      if (inst.pass != pass) {
        for (int64_t g = 0; g < rows; ++g)
          std::fill(r + g * span, r + (g + 1) * span, value[g]);
        break;
      }
      // FP32 lanes, in row order across pieces (finishReductions combines
      // them into `value` once the pass has seen the whole row).
      for (int64_t g = 0; g < rows; ++g) {
        const size_t slot = static_cast<size_t>(j) * kMaxGroupRows + g;
        float *lanes = w.rowLanes.data() + slot * kReductionLanes;
        if (inst.op == OpCode::RowSum)
          accumulateLanes<true>(a + g * span, span, w.rowPosition[slot], lanes);
        else
          accumulateLanes<false>(a + g * span, span, w.rowPosition[slot], lanes);
        w.rowPosition[slot] += span;
      }
      break;
    }
    case OpCode::Amax: {
      // NaN propagates, as the interpreter's amax does.
      w.amaxValue[j] = amaxOf(a, n, w.amaxValue[j]);
      break;
    }
    default: // the scalar functions' instructions (the verifier knows every opcode)
      runScalarFunction(inst.op, a, b, c, r, n);
      break;
    }
    if (roundsResult(inst, pass))
      roundRegisters(inst.dtype, r, r, n);
    if (atOne)
      for (int64_t row = 0; row < rows; ++row) {
        const float value = r[row];
        if (inst.spread)
          std::fill(out + row * rowPoints, out + (row + 1) * rowPoints, value);
        else
          out[row * rowPoints] = value;
      }
  }
  return okStatus();
}

} // namespace mixprec::runtime
