"""mixprec.train: the loop of `mixprec train` (compiler::train) from Python,
arrays in memory. Checks that it is the CLI's loop (the same losses, bit
for bit, as the CLI's CSV), the callback (every step, stopping early),
evaluation, checkpoints and resume, and its errors."""

import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mixprec
from conftest import REPO

DIGITS = os.path.join(REPO, "examples", "train_digits")
MODEL = os.path.join(DIGITS, "mlp.onnx")


@pytest.fixture(scope="module")
def digits():
    load = lambda name: np.load(os.path.join(DIGITS, name))  # noqa: E731
    return load("x_train.npy"), load("y_train.npy"), load("x_test.npy"), load("y_test.npy")


COMMON = dict(batch=32, lr=0.1, momentum=0.9, seed=7, backend="cpu", verbose=False)


def test_same_losses_as_the_cli(digits, cli, tmp_path):
    x, y, _, _ = digits
    steps = []
    result = mixprec.train(MODEL, {"x": x}, y, precision="fp16", steps=30,
                           callback=steps.append, **COMMON)
    csv_path = tmp_path / "cli.csv"
    subprocess.run([cli, "train", MODEL, "--data", "x=" + os.path.join(DIGITS, "x_train.npy"),
                    "--labels", os.path.join(DIGITS, "y_train.npy"), "--precision", "fp16",
                    "--steps", "30", "--batch", "32", "--lr", "0.1", "--momentum", "0.9",
                    "--seed", "7", "--backend", "cpu", "--csv", str(csv_path)],
                   check=True, stdout=subprocess.DEVNULL)
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert result.steps == 30 and result.skipped == 0
    assert [s["step"] for s in steps] == list(range(1, 31))
    # The CSV holds each float to 9 significant digits: the same FP32 value.
    assert [np.float32(s["loss"]) for s in steps] == [np.float32(r["loss"]) for r in rows]
    assert [s["loss_scale"] for s in steps] == [float(r["loss_scale"]) for r in rows]
    assert np.float32(result.last_loss) == np.float32(rows[-1]["loss"])


def test_evaluates_and_learns(digits):
    x, y, xt, yt = digits
    result = mixprec.train(MODEL, {"x": x}, y, test_data={"x": xt}, test_labels=yt,
                           precision="bf16", epochs=2, **COMMON)
    assert result.steps == 88
    assert 0.85 <= result.test_accuracy <= 1.0
    assert np.isfinite(result.test_loss)


def test_callback_stops_the_run_and_the_checkpoint_resumes(digits, tmp_path):
    x, y, _, _ = digits
    ck = str(tmp_path / "run.ckpt")
    whole = []
    mixprec.train(MODEL, {"x": x}, y, precision="bf16", steps=12,
                  callback=lambda s: whole.append(s["loss"]), **COMMON)
    first = mixprec.train(MODEL, {"x": x}, y, precision="bf16", steps=12, checkpoint=ck,
                          callback=lambda s: s["step"] < 5, **COMMON)
    assert first.steps == 5
    rest = []
    second = mixprec.train(MODEL, {"x": x}, y, precision="bf16", steps=12, resume=ck,
                           callback=lambda s: rest.append(s["loss"]), **COMMON)
    assert second.steps == 7
    assert rest == whole[5:]  # bit for bit


def test_a_scale_that_cannot_recover_raises_training_error(digits):
    x, y, _, _ = digits
    with pytest.raises(mixprec.TrainingError) as info:
        mixprec.train(MODEL, {"x": x * 1e6}, y, precision="fp16", min_scale=1,
                      max_skipped_in_a_row=5, **COMMON)
    assert "cannot recover" in str(info.value)
    assert any("first non-finite value" in n and "graph input 'x'" in n
               for n in info.value.notes)
    assert info.value.result.steps == 5 and info.value.result.skipped == 5


def test_errors(digits):
    x, y, _, _ = digits
    with pytest.raises(mixprec.InvalidArgumentError, match="momentum"):
        mixprec.train(MODEL, {"x": x}, y, momentum=1.5, **{k: v for k, v in COMMON.items()
                                                            if k != "momentum"})
    with pytest.raises(mixprec.InvalidArgumentError, match="no such option learning-rate"):
        mixprec.train(MODEL, {"x": x}, y, learning_rate=0.1, steps=1, verbose=False)
    bad = y.copy()
    bad[3] = 12
    with pytest.raises(mixprec.CompileError, match="label 12 of sample 3"):
        mixprec.train(MODEL, {"x": x}, bad, steps=1, verbose=False)
    with pytest.raises(mixprec.CompileError, match="'x'"):
        mixprec.train(MODEL, {"x": x[:, :60]}, y, steps=1, verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="graph input name"):
        mixprec.train(MODEL, x, y, steps=1, verbose=False)
    with pytest.raises(ZeroDivisionError):
        mixprec.train(MODEL, {"x": x}, y, steps=3, verbose=False, callback=lambda s: 1 / 0)


