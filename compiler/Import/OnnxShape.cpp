//===- OnnxOps.cpp - one converter per ONNX op -----------------------------===//
//
// Each converter reads its node's inputs and attributes (following the
// node's opset version where the op changed), computes the result type with
// the mp shape functions, and defines the node's outputs: as mp ops, as
// aliases (Identity, no-op reshapes) or as compile-time constants (Constant,
// Shape, and integer shape arithmetic folded on constants). Above each
// converter, its op's ONNX schema forms (OpForm): convertNode checks a node's
// attributes and arity against them before the converter runs.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
Type elemOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

bool isFloat(Type t) { return isa<FloatType>(t); }

/// Product of dims [begin, end); callers pass shapes whose total fits int64.
int64_t product(ArrayRef<int64_t> shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Compile-time folds stay small: they are for shape arithmetic, not data.
constexpr int64_t kMaxFoldElements = int64_t(1) << 20;

std::string twineStr(const llvm::Twine &t) { return t.str(); }

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Shape Importer::expectShape(const NodeCtx &c, const ShapeOrError &s) const {
  if (!s.ok())
    nodeFail(c, s.error);
  return s.shape;
}

int64_t Importer::normalizeAxis(const NodeCtx &c, llvm::StringRef what, int64_t axis,
                                int64_t rank) const {
  if (axis < -rank || axis >= rank)
    nodeFail(c, what + " " + llvm::Twine(axis) + " is out of range [" + llvm::Twine(-rank) + ", " +
                    llvm::Twine(rank - 1) + "] for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> Importer::normalizeAxes(const NodeCtx &c, llvm::StringRef what,
                                             ArrayRef<int64_t> axes, int64_t rank) const {
  SmallVector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(normalizeAxis(c, twineStr("axis in " + what), a, rank));
  llvm::sort(out);
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i] == out[i - 1])
      nodeFail(c, what + " names axis " + llvm::Twine(out[i]) + " twice");
  return out;
}

void Importer::requireFloat(const NodeCtx &c, int i, Type t) const {
  if (!isFloat(t))
    nodeFail(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) +
                    ") must be FLOAT, got " + elementTypeName(t));
}

RankedTensorType Importer::tensorType(ArrayRef<int64_t> shape, Type elem) const {
  return RankedTensorType::get(shape, elem);
}

Value Importer::constant(Location loc, DenseElementsAttr attr) {
  // Constants go to the top of the function, in order of first use: after
  // the last one placed, or before the first op.
  if (lastConstant)
    constBuilder.setInsertionPointAfter(lastConstant);
  else
    constBuilder.setInsertionPointToStart(builder.getInsertionBlock());
  auto op = constBuilder.create<graph::ConstantOp>(loc, attr);
  lastConstant = op;
  return op.getOutput();
}

Value Importer::scalarF32(const NodeCtx &c, float v) {
  return constant(c.loc, makeF32Attr(ctx, {}, {v}));
}

Value Importer::reshape(const NodeCtx &c, Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return builder.create<graph::ReshapeOp>(c.loc, tensorType(shape, elemOf(v)), v).getOutput();
}

Value Importer::reshapeInput(const NodeCtx &c, int i, ArrayRef<int64_t> shape) {
  Entry &e = entryOf(c, i);
  // A constant parameter is re-typed at compile time instead of reshaped at
  // run time.
  if (e.constant && ArrayRef<int64_t>(entryType(e).getShape()) != shape)
    return constant(Location(e.constantLoc),
                    e.constant.reshape(tensorType(shape, e.constant.getElementType())));
  return reshape(c, materialize(e), shape);
}

Value Importer::transpose(const NodeCtx &c, Value v, ArrayRef<int64_t> perm) {
  return createInferred<graph::TransposeOp>(c, elemOf(v), v, builder.getDenseI64ArrayAttr(perm));
}

void Importer::defineReshaped(const NodeCtx &c, int inputIndex, ArrayRef<int64_t> shape) {
  Entry &e = entryOf(c, inputIndex);
  RankedTensorType t = entryType(e);
  if (t.getShape() == shape) {
    aliasOutput(c, 0, inputIndex);
    return;
  }
  // Integer constants stay compile-time known through reshapes (shape
  // arithmetic); float constants (weights) are reshaped by an op so that
  // large tensors are not copied at import time.
  if (e.constant && isa<IntegerType>(t.getElementType())) {
    defineConst(c, 0, e.constant.reshape(tensorType(shape, t.getElementType())));
    return;
  }
  defineValue(c, 0, reshape(c, materialize(e), shape));
}

bool Importer::hasAttr(const NodeCtx &c, llvm::StringRef name) const {
  return llvm::any_of(c.node.attribute(),
                      [&](const onnx::AttributeProto &a) { return a.name() == name; });
}

void Importer::require4D(const NodeCtx &c, ArrayRef<int64_t> shape, llvm::StringRef what) const {
  if (shape.size() != 4)
    nodeFail(c, "only 2-D " + what + " (a 4-D NCHW input) is supported, got an input of shape " +
                    graph::formatShape(shape));
}

/// Window attributes (kernel, strides, dilations) must be positive and small
/// enough that the window arithmetic cannot overflow.
static std::optional<std::string> checkWindowValues(llvm::StringRef name, ArrayRef<int64_t> values,
                                                    size_t count) {
  if (values.size() != count)
    return "attribute '" + name.str() + "' must have " + std::to_string(count) + " values, got " +
           std::to_string(values.size());
  for (int64_t v : values)
    if (v <= 0 || v > std::numeric_limits<int32_t>::max())
      return "attribute '" + name.str() + "' must hold positive values, got " +
             graph::formatShape(values);
  return std::nullopt;
}

SmallVector<int64_t> Importer::windowInts(const NodeCtx &c, llvm::StringRef name,
                                          std::optional<SmallVector<int64_t>> dflt) {
  std::optional<SmallVector<int64_t>> v = attrInts(c, name);
  if (!v) {
    if (!dflt)
      nodeFail(c, "attribute '" + name + "' is required");
    v = dflt;
  }
  if (auto err = checkWindowValues(name, *v, 2))
    nodeFail(c, *err);
  return *v;
}

