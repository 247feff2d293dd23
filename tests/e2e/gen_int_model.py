#!/usr/bin/env python3
"""Writes int_ops.onnx: every integer element-wise op, one graph output each.

Usage:
    gen_int_model.py OUT.onnx

The model the CUDA checks compile (cuda_kernels_nvrtc: every routine kernel
through NVRTC; cuda_routines_on_shim: each int_elementwise kernel on the
CUDA shim against the CPU routine, bit for bit, on random inputs): Add,
Sub, Mul, Div, Mod (fmod 0 and 1), Pow (integer and float exponents), Max,
Min, Neg, Abs, Where, the five comparisons and the integer casts, on
INT64, INT32 and BOOL operands with broadcasting (a [4, 5] by a [5] and a
[1, 5]) and a rank-0 operand.
"""

import sys

import onnx
from onnx import TensorProto, helper

I64, I32, B, F = TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.FLOAT


def main():
    out = sys.argv[1]
    nodes, outputs = [], []

    def add(op, ins, elem, shape, **attrs):
        name = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        outputs.append(helper.make_tensor_value_info(name, elem, shape))

    for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"):
        add(op, ["a", "b"], I64, [4, 5])
        add(op, ["c", "d"], I32, [4, 5])
    for fmod in (0, 1):
        add("Mod", ["a", "b"], I64, [4, 5], fmod=fmod)
        add("Mod", ["c", "d"], I32, [4, 5], fmod=fmod)
    add("Pow", ["a", "e"], I64, [4, 5])
    add("Pow", ["c", "s"], I32, [4, 5])
    for op in ("Neg", "Abs"):
        add(op, ["a"], I64, [4, 5])
        add(op, ["d"], I32, [1, 5])
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        add(op, ["a", "b"], B, [4, 5])
        add(op, ["c", "d"], B, [4, 5])
    add("Where", ["m", "a", "b"], I64, [4, 5])
    add("Where", ["m", "c", "s"], I32, [4, 5])
    add("Cast", ["a"], I32, [4, 5], to=I32)
    add("Cast", ["c"], I64, [4, 5], to=I64)
    add("Cast", ["a"], B, [4, 5], to=B)
    add("Cast", ["m"], I64, [4, 5], to=I64)
    graph = helper.make_graph(
        nodes, "int_ops",
        [helper.make_tensor_value_info("a", I64, [4, 5]),
         helper.make_tensor_value_info("b", I64, [5]),
         helper.make_tensor_value_info("c", I32, [4, 5]),
         helper.make_tensor_value_info("d", I32, [1, 5]),
         helper.make_tensor_value_info("s", I32, []),
         helper.make_tensor_value_info("e", F, [5]),
         helper.make_tensor_value_info("m", B, [4, 5])],
        outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    main()
