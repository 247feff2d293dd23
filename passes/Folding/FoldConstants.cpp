//===- FoldConstants.cpp - --mp-fold-constants -----------------------------===//
#include "passes/Passes.h"

#include "compiler/Interpreter/ConstantFolding.h"
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

namespace mixprec::passes {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

/// Erases the constant ops among `defs` that nothing reads any more.
void eraseDeadConstants(ArrayRef<Operation *> defs) {
  for (Operation *def : defs)
    if (def->use_empty() && def->hasTrait<OpTrait::ConstantLike>())
      def->erase();
}

//===----------------------------------------------------------------------===//
// --mp-fold-constants
//===----------------------------------------------------------------------===//

struct FoldConstantsPass : public impl::FoldConstantsPassBase<FoldConstantsPass> {
  using Base::Base;

  /// The reference semantics are external models that the interpreter
  /// library attaches to the mp ops; the pass brings them.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    compiler::registerReferenceExternalModels(registry);
  }

  /// 1. Walks the function body in order, so that a chain of foldable ops
  ///    (a shape computation) folds in one pass.
  /// 2. Folds each op whose operands are all constants by its reference
  ///    semantics (compiler::foldConstantOp) into one mp.constant per
  ///    result, in its place and with its location.
  /// 3. Erases the operand constants that nothing reads any more.
  void runOnOperation() override {
    compiler::ConstantFoldLimits limits;
    limits.runTime = std::min(limits.runTime, maxElements.getValue());
    limits.compileTime = std::min(limits.compileTime, maxElements.getValue());
    OpBuilder builder(&getContext());
    for (Block &block : getOperation().getBody()) {
      for (Operation &op : llvm::make_early_inc_range(block)) {
        std::string error;
        auto folded = compiler::foldConstantOp(&op, limits, error);
        if (failed(folded)) {
          if (error.empty())
            continue;
          op.emitError() << "cannot be folded: " << error;
          return signalPassFailure();
        }
        SmallVector<Operation *> defs;
        for (Value operand : op.getOperands())
          if (!llvm::is_contained(defs, operand.getDefiningOp()))
            defs.push_back(operand.getDefiningOp());
        builder.setInsertionPoint(&op);
        for (auto [result, value] : llvm::zip(op.getResults(), *folded))
          result.replaceAllUsesWith(builder.create<graph::ConstantOp>(op.getLoc(), value));
        op.erase();
        eraseDeadConstants(defs);
      }
    }
  }
};

} // namespace
} // namespace mixprec::passes
