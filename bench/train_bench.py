#!/usr/bin/env python3
"""Training throughput (issue 11): `mixprec train` against PyTorch, same models.

    train_bench.py [--mixprec build/bin/mixprec] [--device cpu|cuda]
                   [--torch-python PY] [--models digits,gpt_block]
                   [--precisions fp32,bf16,fp16,fp8] [--digits-steps 300]
                   [--gpt-steps 200] [--repeat 3] [--warmup 10] [--threads N]
                   [--coretype NAME] [--probe GPU_DRIVER_PROBE] [--work DIR]
                   [--json FILE] [--deadline UNIX_TIME]
    train_bench.py --prepare DIR [--arch sm_90] [--mixprec BIN] [--models ...]
                   [--precisions ...]
    train_bench.py --from DIR --runner BIN [--device cpu|cuda] [...]

Models:
  digits     examples/train_digits/mlp.onnx (64-128-128-10, Gemm + Relu) on
             x_train.npy / y_train.npy (1,437 samples), batch 32, SGD lr 0.1
             momentum 0.9, cross-entropy.
  gpt_block  tests/e2e/gen_models.py's gpt_block (hidden 64, 4 heads, MLP 256,
             vocabulary 96, sequence 16, tied LM head; its batch dimension is
             fixed at 2), generated into --work, on a next-token task: 256
             arithmetic sequences mod 96 (tests/e2e/run_train.py's
             gpt_data), labels shifted by one, batch 2, AdamW lr 0.003,
             cross-entropy over every position.

mixprec: `mixprec train MODEL ... --precision P --steps N --backend B
--log-every W --csv FILE` (W = --warmup) for each precision, --repeat times.
Two figures, each the best of the runs: "whole loop", the last line's
("trained N steps in S s (R samples/s)": the wall time of the training
loop, step 1 and the CSV write included), and "after warm-up", from the log
lines of the windows after the first W steps (each line's samples/s is its
window's), measured as PyTorch's is; the ratio column uses the latter. The
compile time is the first line's "compiled in X s" (building the step and
its precision and kernel pipelines, printed to 10 ms), the smallest of the
runs. The loss columns are the mean loss of the last 20 steps (PyTorch's
run has its W warm-up steps more).

PyTorch (run by --torch-python in a child process; default: $MIXPREC_TORCH_PYTHON,
else this python; skipped, with a message, when `import torch` fails there,
the mixprec figures still taken): the same model in
torch with the ONNX file's initializers copied (the MLP as nn.Sequential of
nn.Linear + ReLU; the GPT block op for op as the ONNX graph: LayerNorm eps
1e-5, fused QKV MatMul+Add, slices, heads by reshape/permute, Q K^T times
the trained scalar `attn_scale`, the causal Where with -1e4, softmax, GELU
tanh, residuals, final LayerNorm and the tied head; the forward pass is
checked against the ONNX model's FP32 output before timing). Variants:
eager FP32 (TF32 off on CUDA), autocast BF16, autocast FP16 with
torch.amp.GradScaler (what torch allows on the device is recorded: a
variant torch refuses is a row with the error). Same optimizer, batch,
steps and per-epoch shuffled batches (the data sits on the device, batches
gathered there); each of --repeat runs builds a fresh model, runs --warmup
steps, then times the steps on the host clock with a device synchronize at
both ends; best of the runs. torch.set_num_threads(--threads), and
OPENBLAS_NUM_THREADS=--threads for mixprec (its CPU backend runs kernels on
one thread and its GEMMs through OpenBLAS): default OPENBLAS_NUM_THREADS or
the core count.

--device cuda: mixprec --backend cuda and torch on "cuda". With --probe
(gpu_driver_probe), a machine without a GPU or driver exits 77 (ctest:
skipped) with the probe's reason.

Machines without the compiler (the lent GPU machine has the runtime-only
build, no LLVM): `--prepare DIR [--arch sm_90]` here compiles every model
at every precision with `mixprec train ... --save-modules` (for --arch) and
puts the data, the initializers and the reference outputs beside them
(DIR/manifest.json; a few MB); there, `--from DIR --runner
build-rt/bin/mixprec-train-run` runs the same table with the runtime alone
(compile column: the time --prepare took) and PyTorch (no onnx needed).
--deadline UNIX_TIME skips the runs that would start after it.

Prints a markdown table and, with --json, writes every figure (every run).
Exits 1 if a mixprec run failed (the others still run), 77 on a skip.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PRECISIONS = ["fp32", "bf16", "fp16", "fp8"]
TORCH_VARIANTS = ["eager_fp32", "autocast_bf16", "autocast_fp16"]
# The PyTorch row each mixprec precision is set against (PyTorch has no FP8
# autocast: FP8 is set against autocast BF16, the FP8 baseline).
TORCH_FOR = {"fp32": "eager_fp32", "bf16": "autocast_bf16", "fp16": "autocast_fp16",
             "fp8": "autocast_bf16"}
LAST_LOSSES = 20   # the loss column: mean over the last steps


# --------------------------------------------------------------------------
# The models and their data (system python: numpy, onnx).
# --------------------------------------------------------------------------

def prepare_models(args, work):
    """Dict name -> model description (paths, training options, batch)."""
    import numpy as np
    models = {}
    if "digits" in args.models:
        ex = os.path.join(ROOT, "examples", "train_digits")
        models["digits"] = {
            "onnx": os.path.join(ex, "mlp.onnx"),
            "data": {"x": os.path.join(ex, "x_train.npy")},
            "labels": os.path.join(ex, "y_train.npy"),
            "batch": 32, "steps": args.digits_steps,
            "optimizer": "sgd", "lr": 0.1, "momentum": 0.9,
            "what": "digits MLP 64-128-128-10, batch 32, SGD lr 0.1 momentum 0.9",
        }
    if "gpt_block" in args.models:
        gen_dir = os.path.join(work, "models")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", "gen_models.py"),
                            gen_dir, "--only", "gpt_block"], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"train_bench: gen_models.py failed:\n{p.stdout}{p.stderr}")
        # run_train.py's next-token task (its check_gpt_fp8 trains on it too).
        sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
        from run_train import gpt_data
        xs, ys = gpt_data(work)
        d = os.path.join(gen_dir, "gpt_block")
        models["gpt_block"] = {
            "onnx": os.path.join(d, "model.onnx"),
            "data": {"input_ids": xs}, "labels": ys,
            "batch": 2, "steps": args.gpt_steps,
            "optimizer": "adamw", "lr": 0.003,
            "check_input": os.path.join(d, "inputs", "input_ids.npy"),
            "check_ref": os.path.join(d, "ref", "logits.npy"),   # onnxruntime, FP32
            "what": "GPT-style block (hidden 64, 4 heads, MLP 256, vocab 96, seq 16), "
                    "batch 2, AdamW lr 0.003",
        }
    # The initializers, for the PyTorch copies; the MLP's FP32 forward check.
    import onnx
    from onnx import numpy_helper
    for name, m in models.items():
        graph = onnx.load(m["onnx"]).graph
        weights = {i.name: numpy_helper.to_array(i) for i in graph.initializer
                   if i.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL)}
        m["weights"] = os.path.join(work, f"{name}_weights.npz")
        np.savez(m["weights"], **weights)
        if name == "digits":
            x = np.load(m["data"]["x"])[:32].astype(np.float64)
            w = {k: v.astype(np.float64) for k, v in weights.items()}
            h = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
            h = np.maximum(h @ w["fc2.weight"].T + w["fc2.bias"], 0)
            ref = h @ w["fc3.weight"].T + w["fc3.bias"]
            m["check_input"] = os.path.join(work, "digits_check_x.npy")
            m["check_ref"] = os.path.join(work, "digits_check_ref.npy")
            np.save(m["check_input"], x.astype(np.float32))
            np.save(m["check_ref"], ref.astype(np.float32))
    return models


# --------------------------------------------------------------------------
# mixprec
# --------------------------------------------------------------------------

FIRST_RE = re.compile(r"backend (\S+),.*(?:compiled in ([0-9.]+) s|modules from )")
LAST_RE = re.compile(r"trained (\d+) steps in ([0-9.]+) s \((\d+) samples/s\): (\d+) applied")
WINDOW_RE = re.compile(r"^step (\d+)/\d+ .* (\d+) samples/s$", re.M)


def mixprec_env(args):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    if args.coretype:
        env["OPENBLAS_CORETYPE"] = args.coretype
    return env


def mean_last_loss(csv_path):
    import csv
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["loss"]) for r in rows[-LAST_LOSSES:]]
    return sum(losses) / len(losses) if losses else None


def train_options(m, precision):
    """The step's options (what --save-modules fixes)."""
    argv = ["--batch", str(m["batch"]), "--optimizer", m["optimizer"], "--lr", str(m["lr"]),
            "--precision", precision]
    if "momentum" in m:
        argv += ["--momentum", str(m["momentum"])]
    return argv


