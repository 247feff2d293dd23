//===- CudaEmitter.cpp - CUDA C++ from mpk kernels ------------------------===//
//
// A kernel body becomes a list of nodes, one FP32 value per point: a Load
// per input, a constant, a scalar function, a row reduction (a per-row
// value) or an amax. Element-wise kernels evaluate every node per point in
// a grid-stride loop. Row kernels give one block per row (rows in a
// grid-stride loop): one loop over the row per level of nested row
// reduction, accumulating in FP32 and reducing with warp shuffles and
// shared memory, then a last loop for the stores that walk the row; the
// stores of per-row values are written once by thread 0. Every loop
// recomputes what it needs from the loads, as the CPU backend's passes do.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaEmitter.h"
#include "codegen/Cuda/CudaRoutines.h"
#include "codegen/Cuda/CudaTypes.h"
#include "codegen/KernelBody.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "dialects/Kernel/IR/StepVisitor.h"
#include "runtime/format/CudaErrorRecord.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

using namespace mlir;

namespace mixprec::codegen {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Bytes of one element of `t` in device memory, if it has a CUDA type.
std::optional<int64_t> elementBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  if (!dtypeInfo(t))
    return std::nullopt;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// The CUDA expression of a scalar function (runtime/format/ScalarFns.def):
/// $0..$2 are the operands, $T the result dtype's helper suffix. Null: no
/// form (silu, which kernel bodies hold as a sigmoid and a mul). Each matches
/// the CPU backend's formula for the opcode the module writer gives it.
const char *cudaExpressionOf(graph::ScalarFn fn) {
  switch (fn) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, ...)                              \
  case graph::ScalarFn::Name:                                                                      \
    return cuda;
#include "runtime/format/ScalarFns.def"
  }
  return nullptr;
}

