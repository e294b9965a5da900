"""Tests for dp_course.adaptive: transcripts of adaptive compositions and Claim 3.3 (composing per-round maps).

Reference values are typed in by hand; the claim itself is checked on seeded random adaptive compositions whose
round mechanisms are random post-processings of leaky randomized response (so they are (eps, delta)-DP by
construction and the history changes which mechanism runs).
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy import stats

from dp_course import adaptive
from dp_course.adaptive import (
    MAX_ENUMERATION,
    composed_map_distribution,
    run_composed_map,
    transcript_distributions,
)
from dp_course.composition import optimal_composition_delta
from dp_course.divergences import hockey_stick_divergence
from dp_course.leaky import leaky_randomized_response, sample_leaky_randomized_response


def random_adaptive(eps: float, delta: float, seed: int, max_outcomes: int = 4):
    """A round_pair whose mechanism depends on the whole history: a channel K (4 x n, n and K drawn from a
    generator seeded by the history) applied to leaky randomized response.  (eps, delta)-DP by post-processing."""
    p_u, p_v = leaky_randomized_response(eps, delta)

    def round_pair(history):
        rng = np.random.default_rng([seed, len(history), *history])
        n = int(rng.integers(1, max_outcomes + 1))
        k = rng.dirichlet(np.full(n, 0.6), size=4)
        return p_u @ k, p_v @ k

    return round_pair


def rr_then_three(history):
    """Round 1 randomized response at ln 3; afterwards a 3-outcome pair after a 0 and randomized response again
    after a 1 (all (ln 3, 0)-DP)."""
    if not history or history[-1] == 1:
        return [0.75, 0.25], [0.25, 0.75]
    return [0.5, 0.3, 0.2], [0.3, 0.3, 0.4]


# --------------------------------------------------------------------------------------------------------
# transcripts
# --------------------------------------------------------------------------------------------------------

def test_transcripts_by_hand():
    """Two rounds of rr_then_three: 2 transcripts after y1 = 1, 3 after y1 = 0; probabilities by hand."""
    ys, p, q = transcript_distributions(rr_then_three, 2)
    assert ys == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    np.testing.assert_allclose(p, [0.75 * 0.5, 0.75 * 0.3, 0.75 * 0.2, 0.25 * 0.75, 0.25 * 0.25], rtol=1e-15)
    np.testing.assert_allclose(q, [0.25 * 0.3, 0.25 * 0.3, 0.25 * 0.4, 0.75 * 0.25, 0.75 * 0.75], rtol=1e-15)


def test_transcripts_drop_outputs_impossible_under_both():
    ys, p, q = transcript_distributions(lambda h: ([0.5, 0.0, 0.5], [0.5, 0.0, 0.5]), 2)
    assert ys == [(0, 0), (0, 2), (2, 0), (2, 2)]
    assert p.sum() == pytest.approx(1.0, abs=1e-15) and np.array_equal(p, q)


def test_nonadaptive_leaky_transcripts_have_the_k_fold_profile():
    """k copies of leaky RR: the transcript pair's privacy profile is the exact k-fold (KOV) profile."""
    eps, delta, k = 0.4, 0.03, 4
    ys, p, q = transcript_distributions(lambda h: leaky_randomized_response(eps, delta), k)
    assert len(ys) == 2 * 3 ** k - 2 ** k            # sequences without "I am V", or without "I am U"
    for eps_total in [0.0, 0.4, 0.8, 1.2, 1.6, 3.0]:
        assert hockey_stick_divergence(p, q, eps_total) == pytest.approx(
            optimal_composition_delta(eps, delta, k, eps_total), rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------------------------------------
# Claim 3.3
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps, delta, k, seed", [(0.5, 0.05, 3, 1), (1.0, 0.0, 3, 2), (0.2, 0.3, 4, 3),
                                                 (2.0, 0.01, 2, 4), (0.0, 0.2, 3, 5), (8.0, 1e-6, 3, 6)])
