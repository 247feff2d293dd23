"""Writes pinned-input.onnx into argv[1]: y = Pad(x, pads) whose pads are
computed from the int64 graph input `target` (the shape to pad x [2, 3]
to): pads = Concat([0, 0], Max(target, Shape(x)) - Shape(x)), as
CenterCropPad's function body computes them."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

nodes = [
    helper.make_node("Shape", ["x"], ["xs"], name="shape"),
    helper.make_node("Max", ["target", "xs"], ["big"], name="max"),
    helper.make_node("Sub", ["big", "xs"], ["grow"], name="grow"),
    helper.make_node("Concat", ["zeros", "grow"], ["pads"], name="pads", axis=0),
    helper.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
]
g = helper.make_graph(
    nodes, "g",
    [helper.make_tensor_value_info("x", T.FLOAT, [2, 3]),
     helper.make_tensor_value_info("target", T.INT64, [2])],
    [helper.make_tensor_value_info("y", T.FLOAT, None)],
    [numpy_helper.from_array(np.zeros(2, np.int64), "zeros")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/pinned-input.onnx")
