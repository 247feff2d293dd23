"""Writes small ONNX Attention models (imported as a composition of mp ops,
OnnxComposite.cpp) into argv[1]: NAME.onnx for each NAME below. Numerics
against the ONNX reference are the node suite's (test_attention_*); these
models pin the imported IR and an attribute error."""
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]


def save(name, q, kv, y, **attrs):
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name=name, **attrs)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [node], name,
        [vi("Q", TensorProto.FLOAT, q), vi("K", TensorProto.FLOAT, kv),
         vi("V", TensorProto.FLOAT, kv)],
        [vi("Y", TensorProto.FLOAT, y)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    onnx.save(m, f"{out}/{name}.onnx")


# 3-D, grouped-query (4 Q heads over 2 K/V heads), causal, 2 queries x 3 keys.
save("attn_gqa_causal", [1, 2, 8], [1, 3, 4], [1, 2, 8], is_causal=1, q_num_heads=4,
     kv_num_heads=2)
save("attn_bad_mode", [1, 2, 1, 2], [1, 2, 3, 2], [1, 2, 1, 2], qk_matmul_output_mode=5)
