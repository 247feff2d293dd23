#!/usr/bin/env python3
"""Exports the real-model fixtures of tests/e2e/real_models/ (issue 10).

Developers' machines only (CI never runs this: it needs torch, torchvision
and transformers; CI reads the committed files). Each model is a real
library architecture (torchvision, Hugging Face transformers) in a tiny
configuration with random weights from a fixed seed, exported as a user
would, with default exporter settings and no folding or rewriting:

  exporter  legacy  torch.onnx.export(dynamo=False, opset_version=17)
            dynamo  torch.onnx.export(dynamo=True)  (its default opset)
  shapes    static  every input dim fixed
            dynamic batch (and sequence, for text) axes symbolic

For each fixture DIR = OUT/<model>.<exporter>.<shapes>/ this writes
DIR/model.onnx (and the external-data file the exporter writes, if any),
DIR/inputs/<i>.npy (a concrete binding of the dims), and DIR/ref/<o>.npy,
onnxruntime's outputs (CPU, graph optimizations off) on those inputs.
OUT/manifest.json lists every fixture: its files, inputs (name, dtype,
shape, the file), outputs, the symbolic dims and their concrete binding,
the opset, the file sizes, and onnxruntime's max_rel against PyTorch.

Usage: /work/venv-fx/bin/python make_fixtures.py [--out DIR] [--only GLOB]
"""
import argparse
import fnmatch
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))

# Concrete shapes: static fixtures are exported at these; dynamic ones are
# exported at EXPORT_* and their inputs use BIND_* (a binding that differs
# from the export example, so a specialisation that ignores the dims shows).
STATIC_BATCH, STATIC_SEQ = 1, 16
EXPORT_BATCH, EXPORT_SEQ = 2, 16
BIND_BATCH, BIND_SEQ = 3, 12
IMAGE = 32
VOCAB = 256


