"""Writes dynamic.onnx: graph inputs with symbolic dims ('batch', 'seq') and
one unknown dim, as exporters write them (dynamic_axes). Used by
dynamic-shapes.test; run: python make_dynamic_model.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"])
free = helper.make_tensor_value_info("free", TensorProto.FLOAT, [None, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 3])
m = helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", "seq"])
f = helper.make_tensor_value_info("f", TensorProto.FLOAT, None)
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 8, "w")
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["y"], name="proj"),
    helper.make_node("Relu", ["mask"], ["m"], name="relu"),
    helper.make_node("Neg", ["free"], ["f"], name="neg"),
]
graph = helper.make_graph(nodes, "dynamic", [x, mask, free], [y, m, f], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
