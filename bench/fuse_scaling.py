#!/usr/bin/env python3
"""Time and peak memory of --mp-fuse and `mixprec compile` on long chains.

For each N, writes an N-op element-wise chain (bench/gen_chain.py) and
measures, as whole processes, `mixprec-opt --mp-fuse` and `mixprec compile
--precision fp32 -o chain.mpk`: wall time (median of --repeat runs) and peak
resident memory (getrusage of the child). A run is killed past --max-rss-gib
or --time-limit seconds and reported as such. Give --before-mixprec and
--before-mixprec-opt (binaries built from an older commit) to add their
columns. Prints a Markdown table (bench/README.md, "Long element-wise
chains").

  python3 bench/fuse_scaling.py --mixprec build/bin/mixprec \\
      --mixprec-opt build/bin/mixprec-opt [--sizes 10000,20000,50000,100000]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


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


def measure(cmd, max_rss, time_limit):
    """Runs `cmd` once: (seconds, peak RSS bytes, None) or (s, rss, why killed)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        elapsed = time.monotonic() - start
        if pid:
            break
        rss = rss_bytes(proc.pid)
        if rss > max_rss or elapsed > time_limit:
            proc.kill()
            os.wait4(proc.pid, 0)
            why = "memory" if rss > max_rss else "time"
            return elapsed, rss, why
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("%s exited %d" % (" ".join(cmd), proc.returncode))
    return elapsed, usage.ru_maxrss * 1024, None


def cell(runs, max_rss, time_limit):
    """A table cell: 'median s / peak MB', or what stopped the run."""
    secs = statistics.median(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    why = next((r[2] for r in runs if r[2]), None)
    if why == "memory":
        return "killed past %d MB after %.1f s" % (max_rss // 10**6, secs)
    if why == "time":
        return "killed after %d s (%d MB)" % (time_limit, peak // 10**6)
    return "%.2f s / %d MB" % (secs, peak // 10**6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixprec", required=True)
    parser.add_argument("--mixprec-opt", required=True)
    parser.add_argument("--before-mixprec", help="mixprec built from the older commit")
    parser.add_argument("--before-mixprec-opt", help="mixprec-opt built from the older commit")
    parser.add_argument("--sizes", default="10000,20000,50000,100000")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (before: 1)")
    parser.add_argument("--max-rss-gib", type=float, default=6.0)
    parser.add_argument("--time-limit", type=int, default=300, help="seconds per run")
    args = parser.parse_args()
    max_rss = int(args.max_rss_gib * 2**30)

    columns = []  # (title, binary, argv after the binary, runs)
    if args.before_mixprec_opt:
        columns.append(("`--mp-fuse` before", args.before_mixprec_opt, ["--mp-fuse"], 1))
    columns.append(("`--mp-fuse` after", args.mixprec_opt, ["--mp-fuse"], args.repeat))
    if args.before_mixprec:
        columns.append(("`compile -o x.mpk` before", args.before_mixprec, ["compile"], 1))
    columns.append(("`compile -o x.mpk` after", args.mixprec, ["compile"], args.repeat))

    print("| N | " + " | ".join(c[0] for c in columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",")]:
            chain = os.path.join(tmp, "chain.mlir")
            subprocess.run([sys.executable, os.path.join(HERE, "gen_chain.py"), str(n), chain],
                           check=True)
            cells = []
            for _, binary, argv, repeat in columns:
                if argv == ["compile"]:
                    cmd = [binary, "compile", chain, "--precision", "fp32",
                           "-o", os.path.join(tmp, "chain.mpk")]
                else:
                    cmd = [binary] + argv + [chain, "-o", os.devnull]
                runs = []
                for _ in range(repeat):
                    runs.append(measure(cmd, max_rss, args.time_limit))
                    if runs[-1][2]:
                        break
                cells.append(cell(runs, max_rss, args.time_limit))
            print("| %d | %s |" % (n, " | ".join(cells)), flush=True)


if __name__ == "__main__":
    main()
