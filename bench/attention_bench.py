#!/usr/bin/env python3
"""The fused attention benchmark (issue 25 part 5): mp.attention against SDPA flash.

    attention_bench.py prepare --mixprec BIN --out DIR [--shapes gpu|dry|tiny]
                               [--arch sm_90|auto|none]
    attention_bench.py run --folder DIR --runner BIN [--backend cuda|cpu] [--device cuda|cpu]
                           [--deadline T] [--json FILE] [--warmup N] [--repeat N]
                           [--max-seconds S] [--check] [--no-torch]
    attention_bench.py torch ...            (run's PyTorch process; needs torch)

`prepare` (a machine with LLVM; `bench/gpu.sh --prepare`): writes one MLIR
module per case holding one `mp.attention` (pass fwd: returns the output) or
`mp.attention` then `mp.attention_grad` (pass fwd_bwd: returns the output and
dq, dk, dv), q, k, v [B, H, S, D] of one dtype (BF16 on the GPU), scale
1/sqrt(D), causal or not, and compiles it with `mixprec compile --precision
bf16 --arch sm_90`, and packs the modules into DIR/modules.tar.xz (one solid
archive: the kernels repeat from module to module, so it is 50 times smaller
to carry than the modules; no weights, so no side files; the MLIR stays
beside it as NAME.mlir). B is
TOKENS / S (FlashAttention-2's benchmark keeps batch x seqlen = 16k), so
every case of one head dim reads inputs of the same size.

`run` (the GPU machine; `bench/gpu.sh` calls it after the inference table):
draws q, k, v and the output gradient once per head dim (standard normal,
rounded to the dtype) as raw files in the dtype's own bytes, times each
module with bench/gpu_runner.c (`--raw-input`, `--device-io`: the inputs are
copied once into device buffers), then times
torch.nn.functional.scaled_dot_product_attention on the same inputs under
sdpa_kernel(SDPBackend.FLASH_ATTENTION) (forward under no_grad; fwd_bwd: the
forward and `out.backward(dout)`) in a process of its own, and compares the
outputs (max|mixprec - SDPA| / max|SDPA|, each output, the largest).
Both are timed alike: the host clock around one call and its completion
(mixprec_session_run is synchronous; torch.cuda.synchronize after the SDPA
call). TFLOP/s counts FLOPs as FlashAttention's benchmarks do: forward
4*B*H*S*S*D, halved when causal; fwd_bwd 3.5 times the forward (the backward
2.5 times). The phases go pass by pass (mixprec fwd, SDPA fwd, mixprec
fwd_bwd, SDPA fwd_bwd), each shortened or skipped to end by --deadline;
without torch the SDPA columns are left out, with a note.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# tokens = batch * seq (FlashAttention-2's benchmark: 16k); heads; head dims; sequence lengths.
SHAPES = {
    "gpu": dict(tokens=16384, heads=16, head_dims=[64, 128], seqs=[512, 2048, 8192],
                dtypes=["bf16"], passes=["fwd", "fwd_bwd"]),
    # bench/gpu.sh --dry-run (CPU backend): the same flow, small.
    "dry": dict(tokens=512, heads=4, head_dims=[64, 128], seqs=[64, 256],
                dtypes=["bf16"], passes=["fwd", "fwd_bwd"]),
    "tiny": dict(tokens=128, heads=2, head_dims=[64], seqs=[64],
                 dtypes=["bf16"], passes=["fwd", "fwd_bwd"]),
}
MLIR_TYPE = {"bf16": "bf16", "fp16": "f16"}
PRECISION = {"bf16": "bf16", "fp16": "fp16"}
PASS_FACTOR = {"fwd": 1.0, "fwd_bwd": 3.5}   # FlashAttention's benchmark: bwd = 2.5 x fwd
PASS_LABEL = {"fwd": "fwd", "fwd_bwd": "fwd+bwd"}
INPUT_SEED = 2503
ARCHIVE = "modules.tar.xz"
# max|mixprec - SDPA| / max|SDPA| over every output above which --check fails:
# both round to BF16 (2^-8) and accumulate in FP32 in other orders.
CHECK_BOUND = 5e-2


def log(msg):
    print(f"[attention_bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def case_name(c):
    return (f"attn_{c['pass']}_{c['dtype']}_d{c['head_dim']}_s{c['seq']}_"
            f"{'causal' if c['causal'] else 'full'}")


def cases_of(shapes):
    """Every case of a shape set, forward passes first."""
    out = []
    for pas in shapes["passes"]:
        for dtype in shapes["dtypes"]:
            for d in shapes["head_dims"]:
                for s in shapes["seqs"]:
                    for causal in (False, True):
                        c = {"pass": pas, "dtype": dtype, "head_dim": d, "seq": s,
                             "batch": max(1, shapes["tokens"] // s), "heads": shapes["heads"],
                             "causal": causal}
                        c["name"] = case_name(c)
                        c["flops"] = flops(c)
                        out.append(c)
    return out


def flops(c):
    """FlashAttention's count: 4*B*H*S*S*D a forward, halved when causal; x3.5 fwd+bwd."""
    f = 4 * c["batch"] * c["heads"] * c["seq"] * c["seq"] * c["head_dim"]
    if c["causal"]:
        f //= 2
    return int(f * PASS_FACTOR[c["pass"]])


