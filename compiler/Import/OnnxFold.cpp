//===- OnnxFold.cpp - compile-time evaluation -------------------------------===//
//
// The ops of shape subgraphs (ConstantOfShape, Range, Size, Expand, ...)
// and the evaluator that folds any node whose inputs are all compile-time
// constants, so that the mp graph holds only tensor compute.
//
// The evaluator (evaluateNode) is a table keyed by op type, one function
// per op or family, with ONNX semantics on the importer's element types
// (f32, i64, i32, i1) and numpy broadcasting. Floats are computed in FP32,
// as onnxruntime's constant folding does; integers wrap like the run time.
// An element-wise op with an mp form is computed as that mp op, by the
// interpreter's reference semantics (compiler::evaluateOnConstants): the
// same code that runs it at run time and folds it in --mp-fold-constants.
// What stays here is what mp has no op for: DOUBLE values, ONNX's Cast
// saturation, shapes, data movement, reductions and Range.
// DOUBLE (f64) values exist only here: a Cast to DOUBLE of a constant, and
// the few ops that compute on them in double (kDoubleOps), until a Cast
// back; mixprec has no DOUBLE tensors at run time.
// Importer::tryFold runs it from convertNode before the op's converter.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"
#include "compiler/Interpreter/ConstantFolding.h"
#include "runtime/kernels/IntElementwise.h"
#include "runtime/kernels/ScalarFunctions.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Values of the evaluator
//===----------------------------------------------------------------------===//

namespace {

/// A tensor of the evaluator: integers and bools in `ints`, f32 in
/// `floats`, f64 in `doubles`.
struct Tensor {
  Shape shape;
  Type elem;
  SmallVector<int64_t, 0> ints;
  SmallVector<float, 0> floats;
  SmallVector<double, 0> doubles;

  bool isDouble() const { return elem.isF64(); }
  bool isFloat() const { return isa<FloatType>(elem) && !isDouble(); }
  bool isBool() const { return elem.isInteger(1); }
  int64_t size() const { return shapes::numElements(shape); }
};

/// How an op behaves when its result would be large: moves of data and
/// float compute have an mp form at run time; the others only exist at
/// compile time. Moves of float constants (Transpose, Reshape, Gather...)
/// are never folded: those constants are weights, whose layout and lookups
/// the converters and the compiler fold into the ops that read them (a
/// transposed weight becomes mp.linear's transpose_weight, an embedding
/// lookup stays an FP32 gather of the one stored table). Expand, Tile and
/// Trilu of float constants (attention masks) fold as computations do.
enum class Kind { Move, Compute, Static };

class Eval;
/// The evaluation of one node: success with the outputs in Eval::outputs,
/// or failure with Eval::error saying why the node is invalid (empty: the
/// node is left to its converter).
using EvalFn = LogicalResult (*)(Eval &);

/// An attribute the evaluator reads: its type, and whether it is a flag
/// (0 or 1). checkAttributes checks them all before the evaluation, so
/// reading one cannot fail.
struct AttrRule {
  const char *name;
  onnx::AttributeProto::AttributeType type;
  bool flag;
};
constexpr auto kInt = onnx::AttributeProto::INT, kInts = onnx::AttributeProto::INTS;
const AttrRule kAttrRules[] = {
    {"allowzero", kInt, true},
    {"axes", kInts, false},
    {"axis", kInt, false},
    {"end", kInt, false},
    {"ends", kInts, false},
    {"exclusive", kInt, true},
    {"fmod", kInt, true},
    {"keepdims", kInt, true},
    {"noop_with_empty_axes", kInt, true},
    {"perm", kInts, false},
    {"reverse", kInt, true},
    {"select_last_index", kInt, true},
    {"shape", kInts, false},
    {"start", kInt, false},
    {"starts", kInts, false},
    {"to", kInt, false},
    {"upper", kInt, true},
    {"value", onnx::AttributeProto::TENSOR, false},
};

/// The evaluation of one node.
class Eval {
public:
  Eval(MLIRContext &ctx, const onnx::NodeProto &node, int64_t opset,
       ArrayRef<DenseElementsAttr> inputs, int64_t limit)
      : ctx(ctx), node(node), opset(opset), inputs(inputs), limit(limit) {}

  /// Records why the node is invalid: the fold fails with that message.
  LogicalResult fail(const llvm::Twine &message) {
    error = message.str();
    return failure();
  }
  /// Leaves the node to its converter (too large, a type left to it).
  LogicalResult notFoldable() {
    error.clear();
    return failure();
  }

  // --- Inputs --------------------------------------------------------------
  bool has(size_t i) const { return i < inputs.size() && inputs[i]; }
  size_t count() const { return inputs.size(); }
  /// Fails unless inputs #0 to #n-1 are all present.
  LogicalResult require(size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (!has(i))
        return fail("missing required input #" + llvm::Twine(i));
    return success();
  }
  /// The constant of present input i (its values are not read).
  DenseElementsAttr attr(size_t i) const { return inputs[i]; }
  Shape shapeOf(size_t i) const { return Shape(attr(i).getType().getShape()); }
  Type elemOf(size_t i) const { return attr(i).getElementType(); }
  /// The values of present input i; not foldable past the limit.
  FailureOr<Tensor> in(size_t i) {
    DenseElementsAttr a = attr(i);
    Tensor t;
    t.shape = Shape(a.getType().getShape());
    t.elem = a.getElementType();
    if (t.size() > limit)
      return notFoldable();
    if (t.isDouble())
      t.doubles.assign(a.getValues<double>().begin(), a.getValues<double>().end());
    else if (t.isFloat())
      t.floats = floatValues(a);
    else
      t.ints = intValues(a);
    return t;
  }
  /// The values of a required integer input of at most one dim (axes,
  /// shapes, k).
  FailureOr<SmallVector<int64_t>> ints(size_t i, llvm::StringRef role) {
    if (failed(require(i + 1)))
      return failure();
    DenseElementsAttr a = attr(i);
    if (!a.getElementType().isInteger(64) && !a.getElementType().isInteger(32))
      return fail("input '" + role + "' must be INT64 or INT32, got " +
                  elementTypeName(a.getElementType()));
    if (a.getType().getRank() > 1)
      return fail("input '" + role + "' must be 1-D, got shape " +
                  shapes::formatShape(a.getType().getShape()));
    if (a.getNumElements() > limit)
      return notFoldable();
    return intValues(a);
  }
  /// A required one-element integer input (Range's bounds, CumSum's axis,
  /// Trilu's k).
  FailureOr<int64_t> scalarInt(size_t i, llvm::StringRef role) {
    if (failed(require(i + 1)))
      return failure();
    DenseElementsAttr a = attr(i);
    if (!isa<IntegerType>(a.getElementType()) || a.getElementType().isInteger(1) ||
        a.getNumElements() != 1)
      return fail("input '" + role + "' must be one INT64 or INT32 value, got " +
                  elementTypeName(a.getElementType()) + " " +
                  shapes::formatShape(a.getType().getShape()));
    return intValues(a).front();
  }

  // --- Attributes ----------------------------------------------------------
  /// Fails when an attribute the evaluator reads has the wrong type, or a
  /// flag is neither 0 nor 1.
  LogicalResult checkAttributes() {
    for (const onnx::AttributeProto &a : node.attribute())
      for (const AttrRule &rule : kAttrRules) {
        if (a.name() != rule.name)
          continue;
        if (a.type() != rule.type && a.type() != onnx::AttributeProto::UNDEFINED)
          return fail("attribute '" + a.name() + "' has the wrong type");
        if (rule.flag && a.i() != 0 && a.i() != 1)
          return fail("attribute '" + a.name() + "' must be 0 or 1, got " + llvm::Twine(a.i()));
      }
    return success();
  }
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  std::optional<int64_t> attrIntOpt(llvm::StringRef name) const {
    if (const auto *a = findAttr(name))
      return a->i();
    return std::nullopt;
  }
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const {
    return attrIntOpt(name).value_or(dflt);
  }
  bool attrBool(llvm::StringRef name, bool dflt) const { return attrInt(name, dflt) == 1; }
  std::optional<SmallVector<int64_t>> attrInts(llvm::StringRef name) const {
    if (const auto *a = findAttr(name))
      return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
    return std::nullopt;
  }

  // --- Results -------------------------------------------------------------
  /// Not foldable when `shape` is over the element limit.
  LogicalResult reserve(ArrayRef<int64_t> shape) {
    int64_t n = shapes::numElements(shape);
    if (n < 0 || n > limit)
      return notFoldable();
    return success();
  }
  /// A result of zeros, within the limit.
  FailureOr<Tensor> make(ArrayRef<int64_t> shape, Type elem) {
    if (failed(reserve(shape)))
      return failure();
    Tensor t;
    t.shape = Shape(shape);
    t.elem = elem;
    if (t.isDouble())
      t.doubles.resize(t.size());
    else if (t.isFloat())
      t.floats.resize(t.size());
    else
      t.ints.resize(t.size());
    return t;
  }
  LogicalResult result(const Tensor &t) {
    if (t.isDouble()) {
      outputs.push_back(DenseElementsAttr::get(RankedTensorType::get(t.shape, t.elem),
                                               ArrayRef<double>(t.doubles)));
      return success();
    }
    outputs.push_back(t.isFloat() ? makeF32Attr(ctx, t.shape, t.floats)
                                  : makeIntAttr(t.shape, t.elem, t.ints));
    return success();
  }
  /// Output: input i's values re-typed to `shape` (Reshape and friends).
  LogicalResult reshaped(size_t i, ArrayRef<int64_t> shape) {
    if (failed(reserve(shape)))
      return failure();
    DenseElementsAttr a = attr(i);
    outputs.push_back(a.reshape(RankedTensorType::get(shape, a.getElementType())));
    return success();
  }