/// Fills `pattern`'s $0..$2 with `operands` and $T with `suffix`.
std::string fillPattern(const char *pattern, const std::vector<std::string> &operands,
                        const char *suffix) {
  std::string out;
  for (const char *p = pattern; *p; ++p) {
    if (p[0] == '$' && p[1] == 'T') {
      out += suffix;
      ++p;
    } else if (p[0] == '$' && p[1] >= '0' && p[1] <= '2') {
      out += operands[p[1] - '0'];
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

/// `expr` rounded to the dtype with helper suffix `suffix` (FP32: as is).
std::string roundTo(const std::string &suffix, const std::string &expr) {
  if (suffix == "f32")
    return expr;
  return "mp_round_" + suffix + "(" + expr + ")";
}

/// A float as a CUDA expression that reads back bit for bit.
std::string floatLiteral(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[64];
  if (!std::isfinite(v))
    std::snprintf(buf, sizeof buf, "__uint_as_float(0x%08xu)", bits);
  else
    std::snprintf(buf, sizeof buf, "%.9gf", v);
  std::string s = buf;
  // "1f" is no C literal: a float literal needs a '.' or an exponent.
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos)
    s.insert(s.size() - 1, ".0");
  return s;
}

/// The op's name for comments and errors: its mp name (loc) if it has one.
std::string describe(Operation &op) {
  std::string s = op.getName().getStringRef().str();
  if (auto loc = dyn_cast<NameLoc>(op.getLoc()))
    s += " \"" + loc.getName().str() + "\"";
  return s;
}

/// One value of the body, per point.
struct Node {
  enum Kind { Load, Const, Scalar, RowReduce, Amax } kind;
  std::string expr;              ///< Const/Scalar: the expression
  std::vector<int> operands;     ///< node indices
  int input = -1;                ///< Load: the kernel input
  std::vector<int64_t> strides;  ///< Load: per dim of the space
  bool isSum = false;            ///< RowReduce
  std::string suffix;            ///< RowReduce: its result dtype's helper suffix
  int level = 0;                 ///< nested row reductions it depends on
  std::string comment;
  Operation *op = nullptr;       ///< the body op it evaluates (null for a Load)
};

/// A yielded value written to a kernel result.
struct Store {
  int node;
  int result;
  std::vector<int64_t> strides;
  bool walksRow = false;
  std::string suffix;
};

class KernelPrinter {
public:
  KernelPrinter(kernel::KernelOp op, std::string name) : op(op), name(std::move(name)) {}
  /// Fails with an error at the op without a CUDA form: a body op, or the
  /// kernel for an input or result.
  FailureOr<CudaKernel> print();

private:
  LogicalResult build();
  void printParams();
  /// Marks in `need` what node `n` needs, stopping at row reductions done
  /// before (they are per-row variables).
  void markNeeded(int n, std::vector<bool> &need, int level) const;
  /// Prints the evaluation of the `need`ed nodes at the current point.
  void printNodes(const std::vector<bool> &need, const std::string &indent);
  /// Prints `x<d>` for the dims from `first` to `last` from `index`.
  void printCoords(size_t first, size_t last, const std::string &index,
                   const std::string &indent);
  std::string offset(const std::vector<int64_t> &strides) const;
  void printStore(const Store &s, const std::string &indent);
  void printElementwise();
  /// What an element-wise kernel evaluates per point, after printing its
  /// amax accumulators (and their shared memory) if it has any.
  std::vector<bool> printElementwiseSetup();
  /// Elements per thread of a vectorized element-wise kernel (see
  /// printVectorized), or 1 when the kernel is not one.
  int64_t vectorWidth();
  void printVectorized(int64_t width);
  void printRows();
  /// Thread-local amax accumulation at the current point.
  void printAmaxUpdates(const std::string &indent);
  void printAmaxFinish();

  kernel::KernelOp op;
  std::string name;
  std::vector<int64_t> space;
  size_t firstRowDim = 0;
  std::vector<Node> nodes;
  std::vector<Store> stores;
  std::vector<int> amaxStores; // indices into stores
  int maxLevel = 0;
  /// printNodes reads loads from the packs p<node> (vectorized kernels).
  bool vectorLoads = false;
  std::ostringstream os;
};

LogicalResult KernelPrinter::build() {
  space.assign(op.getShape().begin(), op.getShape().end());
  firstRowDim = space.size() - op.getRowDims();
  Block &body = op.getBody().front();
  llvm::DenseMap<Value, int> index;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    Node n{Node::Load};
    n.input = static_cast<int>(i);
    n.strides = broadcastStrides(typeOf(op.getInputs()[i]).getShape(), space);
    n.comment = "input " + std::to_string(i);
    if (!dtypeInfo(typeOf(arg).getElementType()))
      return op.emitError() << "kernel '" << name << "': input " << i
                            << " has no CUDA element type";
    index[arg] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  }
  for (Operation &inner : body.without_terminator()) {
    auto noForm = [&] {
      return inner.emitError() << "kernel '" << name << "': op " << describe(inner)
                               << " has no CUDA form";
    };
    if (inner.getNumResults() != 1)
      return noForm();
    Node n{Node::Scalar};
    n.comment = describe(inner);
    n.op = &inner;
    // mpk's generic ops say which function or reduction they are.
    if (auto generic = dyn_cast<kernel::ElementwiseOp>(inner))
      n.comment += " " + graph::stringifyScalarFn(generic.getFn()).str();
    if (auto reduce = dyn_cast<kernel::RowReduceOp>(inner))
      n.comment += " " + kernel::stringifyRowReduceKind(reduce.getKind()).str();
    for (Value v : inner.getOperands()) {
      n.operands.push_back(index.lookup(v));
      n.level = std::max(n.level, nodes[index.lookup(v)].level);
    }
    std::optional<DTypeInfo> result = dtypeInfo(typeOf(inner.getResult(0)).getElementType());
    if (std::optional<float> value = scalarConstantValue(inner)) {
      n.kind = Node::Const;
      n.expr = floatLiteral(*value);
    } else if (auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(inner)) {
      const char *pattern = cudaExpressionOf(elementwise.getScalarFn());
      if (!pattern || !result)
        return noForm();
      std::vector<std::string> names;
      for (int o : n.operands)
        names.push_back("v" + std::to_string(o));
      n.expr = fillPattern(pattern, names, result->suffix);
      // Every value is rounded to its IR dtype, as the module's schema says
      // and the CPU backend does; casts and quantizes round themselves.
      graph::ScalarFn fn = elementwise.getScalarFn();
      if (fn != graph::ScalarFn::Cast && fn != graph::ScalarFn::Quantize)
        n.expr = roundTo(result->suffix, n.expr);
    } else if (auto reduce = dyn_cast<kernel::RowReduceOp>(inner)) {
      if (!result)
        return noForm();
      n.kind = Node::RowReduce;
      n.suffix = result->suffix;
      n.isSum = reduce.getKind() == kernel::RowReduceKind::sum;
      n.level += 1;
      maxLevel = std::max(maxLevel, n.level);
    } else if (isa<kernel::AmaxOp>(inner)) {
      n.kind = Node::Amax;
    } else {
      return noForm();
    }
    index[inner.getResult(0)] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  }
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  for (auto [i, value, result] : llvm::enumerate(yield.getValues(), op.getResults())) {
    Store s;
    s.node = index.lookup(value);
    s.result = static_cast<int>(i);
    s.strides = broadcastStrides(typeOf(value).getShape(), space);
    for (size_t d = firstRowDim; d < space.size(); ++d)
      s.walksRow |= s.strides[d] != 0;
    std::optional<DTypeInfo> info = dtypeInfo(typeOf(result).getElementType());
    if (!info)
      return op.emitError() << "kernel '" << name << "': result " << i
                            << " has no CUDA element type";
    s.suffix = info->suffix;
    if (nodes[s.node].kind == Node::Amax) {
      if (!typeOf(result).getElementType().isF32())
        return op.emitError() << "kernel '" << name << "': an amax is stored to a non-f32 result";
      amaxStores.push_back(static_cast<int>(stores.size()));
    }
    stores.push_back(std::move(s));
  }
  // An amax is known only once the whole kernel has run: nothing inside the
  // kernel may read it (the CPU backend's register would be stale too).
  for (const Node &n : nodes)
    for (int o : n.operands)
      if (nodes[o].kind == Node::Amax)
        return n.op->emitError() << "kernel '" << name
                                 << "': an amax is read inside its own kernel (" << n.comment
                                 << ")";
  return success();
}

void KernelPrinter::markNeeded(int n, std::vector<bool> &need, int level) const {
  if (need[n])
    return;
  // A row reduction of an earlier pass is a per-row variable already.
  if (nodes[n].kind == Node::RowReduce && nodes[n].level <= level)
    return;
  need[n] = true;
  if (nodes[n].kind == Node::RowReduce || nodes[n].kind == Node::Amax)
    return markNeeded(nodes[n].operands[0], need, level);
  for (int o : nodes[n].operands)
    markNeeded(o, need, level);
}

std::string KernelPrinter::offset(const std::vector<int64_t> &strides) const {
  std::string s;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0)
      continue;
    if (!s.empty())
      s += " + ";
    s += "x" + std::to_string(d);
    if (strides[d] != 1)
      s += " * " + std::to_string(strides[d]) + "LL";
  }
  return s.empty() ? "0" : s;
}

