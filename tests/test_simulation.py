"""Tests for dp_course.leaky and dp_course.simulation: leaky randomized response and the simulation lemma (Lemma 3.1).

Covers reference maps, property tests over hundreds of (epsilon, delta)-indistinguishable pairs from two
families, the errata on the proof sketch (items 3 and 4) and sampling through a map.
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from dp_course.divergences import hockey_stick_divergence, privacy_profile
from dp_course.mechanisms import NameAndShame, RandomizedResponse
from dp_course.leaky import LEAKY_OUTCOMES, leaky_randomized_response, sample_leaky_randomized_response
from dp_course.simulation import SIMULATION_ATOL, apply_simulation_map, simulation_map, simulation_map_error
from strategies import pmf

METHODS = ("explicit", "linprog")
MANY = 3 * settings.default.max_examples          # "hundreds" of examples for the main property tests


def leaky_by_hand(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The table of the lecture (Section 3.1), typed in directly - independent of the library.  Numerator and
    denominator are divided by e^eps so that it also holds for huge epsilon."""
    big = (1 - delta) / (1 + math.exp(-eps))
    small = (1 - delta) * math.exp(-eps) / (1 + math.exp(-eps))
    return np.array([big, small, delta, 0.0]), np.array([small, big, 0.0, delta])


