"""PyTorch models through mixprec against PyTorch's own outputs: FP32
within max_rel 1e-5, BF16 within the README's bound (3e-2), max_rel =
max|a-b| / max|b| per output.

test_fixture_*: the committed fixtures (fixtures/, written by
make_torch_fixtures.py: torchvision's MobileNetV3-Small, a 2-layer BERT
and a 2-layer GPT-2, random weights from fixed seeds, ONNX opset 17)
compiled with mixprec.compile; needs neither torch nor transformers, so CI
runs them. test_from_torch_*: mixprec.from_torch on small torchvision and
Hugging Face models built from configs (nothing downloaded), skipped where
torch, torchvision, transformers or onnxscript are not installed."""

import json
import os

import numpy as np
import pytest

import mixprec
from conftest import REPO

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")

with open(os.path.join(REPO, "tests/e2e/precision_bounds.json")) as f:
    MAX_REL = {"bf16": json.load(f)["bounds"]["bf16"]["max_rel"], "fp32": 1e-5}
PRECISIONS = ["fp32", "bf16"]


def max_rel(got, ref):
    a = np.asarray(got, np.float64).ravel()
    b = np.asarray(ref, np.float64).ravel()
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))),
                                              float(np.finfo(np.float32).tiny))


def check(got, ref, precision, label):
    assert got.shape == ref.shape, f"{label}: shape {got.shape}, PyTorch's {ref.shape}"
    assert got.dtype == np.float32, label
    assert np.all(np.isfinite(got)), f"{label}: non-finite outputs"
    rel = max_rel(got, ref)
    assert rel <= MAX_REL[precision], \
        f"{label}: max_rel {rel:.3e} over {MAX_REL[precision]:.0e}"


# --- committed fixtures (no torch) -------------------------------------------

def fixture_models():
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        return {m["name"]: m for m in json.load(f)["models"]}


FIXTURE_MODELS = fixture_models()


def test_fixtures_are_small_opset_17_models():
    assert set(FIXTURE_MODELS) >= {"mobilenet_v3_small", "bert_tiny", "gpt2_tiny"}
    for m in FIXTURE_MODELS.values():
        path = os.path.join(FIXTURES, m["model"])
        assert os.path.getsize(path) < 2_000_000, path
        assert m["opset"] == 17, path


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", sorted(FIXTURE_MODELS))
def test_fixture_against_pytorch(name, precision):
    m = FIXTURE_MODELS[name]
    inputs = {i["name"]: np.load(os.path.join(FIXTURES, i["file"])) for i in m["inputs"]}
    module = mixprec.compile(os.path.join(FIXTURES, m["model"]), precision=precision,
                             backend="cpu")
    assert [i.name for i in module.inputs] == list(inputs)
    outputs = module.run(**inputs)
    assert set(outputs) == {o["name"] for o in m["outputs"]}
    for o in m["outputs"]:
        check(outputs[o["name"]], np.load(os.path.join(FIXTURES, o["file"])), precision,
              f"{name}:{o['name']} at {precision}")


# --- mixprec.from_torch (needs torch) ----------------------------------------

def randomize_batchnorm(torch, model):
    """BatchNorm statistics and affine parameters away from the identity
    that default initialization makes of it (as make_torch_fixtures.py)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n) * 0.1)
                m.running_var.copy_(torch.rand(n) + 0.5)
                m.weight.copy_(torch.rand(n) + 0.5)
                m.bias.copy_(torch.randn(n) * 0.1)
    return model.eval()


def resnet18(torch):
    torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
    net = randomize_batchnorm(torch, torchvision.models.resnet18(weights=None))
    return net, (torch.randn(1, 3, 64, 64),), {"input_names": ["x"], "output_names": ["logits"]}


def mobilenet_v3_small(torch):
    torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
    net = randomize_batchnorm(torch, torchvision.models.mobilenet_v3_small(weights=None))
    return net, (torch.randn(1, 3, 64, 64),), {"input_names": ["x"], "output_names": ["logits"]}


def bert(torch):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=128, vocab_size=1000)
    net = transformers.BertModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 16))
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[:, -4:] = 0
    return net, (ids, mask), {"input_names": ["input_ids", "attention_mask"],
                              "output_names": ["last_hidden_state", "pooler_output"]}


def gpt2(torch):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=1000,
                                     use_cache=False, bos_token_id=0, eos_token_id=0)
    net = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 16))
    # opset 18: torch's exporter converts its opset-18 graph down to 17 and
    # then writes Split with the opset-18 attribute num_outputs.
    return net, (ids,), {"input_names": ["input_ids"], "output_names": ["last_hidden_state"],
                         "opset_version": 18}


TORCH_MODELS = {"resnet18": resnet18, "mobilenet_v3_small": mobilenet_v3_small, "bert": bert,
                "gpt2": gpt2}


def torch_outputs(out):
    """A model's outputs as a list of numpy arrays (a tensor, a tuple, or a
    transformers ModelOutput)."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    elif not isinstance(out, (tuple, list)):
        out = (out,)
    return [o.detach().numpy() for o in out]


def build(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    pytest.importorskip("onnx", reason="onnx is not installed")
    torch.manual_seed(0)
    net, args, options = TORCH_MODELS[name](torch)
    with torch.no_grad():
        refs = torch_outputs(net(*args))
    return torch, net, args, options, refs


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", list(TORCH_MODELS))
def test_from_torch_model(name, precision):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    pytest.importorskip("onnxscript", reason="onnxscript (torch.onnx's default exporter) "
                        "is not installed")
    _, net, args, options, refs = build(name)
    module = mixprec.from_torch(net, args, precision=precision, backend="cpu", **options)
    assert [i.name for i in module.inputs] == options["input_names"]
    outputs = module.run(*[a.numpy() for a in args])
    assert list(outputs) == options["output_names"]
    for key, ref in zip(options["output_names"], refs):
        check(outputs[key], ref, precision, f"{name}:{key} at {precision}")


def test_from_torch_export_options():
    """export_options reach torch.onnx.export: the TorchScript exporter."""
    _, net, args, options, refs = build("resnet18")
    module = mixprec.from_torch(net, args, precision="fp32", backend="cpu",
                                export_options={"dynamo": False}, **options)
    check(module.run(x=args[0])["logits"], refs[0], "fp32", "resnet18 (dynamo=False)")
    with pytest.raises(mixprec.InvalidArgumentError, match="opset_version"):
        mixprec.from_torch(net, args, export_options={"opset_version": 18})
