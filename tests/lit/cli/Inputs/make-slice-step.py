"""Writes slice.onnx (x[2,3,4] -> x[:, :, 1:2:INT64_MAX]) and x.npy into argv[1]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
big = np.iinfo(np.int64).max
inits = [numpy_helper.from_array(np.array(v, np.int64), n)
         for n, v in [("starts", [1]), ("ends", [2]), ("axes", [2]), ("steps", [big])]]
node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")
graph = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 1])],
                          inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out + "/slice.onnx")
np.save(out + "/x.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