SmallVector<int64_t> Importer::windowPads(const NodeCtx &c, ArrayRef<int64_t> inShape,
                                          ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> dilations) {
  std::string autoPad = attrString(c, "auto_pad", "NOTSET");
  std::optional<SmallVector<int64_t>> pads = attrInts(c, "pads");
  if (pads) {
    if (pads->size() != 4)
      nodeFail(c, "attribute 'pads' must have 4 values [top, left, bottom, right], got " +
                      llvm::Twine(pads->size()));
    for (int64_t p : *pads)
      if (p < 0 || p > std::numeric_limits<int32_t>::max())
        nodeFail(c, "attribute 'pads' must hold non-negative values, got " +
                        graph::formatShape(*pads));
  }
  if (autoPad == "NOTSET")
    return pads ? *pads : SmallVector<int64_t>{0, 0, 0, 0};
  if (autoPad != "VALID" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    nodeFail(c, "attribute 'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got " +
                    quotedName(autoPad));
  if (pads && llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
    nodeFail(c, "attributes 'pads' and 'auto_pad' (" + autoPad + ") cannot both be set");
  SmallVector<int64_t> out{0, 0, 0, 0};
  if (autoPad == "VALID")
    return out;
  for (int i = 0; i < 2; ++i) {
    int64_t in = inShape[2 + i], s = strides[i];
    int64_t outSize = (in + s - 1) / s;
    int64_t effective = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (outSize - 1) * s + effective - in);
    // SAME_UPPER puts the odd padding element at the end, SAME_LOWER at the
    // beginning.
    int64_t small = total / 2, large = total - small;
    out[i] = autoPad == "SAME_UPPER" ? small : large;
    out[2 + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// GEMM-class ops
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of MatMul.
static const OpForm kMatMulForms[] = {
    {1, 2, 2, 1, 1, ""},
};

void Importer::convertMatMul(const NodeCtx &c) {
  Value a = input(c, 0), b = input(c, 1);
  requireFloat(c, 0, elemOf(a));
  requireFloat(c, 1, elemOf(b));
  RankedTensorType t = inferredType<graph::MatmulOp>(c, elemOf(a), a, b, TypeAttr());
  // x @ W^T with a 2-D W (a tied LM head, a PyTorch Linear exported as
  // MatMul(x, Transpose(W))) is a linear layer reading W transposed: the
  // weight stays one constant, and FP8 and cuBLASLt see a weight, not an
  // activation.
  if (auto w = b.getDefiningOp<graph::TransposeOp>();
      w && shapeOf(a).size() >= 2 && shapeOf(b).size() == 2 &&
      w.getPerm() == ArrayRef<int64_t>{1, 0}) {
    defineValue(c, 0,
                builder
                    .create<graph::LinearOp>(c.loc, t, a, w.getInput(), Value(),
                                             builder.getBoolAttr(true), TypeAttr())
                    .getOutput());
    return; // the transpose, if now unused, goes with the importer's dead-op sweep
  }
  defineValue(c, 0, builder.create<graph::MatmulOp>(c.loc, t, a, b, TypeAttr()).getOutput());
}

/// The ONNX schema forms of Gemm: C is optional from opset 11.
static const OpForm kGemmForms[] = {
    {1, 3, 3, 1, 1, "alpha beta broadcast transA transB"},
    {7, 3, 3, 1, 1, "alpha beta transA transB"},
    {11, 2, 3, 1, 1, "alpha beta transA transB"},
};

void Importer::convertGemm(const NodeCtx &c) {
  Value a = input(c, 0), b = input(c, 1), bias = optInput(c, 2);
  requireFloat(c, 0, elemOf(a));
  requireFloat(c, 1, elemOf(b));
  if (bias)
    requireFloat(c, 2, elemOf(bias));
  float alpha = attrFloat(c, "alpha", 1.0f), beta = attrFloat(c, "beta", 1.0f);
  bool transA = attrBool(c, "transA", false), transB = attrBool(c, "transB", false);
  if (shapeOf(a).size() != 2 || shapeOf(b).size() != 2)
    nodeFail(c, "A and B must be 2-D, got " + graph::formatShape(shapeOf(a)) + " and " +
                    graph::formatShape(shapeOf(b)));
  if (transA)
    a = transpose(c, a, {1, 0});
  BoolAttr transAttr = transB ? builder.getBoolAttr(true) : BoolAttr();
  RankedTensorType outType =
      inferredType<graph::LinearOp>(c, elemOf(a), a, b, Value(), transAttr, TypeAttr());
  ArrayRef<int64_t> out = outType.getShape();
  if (bias) {
    ShapeOrError withC = graph::broadcastShapes(out, shapeOf(bias));
    if (!withC.ok() || ArrayRef<int64_t>(withC.shape) != ArrayRef<int64_t>(out))
      nodeFail(c, "C shape " + graph::formatShape(shapeOf(bias)) +
                      " does not broadcast to the output shape " + graph::formatShape(out));
    // beta scales C only; beta = 0 drops C (as onnxruntime does).
    if (beta == 0.0f)
      bias = nullptr;
    else if (beta != 1.0f)
      bias =
          builder.create<graph::MulOp>(c.loc, bias.getType(), bias, scalarF32(c, beta)).getOutput();
  }
  Value y;
  if (alpha == 1.0f) {
    // Y = A'B' + beta C: the bias epilogue of one mp.linear.
    y = builder.create<graph::LinearOp>(c.loc, outType, a, b, bias, transAttr, TypeAttr())
            .getOutput();
  } else {
    // Y = alpha (A'B') + beta C: alpha scales the product only, so C cannot
    // ride in the linear's bias.
    y = builder.create<graph::LinearOp>(c.loc, outType, a, b, Value(), transAttr, TypeAttr())
            .getOutput();
    y = builder.create<graph::MulOp>(c.loc, outType, y, scalarF32(c, alpha)).getOutput();
    if (bias)
      y = builder.create<graph::AddOp>(c.loc, outType, y, bias).getOutput();
  }
  defineValue(c, 0, y);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

/// Folds integer Add/Sub/Mul/Div on two constants with broadcasting
/// (shape arithmetic in exported graphs). Wraps on overflow like the
/// runtime would; division by zero is an error.
static std::optional<std::string> foldIntBinary(llvm::StringRef op, DenseElementsAttr a,
                                                DenseElementsAttr b, ArrayRef<int64_t> outShape,
                                                SmallVector<int64_t> &out) {
  SmallVector<int64_t> va = intValues(a), vb = intValues(b);
  ArrayRef<int64_t> sa = a.getType().getShape(), sb = b.getType().getShape();
  size_t rank = outShape.size();
  SmallVector<int64_t> strA = stridesOf(sa), strB = stridesOf(sb);
  int64_t n = graph::numElements(outShape);
  out.resize(n);
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      size_t da = d + sa.size() - rank, db = d + sb.size() - rank; // may wrap: checked below
      if (d >= rank - sa.size() && sa[da] != 1)
        ia += idx[d] * strA[da];
      if (d >= rank - sb.size() && sb[db] != 1)
        ib += idx[d] * strB[db];
    }
    auto x = static_cast<uint64_t>(va[ia]), y = static_cast<uint64_t>(vb[ib]);
    uint64_t r;
    if (op == "Add")
      r = x + y;
    else if (op == "Sub")
      r = x - y;
    else if (op == "Mul")
      r = x * y;
    else {
      if (vb[ib] == 0)
        return std::string("integer division by zero in constant folding");
      if (va[ia] == std::numeric_limits<int64_t>::min() && vb[ib] == -1)
        r = x; // the one overflowing quotient wraps to itself
      else
        r = static_cast<uint64_t>(va[ia] / vb[ib]);
    }
    out[flat] = static_cast<int64_t>(r);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return std::nullopt;
}

/// The ONNX schema forms of Add, Sub, Mul and Div, and of Pow (no consumed_inputs):
/// legacy broadcasting (axis, broadcast) ends at opset 7.
static const OpForm kArithmeticForms[] = {
    {1, 2, 2, 1, 1, "axis broadcast consumed_inputs"},
    {6, 2, 2, 1, 1, "axis broadcast"},
    {7, 2, 2, 1, 1, ""},
};
static const OpForm kPowForms[] = {
    {1, 2, 2, 1, 1, "axis broadcast"},
    {7, 2, 2, 1, 1, ""},
};

void Importer::convertBinary(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  if (opset < 7 && hasAttr(c, "axis"))
    nodeFail(c, "legacy broadcasting with attribute 'axis' (opset < 7) is not supported");
  Entry &ea = entryOf(c, 0);
  Entry &eb = entryOf(c, 1);
  Type ta = entryType(ea).getElementType(), tb = entryType(eb).getElementType();
  ArrayRef<int64_t> sa = entryType(ea).getShape(), sb = entryType(eb).getShape();
  Shape s = expectShape(c, graph::broadcastShapes(sa, sb));

  if (op != "Pow" && ta == tb && isa<IntegerType>(ta) && !ta.isInteger(1) && ea.constant &&
      eb.constant) {
    if (graph::numElements(s) > kMaxFoldElements)
      nodeFail(c, "integer arithmetic on constants of shape " + graph::formatShape(s) +
                      " is too large to fold");
    SmallVector<int64_t> out;
    if (auto err = foldIntBinary(op, ea.constant, eb.constant, s, out))
      nodeFail(c, *err);
    defineConst(c, 0, makeIntAttr(s, ta, out));
    return;
  }
  if (!isFloat(ta))
    nodeFail(c, "input #0 (" + quotedName(c.node.input(0)) + ") is " + elementTypeName(ta) +
                    "; integer arithmetic is supported only when both inputs are compile-time "
                    "constants");
  Value a = materialize(ea);
  Value b;
  if (op == "Pow" && !isFloat(tb)) {
    // Pow(float, int) is a float power: convert the exponent.
    if (eb.constant) {
      SmallVector<float> f;
      for (int64_t v : intValues(eb.constant))
        f.push_back(static_cast<float>(v));
      b = constant(c.loc, makeF32Attr(ctx, sb, f));
    } else {
      b = builder.create<graph::CastOp>(c.loc, tensorType(sb, ta), materialize(eb)).getOutput();
    }
  } else {
    if (ta != tb)
      nodeFail(c, "operand element types differ: " + elementTypeName(ta) + " and " +
                      elementTypeName(tb));
    b = materialize(eb);
  }
  RankedTensorType t = tensorType(s, ta);
  Value r;
  if (op == "Add")
    r = builder.create<graph::AddOp>(c.loc, t, a, b).getOutput();
  else if (op == "Sub")
    r = builder.create<graph::SubOp>(c.loc, t, a, b).getOutput();
  else if (op == "Mul")
    r = builder.create<graph::MulOp>(c.loc, t, a, b).getOutput();
  else if (op == "Div")
    r = builder.create<graph::DivOp>(c.loc, t, a, b).getOutput();
  else
    r = builder.create<graph::PowOp>(c.loc, t, a, b).getOutput();
  defineValue(c, 0, r);
}

/// The ONNX schema forms of Relu, Tanh, Sigmoid, Exp, Log, Sqrt, Reciprocal and Neg, and
/// of Erf.
static const OpForm kUnaryForms[] = {
    {1, 1, 1, 1, 1, "consumed_inputs"},
    {6, 1, 1, 1, 1, ""},
};
static const OpForm kErfForms[] = {
    {9, 1, 1, 1, 1, ""},
};

void Importer::convertUnary(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  llvm::StringRef op = c.node.op_type();
  Type t = x.getType();
  Value r;
  if (op == "Relu")
    r = builder.create<graph::ReluOp>(c.loc, t, x).getOutput();
  else if (op == "Tanh")
    r = builder.create<graph::TanhOp>(c.loc, t, x).getOutput();
  else if (op == "Sigmoid")
    r = builder.create<graph::SigmoidOp>(c.loc, t, x).getOutput();
  else if (op == "Exp")
    r = builder.create<graph::ExpOp>(c.loc, t, x).getOutput();
  else if (op == "Log")
    r = builder.create<graph::LogOp>(c.loc, t, x).getOutput();
  else if (op == "Sqrt")
    r = builder.create<graph::SqrtOp>(c.loc, t, x).getOutput();
  else if (op == "Erf")
    r = builder.create<graph::ErfOp>(c.loc, t, x).getOutput();
  else if (op == "Reciprocal")
    r = builder.create<graph::ReciprocalOp>(c.loc, t, x).getOutput();
  else
    r = builder.create<graph::NegOp>(c.loc, t, x).getOutput();
  defineValue(c, 0, r);
}

/// The ONNX schema forms of Gelu.
static const OpForm kGeluForms[] = {
    {20, 1, 1, 1, 1, "approximate"},
};

void Importer::convertGelu(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  std::string approximate = attrString(c, "approximate", "none");
  std::optional<graph::GeluApproximation> kind = graph::symbolizeGeluApproximation(approximate);
  if (!kind)
    nodeFail(c, "attribute 'approximate' must be \"none\" or \"tanh\", got \"" +
                    escapeControls(approximate) + "\"");
  defineValue(c, 0,
              builder
                  .create<graph::GeluOp>(c.loc, x.getType(), x,
                                         graph::GeluApproximationAttr::get(builder.getContext(), *kind))
                  .getOutput());
}

/// The ONNX schema forms of Where.
static const OpForm kWhereForms[] = {
    {9, 3, 3, 1, 1, ""},
};

void Importer::convertWhere(const NodeCtx &c) {
  Value cond = input(c, 0), x = input(c, 1), y = input(c, 2);
  if (!elemOf(cond).isInteger(1))
    nodeFail(c, "condition (" + quotedName(c.node.input(0)) + ") must be BOOL, got " +
                    elementTypeName(elemOf(cond)));
  requireFloat(c, 1, elemOf(x));
  requireFloat(c, 2, elemOf(y));
  if (elemOf(x) != elemOf(y))
    nodeFail(c, "X and Y element types differ");
  defineValue(c, 0, createInferred<graph::WhereOp>(c, elemOf(x), cond, x, y));
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Softmax and LogSoftmax (axis changes meaning at 13, not form).
static const OpForm kSoftmaxForms[] = {
    {1, 1, 1, 1, 1, "axis"},
};

void Importer::convertSoftmax(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0)
    nodeFail(c, "input must have rank >= 1");
  // Before opset 13 Softmax coerces the input to 2-D [prod(dims[:axis]),
  // prod(dims[axis:])] and normalizes each row; from 13 it normalizes one
  // axis.
  bool legacy = opset < 13;
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", legacy ? 1 : -1), rank);
  bool isLog = c.node.op_type() == "LogSoftmax";
  auto make = [&](Value in, int64_t ax) -> Value {
    IntegerAttr axAttr = builder.getI64IntegerAttr(ax);
    if (isLog)
      return builder.create<graph::LogSoftmaxOp>(c.loc, in.getType(), in, axAttr, TypeAttr())
          .getOutput();
    return builder.create<graph::SoftmaxOp>(c.loc, in.getType(), in, axAttr, TypeAttr())
        .getOutput();
  };
  // Legacy softmax at the last axis is the same as single-axis softmax.
  if (!legacy || axis == rank - 1) {
    defineValue(c, 0, make(x, axis));
    return;
  }
  int64_t outer = product(shape, 0, axis), inner = product(shape, axis, rank);
  Value flat = reshape(c, x, {outer, inner});
  defineValue(c, 0, reshape(c, make(flat, 1), shape));
}

/// The ONNX schema forms of LayerNorm.
static const OpForm kLayerNormForms[] = {
    {17, 2, 3, 1, 3, "axis epsilon stash_type *"},
};

void Importer::convertLayerNorm(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  requireFloat(c, 1, inputType(c, 1).getElementType());
  if (hasInput(c, 2))
    requireFloat(c, 2, inputType(c, 2).getElementType());
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0)
    nodeFail(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", -1), rank);
  float eps = attrFloat(c, "epsilon", 1e-5f);
  if (!(eps > 0.0f))
    nodeFail(c, "attribute 'epsilon' must be positive, got " + std::to_string(eps));
  requireUnusedOutputs(c, 1, "only output #0 (Y) of LayerNormalization is supported");
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  // Scale and B are shaped like the normalized dims; one with the same
  // element count (e.g. [64] for [1, 64]) is reshaped to match.
  auto param = [&](int i, const char *role) -> Value {
    if (!hasInput(c, i))
      return Value();
    RankedTensorType t = inputType(c, i);
    if (t.getShape() == normalized)
      return input(c, i);
    if (graph::numElements(t.getShape()) != graph::numElements(normalized))
      nodeFail(c, llvm::Twine(role) + " shape " + graph::formatShape(t.getShape()) +
                      " does not match the normalized shape " + graph::formatShape(normalized));
    return reshapeInput(c, i, normalized);
  };
  Value scale = param(1, "Scale");
  if (!scale)
    nodeFail(c, "missing required input #1 (Scale)");
  Value bias = param(2, "B");
  defineValue(c, 0,
              builder
                  .create<graph::LayerNormOp>(c.loc, x.getType(), x, scale, bias,
                                              builder.getI64IntegerAttr(axis),
                                              builder.getF32FloatAttr(eps), TypeAttr())
                  .getOutput());
}

/// The ONNX schema forms of BatchNorm.
static const OpForm kBatchNormForms[] = {
    {1, 5, 5, 1, 5, "consumed_inputs epsilon is_test momentum spatial"},
    {6, 5, 5, 1, 5, "epsilon is_test momentum spatial"},
    {7, 5, 5, 1, 5, "epsilon momentum spatial"},
    {9, 5, 5, 1, 5, "epsilon momentum"},
    {14, 5, 5, 1, 3, "epsilon momentum training_mode"},
};

void Importer::convertBatchNorm(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  if (attrInt(c, "training_mode", 0) != 0)
    nodeFail(c, "attribute 'training_mode' must be 0: only inference is supported");
  if (opset < 9 && attrInt(c, "spatial", 1) != 1)
    nodeFail(c, "attribute 'spatial' must be 1: per-activation statistics are not supported");
  float eps = attrFloat(c, "epsilon", 1e-5f);
  if (!(eps >= 0.0f))
    nodeFail(c, "attribute 'epsilon' must be non-negative, got " + std::to_string(eps));
  requireUnusedOutputs(c, 1, "only output #0 (Y) of BatchNormalization is supported");
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 2)
    nodeFail(c, "input must have rank >= 2 (N, C, ...), got " + graph::formatShape(shape));
  int64_t channels = shape[1];
  static const char *roles[] = {"scale", "B", "input_mean", "input_var"};
  SmallVector<Value, 4> params;
  for (int i = 1; i <= 4; ++i) {
    RankedTensorType t = inputType(c, i);
    requireFloat(c, i, t.getElementType());
    if (graph::numElements(t.getShape()) != channels)
      nodeFail(c, llvm::Twine(roles[i - 1]) + " shape " + graph::formatShape(t.getShape()) +
                      " must be [" + llvm::Twine(channels) + "] (one value per channel)");
    params.push_back(reshapeInput(c, i, {channels}));
  }
  defineValue(c, 0,
              builder
                  .create<graph::BatchNormOp>(c.loc, x.getType(), x, params[0], params[1],
                                              params[2], params[3], builder.getF32FloatAttr(eps),
                                              TypeAttr())
                  .getOutput());
}

/// The ONNX schema forms of ReduceSum, and of ReduceMean and ReduceMax: axes move from an
/// attribute to input #1 at opset 13 and 18.
static const OpForm kReduceSumForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {13, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};
static const OpForm kReduceForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {18, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};

void Importer::convertReduce(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  int64_t inputFrom = op == "ReduceSum" ? 13 : 18;
  bool axesAsInput = opset >= inputFrom;
  bool keepDims = attrBool(c, "keepdims", true);
  std::optional<SmallVector<int64_t>> axes;
  bool noopWithEmptyAxes = false;
  // checkSchema allows the attribute or the input, not both.
  if (axesAsInput) {
    noopWithEmptyAxes = attrBool(c, "noop_with_empty_axes", false);
    if (hasInput(c, 1))
      axes = requireConstInts(c, 1, "axes");
  } else {
    axes = attrInts(c, "axes");
  }
  RankedTensorType t = inputType(c, 0);
  int64_t rank = t.getRank();
  SmallVector<int64_t> norm;
  if (!axes || axes->empty()) {
    // No axes: identity with noop_with_empty_axes, else every axis (mp
    // reductions spell "all" out). A rank-0 input has nothing to reduce.
    if (noopWithEmptyAxes || rank == 0) {
      aliasOutput(c, 0, 0);
      return;
    }
    for (int64_t d = 0; d < rank; ++d)
      norm.push_back(d);
  } else {
    norm = normalizeAxes(c, axesAsInput ? "input 'axes'" : "attribute 'axes'", *axes, rank);
  }
  requireFloat(c, 0, t.getElementType());
  Value x = input(c, 0);
  Type et = t.getElementType();
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(norm);
  BoolAttr kd = builder.getBoolAttr(keepDims);
  Value r;
  if (op == "ReduceSum")
    r = createInferred<graph::ReduceSumOp>(c, et, x, axesAttr, kd, TypeAttr());
  else if (op == "ReduceMean")
    r = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, kd, TypeAttr());
  else
    r = createInferred<graph::ReduceMaxOp>(c, et, x, axesAttr, kd, TypeAttr());
  defineValue(c, 0, r);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Reshape.
static const OpForm kReshapeForms[] = {
    {1, 1, 1, 1, 1, "consumed_inputs shape"},
    {5, 2, 2, 1, 1, ""},
    {14, 2, 2, 1, 1, "allowzero"},
};

void Importer::convertReshape(const NodeCtx &c) {
  ArrayRef<int64_t> in = inputType(c, 0).getShape();
  SmallVector<int64_t> target;
  if (opset < 5) {
    auto attr = attrInts(c, "shape");
    if (!attr)
      nodeFail(c, "attribute 'shape' is required before opset 5");
    target = *attr;
  } else {
    target = requireConstInts(c, 1, "shape");
  }
  bool allowZero = opset >= 14 && attrBool(c, "allowzero", false);
  Shape out;
  int inferIndex = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        nodeFail(c, "shape " + graph::formatShape(target) + " copies dim " + llvm::Twine(i) +
                        " (0), but the input " + graph::formatShape(in) + " has rank " +
                        llvm::Twine(in.size()));
      out.push_back(in[i]);
    } else if (d == -1) {
      if (inferIndex >= 0)
        nodeFail(c, "shape " + graph::formatShape(target) + " has more than one -1");
      inferIndex = static_cast<int>(i);
      out.push_back(1);
    } else if (d < 0) {
      nodeFail(c,
               "shape " + graph::formatShape(target) + " has invalid dimension " + llvm::Twine(d));
    } else {
      out.push_back(d);
    }
  }
  if (allowZero && inferIndex >= 0 && llvm::is_contained(target, 0))
    nodeFail(c, "shape " + graph::formatShape(target) + " has both 0 and -1 with allowzero=1");
  int64_t total = graph::numElements(in);
  int64_t known = graph::numElements(out); // the -1 slot counts as 1
  if (known < 0)
    nodeFail(c, "shape " + graph::formatShape(target) + " has too many elements");
  if (inferIndex >= 0) {
    if (known == 0 || total % known != 0)
      nodeFail(c, "cannot reshape " + graph::formatShape(in) + " to " + graph::formatShape(target) +
                      ": the -1 dimension cannot be inferred");
    out[inferIndex] = total / known;
  } else if (known != total) {
    nodeFail(c, "cannot reshape " + graph::formatShape(in) + " (" + llvm::Twine(total) +
                    " elements) to " + graph::formatShape(out) + " (" + llvm::Twine(known) +
                    " elements)");
  }
  defineReshaped(c, 0, out);
}

/// The ONNX schema forms of Flatten.
static const OpForm kFlattenForms[] = {
    {1, 1, 1, 1, 1, "axis"},
};

void Importer::convertFlatten(const NodeCtx &c) {
  ArrayRef<int64_t> in = inputType(c, 0).getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = attrInt(c, "axis", 1);
  // axis lies in [-rank, rank] (negative from opset 11).
  if (axis < (opset >= 11 ? -rank : 0) || axis > rank)
    nodeFail(c, "attribute 'axis' " + llvm::Twine(axis) + " is out of range for rank " +
                    llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  defineReshaped(c, 0, {product(in, 0, axis), product(in, axis, rank)});
}

/// The ONNX schema forms of Unsqueeze.
static const OpForm kUnsqueezeForms[] = {
    {1, 1, 1, 1, 1, "axes"},
    {13, 2, 2, 1, 1, ""},
};

void Importer::convertUnsqueeze(const NodeCtx &c) {
  ArrayRef<int64_t> in = inputType(c, 0).getShape();
  SmallVector<int64_t> axes;
  if (opset < 13) {
    auto attr = attrInts(c, "axes");
    if (!attr)
      nodeFail(c, "attribute 'axes' is required before opset 13");
    axes = *attr;
  } else {
    axes = requireConstInts(c, 1, "axes");
  }
  int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
  SmallVector<int64_t> norm = normalizeAxes(c, "axes", axes, outRank);
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    out.push_back(llvm::is_contained(norm, d) ? 1 : in[next++]);
  defineReshaped(c, 0, out);
}

/// The ONNX schema forms of Squeeze.
static const OpForm kSqueezeForms[] = {
    {1, 1, 1, 1, 1, "axes"},
    {13, 1, 2, 1, 1, ""},
};

void Importer::convertSqueeze(const NodeCtx &c) {
  ArrayRef<int64_t> in = inputType(c, 0).getShape();
  std::optional<SmallVector<int64_t>> axes;
  if (opset < 13) {
    axes = attrInts(c, "axes");
  } else if (hasInput(c, 1)) {
    axes = requireConstInts(c, 1, "axes");
  }
  Shape out;
  if (!axes) {
    for (int64_t d : in)
      if (d != 1)
        out.push_back(d);
  } else {
    SmallVector<int64_t> norm = normalizeAxes(c, "axes", *axes, static_cast<int64_t>(in.size()));
    for (int64_t a : norm)
      if (in[a] != 1)
        nodeFail(c, "cannot squeeze axis " + llvm::Twine(a) + " of size " + llvm::Twine(in[a]) +
                        " (input shape " + graph::formatShape(in) + ")");
    for (size_t d = 0; d < in.size(); ++d)
      if (!llvm::is_contained(norm, static_cast<int64_t>(d)))
        out.push_back(in[d]);
  }
  defineReshaped(c, 0, out);
}

/// The ONNX schema forms of Transpose.
static const OpForm kTransposeForms[] = {
    {1, 1, 1, 1, 1, "perm"},
};

void Importer::convertTranspose(const NodeCtx &c) {
  Value x = input(c, 0);
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  SmallVector<int64_t> perm;
  if (auto p = attrInts(c, "perm"))
    perm = *p;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    nodeFail(c, "attribute 'perm' " + graph::formatShape(perm) + " must have " + llvm::Twine(rank) +
                    " entries");
  defineValue(c, 0, transpose(c, x, perm));
}

/// The ONNX schema forms of Concat.
static const OpForm kConcatForms[] = {
    {1, 1, kVariadic, 1, 1, "axis"},
};

void Importer::convertConcat(const NodeCtx &c) {
  int n = c.node.input_size(); // at least one (checkSchema)
  SmallVector<Entry *> entries;
  for (int i = 0; i < n; ++i)
    entries.push_back(&entryOf(c, i));
  RankedTensorType first = entryType(*entries[0]);
  int64_t rank = first.getRank();
  if (rank == 0)
    nodeFail(c, "inputs must have rank >= 1");
  std::optional<int64_t> axisAttr = attrIntOpt(c, "axis");
  if (!axisAttr && opset >= 4)
    nodeFail(c, "attribute 'axis' is required");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", axisAttr.value_or(1), rank);
  SmallVector<SmallVector<int64_t, 4>> shapes;
  bool allConst = true;
  for (int i = 0; i < n; ++i) {
    RankedTensorType t = entryType(*entries[i]);
    if (t.getElementType() != first.getElementType())
      nodeFail(c, "input #" + llvm::Twine(i) + " is " + elementTypeName(t.getElementType()) +
                      ", input #0 is " + elementTypeName(first.getElementType()));
    shapes.emplace_back(t.getShape());
    allConst &= static_cast<bool>(entries[i]->constant);
  }
  Shape s = expectShape(c, graph::concatShape(shapes, axis));
  if (allConst && isa<IntegerType>(first.getElementType()) &&
      graph::numElements(s) <= kMaxFoldElements) {
    // Shape vectors assembled from constants stay compile-time known.
    int64_t outer = product(s, 0, axis);
    SmallVector<SmallVector<int64_t>> vals;
    for (Entry *e : entries)
      vals.push_back(intValues(e->constant));
    SmallVector<int64_t> out;
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < n; ++i) {
        int64_t chunk = product(shapes[i], axis, shapes[i].size());
        out.append(vals[i].begin() + o * chunk, vals[i].begin() + (o + 1) * chunk);
      }
    defineConst(c, 0, makeIntAttr(s, first.getElementType(), out));
    return;
  }
  SmallVector<Value> operands;
  for (Entry *e : entries)
    operands.push_back(materialize(*e));
  defineValue(c, 0,
              builder
                  .create<graph::ConcatOp>(c.loc, tensorType(s, first.getElementType()), operands,
                                           builder.getI64IntegerAttr(axis))
                  .getOutput());
}

/// The ONNX schema forms of Slice.
static const OpForm kSliceForms[] = {
    {1, 1, 1, 1, 1, "axes ends starts"},
    {10, 3, 5, 1, 1, ""},
};

void Importer::convertSlice(const NodeCtx &c) {
  RankedTensorType t = inputType(c, 0);
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = t.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  bool haveAxes = false, haveSteps = false;
  if (opset < 10) {
    auto s = attrInts(c, "starts"), e = attrInts(c, "ends");
    if (!s || !e)
      nodeFail(c, "attributes 'starts' and 'ends' are required before opset 10");
    starts = *s;
    ends = *e;
    if (auto a = attrInts(c, "axes")) {
      axes = *a;
      haveAxes = true;
    }
  } else {
    starts = requireConstInts(c, 1, "starts");
    ends = requireConstInts(c, 2, "ends");
    if (hasInput(c, 3)) {
      axes = requireConstInts(c, 3, "axes");
      haveAxes = true;
    }
    if (hasInput(c, 4)) {
      steps = requireConstInts(c, 4, "steps");
      haveSteps = true;
    }
  }
  if (!haveAxes)
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (!haveSteps)
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    nodeFail(c, "starts, ends, axes and steps must have the same length, got " +
                    llvm::Twine(starts.size()) + ", " + llvm::Twine(ends.size()) + ", " +
                    llvm::Twine(axes.size()) + ", " + llvm::Twine(steps.size()));

  SmallVector<int64_t> outStarts(rank, 0), outSteps(rank, 1);
  Shape counts(in.begin(), in.end());
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = normalizeAxis(c, "axis", axes[k], rank);
    if (seen[axis])
      nodeFail(c, "axis " + llvm::Twine(axis) + " is sliced twice");
    seen[axis] = true;
    int64_t step = steps[k];
    if (step == 0)
      nodeFail(c, "step of axis " + llvm::Twine(axis) + " is zero");
    int64_t dim = in[axis];
    int64_t s = starts[k], e = ends[k];
    // ONNX: negative indices count from the end, then clamp to [0, dim] for
    // positive steps and [0, dim-1] / [-1, dim-1] for negative ones (so
    // INT64_MAX / INT64_MIN ends mean "to the end"). dim <= INT64_MAX so
    // adding it to a negative index cannot overflow.
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    int64_t count = 0;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e > s)
        count =
            static_cast<int64_t>(static_cast<uint64_t>(e - s - 1) / static_cast<uint64_t>(step)) +
            1;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      uint64_t magnitude = 0 - static_cast<uint64_t>(step); // |INT64_MIN| fits uint64
      if (s > e)
        count = static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / magnitude) + 1;
    }
    outStarts[axis] = count > 0 ? s : 0;
    // A step only matters between two taken elements: with one or none,
    // any step (INT64_MAX included) means 1, which every backend accepts.
    outSteps[axis] = count > 1 ? step : 1;
    counts[axis] = count;
  }
  std::string bounds = graph::checkSliceBounds(in, outStarts, outSteps, counts);
  if (!bounds.empty())
    nodeFail(c, bounds);
  defineSlice(c, 0, outStarts, outSteps, counts);
}