void KernelPrinter::printCoords(size_t first, size_t last, const std::string &index,
                                const std::string &indent) {
  if (first == last)
    return;
  if (last - first == 1) {
    os << indent << "const long long x" << first << " = " << index << ";\n";
    return;
  }
  os << indent << "long long t = " << index << ";\n";
  for (size_t d = last; d-- > first;) {
    os << indent << "const long long x" << d << " = ";
    if (d == first)
      os << "t;\n";
    else
      os << "t % " << space[d] << "LL; t /= " << space[d] << "LL;\n";
  }
  os << indent << "(void)t;\n";
}

void KernelPrinter::printNodes(const std::vector<bool> &need, const std::string &indent) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    if (!need[i] || n.kind == Node::RowReduce || n.kind == Node::Amax)
      continue;
    os << indent << "const float v" << i << " = ";
    if (n.kind == Node::Load) {
      std::optional<DTypeInfo> info =
          dtypeInfo(typeOf(op.getInputs()[n.input]).getElementType());
      if (vectorLoads)
        os << "mp_load_" << info->suffix << "(p" << i << ".v, "
           << (n.strides.empty() || n.strides.back() == 0 ? "0" : "u") << ");";
      else
        os << "mp_load_" << info->suffix << "(in" << n.input << ", " << offset(n.strides)
           << ");";
    } else {
      os << n.expr << ";";
    }
    os << " // " << n.comment << "\n";
  }
}

void KernelPrinter::printStore(const Store &s, const std::string &indent) {
  os << indent << "mp_store_" << s.suffix << "(out" << s.result << ", " << offset(s.strides)
     << ", v" << s.node << "); // result " << s.result << "\n";
}

void KernelPrinter::printAmaxUpdates(const std::string &indent) {
  for (int si : amaxStores) {
    const Store &s = stores[si];
    os << indent << "amax" << s.result << " = mp_amax_update(amax" << s.result << ", v"
       << nodes[s.node].operands[0] << "); // " << nodes[s.node].comment << "\n";
  }
}

void KernelPrinter::printAmaxFinish() {
  for (int si : amaxStores) {
    const Store &s = stores[si];
    os << "  // The block's amax, then one atomicMax on the float's bits: the\n"
          "  // values are non-negative (or the canonical positive NaN, which\n"
          "  // compares above every other value), so their bits order as they do.\n";
    os << "  amax" << s.result << " = mp_block_amax(amax" << s.result << ", mp_smem);\n";
    os << "  if (threadIdx.x == 0)\n";
    os << "    atomicMax(reinterpret_cast<unsigned int *>(out" << s.result
       << "), __float_as_uint(amax" << s.result << "));\n";
  }
}

void KernelPrinter::printParams() {
  os << "extern \"C\" __global__ void " << name << "(";
  bool first = true;
  for (auto [i, v] : llvm::enumerate(op.getInputs())) {
    os << (first ? "" : ", ") << "const " << dtypeInfo(typeOf(v).getElementType())->ctype
       << " *in" << i;
    first = false;
  }
  for (auto [i, v] : llvm::enumerate(op.getResults())) {
    os << (first ? "" : ", ") << dtypeInfo(typeOf(v).getElementType())->ctype << " *out" << i;
    first = false;
  }
  os << ") {\n";
}