def module_text(c):
    """The case's MLIR: one mp.attention (and its mp.attention_grad for fwd_bwd)."""
    t = MLIR_TYPE[c["dtype"]]
    b, h, s, d = c["batch"], c["heads"], c["seq"], c["head_dim"]
    x = f"tensor<{b}x{h}x{s}x{d}x{t}>"
    lse = f"tensor<{b}x{h}x{s}xf32>"
    attrs = f"scale = {1.0 / math.sqrt(d)!r} : f64" + (", causal = true" if c["causal"] else "")
    args = [f'%{n}: {x} {{mp.name = "{n}"}}' for n in ("q", "k", "v")]
    body = [f"  %out, %lse = mp.attention %q, %k, %v {{{attrs}}}",
            f"      : ({x}, {x}, {x}) -> ({x}, {lse})"]
    results, values = ["out"], ["%out"]
    if c["pass"] == "fwd_bwd":
        args.append(f'%dout: {x} {{mp.name = "dout"}}')
        body += [f"  %dq, %dk, %dv = mp.attention_grad %q, %k, %v, %out, %lse, %dout {{{attrs}}}",
                 f"      : ({x}, {x}, {x}, {x}, {lse}, {x}) -> ({x}, {x}, {x})"]
        results += ["dq", "dk", "dv"]
        values += ["%dq", "%dk", "%dv"]
    res = ", ".join(f'{x} {{mp.name = "{r}"}}' for r in results)
    body.append(f"  return {', '.join(values)} : {', '.join([x] * len(values))}")
    return "\n".join([f"func.func @main({', '.join(args)}) -> ({res}) {{"] + body + ["}", ""])


# ---------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------

