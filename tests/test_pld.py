"""Tests for dp_course.pld: reference values, invariants, and a cross-check against dp-accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from dp_course.mechanisms import (GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism, NameAndShame,
                                  RandomizedResponse)
from dp_course.pld import DiscretePLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from reference import hockey_stick
from strategies import bad_deltas, bad_epsilons, bad_ks, normalise, weight_lists

# Exact delta(1) of the 10-fold Laplace mechanism with scale 1 (eps0 = 1).  Source: issue #2.  Independently
# confirmed below: pessimistic and optimistic discretisations converge to it from both sides as the step shrinks.
LAPLACE_10_DELTA_1 = 0.737034853286704


def brute_force_delta(losses, probs, inf_mass, eps):
    """delta(eps) straight from the definition E[(1 - e^{eps - L})_+] (independent of the library)."""
    losses = np.asarray(losses, float)
    probs = np.asarray(probs, float)
    return inf_mass + float(np.sum(probs * np.clip(1.0 - np.exp(eps - losses), 0.0, None)))


# --------------------------------------------------------------------------------------------------------
# reference values (issue #2, each also recomputed here from an independent formula)
# --------------------------------------------------------------------------------------------------------
def rr_binomial_delta(k, eps0, eps):
    """k-fold randomized response by the binomial law, in plain floating point (scipy.stats.binom)."""
    i = np.arange(k + 1)
    return float(np.sum(stats.binom.pmf(i, k, 1 / (1 + np.exp(eps0)))
                        * np.clip(1 - np.exp(eps - (k - 2 * i) * eps0), 0, None)))


def test_rr_100_fold_reference_values():
    pld = RandomizedResponse(0.1).privacy_loss_distribution().self_compose(100)
    # issue #2: delta(1) = 0.125688390240636, eps(1e-6) = 4.77456758810799
    assert pld.delta_for_epsilon(1.0) == pytest.approx(0.125688390240636, rel=1e-9)
    assert pld.epsilon_for_delta(1e-6) == pytest.approx(4.77456758810799, rel=1e-9)
    # the same numbers from scipy's binomial pmf and a root finder
    assert pld.delta_for_epsilon(1.0) == pytest.approx(rr_binomial_delta(100, 0.1, 1.0), rel=1e-12)
    root = optimize.brentq(lambda e: rr_binomial_delta(100, 0.1, e) - 1e-6, 0, 10, xtol=1e-15)
    assert pld.epsilon_for_delta(1e-6) == pytest.approx(root, rel=1e-12)


def test_gaussian_reference_values():
    pld = GaussianMechanism(sigma=1.0, sensitivity=1.0).privacy_loss_distribution()
    # issue #2: delta(1) = 0.126936737506644, eps(1e-5) = 4.37717809568122
    assert pld.delta_for_epsilon(1.0) == pytest.approx(0.126936737506644, rel=1e-9)
    assert pld.epsilon_for_delta(1e-5) == pytest.approx(4.37717809568122, rel=1e-9)

    # Balle & Wang (2018) Thm 8 in plain floating point
    def bw(eps, s=1.0):
        return stats.norm.cdf(s / 2 - eps / s) - math.exp(eps) * stats.norm.cdf(-s / 2 - eps / s)

    for eps in (0.0, 0.3, 1.0, 2.5):
        assert pld.delta_for_epsilon(eps) == pytest.approx(bw(eps), rel=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 10.0, 50.0])
def test_name_and_shame_10_fold_is_flat(eps):
    pld = NameAndShame(0.01).privacy_loss_distribution().self_compose(10)
    # issue #2: delta(eps) = 1 - 0.99^10 for every eps >= 0
    assert pld.delta_for_epsilon(eps) == pytest.approx(1 - 0.99 ** 10, rel=1e-12)
    assert pld.infinity_mass == pytest.approx(1 - 0.99 ** 10, rel=1e-12)
    assert pld.mean == math.inf


def test_laplace_10_fold_sandwich():
    """Pessimistic within +1e-6 and optimistic within -1e-6 of the exact value (issue #2)."""
    mech = LaplaceMechanism.from_epsilon(1.0)
    pess = mech.privacy_loss_distribution(value_step=1e-4, pessimistic=True).self_compose(10)
    d_pess = pess.delta_for_epsilon(1.0)
    assert 0.0 <= d_pess - LAPLACE_10_DELTA_1 <= 1e-6
    # rounding down is first-order: a step of 4e-6 keeps it within 1e-6
    opt = mech.privacy_loss_distribution(value_step=4e-6, pessimistic=False).self_compose(10)
    d_opt = opt.delta_for_epsilon(1.0)
    assert 0.0 <= LAPLACE_10_DELTA_1 - d_opt <= 1e-6


def test_laplace_discretisation_converges_from_both_sides():
    """Independent confirmation of the reference: the gap closes at the rates the methods promise."""
    mech = LaplaceMechanism.from_epsilon(1.0)
    gaps_pess, gaps_opt = [], []
    for step in (1e-2, 1e-3):
        gaps_pess.append(mech.privacy_loss_distribution(step, True).self_compose(10).delta_for_epsilon(1.0)
                         - LAPLACE_10_DELTA_1)
        gaps_opt.append(LAPLACE_10_DELTA_1
                        - mech.privacy_loss_distribution(step, False).self_compose(10).delta_for_epsilon(1.0))
    assert all(g > 0 for g in gaps_pess + gaps_opt)
    assert gaps_pess[1] < gaps_pess[0] / 50      # second order: 100x smaller for a 10x finer step
    assert 5 < gaps_opt[0] / gaps_opt[1] < 20     # first order: about 10x smaller


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0, 2.0])
def test_laplace_mean_approaches_kl(eps0):
    """The mean of the privacy loss of Lap(0, 1/eps) vs Lap(1, 1/eps) is KL = eps + e^-eps - 1."""
    kl = eps0 + math.exp(-eps0) - 1
    mech = LaplaceMechanism.from_epsilon(eps0)
    errors = []
    for step in (1e-2 * eps0, 1e-3 * eps0):
        pess = mech.privacy_loss_distribution(step, pessimistic=True)
        opt = mech.privacy_loss_distribution(step, pessimistic=False)
        assert opt.mean <= kl <= pess.mean + 1e-15
        errors.append(pess.mean - opt.mean)
    assert errors[1] < errors[0] / 5
    assert errors[1] < 2e-3 * eps0


