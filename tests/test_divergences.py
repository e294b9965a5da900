"""Tests for dp_course.divergences: reference values, properties, brute force, dp-accounting cross-checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

from dp_course.divergences import (
    hockey_stick_divergence,
    is_indistinguishable,
    kl_divergence,
    privacy_profile,
    renyi_divergence,
    total_variation,
)
from reference import hockey_stick_over_events
from strategies import pmf_pairs

LN3 = math.log(3.0)
RR_P, RR_Q = [0.75, 0.25], [0.25, 0.75]           # randomized response at epsilon = ln 3
HALF, QUARTER = [0.5, 0.5], [0.25, 0.75]          # the Bernoulli pair used for hand-computed values


# --------------------------------------------------------------------------------------------------------
# helpers (the shared strategies are in strategies.py, the definitions in reference.py)
# --------------------------------------------------------------------------------------------------------

def random_channel(seed: int, n: int, m: int) -> np.ndarray:
    """An n x m row-stochastic matrix (rows Dirichlet(0.5), some entries pushed to exactly 0)."""
    rng = np.random.default_rng(seed)
    k = rng.dirichlet(np.full(m, 0.5), size=n)
    k[rng.random((n, m)) < 0.2] = 0.0
    k[k.sum(axis=1) == 0, 0] = 1.0
    return k / k.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------------------
# hockey-stick divergence and privacy profile: reference values
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p, q, eps, expected", [
    # Randomized response with e^eps0 = 3, P = (3/4, 1/4), Q reversed.  By hand:
    # H(eps) = (e^eps0 - e^eps)_+ / (1 + e^eps0); at 0 it is TV = (e^eps0 - 1)/(e^eps0 + 1) = 1/2.
    (RR_P, RR_Q, 0.0, 0.5),
    (RR_P, RR_Q, math.log(2.0), 0.25),
    (RR_P, RR_Q, LN3, 0.0),
    (RR_P, RR_Q, 5.0, 0.0),
    # Name and shame NS_delta (lecture Section 2.1), delta = 0.01: the record leaks with probability delta
    # and Q never produces it, so H = delta at every epsilon.
    ([0.99, 0.01, 0.0], [0.99, 0.0, 0.01], 0.0, 0.01),
    ([0.99, 0.01, 0.0], [0.99, 0.0, 0.01], 3.0, 0.01),
    ([0.99, 0.01, 0.0], [0.99, 0.0, 0.01], 700.0, 0.01),
    # Disjoint supports: H = 1 for every epsilon, however large (no overflow, no NaN).
    ([1.0, 0.0], [0.0, 1.0], 0.0, 1.0),
    ([1.0, 0.0], [0.0, 1.0], 1e6, 1.0),
    # Q = 0 on half of P's mass: that half counts in full for every epsilon; the other term is
    # (0.5 - e^eps)_+ = 0.
    ([0.5, 0.5], [1.0, 0.0], 50.0, 0.5),
    # Huge epsilon with a positive but tiny Q: 0.5 - e^50 e^-60 = 0.5 - e^-10 (exact by hand).
    ([0.5, 0.5], [math.exp(-60.0), 1.0 - math.exp(-60.0)], 50.0, 0.5 - math.exp(-10.0)),
    # Identical distributions: 0 at every epsilon.
    ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5], 0.0, 0.0),
])
def test_hockey_stick_reference_values(p, q, eps, expected):
    assert hockey_stick_divergence(p, q, eps) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0, 10.0])
def test_randomized_response_profile_closed_form(eps0):
    """RR at eps0: delta(eps) = (e^eps0 - e^eps)_+/(1 + e^eps0) (two-term hand computation; it is also
    Example 2 of Balle et al. 2018, arXiv:1807.01647, written with the logistic function)."""
    t, s = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))   # s = 1 - t without cancellation
    p, q = [t, s], [s, t]
    grid = np.linspace(0.0, 1.5 * eps0, 13)
    expected = np.maximum(math.exp(eps0) - np.exp(grid), 0.0) / (1.0 + math.exp(eps0))
    # atol 1e-14: at eps = eps0 the rounded inputs t, 1 - t have a log ratio a few ulps above eps0.
    np.testing.assert_allclose(privacy_profile(p, q, grid), expected, rtol=1e-12, atol=1e-14)
    # At eps = 0 the profile is the total variation (e^eps0 - 1)/(e^eps0 + 1).
    assert total_variation(p, q) == pytest.approx(math.tanh(eps0 / 2.0), rel=1e-12)


@pytest.mark.parametrize("eps, delta", [(0.5, 0.01), (2.0, 1e-6), (0.0, 0.3)])
def test_leaky_randomized_response_profile(eps, delta):
    """The pair (U, V) of the lecture's table: delta(eps') = delta + (1-delta)(e^eps - e^eps')_+/(1+e^eps)."""
    hi, lo = (1 - delta) * math.exp(eps) / (math.exp(eps) + 1), (1 - delta) / (math.exp(eps) + 1)
    p_u, p_v = [hi, lo, delta, 0.0], [lo, hi, 0.0, delta]
    grid = np.linspace(0.0, eps + 1.0, 9)
    expected = delta + (1 - delta) * np.maximum(math.exp(eps) - np.exp(grid), 0.0) / (1 + math.exp(eps))
    np.testing.assert_allclose(privacy_profile(p_u, p_v, grid), expected, rtol=1e-12, atol=1e-15)


def test_output_types_follow_epsilon():
    assert isinstance(hockey_stick_divergence(RR_P, RR_Q, 0.5), float)
    assert isinstance(hockey_stick_divergence(RR_P, RR_Q, np.float32(0.5)), float)
    grid = np.array([[0.0, 0.5], [1.0, 2.0]])
    out = privacy_profile(RR_P, RR_Q, grid)
    assert isinstance(out, np.ndarray) and out.shape == (2, 2)
    np.testing.assert_allclose(out.ravel(), [hockey_stick_divergence(RR_P, RR_Q, e) for e in grid.ravel()])


def test_one_directional_profile_differs_from_symmetric():
    """P = (1, 0), Q = (1/2, 1/2): H(P||Q) = (1 - e^eps/2)_+, H(Q||P) = 1/2 for every eps (by hand)."""
    p, q = [1.0, 0.0], [0.5, 0.5]
    assert privacy_profile(p, q, 0.2, symmetric=False) == pytest.approx(1 - math.exp(0.2) / 2)
    assert privacy_profile(q, p, 0.2, symmetric=False) == pytest.approx(0.5)
    assert privacy_profile(p, q, 0.2) == pytest.approx(0.5)


@pytest.mark.parametrize("eps, delta, expected", [
    (LN3, 0.0, True),          # RR is (ln 3, 0)-DP ...
    (0.5, 0.0, False),         # ... and not (0.5, 0)-DP: the profile there is (3 - e^0.5)/4 = 0.337820
    (0.5, 0.3378, False),
    (0.5, 0.3379, True),
    (0.0, 0.5, True),          # TV = 1/2
    (0.0, 0.4999, False),
])
def test_is_indistinguishable_reference(eps, delta, expected):
    assert is_indistinguishable(RR_P, RR_Q, eps, delta) is expected


def test_is_indistinguishable_atol():
    p, q = [0.5, 0.5], [0.5 + 1e-13, 0.5 - 1e-13]
    assert is_indistinguishable(p, q, 0.0, 0.0)                      # within the default slack 1e-12
    assert not is_indistinguishable(p, q, 0.0, 0.0, atol=0.0)


# --------------------------------------------------------------------------------------------------------
# hockey-stick: properties
# --------------------------------------------------------------------------------------------------------

@given(pmf_pairs(max_size=7), st.floats(0.0, 5.0))
def test_hockey_stick_matches_brute_force_over_events(pair, eps):
    p, q = pair
    assert hockey_stick_divergence(p, q, eps) == pytest.approx(hockey_stick_over_events(p, q, eps),
                                                               abs=1e-12)


@given(pmf_pairs(), st.floats(0.0, 20.0), st.floats(0.0, 20.0))
def test_hockey_stick_monotone_and_convex_in_exp_epsilon(pair, e1, e2):
    p, q = pair
    lo, hi = sorted((e1, e2))
    h_lo, h_hi = hockey_stick_divergence(p, q, lo), hockey_stick_divergence(p, q, hi)
    assert h_hi <= h_lo + 1e-15
    # Convexity in gamma = e^eps: H(ln((g1 + g2)/2)) <= (H(ln g1) + H(ln g2))/2.
    mid = math.log((math.exp(lo) + math.exp(hi)) / 2.0)
    assert hockey_stick_divergence(p, q, mid) <= (h_lo + h_hi) / 2.0 + 1e-12


@given(pmf_pairs())
def test_hockey_stick_at_zero_is_total_variation(pair):
    p, q = pair
    tv = total_variation(p, q)
    assert hockey_stick_divergence(p, q, 0.0) == pytest.approx(tv, abs=1e-12)
    assert hockey_stick_divergence(q, p, 0.0) == pytest.approx(tv, abs=1e-12)


@given(pmf_pairs(), st.floats(0.0, 30.0))
def test_profile_and_indistinguishability_agree(pair, eps):
    p, q = pair
    both = max(hockey_stick_divergence(p, q, eps), hockey_stick_divergence(q, p, eps))
    assert privacy_profile(p, q, eps) == both
    if both < 1.0 - 1e-6:
        assert is_indistinguishable(p, q, eps, both)
        assert is_indistinguishable(p, q, eps, min(both + 1e-6, 0.999999))
    if both > 1e-9:
        assert not is_indistinguishable(p, q, eps, both - 1e-9, atol=0.0)


@given(pmf_pairs(max_size=6), st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_data_processing_inequality(pair, seed, m):
    """Post-processing by a channel K cannot increase any of the divergences (van Erven & Harremoës 2014,
    Theorem 9 for Rényi/KL; Balle et al. 2018 for hockey-stick; TV is H at eps = 0)."""
    p, q = pair
    k = random_channel(seed, p.size, m)
    pk, qk = p @ k, q @ k
    grid = np.array([0.0, 0.3, 1.0, 4.0])
    assert np.all(privacy_profile(pk, qk, grid) <= privacy_profile(p, q, grid) + 1e-12)
    assert total_variation(pk, qk) <= total_variation(p, q) + 1e-12
    assert kl_divergence(pk, qk) <= kl_divergence(p, q) + 1e-10
    for alpha in (0.5, 2.0, 7.5, np.inf):
        assert renyi_divergence(pk, qk, alpha) <= renyi_divergence(p, q, alpha) + 1e-10


# --------------------------------------------------------------------------------------------------------
# total variation and KL
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p, q, tv, kl", [
    # Bernoulli pair by hand: TV = |1/2 - 1/4| = 1/4; KL = (1/2) ln 2 + (1/2) ln(2/3) = (1/2) ln(4/3).
    (HALF, QUARTER, 0.25, 0.5 * math.log(4 / 3)),
    # RR at ln 3: KL = eps (e^eps - 1)/(e^eps + 1), the expected privacy loss of RR (lecture Section 2.1).
    (RR_P, RR_Q, 0.5, LN3 * 2 / 4),
    # Support mismatch: Q = 0 where P > 0 gives KL = +inf; the reverse direction is finite.
    ([0.5, 0.5], [1.0, 0.0], 0.5, math.inf),
    ([1.0, 0.0], [0.5, 0.5], 0.5, math.log(2.0)),
    ([0.3, 0.7], [0.3, 0.7], 0.0, 0.0),
])
def test_tv_and_kl_reference(p, q, tv, kl):
    assert total_variation(p, q) == pytest.approx(tv, rel=1e-12)
    assert kl_divergence(p, q) == pytest.approx(kl, rel=1e-12)


