//===- ShimRoutinesCheck.cpp - routine kernels on the shim vs the CPU backend -===//
//
// cuda_shim_routines_check FILE.mlir...: for every mpk.call of each planned
// mpk file (mixprec compile --emit mpk-mlir) that has a CUDA form
// (CudaRoutines.h), runs its kernel on the CUDA shim (the routine kernels
// of a file compiled as one program with the prelude, by the host
// compiler) and the same routine on the CPU backend, on the same
// deterministic random inputs, and compares the output BIT FOR BIT.
//
// The CPU side is a module of its own per routine: a function whose
// arguments are the routine's inputs (an integer constant, a gather's
// indices, stays a constant, as the emitter requires) and whose result is
// its output, planned and written by the module writer, run through the C
// API. Inputs are random bytes (bools 0 or 1), so data movement is checked
// on every bit pattern, NaN payloads included (reduce_sum and reduce_mean,
// which add, must give NaN where the CPU does, with any payload); fp8_scale runs once per
// special amax (zeros, subnormals, the FLT_MAX edge, inf, NaN, ...) and on
// random ones. The shim's output buffer starts as a pattern, so an element
// the kernel never writes shows, and has guard bytes on both sides, so a
// write outside it shows too. Run-time indices (gather, gather_elements,
// scatter_nd) are drawn in range, negative half the time and mostly among
// a few values (scatter_nd's tuples repeat); then, in three more trials,
// some are out of range: the CPU backend must fail, and the kernel's error
// record must name the same routine, position and index, which the CUDA
// backend's wording (runtime/format/CudaErrorRecord.h) turns into the CPU's
// message word for word. Fails (exit 1) naming the routine, the element
// and both values; fails when a file's routine kernels did not all run,
// when no file had one, or, with --all-on-device, when a routine has no
// kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaRoutines.h"
#include "tests/cuda_shim/ShimHarness.h"
#include "codegen/ModuleWriter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "passes/Passes.h"

#include "mixprec/runtime.h"
#include "runtime/format/CudaErrorRecord.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Path.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
namespace shim = mixprec::cudashim;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The runtime's dtype of an element type.
mixprec_dtype_t dtypeOf(Type t) {
  if (t.isF16())
    return MIXPREC_DTYPE_F16;
  if (t.isBF16())
    return MIXPREC_DTYPE_BF16;
  if (isa<Float8E4M3FNType>(t))
    return MIXPREC_DTYPE_F8E4M3FN;
  if (isa<Float8E5M2Type>(t))
    return MIXPREC_DTYPE_F8E5M2;
  if (t.isInteger(64))
    return MIXPREC_DTYPE_I64;
  if (t.isInteger(32))
    return MIXPREC_DTYPE_I32;
  if (t.isInteger(1))
    return MIXPREC_DTYPE_BOOL;
  return MIXPREC_DTYPE_F32;
}

size_t bytesOf(RankedTensorType t) {
  const unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return static_cast<size_t>(t.getNumElements()) * std::max(1u, (bits + 7) / 8);
}

/// One tensor passed to both sides.
struct HostTensor {
  RankedTensorType type;
  std::vector<unsigned char> bytes;
};

/// Whether `v` is an integer constant (a gather's indices): it stays a
/// constant of the single-routine module. Other constants (weights) are
/// arguments with random contents.
bool isIntegerConstant(Value v) {
  DenseIntElementsAttr values;
  return matchPattern(v, m_Constant(&values));
}

/// The routine's distinct operands that are no integer constants: the
/// single-routine module's arguments.
std::vector<Value> argumentsOf(mixprec::kernel::CallOp op) {
  std::vector<Value> args;
  for (Value v : op.getInputs())
    if (!isIntegerConstant(v) && llvm::find(args, v) == args.end())
      args.push_back(v);
  return args;
}