def randomize_batchnorm(model, gen):
    """Gives every BatchNorm non-trivial running statistics and affine
    parameters, as a trained model has (default init makes BN the identity)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)


# ---------------------------------------------------------------- vision


def build_resnet18():
    """torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]) at 1/8 width."""
    from torchvision.models.resnet import BasicBlock, ResNet

    class NarrowResNet(ResNet):
        """ResNet.__init__ with widths (8, 16, 32, 64) instead of
        (64, 128, 256, 512); torchvision's _make_layer and forward."""

        def __init__(self, widths, layers, num_classes):
            nn.Module.__init__(self)
            self._norm_layer = nn.BatchNorm2d
            self.inplanes = widths[0]
            self.dilation = 1
            self.groups = 1
            self.base_width = 64
            self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(BasicBlock, widths[0], layers[0])
            self.layer2 = self._make_layer(BasicBlock, widths[1], layers[1], stride=2)
            self.layer3 = self._make_layer(BasicBlock, widths[2], layers[2], stride=2)
            self.layer4 = self._make_layer(BasicBlock, widths[3], layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(widths[3] * BasicBlock.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    return NarrowResNet((8, 16, 32, 64), (2, 2, 2, 2), 10)


def build_mobilenet_v2():
    """torchvision's MobileNetV2 at width_mult 0.25."""
    from torchvision.models import mobilenet_v2
    return mobilenet_v2(weights=None, width_mult=0.25, num_classes=10)


def build_efficientnet_b0():
    """torchvision's EfficientNet-B0 configuration at width 0.25, depth 0.5."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    setting, last_channel = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.5)
    return EfficientNet(setting, dropout=0.2, last_channel=last_channel, num_classes=10)


def build_vit():
    """torchvision's VisionTransformer: 32x32 images, 8x8 patches, 2 layers."""
    from torchvision.models.vision_transformer import VisionTransformer
    vit = VisionTransformer(image_size=IMAGE, patch_size=8, num_layers=2, num_heads=2,
                            hidden_dim=32, mlp_dim=64, num_classes=10)
    # torchvision zero-initialises the classifier head (logits all 0):
    # a trained head is not zero.
    nn.init.normal_(vit.heads.head.weight, std=0.2)
    nn.init.normal_(vit.heads.head.bias, std=0.2)
    return vit


class ImageModel(nn.Module):
    """A classifier taking `pixels` [N, 3, H, W] and returning `logits`."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, pixels):
        return self.net(pixels)


# ---------------------------------------------------------------- text


def build_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     use_cache=False)
    return GPT2LMHeadModel(cfg)


def build_bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64)
    return BertModel(cfg)


def build_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      use_cache=False)
    return LlamaForCausalLM(cfg)


def build_t5():
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                   num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                   relative_attention_max_distance=32, decoder_start_token_id=0, use_cache=False,
                   attn_implementation="eager")
    # Eager attention: with the default (SDPA) the dynamo exporter fails in
    # its decomposition step (torch 2.15: "Cannot view a tensor with shape
    # [1, 16, 4, 16] and strides (1024, 16, 256, 1) as a tensor with shape
    # (1, 16, 64)"); a user switches to eager, as here, for both exporters.
    return T5ForConditionalGeneration(cfg)


class CausalLM(nn.Module):
    """(input_ids, attention_mask) -> logits (GPT-2, LLaMA), no cache. The
    mask is given as generation pipelines give it (without one, transformers
    takes its packed-sequence path, which the legacy exporter cannot export:
    aten::diff)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask):
        return self.net(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class Encoder(nn.Module):
    """BERT: (input_ids, attention_mask) -> (last_hidden_state, pooler_output)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask):
        out = self.net(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


class Seq2Seq(nn.Module):
    """T5: (input_ids, attention_mask, decoder_input_ids) -> logits, no cache."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        return self.net(input_ids=input_ids, attention_mask=attention_mask,
                        decoder_input_ids=decoder_input_ids, use_cache=False).logits


def image_inputs(rng, batch):
    return {"pixels": rng.standard_normal((batch, 3, IMAGE, IMAGE)).astype(np.float32)}


def ids(rng, batch, seq):
    return rng.integers(0, VOCAB, size=(batch, seq), dtype=np.int64)


def padding_mask(batch, seq):
    """1 for tokens, 0 for padding: row r has its last r*2 positions padded."""
    m = np.ones((batch, seq), dtype=np.int64)
    for r in range(batch):
        if r:
            m[r, seq - min(2 * r, seq - 1):] = 0
    return m


def masked_inputs(rng, batch, seq):
    """input_ids and a padding mask (the last row padded when batch > 1)."""
    return {"input_ids": ids(rng, batch, seq), "attention_mask": padding_mask(max(batch, 2), seq)[-batch:]}


def t5_inputs(rng, batch, seq):
    return {"input_ids": ids(rng, batch, seq), "attention_mask": padding_mask(max(batch, 2), seq)[-batch:],
            "decoder_input_ids": ids(rng, batch, seq // 2)}


# name: (builder, wrapper, inputs(rng, batch, seq), outputs, {input: {axis: dim name}})
MODELS = {
    "resnet18": (build_resnet18, ImageModel, lambda r, b, s: image_inputs(r, b), ["logits"],
                 {"pixels": {0: "batch"}}),
    "mobilenet_v2": (build_mobilenet_v2, ImageModel, lambda r, b, s: image_inputs(r, b), ["logits"],
                     {"pixels": {0: "batch"}}),
    "efficientnet_b0": (build_efficientnet_b0, ImageModel, lambda r, b, s: image_inputs(r, b), ["logits"],
                        {"pixels": {0: "batch"}}),
    "vit": (build_vit, ImageModel, lambda r, b, s: image_inputs(r, b), ["logits"],
            {"pixels": {0: "batch"}}),
    "gpt2": (build_gpt2, CausalLM, masked_inputs, ["logits"],
             {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}),
    "bert": (build_bert, Encoder, masked_inputs, ["last_hidden_state", "pooler_output"],
             {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}),
    "llama": (build_llama, CausalLM, masked_inputs, ["logits"],
              {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}),
    "t5": (build_t5, Seq2Seq, t5_inputs, ["logits"],
           {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "decoder_input_ids": {0: "batch", 1: "dec_seq"}}),
}


def dynamo_shapes(dyn_axes, names):
    """dynamic_axes -> torch.export dynamic_shapes (one Dim per name)."""
    dims = {}
    shapes = {}
    for n in names:
        axes = dyn_axes.get(n, {})
        shapes[n] = {a: dims.setdefault(d, torch.export.Dim(d, min=1, max=64)) for a, d in axes.items()}
    return shapes


def export(wrapper, feeds, outputs, dyn_axes, exporter, shapes, path):
    names = list(feeds)
    args = tuple(torch.from_numpy(feeds[n]) for n in names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "legacy":
            torch.onnx.export(wrapper, args, path, dynamo=False, opset_version=17,
                              input_names=names, output_names=outputs,
                              dynamic_axes=dyn_axes if shapes == "dynamic" else None)
        else:
            torch.onnx.export(wrapper, args, path, dynamo=True, input_names=names,
                              output_names=outputs,
                              dynamic_shapes=dynamo_shapes(dyn_axes, names) if shapes == "dynamic" else None)


def graph_dims(model):
    """{input name: [dim_param or int or None per axis]} of the graph inputs."""
    init = {i.name for i in model.graph.initializer}
    res = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        dims = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif d.HasField("dim_param"):
                dims.append(d.dim_param)
            else:
                dims.append(None)
        res[vi.name] = dims
    return res


def max_rel(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), np.finfo(np.float32).tiny))


def make_fixture(out, name, exporter, shapes, seed):
    builder, wrap, make_inputs, outputs, dyn_axes = MODELS[name]
    fid = f"{name}.{exporter}.{shapes}"
    d = os.path.join(out, fid)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "inputs"))
    os.makedirs(os.path.join(d, "ref"))
    torch.manual_seed(seed)
    net = builder()
    gen = torch.Generator().manual_seed(seed + 1)
    randomize_batchnorm(net, gen)
    wrapper = wrap(net).eval()
    rng = np.random.default_rng(seed)
    if shapes == "static":
        example = make_inputs(rng, STATIC_BATCH, STATIC_SEQ)
        feeds = example
    else:
        example = make_inputs(rng, EXPORT_BATCH, EXPORT_SEQ)
        feeds = make_inputs(rng, BIND_BATCH, BIND_SEQ)
    path = os.path.join(d, "model.onnx")
    export(wrapper, example, outputs, dyn_axes, exporter, shapes, path)

    model = onnx.load(path, load_external_data=False)
    dims = graph_dims(model)
    graph_outputs = [o.name for o in model.graph.output]
    # The binding: each symbolic dim of each input to the size the inputs give.
    binding = {}
    for n, ds in dims.items():
        for axis, dname in enumerate(ds):
            if isinstance(dname, str):
                size = int(feeds[n].shape[axis])
                if binding.setdefault(dname, size) != size:
                    raise SystemExit(f"{fid}: dim '{dname}' bound to {binding[dname]} and {size}")
            elif dname is None:
                raise SystemExit(f"{fid}: input '{n}' axis {axis} has no dim_value or dim_param")
    if shapes == "dynamic" and not binding:
        raise SystemExit(f"{fid}: the dynamic export has no symbolic input dims")
    if set(dims) != set(feeds):
        raise SystemExit(f"{fid}: graph inputs {sorted(dims)} are not the fed inputs {sorted(feeds)}")

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)
    with torch.no_grad():
        got = wrapper(*(torch.from_numpy(feeds[n]) for n in feeds))
    got = got if isinstance(got, tuple) else (got,)
    vs_torch = max(max_rel(r, g.numpy()) for r, g in zip(refs, got))

    inputs = []
    for n, a in feeds.items():
        fname = f"inputs/{n}.npy"
        np.save(os.path.join(d, fname), a)
        inputs.append({"name": n, "dtype": str(a.dtype), "shape": list(a.shape), "file": fname,
                       "dims": dims[n]})
    outs = []
    for n, r in zip(graph_outputs, refs):
        fname = f"ref/{n}.npy"
        np.save(os.path.join(d, fname), r)
        outs.append({"name": n, "dtype": str(r.dtype), "shape": list(r.shape), "file": fname})
    files = sorted(f for f in os.listdir(d) if f.startswith("model.onnx"))
    size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return {"id": fid, "model": name, "exporter": exporter, "shapes": shapes, "dir": fid,
            "model_files": files, "bytes": size, "opset": opset, "seed": seed,
            "inputs": inputs, "outputs": outs, "dynamic_dims": sorted(binding),
            "binding": binding, "ort_vs_torch_max_rel": vs_torch}


