//===- ShimModelsCheck.cpp - every emitted kernel on the shim vs the CPU backend -===//
//
// cuda_shim_models_check FILE.mlir...: for every mpk.kernel of each planned
// mpk file (mixprec compile --emit mpk-mlir), emits its CUDA C++, runs it on
// the CUDA shim (the kernels of a file compiled as one program by the host
// compiler), and runs the same kernel on the CPU backend, on the same
// deterministic random inputs; then compares every output element.
//
// The CPU side is a single-kernel module per kernel: a function whose
// arguments are the kernel's inputs and whose results are its results,
// planned (--mp-plan-memory), written by the module writer and run by
// libmixprec_runtime on the CPU backend through the C API. So each kernel
// gets inputs chosen for it (special values included) rather than whatever
// the model's earlier steps happen to produce, and the CPU side is the very
// code path a module takes.
//
// Inputs, per element type: float tensors hold N(0,1) values with, at fixed
// rates, zeros of both signs, +-0.5, tiny and subnormal values, large values
// that saturate FP8 (+-500, +-1000, +-60000) and inf/-inf/NaN (not in
// kernels with integer results, whose stores reject them); single-element
// float inputs (scales) are positive, log-uniform in [2^-4, 2^9]; integer
// inputs are in [-4, 4], bools 0 or 1. The seed is the file's and the
// kernel's name, so a run repeats.
//
// What must agree, per result, from the body ops the result depends on
// (Bound): a NaN meets any NaN (CUDA's conversions give the canonical NaN,
// the rounding library keeps sign and payload); otherwise
//  * bit for bit where those are only loads, casts, quantizes, + - * /,
//    sqrt, rsqrt and reciprocal (1/sqrtf and 1/x on both sides, IEEE
//    rounded), neg, relu, select, max/min, amax and row max;
//  * within CUDA's documented ULP bound of the worst transcendental among
//    them (expf 2, logf 1, tanhf 2, erff 2, powf 4, sinf and cosf 2; sigmoid,
//    the GELUs, elu, selu, softplus and mish are formulas around expf, erff,
//    expm1f, log1pf and tanhf), counted in ULPs of the result's
//    dtype. The shim calls the C library, which is within those bounds of
//    the true value too, and the CPU backend calls the same C library, so
//    most of these agree bit for bit (the report says how many);
//  * after a row sum (the shim sums in a tree, the CPU backend in order):
//    within 1 ULP of the result's dtype plus n 2^-24 (n the row length,
//    recursive FP32 summation's bound) of the row's terms (SumScales); an
//    element may also be off by a rounding flip of the coarsest dtype the
//    value passes through after the sum (two of its steps of the row's
//    largest output), but at most 1 in 64 elements of a result may.
// Every kernel also runs on the shim with each block's threads in reverse
// order and must give the same bits (a race shows). Fails (exit 1) naming
// the kernel, result, element and both values; prints per file how many
// kernels ran and how many were bit-exact; fails when a file has a kernel
// that did not run, or no kernel at all. With --perturb, element 0 of every
// shim result is changed, and the check passes only if it finds every
// result wrong.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaEmitter.h"
#include "tests/cuda_shim/ShimHarness.h"
#include "codegen/KernelBody.h"
#include "codegen/ModuleWriter.h"
#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "passes/Passes.h"

#include "mixprec/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
namespace nx = mixprec::numerics;
namespace shim = mixprec::cudashim;

