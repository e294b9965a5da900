r"""How :func:`dp_course.simulation.simulation_map` builds a map: an explicit construction and a linear program.

Implementation of :mod:`dp_course.simulation` (a private module: the arguments are validated there).

**From a core pair to a map.**  Write :math:`c = 1 - \delta`, :math:`a = e^\epsilon/(e^\epsilon+1)`,
:math:`b = 1/(e^\epsilon+1)`.  The two leak rows only enter one equation each, so :math:`P_U F = P` and
:math:`P_V F = Q` hold as soon as

.. math::

    x := c\,(a F_0 + b F_1) \le P, \qquad y := c\,(b F_0 + a F_1) \le Q,
    \qquad F_U = (P - x)/\delta, \quad F_V = (Q - y)/\delta .

Conversely :math:`F_0, F_1` are recovered from any "core" pair :math:`(x, y)` with
:math:`e^{-\epsilon} y \le x \le e^{\epsilon} y` and :math:`\sum x = \sum y = c` by

.. math::

    F_0 = \frac{x + (x - y)/(e^\epsilon - 1)}{c}, \qquad F_1 = \frac{y - (x - y)/(e^\epsilon - 1)}{c}

(the :math:`\delta = 0` case, :math:`x = P, y = Q`, is the closed form of ERRATA item 3).

**The core pair built here (``method="explicit"``).**  Let :math:`P' = \min(P, e^\epsilon Q)` and
:math:`Q' = \min(Q, e^\epsilon P)`, of masses :math:`1-\delta_x` and :math:`1-\delta_y`
(:math:`\delta_x = H_{e^\epsilon}(P\|Q)`, :math:`\delta_y = H_{e^\epsilon}(Q\|P)`), and say
:math:`\delta_x \ge \delta_y` (otherwise swap the roles).  Keep the lighter side :math:`P'`; the heavier side
must lose the mass :math:`t = \delta_x - \delta_y` without dropping below :math:`e^{-\epsilon} P'` (the band of
the core).  It is lowered *evenly* ("water-filling"): every outcome gives up the same amount :math:`\lambda`,
or all the room it has if that is less,

.. math::

    y^* = Q' - \min\bigl(\lambda,\ Q' - e^{-\epsilon} P'\bigr), \qquad
    \sum_z \min\bigl(\lambda,\ Q'(z) - e^{-\epsilon} P'(z)\bigr) = t,

with :math:`\lambda` found exactly by sorting the rooms (it exists: the total room
:math:`(1-\delta_y) - e^{-\epsilon}(1-\delta_x)` is at least :math:`t`).  Then both sides are scaled by
:math:`s = (1-\delta)/(1-\delta_x) \le 1`: :math:`x = s P'`, :math:`y = s y^*`.  Conditions:
:math:`x \le P`; :math:`y \le Q' \le Q`; :math:`e^{-\epsilon}x \le y` (the cut stops at the band) and
:math:`y \le Q' \le e^\epsilon P'`, so :math:`y \le e^\epsilon x`; both masses are :math:`s(1-\delta_x) = 1-\delta`.
This needs exactly :math:`\delta \ge \max(\delta_x, \delta_y)`, i.e. indistinguishability - a short
constructive proof of the lemma for discrete pairs.

Many core pairs are valid.  Lecture 03 (Exercise 3) builds a different one - the heavier side *mixed* towards
:math:`e^{-\epsilon}` times the lighter one - so this construction is no shortcut for that exercise, only a
check of its result.  Neither is the "scale :math:`P'` and :math:`Q'` down to mass :math:`1-\delta`" repair of
the printed proof sketch, which breaks :math:`x \le e^\epsilon y` whenever :math:`\delta_x \ne \delta_y` (ERRATA
item 3).

**The linear program (``method="linprog"``)** solves the feasibility problem over the :math:`4n` entries of
:math:`F` with HiGHS (the route the errata suggest); see :func:`linprog_map`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from .leaky import leaky_randomized_response

__all__ = ["explicit_map", "linprog_map", "map_error"]


def map_error(f: np.ndarray, p: np.ndarray, q: np.ndarray, eps: float, delta: float) -> float:
    """Largest of the errors of ``P_U F = p``, ``P_V F = q``, of the row sums, and of a negative entry."""
    p_u, p_v = leaky_randomized_response(eps, delta)
    return float(max(np.max(np.abs(p_u @ f - p)), np.max(np.abs(p_v @ f - q)),
                     np.max(np.abs(f.sum(axis=1) - 1.0)), max(0.0, -float(f.min()))))


# --------------------------------------------------------------------------------------------------------
# the explicit construction
# --------------------------------------------------------------------------------------------------------

def _cap(p: np.ndarray, q: np.ndarray, eps: float) -> np.ndarray:
    r""":math:`\min(p, e^\epsilon q)`, without overflow for any epsilon."""
    if eps <= 700.0:
        return np.minimum(p, q * math.exp(eps))
    # e^eps would overflow: compare in log-space; where p > e^eps q, e^eps q < p <= 1 is representable.
    with np.errstate(divide="ignore"):
        log_p, log_cap = np.log(p), np.log(q) + eps     # -inf where p = 0 (keeps 0) or q = 0 (gives 0)
    return np.where(log_p <= log_cap, p, np.exp(np.minimum(log_cap, log_p)))


def _even_cut(room: np.ndarray, amount: float) -> np.ndarray:
    r"""Removals :math:`\min(\lambda, \mathrm{room})` summing to ``amount`` (0 <= amount <= sum(room)).

    With the rooms sorted, removing the level :math:`\lambda` between the (k-1)-th and k-th smallest room
    takes (sum of the k smallest rooms) + (n - k) :math:`\lambda` - a piecewise linear, nondecreasing function
    of :math:`\lambda`, inverted on the right piece.
    """
    if amount <= 0.0:
        return np.zeros_like(room)
    if amount >= math.fsum(room):
        return room.copy()
    ordered = np.sort(room)
    n = ordered.size
    below = np.concatenate([[0.0], np.cumsum(ordered)[:-1]])     # sum of the rooms smaller than ordered[k]
    taken = below + (n - np.arange(n)) * ordered                 # removed at the level lambda = ordered[k]
    k = min(int(np.searchsorted(taken, amount)), n - 1)          # first level that removes enough
    level = (amount - below[k]) / (n - k)
    return np.minimum(room, level)


def _core_pair(p: np.ndarray, q: np.ndarray, eps: float, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Core masses ``(x, y)``: ``x <= p``, ``y <= q``, ratios within e^eps, both summing to ``1 - d``.

    The even cut of the module docstring.  Assumes ``d >= max(H(p||q), H(q||p))`` at ``eps`` and ``d < 1``.
    """
    c = 1.0 - d
    p_cap, q_cap = _cap(p, q, eps), _cap(q, p, eps)
    t_x, t_y = math.fsum(p_cap), math.fsum(q_cap)        # 1 - delta_x and 1 - delta_y
    swap = t_x > t_y                                     # build for the side with the smaller mass
    if swap:
        p_cap, q_cap, t_x, t_y = q_cap, p_cap, t_y, t_x
    if t_x <= 0.0:                                       # only possible when c is ~0 (delta within atol of 1)
        return np.zeros_like(p), np.zeros_like(q)
    # the heavier side may go down to e^-eps times the lighter one (q_cap >= that floor up to rounding)
    room = np.clip(q_cap - p_cap * math.exp(-eps), 0.0, None)
    y_tight = q_cap - _even_cut(room, t_y - t_x)
    s = min(c / t_x, 1.0)
    x, y = s * p_cap, s * y_tight
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


def explicit_map(p: np.ndarray, q: np.ndarray, eps: float, d: float) -> np.ndarray:
    """The constructive map of the module docstring for the effective delta ``d`` (validated pmfs)."""
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


# --------------------------------------------------------------------------------------------------------
# the linear program
# --------------------------------------------------------------------------------------------------------

def linprog_map(p: np.ndarray, q: np.ndarray, eps: float, d: float, presolve: bool = True) -> np.ndarray:
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
    p_u, p_v = leaky_randomized_response(eps, d)
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
    return min(candidates, key=lambda f: map_error(f, p, q, eps, d))



def _polish_residual(f: np.ndarray, p: np.ndarray, q: np.ndarray, eps: float, d: float) -> np.ndarray:
    """Clip/renormalise the rows and recompute the leak rows from the residuals (see :func:`linprog_map`)."""
    f = _normalise_rows(f)
    if d == 0.0:
        f[2], f[3] = p, q
        return f
    c = 1.0 - d
    hi, lo = special.expit(eps), special.expit(-eps)
    x, y = c * (hi * f[0] + lo * f[1]), c * (lo * f[0] + hi * f[1])
    f[2], f[3] = _leak_row(p, x, d), _leak_row(q, y, d)
    return f

