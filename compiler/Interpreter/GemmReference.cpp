//===- GemmReference.cpp - reference semantics of GEMMs and convolutions --===//
//
// GEMMs run through OpenBLAS on the operands as stored (rounded to their
// dtype; TF32 GEMMs round FP32 operands to TF32 first) and accumulate in
// FP32; the result is rounded once to its dtype. In the FP64 mode (T =
// double) they run DGEMM on the double operands.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "common/numerics/BlockScaling.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "runtime/kernels/Attention.h"
#include "runtime/kernels/Kernels.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {
namespace {

/// An optional bias operand's values, or null.
template <typename T> const T *biasOf(Value bias, Evaluator &e) {
  return bias ? e.values<T>(bias) : nullptr;
}

/// An optional bias operand's shape, or empty.
cpu::Shape biasShapeOf(Value bias) { return bias ? shapeOf(bias) : cpu::Shape{}; }

/// Applies an FP8 GEMM's epilogue in FP32 (T), as cuBLASLt does: multiply
/// the accumulator by both dequantization scales (1/scale), then add the bias.
template <typename T>
void dequantizeGemm(std::vector<T> &acc, T scaleA, T scaleB, const T *bias,
                    const cpu::Shape &biasShape, const cpu::Shape &outShape) {
  T factor = (T(1) / scaleA) * (T(1) / scaleB);
  for (T &v : acc)
    v *= factor;
  if (bias)
    cpu::binary(cpu::BinaryOp::Add, acc.data(), outShape, bias, biasShape, acc.data(), outShape);
}

struct MatmulReference : ReferenceModel<MatmulReference, graph::MatmulOp> {
  template <typename T> static LogicalResult run(graph::MatmulOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput()), sa, sb;
    cpu::matmul(e.gemmOperand(op, op.getLhs(), sa), shapeOf(op.getLhs()),
                e.gemmOperand(op, op.getRhs(), sb), shapeOf(op.getRhs()), r.data(),
                shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct LinearReference : ReferenceModel<LinearReference, graph::LinearOp> {
  template <typename T> static LogicalResult run(graph::LinearOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput()), sa, sb;
    cpu::linear(e.gemmOperand(op, op.getInput(), sa), shapeOf(op.getInput()),
                e.gemmOperand(op, op.getWeight(), sb), shapeOf(op.getWeight()),
                op.getTransposeWeight(), biasOf<T>(op.getBias(), e), biasShapeOf(op.getBias()),
                r.data(), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

struct Conv2dReference : ReferenceModel<Conv2dReference, graph::Conv2dOp> {
  template <typename T> static LogicalResult run(graph::Conv2dOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput()), sa, sb;
    cpu::conv2d(e.gemmOperand(op, op.getInput(), sa), shapeOf(op.getInput()),
                e.gemmOperand(op, op.getWeight(), sb), shapeOf(op.getWeight()),
                biasOf<T>(op.getBias(), e), pairOf(op.getStrides()), quadOf(op.getPads()),
                pairOf(op.getDilations()), op.getGroups(), r.data(), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }

  /// The im2col columns of one image and group: (C/groups) kH kW x OH OW floats.
  uint64_t getScratchBytes(Operation *op) const {
    auto conv = cast<graph::Conv2dOp>(op);
    std::vector<int64_t> w = shapeOf(conv.getWeight()), out = shapeOf(conv.getOutput());
    uint64_t bytes = sizeof(float);
    for (int64_t d : {w[1], w[2], w[3], out[2], out[3]})
      bytes = mulBytes(bytes, static_cast<uint64_t>(d));
    return bytes;
  }
};

/// mp.conv and mp.conv_transpose: the N-D kernels on the GEMM operands.
template <typename Derived, typename OpT, bool transposed>
struct ConvNdReference : ReferenceModel<Derived, OpT> {
  template <typename T> static LogicalResult run(OpT op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput()), sa, sb;
    runtime::cpu::Window win = windowOf({}, op.getStrides(), op.getPads(), op.getDilations());
    const T *x = e.gemmOperand(op, op.getInput(), sa);
    const T *w = e.gemmOperand(op, op.getWeight(), sb);
    if constexpr (transposed)
      cpu::convTranspose(x, shapeOf(op.getInput()), w, shapeOf(op.getWeight()),
                         biasOf<T>(op.getBias(), e), win, op.getGroups(), r.data(),
                         shapeOf(op.getOutput()));
    else
      cpu::conv(x, shapeOf(op.getInput()), w, shapeOf(op.getWeight()), biasOf<T>(op.getBias(), e),
                win, op.getGroups(), r.data(), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }

  /// The column buffer of one image and group: (C/groups) prod(k) x the
  /// output plane (conv), or (M/groups) prod(k) x the input plane plus the
  /// transposed weight (conv_transpose).
  uint64_t getScratchBytes(Operation *op) const {
    auto conv = cast<OpT>(op);
    std::vector<int64_t> w = shapeOf(conv.getWeight());
    std::vector<int64_t> plane = shapeOf(transposed ? conv.getInput() : conv.getOutput());
    uint64_t rows = 1, cols = 1;
    for (size_t d = 1; d < w.size(); ++d)
      rows = mulBytes(rows, static_cast<uint64_t>(w[d]));
    for (size_t d = 2; d < plane.size(); ++d)
      cols = mulBytes(cols, static_cast<uint64_t>(plane[d]));
    uint64_t weightCopy = transposed ? mulBytes(rows, static_cast<uint64_t>(w[0])) : 0;
    return mulBytes(sizeof(float), mulBytes(rows, cols) + weightCopy);
  }
};
struct ConvReference : ConvNdReference<ConvReference, graph::ConvOp, false> {};
struct ConvTransposeReference
    : ConvNdReference<ConvTransposeReference, graph::ConvTransposeOp, true> {};

struct ScaledMatmulReference : ReferenceModel<ScaledMatmulReference, graph::ScaledMatmulOp> {
  template <typename T> static LogicalResult run(graph::ScaledMatmulOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    cpu::matmul(e.values<T>(op.getLhs()), shapeOf(op.getLhs()), e.values<T>(op.getRhs()),
                shapeOf(op.getRhs()), r.data(), shapeOf(op.getOutput()));
    dequantizeGemm(r, e.values<T>(op.getLhsScale())[0], e.values<T>(op.getRhsScale())[0],
                   static_cast<const T *>(nullptr), {}, shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

/// A block-scaled mp.scaled_linear: numerics::blockScaledGemm (each
/// k-block's exact sum rounded to FP32 and divided by its scales), then the
/// bias in FP32. The FP64 mode sums every a b / (sa sb) in double.
template <typename T>
void blockScaledLinear(graph::ScaledLinearOp op, Evaluator &e, std::vector<T> &r) {
  ArrayRef<int64_t> ab = *op.getInputBlock(), bb = *op.getWeightBlock();
  std::vector<int64_t> xs = shapeOf(op.getInput()), ws = shapeOf(op.getWeight());
  const int64_t k = xs.back(), n = ws[0];
  const int64_t m = static_cast<int64_t>(r.size()) / std::max<int64_t>(n, 1);
  const T *a = e.values<T>(op.getInput()), *b = e.values<T>(op.getWeight());
  const T *sa = e.values<T>(op.getInputScale()), *sb = e.values<T>(op.getWeightScale());
  if constexpr (std::is_same_v<T, float>) {
    // The verifier made both operands FP8.
    auto format = [](Value v) { return *graph::storageFormatOf(elementTypeOf(v)); };
    numerics::blockScaledGemm(format(op.getInput()), a, sa, ab[0], format(op.getWeight()), b, sb,
                              bb[0], ab[1], m, n, k, r.data());
  } else {
    const int64_t blocks = (k + ab[1] - 1) / ab[1];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t c = 0; c < k; ++c)
          acc += a[i * k + c] * b[j * k + c] /
                 (sa[(i / ab[0]) * blocks + c / ab[1]] * sb[(j / bb[0]) * blocks + c / bb[1]]);
        r[static_cast<size_t>(i * n + j)] = acc;
      }
  }
  if (op.getBias())
    cpu::binary(cpu::BinaryOp::Add, r.data(), shapeOf(op.getOutput()), biasOf<T>(op.getBias(), e),
                biasShapeOf(op.getBias()), r.data(), shapeOf(op.getOutput()));
}

struct ScaledLinearReference : ReferenceModel<ScaledLinearReference, graph::ScaledLinearOp> {
  template <typename T> static LogicalResult run(graph::ScaledLinearOp op, Evaluator &e) {
    std::vector<T> r = e.alloc<T>(op.getOutput());
    if (op.getInputBlock()) {
      blockScaledLinear(op, e, r);
      e.setFloat(op.getOutput(), std::move(r));
      return success();
    }
    cpu::linear(e.values<T>(op.getInput()), shapeOf(op.getInput()), e.values<T>(op.getWeight()),
                shapeOf(op.getWeight()), op.getTransposeWeight(), nullptr, {}, r.data(),
                shapeOf(op.getOutput()));
    dequantizeGemm(r, e.values<T>(op.getInputScale())[0], e.values<T>(op.getWeightScale())[0],
                   biasOf<T>(op.getBias(), e), biasShapeOf(op.getBias()), shapeOf(op.getOutput()));
    e.setFloat(op.getOutput(), std::move(r));
    return success();
  }
};

} // namespace

/// mp.attention: cpu::attention on Q, K and V as stored; the probabilities
/// are rounded to V's dtype before the P.V product, as the CUDA kernel's
/// tensor cores take them (in the FP64 mode, and for FP32, they are not).
/// The parameters of mp.attention or mp.attention_grad: shapes, scale,
/// mask, and P rounded to V's dtype (not in the FP64 mode, nor for FP32).
template <typename T, typename OpT> cpu::AttentionParams attentionParams(OpT op) {
  cpu::AttentionParams p = cpu::attentionShapeParams(shapeOf(op.getQuery()), shapeOf(op.getKey()),
                                                     shapeOf(op.getValue()));
  p.scale = op.getScale().convertToDouble();
  p.causal = op.getCausal();
  Type vType = cast<RankedTensorType>(op.getValue().getType()).getElementType();
  if (std::is_same_v<T, float>)
    p.pRounding = vType.isBF16()  ? cpu::AttentionRounding::BF16
                  : vType.isF16() ? cpu::AttentionRounding::FP16
                                  : cpu::AttentionRounding::None;
  return p;
}

/// mp.attention: cpu::attention on Q, K and V as stored; the probabilities
/// are rounded to V's dtype before the P.V product, as the CUDA kernel's
/// tensor cores take them.
struct AttentionReference : ReferenceModel<AttentionReference, graph::AttentionOp> {
  template <typename T> static LogicalResult run(graph::AttentionOp op, Evaluator &e) {
    std::vector<T> out = e.alloc<T>(op.getOutput()), lse = e.alloc<T>(op.getLse());
    Value bias = op.getBias();
    cpu::attention<T>(e.values<T>(op.getQuery()), e.values<T>(op.getKey()),
                      e.values<T>(op.getValue()), bias ? e.values<T>(bias) : nullptr,
                      cpu::attentionBiasStrides(biasShapeOf(bias)), attentionParams<T>(op),
                      out.data(), lse.data());
    e.setFloat(op.getOutput(), std::move(out));
    e.setFloat(op.getLse(), std::move(lse));
    return success();
  }
};

/// mp.attention_grad: cpu::attentionBackward, each gradient rounded once.
struct AttentionGradReference : ReferenceModel<AttentionGradReference, graph::AttentionGradOp> {
  template <typename T> static LogicalResult run(graph::AttentionGradOp op, Evaluator &e) {
    std::vector<T> dq = e.alloc<T>(op.getQueryGrad()), dk = e.alloc<T>(op.getKeyGrad()),
                   dv = e.alloc<T>(op.getValueGrad());
    Value bias = op.getBias();
    cpu::attentionBackward<T>(e.values<T>(op.getQuery()), e.values<T>(op.getKey()),
                              e.values<T>(op.getValue()), bias ? e.values<T>(bias) : nullptr,
                              cpu::attentionBiasStrides(biasShapeOf(bias)), attentionParams<T>(op),
                              e.values<T>(op.getOut()), e.values<T>(op.getLse()),
                              e.values<T>(op.getOutGrad()), dq.data(), dk.data(), dv.data());
    e.setFloat(op.getQueryGrad(), std::move(dq));
    e.setFloat(op.getKeyGrad(), std::move(dk));
    e.setFloat(op.getValueGrad(), std::move(dv));
    return success();
  }
};

void attachGemmReferenceModels(MLIRContext *ctx) {
  graph::AttentionOp::attachInterface<AttentionReference>(*ctx);
  graph::AttentionGradOp::attachInterface<AttentionGradReference>(*ctx);
  graph::MatmulOp::attachInterface<MatmulReference>(*ctx);
  graph::LinearOp::attachInterface<LinearReference>(*ctx);
  graph::Conv2dOp::attachInterface<Conv2dReference>(*ctx);
  graph::ConvOp::attachInterface<ConvReference>(*ctx);
  graph::ConvTransposeOp::attachInterface<ConvTransposeReference>(*ctx);
  graph::ScaledMatmulOp::attachInterface<ScaledMatmulReference>(*ctx);
  graph::ScaledLinearOp::attachInterface<ScaledLinearReference>(*ctx);
}

} // namespace mixprec::compiler
