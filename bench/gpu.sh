#!/usr/bin/env bash
# The GPU benchmark of issue 9 (bench/README.md, "GPU benchmark (issue 9)").
#
#   bash bench/gpu.sh --prepare [--mixprec BIN]   here (LLVM): compile the modules
#                                                  for sm_90 into build/gpu-bench
#   bash bench/gpu.sh                             on the GPU machine: build the
#                                                  runtime-only configuration and
#                                                  the runner, time everything,
#                                                  print the table last
#   bash bench/gpu.sh --dry-run [--mixprec BIN] [--shapes dry|tiny]
#                                                  here, no GPU: the whole flow on
#                                                  the CPU at small shapes (dry: the
#                                                  real weights, few tokens; tiny:
#                                                  a quick look, seconds)
#
# After the inference table, the fused attention table of issue 25 part 5
# (bench/attention_bench.py: mp.attention modules --prepare compiled into
# build/gpu-bench/attention against SDPA's flash backend, GPU_ATTN_BENCH_S
# seconds of the budget), then the FP8 GEMM table of issue 25 part 5
# (bench/fp8_gemm_bench.py: one linear layer at 2048 and 4096 compiled with
# per-tensor, block and MXFP8 FP8 scaling and BF16 into
# build/gpu-bench/fp8-gemm, GPU_FP8_BENCH_S seconds). The GPU run ends with
# the training table of issue 11 (bench/train_bench.py on the step modules
# --prepare compiled into build/gpu-bench/train, run by mixprec-train-run
# from the runtime-only build).
# On the GPU machine it reads build/gpu-bench (modules, recipes, manifest) and
# build/runtime-deps (a full build's header-only dependencies): carry both.
# Results go to stdout and, when OUT is set, to $OUT/gpu_bench.json,
# attention_bench.json, fp8_gemm_bench.json and gpu_bench.log. Needs python3
# with numpy and ml_dtypes everywhere, onnx for --prepare, torch for the
# PyTorch rows and the SDPA columns (without it they are left out with a
# note).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=gpu
mixprec=build/bin/mixprec
dry_shapes=dry
while (($#)); do
  case $1 in
    --prepare) mode=prepare ;;
    --dry-run) mode=dry ;;
    --mixprec) mixprec=$2; shift ;;
    --shapes) dry_shapes=$2; shift ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "gpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
export PYTHONUNBUFFERED=1
# The table must be out before the device command's limit (10 minutes): the
# run shortens or skips its last steps (torch.compile first) to end by then.
start=$(date +%s)
deadline=$((start + ${GPU_BENCH_BUDGET_S:-540}))

# Builds libmixprec_runtime in the runtime-only configuration (no LLVM) into
# $1 and the timing runner against it; prints the runner's path last.
build_runtime() {
  local dir=$1
  if [[ ! -f build/runtime-deps/module.fbs ]]; then
    echo "gpu.sh: error: build/runtime-deps is missing: carry it from a full build" >&2
    return 1
  fi
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  echo "== runtime-only build in $dir" >&2
  mkdir -p "$dir"
  cmake -S . -B "$dir" "${gen[@]}" -DMIXPREC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
        >"$dir/mixprec-configure.log" 2>&1 ||
    { tail -20 "$dir/mixprec-configure.log" >&2; echo "gpu.sh: error: configure failed" >&2; return 1; }
  timeout 300 cmake --build "$dir" --target mixprec_runtime mixprec-train-run ${MIXPREC_GPU_TEST_TARGETS:-} \
        -j"$(nproc)" \
        >"$dir/mixprec-build.log" 2>&1 ||
    { tail -30 "$dir/mixprec-build.log" >&2; echo "gpu.sh: error: runtime build failed" >&2; return 1; }
  local lib
  lib=$(dirname "$(find "$dir" -name 'libmixprec_runtime.so' | head -1)")
  cc -O2 -std=gnu11 -Wall bench/gpu_runner.c -Iruntime/include -L"$lib" -lmixprec_runtime \
     -Wl,-rpath,"$PWD/$lib" -o "$dir/gpu_runner" >&2 ||
    { echo "gpu.sh: error: the runner does not compile" >&2; return 1; }
  echo "$dir/gpu_runner"
}

