#!/usr/bin/env python3
"""PyTorch side of the GPU benchmark: the same models, timed, and the card's ceilings.

    gpu_torch.py --folder DIR --device cuda|cpu --variants V[,V...] --out FILE.json
                 [--ref-dir DIR] [--ceilings] [--warmup N] [--repeat N] [--max-seconds S]

Rebuilds each model of DIR/manifest.json (bench/gpu_models.py: the weights
and inputs the modules were compiled with) as PyTorch ops in the ONNX graph's
order: LayerNormalization (epsilon 1e-5), MatMul then bias as addmm (how
GPT-2's Conv1D calls it), the three slices of the fused QKV, heads split by
reshape and transpose, Q K^T times the scale, the causal Where with -1e4,
softmax, GELU with the tanh form, residuals; the MLP's Gemm(transB=1) as
F.linear. Variants: eager_fp32 (TF32 off: the strict reference; with
--ref-dir its outputs are saved there as MODEL/NAME.npy), autocast_bf16,
autocast_fp16, compile_bf16 and compile_fp32 (torch.compile, default mode).
Each run is timed on the host clock around the call and a synchronize, as
bench/gpu_runner.c times mixprec_session_run. --ceilings measures the card:
a bf16 8192^3 matmul (TFLOP/s, random data) and a 2 GiB device copy (GB/s,
bytes read plus written). Writes a JSON object {"results": [...],
"ceilings": {...}, "torch": VERSION, "device_name": ...}; a variant that
fails is a result with "error".
"""

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_models  # noqa: E402


def linear_mk(x, w, b):
    """ONNX MatMul(x, W[K,N]) + Add(b): addmm on the flattened rows."""
    return torch.addmm(b, x.reshape(-1, w.shape[0]), w).reshape(*x.shape[:-1], w.shape[1])


class GptBlock(torch.nn.Module):
    """tests/e2e/gen_models.py build_gpt_block (vocab None), op for op."""

    def __init__(self, p, heads):
        super().__init__()
        self.p, self.heads = p, heads
        self.scale = float(p["attn_scale"].reshape(-1)[0])
        self.masked = float(p["masked_bias"].reshape(-1)[0])

    def forward(self, x):
        p, heads = self.p, self.heads
        b, s, d = x.shape
        hd = d // heads
        h = F.layer_norm(x, (d,), p["ln_1.weight"], p["ln_1.bias"], eps=1e-5)
        qkv = linear_mk(h, p["attn.c_attn.weight"], p["attn.c_attn.bias"])
        q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]

        def split(t):
            return t.reshape(b, s, heads, hd).permute(0, 2, 1, 3)

        scores = torch.matmul(split(q), split(k).permute(0, 1, 3, 2)) * self.scale
        scores = torch.where(p["causal_mask"], scores, self.masked)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, split(v)).permute(0, 2, 1, 3).reshape(b, s, d)
        x1 = x + linear_mk(ctx, p["attn.c_proj.weight"], p["attn.c_proj.bias"])
        h = F.layer_norm(x1, (d,), p["ln_2.weight"], p["ln_2.bias"], eps=1e-5)
        h = F.gelu(linear_mk(h, p["mlp.c_fc.weight"], p["mlp.c_fc.bias"]), approximate="tanh")
        return {"hidden": x1 + linear_mk(h, p["mlp.c_proj.weight"], p["mlp.c_proj.bias"])}


