//===- GemmPlan.cpp - a Gemm step as cuBLASLt sees it ---------------------===//
#include "runtime/src/backends/cuda/GemmPlan.h"

namespace mixprec::runtime::cuda {
namespace {

using schema::DType;

bool isFp8(DType dtype) { return dtype == DType::F8E4M3FN || dtype == DType::F8E5M2; }

/// A status naming the step: what cuBLASLt cannot run.
Status unsupported(const GemmDesc &g, const std::string &what) {
  return Status(MIXPREC_UNIMPLEMENTED, "CUDA backend: " + g.name + ": " + what);
}

/// How `bias` (shape) broadcasts over `target`, whose last dims hold the n
/// columns of the [rows, n] output: Vector when its values depend only on
/// the column and lie contiguous, Scalar for one value, Matrix when it has
/// the target's shape, else None (it varies along rows: not expressible).
GemmBias classifyBias(const std::vector<int64_t> &bias, const std::vector<int64_t> &target,
                      int64_t n) {
  int64_t elements = 1, total = 1;
  for (int64_t d : bias)
    elements *= d;
  for (int64_t d : target)
    total *= d;
  // Dims of `bias` right-aligned over `target`; 1 where it has none.
  auto biasDim = [&](size_t i) -> int64_t {
    const size_t offset = target.size() - bias.size();
    return i < offset ? 1 : bias[i - offset];
  };
  // Vector: the trailing target dims that make up n are the bias's own,
  // every dim before them is 1 in the bias.
  int64_t columns = 1;
  size_t i = target.size();
  bool vector = elements == n;
  while (vector && i > 0 && columns < n) {
    --i;
    vector = biasDim(i) == target[i];
    columns *= target[i];
  }
  for (size_t j = 0; vector && j < i; ++j)
    vector = biasDim(j) == 1;
  if (vector && columns == n)
    return GemmBias::Vector;
  if (elements == 1)
    return GemmBias::Scalar;
  if (elements == total)
    return GemmBias::Matrix;
  return GemmBias::None;
}

/// Checks the operand and output dtypes and sets the compute and data types.
Status planTypes(const GemmDesc &g, const std::vector<TensorDesc> &tensors, GemmPlan &p) {
  const DType a = tensors[g.a].dtype, b = tensors[g.b].dtype, out = tensors[g.out].dtype;
  const bool fp8 = isFp8(a) || isFp8(b);
  if (fp8 && !(isFp8(a) && isFp8(b)))
    return unsupported(g, std::string("a is ") + dtypeName(a) + " and b " + dtypeName(b) +
                              ": cuBLASLt multiplies FP8 only by FP8");
  if (!fp8 && a != b)
    return unsupported(g, std::string("a is ") + dtypeName(a) + " and b " + dtypeName(b) +
                              ": cuBLASLt needs both operands in one dtype");
  if (a == DType::F8E5M2 && b == DType::F8E5M2)
    return unsupported(g, "cuBLASLt has no E5M2 x E5M2 GEMM (E4M3 x E5M2 and E5M2 x E4M3 "
                          "are supported)");
  if (isFp8(out) || (a == DType::F32 && out != DType::F32) ||
      (!fp8 && a != DType::F32 && out != a && out != DType::F32))
    return unsupported(g, std::string(dtypeName(a)) + " operands with a " + dtypeName(out) +
                              " output: cuBLASLt writes f32 products in f32, f16/bf16 "
                              "products in their dtype or f32, FP8 products in f32, f16 "
                              "or bf16");
  if (fp8 && !g.transB)
    return unsupported(g, "an FP8 GEMM needs b stored transposed ([n, k], trans_b), the TN "
                          "layout cuBLASLt requires on sm_89/sm_90; the compiler must give "
                          "FP8 GEMMs transposed weights");
  // cuBLASLt's FP8 GEMMs want 16-byte aligned leading dims: on an H200
  // (cuBLASLt 13.1) its heuristic found no algorithm for n = 10. The
  // compiler keeps such GEMMs in BF16 (fp8GemmDims); a module that asks
  // anyway gets this, not cuBLASLt's bare "no algorithm".
  if (fp8 && (g.k % 16 != 0 || g.n % 16 != 0))
    return unsupported(g, "an FP8 GEMM needs k and n multiples of 16 (cuBLASLt's FP8 "
                          "alignment); this one has k = " +
                              std::to_string(g.k) + ", n = " + std::to_string(g.n) +
                              "; compile it in BF16");
  if ((g.aScale != -1) && !fp8)
    return unsupported(g, std::string("dequantization scales on ") + dtypeName(a) +
                              " operands: cuBLASLt applies A/B scales to FP8 operands only");
  p.fp8Scales = g.aScale != -1;
  cudaDataTypeOf(b, p.a.type); // cuBLASLt's A is the step's b
  cudaDataTypeOf(a, p.b.type);
  cudaDataTypeOf(out, p.d.type);
  p.c.type = p.d.type;
  // TF32 changes nothing for 16-bit or FP8 operands (their values are TF32
  // values already), so only FP32 GEMMs compute in it.
  p.computeType = a == DType::F32 && g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  p.scaleType = CUDA_R_32F;
  return okStatus();
}

/// Sets the bias mode, its type and the epilogue.
Status planEpilogue(const GemmDesc &g, const std::vector<TensorDesc> &tensors, GemmPlan &p) {
  if (g.bias != -1) {
    const TensorDesc &bias = tensors[g.bias], &out = tensors[g.out];
    p.bias = classifyBias(bias.shape, g.biasTarget, g.n);
    if (p.bias == GemmBias::None)
      return unsupported(g, "bias " + bias.name + " " + formatShape(bias.shape) +
                                " varies along the output's rows " +
                                formatShape(g.biasTarget) +
                                "; cuBLASLt takes a bias of n values along the last dim, "
                                "one value, or one per output element");
    // cuBLASLt reads a bias of D's type, but a bf16 one for FP8 products
    // written in f32 (its FP8 table); matrix C has D's type.
    const bool fp8ToF32 = isFp8(tensors[g.a].dtype) && out.dtype == DType::F32 &&
                          p.bias != GemmBias::Matrix;
    const DType wanted = fp8ToF32 ? DType::BF16 : out.dtype;
    if (bias.dtype != wanted)
      return unsupported(g, "bias " + bias.name + " is " + dtypeName(bias.dtype) + " but the " +
                                dtypeName(out.dtype) + " output needs a " + dtypeName(wanted) +
                                " bias" + (fp8ToF32 ? " (cuBLASLt's FP8 GEMMs)" : "") +
                                "; cuBLASLt adds a bias of the output's dtype");
    cudaDataTypeOf(bias.dtype, p.biasType);
  }
  const bool vector = p.bias == GemmBias::Vector || p.bias == GemmBias::Scalar;
  if (g.relu)
    p.epilogue = vector ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (g.gelu) // tanh form in both cuBLASLt and the CPU backend
    p.epilogue = vector ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else
    p.epilogue = vector ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  p.beta = p.bias == GemmBias::Matrix ? 1.0f : 0.0f;
  return okStatus();
}

/// Sets the four layouts: operands swapped, batches folded into one tall
/// GEMM where a broadcast b and dense a and out allow (as the CPU does).
void planLayouts(const GemmDesc &g, GemmPlan &p) {
  const bool fold = g.batch > 1 && g.strideB == 0 && g.strideA == g.m * g.k &&
                    g.strideOut == g.m * g.n;
  const int64_t rows = fold ? g.batch * g.m : g.m; // cuBLASLt's N
  const int32_t count = fold ? 1 : static_cast<int32_t>(g.batch);
  const bool batched = count > 1;
  p.transa = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.transb = CUBLAS_OP_N;
  // A: the step's b, M x K after op.
  p.a.rows = g.transB ? g.k : g.n;
  p.a.cols = g.transB ? g.n : g.k;
  p.a.ld = g.transB ? g.k : g.n;
  // B: the step's a, K x N.
  p.b.rows = g.k;
  p.b.cols = rows;
  p.b.ld = g.k;
  // C and D: M x N.
  p.d.rows = g.n;
  p.d.cols = rows;
  p.d.ld = g.n;
  for (GemmLayout *l : {&p.a, &p.b, &p.d})
    l->batchCount = count;
  p.a.batchStride = batched ? g.strideB : 0;
  p.b.batchStride = batched ? g.strideA : 0;
  p.d.batchStride = batched ? g.strideOut : 0;
  const cudaDataType_t cType = p.c.type;
  p.c = p.d;
  p.c.type = cType;
}

} // namespace

bool cudaDataTypeOf(DType dtype, cudaDataType_t &out) {
  switch (dtype) {
  case DType::F32:
    out = CUDA_R_32F;
    return true;
  case DType::F16:
    out = CUDA_R_16F;
    return true;
  case DType::BF16:
    out = CUDA_R_16BF;
    return true;
  case DType::F8E4M3FN:
    out = CUDA_R_8F_E4M3;
    return true;
  case DType::F8E5M2:
    out = CUDA_R_8F_E5M2;
    return true;
  default:
    return false;
  }
}

Status planGemm(const GemmDesc &g, const std::vector<TensorDesc> &tensors, GemmPlan &out) {
  GemmPlan p;
  if (Status s = planTypes(g, tensors, p); !s.ok())
    return s;
  if (Status s = planEpilogue(g, tensors, p); !s.ok())
    return s;
  if (g.batch > INT32_MAX)
    return unsupported(g, "batch " + std::to_string(g.batch) +
                              " exceeds cuBLASLt's batch count (2^31 - 1)");
  planLayouts(g, p);
  if (g.m == 0 || g.n == 0) {
    p.mode = GemmMode::Empty;
  } else if (g.k == 0) {
    // cuBLASLt is not asked for K = 0; with no bias the CPU's result is
    // act(0) = 0 everywhere.
    if (p.bias != GemmBias::None)
      return unsupported(g, "k = 0 with a bias (out = epilogue(bias)) is not run on cuBLASLt");
    p.mode = GemmMode::Zero;
    const int64_t bytes = static_cast<int64_t>(dtypeSize(tensors[g.out].dtype));
    p.zeroBatches = g.batch;
    p.zeroBytes = g.m * g.n * bytes;
    p.zeroStride = g.strideOut * bytes;
  }
  out = p;
  return okStatus();
}

} // namespace mixprec::runtime::cuda
