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


using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

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
    // The evaluator (OnnxFold.cpp) folds these up to its limit.
    nodeFail(c, "integer arithmetic on constants of shape " + graph::formatShape(s) +
                    " is too large to fold");
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
