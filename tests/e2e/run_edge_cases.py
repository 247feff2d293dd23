#!/usr/bin/env python3
"""Edge cases of issue 7 as ONNX models, against onnxruntime.

Usage:
    run_edge_cases.py --mixprec BIN --work DIR

Builds each model into DIR, runs it with onnxruntime (CPU, FP32) and with
`BIN run` on the interpreter and on the runtime's CPU backend (just in time,
at fp32 and bf16: the expected values are exact in both), and requires the
same values: finite ones within 1e-6 relative, non-finite ones identical
(inf with its sign, NaN). One line per check, then "N passed, N failed";
the exit status is 0 only if nothing failed.

  empty_reduce_sum/max/mean   x[2,3,4] -> Slice [2,3,0] -> Reduce over the
                              empty axis: 0, -inf, 0 (the CPU backend gave
                              the first values of x, whose buffer it reuses)
  shared_outputs              Relu listed twice as an output, again through
                              Identity under another name, and the input
                              through Identity (compile wrote modules the
                              runtime refused)
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OPSET = 17


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "edge", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def empty_reduction(op):
    """x[2,3,4] sliced to [2,3,0], reduced over axis 2."""
    slice_ = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["e"], name="cut")
    inits = [ints("starts", [0]), ints("ends", [0]), ints("axes", [2])]
    if op == "ReduceSum":  # axes is an input from opset 13
        inits.append(ints("red_axes", [2]))
        reduce_ = helper.make_node(op, ["e", "red_axes"], ["y"], name="red", keepdims=0)
    else:
        reduce_ = helper.make_node(op, ["e"], ["y"], name="red", axes=[2], keepdims=0)
    return model([slice_, reduce_], [value("x", [2, 3, 4])], [value("y", [2, 3])], inits)


def shared_outputs():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             helper.make_node("Identity", ["y"], ["z"], name="same"),
             helper.make_node("Identity", ["x"], ["x_copy"], name="copy")]
    outputs = [value("y", [2, 3]), value("y", [2, 3]), value("z", [2, 3]),
               value("x_copy", [2, 3])]
    return model(nodes, [value("x", [2, 3])], outputs)


CASES = {
    "empty_reduce_sum": (lambda: empty_reduction("ReduceSum"), (2, 3, 4)),
    "empty_reduce_max": (lambda: empty_reduction("ReduceMax"), (2, 3, 4)),
    "empty_reduce_mean": (lambda: empty_reduction("ReduceMean"), (2, 3, 4)),
    "shared_outputs": (shared_outputs, (2, 3)),
}

RUNS = [("interpreter", ["--backend", "interpreter"]),
        ("cpu", ["--backend", "cpu", "--precision", "fp32"]),
        ("cpu-bf16", ["--backend", "cpu", "--precision", "bf16"])]


def same_values(got, want):
    """Why got differs from want, or None."""
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite):
        return f"non-finite at {np.argwhere(~np.isfinite(got)).tolist()}, want at " \
               f"{np.argwhere(~finite).tolist()}"
    odd = ~finite & ~(np.isnan(got) & np.isnan(want)) & (got != want)
    if odd.any():
        return f"non-finite values {got[odd].tolist()}, want {want[odd].tolist()}"
    scale = max(float(np.abs(want[finite]).max(initial=0.0)), 1e-30)
    err = float(np.abs(got[finite] - want[finite]).max(initial=0.0)) / scale
    return None if err <= 1e-6 else f"max_rel {err:.3e}, values {got.ravel().tolist()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(7)
    passed = failed = 0
    for name, (build, shape) in CASES.items():
        case = os.path.join(args.work, name)
        os.makedirs(case, exist_ok=True)
        m = build()
        path = os.path.join(case, "model.onnx")
        onnx.save(m, path)
        x = rng.standard_normal(shape).astype(np.float32) + 1.0
        np.save(os.path.join(case, "x.npy"), x)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in m.graph.output]
        want = dict(zip(names, session.run(None, {"x": x})))
        for label, flags in RUNS:
            out = os.path.join(case, label)
            r = subprocess.run([args.mixprec, "run", path, "--input", f"x={case}/x.npy",
                                "--output-dir", out] + flags,
                               capture_output=True, text=True, timeout=300)
            for output in dict.fromkeys(names):
                why = None
                if r.returncode != 0:
                    why = f"exit {r.returncode}: {r.stderr.strip()}"
                else:
                    file = os.path.join(out, output + ".npy")
                    why = same_values(np.load(file), want[output]) if os.path.exists(file) \
                        else "no " + file
                print(f"{'FAIL' if why else 'ok  '} {name}:{output} [{label}]"
                      + (f": {why}" if why else ""))
                failed += why is not None
                passed += why is None
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
