"""Writes a GPT-style fused QKV projection split three ways, one model per
Split form (opset 11 attribute, 13 input, 18 num_outputs), with an input
and onnxruntime's output, into argv[1]: qkv<opset>.onnx, x.npy,
expected<opset>.npy."""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.standard_normal((2, 4, 12)).astype(np.float32)
w = rng.standard_normal((12, 36)).astype(np.float32) * 0.3
np.save(f"{out}/x.npy", x)
for opset in (11, 13, 18):
    inits = [numpy_helper.from_array(w, "w_qkv")]
    split_inputs, attrs = ["qkv"], {"axis": -1}
    if opset == 11:
        attrs["split"] = [12, 12, 12]
    elif opset == 13:
        inits.append(numpy_helper.from_array(np.array([12, 12, 12], np.int64), "sizes"))
        split_inputs.append("sizes")
    else:
        attrs["num_outputs"] = 3
    nodes = [
        helper.make_node("MatMul", ["x", "w_qkv"], ["qkv"], name="c_attn"),
        helper.make_node("Split", split_inputs, ["q", "k", "v"], name="split_qkv", **attrs),
        helper.make_node("Mul", ["q", "k"], ["qk"], name="qk"),
        helper.make_node("Add", ["qk", "v"], ["y"], name="y"),
    ]
    graph = helper.make_graph(nodes, "qkv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 12])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, f"{out}/qkv{opset}.onnx")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.save(f"{out}/expected{opset}.npy", session.run(None, {"x": x})[0])
