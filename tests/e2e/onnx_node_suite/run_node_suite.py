#!/usr/bin/env python3
"""The ONNX backend node suite against mixprec (issue 10).

The cases are regenerated in memory from the installed onnx package's own
case scripts (onnx.backend.test.case.node.collect_testcases(): each builds
its model and computes its expected outputs with numpy), so no shipped data
file is needed. A case is eligible when every graph input and output is a
tensor of float32, int64 or bool and every input array is a numpy array of
that dtype. Each eligible case is written to a temporary folder (model.onnx,
one .npy per input) and run as a user would:

    mixprec run model.onnx --backend cpu --input NAME=NAME.npy ... --output-dir out

(per-case timeout --timeout seconds), then classified:

  pass     exit 0 and every output file has the reference's dtype and shape
           and equal values: exact for int64/bool, for float32 within the
           case's own tolerance (onnx's backend runner: |a-b| <= atol + rtol*|b|,
           rtol 1e-3 atol 1e-7 for node cases; NaN where the reference is NaN)
  refused  exit 1 with a clean error: stderr is `mixprec: error: ...` then
           only `mixprec: note: ...` lines
  wrong    exit 0 but an output is missing or differs
  crash    killed by a signal, timed out, any other exit status, or an exit 1
           whose stderr is not a clean error (a stack trace, a message
           without the `mixprec: error:` prefix)

The op type of a case is its node's op type (for the `_expanded` cases, the
function op of the case they expand). Supported op types are read from the
importer's op table (tests/e2e/onnx_suites.py); a case is "of supported
ops" when every op type in its graph is supported (an expanded case is so
when every op of its function body is). The run fails when

  - any case is `crash` or `wrong` (these can never be listed as expected);
  - a case of supported ops does not pass, unless known_failures.json lists
    it with exactly today's first error line (--known; the list keeps CI
    green while the importer's gaps are closed: each entry is a gap in a
    supported op, such as a 3-D pool or an axes input given at run time);
  - a listed case passes (remove it: --update-known) or fails with another
    error line (look at it);
  - a case named in the baseline (--baseline, one name a line: the cases
    that passed when it was recorded) does not pass.

`--update-baseline` and `--update-known` rewrite those two files from this
run. It prints the pass count over the eligible cases and writes a json
summary (--json).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from onnx_suites import finish, graph_op_types, out_file, supported_ops  # noqa: E402

ELIGIBLE = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
            onnx.TensorProto.BOOL: np.bool_}


def collect():
    """Every node case of the installed onnx package, built in memory."""
    from onnx.backend.test.case import node
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(node.collect_testcases(None))


def tensor_elem(vi):
    """The elem_type of a tensor ValueInfo, None for sequences/optionals/maps."""
    t = vi.type
    return t.tensor_type.elem_type if t.WhichOneof("value") == "tensor_type" else None


def eligibility(case):
    """None when the case is eligible, else why not."""
    if case.model is None or not case.data_sets or len(case.data_sets) != 1:
        return "no in-memory model and data set"
    g = case.model.graph
    for vi in list(g.input) + list(g.output):
        if tensor_elem(vi) not in ELIGIBLE:
            return f"'{vi.name}' is not a float32/int64/bool tensor"
    inputs, outputs = case.data_sets[0]
    if len(inputs) != len(g.input) or len(outputs) != len(g.output):
        return "data set does not match the graph's inputs/outputs"
    for vi, a in zip(list(g.input) + list(g.output), list(inputs) + list(outputs)):
        if not isinstance(a, np.ndarray) or a.dtype != ELIGIBLE[tensor_elem(vi)]:
            return f"'{vi.name}' data is not a float32/int64/bool array"
    return None


def op_type_of(case, by_name):
    """The case's op type: its node's, or for an expanded case the op of the
    case it expands (`test_x_expanded`, `test_x_expanded_ver18`)."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
    if base != case.name and base in by_name and len(by_name[base].model.graph.node) == 1:
        return by_name[base].model.graph.node[0].op_type
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else "+".join(sorted(graph_op_types(case.model.graph)))


def compare(got, ref, rtol, atol):
    """None when got equals ref (exact for int/bool, onnx's tolerance for floats)."""
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype}, expected {ref.dtype}"
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if ref.dtype != np.float32:
        bad = int(np.sum(got != ref))
        return f"{bad} of {ref.size} elements differ" if bad else None
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    nan_ok = np.isnan(r) == np.isnan(g)
    with np.errstate(invalid="ignore"):
        close = (g == r) | (np.abs(g - r) <= atol + rtol * np.abs(r))
    close |= np.isnan(r) & np.isnan(g)
    bad = ~(close & nan_ok)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        return (f"{int(bad.sum())} of {ref.size} elements differ (first at flat index {i}: "
                f"{float(g.flat[i])!r} vs {float(r.flat[i])!r}, rtol {rtol:g} atol {atol:g})")
    return None


