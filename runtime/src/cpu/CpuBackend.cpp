//===- CpuBackend.cpp - the plan on the host, every rounding point kept ----===//
//
// Memory: one 256-aligned arena as the memory plan lays it out; every value
// stored in its dtype's bytes (f32 as float, f16/bf16 as uint16, FP8 as
// uint8, i64/i32, bool as 0/1 bytes), so a narrow tensor only ever holds
// values of its dtype.
//
// Numerics (DESIGN.md "Numerics rules"), matching compiler/Interpreter:
//  - Kernels compute in FP32 registers and round once per Store (and per
//    Cast/Quantize) with numerics::encode, round-to-nearest-even, FP8
//    saturating. Unary math calls cpu::unary, so it is the interpreter's.
//  - GEMMs decode operands to FP32 (exact), round them to TF32 when asked,
//    and run cpu::detail::sgemm with the same call structure as
//    cpu::linear/cpu::matmul (bias prefilled, beta = 1). FP8 GEMMs multiply
//    the accumulator by (1/a_scale)*(1/b_scale) and then add the bias, as
//    cuBLASLt does. The epilogue runs in FP32 (Gelu is the tanh form, as
//    CUBLASLT_EPILOGUE_GELU and --mp-fuse agree); one rounding to the
//    output.
//  - Opaque ops decode to FP32, run the reference kernel, round once.
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/HostMemory.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/format/KernelProgram.h"
#include "runtime/src/Backend.h"
#include "runtime/src/OpaqueOps.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace mixprec::runtime {
namespace {

using schema::DType;
using schema::OpCode;
namespace num = mixprec::numerics;

/// Largest reference-kernel scratch buffer (conv2d's im2col) the backend
/// allocates, in floats: beyond it a module is refused, not half-run.
constexpr int64_t kMaxScratchFloats = int64_t(1) << 32;

num::Format formatOf(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return num::Format::F16;
  case DType::BF16:
    return num::Format::BF16;
  case DType::F8E4M3FN:
    return num::Format::F8E4M3FN;
  case DType::F8E5M2:
    return num::Format::F8E5M2;
  default:
    return num::Format::F32;
  }
}

/// FP8 stores saturate (satfinite); F16/BF16 overflow to inf.
num::RoundOptions storeOptions(DType dtype) {
  num::RoundOptions o;
  o.saturate = dtype == DType::F8E4M3FN || dtype == DType::F8E5M2;
  return o;
}

/// Growable float buffer that reports allocation failure instead of
/// aborting (the runtime is built without exceptions).
class Scratch {
public:
  ~Scratch() { std::free(data_); }
  float *floats(int64_t count) { return static_cast<float *>(bytes(count * sizeof(float))); }
  void *bytes(int64_t size) {
    size_t want = static_cast<size_t>(std::max<int64_t>(size, 1));
    if (want > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      if (posix_memalign(&data_, 64, want) != 0) {
        data_ = nullptr;
        return nullptr;
      }
      capacity_ = want;
    }
    return data_;
  }

private:
  void *data_ = nullptr;
  size_t capacity_ = 0;
};

/// Bit equality (a NaN scale equals itself).
bool bitsEqual(float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; }

Status outOfMemory(const std::string &what, int64_t bytes) {
  return Status(MIXPREC_OUT_OF_MEMORY,
                what + ": cannot allocate " + std::to_string(bytes) + " bytes of scratch memory");
}

//===----------------------------------------------------------------------===//
// Element access in storage dtypes
//===----------------------------------------------------------------------===//

/// Reads `n` elements at `base[offset + i*stride]` as floats.
void loadRun(DType dtype, const uint8_t *base, int64_t offset, int64_t stride, int64_t n,
             float *out) {
  switch (dtype) {
  case DType::F32: {
    const float *p = reinterpret_cast<const float *>(base) + offset;
    if (stride == 1)
      std::memcpy(out, p, n * sizeof(float));
    else
      for (int64_t i = 0; i < n; ++i)
        out[i] = p[i * stride];
    return;
  }
  case DType::F16:
  case DType::BF16: {
    const uint16_t *p = reinterpret_cast<const uint16_t *>(base) + offset;
    if (stride == 1) {
      num::decodeArray(formatOf(dtype), p, out, n);
    } else {
      const num::Format f = formatOf(dtype);
      for (int64_t i = 0; i < n; ++i)
        out[i] = num::decode(f, p[i * stride]);
    }
    return;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    const uint8_t *p = base + offset;
    if (stride == 1) {
      num::decodeArray(formatOf(dtype), p, out, n);
    } else {
      const num::Format f = formatOf(dtype);
      for (int64_t i = 0; i < n; ++i)
        out[i] = num::decode(f, p[i * stride]);
    }
    return;
  }
  case DType::I64: {
    const int64_t *p = reinterpret_cast<const int64_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(p[i * stride]);
    return;
  }
  case DType::I32: {
    const int32_t *p = reinterpret_cast<const int32_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(p[i * stride]);
    return;
  }
  case DType::Bool: {
    const uint8_t *p = base + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = p[i * stride] != 0 ? 1.0f : 0.0f;
    return;
  }
  }
}

/// Whether a float converts to the integer type: finite, truncated value in
/// range (the interpreter refuses the rest, and so does the backend).
template <typename Int> bool fitsInteger(float v) {
  const double t = std::trunc(static_cast<double>(v));
  return std::isfinite(t) && t >= static_cast<double>(std::numeric_limits<Int>::min()) &&
         t < -static_cast<double>(std::numeric_limits<Int>::min());
}

