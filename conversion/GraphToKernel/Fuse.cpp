//===- Fuse.cpp - --mp-fuse ------------------------------------------------===//
#include "conversion/GraphToKernel/KernelUtils.h"
#include "passes/Passes.h"
#include "passes/Precision/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

enum class FuseKind { Elementwise, Reduction, Gemm, None };

/// How an op takes part in fusion.
FuseKind fuseKindOf(Operation *op) {
  if (isElementwiseKernelOp(op))
    return FuseKind::Elementwise;
  if (isReductionOp(op))
    return FuseKind::Reduction;
  if (isGemmOp(op))
    return FuseKind::Gemm;
  return FuseKind::None;
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// The shape a kernel built around `op` iterates over: a reduction's input,
/// an element-wise op's result.
ArrayRef<int64_t> iterationShape(Operation *op) {
  return fuseKindOf(op) == FuseKind::Reduction ? shapeOf(op->getOperand(0))
                                               : shapeOf(op->getResult(0));
}

/// Inside a GEMM fusion, states in the IR what cuBLASLt computes: the GEMM
/// result, bias and activation stay FP32 and one cast gives the output
/// dtype (the unfused graph rounded the GEMM result first). A bias add
/// after a GEMM with a 2-D weight becomes the GEMM's own bias, which the
/// interpreter and the runtime both add by prefilling the accumulator.
/// Returns the value to store.
Value keepEpilogueInF32(Block *block, Value out) {
  auto outTensorType = cast<RankedTensorType>(out.getType());
  Type outType = outTensorType.getElementType();
  OpBuilder b(block->getParentOp()->getContext());
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v, Operation *before) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType().isF32())
      return v;
    b.setInsertionPoint(before);
    return b.create<graph::CastOp>(v.getLoc(), t.clone(f32), v);
  };
  auto retype = [&](Operation *op) {
    op->getResult(0).setType(cast<RankedTensorType>(op->getResult(0).getType()).clone(f32));
  };
  SmallVector<Operation *> ops;
  for (Operation &op : *block)
    ops.push_back(&op);
  Operation *gemm = ops.front();
  Operation *last = gemm;
  for (Operation *op : ops) {
    if (op == gemm) {
      retype(op);
      // A GEMM's own bias has the output's element type.
      if (OpOperand *bias = cast<graph::GemmOpInterface>(op).getBiasOperand())
        bias->set(toF32(bias->get(), op));
    } else if (auto add = dyn_cast<graph::AddOp>(op)) {
      Value bias = add.getLhs() == last->getResult(0) ? add.getRhs() : add.getLhs();
      Value biasF32 = toF32(bias, op);
      b.setInsertionPoint(op);
      auto outTy = cast<RankedTensorType>(op->getResult(0).getType()).clone(f32);
      auto lastGemm = dyn_cast<graph::GemmOpInterface>(last);
      Operation *fused = lastGemm ? lastGemm.buildWithBias(b, biasF32, outTy) : nullptr;
      if (fused) {
        for (NamedAttribute a : last->getDiscardableAttrs())
          fused->setAttr(a.getName(), a.getValue());
        op->getResult(0).replaceAllUsesWith(fused->getResult(0));
        op->erase();
        last->erase();
        last = fused;
        continue;
      }
      add->setOperand(add.getLhs() == bias ? 0 : 1, biasF32);
      retype(op);
    } else {
      retype(op); // the activation
    }
    last = op;
  }
  if (outType.isF32())
    return last->getResult(0);
  b.setInsertionPointAfter(last);
  return b.create<graph::CastOp>(last->getLoc(), outTensorType, last->getResult(0));
}

/// A fused kernel holds at most this many ops. Each element-wise op adds at
/// most five instructions to the kernel's program (the op, three operand
/// loads or immediates, one store) and the one row reduction at most 18, so
/// a kernel stays far below the 65536 instructions the runtime accepts
/// (runtime::kMaxProgramLength); longer chains are split into kernels of
/// this many ops. Real graphs never come close.
constexpr size_t kMaxKernelOps = 1024;

