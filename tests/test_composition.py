"""Composition theorems (dp_course.composition).

References: issue #3 reference values; the Kairouz-Oh-Viswanath formula evaluated independently in 40-digit
arithmetic (mpmath); dp-accounting 0.6.0's PLD of (eps, delta)-DP mechanisms on grids aligned with eps;
brute-force enumeration of leaky randomized response transcripts.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.pld import common as dpa_common
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_course.composition import (MAX_ENUMERATION, advanced_composition, advanced_composition_drv,
                                   basic_composition, heterogeneous_composition_delta,
                                   heterogeneous_composition_epsilon, heterogeneous_composition_pld,
                                   leaky_randomized_response_pld, murtagh_vadhan_delta, murtagh_vadhan_exact,
                                   optimal_composition_delta, optimal_composition_epsilon, optimal_composition_pld)


def _mp_kov_delta(eps, delta, k, eps_total):
    """KOV15 Thm 3.3 / the k-fold leaky RR hockey-stick, summed term by term in 40-digit arithmetic."""
    e, d, t = mp.mpf(eps), mp.mpf(delta), mp.mpf(eps_total)
    p = mp.exp(e) / (1 + mp.exp(e))
    pure = mp.fsum(mp.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (1 - mp.exp(t - (k - 2 * i) * e))
                   for i in range(k + 1) if (k - 2 * i) * e > t)
    return 1 - (1 - d) ** k + (1 - d) ** k * pure


def _mp_kov_epsilon(eps, delta, k, delta_total):
    """Smallest eps_total with _mp_kov_delta <= delta_total, by 200 bisection steps in 40-digit arithmetic."""
    lo, hi = mp.mpf(0), mp.mpf(k * eps)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _mp_kov_delta(eps, delta, k, mid) > delta_total else (lo, mid)
    return hi


# ---------------------------------------------------------------------------------------------------------
# reference values
# ---------------------------------------------------------------------------------------------------------

def test_issue_reference_table():
    """Issue #3 reference: k = 100 mechanisms, each (0.01, 0)-DP, delta' = 1e-6: optimal 0.392263943093472
    (independently: KOV in 40 digits), Theorem 1.1 0.530652135309443 (closed form), basic 1."""
    mp.mp.dps = 40
    opt = optimal_composition_epsilon(0.01, 0.0, 100, 1e-6)
    assert opt == pytest.approx(0.392263943093472, rel=1e-9)
    assert opt == pytest.approx(float(_mp_kov_epsilon(0.01, 0.0, 100, mp.mpf("1e-6"))), rel=1e-12)
    adv_eps, adv_delta = advanced_composition(0.01, 0.0, 100, 1e-6)
    assert adv_eps == pytest.approx(0.530652135309443, rel=1e-9)
    assert adv_eps == pytest.approx(0.01 * math.sqrt(200 * math.log(1e6)) + 100 * 0.01 * math.expm1(0.01)
                                    / (math.exp(0.01) + 1), rel=1e-15)
    assert adv_delta == 1e-6
    assert basic_composition([0.01] * 100)[0] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("eps,k,delta_prime", [(0.1, 50, 1e-5), (0.5, 20, 1e-3), (0.2, 100, 1e-4), (0.05, 400, 1e-5)])
def test_errata1_theorem_1_1_has_e_to_the_epsilon(eps, k, delta_prime):
    """ERRATA 1: one version of the lecture prints eps^eps where e^eps is meant.  The corrected bound is
    above the exact optimal composition (it is an upper bound); the printed one, whose second term
    k eps (eps^eps - 1)/(eps^eps + 1) is < 0 for eps < 1, drops below it here -- so it is not a valid bound.
    (At the issue's eps = 0.01, k = 100 it gives 0.5026 instead of the reference 0.530652135309443.)"""
    adv_eps, _ = advanced_composition(eps, 0.0, k, delta_prime)
    opt = optimal_composition_epsilon(eps, 0.0, k, delta_prime)
    printed = eps * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * eps * (eps ** eps - 1) / (eps ** eps + 1)
    assert adv_eps >= opt
    assert printed < opt


@pytest.mark.parametrize("eps,delta,k,eps_total", [(0.1, 0.0, 50, 0.7), (0.5, 1e-4, 30, 3.1), (1.0, 1e-6, 12, 0.0),
                                                   (0.05, 1e-3, 200, 1.234), (2.0, 0.0, 9, 5.5)])
def test_optimal_delta_against_mpmath(eps, delta, k, eps_total):
    """delta(eps_total) at arbitrary (non-grid) eps_total: KOV's sum in 40 digits, 1e-12 relative."""
    mp.mp.dps = 40
    ref = float(_mp_kov_delta(eps, delta, k, eps_total))
    assert optimal_composition_delta(eps, delta, k, eps_total) == pytest.approx(ref, rel=1e-12)


def test_optimal_epsilon_is_continuous_not_a_grid_point():
    """The exact inverse lies strictly between grid points (k - 2i) eps and gives back delta to 1e-12."""
    eps, k = 0.1, 40
    for target in [1e-2, 1e-4, 1e-8]:
        e = optimal_composition_epsilon(eps, 0.0, k, target)
        assert abs(e / eps - round(e / eps)) > 1e-6
        assert optimal_composition_delta(eps, 0.0, k, e) == pytest.approx(target, rel=1e-12)


@pytest.mark.parametrize("eps,delta,k", [(0.5, 1e-4, 50), (0.25, 0.0, 200), (1.0, 1e-6, 20)])
def test_optimal_matches_dp_accounting_pld(eps, delta, k):
    """dp-accounting's from_privacy_parameters (the same leaky-RR PLD) on a grid aligned with eps
    (step 2^-10, so eps is a grid point exactly), self-composed k times: delta within 1e-13 (its FFT
    truncation leaves ~1e-15), epsilon within 1e-11 relative."""
    pld = dpa_pld.from_privacy_parameters(dpa_common.DifferentialPrivacyParameters(eps, delta),
                                          value_discretization_interval=2.0 ** -10).self_compose(k)
    grid = np.array([0.0, 0.3, 1.0, 2.5, 4.0, 7.0])
    np.testing.assert_allclose(optimal_composition_delta(eps, delta, k, grid), pld.get_delta_for_epsilon(grid),
                               rtol=0, atol=1e-13)
    for target in [1e-2, 1e-3]:
        ref = pld.get_epsilon_for_delta(target)
        ours = optimal_composition_epsilon(eps, delta, k, target)
        assert ours == pytest.approx(ref, rel=1e-11) if math.isfinite(ref) else ours == math.inf


def test_large_epsilon_and_k_closed_form():
    """eps = 50, k = 10^5: all but ~1e-17 of the mass sits on the top atom k eps, so
    delta(eps_total) = P(top)(1 - e^{eps_total - k eps}) just below it, with P(top) = (1 + e^-50)^-k."""
    eps, k = 50.0, 10 ** 5
    p_top = math.exp(-k * math.log1p(math.exp(-eps)))
    target = 1e-6
    expected = k * eps + math.log1p(-target / p_top)
    assert optimal_composition_epsilon(eps, 0.0, k, target) == pytest.approx(expected, rel=1e-15)
    assert optimal_composition_delta(eps, 0.0, k, k * eps - 1.0) == pytest.approx(p_top * -math.expm1(-1.0),
                                                                                  rel=1e-12)


def test_million_compositions():
    """k = 10^6, eps = 0.01, delta = 1e-9: finite answer, consistent inverse, below Theorem 1.1."""
    k, eps, delta = 10 ** 6, 0.01, 1e-9
    target = 2e-3
    e = optimal_composition_epsilon(eps, delta, k, target)
    assert 0 < e < advanced_composition(eps, delta, k, target - k * delta)[0]
    assert optimal_composition_delta(eps, delta, k, e) == pytest.approx(target, rel=1e-9)


def test_infeasible_delta_gives_infinity():
    """delta_total below 1 - (1 - delta)^k: some mechanism leaks with more probability, no finite eps."""
    assert optimal_composition_epsilon(0.5, 1e-3, 10, 5e-3) == math.inf
    assert optimal_composition_pld(0.5, 1e-3, 10).infinity_mass == pytest.approx(1 - 0.999 ** 10, rel=1e-12)
    assert optimal_composition_delta(0.5, 1e-3, 10, math.inf) == pytest.approx(1 - 0.999 ** 10, rel=1e-12)


# ---------------------------------------------------------------------------------------------------------
# ordering properties
# ---------------------------------------------------------------------------------------------------------

@settings(max_examples=60)
@given(st.floats(1e-3, 3.0), st.floats(0.0, 1e-4), st.integers(1, 300), st.floats(1e-10, 0.1))
def test_optimal_below_theorem_1_1_and_basic(eps, delta, k, delta_prime):
    """Issue #3 ordering property: optimal <= Theorem 1.1 <= DRV at delta_total = k delta + delta', and
    optimal <= basic: delta(k eps) <= k delta and eps(k delta) <= k eps."""
    adv_eps, adv_delta = advanced_composition(eps, delta, k, delta_prime)
    if adv_delta < 1.0:
        assert optimal_composition_epsilon(eps, delta, k, adv_delta) <= adv_eps * (1 + 1e-12)
    assert adv_eps <= advanced_composition_drv(eps, delta, k, delta_prime)[0]
    basic_eps, basic_delta = basic_composition([eps] * k, [delta] * k)
    # (the 1e-12 slack absorbs the last-ulp difference between sum([eps] * k) and k * eps, or kd and 1-(1-d)^k)
    assert optimal_composition_delta(eps, delta, k, basic_eps * (1 + 1e-12)) <= basic_delta * (1 + 1e-12) + 1e-300
    if 0 < basic_delta < 1:
        assert optimal_composition_epsilon(eps, delta, k, basic_delta * (1 + 1e-12)) <= basic_eps * (1 + 1e-12)


@pytest.mark.parametrize("eps, delta_prime", [(0.01, 1e-6), (0.1, 1e-9), (1.0, 1e-5)])
def test_theorem_1_1_beats_basic_exactly_beyond_the_crossing(eps, delta_prime):
    """Theorem 1.1 < k eps  <=>  sqrt(2 k ln(1/delta')) < k (1 - tanh(eps/2))  <=>  k > k* with
    k* = 2 ln(1/delta') / (1 - tanh(eps/2))^2 (lecture 04, Section 6; 27.9 for the source's Figure 1)."""
    crossing = 2 * math.log(1 / delta_prime) / (1 - math.tanh(eps / 2)) ** 2
    below, above = math.floor(crossing), math.floor(crossing) + 1
    assert advanced_composition(eps, 0.0, below, delta_prime)[0] > below * eps
    assert advanced_composition(eps, 0.0, above, delta_prime)[0] < above * eps
    if eps == 0.01:
        assert (below, above) == (27, 28)


def test_drv_closed_form_and_capping():
    e, d = advanced_composition_drv(0.1, 1e-5, 10, 1e-6)
    assert e == pytest.approx(0.1 * math.sqrt(20 * math.log(1e6)) + 10 * 0.1 * math.expm1(0.1), rel=1e-15)
    assert d == pytest.approx(1e-4 + 1e-6, rel=1e-15)
    assert advanced_composition(1.0, 0.5, 3, 0.5)[1] == 1.0
    assert basic_composition([1.0, 1.0], [0.6, 0.6]) == (2.0, 1.0)
    assert advanced_composition(800.0, 0.0, 2, 0.1)[0] == pytest.approx(800 * math.sqrt(4 * math.log(10)) + 1600)


# ---------------------------------------------------------------------------------------------------------
# heterogeneous composition and Murtagh-Vadhan
# ---------------------------------------------------------------------------------------------------------

def test_murtagh_vadhan_matches_pld_route():
    """Exact enumeration (MV16 Thm 1.5) and exact PLD composition agree to 1e-10 on random heterogeneous
    lists (seeded), for delta and for epsilon, with and without per-mechanism deltas."""
    rng = np.random.default_rng(7)
    for _ in range(12):
        k = int(rng.integers(1, 11))
        eps = rng.uniform(0.01, 1.5, k)
        dls = None if rng.random() < 0.5 else rng.uniform(0, 1e-4, k)
        for et in rng.uniform(0, eps.sum(), 3):
            assert murtagh_vadhan_delta(eps, et, dls) == pytest.approx(
                heterogeneous_composition_delta(eps, dls, et), rel=1e-10, abs=1e-15)
        for dt in [1e-1, 1e-3, 1e-6]:
            ref = heterogeneous_composition_epsilon(eps, dls, dt)
            assert murtagh_vadhan_exact(eps, dt, dls) == pytest.approx(ref, rel=1e-10, abs=1e-12)


def test_murtagh_vadhan_homogeneous_equals_kov():
    kov = optimal_composition_epsilon(0.01, 0.0, 16, 1e-6)
    assert murtagh_vadhan_exact([0.01] * 16, 1e-6) == pytest.approx(kov, rel=1e-11)
    assert murtagh_vadhan_exact([0.3] * 8, 0.99) == 0.0
    assert murtagh_vadhan_exact([0.3] * 8, 1e-3, [1e-3] * 8) == math.inf


def test_grid_heterogeneous_is_a_close_upper_bound():
    """The pessimistic grid composition never undercuts the exact delta and is within ~value_step of it."""
    eps = [0.1, 0.2, 0.3, 0.05, 0.5, 0.25, 0.1, 0.7]
    grid_eps = np.linspace(0.0, 2.0, 21)
    exact = heterogeneous_composition_delta(eps, None, grid_eps)
    approx = heterogeneous_composition_delta(eps, None, grid_eps, value_step=1e-3)
    assert np.all(approx >= exact - 1e-14)
    assert np.all(approx - exact <= 2e-3 * exact + 1e-12)
    e_exact = heterogeneous_composition_epsilon(eps, None, 1e-3)
    e_grid = heterogeneous_composition_epsilon(eps, None, 1e-3, value_step=1e-3)
    assert e_exact <= e_grid <= e_exact + 2e-3
    pld = heterogeneous_composition_pld(eps, [1e-5] * 8)
    assert pld.infinity_mass == pytest.approx(1 - (1 - 1e-5) ** 8, rel=1e-12)


def test_errata2_conditional_expectation_is_of_the_log_ratio():
    """ERRATA 2 (Claim 3.4): given no "I am U" leak, E[ln(P_U(z)/P_V(z))] = k eps (e^eps - 1)/(e^eps + 1).
    Computed by brute force over all 2^k transcripts of k-fold leaky RR and from the PLD; the printed
    version without the ln, E[P_U(z)/P_V(z) | no leak] = (p e^eps + (1 - p) e^-eps)^k, differs."""
    eps, delta, k = 0.4, 0.01, 10
    p_u = np.array([math.exp(eps), 1.0]) * (1 - delta) / (1 + math.exp(eps))  # outcomes 0, 1 under U
    p_v = p_u[::-1]
    mean_log, mean_ratio, mass = 0.0, 0.0, 0.0
    for z in itertools.product([0, 1], repeat=k):
        pu, pv = np.prod(p_u[list(z)]), np.prod(p_v[list(z)])
        mass += pu
        mean_log += pu * math.log(pu / pv)
        mean_ratio += pu * pu / pv
    mean_log, mean_ratio = mean_log / mass, mean_ratio / mass
    claim = k * eps * math.expm1(eps) / (math.exp(eps) + 1)
    assert mean_log == pytest.approx(claim, rel=1e-12)
    pld = optimal_composition_pld(eps, delta, k)
    assert np.sum(pld.probs * pld.losses) / np.sum(pld.probs) == pytest.approx(claim, rel=1e-12)
    assert mass == pytest.approx((1 - delta) ** k, rel=1e-12)
    assert mean_ratio != pytest.approx(claim, rel=1e-2)
    p = math.exp(eps) / (1 + math.exp(eps))
    assert mean_ratio == pytest.approx((p * math.exp(eps) + (1 - p) * math.exp(-eps)) ** k, rel=1e-12)


def test_leaky_rr_pld():
    pld = leaky_randomized_response_pld(1.0, 0.1)
    assert pld.infinity_mass == pytest.approx(0.1)
    np.testing.assert_allclose(pld.losses, [-1.0, 1.0])
    np.testing.assert_allclose(pld.probs, [0.9 / (1 + math.e), 0.9 * math.e / (1 + math.e)], rtol=1e-15)
    assert leaky_randomized_response_pld(1.0, 0.1).delta_for_epsilon(1.0) == pytest.approx(0.1, rel=1e-15)


# ---------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------

junk = st.one_of(st.just(float("nan")), st.text(max_size=3), st.none(), st.booleans())
negative = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.just(math.inf), junk)
bad_delta = st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), junk)
bad_delta_open = st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), junk)
bad_k = st.one_of(st.integers(max_value=0), st.floats(1.1, 1.9), junk)
bad_list = st.one_of(st.just([]), st.lists(st.floats(max_value=-1e-300), min_size=1, max_size=3),
                     st.just([1.0, float("nan")]), st.just([[0.1, 0.2]]), st.just("abc"))
