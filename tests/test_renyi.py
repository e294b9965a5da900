"""Rényi DP / zCDP: mechanism curves (dp_course.renyi), composition and conversions (dp_course.rdp_accounting),
zCDP (dp_course.zcdp).

References: issue #3 reference values; closed forms evaluated in 40-digit arithmetic (mpmath, installed with
dp-accounting); numerical integration of the Rényi divergence (scipy.integrate.quad); dp-accounting 0.6.0's
RDP conversions.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from dp_course.rdp_accounting import (DEFAULT_ORDERS, RDPCurve, compose_rdp, rdp_to_dp_delta, rdp_to_dp_epsilon,
                                      rdp_to_dp_epsilon_and_order)
from dp_course.renyi import gaussian_rdp, laplace_rdp, randomized_response_rdp
from dp_course.zcdp import (compose_zcdp, gaussian_zcdp, pure_dp_to_zcdp, zcdp_rdp, zcdp_rho_for_dp, zcdp_to_dp_delta,
                            zcdp_to_dp_epsilon)

ORDERS = np.array(DEFAULT_ORDERS)


def test_default_orders_are_dp_accountings():
    """Our default orders are exactly dp-accounting 0.6.0's DEFAULT_RDP_ORDERS (156 orders, up to 1024)."""
    assert list(DEFAULT_ORDERS) == [float(a) for a in dpa_rdp.DEFAULT_RDP_ORDERS]
    assert len(DEFAULT_ORDERS) == 156


# ---------------------------------------------------------------------------------------------------------
# mechanism curves against independent computations
# ---------------------------------------------------------------------------------------------------------

def _renyi_quad(logpdf_p, logpdf_q, alpha, lo, hi, points):
    """D_alpha(P||Q) = 1/(alpha-1) ln int p^alpha q^(1-alpha), by quadrature (ERRATA 9's definition)."""
    val, _ = integrate.quad(lambda x: math.exp(alpha * logpdf_p(x) + (1 - alpha) * logpdf_q(x)), lo, hi,
                            points=points, epsabs=0, epsrel=1e-13, limit=400)
    return math.log(val) / (alpha - 1)


@pytest.mark.parametrize("alpha,sigma,sens", [(1.5, 1.0, 1.0), (2.0, 2.0, 1.0), (10.0, 3.0, 2.0),
                                              (33.3, 5.0, 1.0)])
def test_gaussian_rdp_against_quadrature(alpha, sigma, sens):
    """alpha Delta^2/(2 sigma^2) (Mironov 2017 Table II) equals the integral definition of D_alpha."""
    p, q = stats.norm(0, sigma), stats.norm(sens, sigma)
    ref = _renyi_quad(p.logpdf, q.logpdf, alpha, -40 * sigma, 40 * sigma + alpha * sens, [0.0, sens])
    assert gaussian_rdp(alpha, sigma, sens) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("alpha,scale", [(1.5, 1.0), (2.0, 0.5), (7.5, 2.0), (40.0, 1.0), (3.0, 0.1)])
def test_laplace_rdp_against_quadrature(alpha, scale):
    """Mironov 2017 Table II (stable form) equals the integral of Lap(0,b)^alpha Lap(1,b)^(1-alpha)."""
    p, q = stats.laplace(0, scale), stats.laplace(1.0, scale)
    ref = _renyi_quad(p.logpdf, q.logpdf, alpha, -60 * scale, 1 + 60 * scale, [0.0, 1.0])
    assert laplace_rdp(alpha, scale) == pytest.approx(ref, rel=1e-9)


def _mp_laplace(alpha, eps):
    a, e = mp.mpf(alpha), mp.mpf(eps)
    return mp.log(a / (2 * a - 1) * mp.exp((a - 1) * e) + (a - 1) / (2 * a - 1) * mp.exp(-a * e)) / (a - 1)