def prepare(args):
    import gpu_bench
    if not os.access(args.mixprec, os.X_OK):
        sys.exit(f"attention_bench: error: no mixprec at '{args.mixprec}' "
                 f"(build it: bash scripts/build.sh)")
    has_arch = gpu_bench.supports_arch(args.mixprec)
    arch = None if args.arch == "none" else args.arch
    if args.arch == "auto":
        arch = "sm_90" if has_arch else None
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shapes = SHAPES[args.shapes]
    version = subprocess.run([args.mixprec, "--version"], capture_output=True,
                             text=True).stdout.strip()
    manifest = {"shapes": args.shapes, "shape_set": shapes, "arch": arch, "mixprec": version,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"), "cases": []}
    t0 = time.time()
    for c in cases_of(shapes):
        mlir = os.path.join(out, c["name"] + ".mlir")
        with open(mlir, "w") as f:
            f.write(module_text(c))
        mpk = os.path.join(out, c["name"] + ".mpk")
        try:
            c["stats"] = gpu_bench.compile_module(args.mixprec, mlir, PRECISION[c["dtype"]], mpk,
                                                  arch)
            if os.path.exists(mpk + ".weights"):       # no constants: none expected
                c["error"] = "the module has a side file; the benchmark carries none"
            c["file"] = os.path.basename(mpk)
        except RuntimeError as e:
            c["error"] = f"compile: {e}"
        log(f"{c['name']}: " + (c["error"] if "error" in c else
                                f"{c['stats'].get('routines', '?')} routine calls, "
                                f"{c['stats'].get('process_s', 0):.1f} s"))
        manifest["cases"].append(c)
    # One solid xz archive: the modules' CUBIN, PTX and CUDA source repeat from
    # one to the next (11 MiB of modules pack into 0.2 MiB; gzip each: 2.2 MiB).
    mpks = [c["file"] for c in manifest["cases"] if c.get("file")]
    with tarfile.open(os.path.join(out, ARCHIVE), "w:xz", preset=9) as tar:
        for name in mpks:
            tar.add(os.path.join(out, name), arcname=name)
    for name in mpks:
        os.remove(os.path.join(out, name))
    manifest["archive"] = ARCHIVE
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    failed = [c["name"] for c in manifest["cases"] if "error" in c]
    log(f"prepared {out}: {len(manifest['cases'])} modules, {total / 2**20:.1f} MiB, "
        f"{time.time() - t0:.0f} s (arch {arch or 'none: CPU backend only'})" +
        (f"; {len(failed)} did not compile: {', '.join(failed)}" if failed else ""))
    return 1 if failed and len(failed) == len(manifest["cases"]) else 0


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

def np_dtype(dtype):
    import ml_dtypes
    return {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}[dtype]


def input_names(c):
    return ["q", "k", "v"] + (["dout"] if c["pass"] == "fwd_bwd" else [])


def input_file(work, c, name):
    """Raw input file (the dtype's bytes) shared by every case of one dtype and head dim."""
    return os.path.join(work, "inputs", f"{c['dtype']}_d{c['head_dim']}_{name}.bin")


def make_inputs(work, cases):
    """Standard normal q, k, v, dout in each case's dtype: B*H*S*D elements, the same
    for every S of a head dim (B = tokens / S), so one file each serves them all."""
    os.makedirs(os.path.join(work, "inputs"), exist_ok=True)
    done = set()
    for c in cases:
        for n in input_names(c):
            path = input_file(work, c, n)
            if path in done:
                continue
            count = c["batch"] * c["heads"] * c["seq"] * c["head_dim"]
            seed = [INPUT_SEED, c["head_dim"], ["q", "k", "v", "dout"].index(n)]
            x = np.random.default_rng(seed).standard_normal(count, dtype=np.float32)
            x.astype(np_dtype(c["dtype"])).tofile(path)
            done.add(path)


def remaining(args):
    return args.deadline - time.time() if args.deadline else 86400.0


def run_module(args, work, c):
    """One module through gpu_runner: its JSON (times, backend), or {"error": ...}."""
    out_dir = os.path.join(work, "out", c["name"])
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.runner, os.path.join(work, "modules", c["file"]), "--backend", args.backend,
           "--warmup", str(args.warmup), "--repeat", str(args.repeat),
           "--max-seconds", str(args.max_seconds), "--device-io"]
    if args.check_outputs:
        cmd += ["--output-dir", out_dir]
    for n in input_names(c):
        cmd += ["--raw-input", f"{n}={input_file(work, c, n)}"]
    timeout = int(min(args.module_timeout, remaining(args) - 10))
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
    elif "on the host" in res.get("backend_reason", ""):
        # The CUDA backend says so when a routine has no device kernel (Routine.cuda).
        res["note"] = f"not all on the device: {res['backend_reason']}"
    elif res.get("inputs_on_device") != len(input_names(c)):
        res["note"] = (f"{res.get('inputs_on_device')} of {len(input_names(c))} inputs in "
                       f"device buffers")
    return res


