#!/usr/bin/env python3
"""Writes an N-op element-wise chain x -> Add, Mul, Relu, Tanh, ... -> y.

The chain is what --mp-fuse, --mp-lower-to-kernels, --mp-plan-memory and the
module writer must handle in near-linear time (bench/fuse_scaling.py,
tests/lit/passes/fuse-long-chain.test). Add and Mul take a scalar constant,
so every op of the chain is fusible and the whole chain is one candidate
kernel.

  python3 bench/gen_chain.py N OUT.mlir            # mp IR text
  python3 bench/gen_chain.py N OUT.onnx --onnx     # the same graph as ONNX
  python3 bench/gen_chain.py N OUT.mlir --fused    # inside one mp.fusion
"""
import argparse
import sys

OPS = ("Add", "Mul", "Relu", "Tanh")


def write_mlir(n, shape, out, fused=False):
    """Writes the chain as mp IR text, one op per line; `fused`: already
    inside one mp.fusion (what --mp-fuse would make without its size cap)."""
    t = "tensor<%sxf32>" % "x".join(str(d) for d in shape)
    out.write('func.func @main(%%x: %s {mp.name = "x"}) -> (%s {mp.name = "y"}) {\n' % (t, t))
    indent = "  "
    prev = "%x"
    if fused:
        out.write('  %%y = mp.fusion elementwise(%%x) {ops = ["chain"]} : (%s) -> %s {\n'
                  % (t, t))
        out.write("  ^bb0(%%a: %s):\n" % t)
        indent = "    "
        prev = "%a"
    out.write(indent + "%c_add = mp.constant dense<5.000000e-01> : tensor<f32>\n")
    out.write(indent + "%c_mul = mp.constant dense<9.000000e-01> : tensor<f32>\n")
    for i in range(n):
        op = OPS[i % len(OPS)]
        cur = "%%v%d" % i
        if op in ("Add", "Mul"):
            c = "%c_add" if op == "Add" else "%c_mul"
            out.write('%s%s = mp.%s %s, %s : %s, tensor<f32> -> %s loc("n%d")\n'
                      % (indent, cur, op.lower(), prev, c, t, t, i))
        else:
            out.write('%s%s = mp.%s %s : %s loc("n%d")\n' % (indent, cur, op.lower(), prev, t, i))
        prev = cur
    if fused:
        out.write("    mp.yield %s : %s\n  }\n" % (prev, t))
        prev = "%y"
    out.write("  return %s : %s\n}\n" % (prev, t))


def write_onnx(n, shape, path):
    """Writes the chain as an opset-17 ONNX model."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "c_add"),
             numpy_helper.from_array(np.array(0.9, np.float32), "c_mul")]
    nodes = []
    prev = "x"
    for i in range(n):
        op = OPS[i % len(OPS)]
        cur = "y" if i == n - 1 else "v%d" % i
        inputs = [prev] + (["c_add" if op == "Add" else "c_mul"] if op in ("Add", "Mul") else [])
        nodes.append(helper.make_node(op, inputs, [cur], name="n%d" % i))
        prev = cur
    graph = helper.make_graph(
        nodes, "chain%d" % n,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="number of ops in the chain (at least 1)")
    parser.add_argument("out", help="output file ('-': stdout, mp IR only)")
    parser.add_argument("--onnx", action="store_true", help="write an ONNX model")
    parser.add_argument("--fused", action="store_true",
                        help="mp IR: the chain already inside one mp.fusion")
    parser.add_argument("--shape", default="64,64", help="tensor shape (default 64,64)")
    args = parser.parse_args()
    if args.n < 1:
        parser.error("n must be at least 1")
    shape = [int(d) for d in args.shape.split(",")]
    if args.onnx:
        write_onnx(args.n, shape, args.out)
    elif args.out == "-":
        write_mlir(args.n, shape, sys.stdout, args.fused)
    else:
        with open(args.out, "w") as f:
            write_mlir(args.n, shape, f, args.fused)


if __name__ == "__main__":
    main()
