r"""Interactive mechanisms on two neighbouring inputs, over finite query and answer sets.

An *interactive system* answers a stream of queries; its answer to the next query may depend on everything it
was asked and answered before (Lyu 2022, Definition 1).  An *interactive mechanism* run on two neighbouring
data sets gives a pair of systems :math:`(\mathcal M^0, \mathcal M^1)`; as in the paper we index the two
inputs by a bit :math:`b \in \{0, 1\}` and describe both systems at once:

.. math::

    \mathcal M^b\bigl((x_1, y_1), \dots, (x_t, y_t);\ x_{t+1}\bigr) \in \Delta(\mathcal Y),

the law of the answer :math:`y_{t+1}` to the query :math:`x_{t+1}` given the system's own history.  Queries
and answers are integer indices ``0 .. n - 1`` (``queries`` and ``answers`` hold display labels); a history is
a tuple of ``(query, answer)`` pairs.  Each mechanism answers at most ``rounds`` queries.

Three concrete descriptions, all frozen:

* :class:`HiddenStateMechanism` – a hidden state drawn once (its law may depend on ``b``), answers drawn
  independently given the state; optionally the mechanism *halts* after a number of given answers.  The
  answer law given a history is the posterior mixture, computed in log-space.  Randomized response with fresh
  coins, "sticky" randomized response and the sparse vector technique with a single noisy threshold are all of
  this form (see :mod:`dp_course.interactive.examples`).
* :class:`FunctionMechanism` – any rule ``respond(b, history, query) -> pmf``, checked on every call.
* :class:`TableMechanism` – a mechanism given by its joint answer table
  :math:`M^b(y_1, \dots, y_T \mid x_1, \dots, x_T)` (the paper's eq. (14)); used for the four systems of the
  decomposition theorem.

:func:`concurrent` and :func:`sequential` combine mechanisms into a :class:`Composition`: an adversary talks to
all of them, interleaving its queries freely (concurrent, :math:`\mathrm{COMP}(\mathcal M_1, \dots,
\mathcal M_k)` of the paper) or finishing with one before it starts the next (sequential).  Each mechanism
sees only its own history.

Answer laws are memoised per history, so that enumerating transcripts or searching for the best adversary
evaluates each one once.

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397,
    Section 1.1 (Definitions 1 and 2, concurrent composition).
    S. Vadhan and T. Wang, "Concurrent composition of differential privacy", TCC 2021, arXiv:2105.14427.
"""

from __future__ import annotations

import abc
import itertools
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._validation import check_int, check_real, check_real_array

__all__ = [
    "History",
    "InteractiveMechanism",
    "HiddenStateMechanism",
    "FunctionMechanism",
    "TableMechanism",
    "Composition",
    "concurrent",
    "sequential",
    "as_composition",
    "answer_table",
]

History = tuple[tuple[int, int], ...]
"""A mechanism's own history: ``((query, answer), ...)`` as integer indices."""

PMF_ATOL = 1e-9
"""How far from 1 an answer law may sum."""


def _label_list(name: str, labels: Any) -> tuple[str, ...]:
    """Labels: a list or tuple (or 1-D array) of strings or integers, as a tuple of strings."""
    labels = labels.tolist() if isinstance(labels, np.ndarray) and labels.ndim == 1 else labels
    if not isinstance(labels, (list, tuple)) or not all(isinstance(v, (str, numbers.Integral))
                                                         and not isinstance(v, (bool, np.bool_)) for v in labels):
        raise ValueError(f"{name} must be a list or tuple of labels (strings or integers), got {labels!r}")
    return tuple(str(v) for v in labels)


def _labels(name: str, labels: Sequence[Any] | None, n: int) -> tuple[str, ...]:
    out = () if labels is None else _label_list(name, labels)
    if not out:
        return tuple(str(i) for i in range(n))
    if len(out) != n:
        raise ValueError(f"{name} must have {n} labels (one per index), got {len(out)}")
    return out