def assert_valid_map(f, p, q, eps, delta):
    """F is row-stochastic, nonnegative and reproduces p and q from U and V to SIMULATION_ATOL."""
    assert f.shape == (4, len(p))
    assert np.all(f >= 0.0)
    np.testing.assert_allclose(f.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    p_u, p_v = leaky_by_hand(eps, delta)
    np.testing.assert_allclose(p_u @ f, p, rtol=0, atol=SIMULATION_ATOL)
    np.testing.assert_allclose(p_v @ f, q, rtol=0, atol=SIMULATION_ATOL)


# --------------------------------------------------------------------------------------------------------
# strategies: two families of indistinguishable pairs
# --------------------------------------------------------------------------------------------------------

epsilons = st.one_of(st.just(0.0), st.floats(0.0, 1.0), st.floats(0.0, 20.0), st.sampled_from([1e-12, 1e-6]))
# for the explicit construction, which is meant to work for every finite epsilon
large_epsilons = st.one_of(epsilons, st.floats(20.0, 50.0), st.sampled_from([100.0, 710.0, 800.0, 1e6]))


@st.composite
def tight_pairs(draw, max_eps=20.0):
    """Family 1: a random pair (sizes 1-8, with zeros) and delta = its privacy profile at eps (tight), or
    somewhat above it.  delta_x and delta_y generally differ."""
    n = draw(st.integers(1, 8))
    p, q = draw(pmf(n)), draw(pmf(n))
    eps = min(draw(large_epsilons if max_eps > 20.0 else epsilons), max_eps)
    profile = privacy_profile(p, q, eps)
    if profile > 0.999:                                # (nearly) disjoint supports: delta < 1 must remain
        q = 0.5 * q + 0.5 * p
        profile = privacy_profile(p, q, eps)
    slack = draw(st.sampled_from([0.0, 0.0, 0.25, 0.9]))
    return p, q, eps, profile + slack * (1.0 - profile)


@st.composite
def processed_pairs(draw, max_eps=20.0):
    """Family 2: (U, V) pushed through a random 4 x n channel K - indistinguishable by post-processing."""
    n = draw(st.integers(1, 8))
    eps = min(draw(large_epsilons if max_eps > 20.0 else epsilons), max_eps)
    delta = draw(st.one_of(st.just(0.0), st.floats(0.0, 0.99), st.sampled_from([1e-12, 1e-6, 0.5])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = rng.dirichlet(np.full(n, 0.5), size=4)
    k[rng.random((4, n)) < 0.25] = 0.0
    k[k.sum(axis=1) == 0, 0] = 1.0
    k /= k.sum(axis=1, keepdims=True)
    p_u, p_v = leaky_by_hand(eps, delta)
    return p_u @ k, p_v @ k, eps, delta


# --------------------------------------------------------------------------------------------------------
# leaky randomized response
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps, delta, p_u, p_v", [
    # e^eps = 3, delta = 0.2: (1 - delta) * 3/4 = 0.6 and (1 - delta)/4 = 0.2 (by hand).
    (math.log(3.0), 0.2, [0.6, 0.2, 0.2, 0.0], [0.2, 0.6, 0.0, 0.2]),
    # eps = 0: 0 and 1 are fair coin flips of the non-leaked mass.
    (0.0, 0.5, [0.25, 0.25, 0.5, 0.0], [0.25, 0.25, 0.0, 0.5]),
    # delta = 0: plain randomized response (RR at ln 3 is (3/4, 1/4)).
    (math.log(3.0), 0.0, [0.75, 0.25, 0.0, 0.0], [0.25, 0.75, 0.0, 0.0]),
    # eps = 1000: e^eps overflows, the pmfs must not - 1/(e^eps + 1) underflows to 0.
    (1000.0, 0.1, [0.9, 0.0, 0.1, 0.0], [0.0, 0.9, 0.0, 0.1]),
])
def test_leaky_randomized_response_table(eps, delta, p_u, p_v):
    got_u, got_v = leaky_randomized_response(eps, delta)
    np.testing.assert_allclose(got_u, p_u, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(got_v, p_v, rtol=1e-14, atol=1e-300)
    assert got_u.sum() == pytest.approx(1.0, abs=1e-15) and got_v.sum() == pytest.approx(1.0, abs=1e-15)


@given(st.floats(0.0, 50.0), st.floats(0.0, 0.99))
def test_leaky_pair_is_exactly_eps_delta(eps, delta):
    """(U, V) is (eps, delta)-indistinguishable with delta tight, and matches the hand table."""
    p_u, p_v = leaky_randomized_response(eps, delta)
    hand_u, hand_v = leaky_by_hand(eps, delta)
    np.testing.assert_allclose(p_u, hand_u, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(p_v, hand_v, rtol=1e-13, atol=1e-300)
    # abs 1e-13: ln(P_U(0)/P_V(0)) = eps only up to a few ulps of eps (<= 50), which leaves ~1e-15 at eps.
    assert privacy_profile(p_u, p_v, eps) == pytest.approx(delta, abs=1e-13)
    if eps > 1e-3:
        assert privacy_profile(p_u, p_v, 0.99 * eps) > delta


# --------------------------------------------------------------------------------------------------------
# reference maps
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [0.1, math.log(3.0), 5.0, 20.0])
def test_randomized_response_map_is_identity(method, eps):
    """RR at its own eps with delta = 0: F(.|0) = (e^eps P - Q)/(e^eps - 1) = (1, 0) and F(.|1) = (0, 1)
    (by hand from ERRATA item 3: e^eps t - (1 - t) = e^eps - 1 with t = e^eps/(1 + e^eps))."""
    p, q = RandomizedResponse(eps).output_distributions()
    f = simulation_map(p, q, eps, 0.0, method=method)
    np.testing.assert_allclose(f[:2], np.eye(2), atol=1e-12)
    assert_valid_map(f, p, q, eps, 0.0)


@pytest.mark.parametrize("method", METHODS)
def test_delta_zero_closed_form_by_hand(method):
    """e^eps = 2, P = (0.5, 0.3, 0.2), Q = (0.3, 0.4, 0.3) (ratios 5/3, 3/4, 2/3 lie in [1/2, 2]):
    F(.|0) = 2P - Q = (0.7, 0.2, 0.1), F(.|1) = 2Q - P = (0.1, 0.5, 0.4)."""
    p, q = [0.5, 0.3, 0.2], [0.3, 0.4, 0.3]
    f = simulation_map(p, q, math.log(2.0), 0.0, method=method)
    np.testing.assert_allclose(f[0], [0.7, 0.2, 0.1], atol=1e-12)
    np.testing.assert_allclose(f[1], [0.1, 0.5, 0.4], atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [0.0, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-6, 0.1])
def test_name_and_shame_map(method, eps, delta):
    """NS_delta is (0, delta)-DP.  The only map: 0 and 1 go to "nothing", "I am U" to "record x" and "I am V"
    to "record x'" (the zero entries of P and Q force every other entry to 0)."""
    p, q = NameAndShame(delta).output_distributions()
    f = simulation_map(p, q, eps, delta, method=method)
    np.testing.assert_allclose(f, [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps, delta", [(0.5, 0.01), (2.0, 0.3), (15.0, 1e-6)])
def test_leaky_pair_maps_to_itself(method, eps, delta):
    """For (P, Q) = (U, V) the map is the identity (unique for eps > 0, delta > 0: V never says "I am U",
    so no row with V-weight may put mass there, etc.)."""
    p_u, p_v = leaky_randomized_response(eps, delta)
    f = simulation_map(p_u, p_v, eps, delta, method=method)
    np.testing.assert_allclose(f, np.eye(4), atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_epsilon_zero_delta_zero_means_equal(method):
    p = [0.2, 0.5, 0.3]
    f = simulation_map(p, p, 0.0, 0.0, method=method)
    assert_valid_map(f, np.array(p), np.array(p), 0.0, 0.0)
    with pytest.raises(ValueError, match="not"):
        simulation_map(p, [0.3, 0.4, 0.3], 0.0, 0.0, method=method)


def test_single_outcome():
    f = simulation_map([1.0], [1.0], 0.7, 0.1)
    np.testing.assert_array_equal(f, np.ones((4, 1)))


@pytest.mark.parametrize("eps", [30.0, 50.0, 200.0, 800.0])
def test_explicit_map_large_epsilon(eps):
    """The default method stays exact where e^eps q is astronomically large or overflows."""
    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.0, 1e-30, 0.6, 0.4 - 1e-30])
    delta = privacy_profile(p, q, eps)                      # = 0.5 + 0.4 (the Q-free / P-free atoms)
    f = simulation_map(p, q, eps, delta)
    assert_valid_map(f, p, q, eps, delta)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [5e-324, 2.220446049250313e-16, 1e-12])
def test_tiny_epsilon(method, eps):
    """For tiny epsilon the closed form divides rounding noise in x - y by ~epsilon (found by hypothesis at
    eps = 2**-52); the map must still be valid.  delta = the profile (= TV here, 1/14 by hand)."""
    p, q = np.array([0.0, 0.0, 0.5, 0.5]), np.array([0.0, 0.0, 4 / 7, 3 / 7])
    delta = privacy_profile(p, q, eps)
    assert delta == pytest.approx(1 / 14, abs=1e-12)
    assert_valid_map(simulation_map(p, q, eps, delta, method=method), p, q, eps, delta)


# --------------------------------------------------------------------------------------------------------
# property tests: both families, both methods
# --------------------------------------------------------------------------------------------------------

@settings(max_examples=MANY)
# processed pairs stop at eps = 700: beyond it e^-eps underflows, and V pushed through K is then no longer
# (eps, delta)-indistinguishable from U pushed through K in floating point.
@given(st.one_of(tight_pairs(max_eps=math.inf), processed_pairs(max_eps=700.0)))
def test_explicit_map_valid_on_indistinguishable_pairs(case):
    p, q, eps, delta = case
    f = simulation_map(p, q, eps, delta)
    assert_valid_map(f, p / p.sum(), q / q.sum(), eps, delta)
    assert simulation_map_error(f, p / p.sum(), q / q.sum(), eps, delta) <= SIMULATION_ATOL


@settings(max_examples=MANY)
@given(st.one_of(tight_pairs(), processed_pairs()))
def test_linprog_map_valid_on_indistinguishable_pairs(case):
    """The LP route, in its documented range epsilon <= 20."""
    p, q, eps, delta = case
    f = simulation_map(p, q, eps, delta, method="linprog")
    assert_valid_map(f, p / p.sum(), q / q.sum(), eps, delta)


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(pmf(n), pmf(n))), epsilons,
       st.sampled_from([0.0, 0.5, 0.99]))