@given(pmf_pairs())
def test_kl_nonnegative_and_zero_on_equal(pair):
    p, q = pair
    assert kl_divergence(p, q) >= 0.0
    assert kl_divergence(p, p) == 0.0
    assert 0.0 <= total_variation(p, q) <= 1.0


# --------------------------------------------------------------------------------------------------------
# Rényi divergence
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha, expected", [
    # P = (1/2, 1/2), Q = (1/4, 3/4); D_a = ln(sum p^a q^(1-a))/(a-1), each computed by hand:
    (0.5, -2.0 * math.log((1.0 + math.sqrt(3.0)) / (2.0 * math.sqrt(2.0)))),  # -2 ln(sqrt(1/8)+sqrt(3/8))
    (1.0, 0.5 * math.log(4 / 3)),                                               # KL
    (2.0, math.log(4 / 3)),                                                     # ln(1 + 1/3)
    (3.0, 0.5 * math.log(20 / 9)),                                              # ln(2 + 2/9)/2
    (math.inf, math.log(2.0)),                                                  # ln max(2, 2/3)
])
def test_renyi_bernoulli_by_hand(alpha, expected):
    assert renyi_divergence(HALF, QUARTER, alpha) == pytest.approx(expected, rel=1e-12)


def test_renyi_is_not_the_garbled_slide_formula():
    """ERRATA item 9: the slide's expectation is garbled.  Two readings of it - E_P[(P/Q)^alpha] and
    (E_Q[P/Q])^alpha - give 0.5 ln(10/9) ... and 0 for alpha = 2 on the Bernoulli pair, while the correct
    value is ln(4/3).  The test fails if the implementation uses either reading."""
    p, q, alpha = np.array(HALF), np.array(QUARTER), 2.0
    garbled_p_expectation = math.log(np.sum(p * (p / q) ** alpha)) / (alpha - 1)   # ln(0.5*4 + 0.5*4/9)
    garbled_power_outside = math.log(np.sum(q * (p / q)) ** alpha) / (alpha - 1)  # = 0
    ours = renyi_divergence(p, q, alpha)
    assert ours == pytest.approx(math.log(4 / 3), rel=1e-12)
    assert abs(ours - garbled_p_expectation) > 0.1
    assert abs(ours - garbled_power_outside) > 0.1