/// One group of ops that will run as one kernel. Merging moves the ops of
/// one group into another and leaves the emptied group pointing to it
/// (`mergedInto`), so a merge costs the smaller group's size and an op's
/// group is found by following those pointers (Fuser::find).
struct Group {
  FuseKind kind;
  SmallVector<int64_t, 4> shape; ///< iteration shape (element-wise/reduction)
  /// Unordered, except in a GEMM group: the GEMM first, then its epilogue.
  /// (std::vector: swapping two lists must not copy them.)
  std::vector<Operation *> ops;
  int reductions = 0;
  bool hasEpilogue = false; ///< a GEMM group that already took an activation
  Group *mergedInto = nullptr;
  /// The groups (possibly merged since) of ops already visited that use a
  /// value of this group; entries that became this group are dropped lazily.
  std::vector<Group *> earlyUsers;
  /// An op in no group, already visited (or nested in another op's region),
  /// uses a value of this group.
  bool usedByUngrouped = false;
};

/// The grouping state of one function.
///
/// 1. Visit the ops in order; each fusible op starts a group, then merges
///    with its producers' groups where legal (tryMerge, tryEpilogue).
/// 2. After each op, record in its producers' groups that it uses them
///    (noteUses): a group used by an op visited earlier that stays outside
///    cannot merge, since the kernel would run after that user.
/// 3. Each group of two or more ops becomes an mp.fusion (materialize).
class Fuser {
public:
  explicit Fuser(MLIRContext *ctx) : ctx(ctx) {}

  void run(func::FuncOp func) {
    Block &body = func.getBody().front();
    unsigned index = 0;
    for (Operation &op : body)
      position[&op] = index++;

    for (Operation &op : body) {
      if (Group *group = startGroup(&op, body); group && group->kind != FuseKind::Gemm)
        mergeProducers(&op);
      noteUses(&op);
    }

    for (auto &group : groups)
      if (group->ops.size() >= 2)
        materialize(*group);
  }

private:
  /// Gives a fusible op a group of its own; null for other ops.
  Group *startGroup(Operation *op, Block &body) {
    FuseKind kind = fuseKindOf(op);
    if (kind == FuseKind::None)
      return nullptr;
    if (kind == FuseKind::Reduction && rowReductionDims(op) < 0)
      return nullptr; // runs as its own routine
    auto group = std::make_unique<Group>();
    group->kind = kind;
    ArrayRef<int64_t> shape = iterationShape(op);
    group->shape.assign(shape.begin(), shape.end());
    group->ops.push_back(op);
    group->reductions = kind == FuseKind::Reduction;
    // A user nested in another op's region is outside every group and
    // counts as already visited.
    group->usedByUngrouped =
        llvm::any_of(op->getUsers(), [&](Operation *user) { return user->getBlock() != &body; });
    groupOf[op] = group.get();
    groups.push_back(std::move(group));
    return groups.back().get();
  }

  /// The group that now holds `group`'s ops (path halving keeps the
  /// pointer chains short).
  static Group *find(Group *group) {
    while (Group *next = group->mergedInto) {
      if (next->mergedInto)
        group->mergedInto = next->mergedInto;
      group = group->mergedInto;
    }
    return group;
  }

  /// The group that holds `op`, or null.
  Group *groupFor(Operation *op) const {
    Group *group = groupOf.lookup(op);
    return group ? find(group) : nullptr;
  }