def test_non_indistinguishable_pairs_raise(pair, eps, fraction):
    """delta below the privacy profile: no map exists, and the error says by how much."""
    p, q = pair
    profile = privacy_profile(p, q, eps)
    if profile < 1e-6:
        return                                         # equal-enough pairs are indistinguishable at delta=0
    delta = min(fraction * profile, profile - 1e-9)
    for method in METHODS:
        with pytest.raises(ValueError, match=r"not \(.*\)-indistinguishable: the hockey-stick divergence"):
            simulation_map(p, q, eps, delta, method=method)


def test_error_message_quotes_the_divergence():
    """RR at ln 3 checked at eps = 0.5: the profile is (3 - e^0.5)/4 = 0.337820 (by hand)."""
    with pytest.raises(ValueError) as info:
        simulation_map([0.75, 0.25], [0.25, 0.75], 0.5, 0.01)
    text = str(info.value)
    assert "(0.5, 0.01)-indistinguishable" in text and "0.33782" in text and "delta = 0.01" in text


# --------------------------------------------------------------------------------------------------------
# ERRATA item 3: the printed proof sketch and its naive repair
# --------------------------------------------------------------------------------------------------------

def naive_repair_map(p, q, eps):
    """The 'scale P'_x and P'_y down to mass 1 - delta' repair of the proof sketch (with min, as corrected),
    delta = max(delta_x, delta_y).  Returns the rows F(.|0), F(.|1) before any clipping."""
    dx, dy = hockey_stick_divergence(p, q, eps), hockey_stick_divergence(q, p, eps)
    delta = max(dx, dy)
    px = np.minimum(p, math.exp(eps) * q) * (1 - delta) / (1 - dx)
    py = np.minimum(q, math.exp(eps) * p) * (1 - delta) / (1 - dy)
    scale = (1 - delta) * (math.exp(eps) - 1)
    return (math.exp(eps) * px - py) / scale, (math.exp(eps) * py - px) / scale, delta