/// The routine as a module of its own: arguments in0.. (argumentsOf),
/// integer constants cloned, result out0.
bool singleRoutineModule(mixprec::kernel::CallOp op, mixprec::codegen::ModuleImage &image,
                         std::string &error) {
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  SmallVector<Type> argTypes;
  for (Value v : argumentsOf(op))
    argTypes.push_back(v.getType());
  OpBuilder builder(context);
  auto func = func::FuncOp::create(loc, "main",
                                   builder.getFunctionType(argTypes, op->getResultTypes()));
  module->push_back(func);
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  IRMapping mapping;
  unsigned arg = 0;
  for (Value v : op.getInputs()) {
    if (mapping.contains(v))
      continue;
    if (isIntegerConstant(v)) {
      mapping.map(v, builder.clone(*v.getDefiningOp())->getResult(0));
      continue;
    }
    mapping.map(v, entry->getArgument(arg));
    func.setArgAttr(arg, mixprec::graph::GraphDialect::kNameAttr,
                    builder.getStringAttr("in" + std::to_string(arg)));
    ++arg;
  }
  Operation *clone = builder.clone(*op.getOperation(), mapping);
  clone->removeAttr(mixprec::kernel::KernelDialect::kOffsetsAttr);
  builder.create<func::ReturnOp>(loc, clone->getResults());
  func.setResultAttr(0, mixprec::graph::GraphDialect::kNameAttr, builder.getStringAttr("out0"));
  PassManager pm(context);
  pm.addNestedPass<func::FuncOp>(mixprec::passes::createPlanMemoryPass());
  if (failed(pm.run(*module))) {
    error = "cannot plan the single-routine module";
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
      mixprec::codegen::buildModule(func, {}, "routine.mpk.weights", {}, stats);
  if (failed(built))
    return false;
  image = std::move(*built);
  return true;
}

std::string takeStatus(mixprec_status_t status) {
  std::string s = mixprec_status_message(status);
  mixprec_status_free(status);
  return s;
}

/// Runs the module on the CPU backend with `inputs` (the non-constant
/// operands); fills `out`.
bool runOnCpu(const mixprec::codegen::ModuleImage &image, const std::vector<HostTensor> &inputs,
              HostTensor &out, std::string &error) {
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
  for (size_t i = 0; !s && i < inputs.size(); ++i) {
    ArrayRef<int64_t> dims = inputs[i].type.getShape();
    s = mixprec_session_bind_input(session, i, dtypeOf(inputs[i].type.getElementType()),
                                   dims.size(), dims.data(), inputs[i].bytes.data(),
                                   inputs[i].bytes.size());
  }
  if (!s)
    s = mixprec_session_run(session);
  if (!s)
    s = mixprec_session_copy_output(session, 0, dtypeOf(out.type.getElementType()),
                                    out.bytes.data(), out.bytes.size());
  mixprec_session_release(session);
  if (s) {
    error = "CPU backend: " + takeStatus(s);
    return false;
  }
  return true;
}

/// The bytes of constant `v` as stored (dense, little-endian).
std::vector<unsigned char> constantBytes(Value v) {
  DenseIntElementsAttr values;
  std::vector<unsigned char> bytes;
  if (!matchPattern(v, m_Constant(&values)))
    return bytes;
  const size_t width = typeOf(v).getElementType().getIntOrFloatBitWidth() / 8;
  for (const APInt &x : values) {
    const int64_t wide = x.getSExtValue();
    const unsigned char *p = reinterpret_cast<const unsigned char *>(&wide);
    bytes.insert(bytes.end(), p, p + width);
  }
  return bytes;
}

/// Guard bytes on each side of the shim's output buffer: a kernel that
/// writes outside its output changes them.
constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0x5c;

/// Runs the routine's kernel on the shim: `args` are its operands, in order;
/// `record` is the error record it reports into (cleared first), when it
/// takes one.
bool runOnShim(const shim::Program &program, const mixprec::codegen::CudaKernel &kernel,
               const std::vector<const HostTensor *> &args, HostTensor &out,
               mixprec::runtime::MpErrorRecord &record, std::string &error) {
  std::vector<shim::AlignedBuffer> buffers;
  shim::KernelArgs launchArgs;
  for (const HostTensor *t : args) {
    buffers.push_back(shim::alignedBuffer(std::max<size_t>(t->bytes.size(), 1)));
    std::memcpy(buffers.back().get(), t->bytes.data(), t->bytes.size());
    launchArgs.add<const void *>(buffers.back().get());
  }
  buffers.push_back(shim::alignedBuffer(out.bytes.size() + 2 * kGuard));
  unsigned char *output = buffers.back().get() + kGuard;
  std::memset(buffers.back().get(), kGuardByte, out.bytes.size() + 2 * kGuard);
  std::memset(output, 0xa5, out.bytes.size()); // unwritten elements show
  launchArgs.add<void *>(output);
  record = mixprec::runtime::MpErrorRecord{};
  if (kernel.launch.errorRecord)
    launchArgs.add<void *>(&record);
  if (kernel.launch.gridSize > 0 &&
      !program.launch(kernel.name, {static_cast<unsigned>(kernel.launch.gridSize)},
                      {static_cast<unsigned>(kernel.launch.blockSize)}, 0, launchArgs, error))
    return false;
  for (size_t i = 0; i < kGuard; ++i)
    if (buffers.back()[i] != kGuardByte || output[out.bytes.size() + i] != kGuardByte) {
      error = "the kernel wrote outside its output";
      return false;
    }
  std::memcpy(out.bytes.data(), output, out.bytes.size());
  return true;
}

/// Whether the element at byte `at` of `t` is a NaN of its float dtype.
bool isNanAt(const HostTensor &t, size_t at) {
  std::optional<mixprec::numerics::Format> format =
      mixprec::graph::storageFormatOf(t.type.getElementType());
  if (!format)
    return false;
  uint32_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + at, mixprec::numerics::formatBytes(*format));
  return std::isnan(mixprec::numerics::decode(*format, bits));
}

