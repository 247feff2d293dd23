#!/usr/bin/env python3
"""Exports the BERT-base encoder of bench/README.md ("The CPU fast path"):
Hugging Face's BertModel with the default BertConfig (12 layers, 12 heads,
hidden 768, intermediate 3072, GELU erf form; 109M parameters), random
weights from a fixed seed, exported as a user would (torch.onnx.export,
legacy exporter, opset 17) with static input_ids and attention_mask of
shape BATCHxSEQ, returning the last hidden state. Writes DIR/model.onnx
(the layout bench/cpu_fast_path.py reads; 436 MB, not committed) and
DIR/inputs/{input_ids,attention_mask}.npy (random token ids, all-ones
mask).

Developers' machines only: it needs torch and transformers (the developer
venv /work/venv-fx has them); CI never runs it.

Usage: /work/venv-fx/bin/python bench/make_bert.py [--out DIR] [--batch 1] [--seq 128]
"""
import argparse
import os

import numpy as np
import torch
from transformers import BertConfig, BertModel


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="out/bert", help="folder (out/ is git-ignored)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    torch.manual_seed(0)
    config = BertConfig()
    model = BertModel(config, add_pooling_layer=False).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), dtype=torch.int64)
    mask = torch.ones_like(ids)

    class Hidden(torch.nn.Module):
        """The last hidden state alone."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              return_dict=False)[0]

    path = os.path.join(args.out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(Hidden(model), (ids, mask), path,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["hidden"], opset_version=17, dynamo=False)
    np.save(os.path.join(args.out, "inputs", "input_ids.npy"), ids.numpy())
    np.save(os.path.join(args.out, "inputs", "attention_mask.npy"), mask.numpy())
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path} ({os.path.getsize(path)} bytes; {params} parameters)")


if __name__ == "__main__":
    main()