# --------------------------------------------------------------------------------------------------------
# exactness of DiscretePLD against definitions
# --------------------------------------------------------------------------------------------------------
@given(weight_lists, weight_lists, st.floats(0.0, 5.0))
def test_from_pmfs_delta_is_hockey_stick(p, q, eps):
    n = min(len(p), len(q))
    p, q = normalise(p[:n] if sum(p[:n]) > 0.1 else [1.0] * n), normalise(q[:n] if sum(q[:n]) > 0.1 else [1.0] * n)
    pld = DiscretePLD.from_pmfs(p, q)
    assert pld.delta_for_epsilon(eps) == pytest.approx(hockey_stick(p, q, eps), abs=1e-12)


@given(st.floats(0.01, 3.0), st.integers(1, 40), st.floats(0.0, 0.2))
def test_self_compose_matches_repeated_compose(eps0, k, delta):
    base = DiscretePLD([eps0, -eps0], [(1 - delta) / (1 + math.exp(-eps0)),
                                       (1 - delta) / (1 + math.exp(eps0))], delta)
    fast = base.self_compose(k)
    slow = base
    for _ in range(k - 1):
        slow = slow.compose(base)
    grid = np.linspace(0, k * eps0, 7)
    # atol: k additions of eps0 round the top atom by ~k ulps, which moves delta by about that much
    np.testing.assert_allclose(fast.delta_for_epsilon(grid), slow.delta_for_epsilon(grid), rtol=1e-9, atol=1e-12)
    assert fast.infinity_mass == pytest.approx(-math.expm1(k * math.log1p(-delta)), rel=1e-12, abs=1e-300)


