//===- AttentionKernel.h - FlashAttention-2 style CUDA kernels --*- C++ -*-===//
//
// CUDA C++ for mp.attention (runtime/kernels/Attention.h defines it) and its
// gradient, FlashAttention-2 style: no kernel writes the Sq x Sk scores.
//
// Forward: one block of 4 warps per (batch, head, 64 query rows), each warp
// 16 rows (FP32: 2 warps, 32 rows, Q in shared memory). K and V tiles (64
// keys; 16 for FP32) pass through static shared memory (at most 36 KB);
// S = Q K^T and O += round_P(P) V are mma.sync.aligned.m16n8k16 products
// with FP32 accumulation (BF16 or FP16 operands; FP8 E4M3 operands widen
// to BF16, exactly, before the product, which sm_80 and sm_90 both run;
// the probabilities enter as the E4M3 values of p * 256). The softmax is
// online in FP32: a running max and sum per row, the accumulator rescaled
// by exp(m_old - m_new) when the max grows, divided by the sum at the end;
// lse = m + log(l) is written (f32). FP32 operands take the same code with
// the product built from shuffles and FMAs (no tensor cores). That
// shuffled form, the same fragment semantics, is also what runs on the
// CUDA shim (tests/cuda_shim), so one kernel text serves both: the inline
// PTX is under #if defined(__CUDA_ARCH__).
//
// Backward: one launch, deterministic (no atomics: every output element is
// written once, by the block owning it). With R = 64 (16 for FP32), per
// (batch, head) the first ceil(Sk / R) blocks each own R keys and
// accumulate their dK and dV over the query tiles (16 rows) that see them;
// the next ceil(Sq / R) blocks each own R query rows and accumulate dQ over
// the key tiles (32 keys; 16 for FP32). Both recompute the scores and
// p = exp(s - lse) (nothing of size Sq x Sk is stored) and
// D[i] = sum_e dOut[i,e] * out[i,e] for their rows in FP32. The products'
// operands round as Attention.h's round_G says (dOut, p, ds).
//
// Kernel parameters, as device pointers (the order the CUDA backend binds):
//   forward:  q, k, v, [bias], [q_descale, k_descale, v_descale], out, lse
//   backward: q, k, v, [bias], [descales], out, lse, dout, dq, dk, dv
// q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv] of operandType; out, dout, dq,
// dk, dv of outType, dense; lse f32 [B,H,Sq]; the bias [B,H,Sq,Sk] of
// biasType read at biasStrides (0 for a broadcast dim); descales rank-0 f32.
// The FP8 kernels compute with the raw E4M3 values and apply the descales
// (d_q * d_k to the scores, d_v to the output and dp; d_k to dq, d_q to dk),
// so they compute Attention.h's definition on the decoded q, k, v.
// q, k, v and dout must be 16-byte aligned (the memory plan aligns buffers
// to 256): tiles are copied 16 bytes at a time. Every block has 128
// threads (FP32: 64 in the forward, 32 in the backward); no dynamic shared
// memory; the grid is 1-D (CudaKernel::launch says its size).
//
// Supported: operandType f32, bf16, f16, f8E4M3FN; outType f32, bf16, f16;
// biasType f32, bf16, f16; headDim and valueDim multiples of 16 from 16 to
// 128; every extent >= 1 (any sequence length: every load and store is
// guarded); descales only with f8E4M3FN operands; a grid of at most 2^31 - 1
// blocks. Anything else is refused (nullopt, with the reason).
//
// ---- How far the kernels are from the reference ----
// (tests/unit/cuda_shim/AttentionShimTest.cpp asserts exactly these bounds)
// u = 2^-24 (FP32), g(n) = 2 n u / (1 - 2 n u): an FP32 sum of n terms, at
// 2u per addition because tensor cores may truncate their FP32 additions
// (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021).
// u_P, eta_P: round_P's relative error and its absolute error below the
// normal range: BF16 2^-8, 2^-134; FP16 2^-11, 2^-25; FP8 (E4M3 of p * 256,
// divided by 256) 2^-4, 2^-18; FP32 0, 0. u_G, eta_G likewise for round_G.
// All other quantities are exact (the double reference), per row i of a
// head: n_i unmasked keys, pi_ij = p_ij / l_i the softmax weights,
// Vbar_ie = sum_j pi_ij |v_je|, Vmax_ie = max over unmasked j of |v_je|.
//
// The scores. An FP32 dot product of D exact products (BF16/FP16/E4M3
// operands multiply exactly), times the scale (itself rounded to FP32,
// times the descales), plus the bias:
//   |s_kernel - s| <= Delta_i = g(D + 4) * max_j (|scale| sum_d |q_id k_jd| + |bias_ij|).
// So the kernel's softmax weights are pi_ij * e^(+-2 Delta_i).
//
// Forward, elementwise:
//   |out_k - out_ref| <= (2 u_P e^(2 Delta) + (1 + u_P)(e^(2 Delta) - 1)) Vbar
//                        + 2 n eta_P Vmax + 24 (n + 8) u Vmax,
//   |lse_k - lse_ref| <= Delta + 24 (n + 8) u + 4 u |lse_ref|,
// plus the rounding of the stored out to outType, u_out (|out_ref| + bound)
// + eta_out (BF16 2^-8, 2^-134; FP16 2^-11, 2^-25; f32 2^-24, 2^-150).
// Why: the reference rounds p_ij = exp(s_ij - m_i) with m_i the row's max;
// the kernel rounds exp(s_ij - M) with M the running max when key j's tile
// is processed, then rescales by exp(M - m_i) <= 1. Both roundings are
// within u_P of their argument, but not of each other: relative to the
// same weight they differ by up to 2 u_P (the first term; the rest of it
// is the score error moving the weights). Below round_P's normal range the
// error is absolute, eta_P per key and side (the second). The last term
// collects FP32 roundings, each relative to the weights' sum: the two
// sums over n keys (l and the P.V accumulation, 2u per addition: 4n u),
// exp's argument (u |x| with e^x |x| <= 1/e: n u), exp itself (2 ulp),
// the rescaling (one product per tile on each side, at most n + 8 tiles)
// and the division and descale; the weights enter numerator and
// denominator, so twice: 2 * (4n + n + 2 (n + 8) + 8) u <= 24 (n + 8) u.
// The exp(m_old - m_new) factors themselves cancel: the same value
// multiplies the accumulator and the sum.
//
// Backward, given the same out, lse and dOut, with x_ij = s_ij - lse_i,
// y_ij = dp_ij - D_i (Attention.h's quantities, exact):
//   eps_p = e^(Delta_i + u (|x_ij| + Delta_i) + 4u) - 1
//           (|p_k - p| <= p eps_p: the score error, the subtraction of
//           lse, exp's 2 ulp)
//   eps_D = g(Dv) sum_e |dOut_ie out_ie|
//   eps_dp = g(Dv + 1) sum_e |round_G(dOut_ie) v_je|
//   eps_y = eps_dp + eps_D + 2u (|dp| + |D| + eps_dp + eps_D)
//   E_ds = p eps_p |y| + p (1 + eps_p) (eps_y + u (|y| + eps_y))   (before round_G)
//   R_ds = E_ds + u_G (2 |ds_pre| + E_ds) + 2 eta_G,  ds_pre = p y
//   R_p  = p eps_p + u_G (2 p + p eps_p) + 2 eta_G
// (round_G of two arguments a distance E apart differ by at most
// E + u_G (|a| + |b|) + 2 eta_G), and then, elementwise,
//   |dv_k - dv_ref| <= sum_i (R_p + g(Sq + 16) (|round_G(p)| + R_p)) |round_G(dOut_ie)|
//   |dq_k - dq_ref| <= |scale| sum_j (R_ds + g(Sk + 16) (|ds| + R_ds)) |k_jd| + 4u |dq_ref|
//   |dk_k - dk_ref| <= |scale| sum_i (R_ds + g(Sq + 16) (|ds| + R_ds)) |q_id| + 4u |dk_ref|
// (sums over unmasked pairs, ds = round_G(ds_pre) the reference's; the
// g(n + 16) terms are the FP32 accumulation over every key or query tile,
// the 4u the products by the scale and descale), plus the rounding of
// the stored results to outType.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_ATTENTIONKERNEL_H
#define MIXPREC_CODEGEN_CUDA_ATTENTIONKERNEL_H

