r"""Small interactive mechanisms with exact answer laws, for experiments on concurrent composition.

All of them are :class:`~dp_course.interactive.systems.HiddenStateMechanism` descriptions on two neighbouring
inputs ``b = 0, 1``:

* :func:`randomized_response_system` – randomized response on the bit ``b`` with fresh coins for every query
  (``rounds`` queries: the sequential composition of ``rounds`` one-shot mechanisms);
* :func:`stateless_system` – any one-shot channel per query, fresh coins each time;
* :func:`sticky_randomized_response` – one randomized-response coin flipped *once* and reused: every answer
  is a noisy copy of the same private bit (interactive: the answers are correlated through the hidden coin);
* :func:`sparse_vector_system` – the sparse vector technique with a **single noisy threshold**
  (Lyu, Su & Li 2017, the variant analysed in Lyu 2022, Appendix B), with discrete Laplace noise;
* :func:`laplace_counter_system` – answers at most ``c`` queries with discrete Laplace noise of scale
  ``c / epsilon``, clamped to a finite range (Lemma 7 of Appendix B);
* :func:`guess_and_check_system` – the private Guess-and-Check of Appendix B (Algorithm 1) with the same
  discrete noise: the two previous mechanisms fused, for checking the simulation argument exactly.

The discrete Laplace law :math:`\Pr[Z = k] = \frac{1 - r}{1 + r} r^{|k|}`, :math:`r = e^{-1/s}`, stands in for
the continuous :math:`\mathrm{Lap}(s)` so that answers are finite: for integer-valued queries of sensitivity 1
its privacy guarantees are those of the continuous one (Ghosh, Roughgarden & Sundararajan 2012; Canonne,
Kamath & Steinke 2020, arXiv:2004.00010).

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397,
    Appendix B (Algorithm 1, Lemmas 6-7, Theorem 5).
    M. Lyu, D. Su and N. Li, "Understanding the sparse vector technique for differential privacy", PVLDB 10(6),
    2017, arXiv:1603.01699, Algorithm 1 / Theorem 2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._validation import check_int, check_real, check_real_array
from .systems import HiddenStateMechanism

MAX_CHANNEL_ENTRIES = 10**7
"""Most entries (2 inputs x hidden states x queries x answers) the channel of an example system may have: a cost
guard (80 MB of floats), checked from the arguments before any array is built."""

__all__ = [
    "randomized_response_system",
    "stateless_system",
    "sticky_randomized_response",
    "discrete_laplace_logpmf",
    "discrete_laplace_logsf",
    "sparse_vector_system",
    "laplace_counter_system",
    "guess_and_check_system",
]


def _rr_pair(epsilon: float) -> np.ndarray:
    """Rows b = 0, 1 of randomized response on the bit b: report b w.p. e^eps / (1 + e^eps)."""
    keep = 1.0 / (1.0 + math.exp(-epsilon))           # e^eps/(1+e^eps), finite for every eps >= 0
    flip = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return np.array([[keep, flip], [flip, keep]])


def randomized_response_system(epsilon: float, rounds: int = 1) -> HiddenStateMechanism:
    r"""Randomized response on the private bit ``b``, with fresh coins for each of ``rounds`` queries.

    Each answer equals ``b`` with probability :math:`e^\varepsilon / (1 + e^\varepsilon)`, independently.
    Its worst-case privacy is that of ``rounds``-fold randomized response (no adversary can do better than
    asking).

    Raises:
        ValueError: for ``epsilon`` < 0 or ``rounds`` < 1.
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    rows = _rr_pair(eps)
    return HiddenStateMechanism(np.ones((2, 1)), rows[:, None, None, :], rounds, ("ask",), ("0", "1"))


def _query_labels(query_labels: Any, n: int) -> tuple[str, ...]:
    """The labels of ``n`` queries: ``q0, q1, ...`` by default, else a list or tuple of ``n`` labels."""
    if query_labels is None:
        return tuple(f"q{i}" for i in range(n))
    if not isinstance(query_labels, (list, tuple)) or len(query_labels) != n:
        raise ValueError(f"query_labels must be None or a list or tuple of {n} labels (one per query), "
                         f"got {query_labels!r}")
    return tuple(str(v) for v in query_labels)


