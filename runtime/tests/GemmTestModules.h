//===- GemmTestModules.h - one-Gemm modules for the GEMM tests --*- C++ -*-===//
//
// A module holding one Gemm step, built with the tests' ModuleBuilder and
// loaded (verified) as the runtime loads any module, so the plans and the
// runner see the GemmDesc the verifier makes. Every tensor is an arena
// input, so a GPU test can copy data into each.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_TESTS_GEMMTESTMODULES_H
#define MIXPREC_RUNTIME_TESTS_GEMMTESTMODULES_H

#include "runtime/src/Module.h"

#include <memory>
#include <string>
#include <vector>

namespace mixprec::testing {

struct GemmCase {
  std::string name = "g";
  schema::DType a = schema::DType::F32, b = schema::DType::F32, out = schema::DType::F32;
  schema::DType bias = schema::DType::F32; ///< its dtype, when the epilogue has one
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool transB = false, tf32 = false, scales = false;
  schema::Epilogue epilogue = schema::Epilogue::None;
  /// Batch strides; -1: dense (m*k, k*n, m*n). A stride of 0 gives the
  /// operand one matrix, shaped [m, k] / [k, n] (or [n, k]).
  int64_t strideA = -1, strideB = -1, strideOut = -1;
  /// Shapes; empty: [batch,] rows, cols as above, and [n] for the bias.
  std::vector<int64_t> outShape, biasShape;
  bool scalarBias = false; ///< a bias of shape [] (one element)
};

/// The tensor indices of a GemmCase's module.
enum GemmTensor : int32_t { kA = 0, kB = 1, kOut = 2, kBias = 3, kAScale = 4, kBScale = 5 };

/// Builds and loads the module of `c`; a failed load's message otherwise.
std::string loadGemmModule(const GemmCase &c,
                           std::shared_ptr<const runtime::LoadedModule> &out);

} // namespace mixprec::testing

#endif // MIXPREC_RUNTIME_TESTS_GEMMTESTMODULES_H
