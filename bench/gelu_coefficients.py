#!/usr/bin/env python3
"""The coefficients of the FP32 GELU (erf form) in runtime/kernels/Erf.cpp,
printed as the float literals it holds. GELU(x) = x Phi(x), Phi the normal
CDF, and

  Phi(x)  = 1/2 + x P(x^2)               |x| <= 1/2  (P: 6 terms in x^2)
  Phi(-u) = exp(-u^2/2) S(u)              u > 1/2, and Phi(u) = 1 - Phi(-u)

S(u) = Phi(-u) exp(u^2/2) (a scaled Mills ratio) is a 10-term polynomial in
v = u - c on each of [1/2, 2], [2, 4], [4, 6] (c = 1, 3, 5: v is exact in
FP32), its constant term split into two floats (hi + lo) so that the
sum's last step rounds once. Each polynomial interpolates at 10 Chebyshev
nodes of its interval (mpmath, 40 digits); the script prints the relative
errors of the polynomials with the printed coefficients (in exact
arithmetic): all below 3e-8, half of 2^-24. The FP32 arithmetic,
not the approximation, sets the kernel's bound, which
tests/unit/cpu/ErfTest.cpp measures over every FP32 value.

Developers' machines only (mpmath, numpy: the venv /work/venv-fx has them).
Usage: /work/venv-fx/bin/python bench/gelu_coefficients.py
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def f32(x):
    return float(np.float32(float(x)))


def literal(x):
    return repr(np.float32(x)) .replace("np.float32(", "").rstrip(")") + "f"


def interpolate(f, lo, hi, n):
    """Monomial coefficients, lowest first, of f's interpolant at n
    Chebyshev nodes of [lo, hi]."""
    nodes = [(hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) + (hi + lo) / 2
             for k in range(n)]
    a = mp.matrix([[t**j for j in range(n)] for t in nodes])
    return list(mp.lu_solve(a, mp.matrix([f(t) for t in nodes])))


def phi(x):
    return mp.erfc(-mp.mpf(x) / mp.sqrt(2)) / 2


def S(u):
    return phi(-u) * mp.exp(mp.mpf(u) ** 2 / 2)


def value(coeffs, t):
    r = mp.mpf(0)
    for c in reversed(coeffs):
        r = r * t + c
    return r


# P(w) = (Phi(sqrt w) - 1/2) / sqrt w, w = x^2 in [0, 1/4].
P = [f32(c) for c in interpolate(lambda w: (phi(mp.sqrt(w)) - mp.mpf(1) / 2) / mp.sqrt(w),
                                 mp.mpf(1e-30), mp.mpf(1) / 4, 6)]
errP = max(abs(value(P, mp.mpf(w)) * mp.sqrt(w) / (phi(mp.sqrt(w)) - mp.mpf(1) / 2) - 1)
           for w in np.linspace(1e-6, 0.25, 500))
print("kPhiSmall =", "{" + ", ".join(literal(c) for c in P) + "}")
print("  relative error of x P(x^2) (the coefficients as floats):", mp.nstr(errP, 3))

print("kMills =")
for c, lo, hi in [(1, 0.5, 2), (3, 2, 4), (5, 4, 6)]:
    co = interpolate(lambda v: S(c + v), mp.mpf(lo - c), mp.mpf(hi - c), 10)
    c0 = f32(co[0])
    row = [c0, f32(co[0] - mp.mpf(c0))] + [f32(x) for x in co[1:]]
    exact = [mp.mpf(row[0]) + mp.mpf(row[1])] + [mp.mpf(x) for x in row[2:]]
    err = max(abs(value(exact, mp.mpf(v)) / S(c + v) - 1) for v in np.linspace(lo - c, hi - c, 600))
    print("  {" + ", ".join(literal(x) for x in row) + "},")
    print("  // u in [%g, %g], v = u - %d: relative error %s" % (lo, hi, c, mp.nstr(err, 3)))
