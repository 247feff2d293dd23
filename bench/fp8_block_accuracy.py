#!/usr/bin/env python3
"""FP8 per-tensor vs block scaling vs MXFP8 on encoders with outliers
(issue 25 part 2; figures in README "FP8 block scaling").

Builds two encoder layers with the e2e builder (tests/e2e/gen_models.py):
the e2e `encoder` (pre-LN: LayerNorm before every GEMM) and a post-LN one
(BERT's order: the hidden states go straight into the Q/K/V GEMMs, as in
Hugging Face's BertLayer), at hidden 256, 4 heads, MLP 1024, 2 x 64
tokens. Inputs: normal hidden states, some outlier feature channels (x20 in
every token) and, in one token of each sequence, massive activations (two
channels at 1e4 times the typical magnitude, as "attention sink" tokens of
trained transformers carry). Each model is compiled at --precision fp8 with
--fp8-scaling current (per-tensor), block and mxfp8, run on the CPU
backend, and compared with onnxruntime's FP32 output: the
relative L2 error over the ordinary tokens (the massive tokens left out)
and over all of them.

With --train MODEL (the e2e GPT-style block, build/tests/e2e/models/
gpt_block/model.onnx), it trains that block at FP8 under each recipe
(delayed per-tensor, Transformer Engine's training default; current
per-tensor; block; mxfp8) beside FP32 over --seeds data-order seeds
(`mixprec train --compare fp32 --seeds N`: 256 steps, AdamW, the
next-token task of tests/e2e/run_train.py's gpt-fp8 case) and prints each
recipe's test loss, FP32's, and the paired difference with its 95%
interval.

Usage: fp8_block_accuracy.py --mixprec build/bin/mixprec [--work DIR]
                             [--train MODEL [--seeds N] [--steps N]]
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import gen_models  # noqa: E402

BATCH, SEQ, HIDDEN, HEADS, MLP = 2, 64, 256, 4, 1024
MASSIVE_TOKEN = 0
OUTLIER_FEATURES = [5, 77, 200]


def inputs(seed=7):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
    x[..., [11, 97, 180]] *= 20.0                      # outlier features
    x[:, MASSIVE_TOKEN, [3, 140]] = [1e4, -1e4]        # massive activations
    return x


def encoder(path, post_ln, seed=3):
    """The e2e encoder's ops (gen_models.build_encoder) in pre-LN order, or
    in BERT's post-LN order: attention on the hidden states, add,
    LayerNorm; MLP, add, LayerNorm."""
    import onnx
    if not post_ln:
        from onnx import numpy_helper
        model, _ = gen_models.build_encoder(batch=BATCH, seq=SEQ, hidden=HIDDEN, heads=HEADS,
                                            mlp=MLP, name="encoder_pre_ln", seed=seed)
        # Outlier features that leave the FP32 function as it is (SmoothQuant's
        # migration run backwards): LayerNorm's scale and bias x2^10 on a few
        # channels, the rows of the GEMM weights that read them /2^10 (powers
        # of two: exact).
        inits = {t.name: t for t in model.graph.initializer}
        def scale(name, rows, factor):
            a = numpy_helper.to_array(inits[name]).copy()
            a[rows] *= np.float32(factor)
            inits[name].CopyFrom(numpy_helper.from_array(a, name))
        for ln, gemms in (("ln1", ("attn.q", "attn.k", "attn.v")), ("ln2", ("mlp.fc1",))):
            scale(ln + ".weight", OUTLIER_FEATURES, 1024.0)
            scale(ln + ".bias", OUTLIER_FEATURES, 1024.0)
            for gemm in gemms:
                scale(gemm + ".weight", OUTLIER_FEATURES, 1.0 / 1024.0)
        onnx.save(model, path)
        return
    g = gen_models.GraphBuilder("encoder_post_ln", seed)
    hd = HIDDEN // HEADS
    x = g.input("x", [BATCH, SEQ, HIDDEN])
    q = g.linear(x, HIDDEN, HIDDEN, "attn.q")
    k = g.linear(x, HIDDEN, HIDDEN, "attn.k")
    v = g.linear(x, HIDDEN, HIDDEN, "attn.v")
    split_shape = g.i64("heads_shape", [0, 0, HEADS, hd])
    qh = gen_models._split_heads(g, q, split_shape)
    kt = g.node("Transpose", [g.node("Reshape", [k, split_shape])], perm=[0, 2, 3, 1])
    vh = gen_models._split_heads(g, v, split_shape)
    scores = g.node("Div", [g.node("MatMul", [qh, kt]), g.f32("sqrt_head_dim", math.sqrt(hd))])
    ctx = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), vh])
    ctx = g.node("Reshape", [g.node("Transpose", [ctx], perm=[0, 2, 1, 3]),
                             g.const_node([0, 0, -1], np.int64)])
    h = g.layer_norm(g.node("Add", [x, g.linear(ctx, HIDDEN, HIDDEN, "attn.out")]), HIDDEN, "ln1")
    u = g.linear(h, HIDDEN, MLP, "mlp.fc1", gain=1.5)
    e = g.node("Erf", [g.node("Div", [u, g.f32("sqrt2", math.sqrt(2.0))])])
    act = g.node("Mul", [g.node("Mul", [u, g.node("Add", [e, g.f32("one", 1.0)])]),
                         g.f32("half", 0.5)])
    m = g.linear(act, MLP, HIDDEN, "mlp.fc2")
    g.layer_norm(g.node("Add", [h, m]), HIDDEN, "ln2", out="y")
    g.output("y", [BATCH, SEQ, HIDDEN])
    onnx.save(g.make_model(17, encoder.__doc__), path)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")


def train_table(args):
    """The GPT block trained at FP8 under each recipe beside FP32."""
    import json
    rng = np.random.default_rng(0)
    start = rng.integers(0, 96, (256, 1))
    stride = rng.integers(1, 4, (256, 1))
    seq = (start + stride * np.arange(17)) % 96
    xs, ys = os.path.join(args.work, "gpt_x.npy"), os.path.join(args.work, "gpt_y.npy")
    np.save(xs, seq[:, :16].astype(np.int64))
    np.save(ys, seq[:, 1:].astype(np.int64))
    print(f"| recipe | FP8 test loss | FP32 test loss | paired difference [95% interval] "
          f"| FP8 - FP32 accuracy |")
    print("| --- | --- | --- | --- | --- |")
    for scaling in ("delayed", "current", "block", "mxfp8"):
        metrics = os.path.join(args.work, f"train_{scaling}.json")
        run([args.mixprec, "train", args.train, "--data", "input_ids=" + xs, "--labels", ys,
             "--batch", "2", "--steps", str(args.steps), "--optimizer", "adamw", "--lr", "0.003",
             "--precision", "fp8", "--fp8-scaling", scaling, "--compare", "fp32", "--seeds",
             str(args.seeds), "--metrics", metrics, "--log-every", "100000", "--test-data",
             "input_ids=" + xs, "--test-labels", ys])
        with open(metrics) as f:
            m = json.load(f)
        e, d = m["ensemble"], m["differences"]
        loss = d["test_loss"]["paired"]
        acc = d["test_accuracy"]["paired"]
        print(f"| {scaling} | {e['fp8']['test_loss']['mean']:.4f} | "
              f"{e['fp32']['test_loss']['mean']:.4f} | {loss['difference']:+.4f} "
              f"[{loss['ci95'][0]:+.4f}, {loss['ci95'][1]:+.4f}] | "
              f"{100 * acc['difference']:+.2f} points |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", default="build/fp8-block-accuracy")
    ap.add_argument("--train", help="the GPT-style block's model.onnx: the training table")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=256)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.train:
        train_table(args)
        return
    import onnxruntime as ort

    x = inputs()
    xpath = os.path.join(args.work, "x.npy")
    np.save(xpath, x)
    models = {}
    for label, post_ln in (("pre-LN encoder, outlier features", False),
                           ("post-LN encoder (BERT order), massive tokens", True)):
        path = os.path.join(args.work, f"encoder_{'post' if post_ln else 'pre'}_ln.onnx")
        encoder(path, post_ln)
        models[label] = path
    ordinary = np.ones((BATCH, SEQ), bool)
    ordinary[:, MASSIVE_TOKEN] = False
    print("| model | scaling | rel. L2 error, ordinary tokens | rel. L2 error, all tokens |")
    print("| --- | --- | --- | --- |")
    for label, path in models.items():
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
            None, {"x": x})[0].astype(np.float64)
        for scaling in ("current", "block", "mxfp8"):
            mpk = os.path.join(args.work, f"{os.path.basename(path)}.{scaling}.mpk")
            out = os.path.join(args.work, f"out_{os.path.basename(path)}_{scaling}")
            run([args.mixprec, "compile", path, "--precision", "fp8", "--fp8-scaling", scaling,
                 "-o", mpk])
            run([args.mixprec, "run", mpk, "--input", "x=" + xpath, "--output-dir", out])
            y = np.load(os.path.join(out, "y.npy")).astype(np.float64)
            e_ord = np.linalg.norm((y - ref)[ordinary]) / np.linalg.norm(ref[ordinary])
            e_all = np.linalg.norm(y - ref) / np.linalg.norm(ref)
            name = {"current": "per-tensor (current)", "block": "block (1x128, 128x128)",
                    "mxfp8": "MXFP8 (1x32)"}[scaling]
            print(f"| {label} | {name} | {e_ord:.3e} | {e_all:.3e} |")


if __name__ == "__main__":
    main()