/// Defines output `out` of `c` as input #0 sliced at `starts` by `steps`,
/// `counts` elements per dim (bounds checked by the caller): an alias when
/// it takes everything, a folded constant for small integer constants
/// (shape arithmetic stays compile-time known), else mp.slice.
void Importer::defineSlice(const NodeCtx &c, int out, ArrayRef<int64_t> starts,
                           ArrayRef<int64_t> steps, ArrayRef<int64_t> counts) {
  RankedTensorType t = inputType(c, 0);
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = t.getRank();
  bool identity =
      counts == in && llvm::all_of(steps, [](int64_t s) { return s == 1; });
  if (identity) {
    aliasOutput(c, out, 0);
    return;
  }
  Entry &data = entryOf(c, 0);
  if (data.constant && isa<IntegerType>(t.getElementType()) &&
      graph::numElements(counts) <= kMaxFoldElements) {
    SmallVector<int64_t> vals = intValues(data.constant), values;
    SmallVector<int64_t> strides = stridesOf(in);
    int64_t n = graph::numElements(counts);
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d)
        src += (starts[d] + idx[d] * steps[d]) * strides[d];
      values.push_back(vals[src]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < counts[d])
          break;
        idx[d] = 0;
      }
    }
    defineConst(c, out, makeIntAttr(counts, t.getElementType(), values));
    return;
  }
  Value x = materialize(data);
  defineValue(c, out,
              builder
                  .create<graph::SliceOp>(c.loc, tensorType(counts, t.getElementType()), x,
                                          builder.getDenseI64ArrayAttr(starts),
                                          builder.getDenseI64ArrayAttr(steps))
                  .getOutput());
}

