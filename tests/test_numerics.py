"""Log-space helpers against 40-digit arithmetic (mpmath, installed with dp-accounting)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dp_course._numerics import log1mexp, log_binomial_pmf, logdiffexp


@pytest.mark.parametrize("k,eps", [(1, 0.5), (2, 1.0), (7, 50.0), (100, 0.1), (1000, 5.0), (10 ** 6, 0.01),
                                   (10 ** 6, 3.0)])
def test_log_binomial_pmf_against_mpmath(k, eps):
    """Binomial(k, e^eps/(1+e^eps)) log-pmf to ~1e-13 relative, where gammaln loses ~1e-9 at k = 10^6."""
    mp.mp.dps = 40
    log_p, log_q = -math.log1p(math.exp(-eps)), -math.log1p(math.exp(eps))
    values = log_binomial_pmf(k, log_p, log_q)
    # the same log p, log q the function sees, so only its own error is measured
    lp, lq = mp.mpf(log_p), mp.mpf(log_q)
    mean = int(k * math.exp(log_p))
    for i in sorted({0, 1, k // 3, k // 2, mean, min(mean + 1, k), k - 1, k}):
        exact = mp.log(mp.binomial(k, i)) + i * lp + (k - i) * lq
        # the inputs log p, log q are rounded (~1e-16 relative) and exp(log p) + exp(log q) != 1 exactly;
        # multiplied by up to k that alone moves the answer by ~k * 1e-16 * |log q|: allow 8x that
        tol = 1e-13 + 8e-16 * k * max(abs(log_p), abs(log_q))
        assert abs(values[i] - float(exact)) <= tol


def test_log1mexp_and_logdiffexp():
    x = np.array([-1e-20, -1e-5, -0.5, -math.log(2), -1.0, -30.0, -800.0])
    exact = [float(mp.log(1 - mp.exp(mp.mpf(v)))) for v in x]
    np.testing.assert_allclose(log1mexp(x), exact, rtol=1e-14)
    assert log1mexp(0.0) == -math.inf
    assert logdiffexp(2.0, 1.0) == pytest.approx(math.log(math.e ** 2 - math.e), rel=1e-15)
    assert logdiffexp(1.0, -math.inf) == 1.0
