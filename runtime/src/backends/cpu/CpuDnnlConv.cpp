//===- CpuDnnlConv.cpp - convolution routines on oneDNN -------------------===//
//
// CpuDnnl.h says which convolutions run here and how they round. One
// engine and stream per session (beside the GEMMs'); per convolution, made
// when the session is: the primitive (the direct algorithm, or for 3x3
// stride-1 convolutions computed in FP32 (FP32 operands, or BF16 ones
// widened) Winograd F(2x2, 3x3) where oneDNN has it:
// CpuDnnl.h says how that rounds), its weight packed into the layout the
// primitive picked (or, where oneDNN has no Winograd kernel, AVX2, the own
// one, Winograd.h: no primitive, its weight transformed once, src and dst
// in channel blocks of 8, run over the session's threads; it adds the
// addend and applies a ReLU as it stores the result), and the layout
// changes of src and dst where that
// layout is not the arena's plain NCHW (reorder primitives, exact: they
// move values). Runs set the operands' data handles and execute; nothing
// is decoded or packed per run but an activation in a dtype the primitive
// does not take (FP8, FP16 without an FP16 convolution, the narrower of
// two dtypes; widened exactly) and a bias that is not a constant. A fused
// addition (CpuConvFusion.cpp) is oneDNN's sum post-op over the addend
// put in dst first (reordered into the blocked dst, or copied into a plain
// one): one FP32 addition after the bias, as the kernel made it.
//
// Layouts: the primitive picks src, weight and dst layouts (format any):
// on AVX-512 blocked or channels-last ones (nChw16c, nhwc), whose JIT
// kernels beat what oneDNN has for plain NCHW (im2col + GEMM) by 1.5 to
// 2.5x on ResNet-18 and MobileNetV2 even with the two reorders per run.
//
// Memory: every primitive runs with a user-managed scratchpad (one buffer
// per session, the largest any primitive asks for); src and dst in a
// blocked layout live in buffers shared by the convolutions with that
// layout (channels padded to the block: up to 2x the tensor for 8
// channels). All of it is allocated here, counted in workspaceBytes() and
// checked against the session's memory limit with the reference path's
// im2col; the packed weights are not (as for GEMMs: they stand in for the
// constants, widened FP8 ones at twice the bytes; the own Winograd
// kernel's U at 16/9 of them, 32/9 where M is 8 more than a multiple of
// 16). The own kernel's V and M (16 floats per 2x2 tile and channel in
// and out: 4x the input and the output) are its scratchpad.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"
#include "runtime/src/backends/cpu/CpuDnnl.h"
#include "runtime/src/backends/cpu/CpuDnnlCommon.h"

#include "common/numerics/Rounding.h"
#include "runtime/kernels/Winograd.h"
#include "runtime/src/ThreadPool.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

namespace mixprec::runtime {

#if MIXPREC_HAVE_DNNL

namespace {

using schema::DType;

using dnnl::exactType;
using dnnl::isFp8;
using dnnl::statusText;
using dnnl::typeOf;
using dnnl::widen;

/// A dense row-major memory descriptor of `dims` in `type`.
dnnl_memory_desc_t plainDesc(const std::vector<int64_t> &dims, dnnl_data_type_t type) {
  dnnl_dims_t d = {}, strides = {};
  const int rank = static_cast<int>(dims.size());
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    d[i] = dims[i];
    strides[i] = stride;
    stride *= dims[i];
  }
  dnnl_memory_desc_t md;
  dnnl_memory_desc_init_by_strides(&md, rank, d, type, strides);
  return md;
}

void *alignedAlloc(size_t bytes) {
  void *p = nullptr;
  return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : nullptr;
}

/// The bytes of V and M the own Winograd kernel works on at a time
/// (ownBand).
constexpr int64_t kOwnBandBytes = int64_t(4) << 20;

/// A primitive and the memory objects of its arguments.
struct Call {
  dnnl_primitive_t primitive = nullptr;
  std::vector<dnnl_exec_arg_t> args;
  /// Its scratchpad's descriptor (size 0: none).
  dnnl_memory_desc_t scratchpad{};
  size_t scratchpadBytes = 0;
};

/// One convolution routine's primitives, memory objects and buffers.
struct Plan {
  bool ok = false;
  std::string reason, implementation;
  /// On Winograd F(2x2, 3x3) (oneDNN's jit_fp32_wino_2x3, or `own`), not
  /// direct.
  bool winograd = false;
  /// On mixprec's own Winograd kernel (cpu::winograd*, Winograd.h), not a
  /// oneDNN primitive: `conv` has no primitive, its scratchpad bytes are
  /// V's and M's, `packed` holds U.
  bool own = false;
  /// Its shape for one image and a band of at most shape.bandTileRows rows
  /// of tiles (ownBand), run `images` times per band, `pieces` bands in all.
  cpu::WinogradShape shape;
  int64_t images = 1, pieces = 1;
  /// The buffers of src and dst in the primitive's layout (null: plain).
  void *blockedSrc = nullptr, *blockedDst = nullptr;
  DType srcType = DType::F32, computeType = DType::F32, biasType = DType::F32;
  int64_t srcElements = 0;
  bool bias = false, constantBias = false;
  /// The result is added to what dst holds first (oneDNN's sum post-op):
  /// a fused addend, put there by `addendIn` (dst in a blocked layout) or
  /// copied (plain).
  bool sum = false;
  /// The layout changes (null: none) and the convolution, in run order.
  Call toBlocked, addendIn, conv, toPlain;
  /// The primitive's src (dst) layout where it is a permutation of the
  /// plain bytes (no padding), which activations may keep between steps
  /// (DnnlConvs::srcLayout): kChannelsLast (nhwc), 8 or 16 (channels in
  /// blocks of 8 or 16, nChw8c / nChw16c, C a multiple of the block); 0
  /// otherwise.
  uint8_t srcLayout = 0, dstLayout = 0;
  /// Runs take src (dst and the addend) in that layout (keepChannelsLast):
  /// the primitive reads (writes) the caller's bytes, no reorder.
  bool srcKept = false, dstKept = false;
  /// The primitive's src and dst memory objects.
  dnnl_memory_t convSrc = nullptr, convDst = nullptr;
  /// Memory over the caller's src (or its widened copy) and dst, plain;
  /// the bias (its own values when a constant); the scratchpads.
  dnnl_memory_t userSrc = nullptr, userDst = nullptr, biasMemory = nullptr, userAddend = nullptr;
  int64_t dstElements = 0;
  std::vector<dnnl_memory_t> owned;
  /// The packed weight; the bias in FP32.
  void *packed = nullptr;
  std::vector<float> biasValues;
  size_t wideSrcBytes = 0;
};

/// A buffer for src or dst in a blocked layout, shared by the convolutions
/// whose src (or dst) has that layout: a blocked layout's padding is zeroed
/// when a memory object is made over the buffer and every primitive keeps
/// it zero, so the padding stays zero whichever of them ran last.
struct Blocked {
  dnnl_memory_desc_t md{};
  bool dst = false;
  void *data = nullptr;
  size_t bytes = 0;
};

} // namespace

