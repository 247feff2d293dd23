#!/usr/bin/env python3
"""Data-parallel training (issue 26) end to end, 2 ranks under mpirun.

Every check trains the digits MLP (examples/train_digits) on the CPU
backend with `mpirun --oversubscribe -np 2 mixprec train ...` and compares
with one process:

  single     a step compiled --data-parallel, run by one process, gives the
             plain step's CSV and states bit for bit (fp32, bf16, fp16): its
             all_reduce steps copy.
  equal      2 ranks x --batch 16 against 1 rank x --batch 32, 20 steps: every
             step's loss and every final state (relative L2) within 1e-5 at
             fp32, bf16 and fp16 (dynamic loss scaling); both ranks report
             the same state hash.
  overflow   fp16, a row planted in rank 1's half of step 3's batch overflows
             FP16: that step is skipped (CSV), the scale backs off on both
             ranks (the hash line: a rank that stepped would differ), and the
             run ends as the one-process run of the same batches does.
  clip       --clip-norm: each step's grad_norm (the global norm, before
             clipping) equals the one-process norm of the full batch within
             1e-5, and the clipped run's states match.
  saved      `mixprec train --save-modules DIR --data-parallel` then
             `mixprec-train-run DIR --ranks 2` trains what `mixprec train
             --ranks 2` trains, bit for bit.
  refuse     a step saved without --data-parallel, run by 2 ranks: exit 2 on
             every rank, naming the cause, no hang.
  kill       rank 1 SIGKILLed mid-run: the job ends non-zero within 60 s, the
             launcher's message names rank 1, the last checkpoint is intact
             and resumes on one process (which says the global batch stays).
  zero       --shard-optimizer (ZeRO stage 1), AdamW, 2 ranks: the losses,
             grad norms and final states equal the unsharded 2-rank run's
             bit for bit (bound 1e-6) at fp32, bf16 and fp16; the optimizer
             state per rank is half the whole; the checkpoint is the
             unsharded run's byte for byte; a sharded run resumes from an
             unsharded checkpoint and an unsharded one from a sharded
             checkpoint, each ending where the uninterrupted run ends; saved
             modules (--world 2) run under mixprec-train-run --ranks 2 as
             mixprec train does, and refuse one process. 3 ranks (slices
             zero-padded): sharded = unsharded bit for bit.
  eval       a test set of 1440 rows (two evaluation batches: rank r scores
             batches r, r + 2, ...; the sums gathered): every evaluation's
             test loss and accuracy equal one process's (1e-5), every row
             counted once.
  gpt        the GPT-style block (attention, layer norm, tied embeddings),
             fp32, SGD: 2 ranks x --batch 2 against one process accumulating
             2 micro-batches of 2 (its export's batch is fixed) within 1e-5.
             Not at bf16 or with AdamW: the two graphs differ in the last
             FP32 bit of some gradients (different programs), which BF16
             activations and Adam amplify (the key bias's gradient is zero
             but for rounding, and Adam turns rounding into steps of lr):
             README "Data-parallel training".

Exit status 77 (skipped) when mpirun or the MPI plugin is missing.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure  # noqa: E402
from run_train import read_csv, read_states  # noqa: E402

CHECKS = ["single", "equal", "overflow", "clip", "saved", "refuse", "kill", "zero", "eval",
          "gpt"]
REL = 1e-5
STEPS = 20


def mpi_env():
    env = dict(os.environ)
    # Root in containers and CI; a 2-core machine runs 2 ranks.
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    return env


def rel_l2(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))


class Runner:
    def __init__(self, args):
        self.args = args
        ex = args.example
        self.model = os.path.join(ex, "mlp.onnx")
        self.x = os.path.join(ex, "x_train.npy")
        self.y = os.path.join(ex, "y_train.npy")
        self.tally = Tally()

    def base(self, x=None, lr="0.1"):
        return [self.args.mixprec, "train", self.model, "--data", "x=" + (x or self.x),
                "--labels", self.y, "--backend", "cpu", "--lr", lr, "--log-every", "5"]

    def run(self, argv, ranks=1, timeout=None):
        if ranks > 1:
            argv = ["mpirun", "--oversubscribe", "-np", str(ranks)] + argv
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                           timeout=timeout or self.args.timeout, env=mpi_env())
        return argv, p.returncode, p.stdout, p.stderr

    def ok_run(self, label, argv, ranks=1):
        argv, rc, out, err = self.run(argv, ranks)
        if rc != 0:
            self.tally.report(False, label, "\n" + describe_failure(argv, rc, out, err))
            return None
        return out


def compare_runs(r, label, one_dir, one_csv, two_dir, two_csv, bound, columns=("loss",)):
    """Per-step columns and final states of two runs within `bound` (relative)."""
    a, b = read_csv(one_csv), read_csv(two_csv)
    worst = 0.0
    detail = ""
    if len(a) != len(b):
        r.tally.report(False, label, f"{len(a)} vs {len(b)} steps")
        return False
    for x, y in zip(a, b):
        if x["skipped"] != y["skipped"]:
            r.tally.report(False, label, f"step {x['step']}: skipped {x['skipped']} vs "
                           f"{y['skipped']}")
            return False
        for c in columns:
            u, v = float(x[c]), float(y[c])
            d = abs(u - v) / max(abs(u), 1e-30)
            if d > worst:
                worst, detail = d, f"{c} at step {x['step']}"
    sa, sb = read_states(one_dir), read_states(two_dir)
    if sorted(sa) != sorted(sb):
        r.tally.report(False, label, f"states {sorted(sa)} vs {sorted(sb)}")
        return False
    for k in sa:
        d = rel_l2(sa[k], sb[k])
        if d > worst:
            worst, detail = d, f"state {k}"
    ok = worst <= bound
    r.tally.report(ok, label, f"worst relative difference {worst:.2e} ({detail}; bound {bound:g})")
    return ok


def hash_line(out, ranks=2):
    return f"states identical on {ranks} ranks" in out


def check_single(r, work):
    for p in ["fp32", "bf16", "fp16"]:
        dirs = {}
        for tag, extra in [("plain", []), ("dp", ["--data-parallel"])]:
            d = os.path.join(work, f"single-{p}-{tag}")
            c = d + ".csv"
            if r.ok_run(f"single {p} {tag}", r.base() + ["--precision", p, "--batch", "32",
                        "--steps", str(STEPS), "--csv", c, "--state-dir", d] + extra) is None:
                return
            dirs[tag] = (d, c)
        same_csv = open(dirs["plain"][1]).read() == open(dirs["dp"][1]).read()
        sa, sb = read_states(dirs["plain"][0]), read_states(dirs["dp"][0])
        same = same_csv and sorted(sa) == sorted(sb) and all(
            sa[k].tobytes() == sb[k].tobytes() for k in sa)
        r.tally.report(same, f"single {p}: --data-parallel on one process = the plain step, "
                       "bit for bit", "" if same else f"csv same {same_csv}")


def check_equal(r, work):
    for p in ["fp32", "bf16", "fp16"]:
        runs = {}
        for ranks, batch in [(1, 32), (2, 16)]:
            d = os.path.join(work, f"equal-{p}-{ranks}")
            c = d + ".csv"
            out = r.ok_run(f"equal {p} {ranks} ranks", r.base() + [
                "--precision", p, "--batch", str(batch), "--steps", str(STEPS), "--csv", c,
                "--state-dir", d], ranks)
            if out is None:
                return
            runs[ranks] = (d, c, out)
        r.tally.report(hash_line(runs[2][2]), f"equal {p}: both ranks hold the same states",
                       runs[2][2].strip().splitlines()[-1] if not hash_line(runs[2][2]) else "")
        compare_runs(r, f"equal {p}: 2 ranks x 16 = 1 rank x 32 (loss, grad norm, states)",
                     runs[1][0], runs[1][1], runs[2][0], runs[2][1], REL,
                     ("loss", "grad_norm", "loss_scale"))


def check_overflow(r, work):
    x = np.load(r.x)
    planted = x.copy()
    # --no-shuffle: step 3's global batch is rows 64..95; rank 1 reads 80..95.
    planted[85, :] = 1.0e6  # beyond FP16's 65504: the input's cast overflows
    path = os.path.join(work, "x_overflow.npy")
    np.save(path, planted)
    runs = {}
    for ranks, batch in [(1, 32), (2, 16)]:
        d = os.path.join(work, f"overflow-{ranks}")
        c = d + ".csv"
        out = r.ok_run(f"overflow {ranks} ranks", r.base(path) + [
            "--precision", "fp16", "--loss-scale", "dynamic", "--no-shuffle", "--batch",
            str(batch), "--steps", "8", "--csv", c, "--state-dir", d], ranks)
        if out is None:
            return
        runs[ranks] = (d, c, out)
    rows = read_csv(runs[2][1])
    skipped = [int(row["step"]) for row in rows if row["skipped"] == "1"]
    scales = [float(row["loss_scale"]) for row in rows]
    ok = skipped == [3] and scales[3] == scales[2] / 2
    r.tally.report(ok, "overflow: rank 1's planted row skips step 3 on both ranks and the scale "
                   "backs off", f"skipped {skipped}, scales {scales[:5]}")
    r.tally.report(hash_line(runs[2][2]), "overflow: every state bitwise identical across the "
                   "ranks after the run (hashes)")
    compare_runs(r, "overflow: 2 ranks end as one process on the same batches",
                 runs[1][0], runs[1][1], runs[2][0], runs[2][1], REL, ("loss", "loss_scale"))


def check_clip(r, work):
    runs = {}
    for ranks, batch in [(1, 32), (2, 16)]:
        d = os.path.join(work, f"clip-{ranks}")
        c = d + ".csv"
        out = r.ok_run(f"clip {ranks} ranks", r.base() + [
            "--precision", "fp32", "--clip-norm", "0.05", "--batch", str(batch), "--steps",
            str(STEPS), "--csv", c, "--state-dir", d], ranks)
        if out is None:
            return
        runs[ranks] = (d, c)
    norms = [float(row["grad_norm"]) for row in read_csv(runs[2][1])]
    clipped = sum(n > 0.05 for n in norms)
    r.tally.report(clipped == len(norms), "clip: every step's norm is above --clip-norm (the "
                   "check clips)", f"{clipped}/{len(norms)}")
    compare_runs(r, "clip: the global norm after the all-reduce = one process's norm of the "
                 "full batch", runs[1][0], runs[1][1], runs[2][0], runs[2][1], REL,
                 ("grad_norm", "loss"))


def check_saved(r, work):
    folder = os.path.join(work, "saved")
    if r.ok_run("saved: --save-modules --data-parallel", r.base() + [
            "--precision", "bf16", "--batch", "16", "--save-modules", folder,
            "--data-parallel"]) is None:
        return
    a, b = os.path.join(work, "saved-train"), os.path.join(work, "saved-run")
    out = r.ok_run("saved: mixprec train --ranks 2", r.base() + [
        "--precision", "bf16", "--batch", "16", "--steps", "10", "--state-dir", a,
        "--ranks", "2"])
    if out is None:
        return
    out2 = r.ok_run("saved: mixprec-train-run --ranks 2", [
        r.args.train_run, folder, "--data", "x=" + r.x, "--labels", r.y, "--backend", "cpu",
        "--steps", "10", "--state-dir", b, "--ranks", "2"])
    if out2 is None:
        return
    sa, sb = read_states(a), read_states(b)
    same = sorted(sa) == sorted(sb) and all(sa[k].tobytes() == sb[k].tobytes() for k in sa)
    r.tally.report(same and hash_line(out) and hash_line(out2),
                   "saved: mixprec-train-run --ranks 2 = mixprec train --ranks 2, bit for bit")


def check_refuse(r, work):
    folder = os.path.join(work, "saved-one")
    if r.ok_run("refuse: --save-modules", r.base() + [
            "--precision", "fp32", "--batch", "16", "--save-modules", folder]) is None:
        return
    start = time.monotonic()
    argv, rc, out, err = r.run([r.args.train_run, folder, "--data", "x=" + r.x, "--labels",
                                r.y, "--backend", "cpu", "--steps", "5"], ranks=2, timeout=120)
    seconds = time.monotonic() - start
    ok = rc not in (0, None) and "compiled for one process" in err and seconds < 60
    r.tally.report(ok, "refuse: a step without all-reduce under 2 ranks fails, naming why",
                   f"exit {rc} after {seconds:.1f} s" +
                   ("" if ok else "\n" + describe_failure(argv, rc, out, err)))


def check_kill(r, work):
    ck = os.path.join(work, "kill.ckpt")
    argv = ["mpirun", "--oversubscribe", "-np", "2"] + r.base() + [
        "--precision", "fp32", "--batch", "16", "--steps", "10000000", "--log-every",
        "1000000", "--checkpoint", ck, "--checkpoint-every", "20"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", env=mpi_env(), start_new_session=True)
    # Wait for a checkpoint, then kill rank 1 (OMPI_COMM_WORLD_RANK=1).
    deadline = time.monotonic() + 120
    victim = None
    while time.monotonic() < deadline and victim is None:
        time.sleep(0.2)
        if not os.path.exists(ck):
            continue
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK=1" in env and ck.encode() in cmd and \
                    os.path.basename(r.args.mixprec).encode() in cmd:
                victim = int(pid)
    if victim is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        r.tally.report(False, "kill: no rank 1 to kill (no checkpoint within 120 s)")
        return
    os.kill(victim, signal.SIGKILL)
    start = time.monotonic()
    try:
        out, err = p.communicate(timeout=60)
        seconds = time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        r.tally.report(False, "kill: the job still runs 60 s after rank 1 died")
        return
    names = "rank 1" in err or "rank 1" in out
    r.tally.report(p.returncode != 0 and names,
                   "kill: rank 1 SIGKILLed, the job ends non-zero naming it",
                   f"exit {p.returncode} after {seconds:.1f} s")
    # The last checkpoint: whole (the runtime checks it before it loads),
    # and a one-process job of the same global batch goes on from it.
    with open(ck, "rb") as f:
        blob = f.read()
    at = blob.find(b"steps_done ")
    done = int(blob[at + 11:blob.index(b"\n", at)]) if at >= 0 else 0
    argv, rc, out, err = r.run(r.base() + [
        "--precision", "fp32", "--batch", "32", "--steps", str(done + 5), "--resume", ck])
    ok = rc == 0 and done > 0 and "the global batch stays 32" in (out + err) and \
        f"resumed from {ck} after step {done}" in out
    r.tally.report(ok, "kill: the last checkpoint is intact and resumes on one process",
                   f"after step {done}" + ("" if ok else "\n" + describe_failure(argv, rc, out,
                                                                                   err)))


def same_states(a, b):
    sa, sb = read_states(a), read_states(b)
    return sorted(sa) == sorted(sb) and all(sa[k].tobytes() == sb[k].tobytes() for k in sa)


def check_zero(r, work):
    adamw = ["--optimizer", "adamw", "--weight-decay", "0.01", "--batch", "16"]
    for p in ["fp32", "bf16", "fp16"]:
        runs = {}
        for tag, extra in [("plain", []), ("zero", ["--shard-optimizer"])]:
            d = os.path.join(work, f"zero-{p}-{tag}")
            out = r.ok_run(f"zero {p} {tag}", r.base(lr="0.01") + adamw + [
                "--precision", p, "--steps", str(STEPS), "--csv", d + ".csv", "--state-dir", d,
                "--checkpoint", d + ".ckpt"] + extra, 2)
            if out is None:
                return
            runs[tag] = (d, out)
        (a, _), (b, out) = runs["plain"], runs["zero"]
        compare_runs(r, f"zero {p}: sharded = unsharded, 2 ranks (loss, grad norm, states)",
                     a, a + ".csv", b, b + ".csv", 1e-6, ("loss", "grad_norm", "loss_scale"))
        bitwise = open(a + ".csv").read() == open(b + ".csv").read() and same_states(a, b)
        r.tally.report(bitwise, f"zero {p}: bit for bit, CSV and states")
        with open(a + ".ckpt", "rb") as f, open(b + ".ckpt", "rb") as g:
            same_ckpt = f.read() == g.read()
        r.tally.report(same_ckpt, f"zero {p}: the sharded run's checkpoint is the unsharded "
                       "run's, byte for byte")
        m = re.search(r"optimizer state sharded over 2 ranks: (\d+) bytes per rank .* of (\d+)",
                      out)
        mine, whole = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        r.tally.report(m is not None and whole > 0 and 2 * mine == whole,
                       f"zero {p}: optimizer state per rank halved",
                       f"{mine} of {whole} bytes" if m else "no optimizer-state line:\n" + out)
        r.tally.report(hash_line(out.replace("replicated states", "states")),
                       f"zero {p}: the replicated states are identical on both ranks")

    # 3 ranks: slices with padding (a bias of 10 is 3 slices of 4).
    runs = {}
    for tag, extra in [("plain", []), ("zero", ["--shard-optimizer"])]:
        d = os.path.join(work, f"zero3-{tag}")
        if r.ok_run(f"zero 3 ranks {tag}", r.base(lr="0.01") + adamw + [
                "--precision", "bf16", "--steps", "10", "--csv", d + ".csv", "--state-dir", d,
                "--checkpoint", d + ".ckpt"] + extra, 3) is None:
            return
        runs[tag] = d
    a, b = runs["plain"], runs["zero"]
    with open(a + ".ckpt", "rb") as f, open(b + ".ckpt", "rb") as g:
        same_ckpt = f.read() == g.read()
    r.tally.report(open(a + ".csv").read() == open(b + ".csv").read() and same_states(a, b) and
                   same_ckpt, "zero bf16, 3 ranks (padded slices): sharded = unsharded, CSV, "
                   "states and checkpoint bit for bit")

    # Checkpoints resume either way: 10 steps, a checkpoint, 10 more.
    full = os.path.join(work, "zero-bf16-plain")
    for first, then in [("--shard-optimizer", None), (None, "--shard-optimizer")]:
        tag = "sharded -> unsharded" if first else "unsharded -> sharded"
        ck = os.path.join(work, f"zero-resume-{bool(first)}.ckpt")
        d = os.path.join(work, f"zero-resume-{bool(first)}")
        common = r.base(lr="0.01") + adamw + ["--precision", "bf16"]
        if r.ok_run(f"zero resume {tag}: first half", common + [
                "--steps", "10", "--checkpoint", ck] + ([first] if first else []), 2) is None:
            return
        out = r.ok_run(f"zero resume {tag}: second half", common + [
            "--steps", str(STEPS), "--resume", ck, "--state-dir", d] + ([then] if then else []),
            2)
        if out is None:
            return
        ok = f"resumed from {ck} after step 10" in out and same_states(full, d)
        r.tally.report(ok, f"zero: a checkpoint resumes {tag}, ending where the uninterrupted "
                       "run ends (bit for bit)")

    # Saved modules, compiled for 2 ranks.
    folder = os.path.join(work, "zero-saved")
    if r.ok_run("zero: --save-modules --shard-optimizer --world 2", r.base(lr="0.01") + adamw + [
            "--precision", "bf16", "--save-modules", folder, "--shard-optimizer", "--world",
            "2"]) is None:
        return
    a, b = os.path.join(work, "zero-saved-train"), os.path.join(work, "zero-saved-run")
    out = r.ok_run("zero saved: mixprec train --ranks 2", r.base(lr="0.01") + adamw + [
        "--precision", "bf16", "--steps", "10", "--state-dir", a, "--ranks", "2",
        "--shard-optimizer"])
    out2 = r.ok_run("zero saved: mixprec-train-run --ranks 2", [
        r.args.train_run, folder, "--data", "x=" + r.x, "--labels", r.y, "--backend", "cpu",
        "--steps", "10", "--state-dir", b, "--ranks", "2"])
    if out is None or out2 is None:
        return
    r.tally.report(same_states(a, b), "zero saved: mixprec-train-run --ranks 2 = mixprec train "
                   "--ranks 2 --shard-optimizer, bit for bit")
    argv, rc, out, err = r.run([r.args.train_run, folder, "--data", "x=" + r.x, "--labels", r.y,
                                "--backend", "cpu", "--steps", "5"], timeout=120)
    ok = rc == 2 and "sharded over 2 ranks" in err
    r.tally.report(ok, "zero saved: one process refuses a step sharded over 2 ranks, naming why",
                   "" if ok else describe_failure(argv, rc, out, err))


def check_eval(r, work):
    ex = r.args.example
    xt = np.tile(np.load(os.path.join(ex, "x_test.npy")), (4, 1))
    yt = np.tile(np.load(os.path.join(ex, "y_test.npy")), 4)
    xp, yp = os.path.join(work, "eval-x.npy"), os.path.join(work, "eval-y.npy")
    np.save(xp, xt)
    np.save(yp, yt)
    outs, rows = {}, {}
    for ranks, batch in [(1, 32), (2, 16)]:
        c = os.path.join(work, f"eval-{ranks}.csv")
        out = r.ok_run(f"eval {ranks} ranks", r.base() + [
            "--precision", "fp32", "--batch", str(batch), "--steps", "20", "--eval-every", "10",
            "--test-data", "x=" + xp, "--test-labels", yp, "--csv", c], ranks)
        if out is None:
            return
        outs[ranks] = out
        rows[ranks] = [x for x in read_csv(c) if x["test_loss"]]
    ok = len(rows[1]) == len(rows[2]) == 2 and all(
        abs(float(a[k]) - float(b[k])) <= 1e-5 * abs(float(a[k]))
        for a, b in zip(rows[1], rows[2]) for k in ("test_loss", "test_accuracy"))
    counted = f"/{len(yt)})" in outs[2]
    r.tally.report(ok and counted, "eval: 2 ranks share the evaluation batches; test loss and "
                   f"accuracy = one process's (1e-5), all {len(yt)} rows counted",
                   "" if ok and counted else outs[2])


def check_gpt(r, work):
    models = r.args.models
    if not models:
        r.tally.report(False, "gpt: --models not given")
        return
    model = os.path.join(models, "gpt_block", "model.onnx")
    rng = np.random.default_rng(26)
    ids = rng.integers(0, 64, size=(64, 16)).astype(np.int64)
    labels = np.roll(ids, -1, axis=1)
    xs, ys = os.path.join(work, "gpt_x.npy"), os.path.join(work, "gpt_y.npy")
    np.save(xs, ids)
    np.save(ys, labels)
    runs = {}
    # The export's batch is fixed at 2: one process accumulates 2
    # micro-batches of 2 (the mean of their gradients), two ranks take one
    # each (the mean across ranks): the same global batch of 4.
    for ranks, accumulate in [(1, 2), (2, 1)]:
        d = os.path.join(work, f"gpt-{ranks}")
        c = d + ".csv"
        out = r.ok_run(f"gpt {ranks} ranks", [
            r.args.mixprec, "train", model, "--data", "input_ids=" + xs, "--labels", ys,
            "--backend", "cpu", "--precision", "fp32", "--optimizer", "sgd", "--lr", "0.1",
            "--batch", "2", "--accumulate", str(accumulate), "--steps", "12", "--log-every",
            "4", "--csv", c,
            "--state-dir", d], ranks)
        if out is None:
            return
        runs[ranks] = (d, c)
    compare_runs(r, "gpt: GPT-style block, 2 ranks x 2 = 1 rank x 2 micro-batches of 2",
                 runs[1][0], runs[1][1], runs[2][0], runs[2][1], REL, ("loss", "grad_norm"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--train-run", required=True)
    ap.add_argument("--example", required=True)
    ap.add_argument("--models", help="the e2e models (gen_models.py): the GPT-style block")
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("-k", nargs="*", default=CHECKS)
    args = ap.parse_args(argv)
    if not shutil.which("mpirun"):
        print("SKIP: mpirun not found (scripts/setup.sh installs openmpi-bin)")
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    r = Runner(args)
    checks = {"single": check_single, "equal": check_equal, "overflow": check_overflow,
              "clip": check_clip, "saved": check_saved, "refuse": check_refuse,
              "kill": check_kill, "zero": check_zero, "eval": check_eval, "gpt": check_gpt}
    for name in args.k:
        checks[name](r, args.work)
    print(f"{r.tally.passed} passed, {r.tally.failed} failed")
    return 0 if r.tally.failed == 0 and r.tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
