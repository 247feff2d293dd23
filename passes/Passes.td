//===- Passes.td - mixprec graph passes --------------------------------===//
#ifndef MIXPREC_PASSES
#define MIXPREC_PASSES

include "mlir/Pass/PassBase.td"

// An option with the llvm::cl parser it has where a pipeline shows it as a
// tool's flag (MixprecPipeline): the parser checks the value and refuses a
// bad one in the tool's words ("takes a positive number, got 'x'"). The
// pass itself takes the option with MLIR's default parser.
class MpOption<string varName, string arg, string valueType, string default,
               string desc, string additionalFlags = "", string parserClass = "">
    : Option<varName, arg, valueType, default, desc, additionalFlags> {
  string parser = parserClass;
}

// A pass pipeline whose options are the options of its passes, each
// declared once, on its pass: mixprec-tblgen -gen-pipeline-options writes
// the mlir::PassPipelineOptions struct `cppName` holding one option per
// option of `passes` (its argument and C++ name under the pass's prefix in
// `prefixes`) and, per pass, a getter of that pass's options struct.
class MixprecPipeline<string pipelineArgument, string structName> {
  string argument = pipelineArgument;
  string cppName = structName;
  list<Pass> passes = [];
  list<string> prefixes = [];
}

//===----------------------------------------------------------------------===//
// Folding
//===----------------------------------------------------------------------===//

