#!/usr/bin/env python3
"""Robustness: mutated models and inputs through import, compile and run.

Usage:
    run_robustness.py --mixprec BIN --models DIR [--cases N] [--seed S]
                      [--jobs J] [--keep DIR] [--only ID ...] [--list]

DIR is a gen_models.py directory (its manifest.json lists the models and
their input files). From --seed, each case i (0 <= i < N) draws, with its
own generator seeded by (S, i), one model of DIR, one precision and one
mutation: of the serialized protobuf (flipped, truncated or inserted
bytes), of the graph (an input's dims or dtype, an initializer's dims, an
attribute's value or type, a node's inputs or op type, the opset, a
graph output, dropped or repeated nodes) or of an input array (wrong
shape or dtype, NaN/Inf/huge/subnormal values, a damaged or unusual .npy
file: truncated, big-endian, Fortran order). Then, in the case's folder:

    BIN import model.onnx -o model.mlir
    BIN compile model.onnx --precision P -o model.mpk
    BIN run model.mpk --backend cpu --input NAME=FILE... --output-dir m
    BIN run model.onnx --backend interpreter --precision P --input ... --output-dir i

(compile and the runs are skipped when import refuses the model: they load
it with the same importer). Every command must either exit 0 or fail
cleanly: exit status 1 or 2 with exactly one line on stderr, starting
"mixprec: error: ". A signal, an exit status >= 128, a timeout, or any of
"LLVM ERROR", "Assertion", "Sanitizer", "Segmentation", "terminate called"
on stderr is a failure. When both runs exit 0 they must write the same
output files, of the same shape and dtype, with NaN and +-Inf at the same
places and max|module - interpreter| / max|interpreter| over the finite
values within the README's module-vs-interpreter bound for P (fp32 1e-5,
bf16 3e-2, fp16 5e-3, fp8 0.2). When only one run exits 0 the case is
counted as a disagreement and listed (not a failure: each command is
judged on its own).

Left out of the case set (drawn again): mutations that put a finite weight
above 1e15 in magnitude into the model. Through a LayerNormalization such
values overflow the FP32 statistics of the runtime (as in onnxruntime: the
row normalizes to 0) but not the interpreter's double ones, so the two
disagree; a known difference between them, not a crash.

Prints one line per failing case (its id, model, mutation and the command
at fault), the disagreements, the counts of clean errors per command and of
cases whose outputs were compared, then "N cases: N passed, N failed";
exits 1 on any failure. --list prints
the cases without running them; --only runs the given case ids; --keep DIR
keeps every case's folder (model, inputs, outputs) under DIR.
"""

import argparse
import concurrent.futures
import copy
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BOUNDS = {"fp32": 1e-5, "bf16": 3e-2, "fp16": 5e-3, "fp8": 0.2}
CRASH_MARKERS = ("LLVM ERROR", "Assertion", "Sanitizer", "Segmentation", "terminate called")
TIMEOUT_S = 120
HUGE_WEIGHT = 1e15

# Op types the importer supports: swapped in for others.
OP_TYPES = ["MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "Tanh", "Sigmoid",
            "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "Neg", "Gelu", "Softmax", "LogSoftmax",
            "LayerNormalization", "BatchNormalization", "ReduceSum", "ReduceMean", "ReduceMax",
            "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Transpose", "Concat", "Slice",
            "Gather", "Where", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
            "GlobalMaxPool", "Cast", "Constant", "Identity", "Dropout", "Shape", "Hardmax"]
INT_VALUES = [-2**63, -2**31, -5, -2, -1, 0, 1, 2, 3, 7, 64, 2**31, 2**62, 2**63 - 1]
FLOAT_VALUES = [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e-30, 1e30, 3.0e38, 0.5]
DIM_VALUES = [0, 1, 2, 3, 5, 7, 16, 64, 300, -1, 2**62]
DTYPES = [TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.DOUBLE,
          TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.STRING, TensorProto.UNDEFINED,
          TensorProto.BFLOAT16, 99]


class Case:
    """One mutated model and its inputs, all in memory until written."""

    def __init__(self, index, model_name, precision):
        self.index = index
        self.model_name = model_name
        self.precision = precision
        self.model_bytes = None      # serialized (possibly damaged) model
        self.inputs = {}             # input name -> .npy file bytes
        self.what = ""               # the mutation, in words

    @property
    def id(self):
        return f"c{self.index:04d}"


# ---------------------------------------------------------------------------
# Mutations of the model (each returns a description, or None if it does not
# apply to this model and another should be drawn)
# ---------------------------------------------------------------------------

