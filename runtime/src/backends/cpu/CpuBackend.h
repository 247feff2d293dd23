//===- CpuBackend.h - the CPU backend's pieces ------------------*- C++ -*-===//
//
// Memory: one 256-aligned arena as the memory plan lays it out; every value
// stored in its dtype's bytes (f32 as float, f16/bf16 as uint16, FP8 as
// uint8, i64/i32, bool as 0/1 bytes), so a narrow tensor only ever holds
// values of its dtype. (Narrow activations that only oneDNN GEMMs read,
// which widen them, live in a buffer of their own instead, their values
// stored in the GEMMs' dtype: findWideStorage.)
//
// Numerics (DESIGN.md "Numerics rules"), matching compiler/Interpreter:
//  - Kernels compute in FP32 registers and round once per Store (and per
//    Cast/Quantize) with numerics::encode, round-to-nearest-even, FP8
//    saturating. Unary math calls cpu::unary, so it is the interpreter's.
//  - GEMMs run on oneDNN (CpuDnnl.h: operands as stored, constant weights
//    packed at load, FP32 sums in its order) or, for what it does not
//    take, decode operands to FP32 (exact), round them to TF32 when asked,
//    and run cpu::detail::sgemm with the same call structure as
//    cpu::linear/cpu::matmul (bias prefilled, beta = 1). FP8 GEMMs multiply
//    the accumulator by (1/a_scale)*(1/b_scale) and then add the bias, as
//    cuBLASLt does. The epilogue runs in FP32 (Gelu is the tanh form, as
//    CUBLASLT_EPILOGUE_GELU and --mp-fuse agree); one rounding to the
//    output.
//  - Routines decode to FP32 (constants once, at load), run the reference
//    kernel, round once; convolutions oneDNN takes (CpuDnnl.h) sum its
//    FP32 products of the operands as stored instead, and attention's
//    forward runs the blocked kernel (runtime/kernels/AttentionBlocked.h,
//    within its documented bound of the reference), then round once.
//  - Threads (ThreadPool.h): a kernel's rows, or slices of its one row,
//    and attention's units split over the session's threads; each unit's
//    results depend on it alone, Amax merges as a max: the same bits for
//    any thread count.
//
// The pieces, one file each:
//   CpuBackend.cpp        the session: arena, kernel plans, the step loop
//   CpuElementAccess.cpp  reading and writing elements in storage dtypes
//   CpuKernelPlan.cpp     a kernel's program prepared for execution
//   CpuKernelRun.cpp      the expression-program interpreter
//   CpuGemmStep.cpp       GEMM steps (oneDNN's or OpenBLAS)
//   CpuRoutineStep.cpp    routine routines on the reference kernels
//   CpuDnnl.cpp           GEMMs on oneDNN's matmul
//   CpuDnnlConv.cpp       convolutions on oneDNN
//   CpuConvFusion.cpp     the kernels after them they compute, and the
//                         storage of activations between oneDNN steps
//   CpuDnnlCommon.h       what those two share
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_CPUBACKEND_H
#define MIXPREC_RUNTIME_CPU_CPUBACKEND_H

#include "common/numerics/Rounding.h"
#include "runtime/kernels/Attention.h"
#include "runtime/kernels/Indexing.h"
#include "runtime/src/Backend.h"
#include "runtime/src/Routines.h"
#include "runtime/src/ThreadPool.h"
#include "runtime/src/backends/cpu/CpuDnnl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mixprec::runtime {

namespace num = mixprec::numerics;

/// Largest reference-kernel scratch buffer (conv2d's im2col) the backend
/// allocates, in floats: beyond it a module is refused, not half-run.
constexpr int64_t kMaxScratchFloats = int64_t(1) << 32;

inline num::Format formatOf(schema::DType dtype) {
  using schema::DType;
  switch (dtype) {
  case DType::F16:
    return num::Format::F16;
  case DType::BF16:
    return num::Format::BF16;
  case DType::F8E4M3FN:
    return num::Format::F8E4M3FN;
  case DType::F8E5M2:
    return num::Format::F8E5M2;
  default:
    return num::Format::F32;
  }
}

