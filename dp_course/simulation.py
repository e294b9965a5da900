r"""The simulation lemma: every :math:`(\epsilon,\delta)`-indistinguishable pair is post-processed leaky RR.

**Simulation lemma** (lecture notes on advanced composition, Lemma 3.1; Kairouz, Oh & Viswanath 2015,
arXiv:1311.0776, Section 2; Murtagh & Vadhan 2016, arXiv:1507.03113).  For every pair :math:`P, Q` with
:math:`P \approx_{\epsilon,\delta} Q` there is a randomized map :math:`F` with :math:`F(U) \sim P` and
:math:`F(V) \sim Q`, where :math:`(U, V)` is leaky randomized response (:mod:`dp_course.leaky`).  For pmfs on
``n`` outcomes, :math:`F` is a ``4 x n`` row-stochastic matrix (row ``r`` is the law of :math:`F` given the
leaky outcome ``LEAKY_OUTCOMES[r]``), and the lemma says

.. math::

    P_U F = P, \qquad P_V F = Q .

:func:`simulation_map` returns such a matrix (built by :mod:`dp_course._simulation_maps`: an explicit
construction, or a linear program), :func:`simulation_map_error` measures how well any candidate matrix does,
and :func:`apply_simulation_map` pushes samples of :math:`U` or :math:`V` through a map, so that a notebook can
check the statement by sampling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._numerics import inverse_cdf_sample
from ._simulation_maps import explicit_map, linprog_map, map_error
from ._validation import check_delta, check_pmf_pair, check_real, check_real_array, check_rng
from .divergences import hockey_stick_divergence
from .leaky import LEAKY_OUTCOMES, leaky_outcome_indices

__all__ = [
    "SIMULATION_ATOL",
    "INDISTINGUISHABILITY_ATOL",
    "LINPROG_EPSILON_RANGE",
    "simulation_map",
    "simulation_map_error",
    "apply_simulation_map",
]

SIMULATION_ATOL = 1e-9
"""Accuracy to which :func:`simulation_map` guarantees ``P_U F = P`` and ``P_V F = Q`` (max abs error)."""

INDISTINGUISHABILITY_ATOL = 1e-12
"""Rounding slack allowed when checking that the input pair is (epsilon, delta)-indistinguishable."""

LINPROG_EPSILON_RANGE = 20.0
"""Largest epsilon for which ``method="linprog"`` is tested (it still verifies its answer beyond that)."""

_METHODS = ("explicit", "linprog")


def _check_f(f: Any) -> np.ndarray:
    f = check_real_array("F", f, ndim=2)
    if f.shape[0] != len(LEAKY_OUTCOMES):
        raise ValueError(f"F must have {len(LEAKY_OUTCOMES)} rows, one per outcome in LEAKY_OUTCOMES "
                         f"{LEAKY_OUTCOMES}, got shape {f.shape}")
    return f


def simulation_map_error(F: Any, p: Any, q: Any, epsilon: Any, delta: Any) -> float:
    r"""How far a candidate matrix is from being a simulation map for ``(p, q)``.

    Returns the largest of :math:`\max_j |(P_U F)_j - P_j|`, :math:`\max_j |(P_V F)_j - Q_j|`, the largest
    deviation of a row sum from 1 and the most negative entry of ``F`` (as a positive number).  A valid map
    has error 0 up to rounding; :func:`simulation_map` guarantees at most :data:`SIMULATION_ATOL`.

    Args:
        F: a ``4 x n`` array (rows indexed by :data:`LEAKY_OUTCOMES`).
        p, q: pmfs over the ``n`` outcomes.
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).

    Returns:
        A float >= 0.

    Raises:
        ValueError: for invalid inputs, including an ``F`` whose column count differs from ``len(p)``.
    """
    f = _check_f(F)
    p, q = check_pmf_pair("p", p, "q", q)
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    if f.shape[1] != p.size:
        raise ValueError(f"F must have one column per outcome of p and q ({p.size}), got shape {f.shape}")
    return map_error(f, p, q, eps, delta)


def simulation_map(p: Any, q: Any, epsilon: Any, delta: Any, *, method: str = "explicit") -> np.ndarray:
    r"""A randomized map :math:`F` with :math:`F(U) \sim P` and :math:`F(V) \sim Q` (simulation lemma).

    Returns a ``4 x n`` row-stochastic matrix, rows indexed by :data:`LEAKY_OUTCOMES` and columns by the
    outcomes of ``p`` and ``q``, such that

    .. math::

        P_U F = P, \qquad P_V F = Q \qquad (\text{max abs error} \le 10^{-9}),

    where :math:`(P_U, P_V)` = :func:`dp_course.leaky.leaky_randomized_response` ``(epsilon, delta)``.
    Written out per outcome :math:`z` (the corrected equations (7)-(8) of the lecture, ERRATA item 4):

    .. math::

        P(z) = (1-\delta)\Bigl[\tfrac{e^\epsilon}{e^\epsilon+1} F(z|0) + \tfrac{1}{e^\epsilon+1} F(z|1)\Bigr]
               + \delta\, F(z|\text{I am U}),

        Q(z) = (1-\delta)\Bigl[\tfrac{1}{e^\epsilon+1} F(z|0) + \tfrac{e^\epsilon}{e^\epsilon+1} F(z|1)\Bigr]
               + \delta\, F(z|\text{I am V}).

    Such a map exists exactly when ``p`` and ``q`` are :math:`(\epsilon, \delta)`-indistinguishable.  With
    :math:`\delta = 0` it is the closed form :math:`F(\cdot|0) = (e^\epsilon P - Q)/(e^\epsilon - 1)`,
    :math:`F(\cdot|1) = (e^\epsilon Q - P)/(e^\epsilon - 1)` (ERRATA item 3; the leak rows then have weight 0
    and are set to ``p`` and ``q``); with :math:`\epsilon = \delta = 0` it requires ``p == q``.

    Methods:
        * ``"explicit"`` (default): the constructive proof in the docstring of
          :mod:`dp_course._simulation_maps` (a core pair whose heavier side is lowered evenly, then the map
          from the core pair); exact up to rounding for every finite epsilon (tested from subnormal values to
          1e6, errors ~1e-16) and every delta in [0, 1).
        * ``"linprog"``: the linear feasibility problem over the :math:`4n` entries of ``F`` solved with
          ``scipy.optimize.linprog(method="highs")``, with row scaling, tight tolerances and a polishing
          step.  Guaranteed (tested) for epsilon up to :data:`LINPROG_EPSILON_RANGE` (= 20); beyond that
          the smallest coefficients, about e^-epsilon, fall below HiGHS's matrix tolerance (1e-9) and the
          answer may miss the check (it then raises instead of returning).

    Either way the result is verified before it is returned; a map that misses :data:`SIMULATION_ATOL` is
    never returned silently (``RuntimeError``).  ``p`` and ``q`` are renormalised to sum to 1 first (the
    validation accepts a slack of 1e-9), and the pair is accepted if its privacy profile at ``epsilon`` is
    at most ``delta + 1e-12``.

    Args:
        p, q: pmfs over the same ``n`` outcomes.
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).
        method: ``"explicit"`` or ``"linprog"``.

    Returns:
        A float array of shape ``(4, n)`` with nonnegative entries and rows summing to 1.

    Raises:
        ValueError: for invalid inputs, or when ``p`` and ``q`` are not :math:`(\epsilon,\delta)`-
            indistinguishable (the message gives the hockey-stick divergence that exceeds ``delta``).
        RuntimeError: if the computed map cannot be verified to :data:`SIMULATION_ATOL` (not expected for
            ``"explicit"``).

    References:
        Lecture notes on advanced composition, Lemma 3.1 and Section 3.3 (with ERRATA items 3-4);
        Kairouz, Oh & Viswanath, "The composition theorem for differential privacy" (ICML 2015,
        arXiv:1311.0776), Section 2; Murtagh & Vadhan, "The complexity of computing the optimal
        composition of differential privacy" (TCC 2016, arXiv:1507.03113).

    >>> F = simulation_map([0.75, 0.25], [0.25, 0.75], np.log(3), 0.0)   # randomized response itself
    >>> F[:2].round(12).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    p, q = check_pmf_pair("p", p, "q", q)
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    p, q = p / p.sum(), q / q.sum()
    h_pq, h_qp = float(hockey_stick_divergence(p, q, eps)), float(hockey_stick_divergence(q, p, eps))
    worst = max(h_pq, h_qp)
    if worst > delta + INDISTINGUISHABILITY_ATOL:
        which = "H(p||q)" if h_pq >= h_qp else "H(q||p)"
        raise ValueError(
            f"p and q are not ({eps:g}, {delta:g})-indistinguishable: the hockey-stick divergence "
            f"{which} at epsilon = {eps:g} is {worst:.6g} > delta = {delta:g}; no simulation map exists. "
            f"Use delta >= {worst:.6g} (the privacy profile at this epsilon) or a larger epsilon.")
    # Within the rounding slack the pair may exceed delta by <= 1e-12: build for the effective delta d (the
    # products then differ from the ones for delta by at most 2 |d - delta|).
    d = max(delta, worst)
    if method == "explicit":
        f = explicit_map(p, q, eps, d)
    else:
        f = linprog_map(p, q, eps, d)
        if map_error(f, p, q, eps, delta) > SIMULATION_ATOL:
            f = linprog_map(p, q, eps, d, presolve=False)      # re-solve without presolve
    err = map_error(f, p, q, eps, delta)
    if not err <= SIMULATION_ATOL:
        raise RuntimeError(f"the simulation map found with method={method!r} misses the target by {err:.3g} "
                           f"> {SIMULATION_ATOL:g} (epsilon = {eps:g}, delta = {delta:g}); "
                           + ("try method='explicit'" if method == "linprog" else "please report this"))
    return f