  Type i64() const { return IntegerType::get(&ctx, 64); }
  Type i1() const { return IntegerType::get(&ctx, 1); }

  FailureOr<int64_t> axis(int64_t a, int64_t rank, llvm::StringRef what) {
    if (a < -rank || a >= rank)
      return fail(what + " " + llvm::Twine(a) + " is out of range [" + llvm::Twine(-rank) + ", " +
                  llvm::Twine(rank - 1) + "] for rank " + llvm::Twine(rank));
    return a < 0 ? a + rank : a;
  }

  MLIRContext &ctx;
  const onnx::NodeProto &node;
  int64_t opset;
  ArrayRef<DenseElementsAttr> inputs;
  int64_t limit;
  SmallVector<DenseElementsAttr, 1> outputs;
  std::string error;
};

//===----------------------------------------------------------------------===//
// Indexing helpers
//===----------------------------------------------------------------------===//

/// For each element of `out` (row-major), the flat index of the element of
/// a tensor of shape `in` that numpy broadcasting reads.
SmallVector<int64_t, 0> broadcastSources(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  size_t rank = out.size(), lead = rank - in.size();
  SmallVector<int64_t> inStrides = stridesOf(in), strides(rank, 0);
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  int64_t n = shapes::numElements(out);
  SmallVector<int64_t, 0> src(n);
  SmallVector<int64_t> idx(rank, 0);
  int64_t at = 0;
  for (int64_t flat = 0; flat < n; ++flat) {
    src[flat] = at;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      at += strides[d];
      if (++idx[d] < out[d])
        break;
      at -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
  return src;
}

/// The broadcast shape of inputs [first, count), all present.
FailureOr<Shape> broadcastAll(Eval &e, size_t first = 0) {
  Shape s = e.shapeOf(first);
  for (size_t i = first + 1; i < e.count(); ++i) {
    ShapeOrError b = shapes::broadcastShapes(s, e.shapeOf(i));
    if (!b.ok())
      return e.fail(b.error);
    s = b.shape;
  }
  return s;
}

/// Fails unless inputs [first, count), all present, share one element type.
LogicalResult requireSameType(Eval &e, size_t first = 0) {
  for (size_t i = first + 1; i < e.count(); ++i)
    if (e.elemOf(i) != e.elemOf(first))
      return e.fail("operand element types differ: " + elementTypeName(e.elemOf(first)) +
                    " and " + elementTypeName(e.elemOf(i)));
  return success();
}

LogicalResult requireFloatInput(Eval &e, size_t i) {
  if (!isa<FloatType>(e.elemOf(i)))
    return e.fail("input #" + llvm::Twine(i) + " must be FLOAT, got " +
                  elementTypeName(e.elemOf(i)));
  return success();
}

LogicalResult requireBoolInput(Eval &e, size_t i) {
  if (!e.elemOf(i).isInteger(1))
    return e.fail("input #" + llvm::Twine(i) + " must be BOOL, got " +
                  elementTypeName(e.elemOf(i)));
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

/// Wrapping integer arithmetic (two's complement, as the run time) of the
/// ops that have no mp form here (Sum, reductions, CumSum, Range).
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

using DoubleBinary = std::function<double(double, double)>;
using DoubleUnary = std::function<double(double)>;

/// Output: the node's value as the mp op OpT computes it from the constant
/// inputs (result element type `elem`, the inputs' broadcast shape), by the
/// interpreter's reference semantics (compiler::evaluateOnConstants): the
/// evaluator keeps no formula of its own for what an mp op computes.
template <typename OpT> LogicalResult computeAsMpOp(Eval &e, Type elem) {
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s) || failed(e.reserve(*s)))
    return failure();
  e.ctx.getOrLoadDialect<graph::GraphDialect>(); // evaluateNode's callers need not load it
  Location loc = UnknownLoc::get(&e.ctx);
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockBegin(scratch->getBody());
  SmallVector<Value> operands;
  SmallVector<DenseElementsAttr> values;
  for (size_t i = 0; i < e.count(); ++i) {
    values.push_back(e.attr(i));
    operands.push_back(b.create<graph::ConstantOp>(loc, values.back()).getResult());
  }
  Operation *op = b.create<OpT>(loc, TypeRange{RankedTensorType::get(*s, elem)}, operands,
                                ArrayRef<NamedAttribute>{});
  std::string error;
  FailureOr<SmallVector<DenseElementsAttr, 1>> results =
      compiler::evaluateOnConstants(op, values, e.limit, error);
  if (failed(results))
    return error.empty() ? e.notFoldable() : e.fail(error);
  e.outputs.push_back(results->front());
  return success();
}

/// A broadcasting binary op whose result has its operands' type: the mp op
/// OpT; DOUBLE (which has no mp tensors) by `onDoubles`, unfolded without.
template <typename OpT> LogicalResult binary(Eval &e, const DoubleBinary &onDoubles = nullptr) {
  if (failed(e.require(2)) || failed(requireSameType(e)))
    return failure();
  Type elem = e.elemOf(0);
  if (elem.isInteger(1))
    return e.fail("operand type " + elementTypeName(elem) + " is not supported");
  if (!elem.isF64())
    return computeAsMpOp<OpT>(e, elem);
  if (!onDoubles)
    return e.notFoldable();
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s))
    return failure();
  FailureOr<Tensor> a = e.in(0), b = e.in(1), r = e.make(*s, elem);
  if (failed(a) || failed(b) || failed(r))
    return failure();
  SmallVector<int64_t, 0> ia = broadcastSources(a->shape, *s), ib = broadcastSources(b->shape, *s);
  for (size_t k = 0; k < ia.size(); ++k)
    r->doubles[k] = onDoubles(a->doubles[ia[k]], b->doubles[ib[k]]);
  return e.result(*r);
}

/// A broadcasting comparison (Equal, Less, ...): the mp op OpT, BOOL result.
template <typename OpT> LogicalResult compare(Eval &e) {
  if (failed(e.require(2)) || failed(requireSameType(e)))
    return failure();
  return computeAsMpOp<OpT>(e, e.i1());
}

/// A unary op whose result has its operand's type: the mp op OpT, on
/// integers too where `onIntegers`; DOUBLE by `onDoubles`, unfolded without.
template <typename OpT>
LogicalResult unary(Eval &e, bool onIntegers, const DoubleUnary &onDoubles = nullptr) {
  if (failed(e.require(1)))
    return failure();
  Type elem = e.elemOf(0);
  if (elem.isF64()) {
    if (!onDoubles)
      return e.notFoldable();
    FailureOr<Tensor> x = e.in(0), r = e.make(e.shapeOf(0), elem);
    if (failed(x) || failed(r))
      return failure();
    for (int64_t k = 0; k < x->size(); ++k)
      r->doubles[k] = onDoubles(x->doubles[k]);
    return e.result(*r);
  }
  if (elem.isInteger(1) || (isa<IntegerType>(elem) && !onIntegers))
    return e.fail("input #0 has type " + elementTypeName(elem) + ", which " +
                  escapeControls(e.node.op_type()) + " does not take");
  return computeAsMpOp<OpT>(e, elem);
}

/// Fails when an integer divisor (input #1) holds a zero that the result
/// reads: the run time gives 0 there (numpy's answer), but a constant zero
/// divisor is an error in the model (onnxruntime traps).
LogicalResult rejectZeroDivisor(Eval &e, llvm::StringRef message) {
  if (failed(e.require(2)) || failed(requireSameType(e)))
    return failure();
  Type elem = e.elemOf(1);
  if (!isa<IntegerType>(elem) || elem.isInteger(1))
    return success();
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s))
    return failure();
  if (shapes::numElements(*s) == 0)
    return success();
  FailureOr<Tensor> divisor = e.in(1);
  if (failed(divisor))
    return failure();
  if (llvm::is_contained(divisor->ints, 0))
    return e.fail(message);
  return success();
}

LogicalResult evalAdd(Eval &e) {
  return binary<graph::AddOp>(e, [](double a, double b) { return a + b; });
}
LogicalResult evalSub(Eval &e) {
  return binary<graph::SubOp>(e, [](double a, double b) { return a - b; });
}
LogicalResult evalMul(Eval &e) {
  return binary<graph::MulOp>(e, [](double a, double b) { return a * b; });
}

/// Div: integers truncate toward zero, as onnxruntime's (C++ `/`), and
/// INT64_MIN / -1 wraps to itself; a zero divisor is an error.
LogicalResult evalDiv(Eval &e) {
  if (failed(rejectZeroDivisor(e, "integer division by zero in constant folding")))
    return failure();
  return binary<graph::DivOp>(e, [](double a, double b) { return a / b; });
}

/// Mod: fmod=0 takes the divisor's sign (mp.mod, numpy.mod), fmod=1 the
/// dividend's (mp.fmod, C fmod); a zero integer divisor is an error.
LogicalResult evalMod(Eval &e) {
  if (failed(rejectZeroDivisor(e, "integer modulo by zero in constant folding")))
    return failure();
  if (e.attrBool("fmod", false))
    return binary<graph::FmodOp>(e);
  return binary<graph::ModOp>(e);
}

