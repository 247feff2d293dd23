#!/usr/bin/env python3
"""Integer and bool tensors computed at run time, exactly (issue 10).

Every integer element-wise op mixprec runs at run time (the int_elementwise
routine: Add, Sub, Mul, Div, Mod with fmod 0 and 1, Pow with an integer or
a float exponent, Max, Min, Neg, Abs, Where, the comparisons, integer
casts), on INT32 and INT64 graph inputs, plus Trilu on integers, ReduceMax
and ReduceMin on bools and float Mod with fmod=0, each as an ONNX model.

Usage:
    run_integers.py --mixprec BIN --work DIR

The inputs hold the values where a float path goes wrong or C is
undefined: above 2^24 and 2^53, near +-2^63 and +-2^31, the minimum and -1
(its quotient overflows), zeros (division and remainder by zero: mixprec
defines x / 0 = x % 0 = 0, as numpy), mixed signs, and broadcasting. The
reference is exact Python integer arithmetic with two's complement
wrapping (numpy's answers); where onnxruntime defines the result (no zero
divisor) it is checked too. Each model runs on the interpreter, on the
runtime's CPU backend (just in time) and as a module written by
`BIN compile -o`: all must equal the reference exactly (float Mod within
1e-6 relative). One line per check, then "N passed, N failed"; the exit
status is 0 only if nothing failed.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_indexing import model as indexing_model, vi  # noqa: E402

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL
NP = {I64: np.int64, I32: np.int32, B: np.bool_, F: np.float32}
BITS = {I64: 64, I32: 32}


def wrap(v, bits):
    """v as a two's complement integer of `bits` bits."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def trunc_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a, b):
    return 0 if b == 0 else a - b * trunc_div(a, b)


def floor_rem(a, b):
    return 0 if b == 0 else a % b  # Python: the divisor's sign


def int_pow(a, e, bits):
    if e < 0:
        return 1 if a == 1 else ((-1 if e % 2 else 1) if a == -1 else 0)
    return pow(a, e, 1 << 64)  # wrapped below


def float_pow(a, e):
    with np.errstate(all="ignore"):  # C pow: NaN, inf, no exception
        r = float(np.power(np.float64(a), np.float64(e)))
    if math.isnan(r):
        return 0
    if r >= 2.0 ** 63:
        return (1 << 63) - 1
    if r < -(2.0 ** 63):
        return -(1 << 63)
    return int(r)


BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": trunc_div,
    "Max": max,
    "Min": min,
}
COMPARE = {
    "Equal": lambda a, b: a == b,
    "Less": lambda a, b: a < b,
    "LessOrEqual": lambda a, b: a <= b,
    "Greater": lambda a, b: a > b,
    "GreaterOrEqual": lambda a, b: a >= b,
}


def edge_values(elem):
    """Values where FP32 or C arithmetic goes wrong, for `elem`."""
    if elem == I64:
        big = [2**63 - 1, -2**63, 2**63 - 2, -2**63 + 1, 2**53 + 1, -(2**53) - 3, 2**24 + 1,
               -(2**24) - 1, 16777217 * 3, 4611686018427387904, 3037000500]
    else:
        big = [2**31 - 1, -2**31, 2**31 - 2, -2**31 + 1, 2**24 + 1, -(2**24) - 1, 46341,
               16777217 * 3]
    return big + [0, 1, -1, 2, -2, 7, -7, 3, -3, 100, -100]


def model(nodes, inputs, outputs, inits=()):
    """A checked opset-18 model (ReduceMax takes its axes as an input)."""
    return indexing_model(nodes, inputs, outputs, inits, opset=18)


