#!/usr/bin/env python3
"""The GPU benchmark of issue 9: prepare modules here, time them there.

    gpu_bench.py prepare --mixprec BIN --out DIR [--shapes gpu|dry] [--arch sm_90|auto|none]
    gpu_bench.py run --folder DIR --runner BIN [--backend cuda|cpu] [--device cuda|cpu]
                     [--json FILE] [--repeat N] [--warmup N] [--skip-compile]

`prepare` (a machine with LLVM): builds the GPT-style block and the MLP
(bench/gpu_models.py), compiles each at fp32, tf32, bf16, fp16 and fp8 to
DIR/MODEL_P.mpk, and replaces each side file by its recipe, so DIR carries no
weights (the manifest records the compile statistics and the model FLOPs).

`run` (the GPU machine; `bench/gpu.sh` calls it): rebuilds the side files and
the inputs in DIR-work/, runs PyTorch eager FP32 (the reference), autocast
BF16/FP16 and the card's ceilings (bench/gpu_torch.py), each module with
bench/gpu_runner.c, then torch.compile BF16 under a time limit, and prints
one table last: median and min time, speed-up over PyTorch FP32, peak memory
(PyTorch: max_memory_allocated; mixprec: device memory taken, or peak RSS on
the CPU, and the memory plan's arena plus constants), MFU against the
measured bf16 GEMM rate, and max|out - ref| / max|ref| against PyTorch FP32.
Every step that fails is a row or a note, never the end of the run.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_models  # noqa: E402

EAGER_VARIANTS = ["eager_fp32", "autocast_bf16", "autocast_fp16"]
COMPILE_VARIANTS = ["compile_bf16"]
LABELS = {"eager_fp32": "PyTorch eager FP32", "autocast_bf16": "PyTorch autocast BF16",
          "autocast_fp16": "PyTorch autocast FP16", "compile_bf16": "torch.compile BF16",
          "compile_fp32": "torch.compile FP32"}


def log(msg):
    print(f"[gpu_bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------

def supports_arch(mixprec):
    """Whether this mixprec's compile command takes --arch."""
    r = subprocess.run([mixprec, "compile", "--help"], capture_output=True, text=True)
    return "--arch" in r.stdout + r.stderr


def compile_module(mixprec, onnx_path, precision, out, arch):
    """Compiles one module; returns its statistics (compile's JSON on stderr)."""
    cmd = [mixprec, "compile", onnx_path, "--precision", precision, "-o", out]
    if arch:
        cmd += ["--arch", arch]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    stats = {}
    for line in r.stderr.splitlines():
        if line.startswith("{"):
            stats = json.loads(line)
    stats["process_s"] = round(time.time() - t0, 2)
    return stats


def prepare(args):
    import onnx
    if not os.access(args.mixprec, os.X_OK):
        sys.exit(f"gpu_bench: error: no mixprec at '{args.mixprec}' (build it: bash scripts/build.sh)")
    has_arch = supports_arch(args.mixprec)
    arch = None if args.arch == "none" else args.arch
    if args.arch == "auto":
        arch = "sm_90" if has_arch else None
    if arch and not has_arch:
        sys.exit(f"gpu_bench: error: '{args.mixprec} compile' has no --arch option, so its "
                 f"modules carry no CUDA kernels: build a mixprec with issue 9's emitter first")
    out, scratch = args.out, args.out.rstrip("/") + ".scratch"
    for d in (out, scratch):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    version = subprocess.run([args.mixprec, "--version"], capture_output=True,
                             text=True).stdout.strip()
    manifest = {"shapes": args.shapes, "arch": arch, "mixprec": version,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "models": []}
    for name, shape in gpu_models.SHAPES[args.shapes].items():
        model, input_specs, portable, small = gpu_models.build_onnx(name, shape)
        onnx_path = os.path.join(scratch, name + ".onnx")
        onnx.save_model(model, onnx_path)
        np.savez_compressed(os.path.join(out, name + ".small.npz"), **small)
        weights = gpu_models.weights_of(portable, small)
        entry = {"name": name, "shape": shape, "flops": gpu_models.flops(name, shape),
                 "inputs": input_specs, "outputs": [o.name for o in model.graph.output],
                 "portable": portable, "small": name + ".small.npz", "modules": {}}
        for p in gpu_models.PRECISIONS:
            mpk = os.path.join(out, f"{name}_{p}.mpk")
            stats = compile_module(args.mixprec, onnx_path, p, mpk, arch)
            mod = {"file": os.path.basename(mpk), "stats": stats, "recipe": None}
            side_path = mpk + ".weights"
            if os.path.exists(side_path):
                with open(side_path, "rb") as f:
                    side = f.read()
                recipe, raw = gpu_models.make_recipe(side, weights)
                if gpu_models.rebuild_side_file(recipe, raw, weights) != side:
                    sys.exit(f"gpu_bench: error: the recipe of {side_path} does not rebuild it")
                mod["recipe"] = recipe
                mod["raw"] = None
                if recipe["raw"]:
                    mod["raw"] = f"{name}_{p}.raw.zlib"
                    with open(os.path.join(out, mod["raw"]), "wb") as f:
                        f.write(raw)
                shutil.move(side_path, os.path.join(scratch, os.path.basename(side_path)))
                explained = sum(s["size"] for s in recipe["segments"])
                log(f"{name} {p}: side file {len(side) / 2**20:.1f} MiB, {explained / 2**20:.1f} "
                    f"MiB rebuilt from weights, {sum(n for _, n in recipe['raw'])} bytes kept")
            else:
                log(f"{name} {p}: no side file")
            entry["modules"][p] = mod
        manifest["models"].append(entry)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    log(f"prepared {out}: {total / 2**20:.1f} MiB (arch {arch or 'none: CPU backend only'}); "
        f"ONNX models and side files left in {scratch}")
    return 0


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

