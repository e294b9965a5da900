r"""The simulation lemma: every :math:`(\epsilon,\delta)`-indistinguishable pair is post-processed leaky RR.

*Leaky randomized response* is the pair of random variables :math:`U, V` on the four outcomes
``LEAKY_OUTCOMES = (0, 1, "I am U", "I am V")``:

==========  ==============================================  ==============================================
outcome     :math:`P_U`                                     :math:`P_V`
==========  ==============================================  ==============================================
0           :math:`(1-\delta) e^\epsilon / (e^\epsilon + 1)`  :math:`(1-\delta) / (e^\epsilon + 1)`
1           :math:`(1-\delta) / (e^\epsilon + 1)`             :math:`(1-\delta) e^\epsilon / (e^\epsilon + 1)`
"I am U"    :math:`\delta`                                  0
"I am V"    0                                               :math:`\delta`
==========  ==============================================  ==============================================

**Simulation lemma** (lecture notes on advanced composition, Lemma 3.1; Kairouz, Oh & Viswanath 2015,
arXiv:1311.0776, Section 2; Murtagh & Vadhan 2016, arXiv:1507.03113).  For every pair :math:`P, Q` with
:math:`P \approx_{\epsilon,\delta} Q` there is a randomized map :math:`F` with :math:`F(U) \sim P` and
:math:`F(V) \sim Q`.  For pmfs on ``n`` outcomes, :math:`F` is a ``4 x n`` row-stochastic matrix (row ``r``
is the law of :math:`F` given the leaky outcome ``LEAKY_OUTCOMES[r]``), and the lemma says

.. math::

    P_U F = P, \qquad P_V F = Q .

:func:`simulation_map` returns such a matrix, :func:`simulation_map_error` measures how well any candidate
matrix does, and :func:`sample_leaky_randomized_response` / :func:`apply_simulation_map` let a notebook
check the statement by sampling.

How the map is built (``method="explicit"``, the default).  Write :math:`c = 1 - \delta`,
:math:`a = e^\epsilon/(e^\epsilon+1)`, :math:`b = 1/(e^\epsilon+1)`.  The two leak rows only enter one
equation each, so :math:`P_U F = P` and :math:`P_V F = Q` hold as soon as

.. math::

    x := c\,(a F_0 + b F_1) \le P, \qquad y := c\,(b F_0 + a F_1) \le Q,
    \qquad F_U = (P - x)/\delta, \quad F_V = (Q - y)/\delta .

Conversely :math:`F_0, F_1` are recovered from any "core" pair :math:`(x, y)` with
:math:`e^{-\epsilon} y \le x \le e^{\epsilon} y` and :math:`\sum x = \sum y = c` by

.. math::

    F_0 = \frac{x + (x - y)/(e^\epsilon - 1)}{c}, \qquad F_1 = \frac{y - (x - y)/(e^\epsilon - 1)}{c}

(the :math:`\delta = 0` case, :math:`x = P, y = Q`, is the closed form of ERRATA item 3).  So the task is a
core pair under :math:`(P, Q)`.  Let :math:`P' = \min(P, e^\epsilon Q)` and :math:`Q' = \min(Q, e^\epsilon P)`
(masses :math:`1-\delta_x` and :math:`1-\delta_y`, where :math:`\delta_x = H_{e^\epsilon}(P\|Q)`,
:math:`\delta_y = H_{e^\epsilon}(Q\|P)`).  Per outcome, the admissible :math:`(x, y)` form the convex set
:math:`\{0 \le x \le P,\ 0 \le y \le Q,\ e^{-\epsilon} y \le x \le e^\epsilon y\}`, which contains
:math:`(0, 0)`, :math:`(P', Q')` and :math:`(P', e^{-\epsilon} P')`.  If :math:`\delta_x \ge \delta_y`, mix
the last two with the weight :math:`\theta` that makes both totals equal to :math:`1-\delta_x`, then shrink
towards :math:`(0,0)` by :math:`c/(1-\delta_x) \le 1`:

.. math::

    x = s\,P', \quad y = s\,\bigl((1-\theta)\,Q' + \theta e^{-\epsilon} P'\bigr), \quad
    \theta = \frac{\delta_x - \delta_y}{(1-\delta_y) - e^{-\epsilon}(1-\delta_x)}, \quad
    s = \frac{1-\delta}{1-\delta_x}

(symmetrically if :math:`\delta_y > \delta_x`).  This needs exactly :math:`\delta \ge \max(\delta_x,
\delta_y)`, i.e. indistinguishability - a short constructive proof of the lemma for discrete pairs.  It is
*not* the "scale :math:`P'` and :math:`Q'` down to mass :math:`1-\delta`" repair of the printed proof sketch,
which breaks :math:`x \le e^\epsilon y` whenever :math:`\delta_x \ne \delta_y` (ERRATA item 3).

``method="linprog"`` instead solves the linear feasibility problem over the :math:`4n` entries of
:math:`F` with HiGHS (the route the errata suggest); both methods verify their answer to
:data:`SIMULATION_ATOL` before returning it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from ._validation import check_delta, check_pmf_pair, check_real, check_real_array, check_rng
from .divergences import hockey_stick_divergence

__all__ = [
    "LEAKY_OUTCOMES",
    "SIMULATION_ATOL",
    "INDISTINGUISHABILITY_ATOL",
    "LINPROG_EPSILON_RANGE",
    "leaky_randomized_response",
    "sample_leaky_randomized_response",
    "simulation_map",
    "simulation_map_error",
    "apply_simulation_map",
]

LEAKY_OUTCOMES = (0, 1, "I am U", "I am V")
"""Outcomes of leaky randomized response, in the order of the rows of a simulation map."""

SIMULATION_ATOL = 1e-9
"""Accuracy to which :func:`simulation_map` guarantees ``P_U F = P`` and ``P_V F = Q`` (max abs error)."""

INDISTINGUISHABILITY_ATOL = 1e-12
"""Rounding slack allowed when checking that the input pair is (epsilon, delta)-indistinguishable."""

LINPROG_EPSILON_RANGE = 20.0
"""Largest epsilon for which ``method="linprog"`` is tested (it still verifies its answer beyond that)."""

_METHODS = ("explicit", "linprog")


# --------------------------------------------------------------------------------------------------------
# leaky randomized response
# --------------------------------------------------------------------------------------------------------

def _leaky_pmfs(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    # e^eps/(e^eps + 1) = expit(eps) and 1/(e^eps + 1) = expit(-eps): finite for every epsilon.
    hi, lo = (1.0 - delta) * special.expit(eps), (1.0 - delta) * special.expit(-eps)
    return np.array([hi, lo, delta, 0.0]), np.array([lo, hi, 0.0, delta])


def leaky_randomized_response(epsilon: Any, delta: Any) -> tuple[np.ndarray, np.ndarray]:
    r"""The pmfs of :math:`U` and :math:`V` (leaky randomized response) over :data:`LEAKY_OUTCOMES`.

    .. math::

        P_U = \Bigl(\tfrac{(1-\delta) e^\epsilon}{e^\epsilon+1},\ \tfrac{1-\delta}{e^\epsilon+1},\
              \delta,\ 0\Bigr),
        \qquad
        P_V = \Bigl(\tfrac{1-\delta}{e^\epsilon+1},\ \tfrac{(1-\delta) e^\epsilon}{e^\epsilon+1},\
              0,\ \delta\Bigr).

    The pair is :math:`(\epsilon, \delta)`-indistinguishable and is the "hardest" such pair: every other one
    is a post-processing of it (see :func:`simulation_map`).  The entries are computed with the logistic
    function, so they stay finite and accurate for any epsilon (``1/(e^eps+1)`` underflows gracefully).

    Args:
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).

    Returns:
        ``(p_U, p_V)``, two float arrays of length 4.

    Raises:
        ValueError: for an invalid ``epsilon`` or ``delta``.

    References:
        Lecture notes on advanced composition, Section 3.1 (table of :math:`U, V`); Kairouz, Oh & Viswanath
        (2015, arXiv:1311.0776), Section 2.

    >>> p_u, p_v = leaky_randomized_response(np.log(3), 0.2)
    >>> p_u.round(6).tolist(), p_v.round(6).tolist()
    ([0.6, 0.2, 0.2, 0.0], [0.2, 0.6, 0.0, 0.2])
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    return _leaky_pmfs(eps, delta)


