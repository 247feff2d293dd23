//===- KernelOps.td - the mpk kernel dialect -------------------------------===//
//
// The plan of a compiled module: kernels (expression programs over an
// iteration space, one op per instruction on whole tensors), GEMM calls
// with their cuBLASLt description, backend routines for ops that do not
// fuse, and aliases. `--mp-plan-memory` then gives every value an arena offset. The
// module writer serializes this dialect into the .mpk FlatBuffers format.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_KERNEL_OPS
#define MIXPREC_KERNEL_OPS

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "dialects/Graph/IR/GraphEnums.td"
include "dialects/Graph/IR/GraphInterfaces.td"
include "dialects/Kernel/IR/KernelEnums.td"

def Kernel_Dialect : Dialect {
  let name = "mpk";
  let cppNamespace = "::mixprec::kernel";
  let summary = "Kernels, GEMM calls, routines and buffers of a compiled module";
  // Kernel bodies hold mp element-wise ops and constants.
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
  let extraClassDeclaration = [{
    /// Arena byte offsets of an op's results (DenseI64ArrayAttr), set by
    /// --mp-plan-memory; on the function: peak and unplanned bytes.
    static constexpr ::llvm::StringLiteral kOffsetsAttr = "mpk.offsets";
    static constexpr ::llvm::StringLiteral kArenaBytesAttr = "mpk.arena_bytes";
    static constexpr ::llvm::StringLiteral kBufferBytesAttr = "mpk.buffer_bytes";

    /// Registers the routine options (KernelAttrs.cpp).
    void registerAttributes();
  }];
  let useDefaultAttributePrinterParser = 1;
}

include "dialects/Kernel/IR/KernelAttrs.td"

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

def Kernel_KernelOp : Kernel_Op<"kernel", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A fused kernel: its body runs at every point of `shape`";
  let description = [{
    The body is the kernel's expression program on whole tensors, one
    instruction per op: element-wise ops (mp ops and `mpk.elementwise`,
    each one scalar function rounded once to its result type), scalar
    constants, and the row primitives `mpk.row_reduce` and `mpk.amax`. It
    runs at every point of the iteration space `shape`, whose trailing
    `row_dims` dims form the row a row reduction runs over (0 for
    element-wise kernels); operands broadcast NumPy-style. Only yielded
    values reach memory; a yielded row value (row dims 1) may be stored
    without its row dims, as a reduction without keepdims returns it.
    `ops` names the graph ops. `--mp-lower-to-kernels` writes softmax,
    norms and reductions in this form; the module writer serializes it.
    ```mlir
    %y = mpk.kernel (%x) {shape = array<i64: 8, 64>, row_dims = 1 : i64, ops = ["rsum"]}
        : (tensor<8x64xbf16>) -> tensor<8xf32> {
    ^bb0(%a: tensor<8x64xbf16>):
      %0 = mpk.row_reduce sum %a : tensor<8x64xbf16> -> tensor<8x1xf32>
      mpk.yield %0 : tensor<8x1xf32>
    }
    ```
    Verifier: block arguments and yielded types, row_dims range, body ops
    are instructions.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, DenseI64ArrayAttr:$shape,
                       I64Attr:$row_dims, StrArrayAttr:$ops);
  let results = (outs Variadic<AnyRankedTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The shape of a row value: `shape` with the row dims 1.
    ::llvm::SmallVector<int64_t> getRowValueShape();
    /// The points of one row (1 for an element-wise kernel).
    int64_t getRowSize();
  }];
}

def Kernel_YieldOp : Kernel_Op<"yield", [Pure, Terminator, ReturnLike, HasParent<"KernelOp">]> {
  let summary = "The values a kernel stores";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* no values: the implicit terminator */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Kernel body instructions that no mp op is
//===----------------------------------------------------------------------===//

def Kernel_ElementwiseOp : Kernel_Op<"elementwise", [Pure, HasParent<"KernelOp">,
    MP_ElementwiseOpInterface]> {
  let summary = "A scalar function of operands of any dtypes, rounded once";
  let description = [{
    Computes `fn` at every point from its operands, which broadcast
    NumPy-style to the result shape. Unlike an mp element-wise op, the
    operands may have different element types: each is read exactly, the
    function is computed in FP32 and the result rounded once to the result
    element type. Decompositions use it to state their FP32 intermediates
    and the single rounding of their output (an mp op would need casts,
    which are instructions of their own). `silu` is two instructions
    (sigmoid, then mul) and has no form here.
    ```mlir
    %d = mpk.elementwise sub %x, %m : (tensor<8x64xbf16>, tensor<8x1xf32>) -> tensor<8x64xf32>
    ```
    Verifier: operand count is the function's arity, the result shape is
    the operands' broadcast, no silu.
  }];
  let arguments = (ins MP_ScalarFn:$fn, Variadic<AnyRankedTensor>:$operands);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$fn $operands attr-dict `:` functional-type($operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mixprec::graph::ScalarFn getScalarFn() { return getFn(); }
  }];
}

