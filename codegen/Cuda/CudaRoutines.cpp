//===- CudaRoutines.cpp - CUDA kernels for mpk.call routines ---------------===//
//
// Data movement kernels walk the output in a grid-stride loop, split each
// output index into coordinates (shapes are static: every extent and
// stride is a literal) and copy one raw element from the input position the
// CPU routine reads (runtime/kernels/Kernels.h: transposeRaw, sliceRaw,
// concatRaw, gatherRaw). Copies move bits, so any dtype is an unsigned
// integer of its size.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaRoutines.h"
#include "codegen/Cuda/AttentionKernel.h"
#include "codegen/Cuda/CudaTypes.h"
#include "runtime/kernels/Attention.h"

#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include <sstream>

using namespace mlir;

namespace mixprec::codegen {
namespace {

/// Concat kernels with more inputs stay on the host: each input is a
/// parameter and a branch of the kernel.
constexpr size_t kMaxConcatInputs = 64;

/// Threads per block of the data movement kernels, and the grid's cap (the
/// loop strides over the rest).
constexpr int64_t kBlock = 256;
constexpr int64_t kMaxGrid = 65535;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The unsigned C type of one element of `t` as raw bytes (i1 is one byte
/// in memory), or null for other widths.
const char *rawType(Type t) {
  if (!t.isIntOrFloat())
    return nullptr;
  switch (t.getIntOrFloatBitWidth()) {
  case 1:
  case 8:
    return "unsigned char";
  case 16:
    return "unsigned short";
  case 32:
    return "unsigned int";
  case 64:
    return "unsigned long long";
  default:
    return nullptr;
  }
}

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> denseStrides(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

std::string formatList(ArrayRef<int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

/// Prints one routine kernel: a signature of the routine's operands, a
/// grid-stride loop over the output's `total` elements, and the launch.
class RoutinePrinter {
public:
  RoutinePrinter(kernel::CallOp op, std::string name, unsigned tag = 0)
      : op(op), name(std::move(name)), tag(tag) {}

  /// The comment line and the signature (with the error record last when
  /// `reports`); false if an operand has no raw element type.
  bool begin(const std::string &what, bool reports = false);
  /// A grid-stride loop over the `count` indices of operand 1 that reports
  /// the first out of range into the error record: `sizes` holds the size
  /// of the dim each index addresses, cycling (one for a gather's axis, the
  /// tuple's dims for scatter_nd's). The launch covers them.
  void checkIndices(int64_t count, ArrayRef<int64_t> sizes);
  /// `for (i ...)` over `total` output elements, with the launch to match.
  void loop(int64_t total);
  /// `x<d>` for every dim of `shape` from the loop index i.
  void coords(ArrayRef<int64_t> shape);
  /// Three coordinates o, a, k of i in an output viewed as
  /// [outer, extent, inner].
  void coords3(int64_t extent, int64_t inner);
  CudaKernel finish();

  std::ostringstream os;
  CudaKernel kernel;

private:
  /// Raises the launch to cover `total` threads of a grid-stride loop.
  void cover(int64_t total);

  kernel::CallOp op;
  std::string name;
  unsigned tag;
  bool looped = false;
};

bool RoutinePrinter::begin(const std::string &what, bool reports) {
  os << "// mpk.call " << name << ": " << kernel::stringifyRoutine(op.getOpType()).str();
  if (!op.getOps().empty())
    os << " \"" << cast<StringAttr>(op.getOps()[0]).str() << "\"";
  os << " " << what << "\n";
  os << "extern \"C\" __global__ void " << name << "(";
  for (auto [i, v] : llvm::enumerate(op.getInputs())) {
    const char *type = rawType(typeOf(v).getElementType());
    if (!type)
      return false;
    os << (i ? ", " : "") << "const " << type << " *in" << i;
  }
  const char *type = rawType(typeOf(op.getOutputs()[0]).getElementType());
  if (!type)
    return false;
  os << ", " << type << " *out0" << (reports ? ", MpErrorRecord *err" : "") << ") {\n";
  kernel.launch.errorRecord = reports;
  return true;
}

void RoutinePrinter::cover(int64_t total) {
  kernel.launch.blockSize = kBlock;
  kernel.launch.gridSize =
      std::max(kernel.launch.gridSize, std::min<int64_t>((total + kBlock - 1) / kBlock, kMaxGrid));
}

void RoutinePrinter::checkIndices(int64_t count, ArrayRef<int64_t> sizes) {
  const bool wide = typeOf(op.getInputs()[1]).getElementType().isInteger(64);
  os << "  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < " << count
     << "LL; p += (long long)gridDim.x * blockDim.x) {\n";
  os << "    const long long v = mp_index_at(in1, " << (wide ? "true" : "false") << ", p);\n";
  std::string size = std::to_string(sizes.back()) + "LL";
  if (sizes.size() > 1) {
    os << "    const long long j = p % " << sizes.size() << "LL;\n";
    for (size_t j = sizes.size() - 1; j-- > 0;)
      size = "(j == " + std::to_string(j) + " ? " + std::to_string(sizes[j]) + "LL : " + size + ")";
  }
  os << "    const long long size = " << size << ";\n";
  os << "    if (v < -size || v >= size) mp_report_index(err, " << tag << "u, p, in1, "
     << (wide ? "true" : "false") << ");\n";
  os << "  }\n";
  cover(count);
}

void RoutinePrinter::loop(int64_t total) {
  os << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < " << total
     << "LL; i += (long long)gridDim.x * blockDim.x) {\n";
  cover(total);
  looped = true;
}

void RoutinePrinter::coords(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return;
  os << "    long long t = i;\n";
  for (size_t d = shape.size(); d-- > 0;) {
    os << "    const long long x" << d << " = ";
    if (d == 0)
      os << "t;\n";
    else
      os << "t % " << shape[d] << "LL; t /= " << shape[d] << "LL;\n";
  }
  os << "    (void)t;\n";
}

void RoutinePrinter::coords3(int64_t extent, int64_t inner) {
  os << "    const long long k = i % " << inner << "LL;\n";
  os << "    const long long a = i / " << inner << "LL % " << extent << "LL;\n";
  os << "    const long long o = i / " << inner << "LL / " << extent << "LL;\n";
}

CudaKernel RoutinePrinter::finish() {
  if (looped)
    os << "  }\n";
  os << "}\n";
  kernel.name = name;
  kernel.source = os.str();
  return std::move(kernel);
}

/// out[x] = in[x_perm^-1]: output dim d walks input dim perm[d].
std::optional<CudaKernel> transposeKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::TransposeOptionsAttr>(op.getOptions());
  ArrayRef<int64_t> inShape = typeOf(op.getInputs()[0]).getShape();
  ArrayRef<int64_t> outShape = typeOf(op.getOutputs()[0]).getShape();
  RoutinePrinter p(op, name);
  if (!p.begin("perm " + formatList(options.getPerm()) + ", " + formatList(inShape) + " -> " +
               formatList(outShape)))
    return std::nullopt;
  std::vector<int64_t> inStrides = denseStrides(inShape);
  p.loop(product(outShape));
  p.coords(outShape);
  p.os << "    out0[i] = in0[0";
  for (size_t d = 0; d < outShape.size(); ++d)
    p.os << " + x" << d << " * " << inStrides[options.getPerm()[d]] << "LL";
  p.os << "];\n";
  return p.finish();
}

/// out[x] = in[starts + x * steps].
std::optional<CudaKernel> sliceKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::SliceOptionsAttr>(op.getOptions());
  ArrayRef<int64_t> inShape = typeOf(op.getInputs()[0]).getShape();
  ArrayRef<int64_t> outShape = typeOf(op.getOutputs()[0]).getShape();
  RoutinePrinter p(op, name);
  if (!p.begin("starts " + formatList(options.getStarts()) + ", steps " +
               formatList(options.getSteps()) + ", " + formatList(inShape) + " -> " +
               formatList(outShape)))
    return std::nullopt;
  std::vector<int64_t> inStrides = denseStrides(inShape);
  int64_t base = 0;
  for (size_t d = 0; d < inShape.size(); ++d)
    base += options.getStarts()[d] * inStrides[d];
  p.loop(product(outShape));
  p.coords(outShape);
  p.os << "    out0[i] = in0[" << base << "LL";
  for (size_t d = 0; d < outShape.size(); ++d)
    p.os << " + x" << d << " * " << options.getSteps()[d] * inStrides[d] << "LL";
  p.os << "];\n";
  return p.finish();
}

/// The axis of `options` in [0, rank) (negative counts from the end).
int64_t normalizedAxis(kernel::AxisOptionsAttr options, int64_t rank) {
  int64_t axis = options.getAxis();
  return axis < 0 ? axis + rank : axis;
}

/// Each output element from the input whose range of the axis holds it.
std::optional<CudaKernel> concatKernel(kernel::CallOp op, const std::string &name) {
  if (op.getInputs().size() > kMaxConcatInputs)
    return std::nullopt;
  ArrayRef<int64_t> outShape = typeOf(op.getOutputs()[0]).getShape();
  const int64_t axis =
      normalizedAxis(cast<kernel::AxisOptionsAttr>(op.getOptions()), outShape.size());
  if (axis < 0 || axis >= static_cast<int64_t>(outShape.size()))
    return std::nullopt;
  RoutinePrinter p(op, name);
  if (!p.begin("axis " + std::to_string(axis) + ", " + std::to_string(op.getInputs().size()) +
               " inputs -> " + formatList(outShape)))
    return std::nullopt;
  const int64_t extent = outShape[axis], inner = product(outShape.drop_front(axis + 1));
  p.loop(product(outShape));
  p.coords3(extent, inner);
  int64_t first = 0;
  for (auto [j, v] : llvm::enumerate(op.getInputs())) {
    const int64_t e = typeOf(v).getShape()[axis];
    if (e == 0)
      continue;
    p.os << "    " << (first ? "else if" : "if") << " (a < " << first + e << "LL) out0[i] = in"
         << j << "[(o * " << e << "LL + a - " << first << "LL) * " << inner << "LL + k];\n";
    first += e;
  }
  return p.finish();
}

/// Whether `indices` is a constant whose every value is in [-extent,
/// extent), the range the CPU routine accepts.
bool constantIndicesInRange(Value indices, int64_t extent) {
  DenseIntElementsAttr values;
  if (!matchPattern(indices, m_Constant(&values)))
    return false;
  for (const APInt &v : values) {
    const int64_t index = v.getSExtValue();
    if (index < -extent || index >= extent)
      return false;
  }
  return true;
}

/// The int64 value of index operand 1 at `at` (i32 sign-extended).
std::string indexAt(kernel::CallOp op, const std::string &at) {
  const bool wide = typeOf(op.getInputs()[1]).getElementType().isInteger(64);
  return std::string("mp_index_at(in1, ") + (wide ? "true" : "false") + ", " + at + ")";
}

/// out[o, j, k] = data[o, indices[j] (negative from the end), k]. Indices
/// the compiler cannot check (not a constant in range) are checked as the
/// CPU routine checks them, into the error record; an element whose index
/// is out of range is not written, and nothing outside the data is read.
std::optional<CudaKernel> gatherKernel(kernel::CallOp op, const std::string &name, unsigned tag) {
  ArrayRef<int64_t> dataShape = typeOf(op.getInputs()[0]).getShape();
  const int64_t axis =
      normalizedAxis(cast<kernel::AxisOptionsAttr>(op.getOptions()), dataShape.size());
  if (axis < 0 || axis >= static_cast<int64_t>(dataShape.size()))
    return std::nullopt;
  const int64_t extent = dataShape[axis];
  Value indices = op.getInputs()[1];
  const bool checked = !constantIndicesInRange(indices, extent);
  RoutinePrinter p(op, name, tag);
  if (!p.begin("axis " + std::to_string(axis) + (checked ? ", indices " : ", constant indices ") +
                   formatList(typeOf(indices).getShape()) + " into " + formatList(dataShape),
               /*reports=*/checked))
    return std::nullopt;
  const int64_t count = typeOf(indices).getNumElements();
  const int64_t inner = product(dataShape.drop_front(axis + 1));
  ArrayRef<int64_t> outShape = typeOf(op.getOutputs()[0]).getShape();
  if (checked)
    p.checkIndices(count, {extent});
  p.loop(product(outShape));
  p.coords3(count, inner);
  p.os << "    long long index = " << indexAt(op, "a") << ";\n";
  p.os << "    if (index < 0) index += " << extent << "LL;\n";
  if (!checked)
    p.os << "    // In range: the compiler checked the constant; a module whose\n"
            "    // indices were changed reads nothing outside the data.\n";
  p.os << "    if (index >= 0 && index < " << extent << "LL) out0[i] = in0[(o * " << extent
       << "LL + index) * " << inner << "LL + k];\n";
  return p.finish();
}

/// gather_elements: out[x] = data[x with dim `axis` replaced by indices[x]
/// (negative from the end)]; indices checked as gather's.
std::optional<CudaKernel> gatherElementsKernel(kernel::CallOp op, const std::string &name,
                                               unsigned tag) {
  ArrayRef<int64_t> dataShape = typeOf(op.getInputs()[0]).getShape();
  ArrayRef<int64_t> indexShape = typeOf(op.getInputs()[1]).getShape();
  const int64_t rank = dataShape.size();
  const int64_t axis = normalizedAxis(cast<kernel::AxisOptionsAttr>(op.getOptions()), rank);
  if (axis < 0 || axis >= rank || static_cast<int64_t>(indexShape.size()) != rank)
    return std::nullopt;
  const int64_t extent = dataShape[axis];
  RoutinePrinter p(op, name, tag);
  if (!p.begin("axis " + std::to_string(axis) + ", indices " + formatList(indexShape) + " into " +
                   formatList(dataShape),
               /*reports=*/true))
    return std::nullopt;
  const int64_t count = product(indexShape);
  std::vector<int64_t> strides = denseStrides(dataShape);
  p.checkIndices(count, {extent});
  p.loop(count);
  p.coords(indexShape);
  p.os << "    long long index = " << indexAt(op, "i") << ";\n";
  p.os << "    if (index < 0) index += " << extent << "LL;\n";
  p.os << "    if (index >= 0 && index < " << extent << "LL) out0[i] = in0[0";
  for (int64_t d = 0; d < rank; ++d)
    p.os << " + " << (d == axis ? std::string("index") : "x" + std::to_string(d)) << " * "
         << strides[d] << "LL";
  p.os << "];\n";
  return p.finish();
}

/// scatter_nd as the CPU routine computes it (runtime/kernels/Indexing.cpp)
/// with one thread per output element instead of one pass per update: the
/// element starts as the data's and walks the index tuples in order,
/// combining the update of each tuple that addresses it, so duplicates
/// apply in the CPU's order (the last wins for `none`, sums and products
/// round in the same sequence). A tuple with an index out of range
/// addresses no element and is reported.
///
/// Float data (f32, bf16, f16): the CPU decodes to FP32, combines and
/// rounds once to the dtype, and its rounding gives back every value it
/// decoded, its payload kept and a bf16 or f16 NaN made quiet
/// (common/numerics/Rounding.cpp, as APFloat), which the prelude's stores
/// do not (they make NaN canonical, as the GPU's conversions do). So
/// `none`, `max` and `min`, which only pick values (max and min as
/// std::max and std::min: NaN and signed zeros included), store the picked
/// element's bits, quietened; `add` and `mul` combine in FP32 and round
/// once, and an element no tuple addresses keeps the data's bits,
/// quietened. i32 and i64 combine in int64, wrapping; i32 keeps the low 32
/// bits.
std::optional<CudaKernel> scatterNdKernel(kernel::CallOp op, const std::string &name,
                                          unsigned tag) {
  const int64_t reduction = cast<kernel::ScatterNdOptionsAttr>(op.getOptions()).getReduction();
  ArrayRef<int64_t> dataShape = typeOf(op.getInputs()[0]).getShape();
  ArrayRef<int64_t> indexShape = typeOf(op.getInputs()[1]).getShape();
  Type type = typeOf(op.getInputs()[0]).getElementType();
  if (reduction < 0 || reduction > 4 || indexShape.empty())
    return std::nullopt;
  const int64_t m = indexShape.back();
  if (m < 1 || m > static_cast<int64_t>(dataShape.size()))
    return std::nullopt;
  // FP8 stays on the host: its rounding does not give back every bit
  // pattern it decodes (a negative NaN).
  const bool isFloat = type.isF32() || type.isBF16() || type.isF16();
  if (!isFloat && !type.isInteger(32) && !type.isInteger(64))
    return std::nullopt;
  static const char *const kReduction[] = {"none", "add", "mul", "max", "min"};
  RoutinePrinter p(op, name, tag);
  if (!p.begin(std::string(kReduction[reduction]) + ", indices " + formatList(indexShape) +
                   " into " + formatList(dataShape),
               /*reports=*/true))
    return std::nullopt;
  const int64_t tuples = product(indexShape.drop_back());
  const int64_t slice = product(dataShape.drop_front(m));
  p.checkIndices(tuples * m, dataShape.take_front(m));
  p.loop(product(dataShape));
  // The element's coordinates in the dims the tuples address, and its
  // offset in the slice.
  p.os << "    const long long e = i % " << slice << "LL;\n";
  p.os << "    long long lead = i / " << slice << "LL;\n";
  for (int64_t j = m; j-- > 0;)
    p.os << "    const long long y" << j << " = lead % " << dataShape[j]
         << "LL; lead /= " << dataShape[j] << "LL;\n";
  p.os << "    (void)lead;\n";
  const std::string update = "t * " + std::to_string(slice) + "LL + e";
  std::string combine, result;
  if (isFloat) {
    DTypeInfo info = *dtypeInfo(type);
    // The bits of element `at` of `operand` as the CPU's decode and
    // rounding give them back.
    auto quiet = [&](const std::string &operand, const std::string &at) {
      if (type.isF32())
        return operand + "[" + at + "]";
      const char *limit = type.isBF16() ? "0x7f80u" : "0x7c00u";
      const char *bit = type.isBF16() ? "0x0040u" : "0x0200u";
      const std::string r = "(unsigned)" + operand + "[" + at + "]";
      return "(unsigned short)(((" + r + ") & 0x7fffu) > " + limit + " ? (" + r + ") | " + bit +
             " : (" + r + "))";
    };
    const std::string load =
        std::string("mp_load_") + info.suffix + "((const " + info.ctype + " *)";
    if (reduction == 1 || reduction == 2) {
      p.os << "    float a = " << load << "in0, i);\n";
      p.os << "    bool touched = false;\n";
      combine = std::string("a = ") + (reduction == 1 ? "__fadd_rn" : "__fmul_rn") + "(a, " + load +
                "in2, " + update + ")); touched = true;";
      result = std::string("if (touched) mp_store_") + info.suffix + "((" + info.ctype +
               " *)out0, i, a); else out0[i] = " + quiet("in0", "i") + ";";
    } else {
      // The element whose bits the output takes.
      p.os << "    long long from = i;\n";
      p.os << "    bool fromData = true;\n";
      const std::string current = load + "(fromData ? in0 : in2), from)";
      const std::string next = load + "in2, " + update + ")";
      const std::string pick = "{ from = " + update + "; fromData = false; }";
      combine = reduction == 0   ? pick
                : reduction == 3 ? "if (" + current + " < " + next + ") " + pick
                                 : "if (" + next + " < " + current + ") " + pick;
      result = "out0[i] = fromData ? " + quiet("in0", "from") + " : " + quiet("in2", "from") + ";";
    }
  } else {
    const std::string cast = type.isInteger(64) ? "(long long)" : "(long long)(int)";
    static const char *const kIntCombine[] = {"u", "mp_i64_add(a, u)", "mp_i64_mul(a, u)",
                                              "(a < u ? u : a)", "(u < a ? u : a)"};
    p.os << "    long long a = " << cast << "in0[i];\n";
    combine =
        "const long long u = " + cast + "in2[" + update + "]; a = " + kIntCombine[reduction] + ";";
    result = type.isInteger(64) ? "out0[i] = (unsigned long long)a;"
                                : "out0[i] = (unsigned int)(unsigned long long)a;";
  }
  p.os << "    for (long long t = 0; t < " << tuples << "LL; ++t) {\n";
  p.os << "      long long v;\n";
  for (int64_t j = 0; j < m; ++j)
    p.os << "      v = " << indexAt(op, "t * " + std::to_string(m) + "LL + " + std::to_string(j))
         << "; if (v < 0) v += " << dataShape[j] << "LL; if (v != y" << j << ") continue;\n";
  p.os << "      " << combine << "\n";
  p.os << "    }\n";
  p.os << "    " << result << "\n";
  return p.finish();
}

/// reduce_sum and reduce_mean as the CPU routine computes them
/// (runtime/kernels/Reduce.cpp), so the bits agree: the input decoded to
/// float, each output's terms added in double in the same order, then
/// rounded to float and stored in the output's dtype. The order is the
/// CPU's plan (cpu::detail::makePlan: size-1 dims dropped, adjacent dims
/// merged where input and accumulator both walk them as one run): the
/// reduced coordinates in row-major order; where the innermost run is
/// reduced, each run in four chains combined as (a + a1) + (a2 + a3), as
/// reduceRun does. One thread per output element.
std::optional<CudaKernel> reduceKernel(kernel::CallOp op, const std::string &name, bool mean) {
  auto options = cast<kernel::ReduceOptionsAttr>(op.getOptions());
  Value input = op.getInputs()[0];
  Type inType = typeOf(input).getElementType(), outType = typeOf(op.getOutputs()[0]).getElementType();
  std::optional<DTypeInfo> in = dtypeInfo(inType), out = dtypeInfo(outType);
  // Float data only (the CPU routine sums floats).
  if (!in || !out || !isa<FloatType>(inType) || !isa<FloatType>(outType))
    return std::nullopt;
  ArrayRef<int64_t> shape = typeOf(input).getShape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(rank, options.getAxes().empty());
  for (int64_t axis : options.getAxes()) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    reduced[axis] = true;
  }
  std::vector<int64_t> kept(shape.begin(), shape.end());
  int64_t reduceCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 0)
      return std::nullopt; // nothing to sum: the host writes the zeros
    if (reduced[d]) {
      reduceCount *= shape[d];
      kept[d] = 1;
    }
  }
  std::vector<int64_t> inStrides = denseStrides(shape), accStrides = denseStrides(kept);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      accStrides[d] = 0;
  // cpu::detail::makePlan with the input and the accumulator.
  struct PlanDim {
    int64_t size, in, acc;
  };
  std::vector<PlanDim> plan;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    if (!plan.empty() && plan.back().in == inStrides[d] * shape[d] &&
        plan.back().acc == accStrides[d] * shape[d]) {
      plan.back().size *= shape[d];
      plan.back().in = inStrides[d];
      plan.back().acc = accStrides[d];
      continue;
    }
    plan.push_back({shape[d], inStrides[d], accStrides[d]});
  }
  const int64_t outCount = product(kept);
  RoutinePrinter p(op, name);
  if (!p.begin(std::string(mean ? "mean" : "sum") + " over " + formatList(options.getAxes()) +
               " of " + formatList(shape) + " -> " + std::to_string(outCount) +
               " values, in double in the CPU routine's order"))
    return std::nullopt;
  const std::string load =
      std::string("mp_load_") + in->suffix + "((const " + in->ctype + " *)in0, ";
  p.loop(outCount);
  p.os << "    long long base = 0;\n";
  for (const PlanDim &d : plan)
    if (d.acc != 0)
      p.os << "    base += (i / " << d.acc << "LL % " << d.size << "LL) * " << d.in << "LL;\n";
  p.os << "    double a = 0.0;\n";
  const bool innerReduced = !plan.empty() && plan.back().acc == 0 && plan.back().in == 1;
  std::string offset = "base";
  std::string indent = "    ";
  int loops = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    const PlanDim &d = plan[k];
    if (d.acc != 0 || (innerReduced && k + 1 == plan.size()))
      continue;
    const std::string r = "r" + std::to_string(k);
    p.os << indent << "for (long long " << r << " = 0; " << r << " < " << d.size << "LL; ++" << r
         << ") {\n";
    indent += "  ";
    offset += " + " + r + " * " + std::to_string(d.in) + "LL";
    ++loops;
  }
  p.os << indent << "const long long at = " << offset << ";\n";
  if (innerReduced) {
    const int64_t n = plan.back().size;
    p.os << indent << "double a1 = 0.0, a2 = 0.0, a3 = 0.0;\n"
         << indent << "long long q = 0;\n"
         << indent << "for (; q + 4 <= " << n << "LL; q += 4) {\n"
         << indent << "  a = a + (double)" << load << "at + q);\n"
         << indent << "  a1 = a1 + (double)" << load << "at + q + 1);\n"
         << indent << "  a2 = a2 + (double)" << load << "at + q + 2);\n"
         << indent << "  a3 = a3 + (double)" << load << "at + q + 3);\n"
         << indent << "}\n"
         << indent << "for (; q < " << n << "LL; ++q) a = a + (double)" << load << "at + q);\n"
         << indent << "a = (a + a1) + (a2 + a3);\n";
  } else {
    p.os << indent << "a = a + (double)" << load << "at);\n";
  }
  for (int l = 0; l < loops; ++l) {
    indent.resize(indent.size() - 2);
    p.os << indent << "}\n";
  }
  if (mean)
    p.os << "    a = a / " << std::max<int64_t>(reduceCount, 1) << ".0;\n";
  p.os << "    mp_store_" << out->suffix << "((" << out->ctype << " *)out0, i, (float)a);\n";
  return p.finish();
}