def run_torch(args, work, cases, timeout):
    """The SDPA timings of `cases` in a process of their own: (results or None, note)."""
    out = os.path.join(work, f"sdpa_{cases[0]['pass']}.json")
    with open(out + ".cases", "w") as f:
        json.dump(cases, f)
    cmd = [sys.executable, os.path.abspath(__file__), "torch", "--work", work,
           "--cases", out + ".cases", "--device", args.device, "--out", out,
           "--warmup", str(args.warmup), "--repeat", str(args.repeat),
           "--max-seconds", str(args.max_seconds)]
    if args.check_outputs:
        cmd.append("--compare")
    label = f"SDPA {PASS_LABEL[cases[0]['pass']]}"
    if timeout < 15:
        return None, f"{label}: not run: the time budget (--deadline) is spent"
    log(f"running SDPA ({args.sdpa_backend}) on {len(cases)} cases, at most {timeout} s")
    try:
        r = subprocess.run(cmd + ["--sdpa-backend", args.sdpa_backend], timeout=timeout,
                           capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        note = f"{label}: stopped after {timeout} s (time limit)"
        if os.path.exists(out):
            with open(out) as f:
                return json.load(f)["results"], note + "; the cases it finished are kept"
        return None, note
    sys.stdout.write(r.stdout)
    if r.returncode != 0 or not os.path.exists(out):
        tail = " | ".join(r.stderr.strip().splitlines()[-3:])
        return None, f"{label}: failed ({r.returncode}): {tail}"
    with open(out) as f:
        return json.load(f)["results"], None


def have_torch():
    r = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True)
    return r.returncode == 0


def tflops(c, ms):
    return c["flops"] / (ms * 1e-3) / 1e12 if ms else None