namespace {

/// --perturb: change element 0 of every shim result, and pass only when
/// every result is then found wrong (the test that shows the comparison
/// sees each kernel's results).
bool perturbShim = false;

/// An element type as the runtime and the comparison see it.
struct ElementType {
  mixprec_dtype_t dtype;
  size_t bytes;
  bool isFloat;
  nx::Format format; ///< floats only
};

std::optional<ElementType> elementType(Type t) {
  if (t.isF32())
    return ElementType{MIXPREC_DTYPE_F32, 4, true, nx::Format::F32};
  if (t.isF16())
    return ElementType{MIXPREC_DTYPE_F16, 2, true, nx::Format::F16};
  if (t.isBF16())
    return ElementType{MIXPREC_DTYPE_BF16, 2, true, nx::Format::BF16};
  if (isa<Float8E4M3FNType>(t))
    return ElementType{MIXPREC_DTYPE_F8E4M3FN, 1, true, nx::Format::F8E4M3FN};
  if (isa<Float8E5M2Type>(t))
    return ElementType{MIXPREC_DTYPE_F8E5M2, 1, true, nx::Format::F8E5M2};
  if (t.isInteger(64))
    return ElementType{MIXPREC_DTYPE_I64, 8, false, nx::Format::F32};
  if (t.isInteger(32))
    return ElementType{MIXPREC_DTYPE_I32, 4, false, nx::Format::F32};
  if (t.isInteger(1))
    return ElementType{MIXPREC_DTYPE_BOOL, 1, false, nx::Format::F32};
  return std::nullopt;
}

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// One tensor's bytes, with the type that reads them.
struct HostTensor {
  ElementType type;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;
  size_t count() const { return bytes.size() / type.bytes; }
};

/// FNV-1a of a string: the seed of a kernel's inputs.
uint64_t fnv1a(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

/// A float input value: mostly N(0,1), with the special values at fixed rates.
float randomFloat(std::mt19937_64 &rng, bool allowNonFinite) {
  static const float kFinite[] = {0.0f, -0.0f, 0.5f,   -0.5f,   1e-3f,   -3e-6f,
                                  1e-30f, -1e-40f, 500.0f, -500.0f, 1000.0f, -1000.0f,
                                  60000.0f, -60000.0f};
  static const float kNonFinite[] = {INFINITY, -INFINITY, NAN};
  const uint64_t pick = rng() % 256;
  if (allowNonFinite && pick < 3)
    return kNonFinite[pick];
  if (pick < 3 + 2 * std::size(kFinite) && pick >= 3)
    return kFinite[(pick - 3) / 2];
  std::normal_distribution<float> normal(0.0f, 1.0f);
  return normal(rng);
}

/// Deterministic random contents for a kernel input of type `type`.
HostTensor randomInput(RankedTensorType type, std::mt19937_64 &rng, bool allowNonFinite) {
  HostTensor t{*elementType(type.getElementType()),
               {type.getShape().begin(), type.getShape().end()},
               {}};
  const size_t n = static_cast<size_t>(type.getNumElements());
  t.bytes.resize(n * t.type.bytes);
  for (size_t i = 0; i < n; ++i) {
    unsigned char *at = t.bytes.data() + i * t.type.bytes;
    if (t.type.isFloat) {
      float x;
      if (n == 1) {
        // A lone value is a scale: positive and moderate.
        x = std::exp2(std::uniform_real_distribution<float>(-4.0f, 9.0f)(rng));
      } else {
        x = randomFloat(rng, allowNonFinite);
      }
      // Finite values saturate into FP8 (as a quantizing producer would);
      // inf and NaN keep their own encoding (NaN in E4M3FN).
      nx::RoundOptions options;
      options.saturate = std::isfinite(x);
      const uint32_t bits = nx::encode(t.type.format, x, options);
      std::memcpy(at, &bits, t.type.bytes); // little-endian: the low bytes
    } else if (t.type.dtype == MIXPREC_DTYPE_BOOL) {
      *at = static_cast<unsigned char>(rng() % 2);
    } else {
      const int64_t v = static_cast<int64_t>(rng() % 9) - 4;
      if (t.type.dtype == MIXPREC_DTYPE_I64)
        std::memcpy(at, &v, 8);
      else {
        const int32_t v32 = static_cast<int32_t>(v);
        std::memcpy(at, &v32, 4);
      }
    }
  }
  return t;
}

/// Element `i` of a float tensor, decoded exactly.
float floatAt(const HostTensor &t, const unsigned char *bytes, size_t i) {
  uint32_t bits = 0;
  std::memcpy(&bits, bytes + i * t.type.bytes, t.type.bytes);
  return nx::decode(t.type.format, bits);
}

/// The bit pattern of element `i`.
uint64_t bitsAt(const HostTensor &t, const unsigned char *bytes, size_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, bytes + i * t.type.bytes, t.type.bytes);
  return bits;
}

/// Representable values of `format` between a and b (finite, same format).
double ulpDistance(nx::Format format, uint32_t a, uint32_t b) {
  const int width = static_cast<int>(nx::formatBytes(format) * 8);
  auto ordered = [width](uint32_t bits) {
    const uint32_t sign = 1u << (width - 1);
    const int64_t magnitude = bits & (sign - 1);
    return (bits & sign) != 0 ? -magnitude : magnitude;
  };
  return std::fabs(static_cast<double>(ordered(a) - ordered(b)));
}

/// The explicit mantissa bits of `format` (its subnormals are that many
/// binades below its smallest normal).
int mantissaBits(nx::Format format) {
  return std::ilogb(nx::formatMinNormal(format)) - std::ilogb(nx::formatMinSubnormal(format));
}

/// The spacing of `format` at magnitude |x| (its ULP there).
double ulpAt(nx::Format format, double x) {
  const double mag = std::max(std::fabs(x), nx::formatMinNormal(format));
  return std::ldexp(1.0, std::ilogb(mag) - mantissaBits(format));
}

/// How a kernel's outputs must agree with the CPU backend's.
struct Bound {
  enum Kind { Exact, Ulp, Sum } kind = Exact;
  double ulps = 0;   ///< Ulp: ULPs of the output dtype
  /// Sum: shares of the row's scales (SumScales): the reordered FP32 sum's
  /// error (of the terms' scale), and one rounding flip of the coarsest
  /// dtype on the way (of the outputs' scale).
  double rowRel = 0, flipRel = 0;
  std::string why;   ///< the functions that set it
};

/// CUDA's documented maximum ULP error of the expression the emitter prints
/// for `fn`, or 0 for a correctly rounded one: the cudaUlp column of
/// runtime/format/ScalarFns.def.
double cudaUlpBound(mixprec::graph::ScalarFn fn) {
  switch (fn) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, ...)                     \
  case mixprec::graph::ScalarFn::Name:                                                             \
    return cudaUlp;
#include "runtime/format/ScalarFns.def"
  }
  return 0;
}