def test_seed_ensemble_with_gradients_metrics_and_report(digits, tmp_path):
    x, y, xt, yt = digits
    seen = []
    metrics, report = tmp_path / "m.json", tmp_path / "run.html"
    result = mixprec.train(MODEL, {"x": x}, y, test_data={"x": xt}, test_labels=yt,
                           precision="bf16", compare="fp32", seeds=3, compare_every=20,
                           steps=40, metrics=metrics, report=report,
                           callback=lambda s: seen.append((s["seed"], s["step"])), **COMMON)
    # Three runs from seeds 7, 8, 9, each with its FP32 run beside.
    assert seen == [(seed, step) for seed in (7, 8, 9) for step in range(1, 41)]
    m = result.metrics
    assert m["seeds"] == [7, 8, 9] and len(m["runs"]) == 3
    d = m["metric_difference"]
    assert d["metric"] == "test_accuracy" and d["n"] == 3 and result.verdict == d["verdict"]
    assert d["ci95"][0] <= d["difference"] <= d["ci95"][1]
    assert {p["name"] for c in m["gradient_comparison"] for p in c["params"]} == {
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"}
    assert [c["step"] for c in m["gradient_comparison"]] == [20, 40] * 3
    assert m["applied_steps"]["total"] == 120 and m["mfu"]["flops_per_step"] > 0
    assert m["memory"]["master_weights"] > 0 and m["memory"]["fp32_total"] > 0
    with open(metrics) as f:
        assert json.load(f) == m
    assert 'id="loss-curves"' in report.read_text()


def test_seed_options_are_checked(digits, tmp_path):
    x, y, _, _ = digits
    with pytest.raises(mixprec.InvalidArgumentError, match="--seeds"):
        mixprec.train(MODEL, {"x": x}, y, seeds=0, steps=1, verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="--compare-every needs --compare"):
        mixprec.train(MODEL, {"x": x}, y, compare_every=5, steps=1, verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="--seeds does not combine"):
        mixprec.train(MODEL, {"x": x}, y, seeds=2, steps=1, checkpoint=str(tmp_path / "c"),
                      verbose=False)


def test_issue28_integer_options_and_types_are_checked_before_anything_runs(digits):
    """Issue 28: a batch past the compiler's containers (2^32 + 1) took the
    process down; wrong types raised std::bad_cast (RuntimeError)."""
    x, y, _, _ = digits
    with pytest.raises(mixprec.CompileError, match="4294967297 samples.*1437 samples"):
        mixprec.train(MODEL, {"x": x}, y, batch=4294967297, steps=5, verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="lr takes a number, got str 'fast'"):
        mixprec.train(MODEL, {"x": x}, y, lr="fast", verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="batch takes an integer"):
        mixprec.train(MODEL, {"x": x}, y, batch=2 ** 64, verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="shuffle takes True or False"):
        mixprec.train(MODEL, {"x": x}, y, shuffle="yes", verbose=False)
    with pytest.raises(mixprec.InvalidArgumentError, match="frozen takes a list of globs"):
        mixprec.train(MODEL, {"x": x}, y, frozen=[3], verbose=False)


def test_issue28_data_for_an_unknown_input_is_named(digits):
    x, y, _, _ = digits
    with pytest.raises(mixprec.CompileError, match="data is given for 'z', which is not a graph "
                                                   "input of the model \\(its inputs: 'x'\\)"):
        mixprec.train(MODEL, {"z": x}, y, steps=1, verbose=False)


def test_issue28_resuming_at_another_precision_names_the_precisions(digits, tmp_path):
    x, y, _, _ = digits
    ck = str(tmp_path / "bf16.ckpt")
    mixprec.train(MODEL, {"x": x}, y, precision="bf16", steps=2, checkpoint=ck, **COMMON)
    with pytest.raises(mixprec.CompileError, match="written at bf16, this run is fp16"):
        mixprec.train(MODEL, {"x": x}, y, precision="fp16", steps=4, resume=ck, **COMMON)


# Data parallelism (issue 26): mixprec.train in each rank of an mpirun job.
DP_SCRIPT = r'''
import json
import sys
import numpy as np
import mixprec
digits, out, world = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
x = np.load(digits + "/x_train.npy")
y = np.load(digits + "/y_train.npy")
r = mixprec.train(digits + "/mlp.onnx", {"x": x}, y, precision="bf16", batch=16, steps=10,
                  lr=0.1, backend="cpu", state_dir=out, world=world, verbose=False, **extra)
print("steps", r.steps, "last_loss", r.last_loss)
'''


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return env


@pytest.mark.skipif(not shutil.which("mpirun"), reason="mpirun not found (openmpi-bin)")
@pytest.mark.skipif("LD_PRELOAD" in os.environ,
                    reason="the sanitizer build preloads ASan into python; mpirun's ranks are "
                           "checked by e2e_data_parallel in C++")
def test_data_parallel_under_mpirun_is_the_clis(cli, tmp_path):
    """world=2 under mpirun: each rank's train() trains its slice; the
    states equal `mixprec train --ranks 2`'s bit for bit."""
    script = tmp_path / "dp.py"
    script.write_text(DP_SCRIPT)
    py = tmp_path / "py"
    p = subprocess.run(["mpirun", "-np", "2", sys.executable, str(script), DIGITS, str(py), "2"],
                       capture_output=True, text=True, env=mpi_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.count("steps 10") == 2
    c = tmp_path / "cli"
    subprocess.run([cli, "train", MODEL, "--data", "x=" + os.path.join(DIGITS, "x_train.npy"),
                    "--labels", os.path.join(DIGITS, "y_train.npy"), "--precision", "bf16",
                    "--batch", "16", "--steps", "10", "--lr", "0.1", "--backend", "cpu",
                    "--state-dir", str(c), "--ranks", "2"],
                   check=True, stdout=subprocess.DEVNULL, env=mpi_env(), timeout=300)
    names = sorted(os.listdir(c))
    assert names == sorted(os.listdir(py)) and names
    for name in names:
        assert np.load(py / name).tobytes() == np.load(c / name).tobytes(), name
    # world=N must be the launcher's.
    with pytest.raises(mixprec.InvalidArgumentError, match="world=2"):
        mixprec.train(MODEL, {"x": np.load(os.path.join(DIGITS, "x_train.npy"))},
                      np.load(os.path.join(DIGITS, "y_train.npy")), world=2, steps=1,
                      backend="cpu", verbose=False)


@pytest.mark.skipif(not shutil.which("mpirun"), reason="mpirun not found (openmpi-bin)")
@pytest.mark.skipif("LD_PRELOAD" in os.environ,
                    reason="the sanitizer build preloads ASan into python; mpirun's ranks are "
                           "checked by e2e_data_parallel in C++")
def test_sharded_optimizer_under_mpirun_is_the_clis(cli, tmp_path):
    """shard_optimizer=True under mpirun (momentum: each rank keeps half of
    the momentum buffers) equals `mixprec train --ranks 2
    --shard-optimizer` bit for bit, and the unsharded run too."""
    script = tmp_path / "dp.py"
    script.write_text(DP_SCRIPT)
    py = tmp_path / "py"
    p = subprocess.run(["mpirun", "-np", "2", sys.executable, str(script), DIGITS, str(py), "2",
                        '{"shard_optimizer": true, "momentum": 0.9}'],
                       capture_output=True, text=True, env=mpi_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    for tag, extra in [("cli", ["--shard-optimizer"]), ("plain", [])]:
        c = tmp_path / tag
        subprocess.run([cli, "train", MODEL, "--data", "x=" + os.path.join(DIGITS, "x_train.npy"),
                        "--labels", os.path.join(DIGITS, "y_train.npy"), "--precision", "bf16",
                        "--batch", "16", "--steps", "10", "--lr", "0.1", "--momentum", "0.9",
                        "--backend", "cpu", "--state-dir", str(c), "--ranks", "2"] + extra,
                       check=True, stdout=subprocess.DEVNULL, env=mpi_env(), timeout=300)
        names = sorted(os.listdir(c))
        assert names == sorted(os.listdir(py)) and "fc1.weight.momentum_buffer.npy" in names
        for name in names:
            assert np.load(py / name).tobytes() == np.load(c / name).tobytes(), (tag, name)