def test_three_point_self_compose_is_exact():
    """K-ary RR has three losses; its k-fold PLD must equal the product-pmf definition."""
    p, q = KaryRandomizedResponse(0.7, 4).output_distributions()
    pld = DiscretePLD.from_pmfs(p, q).self_compose(3)
    big_p = np.einsum("i,j,k->ijk", p, p, p).ravel()
    big_q = np.einsum("i,j,k->ijk", q, q, q).ravel()
    for eps in (0.0, 0.3, 0.7, 1.4, 2.1):
        assert pld.delta_for_epsilon(eps) == pytest.approx(hockey_stick(big_p, big_q, eps), abs=1e-13)


@given(weight_lists, weight_lists)
def test_compose_is_product_of_pairs(p1, q1):
    n = min(len(p1), len(q1))
    p1, q1 = normalise([x + 0.05 for x in p1[:n]]), normalise([x + 0.05 for x in q1[:n]])
    p2, q2 = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    composed = DiscretePLD.from_pmfs(p1, q1).compose(DiscretePLD.from_pmfs(p2, q2))
    joint = DiscretePLD.from_pmfs(np.outer(p1, p2).ravel(), np.outer(q1, q2).ravel())
    eps = np.linspace(0, 3, 13)
    np.testing.assert_allclose(composed.delta_for_epsilon(eps), joint.delta_for_epsilon(eps), atol=1e-13)


@given(weight_lists, weight_lists)
def test_profile_is_nonincreasing_and_convex_in_exp_eps(p, q):
    n = min(len(p), len(q))
    p, q = normalise([x + 0.01 for x in p[:n]]), normalise([x + 0.01 for x in q[:n]])
    pld = DiscretePLD.from_pmfs(p, q).self_compose(3)
    x = np.linspace(1.0, 20.0, 200)              # x = e^eps
    d = pld.delta_for_epsilon(np.log(x))
    assert np.all(np.diff(d) <= 1e-13)
    assert np.all(np.diff(d, 2) >= -1e-12)       # convex in e^eps


@given(st.floats(0.05, 2.0), st.integers(2, 300), st.floats(1e-12, 0.5))
def test_epsilon_for_delta_inverts_delta(eps0, k, target):
    pld = RandomizedResponse(eps0).privacy_loss_distribution().self_compose(k)
    eps = pld.epsilon_for_delta(target)
    assert eps >= 0
    assert pld.delta_for_epsilon(eps) <= target      # conservative: the returned epsilon really works
    if eps > 0:
        # smallest such epsilon: slightly less gives a larger delta
        assert pld.delta_for_epsilon(eps * (1 - 1e-7)) > target


def test_epsilon_for_delta_edge_cases():
    ns = NameAndShame(0.05).privacy_loss_distribution()
    assert ns.epsilon_for_delta(0.01) == math.inf          # delta below the infinity mass
    assert ns.epsilon_for_delta(0.05) == 0.0
    rr = RandomizedResponse(1.0).privacy_loss_distribution()
    assert rr.epsilon_for_delta(0.0) == pytest.approx(1.0)  # pure DP: delta = 0 needs the full epsilon
    assert rr.epsilon_for_delta(0.99) == 0.0
    np.testing.assert_allclose(rr.epsilon_for_delta([0.0, 0.99]), [1.0, 0.0])
    assert GaussianPLD(0.5).epsilon_for_delta(0.0) == math.inf


def test_large_k_randomized_response_is_exact_and_fast():
    """k = 10^6: mean and variance of the binomial law, and the normal approximation near the centre."""
    import time

    eps0, k = 0.01, 10 ** 6
    start = time.perf_counter()
    pld = RandomizedResponse(eps0).privacy_loss_distribution().self_compose(k)
    d = pld.delta_for_epsilon(np.array([0.0, 10.0, 60.0, 80.0]))
    elapsed = time.perf_counter() - start
    p = 1 / (1 + math.exp(-eps0))
    assert pld.mean == pytest.approx(k * eps0 * (2 * p - 1), rel=1e-9)
    assert np.all(np.diff(d) < 0) and d[-1] > 0
    assert elapsed < 5.0  # generous here; the benchmark measures the real time (target < 1 s)