/// The ops of `op`'s body that result `result` depends on, in body order.
std::vector<Operation *> sliceOf(mixprec::kernel::KernelOp op, int result) {
  Block &body = op.getBody().front();
  auto yield = cast<mixprec::kernel::YieldOp>(body.getTerminator());
  llvm::SmallPtrSet<Operation *, 16> seen;
  std::vector<Value> work = {yield.getValues()[result]};
  while (!work.empty()) {
    Operation *def = work.back().getDefiningOp();
    work.pop_back();
    if (def && def->getBlock() == &body && seen.insert(def).second)
      work.insert(work.end(), def->operand_begin(), def->operand_end());
  }
  std::vector<Operation *> slice;
  for (Operation &inner : body.without_terminator())
    if (seen.contains(&inner))
      slice.push_back(&inner);
  return slice;
}

/// How result `result` of `op` must agree, from the ops it depends on: a
/// row sum makes it a Sum, else a transcendental function a Ulp, else
/// Exact.
Bound boundOf(mixprec::kernel::KernelOp op, int result) {
  Bound bound;
  int64_t rowLength = 1;
  auto shape = op.getShape();
  for (size_t d = shape.size() - op.getRowDims(); d < shape.size(); ++d)
    rowLength *= shape[d];
  Value yielded = cast<mixprec::kernel::YieldOp>(op.getBody().front().getTerminator())
                      .getValues()[result];
  // The coarsest dtype a value before the result's own rounding is rounded
  // to: after a reordered sum, each such rounding can move by one step.
  int coarsest = 23;
  for (Operation *inner : sliceOf(op, result)) {
    std::optional<ElementType> type = elementType(tensorType(inner->getResult(0)).getElementType());
    if (inner->getResult(0) != yielded && type && type->isFloat)
      coarsest = std::min(coarsest, mantissaBits(type->format));
    if (auto reduce = dyn_cast<mixprec::kernel::RowReduceOp>(inner)) {
      if (reduce.getKind() == mixprec::kernel::RowReduceKind::sum)
        bound.kind = Bound::Sum;
    } else if (auto e = dyn_cast<mixprec::graph::ElementwiseOpInterface>(inner)) {
      if (double u = cudaUlpBound(e.getScalarFn()); u > 0) {
        bound.ulps = std::max(bound.ulps, u);
        bound.why += (bound.why.empty() ? "" : ", ") +
                     mixprec::graph::stringifyScalarFn(e.getScalarFn()).str();
        if (bound.kind == Bound::Exact)
          bound.kind = Bound::Ulp;
      }
    }
  }
  if (bound.kind == Bound::Sum) {
    // Recursive FP32 summation's bound, n u (u = 2^-24) over the row; a
    // value rounded to a coarser dtype after the sum flips to its neighbour
    // when the reordered sum straddles a rounding boundary: two steps of
    // that dtype.
    bound.rowRel = static_cast<double>(rowLength) * std::ldexp(1.0, -24);
    if (coarsest < 23)
      bound.flipRel = std::ldexp(1.0, 1 - coarsest);
    bound.why = "row sum" + (bound.why.empty() ? "" : " with " + bound.why);
  }
  return bound;
}

