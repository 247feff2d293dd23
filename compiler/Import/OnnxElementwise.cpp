//===- OnnxElementwise.cpp - element-wise ONNX ops ------------------------===//
//
// The converters of the element-wise ops: Add/Sub/Mul/Div/Pow (with integer
// folding of constant shape arithmetic), the unary activations, Gelu and
// Where, each under its op's ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

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
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::elementwiseOps() {
  static const OpInfo table[] = {
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
      {"Where", &Importer::convertWhere, kWhereForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