class Mlp(torch.nn.Module):
    """tests/e2e/gen_models.py build_mlp: Gemm(transB)+Relu, MatMul+Add, Tanh, Gemm, Softmax."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        p = self.p
        h = torch.relu(F.linear(x, p["fc1.weight"], p["fc1.bias"]))
        h = torch.tanh(linear_mk(h, p["fc2.weight"], p["fc2.bias"]))
        logits = F.linear(h, p["fc3.weight"], p["fc3.bias"])
        return {"logits": logits, "probs": torch.softmax(logits, dim=-1)}


def build(folder, entry, device):
    """(module, inputs dict) of one manifest entry on `device`."""
    weights = gpu_models.model_weights(folder, entry)
    p = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device) for k, v in weights.items()}
    inputs = {k: torch.from_numpy(v).to(device)
              for k, v in gpu_models.inputs_of(entry["inputs"]).items()}
    model = GptBlock(p, entry["shape"]["heads"]) if entry["name"] == "gpt_block" else Mlp(p)
    return model, inputs


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn, device, warmup, repeat, max_seconds):
    """Host-clock times (ms) of `repeat` synchronized calls after `warmup`."""
    for _ in range(warmup):
        fn()
    sync(device)
    times, total = [], 0.0
    while len(times) < repeat and total < max_seconds:
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
        total += times[-1] / 1e3
    return times


def run_variant(model, inputs, variant, device, args):
    """One variant's result dict (times, memory, outputs as numpy)."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(variant.rsplit("_", 1)[1])
    fn_model = model
    if variant.startswith("compile"):
        fn_model = torch.compile(model)

    def call():
        cast = torch.autocast(device, dtype=dtype) if dtype else contextlib.nullcontext()
        with torch.no_grad(), cast:
            return fn_model(*inputs.values())

    t0 = time.perf_counter()
    outs = call()                     # first call: compiles for torch.compile
    sync(device)
    first_ms = (time.perf_counter() - t0) * 1e3
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = time_calls(call, device, args.warmup, args.repeat, args.max_seconds)
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    outs = {k: v.float().cpu().numpy() for k, v in call().items()}
    return {"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times),
            "first_call_ms": first_ms, "peak_bytes": peak}, outs


def ceilings(device):
    """Measured bf16 GEMM rate and device copy bandwidth (CUDA only)."""
    if device != "cuda":
        return {"bf16_tflops": None, "copy_gbs": None, "note": "no GPU"}
    out = {}
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = median_event_ms(lambda: torch.matmul(a, b), 3, 10)
    out["bf16_tflops"] = 2 * n**3 / (ms * 1e-3) / 1e12
    del a, b
    src = torch.randn(2**29, device="cuda", dtype=torch.float32)   # 2 GiB
    dst = torch.empty_like(src)
    ms = median_event_ms(lambda: dst.copy_(src), 3, 10)
    out["copy_gbs"] = 2 * src.numel() * 4 / (ms * 1e-3) / 1e9
    del src, dst
    torch.cuda.empty_cache()
    return out


def median_event_ms(fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], required=True)
    ap.add_argument("--variants", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ref-dir")
    ap.add_argument("--ceilings", action="store_true")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--max-seconds", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_torch: error: CUDA asked for, torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False   # the FP32 reference stays strict
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    manifest = gpu_models.load_manifest(args.folder)
    report = {"torch": torch.__version__, "results": [],
              "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
    if args.ceilings:
        try:
            report["ceilings"] = ceilings(args.device)
        except Exception as e:  # noqa: BLE001  (a broken ceiling must not lose the rest)
            report["ceilings"] = {"error": f"{type(e).__name__}: {e}"}
        write_report(args.out, report)
    for entry in manifest["models"]:
        model, inputs = build(args.folder, entry, args.device)
        for variant in args.variants.split(","):
            res = {"model": entry["name"], "variant": variant}
            try:
                stats, outs = run_variant(model, inputs, variant, args.device, args)
                res.update(stats)
                if variant == "eager_fp32" and args.ref_dir:
                    os.makedirs(os.path.join(args.ref_dir, entry["name"]), exist_ok=True)
                    for k, v in outs.items():
                        np.save(os.path.join(args.ref_dir, entry["name"], k + ".npy"), v)
                if args.ref_dir:
                    ref_dir = os.path.join(args.ref_dir, entry["name"])
                    res["max_rel"] = max(
                        gpu_models.max_rel(v, np.load(os.path.join(ref_dir, k + ".npy")))
                        for k, v in outs.items())
            except Exception as e:  # noqa: BLE001  (report it and go on with the rest)
                res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                traceback.print_exc()
            print(json.dumps(res), flush=True)
            report["results"].append(res)
            write_report(args.out, report)       # so far: a time limit keeps what is done
        del model, inputs
        if args.device == "cuda":
            torch.cuda.empty_cache()
    write_report(args.out, report)
    return 0


def write_report(path, report):
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