/// The first differing element of `want` and `got`, or -1. With
/// `anyNan`, two NaNs are equal whatever their sign and payload: which
/// operand's NaN an addition returns is not specified (IEEE 754 leaves it
/// open, compilers commute additions, GPUs return a canonical NaN), so an
/// arithmetic routine is compared on whether it gives NaN, not on its bits.
int64_t firstDifference(const HostTensor &want, const HostTensor &got, size_t elementBytes,
                        bool anyNan) {
  for (size_t i = 0; i < want.bytes.size(); i += elementBytes)
    if (std::memcmp(want.bytes.data() + i, got.bytes.data() + i, elementBytes) != 0 &&
        !(anyNan && isNanAt(want, i) && isNanAt(got, i)))
      return static_cast<int64_t>(i / elementBytes);
  return -1;
}

std::string hexBytes(const HostTensor &t, size_t element, size_t elementBytes) {
  std::string s = "0x";
  char buf[3];
  for (size_t b = elementBytes; b-- > 0;) {
    std::snprintf(buf, sizeof buf, "%02x", t.bytes[element * elementBytes + b]);
    s += buf;
  }
  return s;
}

/// amax values fp8_scale runs on besides random ones: every branch of
/// num::fp8Scale and the FLT_MAX clamp.
const float kSpecialAmax[] = {0.0f, -0.0f, -1.0f, 1.0f, 448.0f, 57344.0f, 1e-30f, 1e-45f,
                              1e-40f, 3e38f, INFINITY, -INFINITY, NAN, 0.1f, 1e6f};

/// The size of the data dim each element of `op`'s run-time indices
/// (input 1) addresses, cycling: a gather's axis, scatter_nd's tuple dims;
/// empty when the routine has none (or a gather's are a constant).
std::vector<int64_t> indexedSizes(mixprec::kernel::CallOp op) {
  using mixprec::kernel::Routine;
  const Routine kind = op.getOpType();
  if ((kind != Routine::Gather && kind != Routine::GatherElements && kind != Routine::ScatterNd) ||
      isIntegerConstant(op.getInputs()[1]))
    return {};
  ArrayRef<int64_t> data = typeOf(op.getInputs()[0]).getShape();
  if (kind == Routine::ScatterNd)
    return data.take_front(typeOf(op.getInputs()[1]).getShape().back()).vec();
  int64_t axis = cast<mixprec::kernel::AxisOptionsAttr>(op.getOptions()).getAxis();
  if (axis < 0)
    axis += static_cast<int64_t>(data.size());
  return {data[axis]};
}