  /// Records that the visited `op` uses the groups of its producers.
  void noteUses(Operation *op) {
    Group *user = groupFor(op);
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      Group *used = producer ? groupFor(producer) : nullptr;
      if (!used || used == user)
        continue;
      if (!user)
        used->usedByUngrouped = true;
      else
        used->earlyUsers.push_back(user);
    }
  }

  /// Merges the groups of `op`'s producers into `op`'s group where legal.
  void mergeProducers(Operation *op) {
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      Group *from = producer ? groupFor(producer) : nullptr;
      if (!from)
        continue;
      Group *into = groupFor(op);
      if (from == into)
        continue;
      if (from->kind == FuseKind::Gemm)
        tryEpilogue(from, into, op, operand);
      else
        tryMerge(from, into, op, operand);
    }
  }

  /// Whether every visited op outside `group` that uses it is in `other`.
  /// Drops entries that became `group` and duplicates of `other`, so each
  /// call costs O(1) plus the entries it drops.
  static bool onlyEarlyUserIs(Group *group, Group *other) {
    std::vector<Group *> &users = group->earlyUsers;
    bool seenOther = false;
    for (size_t i = 0; i < users.size();) {
      Group *user = find(users[i]);
      if (user != group && user != other)
        return false;
      if (user == group || seenOther) {
        users[i] = users.back();
        users.pop_back();
        continue;
      }
      users[i] = user;
      seenOther = true;
      ++i;
    }
    return true;
  }

  /// Whether every use of the ops of `a` and `b` outside both groups comes
  /// after the op being visited: the merged kernel runs there, so an
  /// earlier outside user would read a value not yet computed.
  bool outsideUsersComeAfter(Group *a, Group *b) {
    return !a->usedByUngrouped && !b->usedByUngrouped && onlyEarlyUserIs(a, b) &&
           onlyEarlyUserIs(b, a);
  }

  void tryMerge(Group *from, Group *into, Operation *op, Value operand) {
    // Both iterate over the same shape, and the producer's value is one
    // element per point of it (not a reduced row value).
    if (from->shape != into->shape || shapeOf(operand) != ArrayRef<int64_t>(into->shape))
      return;
    if (from->reductions + into->reductions > 1)
      return;
    // A reduction consumes its main input; other operands (scale, bias)
    // are parameters that must already be in memory.
    if (into->reductions && fuseKindOf(op) == FuseKind::Reduction && operand != op->getOperand(0))
      return;
    if (from->ops.size() + into->ops.size() > kMaxKernelOps)
      return;
    if (!outsideUsersComeAfter(from, into))
      return;
    absorb(from, into);
  }

  /// A bias add, ReLU or tanh-GELU right after a GEMM joins its group.
  void tryEpilogue(Group *gemm, Group *into, Operation *op, Value operand) {
    if (into->ops.size() != 1 || gemm->hasEpilogue || !operand.hasOneUse())
      return;
    Operation *last = gemm->ops.back();
    if (operand != last->getResult(0))
      return;
    bool isBias = false;
    if (auto add = dyn_cast<graph::AddOp>(op)) {
      Value other = add.getLhs() == operand ? add.getRhs() : add.getLhs();
      ArrayRef<int64_t> out = shapeOf(operand);
      // cuBLASLt's bias epilogue adds one value per output column.
      isBias = shapeOf(other).size() == 1 && shapeOf(other)[0] == out.back() &&
               shapeOf(op->getResult(0)) == out;
      bool gemmHasBias =
          static_cast<bool>(cast<graph::GemmOpInterface>(gemm->ops.front()).getGemmOperands().bias);
      if (!isBias || gemmHasBias || gemm->ops.size() > 1)
        return;
    } else if (!gemmEpilogueOf(op)) {
      return;
    }
    if (!isBias)
      gemm->hasEpilogue = true;
    absorb(into, gemm);
  }

  /// Moves every op of `from` into `into`, copying the smaller list (a GEMM
  /// group keeps its order: the GEMM first).
  static void absorb(Group *from, Group *into) {
    if (into->kind != FuseKind::Gemm && from->ops.size() > into->ops.size())
      std::swap(from->ops, into->ops);
    into->ops.insert(into->ops.end(), from->ops.begin(), from->ops.end());
    if (from->earlyUsers.size() > into->earlyUsers.size())
      std::swap(from->earlyUsers, into->earlyUsers);
    into->earlyUsers.insert(into->earlyUsers.end(), from->earlyUsers.begin(),
                            from->earlyUsers.end());
    into->reductions += from->reductions;
    into->usedByUngrouped |= from->usedByUngrouped;
    from->mergedInto = into;
    std::vector<Operation *>().swap(from->ops); // frees the memory
    std::vector<Group *>().swap(from->earlyUsers);
  }

  MLIRContext *ctx;

  /// Replaces a group by an mp.fusion placed where its last op was.
  void materialize(Group &group) {
    SmallVector<Operation *> ops(group.ops.begin(), group.ops.end());
    llvm::sort(ops, [&](Operation *a, Operation *b) { return position[a] < position[b]; });
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    // Kernels take scalars as immediates; a GEMM's operands (FP8 scales)
    // are tensors the GEMM call reads.
    bool inlineScalars = group.kind != FuseKind::Gemm;
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if ((def && groupFor(def) == &group) || (inlineScalars && isScalarConstant(operand)))
          continue;
        inputs.insert(operand);
      }
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return groupFor(user) != &group; }))
          outputs.push_back(result);
    }
    // A group whose values are all dead still stores its last one, as an
    // unfused dead op does: a fusion needs a result (and a GEMM fusion its
    // output).
    if (outputs.empty())
      llvm::append_range(outputs, ops.back()->getResults());

    OpBuilder b(ops.back());
    // Casts carry their producer's name; list each graph op once.
    llvm::SetVector<Attribute> names;
    for (Operation *op : ops) {
      std::string name = passes::opName(op);
      names.insert(StringAttr::get(ctx, name.empty() ? opTypeName(op) : StringRef(name)));
    }
    graph::FusionKind kind = group.kind == FuseKind::Gemm ? graph::FusionKind::gemm
                             : group.reductions          ? graph::FusionKind::reduction
                                                         : graph::FusionKind::elementwise;
    SmallVector<Location> locs;
    for (Operation *op : ops)
      locs.push_back(op->getLoc());
    auto fusion = b.create<graph::FusionOp>(
        FusedLoc::get(ctx, locs), ValueRange(outputs).getTypes(), inputs.getArrayRef(),
        graph::FusionKindAttr::get(ctx, kind), ArrayAttr::get(ctx, names.getArrayRef()));
    Block *block = new Block();
    fusion.getBody().push_back(block);
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, block->addArgument(input.getType(), input.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(block);
    for (Operation *op : ops) {
      for (Value operand : op->getOperands())
        if (inlineScalars && isScalarConstant(operand) && !mapping.contains(operand))
          mapping.map(operand, inner.clone(*operand.getDefiningOp())->getResult(0));
      inner.clone(*op, mapping);
    }
    SmallVector<Value> yielded;
    for (Value output : outputs)
      yielded.push_back(mapping.lookup(output));
    if (group.kind == FuseKind::Gemm && ops.size() > 1)
      yielded[0] = keepEpilogueInF32(block, yielded[0]);
    inner.setInsertionPointToEnd(block);
    inner.create<graph::YieldOp>(fusion.getLoc(), yielded);
    for (auto [output, result] : llvm::zip(outputs, fusion.getResults()))
      output.replaceUsesWithIf(result,
                               [&](OpOperand &use) { return groupFor(use.getOwner()) != &group; });
    for (Operation *op : llvm::reverse(ops)) {
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      // Scalars now live inside the kernel as immediates.
      for (Value operand : operands)
        if (isScalarConstant(operand) && operand.use_empty())
          operand.getDefiningOp()->erase();
    }
  }

  llvm::DenseMap<Operation *, unsigned> position;
  /// The group each fusible op started in (see find).
  llvm::DenseMap<Operation *, Group *> groupOf;
  std::vector<std::unique_ptr<Group>> groups;
};

//===----------------------------------------------------------------------===//
// --mp-fuse
//===----------------------------------------------------------------------===//

struct FusePass : public impl::FusePassBase<FusePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.isExternal())
      Fuser(&getContext()).run(func);
  }
};

} // namespace
} // namespace mixprec::passes
