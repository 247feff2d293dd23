//===- CpuKernelPlan.cpp - a kernel program prepared for the CPU ----------===//
//
// Size-1 dims dropped, adjacent dims every access walks as one run merged,
// and the evaluation passes of nested row reductions worked out, once per
// session, so that CpuKernelRun.cpp only walks and evaluates.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/format/KernelProgram.h"
#include "runtime/kernels/Kernels.h"

#include <algorithm>
#include <limits>

namespace mixprec::runtime {

using schema::OpCode;

/// Merges adjacent dims of `dims` (one group) that every access walks as a
/// single run; strides[a] are aligned with dims. Size-1 dims are dropped.
static void mergeDims(std::vector<int64_t> &dims, std::vector<std::vector<int64_t>> &strides) {
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

/// Whether a walk of `dims` at `strides` visits each element at most once:
/// with the dims sorted by stride, each stride passes the farthest element
/// the smaller ones reach.
static bool injective(const std::vector<int64_t> &dims, const std::vector<int64_t> &strides) {
  std::vector<std::pair<int64_t, int64_t>> walk; // (|stride|, extent)
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] <= 1)
      continue;
    if (strides[d] == 0)
      return false;
    walk.emplace_back(strides[d] < 0 ? -strides[d] : strides[d], dims[d]);
  }
  std::sort(walk.begin(), walk.end());
  int64_t reach = 0, span = 0;
  for (const auto &[stride, extent] : walk) {
    // Overflowing offsets (a forged module's strides): not known to be
    // distinct, so not split.
    if (stride <= reach || __builtin_mul_overflow(stride, extent - 1, &span) ||
        __builtin_add_overflow(reach, span, &reach))
      return false;
  }
  return true;
}

/// KernelPlan::parallel for a merged plan: each Store (but an Amax's,
/// written once after the run) writing distinct elements per unit, and any access whose tensor
/// shares bytes with a Store's the same tensor walked the same way, so a
/// point reads only the elements it writes itself.
static bool parallelSafe(const LoadedModule &module, const KernelPlan &plan) {
  // With row reductions a row is one unit, on one thread: a Store that does
  // not walk a row dim (a row's sum, say) writes its element once per point
  // of the row, which is fine; distinct rows must write distinct elements.
  const bool rowUnits = plan.reductionPasses > 0;
  auto walk = [&](const KernelPlan::Access &a) {
    std::vector<int64_t> dims = plan.outerDims, strides = a.outerStrides;
    for (size_t d = 0; d < plan.rowDims.size(); ++d)
      if (!rowUnits || a.rowStrides[d] != 0) {
        dims.push_back(plan.rowDims[d]);
        strides.push_back(a.rowStrides[d]);
      }
    return std::make_pair(dims, strides);
  };
  auto sharesBytes = [&](int32_t x, int32_t y) {
    const TensorDesc &a = module.tensors()[x], &b = module.tensors()[y];
    if (a.isConstant() || b.isConstant() || a.bytes == 0 || b.bytes == 0)
      return false;
    return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
  };
  for (const KernelPlan::Inst &store : plan.program) {
    if (store.op != OpCode::Store || plan.program[store.operand[0]].op == OpCode::Amax)
      continue;
    const KernelPlan::Access &s = plan.accesses[store.access];
    const auto [dims, strides] = walk(s);
    if (!injective(dims, strides))
      return false;
    for (const KernelPlan::Access &other : plan.accesses) {
      if (&other == &s || !sharesBytes(s.tensor, other.tensor))
        continue;
      if (other.tensor != s.tensor || other.outerStrides != s.outerStrides ||
          other.rowStrides != s.rowStrides)
        return false;
    }
  }
  return true;
}

bool coversOnce(const KernelPlan &plan, const KernelPlan::Access &a, int64_t elements) {
  if (plan.empty || a.outerStrides.size() != plan.outerDims.size() ||
      a.rowStrides.size() != plan.rowDims.size())
    return false;
  std::vector<int64_t> dims = plan.outerDims, strides = a.outerStrides;
  dims.insert(dims.end(), plan.rowDims.begin(), plan.rowDims.end());
  strides.insert(strides.end(), a.rowStrides.begin(), a.rowStrides.end());
  int64_t points = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(points, d, &points))
      return false;
  return points == elements && injective(dims, strides);
}

bool allStridesZero(const KernelPlan::Access &a) {
  auto zero = [](int64_t s) { return s == 0; };
  return std::all_of(a.outerStrides.begin(), a.outerStrides.end(), zero) &&
         std::all_of(a.rowStrides.begin(), a.rowStrides.end(), zero);
}

