"""Writes the compile-time-only ops whose inputs are graph inputs (as ONNX's
node tests give them): cos.onnx, ConstantOfShape(shape) with value 1.0, and
range.onnx, Range(start, limit, delta) in FLOAT. Used by value-inputs.test."""
import sys

import onnx
from onnx import TensorProto, helper

folder = sys.argv[1]
shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
one = helper.make_tensor("value", TensorProto.FLOAT, [1], [1.0])
node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos", value=one)
graph = helper.make_graph([node], "g", [shape], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder + "/cos.onnx")

scalars = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("start", "limit", "delta")]
node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")
graph = helper.make_graph([node], "g", scalars, [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder + "/range.onnx")
