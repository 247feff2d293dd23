//===- StorageFormat.cpp - storage dtypes and float constants -------------===//
#include "dialects/Graph/IR/StorageFormat.h"

using namespace mlir;
namespace num = mixprec::numerics;

namespace mixprec::graph {

DenseElementsAttr storeFloatConstant(RankedTensorType type, ArrayRef<float> values) {
  std::optional<num::Format> format = storageFormatOf(type.getElementType());
  if (!format)
    return nullptr;
  std::vector<char> raw(values.size() * num::formatBytes(*format));
  num::encodeArray(*format, values.data(), raw.data(), values.size(),
                   storeRoundOptions(*format));
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

} // namespace mixprec::graph