def _mp_rr(alpha, eps):
    a, e = mp.mpf(alpha), mp.mpf(eps)
    log_p, log_q = -mp.log1p(mp.exp(-e)), -e - mp.log1p(mp.exp(-e))  # 1 - p would round to 0 at eps = 300
    return mp.log(mp.exp(a * log_p + (1 - a) * log_q) + mp.exp(a * log_q + (1 - a) * log_p)) / (a - 1)


@pytest.mark.parametrize("alpha", [1.000001, 1.1, 2.0, 17.5, 1e3, 1e6])
@pytest.mark.parametrize("eps", [1e-4, 0.3, 1.0, 10.0, 50.0, 300.0])
def test_laplace_and_rr_rdp_against_mpmath(alpha, eps):
    """The stable forms match Mironov's Table II evaluated in 60-digit arithmetic, also where the printed
    form overflows in floating point (alpha * eps up to 3e8)."""
    mp.mp.dps = 60
    tol = 1e-12 if alpha > 1.001 else 1e-8  # near alpha = 1 the formula divides by alpha - 1
    assert laplace_rdp(alpha, 1.0 / eps) == pytest.approx(float(_mp_laplace(alpha, eps)), rel=tol)
    assert randomized_response_rdp(alpha, eps) == pytest.approx(float(_mp_rr(alpha, eps)), rel=tol)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_rr_rdp_against_pmfs(eps):
    """Direct sum over the two outputs of randomized response: sum p^alpha q^(1-alpha)."""
    p = np.array([math.exp(eps), 1.0]) / (1 + math.exp(eps))
    for alpha in [1.5, 2.0, 4.0, 9.9]:
        ref = math.log(np.sum(p ** alpha * p[::-1] ** (1 - alpha))) / (alpha - 1)
        assert randomized_response_rdp(alpha, eps) == pytest.approx(ref, rel=1e-12)


def test_curve_limits_at_order_one_and_infinity():
    """alpha = 1 is the KL divergence (continuity from above), alpha = inf the pure-DP epsilon."""
    eps = 0.7
    assert laplace_rdp(1.0, 1 / eps) == pytest.approx(eps + math.exp(-eps) - 1, rel=1e-15)
    assert laplace_rdp(1.0 + 1e-7, 1 / eps) == pytest.approx(laplace_rdp(1.0, 1 / eps), rel=1e-6)
    assert randomized_response_rdp(1.0, eps) == pytest.approx(eps * math.tanh(eps / 2), rel=1e-15)
    assert randomized_response_rdp(1.0 + 1e-7, eps) == pytest.approx(randomized_response_rdp(1.0, eps), rel=1e-6)
    # orders within an ulp of 1 (a naive difference quotient returns garbage here)
    for big_eps in (7.0, 300.0):
        kl = big_eps * math.tanh(big_eps / 2)
        assert randomized_response_rdp(1.0 + 2.2e-16, big_eps) == pytest.approx(kl, rel=1e-12)
        assert laplace_rdp(1.0 + 2.2e-16, 1 / big_eps) == pytest.approx(big_eps + math.expm1(-big_eps), rel=1e-12)
    assert laplace_rdp(math.inf, 1 / eps) == eps and randomized_response_rdp(math.inf, eps) == eps
    assert gaussian_rdp(math.inf, 1.0) == math.inf
    assert isinstance(gaussian_rdp(2.0, 1.0), float)
    assert gaussian_rdp(np.array([[2.0, 3.0]]), 1.0).shape == (1, 2)


sorted_orders = st.lists(st.floats(1.0, 5e3), min_size=2, max_size=12).map(sorted)


@given(sorted_orders, st.floats(1e-3, 60.0))
def test_curves_nondecreasing_in_alpha(alphas, eps):
    """RDP is nondecreasing in the order (Mironov 2017, Proposition 9), for every mechanism here."""
    a = np.array(alphas)
    for values in (laplace_rdp(a, 1 / eps), randomized_response_rdp(a, eps), gaussian_rdp(a, 1 / eps)):
        assert np.all(np.diff(values) >= -1e-12 * np.maximum(1.0, values[1:]))