def test_naive_repair_fails_on_most_random_pairs_while_simulation_map_succeeds():
    """ERRATA item 3: on seeded random pairs of 2-5 point distributions (Dirichlet(1)) at eps = 0.5, the
    naive repair gives a negative entry in F(0) or F(1) in the majority of cases (measured: ~93 %), while
    simulation_map is valid on every one of them (both methods)."""
    rng = np.random.default_rng(20240531)
    eps, trials, failures = 0.5, 300, 0
    for _ in range(trials):
        n = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        f0, f1, delta = naive_repair_map(p, q, eps)
        failures += bool(min(f0.min(), f1.min()) < -1e-12)
        for method in METHODS:
            assert_valid_map(simulation_map(p, q, eps, delta, method=method), p, q, eps, delta)
    assert failures > trials / 2


def test_explicit_map_is_built_on_an_even_cut():
    """The explicit map's core pair, read off with the corrected equations (7)-(8), is the documented one: the
    lighter side is s p' and the heavier side is s (q' - min(lam, q' - e^-eps p')) for one level lam, with
    s = (1 - delta)/(1 - max(delta_x, delta_y)).  (Lecture 03, Exercise 3 asks for a different core pair - a
    mixture - so that reading the library's map off earns only the point of the symmetric case there.)"""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(60):
        n = int(rng.integers(2, 8))
        p, q = rng.dirichlet(np.full(n, 0.8), size=2)
        eps = float(rng.choice([0.1, 0.5, 1.5]))
        tight = float(privacy_profile(p, q, eps))
        if tight > 0.9:
            continue
        delta = tight + float(rng.uniform(0, 0.5)) * (1 - tight)
        f = simulation_map(p, q, eps, delta)
        a, b = 1 / (1 + math.exp(-eps)), 1 / (1 + math.exp(eps))
        x, y = (1 - delta) * (a * f[0] + b * f[1]), (1 - delta) * (b * f[0] + a * f[1])
        px, qy = np.minimum(p, math.exp(eps) * q), np.minimum(q, math.exp(eps) * p)
        if px.sum() > qy.sum():
            px, qy, x, y = qy, px, y, x
        s = (1 - delta) / px.sum()
        np.testing.assert_allclose(x, s * px, rtol=0, atol=1e-12)
        cut = s * qy - y
        room = s * (qy - math.exp(-eps) * px)
        assert np.all(cut >= -1e-12) and np.all(cut <= room + 1e-12)
        partial = cut < room - 1e-12                   # outcomes not cut down to the band: all cut by lam
        if partial.sum() >= 2:
            assert np.ptp(cut[partial]) <= 1e-12
            checked += 1
    assert checked >= 20