def mutate_bytes(rng, model, case):
    """Flips, cuts or inserts bytes of the serialized model."""
    data = bytearray(model.SerializeToString())
    kind = rng.choice(["flip", "truncate", "insert"])
    if kind == "flip":
        spots = sorted(rng.randrange(len(data)) for _ in range(rng.randint(1, 4)))
        for s in spots:
            data[s] ^= rng.randint(1, 255)
        case.model_bytes = bytes(data)
        return f"bytes: flipped at {spots}"
    if kind == "truncate":
        cut = rng.randrange(len(data))
        case.model_bytes = bytes(data[:cut])
        return f"bytes: truncated to {cut} of {len(data)}"
    at = rng.randrange(len(data) + 1)
    extra = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    case.model_bytes = bytes(data[:at] + extra + data[at:])
    return f"bytes: inserted {extra.hex()} at {at}"


def mutate_input_dims(rng, model, case):
    """Changes, adds, drops or names a dim of a graph input."""
    vi = rng.choice(list(model.graph.input))
    dims = vi.type.tensor_type.shape.dim
    if not dims:
        return None
    kind = rng.choice(["value", "value", "add", "drop", "param"])
    if kind == "value":
        d = rng.randrange(len(dims))
        v = rng.choice(DIM_VALUES)
        dims[d].dim_value = v
        return f"input {vi.name!r} dim {d} := {v}"
    if kind == "add":
        dims.add().dim_value = rng.choice([1, 2, 3])
        return f"input {vi.name!r} gets an extra dim"
    if kind == "drop":
        del dims[rng.randrange(len(dims))]
        return f"input {vi.name!r} loses a dim"
    d = rng.randrange(len(dims))
    dims[d].dim_param = "batch"
    return f"input {vi.name!r} dim {d} := symbolic"


def mutate_input_dtype(rng, model, case):
    """Gives a graph input another element type."""
    vi = rng.choice(list(model.graph.input))
    t = rng.choice(DTYPES)
    vi.type.tensor_type.elem_type = t
    return f"input {vi.name!r} elem_type := {t}"


def mutate_initializer(rng, model, case):
    """Changes an initializer's dims or data type, or removes it."""
    inits = list(model.graph.initializer)
    if not inits:
        return None
    t = rng.choice(inits)
    kind = rng.choice(["dim", "reverse", "dtype", "drop"])
    if kind == "dim" and len(t.dims):
        d = rng.randrange(len(t.dims))
        t.dims[d] = rng.choice(DIM_VALUES)
        return f"initializer {t.name!r} dim {d} := {t.dims[d]}"
    if kind == "reverse" and len(t.dims) > 1:
        dims = list(t.dims)[::-1]
        del t.dims[:]
        t.dims.extend(dims)
        return f"initializer {t.name!r} dims reversed to {dims}"
    if kind == "dtype":
        t.data_type = rng.choice([TensorProto.INT64, TensorProto.INT32, TensorProto.FLOAT16,
                                  TensorProto.DOUBLE, TensorProto.UINT8, TensorProto.BOOL])
        return f"initializer {t.name!r} data_type := {t.data_type}"
    model.graph.initializer.remove(t)
    return f"initializer {t.name!r} removed"


def nodes_with_attributes(model):
    """The nodes that carry attributes."""
    return [n for n in model.graph.node if n.attribute]


def mutate_attribute_value(rng, model, case):
    """Gives an attribute an edge value of its type."""
    nodes = nodes_with_attributes(model)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(list(n.attribute))
    A = onnx.AttributeProto
    if a.type == A.INT:
        a.i = rng.choice(INT_VALUES)
        return f"node {n.name!r} ({n.op_type}) {a.name} := {a.i}"
    if a.type == A.FLOAT:
        a.f = rng.choice(FLOAT_VALUES)
        return f"node {n.name!r} ({n.op_type}) {a.name} := {a.f}"
    if a.type == A.INTS:
        vals = list(a.ints)
        kind = rng.choice(["set", "drop", "append"])
        if kind == "set" and vals:
            vals[rng.randrange(len(vals))] = rng.choice(INT_VALUES)
        elif kind == "drop" and vals:
            vals.pop(rng.randrange(len(vals)))
        else:
            vals.append(rng.choice(INT_VALUES))
        del a.ints[:]
        a.ints.extend(vals)
        return f"node {n.name!r} ({n.op_type}) {a.name} := {vals}"
    if a.type == A.STRING:
        a.s = rng.choice([b"", b"SAME", b"tanh", b"VALID", b"\n\xff"])
        return f"node {n.name!r} ({n.op_type}) {a.name} := {a.s!r}"
    if a.type == A.TENSOR:
        dims = list(a.t.dims)
        a.t.dims.append(2)
        return f"node {n.name!r} ({n.op_type}) {a.name} tensor dims {dims} + [2]"
    return None


