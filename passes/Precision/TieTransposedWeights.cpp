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
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace mixprec::passes {
#define GEN_PASS_DEF_TIETRANSPOSEDWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

/// A 2-D float constant with its raw row-major bytes; null data for
/// constants this pass leaves alone (empty ones, splats, other ranks,
/// non-dense data).
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
  if (!type || type.getRank() != 2 || type.getNumElements() == 0 || !dense || dense.isSplat() ||
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

/// Whether `t[r][c]` equals `m[c][r]` (same element bytes).
bool sameAt(const Matrix &t, const Matrix &m, int64_t r, int64_t c) {
  return std::memcmp(t.data.data() + (r * t.cols + c) * t.elementBytes,
                     m.data.data() + (c * m.cols + r) * m.elementBytes, t.elementBytes) == 0;
}

/// Whether `t` holds exactly the transpose of `m` (same element type). A few
/// spread-out elements are compared first, so that the many pairs of
/// transposed shapes that are not copies (GPT-2's MLP weights, [D, 4D] and
/// [4D, D]) cost nothing; a full comparison walks 64x64 tiles, so that the
/// strided side stays in cache.
bool isTransposeOf(const Matrix &t, const Matrix &m) {
  if (t.rows != m.cols || t.cols != m.rows || t.elementType != m.elementType)
    return false;
  const int64_t n = t.rows * t.cols;
  for (int64_t k = 0; k < 64; ++k) {
    int64_t flat = (k * 0x9E3779B97F4A7C15ull % 1000003ull) * n / 1000003;
    if (!sameAt(t, m, flat / t.cols, flat % t.cols))
      return false;
  }
  constexpr int64_t kTile = 64;
  for (int64_t r0 = 0; r0 < t.rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < t.cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(r0 + kTile, t.rows); ++r)
        for (int64_t c = c0; c < std::min(c0 + kTile, t.cols); ++c)
          if (!sameAt(t, m, r, c))
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
    std::vector<Matrix> matrices;
    getOperation().walk([&](graph::ConstantOp op) {
      Matrix m = matrixOf(op);
      if (m.op)
        matrices.push_back(m);
    });
    // The constants of each shape: a copy [K, N] is looked for among [N, K].
    std::map<std::pair<int64_t, int64_t>, SmallVector<size_t, 2>> byShape;
    for (size_t i = 0; i < matrices.size(); ++i)
      byShape[{matrices[i].rows, matrices[i].cols}].push_back(i);
    llvm::DenseSet<Operation *> erased;
    for (size_t i = 0; i < matrices.size(); ++i) {
      Matrix copy = matrices[i];
      if (erased.contains(copy.op) || !onlyGemmWeight(copy.op.getResult()))
        continue;
      auto it = byShape.find({copy.cols, copy.rows});
      if (it == byShape.end())
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
