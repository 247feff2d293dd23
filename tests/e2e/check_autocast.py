#!/usr/bin/env python3
"""Compare mixprec's BF16 plan with PyTorch autocast's op lists.

Usage:
    check_autocast.py --mixprec BIN --models DIR [-k NAME ...]

DIR is written by gen_models.py. For every model (gpt_block first, the one
the acceptance names; the others cover conv, norms, exp/log/pow/sqrt, erf)
this runs `BIN report DIR/M/model.onnx --precision bf16 --json` and checks
every op row (casts and FP8 scaling left out) against AUTOCAST below, the
lists of /work/shared/REFERENCE.md ("PyTorch autocast (CUDA) op lists"):

  lower   autocast runs it in the lower precision  -> mixprec class lowp, bf16
  fp32    autocast runs it in FP32 (or forces an FP32 output)
                                                   -> class fp32, f32
  input   not listed: runs in its input dtype, binary ops promote to the
          widest input                             -> class follow, reason
                                                      follow:*, bf16 or f32

An op type missing from AUTOCAST fails (so a new op gets a decision). Where
mixprec's class differs from autocast's, the entry says so and why; those
entries are listed in README.md ("### Differences from PyTorch autocast")
and printed here as DIFF lines (not failures: they are decisions).

On gpt_block it also checks the dtypes that follow from the graph, where
autocast and mixprec could part ways: the bias Adds of the ONNX-split
linears stay in BF16 (constants adapt), the residual Adds run in FP32
(widest input), Gather and the tied head's Transpose of FP32 parameters
stay FP32, the fused attention runs in BF16 (FP32 inside), and the graph
outputs are FP32
(keep-io-types).

One line per check, then exactly "N passed, N failed".
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import Tally, describe_failure, load_manifest, run_cmd, select  # noqa: E402

# op type -> (autocast category, the PyTorch op(s) it corresponds to, mixprec class,
#             why mixprec differs or None)
AUTOCAST = {
    "matmul": ("lower", "matmul, mm, bmm", "lowp", None),
    "attention": ("lower", "scaled_dot_product_attention (FP32 softmax inside)", "lowp", None),
    "attention_grad": ("lower", "scaled_dot_product_attention's backward", "lowp", None),
    "linear": ("lower", "linear, addmm", "lowp", None),
    "conv2d": ("lower", "conv2d", "lowp", None),
    "softmax": ("fp32", "softmax (FP32 output forced)", "fp32", None),
    "log_softmax": ("fp32", "log_softmax (FP32 output forced)", "fp32", None),
    "layer_norm": ("fp32", "layer_norm", "fp32", None),
    "exp": ("fp32", "exp", "fp32", None),
    "log": ("fp32", "log", "fp32", None),
    "pow": ("fp32", "pow", "fp32", None),
    "reciprocal": ("fp32", "reciprocal", "fp32", None),
    "rsqrt": ("fp32", "rsqrt", "fp32", None),
    "reduce_sum": ("fp32", "sum (FP32 output forced)", "fp32", None),
    "sqrt": ("input", "sqrt (not listed)", "fp32",
             "DESIGN.md's FP32 class (Sqrt/Rsqrt together): sqrt of a sum of squares "
             "(norms) loses range and precision in BF16/FP16"),
    "erf": ("input", "erf (not listed)", "fp32",
            "DESIGN.md's FP32 class: an exported erf-GELU is decomposed, so erf is "
            "a transcendental on its own; PyTorch's fused gelu never exposes it"),
    "reduce_mean": ("input", "mean (not listed; accumulates in FP32 internally)", "fp32",
                    "DESIGN.md's FP32 class (ReduceSum/Mean): the mean's sum must not "
                    "overflow FP16; PyTorch accumulates in FP32 but returns the input dtype"),
    "batch_norm": ("input", "batch_norm (not listed; cuDNN computes in FP32)", "fp32",
                   "DESIGN.md's FP32 class (BatchNorm stats): the inference form is "
                   "folded statistics, kept in FP32 as cuDNN computes them"),
    "rms_norm": ("input", "rms_norm (not in REFERENCE.md's lists)", "fp32",
                 "DESIGN.md's FP32 class, like layer_norm, which autocast lists"),
    "reduce_max": ("input", "max (not listed)", "follow", None),
    "div": ("input", "div (not listed)", "follow", None),
    "add": ("input", "add (not listed)", "follow", None),
    "sub": ("input", "sub (not listed)", "follow", None),
    "mul": ("input", "mul (not listed)", "follow", None),
    "neg": ("input", "neg (not listed)", "follow", None),
    "relu": ("input", "relu (not listed)", "follow", None),
    "gelu": ("input", "gelu (not listed)", "follow", None),
    "tanh": ("input", "tanh (not listed)", "follow", None),
    "sigmoid": ("input", "sigmoid (not listed)", "follow", None),
    "silu": ("input", "silu (not listed)", "follow", None),
    "where": ("input", "where (not listed)", "follow", None),
    "gather": ("input", "embedding / index_select (not listed)", "follow", None),
    "reshape": ("input", "view / reshape", "follow", None),
    "transpose": ("input", "permute / transpose", "follow", None),
    "slice": ("input", "slicing", "follow", None),
    "concat": ("input", "cat (not listed)", "follow", None),
    "max_pool2d": ("input", "max_pool2d (not listed)", "follow", None),
    "avg_pool2d": ("input", "avg_pool2d (not listed)", "follow", None),
}

EXPECTED_PRECISION = {"lowp": {"bf16"}, "fp32": {"f32"}, "follow": {"bf16", "f32"}}
CLASS_OF_CATEGORY = {"lower": "lowp", "fp32": "fp32", "input": "follow"}

# gpt_block (gen_models.build_gpt_block, deterministic node names): node ->
# (precision, why autocast agrees or where it differs).
GPT_BLOCK_DTYPES = {
    "n_Add_1": ("bf16", "bias Add of the QKV linear: the constant bias adapts, as in "
                        "PyTorch's fused addmm (eager bf16 + fp32 tensor would promote)"),
    "n_Add_2": ("bf16", "bias Add of attn.c_proj (constant adapts)"),
    "n_Add_4": ("bf16", "bias Add of mlp.c_fc (constant adapts)"),
    "n_Add_5": ("bf16", "bias Add of mlp.c_proj (constant adapts)"),
    "n_Add_3": ("f32", "residual Add: FP32 stream + BF16 branch promotes, as in PyTorch"),
    "n_Add_6": ("f32", "residual Add (widest input)"),
    "n_Add_0": ("f32", "token + position embeddings, both FP32 parameters"),
    "n_Gather_0": ("bf16", "tied token embedding (wte is also the LM head): reads the BF16 "
                           "copy the head needs and widens the rows to FP32 exactly, so wte is "
                           "stored once (--mp-share-weights); PyTorch keeps the FP32 "
                           "parameter and casts a BF16 copy for the head every step"),
    "n_Gather_1": ("f32", "position embedding (FP32 parameter)"),
    "n_MatMul_2": ("bf16", "fused attention (--mp-fuse-attention: Q.K^T, the 1/sqrt(hd) "
                           "scale, the causal Where, softmax, P.V): BF16 Q/K/V as SDPA "
                           "takes them under autocast; scores and softmax stay FP32 inside"),
    "n_Gelu_0": ("bf16", "gelu runs in its input dtype, as autocast does"),
    "n_MatMul_6": ("bf16", "tied LM head: imported as a linear layer reading wte transposed "
                           "(no Transpose op, no per-run cast); lower precision"),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("-k", nargs="+", metavar="NAME")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args(argv)
    tally = Tally()
    models = select(load_manifest(args.models)["models"], args.k)
    models.sort(key=lambda m: m["name"] != "gpt_block")
    diffs = {}
    with tempfile.TemporaryDirectory(prefix="mixprec-autocast-") as tmp:
        for m in models:
            path = os.path.join(tmp, m["name"] + ".json")
            argv = [args.mixprec, "report", os.path.join(args.models, m["model"]),
                    "--precision", "bf16", "--json", path]
            rc, out, err = run_cmd(argv, args.timeout)
            if rc != 0:
                tally.report(False, f"{m['name']} report")
                print(describe_failure(argv, rc, out, err), flush=True)
                continue
            with open(path) as f:
                doc = json.load(f)
            rows = [r for r in doc["ops"] if r["class"] not in ("cast", "scaling")]
            by_type = {}
            for r in rows:
                by_type.setdefault(r["type"], []).append(r)
            for op_type, typed in sorted(by_type.items()):
                label = f"{m['name']}: {op_type}"
                if op_type not in AUTOCAST:
                    tally.report(False, label, "op type not in AUTOCAST (decide and document it)")
                    continue
                category, torch_ops, want_class, why = AUTOCAST[op_type]
                bad = []
                for r in typed:
                    if r["class"] != want_class:
                        bad.append(f"{r['node']} class {r['class']}")
                    elif r["precision"] not in EXPECTED_PRECISION[want_class]:
                        bad.append(f"{r['node']} precision {r['precision']}")
                    elif want_class == "follow" and not r["reason"].startswith("follow:"):
                        bad.append(f"{r['node']} reason {r['reason']}")
                dtypes = ",".join(sorted({r["precision"] for r in typed}))
                detail = (f"{len(typed)} ops, {want_class} in {dtypes}; autocast: {category} "
                          f"({torch_ops})")
                tally.report(not bad, label, "; ".join(bad) if bad else detail)
                if CLASS_OF_CATEGORY[category] != want_class:
                    diffs[op_type] = (category, want_class, why)
                    if not why:
                        tally.report(False, f"{label} differs from autocast",
                                     "undocumented difference")
            if m["name"] == "gpt_block":
                nodes = {r["node"]: r for r in rows}
                for node, (want, why) in GPT_BLOCK_DTYPES.items():
                    r = nodes.get(node)
                    got = r["precision"] if r else "missing"
                    tally.report(got == want, f"gpt_block: {node} in {want}", f"got {got}: {why}")
                outs = [r for r in doc["ops"] if r["class"] == "cast"]
                # keep-io-types: the last ops cast the outputs back to FP32.
                tally.report(outs and outs[-1]["outputs"] == ["f32"],
                             "gpt_block: graph outputs stay f32 (keep-io-types)",
                             "autocast would return the BF16 logits; mixprec casts back")
    for op_type, (category, cls, why) in sorted(diffs.items()):
        print(f"DIFF  {op_type}: autocast {category}, mixprec {cls}: {why}")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
