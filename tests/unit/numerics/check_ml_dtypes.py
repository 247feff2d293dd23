#!/usr/bin/env python3
"""Second, independent reference for mixprec_numerics: ml_dtypes and numpy.

Usage: check_ml_dtypes.py <path to rounding_dump>

Checks, through the rounding_dump CLI (encodeArray/decodeArray):
  * decode: every F16/BF16 pattern and all 256 values of each FP8 format,
    against ml_dtypes/numpy `.view(fmt).astype(float32)`;
  * encode (non-saturating): boundary inputs (every value of every format,
    midpoints, +-2 float32 ulps around both, overflow thresholds, float32
    subnormals, specials, NaNs) plus 10^6 uniformly random float32 bit
    patterns and 10^6 random values inside each format's range, against
    `np.float32(...).astype(fmt)` (round to nearest even; overflow gives inf,
    or NaN for float8_e4m3fn, like APFloat).
  * saturating: ml_dtypes has no satfinite cast, so the reference is the
    ml_dtypes result with +-inf (and, for E4M3FN, overflow NaNs of finite
    inputs) replaced by +-max finite and NaN inputs mapped to CUDA's
    canonical NaN (0x7f / 0x7fff).

NaN bits: ml_dtypes keeps the sign of a NaN, as mixprec does, but not the
payload rule (numpy float16 does not set the quiet bit, bfloat16/e5m2 drop the
payload). For NaN results we require NaN with the same sign and report how
many payloads differ. Every other value must match bit for bit.

Exits non-zero on any mismatch; prints the number of values checked.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - the environment is expected to have it
    print("check_ml_dtypes: ml_dtypes is not installed", file=sys.stderr)
    sys.exit(1)

FORMATS = {
    # name: (numpy dtype, storage dtype, max finite bits, canonical CUDA NaN)
    "f16": (np.float16, np.uint16, 0x7BFF, 0x7FFF),
    "bf16": (ml_dtypes.bfloat16, np.uint16, 0x7F7F, 0x7FFF),
    "f8E4M3FN": (ml_dtypes.float8_e4m3fn, np.uint8, 0x7E, 0x7F),
    "f8E5M2": (ml_dtypes.float8_e5m2, np.uint8, 0x7B, 0x7F),
}
SEED = 20261129


def run_dump(tool, args, inp, out_dtype, workdir):
    src = os.path.join(workdir, "in.bin")
    dst = os.path.join(workdir, "out.bin")
    inp.tofile(src)
    subprocess.run([tool] + args + [src, dst], check=True)
    return np.fromfile(dst, dtype=out_dtype)


def is_nan_bits(name, bits):
    dtype, storage, _, _ = FORMATS[name]
    return np.isnan(bits.astype(storage).view(dtype).astype(np.float32))


def sign_bit(bits, storage):
    return (bits.astype(np.uint32) >> (8 * np.dtype(storage).itemsize - 1)) & 1


def neighbours(x, k=2):
    """x and its float32 neighbours up to k ulps away, both directions."""
    out = [x]
    lo, hi = x.copy(), x.copy()
    for _ in range(k):
        lo = np.nextafter(lo, np.float32(-np.inf))
        hi = np.nextafter(hi, np.float32(np.inf))
        out += [lo, hi]
    return np.concatenate(out)


def boundary_inputs():
    parts = []
    for name, (dtype, storage, _, _) in FORMATS.items():
        bits = np.arange(1 << (8 * np.dtype(storage).itemsize), dtype=np.uint32).astype(storage)
        vals = bits.view(dtype).astype(np.float32)
        vals = vals[np.isfinite(vals)]
        parts.append(neighbours(vals))
        pos = np.unique(vals[vals >= 0].astype(np.float64))
        pos = np.append(pos, 2 * pos[-1] - pos[-2])  # "next" value past max
        mids = ((pos[:-1] + pos[1:]) / 2).astype(np.float32)
        assert np.all(mids.astype(np.float64) == (pos[:-1] + pos[1:]) / 2)
        parts.append(neighbours(mids))
        parts.append(neighbours(-mids))
    specials = np.array([0.0, np.inf, np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                         1e-8, 500.0, 65504.0, 65520.0, 448.0, 464.0, 480.0, 57344.0, 61440.0],
                        dtype=np.float32)
    parts += [neighbours(specials), neighbours(-specials)]
    sub = []
    for k in range(23):
        sub += [1 << k, (1 << k) - 1, (1 << k) + 1]
    sub = np.array(sub, dtype=np.uint32)
    nan_payloads = np.array([1, 0x7FFFFF, 0x400000, 0x400001, 0x3FFFFF, 0x200000, 0x2000,
                             0x1FFF, 0x10000, 0xFFFF, 0x12345, 0x654321], dtype=np.uint32)
    nans = np.concatenate([0x7F800000 | nan_payloads, 0x7F800000 | (1 << np.arange(23,
                                                                                 dtype=np.uint32))])
    raw = np.concatenate([sub, nans])
    raw = np.concatenate([raw, raw | np.uint32(0x80000000)])
    parts.append(raw.view(np.float32))
    return np.unique(np.concatenate(parts).view(np.uint32)).view(np.float32)


def focused_random(name, rng, n):
    dtype = FORMATS[name][0]
    info = ml_dtypes.finfo(dtype) if dtype is not np.float16 else np.finfo(np.float16)
    lo = int(np.floor(np.log2(float(info.smallest_subnormal)))) - 3 + 127
    hi = min(int(np.floor(np.log2(float(info.max)))) + 3 + 127, 255)
    r = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    e = rng.integers(max(lo, 0), hi + 1, size=n, dtype=np.uint32)
    return ((r & np.uint32(0x807FFFFF)) | (e << np.uint32(23))).view(np.float32)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool = sys.argv[1]
    failures = 0
    checked = 0
    rng = np.random.default_rng(SEED)
    with np.errstate(over="ignore"):  # nextafter(max) -> inf is intended
        boundaries = boundary_inputs()
    base = np.concatenate([
        boundaries,
        rng.integers(0, 1 << 32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(
            np.float32),
    ])
    with tempfile.TemporaryDirectory() as work, np.errstate(all="ignore"):
        for name, (dtype, storage, max_bits, cuda_nan) in FORMATS.items():
            width = 8 * np.dtype(storage).itemsize
            smask = 1 << (width - 1)

            # ---- decode, exhaustive
            bits = np.arange(1 << width, dtype=np.uint32).astype(storage)
            got = run_dump(tool, ["decode", name], bits, np.float32, work)
            want = bits.view(dtype).astype(np.float32)
            nan = np.isnan(want)
            bad = (got.view(np.uint32) != want.view(np.uint32)) & ~nan
            bad |= nan & ~(np.isnan(got) & (np.signbit(got) == np.signbit(want)))
            if bad.any():
                i = np.flatnonzero(bad)[:8]
                print(f"FAIL {name} decode: {bad.sum()} mismatches, e.g. bits "
                      f"{[hex(int(b)) for b in bits[i]]} got {got[i]} want {want[i]}")
                failures += int(bad.sum())
            checked += bits.size
            print(f"{name:9s} decode: {bits.size} patterns checked")

            # ---- encode, non-saturating and saturating
            x = np.concatenate([base, focused_random(name, rng, 1_000_000)])
            ref = x.astype(dtype).view(storage).astype(np.uint32)
            for mode in ("nosat", "sat"):
                got = run_dump(tool, ["encode", name, mode], x, storage, work).astype(np.uint32)
                want = ref.copy()
                if mode == "sat":
                    finite_in = np.isfinite(x) | np.isinf(x)
                    over = finite_in & (is_nan_bits(name, want) | np.isinf(
                        want.astype(storage).view(dtype).astype(np.float32)))
                    want[over] = (np.signbit(x[over]).astype(np.uint32) * smask) | max_bits
                    want[np.isnan(x)] = cuda_nan
                want_nan = is_nan_bits(name, want)
                got_nan = is_nan_bits(name, got)
                bad = (got != want) & ~want_nan
                bad |= want_nan & ~(got_nan & (sign_bit(got, storage) == sign_bit(want, storage)))
                payload_diffs = int((want_nan & (got != want)).sum())
                if bad.any():
                    i = np.flatnonzero(bad)[:8]
                    print(f"FAIL {name} encode {mode}: {bad.sum()} mismatches, e.g. inputs "
                          f"{[hex(int(v)) for v in x[i].view(np.uint32)]} got "
                          f"{[hex(int(v)) for v in got[i]]} want {[hex(int(v)) for v in want[i]]}")
                    failures += int(bad.sum())
                checked += x.size
                print(f"{name:9s} encode {mode:5s}: {x.size} inputs checked; NaN results "
                      f"whose payload differs from ml_dtypes: {payload_diffs}")

    print(f"check_ml_dtypes: {checked} values checked, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
