#!/usr/bin/env python3
"""The CPU backend on several threads (issue 27 part 3): for every model of
the given gen_models.py directories and each precision, compile to .mpk and
run it on the CPU backend with its kernels on 1 thread and on 2 and 3 with
MIXPREC_CPU_PARALLEL_POINTS=1 (every kernel with two or more units of work
split over the threads, the smallest included), and with --threads 2 (the
CLI's session option); every output must be the same bytes. And, from
MIXPREC_CPU_PROFILE's report, no constant (weight, bias, norm parameter)
may be decoded in a run of a module whose GEMMs all run on oneDNN: they are
packed or decoded when the session is created. Element-wise kernels, row reductions
and Amax (FP8 modules) compute each point, row or slice alone, so the split
may not change a bit.

Usage:
    run_cpu_threads.py --mixprec BIN --models DIR [--models DIR ...]
                       [--precisions fp32 bf16 fp8]

A model that does not compile at a narrow precision is skipped with its
reason; every model must compile at fp32. Prints one line per check, then
"N passed, N failed"; exits non-zero on any failure.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def decodes_in_runs(mixprec, module, out):
    """(constants decoded in runs, whether every GEMM runs on oneDNN) from
    MIXPREC_CPU_PROFILE's report of two runs."""
    env = dict(os.environ, MIXPREC_CPU_PROFILE="1")
    os.makedirs(out)
    p = subprocess.run([mixprec, "run", module, "--backend", "cpu", "--repeat", "2",
                        "--output-dir", out], capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"mixprec run {module} (profile): exit {p.returncode}: "
                           f"{p.stderr.strip()[-500:]}")
    head = [x for x in p.stderr.splitlines() if x.startswith("mixprec CPU profile:")]
    if not head:
        raise RuntimeError("no MIXPREC_CPU_PROFILE report")
    decodes = int(re.search(r"(\d+) constant\(s\) decoded in runs", head[0]).group(1))
    return decodes, "(OpenBLAS" not in p.stderr


def run(mixprec, module, out, threads, split, flag=False):
    """Outputs of `module` with the kernels on `threads` threads (through
    MIXPREC_NUM_THREADS, or --threads when `flag`) and oneDNN's GEMMs on 2
    OpenMP threads in every run: oneDNN promises the same bits run to run
    for one thread count, not across counts, so only the kernels' count
    varies (--threads sets both, to 2 here)."""
    env = dict(os.environ, OMP_NUM_THREADS="2")
    env.pop("MIXPREC_NUM_THREADS", None)
    cmd = [mixprec, "run", module, "--backend", "cpu", "--repeat", "2", "--output-dir", out]
    if flag:
        cmd += ["--threads", str(threads)]
    else:
        env["MIXPREC_NUM_THREADS"] = str(threads)
    if split:
        env["MIXPREC_CPU_PARALLEL_POINTS"] = "1"
    else:
        env.pop("MIXPREC_CPU_PARALLEL_POINTS", None)
    os.makedirs(out)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"mixprec run {module} on {threads} threads: exit {p.returncode}: "
                           f"{p.stderr.strip()[-500:]}")
    return {name: open(os.path.join(out, name), "rb").read() for name in sorted(os.listdir(out))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--models", action="append", required=True)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp8"])
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        for root in args.models:
            for name in sorted(os.listdir(root)):
                model = os.path.join(root, name, "model.onnx")
                if not os.path.isfile(model):
                    continue
                for precision in args.precisions:
                    tag = f"{name} {precision}"
                    module = os.path.join(work, f"{name}_{precision}.mpk")
                    p = subprocess.run([args.mixprec, "compile", model, "--precision", precision,
                                        "-o", module], capture_output=True, text=True)
                    if p.returncode != 0:
                        if precision == "fp32":
                            print(f"FAIL {tag}: does not compile: {p.stderr.strip()[-300:]}")
                            failed += 1
                        else:
                            print(f"skip {tag}: {p.stderr.strip()[-200:]}")
                        continue
                    try:
                        one = run(args.mixprec, module, os.path.join(work, tag + " 1"), 1, False)
                        runs = {f"{t} threads": run(args.mixprec, module,
                                                    os.path.join(work, f"{tag} {t}"), t, True)
                                for t in (2, 3)}
                        runs["--threads 2"] = run(args.mixprec, module,
                                                  os.path.join(work, f"{tag} flag"), 2, True,
                                                  flag=True)
                        for what, many in runs.items():
                            if many != one:
                                diff = [k for k in one if many.get(k) != one[k]]
                                raise RuntimeError(f"{what}: outputs differ: {diff}")
                        decodes, all_dnnl = decodes_in_runs(args.mixprec, module,
                                                            os.path.join(work, tag + " profile"))
                        if all_dnnl and decodes:
                            raise RuntimeError(f"{decodes} constants decoded in 2 runs with "
                                               "every GEMM on oneDNN")
                    except RuntimeError as e:
                        print(f"FAIL {tag}: {e}")
                        failed += 1
                        continue
                    note = ("no constant decoded in runs" if all_dnnl else
                            f"{decodes} constant decodes in 2 runs (GEMMs on OpenBLAS)")
                    print(f"ok   {tag}: {len(one)} outputs, the same bytes on 1, 2 and 3 threads; "
                          f"{note}")
                    passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