def prepare_saved(args, folder):
    """--prepare: models, data and references in `folder`, and every model at
    every precision compiled with --save-modules; writes manifest.json."""
    folder = os.path.abspath(folder)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    models = prepare_models(args, folder)
    precisions = [p for p in args.precisions.split(",") if p]
    ex = os.path.join(ROOT, "examples", "train_digits")
    for name, m in models.items():
        m["name"] = name
        # The digits arrays travel with the modules.
        def carried(path):
            if not path.startswith(ex):
                return path
            dest = os.path.join(folder, "digits_" + os.path.basename(path))
            shutil.copy(path, dest)
            return dest
        m["data"] = {k: carried(v) for k, v in m["data"].items()}
        m["labels"] = carried(m["labels"])
        m["saved"] = {}
        for prec in precisions:
            out = os.path.join(folder, "modules", f"{name}_{prec}")
            argv = [args.mixprec, "train", m["onnx"]]
            for k, v in m["data"].items():
                argv += ["--data", f"{k}={v}"]
            argv += ["--labels", m["labels"], *train_options(m, prec), "--save-modules", out]
            if args.arch:
                argv += ["--arch", args.arch]
            t0 = time.perf_counter()
            p = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout)
            if p.returncode != 0:
                raise SystemExit(f"train_bench: --prepare: {' '.join(argv)} failed "
                                 f"(exit {p.returncode}):\n{p.stderr[-2000:]}")
            m["saved"][prec] = {"folder": out, "compile_s": round(time.perf_counter() - t0, 2)}
            print(f"{name} {prec}: {out} ({m['saved'][prec]['compile_s']} s)", file=sys.stderr)
    manifest = {"arch": args.arch or "", "date": time.strftime("%Y-%m-%d"), "models": models}
    text = json.dumps(manifest, indent=1).replace(folder, "$DIR")
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        f.write(text + "\n")
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(folder) for n in ns)
    print(f"wrote {folder} ({size / 1048576:.1f} MiB)")
    return 0


