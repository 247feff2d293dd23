#!/usr/bin/env python3
"""Exports the 12-layer GPT-2 of bench/README.md ("Readable IR"): Hugging
Face's GPT2LMHeadModel with the default GPT2Config (12 layers, 12 heads,
hidden 768, vocabulary 50257, tied LM head: 124M parameters, 498 MB at
FP32), random weights from a fixed seed, exported as a user would
(torch.onnx.export, legacy exporter, opset 17, no KV cache, static
input_ids and attention_mask of shape BATCHxSEQ; the mask is given as
generation pipelines give it: without one, transformers takes its
packed-sequence path, which the legacy exporter cannot export, aten::diff).

Developers' machines only: it needs torch and transformers (the developer
venv /work/venv-fx has them); CI never runs it, and the .onnx (500 MB) is
not committed. It also writes input_ids.npy (random token ids, the same
seed) and attention_mask.npy (all ones) next to the model.

Usage: /work/venv-fx/bin/python bench/make_gpt2.py [--out DIR] [--batch 1] [--seq 64]
"""
import argparse
import os

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="out/gpt2", help="folder for gpt2.onnx (out/ is git-ignored)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    config = GPT2Config(use_cache=False)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), dtype=torch.int64)
    path = os.path.join(args.out, "gpt2.onnx")

    class Logits(torch.nn.Module):
        """The model's logits alone (no loss, no cache)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              use_cache=False, return_dict=False)[0]

    mask = torch.ones_like(ids)
    with torch.no_grad():
        torch.onnx.export(Logits(model), (ids, mask), path,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False)
    np.save(os.path.join(args.out, "input_ids.npy"), ids.numpy())
    np.save(os.path.join(args.out, "attention_mask.npy"), mask.numpy())
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path} ({os.path.getsize(path)} bytes; {params} parameters, "
          f"{4 * params} bytes at FP32), input_ids.npy and attention_mask.npy "
          f"{tuple(ids.shape)}")


if __name__ == "__main__":
    main()
