#!/usr/bin/env python3
"""`mixprec report-run` end to end: the visual report of a training run.

Usage:
    run_report.py --mixprec BIN --work DIR [--png-out PATH] [--timeout S]

Writes synthetic training CSVs (what `mixprec train --csv` writes) and a
metrics JSON (what `train --metrics` writes), renders them and checks the
page, one line per check, then exactly "N passed, N failed":

  page-*      fp16.csv (3 data-order seeds, an FP32 run beside it, skipped
              steps, evaluation rows, a nan and an inf, the gradient
              columns, an unknown column) and bf16.csv (one seed, its
              columns in another order) with the metrics: every chart id
              is there, each chart an <svg> whose first child is a <title>;
              the loss chart has a mean line and a min..max band per
              seeded group, a dashed FP32 line and a dot per evaluation;
              the loss-scale chart a stepwise line and a red tick per
              skipped step; the gradient-error chart a line per parameter
              with the worst one named; the memory chart a segment per part
              and the FP32 bar; the metrics table the verdict, the warning
              and "not measured" for what the JSON leaves null; every op of
              the graph a box coloured by its dtype (one colour per dtype
              class, the seven classes in the legend); text from the inputs
              escaped; no nan or inf in a coordinate; no script, no
              external reference.
  csv-grad    without the metrics, the gradient error is drawn from the CSV's
              grad_rel_l2_max column.
  minimal     step,loss alone, a header alone, one row: a page with the
              notes ("not measured", "no gradient comparison in this run").
  browser     Chromium (chromium-headless-shell or chromium, headless)
              renders the page: a PNG of the window size with many colours,
              and its DOM holds every chart id. Without Chromium: a skip
              line, neither passed nor failed. --png-out copies the PNG.
  err-*       a missing CSV, a bad number (file:line and column), a CSV
              without a loss column, malformed JSON (the file and
              llvm::json's message), -o over an input (a CSV; the JSON by
              a symbolic link): one error line, exit 1, no output written
              and the inputs unchanged; no -o: a usage error, exit 2.
"""

import argparse
import json
import math
import os
import re
import shutil
import struct
import sys
import zlib
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure, run_cmd  # noqa: E402

CHART_IDS = ["loss-curves", "loss-scale", "grad-norm", "grad-error", "memory", "metrics",
             "op-graph"]
SVG_CHARTS = ["loss-curves", "loss-scale", "grad-norm", "grad-error", "memory", "op-graph"]
STEPS = 120
EVAL_EVERY = 30
VERDICT = "no difference detected at this N"
WARNING = "<b>fewer than 95% of steps applied</b>"
WINDOW = (1400, 3000)
# The dtype classes of the op graph (RunReport.cpp), by the slug on each box.
DTYPE_SLUGS = {"f32": "f32", "tf32": "tf32", "bf16": "bf16", "f16": "f16",
               "f8E4M3FN": "f8E4M3FN", "f8E5M2": "f8E5M2", "i64": "other", "": "other"}