@pytest.mark.parametrize("eps0,k", [(50.0, 3), (20.0, 10), (5.0, 1000)])
def test_large_epsilon_stays_finite(eps0, k):
    pld = RandomizedResponse(eps0).privacy_loss_distribution().self_compose(k)
    eps = np.array([0.0, eps0, k * eps0 / 2, k * eps0 - 1e-9])
    d = pld.delta_for_epsilon(eps)
    assert np.all(np.isfinite(d)) and np.all((d >= 0) & (d <= 1))
    # no loss exceeds k * eps0, so delta vanishes there
    assert pld.delta_for_epsilon(k * eps0) == 0.0
    assert np.isfinite(pld.epsilon_for_delta(1e-10))


def test_cdf_and_mean_of_discrete():
    pld = DiscretePLD([-1.0, 0.0, 2.0], [0.2, 0.5, 0.2], infinity_mass=0.1)
    np.testing.assert_allclose(pld.cdf([-2, -1, -0.5, 0, 1.9, 2, np.inf]), [0, 0.2, 0.2, 0.7, 0.7, 0.9, 1.0])
    assert pld.mean == math.inf
    assert DiscretePLD([-1.0, 2.0], [0.5, 0.5]).mean == pytest.approx(0.5)


def test_sample_is_seeded_and_matches_law():
    """Empirical frequencies of 10^5 draws: Hoeffding gives P(|f - p| > 0.01) <= 2 e^{-20} ~ 4e-9 per atom."""
    pld = DiscretePLD([-1.0, 0.0, 2.0], [0.2, 0.5, 0.2], infinity_mass=0.1)
    a = pld.sample(100_000, np.random.default_rng(1))
    b = pld.sample(100_000, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    for value, prob in [(-1.0, 0.2), (0.0, 0.5), (2.0, 0.2), (np.inf, 0.1)]:
        assert abs(np.mean(a == value) - prob) < 0.01
    g = GaussianPLD(0.5).sample(100_000, np.random.default_rng(2))
    # mean of N(0.5, 1): P(|mean - 0.5| > 0.02) = P(|Z| > 6.3) ~ 3e-10
    assert abs(g.mean() - 0.5) < 0.02


# --------------------------------------------------------------------------------------------------------
# grid PLDs bound the truth from both sides
# --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: KaryRandomizedResponse(0.8, 5).privacy_loss_distribution(),
    lambda: RandomizedResponse(0.37).privacy_loss_distribution(),
    lambda: DiscretePLD.from_pmfs([0.5, 0.3, 0.2, 0.0], [0.25, 0.25, 0.25, 0.25]),
    lambda: GaussianPLD(0.3),
])
@pytest.mark.parametrize("k", [1, 7, 40])
def test_grid_sandwiches_exact(make, k):
    exact = make()
    eps = np.linspace(0.0, 3.0, 31)
    truth = exact.self_compose(k).delta_for_epsilon(eps)
    pess = exact.to_grid(1e-3, pessimistic=True).self_compose(k).delta_for_epsilon(eps)
    opt = exact.to_grid(1e-3, pessimistic=False).self_compose(k).delta_for_epsilon(eps)
    assert np.all(pess >= truth - 1e-13)
    assert np.all(opt <= truth + 1e-13)
    assert np.max(pess - truth) < 1e-4
    assert np.max(truth - opt) < 5e-2


