#!/usr/bin/env python3
"""The GPU benchmark's models, weights that travel as seeds, and side-file recipes.

bench/gpu.sh compiles the models here (LLVM is here) and runs them on the lent
GPU machine, where the working tree that travels is limited to 64 MiB. The
GPT block's FP32 weights alone are 28 MB and the MLP's 100 MB, and every
precision has its own `.mpk.weights` side file, so the weights do not travel:

- every float initializer of 65536 elements or more is replaced, before the
  model is compiled, by `portable_normal(seed, shape, std)`: a sum of four
  24-bit uniforms from splitmix64 (Irwin-Hall, near-Gaussian, |x| < 3.47 std)
  with the builder's std. Only integer arithmetic and one IEEE double product
  rounded to float32, so any numpy on any x86-64 machine gives the same bits
  (numpy's own Generator streams are not promised to stay the same across
  numpy versions). The smaller initializers travel in `small.npz`.
- the inputs are drawn the same way (std 1);
- each side file is described by a recipe: which 64-byte-aligned range holds
  which weight in which form (FP32, BF16, FP16, FP8 E4M3/E5M2 with the
  compiler's per-tensor scale, or transposed), plus the bytes no form explains
  (stored zlib-compressed); `prepare` rebuilds each side file from its recipe
  and checks it equals the compiler's before it is left behind, and the GPU
  machine rebuilds it and checks its SHA-256 (the runtime checks its FNV-1a
  hash again when it loads the module).

The models are the builders of tests/e2e/gen_models.py at benchmark sizes,
so the ONNX graph (and the PyTorch rebuild in bench/gpu_torch.py) is the e2e
model's graph. Only `build_onnx` needs onnx; the rest needs numpy and
ml_dtypes.
"""

import hashlib
import json
import math
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PORTABLE_MIN_ELEMENTS = 65536

# Model sizes: the GPU run, the CPU dry run (same weights, fewer tokens), a test.
SHAPES = {
    "gpu": {
        "gpt_block": dict(batch=8, seq=512, hidden=768, heads=12, mlp=3072),
        "mlp": dict(batch=4096, d_in=1024, hidden1=4096, hidden2=4096, d_out=1024),
    },
    "dry": {
        "gpt_block": dict(batch=1, seq=64, hidden=768, heads=12, mlp=3072),
        "mlp": dict(batch=16, d_in=1024, hidden1=4096, hidden2=4096, d_out=1024),
    },
    # ctest bench_gpu_selftest: one 4 MiB weight, so side files and recipes are there.
    "tiny": {
        "gpt_block": dict(batch=2, seq=16, hidden=64, heads=4, mlp=256),
        "mlp": dict(batch=4, d_in=256, hidden1=1024, hidden2=1024, d_out=64),
    },
}
SEEDS = {"gpt_block": 101, "mlp": 102}
PRECISIONS = ["fp32", "tf32", "bf16", "fp16", "fp8"]


# ---------------------------------------------------------------------------
# Portable pseudo-random weights
# ---------------------------------------------------------------------------

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x):
    """splitmix64's output function on a uint64 array (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def tensor_seed(model_seed, name):
    """The seed of one tensor: the model's seed and a CRC of the name."""
    return (int(model_seed) << 32) | zlib.crc32(name.encode())


def portable_normal(seed, shape, std):
    """Near-Gaussian float32 values, the same bits on every machine and numpy."""
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, np.float32)
    unit = float(std) * math.sqrt(3.0) / 2.0**24   # std of a sum of four 24-bit uniforms
    chunk = 1 << 22
    with np.errstate(over="ignore"):
        base = np.uint64(seed & (2**64 - 1)) * np.uint64(2**20 + 7)
        for start in range(0, n, chunk):
            idx = np.arange(start, min(n, start + chunk), dtype=np.uint64) * np.uint64(2) + base
            a, b = _splitmix64(idx), _splitmix64(idx + np.uint64(1))
            mask = np.uint64(0xFFFFFF)
            k = ((a >> np.uint64(40)) + ((a >> np.uint64(8)) & mask) +
                 (b >> np.uint64(40)) + ((b >> np.uint64(8)) & mask)).astype(np.int64)
            out[start:start + len(idx)] = ((k - 2**25).astype(np.float64) * unit).astype(np.float32)
    return out.reshape(shape)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def flops(name, shape):
    """Model FLOPs of one run: 2*M*N*K per GEMM (attention's full S x S too)."""
    if name == "gpt_block":
        b, s, d, h, f = (shape[k] for k in ("batch", "seq", "hidden", "heads", "mlp"))
        tokens = b * s
        linear = 2 * tokens * (d * 3 * d + d * d + 2 * d * f)
        attention = 2 * 2 * b * s * s * d       # Q K^T and P V over all heads
        return linear + attention
    b, i, h1, h2, o = (shape[k] for k in ("batch", "d_in", "hidden1", "hidden2", "d_out"))
    return 2 * b * (i * h1 + h1 * h2 + h2 * o)


