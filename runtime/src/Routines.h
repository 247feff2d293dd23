//===- Routines.h - backend routines for ops that do not fuse --*- C++ -*-===//
//
// A routine step names a routine (op_type), its operands and its options:
// one table of the schema's RoutineOptions union per routine family. The
// routines, their inputs and which options each takes are listed at table
// Routine in runtime/schema/module.fbs.in, the contract between the module
// writer (the typed #mpk options of mpk.call, serialized field for field)
// and the backends. An absent optional input is -1 in `inputs`, or simply
// left off when no later input follows. Shapes are the tensors' own shapes;
// every routine has exactly one output.
//
// What the loader checks beyond the schema: the options table is the one
// the routine takes; list options (perm, starts, steps) have one entry per
// input dim, axes are in range (negative ones count from the end) and
// reduction axes distinct; windows, strides and dilations are in [1, 2^31],
// pads in [0, 2^31], groups divide the channels; count_include_pad is set
// for avg_pool2d and avg_pool only, storage_order (0 or 1) for
// max_pool_indices only, output_padding (below the stride or the dilation)
// for conv_transpose only; an fp8_scale format is F8E4M3FN or F8E5M2, its margin
// in [-1024, 1024]; and every shape relation a routine relies on to stay in
// bounds (a slice reads inside its input, a convolution's output has the
// size its window gives).
//
// The N-D window routines (conv, conv_transpose, max_pool, avg_pool,
// max_pool_indices) take 1 to 3 spatial dims and one list entry per dim;
// max_pool_indices writes i64.
//
// Numerics: float routines decode their inputs to FP32 (exact), run the
// FP32 reference kernel (runtime/kernels/Kernels.h) and round the result
// once to the output dtype (FP8 saturating), as the reference interpreter
// does; conv2d, conv, conv_transpose and matmul with tf32 round both GEMM operands to TF32 first.
// Data movement (transpose, slice, concat, gather, gather_elements,
// gather_nd) copies elements of any dtype and needs the output dtype to
// equal the input's; the gathers check every index at run time and fail,
// naming the op and writing nothing, at one out of range. arg_max, arg_min,
// topk, cumsum and scatter_nd take float (decoded to FP32, exact), i32 or
// i64 inputs (runtime/kernels/Indexing.h); their indices are i64, topk's
// values, cumsum's and scatter_nd's outputs keep the input dtype (rounded
// once); scatter_nd checks its indices as the gathers do. int_elementwise
// computes one integer op exactly in int64 (runtime/kernels/IntElementwise.h)
// on i32, i64 or bool operands (pow's exponent may be a float, decoded to
// FP32) broadcast to its i32, i64 or bool output: i32 keeps the low 32
// bits, bool is != 0; comparisons write bool. fp8_scale
// computes (fp8_max / amax) / 2^margin in double and gives 1 for a zero or
// non-finite amax. attention (runtime/kernels/Attention.h) takes q, k, v of
// one float dtype and an optional float bias broadcasting to the scores; a
// call writes the output (v's dtype) or the FP32 log-sum-exp, the
// probabilities rounded to v's dtype before P.V as the CUDA kernel's tensor
// cores take them; attention_grad (q, k, v, out, lse, dout, bias) writes one
// of dq, dk, dv, recomputing the probabilities from lse. all_reduce (f32,
// f16 or bf16, output of the input's dtype and shape) reduces its input
// across the ranks of a data-parallel job through the session's collective
// (runtime.h); without one it copies it (a job of one rank). rank_slice
// ([world x S] -> [S]) copies this rank's slice and all_gather ([S] ->
// [world x S]) every rank's input in rank order, through the collective;
// its world size must be the routine's world (without one: 1).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_ROUTINES_H
#define MIXPREC_RUNTIME_ROUTINES_H

#include "runtime/kernels/Kernels.h"
#include "runtime/src/Module.h"

#include <array>
#include <cstdint>
#include <vector>

