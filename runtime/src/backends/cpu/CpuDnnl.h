//===- CpuDnnl.h - CPU GEMMs and convolutions on oneDNN ---------*- C++ -*-===//
//
// The CPU backend's fast path for GEMM steps (issue 27): oneDNN's matmul,
// whose JIT picks the kernel for the CPU it runs on (AMX, AVX512-BF16,
// AVX-512, AVX2), on the operands as stored (FP32, BF16, FP16; no decode to
// FP32 per run), with FP32 accumulation and an FP32 result that the CPU
// backend's epilogue (bias, activation, the one rounding to the output's
// dtype) then takes. A weight that is a module constant is packed once,
// when the session is created, into the blocked layout the primitive
// prefers; nothing is decoded or packed per run.
//
// Numerics: products of FP32, BF16 or FP16 operands and their FP32 sums,
// in oneDNN's order (blocked over k; not the interpreter's left-to-right
// order, so results agree with it within the usual GEMM bound, not bit for
// bit; the order does not change from run to run, nor with the thread
// count: where oneDNN's matmul is its GEMM-based one ("gemm:jit", AVX2 and
// older CPUs), whose threading splits k when m and n are small and so sums
// in an order that follows the thread count, the step runs in tiles of at
// most 256 x 384 outputs fixed by its shape, each a one-thread matmul over
// all of k, spread over the session's threads; there an FP32 constant
// weight is packed into 16-column panels at load instead and runs on the
// own AVX2 GEMM, PackedGemm.h, in the same tiles, each output summed in k
// order with fused multiply-adds: 5-15% faster than gemm:jit on GPT-2's
// and BERT's shapes, about twice as fast with one to five rows,
// MIXPREC_CPU_OWN_GEMM=0 turns it off; a BF16, FP8 or FP16 constant weight
// widened to FP32 goes there too, packed as BF16 or FP16, 2 bytes a value,
// widened back in the registers: the same bits as FP32 panels, half the
// bytes to read, MIXPREC_CPU_NARROW_PANELS=0 packs FP32). On AVX512-BF16 and AMX
// the BF16 dot-product instructions treat subnormal BF16 inputs and FP32
// partial sums as zero (VDPBF16PS, TDPBF16PS: DAZ/FTZ by definition).
//
// FP8 operands (E4M3, E5M2, per-tensor scales applied after) are widened to
// BF16, which holds every FP8 value: a constant FP8 weight once, at load (2
// bytes per weight where FP8 stores 1), an activation per run; FP16
// operands on a CPU without an FP16 matmul (AVX512-FP16) likewise to FP32
// (4 bytes per weight; 2 on the own GEMM). Products of the widened values
// are the products of the stored ones, exactly. BF16 and FP8 operands go to
// FP32 instead (4 bytes per weight; 2 on the own GEMM) where the CPU's BF16
// kernels would be slower than its FP32 ones (dnnl::bf16Native,
// CpuDnnlCommon.h: no AMX, and not AMD's AVX512-BF16, whose VDPBF16PS
// outruns the FMA; MIXPREC_CPU_BF16=native|fp32 decides instead): the same
// exact products, summed in FP32 without the BF16 instructions' DAZ/FTZ.
// Convolutions (CpuDnnlConv.cpp) follow the same rule.
//
// Not here (the OpenBLAS path takes them): TF32-rounded steps, operands of
// two dtypes (FP8 E4M3 with E5M2 excepted), strided batches.
// A runtime built without oneDNN (MIXPREC_HAVE_DNNL unset: the runtime-only
// build without libdnnl) runs every GEMM step on OpenBLAS.
//
// Convolutions (conv2d and conv routines, 1 to 3 spatial dims; DnnlConvs,
// CpuDnnlConv.cpp) run on oneDNN's direct convolution the same way: src
// and a constant weight as stored (FP32, BF16; FP16 widened to FP32 where
// the CPU has no FP16 convolution, FP8 to BF16, operands of two dtypes to
// FP32, all exactly), the weight packed once at load, the bias decoded to
// FP32 (once, when a constant), FP32 accumulation and an FP32 result that
// the routine step then rounds once to the output's dtype. Groups,
// strides, asymmetric pads and dilations as the routine gives them.
// Numerics as for GEMMs: sums of exact products in oneDNN's order (the
// bias added last, where the reference kernel starts from it), the same
// order in every run; the BF16 instructions' DAZ/FTZ as above. 3x3
// stride-1 one-group 2-D convolutions computed in FP32 (FP32 operands, or
// BF16 and FP8 ones widened to FP32 where the BF16 kernels do not pay: the
// same exact values) run on Winograd F(2x2, 3x3)
// (oneDNN's jit_fp32_wino_2x3, where it takes the shape, on AVX-512; any
// other Winograd variant is refused; where oneDNN has none, on AVX2 CPUs,
// mixprec's own kernel, runtime/kernels/Winograd.h, on activations in
// channel blocks of 8, C and M multiples of 8, pads up to 2): the input tile's
// transform B^T d B and the output's A^T M A only add and subtract, the
// filter's G g G^T adds halves (exact scalings), the transformed products
// are summed over the C channels in FP32; first-order, each output is
// within (C + 10) * 2^-23 * (W + |bias| + |y|) of the exact result, W =
// sum over channels of |A^T| ((|G||g||G^T|) * (|B^T||d||B|)) |A| at the
// element's position in its 2x2 tile (CpuDnnlConvTest checks it; observed
// errors are the direct algorithm's order). An infinite input may give NaN
// where the direct algorithm gives an infinity (the transforms subtract).
// MIXPREC_CPU_WINOGRAD=0 plans every convolution on the direct algorithm,
// =own the own kernel even where oneDNN has one (tests). Not here
// (the reference kernel, cpu::conv, takes them): conv_transpose, TF32-
// rounded routines, weights that are not module constants, empty tensors.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_CPUDNNL_H
#define MIXPREC_RUNTIME_CPU_CPUDNNL_H