struct DnnlConvs::Impl {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_attr_t attr = nullptr;
  std::vector<Plan> plans;
  std::vector<Blocked> blocked;
  int64_t packsAtLoad = 0;
  /// Shared by all runs (one at a time): the widened activation and the
  /// scratchpad.
  void *wideSrc = nullptr, *scratchpad = nullptr;
  size_t wideSrcBytes = 0, scratchpadBytes = 0;

  ~Impl() {
    for (Plan &p : plans)
      release(p);
    for (Blocked &b : blocked)
      std::free(b.data);
    std::free(wideSrc);
    std::free(scratchpad);
    if (attr)
      dnnl_primitive_attr_destroy(attr);
    if (stream)
      dnnl_stream_destroy(stream);
    if (engine)
      dnnl_engine_destroy(engine);
  }

  /// Destroys what p holds, keeping its reason.
  static void release(Plan &p) {
    for (Call *c : {&p.toBlocked, &p.addendIn, &p.conv, &p.toPlain})
      if (c->primitive)
        dnnl_primitive_destroy(c->primitive);
    for (dnnl_memory_t m : p.owned)
      dnnl_memory_destroy(m);
    std::free(p.packed);
    std::string reason = std::move(p.reason);
    p = Plan();
    p.reason = std::move(reason);
  }

  /// A memory object of `p` over `handle` (DNNL_MEMORY_NONE: set per run).
  dnnl_memory_t memory(Plan &p, const dnnl_memory_desc_t &md, void *handle) {
    dnnl_memory_t m = nullptr;
    if (dnnl_memory_create(&m, &md, engine, handle) != dnnl_success)
      return nullptr;
    p.owned.push_back(m);
    return m;
  }

  /// The shared buffer for src (or `dst`) in layout `md`; null when memory
  /// runs out.
  void *blockedBuffer(const dnnl_memory_desc_t &md, bool dst) {
    for (const Blocked &b : blocked)
      if (b.dst == dst && dnnl_memory_desc_equal(&b.md, &md))
        return b.data;
    Blocked b{md, dst, nullptr, dnnl_memory_desc_get_size(&md)};
    if (!(b.data = alignedAlloc(b.bytes)))
      return nullptr;
    blocked.push_back(b);
    return b.data;
  }

  /// Makes `call`'s primitive from `pd` (which it destroys) and records its
  /// scratchpad; false when oneDNN cannot.
  bool make(Call &call, dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *scratch =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (scratch) {
      call.scratchpad = *scratch;
      call.scratchpadBytes = dnnl_memory_desc_get_size(scratch);
    }
    const dnnl_status_t s = dnnl_primitive_create(&call.primitive, pd);
    dnnl_primitive_desc_destroy(pd);
    return s == dnnl_success;
  }

  /// A reorder from `from` to `to` into `call` (user scratchpad).
  bool reorder(Call &call, const dnnl_memory_desc_t &from, const dnnl_memory_desc_t &to) {
    dnnl_primitive_desc_t pd = nullptr;
    if (dnnl_reorder_primitive_desc_create(&pd, &from, engine, &to, engine, attr) != dnnl_success)
      return false;
    return make(call, pd);
  }

  /// Winograd F(2x2, 3x3) may take `op`: computed in FP32 (`type`: FP32
  /// operands as stored, or BF16, FP8, FP16 ones widened), two spatial dims,
  /// a 3x3 kernel, stride and dilation 1, one group, unless
  /// MIXPREC_CPU_WINOGRAD=0 (=own: the own kernel, Winograd.h, even where
  /// oneDNN has one).
  static bool winogradEligible(const RoutineOp &op, const TensorDesc &w, dnnl_data_type_t type) {
    if (turnedOff("MIXPREC_CPU_WINOGRAD") || type != dnnl_f32 || w.shape.size() != 4 ||
        w.shape[2] != 3 || w.shape[3] != 3 || op.groups != 1)
      return false;
    for (size_t s = 0; s < 2; ++s)
      if (op.window.strides[s] != 1 || op.window.dilations[s] != 1)
        return false;
    return true;
  }