namespace mixprec::runtime {

enum class RoutineKind {
  Conv2d,
  MaxPool2d,
  AvgPool2d,
  Transpose,
  Slice,
  Concat,
  Gather,
  Softmax,
  LogSoftmax,
  LayerNorm,
  RmsNorm,
  BatchNorm,
  ReduceSum,
  ReduceMean,
  ReduceMax,
  Fp8Scale,
  Matmul,
  GatherElements,
  GatherNd,
  ArgMax,
  ArgMin,
  TopK,
  CumSum,
  ReduceProd,
  ScatterNd,
  Conv,
  ConvTranspose,
  MaxPool,
  AvgPool,
  MaxPoolIndices,
  IntElementwise,
  Attention,
  AttentionGrad,
  BlockScale,
  BlockQuantize,
  BlockScaledGemm,
  AllReduce,
  RankSlice,
  AllGather,
};

/// An routine step after verification: options decoded and normalized.
struct RoutineOp {
  RoutineKind kind = RoutineKind::Transpose;
  std::string name;             ///< for messages: "routine #3 'conv1' (conv2d)"
  std::vector<int32_t> inputs;  ///< tensor indices, -1 for an absent optional input
  int32_t output = -1;

  // Pooling / convolution.
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t groups = 1;
  bool tf32 = false, ceilMode = false, countIncludePad = false;
  // The N-D window routines (conv ... max_pool_indices): their window
  // (kernel for pooling only), conv_transpose's output padding,
  // max_pool_indices' column-major order (storage_order 1).
  cpu::Window window;
  std::vector<int64_t> outputPadding;
  bool columnMajor = false;
  // Axis-based ops (normalized to [0, rank)); reductions: sorted, unique axes.
  int64_t axis = 0;
  std::vector<int64_t> axes;
  bool keepDims = false;
  // transpose: perm; slice: starts and steps.
  std::vector<int64_t> perm, starts, steps;
  float epsilon = 0.0f;
  int64_t margin = 0;
  schema::DType fp8Format = schema::DType::F8E4M3FN;
  // Index routines: gather_nd's batch dims; arg_max/arg_min's choice among
  // equal extremes; topk's k, order and output; cumsum's direction.
  int64_t batchDims = 0, k = 0;
  bool selectLast = false, largest = true, writesIndices = false;
  bool exclusive = false, reverse = false;
  int64_t scatterReduction = 0; ///< scatter_nd: cpu::ScatterReduction's number
  int64_t intOp = 0;            ///< int_elementwise: cpu::IntOp's number
  // attention: its scale, causal mask, and which result the call writes.
  float attentionScale = 1.0f;
  bool causal = false, writesLse = false;
  int64_t attentionGrad = 0; ///< attention_grad: 0 dq, 1 dk, 2 dv
  // block_scale, block_quantize: the block over the last two dims and
  // block_scale's recipe (numerics::BlockRecipe's number; margin and
  // fp8Format above).
  int64_t blockRows = 1, blockCols = 1, blockRecipe = 0;
  // block_scaled_gemm: a's blocks are blockRows x blockCols, b's
  // bBlockRows x blockCols; a [m, k] (leading dims as rows), b [n, k]; the
  // epilogue after the bias (0 none, 1 relu, 2 tanh-GELU).
  int64_t bBlockRows = 1, gemmM = 0, gemmN = 0, gemmK = 0, epilogue = 0;
  // all_reduce: 0 sum, 1 mean, 2 max (AllReduceOptions).
  int64_t reduction = 0;
  // rank_slice, all_gather: the ranks the step was compiled for.
  int64_t world = 1;
};

/// Decodes and verifies routine `index` against the module's tensors: op type
/// known, operand and attribute counts, dtypes, and every shape relation the
/// routine relies on to stay in bounds. Error messages name the op.
Status verifyRoutine(const schema::Routine &routine, size_t index,
                    const std::vector<TensorDesc> &tensors, RoutineOp &out);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_ROUTINES_H