def sample_leaky_randomized_response(epsilon: Any, delta: Any, size: Any, rng: Any,
                                     variable: str = "U") -> np.ndarray:
    """Draw samples of :math:`U` (or :math:`V`) as row indices into :data:`LEAKY_OUTCOMES`.

    Index ``0`` and ``1`` are the outcomes 0 and 1, index ``2`` is "I am U" and ``3`` is "I am V"; the result
    can be fed straight to :func:`apply_simulation_map`.

    Args:
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).
        size: number of samples (an integer >= 0) or a shape tuple.
        rng: a ``numpy.random.Generator``.
        variable: ``"U"`` or ``"V"``.

    Returns:
        An int array of the requested shape with entries in {0, 1, 2, 3}.

    Raises:
        ValueError: for invalid parameters.
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    shape = _check_size(size)
    rng = check_rng(rng)
    if variable not in ("U", "V"):
        raise ValueError(f'variable must be "U" or "V", got {variable!r}')
    p_u, p_v = _leaky_pmfs(eps, delta)
    return _sample_rows(p_u if variable == "U" else p_v, rng.random(shape))


def _check_size(size: Any) -> tuple[int, ...]:
    dims = size if isinstance(size, tuple) else (size,)
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"size must be an integer >= 0 or a tuple of them, got {size!r}")
        out.append(int(d))
    return tuple(out)


def _sample_rows(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-cdf sampling: index ``j`` with probability ``pmf[j]`` for each uniform in ``u``.

    ``searchsorted(..., side="right")`` never returns an index whose probability is 0.
    """
    cdf = np.cumsum(pmf)
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(idx, pmf.size - 1)