def test_grid_of_gaussian_densities_matches_closed_form():
    """from_densities on the Gaussian pair vs the exact N(mu, 2 mu) law."""
    mech = GaussianMechanism(sigma=2.0)
    exact = mech.privacy_loss_distribution().self_compose(5)
    grid = GridPLD.from_densities(*mech.output_distributions(), value_step=1e-4).self_compose(5)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    d_exact, d_grid = exact.delta_for_epsilon(eps), grid.delta_for_epsilon(eps)
    assert np.all(d_grid >= d_exact - 1e-14)
    np.testing.assert_allclose(d_grid, d_exact, atol=1e-8)


@pytest.mark.parametrize("pessimistic", [True, False])
@pytest.mark.parametrize("eps0,step", [(0.05, 2.5e-6), (1.0, 1e-5), (3.0, 1e-3)])
def test_laplace_atoms_land_on_their_grid_points(eps0, step, pessimistic):
    """The atoms at +-eps0 (mass 1/2 and e^-eps0 / 2) must sit on the grid points +-eps0, even for fine steps
    where ln p - ln q in the far tails carries rounding larger than 1e-9 of the step."""
    pld = LaplaceMechanism.from_epsilon(eps0).privacy_loss_distribution(step, pessimistic)
    assert pld.losses[-1] == pytest.approx(eps0, abs=step / 10)
    assert pld.losses[0] == pytest.approx(-eps0, abs=step / 10)
    assert pld.probs[-1] >= 0.5 - 1e-12
    assert pld.probs[0] >= math.exp(-eps0) / 2 - 1e-12


def test_from_densities_rejects_non_monotone_loss():
    with pytest.raises(ValueError, match="monotone"):
        GridPLD.from_densities(stats.norm(0, 1), stats.norm(0, 2))


def test_grid_compose_checks_compatibility():
    a = RandomizedResponse(1.0).privacy_loss_distribution().to_grid(1e-3)
    with pytest.raises(ValueError, match="value_step must match"):
        a.compose(RandomizedResponse(1.0).privacy_loss_distribution().to_grid(1e-2))
    with pytest.raises(ValueError, match="pessimistic"):
        a.compose(RandomizedResponse(1.0).privacy_loss_distribution().to_grid(1e-3, pessimistic=False))
    with pytest.raises(ValueError, match="grid"):
        RandomizedResponse(1.0).privacy_loss_distribution().compose(GaussianPLD(1.0))
    mixed = a.compose(GaussianPLD(0.5))            # a grid absorbs an exact PLD
    assert isinstance(mixed, GridPLD)


# --------------------------------------------------------------------------------------------------------
# independent cross-check against dp-accounting
# --------------------------------------------------------------------------------------------------------
def test_cross_check_randomized_response_with_dp_accounting():
    """dp-accounting's own composition and delta code on the exact RR atoms (a grid aligned with eps0).

    dp-accounting's from_randomized_response computes the losses ln(p/q) in floating point and rounds the
    atom at -eps0 up to the next bucket, which moves delta by several percent after 60 rounds; so the PMF is
    built from the exact atoms +-eps0 = +-64 steps of 2^-8 instead.
    """
    from dp_accounting.pld import privacy_loss_distribution as dpa

    eps0, k, step = 0.25, 60, 2.0 ** -8
    truth = 1 / (1 + math.exp(-eps0))
    theirs = dpa.PrivacyLossDistribution.create_from_rounded_probability(
        {64: truth, -64: 1 - truth}, 0.0, step).self_compose(k)
    ours = RandomizedResponse(eps0).privacy_loss_distribution().self_compose(k)
    for eps in (0.0, 0.5, 1.0, 2.0, 4.0):
        assert ours.delta_for_epsilon(eps) == pytest.approx(theirs.get_delta_for_epsilon(eps), rel=1e-9, abs=1e-14)
    for delta in (1e-2, 1e-4, 1e-6):
        # both solve delta(eps) = delta exactly between atoms
        assert ours.epsilon_for_delta(delta) == pytest.approx(theirs.get_epsilon_for_delta(delta), rel=1e-9)


