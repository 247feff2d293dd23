//===- KernelEnums.td - enumerations of the mpk dialect -------------------===//
#ifndef MIXPREC_KERNEL_ENUMS
#define MIXPREC_KERNEL_ENUMS

include "mlir/IR/EnumAttr.td"

// What mpk.row_reduce computes over a kernel's row (the expression
// program's RowSum and RowMax).
def MPK_RowReduceKind : I32EnumAttr<"RowReduceKind", "the reduction of mpk.row_reduce", [
    I32EnumAttrCase<"sum", 0>,   // FP32 accumulation in row order; empty row: 0
    I32EnumAttrCase<"max", 1>,   // empty row: -inf
  ]> {
  let cppNamespace = "::mixprec::kernel";
}

def Kernel_Routine : I32EnumAttr<"Routine", "a backend routine of the runtime", [
    I32EnumAttrCase<"Conv2d", 0, "conv2d">,
    I32EnumAttrCase<"MaxPool2d", 1, "max_pool2d">,
    I32EnumAttrCase<"AvgPool2d", 2, "avg_pool2d">,
    I32EnumAttrCase<"Transpose", 3, "transpose">,
    I32EnumAttrCase<"Slice", 4, "slice">,
    I32EnumAttrCase<"Concat", 5, "concat">,
    I32EnumAttrCase<"Gather", 6, "gather">,
    I32EnumAttrCase<"Softmax", 7, "softmax">,
    I32EnumAttrCase<"LogSoftmax", 8, "log_softmax">,
    I32EnumAttrCase<"LayerNorm", 9, "layer_norm">,
    I32EnumAttrCase<"RmsNorm", 10, "rms_norm">,
    I32EnumAttrCase<"BatchNorm", 11, "batch_norm">,
    I32EnumAttrCase<"ReduceSum", 12, "reduce_sum">,
    I32EnumAttrCase<"ReduceMean", 13, "reduce_mean">,
    I32EnumAttrCase<"ReduceMax", 14, "reduce_max">,
    I32EnumAttrCase<"Fp8Scale", 15, "fp8_scale">,
    I32EnumAttrCase<"Matmul", 16, "matmul">,
    I32EnumAttrCase<"GatherElements", 17, "gather_elements">,
    I32EnumAttrCase<"GatherNd", 18, "gather_nd">,
    I32EnumAttrCase<"ArgMax", 19, "arg_max">,
    I32EnumAttrCase<"ArgMin", 20, "arg_min">,
    I32EnumAttrCase<"TopK", 21, "topk">,
    I32EnumAttrCase<"CumSum", 22, "cumsum">,
    I32EnumAttrCase<"ReduceProd", 23, "reduce_prod">,
    I32EnumAttrCase<"ScatterNd", 24, "scatter_nd">,
    // N-D windows (issue 10, h-nd): numbered from 40 to stay clear of the
    // routines other branches append.
    I32EnumAttrCase<"Conv", 40, "conv">,
    I32EnumAttrCase<"ConvTranspose", 41, "conv_transpose">,
    I32EnumAttrCase<"MaxPool", 42, "max_pool">,
    I32EnumAttrCase<"AvgPool", 43, "avg_pool">,
    I32EnumAttrCase<"MaxPoolIndices", 44, "max_pool_indices">,
    // Issue 10: integer element-wise ops, exact in int64 (60: clear of the
    // numbers other routines of the issue take).
    I32EnumAttrCase<"IntElementwise", 60, "int_elementwise">,
    // Issue 25: fused attention.
    I32EnumAttrCase<"Attention", 70, "attention">,
    I32EnumAttrCase<"AttentionGrad", 71, "attention_grad">,
    // Issue 25: FP8 block scaling and MXFP8.
    I32EnumAttrCase<"BlockScale", 80, "block_scale">,
    I32EnumAttrCase<"BlockQuantize", 81, "block_quantize">,
    I32EnumAttrCase<"BlockScaledGemm", 82, "block_scaled_gemm">,
    // Issue 26: data-parallel training.
    I32EnumAttrCase<"AllReduce", 90, "all_reduce">,
    I32EnumAttrCase<"RankSlice", 91, "rank_slice">,
    I32EnumAttrCase<"AllGather", 92, "all_gather">
  ]> {
  let cppNamespace = "::mixprec::kernel";
  let genSpecializedAttr = 0;
}

#endif // MIXPREC_KERNEL_ENUMS
