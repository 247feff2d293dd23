#!/usr/bin/env python3
"""Time a model with onnxruntime on the CPU; print the result as JSON.

Usage:
    ort_time.py MODEL [--inputs NAME=FILE.npy ...] [--inputs-dir DIR]
                [--repeat N] [--warmup W] [--opt-level all|extended|basic|disable]

Runs MODEL twice over: once with a single thread (intra_op_num_threads=1,
inter_op_num_threads=1) and once with onnxruntime's default thread count
(intra_op_num_threads=0, i.e. one per physical core), each with W untimed
warm-up runs and N timed runs of session.run (wall clock, perf_counter).
Prints one JSON object with the median (and min/max) time in milliseconds:

  {"model": ..., "onnxruntime": "1.x", "opt_level": "all", "repeat": N,
   "warmup": W, "cpu_count": C,
   "single_thread_median_ms": ..., "default_threads_median_ms": ...,
   "single_thread": {"median_ms", "min_ms", "max_ms"},
   "default_threads": {"median_ms", "min_ms", "max_ms"}}

Inputs come from --inputs NAME=FILE pairs, else from --inputs-dir (every
DIR/NAME.npy, e.g. the inputs/ folder written by gen_bench_models.py), else
they are generated (seed 0): float inputs ~ N(0,1), integer inputs all 0
(a valid token id for any embedding table).
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
ORT_TO_NP = {"tensor(float)": np.float32, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32,
             "tensor(bool)": np.bool_, "tensor(float16)": np.float16}


def make_session(model, threads, opt_level):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if threads == 1:
        so.inter_op_num_threads = 1
    so.graph_optimization_level = OPT_LEVELS[opt_level]
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def load_inputs(sess, args):
    feeds = {}
    if args.inputs:
        for spec in args.inputs:
            name, sep, path = spec.partition("=")
            if not sep:
                sys.exit(f"--inputs {spec!r}: expected NAME=FILE.npy")
            feeds[name] = np.load(path)
    elif args.inputs_dir:
        for f in sorted(os.listdir(args.inputs_dir)):
            if f.endswith(".npy"):
                feeds[f[:-4]] = np.load(os.path.join(args.inputs_dir, f))
    rng = np.random.default_rng(0)
    for i in sess.get_inputs():
        if i.name in feeds:
            continue
        dtype = ORT_TO_NP.get(i.type)
        if dtype is None or any(not isinstance(d, int) for d in i.shape):
            sys.exit(f"cannot generate input {i.name} ({i.type} {i.shape}); pass --inputs")
        if np.issubdtype(dtype, np.floating):
            feeds[i.name] = rng.standard_normal(i.shape).astype(dtype)
        else:
            feeds[i.name] = np.zeros(i.shape, dtype=dtype)
    unknown = set(feeds) - {i.name for i in sess.get_inputs()}
    if unknown:
        sys.exit(f"unknown input name(s): {', '.join(sorted(unknown))}")
    return feeds


def time_session(sess, feeds, warmup, repeat):
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": round(statistics.median(times), 4),
            "min_ms": round(min(times), 4), "max_ms": round(max(times), 4)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("model", help="ONNX model file")
    ap.add_argument("--inputs", nargs="+", metavar="NAME=FILE",
                    help="input .npy files, one NAME=FILE per graph input")
    ap.add_argument("--inputs-dir", metavar="DIR", help="read DIR/<input name>.npy")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--opt-level", choices=sorted(OPT_LEVELS), default="all",
                    help="onnxruntime graph optimization level (default all)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

    result = {"model": args.model, "onnxruntime": ort.__version__,
              "opt_level": args.opt_level, "repeat": args.repeat, "warmup": args.warmup,
              "cpu_count": os.cpu_count()}
    feeds = None
    for key, threads in (("single_thread", 1), ("default_threads", 0)):
        sess = make_session(args.model, threads, args.opt_level)
        if feeds is None:
            feeds = load_inputs(sess, args)
        result[key] = time_session(sess, feeds, args.warmup, args.repeat)
        result[key + "_median_ms"] = result[key]["median_ms"]
        del sess
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
