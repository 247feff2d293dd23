"""Writes reshape-input.onnx: Reshape whose target shape is a graph input
(as ONNX's node tests give it). Used by value-inputs.test."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], "g", [x, s], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
