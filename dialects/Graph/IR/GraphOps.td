//===- GraphOps.td - ops of the mp graph dialect ---------------------------===//
//
// Every op verifies shapes and element types in C++ (GraphOps.cpp) with the
// shape functions of ShapeInference.h, which the ONNX importer also uses to
// infer result types. Folders and canonicalizers (mp.constant, mp.cast,
// mp.amax, mp.quantize, mp.mul) are in GraphFolds.cpp and
// GraphCanonicalize.cpp; `mixprec-opt --canonicalize` and --mp-fold-casts
// run them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_GRAPH_OPS
#define MIXPREC_GRAPH_OPS

include "dialects/Graph/IR/GraphBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// The result shape follows from the operands and attributes through the
// shape functions of ShapeInference.h, and so does the element type where
// the operands fix it (GraphTypeInference.cpp). The ONNX importer builds
// these ops with the types they infer; the verifiers check the same rules
// with messages that name them. ODS builds the op's adaptor from the
// operands and attributes; the op implements the form that takes it.
def MP_InferShapedType : InferShapedTypeOpAdaptorBase<["inferReturnTypeComponents"]>;

// The op's gradient rule is its own (GraphGradients.cpp); element-wise ops
// list MP_GradientOpInterface alone and take the ScalarFn table's rule.
def MP_OwnGradient : DeclareOpInterfaceMethods<MP_GradientOpInterface, ["buildGradients"]>;

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "A constant tensor (weights, biases, masks)";
  let description = [{
    Holds a dense tensor. Weights that the precision passes assign a low
    precision are stored in that dtype (the cast is hoisted to compile time).
    ```mlir
    %w = mp.constant dense<0.5> : tensor<64x64xf32>
    ```
    Has a folder; no verifier beyond the type match.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure, MP_CastClass, MP_ElementwiseOpInterface,
                                       MP_GradientOpInterface]> {
  let summary = "Converts the element type, rounding to nearest even";
  let description = [{
    Rounds each element to the result element type, round-to-nearest-even.
    Casts to FP8 saturate to the largest finite value; NaN stays NaN.
    Float to integer truncates toward zero (ONNX Cast).
    ```mlir
    %1 = mp.cast %0 : tensor<8x64xf32> -> tensor<8x64xbf16>
    ```
    Verifier: operand and result shapes are equal. Folder: a cast to the
    input's type is the input; a cast of an exact widening (`bf16 -> f32`)
    casts the original instead; a float cast of a constant is the constant
    rounded at compile time as the run-time cast rounds. Canonicalizer: a
    second cast of one value to one type is the first.
  }];
  let arguments = (ins MP_AnyTensor:$input);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    ::mixprec::graph::ScalarFn getScalarFn() { return ::mixprec::graph::ScalarFn::Cast; }
  }];
}

