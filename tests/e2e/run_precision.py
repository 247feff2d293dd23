#!/usr/bin/env python3
"""Check the error of mixprec's mixed-precision plans against FP32.

Usage:
    run_precision.py --mixprec BIN --models DIR [--precisions bf16,fp16,fp8]
                     [--bounds FILE] [--readme FILE] [-k NAME ...] [--timeout S]

DIR is a directory written by gen_models.py. For every model M of its
manifest and every precision P:

  validate   BIN validate DIR/M/model.onnx --precision P --input NAME=FILE...
             --json TMP (the model's stored inputs). The command must exit 0
             (every output finite), and for every graph output:
                 max_rel <= bounds[P].max_rel   (max|a-b| / max|b|, b = FP32)
                 cosine  >= bounds[P].min_cosine
  report     BIN report DIR/M/model.onnx --precision P --json TMP. GEMM
             weights (constant-derived weight operands of matmul/linear/conv)
             must take exactly half their FP32 bytes at bf16 and fp16; at
             fp8, those of FP8 GEMMs a quarter and the others (GEMMs that FP8
             cannot run, which fall back to BF16) half; and, for the models
             listed in the bounds file's "fp8_quartered_models", the total a
             quarter.

The bounds live in one place, FILE (default: precision_bounds.json next to
this script); with --readme, the '## Precision' table of README.md must
state the same numbers (one check). Checks named in the file's "xfail" map
are expected to fail: they print XFAIL (not counted as failures), or XPASS
(counted as a failure, so that the entry gets removed) when they pass.

One line per check, then exactly "N passed, N failed"; the exit status is 0
only if nothing failed and at least one check ran.
"""

import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure, load_manifest, run_cmd, select  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PRECISIONS = ["bf16", "fp16", "fp8"]


class Checks(Tally):
    """A Tally that knows the expected failures."""

    def __init__(self, xfail):
        super().__init__()
        self.xfail = dict(xfail)
        self.expected = 0

    def check(self, ok, label, detail=""):
        if label in self.xfail:
            why = self.xfail[label]
            if ok:
                self.report(False, label, f"XPASS (listed as xfail: {why}) {detail}")
            else:
                self.expected += 1
                print(f"XFAIL {label}  {detail}  ({why})", flush=True)
            return
        self.report(ok, label, detail)


def load_bounds(path):
    with open(path) as f:
        return json.load(f)


