#!/usr/bin/env python3
"""FP16 overflow acceptance: plain FP16 goes non-finite, calibration fixes it.

Usage:
    run_overflow.py --mixprec BIN --dir DIR [--timeout S]

DIR is written by gen_overflow_model.py (model.onnx, input.npy, calib.npy,
expect.json). Checks, one line each, then exactly "N passed, N failed":

  1. `validate --precision fp16` exits 3 (non-finite outputs), its JSON
     names the scores MatMul (expect.json) as the first non-finite op, and
     its text says so on the "first non-finite op:" line;
  2. `validate --precision fp16 --calibrate x=calib.npy` exits 0, every
     output finite, max_rel < CALIBRATED_MAX_REL (the scores MatMul moves
     to BF16, the default --overflow-fallback), and no worse than 1.5x the
     plain BF16 plan's error;
  3. the same with --overflow-fallback fp32: max_rel < FP32_FALLBACK_MAX_REL;
  4. `report --precision fp16 --calibrate x=calib.npy` shows a
     range:amax=... reason on the scores MatMul, in BF16, and on no other
     op; the text table shows that row.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure, run_cmd  # noqa: E402

# Measured (README.md, "## Precision"): 1.45e-2 with the BF16 fallback (the
# plain BF16 plan: 1.50e-2), 1.0e-3 with the FP32 fallback; ~3x headroom.
CALIBRATED_MAX_REL = 5e-2
FP32_FALLBACK_MAX_REL = 3e-3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--dir", required=True, help="gen_overflow_model.py output directory")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args(argv)
    with open(os.path.join(args.dir, "expect.json")) as f:
        expect = json.load(f)
    node, name = expect["scores_node"], expect["input"]
    model = os.path.join(args.dir, "model.onnx")
    given = ["--input", f"{name}={os.path.join(args.dir, 'input.npy')}"]
    calib = ["--calibrate", f"{name}={os.path.join(args.dir, 'calib.npy')}"]
    tally = Tally()

    with tempfile.TemporaryDirectory(prefix="mixprec-overflow-") as tmp:
        def run(label, argv, codes):
            """Runs argv + --json; returns (doc, stdout) or (None, None) after a FAIL."""
            path = os.path.join(tmp, f"{len(os.listdir(tmp))}.json")
            argv = [args.mixprec] + argv + ["--json", path]
            rc, out, err = run_cmd(argv, args.timeout)
            if rc not in codes or not os.path.isfile(path):
                tally.report(False, label, f"exit status {rc}, expected {codes}")
                print(describe_failure(argv, rc, out, err), flush=True)
                return None, None
            with open(path) as f:
                return json.load(f), out

        # 1. Plain FP16 overflows in the scores MatMul.
        doc, out = run("fp16 overflows", ["validate", model, "--precision", "fp16"] + given, (3,))
        if doc:
            first = doc["first_nonfinite"] or {}
            nonfinite = sum(o["nonfinite"] for o in doc["outputs"])
            tally.report(nonfinite > 0 and doc["exit_status"] == 3, "fp16 validate exits 3",
                         f"{nonfinite} non-finite output values, status {doc['status']!r}")
            tally.report(first.get("node") == node and first.get("type") == "matmul",
                         "fp16 first non-finite op is the scores MatMul",
                         f"first_nonfinite {first}, expected {node} (matmul)")
            line = next((ln for ln in out.splitlines()
                         if ln.startswith("first non-finite op:")), "")
            tally.report(line.startswith(f"first non-finite op: {node} (matmul, f16)"),
                         "fp16 text names the first non-finite op", repr(line))

        # 2. Calibrated FP16: finite and accurate, as good as BF16.
        bf16, _ = run("bf16 plan", ["validate", model, "--precision", "bf16"] + given, (0,))
        doc, _ = run("fp16 --calibrate", ["validate", model, "--precision", "fp16"] + given + calib,
                     (0,))
        if doc:
            for o in doc["outputs"]:
                rel = o["max_rel"]
                tally.report(o["nonfinite"] == 0 and rel is not None and rel < CALIBRATED_MAX_REL,
                             f"fp16 --calibrate {o['name']} finite and accurate",
                             f"nonfinite {o['nonfinite']}, max_rel {rel} "
                             f"(bound {CALIBRATED_MAX_REL:g}), cosine {o['cosine']}")
                if bf16:
                    ref = next(b for b in bf16["outputs"] if b["name"] == o["name"])["max_rel"]
                    tally.report(rel is not None and rel <= 1.5 * ref,
                                 f"fp16 --calibrate {o['name']} no worse than bf16",
                                 f"max_rel {rel:.3e} vs bf16 {ref:.3e}")
            tally.report(doc["first_nonfinite"] is None, "fp16 --calibrate has no non-finite op",
                         f"first_nonfinite {doc['first_nonfinite']}")

        # 3. Calibrated FP16 falling back to FP32.
        doc, _ = run("fp16 --calibrate --overflow-fallback fp32",
                     ["validate", model, "--precision", "fp16", "--overflow-fallback", "fp32"]
                     + given + calib, (0,))
        if doc:
            for o in doc["outputs"]:
                rel = o["max_rel"]
                tally.report(rel is not None and rel < FP32_FALLBACK_MAX_REL,
                             f"fp16 --calibrate --overflow-fallback fp32 {o['name']}",
                             f"max_rel {rel} (bound {FP32_FALLBACK_MAX_REL:g})")

        # 4. The report shows the range evidence on the moved op, and only there.
        doc, out = run("report --calibrate", ["report", model, "--precision", "fp16"] + calib,
                       (0,))
        if doc:
            moved = [r for r in doc["ops"] if r["reason"].startswith("range:")]
            row = next((r for r in moved if r["node"] == node and r["type"] == "matmul"), None)
            tally.report(row is not None and row["reason"].startswith("range:amax=")
                         and row["precision"] == "bf16",
                         "report --calibrate: scores MatMul moved to bf16 by range:amax",
                         f"{row}")
            tally.report(len(moved) == 1, "report --calibrate: no other op moved",
                         f"{[(r['node'], r['type'], r['reason']) for r in moved]}")
            text_rows = [ln for ln in out.splitlines()
                         if ln.startswith(node + " ") and "range:amax=" in ln]
            tally.report(len(text_rows) == 1, "report text shows the range:amax row",
                         repr(text_rows[0] if text_rows else out[:200]))

    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
