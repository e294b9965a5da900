r"""Adaptive composition of finite mechanisms, and Claim 3.3: composing the per-round simulation maps.

An *adaptive composition* of :math:`k` rounds on a fixed pair of neighbouring data sets
:math:`\mathbf{x}, \mathbf{x}'` is described by one function, ``round_pair(history) -> (p, q)``: given the
outputs ``history = (y_1, ..., y_{j-1})`` of the earlier rounds (a tuple of ints), it returns the output pmfs
of the :math:`j`-th mechanism on :math:`\mathbf{x}` and on :math:`\mathbf{x}'` (1-D arrays over the outcomes
``0, ..., n_j - 1``; ``n_j`` may depend on the history).  The law of the whole transcript is the product of the
conditional laws (the chain rule), for each data set:

.. math::

    P(y_1, \dots, y_k) = \prod_{j=1}^k p_{y_{<j}}(y_j), \qquad Q(y_1, \dots, y_k) = \prod_{j=1}^k q_{y_{<j}}(y_j).

**Claim 3.3** (lecture notes on advanced composition, Section 3.1).  If every round's pair is
:math:`(\epsilon, \delta)`-indistinguishable, the simulation lemma gives a map :math:`F_{y_{<j}}` per history
with :math:`F_{y_{<j}}(U) \sim p_{y_{<j}}` and :math:`F_{y_{<j}}(V) \sim q_{y_{<j}}`.  Algorithm 1 feeds i.i.d.
copies :math:`Z_1, \dots, Z_k` of leaky randomized response through these maps, round by round:
:math:`y_j \leftarrow F_{y_{<j}}(Z_j)`.  The transcript it produces has law :math:`P` when the :math:`Z_j` are
copies of :math:`U`, and :math:`Q` when they are copies of :math:`V`.

* :func:`transcript_distributions` enumerates the transcripts with their probabilities under both data sets;
* :func:`composed_map_distribution` computes the law of Algorithm 1's output *exactly*, by summing over every
  sequence :math:`z \in \{0, 1, \text{I am U}, \text{I am V}\}^k` (it does not use the chain rule above, so
  comparing the two is a real check of the claim);
* :func:`run_composed_map` runs Algorithm 1 on samples.

References:
    Lecture notes on advanced composition, Claim 3.3 and Algorithm 1; Kairouz, Oh & Viswanath, "The
    composition theorem for differential privacy" (ICML 2015, arXiv:1311.0776), Section 3; Dwork & Roth,
    *The Algorithmic Foundations of Differential Privacy* (2014), Section 3.5.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_delta, check_int, check_pmf_pair, check_real, check_rng
from .leaky import LEAKY_OUTCOMES, leaky_randomized_response
from .simulation import apply_simulation_map, simulation_map

__all__ = [
    "MAX_ENUMERATION",
    "transcript_distributions",
    "composed_map_distribution",
    "run_composed_map",
]

MAX_ENUMERATION = 2_000_000
"""Largest number of (history, leaky sequence) states the exact enumerations visit before refusing."""

RoundPair = Callable[[tuple[int, ...]], tuple[ArrayLike, ArrayLike]]


def _check_round_pair(round_pair: Any) -> RoundPair:
    if not callable(round_pair):
        raise ValueError("round_pair must be a function history -> (p, q) giving the pmfs of the next round's "
                         f"mechanism on the two data sets, got {round_pair!r} of type {type(round_pair).__name__}")
    return round_pair


def _round(round_pair: RoundPair, history: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The validated pmfs of the round after ``history`` (errors say which history produced them)."""
    try:
        pair = round_pair(history)
        p, q = pair
        return check_pmf_pair("p", p, "q", q)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"round_pair{history!r} must return two pmfs (p, q) over the same outcomes: {exc}") from exc