std::vector<bool> KernelPrinter::printElementwiseSetup() {
  std::vector<bool> need(nodes.size(), false);
  for (const Store &s : stores)
    markNeeded(s.node, need, 0);
  for (int si : amaxStores)
    need[stores[si].node] = true;
  if (!amaxStores.empty())
    os << "  __shared__ float mp_smem[32];\n";
  for (int si : amaxStores)
    os << "  float amax" << stores[si].result << " = 0.0f;\n";
  return need;
}

int64_t KernelPrinter::vectorWidth() {
  if (space.empty() || !stores.size())
    return 1;
  // Every access walks the innermost dim contiguously (stride 1) or not at
  // all (0: one value per chunk); then a chunk of `width` consecutive
  // innermost elements starts at a multiple of `width` in every walked
  // tensor (their outer strides are multiples of the innermost size), so
  // with 16-byte aligned buffers each pack is aligned to its size.
  int64_t widest = 1;
  auto fits = [&](const std::vector<int64_t> &strides, Type elementType) {
    if (strides.back() != 0 && strides.back() != 1)
      return false;
    std::optional<int64_t> bytes = elementBytes(elementType);
    if (!bytes)
      return false;
    if (strides.back() == 1)
      widest = std::max(widest, *bytes);
    return true;
  };
  for (const Node &n : nodes)
    if (n.kind == Node::Load &&
        !fits(n.strides, typeOf(op.getInputs()[n.input]).getElementType()))
      return 1;
  for (const Store &st : stores) {
    if (nodes[st.node].kind == Node::Amax)
      continue;
    if (st.strides.back() != 1 ||
        !fits(st.strides, typeOf(op.getResults()[st.result]).getElementType()))
      return 1;
  }
  const int64_t width = 16 / widest;
  return width > 1 && space.back() % width == 0 ? width : 1;
}

void KernelPrinter::printVectorized(int64_t width) {
  int64_t total = 1;
  for (int64_t d : space)
    total *= d;
  std::vector<bool> need = printElementwiseSetup();
  os << "  // " << width << " consecutive elements per thread: 16-byte (or narrower)\n"
     << "  // pack loads and stores.\n";
  os << "  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < "
     << total / width << "LL; c += (long long)gridDim.x * blockDim.x) {\n";
  printCoords(0, space.size(), "c * " + std::to_string(width) + "LL", "    ");
  auto packType = [&](Type elementType, int64_t count) {
    return "mp_pack<" + std::string(dtypeInfo(elementType)->ctype) + ", " +
           std::to_string(count) + ">";
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    if (!need[i] || n.kind != Node::Load)
      continue;
    Type t = typeOf(op.getInputs()[n.input]).getElementType();
    const int64_t count = n.strides.back() == 1 ? width : 1;
    os << "    const " << packType(t, count) << " p" << i << " = *reinterpret_cast<const "
       << packType(t, count) << " *>(in" << n.input << " + " << offset(n.strides) << ");\n";
  }
  for (const Store &st : stores)
    if (nodes[st.node].kind != Node::Amax)
      os << "    " << packType(typeOf(op.getResults()[st.result]).getElementType(), width)
         << " q" << st.result << ";\n";
  os << "#pragma unroll\n";
  os << "    for (int u = 0; u < " << width << "; ++u) {\n";
  vectorLoads = true;
  printNodes(need, "      ");
  vectorLoads = false;
  for (const Store &st : stores)
    if (nodes[st.node].kind != Node::Amax)
      os << "      mp_store_" << st.suffix << "(q" << st.result << ".v, u, v" << st.node
         << "); // result " << st.result << "\n";
  printAmaxUpdates("      ");
  os << "    }\n";
  for (const Store &st : stores)
    if (nodes[st.node].kind != Node::Amax) {
      std::string pack = packType(typeOf(op.getResults()[st.result]).getElementType(), width);
      os << "    *reinterpret_cast<" << pack << " *>(out" << st.result << " + "
         << offset(st.strides) << ") = q" << st.result << ";\n";
    }
  os << "  }\n";
  printAmaxFinish();
}

void KernelPrinter::printElementwise() {
  if (int64_t width = vectorWidth(); width > 1)
    return printVectorized(width);
  int64_t total = 1;
  for (int64_t d : space)
    total *= d;
  std::vector<bool> need = printElementwiseSetup();
  os << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < " << total
     << "LL; i += (long long)gridDim.x * blockDim.x) {\n";
  printCoords(0, space.size(), "i", "    ");
  printNodes(need, "    ");
  for (const Store &s : stores)
    if (nodes[s.node].kind != Node::Amax)
      printStore(s, "    ");
  printAmaxUpdates("    ");
  os << "  }\n";
  printAmaxFinish();
}

