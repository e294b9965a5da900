"""Amplification by subsampling (dp_course.subsampling).

References: issue #3 reference values; dp-accounting 0.6.0 (``_compute_rdp_poisson_subsampled_gaussian`` at
integer orders); the defining integral of A_alpha in 40-digit arithmetic (mpmath quadrature); exact Rényi
divergences of Poisson-subsampled finite mechanisms computed by brute force.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from dp_course.rdp_accounting import DEFAULT_ORDERS
from dp_course.renyi import gaussian_rdp, laplace_rdp, randomized_response_rdp
from dp_course.subsampling import (fixed_size_amplification, fixed_size_amplification_epsilon,
                                   poisson_subsampled_gaussian_rdp, poisson_subsampled_rdp_bound)

ORDERS = np.array(DEFAULT_ORDERS)
INTEGER = ORDERS == np.round(ORDERS)


# ---------------------------------------------------------------------------------------------------------
# fixed-size sampling without replacement
# ---------------------------------------------------------------------------------------------------------

def test_fixed_size_reference_value():
    """Issue #3 reference: eps = 1, m/n = 0.1 -> 0.158565078740429; independently ln(1 + 0.1 (e - 1)) in
    40-digit arithmetic."""
    mp.mp.dps = 40
    exact = float(mp.log(1 + mp.mpf("0.1") * (mp.e - 1)))
    assert fixed_size_amplification_epsilon(1.0, 0.1) == pytest.approx(0.158565078740429, rel=1e-9)
    assert fixed_size_amplification_epsilon(1.0, 0.1) == pytest.approx(exact, rel=1e-15)
    eps, delta = fixed_size_amplification(1.0, 1e-5, 0.1)
    assert eps == pytest.approx(exact, rel=1e-15) and delta == pytest.approx(1e-6, rel=1e-15)


@pytest.mark.parametrize("eps,q", [(1e-12, 1e-6), (1e-5, 0.3), (0.5, 0.01), (3.0, 0.5), (800.0, 1e-3),
                                   (1e4, 0.25)])
def test_fixed_size_is_accurate_at_extremes(eps, q):
    """log1p/expm1 for small eps and q; factoring e^eps out for large eps (the naive form overflows)."""
    mp.mp.dps = 60
    exact = float(mp.log(1 + mp.mpf(q) * mp.expm1(mp.mpf(eps))))
    assert fixed_size_amplification_epsilon(eps, q) == pytest.approx(exact, rel=1e-13)


@given(st.floats(0.0, 700.0), st.floats(1e-9, 1.0), st.floats(1e-9, 1.0))
def test_amplification_never_increases_epsilon(eps, q1, q2):
    """Issue #3 ordering property: eps' <= eps, with equality at q = 1, and eps' grows with q."""
    lo, hi = sorted((q1, q2))
    e_lo, e_hi = fixed_size_amplification_epsilon(eps, lo), fixed_size_amplification_epsilon(eps, hi)
    assert e_lo <= e_hi * (1 + 1e-14) + 1e-300
    assert e_hi <= eps * (1 + 1e-14)
    assert fixed_size_amplification_epsilon(eps, 1.0) == pytest.approx(eps, rel=1e-14, abs=1e-300)


def test_fixed_size_vectorised():
    out = fixed_size_amplification_epsilon(np.array([[0.0, 1.0], [2.0, 3.0]]), 0.5)
    assert out.shape == (2, 2) and out[0, 0] == 0.0
    assert isinstance(fixed_size_amplification_epsilon(1.0, 0.5), float)


# ---------------------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian, exact RDP
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma", [(0.01, 1.1), (0.001, 0.8), (0.1, 2.0), (0.5, 0.7), (0.9, 5.0), (1e-5, 0.4)])
def test_integer_orders_match_dp_accounting(q, sigma):
    """dp-accounting's exact binomial expansion (_compute_log_a_int) at all integer default orders: 1e-8
    relative as the issue asks (observed ~1e-14)."""
    ref = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS[INTEGER])
    ours = poisson_subsampled_gaussian_rdp(q, sigma, ORDERS[INTEGER])
    np.testing.assert_allclose(ours, ref, rtol=1e-8)