/// Fills index tensor `t` (i32 or i64) for `sizes` (indexedSizes): in range
/// and negative half the time, mostly among the first three values of each
/// dim (so scatter_nd's tuples repeat); with `bad`, one to three elements
/// then out of range (past either end, or the dtype's extremes). Returns
/// the first element out of range, or -1.
int64_t fillIndices(HostTensor &t, const std::vector<int64_t> &sizes, bool bad,
                    std::mt19937_64 &rng) {
  const bool wide = t.type.getElementType().isInteger(64);
  const size_t width = wide ? 8 : 4;
  const int64_t count = static_cast<int64_t>(t.bytes.size() / width);
  std::vector<int64_t> values(count);
  for (int64_t p = 0; p < count; ++p) {
    const int64_t size = sizes[p % sizes.size()];
    if (size == 0)
      continue; // every index is out of range: 0 is as good as any
    int64_t v = rng() % 4 == 0 ? static_cast<int64_t>(rng() % (2 * size)) - size
                               : static_cast<int64_t>(rng() % std::min<int64_t>(size, 3));
    if (v >= 0 && rng() % 2)
      v -= size;
    values[p] = v;
  }
  for (int k = bad && count ? 1 + static_cast<int>(rng() % 3) : 0; k > 0; --k) {
    const int64_t p = static_cast<int64_t>(rng() % count);
    const int64_t size = sizes[p % sizes.size()];
    const int64_t far = static_cast<int64_t>(rng() % 1000);
    const int64_t choices[] = {size,
                               -size - 1,
                               size + far,
                               -size - 1 - far,
                               wide ? INT64_MAX : INT32_MAX,
                               wide ? INT64_MIN : INT32_MIN};
    values[p] = choices[rng() % std::size(choices)];
  }
  int64_t first = -1;
  for (int64_t p = 0; p < count; ++p) {
    const int64_t size = sizes[p % sizes.size()];
    if (first < 0 && (values[p] < -size || values[p] >= size))
      first = p;
    const int32_t narrow = static_cast<int32_t>(values[p]);
    std::memcpy(t.bytes.data() + p * width, wide ? static_cast<const void *>(&values[p]) : &narrow,
                width);
  }
  return first;
}

/// Whether the shim's error record says what the CPU backend's message
/// `cpu` says, for indices `indices` whose first element out of range is
/// `bad`: the routine's tag, that position and its index, worded by the
/// function the CUDA backend words it with.
bool sameError(mixprec::kernel::CallOp op, unsigned tag, const HostTensor &indices, int64_t bad,
               const mixprec::runtime::MpErrorRecord &record, const std::string &cpu,
               std::string &error) {
  const bool wide = indices.type.getElementType().isInteger(64);
  int64_t value = 0;
  if (wide) {
    std::memcpy(&value, indices.bytes.data() + bad * 8, 8);
  } else {
    int32_t narrow = 0;
    std::memcpy(&narrow, indices.bytes.data() + bad * 4, 4);
    value = narrow;
  }
  const int64_t position = static_cast<int64_t>(~record.position);
  if (record.tag != tag || record.position == 0 || position != bad ||
      static_cast<int64_t>(record.value) != value) {
    error = "the error record holds tag " + std::to_string(record.tag) + ", position " +
            std::to_string(position) + ", index " +
            std::to_string(static_cast<int64_t>(record.value)) + "; expected tag " +
            std::to_string(tag) + ", position " + std::to_string(bad) + ", index " +
            std::to_string(value) + " (the CPU backend: " + cpu + ")";
    return false;
  }
  using mixprec::kernel::Routine;
  const std::vector<int64_t> sizes = indexedSizes(op);
  int64_t dim = op.getOpType() == Routine::ScatterNd ? position % sizes.size() : 0;
  if (op.getOpType() != Routine::ScatterNd) {
    dim = cast<mixprec::kernel::AxisOptionsAttr>(op.getOptions()).getAxis();
    if (dim < 0)
      dim += typeOf(op.getInputs()[0]).getRank();
  }
  // The routine's name and the step are the CPU message's, up to the index.
  const size_t at = cpu.find(": index ");
  const std::string got = mixprec::runtime::indexOutOfRangeMessage(
      cpu.substr(0, at == std::string::npos ? 0 : at), value, op.getOpType() != Routine::Gather,
      position, dim, sizes[position % sizes.size()]);
  if (got != cpu) {
    error = "the CUDA backend would say '" + got + "', the CPU backend says '" + cpu + "'";
    return false;
  }
  return true;
}