def _check_history(history: Any, n_queries: int, n_answers: int, rounds: int) -> History:
    try:
        hist = tuple((int(x), int(y)) for x, y in history)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"history must be a sequence of (query, answer) index pairs, got {history!r}") from exc
    if len(hist) >= rounds:
        raise ValueError(f"history has {len(hist)} entries, but the mechanism answers at most rounds = {rounds} "
                         "queries, so there is no next answer")
    for x, y in hist:
        if not (0 <= x < n_queries and 0 <= y < n_answers):
            raise ValueError(f"history entry ({x}, {y}) out of range: queries are 0..{n_queries - 1}, answers "
                             f"0..{n_answers - 1}")
    return hist


class InteractiveMechanism(abc.ABC):
    """A pair of interactive systems :math:`(\\mathcal M^0, \\mathcal M^1)` on finite query and answer sets.

    Subclasses set ``queries``, ``answers`` (labels), ``rounds`` and implement :meth:`_log_answer_pmfs`.
    """

    queries: tuple[str, ...]
    answers: tuple[str, ...]
    rounds: int

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    @property
    def n_answers(self) -> int:
        return len(self.answers)

    @abc.abstractmethod
    def _log_answer_pmfs(self, history: History, query: int) -> np.ndarray:
        """``ln Pr[M^b(history, query) = y]`` as an array of shape ``(2, n_answers)`` (no validation)."""

    def _cache(self) -> dict:
        """The memo of answer laws (created on first use, so that subclasses need not declare it)."""
        memo = getattr(self, "_memo", None)
        if memo is None:
            memo = {}
            object.__setattr__(self, "_memo", memo)
        return memo

    def log_answer_pmfs(self, history: Any, query: Any) -> np.ndarray:
        r"""Log answer laws of both systems: row ``b`` is :math:`\ln \Pr[\mathcal M^b(h, x) = y]` over answers ``y``.

        Args:
            history: the mechanism's own history, a sequence of ``(query, answer)`` index pairs with fewer than
                ``rounds`` entries.
            query: the next query, an index in ``0 .. n_queries - 1``.

        Returns:
            ndarray of shape ``(2, n_answers)`` (``-inf`` for impossible answers); memoised.

        Raises:
            ValueError: for an invalid history or query.
        """
        hist = _check_history(history, self.n_queries, self.n_answers, self.rounds)
        x = check_int("query", query, lo=0, hi=self.n_queries - 1)
        return self._log_pmfs_unchecked(hist, x)

    def _log_pmfs_unchecked(self, history: History, query: int) -> np.ndarray:
        memo = self._cache()
        key = (history, query)
        out = memo.get(key)
        if out is None:
            out = self._log_answer_pmfs(history, query)
            memo[key] = out
        return out

    def answer_pmfs(self, history: Any, query: Any) -> np.ndarray:
        """The answer laws of :meth:`log_answer_pmfs`, as probabilities (shape ``(2, n_answers)``)."""
        return np.exp(self.log_answer_pmfs(history, query))

    def log_history_probs(self, history: Any) -> np.ndarray:
        r""":math:`\ln \prod_t \Pr[\mathcal M^b(h_{<t}, x_t) = y_t]` for ``b = 0, 1`` (the paper's eq. (14))."""
        try:
            hist = tuple((int(x), int(y)) for x, y in history)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"history must be a sequence of (query, answer) index pairs, got {history!r}") from exc
        if len(hist) > self.rounds:
            raise ValueError(f"history has {len(hist)} entries, more than rounds = {self.rounds}")
        total = np.zeros(2)
        for t, (x, y) in enumerate(hist):
            total = total + self.log_answer_pmfs(hist[:t], x)[:, y]
        return total


