"""Writes models that compute in DOUBLE into argv[1] (double-fold.test):

- precise.onnx: y = Cast<FLOAT>((Cast<DOUBLE>(a) + Cast<DOUBLE>(b)) - Cast<DOUBLE>(a))
  with constants a = 1, b = 1e-8: 1e-8 in double (0 in FLOAT arithmetic).
- empty.onnx: ReduceLogSumExp as its function expands it (Cast to DOUBLE,
  Exp, ReduceSum, Log, CastLike back) of an empty graph input [2, 0, 4]:
  log(0) = -inf, the reduced shape [2, 1, 4].
- bad-softmax.onnx: Softmax of a DOUBLE constant (the evaluator has no
  Softmax in double).
- island.onnx: Cast to DOUBLE of a run-time input, Softmax/Identity/LogSoftmax,
  casts back to FLOAT (accepted: computed in FP32).
- bad-runtime.onnx: the same island with an Add reading the DOUBLE tensor.
- bad-runtime-output.onnx: a run-time DOUBLE graph output.
- bad-runtime-int.onnx: Cast to DOUBLE of a run-time INT64 input.
- bad-castlike.onnx: CastLike of a run-time input to a DOUBLE constant's type.
- bad-output.onnx: a DOUBLE graph output (a Cast of a constant).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
F, D = TensorProto.FLOAT, TensorProto.DOUBLE


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              f"{out}/{name}.onnx")


def f32(name, values):
    return numpy_helper.from_array(np.array(values, np.float32), name)


y = helper.make_tensor_value_info("y", F, None)
save("precise", [
    helper.make_node("Cast", ["a"], ["ad"], name="cast_a", to=D),
    helper.make_node("Cast", ["b"], ["bd"], name="cast_b", to=D),
    helper.make_node("Add", ["ad", "bd"], ["s"], name="add"),
    helper.make_node("Sub", ["s", "ad"], ["d"], name="sub"),
    helper.make_node("Cast", ["d"], ["y"], name="back", to=F),
], [], [y], [f32("a", [1.0]), f32("b", [1e-8])])

save("empty", [
    helper.make_node("Cast", ["data"], ["dd"], name="to_double", to=D),
    helper.make_node("Exp", ["dd"], ["e"], name="exp"),
    helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum", keepdims=1),
    helper.make_node("Log", ["s"], ["l"], name="log"),
    helper.make_node("CastLike", ["l", "data"], ["y"], name="back"),
], [helper.make_tensor_value_info("data", F, [2, 0, 4])], [y],
    [numpy_helper.from_array(np.array([1], np.int64), "axes")])

save("bad-softmax", [
    helper.make_node("Cast", ["a"], ["ad"], name="to_double", to=D),
    helper.make_node("Softmax", ["ad"], ["sd"], name="softmax_double"),
    helper.make_node("Cast", ["sd"], ["y"], name="back", to=F),
], [], [y], [f32("a", [1.0, 2.0])])

x3 = helper.make_tensor_value_info("x", F, [2, 3])
# A run-time DOUBLE island (computed in FP32): Cast<DOUBLE> -> Softmax ->
# Identity, and LogSoftmax, each result cast back to FLOAT.
save("island", [
    helper.make_node("Cast", ["x"], ["xd"], name="to_double", to=D),
    helper.make_node("Softmax", ["xd"], ["sd"], name="softmax_double", axis=-1),
    helper.make_node("Identity", ["sd"], ["sd2"], name="same"),
    helper.make_node("Cast", ["sd2"], ["y"], name="back", to=F),
    helper.make_node("LogSoftmax", ["xd"], ["ld"], name="logsoftmax_double", axis=0),
    helper.make_node("Cast", ["ld"], ["z"], name="back_float", to=F),
], [x3], [y, helper.make_tensor_value_info("z", F, None)])

save("bad-runtime", [
    helper.make_node("Cast", ["x"], ["xd"], name="to_double", to=D),
    helper.make_node("Softmax", ["xd"], ["sd"], name="softmax_double"),
    helper.make_node("Cast", ["sd"], ["y"], name="back", to=F),
    helper.make_node("Add", ["xd", "xd"], ["twice"], name="add_double"),
    helper.make_node("Cast", ["twice"], ["z"], name="back2", to=F),
], [x3], [y, helper.make_tensor_value_info("z", F, None)])

save("bad-runtime-output", [
    helper.make_node("Cast", ["x"], ["xd"], name="to_double", to=D),
    helper.make_node("Softmax", ["xd"], ["y"], name="softmax_double"),
], [x3], [helper.make_tensor_value_info("y", D, None)])

save("bad-runtime-int", [
    helper.make_node("Cast", ["i"], ["id"], name="int_to_double", to=D),
    helper.make_node("Cast", ["id"], ["y"], name="back", to=F),
], [helper.make_tensor_value_info("i", TensorProto.INT64, [3])], [y])

save("bad-castlike", [
    helper.make_node("Cast", ["a"], ["ad"], name="to_double", to=D),
    helper.make_node("CastLike", ["x", "ad"], ["xd"], name="like_double"),
    helper.make_node("Cast", ["xd"], ["y"], name="back", to=F),
], [helper.make_tensor_value_info("x", F, [3])], [y], [f32("a", [1.0])])

save("bad-output", [helper.make_node("Cast", ["a"], ["y"], name="to_double", to=D)], [],
     [helper.make_tensor_value_info("y", D, [1])], [f32("a", [1.0])])