def write_manifest(path, fixtures):
    """Writes manifest.json, the fixtures in model, exporter, shapes order."""
    order = [f"{n}.{e}.{s}" for n in MODELS for e in ("legacy", "dynamo") for s in ("static", "dynamic")]
    doc = {"_doc": "Written by make_fixtures.py; read by run_real_models.py. Paths are relative "
                   "to this folder. binding: a concrete size for each symbolic dim (the inputs' "
                   "shapes).",
           "generator": {"torch": torch.__version__, "onnx": onnx.__version__,
                         "onnxruntime": ort.__version__,
                         "transformers": __import__("transformers").__version__,
                         "torchvision": __import__("torchvision").__version__},
           "fixtures": [fixtures[k] for k in order if k in fixtures]}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", default="*", help="glob over fixture ids MODEL.EXPORTER.SHAPES")
    args = ap.parse_args()
    manifest_path = os.path.join(args.out, "manifest.json")
    old = {}
    if os.path.isfile(manifest_path):
        with open(manifest_path) as f:
            old = {e["id"]: e for e in json.load(f)["fixtures"]}
    fixtures = dict(old)
    for i, name in enumerate(MODELS):
        for exporter in ("legacy", "dynamo"):
            for shapes in ("static", "dynamic"):
                fid = f"{name}.{exporter}.{shapes}"
                if not fnmatch.fnmatch(fid, args.only):
                    continue
                entry = make_fixture(args.out, name, exporter, shapes, seed=1000 + i)
                fixtures[fid] = entry
                # Written after each fixture: a later export that fails keeps the others.
                doc = write_manifest(manifest_path, fixtures)
                print(f"{fid}: {entry['bytes'] / 1e6:.2f} MB, opset {entry['opset']}, "
                      f"dims {entry['binding']}, ort vs torch {entry['ort_vs_torch_max_rel']:.1e}",
                      flush=True)
    doc = write_manifest(manifest_path, fixtures)
    total = sum(e["bytes"] for e in doc["fixtures"])
    print(f"{len(doc['fixtures'])} fixtures, {total / 1e6:.1f} MB of models")


if __name__ == "__main__":
    sys.exit(main())
