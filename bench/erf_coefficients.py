#!/usr/bin/env python3
"""The coefficients of runtime/kernels/Erf.cpp, printed to 17 digits:
erf's Taylor series (|x| <= 1, 17 terms) and a 24-term Chebyshev series of
erfc(u) exp(u^2) on [1, 4] (interpolation at Chebyshev nodes, mpmath at 50
digits; relative error 1.5e-17). Developers' machines only (mpmath: the
developer venv /work/venv-fx has it).

Usage: /work/venv-fx/bin/python bench/erf_coefficients.py
"""

import mpmath as mp
mp.mp.dps = 50
# Taylor: erf(x) = x * sum_n c_n (x^2)^n, c_n = 2/sqrt(pi) (-1)^n / (n! (2n + 1)).
taylor = [2 / mp.sqrt(mp.pi) * (-1) ** n / (mp.factorial(n) * (2 * n + 1)) for n in range(17)]
# Chebyshev: erfc(u) exp(u^2) on [1, 4] in t = (2u - 5) / 3, 24 terms.
a, b, N = 1, 4, 24
nodes = [mp.cos(mp.pi * (k + 0.5) / N) for k in range(N)]
vals = [mp.erfc((b - a) / 2 * t + (b + a) / 2) * mp.exp(((b - a) / 2 * t + (b + a) / 2) ** 2) for t in nodes]
cheb = []
for j in range(N):
    cheb.append(2 * sum(vals[k] * mp.cos(mp.pi * j * (k + 0.5) / N) for k in range(N)) / N)
cheb[0] /= 2
print("taylor:", ", ".join(mp.nstr(c, 17, min_fixed=0, max_fixed=0) for c in taylor))
print("cheb:", ", ".join(mp.nstr(c, 17, min_fixed=0, max_fixed=0) for c in cheb))
