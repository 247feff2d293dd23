#!/usr/bin/env python3
"""Exports the data and the model of the digits training example (issue 11).

Data: scikit-learn's digits (1,797 8x8 images of handwritten digits, shipped
inside the scikit-learn package; no download), pixels scaled from 0..16 to
0..1, shuffled with a fixed seed and split 1,437 train / 360 test:

  x_train.npy  float32 [1437, 64]    y_train.npy  int64 [1437]
  x_test.npy   float32 [360, 64]     y_test.npy   int64 [360]

Model: mlp.onnx, a 64-128-128-10 MLP (Gemm, Relu) whose weights are drawn
as PyTorch's nn.Linear initialises them (uniform in +-1/sqrt(fan_in)) from a
fixed seed, written with onnx.helper (no torch needed). Its output is the
logits [N, 10]; the batch dim is symbolic ("batch").

Developer machines only (scikit-learn is not a CI dependency); the outputs
are committed. Run: python examples/train_digits/make_digits.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    n_train = 1437
    np.save(os.path.join(HERE, "x_train.npy"), x[:n_train])
    np.save(os.path.join(HERE, "y_train.npy"), y[:n_train])
    np.save(os.path.join(HERE, "x_test.npy"), x[n_train:])
    np.save(os.path.join(HERE, "y_test.npy"), y[n_train:])

    rng = np.random.default_rng(1)
    sizes = [64, 128, 128, 10]
    inits, nodes = [], []
    prev = "x"
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = 1.0 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        b = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
        name = f"fc{i + 1}"
        inits += [numpy_helper.from_array(w, f"{name}.weight"),
                  numpy_helper.from_array(b, f"{name}.bias")]
        out = "logits" if i == len(sizes) - 2 else f"{name}_out"
        nodes.append(helper.make_node("Gemm", [prev, f"{name}.weight", f"{name}.bias"],
                                      [out], name=name, transB=1))
        prev = out
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i + 1}"], name=f"relu{i + 1}"))
            prev = f"relu{i + 1}"
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="mixprec examples/train_digits")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "mlp.onnx"))
    print(f"train {n_train}, test {len(x) - n_train}, classes {np.bincount(y).tolist()}")


if __name__ == "__main__":
    main()