def run(args):
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    work = args.work or args.folder.rstrip("/") + "-work"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    started = time.time()
    cases = manifest["cases"]
    log(f"{len(cases)} attention modules from {args.folder} (shapes {manifest['shapes']}, "
        f"arch {manifest['arch']}, {manifest['mixprec']}); backend {args.backend}")
    notes = []
    torch_ok = not args.no_torch and have_torch()
    if args.no_torch:
        notes.append("SDPA: skipped (--no-torch); its columns are left out")
    elif not torch_ok:
        notes.append("SDPA: no torch here (pip install torch): its columns are left out")
    args.check_outputs = args.check_outputs and torch_ok   # nothing to compare them with
    with tarfile.open(os.path.join(args.folder, manifest["archive"]), "r:xz") as tar:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(os.path.join(work, "modules"), **kw)
    make_inputs(work, [c for c in cases if "error" not in c])
    log(f"modules unpacked, inputs drawn in {work} ({time.time() - started:.0f} s)")
    mixprec, sdpa = {}, {}
    for pas in manifest["shape_set"]["passes"]:
        group = [c for c in cases if c["pass"] == pas]
        # Keep time for this pass's SDPA process (started once per pass).
        reserve = 25 if torch_ok else 0
        for c in group:
            if "error" in c:
                mixprec[c["name"]] = {"error": c["error"]}
                continue
            if remaining(args) - reserve < 15:
                mixprec[c["name"]] = {"error": "not run: the time budget (--deadline) is spent"}
                continue
            res = run_module(args, work, c)
            mixprec[c["name"]] = res
            log(f"mixprec {c['name']}: " +
                (res["error"] if "error" in res else
                 f"{res['median_ms']:.3f} ms median ({res['runs']} runs, {res['backend']}), "
                 f"{tflops(c, res['median_ms']):.2f} TFLOP/s"))
        if torch_ok:
            todo = [c for c in group
                    if not mixprec[c["name"]].get("error", "").startswith("not run")]
            if todo:
                results, note = run_torch(args, work, todo, int(remaining(args) - 5))
                for r in results or []:
                    sdpa[r["name"]] = r
                if note:
                    notes.append(note)
        shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)   # outputs compared
    for c in cases:
        for who, table in (("mixprec", mixprec), ("SDPA", sdpa)):
            err = table.get(c["name"], {}).get("error")
            if err and not (who == "SDPA" and not torch_ok):
                notes.append(f"{who} {c['name']}: {err}")
        if mixprec.get(c["name"], {}).get("note"):
            notes.append(f"mixprec {c['name']}: {mixprec[c['name']]['note']}")

    rows = []
    for c in cases:
        m, t = mixprec.get(c["name"], {}), sdpa.get(c["name"], {})
        m_ms = m.get("median_ms") if "error" not in m else None
        t_ms = t.get("median_ms") if "error" not in t else None
        rows.append({"name": c["name"], "pass": c["pass"], "dtype": c["dtype"],
                     "head_dim": c["head_dim"], "seq": c["seq"], "batch": c["batch"],
                     "heads": c["heads"], "causal": c["causal"], "flops": c["flops"],
                     "calls": (c.get("stats") or {}).get("routines"),
                     "mixprec_ms": m_ms, "mixprec_min_ms": m.get("min_ms") if m_ms else None,
                     "mixprec_tflops": tflops(c, m_ms), "mixprec_backend": m.get("backend"),
                     "sdpa_ms": t_ms, "sdpa_tflops": tflops(c, t_ms),
                     "ratio": t_ms / m_ms if m_ms and t_ms else None,
                     "max_rel": t.get("max_rel"), "max_rel_output": t.get("max_rel_output"),
                     "mixprec_error": m.get("error"), "sdpa_error": t.get("error")})
    checked = [r["max_rel"] for r in rows if r["max_rel"] is not None]
    check_ok = all(v <= CHECK_BOUND for v in checked)
    if not checked:
        check_line = ("check: mixprec vs SDPA outputs: pending (" +
                      ("no torch" if not torch_ok else "nothing compared") + ")")
    else:
        worst = max(rows, key=lambda r: -1 if r["max_rel"] is None else r["max_rel"])
        check_line = (f"check: mixprec vs SDPA outputs, max rel diff over {len(checked)} cases: "
                      f"{worst['max_rel']:.2e} ({worst['name']} {worst['max_rel_output']}; "
                      f"bound {CHECK_BOUND:g}): {'ok' if check_ok else 'FAILED'}")
    sdpa_backend = sdpa_label(args)
    shapes = manifest["shape_set"]
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "backend": args.backend, "device": args.device, "sdpa_backend": sdpa_backend,
              "torch": next((r.get("torch") for r in sdpa.values() if r.get("torch")), None),
              "device_name": next((r.get("device_name") for r in sdpa.values()
                                   if r.get("device_name")), None),
              "manifest": {k: manifest[k] for k in ("shapes", "arch", "mixprec", "created")},
              "rows": rows, "notes": notes, "check": check_line,
              "seconds": round(time.time() - started, 1)}
    for path in filter(None, [args.json]):
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
        log(f"results written to {path}")

    print()
    print(f"attention: mixprec vs {sdpa_backend} ({report['date']}, mixprec backend "
          f"{args.backend}, device {report['device_name'] or args.device}, torch "
          f"{report['torch'] or '-'}, {report['seconds']} s)")
    print(f"shapes: {', '.join(shapes['dtypes'])}; batch x S = {shapes['tokens']} tokens "
          f"(batch = {shapes['tokens']} / S), {shapes['heads']} heads, q, k, v [B, H, S, D], "
          f"scale 1/sqrt(D); mixprec's inputs in buffers of its backend (device memory on "
          f"the GPU), as SDPA's")
    print("TFLOP/s: FlashAttention's count over the median: fwd 4*B*H*S*S*D, fwd+bwd 3.5x "
          "that (bwd 2.5x), halved for causal; times are host clock around one call and its "
          "completion, for both")
    print("calls: attention routine calls in the mixprec module (compile statistics); the "
          "lowering makes one call per result read")
    if notes:
        print("notes:\n  " + "\n  ".join(notes))
    print(check_line)
    print_table(rows, torch_ok, sdpa_backend)
    # --check (the dry run): every module must run, and where SDPA ran, agree with it.
    broken = [r["name"] for r in rows if r["mixprec_error"]]
    if args.check and broken:
        print(f"check: FAILED: {len(broken)} mixprec modules did not run: {', '.join(broken)}")
    return 1 if args.check and (broken or not check_ok) else 0