/// Checks one routine: true when it ran and agreed on every input tried.
bool checkRoutine(const std::string &where, mixprec::kernel::CallOp op,
                  const mixprec::codegen::CudaKernel &kernel, const shim::Program &program,
                  unsigned tag, uint64_t seed) {
  mixprec::codegen::ModuleImage image;
  std::string error;
  if (!singleRoutineModule(op, image, error)) {
    std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
    return false;
  }
  const RankedTensorType outType = typeOf(op.getOutputs()[0]);
  const size_t elementBytes = std::max(1u, outType.getElementType().getIntOrFloatBitWidth() / 8);
  const bool fp8Scale = op.getOpType() == mixprec::kernel::Routine::Fp8Scale;
  // Sums and products, whose NaN payloads depend on operand order
  // (firstDifference).
  auto scatter = dyn_cast<mixprec::kernel::ScatterNdOptionsAttr>(op.getOptions());
  const mixprec::kernel::Routine kind = op.getOpType();
  const bool blockScaling = kind == mixprec::kernel::Routine::BlockScale ||
                            kind == mixprec::kernel::Routine::BlockQuantize ||
                            kind == mixprec::kernel::Routine::BlockScaledGemm;
  // (Block scaling's NaN: the CPU's quiet NaN against CUDA's canonical one.)
  const bool arithmetic = kind == mixprec::kernel::Routine::ReduceSum ||
                          kind == mixprec::kernel::Routine::ReduceMean || blockScaling ||
                          (scatter && (scatter.getReduction() == 1 || scatter.getReduction() == 2));
  // Run-time indices: two trials in range, then three with indices out of
  // range (where the kernel reports them).
  const std::vector<int64_t> sizes = indexedSizes(op);
  const size_t badTrials = kernel.launch.errorRecord && !sizes.empty() ? 3 : 0;
  std::mt19937_64 rng(seed);
  const size_t trials = (fp8Scale ? std::size(kSpecialAmax) + 16 : 2) + badTrials;
  for (size_t trial = 0; trial < trials; ++trial) {
    // The arguments' random bytes, then each operand's tensor.
    const std::vector<Value> arguments = argumentsOf(op);
    std::vector<HostTensor> bound, constants;
    for (Value v : arguments) {
      HostTensor t{typeOf(v), std::vector<unsigned char>(bytesOf(typeOf(v)))};
      const bool isBool = t.type.getElementType().isInteger(1);
      for (unsigned char &b : t.bytes)
        b = isBool ? rng() % 2 : rng() % 256;
      if (fp8Scale) {
        float amax = trial < std::size(kSpecialAmax)
                         ? kSpecialAmax[trial]
                         : std::exp2(std::uniform_real_distribution<float>(-130, 130)(rng));
        std::memcpy(t.bytes.data(), &amax, 4);
      }
      bound.push_back(std::move(t));
    }
    // Block scales as block_scale makes them: powers of two (one in 16
    // NaN, as a block with an inf or NaN gets), so the data is quantized
    // and the GEMM sums at ordinary magnitudes.
    auto scaleOperands = [&]() -> std::vector<size_t> {
      if (kind == mixprec::kernel::Routine::BlockQuantize)
        return {1};
      if (kind == mixprec::kernel::Routine::BlockScaledGemm)
        return {2, 3};
      return {};
    };
    for (size_t input : scaleOperands()) {
      HostTensor &t = bound[llvm::find(arguments, op.getInputs()[input]) - arguments.begin()];
      for (size_t i = 0; i + 4 <= t.bytes.size(); i += 4) {
        float s = rng() % 16 == 0 ? NAN : std::ldexp(1.0f, static_cast<int>(rng() % 41) - 20);
        std::memcpy(t.bytes.data() + i, &s, 4);
      }
    }
    // Only the indices decide where a run fails.
    int64_t bad = -1;
    const HostTensor *indices = nullptr;
    if (!sizes.empty()) {
      HostTensor &t = bound[llvm::find(arguments, op.getInputs()[1]) - arguments.begin()];
      bad = fillIndices(t, sizes, /*bad=*/trial >= 2, rng);
      indices = &t;
    }
    for (Value v : op.getInputs())
      if (isIntegerConstant(v))
        constants.push_back(HostTensor{typeOf(v), constantBytes(v)});
    std::vector<const HostTensor *> args;
    size_t nextConstant = 0;
    for (Value v : op.getInputs()) {
      auto at = llvm::find(arguments, v);
      args.push_back(at != arguments.end() ? &bound[at - arguments.begin()]
                                           : &constants[nextConstant++]);
    }
    HostTensor want{outType, std::vector<unsigned char>(bytesOf(outType))}, got = want;
    mixprec::runtime::MpErrorRecord record{};
    if (!runOnShim(program, kernel, args, got, record, error)) {
      std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
      return false;
    }
    if (bad >= 0) {
      // The CPU backend fails the run; the kernel reports the same index.
      const std::string prefix = "CPU backend: ";
      if (runOnCpu(image, bound, want, error) || error.rfind(prefix, 0) != 0)
        error = "the CPU backend ran on indices out of range";
      else if (sameError(op, tag, *indices, bad, record, error.substr(prefix.size()), error))
        continue;
      std::fprintf(stderr, "%s: trial %zu: %s\n", where.c_str(), trial, error.c_str());
      return false;
    }
    if (record.tag != 0) {
      std::fprintf(stderr,
                   "%s: trial %zu: the kernel reported an index out of range (tag %u, "
                   "position %lld) in a run the CPU backend ran\n",
                   where.c_str(), trial, record.tag, static_cast<long long>(~record.position));
      return false;
    }
    if (!runOnCpu(image, bound, want, error)) {
      std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
      return false;
    }
    if (int64_t i = firstDifference(want, got, elementBytes, arithmetic); i >= 0) {
      std::fprintf(stderr, "%s: element %lld is %s on the shim, %s on the CPU backend\n",
                   where.c_str(), static_cast<long long>(i),
                   hexBytes(got, i, elementBytes).c_str(), hexBytes(want, i, elementBytes).c_str());
      return false;
    }
  }
  return true;
}

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

} // namespace