def load_saved(folder):
    """The models of a --prepare folder, paths resolved in `folder`."""
    folder = os.path.abspath(folder)
    path = os.path.join(folder, "manifest.json")
    try:
        text = open(path).read()
    except OSError as e:
        raise SystemExit(f"train_bench: --from: {path}: {e.strerror} (run --prepare first)")
    return json.loads(text.replace("$DIR", folder))["models"]


def run_mixprec(args, m, precision, backend, work, index):
    csv_path = os.path.join(work, f"{m['name']}_{precision}_{index}.csv")
    saved = m.get("saved", {}).get(precision)
    if saved:
        # The modules --prepare compiled, on the runtime alone.
        argv = [args.runner, saved["folder"]]
    else:
        argv = [args.mixprec, "train", m["onnx"]]
    for k, v in m["data"].items():
        argv += ["--data", f"{k}={v}"]
    argv += ["--labels", m["labels"], "--steps", str(m["steps"])]
    if not saved:
        argv += train_options(m, precision)
    # A log line every --warmup steps: the windows after the first give the
    # rate after warm-up, as PyTorch's is measured.
    argv += ["--backend", backend, "--log-every", str(args.warmup), "--csv", csv_path]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=mixprec_env(args),
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s", "argv": argv}
    wall = time.perf_counter() - t0
    out = p.stdout + p.stderr
    first, last = FIRST_RE.search(out), LAST_RE.search(out)
    if p.returncode != 0 or not first or not last:
        lines = [l for l in (p.stderr.strip() or p.stdout.strip()).splitlines() if l.strip()]
        return {"error": f"exit {p.returncode}: " + (lines[0] if lines else "no output"),
                "argv": argv, "output": out[-4000:]}
    steady = None
    windows = [(int(a), int(b)) for a, b in WINDOW_RE.findall(out)]
    later = [(step, rate) for step, rate in windows if step > args.warmup]
    if later and all(rate > 0 for _, rate in later):
        done = later[-1][0] - args.warmup
        seconds = 0.0
        prev = args.warmup
        for step, rate in later:
            seconds += (step - prev) * m["batch"] / rate
            prev = step
        steady = round(done * m["batch"] / seconds)
    compile_s = float(first.group(2)) if first.group(2) else saved["compile_s"]
    return {"backend": first.group(1), "compile_s": compile_s,
            "steady_samples_per_s": steady,
            "steps": int(last.group(1)), "loop_s": float(last.group(2)),
            "samples_per_s": int(last.group(3)), "applied": int(last.group(4)),
            "process_s": round(wall, 3), "mean_last_loss": mean_last_loss(csv_path)}


