//===- AttentionBlocked.h - Blocked attention forward for the CPU -*- C++ -*-===//
//
// The forward of mp.attention (runtime/kernels/Attention.h defines it) on
// FP32 operands, for the CPU backend: the online softmax of the CUDA
// forward (codegen/Cuda/AttentionKernel.h, FlashAttention-2), vectorised,
// with tile-sized scratch and no Sq x Sk buffer. Operands and layouts are
// the reference's (q, k, v and the bias decoded to float by the caller).
//
// The work is cut into units, one per (batch, head, block of 32 query
// rows), numbered (b * H + h) * ceil(Sq / 32) + block. A unit copies its
// queries transposed into scratch, then takes its rows through the key
// tiles (64 keys) that hold a key any of them sees (causal: the tiles past
// its last row's diagonal are skipped). Per tile, s = scale * q.k is
// computed with d outermost, vectorised over the block's rows, each dot
// product summed in order d = 0, 1, ... (the reference's order: the same
// FP32 scores as cpu::attention<float>), plus the bias, -inf where masked;
// then per row, with m the running max and l the running sum,
//   m' = max(m, max_j s_j),  p_j = exp(s_j - m'),
//   l  = l * exp(m - m') + sum_j p_j,
//   acc = acc * exp(m - m') + sum_j round_P(p_j) v_j
// (both tile sums formed apart, in key order; the softmax vectorised over
// rows, the P.V product over the value dim), and at the end
// out = acc / l, lse = m + log(l) (in double, then rounded to FP32). A row
// with every key masked gets out = 0 and lse = -inf, as the reference. exp
// is attentionBlockedExp below (a polynomial GCC vectorises; std::exp per
// element would take longer than the products).
//
// Threads: units are independent; a worker runs any range of them with its
// own scratch, and a unit's results (its rows of out and lse) are the same
// bits whichever units run beside it, in whatever split or order, run after
// run. They are also the same bits on every instruction set: the kernel is
// compiled for AVX-512, AVX2 and the baseline, picked from the CPU at run
// time, all with -ffp-contract=off (no fused multiply-adds).
//
// ---- How far the kernel is from the reference ----
// (runtime/tests/AttentionBlockedTest.cpp asserts exactly this bound)
// u = 2^-24 (FP32, every operation rounded once to nearest),
// g(k) = k u / (1 - k u).
// u_P, eta_P: round_P's relative error and its absolute error below the
// normal range: BF16 2^-8, 2^-134; FP16 2^-11, 2^-25; FP8 (E4M3 of p * 256,
// divided by 256) 2^-4, 2^-18; FP32 0, 0 (as AttentionKernel.h).
// eps_e = 2^-23, eta_e = 2^-149: attentionBlockedExp's relative error, and
// its absolute error where e^x < 2^-126 (measured over every float in
// [-104, 0]: at most 1.37 u relative, 1.51 * 2^-150 absolute).
// All other quantities are exact (the double reference), per row i of a
// head: n unmasked keys, T the number of key tiles from the one holding the
// row's first unmasked key to the one holding its last (at most
// ceil(Sk / 64)), pi_j = p_j / l the softmax weights, Vbar_e =
// sum_j pi_j |v_je|, Vmax_e = max over unmasked j of |v_je|.
//
// The scores. An FP32 dot product of D products, times the scale (itself
// rounded to FP32), plus the bias:
//   |s_kernel - s| <= Delta = g(D + 3) max_j (|scale| sum_d |q_d k_jd| + |bias_j|).
// So the softmax of the kernel's scores is pi_j e^(+-2 Delta).
//
// Forward, elementwise, with E = (1 + eps_e)^T - 1,
// A = n (1 + E) (u / (e (1 - u)) + T eta_e), G = e^(2 Delta) (1 + E) / (1 - E):
//   |out_k - out_ref| <= ((1 + u_P) G - 1 + u_P) Vbar + (2 (1 + u_P) A + 2 n eta_P + F) Vmax,
//     F = (2 g(2T + 64) / (1 - g(2T + 64)) (1 + u) + u) (1 + u_P + n eta_P),
//   |lse_k - lse_ref| <= (1 + 2u) (Delta + L) + 2u |lse_ref| + 2^-48 log(2n),
//     L = -log(1 - E - A) - log(1 - g(2T + 64)),
// plus, where the caller narrows out to its dtype, that rounding (as in
// AttentionKernel.h).
// Why. A key's weight in the kernel is the product of the exp it got in
// its tile and the exp(m - m') of every later tile where the max grew, at
// most T exps, each of an FP32 difference x (1 + delta). Those differences
// add up to the key's y = s - m_final, so the deltas move the weight e^y
// by a factor e^(+-u |y|), an absolute change of at most
// u |y| e^(-|y| (1 - u)) <= u / (e (1 - u)); the exps' relative errors
// compound to E; their absolute errors below the normal range add T eta_e
// (every factor is at most 1: the exp is clamped to 1). The weights are so
// (1 +- E) times the exact ones of the kernel's scores, plus absolute
// errors summing to A over the row; the largest key's weight is exactly 1
// (exp(0) = 1), so the weights' sum is at least 1 and A bounds the
// absolute part relative to it, in numerator and denominator (2A). As in
// AttentionKernel.h, the reference rounds p_j = exp(s_j - m) with the row's
// max and the kernel exp(s_j - m') with the running max, then rescales by a
// factor <= 1: both roundings are within u_P of their weight, so they
// differ by up to u_P times both weights (the u_P (G + 1) in the first
// term; G - 1 is the weights' own perturbation), and by eta_P per key and
// side below round_P's normal range. F collects the FP32 sums, relative to
// the weights' sum: a term of l or acc goes through its product (acc) and
// at most 63 additions in its tile's sum, one addition into l or acc and
// two roundings per later tile (the product by the factor and the
// addition), at most 2T + 64 in all (with sum_j round_P(p_j) |v_j| <=
// (1 + u_P + n eta_P) Vmax relative to the weights' sum); then the
// division. The exp(m - m') factors themselves cancel: the same value
// multiplies acc and l. For lse: the log of the kernel's l is within L of
// the log of the exact sum of e^(s_kernel - m_kernel), and m plus the
// latter within Delta of lse_ref; the double log and addition and the
// rounding to FP32 add the rest.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_KERNELS_ATTENTIONBLOCKED_H
#define MIXPREC_RUNTIME_KERNELS_ATTENTIONBLOCKED_H

