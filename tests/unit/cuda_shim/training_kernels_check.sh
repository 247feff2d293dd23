#!/usr/bin/env bash
# training_kernels_check.sh MIXPREC MIXPREC_OPT NVRTC_CHECK SHIM_MODELS SHIM_ROUTINES WORK MLP GPT
#                           GEMM_PLAN_CHECK
# The kernels of training steps, checked without a GPU as the example
# models' are (issue 9's checks, for issue 11's steps): the step of MLP
# (examples/train_digits/mlp.onnx, batch 32, SGD with momentum) and of GPT
# (the e2e gpt_block, AdamW), built by --mp-build-training-step and lowered
# by the precision and kernel pipelines to mpk IR, then
#  - every kernel and routine kernel through NVRTC for sm_80 and sm_90 with
#    no spills and no local memory (the MLP's step at bf16 and fp8, the GPT
#    block's at fp8, the most kernels; the other precisions' kernels are
#    of the same forms, and NVRTC is most of this test's time);
#  - every routine kernel on the CUDA shim against the CPU backend (both
#    steps at every precision), and every routine a kernel: none left for
#    the CUDA backend to run on the host (issue 25: the gathers and
#    scatter_nd of the losses and embeddings check their indices into the
#    device's error record);
#  - both steps compiled to modules with CUDA code (the MLP's at fp8 for
#    sm_80, the GPT block's at bf16 and at fp8 with block scaling for
#    sm_90), loaded by the runtime's loader: no routine step on the host
#    (gemm_plan_check --no-host-steps);
#  - every kernel on the CUDA shim against the CPU backend (the MLP's step
#    at every precision; the GPT block's softmax backward sums products of
#    five random inputs, past the checker's additive row-sum bound).
set -euo pipefail
mixprec=$1 opt=$2 nvrtc=$3 shim_models=$4 shim_routines=$5 work=$6 mlp=$7 gpt=$8 plans=$9
rm -rf "$work" && mkdir -p "$work"
"$mixprec" import "$mlp" --shape x=32,64 -o "$work/mlp.mlir"
"$mixprec" import "$gpt" -o "$work/gpt.mlir"
for p in fp32 bf16 fp16 fp8; do
  "$opt" --mp-build-training-step="loss=ce optimizer=sgd momentum=0.9" \
    --mp-precision-pipeline="precision=$p" --mp-kernel-pipeline "$work/mlp.mlir" \
    -o "$work/mlp_step_$p.mlir"
  "$opt" --mp-build-training-step="loss=ce optimizer=adamw" \
    --mp-precision-pipeline="precision=$p" --mp-kernel-pipeline "$work/gpt.mlir" \
    -o "$work/gpt_step_$p.mlir"
done
# FP8 block scaling (issue 25 part 2): its routines (block_scale,
# block_quantize, block_scaled_gemm) all have kernels too.
"$opt" --mp-build-training-step="loss=ce optimizer=adamw" \
  --mp-precision-pipeline="precision=fp8 fp8-scaling=block" --mp-kernel-pipeline "$work/gpt.mlir" \
  -o "$work/gpt_step_fp8block.mlir"
"$nvrtc" "$work/mlp_step_bf16.mlir" "$work/mlp_step_fp8.mlir" "$work/gpt_step_fp8.mlir"
"$shim_routines" --all-on-device "$work"/mlp_step_*.mlir "$work"/gpt_step_*.mlir
"$opt" --mp-build-training-step="loss=ce optimizer=sgd momentum=0.9" "$work/mlp.mlir" \
  -o "$work/mlp_train.mlir"
"$opt" --mp-build-training-step="loss=ce optimizer=adamw" "$work/gpt.mlir" -o "$work/gpt_train.mlir"
MIXPREC_CACHE_DIR=$work/cache "$mixprec" compile "$work/mlp_train.mlir" --precision fp8 \
  --arch sm_80 -o "$work/mlp_step_fp8.mpk" > /dev/null
MIXPREC_CACHE_DIR=$work/cache "$mixprec" compile "$work/gpt_train.mlir" --precision bf16 \
  --arch sm_90 -o "$work/gpt_step_bf16.mpk" > /dev/null
MIXPREC_CACHE_DIR=$work/cache "$mixprec" compile "$work/gpt_train.mlir" --precision fp8 \
  --fp8-scaling block --arch sm_90 -o "$work/gpt_step_fp8block.mpk" > /dev/null
"$plans" --no-host-steps "$work/mlp_step_fp8.mpk" "$work/gpt_step_bf16.mpk" \
  "$work/gpt_step_fp8block.mpk"
"$shim_models" "$work"/mlp_step_*.mlir
