//===- CpuKernelRun.cpp - the expression-program interpreter --------------===//
//
// A kernel runs row by row over its outer dims; each row is evaluated in
// pieces of up to pieceCapacity points held in registers (one array per
// instruction), one pass per level of nested row reduction.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/CpuBackend.h"

#include "runtime/format/KernelProgram.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ScalarFunctions.h"

#include <cmath>
#include <limits>

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

} // namespace

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

/// Runs instruction `inst` over `n` points of its operand registers `a`,
/// `b`, `c` into `r` when it is a comparison, a logical op or a scalar
/// function of the scalar table; else leaves `r` alone.
static void evalMapped(const KernelPlan::Inst &inst, const float *a, const float *b,
                       const float *c, float *r, int64_t n) {
  switch (inst.op) {
  case OpCode::Equal:
    map2([](float x, float y) { return scalar::truth(x == y); }, a, b, r, n);
    break;
  case OpCode::Less:
    map2([](float x, float y) { return scalar::truth(x < y); }, a, b, r, n);
    break;
  case OpCode::LessOrEqual:
    map2([](float x, float y) { return scalar::truth(x <= y); }, a, b, r, n);
    break;
  case OpCode::Greater:
    map2([](float x, float y) { return scalar::truth(x > y); }, a, b, r, n);
    break;
  case OpCode::GreaterOrEqual:
    map2([](float x, float y) { return scalar::truth(x >= y); }, a, b, r, n);
    break;
  case OpCode::And:
    map2([](float x, float y) { return scalar::truth(x != 0.0f && y != 0.0f); }, a, b, r, n);
    break;
  case OpCode::Or:
    map2([](float x, float y) { return scalar::truth(x != 0.0f || y != 0.0f); }, a, b, r, n);
    break;
  case OpCode::Xor:
    map2([](float x, float y) { return scalar::truth((x != 0.0f) != (y != 0.0f)); }, a, b, r,
         n);
    break;
  case OpCode::Not:
    map1([](float x) { return scalar::truth(x == 0.0f); }, a, r, n);
    break;
  case OpCode::IsNaN:
    map1([](float x) { return scalar::truth(std::isnan(x)); }, a, r, n);
    break;
  case OpCode::IsInf:
    map1([](float x) { return scalar::truth(std::isinf(x)); }, a, r, n);
    break;
  case OpCode::IsPosInf:
    map1([](float x) { return scalar::truth(std::isinf(x) && x > 0.0f); }, a, r, n);
    break;
  case OpCode::IsNegInf:
    map1([](float x) { return scalar::truth(std::isinf(x) && x < 0.0f); }, a, r, n);
    break;
  case OpCode::Sin:
    map1([](float x) { return std::sin(x); }, a, r, n);
    break;
  case OpCode::Cos:
    map1([](float x) { return std::cos(x); }, a, r, n);
    break;
  case OpCode::Abs:
    map1([](float x) { return std::fabs(x); }, a, r, n);
    break;
  case OpCode::Sign:
    map1(scalar::sign<float>, a, r, n);
    break;
  case OpCode::Floor:
    map1([](float x) { return std::floor(x); }, a, r, n);
    break;
  case OpCode::Ceil:
    map1([](float x) { return std::ceil(x); }, a, r, n);
    break;
  case OpCode::Round:
    map1(scalar::roundHalfEven<float>, a, r, n);
    break;
  case OpCode::Fmod:
    map2([](float x, float y) { return std::fmod(x, y); }, a, b, r, n);
    break;
  case OpCode::Mod:
    map2(scalar::floorMod<float>, a, b, r, n);
    break;
  case OpCode::Softplus:
    map1(scalar::softplus<float>, a, r, n);
    break;
  case OpCode::Mish:
    map1(scalar::mish<float>, a, r, n);
    break;
  case OpCode::HardSwish:
    map1(scalar::hardSwish<float>, a, r, n);
    break;
  case OpCode::PRelu:
    map2(scalar::prelu<float>, a, b, r, n);
    break;
  case OpCode::Elu:
    map2(scalar::elu<float>, a, b, r, n);
    break;
  case OpCode::HardSigmoid:
    map3(scalar::hardSigmoid<float>, a, b, c, r, n);
    break;
  case OpCode::Selu:
    map3(scalar::selu<float>, a, b, c, r, n);
    break;
  default:
    break;
  }
}

/// Runs instruction `inst` over `n` points of its operand registers `a`,
/// `b`, `c` into `r` when it is elementwise (evalPiece runs the memory,
/// quantization and reduction instructions); else leaves `r` alone.
static void evalElementwise(const KernelPlan::Inst &inst, const float *a, const float *b,
                            const float *c, float *r, int64_t n) {
  switch (inst.op) {
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
    roundRegisters(inst.dtype, a, r, n);
    break;
  case OpCode::Select:
    for (int64_t i = 0; i < n; ++i)
      r[i] = a[i] != 0.0f ? b[i] : c[i];
    break;
  default:
    evalMapped(inst, a, b, c, r, n);
    break;
  }
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
    default:
      evalElementwise(inst, a, b, c, r, n);
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
    if (roundsResult(inst, pass))
      roundRegisters(inst.dtype, r, r, n);
  }
  return okStatus();
}

} // namespace mixprec::runtime
