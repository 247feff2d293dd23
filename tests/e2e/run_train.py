#!/usr/bin/env python3
"""`mixprec train` end to end on the digits MLP (examples/train_digits).

Usage:
    run_train.py --mixprec BIN --example DIR --work DIR [--models DIR] [--timeout S]
                 [--train-run BIN] [--gemm-plan-check BIN]
                 [-k NAME ...] [--quick]

--quick (the ASan+UBSan build): the ensembles run 3 seeds of 1 epoch with
their structural checks only; the statistical bounds need the full runs,
which the Release build makes.

Checks, one line each, then exactly "N passed, N failed":

  ensemble    bf16 and fp16 (dynamic loss scaling) each --compare fp32 with
              --seeds 30 --reinit (20 epochs; each run its own data order and
              initialisation): Welch's 95% interval of the difference of
              mean test accuracies reaches no lower than -1 point and is at
              most 1 point wide each side (measured 0.3-0.4), so a real
              2-point regression fails it; >= 95% of steps applied; the verdict and the five
              metrics are printed and in the --metrics JSON. No single run's
              accuracy is compared with another's.
  planted     planted regressions, each with a control: FP16 without loss
              scaling on a model whose gradients are small (its cross-entropy
              times 2^-20): the test loss is worse at the interval's edge, and
              --compare-every shows every GEMM weight's gradient zeroed at step
              1, where the losses still agree; with GradScaler's scaling (the
              control) neither. An op forced to FP16 that overflows (--force
              sumsq:fp16, the sum of squares of an L2 normalization, on data
              scaled so that a few percent of the samples pass 65504): a
              2.5-point regression that the ensemble criterion above fails,
              with gradient errors 1000x the control's; the control passes it.
  report      README's command: fp16 --compare fp32 --seeds 5 --compare-every
              --metrics --report on the digits: the verdict and five metrics
              printed and in the JSON; the page has every chart drawn from the
              run and renders in headless Chromium (a PNG, the DOM's chart ids;
              skipped with a message where Chromium is absent).
  reinit      --reinit resamples the parameters from the seed (deterministic,
              the initial tensors' mean and sd), the compare run beside gets
              the same values.
  compare     --compare fp32 trains an FP32 copy beside bf16 on the same
              batches: its CSV columns equal a plain fp32 run's losses bit
              for bit (the same binary on one machine: deterministic by
              construction), and the summary reports the loss gap.
  overflow    a batch planted to overflow FP16 (step 4, --no-shuffle) is
              skipped (CSV skipped = 1 at step 4 only), the scale halves
              (65536 used at step 4, 32768 at step 5), and every master
              weight and AdamW state after step 4 is bit-identical to a run
              that stopped after step 3; step count unchanged, only the
              loss-scale state moved (scale halved, growth tracker reset).
  accumulate  2 micro-batches of 16 (--accumulate 2) give the losses and weights
              of batches of 32 within 1e-5 (FP32, summation order only); an
              overflow planted in the second micro-batch skips the whole step.
  resume      20 steps in one run vs 10 + --resume 10: the same CSV rows
              (loss, scale, grad norm, skipped) and the same final state,
              bit for bit, on the CPU backend (fp16, dynamic scaling with a
              growth interval of 3 so that the scale state moves).
  kill        SIGKILL at random moments of a run writing a checkpoint every
              step: each time the checkpoint left behind resumes.
  stuck       every batch overflows at fp16 with --min-scale 1: exit 5 after
              --max-skipped-in-a-row steps, naming the first non-finite op;
              the checkpoint of the last good step is kept and resumes; with a
              static scale of 1e9 the note names the gradient that overflows.
  fp8-delayed the FP8 amax histories and scales (delayed scaling, history 2, max
              with margin 0 and most-recent with margin 1) of the data and the
              three weights after 3 steps equal the formula computed here from
              the data and the saved master weights.
  gpt-fp8     the GPT-style block (gen_models.py) trains 256 steps at fp8
              (hybrid E4M3/E5M2, delayed scaling) beside FP32 over 20 seeds:
              the test loss's paired difference is within 10% of FP32's at the
              95% interval's worse edge.
  saved       `--save-modules DIR` then `mixprec-train-run DIR` (the runtime
              alone) gives the CSV (losses, scales, grad norms, test loss and
              accuracy) and final states of `mixprec train` bit for bit; each
              resumes the other's checkpoint bit for bit; an overflowing run
              stops with exit 5; a missing or damaged folder, missing labels and
              data of the wrong shape are one error line (exit 1 or 2).
  cuda-gemms  the training steps (and evaluation modules) of the digits MLP and
              the GPT-style block at fp32, bf16, fp16 and fp8, saved with
              --save-modules: every GEMM plans on cuBLASLt as the CUDA
              backend plans it (gemm_plan_check: dtypes, FP8's TN layout,
              epilogues), so what a GPU would refuse fails here.
  bad-*       labels out of range, data that disagrees with the model, an
              option out of range, a checkpoint of another model, of other
              optimizer state, and of another batch size: one error line
              naming the file or option, exit 1 (2 for usage), no crash.
"""

import argparse
import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure, run_cmd  # noqa: E402

BATCH = 32
# The ensembles (README "Training validation"): SEEDS data-order seeds per
# precision, each ENSEMBLE_EPOCHS epochs; the planted regressions train
# PLANTED_EPOCHS.
SEEDS = 30
ENSEMBLE_EPOCHS = 20
PLANTED_EPOCHS = 5
# --quick (the ASan+UBSan build's run): the same commands on a bounded
# ensemble (QUICK_SEEDS seeds, QUICK_EPOCHS epochs) with the structural
# checks only (every field, line and file there; no statistical bound,
# which needs the full ensemble).
QUICK = False
QUICK_SEEDS = 3
QUICK_EPOCHS = 1
# README ("Training validation"): the GPT-style block at fp8 ends within
# GPT_FP8_BOUND of FP32's test loss at the paired 95% interval's worse edge,
# over GPT_SEEDS seeds.
GPT_FP8_BOUND = 0.10
GPT_SEEDS = 20


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read_states(folder):
    return {name[:-4]: np.load(os.path.join(folder, name))
            for name in sorted(os.listdir(folder)) if name.endswith(".npy")}


class Runner:
    def __init__(self, args):
        self.args = args
        ex = args.example
        self.model = os.path.join(ex, "mlp.onnx")
        self.base = [args.mixprec, "train", self.model,
                     "--data", "x=" + os.path.join(ex, "x_train.npy"),
                     "--labels", os.path.join(ex, "y_train.npy")]
        self.test = ["--test-data", "x=" + os.path.join(ex, "x_test.npy"),
                     "--test-labels", os.path.join(ex, "y_test.npy")]

    def train(self, *extra, base=None, timeout=None):
        argv = (base or self.base) + ["--backend", "cpu"] + [str(e) for e in extra]
        rc, out, err = run_cmd(argv, timeout or self.args.timeout)
        return argv, rc, out, err