def mutate_attribute_kind(rng, model, case):
    """Retypes, repeats or removes an attribute, or adds an unknown one."""
    nodes = list(model.graph.node)
    n = rng.choice(nodes)
    kind = rng.choice(["retype", "unknown", "duplicate", "remove"])
    if kind == "unknown" or not n.attribute:
        n.attribute.extend([helper.make_attribute("bogus", 1)])
        return f"node {n.name!r} ({n.op_type}) gets attribute bogus=1"
    a = rng.choice(list(n.attribute))
    if kind == "duplicate":
        n.attribute.extend([copy.deepcopy(a)])
        return f"node {n.name!r} ({n.op_type}) attribute {a.name} twice"
    if kind == "remove":
        n.attribute.remove(a)
        return f"node {n.name!r} ({n.op_type}) attribute {a.name} removed"
    A = onnx.AttributeProto
    new_type = rng.choice([A.INT, A.FLOAT, A.INTS, A.STRING, A.FLOATS])
    a.type = new_type
    if new_type == A.INT:
        a.i = 1
    elif new_type == A.FLOAT:
        a.f = 1.0
    elif new_type == A.STRING:
        a.s = b"1"
    return f"node {n.name!r} ({n.op_type}) attribute {a.name} type := {new_type}"


def mutate_node_inputs(rng, model, case):
    """Drops, repeats, empties or replaces a node's input."""
    n = rng.choice(list(model.graph.node))
    names = [i.name for i in model.graph.input] + [t.name for t in model.graph.initializer]
    for m in model.graph.node:
        if m is n:
            break
        names += list(m.output)
    kind = rng.choice(["drop", "repeat", "replace", "empty"])
    ins = list(n.input)
    if kind == "drop" and ins:
        ins.pop(rng.randrange(len(ins)))
    elif kind == "replace" and ins and names:
        ins[rng.randrange(len(ins))] = rng.choice(names)
    elif kind == "empty" and ins:
        ins[rng.randrange(len(ins))] = ""
    else:
        ins.append(rng.choice(ins) if ins else (rng.choice(names) if names else "x"))
        kind = "repeat"
    del n.input[:]
    n.input.extend(ins)
    return f"node {n.name!r} ({n.op_type}) inputs {kind}: {ins}"


def mutate_op_type(rng, model, case):
    """Swaps a node's op type for another (supported or not)."""
    n = rng.choice(list(model.graph.node))
    old = n.op_type
    n.op_type = rng.choice(OP_TYPES)
    return f"node {n.name!r} op type {old} := {n.op_type}"


def mutate_opset(rng, model, case):
    """Moves the default-domain opset, to 29 at most."""
    v = rng.choice([1, 5, 6, 7, 9, 10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 28, 29])
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = v
    return f"opset := {v}"


def mutate_output(rng, model, case):
    """Changes a graph output's declared type, or adds, repeats or drops one."""
    kind = rng.choice(["dtype", "shape", "intermediate", "duplicate", "input", "drop"])
    outs = model.graph.output
    if kind == "dtype":
        o = rng.choice(list(outs))
        o.type.tensor_type.elem_type = rng.choice(DTYPES)
        return f"output {o.name!r} elem_type := {o.type.tensor_type.elem_type}"
    if kind == "shape":
        o = rng.choice(list(outs))
        dims = o.type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = rng.choice(DIM_VALUES)
        return f"output {o.name!r} declared shape changed"
    if kind == "intermediate":
        n = rng.choice(list(model.graph.node))
        if not n.output or not n.output[0]:
            return None
        outs.add().name = n.output[0]
        return f"output {n.output[0]!r} (an intermediate) added"
    if kind == "duplicate":
        outs.add().CopyFrom(rng.choice(list(outs)))
        return f"output {outs[-1].name!r} listed twice"
    if kind == "input":
        i = rng.choice(list(model.graph.input))
        outs.add().CopyFrom(i)
        return f"graph input {i.name!r} is also an output"
    if len(outs) < 2:
        return None
    del outs[rng.randrange(len(outs))]
    return "an output dropped"