/// Pow: the exponent may have another type; the result has the base's.
/// Integer powers that overflow are an error here (the run time wraps).
LogicalResult evalPow(Eval &e) {
  if (failed(e.require(2)))
    return failure();
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s))
    return failure();
  FailureOr<Tensor> a = e.in(0), b = e.in(1);
  if (failed(a) || failed(b))
    return failure();
  if (a->isBool() || b->isBool())
    return e.fail("Pow does not take BOOL operands");
  FailureOr<Tensor> r = e.make(*s, a->elem);
  if (failed(r))
    return failure();
  SmallVector<int64_t, 0> ia = broadcastSources(a->shape, *s), ib = broadcastSources(b->shape, *s);
  for (size_t k = 0; k < ia.size(); ++k) {
    double y = b->isFloat() ? b->floats[ib[k]] : static_cast<double>(b->ints[ib[k]]);
    if (a->isFloat()) {
      r->floats[k] = b->isFloat() ? std::pow(a->floats[ia[k]], b->floats[ib[k]])
                                  : static_cast<float>(std::pow(double(a->floats[ia[k]]), y));
    } else {
      double v = std::pow(static_cast<double>(a->ints[ia[k]]), y);
      if (!(std::fabs(v) < 9.2e18))
        return e.fail("integer power overflows in constant folding");
      // An integer exponent: the exact power (the run time's), not the
      // double's rounding past 2^53.
      r->ints[k] = b->isFloat() ? static_cast<int64_t>(v)
                                : runtime::cpu::intscalar::pow(a->ints[ia[k]], b->ints[ib[k]]);
    }
  }
  return e.result(*r);
}

LogicalResult evalNeg(Eval &e) { return unary<graph::NegOp>(e, true, [](double x) { return -x; }); }
LogicalResult evalAbs(Eval &e) {
  return unary<graph::AbsOp>(e, true, [](double x) { return std::fabs(x); });
}

/// Sign: mp.sign on floats; integers (mp.sign takes none) here.
LogicalResult evalSign(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Type elem = e.elemOf(0);
  if (!isa<IntegerType>(elem) || elem.isInteger(1))
    return unary<graph::SignOp>(e, false);
  FailureOr<Tensor> x = e.in(0), r = e.make(e.shapeOf(0), elem);
  if (failed(x) || failed(r))
    return failure();
  for (int64_t k = 0; k < x->size(); ++k)
    r->ints[k] = (x->ints[k] > 0) - (x->ints[k] < 0);
  return e.result(*r);
}
LogicalResult evalSqrt(Eval &e) {
  return unary<graph::SqrtOp>(e, false, [](double x) { return std::sqrt(x); });
}
LogicalResult evalReciprocal(Eval &e) { return unary<graph::ReciprocalOp>(e, false); }
// The transcendental functions of exported shape and position arithmetic
// (T5's log-spaced relative-position buckets, rotary angles), in FP32 as
// onnxruntime's constant folding computes them.
LogicalResult evalLog(Eval &e) {
  return unary<graph::LogOp>(e, false, [](double x) { return std::log(x); });
}
LogicalResult evalExp(Eval &e) {
  return unary<graph::ExpOp>(e, false, [](double x) { return std::exp(x); });
}
LogicalResult evalSin(Eval &e) { return unary<graph::SinOp>(e, false); }
LogicalResult evalCos(Eval &e) { return unary<graph::CosOp>(e, false); }
LogicalResult evalTanh(Eval &e) { return unary<graph::TanhOp>(e, false); }
LogicalResult evalErf(Eval &e) { return unary<graph::ErfOp>(e, false); }
/// Round: halves to even, as ONNX says.
LogicalResult evalRound(Eval &e) { return unary<graph::RoundOp>(e, false); }
LogicalResult evalFloor(Eval &e) { return unary<graph::FloorOp>(e, false); }
LogicalResult evalCeil(Eval &e) { return unary<graph::CeilOp>(e, false); }

LogicalResult evalIsNaN(Eval &e) {
  if (failed(e.require(1)) || failed(requireFloatInput(e, 0)))
    return failure();
  return computeAsMpOp<graph::IsNaNOp>(e, e.i1());
}

LogicalResult evalEqual(Eval &e) { return compare<graph::EqualOp>(e); }
LogicalResult evalLess(Eval &e) { return compare<graph::LessOp>(e); }
LogicalResult evalLessOrEqual(Eval &e) { return compare<graph::LessOrEqualOp>(e); }
LogicalResult evalGreater(Eval &e) { return compare<graph::GreaterOp>(e); }
LogicalResult evalGreaterOrEqual(Eval &e) { return compare<graph::GreaterOrEqualOp>(e); }

/// And, Or, Xor (`arity` 2) and Not (1) on BOOL.
template <typename OpT> LogicalResult logic(Eval &e, size_t arity) {
  if (failed(e.require(arity)))
    return failure();
  for (size_t i = 0; i < arity; ++i)
    if (failed(requireBoolInput(e, i)))
      return failure();
  return computeAsMpOp<OpT>(e, e.i1());
}
LogicalResult evalAnd(Eval &e) { return logic<graph::AndOp>(e, 2); }
LogicalResult evalOr(Eval &e) { return logic<graph::OrOp>(e, 2); }
LogicalResult evalXor(Eval &e) { return logic<graph::XorOp>(e, 2); }
LogicalResult evalNot(Eval &e) { return logic<graph::NotOp>(e, 1); }

/// Min, Max, Sum, Mean: variadic, broadcasting; floats propagate NaN.
LogicalResult variadic(Eval &e, llvm::StringRef op) {
  if (failed(e.require(e.count())) || failed(requireSameType(e)))
    return failure();
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s))
    return failure();
  FailureOr<Tensor> r = e.make(*s, e.elemOf(0));
  if (failed(r))
    return failure();
  if (r->isBool())
    return e.fail("BOOL operands are not supported");
  if (op == "Mean" && !r->isFloat())
    return e.fail("Mean takes FLOAT operands, got " + elementTypeName(r->elem));
  for (size_t i = 0; i < e.count(); ++i) {
    FailureOr<Tensor> x = e.in(i);
    if (failed(x))
      return failure();
    SmallVector<int64_t, 0> src = broadcastSources(x->shape, *s);
    for (size_t k = 0; k < src.size(); ++k) {
      if (r->isFloat()) {
        float v = x->floats[src[k]], &acc = r->floats[k];
        if (i == 0 || op == "Sum" || op == "Mean")
          acc = i == 0 ? v : acc + v;
        else if (std::isnan(v) || std::isnan(acc))
          acc = std::numeric_limits<float>::quiet_NaN();
        else
          acc = op == "Min" ? std::min(acc, v) : std::max(acc, v);
      } else {
        int64_t v = x->ints[src[k]], &acc = r->ints[k];
        acc = i == 0         ? v
              : op == "Sum"  ? wrapAdd(acc, v)
              : op == "Min"  ? std::min(acc, v)
                             : std::max(acc, v);
      }
    }
  }
  if (op == "Mean")
    for (float &v : r->floats)
      v /= static_cast<float>(e.count());
  return e.result(*r);
}
LogicalResult evalMin(Eval &e) { return variadic(e, "Min"); }
LogicalResult evalMax(Eval &e) { return variadic(e, "Max"); }
LogicalResult evalSum(Eval &e) { return variadic(e, "Sum"); }
LogicalResult evalMean(Eval &e) { return variadic(e, "Mean"); }

LogicalResult evalWhere(Eval &e) {
  if (failed(e.require(3)) || failed(requireBoolInput(e, 0)) || failed(requireSameType(e, 1)))
    return failure();
  FailureOr<Shape> s = broadcastAll(e);
  if (failed(s))
    return failure();
  FailureOr<Tensor> c = e.in(0), x = e.in(1), y = e.in(2), r = e.make(*s, e.elemOf(1));
  if (failed(c) || failed(x) || failed(y) || failed(r))
    return failure();
  SmallVector<int64_t, 0> ic = broadcastSources(c->shape, *s), ix = broadcastSources(x->shape, *s),
                          iy = broadcastSources(y->shape, *s);
  for (size_t k = 0; k < ic.size(); ++k) {
    bool take = c->ints[ic[k]] != 0;
    if (r->isFloat())
      r->floats[k] = take ? x->floats[ix[k]] : y->floats[iy[k]];
    else
      r->ints[k] = take ? x->ints[ix[k]] : y->ints[iy[k]];
  }
  return e.result(*r);
}

LogicalResult evalCast(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  std::optional<int64_t> to = e.attrIntOpt("to");
  if (!to)
    return e.fail("attribute 'to' is required");
  Type target = *to == onnx::TensorProto::DOUBLE
                    ? Float64Type::get(&e.ctx)
                    : valueElementType(e.ctx, static_cast<int32_t>(*to));
  if (!target)
    return e.notFoldable(); // the converter names the unsupported type
  if (failed(e.reserve(e.shapeOf(0))))
    return failure();
  e.outputs.push_back(foldCast(e.ctx, e.attr(0), target));
  return success();
}