  /// Whether mixprec's own Winograd kernel (Winograd.h) takes `op` (one
  /// winogradEligible already: FP32 operands, as stored or widened
  /// exactly): this CPU runs it, two spatial dims, channels in multiples
  /// of 8, pads up to 2; sets its shape.
  static bool ownWinograd(const RoutineOp &op, const TensorDesc &x, const TensorDesc &y,
                          cpu::WinogradShape &shape) {
    if (!cpu::winogradAvailable() || x.shape.size() != 4)
      return false;
    shape.n = x.shape[0];
    shape.c = x.shape[1];
    shape.h = x.shape[2];
    shape.w = x.shape[3];
    shape.k = y.shape[1];
    shape.ho = y.shape[2];
    shape.wo = y.shape[3];
    shape.padTop = op.window.pads[0];
    shape.padLeft = op.window.pads[1];
    return cpu::winogradTakes(shape);
  }

  /// The rows of tiles of the own kernel's bands: V and M of a band within
  /// kOwnBandBytes, or MIXPREC_CPU_WINOGRAD_BAND_BYTES (tests: a band's
  /// tiles are computed alone, so any band gives the same bits), at least
  /// one row.
  static int64_t ownBand(const cpu::WinogradShape &shape) {
    const int64_t rowBytes = 16 * (shape.c + shape.paddedK()) * shape.tileCols() * 4;
    int64_t budget = kOwnBandBytes;
    if (const char *bytes = std::getenv("MIXPREC_CPU_WINOGRAD_BAND_BYTES"))
      budget = std::atoll(bytes);
    return std::clamp<int64_t>(budget / rowBytes, 1, shape.tileRows());
  }

  /// Where M starts in the own kernel's scratchpad (floats; V before it).
  static size_t ownProductOffset(const cpu::WinogradShape &shape) {
    return (cpu::winogradInputFloats(shape) + 15) / 16 * 16;
  }

  /// Whether implementation `impl`'s sum post-op adds the addend to the
  /// finished result (the products' sum plus the bias), one FP32 addition,
  /// as the kernel's Add does after an unfused convolution: brgconv (the
  /// brgemm kernel's post-ops run on its finished accumulators) and
  /// jit_fp32_wino_2x3 (after the output transform and the bias), both
  /// checked bit for bit against the unfused kernels (CpuDnnlConvTest,
  /// ReluAndResidualKernelsRunInTheConvolutionWithTheSameBits). Not the
  /// AVX2 direct kernel (jit:avx2): it starts its accumulators from the
  /// addend plus the bias and adds the products to them (other bits: seen
  /// on an AMD EPYC, 2026-12-06), nor the GEMM-based ones (the addend goes
  /// into the GEMM's beta, before the bias); any other, unchecked, neither.
  static bool sumAfterAccumulation(const std::string &impl) {
    return impl.rfind("brg", 0) == 0 || impl.find("wino_2x3") != std::string::npos;
  }

