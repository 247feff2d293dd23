"""Writes one small model per op that the importer decomposes into existing
mp ops (OnnxComposite.cpp) into argv[1]: NAME.onnx for each NAME below.
Numerics are checked against onnxruntime by tests/e2e/run_composite.py;
these models pin the imported IR."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, op, x_shape, y_shape, opset, inputs=(), inits=(), outputs=("y",), **attrs):
    node = helper.make_node(op, ["x"] + list(inputs), list(outputs), name=name, **attrs)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(outputs[0], TensorProto.FLOAT, y_shape)]
        + [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs[1:]],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{out}/{name}.onnx")


i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
save("pad_edge", "Pad", [2, 3], [2, 6], 13, ["pads"], [("pads", i64(0, 1, 0, 2))], mode="edge")
save("pad_paddings_1", "Pad", [2, 3], [3, 3], 1, paddings=[1, 0, 0, 0], value=2.0)
save("trilu", "Trilu", [3, 3], [3, 3], 14, ["k"], [("k", np.array(1, np.int64))], upper=0)
save("tile", "Tile", [2, 3], [2, 6], 13, ["r"], [("r", i64(1, 2))])
save("d2s", "DepthToSpace", [1, 8, 2, 3], [1, 2, 4, 6], 13, blocksize=2, mode="CRD")
save("group_norm", "GroupNormalization", [2, 4, 3], [2, 4, 3], 18, ["s", "b"],
     [("s", f32(1, 2)), ("b", f32(0, 1))], num_groups=2)
save("layer_norm_stats", "LayerNormalization", [2, 8], [2, 8], 17, ["g"],
     [("g", np.ones(8, np.float32))], outputs=("y", "mean", "inv_std"))
save("logsumexp", "ReduceLogSumExp", [3, 4], [3], 18, ["axes"], [("axes", i64(1))], keepdims=0)
save("reduce_min", "ReduceMin", [3, 4], [1, 4], 13, axes=[0])
save("einsum", "Einsum", [2, 3, 4], [2, 3, 5], 12, ["w"], [("w", np.ones((2, 4, 5), np.float32))],
     equation="bij,bjk->bik")
save("resize_linear", "Resize", [1, 1, 2, 2], [1, 1, 2, 4], 13, ["", "s"],
     [("s", f32(1, 1, 1, 2))], mode="linear", coordinate_transformation_mode="align_corners")
save("resize_antialias", "Resize", [1, 1, 1, 4], [1, 1, 1, 2], 18, ["", "s"],
     [("s", f32(1, 1, 1, 0.5))], mode="linear", antialias=1)
save("resize_crop", "Resize", [1, 1, 1, 3], [1, 1, 1, 3], 13, ["roi", "", "sizes"],
     [("roi", f32(0, 0, 0, 0.5, 1, 1, 1, 1.5)), ("sizes", i64(1, 1, 1, 3))], mode="linear",
     coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=9.0)
save("bn_training", "BatchNormalization", [2, 3, 4], [2, 3, 4], 15, ["s", "b", "m", "v"],
     [(k, f32(1, 2, 3)) for k in ("s", "b", "m", "v")], outputs=("y", "running_mean", "running_var"),
     training_mode=1, momentum=0.75)
save("conv1d", "Conv", [1, 2, 8], [1, 3, 4], 11, ["w"], [("w", np.ones((3, 2, 3), np.float32))],
     strides=[2], pads=[1, 0])
