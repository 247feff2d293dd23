//===- Inputs.cpp - graph inputs from arrays, states and a seed ------------===//
#include "compiler/Report/Report.h"

#include "common/Shapes.h"
#include "common/numerics/Rounding.h"
#include "compiler/Interpreter/Evaluator.h"
#include "dialects/Graph/IR/GraphAsm.h"
#include "dialects/Graph/IR/GraphOps.h"

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


} // namespace mixprec::compiler