int main(int argc, char **argv) {
  // --all-on-device: a routine without a kernel (which the CUDA backend
  // would run on the host) is a problem too.
  const bool allOnDevice = argc > 1 && std::strcmp(argv[1], "--all-on-device") == 0;
  if (allOnDevice) {
    --argc;
    ++argv;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_shim_routines_check [--all-on-device] FILE.mlir...\n");
    return 2;
  }
  MLIRContext context;
  context.getOrLoadDialect<mixprec::graph::GraphDialect>();
  context.getOrLoadDialect<mixprec::kernel::KernelDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  int problems = 0, checked = 0;
  for (int i = 1; i < argc; ++i) {
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[i], &context);
    if (!module) {
      std::fprintf(stderr, "%s: cannot parse\n", argv[i]);
      ++problems;
      continue;
    }
    for (auto func : module->getOps<func::FuncOp>()) {
      std::vector<mixprec::kernel::CallOp> calls;
      for (auto call : func.getBody().front().getOps<mixprec::kernel::CallOp>())
        calls.push_back(call);
      std::vector<std::optional<mixprec::codegen::CudaKernel>> routines =
          mixprec::codegen::emitCudaRoutines(func);
      std::vector<mixprec::codegen::CudaKernel> kernels;
      for (const auto &r : routines)
        if (r)
          kernels.push_back(*r);
      std::string host;
      for (size_t r = 0; r < calls.size(); ++r)
        if (!routines[r])
          host += " " + mixprec::kernel::stringifyRoutine(calls[r].getOpType()).str();
      if (allOnDevice && !host.empty()) {
        std::fprintf(stderr, "%s: @%s: routines on the host:%s\n", argv[i],
                     func.getSymName().str().c_str(), host.c_str());
        ++problems;
      }
      if (kernels.empty())
        continue;
      std::string error;
      std::unique_ptr<shim::Program> program = shim::Program::compileSource(
          llvm::sys::path::filename(argv[i]).str() + ".cu",
          mixprec::codegen::cudaProgramSource(kernels), {}, error);
      if (!program) {
        std::fprintf(stderr, "%s: %s\n", argv[i], error.c_str());
        ++problems;
        continue;
      }
      int here = 0, bounded = 0;
      for (size_t r = 0; r < calls.size(); ++r) {
        if (!routines[r])
          continue;
        // The attention kernels are not the CPU routine bit for bit (their
        // online softmax rounds P against the running maximum):
        // cuda_attention_on_shim checks them, and these routine forms,
        // against the bound AttentionKernel.h derives.
        const auto kind = calls[r].getOpType();
        if (kind == mixprec::kernel::Routine::Attention ||
            kind == mixprec::kernel::Routine::AttentionGrad) {
          ++bounded;
          continue;
        }
        const std::string where = std::string(argv[i]) + ": " + routines[r]->name;
        if (!checkRoutine(where, calls[r], *routines[r], *program, static_cast<unsigned>(r + 1),
                          fnv1a(where)))
          ++problems;
        ++here;
      }
      std::printf("%s: %d routine kernels checked, %d attention kernels left to "
                  "cuda_attention_on_shim; on the host:%s\n",
                  argv[i], here, bounded, host.empty() ? " none" : host.c_str());
      checked += here;
    }
  }
  std::printf("%d routine kernels from %d files on the shim: %d problems\n", checked, argc - 1,
              problems);
  // A run that checked nothing proves nothing.
  return problems || checked == 0 ? 1 : 0;
}