/// One thread: num::fp8Scale (common/numerics/Rounding.cpp) in double,
/// rounded once to float.
std::optional<CudaKernel> fp8ScaleKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::Fp8ScaleOptionsAttr>(op.getOptions());
  const bool e5m2 = isa<Float8E5M2Type>(options.getFormat());
  const int64_t margin = options.getMargin();
  if (!typeOf(op.getInputs()[0]).getElementType().isF32() ||
      !typeOf(op.getOutputs()[0]).getElementType().isF32() || margin < -1024 || margin > 1024)
    return std::nullopt;
  RoutinePrinter p(op, name);
  if (!p.begin(std::string("format ") + (e5m2 ? "f8E5M2" : "f8E4M3FN") + ", margin " +
               std::to_string(margin)))
    return std::nullopt;
  p.os << "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
          "  const double amax = __uint_as_float(in0[0]);\n"
          "  float scale;\n"
          "  if (isnan(amax) || isinf(amax)) scale = MP_NAN; // poisons the tensor's scale\n"
          "  else if (!(amax > 0.0)) scale = 1.0f;\n"
          "  else {\n"
          "    const double s = "
       << (e5m2 ? "57344.0" : "448.0") << " / amax / ldexp(1.0, " << margin
       << ");\n"
          "    scale = (float)(s < 3.4028234663852886e38 ? s : 3.4028234663852886e38);\n"
          "  }\n"
          "  out0[0] = __float_as_uint(scale);\n";
  p.kernel.launch.gridSize = 1;
  p.kernel.launch.blockSize = 32;
  return p.finish();
}