def regenerate(folder, work, manifest):
    """Side files and input files in `work`; returns {(model, precision): error}."""
    errors = {}
    for entry in manifest["models"]:
        weights = gpu_models.model_weights(folder, entry)
        in_dir = os.path.join(work, entry["name"] + ".inputs")
        os.makedirs(in_dir, exist_ok=True)
        for iname, arr in gpu_models.inputs_of(entry["inputs"]).items():
            arr.astype("<f4").tofile(os.path.join(in_dir, iname + ".f32"))
        for p, mod in entry["modules"].items():
            dst = os.path.join(work, mod["file"])
            shutil.copyfile(os.path.join(folder, mod["file"]), dst)
            if not mod["recipe"]:
                continue
            try:
                raw = b""
                if mod.get("raw"):
                    with open(os.path.join(folder, mod["raw"]), "rb") as f:
                        raw = f.read()
                data = gpu_models.rebuild_side_file(mod["recipe"], raw, weights)
                with open(dst + ".weights", "wb") as f:
                    f.write(data)
            except Exception as e:  # noqa: BLE001  (that module's row says why)
                errors[(entry["name"], p)] = f"side file: {e}"
        del weights
    return errors


def remaining(args):
    """Seconds left before --deadline (a Unix time), or a day without one."""
    return args.deadline - time.time() if args.deadline else 86400.0


def run_torch(args, work, variants, timeout, ceilings):
    """bench/gpu_torch.py in its own process; (report or None, note)."""
    out = os.path.join(work, f"torch_{variants[0]}.json")
    cmd = [sys.executable, os.path.join(HERE, "gpu_torch.py"), "--folder", args.folder,
           "--device", args.device, "--variants", ",".join(variants), "--out", out,
           "--ref-dir", os.path.join(work, "ref"), "--warmup", str(args.warmup),
           "--repeat", str(args.repeat), "--max-seconds", str(args.max_seconds)]
    if ceilings:
        cmd.append("--ceilings")
    if timeout < 20:
        return None, f"PyTorch {','.join(variants)}: not run: the time budget (--deadline) is spent"
    log("running " + " ".join(os.path.basename(c) if "/" in c else c for c in cmd[1:]))
    try:
        r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        note = f"PyTorch {','.join(variants)}: stopped after {timeout} s (time limit)"
        if os.path.exists(out):                  # the results it had finished
            with open(out) as f:
                return json.load(f), note + "; the rows it finished are kept"
        return None, note
    sys.stdout.write(r.stdout)
    if r.returncode != 0 or not os.path.exists(out):
        tail = " | ".join(r.stderr.strip().splitlines()[-3:])
        return None, f"PyTorch {','.join(variants)}: failed ({r.returncode}): {tail}"
    with open(out) as f:
        return json.load(f), None