/// The same kernel as a module of its own: arguments in0.. (the kernel's
/// distinct inputs), results out0.., planned and written as mixprec writes
/// a model's module.
bool singleKernelModule(mixprec::kernel::KernelOp op, std::vector<Value> &distinctInputs,
                        mixprec::codegen::ModuleImage &image, std::string &error) {
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  distinctInputs.clear();
  for (Value v : op.getInputs())
    if (llvm::find(distinctInputs, v) == distinctInputs.end())
      distinctInputs.push_back(v);
  SmallVector<Type> argTypes;
  for (Value v : distinctInputs)
    argTypes.push_back(v.getType());
  OpBuilder builder(context);
  auto func = func::FuncOp::create(loc, "main",
                                   builder.getFunctionType(argTypes, op->getResultTypes()));
  module->push_back(func);
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(distinctInputs)) {
    mapping.map(v, entry->getArgument(i));
    func.setArgAttr(i, mixprec::graph::GraphDialect::kNameAttr,
                    builder.getStringAttr("in" + std::to_string(i)));
  }
  builder.setInsertionPointToEnd(entry);
  Operation *clone = builder.clone(*op.getOperation(), mapping);
  clone->removeAttr(mixprec::kernel::KernelDialect::kOffsetsAttr);
  builder.create<func::ReturnOp>(loc, clone->getResults());
  for (unsigned i = 0; i < clone->getNumResults(); ++i)
    func.setResultAttr(i, mixprec::graph::GraphDialect::kNameAttr,
                       builder.getStringAttr("out" + std::to_string(i)));
  PassManager pm(context);
  pm.addNestedPass<func::FuncOp>(mixprec::passes::createPlanMemoryPass());
  if (failed(pm.run(*module))) {
    error = "cannot plan the single-kernel module";
    return false;
  }
  mixprec::codegen::ModuleStats stats;
  // The writer reports at the op; the check prints the message.
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
    if (error.empty())
      error = diag.str();
    return success();
  });
  FailureOr<mixprec::codegen::ModuleImage> built =
      mixprec::codegen::buildModule(func, {}, "kernel.mpk.weights", {}, stats);
  if (failed(built))
    return false;
  image = std::move(*built);
  return true;
}

/// A status as a string, freed.
std::string takeStatus(mixprec_status_t status) {
  std::string s = mixprec_status_message(status);
  mixprec_status_free(status);
  return s;
}

/// Runs the module on the CPU backend; fills `outputs` (their dims and
/// types already set) with the results' bytes.
bool runOnCpu(const mixprec::codegen::ModuleImage &image, const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> &outputs, std::string &error) {
  mixprec_module_t module = nullptr;
  if (mixprec_status_t s =
          mixprec_module_load_memory(image.module.data(), image.module.size(), nullptr, &module)) {
    error = "CPU backend: " + takeStatus(s);
    return false;
  }
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = MIXPREC_BACKEND_CPU;
  mixprec_session_t session = nullptr;
  mixprec_status_t s = mixprec_session_create(module, &options, &session);
  mixprec_module_release(module);
  for (size_t i = 0; !s && i < inputs.size(); ++i)
    s = mixprec_session_bind_input(session, i, inputs[i].type.dtype, inputs[i].dims.size(),
                                   inputs[i].dims.data(), inputs[i].bytes.data(),
                                   inputs[i].bytes.size());
  if (!s)
    s = mixprec_session_run(session);
  for (size_t i = 0; !s && i < outputs.size(); ++i)
    s = mixprec_session_copy_output(session, i, outputs[i].type.dtype, outputs[i].bytes.data(),
                                    outputs[i].bytes.size());
  mixprec_session_release(session);
  if (s) {
    error = "CPU backend: " + takeStatus(s);
    return false;
  }
  return true;
}

