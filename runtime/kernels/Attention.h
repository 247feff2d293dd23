//===- Attention.h - Scaled dot-product attention reference -----*- C++ -*-===//
//
// The reference of mp.attention (and of its gradient), the op the compiler
// fuses matmul -> scale/mask -> softmax -> matmul into. The interpreter and
// the CPU backend call these; the CUDA kernels (FlashAttention-2 style, see
// codegen/Cuda/AttentionKernel.h) are checked against them on the shim
// within the bound that header documents.
//
// The definition, per batch b, head h, query row i (all in T, the
// accumulator type: float, or double for the interpreter's FP64 mode):
//
//   s[i,j] = scale * sum_d q[i,d] * k[j,d] + bias[i,j]       (bias optional)
//   s[i,j] = -inf where causal and j > i + (seqK - seqQ)     (bottom-right
//            aligned, as PyTorch's is_causal for seqQ == seqK)
//   m[i]   = max_j s[i,j];  p[i,j] = exp(s[i,j] - m[i]);  l[i] = sum_j p[i,j]
//   out[i] = (sum_j round_P(p[i,j]) * v[j]) / l[i]
//   lse[i] = m[i] + log(l[i])
//
// round_P is the rounding the tensor-core kernel applies to the
// probabilities before its P.V product (the dtype of V): none for FP32,
// round to nearest even BF16 or FP16, or for FP8 E4M3 e4m3(p * 256) / 256
// with e4m3 the round to nearest even E4M3 value, subnormals included (p
// <= 1, so p * 256 never saturates; the scale, a power of two, keeps p's
// significant range out of E4M3's subnormals and is exact). The sum l uses
// the unrounded p, as FlashAttention does. A row whose every score is -inf
// (all keys masked) has out = 0 and lse = -inf (FlashAttention's
// convention; PyTorch's math path gives NaN).
//
// Q, K, V arrive as the values of their storage dtype (the caller decodes
// BF16/FP16/FP8 to T; an FP8 operand's per-tensor descale is already
// applied), dense row-major: q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv],
// out [B,H,Sq,Dv], lse [B,H,Sq]. The bias is any tensor broadcast to
// [B,H,Sq,Sk]: `biasStrides` gives its element stride per dim of
// [B,H,Sq,Sk] (0 for a broadcast dim).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_KERNELS_ATTENTION_H
#define MIXPREC_RUNTIME_KERNELS_ATTENTION_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixprec::runtime::cpu {

/// How the probabilities are rounded before the P.V product.
enum class AttentionRounding { None, BF16, FP16, FP8E4M3 };

struct AttentionParams {
  int64_t batch = 1, heads = 1, seqQ = 0, seqK = 0, headDim = 0, valueDim = 0;
  double scale = 1.0;
  bool causal = false;
  AttentionRounding pRounding = AttentionRounding::None;
};

/// The shapes' part of AttentionParams: q [B,H,Sq,D], k [B,H,Sk,D],
/// v [B,H,Sk,Dv] (checked by the caller: common/Shapes.h's attentionShape).
inline AttentionParams attentionShapeParams(const std::vector<int64_t> &q,
                                            const std::vector<int64_t> &k,
                                            const std::vector<int64_t> &v) {
  AttentionParams p;
  p.batch = q[0];
  p.heads = q[1];
  p.seqQ = q[2];
  p.seqK = k[2];
  p.headDim = q[3];
  p.valueDim = v[3];
  return p;
}

/// The element strides of a dense bias of shape `bias` (rank <= 4) read as
/// [B, H, Sq, Sk] under NumPy broadcasting: 0 for a dim it broadcasts.
inline std::array<int64_t, 4> attentionBiasStrides(const std::vector<int64_t> &bias) {
  std::array<int64_t, 4> strides = {0, 0, 0, 0};
  int64_t stride = 1;
  for (std::size_t i = 0; i < bias.size() && i < 4; ++i) {
    const int64_t dim = bias[bias.size() - 1 - i];
    strides[3 - i] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

/// Forward: out (and lse when not null) from q, k, v and the optional bias
/// (null: none; biasStrides then ignored).
template <typename T>
void attention(const T *q, const T *k, const T *v, const T *bias,
               const std::array<int64_t, 4> &biasStrides, const AttentionParams &p, T *out,
               T *lse);

/// Backward: dq, dk, dv from the forward's inputs, its out and lse, and the
/// gradient of out. The probabilities are recomputed from lse
/// (p = exp(s - lse), 0 where s or lse is -inf); with
/// D[i] = sum_e dOut[i,e] * out[i,e] (dOut as given):
///   dv[j] = sum_i round_G(p[i,j]) * round_G(dOut[i])
///   dp[i,j] = sum_e round_G(dOut[i,e]) * v[j,e]
///   ds[i,j] = round_G(p[i,j] * (dp[i,j] - D[i]))
///   dq[i] = scale * sum_j ds[i,j] * k[j];  dk[j] = scale * sum_i ds[i,j] * q[i]
/// (each sum accumulated, then multiplied by scale; the bias gets no
/// gradient: masks are constants). round_G is the rounding to the operand
/// format of the backward kernel's tensor-core products, all of them in
/// one format G: none for pRounding None, FP16 for FP16, BF16 for BF16 and
/// for FP8E4M3 (the FP8 kernel widens q, k, v to BF16, exactly; BF16 keeps
/// the range of small gradients that FP16 would flush). q, k and v are
/// values of G already (FP8 values widen exactly), so only p, dOut and ds
/// round. dq, dk, dv are the gradients of the decoded q, k, v (an FP8
/// operand's descale applied).
template <typename T>
void attentionBackward(const T *q, const T *k, const T *v, const T *bias,
                       const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                       const T *out, const T *lse, const T *dOut, T *dq, T *dk, T *dv);

/// round_P(p) for `r` (see the definition above).
template <typename T> T roundAttentionP(T p, AttentionRounding r);

/// round_G(x) for `r` (see attentionBackward).
template <typename T> T roundAttentionGradOperand(T x, AttentionRounding r);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_KERNELS_ATTENTION_H