def run_ensemble(r, work, label, precision, extra=(), base=None, seeds=None, epochs=None,
                 reinit=False):
    """--precision P --compare fp32 --seeds N: the metrics JSON, the CSV rows
    and the output; None (after reporting the failure) when the run failed."""
    metrics = os.path.join(work, f"{label}.json")
    csv_path = os.path.join(work, f"{label}.csv")
    if QUICK:
        seeds, epochs = QUICK_SEEDS, QUICK_EPOCHS
    argv, rc, out, err = r.train(
        "--batch", BATCH, "--epochs", epochs or ENSEMBLE_EPOCHS, "--optimizer", "sgd",
        "--lr", "0.1", "--momentum", "0.9", "--seed", "7", "--log-every", 100000,
        "--precision", precision, "--compare", "fp32", "--seeds", seeds or SEEDS,
        "--metrics", metrics, "--csv", csv_path, *(["--reinit"] if reinit else []), *extra,
        *([] if base else r.test), base=base)
    if rc != 0:
        r.tally.report(False, label, "\n" + describe_failure(argv, rc, out, err))
        return None
    with open(metrics) as f:
        m = json.load(f)
    return m, read_csv(csv_path), out


def difference_line(m):
    d = m["metric_difference"]
    scale = 100 if d["metric"] == "test_accuracy" else 1
    lo, hi = d["ci95"]
    return (f"{d['metric']} {m['precision']} {scale * d['precision_mean']:.4g} (sd "
            f"{scale * d['precision_sd']:.2g}) vs fp32 {scale * d['fp32_mean']:.4g} (sd "
            f"{scale * d['fp32_sd']:.2g}), N {d['n']}, difference {scale * d['difference']:.3g} "
            f"in [{scale * lo:.3g}, {scale * hi:.3g}]: {d['verdict']}")


def structure_ok(m, rows, out, seeds, compare_every=False):
    """What every ensemble run must have, whatever its numbers: the verdict
    and the five metrics printed and in the JSON, a CSV row per step and
    seed, and (with --compare-every) the gradient comparison."""
    want = ["throughput", "memory", "metric_difference", "applied_steps", "mfu", "ensemble"]
    ok = (all(m.get(k) is not None for k in want) and len(m["seeds"]) == seeds
          and len({row["seed"] for row in rows}) == seeds and m["metric_difference"]["n"] == seeds
          and m["metric_difference"]["verdict"] in out and "ensemble verdict" in out
          and all(f"({c})" in out for c in "abcde")
          and m["mfu"]["flops_per_step"] and m["memory"]["total"] > 0)
    if compare_every:
        ok = ok and m["gradient_comparison"] and m["gradient_summary"]["worst"] in out
    return ok


def check_ensemble(r, work, tally, results):
    """bf16 and fp16 (dynamic scaling) against FP32 over SEEDS seeds, each
    its own data order and initialisation (--reinit): Welch's 95% interval of the difference of mean test accuracies
    must not reach below -1 point, and must be at most 1 point wide each
    side (measured 0.28-0.39): a real 2-point regression then puts the
    estimate near -2 and the lower edge near -2.3, far below -1, so it fails
    (check_planted plants a 2.5-point one and shows it does), while a
    precision as good as FP32 fails only if its estimate falls 3 standard
    errors below zero."""
    for p in ["bf16", "fp16"]:
        got = run_ensemble(r, work, f"ensemble_{p}", p, reinit=True)
        if got is None:
            return
        m, rows, out = got
        d = m["metric_difference"]
        results[p] = m
        lo, hi = d["ci95"]
        applied = m["applied_steps"]["rate"]
        ok = structure_ok(m, rows, out, QUICK_SEEDS if QUICK else SEEDS) \
            and d["metric"] == "test_accuracy"
        if not QUICK:
            ok = ok and d["fp32_mean"] >= 0.90 and lo >= -0.01 and d["half_width"] <= 0.01 \
                and applied >= 0.95
        print(f"      {difference_line(m)}; {100 * applied:.1f}% of steps applied", flush=True)
        tally.report(ok, f"ensemble {p}",
                     f"interval's lower edge {100 * lo:.2f} points (>= -1), half-width "
                     f"{100 * d['half_width']:.2f} (<= 1), fp32 mean "
                     f"{100 * d['fp32_mean']:.2f}% (>= 90%), {100 * applied:.1f}% applied"
                     + (" [quick: structure only]" if QUICK else ""))


# The planted regressions' data: the digits times OVERFLOW_SCALE make the sum
# of squares pass FP16's largest value for a few percent of the samples.
OVERFLOW_SCALE = 59.5
UNDERFLOW_LOSS_FACTOR = 2.0 ** -20