@pytest.mark.parametrize("p, q, alpha, expected", [
    ([0.5, 0.5], [1.0, 0.0], 2.0, math.inf),          # P has mass where Q has none, alpha >= 1
    ([0.5, 0.5], [1.0, 0.0], 1.0, math.inf),
    ([0.5, 0.5], [1.0, 0.0], math.inf, math.inf),
    # alpha < 1: finite; sum over the common support: 0.5^a 1^(1-a) -> D = ln(0.5^a)/(a-1) = a ln 2/(1-a)
    ([0.5, 0.5], [1.0, 0.0], 0.5, math.log(2.0)),
    ([0.5, 0.5], [1.0, 0.0], 0.25, math.log(2.0) / 3),
    ([1.0, 0.0], [0.0, 1.0], 0.5, math.inf),          # disjoint supports: infinite for every order
    ([1.0, 0.0], [0.5, 0.5], 2.0, math.log(2.0)),     # Q has extra mass: ln(1^2/0.5)
])
def test_renyi_supports(p, q, alpha, expected):
    assert renyi_divergence(p, q, alpha) == pytest.approx(expected, rel=1e-12)


@given(pmf_pairs())
def test_renyi_nondecreasing_in_alpha(pair):
    """van Erven & Harremoës (2014), Theorem 3."""
    p, q = pair
    alphas = np.array([0.1, 0.5, 0.9, 0.999, 1.0, 1.001, 1.5, 2.0, 5.0, 20.0, 100.0, np.inf])
    d = renyi_divergence(p, q, alphas)
    assert d.shape == alphas.shape
    finite = np.isfinite(d)
    assert np.all(np.diff(d[finite]) >= -1e-10 * np.maximum(1.0, d[finite][1:]))
    # once infinite, always infinite
    if (~finite).any():
        assert np.all(~finite[np.argmax(~finite):])