/// Runs the kernel on the shim once; `outputs` hold the results.
bool runOnShim(const shim::Program &program, const mixprec::codegen::CudaKernel &kernel,
               mixprec::kernel::KernelOp op, const std::vector<Value> &distinctInputs,
               const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs,
               bool reverse, std::string &error) {
  std::vector<shim::AlignedBuffer> inBuffers, outBuffers;
  shim::KernelArgs args;
  for (const HostTensor &t : inputs) {
    inBuffers.push_back(shim::alignedBuffer(std::max<size_t>(t.bytes.size(), 1)));
    std::memcpy(inBuffers.back().get(), t.bytes.data(), t.bytes.size());
  }
  for (Value v : op.getInputs())
    args.add<const void *>(inBuffers[llvm::find(distinctInputs, v) - distinctInputs.begin()].get());
  for (size_t r = 0; r < outputs.size(); ++r) {
    outBuffers.push_back(shim::alignedBuffer(std::max<size_t>(outputs[r].bytes.size(), 1)));
    // Zeroed where the launch says so (amax accumulators); elsewhere a
    // pattern, so an element the kernel never writes shows.
    const bool zeroed = llvm::is_contained(kernel.launch.zeroedResults, static_cast<int>(r));
    std::memset(outBuffers.back().get(), zeroed ? 0 : 0xa5, outputs[r].bytes.size());
    args.add<void *>(outBuffers.back().get());
  }
  if (kernel.launch.gridSize > 0) {
    shim::LaunchOptions options;
    options.reverseThreadOrder = reverse;
    if (!program.launch(kernel.name,
                        {static_cast<unsigned>(kernel.launch.gridSize)},
                        {static_cast<unsigned>(kernel.launch.blockSize)}, 0, args, error,
                        options))
      return false;
  }
  for (size_t r = 0; r < outputs.size(); ++r)
    std::memcpy(outputs[r].bytes.data(), outBuffers[r].get(), outputs[r].bytes.size());
  return true;
}

/// A float value for messages: the value and its bits.
std::string show(const HostTensor &t, const unsigned char *bytes, size_t i) {
  char buf[96];
  if (t.type.isFloat)
    std::snprintf(buf, sizeof buf, "%.9g (0x%llx)", floatAt(t, bytes, i),
                  static_cast<unsigned long long>(bitsAt(t, bytes, i)));
  else
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bitsAt(t, bytes, i)));
  return buf;
}

/// The scales of a row sum's error at each element of a result, over the
/// rows (points of the outer dims) the element belongs to.
struct SumScales {
  /// The larger of the row's largest finite output magnitude and the sum
  /// over the kernel's inputs of each one's largest finite magnitude in the
  /// row: the summed terms come from those, so reordering moves a sum by at
  /// most n u times that.
  std::vector<double> terms;
  /// The row's largest finite output magnitude: a rounding flip after the
  /// sum moves the row's outputs by a step of the dtype at that size.
  std::vector<double> output;
};

SumScales sumScales(mixprec::kernel::KernelOp op, const std::vector<Value> &distinct,
                    const std::vector<HostTensor> &inputs, const HostTensor &want, int result) {
  const std::vector<int64_t> space(op.getShape().begin(), op.getShape().end());
  const size_t firstRowDim = space.size() - op.getRowDims();
  int64_t rows = 1, rowLength = 1;
  for (size_t d = 0; d < space.size(); ++d)
    (d < firstRowDim ? rows : rowLength) *= space[d];
  // Each operand's strides over the space: the inputs, then the result.
  std::vector<std::vector<int64_t>> strides;
  std::vector<const HostTensor *> tensors;
  for (Value v : op.getInputs()) {
    strides.push_back(mixprec::codegen::broadcastStrides(tensorType(v).getShape(), space));
    tensors.push_back(&inputs[llvm::find(distinct, v) - distinct.begin()]);
  }
  // A result is stored with the strides of the value yielded (3x2x1 for a
  // 3x2 result), as the emitter and the module writer store it.
  auto yield = cast<mixprec::kernel::YieldOp>(op.getBody().front().getTerminator());
  strides.push_back(mixprec::codegen::broadcastStrides(
      tensorType(yield.getValues()[result]).getShape(), space));
  tensors.push_back(&want);
  std::vector<double> rowTerms(rows, 0.0), rowOutput(rows, 0.0), rowMax(tensors.size());
  std::vector<int64_t> coords(space.size());
  auto offset = [&](size_t t) {
    int64_t o = 0;
    for (size_t d = 0; d < space.size(); ++d)
      o += coords[d] * strides[t][d];
    return o;
  };
  auto setCoords = [&](int64_t point) {
    for (size_t d = space.size(); d-- > 0;) {
      coords[d] = point % space[d];
      point /= space[d];
    }
  };
  for (int64_t row = 0; row < rows; ++row) {
    std::fill(rowMax.begin(), rowMax.end(), 0.0);
    for (int64_t j = 0; j < rowLength; ++j) {
      setCoords(row * rowLength + j);
      for (size_t t = 0; t < tensors.size(); ++t) {
        if (!tensors[t]->type.isFloat)
          continue;
        const double x = std::fabs(floatAt(*tensors[t], tensors[t]->bytes.data(), offset(t)));
        if (std::isfinite(x))
          rowMax[t] = std::max(rowMax[t], x);
      }
    }
    double inputs = 0;
    for (size_t t = 0; t + 1 < tensors.size(); ++t)
      inputs += rowMax[t];
    rowTerms[row] = std::max(inputs, rowMax.back());
    rowOutput[row] = rowMax.back();
  }
  SumScales scales{std::vector<double>(want.count(), 0.0),
                   std::vector<double>(want.count(), 0.0)};
  for (int64_t point = 0; point < rows * rowLength; ++point) {
    setCoords(point);
    const int64_t at = offset(tensors.size() - 1);
    scales.terms[at] = std::max(scales.terms[at], rowTerms[point / rowLength]);
    scales.output[at] = std::max(scales.output[at], rowOutput[point / rowLength]);
  }
  return scales;
}