def _mp_rdp(q, sigma, alpha):
    """(1/(alpha-1)) ln E_{z~N(0,sigma^2)}[(1 - q + q e^{(2z-1)/(2 sigma^2)})^alpha], 40 digits (MTZ19 Sec 3)."""
    q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    f = lambda z: mp.npdf(z, 0, s) * (1 - q + q * mp.exp((2 * z - 1) / (2 * s * s))) ** a  # noqa: E731
    z0 = s ** 2 * mp.log(1 / q - 1) + mp.mpf(1) / 2
    pts = sorted({mp.mpf(0), a, z0})
    return mp.log(mp.quad(f, [-mp.inf, pts[0] - 8 * s] + pts + [pts[-1] + 8 * s, mp.inf])) / (a - 1)


@pytest.mark.parametrize("q,sigma,alpha", [
    (0.01, 1.1, 1.1), (0.01, 1.1, 9.6), (0.01, 1.1, 25.5), (0.3, 0.8, 2.5), (0.5, 2.0, 3.3), (0.9, 1.0, 7.7),
    (0.5, 0.5, 10.9), (0.05, 0.7, 20.25), (0.99, 2.0, 1.3), (0.2, 1.0, 100.5), (0.01, 1.1, 7.0),
    (0.001, 3.0, 4.0)])
def test_fractional_and_integer_orders_against_mpmath(q, sigma, alpha):
    """The defining integral in 40-digit arithmetic: 1e-10 relative, at fractional orders (signed MTZ series
    with an averaged tail, or quadrature) and integer orders."""
    mp.mp.dps = 40
    assert poisson_subsampled_gaussian_rdp(q, sigma, alpha) == pytest.approx(float(_mp_rdp(q, sigma, alpha)),
                                                                             rel=1e-10)


def test_dp_accounting_overestimates_fractional_orders():
    """The pitfall the DP-SGD accountant documents: dp-accounting 0.6.0 sums |C(alpha, i)| for fractional
    alpha, an upper bound; it is never below the exact value and is ~5% above it at alpha = 1.1 here."""
    ref = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(0.01, 1.1, ORDERS[~INTEGER])
    ours = poisson_subsampled_gaussian_rdp(0.01, 1.1, ORDERS[~INTEGER])
    assert np.all(ref >= ours * (1 - 1e-12))
    assert ref[0] / ours[0] - 1 > 0.04


@given(st.floats(1e-6, 1.0), st.floats(0.3, 50.0))
def test_subsampled_gaussian_properties(q, sigma):
    """Amplification never increases the RDP (<= alpha/(2 sigma^2)); it grows with the order; q = 1 is the
    plain Gaussian and q = 0 is 0."""
    orders = np.array([1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 32.0])
    vals = poisson_subsampled_gaussian_rdp(q, sigma, orders)
    assert np.all(vals <= gaussian_rdp(orders, sigma) * (1 + 1e-9))
    assert np.all(np.diff(vals) >= -1e-12 * vals[1:])
    np.testing.assert_allclose(poisson_subsampled_gaussian_rdp(1.0, sigma, orders), gaussian_rdp(orders, sigma))
    assert np.all(poisson_subsampled_gaussian_rdp(0.0, sigma, orders) == 0.0)


def test_subsampled_gaussian_monotone_in_q():
    qs = [1e-4, 1e-3, 0.01, 0.1, 0.5, 0.99]
    vals = np.array([poisson_subsampled_gaussian_rdp(q, 1.0, ORDERS) for q in qs])
    assert np.all(np.diff(vals, axis=0) > 0)
    assert isinstance(poisson_subsampled_gaussian_rdp(0.1, 1.0, 2.0), float)