def run_module(args, work, entry, p):
    """One module through gpu_runner; the runner's JSON plus max_rel."""
    mod = entry["modules"][p]
    out_dir = os.path.join(work, "out", f"{entry['name']}_{p}")
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.runner, os.path.join(work, mod["file"]), "--backend", args.backend,
           "--warmup", str(args.warmup), "--repeat", str(args.repeat),
           "--max-seconds", str(args.max_seconds), "--output-dir", out_dir]
    if not args.host_io:  # inputs in device buffers, as PyTorch's are (gpu_runner.c)
        cmd.append("--device-io")
    for iname in entry["inputs"]:
        cmd += ["--input", f"{iname}={os.path.join(work, entry['name'] + '.inputs', iname + '.f32')}"]
    timeout = int(min(args.module_timeout, remaining(args) - 30))
    if timeout < 10:
        return {"error": "not run: the time budget (--deadline) is spent"}
    try:
        r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"runner stopped after {timeout} s (time limit)"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"runner exit {r.returncode}, no JSON: {r.stderr.strip()[-300:]}"}
    res = json.loads(lines[-1])
    if "error" in res:
        res["error"] = f"{res.get('stage', '?')}: {res['error']}"
        return res
    rels = []
    for out in res["outputs"]:
        ref_path = os.path.join(work, "ref", entry["name"], out["name"] + ".npy")
        if os.path.exists(ref_path):
            ref = np.load(ref_path)
            got = np.fromfile(os.path.join(out_dir, out["name"] + ".f32"), "<f4").reshape(ref.shape)
            rels.append(gpu_models.max_rel(got, ref))
    res["max_rel"] = max(rels) if rels else None
    return res


def fmt_ms(v):
    return "-" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.1f}")


def fmt_mb(v):
    return "-" if v is None else f"{v / 2**20:.0f} MiB"


def build_rows(manifest, torch_results, module_results, ceil):
    """Table rows (dicts) in print order: per model, PyTorch then mixprec."""
    rows = []
    rate = (ceil or {}).get("bf16_tflops")
    for entry in manifest["models"]:
        name = entry["name"]
        ref = next((t for t in torch_results
                    if t["model"] == name and t["variant"] == "eager_fp32" and "error" not in t),
                   None)
        base = ref["median_ms"] if ref else None

        def row(label, r, planned=None, mem=None, kernel_bw="-"):
            med = r.get("median_ms") if r and "error" not in r else None
            return {"model": name, "run": label, "median_ms": med,
                    "min_ms": r.get("min_ms") if med else None,
                    "speedup": base / med if base and med else None,
                    "memory": mem, "planned": planned,
                    "mfu": entry["flops"] / (med * 1e-3) / (rate * 1e12) if med and rate else None,
                    "max_rel": r.get("max_rel") if med else None,
                    "kernel_bw": kernel_bw, "error": (r or {}).get("error") if not med else None}

        for t in torch_results:
            if t["model"] == name:
                mem = f"{fmt_mb(t['peak_bytes'])} alloc" if t.get("peak_bytes") else None
                rows.append(row(LABELS.get(t["variant"], t["variant"]), t, mem=mem))
        for p in gpu_models.PRECISIONS:
            r = module_results.get((name, p), {"error": "not run"})
            stats = entry["modules"][p]["stats"]
            planned = stats.get("arena_bytes", 0) + stats.get("constant_bytes", 0)
            if r.get("device_bytes") is not None:
                mem = f"{fmt_mb(r['device_bytes'])} device"
            elif r.get("peak_rss_bytes") is not None:
                mem = f"{fmt_mb(r['peak_rss_bytes'])} RSS"
            else:
                mem = None
            label = f"mixprec {p} ({r.get('backend', '?')})" if "error" not in r else f"mixprec {p}"
            rows.append(row(label, r, planned=planned, mem=mem, kernel_bw="pending"))
    return rows