/// CastLike of a constant, as Cast folds one (a shape subgraph may cast a
/// float constant to an integer one that Range or Reshape needs at compile
/// time); input #1 gives only the type.
LogicalResult evalCastLike(Eval &e) {
  if (failed(e.require(2)) || failed(e.reserve(e.shapeOf(0))))
    return failure();
  e.outputs.push_back(foldCast(e.ctx, e.attr(0), e.elemOf(1)));
  return success();
}

LogicalResult evalIdentity(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  e.outputs.push_back(e.attr(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

LogicalResult evalShape(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = e.attrInt("start", 0), end = e.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  FailureOr<Tensor> r = e.make({std::max<int64_t>(end - start, 0)}, e.i64());
  if (failed(r))
    return failure();
  for (int64_t d = start; d < end; ++d)
    r->ints[d - start] = in[d];
  return e.result(*r);
}

LogicalResult evalSize(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  FailureOr<Tensor> r = e.make({}, e.i64());
  if (failed(r))
    return failure();
  r->ints[0] = shapes::numElements(e.shapeOf(0));
  return e.result(*r);
}

LogicalResult evalReshape(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  SmallVector<int64_t> target;
  if (e.opset < 5) {
    auto attr = e.attrInts("shape");
    if (!attr)
      return e.fail("attribute 'shape' is required before opset 5");
    target = *attr;
  } else {
    FailureOr<SmallVector<int64_t>> shape = e.ints(1, "shape");
    if (failed(shape))
      return failure();
    target = *shape;
  }
  bool allowZero = e.opset >= 14 && e.attrBool("allowzero", false);
  ShapeOrError out = reshapeShape(e.shapeOf(0), target, allowZero);
  if (!out.ok())
    return e.fail(out.error);
  return e.reshaped(0, out.shape);
}

LogicalResult evalFlatten(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size()), axis = e.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return e.fail("attribute 'axis' " + llvm::Twine(axis) + " is out of range for rank " +
                  llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  return e.reshaped(0, {product(in, 0, axis), product(in, axis, rank)});
}

/// Squeeze's and Unsqueeze's axes: the attribute before opset 13, the input
/// from 13; none when neither is given.
FailureOr<std::optional<SmallVector<int64_t>>> squeezeAxes(Eval &e) {
  if (e.opset < 13)
    return e.attrInts("axes");
  if (!e.has(1))
    return std::optional<SmallVector<int64_t>>();
  FailureOr<SmallVector<int64_t>> axes = e.ints(1, "axes");
  if (failed(axes))
    return failure();
  return std::optional<SmallVector<int64_t>>(*axes);
}

/// Sorted, unique, non-negative axes.
FailureOr<SmallVector<int64_t>> sortedAxes(Eval &e, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = e.axis(a, rank, "axis");
    if (failed(axis))
      return failure();
    out.push_back(*axis);
  }
  llvm::sort(out);
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i] == out[i - 1])
      return e.fail("axes name axis " + llvm::Twine(out[i]) + " twice");
  return out;
}

LogicalResult evalUnsqueeze(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes = squeezeAxes(e);
  if (failed(axes))
    return failure();
  if (!*axes)
    return e.fail("axes are required");
  int64_t outRank = static_cast<int64_t>(in.size() + (*axes)->size());
  FailureOr<SmallVector<int64_t>> norm = sortedAxes(e, **axes, outRank);
  if (failed(norm))
    return failure();
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    out.push_back(llvm::is_contained(*norm, d) ? 1 : in[next++]);
  return e.reshaped(0, out);
}

LogicalResult evalSqueeze(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0), out;
  FailureOr<std::optional<SmallVector<int64_t>>> axes = squeezeAxes(e);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> norm;
  if (*axes) {
    FailureOr<SmallVector<int64_t>> sorted =
        sortedAxes(e, **axes, static_cast<int64_t>(in.size()));
    if (failed(sorted))
      return failure();
    norm = *sorted;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    bool named = llvm::is_contained(norm, static_cast<int64_t>(d));
    if (named && in[d] != 1)
      return e.fail("cannot squeeze axis " + llvm::Twine(d) + " of size " + llvm::Twine(in[d]));
    if (*axes ? !named : in[d] != 1)
      out.push_back(in[d]);
  }
  return e.reshaped(0, out);
}

/// Output: the elements of `x` at `src` (flat indices) as a tensor of
/// `shape`.
LogicalResult gatherFlat(Eval &e, const Tensor &x, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> src) {
  FailureOr<Tensor> r = e.make(shape, x.elem);
  if (failed(r))
    return failure();
  for (size_t k = 0; k < src.size(); ++k) {
    if (x.isFloat())
      r->floats[k] = x.floats[src[k]];
    else
      r->ints[k] = x.ints[src[k]];
  }
  return e.result(*r);
}

/// Calls `f(flat, index)` for every element of `shape` in row-major order.
void forEachIndex(ArrayRef<int64_t> shape,
                  llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> f) {
  int64_t n = shapes::numElements(shape);
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// Output: a tensor of `out` whose element at each index is input 0's
/// element at flat index `source(index, strides)` (the input's row-major
/// strides): the copies of Transpose, Slice and Tile.
LogicalResult
gatherByIndex(Eval &e, ArrayRef<int64_t> out,
              llvm::function_ref<int64_t(ArrayRef<int64_t>, ArrayRef<int64_t>)> source) {
  if (failed(e.reserve(out)))
    return failure();
  FailureOr<Tensor> x = e.in(0);
  if (failed(x))
    return failure();
  SmallVector<int64_t> strides = stridesOf(x->shape);
  SmallVector<int64_t, 0> src(shapes::numElements(out));
  forEachIndex(out, [&](int64_t flat, ArrayRef<int64_t> idx) { src[flat] = source(idx, strides); });
  return gatherFlat(e, *x, out, src);
}

LogicalResult evalTranspose(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  SmallVector<int64_t> perm;
  if (auto p = e.attrInts("perm"))
    perm = *p;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return e.fail("attribute 'perm' " + shapes::formatShape(perm) + " must have " +
                  llvm::Twine(rank) + " entries");
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return e.fail("attribute 'perm' " + shapes::formatShape(perm) + " is not a permutation");
    seen[p] = true;
  }
  Shape out;
  for (int64_t p : perm)
    out.push_back(in[p]);
  return gatherByIndex(e, out, [&](ArrayRef<int64_t> idx, ArrayRef<int64_t> strides) {
    int64_t s = 0;
    for (int64_t d = 0; d < rank; ++d)
      s += idx[d] * strides[perm[d]];
    return s;
  });
}

LogicalResult evalConcat(Eval &e) {
  if (failed(e.require(e.count())) || failed(requireSameType(e)))
    return failure();
  Shape first = e.shapeOf(0);
  if (first.empty())
    return e.fail("inputs must have rank >= 1");
  std::optional<int64_t> axisAttr = e.attrIntOpt("axis");
  if (!axisAttr && e.opset >= 4)
    return e.fail("attribute 'axis' is required");
  FailureOr<int64_t> axis = e.axis(axisAttr.value_or(1), static_cast<int64_t>(first.size()),
                                   "attribute 'axis'");
  if (failed(axis))
    return failure();
  std::vector<Shape> inputShapes;
  for (size_t i = 0; i < e.count(); ++i)
    inputShapes.push_back(e.shapeOf(i));
  ShapeOrError s = shapes::concatShape({inputShapes.begin(), inputShapes.end()}, *axis);
  if (!s.ok())
    return e.fail(s.error);
  FailureOr<Tensor> r = e.make(s.shape, e.elemOf(0));
  if (failed(r))
    return failure();
  int64_t outer = product(s.shape, 0, *axis), at = 0;
  SmallVector<Tensor> parts;
  for (size_t i = 0; i < e.count(); ++i) {
    FailureOr<Tensor> part = e.in(i);
    if (failed(part))
      return failure();
    parts.push_back(std::move(*part));
  }
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &p : parts) {
      int64_t chunk = product(p.shape, *axis, p.shape.size());
      for (int64_t k = 0; k < chunk; ++k, ++at) {
        if (r->isFloat())
          r->floats[at] = p.floats[o * chunk + k];
        else
          r->ints[at] = p.ints[o * chunk + k];
      }
    }
  return e.result(*r);
}

