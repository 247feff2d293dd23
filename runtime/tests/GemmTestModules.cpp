//===- GemmTestModules.cpp - one-Gemm modules for the GEMM tests ----------===//
#include "runtime/tests/GemmTestModules.h"

#include "tests/unit/runtime/ModuleBuilder.h"

namespace mixprec::testing {

namespace {

/// `stride` unless it is -1 (dense): then `dense`.
int64_t orDense(int64_t stride, int64_t dense) { return stride == -1 ? dense : stride; }

/// [batch, rows, cols], or [rows, cols] for one matrix.
Shape batchShape(int64_t batch, int64_t stride, int64_t rows, int64_t cols) {
  if (batch == 1 || stride == 0)
    return {rows, cols};
  // A stride past the matrix: the tensor holds batch strides' worth.
  if (stride > rows * cols)
    return {(batch - 1) * stride + rows * cols};
  return {batch, rows, cols};
}

bool hasBias(fb::Epilogue e) {
  return e == fb::Epilogue::Bias || e == fb::Epilogue::BiasRelu || e == fb::Epilogue::BiasGelu;
}

} // namespace

std::string loadGemmModule(const GemmCase &c, std::shared_ptr<const runtime::LoadedModule> &out) {
  ModuleBuilder b;
  GemmSpec g;
  g.name = c.name;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.batch = c.batch;
  g.strideA = orDense(c.strideA, c.m * c.k);
  g.strideB = orDense(c.strideB, c.k * c.n);
  g.strideOut = orDense(c.strideOut, c.m * c.n);
  g.transB = c.transB;
  g.tf32 = c.tf32;
  g.epilogue = c.epilogue;
  g.a = b.input("a", c.a, batchShape(c.batch, g.strideA, c.m, c.k));
  g.b = b.input("b", c.b,
                c.transB ? batchShape(c.batch, g.strideB, c.n, c.k)
                         : batchShape(c.batch, g.strideB, c.k, c.n));
  g.out = b.activation("out", c.out,
                       c.outShape.empty() ? batchShape(c.batch, g.strideOut, c.m, c.n)
                                          : c.outShape);
  b.output(g.out);
  // The optional tensors always exist, so the indices stay GemmTensor's.
  Shape biasShape = c.scalarBias ? Shape{} : c.biasShape.empty() ? Shape{c.n} : c.biasShape;
  const int bias = b.input("bias", c.bias, biasShape);
  const int aScale = b.input("a_scale", fb::DType::F32, {});
  const int bScale = b.input("b_scale", fb::DType::F32, {});
  if (hasBias(c.epilogue))
    g.bias = bias;
  if (c.scales) {
    g.aScale = aScale;
    g.bScale = bScale;
  }
  b.gemm(g);
  BuiltModule built = b.build();
  runtime::Status s = runtime::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                                         runtime::LoadOptions{}, out);
  return s.ok() ? "" : s.message();
}

} // namespace mixprec::testing