@given(pmf_pairs())
def test_renyi_tends_to_kl_near_one(pair):
    """D_alpha -> KL as alpha -> 1 (Theorem 5 of van Erven & Harremoës); the derivative at 1 is Var_P(L)/2,
    so |D_alpha - KL| <= |alpha - 1| * max L^2 to first order.  A naive ln(sum)/(alpha - 1) would be off by
    ~1e-16/1e-10 = 1e-6 here."""
    p, q = pair
    kl = kl_divergence(p, q)
    if not math.isfinite(kl):
        return
    support = p > 0
    loss = np.log(p[support]) - np.log(q[support])
    for step in (1e-10, -1e-10, 1e-6, -1e-6):
        bound = abs(step) * float(np.max(loss**2)) + 1e-12
        assert abs(renyi_divergence(p, q, 1.0 + step) - kl) <= bound


@given(pmf_pairs())
def test_renyi_tends_to_max_log_ratio(pair):
    """D_alpha <= D_inf and D_inf - D_alpha <= (ln(1/Q(x*)) - D_inf)/(alpha - 1) with x* the argmax of P/Q
    (from E_Q[(P/Q)^alpha] >= Q(x*) e^(alpha D_inf)); van Erven & Harremoës (2014), Theorem 6."""
    p, q = pair
    d_inf = renyi_divergence(p, q, np.inf)
    if not math.isfinite(d_inf):
        return
    support = p > 0
    ratio = np.log(p[support]) - np.log(q[support])
    q_star = q[support][np.argmax(ratio)]
    for alpha in (10.0, 1e3, 1e6):
        d = renyi_divergence(p, q, alpha)
        assert d <= d_inf + 1e-12
        assert d_inf - d <= (-math.log(q_star) - d_inf) / (alpha - 1.0) + 1e-12


