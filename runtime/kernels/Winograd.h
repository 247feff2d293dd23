//===- Winograd.h - FP32 3x3 convolution on Winograd F(2x2, 3x3), AVX2 -*- C++ -*-===//
//
// The CPU backend's 3x3 stride-1 FP32 convolution where oneDNN has no
// Winograd kernel (its jit_fp32_wino_2x3 is AVX-512 only; on AVX2 CPUs it
// has only the direct kernels, which onnxruntime's NCHWc kernels beat by
// 5-10% on ResNet-18's 3x3 layers). Activations in channel blocks of 8
// (nChw8c: [N, C/8, H, W, 8], the layout oneDNN's AVX2 convolutions and the
// activations kept between them use, CpuConvFusion.cpp), C and K multiples
// of 8, any pads, one group, dilation 1.
//
// Per 2x2 output tile (4x4 input tile d, zeros outside the image) and
// channel: V = B^T d B (adds and subtracts, two passes of the 4x4 tile);
// per output channel: the 16 transformed products summed over the C
// channels, M[xi] = sum_c V[xi][c] U[xi][c] (U = G g G^T, the filter's
// transform, made once at load in double and rounded once to FP32), one
// fused multiply-add per channel in channel order; Y = A^T M A (adds and
// subtracts), then the bias added, then (where given) an addend, each one
// FP32 addition, then (where asked) a ReLU: as oneDNN's jit_fp32_wino_2x3,
// whose bound CpuDnnl.h states and CpuDnnlConvTest checks ((C + 10) *
// 2^-23 * (W + |bias| + |y|) first order). The order of every sum is fixed
// by the shape alone: the same bits for any split of the units below over
// threads.
//
// Three phases, each a set of independent units a caller spreads over its
// threads (each unit writes its own part of one buffer and reads only what
// the phases before wrote):
//   1. winogradInput:  units (image, channel block of 8, row of tiles): src
//      -> V, 16 matrices [T][C] (T: the band's tiles of all images,
//      row-major).
//   2. winogradMultiply: units (xi, block of 16 output channels): V, U -> M,
//      16 matrices [T][Kp] (Kp: K rounded up to 16).
//   3. winogradOutput: units (image, channel block of 8, row of tiles):
//      M -> dst (+ bias, + addend).
// src is read only in phase 1, dst written only in phase 3, so src and dst
// may be the same bytes; the addend may be dst itself.
//
// The code is AVX2 + FMA (x86-64 only): winogradAvailable() says whether
// this CPU runs it; nothing else here may be called where it does not.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_WINOGRAD_H
#define MIXPREC_RUNTIME_CPU_WINOGRAD_H

#include <cstddef>
#include <cstdint>

namespace mixprec::runtime::cpu {

/// A 3x3 stride-1 convolution of [n, c, h, w] to [n, k, ho, wo], pads
/// padTop / padLeft before the image (ho = h + padTop + padBottom - 2);
/// of its rows of tiles only those of the band [firstTileRow, firstTileRow
/// + bandTileRows) (bandTileRows -1: all; a band other than all needs n 1),
/// so that V and M hold only the band's tiles.
struct WinogradShape {
  int64_t n = 1, c = 0, k = 0, h = 0, w = 0, ho = 0, wo = 0, padTop = 0, padLeft = 0;
  int64_t firstTileRow = 0, bandTileRows = -1;

  int64_t tileRows() const { return (ho + 1) / 2; }
  int64_t tileCols() const { return (wo + 1) / 2; }
  /// The band's rows of tiles.
  int64_t bandRows() const { return bandTileRows < 0 ? tileRows() : bandTileRows; }
  /// The band's tiles, of all images.
  int64_t tiles() const { return n * bandRows() * tileCols(); }
  /// k rounded up to the multiply's block of 16 output channels.
  int64_t paddedK() const { return (k + 15) / 16 * 16; }
};

/// Whether this CPU runs the kernels (AVX2 and FMA; x86-64 only).
bool winogradAvailable();

/// Whether the shape is one the kernels take: c and k multiples of 8, all
/// sizes positive, each of the four pads in [0, 2], the band within the
/// tile rows (and n 1 unless it is all of them).
bool winogradTakes(const WinogradShape &s);

/// Floats of the transformed weight U: 16 * c * paddedK.
size_t winogradWeightFloats(const WinogradShape &s);
/// Floats of V (16 * tiles * c) and of M (16 * tiles * paddedK).
size_t winogradInputFloats(const WinogradShape &s);
size_t winogradProductFloats(const WinogradShape &s);

/// U = G g G^T of the weight g [k, c, 3, 3] (plain FP32), packed for the
/// multiply (the output channels past k zero).
void winogradTransformWeight(const WinogradShape &s, const float *g, float *u);

/// Phase 1's units, n * c/8 * bandRows; phase 1 for units [begin, end).
int64_t winogradInputUnits(const WinogradShape &s);
void winogradInput(const WinogradShape &s, const float *src, float *v, int64_t begin, int64_t end);

/// Phase 2's units, 16 * paddedK/16; phase 2 for units [begin, end).
int64_t winogradMultiplyUnits(const WinogradShape &s);
void winogradMultiply(const WinogradShape &s, const float *v, const float *u, float *m,
                      int64_t begin, int64_t end);

/// Phase 3's units, n * k/8 * bandRows; phase 3 for units [begin, end):
/// dst = A^T M A + bias (null: none) + addend (null: none; may be dst),
/// then where `relu` x < 0 ? 0 : x (cpu::unary's Relu: NaN and -0 kept).
int64_t winogradOutputUnits(const WinogradShape &s);
void winogradOutput(const WinogradShape &s, const float *m, const float *bias, const float *addend,
                    bool relu, float *dst, int64_t begin, int64_t end);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_WINOGRAD_H