/// A power of two 2^e (e in [-127, 127]) as float bits, for the block scales.
const char *const kPow2Helper = "  auto pow2 = [](long long e) -> float {\n"
                                "    return e >= -126 ? __uint_as_float((unsigned)(e + 127) << 23) "
                                ": __uint_as_float(1u << 22);\n"
                                "  };\n";

/// block_scale: one thread per block, numerics::computeBlockScales: the
/// block's amax (NaN sticks), then the largest power of two <= (fp8_max /
/// amax) / 2^margin in double, clamped to [2^-127, 2^127]; 1 for an
/// all-zero block, NaN for a non-finite amax.
std::optional<CudaKernel> blockScaleKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::BlockScaleOptionsAttr>(op.getOptions());
  Value input = op.getInputs()[0];
  std::optional<DTypeInfo> in = dtypeInfo(typeOf(input).getElementType());
  ArrayRef<int64_t> shape = typeOf(input).getShape();
  if (!in || shape.size() < 2 || !typeOf(op.getOutputs()[0]).getElementType().isF32())
    return std::nullopt;
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const int64_t batch = product(shape.drop_back(2));
  const int64_t br = options.getBlockRows(), bc = options.getBlockCols();
  const int64_t sr = (rows + br - 1) / br, sc = (cols + bc - 1) / bc;
  const bool e5m2 = isa<Float8E5M2Type>(options.getFormat());
  RoutinePrinter p(op, name);
  if (!p.begin("blocks " + std::to_string(br) + "x" + std::to_string(bc) + ", margin " +
               std::to_string(options.getMargin())))
    return std::nullopt;
  p.os << kPow2Helper;
  p.loop(batch * sr * sc);
  p.os << "    const long long b = i / " << sr * sc << "LL, r0 = i / " << sc << "LL % " << sr
       << "LL * " << br << "LL, c0 = i % " << sc << "LL * " << bc << "LL;\n"
       << "    const long long r1 = r0 + " << br << "LL < " << rows << "LL ? r0 + " << br
       << "LL : " << rows << "LL;\n"
       << "    const long long c1 = c0 + " << bc << "LL < " << cols << "LL ? c0 + " << bc
       << "LL : " << cols << "LL;\n"
       << "    float m = 0.0f;\n"
       << "    for (long long r = r0; r < r1; ++r)\n"
       << "      for (long long c = c0; c < c1; ++c) {\n"
       << "        const float v = fabsf(mp_load_" << in->suffix << "((const " << in->ctype
       << " *)in0, (b * " << rows << "LL + r) * " << cols << "LL + c));\n"
       << "        m = isnan(v) || isnan(m) ? MP_NAN : fmaxf(m, v);\n"
       << "      }\n"
       << "    float scale;\n"
       << "    if (isnan(m) || isinf(m)) scale = MP_NAN;\n"
       << "    else if (!(m > 0.0f)) scale = 1.0f;\n"
       << "    else {\n"
       << "      int e;\n"
       << "      (void)frexp(" << (e5m2 ? "57344.0" : "448.0") << " / (double)m, &e);\n"
       << "      const long long x = (long long)e - 1 - " << options.getMargin() << "LL;\n"
       << "      scale = pow2(x < -127 ? -127 : x > 127 ? 127 : x);\n"
       << "    }\n"
       << "    out0[i] = __float_as_uint(scale);\n";
  return p.finish();
}