def apply_simulation_map(F: Any, z: Any, rng: Any) -> np.ndarray:
    r"""Push samples of leaky randomized response through the randomized map ``F``.

    For each entry of ``z`` (a sample of :math:`U` or :math:`V`), draw an outcome index ``j`` with
    probability ``F[z, j]``.  If ``z ~ U`` i.i.d. and ``F = simulation_map(p, q, ...)``, the result is an
    i.i.d. sample of ``p`` (of ``q`` when ``z ~ V``): the simulation lemma, checked empirically.

    Args:
        F: a ``4 x n`` row-stochastic matrix (nonnegative, rows summing to 1 within 1e-9).
        z: samples as indices 0-3 into :data:`LEAKY_OUTCOMES` (ints, e.g. from
            :func:`dp_course.leaky.sample_leaky_randomized_response`) or as the labels themselves
            (``0, 1, "I am U", "I am V"``); any shape.
        rng: a ``numpy.random.Generator``.

    Returns:
        An int array of the shape of ``z`` with outcome indices in ``0..n-1``.

    Raises:
        ValueError: for a malformed ``F``, unknown outcomes in ``z`` or a bad ``rng``.
    """
    f = _check_f(F)
    if np.any(f < 0):
        raise ValueError(f"F must have nonnegative entries, got a minimum of {f.min()!r}")
    sums = f.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > 1e-9):
        raise ValueError(f"each row of F must sum to 1 (within 1e-9), got row sums {sums.tolist()}")
    idx = leaky_outcome_indices(z)
    rng = check_rng(rng)
    u = rng.random(idx.shape)
    out = np.empty(idx.shape, dtype=int)
    for r in range(4):
        mask = idx == r
        if mask.any():
            out[mask] = inverse_cdf_sample(f[r], u[mask])
    return out