def transcript_distributions(round_pair: RoundPair, k: int) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    r"""All transcripts of an adaptive composition with their probabilities on both data sets.

    .. math:: P(y) = \prod_{j=1}^k p_{y_{<j}}(y_j), \qquad Q(y) = \prod_{j=1}^k q_{y_{<j}}(y_j).

    Transcripts that are impossible under both data sets are left out; the order is lexicographic.

    Args:
        round_pair: a function ``history -> (p, q)`` (see the module docstring).
        k: the number of rounds, an integer >= 1.

    Returns:
        ``(transcripts, p, q)``: a list of int tuples of length ``k`` and two float arrays, one entry per
        transcript, each summing to 1.

    Raises:
        ValueError: for a bad ``k``, a ``round_pair`` that does not return valid pmfs, or more than
            :data:`MAX_ENUMERATION` transcripts.

    Source: the chain rule of probability, as in equation (3) of the lecture notes on advanced composition.

    >>> rr = lambda history: ([0.75, 0.25], [0.25, 0.75])
    >>> ys, p, q = transcript_distributions(rr, 2)
    >>> ys, p.tolist()
    ([(0, 0), (0, 1), (1, 0), (1, 1)], [0.5625, 0.1875, 0.1875, 0.0625])
    """
    round_pair = _check_round_pair(round_pair)
    k = check_int("k", k, lo=1)
    _check_rounds(round_pair, k)
    layer: list[tuple[tuple[int, ...], float, float]] = [((), 1.0, 1.0)]
    for j in range(k):
        nxt: list[tuple[tuple[int, ...], float, float]] = []
        for history, w_p, w_q in layer:
            p, q = _round(round_pair, history)
            outcomes = np.flatnonzero((p > 0) | (q > 0))
            if len(nxt) + outcomes.size > MAX_ENUMERATION:
                raise ValueError(f"the composition has more than {MAX_ENUMERATION} transcripts after {j + 1} "
                                 f"rounds, too many to enumerate; use fewer rounds (k = {k}) or fewer outcomes")
            for y in outcomes:
                w = (w_p * float(p[y]), w_q * float(q[y]))
                if w[0] > 0.0 or w[1] > 0.0:                   # impossible under both data sets: leave out
                    nxt.append((history + (int(y),), *w))
        layer = nxt
    return [h for h, _, _ in layer], np.array([w for _, w, _ in layer]), np.array([w for _, _, w in layer])


def _check_rounds(round_pair: RoundPair, k: int) -> None:
    """Refuse ``k`` before enumerating, from the first round's number of outcomes ``n``: about ``n^k`` transcripts.

    The estimate is cheap (one call of ``round_pair``); later rounds may have more or fewer outcomes, and the
    enumeration still stops at :data:`MAX_ENUMERATION` transcripts.  Rounds with a single outcome do not grow
    the enumeration, but even then more than 10,000 rounds are refused (each is a call of ``round_pair``).
    """
    p, q = _round(round_pair, ())
    n = max(int(np.count_nonzero((p > 0) | (q > 0))), 1)
    limit = 10_000 if n == 1 else max(1, int(math.log(MAX_ENUMERATION) / math.log(n)))  # k = 1: counted below
    if k > limit:
        raise ValueError(f"k must be at most {limit} to enumerate the transcripts (the first round has {n} outcomes, "
                         f"so about {n}^k transcripts, more than {MAX_ENUMERATION}), got {k}")


def _maps(round_pair: RoundPair, eps: float, delta: float) -> Callable[[tuple[int, ...]], np.ndarray]:
    """A memoised ``history -> F`` (the simulation map of that round's pair), with the history in errors."""
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def get(history: tuple[int, ...]) -> np.ndarray:
        if history not in cache:
            p, q = _round(round_pair, history)
            try:
                cache[history] = simulation_map(p, q, eps, delta)
            except ValueError as exc:
                raise ValueError(f"the mechanism of the round after history {history!r} is not "
                                 f"({eps:g}, {delta:g})-DP on this pair, so Claim 3.3 does not apply: {exc}") from exc
        return cache[history]

    return get