bad_step = st.one_of(st.floats(max_value=0.0, allow_infinity=False), st.just(math.inf), st.just(float("nan")),
                     st.text(min_size=1, max_size=3), st.booleans())

CASES = [
    (lambda v: basic_composition(v), "epsilons", bad_list),
    (lambda v: basic_composition([0.1, 0.2], v), "deltas", st.one_of(st.just([0.1]), st.just([0.1, 1.0]),
                                                                      st.just([0.1, -1e-9]))),
    (lambda v: advanced_composition(v, 0.0, 10, 1e-6), "epsilon", negative),
    (lambda v: advanced_composition(0.1, v, 10, 1e-6), "delta", bad_delta),
    (lambda v: advanced_composition(0.1, 0.0, v, 1e-6), "k", bad_k),
    (lambda v: advanced_composition(0.1, 0.0, 10, v), "delta_prime", bad_delta_open),
    (lambda v: advanced_composition_drv(0.1, 0.0, 10, v), "delta_prime", bad_delta_open),
    (lambda v: leaky_randomized_response_pld(v, 0.0), "epsilon", negative),
    (lambda v: leaky_randomized_response_pld(0.1, v), "delta", bad_delta),
    (lambda v: optimal_composition_delta(v, 0.0, 10, 1.0), "epsilon", negative),
    (lambda v: optimal_composition_delta(0.1, v, 10, 1.0), "delta", bad_delta),
    (lambda v: optimal_composition_delta(0.1, 0.0, v, 1.0), "k", bad_k),
    (lambda v: optimal_composition_delta(0.1, 0.0, 10, v), "epsilon", st.one_of(
        st.floats(max_value=-1e-300), st.just(float("nan")), st.text(min_size=1))),
    (lambda v: optimal_composition_epsilon(0.1, 0.0, 10, v), "delta", st.one_of(
        st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(float("nan")), st.text(min_size=1))),
    (lambda v: heterogeneous_composition_pld(v), "epsilons", bad_list),
    (lambda v: heterogeneous_composition_pld([0.1], [0.0], value_step=v), "value_step", bad_step),
    (lambda v: heterogeneous_composition_delta([0.1], None, v), "epsilon", st.one_of(
        st.floats(max_value=-1e-300), st.just(float("nan")))),
    (lambda v: heterogeneous_composition_epsilon([0.1], None, v), "delta", st.one_of(
        st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(float("nan")))),
    (lambda v: murtagh_vadhan_delta(v, 0.5), "epsilons",
     st.one_of(bad_list, st.just([0.1] * (MAX_ENUMERATION + 1)))),
    (lambda v: murtagh_vadhan_delta([0.1], v), "epsilon_total", negative),
    (lambda v: murtagh_vadhan_exact([0.1], v), "delta_total", bad_delta),
    (lambda v: murtagh_vadhan_exact([0.1, 0.2], 1e-3, v), "deltas",
     st.one_of(st.just([0.1]), st.just([0.1, 2.0]))),
]


@pytest.mark.parametrize("call,name,bad", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
@given(data=st.data())
@settings(max_examples=30)
def test_bad_input_raises_value_error_naming_the_parameter(call, name, bad, data):
    value = data.draw(bad)
    with pytest.raises(ValueError, match=name):
        call(value)
