"""Checks the outputs of int-ops.onnx (make-int-ops.py) in each folder
argv[2:] against exact Python integer arithmetic on the inputs in argv[1]."""
import sys

import numpy as np

d = sys.argv[1]
a, b = np.load(d + "/a.npy"), np.load(d + "/b.npy")
e, x, y = np.load(d + "/e.npy"), np.load(d + "/x.npy"), np.load(d + "/y.npy")
av, bv = a.tolist(), b.tolist()
sub = [[av[i][j] - bv[j] for j in range(3)] for i in range(2)]  # no wrap for these
mod = [[sub[i][j] % bv[j] for j in range(3)] for i in range(2)]  # Python: the divisor's sign
w = [[sub[i][j] if sub[i][j] < av[i][j] else mod[i][j] for j in range(3)] for i in range(2)]


def powf(base, expo):
    """The truncated double power; NaN (a negative base, a fractional
    exponent) is 0."""
    with np.errstate(all="ignore"):
        r = np.float64(base) ** np.float64(expo)
    return 0 if np.isnan(r) else int(r)


p = [[powf(av[i][j], e[j]) for j in range(3)] for i in range(2)]
t = [[av[i][j] if j <= i else 0 for j in range(3)] for i in range(2)]
want = {"w": np.array(w, np.int64), "p": np.array(p, np.int64), "fm": np.mod(x, y),
        "any": np.array(any(sub[i][j] < av[i][j] for i in range(2) for j in range(3))),
        "t": np.array(t, np.int64)}
for out in sys.argv[2:]:
    for name, v in want.items():
        got = np.load(f"{out}/{name}.npy")
        assert got.dtype == v.dtype and got.shape == v.shape, (out, name, got.dtype, got.shape)
        assert np.array_equal(got, v), (out, name, got.tolist(), v.tolist())
        if name == "fm":
            assert np.array_equal(np.signbit(got), np.signbit(v)), (out, name, got, v)
print("ok")
