#!/usr/bin/env python3
"""Write the binary seed corpora of the fuzzers (tests/fuzz/corpus/).

Usage:
    make_corpus.py --build BUILD_DIR [--out tests/fuzz/corpus]

  onnx/    the models of tests/e2e/gen_models.py at tiny sizes (every op the
           e2e models use, opsets 11 to 20), doc strings dropped
  npy/     one small array per dtype the reader takes, a 0-d and an empty
           array, and a version 2.0 header
  module/  the test modules of make_test_module (MLP and convolution, sealed
           and unsealed: an unsealed module lets mutations past the content
           hash), the tiny MLP compiled by `mixprec compile` at bf16 and fp8,
           and the index routines' model of tests/lit/cli (gather_elements,
           gather_nd, arg_max, topk, cumsum) compiled at fp32

BUILD_DIR is a Release build (build/) holding bin/mixprec and make_test_module.
policy/ holds hand-written JSON and is not generated. Output is deterministic:
running the script again rewrites identical files.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import gen_models  # noqa: E402


def tiny_models():
    """(name, ModelProto) for every e2e model, shrunk."""
    g = gen_models
    return [
        ("mlp", g.build_mlp(batch=2, d_in=4, hidden1=8, hidden2=8, d_out=3)[0]),
        ("cnn", g.build_cnn()[0]),
        ("encoder", g.build_encoder(batch=1, seq=4, hidden=8, heads=2, mlp=16)[0]),
        ("gpt_block", g.build_gpt_block(batch=1, seq=4, hidden=8, heads=2, mlp=16,
                                        vocab=12)[0]),
        ("opset11_ops", g.build_opset11_ops()[0]),
        ("rmsnorm_mlp", g.build_rmsnorm_mlp()[0]),
        ("linear_variants", g.build_linear_variants()[0]),
    ]


def write_onnx(out):
    os.makedirs(out, exist_ok=True)
    paths = {}
    for name, model in tiny_models():
        model.doc_string = ""
        model.graph.doc_string = ""
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        paths[name] = path
    return paths


def write_npy(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    arrays = {
        "f4": rng.standard_normal((2, 3)).astype("<f4"),
        "f8": rng.standard_normal((3,)).astype("<f8"),
        "f2": rng.standard_normal((2, 2)).astype("<f2"),
        "i8": np.array([[0, -1], [2**40, 3]], dtype="<i8"),
        "i4": np.array([1, -2, 3], dtype="<i4"),
        "i1": np.array([-128, 127], dtype="i1"),
        "u1": np.array([0, 255], dtype="u1"),
        "b1": np.array([True, False, True]),
        "scalar": np.array(1.5, dtype="<f4"),
        "empty": np.zeros((2, 0), dtype="<f4"),
    }
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a)
    with open(os.path.join(out, "v2.npy"), "wb") as f:
        np.lib.format.write_array(f, arrays["f4"], version=(2, 0))
    # A fuzzer finding, fixed: a header key holding a newline (the error
    # must stay one line).
    with open(os.path.join(out, "newline-key.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran           \n_order': False,"
                b" 'shape': (2, 0), }" + b" " * 58 + b"\n")


def write_modules(out, build, mlp_onnx):
    os.makedirs(out, exist_ok=True)
    build = os.path.abspath(build)
    make = os.path.join(build, "tests", "unit", "runtime", "make_test_module")
    mixprec = os.path.join(build, "bin", "mixprec")
    for name, flags in [("mlp", []), ("mlp_unsealed", ["--unsealed"]),
                        ("conv", ["--conv"]), ("conv_unsealed", ["--conv", "--unsealed"])]:
        subprocess.run([make, os.path.join(out, name + ".mpk")] + flags, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ["bf16", "fp8"]:
            path = os.path.join(out, "tiny_mlp_%s.mpk" % precision)
            subprocess.run([mixprec, "compile", mlp_onnx, "--precision", precision,
                            "-o", path], check=True, stderr=subprocess.DEVNULL, cwd=tmp)
        make_indexing = os.path.join(HERE, "..", "lit", "cli", "Inputs", "make-indexing.py")
        subprocess.run([sys.executable, make_indexing, tmp], check=True)
        subprocess.run([mixprec, "compile", os.path.join(tmp, "indexing.onnx"), "--precision",
                        "fp32", "-o", os.path.join(out, "tiny_indexing.mpk")], check=True,
                       stderr=subprocess.DEVNULL, cwd=tmp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="Release build folder")
    parser.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = parser.parse_args()
    onnx_paths = write_onnx(os.path.join(args.out, "onnx"))
    write_npy(os.path.join(args.out, "npy"))
    write_modules(os.path.join(args.out, "module"), args.build, onnx_paths["mlp"])


if __name__ == "__main__":
    main()
