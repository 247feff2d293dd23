#!/usr/bin/env python3
"""FP8 block scaling and MXFP8 (issue 25 part 2): the CPU backend's module
and the interpreter against a NumPy reference of the same recipe, bit for
bit.

The model has two linear layers as ONNX writes them: Gemm(x1[9, 272],
w1[48, 272]^T, b1) and MatMul(x2[2, 5, 256], w2[256, 160]), so k has a
partial block (272 = 2 x 128 + 16), the weights come in both layouts, and
one input has rank 3. The inputs have outlier channels (x100), a row of
zeros (scale 1) and a row of tiny values (a large power-of-two scale); the
weight w1 has an outlier input channel. Compiled at --precision fp8 with
--fp8-scaling block (1x128 activation blocks, 128x128 weight blocks,
power-of-two scales) and mxfp8 (1x32 blocks, E8M0 scales).

The reference (this file, independent of the C++ code; ml_dtypes rounds):
  scale  block: the largest power of two <= 448 / amax (np.frexp);
         mx: 2^-ceil(log2(amax / 448)) (the inverse of Transformer Engine's
         E8M0 scale); 1 for amax 0, NaN for inf/NaN
  q      fp8_e4m3fn(clip(x * scale, -448, 448))  (x * scale in float32)
  gemm   per k-block, in order: P = the exact integer dot product of the
         block (values times 2^9, int64 matmul) as float32; acc = acc +
         ((P * 2^-18) / sa) / sb, all float32
  out    bf16(acc + bf16(bias)), then float32 (the model's output)
It also checks that block scaling beats per-tensor scaling on these inputs
(the outlier channels squeeze every other value of a per-tensor scale).

Usage: run_block_scaling.py --mixprec BIN --work DIR
Prints one line per check, then "N passed, N failed"; exits non-zero on any
failure.
"""

import argparse
import os
import subprocess
import sys

import ml_dtypes
import numpy as np

FP8_MAX = 448.0


def build_model(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((48, 272)) * 0.05).astype(np.float32)
    w1[:, 7] *= 40.0
    b1 = rng.standard_normal(48).astype(np.float32)
    w2 = (rng.standard_normal((256, 160)) * 0.05).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x1", "w1", "b1"], ["y1"], transB=1, name="fc1"),
             helper.make_node("MatMul", ["x2", "w2"], ["y2"], name="fc2")]
    graph = helper.make_graph(
        nodes, "block_scaling",
        [helper.make_tensor_value_info("x1", TensorProto.FLOAT, [9, 272]),
         helper.make_tensor_value_info("x2", TensorProto.FLOAT, [2, 5, 256])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [9, 48]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, 5, 160])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"w1": w1, "b1": b1, "w2": w2}


def make_inputs(seed=11):
    rng = np.random.default_rng(seed)
    x1 = rng.standard_normal((9, 272)).astype(np.float32)
    x1[:, [3, 130, 260]] *= 20.0       # outlier channels, one per k-block
    x1[0, [5, 200]] = [3e4, -2e4]      # a token with massive activations
    x1[2, :] = 0.0                     # an all-zero row: scale 1
    x1[5, :] *= np.float32(1e-20)      # tiny values: a large scale
    x2 = rng.standard_normal((2, 5, 256)).astype(np.float32)
    x2[..., 17] *= 20.0
    x2[1, 0, 40] = 5e4
    return {"x1": x1, "x2": x2}


# The rows of each output that the error figures leave out: the massive
# tokens (their error is the outlier's own), the zero and the tiny row.
SPECIAL_ROWS = {"y1": [0, 2, 5], "y2": [5]}


# ---- the reference ---------------------------------------------------------

def pow2_floor(q):
    """The largest power of two <= q (q > 0, float64), as float32."""
    _, e = np.frexp(q)
    return np.ldexp(np.float32(1.0), np.minimum(e - 1, 127)).astype(np.float32)


