"""Writes the PyTorch fixtures of test_from_torch.py: small models built
from configs with random weights (fixed seeds, nothing downloaded),
exported to ONNX opset 17, with their inputs and PyTorch's own outputs.

    /work/venv-fx/bin/python tests/python/make_torch_fixtures.py [FOLDER]

FOLDER (default tests/python/fixtures) gets NAME/model.onnx,
NAME/input_INPUT.npy, NAME/ref_OUTPUT.npy per model and manifest.json
listing them. Needs torch, torchvision, transformers and onnx; the tests
that read the fixtures need none of them (CI compiles the committed files).

The export uses torch.onnx's TorchScript exporter (dynamo=False): it writes
opset 17 as asked. torch >= 2.9's default exporter builds opset 18 and
converts down, which leaves MobileNetV3 at opset 18 and writes GPT-2's
Split with the opset-18 attribute num_outputs into an opset-17 model
(test_from_torch.py runs that exporter through mixprec.from_torch).
Hugging Face models are exported through a wrapper whose forward takes
the inputs by name: the TorchScript exporter passes every defaulted
argument of forward positionally, and transformers' config defaults then
give use_cache twice (TypeError: got multiple values for argument
'use_cache').
"""

import json
import os
import sys

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
SEQ = 16


def randomize_batchnorm(model, seed):
    """Gives every BatchNorm running statistics and affine parameters away
    from the identity that default initialization makes of it."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
    return model


class HfOutputs(torch.nn.Module):
    """A transformers model with inputs by name and a tuple of outputs."""

    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model = model
        self.input_names = list(input_names)
        self.output_names = list(output_names)

    def forward(self, *inputs):
        out = self.model(**dict(zip(self.input_names, inputs)))
        return tuple(out[k] for k in self.output_names)


def mobilenet_v3_small():
    """torchvision's MobileNetV3-Small at half width, 10 classes (1.6 MB):
    depthwise convolutions, HardSwish, squeeze-excitation (global average
    pool, HardSigmoid, Mul), BatchNorm (random statistics) folded at
    export, Gemm."""
    import torchvision
    torch.manual_seed(0)
    net = torchvision.models.mobilenet_v3_small(weights=None, width_mult=0.5, num_classes=10)
    net = randomize_batchnorm(net, 2).eval()
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    return net, {"x": x}, ["logits"]


def bert_tiny():
    """transformers' BertModel, 2 layers of width 64, vocabulary 1000, with
    an attention mask that pads the last 4 tokens."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, vocab_size=1000, max_position_embeddings=64)
    names = ["input_ids", "attention_mask"]
    outputs = ["last_hidden_state", "pooler_output"]
    net = HfOutputs(BertModel(config).eval(), names, outputs).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (1, SEQ), generator=g)
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    mask[:, -4:] = 0
    return net, {"input_ids": ids, "attention_mask": mask}, outputs


def gpt2_tiny():
    """transformers' GPT2Model, 2 layers of width 64, vocabulary 1000,
    64 positions, no KV cache; the attention mask (all ones) is an input
    (without one, transformers' packed-sequence check traces aten::diff,
    which the TorchScript exporter has no opset-17 form of)."""
    from transformers import GPT2Config, GPT2Model
    torch.manual_seed(0)
    config = GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=1000, n_positions=64,
                        use_cache=False, bos_token_id=0, eos_token_id=0)
    names = ["input_ids", "attention_mask"]
    outputs = ["last_hidden_state"]
    net = HfOutputs(GPT2Model(config).eval(), names, outputs).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (1, SEQ), generator=g)
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    return net, {"input_ids": ids, "attention_mask": mask}, outputs


MODELS = {"mobilenet_v3_small": mobilenet_v3_small, "bert_tiny": bert_tiny,
          "gpt2_tiny": gpt2_tiny}


def write(folder, name, build):
    net, inputs, output_names = build()
    out_dir = os.path.join(folder, name)
    os.makedirs(out_dir, exist_ok=True)
    args = tuple(inputs.values())
    with torch.no_grad():
        refs = net(*args)
    if isinstance(refs, torch.Tensor):
        refs = (refs,)
    path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(net, args, path, input_names=list(inputs), output_names=output_names,
                          opset_version=OPSET, dynamo=False)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    assert opset == OPSET, f"{name}: exported opset {opset}"
    entry = {"name": name, "model": f"{name}/model.onnx", "opset": opset, "inputs": [],
             "outputs": [], "doc": " ".join(build.__doc__.split())}
    for key, value in inputs.items():
        np.save(os.path.join(out_dir, f"input_{key}.npy"), value.numpy())
        entry["inputs"].append({"name": key, "file": f"{name}/input_{key}.npy"})
    for key, value in zip(output_names, refs):
        np.save(os.path.join(out_dir, f"ref_{key}.npy"), value.numpy())
        entry["outputs"].append({"name": key, "file": f"{name}/ref_{key}.npy"})
    size = os.path.getsize(path)
    print(f"{name}: {path} ({size / 1e6:.2f} MB, opset {opset}, "
          f"{len(model.graph.node)} nodes)")
    return entry


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")
    torch.set_num_threads(1)
    import torchvision
    import transformers
    entries = [write(folder, name, build) for name, build in MODELS.items()]
    manifest = {
        "_doc": "Written by tests/python/make_torch_fixtures.py (random weights, fixed seeds); "
                "outputs are PyTorch's own (FP32, CPU). Read by test_from_torch.py.",
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "transformers": transformers.__version__, "onnx": onnx.__version__,
        "models": entries,
    }
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
