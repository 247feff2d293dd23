//===- CpuGemmStep.cpp - GEMM steps on oneDNN or OpenBLAS ------------------===//
//
// oneDNN's matmul on the operands as stored, its weight packed at load
// (CpuDnnl.h), where it takes the step; else the operands decoded to FP32
// (TF32-rounded when the step asks) and one sgemm call per step or per
// batch element. Then the FP8 dequantization, bias and epilogue in FP32,
// and one rounding to the output's dtype (then the FP8 quantization of the
// kernel after it, where findGemmQuantizes gave it the step, or the amax
// the kernel after it takes, where findGemmAmaxes did).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "runtime/kernels/Gemm.h"
#include "runtime/kernels/Kernels.h"

#include <cstring>

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
  if (out) // exact, element by element: slices over the threads
    forSlices(d.elements,
              [&](int64_t begin, int64_t n) { loadRun(d.dtype, data, begin, 1, n, out + begin); });
  return out;
}

Status CpuBackend::runGemm(const GemmDesc &g) {
  const int64_t mn = g.m * g.n;
  if (mn == 0)
    return okStatus();
  const TensorDesc &outDesc = module->tensors()[g.out];
  const size_t index = static_cast<size_t>(&g - module->gemms().data());
  const bool onDnnl = dnnl.handles(index);
  // An FP32 output, one block and apart from the operands, is the
  // accumulator itself: no copy at the end.
  uint8_t *out = tensorData(g.out);
  const bool inPlace = outDesc.dtype == DType::F32 && (g.batch == 1 || g.strideOut == mn) &&
                       !overlaps(g.out, g.a) && !overlaps(g.out, g.b) &&
                       (g.bias == -1 || !overlaps(g.out, g.bias));
  float *acc = inPlace ? reinterpret_cast<float *>(out) : scratch[2].floats(g.batch * mn);
  if (!acc)
    return outOfMemory(g.name, (g.batch * mn) * 4);
  const bool scaled = g.aScale != -1;
  const float *bias = nullptr;
  if (g.bias != -1 && !(bias = floatOperand(g.bias, scratch[3])))
    return outOfMemory(g.name, module->tensors()[g.bias].elements * 4);
  const cpu::Shape *biasShape = bias ? &module->tensors()[g.bias].shape : nullptr;
  const bool rowBias = bias && !biasShape->empty() && biasShape->back() == g.n &&
                       !g.biasTarget.empty() && g.biasTarget.back() == g.n &&
                       cpu::numElements(*biasShape) == g.n;
  // The own packed GEMM applies FP8's factor, then adds a row bias, as it
  // stores its sums (the order of the passes below).
  const bool ownKernel = onDnnl && dnnl.ownKernel(index);
  const bool scaleInGemm = scaled && ownKernel;
  const bool biasInGemm = rowBias && ownKernel;
  const float factor = scaled ? (1.0f / *reinterpret_cast<const float *>(tensorData(g.aScale))) *
                                    (1.0f / *reinterpret_cast<const float *>(tensorData(g.bScale)))
                              : 1.0f;
  // oneDNN: the products' sums, then the bias added (as after FP8 scaling).
  // An A it widens (FP8 to BF16, exact) widened first, in slices over the
  // threads, unless the kernel that wrote it stored it widened.
  if (onDnnl) {
    const int64_t wide = dnnl.wideElementsA(index);
    const uint8_t *a = tensorData(g.a);
    const void *aWide = nullptr;
    if (wide > 0 && wideStore.offset[g.a] >= 0) {
      aWide = wideData(g.a);
    } else if (wide > 0) {
      forSlices(wide, [&](int64_t begin, int64_t n) { dnnl.widenA(index, a, begin, n); });
      aWide = dnnl.widenedA();
    }
    if (Status s = dnnl.run(index, a, tensorData(g.b), acc, aWide, biasInGemm ? bias : nullptr,
                            scaleInGemm ? &factor : nullptr);
        !s.ok())
      return s.withContext(g.name + ": ");
  }
  if (!onDnnl)
    if (Status s = runBlasGemm(g, acc, scaled ? nullptr : bias); !s.ok())
      return s;
  const int64_t total = g.batch * mn;
  const bool scalePass = scaled && !scaleInGemm;                  // else applied in acc
  const bool addBias = bias && (scaled || onDnnl) && !biasInGemm; // else already in acc
  // The quantize kernel after it (findGemmQuantizes): elements [first,
  // first + n) of the output, in FP32, rounded to the output's dtype as
  // its store would, quantized as the kernel's Quantize and stored to the
  // kernel's output (wide where that is stored wide); the output itself is
  // read by nothing else and not written.
  const GemmQuantize *quantize =
      index < gemmQuantizes.size() && gemmQuantizes[index].kernelStep >= 0 ? &gemmQuantizes[index]
                                                                           : nullptr;
  const float quantizeScale = !quantize ? 0.0f
                              : quantize->scale == -1
                                  ? quantize->value
                                  : *reinterpret_cast<const float *>(tensorData(quantize->scale));
  auto quantizeOut = [&](float *values, int64_t first, int64_t n) {
    if (outDesc.dtype != DType::F32)
      num::roundArray(formatOf(outDesc.dtype), values, values, static_cast<size_t>(n),
                      storeOptions(outDesc.dtype));
    // Scaled, then rounded once by the saturating encode: the bytes of
    // quantizeFp8 (as the kernel's Quantize stores them).
    num::scaleForQuantize(values, quantizeScale, values, static_cast<size_t>(n));
    if (wideStore.offset[quantize->output] >= 0) {
      storeRunWide(quantize->dtype, wideStore.type[quantize->output], wideData(quantize->output),
                   first, 1, n, values);
    } else {
      float bad = 0.0f; // (an FP8 dtype takes any value)
      storeRun(quantize->dtype, tensorData(quantize->output), first, 1, n, values, bad);
    }
  };
  // The amax kernel after it (findGemmAmaxes): the amax of the FP32
  // values, rounded to the output's dtype as its store rounds them (the
  // largest stored magnitude), to the kernel's scalar output.
  const GemmAmax *amax =
      index < gemmAmaxes.size() && gemmAmaxes[index].kernelStep >= 0 ? &gemmAmaxes[index] : nullptr;
  auto storeAmax = [&](float value) {
    if (outDesc.dtype != DType::F32)
      value = num::roundTo(formatOf(outDesc.dtype), value, storeOptions(outDesc.dtype));
    std::memcpy(tensorData(amax->output), &value, sizeof value);
  };
  if (addBias && !rowBias) {
    // A bias of another shape: scale, bias, ReLU, GELU and the rounding to
    // the output's dtype, each a pass over the whole, on this thread.
    if (scalePass)
      for (int64_t i = 0; i < total; ++i)
        acc[i] *= factor;
    cpu::binary(cpu::BinaryOp::Add, acc, g.biasTarget, bias, *biasShape, acc, g.biasTarget);
    if (g.relu)
      cpu::unary(cpu::UnaryOp::Relu, acc, acc, total);
    if (g.gelu)
      cpu::unary(cpu::UnaryOp::GeluTanh, acc, acc, total);
    if (quantize) { // (one block: findGemmQuantizes)
      quantizeOut(acc, 0, total);
      return okStatus();
    }
    if (amax) // (one block: findGemmAmaxes)
      storeAmax(amaxOf(acc, total, 0.0f));
    for (int64_t i = 0; i < g.batch && !inPlace; ++i) {
      float bad = 0.0f;
      storeRun(outDesc.dtype, out, i * g.strideOut, 1, mn, acc + i * mn, bad); // float dtype
    }
    return okStatus();
  }
  // Else the same steps row by row (each row's in the same order: the same
  // bits), the rows in chunks over the threads.
  if (inPlace && !scalePass && !addBias && !g.relu && !g.gelu && !quantize && !amax)
    return okStatus();
  const int64_t rows = g.batch * g.m;
  const int64_t chunks = chunksOf(rows, total);
  std::vector<float> chunkAmax(amax ? chunks : 0, 0.0f);
  pool->run(chunks, [&](int64_t c, int) {
    for (int64_t r = rows * c / chunks, end = rows * (c + 1) / chunks; r < end; ++r) {
      float *row = acc + r * g.n;
      if (scalePass)
        for (int64_t j = 0; j < g.n; ++j)
          row[j] *= factor;
      if (addBias)
        for (int64_t j = 0; j < g.n; ++j)
          row[j] += bias[j];
      if (g.relu)
        cpu::unary(cpu::UnaryOp::Relu, row, row, g.n);
      if (g.gelu) // cuBLASLt's GELU epilogue is the tanh approximation
        cpu::unary(cpu::UnaryOp::GeluTanh, row, row, g.n);
      if (quantize) {
        quantizeOut(row, r * g.n, g.n);
        continue;
      }
      if (amax)
        chunkAmax[c] = amaxOf(row, g.n, chunkAmax[c]);
      float bad = 0.0f;
      if (!inPlace)
        storeRun(outDesc.dtype, out, (r / g.m) * g.strideOut + (r % g.m) * g.n, 1, g.n, row,
                 bad); // float dtype
    }
  });
  if (amax) {
    float value = 0.0f;
    for (float a : chunkAmax)
      value = mergeAmax(value, a);
    storeAmax(value);
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