def Kernel_RowReduceOp : Kernel_Op<"row_reduce", [Pure, HasParent<"KernelOp">]> {
  let summary = "Sums or maximizes over the kernel's row";
  let description = [{
    Reduces its input, which has the kernel's shape, over the kernel's
    trailing `row_dims` dims. The result keeps those dims as size 1, so
    element-wise ops broadcast it back along the row. A sum accumulates in
    FP32 in row order; the result is rounded once to its element type. An
    empty row gives the identity (sum 0, max -inf).
    ```mlir
    %m = mpk.row_reduce max %x : tensor<8x64xbf16> -> tensor<8x1xf32>
    ```
    Verifier: the input has the kernel's shape, the result that shape with
    the row dims 1.
  }];
  let arguments = (ins MPK_RowReduceKind:$kind, AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Kernel_AmaxOp : Kernel_Op<"amax", [Pure, HasParent<"KernelOp">]> {
  let summary = "The largest |x| over every point of the kernel, as a rank-0 f32";
  let description = [{
    Feeds FP8 scale computation; a NaN makes the result NaN. Its store (a
    rank-0 tensor) is written once every point has been seen.
    ```mlir
    %a = mpk.amax %x : tensor<8x64xbf16> -> tensor<f32>
    ```
    Verifier: the input has the kernel's shape.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs 0DTensorOf<[F32]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Steps that are no kernel
//===----------------------------------------------------------------------===//

def Kernel_GemmOp : Kernel_Op<"gemm", [AttrSizedOperandSegments]> {
  let summary = "A cuBLASLt matrix multiplication with scales and an epilogue";
  let description = [{
    `output = epilogue(a @ op(b) * dequant + bias)` with numpy batch
    broadcasting over the leading dims, FP32 accumulation and one rounding
    to the output dtype. `trans_b` reads `b` as [N, K]. FP8 operands come
    with `a_scale`/`b_scale` (the accumulator is multiplied by 1/a_scale and
    1/b_scale; a block-scaled GEMM is the routine block_scaled_gemm
    instead). `epilogue` is none, relu or gelu (tanh); `tf32` computes
    FP32 operands in TF32.
    ```mlir
    %y = mpk.gemm %x, %w bias %b {trans_b = true, epilogue = "relu", ops = ["fc"]}
        : (tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<8x32xbf16>
    ```
    Verifier: scales come in pairs, epilogue known.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       Optional<AnyRankedTensor>:$bias,
                       Optional<AnyRankedTensor>:$a_scale, Optional<AnyRankedTensor>:$b_scale,
                       BoolAttr:$trans_b, StrAttr:$epilogue, BoolAttr:$tf32,
                       StrArrayAttr:$ops);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $a `,` $b (`bias` $bias^)? (`scales` `(` $a_scale^ `,` $b_scale `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kernel_CallOp : Kernel_Op<"call"> {
  let summary = "A backend routine for an op that does not fuse";
  let description = [{
    Runs the routine `op_type` (convolution, pooling, transpose, gather,
    concat, slice, reductions over leading axes, FP8 scale computation,
    numpy matmul) with the options of its family (KernelAttrs.td).
    ```mlir
    %y = mpk.call transpose(%x) #mpk.transpose<perm = [1, 0]> {ops = ["t"]}
        : (tensor<4x8xf32>) -> tensor<8x4xf32>
    ```
    Verifier: the options apply to the routine.
  }];
  let arguments = (ins Kernel_RoutineAttr:$op_type, Variadic<AnyRankedTensor>:$inputs,
                       Kernel_RoutineOptionsInterface:$options, StrArrayAttr:$ops);
  let results = (outs Variadic<AnyRankedTensor>:$outputs);
  let assemblyFormat = [{
    custom<Routine>($op_type) `(` $inputs `)` $options attr-dict
    `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def Kernel_AliasOp : Kernel_Op<"alias", [Pure]> {
  let summary = "The same bytes under another shape (a reshape: no kernel, no copy)";
  let description = [{
    ```mlir
    %y = mpk.alias %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
    Verifier: same element type and element count.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

#endif // MIXPREC_KERNEL_OPS