  /// Plans routine `op` (adding its result to what dst holds when `sum`);
  /// false (with p.reason) when oneDNN does not take it.
  bool plan(const LoadedModule &module, const RoutineOp &op,
            const std::function<const uint8_t *(int32_t)> &constant, Plan &p, bool sum,
            bool widenF16 = false) {
    if (op.kind == RoutineKind::ConvTranspose)
      return p.reason = "conv_transpose runs on the reference kernel", false;
    if (op.kind != RoutineKind::Conv2d && op.kind != RoutineKind::Conv)
      return p.reason = "not a convolution", false;
    if (op.tf32)
      return p.reason = "TF32-rounded operands", false;
    const std::vector<TensorDesc> &tensors = module.tensors();
    const TensorDesc &x = tensors[op.inputs[0]], &w = tensors[op.inputs[1]];
    const TensorDesc &y = tensors[op.output];
    p.bias = op.inputs.size() > 2 && op.inputs[2] >= 0;
    if (!w.isConstant())
      return p.reason = "a weight that is not a module constant", false;
    const size_t dims = x.shape.size() - 2;
    if (dims < 1 || dims > 3)
      return p.reason = "not 1 to 3 spatial dims", false;
    if (x.elements == 0 || w.elements == 0 || y.elements == 0)
      return p.reason = "an empty tensor", false;
    // Both operands in one type oneDNN takes: their own, else (two dtypes)
    // FP32; every widening exact.
    p.srcType = x.dtype;
    const DType xType = exactType(x.dtype, widenF16), wType = exactType(w.dtype, widenF16);
    p.computeType = xType == wType ? xType : DType::F32;
    const dnnl_data_type_t type = typeOf(p.computeType);
    if (type == dnnl_data_type_undef)
      return p.reason = std::string("operands of dtype ") + dtypeName(x.dtype), false;

    const int64_t groups = op.groups, m = w.shape[0];
    std::vector<int64_t> weightDims = w.shape;
    if (groups > 1) { // [M, C/g, k...] as [g, M/g, C/g, k...]
      weightDims[0] = m / groups;
      weightDims.insert(weightDims.begin(), groups);
    }
    const dnnl_memory_desc_t src = plainDesc(x.shape, type), dst = plainDesc(y.shape, dnnl_f32);
    const dnnl_memory_desc_t weights = plainDesc(weightDims, type);
    const dnnl_memory_desc_t bias = plainDesc({m}, dnnl_f32);
    dnnl_memory_desc_t srcAny, weightsAny, dstAny;
    dnnl_memory_desc_init_by_tag(&srcAny, src.ndims, src.dims, type, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&weightsAny, weights.ndims, weights.dims, type,
                                 dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dstAny, dst.ndims, dst.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_dims_t strides = {}, dilates = {}, padL = {}, padR = {};
    for (size_t s = 0; s < dims; ++s) {
      strides[s] = op.window.strides[s];
      dilates[s] = op.window.dilations[s] - 1; // oneDNN counts the gaps
      padL[s] = op.window.pads[s];
      padR[s] = op.window.pads[dims + s];
    }
    // The fused addend: oneDNN's sum post-op, dst = conv + 1 * dst, one
    // FP32 addition of the result as the kernel's Add makes.
    dnnl_primitive_attr_t convAttr = attr;
    dnnl_status_t s = dnnl_success;
    if (sum) {
      dnnl_post_ops_t ops = nullptr;
      if (dnnl_primitive_attr_clone(&convAttr, attr) != dnnl_success)
        return p.reason = "oneDNN: cannot copy its attributes", false;
      s = dnnl_post_ops_create(&ops);
      if (s == dnnl_success) {
        s = dnnl_post_ops_append_sum(ops, 1.0f);
        if (s == dnnl_success)
          s = dnnl_primitive_attr_set_post_ops(convAttr, ops);
        dnnl_post_ops_destroy(ops);
      }
    }
    auto create = [&](dnnl_alg_kind_t algorithm, dnnl_primitive_desc_t &out) {
      dnnl_convolution_desc_t desc;
      dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, algorithm, &srcAny, &weightsAny, p.bias ? &bias : nullptr,
          &dstAny, strides, dilates, padL, padR);
      return st == dnnl_success ? dnnl_primitive_desc_create(&out, &desc, convAttr, engine, nullptr)
                                : st;
    };
    dnnl_primitive_desc_t pd = nullptr;
    // 3x3 stride-1 convolutions computed in FP32 (as stored or widened: a
    // BF16 ResNet-18 on AVX2 31 ms where the direct algorithm took 44) on
    // Winograd F(2x2, 3x3) where oneDNN has it (CpuDnnl.h: its rounding and
    // bound), else (AVX2: oneDNN's is AVX-512's) on mixprec's own where it
    // takes the shape (Winograd.h: the same formulation and bound); anything
    // else, or another Winograd variant, on the direct algorithm.
    p.winograd = p.own = false;
    const bool wino = s == dnnl_success && winogradEligible(op, w, type);
    const char *how = std::getenv("MIXPREC_CPU_WINOGRAD");
    if (wino && how && !std::strcmp(how, "own")) // the own kernel first (tests)
      p.winograd = p.own = ownWinograd(op, x, y, p.shape);
    if (wino && !p.winograd && create(dnnl_convolution_winograd, pd) == dnnl_success) {
      const char *info = nullptr;
      p.winograd =
          dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success &&
          info && std::strstr(info, "wino_2x3");
      if (!p.winograd) {
        dnnl_primitive_desc_destroy(pd);
        pd = nullptr;
      }
    }
    if (wino && !p.winograd)
      p.winograd = p.own = ownWinograd(op, x, y, p.shape);
    if (p.own)
      p.implementation = "mixprec:winograd_2x3:avx2";
    if (s == dnnl_success && !p.winograd)
      s = create(dnnl_convolution_direct, pd);
    if (convAttr != attr)
      dnnl_primitive_attr_destroy(convAttr);
    if (s == dnnl_unimplemented && p.computeType == DType::F16)
      return plan(module, op, constant, p, sum, /*widenF16=*/true);
    if (s != dnnl_success)
      return p.reason = "oneDNN's convolution: " + statusText(s), false;
    dnnl_memory_desc_t srcChosen, weightsChosen = weights, dstChosen;
    if (p.own) {
      // One image and band at a time (V and M of at most kOwnBandBytes;
      // ownBand); src and dst in channel blocks of 8; V and M in the
      // scratchpad (M from a 64-byte boundary).
      p.images = p.shape.n;
      p.shape.n = 1;
      p.shape.bandTileRows = ownBand(p.shape);
      p.pieces =
          p.images * ((p.shape.tileRows() + p.shape.bandTileRows - 1) / p.shape.bandTileRows);
      dnnl_memory_desc_init_by_tag(&srcChosen, 4, src.dims, dnnl_f32, dnnl_nChw8c);
      dnnl_memory_desc_init_by_tag(&dstChosen, 4, dst.dims, dnnl_f32, dnnl_nChw8c);
      p.conv.scratchpadBytes =
          (ownProductOffset(p.shape) + cpu::winogradProductFloats(p.shape)) * sizeof(float);
    } else {
      const char *info = nullptr;
      if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success && info)
        p.implementation = info;
      if (sum && !sumAfterAccumulation(p.implementation)) {
        dnnl_primitive_desc_destroy(pd);
        return p.reason =
                   "oneDNN's " + p.implementation + " adds the addend before it sums the products",
               false;
      }
      if (p.implementation.rfind("ref", 0) == 0) {
        // oneDNN's naive loops: no faster than im2col + SGEMM, and not the
        // interpreter's order.
        dnnl_primitive_desc_destroy(pd);
        return p.reason = "oneDNN has only its reference implementation (" + p.implementation + ")",
               false;
      }
      srcChosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
      weightsChosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
      dstChosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
      if (!make(p.conv, pd))
        return p.reason = "oneDNN's convolution: cannot create its primitive", false;
    }

