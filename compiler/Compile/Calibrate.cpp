//===- Calibrate.cpp - per-op ranges from FP32 runs ------------------------===//
#include "compiler/Compile/Compile.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using mixprec::graph::GraphDialect;

namespace mixprec::compiler {
namespace {

/// Per-op statistics of FP32 runs, for range-aware assignment.
struct RangeStats {
  double amax = 0;             ///< largest |x| (inf if any value is non-finite)
  int64_t nonZero = 0;         ///< non-zero values seen
  int64_t belowFp16Normal = 0; ///< of those, |x| < 6.1e-5
};

/// Adds the float values of one op result to its statistics.
void accumulate(RangeStats &s, const std::vector<float> &values) {
  for (float v : values) {
    double a = std::fabs(static_cast<double>(v));
    if (!std::isfinite(a))
      s.amax = INFINITY;
    else if (a > s.amax)
      s.amax = a;
    if (a != 0) {
      ++s.nonZero;
      if (a < 6.103515625e-05)
        ++s.belowFp16Normal;
    }
  }
}

} // namespace

LogicalResult calibrate(func::FuncOp func, ArrayRef<std::vector<HostTensor>> inputSets) {
  llvm::DenseMap<Operation *, RangeStats> stats;
  Interpreter interpreter(func);
  interpreter.setObserver([&](Operation *op, ArrayRef<const HostTensor *> results) {
    if (!results.empty() && results[0]->kind == HostTensor::Kind::Float &&
        !isa<graph::ConstantOp>(op))
      accumulate(stats[op], results[0]->floats);
  });
  std::vector<HostTensor> outputs;
  std::string error;
  for (size_t i = 0; i < inputSets.size(); ++i)
    if (!interpreter.run(inputSets[i], outputs, error))
      return emitError(UnknownLoc::get(func.getContext()))
             << "calibration input set " << i << ": " << error;
  Builder b(func.getContext());
  auto amaxOf = [&](const RangeStats &s) { return b.getF32FloatAttr(static_cast<float>(s.amax)); };
  auto underflowOf = [&](const RangeStats &s) {
    return b.getF32FloatAttr(
        s.nonZero ? static_cast<float>(s.belowFp16Normal) / static_cast<float>(s.nonZero) : 0.0f);
  };
  for (auto &[op, s] : stats) {
    op->setAttr(GraphDialect::kCalibAmaxAttr, amaxOf(s));
    op->setAttr(GraphDialect::kCalibUnderflowAttr, underflowOf(s));
  }
  // The graph's float inputs too (an FP8 GEMM may read one directly: its
  // static scale comes from here), as argument attributes.
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    RangeStats s;
    bool seen = false;
    for (const std::vector<HostTensor> &set : inputSets)
      if (i < set.size() && set[i].kind == HostTensor::Kind::Float) {
        accumulate(s, set[i].floats);
        seen = true;
      }
    if (!seen)
      continue;
    func.setArgAttr(i, GraphDialect::kCalibAmaxAttr, amaxOf(s));
    func.setArgAttr(i, GraphDialect::kCalibUnderflowAttr, underflowOf(s));
  }
  return success();
}

} // namespace mixprec::compiler
