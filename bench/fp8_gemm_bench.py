#!/usr/bin/env python3
"""The FP8 block-scaled GEMM against per-tensor FP8 (issue 25 part 5).

    fp8_gemm_bench.py prepare --mixprec BIN --out DIR [--shapes gpu|dry|tiny]
                              [--arch sm_90|auto|none]
    fp8_gemm_bench.py run --folder DIR --runner BIN [--backend cuda|cpu]
                          [--deadline T] [--json FILE] [--warmup N] [--repeat N]
                          [--max-seconds S] [--check]

`prepare` (a machine with LLVM; `bench/gpu.sh --prepare`): for each size
M = N = K of the shape set, writes an ONNX model of one linear layer
(`Gemm` with transB=1: input x [M, K] float32, a constant weight [N, K],
output y [M, N] float32, no bias) and compiles it four times with
`mixprec compile --arch sm_90`:

- current: `--precision fp8 --fp8-scaling current`, one scale per tensor
  (the activation's from this run's amax, the weight's at compile time); on
  the GPU the GEMM goes through cuBLASLt;
- block: `--fp8-scaling block`, 1x128 activation blocks and 128x128 weight
  blocks (routines block_scale, block_quantize, block_scaled_gemm; on the
  GPU a portable emitted kernel: one thread per output element, exact
  integer sums per block, no tensor cores);
- mxfp8: `--fp8-scaling mxfp8`, 1x32 blocks (the same routines);
- bf16: `--precision bf16`, the baseline (cuBLASLt).

The weight is a [128, K] tile of `gpu_models.portable_normal` (std
1/sqrt(K), the same bits on every machine) repeated down to [N, K]: the
times hardly depend on the values, and xz packs the repeats, so the modules
and their side files (16 MiB of FP8 weights at 4096, 32 MiB of BF16) travel
as one archive, DIR/modules.tar.xz (103 MiB of modules and side files
pack into 2.4 MiB). The ONNX models are not kept (prepare writes them to a
temporary folder and removes it).

`run` (the GPU machine; `bench/gpu.sh` calls it after the attention table):
draws x (standard normal, numpy) per size, computes y = x W^T in FP32 with
numpy (the reference), times each module with bench/gpu_runner.c
(`--device-io`: x copied once into a device buffer), sizes in ascending
order, per size current, bf16, block, mxfp8 (no warm-up beyond the
runner's untimed first run where the size below predicts a run over 1 s),
each shortened or skipped to end by --deadline, and prints one table: median and min ms, TFLOP/s
(2*M*N*K over the median: the whole module, quantization included), the
time over per-tensor's, max|y - y_current| / max|y_current| (a sanity check
that both compute the same product, not a bound) and max|y - y_fp32| /
max|y_fp32|, and whether any routine ran on the host (the CUDA backend's
reason says "on the host" when a routine has no device kernel).
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SHAPES = {
    "gpu": dict(sizes=[2048, 4096]),
    # bench/gpu.sh --dry-run (CPU backend): the same flow, small.
    "dry": dict(sizes=[256, 512]),
    "tiny": dict(sizes=[256]),
}
# (recipe, --precision, --fp8-scaling or None), in the table's order.
RECIPES = [("current", "fp8", "current"), ("block", "fp8", "block"),
           ("mxfp8", "fp8", "mxfp8"), ("bf16", "bf16", None)]
RUN_ORDER = ["current", "bf16", "block", "mxfp8"]   # the slow portable kernels last
LABEL = {"current": "FP8 per-tensor", "block": "FP8 block 1x128/128x128",
         "mxfp8": "MXFP8 1x32", "bf16": "BF16"}
TILE_ROWS = 128          # the weight: a [TILE_ROWS, K] tile repeated down to [N, K]
WEIGHT_SEED = 2505
INPUT_SEED = 2506
ARCHIVE = "modules.tar.xz"
# --check (the dry run): max|y - y_fp32| / max|y_fp32| above which a module
# fails: E4M3 keeps 3 mantissa bits (2^-4 relative per operand), and the
# sums of K products average most of that out.
CHECK_BOUND = 0.1


def log(msg):
    print(f"[fp8_gemm_bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def case_name(size, recipe):
    return f"linear{size}_{recipe}"


def weight(size):
    """The [N, K] weight of one size: a portable [TILE_ROWS, K] tile repeated."""
    import gpu_models
    rows = min(TILE_ROWS, size)
    tile = gpu_models.portable_normal(WEIGHT_SEED * 1000003 + size, [rows, size],
                                      1.0 / np.sqrt(size))
    return np.ascontiguousarray(np.tile(tile, (size // rows, 1)))


def onnx_model(size):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], f"linear{size}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size, size])],
        [numpy_helper.from_array(weight(size), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# ---------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------

def compile_module(mixprec, onnx_path, precision, scaling, out, arch):
    """Compiles one module; returns its statistics (compile's JSON on stderr)."""
    cmd = [mixprec, "compile", onnx_path, "--precision", precision, "-o", out]
    if scaling:
        cmd += ["--fp8-scaling", scaling]
    if arch:
        cmd += ["--arch", arch]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    stats = {}
    for line in r.stderr.splitlines():
        if line.startswith("{"):
            stats = json.loads(line)
    stats["process_s"] = round(time.time() - t0, 2)
    return stats


def prepare(args):
    import gpu_bench
    if not os.access(args.mixprec, os.X_OK):
        sys.exit(f"fp8_gemm_bench: error: no mixprec at '{args.mixprec}' "
                 f"(build it: bash scripts/build.sh)")
    has_arch = gpu_bench.supports_arch(args.mixprec)
    arch = None if args.arch == "none" else args.arch
    if args.arch == "auto":
        arch = "sm_90" if has_arch else None
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    # The ONNX models (64 MiB of FP32 weight at 4096) go to a scratch folder
    # outside DIR, removed at the end: only the modules travel.
    scratch = tempfile.mkdtemp(prefix="fp8_gemm_bench-")
    try:
        return prepare_into(args, out, scratch, arch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def prepare_into(args, out, scratch, arch):
    import onnx
    shapes = SHAPES[args.shapes]
    version = subprocess.run([args.mixprec, "--version"], capture_output=True,
                             text=True).stdout.strip()
    manifest = {"shapes": args.shapes, "shape_set": shapes, "arch": arch, "mixprec": version,
                "tile_rows": TILE_ROWS, "weight_seed": WEIGHT_SEED,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"), "cases": []}
    t0 = time.time()
    files = []
    for size in shapes["sizes"]:
        onnx_path = os.path.join(scratch, f"linear{size}.onnx")
        onnx.save_model(onnx_model(size), onnx_path)
        for recipe, precision, scaling in RECIPES:
            c = {"name": case_name(size, recipe), "size": size, "recipe": recipe,
                 "precision": precision, "fp8_scaling": scaling, "flops": 2 * size ** 3}
            mpk = os.path.join(out, c["name"] + ".mpk")
            try:
                c["stats"] = compile_module(args.mixprec, onnx_path, precision, scaling, mpk,
                                            arch)
                c["file"] = os.path.basename(mpk)
                c["bytes"] = os.path.getsize(mpk)
                files.append(c["file"])
                if os.path.exists(mpk + ".weights"):
                    c["bytes"] += os.path.getsize(mpk + ".weights")
                    files.append(c["file"] + ".weights")
            except RuntimeError as e:
                c["error"] = f"compile: {e}"
            st = c.get("stats", {})
            log(f"{c['name']}: " + (c["error"] if "error" in c else
                                    f"{st.get('gemms', 0)} GEMM, {st.get('routines', 0)} "
                                    f"routine, {st.get('kernels', 0)} kernel steps; "
                                    f"{c['bytes'] / 2**20:.1f} MiB; "
                                    f"{st.get('process_s', 0):.1f} s"))
            manifest["cases"].append(c)
        os.remove(onnx_path)
    # One xz archive: the weights repeat every TILE_ROWS rows (and the kernels
    # from module to module), so xz packs them to a small part of their size.
    raw = sum(os.path.getsize(os.path.join(out, f)) for f in files)
    with tarfile.open(os.path.join(out, ARCHIVE), "w:xz", preset=6) as tar:
        for name in files:
            tar.add(os.path.join(out, name), arcname=name)
    for name in files:
        os.remove(os.path.join(out, name))
    manifest["archive"] = ARCHIVE
    manifest["modules_bytes"] = raw
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    failed = [c["name"] for c in manifest["cases"] if "error" in c]
    log(f"prepared {out}: {len(manifest['cases'])} modules ({raw / 2**20:.1f} MiB with their "
        f"side files) in {total / 2**20:.2f} MiB, {time.time() - t0:.0f} s "
        f"(arch {arch or 'none: CPU backend only'})" +
        (f"; {len(failed)} did not compile: {', '.join(failed)}" if failed else ""))
    return 1 if failed and len(failed) == len(manifest["cases"]) else 0


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

def remaining(args):
    return args.deadline - time.time() if args.deadline else 86400.0


def max_rel(got, ref):
    """max|got - ref| / max|ref| (inf when got has a non-finite value ref lacks)."""
    if not np.isfinite(got).all() and np.isfinite(ref).all():
        return float("inf")
    denom = float(np.abs(ref).max())
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    return diff / denom if denom > 0 else diff


def input_file(work, size):
    return os.path.join(work, "inputs", f"x{size}.f32")


def run_module(args, work, c, warmup):
    """One module through gpu_runner: its JSON (times, backend) and its output, or
    ({"error": ...}, None)."""
    out_dir = os.path.join(work, "out", c["name"])
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.runner, os.path.join(work, "modules", c["file"]), "--backend", args.backend,
           "--warmup", str(warmup), "--repeat", str(args.repeat),
           "--max-seconds", str(args.max_seconds), "--device-io", "--output-dir", out_dir,
           "--input", f"x={input_file(work, c['size'])}"]
    timeout = int(min(args.module_timeout, remaining(args) - 5))
    if timeout < 10:
        return {"error": "not run: the time budget (--deadline) is spent"}, None
    try:
        r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"runner stopped after {timeout} s (time limit)"}, None
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"runner exit {r.returncode}, no JSON: {r.stderr.strip()[-300:]}"}, None
    res = json.loads(lines[-1])
    if "error" in res:
        res["error"] = f"{res.get('stage', '?')}: {res['error']}"
        return res, None
    res["host_routines"] = "on the host" in res.get("backend_reason", "")
    if res["host_routines"]:
        # The CUDA backend says so when a routine has no device kernel (Routine.cuda).
        res["note"] = f"not all on the device: {res['backend_reason']}"
    elif res.get("inputs_on_device") != 1:
        res["note"] = f"{res.get('inputs_on_device')} of 1 inputs in device buffers"
    path = os.path.join(out_dir, "y.f32")
    y = np.fromfile(path, "<f4").reshape(c["size"], c["size"]) if os.path.exists(path) else None
    shutil.rmtree(out_dir, ignore_errors=True)
    return res, y