LogicalResult evalSlice(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  SmallVector<int64_t> starts, ends, axes, steps;
  if (e.opset < 10) {
    auto s = e.attrInts("starts"), en = e.attrInts("ends");
    if (!s || !en)
      return e.fail("attributes 'starts' and 'ends' are required before opset 10");
    starts = *s;
    ends = *en;
    if (auto a = e.attrInts("axes"))
      axes = *a;
  } else {
    // Inputs #1 and #2 are required, #3 (axes) and #4 (steps) optional.
    auto read = [&](size_t i, const char *role, SmallVector<int64_t> &into) -> LogicalResult {
      FailureOr<SmallVector<int64_t>> values = e.ints(i, role);
      if (failed(values))
        return failure();
      into = *values;
      return success();
    };
    if (failed(read(1, "starts", starts)) || failed(read(2, "ends", ends)) ||
        (e.has(3) && failed(read(3, "axes", axes))) ||
        (e.has(4) && failed(read(4, "steps", steps))))
      return failure();
  }
  if (axes.empty() && !(e.opset >= 10 && e.has(3)))
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty() && !(e.opset >= 10 && e.has(4)))
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return e.fail("starts, ends, axes and steps must have the same length");
  SmallVector<int64_t> first(rank, 0), step(rank, 1);
  Shape counts = in;
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    FailureOr<int64_t> axisOr = e.axis(axes[k], rank, "axis");
    if (failed(axisOr))
      return failure();
    int64_t axis = *axisOr;
    if (seen[axis])
      return e.fail("axis " + llvm::Twine(axis) + " is sliced twice");
    seen[axis] = true;
    if (steps[k] == 0)
      return e.fail("step of axis " + llvm::Twine(axis) + " is zero");
    // ONNX: negative indices count from the end, then clamp ([0, dim] for
    // positive steps, [-1, dim-1] for negative ones).
    int64_t dim = in[axis], s = starts[k], en = ends[k], count = 0;
    s = s < 0 ? s + dim : s;
    en = en < 0 ? en + dim : en;
    if (steps[k] > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      en = std::clamp<int64_t>(en, 0, dim);
      if (en > s)
        count = static_cast<int64_t>(uint64_t(en - s - 1) / uint64_t(steps[k])) + 1;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      en = std::clamp<int64_t>(en, -1, dim - 1);
      if (s > en)
        count = static_cast<int64_t>(uint64_t(s - en - 1) / (0 - uint64_t(steps[k]))) + 1;
    }
    first[axis] = count > 0 ? s : 0;
    step[axis] = steps[k];
    counts[axis] = count;
  }
  return gatherByIndex(e, counts, [&](ArrayRef<int64_t> idx, ArrayRef<int64_t> strides) {
    int64_t s = 0;
    for (int64_t d = 0; d < rank; ++d)
      s += (first[d] + idx[d] * step[d]) * strides[d];
    return s;
  });
}

LogicalResult evalGather(Eval &e) {
  if (failed(e.require(2)))
    return failure();
  Shape ds = e.shapeOf(0), is = e.shapeOf(1);
  Type it = e.elemOf(1);
  if (!it.isInteger(64) && !it.isInteger(32))
    return e.fail("indices must be INT64 or INT32, got " + elementTypeName(it));
  FailureOr<int64_t> axis =
      e.axis(e.attrInt("axis", 0), static_cast<int64_t>(ds.size()), "attribute 'axis'");
  if (failed(axis))
    return failure();
  ShapeOrError s = shapes::gatherShape(ds, is, *axis);
  if (!s.ok())
    return e.fail(s.error);
  if (failed(e.reserve(s.shape)))
    return failure();
  FailureOr<Tensor> x = e.in(0), idx = e.in(1);
  if (failed(x) || failed(idx))
    return failure();
  int64_t dim = ds[*axis], outer = product(ds, 0, *axis),
          inner = product(ds, *axis + 1, ds.size());
  SmallVector<int64_t, 0> src;
  src.reserve(shapes::numElements(s.shape));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx->ints) {
      if (i < -dim || i >= dim)
        return e.fail("index " + llvm::Twine(i) + " is out of range for axis " +
                      llvm::Twine(*axis) + " of size " + llvm::Twine(dim));
      int64_t base = (o * dim + (i < 0 ? i + dim : i)) * inner;
      for (int64_t k = 0; k < inner; ++k)
        src.push_back(base + k);
    }
  return gatherFlat(e, *x, s.shape, src);
}

/// A 1-D shape input of non-negative dims (ConstantOfShape, Expand).
FailureOr<SmallVector<int64_t>> shapeInput(Eval &e, size_t i) {
  FailureOr<SmallVector<int64_t>> dims = e.ints(i, "shape");
  if (failed(dims))
    return failure();
  for (int64_t d : *dims)
    if (d < 0)
      return e.fail("shape " + shapes::formatShape(*dims) + " has a negative dimension");
  return dims;
}

LogicalResult evalExpand(Eval &e) {
  if (failed(e.require(2)))
    return failure();
  Shape in = e.shapeOf(0);
  FailureOr<SmallVector<int64_t>> dims = shapeInput(e, 1);
  if (failed(dims))
    return failure();
  ShapeOrError s = shapes::broadcastShapes(in, *dims);
  if (!s.ok())
    return e.fail("cannot expand " + shapes::formatShape(in) + ": " + s.error);
  if (failed(e.reserve(s.shape)))
    return failure();
  FailureOr<Tensor> x = e.in(0);
  if (failed(x))
    return failure();
  return gatherFlat(e, *x, s.shape, broadcastSources(in, s.shape));
}

LogicalResult evalTile(Eval &e) {
  if (failed(e.require(2)))
    return failure();
  Shape in = e.shapeOf(0), out;
  FailureOr<SmallVector<int64_t>> repeats = e.ints(1, "repeats");
  if (failed(repeats))
    return failure();
  if (repeats->size() != in.size())
    return e.fail("'repeats' has " + llvm::Twine(repeats->size()) +
                  " values, the input has rank " + llvm::Twine(in.size()));
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t r = (*repeats)[d];
    if (r < 0)
      return e.fail("'repeats' " + shapes::formatShape(*repeats) + " has a negative value");
    if (r != 0 && in[d] > std::numeric_limits<int64_t>::max() / r)
      return e.notFoldable();
    out.push_back(in[d] * r);
  }
  return gatherByIndex(e, out, [&](ArrayRef<int64_t> idx, ArrayRef<int64_t> strides) {
    int64_t s = 0;
    for (size_t d = 0; d < in.size(); ++d)
      s += (idx[d] % in[d]) * strides[d];
    return s;
  });
}

LogicalResult evalConstantOfShape(Eval &e) {
  FailureOr<SmallVector<int64_t>> dims = shapeInput(e, 0);
  if (failed(dims))
    return failure();
  DenseElementsAttr value = makeF32Attr(e.ctx, {1}, {0.0f});
  if (const auto *a = e.findAttr("value")) {
    if (a->t().data_location() == onnx::TensorProto::EXTERNAL)
      return e.fail("attribute 'value' must be stored in the model, not as external data");
    std::string error;
    FailureOr<DenseElementsAttr> decoded =
        decodeTensor(e.ctx, a->t(), "", "attribute 'value'",
                     [&](const std::string &message) { error = message; });
    if (failed(decoded))
      return e.fail(error);
    value = *decoded;
    if (value.getNumElements() != 1)
      return e.fail("attribute 'value' must hold one element, got shape " +
                    shapes::formatShape(value.getType().getShape()));
  }
  if (failed(e.reserve(*dims)))
    return failure();
  // A splat: nothing the size of the result is allocated.
  e.outputs.push_back(DenseElementsAttr::get(RankedTensorType::get(*dims, value.getElementType()),
                                             *value.value_begin<Attribute>()));
  return success();
}

/// Range: ceil((limit - start) / delta) values start, start + delta, ...
/// (floats: the count in double, the values accumulated in FP32, as
/// onnxruntime's kernel).
LogicalResult evalRange(Eval &e) {
  if (failed(e.require(3)) || failed(requireSameType(e)))
    return failure();
  for (size_t i = 0; i < 3; ++i)
    if (e.attr(i).getNumElements() != 1)
      return e.fail("input #" + llvm::Twine(i) + " must be a scalar, got shape " +
                    shapes::formatShape(e.shapeOf(i)));
  Type elem = e.elemOf(0);
  if (elem.isInteger(1))
    return e.fail("BOOL inputs are not supported");
  int64_t n;
  if (isa<FloatType>(elem)) {
    float start = floatValues(e.attr(0))[0], limit = floatValues(e.attr(1))[0],
          delta = floatValues(e.attr(2))[0];
    if (delta == 0)
      return e.fail("delta is zero");
    // The count in double from each bound, as onnxruntime computes it.
    double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                             static_cast<double>(delta));
    if (!std::isfinite(count))
      return e.fail("the number of elements is not finite");
    if (count > static_cast<double>(e.limit))
      return e.notFoldable();
    n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    FailureOr<Tensor> r = e.make({n}, elem);
    if (failed(r))
      return failure();
    float v = start;
    for (int64_t k = 0; k < n; ++k, v += delta)
      r->floats[k] = v;
    return e.result(*r);
  }
  int64_t start = intValues(e.attr(0))[0], limit = intValues(e.attr(1))[0],
          delta = intValues(e.attr(2))[0];
  if (delta == 0)
    return e.fail("delta is zero");
  __int128 span = static_cast<__int128>(limit) - start;
  __int128 count = span / delta + ((span % delta != 0) && ((span < 0) == (delta < 0)));
  if (count > e.limit)
    return e.notFoldable();
  n = std::max<int64_t>(static_cast<int64_t>(count), 0);
  FailureOr<Tensor> r = e.make({n}, elem);
  if (failed(r))
    return failure();
  for (int64_t k = 0; k < n; ++k)
    r->ints[k] = wrapAdd(start, wrapMul(k, delta));
  return e.result(*r);
}

//===----------------------------------------------------------------------===//
// Reductions, scans, index ops
//===----------------------------------------------------------------------===//