/// The ONNX schema forms of Split.
static const OpForm kSplitForms[] = {
    {1, 1, 2, 1, kVariadic, "axis split"},
    {2, 1, 1, 1, kVariadic, "axis split"},
    {13, 1, 2, 1, kVariadic, "axis"},
    {18, 1, 2, 1, kVariadic, "axis num_outputs"},
};

/// The sizes a Split node cuts `dim` into: the `split` input (opset 1 and
/// 13+) or attribute (before 13), else `num_outputs` parts of ceil(dim / n)
/// with the last smaller (18+), else equal parts, one per output (before 18).
SmallVector<int64_t> Importer::splitSizes(const NodeCtx &c, int64_t dim) {
  int outputs = c.node.output_size();
  std::optional<int64_t> numOutputs = attrIntOpt(c, "num_outputs");
  SmallVector<int64_t> sizes;
  if (hasInput(c, 1)) {
    if (numOutputs)
      nodeFail(c, "takes the 'split' input or the 'num_outputs' attribute, not both");
    sizes = requireConstInts(c, 1, "split");
  } else if (auto attr = attrInts(c, "split")) {
    sizes = *attr;
  } else if (numOutputs) {
    if (*numOutputs != outputs)
      nodeFail(c, "attribute 'num_outputs' is " + llvm::Twine(*numOutputs) + ", the node has " +
                      llvm::Twine(outputs) + " outputs");
    int64_t chunk = (dim + outputs - 1) / outputs;
    if (dim - chunk * (outputs - 1) < 0)
      nodeFail(c, "cannot cut dim " + llvm::Twine(dim) + " into " + llvm::Twine(outputs) +
                      " parts of " + llvm::Twine(chunk) + ": the last would be negative");
    sizes.assign(outputs, chunk);
    sizes.back() = dim - chunk * (outputs - 1);
  } else {
    if (opset >= 18)
      nodeFail(c, "needs the 'split' input or the 'num_outputs' attribute from opset 18");
    if (dim % outputs != 0)
      nodeFail(c, "cannot split dim " + llvm::Twine(dim) + " into " + llvm::Twine(outputs) +
                      " equal parts");
    sizes.assign(outputs, dim / outputs);
  }
  if (static_cast<int>(sizes.size()) != outputs)
    nodeFail(c, "'split' has " + llvm::Twine(sizes.size()) + " sizes, the node has " +
                    llvm::Twine(outputs) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim)
      nodeFail(c, "split size " + llvm::Twine(s) + " is outside [0, " + llvm::Twine(dim) + "]");
    total += s;
  }
  if (total != dim)
    nodeFail(c, "split sizes add up to " + llvm::Twine(total) + ", the axis has " +
                    llvm::Twine(dim));
  return sizes;
}

