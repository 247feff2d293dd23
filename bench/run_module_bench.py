#!/usr/bin/env python3
"""Compiled-module benchmark: what fusion and the memory plan buy, and the
runtime's CPU backend time next to the interpreter and onnxruntime.

Usage:
    bench/run_module_bench.py --mixprec build/bin/mixprec [--models DIR]
        [--bench-models DIR] [--precisions fp32 bf16 fp16 fp8] [--repeat N]
        [--coretype SkylakeX] [--json OUT]

Per model (the e2e models from tests/e2e/gen_models.py and the benchmark
models gpt2_block and mlp_large from bench/gen_bench_models.py) and
precision it records: compile time (`mixprec compile -o m.mpk`, whole
process); graph ops before fusion (imported mp ops, constants left out)
and steps after (kernels + GEMMs + routines); the memory plan's peak
(arena) against the sum of all buffers and against the FP32 plan's peak;
bytes the steps move per run against the minimum (each graph input read
once, each output written once); and the median run time of the module on
the CPU backend, of the interpreter on the annotated graph, and of
onnxruntime (the FP32 model, one thread) — all single-threaded
(OPENBLAS_NUM_THREADS=1). Prints a Markdown table; --json writes the rows.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--models", default=None, help="gen_models.py output (generated if absent)")
    ap.add_argument("--bench-models", default=None, help="gen_bench_models.py output (generated if absent)")
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16", "fp8"])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--coretype", default=None, help="OPENBLAS_CORETYPE for mixprec runs")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mixprec-module-bench-")
    models = args.models or os.path.join(tmp, "e2e")
    bench = args.bench_models or os.path.join(tmp, "bench")
    if not args.models:
        run([sys.executable, os.path.join(HERE, "..", "tests", "e2e", "gen_models.py"), models])
    if not args.bench_models:
        run([sys.executable, os.path.join(HERE, "gen_bench_models.py"), bench])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if args.coretype:
        env["OPENBLAS_CORETYPE"] = args.coretype

    rows = []
    for root in (models, bench):
        manifest = json.load(open(os.path.join(root, "manifest.json")))
        for entry in manifest["models"]:
            name = entry["name"]
            model = os.path.join(root, name, "model.onnx")
            inputs = []
            for i in entry["inputs"]:
                inputs += ["--input", f"{i['name']}={os.path.join(root, i['file'])}"]
            imported = run([args.mixprec, "import", model]).stdout
            ops = len(re.findall(r"= mp\.(?!constant)", imported))
            ort = json.loads(run([sys.executable, os.path.join(HERE, "ort_time.py"), model,
                                  "--inputs-dir", os.path.join(root, name, "inputs"),
                                  "--repeat", str(args.repeat)]).stdout)
            fp32_arena = None
            for p in args.precisions:
                mpk = os.path.join(tmp, f"{name}.{p}.mpk")
                mlir = os.path.join(tmp, f"{name}.{p}.mlir")
                start = time.perf_counter()
                try:
                    c = run([args.mixprec, "compile", model, "--precision", p, "-o", mpk])
                except RuntimeError as e:
                    print(f"skip {name}@{p}: {e}", file=sys.stderr)
                    continue
                compile_ms = (time.perf_counter() - start) * 1e3
                s = json.loads(c.stderr.strip().splitlines()[-1])
                if p == "fp32":
                    fp32_arena = s["arena_bytes"]
                run([args.mixprec, "compile", model, "--precision", p, "-o", mlir])
                out = os.path.join(tmp, "out")
                rm = run([args.mixprec, "run", mpk, "--backend", "cpu", "--time", "--repeat",
                          str(args.repeat), "--output-dir", out] + inputs, env)
                ri = run([args.mixprec, "run", mlir, "--time", "--repeat", str(args.repeat),
                          "--output-dir", out] + inputs, env)
                module_ms = json.loads(rm.stderr.strip().splitlines()[-1])["run_ms_median"]
                interp_ms = json.loads(ri.stderr.strip().splitlines()[-1])["run_ms_median"]
                rows.append(dict(model=name, precision=p, compile_ms=compile_ms, ops=ops,
                                 steps=s["kernels"] + s["gemms"] + s["routines"],
                                 kernels=s["kernels"], gemms=s["gemms"], routines=s["routines"],
                                 arena=s["arena_bytes"], buffers=s["buffer_bytes"],
                                 fp32_arena=fp32_arena, moved=s["bytes_moved"],
                                 minimum=s["minimum_bytes"], module_ms=module_ms,
                                 interp_ms=interp_ms, ort_ms=ort["single_thread_median_ms"]))
    print("| model | prec. | compile | ops → steps (kernels/GEMMs/routines) | plan peak / sum of buffers / FP32 peak | bytes moved / minimum | module CPU | interpreter | ORT 1 thread |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    kib = lambda b: f"{b / 1024:.0f} KiB" if b < 1 << 20 else f"{b / (1 << 20):.1f} MiB"
    for r in rows:
        print(f"| {r['model']} | {r['precision']} | {r['compile_ms']:.0f} ms | {r['ops']} → {r['steps']} "
              f"({r['kernels']}/{r['gemms']}/{r['routines']}) | {kib(r['arena'])} / {kib(r['buffers'])} / "
              f"{kib(r['fp32_arena']) if r['fp32_arena'] else '-'} | {kib(r['moved'])} / {kib(r['minimum'])} | "
              f"{r['module_ms']:.2f} ms | {r['interp_ms']:.2f} ms | {r['ort_ms']:.2f} ms |")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