    // The weight, widened once if need be, packed into the chosen layout.
    const uint8_t *data = constant(op.inputs[1]);
    std::vector<uint8_t> wide;
    const size_t wideBytes = p.computeType == DType::F32 ? 4 : 2;
    if (w.dtype != p.computeType) {
      wide.resize(static_cast<size_t>(w.elements) * wideBytes);
      widen(w.dtype, p.computeType, data, w.elements, wide.data());
      data = wide.data();
    }
    if (p.own) {
      // U = G g G^T, once (counted as a pack).
      if (!(p.packed = alignedAlloc(cpu::winogradWeightFloats(p.shape) * sizeof(float))))
        return p.reason = "cannot allocate its packed weight", false;
      cpu::winogradTransformWeight(p.shape, reinterpret_cast<const float *>(data),
                                   static_cast<float *>(p.packed));
      ++packsAtLoad;
    } else if (!pack(p, weights, weightsChosen, data)) {
      return false;
    }
    // The bias in FP32: decoded now when a constant, else per run unless
    // stored in FP32.
    if (p.bias) {
      const TensorDesc &b = tensors[op.inputs[2]];
      p.biasType = b.dtype;
      p.constantBias = b.isConstant();
      if (p.constantBias || b.dtype != DType::F32)
        p.biasValues.resize(static_cast<size_t>(m));
      if (p.constantBias)
        num::decodeArray(formatOf(b.dtype), constant(op.inputs[2]), p.biasValues.data(),
                         static_cast<size_t>(m));
    }
    p.srcElements = x.elements;
    p.dstElements = y.elements;
    p.sum = sum;
    if (x.dtype != p.computeType)
      p.wideSrcBytes = static_cast<size_t>(x.elements) * wideBytes;
    return layouts(p, src, srcChosen, dst, dstChosen, weightsChosen, bias) && (p.ok = true);
  }

  /// Reorders the constant weight at `data` (plain `from`) into a buffer
  /// in the primitive's layout `to`; false with p.reason.
  bool pack(Plan &p, const dnnl_memory_desc_t &from, const dnnl_memory_desc_t &to,
            const uint8_t *data) {
    if (!(p.packed = alignedAlloc(dnnl_memory_desc_get_size(&to))))
      return p.reason = "cannot allocate its packed weight", false;
    dnnl_primitive_desc_t pd = nullptr;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, &from, engine, &to, engine, nullptr);
    dnnl_primitive_t reorder = nullptr;
    if (s == dnnl_success)
      s = dnnl_primitive_create(&reorder, pd);
    if (pd)
      dnnl_primitive_desc_destroy(pd);
    dnnl_memory_t in = nullptr, out = nullptr;
    if (s == dnnl_success)
      s = dnnl_memory_create(&in, &from, engine, const_cast<uint8_t *>(data));
    if (s == dnnl_success)
      s = dnnl_memory_create(&out, &to, engine, p.packed);
    if (s == dnnl_success) {
      const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}};
      s = dnnl_primitive_execute(reorder, stream, 2, args);
    }
    if (s == dnnl_success)
      s = dnnl_stream_wait(stream);
    for (dnnl_memory_t m : {in, out})
      if (m)
        dnnl_memory_destroy(m);
    if (reorder)
      dnnl_primitive_destroy(reorder);
    if (s != dnnl_success)
      return p.reason = "packing its weight: " + statusText(s), false;
    ++packsAtLoad;
    return true;
  }

  /// The memory objects of p's runs and, where the primitive's src or dst
  /// layout is not the plain one, the reorders and buffers between them.
  bool layouts(Plan &p, const dnnl_memory_desc_t &src, const dnnl_memory_desc_t &srcChosen,
               const dnnl_memory_desc_t &dst, const dnnl_memory_desc_t &dstChosen,
               const dnnl_memory_desc_t &weights, const dnnl_memory_desc_t &bias) {
    const bool srcBlocked = !dnnl_memory_desc_equal(&src, &srcChosen);
    const bool dstBlocked = !dnnl_memory_desc_equal(&dst, &dstChosen);
    p.srcLayout = srcBlocked ? keepableLayout(srcChosen) : 0;
    p.dstLayout = dstBlocked ? keepableLayout(dstChosen) : 0;
    void *blockedSrc = nullptr, *blockedDst = nullptr;
    if (srcBlocked) {
      if (!(blockedSrc = blockedBuffer(srcChosen, false)))
        return p.reason = "cannot allocate its src in oneDNN's layout", false;
      if (!reorder(p.toBlocked, src, srcChosen))
        return p.reason = "oneDNN cannot reorder its src", false;
    }
    if (dstBlocked) {
      if (!(blockedDst = blockedBuffer(dstChosen, true)))
        return p.reason = "cannot allocate its dst in oneDNN's layout", false;
      if (!reorder(p.toPlain, dstChosen, dst))
        return p.reason = "oneDNN cannot reorder its dst", false;
      if (p.sum && !reorder(p.addendIn, dst, dstChosen))
        return p.reason = "oneDNN cannot reorder its addend", false;
    }
    // Objects over buffers held here get their handles now (oneDNN zeroes
    // a blocked layout's padding then); the caller's, per run.
    p.userSrc = memory(p, src, DNNL_MEMORY_NONE);
    p.userDst = memory(p, dst, DNNL_MEMORY_NONE);
    if (p.sum && dstBlocked)
      p.userAddend = memory(p, dst, DNNL_MEMORY_NONE);
    dnnl_memory_t convSrc = p.convSrc = srcBlocked ? memory(p, srcChosen, blockedSrc) : p.userSrc;
    dnnl_memory_t convDst = p.convDst = dstBlocked ? memory(p, dstChosen, blockedDst) : p.userDst;
    p.blockedSrc = blockedSrc;
    p.blockedDst = blockedDst;
    dnnl_memory_t weightsMemory = p.own ? nullptr : memory(p, weights, p.packed);
    if (p.bias)
      p.biasMemory = memory(p, bias, p.constantBias ? p.biasValues.data() : DNNL_MEMORY_NONE);
    if (!p.userSrc || !p.userDst || !convSrc || !convDst || (!p.own && !weightsMemory) ||
        (p.bias && !p.biasMemory) || (p.sum && dstBlocked && !p.userAddend))
      return p.reason = "cannot create its memory objects", false;
    if (srcBlocked)
      p.toBlocked.args = {{DNNL_ARG_FROM, p.userSrc}, {DNNL_ARG_TO, convSrc}};
    if (!p.own) {
      p.conv.args = {
          {DNNL_ARG_SRC, convSrc}, {DNNL_ARG_WEIGHTS, weightsMemory}, {DNNL_ARG_DST, convDst}};
      if (p.bias)
        p.conv.args.push_back({DNNL_ARG_BIAS, p.biasMemory});
    }
    if (dstBlocked)
      p.toPlain.args = {{DNNL_ARG_FROM, convDst}, {DNNL_ARG_TO, p.userDst}};
    if (p.sum && dstBlocked)
      p.addendIn.args = {{DNNL_ARG_FROM, p.userAddend}, {DNNL_ARG_TO, convDst}};
    return true;
  }

  /// The shared buffers, and each primitive's scratchpad memory over the
  /// shared one; false when memory runs out.
  bool allocateShared() {
    for (Plan &p : plans) {
      if (!p.ok)
        continue;
      wideSrcBytes = std::max(wideSrcBytes, p.wideSrcBytes);
      for (Call *c : {&p.toBlocked, &p.addendIn, &p.conv, &p.toPlain})
        scratchpadBytes = std::max(scratchpadBytes, c->scratchpadBytes);
    }
    if ((wideSrcBytes && !(wideSrc = alignedAlloc(wideSrcBytes))) ||
        (scratchpadBytes && !(scratchpad = alignedAlloc(scratchpadBytes))))
      return false;
    for (Plan &p : plans)
      for (Call *c : {&p.toBlocked, &p.addendIn, &p.conv, &p.toPlain})
        if (p.ok && c->primitive && c->scratchpadBytes) {
          dnnl_memory_t m = memory(p, c->scratchpad, scratchpad);
          if (!m)
            return false;
          c->args.push_back({DNNL_ARG_SCRATCHPAD, m});
        }
    return true;
  }

  /// `md`'s layout code (Plan::srcLayout): the channels-last layout (nwc,
  /// nhwc, ndhwc) of its dims and type, or channels in blocks of 8 or 16
  /// (aBc8b, aBcd8b, aBcde8b and the 16s) where the channels are a
  /// multiple of the block (no padding: the plain bytes permuted); 0 for
  /// anything else.
  static uint8_t keepableLayout(const dnnl_memory_desc_t &md) {
    const int d = md.ndims;
    if (d < 3 || d > 5)
      return 0;
    auto is = [&](dnnl_format_tag_t tag) {
      dnnl_memory_desc_t want;
      return dnnl_memory_desc_init_by_tag(&want, d, md.dims, md.data_type, tag) == dnnl_success &&
             dnnl_memory_desc_equal(&want, &md);
    };
    if (is(d == 3 ? dnnl_nwc : d == 4 ? dnnl_nhwc : dnnl_ndhwc))
      return kChannelsLast;
    for (int block : {8, 16}) {
      if (md.dims[1] % block != 0)
        continue;
      const dnnl_format_tag_t tag = block == 8 ? (d == 3   ? dnnl_aBc8b
                                                  : d == 4 ? dnnl_aBcd8b
                                                           : dnnl_aBcde8b)
                                               : (d == 3   ? dnnl_aBc16b
                                                  : d == 4 ? dnnl_aBcd16b
                                                           : dnnl_aBcde16b);
      if (is(tag))
        return uint8_t(block);
    }
    return 0;
  }

  /// Runs p on the own Winograd kernel: src reordered into its blocked
  /// buffer unless kept, the addend read where it is kept (dst in the
  /// caller's bytes) or reordered into the blocked dst, the three phases
  /// over `pool`'s threads, dst reordered out unless kept. Handles of
  /// userSrc, userDst set by the caller.
  dnnl_status_t runOwn(const Plan &p, const void *src, const float *bias, float *dst,
                       const float *addend, bool relu, ThreadPool *pool) {
    dnnl_status_t s = dnnl_success;
    if (!p.srcKept) {
      s = execute(p.toBlocked);
      src = p.blockedSrc;
    }
    float *out = p.dstKept ? dst : static_cast<float *>(p.blockedDst);
    if (p.sum && !p.dstKept) {
      if (s == dnnl_success)
        s = dnnl_memory_set_data_handle(p.userAddend, const_cast<float *>(addend));
      if (s == dnnl_success)
        s = execute(p.addendIn);
      addend = out;
    }
    if (s == dnnl_success)
      s = dnnl_stream_wait(stream);
    if (s != dnnl_success)
      return s;
    // Image by image, band by band of tile rows (p.shape: one band's).
    // Kept, the addend in dst's layout: bytes partly shared with dst (not
    // the same tensor) are copied into it first, once src is read where
    // that is before dst is written (one band: dst may share bytes with
    // src), else before (writesDstLast false: dst shares none).
    const size_t bytes = static_cast<size_t>(p.dstElements) * sizeof(float);
    const auto *a = reinterpret_cast<const uint8_t *>(addend);
    const auto *o = reinterpret_cast<const uint8_t *>(out);
    const bool copyAddend = p.sum && addend != out && a < o + bytes && o < a + bytes;
    if (copyAddend && p.pieces > 1) {
      std::memmove(out, addend, bytes);
      addend = out;
    }
    float *v = static_cast<float *>(scratchpad), *m = v + ownProductOffset(p.shape);
    const int64_t images = p.images, rows = p.shape.tileRows();
    const int64_t inElements = p.srcElements / images, outElements = p.dstElements / images;
    for (int64_t image = 0; image < images; ++image)
      for (int64_t row = 0; row < rows; row += p.shape.bandTileRows) {
        cpu::WinogradShape shape = p.shape;
        shape.firstTileRow = row;
        shape.bandTileRows = std::min(p.shape.bandTileRows, rows - row);
        const float *x = static_cast<const float *>(src) + image * inElements;
        phase(pool, cpu::winogradInputUnits(shape),
              [&](int64_t b, int64_t e) { cpu::winogradInput(shape, x, v, b, e); });
        if (copyAddend && p.pieces == 1) {
          std::memmove(out, addend, bytes);
          addend = out;
        }
        phase(pool, cpu::winogradMultiplyUnits(shape), [&](int64_t b, int64_t e) {
          cpu::winogradMultiply(shape, v, static_cast<const float *>(p.packed), m, b, e);
        });
        float *y = out + image * outElements;
        const float *add = p.sum ? addend + image * outElements : nullptr;
        phase(pool, cpu::winogradOutputUnits(shape), [&](int64_t b, int64_t e) {
          cpu::winogradOutput(shape, m, bias, add, relu, y, b, e);
        });
      }
    if (!p.dstKept)
      s = execute(p.toPlain);
    return s == dnnl_success ? dnnl_stream_wait(stream) : s;
  }

  /// fn(begin, end) over [0, units) in ranges spread over `pool`'s threads
  /// (each unit's result is the same in any range).
  template <typename Fn> static void phase(ThreadPool *pool, int64_t units, const Fn &fn) {
    const int workers = pool ? pool->size() : 1;
    if (workers < 2 || units < 2) {
      fn(int64_t(0), units);
      return;
    }
    const int64_t chunks = std::min<int64_t>(units, 4 * int64_t(workers));
    pool->run(chunks, [&](int64_t i, int) { fn(units * i / chunks, units * (i + 1) / chunks); });
  }

  dnnl_status_t execute(const Call &c) {
    if (!c.primitive)
      return dnnl_success;
    return dnnl_primitive_execute(c.primitive, stream, int(c.args.size()), c.args.data());
  }
};