/// Split: output i is the slice of the input along `axis` after the first
/// i sizes (GPT-style decoders split a fused QKV projection this way).
void Importer::convertSplit(const NodeCtx &c) {
  RankedTensorType t = inputType(c, 0);
  int64_t rank = t.getRank();
  if (rank == 0)
    nodeFail(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrIntOpt(c, "axis").value_or(0), rank);
  SmallVector<int64_t> sizes = splitSizes(c, t.getDimSize(axis));
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
  Shape counts(t.getShape().begin(), t.getShape().end());
  for (int i = 0; i < c.node.output_size(); ++i) {
    counts[axis] = sizes[i];
    if (!c.node.output(i).empty())
      defineSlice(c, i, starts, steps, counts);
    starts[axis] += sizes[i];
  }
}

/// The ONNX schema forms of Gather.
static const OpForm kGatherForms[] = {
    {1, 2, 2, 1, 1, "axis"},
};

void Importer::convertGather(const NodeCtx &c) {
  Entry &data = entryOf(c, 0);
  Entry &indices = entryOf(c, 1);
  RankedTensorType dt = entryType(data), it = entryType(indices);
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    nodeFail(c, "indices (" + quotedName(c.node.input(1)) + ") must be INT64 or INT32, got " +
                    elementTypeName(it.getElementType()));
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", 0), dt.getRank());
  Shape s = expectShape(c, graph::gatherShape(dt.getShape(), it.getShape(), axis));
  int64_t dim = dt.getDimSize(axis);
  SmallVector<int64_t> idx;
  if (indices.constant) {
    // Constant indices are checked now instead of failing at run time.
    idx = intValues(indices.constant);
    for (int64_t &i : idx) {
      if (i < -dim || i >= dim)
        nodeFail(c, "index " + llvm::Twine(i) + " is out of range for axis " + llvm::Twine(axis) +
                        " of size " + llvm::Twine(dim));
      if (i < 0)
        i += dim;
    }
  }
  if (data.constant && indices.constant && isa<IntegerType>(dt.getElementType()) &&
      graph::numElements(s) <= kMaxFoldElements) {
    SmallVector<int64_t> vals = intValues(data.constant), out;
    int64_t outer = product(dt.getShape(), 0, axis);
    int64_t inner = product(dt.getShape(), axis + 1, dt.getRank());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx) {
        auto begin = vals.begin() + (o * dim + i) * inner;
        out.append(begin, begin + inner);
      }
    defineConst(c, 0, makeIntAttr(s, dt.getElementType(), out));
    return;
  }
  Value d = materialize(data), ix = materialize(indices);
  defineValue(c, 0,
              builder
                  .create<graph::GatherOp>(c.loc, tensorType(s, dt.getElementType()), d, ix,
                                           builder.getI64IntegerAttr(axis))
                  .getOutput());
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Conv.
static const OpForm kConvForms[] = {
    {1, 2, 3, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
};

void Importer::convertConv(const NodeCtx &c) {
  Value x = input(c, 0), w = input(c, 1), bias = optInput(c, 2);
  require4D(c, shapeOf(x), "convolution");
  requireFloat(c, 0, elemOf(x));
  requireFloat(c, 1, elemOf(w));
  if (shapeOf(w).size() != 4)
    nodeFail(c, "weight must be 4-D (M, C/group, kH, kW), got " + graph::formatShape(shapeOf(w)));
  ArrayRef<int64_t> kernel = shapeOf(w).drop_front(2);
  if (auto k = attrInts(c, "kernel_shape"))
    if (ArrayRef<int64_t>(*k) != kernel)
      nodeFail(c, "attribute 'kernel_shape' " + graph::formatShape(*k) +
                      " does not match the weight's spatial dims " + graph::formatShape(kernel));
  if (auto err = checkWindowValues("kernel_shape", kernel, 2))
    nodeFail(c, "weight spatial dims " + graph::formatShape(kernel) +
                    " are not a valid kernel: " + *err);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  int64_t group = attrInt(c, "group", 1);
  if (group <= 0)
    nodeFail(c, "attribute 'group' must be positive, got " + llvm::Twine(group));
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  DenseI64ArrayAttr stridesAttr = builder.getDenseI64ArrayAttr(strides);
  DenseI64ArrayAttr padsAttr = builder.getDenseI64ArrayAttr(pads);
  DenseI64ArrayAttr dilationsAttr = builder.getDenseI64ArrayAttr(dilations);
  IntegerAttr groupAttr = builder.getI64IntegerAttr(group);
  RankedTensorType t = inferredType<graph::Conv2dOp>(
      c, elemOf(x), x, w, bias, stridesAttr, padsAttr, dilationsAttr, groupAttr, TypeAttr());
  if (bias) {
    requireFloat(c, 2, elemOf(bias));
    if (shapeOf(bias) != ArrayRef<int64_t>{shapeOf(w)[0]})
      nodeFail(c, "bias shape " + graph::formatShape(shapeOf(bias)) + " must be [" +
                      llvm::Twine(shapeOf(w)[0]) + "] (one per output channel)");
  }
  defineValue(c, 0,
              builder
                  .create<graph::Conv2dOp>(c.loc, t, x, w, bias, stridesAttr, padsAttr,
                                           dilationsAttr, groupAttr, TypeAttr())
                  .getOutput());
}

/// The ONNX schema forms of MaxPool.
static const OpForm kMaxPoolForms[] = {
    {1, 1, 1, 1, 1, "auto_pad kernel_shape pads strides"},
    {8, 1, 1, 1, 2, "auto_pad kernel_shape pads storage_order strides"},
    {10, 1, 1, 1, 2, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
};

void Importer::convertMaxPool(const NodeCtx &c) {
  Value x = input(c, 0);
  require4D(c, shapeOf(x), "pooling");
  requireFloat(c, 0, elemOf(x));
  if (attrInt(c, "storage_order", 0) != 0)
    nodeFail(c, "attribute 'storage_order' must be 0 (only row-major indices are defined)");
  requireUnusedOutputs(c, 1, "the Indices output of MaxPool is not supported");
  SmallVector<int64_t> kernel = windowInts(c, "kernel_shape", std::nullopt);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  bool ceilMode = attrBool(c, "ceil_mode", false);
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  // Dilations are optional on mp.max_pool2d: set them only when they matter.
  DenseI64ArrayAttr dil = llvm::any_of(dilations, [](int64_t d) { return d != 1; })
                              ? builder.getDenseI64ArrayAttr(dilations)
                              : DenseI64ArrayAttr();
  defineValue(c, 0,
              createInferred<graph::MaxPool2dOp>(
                  c, elemOf(x), x, builder.getDenseI64ArrayAttr(kernel),
                  builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
                  ceilMode ? builder.getBoolAttr(true) : BoolAttr(), dil));
}

/// The ONNX schema forms of AveragePool.
static const OpForm kAveragePoolForms[] = {
    {1, 1, 1, 1, 1, "auto_pad kernel_shape pads strides"},
    {7, 1, 1, 1, 1, "auto_pad count_include_pad kernel_shape pads strides"},
    {10, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad kernel_shape pads strides"},
    {19, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
};

void Importer::convertAveragePool(const NodeCtx &c) {
  Value x = input(c, 0);
  require4D(c, shapeOf(x), "pooling");
  requireFloat(c, 0, elemOf(x));
  SmallVector<int64_t> kernel = windowInts(c, "kernel_shape", std::nullopt);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    nodeFail(c, "attribute 'dilations' " + graph::formatShape(dilations) +
                    " is not supported for AveragePool (only 1)");
  bool ceilMode = attrBool(c, "ceil_mode", false);
  bool countIncludePad = attrBool(c, "count_include_pad", false);
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  defineValue(c, 0,
              createInferred<graph::AvgPool2dOp>(
                  c, elemOf(x), x, builder.getDenseI64ArrayAttr(kernel),
                  builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
                  ceilMode ? builder.getBoolAttr(true) : BoolAttr(),
                  countIncludePad ? builder.getBoolAttr(true) : BoolAttr()));
}

/// The ONNX schema forms of GlobalAveragePool and GlobalMaxPool.
static const OpForm kGlobalPoolForms[] = {
    {1, 1, 1, 1, 1, ""},
};

void Importer::convertGlobalPool(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 3)
    nodeFail(c, "input must have rank >= 3 (N, C, spatial...), got " + graph::formatShape(shape));
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
    axes.push_back(d);
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
  BoolAttr kd = builder.getBoolAttr(true);
  Value r = c.node.op_type() == "GlobalAveragePool"
                ? createInferred<graph::ReduceMeanOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr())
                : createInferred<graph::ReduceMaxOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr());
  defineValue(c, 0, r);
}

//===----------------------------------------------------------------------===//
// Casts, constants, identities
//===----------------------------------------------------------------------===//

/// Converts constant values between the importer's element types with ONNX
/// Cast semantics: float to int truncates toward zero (saturating, NaN 0),
/// anything to bool is "!= 0".
static DenseElementsAttr foldCast(MLIRContext &ctx, DenseElementsAttr in, Type to) {
  Type from = in.getElementType();
  ArrayRef<int64_t> shape = in.getType().getShape();
  if (isa<FloatType>(from)) {
    SmallVector<float> f = floatValues(in);
    if (isa<FloatType>(to))
      return makeF32Attr(ctx, shape, f);
    SmallVector<int64_t> out;
    for (float v : f) {
      if (to.isInteger(1)) {
        out.push_back(v != 0.0f);
        continue;
      }
      llvm::APSInt r(to.getIntOrFloatBitWidth(), /*isUnsigned=*/false);
      bool exact = false;
      llvm::APFloat(v).convertToInteger(r, llvm::APFloat::rmTowardZero, &exact);
      out.push_back(std::isnan(v) ? 0 : r.getSExtValue());
    }
    return makeIntAttr(shape, to, out);
  }
  SmallVector<int64_t> iv = intValues(in);
  if (isa<FloatType>(to)) {
    SmallVector<float> out(iv.begin(), iv.end());
    return makeF32Attr(ctx, shape, out);
  }
  return makeIntAttr(shape, to, iv); // i32 wraps, bool is "!= 0"
}

/// The ONNX schema forms of Cast: saturate and round_mode only concern FP8/FP4 targets,
/// which the importer refuses.
static const OpForm kCastForms[] = {
    {1, 1, 1, 1, 1, "to"},
    {19, 1, 1, 1, 1, "saturate to"},
    {24, 1, 1, 1, 1, "round_mode saturate to"},
};

void Importer::convertCast(const NodeCtx &c) {
  std::optional<int64_t> to = attrIntOpt(c, "to");
  if (!to)
    nodeFail(c, "attribute 'to' is required");
  Type target = valueElementType(ctx, static_cast<int32_t>(*to));
  if (!target)
    nodeFail(c, "attribute 'to' = " + dataTypeName(static_cast<int32_t>(*to)) +
                    " is not supported (FLOAT, INT64, INT32, BOOL)");
  Entry &e = entryOf(c, 0);
  RankedTensorType t = entryType(e);
  if (t.getElementType() == target) {
    aliasOutput(c, 0, 0);
    return;
  }
  if (e.constant) {
    defineConst(c, 0, foldCast(ctx, e.constant, target));
    return;
  }
  Value x = materialize(e);
  defineValue(
      c, 0, builder.create<graph::CastOp>(c.loc, tensorType(t.getShape(), target), x).getOutput());
}

/// The ONNX schema forms of Constant.
static const OpForm kConstantForms[] = {
    {1, 0, 0, 1, 1, "value"},
    {11, 0, 0, 1, 1, "sparse_value value"},
    {12, 0, 0, 1, 1,
     "sparse_value value value_float value_floats value_int value_ints value_string value_strings"},
};

void Importer::convertConstant(const NodeCtx &c) {
  static const char *forms[] = {"value",      "value_float",  "value_floats",  "value_int",
                                "value_ints", "value_string", "value_strings", "sparse_value"};
  int present = 0;
  for (const char *f : forms)
    present += hasAttr(c, f);
  if (present != 1)
    nodeFail(c, "needs exactly one value attribute, got " + llvm::Twine(present));
  DenseElementsAttr attr;
  if (const auto *a = findAttr(c, "value", onnx::AttributeProto::TENSOR)) {
    attr = decodeTensor(ctx, a->t(), modelDir,
                        escapeControls(path) + ": node " + quotedName(c.name) +
                            " (Constant): attribute 'value'",
                        options.onExternalFile);
  } else if (const auto *a = findAttr(c, "value_float", onnx::AttributeProto::FLOAT)) {
    attr = makeF32Attr(ctx, {}, {a->f()});
  } else if (const auto *a = findAttr(c, "value_floats", onnx::AttributeProto::FLOATS)) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    attr = makeF32Attr(ctx, {static_cast<int64_t>(v.size())}, v);
  } else if (const auto *a = findAttr(c, "value_int", onnx::AttributeProto::INT)) {
    attr = makeIntAttr({}, builder.getI64Type(), {a->i()});
  } else if (const auto *a = findAttr(c, "value_ints", onnx::AttributeProto::INTS)) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    attr = makeIntAttr({static_cast<int64_t>(v.size())}, builder.getI64Type(), v);
  } else {
    for (const char *f : {"value_string", "value_strings", "sparse_value"})
      if (hasAttr(c, f))
        nodeFail(c, "attribute '" + llvm::Twine(f) + "' is not supported");
    // An attribute listed above with an empty payload and no type.
    nodeFail(c, "the value attribute is empty");
  }
  defineConst(c, 0, attr);
}