# ---------------------------------------------------------------------------------------------------------
# the slide deck's general bound
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma", [(0.01, 1.1), (0.2, 0.6), (0.7, 3.0)])
def test_general_bound_upper_bounds_the_exact_gaussian_value(q, sigma):
    """For eps(i) = i/(2 sigma^2) the bound is the exact binomial expansion: >= exact and equal to 1e-12."""
    orders = np.arange(2.0, 101.0)
    bound = poisson_subsampled_rdp_bound(lambda i: gaussian_rdp(i, sigma), q, orders)
    exact = poisson_subsampled_gaussian_rdp(q, sigma, orders)
    assert np.all(bound >= exact * (1 - 1e-12))
    np.testing.assert_allclose(bound, exact, rtol=1e-12)


def test_general_bound_at_fractional_order_uses_the_ceiling():
    f = lambda i: laplace_rdp(i, 1.0)  # noqa: E731
    assert poisson_subsampled_rdp_bound(f, 0.1, 2.5) == poisson_subsampled_rdp_bound(f, 0.1, 3.0)
    assert poisson_subsampled_rdp_bound(f, 0.1, 1.5) == poisson_subsampled_rdp_bound(f, 0.1, 2.0)


def _renyi(a, log_p, log_q):
    return logsumexp(a * log_p + (1 - a) * log_q) / (a - 1)


def test_general_bound_holds_on_random_finite_mechanisms():
    """Brute force: for 300 random pairs (P, Q) of 2-6 point distributions (seeded), the Poisson-subsampled
    pair (P, (1-q)P + qQ) has Rényi divergences, in both directions, below the bound computed from the
    pair's own RDP curve eps(i) = max(D_i(P||Q), D_i(Q||P))."""
    rng = np.random.default_rng(20240601)
    for _ in range(300):
        n = int(rng.integers(2, 7))
        log_p = rng.normal(0, rng.uniform(0.1, 4), n)
        log_q = rng.normal(0, rng.uniform(0.1, 4), n)
        log_p -= logsumexp(log_p)
        log_q -= logsumexp(log_q)
        q = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.99))))

        def curve(orders, lp=log_p, lq=log_q):
            return np.array([max(_renyi(a, lp, lq), _renyi(a, lq, lp)) for a in orders])

        orders = np.array([2.0, 3.0, 5.0, 8.0, 12.0])
        bound = poisson_subsampled_rdp_bound(curve, q, orders)
        log_mix = np.logaddexp(np.log1p(-q) + log_p, np.log(q) + log_q)
        for a, b in zip(orders, bound):
            exact = max(_renyi(a, log_mix, log_p), _renyi(a, log_p, log_mix))
            assert exact <= b * (1 + 1e-9) + 1e-12


@given(st.floats(1e-4, 1.0), st.floats(0.01, 20.0))
def test_general_bound_never_exceeds_the_unsubsampled_curve(q, eps):
    """Amplification never increases RDP: for RR and Laplace curves the bound is <= eps(alpha)."""
    orders = np.array([2.0, 3.0, 6.0, 20.0, 64.0])
    for f in (lambda i: randomized_response_rdp(i, eps), lambda i: laplace_rdp(i, 1 / eps)):
        assert np.all(poisson_subsampled_rdp_bound(f, q, orders) <= f(orders) * (1 + 1e-12) + 1e-300)


def test_general_bound_edge_cases():
    f = lambda i: gaussian_rdp(i, 1.0)  # noqa: E731
    assert poisson_subsampled_rdp_bound(f, 0.0, [2.0, 3.0]).tolist() == [0.0, 0.0]
    assert poisson_subsampled_rdp_bound(f, 1.0, [2.0, 3.0]).tolist() == [1.0, 1.5]
    with pytest.raises(ValueError, match="rdp must return one value per order"):
        poisson_subsampled_rdp_bound(lambda i: np.ones(2), 0.1, [5.0])
    with pytest.raises(ValueError, match="rdp"):
        poisson_subsampled_rdp_bound(lambda i: -np.ones_like(i), 0.1, [3.0])
    with pytest.raises(ValueError, match="rdp must be a callable"):
        poisson_subsampled_rdp_bound(1.0, 0.1, [3.0])