void addAmax(KernelPlan &plan, int32_t store, int32_t tensor) {
  KernelPlan::Access access;
  access.tensor = tensor;
  access.outerStrides.assign(plan.outerDims.size(), 0);
  access.rowStrides.assign(plan.rowDims.size(), 0);
  plan.accesses.push_back(access);
  KernelPlan::Inst amax;
  amax.op = OpCode::Amax;
  amax.operand[0] = plan.program[store].operand[0];
  plan.program.push_back(amax);
  KernelPlan::Inst out;
  out.op = OpCode::Store;
  out.operand[0] = static_cast<int32_t>(plan.program.size() - 1);
  out.access = static_cast<int32_t>(plan.accesses.size() - 1);
  plan.program.push_back(out);
  // Taken in the last pass (with the Stores), from the stored value's
  // register; the Store writes it once the kernel has run.
  for (std::vector<uint8_t> &need : plan.needed)
    need.resize(plan.program.size(), 0);
  plan.needed.back()[plan.program.size() - 2] = 1;
  plan.needed.back()[plan.program.size() - 1] = 1;
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

  // The values the same at every point of a row (every instruction but
  // Store and Amax is a pure function of its operands).
  for (size_t j = 0; j < length; ++j) {
    KernelPlan::Inst &inst = plan.program[j];
    switch (inst.op) {
    case OpCode::Store:
    case OpCode::Amax:
      break;
    case OpCode::Const:
    case OpCode::RowSum: // (read only in the passes after its own)
    case OpCode::RowMax:
      inst.uniform = true;
      break;
    case OpCode::Load: {
      const std::vector<int64_t> &strides = plan.accesses[inst.access].rowStrides;
      inst.uniform = std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 0; });
      break;
    }
    default: {
      inst.uniform = true;
      for (int o = 0; o < operandCount(inst.op); ++o)
        inst.uniform = inst.uniform && plan.program[inst.operand[o]].uniform;
      break;
    }
    }
  }

  // FP32 Loads whose tensor no Store of the kernel writes (no bytes in
  // common) are read in place.
  for (KernelPlan::Inst &load : plan.program) {
    if (load.op != OpCode::Load || plan.accesses[load.access].dtype != schema::DType::F32)
      continue;
    const TensorDesc &loaded = module.tensors()[plan.accesses[load.access].tensor];
    load.direct = std::none_of(plan.program.begin(), plan.program.end(), [&](const auto &store) {
      return store.op == OpCode::Store &&
             sharesBytes(loaded, module.tensors()[plan.accesses[store.access].tensor]);
    });
  }

  // Uniform values read at every point are spread over their rows.
  for (const KernelPlan::Inst &user : plan.program)
    for (int o = 0; o < operandCount(user.op); ++o)
      if (!user.uniform || isRowReduction(user.op))
        plan.program[user.operand[o]].spread = true;

  // A Quantize stored as it is, and used by nothing else, is rounded by its
  // Store's encode alone (both saturate: the same bytes, one pass fewer).
  std::vector<int32_t> uses(length, 0);
  for (size_t j = 0; j < length; ++j)
    for (int o = 0; o < operandCount(plan.program[j].op); ++o)
      ++uses[plan.program[j].operand[o]];
  for (KernelPlan::Inst &store : plan.program) {
    if (store.op != OpCode::Store)
      continue;
    KernelPlan::Inst &value = plan.program[store.operand[0]];
    value.scaleOnly = value.op == OpCode::Quantize && uses[store.operand[0]] == 1 &&
                      value.dtype == plan.accesses[store.access].dtype;
  }

  // Such a Store of values scaled by one scale for the whole kernel (a
  // Load with every stride 0), both walking their innermost dim with stride
  // 1: scaled, rounded and written in one pass (numerics::quantizeFp8Store),
  // from the Quantize operand's register, or straight from that operand's
  // Load where nothing else reads it and its tensor shares no bytes with
  // the Store's. The Quantize (and that Load) never run, nor the scale's
  // Load where nothing else reads it.
  auto innermostUnit = [&](const KernelPlan::Access &a) {
    return !a.rowStrides.empty() && a.rowStrides.back() == 1;
  };
  // MIXPREC_CPU_QUANTIZE_STORE=0 turns it off (tests compare the two).
  const bool fuseQuantizes = !turnedOff("MIXPREC_CPU_QUANTIZE_STORE");
  for (KernelPlan::Inst &store : plan.program) {
    if (!fuseQuantizes || store.op != OpCode::Store || !plan.program[store.operand[0]].scaleOnly ||
        plan.program[store.operand[0]].uniform || !innermostUnit(plan.accesses[store.access]))
      continue;
    const KernelPlan::Inst &quantize = plan.program[store.operand[0]];
    const KernelPlan::Inst &scale = plan.program[quantize.operand[1]];
    if (scale.op != OpCode::Load || !allStridesZero(plan.accesses[scale.access]))
      continue;
    store.fusedQuantize = true;
    store.scaleAccess = scale.access;
    const KernelPlan::Inst &value = plan.program[quantize.operand[0]];
    if (value.op != OpCode::Load || uses[quantize.operand[0]] != 1)
      continue;
    const KernelPlan::Access &loaded = plan.accesses[value.access];
    const schema::DType dtype = loaded.dtype;
    if ((dtype == schema::DType::F32 || dtype == schema::DType::BF16 ||
         dtype == schema::DType::F16) &&
        innermostUnit(loaded) &&
        !sharesBytes(module.tensors()[loaded.tensor],
                     module.tensors()[plan.accesses[store.access].tensor]))
      store.quantizeLoad = value.access;
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
      if (inst.fusedQuantize) { // reads the Quantize's operand alone, or memory
        if (inst.quantizeLoad < 0)
          need[plan.program[inst.operand[0]].operand[0]] = 1;
        continue;
      }
      const int count = operandCount(inst.op);
      for (int o = 0; o < count; ++o)
        need[inst.operand[o]] = 1;
    }
  }
  plan.parallel = parallelSafe(module, plan);
  plan.pointCost = 0;
  for (const KernelPlan::Inst &inst : plan.program) {
    switch (inst.op) {
    case OpCode::Exp:
    case OpCode::Log:
    case OpCode::Tanh:
    case OpCode::Sigmoid:
    case OpCode::Erf:
    case OpCode::GeluErf:
    case OpCode::GeluTanh:
    case OpCode::Pow:
    case OpCode::Sin:
    case OpCode::Cos:
    case OpCode::Tan:
    case OpCode::Atan:
    case OpCode::Softplus:
    case OpCode::Mish:
    case OpCode::Elu:
    case OpCode::Selu:
    case OpCode::Fmod:
      plan.pointCost += 8;
      break;
    default:
      plan.pointCost += 1;
    }
  }
  return plan;
}

} // namespace mixprec::runtime