/// The ONNX schema forms of Identity.
static const OpForm kIdentityForms[] = {
    {1, 1, 1, 1, 1, ""},
};

void Importer::convertIdentity(const NodeCtx &c) { aliasOutput(c, 0, 0); }

/// The ONNX schema forms of Dropout: ratio becomes input #1 and training_mode input #2 at
/// opset 12.
static const OpForm kDropoutForms[] = {
    {1, 1, 1, 1, 2, "consumed_inputs is_test ratio"},
    {6, 1, 1, 1, 2, "is_test ratio"},
    {7, 1, 1, 1, 2, "ratio"},
    {12, 1, 3, 1, 2, "seed"},
};

void Importer::convertDropout(const NodeCtx &c) {
  // Inference: Dropout is the identity unless training_mode is set.
  if (hasInput(c, 2)) {
    DenseElementsAttr mode = requireConst(c, 2, "training_mode");
    if (llvm::any_of(intValues(mode), [](int64_t v) { return v != 0; }))
      nodeFail(c, "training_mode must be false: only inference is supported");
  }
  requireUnusedOutputs(c, 1, "the mask output of Dropout is not supported");
  aliasOutput(c, 0, 0);
}

/// The ONNX schema forms of Shape.
static const OpForm kShapeForms[] = {
    {1, 1, 1, 1, 1, ""},
    {15, 1, 1, 1, 1, "end start"},
};

