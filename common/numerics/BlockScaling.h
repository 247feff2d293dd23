//===- BlockScaling.h - FP8 block scaling and MXFP8 -------------*- C++ -*-===//
//
// Per-block FP8 scaling, the recipe every part of mixprec computes the same
// way (compiler for constant weights, interpreter, CPU runtime; the NumPy
// reference in tests/e2e/block_scaling_reference.py repeats it bit for bit):
//
//  * A tensor of rank >= 2 is cut into blocks of `blockRows` x `blockCols`
//    over its last two dims (the leading dims are a batch; partial blocks
//    at the edges are blocks too). Its scales form a tensor of the same
//    rank whose last two dims are ceil(rows / blockRows) and
//    ceil(cols / blockCols): activations and gradients use 1 x 128 blocks,
//    weights 128 x 128 (Transformer Engine's Float8BlockScaling,
//    DeepSeek-V3), MXFP8 1 x 32.
//
//  * A block's scale comes from the largest magnitude in it (amax, NaN if
//    any element is NaN): the largest power of two <= (fp8_max / amax) /
//    2^margin (the quotient in double), at most 2^127, so that x * scale
//    and q / scale are exact and the block's amax lands in (fp8_max / 2,
//    fp8_max] without saturating. Both recipes use it:
//      - Block: Transformer Engine's Float8BlockScaling with power_2_scale
//        (its default);
//      - Mx: MXFP8 as Transformer Engine and cuBLAS compute it, the E8M0
//        dequantization scale 2^ceil(log2(amax / fp8_max)) (float_to_e8m0
//        rounding up), whose inverse is this power of two; E8M0 holds it
//        exactly (2^-127 .. 2^127). The OCP MX rule 2^(floor(log2 amax) -
//        emax) is one binade smaller for most blocks and saturates their
//        largest values (up to 12.5% off at E4M3); we follow the hardware
//        vendor's libraries instead.
//    An all-zero block has scale 1; an inf or NaN in a block makes its
//    scale NaN, so every value quantized with it is NaN (as per-tensor
//    scaling does: the non-finite value stays visible).
//
//  * Quantization: q = quantizeFp8(format, x, scale of x's block).
//
//  * The block-scaled GEMM out[m, n] = sum_k a[m, k] b[n, k] / (sa sb), both
//    operands with the same block length along k (the contraction):
//      for each k-block kb, in ascending order:
//        P = the exact dot product of the block (integer arithmetic: every
//            FP8 value is an integer times 2^-9 (E4M3FN) or 2^-16 (E5M2)),
//            rounded once to FP32;
//        acc = fl32(acc + fl32(fl32(fl32(P * 2^-(sA+sB)) / sa) / sb))
//      with acc starting at +0 and sa, sb the scales of a's and b's blocks
//      holding (m, kb) and (n, kb). With power-of-two scales the divisions
//      are exact unless the result is subnormal. A block holding a NaN (a
//      non-finite input quantized) makes its term NaN. This is the
//      DeepSeek-V3 formulation (each block's partial sum promoted to FP32
//      and scaled there) with the block's sum exact, so the result does not
//      depend on the order of the products inside a block.
//
// No LLVM/MLIR dependency (the standalone runtime links it).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_NUMERICS_BLOCKSCALING_H
#define MIXPREC_COMMON_NUMERICS_BLOCKSCALING_H

#include "common/numerics/Rounding.h"

#include <cstdint>
#include <vector>

namespace mixprec::numerics {

/// How a block's scale is chosen (see the file comment).
enum class BlockRecipe : uint8_t { Block = 0, Mx = 1 };

/// "block" or "mx".
const char *blockRecipeName(BlockRecipe r);

/// A tensor seen as `batch` matrices of rows x cols cut into blocks.
struct BlockLayout {
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t blockRows = 1, blockCols = 1;

  int64_t scaleRows() const { return (rows + blockRows - 1) / blockRows; }
  int64_t scaleCols() const { return (cols + blockCols - 1) / blockCols; }
  int64_t scaleCount() const { return batch * scaleRows() * scaleCols(); }
  /// The layout of a tensor of shape `shape` (rank >= 2) with blocks of
  /// blockRows x blockCols over its last two dims.
  static BlockLayout of(const std::vector<int64_t> &shape, int64_t blockRows, int64_t blockCols);
};

/// The shape of the scales of a tensor of shape `shape` (rank >= 2): the
/// last two dims divided by the block, rounded up.
std::vector<int64_t> blockScaleShape(const std::vector<int64_t> &shape, int64_t blockRows,
                                     int64_t blockCols);

/// The scale of a block whose largest magnitude is `amax`.
float blockScale(Format f, BlockRecipe r, float amax, int64_t margin);

/// scales[b][i][j] = blockScale of block (i, j) of matrix b of `x`.
void computeBlockScales(Format f, BlockRecipe r, int64_t margin, const BlockLayout &layout,
                        const float *x, float *scales);

/// out = quantizeFp8(f, x, the scale of x's block); in == out is allowed.
void blockQuantize(Format f, const BlockLayout &layout, const float *x, const float *scales,
                   float *out);

/// The block-scaled GEMM of the file comment, without bias or epilogue:
/// out[m * n + j] for a [m, k] (blocks aBlockRows x kBlock, scales
/// [ceil(m / aBlockRows), ceil(k / kBlock)]) and b [n, k] (blocks
/// bBlockRows x kBlock). `a` and `b` hold FP8 values of `fa` and `fb` as
/// floats. Batches are the caller's (one call per matrix).
void blockScaledGemm(Format fa, const float *a, const float *aScales, int64_t aBlockRows,
                     Format fb, const float *b, const float *bScales, int64_t bBlockRows,
                     int64_t kBlock, int64_t m, int64_t n, int64_t k, float *out);

} // namespace mixprec::numerics

#endif // MIXPREC_COMMON_NUMERICS_BLOCKSCALING_H