def composed_map_distribution(round_pair: RoundPair, k: int, epsilon: Any, delta: Any
                              ) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    r"""Exact law of Algorithm 1's output :math:`F^*(Z_1, \dots, Z_k)` for :math:`Z_j \sim U` and for :math:`V`.

    Every round's pair must be :math:`(\epsilon, \delta)`-indistinguishable; its map
    :math:`F_{y_{<j}}` = :func:`dp_course.simulation.simulation_map` ``(p, q, epsilon, delta)``.  The law is

    .. math::

        \Pr[F^*(Z) = y] = \sum_{z \in \{0, 1, \mathrm{U}, \mathrm{V}\}^k} \prod_{j=1}^k P_Z(z_j)\,
        F_{y_{<j}}(y_j \mid z_j),

    summed over all :math:`4^k` leaky sequences :math:`z` for each transcript :math:`y` (Algorithm 1 run
    exactly).  Claim 3.3 says the result equals :func:`transcript_distributions` (up to the maps' accuracy,
    :data:`dp_course.simulation.SIMULATION_ATOL` per round).

    Args:
        round_pair: a function ``history -> (p, q)``.
        k: the number of rounds, an integer >= 1.
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).

    Returns:
        ``(transcripts, law_u, law_v)``: the transcripts in the order of :func:`transcript_distributions` and
        the probabilities of each under :math:`F^*(U_1..U_k)` and :math:`F^*(V_1..V_k)`.

    Raises:
        ValueError: for bad arguments, a round whose pair is not :math:`(\epsilon, \delta)`-indistinguishable
            (the message names its history), or an enumeration beyond :data:`MAX_ENUMERATION` states.

    Source: lecture notes on advanced composition, Claim 3.3 and Algorithm 1.
    """
    round_pair = _check_round_pair(round_pair)
    k = check_int("k", k, lo=1)
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    if k > math.log(MAX_ENUMERATION, 4):  # 4^k leaky sequences (not computed: k may be huge)
        raise ValueError(f"k must be at most {int(np.log(MAX_ENUMERATION) / np.log(4))} for the exact sum over "
                         f"all 4^k leaky sequences, got {k}")
    get_map = _maps(round_pair, eps, delta)
    p_u, p_v = leaky_randomized_response(eps, delta)
    n_leaky = len(LEAKY_OUTCOMES)
    # For each transcript prefix: the joint probability of (z_1..z_j, y_1..y_j), as an array over z (4^j).
    layer: list[tuple[tuple[int, ...], np.ndarray, np.ndarray]] = [((), np.ones(1), np.ones(1))]
    for j in range(k):
        nxt: list[tuple[tuple[int, ...], np.ndarray, np.ndarray]] = []
        for history, w_u, w_v in layer:
            f = get_map(history)                               # shape (4, n_j)
            for y in range(f.shape[1]):
                column = f[:, y]                               # F(y | z_j) for the four values of z_j
                if not column.any():
                    continue
                # new index = old index * 4 + z_j
                nxt.append((history + (y,), np.outer(w_u, p_u * column).ravel(),
                            np.outer(w_v, p_v * column).ravel()))
        if len(nxt) * n_leaky ** (j + 1) > MAX_ENUMERATION:
            raise ValueError(f"the exact enumeration needs more than {MAX_ENUMERATION} states after round {j + 1}; "
                             f"use fewer rounds (k = {k}) or mechanisms with fewer outcomes")
        layer = nxt
    law = {h: (float(w_u.sum()), float(w_v.sum())) for h, w_u, w_v in layer}
    transcripts, _, _ = transcript_distributions(round_pair, k)
    law_u = np.array([law.get(h, (0.0, 0.0))[0] for h in transcripts])
    law_v = np.array([law.get(h, (0.0, 0.0))[1] for h in transcripts])
    return transcripts, law_u, law_v


def run_composed_map(round_pair: RoundPair, z: ArrayLike, epsilon: Any, delta: Any, rng: Any) -> np.ndarray:
    r"""Algorithm 1 on samples: push rows of leaky outcomes through the per-round simulation maps.

    For each row :math:`(z_1, \dots, z_k)` of ``z``, round by round, :math:`y_j` is drawn from
    :math:`F_{y_{<j}}(\cdot \mid z_j)`, where :math:`F_{y_{<j}}` is the simulation map of the pair that
    ``round_pair`` gives for the history so far.  With the rows of ``z`` i.i.d. copies of :math:`U` (e.g. from
    :func:`dp_course.leaky.sample_leaky_randomized_response` with ``size=(n, k)``) the rows of the result
    are samples of the mechanism's transcript on :math:`\mathbf{x}`; with copies of :math:`V`, on
    :math:`\mathbf{x}'` (Claim 3.3).

    Args:
        round_pair: a function ``history -> (p, q)``.
        z: an int array of shape ``(n, k)`` with entries 0-3 (indices into
            :data:`dp_course.leaky.LEAKY_OUTCOMES`).
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).
        rng: a ``numpy.random.Generator``.

    Returns:
        An int array of shape ``(n, k)``: one transcript per row.

    Raises:
        ValueError: for bad arguments or a round that is not :math:`(\epsilon, \delta)`-indistinguishable.

    Source: lecture notes on advanced composition, Algorithm 1.
    """
    round_pair = _check_round_pair(round_pair)
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    rng = check_rng(rng)
    z = np.asarray(z)
    if z.ndim != 2 or z.dtype.kind not in "iu" or (z.size and (z.min() < 0 or z.max() > 3)):
        raise ValueError(f"z must be an int array of shape (n, k) with entries 0-3 (indices into LEAKY_OUTCOMES "
                         f"{LEAKY_OUTCOMES}), got shape {z.shape} and dtype {z.dtype}")
    get_map = _maps(round_pair, eps, delta)
    n, k = z.shape
    y = np.zeros((n, k), dtype=int)
    for j in range(k):
        # the rows that share a history use the same map: handle them together
        histories, group = np.unique(y[:, :j], axis=0, return_inverse=True)
        for g, history in enumerate(histories):
            rows = np.flatnonzero(group.ravel() == g)
            y[rows, j] = apply_simulation_map(get_map(tuple(int(v) for v in history)), z[rows, j], rng)
    return y