void Importer::convertShape(const NodeCtx &c) {
  // Shapes are static, so Shape is a compile-time constant.
  ArrayRef<int64_t> in = inputType(c, 0).getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = attrInt(c, "start", 0), end = attrInt(c, "end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(in[d]);
  defineConst(c, 0, makeIntAttr({static_cast<int64_t>(dims.size())}, builder.getI64Type(), dims));
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

const Importer::OpInfo *Importer::findOp(llvm::StringRef opType) {
  // Each op's forms (next to its converter) say from which opset it exists.
  static const OpInfo table[] = {
      {"MatMul", &Importer::convertMatMul, kMatMulForms},
      {"Gemm", &Importer::convertGemm, kGemmForms},
      {"Add", &Importer::convertBinary, kArithmeticForms},
      {"Sub", &Importer::convertBinary, kArithmeticForms},
      {"Mul", &Importer::convertBinary, kArithmeticForms},
      {"Div", &Importer::convertBinary, kArithmeticForms},
      {"Pow", &Importer::convertBinary, kPowForms},
      {"Relu", &Importer::convertUnary, kUnaryForms},
      {"Tanh", &Importer::convertUnary, kUnaryForms},
      {"Sigmoid", &Importer::convertUnary, kUnaryForms},
      {"Exp", &Importer::convertUnary, kUnaryForms},
      {"Log", &Importer::convertUnary, kUnaryForms},
      {"Sqrt", &Importer::convertUnary, kUnaryForms},
      {"Erf", &Importer::convertUnary, kErfForms},
      {"Reciprocal", &Importer::convertUnary, kUnaryForms},
      {"Neg", &Importer::convertUnary, kUnaryForms},
      {"Gelu", &Importer::convertGelu, kGeluForms},
      {"Softmax", &Importer::convertSoftmax, kSoftmaxForms},
      {"LogSoftmax", &Importer::convertSoftmax, kSoftmaxForms},
      {"LayerNormalization", &Importer::convertLayerNorm, kLayerNormForms},
      {"BatchNormalization", &Importer::convertBatchNorm, kBatchNormForms},
      {"ReduceSum", &Importer::convertReduce, kReduceSumForms},
      {"ReduceMean", &Importer::convertReduce, kReduceForms},
      {"ReduceMax", &Importer::convertReduce, kReduceForms},
      {"Reshape", &Importer::convertReshape, kReshapeForms},
      {"Flatten", &Importer::convertFlatten, kFlattenForms},
      {"Unsqueeze", &Importer::convertUnsqueeze, kUnsqueezeForms},
      {"Squeeze", &Importer::convertSqueeze, kSqueezeForms},
      {"Transpose", &Importer::convertTranspose, kTransposeForms},
      {"Concat", &Importer::convertConcat, kConcatForms},
      {"Slice", &Importer::convertSlice, kSliceForms},
      {"Split", &Importer::convertSplit, kSplitForms},
      {"Gather", &Importer::convertGather, kGatherForms},
      {"Where", &Importer::convertWhere, kWhereForms},
      {"Conv", &Importer::convertConv, kConvForms},
      {"MaxPool", &Importer::convertMaxPool, kMaxPoolForms},
      {"AveragePool", &Importer::convertAveragePool, kAveragePoolForms},
      {"GlobalAveragePool", &Importer::convertGlobalPool, kGlobalPoolForms},
      {"GlobalMaxPool", &Importer::convertGlobalPool, kGlobalPoolForms},
      {"Cast", &Importer::convertCast, kCastForms},
      {"Constant", &Importer::convertConstant, kConstantForms},
      {"Identity", &Importer::convertIdentity, kIdentityForms},
      {"Dropout", &Importer::convertDropout, kDropoutForms},
      {"Shape", &Importer::convertShape, kShapeForms},
  };
  for (const OpInfo &info : table)
    if (opType == info.opType)
      return &info;
  return nullptr;
}

} // namespace mixprec::compiler::onnx_import