def sdpa_label(args):
    return {"flash": "SDPA flash", "math": "SDPA math"}[args.sdpa_backend]


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def status(error):
    """A table cell for a failed step (the notes say why), or None."""
    if not error:
        return None
    return "not run" if error.startswith("not run") else "error"


def print_table(rows, with_sdpa, sdpa_name):
    head = ["pass", "dtype", "D", "S", "batch", "causal", "mixprec ms", "mixprec TFLOP/s"]
    if with_sdpa:
        head += [f"{sdpa_name} ms", f"{sdpa_name} TFLOP/s", "mixprec / SDPA",
                 "max rel diff vs SDPA"]
    head.append("calls")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [PASS_LABEL[r["pass"]], r["dtype"], str(r["head_dim"]), str(r["seq"]),
                 str(r["batch"]), "yes" if r["causal"] else "no",
                 status(r["mixprec_error"]) or fmt(r["mixprec_ms"], ".3f"),
                 fmt(r["mixprec_tflops"], ".1f" if (r["mixprec_tflops"] or 0) >= 1 else ".3f")]
        if with_sdpa:
            cells += [status(r["sdpa_error"]) or fmt(r["sdpa_ms"], ".3f"),
                      fmt(r["sdpa_tflops"], ".1f" if (r["sdpa_tflops"] or 0) >= 1 else ".3f"),
                      fmt(r["ratio"], ".2f") + ("x" if r["ratio"] else ""),
                      fmt(r["max_rel"], ".2e")]
        cells.append(fmt(r["calls"], "d"))
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), flush=True)


# ---------------------------------------------------------------------------
# torch (run's subprocess)
# ---------------------------------------------------------------------------

