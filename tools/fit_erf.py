"""Fits float32 erf's rational approximation (tinyfw/uop/elementwise_math.py, ERF_P and ERF_Q):
erf x = x P(x**2) / Q(x**2) on 0 <= x <= 4, P of degree 7 and Q of degree 4 in t = x**2, Q(0) = 1,
of least maximum relative error.

The fit: P(t) - f(t) Q(t) = 0 solved by least squares on 8000 points (f = erf(sqrt t)/sqrt t),
each row weighted by 1 / (f Q) so the residual is the relative error (Sanathanan-Koerner); then
Lawson's iteration multiplies each point's weight by its error, which moves the least-squares
fit toward the one of least maximum error (the best of ITERATIONS is kept: the iteration drifts
once the weights of most points have shrunk to nothing). t is scaled to [0, 1] while fitting, for a
well-conditioned matrix. Prints the coefficients and the largest relative error, exact and with
every step rounded to float32 (without fused multiply-adds: the worse case).

Run from the repo root: .venv/bin/python -m tools.fit_erf
"""
from __future__ import annotations

import math

import numpy as np

LIMIT = 4.0                 # erf 4 = 1 - 1.5e-8: 1 in float32
P_DEGREE, Q_DEGREE = 7, 4
ITERATIONS, LAWSON_FROM = 200, 10


def erf_over_x(x: np.ndarray) -> np.ndarray:
    """erf x / x in float64, its limit 2/sqrt(pi) at 0."""
    return np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in x])


def fit() -> tuple[np.ndarray, np.ndarray, float]:
    """P's and Q's coefficients in t (lowest power first) and the fit's largest relative
    error."""
    half = np.linspace(0, math.pi / 2, 4000)
    x = np.unique(np.concatenate([np.linspace(0, LIMIT, 4000), LIMIT * (1 - np.cos(half))]))
    f, s = erf_over_x(x), x * x / (LIMIT * LIMIT)
    powers_p = np.vander(s, P_DEGREE + 1, increasing=True)
    powers_q = np.vander(s, Q_DEGREE + 1, increasing=True)
    weights, q_values = np.ones_like(s), np.ones_like(s)
    best: tuple[float, np.ndarray, np.ndarray] = (math.inf, powers_p[0], powers_q[0])
    for step in range(ITERATIONS):
        rows = np.hstack([powers_p, -f[:, None] * powers_q[:, 1:]])
        scale = weights / (f * np.abs(q_values))
        solved = np.linalg.lstsq(rows * scale[:, None], f * scale, rcond=None)[0]
        p, q = solved[:P_DEGREE + 1], np.concatenate([[1.0], solved[P_DEGREE + 1:]])
        q_values = powers_q @ q
        error = (powers_p @ p / q_values - f) / f
        best = min(best, (float(np.abs(error).max()), p, q), key=lambda fitted: fitted[0])
        if step >= LAWSON_FROM:
            weights = weights * np.abs(error)
            weights = np.maximum(weights / weights.sum(), 1e-300)
    largest, p, q = best
    t_scale = LIMIT * LIMIT
    return (p / t_scale ** np.arange(P_DEGREE + 1), q / t_scale ** np.arange(Q_DEGREE + 1),
            largest)


def float32_error(p: np.ndarray, q: np.ndarray) -> float:
    """The largest relative error of x P(x**2) / Q(x**2), each step rounded to float32, on
    [0, LIMIT] and at tiny x."""
    x = np.concatenate([np.linspace(0, LIMIT, 200001), np.exp(np.linspace(-80, 0, 2000))])
    x = x.astype(np.float32)
    t = x * x

    def horner(coefficients: np.ndarray) -> np.ndarray:
        out = np.full_like(t, np.float32(coefficients[-1]))
        for c in coefficients[-2::-1]:
            out = out * t + np.float32(c)
        return out
    approx = np.minimum(x * horner(p) / horner(q), np.float32(1.0))
    exact = np.array([math.erf(float(v)) for v in x])
    nonzero = exact > 0
    return float((np.abs(approx.astype(np.float64) - exact)[nonzero] / exact[nonzero]).max())


def main() -> None:
    p, q, error = fit()
    print("ERF_P =", [float(c) for c in p])
    print("ERF_Q =", [float(c) for c in q])
    print(f"largest relative error: {error:.2e} exact, {float32_error(p, q):.2e} in float32")


if __name__ == "__main__":
    main()
