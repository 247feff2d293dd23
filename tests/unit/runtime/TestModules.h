//===- TestModules.h - the modules the runtime tests share ------*- C++ -*-===//
//
// An MLP-like plan (an elementwise kernel into bf16, two GEMMs with bias
// epilogues, a softmax kernel from RowMax/RowSum) and a convolutional one
// (conv2d, pooling, transpose, gather, concat: routine routines). The tests
// compare them with the reference kernels; make_test_module writes them for
// the embedding example; the corruption test mangles them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_RUNTIME_TESTMODULES_H
#define MIXPREC_TESTS_UNIT_RUNTIME_TESTMODULES_H

#include "tests/unit/runtime/ModuleBuilder.h"

#include <cstdint>
#include <vector>

namespace mixprec::testing {

/// Deterministic values in [lo, hi) (xorshift; the same on every host).
std::vector<float> seededFloats(size_t count, uint64_t seed, float lo, float hi);

struct MlpModel {
  static constexpr int64_t kBatch = 5, kIn = 24, kHidden = 32, kOut = 10;
  std::vector<float> w1; ///< [kIn, kHidden], bf16 values
  std::vector<float> b1; ///< [kHidden]
  std::vector<float> w2; ///< [kOut, kHidden] (the GEMM reads it transposed)
  std::vector<float> b2; ///< [kOut]
};

/// The weights of the MLP plan.
MlpModel mlpModel();

/// The MLP plan. Input "x" f32 [5,24]; outputs, in order: "probs" f32 [5,10]
/// (softmax), "logits" f32 [5,10], "hidden" bf16 [5,32], "x_scaled" bf16
/// [5,24], "row_max" f32 [5]. With `externalWeights`, w1 and w2 live in the
/// side file.
ModuleBuilder mlpBuilder(bool externalWeights);

/// The convolutional plan: input "image" bf16 [2,3,8,8] and "ids" i64 [4];
/// output "features" bf16 [2,4,4,4]... (see TestModules.cpp for the steps).
ModuleBuilder convBuilder();

} // namespace mixprec::testing

#endif // MIXPREC_TESTS_UNIT_RUNTIME_TESTMODULES_H
