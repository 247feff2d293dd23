//===- GraphBase.td - the mp graph dialect and its type constraints -------===//
#ifndef MIXPREC_GRAPH_BASE
#define MIXPREC_GRAPH_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "dialects/Graph/IR/GraphInterfaces.td"
include "dialects/Graph/IR/GraphEnums.td"

def Graph_Dialect : Dialect {
  let name = "mp";
  let cppNamespace = "::mixprec::graph";
  let summary = "Tensor graph ops with per-op storage and accumulator precision";
  let description = [{
    The `mp` dialect holds a model as a graph of tensor ops on ranked,
    statically shaped tensors. A tensor's element type is its storage dtype
    (`f32`, `bf16`, `f16`, `f8E4M3FN`, `f8E5M2`); ops that accumulate carry
    an optional `acc_type` (absent means `f32`). Graph inputs and outputs are
    the arguments and results of a `func.func`, named by `mp.name`
    argument/result attributes; ops keep their source node name as a
    `NameLoc`. The precision passes record why an op got its dtype in the
    discardable string attribute `mp.reason`.

    FP8 tensors travel with an FP32 scale: `mp.quantize` takes it,
    `mp.dequantize` gives it back, `mp.amax` measures what scales need.
  }];
  let hasOperationAttrVerify = 1;
  // mp.name, mp.state, mp.state_init on graph arguments; mp.name,
  // mp.state_update on results.
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  // Folds (a cast of a constant) materialize as mp.constant.
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute names understood by the dialect.
    static constexpr ::llvm::StringLiteral kNameAttr = "mp.name";
    static constexpr ::llvm::StringLiteral kReasonAttr = "mp.reason";
    /// The dtype --mp-assign-precision chose (a TypeAttr).
    static constexpr ::llvm::StringLiteral kPrecisionAttr = "mp.precision";
    /// The dtype an op computes in whatever the precision policy would
    /// choose (a TypeAttr; --mp-assign-precision keeps it, reason
    /// "pinned"): the training step's update (unscale, non-finite check,
    /// norm, clipping, optimizer, loss scale) computes in FP32, as PyTorch's
    /// optimizers do on FP32 .grad, and its gradient buckets travel in the
    /// all-reduce dtype.
    static constexpr ::llvm::StringLiteral kPinnedPrecisionAttr = "mp.pinned_precision";
    /// On a GEMM (a unit attribute): its result is FP32 whatever its
    /// precision, its operands taking the precision: a training step's
    /// weight gradients, as Megatron-LM's and Transformer Engine's FP32
    /// main_grad, so the update and the all-reduce sum them unrounded.
    static constexpr ::llvm::StringLiteral kFp32OutputAttr = "mp.fp32_output";
    /// Calibration evidence of an op's first result (f32 FloatAttrs): the
    /// largest |x|, and the share of non-zero values below FP16's normal range.
    static constexpr ::llvm::StringLiteral kCalibAmaxAttr = "mp.calib_amax";
    static constexpr ::llvm::StringLiteral kCalibUnderflowAttr = "mp.calib_underflow";
    /// On a GEMM a gradient rule made (an i64 array): the operands that
    /// carry a gradient. FP8 training quantizes those to f8E5M2 (the
    /// hybrid format) and the others to f8E4M3FN.
    static constexpr ::llvm::StringLiteral kGradOperandsAttr = "mp.grad_operands";
    /// On a function: graph inputs and outputs keep their original dtypes.
    static constexpr ::llvm::StringLiteral kKeepIoTypesAttr = "mp.keep_io_types";
    /// Module state (a training step's parameters, optimizer state...): a
    /// graph argument with `mp.state = "NAME"` (a string) and
    /// `mp.state_init = <elements of its type>` is state NAME, kept by the
    /// runtime session across runs and initialised from mp.state_init, not
    /// a user input; the graph result with `mp.state_update = "NAME"` is
    /// its next value, not a user output. Every state has exactly one
    /// update, of its type; state names are unique.
    static constexpr ::llvm::StringLiteral kStateAttr = "mp.state";
    static constexpr ::llvm::StringLiteral kStateInitAttr = "mp.state_init";
    static constexpr ::llvm::StringLiteral kStateUpdateAttr = "mp.state_update";
  }];
}

// Every op answers the precision-policy questions; `policyOverrides` names
// the interface methods an op implements itself (GEMM costs, FP8 forms).
class Graph_Op<string mnemonic, list<Trait> traits = [],
               list<string> policyOverrides = []>
    : Op<Graph_Dialect, mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<MP_PrecisionPolicyOpInterface, policyOverrides>])>;

// Storage dtypes a float tensor may have (tf32 is a compute type only).
def MP_StorageFloat : AnyTypeOf<[F32, F16, BF16, F8E4M3FN, F8E5M2]>;
def MP_FloatTensor : RankedTensorOf<[MP_StorageFloat]>;
def MP_F32Tensor : RankedTensorOf<[F32]>;
def MP_FP8Tensor : RankedTensorOf<[F8E4M3FN, F8E5M2]>;
def MP_NonFP8FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def MP_IndexTensor : RankedTensorOf<[I32, I64]>;
def MP_BoolTensor : RankedTensorOf<[I1]>;
def MP_AnyTensor : RankedTensorOf<[MP_StorageFloat, I1, I8, I32, I64]>;

// The accumulator type of an op that sums or normalizes.
def MP_AccTypeAttr : OptionalAttr<TypeAttr>;

#endif // MIXPREC_GRAPH_BASE
