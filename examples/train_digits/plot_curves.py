#!/usr/bin/env python3
"""Plots the training curves of `mixprec train --csv` runs as one SVG.

Run (Python 3 standard library only, no numpy or matplotlib):

  python3 plot_curves.py --out curves.svg fp32=a.csv bf16=b.csv fp16=c.csv

Each LABEL=FILE.csv is one run (CSV header: step,epoch,loss,loss_scale,
skipped,grad_norm,test_loss,test_accuracy). The SVG (written atomically:
a temporary file in the same folder, then os.replace) has two panels: the
training loss as the mean over each epoch (one point per epoch, at the
epoch's last step; skipped steps left out) on a log axis, and the test
accuracy at each evaluation step. Stdout gets a markdown table: per run,
the mean train loss and test accuracy of some epochs (--epochs), then the
final test accuracy and the share of steps applied (skipped == 0).
"""
import argparse
import csv
import math
import os
import tempfile
from xml.sax.saxutils import escape

COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]  # Okabe-Ito
DASHES = ["none", "9 4", "2 3", "10 3 2 3", "5 5", "1 2"]
MARKERS = ["circle", "square", "diamond", "triangle"]
W, H, TOP = 1100, 470, 90            # canvas; space above the panels (title, legend)
PW, PH = 430, 300                    # one panel's plot area
PANELS_X = [90, 90 + PW + 120]       # left edge of each plot area


def read_run(path):
    """Returns the run's rows as dicts with numbers (None where a cell is empty)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) else None) for k, v in r.items()})
    if not rows:
        raise SystemExit(f"plot_curves: {path}: no rows")
    return rows


def epoch_losses(rows):
    """{epoch: (last step of the epoch, mean finite loss of its applied steps)}."""
    acc = {}
    for r in rows:
        e = int(r["epoch"])
        last, total, n = acc.get(e, (0, 0.0, 0))
        if r["skipped"] == 0 and math.isfinite(r["loss"]):
            total, n = total + r["loss"], n + 1
        acc[e] = (max(last, int(r["step"])), total, n)
    return {e: (s, t / n) for e, (s, t, n) in sorted(acc.items()) if n}


def evaluations(rows):
    """[(step, epoch, test accuracy in %)] of the evaluation steps."""
    return [(int(r["step"]), int(r["epoch"]), 100.0 * r["test_accuracy"])
            for r in rows if r.get("test_accuracy") is not None]


def nice_step(span, count=5):
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def linear_ticks(lo, hi):
    step = nice_step(hi - lo)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo, hi):
    """Decades, plus 2x and 5x when the range spans fewer than three decades."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1,) if b - a >= 3 else (1, 2, 5)
    return [m * 10 ** k for k in range(a, b + 1) for m in mults if lo <= m * 10 ** k <= hi]


def fmt(v):
    return f"{v:g}"


def marker(kind, x, y, colour):
    s = 3.5
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{s}" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s}" height="{2 * s}" fill="{colour}"/>'
    if kind == "diamond":
        pts = [(x, y - s * 1.4), (x + s * 1.4, y), (x, y + s * 1.4), (x - s * 1.4, y)]
    else:
        pts = [(x, y - s * 1.3), (x + s * 1.2, y + s), (x - s * 1.2, y + s)]
    return '<polygon points="%s" fill="%s"/>' % (" ".join(f"{px:.1f},{py:.1f}" for px, py in pts), colour)


def panel(x0, title, xlabel, ylabel, xmax, ylo, yhi, log, series):
    """SVG of one panel: frame, grid, ticks, labels and a polyline per series.

    series: [(points [(x, y)], style index)]."""
    fy = (lambda v: math.log10(v)) if log else (lambda v: v)
    sx = lambda v: x0 + PW * v / xmax
    sy = lambda v: TOP + PH - PH * (fy(v) - fy(ylo)) / (fy(yhi) - fy(ylo))
    out = [f'<text x="{x0 + PW / 2}" y="{TOP - 8}" class="ptitle">{escape(title)}</text>']
    for t in linear_ticks(0, xmax):
        out.append(f'<line x1="{sx(t):.1f}" y1="{TOP}" x2="{sx(t):.1f}" y2="{TOP + PH}" class="grid"/>'
                   f'<text x="{sx(t):.1f}" y="{TOP + PH + 18}" class="xt">{fmt(t)}</text>')
    for t in (log_ticks(ylo, yhi) if log else linear_ticks(ylo, yhi)):
        out.append(f'<line x1="{x0}" y1="{sy(t):.1f}" x2="{x0 + PW}" y2="{sy(t):.1f}" class="grid"/>'
                   f'<text x="{x0 - 6}" y="{sy(t) + 4:.1f}" class="yt">{fmt(t)}</text>')
    out.append(f'<rect x="{x0}" y="{TOP}" width="{PW}" height="{PH}" class="frame"/>')
    out.append(f'<text x="{x0 + PW / 2}" y="{TOP + PH + 42}" class="label">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate({x0 - 55},{TOP + PH / 2}) rotate(-90)" '
               f'class="label">{escape(ylabel)}</text>')
    for points, i, n in series:
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        width = 1.5 + 1.5 * (n - 1 - i) / max(n - 1, 1)   # earlier runs wider, drawn below
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="{width:.2f}" '
                   f'stroke-dasharray="{dash}" stroke-linejoin="round"/>')
        out.extend(marker(MARKERS[i % len(MARKERS)], sx(x), sy(y), colour) for x, y in points)
    return out