def tflops(c, ms):
    return c["flops"] / (ms * 1e-3) / 1e12 if ms else None


def run(args):
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    work = args.work or args.folder.rstrip("/") + "-work"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "inputs"))
    started = time.time()
    cases = manifest["cases"]
    log(f"{len(cases)} linear-layer modules from {args.folder} (shapes {manifest['shapes']}, "
        f"arch {manifest['arch']}, {manifest['mixprec']}); backend {args.backend}")
    with tarfile.open(os.path.join(args.folder, manifest["archive"]), "r:xz") as tar:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(os.path.join(work, "modules"), **kw)
    log(f"modules unpacked in {work} ({time.time() - started:.0f} s)")
    results, notes = {}, []
    last_ms = {}                                   # recipe -> (size, median ms)
    for size in manifest["shape_set"]["sizes"]:
        group = {c["recipe"]: c for c in cases if c["size"] == size}
        if remaining(args) < 20:
            for c in group.values():
                results[c["name"]] = {"error": "not run: the time budget (--deadline) is spent"}
            continue
        x = np.random.default_rng([INPUT_SEED, size]).standard_normal((size, size),
                                                                      dtype=np.float32)
        x.tofile(input_file(work, size))
        ref = x @ weight(size).T                   # FP32, numpy (the reference)
        del x
        y_current = None
        for recipe in RUN_ORDER:
            c = group.get(recipe)
            if c is None:
                continue
            if "error" in c:
                results[c["name"]] = {"error": c["error"]}
                continue
            # A module whose run the last size predicts (x size^3) at over a
            # second gets no warm-up beyond the runner's untimed first run:
            # the portable block-scaled kernel may take seconds at 4096.
            prev = last_ms.get(recipe)
            slow = prev is not None and prev[1] * (size / prev[0]) ** 3 > 1000
            res, y = run_module(args, work, c, 0 if slow else args.warmup)
            if "error" not in res:
                last_ms[recipe] = (size, res["median_ms"])
            if y is not None:
                res["max_rel_fp32"] = max_rel(y, ref)
                if recipe == "current":
                    y_current = y
                elif y_current is not None:
                    res["max_rel_current"] = max_rel(y, y_current)
            results[c["name"]] = res
            log(f"{c['name']}: " +
                (res["error"] if "error" in res else
                 f"{res['median_ms']:.3f} ms median ({res['runs']} runs, {res['backend']}), "
                 f"{tflops(c, res['median_ms']):.2f} TFLOP/s, max rel diff vs per-tensor "
                 f"{res.get('max_rel_current', '-')}, vs FP32 {res.get('max_rel_fp32')}"))
            del y
        del ref, y_current
        os.remove(input_file(work, size))

    rows = []
    for c in cases:
        r = results.get(c["name"], {"error": "not run"})
        ms = r.get("median_ms") if "error" not in r else None
        base = results.get(case_name(c["size"], "current"), {})
        base_ms = base.get("median_ms") if "error" not in base else None
        st = c.get("stats") or {}
        rows.append({"name": c["name"], "size": c["size"], "recipe": c["recipe"],
                     "flops": c["flops"], "median_ms": ms,
                     "min_ms": r.get("min_ms") if ms else None,
                     "runs": r.get("runs") if ms else None, "tflops": tflops(c, ms),
                     "time_over_current": ms / base_ms if ms and base_ms else None,
                     "max_rel_current": r.get("max_rel_current"),
                     "max_rel_fp32": r.get("max_rel_fp32"), "backend": r.get("backend"),
                     "host_routines": r.get("host_routines"),
                     "steps": [st.get("gemms"), st.get("routines"), st.get("kernels")],
                     "module_bytes": c.get("bytes"), "error": r.get("error")})
        if r.get("error"):
            notes.append(f"{c['name']}: {r['error']}")
        if r.get("note"):
            notes.append(f"{c['name']}: {r['note']}")
    checked = [(r["max_rel_fp32"], r["name"]) for r in rows if r["max_rel_fp32"] is not None]
    check_ok = all(v <= CHECK_BOUND for v, _ in checked)
    if checked:
        worst = max(checked, key=lambda t: t[0])
        check_line = (f"check: max rel diff vs FP32 over {len(checked)} modules: {worst[0]:.2e} "
                      f"({worst[1]}; bound {CHECK_BOUND:g}): {'ok' if check_ok else 'FAILED'}")
    else:
        check_line = "check: max rel diff vs FP32: pending (no module ran)"
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "backend": args.backend,
              "manifest": {k: manifest[k] for k in ("shapes", "arch", "mixprec", "created")},
              "rows": rows, "notes": notes, "check": check_line,
              "seconds": round(time.time() - started, 1)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        log(f"results written to {args.json}")

    print()
    print(f"FP8 GEMM: block-scaled and MXFP8 against per-tensor ({report['date']}, backend "
          f"{args.backend}, {report['seconds']} s)")
    print("one linear layer y[M, N] = x[M, K] W[N, K]^T, M = N = K, x float32 in a buffer of "
          "the backend (device memory on the GPU), W constant; times: host clock around one "
          "mixprec_session_run (quantization, GEMM and the output cast)")
    print("TFLOP/s: 2*M*N*K over the median; time / per-tensor: the median over FP8 "
          "per-tensor's; max rel diff: max|y - y_ref| / max|y_ref| (vs per-tensor: a sanity "
          "check, not a bound; FP32: numpy)")
    print("steps: GEMM + routine + kernel steps in the module (compile statistics); "
          "host: whether a routine ran on the host (CUDA backend)")
    if notes:
        print("notes:\n  " + "\n  ".join(notes))
    print(check_line)
    print_table(rows, args.backend)
    broken = [r["name"] for r in rows if r["error"]]
    if args.check and broken:
        print(f"check: FAILED: {len(broken)} modules did not run: {', '.join(broken)}")
    return 1 if args.check and (broken or not check_ok) else 0


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(rows, backend):
    head = ["M=N=K", "recipe", "steps", "host", "median ms", "min ms", "TFLOP/s",
            "time / per-tensor", "max rel diff vs per-tensor", "max rel diff vs FP32"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        err = r["error"]
        status = None if not err else ("not run" if err.startswith("not run") else "error")
        host = "-"
        if r["median_ms"] is not None:
            host = ("yes" if r["host_routines"] else "no") if r["backend"] == "cuda" else \
                r["backend"] or "-"
        tf = r["tflops"]
        cells = [str(r["size"]), LABEL[r["recipe"]],
                 "+".join("?" if v is None else str(v) for v in r["steps"]), host,
                 status or fmt(r["median_ms"], ".3f"), fmt(r["min_ms"], ".3f"),
                 fmt(tf, ".1f" if (tf or 0) >= 1 else ".3f"),
                 fmt(r["time_over_current"], ".2f") + ("x" if r["time_over_current"] else ""),
                 fmt(r["max_rel_current"], ".2e"), fmt(r["max_rel_fp32"], ".2e")]
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--mixprec", default="build/bin/mixprec")
    pp.add_argument("--out", required=True)
    pp.add_argument("--shapes", choices=sorted(SHAPES), default="gpu")
    pp.add_argument("--arch", default="sm_90", help="sm_NN, auto (sm_90 if supported) or none")
    rp = sub.add_parser("run")
    rp.add_argument("--folder", required=True)
    rp.add_argument("--work")
    rp.add_argument("--runner", required=True)
    rp.add_argument("--backend", choices=["cuda", "cpu", "auto"], default="cuda")
    rp.add_argument("--json")
    rp.add_argument("--warmup", type=int, default=2)
    rp.add_argument("--repeat", type=int, default=30)
    rp.add_argument("--max-seconds", type=float, default=1.0)
    rp.add_argument("--module-timeout", type=int, default=60)
    rp.add_argument("--deadline", type=float, default=0,
                    help="Unix time by which the table must be printed (steps are shortened)")
    rp.add_argument("--check", action="store_true",
                    help=f"exit 1 unless every module runs and is within {CHECK_BOUND:g} "
                         f"(max rel) of FP32")
    args = ap.parse_args(argv)
    return {"prepare": prepare, "run": run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