def test_naive_repair_is_fine_when_the_two_deltas_agree():
    """Sanity check of the test helper: with delta_x = delta_y (a symmetric pair) the scalings coincide and
    the naive repair is valid - the failure above is due to delta_x != delta_y, not to the helper."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    f0, f1, _ = naive_repair_map(p, q, 0.5)
    assert min(f0.min(), f1.min()) >= -1e-12


def test_naive_repair_counterexample_of_lecture_03_in_exact_fractions():
    """The pair lecture 03 shows (ERRATA item 3): p = (1/10, 4/10, 5/10), q = (3/10, 4/10, 3/10), e^eps = 2.
    delta_x = 0, delta_y = 1/10; scaling p' and q' down separately gives x = (9/100, 9/25, 9/20), y = q', and the
    first entry of F(.|0) is exactly -1/45 - while simulation_map is valid on this pair."""
    p, q = [Fr(1, 10), Fr(4, 10), Fr(5, 10)], [Fr(3, 10), Fr(4, 10), Fr(3, 10)]
    px = [min(a, 2 * b) for a, b in zip(p, q, strict=True)]
    qy = [min(b, 2 * a) for a, b in zip(p, q, strict=True)]
    dx, dy = 1 - sum(px), 1 - sum(qy)
    assert (dx, dy) == (0, Fr(1, 10))
    x = [v * (1 - dy) / (1 - dx) for v in px]
    f0 = [(2 * a - b) / ((1 - dy) * (2 - 1)) for a, b in zip(x, qy, strict=True)]
    assert x == [Fr(9, 100), Fr(9, 25), Fr(9, 20)] and f0[0] == Fr(-1, 45)
    for method in METHODS:
        assert_valid_map(simulation_map([0.1, 0.4, 0.5], [0.3, 0.4, 0.3], math.log(2), 0.1, method=method),
                         np.array([0.1, 0.4, 0.5]), np.array([0.3, 0.4, 0.3]), math.log(2), 0.1)


def test_printed_sketch_with_max_is_not_a_decomposition():
    """The printed P'_x = max{P_X, e^eps P_Y} has mass > 1 (the corrected min has mass 1 - delta_x), and the
    printed leak row delta_x max{0, P_X - e^eps P_Y} + (delta - delta_x)/delta P'_x does not sum to 1."""
    p, q, eps = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5]), 0.5
    dx, dy = hockey_stick_divergence(p, q, eps), hockey_stick_divergence(q, p, eps)
    delta = max(dx, dy)
    printed = np.maximum(p, math.exp(eps) * q)
    corrected = np.minimum(p, math.exp(eps) * q)
    assert printed.sum() > 1.0
    assert corrected.sum() == pytest.approx(1.0 - dx, abs=1e-15)
    leak_printed = dx * np.maximum(0.0, p - math.exp(eps) * q) + (delta - dx) / delta * printed
    assert abs(leak_printed.sum() - 1.0) > 0.1


# --------------------------------------------------------------------------------------------------------
# ERRATA item 4: equations (7)-(8) with delta > 0
# --------------------------------------------------------------------------------------------------------

def equations_7_8(f, eps, delta, corrected):
    """Right-hand sides of (7)-(8), printed (delta = 0 form) or corrected (factor 1 - delta, leak terms)."""
    a, b = math.exp(eps) / (math.exp(eps) + 1), 1 / (math.exp(eps) + 1)
    if not corrected:
        return a * f[0] + b * f[1], b * f[0] + a * f[1]
    x = (1 - delta) * (a * f[0] + b * f[1]) + delta * f[2]
    y = (1 - delta) * (b * f[0] + a * f[1]) + delta * f[3]
    return x, y