//===----------------------------------------------------------------------===//
// GEMM-class ops (lowp in the default policy)
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul",
    [Pure, MP_LowpClass, MP_Accumulates, MP_GemmKernel,
     DeclareOpInterfaceMethods<MP_GemmOpInterface>, MP_InferShapedType, MP_OwnGradient],
    ["hasFp8GemmForm", "getFlopCount", "getWeightOperands"]> {
  let summary = "Batched matrix product with NumPy broadcasting";
  let description = [{
    `numpy.matmul` semantics: 1-D operands are promoted and the added
    dimension dropped; leading (batch) dimensions broadcast. Operands share
    one element type, except FP8 pairs (E4M3xE4M3, E4M3xE5M2, E5M2xE4M3).
    The result may have any float type: an FP8 GEMM writes BF16 or FP32.
    ```mlir
    %s = mp.matmul %q, %k {acc_type = f32}
        : (tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16>) -> tensor<2x4x16x16xbf16>
    ```
    Verifier: shapes, operand element types, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$lhs, MP_FloatTensor:$rhs,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LinearOp : Graph_Op<"linear",
    [Pure, MP_LowpClass, MP_Accumulates, MP_GemmKernel,
     DeclareOpInterfaceMethods<MP_GemmOpInterface>, MP_InferShapedType, MP_OwnGradient],
    ["hasFp8GemmForm", "getFlopCount", "getWeightOperands"]> {
  let summary = "Fully connected layer: input times weight, plus bias";
  let description = [{
    `output[..., n] = sum_k input[..., k] * W[k, n] + bias[n]` where `W` is
    `weight` ([K, N]) or its transpose when `transpose_weight` is set
    (`weight` is [N, K], the PyTorch layout). `bias` is optional and
    broadcasts to the output. Maps onto a cuBLASLt GEMM with a bias epilogue.
    ```mlir
    %y = mp.linear %x, %w, %b {transpose_weight = true}
        : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    ```
    Verifier: shapes, element types as for `mp.matmul`, bias element type
    equal to the output's, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$input, MP_FloatTensor:$weight,
                       Optional<MP_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_weight,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// Lowp class like the two GEMMs it replaces: Q, K and V take the target
// dtype; the scores, the softmax and both accumulations stay in FP32 inside
// the op (runtime/kernels/Attention.h defines it and its rounding points).
def Graph_AttentionOp : Graph_Op<"attention",
    [Pure, MP_LowpClass, MP_Accumulates, MP_InferShapedType, MP_OwnGradient],
    ["getFlopCount"]> {
  let summary = "Scaled dot-product attention, the S x S scores never stored";
  let description = [{
    `softmax(scale * q k^T + bias, masked causally) v` per batch and head,
    with the row's log-sum-exp as a second result (FP32; the backward pass
    recomputes the probabilities from it). q is [B, H, Sq, D], k [B, H, Sk,
    D], v [B, H, Sk, Dv]; `bias`, optional, broadcasts to [B, H, Sq, Sk]
    (padding masks as 0 / -inf) and keeps its own dtype; `causal` masks key
    j for query i when j > i + Sk - Sq. A row whose keys are all masked
    gives 0 (as SDPA's exports do with their IsNaN guard).
    `--mp-fuse-attention` forms it from the exporters' matmul -> scale/mask
    -> softmax -> matmul.
    ```mlir
    %o, %lse = mp.attention %q, %k, %v {scale = 0.125 : f64, causal = true}
        : (tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>)
        -> (tensor<2x4x16x64xbf16>, tensor<2x4x16xf32>)
    ```
    Verifier: ranks and shapes, q/k/v element types equal, the bias
    broadcasting, an FP32 lse, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$query, MP_FloatTensor:$key, MP_FloatTensor:$value,
                       Optional<MP_NonFP8FloatTensor>:$bias, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal, MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output, MP_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// The gradient of mp.attention (its buildGradients makes it): lowp class
// as the op, FP32 inside.
def Graph_AttentionGradOp : Graph_Op<"attention_grad",
    [Pure, MP_LowpClass, MP_Accumulates], ["getFlopCount"]> {
  let summary = "Gradients of mp.attention's q, k and v, the scores recomputed";
  let description = [{
    From the forward's operands, its output and FP32 log-sum-exp and the
    output's gradient: dq, dk and dv as runtime/kernels/Attention.h defines
    them (the probabilities recomputed as exp(s - lse), never stored; the
    bias, a mask, gets no gradient). Each result has its operand's shape and
    the output gradient's dtype.
    ```mlir
    %dq, %dk, %dv = mp.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.125 : f64}
        : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>,
           tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xbf16>)
        -> (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>)
    ```
    Verifier: the forward's shape rule, out/dout shaped as the output, lse
    as its rows in FP32, results shaped as q, k, v.
  }];
  let arguments = (ins MP_FloatTensor:$query, MP_FloatTensor:$key, MP_FloatTensor:$value,
                       MP_FloatTensor:$out, MP_F32Tensor:$lse, MP_FloatTensor:$out_grad,
                       Optional<MP_NonFP8FloatTensor>:$bias, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal, MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$query_grad, MP_FloatTensor:$key_grad,
                      MP_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $out_grad (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_Conv2dOp : Graph_Op<"conv2d",
    [Pure, MP_LowpClass, MP_Accumulates, MP_InferShapedType, MP_OwnGradient],
    ["getFlopCount", "getWeightOperands"]> {
  let summary = "2-D convolution, NCHW input and OIHW weight";
  let description = [{
    ONNX `Conv` for 4-D tensors. `pads` is [top, left, bottom, right];
    `weight` is [M, C / groups, kH, kW]; `bias` is optional, [M].
    ```mlir
    %y = mp.conv2d %x, %w, %b {strides = array<i64: 1, 1>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
        : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
    ```
    Verifier: ranks, channel and group arithmetic, output size, element
    types, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$input, MP_FloatTensor:$weight,
                       Optional<MP_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ConvOp : Graph_Op<"conv",
    [Pure, MP_LowpClass, MP_Accumulates, MP_InferShapedType, MP_OwnGradient],
    ["getFlopCount", "getWeightOperands"]> {
  let summary = "N-D convolution (1 to 3 spatial dims), NC... input";
  let description = [{
    ONNX `Conv` for any of 1, 2 or 3 spatial dims: `input` is [N, C, D...],
    `weight` [M, C / groups, k...], `bias` optional [M]; `strides` and
    `dilations` hold one value per spatial dim, `pads` the begins then the
    ends. A GEMM-class op as `mp.conv2d` (lowp, FP32 accumulation; no FP8
    form). The importer writes `mp.conv2d` for 2-D and this op for 3-D.
    ```mlir
    %y = mp.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>,
        dilations = array<i64: 1, 1, 1>, groups = 1 : i64}
        : (tensor<1x2x8x8x8xf32>, tensor<4x2x3x3x3xf32>) -> tensor<1x4x8x8x8xf32>
    ```
    Verifier: ranks, attribute lengths and signs, channel and group
    arithmetic, output size, element types, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$input, MP_FloatTensor:$weight,
                       Optional<MP_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ConvTransposeOp : Graph_Op<"conv_transpose",
    [Pure, MP_LowpClass, MP_Accumulates, MP_InferShapedType, MP_OwnGradient],
    ["getFlopCount", "getWeightOperands"]> {
  let summary = "N-D transposed convolution (1 to 3 spatial dims)";
  let description = [{
    ONNX `ConvTranspose` with explicit pads (the importer resolves
    `auto_pad` and `output_shape` into `pads`): `input` is [N, C, D...],
    `weight` [C, M / groups, k...], `bias` optional [M]; each output dim is
    stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads.
    Precision: GEMM-class as `mp.conv2d` (lowp operands, FP32 accumulation,
    no FP8 form): it is the adjoint GEMM of a convolution.
    ```mlir
    %y = mp.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
        dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64}
        : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    ```
    Verifier: ranks, attribute lengths and signs, output_padding below the
    stride or dilation, channel and group arithmetic, output size, element
    types, `acc_type`.
  }];
  let arguments = (ins MP_FloatTensor:$input, MP_FloatTensor:$weight,
                       Optional<MP_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise ops (follow in the default policy, but for the fp32 class)
//===----------------------------------------------------------------------===//

// `fn` names the ScalarFn case the op computes (MP_ElementwiseOpInterface).
class MP_ScalarFnOf<string fn> {
  code decl = "::mixprec::graph::ScalarFn getScalarFn() { return ::mixprec::graph::ScalarFn::"
              # fn # "; }";
}

// Floats, or the integers computed exactly at run time (i32, i64): the
// element-wise ops below that take them, and ArgMax, TopK, CumSum.
def MP_NumericTensor : RankedTensorOf<[MP_StorageFloat, I32, I64]>;

// `operand` is what the operands and the result may hold: floats, or
// (MP_NumericTensor) also i32/i64, which run exactly in int64
// (runtime/kernels/IntElementwise.h: the int_elementwise routine, the integer
// precision class).
class Graph_BinaryOp<string mnemonic, string desc, string fn, list<Trait> traits = [],
                     TypeConstraint operand = MP_FloatTensor>
    : Graph_Op<mnemonic, !listconcat([Pure, MP_ElementwiseOpInterface, MP_InferShapedType,
                                      MP_GradientOpInterface, MP_BroadcastBinary], traits)> {
  let summary = "Element-wise " # desc # " with NumPy broadcasting";
  let description = [{
    Operands broadcast to the result shape (NumPy rules) and share its
    element type.
    ```mlir
    %c = mp.}] # mnemonic # [{ %a, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
    ```
    Verifier (MP_BroadcastBinary, one for the class): broadcast-compatible
    shapes, result shape, one element type.
  }];
  let arguments = (ins operand:$lhs, operand:$rhs);
  let results = (outs operand:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($output)
  }];
  let extraClassDeclaration = MP_ScalarFnOf<fn>.decl;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypeComponents(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::ShapedTypeComponents> &results) {
      return ::mixprec::graph::detail::inferBroadcastResult(location, adaptor.getLhs(),
                                                            adaptor.getRhs(), results);
    }
  }];
}

class Graph_UnaryOp<string mnemonic, string desc, string fn, list<Trait> traits = [],
                    TypeConstraint operand = MP_FloatTensor>
    : Graph_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType, MP_ElementwiseOpInterface,
                                      MP_GradientOpInterface], traits)> {
  let summary = "Element-wise " # desc;
  let description = [{
    Same shape and element type in and out.
    ```mlir
    %y = mp.}] # mnemonic # [{ %x : tensor<8x64xf32>
    ```
    No verifier beyond the type constraints.
  }];
  let arguments = (ins operand:$input);
  let results = (outs operand:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let extraClassDeclaration = MP_ScalarFnOf<fn>.decl;
}

// The simple unary and binary ops (mp.add, mp.tanh, ...): one ODS line per
// MP_UNARY_OP and MP_BINARY_OP entry of runtime/format/ScalarFns.def, which
// the C preprocessor writes into the build tree (ElementwiseOps.td.in).
include "dialects/Graph/IR/ElementwiseOps.td"

def Graph_GeluOp : Graph_Op<"gelu", [Pure, SameOperandsAndResultType,
                                     MP_ElementwiseOpInterface, MP_GradientOpInterface]> {
  let summary = "Element-wise GELU, exact (erf) or tanh approximation";
  let description = [{
    `approximate none` (the default, not printed): 0.5 x (1 + erf(x / sqrt 2));
    `approximate tanh`: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    ```mlir
    %y = mp.gelu %x approximate tanh : tensor<8x64xf32>
    ```
    No verifier beyond the type constraints (the enum admits nothing else).
  }];
  let arguments = (ins MP_FloatTensor:$input,
                       DefaultValuedAttr<MP_GeluApproximation,
                                         "::mixprec::graph::GeluApproximation::none">:$approximate);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = "$input (`approximate` $approximate^)? attr-dict `:` type($output)";
  let extraClassDeclaration = [{
    ::mixprec::graph::ScalarFn getScalarFn() {
      return getApproximate() == ::mixprec::graph::GeluApproximation::tanh
                 ? ::mixprec::graph::ScalarFn::GeluTanh
                 : ::mixprec::graph::ScalarFn::GeluErf;
    }
  }];
}

def Graph_WhereOp : Graph_Op<"where", [Pure, MP_ElementwiseOpInterface, MP_InferShapedType,
                                      MP_GradientOpInterface]> {
  let summary = "Element-wise select with NumPy broadcasting";
  let description = [{
    `output = condition ? lhs : rhs`; all three broadcast to the result.
    ```mlir
    %y = mp.where %mask, %s, %fill
        : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
    ```
    Verifier: shapes broadcast to the result; lhs, rhs and result share an
    element type.
  }];
  let arguments = (ins MP_BoolTensor:$condition, MP_NumericTensor:$lhs,
                       MP_NumericTensor:$rhs);
  let results = (outs MP_NumericTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = MP_ScalarFnOf<"Select">.decl;
}

//===----------------------------------------------------------------------===//
// Predicates and logic (bool results: no precision to choose; the operands
// are read exactly as given, so --mp-assign-precision gives them none and
// --mp-insert-casts leaves their operands alone: comparing a bf16 value
// with an f32 one compares the two values, never a rounded copy)
//===----------------------------------------------------------------------===//

// Operands a comparison reads: any storage float (the two may differ),
// or one integer type, or bool (equal only: the importer checks).
def MP_CompareTensor : RankedTensorOf<[MP_StorageFloat, I1, I32, I64]>;

// `fn` names the ScalarFn case (0 or 1 per point) of a two-operand predicate.
class Graph_PredicateOp<string mnemonic, string desc, string fn, TypeConstraint operand>
    : Graph_Op<mnemonic, [Pure, MP_ElementwiseOpInterface, MP_InferShapedType]> {
  let summary = "Element-wise " # desc # " with NumPy broadcasting, a bool result";
  let description = [{
    Operands broadcast to the result shape; the result is i1. Float
    operands may have different storage dtypes: each is read exactly and
    the values are compared (no cast is inserted, none is needed), so the
    answer is the same at every precision the operands were computed in.
    Integer operands are compared as integers by the interpreter; kernels
    hold values as FP32, exact for |x| <= 2^24 (indices, masks, positions).
    ```mlir
    %m = mp.}] # mnemonic # [{ %a, %b : tensor<8x64xf32>, tensor<64xbf16> -> tensor<8x64xi1>
    ```
    Verifier: broadcast-compatible shapes and result shape; both operands
    floats, or both of one integer (or bool) type.
  }];
  let arguments = (ins operand:$lhs, operand:$rhs);
  let results = (outs MP_BoolTensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($output)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = MP_ScalarFnOf<fn>.decl;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypeComponents(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::ShapedTypeComponents> &results) {
      return ::mixprec::graph::detail::inferPredicateResult(location, adaptor.getLhs(),
                                                            adaptor.getRhs(), results);
    }
  }];
}

def Graph_EqualOp : Graph_PredicateOp<"equal", "a == b", "Equal", MP_CompareTensor>;
def Graph_LessOp : Graph_PredicateOp<"less", "a < b", "Less", MP_CompareTensor>;
def Graph_LessOrEqualOp
    : Graph_PredicateOp<"less_or_equal", "a <= b", "LessOrEqual", MP_CompareTensor>;
def Graph_GreaterOp : Graph_PredicateOp<"greater", "a > b", "Greater", MP_CompareTensor>;
def Graph_GreaterOrEqualOp
    : Graph_PredicateOp<"greater_or_equal", "a >= b", "GreaterOrEqual", MP_CompareTensor>;
def Graph_AndOp : Graph_PredicateOp<"and", "logical and", "And", MP_BoolTensor>;
def Graph_OrOp : Graph_PredicateOp<"or", "logical or", "Or", MP_BoolTensor>;
def Graph_XorOp : Graph_PredicateOp<"xor", "logical exclusive or", "Xor", MP_BoolTensor>;

def Graph_NotOp : Graph_Op<"not", [Pure, SameOperandsAndResultType, MP_ElementwiseOpInterface]> {
  let summary = "Element-wise logical negation";
  let description = [{
    ```mlir
    %n = mp.not %m : tensor<8x64xi1>
    ```
    No verifier beyond the type constraints.
  }];
  let arguments = (ins MP_BoolTensor:$input);
  let results = (outs MP_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let extraClassDeclaration = MP_ScalarFnOf<"Not">.decl;
}

def Graph_IsNaNOp : Graph_Op<"is_nan", [Pure, MP_ElementwiseOpInterface]> {
  let summary = "Element-wise test for NaN, a bool result";
  let description = [{
    True where the input (any float dtype, read as given) is NaN.
    ```mlir
    %m = mp.is_nan %x : tensor<8x64xbf16> -> tensor<8x64xi1>
    ```
    Verifier: result shape equals the input's.
  }];
  let arguments = (ins MP_FloatTensor:$input);
  let results = (outs MP_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let extraClassDeclaration = MP_ScalarFnOf<"IsNaN">.decl;
}

def Graph_IsInfOp : Graph_Op<"is_inf", [Pure, MP_ElementwiseOpInterface]> {
  let summary = "Element-wise test for infinities, a bool result";
  let description = [{
    True where the input is +inf (when `detect_positive`) or -inf (when
    `detect_negative`); both default to true (ONNX IsInf).
    ```mlir
    %m = mp.is_inf %x {detect_negative = false} : tensor<8x64xf32> -> tensor<8x64xi1>
    ```
    Verifier: result shape equals the input's; at least one of the two
    detects (the importer gives the all-false case a constant).
  }];
  let arguments = (ins MP_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let results = (outs MP_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mixprec::graph::ScalarFn getScalarFn() {
      if (!getDetectNegative())
        return ::mixprec::graph::ScalarFn::IsPosInf;
      return getDetectPositive() ? ::mixprec::graph::ScalarFn::IsInf
                                 : ::mixprec::graph::ScalarFn::IsNegInf;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Parametric activations (ONNX's activations with attributes)
//===----------------------------------------------------------------------===//

// An activation with FP32 parameters held as attributes (getScalarParams):
// computed in FP32 with the parameters unrounded, then rounded once.
class Graph_ParamActivationOp<string mnemonic, string desc, string fn, dag params,
                              code paramList>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, MP_ElementwiseOpInterface,
                          MP_GradientOpInterface]> {
  let summary = "Element-wise " # desc;
  let description = [{
    Same shape and element type in and out; the parameters are FP32
    attributes, never rounded to the op's dtype (kernels read them as
    constants).
    ```mlir
    %y = mp.}] # mnemonic # [{ %x {...} : tensor<8x64xbf16>
    ```
    No verifier beyond the type constraints.
  }];
  let arguments = !con((ins MP_FloatTensor:$input), params);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let extraClassDeclaration = MP_ScalarFnOf<fn>.decl # [{
    ::llvm::SmallVector<float, 2> getScalarParams() { return }] # paramList # [{; }
  }];
}

def Graph_LeakyReluOp : Graph_ParamActivationOp<"leaky_relu",
    "LeakyReLU x < 0 ? alpha * x : x", "PRelu", (ins F32Attr:$alpha),
    [{ {getAlpha().convertToFloat()} }]>;
def Graph_EluOp : Graph_ParamActivationOp<"elu",
    "ELU x < 0 ? alpha * (exp(x) - 1) : x", "Elu", (ins F32Attr:$alpha),
    [{ {getAlpha().convertToFloat()} }]>;
def Graph_SeluOp : Graph_ParamActivationOp<"selu",
    "SELU gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)", "Selu",
    (ins F32Attr:$alpha, F32Attr:$gamma),
    [{ {getAlpha().convertToFloat(), getGamma().convertToFloat()} }]>;
def Graph_HardSigmoidOp : Graph_ParamActivationOp<"hard_sigmoid",
    "HardSigmoid min(max(alpha * x + beta, 0), 1)", "HardSigmoid",
    (ins F32Attr:$alpha, F32Attr:$beta),
    [{ {getAlpha().convertToFloat(), getBeta().convertToFloat()} }]>;

//===----------------------------------------------------------------------===//
// Reductions and normalizations (fp32 class: they accumulate)
//===----------------------------------------------------------------------===//

class Graph_SoftmaxLikeOp<string mnemonic, string desc>
    : Graph_Op<mnemonic, [Pure, MP_Fp32Class, MP_Accumulates, MP_RowReductionKernel,
                         DeclareOpInterfaceMethods<MP_RowReductionOpInterface>, MP_OwnGradient]> {
  let summary = desc # " along one axis";
  let description = [{
    Normalizes along `axis` (0 <= axis < rank; the importer normalizes
    negative axes), subtracting the maximum first. The result keeps the
    input shape; its element type may differ from the input's (autocast
    forces an FP32 output for softmax).
    ```mlir
    %p = mp.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<8x10xf32> -> tensor<8x10xf32>
    ```
    Verifier: axis range, shapes, `acc_type`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, I64Attr:$axis,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_SoftmaxLikeOp<"softmax", "Softmax">;
def Graph_LogSoftmaxOp : Graph_SoftmaxLikeOp<"log_softmax", "Log-softmax">;

def Graph_LayerNormOp : Graph_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments, MP_Fp32Class, MP_Accumulates, MP_RowReductionKernel,
     DeclareOpInterfaceMethods<MP_RowReductionOpInterface>, MP_OwnGradient]> {
  let summary = "Layer normalization over the trailing dimensions from `axis`";
  let description = [{
    ONNX `LayerNormalization`: mean and (population) variance over dims
    [axis, rank), `(x - mean) / sqrt(var + epsilon) * scale + bias`.
    `scale` and `bias` are optional and shaped like the normalized dims.
    ```mlir
    %y = mp.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
    Verifier: axis range, parameter shapes, epsilon > 0, `acc_type`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input,
                       Optional<MP_NonFP8FloatTensor>:$scale,
                       Optional<MP_NonFP8FloatTensor>:$bias,
                       I64Attr:$axis, F32Attr:$epsilon, MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = [{
    $input (`,` $scale^)? (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_RmsNormOp : Graph_Op<"rms_norm",
    [Pure, MP_Fp32Class, MP_Accumulates, MP_RowReductionKernel,
     DeclareOpInterfaceMethods<MP_RowReductionOpInterface>, MP_OwnGradient]> {
  let summary = "RMS normalization over the trailing dimensions from `axis`";
  let description = [{
    `x / sqrt(mean(x^2 over dims [axis, rank)) + epsilon) * scale`, `scale`
    optional and shaped like the normalized dims.
    ```mlir
    %y = mp.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-06 : f32}
        : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
    Verifier: axis range, scale shape, epsilon > 0, `acc_type`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input,
                       Optional<MP_NonFP8FloatTensor>:$scale,
                       I64Attr:$axis, F32Attr:$epsilon, MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = [{
    $input (`,` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BatchNormOp : Graph_Op<"batch_norm",
    [Pure, MP_Fp32Class, MP_Accumulates, MP_OwnGradient]> {
  let summary = "Batch normalization with running statistics (inference)";
  let description = [{
    `(x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c]` with the
    channel on dimension 1.
    ```mlir
    %y = mp.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<2x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
        -> tensor<2x8x16x16xf32>
    ```
    Verifier: rank >= 2, every parameter [C], epsilon >= 0, `acc_type`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, MP_NonFP8FloatTensor:$scale,
                       MP_NonFP8FloatTensor:$bias, MP_NonFP8FloatTensor:$mean,
                       MP_NonFP8FloatTensor:$variance, F32Attr:$epsilon,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Graph_ReduceOp<string mnemonic, string desc, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat([Pure, MP_RowReductionKernel, MP_InferShapedType,
                                      DeclareOpInterfaceMethods<MP_RowReductionOpInterface>,
                                      MP_OwnGradient], traits)> {
  let summary = "Reduces with " # desc # " over `axes`";
  let description = [{
    `axes` are non-negative, strictly increasing and not empty (the importer
    spells "all axes" out). With `keepdims` the reduced dims stay as 1.
    ```mlir
    %s = mp.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = true}
        : tensor<8x64xf32> -> tensor<8x1xf32>
    ```
    Verifier: axes, result shape, `acc_type`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypeComponents(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::ShapedTypeComponents> &results) {
      return ::mixprec::graph::detail::inferReduceResult(location, adaptor.getInput(),
                                                         adaptor.getAxes(),
                                                         adaptor.getKeepdims(), results);
    }
  }];
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "a sum", [MP_Fp32Class, MP_Accumulates]>;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", "a mean", [MP_Fp32Class, MP_Accumulates]>;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "the maximum">;

//===----------------------------------------------------------------------===//
// Data movement (follow class)
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, MP_DataMovement, MP_OwnGradient],
                               ["getByteCount"]> {
  let summary = "Reinterprets the shape, same elements in row-major order";
  let description = [{
    ```mlir
    %y = mp.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
    Verifier: same element type and element count. Folder: a reshape to
    the input's type is the input; a reshape of a reshape reads the first
    one's input; an integer or bool constant (a shape, indices) is the
    constant reshaped. Float constants are weights and stay: their layout
    is the compiler's (`--mp-fold-constants` says why).
  }];
  let arguments = (ins MP_AnyTensor:$input);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Permutes dimensions";
  let description = [{
    `output.shape[i] = input.shape[perm[i]]`.
    ```mlir
    %y = mp.transpose %x {perm = array<i64: 0, 2, 1, 3>}
        : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
    ```
    Verifier: perm is a permutation of the rank; result shape; element type.
    Folder: the identity permutation is the input.
  }];
  let arguments = (ins MP_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Joins tensors along one axis";
  let description = [{
    ```mlir
    %y = mp.concat %a, %b {axis = 1 : i64}
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
    Verifier: at least one input, equal ranks and element types, equal dims
    off the axis, result dim on the axis is the sum. Folder: a concat of one
    input is that input.
  }];
  let arguments = (ins Variadic<MP_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, MP_DataMovement, MP_OwnGradient]> {
  let summary = "Strided slice, static per dimension";
  let description = [{
    Along each dim d, takes `output.shape[d]` elements starting at
    `starts[d]` with stride `steps[d]` (non-zero, may be negative). The
    importer resolves ONNX's clamped, negative and partial-axes forms into
    this one.
    ```mlir
    %y = mp.slice %x {starts = array<i64: 0, 64>, steps = array<i64: 1, 1>}
        : tensor<16x192xf32> -> tensor<16x64xf32>
    ```
    Verifier: one start and step per dim, every index read in bounds.
    Folder: a slice of every element in order (starts 0, steps 1, the
    input's shape) is the input.
  }];
  let arguments = (ins MP_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_Op<"gather",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Takes slices of `data` along `axis` at integer indices";
  let description = [{
    ONNX `Gather`: `output.shape = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end; an index out
    of range is a run-time error.
    ```mlir
    %e = mp.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
    ```
    Verifier: axis range, result shape and element type.
  }];
  let arguments = (ins MP_AnyTensor:$data, MP_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Index-driven ops (routines; OnnxIndexing.cpp imports them)
//===----------------------------------------------------------------------===//

def Graph_GatherElementsOp : Graph_Op<"gather_elements",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Picks elements of `data` along `axis` at per-element indices";
  let description = [{
    ONNX `GatherElements`: the output has the shape of `indices` (the rank
    of `data`, each dim off `axis` at most the data's), and
    `output[i] = data[i with dim axis replaced by indices[i]]`. Negative
    indices count from the end; an index out of range is a run-time error.
    ```mlir
    %y = mp.gather_elements %x, %i {axis = 1 : i64}
        : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
    Verifier: axis range, ranks, result shape and element type.
  }];
  let arguments = (ins MP_AnyTensor:$data, MP_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_GatherNdOp : Graph_Op<"gather_nd",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Picks slices of `data` at index tuples (the last dim of `indices`)";
  let description = [{
    ONNX `GatherND`: the first `batch_dims` dims of `data` and `indices`
    are shared; each tuple of `indices.shape[-1]` indices addresses a slice,
    so `output.shape = indices.shape[:-1] + data.shape[batch_dims +
    indices.shape[-1]:]`. Negative indices count from the end; an index out
    of range is a run-time error.
    ```mlir
    %y = mp.gather_nd %x, %i {batch_dims = 0 : i64}
        : (tensor<4x5x6xf32>, tensor<3x2xi64>) -> tensor<3x6xf32>
    ```
    Verifier: batch dims, tuple length, result shape and element type.
  }];
  let arguments = (ins MP_AnyTensor:$data, MP_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs MP_AnyTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// ArgMax and ArgMin: an int64 result, so the precision passes leave them
// unannotated and they compare their input in the dtype it is stored in.
class Graph_ArgReduceOp<string mnemonic, string desc>
    : Graph_Op<mnemonic, [Pure, MP_InferShapedType]> {
  let summary = "The index of the " # desc # " along `axis` (int64)";
  let description = [{
    ONNX `ArgMax`/`ArgMin`: the first index of the extreme value, the last
    with `select_last_index`; with `keepdims` the axis stays as 1.
    ```mlir
    %i = mp.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims = false}
        : tensor<8x64xf32> -> tensor<8xi64>
    ```
    Verifier: axis range, a non-empty axis, result shape, i64 result.
  }];
  let arguments = (ins MP_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_ArgMaxOp : Graph_ArgReduceOp<"arg_max", "maximum">;
def Graph_ArgMinOp : Graph_ArgReduceOp<"arg_min", "minimum">;

def Graph_TopKOp : Graph_Op<"topk", [Pure, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "The `k` largest (or smallest) values along `axis` and their indices";
  let description = [{
    ONNX `TopK` with `k` fixed at compile time: `values` keep the input's
    element type (the op follows its input's precision, and compares in
    it), `indices` are int64. Results are sorted, equal values lower index
    first (onnxruntime's order; ONNX leaves the order free for `sorted = 0`).
    ```mlir
    %v, %i = mp.topk %x {axis = 1 : i64, k = 3 : i64}
        : tensor<8x64xf32> -> (tensor<8x3xf32>, tensor<8x3xi64>)
    ```
    Verifier: axis range, 0 <= k <= the axis' size, result shapes and types.
  }];
  let arguments = (ins MP_NumericTensor:$input, I64Attr:$axis, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs MP_NumericTensor:$values, RankedTensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` `(` type($values) `,` type($indices) `)`";
  let hasVerifier = 1;
}

// FP32 class: a running sum in 16 bits loses the small terms once the sum
// grows (BF16 keeps 8 bits), so it accumulates and stores in FP32.
def Graph_CumSumOp : Graph_Op<"cumsum",
    [Pure, MP_Fp32Class, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Running sums along `axis`";
  let description = [{
    ONNX `CumSum` with a compile-time axis: `exclusive` leaves the element
    itself out, `reverse` sums from the end. Floats accumulate in double
    and round once per output; integers sum exactly (wrapping).
    ```mlir
    %y = mp.cumsum %x {axis = 1 : i64, exclusive = false, reverse = false}
        : tensor<2x8xf32> -> tensor<2x8xf32>
    ```
    Verifier: axis range, result shape and element type.
  }];
  let arguments = (ins MP_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs MP_NumericTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_ScatterNdOp : Graph_Op<"scatter_nd",
    [Pure, MP_DataMovement, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "`data` with slices at index tuples replaced (or combined) by `updates`";
  let description = [{
    ONNX `ScatterND`: a copy of `data` where each tuple of
    `indices.shape[-1]` indices addresses a slice that the matching slice
    of `updates` (shape `indices.shape[:-1] + data.shape[indices.shape[-1]:]`)
    replaces (`reduction = "none"`, later tuples win) or combines with
    (`add`, `mul`, `max`, `min`, in the data's dtype). Negative indices
    count from the end; an index out of range is a run-time error. A data
    movement op: it follows the precision of `data` and `updates`.
    ```mlir
    %y = mp.scatter_nd %x, %i, %u {reduction = "add"}
        : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
    ```
    Verifier: tuple length, updates' shape, result shape, element types,
    the reduction's name.
  }];
  let arguments = (ins MP_NumericTensor:$data, MP_IndexTensor:$indices, MP_NumericTensor:$updates,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs MP_NumericTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// FP32 class: a product of many terms leaves FP16's range (and BF16's
// precision) after a few factors, so it multiplies in FP32.
def Graph_ReduceProdOp : Graph_Op<"reduce_prod",
    [Pure, MP_Fp32Class, MP_InferShapedType, MP_OwnGradient]> {
  let summary = "Reduces with a product over `axes` (a routine, not a row kernel)";
  let description = [{
    `axes` are non-negative, strictly increasing and not empty (the importer
    spells "all axes" out). With `keepdims` the reduced dims stay as 1. An
    empty reduction gives 1.
    ```mlir
    %p = mp.reduce_prod %x {axes = array<i64: 1>, keepdims = true}
        : tensor<8x64xf32> -> tensor<8x1xf32>
    ```
    Verifier: axes, result shape.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

class Graph_Pool2dOp<string mnemonic, string desc, dag extraArgs>
    : Graph_Op<mnemonic, [Pure, MP_InferShapedType, MP_OwnGradient]> {
  let summary = desc # " pooling over 2-D windows (NCHW)";
  let description = [{
    ONNX pooling for 4-D inputs; `pads` is [top, left, bottom, right];
    with `ceil_mode` the output size rounds up (a window must still start
    inside the input or its leading padding).
    ```mlir
    %y = mp.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        pads = array<i64: 0, 0, 0, 0>} : tensor<2x8x16x16xf32> -> tensor<2x8x8x8xf32>
    ```
    Verifier: rank 4, attribute lengths and signs, result shape.
  }];
  let arguments = !con((ins MP_NonFP8FloatTensor:$input,
                            DenseI64ArrayAttr:$kernel_shape,
                            DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode),
                       extraArgs);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_MaxPool2dOp : Graph_Pool2dOp<"max_pool2d", "Max",
    (ins OptionalAttr<DenseI64ArrayAttr>:$dilations)>;
def Graph_AvgPool2dOp : Graph_Pool2dOp<"avg_pool2d", "Average",
    (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad)>;

class Graph_PoolOp<string mnemonic, string desc, dag extraArgs, Type resultType,
                   list<Trait> traits = [MP_OwnGradient]>
    : Graph_Op<mnemonic, !listconcat([Pure, MP_InferShapedType], traits)> {
  let summary = desc # " over N-D windows (1 to 3 spatial dims)";
  let description = [{
    ONNX pooling for [N, C, D...] inputs with 1, 2 or 3 spatial dims:
    `kernel_shape`, `strides` and `dilations` hold one value per spatial
    dim, `pads` the begins then the ends; with `ceil_mode` the output size
    rounds up (a window must still start inside the input or its leading
    padding). The importer writes `mp.max_pool2d`/`mp.avg_pool2d` where
    they express the node and these ops otherwise (3-D, AveragePool with
    dilations, MaxPool's Indices).
    ```mlir
    %y = mp.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>,
        pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>}
        : tensor<1x3x8x8x8xf32> -> tensor<1x3x4x4x4x}] # !if(!eq(mnemonic, "max_pool_indices"), "i64", "f32") # [{>
    ```
    Verifier: rank, attribute lengths and signs, result shape and type.
  }];
  let arguments = !con((ins MP_NonFP8FloatTensor:$input,
                            DenseI64ArrayAttr:$kernel_shape,
                            DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                            DenseI64ArrayAttr:$dilations,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode),
                       extraArgs);
  let results = (outs resultType:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_MaxPoolOp : Graph_PoolOp<"max_pool", "Max pooling", (ins), MP_NonFP8FloatTensor>;
def Graph_AvgPoolOp : Graph_PoolOp<"avg_pool", "Average pooling",
    (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad), MP_NonFP8FloatTensor>;
// MaxPool's Indices output (int64): an integer result, so the precision
// passes leave it unannotated; it compares its input in the dtype it is
// stored in, as mp.arg_max does.
def Graph_MaxPoolIndicesOp : Graph_PoolOp<"max_pool_indices",
    "The flat input index of each max-pooling window's maximum",
    (ins DefaultValuedAttr<I64Attr, "0">:$storage_order), RankedTensorOf<[I64]>, []>;

//===----------------------------------------------------------------------===//
// FP8 scaling
//===----------------------------------------------------------------------===//

def Graph_QuantizeOp : Graph_Op<"quantize", [Pure, MP_ScalingClass, MP_ElementwiseOpInterface]> {
  let summary = "Scales a tensor and rounds it to FP8, saturating";
  let description = [{
    `output = fp8_satfinite(input * scale)` with `scale` a rank-0 FP32
    tensor (per-tensor scaling).
    ```mlir
    %q = mp.quantize %x, %s : (tensor<8x64xbf16>, tensor<f32>) -> tensor<8x64xf8E4M3FN>
    ```
    Verifier: same shape, FP8 result, rank-0 scale. Folder: reads the value
    before an exact widening cast (the products are the same).
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, MP_F32Tensor:$scale);
  let results = (outs MP_FP8Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = MP_ScalarFnOf<"Quantize">.decl;
}

def Graph_DequantizeOp : Graph_Op<"dequantize", [Pure, MP_ScalingClass, MP_ElementwiseOpInterface]> {
  let summary = "Divides an FP8 tensor by its scale into a wider float";
  let description = [{
    `output = input / scale`, the inverse of `mp.quantize` with the same
    scale, rounded to the result element type.
    ```mlir
    %x = mp.dequantize %q, %s : (tensor<8x64xf8E4M3FN>, tensor<f32>) -> tensor<8x64xf32>
    ```
    Verifier: same shape, rank-0 scale.
  }];
  let arguments = (ins MP_FP8Tensor:$input, MP_F32Tensor:$scale);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = MP_ScalarFnOf<"Dequantize">.decl;
}

def Graph_AmaxOp : Graph_Op<"amax", [Pure, MP_ScalingClass]> {
  let summary = "The largest absolute value of a tensor, as a rank-0 f32";
  let description = [{
    Feeds FP8 scale computation. NaN inputs make the result NaN.
    ```mlir
    %a = mp.amax %x : tensor<8x64xbf16> -> tensor<f32>
    ```
    No verifier beyond the type constraints. Folder: reads the value before
    an exact widening cast (from a non-FP8 dtype; the amax is the same).
  }];
  let arguments = (ins MP_FloatTensor:$input);
  let results = (outs 0DTensorOf<[F32]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasFolder = 1;
}

def Graph_Fp8ScaleOp : Graph_Op<"fp8_scale", [Pure, MP_ScalingClass]> {
  let summary = "Computes an FP8 scale from an amax: (fp8_max / amax) / 2^margin";
  let description = [{
    The Transformer Engine scaling rule. `format` names the FP8 format whose
    largest finite value is used (448 for f8E4M3FN, 57344 for f8E5M2). An
    amax that is zero or not finite gives scale 1, so an all-zero tensor or
    an overflowed one never produces an infinite or NaN scale.
    ```mlir
    %s = mp.fp8_scale %amax {format = f8E4M3FN, margin = 0 : i64} : tensor<f32> -> tensor<f32>
    ```
    Verifier: `format` is an FP8 type, margin >= 0.
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$amax, TypeAttr:$format,
                       DefaultValuedAttr<I64Attr, "0">:$margin);
  let results = (outs 0DTensorOf<[F32]>:$scale);
  let assemblyFormat = "$amax attr-dict `:` type($amax) `->` type($scale)";
  let hasVerifier = 1;
}

def Graph_BlockScaleOp : Graph_Op<"block_scale", [Pure, MP_ScalingClass]> {
  let summary = "FP8 scales per block of a tensor (block scaling, MXFP8)";
  let description = [{
    The scale of every `block[0]` x `block[1]` block over the input's last
    two dims (common/numerics/BlockScaling.h): the largest power of two <=
    (fp8_max / amax) / 2^margin of the block's amax. `recipe` "block" is
    Transformer Engine's Float8BlockScaling with power-of-two scales (1 x
    128 for activations and gradients, 128 x 128 for weights); "mx" is
    MXFP8 (1 x 32 blocks), the same power of two as the inverse of its E8M0
    scale rounded up (Transformer Engine, cuBLAS), which the CUDA backend
    stores as E8M0. An all-zero block gets 1, a block with an inf or NaN
    gets NaN. The result has the input's shape with the
    last two dims divided by the block, rounded up.
    ```mlir
    %s = mp.block_scale %x {format = f8E4M3FN, block = array<i64: 1, 128>, recipe = "block"}
        : tensor<8x300xbf16> -> tensor<8x3xf32>
    ```
    Verifier: rank >= 2, positive block sizes, FP8 `format`, a known
    recipe, margin >= 0, the scales' shape.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, TypeAttr:$format,
                       DenseI64ArrayAttr:$block, StrAttr:$recipe,
                       DefaultValuedAttr<I64Attr, "0">:$margin);
  let results = (outs MP_F32Tensor:$scales);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($scales)";
  let hasVerifier = 1;
}

def Graph_BlockQuantizeOp : Graph_Op<"block_quantize", [Pure, MP_ScalingClass]> {
  let summary = "Rounds a tensor to FP8 with one scale per block, saturating";
  let description = [{
    `output[..., i, j] = fp8_satfinite(input[..., i, j] * scales[..., i /
    block[0], j / block[1]])`, the scales of `mp.block_scale` with the same
    block.
    ```mlir
    %q = mp.block_quantize %x, %s {block = array<i64: 1, 128>}
        : (tensor<8x300xbf16>, tensor<8x3xf32>) -> tensor<8x300xf8E4M3FN>
    ```
    Verifier: same shape, FP8 result, the scales' shape for the block.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, MP_F32Tensor:$scales,
                       DenseI64ArrayAttr:$block);
  let results = (outs MP_FP8Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ScaledMatmulOp : Graph_Op<"scaled_matmul",
    [Pure, MP_LowpClass, MP_Accumulates, MP_GemmKernel,
     DeclareOpInterfaceMethods<MP_GemmOpInterface>, MP_InferShapedType],
    ["getFlopCount", "getWeightOperands"]> {
  let summary = "FP8 matrix product with per-tensor scales (cuBLASLt FP8 GEMM)";
  let description = [{
    `output = (lhs @ rhs) / (lhs_scale * rhs_scale)`, where `lhs` and `rhs`
    are FP8 tensors quantized with those scales (`mp.quantize`), the
    products accumulate in FP32 and the result is rounded once to the
    output dtype (BF16, F16 or F32). Matmul broadcasting rules.
    ```mlir
    %y = mp.scaled_matmul %qx, %qw, %sx, %sw {acc_type = f32}
        : (tensor<8x64xf8E4M3FN>, tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x32xbf16>
    ```
    Verifier: FP8 operand pair, non-FP8 result, shapes, rank-0 scales.
  }];
  let arguments = (ins MP_FP8Tensor:$lhs, MP_FP8Tensor:$rhs, MP_F32Tensor:$lhs_scale,
                       MP_F32Tensor:$rhs_scale, MP_AccTypeAttr:$acc_type);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ScaledLinearOp : Graph_Op<"scaled_linear",
    [Pure, MP_LowpClass, MP_Accumulates, MP_GemmKernel,
     DeclareOpInterfaceMethods<MP_GemmOpInterface>, MP_InferShapedType],
    ["getFlopCount", "getWeightOperands"]> {
  let summary = "FP8 linear layer with per-tensor or per-block scales and an optional bias";
  let description = [{
    `output = (input @ W) / (input_scale * weight_scale) + bias` with `W` as
    in `mp.linear` (`transpose_weight`), FP32 accumulation, one rounding to
    the output dtype; the bias is added in FP32 before that rounding, as
    cuBLASLt's bias epilogue does.
    ```mlir
    %y = mp.scaled_linear %qx, %qw, %sx, %sw, %b {transpose_weight = true}
        : (tensor<8x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>)
        -> tensor<8x32xbf16>
    ```
    Block scaling: with `input_block` and `weight_block` (the blocks of
    `mp.block_scale`, e.g. [1, 128] and [128, 128], or [1, 32] and [1, 32]
    for MXFP8) the scales are per block and the sum is the block-scaled
    GEMM of common/numerics/BlockScaling.h: each k-block's partial sum
    rounded to FP32 and divided by its two scales there (the routine
    block_scaled_gemm in a module).
    ```mlir
    %y = mp.scaled_linear %qx, %qw, %sx, %sw {transpose_weight = true,
            input_block = array<i64: 1, 128>, weight_block = array<i64: 128, 128>}
        : (tensor<8x256xf8E4M3FN>, tensor<32x256xf8E4M3FN>, tensor<8x2xf32>, tensor<1x2xf32>)
        -> tensor<8x32xbf16>
    ```
    Verifier: as `mp.linear`, plus FP8 operands and rank-0 scales; with
    blocks, both given, `transpose_weight`, a 2-D weight, the same block
    length along k, a block of one row for an input of rank > 2, and the
    scales' shapes.
  }];
  let arguments = (ins MP_FP8Tensor:$input, MP_FP8Tensor:$weight,
                       MP_F32Tensor:$input_scale, MP_F32Tensor:$weight_scale,
                       Optional<MP_NonFP8FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_weight,
                       MP_AccTypeAttr:$acc_type,
                       OptionalAttr<DenseI64ArrayAttr>:$input_block,
                       OptionalAttr<DenseI64ArrayAttr>:$weight_block);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//
def Graph_AllReduceOp : Graph_Op<"all_reduce"> {
  let summary = "Reduces a tensor across the ranks of a data-parallel job";
  let description = [{
    Every rank of the job contributes its `input`; every rank's `output` is
    the element-wise sum, mean (the sum divided by the world size in FP32,
    rounded once) or max, with the same bits on every rank. The runtime
    calls the session's collective (MPI, NCCL: runtime.h,
    mixprec_session_set_collective); without one, or in a job of one rank,
    the output is the input, so a step compiled for data parallelism
    computes on one process what it computed before. The training step
    (`--mp-build-training-step data-parallel=true`) reduces its gradients,
    its loss and its overflow flag with it.
    ```mlir
    %g = mp.all_reduce %grads {reduction = "mean"} : tensor<4096xf32> -> tensor<4096xf32>
    ```
    Verifier: a known reduction; the output's type is the input's. Not
    pure: it is never folded, merged or removed, and every rank runs the
    same all_reduce steps in the same order.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, StrAttr:$reduction);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_RankSliceOp : Graph_Op<"rank_slice"> {
  let summary = "This rank's slice of a tensor, in a data-parallel job of `world` ranks";
  let description = [{
    `input` is a vector of `world` x S elements; rank r's `output` is
    elements [r S, (r + 1) S). The runtime takes the rank from the session's
    collective, whose world size must be `world` (a step compiled for 2
    ranks does not run on 3; without a collective, a job of one rank, only
    `world` = 1 runs). The training step's optimizer-state sharding
    (`shard-optimizer=true`, ZeRO stage 1) gives each rank its shard of the
    gradients and master weights with it.
    ```mlir
    %mine = mp.rank_slice %g {world = 2} : tensor<4096xf32> -> tensor<2048xf32>
    ```
    Verifier: vectors of one float dtype, `world` >= 1, the input `world`
    times the output's length. Not pure: its result depends on the rank.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, I64Attr:$world);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_AllGatherOp : Graph_Op<"all_gather"> {
  let summary = "Every rank's tensor, concatenated in rank order, on every rank";
  let description = [{
    The inverse of `mp.rank_slice`: rank r contributes its `input` of S
    elements; every rank's `output` holds the `world` contributions in
    rank order (rank r's at [r S, (r + 1) S)), the same bits everywhere.
    The runtime calls the session's collective (all_gather); its world size
    must be `world`. The training step with `shard-optimizer=true` gathers
    the master weights each rank updated with it.
    ```mlir
    %all = mp.all_gather %mine {world = 2} : tensor<2048xf32> -> tensor<4096xf32>
    ```
    Verifier: vectors of one float dtype, `world` >= 1, the output `world`
    times the input's length. Not pure, as `mp.all_reduce`.
  }];
  let arguments = (ins MP_NonFP8FloatTensor:$input, I64Attr:$world);
  let results = (outs MP_NonFP8FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion (--mp-fuse)
//===----------------------------------------------------------------------===//

def Graph_FusionOp : Graph_Op<"fusion", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A group of ops that runs as one kernel";
  let description = [{
    Made by `--mp-fuse`. The body computes the results from the block
    arguments (one per input, same types); only the yielded values reach
    memory. `kind` is `elementwise`, `reduction` (one row reduction with
    element-wise producers and consumers) or `gemm` (a GEMM with its
    cuBLASLt epilogue: bias, ReLU or tanh-GELU). `ops` names the graph ops
    the kernel came from.
    ```mlir
    %y = mp.fusion elementwise(%x, %b) {ops = ["add1", "relu1"]}
        : (tensor<8x64xbf16>, tensor<64xbf16>) -> tensor<8x64xbf16> {
    ^bb0(%a: tensor<8x64xbf16>, %c: tensor<64xbf16>):
      %0 = mp.add %a, %c : tensor<8x64xbf16>, tensor<64xbf16> -> tensor<8x64xbf16>
      %1 = mp.relu %0 : tensor<8x64xbf16>
      mp.yield %1 : tensor<8x64xbf16>
    }
    ```
    Verifier: block arguments match the inputs, yielded values the results.
  }];
  let arguments = (ins Variadic<MP_AnyTensor>:$inputs, MP_FusionKind:$kind,
                       StrArrayAttr:$ops);
  let results = (outs Variadic<MP_AnyTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
}

def Graph_YieldOp : Graph_Op<"yield", [Pure, Terminator, ReturnLike, HasParent<"FusionOp">]> {
  let summary = "The values a fusion writes to memory";
  let description = [{
    ```mlir
    mp.yield %1 : tensor<8x64xbf16>
    ```
    No verifier beyond the parent's.
  }];
  let arguments = (ins Variadic<MP_AnyTensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* empty yield for the implicit terminator */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // MIXPREC_GRAPH_OPS
