"""Writes an attention-mask model as Hugging Face exports write it, into
argv[1]/mask.onnx: an int64 mask compared with 0 (Equal), a float
comparison (LessOrEqual) and'ed with it, the SDPA guard
Where(IsNaN(softmax), 0, softmax), Softplus, a LeakyRelu and a Clip
(ReLU6, opset-11 inputs)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
zero_i = numpy_helper.from_array(np.array(0, np.int64), "zero_i")
zero_f = numpy_helper.from_array(np.array(0.0, np.float32), "zero_f")
six = numpy_helper.from_array(np.array(6.0, np.float32), "six")
nodes = [
    helper.make_node("Equal", ["mask", "zero_i"], ["pad"], name="pad_eq"),
    helper.make_node("LessOrEqual", ["scores", "limit"], ["low"], name="low_le"),
    helper.make_node("And", ["pad", "low"], ["drop"], name="drop_and"),
    helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
    helper.make_node("IsNaN", ["probs"], ["nan"], name="isnan"),
    helper.make_node("Where", ["nan", "zero_f", "probs"], ["guarded"], name="guard"),
    helper.make_node("Softplus", ["guarded"], ["sp"], name="softplus"),
    helper.make_node("LeakyRelu", ["sp"], ["lr"], name="leaky", alpha=0.1),
    helper.make_node("Clip", ["lr", "zero_f", "six"], ["y"], name="relu6"),
]
graph = helper.make_graph(
    nodes, "mask",
    [helper.make_tensor_value_info("mask", TensorProto.INT64, [2, 8]),
     helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 8]),
     helper.make_tensor_value_info("limit", TensorProto.FLOAT, [8])],
    [helper.make_tensor_value_info("drop", TensorProto.BOOL, [2, 8]),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    [zero_i, zero_f, six])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save_model(model, f"{out}/mask.onnx")