def planted_models(r, work):
    """Two models for the planted regressions, from the digits MLP's weights:

    underflow: the MLP plus its own cross-entropy (one-hot labels `y` as a
        graph input) times 2^-20 (--loss model). SGD with the learning rate
        times 2^20 follows the same trajectory in FP32 (powers of two are
        exact), but the gradients of the logits (~1e-9) underflow FP16
        without loss scaling; GradScaler's 2^16 brings them back.
    overflow: the MLP on L2-normalized inputs (4 x / sqrt(sum(x*x) + 1e-6));
        with the data times OVERFLOW_SCALE the sum of squares passes FP16's
        65504 for a few percent of the samples, so forcing that ReduceSum
        ('sumsq') to FP16 zeroes their features: a regression of about 2.5
        points (measured). FP32 is unchanged (normalization is scale-free)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    mlp = onnx.load(r.model)
    ex = r.args.example
    paths = {}
    # underflow
    g = mlp.graph
    nodes = list(g.node) + [
        helper.make_node("LogSoftmax", ["logits"], ["logp"], name="logp", axis=1),
        helper.make_node("Mul", ["logp", "y"], ["picked"], name="picked"),
        helper.make_node("ReduceSum", ["picked", "axis1"], ["nll_neg"], name="nll_neg",
                         keepdims=0),
        helper.make_node("ReduceMean", ["nll_neg"], ["mean_neg"], name="mean_neg", keepdims=0),
        helper.make_node("Mul", ["mean_neg", "tiny"], ["loss"], name="scaled_loss"),
    ]
    inits = list(g.initializer) + [
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array(-UNDERFLOW_LOSS_FACTOR, np.float32), "tiny")]
    batch = g.input[0].type.tensor_type.shape.dim[0]
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 10])
    y_info.type.tensor_type.shape.dim[0].CopyFrom(batch)
    graph = helper.make_graph(nodes, "mlp_tiny_loss", [g.input[0], y_info],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    paths["underflow"] = os.path.join(work, "mlp_tiny_loss.onnx")
    onnx.save(model, paths["underflow"])
    for split in ("train", "test"):
        y = np.load(os.path.join(ex, f"y_{split}.npy"))
        np.save(os.path.join(work, f"onehot_{split}.npy"), np.eye(10, dtype=np.float32)[y])
    # overflow
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"], name="sq"),
        helper.make_node("ReduceSum", ["sq", "axis1"], ["sumsq"], name="sumsq", keepdims=1),
        helper.make_node("Add", ["sumsq", "eps"], ["sumsq_eps"], name="sumsq_eps"),
        helper.make_node("Sqrt", ["sumsq_eps"], ["norm"], name="norm"),
        helper.make_node("Div", ["x", "norm"], ["unit"], name="unit"),
        # Back to the digits' own scale (their norms are about 4).
        helper.make_node("Mul", ["unit", "four"], ["xn"], name="xn"),
    ]
    for node in g.node:
        n = onnx.NodeProto()
        n.CopyFrom(node)
        n.input[:] = ["xn" if i == "x" else i for i in n.input]
        nodes.append(n)
    inits = list(g.initializer) + [
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
        numpy_helper.from_array(np.array(4, np.float32), "four")]
    graph = helper.make_graph(nodes, "mlp_normalized", [g.input[0]], list(g.output), inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    paths["overflow"] = os.path.join(work, "mlp_normalized.onnx")
    onnx.save(model, paths["overflow"])
    for split in ("train", "test"):
        np.save(os.path.join(work, f"xbig_{split}.npy"),
                np.load(os.path.join(ex, f"x_{split}.npy")) * OVERFLOW_SCALE)
    return paths


def check_planted(r, work, tally):
    """The planted regressions: caught by the ensemble's interval (the
    criterion check_ensemble applies fails on them) and shown by the
    gradient comparison; their controls pass."""
    ex = r.args.example
    paths = planted_models(r, work)
    # 1. FP16 without loss scaling where the gradients need it: every
    # gradient is zero at the first step, where the losses still agree.
    base = [r.args.mixprec, "train", paths["underflow"],
            "--data", "x=" + os.path.join(ex, "x_train.npy"),
            "--data", "y=" + os.path.join(work, "onehot_train.npy"), "--loss", "model",
            "--test-data", "x=" + os.path.join(ex, "x_test.npy"),
            "--test-data", "y=" + os.path.join(work, "onehot_test.npy")]
    lr = ["--lr", 0.1 / UNDERFLOW_LOSS_FACTOR]
    found = {}
    for label, scaling in (("planted-underflow", "none"),
                           ("planted-underflow-control", "dynamic")):
        got = run_ensemble(r, work, label, "fp16",
                           ["--loss-scale", scaling, "--compare-every", 1, *lr],
                           base=base, seeds=10, epochs=PLANTED_EPOCHS)
        if got is None:
            return
        m, rows, out = got
        d = found[label] = m["metric_difference"]
        first = m["gradient_comparison"][0]
        # The GEMMs' weight gradients (the biases' are sums in FP32).
        weights = [p for p in first["params"] if p["name"].endswith("weight")]
        zeroed = min(p["zero_fraction"] for p in weights)
        fp32_zeros = max(p["fp32_zero_fraction"] for p in weights)
        step_row = rows[first["step"] - 1]
        loss_gap = abs(float(step_row["loss"]) / float(step_row["fp32_loss"]) - 1)
        lo, hi = d["ci95"]
        ok = structure_ok(m, rows, out, QUICK_SEEDS if QUICK else 10, True) \
            and d["metric"] == "test_loss" and first["step"] == 1 and loss_gap < 1e-3 \
            and len(weights) == 3
        if scaling == "none":
            ok = ok and zeroed == 1.0 and fp32_zeros < 0.5
            if not QUICK:
                ok = ok and lo > 0 and "worse by" in d["verdict"]
        else:
            ok = ok and zeroed < 0.5
            if not QUICK:
                # The difference left is noise beside the planted one's.
                ok = ok and hi < found["planted-underflow"]["ci95"][0] / 5
        tally.report(ok, label, f"{difference_line(m)}; at step 1 (loss gap "
                     f"{100 * loss_gap:.3f}%) zero weight gradients >= {100 * zeroed:.0f}% in "
                     f"every layer (fp32 <= {100 * fp32_zeros:.0f}%)")
    # 2. An op forced to FP16 that overflows (the normalization's sum of
    # squares) on about 3% of the samples: a 3-point regression, which the
    # ensemble criterion fails; the control (nothing forced) passes it.
    base = [r.args.mixprec, "train", paths["overflow"],
            "--data", "x=" + os.path.join(work, "xbig_train.npy"),
            "--labels", os.path.join(ex, "y_train.npy"),
            "--test-data", "x=" + os.path.join(work, "xbig_test.npy"),
            "--test-labels", os.path.join(ex, "y_test.npy")]
    worst = {}
    for label, extra in (("planted-overflow-control", []),
                         ("planted-overflow", ["--force", "sumsq:fp16"])):
        got = run_ensemble(r, work, label, "fp16", ["--compare-every", 44, *extra], base=base)
        if got is None:
            return
        m, rows, out = got
        d = m["metric_difference"]
        lo, hi = d["ci95"]
        summary = m["gradient_summary"]
        worst[label] = max(layer["rel_l2_mean"] for layer in summary["layers"])
        passes = lo >= -0.01 and d["half_width"] <= 0.01  # check_ensemble's criterion
        ok = structure_ok(m, rows, out, QUICK_SEEDS if QUICK else SEEDS, True) \
            and d["metric"] == "test_accuracy"
        if extra:
            ok = ok and worst[label] > 10 * worst["planted-overflow-control"]
            if not QUICK:
                ok = ok and not passes and hi < 0 and "worse by" in d["verdict"]
        elif not QUICK:
            ok = ok and passes
        tally.report(ok, label, f"{difference_line(m)}; ensemble criterion "
                     f"{'passes' if passes else 'FAILS'}; gradients: worst layer "
                     f"{summary['worst']} (mean rel L2 {worst[label]:.3g})")


def check_report(r, work, tally):
    """README's training-validation command on the digits MLP: fp16 beside
    FP32 over 5 seeds with the gradient comparison, --metrics and --report:
    the verdict and the five metrics are printed and in the JSON, and the
    page has every chart (drawn from this run: a line per seed group, a
    gradient-error line per parameter, the op graph's boxes), renders in
    headless Chromium to a PNG, and Chromium's DOM has every chart id."""
    import types
    import run_report
    metrics, page_path = os.path.join(work, "report.json"), os.path.join(work, "run.html")
    csv_path = os.path.join(work, "report.csv")
    seeds = QUICK_SEEDS if QUICK else 5
    argv, rc, out, err = r.train("--batch", BATCH, "--epochs", 1 if QUICK else 5, "--optimizer",
                                 "sgd", "--lr", "0.1", "--momentum", "0.9", "--precision", "fp16",
                                 "--compare", "fp32", "--seeds", seeds, "--compare-every", 22,
                                 "--metrics", metrics, "--report", page_path, "--csv", csv_path,
                                 "--log-every", 100000, *r.test)
    if rc != 0:
        tally.report(False, "report", "\n" + describe_failure(argv, rc, out, err))
        return
    with open(metrics) as f:
        m = json.load(f)
    rows = read_csv(csv_path)
    tally.report(structure_ok(m, rows, out, seeds, True), "report: verdict and metrics",
                 next((line for line in out.splitlines() if "ensemble verdict" in line), ""))
    with open(page_path) as f:
        text = f.read()
    page = run_report.Page(text)
    run_report.check_common(tally, "report", page, text)
    params = {p["name"] for c in m["gradient_comparison"] for p in c["params"]}
    grad_lines = run_report.lines_with_points(page, "grad-error", 2)
    boxes = page.inside("op-graph", "rect", None)
    tally.report(len(run_report.lines_with_points(page, "loss-curves", 10)) >= 2
                 and len(grad_lines) >= len(params) == 6 and len(boxes) >= 5
                 and m["metric_difference"]["verdict"] in text,
                 "report: the run's curves, gradient errors, op graph and verdict drawn",
                 f"{len(grad_lines)} gradient-error lines for {len(params)} parameters, "
                 f"{len(boxes)} boxes in the op graph")
    args = types.SimpleNamespace(work=os.path.join(work, "report_browser"),
                                 timeout=r.args.timeout, png_out=r.args.report_png)
    os.makedirs(args.work, exist_ok=True)
    run_report.check_browser(args, tally, page_path)


def check_reinit(r, work, tally):
    """--reinit: the parameters are resampled from the seed (the same seed
    gives the same values, another seed others, each with its initial
    tensor's mean and standard deviation), and the compare run beside starts
    from the same values (fp32 beside fp32: its losses equal the run's bit
    for bit)."""
    import onnx
    from onnx import numpy_helper
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(r.model).graph.initializer}
    states = {}
    for seed in (5, 5, 6):
        folder = os.path.join(work, f"reinit_{seed}_{len(states)}")
        argv, rc, out, err = r.train("--batch", BATCH, "--steps", 1, "--lr", "1e-30",
                                     "--precision", "fp32", "--reinit", "--seed", seed,
                                     "--state-dir", folder)
        if rc != 0:
            tally.report(False, "reinit", "\n" + describe_failure(argv, rc, out, err))
            return
        states[folder] = (seed, read_states(folder))
    (_, a), (_, b), (_, c) = states.values()
    names = sorted(init)
    same = all(a[n].tobytes() == b[n].tobytes() for n in names)
    other = all(a[n].tobytes() != c[n].tobytes() for n in names if init[n].std() > 0)
    moved = all(np.abs(a[n] - init[n]).max() > 0 for n in names if init[n].std() > 0)
    stats = max(abs(a[n].std() / init[n].std() - 1) for n in names if init[n].std() > 0)
    csv_path = os.path.join(work, "reinit_compare.csv")
    argv, rc, out, err = r.train("--batch", BATCH, "--steps", 5, "--precision", "fp32",
                                 "--compare", "fp32", "--reinit", "--seeds", 2, "--csv", csv_path)
    rows = read_csv(csv_path) if rc == 0 else []
    beside = len(rows) == 10 and all(row["loss"] == row["fp32_loss"] for row in rows)
    tally.report(same and other and moved and stats < 0.1 and beside, "reinit",
                 f"seed 5 twice identical {same}, seed 6 differs {other}, resampled {moved}, "
                 f"sd within {100 * stats:.1f}% of the initial tensors' (< 10%), the compare "
                 f"run starts from the same values {beside}")