# --------------------------------------------------------------------------------------------------------
# checking a candidate map
# --------------------------------------------------------------------------------------------------------

def _map_error(f: np.ndarray, p: np.ndarray, q: np.ndarray, eps: float, delta: float) -> float:
    p_u, p_v = _leaky_pmfs(eps, delta)
    return float(max(np.max(np.abs(p_u @ f - p)), np.max(np.abs(p_v @ f - q)),
                     np.max(np.abs(f.sum(axis=1) - 1.0)), max(0.0, -float(f.min()))))


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
    return _map_error(f, p, q, eps, delta)


# --------------------------------------------------------------------------------------------------------
# building the map
# --------------------------------------------------------------------------------------------------------

def _cap(p: np.ndarray, q: np.ndarray, eps: float) -> np.ndarray:
    r""":math:`\min(p, e^\epsilon q)`, without overflow for any epsilon."""
    if eps <= 700.0:
        return np.minimum(p, q * math.exp(eps))
    # e^eps would overflow: compare in log-space; where p > e^eps q, e^eps q < p <= 1 is representable.
    with np.errstate(divide="ignore"):
        log_p, log_cap = np.log(p), np.log(q) + eps     # -inf where p = 0 (keeps 0) or q = 0 (gives 0)
    return np.where(log_p <= log_cap, p, np.exp(np.minimum(log_cap, log_p)))