void KernelPrinter::printRows() {
  int64_t rows = 1, rowLength = 1;
  for (size_t d = 0; d < space.size(); ++d)
    (d < firstRowDim ? rows : rowLength) *= space[d];
  os << "  __shared__ float mp_smem[32];\n";
  for (int si : amaxStores)
    os << "  float amax" << stores[si].result << " = 0.0f;\n";
  os << "  for (long long row = blockIdx.x; row < " << rows << "LL; row += gridDim.x) {\n";
  os << "    // This row's outer coordinates.\n";
  printCoords(0, firstRowDim, "row", "    ");
  const std::string rowIndent = "      ";
  for (int level = 1; level <= maxLevel; ++level) {
    std::vector<bool> need(nodes.size(), false);
    std::vector<int> reductions;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].kind == Node::RowReduce && nodes[i].level == level) {
        reductions.push_back(static_cast<int>(i));
        markNeeded(nodes[i].operands[0], need, level - 1);
      }
    os << "    // Pass " << level << ": row reductions over " << rowLength << " values.\n";
    for (int r : reductions)
      os << "    float acc" << r << " = " << (nodes[r].isSum ? "0.0f" : "MP_NEG_INF") << ";\n";
    os << "    for (long long j = threadIdx.x; j < " << rowLength << "LL; j += blockDim.x) {\n";
    printCoords(firstRowDim, space.size(), "j", rowIndent);
    printNodes(need, rowIndent);
    for (int r : reductions)
      os << rowIndent << "acc" << r << " = "
         << (nodes[r].isSum ? "acc" + std::to_string(r) + " + v" : "mp_max(acc" +
                                                                        std::to_string(r) + ", v")
         << nodes[r].operands[0] << (nodes[r].isSum ? ";" : ");") << "\n";
    os << "    }\n";
    for (int r : reductions)
      os << "    const float v" << r << " = "
         << roundTo(nodes[r].suffix,
                    std::string("mp_block_") + (nodes[r].isSum ? "sum" : "max") + "(acc" +
                        std::to_string(r) + ", mp_smem)")
         << "; // " << nodes[r].comment << "\n";
  }
  // Stores of per-row values: once per row, at the row's first point.
  std::vector<bool> rowNeed(nodes.size(), false);
  bool anyRowStore = false;
  for (const Store &s : stores)
    if (!s.walksRow && nodes[s.node].kind != Node::Amax) {
      markNeeded(s.node, rowNeed, maxLevel);
      anyRowStore = true;
    }
  if (anyRowStore) {
    os << "    if (threadIdx.x == 0) {\n";
    for (size_t d = firstRowDim; d < space.size(); ++d)
      os << rowIndent << "const long long x" << d << " = 0;\n";
    printNodes(rowNeed, rowIndent);
    for (const Store &s : stores)
      if (!s.walksRow && nodes[s.node].kind != Node::Amax)
        printStore(s, rowIndent);
    os << "    }\n";
  }
  // The stores that walk the row, and the amax inputs.
  std::vector<bool> need(nodes.size(), false);
  bool anyWalk = !amaxStores.empty();
  for (const Store &s : stores)
    if (s.walksRow && nodes[s.node].kind != Node::Amax) {
      markNeeded(s.node, need, maxLevel);
      anyWalk = true;
    }
  for (int si : amaxStores)
    markNeeded(nodes[stores[si].node].operands[0], need, maxLevel);
  if (anyWalk) {
    os << "    // The row's outputs.\n";
    os << "    for (long long j = threadIdx.x; j < " << rowLength << "LL; j += blockDim.x) {\n";
    printCoords(firstRowDim, space.size(), "j", rowIndent);
    printNodes(need, rowIndent);
    for (const Store &s : stores)
      if (s.walksRow && nodes[s.node].kind != Node::Amax)
        printStore(s, rowIndent);
    printAmaxUpdates(rowIndent);
    os << "    }\n";
  }
  os << "  }\n";
  printAmaxFinish();
}

