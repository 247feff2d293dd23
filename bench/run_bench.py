#!/usr/bin/env python3
"""Foundation benchmark: mixprec import time and CPU interpreter run time
next to onnxruntime's CPU time on the same inputs.

Usage:
    bench/run_bench.py --mixprec build/bin/mixprec [--workdir DIR]
                       [--repeat N] [--json OUT.json]

Models (bench/gen_bench_models.py): gpt2_block (GPT-2-small-sized decoder
block: hidden 768, 12 heads, seq 128, batch 1) and mlp_large (the e2e MLP
at 1024-4096-4096-1024, batch 64).

For each model it measures:
  * import_ms: `mixprec run --time` reports the time to read the ONNX file,
    build and verify the mp IR (median over the runs below);
  * import_cli_ms: wall time of `mixprec import model.onnx -o x.mlir`, the
    whole process (median of 5);
  * run_ms (1 thread and default threads): median interpreter time per run
    (`mixprec run --time --repeat N`, inputs from the model's inputs/),
    OPENBLAS_NUM_THREADS=1 for the single-thread figure;
  * ort_ms (1 thread and default threads): bench/ort_time.py, same inputs;
  * max_rel: mixprec's output against onnxruntime's reference.
--coretype sets OPENBLAS_CORETYPE for the mixprec runs (see bench/README.md).
Prints a Markdown table and writes the figures as JSON.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return proc


def mixprec_times(mixprec, model_dir, entry, repeat, threads, outdir, coretype=None):
    env = dict(os.environ)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    if threads:
        env["OPENBLAS_NUM_THREADS"] = str(threads)
    cmd = [mixprec, "run", os.path.join(model_dir, "model.onnx"), "--backend", "interpreter",
           "--time", "--repeat", str(repeat), "--output-dir", outdir]
    for inp in entry["inputs"]:
        cmd += ["--input", f"{inp['name']}={os.path.join(os.path.dirname(model_dir), inp['file'])}"]
    proc = run(cmd, env)
    timing = json.loads(proc.stderr.strip().splitlines()[-1])
    return timing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--workdir", default=None, help="where models go (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None, help="write figures here")
    ap.add_argument("--coretype", default=None,
                    help="set OPENBLAS_CORETYPE for mixprec (e.g. SkylakeX) where OpenBLAS "
                         "0.3.21 does not recognise the CPU and falls back to Prescott kernels")
    args = ap.parse_args()

    workdir = args.workdir or tempfile.mkdtemp(prefix="mixprec-bench-")
    run([sys.executable, os.path.join(HERE, "gen_bench_models.py"), workdir])
    with open(os.path.join(workdir, "manifest.json")) as f:
        manifest = json.load(f)

    results = []
    for entry in manifest["models"]:
        name = entry["name"]
        model_dir = os.path.join(workdir, name)
        model = os.path.join(model_dir, "model.onnx")
        outdir = os.path.join(workdir, name, "mixprec_out")

        cli = []
        for _ in range(5):
            start = time.perf_counter()
            run([args.mixprec, "import", model, "-o", os.path.join(workdir, f"{name}.mlir")])
            cli.append((time.perf_counter() - start) * 1e3)

        single = mixprec_times(args.mixprec, model_dir, entry, args.repeat, 1, outdir, args.coretype)
        multi = mixprec_times(args.mixprec, model_dir, entry, args.repeat, 0, outdir, args.coretype)

        max_rel = 0.0
        for out in entry["outputs"]:
            a = np.load(os.path.join(outdir, out["name"] + ".npy")).astype(np.float64)
            b = np.load(os.path.join(workdir, out["file"])).astype(np.float64)
            max_rel = max(max_rel, float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-38)))

        ort_cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model,
                   "--inputs-dir", os.path.join(model_dir, "inputs"), "--repeat", str(args.repeat)]
        ort = json.loads(run(ort_cmd).stdout)

        results.append({
            "model": name,
            "import_ms": single["import_ms"],
            "import_cli_ms": statistics.median(cli),
            "prepare_ms": single["prepare_ms"],
            "run_ms_1thread": single["run_ms_median"],
            "run_ms_default": multi["run_ms_median"],
            "ort_ms_1thread": ort["single_thread_median_ms"],
            "ort_ms_default": ort["default_threads_median_ms"],
            "max_rel_vs_ort": max_rel,
        })

    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "repeat": args.repeat, "onnxruntime": ort.get("onnxruntime"),
            "openblas_coretype": args.coretype or "auto-detected"}
    print(f"{meta['date']}, {meta['cpus']} CPUs, median of {args.repeat} runs, "
          f"OpenBLAS core: {meta['openblas_coretype']}\n")
    print("| model | import (in-process) | `mixprec import` (process) | interpreter 1 thread | "
          "onnxruntime 1 thread | interpreter default threads | onnxruntime default threads | "
          "max rel. error vs ORT |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['model']} | {r['import_ms']:.0f} ms | {r['import_cli_ms']:.0f} ms | "
              f"{r['run_ms_1thread']:.1f} ms | {r['ort_ms_1thread']:.1f} ms | "
              f"{r['run_ms_default']:.1f} ms | {r['ort_ms_default']:.1f} ms | {r['max_rel_vs_ort']:.1e} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