def stateless_system(channel: ArrayLike, rounds: int = 1, queries: Any = None,
                     answers: Any = None) -> HiddenStateMechanism:
    r"""A mechanism that answers each query ``x`` with a fresh draw from ``channel[b, x, :]``.

    Args:
        channel: shape ``(2, X, Y)``, one answer pmf per input and query.
        rounds: how many queries it answers.
        queries, answers: optional labels.

    Raises:
        ValueError: for a channel of the wrong shape or rows that are not pmfs.
    """
    ch = check_real_array("channel", channel, lo=0.0)
    if ch.ndim != 3 or ch.shape[0] != 2:
        raise ValueError(f"channel must have shape (2, X, Y): an answer pmf per input and query, got {ch.shape}")
    return HiddenStateMechanism(np.ones((2, 1)), ch[:, None], rounds, () if queries is None else queries,
                                () if answers is None else answers)


def sticky_randomized_response(epsilon: float, flip: float, rounds: int) -> HiddenStateMechanism:
    r"""One randomized-response coin, flipped once and reused: answers are noisy copies of the same bit.

    The mechanism draws :math:`z = b` with probability :math:`e^\varepsilon/(1+e^\varepsilon)` (else
    :math:`1 - b`) once, and answers each query with :math:`z` flipped independently with probability
    ``flip``.  A single answer is randomized response; many answers reveal :math:`z`, never more – so the
    worst-case privacy grows with ``rounds`` towards that of randomized response at :math:`\varepsilon`.

    Args:
        epsilon: >= 0.
        flip: in [0, 1/2].
        rounds: >= 1.

    Raises:
        ValueError: for arguments out of range.
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    flip = check_real("flip", flip, lo=0.0, hi=0.5)
    prior = _rr_pair(eps)                               # prior[b, z]
    copy = np.array([[1.0 - flip, flip], [flip, 1.0 - flip]])   # copy[z, y]
    channel = np.broadcast_to(copy[None, :, None, :], (2, 2, 1, 2)).copy()
    return HiddenStateMechanism(prior, channel, rounds, ("ask",), ("0", "1"))


def _check_integers(name: str, value: ArrayLike) -> np.ndarray:
    """Finite integer values (a scalar or an array), as floats: the discrete Laplace law lives on Z."""
    arr = check_real_array(name, value, allow_empty=True)
    fractional = arr != np.round(arr)
    if fractional.any():
        raise ValueError(f"{name} must be an integer (or an array of integers), got {arr[fractional].flat[0]!r}")
    return arr


def discrete_laplace_logpmf(k: ArrayLike, scale: float) -> np.ndarray:
    r""":math:`\ln \Pr[Z = k]` for the discrete Laplace law :math:`\Pr[Z = k] = \frac{1-r}{1+r} r^{|k|}`,
    :math:`r = e^{-1/\text{scale}}`, at integers ``k``.

    Raises:
        ValueError: for a non-positive scale, or a ``k`` that is not an integer (or an array of them).
    """
    s = check_real("scale", scale, lo=0.0, lo_open=True)
    k = _check_integers("k", k)
    # ln((1-r)/(1+r)) = ln(-expm1(-1/s)) - log1p(e^(-1/s)): accurate for large and small scales
    return math.log(-math.expm1(-1.0 / s)) - math.log1p(math.exp(-1.0 / s)) - np.abs(k) / s


def discrete_laplace_logsf(t: ArrayLike, scale: float) -> np.ndarray:
    r""":math:`\ln \Pr[Z \ge t]` for the discrete Laplace law at integers ``t``.

    .. math:: \Pr[Z \ge t] = \frac{r^t}{1 + r} \ (t \ge 1), \qquad 1 - \frac{r^{1-t}}{1 + r} \ (t \le 0).

    Raises:
        ValueError: for a non-positive scale, or a ``t`` that is not an integer (or an array of them).
    """
    s = check_real("scale", scale, lo=0.0, lo_open=True)
    t = _check_integers("t", t)
    log1pr = math.log1p(math.exp(-1.0 / s))
    upper = -t / s - log1pr                                           # t >= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.log1p(-np.exp(-(1.0 - t) / s - log1pr))           # t <= 0, 1 - r^(1-t)/(1+r) in (0, 1)
    return np.where(t >= 1, upper, lower)


def _check_values(query_values: Any) -> np.ndarray:
    vals = check_real_array("query_values", query_values)
    if vals.ndim != 2 or vals.shape[1] != 2:
        raise ValueError(f"query_values must have shape (X, 2): each query's value on input 0 and on input 1, got "
                         f"{vals.shape}")
    if np.any(vals != np.round(vals)):
        raise ValueError("query_values must be integers (the noise is discrete)")
    return vals.astype(int)


def sparse_vector_system(epsilon: float, c: int, rounds: int, query_values: ArrayLike, threshold: int = 0,
                         threshold_range: int | None = None, query_labels: Any = None) -> HiddenStateMechanism:
    r"""The sparse vector technique with a single noisy threshold, discrete noise, halting after ``c`` "above".

    Program (Lyu 2022, Algorithm 1 with line 7 replaced by :math:`v_i \leftarrow 0`; Lyu, Su & Li 2017):
    draw :math:`\rho \sim \mathrm{DLap}(1/\varepsilon)` **once**; for each query :math:`i` draw
    :math:`\gamma_i \sim \mathrm{DLap}(c/\varepsilon)` and answer "above" if :math:`q_i + \gamma_i \ge T +
    \rho`, else "below"; after the ``c``-th "above" every further answer is "halted".  The threshold noise is
    the hidden state; the law of :math:`\gamma_i` is summed out exactly, so answers are finite.

    To keep the hidden state finite, :math:`\rho` is restricted to :math:`[-R, R]` (``threshold_range``,
    default the smallest :math:`R` with :math:`\Pr[|\rho| > R] < 10^{-4}`) and renormalised; the resulting
    mechanism is a valid mechanism, and its exact privacy is what the library computes.  The truncation is
    **not** a small perturbation of the untruncated :math:`(3\varepsilon, 0)` guarantee: the :math:`3\varepsilon`
    proof shifts :math:`\rho` by one, which needs :math:`\Pr[\rho = r] \le e^{\varepsilon} \Pr[\rho = r + 1]`
    for every :math:`r`, and that fails at the window's edge.  A query worth :math:`R` on one input and
    :math:`R - 1` on the other, asked again and again, makes the pure-DP :math:`\varepsilon` grow without bound
    with the number of queries (``epsilon = 1``, ``c = 1``, ``R = 9``, query ``[9, 8]``, threshold 0: exactly
    1, 3, 6, 10, 14 after 1, 3, 6, 10, 14 queries), while :math:`\delta(3\varepsilon)` stays small
    (about :math:`1.1 \cdot 10^{-5}`).  So the truncated system is :math:`(3\varepsilon, \delta)`-DP with a
    small :math:`\delta`, not pure DP: use it to check arguments on small instances, not as a pure-DP
    implementation.

    Args:
        epsilon: > 0.
        c: number of "above" answers before halting, >= 1.
        rounds: number of queries answered (including "halted" ones), >= 1.
        query_values: shape ``(X, 2)``, integer value of each query on input 0 and on input 1 (sensitivity 1
            means the two differ by at most 1).
        threshold: the integer threshold :math:`T`.
        threshold_range: :math:`R`, or ``None`` for the default.
        query_labels: optional labels of the queries.

    Returns:
        a :class:`~dp_course.interactive.systems.HiddenStateMechanism` with answers ``("below", "above",
        "halted")``.

    Raises:
        ValueError: for arguments out of range.
    """
    eps = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    c = check_int("c", c, lo=1)
    vals = _check_values(query_values)
    threshold = check_int("threshold", threshold, lo=None)
    rho, log_prior = _threshold_prior(eps, threshold_range, 3 * vals.shape[0])
    prior = np.exp(np.broadcast_to(log_prior, (2, rho.size)))
    # P(above | rho, x, b) = P(gamma >= T + rho - q_b(x))
    gap = threshold + rho[None, :, None] - vals.T[:, None, :]             # (2, S, X)
    log_above = discrete_laplace_logsf(gap, c / eps)
    above = np.exp(log_above)
    channel = np.stack([1.0 - above, above, np.zeros_like(above)], axis=-1)   # (2, S, X, 3)
    labels = _query_labels(query_labels, vals.shape[0])
    return HiddenStateMechanism(prior, channel, rounds, labels, ("below", "above", "halted"),
                                halt_after=c, halt_on=(1,), halt_answer=2)


def laplace_counter_system(epsilon: float, c: int, query_values: ArrayLike, low: int, high: int,
                           query_labels: Any = None) -> HiddenStateMechanism:
    r"""Answer at most ``c`` queries with discrete Laplace noise of scale ``c / epsilon``, clamped to
    ``[low, high]`` (Lyu 2022, Appendix B, Lemma 7 with discrete noise).

    Each answer is :math:`\min(\max(q_b(x) + Z, \text{low}), \text{high})` with
    :math:`Z \sim \mathrm{DLap}(c/\varepsilon)`; clamping is post-processing, so ``c`` answers to queries of
    sensitivity 1 are :math:`(\varepsilon, 0)`-DP.

    Args:
        epsilon: > 0.
        c: number of queries answered, >= 1.
        query_values: shape ``(X, 2)``, integer values on the two inputs.
        low, high: the integer range of the answers, ``low < high``.
        query_labels: optional labels.

    Returns:
        a :class:`~dp_course.interactive.systems.HiddenStateMechanism` with answers ``low .. high``.

    Raises:
        ValueError: for arguments out of range.
    """
    eps = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    c = check_int("c", c, lo=1)
    vals = _check_values(query_values)
    low, high = _check_range(low, high, vals.shape[0])
    out = np.arange(low, high + 1)
    scale = c / eps
    logp = _clamped_noise_logpmf(vals.T, out, scale)                     # (2, X, V)
    channel = np.exp(logp)
    labels = _query_labels(query_labels, vals.shape[0])
    return HiddenStateMechanism(np.ones((2, 1)), channel[:, None], c, labels, tuple(str(v) for v in out))



def _check_size(entries: float, what: str) -> None:
    """Refuse a channel of more than MAX_CHANNEL_ENTRIES entries; ``what`` names the parameters and the cause."""
    if entries > MAX_CHANNEL_ENTRIES:
        raise ValueError(f"{what}: the channel would have {entries:.3g} entries, more than MAX_CHANNEL_ENTRIES = "
                         f"{MAX_CHANNEL_ENTRIES:.0e}")


def _check_range(low: Any, high: Any, n_queries: int) -> tuple[int, int]:
    """The answer range ``low .. high`` (integers, low < high), small enough for a channel over ``n_queries``."""
    low = check_int("low", low, lo=None)
    high = check_int("high", high, lo=None)
    if high <= low:
        raise ValueError(f"low and high must be integers with low < high, got low = {low}, high = {high}")
    _check_size(2 * n_queries * (high - low + 1), f"low .. high must span at most a few million values, got "
                f"low = {low}, high = {high}")
    return low, high


def _threshold_prior(epsilon: float, threshold_range: int | None,
                     entries_per_state: int) -> tuple[np.ndarray, np.ndarray]:
    """The integer threshold noise rho ~ DLap(1/eps) restricted to [-R, R], renormalised: (rho, log-prior).

    The channel has ``2 * (2R + 1) * entries_per_state`` entries: refused (naming ``epsilon`` for the default
    ``R``, which grows like 1/epsilon, else ``threshold_range``) beyond :data:`MAX_CHANNEL_ENTRIES`."""
    if threshold_range is None:
        # Pr[|rho| > R] = 2 r^(R+1) / (1 + r) with r = e^-eps: the smallest R with this below 1e-4
        default = math.log(2e4 / (1 + math.exp(-epsilon))) / epsilon
        states = 2.0 * default + 1.0
        if 2.0 * states * entries_per_state > MAX_CHANNEL_ENTRIES:
            _check_size(2.0 * states * entries_per_state,
                        f"epsilon = {epsilon:g} is too small for the default threshold_range (about "
                        f"{default:.3g}, growing like 1/epsilon): pass a larger epsilon or a smaller threshold_range")
        threshold_range = max(1, math.ceil(default) - 1)
    R = check_int("threshold_range", threshold_range, lo=0)
    _check_size(2 * (2 * R + 1) * entries_per_state, f"threshold_range = {R} gives {2 * R + 1} hidden states; pass "
                "a smaller threshold_range")
    rho = np.arange(-R, R + 1)
    log_prior = discrete_laplace_logpmf(rho, 1.0 / epsilon)
    return rho, log_prior - special.logsumexp(log_prior)


def _clamped_noise_logpmf(values: np.ndarray, out: np.ndarray, scale: float) -> np.ndarray:
    """ln Pr[clamp(v + Z, out[0], out[-1]) = o] for Z ~ DLap(scale): shape values.shape + (len(out),)."""
    diff = out - values[..., None]
    logp = discrete_laplace_logpmf(diff, scale)
    # the two ends collect the tails: P(Z <= low - v) = P(Z >= v - low) and P(Z >= high - v)
    logp[..., 0] = discrete_laplace_logsf(-diff[..., 0], scale)
    logp[..., -1] = discrete_laplace_logsf(diff[..., -1], scale)
    return logp


def guess_and_check_system(epsilon: float, c: int, rounds: int, queries: ArrayLike, tolerance: int, low: int,
                           high: int, threshold_range: int | None = None) -> HiddenStateMechanism:
    r"""The private Guess-and-Check (Lyu 2022, Appendix B, Algorithm 1) with discrete Laplace noise.

    Draw :math:`\rho \sim \mathrm{DLap}(1/\varepsilon)` once (restricted to :math:`[-R, R]` as in
    :func:`sparse_vector_system`).  For a query :math:`(f, \tau)`: draw :math:`\gamma \sim
    \mathrm{DLap}(c/\varepsilon)`; if :math:`|f - \tau| + \gamma \ge E + \rho` answer "WRONG" with
    :math:`v = \mathrm{clamp}(f + Z, \text{low}, \text{high})`, :math:`Z \sim \mathrm{DLap}(c/\varepsilon)`,
    else "PASS"; after ``c`` WRONG answers, "HALTED".  It is the system an analyst sees when a simulator
    forwards each query to :func:`sparse_vector_system` (with query values :math:`|f - \tau|`) and, after a
    WRONG, the function :math:`f` to :func:`laplace_counter_system` – the proof of Theorem 5.

    Args:
        epsilon: > 0.
        c: number of WRONG answers before halting, >= 1.
        rounds: number of queries answered.
        queries: shape ``(X, 3)``, each row ``(f on input 0, f on input 1, tau)``, integers.
        tolerance: the integer :math:`E`.
        low, high: the range of the reported values.
        threshold_range: :math:`R` (``None``: default as in :func:`sparse_vector_system`).

    Returns:
        a :class:`~dp_course.interactive.systems.HiddenStateMechanism` with answers ``"PASS"``,
        ``"WRONG v"`` for ``v = low .. high``, and ``"HALTED"``.

    Raises:
        ValueError: for arguments out of range.
    """
    eps = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    c = check_int("c", c, lo=1)
    q = check_real_array("queries", queries)
    if q.ndim != 2 or q.shape[1] != 3 or np.any(q != np.round(q)):
        raise ValueError(f"queries must be an integer array of shape (X, 3): (f on input 0, f on input 1, tau), got "
                         f"shape {q.shape}")
    q = q.astype(int)
    tolerance = check_int("tolerance", tolerance, lo=None)
    low, high = _check_range(low, high, q.shape[0])
    rho, log_prior = _threshold_prior(eps, threshold_range, q.shape[0] * (high - low + 3))
    f = q[:, :2].T                                                      # (2, X): f on each input
    dev = np.abs(f - q[None, :, 2])                                     # |f - tau|
    log_wrong = discrete_laplace_logsf(tolerance + rho[None, :, None] - dev[:, None, :], c / eps)   # (2, S, X)
    out = np.arange(low, high + 1)
    log_v = _clamped_noise_logpmf(f, out, c / eps)                     # (2, X, V)
    wrong = np.exp(log_wrong[..., None] + log_v[:, None, :, :])         # (2, S, X, V)
    passed = -np.expm1(log_wrong)[..., None]
    channel = np.concatenate([passed, wrong, np.zeros_like(passed)], axis=-1)
    labels = tuple(f"f=({a},{b}) tau={t}" for a, b, t in q)
    answers = ("PASS", *(f"WRONG {v}" for v in out), "HALTED")
    prior = np.exp(np.broadcast_to(log_prior, (2, rho.size)))
    return HiddenStateMechanism(prior, channel, rounds, labels, answers, halt_after=c,
                                halt_on=tuple(range(1, 1 + out.size)), halt_answer=len(answers) - 1)
