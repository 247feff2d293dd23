#!/usr/bin/env python3
"""Round-trips numpy-written .npy files through the C++ reader/writer.

usage: check_npy.py NPY_ROUNDTRIP_BINARY WORK_DIR

For every supported dtype and a spread of shapes (0-d, zero-size dims, ...)
and every format version, numpy writes a file, npy_roundtrip reads and
re-writes it, and numpy must read back a byte-identical array of the same
dtype and shape. Files the library must reject (Fortran order, big-endian,
unsupported dtypes, truncated data) must fail with a message naming the file
and the problem. Exit 77 tells ctest to skip when numpy is unavailable.
"""
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy not available; skipping")
    sys.exit(77)

DTYPES = ["<f4", "<f8", "<f2", "<i8", "<i4", "|b1", "|u1", "|i1"]
SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4), (3, 1, 70)]
VERSIONS = [None, (1, 0), (2, 0), (3, 0)]  # None: np.save's own choice

rng = np.random.default_rng(1234)


def make_array(dt, shape):
    kind = np.dtype(dt).kind
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if kind == "f":
        a = (rng.standard_normal(shape) * 100).astype(dt)
        flat = a.reshape(-1)
        specials = [np.inf, -np.inf, np.nan, -0.0]
        for i in range(min(len(specials), flat.size)):
            flat[i] = specials[i]
        return a
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


def save(path, arr, version):
    if version is None:
        np.save(path, arr)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, arr, version=version)


def run_tool(tool, src, dst):
    return subprocess.run([tool, src, dst], capture_output=True, text=True)


def main():
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    checked = 0

    for dt in DTYPES:
        for shape in SHAPES:
            for version in VERSIONS:
                arr = make_array(dt, shape)
                tag = "%s_%s_v%s" % (dt[1:], "x".join(map(str, shape)) or "scalar",
                                     "default" if version is None else version[0])
                src = os.path.join(work, tag + ".npy")
                dst = os.path.join(work, tag + ".out.npy")
                save(src, arr, version)
                res = run_tool(tool, src, dst)
                checked += 1
                if res.returncode != 0:
                    failures.append("%s: tool failed: %s" % (tag, res.stderr.strip()))
                    continue
                back = np.load(dst, allow_pickle=False)
                if back.dtype.str != np.dtype(dt).str or back.shape != arr.shape:
                    failures.append("%s: got %s %s, want %s %s" % (
                        tag, back.dtype.str, back.shape, np.dtype(dt).str, arr.shape))
                elif back.tobytes() != arr.tobytes():
                    failures.append("%s: data differs after round trip" % tag)

    # Files the reader must refuse, with the expected message fragment.
    f4 = rng.standard_normal((3, 4)).astype("<f4")
    bad = {
        "fortran": (np.asfortranarray(f4), "fortran_order"),
        "bigendian": (f4.astype(">f4"), "big-endian"),
        "complex": (f4.astype("<c8"), "unsupported dtype"),
        "uint16": (f4.astype("<u2"), "unsupported dtype"),
        "structured": (np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]),
                       "unsupported dtype"),
    }
    for tag, (arr, fragment) in bad.items():
        src = os.path.join(work, "bad_" + tag + ".npy")
        np.save(src, arr)
        bad[tag] = (src, fragment)
    truncated = os.path.join(work, "bad_truncated.npy")
    np.save(truncated, f4)
    with open(truncated, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-3])
    bad["truncated"] = (truncated, "data too short")

    for tag, (src, fragment) in bad.items():
        res = run_tool(tool, src, os.path.join(work, "bad.out.npy"))
        checked += 1
        msg = res.stderr.strip()
        if res.returncode == 0:
            failures.append("bad_%s: accepted, expected an error" % tag)
        elif fragment not in msg or src not in msg or "\n" in msg:
            failures.append("bad_%s: unexpected error %r" % (tag, msg))

    for f in failures:
        print("FAIL", f)
    print("%d cases, %d failures" % (checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