def mutate_nodes(rng, model, case):
    """Removes, repeats or swaps nodes."""
    nodes = model.graph.node
    kind = rng.choice(["drop", "repeat", "swap"])
    i = rng.randrange(len(nodes))
    if kind == "drop":
        name = nodes[i].name
        del nodes[i]
        return f"node {name!r} removed"
    if kind == "repeat":
        nodes.add().CopyFrom(nodes[i])
        return f"node {nodes[i].name!r} repeated at the end"
    j = rng.randrange(len(nodes))
    a, b = copy.deepcopy(nodes[i]), copy.deepcopy(nodes[j])
    nodes[i].CopyFrom(b)
    nodes[j].CopyFrom(a)
    return f"nodes #{i} and #{j} swapped"


MODEL_MUTATIONS = [
    (mutate_bytes, 4), (mutate_input_dims, 2), (mutate_input_dtype, 1), (mutate_initializer, 2),
    (mutate_attribute_value, 3), (mutate_attribute_kind, 2), (mutate_node_inputs, 2),
    (mutate_op_type, 2), (mutate_opset, 1), (mutate_output, 2), (mutate_nodes, 1),
]


# ---------------------------------------------------------------------------
# Mutations of an input array (return a description; set case.inputs[name])
# ---------------------------------------------------------------------------

def npy_bytes(array, fortran=False):
    """The .npy file of `array` (in Fortran order when asked)."""
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asfortranarray(array) if fortran else array,
                              allow_pickle=False)
    return buf.getvalue()


def mutate_array(rng, nrng, name, base, case):
    """Gives input `name` odd values, a wrong shape or dtype, or a damaged file."""
    kind = rng.choice(["nan_inf", "nan_inf", "extreme", "shape", "dtype", "file",
                       "fortran", "big_endian"])
    a = base.copy()
    if kind == "nan_inf" and a.dtype.kind == "f" and a.size:
        flat = a.reshape(-1)
        picks = nrng.choice(a.size, size=min(a.size, int(nrng.integers(1, 4))), replace=False)
        vals = nrng.choice([np.nan, np.inf, -np.inf], size=len(picks))
        flat[picks] = vals
        case.inputs[name] = npy_bytes(a)
        return f"input {name!r}: {len(picks)} of NaN/+Inf/-Inf"
    if kind == "extreme" and a.dtype.kind == "f":
        v = rng.choice([1e30, -1e30, 3.0e38, 1e-40, 0.0, 65504.0, 448.0])
        a[...] = np.float32(v) * np.sign(a + 0.5).astype(np.float32)
        case.inputs[name] = npy_bytes(a)
        return f"input {name!r}: every value +-{v}"
    if kind == "extreme":  # integer input (token ids)
        v = rng.choice([-1, 96, 2**31, 2**62, -2**63])
        a.reshape(-1)[0] = v
        case.inputs[name] = npy_bytes(a)
        return f"input {name!r}: element 0 := {v}"
    if kind == "shape":
        shape = list(a.shape)
        choice = rng.choice(["dim", "add", "drop", "empty"])
        if choice == "dim" and shape:
            shape[rng.randrange(len(shape))] += rng.choice([-1, 1, 5])
        elif choice == "add":
            shape.append(1)
        elif choice == "drop" and shape:
            shape.pop()
        else:
            shape = [0] + shape[1:] if shape else [0]
        shape = [max(d, 0) for d in shape]
        b = np.resize(a, shape) if np.prod(shape) else np.zeros(shape, a.dtype)
        case.inputs[name] = npy_bytes(b)
        return f"input {name!r}: shape {list(a.shape)} -> {shape}"
    if kind == "dtype":
        t = rng.choice(["float64", "float16", "int64", "int32", "int8", "uint8", "bool",
                        "complex64", "uint64", "<U3"])
        b = a.astype(t) if t != "<U3" else a.astype(str).astype("<U3")
        case.inputs[name] = npy_bytes(b)
        return f"input {name!r}: dtype {a.dtype} -> {t}"
    if kind == "fortran" and a.ndim >= 2:
        case.inputs[name] = npy_bytes(a, fortran=True)
        return f"input {name!r}: Fortran order"
    if kind == "big_endian":
        case.inputs[name] = npy_bytes(a.astype(a.dtype.newbyteorder(">")))
        return f"input {name!r}: big-endian"
    data = bytearray(npy_bytes(a))
    choice = rng.choice(["truncate", "header", "flip"])
    if choice == "truncate":
        cut = rng.randrange(len(data))
        case.inputs[name] = bytes(data[:cut])
        return f"input {name!r}: .npy truncated to {cut} of {len(data)} bytes"
    spot = rng.randrange(10, 64) if choice == "header" else rng.randrange(len(data))
    data[spot] ^= rng.randint(1, 255)
    case.inputs[name] = bytes(data)
    return f"input {name!r}: .npy byte {spot} flipped"


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def load_models(models_dir):
    """[(name, model bytes, {input name: array})] of the manifest."""
    manifest = json.load(open(os.path.join(models_dir, "manifest.json")))
    models = []
    for entry in manifest["models"]:
        with open(os.path.join(models_dir, entry["model"]), "rb") as f:
            data = f.read()
        inputs = {i["name"]: np.load(os.path.join(models_dir, i["file"]))
                  for i in entry["inputs"]}
        models.append((entry["name"], data, inputs))
    return models