FailureOr<CudaKernel> KernelPrinter::print() {
  if (failed(build()))
    return failure();
  CudaKernel out;
  bool rowKernel = maxLevel > 0;
  int64_t total = 1, rows = 1, rowLength = 1;
  for (size_t d = 0; d < space.size(); ++d) {
    total *= space[d];
    (d < firstRowDim ? rows : rowLength) *= space[d];
  }
  os << "// mpk.kernel " << name << ": ops [";
  for (auto [i, a] : llvm::enumerate(op.getOps()))
    os << (i ? ", " : "") << cast<StringAttr>(a).str();
  os << "], shape [";
  for (size_t d = 0; d < space.size(); ++d)
    os << (d ? ", " : "") << space[d];
  os << "], row_dims " << op.getRowDims() << "\n";
  printParams();
  if (rowKernel)
    printRows();
  else
    printElementwise();
  os << "}\n";

  CudaLaunch &launch = out.launch;
  launch.rowKernel = rowKernel;
  if (rowKernel) {
    // Short rows get fewer threads, never fewer than one warp.
    launch.blockSize = 32;
    while (launch.blockSize < 256 && launch.blockSize < rowLength)
      launch.blockSize *= 2;
    launch.gridSize = total == 0 && rowLength != 0 ? 0 : std::min<int64_t>(rows, 65535);
  } else {
    // A vectorized kernel's threads take `width` elements each.
    const int64_t threads = total / vectorWidth();
    launch.blockSize = 256;
    launch.gridSize = std::min<int64_t>((threads + 255) / 256, 65535);
  }
  for (int si : amaxStores)
    launch.zeroedResults.push_back(stores[si].result);
  out.name = name;
  out.source = os.str();
  return out;
}

/// Emits each kernel step of a function; other steps are no kernels.
class KernelCollector : public kernel::StepVisitor {
public:
  KernelCollector(std::string prefix, std::vector<CudaKernel> &out)
      : prefix(std::move(prefix)), out(out) {}

protected:
  LogicalResult visitKernel(kernel::KernelOp op) override {
    std::string source = op.getOps().empty() ? "kernel" : cast<StringAttr>(op.getOps()[0]).str();
    std::string name = prefix + "_k" + std::to_string(count++) + "_" + cudaIdentifier(source);
    FailureOr<CudaKernel> kernel = emitCudaKernel(op, name);
    if (failed(kernel))
      return failure();
    out.push_back(std::move(*kernel));
    return success();
  }
  LogicalResult visitGemm(kernel::GemmOp) override { return success(); }
  LogicalResult visitCall(kernel::CallOp) override { return success(); }
  LogicalResult visitAlias(kernel::AliasOp) override { return success(); }
  LogicalResult visitOther(Operation *op) override {
    if (op->hasTrait<OpTrait::IsTerminator>() || op->hasTrait<OpTrait::ConstantLike>())
      return success();
    return op->emitError() << "op " << describe(*op)
                           << " is no mpk step (run --mp-lower-to-kernels first)";
  }

private:
  std::string prefix;
  std::vector<CudaKernel> &out;
  int count = 0;
};

} // namespace

std::string cudaIdentifier(StringRef text) {
  std::string s;
  for (char c : text)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

const std::string &cudaPrelude() {
  static const std::string prelude =
      R"(// Generated by mixprec: FP32 registers, each value rounded to its IR dtype
// (a bf16 value holds bf16 values), FP8 conversions saturating (satfinite).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define MP_NAN __uint_as_float(0x7fc00000u)
#define MP_NEG_INF __uint_as_float(0xff800000u)

// Loads: each element as FP32, exactly.
__device__ __forceinline__ float mp_load_f32(const float *p, long long i) { return p[i]; }
__device__ __forceinline__ float mp_load_f16(const __half *p, long long i) { return __half2float(p[i]); }
__device__ __forceinline__ float mp_load_bf16(const __nv_bfloat16 *p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float mp_load_e4m3(const __nv_fp8_storage_t *p, long long i) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(p[i], __NV_E4M3))); }
__device__ __forceinline__ float mp_load_e5m2(const __nv_fp8_storage_t *p, long long i) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(p[i], __NV_E5M2))); }
__device__ __forceinline__ float mp_load_i64(const long long *p, long long i) { return (float)p[i]; }
__device__ __forceinline__ float mp_load_i32(const int *p, long long i) { return (float)p[i]; }
__device__ __forceinline__ float mp_load_bool(const unsigned char *p, long long i) { return p[i] != 0 ? 1.0f : 0.0f; }

// Rounding to a dtype, the result kept as FP32 (casts).
__device__ __forceinline__ float mp_trunc(float x) {
  // Floats of magnitude 2^23 and up (and inf, NaN) are integers already;
  // x * 0 keeps the sign of a value truncated to zero.
  if (!(fabsf(x) < 8388608.0f)) return x;
  const float t = (float)(int)x;
  return t == 0.0f ? x * 0.0f : t;
}
__device__ __forceinline__ float mp_round_f32(float x) { return x; }
__device__ __forceinline__ float mp_round_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float mp_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float mp_round_e4m3(float x) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3), __NV_E4M3))); }
__device__ __forceinline__ float mp_round_e5m2(float x) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2), __NV_E5M2))); }
__device__ __forceinline__ float mp_round_i64(float x) { return mp_trunc(x); }
__device__ __forceinline__ float mp_round_i32(float x) { return mp_trunc(x); }
__device__ __forceinline__ float mp_round_bool(float x) { return x != 0.0f ? 1.0f : 0.0f; }