def _check_log_pmf_rows(name: str, pmfs: Any, n_answers: int) -> np.ndarray:
    arr = check_real_array(name, pmfs, lo=0.0, hi=1.0 + PMF_ATOL)
    if arr.shape != (2, n_answers):
        raise ValueError(f"{name} must have shape (2, {n_answers}) (one answer law per input b), got {arr.shape}")
    sums = arr.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > PMF_ATOL):
        raise ValueError(f"{name}: each answer law must sum to 1 (within {PMF_ATOL:g}), got sums {sums}")
    with np.errstate(divide="ignore"):
        return np.log(arr)


@dataclass(frozen=True, eq=False)
class HiddenStateMechanism(InteractiveMechanism):
    r"""A mechanism with a hidden state drawn once, answering each query independently given the state.

    .. math::

        \Pr[\mathcal M^b = (y_1..y_t) \mid x_1..x_t] = \sum_s \pi_b(s) \prod_{i \le t} C_b(y_i \mid s, x_i),

    so the answer to the next query is the posterior mixture
    :math:`\sum_s \Pr[s \mid h, b]\, C_b(\cdot \mid s, x)`.  With ``halt_after = c`` the mechanism answers
    ``halt_answer`` with probability 1 once ``c`` of its answers were in ``halt_on`` (the sparse vector
    technique stops after ``c`` "above threshold" answers).

    Args:
        prior: shape ``(2, S)``, the law :math:`\pi_b` of the hidden state for each input.
        channel: shape ``(2, S, X, Y)``, the answer law :math:`C_b(\cdot \mid s, x)` (each last-axis row a pmf).
        rounds: how many queries the mechanism answers, >= 1.
        queries, answers: display labels (default ``"0", "1", ...``).
        halt_after: ``None`` or an integer >= 1.
        halt_on: answer indices that count towards halting.
        halt_answer: the answer index given after halting.

    Raises:
        ValueError: for arrays of the wrong shape, rows that are not pmfs, or bad halting settings.
    """

    prior: np.ndarray
    channel: np.ndarray
    rounds: int
    queries: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    halt_after: int | None = None
    halt_on: tuple[int, ...] = ()
    halt_answer: int = 0
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _weights: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _log_prior: np.ndarray = field(init=False, repr=False, compare=False)
    _log_channel: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prior = check_real_array("prior", self.prior, lo=0.0, hi=1.0 + PMF_ATOL)
        channel = check_real_array("channel", self.channel, lo=0.0, hi=1.0 + PMF_ATOL)
        if prior.ndim != 2 or prior.shape[0] != 2:
            raise ValueError(f"prior must have shape (2, S): one law of the hidden state per input, got {prior.shape}")
        if channel.ndim != 4 or channel.shape[:2] != prior.shape:
            raise ValueError(f"channel must have shape (2, S, X, Y) with (2, S) = {prior.shape}, got {channel.shape}")
        if np.any(np.abs(prior.sum(axis=1) - 1) > PMF_ATOL):
            raise ValueError(f"each row of prior must sum to 1, got sums {prior.sum(axis=1)}")
        sums = channel.sum(axis=-1)
        if np.any(np.abs(sums - 1) > PMF_ATOL):
            bad = tuple(int(i) for i in np.argwhere(np.abs(sums - 1) > PMF_ATOL)[0])
            raise ValueError(f"channel[b, s, x, :] must be a pmf for every (b, s, x); channel{list(bad)} sums to "
                             f"{sums[bad]!r}")
        n_q, n_a = channel.shape[2], channel.shape[3]
        object.__setattr__(self, "rounds", check_int("rounds", self.rounds, lo=1))
        object.__setattr__(self, "queries", _labels("queries", self.queries, n_q))
        object.__setattr__(self, "answers", _labels("answers", self.answers, n_a))
        if self.halt_after is not None:
            object.__setattr__(self, "halt_after", check_int("halt_after", self.halt_after, lo=1))
            object.__setattr__(self, "halt_answer", check_int("halt_answer", self.halt_answer, lo=0, hi=n_a - 1))
            on = tuple(check_int("halt_on", v, lo=0, hi=n_a - 1) for v in self.halt_on)
            if not on:
                raise ValueError("halt_on must list at least one answer index when halt_after is set")
            object.__setattr__(self, "halt_on", on)
        object.__setattr__(self, "prior", prior)
        object.__setattr__(self, "channel", channel)
        with np.errstate(divide="ignore"):
            object.__setattr__(self, "_log_prior", np.log(prior))
            object.__setattr__(self, "_log_channel", np.log(channel))

    @property
    def log_prior(self) -> np.ndarray:
        """``ln prior`` (``-inf`` where a state is impossible)."""
        return self._log_prior

    @property
    def log_channel(self) -> np.ndarray:
        """``ln channel`` (``-inf`` where an answer is impossible)."""
        return self._log_channel

    def _state_weights(self, history: History) -> np.ndarray:
        """``ln pi_b(s) + sum_i ln C_b(y_i | s, x_i)``, shape ``(2, S)``, memoised along prefixes."""
        if not history:
            return self._log_prior
        out = self._weights.get(history)
        if out is None:
            x, y = history[-1]
            out = self._state_weights(history[:-1]) + self._log_channel[:, :, x, y]
            self._weights[history] = out
        return out

    def _log_answer_pmfs(self, history: History, query: int) -> np.ndarray:
        n_a = self.n_answers
        if self.halt_after is not None and sum(y in self.halt_on for _, y in history) >= self.halt_after:
            out = np.full((2, n_a), -np.inf)
            out[:, self.halt_answer] = 0.0
            return out
        w = self._state_weights(history)                                   # (2, S)
        norm = special.logsumexp(w, axis=1, keepdims=True)                 # ln Pr[history | b]
        joint = special.logsumexp(w[:, :, None] + self._log_channel[:, :, query, :], axis=1)   # (2, Y)
        with np.errstate(invalid="ignore"):
            out = joint - norm
        # a history impossible under b: its continuations carry no mass, any law will do (uniform)
        impossible = ~np.isfinite(norm[:, 0])
        out[impossible] = -math.log(n_a)
        return out


