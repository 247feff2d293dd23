#!/usr/bin/env python3
"""Run the mixprec CLI on the e2e models and compare with onnxruntime.

Usage:
    run_e2e.py --mixprec BIN --models DIR [--rtol 1e-4] [--elem-rtol X]
               [--import-only | --via-mlir] [--errors DIR] [-k NAME ...]

DIR is a directory written by gen_models.py (or gen_bad_inputs.py, or
bench/gen_bench_models.py): DIR/manifest.json lists the models, their input
files and reference output files (onnxruntime CPU, FP32).

Default mode, for every model M in the manifest:
    BIN run DIR/M/model.onnx --input NAME=FILE [--input ...] --output-dir TMP
(one --input flag per graph input), then for every output NAME listed in the
manifest loads TMP/NAME.npy (a = mixprec) and DIR/M/ref/NAME.npy (b =
reference) and reports, using float64 arithmetic:

    max_rel  = max|a - b| / max(max|b|, tiny)     tiny = float32 smallest
                                                  normal (1.18e-38)
    elem_rel = max over elements with |b| > 1e-3 of |a - b| / |b|

max_rel is the pass criterion: an output passes iff its file exists, has
b's shape and dtype float32, is finite wherever b is, and max_rel < --rtol
(default 1e-4). A bool or integer output (b's dtype) passes iff it has b's
shape and dtype and every element equals b's.  elem_rel is printed for information; with --elem-rtol X it
must also be < X.  One line is printed per output, then exactly
"N passed, N failed"; the exit status is 0 only if nothing failed (and at
least one check ran).  A failed `mixprec run` (non-zero exit, timeout) fails
every output of that model.

--via-mlir: first `BIN import model.onnx -o TMP/model.mlir`, then run the
.mlir file instead of the .onnx (tests the textual IR round trip).

--import-only: smoke test; per model runs `BIN import model.onnx` (output
on stdout must be non-empty) and `BIN import model.onnx -o TMP/model.mlir`
(the file must be non-empty); one line per model.

--errors DIR: DIR written by gen_bad_inputs.py; runs each entry of its
manifest's "error_cases" and expects a clean failure: exit status 1..127
(not a signal/crash, not a timeout), a non-empty message on stderr of one
line, containing the expected substrings if any.  May be combined with
--models (both sets of checks are counted).
"""

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile

import numpy as np

TINY = float(np.finfo(np.float32).tiny)
ELEM_FLOOR = 1e-3


def compare(a, b):
    """Return (max_abs, max_rel, elem_rel) for actual a vs reference b."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == 0:
        return 0.0, 0.0, 0.0
    diff = np.abs(a - b)
    max_abs = float(np.max(diff))
    max_rel = max_abs / max(float(np.max(np.abs(b))), TINY)
    big = np.abs(b) > ELEM_FLOOR
    elem_rel = float(np.max(diff[big] / np.abs(b[big]))) if np.any(big) else 0.0
    return max_abs, max_rel, elem_rel


def run_cmd(argv, timeout):
    """Run argv; returns (returncode or None on timeout, stdout, stderr).

    The command gets its own process group, killed as a whole on timeout."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace", start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return None, out, err