#include "codegen/Cuda/CudaEmitter.h"

#include "mlir/IR/Types.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mixprec::codegen {

enum : unsigned {
  kWriteOut = 1,
  kWriteLse = 2,
  kWriteDq = 4,
  kWriteDk = 8,
  kWriteDv = 16,
};

struct AttentionKernelSpec {
  int64_t batch = 1, heads = 1, seqQ = 1, seqK = 1, headDim = 64, valueDim = 64;
  double scale = 1.0;
  bool causal = false;
  mlir::Type operandType; ///< of q, k, v: f32, bf16, f16 or f8E4M3FN
  mlir::Type outType;     ///< of out (and of dout, dq, dk, dv in the backward)
  bool hasBias = false;
  mlir::Type biasType;
  std::array<int64_t, 4> biasStrides = {0, 0, 0, 0};
  /// FP8 operands: three rank-0 f32 inputs (descales of q, k, v) after the
  /// bias.
  bool fp8Descales = false;
  /// The outputs the kernel writes (kWrite* bits; the forward's out and
  /// lse, the backward's dq, dk, dv): a routine call writes one result, so
  /// its kernel takes that output alone; blocks with nothing to write
  /// return at once.
  unsigned writes = ~0u;
  /// The backward's bias (and descales) after out, lse and dout: the order
  /// of the attention_grad routine's inputs.
  bool biasAfterGradInputs = false;
};

/// Why `spec` has no attention kernel, or "" when it has one.
std::string attentionKernelUnsupported(const AttentionKernelSpec &spec);

/// The forward kernel `name` (a C identifier); nullopt, with the reason in
/// `*why` when not null, for a spec attentionKernelUnsupported refuses.
std::optional<CudaKernel> emitAttentionForward(const AttentionKernelSpec &spec,
                                               const std::string &name, std::string *why = nullptr);

/// The backward kernel `name`; nullopt as emitAttentionForward.
std::optional<CudaKernel> emitAttentionBackward(const AttentionKernelSpec &spec,
                                                const std::string &name,
                                                std::string *why = nullptr);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_ATTENTIONKERNEL_H
