//===- OnnxElementwise.cpp - element-wise ONNX ops ------------------------===//
//
// The converters of the element-wise ops: the generic ones of the simple
// unary and binary ops, whose ONNX ops, schema forms and rows come from
// runtime/format/ScalarFns.def (Add/Sub/Mul/Div/Pow, whose constants fold
// in OnnxFold.cpp, Relu, Tanh, Sin, ...); Gelu and Where, the comparisons
// and logic (bool results), the parametric activations, PRelu, variadic
// Max/Min/Sum/Mean, Mod and Clip, each under its op's ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <type_traits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

// Each MP_UNARY_OP and MP_BINARY_OP entry of runtime/format/ScalarFns.def
// with an ONNX column is imported by convertUnary or convertBinary below
// (its operands column says whether integers are accepted), under the
// column's schema forms (k<Name>Forms); its row is in the op table at the
// end of this file. The column macros: ONNX(OpType, forms...) reads as
// `ROW, OpType, forms...` and NO_ONNX as `NONE, -`, so that MP_IMPORT picks
// MP_IMPORT_ROW or MP_IMPORT_NONE, which each expansion defines.
#define ONNX(...) ROW, __VA_ARGS__
#define NO_ONNX NONE, -
#define MP_INTEGERS_FLOATS false
#define MP_INTEGERS_NUMBERS true
#define MP_IMPORT(Name, converter, integers, kind, ...)                                           \
  MP_IMPORT_##kind(Name, converter, integers, __VA_ARGS__)
#define MP_IMPORT_NONE(...)

template <class OpT, bool integers>
LogicalResult Importer::convertBinary(const NodeCtx &c) {
  constexpr bool isPow = std::is_same_v<OpT, graph::PowOp>;
  if (opset < 7 && hasAttr(c, "axis"))
    return nodeError(c, "legacy broadcasting with attribute 'axis' (opset < 7) is not supported");
  Entry *pa, *pb;
  if (failed(entryOf(c, 0, pa)) || failed(entryOf(c, 1, pb)))
    return failure();
  Entry &ea = *pa, &eb = *pb;
  Type ta = entryType(ea).getElementType(), tb = entryType(eb).getElementType();
  ArrayRef<int64_t> sa = entryType(ea).getShape(), sb = entryType(eb).getShape();
  FailureOr<Shape> broadcast = expectShape(c, shapes::broadcastShapes(sa, sb));
  if (failed(broadcast))
    return failure();
  const Shape &s = *broadcast;

  if (!isPow && ta == tb && isa<IntegerType>(ta) && !ta.isInteger(1) && ea.constant &&
      eb.constant) {
    // The evaluator (OnnxFold.cpp) folds these up to its limit.
    return nodeError(c, "integer arithmetic on constants of shape " + shapes::formatShape(s) +
                            " is too large to fold");
  }
  if (failed(integers ? requireFloatOrInteger(c, 0, ta) : requireFloat(c, 0, ta)))
    return failure();
  Value a = materialize(ea);
  Value b;
  if (isPow && isRuntimeInteger(ta)) {
    // An integer power (exact, wrapping) or, with a float exponent, the
    // truncated double power (ONNX's reference: numpy.power(int64, float32)
    // is float64, then astype(int64)). An integer exponent of the other
    // width is cast to the base's (an exponent past 2^31 has no use).
    if (failed(requireFloatOrInteger(c, 1, tb)))
      return failure();
    b = materialize(eb);
    if (isRuntimeInteger(tb) && tb != ta)
      b = builder.create<graph::CastOp>(c.loc, tensorType(sb, ta), b).getOutput();
  } else if (isPow && !isFloat(tb)) {
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
      return nodeError(c, "operand element types differ: " + elementTypeName(ta) + " and " +
                      elementTypeName(tb));
    b = materialize(eb);
  }
  defineValue(c, 0, builder.create<OpT>(c.loc, tensorType(s, ta), a, b).getOutput());
  return success();
}

template <class OpT, bool integers>
LogicalResult Importer::convertUnary(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  // Integers exactly (wrapping).
  if (failed(integers ? requireFloatOrInteger(c, 0, elemOf(x)) : requireFloat(c, 0, elemOf(x))))
    return failure();
  defineValue(c, 0, builder.create<OpT>(c.loc, x.getType(), x).getOutput());
  return success();
}

#define MP_SCALAR_FN(...)
#define MP_IMPORT_ROW(Name, converter, integers, opType, ...)                                   \
  static const OpForm k##Name##Forms[] = {__VA_ARGS__};