/// Writes `n` floats to `base[offset + i*stride]` in `dtype`, rounding.
/// Returns false, writing nothing further, at a value an integer dtype
/// cannot hold; `bad` is that value.
bool storeRun(DType dtype, uint8_t *base, int64_t offset, int64_t stride, int64_t n,
              const float *in, float &bad) {
  // Stride 0 writes one element over and over: only the last write stays.
  if (stride == 0 && n > 1) {
    in += n - 1;
    n = 1;
  }
  switch (dtype) {
  case DType::F32: {
    float *p = reinterpret_cast<float *>(base) + offset;
    if (stride == 1)
      std::memcpy(p, in, n * sizeof(float));
    else
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = in[i];
    return true;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t *p = reinterpret_cast<uint16_t *>(base) + offset;
    const num::Format f = formatOf(dtype);
    if (stride == 1) {
      num::encodeArray(f, in, p, n, storeOptions(dtype));
    } else {
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<uint16_t>(num::encode(f, in[i], storeOptions(dtype)));
    }
    return true;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    uint8_t *p = base + offset;
    const num::Format f = formatOf(dtype);
    if (stride == 1) {
      num::encodeArray(f, in, p, n, storeOptions(dtype));
    } else {
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<uint8_t>(num::encode(f, in[i], storeOptions(dtype)));
    }
    return true;
  }
  case DType::I64: {
    int64_t *p = reinterpret_cast<int64_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i) {
      if (!fitsInteger<int64_t>(in[i]))
        return bad = in[i], false;
      p[i * stride] = static_cast<int64_t>(std::trunc(in[i]));
    }
    return true;
  }
  case DType::I32: {
    int32_t *p = reinterpret_cast<int32_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i) {
      if (!fitsInteger<int32_t>(in[i]))
        return bad = in[i], false;
      p[i * stride] = static_cast<int32_t>(std::trunc(in[i]));
    }
    return true;
  }
  case DType::Bool: {
    uint8_t *p = base + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i * stride] = in[i] != 0.0f ? 1 : 0;
    return true;
  }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Kernel plans
//===----------------------------------------------------------------------===//

/// A kernel prepared for execution: dims of size 1 dropped, adjacent dims
/// that every access walks as one run merged, and the evaluation passes of
/// its row reductions worked out.
struct KernelPlan {
  struct Access {
    int32_t tensor = 0;
    DType dtype = DType::F32;
    std::vector<int64_t> outerStrides, rowStrides; ///< per merged dim
  };
  struct Inst {
    OpCode op = OpCode::Const;
    int32_t operand[3] = {0, 0, 0};
    int32_t access = -1; ///< Load/Store: index into accesses
    float value = 0.0f;
    DType dtype = DType::F32;
    int32_t pass = 0;    ///< RowSum/RowMax: the pass that accumulates them
  };

  std::string name;
  /// The iteration space has no points (nothing runs but an Amax's Stores).
  bool empty = false;
  std::vector<int64_t> outerDims, rowDims;
  std::vector<Access> accesses;
  std::vector<Inst> program;
  int32_t reductionPasses = 0;
  /// needed[p][j]: instruction j is evaluated in pass p (the last pass,
  /// index reductionPasses, runs the Stores).
  std::vector<std::vector<uint8_t>> needed;
};

/// Merges adjacent dims of `dims` (one group) that every access walks as a
/// single run; strides[a] are aligned with dims. Size-1 dims are dropped.
void mergeDims(std::vector<int64_t> &dims, std::vector<std::vector<int64_t>> &strides) {
  std::vector<int64_t> outDims;
  std::vector<std::vector<int64_t>> outStrides(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1)
      continue;
    bool merge = !outDims.empty();
    for (size_t a = 0; merge && a < strides.size(); ++a)
      merge = outStrides[a].back() == strides[a][d] * dims[d];
    if (merge) {
      outDims.back() *= dims[d];
      for (size_t a = 0; a < strides.size(); ++a)
        outStrides[a].back() = strides[a][d];
    } else {
      outDims.push_back(dims[d]);
      for (size_t a = 0; a < strides.size(); ++a)
        outStrides[a].push_back(strides[a][d]);
    }
  }
  dims = std::move(outDims);
  strides = std::move(outStrides);
}