def has_huge_weight(model_bytes):
    """Whether the model parses and holds a finite float weight above HUGE_WEIGHT."""
    try:
        model = onnx.load_model_from_string(model_bytes)
        for t in model.graph.initializer:
            if t.data_type == TensorProto.FLOAT and t.data_location != TensorProto.EXTERNAL:
                w = numpy_helper.to_array(t).astype(np.float64)
                if np.any(np.isfinite(w) & (np.abs(w) > HUGE_WEIGHT)):
                    return True
    except Exception:  # noqa: BLE001 - unparsable or inconsistent: not huge
        return False
    return False


def make_case(index, seed, models):
    """Case `index` of the set drawn from `seed`."""
    rng = random.Random(seed * 1_000_003 + index)
    nrng = np.random.default_rng([seed, index])
    name, data, inputs = models[rng.randrange(len(models))]
    case = Case(index, name, rng.choice(list(BOUNDS)))
    case.inputs = {n: npy_bytes(a) for n, a in inputs.items()}
    if rng.random() >= 0.65:
        case.model_bytes = data
        input_name = rng.choice(sorted(inputs))
        case.what = mutate_array(rng, nrng, input_name, inputs[input_name], case)
        return case
    funcs, weights = zip(*MODEL_MUTATIONS)
    for _ in range(100):
        model = onnx.load_model_from_string(data)
        case.model_bytes = None
        func = rng.choices(funcs, weights)[0]
        case.what = func(rng, model, case)
        if not case.what:
            continue
        if case.model_bytes is None:
            case.model_bytes = model.SerializeToString()
        if not has_huge_weight(case.model_bytes):
            return case
    raise RuntimeError(f"case {index}: no mutation applies to {name}")


def run_cmd(argv, cwd):
    """(exit status or None on timeout, stderr) of argv run in cwd."""
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stderr


def judge(rc, err):
    """'' for exit 0 or a clean error, else what is wrong."""
    if rc is None:
        return f"timed out after {TIMEOUT_S} s"
    markers = [m for m in CRASH_MARKERS if m in err]
    if markers:
        return f"stderr contains {markers[0]!r}"
    if rc == 0:
        return ""
    if rc < 0 or rc >= 128:
        return f"killed by a signal (status {rc})"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc not in (1, 2):
        return f"exit status {rc}"
    if len(lines) != 1:
        return f"{len(lines)} lines on stderr (expected one)"
    if not lines[0].startswith("mixprec: error: "):
        return "stderr does not start with 'mixprec: error: '"
    return ""


def compare_outputs(dir_m, dir_i, bound):
    """'' when the module's outputs equal the interpreter's within `bound`."""
    files_m = sorted(f for f in os.listdir(dir_m) if f.endswith(".npy"))
    files_i = sorted(f for f in os.listdir(dir_i) if f.endswith(".npy"))
    if files_m != files_i:
        return f"output files differ: module {files_m}, interpreter {files_i}"
    for f in files_m:
        a = np.load(os.path.join(dir_m, f))
        b = np.load(os.path.join(dir_i, f))
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{f}: module {a.dtype}{list(a.shape)}, interpreter {b.dtype}{list(b.shape)}"
        if a.dtype.kind != "f":
            if not np.array_equal(a, b):
                return f"{f}: integer outputs differ"
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        for what, mask in (("NaN", np.isnan), ("+Inf", np.isposinf), ("-Inf", np.isneginf)):
            if not np.array_equal(mask(a64), mask(b64)):
                return (f"{f}: {what} at different places (module {int(mask(a64).sum())}, "
                        f"interpreter {int(mask(b64).sum())})")
        finite = np.isfinite(b64)
        if finite.any():
            scale = max(float(np.max(np.abs(b64[finite]))), 1e-30)
            rel = float(np.max(np.abs(a64[finite] - b64[finite]))) / scale
            if not rel <= bound:
                return f"{f}: max_rel {rel:.3e} > bound {bound:.0e}"
    return ""