@dataclass(frozen=True, eq=False)
class FunctionMechanism(InteractiveMechanism):
    r"""A mechanism given by a rule ``respond(b, history, query)`` returning the answer pmf.

    The rule receives plain data – ``b`` in {0, 1}, the mechanism's own history as a tuple of ``(query,
    answer)`` index pairs, the query index – and must return a pmf over the ``len(answers)`` answers.  Every
    returned law is checked (shape, non-negative, sums to 1) and memoised.

    Args:
        respond: the rule.
        queries, answers: labels; their lengths fix the numbers of queries and answers.
        rounds: how many queries the mechanism answers, >= 1.

    Raises:
        ValueError: for empty label lists or ``rounds`` < 1; when called, for a rule that returns no pmf.
    """

    respond: Callable[[int, History, int], ArrayLike]
    queries: tuple[str, ...]
    answers: tuple[str, ...]
    rounds: int
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.respond):
            raise ValueError(f"respond must be a function (b, history, query) -> pmf, got {self.respond!r}")
        object.__setattr__(self, "queries", _label_list("queries", self.queries))
        object.__setattr__(self, "answers", _label_list("answers", self.answers))
        if not self.queries or not self.answers:
            raise ValueError(f"queries and answers must be non-empty label lists, got {len(self.queries)} queries "
                             f"and {len(self.answers)} answers")
        object.__setattr__(self, "rounds", check_int("rounds", self.rounds, lo=1))

    def _log_answer_pmfs(self, history: History, query: int) -> np.ndarray:
        rows = [np.asarray(self.respond(b, history, query), dtype=float) for b in (0, 1)]
        return _check_log_pmf_rows(f"respond(b, {history}, {query})", np.stack(rows), self.n_answers)


def _index_tuples(n: int, length: int) -> list[tuple[int, ...]]:
    return list(itertools.product(range(n), repeat=length))


