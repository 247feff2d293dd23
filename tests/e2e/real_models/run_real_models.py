#!/usr/bin/env python3
"""Real models as exported (issue 10) against onnxruntime, as a user runs them.

Reads manifest.json (written by make_fixtures.py on a developer's machine:
torchvision and transformers models in tiny configurations, both torch
exporters, static and dynamic axes; CI needs neither torch nor the
exporters: the models, inputs and onnxruntime's outputs are committed).
For each fixture, with its committed inputs (a concrete binding of its
symbolic dims):

  import   mixprec import model.onnx -o T/m.mlir [--shape NAME=AxB...]
  jit      mixprec run model.onnx --backend cpu --input ... --output-dir T/jit
           every output's max_rel <= 1e-5 against onnxruntime
  P.mpk    for P in fp32 bf16 fp16 fp8:
           mixprec compile model.onnx --precision P -o T/P.mpk
                   [--shape NAME=AxB... for every input with symbolic dims]
           mixprec run T/P.mpk --backend cpu --input ... --output-dir T/P
           fp32: max_rel <= 1e-5; bf16/fp16/fp8: max_rel and cosine within
           precision_bounds.json (the README's bounds), against onnxruntime

max_rel = max|a - b| / max|b| per output (as run_e2e.py), b = onnxruntime.
A fixture passes when every step does; otherwise its outcome is the first
failing step and that step's first line (paths made relative).

expectations.json lists the fixtures that do not pass yet, each with its
outcome. The test fails when an unlisted fixture fails, when a listed one
passes (remove it: --update-expectations) or fails differently (look at
it). It prints a table (model x exporter x shapes: imported? fp32 max_rel,
bf16/fp16/fp8 within bounds?) and, per fixture, the ONNX op types it uses
that mixprec's importer does not list (tests/e2e/onnx_suites.py).
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from onnx_suites import finish, graph_op_types, out_file, supported_ops  # noqa: E402
from run_e2e import compare  # noqa: E402

FP32_BOUND = 1e-5
PRECISIONS = ("fp32", "bf16", "fp16", "fp8")


def metrics(got, ref):
    """(max_rel, cosine) of got against the reference: max_rel as run_e2e.py
    computes it, infinite when got has a non-finite value."""
    a = got.astype(np.float64).ravel()
    b = ref.astype(np.float64).ravel()
    if not np.all(np.isfinite(a)):
        return float("inf"), float("nan")
    rel = compare(a, b)[1]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    cos = float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    return rel, cos


class Step(Exception):
    """A failed step: its name and the first line of why."""

    def __init__(self, step, line):
        super().__init__(f"{step}: {line}")
        self.step = step
        self.line = line


def run(argv, fdir, tmp, step, timeout):
    """Runs a mixprec command; raises Step with its first stderr line (the
    fixture and temporary folders left out) unless it exits 0."""
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Step(step, f"timed out after {timeout}s")
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace")
        for d in (os.path.join(fdir, ""), os.path.join(tmp, ""), fdir, tmp):
            err = err.replace(d, "")
        first = next((l for l in err.splitlines() if l.strip()), "(no stderr)")
        why = f"signal {-p.returncode}: " if p.returncode < 0 else ("" if p.returncode == 1 else
                                                                      f"exit {p.returncode}: ")
        raise Step(step, why + first)
    return p


def check_outputs(fixture, fdir, outdir, step, bound):
    """Compares every output in outdir with onnxruntime's; returns the worst
    (max_rel, cosine); raises Step past the bound (max_rel, min_cosine)."""
    worst_rel, worst_cos = 0.0, 1.0
    for o in fixture["outputs"]:
        path = os.path.join(outdir, out_file(o["name"]))
        if not os.path.isfile(path):
            raise Step(step, f"no output file for '{o['name']}'")
        got = np.load(path)
        ref = np.load(os.path.join(fdir, o["file"]))
        if got.shape != ref.shape:
            raise Step(step, f"'{o['name']}': shape {list(got.shape)}, onnxruntime {list(ref.shape)}")
        rel, cos = metrics(got, ref)
        worst_rel, worst_cos = max(worst_rel, rel), min(worst_cos, cos)
        if not (rel <= bound[0]) or (bound[1] is not None and not (cos >= bound[1])):
            cs = f", cosine {cos:.7f} (min {bound[1]:g})" if bound[1] is not None else ""
            raise Step(step, f"'{o['name']}': max_rel {rel:.2e} (bound {bound[0]:g}){cs}")
    return worst_rel, worst_cos


def check_fixture(args, bounds, fixture):
    """Runs every step of one fixture; returns its result record."""
    fdir = os.path.join(args.fixtures, fixture["dir"])
    model = os.path.join(fdir, "model.onnx")
    tmp = tempfile.mkdtemp(prefix=fixture["id"] + ".", dir=args.work)
    inputs = []
    for i in fixture["inputs"]:
        inputs += ["--input", f"{i['name']}={os.path.join(fdir, i['file'])}"]
    shapes = []
    for i in fixture["inputs"]:
        if any(isinstance(d, str) for d in i["dims"]):
            shapes += ["--shape", f"{i['name']}=" + "x".join(str(d) for d in i["shape"])]
    rec = {"id": fixture["id"], "imported": False, "steps": {}, "failures": []}
    to = args.timeout

    def record(step, fn):
        try:
            rec["steps"][step] = fn()
            return True
        except Step as e:
            rec["steps"][step] = None
            rec["failures"].append(str(e))
            return False

    try:
        if not record("import", lambda: run([args.mixprec, "import", model, "-o", os.path.join(tmp, "m.mlir")] + shapes,
                                            fdir, tmp, "import", to) and "ok"):
            return rec
        rec["imported"] = True

        def jit():
            out = os.path.join(tmp, "jit")
            os.makedirs(out)
            run([args.mixprec, "run", model, "--backend", "cpu", "--output-dir", out] + inputs,
                fdir, tmp, "jit fp32", to)
            return check_outputs(fixture, fdir, out, "jit fp32", (FP32_BOUND, None))

        record("jit", jit)
        for p in PRECISIONS:
            def mpk(p=p):
                step = f"{p}.mpk"
                mod = os.path.join(tmp, f"{p}.mpk")
                out = os.path.join(tmp, p)
                os.makedirs(out)
                run([args.mixprec, "compile", model, "--precision", p, "-o", mod] + shapes,
                    fdir, tmp, f"{step} compile", to)
                run([args.mixprec, "run", mod, "--backend", "cpu", "--output-dir", out] + inputs,
                    fdir, tmp, f"{step} run", to)
                return check_outputs(fixture, fdir, out, step, bounds[p])
            record(p, mpk)
        return rec
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def unsupported_ops(args, fixture, supported):
    """The op types of the fixture's graph that the importer does not list."""
    m = onnx.load(os.path.join(args.fixtures, fixture["dir"], "model.onnx"), load_external_data=False)
    return sorted(graph_op_types(m.graph) - set(supported))


