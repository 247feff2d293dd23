#!/usr/bin/env python3
"""The CPU backend as a fast path (issue 27): module time on oneDNN against
the OpenBLAS path and onnxruntime, side by side in one run, 1 and 2 threads.

Usage:
    bench/cpu_fast_path.py --mixprec build/bin/mixprec --model DIR [--model DIR ...]
        [--precisions fp32 bf16 fp8 fp8-static] [--threads 1 2] [--repeat N] [--json OUT]

Each DIR holds model.onnx and optionally inputs/NAME.npy (the layout of
tests/e2e/gen_models.py, bench/gen_bench_models.py, bench/make_resnet18.py,
bench/make_bert.py; bench/make_gpt2.py's folder with model.onnx linked to
gpt2.onnx and its two .npy files moved into inputs/). Per model and precision the script compiles
the module once (`mixprec compile --precision P`), then per thread count T
(`--threads T`, and OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = T) times
`mixprec run M.mpk --backend cpu --repeat N --time` with DIR/inputs/*.npy
as its inputs where the folder has them (the median of N runs after the
load, N at least what fills --min-ms at onnxruntime's one-thread time,
probed once per model: ten runs of a 0.1 ms model are mostly its
warm-up; with --rounds R the lowest of R such medians, onnxruntime's too,
the rounds interleaved: every configuration once per round)
with the GEMM steps on oneDNN (the default) and on the OpenBLAS path
(MIXPREC_CPU_GEMM=openblas), and onnxruntime on the FP32 model
(bench/ort_time.py: graph optimizations on, intra_op_num_threads = T).
Prints a Markdown table: the times, mixprec/onnxruntime, and each
precision's time against the model's own FP32 time on oneDNN. fp8-static
is FP8 with calibrated scales (--fp8-scaling static, calibrated on the
folder's inputs); fp8 is the default, scales from each run's amax.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def model_inputs(folder):
    """--input NAME=FILE for each DIR/inputs/NAME.npy (none: random inputs)."""
    inputs = os.path.join(folder, "inputs")
    if not os.path.isdir(inputs):
        return []
    return [f"--input={f[:-4]}={os.path.join(inputs, f)}" for f in sorted(os.listdir(inputs))
            if f.endswith(".npy")]


def run_mixprec(mixprec, module, threads, gemm, repeat, inputs=(), out=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env.pop("MIXPREC_NUM_THREADS", None)
    if gemm == "openblas":
        env["MIXPREC_CPU_GEMM"] = "openblas"
    else:
        env.pop("MIXPREC_CPU_GEMM", None)
    p = subprocess.run([mixprec, "run", module, "--backend", "cpu", "--repeat", str(repeat),
                        "--threads", str(threads), "--time", "--output-dir", out or
                        tempfile.gettempdir(), *inputs],
                       capture_output=True, text=True, env=env, timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(f"mixprec run {module}: exit {p.returncode}: {p.stderr[-2000:]}")
    line = [x for x in p.stderr.splitlines() if x.startswith("{")][-1]
    return json.loads(line)["run_ms_median"]


def run_ort(model, threads, repeat):
    inputs = os.path.join(os.path.dirname(model), "inputs")
    cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model, "--repeat", str(repeat)]
    if os.path.isdir(inputs):
        cmd += ["--inputs-dir", inputs]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(f"ort_time.py {model}: {p.stderr[-2000:]}")
    r = json.loads(p.stdout)
    # ort_time.py times 1 thread and its default (one per core: 2 here).
    return r["single_thread_median_ms"] if threads == 1 else r["default_threads_median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--model", action="append", required=True, help="a folder with model.onnx")
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp8"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--min-ms", type=float, default=500.0,
                    help="runs per timing: at least --repeat, and enough to fill this many "
                         "milliseconds at onnxruntime's one-thread time (probed per model)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every configuration R times, round after round (separate "
                         "processes), and keep the lowest median: a 2-core VM's neighbours "
                         "move single medians by 2x")
    ap.add_argument("--paths", nargs="+", default=["dnnl", "openblas"],
                    help="GEMM paths to time (the OpenBLAS one is slow on large models)")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        # Every module compiled first, then the rounds, each timing every
        # configuration once (onnxruntime's too): a burst of load from the
        # VM's neighbours then hits one round of everything, not all the
        # rounds of one configuration; each figure is its lowest median.
        plans = []  # (name, folder, model, [(precision, module)])
        for folder in args.model:
            name = os.path.basename(os.path.normpath(folder))
            model = os.path.join(folder, "model.onnx")
            modules = []
            for precision in args.precisions:
                module = os.path.join(work, f"{name}_{precision}.mpk")
                options = ["--precision", precision]
                if precision == "fp8-static":
                    # Calibrated FP8 scales (no amax kernels at run time),
                    # calibrated on the inputs the model runs on.
                    calibrate = [x.replace("--input=", "--calibrate=")
                                 for x in model_inputs(folder)]
                    if not calibrate:
                        print(f"skip {name} fp8-static: no inputs/ to calibrate on",
                              file=sys.stderr)
                        continue
                    options = ["--precision", "fp8", "--fp8-scaling", "static", *calibrate]
                p = subprocess.run([args.mixprec, "compile", model, *options, "-o", module],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"skip {name} {precision}: {p.stderr.strip()[-300:]}", file=sys.stderr)
                    continue
                modules.append((precision, module))
            plans.append((name, folder, model, modules))
        outputs = os.path.join(work, "outputs")
        os.makedirs(outputs, exist_ok=True)
        best = {}
        # Runs per timing, per model (both sides the same).
        repeats = {}
        for name, folder, model, modules in plans:
            probe = run_ort(model, 1, 3)
            repeats[name] = max(args.repeat, math.ceil(args.min_ms / max(probe, 1e-3)))

        def keep(key, value):
            best[key] = min(best.get(key, value), value)

        for _ in range(args.rounds):
            for name, folder, model, modules in plans:
                inputs = model_inputs(folder)
                for t in args.threads:
                    keep((name, "ort", t), run_ort(model, t, repeats[name]))
                for precision, module in modules:
                    for t in args.threads:
                        for path in args.paths:
                            keep((name, precision, t, path),
                                 run_mixprec(args.mixprec, module, t, path, repeats[name],
                                             inputs, outputs))
        for name, folder, model, modules in plans:
            fp32 = {}
            for precision, module in modules:
                for t in args.threads:
                    dnnl = best[(name, precision, t, "dnnl")]
                    blas = best.get((name, precision, t, "openblas"))
                    ort = best[(name, "ort", t)]
                    if precision == "fp32":
                        fp32[t] = dnnl
                    rows.append({"model": name, "precision": precision, "threads": t,
                                 "onednn_ms": dnnl, "openblas_ms": blas,
                                 "onnxruntime_fp32_ms": ort,
                                 "vs_onnxruntime": dnnl / ort,
                                 "vs_own_fp32": dnnl / fp32[t] if t in fp32 else None})
    print("| model | precision | threads | oneDNN path ms | OpenBLAS path ms | onnxruntime FP32 ms "
          "| oneDNN / onnxruntime | / own FP32 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        own = f"{r['vs_own_fp32']:.2f}x" if r["vs_own_fp32"] is not None else "-"
        blas = f"{r['openblas_ms']:.3f}" if r["openblas_ms"] is not None else "-"
        print(f"| {r['model']} | {r['precision']} | {r['threads']} | {r['onednn_ms']:.3f} | "
              f"{blas} | {r['onnxruntime_fp32_ms']:.3f} | "
              f"{r['vs_onnxruntime']:.2f}x | {own} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