def goals(manifest, rows, ceil):
    """The issue's performance goals, as far as the figures reach."""
    def med(model, run):
        r = next((x for x in rows if x["model"] == model and x["run"].startswith(run)), None)
        return r["median_ms"] if r else None

    def planned(model, p):
        s = next(e for e in manifest["models"] if e["name"] == model)["modules"][p]["stats"]
        return s.get("arena_bytes", 0) + s.get("constant_bytes", 0)

    out = []

    def ratio(label, num, den, goal, sense):
        if num and den:
            v = num / den
            ok = v >= goal if sense == ">=" else v <= goal
            out.append(f"{label}: {v:.2f} (goal {sense} {goal}: {'met' if ok else 'NOT met'})")
        else:
            out.append(f"{label}: pending (a figure is missing)")

    ratio("gpt_block bf16: speed-up over PyTorch autocast BF16 eager",
          med("gpt_block", "PyTorch autocast BF16"), med("gpt_block", "mixprec bf16"), 1.3, ">=")
    ratio("gpt_block bf16: speed-up over torch.compile BF16",
          med("gpt_block", "torch.compile BF16"), med("gpt_block", "mixprec bf16"), 1.0, ">=")
    for m in ("gpt_block", "mlp"):
        ratio(f"{m}: fp8 speed-up over bf16 (goal where GEMMs dominate)",
              med(m, "mixprec bf16"), med(m, "mixprec fp8"), 1.3, ">=")
        ratio(f"{m}: bf16 memory plan (arena + constants) over fp32's",
              planned(m, "bf16"), planned(m, "fp32"), 0.55, "<=")
    out.append("fused element-wise/reduction kernels at >= 85% of copy bandwidth, GEMMs at "
               ">= 70% of the bf16 rate: pending (per-kernel times need a runtime profiling hook)")
    return out


def print_table(rows):
    head = ["model", "run", "median ms", "min ms", "vs PyTorch FP32", "peak memory",
            "plan (arena+consts)", "MFU (bf16 rate)", "max rel err vs FP32", "kernel bandwidth"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["error"]:
            cells = [r["model"], r["run"], "error", "", "", "",
                     fmt_mb(r["planned"]) if r["planned"] else "-",
                     "", "", r["kernel_bw"]]
        else:
            cells = [r["model"], r["run"], fmt_ms(r["median_ms"]), fmt_ms(r["min_ms"]),
                     f"{r['speedup']:.2f}x" if r["speedup"] else "-", r["memory"] or "-",
                     fmt_mb(r["planned"]) if r["planned"] else "-",
                     f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "pending",
                     f"{r['max_rel']:.2e}" if r["max_rel"] is not None else "-", r["kernel_bw"]]
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), flush=True)


def run(args):
    manifest = gpu_models.load_manifest(args.folder)
    work = args.work or args.folder.rstrip("/") + "-work"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    started = time.time()
    log(f"{len(manifest['models'])} models from {args.folder} (shapes {manifest['shapes']}, "
        f"arch {manifest['arch']}, {manifest['mixprec']}); backend {args.backend}")
    module_results = {k: {"error": v} for k, v in regenerate(args.folder, work, manifest).items()}
    log(f"side files and inputs rebuilt in {work} ({time.time() - started:.0f} s)")
    notes = [f"{m} {p}: {r['error']}" for (m, p), r in module_results.items()]

    # PyTorch FP32 first: its outputs are the reference of every other row.
    eager, note = (None, "PyTorch: skipped (--no-torch)") if args.no_torch else run_torch(
        args, work, EAGER_VARIANTS, int(min(args.torch_timeout, remaining(args) - 150)),
        ceilings=True)
    torch_results = eager["results"] if eager else []
    ceil = eager.get("ceilings") if eager else None
    if note:
        notes.append(note)

    for entry in manifest["models"]:
        for p in gpu_models.PRECISIONS:
            if (entry["name"], p) in module_results:
                continue
            res = run_module(args, work, entry, p)
            module_results[(entry["name"], p)] = res
            log(f"mixprec {entry['name']} {p}: " +
                (res["error"] if "error" in res else
                 f"{res['median_ms']:.3f} ms median on {res['backend']}, max_rel {res['max_rel']}"))
            if "error" in res:
                notes.append(f"mixprec {entry['name']} {p}: {res['error']}")

    compile_timeout = int(min(args.compile_timeout, remaining(args) - 20))
    if args.skip_compile or args.no_torch:
        notes.append("torch.compile: skipped")
    elif compile_timeout < 60:
        notes.append(f"torch.compile: skipped: {remaining(args):.0f} s of the time budget left")
    else:
        comp, note = run_torch(args, work, COMPILE_VARIANTS, compile_timeout, ceilings=False)
        if comp:
            torch_results += comp["results"]
        if note:
            notes.append(note)
    for t in torch_results:
        if "error" in t:
            notes.append(f"{LABELS.get(t['variant'], t['variant'])} {t['model']}: {t['error']}")

    rows = build_rows(manifest, torch_results, module_results, ceil)
    goal_lines = goals(manifest, rows, ceil)
    check_ok, check_line = fp32_check(manifest, module_results)
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": (eager or {}).get("device_name"), "torch": (eager or {}).get("torch"),
              "backend": args.backend, "manifest": {k: manifest[k] for k in
                                                    ("shapes", "arch", "mixprec", "created")},
              "ceilings": ceil, "rows": rows, "goals": goal_lines, "notes": notes,
              "modules": {f"{m}_{p}": r for (m, p), r in module_results.items()},
              "torch_results": torch_results, "fp32_check": check_line,
              "seconds": round(time.time() - started, 1)}
    for path in filter(None, [args.json, os.path.join(os.environ["OUT"], "gpu_bench.json")
                              if os.environ.get("OUT") else None]):
        with open(path, "w") as f:
            json.dump(report, f, indent=1, default=str)
        log(f"results written to {path}")

    print()
    print(f"GPU benchmark (issue 9), {report['date']}, device: {report['device']}, "
          f"torch {report['torch']}, mixprec backend {args.backend}, {report['seconds']} s")
    if ceil and ceil.get("bf16_tflops"):
        print(f"ceilings: bf16 GEMM 8192^3 {ceil['bf16_tflops']:.0f} TFLOP/s; device copy "
              f"{ceil['copy_gbs']:.0f} GB/s (read + write)")
    else:
        why = (ceil or {}).get("note") or (ceil or {}).get("error") or "not measured"
        print(f"ceilings: pending ({why})")
    for entry in manifest["models"]:
        dims = ", ".join(f"{k} {v}" for k, v in entry["shape"].items())
        print(f"{entry['name']}: {dims}; {entry['flops'] / 1e9:.3g} GFLOP per run")
    if notes:
        print("notes:\n  " + "\n  ".join(notes))
    print("goals:\n  " + "\n  ".join(goal_lines))
    print("kernel bandwidth: pending: the runtime has no per-kernel timing hook yet; "
          "times are whole runs (host clock around a synchronous run)")
    print("mixprec inputs: " + ("host data, copied to the device every run (--host-io)"
                                if args.host_io else
                                "device buffers filled once (IO binding), as PyTorch's"))
    print(check_line)
    print_table(rows)
    return 0 if check_ok or not args.check_fp32 else 1