def check_compare(r, work, tally):
    """--compare fp32's FP32 column is the plain FP32 run's, bit for bit
    (the same binary on the same machine: deterministic by construction)."""
    common = ["--batch", BATCH, "--steps", 44, "--optimizer", "sgd", "--lr", "0.1",
              "--momentum", "0.9", "--seed", "7", *r.test]
    plain, both = os.path.join(work, "plain_fp32.csv"), os.path.join(work, "compare.csv")
    for argv, rc, out, err in (r.train(*common, "--precision", "fp32", "--csv", plain),
                               r.train(*common, "--precision", "bf16", "--compare", "fp32",
                                       "--csv", both)):
        if rc != 0:
            tally.report(False, "compare", "\n" + describe_failure(argv, rc, out, err))
            return
    rows, fp32 = read_csv(both), read_csv(plain)
    same = len(fp32) == 44 and all(a["fp32_loss"] == b["loss"] for a, b in zip(rows, fp32))
    tally.report(same and "mean loss gap" in out and len(rows) == 44, "compare",
                 "fp32 column equals the fp32 run bit for bit" if same else
                 "fp32 column differs from the fp32 run")


def check_overflow(r, work, tally):
    ex = r.args.example
    x = np.load(os.path.join(ex, "x_train.npy"))
    planted = x.copy()
    planted[3 * BATCH:4 * BATCH] *= 1e6  # batch 4 (file order): beyond FP16's 65504
    planted_path = os.path.join(work, "x_planted.npy")
    np.save(planted_path, planted)
    base = [r.args.mixprec, "train", r.model, "--data", "x=" + planted_path,
            "--labels", os.path.join(ex, "y_train.npy")]
    common = ["--batch", BATCH, "--no-shuffle", "--precision", "fp16", "--optimizer", "adamw",
              "--lr", "0.01"]
    dirs = {}
    for steps in (3, 4, 5):
        dirs[steps] = os.path.join(work, f"overflow_{steps}")
        csv_path = os.path.join(work, f"overflow_{steps}.csv")
        argv, rc, out, err = r.train(*common, "--steps", steps, "--state-dir", dirs[steps],
                                     "--csv", csv_path, base=base)
        if rc != 0:
            tally.report(False, "overflow", "\n" + describe_failure(argv, rc, out, err))
            return
    rows = read_csv(os.path.join(work, "overflow_5.csv"))
    skipped = [row["skipped"] for row in rows]
    scales = [float(row["loss_scale"]) for row in rows]
    a, b = read_states(dirs[3]), read_states(dirs[4])
    moved = sorted(k for k in a if a[k].tobytes() != b[k].tobytes())
    trained = [k for k in a if k not in ("step", "loss_scale", "growth_tracker")]
    ok = (skipped == ["0", "0", "0", "1", "0"] and scales[3] == 65536 and scales[4] == 32768
          and moved == ["growth_tracker", "loss_scale"] and float(b["loss_scale"]) == 32768
          and float(a["growth_tracker"]) == 3 and float(b["growth_tracker"]) == 0
          and float(b["step"]) == 3 and len(trained) == 18)
    tally.report(ok, "overflow", f"skipped {skipped}, scales {scales}, states that moved over "
                 f"the skipped step: {moved} ({len(trained)} master/AdamW states unchanged)")