def run_case(case, args, root):
    """Runs one case; returns (failures, clean-error commands, disagreement,
    whether the two runs' outputs were compared)."""
    d = os.path.join(root, case.id)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model_bytes)
    input_flags = []
    for name, data in sorted(case.inputs.items()):
        fname = f"in{len(input_flags) // 2}.npy"
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)
        input_flags += ["--input", f"{name}={fname}"]
    mixprec = args.mixprec
    steps = [
        ("import", [mixprec, "import", "model.onnx", "-o", "model.mlir"]),
        ("compile", [mixprec, "compile", "model.onnx", "--precision", case.precision,
                     "-o", "model.mpk"]),
        ("run-module", [mixprec, "run", "model.mpk", "--backend", "cpu", "--output-dir", "m"]
         + input_flags),
        ("run-interpreter", [mixprec, "run", "model.onnx", "--backend", "interpreter",
                             "--precision", case.precision, "--output-dir", "i"]
         + input_flags),
    ]
    failures, errors, status = [], [], {}
    for step, argv in steps:
        if step != "import" and status.get("import") != 0:
            break  # the same importer would refuse it again
        if step == "run-module" and status.get("compile") != 0:
            status[step] = None
            continue
        rc, err = run_cmd(argv, d)
        status[step] = rc
        problem = judge(rc, err)
        if problem:
            last = err.strip().splitlines()[-1] if err.strip() else ""
            failures.append(f"{step}: {problem}: `mixprec {' '.join(argv[1:])}` | {last[:200]}")
        elif rc != 0:
            errors.append(step)
    disagreement = ""
    rm, ri = status.get("run-module"), status.get("run-interpreter")
    compared = rm == 0 and ri == 0
    if compared:
        problem = compare_outputs(os.path.join(d, "m"), os.path.join(d, "i"),
                                  BOUNDS[case.precision])
        if problem:
            failures.append(f"module vs interpreter at {case.precision}: {problem}")
    elif status.get("compile") == 0 and (rm == 0) != (ri == 0) and None not in (rm, ri):
        disagreement = f"run-module exit {rm}, run-interpreter exit {ri}"
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return failures, errors, disagreement, compared


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", required=True, help="path to the mixprec binary")
    ap.add_argument("--models", required=True, help="gen_models.py output directory")
    ap.add_argument("--cases", type=int, default=300, help="number of cases (default 300)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the case set (default 1)")
    ap.add_argument("--jobs", type=int, default=2, help="cases run in parallel (default 2)")
    ap.add_argument("--keep", metavar="DIR", help="keep every case's folder under DIR")
    ap.add_argument("--only", nargs="+", metavar="ID", help="run only these case ids (c0042)")
    ap.add_argument("--list", action="store_true", help="print the cases, run nothing")
    args = ap.parse_args(argv)
    args.mixprec = os.path.abspath(args.mixprec)

    models = load_models(args.models)
    cases = [make_case(i, args.seed, models) for i in range(args.cases)]
    if args.only:
        cases = [c for c in cases if c.id in set(args.only)]
    if args.list:
        for c in cases:
            print(f"{c.id} {c.model_name}@{c.precision}: {c.what}")
        return 0

    root = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="mixprec-robust-")
    os.makedirs(root, exist_ok=True)
    failed, compared, disagreements, clean = 0, 0, [], {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = pool.map(lambda c: (c, run_case(c, args, root)), cases)
            for case, (failures, errors, disagreement, both_ran) in results:
                compared += both_ran
                label = f"{case.id} {case.model_name}@{case.precision}: {case.what}"
                for step in errors:
                    clean[step] = clean.get(step, 0) + 1
                if failures:
                    failed += 1
                    print(f"FAIL  {label}", flush=True)
                    for f in failures:
                        print(f"      {f}", flush=True)
                if disagreement:
                    disagreements.append(f"{label}: {disagreement}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    for d in disagreements:
        print(f"disagree  {d}")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(clean.items())) or "none"
    print(f"clean errors by command: {counts}; outputs compared in {compared} cases; "
          f"{len(disagreements)} disagreements")
    print(f"{len(cases)} cases: {len(cases) - failed} passed, {failed} failed")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