def describe_failure(argv, rc, out, err):
    what = "timed out" if rc is None else (
        f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}")
    tail = (err.strip() or out.strip()).splitlines()[-5:]
    lines = [f"    command: {shlex.join(argv)}", f"    {what}"]
    lines += [f"    | {t}" for t in tail]
    return "\n".join(lines)


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def report(self, ok, label, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'}  {label}  {detail}".rstrip(), flush=True)


def load_manifest(d):
    path = os.path.join(d, "manifest.json")
    with open(path) as f:
        return json.load(f)


def select(models, patterns):
    if not patterns:
        return models
    return [m for m in models if any(p in m["name"] for p in patterns)]


def check_model_outputs(args, m, mdir, tmp, tally):
    """Default / --via-mlir mode for one manifest entry."""
    model = os.path.join(mdir, m["model"])
    out_dir = os.path.join(tmp, m["name"], "out")
    os.makedirs(out_dir, exist_ok=True)
    outputs = m["outputs"]

    def fail_all(msg):
        for o in outputs:
            tally.report(False, f"{m['name']}:{o['name']}", "(model did not run)")
        print(msg, flush=True)

    if args.via_mlir:
        mlir = os.path.join(tmp, m["name"], "model.mlir")
        argv = [args.mixprec, "import", model, "-o", mlir]
        rc, out, err = run_cmd(argv, args.timeout)
        if rc != 0 or not os.path.isfile(mlir):
            fail_all(describe_failure(argv, rc, out, err))
            return
        model = mlir

    argv = [args.mixprec, "run", model] + (["--backend", args.backend] if args.backend else [])
    for i in m["inputs"]:
        argv += ["--input", f"{i['name']}={os.path.join(mdir, i['file'])}"]
    argv += ["--output-dir", out_dir]
    rc, out, err = run_cmd(argv, args.timeout)
    if rc != 0:
        fail_all(describe_failure(argv, rc, out, err))
        return

    for o in outputs:
        label = f"{m['name']}:{o['name']}"
        ref = np.load(os.path.join(mdir, o["file"]))
        path = os.path.join(out_dir, o["name"] + ".npy")
        if not os.path.isfile(path):
            tally.report(False, label, f"missing output file {path}")
            continue
        try:
            got = np.load(path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - any unreadable file is a failure
            tally.report(False, label, f"cannot load {path}: {e}")
            continue
        if got.shape != ref.shape:
            tally.report(False, label, f"shape {list(got.shape)} != expected {list(ref.shape)}")
            continue
        if ref.dtype != np.float32:  # bool and integer outputs: exactly
            if got.dtype != ref.dtype:
                tally.report(False, label, f"dtype {got.dtype} != expected {ref.dtype}")
                continue
            wrong = int(np.sum(got != ref))
            tally.report(wrong == 0, label, f"shape={list(ref.shape)} dtype={ref.dtype} "
                                            f"{wrong} of {ref.size} elements differ")
            continue
        if got.dtype != np.float32:
            tally.report(False, label, f"dtype {got.dtype} != expected float32")
            continue
        bad = ~np.isfinite(got) & np.isfinite(ref)
        if np.any(bad):
            tally.report(False, label, f"{int(bad.sum())} non-finite values")
            continue
        max_abs, max_rel, elem_rel = compare(got, ref)
        ok = max_rel < args.rtol
        if args.elem_rtol is not None:
            ok = ok and elem_rel < args.elem_rtol
        tally.report(ok, label, f"shape={list(ref.shape)} max_abs={max_abs:.3e} "
                                f"max_rel={max_rel:.3e} elem_rel(|b|>{ELEM_FLOOR:g})={elem_rel:.3e}")


def check_import(args, m, mdir, tmp, tally):
    """--import-only mode for one manifest entry."""
    model = os.path.join(mdir, m["model"])
    label = f"import {m['name']}"
    argv = [args.mixprec, "import", model]
    rc, out, err = run_cmd(argv, args.timeout)
    if rc != 0 or not out.strip():
        tally.report(False, label, "(stdout)")
        print(describe_failure(argv, rc, out, err) if rc != 0 else "    empty stdout", flush=True)
        return
    mlir = os.path.join(tmp, m["name"] + ".mlir")
    argv = [args.mixprec, "import", model, "-o", mlir]
    rc, out2, err = run_cmd(argv, args.timeout)
    if rc != 0 or not os.path.isfile(mlir) or os.path.getsize(mlir) == 0:
        tally.report(False, label, "(-o)")
        print(describe_failure(argv, rc, out2, err) if rc != 0 else f"    {mlir} missing or empty",
              flush=True)
        return
    tally.report(True, label, f"{len(out.splitlines())} lines, {os.path.getsize(mlir)} bytes")


def check_errors(args, edir, tmp, tally):
    """--errors mode: every error case must fail cleanly with a one-line message."""
    cases = load_manifest(edir).get("error_cases", [])
    for c in select(cases, args.k):
        out_dir = os.path.join(tmp, "errors", c["name"])
        os.makedirs(out_dir, exist_ok=True)
        argv = [args.mixprec] + [a.format(dir=edir, tmp=out_dir) for a in c["argv"]]
        rc, out, err = run_cmd(argv, args.timeout)
        label = f"error {c['name']}"
        lines = [ln for ln in err.splitlines() if ln.strip()]
        problems = []
        if rc is None:
            problems.append("timed out")
        elif rc == 0:
            problems.append("exit status 0 (expected an error)")
        elif rc < 0 or rc >= 128:
            problems.append(f"crashed (status {rc})")
        if not lines:
            problems.append("no message on stderr")
        elif len(lines) > 1:
            problems.append(f"{len(lines)} lines on stderr (expected one)")
        msg = " ".join(lines)
        for s in c.get("expect_in_message", []):
            if s.lower() not in msg.lower():
                problems.append(f"message lacks {s!r}")
        shown = msg if len(msg) <= 160 else msg[:157] + "..."
        tally.report(not problems, label,
                     f"rc={rc} " + ("; ".join(problems) + " | " if problems else "") + repr(shown))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", required=True, help="path to the mixprec binary")
    ap.add_argument("--models", help="directory with manifest.json (gen_models.py output)")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="bound on max_rel per output (default 1e-4)")
    ap.add_argument("--elem-rtol", type=float, default=None,
                    help="also require elem_rel < this (default: report only)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--import-only", action="store_true",
                      help="only run `mixprec import` on each model")
    mode.add_argument("--via-mlir", action="store_true",
                      help="import to .mlir first, then run the .mlir")
    ap.add_argument("--errors", metavar="DIR", help="gen_bad_inputs.py output: check error cases")
    ap.add_argument("--backend", default=None,
                    help="passed to `mixprec run`: interpreter (the FP32 reference), cpu "
                         "(compile just in time and run the module on the runtime), auto")
    ap.add_argument("-k", nargs="+", metavar="NAME",
                    help="only models / error cases whose name contains one of these")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per command (default 300)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write mixprec outputs under DIR and keep them (default: temp dir)")
    args = ap.parse_args(argv)
    if not args.models and not args.errors:
        ap.error("give --models DIR and/or --errors DIR")
    if not (os.path.isfile(args.mixprec) and os.access(args.mixprec, os.X_OK)):
        ap.error(f"--mixprec {args.mixprec}: not an executable file")
    args.mixprec = os.path.abspath(args.mixprec)

    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="mixprec_e2e_") as tmpdir:
        tmp = args.keep or tmpdir
        os.makedirs(tmp, exist_ok=True)
        if args.models:
            mdir = os.path.abspath(args.models)
            for m in select(load_manifest(mdir)["models"], args.k):
                if args.import_only:
                    check_import(args, m, mdir, tmp, tally)
                else:
                    check_model_outputs(args, m, mdir, tmp, tally)
        if args.errors:
            check_errors(args, os.path.abspath(args.errors), tmp, tally)

    print(f"{tally.passed} passed, {tally.failed} failed")
    if tally.passed + tally.failed == 0:
        print("error: nothing was checked (empty manifest or -k matched nothing)",
              file=sys.stderr)
        return 1
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
