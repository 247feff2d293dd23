//===- TieTransposedWeights.cpp - --mp-tie-transposed-weights -------------===//
//
// torch.onnx's legacy exporter writes a tied weight twice when one of its
// readers wants it transposed: GPT-2's token table [V, D] feeds the
// embedding Gather, and a separate initializer holding its transpose
// [D, V] feeds the LM head's MatMul. Stored as given, the 12-layer GPT-2's
// 154 MB table is in the module twice. A GEMM reads its weight transposed
// for free (cuBLASLt's and BLAS's transpose flag), so a GEMM weight that is
// exactly the transpose of another constant is read through that constant
// with the flag flipped; the transposed copy then has no reader left and
// goes. Data is compared byte for byte: equal values only, never "close".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cstring>

namespace mixprec::passes {
#define GEN_PASS_DEF_TIETRANSPOSEDWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

/// A 2-D float constant with its raw row-major bytes; null data for
/// constants this pass leaves alone (splats, other ranks, non-dense data).
struct Matrix {
  graph::ConstantOp op;
  Type elementType;
  int64_t rows = 0, cols = 0;
  size_t elementBytes = 0;
  ArrayRef<char> data;
};

Matrix matrixOf(graph::ConstantOp op) {
  Matrix m;
  auto type = dyn_cast<RankedTensorType>(op.getType());
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!type || type.getRank() != 2 || !dense || dense.isSplat() ||
      !isa<FloatType>(type.getElementType()) || type.getElementTypeBitWidth() % 8 != 0)
    return m;
  m.op = op;
  m.elementType = type.getElementType();
  m.rows = type.getDimSize(0);
  m.cols = type.getDimSize(1);
  m.elementBytes = type.getElementTypeBitWidth() / 8;
  m.data = dense.getRawData();
  return m;
}

/// FNV-1a over `m`'s elements read column by column (the row-major bytes
/// of its transpose), or row by row.
uint64_t hashOf(const Matrix &m, bool transposed) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](const char *p) {
    for (size_t b = 0; b < m.elementBytes; ++b) {
      h ^= static_cast<uint8_t>(p[b]);
      h *= 0x100000001b3ull;
    }
  };
  if (!transposed) {
    for (char c : m.data) {
      h ^= static_cast<uint8_t>(c);
      h *= 0x100000001b3ull;
    }
    return h;
  }
  for (int64_t c = 0; c < m.cols; ++c)
    for (int64_t r = 0; r < m.rows; ++r)
      mix(m.data.data() + (r * m.cols + c) * m.elementBytes);
  return h;
}

/// Whether `t` holds exactly the transpose of `m` (same element type).
bool isTransposeOf(const Matrix &t, const Matrix &m) {
  if (t.rows != m.cols || t.cols != m.rows ||
      t.elementType != m.elementType)
    return false;
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t c = 0; c < t.cols; ++c)
      if (std::memcmp(t.data.data() + (r * t.cols + c) * t.elementBytes,
                      m.data.data() + (c * m.cols + r) * m.elementBytes, t.elementBytes))
        return false;
  return true;
}

/// Whether every reader of `w` is a GEMM that takes it as its weight and can
/// flip how it reads it: an mp.linear, or an mp.matmul whose left operand
/// has rank >= 2 (a 1-D one has no mp.linear form).
bool onlyGemmWeight(Value w) {
  for (OpOperand &use : w.getUses()) {
    Operation *user = use.getOwner();
    if (auto linear = dyn_cast<graph::LinearOp>(user)) {
      if (use.getOperandNumber() != 1)
        return false;
    } else if (auto matmul = dyn_cast<graph::MatmulOp>(user)) {
      if (use.getOperandNumber() != 1 ||
          cast<RankedTensorType>(matmul.getLhs().getType()).getRank() < 2)
        return false;
    } else {
      return false;
    }
  }
  return !w.use_empty();
}

/// Makes every GEMM reading `copy` (the transpose of `original`) read
/// `original` with the opposite transpose flag.
void readThrough(graph::ConstantOp copy, graph::ConstantOp original) {
  // `original` must dominate its new readers: the first of the two constants
  // in the block serves (constants have no operands, so moving is safe).
  if (copy->isBeforeInBlock(original))
    original->moveBefore(copy);
  for (Operation *user : llvm::make_early_inc_range(copy.getResult().getUsers())) {
    OpBuilder builder(user);
    Operation *replacement;
    if (auto linear = dyn_cast<graph::LinearOp>(user)) {
      replacement = builder.create<graph::LinearOp>(
          linear.getLoc(), linear.getType(), linear.getInput(), original.getResult(),
          linear.getBias(), builder.getBoolAttr(!linear.getTransposeWeight()),
          linear.getAccTypeAttr());
    } else {
      auto matmul = cast<graph::MatmulOp>(user);
      replacement = builder.create<graph::LinearOp>(
          matmul.getLoc(), matmul.getType(), matmul.getLhs(), original.getResult(), Value(),
          builder.getBoolAttr(true), matmul.getAccTypeAttr());
    }
    // Annotations (a plan already in the file, calibration) carry over.
    for (NamedAttribute attr : user->getDiscardableAttrs())
      replacement->setAttr(attr.getName(), attr.getValue());
    user->getResult(0).replaceAllUsesWith(replacement->getResult(0));
    user->erase();
  }
  copy->erase();
}

struct TieTransposedWeightsPass
    : public impl::TieTransposedWeightsPassBase<TieTransposedWeightsPass> {
  void runOnOperation() override {
    // Every 2-D constant, keyed by the hash of its transpose: a GEMM weight
    // whose row-major hash matches is then compared exactly.
    std::vector<Matrix> matrices;
    getOperation().walk([&](graph::ConstantOp op) {
      Matrix m = matrixOf(op);
      if (m.op)
        matrices.push_back(m);
    });
    if (matrices.size() < 2)
      return;
    llvm::DenseMap<uint64_t, SmallVector<size_t, 1>> byTransposedHash;
    for (size_t i = 0; i < matrices.size(); ++i)
      byTransposedHash[hashOf(matrices[i], /*transposed=*/true)].push_back(i);
    llvm::DenseSet<Operation *> erased;
    for (size_t i = 0; i < matrices.size(); ++i) {
      Matrix copy = matrices[i];
      if (erased.contains(copy.op) || !onlyGemmWeight(copy.op.getResult()))
        continue;
      auto it = byTransposedHash.find(hashOf(copy, /*transposed=*/false));
      if (it == byTransposedHash.end())
        continue;
      for (size_t j : it->second) {
        Matrix original = matrices[j];
        if (j == i || erased.contains(original.op) || !isTransposeOf(copy, original))
          continue;
        erased.insert(copy.op);
        readThrough(copy.op, original.op);
        break;
      }
    }
  }
};

} // namespace
} // namespace mixprec::passes