@given(sorted_orders, st.floats(0.0, 60.0))
def test_pure_dp_curves_below_pure_dp_to_zcdp(alphas, eps):
    """An eps-DP mechanism is eps^2/2-zCDP (Bun-Steinke Prop 1.4) and never above eps: RR and Laplace obey both."""
    a = np.array(alphas)
    rho = pure_dp_to_zcdp(eps)
    for values in (randomized_response_rdp(a, eps), laplace_rdp(a, 1 / max(eps, 1e-300))):
        if eps == 0:
            continue
        assert np.all(values <= a * rho * (1 + 1e-12) + 1e-15)
        assert np.all(values <= eps * (1 + 1e-12))


# ---------------------------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------------------------

@given(st.floats(0.2, 20.0), st.floats(0.2, 20.0), st.integers(0, 50))
def test_composition_is_additive(s1, s2, k):
    """Gaussian RDP curves add: sigma_1, sigma_2 compose to 1/sigma^2 = 1/sigma_1^2 + 1/sigma_2^2."""
    c1, c2 = RDPCurve.gaussian(s1, orders=ORDERS), RDPCurve.gaussian(s2, orders=ORDERS)
    both = c1 + c2
    eff = RDPCurve.gaussian(1 / math.sqrt(s1 ** -2 + s2 ** -2), orders=ORDERS)
    np.testing.assert_allclose(both.epsilons, eff.epsilons, rtol=1e-12)
    np.testing.assert_allclose(compose_rdp(c1.epsilons, c2.epsilons), both.epsilons, rtol=0)
    np.testing.assert_allclose((k * c1).epsilons, k * c1.epsilons, rtol=1e-15)
    assert compose_zcdp(gaussian_zcdp(s1), gaussian_zcdp(s2)) == pytest.approx(
        gaussian_zcdp(1 / math.sqrt(s1 ** -2 + s2 ** -2)), rel=1e-12)


def test_curve_object_rules():
    c = RDPCurve.laplace(2.0, orders=[2.0, 3.0])
    with pytest.raises(ValueError, match="same orders"):
        c + RDPCurve.laplace(2.0, orders=[2.0, 4.0])
    with pytest.raises(ValueError, match="other must be an RDPCurve"):
        c.compose([1.0, 2.0])
    with pytest.raises(ValueError, match="k must be an integer"):
        c * 2.5
    with pytest.raises(ValueError, match="epsilons must have one value per order"):
        RDPCurve([2.0, 3.0], [1.0])
    with pytest.raises(ValueError):
        c.epsilons[0] = 5.0  # read-only
    assert RDPCurve.zcdp(0.5, orders=[2.0, 4.0]).epsilons.tolist() == [1.0, 2.0]
    assert RDPCurve.randomized_response(1.0, orders=[3.0]).epsilons[0] == pytest.approx(
        randomized_response_rdp(3.0, 1.0))
    assert "RDPCurve(2 orders" in repr(c)
    with pytest.raises(ValueError, match="fn must be a callable"):
        RDPCurve.from_function(3.0)


# ---------------------------------------------------------------------------------------------------------
# RDP -> (epsilon, delta)
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma,k,delta", [(1.0, 1, 1e-5), (5.0, 100, 1e-6), (20.0, 1000, 1e-8), (0.8, 3, 1e-3)])
def test_conversion_matches_dp_accounting(sigma, k, delta):
    """Gaussian RDP through dp-accounting's RdpAccountant (improved conversion, CKS20 Prop 12) at its default
    orders: same epsilon and order, and the same delta for that epsilon."""
    from dp_accounting import GaussianDpEvent, SelfComposedDpEvent

    acc = dpa_rdp.RdpAccountant()
    acc.compose(SelfComposedDpEvent(GaussianDpEvent(sigma), k))
    ref_eps, ref_order = acc.get_epsilon_and_optimal_order(delta)
    curve = k * RDPCurve.gaussian(sigma)
    eps, order = curve.epsilon_and_order(delta)
    assert eps == pytest.approx(ref_eps, rel=1e-12) and order == ref_order
    assert curve.delta(eps) == pytest.approx(acc.get_delta(eps), rel=1e-9)
    assert curve.delta(eps) == pytest.approx(delta, rel=1e-9)


