#!/usr/bin/env python3
"""Generate the FP16 overflow test model for mixprec.

Usage:
    gen_overflow_model.py OUTDIR

Writes

    OUTDIR/model.onnx    single-head attention, opset 17, x[2,16,32] -> y[2,16,32]
    OUTDIR/input.npy     x for `mixprec validate --input x=...`
    OUTDIR/calib.npy     a second draw of x, for `--calibrate x=...`
    OUTDIR/expect.json   the ONNX node name of the scores MatMul, which
                         overflows FP16 first, and the input name

The block is x -> Q = x Wq, K = x Wk, V = x Wv (MatMul with initializers)
-> scores = MatMul(Q, Transpose(K)) -> Mul(scores, 1e-4) -> Softmax ->
MatMul(probs, V) -> y.  Wq and Wk are scaled (gain 73) so that Q and K stay
well inside FP16's range (|Q| ~ 300) while the raw scores Q K^T have a
standard deviation of about 3e4 and a largest magnitude of about 1e5, above
FP16's 65504: the scores MatMul overflows to inf in FP16, and the softmax
turns that into NaN.  The 1e-4 temperature brings the logits back to O(3),
so the FP32 model itself is well conditioned (softmax rows neither uniform
nor one-hot).  With calibration, mixprec sees the scores' amax (~1e5, times
the default FP16 margin 2, above 65504) and moves that MatMul to BF16.

Deterministic: weights and both inputs come from numpy Generator seed 11.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import GraphBuilder  # noqa: E402

BATCH, SEQ, DIM = 2, 16, 32
QK_GAIN = 73.0          # std(Q) = std(K) = 73, std(Q K^T) = 73^2 * sqrt(32) ~ 3.0e4
TEMPERATURE = 1e-4      # logits = Q K^T * 1e-4, std ~ 3


def build_overflow_attention(seed=11):
    """Single-head attention whose raw scores exceed FP16's range; see the
    module docstring.  Returns (model, x, x_calibration, name of the
    scores MatMul node)."""
    g = GraphBuilder("fp16_overflow_attention", seed)
    x = g.input("x", [BATCH, SEQ, DIM])
    q = g.node("MatMul", [x, g.weight("attn.q.weight", (DIM, DIM), gain=QK_GAIN)])
    k = g.node("MatMul", [x, g.weight("attn.k.weight", (DIM, DIM), gain=QK_GAIN)])
    v = g.node("MatMul", [x, g.weight("attn.v.weight", (DIM, DIM))])
    kt = g.node("Transpose", [k], perm=[0, 2, 1])
    scores = g.node("MatMul", [q, kt])                                 # ~1e5
    scores_node = g.nodes[-1].name
    logits = g.node("Mul", [scores, g.f32("temperature", TEMPERATURE)])
    probs = g.node("Softmax", [logits], axis=-1)
    g.node("MatMul", [probs, v], out="y")
    g.output("y", [BATCH, SEQ, DIM])
    x_val = g.rng.standard_normal((BATCH, SEQ, DIM)).astype(np.float32)
    x_cal = g.rng.standard_normal((BATCH, SEQ, DIM)).astype(np.float32)
    model = g.make_model(17, build_overflow_attention.__doc__)
    return model, x_val, x_cal, scores_node


def raw_scores(model, x):
    """Q K^T in float64 from the model's initializers (for the summary)."""
    from onnx import numpy_helper
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    q = x.astype(np.float64) @ w["attn.q.weight"]
    k = x.astype(np.float64) @ w["attn.k.weight"]
    return q, q @ np.swapaxes(k, -1, -2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    args = ap.parse_args(argv)
    import onnx
    os.makedirs(args.outdir, exist_ok=True)
    model, x_val, x_cal, scores_node = build_overflow_attention()
    onnx.checker.check_model(model, full_check=True)
    onnx.save_model(model, os.path.join(args.outdir, "model.onnx"))
    np.save(os.path.join(args.outdir, "input.npy"), x_val)
    np.save(os.path.join(args.outdir, "calib.npy"), x_cal)
    with open(os.path.join(args.outdir, "expect.json"), "w") as f:
        json.dump({"input": "x", "scores_node": scores_node}, f, indent=2)
        f.write("\n")
    for name, x in (("input", x_val), ("calib", x_cal)):
        q, s = raw_scores(model, x)
        print(f"{name}: max|Q| {np.abs(q).max():.3g}, max|QK^T| {np.abs(s).max():.3g}, "
              f"{int((np.abs(s) > 65504).sum())} of {s.size} scores above 65504")
    print(f"wrote model.onnx, input.npy, calib.npy, expect.json to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