// FP8 quantization: satfinite(x * scale); NaN where x or scale is not finite.
__device__ __forceinline__ bool mp_finite(float x) { return !isnan(x) && !isinf(x); }
__device__ __forceinline__ float mp_quantize_e4m3(float x, float s) { return mp_finite(x) && mp_finite(s) ? mp_round_e4m3(x * s) : MP_NAN; }
__device__ __forceinline__ float mp_quantize_e5m2(float x, float s) { return mp_finite(x) && mp_finite(s) ? mp_round_e5m2(x * s) : MP_NAN; }

// A pack of V elements, loaded or stored in one access of its size (up to
// 16 bytes) by vectorized element-wise kernels.
template <typename T, int V> struct alignas(sizeof(T) * V) mp_pack { T v[V]; };

// Stores: one rounding to the tensor's dtype (FP8 saturating).
__device__ __forceinline__ void mp_store_f32(float *p, long long i, float x) { p[i] = x; }
__device__ __forceinline__ void mp_store_f16(__half *p, long long i, float x) { p[i] = __float2half_rn(x); }
__device__ __forceinline__ void mp_store_bf16(__nv_bfloat16 *p, long long i, float x) { p[i] = __float2bfloat16_rn(x); }
__device__ __forceinline__ void mp_store_e4m3(__nv_fp8_storage_t *p, long long i, float x) { p[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
__device__ __forceinline__ void mp_store_e5m2(__nv_fp8_storage_t *p, long long i, float x) { p[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); }
__device__ __forceinline__ void mp_store_i64(long long *p, long long i, float x) { p[i] = (long long)x; }
__device__ __forceinline__ void mp_store_i32(int *p, long long i, float x) { p[i] = (int)x; }
__device__ __forceinline__ void mp_store_bool(unsigned char *p, long long i, float x) { p[i] = x != 0.0f ? 1 : 0; }

// The CPU backend's formulas.
__device__ __forceinline__ float mp_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}
// GELU (erf form) as 0.5 x erfc(-x / sqrt 2): no cancellation as erf nears
// -1 (with 1 + erff(z), one ulp of erff at x = -2.5 is 13 ulps of the
// result); the argument's rounding is corrected to first order (z + dz is
// -x / sqrt 2 within 2^-47, erfc(z + dz) = erfc(z) - 2/sqrt(pi) e^(-z^2)
// dz), since erfc's tail multiplies a relative error of z by 2 z^2.
__device__ __forceinline__ float mp_gelu_erf(float x) {
  const float z = -x * 0.70710678118654752440f;
  // No correction for an infinite x (its dz is NaN): erfcf(-+inf) is exact.
  const float dz = x - x == 0.0f ? fmaf(-x, 0.70710678118654752440f, -z) + -x * 1.2101617e-08f
                                 : 0.0f;
  const float e = fmaf(-1.12837916709551257390f * expf(-z * z), dz, erfcf(z));
  return 0.5f * x * e;
}
__device__ __forceinline__ float mp_gelu_tanh(float x) {
  const float u2 = 1.59576912160573071176f * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-u2));
}
// NaN wins, as numpy.maximum and the CPU backend's row max.
__device__ __forceinline__ float mp_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float mp_min(float a, float b) { return (a < b || a != a) ? a : b; }
// runtime/kernels/ScalarFunctions.h's formulas, one rounding after them.
__device__ __forceinline__ float mp_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)); }
__device__ __forceinline__ float mp_softplus(float x) { return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
__device__ __forceinline__ float mp_mish(float x) { return x * tanhf(mp_softplus(x)); }
__device__ __forceinline__ float mp_hard_sigmoid(float x, float alpha, float beta) {
  const float y = alpha * x + beta;
  return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
}
__device__ __forceinline__ float mp_hard_swish(float x) { return x * mp_hard_sigmoid(x, 1.0f / 6.0f, 0.5f); }
__device__ __forceinline__ float mp_prelu(float x, float slope) { return x < 0.0f ? slope * x : x; }
__device__ __forceinline__ float mp_floor_mod(float x, float y) { const float m = fmodf(x, y); if (y == 0.0f) return m; if (m != 0.0f) return ((y < 0.0f) != (m < 0.0f)) ? m + y : m; return copysignf(0.0f, y); }
__device__ __forceinline__ float mp_elu(float x, float alpha) { return x < 0.0f ? alpha * expm1f(x) : x; }
__device__ __forceinline__ float mp_selu(float x, float alpha, float gamma) { return gamma * (x <= 0.0f ? alpha * expm1f(x) : x); }
__device__ __forceinline__ float mp_amax_update(float acc, float x) {
  return isnan(x) || isnan(acc) ? MP_NAN : fmaxf(acc, fabsf(x));
}

// Block reductions (blockDim.x a multiple of 32, at most 1024): each warp
// reduces with shuffles, warp 0's lanes combine the warps' results through
// shared memory, and every thread gets the total.
__device__ __forceinline__ float mp_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float mp_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = mp_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float mp_block_sum(float v, float *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = mp_warp_sum(v);
  __syncthreads(); // smem's previous use is over
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  return mp_warp_sum(lane < warps ? smem[lane] : 0.0f);
}
__device__ __forceinline__ float mp_block_max(float v, float *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = mp_warp_max(v);
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  return mp_warp_max(lane < warps ? smem[lane] : MP_NEG_INF);
}
__device__ __forceinline__ float mp_block_amax(float v, float *smem) {
  // Values are >= 0 or NaN; mp_max keeps a NaN, made canonical.
  v = mp_block_max(v, smem);
  return isnan(v) ? MP_NAN : v;
}

// The int_elementwise routine's integer ops (runtime/kernels/IntElementwise.h):
// int64, wrapping as two's complement (computed unsigned), x / 0 = x % 0 = 0.
__device__ __forceinline__ long long mp_i64_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long mp_i64_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long mp_i64_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ long long mp_i64_neg(long long a) { return (long long)(0ULL - (unsigned long long)a); }
__device__ __forceinline__ long long mp_i64_abs(long long a) { return a < 0 ? mp_i64_neg(a) : a; }
__device__ __forceinline__ long long mp_i64_div(long long a, long long b) { return b == 0 ? 0LL : (b == -1 ? mp_i64_neg(a) : a / b); }
__device__ __forceinline__ long long mp_i64_fmod(long long a, long long b) { return (b == 0 || b == -1) ? 0LL : a % b; }
__device__ __forceinline__ long long mp_i64_mod(long long a, long long b) { const long long r = mp_i64_fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
__device__ __forceinline__ long long mp_i64_pow(long long a, long long e) {
  if (e < 0) return a == 1 ? 1LL : (a == -1 ? ((e & 1) ? -1LL : 1LL) : 0LL);
  unsigned long long r = 1ULL, b = (unsigned long long)a;
  for (unsigned long long k = (unsigned long long)e; k; k >>= 1) { if (k & 1ULL) r *= b; b *= b; }
  return (long long)r;
}
__device__ __forceinline__ long long mp_i64_powf(long long a, float e) {
  const double r = pow((double)a, (double)e);
  if (isnan(r)) return 0LL;
  if (r >= 9223372036854775808.0) return 9223372036854775807LL;
  if (r < -9223372036854775808.0) return -9223372036854775807LL - 1LL;
  return (long long)trunc(r);
}
)" + std::string(runtime::kCudaErrorRecordSource);
  return prelude;
}