/// Compares the shim's result `got` with the CPU backend's `want` under
/// `bound`; prints the first few mismatches. Returns how many elements
/// differ beyond the bound; `bitExact` says whether every bit agreed and
/// `worst` is raised to the largest share of its bound an error used.
size_t compareOutput(const std::string &where, const HostTensor &want, const HostTensor &got,
                     const Bound &bound, const SumScales &scale, bool &bitExact,
                     double &worst) {
  size_t bad = 0, flips = 0;
  const size_t n = want.count();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t wb = bitsAt(want, want.bytes.data(), i), gb = bitsAt(got, got.bytes.data(), i);
    if (wb == gb)
      continue;
    // A NaN meets any NaN: CUDA's conversions give the canonical NaN
    // (0x7fff, 0x7fffffff), the rounding library keeps the sign and the
    // quiet payload (0x7e00, 0xffc0).
    if (want.type.isFloat && std::isnan(floatAt(want, want.bytes.data(), i)) &&
        std::isnan(floatAt(got, got.bytes.data(), i)))
      continue;
    bitExact = false;
    bool ok = false;
    if (want.type.isFloat && bound.kind != Bound::Exact) {
      const float w = floatAt(want, want.bytes.data(), i), g = floatAt(got, got.bytes.data(), i);
      if (std::isnan(w) || std::isnan(g) || std::isinf(w) || std::isinf(g)) {
        ok = false; // non-finite values must be the same
      } else if (bound.kind == Bound::Ulp) {
        const double ulps =
            ulpDistance(want.type.format, static_cast<uint32_t>(wb), static_cast<uint32_t>(gb));
        ok = ulps <= bound.ulps;
        worst = std::max(worst, ulps / bound.ulps);
      } else {
        const double error = std::fabs(static_cast<double>(w) - g);
        const double limit = ulpAt(want.type.format, std::max(std::fabs(w), std::fabs(g))) +
                             bound.rowRel * scale.terms[i];
        ok = error <= limit;
        if (!ok && error <= limit + bound.flipRel * scale.output[i]) {
          ok = true;
          ++flips;
        } else {
          worst = std::max(worst, error / limit);
        }
      }
    }
    if (!ok && bad++ < 5 && !perturbShim)
      std::fprintf(stderr, "%s element %zu: shim %s, CPU backend %s\n", where.c_str(), i,
                   show(got, got.bytes.data(), i).c_str(),
                   show(want, want.bytes.data(), i).c_str());
  }
  // A flip needs a sum within a few FP32 ULPs of a rounding boundary of the
  // coarse dtype, so it is rare (about 2^-8 of the values for bf16); a
  // missing or extra rounding point moves most of them.
  if (flips > std::max<size_t>(1, n / 64)) {
    std::fprintf(stderr, "%s: %zu of %zu elements differ by a rounding flip after the row sum "
                 "(at most 1 in 64 may)\n", where.c_str(), flips, n);
    bad += flips;
  }
  return bad;
}