#include "runtime/src/Module.h"
#include "runtime/src/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mixprec::runtime {

class ThreadPool;

/// The GEMM steps of one CPU session on oneDNN.
class DnnlGemms {
public:
  DnnlGemms();
  ~DnnlGemms();
  DnnlGemms(const DnnlGemms &) = delete;
  DnnlGemms &operator=(const DnnlGemms &) = delete;

  /// Whether this runtime has oneDNN.
  static bool available();

  /// Plans each GEMM step of `module` that oneDNN runs (see the file
  /// comment) and packs its constant weight (`constant(t)`: the bytes of
  /// constant tensor t). A step it does not take keeps `reason(i)` and runs
  /// on OpenBLAS; only an allocation failure is an error.
  /// `pool`: the session's threads, on which the GEMMs oneDNN runs on its
  /// GEMM-based matmul are split in tiles (CpuDnnl.cpp, Plan::tiled); null:
  /// one thread.
  Status prepare(const LoadedModule &module,
                 const std::function<const uint8_t *(int32_t)> &constant,
                 ThreadPool *pool = nullptr);

  /// Whether GEMM step `index` runs here.
  bool handles(size_t index) const;
  /// Why it does not ("" when it does).
  std::string reason(size_t index) const;

  /// Runs GEMM step `index`: `a` and `b` at their tensors' host addresses
  /// (b unused when packed at load), the FP32 products' sums into `acc`
  /// (batch x m x n, row-major). `aWide` (where A is widened): A's values
  /// widened already (widenA into widenedA(), or an FP8 tensor stored as
  /// BF16, findWideStorage), a is not read; null: run() widens a itself.
  /// `scale` (one float), then `bias` (n floats), only where ownKernel:
  /// each finished sum multiplied by *scale (an FP8 step's factor), then
  /// bias[j] added, as they are stored (the bits of passes after).
  Status run(size_t index, const void *a, const void *b, float *acc, const void *aWide = nullptr,
             const float *bias = nullptr, const float *scale = nullptr);

  /// Elements of GEMM step `index`'s A that run() widens first (an
  /// activation of a dtype the primitive does not take; 0: none).
  int64_t wideElementsA(size_t index) const;
  /// The dtype its primitive takes the operands in (FP32, BF16, FP16):
  /// what an A of wideElementsA > 0 is widened to.
  schema::DType computeType(size_t index) const;
  /// Widens elements [begin, begin + count) of A at `a` into widenedA()
  /// (exact; for the caller to split over its threads).
  void widenA(size_t index, const void *a, int64_t begin, int64_t count);
  /// Where widenA writes (one buffer for all steps).
  const void *widenedA() const;

  /// The one-thread tiles GEMM step `index` runs in (CpuDnnl.cpp,
  /// Plan::tiled: oneDNN's GEMM-based matmul, or the own packed GEMM), 0
  /// when it runs as one call.
  int64_t tiles(size_t index) const;
  /// Whether it runs on the own packed GEMM (PackedGemm.h; CpuDnnl.cpp,
  /// Plan::own) instead of oneDNN's matmul.
  bool ownKernel(size_t index) const;
  /// The dtype its packed weight holds: the own GEMM's panels (FP32, or
  /// BF16 or FP16 for a narrow weight widened to FP32), else computeType.
  schema::DType packedWeightType(size_t index) const;

