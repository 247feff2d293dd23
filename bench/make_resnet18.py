#!/usr/bin/env python3
"""Exports the ResNet-18 of bench/README.md ("The CPU fast path"):
torchvision's resnet18 with random weights from a fixed seed (no download:
the timing does not depend on the values), in eval mode (BatchNorm folded
by the exporter's constant folding), exported as a user would
(torch.onnx.export, legacy exporter, opset 17) with a static input of shape
BATCHx3x224x224. Writes DIR/model.onnx (the layout bench/cpu_fast_path.py
reads; 47 MB, not committed) and DIR/inputs/input.npy (normal values, the
same seed).

Developers' machines only: it needs torch and torchvision (the developer
venv /work/venv-fx has them); CI never runs it.

Usage: /work/venv-fx/bin/python bench/make_resnet18.py [--out DIR] [--batch 1]
"""
import argparse
import os

import numpy as np
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="out/resnet18", help="folder (out/ is git-ignored)")
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, 224, 224)
    path = os.path.join(args.out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["logits"],
                          opset_version=17, dynamo=False)
    np.save(os.path.join(args.out, "inputs", "input.npy"), x.numpy())
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path} ({os.path.getsize(path)} bytes; {params} parameters)")


if __name__ == "__main__":
    main()