KernelPlan planKernel(const LoadedModule &module, size_t index) {
  const schema::Kernel &kernel = *module.root().kernels()->Get(index);
  KernelPlan plan;
  plan.name = module.kernelName(index);
  std::vector<int64_t> space;
  if (kernel.shape())
    space.assign(kernel.shape()->begin(), kernel.shape()->end());
  const size_t rank = space.size();
  const size_t firstRowDim = rank - kernel.row_dims();
  // Empty rows in a non-empty outer space still have row values: each row
  // reduction is its identity (RowSum 0, RowMax -inf), and the Stores that
  // do not walk the row dims write them once per outer point. The kernel
  // then runs over the space with the row dims as 1, as the verifier bounds
  // it; Stores that walk the rows (and what only they read) never run.
  bool emptyRows = false;
  if (cpu::numElements(space) == 0) {
    std::vector<int64_t> outer = space;
    std::fill(outer.begin() + firstRowDim, outer.end(), 1);
    emptyRows = cpu::numElements(outer) > 0;
    plan.empty = !emptyRows;
    space = outer;
  }
  const auto *program = kernel.program();
  const size_t length = program ? program->size() : 0;

  bool hasRowReduction = false;
  std::vector<uint8_t> walksRows(length, 0); // Stores only
  std::vector<std::vector<int64_t>> strides;
  plan.program.resize(length);
  for (size_t j = 0; j < length; ++j) {
    const schema::Instruction &src = *program->Get(j);
    KernelPlan::Inst &inst = plan.program[j];
    inst.op = src.opcode();
    inst.value = src.fvalue();
    inst.dtype = src.dtype();
    for (size_t o = 0; src.operands() && o < src.operands()->size(); ++o)
      inst.operand[o] = src.operands()->Get(o);
    if (emptyRows && (isRowReduction(inst.op) || inst.op == OpCode::Amax)) {
      // Over no values: the identity (an Amax's Store then writes its 0
      // like any stride-0 Store).
      inst.value = inst.op == OpCode::RowMax ? -std::numeric_limits<float>::infinity() : 0.0f;
      inst.op = OpCode::Const;
    }
    hasRowReduction |= isRowReduction(inst.op);
    if (inst.op == OpCode::Load || inst.op == OpCode::Store) {
      inst.access = static_cast<int32_t>(plan.accesses.size());
      KernelPlan::Access access;
      access.tensor = src.tensor();
      access.dtype = module.tensors()[src.tensor()].dtype;
      plan.accesses.push_back(access);
      // A rank-0 space has no strides, and the writer leaves the field out.
      if (src.strides())
        strides.emplace_back(src.strides()->begin(), src.strides()->end());
      else
        strides.emplace_back();
      for (size_t d = firstRowDim; d < rank; ++d)
        walksRows[j] |= strides.back()[d] != 0;
    }
  }
  // No point runs: the strides were never bounded, do not even merge them.
  if (plan.empty)
    return plan;

  // Without row reductions the row boundary means nothing: one "row" spans
  // the whole space, so pieces can be as long as the register arrays.
  const size_t rowStart = hasRowReduction ? firstRowDim : 0;
  std::vector<int64_t> outer(space.begin(), space.begin() + rowStart);
  std::vector<int64_t> row(space.begin() + rowStart, space.end());
  std::vector<std::vector<int64_t>> outerStrides, rowStrides;
  for (const std::vector<int64_t> &s : strides) {
    outerStrides.emplace_back(s.begin(), s.begin() + rowStart);
    rowStrides.emplace_back(s.begin() + rowStart, s.end());
  }
  mergeDims(outer, outerStrides);
  mergeDims(row, rowStrides);
  plan.outerDims = outer;
  plan.rowDims = row;
  for (size_t a = 0; a < plan.accesses.size(); ++a) {
    plan.accesses[a].outerStrides = outerStrides[a];
    plan.accesses[a].rowStrides = rowStrides[a];
  }

  // level[j]: how many nested row reductions j's value depends on. A row
  // reduction of a level-L operand is accumulated in pass L.
  std::vector<int32_t> level(length, 0);
  for (size_t j = 0; j < length; ++j) {
    KernelPlan::Inst &inst = plan.program[j];
    const int count = operandCount(inst.op);
    for (int o = 0; o < count; ++o)
      level[j] = std::max(level[j], level[inst.operand[o]]);
    if (isRowReduction(inst.op)) {
      inst.pass = level[j];
      level[j] += 1;
      plan.reductionPasses = std::max(plan.reductionPasses, level[j]);
    }
  }
  // needed[p]: the operands of what pass p produces, transitively, stopping
  // at row reductions (their values are known from earlier passes).
  plan.needed.assign(plan.reductionPasses + 1, std::vector<uint8_t>(length, 0));
  for (int32_t p = 0; p <= plan.reductionPasses; ++p) {
    std::vector<uint8_t> &need = plan.needed[p];
    for (size_t j = 0; j < length; ++j) {
      const KernelPlan::Inst &inst = plan.program[j];
      if (p == plan.reductionPasses
              ? ((inst.op == OpCode::Store && !(emptyRows && walksRows[j])) ||
                 inst.op == OpCode::Amax)
              : (isRowReduction(inst.op) && inst.pass == p))
        need[j] = 1;
    }
    for (size_t j = length; j-- > 0;) {
      const KernelPlan::Inst &inst = plan.program[j];
      if (!need[j])
        continue;
      if (isRowReduction(inst.op) && inst.pass != p)
        continue; // known value: filled, not recomputed
      const int count = operandCount(inst.op);
      for (int o = 0; o < count; ++o)
        need[inst.operand[o]] = 1;
    }
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// The backend
//===----------------------------------------------------------------------===//

class CpuBackend final : public Backend {
public:
  CpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options)
      : module(std::move(module)), options(options) {}

  Status prepare();
  mixprec_backend_t kind() const override { return MIXPREC_BACKEND_CPU; }
  Status setInput(uint32_t tensor, const void *data, size_t bytes) override;
  Status run() override;
  Status readTensor(uint32_t tensor, const void **data) override;

private:
  /// A run of a piece: `length` consecutive points of one row run, whose
  /// first point sits at element `base[a]` of access a.
  struct Segment {
    int64_t length = 0;
    int64_t position = 0; ///< index of its first point in the registers
  };

  uint8_t *tensorData(int32_t t) {
    const TensorDesc &d = module->tensors()[t];
    if (d.isConstant())
      return d.constantData ? const_cast<uint8_t *>(d.constantData) : emptyTensor;
    return arena.data() + d.offset;
  }
  bool overlaps(int32_t a, int32_t b) const {
    const TensorDesc &x = module->tensors()[a], &y = module->tensors()[b];
    if (x.isConstant() || y.isConstant() || x.bytes == 0 || y.bytes == 0)
      return false;
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  }

  Status runKernel(const KernelPlan &plan);
  Status runRow(const KernelPlan &plan, const std::vector<int64_t> &outerBase);
  Status evalPiece(const KernelPlan &plan, int32_t pass, const std::vector<Segment> &segments,
                   const std::vector<int64_t> &segmentBase, int64_t count);
  Status runGemm(const GemmDesc &g);
  Status runOpaque(const OpaqueOp &op);
  Status storeFloats(const OpaqueOp &op, const float *values);
  const float *floatOperand(int32_t tensor, Scratch &scratch);

  std::shared_ptr<const LoadedModule> module;
  BackendOptions options;
  AlignedBytes arena;
  std::vector<KernelPlan> kernels;
  /// Register file shared by all kernels: pieceCapacity floats per
  /// instruction of the longest program.
  std::vector<float> registers;
  int64_t pieceCapacity = 512;
  std::vector<float> rowValue;   ///< per instruction: row reductions' values
  std::vector<float> amaxValue;  ///< per instruction: Amax accumulators
  std::vector<const uint8_t *> accessData; ///< per access of the running kernel
  /// scratch[0..4]: decoded operands by position; [5]: results.
  Scratch scratch[6];
  alignas(64) uint8_t emptyTensor[64] = {};
};

Status CpuBackend::prepare() {
  const uint64_t arenaBytes = module->arenaBytesNeeded();
  // The largest scratch buffer that is not a copy of a tensor: im2col.
  uint64_t im2colBytes = 0;
  for (const OpaqueOp &op : module->opaques()) {
    if (op.kind != OpaqueKind::Conv2d)
      continue;
    const auto &ws = module->tensors()[op.inputs[1]].shape;
    const auto &os = module->tensors()[op.output].shape;
    const __int128 kc = static_cast<__int128>(ws[1]) * ws[2] * ws[3];
    const __int128 plane = static_cast<__int128>(os[2]) * os[3];
    if (kc * plane > kMaxScratchFloats || kc > INT_MAX || plane > INT_MAX || ws[0] > INT_MAX)
      return Status(MIXPREC_UNIMPLEMENTED,
                    op.name + ": the im2col buffer or GEMM exceeds the CPU backend's limits");
    im2colBytes = std::max<uint64_t>(im2colBytes, static_cast<uint64_t>(kc * plane) * 4);
  }
  if (options.maxMemoryBytes && (arenaBytes > options.maxMemoryBytes ||
                                 im2colBytes > options.maxMemoryBytes - arenaBytes))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: the module needs a " + std::to_string(arenaBytes) +
                      "-byte arena and " + std::to_string(im2colBytes) +
                      " bytes of im2col scratch, beyond the session's max_memory_bytes (" +
                      std::to_string(options.maxMemoryBytes) + ")");
  // The interpreter's rule for its live tensors (cpu::fitsInMemory): refused
  // up front, not killed after touching overcommitted pages.
  if (!cpu::fitsInMemory(arenaBytes, im2colBytes))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: the module needs a " + std::to_string(arenaBytes) +
                      "-byte arena and " + std::to_string(im2colBytes) +
                      " bytes of im2col scratch, more than " + cpu::describeUsableMemory());
  if (!arena.allocate(arenaBytes))
    return Status(MIXPREC_OUT_OF_MEMORY, "CPU backend: cannot allocate the " +
                                             std::to_string(arenaBytes) + "-byte arena");
  // Zeroed, so a plan that reads memory before writing it is at least
  // deterministic.
  std::memset(arena.data(), 0, arenaBytes);

  size_t longest = 0;
  const auto *list = module->root().kernels();
  for (size_t i = 0; list && i < list->size(); ++i) {
    kernels.push_back(planKernel(*module, i));
    longest = std::max(longest, kernels.back().program.size());
  }
  // Registers stay below ~32 MB even for the longest program allowed.
  pieceCapacity = longest <= 4096 ? 512 : 128;
  registers.assign(longest * pieceCapacity, 0.0f);
  rowValue.assign(longest, 0.0f);
  amaxValue.assign(longest, 0.0f);

  // 32-bit BLAS: refuse now what cpu::detail::sgemm could not pass on.
  for (const GemmDesc &g : module->gemms()) {
    const bool tall = g.batch == 1 || (g.strideB == 0 && g.strideA == g.m * g.k);
    const int64_t rows = tall ? g.batch * g.m : g.m;
    if (rows > INT_MAX || g.n > INT_MAX || g.k > INT_MAX)
      return Status(MIXPREC_UNIMPLEMENTED,
                    g.name + ": dimensions beyond the CPU backend's 32-bit BLAS limit");
  }
  return okStatus();
}

