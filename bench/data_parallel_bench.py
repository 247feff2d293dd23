#!/usr/bin/env python3
"""Data-parallel training throughput on the CPU (issue 26): 2 ranks vs 1.

    data_parallel_bench.py [--mixprec build/bin/mixprec] [--steps 60]
                           [--repeat 3] [--precisions fp32,bf16]
                           [--work DIR] [--json FILE]

The model: a GPT-style decoder block built by tests/e2e/gen_models.py's
build_gpt_block at a size where a step is real work (batch 8 per rank,
sequence 64, hidden 256, 4 heads, MLP 1024, vocabulary 512, tied LM head:
0.9M parameters), trained on a next-token task over random token ids with
AdamW (lr 1e-3), cross-entropy at every position, on the CPU backend.

Rows (weak scaling: every rank trains --batch 8; the global batch grows
with the ranks):
  1 rank, 1 thread      OPENBLAS_NUM_THREADS=1
  1 rank, 2 threads     OpenBLAS's two threads on the machine's two cores
  2 ranks, 1 thread     mpirun -np 2, OPENBLAS_NUM_THREADS=1 per rank
For each: samples/s of the whole training loop ("trained N steps in S s (R
samples/s)", the best of --repeat), and for 2 ranks the all-reduce's share
of the step time from the summary line (its calls, bytes per rank and
seconds, waiting for the slower rank included). The speedup column is
against 1 rank with 1 thread.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))


def make_model(work, batch):
    import onnx
    import gen_models  # noqa: E402 (tests/e2e)
    model, _ = gen_models.build_gpt_block(batch=batch, seq=64, hidden=256, heads=4, mlp=1024,
                                          vocab=512, name="gpt_dp_bench", seed=26)
    path = os.path.join(work, f"gpt_b{batch}.onnx")
    onnx.save(model, path)
    return path


def make_data(work, rows=512, seq=64, vocab=512):
    rng = np.random.default_rng(26)
    ids = rng.integers(0, vocab, size=(rows, seq)).astype(np.int64)
    x, y = os.path.join(work, "ids.npy"), os.path.join(work, "labels.npy")
    np.save(x, ids)
    np.save(y, np.roll(ids, -1, axis=1))
    return x, y


def run(argv, env):
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", default="build/bin/mixprec")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--work", default="build/bench/data_parallel")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    batch = 8
    model = make_model(args.work, batch)
    x, y = make_data(args.work)
    base_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    configs = [("1 rank, 1 thread", 1, "1"), ("1 rank, 2 threads", 1, None),
               ("2 ranks, 1 thread", 2, "1")]
    results = []
    for precision in args.precisions.split(","):
        baseline = None
        for label, ranks, threads in configs:
            env = dict(base_env)
            if threads:
                env["OPENBLAS_NUM_THREADS"] = threads
            else:
                env.pop("OPENBLAS_NUM_THREADS", None)
            argv = [args.mixprec, "train", model, "--data", "input_ids=" + x, "--labels", y,
                    "--backend", "cpu", "--precision", precision, "--optimizer", "adamw",
                    "--lr", "1e-3", "--batch", str(batch), "--steps", str(args.steps),
                    "--log-every", str(args.steps)]
            if ranks > 1:
                argv = ["mpirun", "--oversubscribe", "-np", str(ranks), "-x",
                        "OPENBLAS_NUM_THREADS"] + argv
            best, share = 0.0, ""
            for _ in range(args.repeat):
                out = run(argv, env)
                m = re.search(r"trained \d+ steps in [\d.]+ s \((\d+) samples/s\)", out)
                rate = float(m.group(1))
                if rate > best:
                    best = rate
                    s = re.search(r"all-reduce \(\w+\) (\d+) calls, ([\d.]+ \w+) per rank, ([\d.]+) s "
                                  r"\(([\d.]+)% of the step time\)", out)
                    share = f"{s.group(4)}% ({s.group(1)} calls, {s.group(2)})" if s else ""
            if baseline is None:
                baseline = best
            row = {"precision": precision, "config": label, "samples_per_s": best,
                   "speedup": best / baseline, "allreduce_share": share}
            results.append(row)
            print(f"| {precision} | {label} | {best:.0f} | {best / baseline:.2f}x | "
                  f"{share or '-'} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
