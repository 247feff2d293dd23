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
// A weight whose values are all BF16 (or FP16) values, as a BF16 or FP8
// weight widened to FP32 is, may be packed as BF16 (FP16) instead: 2 bytes
// a value where FP32 takes 4, widened back in the registers as each k step
// loads it (Avx2Microkernel.h): the same FP32 values, so the same bits as
// FP32 panels, with half the bytes to read. What that buys, on an AVX2
// EPYC (Zen 3, one thread, best of 15, before multiplyRowPanels): 1 x 768
// x 50257 (GPT-2's lm_head for one token) 9.6 -> 4.6 ms, 1 x 768 x 3072
// 0.21 -> 0.18 ms (0.54 -> 0.27 with the weight from memory), 64 x 768 x
// 3072 3.40 -> 3.40 ms (compute-bound: the unpacking runs beside the
// multiply-adds). One row of C walks four panels at once (eight sums in
// flight where a 1 x 16 block keeps two).
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

/// Whether this CPU runs packedGemm (AVX2, FMA, F16C; x86-64 only).
bool packedGemmAvailable();

/// How a packed weight holds its values: FP32, BF16 or FP16 (2 bytes).
enum class PackedFormat { F32, BF16, F16 };

/// Bytes of B [k, n] packed in `format`: k * n rounded up to 16 values.
size_t packedGemmWeightBytes(int64_t k, int64_t n, PackedFormat format = PackedFormat::F32);

/// Packs B (element (i, j) at b[i * strideK + j * strideN]) into `packed`
/// (packedGemmWeightBytes of it). BF16 and F16: false, `packed`
/// unspecified, unless every value of B is a value of that format, as its
/// FP32 widening gives it back: BF16, its low 16 bits zero (NaNs too);
/// FP16, one that converts back to the same FP32 bits, and no NaN
/// (VCVTPH2PS quiets a signalling one, so its bits could differ).
bool packGemmWeight(const float *b, int64_t k, int64_t n, int64_t strideK, int64_t strideN,
                    void *packed, PackedFormat format = PackedFormat::F32);

/// C[r][j] = sum over i of A[r][i] B[i][j] for rows [rowBegin, rowEnd) and
/// columns [colBegin, colEnd) (colBegin a multiple of 16) of C [*, n],
/// times *scale where `scale` is not null, then plus bias[j] where `bias`
/// (n floats) is not null: applied to the finished sum, the bits of passes
/// applying them after (an FP8 step's factor, then its bias). `packed` as
/// packGemmWeight packed it in `format`.
void packedGemm(const float *a, const void *packed, float *c, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                const float *bias = nullptr, const float *scale = nullptr,
                PackedFormat format = PackedFormat::F32);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_PACKEDGEMM_H