/// block_quantize: one thread per element, numerics::blockQuantize:
/// satfinite(x * the scale of its block), NaN where x or the scale is not
/// finite (the prelude's mp_quantize_*, as mp.quantize's kernels).
std::optional<CudaKernel> blockQuantizeKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::BlockScaleOptionsAttr>(op.getOptions());
  Value input = op.getInputs()[0];
  std::optional<DTypeInfo> in = dtypeInfo(typeOf(input).getElementType());
  Type outType = typeOf(op.getOutputs()[0]).getElementType();
  std::optional<DTypeInfo> out = dtypeInfo(outType);
  ArrayRef<int64_t> shape = typeOf(input).getShape();
  if (!in || !out || shape.size() < 2 || !isa<Float8E4M3FNType, Float8E5M2Type>(outType))
    return std::nullopt;
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const int64_t br = options.getBlockRows(), bc = options.getBlockCols();
  const int64_t sr = (rows + br - 1) / br, sc = (cols + bc - 1) / bc;
  RoutinePrinter p(op, name);
  if (!p.begin("blocks " + std::to_string(br) + "x" + std::to_string(bc)))
    return std::nullopt;
  p.loop(product(shape));
  p.os << "    const long long c = i % " << cols << "LL, r = i / " << cols << "LL % " << rows
       << "LL, b = i / " << rows * cols << "LL;\n"
       << "    const float s = __uint_as_float(in1[(b * " << sr << "LL + r / " << br << "LL) * "
       << sc << "LL + c / " << bc << "LL]);\n"
       << "    const float x = mp_load_" << in->suffix << "((const " << in->ctype << " *)in0, i);\n"
       << "    mp_store_" << out->suffix << "((" << out->ctype << " *)out0, i, mp_quantize_"
       << out->suffix << "(x, s));\n";
  return p.finish();
}

