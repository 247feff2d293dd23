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
// mpk.elementwise holds one as an attribute (ScalarFnAttr). The cases, and
// every fact about each function, are runtime/format/ScalarFns.def's
// entries (ScalarFnCases.td is generated from it in the build tree).
include "dialects/Graph/IR/ScalarFnCases.td"

def MP_ScalarFn : I32EnumAttr<"ScalarFn", "the scalar function of an element-wise op",
                              MP_ScalarFnCases> {
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