# --------------------------------------------------------------------------
# PyTorch (the child process, run by --torch-python)
# --------------------------------------------------------------------------

def torch_worker(spec_path, out_path):
    import numpy as np
    import torch
    import torch.nn.functional as F

    spec = json.load(open(spec_path))
    device = spec["device"]
    report = {"torch": torch.__version__, "threads": spec["threads"], "models": {}}
    torch.set_num_threads(spec["threads"])
    if device == "cuda":
        if not torch.cuda.is_available():
            report["error"] = "torch.cuda.is_available() is False"
            json.dump(report, open(out_path, "w"), indent=1)
            return 0
        report["device_name"] = torch.cuda.get_device_name()
        # Eager FP32 is strict FP32, as mixprec's fp32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    else:
        report["cpu_capability"] = torch.backends.cpu.get_cpu_capability()

    class Gpt(torch.nn.Module):
        """tests/e2e/gen_models.py build_gpt_block (vocab 96), op for op."""

        def __init__(self, w, heads=4):
            super().__init__()
            self.heads = heads
            # The float initializers mixprec trains (attn_scale included);
            # masked_bias and the mask are constants.
            self.names = [k for k in w if w[k].dtype == np.float32 and k != "masked_bias"]
            for k in self.names:
                self.register_parameter(k.replace(".", "__"),
                                        torch.nn.Parameter(torch.from_numpy(w[k].copy())))
            self.register_buffer("mask", torch.from_numpy(w["causal_mask"].copy()))
            self.register_buffer("masked", torch.from_numpy(w["masked_bias"].copy()))

        def p(self, k):
            return getattr(self, k.replace(".", "__"))

        def lin(self, x, prefix):
            return torch.matmul(x, self.p(prefix + ".weight")) + self.p(prefix + ".bias")

        def ln(self, x, prefix):
            return F.layer_norm(x, (x.shape[-1],), self.p(prefix + ".weight"),
                                self.p(prefix + ".bias"), eps=1e-5)

        def forward(self, ids):
            b, s = ids.shape
            wte = self.p("wte")
            d = wte.shape[1]
            hd = d // self.heads
            x = wte[ids] + self.p("wpe")[torch.arange(s, device=ids.device)].unsqueeze(0)
            qkv = self.lin(self.ln(x, "ln_1"), "attn.c_attn")
            q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]

            def split(t):
                return t.reshape(b, s, self.heads, hd).permute(0, 2, 1, 3)

            scores = torch.matmul(split(q), split(k).permute(0, 1, 3, 2)) * self.p("attn_scale")
            scores = torch.where(self.mask, scores, self.masked.to(scores.dtype))
            probs = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, split(v)).permute(0, 2, 1, 3).reshape(b, s, d)
            x1 = x + self.lin(ctx, "attn.c_proj")
            h = F.gelu(self.lin(self.ln(x1, "ln_2"), "mlp.c_fc"), approximate="tanh")
            hidden = x1 + self.lin(h, "mlp.c_proj")
            return torch.matmul(self.ln(hidden, "ln_f"), wte.t())

    def build(name, w):
        if name == "digits":
            model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                        torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                        torch.nn.Linear(128, 10))
            with torch.no_grad():
                for layer, prefix in zip((model[0], model[2], model[4]), ("fc1", "fc2", "fc3")):
                    layer.weight.copy_(torch.from_numpy(w[prefix + ".weight"]))
                    layer.bias.copy_(torch.from_numpy(w[prefix + ".bias"]))
        else:
            model = Gpt(w)
        return model.to(device)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    for name, m in spec["models"].items():
        w = dict(np.load(m["weights"]))
        res = {"variants": {}}
        report["models"][name] = res
        # The copy is the ONNX model: FP32 forward against the reference.
        with torch.no_grad():
            out = build(name, w)(torch.from_numpy(np.load(m["check_input"])).to(device))
        ref = np.load(m["check_ref"]).astype(np.float64)
        got = out.double().cpu().numpy()
        res["fp32_forward_max_rel_err"] = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))

        x = torch.from_numpy(np.load(list(m["data"].values())[0])).to(device)
        y = torch.from_numpy(np.load(m["labels"]).astype(np.int64)).to(device)
        rows, batch, steps = x.shape[0], m["batch"], m["steps"]
        per_epoch = rows // batch

        for variant in spec["variants"]:
            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(variant.split("_")[1])
            vres = {"runs": []}
            res["variants"][variant] = vres
            try:
                for rep in range(spec["repeat"]):
                    torch.manual_seed(rep)
                    model = build(name, w)
                    if m["optimizer"] == "sgd":
                        opt = torch.optim.SGD(model.parameters(), lr=m["lr"],
                                              momentum=m["momentum"])
                    else:
                        opt = torch.optim.AdamW(model.parameters(), lr=m["lr"],
                                                weight_decay=0.0)
                    scaler = torch.amp.GradScaler(device) if dtype == torch.float16 else None
                    gen = torch.Generator().manual_seed(1000 + rep)
                    losses = torch.zeros(spec["warmup"] + steps, device=device)
                    state = {"order": None, "epoch": -1}

                    def step(i):
                        epoch, j = divmod(i, per_epoch)
                        if epoch != state["epoch"]:
                            state["order"] = torch.randperm(rows, generator=gen).to(device)
                            state["epoch"] = epoch
                        idx = state["order"][j * batch:(j + 1) * batch]
                        xb, yb = x[idx], y[idx]
                        opt.zero_grad(set_to_none=True)
                        if dtype is None:
                            logits = model(xb)
                        else:
                            with torch.autocast(device, dtype=dtype):
                                logits = model(xb)
                        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                               yb.reshape(-1))
                        if scaler:
                            scaler.scale(loss).backward()
                            scaler.step(opt)
                            scaler.update()
                        else:
                            loss.backward()
                            opt.step()
                        losses[i] = loss.detach()

                    for i in range(spec["warmup"]):
                        step(i)
                    sync()
                    t0 = time.perf_counter()
                    for i in range(spec["warmup"], spec["warmup"] + steps):
                        step(i)
                    sync()
                    dt = time.perf_counter() - t0
                    run = {"loop_s": dt, "samples_per_s": steps * batch / dt,
                           "mean_last_loss": float(losses[-LAST_LOSSES:].mean().item())}
                    if scaler:
                        run["final_loss_scale"] = float(scaler.get_scale())
                    vres["runs"].append(run)
                vres["samples_per_s"] = max(r["samples_per_s"] for r in vres["runs"])
            except Exception as e:   # what torch does not allow on the device
                vres["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    json.dump(report, open(out_path, "w"), indent=1)
    return 0


def run_torch(args, models, work):
    """The PyTorch figures, or {"skipped": why}."""
    py = args.torch_python or os.environ.get("MIXPREC_TORCH_PYTHON") or sys.executable
    p = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["no output"])[-1]
        msg = f"PyTorch skipped: `import torch` failed in {py} ({why}); --torch-python PY"
        print(msg, file=sys.stderr)
        return {"skipped": msg}
    spec = {"device": args.device, "threads": args.threads, "repeat": args.repeat,
            "warmup": args.warmup, "variants": TORCH_VARIANTS,
            "models": {k: {kk: vv for kk, vv in m.items() if kk != "onnx"}
                       for k, m in models.items()}}
    spec_path, out_path = os.path.join(work, "torch_spec.json"), os.path.join(work, "torch.json")
    json.dump(spec, open(spec_path, "w"), indent=1)
    if os.path.exists(out_path):
        os.remove(out_path)
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(args.threads)
    p = subprocess.run([py, os.path.abspath(__file__), "--torch-worker", spec_path, out_path],
                       capture_output=True, text=True, env=env, timeout=args.timeout * 10)
    if p.returncode != 0 or not os.path.exists(out_path):
        msg = f"PyTorch failed (exit {p.returncode}): {(p.stderr.strip() or p.stdout.strip())[-2000:]}"
        print(msg, file=sys.stderr)
        return {"error": msg}
    report = json.load(open(out_path))
    report["python"] = py
    return report


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

