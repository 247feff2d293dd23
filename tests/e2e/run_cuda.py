#!/usr/bin/env python3
"""The CUDA backend against the CPU backend (ctest label `gpu`): every model
of a gen_models.py directory, compiled with `--arch sm_XX` at each
precision, runs on both backends with the same inputs; every output must
agree within run_module.py's BOUNDS[precision] (relative to the CPU output's
largest magnitude; non-finite values in the same places; integer outputs
equal), and the CUDA run replaying its captured CUDA graph must equal the
CUDA run launched step by step bit for bit.

Runs go through run_outputs (tests/unit/runtime/run_outputs.cpp), which the
runtime-only build has too, so the check splits in two where the GPU
machine has no compiler:

    # all in one (ctest e2e_cuda_vs_cpu):
    run_cuda.py --mixprec BIN --runner RUN_OUTPUTS --probe PROBE --models DIR
    # here: compile for sm_90 and write the inputs, to carry to the GPU:
    run_cuda.py --mixprec BIN --models DIR --arch sm_90 --prepare OUT
    # on the GPU machine (runtime-only build):
    run_cuda.py --runner RUN_OUTPUTS --probe PROBE --prepared OUT

[--precisions fp32 bf16 fp16 fp8] chooses precisions. Without a device (the
probe, gpu_driver_probe, exits 77) it prints the probe's reason and exits
77, which ctest reports as skipped. --arch defaults to the device's.

Prints one line per check, then "N passed, N failed"; exits non-zero on any
failure.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_module import BOUNDS  # noqa: E402  (the one table of bounds)

SKIP = 77
FLOAT_KINDS = "f"


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def device_arch(probe):
    """The device's "sm_XX" and the probe's summary; None without a device."""
    p = run([probe])
    text = (p.stdout + p.stderr).strip()
    if p.returncode == SKIP:
        return None, text
    if p.returncode != 0:
        raise SystemExit(f"FAIL  gpu_driver_probe failed ({p.returncode}): {text}")
    m = re.search(r"\((sm_\d+)\)", text)
    if not m:
        raise SystemExit(f"FAIL  no architecture in the probe's summary: {text}")
    return m.group(1), text


def prepare(args, arch, out, check):
    """Compiles every model at every precision for `arch` into `out`, with
    its inputs as raw files; returns the case list (also out/cases.json)."""
    manifest = json.load(open(os.path.join(args.models, "manifest.json")))
    os.makedirs(out, exist_ok=True)
    cases = []
    for entry in manifest["models"]:
        name = entry["name"]
        model = os.path.join(args.models, name, "model.onnx")
        inputs = {}
        for i in entry["inputs"]:
            a = np.load(os.path.join(args.models, i["file"]))
            # f32 for float inputs (bound as f32), else the raw dtype.
            a = a.astype(np.float32) if a.dtype.kind in FLOAT_KINDS else a
            path = os.path.join(out, f"{name}.{i['name']}.bin")
            a.tofile(path)
            inputs[i["name"]] = os.path.basename(path)
        for p in args.precisions:
            mpk = os.path.join(out, f"{name}.{p}.mpk")
            c = run([args.mixprec, "compile", model, "--precision", p, "--arch", arch, "-o", mpk])
            if c.returncode != 0:
                check(False, f"{name}@{p} compile --arch {arch}: {c.stderr.strip()}")
                continue
            cases.append({"model": name, "precision": p, "module": os.path.basename(mpk),
                          "inputs": inputs, "outputs": [o["name"] for o in entry["outputs"]]})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"arch": arch, "cases": cases}, f, indent=1)
    return cases


def load_output(directory, name):
    """An output run_outputs wrote: f32 values, or raw bytes."""
    f32 = os.path.join(directory, name + ".f32")
    if os.path.exists(f32):
        return np.fromfile(f32, dtype=np.float32)
    return np.fromfile(os.path.join(directory, name + ".raw"), dtype=np.uint8)


def compare(cpu, cuda, bound):
    """(ok, max_rel) of a CUDA output against the CPU's."""
    if cpu.shape != cuda.shape:
        return False, float("inf")
    if cpu.dtype != np.float32:
        return bool(np.array_equal(cpu, cuda)), 0.0
    a, b = cpu.astype(np.float64), cuda.astype(np.float64)
    finite = np.isfinite(a)
    if not np.array_equal(~finite, ~np.isfinite(b)):
        return False, float("inf")
    if not finite.any():
        return True, 0.0
    scale = max(float(np.max(np.abs(a[finite]))), 1e-30)
    rel = float(np.max(np.abs(a[finite] - b[finite]))) / scale
    return rel < bound, rel