def FoldConstantsPass : Pass<"mp-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Replace each op whose operands are all constants by its results";
  let description = [{
    Computes each op of the function whose operands are all `mp.constant`s
    by the interpreter's reference semantics, the same code that runs the
    op at run time: floats in FP32, rounded to the result's dtype; integers
    in int64 arithmetic, wrapping, kept in their dtype; numpy broadcasting.
    A chain of such ops (a shape computation) folds in one pass; operand
    constants that nothing reads any more go. The ONNX importer folds the
    ops it builds the same way.
    ```mlir
    %a = mp.constant dense<[2, 3]> : tensor<2xi64>
    %b = mp.constant dense<4> : tensor<i64>
    %c = mp.mul %a, %b : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
    // after:
    %c = mp.constant dense<[8, 12]> : tensor<2xi64>
    ```
    Not folded: data movement of float constants (`mp.transpose`,
    `mp.reshape`, `mp.gather`... of weights, whose layout is the
    compiler's: a transposed weight becomes a GEMM's flag, an embedding
    lookup a gather of the one stored table), results over the element
    limit, ops with side effects or regions. An op whose evaluation fails
    (an index out of range) is an error: it would fail at run time too.
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 22",
           "Fold only results of at most this many elements">,
  ];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def AssignPrecisionPass : Pass<"mp-assign-precision", "mlir::func::FuncOp"> {
  let summary = "Choose a dtype, an accumulator type and a reason for every mp op";
  let description = [{
    Classifies each op (DESIGN.md): `lowp` GEMM-class ops run in the target
    precision with an f32 accumulator; `fp32` ops (softmax, norms,
    reductions, exp/log/pow/sqrt/rsqrt/erf/reciprocal) run in f32; `follow`
    ops take the widest dtype among their inputs, where constants adapt to
    the other operands instead of promoting them. Overrides by op type or
    op-name glob (`keep-fp32=`, `force=NAME:DTYPE`, or a JSON `policy=`
    file) come next, then range evidence: an op whose calibrated amax
    (`mp.calib_amax`) times `fp16-margin` exceeds 65504, or whose share of
    FP16-subnormal values (`mp.calib_underflow`) exceeds
    `underflow-threshold`, leaves FP16.

    The pass only annotates; `--mp-insert-casts` changes types.
    ```mlir
    %0 = mp.matmul %a, %b : (...) -> tensor<8x8xf32>
    // after --mp-assign-precision=precision=bf16:
    %0 = mp.matmul %a, %b {acc_type = f32, mp.precision = bf16,
                           mp.reason = "policy:lowp"} : (...) -> tensor<8x8xf32>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
  let options = [
    MpOption<"precision", "precision", "::mixprec::passes::Precision",
             "::mixprec::passes::Precision::BF16", "The precision GEMM-class ops run in",
             [{::llvm::cl::values(
                 clEnumValN(::mixprec::passes::Precision::FP32, "fp32", "FP32 (no mixed precision)"),
                 clEnumValN(::mixprec::passes::Precision::TF32, "tf32", "TF32 GEMM operands"),
                 clEnumValN(::mixprec::passes::Precision::BF16, "bf16", "BF16"),
                 clEnumValN(::mixprec::passes::Precision::FP16, "fp16", "FP16"),
                 clEnumValN(::mixprec::passes::Precision::FP8, "fp8",
                            "FP8 E4M3 GEMMs with per-tensor scales, BF16 elsewhere"))}],
             "::mixprec::passes::PrecisionParser">,
    MpOption<"keepIoTypes", "keep-io-types", "bool", "true",
             "Graph inputs and outputs keep their dtypes", "", "::mixprec::passes::FlagParser">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Op types (softmax, mp.matmul) or op-name globs kept in FP32 "
               "(comma-separated, repeatable)", [{::llvm::cl::value_desc("TYPE|GLOB")}]>,
    ListOption<"force", "force", "std::string",
               "GLOB:DTYPE: ops whose type or name matches GLOB run in DTYPE "
               "(fp32, tf32, bf16, fp16, fp8; repeatable)", [{::llvm::cl::value_desc("GLOB:DTYPE")}]>,
    Option<"policyFile", "policy", "std::string", "\"\"",
           "A JSON policy file with the same settings (its keys: these names with '_' for "
           "'-'); it wins over flags", [{::llvm::cl::value_desc("FILE.json")}]>,
    MpOption<"fp16Margin", "fp16-margin", "double", "2.0",
             "Leave FP16 when calibrated amax * margin > 65504", "",
             "::mixprec::passes::PositiveNumberParser">,
    MpOption<"underflowThreshold", "underflow-threshold", "double", "0.5",
             "Leave FP16 when this share of calibrated non-zero values is below 6.1e-5", "",
             "::mixprec::passes::PositiveNumberParser">,
    MpOption<"overflowFallback", "overflow-fallback", "::mixprec::passes::Precision",
             "::mixprec::passes::Precision::BF16",
             "Where ops that FP16 cannot hold go: bf16 or fp32",
             [{::llvm::cl::values(
                 clEnumValN(::mixprec::passes::Precision::BF16, "bf16", "BF16"),
                 clEnumValN(::mixprec::passes::Precision::FP32, "fp32", "FP32"))}],
             "::mixprec::passes::EnumParser<::mixprec::passes::Precision>">,
  ];
}


def FoldCastsPass : Pass<"mp-fold-casts", "mlir::func::FuncOp"> {
  let summary = "Remove exact cast pairs and store constants in their cast dtype";
  let description = [{
    Folds a cast to the same type, a widening cast followed by the narrowing
    cast back (`bf16 -> f32 -> bf16` is the identity), chains of widening
    casts, and duplicate casts of one value. A narrowing cast followed by a
    widening one (`f32 -> bf16 -> f32`) rounds, so it stays. A cast of a
    constant becomes a constant of the cast dtype, rounded at compile time
    exactly as the run-time cast would round. `mp.amax` and `mp.quantize`
    read the value before an exact widening. These are the ops' folders and
    canonicalization patterns, applied greedily; unlike `--canonicalize`,
    constants keep their place and their names, and equal ones stay apart.
    ```mlir
    %w = mp.constant dense<0.1> : tensor<4xf32>
    %c = mp.cast %w : tensor<4xf32> -> tensor<4xbf16>
    // after:
    %c = mp.constant dense<1.000980e-01> : tensor<4xbf16>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def InsertCastsPass : Pass<"mp-insert-casts", "mlir::func::FuncOp"> {
  let summary = "Materialize assigned dtypes with a cast at every dtype boundary";
  let description = [{
    Gives every op annotated by `--mp-assign-precision` its assigned result
    element type and casts each operand that arrives in another dtype. With
    `mp.keep_io_types` on the function (set by the assignment pass), graph
    outputs are cast back to their original dtype; otherwise the function
    signature takes the new types. Inserts nothing else.
    ```mlir
    %0 = mp.relu %x {mp.precision = bf16} : tensor<4xf32>
    // after:
    %c = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
    %0 = mp.relu %c : tensor<4xbf16>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def FuseAttentionPass : Pass<"mp-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Form mp.attention from the exporters' matmul, scale, mask, softmax, matmul";
  let description = [{
    Recognises scaled dot-product attention as torch.onnx writes it (the
    dynamo exporter's SDPA decomposition with q and k each scaled by
    sqrt(scale), the bias from the attention mask and the IsNaN guard; the
    legacy exporter's; eager forms with a Div or Mul of the scores and a
    constant causal Where) and replaces it with one `mp.attention`, whose
    kernel never writes the S x S scores. Runs before the precision
    assignment, so the fused op takes the policy's low precision as the two
    GEMMs would. Values read elsewhere (a training step's backward reads
    the probabilities) keep their ops unfused.
    ```mlir
    %s = mp.matmul %q, %kt : ... -> tensor<1x4x8x8xf32>
    %b = mp.add %s, %mask : ...
    %p = mp.softmax %b {axis = 3 : i64} : ...
    %o = mp.matmul %p, %v : ...
    // after:
    %o, %lse = mp.attention %q, %k, %v, %mask {scale = 1.0 : f64} : ...
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def TieTransposedWeightsPass : Pass<"mp-tie-transposed-weights", "mlir::func::FuncOp"> {
  let summary = "Read a weight stored again transposed through its first copy";
  let description = [{
    Exporters write a tied weight a second time when one reader wants it
    transposed: torch.onnx's legacy exporter stores GPT-2's token table
    [V, D] for the Gather and, as a separate initializer, its transpose
    [D, V] for the LM head's MatMul. A 2-D constant read as the weight of a
    GEMM whose data is exactly the transpose of another constant of the
    function is replaced, in that GEMM, by the other constant with the
    GEMM's `transpose_weight` flipped (an `mp.matmul` with a 2-D weight
    becomes the equivalent `mp.linear`), so the weight is stored once
    (and `--mp-share-weights` can then keep one 16-bit copy). Runs before
    the precision assignment; bytes are compared exactly, never rounded.
    ```mlir
    %t = mp.constant dense<...> : tensor<50x16xf32>
    %h = mp.constant dense<...> : tensor<16x50xf32>  // %t transposed
    %y = mp.matmul %x, %h : (tensor<1x8x16xf32>, tensor<16x50xf32>) -> tensor<1x8x50xf32>
    // after:
    %y = mp.linear %x, %t {transpose_weight = true}
        : (tensor<1x8x16xf32>, tensor<50x16xf32>) -> tensor<1x8x50xf32>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def ShareWeightsPass : Pass<"mp-share-weights", "mlir::func::FuncOp"> {
  let summary = "Store a weight once when a GEMM and a data-movement op both read it";
  let description = [{
    A weight read by a 16-bit GEMM (through its cast) and by a data-movement
    op that is FP32 only because its inputs are constants (a tied
    embedding: gather for the tokens, the LM head's GEMM) would be stored in
    both dtypes. The data-movement op reads the 16-bit copy instead (data
    movement commutes with rounding) and its result is widened back to FP32
    exactly; its reason becomes `follow:shared-weight`. Dtypes chosen by a
    policy, an override or --keep-fp32 are kept; FP8 copies are left alone.
    ```mlir
    %w = mp.constant ... : tensor<50x16xf32>
    %e = mp.gather %w, %ids {mp.precision = f32, mp.reason = "follow:constant-inputs"}
    %c = mp.cast %w : tensor<50x16xf32> -> tensor<50x16xbf16>
    %y = mp.linear %h, %c {transpose_weight = true, mp.precision = bf16}
    // after:
    %c = mp.cast %w : tensor<50x16xf32> -> tensor<50x16xbf16>
    %g = mp.gather %c, %ids {mp.precision = bf16, mp.reason = "follow:shared-weight"}
    %e = mp.cast %g : tensor<1x8x16xbf16> -> tensor<1x8x16xf32>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def InsertScalingPass : Pass<"mp-insert-scaling", "mlir::func::FuncOp"> {
  let summary = "Quantize FP8 GEMM operands with per-tensor or per-block scales and track amax";
  let description = [{
    For every op whose `mp.precision` is FP8 (after `--mp-insert-casts`):
    a constant weight is quantized at compile time (scale from its own amax,
    so weights are stored in FP8 with an FP32 scale); an activation gets a
    static scale from calibration (`mp.calib_amax` of its producer) when
    `scaling=static` or `auto` finds one, else current scaling: an
    `mp.amax` of the tensor, `mp.fp8_scale`, and `mp.quantize`. The GEMM
    becomes `mp.scaled_matmul` / `mp.scaled_linear` with both scales.
    scale = (fp8_max / amax) / 2^margin; quantization saturates. One
    rewrite pattern (ScaleFp8Gemm), applied greedily to the FP8 GEMMs.

    `scaling=delayed` (Transformer Engine's DelayedScaling): each run-time
    operand is quantized with a scale kept as module state
    (`fp8.SITE.scale`, initially 1), computed after the previous run; the
    run measures the tensor's amax, pushes it at the front of the state
    `fp8.SITE.amax_history` (`amax-history` entries, initially 0) and sets
    the next scale from the max of the history (`amax-algo=max`) or the
    amax just measured (`most-recent`), keeping the old scale when that
    amax is 0 or not finite. SITE is the GEMM's name and the operand
    (`fc1.input`, `fc1.grad.weight`).

    `scaling=block` (Transformer Engine's Float8BlockScaling with
    power-of-two scales, DeepSeek-V3's recipe) and `scaling=mxfp8` (1 x 32
    blocks, E8M0 scales): the operands of every FP8 mp.linear, and of every
    mp.matmul by a 2-D matrix, get one scale per block
    (`mp.block_scale`, `mp.block_quantize`; common/numerics/BlockScaling.h),
    blocks along the contraction: 1 x 128 for activations and gradients,
    128 x 128 for weights (constants and `mp.state` arguments, through
    casts and transposes), 1 x 32 for everything under mxfp8. The GEMM
    becomes a block-scaled `mp.scaled_linear` against the weight as [n, k].
    A 128 x 128 copy serves both orientations (its transpose and the
    transposed scales); a 1-row-block operand read transposed (x^T in a
    weight-gradient GEMM) is quantized along the other dim, as its own
    copy. Constant weights are quantized at compile time. Batched matmuls
    (a right operand of rank > 2) keep per-tensor current scaling.

    `format=hybrid` (the default): operands that a gradient rule marked as
    carrying the gradient (`mp.grad_operands`) are quantized to f8E5M2,
    whose range gradients need; the others to the GEMM's FP8 type.
    ```mlir
    %y = mp.linear %x, %w {mp.precision = f8E4M3FN} : (...) -> tensor<8x32xbf16>
    // after:
    %a = mp.amax %x : tensor<8x64xbf16> -> tensor<f32>
    %s = mp.fp8_scale %a {format = f8E4M3FN} : tensor<f32> -> tensor<f32>
    %q = mp.quantize %x, %s : (...) -> tensor<8x64xf8E4M3FN>
    %y = mp.scaled_linear %q, %qw, %s, %sw : (...) -> tensor<8x32xbf16>
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
  let options = [
    MpOption<"scaling", "scaling", "::mixprec::passes::Fp8Scaling",
             "::mixprec::passes::Fp8Scaling::Auto",
             "FP8 scales: current, delayed (amax history in module state), static "
             "(from --calibrate), auto (static where calibrated), block (per-block scales) or "
             "mxfp8 (1x32 blocks, E8M0 scales)",
             [{::llvm::cl::values(
                 clEnumValN(::mixprec::passes::Fp8Scaling::Current, "current", "this run's amax"),
                 clEnumValN(::mixprec::passes::Fp8Scaling::Delayed, "delayed",
                            "an amax history in module state"),
                 clEnumValN(::mixprec::passes::Fp8Scaling::Static, "static", "calibrated amax"),
                 clEnumValN(::mixprec::passes::Fp8Scaling::Auto, "auto",
                            "static where calibrated, else current"),
                 clEnumValN(::mixprec::passes::Fp8Scaling::Block, "block",
                            "per-block power-of-two scales: 1x128 activations and gradients, "
                            "128x128 weights"),
                 clEnumValN(::mixprec::passes::Fp8Scaling::Mxfp8, "mxfp8",
                            "MXFP8: 1x32 blocks, E8M0 scales"))}],
             "::mixprec::passes::EnumParser<::mixprec::passes::Fp8Scaling>">,
    MpOption<"margin", "margin", "int", "0", "FP8 scale margin: scales are divided by 2^N",
             "", "::mixprec::passes::IntegerInRangeParser<0, 64>">,
    MpOption<"format", "format", "::mixprec::passes::Fp8Format",
             "::mixprec::passes::Fp8Format::Hybrid",
             "FP8 formats: hybrid (gradient operands, mp.grad_operands, in f8E5M2, the rest in "
             "the GEMM's FP8 type) or e4m3 (every operand in the GEMM's type)",
             [{::llvm::cl::values(
                 clEnumValN(::mixprec::passes::Fp8Format::Hybrid, "hybrid",
                            "gradients f8E5M2, the rest f8E4M3FN"),
                 clEnumValN(::mixprec::passes::Fp8Format::E4M3, "e4m3", "every operand f8E4M3FN"))}],
             "::mixprec::passes::EnumParser<::mixprec::passes::Fp8Format>">,
    MpOption<"amaxHistory", "amax-history", "int", "1024",
             "Delayed FP8 scaling: amax history length", "",
             "::mixprec::passes::IntegerInRangeParser<1, (1 << 20)>">,
    MpOption<"amaxAlgo", "amax-algo", "::mixprec::passes::AmaxAlgo",
             "::mixprec::passes::AmaxAlgo::Max",
             "Delayed FP8 scaling: scale from the history's max or the most-recent amax",
             [{::llvm::cl::values(
                 clEnumValN(::mixprec::passes::AmaxAlgo::Max, "max", "the history's max"),
                 clEnumValN(::mixprec::passes::AmaxAlgo::MostRecent, "most-recent",
                            "the amax just measured"))}],
             "::mixprec::passes::EnumParser<::mixprec::passes::AmaxAlgo>">,
  ];
}


//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def FusePass : Pass<"mp-fuse", "mlir::func::FuncOp"> {
  let summary = "Group element-wise chains, reductions and GEMM epilogues into kernels";
  let description = [{
    Walks the graph in order and merges each element-wise or reduction op
    with the groups of its producers when they iterate over the same shape,
    the merged group holds at most one row reduction (softmax, log-softmax,
    layer/RMS norm, reduce_*), and no value leaves the group for an op that
    the group would then have to wait for. A bias add, ReLU or tanh-GELU
    after a GEMM whose result has no other use becomes the GEMM's epilogue.
    GEMM operands always come from memory, so a reduction never fuses into
    a GEMM. A group holds at most 1024 ops, so a longer chain becomes
    several kernels (each far below the 65536 instructions the runtime
    accepts in one kernel). Each group of two or more ops becomes an
    `mp.fusion`; a value used outside its group is one of the fusion's
    results (stored once, never recomputed; a group whose values are all
    dead stores its last one). Time and memory are near-linear in the
    number of ops.
    ```mlir
    %0 = mp.add %x, %b : ...
    %1 = mp.relu %0 : ...
    // after:
    %1 = mp.fusion (%x, %b) {kind = "elementwise", ops = ["add", "relu"]} : ... {
      ...
    }
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect"];
}

def LowerToKernelsPass : Pass<"mp-lower-to-kernels", "mlir::func::FuncOp"> {
  let summary = "Turn a fused mp graph into mpk kernels, GEMM calls and routines";
  let description = [{
    A dialect conversion (patterns in LowerToKernels.cpp and
    KernelBodyPatterns.cpp). Each `mp.fusion` of kind elementwise/reduction
    and each remaining element-wise, row-reduction or amax op becomes an
    `mpk.kernel` (iteration space and row dims derived from its reduction);
    each GEMM, with the epilogue its fusion holds, becomes an `mpk.gemm`; a
    reshape becomes an `mpk.alias`; a matmul no GEMM step expresses, and
    then every other op, becomes an `mpk.call` of a backend routine with
    its family's typed options (`populateRoutineLoweringPatterns`,
    conversion/GraphToKernel/LowerRoutines.cpp).
    Inside kernel bodies only expression-program instructions stay:
    softmax, log-softmax, layer and RMS norms and reductions become FP32
    element-wise instructions (`mpk.elementwise` when operand dtypes
    differ) and `mpk.row_reduce`, silu a sigmoid and a mul, amax
    `mpk.amax`, with the output rounded once, so the module writer and the
    CUDA emitter print the same program. An op no pattern lowers (a softmax
    over a leading axis fused by hand, a fusion of another kind of op) is a
    "failed to legalize" error at its location.
    ```mlir
    %0 = mp.softmax %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
    // after:
    %0 = mpk.kernel(%x) {ops = ["sm"], row_dims = 1 : i64, shape = array<i64: 4, 8>} ... {
    ^bb0(%a: tensor<4x8xf32>):
      %m = mpk.row_reduce max %a : tensor<4x8xf32> -> tensor<4x1xf32>
      %d = mpk.elementwise sub %a, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
      %e = mpk.elementwise exp %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %s = mpk.row_reduce sum %e : tensor<4x8xf32> -> tensor<4x1xf32>
      %y = mpk.elementwise div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
      mpk.yield %y : tensor<4x8xf32>
    }
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect", "::mixprec::kernel::KernelDialect"];
}

def PlanMemoryPass : Pass<"mp-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Assign arena offsets to every value, reusing buffers by liveness";
  let description = [{
    Values produced by mpk ops (and graph inputs) get 256-byte-aligned
    offsets in one arena (`mpk.offsets` on each op, argument attribute
    `mpk.offset`); a buffer is reused once every reader of its value has
    run; aliases share their input's buffer and keep it alive. Graph outputs
    stay live to the end. The function records the peak (`mpk.arena_bytes`)
    next to the sum of all buffers (`mpk.buffer_bytes`).
  }];
  let dependentDialects = ["::mixprec::kernel::KernelDialect"];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def AutodiffPass : Pass<"mp-autodiff", "mlir::ModuleOp"> {
  let summary = "Append the function that computes a loss and its gradients";
  let description = [{
    For a function whose result (or the result `loss=` names) holds one
    float element, appends `@<name>_grad`: the forward ops, then a reverse
    sweep that asks each op on the path from the `wrt=` inputs to the loss
    for its gradient rule (`GradientOpInterface`; element-wise ops derive
    theirs from their scalar function). Adjoints of a value read several
    times are summed in FP32. `wrt` names function arguments (`mp.name`) or
    constants (their node name), which become arguments of the gradient
    function; `params` stands for every named float constant of rank >= 1.
    Results: the loss, then one gradient per wrt input (`grad:<name>`), zeros
    for an input the loss does not depend on through float values. An op
    on the path with no gradient rule is an error naming it.
    ```mlir
    func.func @main(%x: tensor<4xf32> {mp.name = "x"}) -> tensor<f32> {
      %0 = mp.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %1 = mp.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
      return %1 : tensor<f32>
    }
    // after --mp-autodiff=wrt=x, also:
    func.func @main_grad(%x: tensor<4xf32> {mp.name = "x"})
        -> (tensor<f32> {mp.name = "loss"}, tensor<4xf32> {mp.name = "grad:x"}) {
      ... forward ...
      %one = mp.constant dense<1.0> : tensor<f32>
      %d = mp.reshape %one : tensor<f32> -> tensor<1xf32>
      %b = mp.add %d, %zeros : tensor<1xf32>, tensor<4xf32> -> tensor<4xf32>
      %g1 = mp.mul %b, %x ...   %g2 = mp.mul %b, %x ...
      %g = mp.add %g1, %g2 ...  // two uses of %x, summed in FP32
      return %1, %g : tensor<f32>, tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"\"",
           "The function to differentiate (default: @main, or the only one)">,
    ListOption<"wrt", "wrt", "std::string",
               "Argument or constant names to differentiate with respect to, or params">,
    Option<"loss", "loss", "std::string", "\"\"",
           "The result to differentiate, by mp.name or index (default: the only one)">,
  ];
}

def BuildTrainingStepPass : Pass<"mp-build-training-step", "mlir::ModuleOp"> {
  let summary = "Build one training step: forward, loss, gradients, optimizer, loss scaling";
  let description = [{
    Turns the forward function into the function that runs one training
    step (passes/Training/TrainingStep.h, buildTrainingStep): the named float
    constants of rank >= 1 that no `frozen` glob matches become FP32 master
    weights kept as module state (`mp.state`), with the optimizer's state,
    the step count and the loss-scale state; the step computes the loss
    (cross-entropy over integer `labels`, MSE against `targets`, or the
    model's own), scales it, differentiates it (--mp-autodiff's sweep),
    unscales the gradients and checks them for inf/NaN (a non-finite one
    skips the update, leaving every master and optimizer state
    bit-identical), clips them by global norm, updates the masters (SGD with
    momentum or AdamW, PyTorch's formulas) and the loss scale (GradScaler's
    rule). Results: loss, skipped, grad_norm, loss_scale, then the state
    updates. Without keep-forward the forward function is replaced (the step
    takes its name when it was @main).
  }];
  let dependentDialects = ["::mixprec::graph::GraphDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"main\"", "The forward function">,
    Option<"lossKind", "loss", "std::string", "\"ce\"", "ce, mse or model">,
    Option<"output", "output", "std::string", "\"\"",
           "The forward result the loss reads (mp.name; default the first)">,
    Option<"optimizerKind", "optimizer", "std::string", "\"sgd\"", "sgd or adamw">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "SGD: L2 added to the gradient; AdamW: decoupled decay">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"scalingKind", "loss-scale", "std::string", "\"dynamic\"", "none, static or dynamic">,
    Option<"initScale", "init-scale", "double", "65536.0", "Initial (or static) loss scale">,
    Option<"growthFactor", "growth-factor", "double", "2.0", "Dynamic scaling growth">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5", "Dynamic scaling backoff">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "Clean steps before the scale grows">,
    Option<"accumulate", "accumulate", "int64_t", "1",
           "Micro-batches per step (gradient accumulation; data dim 0 holds them all)">,
    Option<"hysteresis", "hysteresis", "int64_t", "1",
           "Overflows absorbed before the scale backs off (1: every one backs off)">,
    Option<"minScale", "min-scale", "double", "0.0", "Floor of the loss scale (0: none)">,
    Option<"clipNorm", "clip-norm", "double", "0.0", "Global-norm gradient clipping (0: off)">,
    ListOption<"frozen", "frozen", "std::string", "Globs of constants not to train">,
    Option<"stepName", "name", "std::string", "\"train_step\"", "The step function's name">,
    Option<"keepForward", "keep-forward", "bool", "false", "Keep the forward function">,
    Option<"dataParallel", "data-parallel", "bool", "false",
           "Average the gradients and the loss across ranks (mp.all_reduce)">,
    Option<"allreduceDType", "allreduce-dtype", "std::string", "\"fp32\"",
           "The gradient buckets' dtype across ranks: fp32, bf16 or fp16">,
    Option<"bucketMB", "bucket-mb", "double", "25.0", "Most MB of gradients per all_reduce">,
    Option<"shardOptimizer", "shard-optimizer", "bool", "false",
           "ZeRO stage 1: each rank keeps and updates its slice of the optimizer state "
           "(needs data-parallel=true and world)">,
    Option<"world", "world", "int64_t", "1",
           "The ranks the step is compiled for (shard-optimizer)">,
  ];
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

// --mp-precision-pipeline (Pipelines.cpp): its options are
// --mp-assign-precision's and --mp-insert-scaling's (as fp8-*).
def PrecisionPipeline : MixprecPipeline<"mp-precision-pipeline", "PrecisionPipelineOptions"> {
  let passes = [AssignPrecisionPass, InsertScalingPass];
  let prefixes = ["", "fp8-"];
}

#endif // MIXPREC_PASSES
