"""Writes indexing.onnx (GatherElements, GatherND, ArgMax, TopK, CumSum on
x[2,6] and run-time indices idx[2,3]) into argv[1]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
inits = [numpy_helper.from_array(np.array([[1, 2], [0, -1]], np.int64), "nd_idx"),
         numpy_helper.from_array(np.array([2], np.int64), "k"),
         numpy_helper.from_array(np.array(-1, np.int64), "axis")]
nodes = [
    helper.make_node("GatherElements", ["x", "idx"], ["ge"], name="ge", axis=1),
    helper.make_node("GatherND", ["x", "nd_idx"], ["gn"], name="gn"),
    helper.make_node("ArgMax", ["x"], ["am"], name="am", axis=1, keepdims=0),
    helper.make_node("TopK", ["x", "k"], ["tv", "ti"], name="tk", largest=0),
    helper.make_node("CumSum", ["x", "axis"], ["cs"], name="cs", reverse=1),
]
F, I = TensorProto.FLOAT, TensorProto.INT64
graph = helper.make_graph(
    nodes, "g",
    [helper.make_tensor_value_info("x", F, [2, 6]), helper.make_tensor_value_info("idx", I, [2, 3])],
    [helper.make_tensor_value_info("ge", F, [2, 3]), helper.make_tensor_value_info("gn", F, [2]),
     helper.make_tensor_value_info("am", I, [2]), helper.make_tensor_value_info("tv", F, [2, 2]),
     helper.make_tensor_value_info("ti", I, [2, 2]), helper.make_tensor_value_info("cs", F, [2, 6])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, out + "/indexing.onnx")
