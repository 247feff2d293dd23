//===- PackedGemm.h - FP32 GEMM on a weight packed at load, AVX2 -*- C++ -*-===//
//
// The CPU backend's FP32 GEMM with a constant weight on AVX2 CPUs, where
// oneDNN's matmul is its GEMM-based one (gemm:jit), which copies the
// weight's panels again on every call: here B [k, n] is packed once, at
// load, into panels of 16 columns (panel p: rows i of B's columns
// [16p, 16p + 16), 16 floats per row, zeros past n), and C = A B is
// computed in blocks of 6 rows x 16 columns (Avx2Microkernel.h) over k in
// blocks of kPackedGemmDepth, each block's sums continuing from the last:
// every element of C summed in k order, one fused multiply-add per term,
// the same bits however rows and columns are split (over threads: callers
// split C in tiles). A is row-major (rows k apart), C row-major (rows n
// apart).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_PACKEDGEMM_H
#define MIXPREC_RUNTIME_CPU_PACKEDGEMM_H

#include <cstddef>
#include <cstdint>

namespace mixprec::runtime::cpu {

/// The columns of a panel, and the depth of k summed per pass over a panel
/// (up to 256 KB, which the level-2 cache holds while the rows go by): on an
/// AVX2 EPYC (one thread, 64 x 384 tiles) all of k at once ran 64 x 768 x
/// 3072 at 87-89 GFLOP/s and 64 x 3072 x 768 at 94, passes of 256 at 78 and
/// 75-80 (each pass reloads C), oneDNN's sgemm at 77-82 and 71-75. (Those
/// with the weight cached; with 200 MB of weights in turn, as a model reads
/// them, 87-89 GFLOP/s without and 93-96 with the next panel fetched
/// ahead, spread over the row blocks; 86 -> 92 for GPT-2's 64 x 768 x
/// 50257 lm_head; the FMA's peak is 103 there.)
constexpr int64_t kPackedGemmPanel = 16, kPackedGemmDepth = 4096;

/// Whether this CPU runs packedGemm (AVX2 and FMA; x86-64 only).
bool packedGemmAvailable();

/// Floats of B [k, n] packed: k * n rounded up to 16.
size_t packedGemmWeightFloats(int64_t k, int64_t n);

/// Packs B (element (i, j) at b[i * strideK + j * strideN]) into `packed`.
void packGemmWeight(const float *b, int64_t k, int64_t n, int64_t strideK, int64_t strideN,
                    float *packed);

/// C[r][j] = sum over i of A[r][i] B[i][j] for rows [rowBegin, rowEnd) and
/// columns [colBegin, colEnd) (colBegin a multiple of 16) of C [*, n],
/// times *scale where `scale` is not null, then plus bias[j] where `bias`
/// (n floats) is not null: applied to the finished sum, the bits of passes
/// applying them after (an FP8 step's factor, then its bias).
void packedGemm(const float *a, const float *packed, float *c, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                const float *bias = nullptr, const float *scale = nullptr);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_PACKEDGEMM_H