@pytest.mark.parametrize("method", METHODS)
@given(case=tight_pairs(max_eps=5.0))
def test_corrected_equations_7_8_hold_and_printed_ones_do_not(method, case):
    """For every returned F the corrected (7)-(8) hold.  The printed ones cannot both hold when the pair is
    not (eps, 0)-indistinguishable: they would exhibit P and Q as post-processed (eps, 0) randomized
    response.  Checked on pairs whose profile at eps exceeds 0.05 (a residual > 1e-4 is then forced)."""
    p, q, eps, delta = case
    f = simulation_map(p, q, eps, delta, method=method)
    x, y = equations_7_8(f, eps, delta, corrected=True)
    assert max(np.abs(x - p).max(), np.abs(y - q).max()) <= SIMULATION_ATOL
    if privacy_profile(p, q, eps) > 0.05:
        x, y = equations_7_8(f, eps, delta, corrected=False)
        assert max(np.abs(x - p).max(), np.abs(y - q).max()) > 1e-4


# --------------------------------------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------------------------------------

def chi_square_pvalue(samples, pmf, n_outcomes):
    counts = np.bincount(samples.ravel(), minlength=n_outcomes)
    support = pmf > 0
    assert counts[~support].sum() == 0, "an outcome of probability 0 was sampled"
    return stats.chisquare(counts[support], samples.size * pmf[support] / pmf[support].sum()).pvalue


def test_simulation_lemma_by_sampling():
    """F(U) ~ P and F(V) ~ Q empirically (seeded).  Chi-square goodness of fit, rejecting at p < 1e-7:
    the false-failure rate of each of the four checks is 1e-7 (< 1e-6 in total)."""
    rng = np.random.default_rng(7)
    p, q = np.array([0.5, 0.0, 0.3, 0.2]), np.array([0.1, 0.2, 0.3, 0.4])
    eps = 0.4
    delta = privacy_profile(p, q, eps)
    f = simulation_map(p, q, eps, delta)
    n = 200_000
    z_u = sample_leaky_randomized_response(eps, delta, n, rng, variable="U")
    z_v = sample_leaky_randomized_response(eps, delta, n, rng, variable="V")
    p_u, p_v = leaky_randomized_response(eps, delta)
    assert chi_square_pvalue(z_u, p_u, 4) > 1e-7
    assert chi_square_pvalue(z_v, p_v, 4) > 1e-7
    assert chi_square_pvalue(apply_simulation_map(f, z_u, rng), p, 4) > 1e-7
    assert chi_square_pvalue(apply_simulation_map(f, z_v, rng), q, 4) > 1e-7


def test_apply_accepts_labels_and_keeps_shape():
    f = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]])
    labels = [[0, 1], ["I am U", "I am V"]]
    out = apply_simulation_map(f, labels, np.random.default_rng(0))
    assert out.shape == (2, 2)
    assert out[0, 0] == 0 and out[0, 1] == 1 and out[1, 0] == 2 and out[1, 1] in (0, 1)
    same = apply_simulation_map(f, np.array([[0, 1], [2, 3]]), np.random.default_rng(0))
    np.testing.assert_array_equal(out, same)
    assert sample_leaky_randomized_response(0.5, 0.1, (3, 2), np.random.default_rng(0)).shape == (3, 2)
    assert apply_simulation_map(f, np.array([], dtype=int), np.random.default_rng(0)).shape == (0,)


def test_outcome_labels():
    assert LEAKY_OUTCOMES == (0, 1, "I am U", "I am V")


def test_simulation_map_error_measures_a_bad_map():
    p, q = np.array([0.75, 0.25]), np.array([0.25, 0.75])
    good = simulation_map(p, q, math.log(3.0), 0.0)
    assert simulation_map_error(good, p, q, math.log(3.0), 0.0) <= 1e-15
    swapped = good[[1, 0, 2, 3]]                        # sends U to Q: error |0.25 - 0.75| = 0.5
    assert simulation_map_error(swapped, p, q, math.log(3.0), 0.0) == pytest.approx(0.5)


# --------------------------------------------------------------------------------------------------------
# invalid input
# --------------------------------------------------------------------------------------------------------

bad_eps = st.one_of(st.floats(max_value=-1e-300), st.just(np.nan), st.just(np.inf), st.text(max_size=2),
                    st.just(None), st.booleans())
bad_delta = st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(np.nan),
                      st.text(max_size=2), st.just(None))