def test_claim_3_3_composed_maps_reproduce_both_transcript_laws(eps, delta, k, seed):
    """Algorithm 1, summed exactly over all 4^k leaky sequences, gives the transcript law on x from U's and the
    law on x' from V's (to the accuracy of the per-round maps)."""
    round_pair = random_adaptive(eps, delta, seed)
    ys, p, q = transcript_distributions(round_pair, k)
    ys2, law_u, law_v = composed_map_distribution(round_pair, k, eps, delta)
    assert ys2 == ys
    np.testing.assert_allclose(law_u, p, rtol=0, atol=1e-12)
    np.testing.assert_allclose(law_v, q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("eps, delta, k, seed", [(0.5, 0.05, 3, 11), (1.0, 0.0, 4, 12), (0.3, 0.1, 3, 13)])
def test_adaptive_profile_is_below_the_k_fold_leaky_profile(eps, delta, k, seed):
    """Consequence of Claim 3.3 and post-processing: at every total epsilon the adaptive composition's delta is
    at most that of k-fold leaky randomized response."""
    ys, p, q = transcript_distributions(random_adaptive(eps, delta, seed), k)
    for eps_total in np.linspace(0.0, k * eps + 0.5, 23):
        bound = optimal_composition_delta(eps, delta, k, eps_total)
        assert hockey_stick_divergence(p, q, eps_total) <= bound + 1e-12
        assert hockey_stick_divergence(q, p, eps_total) <= bound + 1e-12


def test_run_composed_map_samples_the_transcript_law():
    """Algorithm 1 on samples: 200 000 rows of U (and of V) give transcripts distributed as P (and Q).  Pearson
    chi-square goodness of fit, rejecting at p < 1e-7: false-failure rate 2e-7 for the two checks."""
    eps, delta, k = 0.5, 0.05, 3
    round_pair = random_adaptive(eps, delta, 21, max_outcomes=3)
    ys, p, q = transcript_distributions(round_pair, k)
    index = {y: i for i, y in enumerate(ys)}
    rng = np.random.default_rng(22)
    for variable, target in (("U", p), ("V", q)):
        z = sample_leaky_randomized_response(eps, delta, (200_000, k), rng, variable=variable)
        rows = run_composed_map(round_pair, z, eps, delta, rng)
        assert rows.shape == (200_000, k)
        counts = np.bincount([index[tuple(r)] for r in rows.tolist()], minlength=len(ys))
        support = target > 0
        assert counts[~support].sum() == 0, "a transcript of probability 0 was produced"
        expected = 200_000 * target[support]
        assert stats.chisquare(counts[support], expected * counts.sum() / expected.sum()).pvalue > 1e-7


def test_run_composed_map_is_reproducible_and_follows_the_maps():
    """Same generator seed, same transcripts; and with delta = 0 and randomized response in every round, the map
    is the identity, so the transcript equals the input sequence."""
    rr = lambda h: ([0.75, 0.25], [0.25, 0.75])  # noqa: E731
    z = sample_leaky_randomized_response(math.log(3), 0.0, (50, 4), np.random.default_rng(1), variable="U")
    a = run_composed_map(rr, z, math.log(3), 0.0, np.random.default_rng(2))
    b = run_composed_map(rr, z, math.log(3), 0.0, np.random.default_rng(2))
    assert np.array_equal(a, b)
    assert np.array_equal(a, z)


# --------------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------------

def test_not_callable():
    with pytest.raises(ValueError, match="round_pair must be a function"):
        transcript_distributions([0.5, 0.5], 2)


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", True])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k must be an integer"):
        transcript_distributions(rr_then_three, k)


def test_round_pair_returning_garbage_names_the_history():
    def bad(history):
        return ([0.5, 0.6], [0.5, 0.5]) if history == (1,) else ([0.5, 0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"round_pair\(1,\) must return two pmfs.*p must sum to 1"):
        transcript_distributions(bad, 2)
    with pytest.raises(ValueError, match=r"round_pair\(\) must return two pmfs"):
        transcript_distributions(lambda h: 0.5, 1)


def test_round_that_is_not_private_enough_names_the_history():
    def leaky_after_one(history):
        if history == (1,):
            return [0.9, 0.1], [0.1, 0.9]                       # ln 9-DP, not (0.5, 0.05)
        return leaky_randomized_response(0.5, 0.05)[:2]
    with pytest.raises(ValueError, match=r"after history \(1,\) is not \(0.5, 0.05\)-DP"):
        composed_map_distribution(leaky_after_one, 2, 0.5, 0.05)


def test_enumeration_limits():
    with pytest.raises(ValueError, match="k must be at most"):
        composed_map_distribution(rr_then_three, 11, math.log(3), 0.0)
    n = MAX_ENUMERATION + 1
    wide = lambda h: (np.full(n, 1 / n), np.full(n, 1 / n))  # noqa: E731
    with pytest.raises(ValueError, match=f"more than {MAX_ENUMERATION} transcripts after 1 rounds"):
        transcript_distributions(wide, 1)


@pytest.mark.parametrize("z", [np.zeros(5, dtype=int), np.full((3, 2), 4), np.zeros((3, 2)), [[0, "I am U"]]])
def test_bad_samples(z):
    with pytest.raises(ValueError, match="z must be an int array of shape"):
        run_composed_map(rr_then_three, z, math.log(3), 0.0, np.random.default_rng(0))


@pytest.mark.parametrize("call", [
    lambda: composed_map_distribution(rr_then_three, 2, -1.0, 0.0),
    lambda: composed_map_distribution(rr_then_three, 2, 1.0, 1.0),
    lambda: run_composed_map(rr_then_three, np.zeros((2, 2), dtype=int), 1.0, 0.0, 42),
])
def test_bad_parameters(call):
    with pytest.raises(ValueError, match="epsilon|delta|rng"):
        call()


def test_docstring_examples():
    """The examples in the module's docstrings run and give the values shown."""
    result = doctest.testmod(adaptive, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