# --------------------------------------------------------------------------------------------------------
# cross-checks with dp-accounting 0.6.0 (public API only)
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps, delta", [(0.5, 1e-3), (1.0, 0.0), (2.0, 0.05)])
def test_profile_matches_dp_accounting_privacy_parameters(eps, delta):
    """dp_accounting's PLD from (eps, delta) is exactly leaky randomized response (its docstring: loss +inf
    w.p. delta, +eps w.p. (1-delta)/(1+e^-eps), -eps otherwise).  With a grid step 2^-10 the atoms +-eps lie
    on the grid, so the only difference left is truncation (~1e-15)."""
    step = 2.0 ** -10
    pld = dpa_pld.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(eps, delta),
                                          value_discretization_interval=step)
    hi, lo = (1 - delta) / (1 + math.exp(-eps)), (1 - delta) / (1 + math.exp(eps))
    p_u, p_v = [hi, lo, delta, 0.0], [lo, hi, 0.0, delta]
    grid = step * np.arange(0, int(round(1.5 * eps / step)) + 1, 37)
    ours = privacy_profile(p_u, p_v, grid, symmetric=False)
    theirs = np.array(pld.get_delta_for_epsilon(grid))
    np.testing.assert_allclose(ours, theirs, atol=1e-14)


@given(pmf_pairs(min_size=2, max_size=6), st.floats(0.0, 3.0))
def test_hockey_stick_bracketed_by_dp_accounting(pair, eps):
    """dp_accounting.from_two_probability_mass_functions rounds each privacy loss up (pessimistic) or down
    (optimistic) to a multiple of the step s, so H(eps) <= pessimistic(eps) <= H(eps - s) and
    H(eps + s) <= optimistic(eps) <= H(eps).  (Its 'upper' argument is P, 'lower' is Q.)"""
    p, q = pair
    s = 1e-3

    def logs(v):
        with np.errstate(divide="ignore"):
            return {i: float(x) for i, x in enumerate(np.log(v))}

    kwargs = dict(log_probability_mass_function_lower=logs(q), log_probability_mass_function_upper=logs(p),
                  value_discretization_interval=s)
    pess = dpa_pld.from_two_probability_mass_functions(pessimistic_estimate=True, **kwargs)
    opt = dpa_pld.from_two_probability_mass_functions(pessimistic_estimate=False, **kwargs)
    e = eps + s                                 # so that e - s >= 0 stays in our domain
    tol = 1e-13                                 # dp_accounting truncation leaves ~1e-15
    assert (hockey_stick_divergence(p, q, e) - tol <= pess.get_delta_for_epsilon(e)
            <= hockey_stick_divergence(p, q, e - s) + tol)
    assert (hockey_stick_divergence(p, q, e + s) - tol <= opt.get_delta_for_epsilon(e)
            <= hockey_stick_divergence(p, q, e) + tol)


