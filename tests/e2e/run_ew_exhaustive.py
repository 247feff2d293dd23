#!/usr/bin/env python3
"""Every FP16 and BF16 value through each new one-operand scalar function:
a compiled module on the CPU backend and the interpreter against numpy
(float64) rounded once with ml_dtypes.

The model casts an FP32 input holding every bit pattern of the narrow type
(65536 values: subnormals, infinities, NaNs included) to that type, applies
one function per output and casts the result to FP32 (or returns the bool).
Compiled at --precision fp32: a follow-class function runs in the narrow
type (computed in FP32, rounded once to it), an fp32-class one (sin, cos,
softplus) in FP32 on the exactly widened value.

What must agree with the reference, per function:
  exact      bit for bit (NaN meets NaN): abs, sign, floor, ceil, round
             (halves to even), is_nan, is_inf, is_pos_inf, is_neg_inf
  1 ulp      of the result's dtype: the functions an FP32 formula computes
             before the one rounding (a value within FP32's error of a
             rounding boundary of the narrow type may round either way):
             mish, hard_swish, elu, selu, leaky_relu, hard_sigmoid, and sin,
             cos, softplus in FP32 (the C library's sinf, cosf, log1pf)
The module and the interpreter must also agree with each other bit for bit.

Usage: run_ew_exhaustive.py --mixprec BIN --work DIR
Prints one line per check, then "N passed, N failed"; exits non-zero on any
failure.
"""

import argparse
import math
import os
import subprocess
import sys

import ml_dtypes
import numpy as np

N = 65536
NARROW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def softplus(x):
    return np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(np.minimum(x, 0))))


def hard_sigmoid(x, a, b):
    return np.clip(a * x + b, 0.0, 1.0)


# name: (mp op text after the operand, float64 reference, class, bound)
# class: "follow" (result in the narrow type), "fp32" (result f32), "bool".
FUNCS = {
    "abs": ("mp.abs", np.abs, "follow", 0),
    "sign": ("mp.sign", lambda x: np.sign(x) + 0.0, "follow", 0),
    "floor": ("mp.floor", np.floor, "follow", 0),
    "ceil": ("mp.ceil", np.ceil, "follow", 0),
    "round": ("mp.round", np.round, "follow", 0),
    "is_nan": ("mp.is_nan", np.isnan, "bool", 0),
    "is_inf": ("mp.is_inf", np.isinf, "bool", 0),
    "is_pos_inf": ("mp.is_inf {detect_negative = false}", lambda x: np.isposinf(x), "bool", 0),
    "is_neg_inf": ("mp.is_inf {detect_positive = false}", lambda x: np.isneginf(x), "bool", 0),
    "mish": ("mp.mish", lambda x: x * np.tanh(softplus(x)), "follow", 1),
    "hard_swish": ("mp.hard_swish", lambda x: x * hard_sigmoid(x, 1 / 6, 0.5), "follow", 1),
    "elu": ("mp.elu {alpha = 0.75 : f32}",
            lambda x: np.where(x < 0, 0.75 * np.expm1(np.minimum(x, 0)), x), "follow", 1),
    "selu": (f"mp.selu {{alpha = {SELU_ALPHA!r} : f32, gamma = {SELU_GAMMA!r} : f32}}",
             lambda x: SELU_GAMMA * np.where(x <= 0, SELU_ALPHA * np.expm1(np.minimum(x, 0)), x),
             "follow", 1),
    "leaky_relu": ("mp.leaky_relu {alpha = 0.01 : f32}",
                   lambda x: np.where(x < 0, np.float64(np.float32(0.01)) * x, x), "follow", 1),
    "hard_sigmoid": ("mp.hard_sigmoid {alpha = 0.2 : f32, beta = 0.5 : f32}",
                     lambda x: hard_sigmoid(x, np.float64(np.float32(0.2)), 0.5), "follow", 1),
    "sin": ("mp.sin", np.sin, "fp32", 1),
    "cos": ("mp.cos", np.cos, "fp32", 1),
    "softplus": ("mp.softplus", softplus, "fp32", 1),
}