std::vector<std::string> cudaEmitterNvrtcOptions() { return {"--fmad=false"}; }

FailureOr<CudaKernel> emitCudaKernel(kernel::KernelOp op, const std::string &name) {
  return KernelPrinter(op, name).print();
}

FailureOr<std::vector<CudaKernel>> emitCudaKernels(func::FuncOp func) {
  std::vector<CudaKernel> kernels;
  KernelCollector collector("mp_" + cudaIdentifier(func.getSymName()), kernels);
  for (Operation &op : func.getBody().front())
    if (failed(collector.visit(&op)))
      return failure();
  return kernels;
}

std::string cudaProgramSource(const std::vector<CudaKernel> &kernels) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << cudaPrelude();
  for (const CudaKernel &k : kernels) {
    os << "\n// launch: grid " << k.launch.gridSize << ", block " << k.launch.blockSize;
    for (int r : k.launch.zeroedResults)
      os << ", out" << r << " zeroed first";
    if (k.launch.errorRecord)
      os << ", the error record last";
    os << "\n" << k.source;
  }
  return text;
}

LogicalResult translateModuleToCuda(ModuleOp module, llvm::raw_ostream &os) {
  std::vector<CudaKernel> kernels;
  for (auto func : module.getOps<func::FuncOp>()) {
    FailureOr<std::vector<CudaKernel>> emitted = emitCudaKernels(func);
    if (failed(emitted))
      return failure();
    kernels.insert(kernels.end(), std::make_move_iterator(emitted->begin()),
                   std::make_move_iterator(emitted->end()));
  }
  for (auto func : module.getOps<func::FuncOp>())
    for (std::optional<CudaKernel> &routine : emitCudaRoutines(func))
      if (routine)
        kernels.push_back(std::move(*routine));
  os << cudaProgramSource(kernels);
  return success();
}

} // namespace mixprec::codegen
