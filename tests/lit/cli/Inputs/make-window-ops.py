"""Writes one small model per N-D window node (3-D Conv and pooling,
ConvTranspose, AveragePool with dilations, MaxPool with Indices) into
argv[1]: NAME.onnx, with a fixed input x.npy for the ones run here.
Numerics against onnxruntime are in tests/e2e/run_composite.py; these
models pin the imported IR, the routines and the CPU backend's run."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, op, x_shape, opset, inits=(), outputs=(("y", TensorProto.FLOAT),), **attrs):
    node = helper.make_node(op, ["x"] + [k for k, _ in inits], [o for o, _ in outputs],
                            name=name, **attrs)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset > 17 else 8
    onnx.save(m, f"{out}/{name}.onnx")


save("conv3d", "Conv", [1, 2, 4, 4, 4], 11, [("w", np.ones((3, 2, 3, 3, 3)))],
     pads=[1, 1, 1, 1, 1, 1], strides=[2, 1, 1])
# output_shape [10, 8] fixes the pads: total 1 and 1, the odd one first.
save("convtranspose", "ConvTranspose", [1, 1, 3, 3], 11,
     [("w", np.ones((1, 2, 3, 3))), ("b", [0.5, -0.5])], strides=[3, 2], output_shape=[10, 8])
save("convtranspose_outpad", "ConvTranspose", [1, 1, 3, 3], 11, [("w", np.ones((1, 2, 3, 3)))],
     strides=[3, 2], output_padding=[1, 1])
save("maxpool_indices", "MaxPool", [1, 1, 4, 4], 12,
     outputs=(("y", TensorProto.FLOAT), ("i", TensorProto.INT64)), kernel_shape=[2, 2],
     strides=[2, 2], storage_order=1)
save("avgpool_dilations", "AveragePool", [1, 1, 4, 4], 19, kernel_shape=[2, 2],
     dilations=[2, 2], ceil_mode=1)
save("avgpool3d", "AveragePool", [1, 1, 4, 4, 4], 11, kernel_shape=[2, 2, 2],
     strides=[2, 2, 2])
# x = 0..15 on a 4x4 plane, and 0..8 on 3x3.
np.save(f"{out}/x4.npy", np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
np.save(f"{out}/x3.npy", np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3))
np.save(f"{out}/x444.npy", np.arange(64, dtype=np.float32).reshape(1, 1, 4, 4, 4))