/// What one file's check found.
struct FileResult {
  int kernels = 0, ran = 0, bitExact = 0, problems = 0;
  /// Per Bound::Kind: outputs compared, and those whose every bit agreed.
  int outputsOf[3] = {0, 0, 0}, bitExactOf[3] = {0, 0, 0};
  /// Per Bound::Kind: the largest share of its bound an error used.
  double worstOf[3] = {0, 0, 0};
};

/// Checks every kernel of `func`, emitted as `emitted`, against the CPU
/// backend.
void checkFunction(const std::string &file, func::FuncOp func,
                   const std::vector<mixprec::codegen::CudaKernel> &emitted,
                   const shim::Program &program, FileResult &result) {
  std::vector<mixprec::kernel::KernelOp> ops;
  for (Operation &op : func.getBody().front())
    if (auto k = dyn_cast<mixprec::kernel::KernelOp>(op))
      ops.push_back(k);
  result.kernels += static_cast<int>(ops.size());
  if (ops.size() != emitted.size()) {
    std::fprintf(stderr, "%s: %zu mpk.kernel ops but %zu emitted kernels\n", file.c_str(),
                 ops.size(), emitted.size());
    ++result.problems;
    return;
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    mixprec::kernel::KernelOp op = ops[k];
    const mixprec::codegen::CudaKernel &kernel = emitted[k];
    const std::string where = file + ": " + kernel.name;
    std::vector<Value> distinct;
    mixprec::codegen::ModuleImage image;
    std::string error;
    if (!singleKernelModule(op, distinct, image, error)) {
      std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
      ++result.problems;
      continue;
    }
    // Integer stores reject inf, NaN and out-of-range values.
    bool integerResult = false;
    for (Value r : op.getResults())
      integerResult |= !elementType(tensorType(r).getElementType())->isFloat;
    std::mt19937_64 rng(fnv1a(llvm::sys::path::filename(file).str() + "/" + kernel.name));
    std::vector<HostTensor> inputs;
    for (Value v : distinct)
      inputs.push_back(randomInput(tensorType(v), rng, !integerResult));
    std::vector<HostTensor> cpu, onShim, reversed;
    for (Value r : op.getResults()) {
      RankedTensorType type = tensorType(r);
      HostTensor t{*elementType(type.getElementType()),
                   {type.getShape().begin(), type.getShape().end()},
                   std::vector<unsigned char>(type.getNumElements() *
                                              elementType(type.getElementType())->bytes)};
      cpu.push_back(t);
      onShim.push_back(t);
      reversed.push_back(t);
    }
    if (!runOnCpu(image, inputs, cpu, error) ||
        !runOnShim(program, kernel, op, distinct, inputs, onShim, false, error) ||
        !runOnShim(program, kernel, op, distinct, inputs, reversed, true, error)) {
      std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
      ++result.problems;
      continue;
    }
    ++result.ran;
    if (perturbShim)
      for (std::vector<HostTensor> *results : {&onShim, &reversed})
        for (HostTensor &t : *results)
          if (!t.bytes.empty()) {
            // Far beyond every bound: x + 2 for |x| < 1 (a NaN counts as
            // 0), else -x; the low bit of an integer or bool.
            if (t.type.isFloat) {
              float x = floatAt(t, t.bytes.data(), 0);
              x = std::isnan(x) ? 2.0f : std::fabs(x) < 1.0f ? x + 2.0f : -x;
              const uint32_t bits = nx::encode(t.type.format, x);
              std::memcpy(t.bytes.data(), &bits, t.type.bytes);
            } else {
              t.bytes[0] ^= 1;
            }
          }
    bool kernelExact = true;
    for (size_t r = 0; r < cpu.size(); ++r) {
      const std::string out = where + " out" + std::to_string(r);
      const Bound bound = boundOf(op, static_cast<int>(r));
      size_t bad = 0;
      if (onShim[r].bytes != reversed[r].bytes) {
        std::fprintf(stderr, "%s: threads in reverse order give other bits (a race)\n",
                     out.c_str());
        ++bad;
      }
      SumScales scale;
      if (bound.kind == Bound::Sum && cpu[r].type.isFloat)
        scale = sumScales(op, distinct, inputs, cpu[r], static_cast<int>(r));
      bool exact = true;
      bad += compareOutput(out, cpu[r], onShim[r], bound, scale, exact,
                           result.worstOf[bound.kind]);
      if (perturbShim) {
        if (bad == 0) {
          std::fprintf(stderr, "%s: a changed element went unnoticed\n", out.c_str());
          ++result.problems;
        }
      } else if (bad) {
        std::fprintf(stderr, "%s: %zu elements beyond the bound (%s)\n", out.c_str(), bad,
                     bound.kind == Bound::Exact ? "bit-exact"
                     : bound.kind == Bound::Ulp
                         ? (std::to_string(static_cast<int>(bound.ulps)) + " ULPs for " +
                            bound.why)
                               .c_str()
                         : bound.why.c_str());
        ++result.problems;
      }
      result.outputsOf[bound.kind] += 1;
      result.bitExactOf[bound.kind] += exact ? 1 : 0;
      kernelExact &= exact;
    }
    result.bitExact += kernelExact ? 1 : 0;
  }
}

} // namespace