DnnlConvs::DnnlConvs() : impl(std::make_unique<Impl>()) {}
DnnlConvs::~DnnlConvs() = default;

Status DnnlConvs::prepare(const LoadedModule &module,
                          const std::function<const uint8_t *(int32_t)> &constant,
                          const std::vector<uint8_t> &sums) {
  Impl &d = *impl;
  const std::vector<RoutineOp> &routines = module.routines();
  d.plans.assign(routines.size(), Plan());
  bool any = false;
  for (size_t i = 0; i < routines.size(); ++i) {
    const RoutineKind k = routines[i].kind;
    any |= k == RoutineKind::Conv2d || k == RoutineKind::Conv;
    d.plans[i].reason = k == RoutineKind::ConvTranspose
                            ? "conv_transpose runs on the reference kernel"
                        : k == RoutineKind::Conv2d || k == RoutineKind::Conv ? ""
                                                                             : "not a convolution";
  }
  if (!any)
    return okStatus();
  auto refuseAll = [&](const char *why) {
    for (size_t i = 0; i < routines.size(); ++i)
      if (d.plans[i].reason.empty())
        d.plans[i].reason = why;
    return okStatus();
  };
  // The same switch as the GEMM steps: the reference path for everything.
  if (const char *why = dnnl::offByEnvironment())
    return refuseAll(why);
  if (dnnl_engine_create(&d.engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&d.stream, d.engine, dnnl_stream_default_flags) != dnnl_success ||
      dnnl_primitive_attr_create(&d.attr) != dnnl_success ||
      dnnl_primitive_attr_set_scratchpad_mode(d.attr, dnnl_scratchpad_mode_user) != dnnl_success)
    return refuseAll("oneDNN's CPU engine did not start");
  for (size_t i = 0; i < routines.size(); ++i) {
    Plan &p = d.plans[i];
    const bool sum = i < sums.size() && sums[i];
    if (!p.reason.empty() || d.plan(module, routines[i], constant, p, sum))
      continue;
    // Refused with the addition: planned without it (addsAddend false:
    // the kernel after it runs the addition).
    if (sum && p.reason.rfind("cannot allocate", 0) != 0) {
      Impl::release(p);
      p.reason.clear();
      if (d.plan(module, routines[i], constant, p, false))
        continue;
    }
    Impl::release(p);
    if (p.reason.rfind("cannot allocate", 0) == 0)
      return Status(MIXPREC_OUT_OF_MEMORY, routines[i].name + ": oneDNN: " + p.reason);
  }
  if (!d.allocateShared())
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "CPU backend: cannot allocate oneDNN's convolution buffers (" +
                      std::to_string(d.wideSrcBytes + d.scratchpadBytes) + " bytes)");
  return okStatus();
}