def test_classic_conversion_closed_form():
    """Mironov 2017 Prop 3 at one order: eps = r + ln(1/delta)/(alpha - 1)."""
    assert rdp_to_dp_epsilon([3.0], [0.5], 1e-5, method="classic") == pytest.approx(0.5 + math.log(1e5) / 2)
    assert rdp_to_dp_delta([3.0], [0.5], 2.0, method="classic") == pytest.approx(math.exp(2 * (0.5 - 2.0)))
    # the improved form at one order (CKS20 Prop 12), written out independently
    a, r, d = 3.0, 0.5, 1e-5
    expected = r + math.log((a - 1) / a) - (math.log(d) + math.log(a)) / (a - 1)
    assert rdp_to_dp_epsilon([a], [r], d) == pytest.approx(expected)


rdp_tables = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.floats(1.01, 2000.0), min_size=n, max_size=n),
    st.lists(st.one_of(st.floats(0.0, 100.0), st.just(math.inf)), min_size=n, max_size=n)))


@given(rdp_tables, st.floats(1e-12, 0.5), st.floats(0.0, 50.0))
def test_improved_conversion_never_exceeds_classic(table, delta, eps):
    """Issue #3 ordering property: improved (CKS20) <= classic (Mironov) for epsilon and for delta, and the
    epsilon returned for delta gives back at most that delta."""
    orders, rdp = table
    e_imp, e_cls = rdp_to_dp_epsilon(orders, rdp, delta), rdp_to_dp_epsilon(orders, rdp, delta, "classic")
    assert e_imp <= e_cls
    assert rdp_to_dp_delta(orders, rdp, eps) <= rdp_to_dp_delta(orders, rdp, eps, "classic")
    if math.isfinite(e_imp) and e_imp > 0:
        assert rdp_to_dp_delta(orders, rdp, e_imp) <= delta * (1 + 1e-9)


def test_conversion_edge_cases():
    assert rdp_to_dp_epsilon_and_order([2.0, 3.0], [math.inf, math.inf], 1e-5)[0] == math.inf
    assert rdp_to_dp_epsilon([2.0], [0.0], 0.9) == 0.0  # clipped at 0
    assert rdp_to_dp_delta([2.0], [math.inf], 1.0) == 1.0
    assert isinstance(rdp_to_dp_epsilon(None, np.zeros(len(DEFAULT_ORDERS)), 1e-5), float)


# ---------------------------------------------------------------------------------------------------------
# zCDP
# ---------------------------------------------------------------------------------------------------------

def test_zcdp_improved_reference_value():
    """Issue #3 reference: rho = 1/32, delta = 1e-3 -> 0.688002455487808.  Independent check: the CKS20
    Prop 12 objective minimised in 50-digit arithmetic (mpmath root of its derivative)."""
    rho, delta = 1 / 32, 1e-3
    assert zcdp_to_dp_epsilon(rho, delta) == pytest.approx(0.688002455487808, rel=1e-9)
    mp.mp.dps = 50
    r, d = mp.mpf(1) / 32, mp.mpf("1e-3")
    a_star = mp.findroot(lambda a: r * (a - 1) ** 2 + mp.log(a) + mp.log(d), 12)
    f = a_star * r + mp.log((a_star - 1) / a_star) - (mp.log(d) + mp.log(a_star)) / (a_star - 1)
    assert zcdp_to_dp_epsilon(rho, delta) == pytest.approx(float(f), rel=1e-12)


def _gaussian_delta(mu, eps):
    """Exact delta(eps) of a Gaussian mechanism with Delta^2/(2 sigma^2) = mu (Balle-Wang 2018, Thm 8)."""
    s = math.sqrt(2 * mu)
    return stats.norm.cdf(s / 2 - eps / s) - math.exp(eps) * stats.norm.cdf(-s / 2 - eps / s)


