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