/// block_scaled_gemm: one thread per output element of 16 x 16 tiles,
/// numerics::blockScaledGemm bit for bit: each k-block's products summed
/// exactly in 64-bit integers (FP8 values times 2^9 or 2^16), rounded once
/// to float, divided by the two scales, accumulated block after block in
/// float; then the bias and the epilogue as the CPU routine. A portable
/// kernel (no tensor cores): cuBLASLt's block scale modes are the fast path
/// still to come. E5M2 x E5M2 (whose sums need 128 bits), k-blocks over
/// 256 and biases other than one value per column stay on the host.
std::optional<CudaKernel> blockScaledGemmKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::BlockGemmOptionsAttr>(op.getOptions());
  auto inputs = op.getInputs();
  Type ta = typeOf(inputs[0]).getElementType(), tb = typeOf(inputs[1]).getElementType();
  Type to = typeOf(op.getOutputs()[0]).getElementType();
  std::optional<DTypeInfo> a = dtypeInfo(ta), b = dtypeInfo(tb), out = dtypeInfo(to);
  ArrayRef<int64_t> as = typeOf(inputs[0]).getShape(), bs = typeOf(inputs[1]).getShape();
  const bool aWide = isa<Float8E5M2Type>(ta), bWide = isa<Float8E5M2Type>(tb);
  if (!a || !b || !out || (aWide && bWide) || as.size() < 2 || bs.size() != 2)
    return std::nullopt;
  std::optional<DTypeInfo> bias;
  if (inputs.size() > 4) {
    bias = dtypeInfo(typeOf(inputs[4]).getElementType());
    if (!bias || product(typeOf(inputs[4]).getShape()) != bs[0] ||
        typeOf(inputs[4]).getShape().back() != bs[0])
      return std::nullopt;
  }
  const int64_t k = as.back(), n = bs[0], m = product(as) / std::max<int64_t>(k, 1);
  const int64_t kb = options.getKBlock(), blocks = (k + kb - 1) / kb;
  const int64_t shiftA = aWide ? 16 : 9, shiftB = bWide ? 16 : 9;
  RoutinePrinter p(op, name);
  if (!p.begin("a blocks " + std::to_string(options.getABlockRows()) + "x" + std::to_string(kb) +
               ", b blocks " + std::to_string(options.getBBlockRows()) + "x" + std::to_string(kb)))
    return std::nullopt;
  // Tiles of 16 x 16 outputs, one thread each (256 per block, blocks
  // striding over the tiles); each k-block of the tile's 16 rows of a and
  // 16 rows of b staged in shared memory (rows padded by one against bank
  // conflicts). A k-block over 256 would not fit: the host runs it.
  if (kb > 256)
    return std::nullopt;
  const int64_t ld = kb + 1, tilesM = (m + 15) / 16, tilesN = (n + 15) / 16;
  auto load = [&](const DTypeInfo &t, const char *in, const std::string &at) {
    return std::string("mp_load_") + t.suffix + "((const " + t.ctype + " *)" + in + ", " + at +
           ")";
  };
  p.os << "  __shared__ float ta[" << 16 * ld << "], tb[" << 16 * ld << "];\n"
       << "  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;\n"
       << "  for (long long tile = blockIdx.x; tile < " << tilesM * tilesN
       << "LL; tile += gridDim.x) {\n"
       << "    const long long r0 = tile / " << tilesN << "LL * 16, c0 = tile % " << tilesN
       << "LL * 16;\n"
       << "    const long long row = r0 + tr, col = c0 + tc;\n"
       << "    float acc = 0.0f;\n"
       << "    for (long long q = 0; q < " << blocks << "LL; ++q) {\n"
       << "      const long long k0 = q * " << kb << "LL;\n"
       << "      const long long len = k0 + " << kb << "LL < " << k << "LL ? " << kb << "LL : "
       << k << "LL - k0;\n"
       << "      __syncthreads(); // the previous k-block is consumed\n"
       << "      for (int e = threadIdx.x; e < " << 16 * kb << "; e += blockDim.x) {\n"
       << "        const int r = e / " << kb << ", c = e % " << kb << ";\n"
       << "        ta[r * " << ld << " + c] = r0 + r < " << m << "LL && c < len ? "
       << load(*a, "in0", "(r0 + r) * " + std::to_string(k) + "LL + k0 + c") << " : 0.0f;\n"
       << "        tb[r * " << ld << " + c] = c0 + r < " << n << "LL && c < len ? "
       << load(*b, "in1", "(c0 + r) * " + std::to_string(k) + "LL + k0 + c") << " : 0.0f;\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "      long long sum = 0;\n"
       << "      bool finite = true;\n"
       << "      for (int c = 0; c < len; ++c) {\n"
       << "        const float x = ta[tr * " << ld << " + c], y = tb[tc * " << ld << " + c];\n"
       << "        finite = finite && mp_finite(x) && mp_finite(y);\n"
       << "        if (finite) sum += (long long)(x * " << (1LL << shiftA)
       << ".0f) * (long long)(y * " << (1LL << shiftB) << ".0f);\n"
       << "      }\n"
       << "      if (row < " << m << "LL && col < " << n << "LL) {\n"
       << "        const float sa = __uint_as_float(in2[row / " << options.getABlockRows()
       << "LL * " << blocks << "LL + q]);\n"
       << "        const float sb = __uint_as_float(in3[col / " << options.getBBlockRows()
       << "LL * " << blocks << "LL + q]);\n"
       << "        acc = acc + (finite ? (((float)sum * __uint_as_float("
       << ((127u - static_cast<unsigned>(shiftA + shiftB)) << 23) << "u)) / sa) / sb : MP_NAN);\n"
       << "      }\n"
       << "    }\n"
       << "    if (row >= " << m << "LL || col >= " << n << "LL) continue;\n"
       << "    const long long i = row * " << n << "LL + col;\n";
  if (bias)
    p.os << "    acc = acc + " << load(*bias, "in4", "col") << ";\n";
  if (options.getEpilogue() == 1)
    p.os << "    acc = acc < 0.0f ? 0.0f : acc;\n";
  if (options.getEpilogue() == 2)
    p.os << "    acc = mp_gelu_tanh(acc);\n";
  p.os << "    mp_store_" << out->suffix << "((" << out->ctype << " *)out0, i, acc);\n"
       << "  }\n";
  p.kernel.launch.blockSize = 256;
  p.kernel.launch.gridSize = std::min<int64_t>(tilesM * tilesN, kMaxGrid);
  return p.finish();
}

