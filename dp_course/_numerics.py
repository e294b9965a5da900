"""Numerics shared by the library: log-space helpers and inverse-cdf sampling.

Probabilities in privacy accounting get very small (binomial tails at k = 10^6, e^{-50}), so the library
works with logarithms and only exponentiates at the end.  Each helper says which formula it uses where.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = ["log1mexp", "log_binomial_pmf", "logsumexp", "logdiffexp", "inverse_cdf_sample"]

logsumexp = special.logsumexp


def log1mexp(x: npt.ArrayLike) -> float | np.ndarray:
    """Return ``log(1 - exp(x))`` for ``x <= 0``, accurately for every ``x``.

    Uses ``log(-expm1(x))`` for ``x > -ln 2`` and ``log1p(-exp(x))`` otherwise (Maechler 2012,
    "Accurately computing log(1 - exp(-|a|))", CRAN Rmpfr vignette).  ``x = 0`` gives ``-inf``.
    """
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    near = x > -np.log(2.0)
    with np.errstate(divide="ignore"):
        out[near] = np.log(-np.expm1(x[near]))
        out[~near] = np.log1p(-np.exp(x[~near]))
    return out[()] if out.ndim == 0 else out


def logdiffexp(a: npt.ArrayLike, b: npt.ArrayLike) -> float | np.ndarray:
    """Return ``log(exp(a) - exp(b))`` for ``a >= b`` (``-inf`` when equal)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = a + log1mexp(np.minimum(b - a, 0.0))
    out = np.where(np.isneginf(b), a, out)
    return out[()] if np.ndim(out) == 0 else out


def _stirlerr(m: np.ndarray) -> np.ndarray:
    """``log(m!) - log(sqrt(2 pi m) (m/e)^m)`` for m >= 1 (Loader 2000, eq. 4; the series for m > 15)."""
    m = np.asarray(m, dtype=float)
    out = np.empty_like(m)
    small = m <= 15
    ms = m[small]
    out[small] = special.gammaln(ms + 1.0) - (ms + 0.5) * np.log(ms) + ms - 0.5 * np.log(2 * np.pi)
    mb = m[~small]
    inv2 = 1.0 / (mb * mb)
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    out[~small] = (s0 - (s1 - (s2 - (s3 - s4 * inv2) * inv2) * inv2) * inv2) / mb
    return out


def _bd0(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Deviance term ``x log(x / mean) + mean - x`` without cancellation (Loader 2000, Sec. 2)."""
    x = np.asarray(x, dtype=float)
    mean = np.broadcast_to(np.asarray(mean, dtype=float), x.shape)
    out = x * np.log(x / mean) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    if near.any():
        xn, mn = x[near], mean[near]
        v = (xn - mn) / (xn + mn)
        s = (xn - mn) * v
        ej = 2.0 * xn * v
        v2 = v * v
        for j in range(1, 40):  # |v| < 0.1: each term is at least 100x smaller than the last
            ej = ej * v2
            term = ej / (2 * j + 1)
            s = s + term
            if np.all(np.abs(term) <= 1e-17 * np.abs(s)):
                break
        out[near] = s
    return out


def log_binomial_pmf(k: int, p_log: float, q_log: float) -> np.ndarray:
    """Log-pmf of Binomial(k, p) at 0..k, given ``log p`` and ``log(1 - p)``, accurate to ~1e-15 relative.

    Uses Loader's saddle-point form (C. Loader, "Fast and accurate computation of binomial probabilities",
    2000), the algorithm behind R's ``dbinom``:
    ``log f(x) = s(k) - s(x) - s(k-x) - bd0(x, kp) - bd0(k-x, kq) + 0.5 log(k / (2 pi x (k-x)))``
    with ``s`` the Stirling error.  The plain ``gammaln`` form loses ~1e-9 at k = 10^6 to cancellation.
    Passing both logs avoids forming ``1 - p`` when ``p`` is within rounding of 1.
    """
    x = np.arange(k + 1, dtype=float)
    out = np.empty(k + 1)
    out[0] = k * q_log
    out[k] = k * p_log
    if k >= 2:
        xi = x[1:k]
        p, q = np.exp(p_log), np.exp(q_log)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lc = (_stirlerr(np.array([float(k)]))[0] - _stirlerr(xi) - _stirlerr(k - xi)
                  - _bd0(xi, k * p) - _bd0(k - xi, k * q)
                  + 0.5 * (np.log(k) - np.log(2 * np.pi) - np.log(xi) - np.log(k - xi)))
        if p == 0 or q == 0 or not np.all(np.isfinite(lc)):
            # degenerate p: fall back to the direct form (exact zeros / -inf where they belong)
            with np.errstate(invalid="ignore"):
                lc = (special.gammaln(k + 1.0) - special.gammaln(xi + 1.0) - special.gammaln(k - xi + 1.0)
                      + np.where(xi > 0, xi * p_log, 0.0) + np.where(k - xi > 0, (k - xi) * q_log, 0.0))
        out[1:k] = lc
    return out


def inverse_cdf_sample(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Indices drawn from ``pmf`` by inverting its cdf: index ``j`` with probability ``pmf[j]`` per uniform in ``u``.

    ``u`` holds uniforms in [0, 1) of any shape; the result has its shape.  ``searchsorted(..., side="right")``
    never returns an index whose probability is 0, and the cdf is scaled by its last entry so that a pmf
    summing to 1 only up to rounding never yields the index ``len(pmf)``.
    """
    cdf = np.cumsum(pmf)
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(idx, pmf.size - 1)