#define MP_UNARY_OP(Name, mnemonic, summary, operands, traits, onnx)                             \
  MP_IMPORT(Name, convertUnary, MP_INTEGERS_##operands, onnx)
#define MP_BINARY_OP(Name, mnemonic, summary, operands, traits, onnx)                            \
  MP_IMPORT(Name, convertBinary, MP_INTEGERS_##operands, onnx)
#include "runtime/format/ScalarFns.def"
#undef MP_IMPORT_ROW

/// The ONNX schema forms of Gelu.
static const OpForm kGeluForms[] = {
    {20, 1, 1, 1, 1, "approximate"},
};

LogicalResult Importer::convertGelu(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  std::string approximate;
  if (failed(attrString(c, "approximate", "none", approximate)))
    return failure();
  std::optional<graph::GeluApproximation> kind = graph::symbolizeGeluApproximation(approximate);
  if (!kind)
    return nodeError(c, "attribute 'approximate' must be \"none\" or \"tanh\", got \"" +
                    escapeControls(approximate) + "\"");
  defineValue(c, 0,
              builder
                  .create<graph::GeluOp>(c.loc, x.getType(), x,
                                         graph::GeluApproximationAttr::get(builder.getContext(), *kind))
                  .getOutput());
  return success();
}

/// The ONNX schema forms of Where.
static const OpForm kWhereForms[] = {
    {9, 3, 3, 1, 1, ""},
};

LogicalResult Importer::convertWhere(const NodeCtx &c) {
  Value cond, x, y;
  if (failed(input(c, 0, cond)) || failed(input(c, 1, x)) || failed(input(c, 2, y)))
    return failure();
  if (!elemOf(cond).isInteger(1))
    return nodeError(c, "condition (" + quotedName(c.node.input(0)) + ") must be BOOL, got " +
                    elementTypeName(elemOf(cond)));
  if (failed(requireFloatOrInteger(c, 1, elemOf(x))))
    return failure();
  if (failed(requireFloatOrInteger(c, 2, elemOf(y))))
    return failure();
  if (elemOf(x) != elemOf(y))
    return nodeError(c, "X and Y element types differ");
  FailureOr<Value> r = createInferred<graph::WhereOp>(c, elemOf(x), cond, x, y);
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// Comparisons and logic (bool results)
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Equal, Less, Greater, And, Or and Xor (legacy
/// broadcasting ends at opset 7), and of LessOrEqual and GreaterOrEqual.
static const OpForm kPredicateForms[] = {
    {1, 2, 2, 1, 1, "axis broadcast"},
    {7, 2, 2, 1, 1, ""},
};
static const OpForm kOrEqualForms[] = {
    {12, 2, 2, 1, 1, ""},
};

/// Fails unless input `i` is BOOL.
static LogicalResult requireBool(const Importer &im, const NodeCtx &c, int i, Type t) {
  if (!t.isInteger(1))
    return im.nodeError(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) +
                               ") must be BOOL, got " + elementTypeName(t));
  return success();
}

LogicalResult Importer::convertCompare(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  if (opset < 7 && hasAttr(c, "axis"))
    return nodeError(c, "legacy broadcasting with attribute 'axis' (opset < 7) is not supported");
  Value a, b;
  if (failed(input(c, 0, a)) || failed(input(c, 1, b)))
    return failure();
  Type ta = elemOf(a), tb = elemOf(b);
  if (ta != tb)
    return nodeError(c, "operand element types differ: " + elementTypeName(ta) + " and " +
                    elementTypeName(tb));
  if (ta.isInteger(1) && op != "Equal")
    return nodeError(c, "input #0 (" + quotedName(c.node.input(0)) + ") is BOOL; " + op +
                    " compares numbers");
  FailureOr<Value> r;
  if (op == "Equal")
    r = createInferred<graph::EqualOp>(c, nullptr, a, b);
  else if (op == "Less")
    r = createInferred<graph::LessOp>(c, nullptr, a, b);
  else if (op == "LessOrEqual")
    r = createInferred<graph::LessOrEqualOp>(c, nullptr, a, b);
  else if (op == "Greater")
    r = createInferred<graph::GreaterOp>(c, nullptr, a, b);
  else
    r = createInferred<graph::GreaterOrEqualOp>(c, nullptr, a, b);
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

LogicalResult Importer::convertLogic(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  if (opset < 7 && hasAttr(c, "axis"))
    return nodeError(c, "legacy broadcasting with attribute 'axis' (opset < 7) is not supported");
  Value a, b;
  if (failed(input(c, 0, a)) || failed(input(c, 1, b)) ||
      failed(requireBool(*this, c, 0, elemOf(a))) || failed(requireBool(*this, c, 1, elemOf(b))))
    return failure();
  FailureOr<Value> r;
  if (op == "And")
    r = createInferred<graph::AndOp>(c, nullptr, a, b);
  else if (op == "Or")
    r = createInferred<graph::OrOp>(c, nullptr, a, b);
  else
    r = createInferred<graph::XorOp>(c, nullptr, a, b);
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

/// The ONNX schema forms of Not, IsNaN and IsInf.
static const OpForm kNotForms[] = {
    {1, 1, 1, 1, 1, ""},
};
static const OpForm kIsNaNForms[] = {
    {9, 1, 1, 1, 1, ""},
};
static const OpForm kIsInfForms[] = {
    {10, 1, 1, 1, 1, "detect_negative detect_positive"},
};

LogicalResult Importer::convertNot(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireBool(*this, c, 0, elemOf(x))))
    return failure();
  defineValue(c, 0, builder.create<graph::NotOp>(c.loc, x.getType(), x).getOutput());
  return success();
}

LogicalResult Importer::convertIsNaNOrInf(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  RankedTensorType boolType = tensorType(shapeOf(x), builder.getI1Type());
  if (c.node.op_type() == "IsNaN") {
    defineValue(c, 0, builder.create<graph::IsNaNOp>(c.loc, boolType, x).getOutput());
    return success();
  }
  bool negative, positive;
  if (failed(attrBool(c, "detect_negative", true, negative)) ||
      failed(attrBool(c, "detect_positive", true, positive)))
    return failure();
  if (!negative && !positive) { // detects nothing: all false
    defineConst(c, 0,
                makeIntAttr(shapeOf(x), builder.getI1Type(),
                            SmallVector<int64_t>(shapes::numElements(shapeOf(x)), 0)));
    return success();
  }
  defineValue(c, 0,
              builder
                  .create<graph::IsInfOp>(c.loc, boolType, x, builder.getBoolAttr(negative),
                                          builder.getBoolAttr(positive))
                  .getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Math and activations
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of LeakyRelu and Elu; HardSigmoid; Selu.
static const OpForm kAlphaForms[] = {
    {1, 1, 1, 1, 1, "alpha consumed_inputs"},
    {6, 1, 1, 1, 1, "alpha"},
};
static const OpForm kHardSigmoidForms[] = {
    {1, 1, 1, 1, 1, "alpha beta consumed_inputs"},
    {6, 1, 1, 1, 1, "alpha beta"},
};
static const OpForm kSeluForms[] = {
    {1, 1, 1, 1, 1, "alpha gamma consumed_inputs"},
    {6, 1, 1, 1, 1, "alpha gamma"},
};

LogicalResult Importer::convertParamActivation(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  llvm::StringRef op = c.node.op_type();
  Type t = x.getType();
  auto f32 = [&](float v) { return builder.getF32FloatAttr(v); };
  // A parameter must be finite: a NaN slope would turn results into garbage.
  auto finiteAttr = [&](llvm::StringRef name, float dflt, float &v) -> LogicalResult {
    if (failed(attrFloat(c, name, dflt, v)))
      return failure();
    if (!std::isfinite(v))
      return nodeError(c, "attribute '" + name + "' must be finite, got " + std::to_string(v));
    return success();
  };
  Value r;
  float alpha, second;
  if (op == "LeakyRelu" || op == "Elu") {
    if (failed(finiteAttr("alpha", op == "Elu" ? 1.0f : 0.01f, alpha)))
      return failure();
    r = op == "Elu" ? builder.create<graph::EluOp>(c.loc, t, x, f32(alpha)).getOutput()
                    : builder.create<graph::LeakyReluOp>(c.loc, t, x, f32(alpha)).getOutput();
  } else if (op == "Selu") {
    // ONNX's defaults, the float32 values of SELU's constants.
    if (failed(finiteAttr("alpha", 1.67326319217681884765625f, alpha)) ||
        failed(finiteAttr("gamma", 1.05070102214813232421875f, second)))
      return failure();
    r = builder.create<graph::SeluOp>(c.loc, t, x, f32(alpha), f32(second)).getOutput();
  } else {
    if (failed(finiteAttr("alpha", 0.2f, alpha)) || failed(finiteAttr("beta", 0.5f, second)))
      return failure();
    r = builder.create<graph::HardSigmoidOp>(c.loc, t, x, f32(alpha), f32(second)).getOutput();
  }
  defineValue(c, 0, r);
  return success();
}

/// The ONNX schema forms of PRelu.
static const OpForm kPReluForms[] = {
    {1, 2, 2, 1, 1, "consumed_inputs"},
    {6, 2, 2, 1, 1, ""},
};

LogicalResult Importer::convertPRelu(const NodeCtx &c) {
  Value x, slope;
  if (failed(input(c, 0, x)) || failed(input(c, 1, slope)))
    return failure();
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  if (failed(requireFloat(c, 1, elemOf(slope))))
    return failure();
  FailureOr<Shape> s = expectShape(c, shapes::broadcastShapes(shapeOf(x), shapeOf(slope)));
  if (failed(s))
    return failure();
  if (ArrayRef<int64_t>(*s) != shapeOf(x))
    return nodeError(c, "slope shape " + shapes::formatShape(shapeOf(slope)) +
                            " does not broadcast to the input shape " +
                            shapes::formatShape(shapeOf(x)));
  defineValue(c, 0, builder.create<graph::PReluOp>(c.loc, x.getType(), x, slope).getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Variadic Max, Min, Sum, Mean; Mod; Clip
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Max, Min, Sum and Mean (NumPy broadcasting from 8).
static const OpForm kVariadicForms[] = {
    {1, 1, kVariadic, 1, 1, "consumed_inputs"},
    {6, 1, kVariadic, 1, 1, ""},
};

LogicalResult Importer::convertVariadic(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  Value r;
  if (failed(input(c, 0, r)))
    return failure();
  // Max and Min also take integers (exact); Sum and Mean floats only (ONNX).
  const bool integers = op == "Max" || op == "Min";
  auto require = [&](int i, Type t) {
    return integers ? requireFloatOrInteger(c, i, t) : requireFloat(c, i, t);
  };
  if (failed(require(0, elemOf(r))))
    return failure();
  for (int i = 1; i < c.node.input_size(); ++i) {
    Value v;
    if (failed(input(c, i, v)) || failed(require(i, elemOf(v))))
      return failure();
    if (elemOf(v) != elemOf(r))
      return nodeError(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) + ") is " +
                      elementTypeName(elemOf(v)) + ", input #0 is " +
                      elementTypeName(elemOf(r)));
    FailureOr<Value> next = op == "Max"   ? createInferred<graph::MaxOp>(c, nullptr, r, v)
                            : op == "Min" ? createInferred<graph::MinOp>(c, nullptr, r, v)
                                          : createInferred<graph::AddOp>(c, nullptr, r, v);
    if (failed(next))
      return failure();
    r = *next;
  }
  if (op == "Mean" && c.node.input_size() > 1) {
    FailureOr<Value> mean = createInferred<graph::DivOp>(
        c, nullptr, r, scalarF32(c, static_cast<float>(c.node.input_size())));
    if (failed(mean))
      return failure();
    r = *mean;
  }
  defineValue(c, 0, r);
  return success();
}

/// The ONNX schema forms of Mod.
static const OpForm kModForms[] = {
    {10, 2, 2, 1, 1, "fmod"},
};

LogicalResult Importer::convertMod(const NodeCtx &c) {
  int64_t fmod;
  if (failed(attrInt(c, "fmod", 0, fmod)))
    return failure();
  if (fmod != 0 && fmod != 1)
    return nodeError(c, "attribute 'fmod' must be 0 or 1, got " + llvm::Twine(fmod));
  Value a, b;
  if (failed(input(c, 0, a)) || failed(input(c, 1, b)))
    return failure();
  if (failed(requireFloatOrInteger(c, 0, elemOf(a))))
    return failure();
  if (failed(requireFloatOrInteger(c, 1, elemOf(b))))
    return failure();
  if (elemOf(a) != elemOf(b))
    return nodeError(c, "operand element types differ: " + elementTypeName(elemOf(a)) + " and " +
                    elementTypeName(elemOf(b)));
  // fmod=1: C's remainder (the dividend's sign); fmod=0: the floor
  // remainder (the divisor's sign, numpy.mod), on floats too: onnxruntime
  // refuses fmod=0 for floats, ONNX's reference computes numpy.mod.
  FailureOr<Value> r = fmod == 1 ? createInferred<graph::FmodOp>(c, nullptr, a, b)
                                 : createInferred<graph::ModOp>(c, nullptr, a, b);
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

/// The ONNX schema forms of Clip: attributes until opset 11, then optional
/// inputs.
static const OpForm kClipForms[] = {
    {1, 1, 1, 1, 1, "consumed_inputs max min"},
    {6, 1, 1, 1, 1, "max min"},
    {11, 1, 3, 1, 1, ""},
};

LogicalResult Importer::convertClip(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  // An absent bound clamps nothing (ONNX's defaults are +-FLT_MAX, which
  // differ only for infinite inputs: mixprec keeps them infinite).
  Value lo, hi;
  if (opset < 11) {
    float bound;
    if (hasAttr(c, "min")) {
      if (failed(attrFloat(c, "min", 0.0f, bound)))
        return failure();
      lo = scalarF32(c, bound);
    }
    if (hasAttr(c, "max")) {
      if (failed(attrFloat(c, "max", 0.0f, bound)))
        return failure();
      hi = scalarF32(c, bound);
    }
  } else {
    if (failed(optInput(c, 1, lo)) || failed(optInput(c, 2, hi)))
      return failure();
    for (auto [i, bound] : llvm::enumerate(SmallVector<Value>{lo, hi})) {
      if (!bound)
        continue;
      if (failed(requireFloat(c, static_cast<int>(i) + 1, elemOf(bound))))
        return failure();
      if (shapes::numElements(shapeOf(bound)) != 1)
        return nodeError(c, "input #" + llvm::Twine(i + 1) + " (" +
                                quotedName(c.node.input(i + 1)) + ") must be a scalar, got shape " +
                                shapes::formatShape(shapeOf(bound)));
    }
  }
  // min(max(x, lo), hi): a bound of shape [1] must not widen a rank-0 x.
  FailureOr<Value> r = x;
  if (lo)
    r = createInferred<graph::MaxOp>(c, nullptr, *r, reshape(c, lo, {}));
  if (succeeded(r) && hi)
    r = createInferred<graph::MinOp>(c, nullptr, *r, reshape(c, hi, {}));
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::elementwiseOps() {
  static const OpInfo table[] = {
  // The simple ops of runtime/format/ScalarFns.def: {"Tanh",
  // &Importer::convertUnary<graph::TanhOp, false>, kTanhForms}, ...
#define MP_SCALAR_FN(...)
#define MP_IMPORT_ROW(Name, converter, integers, opType, ...)                                   \
  {#opType, &Importer::converter<graph::Name##Op, integers>, k##Name##Forms},
#define MP_UNARY_OP(Name, mnemonic, summary, operands, traits, onnx)                             \
  MP_IMPORT(Name, convertUnary, MP_INTEGERS_##operands, onnx)
#define MP_BINARY_OP(Name, mnemonic, summary, operands, traits, onnx)                            \
  MP_IMPORT(Name, convertBinary, MP_INTEGERS_##operands, onnx)
#include "runtime/format/ScalarFns.def"
#undef MP_IMPORT_ROW
#undef MP_IMPORT_NONE
#undef MP_IMPORT
#undef MP_INTEGERS_FLOATS
#undef MP_INTEGERS_NUMBERS
#undef ONNX
#undef NO_ONNX
      {"Gelu", &Importer::convertGelu, kGeluForms},
      {"Where", &Importer::convertWhere, kWhereForms},
      {"Equal", &Importer::convertCompare, kPredicateForms},
      {"Less", &Importer::convertCompare, kPredicateForms},
      {"Greater", &Importer::convertCompare, kPredicateForms},
      {"LessOrEqual", &Importer::convertCompare, kOrEqualForms},
      {"GreaterOrEqual", &Importer::convertCompare, kOrEqualForms},
      {"And", &Importer::convertLogic, kPredicateForms},
      {"Or", &Importer::convertLogic, kPredicateForms},
      {"Xor", &Importer::convertLogic, kPredicateForms},
      {"Not", &Importer::convertNot, kNotForms},
      {"IsNaN", &Importer::convertIsNaNOrInf, kIsNaNForms},
      {"IsInf", &Importer::convertIsNaNOrInf, kIsInfForms},
      {"LeakyRelu", &Importer::convertParamActivation, kAlphaForms},
      {"Elu", &Importer::convertParamActivation, kAlphaForms},
      {"Selu", &Importer::convertParamActivation, kSeluForms},
      {"HardSigmoid", &Importer::convertParamActivation, kHardSigmoidForms},
      {"PRelu", &Importer::convertPRelu, kPReluForms},
      {"Max", &Importer::convertVariadic, kVariadicForms},
      {"Min", &Importer::convertVariadic, kVariadicForms},
      {"Sum", &Importer::convertVariadic, kVariadicForms},
      {"Mean", &Importer::convertVariadic, kVariadicForms},
      {"Mod", &Importer::convertMod, kModForms},
      {"Clip", &Importer::convertClip, kClipForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