/// The int64 value of operand `i` at element offset `offset`: i64 as is,
/// i32 sign-extended, bool 0/1, an f32 (pow's exponent) as its float; null
/// for other dtypes (f16/bf16 exponents stay on the host).
std::optional<std::string> intOperandLoad(Type t, size_t i, const std::string &offset) {
  const std::string at = "in" + std::to_string(i) + "[" + offset + "]";
  if (t.isInteger(64))
    return "(long long)" + at;
  if (t.isInteger(32))
    return "(long long)(int)" + at;
  if (t.isInteger(1))
    return "(long long)(" + at + " != 0)";
  if (t.isF32())
    return "__uint_as_float(" + at + ")";
  return std::nullopt;
}

/// int_elementwise: each operand broadcast to the output (stride 0 on its
/// size-1 and missing dims), the op on int64 by the prelude's mp_i64_*
/// helpers (the CPU routine's functions), stored in the output's dtype: i32
/// keeps the low 32 bits, bool is != 0.
std::optional<CudaKernel> intElementwiseKernel(kernel::CallOp op, const std::string &name) {
  auto options = cast<kernel::IntElementwiseOptionsAttr>(op.getOptions());
  static const char *const kExpr[] = {
      "mp_i64_add(v0, v1)",  "mp_i64_sub(v0, v1)", "mp_i64_mul(v0, v1)",
      "mp_i64_div(v0, v1)",  "mp_i64_mod(v0, v1)", "mp_i64_fmod(v0, v1)",
      "mp_i64_pow(v0, v1)",  "(v0 > v1 ? v0 : v1)", "(v0 < v1 ? v0 : v1)",
      "mp_i64_neg(v0)",      "mp_i64_abs(v0)",     "(v0 != 0 ? v1 : v2)",
      "(long long)(v0 == v1)", "(long long)(v0 < v1)", "(long long)(v0 <= v1)",
      "(long long)(v0 > v1)", "(long long)(v0 >= v1)", "v0"};
  static_assert(sizeof(kExpr) / sizeof(kExpr[0]) == 18, "one expression per int_elementwise op");
  const int64_t which = options.getOp();
  if (which < 0 || which >= 18)
    return std::nullopt;
  Type outType = typeOf(op.getOutputs()[0]).getElementType();
  if (!outType.isInteger(64) && !outType.isInteger(32) && !outType.isInteger(1))
    return std::nullopt;
  ArrayRef<int64_t> outShape = typeOf(op.getOutputs()[0]).getShape();
  RoutinePrinter p(op, name);
  if (!p.begin("op " + std::to_string(which) + ", " + formatList(outShape)))
    return std::nullopt;
  p.loop(product(outShape));
  p.coords(outShape);
  std::string expr = kExpr[which];
  for (auto [i, v] : llvm::enumerate(op.getInputs())) {
    ArrayRef<int64_t> shape = typeOf(v).getShape();
    std::vector<int64_t> strides = denseStrides(shape);
    std::string offset = "0LL";
    const size_t lead = outShape.size() - shape.size();
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1)
        offset += " + x" + std::to_string(lead + d) + " * " + std::to_string(strides[d]) + "LL";
    std::optional<std::string> load = intOperandLoad(typeOf(v).getElementType(), i, offset);
    if (!load)
      return std::nullopt;
    const bool isFloat = typeOf(v).getElementType().isF32();
    p.os << "    const " << (isFloat ? "float" : "long long") << " v" << i << " = " << *load
         << ";\n";
  }
  if (which == 6 && typeOf(op.getInputs()[1]).getElementType().isF32())
    expr = "mp_i64_powf(v0, v1)";
  p.os << "    const long long r = " << expr << ";\n";
  if (outType.isInteger(1))
    p.os << "    out0[i] = r != 0 ? 1 : 0;\n";
  else if (outType.isInteger(32))
    p.os << "    out0[i] = (unsigned int)(unsigned long long)r;\n";
  else
    p.os << "    out0[i] = (unsigned long long)r;\n";
  return p.finish();
}

} // namespace