Status CpuBackend::setInput(uint32_t tensor, const void *data, size_t bytes) {
  const TensorDesc &d = module->tensors()[tensor];
  if (d.isConstant() || bytes != d.bytes)
    return Status(MIXPREC_INTERNAL, "CPU backend: bad input binding for '" + d.name + "'");
  if (bytes)
    std::memcpy(arena.data() + d.offset, data, bytes);
  return okStatus();
}

Status CpuBackend::readTensor(uint32_t tensor, const void **data) {
  *data = tensorData(static_cast<int32_t>(tensor));
  return okStatus();
}

Status CpuBackend::run() {
  const auto *steps = module->root().steps();
  for (size_t i = 0; steps && i < steps->size(); ++i) {
    const schema::Step *step = steps->Get(i);
    Status s;
    switch (step->kind()) {
    case schema::StepKind::Kernel:
      s = runKernel(kernels[step->index()]);
      break;
    case schema::StepKind::Gemm:
      s = runGemm(module->gemms()[step->index()]);
      break;
    case schema::StepKind::Opaque:
      s = runOpaque(module->opaques()[step->index()]);
      break;
    }
    if (!s.ok())
      return s.withContext("step #" + std::to_string(i) + ": ");
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

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

Status CpuBackend::runKernel(const KernelPlan &plan) {
  const size_t numAccess = plan.accesses.size();
  accessData.resize(numAccess);
  std::vector<const std::vector<int64_t> *> outerStrides(numAccess);
  for (size_t a = 0; a < numAccess; ++a) {
    accessData[a] = tensorData(plan.accesses[a].tensor);
    outerStrides[a] = &plan.accesses[a].outerStrides;
  }
  for (size_t j = 0; j < plan.program.size(); ++j)
    amaxValue[j] = 0.0f;

  // Each point of the outer (non-row) dims is one row. An empty space runs
  // none (and its accesses were not bounds-checked, having none).
  std::vector<int64_t> index(plan.outerDims.size(), 0), base(numAccess, 0);
  if (!plan.empty) {
    do {
      if (Status s = runRow(plan, base); !s.ok())
        return s.withContext(plan.name + ": ");
    } while (advance(plan.outerDims, plan.outerDims.size(), index, base, outerStrides));
  }

  // An Amax is known only now; its Stores (all strides 0) write element 0.
  for (size_t j = 0; j < plan.program.size(); ++j) {
    const KernelPlan::Inst &inst = plan.program[j];
    if (inst.op != OpCode::Store || plan.program[inst.operand[0]].op != OpCode::Amax)
      continue;
    const KernelPlan::Access &access = plan.accesses[inst.access];
    float bad = 0.0f;
    if (!storeRun(access.dtype, const_cast<uint8_t *>(accessData[inst.access]), 0, 0, 1,
                  &amaxValue[inst.operand[0]], bad))
      return Status(MIXPREC_EXECUTION_ERROR,
                    plan.name + ": instruction #" + std::to_string(j) + " (Store) cannot store " +
                        std::to_string(bad) + " in the " + dtypeName(access.dtype) + " tensor '" +
                        module->tensors()[access.tensor].name + "'");
  }
  return okStatus();
}

/// Evaluates every pass of one row, in pieces of up to pieceCapacity points
/// made of whole runs of the innermost row dim, or slices of a long run.
Status CpuBackend::runRow(const KernelPlan &plan, const std::vector<int64_t> &outerBase) {
  const size_t numAccess = plan.accesses.size();
  const size_t rowRank = plan.rowDims.size();
  const int64_t runLength = rowRank ? plan.rowDims.back() : 1;
  const int64_t sliceLength = std::min(runLength, pieceCapacity);
  const size_t runRank = rowRank ? rowRank - 1 : 0;
  std::vector<const std::vector<int64_t> *> rowStrides(numAccess);
  std::vector<int64_t> innerStride(numAccess, 0);
  for (size_t a = 0; a < numAccess; ++a) {
    rowStrides[a] = &plan.accesses[a].rowStrides;
    innerStride[a] = rowRank ? plan.accesses[a].rowStrides.back() : 0;
  }

  std::vector<Segment> segments;
  std::vector<int64_t> segmentBase; // [segment * numAccess + access]
  std::vector<int64_t> runIndex(runRank), runBase(numAccess);
  for (int32_t pass = 0; pass <= plan.reductionPasses; ++pass) {
    for (size_t j = 0; j < plan.program.size(); ++j) {
      const KernelPlan::Inst &inst = plan.program[j];
      if (isRowReduction(inst.op) && inst.pass == pass)
        rowValue[j] = inst.op == OpCode::RowSum ? 0.0f : -std::numeric_limits<float>::infinity();
    }
    std::fill(runIndex.begin(), runIndex.end(), 0);
    runBase = outerBase;
    segments.clear();
    segmentBase.clear();
    int64_t count = 0;
    do {
      for (int64_t start = 0; start < runLength; start += sliceLength) {
        const int64_t length = std::min(sliceLength, runLength - start);
        if (count + length > pieceCapacity) {
          if (Status s = evalPiece(plan, pass, segments, segmentBase, count); !s.ok())
            return s;
          segments.clear();
          segmentBase.clear();
          count = 0;
        }
        segments.push_back(Segment{length, count});
        for (size_t a = 0; a < numAccess; ++a)
          segmentBase.push_back(runBase[a] + start * innerStride[a]);
        count += length;
      }
    } while (advance(plan.rowDims, runRank, runIndex, runBase, rowStrides));
    if (count > 0)
      if (Status s = evalPiece(plan, pass, segments, segmentBase, count); !s.ok())
        return s;
  }
  return okStatus();
}

/// Runs the instructions of pass `pass` over `count` points.
Status CpuBackend::evalPiece(const KernelPlan &plan, int32_t pass,
                             const std::vector<Segment> &segments,
                             const std::vector<int64_t> &segmentBase, int64_t count) {
  const std::vector<uint8_t> &need = plan.needed[pass];
  const size_t numAccess = plan.accesses.size();
  const int64_t n = count;
  auto reg = [&](int32_t j) { return registers.data() + static_cast<size_t>(j) * pieceCapacity; };

  for (size_t jj = 0; jj < plan.program.size(); ++jj) {
    if (!need[jj])
      continue;
    const int32_t j = static_cast<int32_t>(jj);
    const KernelPlan::Inst &inst = plan.program[j];
    float *r = reg(j);
    const float *a = reg(inst.operand[0]);
    const float *b = reg(inst.operand[1]);
    const float *c = reg(inst.operand[2]);
    switch (inst.op) {
    case OpCode::Load: {
      const KernelPlan::Access &access = plan.accesses[inst.access];
      const int64_t stride = access.rowStrides.empty() ? 0 : access.rowStrides.back();
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
      for (size_t s = 0; s < segments.size(); ++s) {
        float bad = 0.0f;
        if (!storeRun(access.dtype, const_cast<uint8_t *>(accessData[inst.access]),
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
    case OpCode::Add:
      for (int64_t i = 0; i < n; ++i)
        r[i] = a[i] + b[i];
      break;
    case OpCode::Sub:
      for (int64_t i = 0; i < n; ++i)
        r[i] = a[i] - b[i];
      break;
    case OpCode::Mul:
      for (int64_t i = 0; i < n; ++i)
        r[i] = a[i] * b[i];
      break;
    case OpCode::Div:
      for (int64_t i = 0; i < n; ++i)
        r[i] = a[i] / b[i];
      break;
    case OpCode::Pow:
      for (int64_t i = 0; i < n; ++i)
        r[i] = std::pow(a[i], b[i]);
      break;
    case OpCode::Max: // NaN wins, as cpu::binary's Max (numpy.maximum)
      for (int64_t i = 0; i < n; ++i)
        r[i] = (a[i] > b[i] || a[i] != a[i]) ? a[i] : b[i];
      break;
    case OpCode::Min:
      for (int64_t i = 0; i < n; ++i)
        r[i] = (a[i] < b[i] || a[i] != a[i]) ? a[i] : b[i];
      break;
    case OpCode::Neg:
      cpu::unary(cpu::UnaryOp::Neg, a, r, n);
      break;
    case OpCode::Relu:
      cpu::unary(cpu::UnaryOp::Relu, a, r, n);
      break;
    case OpCode::GeluErf:
      cpu::unary(cpu::UnaryOp::GeluErf, a, r, n);
      break;
    case OpCode::GeluTanh:
      cpu::unary(cpu::UnaryOp::GeluTanh, a, r, n);
      break;
    case OpCode::Tanh:
      cpu::unary(cpu::UnaryOp::Tanh, a, r, n);
      break;
    case OpCode::Sigmoid:
      cpu::unary(cpu::UnaryOp::Sigmoid, a, r, n);
      break;
    case OpCode::Exp:
      cpu::unary(cpu::UnaryOp::Exp, a, r, n);
      break;
    case OpCode::Log:
      cpu::unary(cpu::UnaryOp::Log, a, r, n);
      break;
    case OpCode::Sqrt:
      cpu::unary(cpu::UnaryOp::Sqrt, a, r, n);
      break;
    case OpCode::Rsqrt:
      cpu::unary(cpu::UnaryOp::Rsqrt, a, r, n);
      break;
    case OpCode::Erf:
      cpu::unary(cpu::UnaryOp::Erf, a, r, n);
      break;
    case OpCode::Reciprocal:
      cpu::unary(cpu::UnaryOp::Reciprocal, a, r, n);
      break;
    case OpCode::Cast:
      switch (inst.dtype) {
      case DType::F32:
        std::copy(a, a + n, r);
        break;
      case DType::I64:
      case DType::I32:
        // Registers stay FP32: the integer value, still a float (a Store to
        // an integer tensor checks its range).
        for (int64_t i = 0; i < n; ++i)
          r[i] = std::trunc(a[i]);
        break;
      case DType::Bool:
        for (int64_t i = 0; i < n; ++i)
          r[i] = a[i] != 0.0f ? 1.0f : 0.0f;
        break;
      default:
        num::roundArray(formatOf(inst.dtype), a, r, n, storeOptions(inst.dtype));
        break;
      }
      break;
    case OpCode::Select:
      for (int64_t i = 0; i < n; ++i)
        r[i] = a[i] != 0.0f ? b[i] : c[i];
      break;
    case OpCode::Quantize: {
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
    case OpCode::RowMax:
      if (inst.pass != pass) {
        std::fill(r, r + n, rowValue[j]);
        break;
      }
      // Sequential FP32 accumulation, in row order across pieces.
      if (inst.op == OpCode::RowSum) {
        float acc = rowValue[j];
        for (int64_t i = 0; i < n; ++i)
          acc += a[i];
        rowValue[j] = acc;
      } else {
        float acc = rowValue[j];
        for (int64_t i = 0; i < n; ++i)
          acc = (a[i] > acc || a[i] != a[i]) ? a[i] : acc;
        rowValue[j] = acc;
      }
      break;
    case OpCode::Amax: {
      // NaN propagates, as the interpreter's amax does.
      float acc = amaxValue[j];
      for (int64_t i = 0; i < n; ++i)
        acc = std::isnan(a[i]) || std::isnan(acc) ? NAN : std::max(acc, std::fabs(a[i]));
      amaxValue[j] = acc;
      break;
    }
    }
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

/// The tensor as FP32: in place for f32 data, else decoded into `scratch`.
/// Null only when scratch memory runs out.
const float *CpuBackend::floatOperand(int32_t tensor, Scratch &s) {
  const TensorDesc &d = module->tensors()[tensor];
  const uint8_t *data = tensorData(tensor);
  if (d.dtype == DType::F32)
    return reinterpret_cast<const float *>(data);
  float *out = s.floats(d.elements);
  if (out)
    loadRun(d.dtype, data, 0, 1, d.elements, out);
  return out;
}

Status CpuBackend::runGemm(const GemmDesc &g) {
  const int64_t mn = g.m * g.n;
  if (mn == 0)
    return okStatus();
  const TensorDesc &outDesc = module->tensors()[g.out];
  auto operand = [&](int32_t t, Scratch &s) -> const float * {
    const float *p = floatOperand(t, s);
    if (!p || !g.tf32)
      return p;
    // TF32 rounds the operands as the tensor cores read them.
    const TensorDesc &d = module->tensors()[t];
    float *copy = d.dtype == DType::F32 ? s.floats(d.elements) : const_cast<float *>(p);
    if (!copy)
      return nullptr;
    for (int64_t i = 0; i < d.elements; ++i)
      copy[i] = num::roundToTf32(p[i]);
    return copy;
  };
  const float *a = operand(g.a, scratch[0]);
  const float *b = operand(g.b, scratch[1]);
  float *acc = scratch[2].floats(g.batch * mn);
  if (!a || !b || !acc)
    return outOfMemory(g.name, (g.batch * mn) * 4);

  const bool scaled = g.aScale != -1;
  const float *bias = nullptr;
  if (g.bias != -1 && !(bias = floatOperand(g.bias, scratch[3])))
    return outOfMemory(g.name, module->tensors()[g.bias].elements * 4);
  float beta = 0.0f;
  if (bias && !scaled) {
    // As cpu::linear: prefill with the broadcast bias, GEMM adds onto it.
    cpu::expand(bias, module->tensors()[g.bias].shape, acc, g.biasTarget);
    beta = 1.0f;
  }
  const int64_t ldb = g.transB ? g.k : g.n;
  if (g.batch == 1 || (g.strideB == 0 && g.strideA == g.m * g.k)) {
    // One tall GEMM, as cpu::linear and cpu::matmul call it.
    cpu::detail::sgemm(g.transB, g.batch * g.m, g.n, g.k, a, g.k, b, ldb, acc, g.n, beta);
  } else {
    for (int64_t i = 0; i < g.batch; ++i)
      cpu::detail::sgemm(g.transB, g.m, g.n, g.k, a + i * g.strideA, g.k, b + i * g.strideB,
                         ldb, acc + i * mn, g.n, beta);
  }
  const int64_t total = g.batch * mn;
  if (scaled) {
    const float scaleA = *reinterpret_cast<const float *>(tensorData(g.aScale));
    const float scaleB = *reinterpret_cast<const float *>(tensorData(g.bScale));
    const float factor = (1.0f / scaleA) * (1.0f / scaleB);
    for (int64_t i = 0; i < total; ++i)
      acc[i] *= factor;
    if (bias)
      cpu::binary(cpu::BinaryOp::Add, acc, g.biasTarget, bias, module->tensors()[g.bias].shape,
                  acc, g.biasTarget);
  }
  if (g.relu)
    cpu::unary(cpu::UnaryOp::Relu, acc, acc, total);
  if (g.gelu) // cuBLASLt's GELU epilogue is the tanh approximation
    cpu::unary(cpu::UnaryOp::GeluTanh, acc, acc, total);
  uint8_t *out = tensorData(g.out);
  for (int64_t i = 0; i < g.batch; ++i) {
    float bad = 0.0f;
    storeRun(outDesc.dtype, out, i * g.strideOut, 1, mn, acc + i * mn, bad); // float dtype
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Opaque routines
//===----------------------------------------------------------------------===//

Status CpuBackend::storeFloats(const OpaqueOp &op, const float *values) {
  const TensorDesc &d = module->tensors()[op.output];
  float bad = 0.0f;
  storeRun(d.dtype, tensorData(op.output), 0, 1, d.elements, values, bad); // float dtype
  return okStatus();
}

Status CpuBackend::runOpaque(const OpaqueOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &y = tensors[op.output];
  auto shapeOf = [&](size_t i) -> const cpu::Shape & { return tensors[op.inputs[i]].shape; };
  auto present = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] >= 0; };
  auto input = [&](size_t i) { return floatOperand(op.inputs[i], scratch[i]); };
  const size_t elemSize = dtypeSize(y.dtype);

  // Data movement on raw elements; through scratch if the plan overlaps
  // the output with an input (the kernels need distinct buffers).
  if (op.kind == OpaqueKind::Transpose || op.kind == OpaqueKind::Slice ||
      op.kind == OpaqueKind::Concat || op.kind == OpaqueKind::Gather) {
    bool alias = false;
    for (int32_t t : op.inputs)
      alias |= overlaps(t, op.output);
    uint8_t *dst = tensorData(op.output);
    if (alias && !(dst = static_cast<uint8_t *>(scratch[5].bytes(y.bytes))))
      return outOfMemory(op.name, y.bytes);
    const void *x = tensorData(op.inputs[0]);
    switch (op.kind) {
    case OpaqueKind::Transpose:
      cpu::detail::transposeRaw(x, shapeOf(0), op.perm, dst, elemSize);
      break;
    case OpaqueKind::Slice:
      cpu::detail::sliceRaw(x, shapeOf(0), op.starts, op.steps, y.shape, dst, elemSize);
      break;
    case OpaqueKind::Concat: {
      std::vector<const void *> ins;
      std::vector<cpu::Shape> shapes;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        ins.push_back(tensorData(op.inputs[i]));
        shapes.push_back(shapeOf(i));
      }
      cpu::detail::concatRaw(ins, shapes, op.axis, dst, elemSize);
      break;
    }
    default: {
      const TensorDesc &idx = tensors[op.inputs[1]];
      const int64_t *indices = reinterpret_cast<const int64_t *>(tensorData(op.inputs[1]));
      if (idx.dtype == DType::I32) {
        int64_t *wide = static_cast<int64_t *>(scratch[1].bytes(idx.elements * 8));
        if (!wide)
          return outOfMemory(op.name, idx.elements * 8);
        const int32_t *narrow = reinterpret_cast<const int32_t *>(tensorData(op.inputs[1]));
        for (int64_t i = 0; i < idx.elements; ++i)
          wide[i] = narrow[i];
        indices = wide;
      }
      const int64_t dim = shapeOf(0)[op.axis];
      if (!cpu::detail::gatherRaw(x, shapeOf(0), indices, idx.shape, op.axis, dst, elemSize)) {
        int64_t badIndex = 0;
        for (int64_t i = 0; i < idx.elements; ++i)
          if (indices[i] < -dim || indices[i] >= dim) {
            badIndex = indices[i];
            break;
          }
        return Status(MIXPREC_EXECUTION_ERROR,
                      op.name + ": index " + std::to_string(badIndex) +
                          " is out of range for dim " + std::to_string(op.axis) + " of size " +
                          std::to_string(dim));
      }
      break;
    }
    }
    if (alias)
      std::memcpy(tensorData(op.output), dst, y.bytes);
    return okStatus();
  }

  // Float routines: FP32 in, FP32 out, one rounding to the output dtype.
  float *result = scratch[5].floats(y.elements);
  if (!result)
    return outOfMemory(op.name, y.elements * 4);
  const float *x = input(0);
  if (!x)
    return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
  switch (op.kind) {
  case OpaqueKind::Conv2d: {
    const float *w = input(1);
    const float *bias = present(2) ? input(2) : nullptr;
    if (!w || (present(2) && !bias))
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    if (op.tf32) {
      // As the interpreter's TF32 GEMM operands: x and w, not the bias.
      float *xr = scratch[0].floats(tensors[op.inputs[0]].elements);
      float *wr = scratch[1].floats(tensors[op.inputs[1]].elements);
      if (!xr || !wr)
        return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
      if (xr != x)
        std::copy(x, x + tensors[op.inputs[0]].elements, xr);
      if (wr != w)
        std::copy(w, w + tensors[op.inputs[1]].elements, wr);
      for (int64_t i = 0; i < tensors[op.inputs[0]].elements; ++i)
        xr[i] = num::roundToTf32(xr[i]);
      for (int64_t i = 0; i < tensors[op.inputs[1]].elements; ++i)
        wr[i] = num::roundToTf32(wr[i]);
      x = xr;
      w = wr;
    }
    cpu::conv2d(x, shapeOf(0), w, shapeOf(1), bias, op.strides, op.pads, op.dilations,
                op.groups, result, y.shape);
    break;
  }
  case OpaqueKind::MaxPool2d:
    cpu::maxPool2d(x, shapeOf(0), op.kernel, op.strides, op.pads, op.dilations, result,
                   y.shape);
    break;
  case OpaqueKind::AvgPool2d:
    cpu::avgPool2d(x, shapeOf(0), op.kernel, op.strides, op.pads, op.countIncludePad, result,
                   y.shape, op.dilations);
    break;
  case OpaqueKind::Softmax:
    cpu::softmax(x, shapeOf(0), op.axis, result);
    break;
  case OpaqueKind::LogSoftmax:
    cpu::logSoftmax(x, shapeOf(0), op.axis, result);
    break;
  case OpaqueKind::LayerNorm: {
    const cpu::Shape &s = shapeOf(0);
    int64_t normalized = 1;
    for (size_t d = op.axis; d < s.size(); ++d)
      normalized *= s[d];
    const float *scale = present(1) ? input(1) : nullptr;
    const float *bias = present(2) ? input(2) : nullptr;
    if (!present(1)) {
      // No scale: ones, as the interpreter passes.
      float *ones = scratch[1].floats(normalized);
      if (!ones)
        return outOfMemory(op.name, normalized * 4);
      std::fill(ones, ones + normalized, 1.0f);
      scale = ones;
    }
    if (!scale || (present(2) && !bias))
      return outOfMemory(op.name, normalized * 4);
    cpu::layerNorm(x, s, op.axis, scale, bias, op.epsilon, result);
    break;
  }
  case OpaqueKind::RmsNorm: {
    const float *scale = present(1) ? input(1) : nullptr;
    if (present(1) && !scale)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    cpu::rmsNorm(x, shapeOf(0), op.axis, scale, op.epsilon, result);
    break;
  }
  case OpaqueKind::BatchNorm: {
    const float *p[4];
    for (size_t i = 0; i < 4; ++i)
      if (!(p[i] = input(i + 1)))
        return outOfMemory(op.name, tensors[op.inputs[i + 1]].elements * 4);
    cpu::batchNormInference(x, shapeOf(0), p[0], p[1], p[2], p[3], op.epsilon, result);
    break;
  }
  case OpaqueKind::ReduceSum:
  case OpaqueKind::ReduceMean:
  case OpaqueKind::ReduceMax: {
    const cpu::ReduceOp kind = op.kind == OpaqueKind::ReduceSum    ? cpu::ReduceOp::Sum
                               : op.kind == OpaqueKind::ReduceMean ? cpu::ReduceOp::Mean
                                                                   : cpu::ReduceOp::Max;
    cpu::reduce(kind, x, shapeOf(0), op.axes, op.keepDims, result);
    break;
  }
  case OpaqueKind::Fp8Scale: {
    // The same function as the compiler and the interpreter.
    result[0] = num::fp8Scale(formatOf(op.fp8Format), x[0], op.margin);
    break;
  }
  case OpaqueKind::Matmul: {
    const float *b = input(1);
    if (!b)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    if (op.tf32) {
      float *ar = scratch[0].floats(tensors[op.inputs[0]].elements);
      float *br = scratch[1].floats(tensors[op.inputs[1]].elements);
      if (!ar || !br)
        return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
      for (int64_t i = 0; i < tensors[op.inputs[0]].elements; ++i)
        ar[i] = num::roundToTf32(x[i]);
      for (int64_t i = 0; i < tensors[op.inputs[1]].elements; ++i)
        br[i] = num::roundToTf32(b[i]);
      x = ar;
      b = br;
    }
    cpu::matmul(x, shapeOf(0), b, shapeOf(1), result, y.shape);
    break;
  }
  default:
    return Status(MIXPREC_INTERNAL, op.name + ": not a float routine");
  }
  return storeFloats(op, result);
}

} // namespace

Status createCpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options,
                        std::unique_ptr<Backend> &out) {
  std::unique_ptr<CpuBackend> backend(new CpuBackend(std::move(module), options));
  if (Status s = backend->prepare(); !s.ok())
    return s;
  out = std::move(backend);
  return okStatus();
}

} // namespace mixprec::runtime