#include "runtime/kernels/Attention.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixprec::runtime::cpu {

/// Query rows per unit and keys per tile (the bound's T counts tiles).
constexpr int64_t kAttentionBlockRows = 32;
constexpr int64_t kAttentionTileKeys = 64;

/// The number of work units: batch * heads * ceil(seqQ / 32).
int64_t attentionBlockedUnits(const AttentionParams &p);

/// The floats of scratch one worker needs (any alignment of float).
size_t attentionBlockedScratchFloats(const AttentionParams &p);

/// Attention.h's forward on float operands for units [unitBegin, unitEnd)
/// only: their rows of out (and of lse when not null). `scratch` holds
/// attentionBlockedScratchFloats(p) floats no other call uses meanwhile;
/// calls on disjoint unit ranges may run at the same time.
void attentionBlocked(const float *q, const float *k, const float *v, const float *bias,
                      const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                      float *out, float *lse, int64_t unitBegin, int64_t unitEnd, float *scratch);

/// Every unit, on the calling thread (with scratch it allocates).
void attentionBlocked(const float *q, const float *k, const float *v, const float *bias,
                      const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                      float *out, float *lse);

// ---- For tests ----

/// The instruction sets the kernel is compiled for (x86-64 only has more
/// than the baseline).
enum class AttentionIsa { Baseline, Avx2, Avx512 };

/// Those this CPU runs, the baseline first; attentionBlocked runs the last.
std::vector<AttentionIsa> attentionBlockedIsas();

/// attentionBlocked on the code for `isa`, one of attentionBlockedIsas().
void attentionBlockedOn(AttentionIsa isa, const float *q, const float *k, const float *v,
                        const float *bias, const std::array<int64_t, 4> &biasStrides,
                        const AttentionParams &p, float *out, float *lse, int64_t unitBegin,
                        int64_t unitEnd, float *scratch);

/// The kernel's exp, for x <= 0 (the bound's eps_e and eta_e).
float attentionBlockedExp(float x);

/// The kernel's round_P, for p in [0, 1]: roundAttentionP<float>'s values.
float attentionBlockedRoundP(float p, AttentionRounding r);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_KERNELS_ATTENTIONBLOCKED_H