/// FP8 stores saturate (satfinite); F16/BF16 overflow to inf.
inline num::RoundOptions storeOptions(schema::DType dtype) {
  using schema::DType;
  num::RoundOptions o;
  o.saturate = dtype == DType::F8E4M3FN || dtype == DType::F8E5M2;
  return o;
}

/// Growable float buffer that reports allocation failure instead of
/// aborting (the runtime is built without exceptions).
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  Scratch(Scratch &&other) noexcept : data_(other.data_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  ~Scratch() { std::free(data_); }
  /// The buffer as the last floats()/bytes() call left it.
  float *data() { return static_cast<float *>(data_); }
  float *floats(int64_t count) { return static_cast<float *>(bytes(count * sizeof(float))); }
  void *bytes(int64_t size) {
    size_t want = static_cast<size_t>(std::max<int64_t>(size, 1));
    if (want > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      if (posix_memalign(&data_, 64, want) != 0) {
        data_ = nullptr;
        return nullptr;
      }
      capacity_ = want;
    }
    return data_;
  }

private:
  void *data_ = nullptr;
  size_t capacity_ = 0;
};

/// `values` rounded to TF32 (as tensor cores read a TF32 GEMM's operands)
/// into `s`, in place when they already live there; null when scratch
/// memory runs out.
inline const float *tf32Copy(const float *values, int64_t count, Scratch &s) {
  float *out = s.floats(count);
  if (out)
    for (int64_t i = 0; i < count; ++i)
      out[i] = num::roundToTf32(values[i]);
  return out;
}

/// Bit equality (a NaN scale equals itself).
inline bool bitsEqual(float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; }

/// OUT_OF_MEMORY for a scratch buffer of `bytes` that `what` needs.
Status outOfMemory(const std::string &what, int64_t bytes);

//===----------------------------------------------------------------------===//
// Element access in storage dtypes (CpuElementAccess.cpp)
//===----------------------------------------------------------------------===//

/// Reads `n` elements at `base[offset + i*stride]` as floats.
void loadRun(schema::DType dtype, const uint8_t *base, int64_t offset, int64_t stride, int64_t n,
             float *out);

/// Writes `n` floats to `base[offset + i*stride]` in `dtype`, rounding.
/// Returns false, writing nothing further, at a value an integer dtype
/// cannot hold; `bad` is that value.
bool storeRun(schema::DType dtype, uint8_t *base, int64_t offset, int64_t stride, int64_t n,
              const float *in, float &bad);

/// Widens `n` FP8 codes of `dtype` (E4M3FN, E5M2) to the BF16 bits of
/// their values, exactly (BF16 holds every FP8 value).
void widenFp8ToBf16(schema::DType dtype, const uint8_t *in, uint16_t *out, int64_t n);

/// storeRun to a tensor stored wide (findWideStorage): each float rounded
/// to `dtype` (FP8, BF16, FP16) as storeRun rounds it, its value written in
/// `wide` (BF16 for FP8, F32) to `base[offset + i*stride]`.
void storeRunWide(schema::DType dtype, schema::DType wide, uint8_t *base, int64_t offset,
                  int64_t stride, int64_t n, const float *in);

//===----------------------------------------------------------------------===//
// Kernel plans (CpuKernelPlan.cpp)
//===----------------------------------------------------------------------===//