def check_accumulate(r, work, tally):
    # 2 micro-batches of 16 = one batch of 32: the same losses and weights
    # up to FP32 rounding (the sums differ in order only).
    common = ["--no-shuffle", "--momentum", "0.9", "--lr", "0.1", "--precision", "fp32",
              "--steps", 5]
    runs = {}
    for label, extra in (("acc", ["--batch", 16, "--accumulate", 2]), ("full", ["--batch", 32])):
        out_dir, csv_path = os.path.join(work, f"{label}_st"), os.path.join(work, f"{label}.csv")
        argv, rc, out, err = r.train(*common, *extra, "--state-dir", out_dir, "--csv", csv_path)
        if rc != 0:
            tally.report(False, "accumulate", "\n" + describe_failure(argv, rc, out, err))
            return
        runs[label] = ([float(row["loss"]) for row in read_csv(csv_path)], read_states(out_dir))
    (la, sa), (lf, sf) = runs["acc"], runs["full"]
    loss_rel = max(abs(a / b - 1) for a, b in zip(la, lf))
    state_rel = max(float(np.abs(sa[k] - sf[k]).max() / max(np.abs(sf[k]).max(), 1e-30))
                    for k in sf)
    # A planted overflow in the second micro-batch of step 2 (fp16): the
    # whole step is skipped and only the loss-scale state moves.
    ex = r.args.example
    x = np.load(os.path.join(ex, "x_train.npy"))
    x[48:64] *= 1e6
    planted = os.path.join(work, "x_acc_planted.npy")
    np.save(planted, x)
    base = [r.args.mixprec, "train", r.model, "--data", "x=" + planted,
            "--labels", os.path.join(ex, "y_train.npy")]
    fp16 = ["--no-shuffle", "--batch", 16, "--accumulate", 2, "--precision", "fp16",
            "--optimizer", "adamw"]
    dirs = {}
    for steps in (1, 2):
        dirs[steps] = os.path.join(work, f"acc16_{steps}")
        argv, rc, out, err = r.train(*fp16, "--steps", steps, "--state-dir", dirs[steps],
                                     base=base)
        if rc != 0:
            tally.report(False, "accumulate", "\n" + describe_failure(argv, rc, out, err))
            return
    a, b = read_states(dirs[1]), read_states(dirs[2])
    moved = sorted(k for k in a if a[k].tobytes() != b[k].tobytes())
    ok = loss_rel < 1e-5 and state_rel < 1e-5 and moved == ["growth_tracker", "loss_scale"]
    tally.report(ok, "accumulate", f"2x16 vs 32: loss max rel {loss_rel:.1e}, states max rel "
                 f"{state_rel:.1e} (< 1e-5); overflow in micro-batch 2 of step 2 skips the "
                 f"step, moved: {moved}")


def check_resume(r, work, tally):
    common = ["--batch", BATCH, "--precision", "fp16", "--optimizer", "sgd", "--lr", "0.05",
              "--momentum", "0.9", "--growth-interval", 3, "--seed", "11"]
    whole_csv, whole_dir = os.path.join(work, "whole.csv"), os.path.join(work, "whole")
    part_csv, part_dir = os.path.join(work, "part2.csv"), os.path.join(work, "part2")
    ck = os.path.join(work, "resume.ckpt")
    runs = [r.train(*common, "--steps", 20, "--csv", whole_csv, "--state-dir", whole_dir),
            r.train(*common, "--steps", 10, "--checkpoint", ck),
            r.train(*common, "--steps", 20, "--resume", ck, "--csv", part_csv,
                    "--state-dir", part_dir)]
    for argv, rc, out, err in runs:
        if rc != 0:
            tally.report(False, "resume", "\n" + describe_failure(argv, rc, out, err))
            return
    keys = ["step", "epoch", "loss", "loss_scale", "skipped", "grad_norm"]
    whole = [[row[k] for k in keys] for row in read_csv(whole_csv)[10:]]
    part = [[row[k] for k in keys] for row in read_csv(part_csv)]
    a, b = read_states(whole_dir), read_states(part_dir)
    same_states = a.keys() == b.keys() and all(a[k].tobytes() == b[k].tobytes() for k in a)
    scales = sorted({row[3] for row in whole})
    tally.report(whole == part and same_states and len(scales) > 1, "resume",
                 f"steps 11-20 identical: {whole == part}, final states identical: "
                 f"{same_states}, loss scales seen {scales}")


def check_kill(r, work, tally):
    ck = os.path.join(work, "kill.ckpt")
    common = ["--batch", BATCH, "--precision", "bf16", "--seed", "3"]
    argv, rc, out, err = r.train(*common, "--steps", 2, "--checkpoint", ck)
    if rc != 0:
        tally.report(False, "kill", "\n" + describe_failure(argv, rc, out, err))
        return
    rng = random.Random(5)
    kills = 0
    for attempt in range(5):
        argv = r.base + ["--backend", "cpu", *map(str, common), "--steps", "100000",
                         "--checkpoint", ck, "--checkpoint-every", "1", "--resume", ck,
                         "--log-every", "100000"]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0 + rng.random() * 1.5)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        # The checkpoint names the steps it holds ("steps_done N" in the
        # trainer's record); resuming runs one more.
        done = int(re.search(rb"steps_done (\d+)", open(ck, "rb").read()).group(1))
        argv, rc, out, err = r.train(*common, "--steps", done + 1, "--resume", ck)
        if rc != 0:
            tally.report(False, f"kill #{attempt + 1}",
                         "\n" + describe_failure(argv, rc, out, err))
            return
    leftovers = [f for f in os.listdir(work) if f.startswith(".kill.ckpt.tmp")]
    tally.report(kills == 5, "kill", f"{kills} SIGKILLs during checkpointing runs, the "
                 f"checkpoint resumed after each ({len(leftovers)} temporary files left)")


def check_stuck(r, work, tally):
    ex = r.args.example
    x = np.load(os.path.join(ex, "x_train.npy"))
    bad_path = os.path.join(work, "x_all_overflow.npy")
    np.save(bad_path, x * 1e6)
    ck = os.path.join(work, "stuck.ckpt")
    common = ["--batch", BATCH, "--precision", "fp16", "--min-scale", "1", "--seed", "1"]
    argv, rc, out, err = r.train(*common, "--steps", 3, "--checkpoint", ck)
    if rc != 0:
        tally.report(False, "stuck", "\n" + describe_failure(argv, rc, out, err))
        return
    before = open(ck, "rb").read()
    bad = [r.args.mixprec, "train", r.model, "--data", "x=" + bad_path,
           "--labels", os.path.join(ex, "y_train.npy")]
    argv, rc, out, err = r.train(*common, "--steps", 200, "--resume", ck, "--checkpoint", ck,
                                 "--max-skipped-in-a-row", 20, base=bad)
    lines = err.strip().splitlines()
    named = any("first non-finite value" in line and "'" in line for line in lines)
    kept = open(ck, "rb").read() == before
    argv2, rc2, out2, err2 = r.train(*common, "--steps", 4, "--resume", ck)
    ok = rc == 5 and lines and lines[0].startswith("mixprec: error:") and named and kept \
        and rc2 == 0
    tally.report(ok, "stuck", (lines[0] if lines else "") + " | " +
                 next((line for line in lines if "first non-finite" in line), "(no diagnosis)")
                 + f" | checkpoint kept: {kept}, resumes: {rc2 == 0}")


def check_stuck_gradient(r, work, tally):
    # A static scale of 1e9 at fp16: the scaled gradient of the loss
    # overflows FP16 at every step (the forward pass is fine).
    argv, rc, out, err = r.train("--batch", BATCH, "--precision", "fp16", "--loss-scale",
                                 "static", "--init-scale", "1e9", "--max-skipped-in-a-row", 5)
    note = next((line for line in err.splitlines() if "first non-finite" in line), "")
    ok = rc == 5 and "in the backward pass: the gradient of 'loss' overflows" in note
    tally.report(ok, "stuck-gradient", note if ok else "\n" + describe_failure(argv, rc, out, err))


def fp8_scale(amax, margin, fp8_max=448.0):
    """numerics::fp8Scale: (fp8_max / amax) / 2^margin in double, to float."""
    return np.float32(min((fp8_max / float(amax)) / 2.0 ** margin,
                          float(np.finfo(np.float32).max)))