  /// Weights packed when the session was created, and their bytes.
  int64_t packsAtLoad() const;
  size_t packedBytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The convolution routines of one CPU session on oneDNN (the file
/// comment says which). Indexed by routine: every other routine, and a
/// convolution oneDNN does not take, has a reason and runs on the
/// reference kernel.
/// DnnlConvs::srcLayout's code for the channels-last layout (the others
/// are the channel block, 8 or 16).
constexpr uint8_t kChannelsLast = 1;

class DnnlConvs {
public:
  DnnlConvs();
  ~DnnlConvs();
  DnnlConvs(const DnnlConvs &) = delete;
  DnnlConvs &operator=(const DnnlConvs &) = delete;

  /// Plans each convolution routine of `module` that oneDNN runs, packs its
  /// weight and decodes its constant bias (`constant(t)`: the bytes of
  /// constant tensor t), and allocates the buffers its runs use. A routine
  /// it does not take keeps `reason(i)`; only an allocation failure is an
  /// error.
  /// `sums[i]` (where set): routine i's result is to be added to a tensor
  /// of its shape (a fused addition, CpuConvFusion.cpp), by oneDNN's sum
  /// post-op: the result, rounded to FP32 with the bias, plus the addend,
  /// rounded once, as the kernel's FP32 Add would. Where oneDNN refuses
  /// that, the routine is planned without it (addsAddend false).
  Status prepare(const LoadedModule &module,
                 const std::function<const uint8_t *(int32_t)> &constant,
                 const std::vector<uint8_t> &sums = {});

  /// Whether routine `index` runs here.
  bool handles(size_t index) const;
  /// Whether it adds an addend to its result (prepare's `sums`).
  bool addsAddend(size_t index) const;
  /// Whether run() can apply a ReLU to its result (the own Winograd
  /// kernel's output transform).
  bool appliesRelu(size_t index) const;
  /// Whether run() writes dst only after reading src, bias and addend
  /// (its result goes through oneDNN's layout: dst may then share bytes
  /// with them).
  bool writesDstLast(size_t index) const;
  /// The layout its primitive reads src (writes dst) in, where that is a
  /// permutation of the plain bytes (no padding), which the plain tensors
  /// are reordered into (out of) per run: kChannelsLast (nwc, nhwc,
  /// ndhwc), or 8 or 16 (channels in blocks of that many, innermost:
  /// nChw8c, nChw16c; AVX2 and Winograd take these), C a multiple of the
  /// block; 0 for any other layout, or the plain one.
  uint8_t srcLayout(size_t index) const;
  uint8_t dstLayout(size_t index) const;
  /// From now on run() takes src (dst, and the addend) of routine `index`
  /// in that layout, where it has one: no reorder, the primitive reads
  /// (writes) the caller's bytes.
  void keepLayouts(size_t index, bool src, bool dst);
  /// Why it does not ("" when it does).
  std::string reason(size_t index) const;
  /// oneDNN's name for the implementation it runs ("" when none).
  std::string implementation(size_t index) const;
  /// Whether it runs on Winograd F(2x2, 3x3) (false when not here).
  bool winograd(size_t index) const;

  /// Runs convolution routine `index`: `src` and `bias` at their tensors'
  /// host addresses (bias null when absent, unused when a constant), the
  /// FP32 result into `dst` (the output's shape, row-major, or
  /// in its kept layout as keepLayouts says; src likewise).
  /// `addend` (FP32, the output's shape; null unless addsAddend) is added
  /// to the result; dst may share bytes with it, and with src and bias
  /// where writesDstLast.
  /// `pool`: the session's threads, over which a convolution on the own
  /// Winograd kernel (Winograd.h) runs (oneDNN's primitives run on its own
  /// OpenMP threads); null: one thread. `relu` (only where appliesRelu):
  /// x < 0 ? 0 : x of each result as it is stored (cpu::unary's Relu).
  Status run(size_t index, const void *src, const void *bias, float *dst,
             const float *addend = nullptr, ThreadPool *pool = nullptr, bool relu = false);

  /// Weights packed when the session was created.
  int64_t packsAtLoad() const;
  /// Host memory the planned convolutions' runs use beyond the arena: the
  /// operands in oneDNN's layouts, widened activations and the scratchpad
  /// (not the packed weights, which stand in for the constants).
  uint64_t workspaceBytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_CPU_CPUDNNL_H