/// A kernel prepared for execution: dims of size 1 dropped, adjacent dims
/// that every access walks as one run merged, and the evaluation passes of
/// its row reductions worked out.
struct KernelPlan {
  struct Access {
    int32_t tensor = 0;
    schema::DType dtype = schema::DType::F32;
    std::vector<int64_t> outerStrides, rowStrides; ///< per merged dim
    /// A tensor stored wide (findWideStorage): a Store rounds to its dtype
    /// and writes the value in this one (BF16, F32); F32 for every other
    /// access (not wide).
    bool wide = false;
    schema::DType wideType = schema::DType::F32;
  };
  struct Inst {
    schema::OpCode op = schema::OpCode::Const;
    int32_t operand[3] = {0, 0, 0};
    int32_t access = -1; ///< Load/Store: index into accesses
    float value = 0.0f;
    schema::DType dtype = schema::DType::F32;
    int32_t pass = 0;    ///< RowSum/RowMax: the pass that accumulates them
    /// Quantize whose one user is a Store to its dtype: it only scales (NaN
    /// for a non-finite value or scale) and the Store's saturating encode
    /// rounds, the same bytes as rounding twice.
    bool scaleOnly = false;
    /// A Store of a scaleOnly Quantize by one scale for the whole kernel,
    /// written in one pass (numerics::quantizeFp8Store) from the Quantize's
    /// value operand, the scale read from access `scaleAccess`; from the
    /// tensor of access `quantizeLoad` where that is not -1 (that operand's
    /// Load, which then never runs, like the Quantize).
    bool fusedQuantize = false;
    int32_t scaleAccess = -1, quantizeLoad = -1;
    /// Its value is the same at every point of a row (a constant, a Load
    /// with row strides 0, a row reduction read after its pass, or a pure
    /// function of such values: LayerNorm's mean, variance and rsqrt):
    /// computed at each row's first point and spread over the row.
    bool uniform = false;
    /// A uniform value some instruction reads at every point (one not
    /// uniform, or a row reduction accumulating it): spread over its rows;
    /// else it is kept at each row's first point only (LayerNorm's sums,
    /// variance and epsilon feed only other row values).
    bool spread = false;
    /// A Load of FP32 values no Store of the kernel can overwrite: where a
    /// piece's points lie in memory as in its register, the instructions
    /// read them in place (no copy).
    bool direct = false;
  };

  std::string name;
  /// The iteration space has no points (nothing runs but an Amax's Stores).
  bool empty = false;
  std::vector<int64_t> outerDims, rowDims;
  std::vector<Access> accesses;
  std::vector<Inst> program;
  int32_t reductionPasses = 0;
  /// needed[p][j]: instruction j is evaluated in pass p (the last pass,
  /// index reductionPasses, runs the Stores).
  std::vector<std::vector<uint8_t>> needed;
  /// Its points may run on several threads: every Store writes each element
  /// at most once, and no access reads memory a Store writes other than the
  /// element the same point stores (else the kernel runs on one thread, in
  /// order). Rows (with row reductions) or slices of the one row (without)
  /// are then independent.
  bool parallel = false;
  /// The cost of one point, about: 1 per instruction, 8 per transcendental
  /// function (exp, erf, tanh, GELU...): a kernel of few points but a long
  /// program is split over the threads too (CpuBackend::runKernel).
  int64_t pointCost = 1;
};

/// Prepares kernel `index` of a verified module.
KernelPlan planKernel(const LoadedModule &module, size_t index);

