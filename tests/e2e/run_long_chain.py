#!/usr/bin/env python3
"""A 50,000-op element-wise chain through --mp-fuse and `mixprec compile`.

Fusion was quadratic in the chain's length (10,000 ops: 1.2 GB, 50,000:
out of memory). Each command here runs under a watchdog that kills it once
its resident memory passes --max-rss-mib (or after --time-limit seconds),
so the quadratic code fails in seconds instead of filling the machine.
Then the result is checked: the chain is split into kernels of at most
1024 ops (conversion/GraphToKernel/Fuse.cpp, kMaxKernelOps), in order, and the module
computes what numpy computes.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

KERNEL_OPS = 1024  # kMaxKernelOps in conversion/GraphToKernel/Fuse.cpp


def rss_bytes(pid):
    """Current resident set size of `pid`, 0 if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_bounded(cmd, max_rss, time_limit, stdout_path, stderr_path):
    """Runs `cmd`, killing it past `max_rss` bytes or `time_limit` seconds.

    Returns (exit code, peak RSS in bytes, seconds); fails the test if a
    limit was hit."""
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - start
            rss = rss_bytes(proc.pid)
            if rss > max_rss or elapsed > time_limit:
                proc.kill()
                os.wait4(proc.pid, 0)
                sys.exit("FAIL: %s: killed after %.1f s at %d MiB resident (limits: %d MiB, %d s)"
                         % (" ".join(cmd), elapsed, rss >> 20, max_rss >> 20, time_limit))
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss * 1024
    elapsed = time.monotonic() - start
    if peak > max_rss:
        sys.exit("FAIL: %s: peak resident memory %d MiB, limit %d MiB"
                 % (" ".join(cmd), peak >> 20, max_rss >> 20))
    return proc.returncode, peak, elapsed


def expect_ok(code, cmd, stderr_path):
    if code != 0:
        with open(stderr_path, errors="replace") as f:
            tail = f.read()[-2000:]
        sys.exit("FAIL: %s exited %d:\n%s" % (" ".join(cmd), code, tail))


def check_fusions(fused_path, n):
    """The fused IR holds the chain as consecutive fusions of KERNEL_OPS ops."""
    sizes, names = [], []
    with open(fused_path) as f:
        for line in f:
            if "= mp.fusion " not in line:
                continue
            m = re.search(r'mp\.fusion (\w+)\(.*\{ops = \[([^\]]*)\]', line)
            if not m or m.group(1) != "elementwise":
                sys.exit("FAIL: unexpected fusion: " + line[:200])
            ops = re.findall(r'"([^"]*)"', m.group(2))
            sizes.append(len(ops))
            names.extend(ops)
    expected = [KERNEL_OPS] * (n // KERNEL_OPS) + ([n % KERNEL_OPS] if n % KERNEL_OPS else [])
    if sizes != expected:
        sys.exit("FAIL: fusion sizes %s..., expected %s..." % (sizes[:5], expected[:5]))
    if names != ["n%d" % i for i in range(n)]:
        sys.exit("FAIL: the fusions do not hold n0..n%d in order" % (n - 1))
    return len(sizes)


def reference(x, n):
    """The chain in numpy, float32 (ops as bench/gen_chain.py writes them)."""
    h = x
    for i in range(n):
        k = i % 4
        if k == 0:
            h = h + np.float32(0.5)
        elif k == 1:
            h = h * np.float32(0.9)
        elif k == 2:
            h = np.maximum(h, np.float32(0))
        else:
            h = np.tanh(h)
    return h


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixprec", required=True)
    parser.add_argument("--mixprec-opt", required=True)
    parser.add_argument("--gen", required=True, help="bench/gen_chain.py")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--ops", type=int, default=50000)
    parser.add_argument("--max-rss-mib", type=int, default=1024)
    parser.add_argument("--time-limit", type=int, default=120, help="seconds per command")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    def path(name):
        return os.path.join(args.workdir, name)

    max_rss = args.max_rss_mib << 20
    n = args.ops

    subprocess.run([sys.executable, args.gen, str(n), path("chain.mlir")], check=True)

    cmd = [args.mixprec_opt, "--mp-fuse", path("chain.mlir"), "-o", path("fused.mlir")]
    code, peak, secs = run_bounded(cmd, max_rss, args.time_limit, path("opt.out"), path("opt.err"))
    expect_ok(code, cmd, path("opt.err"))
    kernels = check_fusions(path("fused.mlir"), n)
    print("mixprec-opt --mp-fuse, %d ops: %.2f s, peak RSS %d MiB, %d fusions"
          % (n, secs, peak >> 20, kernels))

    cmd = [args.mixprec, "compile", path("chain.mlir"), "--precision", "fp32",
           "-o", path("chain.mpk")]
    code, peak, secs = run_bounded(cmd, max_rss, args.time_limit, path("compile.out"),
                                   path("compile.err"))
    expect_ok(code, cmd, path("compile.err"))
    with open(path("compile.err")) as f:
        stats = json.loads(f.read().strip().splitlines()[-1])
    if stats["kernels"] != kernels:
        sys.exit("FAIL: the module has %d kernels, expected %d" % (stats["kernels"], kernels))
    print("mixprec compile -o chain.mpk, %d ops: %.2f s, peak RSS %d MiB, %d kernels"
          % (n, secs, peak >> 20, stats["kernels"]))

    x = np.random.RandomState(0).randn(64, 64).astype(np.float32)
    np.save(path("x.npy"), x)
    cmd = [args.mixprec, "run", path("chain.mpk"), "--backend", "cpu", "--input",
           "x=" + path("x.npy"), "--output-dir", path("out")]
    code, _, _ = run_bounded(cmd, max_rss, args.time_limit, path("run.out"), path("run.err"))
    expect_ok(code, cmd, path("run.err"))
    got, want = np.load(path("out/y.npy")), reference(x, n)
    err = float(np.abs(got - want).max())
    if not err <= 1e-6:
        sys.exit("FAIL: module output differs from numpy by %g" % err)
    print("module output matches numpy (max abs diff %g)" % err)
    print("PASS")


if __name__ == "__main__":
    main()
