"""fit_erfc_poly.py — the coefficients of nn/gelu.c's ERFC_Q (the float build's Φ).

With z = |u|/√2 and t = 1/(1 + z/2) (t runs from 1 at z = 0 down to 0.177 at z = 9.3, beyond
which erfc(z) is 0 in float), erfc(z) = t·Q(t)·e^(−z²) where Q(t) = erfc(z)·e^(z²)/t is smooth on
[0.177, 1] (Q(1) = 1, Q → 1/(2√π) as z → ∞). This fits Q by a degree-9 polynomial in t,
minimising the largest *relative* error (least squares on 4000 Chebyshev nodes, reweighted
toward the minimax solution by Lawson's iteration), and prints the coefficients highest power
first, as nn/gelu.c lists them, with the error in double and when evaluated in float32 (Horner).
Needs only numpy; deterministic.

    /usr/bin/python3 tests/reference/fit_erfc_poly.py
"""
import math

import numpy as np

DEGREE, NODES, LAWSON_ITERS = 9, 4000, 80
T_MIN = 1.0 / (1.0 + 9.3 / 2.0)


def q_exact(t):
    """erfc(z)·e^(z²)/t for z = 2(1 − t)/t, in double (an asymptotic series where erfc underflows)."""
    out = np.empty_like(t)
    for i, ti in enumerate(t):
        z = 2.0 * (1.0 - ti) / ti
        if z < 25.0:
            v = math.erfc(z) * math.exp(z * z)
        else:
            s, term = 1.0, 1.0
            for k in range(1, 8):
                term *= -(2 * k - 1) / (2.0 * z * z)
                s += term
            v = s / (z * math.sqrt(math.pi))
        out[i] = v / ti
    return out


def main():
    k = np.arange(NODES)
    t = (np.cos(np.pi * (k + 0.5) / NODES) + 1.0) / 2.0 * (1.0 - T_MIN) + T_MIN
    q = q_exact(t)
    v = np.vander(t, DEGREE + 1)
    weights = np.ones(NODES)
    for _ in range(LAWSON_ITERS):
        a = v * (weights / q)[:, None]
        coef = np.linalg.lstsq(a, weights, rcond=None)[0]
        err = (v @ coef - q) / q
        weights = weights * np.abs(err) + 1e-30
        weights /= weights.mean()
    grid = np.linspace(T_MIN, 1.0, 100001)
    exact = q_exact(grid)
    c32, g32 = coef.astype(np.float32), grid.astype(np.float32)
    p = np.full_like(g32, c32[0])
    for c in c32[1:]:
        p = (p * g32 + c).astype(np.float32)
    print("ERFC_Q =", ", ".join("%.9ef" % c for c in coef))
    print("max relative error: %.3g in double, %.3g in float32"
          % (np.abs(np.vander(grid, DEGREE + 1) @ coef / exact - 1).max(),
             np.abs(p.astype(np.float64) / q_exact(g32.astype(np.float64)) - 1).max()))


if __name__ == "__main__":
    main()