@pytest.mark.parametrize("rho,delta", [(1e-3, 1e-5), (0.01, 1e-6), (1e-4, 1e-10)])
def test_errata5_bun_steinke_formula_and_the_printed_one(rho, delta):
    """ERRATA 5: eps = rho + 2 sqrt(rho ln(1/delta)).  The printed rho + 4 rho ln(1/delta) is not a valid
    conversion: whenever rho ln(1/delta) < 1/4 it is below the correct value, and the Gaussian mechanism,
    which is exactly rho-zCDP, has a delta above the target there."""
    bs = zcdp_to_dp_epsilon(rho, delta, "bun_steinke")
    assert bs == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)
    assert _gaussian_delta(rho, bs) <= delta                      # the correct conversion is valid
    printed = rho + 4 * rho * math.log(1 / delta)
    assert _gaussian_delta(rho, printed) > delta                  # the printed one is not
    assert zcdp_to_dp_epsilon(rho, delta) <= bs                   # improved never exceeds Bun-Steinke
    assert _gaussian_delta(rho, zcdp_to_dp_epsilon(rho, delta)) <= delta


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-5), (3.0, 1e-9), (10.0, 1e-3)])
def test_errata6_rho_for_target_has_the_square(eps, delta):
    """ERRATA 6: rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2 round-trips through Bun-Steinke;
    the printed version without the square does not."""
    rho = zcdp_rho_for_dp(eps, delta)
    L = math.log(1 / delta)
    assert rho == pytest.approx((math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel=1e-12)
    assert zcdp_to_dp_epsilon(rho, delta, "bun_steinke") == pytest.approx(eps, rel=1e-12)
    printed = math.sqrt(L + eps) - math.sqrt(L)
    assert zcdp_to_dp_epsilon(printed, delta, "bun_steinke") != pytest.approx(eps, rel=1e-3)
    # improved inverse: larger rho, still meeting the target
    rho_imp = zcdp_rho_for_dp(eps, delta, "improved")
    assert rho_imp >= rho
    assert zcdp_to_dp_epsilon(rho_imp, delta) <= eps
    assert zcdp_to_dp_epsilon(rho_imp * (1 + 1e-9), delta) > eps


@given(st.floats(1e-6, 50.0), st.floats(1e-15, 0.5))
def test_zcdp_conversions_are_consistent(rho, delta):
    """Improved <= Bun-Steinke; delta(eps(delta)) = delta for both methods."""
    e_imp = zcdp_to_dp_epsilon(rho, delta)
    e_bs = zcdp_to_dp_epsilon(rho, delta, "bun_steinke")
    assert e_imp <= e_bs * (1 + 1e-12)
    assert zcdp_to_dp_delta(rho, e_bs, "bun_steinke") == pytest.approx(delta, rel=1e-7)
    if e_imp > 0:
        assert zcdp_to_dp_delta(rho, e_imp) == pytest.approx(delta, rel=1e-7)
    assert zcdp_to_dp_delta(rho, e_imp) <= zcdp_to_dp_delta(rho, e_imp, "bun_steinke")


@pytest.mark.parametrize("rho", [1e-4, 0.1, 2.0])
def test_improved_zcdp_is_minimum_over_real_orders(rho):
    """The improved value equals (to 1e-9) a brute-force minimum over a fine grid of real orders, and beats
    every order in the default set."""
    delta = 1e-6
    grid = np.exp(np.linspace(np.log(1.0001), np.log(1e5), 400_001))
    brute = rdp_to_dp_epsilon(grid, grid * rho, delta)
    assert zcdp_to_dp_epsilon(rho, delta) == pytest.approx(brute, rel=1e-9)
    assert zcdp_to_dp_epsilon(rho, delta) <= RDPCurve.zcdp(rho).epsilon(delta) * (1 + 1e-12)


def test_zcdp_small_helpers():
    assert pure_dp_to_zcdp(0.5) == 0.125
    assert gaussian_zcdp(2.0, 1.0) == 0.125
    assert zcdp_rdp(3.0, 0.1) == pytest.approx(0.3)
    assert zcdp_to_dp_epsilon(0.0, 1e-5) == 0.0 and zcdp_to_dp_delta(0.0, 1.0) == 0.0
    assert zcdp_to_dp_delta(1.0, 0.5, "bun_steinke") == 1.0


# ---------------------------------------------------------------------------------------------------------
# bad input: a ValueError naming the parameter, never a NaN
# ---------------------------------------------------------------------------------------------------------

junk = st.one_of(st.just(float("nan")), st.text(max_size=3), st.none(), st.booleans())
negative = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.just(-math.inf), junk)
nonpositive = st.one_of(st.floats(max_value=0.0, allow_infinity=False), st.just(math.inf), junk)
not_open_unit = st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), junk)
bad_orders = st.one_of(st.floats(max_value=1.0, allow_infinity=False), st.just(math.inf), st.just(float("nan")),
                       st.text(min_size=1, max_size=3))
