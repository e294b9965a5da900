r"""The four-system decomposition of an :math:`(\varepsilon, \delta)`-indistinguishable pair of systems.

Theorem 3 of Lyu (2022): :math:`\mathcal M^0, \mathcal M^1` are :math:`(\varepsilon, \delta)`-indistinguishable
if and only if there are systems :math:`\mathcal E^0, \mathcal E^1, \mathcal N^0, \mathcal N^1` with, for every
adversary and both :math:`b`,

.. math::

    \mathrm{IT}(\mathcal A : \mathcal M^b) \equiv \delta\, \mathrm{IT}(\mathcal A : \mathcal E^b)
    + (1 - \delta) \Bigl( \tfrac{e^\varepsilon}{1 + e^\varepsilon} \mathrm{IT}(\mathcal A : \mathcal N^b)
    + \tfrac{1}{1 + e^\varepsilon} \mathrm{IT}(\mathcal A : \mathcal N^{1-b}) \Bigr).

(The paper prints :math:`e^\varepsilon/(1 + \varepsilon)` in eq. (4) and in Section 4.1; the weights must sum
to one, so it is :math:`e^\varepsilon/(1 + e^\varepsilon)` – ERRATA item 12.)  Read it as: flip a leaky
randomized-response coin on :math:`b` – with probability :math:`\delta` "leak" and behave like
:math:`\mathcal E^b`, otherwise report :math:`b` or :math:`1 - b` with the usual odds and behave like
:math:`\mathcal N` of the reported bit.  Every interaction with :math:`\mathcal M^b` is a post-processing of
one leaky randomized response, which is how Theorem 1 reduces concurrent composition to sequential
composition of randomized responses.

For a mechanism with ``T`` rounds it is enough to find the joint answer tables :math:`E^b(y \mid x)` (Lemma 1):
they must describe systems (non-negative, rows summing to one, causal – eq. (26)), satisfy
:math:`\delta E^b \le M^b` and :math:`R^b = M^b - \delta E^b` must obey :math:`R^b \le e^\varepsilon R^{1-b}`
entry by entry (eqs. (17)-(18)).  Then the core systems are, in closed form (Lemma 3 with Lemma 2),

.. math:: N^b = \frac{e^\varepsilon R^b - R^{1-b}}{(e^\varepsilon - 1)(1 - \delta)} .

:func:`decompose` finds :math:`E^b` by solving these linear constraints with HiGHS (the paper proves a
solution exists by an explicit adjustment procedure; any feasible point will do).

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397,
    Theorem 3, Lemmas 1-3, eqs. (14), (17), (18), (26).
    S. Vadhan and T. Wang, "Concurrent composition of differential privacy", TCC 2021, arXiv:2105.14427
    (Lemma 3, the pure case).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from .._validation import check_delta, check_real
from .optimal import worst_case_delta
from .systems import InteractiveMechanism, TableMechanism, answer_table

__all__ = ["Decomposition", "decompose", "rr_weights"]

TOL = 1e-9
"""Tolerance for the linear constraints (the solver's feasibility tolerance is about 1e-9)."""


def rr_weights(epsilon: float, delta: float) -> tuple[float, float, float]:
    r"""Weights of the three parts of leaky randomized response: :math:`(\delta,\ (1-\delta)\frac{e^\varepsilon}
    {1+e^\varepsilon},\ (1-\delta)\frac{1}{1+e^\varepsilon})`; they sum to 1.

    Raises:
        ValueError: for ``epsilon`` < 0 or ``delta`` outside [0, 1).
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    keep = 1.0 / (1.0 + math.exp(-eps))
    return delta, (1.0 - delta) * keep, (1.0 - delta) * (1.0 - keep)


@dataclass(frozen=True)
class Decomposition:
    r"""The systems of Theorem 3 for a mechanism: ``leak`` :math:`= (\mathcal E^0, \mathcal E^1)` and ``core``
    :math:`= (\mathcal N^0, \mathcal N^1)`, each a :class:`~dp_course.interactive.systems.TableMechanism` (row
    ``b`` of its tables is the system for input ``b``)."""

    epsilon: float
    delta: float
    mechanism: InteractiveMechanism
    leak: TableMechanism
    core: TableMechanism

    def __post_init__(self) -> None:
        check_real("epsilon", self.epsilon, lo=0.0)
        check_delta(self.delta)
        if not isinstance(self.mechanism, InteractiveMechanism):
            raise ValueError(f"mechanism must be an InteractiveMechanism, got {type(self.mechanism).__name__}")
        for name in ("leak", "core"):
            if not isinstance(getattr(self, name), TableMechanism):
                raise ValueError(f"{name} must be a TableMechanism, got {type(getattr(self, name)).__name__}")

    @property
    def weights(self) -> tuple[float, float, float]:
        """``(delta, (1 - delta) e^eps / (1 + e^eps), (1 - delta) / (1 + e^eps))``."""
        return rr_weights(self.epsilon, self.delta)

    def pure_part(self) -> TableMechanism:
        r"""The pair :math:`(R^0, R^1)/(1 - \delta)` of Lemma 2, :math:`\frac{e^\varepsilon}{1+e^\varepsilon}
        \mathcal N^b + \frac{1}{1+e^\varepsilon}\mathcal N^{1-b}`: it is :math:`(\varepsilon, 0)`-indistinguishable."""
        keep = 1.0 / (1.0 + math.exp(-self.epsilon))
        N = self.core.table
        return TableMechanism(keep * N + (1.0 - keep) * N[::-1], self.core.rounds, self.core.queries,
                              self.core.answers, atol=1e-7)

    def mixture_table(self) -> np.ndarray:
        r"""The joint answer tables of the right-hand side of Theorem 3, shape ``(2, X**T, Y**T)``; equal to
        :func:`~dp_course.interactive.systems.answer_table` of the mechanism."""
        w_leak, w_same, w_other = self.weights
        E, N = self.leak.table, self.core.table
        return w_leak * E + w_same * N + w_other * N[::-1]


def _causality_rows(nx: int, ny: int, T: int) -> tuple[list, list]:
    """Equality constraints making a table over (x-sequence, y-sequence) a causal system with rows summing
    to 1: for each t < T, the marginal over answers after t is the same for all query sequences that agree on
    the first t queries (t = 0: all rows have the same total)."""
    xs = list(itertools.product(range(nx), repeat=T))
    ys = list(itertools.product(range(ny), repeat=T))
    n_y = len(ys)
    rows, rhs = [], []
    for t in range(T):
        groups: dict = {}
        for i, xseq in enumerate(xs):
            groups.setdefault(xseq[:t], []).append(i)
        for members in groups.values():
            for y_prefix in itertools.product(range(ny), repeat=t):
                cols = [j for j, yseq in enumerate(ys) if yseq[:t] == y_prefix]
                for a, b in itertools.pairwise(members):
                    rows.append([(a * n_y + j, 1.0) for j in cols] + [(b * n_y + j, -1.0) for j in cols])
                    rhs.append(0.0)
    rows.append([(j, 1.0) for j in range(n_y)])      # the first query sequence's row sums to 1
    rhs.append(1.0)
    return rows, rhs


def _causal(table: np.ndarray, rounds: int, mechanism: InteractiveMechanism) -> np.ndarray:
    """Remove the solver's rounding (about 1e-9) from a table: rebuild it from its own answer laws, which
    gives an exactly causal table with rows summing to 1."""
    table = table / table.sum(axis=2, keepdims=True)
    rough = TableMechanism(table, rounds, mechanism.queries, mechanism.answers, atol=1e-6)
    return answer_table(rough)


def decompose(mechanism: InteractiveMechanism, epsilon: float, delta: float) -> Decomposition:
    r"""Find the systems :math:`\mathcal E^b, \mathcal N^b` of Theorem 3 for a mechanism, by linear programming.

    Args:
        mechanism: an interactive mechanism with a small answer table (``(X*Y)**rounds`` up to a few hundred).
        epsilon: > 0.
        delta: in [0, 1).

    Returns:
        :class:`Decomposition`.

    Raises:
        ValueError: if the mechanism is not :math:`(\varepsilon, \delta)`-indistinguishable (then no
            decomposition exists; the message gives the exact worst-case :math:`\delta(\varepsilon)`), or for
            arguments out of range.

    Source: Lyu 2022 (arXiv:2207.09397), Theorem 3 and Lemmas 1-3.
    """
    eps = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    delta = check_delta(delta)
    M = answer_table(mechanism)                          # (2, nX, nY)
    nx, ny, T = mechanism.n_queries, mechanism.n_answers, mechanism.rounds
    n = M.shape[1] * M.shape[2]
    m0, m1 = M[0].ravel(), M[1].ravel()
    e = math.exp(eps)
    # variables z = [E^0, E^1] (2n); inequalities A z <= c
    eye = sparse.identity(n, format="csr")
    # (M^0 - d E^0) <= e (M^1 - d E^1)   <=>  -d E^0 + e d E^1 <= e M^1 - M^0, and the mirror image
    a_ub = sparse.vstack([sparse.hstack([-delta * eye, e * delta * eye]),
                          sparse.hstack([e * delta * eye, -delta * eye])]).tocsr()
    c_ub = np.concatenate([e * m1 - m0, e * m0 - m1]) + TOL
    rows, rhs = _causality_rows(nx, ny, T)
    data, ri, ci = [], [], []
    for r, row in enumerate(rows):
        for col, val in row:
            for b in (0, 1):
                ri.append(2 * r + b)
                ci.append(b * n + col)
                data.append(val)
    a_eq = sparse.csr_matrix((data, (ri, ci)), shape=(2 * len(rows), 2 * n))
    b_eq = np.repeat(rhs, 2)
    upper = np.concatenate([m0, m1]) / delta if delta > 0 else np.full(2 * n, np.inf)
    bounds = np.stack([np.zeros(2 * n), upper + TOL], axis=1)
    res = optimize.linprog(np.zeros(2 * n), A_ub=a_ub, b_ub=c_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds,
                           method="highs")
    if res.status != 0:
        worst = worst_case_delta(mechanism, eps)
        raise ValueError(f"no decomposition with epsilon = {eps:g}, delta = {delta:g}: the mechanism is not "
                         f"(epsilon, delta)-indistinguishable (the best adversary reaches delta(epsilon) = "
                         f"{worst:.6g}); Theorem 3 needs delta >= {worst:.6g}")
    E = _causal(np.clip(res.x.reshape(M.shape), 0.0, None), T, mechanism)
    R = M - delta * E
    N = _causal(np.clip((e * R - R[::-1]) / ((e - 1.0) * (1.0 - delta)), 0.0, None), T, mechanism)
    leak = TableMechanism(E, T, mechanism.queries, mechanism.answers)
    core = TableMechanism(N, T, mechanism.queries, mechanism.answers)
    return Decomposition(eps, delta, mechanism, leak, core)