# ---------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------

junk = st.one_of(st.just(float("nan")), st.text(max_size=3), st.none(), st.booleans())
negative = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.just(-math.inf), st.just(math.inf),
                     junk)
nonpositive = st.one_of(st.floats(max_value=0.0, allow_infinity=False), st.just(math.inf), junk)
bad_q_open = st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True), junk)
bad_q_closed = st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0, exclude_min=True), junk)
bad_delta = st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), junk)
in_array_junk = st.one_of(st.just(float("nan")), st.text(min_size=1, max_size=3))  # None means default orders
bad_orders = st.one_of(st.floats(max_value=1.0, allow_infinity=False), st.just(math.inf), in_array_junk)
GAUSS = lambda i: gaussian_rdp(i, 1.0)  # noqa: E731

CASES = [
    (lambda v: fixed_size_amplification_epsilon(v, 0.1), "epsilon", negative),
    (lambda v: fixed_size_amplification_epsilon([1.0, v], 0.1), "epsilon", st.one_of(
        st.floats(max_value=-1e-300), st.just(math.inf), in_array_junk)),
    (lambda v: fixed_size_amplification_epsilon(1.0, v), "q", bad_q_open),
    (lambda v: fixed_size_amplification(v, 0.0, 0.1), "epsilon", negative),
    (lambda v: fixed_size_amplification(1.0, v, 0.1), "delta", bad_delta),
    (lambda v: fixed_size_amplification(1.0, 0.0, v), "q", bad_q_open),
    (lambda v: poisson_subsampled_gaussian_rdp(v, 1.0, 2.0), "q", bad_q_closed),
    (lambda v: poisson_subsampled_gaussian_rdp(0.1, v, 2.0), "sigma", nonpositive),
    (lambda v: poisson_subsampled_gaussian_rdp(0.1, 1.0, v), "orders", bad_orders),
    (lambda v: poisson_subsampled_gaussian_rdp(0.1, 1.0, [2.0, v]), "orders", bad_orders),
    (lambda v: poisson_subsampled_rdp_bound(GAUSS, v, 2.0), "q", bad_q_closed),
    (lambda v: poisson_subsampled_rdp_bound(GAUSS, 0.1, v), "orders", bad_orders),
    (lambda v: poisson_subsampled_rdp_bound(lambda i: np.full(i.shape, v), 0.1, 3.0), "rdp", st.one_of(
        st.floats(max_value=-1e-300), st.just(float("nan")))),
]


@pytest.mark.parametrize("call,name,bad", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
@given(data=st.data())
def test_bad_input_raises_value_error_naming_the_parameter(call, name, bad, data):
    value = data.draw(bad)
    with pytest.raises(ValueError, match=name):
        call(value)


@pytest.mark.parametrize("q,sigma,alpha", [
    (4.2657556734648923e-05, 3.7212502813176735, 1.1), (0.00017095141507262828, 14.364508357268544, 1.3),
    (5.6893734432666876e-05, 18.425550968998465, 2.3), (0.0033827785814559445, 16.59596052362311, 7.8),
    (0.0034975684368073164, 16.785382843326797, 10.2), (0.0001, 0.5, 1.1), (0.01, 1.1, 2.5), (0.3, 0.8, 10.5)])
def test_fractional_orders_have_the_documented_accuracy(q, sigma, alpha):
    """The docstring's accuracy at fractional orders, pinned against the defining integral at 40 digits: about
    1e-12 relative plus an absolute error below 1e-17 (issue 25 measured 4e-9 *relative* at RDP values near
    1e-10, where the old docstring promised ~1e-12: it is the absolute part, A_alpha being within rounding of 1)."""
    mp.mp.dps = 40
    ours = poisson_subsampled_gaussian_rdp(q, sigma, alpha)
    exact = float(_mp_rdp(q, sigma, alpha))
    assert abs(ours - exact) <= 1e-12 * exact + 1e-17