/// ReduceSum/Prod/Max/Min: axes from the attribute (ReduceSum before 13,
/// the others before 18) or the input; keepdims; noop_with_empty_axes.
LogicalResult evalReduce(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  llvm::StringRef op = e.node.op_type();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  bool axesInput = e.opset >= (op == "ReduceSum" ? 13 : 18);
  std::optional<SmallVector<int64_t>> axes;
  if (!axesInput) {
    axes = e.attrInts("axes");
  } else if (e.has(1)) {
    FailureOr<SmallVector<int64_t>> given = e.ints(1, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  bool keep = e.attrBool("keepdims", true);
  if (!axes || axes->empty()) {
    if (axesInput && e.attrBool("noop_with_empty_axes", false)) {
      e.outputs.push_back(e.attr(0));
      return success();
    }
    axes = SmallVector<int64_t>();
    for (int64_t d = 0; d < rank; ++d)
      axes->push_back(d);
  }
  FailureOr<SmallVector<int64_t>> norm = sortedAxes(e, *axes, rank);
  if (failed(norm))
    return failure();
  Shape out, kept;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(*norm, d);
    kept.push_back(reduced ? 1 : in[d]);
    if (!reduced || keep)
      out.push_back(reduced ? 1 : in[d]);
    if (reduced && in[d] == 0 && (op == "ReduceMax" || op == "ReduceMin"))
      return e.fail("cannot reduce an empty axis " + llvm::Twine(d) + " with " + op);
  }
  FailureOr<Tensor> x = e.in(0);
  if (failed(x))
    return failure();
  FailureOr<Tensor> r = e.make(kept, x->elem);
  if (failed(r))
    return failure();
  if (x->isBool())
    return e.fail("BOOL inputs are not supported");
  SmallVector<int64_t> outStrides = stridesOf(kept);
  SmallVector<bool, 0> started(r->size(), false);
  forEachIndex(in, [&](int64_t flat, ArrayRef<int64_t> idx) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      o += (kept[d] == 1 ? 0 : idx[d]) * outStrides[d];
    bool first = !started[o];
    started[o] = true;
    // One step of a float reduction, in FLOAT or DOUBLE (NaN propagates
    // through Max and Min).
    auto step = [&](auto v, auto &acc) {
      using T = std::remove_reference_t<decltype(acc)>;
      acc = first ? v
            : op == "ReduceSum"  ? acc + v
            : op == "ReduceProd" ? acc * v
            : std::isnan(v) || std::isnan(acc) ? std::numeric_limits<T>::quiet_NaN()
            : op == "ReduceMax" ? std::max<T>(acc, v)
                                : std::min<T>(acc, v);
    };
    if (x->isDouble()) {
      step(x->doubles[flat], r->doubles[o]);
    } else if (x->isFloat()) {
      step(x->floats[flat], r->floats[o]);
    } else {
      int64_t v = x->ints[flat], &acc = r->ints[o];
      acc = first ? v
            : op == "ReduceSum"  ? wrapAdd(acc, v)
            : op == "ReduceProd" ? wrapMul(acc, v)
            : op == "ReduceMax"  ? std::max(acc, v)
                                 : std::min(acc, v);
    }
  });
  // Outputs no element reached (an empty axis): the sum's and product's
  // identities.
  for (int64_t o = 0; o < r->size(); ++o)
    if (!started[o]) {
      if (r->isDouble())
        r->doubles[o] = op == "ReduceProd" ? 1.0 : 0.0;
      else if (r->isFloat())
        r->floats[o] = op == "ReduceProd" ? 1.0f : 0.0f;
      else
        r->ints[o] = op == "ReduceProd" ? 1 : 0;
    }
  r->shape = out;
  return e.result(*r);
}

LogicalResult evalCumSum(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  if (rank == 0)
    return e.fail("input must have rank >= 1");
  FailureOr<int64_t> given = e.scalarInt(1, "axis");
  if (failed(given))
    return failure();
  FailureOr<int64_t> axisOr = e.axis(*given, rank, "axis");
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  bool exclusive = e.attrBool("exclusive", false), reverse = e.attrBool("reverse", false);
  FailureOr<Tensor> x = e.in(0);
  if (failed(x))
    return failure();
  FailureOr<Tensor> r = e.make(in, x->elem);
  if (failed(r))
    return failure();
  if (x->isBool())
    return e.fail("BOOL inputs are not supported");
  int64_t dim = in[axis], inner = product(in, axis + 1, rank), outer = product(in, 0, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float fsum = 0;
      int64_t isum = 0;
      for (int64_t step = 0; step < dim; ++step) {
        int64_t k = reverse ? dim - 1 - step : step;
        int64_t at = (o * dim + k) * inner + i;
        if (x->isFloat()) {
          if (!exclusive)
            fsum += x->floats[at];
          r->floats[at] = fsum;
          if (exclusive)
            fsum += x->floats[at];
        } else {
          if (!exclusive)
            isum = wrapAdd(isum, x->ints[at]);
          r->ints[at] = isum;
          if (exclusive)
            isum = wrapAdd(isum, x->ints[at]);
        }
      }
    }
  return e.result(*r);
}

LogicalResult evalArgMax(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  int64_t rank = static_cast<int64_t>(in.size());
  FailureOr<int64_t> axisOr = e.axis(e.attrInt("axis", 0), rank, "attribute 'axis'");
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  bool keep = e.attrBool("keepdims", true), last = e.attrBool("select_last_index", false);
  if (in[axis] == 0)
    return e.fail("cannot take ArgMax over the empty axis " + llvm::Twine(axis));
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis || keep)
      out.push_back(d == axis ? 1 : in[d]);
  FailureOr<Tensor> x = e.in(0), r = e.make(out, e.i64());
  if (failed(x) || failed(r))
    return failure();
  int64_t dim = in[axis], inner = product(in, axis + 1, rank), outer = product(in, 0, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < dim; ++k) {
        int64_t a = (o * dim + k) * inner + i, b = (o * dim + best) * inner + i;
        bool better = x->isFloat()
                          ? (last ? x->floats[a] >= x->floats[b] : x->floats[a] > x->floats[b])
                          : (last ? x->ints[a] >= x->ints[b] : x->ints[a] > x->ints[b]);
        if (better)
          best = k;
      }
      r->ints[o * inner + i] = best;
    }
  return e.result(*r);
}

/// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of
/// the last two dims; any k is valid (the triangle is then empty or full).
LogicalResult evalTrilu(Eval &e) {
  if (failed(e.require(1)))
    return failure();
  Shape in = e.shapeOf(0);
  if (in.size() < 2)
    return e.fail("input must have rank >= 2");
  int64_t k = 0;
  if (e.has(1)) {
    FailureOr<int64_t> given = e.scalarInt(1, "k");
    if (failed(given))
      return failure();
    k = *given;
  }
  bool upper = e.attrBool("upper", true);
  FailureOr<Tensor> x = e.in(0);
  if (failed(x))
    return failure();
  FailureOr<Tensor> r = e.make(in, x->elem);
  if (failed(r))
    return failure();
  int64_t rows = in[in.size() - 2], cols = in.back();
  for (int64_t flat = 0; flat < x->size(); ++flat) {
    int64_t j = flat % cols, i = cols == 0 ? 0 : (flat / cols) % rows;
    __int128 diff = static_cast<__int128>(j) - i;
    bool keepIt = upper ? diff >= k : diff <= k;
    if (x->isFloat())
      r->floats[flat] = keepIt ? x->floats[flat] : 0.0f;
    else
      r->ints[flat] = keepIt ? x->ints[flat] : 0;
  }
  return e.result(*r);
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

struct EvalRow {
  const char *opType;
  EvalFn fn;
  Kind kind;
};

const EvalRow kEvalRows[] = {
    // Element-wise.
    {"Add", evalAdd, Kind::Compute},
    {"Sub", evalSub, Kind::Compute},
    {"Mul", evalMul, Kind::Compute},
    {"Div", evalDiv, Kind::Compute},
    {"Mod", evalMod, Kind::Compute},
    {"Pow", evalPow, Kind::Compute},
    {"Neg", evalNeg, Kind::Compute},
    {"Abs", evalAbs, Kind::Compute},
    {"Sign", evalSign, Kind::Compute},
    {"Sqrt", evalSqrt, Kind::Compute},
    {"Reciprocal", evalReciprocal, Kind::Compute},
    {"Log", evalLog, Kind::Compute},
    {"Exp", evalExp, Kind::Compute},
    {"Sin", evalSin, Kind::Compute},
    {"Cos", evalCos, Kind::Compute},
    {"Tanh", evalTanh, Kind::Compute},
    {"Erf", evalErf, Kind::Compute},
    {"Round", evalRound, Kind::Compute},
    {"Floor", evalFloor, Kind::Compute},
    {"Ceil", evalCeil, Kind::Compute},
    {"IsNaN", evalIsNaN, Kind::Compute},
    {"Equal", evalEqual, Kind::Compute},
    {"Less", evalLess, Kind::Compute},
    {"LessOrEqual", evalLessOrEqual, Kind::Compute},
    {"Greater", evalGreater, Kind::Compute},
    {"GreaterOrEqual", evalGreaterOrEqual, Kind::Compute},
    {"And", evalAnd, Kind::Static},
    {"Or", evalOr, Kind::Static},
    {"Xor", evalXor, Kind::Static},
    {"Not", evalNot, Kind::Static},
    {"Min", evalMin, Kind::Compute},
    {"Max", evalMax, Kind::Compute},
    {"Sum", evalSum, Kind::Compute},
    {"Mean", evalMean, Kind::Compute},
    {"Where", evalWhere, Kind::Compute},
    {"Cast", evalCast, Kind::Compute},
    {"CastLike", evalCastLike, Kind::Compute},
    {"Identity", evalIdentity, Kind::Move},
    // Shapes and data movement.
    {"Shape", evalShape, Kind::Static},
    {"Size", evalSize, Kind::Static},
    {"Reshape", evalReshape, Kind::Move},
    {"Flatten", evalFlatten, Kind::Move},
    {"Unsqueeze", evalUnsqueeze, Kind::Move},
    {"Squeeze", evalSqueeze, Kind::Move},
    {"Transpose", evalTranspose, Kind::Move},
    {"Concat", evalConcat, Kind::Move},
    {"Slice", evalSlice, Kind::Move},
    {"Gather", evalGather, Kind::Move},
    {"Expand", evalExpand, Kind::Compute},
    {"Tile", evalTile, Kind::Compute},
    {"ConstantOfShape", evalConstantOfShape, Kind::Static},
    {"Range", evalRange, Kind::Static},
    // Reductions, scans, index ops.
    {"ReduceSum", evalReduce, Kind::Compute},
    {"ReduceProd", evalReduce, Kind::Compute},
    {"ReduceMax", evalReduce, Kind::Compute},
    {"ReduceMin", evalReduce, Kind::Compute},
    {"CumSum", evalCumSum, Kind::Compute},
    {"ArgMax", evalArgMax, Kind::Static},
    {"Trilu", evalTrilu, Kind::Compute},
};

/// The ops the evaluator computes on DOUBLE values, in double.
const char *const kDoubleOps[] = {"Cast", "CastLike",  "Identity",   "Add",       "Sub",
                                  "Mul",  "Div",       "Neg",        "Abs",       "Sqrt",
                                  "Exp",  "Log",       "ReduceSum",  "ReduceProd", "ReduceMax",
                                  "ReduceMin"};

} // namespace

