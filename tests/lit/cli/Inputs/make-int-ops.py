"""Writes int-ops.onnx into argv[1]: integer arithmetic on graph inputs
(Sub, Mod fmod=0, Pow with a float exponent, Less, Where), Trilu on INT64,
float Mod with fmod=0 and ReduceMax of bools (issue 10: integers at run
time)."""
import sys

import onnx
from onnx import TensorProto as T, helper

nodes = [
    helper.make_node("Sub", ["a", "b"], ["d"], name="sub"),
    helper.make_node("Mod", ["d", "b"], ["m"], name="mod", fmod=0),
    helper.make_node("Pow", ["a", "e"], ["p"], name="pow"),
    helper.make_node("Less", ["d", "a"], ["l"], name="less"),
    helper.make_node("Where", ["l", "d", "m"], ["w"], name="where"),
    helper.make_node("Mod", ["x", "y"], ["fm"], name="fmod0"),
    helper.make_node("ReduceMax", ["l"], ["any"], name="any", keepdims=0),
    helper.make_node("Trilu", ["a"], ["t"], name="tril", upper=0),
]
vi = helper.make_tensor_value_info
g = helper.make_graph(
    nodes, "g",
    [vi("a", T.INT64, [2, 3]), vi("b", T.INT64, [3]), vi("e", T.FLOAT, [3]),
     vi("x", T.FLOAT, [3]), vi("y", T.FLOAT, [3])],
    [vi("w", T.INT64, [2, 3]), vi("p", T.INT64, [2, 3]), vi("fm", T.FLOAT, [3]),
     vi("any", T.BOOL, []), vi("t", T.INT64, [2, 3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/int-ops.onnx")