def torch_main(args):
    import statistics
    import traceback

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if args.device == "cuda" and not torch.cuda.is_available():
        print("attention_bench: error: CUDA asked for, torch.cuda.is_available() is False",
              file=sys.stderr)
        return 1
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}[args.sdpa_backend]
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}
    with open(args.cases) as f:
        cases = json.load(f)
    report = {"torch": torch.__version__, "results": [],
              "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    flat = {}

    def load(c, n):
        """Input n of case c on the device: the file's bytes, loaded once per dtype and
        head dim (every S of one reads the same bytes), viewed as [B, H, S, D]."""
        path = input_file(args.work, c, n)
        if flat.get("group") != (c["dtype"], c["head_dim"]):
            flat.clear()                         # one dtype and head dim at a time
            flat["group"] = (c["dtype"], c["head_dim"])
        if path not in flat:
            raw = torch.from_numpy(np.fromfile(path, np.int16))
            flat[path] = raw.view(tdtype[c["dtype"]]).to(args.device)
        return flat[path].view(c["batch"], c["heads"], c["seq"], c["head_dim"])

    def max_rel(got, ref):
        """max|got - ref| / max|ref| (bench/gpu_models.py's max_rel) on the device, in FP32."""
        if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(ref).all()):
            return float("inf")
        denom = float(ref.abs().max())
        diff = float((got - ref).abs().max())
        return diff / denom if denom > 0 else diff

    def time_calls(fn):
        for _ in range(args.warmup):
            fn()
        sync()
        times, total = [], 0.0
        while len(times) < args.repeat and total < args.max_seconds:
            t0 = time.perf_counter()
            fn()
            sync()
            times.append((time.perf_counter() - t0) * 1e3)
            total += times[-1] / 1e3
        return times

    for c in cases:
        res = {"name": c["name"], "torch": report["torch"], "device_name": report["device_name"]}
        try:
            q, k, v = (load(c, n) for n in ("q", "k", "v"))
            scale = 1.0 / math.sqrt(c["head_dim"])
            if c["pass"] == "fwd":
                def call():
                    with torch.no_grad():
                        return {"out": F.scaled_dot_product_attention(
                            q, k, v, is_causal=c["causal"], scale=scale)}
            else:
                dout = load(c, "dout")
                qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

                def call():
                    for t in (qg, kg, vg):
                        t.grad = None
                    out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=c["causal"],
                                                         scale=scale)
                    out.backward(dout)
                    return {"out": out.detach(), "dq": qg.grad, "dk": kg.grad, "dv": vg.grad}
            with sdpa_kernel(backend):
                t0 = time.perf_counter()
                outs = call()
                sync()
                first_ms = (time.perf_counter() - t0) * 1e3
                times = time_calls(call)
                outs = call()
            res.update({"median_ms": statistics.median(times), "min_ms": min(times),
                        "runs": len(times), "first_call_ms": first_ms})
            if args.compare:
                worst, which = None, None
                for n, t in outs.items():
                    path = os.path.join(args.work, "out", c["name"], n + ".f32")
                    if not os.path.exists(path):
                        continue
                    ref = t.float()
                    got = torch.from_numpy(np.fromfile(path, "<f4")).to(args.device)
                    rel = max_rel(got.view(ref.shape), ref)
                    if worst is None or not rel <= worst:
                        worst, which = rel, n
                res["max_rel"], res["max_rel_output"] = worst, which
            del outs
        except Exception as e:  # noqa: BLE001  (report it and go on with the rest)
            res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            traceback.print_exc()
        if args.device == "cuda":
            torch.cuda.empty_cache()
        ms = res.get("median_ms")
        print(f"[attention_bench] SDPA {c['name']}: " +
              (res["error"] if "error" in res else
               f"{ms:.3f} ms median ({res['runs']} runs), {tflops(c, ms):.2f} TFLOP/s, "
               f"max rel diff {res.get('max_rel')}"), flush=True)
        report["results"].append(res)
        write_report(args.out, report)           # so far: a time limit keeps what is done
    write_report(args.out, report)
    return 0


def write_report(path, report):
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(path + ".tmp", path)


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
    rp.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    rp.add_argument("--sdpa-backend", choices=["flash", "math"], default="flash",
                    help="torch.nn.attention.SDPBackend to time (flash on the CPU too: "
                         "PyTorch's CPU flash kernel)")
    rp.add_argument("--json")
    rp.add_argument("--warmup", type=int, default=3)
    rp.add_argument("--repeat", type=int, default=30)
    rp.add_argument("--max-seconds", type=float, default=1.0)
    rp.add_argument("--module-timeout", type=int, default=60)
    rp.add_argument("--no-compare", dest="check_outputs", action="store_false",
                    help="write no mixprec outputs and compare none with SDPA's")
    rp.add_argument("--no-torch", action="store_true", help="leave the SDPA columns out")
    rp.add_argument("--deadline", type=float, default=0,
                    help="Unix time by which the table must be printed (steps are shortened)")
    rp.add_argument("--check", action="store_true",
                    help=f"exit 1 unless every mixprec output is within {CHECK_BOUND:g} "
                         f"(max rel) of SDPA's")
    tp = sub.add_parser("torch")
    tp.add_argument("--work", required=True)
    tp.add_argument("--cases", required=True)
    tp.add_argument("--device", choices=["cuda", "cpu"], required=True)
    tp.add_argument("--sdpa-backend", choices=["flash", "math"], default="flash")
    tp.add_argument("--out", required=True)
    tp.add_argument("--warmup", type=int, default=5)
    tp.add_argument("--repeat", type=int, default=50)
    tp.add_argument("--max-seconds", type=float, default=1.5)
    tp.add_argument("--compare", action="store_true")
    args = ap.parse_args(argv)
    return {"prepare": prepare, "run": run, "torch": torch_main}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