def block_scales(x, rows, cols, recipe):
    """Scales of x (last two dims in blocks rows x cols), float32."""
    *lead, r, c = x.shape
    sr, sc = -(-r // rows), -(-c // cols)
    pad = np.zeros(tuple(lead) + (sr * rows, sc * cols), np.float32)
    pad[..., :r, :c] = np.abs(x)
    blocks = pad.reshape(tuple(lead) + (sr, rows, sc, cols))
    amax = blocks.max(axis=(-3, -1))  # NaN propagates through max
    out = np.ones_like(amax, dtype=np.float32)
    finite = np.isfinite(amax)
    pos = finite & (amax > 0)
    if recipe == "block":
        out[pos] = pow2_floor(FP8_MAX / amax[pos].astype(np.float64))
    else:
        # The inverse of the E8M0 scale 2^ceil(log2(amax / 448)), as
        # Transformer Engine rounds it (up); computed another way here.
        r = amax[pos].astype(np.float64) / FP8_MAX
        c = np.ceil(np.log2(r)).astype(np.int64)
        c = np.where(np.ldexp(1.0, c) < r, c + 1, c)          # log2's rounding
        c = np.where(np.ldexp(1.0, c - 1) >= r, c - 1, c)
        out[pos] = np.ldexp(np.float32(1.0), np.clip(-c, -127, 127)).astype(np.float32)
    out[~finite] = np.nan
    return out


def quantize(x, scales, rows, cols):
    s = np.repeat(np.repeat(scales, rows, axis=-2), cols, axis=-1)
    s = s[..., :x.shape[-2], :x.shape[-1]]
    v = (x * s).astype(np.float32)
    bad = ~np.isfinite(v) | ~np.isfinite(x) | ~np.isfinite(s)
    q = np.clip(v, -FP8_MAX, FP8_MAX).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    q[bad] = np.nan
    return q


def block_gemm(qa, sa, a_rows, qb, sb, b_rows, kblock):
    """qa [m, k], qb [n, k] (E4M3 values): the block-scaled sum, float32."""
    m, k = qa.shape
    n = qb.shape[0]
    ia = (qa.astype(np.float64) * 512).astype(np.int64)
    ib = (qb.astype(np.float64) * 512).astype(np.int64)
    acc = np.zeros((m, n), np.float32)
    shift = np.float32(2.0 ** -18)
    for kb in range(-(-k // kblock)):
        sl = slice(kb * kblock, min(k, (kb + 1) * kblock))
        p = (ia[:, sl] @ ib[:, sl].T).astype(np.float32)  # exact, then one rounding
        a_s = np.repeat(sa[:, kb], a_rows)[:m][:, None]
        b_s = np.repeat(sb[:, kb], b_rows)[:n][None, :]
        acc = (acc + ((p * shift) / a_s) / b_s).astype(np.float32)
    return acc


def bf16(x):
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def reference(params, inputs, recipe):
    mx = recipe == "mx"
    a_block = (1, 32) if mx else (1, 128)
    w_block = (1, 32) if mx else (128, 128)
    out = {}
    for name, x, w_nk, bias in (("y1", inputs["x1"], params["w1"], params["b1"]),
                                ("y2", inputs["x2"], params["w2"].T.copy(), None)):
        x2d = x.reshape(-1, x.shape[-1])
        sa = block_scales(x2d, *a_block, recipe)
        qa = quantize(x2d, sa, *a_block)
        sw = block_scales(w_nk, *w_block, recipe)
        qw = quantize(w_nk, sw, *w_block)
        acc = block_gemm(qa, sa, a_block[0], qw, sw, w_block[0], a_block[1])
        if bias is not None:
            acc = (acc + bf16(bias)[None, :]).astype(np.float32)
        out[name] = bf16(acc).reshape(x.shape[:-1] + (w_nk.shape[0],))
    return out


def fp32_reference(params, inputs):
    return {"y1": inputs["x1"].astype(np.float64) @ params["w1"].T.astype(np.float64)
                  + params["b1"].astype(np.float64),
            "y2": inputs["x2"].astype(np.float64) @ params["w2"].astype(np.float64)}


# ---- running mixprec -------------------------------------------------------

def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p


def mixprec_outputs(mixprec, model, inputs, work, tag):
    out_dir = os.path.join(work, "out_" + tag)
    os.makedirs(out_dir, exist_ok=True)
    cmd = [mixprec, "run", model, "--output-dir", out_dir]
    for name, value in inputs.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, value)
        cmd += ["--input", f"{name}={path}"]
    run(cmd)
    return {n: np.load(os.path.join(out_dir, n + ".npy")) for n in ("y1", "y2")}


def same_bits(a, b):
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    both_nan = np.isnan(a) & np.isnan(b)
    return a.shape == b.shape and bool(np.all(both_nan | (a.view(np.uint32) == b.view(np.uint32))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "block_scaling.onnx")
    params = build_model(model)
    inputs = make_inputs()
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS " if ok else "FAIL ") + what)
        passed += ok
        failed += not ok

    exact = fp32_reference(params, inputs)
    errors = {}
    for scaling, recipe in (("block", "block"), ("mxfp8", "mx"), ("current", None)):
        mpk = os.path.join(args.work, f"m_{scaling}.mpk")
        mlir = os.path.join(args.work, f"m_{scaling}.mlirbc")
        run([args.mixprec, "compile", model, "--precision", "fp8", "--fp8-scaling", scaling,
             "-o", mpk])
        run([args.mixprec, "compile", model, "--precision", "fp8", "--fp8-scaling", scaling,
             "-o", mlir])
        module = mixprec_outputs(args.mixprec, mpk, inputs, args.work, scaling + "_cpu")
        interp = mixprec_outputs(args.mixprec, mlir, inputs, args.work, scaling + "_interp")
        for name in ("y1", "y2"):
            check(same_bits(module[name], interp[name]),
                  f"{scaling} {name}: CPU backend module = interpreter, bit for bit")
        if recipe:
            ref = reference(params, inputs, recipe)
            for name in ("y1", "y2"):
                ok = same_bits(module[name], ref[name])
                detail = "" if ok else (
                    f" ({int(np.sum(module[name].view(np.uint32) != ref[name].view(np.uint32)))}"
                    f" of {ref[name].size} differ)")
                check(ok, f"{scaling} {name}: module = NumPy reference of the recipe, bit for "
                          f"bit{detail}")
        # Error against FP64 over the ordinary tokens (rows): those a
        # per-tensor scale squeezes when another token is massive.
        err = []
        for name in ("y1", "y2"):
            y = module[name].astype(np.float64).reshape(-1, module[name].shape[-1])
            r = exact[name].reshape(y.shape)
            rows = np.ones(r.shape[0], bool)
            rows[SPECIAL_ROWS[name]] = False
            err.append(np.linalg.norm((y - r)[rows]) / np.linalg.norm(r[rows]))
        errors[scaling] = err
        print(f"     {scaling}: relative L2 error of the ordinary tokens: y1 {err[0]:.3e}, "
              f"y2 {err[1]:.3e}")
    for i, name in enumerate(("y1", "y2")):
        check(errors["block"][i] < errors["current"][i],
              f"{name}: block scaling error {errors['block'][i]:.3e} < per-tensor "
              f"{errors['current'][i]:.3e}")
        check(errors["mxfp8"][i] < errors["current"][i],
              f"{name}: mxfp8 error {errors['mxfp8'][i]:.3e} < per-tensor "
              f"{errors['current'][i]:.3e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