bool DnnlConvs::handles(size_t index) const {
  return index < impl->plans.size() && impl->plans[index].ok;
}

std::string DnnlConvs::reason(size_t index) const {
  return index < impl->plans.size() ? impl->plans[index].reason : "no such routine";
}

std::string DnnlConvs::implementation(size_t index) const {
  return handles(index) ? impl->plans[index].implementation : "";
}

bool DnnlConvs::winograd(size_t index) const {
  return handles(index) && impl->plans[index].winograd;
}

bool DnnlConvs::addsAddend(size_t index) const { return handles(index) && impl->plans[index].sum; }

bool DnnlConvs::appliesRelu(size_t index) const { return handles(index) && impl->plans[index].own; }

bool DnnlConvs::writesDstLast(size_t index) const {
  if (!handles(index))
    return false;
  const Plan &p = impl->plans[index];
  // The own Winograd kernel reads all of src before it writes dst (phase
  // 1, then 3) where it runs in one piece (ownBand), but the bias while it
  // writes, unless its own copy.
  if (p.own)
    return p.pieces == 1 && (!p.bias || p.constantBias || p.biasType != DType::F32);
  return p.toPlain.primitive && !p.dstKept;
}

uint8_t DnnlConvs::srcLayout(size_t index) const {
  return handles(index) ? impl->plans[index].srcLayout : 0;
}