bad_alpha = st.one_of(st.floats(max_value=1.0, exclude_max=True, allow_infinity=False), junk)

CASES = [
    (lambda v: gaussian_rdp(v, 1.0), "alpha", bad_alpha),
    (lambda v: gaussian_rdp(2.0, v), "sigma", nonpositive),
    (lambda v: gaussian_rdp(2.0, 1.0, v), "sensitivity", nonpositive),
    (lambda v: laplace_rdp(v, 1.0), "alpha", bad_alpha),
    (lambda v: laplace_rdp(2.0, v), "scale", nonpositive),
    (lambda v: laplace_rdp(2.0, 1.0, v), "sensitivity", nonpositive),
    (lambda v: randomized_response_rdp(v, 1.0), "alpha", bad_alpha),
    (lambda v: randomized_response_rdp(2.0, v), "epsilon", negative),
    (lambda v: compose_rdp([1.0], [v]), "rdp_values", negative),
    (lambda v: rdp_to_dp_epsilon([v], [1.0], 1e-5), "orders", bad_orders),
    (lambda v: rdp_to_dp_epsilon([2.0], [v], 1e-5), "rdp", negative),
    (lambda v: rdp_to_dp_epsilon([2.0], [1.0], v), "delta", not_open_unit),
    (lambda v: rdp_to_dp_epsilon([2.0], [1.0], 1e-5, method=v), "method", junk),
    (lambda v: rdp_to_dp_delta([2.0], [1.0], v), "epsilon", negative),
    (lambda v: RDPCurve([v], [1.0]), "orders", bad_orders),
    (lambda v: RDPCurve.gaussian(1.0, orders=[2.0]).self_compose(v), "k", st.one_of(st.integers(max_value=-1),
                                                                                 st.floats(0.1, 0.9), junk)),
    (lambda v: gaussian_zcdp(v), "sigma", nonpositive),
    (lambda v: zcdp_rdp(2.0, v), "rho", negative),
    (lambda v: compose_zcdp(0.1, v), "rhos", negative),
    (lambda v: pure_dp_to_zcdp(v), "epsilon", negative),
    (lambda v: zcdp_to_dp_epsilon(v, 1e-5), "rho", negative),
    (lambda v: zcdp_to_dp_epsilon(0.1, v), "delta", not_open_unit),
    (lambda v: zcdp_to_dp_epsilon(0.1, 1e-5, v), "method", junk),
    (lambda v: zcdp_to_dp_delta(v, 1.0), "rho", negative),
    (lambda v: zcdp_to_dp_delta(0.1, v), "epsilon", negative),
    (lambda v: zcdp_rho_for_dp(v, 1e-5), "epsilon", nonpositive),
    (lambda v: zcdp_rho_for_dp(1.0, v), "delta", not_open_unit),
]


@pytest.mark.parametrize("call,name,bad", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
@given(data=st.data())
def test_bad_input_raises_value_error_naming_the_parameter(call, name, bad, data):
    value = data.draw(bad)
    with pytest.raises(ValueError, match=name):
        call(value)