def strict_close(got, ref):
    """True when a float32 output is also within 1e-5 relative / 1e-6 absolute."""
    if ref.dtype != np.float32 or got.dtype != ref.dtype or got.shape != ref.shape:
        return got.dtype == ref.dtype and got.shape == ref.shape and bool(np.all(got == ref))
    return compare(got, ref, 1e-5, 1e-6) is None


def clean_error(stderr):
    """True when stderr is one `mixprec: error:` line then only notes."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    return bool(lines) and lines[0].startswith("mixprec: error: ") and all(
        l.startswith("mixprec: note: ") for l in lines[1:])


def run_case(mixprec, work, timeout, job):
    """Writes one case, runs it, returns its classification record."""
    name, model_bytes, inputs, outputs, rtol, atol = job
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "out"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model_bytes)
    argv = [mixprec, "run", os.path.join(d, "model.onnx"), "--backend", "cpu",
            "--output-dir", os.path.join(d, "out")]
    for i, (iname, arr) in enumerate(inputs):
        p = os.path.join(d, f"in{i}.npy")
        np.save(p, arr)
        argv += ["--input", f"{iname}={p}"]
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "result": "crash", "detail": f"timed out after {timeout}s",
                "argv": argv}
    secs = round(time.time() - t0, 3)
    # The case's folder is left out of messages, so they compare across runs.
    err = p.stderr.decode(errors="replace").replace(os.path.join(d, ""), "")
    first = err.strip().splitlines()[0] if err.strip() else ""
    rec = {"name": name, "seconds": secs, "rc": p.returncode}
    if p.returncode == 1 and clean_error(err):
        return dict(rec, result="refused", detail=first)
    if p.returncode != 0:
        why = f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
        return dict(rec, result="crash", detail=f"{why}: {first or '(no stderr)'}"[:400], argv=argv)
    strict = True
    for oname, ref in outputs:
        path = os.path.join(d, "out", out_file(oname))
        if not os.path.isfile(path):
            return dict(rec, result="wrong", detail=f"no output file for '{oname}'", argv=argv)
        try:
            got = np.load(path)
        except Exception as e:  # a malformed .npy is a wrong result too
            return dict(rec, result="wrong", detail=f"'{oname}': unreadable .npy: {e}", argv=argv)
        why = compare(got, ref, rtol, atol)
        if why:
            return dict(rec, result="wrong", detail=f"'{oname}': {why}", argv=argv)
        strict = strict and strict_close(got, ref)
    return dict(rec, result="pass", strict=strict)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.dirname(HERE))),
                    help="the source tree (its compiler/Import op tables)")
    ap.add_argument("--work", default=None, help="folder for the cases (default: a temporary one)")
    ap.add_argument("--json", default=None, help="write the summary here")
    ap.add_argument("--baseline", default=os.path.join(HERE, "baseline_pass.txt"))
    ap.add_argument("--update-baseline", action="store_true")
    ap.add_argument("--known", default=os.path.join(HERE, "known_failures.json"))
    ap.add_argument("--update-known", action="store_true")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                    help="cases run at once (default: the CPUs this process may use)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--only", default=None, help="regex over case names")
    args = ap.parse_args()

    supported = set(supported_ops(args.source))
    cases = collect()
    by_name = {c.name: c for c in cases}
    records = []
    jobs = []
    for c in cases:
        if args.only and not re.search(args.only, c.name):
            continue
        why = eligibility(c)
        op = op_type_of(c, by_name) if c.model is not None else "?"
        if why:
            records.append({"name": c.name, "op_type": op, "result": "ineligible", "detail": why,
                            "ops": sorted(graph_op_types(c.model.graph)) if c.model is not None else []})
            continue
        g = c.model.graph
        inputs, outputs = c.data_sets[0]
        jobs.append((c.name, c.model.SerializeToString(), [(vi.name, a) for vi, a in zip(g.input, inputs)],
                     [(vi.name, a) for vi, a in zip(g.output, outputs)], c.rtol, c.atol))
    ops_of = {c.name: op_type_of(c, by_name) for c in cases if c.model is not None}

    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="node_suite.") as tmp:
        work = args.work or tmp
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for rec in pool.map(lambda j: run_case(args.mixprec, work, args.timeout, j), jobs):
                rec["op_type"] = ops_of[rec["name"]]
                rec["ops"] = sorted(graph_op_types(by_name[rec["name"]].model.graph))
                records.append(rec)
    wall = time.time() - t0

    baseline = set()
    if os.path.isfile(args.baseline) and not args.update_baseline:
        with open(args.baseline) as f:
            baseline = {l.strip() for l in f if l.strip() and not l.startswith("#")}

    known = {}
    if os.path.isfile(args.known) and not args.update_known:
        with open(args.known) as f:
            known = json.load(f)["cases"]

    failures = []
    counts = {k: 0 for k in ("pass", "refused", "wrong", "crash")}
    known_now = {}
    for r in records:
        if r["result"] == "ineligible":
            continue
        counts[r["result"]] += 1
        # Every op of the case's graph supported: a failure there is a gap or
        # a bug in mixprec, not a missing op.
        sup = set(r["ops"]) <= supported
        r["supported_op"] = sup
        label = f"{r['name']} ({r['op_type']})"
        if r["result"] in ("crash", "wrong"):
            failures.append(f"{r['result'].upper()}: {label}: {r['detail']}")
        elif r["result"] == "refused" and sup:
            known_now[r["name"]] = r["detail"]
            if r["name"] not in known and not args.update_known:
                failures.append(f"SUPPORTED OP FAILS (not in {os.path.basename(args.known)}): "
                                f"{label}: {r['detail']}")
            elif r["name"] in known and known[r["name"]] != r["detail"]:
                failures.append(f"KNOWN FAILURE CHANGED: {label}: now '{r['detail']}', "
                                f"listed '{known[r['name']]}'")
        if r["result"] == "pass" and r["name"] in known:
            failures.append(f"KNOWN FAILURE NOW PASSES (remove it, --update-known): {label}")
        if r["result"] != "pass" and r["name"] in baseline and not args.update_baseline:
            failures.append(f"REGRESSION (in the baseline): {label}: {r['detail']}")
    ran = {r["name"] for r in records if r["result"] != "ineligible"}
    for name in sorted(set(known) - ran):
        if not args.only:
            failures.append(f"KNOWN FAILURE NOT RUN (no such eligible case; --update-known): {name}")
    eligible = sum(counts.values())
    passed = sorted(r["name"] for r in records if r["result"] == "pass")
    newly = sorted(set(passed) - baseline) if baseline else []

    # Per op type: eligible and passed counts, for the README and the other helpers.
    per_op = {}
    for r in records:
        if r["result"] == "ineligible":
            continue
        e = per_op.setdefault(r["op_type"], {"eligible": 0, "pass": 0, "supported": r["supported_op"]})
        e["eligible"] += 1
        e["pass"] += r["result"] == "pass"
    refused_ops = {}
    for r in records:
        if r["result"] == "refused":
            m = re.search(r"unsupported op '[^']*'", r["detail"])
            key = m.group(0) if m else re.sub(r"node '[^']*'", "node '...'", r["detail"])
            refused_ops[key] = refused_ops.get(key, 0) + 1

    print(f"ONNX node suite (onnx {onnx.__version__}): {len(records)} cases, {eligible} eligible "
          f"(float32/int64/bool), {len(jobs)} run with {args.jobs} jobs in {wall:.0f}s")
    pct = 100.0 * counts["pass"] / eligible if eligible else 0.0
    print(f"pass {counts['pass']}/{eligible} ({pct:.1f}%), refused {counts['refused']}, "
          f"wrong {counts['wrong']}, crash {counts['crash']}; "
          f"{sum(1 for r in records if r.get('strict'))} of the passes also within 1e-5 rel / 1e-6 abs")
    print(f"supported op types ({len(supported)}): {' '.join(sorted(supported))}")
    print("most frequent refusals:")
    for msg, n in sorted(refused_ops.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {n:4d}  {msg[:150]}")
    if newly:
        print(f"{len(newly)} cases pass that the baseline does not list (run with --update-baseline): "
              + " ".join(newly[:20]) + (" ..." if len(newly) > 20 else ""))

    summary = {"onnx": onnx.__version__, "cases": len(records), "eligible": eligible, **counts,
               "pass_percent": round(pct, 2), "supported_ops": sorted(supported),
               "per_op_type": per_op, "failures": failures,
               "records": sorted(records, key=lambda r: r["name"])}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if args.update_baseline:
        with open(args.baseline, "w") as f:
            f.write("# ONNX node-suite cases that pass on mixprec (run_node_suite.py --update-baseline);\n"
                    f"# onnx {onnx.__version__}. A listed case that stops passing fails the test.\n")
            f.write("".join(n + "\n" for n in passed))
        print(f"wrote {len(passed)} names to {args.baseline}")
    if args.update_known:
        with open(args.known, "w") as f:
            json.dump({"_doc": "ONNX node-suite cases whose every op type mixprec lists as supported "
                               "but which it refuses today, with the first error line "
                               "(run_node_suite.py --update-known). Each is a gap to close; "
                               "crashes and wrong results are never listed.",
                       "onnx": onnx.__version__, "cases": dict(sorted(known_now.items()))}, f, indent=1)
            f.write("\n")
        print(f"wrote {len(known_now)} known failures to {args.known}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