def build_onnx(name, shape):
    """(onnx model, inputs, portable specs, small initializers) at `shape`.

    Large float initializers and the inputs are replaced by portable values."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
    import gen_models  # noqa: E402  (needs onnx)
    from onnx import numpy_helper
    seed = SEEDS[name]
    if name == "gpt_block":
        model, inputs = gen_models.build_gpt_block(vocab=None, name=name, seed=seed, **shape)
    else:
        model, inputs = gen_models.build_mlp(name=name, seed=seed, **shape)
    portable, small = {}, {}
    for i, init in enumerate(model.graph.initializer):
        arr = numpy_helper.to_array(init)
        if arr.dtype == np.float32 and arr.size >= PORTABLE_MIN_ELEMENTS:
            spec = {"shape": list(arr.shape), "seed": tensor_seed(seed, init.name),
                    "std": float(f"{float(arr.std()):.6g}")}
            portable[init.name] = spec
            new = portable_normal(spec["seed"], arr.shape, spec["std"])
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(new, init.name))
        else:
            small[init.name] = arr
    input_specs = {}
    for iname, arr in inputs.items():
        spec = {"shape": list(arr.shape), "seed": tensor_seed(seed, "input:" + iname), "std": 1.0}
        input_specs[iname] = spec
    return model, input_specs, portable, small


def weights_of(portable, small):
    """Every initializer by name: the portable ones regenerated, the rest as given."""
    out = dict(small)
    for wname, spec in portable.items():
        out[wname] = portable_normal(spec["seed"], spec["shape"], spec["std"])
    return out


def inputs_of(input_specs):
    return {n: portable_normal(s["seed"], s["shape"], s["std"]) for n, s in input_specs.items()}


# ---------------------------------------------------------------------------
# Side-file recipes
# ---------------------------------------------------------------------------

ALIGN = 64


def _fp8_forms(w):
    """(form name, bytes) of `w` quantized as the compiler does: x * scale in
    float32, scale = max / amax / 2^margin (double, then float), saturated."""
    import ml_dtypes
    amax = float(np.abs(w.astype(np.float64)).max())
    if not amax > 0:
        return
    for fmt, dt, fmax in (("e4m3", ml_dtypes.float8_e4m3fn, 448.0),
                          ("e5m2", ml_dtypes.float8_e5m2, 57344.0)):
        for margin in range(4):
            scale = np.float32(min(fmax / amax / 2.0**margin, float(np.finfo(np.float32).max)))
            q = np.clip(w * scale, -fmax, fmax).astype(dt)
            yield f"{fmt}:m{margin}", q.tobytes()


def _forms(w):
    """Every byte form a weight may take in a side file, as (form, bytes)."""
    import ml_dtypes
    variants = [("", w)]
    if w.ndim == 2:
        variants.append(("T", np.ascontiguousarray(w.T)))
    for tag, v in variants:
        pre = tag + ("." if tag else "")
        yield pre + "f32", v.tobytes()
        yield pre + "bf16", v.astype(ml_dtypes.bfloat16).tobytes()
        yield pre + "f16", v.astype(np.float16).tobytes()
        for form, data in _fp8_forms(v):
            yield pre + form, data


def _form_bytes(w, form):
    for f, data in _forms(w):
        if f == form:
            return data
    raise ValueError(f"unknown weight form '{form}'")


def make_recipe(side, weights):
    """Recipe of side-file bytes `side` from `weights` (name -> float32 array)."""
    index = {}
    for off in range(0, len(side) - 31, ALIGN):
        index.setdefault(side[off:off + 32], []).append(off)
    covered = np.zeros(len(side), np.bool_)   # True where a weight form explains the bytes
    segments = []
    for wname, w in weights.items():
        if w.dtype != np.float32 or w.size < 1024:
            continue
        for form, data in _forms(w):
            hits = [off for off in index.get(data[:32], [])
                    if not covered[off] and side[off:off + len(data)] == data]
            for off in hits:
                segments.append({"offset": off, "size": len(data), "weight": wname, "form": form})
                covered[off:off + len(data)] = True
            if hits:
                break                       # a weight is stored in one form
    # Bytes no form explains (scales, padding is zero) are kept as they are.
    keep = ~covered & (np.frombuffer(side, np.uint8) != 0)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.view(np.int8), [0]))))
    raw_ranges = [[int(a), int(b - a)] for a, b in zip(edges[::2], edges[1::2])]
    raw = b"".join(side[a:a + n] for a, n in raw_ranges)
    recipe = {"size": len(side), "sha256": hashlib.sha256(side).hexdigest(),
              "segments": sorted(segments, key=lambda s: s["offset"]), "raw": raw_ranges}
    return recipe, zlib.compress(raw, 6)


def rebuild_side_file(recipe, raw_compressed, weights):
    """The side file's bytes from its recipe; ValueError if the hash differs."""
    out = bytearray(recipe["size"])
    for seg in recipe["segments"]:
        data = _form_bytes(weights[seg["weight"]], seg["form"])
        if len(data) != seg["size"]:
            raise ValueError(f"weight {seg['weight']} as {seg['form']}: {len(data)} bytes, "
                             f"recipe says {seg['size']}")
        out[seg["offset"]:seg["offset"] + seg["size"]] = data
    raw = zlib.decompress(raw_compressed) if recipe["raw"] else b""
    at = 0
    for off, size in recipe["raw"]:
        out[off:off + size] = raw[at:at + size]
        at += size
    digest = hashlib.sha256(out).hexdigest()
    if digest != recipe["sha256"]:
        raise ValueError(f"rebuilt side file has SHA-256 {digest[:16]}..., the compiler's had "
                         f"{recipe['sha256'][:16]}... (weights regenerated differently here?)")
    return bytes(out)


def max_rel(out, ref):
    """max|out - ref| / max|ref| (inf when out has a non-finite value ref lacks)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return float("nan")
    if not np.isfinite(out).all() and np.isfinite(ref).all():
        return float("inf")
    denom = np.abs(ref).max()
    return float(np.abs(out - ref).max() / denom) if denom > 0 else float(np.abs(out - ref).max())


def load_manifest(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        return json.load(f)


def model_weights(folder, entry):
    """All initializers of a manifest entry, regenerated (portable) and loaded (small)."""
    with np.load(os.path.join(folder, entry["small"])) as z:
        small = {k: z[k] for k in z.files}
    return weights_of(entry["portable"], small)
