//===- GraphInterfaces.td - op facts of the mp dialect --------------------===//
//
// What passes, the interpreter, the module writer and the reports need to
// know of an op lives on the op: its class in the default precision policy
// and its kernel family are traits listed in its ODS definition; its cost
// and the facts that depend on its operands are interface methods. Nothing
// outside the dialect keeps a list of op types.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_GRAPH_INTERFACES
#define MIXPREC_GRAPH_INTERFACES

include "mlir/IR/OpBase.td"

class MP_OpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mixprec::graph::OpTrait";
}

//===----------------------------------------------------------------------===//
// Precision classes (DESIGN.md, "Default policy"). An op without one of
// these traits follows its inputs; constants are ConstantLike.
//===----------------------------------------------------------------------===//

// Runs in the target low precision with an FP32 accumulator (GEMMs, convs).
def MP_LowpClass : MP_OpTrait<"LowpClass">;
// Runs in FP32, inputs upcast (softmax, norms, reductions, exp/log/pow...).
def MP_Fp32Class : MP_OpTrait<"Fp32Class">;
// A dtype conversion the precision passes place.
def MP_CastClass : MP_OpTrait<"CastClass">;
// FP8 scaling machinery (quantize, dequantize, amax, scale computation).
def MP_ScalingClass : MP_OpTrait<"ScalingClass">;
// Sums many values, so it carries an accumulator type (`acc_type`).
def MP_Accumulates : MP_OpTrait<"Accumulates">;

//===----------------------------------------------------------------------===//
// Verifiers shared by an op class
//===----------------------------------------------------------------------===//

// An element-wise binary op (lhs, rhs -> output; MP_ElementwiseOpInterface):
// the operands broadcast to the result shape and share its element type.
// Pow lets an integer base take a float exponent; PRelu's slope must
// broadcast to the input's shape.
def MP_BroadcastBinary : MP_OpTrait<"BroadcastBinary">;

//===----------------------------------------------------------------------===//
// Kernel families: how --mp-fuse groups an op and --mp-lower-to-kernels
// lowers it. An op in none of them becomes a runtime routine.
//===----------------------------------------------------------------------===//

// Reduces trailing rows (see MP_RowReductionOpInterface): one per kernel.
def MP_RowReductionKernel : MP_OpTrait<"RowReductionKernel">;
// Moves or selects elements without arithmetic (reshape, transpose, ...).
def MP_DataMovement : MP_OpTrait<"DataMovement">;
// A cuBLASLt GEMM with optional bias and activation epilogue.
def MP_GemmKernel : MP_OpTrait<"GemmKernel">;

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

def MP_PrecisionPolicyOpInterface : OpInterface<"PrecisionPolicyOpInterface"> {
  let cppNamespace = "::mixprec::graph";
  let description = [{
    The facts the precision passes and the reports ask of every `mp` op.
    The defaults read the op's traits; GEMM-class ops override the cost and
    the FP8 question, which depend on their operands, and name their
    weights.
  }];
  let methods = [
    InterfaceMethod<
      "The op's class in the default precision policy.",
      "::mixprec::graph::PrecisionClass", "getPrecisionClass", (ins), [{}],
      [{ return ::mixprec::graph::detail::precisionClassFromTraits($_op.getOperation()); }]>,
    InterfaceMethod<
      "True if the op sums many values and so carries an accumulator type.",
      "bool", "accumulates", (ins), [{}],
      [{ return $_op->template hasTrait<::mixprec::graph::OpTrait::Accumulates>(); }]>,
    InterfaceMethod<
      "True if the op can run as an FP8 scaled GEMM (mp.scaled_matmul or mp.scaled_linear).",
      "bool", "hasFp8GemmForm", (ins), [{}], [{ return false; }]>,
    InterfaceMethod<[{
        Floating-point operations of one run: 2*M*N*K per output batch
        element for GEMMs and convs; none for data movement, casts and
        constants; otherwise one per element of its largest operand or
        result (the output of an element-wise op, the input of a reduction).
      }],
      "int64_t", "getFlopCount", (ins), [{}],
      [{ return ::mixprec::graph::detail::defaultFlopCount($_op.getOperation()); }]>,
    InterfaceMethod<[{
        Bytes one run reads and writes, op by op (before fusion), at the
        storage dtypes of its operands and results: what a roofline sets
        against the FLOP count, and what a lower precision saves in
        memory traffic. None for constants and for reshapes (a view).
      }],
      "int64_t", "getByteCount", (ins), [{}],
      [{ return ::mixprec::graph::detail::defaultByteCount($_op.getOperation()); }]>,
    InterfaceMethod<[{
        The operands that hold weights: the weight of a linear or a
        convolution, both operands of a matmul (either may be one). None
        for other ops.
      }],
      "::llvm::SmallVector<::mlir::Value, 2>", "getWeightOperands", (ins), [{}],
      [{ return {}; }]>,
  ];
}