/// The names of kDoubleOps, for errors.
static SmallVector<llvm::StringRef> doubleOpNames() {
  return SmallVector<llvm::StringRef>(std::begin(kDoubleOps), std::end(kDoubleOps));
}

namespace {
bool takesDouble(llvm::StringRef opType) {
  return llvm::any_of(kDoubleOps, [&](const char *op) { return opType == op; });
}

const EvalRow *findEvalRow(llvm::StringRef opType) {
  for (const EvalRow &row : kEvalRows)
    if (opType == row.opType)
      return &row;
  return nullptr;
}

/// The element limit of a fold: ops that have an mp form at run time fold
/// up to `limits.runTime` elements (moves of float data not at all);
/// compile-time-only ops up to `limits.compileTime`.
int64_t limitFor(Kind kind, ArrayRef<DenseElementsAttr> inputs, const FoldLimits &limits) {
  bool anyFloat = llvm::any_of(inputs, [](DenseElementsAttr a) {
    return a && isa<FloatType>(a.getElementType());
  });
  switch (kind) {
  case Kind::Move:
    return anyFloat ? 0 : limits.runTime;
  case Kind::Compute:
    return anyFloat ? limits.runTime : limits.compileTime;
  case Kind::Static:
    return limits.compileTime;
  }
  return 0;
}

} // namespace

/// ONNX Cast of one float value to integer type `to`: truncation toward
/// zero, saturating, NaN 0; BOOL is "!= 0".
static int64_t castToInteger(double v, Type to) {
  if (to.isInteger(1))
    return v != 0.0;
  llvm::APSInt r(to.getIntOrFloatBitWidth(), /*isUnsigned=*/false);
  bool exact = false;
  llvm::APFloat(v).convertToInteger(r, llvm::APFloat::rmTowardZero, &exact);
  return std::isnan(v) ? 0 : r.getSExtValue();
}

/// foldCast from or to DOUBLE: every value of the other types is exact in
/// double; double to FLOAT rounds to nearest even, to integers truncates
/// toward zero (saturating, NaN 0), to BOOL is "!= 0".
DenseElementsAttr foldDoubleCast(MLIRContext &ctx, DenseElementsAttr in, Type to) {
  Type from = in.getElementType();
  ArrayRef<int64_t> shape = in.getType().getShape();
  SmallVector<double> d;
  if (from.isF64())
    d.assign(in.getValues<double>().begin(), in.getValues<double>().end());
  else if (isa<FloatType>(from))
    for (float v : floatValues(in))
      d.push_back(v);
  else
    for (int64_t v : intValues(in))
      d.push_back(static_cast<double>(v));
  if (to.isF64())
    return DenseElementsAttr::get(RankedTensorType::get(shape, to), ArrayRef<double>(d));
  if (isa<FloatType>(to)) {
    SmallVector<float> f(d.begin(), d.end());
    return makeF32Attr(ctx, shape, f);
  }
  SmallVector<int64_t> out;
  for (double v : d)
    out.push_back(castToInteger(v, to));
  return makeIntAttr(shape, to, out);
}

/// Converts constant values between the importer's element types with ONNX
/// Cast semantics: float to int truncates toward zero (saturating, NaN 0),
/// anything to bool is "!= 0".
DenseElementsAttr foldCast(MLIRContext &ctx, DenseElementsAttr in, Type to) {
  Type from = in.getElementType();
  ArrayRef<int64_t> shape = in.getType().getShape();
  if (from.isF64() || to.isF64())
    return foldDoubleCast(ctx, in, to);
  if (isa<FloatType>(from)) {
    SmallVector<float> f = floatValues(in);
    if (isa<FloatType>(to))
      return makeF32Attr(ctx, shape, f);
    SmallVector<int64_t> out;
    for (float v : f)
      out.push_back(castToInteger(v, to)); // exact in double
    return makeIntAttr(shape, to, out);
  }
  SmallVector<int64_t> iv = intValues(in);
  if (isa<FloatType>(to)) {
    SmallVector<float> out(iv.begin(), iv.end());
    return makeF32Attr(ctx, shape, out);
  }
  return makeIntAttr(shape, to, iv); // i32 wraps, bool is "!= 0"
}

bool canEvaluate(llvm::StringRef opType) { return findEvalRow(opType) != nullptr; }

FoldResult evaluateNode(MLIRContext &ctx, const onnx::NodeProto &node, int64_t opset,
                        ArrayRef<DenseElementsAttr> inputs, const FoldLimits &limits) {
  FoldResult result;
  const EvalRow *row = findEvalRow(node.op_type());
  if (!row)
    return result;
  bool anyDouble = llvm::any_of(inputs, [](DenseElementsAttr a) {
    return a && a.getElementType().isF64();
  });
  if (anyDouble && !takesDouble(node.op_type()))
    return result; // tryFold names the node
  Eval e(ctx, node, opset, inputs, limitFor(row->kind, inputs, limits));
  if (failed(e.checkAttributes()) || failed(row->fn(e))) {
    // No error: the node is left to its converter.
    if (!e.error.empty()) {
      result.status = FoldResult::Failed;
      result.error = e.error;
    }
    return result;
  }
  result.status = FoldResult::Folded;
  result.outputs = std::move(e.outputs);
  return result;
}

//===----------------------------------------------------------------------===//
// Folding in the importer
//===----------------------------------------------------------------------===//

/// Whether node c computes in DOUBLE: a Cast to DOUBLE, or an input that is
/// a DOUBLE constant (DOUBLE values exist only at compile time).
static bool computesInDouble(const onnx::NodeProto &node, ArrayRef<DenseElementsAttr> constants) {
  if (node.op_type() == "Cast")
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "to" && a.i() == onnx::TensorProto::DOUBLE)
        return true;
  return llvm::any_of(constants,
                      [](DenseElementsAttr a) { return a && a.getElementType().isF64(); });
}

LogicalResult Importer::failDouble(const NodeCtx &c) {
  FoldLimits limits;
  return nodeError(c, "computes in DOUBLE, which mixprec evaluates only at compile time (it has "
                      "no DOUBLE tensors), for " +
                          llvm::Twine(llvm::join(doubleOpNames(), ", ")) + " up to " +
                          llvm::Twine(std::min(limits.runTime, foldBudget)) + " elements");
}

