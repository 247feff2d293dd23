#!/usr/bin/env python3
"""The figures of bench/README.md "Readable IR" (issue 12), on the 12-layer
GPT-2 that bench/make_gpt2.py exports:

- the readable IR (`compile --precision bf16 --elide-weights -o X.mlir`):
  its size, and the command's wall time and peak memory;
- the bytecode (`compile --emit mp-mlirbc`, at bf16 and fp32): size against
  the model's FP32 weights (4 bytes per parameter: every initializer's
  elements), wall time and peak memory;
- the round trip: `run X.mlirbc` against `run gpt2.onnx --backend
  interpreter` at the same precision, on the same inputs: the outputs must
  be equal bit for bit;
- with --full-text, the runnable MLIR text as well (`-o X.mlir` without
  --elide-weights, the form the issue measured at 804 MB).

Each command runs under /usr/bin/time -v (wall clock and maximum resident
set size). Prints a Markdown table; exits 1 if the round trip differs.

Usage: python3 bench/readable_ir.py --mixprec build/bin/mixprec --model DIR/gpt2.onnx
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx


def timed(argv):
    """Runs argv under /usr/bin/time -v; returns (wall seconds, max RSS MiB)."""
    r = subprocess.run(["/usr/bin/time", "-v"] + argv, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(argv)}\n{r.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    hours, minutes, seconds = wall.groups()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds), rss / 1024


def fp32_weight_bytes(model_path):
    """4 bytes per element of every initializer (the weights at FP32)."""
    model = onnx.load(model_path, load_external_data=False)
    return sum(4 * int(np.prod(t.dims)) for t in model.graph.initializer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mixprec", default="build/bin/mixprec")
    parser.add_argument("--model", required=True, help="gpt2.onnx from bench/make_gpt2.py")
    parser.add_argument("--full-text", action="store_true",
                        help="also write the runnable MLIR text (large)")
    args = parser.parse_args()
    model_dir = os.path.dirname(os.path.abspath(args.model))
    inputs = []
    for name in ("input_ids", "attention_mask"):
        inputs += ["--input", f"{name}={os.path.join(model_dir, name + '.npy')}"]
    weights = fp32_weight_bytes(args.model)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def out(name):
            return os.path.join(tmp, name)

        def row(what, argv, path):
            wall, rss = timed(argv)
            size = os.path.getsize(path)
            rows.append((what, size, size / weights, wall, rss))

        row("readable IR, bf16 (`--elide-weights -o X.mlir`)",
            [args.mixprec, "compile", args.model, "--precision", "bf16", "--elide-weights",
             "-o", out("read.mlir")], out("read.mlir"))
        for precision in ("bf16", "fp32"):
            row(f"bytecode, {precision} (`--emit mp-mlirbc`)",
                [args.mixprec, "compile", args.model, "--precision", precision,
                 "--emit", "mp-mlirbc", "-o", out(precision + ".mlirbc")],
                out(precision + ".mlirbc"))
        if args.full_text:
            row("runnable text, bf16 (`-o X.mlir`)",
                [args.mixprec, "compile", args.model, "--precision", "bf16", "-o",
                 out("full.mlir")], out("full.mlir"))
        # The round trip: the bytecode runs as the ONNX model does.
        same = True
        runs = []
        for precision in ("bf16", "fp32"):
            bc_dir, onnx_dir = out("bc_" + precision), out("onnx_" + precision)
            wall_bc, rss_bc = timed([args.mixprec, "run", out(precision + ".mlirbc"),
                                     "--output-dir", bc_dir] + inputs)
            wall_onnx, rss_onnx = timed([args.mixprec, "run", args.model, "--backend",
                                         "interpreter", "--precision", precision,
                                         "--output-dir", onnx_dir] + inputs)
            a = np.load(os.path.join(bc_dir, "logits.npy"))
            b = np.load(os.path.join(onnx_dir, "logits.npy"))
            equal = a.shape == b.shape and np.array_equal(a, b)
            same &= equal
            runs.append((precision, wall_bc, rss_bc, wall_onnx, rss_onnx, equal,
                         float(np.max(np.abs(a - b))) if a.shape == b.shape else float("nan")))
    print(f"FP32 weights: {weights} bytes\n")
    print("| file | bytes | / FP32 weights | wall | max RSS |")
    print("| --- | --- | --- | --- | --- |")
    for what, size, ratio, wall, rss in rows:
        print(f"| {what} | {size:,} | {ratio:.3f}x | {wall:.2f} s | {rss:,.0f} MiB |")
    print("\n| precision | `run X.mlirbc` wall / RSS | `run gpt2.onnx --backend interpreter` "
          "wall / RSS | logits equal bit for bit | max abs diff |")
    print("| --- | --- | --- | --- | --- |")
    for precision, wb, rb, wo, ro, equal, diff in runs:
        print(f"| {precision} | {wb:.2f} s / {rb:,.0f} MiB | {wo:.2f} s / {ro:,.0f} MiB | "
              f"{'yes' if equal else 'NO'} | {diff:g} |")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