@pytest.mark.parametrize("eps, k", [(0.5, 2), (1.0, 2), (2.0, 5), (0.1, 10)])
def test_renyi_matches_dp_accounting_randomized_response(eps, k):
    """dp_accounting's RdpAccountant (REPLACE_ONE) gives the RDP of k-ary randomized response, which is the
    Rényi divergence of its two output rows; compared at integer orders (its fractional orders are not
    used here) and at alpha = inf."""
    m = np.full((k, k), 1.0 / (k - 1 + math.exp(eps)))
    np.fill_diagonal(m, math.exp(eps) / (k - 1 + math.exp(eps)))
    p, q = m[0], m[1]
    noise = k / (math.exp(eps) + k - 1)        # P(report x) = 1 - noise + noise/k = e^eps/(k - 1 + e^eps)
    orders = [2, 3, 4, 8, 16, 64]
    acc = dpa_rdp.RdpAccountant(orders=orders,
                                neighboring_relation=privacy_accountant.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_event.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=k))
    np.testing.assert_allclose(renyi_divergence(p, q, np.array(orders, dtype=float)), acc.rdp, rtol=1e-9)
    assert renyi_divergence(p, q, np.inf) == pytest.approx(eps, rel=1e-12)


# --------------------------------------------------------------------------------------------------------
# invalid input
# --------------------------------------------------------------------------------------------------------

BAD_PMFS = [
    [0.5, 0.6],                     # does not sum to 1
    [1.2, -0.2],                    # negative entry
    [np.nan, 1.0],
    [np.inf, 0.0],
    [[0.5, 0.5]],                   # 2-D
    [],                             # empty
    ["a", "b"],
    [True, False],
    0.5,                            # scalar
]


def _all_calls(p, q, eps=0.5, delta=0.1, alpha=2.0):
    return [
        lambda: hockey_stick_divergence(p, q, eps),
        lambda: privacy_profile(p, q, eps),
        lambda: is_indistinguishable(p, q, eps, delta),
        lambda: total_variation(p, q),
        lambda: kl_divergence(p, q),
        lambda: renyi_divergence(p, q, alpha),
    ]


@pytest.mark.parametrize("bad", BAD_PMFS, ids=repr)
def test_bad_pmfs_raise(bad):
    for call in _all_calls(bad, [0.5, 0.5]) + _all_calls([0.5, 0.5], bad):
        with pytest.raises(ValueError, match=r"\b[pq]\b"):
            call()


def test_mismatched_lengths_raise():
    for call in _all_calls([0.5, 0.5], [0.2, 0.3, 0.5]):
        with pytest.raises(ValueError, match="same length"):
            call()


bad_epsilons = st.one_of(st.floats(max_value=-1e-300), st.just(np.nan), st.just(np.inf),
                         st.just(-np.inf), st.text(max_size=3), st.just(None), st.booleans())


@given(bad_epsilons)
def test_bad_epsilon_raises(eps):
    for call in _all_calls(RR_P, RR_Q, eps=eps)[:3]:
        with pytest.raises(ValueError, match="epsilon"):
            call()


@given(st.lists(st.floats(0.0, 5.0), min_size=1, max_size=4), bad_epsilons.filter(
    lambda e: isinstance(e, float)))
def test_bad_epsilon_inside_array_raises(good, bad):
    with pytest.raises(ValueError, match="epsilon"):
        privacy_profile(RR_P, RR_Q, np.array(good + [bad]))


@given(st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(np.nan),
                 st.text(max_size=2)))
def test_bad_delta_raises(delta):
    with pytest.raises(ValueError, match="delta"):
        is_indistinguishable(RR_P, RR_Q, 0.5, delta)


@given(st.one_of(st.floats(max_value=-1e-300), st.just(np.nan), st.just(np.inf), st.text(max_size=2)))
def test_bad_atol_raises(atol):
    with pytest.raises(ValueError, match="atol"):
        is_indistinguishable(RR_P, RR_Q, 0.5, 0.1, atol=atol)


@given(st.one_of(st.floats(max_value=0.0), st.just(np.nan), st.just(-np.inf), st.text(max_size=2),
                 st.just(None)))
def test_bad_alpha_raises(alpha):
    with pytest.raises(ValueError, match="alpha"):
        renyi_divergence(HALF, QUARTER, alpha)


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_bad_symmetric_flag_raises(flag):
    with pytest.raises(ValueError, match="symmetric"):
        privacy_profile(RR_P, RR_Q, 0.5, symmetric=flag)