FP32_BOUND = 1e-4

# SHA-256 of portable_normal(7, [1000, 3], 0.5): the bits every machine must draw.
PORTABLE_PIN = "01d42167626a2a1b1f98388866ec472396d01a2ea1e5a76f31d0db6ecf53dcbc"


def selftest(args):
    """ctest bench_gpu_selftest, no GPU and no torch: the tiny models go through
    prepare (side files rebuilt from their recipes, checked there) and run on
    the CPU backend through gpu_runner; each precision must run, and the fp32
    modules' outputs must equal `mixprec run` on the ONNX model (interpreter)
    within 1e-5. Also pins portable_normal's bits."""
    import hashlib
    failures = []
    digest = hashlib.sha256(gpu_models.portable_normal(7, [1000, 3], 0.5).tobytes()).hexdigest()
    if digest != PORTABLE_PIN:
        failures.append(f"portable_normal(7, [1000, 3], 0.5) has SHA-256 {digest}, "
                        f"pinned {PORTABLE_PIN}: weights would differ between machines")
    folder = os.path.join(args.work, "tiny")
    if prepare(argparse.Namespace(mixprec=args.mixprec, out=folder, shapes="tiny", arch="auto")):
        return 1
    manifest = gpu_models.load_manifest(folder)
    sides = sum(1 for e in manifest["models"] for m in e["modules"].values() if m["recipe"])
    if sides < 3:
        failures.append(f"only {sides} modules have a side file: the recipes went untested")
    for e in manifest["models"]:          # every byte explained by a weight: nothing carried raw
        for p, m in e["modules"].items():
            kept = sum(n for _, n in (m["recipe"] or {}).get("raw", []))
            if kept:
                failures.append(f"{e['name']} {p}: {kept} side-file bytes no weight form explains")
    ns = argparse.Namespace(folder=folder, work=None, runner=args.runner, backend="cpu",
                            device="cpu", json=os.path.join(args.work, "tiny.json"), warmup=0,
                            repeat=2, max_seconds=5.0, module_timeout=120, torch_timeout=0,
                            compile_timeout=0, skip_compile=True, no_torch=True, deadline=0,
                            check_fp32=False, host_io=False)
    run(ns)
    with open(ns.json) as f:
        report = json.load(f)
    for key, res in report["modules"].items():
        if "error" in res:
            failures.append(f"{key}: {res['error']}")
        elif key.startswith("mlp_") and res.get("inputs_on_device") != 1:
            # The MLP's one input is F32: --device-io binds it from a buffer.
            failures.append(f"{key}: inputs_on_device {res.get('inputs_on_device')}, want 1")
    work = folder + "-work"
    for entry in manifest["models"]:
        name, scratch = entry["name"], folder + ".scratch"
        cmd = [args.mixprec, "run", os.path.join(scratch, name + ".onnx"), "--backend",
               "interpreter", "--output-dir", os.path.join(work, "interp_" + name)]
        for iname, arr in gpu_models.inputs_of(entry["inputs"]).items():
            np.save(os.path.join(work, f"{name}_{iname}.npy"), arr)
            cmd += ["--input", f"{iname}={os.path.join(work, f'{name}_{iname}.npy')}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{' '.join(cmd)}: {r.stderr.strip()}")
            continue
        for out in entry["outputs"]:
            ref = np.load(os.path.join(work, "interp_" + name, out + ".npy"))
            got = np.fromfile(os.path.join(work, "out", name + "_fp32", out + ".f32"), "<f4")
            rel = gpu_models.max_rel(got.reshape(ref.shape), ref)
            print(f"selftest: {name} fp32 {out}: max rel err vs interpreter {rel:.2e}")
            if not rel <= 1e-5:
                failures.append(f"{name} fp32 {out}: max rel err {rel:.2e} vs the interpreter")
    for f in failures:
        print("selftest: FAILED: " + f)
    print(f"selftest: {'FAILED' if failures else 'ok'} ({sides} side files rebuilt from recipes)")
    return 1 if failures else 0


