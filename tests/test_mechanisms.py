"""Tests for dp_course.mechanisms: exact output laws, samplers that follow them, privacy levels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dp_course.mechanisms import (GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism, NameAndShame,
                                  RandomizedResponse)

# Statistical checks below use n draws and a deviation threshold t on an empirical frequency; Hoeffding's
# inequality bounds the false-failure probability of each check by 2 exp(-2 n t^2).
N = 200_000
T = 0.015  # 2 exp(-2 * 2e5 * 0.015^2) = 2 exp(-90) ~ 1e-39 per frequency checked


def max_log_ratio(p, q):
    both = (p > 0) & (q > 0)
    return float(np.max(np.abs(np.log(p[both]) - np.log(q[both]))))


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, math.log(3), 5.0, 50.0])
def test_randomized_response_law_and_level(eps):
    p, q = RandomizedResponse(eps).output_distributions()
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    assert p[0] == pytest.approx(math.exp(eps) / (1 + math.exp(eps)), rel=1e-12)
    assert q[0] > 0                                    # stays positive even at eps = 50
    assert max_log_ratio(p, q) == pytest.approx(eps, abs=1e-12)   # exactly eps-DP


def test_randomized_response_sampler_follows_law():
    mech = RandomizedResponse(math.log(3))             # truth with probability 3/4
    x = np.zeros(N, dtype=int)
    out = mech.sample(x, np.random.default_rng(0))
    assert abs(np.mean(out == 0) - 0.75) < T
    out1 = mech.sample(np.ones(N, dtype=int), np.random.default_rng(1))
    assert abs(np.mean(out1 == 1) - 0.75) < T
    np.testing.assert_array_equal(mech.sample(x[:50], np.random.default_rng(5)),
                                  mech.sample(x[:50], np.random.default_rng(5)))


@pytest.mark.parametrize("eps,k", [(0.5, 2), (1.0, 3), (2.0, 10), (0.0, 4), (30.0, 5)])
def test_kary_channel_is_stochastic_and_exactly_eps_dp(eps, k):
    mech = KaryRandomizedResponse(eps, k)
    m = mech.channel()
    np.testing.assert_allclose(m.sum(axis=1), 1.0, rtol=1e-12)
    assert m[0, 0] == pytest.approx(math.exp(eps) / (k - 1 + math.exp(eps)), rel=1e-12)
    # the worst pair of inputs and outputs gives exactly eps
    ratios = np.log(m[:, None, :]) - np.log(m[None, :, :])
    assert ratios.max() == pytest.approx(eps, abs=1e-12)
    p, q = mech.output_distributions()
    np.testing.assert_array_equal(p, m[0])
    np.testing.assert_array_equal(q, m[1])


def test_kary_sampler_follows_channel():
    mech = KaryRandomizedResponse(1.0, 4)
    out = mech.sample(np.full(N, 2), np.random.default_rng(3))
    freq = np.bincount(out, minlength=4) / N
    np.testing.assert_array_less(np.abs(freq - mech.channel()[2]), T)


def test_laplace_mechanism():
    mech = LaplaceMechanism.from_epsilon(0.5, sensitivity=2.0)
    assert mech.scale == pytest.approx(4.0) and mech.epsilon == pytest.approx(0.5)
    p, q = mech.output_distributions()
    assert p.mean() == 0 and q.mean() == 2.0 and p.std() == pytest.approx(4.0 * math.sqrt(2))
    # the log density ratio never exceeds sensitivity / scale
    y = np.linspace(-30, 30, 2001)
    assert np.max(np.abs(p.logpdf(y) - q.logpdf(y))) == pytest.approx(0.5, abs=1e-12)
    draws = mech.sample(np.zeros(N), np.random.default_rng(4))
    # Kolmogorov-Smirnov against Lap(0, 4): the DKW inequality gives P(D > 0.006) <= 2 e^{-2 N 0.006^2} ~ 1e-6
    assert stats.kstest(draws, p.cdf).statistic < 0.006
    assert isinstance(mech.sample(3.0, np.random.default_rng(0)), float)


def test_gaussian_mechanism_pld_matches_densities():
    mech = GaussianMechanism(sigma=1.5, sensitivity=0.5)
    pld = mech.privacy_loss_distribution()
    assert pld.mu == pytest.approx(0.5 ** 2 / (2 * 1.5 ** 2))
    p, q = mech.output_distributions()
    # E_P[ln p/q] by quadrature equals mu
    y = np.linspace(-15, 15, 200_001)
    kl = np.trapezoid(p.pdf(y) * (p.logpdf(y) - q.logpdf(y)), y)
    assert kl == pytest.approx(pld.mean, rel=1e-8)
    draws = mech.sample(np.zeros(N), np.random.default_rng(6))
    assert stats.kstest(draws, p.cdf).statistic < 0.006


@pytest.mark.parametrize("delta", [0.0, 0.01, 0.3])
def test_name_and_shame(delta):
    mech = NameAndShame(delta)
    p, q = mech.output_distributions()
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    pld = mech.privacy_loss_distribution()
    for eps in (0.0, 1.0, 40.0):
        assert pld.delta_for_epsilon(eps) == pytest.approx(delta, abs=1e-15)
    released = mech.sample(range(N), np.random.default_rng(7))
    assert abs(len(released) / N - delta) < T
    assert released == sorted(released)


@pytest.mark.parametrize("make,match", [
    (lambda: RandomizedResponse(-1), "epsilon must be >= 0, got -1"),
    (lambda: RandomizedResponse(float("nan")), "epsilon must be a number >= 0, got nan"),
    (lambda: KaryRandomizedResponse(1.0, 1), "k must be an integer >= 2, got 1"),
    (lambda: KaryRandomizedResponse(1.0, 2.5), "k must be an integer >= 2, got 2.5"),
    (lambda: LaplaceMechanism(0.0), "scale must be > 0, got 0"),
    (lambda: LaplaceMechanism.from_epsilon(0.0), "epsilon must be > 0, got 0"),
    (lambda: GaussianMechanism(1.0, sensitivity=-2), "sensitivity must be > 0, got -2"),
    (lambda: NameAndShame(1.0), r"delta must be in \[0, 1\), got 1"),
    (lambda: RandomizedResponse(1.0).sample([0, 2], np.random.default_rng(0)), "x must contain only bits"),
    (lambda: RandomizedResponse(1.0).sample([0, 1], 0), "rng must be a numpy.random.Generator"),
    (lambda: KaryRandomizedResponse(1.0, 3).sample([3], np.random.default_rng(0)), "x must contain integer"),
    (lambda: LaplaceMechanism(1.0).sample("abc", np.random.default_rng(0)), "value must contain real numbers"),
    (lambda: GaussianMechanism(1.0).sample([np.nan], np.random.default_rng(0)), "value must be finite"),
])
def test_bad_parameters_get_clear_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@given(st.one_of(st.floats(max_value=-1e-300), st.just(float("nan")), st.just(float("inf")),
                 st.text(max_size=3), st.none(), st.booleans()))
def test_bad_epsilon_property(eps):
    with pytest.raises(ValueError, match="epsilon"):
        RandomizedResponse(eps)
    with pytest.raises(ValueError, match="epsilon"):
        KaryRandomizedResponse(eps, 3)


def test_descriptions_are_frozen():
    mech = RandomizedResponse(1.0)
    with pytest.raises(AttributeError):
        mech.epsilon = 2.0  # type: ignore[misc]