def MP_RowReductionOpInterface : OpInterface<"RowReductionOpInterface"> {
  let cppNamespace = "::mixprec::graph";
  let description = [{
    An op that reduces (or normalizes over) some axes of its first operand.
    A kernel can compute it one row at a time when those axes are the
    trailing ones.
  }];
  let methods = [
    InterfaceMethod<[{
        How many trailing dimensions one row spans, or -1 when the reduced
        axes are not the trailing ones of the first operand.
      }],
      "int64_t", "getRowReductionDims">,
  ];
}

def MP_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::mixprec::graph";
  let description = [{
    The element-wise kernel family: each output element is one scalar
    function of the same-position (broadcast) input elements, so the op
    fuses into expression-program kernels. The op names that function;
    the interpreter, the module writer and the CUDA emitter map the
    function (`ScalarFn`), never the op type, so a new element-wise op is
    its ODS definition plus one case per consumer of the enum.
  }];
  let methods = [
    InterfaceMethod<"The scalar function computed at each point.",
      "::mixprec::graph::ScalarFn", "getScalarFn">,
    InterfaceMethod<[{
        The FP32 parameters the function takes after the op's operands
        (LeakyRelu's alpha, ...), from its attributes: a kernel body holds
        them as constant operands (Const instructions), so they are never
        rounded to the op's dtype.
      }],
      "::llvm::SmallVector<float, 2>", "getScalarParams", (ins), [{}],
      [{ return {}; }]>,
  ];
}

def MP_GemmOpInterface : OpInterface<"GemmOpInterface"> {
  let cppNamespace = "::mixprec::graph";
  let description = [{
    The GEMM kernel family (MP_GemmKernel): the op's operands in the roles
    one cuBLASLt call gives them, and the bias epilogue the op can take, so
    a lowering builds that call and --mp-fuse folds a bias add into it
    without knowing the op type.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether one (batched) GEMM call computes the op: every linear layer
        does; a matmul needs matrices and batch dims that each operand has
        in full or not at all (else it runs as the numpy-semantics matmul
        routine).
      }],
      "bool", "fitsOneGemmCall">,
    InterfaceMethod<"The operands of the GEMM call the op is.",
      "::mixprec::graph::GemmOperands", "getGemmOperands">,
    InterfaceMethod<
      "The operand that holds the op's own bias, or null when it has none.",
      "::mlir::OpOperand *", "getBiasOperand">,
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the op's equivalent that
        also adds `bias` (one value per output column) as its own bias, with
        result type `resultType`; returns null and builds nothing when the
        op cannot take one (it has a bias already, or its right operand is
        no matrix). Copying discardable attributes is the caller's part.
      }],
      "::mlir::Operation *", "buildWithBias",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$bias,
           "::mlir::Type":$resultType)>,
  ];
}

def MP_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mixprec::graph";
  let description = [{
    The op's reverse-mode gradient rule (as Enzyme's MLIR
    `AutoDiffOpInterface`): given the adjoints of its results, it builds the
    mp ops that compute the adjoint of each operand, where the builder
    stands. The reverse sweep (passes/Training/Autodiff.cpp) asks every op on the
    path from the inputs to the loss, and never keeps a list of op types.
    Element-wise ops take the default rule, which reads the op's ScalarFn
    in one table of derivative expressions (GraphGradients.cpp); the other
    ops implement their own there. Reductions inside a rule accumulate in
    FP32 (the ops' default `acc_type`), and the normalizations compute
    their backward in FP32 whatever the storage dtype.
  }];
  let methods = [
    InterfaceMethod<[{
        Fills `operandGrads` with one value per operand: the adjoint of that
        operand (its type), or null where the operand is not differentiable
        (integer indices, masks) or every result adjoint is null.
        `resultGrads` holds one adjoint per result (null: none reaches it),
        each of the result's type. Fails, with an error on the op, for a
        configuration the rule does not cover.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads), [{}],
      [{ return ::mixprec::graph::detail::buildElementwiseGradients(
             $_op.getOperation(), builder, resultGrads, operandGrads); }]>,
  ];
}

#endif // MIXPREC_GRAPH_INTERFACES
