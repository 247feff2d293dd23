#!/usr/bin/env python3
"""Build the small example model shipped in examples/.

Usage:
    python3 examples/make_example.py [--outdir examples]

Writes (deterministically, fixed seed):
    mlp.onnx        a 3-layer MLP classifier, ONNX opset 13, FP32, ~35 KB:
                    x[8,64] -> Gemm(transB=1) + Relu -> MatMul + Add -> Tanh
                        -> Gemm(transB=1) -> Softmax(axis=-1) -> probs[8,10]
    mlp_input.npy   a float32 [8,64] input for `x`

Then try it:
    mixprec run examples/mlp.onnx --input x=examples/mlp_input.npy --output-dir out/
which writes out/probs.npy.  If onnxruntime is installed this script also
prints onnxruntime's result for comparison.

Only onnx and numpy are needed to build the files.
"""

import argparse
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, D_IN, HIDDEN, D_OUT = 8, 64, 64, 10


def build(seed=2024):
    rng = np.random.default_rng(seed)

    def weight(name, shape, fan_in, gain=1.0):
        w = rng.standard_normal(shape) * (gain / math.sqrt(fan_in))
        return numpy_helper.from_array(w.astype(np.float32), name)

    def bias(name, n):
        return numpy_helper.from_array((0.1 * rng.standard_normal(n)).astype(np.float32), name)

    inits = [
        weight("fc1.weight", (HIDDEN, D_IN), D_IN, math.sqrt(2)), bias("fc1.bias", HIDDEN),
        weight("fc2.weight", (HIDDEN, HIDDEN), HIDDEN, 1.5), bias("fc2.bias", HIDDEN),
        weight("fc3.weight", (D_OUT, HIDDEN), HIDDEN, 3.0), bias("fc3.bias", D_OUT),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("MatMul", ["a1", "fc2.weight"], ["h2"], name="fc2_matmul"),
        helper.make_node("Add", ["h2", "fc2.bias"], ["h2b"], name="fc2_add"),
        helper.make_node("Tanh", ["h2b"], ["a2"], name="tanh2"),
        helper.make_node("Gemm", ["a2", "fc3.weight", "fc3.bias"], ["logits"], name="fc3",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, D_IN])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [BATCH, D_OUT])],
        inits)
    model = helper.make_model(graph, producer_name="mixprec-examples",
                              opset_imports=[helper.make_opsetid("", 13)],
                              doc_string="mixprec example: 3-layer MLP classifier")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    x = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
    return model, x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--outdir", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where to write mlp.onnx and mlp_input.npy (default: examples/)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    model, x = build()
    model_path = os.path.join(args.outdir, "mlp.onnx")
    onnx.save_model(model, model_path)
    np.save(os.path.join(args.outdir, "mlp_input.npy"), x)
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes) and mlp_input.npy")
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    probs = sess.run(["probs"], {"x": x})[0]
    np.set_printoptions(precision=4, suppress=True)
    print("onnxruntime probs[0]:", probs[0])
    print("onnxruntime argmax per row:", probs.argmax(axis=1))


if __name__ == "__main__":
    main()