def cell(rec, step):
    """A table cell: '-' not run, 'FAIL' or the worst max_rel (and OK)."""
    if step not in rec["steps"]:
        return "-"
    v = rec["steps"][step]
    if v is None:
        return "FAIL"
    return f"{v[0]:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--fixtures", default=HERE, help="folder of manifest.json and the fixtures")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
    ap.add_argument("--bounds", default=os.path.join(os.path.dirname(HERE), "precision_bounds.json"))
    ap.add_argument("--expectations", default=os.path.join(HERE, "expectations.json"))
    ap.add_argument("--update-expectations", action="store_true")
    ap.add_argument("--work", default=None, help="folder for temporary files")
    ap.add_argument("--keep", action="store_true", help="keep each fixture's temporary folder")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--only", default=None, help="regex over fixture ids")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()

    with open(os.path.join(args.fixtures, "manifest.json")) as f:
        fixtures = json.load(f)["fixtures"]
    if args.only:
        fixtures = [x for x in fixtures if re.search(args.only, x["id"])]
    with open(args.bounds) as f:
        b = json.load(f)["bounds"]
    bounds = {"fp32": (FP32_BOUND, None)}
    bounds.update({p: (float(b[p]["max_rel"]), float(b[p]["min_cosine"])) for p in ("bf16", "fp16", "fp8")})
    expected = {}
    if os.path.isfile(args.expectations) and not args.update_expectations:
        with open(args.expectations) as f:
            expected = json.load(f)["fixtures"]
    supported = supported_ops(args.source)
    if args.work:
        os.makedirs(args.work, exist_ok=True)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        recs = list(pool.map(lambda fx: check_fixture(args, bounds, fx), fixtures))

    print(f"{'fixture':36} {'import':6} {'jit fp32':9} {'fp32.mpk':9} {'bf16':9} {'fp16':9} {'fp8':9}  outcome")
    failures = []
    outcomes = {}
    for fx, rec in zip(fixtures, recs):
        outcome = rec["failures"][0] if rec["failures"] else "pass"
        outcomes[fx["id"]] = outcome
        print(f"{fx['id']:36} {'yes' if rec['imported'] else 'no':6} {cell(rec, 'jit'):9} "
              f"{cell(rec, 'fp32'):9} {cell(rec, 'bf16'):9} {cell(rec, 'fp16'):9} {cell(rec, 'fp8'):9}  "
              f"{outcome[:110]}")
        want = expected.get(fx["id"])
        if outcome == "pass" and want is not None:
            failures.append(f"{fx['id']}: passes now; remove it from {os.path.basename(args.expectations)} "
                            "(--update-expectations)")
        elif outcome != "pass" and want is None:
            failures.append(f"{fx['id']}: FAILS (not an expected failure): {outcome}")
        elif outcome != "pass" and want != outcome:
            failures.append(f"{fx['id']}: fails differently: now '{outcome}', expected '{want}'")
    if not args.only:
        for fid in sorted(set(expected) - set(outcomes)):
            failures.append(f"{fid}: listed in {os.path.basename(args.expectations)} but not in the manifest")
    print("(cells: worst max_rel over the outputs against onnxruntime; FAIL: the step failed, "
          "beyond the bound or with an error; -: not run)")

    print("\nONNX op types each fixture uses that mixprec's importer does not list:")
    all_missing = {}
    for fx in fixtures:
        miss = unsupported_ops(args, fx, supported)
        for op in miss:
            all_missing.setdefault(op, []).append(fx["id"])
        print(f"  {fx['id']:36} {' '.join(miss) if miss else '(none)'}")
    print("by op type (fixtures using it):")
    for op, ids in sorted(all_missing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {op:24} {len(ids)}")

    passed = sum(1 for o in outcomes.values() if o == "pass")
    print(f"\n{passed}/{len(fixtures)} fixtures pass every step; "
          f"{sum(1 for r in recs if r['imported'])} import")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": recs, "outcomes": outcomes, "unsupported_ops": all_missing}, f, indent=1)
    if args.update_expectations:
        keep = {k: v for k, v in outcomes.items() if v != "pass"}
        if args.only and os.path.isfile(args.expectations):
            with open(args.expectations) as f:
                old = json.load(f)["fixtures"]
            old = {k: v for k, v in old.items() if k not in outcomes}
            keep = dict(old, **keep)
        with open(args.expectations, "w") as f:
            json.dump({"_doc": "Real-model fixtures that do not pass yet, each with its first failing "
                               "step and that step's first line (run_real_models.py "
                               "--update-expectations). A fixture that passes must not be listed.",
                       "fixtures": dict(sorted(keep.items()))}, f, indent=1)
            f.write("\n")
        print(f"wrote {len(keep)} expected failures to {args.expectations}")
        return 0
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
