#!/usr/bin/env python3
"""The CUDA backend against the CPU backend (ctest label `gpu`): every model
of a gen_models.py directory, compiled with `--arch sm_XX` for the device
at each precision, runs on both backends with the same inputs; every output
must agree within run_module.py's BOUNDS[precision] (relative to the CPU
output's largest magnitude; non-finite values in the same places), and the
CUDA run replaying its captured CUDA graph must equal the CUDA run launched
step by step (MIXPREC_CUDA_GRAPHS=0) bit for bit.

Usage:
    run_cuda.py --mixprec BIN --probe GPU_DRIVER_PROBE --models DIR
                [--precisions fp32 bf16 fp16 fp8] [--arch sm_90]

Without a device (the probe exits 77) it prints the probe's reason and exits
77, which ctest reports as skipped. --arch defaults to the device's
architecture, read from the probe's summary line.

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


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def device_arch(probe):
    """The device's "sm_XX", or None (and the reason) without one."""
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


def compare(cpu, cuda, bound):
    """(ok, max_rel) of a CUDA output against the CPU's."""
    a, b = cpu.astype(np.float64), cuda.astype(np.float64)
    if a.shape != b.shape:
        return False, float("inf")
    finite = np.isfinite(a)
    if not np.array_equal(~finite, ~np.isfinite(b)):
        return False, float("inf")
    if not finite.any():
        return True, 0.0
    scale = max(float(np.max(np.abs(a[finite]))), 1e-30)
    rel = float(np.max(np.abs(a[finite] - b[finite]))) / scale
    return rel < bound, rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--probe", required=True, help="the gpu_driver_probe executable")
    ap.add_argument("--models", required=True)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16", "fp8"])
    ap.add_argument("--arch", default=None, help="default: the device's")
    args = ap.parse_args()
    arch, summary = device_arch(args.probe)
    if arch is None:
        print(f"SKIP: no GPU for the CUDA backend tests: {summary}")
        return SKIP
    arch = args.arch or arch
    print(f"device: {summary.splitlines()[0]}; compiling for {arch}")
    manifest = json.load(open(os.path.join(args.models, "manifest.json")))
    passed = failed = 0

    def check(ok, line):
        nonlocal passed, failed
        print(("PASS  " if ok else "FAIL  ") + line)
        passed += ok
        failed += not ok

    steps_env = dict(os.environ, MIXPREC_CUDA_GRAPHS="0")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in manifest["models"]:
            name = entry["name"]
            model = os.path.join(args.models, name, "model.onnx")
            inputs = []
            for i in entry["inputs"]:
                inputs += ["--input", f"{i['name']}={os.path.join(args.models, i['file'])}"]
            for p in args.precisions:
                mpk = os.path.join(tmp, f"{name}.{p}.mpk")
                c = run([args.mixprec, "compile", model, "--precision", p, "--arch", arch,
                         "-o", mpk])
                if c.returncode != 0:
                    check(False, f"{name}@{p} compile --arch {arch}: {c.stderr.strip()}")
                    continue
                dirs = {k: os.path.join(tmp, f"{name}.{p}.{k}") for k in ("cpu", "graph", "steps")}
                runs = [
                    run([args.mixprec, "run", mpk, "--backend", "cpu", "--output-dir",
                         dirs["cpu"]] + inputs),
                    # Three runs: the first captures the graph, the last
                    # replays it (and its outputs are the ones written).
                    run([args.mixprec, "run", mpk, "--backend", "cuda", "--repeat", "3",
                         "--output-dir", dirs["graph"]] + inputs),
                    run([args.mixprec, "run", mpk, "--backend", "cuda", "--output-dir",
                         dirs["steps"]] + inputs, env=steps_env),
                ]
                if any(r.returncode for r in runs):
                    check(False, f"{name}@{p} run: " +
                          " | ".join(r.stderr.strip() for r in runs if r.returncode))
                    continue
                for o in entry["outputs"]:
                    fname = o["name"] + ".npy"
                    out = {k: np.load(os.path.join(d, fname)) for k, d in dirs.items()}
                    ok, rel = compare(out["cpu"], out["graph"], BOUNDS[p])
                    check(ok, f"{name}@{p}:{o['name']} cuda vs cpu max_rel={rel:.2e} "
                              f"(bound {BOUNDS[p]:.0e})")
                    same = (out["graph"].dtype == out["steps"].dtype
                            and out["graph"].tobytes() == out["steps"].tobytes())
                    check(same, f"{name}@{p}:{o['name']} graph replay == step by step, bit for bit")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