def fmt(v, spec="{:.0f}"):
    return "—" if v is None else spec.format(v)


def table(results):
    torch_rep = results["torch"]
    lines = ["| model | precision | mixprec compile | mixprec samples/s (whole loop) | "
             "mixprec samples/s (after warm-up) | mixprec loss | PyTorch row | "
             "PyTorch samples/s (after warm-up) | PyTorch loss | mixprec / PyTorch |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for name, mres in results["mixprec"].items():
        tmodel = (torch_rep.get("models") or {}).get(name, {})
        for prec, r in mres.items():
            variant = TORCH_FOR[prec]
            tv = tmodel.get("variants", {}).get(variant, {})
            label = {"eager_fp32": "eager FP32", "autocast_bf16": "autocast BF16",
                     "autocast_fp16": "autocast FP16 + GradScaler"}[variant]
            if prec == "fp8":
                label += " (no FP8 in torch)"
            if "skipped" in torch_rep:
                tcell, tloss, ratio, label = "skipped", "—", "—", "—"
            elif "error" in torch_rep or "error" in tv:
                tcell, tloss, ratio = "failed: " + (tv.get("error") or torch_rep.get("error")), "—", "—"
            else:
                best = max(tv["runs"], key=lambda x: x["samples_per_s"])
                tcell, tloss = fmt(tv["samples_per_s"]), fmt(best["mean_last_loss"], "{:.3f}")
                ratio = (fmt(r["steady_samples_per_s"] / tv["samples_per_s"], "{:.2f}x")
                         if r.get("steady_samples_per_s") else "—")
            if "error" in r:
                lines.append(f"| {name} | {prec} | — | failed: {r['error']} | — | — | "
                             f"{label} | {tcell} | {tloss} | — |")
                continue
            lines.append(f"| {name} | {prec} | {r['compile_s']:.2f} s | {r['samples_per_s']} | "
                         f"{fmt(r['steady_samples_per_s'])} | "
                         f"{fmt(r['mean_last_loss'], '{:.3f}')} | {label} | {tcell} | {tloss} | "
                         f"{ratio} |")
    return "\n".join(lines)


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--torch-worker"]:
        return torch_worker(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", default=os.path.join(ROOT, "build", "bin", "mixprec"))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--torch-python",
                    help="python with torch (default: $MIXPREC_TORCH_PYTHON, else this one)")
    ap.add_argument("--models", default="digits,gpt_block")
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--digits-steps", type=int, default=300)
    ap.add_argument("--gpt-steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10, help="PyTorch warm-up steps per run")
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count()))
    ap.add_argument("--coretype", help="OPENBLAS_CORETYPE for mixprec (see bench/README.md)")
    ap.add_argument("--probe", help="gpu_driver_probe: exit 77 without a GPU (--device cuda)")
    ap.add_argument("--work", help="working folder (default: a temporary one, removed)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--timeout", type=int, default=600, help="per mixprec run, seconds")
    ap.add_argument("--prepare", metavar="DIR",
                    help="compile the modules and write the data into DIR, then stop")
    ap.add_argument("--arch", help="--prepare: the CUDA architecture of the modules (sm_90)")
    ap.add_argument("--from", dest="from_dir", metavar="DIR",
                    help="run the modules --prepare wrote, with --runner")
    ap.add_argument("--runner", default=os.path.join(ROOT, "build", "bin", "mixprec-train-run"),
                    help="mixprec-train-run, for --from")
    ap.add_argument("--deadline", type=float,
                    help="UNIX time: runs that would start after it are left out")
    args = ap.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    precisions = [p for p in args.precisions.split(",") if p]
    for p in precisions:
        if p not in PRECISIONS:
            ap.error(f"--precisions: {p} is not one of {', '.join(PRECISIONS)}")
    for m in args.models:
        if m not in ("digits", "gpt_block"):
            ap.error(f"--models: {m} is not digits or gpt_block")

    if args.device == "cuda" and args.probe:
        p = subprocess.run([args.probe], capture_output=True, text=True)
        summary = (p.stdout + p.stderr).strip()
        if p.returncode == SKIP:
            summary = summary[len("SKIP: "):] if summary.startswith("SKIP: ") else summary
            print(f"SKIP: no GPU for the training benchmark: {summary}")
            return SKIP
        if p.returncode != 0:
            print(f"FAIL  gpu_driver_probe failed ({p.returncode}): {summary}")
            return 1
        print(f"device: {summary}")
    if args.prepare:
        if not os.access(args.mixprec, os.X_OK):
            ap.error(f"--mixprec {args.mixprec}: not an executable")
        return prepare_saved(args, args.prepare)
    if args.from_dir:
        if not os.access(args.runner, os.X_OK):
            ap.error(f"--runner {args.runner}: not an executable")
    elif not os.access(args.mixprec, os.X_OK):
        ap.error(f"--mixprec {args.mixprec}: not an executable")

    work = args.work or tempfile.mkdtemp(prefix="train_bench_")
    os.makedirs(work, exist_ok=True)
    started = time.perf_counter()
    try:
        if args.from_dir:
            models = {k: m for k, m in load_saved(args.from_dir).items() if k in args.models}
            for m in models.values():
                m["steps"] = args.digits_steps if m["name"] == "digits" else args.gpt_steps
        else:
            models = prepare_models(args, work)
        for k, m in models.items():
            m["name"] = k
        results = {"date": time.strftime("%Y-%m-%d"), "device": args.device,
                   "threads": args.threads, "openblas_coretype": args.coretype or "auto",
                   "repeat": args.repeat, "models": {k: {"what": m["what"], "steps": m["steps"],
                                                         "batch": m["batch"]}
                                                     for k, m in models.items()},
                   "mixprec": {}}
        failed = False
        for name, m in models.items():
            results["mixprec"][name] = {}
            for prec in precisions:
                if args.from_dir and prec not in m["saved"]:
                    results["mixprec"][name][prec] = {"error": f"not in {args.from_dir}"}
                    failed = True
                    continue
                if args.deadline and time.time() > args.deadline:
                    results["mixprec"][name][prec] = {"error": "left out: past --deadline"}
                    continue
                runs = [run_mixprec(args, m, prec, args.device, work, i)
                        for i in range(args.repeat)]
                good = [r for r in runs if "error" not in r]
                if len(good) < len(runs):
                    failed = True
                    bad = next(r for r in runs if "error" in r)
                    print(f"mixprec {name} {prec} failed: {bad['error']}\n  "
                          f"{' '.join(bad['argv'])}", file=sys.stderr)
                    entry = {"error": bad["error"], "runs": runs}
                else:
                    best = max(good, key=lambda r: r["samples_per_s"])
                    steady = [r["steady_samples_per_s"] for r in good
                              if r["steady_samples_per_s"] is not None]
                    entry = {"samples_per_s": best["samples_per_s"],
                             "steady_samples_per_s": max(steady) if steady else None,
                             "compile_s": min(r["compile_s"] for r in good),
                             "mean_last_loss": best["mean_last_loss"],
                             "backend": best["backend"], "runs": runs}
                    print(f"mixprec {name} {prec}: {[r['samples_per_s'] for r in good]} "
                          f"samples/s (after warm-up {steady}), compiled in "
                          f"{entry['compile_s']:.2f} s", file=sys.stderr)
                results["mixprec"][name][prec] = entry
        if args.deadline and time.time() > args.deadline:
            results["torch"] = {"skipped": "PyTorch left out: past --deadline"}
        else:
            results["torch"] = run_torch(args, models, work)
        t = results["torch"]
        for name, tm in (t.get("models") or {}).items():
            for v, vr in tm["variants"].items():
                print(f"torch {name} {v}: "
                      + (vr["error"] if "error" in vr else
                         f"{[round(r['samples_per_s']) for r in vr['runs']]} samples/s"),
                      file=sys.stderr)
        results["seconds"] = round(time.perf_counter() - started, 1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
                f.write("\n")
        print(f"\nTraining throughput, --device {args.device}, {args.threads} threads, "
              f"OpenBLAS core {results['openblas_coretype']}, best of {args.repeat}; "
              f"steps: " + ", ".join(f"{k} {m['steps']}" for k, m in models.items()))
        if "skipped" in t:
            print(t["skipped"])
        elif "error" not in t:
            print(f"PyTorch {t['torch']} ({t['python']}), {t['threads']} threads"
                  + (f", {t['device_name']}" if "device_name" in t else
                     f", CPU capability {t.get('cpu_capability')}")
                  + f", {args.warmup} warm-up steps; FP32 forward of the copies vs the ONNX "
                  + "model, max rel err: "
                  + ", ".join(f"{k} {v['fp32_forward_max_rel_err']:.1e}"
                              for k, v in t["models"].items()))
        print()
        print(table(results))
        print(f"\n({results['seconds']} s in all)")
        return 1 if failed else 0
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