/// attention and attention_grad: the FlashAttention-2 style kernels of
/// AttentionKernel.h, writing the one result the call writes (the forward's
/// output or log-sum-exp; one of dq, dk, dv). Shapes the kernels refuse
/// (head dims not multiples of 16 up to 128) stay on the host.
std::optional<CudaKernel> attentionKernel(kernel::CallOp op, const std::string &name) {
  const bool grad = op.getOpType() == kernel::Routine::AttentionGrad;
  auto options = cast<kernel::AttentionOptionsAttr>(op.getOptions());
  ValueRange in = op.getInputs();
  const size_t biasIndex = grad ? 6 : 3;
  if (in.size() < biasIndex)
    return std::nullopt;
  ArrayRef<int64_t> q = typeOf(in[0]).getShape(), k = typeOf(in[1]).getShape(),
                    v = typeOf(in[2]).getShape();
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return std::nullopt;
  AttentionKernelSpec spec;
  spec.batch = q[0];
  spec.heads = q[1];
  spec.seqQ = q[2];
  spec.seqK = k[2];
  spec.headDim = q[3];
  spec.valueDim = v[3];
  spec.scale = options.getScale().convertToFloat();
  spec.causal = options.getCausal();
  spec.operandType = typeOf(in[0]).getElementType();
  // The forward's output (or the gradients, in dout's dtype).
  spec.outType =
      grad ? typeOf(in[5]).getElementType()
           : (options.getLse() ? spec.operandType : typeOf(op.getOutputs()[0]).getElementType());
  if (in.size() > biasIndex) {
    spec.hasBias = true;
    spec.biasType = typeOf(in[biasIndex]).getElementType();
    ArrayRef<int64_t> bias = typeOf(in[biasIndex]).getShape();
    spec.biasStrides = runtime::cpu::attentionBiasStrides({bias.begin(), bias.end()});
  }
  if (grad) {
    // The kernel reads out and dout in its outType: both must be dout's.
    if (typeOf(in[3]).getElementType() != spec.outType ||
        typeOf(op.getOutputs()[0]).getElementType() != spec.outType)
      return std::nullopt;
    spec.biasAfterGradInputs = true;
    spec.writes = options.getGrad() == 0 ? kWriteDq : options.getGrad() == 1 ? kWriteDk : kWriteDv;
    return emitAttentionBackward(spec, name);
  }
  spec.writes = options.getLse() ? kWriteLse : kWriteOut;
  return emitAttentionForward(spec, name);
}