def _core_pair(p: np.ndarray, q: np.ndarray, eps: float, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Core masses ``(x, y)``: ``x <= p``, ``y <= q``, ratios within e^eps, both summing to ``1 - d``.

    Assumes ``d >= max(H(p||q), H(q||p))`` at ``eps`` and ``d < 1`` (see the module docstring).
    """
    c = 1.0 - d
    p_cap, q_cap = _cap(p, q, eps), _cap(q, p, eps)
    t_x, t_y = math.fsum(p_cap), math.fsum(q_cap)        # 1 - delta_x and 1 - delta_y
    swap = t_x > t_y                                     # build for the side with the smaller mass
    if swap:
        p_cap, q_cap, t_x, t_y = q_cap, p_cap, t_y, t_x
    if t_x <= 0.0:                                       # only possible when c is ~0 (delta within atol of 1)
        return np.zeros_like(p), np.zeros_like(q)
    # theta mixes (P', Q') with (P', e^-eps P') so that both totals equal t_x:
    # (1 - theta) t_y + theta e^-eps t_x = t_x.  Denominator (t_y - t_x) - t_x expm1(-eps) > 0 unless
    # eps = 0 and t_x = t_y (then theta = 0).
    gap = t_y - t_x
    denom = gap - t_x * math.expm1(-eps)
    theta = gap / denom if gap > 0.0 else 0.0
    s = min(c / t_x, 1.0)
    x = s * p_cap
    y = s * ((1.0 - theta) * q_cap + theta * math.exp(-eps) * p_cap)
    if swap:
        x, y = y, x
    return np.minimum(x, p), np.minimum(y, q)


def _binary_rows(x: np.ndarray, y: np.ndarray, eps: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows :math:`F_0, F_1` with :math:`c(aF_0 + bF_1) = x` and :math:`c(bF_0 + aF_1) = y` (the core pair).

    Uses :math:`F_0 = (x + (x - y)/\mathrm{expm1}(\epsilon))/c` (exact for all epsilon > 0, no overflow).
    For small epsilon the difference ``x - y`` is divided by about epsilon, so its rounding error (an ulp of
    ``x``) becomes an error of ulp/epsilon in the rows - but moving mass ``t`` between the two rows at one
    outcome changes the products only by :math:`c(a - b)t` with :math:`(a - b)/\mathrm{expm1}(\epsilon) =
    1/(e^\epsilon + 1)`, i.e. by about an ulp again.  So rounding is repaired by such moves: a negative entry
    is moved to the other row *at the same outcome*, and the row sums are equalised by moving the excess of
    the heavier row to the lighter one, proportionally to the heavier row (always enough room).
    """
    if c <= 0.0:                                         # no core mass: the rows have weight ~0
        return np.full(x.size, 1.0 / x.size), np.full(x.size, 1.0 / x.size)
    if eps == 0.0 or np.array_equal(x, y):
        f0 = x / c
        return f0, f0.copy()
    with np.errstate(over="ignore"):
        growth = np.expm1(eps)                           # +inf beyond eps ~ 709: then a = 1, b = 0
    shift = (x - y) / growth
    both = (x + y) / c
    f0 = np.clip((x + shift) / c, 0.0, both)
    f1 = both - f0
    sum0, sum1 = math.fsum(f0), math.fsum(f1)
    excess = (sum0 - sum1) / 2.0                         # both rows should sum to (sum0 + sum1)/2 ~ 1
    if excess > 0.0:
        move = excess * f0 / sum0                        # excess < sum0, so f0 - move >= 0
        f0, f1 = f0 - move, f1 + move
    elif excess < 0.0:
        move = -excess * f1 / sum1
        f0, f1 = f0 + move, f1 - move
    return f0, f1


def _normalise_rows(f: np.ndarray) -> np.ndarray:
    """Clip negatives (and non-finite entries) to 0 and rescale each row to sum 1 (an empty row: uniform)."""
    f = np.clip(np.where(np.isfinite(f), f, 0.0), 0.0, None)
    sums = f.sum(axis=1, keepdims=True)
    return np.where(sums > 0, f / np.where(sums > 0, sums, 1.0), 1.0 / f.shape[1])


def _explicit_map(p: np.ndarray, q: np.ndarray, eps: float, d: float) -> np.ndarray:
    """The constructive map of the module docstring for the effective delta ``d``."""
    if d == 0.0:
        x, y, c = p, q, 1.0
        leak_u, leak_v = p, q                            # weight 0: any distribution will do
    else:
        x, y = _core_pair(p, q, eps, d)
        c = 1.0 - d
        leak_u, leak_v = _leak_row(p, x, d), _leak_row(q, y, d)
    f0, f1 = _binary_rows(x, y, eps, c)
    return _normalise_rows(np.vstack([f0, f1, leak_u, leak_v]))


def _leak_row(target: np.ndarray, core: np.ndarray, d: float) -> np.ndarray:
    """``(target - core)/d`` (clipped at 0; a uniform row when nothing is left)."""
    row = np.clip(target - core, 0.0, None)
    total = row.sum()
    return row / total if total > 0 else np.full(target.size, 1.0 / target.size)


def _linprog_map(p: np.ndarray, q: np.ndarray, eps: float, d: float, presolve: bool = True) -> np.ndarray:
    r"""Solve :math:`P_U F = P,\ P_V F = Q,\ F\mathbf 1 = \mathbf 1,\ F \ge 0` with HiGHS.

    Variables are the :math:`4n` entries of ``F`` (row-major) plus nonnegative slacks on the :math:`2n`
    product equations; the objective is the total slack (an "elastic" feasibility problem: it is always
    solvable, and its optimum is 0 exactly when a map exists - this keeps HiGHS from declaring a pair
    infeasible that is feasible only up to its tolerances).  Each equality row is divided by its largest
    coefficient (row equilibration), and the feasibility tolerances are tightened to 1e-10.

    The solver's answer is then polished, keeping whichever candidate has the smaller error:

    * *active-support least squares*: re-solve the equalities exactly (``numpy.linalg.lstsq``) on the
      entries HiGHS left positive - at a vertex these columns are independent, so this recovers the vertex
      to machine precision even where HiGHS dropped tiny coefficients;
    * *residual leak rows*: clip and renormalise the rows for 0 and 1, then recompute the leak rows as
      :math:`(P - c(aF_0 + bF_1))/\delta`, which makes :math:`P_U F = P` exact wherever the core part does
      not overshoot :math:`P`.
    """
    n = p.size
    p_u, p_v = _leaky_pmfs(eps, d)
    a_eq = np.zeros((2 * n + 4, 4 * n))
    for r in range(4):
        cols = r * n + np.arange(n)
        a_eq[np.arange(n), cols] = p_u[r]
        a_eq[n + np.arange(n), cols] = p_v[r]
        a_eq[2 * n + r, cols] = 1.0
    b_eq = np.concatenate([p, q, np.ones(4)])
    scale = np.abs(a_eq).max(axis=1)
    a_scaled, b_scaled = a_eq / scale[:, None], b_eq / scale
    slack = np.zeros((2 * n + 4, 4 * n))
    slack[np.arange(2 * n), np.arange(2 * n)] = 1.0             # + s_plus on the product rows
    slack[np.arange(2 * n), 2 * n + np.arange(2 * n)] = -1.0    # - s_minus
    cost = np.concatenate([np.zeros(4 * n), np.ones(4 * n)])
    # Structural zeros: where P(z) = 0 every row with positive P_U-weight must put 0 on z (same for Q).
    # Fixing them as bounds spares HiGHS from "satisfying" P(z) = 0 with a coefficient below its tolerance.
    upper = np.full(8 * n, np.inf)
    for r in range(4):
        upper[r * n + np.flatnonzero(((p == 0) & (p_u[r] > 0)) | ((q == 0) & (p_v[r] > 0)))] = 0.0
    res = optimize.linprog(cost, A_eq=np.hstack([a_scaled, slack]), b_eq=b_scaled,
                           bounds=np.column_stack([np.zeros(8 * n), upper]),
                           method="highs",
                           options={"primal_feasibility_tolerance": 1e-10,
                                    "dual_feasibility_tolerance": 1e-10, "presolve": presolve})
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"HiGHS could not solve the simulation-map LP (status {res.status}: "
                           f"{res.message}); try method='explicit'")
    raw = res.x[:4 * n]
    candidates = [_polish_residual(raw.reshape(4, n), p, q, eps, d)]
    active = raw > 1e-13
    if active.any():
        sol = np.linalg.lstsq(a_scaled[:, active], b_scaled, rcond=None)[0]
        exact = np.zeros(4 * n)
        exact[active] = sol
        candidates.append(_polish_residual(exact.reshape(4, n), p, q, eps, d))
    return min(candidates, key=lambda f: _map_error(f, p, q, eps, d))


