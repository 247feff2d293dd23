"""Writes tied.onnx: a token embedding that is also the LM head (GPT-2's
tied weights: Gather(wte, ids) ... MatMul(h, Transpose(wte))). With
--transposed-copy the head reads a second initializer holding wte's
transpose instead (torch.onnx's legacy exporter writes GPT-2 so). Used by
tied-weights.test; run: python make_tied_model.py OUT.onnx [--transposed-copy]"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

V, D, S = 50, 16, 8
rng = np.random.default_rng(0)
wte = numpy_helper.from_array(rng.standard_normal((V, D)).astype(np.float32), "wte")
ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, S])
logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
copy = "--transposed-copy" in sys.argv[2:]
nodes = [
    helper.make_node("Gather", ["wte", "ids"], ["h"], name="embed"),
    helper.make_node("Tanh", ["h"], ["h2"], name="act"),
    helper.make_node("MatMul", ["h2", "wT"], ["logits"], name="lm_head"),
]
initializers = [wte]
if copy:
    initializers.append(numpy_helper.from_array(np.ascontiguousarray(numpy_helper.to_array(wte).T), "wT"))
else:
    nodes.insert(2, helper.make_node("Transpose", ["wte"], ["wT"], perm=[1, 0], name="tr"))
graph = helper.make_graph(nodes, "tied", [ids], [logits], initializers)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