def answer_table(mechanism: InteractiveMechanism) -> np.ndarray:
    r"""The joint answer table :math:`M^b(y_1..y_T \mid x_1..x_T)` of a mechanism over its ``rounds`` queries.

    Returns:
        ndarray of shape ``(2, X**T, Y**T)``: row ``i`` is the ``i``-th query sequence and column ``j`` the
        ``j``-th answer sequence in lexicographic order (``itertools.product``).  Each row sums to 1.

    Raises:
        ValueError: if the table would have more than 10^6 entries per input.

    Source: Lyu 2022 (arXiv:2207.09397), eq. (14); knowing this table for every sequence determines the system.
    """
    if not isinstance(mechanism, InteractiveMechanism):
        raise ValueError(f"mechanism must be an InteractiveMechanism, got {type(mechanism).__name__}")
    T, nx, ny = mechanism.rounds, mechanism.n_queries, mechanism.n_answers
    if (nx * ny) ** T > 10**6:
        raise ValueError(f"the answer table would have {(nx * ny) ** T} entries per input (more than 10^6); "
                         "use fewer rounds, queries or answers")
    xs, ys = _index_tuples(nx, T), _index_tuples(ny, T)
    table = np.empty((2, len(xs), len(ys)))
    for i, xseq in enumerate(xs):
        for j, yseq in enumerate(ys):
            table[:, i, j] = np.exp(mechanism.log_history_probs(tuple(zip(xseq, yseq, strict=True))))
    return table


@dataclass(frozen=True, eq=False)
class TableMechanism(InteractiveMechanism):
    r"""A mechanism given by its joint answer tables :math:`M^b(y_1..y_T \mid x_1..x_T)` (layout of
    :func:`answer_table`).

    The answer law given a history is the ratio of two marginals of the table,
    :math:`M^b(y_{\le t+1} \mid x_{\le t+1}) / M^b(y_{\le t} \mid x_{\le t})`, which does not depend on the
    later queries when the table describes a system (checked on construction: the *causality* condition, the
    paper's eq. (26)).  After a history of probability 0 under ``b`` the law is taken uniform.

    Args:
        table: shape ``(2, X**T, Y**T)``, non-negative, each row summing to 1.
        rounds: ``T``, >= 1 (the numbers of queries ``X`` and answers ``Y`` follow from the shape).
        queries, answers: optional labels.
        atol: how far from causal (and rows from summing to 1) the table may be, default 1e-9.

    Raises:
        ValueError: if the shape does not fit ``rounds``, a row is not a pmf, or the table is not causal
            (within ``atol``).
    """

    table: np.ndarray
    rounds: int
    queries: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    atol: float = PMF_ATOL
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        T = check_int("rounds", self.rounds, lo=1)
        table = check_real_array("table", self.table, lo=0.0, hi=1.0 + PMF_ATOL)
        nx = round(table.shape[1] ** (1.0 / T)) if table.ndim == 3 else 0
        ny = round(table.shape[2] ** (1.0 / T)) if table.ndim == 3 else 0
        if table.ndim != 3 or table.shape[0] != 2 or nx < 1 or ny < 1 or table.shape[1:] != (nx**T, ny**T):
            raise ValueError(f"table must have shape (2, X**T, Y**T) with T = rounds = {T}, got {table.shape}")
        atol = check_real("atol", self.atol, lo=0.0, hi=0.01)
        if np.any(np.abs(table.sum(axis=2) - 1) > atol):
            raise ValueError("each row of table (one query sequence) must be a pmf over the answer sequences")
        full = table.reshape((2,) + (nx,) * T + (ny,) * T)
        for t in range(1, T):
            # summing out the answers after round t must leave a function of the first t queries only:
            # the marginal may not vary along the axes of the later queries x_{t+1}, ..., x_T
            marg = full.sum(axis=tuple(range(1 + T + t, 1 + 2 * T)))
            later = tuple(range(1 + t, 1 + T))
            gap = float(np.max(np.max(marg, axis=later) - np.min(marg, axis=later)))
            if gap > atol:
                raise ValueError(f"table is not causal: the law of the first {t} answers changes with later queries "
                                 f"(by up to {gap:.3g}); it does not describe an interactive system")
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "rounds", T)
        object.__setattr__(self, "queries", _labels("queries", self.queries, nx))
        object.__setattr__(self, "answers", _labels("answers", self.answers, ny))
        object.__setattr__(self, "_full", full)

    def _log_answer_pmfs(self, history: History, query: int) -> np.ndarray:
        T, t = self.rounds, len(history)
        full = self._full  # type: ignore[attr-defined]
        xs = [x for x, _ in history] + [query] + [0] * (T - t - 1)
        ys = [y for _, y in history]
        sub = full[(slice(None), *xs, *ys)]                          # (2, Y, Y, ...) over answers t+1..T
        nxt = sub.reshape(2, self.n_answers, -1).sum(axis=2)         # (2, Y)
        tot = nxt.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(nxt) - np.log(tot)
        out[tot[:, 0] <= 0] = -math.log(self.n_answers)
        return out