LEGEND_LABELS = ["f32", "tf32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "integer/other"]
COORD_ATTRS = {"x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "width", "height", "d",
               "points", "viewbox", "transform"}


#===------------------------------------------------------------------------===#
# Inputs
#===------------------------------------------------------------------------===#

def skipped_steps(seed_index):
    """The steps a seed skips: different per seed, far apart."""
    return {7 + 20 * seed_index, 64 + 11 * seed_index}


def write_csv(path, seeds, fp32, grad, order=None):
    """A training CSV: loss decaying per seed, dynamic loss scale halving on
    each skipped step (its loss inf, its grad norm nan), evaluations every
    EVAL_EVERY steps; `order` permutes the columns. Returns the columns."""
    cols = (["seed"] if len(seeds) > 1 else []) + [
        "step", "epoch", "loss", "loss_scale", "skipped", "grad_norm", "test_loss",
        "test_accuracy"]
    if fp32:
        cols += ["fp32_loss", "fp32_skipped", "fp32_test_loss", "fp32_test_accuracy"]
    if grad:
        cols += ["grad_rel_l2_max", "grad_cosine_min"]
    cols += ["wall_ms"]  # a column the report does not know
    if order:
        cols = order(cols)
    lines = [",".join(cols)]
    for k, seed in enumerate(seeds):
        scale = 65536.0
        for step in range(1, STEPS + 1):
            skipped = step in skipped_steps(k)
            if skipped:
                scale /= 2
            elif step % 50 == 0:
                scale *= 2
            loss = 2.3 * math.exp(-step / 30) + 0.05 + 0.01 * k + 0.02 * math.sin(step + k)
            evaluation = step % EVAL_EVERY == 0
            cell = {
                "seed": str(seed), "step": str(step), "epoch": str((step - 1) // 40 + 1),
                "loss": "inf" if skipped else ("nan" if (k, step) == (0, 100) else f"{loss:.9g}"),
                "loss_scale": f"{scale:.9g}", "skipped": "1" if skipped else "0",
                "grad_norm": "nan" if skipped else f"{1 / math.sqrt(step):.9g}",
                "test_loss": f"{loss * 1.1:.9g}" if evaluation else "",
                "test_accuracy": f"{1 - loss / 3:.9g}" if evaluation else "",
                "fp32_loss": f"{loss * 0.97:.9g}", "fp32_skipped": "0",
                "fp32_test_loss": f"{loss * 1.05:.9g}" if evaluation else "",
                "fp32_test_accuracy": f"{1 - loss / 3.1:.9g}" if evaluation else "",
                "grad_rel_l2_max": f"{1e-3 * (1 + step / 60):.9g}" if step % 20 == 0 else "",
                "grad_cosine_min": "0.99998" if step % 20 == 0 else "",
                "wall_ms": "12.5",
            }
            lines.append(",".join(cell[c] for c in cols))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return cols


GRAPH_NODES = [
    (0, "x", "input", "f32"), (1, "fc1", "mp.linear", "f16"), (2, "relu", "mp.relu", "f16"),
    (3, "fc2", "mp.linear", "bf16"), (4, "softmax<script>alert(1)</script>", "mp.softmax", "f32"),
    (5, "q_proj", "mp.scaled_matmul", "f8E4M3FN"), (6, "g_proj", "mp.scaled_matmul", "f8E5M2"),
    (7, "indices", "mp.gather", "i64"), (8, "t_mm", "mp.matmul", "tf32"),
    (9, "loss", "mp.cross_entropy", "")]
# Valid distinct edges, then a duplicate and one naming no node.
GRAPH_EDGES = [[0, 1], [1, 2], [2, 3], [3, 4], [0, 5], [5, 6], [6, 4], [7, 8], [8, 4], [4, 9]]
GRAPH_BAD_EDGES = [[0, 1], [0, 99]]
PARAMS = {"fc1.weight": 0.003, "fc1.bias": 0.001, "fc2.weight": 0.02, "fc2.bias": 0.0005}


def write_metrics(path):
    seeds = [7, 8, 9]
    m = {
        "mixprec_run_metrics": 1, "model": "examples/train_digits/mlp.onnx",
        "precision": "fp16", "compare": "fp32", "backend": "cpu", "seeds": seeds,
        "batch": 32, "steps": STEPS,
        "throughput": {"samples_per_s": 5000.0, "tokens_per_s": None,
                       "fp32_samples_per_s": 4000.0, "ratio_to_fp32": 1.25,
                       "fp32_source": "compare"},
        "memory": {"weights": 1000, "master_weights": 2000, "optimizer_state": 2000,
                   "gradients": 2000, "peak_activations": 3000, "total": 10000,
                   "fp32_total": 12000, "ratio_to_fp32": 0.83},
        "metric_difference": {"metric": "test_accuracy", "precision_mean": 0.97,
                              "precision_sd": 0.004, "fp32_mean": 0.975, "fp32_sd": 0.003,
                              "difference": -0.005, "ci95": [-0.011, 0.001], "df": 7.4,
                              "n": 5, "verdict": VERDICT},
        "applied_steps": {"applied": 354, "total": 360, "rate": 0.98333, "warning": WARNING},
        "mfu": {"flops_per_step": 1.2e8, "achieved_flops_per_s": 3e9,
                "peak_flops_per_s": 5e10,
                "peak_source": "OpenBLAS SGEMM measured at start (CPU)", "mfu": 0.06},
        "ensemble": {p: {"test_loss": {"mean": 0.1, "sd": 0.01, "values": [0.09, 0.1, 0.11]},
                         "test_accuracy": {"mean": 0.97, "sd": 0.004,
                                           "values": [0.966, 0.97, 0.974]}}
                     for p in ("fp16", "fp32")},
        "gradient_comparison": [
            {"seed": s, "step": st, "params": [
                {"name": name, "rel_l2": base * (1 + st / 100) * (1 + 0.1 * (s - 7)),
                 "cosine": 1 - base, "zero_fraction": 0.01, "fp32_zero_fraction": 0.01,
                 "drift": 0.0002} for name, base in PARAMS.items()]}
            for s in seeds for st in (20, 60, 100)],
        "graph": {"nodes": [{"id": i, "name": n, "op": op, "dtype": dt}
                            for i, n, op, dt in GRAPH_NODES],
                  "edges": GRAPH_EDGES + GRAPH_BAD_EDGES},
    }
    with open(path, "w") as f:
        json.dump(m, f, indent=1)


#===------------------------------------------------------------------------===#
# The page
#===------------------------------------------------------------------------===#

class Page(HTMLParser):
    """The elements of a page, each with its attributes, parent, the ids
    of the elements it is in, and its text."""
    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.stack = []
        self.by_id = {}
        self.feed(text)
        self.close()

    def _record(self, tag, attrs):
        rec = {"tag": tag, "attrs": dict(attrs), "parent": self.stack[-1] if self.stack else None,
               "ids": [e["attrs"]["id"] for e in self.stack if "id" in e["attrs"]],
               "text": ""}
        self.elements.append(rec)
        if "id" in rec["attrs"]:
            self.by_id.setdefault(rec["attrs"]["id"], rec)
        return rec

    def handle_starttag(self, tag, attrs):
        rec = self._record(tag, attrs)
        if tag not in self.VOID:
            self.stack.append(rec)

    def handle_startendtag(self, tag, attrs):
        self._record(tag, attrs)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        for rec in self.stack:
            rec["text"] += data

    def inside(self, element_id, tag=None, cls=None):
        """The elements within the element `element_id` (itself included)."""
        out = []
        for e in self.elements:
            if element_id not in e["ids"] and e["attrs"].get("id") != element_id:
                continue
            if tag and e["tag"] != tag:
                continue
            if cls and cls not in e["attrs"].get("class", "").split():
                continue
            out.append(e)
        return out

    def children(self, rec, tag=None):
        return [e for e in self.elements if e["parent"] is rec and (not tag or e["tag"] == tag)]


def path_numbers(d):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]


def check_common(tally, label, page, text):
    """Checks every page passes: ids, titles, coordinates, no script."""
    missing = [i for i in CHART_IDS if i not in page.by_id]
    tally.report(not missing, f"{label}: every chart id", f"missing {missing}" if missing else "")
    bad_titles = []
    for cid in SVG_CHARTS:
        rec = page.by_id.get(cid)
        if rec is None or rec["tag"] != "svg":
            continue
        kids = page.children(rec)
        if not kids or kids[0]["tag"] != "title" or not kids[0]["text"].strip():
            bad_titles.append(cid)
    tally.report(not bad_titles, f"{label}: each svg chart starts with a <title>",
                 f"without: {bad_titles}" if bad_titles else "")
    bad = []
    for e in page.elements:
        in_svg = e["tag"] == "svg" or any(page.by_id.get(i, {}).get("tag") == "svg"
                                          for i in e["ids"])
        if not in_svg:
            continue
        for name, value in e["attrs"].items():
            if name in COORD_ATTRS and value is not None and re.search(r"nan|inf", value, re.I):
                bad.append(f"{e['tag']} {name}={value[:60]}")
            if name == "d" and value is not None:
                if not all(math.isfinite(v) for v in path_numbers(value)):
                    bad.append(f"{e['tag']} d not finite")
    tally.report(not bad, f"{label}: no nan or inf in an SVG coordinate", "; ".join(bad[:3]))
    scripts = [e for e in page.elements
               if e["tag"] in ("script", "link", "img", "iframe", "object")]
    handlers = [(e["tag"], n) for e in page.elements for n in e["attrs"] if n.startswith("on")]
    refs = [(e["tag"], n, v) for e in page.elements for n, v in e["attrs"].items()
            if n in ("src", "href", "xlink:href") or (v and "url(" in v and "url(#" not in v)]
    external = re.findall(r"https?://(?!www\.w3\.org/2000/svg\")[^\s\"'<>)]+", text)
    imports = "@import" in text or "@font-face" in text
    tally.report(not (scripts or handlers or refs or external or imports),
                 f"{label}: self-contained (no script, no external reference)",
                 f"{scripts[:1]} {handlers[:1]} {refs[:1]} {external[:1]}" if
                 (scripts or handlers or refs or external or imports) else "")


def lines_with_points(page, cid, minimum=2):
    """The <path class="line"> of a chart with at least `minimum` points."""
    out = []
    for e in page.inside(cid, "path", "line"):
        nums = path_numbers(e["attrs"].get("d", ""))
        if len(nums) >= 2 * minimum or ("H" in e["attrs"].get("d", "") and len(nums) >= 3):
            out.append(e)
    return out


def check_full_page(tally, page, text):
    check_common(tally, "page", page, text)
    # Loss: fp16 mean + its FP32 line, bf16's line; bands for the seeds;
    # a dot per evaluation (fp16 test, fp16 FP32 test, bf16 test).
    lines = lines_with_points(page, "loss-curves", 10)
    dashed = [e for e in lines if "stroke-dasharray" in e["attrs"]]
    bands = page.inside("loss-curves", "path", "band")
    dots = page.inside("loss-curves", "circle", "point")
    evals = STEPS // EVAL_EVERY
    tally.report(len(lines) == 3 and len(dashed) == 1 and len(bands) >= 2 and
                 len(dots) == 3 * evals,
                 "page-loss: lines, dashed FP32, seed bands, evaluation dots",
                 f"{len(lines)} lines, {len(dashed)} dashed, {len(bands)} bands, {len(dots)} dots")
    legend = page.inside("loss-curves", "g", "legend")
    legend_text = legend[0]["text"] if legend else ""
    tally.report("fp16 loss (mean of 3 seeds)" in legend_text and "bf16 loss" in legend_text,
                 "page-loss: groups labelled (the metrics' precision; the file stem)",
                 legend_text[:120])
    # Loss scale: stepwise lines; a red tick per skipped step and group.
    scale_lines = lines_with_points(page, "loss-scale", 2)
    stepwise = [e for e in scale_lines if "H" in e["attrs"]["d"] and "V" in e["attrs"]["d"]]
    ticks = page.inside("loss-scale", "line", "tick")
    expected = len(set().union(*(skipped_steps(k) for k in range(3)))) + len(skipped_steps(0))
    tally.report(len(stepwise) == 4 and len(ticks) == expected,
                 "page-loss-scale: a stepwise line per seed, a tick per skipped step",
                 f"{len(stepwise)} stepwise lines, {len(ticks)} ticks (expected {expected})")
    caption = next((e for e in page.elements if e["tag"] == "p" and
                    "steps skipped" in e["text"]), None)
    n16 = sum(len(skipped_steps(k)) for k in range(3))
    tally.report(caption is not None and f"fp16: {n16} of {3 * STEPS} steps skipped" in
                 caption["text"], "page-loss-scale: skipped steps counted",
                 caption["text"][-160:] if caption else "no caption")
    # Gradient norm.
    norm_lines = lines_with_points(page, "grad-norm", 10)
    tally.report(len(norm_lines) == 2, "page-grad-norm: a line per group",
                 f"{len(norm_lines)} lines")
    # Gradient error: a line per parameter, the worst named.
    err_lines = lines_with_points(page, "grad-error", 3)
    worst = max(PARAMS, key=PARAMS.get)
    texts = " ".join(e["text"] for e in page.inside("grad-error", "text"))
    table = page.by_id.get("grad-error-table")
    first_row = table and [e for e in page.inside("grad-error-table", "td")][:1]
    tally.report(len(err_lines) == len(PARAMS) and f"worst: {worst}" in texts and
                 first_row and first_row[0]["text"] == worst,
                 "page-grad-error: a line per parameter, the worst marked and first",
                 f"{len(err_lines)} lines; texts {texts[:80]!r}")
    # Memory: a segment per part, and the FP32 bar.
    segments = page.inside("memory", "rect", "segment")
    tally.report(page.by_id["memory"]["tag"] == "svg" and len(segments) == 6,
                 "page-memory: five parts stacked, and the FP32 total", f"{len(segments)} bars")
    # The metrics table.
    table = page.by_id.get("metrics")
    rows = {e["attrs"].get("id"): e["text"] for e in page.inside("metrics", "tr")}
    ok = (table is not None and table["tag"] == "table" and VERDICT in table["text"] and
          WARNING in rows.get("metric-applied", "") and
          "not measured" in rows.get("metric-throughput", "") and
          "1.25" in rows.get("metric-throughput", "") and
          "0.83" in rows.get("metric-memory", "") and
          "-0.011" in rows.get("metric-difference", "") and
          "OpenBLAS SGEMM" in rows.get("metric-mfu", ""))
    tally.report(ok, "page-metrics: the five metrics, the verdict, the warning, not measured",
                 "" if ok else repr(rows)[:300])
    tally.report(WARNING not in text and "&lt;b&gt;fewer" in text and
                 not any(e["tag"] == "b" and "fewer" in e["text"] for e in page.elements),
                 "page-escape: the warning's markup is text")
    # The op graph: one box per op, coloured by dtype.
    nodes = page.inside("op-graph", "g", "node")
    fills = {}
    wrong = []
    for g in nodes:
        slug = g["attrs"].get("data-dtype")
        title = page.children(g, "title")
        rect = page.children(g, "rect")
        name = title[0]["text"].split(": ")[0] if title else "?"
        want = next((DTYPE_SLUGS[dt] for _, n, _, dt in GRAPH_NODES if n == name), None)
        if want != slug or not rect:
            wrong.append(f"{name}: {slug} (want {want})")
            continue
        fills.setdefault(slug, set()).add(rect[0]["attrs"].get("fill"))
    one_fill = all(len(f) == 1 for f in fills.values())
    distinct = len({next(iter(f)) for f in fills.values()}) == len(fills)
    tally.report(len(nodes) == len(GRAPH_NODES) and not wrong and one_fill and distinct and
                 len(fills) == 7,
                 "page-op-graph: every op a box coloured by its dtype class",
                 f"{len(nodes)} boxes; wrong {wrong[:3]}; fills {fills}")
    edges = [e for e in page.inside("op-graph", "path") if e["parent"]
             and "edges" in e["parent"]["attrs"].get("class", "")]
    legend = page.inside("op-graph", "g", "legend")
    legend_text = legend[0]["text"] if legend else ""
    tally.report(len(edges) == len(GRAPH_EDGES) and
                 all(f"{label} (" in legend_text for label in LEGEND_LABELS),
                 "page-op-graph: the edges drawn, the seven dtype classes in the legend",
                 f"{len(edges)} edges; legend {legend_text!r}")
    scripts = [e for e in page.elements if e["tag"] == "script"]
    tally.report(not scripts and "softmax&lt;script&gt;" in text,
                 "page-escape: an op named <script> stays text")


#===------------------------------------------------------------------------===#
# Chromium
#===------------------------------------------------------------------------===#

def find_chromium():
    for name in ("chromium-headless-shell", "chromium"):
        path = shutil.which(name)
        if path:
            return path
    for path in ("/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"):
        if os.access(path, os.X_OK):
            return path
    return None


def read_png(path):
    """(width, height, bytes per pixel, rows) of an 8-bit PNG, by zlib."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or interlace or colour not in (0, 2, 4, 6):
        raise ValueError(f"unexpected PNG format (depth {depth}, colour {colour})")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif kind == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((a + prev[x]) >> 1)) & 255
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def check_browser(args, tally, html_path):
    chromium = find_chromium()
    if not chromium:
        print("SKIP  browser: neither chromium-headless-shell nor chromium is on PATH "
              "(apt-get install chromium-headless-shell)", flush=True)
        return
    png = os.path.join(args.work, "page.png")
    url = "file://" + os.path.abspath(html_path)
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--hide-scrollbars", f"--user-data-dir={os.path.join(args.work, 'chromium')}"]
    argv = common + [f"--screenshot={png}", f"--window-size={WINDOW[0]},{WINDOW[1]}", url]
    rc, out, err = run_cmd(argv, args.timeout)
    if rc != 0 or not os.path.exists(png):
        tally.report(False, "browser: Chromium renders the page to a PNG",
                     "\n" + describe_failure(argv, rc, out, err))
        return
    try:
        width, height, bpp, rows = read_png(png)
    except (ValueError, zlib.error, struct.error, KeyError, TypeError) as e:
        tally.report(False, "browser: the screenshot is a PNG", str(e))
        return
    colours, inked, seen = set(), 0, 0
    for y in range(0, height, 3):
        row = rows[y]
        for x in range(0, width * bpp, bpp):
            px = row[x:x + min(bpp, 3)]
            colours.add(px)
            seen += 1
            inked += px != b"\xff" * len(px)
    share = inked / max(seen, 1)
    tally.report((width, height) == WINDOW and len(colours) > 64 and share > 0.03,
                 "browser: a PNG of the window size with the charts drawn",
                 f"{width}x{height}, {len(colours)} colours, {100 * share:.1f}% not white")
    if args.png_out:
        shutil.copyfile(png, args.png_out)
        print(f"      the screenshot: {args.png_out}", flush=True)
    argv = common + ["--dump-dom", url]
    rc, out, err = run_cmd(argv, args.timeout)
    missing = [i for i in CHART_IDS if f'id="{i}"' not in out]
    tally.report(rc == 0 and not missing, "browser: the DOM Chromium built has every chart id",
                 f"missing {missing}" if missing else describe_failure(argv, rc, "", err)
                 if rc != 0 else "")


#===------------------------------------------------------------------------===#
# Checks
#===------------------------------------------------------------------------===#

def render(args, tally, label, argv_tail, output):
    argv = [args.mixprec, "report-run"] + argv_tail + ["-o", output]
    rc, out, err = run_cmd(argv, args.timeout)
    if rc != 0 or not os.path.exists(output):
        tally.report(False, f"{label}: renders", "\n" + describe_failure(argv, rc, out, err))
        return None, None
    with open(output, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        page = Page(text)
    except Exception as e:  # noqa: BLE001 (any parser failure fails the check)
        tally.report(False, f"{label}: parses as HTML", str(e))
        return None, None
    tally.report(text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>"),
                 f"{label}: renders one HTML page", f"{len(text)} bytes")
    return page, text


def check_errors(args, tally, w, fp16_csv, metrics):
    def expect_error(label, argv_tail, rc_want, needles, output=None):
        output = output or os.path.join(w, f"{label}.html")
        before = {p: open(p, "rb").read() for p in argv_tail if os.path.isfile(p)}
        argv = [args.mixprec, "report-run"] + argv_tail + (["-o", output] if output != "-"
                                                           else [])
        rc, out, err = run_cmd(argv, args.timeout)
        lines = err.strip().splitlines()
        first = lines[0] if lines else ""
        ok = (rc == rc_want and first.startswith("mixprec: error: ") and
              all(n in first for n in needles) and (rc == 2 or len(lines) == 1))
        unchanged = all(open(p, "rb").read() == b for p, b in before.items())
        written = output != "-" and os.path.exists(output) and not os.path.islink(output) and \
            output not in before
        tally.report(ok and unchanged and not written, f"err-{label}",
                     f"exit {rc}: {first}" + ("" if unchanged else " (an input changed)") +
                     (" (an output was written)" if written else ""))

    expect_error("missing-csv", [os.path.join(w, "missing.csv")], 1, ["missing.csv", "cannot read"])
    bad = os.path.join(w, "bad_number.csv")
    with open(bad, "w") as f:
        f.write("step,epoch,loss,loss_scale\n1,1,0.5,65536\n2,1,0.4x,65536\n")
    expect_error("bad-number", [bad], 1, ["bad_number.csv:3:", "column 'loss'", "'0.4x'"])
    noloss = os.path.join(w, "no_loss.csv")
    with open(noloss, "w") as f:
        f.write("step,epoch,lost\n1,1,0.5\n")
    expect_error("no-loss-column", [noloss], 1, ["no_loss.csv:1:", "'loss'"])
    badjson = os.path.join(w, "bad.json")
    with open(badjson, "w") as f:
        f.write('{"precision": "fp16",\n "memory": {"total": 1,}}\n')
    expect_error("bad-json", [fp16_csv, "--metrics", badjson], 1,
                 ["bad.json: malformed JSON: [2:", "byte="])
    expect_error("output-over-csv", [fp16_csv, "--metrics", metrics], 1,
                 ["cannot write: it is an input"], output=fp16_csv)
    link = os.path.join(w, "metrics_link.html")
    os.symlink(os.path.abspath(metrics), link)
    expect_error("output-over-json-link", [fp16_csv, "--metrics", metrics], 1,
                 ["cannot write: it is an input", "--metrics"], output=link)
    expect_error("no-output", [fp16_csv], 2, ["-o"], output="-")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--png-out", help="copy Chromium's screenshot of the page here")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = args.work
    tally = Tally()

    fp16 = os.path.join(w, "fp16.csv")
    bf16 = os.path.join(w, "bf16.csv")
    metrics = os.path.join(w, "run_metrics.json")
    write_csv(fp16, [7, 8, 9], fp32=True, grad=True)
    write_csv(bf16, [7], fp32=False, grad=False, order=lambda c: list(reversed(c)))
    write_metrics(metrics)

    # Two groups: labels are the file stems; the metrics' precision names
    # the run in the header and the tables.
    html = os.path.join(w, "run.html")
    page, text = render(args, tally, "page", [fp16, bf16, "--metrics", metrics], html)
    if page:
        check_full_page(tally, page, text)

    page, text = render(args, tally, "csv-grad", [fp16], os.path.join(w, "csv_grad.html"))
    if page:
        check_common(tally, "csv-grad", page, text)
        rec = page.by_id.get("grad-error")
        tally.report(rec is not None and rec["tag"] == "svg" and
                     len(lines_with_points(page, "grad-error", 3)) == 1,
                     "csv-grad: the gradient error from the CSV's grad_rel_l2_max")

    minimal = os.path.join(w, "minimal.csv")
    with open(minimal, "w") as f:
        f.write("step,loss\n" + "".join(f"{s},{1 / s:.9g}\n" for s in range(1, 40)))
    page, text = render(args, tally, "minimal", [minimal], os.path.join(w, "minimal.html"))
    if page:
        check_common(tally, "minimal", page, text)
        note = page.by_id.get("grad-error")
        memory = page.by_id.get("memory")
        graph = page.by_id.get("op-graph")
        table = page.by_id.get("metrics")
        ok = (note is not None and note["tag"] == "div" and
              "no gradient comparison in this run (use --compare fp32 --compare-every K)" in
              note["text"] and memory is not None and "not measured" in memory["text"] and
              graph is not None and "not measured" in graph["text"] and table is not None and
              table["text"].count("not measured") == 5 and
              len(lines_with_points(page, "loss-curves", 10)) == 1)
        tally.report(ok, "minimal: the loss line, and notes for what was not measured")
    for label, content in (("header-only", "step,epoch,loss\n"),
                           ("one-row", "seed,step,loss,loss_scale,skipped\n7,1,nan,65536,1\n")):
        path = os.path.join(w, f"{label}.csv")
        with open(path, "w") as f:
            f.write(content)
        page, text = render(args, tally, label, [path, "--metrics", metrics],
                            os.path.join(w, f"{label}.html"))
        if page:
            check_common(tally, label, page, text)

    if os.path.exists(html):
        check_browser(args, tally, html)
    check_errors(args, tally, w, fp16, metrics)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
