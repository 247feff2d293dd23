//===- CpuGemmStep.cpp - GEMM steps on oneDNN or OpenBLAS ------------------===//
//
// oneDNN's matmul on the operands as stored, its weight packed at load
// (CpuDnnl.h), where it takes the step; else the operands decoded to FP32
// (TF32-rounded when the step asks) and one sgemm call per step or per
// batch element. Then the FP8 dequantization, bias and epilogue in FP32,
// and one rounding to the output's dtype.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/kernels/Gemm.h"
#include "runtime/kernels/Kernels.h"

namespace mixprec::runtime {

using schema::DType;

/// The tensor as FP32: in place for f32 data, the copy decoded at load for
/// a constant GEMM bias or routine operand, else decoded into `scratch`.
/// Null only when scratch memory runs out.
const float *CpuBackend::floatOperand(int32_t tensor, Scratch &s) {
  const TensorDesc &d = module->tensors()[tensor];
  const uint8_t *data = tensorData(tensor);
  if (d.dtype == DType::F32)
    return reinterpret_cast<const float *>(data);
  if (auto it = decodedConstants.find(tensor); it != decodedConstants.end())
    return it->second.data();
  weightDecodes += d.isConstant();
  float *out = s.floats(d.elements);
  if (out)
    loadRun(d.dtype, data, 0, 1, d.elements, out);
  return out;
}

Status CpuBackend::runGemm(const GemmDesc &g) {
  const int64_t mn = g.m * g.n;
  if (mn == 0)
    return okStatus();
  const TensorDesc &outDesc = module->tensors()[g.out];
  const size_t index = static_cast<size_t>(&g - module->gemms().data());
  const bool onDnnl = dnnl.handles(index);
  float *acc = scratch[2].floats(g.batch * mn);
  if (!acc)
    return outOfMemory(g.name, (g.batch * mn) * 4);
  const bool scaled = g.aScale != -1;
  const float *bias = nullptr;
  if (g.bias != -1 && !(bias = floatOperand(g.bias, scratch[3])))
    return outOfMemory(g.name, module->tensors()[g.bias].elements * 4);
  // oneDNN: the products' sums, then the bias added (as after FP8 scaling).
  if (onDnnl)
    if (Status s = dnnl.run(index, tensorData(g.a), tensorData(g.b), acc); !s.ok())
      return s.withContext(g.name + ": ");
  if (!onDnnl)
    if (Status s = runBlasGemm(g, acc, scaled ? nullptr : bias); !s.ok())
      return s;
  const int64_t total = g.batch * mn;
  if (scaled) {
    const float scaleA = *reinterpret_cast<const float *>(tensorData(g.aScale));
    const float scaleB = *reinterpret_cast<const float *>(tensorData(g.bScale));
    const float factor = (1.0f / scaleA) * (1.0f / scaleB);
    for (int64_t i = 0; i < total; ++i)
      acc[i] *= factor;
  }
  if (bias && (scaled || onDnnl))
    cpu::binary(cpu::BinaryOp::Add, acc, g.biasTarget, bias, module->tensors()[g.bias].shape, acc,
                g.biasTarget);
  if (g.relu)
    cpu::unary(cpu::UnaryOp::Relu, acc, acc, total);
  if (g.gelu) // cuBLASLt's GELU epilogue is the tanh approximation
    cpu::unary(cpu::UnaryOp::GeluTanh, acc, acc, total);
  uint8_t *out = tensorData(g.out);
  for (int64_t i = 0; i < g.batch; ++i) {
    float bad = 0.0f;
    storeRun(outDesc.dtype, out, i * g.strideOut, 1, mn, acc + i * mn, bad); // float dtype
  }
  return okStatus();
}

/// The OpenBLAS path: operands decoded to FP32 (TF32-rounded when the step
/// asks), `bias` (null: none) prefilled and the GEMM added onto it, as
/// cpu::linear does, into `acc`.
Status CpuBackend::runBlasGemm(const GemmDesc &g, float *acc, const float *bias) {
  const int64_t mn = g.m * g.n;
  auto operand = [&](int32_t t, Scratch &s) -> const float * {
    const float *p = floatOperand(t, s);
    return p && g.tf32 ? tf32Copy(p, module->tensors()[t].elements, s) : p;
  };
  const float *a = operand(g.a, scratch[0]);
  const float *b = operand(g.b, scratch[1]);
  if (!a || !b)
    return outOfMemory(g.name, module->tensors()[a ? g.b : g.a].elements * 4);
  float beta = 0.0f;
  if (bias) {
    cpu::expand(bias, module->tensors()[g.bias].shape, acc, g.biasTarget);
    beta = 1.0f;
  }
  const int64_t ldb = g.transB ? g.k : g.n;
  if (g.batch == 1 || (g.strideB == 0 && g.strideA == g.m * g.k)) {
    // One tall GEMM, as cpu::linear and cpu::matmul call it.
    cpu::detail::sgemm(g.transB, g.batch * g.m, g.n, g.k, a, g.k, b, ldb, acc, g.n, beta);
  } else {
    for (int64_t i = 0; i < g.batch; ++i)
      cpu::detail::sgemm(g.transB, g.m, g.n, g.k, a + i * g.strideA, g.k, b + i * g.strideB, ldb,
                         acc + i * mn, g.n, beta);
  }
  return okStatus();
}

} // namespace mixprec::runtime