int main(int argc, char **argv) {
  int first = 1;
  if (argc > 1 && std::string(argv[1]) == "--perturb") {
    perturbShim = true;
    first = 2;
  }
  if (argc <= first) {
    std::fprintf(stderr, "usage: cuda_shim_models_check [--perturb] FILE.mlir...\n");
    return 2;
  }
  mlir::MLIRContext context;
  context.getOrLoadDialect<mixprec::graph::GraphDialect>();
  context.getOrLoadDialect<mixprec::kernel::KernelDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  int problems = 0, kernels = 0, ran = 0;
  for (int i = first; i < argc; ++i) {
    const std::string file = argv[i];
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(file, &context);
    if (!module) {
      std::fprintf(stderr, "%s: cannot parse\n", file.c_str());
      ++problems;
      continue;
    }
    FileResult result;
    for (auto func : module->getOps<func::FuncOp>()) {
      // The emitter's error goes to stderr at its op (the context's
      // default handler).
      FailureOr<std::vector<mixprec::codegen::CudaKernel>> emittedOrError =
          mixprec::codegen::emitCudaKernels(func);
      if (failed(emittedOrError)) {
        std::fprintf(stderr, "%s: cannot emit CUDA code (the error above)\n", file.c_str());
        ++result.problems;
        continue;
      }
      std::vector<mixprec::codegen::CudaKernel> emitted = std::move(*emittedOrError);
      std::string error;
      // All of a function's kernels in one program: one host compile.
      std::string source = mixprec::codegen::cudaPrelude();
      for (const auto &kernel : emitted)
        source += "\n" + kernel.source;
      std::string log;
      shim::CompileOptions options;
      options.log = &log;
      std::unique_ptr<shim::Program> program = shim::Program::compileSource(
          llvm::sys::path::filename(file).str() + ".cu", source, options, error);
      if (!program) {
        std::fprintf(stderr, "%s: %s\n%s\n", file.c_str(), error.c_str(), log.c_str());
        ++result.problems;
        continue;
      }
      checkFunction(file, func, emitted, *program, result);
    }
    if (result.kernels == 0) {
      std::fprintf(stderr, "%s: no mpk.kernel to check\n", file.c_str());
      ++result.problems;
    }
    if (result.ran != result.kernels) {
      std::fprintf(stderr, "%s: %d of %d kernels ran\n", file.c_str(), result.ran,
                   result.kernels);
      ++result.problems;
    }
    std::printf("%s: %d kernels, %d ran on the shim and the CPU backend, %d bit-exact; "
                "outputs bit-exact: %d of %d exact-only, %d of %d transcendental (worst "
                "error %.2f of its bound), %d of %d after a row sum (worst %.2f)\n",
                llvm::sys::path::filename(file).str().c_str(), result.kernels, result.ran,
                result.bitExact, result.bitExactOf[Bound::Exact], result.outputsOf[Bound::Exact],
                result.bitExactOf[Bound::Ulp], result.outputsOf[Bound::Ulp],
                result.worstOf[Bound::Ulp], result.bitExactOf[Bound::Sum],
                result.outputsOf[Bound::Sum], result.worstOf[Bound::Sum]);
    problems += result.problems;
    kernels += result.kernels;
    ran += result.ran;
  }
  std::printf("%d kernels from %d files, %d compared: %d problems\n", kernels, argc - first, ran,
              problems);
  return problems || kernels == 0 || ran != kernels ? 1 : 0;
}
