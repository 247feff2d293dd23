#!/usr/bin/env python3
"""Index-driven ops (issue 10) as ONNX models, against onnxruntime.

GatherElements, GatherND, ScatterND, ArgMax/ArgMin, TopK, CumSum and
ReduceProd, each in its attribute and opset variants.

Usage:
    run_indexing.py --mixprec BIN --work DIR

Builds each model into DIR and runs it with onnxruntime (CPU, FP32) and
with `BIN run` on the interpreter, on the runtime's CPU backend (just in
time) and as a module written by `BIN compile -o` (the .mpk round trip).
Outputs must match: exactly for data movement and indices (GatherElements,
GatherND, ScatterND without arithmetic, ArgMax/ArgMin, TopK's indices, integer
results), within max_rel 1e-5 otherwise (TopK's values, CumSum, ScatterND's
reductions, ReduceProd). At bf16 the runtime must equal the interpreter bit
for bit. Then the bad inputs: a run-time index out of range (exit 1, the
op named, no output file), and import errors naming the node. One line per
check, then "N passed, N failed"; the exit status is 0 only if nothing failed.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "indexing", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, elem, array):
    array = np.asarray(array)
    return helper.make_tensor(name, elem, list(array.shape), array.ravel().tolist())


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name="n_" + op.lower(), **attrs)


def floats(rng, shape, ties=False):
    x = rng.standard_normal(shape).astype(np.float32)
    return np.round(x * 2).astype(np.float32) if ties else x


# Each case: (model, inputs {name: array}, outputs compared exactly).
def cases(rng):
    c = {}
    # GatherElements: constant indices with negatives, run-time int64 and
    # int32 indices, integer data, indices smaller than data off the axis.
    c["gather_elements_const"] = (
        model([node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [vi("x", F, [3, 5])], [vi("y", F, [3, 3])],
              [const("i", I64, [[0, 4, -1], [2, -5, 1], [4, 4, 0]])]),
        {"x": floats(rng, [3, 5])}, {"y"})
    c["gather_elements_input"] = (
        model([node("GatherElements", ["x", "i"], ["y"], axis=0)],
              [vi("x", F, [4, 3, 2]), vi("i", I64, [6, 2, 2])], [vi("y", F, [6, 2, 2])]),
        {"x": floats(rng, [4, 3, 2]), "i": rng.integers(-4, 4, [6, 2, 2]).astype(np.int64)},
        {"y"})
    c["gather_elements_i32_negaxis"] = (
        model([node("GatherElements", ["x", "i"], ["y"], axis=-1)],
              [vi("x", I64, [2, 3, 4]), vi("i", I32, [2, 3, 5])], [vi("y", I64, [2, 3, 5])]),
        {"x": rng.integers(-100, 100, [2, 3, 4]).astype(np.int64),
         "i": rng.integers(-4, 4, [2, 3, 5]).astype(np.int32)}, {"y"})
    # GatherND: constant tuples with negatives, batch_dims 1, full tuples.
    c["gather_nd_const"] = (
        model([node("GatherND", ["x", "i"], ["y"])],
              [vi("x", F, [4, 5, 6])], [vi("y", F, [3, 6])],
              [const("i", I64, [[1, 2], [-1, 0], [3, -2]])]),
        {"x": floats(rng, [4, 5, 6])}, {"y"})
    c["gather_nd_batch_dims"] = (
        model([node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
              [vi("x", F, [2, 5, 6]), vi("i", I64, [2, 3, 1])], [vi("y", F, [2, 3, 6])]),
        {"x": floats(rng, [2, 5, 6]), "i": rng.integers(-5, 5, [2, 3, 1]).astype(np.int64)},
        {"y"})
    c["gather_nd_full_tuple"] = (
        model([node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
              [vi("x", F, [3, 4, 2]), vi("i", I64, [3, 2, 2])], [vi("y", F, [3, 2])]),
        {"x": floats(rng, [3, 4, 2]),
         "i": np.stack([rng.integers(-4, 4, [3, 2]), rng.integers(0, 2, [3, 2])], -1)
             .astype(np.int64)}, {"y"})
    # ArgMax/ArgMin: keepdims, negative axis, ties both ways, opset 11.
    x_ties = floats(rng, [3, 4, 5], ties=True)
    c["argmax_keepdims"] = (
        model([node("ArgMax", ["x"], ["y"], axis=1)],
              [vi("x", F, [3, 4, 5])], [vi("y", I64, [3, 1, 5])]),
        {"x": x_ties}, {"y"})
    c["argmax_last_index"] = (
        model([node("ArgMax", ["x"], ["y"], axis=-1, keepdims=0, select_last_index=1)],
              [vi("x", F, [3, 4, 5])], [vi("y", I64, [3, 4])]),
        {"x": x_ties}, {"y"})
    c["argmin_first_index"] = (
        model([node("ArgMin", ["x"], ["y"], axis=2, keepdims=0)],
              [vi("x", F, [3, 4, 5])], [vi("y", I64, [3, 4])]),
        {"x": x_ties}, {"y"})
    c["argmin_last_index_int"] = (
        model([node("ArgMin", ["x"], ["y"], axis=0, select_last_index=1)],
              [vi("x", I64, [6, 3])], [vi("y", I64, [1, 3])]),
        {"x": rng.integers(0, 3, [6, 3]).astype(np.int64)}, {"y"})
    c["argmax_opset11"] = (
        model([node("ArgMax", ["x"], ["y"], axis=0, keepdims=0)],
              [vi("x", F, [4, 6])], [vi("y", I64, [6])], opset=11),
        {"x": floats(rng, [4, 6])}, {"y"})
    # TopK: K input (opset 11), smallest, ties (lower index first), k = 0,
    # unsorted (compared after sorting), the attribute form (opset 9).
    c["topk_largest"] = (
        model([node("TopK", ["x", "k"], ["v", "i"])],
              [vi("x", F, [3, 8])], [vi("v", F, [3, 3]), vi("i", I64, [3, 3])],
              [const("k", I64, [3])]),
        {"x": floats(rng, [3, 8])}, {"i"})
    c["topk_smallest_ties_axis0"] = (
        model([node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=0)],
              [vi("x", F, [7, 4])], [vi("v", F, [4, 4]), vi("i", I64, [4, 4])],
              [const("k", I64, [4])]),
        {"x": floats(rng, [7, 4], ties=True)}, {"i"})
    c["topk_ties_largest"] = (
        model([node("TopK", ["x", "k"], ["v", "i"], axis=-2)],
              [vi("x", F, [2, 9, 3])], [vi("v", F, [2, 5, 3]), vi("i", I64, [2, 5, 3])],
              [const("k", I64, [5])]),
        {"x": floats(rng, [2, 9, 3], ties=True)}, {"i"})
    c["topk_int_indices_only"] = (
        model([node("TopK", ["x", "k"], ["v", "i"])],
              [vi("x", I64, [2, 6])], [vi("i", I64, [2, 2])], [const("k", I64, [2])]),
        {"x": rng.integers(-5, 5, [2, 6]).astype(np.int64)}, {"i"})
    c["topk_opset9_attribute"] = (
        model([node("TopK", ["x"], ["v", "i"], k=2, axis=1)],
              [vi("x", F, [3, 5])], [vi("v", F, [3, 2]), vi("i", I64, [3, 2])], opset=9),
        {"x": floats(rng, [3, 5])}, {"i"})
    # CumSum: every exclusive/reverse pair, a negative axis, int64 input.
    for exclusive in (0, 1):
        for reverse in (0, 1):
            c[f"cumsum_e{exclusive}_r{reverse}"] = (
                model([node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)],
                      [vi("x", F, [3, 7, 4])], [vi("y", F, [3, 7, 4])],
                      [const("a", I64, 1)]),
                {"x": floats(rng, [3, 7, 4])}, set())
    c["cumsum_neg_axis_i32"] = (
        model([node("CumSum", ["x", "a"], ["y"])],
              [vi("x", F, [2, 50])], [vi("y", F, [2, 50])], [const("a", I32, [-1])]),
        {"x": floats(rng, [2, 50])}, set())
    c["cumsum_int64"] = (
        model([node("CumSum", ["x", "a"], ["y"], exclusive=1)],
              [vi("x", I64, [2, 6])], [vi("y", I64, [2, 6])], [const("a", I64, 0)]),
        {"x": rng.integers(-9, 9, [2, 6]).astype(np.int64)}, {"y"})
    # ScatterND: replace with negative indices (opset 11), add and mul with
    # repeated tuples (16), max/min (18), run-time indices, integer data.
    c["scatter_nd_none"] = (
        model([node("ScatterND", ["x", "i", "u"], ["y"])],
              [vi("x", F, [4, 5, 3]), vi("u", F, [3, 3])], [vi("y", F, [4, 5, 3])],
              [const("i", I64, [[0, 1], [-1, -1], [2, 0]])], opset=11),
        {"x": floats(rng, [4, 5, 3]), "u": floats(rng, [3, 3])}, {"y"})
    for reduction, opset in [("add", 16), ("mul", 16), ("max", 18), ("min", 18)]:
        c[f"scatter_nd_{reduction}"] = (
            model([node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
                  [vi("x", F, [5, 4]), vi("i", I64, [4, 1]), vi("u", F, [4, 4])],
                  [vi("y", F, [5, 4])], opset=opset),
            {"x": floats(rng, [5, 4]), "i": np.array([[1], [-1], [1], [0]], np.int64),
             "u": floats(rng, [4, 4])}, set())
    c["scatter_nd_int_full_tuple"] = (
        model([node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
              [vi("x", I64, [3, 4]), vi("u", I64, [3])], [vi("y", I64, [3, 4])],
              [const("i", I64, [[0, 0], [2, -1], [0, 0]])], opset=16),
        {"x": rng.integers(-9, 9, [3, 4]).astype(np.int64),
         "u": rng.integers(-9, 9, [3]).astype(np.int64)}, {"y"})
    # ReduceProd: axes attribute (13), axes input (18), all axes, no axes
    # with noop_with_empty_axes, keepdims 0.
    c["reduce_prod_axes_attr"] = (
        model([node("ReduceProd", ["x"], ["y"], axes=[-1], keepdims=0)],
              [vi("x", F, [3, 4, 5])], [vi("y", F, [3, 4])], opset=13),
        {"x": floats(rng, [3, 4, 5]) * 0.5 + 1.0}, set())
    c["reduce_prod_axes_input"] = (
        model([node("ReduceProd", ["x", "a"], ["y"])],
              [vi("x", F, [3, 4, 5])], [vi("y", F, [1, 4, 1])],
              [const("a", I64, [0, 2])], opset=18),
        {"x": floats(rng, [3, 4, 5]) * 0.5 + 1.0}, set())
    c["reduce_prod_all"] = (
        model([node("ReduceProd", ["x"], ["y"], keepdims=0)],
              [vi("x", F, [2, 3])], [vi("y", F, [])], opset=18),
        {"x": floats(rng, [2, 3])}, set())
    c["reduce_prod_noop"] = (
        model([node("ReduceProd", ["x"], ["y"], noop_with_empty_axes=1)],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=18),
        {"x": floats(rng, [2, 3])}, {"y"})
    return c


def unsorted_topk(rng):
    """sorted=0: ONNX leaves the order free; compared as sets per row."""
    return (model([node("TopK", ["x", "k"], ["v", "i"], sorted=0)],
                  [vi("x", F, [3, 8])], [vi("v", F, [3, 4]), vi("i", I64, [3, 4])],
                  [const("k", I64, [4])]),
            {"x": floats(rng, [3, 8])})


def compare(got, want, exact):
    """Why got differs from want, or None."""
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, want {want.dtype}"
    if exact or not np.issubdtype(want.dtype, np.floating):
        return None if np.array_equal(got, want) else \
            f"values {got.ravel().tolist()}, want {want.ravel().tolist()}"
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max(initial=0.0)) / scale
    return None if err <= 1e-5 else f"max_rel {err:.3e}"


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, label, why):
        print(f"{'FAIL' if why else 'ok  '} {label}" + (f": {why}" if why else ""))
        self.failed += why is not None
        self.passed += why is None


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def mixprec_runs(mixprec, path, case, inputs):
    """(label, exit, stderr, output dir) per way of running the model."""
    flags = sum((["--input", f"{n}={case}/{n}.npy"] for n in inputs), [])
    mpk = os.path.join(case, "model.mpk")
    compiled = run([mixprec, "compile", path, "--precision", "fp32", "-o", mpk])
    runs = [("interpreter", [path, "--backend", "interpreter"]),
            ("cpu", [path, "--backend", "cpu", "--precision", "fp32"]),
            ("mpk", [mpk, "--backend", "cpu"])]
    for label, args in runs:
        out = os.path.join(case, label)
        shutil.rmtree(out, ignore_errors=True)
        if label == "mpk" and compiled.returncode != 0:
            yield label, compiled.returncode, compiled.stderr, out
            continue
        r = run([mixprec, "run"] + args + flags + ["--output-dir", out])
        yield label, r.returncode, r.stderr, out


def reference(path, inputs):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs)))


def save_case(work, name, m, inputs):
    case = os.path.join(work, name)
    os.makedirs(case, exist_ok=True)
    path = os.path.join(case, "model.onnx")
    onnx.save(m, path)
    for n, a in inputs.items():
        np.save(os.path.join(case, n + ".npy"), a)
    return case, path


def check_values(args, checks, rng):
    for name, (m, inputs, exact) in cases(rng).items():
        case, path = save_case(args.work, name, m, inputs)
        want = reference(path, inputs)
        for label, code, err, out in mixprec_runs(args.mixprec, path, case, inputs):
            for output, expected in want.items():
                file = os.path.join(out, output + ".npy")
                why = f"exit {code}: {err.strip()}" if code != 0 else \
                    compare(np.load(file), expected, output in exact) if os.path.exists(file) \
                    else "no " + file
                checks.report(f"{name}:{output} [{label}]", why)
        # bf16: the module computes what the interpreter computes, bit for bit.
        flags = sum((["--input", f"{n}={case}/{n}.npy"] for n in inputs), [])
        outs = {}
        for backend in ("interpreter", "cpu"):
            outs[backend] = os.path.join(case, "bf16-" + backend)
            r = run([args.mixprec, "run", path, "--backend", backend, "--precision", "bf16",
                     "--output-dir", outs[backend]] + flags)
            if r.returncode != 0:
                checks.report(f"{name} [bf16 {backend}]", f"exit {r.returncode}: {r.stderr}")
                break
        else:
            for output in want:
                a = np.load(os.path.join(outs["interpreter"], output + ".npy"))
                b = np.load(os.path.join(outs["cpu"], output + ".npy"))
                same = a.shape == b.shape and a.tobytes() == b.tobytes()
                checks.report(f"{name}:{output} [bf16 cpu = interpreter]",
                              None if same else "differ")
    # TopK sorted=0: the same set of values per row.
    m, inputs = unsorted_topk(rng)
    case, path = save_case(args.work, "topk_unsorted", m, inputs)
    want = reference(path, inputs)
    for label, code, err, out in mixprec_runs(args.mixprec, path, case, inputs):
        why = f"exit {code}: {err.strip()}" if code != 0 else None
        if not why:
            got = np.sort(np.load(os.path.join(out, "v.npy")), axis=1)
            why = compare(got, np.sort(want["v"], axis=1), True)
        checks.report(f"topk_unsorted:v [{label}]", why)


def check_errors(args, checks):
    """Bad inputs: one-line errors naming the op or node, exit 1, no output."""
    bad_index = {
        "gather_elements": (
            model([node("GatherElements", ["x", "i"], ["y"], axis=1)],
                  [vi("x", F, [2, 5]), vi("i", I64, [2, 2])], [vi("y", F, [2, 2])]),
            {"x": np.zeros([2, 5], np.float32), "i": np.array([[0, 1], [5, 0]], np.int64)},
            "index 5 (element 2 of the indices) is out of range for dim 1 of size 5"),
        "gather_nd": (
            model([node("GatherND", ["x", "i"], ["y"])],
                  [vi("x", F, [3, 4]), vi("i", I64, [2, 2])], [vi("y", F, [2])]),
            {"x": np.zeros([3, 4], np.float32), "i": np.array([[0, 1], [2, -5]], np.int64)},
            "index -5 (element 3 of the indices) is out of range for dim 1 of size 4"),
        "scatter_nd": (
            model([node("ScatterND", ["x", "i", "u"], ["y"])],
                  [vi("x", F, [3, 4]), vi("i", I64, [2, 1]), vi("u", F, [2, 4])],
                  [vi("y", F, [3, 4])]),
            {"x": np.zeros([3, 4], np.float32), "i": np.array([[1], [3]], np.int64),
             "u": np.ones([2, 4], np.float32)},
            "index 3 (element 1 of the indices) is out of range for dim 0 of size 3"),
    }
    for name, (m, inputs, message) in bad_index.items():
        case, path = save_case(args.work, "bad_" + name, m, inputs)
        for label, code, err, out in mixprec_runs(args.mixprec, path, case, inputs):
            lines = err.strip().splitlines()
            why = None
            if code != 1:
                why = f"exit {code}, want 1"
            elif not lines or not lines[0].startswith("mixprec: error: ") or \
                    message not in lines[0] or "n_" + name.replace("_", "") not in lines[0]:
                why = f"stderr {err.strip()!r}"
            elif os.path.exists(os.path.join(out, "y.npy")):
                why = "wrote y.npy"
            checks.report(f"bad_{name} [{label}]", why)

    import_errors = {
        "gather_elements_const_index": (
            model([node("GatherElements", ["x", "i"], ["y"], axis=0)],
                  [vi("x", F, [2, 3])], [vi("y", F, [1, 3])], [const("i", I64, [[0, 2, 1]])]),
            "node 'n_gatherelements' (GatherElements): index 2 (element 1 of the indices) "
            "is out of range for a dim of size 2"),
        "topk_k_too_large": (
            model([node("TopK", ["x", "k"], ["v", "i"])],
                  [vi("x", F, [2, 3])], [vi("v", F, [2, 4]), vi("i", I64, [2, 4])],
                  [const("k", I64, [4])]),
            "node 'n_topk' (TopK): k 4 is out of range [0, 3] for axis 1 of [2, 3]"),
        "cumsum_axis_not_constant": (
            model([node("CumSum", ["x", "a"], ["y"])],
                  [vi("x", F, [2, 3]), vi("a", I64, [])], [vi("y", F, [2, 3])]),
            "node 'n_cumsum' (CumSum): input 'axis'"),
        "scatter_nd_max_before_opset18": (
            model([node("ScatterND", ["x", "i", "u"], ["y"], reduction="max")],
                  [vi("x", F, [3, 4]), vi("u", F, [1, 4])], [vi("y", F, [3, 4])],
                  [const("i", I64, [[1]])], opset=16),
            "node 'n_scatternd' (ScatterND): attribute 'reduction' 'max' is not one of none, "
            "add, mul (max and min from opset 18)"),
        "scatter_nd_updates_shape": (
            model([node("ScatterND", ["x", "i", "u"], ["y"])],
                  [vi("x", F, [3, 4]), vi("u", F, [1, 3])], [vi("y", F, [3, 4])],
                  [const("i", I64, [[1]])]),
            "node 'n_scatternd' (ScatterND): updates ('u') have shape [1, 3], the indices "
            "address [1, 4]"),
        "argmax_axis_out_of_range": (
            model([node("ArgMax", ["x"], ["y"], axis=2)],
                  [vi("x", F, [2, 3])], [vi("y", I64, [2, 3])]),
            "node 'n_argmax' (ArgMax): attribute 'axis'"),
    }
    for name, (m, message) in import_errors.items():
        case = os.path.join(args.work, "bad_" + name)
        os.makedirs(case, exist_ok=True)
        path = os.path.join(case, "model.onnx")
        onnx.save(m, path)
        r = run([args.mixprec, "import", path])
        lines = r.stderr.strip().splitlines()
        why = None
        if r.returncode != 1:
            why = f"exit {r.returncode}, want 1"
        elif not lines or message not in lines[0]:
            why = f"stderr {r.stderr.strip()!r}"
        checks.report(f"bad_{name} [import]", why)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    checks = Checks()
    check_values(args, checks, np.random.default_rng(10))
    check_errors(args, checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
