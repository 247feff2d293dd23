"""Writes dropout7.onnx and dropout10.onnx (Dropout x -> y, mask); with
--check, compares mixprec's outputs in o7/, o10/ and i10/ with onnx's
reference evaluator. Used by dropout-mask.test."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

folder = sys.argv[1]


def dropout(opset, mask_type):
    node = helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop", ratio=0.3)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("mask", mask_type, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


models = {"o7": dropout(7, TensorProto.FLOAT), "o10": dropout(10, TensorProto.BOOL),
          "i10": dropout(10, TensorProto.BOOL)}
if "--check" not in sys.argv:
    onnx.save(models["o7"], folder + "/dropout7.onnx")
    onnx.save(models["o10"], folder + "/dropout10.onnx")
    sys.exit(0)
x = np.load(folder + "/x.npy")
for out, m in models.items():
    want_y, want_mask = ReferenceEvaluator(m).run(None, {"x": x})
    assert want_mask.all(), "the reference's mask is all true"
    y = np.load(f"{folder}/{out}/y.npy")
    mask = np.load(f"{folder}/{out}/mask.npy")
    np.testing.assert_array_equal(y, want_y)
    want_dtype = np.float32 if out == "o7" else np.bool_
    assert mask.dtype == want_dtype and mask.shape == x.shape, (out, mask.dtype, mask.shape)
    assert (mask == 1).all(), (out, mask)
print("ok")