@dataclass(frozen=True)
class Composition:
    r"""Several mechanisms run on the same input, talked to by one adversary.

    ``order = "concurrent"``: the adversary may interleave its queries arbitrarily (the paper's
    :math:`\mathrm{COMP}(\mathcal M_1, \dots, \mathcal M_k)`); ``order = "sequential"``: it finishes all queries
    to mechanism ``i`` before its first query to ``i + 1`` (still choosing each query adaptively).  Each
    mechanism answers at most its own ``rounds`` queries and sees only its own history.

    Build it with :func:`concurrent` or :func:`sequential`.
    """

    mechanisms: tuple[InteractiveMechanism, ...]
    order: str = "concurrent"

    def __post_init__(self) -> None:
        mechs = tuple(self.mechanisms) if isinstance(self.mechanisms, (tuple, list)) else ()
        if not mechs:
            raise ValueError(f"mechanisms must be a non-empty tuple of mechanisms, got {self.mechanisms!r}")
        for i, m in enumerate(mechs):
            if not isinstance(m, InteractiveMechanism):
                raise ValueError(f"mechanisms[{i}] must be an InteractiveMechanism, got {type(m).__name__}")
        if not isinstance(self.order, str) or self.order not in ("concurrent", "sequential"):
            raise ValueError(f"order must be 'concurrent' or 'sequential', got {self.order!r}")
        object.__setattr__(self, "mechanisms", mechs)

    @property
    def rounds(self) -> tuple[int, ...]:
        return tuple(m.rounds for m in self.mechanisms)

    def allowed(self, state: tuple[History, ...]) -> list[int]:
        """Indices of the mechanisms the adversary may query next, given each mechanism's own history."""
        if type(state) is not tuple or len(state) != len(self.mechanisms) or any(type(h) is not tuple for h in state):
            raise ValueError(f"state must be a tuple of {len(self.mechanisms)} histories (tuples), got {state!r}")
        open_ = [i for i, m in enumerate(self.mechanisms) if len(state[i]) < m.rounds]
        if self.order == "sequential":
            return open_[:1]
        return open_


def concurrent(*mechanisms: InteractiveMechanism) -> Composition:
    """The concurrent composition COMP(M_1, ..., M_k): queries may be interleaved in any adaptive order."""
    return Composition(tuple(mechanisms), "concurrent")


def sequential(*mechanisms: InteractiveMechanism) -> Composition:
    """The sequential composition: all queries to M_1 first, then to M_2, ... (each chosen adaptively)."""
    return Composition(tuple(mechanisms), "sequential")


def as_composition(system: Any) -> Composition:
    """A single mechanism becomes a composition of one; a composition is returned as is."""
    if isinstance(system, Composition):
        return system
    if isinstance(system, InteractiveMechanism):
        return Composition((system,), "concurrent")
    raise ValueError(f"system must be an InteractiveMechanism or a Composition (from concurrent(...) or "
                     f"sequential(...)), got {type(system).__name__}")