def run_cases(runner, base, cases, tmp, check):
    for case in cases:
        label = f"{case['model']}@{case['precision']}"
        mpk = os.path.join(base, case["module"])
        inputs = []
        for name, file in case["inputs"].items():
            inputs += ["--input", f"{name}={os.path.join(base, file)}"]
        dirs = {k: os.path.join(tmp, f"{label}.{k}") for k in ("cpu", "graph", "steps")}
        for d in dirs.values():
            os.makedirs(d, exist_ok=True)
        runs = [
            run([runner, mpk, "--backend", "cpu", "--out", dirs["cpu"]] + inputs),
            # Three runs: the first captures the graph, the last replays it
            # (and its outputs are the ones written).
            run([runner, mpk, "--backend", "cuda", "--repeat", "3", "--out", dirs["graph"]]
                + inputs),
            run([runner, mpk, "--backend", "cuda", "--no-graphs", "--out", dirs["steps"]]
                + inputs),
        ]
        if any(r.returncode for r in runs):
            check(False, f"{label} run: " +
                  " | ".join(r.stderr.strip() for r in runs if r.returncode))
            continue
        bound = BOUNDS[case["precision"]]
        for o in case["outputs"]:
            out = {k: load_output(d, o) for k, d in dirs.items()}
            ok, rel = compare(out["cpu"], out["graph"], bound)
            check(ok, f"{label}:{o} cuda vs cpu max_rel={rel:.2e} (bound {bound:.0e})")
            same = out["graph"].tobytes() == out["steps"].tobytes()
            check(same, f"{label}:{o} graph replay == step by step, bit for bit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", help="the mixprec CLI (to compile)")
    ap.add_argument("--runner", help="the run_outputs executable")
    ap.add_argument("--probe", help="the gpu_driver_probe executable")
    ap.add_argument("--models", help="a gen_models.py directory")
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16", "fp8"])
    ap.add_argument("--arch", default=None, help="default: the device's")
    ap.add_argument("--prepare", metavar="OUT", help="compile and write inputs only, into OUT")
    ap.add_argument("--prepared", metavar="DIR", help="run what --prepare wrote")
    args = ap.parse_args()
    passed = failed = 0

    def check(ok, line):
        nonlocal passed, failed
        print(("PASS  " if ok else "FAIL  ") + line)
        passed += ok
        failed += not ok

    if args.prepare:
        if not (args.mixprec and args.models and args.arch):
            ap.error("--prepare needs --mixprec, --models and --arch")
        cases = prepare(args, args.arch, args.prepare, check)
        print(f"{len(cases)} modules for {args.arch} in {args.prepare}; {failed} failed")
        return 1 if failed or not cases else 0

    if not args.runner or not args.probe:
        ap.error("--runner and --probe are needed to run")
    arch, summary = device_arch(args.probe)
    if arch is None:
        print(f"SKIP: no GPU for the CUDA backend tests: {summary}")
        return SKIP
    print(f"device: {summary.splitlines()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.prepared:
            base = args.prepared
            cases = json.load(open(os.path.join(base, "cases.json")))["cases"]
            cases = [c for c in cases if c["precision"] in args.precisions]
        else:
            if not (args.mixprec and args.models):
                ap.error("--mixprec and --models are needed without --prepared")
            base = os.path.join(tmp, "modules")
            cases = prepare(args, args.arch or arch, base, check)
        run_cases(args.runner, base, cases, tmp, check)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
