r"""Calibration: how much privacy each step may spend, or how much noise a step needs, for a target guarantee.

The composition theorems of :mod:`dp_course.composition` go forwards: per-step parameters in, total out.
Designing an algorithm goes backwards: the total :math:`(\tilde\varepsilon, \tilde\delta)` is given and the
per-step budget (or the noise scale) is wanted.  Every total is non-decreasing in the per-step
:math:`\varepsilon`, so each inverse here is a one-dimensional root search (``scipy.optimize.brentq`` on
:math:`\ln\varepsilon` or :math:`\ln\sigma`), returning the boundary value to about 1e-12 relative.

* :func:`advanced_composition_per_step_epsilon`: the largest :math:`\varepsilon` with
  :math:`k` :math:`(\varepsilon, 0)`-DP steps :math:`(\tilde\varepsilon, \delta')`-DP by Theorem 1.1;
* :func:`optimal_composition_per_step_epsilon`: the same with the exact optimal composition
  (Kairouz, Oh & Viswanath 2015) in place of Theorem 1.1;
* :func:`gaussian_sigma`: the smallest noise scale of the Gaussian mechanism with an exact
  :math:`(\varepsilon, \delta)` guarantee (Balle & Wang 2018).

References:
    Dwork & Roth, *The Algorithmic Foundations of Differential Privacy* (2014), Corollary 3.21 (splitting a
    budget with advanced composition); Kairouz, Oh & Viswanath, "The composition theorem for differential
    privacy" (ICML 2015, arXiv:1311.0776), Theorem 3.3; Balle & Wang, "Improving the Gaussian mechanism for
    differential privacy: analytical calibration and optimal denoising" (ICML 2018, arXiv:1805.06530),
    Theorem 8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from scipy import optimize

from ._validation import check_delta, check_int, check_real
from .composition import advanced_composition, optimal_composition_delta
from .pld import GaussianPLD

__all__ = [
    "advanced_composition_per_step_epsilon",
    "optimal_composition_per_step_epsilon",
    "gaussian_sigma",
]

_LOG_LO, _LOG_HI = math.log(1e-12), math.log(50.0)


def _largest_log_root(excess: Callable[[float], float], lo: float, hi: float) -> float:
    """exp of the root of a non-decreasing ``excess(log x)`` in [lo, hi] (``excess(lo) < 0 <= excess(hi)``)."""
    return math.exp(optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=4.0 * 2.0 ** -52, maxiter=500))


def advanced_composition_per_step_epsilon(epsilon_total: Any, k: Any, delta_prime: Any) -> float:
    r"""Largest per-step :math:`\varepsilon` whose :math:`k`-fold composition Theorem 1.1 certifies at the total.

    Solves :math:`\varepsilon\sqrt{2k\ln(1/\delta')} + k\varepsilon\tanh(\varepsilon/2) = \tilde\varepsilon` for
    :math:`\varepsilon` (the left-hand side increases with :math:`\varepsilon`): then :math:`k` mechanisms
    that are :math:`(\varepsilon, 0)`-DP compose to :math:`(\tilde\varepsilon, \delta')`-DP.  For small
    :math:`\varepsilon` the answer is close to :math:`\tilde\varepsilon / \sqrt{2k\ln(1/\delta')}`.

    Args:
        epsilon_total: the target :math:`\tilde\varepsilon`, a real number in (0, 1000].
        k: the number of steps, an integer >= 1.
        delta_prime: the slack :math:`\delta'` of Theorem 1.1, in (0, 1).

    Returns:
        The per-step epsilon (a float > 0).

    Raises:
        ValueError: if an argument is out of range.

    Source: the lecture's Theorem 1.1 (as corrected in ERRATA item 1); Dwork & Roth 2014, Corollary 3.21.

    >>> eps = advanced_composition_per_step_epsilon(1.0, 100, 1e-6)
    >>> round(eps, 9), round(advanced_composition(eps, 0.0, 100, 1e-6)[0], 12)
    (0.018691668, 1.0)
    """
    epsilon_total = check_real("epsilon_total", epsilon_total, lo=0.0, hi=1000.0, lo_open=True)
    k = check_int("k", k, lo=1)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)

    def excess(log_eps: float) -> float:
        return advanced_composition(math.exp(log_eps), 0.0, k, delta_prime)[0] - epsilon_total

    # the total at epsilon = 50 is at least 50 k tanh(25) > 1000 >= epsilon_total, and tiny at 1e-12 * total
    return _largest_log_root(excess, math.log(1e-12 * epsilon_total / max(1.0, k)), _LOG_HI)


def optimal_composition_per_step_epsilon(epsilon_total: Any, delta_total: Any, k: Any) -> float:
    r"""Largest per-step :math:`\varepsilon` whose :math:`k`-fold composition is optimally at the total.

    The largest :math:`\varepsilon` such that *every* composition of :math:`k` mechanisms that are each
    :math:`(\varepsilon, 0)`-DP is :math:`(\tilde\varepsilon, \tilde\delta)`-DP, i.e. the exact privacy profile
    of :math:`k`-fold randomized response at :math:`\varepsilon` (Kairouz, Oh & Viswanath 2015) satisfies
    :math:`\delta(\tilde\varepsilon) \le \tilde\delta`.  That profile grows with :math:`\varepsilon` (randomized
    response at a smaller :math:`\varepsilon` is a post-processing of the one at a larger), so the boundary is
    found by root search.  It is at least :func:`advanced_composition_per_step_epsilon` ``(epsilon_total, k,
    delta_total)`` and at least :math:`\tilde\varepsilon / k` (basic composition).

    Args:
        epsilon_total: the target :math:`\tilde\varepsilon`, a real number in (0, 1000].
        delta_total: the target :math:`\tilde\delta`, in (0, 1).
        k: the number of steps, an integer >= 1.

    Returns:
        The per-step epsilon (a float > 0).

    Raises:
        ValueError: if an argument is out of range.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Theorem 3.3.

    >>> round(optimal_composition_per_step_epsilon(1.0, 1e-6, 100), 9)   # Theorem 1.1 allows only 0.018692
    0.02401108
    """
    epsilon_total = check_real("epsilon_total", epsilon_total, lo=0.0, hi=1000.0, lo_open=True)
    delta_total = check_delta(delta_total, "delta_total", allow_zero=False)
    k = check_int("k", k, lo=1)
    log_target = math.log(delta_total)

    def excess(log_eps: float) -> float:
        delta = optimal_composition_delta(math.exp(log_eps), 0.0, k, epsilon_total)
        return (math.log(delta) if delta > 0.0 else -math.inf) - log_target

    lo = math.log(epsilon_total / k)           # basic composition: delta(epsilon_total) = 0 there
    if excess(lo) >= 0.0:                      # pragma: no cover - delta(k eps) = 0 exactly at this point
        return epsilon_total / k
    hi = _LOG_HI
    if excess(hi) < 0.0:                       # even epsilon = 50 per step meets the target (k = 1, huge total)
        return math.exp(hi)
    # the profile is exactly 0 up to epsilon_total / k, so brentq needs a finite left value: use -inf -> -1e300
    return _largest_log_root(lambda x: max(excess(x), -1e300), lo, hi)


def gaussian_sigma(epsilon: Any, delta: Any, sensitivity: Any = 1.0) -> float:
    r"""Smallest noise scale :math:`\sigma` making the Gaussian mechanism exactly :math:`(\varepsilon, \delta)`-DP.

    The Gaussian mechanism with :math:`\ell_2`-sensitivity :math:`\Delta` has the privacy profile (Balle & Wang
    2018, Theorem 8)

    .. math::

        \delta(\varepsilon) = \Phi\Bigl(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Bigr)
        - e^{\varepsilon}\,\Phi\Bigl(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Bigr),

    decreasing in :math:`\sigma`; the answer solves :math:`\delta(\varepsilon) = \delta` (evaluated in
    log-space by :class:`dp_course.pld.GaussianPLD`).  Unlike the classical
    :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon` it is valid for every :math:`\varepsilon` and is
    never larger than needed.

    Args:
        epsilon: a real number in [0, 1000].
        delta: a real number in (0, 1).
        sensitivity: the :math:`\ell_2`-sensitivity :math:`\Delta > 0`.

    Returns:
        sigma (a float > 0).

    Raises:
        ValueError: if an argument is out of range.

    Source: Balle & Wang 2018 (arXiv:1805.06530), Theorem 8 and Algorithm 1.

    >>> round(gaussian_sigma(1.0, 1e-5), 6)
    3.730632
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0, hi=1000.0)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)

    def excess(log_sigma: float) -> float:
        # delta(epsilon) of the mechanism with sensitivity 1 and noise e^log_sigma, minus the target (log scale);
        # it decreases in sigma, so the root of -excess is the boundary
        d = GaussianPLD.from_mechanism(math.exp(log_sigma)).delta_for_epsilon(epsilon)
        return math.log(delta) - (math.log(d) if d > 0.0 else -745.0)

    lo, hi = math.log(1e-6), math.log(1e6)
    while excess(lo) > 0.0:                    # pragma: no cover - needs delta close to 1 at huge epsilon
        lo -= 5.0
    while excess(hi) < 0.0:                    # epsilon ~ 0 and a tiny delta need sigma ~ 1/delta
        hi += 5.0
    return sensitivity * _largest_log_root(excess, lo, hi)