def render(runs, title):
    """runs: [(label, rows)]. Returns the SVG text."""
    n = len(runs)
    losses = [epoch_losses(rows) for _, rows in runs]
    evals = [evaluations(rows) for _, rows in runs]
    xmax = max(int(rows[-1]["step"]) for _, rows in runs)
    per_epoch = max(int(r["step"]) for r in runs[0][1] if r["epoch"] == 1)
    all_loss = [v for l in losses for _, v in l.values()]
    lo = 10 ** (math.floor(2 * math.log10(min(all_loss))) / 2)   # half-decade bounds
    hi = 10 ** (math.ceil(2 * math.log10(max(all_loss))) / 2)
    accs = [a for e in evals for _, _, a in e] or [100.0]
    astep = nice_step(max(100.0 - min(accs), 1.0))
    alo = max(0.0, math.floor(min(accs) / astep - 1) * astep)   # a tick step of room below
    xlabel = f"step ({per_epoch} per epoch)"
    body = panel(PANELS_X[0], "Training loss (mean over each epoch)", xlabel, "train loss (log scale)",
                 xmax, lo, hi, True,
                 [([(s, v) for s, v in l.values()], i, n) for i, l in enumerate(losses)])
    body += panel(PANELS_X[1], "Test accuracy", xlabel, "test accuracy (%)", xmax, alo, 100.0, False,
                  [([(s, a) for s, _, a in e], i, n) for i, e in enumerate(evals)])
    legend, lx = [], W / 2 - 110 * n / 2
    for i, (label, _) in enumerate(runs):
        x, colour = lx + 110 * i, COLOURS[i % len(COLOURS)]
        legend.append(f'<line x1="{x}" y1="52" x2="{x + 40}" y2="52" stroke="{colour}" stroke-width="2.5" '
                      f'stroke-dasharray="{DASHES[i % len(DASHES)]}"/>'
                      + marker(MARKERS[i % len(MARKERS)], x + 20, 52, colour)
                      + f'<text x="{x + 46}" y="56" class="legend">{escape(label)}</text>')
    style = ("text{font-family:Helvetica,Arial,sans-serif;fill:#222}"
             ".title{font-size:18px;font-weight:bold;text-anchor:middle}"
             ".ptitle{font-size:14px;text-anchor:middle}.label{font-size:13px;text-anchor:middle}"
             ".xt{font-size:11px;text-anchor:middle}.yt{font-size:11px;text-anchor:end}"
             ".legend{font-size:13px}.grid{stroke:#e4e4e4;stroke-width:1}"
             ".frame{fill:none;stroke:#444;stroke-width:1}")
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
        f"<style>{style}</style>",
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="26" class="title">{escape(title)}</text>',
        *legend, *body, "</svg>", ""])


def table(runs, epochs):
    """The markdown table (a string)."""
    lines = ["| run | epoch | mean train loss | test accuracy (%) | steps applied |",
             "|---|---|---|---|---|"]
    for label, rows in runs:
        losses = epoch_losses(rows)
        acc_at = {}
        for _, e, a in evaluations(rows):
            acc_at[e] = a                      # the epoch's last evaluation
        for e in epochs:
            if e in losses:
                acc = f"{acc_at[e]:.2f}" if e in acc_at else "–"
                lines.append(f"| {label} | {e} | {losses[e][1]:.4g} | {acc} | |")
        applied = sum(1 for r in rows if r["skipped"] == 0)
        ev = evaluations(rows)
        last_epoch = max(losses) if losses else None
        loss = f"{losses[last_epoch][1]:.4g}" if last_epoch else "–"
        acc = f"{ev[-1][2]:.2f}" if ev else "–"
        lines.append(f"| {label} | final (step {int(rows[-1]['step'])}) | {loss} | {acc} | "
                     f"{applied}/{len(rows)} ({100.0 * applied / len(rows):.1f}%) |")
    return "\n".join(lines)


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".plot_curves.", suffix=".svg", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)          # mkstemp's 0600 -> the usual mode
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", metavar="LABEL=FILE.csv")
    p.add_argument("--out", default="curves.svg", help="the SVG to write (curves.svg)")
    p.add_argument("--title", help="the figure's title")
    p.add_argument("--epochs", default="1,2,5,10,20", help="epochs in the table (1,2,5,10,20)")
    a = p.parse_args()
    runs = []
    for spec in a.runs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            p.error(f"{spec!r}: expected LABEL=FILE.csv")
        runs.append((label, read_run(path)))
    title = a.title or "mixprec train: " + " vs ".join(label for label, _ in runs)
    write_atomically(a.out, render(runs, title))
    print(table(runs, [int(e) for e in a.epochs.split(",")]))


if __name__ == "__main__":
    main()
