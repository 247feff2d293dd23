//===- KernelBody.cpp - facts of mpk kernel bodies ------------------------===//
#include "codegen/KernelBody.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace mixprec::codegen {

std::vector<int64_t> broadcastStrides(ArrayRef<int64_t> t, ArrayRef<int64_t> space) {
  size_t rank = space.size();
  std::vector<int64_t> strides(rank, 0);
  std::vector<int64_t> aligned(rank, 1);
  for (size_t i = 0; i < t.size() && i < rank; ++i)
    aligned[rank - 1 - i] = t[t.size() - 1 - i];
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    // A size-1 dim is read at index 0 whatever the point.
    strides[i] = aligned[i] == 1 ? 0 : stride;
    stride *= aligned[i];
  }
  return strides;
}

std::optional<float> scalarConstantValue(Operation &op) {
  DenseElementsAttr dense;
  if (!matchPattern(&op, m_Constant(&dense)) || !dense.isSplat())
    return std::nullopt;
  Type type = dense.getElementType();
  if (type.isInteger(1))
    return dense.getSplatValue<bool>() ? 1.0f : 0.0f;
  if (type.isSignlessInteger())
    return static_cast<float>(dense.getSplatValue<APInt>().getSExtValue());
  if (!isa<FloatType>(type))
    return std::nullopt;
  APFloat v = dense.getSplatValue<APFloat>();
  bool losesInfo = false;
  v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &losesInfo);
  return v.convertToFloat();
}

} // namespace mixprec::codegen
