#!/usr/bin/env python3
"""Compiled modules against the interpreter: for every model of a
gen_models.py directory and each precision, compile to .mpk, run it on the
runtime's CPU backend, and compare with the reference interpreter running
the annotated graph (`mixprec compile --emit mp-mlir`) on the same inputs.

Usage:
    run_module.py --mixprec BIN --models DIR [--precisions fp32 bf16 fp16 fp8]
                  [--json OUT]

max_rel = max|module - interpreter| / max|interpreter| per output must stay
under BOUNDS[precision]: the two run the same ops with the same rounding
points but sum in different orders (row reductions in FP32 in the module,
in double in the interpreter's reference kernels), and one flipped rounding
of a narrow dtype is a relative change of up to 2^-8 (BF16) or 2^-4 (FP8)
that later ops carry. GEMM epilogues also add the bias and apply the
activation in FP32 before the one rounding of the output, as cuBLASLt does,
where the annotated graph rounds the GEMM result first. Outputs in
BIT_EXACT involve none of this and must match bit for bit; outputs in
BIT_EXACT_OPENBLAS must on the OpenBLAS path (MIXPREC_CPU_GEMM=openblas),
and stay within the bound on oneDNN's. A model the
module format cannot express must fail to
compile with a one-line error naming the op; such models are listed in
EXPECTED_COMPILE_ERRORS (none today).

Prints one line per check, then "N passed, N failed"; exits non-zero on any
failure.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BOUNDS = {"fp32": 1e-5, "tf32": 1e-2, "bf16": 3e-2, "fp16": 5e-3, "fp8": 0.2}
EXPECTED_COMPILE_ERRORS = {}

# Outputs whose every step sums in the same order in both (routines through
# the same reference kernels, element-wise programs, no GEMM epilogue, no
# row reduction in a kernel): they must match bit for bit at every
# precision.
BIT_EXACT = {
    "linear_variants": {"softmax_axis1", "matvec", "flatten"},
    "opset11_ops": {"reduce_mean", "reduce_max"},
}
# GEMM steps sum in the interpreter's order on the OpenBLAS path only
# (MIXPREC_CPU_GEMM=openblas: the same sgemm calls); on oneDNN, the CPU
# backend's default, in oneDNN's order, within the bound.
BIT_EXACT_OPENBLAS = {"linear_variants": {"gemm"}}


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16", "fp8"])
    ap.add_argument("--json", default=None, help="write per-model compile statistics here")
    args = ap.parse_args()
    manifest = json.load(open(os.path.join(args.models, "manifest.json")))
    passed = failed = 0
    stats = []

    def check(ok, line):
        nonlocal passed, failed
        print(("PASS  " if ok else "FAIL  ") + line)
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for entry in manifest["models"]:
            name = entry["name"]
            model = os.path.join(args.models, name, "model.onnx")
            inputs = []
            for i in entry["inputs"]:
                inputs += ["--input", f"{i['name']}={os.path.join(args.models, i['file'])}"]
            for p in args.precisions:
                mpk = os.path.join(tmp, f"{name}.{p}.mpk")
                mlir = os.path.join(tmp, f"{name}.{p}.mlir")
                c = run([args.mixprec, "compile", model, "--precision", p, "-o", mpk])
                if name in EXPECTED_COMPILE_ERRORS:
                    want = EXPECTED_COMPILE_ERRORS[name]
                    lines = c.stderr.strip().splitlines()
                    check(c.returncode == 1 and len(lines) == 1 and want in c.stderr,
                          f"{name}@{p} compile error as expected: {c.stderr.strip()[:160]}")
                    continue
                if c.returncode != 0:
                    check(False, f"{name}@{p} compile: {c.stderr.strip()}")
                    continue
                s = json.loads(c.stderr.strip().splitlines()[-1])
                s.update(model=name, precision=p)
                stats.append(s)
                r1 = run([args.mixprec, "compile", model, "--precision", p, "-o", mlir])
                out_i, out_m = os.path.join(tmp, "i"), os.path.join(tmp, "m")
                r2 = run([args.mixprec, "run", mlir, "--output-dir", out_i] + inputs)
                r3 = run([args.mixprec, "run", mpk, "--backend", "cpu", "--output-dir", out_m] + inputs)
                if r1.returncode or r2.returncode or r3.returncode:
                    check(False, f"{name}@{p} run: {(r1.stderr + r2.stderr + r3.stderr).strip()}")
                    continue
                out_b = os.path.join(tmp, "b")
                if name in BIT_EXACT_OPENBLAS:
                    r4 = run([args.mixprec, "run", mpk, "--backend", "cpu", "--output-dir", out_b]
                             + inputs, env=dict(os.environ, MIXPREC_CPU_GEMM="openblas"))
                    for oname in sorted(BIT_EXACT_OPENBLAS[name]):
                        exact = r4.returncode == 0 and np.array_equal(
                            np.load(os.path.join(out_i, oname + ".npy")),
                            np.load(os.path.join(out_b, oname + ".npy")), equal_nan=True)
                        check(exact, f"{name}@{p}:{oname} bit-exact on the OpenBLAS path "
                              "(required)" + ("" if r4.returncode == 0 else ": " + r4.stderr))
                for o in entry["outputs"]:
                    fname = o["name"] + ".npy"
                    a = np.load(os.path.join(out_i, fname)).astype(np.float64)
                    b = np.load(os.path.join(out_m, fname)).astype(np.float64)
                    finite = np.isfinite(a)
                    same_nonfinite = np.array_equal(~finite, ~np.isfinite(b))
                    scale = max(float(np.max(np.abs(a[finite]))) if finite.any() else 0.0, 1e-30)
                    rel = float(np.max(np.abs(a[finite] - b[finite]))) / scale if finite.any() else 0.0
                    exact = np.array_equal(a, b, equal_nan=True)
                    if o["name"] in BIT_EXACT.get(name, set()):
                        check(exact, f"{name}@{p}:{o['name']} bit-exact (required)")
                        continue
                    check(same_nonfinite and rel < BOUNDS[p],
                          f"{name}@{p}:{o['name']} max_rel={rel:.2e} (bound {BOUNDS[p]:.0e})"
                          + (" bit-exact" if exact else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=2)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
