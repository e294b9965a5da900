"""The two corrections of the slide deck that lecture 01 teaches (``ERRATA.md`` items 14 and 15).

Each test states the corrected fact and fails on the printed one.
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_course.divergences import is_indistinguishable, privacy_profile
from dp_course.mechanisms import KaryRandomizedResponse


def _exact_epsilon(channel: np.ndarray) -> float:
    """Smallest epsilon for which a channel (rows: inputs, columns: outputs; every two inputs neighbours) is
    epsilon-DP: the largest log ratio of two entries in one column."""
    return float(np.max(np.log(channel.max(axis=0) / channel.min(axis=0))))


def _mixture(p: float, k: int) -> np.ndarray:
    """Report the truth with probability p, otherwise a uniform draw from all k answers."""
    return p * np.eye(k) + (1 - p) / k


@pytest.mark.parametrize("epsilon, k", [(1.0, 4), (0.1, 2), (2.5, 3), (5.0, 10), (0.5, 50)])
def test_errata14_answer_at_random_needs_a_smaller_truth_probability(epsilon, k):
    """ERRATA 14.  Printed: report the truth with probability p = e^eps/(k-1+e^eps), "otherwise answer at
    random", and the mechanism is eps-DP.  Read literally (uniform over all k answers) it is
    ln(1 + k e^eps/(k-1))-DP; as a "truth or uniform" mixture, eps-DP needs p = (e^eps-1)/(e^eps+k-1), which is
    exactly k-ary randomized response."""
    printed = _mixture(np.exp(epsilon) / (k - 1 + np.exp(epsilon)), k)
    assert _exact_epsilon(printed) == pytest.approx(np.log1p(k * np.exp(epsilon) / (k - 1)), rel=1e-12)
    # the printed claim fails: some pair of true answers is not (eps, 0)-indistinguishable
    assert not is_indistinguishable(printed[0], printed[1], epsilon, 0.0)
    assert _exact_epsilon(printed) > epsilon + 0.05

    corrected = _mixture(np.expm1(epsilon) / (np.exp(epsilon) + k - 1), k)
    np.testing.assert_allclose(corrected, KaryRandomizedResponse(epsilon=epsilon, k=k).channel(), rtol=1e-12)
    assert _exact_epsilon(corrected) == pytest.approx(epsilon, rel=1e-12)
    assert all(is_indistinguishable(corrected[i], corrected[j], epsilon, 0.0) for i in range(k) for j in range(k))


def test_errata14_the_slide_example():
    """At eps = 1 and k = 4 the literal reading is 1.53-DP, not 1-DP (the number lecture 01 quotes)."""
    printed = _mixture(np.e / (3 + np.e), 4)
    assert round(_exact_epsilon(printed), 2) == 1.53


@pytest.mark.parametrize("epsilon", [0.0, 1.0, 50.0])
def test_errata15_replacement_does_not_imply_add_remove(epsilon):
    """ERRATA 15.  Printed: (eps, delta)-DP for replacement implies (eps, delta)-DP for add/remove.  The mechanism
    that publishes the number of records is 0-DP for replacement (neighbours have the same size) and not
    (eps, delta)-DP for add/remove for any eps and any delta < 1 (the sizes differ by one)."""
    same_size = (np.array([1.0, 0.0]), np.array([1.0, 0.0]))      # pmfs over the outputs (n, n - 1)
    one_removed = (np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert privacy_profile(*same_size, 0.0) == 0.0
    assert privacy_profile(*one_removed, epsilon) == 1.0
    assert not is_indistinguishable(*one_removed, epsilon, 0.999)


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 2.0])
def test_errata15_the_true_direction_holds_and_is_tight(epsilon):
    """ERRATA 15, the true direction: add/remove (eps, delta) implies replacement (2 eps, (1 + e^eps) delta).

    Checked on 300 random chains P_-, P_0, P_+ (pmfs on 4 outputs, seeded): with delta the larger profile of the
    two add/remove pairs at eps, the replacement pair (P_-, P_+) needs at most (1 + e^eps) delta at 2 eps.  The
    three-output example of lecture 01, Exercise 4 (b), needs exactly that much, so the delta cannot be lowered.
    """
    rng = np.random.default_rng(15)
    chains = rng.dirichlet(np.full(4, 0.7), size=(300, 3))
    for p_minus, p_zero, p_plus in chains:
        delta = max(privacy_profile(p_minus, p_zero, epsilon), privacy_profile(p_zero, p_plus, epsilon))
        assert privacy_profile(p_minus, p_plus, 2 * epsilon) <= (1 + np.exp(epsilon)) * delta + 1e-12
    e, delta = np.exp(epsilon), 0.01
    p_minus = np.array([0.0, (1 + e) * delta, 1 - (1 + e) * delta])
    p_zero = np.array([delta, delta, 1 - 2 * delta])
    p_plus = np.array([(1 + e) * delta, 0.0, 1 - (1 + e) * delta])
    assert is_indistinguishable(p_minus, p_zero, epsilon, delta)
    assert is_indistinguishable(p_zero, p_plus, epsilon, delta)
    assert privacy_profile(p_minus, p_plus, 2 * epsilon) == pytest.approx((1 + e) * delta, rel=1e-12)
