//===- GraphEnums.td - enumerations of the mp dialect ---------------------===//
//
// Closed sets of choices are enums, not strings: the parser and the
// verifier reject anything else, and C++ switches over them are checked for
// completeness by the compiler. An enum attribute prints as its keyword in
// an op's custom form (`mp.gelu %x approximate tanh`, as arith.cmpf prints
// its predicate) and as its integer in the generic form.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_GRAPH_ENUMS
#define MIXPREC_GRAPH_ENUMS

include "mlir/IR/EnumAttr.td"

// The scalar function an element-wise op computes at each point
// (MP_ElementwiseOpInterface). The interpreter, the expression-program
// writer and the CUDA emitter each map these cases, never op types.
// mpk.elementwise holds one as an attribute (ScalarFnAttr).
def MP_ScalarFn : I32EnumAttr<"ScalarFn", "the scalar function of an element-wise op", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Div", 3, "div">,
    I32EnumAttrCase<"Pow", 4, "pow">,
    I32EnumAttrCase<"Neg", 5, "neg">,
    I32EnumAttrCase<"Relu", 6, "relu">,
    I32EnumAttrCase<"Tanh", 7, "tanh">,
    I32EnumAttrCase<"Sigmoid", 8, "sigmoid">,
    // x * sigmoid(x), the sigmoid kept in FP32: one rounding.
    I32EnumAttrCase<"Silu", 9, "silu">,
    I32EnumAttrCase<"Exp", 10, "exp">,
    I32EnumAttrCase<"Log", 11, "log">,
    I32EnumAttrCase<"Sqrt", 12, "sqrt">,
    I32EnumAttrCase<"Rsqrt", 13, "rsqrt">,
    I32EnumAttrCase<"Erf", 14, "erf">,
    I32EnumAttrCase<"Reciprocal", 15, "reciprocal">,
    I32EnumAttrCase<"GeluErf", 16, "gelu_erf">,
    I32EnumAttrCase<"GeluTanh", 17, "gelu_tanh">,
    // condition ? lhs : rhs
    I32EnumAttrCase<"Select", 18, "select">,
    // Rounds to the result element type (FP8 saturating).
    I32EnumAttrCase<"Cast", 19, "cast">,
    // fp8_satfinite(x * scale); NaN where x or scale is not finite.
    I32EnumAttrCase<"Quantize", 20, "quantize">,
    // x / scale
    I32EnumAttrCase<"Dequantize", 21, "dequantize">,
    // Predicates: 1 (true) or 0 (false), of operands compared exactly as
    // given (a bf16 and an f32 operand compare their values, no rounding).
    I32EnumAttrCase<"Equal", 22, "equal">,
    I32EnumAttrCase<"Less", 23, "less">,
    I32EnumAttrCase<"LessOrEqual", 24, "less_or_equal">,
    I32EnumAttrCase<"Greater", 25, "greater">,
    I32EnumAttrCase<"GreaterOrEqual", 26, "greater_or_equal">,
    // Logic on 0/1 operands (non-zero is true).
    I32EnumAttrCase<"And", 27, "and">,
    I32EnumAttrCase<"Or", 28, "or">,
    I32EnumAttrCase<"Xor", 29, "xor">,
    I32EnumAttrCase<"Not", 30, "not">,
    I32EnumAttrCase<"IsNaN", 31, "is_nan">,
    // |x| == inf; IsPosInf x == +inf; IsNegInf x == -inf.
    I32EnumAttrCase<"IsInf", 32, "is_inf">,
    I32EnumAttrCase<"IsPosInf", 33, "is_pos_inf">,
    I32EnumAttrCase<"IsNegInf", 34, "is_neg_inf">,
    I32EnumAttrCase<"Sin", 35, "sin">,
    I32EnumAttrCase<"Cos", 36, "cos">,
    I32EnumAttrCase<"Abs", 37, "abs">,
    // 1, -1, +0 for zeros, NaN for NaN (numpy.sign).
    I32EnumAttrCase<"Sign", 38, "sign">,
    I32EnumAttrCase<"Floor", 39, "floor">,
    I32EnumAttrCase<"Ceil", 40, "ceil">,
    // To the nearest integer, halves to even.
    I32EnumAttrCase<"Round", 41, "round">,
    // NaN in either operand wins (numpy.maximum, onnxruntime).
    I32EnumAttrCase<"Max", 42, "max">,
    I32EnumAttrCase<"Min", 43, "min">,
    // C fmod: the remainder with the dividend's sign.
    I32EnumAttrCase<"Fmod", 44, "fmod">,
    // log(1 + exp(x)) as onnxruntime computes it; one rounding.
    I32EnumAttrCase<"Softplus", 45, "softplus">,
    // x * tanh(softplus(x)); one rounding.
    I32EnumAttrCase<"Mish", 46, "mish">,
    // x * min(max(x / 6 + 1/2, 0), 1); one rounding.
    I32EnumAttrCase<"HardSwish", 47, "hard_swish">,
    // x < 0 ? slope * x : x, operands (x, slope): PRelu and LeakyRelu.
    I32EnumAttrCase<"PRelu", 48, "prelu">,
    // min(max(alpha * x + beta, 0), 1), operands (x, alpha, beta).
    I32EnumAttrCase<"HardSigmoid", 49, "hard_sigmoid">,
    // x < 0 ? alpha * (exp(x) - 1) : x, operands (x, alpha).
    I32EnumAttrCase<"Elu", 50, "elu">,
    // gamma * (x <= 0 ? alpha * (exp(x) - 1) : x), operands (x, alpha, gamma).
    I32EnumAttrCase<"Selu", 51, "selu">,
    // The floor remainder with the divisor's sign (numpy.mod): fmod(x, y),
    // plus y when the two differ in sign.
    I32EnumAttrCase<"Mod", 52, "mod">,
  ]> {
  let cppNamespace = "::mixprec::graph";
}

def MP_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how mp.gelu computes the Gaussian CDF", [
    I32EnumAttrCase<"none", 0>,   // 0.5 x (1 + erf(x / sqrt 2))
    I32EnumAttrCase<"tanh", 1>,   // tanh approximation
  ]> {
  let cppNamespace = "::mixprec::graph";
}

def MP_FusionKind : I32EnumAttr<"FusionKind", "what kind of kernel an mp.fusion becomes", [
    I32EnumAttrCase<"elementwise", 0>,
    I32EnumAttrCase<"reduction", 1>,
    I32EnumAttrCase<"gemm", 2>,
  ]> {
  let cppNamespace = "::mixprec::graph";
}

#endif // MIXPREC_GRAPH_ENUMS