def check_fp8_delayed(r, work, tally):
    # Sites whose tensors are known without running the model: the
    # data (fc1's input, quantized from the f32 graph input) and the
    # weights (quantized from the FP32 masters the step reads). After
    # step t the history is [amax_t, amax_t-1, ...] (length 2: the oldest
    # drops out at step 3) and the scale is fp8Scale(max or most recent).
    ex = r.args.example
    x = np.load(os.path.join(ex, "x_train.npy")).astype(np.float32)
    x[BATCH:2 * BATCH] *= 3.0  # batch 2's amax differs from the others'
    data = os.path.join(work, "x_fp8.npy")
    np.save(data, x)
    base = [r.args.mixprec, "train", r.model, "--data", "x=" + data,
            "--labels", os.path.join(ex, "y_train.npy")]
    import onnx
    from onnx import numpy_helper
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(r.model).graph.initializer}
    problems = []
    for algo, margin in (("max", 0), ("most-recent", 1)):
        common = ["--batch", BATCH, "--no-shuffle", "--precision", "fp8", "--optimizer", "sgd",
                  "--lr", "0.5", "--fp8-amax-history", 2, "--fp8-amax-algo", algo,
                  "--fp8-margin", margin]
        masters = [init]  # the masters before step 1, 2, 3
        states = None
        for steps in (1, 2, 3):
            out_dir = os.path.join(work, f"fp8_{algo}_{steps}")
            argv, rc, out, err = r.train(*common, "--steps", steps, "--state-dir", out_dir,
                                         base=base)
            if rc != 0:
                tally.report(False, f"fp8-delayed {algo}",
                             "\n" + describe_failure(argv, rc, out, err))
                return
            states = read_states(out_dir)
            masters.append(states)
        sites = {"fc1.input": [np.abs(x[t * BATCH:(t + 1) * BATCH]).max() for t in range(3)]}
        for w in ("fc1.weight", "fc2.weight"):
            sites[w] = [np.abs(masters[t][w]).max() for t in range(3)]
        # fc3, the 10-class head (n = 10), has no FP8 forward GEMM (cuBLASLt's
        # FP8 GEMMs want k and n multiples of 16): BF16, its weight unscaled.
        if any(k.startswith("fp8.fc3.weight.") for k in states):
            problems.append("fc3.weight (n = 10) has FP8 scaling state; the policy keeps "
                            "fc3 in BF16")
        for site, amaxes in sites.items():
            history = states.get(f"fp8.{site}.amax_history")
            scale = states.get(f"fp8.{site}.scale")
            if history is None or scale is None:
                problems.append(f"no state for site {site} ({sorted(states)[:6]}...)")
                continue
            want = np.array([amaxes[2], amaxes[1]], dtype=np.float32)
            from_amax = want.max() if algo == "max" else want[0]
            want_scale = fp8_scale(from_amax, margin)
            if history.tobytes() != want.tobytes() or scale.tobytes() != want_scale.tobytes():
                problems.append(f"{algo} {site}: history {history.tolist()} scale {float(scale)}"
                                f", expected {want.tolist()} and {float(want_scale)}")
    sites_seen = sorted(k[4:-6] for k in states if k.startswith("fp8.") and k.endswith(".scale"))
    tally.report(not problems, "fp8-delayed",
                 "; ".join(problems) if problems else
                 f"histories and scales of fc1.input, fc1.weight and fc2.weight after 3 steps "
                 f"equal the formula (max, margin 0; most-recent, margin 1), fc3 (n = 10) in "
                 f"BF16; {len(sites_seen)} sites: "
                 f"{', '.join(sites_seen[:4])}, ...")


def gpt_data(work):
    """The GPT-style block's next-token task: 256 arithmetic sequences mod 96
    (bench/train_bench.py trains on the same); the paths of the inputs and
    of the labels (the inputs shifted by one)."""
    rng = np.random.default_rng(0)
    start = rng.integers(0, 96, (256, 1))
    stride = rng.integers(1, 4, (256, 1))
    seq = (start + stride * np.arange(17)) % 96
    xs, ys = os.path.join(work, "gpt_x.npy"), os.path.join(work, "gpt_y.npy")
    np.save(xs, seq[:, :16].astype(np.int64))
    np.save(ys, seq[:, 1:].astype(np.int64))
    return xs, ys


def check_gpt_fp8(r, work, tally):
    """The GPT-style block at fp8 (hybrid E4M3/E5M2, delayed scaling) beside
    FP32 over GPT_SEEDS data-order seeds: the test loss's difference, paired
    by seed (each seed's runs share data order and initial weights), stays
    within GPT_FP8_BOUND of FP32's mean at the 95% interval's worse edge."""
    model = os.path.join(r.args.models, "gpt_block", "model.onnx")
    xs, ys = gpt_data(work)
    base = [r.args.mixprec, "train", model, "--data", "input_ids=" + xs, "--labels", ys]
    metrics = os.path.join(work, "gpt_fp8.json")
    seeds, steps = (QUICK_SEEDS, 16) if QUICK else (GPT_SEEDS, 256)
    argv, rc, out, err = r.train("--batch", 2, "--steps", steps, "--optimizer", "adamw",
                                 "--lr", "0.003", "--precision", "fp8", "--compare", "fp32",
                                 "--seeds", seeds, "--metrics", metrics, "--log-every", 100000,
                                 "--test-data", "input_ids=" + xs, "--test-labels", ys,
                                 base=base)
    if rc != 0:
        tally.report(False, "gpt-fp8", "\n" + describe_failure(argv, rc, out, err))
        return
    with open(metrics) as f:
        m = json.load(f)
    e = m["ensemble"]
    d = m["differences"]["test_loss"]["paired"]
    fp32 = e["fp32"]["test_loss"]["mean"]
    edge = d["ci95"][1] / fp32
    ok = len(m["seeds"]) == seeds and m["tokens_per_sample"] == 16
    if not QUICK:
        ok = ok and edge <= GPT_FP8_BOUND and fp32 < 1.0
    tally.report(ok, "gpt-fp8",
                 f"test loss over {seeds} seeds: fp8 {e['fp8']['test_loss']['mean']:.4f} (sd "
                 f"{e['fp8']['test_loss']['sd']:.3f}) vs fp32 {fp32:.4f} (sd "
                 f"{e['fp32']['test_loss']['sd']:.3f}); paired difference "
                 f"{100 * d['difference'] / fp32:.2f}% in [{100 * d['ci95'][0] / fp32:.2f}%, "
                 f"{100 * edge:.2f}%] of fp32's (bound {100 * GPT_FP8_BOUND:.0f}% at the worse "
                 f"edge)" + (" [quick: structure only]" if QUICK else ""))


def expect_error(r, tally, label, argv, code, needles):
    rc, out, err = run_cmd(argv, r.args.timeout)
    first = err.strip().splitlines()[0] if err.strip() else ""
    ok = rc == code and first.startswith("mixprec: error:") and all(n in first for n in needles)
    tally.report(ok, label, first if ok else "\n" + describe_failure(argv, rc, out, err))