bad_pmfs = st.sampled_from([[0.5, 0.6], [1.2, -0.2], [np.nan, 1.0], [[0.5, 0.5]], [], ["a", "b"], 0.5])


@given(bad_eps)
def test_bad_epsilon(eps):
    for call in (lambda: leaky_randomized_response(eps, 0.1),
                 lambda: sample_leaky_randomized_response(eps, 0.1, 5, np.random.default_rng(0)),
                 lambda: simulation_map([0.5, 0.5], [0.5, 0.5], eps, 0.1),
                 lambda: simulation_map_error(np.full((4, 2), 0.5), [0.5, 0.5], [0.5, 0.5], eps, 0.1)):
        with pytest.raises(ValueError, match="epsilon"):
            call()


@given(bad_delta)
def test_bad_delta(delta):
    for call in (lambda: leaky_randomized_response(0.5, delta),
                 lambda: sample_leaky_randomized_response(0.5, delta, 5, np.random.default_rng(0)),
                 lambda: simulation_map([0.5, 0.5], [0.5, 0.5], 0.5, delta),
                 lambda: simulation_map_error(np.full((4, 2), 0.5), [0.5, 0.5], [0.5, 0.5], 0.5, delta)):
        with pytest.raises(ValueError, match="delta"):
            call()


@given(bad_pmfs)
def test_bad_pmfs(bad):
    for call in (lambda: simulation_map(bad, [0.5, 0.5], 0.5, 0.1),
                 lambda: simulation_map([0.5, 0.5], bad, 0.5, 0.1),
                 lambda: simulation_map_error(np.full((4, 2), 0.5), bad, [0.5, 0.5], 0.5, 0.1)):
        with pytest.raises(ValueError, match=r"\b[pq]\b"):
            call()
    with pytest.raises(ValueError, match="same length"):
        simulation_map([0.5, 0.5], [0.2, 0.3, 0.5], 0.5, 0.1)


@pytest.mark.parametrize("method", ["lp", "", None, "EXPLICIT"])
def test_bad_method(method):
    with pytest.raises(ValueError, match="method"):
        simulation_map([0.5, 0.5], [0.5, 0.5], 0.5, 0.1, method=method)


@pytest.mark.parametrize("f, match", [
    (np.full((3, 2), 0.5), "4 rows"),
    (np.full(4, 0.25), "2-dimensional"),
    (np.array([[1.5, -0.5]] * 4), "nonnegative"),
    (np.full((4, 2), 0.4), "sum to 1"),
    (np.array([[np.nan, 1.0]] * 4), "F"),
    ([["a", "b"]] * 4, "F"),
])
def test_apply_bad_map(f, match):
    with pytest.raises(ValueError, match=match):
        apply_simulation_map(f, [0, 1], np.random.default_rng(0))


@pytest.mark.parametrize("z", [[4], [-1], ["I am W"], [0.5], [None], [True], "I am U!"])
def test_apply_bad_samples(z):
    with pytest.raises(ValueError, match="z must"):
        apply_simulation_map(np.full((4, 2), 0.5), z, np.random.default_rng(0))


@pytest.mark.parametrize("rng", [None, 0, np.random.RandomState(0), "seed"])
def test_bad_rng(rng):
    with pytest.raises(ValueError, match="rng"):
        apply_simulation_map(np.full((4, 2), 0.5), [0, 1], rng)
    with pytest.raises(ValueError, match="rng"):
        sample_leaky_randomized_response(0.5, 0.1, 3, rng)


@pytest.mark.parametrize("size", [-1, 2.5, "3", None, (2, -1), True])
def test_bad_size(size):
    with pytest.raises(ValueError, match="size"):
        sample_leaky_randomized_response(0.5, 0.1, size, np.random.default_rng(0))


@pytest.mark.parametrize("variable", ["W", "u", 0, None])
def test_bad_variable(variable):
    with pytest.raises(ValueError, match="variable"):
        sample_leaky_randomized_response(0.5, 0.1, 3, np.random.default_rng(0), variable=variable)


def test_error_shape_mismatch():
    with pytest.raises(ValueError, match="column"):
        simulation_map_error(np.full((4, 3), 1 / 3), [0.5, 0.5], [0.5, 0.5], 0.5, 0.1)