/// Whether activations a and b share arena bytes (constants never do).
inline bool sharesBytes(const TensorDesc &a, const TensorDesc &b) {
  if (a.isConstant() || b.isConstant() || a.bytes == 0 || b.bytes == 0)
    return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// A kernel step a convolution routine computes (CpuConvFusion.cpp says
/// which): relu(conv) or relu(conv + addend), written to the kernel's
/// output.
struct ConvEpilogue {
  int64_t kernelStep = -1; ///< the step it replaces; -1: none
  int32_t addend = -1;     ///< -1: relu(conv)
  int32_t output = -1;     ///< the kernel's output tensor
  /// No step after the kernel reads the addend's bytes, which are no module
  /// input, output or state: the convolution may add into them in place.
  bool addendDies = false;
  /// The max pool routine right after the kernel, its output's only
  /// reader, that applies the ReLU to its own output instead (relu and max
  /// commute); -1: the convolution applies it.
  int32_t reluInPool = -1;
  /// A BF16 or F16 convolution output (CpuConvFusion.cpp): the step rounds
  /// the FP32 result to it, then computes the kernel's [Add and] Relu in
  /// its dtype; oneDNN adds and applies nothing.
  bool narrow = false;
  /// The kernel's Add takes the addend as its first operand.
  bool addendFirst = false;
  /// The kernel's Add rounds its sum to the dtype (an instruction of it;
  /// an FP32 one leaves the rounding to the Store, after the ReLU).
  bool sumRounded = false;
};

/// Per routine of `module`: the kernel step after it that it can compute
/// (kernelStep -1 where none), `kernels` being the module's kernel plans.
std::vector<ConvEpilogue> findConvEpilogues(const LoadedModule &module,
                                            const std::vector<KernelPlan> &kernels);

/// Per tensor of `module`: the layout of oneDNN's convolutions it is kept
/// in between the steps around them (CpuConvFusion.cpp says when; 0: the
/// plain one, kChannelsLast, or the channel block 8 or 16: DnnlConvs::
/// srcLayout), `epilogues` being the kernels those convolutions compute.
std::vector<uint8_t> findKeptLayouts(const LoadedModule &module,
                                     const std::vector<KernelPlan> &kernels,
                                     const std::vector<ConvEpilogue> &epilogues,
                                     const DnnlConvs &convs);

/// A GEMM's output quantized to FP8 by the kernel step right after it,
/// which the GEMM's epilogue computes instead (CpuConvFusion.cpp says
/// when).
struct GemmQuantize {
  int64_t kernelStep = -1;                       ///< the step it replaces; -1: none
  int32_t output = -1;                           ///< the kernel's FP8 output tensor
  int32_t scale = -1;                            ///< the scale's (scalar, FP32) tensor; -1: `value`
  float value = 0.0f;                            ///< the scale, a constant
  schema::DType dtype = schema::DType::F8E4M3FN; ///< the output's
};

/// Per GEMM of `module`: the quantize kernel after it that its epilogue
/// can compute (kernelStep -1 where none).
std::vector<GemmQuantize> findGemmQuantizes(const LoadedModule &module,
                                            const std::vector<KernelPlan> &kernels);

/// A GEMM output's amax taken by the kernel step right after it (the FP8
/// recipes' current scaling), which the GEMM's epilogue computes instead
/// (CpuConvFusion.cpp says when).
struct GemmAmax {
  int64_t kernelStep = -1; ///< the step it replaces; -1: none
  int32_t output = -1;     ///< the kernel's scalar FP32 output tensor
};

/// Per GEMM of `module`: the amax kernel after it that its epilogue can
/// compute (kernelStep -1 where none).
std::vector<GemmAmax> findGemmAmaxes(const LoadedModule &module,
                                     const std::vector<KernelPlan> &kernels);

/// An amax kernel (current scaling's: one tensor's amax into a scalar) run
/// right after the kernel that stores that tensor, which takes the amax of
/// what it stores instead (findKernelAmaxes, addAmax).
struct KernelAmax {
  int64_t amaxStep = -1; ///< the amax kernel's step, which no longer runs
  int32_t kernel = -1;   ///< the kernel that takes it
  int32_t store = -1;    ///< that kernel's Store of the tensor
  int32_t output = -1;   ///< the scalar FP32 tensor the amax is stored in
};

/// The amax kernels the kernel steps before them can take
/// (CpuConvFusion.cpp says when), neither step in `fused`.
std::vector<KernelAmax> findKernelAmaxes(const LoadedModule &module,
                                         const std::vector<KernelPlan> &kernels,
                                         const std::vector<uint8_t> &fused);

/// Adds an Amax of what Store `store` of `plan` stores, stored in the FP32
/// scalar `tensor` once the kernel has run (a KernelAmax).
void addAmax(KernelPlan &plan, int32_t store, int32_t tensor);

/// Whether access `a` of `plan` visits `elements` distinct elements, one
/// per point of the plan's space (a Store that writes all of its tensor).
bool coversOnce(const KernelPlan &plan, const KernelPlan::Access &a, int64_t elements);

/// Whether access `a` reads or writes one element at every point (every
/// outer and row stride 0: a scalar tensor, or a tensor's first element).
bool allStridesZero(const KernelPlan::Access &a);

/// Whether environment variable `name` is "0" (an analysis turned off).
bool turnedOff(const char *name);

/// NaN when either is, else the larger: the Amax merge, which gives the
/// same value in any order.
float mergeAmax(float x, float y);

/// The largest |x[i]| merged into `amax` (NaN if any is), as a kernel's
/// Amax instruction takes it: the same value in any order.
float amaxOf(const float *x, int64_t n, float amax);

/// Where narrow activations are stored wide instead (findWideStorage): per
/// tensor, its byte offset in the session's wide buffer (-1: in the arena,
/// in its dtype) and the dtype it is stored in there (BF16, F32), and the
/// buffer's size.
struct WideStorage {
  std::vector<int64_t> offset;
  std::vector<schema::DType> type;
  int64_t bytes = 0;
  int64_t count() const {
    return std::count_if(offset.begin(), offset.end(), [](int64_t o) { return o >= 0; });
  }
};

/// Finds the narrow activations (FP8, BF16, FP16) that only kernels write
/// and only oneDNN GEMMs read as their A, which widen them (FP8 to BF16 or
/// FP32, BF16 and FP16 to FP32) before every product
/// (CpuConvFusion.cpp says when and why), and places them in a buffer of
/// their own. `fused`: per step, computed by the convolution before it.
WideStorage findWideStorage(const LoadedModule &module, const std::vector<KernelPlan> &kernels,
                            const std::vector<uint8_t> &fused, const DnnlGemms &gemms);

//===----------------------------------------------------------------------===//
// The backend (CpuBackend.cpp; its steps in CpuKernelRun.cpp,
// CpuGemmStep.cpp and CpuRoutineStep.cpp)
//===----------------------------------------------------------------------===//

/// Row reductions (RowSum, RowMax) accumulate in FP32 lanes: the point at
/// position p of its row (row-major over the row dims, across pieces)
/// goes to lane p % kReductionLanes, each lane in point order, and the
/// lanes are combined as a tree (lane l with l + 8, then + 4, + 2, + 1).
/// A fixed order, so the same bits on every CPU, in every clone (AVX-512,
/// AVX2, baseline) and for any thread count (a row is never split), and
/// one the compiler keeps in vector registers: a sequential sum of a
/// 768-point LayerNorm row waited on 768 dependent adds.
inline constexpr int64_t kReductionLanes = 16;

class CpuBackend final : public Backend {
public:
  CpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options)
      : module(std::move(module)), options(options) {}
  ~CpuBackend() override;

  Status prepare();
  mixprec_backend_t kind() const override { return MIXPREC_BACKEND_CPU; }
  Status setInput(uint32_t tensor, const void *data, size_t bytes) override;
  Status launch(const Bindings &bindings) override;
  Status wait() override { return okStatus(); }
  Status readTensor(uint32_t tensor, const void **data) override;
  Status allocate(size_t bytes, std::shared_ptr<DeviceBuffer> &out) override;

  /// Runs routine `index` alone on the host arena: the CUDA backend's host
  /// routine steps, with their operands copied in by the caller.
  Status runRoutineStep(size_t index) { return runRoutine(module->routines()[index]); }
  /// Where tensor `t` lives on the host (the arena, or the module's constant).
  uint8_t *hostTensor(int32_t t) { return tensorData(t); }

  /// The GEMM steps' engines, for tests and the session's description:
  /// oneDNN's (weights packed at load) and the constant weights the
  /// OpenBLAS path decoded to FP32 in runs so far (each run decodes them
  /// again: what the oneDNN path avoids).
  const DnnlGemms &dnnlGemms() const { return dnnl; }
  int64_t weightDecodesInRuns() const { return weightDecodes; }
  /// The convolution routines on oneDNN (CpuDnnl.h): their weights are
  /// packed at load and never decoded in runs.
  const DnnlConvs &dnnlConvolutions() const { return dnnlConvs; }
  /// Kernel steps the oneDNN convolutions before them compute
  /// (CpuConvFusion.cpp).
  int64_t fusedConvEpilogues() const {
    return std::count(fusedSteps.begin(), fusedSteps.end(), FusedInto::Convolution);
  }
  /// Quantize kernels computed in the epilogue of the GEMM before them
  /// (findGemmQuantizes).
  int64_t fusedGemmQuantizes() const {
    return std::count(fusedSteps.begin(), fusedSteps.end(), FusedInto::Gemm);
  }
  /// Amax kernels computed in the epilogue of the GEMM before them
  /// (findGemmAmaxes).
  int64_t fusedGemmAmaxes() const {
    return std::count(fusedSteps.begin(), fusedSteps.end(), FusedInto::GemmAmax);
  }
  /// Quantizes scaled, rounded and stored in one pass by their kernel's
  /// Store (KernelPlan::Inst::fusedQuantize).
  int64_t quantizeStores() const {
    int64_t n = 0;
    for (const KernelPlan &k : kernels)
      for (const KernelPlan::Inst &inst : k.program)
        n += inst.fusedQuantize;
    return n;
  }
  /// Amax kernels taken by the kernel before them (findKernelAmaxes).
  int64_t fusedKernelAmaxes() const {
    return std::count(fusedSteps.begin(), fusedSteps.end(), FusedInto::KernelAmax);
  }
  /// Max pools that apply the ReLU of the convolution before them
  /// (CpuConvFusion.cpp).
  int64_t reluInPools() const { return std::count(poolRelus.begin(), poolRelus.end(), uint8_t(1)); }
  /// Activations kept in a layout of oneDNN's convolutions between steps
  /// (findKeptLayouts): channels-last or channel-blocked.
  int64_t keptLayoutTensors() const {
    return static_cast<int64_t>(keptLayouts.size()) -
           std::count(keptLayouts.begin(), keptLayouts.end(), uint8_t(0));
  }
  /// Narrow activations stored widened for the GEMMs that read them
  /// (findWideStorage).
  int64_t wideTensors() const { return wideStore.count(); }
  /// Threads the session's kernels run on (the caller's included).
  int threads() const { return pool ? pool->size() : 1; }
  /// Kernel runs so far that were split over the threads.
  int64_t parallelKernelRuns() const { return parallelRuns; }

private:
  /// A run of a piece: `length` consecutive points of one row run, whose
  /// first point sits at element `base[a]` of access a.
  struct Segment {
    int64_t length = 0;
    int64_t position = 0; ///< index of its first point in the registers
  };
  /// What one thread evaluates kernels with.
  struct Worker {
    /// registerStride floats per instruction of the longest program.
    std::vector<float> registers;
    std::vector<float> rowValue;  ///< per instruction: row reductions' values
    /// Per instruction: where its values for the piece are (its register,
    /// or the tensor itself for a direct Load, or its operand's for a Cast
    /// to FP32).
    std::vector<const float *> values;
    /// Per instruction and row of a piece: a row reduction's lanes and the
    /// row position of the next point it takes.
    std::vector<float> rowLanes;
    std::vector<int64_t> rowPosition;
    std::vector<float> amaxValue; ///< per instruction: Amax accumulators
    std::vector<Segment> segments;
    std::vector<int64_t> segmentBase; ///< [segment * accesses + access]
    std::vector<int64_t> runIndex, runBase;
    /// runRow's per-row state, kept to spare allocations: the accesses'
    /// row strides, innermost strides, the row dims but the innermost; the
    /// registers valid across passes of a one-piece row, its point count.
    std::vector<const std::vector<int64_t> *> rowStrides;
    std::vector<int64_t> innerStride, runDims;
    std::vector<uint8_t> kept;
    int64_t pieceCount = 0;
    /// The rows of the piece (runRowGroup: short rows, several a piece)
    /// and the points of each; rowValue holds kMaxGroupRows values per
    /// instruction, one per row of the piece.
    int64_t groupRows = 1, groupRowPoints = 0;
    std::vector<int64_t> groupBase; ///< [row * accesses + access]
    /// A uniform instruction's operands and result at each row's first
    /// point: 4 x kMaxGroupRows floats.
    std::vector<float> gathered;
    Scratch attention; ///< the blocked attention kernel's tiles
  };

  uint8_t *tensorData(int32_t t) {
    const TensorDesc &d = module->tensors()[t];
    if (d.isConstant())
      return d.constantData ? const_cast<uint8_t *>(d.constantData) : emptyTensor;
    return arena.data() + d.offset;
  }
  /// Where a tensor stored wide lives (wideStore.offset[t] >= 0).
  uint8_t *wideData(int32_t t) { return wideBuffer.data() + wideStore.offset[t]; }
  bool overlaps(int32_t a, int32_t b) const {
    return sharesBytes(module->tensors()[a], module->tensors()[b]);
  }

  /// Chunks to split `units` independent units of work (rows, planes)
  /// covering `elements` values into: up to 4 per thread, one (run on this
  /// thread) below parallelPoints.
  int64_t chunksOf(int64_t units, int64_t elements) const {
    return pool->size() > 1 && elements >= parallelPoints
               ? std::min<int64_t>(units, 4 * int64_t(pool->size()))
               : 1;
  }
  /// fn(begin, count) over [0, elements) in slices of 2^15 on the
  /// session's threads (one call on this thread below parallelPoints):
  /// for element-wise work, whose bytes do not depend on the split.
  template <typename Fn> void forSlices(int64_t elements, Fn &&fn) {
    constexpr int64_t kSlice = int64_t(1) << 15;
    if (!pool || pool->size() < 2 || elements < parallelPoints || elements <= kSlice) {
      if (elements > 0)
        fn(int64_t(0), elements);
      return;
    }
    pool->run((elements + kSlice - 1) / kSlice, [&](int64_t i, int) {
      const int64_t begin = i * kSlice;
      fn(begin, std::min(kSlice, elements - begin));
    });
  }
  Status runSteps();
  Status runKernel(const KernelPlan &plan);
  Status runRows(const KernelPlan &plan, Worker &w, int64_t firstRow, int64_t endRow);
  Status runRow(const KernelPlan &plan, Worker &w, const std::vector<int64_t> &outerBase,
                int64_t firstSlice, int64_t endSlice);
  void prepareRuns(const KernelPlan &plan, Worker &w);
  /// Whole rows of a row-reduction kernel whose rows are short, several to
  /// a piece: w.groupRows rows at w.groupBase.
  Status runRowGroup(const KernelPlan &plan, Worker &w);
  /// At most this many rows a piece.
  static constexpr int64_t kMaxGroupRows = 64;
  void startReductions(const KernelPlan &plan, Worker &w, int32_t pass, int64_t rows);
  void finishReductions(const KernelPlan &plan, Worker &w, int32_t pass, int64_t rows);
  /// `kept` (null: none): per instruction, whether its register already
  /// holds its value for this piece (skipped), set for what it computes.
  Status evalPiece(const KernelPlan &plan, Worker &w, int32_t pass, int64_t count,
                   uint8_t *kept = nullptr);
  void storeQuantized(const KernelPlan &plan, const KernelPlan::Inst &store, const float *values,
                      const std::vector<Segment> &segments,
                      const std::vector<int64_t> &segmentBase);
  Status runGemm(const GemmDesc &g);
  Status runBlasGemm(const GemmDesc &g, float *acc, const float *bias);
  Status runRoutine(const RoutineOp &op);
  Status runAttention(const RoutineOp &op, const float *q, const float *k, const float *v,
                      const float *bias, const std::array<int64_t, 4> &biasStrides,
                      const cpu::AttentionParams &p, float *out, float *lse);
  Status runDataMovement(const RoutineOp &op);
  Status runFloatRoutine(const RoutineOp &op);
  Status runIndexRoutine(const RoutineOp &op);
  Status runIntRoutine(const RoutineOp &op);
  const int64_t *indexOperand(int32_t tensor, Scratch &scratch);
  Status indexRangeError(const RoutineOp &op, const cpu::BadIndex &bad);
  bool roundGemmOperandsToTf32(const RoutineOp &op, const float *&a, const float *&b);
  Status storeFloats(const RoutineOp &op, const float *values);
  const float *floatOperand(int32_t tensor, Scratch &scratch);

  std::shared_ptr<const LoadedModule> module;
  BackendOptions options;
  AlignedBytes arena;
  std::vector<KernelPlan> kernels;
  int64_t pieceCapacity = 512;
  /// Points in a piece of a kernel with row reductions: its rows up to 4096
  /// points fit one (runRow then keeps values across passes); at least
  /// pieceCapacity. Registers are registerStride floats apart.
  int64_t rowCapacity = 512, registerStride = 512;
  int64_t capacityOf(const KernelPlan &plan) const {
    return plan.reductionPasses > 0 ? rowCapacity : pieceCapacity;
  }
  /// Threads for kernels (and routines that split their work); workers[w]
  /// is worker w's state.
  std::unique_ptr<ThreadPool> pool;
  std::vector<Worker> workers;
  /// Below this many points a kernel runs on the calling thread alone
  /// (starting the threads costs more than the work), unless its points
  /// cost twice that (KernelPlan::pointCost): 16384, or
  /// MIXPREC_CPU_PARALLEL_POINTS (tests set 1 to split every kernel).
  int64_t parallelPoints = 16384;
  std::vector<const uint8_t *> accessData; ///< per access of the running kernel
  /// scratch[0..4]: decoded operands by position; [5]: results; [6..11]:
  /// attention_grad's operands 5 and 6 and the gradients a call does not
  /// write, attention's output when the call writes the log-sum-exp.
  Scratch scratch[12];
  DnnlGemms dnnl;
  DnnlConvs dnnlConvs;
  /// Per routine: the kernel step a oneDNN convolution computes (none
  /// where kernelStep is -1); per GEMM: the quantize kernel step its
  /// epilogue computes (findGemmQuantizes); per step: the step before it
  /// that computes it, if one does.
  std::vector<ConvEpilogue> convEpilogues;
  std::vector<GemmQuantize> gemmQuantizes;
  /// Per GEMM: the amax kernel after it that its epilogue computes
  /// (findGemmAmaxes).
  std::vector<GemmAmax> gemmAmaxes;
  enum class FusedInto : uint8_t { None, Convolution, Gemm, GemmAmax, KernelAmax };
  std::vector<FusedInto> fusedSteps;
  /// Per routine: a max pool applying the ReLU of the convolution before
  /// it to its output (ConvEpilogue::reluInPool).
  std::vector<uint8_t> poolRelus;
  /// Per tensor: the layout it is kept in (findKeptLayouts; 0: plain).
  std::vector<uint8_t> keptLayouts;
  /// Narrow activations stored wide (findWideStorage), in wideBuffer.
  WideStorage wideStore;
  AlignedBytes wideBuffer;
  int64_t weightDecodes = 0;
  int64_t parallelRuns = 0;
  /// Constants of a dtype other than FP32 that GEMM biases and routines
  /// read, decoded to FP32 once at load (the GEMM operands the OpenBLAS
  /// path takes are not: their decode per run is that path's cost).
  std::unordered_map<int32_t, std::vector<float>> decodedConstants;
  /// MIXPREC_CPU_PROFILE set (and not "0"): each step's time in runs,
  /// printed to stderr by the destructor, slowest first.
  struct StepTime {
    std::string name;
    double seconds = 0;
  };
  std::vector<StepTime> profile;
  int64_t profileRuns = 0;
  bool warmedUp = false;
  alignas(64) uint8_t emptyTensor[64] = {};
};

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_CPU_CPUBACKEND_H