def check_bad_inputs(r, work, tally):
    ex = r.args.example
    y = np.load(os.path.join(ex, "y_train.npy"))
    y_bad = y.copy()
    y_bad[17] = 10
    bad_labels = os.path.join(work, "y_out_of_range.npy")
    np.save(bad_labels, y_bad)
    expect_error(r, tally, "bad-labels",
                 [r.args.mixprec, "train", r.model, "--data",
                  "x=" + os.path.join(ex, "x_train.npy"), "--labels", bad_labels,
                  "--backend", "cpu"], 1, ["y_out_of_range.npy", "label 10", "sample 17"])
    x = np.load(os.path.join(ex, "x_train.npy"))
    wide = os.path.join(work, "x_wide.npy")
    np.save(wide, np.concatenate([x, x[:, :1]], axis=1))
    expect_error(r, tally, "bad-data-shape",
                 [r.args.mixprec, "train", r.model, "--data", "x=" + wide, "--labels",
                  os.path.join(ex, "y_train.npy")], 1, ["'x'", "65"])
    short = os.path.join(work, "y_short.npy")
    np.save(short, y[:-1])
    expect_error(r, tally, "bad-sample-count",
                 r.base[:5] + ["--labels", short], 1, ["1437", "1436"])
    expect_error(r, tally, "bad-option", r.base + ["--momentum", "1.5"], 2, ["momentum"])
    # Issue 28: a batch past what the compiler's containers hold (2^32 + 1)
    # is refused before anything is built for it, naming the data.
    expect_error(r, tally, "bad-batch-huge", r.base + ["--batch", "4294967297", "--steps", "5"],
                 1, ["4294967297", "1437 samples", "x_train.npy"])
    expect_error(r, tally, "bad-option-lr", r.base + ["--lr", "0"], 2, ["learning rate"])
    ck = os.path.join(work, "sgd.ckpt")
    argv, rc, out, err = r.train("--steps", 2, "--checkpoint", ck, "--precision", "bf16")
    if rc != 0:
        tally.report(False, "bad-checkpoint", "\n" + describe_failure(argv, rc, out, err))
        return
    expect_error(r, tally, "bad-checkpoint-optimizer",
                 r.base + ["--steps", "4", "--resume", ck, "--precision", "bf16",
                           "--optimizer", "adamw"], 1, ["sgd.ckpt", "cannot resume"])
    # Issue 28: a bf16 checkpoint resumed at fp16 is named by its precision
    # (its states differ too: the trainer's record is read first).
    expect_error(r, tally, "bad-checkpoint-precision",
                 r.base + ["--steps", "4", "--resume", ck, "--precision", "fp16"], 1,
                 ["sgd.ckpt", "written at bf16, this run is fp16"])
    expect_error(r, tally, "bad-checkpoint-batch",
                 r.base + ["--steps", "4", "--resume", ck, "--precision", "bf16",
                           "--batch", "16"], 1, ["sgd.ckpt", "--batch 32"])
    other = os.path.join(work, "other.onnx")
    import onnx
    from onnx import numpy_helper
    m = onnx.load(r.model)
    w = numpy_helper.to_array(m.graph.initializer[0]).copy()
    w[0, 0] += 1
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, m.graph.initializer[0].name))
    onnx.save(m, other)
    expect_error(r, tally, "bad-checkpoint-model",
                 [r.args.mixprec, "train", other] + r.base[3:] +
                 ["--steps", "4", "--resume", ck, "--precision", "bf16"], 1,
                 ["sgd.ckpt", "another model"])


def check_cuda_gemms(r, work, tally):
    """Every GEMM of the training steps plans on cuBLASLt (no GPU needed)."""
    ex = r.args.example
    models = [("digits", r.base, ["--batch", BATCH, "--optimizer", "sgd"] + r.test)]
    if r.args.models:
        gpt = os.path.join(r.args.models, "gpt_block", "model.onnx")
        x, y = gpt_data(work)
        models.append(("gpt_block", [r.args.mixprec, "train", gpt, "--data", "input_ids=" + x,
                                     "--labels", y], ["--batch", 2, "--optimizer", "adamw"]))
    for name, base, options in models:
        for precision in ["fp32", "bf16", "fp16", "fp8"]:
            folder = os.path.join(work, f"gemms_{name}_{precision}")
            argv, rc, out, err = r.train(*options, "--precision", precision,
                                         "--save-modules", folder, base=base)
            if rc == 0:
                modules = [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                           if f.endswith(".mpk")]
                argv = [r.args.gemm_plan_check] + modules
                rc, out, err = run_cmd(argv, r.args.timeout)
            lines = [line for line in (out + err).strip().splitlines() if line]
            tally.report(rc == 0, f"cuda-gemms {name} {precision}",
                         "; ".join(line.split(": ", 1)[-1] for line in lines) if rc == 0
                         else "\n" + describe_failure(argv, rc, out, err))


