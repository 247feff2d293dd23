#!/usr/bin/env python3
"""Generate the e2e models of the comparison, logic and math ops (issue 10).

Usage:
    gen_ew_models.py OUTDIR

Writes, in gen_models.py's layout (OUTDIR/NAME/{model.onnx,inputs,ref} and
OUTDIR/manifest.json, references from onnxruntime CPU at FP32):

  ew_logic   opset 17  x[4,32], y[32], ids[4,32] int64, mask[4,32] bool,
                       special[4,32] (NaN, +-inf among normals) ->
                       bool outputs of Equal/Less/LessOrEqual/Greater/
                       GreaterOrEqual (float, broadcast; int64), And/Or/Xor/
                       Not, IsNaN, IsInf (both, + only, - only, none); float
                       outputs of Where on run-time conditions computed in
                       the same kernel (the HF softmax guard
                       Where(IsNaN(s), 0, s)), Casts bool/int64 -> float and
                       float -> int64/int32/bool (int outputs compared exactly)
  ew_math    opset 18  x[4,32], y[4,32], z[32], runtime_lo[] -> Sin, Cos, Tan, Atan, Abs, Sign,
                       Floor, Ceil, Round, Max/Min (3 inputs, broadcast),
                       Sum, Mean, Mod(fmod=1), Clip (constant bounds, a
                       run-time bound, one bound), Softplus, HardSigmoid,
                       HardSwish, LeakyRelu, Elu, Selu, PRelu (slope [32]),
                       Mish, each one output
  ew_legacy  opset 10  x[4,32] -> Clip with min/max attributes (opset < 11),
                       Max with one input

and "error_cases": models that mixprec must refuse with a one-line error
naming the node (IsNaN on INT64, And on FLOAT, Mod fmod=0 on FLOAT, fmod=2,
IsInf detect_negative=2, a PRelu slope that would widen x, integer Mod at
run time).
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import GraphBuilder, write_case, write_manifest  # noqa: E402

IR = {10: 5, 17: 8, 18: 8}


def finish(g, opset, doc):
    model = g.make_model(17 if opset == 10 else opset, doc)
    model.opset_import[0].version = opset
    model.ir_version = IR[opset]
    return model


def build_logic():
    g = GraphBuilder("ew_logic", seed=101)
    rng = g.rng
    x = g.input("x", [4, 32])
    y = g.input("y", [32])
    ids = g.input("ids", [4, 32], np.int64)
    mask = g.input("mask", [4, 32], np.bool_)
    special = g.input("special", [4, 32])
    for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        g.node(op, [x, y], out=g.output(f"{op.lower()}_xy", [4, 32], np.bool_))
    g.node("Equal", [ids, g.i64("two", [2])], out=g.output("equal_ids", [4, 32], np.bool_))
    g.node("Less", [ids, g.i64("pos", np.arange(32) % 5)],
           out=g.output("less_ids", [4, 32], np.bool_))
    lt = g.node("Less", [x, y])
    g.node("And", [lt, mask], out=g.output("and", [4, 32], np.bool_))
    g.node("Or", [lt, mask], out=g.output("or", [4, 32], np.bool_))
    g.node("Xor", [lt, mask], out=g.output("xor", [4, 32], np.bool_))
    g.node("Not", [mask], out=g.output("not", [4, 32], np.bool_))
    g.node("IsNaN", [special], out=g.output("isnan", [4, 32], np.bool_))
    g.node("IsInf", [special], out=g.output("isinf", [4, 32], np.bool_))
    g.node("IsInf", [special], out=g.output("isposinf", [4, 32], np.bool_), detect_negative=0)
    g.node("IsInf", [special], out=g.output("isneginf", [4, 32], np.bool_), detect_positive=0)
    g.node("IsInf", [special], out=g.output("isinf_none", [4, 32], np.bool_),
           detect_negative=0, detect_positive=0)
    # Where on a condition computed in the same fused kernel.
    g.node("Where", [g.node("GreaterOrEqual", [x, y]), x, y],
           out=g.output("where_max", [4, 32]))
    # The HF softmax guard: a row of -inf gives NaN, which Where zeroes.
    masked = g.node("Add", [x, special])
    s = g.node("Softmax", [masked], axis=-1)
    g.node("Where", [g.node("IsNaN", [s]), g.f32("zero", 0.0), s],
           out=g.output("softmax_guard", [4, 32]))
    g.node("Cast", [mask], out=g.output("cast_bool_f32", [4, 32]), to=TensorProto.FLOAT)
    g.node("Cast", [ids], out=g.output("cast_i64_f32", [4, 32]), to=TensorProto.FLOAT)
    scaled = g.node("Mul", [x, g.f32("ten", 10.0)])
    g.node("Cast", [scaled], out=g.output("cast_f32_i64", [4, 32], np.int64),
           to=TensorProto.INT64)
    g.node("Cast", [g.node("Cast", [scaled], to=TensorProto.INT32)],
           out=g.output("cast_f32_i32_f32", [4, 32]), to=TensorProto.FLOAT)
    g.node("Cast", [g.node("Floor", [x])], out=g.output("cast_f32_bool", [4, 32], np.bool_),
           to=TensorProto.BOOL)
    model = finish(g, 17, "comparisons, logic, IsNaN/IsInf, Where on run-time "
                          "conditions, run-time Casts")
    xv = rng.standard_normal((4, 32)).astype(np.float32)
    yv = rng.standard_normal(32).astype(np.float32)
    xv[0, :8] = yv[:8]  # ties: Equal, LessOrEqual and GreaterOrEqual see them
    sv = rng.standard_normal((4, 32)).astype(np.float32)
    sv[0, 3] = np.nan
    sv[1, 5] = np.inf
    sv[2, 7] = -np.inf
    sv[3, :] = -np.inf  # a fully masked row: softmax NaN, the guard 0
    sv[2, 9] = np.nan
    inputs = {
        "x": xv,
        "y": yv,
        "ids": rng.integers(-3, 6, (4, 32)).astype(np.int64),
        "mask": rng.integers(0, 2, (4, 32)).astype(np.bool_),
        "special": sv,
    }
    return model, inputs


def build_math():
    g = GraphBuilder("ew_math", seed=102)
    rng = g.rng
    x = g.input("x", [4, 32])
    y = g.input("y", [4, 32])
    z = g.input("z", [32])
    unary = [("Sin", {}), ("Cos", {}), ("Tan", {}), ("Atan", {}), ("Abs", {}), ("Sign", {}), ("Floor", {}),
             ("Ceil", {}), ("Round", {}), ("Softplus", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
             ("HardSwish", {}), ("LeakyRelu", {"alpha": 0.07}), ("Elu", {"alpha": 0.8}),
             ("Selu", {}), ("Mish", {})]
    for op, attrs in unary:
        g.node(op, [x], out=g.output(op.lower(), [4, 32]), **attrs)
    g.node("HardSigmoid", [x], out=g.output("hardsigmoid_default", [4, 32]))
    g.node("Max", [x, y, z], out=g.output("max3", [4, 32]))
    g.node("Min", [x, z], out=g.output("min2", [4, 32]))
    g.node("Sum", [x, y, z], out=g.output("sum3", [4, 32]))
    g.node("Mean", [x, y, z], out=g.output("mean3", [4, 32]))
    g.node("Mod", [x, z], out=g.output("fmod", [4, 32]), fmod=1)
    g.node("Clip", [x, g.f32("lo", -0.5), g.f32("hi", 0.75)], out=g.output("clip", [4, 32]))
    g.node("Clip", [x, g.f32("zero", 0.0), g.f32("six", 6.0)], out=g.output("relu6", [4, 32]))
    g.node("Clip", [x, "", g.f32("hi2", 0.25)], out=g.output("clip_max_only", [4, 32]))
    g.node("Clip", [x, g.input("runtime_lo", [])], out=g.output("clip_runtime_min", [4, 32]))
    g.node("PRelu", [x, g.bias("slope", (32,), std=0.5)], out=g.output("prelu", [4, 32]))
    # A chain fused into one kernel: new functions one after another. (Not
    # sin or cos: NVRTC gives a long kernel with sinf a 32-byte stack frame,
    # its slow argument reduction, which cuda_kernels_nvrtc refuses; sin
    # and cos alone pass it.)
    c = g.node("Softplus", [g.node("Abs", [x])])
    c = g.node("Max", [g.node("Elu", [c], alpha=1.5), g.node("Round", [y])])
    g.node("Mish", [g.node("Selu", [c])], out=g.output("chain", [4, 32]))
    model = finish(g, 18, "math ops and activations, variadic Max/Min/Sum/Mean, Mod, Clip")
    xv = (rng.standard_normal((4, 32)) * 3).astype(np.float32)
    xv[0, :6] = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0]  # Round's halves go to even
    inputs = {
        "x": xv,
        "y": (rng.standard_normal((4, 32)) * 3).astype(np.float32),
        "runtime_lo": np.array(-0.3, dtype=np.float32),
        "z": (rng.uniform(0.5, 2.0, 32) * np.where(np.arange(32) % 2, 1, -1)).astype(np.float32),
    }
    return model, inputs


def build_legacy():
    g = GraphBuilder("ew_legacy", seed=103)
    x = g.input("x", [4, 32])
    g.node("Clip", [x], out=g.output("clip_attrs", [4, 32]), min=-0.5, max=0.5)
    g.node("Clip", [x], out=g.output("clip_min_attr", [4, 32]), min=0.1)
    g.node("Max", [x], out=g.output("max1", [4, 32]))
    model = finish(g, 10, "opset-10 Clip with attributes, Max with one input")
    return model, {"x": g.rng.standard_normal((4, 32)).astype(np.float32)}


def error_models(out):
    """Models mixprec refuses at import: (file, expected message parts)."""
    def model(name, node, inputs, opset=17, out_type=TensorProto.FLOAT):
        graph = helper.make_graph([node], name, inputs,
                                  [helper.make_tensor_value_info("out", out_type, [4])])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = IR.get(opset, 8)
        return m
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4])
    i = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [4])
    b = lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, [4])
    cases = {
        "isnan_int": (model("m", helper.make_node("IsNaN", ["a"], ["out"], name="nan_node"),
                            [i("a")], out_type=TensorProto.BOOL),
                      ["nan_node", "must be FLOAT, got INT64"]),
        "and_float": (model("m", helper.make_node("And", ["a", "c"], ["out"], name="and_node"),
                            [f("a"), b("c")], out_type=TensorProto.BOOL),
                      ["and_node", "must be BOOL, got FLOAT"]),
        "mod_bool": (model("m", helper.make_node("Mod", ["a", "c"], ["out"],
                                                 name="mod_node"), [b("a"), b("c")],
                           out_type=TensorProto.BOOL),
                     ["mod_node", "must be FLOAT, INT32 or INT64, got BOOL"]),
        "mod_fmod2": (model("m", helper.make_node("Mod", ["a", "c"], ["out"], name="mod2",
                                                  fmod=2), [f("a"), f("c")]),
                      ["mod2", "'fmod' must be 0 or 1, got 2"]),
        "mod_mixed_ints": (model("m", helper.make_node("Mod", ["a", "c"], ["out"],
                                                       name="imod"),
                                 [i("a"), helper.make_tensor_value_info("c", TensorProto.INT32,
                                                                        [4])],
                                 out_type=TensorProto.INT64),
                           ["imod", "operand element types differ: INT64 and INT32"]),
        "isinf_detect2": (model("m", helper.make_node("IsInf", ["a"], ["out"], name="inf_node",
                                                      detect_negative=2), [f("a")],
                                out_type=TensorProto.BOOL),
                          ["inf_node", "'detect_negative' must be 0 or 1, got 2"]),
        "leaky_nan_alpha": (model("m", helper.make_node("LeakyRelu", ["a"], ["out"],
                                                        name="leaky", alpha=float("nan")),
                                  [f("a")]),
                            ["leaky", "'alpha' must be finite"]),
        "less_bool": (model("m", helper.make_node("Less", ["a", "c"], ["out"], name="lb"),
                            [b("a"), b("c")], out_type=TensorProto.BOOL),
                      ["lb", "compares numbers"]),
    }
    prelu = helper.make_graph(
        [helper.make_node("PRelu", ["a", "s"], ["out"], name="prelu_node")], "m",
        [f("a"), helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 4])])
    pm = helper.make_model(prelu, opset_imports=[helper.make_opsetid("", 17)])
    pm.ir_version = 8
    cases["prelu_widens"] = (pm, ["prelu_node", "does not broadcast to the input shape [4]"])
    error_cases = []
    for name, (m, expect) in cases.items():
        onnx.save_model(m, os.path.join(out, f"refuse_{name}.onnx"))
        error_cases.append({"name": f"import_refuse_{name}",
                            "argv": ["import", f"{{dir}}/refuse_{name}.onnx"],
                            "expect_in_message": expect})
    return error_cases


MODELS = {"ew_logic": build_logic, "ew_math": build_math, "ew_legacy": build_legacy}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    entries = []
    for name, build in MODELS.items():
        model, inputs = build()
        entries.append(write_case(args.outdir, name, model, inputs))
        print(f"{name}: {len(entries[-1]['outputs'])} outputs")
    write_manifest(args.outdir, entries, error_cases=error_models(args.outdir))
    print(f"wrote {len(entries)} models, error cases and manifest.json to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
