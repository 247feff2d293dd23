//===- PlanMemory.cpp - --mp-plan-memory -----------------------------------===//
#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"

#include <map>
#include <queue>

namespace mixprec::passes {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::kernel::KernelDialect;

namespace mixprec::passes {
namespace {

constexpr int64_t kAlignment = 256;

int64_t alignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

/// Bytes of a tensor value as stored (bool as one byte).
int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

/// One arena buffer: the value that owns it and when it is live.
struct Buffer {
  Value owner;
  int64_t size = 0;
  int64_t firstDef = 0; ///< op index that writes it (-1: graph input)
  int64_t lastUse = 0;  ///< op index of the last reader (or the end)
  int64_t offset = -1;
};

//===----------------------------------------------------------------------===//
// --mp-plan-memory
//===----------------------------------------------------------------------===//

struct PlanMemoryPass : public impl::PlanMemoryPassBase<PlanMemoryPass> {
  /// 1. Give each value a buffer, aliases sharing their input's.
  /// 2. Extend each buffer's live range over every reader of every value
  ///    in it; returned values live to the end, and so do state arguments
  ///    (mp.state): no other buffer ever shares a state's bytes, so the
  ///    state persists in the session's arena between runs.
  /// 3. In definition order, place each buffer at the lowest 256-aligned
  ///    offset that no overlapping live buffer occupies.
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t n = 0;
    for (Operation &op : body)
      index[&op] = n++;

    std::vector<Buffer> buffers;
    llvm::DenseMap<Value, size_t> bufferOf;
    auto addBuffer = [&](Value v, int64_t def) {
      bufferOf[v] = buffers.size();
      buffers.push_back({v, alignUp(bytesOf(v)), def, def, -1});
    };
    for (BlockArgument arg : body.getArguments()) {
      addBuffer(arg, -1);
      if (func.getArgAttr(arg.getArgNumber(), graph::GraphDialect::kStateAttr))
        buffers.back().lastUse = n;
    }
    for (Operation &op : body) {
      if (auto alias = dyn_cast<kernel::AliasOp>(op)) {
        auto it = bufferOf.find(alias.getInput());
        if (it != bufferOf.end()) {
          bufferOf[alias.getOutput()] = it->second;
          continue;
        }
      }
      if (isa<KernelDialect>(op.getDialect()))
        for (Value result : op.getResults())
          addBuffer(result, index[&op]);
    }
    for (auto &[value, id] : bufferOf)
      for (Operation *user : value.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        int64_t at = isa<func::ReturnOp>(top) ? n : index[top];
        buffers[id].lastUse = std::max(buffers[id].lastUse, at);
      }

    // Buffers are placed in definition order, so a placed buffer overlaps
    // the one being placed exactly when it is still live at its definition.
    // `active` holds the placed buffers by offset and `expiry` by last use,
    // so each placement looks only at the live ones (near-linear for the
    // long chains of unfused kernels that once made this quadratic).
    int64_t peak = 0, total = 0;
    std::multimap<int64_t, size_t> active; // offset -> buffer
    using Expiry = std::pair<int64_t, std::multimap<int64_t, size_t>::iterator>;
    auto later = [](const Expiry &a, const Expiry &b) { return a.first > b.first; };
    std::priority_queue<Expiry, std::vector<Expiry>, decltype(later)> expiry(later);
    for (size_t id = 0; id < buffers.size(); ++id) {
      Buffer &b = buffers[id];
      total += b.size;
      while (!expiry.empty() && expiry.top().first < b.firstDef) {
        active.erase(expiry.top().second);
        expiry.pop();
      }
      // The lowest offset whose [offset, offset + size) no live buffer holds.
      int64_t offset = 0;
      for (auto [start, other] : active) {
        if (start >= offset + b.size)
          break;
        offset = std::max(offset, start + buffers[other].size);
      }
      b.offset = offset;
      peak = std::max(peak, offset + b.size);
      expiry.push({b.lastUse, active.emplace(offset, id)});
    }

    Builder builder(&getContext());
    for (BlockArgument arg : body.getArguments())
      func.setArgAttr(arg.getArgNumber(), "mpk.offset",
                      builder.getI64IntegerAttr(buffers[bufferOf[arg]].offset));
    for (Operation &op : body) {
      if (!isa<KernelDialect>(op.getDialect()))
        continue;
      SmallVector<int64_t> offsets;
      for (Value result : op.getResults())
        offsets.push_back(buffers[bufferOf[result]].offset);
      op.setAttr(KernelDialect::kOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(KernelDialect::kArenaBytesAttr, builder.getI64IntegerAttr(peak));
    func->setAttr(KernelDialect::kBufferBytesAttr, builder.getI64IntegerAttr(total));
  }
};

} // namespace
} // namespace mixprec::passes