def _polish_residual(f: np.ndarray, p: np.ndarray, q: np.ndarray, eps: float, d: float) -> np.ndarray:
    """Clip/renormalise the rows and recompute the leak rows from the residuals (see :func:`_linprog_map`)."""
    f = _normalise_rows(f)
    if d == 0.0:
        f[2], f[3] = p, q
        return f
    c = 1.0 - d
    hi, lo = special.expit(eps), special.expit(-eps)
    x, y = c * (hi * f[0] + lo * f[1]), c * (lo * f[0] + hi * f[1])
    f[2], f[3] = _leak_row(p, x, d), _leak_row(q, y, d)
    return f


def simulation_map(p: Any, q: Any, epsilon: Any, delta: Any, *, method: str = "explicit") -> np.ndarray:
    r"""A randomized map :math:`F` with :math:`F(U) \sim P` and :math:`F(V) \sim Q` (simulation lemma).

    Returns a ``4 x n`` row-stochastic matrix, rows indexed by :data:`LEAKY_OUTCOMES` and columns by the
    outcomes of ``p`` and ``q``, such that

    .. math::

        P_U F = P, \qquad P_V F = Q \qquad (\text{max abs error} \le 10^{-9}),

    where :math:`(P_U, P_V)` = :func:`leaky_randomized_response` ``(epsilon, delta)``.  Written out per
    outcome :math:`z` (the corrected equations (7)-(8) of the lecture, ERRATA item 4):

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
        * ``"explicit"`` (default): the constructive proof in the module docstring; exact up to rounding for
          every finite epsilon (tested from subnormal values to 1e6, errors ~1e-16) and every delta in
          [0, 1).
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
    if method not in _METHODS:
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
        f = _explicit_map(p, q, eps, d)
    else:
        f = _linprog_map(p, q, eps, d)
        if _map_error(f, p, q, eps, delta) > SIMULATION_ATOL:
            f = _linprog_map(p, q, eps, d, presolve=False)      # re-solve without presolve
    err = _map_error(f, p, q, eps, delta)
    if not err <= SIMULATION_ATOL:
        raise RuntimeError(f"the simulation map found with method={method!r} misses the target by {err:.3g} "
                           f"> {SIMULATION_ATOL:g} (epsilon = {eps:g}, delta = {delta:g}); "
                           + ("try method='explicit'" if method == "linprog" else "please report this"))
    return f


# --------------------------------------------------------------------------------------------------------
# sampling through a map
# --------------------------------------------------------------------------------------------------------

_LABEL_INDEX = {"I am U": 2, "I am V": 3}


def _leaky_indices(z: Any) -> np.ndarray:
    arr = np.asarray(z, dtype=object) if not isinstance(z, np.ndarray) or z.dtype.kind in "OUS" \
        else np.asarray(z)
    if arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and np.all(np.isfinite(arr))
                                  and np.all(arr == np.round(arr))):
        idx = arr.astype(int)
    else:
        flat = []
        for item in arr.ravel():
            if isinstance(item, str) and item in _LABEL_INDEX:
                flat.append(_LABEL_INDEX[item])
            elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
                flat.append(int(item))
            else:
                raise ValueError(f"z must contain outcomes of leaky randomized response: indices 0-3 or the "
                                 f"labels {LEAKY_OUTCOMES}, got {item!r}")
        idx = np.array(flat, dtype=int).reshape(arr.shape)
    if idx.size and (idx.min() < 0 or idx.max() > 3):
        bad = idx[(idx < 0) | (idx > 3)].ravel()[0]
        raise ValueError(f"z must contain indices 0-3 into LEAKY_OUTCOMES {LEAKY_OUTCOMES}, got {bad}")
    return idx


def apply_simulation_map(F: Any, z: Any, rng: Any) -> np.ndarray:
    r"""Push samples of leaky randomized response through the randomized map ``F``.

    For each entry of ``z`` (a sample of :math:`U` or :math:`V`), draw an outcome index ``j`` with
    probability ``F[z, j]``.  If ``z ~ U`` i.i.d. and ``F = simulation_map(p, q, ...)``, the result is an
    i.i.d. sample of ``p`` (of ``q`` when ``z ~ V``): the simulation lemma, checked empirically.

    Args:
        F: a ``4 x n`` row-stochastic matrix (nonnegative, rows summing to 1 within 1e-9).
        z: samples as indices 0-3 into :data:`LEAKY_OUTCOMES` (ints, e.g. from
            :func:`sample_leaky_randomized_response`) or as the labels themselves
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
    idx = _leaky_indices(z)
    rng = check_rng(rng)
    u = rng.random(idx.shape)
    out = np.empty(idx.shape, dtype=int)
    for r in range(4):
        mask = idx == r
        if mask.any():
            out[mask] = _sample_rows(f[r], u[mask])
    return out
