#!/usr/bin/env python3
"""Generate benchmark-sized models for mixprec.

Usage:
    gen_bench_models.py OUTDIR [--only NAME ...] [--no-ref] [--verify]
                        [--with-embeddings [--vocab N]]

Writes, in the same layout as tests/e2e/gen_models.py (so bench/ort_time.py
and tests/e2e/run_e2e.py can use it):

    OUTDIR/NAME/model.onnx, OUTDIR/NAME/inputs/<input>.npy,
    OUTDIR/NAME/ref/<output>.npy (onnxruntime CPU; skipped with --no-ref,
    then the manifest lists no outputs), OUTDIR/manifest.json

Models (FP32, static shapes, fixed seeds):
  gpt2_block   GPT-2-small-sized decoder block, opset 20, built by the same
               builder as the e2e `gpt_block` (LayerNormalization, fused QKV
               MatMul+Add, 3 Slices, Reshape/Transpose to heads, causal
               Where(-1e4) mask, Softmax, Gelu(tanh), residuals): batch 1,
               seq 128, hidden 768, 12 heads, MLP 3072 (~28 MB of weights).
               Input hidden_states[1,128,768] -> output hidden[1,128,768].
               With --with-embeddings: input input_ids[1,128] int64 instead,
               token + position Gather embeddings, final LayerNormalization
               and the tied LM head (MatMul with Transpose(wte)), extra
               output logits[1,128,vocab]; --vocab (default 50257) sets the
               table size (50257 x 768 = 154 MB).
  mlp_large    the e2e `mlp` scaled up, opset 13: x[64,1024] -> Gemm 4096
               (transB=1) + Relu -> MatMul 4096x4096 + Add -> Tanh -> Gemm
               1024 (transB=1) -> logits[64,1024] -> Softmax -> probs[64,1024]
               (~100 MB of weights).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import gen_models  # noqa: E402  (tests/e2e/gen_models.py)


def gpt2_block(args):
    return gen_models.build_gpt_block(
        batch=1, seq=128, hidden=768, heads=12, mlp=3072,
        vocab=args.vocab if args.with_embeddings else None, name="gpt2_block", seed=101)


def mlp_large(args):
    return gen_models.build_mlp(batch=64, d_in=1024, hidden1=4096, hidden2=4096, d_out=1024,
                                name="mlp_large", seed=102)


BENCH_MODELS = {"gpt2_block": gpt2_block, "mlp_large": mlp_large}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("outdir", help="output directory (created if missing)")
    ap.add_argument("--only", nargs="+", choices=sorted(BENCH_MODELS), metavar="NAME")
    ap.add_argument("--no-ref", action="store_true",
                    help="do not compute onnxruntime reference outputs")
    ap.add_argument("--verify", action="store_true",
                    help="checker + sanity checks as in gen_models.py --verify")
    ap.add_argument("--with-embeddings", action="store_true",
                    help="gpt2_block takes token ids and has embeddings + LM head")
    ap.add_argument("--vocab", type=int, default=50257, help="vocabulary with --with-embeddings")
    args = ap.parse_args(argv)

    os.makedirs(args.outdir, exist_ok=True)
    entries, problems = [], []
    for name in args.only or list(BENCH_MODELS):
        model, inputs = BENCH_MODELS[name](args)
        if args.no_ref:
            entry = write_without_ref(args.outdir, name, model, inputs)
        else:
            entry = gen_models.write_case(args.outdir, name, model, inputs, verify=args.verify)
            problems += entry.get("_problems", [])
        entries.append(entry)
        size = os.path.getsize(os.path.join(args.outdir, entry["model"]))
        ins = ", ".join(f"{i['name']}{i['shape']}" for i in entry["inputs"])
        print(f"{name}: opset {entry['opset']}, {size / 2**20:.1f} MiB, inputs {ins}")
    gen_models.write_manifest(args.outdir, entries)
    if problems:
        print("PROBLEMS:\n  " + "\n  ".join(problems))
        return 1
    return 0


def write_without_ref(outdir, name, model, inputs):
    import numpy as np
    import onnx
    mdir = os.path.join(outdir, name)
    os.makedirs(os.path.join(mdir, "inputs"), exist_ok=True)
    onnx.save_model(model, os.path.join(mdir, "model.onnx"))
    entry = {"name": name, "model": f"{name}/model.onnx",
             "opset": model.opset_import[0].version, "ir_version": model.ir_version,
             "ops": sorted({n.op_type for n in model.graph.node}),
             "description": " ".join((model.doc_string or "").split()),
             "inputs": [], "outputs": []}
    for iname, arr in inputs.items():
        rel = f"{name}/inputs/{iname}.npy"
        np.save(os.path.join(outdir, rel), arr)
        entry["inputs"].append({"name": iname, "file": rel, "shape": list(arr.shape),
                                "dtype": str(arr.dtype)})
    return entry


if __name__ == "__main__":
    sys.exit(main())
