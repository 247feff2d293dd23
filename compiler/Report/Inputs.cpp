//===- Inputs.cpp - graph inputs from arrays, states and a seed ------------===//
#include "compiler/Report/Report.h"

#include "dialects/Graph/IR/GraphAsm.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "common/numerics/Rounding.h"
#include "compiler/Interpreter/Evaluator.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;

namespace mixprec::compiler {
namespace {

/// The size of the table a gather reads with this input, or 0 if none.
int64_t gatherRange(func::FuncOp func, unsigned argIndex) {
  Value arg = func.getArgument(argIndex);
  for (Operation *user : arg.getUsers())
    if (auto gather = dyn_cast<mixprec::graph::GatherOp>(user))
      if (gather.getIndices() == arg)
        return cast<RankedTensorType>(gather.getData().getType()).getShape()[gather.getAxis()];
  return 0;
}

/// Random input for `spec`: normal floats, indices valid for their gather.
HostTensor randomInput(const TensorSpec &spec, int64_t indexRange, std::mt19937_64 &rng) {
  HostTensor t;
  t.shape = spec.shape;
  int64_t n = t.numElements();
  if (spec.elementType.isInteger(1)) {
    t.kind = HostTensor::Kind::Bool;
    std::bernoulli_distribution coin(0.5);
    for (int64_t i = 0; i < n; ++i)
      t.bools.push_back(coin(rng));
  } else if (isa<IntegerType>(spec.elementType)) {
    t.kind = HostTensor::Kind::Int;
    std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(indexRange, 2) - 1);
    for (int64_t i = 0; i < n; ++i)
      t.ints.push_back(pick(rng));
  } else {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i)
      t.floats.push_back(normal(rng));
  }
  return t;
}


} // namespace

bool hostTensorFromNpy(const support::NpyArray &array, HostTensor::Kind kind,
                       llvm::ArrayRef<int64_t> shape, const std::string &path,
                       const std::string &input, HostTensor &out, std::string &error) {
  using mixprec::support::NpyDType;
  if (llvm::ArrayRef<int64_t>(array.shape) != shape) {
    error = path + ": input '" + input + "' has shape " +
            mixprec::graph::formatShape(array.shape) + ", the model expects " +
            mixprec::graph::formatShape(shape);
    return false;
  }
  out = HostTensor();
  out.kind = kind;
  out.shape = array.shape;
  int64_t n = array.numElements();
  if (n < 0 || array.data.size() != static_cast<size_t>(n) * mixprec::support::npyDTypeSize(array.dtype)) {
    error = path + ": input '" + input + "': array data size does not match its shape";
    return false;
  }
  auto wrongDType = [&](const char *want) {
    error = path + ": input '" + input + "' must be " + want + ", got dtype " +
            mixprec::support::npyDTypeDescr(array.dtype);
    return false;
  };
  auto readInts = [&](auto tag) {
    using T = decltype(tag);
    out.ints.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, array.data.data() + i * sizeof(T), sizeof(T));
      out.ints[i] = static_cast<int64_t>(v);
    }
  };
  switch (kind) {
  case HostTensor::Kind::Bool:
    if (array.dtype != NpyDType::Bool && array.dtype != NpyDType::U8)
      return wrongDType("a bool array");
    out.bools.assign(array.data.begin(), array.data.end());
    for (uint8_t &b : out.bools)
      b = b != 0;
    return true;
  case HostTensor::Kind::Int:
    switch (array.dtype) {
    case NpyDType::I64:
      readInts(int64_t{});
      return true;
    case NpyDType::I32:
      readInts(int32_t{});
      return true;
    case NpyDType::I8:
      readInts(int8_t{});
      return true;
    case NpyDType::U8:
      readInts(uint8_t{});
      return true;
    default:
      return wrongDType("an integer array");
    }
  case HostTensor::Kind::Float:
    if (array.dtype != NpyDType::F32 && array.dtype != NpyDType::F64 &&
        array.dtype != NpyDType::F16)
      return wrongDType("a float array");
    if (!mixprec::support::npyToFloat32(array, out.floats, error)) {
      error = path + ": input '" + input + "': " + error;
      return false;
    }
    return true;
  }
  return false;
}

bool initialStates(func::FuncOp func, const GraphSignature &sig, std::vector<bool> &given,
                   std::vector<HostTensor> &inputs, std::string &error) {
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto init = func.getArgAttrOfType<ElementsAttr>(i, graph::GraphDialect::kStateInitAttr);
    if (given[i] || !init)
      continue;
    if (!decodeConstant(init, inputs[i], error)) {
      error = "state '" + sig.inputs[i].name + "': " + error;
      return false;
    }
    given[i] = true;
  }
  return true;
}

void randomInputs(func::FuncOp func, const GraphSignature &sig, const std::vector<bool> &given,
                  uint64_t seed, std::vector<HostTensor> &inputs) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!given[i])
      inputs[i] = randomInput(sig.inputs[i], gatherRange(func, i), rng);
}

void printModule(ModuleOp module, llvm::raw_ostream &os, bool elideWeights) {
  OpPrintingFlags flags;
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  if (elideWeights) {
    os << kElidedHeader << "\n";
    flags.elideLargeElementsAttrs(kElideElementsOver);
  } else {
    flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max());
  }
  graph::printModuleNamed(module, os, flags);
  os << "\n";
}


HostTensor::Kind kindOfDType(mixprec_dtype_t dtype) {
  switch (dtype) {
  case MIXPREC_DTYPE_I64:
  case MIXPREC_DTYPE_I32:
    return HostTensor::Kind::Int;
  case MIXPREC_DTYPE_BOOL:
    return HostTensor::Kind::Bool;
  default:
    return HostTensor::Kind::Float;
  }
}

bool encodeModuleInput(const mixprec_tensor_info_t &info, const std::string &path,
                 const HostTensor &t, std::vector<uint8_t> &bytes,
                 std::string &error) {
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  if (t.shape != dims) {
    error = path + ": input '" + std::string(info.name) + "' has shape " +
            graph::formatShape(t.shape) + ", the module expects " + graph::formatShape(dims);
    return false;
  }
  bytes.assign(info.byte_size, 0);
  size_t n = info.element_count;
  switch (info.dtype) {
  case MIXPREC_DTYPE_I64:
    if (n > 0) // an empty tensor's vectors may hold no storage
      std::memcpy(bytes.data(), t.ints.data(), n * sizeof(int64_t));
    return true;
  case MIXPREC_DTYPE_I32:
    for (size_t i = 0; i < n; ++i) {
      int64_t v = t.ints[i];
      if (v < INT32_MIN || v > INT32_MAX) {
        error = path + ": input '" + std::string(info.name) + "': value " + std::to_string(v) +
                " at flat index " + std::to_string(i) + " does not fit int32";
        return false;
      }
      int32_t w = static_cast<int32_t>(v);
      std::memcpy(bytes.data() + 4 * i, &w, 4);
    }
    return true;
  case MIXPREC_DTYPE_BOOL:
    if (n > 0)
      std::memcpy(bytes.data(), t.bools.data(), n);
    return true;
  default:
    numerics::encodeArray(static_cast<numerics::Format>(info.dtype), t.floats.data(),
                          bytes.data(), n);
    return true;
  }
}

} // namespace mixprec::compiler