def check_saved(r, work, tally):
    """mixprec-train-run on the modules mixprec train --save-modules wrote."""
    ex = r.args.example
    run_bin = r.args.train_run
    common = ["--batch", BATCH, "--precision", "fp16", "--optimizer", "sgd", "--lr", "0.05",
              "--momentum", "0.9", "--growth-interval", 3]
    loop = ["--seed", "11", "--eval-every", 10]
    folder = os.path.join(work, "saved")
    data = ["--data", "x=" + os.path.join(ex, "x_train.npy"),
            "--labels", os.path.join(ex, "y_train.npy")] + r.test

    def run_saved(*extra, dir=folder, data=data):
        argv = [run_bin, dir] + data + ["--backend", "cpu"] + [str(e) for e in extra]
        rc, out, err = run_cmd(argv, r.args.timeout)
        return argv, rc, out, err

    paths = {k: os.path.join(work, "saved_" + k) for k in
             ["whole.csv", "whole", "run.csv", "run", "ck1", "ck2", "a.csv", "a", "b.csv", "b"]}
    steps = [
        r.train(*common, "--save-modules", folder, *r.test),
        r.train(*common, *loop, *r.test, "--steps", 20, "--csv", paths["whole.csv"],
                "--state-dir", paths["whole"]),
        run_saved(*loop, "--steps", 20, "--csv", paths["run.csv"], "--state-dir", paths["run"]),
        # The runner's checkpoint, resumed by mixprec train, and the other way round.
        run_saved(*loop, "--steps", 10, "--checkpoint", paths["ck1"]),
        r.train(*common, *loop, *r.test, "--steps", 20, "--resume", paths["ck1"],
                "--csv", paths["a.csv"], "--state-dir", paths["a"]),
        r.train(*common, *loop, *r.test, "--steps", 10, "--checkpoint", paths["ck2"]),
        run_saved(*loop, "--steps", 20, "--resume", paths["ck2"], "--csv", paths["b.csv"],
                  "--state-dir", paths["b"]),
    ]
    for argv, rc, out, err in steps:
        if rc != 0:
            tally.report(False, "saved", "\n" + describe_failure(argv, rc, out, err))
            return
    whole = read_csv(paths["whole.csv"])
    ran = read_csv(paths["run.csv"])
    states = read_states(paths["whole"])

    def same_states(folder):
        other = read_states(folder)
        return other.keys() == states.keys() and all(
            other[k].tobytes() == states[k].tobytes() for k in states)

    scales = sorted({row["loss_scale"] for row in whole})
    tested = [row["test_accuracy"] for row in whole if row["test_accuracy"]]
    ok = (whole == ran and same_states(paths["run"]) and read_csv(paths["a.csv"]) == whole[10:]
          and read_csv(paths["b.csv"]) == whole[10:] and same_states(paths["a"])
          and same_states(paths["b"]) and len(scales) > 1 and len(tested) == 2)
    tally.report(ok, "saved", f"20 steps: CSV identical {whole == ran} (test accuracy at "
                 f"steps 10, 20: {tested}), states identical {same_states(paths['run'])}; "
                 f"cross-resume identical: {read_csv(paths['a.csv']) == whole[10:]}, "
                 f"{read_csv(paths['b.csv']) == whole[10:]}; loss scales seen {scales}")

    # Every batch overflows at fp16 with --min-scale 1: exit 5, no crash.
    x = np.load(os.path.join(ex, "x_train.npy"))
    bad_x = os.path.join(work, "saved_overflow.npy")
    np.save(bad_x, x * 1e6)
    stuck_dir = os.path.join(work, "saved_stuck")
    argv, rc, out, err = r.train("--batch", BATCH, "--precision", "fp16", "--min-scale", 1,
                                 "--save-modules", stuck_dir)
    if rc == 0:
        argv, rc, out, err = run_saved("--steps", 100, "--max-skipped-in-a-row", 20,
                                       dir=stuck_dir, data=["--data", "x=" + bad_x, "--labels",
                                                            os.path.join(ex, "y_train.npy")])
    lines = err.strip().splitlines()
    tally.report(rc == 5 and lines and "loss scale cannot recover" in lines[0], "saved-stuck",
                 lines[0] if lines else describe_failure(argv, rc, out, err))

    # Bad input: one error line each, naming the file or option.
    broken = os.path.join(work, "saved_broken")
    os.makedirs(broken, exist_ok=True)
    shutil.copy(os.path.join(folder, "step.mpk"), broken)
    with open(os.path.join(broken, "trainer.txt"), "w") as f:
        f.write("mixprec-train-modules 1\nloss ce\nclasses ten\nbatch 32\n")
    wrong = os.path.join(work, "saved_wrong_shape.npy")
    np.save(wrong, np.zeros((1437, 63), np.float32))
    cases = [
        ("saved-no-folder", run_saved(dir=os.path.join(work, "nowhere")), 1, "trainer.txt"),
        ("saved-damaged", run_saved(dir=broken), 1, "'classes' line is damaged"),
        ("saved-no-labels", run_saved(data=["--data", "x=" + os.path.join(ex, "x_train.npy")]),
         2, "--labels"),
        ("saved-wrong-shape", run_saved(data=["--data", "x=" + wrong, "--labels",
                                              os.path.join(ex, "y_train.npy")]), 1,
         "saved_wrong_shape.npy"),
        ("saved-bad-option", run_saved("--steps", "0"), 2, "--steps"),
    ]
    for name, (argv, rc, out, err), want_rc, want in cases:
        lines = err.strip().splitlines()
        ok = rc == want_rc and lines and lines[0].startswith("mixprec-train-run: error:") \
            and want in lines[0]
        tally.report(ok, name, lines[0] if lines else describe_failure(argv, rc, out, err))

    # Issue 28: every damaged trainer.txt is refused, naming the file: each
    # line dropped, each line's value changed by one byte, the file cut at
    # every tenth (version 2 carries a checksum; every line is checked).
    with open(os.path.join(folder, "trainer.txt")) as f:
        good = f.read()
    variants = []
    lines = good.splitlines(keepends=True)
    for i in range(len(lines)):
        variants.append(("drop " + lines[i].split(" ")[0], "".join(lines[:i] + lines[i + 1:])))
        key, _, value = lines[i].rstrip("\n").partition(" ")
        changed = value[:-1] + ("0" if value[-1:] != "0" else "1") if value else "x"
        variants.append((f"change {key}",
                         "".join(lines[:i] + [f"{key} {changed}\n"] + lines[i + 1:])))
    for tenth in range(1, 10):
        variants.append((f"cut at {tenth}0%", good[:len(good) * tenth // 10]))
    damaged = os.path.join(work, "saved_damaged_variants")
    os.makedirs(damaged, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".mpk") or name.endswith(".weights"):
            shutil.copy(os.path.join(folder, name), damaged)
    accepted = []
    for label, text in variants:
        with open(os.path.join(damaged, "trainer.txt"), "w") as f:
            f.write(text)
        argv, rc, out, err = run_saved("--steps", 1, dir=damaged)
        first = err.strip().splitlines()[0] if err.strip() else ""
        if not (rc == 1 and "trainer.txt" in first):
            accepted.append(f"{label} (exit {rc})")
    tally.report(not accepted, "saved-damaged-variants",
                 f"{len(variants)} damaged trainer.txt variants, {len(accepted)} accepted" +
                 (": " + ", ".join(accepted[:5]) if accepted else ""))


CHECKS = ["ensemble", "planted", "compare", "report", "overflow", "accumulate", "resume", "kill", "stuck", "fp8", "bad",
          "saved", "cuda-gemms"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--example", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", help="the e2e models (gen_models.py) for the GPT-style block")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--train-run", help="mixprec-train-run (the saved check)")
    ap.add_argument("--gemm-plan-check", help="gemm_plan_check (the cuda-gemms check)")
    ap.add_argument("-k", nargs="*", default=CHECKS)
    ap.add_argument("--report-png", help="copy the report check's screenshot here")
    ap.add_argument("--quick", action="store_true",
                    help="bounded ensembles with structural checks only (the sanitizer build)")
    args = ap.parse_args(argv)
    global QUICK
    QUICK = args.quick
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    r = Runner(args)
    tally = Tally()
    r.tally = tally
    results = {}
    if "ensemble" in args.k:
        check_ensemble(r, args.work, tally, results)
    if "planted" in args.k:
        check_planted(r, args.work, tally)
    if "compare" in args.k:
        check_compare(r, args.work, tally)
        check_reinit(r, args.work, tally)
    if "report" in args.k:
        check_report(r, args.work, tally)
    if "overflow" in args.k:
        check_overflow(r, args.work, tally)
    if "accumulate" in args.k:
        check_accumulate(r, args.work, tally)
    if "resume" in args.k:
        check_resume(r, args.work, tally)
    if "kill" in args.k:
        check_kill(r, args.work, tally)
    if "stuck" in args.k:
        check_stuck(r, args.work, tally)
        check_stuck_gradient(r, args.work, tally)
    if "fp8" in args.k:
        check_fp8_delayed(r, args.work, tally)
        if args.models:
            check_gpt_fp8(r, args.work, tally)
    if "bad" in args.k:
        check_bad_inputs(r, args.work, tally)
    if "saved" in args.k and args.train_run:
        check_saved(r, args.work, tally)
    if "cuda-gemms" in args.k and args.gemm_plan_check:
        check_cuda_gemms(r, args.work, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