def readme_bounds(path):
    """{precision: (max_rel, min_cosine)} from the table under '## Precision'."""
    with open(path) as f:
        text = f.read()
    m = re.search(r"^## Precision\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        return None
    found = {}
    for line in m.group(1).splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in PRECISIONS:
            try:
                found[cells[0]] = (float(cells[1]), float(cells[2]))
            except ValueError:
                pass
    return found


def inputs_argv(m, mdir):
    argv = []
    for i in m["inputs"]:
        argv += ["--input", f"{i['name']}={os.path.join(mdir, i['file'])}"]
    return argv


def run_json(args, argv, json_path, ok_codes=(0,)):
    """Runs a mixprec command that writes --json; returns (doc, failure text)."""
    argv = argv + ["--json", json_path]
    rc, out, err = run_cmd(argv, args.timeout)
    doc = None
    if os.path.isfile(json_path):
        try:
            with open(json_path) as f:
                doc = json.load(f)
        except ValueError as e:
            return None, f"    cannot parse {json_path}: {e}"
    if rc not in ok_codes or doc is None:
        return doc, describe_failure(argv, rc, out, err)
    return doc, None


def check_validate(args, m, mdir, precision, bound, tmp, checks):
    model = os.path.join(mdir, m["model"])
    argv = [args.mixprec, "validate", model, "--precision", precision] + inputs_argv(m, mdir)
    doc, failure = run_json(args, argv, os.path.join(tmp, f"{m['name']}.{precision}.validate.json"))
    if failure:
        first = (doc or {}).get("first_nonfinite")
        for o in m["outputs"]:
            checks.check(False, f"{m['name']}:{o['name']}@{precision}",
                         "validate failed" + (f"; first non-finite op {first}" if first else ""))
        print(failure, flush=True)
        return
    # validate's default bounds are this table's (README "Error bounds").
    if doc.get("bounds") == f"{precision}'s default":
        checks.check(doc.get("tolerance") == bound["max_rel"]
                     and doc.get("min_cosine") == bound["min_cosine"],
                     f"{m['name']}@{precision}:validate-defaults",
                     f"validate's default bounds {doc.get('tolerance')}, {doc.get('min_cosine')} "
                     f"vs precision_bounds.json {bound['max_rel']}, {bound['min_cosine']}")
    for o in doc["outputs"]:
        label = f"{m['name']}:{o['name']}@{precision}"
        rel, cos = o["max_rel"], o["cosine"]
        ok = (rel is not None and cos is not None and rel <= bound["max_rel"]
              and cos >= bound["min_cosine"])
        rel_s = "null" if rel is None else f"{rel:.3e}"
        cos_s = "null" if cos is None else f"{cos:.8f}"
        checks.check(ok, label, f"max_rel {rel_s} (bound {bound['max_rel']:g}), "
                                f"cosine {cos_s} (bound {bound['min_cosine']:g}), "
                                f"nonfinite {o['nonfinite']}")


def check_report(args, m, mdir, precision, quartered, tmp, checks):
    model = os.path.join(mdir, m["model"])
    argv = [args.mixprec, "report", model, "--precision", precision]
    label = f"{m['name']}@{precision} gemm weight bytes"
    doc, failure = run_json(args, argv, os.path.join(tmp, f"{m['name']}.{precision}.report.json"))
    if failure:
        checks.check(False, label, "report failed")
        print(failure, flush=True)
        return
    s = doc["summary"]
    total, fp32 = s["gemm_weight_bytes"], s["gemm_weight_bytes_fp32"]
    if fp32 == 0:
        return  # no GEMM weights in this model
    if precision in ("bf16", "fp16"):
        checks.check(2 * total == fp32, label + " halved", f"{total} of {fp32} (FP32)")
        return
    # fp8: per GEMM, then the total.
    wrong = []
    for w in s["gemm_weights"]:
        want = 4 if w["dtype"].startswith("f8") else 2
        if w["bytes"] * want != w["bytes_fp32"]:
            wrong.append(f"{w['node']} ({w['type']}, {w['dtype']}): {w['bytes']} of "
                         f"{w['bytes_fp32']}")
    fp8 = [w["node"] for w in s["gemm_weights"] if w["dtype"].startswith("f8")]
    other = [f"{w['node']} ({w['dtype']})" for w in s["gemm_weights"]
             if not w["dtype"].startswith("f8")]
    checks.check(not wrong, label + " per GEMM (fp8 quarter, others half)",
                 "; ".join(wrong) if wrong else
                 f"{len(fp8)} FP8 GEMM weights quartered"
                 + (f", not FP8: {', '.join(other)}" if other else ""))
    if m["name"] in quartered:
        checks.check(4 * total == fp32, label + " quartered", f"{total} of {fp32} (FP32)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", required=True, help="path to the mixprec binary")
    ap.add_argument("--models", required=True, help="gen_models.py output directory")
    ap.add_argument("--precisions", default=",".join(PRECISIONS),
                    help="comma-separated (default: bf16,fp16,fp8)")
    ap.add_argument("--bounds", default=os.path.join(HERE, "precision_bounds.json"))
    ap.add_argument("--readme", help="README.md whose '## Precision' table must match")
    ap.add_argument("-k", nargs="+", metavar="NAME", help="only models whose name contains one")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per command")
    args = ap.parse_args(argv)

    doc = load_bounds(args.bounds)
    bounds, xfail = doc["bounds"], doc.get("xfail", {})
    quartered = set(doc.get("fp8_quartered_models", []))
    precisions = [p for p in args.precisions.split(",") if p]
    for p in precisions:
        if p not in bounds:
            ap.error(f"no bounds for precision {p!r} in {args.bounds}")
    checks = Checks(xfail)

    if args.readme:
        stated = readme_bounds(args.readme)
        want = {p: (float(b["max_rel"]), float(b["min_cosine"])) for p, b in bounds.items()}
        checks.check(stated == want, "README.md '## Precision' table matches the bounds file",
                     f"README {stated} vs {args.bounds} {want}")

    models = select(load_manifest(args.models)["models"], args.k)
    with tempfile.TemporaryDirectory(prefix="mixprec-precision-") as tmp:
        for m in models:
            for p in precisions:
                check_validate(args, m, args.models, p, bounds[p], tmp, checks)
                check_report(args, m, args.models, p, quartered, tmp, checks)

    if checks.expected:
        print(f"{checks.expected} expected failures (xfail in {os.path.basename(args.bounds)})")
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
