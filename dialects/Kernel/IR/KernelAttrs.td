//===- KernelAttrs.td - routines and their typed options ---*- tablegen -*-===//
//
// `mpk.call` runs a backend routine (`Kernel_Routine`, the closed set the
// runtime implements) with one options attribute per routine family. The
// module writer serializes each family into its table of the schema's
// `RoutineOptions` union (runtime/schema/module.fbs.in), field for field.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_KERNEL_ATTRS
#define MIXPREC_KERNEL_ATTRS

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/Kernel/IR/KernelAttrInterfaces.td"
include "dialects/Kernel/IR/KernelEnums.td"

//===----------------------------------------------------------------------===//
// Routines
//===----------------------------------------------------------------------===//

// Names are the schema's `Routine.op_type` strings (and the mp op names).

def Kernel_RoutineAttr : EnumAttr<Kernel_Dialect, Kernel_Routine, "routine">;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

// `[1, 0]`, also `[]` (a rank-0 transpose or slice).
def Kernel_IntListParameter : ArrayRefParameter<"int64_t", "a list of integers"> {
  let parser = "::mixprec::kernel::parseIntList($_parser)";
  let printer = "::mixprec::kernel::printIntList($_printer, $_self)";
}

// `true` or `false`.
def Kernel_BoolParameter : AttrOrTypeParameter<"bool", "a flag"> {
  let parser = "::mixprec::kernel::parseBoolKeyword($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

// An f32 value, printed so that it parses back bit for bit.
def Kernel_F32Parameter : APFloatParameter<"an f32 value"> {
  let parser = "::mixprec::kernel::parseF32($_parser)";
  let printer = "$_printer.printFloat($_self)";
}

//===----------------------------------------------------------------------===//
// Options, one attribute per routine family
//===----------------------------------------------------------------------===//

// The options of the routines `routines` (Routine enumerants), when the
// C++ condition `also` holds.
class Kernel_Options<string name, string attrMnemonic, list<string> routines,
                     string also = "true">
    : AttrDef<Kernel_Dialect, name # "Options", [Kernel_RoutineOptionsInterface]> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = "bool appliesTo(Routine routine) const { return (" #
      !interleave(!foreach(r, routines, "routine == Routine::" # r), " || ") # ") && (" #
      also # "); }";
}

def Kernel_Conv2dOptionsAttr : Kernel_Options<"Conv2d", "conv2d", ["Conv2d"]> {
  let summary = "Options of the conv2d routine";
  let description = [{
    `pads` is [top, left, bottom, right]; `tf32` rounds the input and the
    weight to TF32 first.
    ```mlir
    #mpk.conv2d<strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], groups = 1, tf32 = false>
    ```
    Verifier: two strides and dilations, four pads, groups >= 1.
  }];
  let parameters = (ins Kernel_IntListParameter:$strides, Kernel_IntListParameter:$pads,
                        Kernel_IntListParameter:$dilations, "int64_t":$groups,
                        Kernel_BoolParameter:$tf32);
  let genVerifyDecl = 1;
}

def Kernel_Pool2dOptionsAttr : Kernel_Options<"Pool2d", "pool2d", ["MaxPool2d", "AvgPool2d"],
    "routine == Routine::AvgPool2d || !getCountIncludePad()"> {
  let summary = "Options of the max_pool2d and avg_pool2d routines";
  let description = [{
    `pads` is [top, left, bottom, right]; `count_include_pad` applies to
    average pooling only (max_pool2d takes these options with it false).
    ```mlir
    #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = false>
    ```
    Verifier: two kernel dims, strides and dilations, four pads.
  }];
  let parameters = (ins Kernel_IntListParameter:$kernel, Kernel_IntListParameter:$strides,
                        Kernel_IntListParameter:$pads, Kernel_IntListParameter:$dilations,
                        Kernel_BoolParameter:$ceil_mode, Kernel_BoolParameter:$count_include_pad);
  let genVerifyDecl = 1;
}

def Kernel_ConvOptionsAttr : Kernel_Options<"Conv", "conv", ["Conv", "ConvTranspose"],
    "routine == Routine::ConvTranspose || getOutputPadding().empty()"> {
  let summary = "Options of the N-D conv and conv_transpose routines";
  let description = [{
    One stride, dilation (and, for conv_transpose, output padding) per
    spatial dim (1 to 3); `pads` the begins then the ends; `tf32` rounds
    the input and the weight to TF32 first.
    ```mlir
    #mpk.conv<strides = [1, 1, 1], pads = [1, 1, 1, 1, 1, 1], dilations = [1, 1, 1], groups = 1, tf32 = false, output_padding = []>
    ```
    Verifier: 1 to 3 strides, as many dilations, twice as many pads, no
    or one output padding per dim, groups >= 1.
  }];
  let parameters = (ins Kernel_IntListParameter:$strides, Kernel_IntListParameter:$pads,
                        Kernel_IntListParameter:$dilations, "int64_t":$groups,
                        Kernel_BoolParameter:$tf32, Kernel_IntListParameter:$output_padding);
  let genVerifyDecl = 1;
}

def Kernel_PoolOptionsAttr : Kernel_Options<"Pool", "pool",
    ["MaxPool", "AvgPool", "MaxPoolIndices"],
    "(routine == Routine::AvgPool || !getCountIncludePad()) && " #
    "(routine == Routine::MaxPoolIndices || getStorageOrder() == 0)"> {
  let summary = "Options of the N-D max_pool, avg_pool and max_pool_indices routines";
  let description = [{
    One kernel size, stride and dilation per spatial dim (1 to 3); `pads`
    the begins then the ends; `count_include_pad` applies to avg_pool,
    `storage_order` (0 row-major, 1 column-major) to max_pool_indices.
    ```mlir
    #mpk.pool<kernel = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0, 0, 0], dilations = [1, 1, 1], ceil_mode = false, count_include_pad = false, storage_order = 0>
    ```
    Verifier: 1 to 3 kernel dims, as many strides and dilations, twice as
    many pads, storage_order 0 or 1.
  }];
  let parameters = (ins Kernel_IntListParameter:$kernel, Kernel_IntListParameter:$strides,
                        Kernel_IntListParameter:$pads, Kernel_IntListParameter:$dilations,
                        Kernel_BoolParameter:$ceil_mode, Kernel_BoolParameter:$count_include_pad,
                        "int64_t":$storage_order);
  let genVerifyDecl = 1;
}

def Kernel_TransposeOptionsAttr : Kernel_Options<"Transpose", "transpose", ["Transpose"]> {
  let summary = "Options of the transpose routine: output dim i is input dim perm[i]";
  let description = [{
    ```mlir
    #mpk.transpose<perm = [1, 0]>
    ```
  }];
  let parameters = (ins Kernel_IntListParameter:$perm);
}

def Kernel_SliceOptionsAttr : Kernel_Options<"Slice", "slice", ["Slice"]> {
  let summary = "Options of the slice routine: a start and a non-zero step per dim";
  let description = [{
    The output's shape gives the counts.
    ```mlir
    #mpk.slice<starts = [0, 64], steps = [1, 1]>
    ```
    Verifier: as many steps as starts, no step 0.
  }];
  let parameters = (ins Kernel_IntListParameter:$starts, Kernel_IntListParameter:$steps);
  let genVerifyDecl = 1;
}

def Kernel_AxisOptionsAttr : Kernel_Options<"Axis", "axis",
    ["Concat", "Gather", "Softmax", "LogSoftmax", "GatherElements"]> {
  let summary = "Options of the concat, gather, softmax, log_softmax and gather_elements routines";
  let description = [{
    ```mlir
    #mpk.axis<axis = 0>
    ```
  }];
  let parameters = (ins "int64_t":$axis);
}

def Kernel_NormOptionsAttr : Kernel_Options<"Norm", "norm", ["LayerNorm", "RmsNorm"]> {
  let summary = "Options of the layer_norm and rms_norm routines";
  let description = [{
    The routine normalizes over dims [axis, rank).
    ```mlir
    #mpk.norm<axis = 1, epsilon = 9.99999974E-6>
    ```
  }];
  let parameters = (ins "int64_t":$axis, Kernel_F32Parameter:$epsilon);
}

def Kernel_BatchNormOptionsAttr : Kernel_Options<"BatchNorm", "batch_norm", ["BatchNorm"]> {
  let summary = "Options of the batch_norm routine (the channel is dim 1)";
  let description = [{
    ```mlir
    #mpk.batch_norm<epsilon = 9.99999974E-6>
    ```
  }];
  let parameters = (ins Kernel_F32Parameter:$epsilon);
}

def Kernel_ReduceOptionsAttr : Kernel_Options<"Reduce", "reduce",
    ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd"]> {
  let summary = "Options of the reduce_sum, reduce_mean, reduce_max and reduce_prod routines";
  let description = [{
    ```mlir
    #mpk.reduce<axes = [0], keepdims = true>
    ```
  }];
  let parameters = (ins Kernel_IntListParameter:$axes, Kernel_BoolParameter:$keepdims);
}

def Kernel_Fp8ScaleOptionsAttr : Kernel_Options<"Fp8Scale", "fp8_scale", ["Fp8Scale"]> {
  let summary = "Options of the fp8_scale routine: (fp8_max / amax) / 2^margin";
  let description = [{
    ```mlir
    #mpk.fp8_scale<margin = 0, format = f8E4M3FN>
    ```
    Verifier: `format` is f8E4M3FN or f8E5M2.
  }];
  let parameters = (ins "int64_t":$margin, "::mlir::Type":$format);
  let genVerifyDecl = 1;
}

def Kernel_BlockScaleOptionsAttr : Kernel_Options<"BlockScale", "block_scale",
    ["BlockScale", "BlockQuantize"]> {
  let summary = "Options of the block_scale and block_quantize routines";
  let description = [{
    The block (rows, cols over the last two dims), the recipe (0 block,
    1 mx: common/numerics/BlockScaling.h), the margin and the FP8 format
    (block_scale's; block_quantize takes its format from its output).
    ```mlir
    #mpk.block_scale<block_rows = 1, block_cols = 128, recipe = 0, margin = 0, format = f8E4M3FN>
    ```
    Verifier: positive block sizes, recipe 0 or 1, margin >= 0, an FP8 format.
  }];
  let parameters = (ins "int64_t":$block_rows, "int64_t":$block_cols, "int64_t":$recipe,
                        "int64_t":$margin, "::mlir::Type":$format);
  let genVerifyDecl = 1;
}

def Kernel_BlockGemmOptionsAttr : Kernel_Options<"BlockGemm", "block_gemm",
    ["BlockScaledGemm"]> {
  let summary = "Options of the block_scaled_gemm routine";
  let description = [{
    The block-scaled GEMM of common/numerics/BlockScaling.h: a [.., k]
    (leading dims as rows) with scale blocks `a_block_rows` x `k_block`, b
    [n, k] with `b_block_rows` x `k_block`; then the bias and `epilogue`
    (0 none, 1 relu, 2 tanh-GELU) in FP32 and one rounding.
    ```mlir
    #mpk.block_gemm<a_block_rows = 1, b_block_rows = 128, k_block = 128, epilogue = 0>
    ```
    Verifier: positive block sizes, epilogue in [0, 2].
  }];
  let parameters = (ins "int64_t":$a_block_rows, "int64_t":$b_block_rows, "int64_t":$k_block,
                        "int64_t":$epilogue);
  let genVerifyDecl = 1;
}

def Kernel_MatmulOptionsAttr : Kernel_Options<"Matmul", "matmul", ["Matmul"]> {
  let summary = "Options of the matmul routine (numpy.matmul semantics)";
  let description = [{
    `tf32` rounds both operands to TF32 first.
    ```mlir
    #mpk.matmul<tf32 = false>
    ```
  }];
  let parameters = (ins Kernel_BoolParameter:$tf32);
}

def Kernel_GatherNdOptionsAttr : Kernel_Options<"GatherNd", "gather_nd", ["GatherNd"]> {
  let summary = "Options of the gather_nd routine: the leading dims data and indices share";
  let description = [{
    ```mlir
    #mpk.gather_nd<batch_dims = 0>
    ```
  }];
  let parameters = (ins "int64_t":$batch_dims);
}

def Kernel_ArgReduceOptionsAttr : Kernel_Options<"ArgReduce", "arg_reduce",
    ["ArgMax", "ArgMin"]> {
  let summary = "Options of the arg_max and arg_min routines";
  let description = [{
    ```mlir
    #mpk.arg_reduce<axis = 1, keepdims = true, select_last_index = false>
    ```
  }];
  let parameters = (ins "int64_t":$axis, Kernel_BoolParameter:$keepdims,
                        Kernel_BoolParameter:$select_last_index);
}

def Kernel_TopKOptionsAttr : Kernel_Options<"TopK", "topk", ["TopK"]> {
  let summary = "Options of the topk routine; `indices` picks the output it writes";
  let description = [{
    An mp.topk lowers to one call per result it uses: the values
    (`indices = false`) and the int64 indices (`indices = true`).
    ```mlir
    #mpk.topk<axis = 1, k = 3, largest = true, indices = false>
    ```
  }];
  let parameters = (ins "int64_t":$axis, "int64_t":$k, Kernel_BoolParameter:$largest,
                        Kernel_BoolParameter:$indices);
}

def Kernel_CumSumOptionsAttr : Kernel_Options<"CumSum", "cumsum", ["CumSum"]> {
  let summary = "Options of the cumsum routine";
  let description = [{
    ```mlir
    #mpk.cumsum<axis = 1, exclusive = false, reverse = false>
    ```
  }];
  let parameters = (ins "int64_t":$axis, Kernel_BoolParameter:$exclusive,
                        Kernel_BoolParameter:$reverse);
}

def Kernel_AttentionOptionsAttr : Kernel_Options<"Attention", "attention",
    ["Attention", "AttentionGrad"]> {
  let summary = "Options of the attention routines; `lse` and `grad` pick the output written";
  let description = [{
    An mp.attention lowers to one call per result it uses: the output
    (`lse = false`) and the FP32 log-sum-exp (`lse = true`); an
    mp.attention_grad to one attention_grad call per result: `grad` 0 dq,
    1 dk, 2 dv.
    ```mlir
    #mpk.attention<scale = 0.125, causal = true, lse = false, grad = 0>
    ```
    Verifier: `grad` in [0, 2].
  }];
  let genVerifyDecl = 1;
  // The scale as the FP32 kernels use it (the graph op's f64, rounded).
  let parameters = (ins Kernel_F32Parameter:$scale, Kernel_BoolParameter:$causal,
                        Kernel_BoolParameter:$lse, "int64_t":$grad);
}

def Kernel_ScatterNdOptionsAttr : Kernel_Options<"ScatterNd", "scatter_nd", ["ScatterNd"]> {
  let summary = "Options of the scatter_nd routine: how an update meets the data";
  let description = [{
    `reduction`: 0 replaces (none), 1 adds, 2 multiplies, 3 keeps the
    maximum, 4 the minimum (the schema's ScatterNdOptions).
    ```mlir
    #mpk.scatter_nd<reduction = 1>
    ```
    Verifier: `reduction` in [0, 4].
  }];
  let parameters = (ins "int64_t":$reduction);
  let genVerifyDecl = 1;
}

def Kernel_IntElementwiseOptionsAttr : Kernel_Options<"IntElementwise", "int_elementwise",
    ["IntElementwise"]> {
  let summary = "Options of the int_elementwise routine: which integer op it computes";
  let description = [{
    `op` is the schema's IntElementwiseOptions.op (runtime/kernels/IntElementwise.h):
    0 add, 1 sub, 2 mul, 3 div, 4 mod, 5 fmod, 6 pow, 7 max, 8 min, 9 neg,
    10 abs, 11 select, 12 equal, 13 less, 14 less_or_equal, 15 greater,
    16 greater_or_equal, 17 cast.
    ```mlir
    #mpk.int_elementwise<op = 3>
    ```
    Verifier: `op` in [0, 17].
  }];
  let parameters = (ins "int64_t":$op);
  let genVerifyDecl = 1;
}

def Kernel_AllReduceOptionsAttr : Kernel_Options<"AllReduce", "all_reduce", ["AllReduce"]> {
  let summary = "Options of the all_reduce routine: the reduction across the ranks";
  let description = [{
    `reduction` is the schema's AllReduceOptions.reduction: 0 sum, 1 mean
    (the sum divided by the world size), 2 max.
    ```mlir
    #mpk.all_reduce<reduction = 1>
    ```
    Verifier: `reduction` in [0, 2].
  }];
  let parameters = (ins "int64_t":$reduction);
  let genVerifyDecl = 1;
}

def Kernel_ShardOptionsAttr : Kernel_Options<"Shard", "shard", ["RankSlice", "AllGather"]> {
  let summary = "Options of the rank_slice and all_gather routines: the job's ranks";
  let description = [{
    `world` is the schema's ShardOptions.world: the ranks the step was
    compiled for (the session's collective must have as many).
    ```mlir
    #mpk.shard<world = 2>
    ```
    Verifier: `world` >= 1.
  }];
  let parameters = (ins "int64_t":$world);
  let genVerifyDecl = 1;
}

#endif // MIXPREC_KERNEL_ATTRS
