r"""Composition theorems for :math:`(\varepsilon, \delta)`-differential privacy.

Running :math:`k` mechanisms on the same data (possibly adaptively, each chosen after seeing the previous
outputs) costs privacy.  From loosest to exact:

* **basic** composition: :math:`(\sum_i \varepsilon_i, \sum_i \delta_i)` (Dwork & Roth 2014, Theorem 3.16);
* **advanced** (strong) composition, Theorem 1.1 of the lecture (as corrected in ERRATA item 1):
  :math:`\tilde\varepsilon = \varepsilon\sqrt{2k\ln(1/\delta')}
  + k\varepsilon\frac{e^\varepsilon-1}{e^\varepsilon+1}`,
  :math:`\tilde\delta = k\delta + \delta'`; and the original form of Dwork, Rothblum & Vadhan (2010), whose
  second term is :math:`k\varepsilon(e^\varepsilon - 1)`;
* **optimal** composition of :math:`k` mechanisms that are each :math:`(\varepsilon, \delta)`-DP
  (Kairouz, Oh & Viswanath 2015, arXiv:1311.0776, Theorem 3.3): every such mechanism is a post-processing of
  *leaky randomized response* (the simulation lemma, Lemma 3.1 of the lecture), so the worst case is the
  :math:`k`-fold composition of leaky randomized response, whose privacy loss distribution (PLD) is

  .. math:: L = \begin{cases} +\infty & \text{w.p. } \delta \\
                +\varepsilon & \text{w.p. } (1-\delta)\,e^\varepsilon/(1+e^\varepsilon) \\
                -\varepsilon & \text{w.p. } (1-\delta)/(1+e^\varepsilon) \end{cases}

  composed :math:`k` times.  Its hockey-stick curve :math:`\delta(\tilde\varepsilon)` is the exact answer
  for every real :math:`\tilde\varepsilon` (not only the grid points :math:`(k-2i)\varepsilon` of the
  theorem's statement); it is evaluated through :class:`dp_course.pld.DiscretePLD`, whose two-point
  self-composition is the binomial law in log-space (O(k) work);
* **heterogeneous** composition (different :math:`(\varepsilon_i, \delta_i)`): the composition of the
  individual leaky randomized response PLDs - exact (finite support, up to :math:`2^k` atoms) or on a
  pessimistic grid; and, for small pure-DP cases, the exact formula of Murtagh & Vadhan (2016,
  arXiv:1507.03113, Theorem 1.5) by enumeration of all :math:`2^k` sign patterns, as an independent check.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from ._numerics import logdiffexp
from ._validation import check_delta, check_int, check_real, check_real_array
from .pld import DiscretePLD, GridPLD, PrivacyLossDistribution

__all__ = [
    "basic_composition",
    "advanced_composition",
    "advanced_composition_drv",
    "leaky_randomized_response_pld",
    "optimal_composition_pld",
    "optimal_composition_delta",
    "optimal_composition_epsilon",
    "heterogeneous_composition_pld",
    "heterogeneous_composition_delta",
    "heterogeneous_composition_epsilon",
    "murtagh_vadhan_delta",
    "murtagh_vadhan_exact",
]

_FLOAT_MAX = sys.float_info.max

MAX_ENUMERATION = 22
"""Largest number of mechanisms :func:`murtagh_vadhan_exact` enumerates (2^22 sign patterns)."""


def _check_eps_delta_lists(epsilons: Any, deltas: Any) -> tuple[np.ndarray, np.ndarray]:
    eps = check_real_array("epsilons", epsilons, lo=0.0, ndim=1)
    if deltas is None:
        dl = np.zeros_like(eps)
    else:
        dl = check_real_array("deltas", deltas, lo=0.0, hi=1.0, hi_open=True, ndim=1)
        if dl.shape != eps.shape:
            raise ValueError(f"epsilons and deltas must have the same length (one pair per mechanism), got "
                             f"{eps.size} and {dl.size}")
    return eps, dl


# ----------------------------------------------------------------------------------------------------------
# basic and advanced composition
# ----------------------------------------------------------------------------------------------------------

def basic_composition(epsilons: npt.ArrayLike, deltas: npt.ArrayLike | None = None) -> tuple[float, float]:
    r"""Basic composition: :math:`(\sum_i \varepsilon_i, \sum_i \delta_i)`.

    Args:
        epsilons: 1-D array of the mechanisms' epsilons (>= 0).
        deltas: 1-D array of their deltas (in [0, 1)), or ``None`` for pure DP.

    Returns:
        ``(epsilon, delta)`` as floats; delta is capped at 1 (a delta of 1 says nothing).

    Raises:
        ValueError: for empty, negative, non-finite or mismatched inputs.

    Source: Dwork & Roth 2014, *The Algorithmic Foundations of Differential Privacy*, Theorem 3.16.

    >>> basic_composition([0.5, 0.25], [1e-6, 0.0])
    (0.75, 1e-06)
    """
    eps, dl = _check_eps_delta_lists(epsilons, deltas)
    return float(eps.sum()), float(min(1.0, dl.sum()))


def _check_advanced(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float, int, float]:
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    k = check_int("k", k, lo=1)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    return epsilon, delta, k, delta_prime


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    r"""Advanced (strong) composition, Theorem 1.1 of the lecture.

    .. math:: \tilde\varepsilon = \varepsilon\sqrt{2k\ln(1/\delta')}
              + k\varepsilon\,\frac{e^\varepsilon - 1}{e^\varepsilon + 1},
              \qquad \tilde\delta = k\delta + \delta'.

    The factor :math:`(e^\varepsilon-1)/(e^\varepsilon+1)` is computed as :math:`\tanh(\varepsilon/2)`, which is
    the same number and never overflows.  (One version of the lecture prints :math:`\varepsilon^\varepsilon`
    for :math:`e^\varepsilon`: ERRATA item 1.)

    Args:
        epsilon: per-mechanism epsilon >= 0.
        delta: per-mechanism delta in [0, 1).
        k: number of mechanisms, integer >= 1.
        delta_prime: the slack :math:`\delta'` in (0, 1).

    Returns:
        ``(epsilon_total, delta_total)``; delta_total capped at 1.

    Raises:
        ValueError: if an argument is out of range.

    Source: Dwork, Rothblum & Vadhan 2010 (FOCS), with the expectation term of Kairouz, Oh & Viswanath 2015
    (arXiv:1311.0776); Dwork & Roth 2014, Theorem 3.20; the lecture's Theorem 1.1 and Claim 3.4.

    >>> round(advanced_composition(0.01, 0.0, 100, 1e-6)[0], 12)
    0.530652135309
    """
    epsilon, delta, k, delta_prime = _check_advanced(epsilon, delta, k, delta_prime)
    eps_total = epsilon * math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) + k * epsilon * math.tanh(epsilon / 2.0)
    return eps_total, min(1.0, k * delta + delta_prime)


def advanced_composition_drv(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    r"""The original advanced composition bound of Dwork, Rothblum & Vadhan (2010), for comparison.

    .. math:: \tilde\varepsilon = \varepsilon\sqrt{2k\ln(1/\delta')} + k\varepsilon(e^\varepsilon - 1),
              \qquad \tilde\delta = k\delta + \delta'.

    Its second term is larger than Theorem 1.1's :math:`k\varepsilon\tanh(\varepsilon/2)` by a factor
    :math:`e^\varepsilon + 1 > 2`.  :math:`e^\varepsilon - 1` is computed with ``expm1``.

    Raises:
        ValueError: if an argument is out of range.

    Source: Dwork, Rothblum & Vadhan 2010, "Boosting and Differential Privacy", FOCS, Theorem III.3;
    Dwork & Roth 2014, Theorem 3.20.
    """
    epsilon, delta, k, delta_prime = _check_advanced(epsilon, delta, k, delta_prime)
    with np.errstate(over="ignore"):
        second = k * epsilon * float(np.expm1(epsilon))
    eps_total = epsilon * math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) + second
    return eps_total, min(1.0, k * delta + delta_prime)


# ----------------------------------------------------------------------------------------------------------
# optimal composition (Kairouz-Oh-Viswanath) through PLDs
# ----------------------------------------------------------------------------------------------------------

def _leaky_rr_pld(epsilon: float, delta: float) -> DiscretePLD:
    # e^eps/(1+e^eps) = 1/(1+e^-eps) and 1/(1+e^eps) = e^-eps/(1+e^-eps): finite for every eps >= 0
    p_plus = (1.0 - delta) / (1.0 + math.exp(-epsilon))
    p_minus = (1.0 - delta) * math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return DiscretePLD([epsilon, -epsilon], [p_plus, p_minus], infinity_mass=delta)


def leaky_randomized_response_pld(epsilon: float, delta: float = 0.0) -> DiscretePLD:
    r"""PLD of leaky randomized response, the worst :math:`(\varepsilon, \delta)`-DP mechanism.

    For the ordered pair :math:`(U, V)` of the lecture's simulation lemma: loss :math:`+\infty` w.p.
    :math:`\delta` ("I am U"), :math:`+\varepsilon` w.p. :math:`(1-\delta)e^\varepsilon/(1+e^\varepsilon)` and
    :math:`-\varepsilon` w.p. :math:`(1-\delta)/(1+e^\varepsilon)`.  ("I am V" has no mass under U.)

    Args:
        epsilon: epsilon >= 0.
        delta: delta in [0, 1).

    Returns:
        :class:`dp_course.pld.DiscretePLD`.

    Raises:
        ValueError: if an argument is out of range.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Section 3; Murtagh & Vadhan 2016
    (arXiv:1507.03113), Lemma 3.2; the lecture's Lemma 3.1.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    return _leaky_rr_pld(epsilon, delta)


def optimal_composition_pld(epsilon: float, delta: float, k: int) -> DiscretePLD:
    r"""Exact PLD of the :math:`k`-fold composition of leaky randomized response (the KOV worst case).

    :math:`L = \varepsilon(k - 2i)` with :math:`i \sim \mathrm{Binomial}(k, 1/(1+e^\varepsilon))` given no
    leak, and :math:`+\infty` with probability :math:`1-(1-\delta)^k`; built by
    :meth:`dp_course.pld.DiscretePLD.self_compose` (binomial law in log-space, O(k)).

    Raises:
        ValueError: if an argument is out of range.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Theorem 3.3.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    k = check_int("k", k, lo=1)
    if not math.isfinite(k * epsilon):
        # the composed losses run from -k epsilon to k epsilon: they must be floats
        raise ValueError(f"epsilon must be at most {_FLOAT_MAX / k:g} for k = {k} (the composed privacy loss "
                         f"k * epsilon must be a finite float), got epsilon = {epsilon:g}")
    return _leaky_rr_pld(epsilon, delta).self_compose(k)


def optimal_composition_delta(epsilon: float, delta: float, k: int,
                              epsilon_total: npt.ArrayLike) -> float | np.ndarray:
    r"""Tight delta of the composition of k mechanisms that are each (epsilon, delta)-DP, at a total epsilon.

    The smallest :math:`\tilde\delta` such that any :math:`k` adaptively composed
    :math:`(\varepsilon, \delta)`-DP mechanisms are :math:`(\tilde\varepsilon, \tilde\delta)`-DP.

    Exact for every real :math:`\tilde\varepsilon \ge 0`:

    .. math:: \tilde\delta(\tilde\varepsilon) = 1 - (1-\delta)^k + (1-\delta)^k \sum_{i=0}^{k}
              \binom{k}{i} \frac{e^{(k-i)\varepsilon}}{(1+e^\varepsilon)^k}
              \big(1 - e^{\tilde\varepsilon - (k-2i)\varepsilon}\big)_+ ,

    the hockey-stick divergence of the :math:`k`-fold leaky randomized response (at the grid points
    :math:`\tilde\varepsilon = (k-2\ell)\varepsilon` this is Kairouz, Oh & Viswanath 2015, Theorem 3.3).
    Computed in log-space on :func:`optimal_composition_pld`.

    Args:
        epsilon: per-mechanism epsilon >= 0.
        delta: per-mechanism delta in [0, 1).
        k: number of mechanisms, integer >= 1.
        epsilon_total: :math:`\tilde\varepsilon` >= 0, scalar or array (``inf`` gives
            :math:`1 - (1-\delta)^k`).

    Returns:
        float for scalar ``epsilon_total``, else an ndarray of the same shape.

    Raises:
        ValueError: if an argument is out of range.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Theorem 3.3.
    """
    pld = optimal_composition_pld(epsilon, delta, k)
    check_real_array("epsilon_total", epsilon_total, lo=0.0, allow_inf=True)
    return pld.delta_for_epsilon(epsilon_total)


def optimal_composition_epsilon(epsilon: float, delta: float, k: int,
                                delta_total: npt.ArrayLike) -> float | np.ndarray:
    r"""Tight epsilon of the composition of k mechanisms that are each (epsilon, delta)-DP, at a total delta.

    The smallest :math:`\tilde\varepsilon` such that any :math:`k` adaptively composed
    :math:`(\varepsilon, \delta)`-DP mechanisms are :math:`(\tilde\varepsilon, \tilde\delta)`-DP.

    The exact inverse of :func:`optimal_composition_delta`, a continuous value (not a point of the grid
    :math:`(k-2i)\varepsilon`): between consecutive atoms the curve is
    :math:`\tilde\delta = A - e^{\tilde\varepsilon}B`, solved in closed form by
    :meth:`dp_course.pld.DiscretePLD.epsilon_for_delta`.  Returns ``inf`` when
    :math:`\tilde\delta < 1 - (1-\delta)^k` (the probability that some mechanism leaks: no finite
    :math:`\tilde\varepsilon` works).

    Args:
        epsilon: per-mechanism epsilon >= 0.
        delta: per-mechanism delta in [0, 1).
        k: number of mechanisms, integer >= 1.
        delta_total: :math:`\tilde\delta` in [0, 1), scalar or array.

    Returns:
        float for scalar ``delta_total``, else an ndarray of the same shape.

    Raises:
        ValueError: if an argument is out of range.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Theorem 3.3.

    >>> round(optimal_composition_epsilon(0.01, 0.0, 100, 1e-6), 12)
    0.392263943093
    """
    pld = optimal_composition_pld(epsilon, delta, k)
    check_real_array("delta_total", delta_total, lo=0.0, hi=1.0, hi_open=True)
    return pld.epsilon_for_delta(delta_total)


# ----------------------------------------------------------------------------------------------------------
# heterogeneous composition
# ----------------------------------------------------------------------------------------------------------

def heterogeneous_composition_pld(epsilons: npt.ArrayLike, deltas: npt.ArrayLike | None = None,
                                  value_step: float | None = None) -> PrivacyLossDistribution:
    r"""PLD of the worst-case composition of mechanisms that are :math:`(\varepsilon_i, \delta_i)`-DP.

    The composition of the leaky randomized response PLDs of the individual guarantees (the simulation
    lemma applies to each mechanism, so this pair dominates every adaptive composition; Murtagh & Vadhan
    2016, arXiv:1507.03113, Theorem 1.5).  Equal :math:`(\varepsilon_i, \delta_i)` are grouped and
    self-composed in O(k).

    * ``value_step=None``: exact (:class:`dp_course.pld.DiscretePLD`); the support can grow like
      :math:`2^{\#\text{distinct}}`, and the PLD module refuses beyond 2e7 atoms.
    * ``value_step=h``: each PLD is put on the grid :math:`h\mathbb{Z}` pessimistically
      (:class:`dp_course.pld.GridPLD`) and composed by FFT - an upper bound on every
      :math:`\tilde\delta(\tilde\varepsilon)`, tight as :math:`h \to 0`.

    Args:
        epsilons: 1-D array of epsilons >= 0.
        deltas: 1-D array of deltas in [0, 1) (``None``: all 0).
        value_step: grid step > 0, or ``None`` for the exact computation.

    Returns:
        the composed :class:`dp_course.pld.PrivacyLossDistribution`.

    Raises:
        ValueError: for bad inputs, or when the exact support would be too large (use ``value_step``).
    """
    eps, dl = _check_eps_delta_lists(epsilons, deltas)
    if value_step is not None:
        value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
    pairs, counts = np.unique(np.stack([eps, dl], axis=1), axis=0, return_counts=True)
    result: PrivacyLossDistribution | None = None
    for (e, d), c in zip(pairs, counts, strict=True):
        part: PrivacyLossDistribution = _leaky_rr_pld(float(e), float(d))
        if value_step is not None:
            part = GridPLD.from_pld(part, value_step=value_step, pessimistic=True)
        part = part.self_compose(int(c))
        result = part if result is None else result.compose(part)
    assert result is not None  # epsilons is not empty
    return result


def heterogeneous_composition_delta(epsilons: npt.ArrayLike, deltas: npt.ArrayLike | None,
                                    epsilon_total: npt.ArrayLike,
                                    value_step: float | None = None) -> float | np.ndarray:
    r"""Tight :math:`\tilde\delta(\tilde\varepsilon)` of a heterogeneous composition (see
    :func:`heterogeneous_composition_pld`; exact when ``value_step`` is ``None``, an upper bound otherwise).

    Raises:
        ValueError: if an argument is out of range.

    Source: Murtagh & Vadhan 2016 (arXiv:1507.03113), Theorem 1.5.
    """
    pld = heterogeneous_composition_pld(epsilons, deltas, value_step)
    check_real_array("epsilon_total", epsilon_total, lo=0.0, allow_inf=True)
    return pld.delta_for_epsilon(epsilon_total)


def heterogeneous_composition_epsilon(epsilons: npt.ArrayLike, deltas: npt.ArrayLike | None,
                                      delta_total: npt.ArrayLike,
                                      value_step: float | None = None) -> float | np.ndarray:
    r"""Smallest :math:`\tilde\varepsilon` of a heterogeneous composition at :math:`\tilde\delta` (see
    :func:`heterogeneous_composition_pld`; exact when ``value_step`` is ``None``, an upper bound otherwise).

    Raises:
        ValueError: if an argument is out of range.

    Source: Murtagh & Vadhan 2016 (arXiv:1507.03113), Theorem 1.5.
    """
    pld = heterogeneous_composition_pld(epsilons, deltas, value_step)
    check_real_array("delta_total", delta_total, lo=0.0, hi=1.0, hi_open=True)
    return pld.epsilon_for_delta(delta_total)


# ----------------------------------------------------------------------------------------------------------
# Murtagh-Vadhan: exact formula by enumeration
# ----------------------------------------------------------------------------------------------------------

def _mv_patterns(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """For every subset S of [k]: a_S = sum_{i in S} eps_i, b_S = sum_{i not in S} eps_i, and ln Z with
    Z = prod_i (1 + e^{eps_i})."""
    a = np.zeros(1)
    for e in eps:
        a = np.concatenate([a + e, a])
    b = eps.sum() - a
    log_z = float(np.sum(np.logaddexp(0.0, eps)))
    return a, b, log_z


def _check_mv(epsilons: npt.ArrayLike, deltas: npt.ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    eps, dl = _check_eps_delta_lists(epsilons, deltas)
    if eps.size > MAX_ENUMERATION:
        raise ValueError(f"epsilons must have at most {MAX_ENUMERATION} entries for the enumeration over all 2^k "
                         f"sign patterns, got {eps.size}; use heterogeneous_composition_epsilon instead")
    return eps, dl


def murtagh_vadhan_delta(epsilons: npt.ArrayLike, epsilon_total: float, deltas: npt.ArrayLike | None = None) -> float:
    r"""Exact optimal delta of a heterogeneous composition at a total epsilon, by enumeration.

    Murtagh & Vadhan (2016, arXiv:1507.03113, Theorem 1.5): the composition of mechanisms that are
    :math:`(\varepsilon_i, \delta_i)`-DP is :math:`(\tilde\varepsilon, \tilde\delta)`-DP exactly when

    .. math:: \frac{1}{\prod_i(1+e^{\varepsilon_i})}\sum_{S\subseteq[k]}
              \max\Big(e^{\sum_{i\in S}\varepsilon_i}
              - e^{\tilde\varepsilon}e^{\sum_{i\notin S}\varepsilon_i},\,0\Big)
              \le 1 - \frac{1-\tilde\delta}{\prod_i(1-\delta_i)},

    so the least :math:`\tilde\delta` is :math:`1 - \prod_i(1-\delta_i)\,(1 - \text{left-hand side})`.  All
    :math:`2^k` subsets are enumerated (:math:`k \le` :data:`MAX_ENUMERATION`); the work is
    :math:`O(2^k)`, as the problem is #P-complete in general (same paper).

    Args:
        epsilons: 1-D array of epsilons >= 0.
        epsilon_total: :math:`\tilde\varepsilon` >= 0.
        deltas: 1-D array of deltas in [0, 1) (``None``: pure DP).

    Returns:
        float: delta in [0, 1].

    Raises:
        ValueError: if an argument is out of range or there are too many mechanisms.
    """
    eps, dl = _check_mv(epsilons, deltas)
    epsilon_total = check_real("epsilon_total", epsilon_total, lo=0.0)
    a, b, log_z = _mv_patterns(eps)
    active = a - b > epsilon_total
    # sum over active S of e^{a_S} (1 - e^{eps_total + b_S - a_S}), each term in log-space
    with np.errstate(divide="ignore"):
        log_terms = a[active] - log_z + np.log(-np.expm1(epsilon_total + b[active] - a[active]))
    pure = float(np.exp(np.logaddexp.reduce(log_terms))) if log_terms.size else 0.0
    keep = float(np.prod(1.0 - dl))
    return float(min(1.0, max(0.0, 1.0 - keep * (1.0 - pure))))


def murtagh_vadhan_exact(epsilons: npt.ArrayLike, delta_total: float, deltas: npt.ArrayLike | None = None) -> float:
    r"""Exact optimal epsilon of a heterogeneous composition at a total delta, by enumeration.

    The inverse of :func:`murtagh_vadhan_delta` (Murtagh & Vadhan 2016, arXiv:1507.03113, Theorem 1.5).
    With the privacy losses :math:`L_S = \sum_{i\in S}\varepsilon_i - \sum_{i\notin S}\varepsilon_i` of the
    :math:`2^k` sign patterns sorted in decreasing order, the left-hand side of the theorem equals
    :math:`(\sum_{L_S > \tilde\varepsilon} e^{a_S}
    - e^{\tilde\varepsilon}\sum_{L_S > \tilde\varepsilon} e^{b_S})/Z`
    on each interval between consecutive losses, which is solved for :math:`\tilde\varepsilon` in closed
    form.  Returns ``inf`` if :math:`\tilde\delta < 1 - \prod_i(1-\delta_i)` and 0 if
    :math:`\tilde\varepsilon = 0` already suffices.

    Args:
        epsilons: 1-D array of epsilons >= 0 (at most :data:`MAX_ENUMERATION`).
        delta_total: :math:`\tilde\delta` in [0, 1).
        deltas: 1-D array of deltas in [0, 1) (``None``: pure DP).

    Returns:
        float: epsilon >= 0 (or ``inf``).

    Raises:
        ValueError: if an argument is out of range or there are too many mechanisms.
    """
    eps, dl = _check_mv(epsilons, deltas)
    delta_total = check_delta(delta_total, "delta_total")
    keep = float(np.prod(1.0 - dl))
    # the pure part must satisfy pure(eps_total) <= t
    t = 1.0 - (1.0 - delta_total) / keep
    if t < 0.0:
        return math.inf
    if murtagh_vadhan_delta(eps, 0.0, dl) <= delta_total:
        return 0.0
    a, b, log_z = _mv_patterns(eps)
    losses = a - b
    order = np.argsort(-losses, kind="stable")
    losses, a, b = losses[order], a[order], b[order]
    log_ca = np.logaddexp.accumulate(a)  # ln of sum of e^{a_S} over the first j + 1 patterns
    log_cb = np.logaddexp.accumulate(b)
    # On the interval losses[j+1] <= eps < losses[j] exactly the first j + 1 patterns are active and
    # pure(eps) = (C_a - e^eps C_b) / Z, so pure(eps) = t at eps = ln(C_a - t Z) - ln C_b.  Only the last
    # index of a run of equal losses starts an interval.
    ends = np.append(losses[1:] != losses[:-1], True)
    lo = np.maximum(np.append(losses[1:], 0.0), 0.0)
    hi = losses
    log_tz = math.log(t) + log_z if t > 0.0 else -math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = logdiffexp(log_ca, np.full_like(log_ca, log_tz)) - log_cb
    tol = 1e-12 * np.maximum(1.0, np.abs(hi))
    valid = ends & (hi > 0.0) & np.isfinite(cand) & (cand >= lo - tol) & (cand <= hi + tol)
    hits = np.flatnonzero(valid)
    if hits.size:
        j = int(hits[0])
        return float(min(max(cand[j], lo[j]), hi[j]))
    return 0.0  # pragma: no cover - not reached: delta(0) > delta_total was checked above