def test_cross_check_gaussian_and_laplace_with_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as dpa

    g_theirs = dpa.from_gaussian_mechanism(2.0, value_discretization_interval=1e-4).self_compose(10)
    g_ours = GaussianPLD.from_mechanism(2.0).self_compose(10)
    for eps in (0.0, 0.5, 1.0, 2.0):
        assert g_ours.delta_for_epsilon(eps) == pytest.approx(g_theirs.get_delta_for_epsilon(eps), abs=1e-6)
    l_theirs = dpa.from_laplace_mechanism(10.0, value_discretization_interval=1e-4).self_compose(100)
    l_ours = LaplaceMechanism.from_epsilon(0.1).privacy_loss_distribution(1e-4).self_compose(100)
    for eps in (0.0, 0.5, 1.0, 2.0):
        assert l_ours.delta_for_epsilon(eps) == pytest.approx(l_theirs.get_delta_for_epsilon(eps), abs=1e-8)


# --------------------------------------------------------------------------------------------------------
# bad input: a clear ValueError naming the parameter, never a NaN
# --------------------------------------------------------------------------------------------------------
SAMPLE_PLDS: list[PrivacyLossDistribution] = [
    RandomizedResponse(1.0).privacy_loss_distribution(),
    GaussianPLD(0.5),
    RandomizedResponse(1.0).privacy_loss_distribution().to_grid(1e-2),
]


@given(bad_epsilons, st.sampled_from(range(len(SAMPLE_PLDS))))
def test_bad_epsilon_is_rejected(eps, which):
    with pytest.raises(ValueError, match="epsilon"):
        SAMPLE_PLDS[which].delta_for_epsilon(eps)


@given(bad_deltas, st.sampled_from(range(len(SAMPLE_PLDS))))
def test_bad_delta_is_rejected(delta, which):
    with pytest.raises(ValueError, match="delta"):
        SAMPLE_PLDS[which].epsilon_for_delta(delta)


@given(bad_ks, st.sampled_from(range(len(SAMPLE_PLDS))))
def test_bad_k_is_rejected(k, which):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        SAMPLE_PLDS[which].self_compose(k)


@pytest.mark.parametrize("losses,probs,inf,match", [
    ([0.0, 1.0], [0.5, 0.6], 0.0, "add up to 1"),
    ([0.0, 1.0], [0.5], 0.0, "same length"),
    ([0.0, float("nan")], [0.5, 0.5], 0.0, "losses"),
    ([0.0, 1.0], [-0.5, 1.5], 0.0, "probs"),
    ([0.0], [1.0], 1.5, "infinity_mass"),
])
def test_bad_discrete_pld(losses, probs, inf, match):
    with pytest.raises(ValueError, match=match):
        DiscretePLD(losses, probs, inf)


@pytest.mark.parametrize("p,q,match", [
    ([0.5, 0.6], [0.5, 0.5], "p must sum to 1"),
    ([0.5, 0.5], [0.5, 0.25, 0.25], "same length"),
    ([1.5, -0.5], [0.5, 0.5], "p must be"),
    ([0.5, float("nan")], [0.5, 0.5], "p must be"),
])
def test_bad_pmfs(p, q, match):
    with pytest.raises(ValueError, match=match):
        DiscretePLD.from_pmfs(p, q)


def test_other_bad_arguments():
    rr = RandomizedResponse(1.0).privacy_loss_distribution()
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        rr.sample(3, 42)
    with pytest.raises(ValueError, match=r"n must be an integer in \[0, 1e\+08\], got -1"):
        rr.sample(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="mu must be >= 0, got -1"):
        GaussianPLD(-1)
    with pytest.raises(ValueError, match="value_step must be > 0"):
        rr.to_grid(0.0)
    with pytest.raises(ValueError, match="other must be a PrivacyLossDistribution"):
        rr.compose(3)
    with pytest.raises(ValueError, match="x must be"):
        rr.cdf(float("nan"))
    with pytest.raises(ValueError, match="p_dist must be a scipy frozen"):
        GridPLD.from_densities("laplace", stats.laplace(1, 1))