# Points MIXPREC_CUBLASLT_LIBRARY at PyTorch's cuBLASLt when the loader finds none.
find_cublaslt() {
  ldconfig -p 2>/dev/null | grep -q 'libcublasLt.so.13 ' && return
  [[ -n ${MIXPREC_CUBLASLT_LIBRARY:-} ]] && return
  local lib
  lib=$(python3 - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    paths = list(nvidia.__path__)
except Exception:
    paths = []
paths += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
for p in paths:
    hits = sorted(glob.glob(os.path.join(p, "**", "libcublasLt.so.13*"), recursive=True))
    if hits:
        print(hits[0])
        break
EOF
)
  if [[ -n $lib ]]; then
    export MIXPREC_CUBLASLT_LIBRARY=$lib
    echo "== cuBLASLt: MIXPREC_CUBLASLT_LIBRARY=$lib"
  fi
}

case $mode in
  prepare)
    python3 bench/gpu_bench.py prepare --mixprec "$mixprec" --out build/gpu-bench --shapes gpu \
      --arch sm_90 || exit 1
    # The fused attention modules (issue 25 part 5), one mp.attention each.
    python3 bench/attention_bench.py prepare --mixprec "$mixprec" --out build/gpu-bench/attention \
      --shapes gpu --arch sm_90 || exit 1
    # One linear layer at FP8 per-tensor, block, MXFP8 and BF16 (issue 25 part 5).
    python3 bench/fp8_gemm_bench.py prepare --mixprec "$mixprec" --out build/gpu-bench/fp8-gemm \
      --shapes gpu --arch sm_90 || exit 1
    # The training steps (issue 11), compiled for sm_90 with their data.
    python3 bench/train_bench.py --prepare build/gpu-bench/train --arch sm_90 \
      --mixprec "$mixprec" || exit 1
    # The gpu ctests' modules (e2e_cuda_vs_cpu, split: compiled here, run
    # there by run_outputs from the runtime-only build).
    models=build/tests/e2e/models
    [[ -f $models/manifest.json ]] ||
      { echo "gpu.sh: error: no $models: run ctest -R e2e_generate_models first" >&2; exit 1; }
    rm -rf build/gpu-bench/cuda-tests
    python3 tests/e2e/run_cuda.py --mixprec "$mixprec" --models "$models" --arch sm_90 \
      --prepare build/gpu-bench/cuda-tests || exit 1
    [[ -f build/runtime-deps/module.fbs ]] ||
      { echo "gpu.sh: error: build/runtime-deps is missing: run bash scripts/build.sh" >&2; exit 1; }
    tree=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
    carry=$(du -sb build/gpu-bench build/runtime-deps | awk '{s += $1} END {print s}')
    echo "== to carry: build/gpu-bench and build/runtime-deps, $((carry / 1048576)) MiB," \
         "plus the tracked tree, $((tree / 1048576)) MiB (limit 64 MiB)"
    echo "== then, on the GPU machine: bash bench/gpu.sh (carry: build/gpu-bench, build/runtime-deps)"
    ;;
  gpu)
    [[ -f build/gpu-bench/manifest.json ]] ||
      { echo "gpu.sh: error: no build/gpu-bench: run bash bench/gpu.sh --prepare here and carry it" >&2
        exit 1; }
    log=/dev/null; [[ -n ${OUT:-} ]] && log=$OUT/gpu_bench.log
    {
      echo "== $(date -u +%FT%TZ) $(uname -m), $(nproc) CPUs"
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
                 --format=csv 2>&1 || echo "gpu.sh: nvidia-smi failed"
      python3 -c 'import torch; print("== torch", torch.__version__, "CUDA", torch.version.cuda,
                                       "GPU", torch.cuda.is_available())' 2>&1
      export MIXPREC_GPU_TEST_TARGETS="gpu_driver_probe gpu_gemm_runner run_outputs"
      runner=$(build_runtime build-rt) || exit 1
      find_cublaslt
      # The gpu ctests first (the runtime-only build has the two that need
      # no compiler; e2e_cuda_vs_cpu runs on the modules --prepare compiled),
      # in at most GPU_TESTS_S (120) seconds.
      echo "== gpu tests"
      tests_end=$(($(date +%s) + ${GPU_TESTS_S:-120}))
      for t in gpu_driver_probe gpu_gemm_runner; do
        bin=$(find build-rt -name "$t" -type f -perm -u+x | head -1)
        timeout 60 "$bin"; echo "== $t: exit $?"
      done
      if [[ -f build/gpu-bench/cuda-tests/cases.json ]]; then
        left=$((tests_end - $(date +%s))); ((left < 20)) && left=20
        timeout "$left" python3 tests/e2e/run_cuda.py \
          --runner "$(find build-rt -name run_outputs -type f -perm -u+x | head -1)" \
          --probe "$(find build-rt -name gpu_driver_probe -type f -perm -u+x | head -1)" \
          --prepared build/gpu-bench/cuda-tests
        echo "== e2e_cuda_vs_cpu: exit $?"
      fi
      # The inference table first, then the attention table and the FP8
      # GEMM table, each with its slice (GPU_ATTN_BENCH_S, GPU_FP8_BENCH_S
      # seconds) before the training table's: the FP8 GEMM table ends
      # GPU_TRAIN_BENCH_S seconds before the deadline, the attention table
      # GPU_FP8_BENCH_S before that, and so on; the training table gets the
      # last GPU_TRAIN_BENCH_S seconds of the budget.
      train_s=${GPU_TRAIN_BENCH_S:-150}
      attn_s=${GPU_ATTN_BENCH_S:-100}
      fp8_s=${GPU_FP8_BENCH_S:-60}
      [[ -f build/gpu-bench/attention/manifest.json ]] || attn_s=0
      [[ -f build/gpu-bench/fp8-gemm/manifest.json ]] || fp8_s=0
      python3 bench/gpu_bench.py run --folder build/gpu-bench --runner "$runner" \
        --backend cuda --device cuda --deadline "$((deadline - train_s - fp8_s - attn_s))"
      if ((attn_s > 0)); then
        echo "== fused attention vs SDPA flash (issue 25)"
        python3 bench/attention_bench.py run --folder build/gpu-bench/attention \
          --runner "$runner" --backend cuda --device cuda \
          --deadline "$((deadline - train_s - fp8_s))" ${OUT:+--json "$OUT/attention_bench.json"}
      fi
      if ((fp8_s > 0)); then
        echo "== FP8 block-scaled GEMM vs per-tensor (issue 25)"
        python3 bench/fp8_gemm_bench.py run --folder build/gpu-bench/fp8-gemm \
          --runner "$runner" --backend cuda --deadline "$((deadline - train_s))" \
          ${OUT:+--json "$OUT/fp8_gemm_bench.json"}
      fi
      if [[ -f build/gpu-bench/train/manifest.json ]]; then
        echo "== training throughput (issue 11)"
        python3 bench/train_bench.py --from build/gpu-bench/train \
          --runner build-rt/bin/mixprec-train-run --device cuda --repeat 2 \
          --deadline "$deadline" ${OUT:+--json "$OUT/train_bench.json"}
      fi
    } 2>&1 | tee "$log"
    ;;
  dry)
    python3 bench/gpu_bench.py prepare --mixprec "$mixprec" --out build/gpu-bench-dry \
      --shapes "$dry_shapes" --arch auto || exit 1
    runner=$(build_runtime build-rt) || exit 1
    python3 -c 'import torch' 2>/dev/null ||
      echo "gpu.sh: note: no torch here: the PyTorch rows are left out (pip install torch)"
    rc=0
    python3 bench/gpu_bench.py run --folder build/gpu-bench-dry --runner "$runner" \
      --backend cpu --device cpu --warmup 1 --repeat 5 --max-seconds 5 --compile-timeout 300 \
      --check-fp32 || rc=$?
    # The attention table's flow (issue 25 part 5) on the CPU backend; SDPA
    # with the flash backend too (PyTorch's CPU flash kernel), compared.
    python3 bench/attention_bench.py prepare --mixprec "$mixprec" \
      --out build/gpu-bench-dry/attention --shapes "$dry_shapes" --arch auto || exit 1
    python3 bench/attention_bench.py run --folder build/gpu-bench-dry/attention --runner "$runner" \
      --backend cpu --device cpu --warmup 1 --repeat 5 --max-seconds 5 --check || rc=$?
    # The FP8 GEMM table's flow (issue 25 part 5) on the CPU backend: every
    # module must run and stay within 0.1 (max rel) of FP32.
    python3 bench/fp8_gemm_bench.py prepare --mixprec "$mixprec" \
      --out build/gpu-bench-dry/fp8-gemm --shapes "$dry_shapes" --arch auto || exit 1
    python3 bench/fp8_gemm_bench.py run --folder build/gpu-bench-dry/fp8-gemm --runner "$runner" \
      --backend cpu --warmup 1 --repeat 5 --max-seconds 5 --check || rc=$?
    # The training table's flow (--prepare here, --from with the runtime-only runner).
    python3 bench/train_bench.py --prepare build/gpu-bench-dry/train --mixprec "$mixprec" ||
      exit 1
    python3 bench/train_bench.py --from build/gpu-bench-dry/train \
      --runner build-rt/bin/mixprec-train-run --device cpu --repeat 1 --digits-steps 40 \
      --gpt-steps 20 || rc=$?
    exit "$rc"
    ;;
esac