def fp32_check(manifest, module_results):
    """(ok, line): mixprec fp32 against PyTorch eager FP32, every model."""
    parts, values = [], []
    for entry in manifest["models"]:
        v = module_results.get((entry["name"], "fp32"), {}).get("max_rel")
        values.append(v)
        parts.append(f"{entry['name']} {v:.2e}" if v is not None else f"{entry['name']} missing")
    ok = all(v is not None and v < FP32_BOUND for v in values)
    verdict = "ok" if ok else ("pending (no PyTorch reference)" if all(v is None for v in values)
                               else "FAILED")
    return ok, (f"check: mixprec fp32 vs PyTorch eager FP32, max rel err: {', '.join(parts)} "
                f"(bound {FP32_BOUND:g}): {verdict}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--mixprec", default="build/bin/mixprec")
    pp.add_argument("--out", required=True)
    pp.add_argument("--shapes", choices=sorted(gpu_models.SHAPES), default="gpu")
    pp.add_argument("--arch", default="sm_90", help="sm_NN, auto (sm_90 if supported) or none")
    rp = sub.add_parser("run")
    rp.add_argument("--folder", required=True)
    rp.add_argument("--work")
    rp.add_argument("--runner", required=True)
    rp.add_argument("--backend", choices=["cuda", "cpu", "auto"], default="cuda")
    rp.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    rp.add_argument("--json")
    rp.add_argument("--warmup", type=int, default=10)
    rp.add_argument("--repeat", type=int, default=100)
    rp.add_argument("--max-seconds", type=float, default=10.0)
    rp.add_argument("--module-timeout", type=int, default=60)
    rp.add_argument("--torch-timeout", type=int, default=240)
    rp.add_argument("--compile-timeout", type=int, default=240)
    rp.add_argument("--skip-compile", action="store_true")
    rp.add_argument("--host-io", action="store_true",
                    help="bind mixprec's inputs as host data, copied to the device every run "
                         "(default: device buffers, filled once, as PyTorch's inputs are)")
    rp.add_argument("--no-torch", action="store_true", help="leave the PyTorch rows out")
    rp.add_argument("--deadline", type=float, default=0,
                    help="Unix time by which the table must be printed (steps are shortened)")
    rp.add_argument("--check-fp32", action="store_true",
                    help=f"exit 1 unless mixprec fp32 is within {FP32_BOUND:g} of PyTorch FP32")
    sp = sub.add_parser("selftest")
    sp.add_argument("--mixprec", required=True)
    sp.add_argument("--runner", required=True)
    sp.add_argument("--work", required=True)
    args = ap.parse_args(argv)
    return {"prepare": prepare, "run": run, "selftest": selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