def elementwise(ref, arrays, out_dtype):
    """ref over the broadcast points of `arrays` (Python ints or floats)."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    grids = [np.broadcast_to(a, shape).ravel().tolist() for a in arrays]
    return np.array([ref(*vals) for vals in zip(*grids)], dtype=object).reshape(shape).astype(
        out_dtype) if shape else np.array(ref(*[g[0] for g in grids])).astype(out_dtype)


def cases():
    """(name, model, inputs, {output: reference}, also_onnxruntime)."""
    out = []
    for elem in (I64, I32):
        dt, bits, tag = NP[elem], BITS[elem], "i64" if elem == I64 else "i32"
        vals = edge_values(elem)
        n = len(vals)
        # Every pair of edge values: a [n, 1] by [n] broadcast.
        a = np.array(vals, dtype=dt).reshape(n, 1)
        b = np.array(vals, dtype=dt)
        pair_inputs = {"a": a, "b": b}
        ins = [vi("a", elem, [n, 1]), vi("b", elem, [n])]
        for op, f in BINARY.items():
            out.append((f"{op.lower()}_{tag}",
                        model([helper.make_node(op, ["a", "b"], ["y"])], ins,
                              [vi("y", elem, [n, n])]),
                        pair_inputs,
                        {"y": elementwise(lambda x, y, f=f: wrap(f(int(x), int(y)), bits),
                                          [a, b], dt)}, op != "Div"))
        for fmod, f in ((0, floor_rem), (1, c_rem)):
            out.append((f"mod_fmod{fmod}_{tag}",
                        model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], ins,
                              [vi("y", elem, [n, n])]),
                        pair_inputs,
                        {"y": elementwise(lambda x, y, f=f: wrap(f(int(x), int(y)), bits),
                                          [a, b], dt)}, False))
        for op, f in COMPARE.items():
            out.append((f"{op.lower()}_{tag}",
                        model([helper.make_node(op, ["a", "b"], ["y"])], ins,
                              [vi("y", B, [n, n])]),
                        pair_inputs,
                        {"y": elementwise(lambda x, y, f=f: f(int(x), int(y)), [a, b], np.bool_)},
                        True))
        for op, f in (("Neg", lambda x: -x), ("Abs", abs)):
            out.append((f"{op.lower()}_{tag}",
                        model([helper.make_node(op, ["b"], ["y"])], [vi("b", elem, [n])],
                              [vi("y", elem, [n])]),
                        {"b": b},
                        {"y": elementwise(lambda x, f=f: wrap(f(int(x)), bits), [b], dt)}, True))
        # Pow: small bases by exponents with negatives and ones that wrap.
        base = np.array([0, 1, -1, 2, -2, 3, -3, 7, 10, 2**15 + 1, -(2**15) - 3],
                        dtype=dt).reshape(-1, 1)
        expo = np.array([0, 1, 2, 3, 5, 13, 31, 62, 63, 64, 77, -1, -2, -3], dtype=dt)
        out.append((f"pow_{tag}_{tag}",
                    model([helper.make_node("Pow", ["a", "b"], ["y"])],
                          [vi("a", elem, list(base.shape)), vi("b", elem, list(expo.shape))],
                          [vi("y", elem, [base.shape[0], expo.shape[0]])]),
                    {"a": base, "b": expo},
                    {"y": elementwise(lambda x, y: wrap(int_pow(int(x), int(y), bits), bits),
                                      [base, expo], dt)}, False))
        fexp = np.array([0.0, 0.5, 1.0, 2.0, 2.5, 3.0, -1.0, -0.5, 40.0, 70.0],
                        dtype=np.float32)
        out.append((f"pow_{tag}_f32",
                    model([helper.make_node("Pow", ["a", "b"], ["y"])],
                          [vi("a", elem, list(base.shape)), vi("b", F, list(fexp.shape))],
                          [vi("y", elem, [base.shape[0], fexp.shape[0]])]),
                    {"a": base, "b": fexp},
                    # The int64 result (saturated), then the output's low bits.
                    {"y": elementwise(lambda x, y: wrap(float_pow(int(x), float(y)), bits),
                                      [base, fexp], dt)}, False))
        # Where with integer branches (a broadcast condition) and Trilu.
        cond = np.array([[True, False, True], [False, True, True]])
        x = np.array([[vals[0], vals[1], vals[4]], [vals[5], -1, 0]], dtype=dt)
        y = np.array([vals[2]], dtype=dt)
        out.append((f"where_{tag}",
                    model([helper.make_node("Where", ["c", "x", "y"], ["z"])],
                          [vi("c", B, [2, 3]), vi("x", elem, [2, 3]), vi("y", elem, [1])],
                          [vi("z", elem, [2, 3])]),
                    {"c": cond, "x": x, "y": y}, {"z": np.where(cond, x, y).astype(dt)}, True))
        t = np.array(vals[:12], dtype=dt).reshape(3, 4)
        for upper in (0, 1):
            want = np.triu(t, 1) if upper else np.tril(t, -1)
            out.append((f"trilu_upper{upper}_{tag}",
                        model([helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
                              [vi("x", elem, [3, 4])], [vi("y", elem, [3, 4])],
                              [helper.make_tensor("k", I64, [], [1 if upper else -1])]),
                        {"x": t}, {"y": want}, True))
        # Max/Min variadic with three inputs.
        out.append((f"max3_{tag}",
                    model([helper.make_node("Max", ["a", "b", "c"], ["y"])],
                          [vi("a", elem, [n, 1]), vi("b", elem, [n]), vi("c", elem, [1])],
                          [vi("y", elem, [n, n])]),
                    {"a": a, "b": b, "c": np.array([vals[4]], dtype=dt)},
                    {"y": np.maximum(np.maximum(a, b), np.array([vals[4]], dtype=dt))}, True))
    # Integer casts: int64 -> int32 keeps the low 32 bits; -> bool, and back.
    v64 = np.array(edge_values(I64), dtype=np.int64)
    for to, dt in ((I32, np.int32), (B, np.bool_)):
        out.append((f"cast_i64_to_{'i32' if to == I32 else 'bool'}",
                    model([helper.make_node("Cast", ["x"], ["y"], to=to)],
                          [vi("x", I64, [len(v64)])], [vi("y", to, [len(v64)])]),
                    {"x": v64}, {"y": v64.astype(dt)}, True))
    flags = np.array([True, False, True, True], dtype=np.bool_)
    out.append(("cast_bool_to_i64",
                model([helper.make_node("Cast", ["x"], ["y"], to=I64)], [vi("x", B, [4])],
                      [vi("y", I64, [4])]),
                {"x": flags}, {"y": flags.astype(np.int64)}, True))
    # A chain: (a * b + a) // b compared with a, all in int64 past 2^53.
    a = np.array([2**53 + 1, 2**62 + 7, -(2**60) - 5, 123456789012345], dtype=np.int64)
    b = np.array([3, -7, 11, 2**20 + 1], dtype=np.int64)
    chain = [trunc_div(wrap(int(x) * int(y) + int(x), 64), int(y)) for x, y in zip(a, b)]
    out.append(("chain_i64",
                model([helper.make_node("Mul", ["a", "b"], ["m"]),
                       helper.make_node("Add", ["m", "a"], ["s"]),
                       helper.make_node("Div", ["s", "b"], ["q"]),
                       helper.make_node("Equal", ["q", "q"], ["e"])],
                      [vi("a", I64, [4]), vi("b", I64, [4])],
                      [vi("q", I64, [4]), vi("e", B, [4])]),
                {"a": a, "b": b},
                {"q": np.array([wrap(v, 64) for v in chain], dtype=np.int64),
                 "e": np.ones(4, dtype=np.bool_)}, True))
    # ReduceMax / ReduceMin on bools, with an empty axis.
    m = np.array([[[True, False], [False, False]], [[True, True], [False, True]]])
    axes = helper.make_tensor("axes", I64, [2], [1, 2])
    for op, fn in (("ReduceMax", np.any), ("ReduceMin", np.all)):
        out.append((f"{op.lower()}_bool",
                    model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)],
                          [vi("x", B, [2, 2, 2])], [vi("y", B, [2])], [axes]),
                    {"x": m}, {"y": fn(m, axis=(1, 2))}, False))
        e = np.zeros([2, 0, 3], dtype=np.bool_)
        out.append((f"{op.lower()}_bool_empty",
                    model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)],
                          [vi("x", B, [2, 0, 3])], [vi("y", B, [2, 1, 3])],
                          [helper.make_tensor("axes", I64, [1], [1])]),
                    {"x": e}, {"y": np.full([2, 1, 3], op == "ReduceMin")}, False))
    # Float Mod with fmod=0: numpy.mod (the divisor's sign), inf and zero divisors.
    fx = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 7.0, -7.0, 1e30, 3.0, np.inf, 2.0],
                  dtype=np.float32)
    fy = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, np.inf, np.inf, 7.0, 0.0, 2.0, np.nan],
                  dtype=np.float32)
    with np.errstate(all="ignore"):
        out.append(("mod_fmod0_f32",
                    model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=0)],
                          [vi("a", F, [12]), vi("b", F, [12])], [vi("y", F, [12])]),
                    {"a": fx, "b": fy}, {"y": np.mod(fx, fy)}, False))
    return out


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if want.dtype == np.float32:
        ok = np.allclose(got, want, rtol=1e-6, atol=0, equal_nan=True) and np.array_equal(
            np.signbit(got[got == 0]), np.signbit(want[got == 0]))
        return None if ok else f"got {got.tolist()} want {want.tolist()}"
    bad = np.nonzero(got.ravel() != want.ravel())[0]
    if bad.size:
        i = bad[0]
        return f"{bad.size} differ, first at {i}: got {got.ravel()[i]} want {want.ravel()[i]}"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mixprec", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    passed = failed = 0

    def report(label, why):
        nonlocal passed, failed
        print(("PASS " if why is None else "FAIL ") + label + ("" if why is None else ": " + why))
        passed, failed = passed + (why is None), failed + (why is not None)

    for name, m, inputs, want, with_ort in cases():
        case = os.path.join(args.work, name)
        os.makedirs(case)
        path = os.path.join(case, "model.onnx")
        onnx.save(m, path)
        flags = []
        for k, v in inputs.items():
            np.save(os.path.join(case, k + ".npy"), v)
            flags += ["--input", f"{k}={os.path.join(case, k + '.npy')}"]
        if with_ort:
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, inputs)))
            for o, w in want.items():
                report(f"{name} [onnxruntime agrees with the reference] {o}",
                       same(np.asarray(got[o]), w))
        mpk = os.path.join(case, "m.mpk")
        compiled = subprocess.run([args.mixprec, "compile", path, "--precision", "fp32", "-o", mpk],
                                  capture_output=True, text=True)
        for label, cmd in (("interpreter", [path, "--backend", "interpreter"]),
                           ("cpu", [path, "--backend", "cpu"]),
                           ("mpk", [mpk, "--backend", "cpu"])):
            if label == "mpk" and compiled.returncode:
                report(f"{name} [{label}]", "compile: " + compiled.stderr.strip())
                continue
            outdir = os.path.join(case, label)
            r = subprocess.run([args.mixprec, "run"] + cmd + ["--output-dir", outdir] + flags,
                               capture_output=True, text=True)
            if r.returncode:
                report(f"{name} [{label}]", f"exit {r.returncode}: {r.stderr.strip()}")
                continue
            for o, w in want.items():
                report(f"{name} [{label}] {o}", same(np.load(os.path.join(outdir, o + ".npy")), w))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