def build_model(t):
    """MLIR text: x (f32, every t value) -> cast to t -> one output per FUNCS entry."""
    f32 = f"tensor<{N}xf32>"
    nt = f"tensor<{N}x{t}>"
    i1 = f"tensor<{N}xi1>"
    results, types, lines = [], [], []
    lines.append(f"  %xt = mp.cast %x : {f32} -> {nt}")
    for name, (op, _, cls, _) in FUNCS.items():
        parts = op.split(" ", 1)
        attrs = (" " + parts[1]) if len(parts) > 1 else ""
        if cls == "bool":
            lines.append(f'  %{name} = {parts[0]} %xt{attrs} : {nt} -> {i1} loc("{name}")')
            results.append((name, f"%{name}", i1))
        else:
            lines.append(f'  %{name}_t = {parts[0]} %xt{attrs} : {nt} loc("{name}")')
            lines.append(f"  %{name} = mp.cast %{name}_t : {nt} -> {f32}")
            results.append((name, f"%{name}", f32))
    sig = ", ".join(f'{ty} {{mp.name = "{n}"}}' for n, _, ty in results)
    head = f'func.func @main(%x: {f32} {{mp.name = "x"}}) -> ({sig}) {{'
    ret = (f"  return {', '.join(v for _, v, _ in results)} : "
           f"{', '.join(ty for _, _, ty in results)}")
    return "\n".join([head] + lines + [ret, "}"]) + "\n"


def ordered(bits, width):
    """Maps float bit patterns to integers ordered as the floats are."""
    bits = bits.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def ulp_distance(got, want, dtype):
    """Per element: ULPs of `dtype` between got and want (0 where both NaN)."""
    g = got.astype(dtype)
    w = want.astype(dtype)
    width = 8 * np.dtype(dtype).itemsize
    uint = {2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize]
    d = np.abs(ordered(g.view(uint), width) - ordered(w.view(uint), width))
    gn, wn = np.isnan(g.astype(np.float32)), np.isnan(w.astype(np.float32))
    d = np.where(gn & wn, 0, d)
    return np.where(gn != wn, np.iinfo(np.int64).max, d)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0

    def check(ok, line):
        nonlocal passed, failed
        print(("PASS  " if ok else "FAIL  ") + line, flush=True)
        passed += ok
        failed += not ok

    for t, nt in NARROW.items():
        model = os.path.join(args.work, f"ew_{t}.mlir")
        with open(model, "w") as f:
            f.write(build_model(t))
        xt = np.arange(N, dtype=np.uint16).view(nt)
        x = xt.astype(np.float32)
        xin = os.path.join(args.work, f"x_{t}.npy")
        np.save(xin, x)
        mpk = os.path.join(args.work, f"ew_{t}.mpk")
        out_m = os.path.join(args.work, f"out_module_{t}")
        out_i = os.path.join(args.work, f"out_interp_{t}")
        steps = [
            [args.mixprec, "compile", model, "--precision", "fp32", "-o", mpk],
            [args.mixprec, "run", mpk, "--backend", "cpu", "--output-dir", out_m,
             "--input", f"x={xin}"],
            [args.mixprec, "run", model, "--precision", "fp32", "--output-dir", out_i,
             "--input", f"x={xin}"],
        ]
        errors = [r.stderr.strip() for r in map(run, steps) if r.returncode]
        if errors:
            check(False, f"{t}: {errors[0]}")
            continue
        x64 = x.astype(np.float64)
        with np.errstate(all="ignore"):
            for name, (_, ref, cls, bound) in FUNCS.items():
                got_m = np.load(os.path.join(out_m, f"{name}.npy"))
                got_i = np.load(os.path.join(out_i, f"{name}.npy"))
                want = ref(x64)
                if cls == "bool":
                    wrong = int(np.sum(got_m != want)) + int(np.sum(got_i != want))
                    check(wrong == 0 and got_m.dtype == np.bool_,
                          f"{t} {name}: {wrong} wrong answers over {N} values")
                    continue
                dtype = nt if cls == "follow" else np.float32
                want = want.astype(dtype)  # one rounding of the float64 value
                same = np.sum(got_m.view(np.uint32) != got_i.view(np.uint32))
                same -= np.sum(np.isnan(got_m) & np.isnan(got_i)
                               & (got_m.view(np.uint32) != got_i.view(np.uint32)))
                check(same == 0, f"{t} {name}: module vs interpreter: {int(same)} of {N} differ")
                d = ulp_distance(got_m, want, dtype)
                worst = int(d.max())
                exact = int(np.sum(d == 0))
                at = int(np.argmax(d))
                check(worst <= bound,
                      f"{t} {name} vs numpy rounded once to {np.dtype(dtype).name}: "
                      f"{exact} of {N} exact, worst {worst} ulp (bound {bound})"
                      + (f" at x={x[at]!r}: got {got_m[at]!r}, want {want[at]!r}"
                         if worst > bound else ""))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