FailureOr<bool> Importer::tryFold(const NodeCtx &c, bool givenValues) {
  SmallVector<DenseElementsAttr> constants(c.node.input_size());
  for (int i = 0; i < c.node.input_size(); ++i)
    if (hasInput(c, i) && failed(constInput(c, i, constants[i])))
      return failure();
  // A node in DOUBLE must fold: run-time inputs count with the values the
  // run gave, and an empty one (no values to know) as an empty constant;
  // CastLike reads only the type of its input #1.
  bool inDouble = computesInDouble(c.node, constants);
  if (inDouble && !canEvaluate(c.node.op_type()))
    return failDouble(c);
  if (!canEvaluate(c.node.op_type()))
    return false;
  // A run-time float tensor cast to DOUBLE that starts a DOUBLE island is
  // computed in FP32 (convertCast), not folded from values the run gave.
  if (inDouble && c.node.op_type() == "Cast" && !constants[0]) {
    RankedTensorType t;
    if (failed(inputType(c, 0, t)))
      return failure();
    if (isa<FloatType>(t.getElementType()) && doubleIslandError(c).empty())
      return false;
  }
  for (int i = 0; i < c.node.input_size(); ++i) {
    if (!hasInput(c, i) || constants[i])
      continue;
    DenseElementsAttr attr;
    if (givenValues || inDouble)
      attr = givenInputValue(c.node.input(i));
    RankedTensorType t;
    if (failed(inputType(c, i, t)))
      return failure();
    if (!attr && inDouble && t.hasStaticShape() && shapes::numElements(t.getShape()) == 0)
      attr = DenseElementsAttr::get(t, ArrayRef<Attribute>());
    if (!attr && inDouble && c.node.op_type() == "CastLike" && i == 1 && t.hasStaticShape())
      attr = DenseElementsAttr::get(t, builder.getZeroAttr(t.getElementType()));
    if (!attr && inDouble && !constants[0] && c.node.op_type() == "Cast")
      return false; // a run-time Cast to DOUBLE: convertCast refuses it
    if (!attr && inDouble)
      return nodeError(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) +
                              ") is computed at run time, but the node computes in DOUBLE, "
                              "which mixprec evaluates only at compile time (it has no DOUBLE "
                              "tensors)");
    if (!attr)
      return false;
    constants[i] = attr;
  }
  // Every fold stays within what is left of the import's budget, so that a
  // model cannot make folding hold unbounded memory.
  FoldLimits limits;
  limits.runTime = std::min(limits.runTime, foldBudget);
  limits.compileTime = std::min(limits.compileTime, foldBudget);
  FoldResult r = evaluateNode(ctx, c.node, opset, constants, limits);
  if (r.status == FoldResult::Failed)
    return nodeError(c, r.error);
  if (r.status == FoldResult::NotFolded && inDouble)
    return failDouble(c);
  if (r.status == FoldResult::NotFolded)
    return false;
  for (auto [i, attr] : llvm::enumerate(r.outputs)) {
    // An output equal to an input (Identity, a reshape to the same shape)
    // stays that input's tensor.
    auto same = llvm::find(constants, attr);
    if (same == constants.end())
      defineConst(c, static_cast<int>(i), attr);
    else if (failed(
                 aliasOutput(c, static_cast<int>(i), static_cast<int>(same - constants.begin()))))
      return failure();
    foldBudget -= attr.getNumElements();
  }
  return true;
}

SmallVector<std::string> Importer::runTimeInputs(const std::string &tensor) const {
  auto isGraphInput = [&](const std::string &name) {
    auto it = values.find(name);
    return it != values.end() && it->second.value && isa<BlockArgument>(it->second.value);
  };
  SmallVector<std::string> found, work{tensor};
  llvm::StringSet<> seen;
  while (!work.empty() && seen.size() < 100000 && graphProto) {
    std::string name = work.pop_back_val();
    if (!seen.insert(name).second)
      continue;
    if (isGraphInput(name)) {
      found.push_back(name);
      continue;
    }
    auto it = producers.find(name);
    if (it == producers.end())
      continue;
    for (const std::string &in : graphProto->node(it->second).input()) {
      auto v = values.find(in);
      if (!in.empty() && v != values.end() && !v->second.constant)
        work.push_back(in);
    }
  }
  return found;
}

std::string Importer::runTimeOrigin(const std::string &tensor) const {
  // Walk back from the tensor through the nodes whose inputs are run-time
  // values, to the graph inputs that it depends on.
  auto isGraphInput = [&](const std::string &name) {
    auto it = values.find(name);
    return it != values.end() && it->second.value && isa<BlockArgument>(it->second.value);
  };
  if (isGraphInput(tensor))
    return "it is graph input " + quotedName(tensor);
  auto producer = producers.find(tensor);
  if (producer == producers.end() || !graphProto)
    return "it is computed at run time";
  const onnx::NodeProto &node = graphProto->node(producer->second);
  std::string nodeName = node.name().empty()
                             ? node.op_type() + "_" + std::to_string(producer->second)
                             : node.name();
  std::string text = "it is computed at run time by node " + quotedName(nodeName) + " (" +
                     escapeControls(node.op_type()) + ")";
  SmallVector<std::string> found;
  for (const std::string &name : runTimeInputs(tensor))
    found.push_back(quotedName(name));
  if (!found.empty())
    text += " from graph input" + std::string(found.size() > 1 ? "s " : " ") +
            llvm::join(found, ", ");
  return text;
}

//===----------------------------------------------------------------------===//
// ConstantOfShape, Range, Size, Expand
//===----------------------------------------------------------------------===//

LogicalResult Importer::foldCompileTimeOnly(const NodeCtx &c) {
  // convertNode's tryFold folded it if its inputs were constant; graph
  // inputs with their values at hand (`mixprec run`) fold here.
  FailureOr<bool> folded = tryFold(c, /*givenValues=*/true);
  if (failed(folded))
    return failure();
  if (*folded)
    return success();
  FoldLimits limits;
  limits.compileTime = std::min(limits.compileTime, foldBudget);
  return nodeError(c, "the result is too large to compute at compile time (the limit is " +
                          llvm::Twine(limits.compileTime) + " elements)");
}

/// The ONNX schema forms of ConstantOfShape.
static const OpForm kConstantOfShapeForms[] = {
    {9, 1, 1, 1, 1, "value"},
};

LogicalResult Importer::convertConstantOfShape(const NodeCtx &c) {
  DenseElementsAttr shape;
  if (failed(requireConst(c, 0, "input", shape)))
    return failure();
  return foldCompileTimeOnly(c);
}

/// The ONNX schema forms of Range: stash_type (27) only concerns FLOAT16/BFLOAT16 inputs,
/// which the importer holds as FLOAT.
static const OpForm kRangeForms[] = {
    {11, 3, 3, 1, 1, ""},
    {27, 3, 3, 1, 1, "stash_type"},
};

LogicalResult Importer::convertRange(const NodeCtx &c) {
  DenseElementsAttr start, limit, delta;
  if (failed(requireConst(c, 0, "start", start)) || failed(requireConst(c, 1, "limit", limit)) ||
      failed(requireConst(c, 2, "delta", delta)))
    return failure();
  return foldCompileTimeOnly(c);
}

/// The ONNX schema forms of Size.
static const OpForm kSizeForms[] = {
    {1, 1, 1, 1, 1, ""},
};

LogicalResult Importer::convertSize(const NodeCtx &c) {
  // Shapes are static once imported, so Size is a compile-time constant.
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  if (!t.hasStaticShape())
    return nodeError(c, "input 'input' (" + quotedName(c.node.input(0)) +
                            ") has a dynamic shape; its size must be known at compile time");
  defineConst(c, 0, makeIntAttr({}, builder.getI64Type(), {shapes::numElements(t.getShape())}));
  return success();
}

/// The ONNX schema forms of Expand.
static const OpForm kExpandForms[] = {
    {8, 2, 2, 1, 1, ""},
};

/// Expand at run time: the input reshaped to the output's rank, then each
/// run of consecutive broadcast axes merged into one and copied by one
/// mp.gather with zero indices. A gather copies elements, so every bit
/// (-0.0, NaN payloads, inf, integers) survives, on every backend that
/// runs mp.gather; arithmetic (x * 1) would round under low-precision
/// policies and does not exist for integers.
LogicalResult Importer::convertExpand(const NodeCtx &c) {
  SmallVector<int64_t> shape;
  if (failed(requireConstInts(c, 1, "shape", shape)))
    return failure();
  for (int64_t d : shape)
    if (d < 0)
      return nodeError(c, "shape " + shapes::formatShape(shape) + " has a negative dimension");
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ShapeOrError s = shapes::broadcastShapes(t.getShape(), shape);
  if (!s.ok())
    return nodeError(c, "cannot expand " + shapes::formatShape(t.getShape()) + ": " + s.error);
  if (shapes::numElements(s.shape) < 0)
    return nodeError(c,
                     "the output shape " + shapes::formatShape(s.shape) + " has too many elements");
  if (ArrayRef<int64_t>(s.shape) == t.getShape())
    return aliasOutput(c, 0, 0);
  size_t rank = s.shape.size(), lead = rank - t.getRank();
  Shape in(lead, 1);
  in.insert(in.end(), t.getShape().begin(), t.getShape().end());
  // Collapse: each run of broadcast axes (1 in, n > 1 out) becomes one axis.
  Shape from, to;
  for (size_t d = 0; d < rank; ++d) {
    bool broadcast = in[d] == 1 && s.shape[d] != 1;
    bool extend = broadcast && d > 0 && in[d - 1] == 1 && s.shape[d - 1] != 1;
    if (extend) {
      to.back() *= s.shape[d];
      continue;
    }
    from.push_back(in[d]);
    to.push_back(s.shape[d]);
  }
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  Value v = reshape(c, x, from);
  Shape current = from;
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] == to[d])
      continue;
    SmallVector<int64_t> zeros(to[d], 0);
    Value indices = constant(c.loc, makeIntAttr({to[d]}, builder.getI64Type(), zeros));
    current[d] = to[d];
    v = builder
            .create<graph::GatherOp>(c.loc, tensorType(current, t.getElementType()), v, indices,
                                     builder.getI64IntegerAttr(static_cast<int64_t>(d)))
            .getOutput();
  }
  defineValue(c, 0, reshape(c, v, s.shape));
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::foldOps() {
  static const OpInfo table[] = {
      {"ConstantOfShape", &Importer::convertConstantOfShape, kConstantOfShapeForms},
      {"Range", &Importer::convertRange, kRangeForms},
      {"Size", &Importer::convertSize, kSizeForms},
      {"Expand", &Importer::convertExpand, kExpandForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
