#!/usr/bin/env bash
# cuda_kernels_check.sh MIXPREC CHECKER WORKDIR MODELS_DIR MODEL...: compiles
# each MODEL and every MODELS_DIR/*/model.onnx (the e2e models) at fp32,
# bf16, fp16 and fp8 to mpk IR and hands the files to CHECKER: every
# kernel's CUDA C++ through NVRTC (cuda_kernels_check), or run on the CUDA
# shim against the CPU backend (cuda_shim_models_check for the kernels,
# cuda_shim_routines_check for the routine kernels). Fails if a model
# does not compile.
# With the NVRTC checker, each is also compiled to a module with CUDA code
# (mixprec compile --arch sm_90: the whole program through NVRTC, the
# launches through the runtime's loader).
set -euo pipefail
mixprec=$1 checker=$2 work=$3 models=$4
shift 4
rm -rf "$work" && mkdir -p "$work"
shopt -s nullglob
generated=("$models"/*/model.onnx)
if [[ ${#generated[@]} -eq 0 ]]; then
  echo "no models in $models (the e2e_generate_models test writes them)" >&2
  exit 1
fi
files=()
for model in "$@" "${generated[@]}"; do
  name=$(basename "$(dirname "$model")")_$(basename "$model" .onnx)
  for p in fp32 bf16 fp16 fp8; do
    out=$work/${name}_$p.mlir
    "$mixprec" compile "$model" --precision "$p" --emit mpk-mlir -o "$out"
    if [[ $(basename "$checker") == cuda_kernels_check ]] && ! MIXPREC_CACHE_DIR=$work/cache "$mixprec" compile "$model" --precision "$p" \
        --arch sm_90 -o "$work/${name}_$p.mpk" 2> "$work/${name}_$p.err"; then
      cat "$work/${name}_$p.err" >&2
      exit 1
    fi
    files+=("$out")
  done
done
exec "$checker" "${files[@]}"