uint8_t DnnlConvs::dstLayout(size_t index) const {
  return handles(index) ? impl->plans[index].dstLayout : 0;
}

void DnnlConvs::keepLayouts(size_t index, bool src, bool dst) {
  if (!handles(index))
    return;
  Plan &p = impl->plans[index];
  p.srcKept = src && p.srcLayout != 0;
  p.dstKept = dst && p.dstLayout != 0;
}

Status DnnlConvs::run(size_t index, const void *src, const void *bias, float *dst,
                      const float *addend, ThreadPool *pool, bool relu) {
  Impl &d = *impl;
  Plan &p = d.plans[index];
  if (p.sum != (addend != nullptr))
    return Status(MIXPREC_INTERNAL, "oneDNN's convolution: an addend where the plan has none, "
                                    "or none where it has one");
  if (relu && !p.own)
    return Status(MIXPREC_INTERNAL, "oneDNN's convolution: a ReLU it does not apply");
  // An activation in a dtype the primitive does not take: widened (exact).
  if (p.wideSrcBytes) {
    widen(p.srcType, p.computeType, src, p.srcElements, d.wideSrc);
    src = d.wideSrc;
  }
  // Kept channels-last: the primitive's own objects over the caller's
  // bytes (the shared blocked buffers stay the others').
  dnnl_status_t s =
      dnnl_memory_set_data_handle(p.srcKept ? p.convSrc : p.userSrc, const_cast<void *>(src));
  if (s == dnnl_success)
    s = dnnl_memory_set_data_handle(p.dstKept ? p.convDst : p.userDst, dst);
  const float *biasValues = p.bias ? p.biasValues.data() : nullptr;
  if (s == dnnl_success && p.bias && !p.constantBias) {
    void *values = const_cast<void *>(bias);
    if (p.biasType != DType::F32) {
      num::decodeArray(formatOf(p.biasType), bias, p.biasValues.data(), p.biasValues.size());
      values = p.biasValues.data();
    }
    biasValues = static_cast<const float *>(values);
    s = dnnl_memory_set_data_handle(p.biasMemory, values);
  }
  if (p.own) {
    if (s == dnnl_success)
      s = d.runOwn(p, src, biasValues, dst, addend, relu, pool);
    if (s != dnnl_success)
      return Status(MIXPREC_EXECUTION_ERROR,
                    "oneDNN's reorder around the Winograd kernel failed: " + statusText(s));
    return okStatus();
  }
  // The addend where the sum post-op reads dst: reordered into oneDNN's
  // layout (addendIn), or copied into a dst in the caller's bytes, plain or
  // kept channels-last as the addend is (in place: nothing to copy).
  if (s == dnnl_success && p.sum) {
    if (p.userAddend && !p.dstKept)
      s = dnnl_memory_set_data_handle(p.userAddend, const_cast<float *>(addend));
    else if (addend != dst)
      std::memmove(dst, addend, static_cast<size_t>(p.dstElements) * sizeof(float));
  }
  const Call none;
  for (const Call *c : std::initializer_list<const Call *>{p.srcKept ? &none : &p.toBlocked,
                                                           p.dstKept ? &none : &p.addendIn, &p.conv,
                                                           p.dstKept ? &none : &p.toPlain})
    if (s == dnnl_success)
      s = d.execute(*c);
  if (s == dnnl_success)
    s = dnnl_stream_wait(d.stream);
  if (s != dnnl_success)
    return Status(MIXPREC_EXECUTION_ERROR, "oneDNN's convolution failed: " + statusText(s));
  return okStatus();
}

int64_t DnnlConvs::packsAtLoad() const { return impl->packsAtLoad; }

uint64_t DnnlConvs::workspaceBytes() const {
  uint64_t bytes = impl->wideSrcBytes + impl->scratchpadBytes;
  for (const Blocked &b : impl->blocked)
    bytes += b.bytes;
  return bytes;
}

#else // !MIXPREC_HAVE_DNNL

struct DnnlConvs::Impl {};

DnnlConvs::DnnlConvs() : impl(std::make_unique<Impl>()) {}
DnnlConvs::~DnnlConvs() = default;
Status DnnlConvs::prepare(const LoadedModule &, const std::function<const uint8_t *(int32_t)> &,
                          const std::vector<uint8_t> &) {
  return okStatus();
}
bool DnnlConvs::addsAddend(size_t) const { return false; }
bool DnnlConvs::writesDstLast(size_t) const { return false; }
uint8_t DnnlConvs::srcLayout(size_t) const { return 0; }
uint8_t DnnlConvs::dstLayout(size_t) const { return 0; }
void DnnlConvs::keepLayouts(size_t, bool, bool) {}
bool DnnlConvs::handles(size_t) const { return false; }
std::string DnnlConvs::reason(size_t) const { return "this runtime was built without oneDNN"; }
std::string DnnlConvs::implementation(size_t) const { return ""; }
bool DnnlConvs::winograd(size_t) const { return false; }
bool DnnlConvs::appliesRelu(size_t) const { return false; }
Status DnnlConvs::run(size_t, const void *, const void *, float *, const float *, ThreadPool *,
                      bool) {
  return Status(MIXPREC_INTERNAL, "oneDNN: not built in");
}
int64_t DnnlConvs::packsAtLoad() const { return 0; }
uint64_t DnnlConvs::workspaceBytes() const { return 0; }

#endif // MIXPREC_HAVE_DNNL

} // namespace mixprec::runtime