std::optional<CudaKernel> emitCudaRoutine(kernel::CallOp op, const std::string &name,
                                          size_t index) {
  if (op.getOutputs().size() != 1)
    return std::nullopt;
  const unsigned tag = static_cast<unsigned>(index + 1);
  switch (op.getOpType()) {
  case kernel::Routine::Transpose:
    return transposeKernel(op, name);
  case kernel::Routine::Slice:
    return sliceKernel(op, name);
  case kernel::Routine::Concat:
    return concatKernel(op, name);
  case kernel::Routine::Gather:
    return gatherKernel(op, name, tag);
  case kernel::Routine::GatherElements:
    return gatherElementsKernel(op, name, tag);
  case kernel::Routine::ScatterNd:
    return scatterNdKernel(op, name, tag);
  case kernel::Routine::Fp8Scale:
    return fp8ScaleKernel(op, name);
  case kernel::Routine::ReduceSum:
    return reduceKernel(op, name, /*mean=*/false);
  case kernel::Routine::ReduceMean:
    return reduceKernel(op, name, /*mean=*/true);
  case kernel::Routine::IntElementwise:
    return intElementwiseKernel(op, name);
  case kernel::Routine::Attention:
  case kernel::Routine::AttentionGrad:
    return attentionKernel(op, name);
  case kernel::Routine::BlockScale:
    return blockScaleKernel(op, name);
  case kernel::Routine::BlockQuantize:
    return blockQuantizeKernel(op, name);
  case kernel::Routine::BlockScaledGemm:
    return blockScaledGemmKernel(op, name);
  default:
    return std::nullopt;
  }
}

std::vector<std::optional<CudaKernel>> emitCudaRoutines(func::FuncOp func) {
  std::vector<std::optional<CudaKernel>> out;
  const std::string prefix = "mp_" + cudaIdentifier(func.getSymName());
  for (auto op : func.getBody().front().getOps<kernel::CallOp>()) {
    const std::string source = op.getOps().empty() ? kernel::stringifyRoutine(op.getOpType()).str()
                                                   : cast<StringAttr>(op.getOps()[0]).str();
    out.push_back(emitCudaRoutine(
        op, prefix + "_r" + std::to_string(out.size()) + "_" + cudaIdentifier(source), out.size()));
  }
  return out;
}

} // namespace mixprec::codegen
