r"""Exact transcript distributions of an adversary talking to a system, for both neighbouring inputs.

For a fixed adversary :math:`\mathcal A` the transcript :math:`\tau = ((i_1, x_1, y_1), \dots)` has probability

.. math::

    \Pr[\mathrm{IT}(\mathcal A : \mathcal M_1^b, \dots, \mathcal M_k^b) = \tau]
    = \prod_t \Pr[\mathcal A(\tau_{<t}) = (i_t, x_t)] \cdot \prod_t
      \Pr[\mathcal M_{i_t}^b(h_{i_t}, x_t) = y_t],

where :math:`h_i` is mechanism :math:`i`'s own history before step :math:`t` (Lyu 2022, eq. (16); each
mechanism sees only its own queries).  :func:`transcript_distribution` enumerates every transcript of positive
probability (depth-first, log-space, answer laws memoised in the mechanisms) and returns both laws, from which
the hockey-stick and Rényi divergences of the whole interaction follow (:mod:`dp_course.divergences`).

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397,
    Section 1.1 and eq. (16).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int, check_real_array
from ..divergences import privacy_profile, renyi_divergence
from ..pld import DiscretePLD
from .adversaries import Adversary, Transcript, check_transcript
from .systems import Composition, as_composition

__all__ = ["TranscriptDistribution", "transcript_distribution"]

MAX_TRANSCRIPTS = 10**6
"""Refuse enumerations with more transcripts than this."""


def _check_direction(direction: Any) -> str:
    if not isinstance(direction, str) or direction not in ("both", "forward", "backward"):
        raise ValueError(f"direction must be 'both' (max of the two orders), 'forward' (b = 0 against b = 1) or "
                         f"'backward' (b = 1 against b = 0), got {direction!r}")
    return direction


@dataclass(frozen=True)
class TranscriptDistribution:
    r"""The laws of the transcript for the two inputs: ``P`` (input ``b = 0``) and ``Q`` (``b = 1``).

    Attributes:
        transcripts: the transcripts of positive probability under ``P`` or ``Q``, each a tuple of
            ``(mechanism, query, answer)`` triples.
        log_p, log_q: their log-probabilities (``-inf`` where impossible).
    """

    transcripts: tuple[Transcript, ...]
    log_p: np.ndarray
    log_q: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.transcripts, (tuple, list)):
            raise ValueError(f"transcripts must be a tuple of transcripts, got {type(self.transcripts).__name__}")
        for t in self.transcripts:
            check_transcript(t, "transcripts")
        for name in ("log_p", "log_q"):
            logs = check_real_array(name, getattr(self, name), hi=1e-9, allow_inf=True, ndim=1, allow_empty=True)
            if logs.shape != (len(self.transcripts),):
                raise ValueError(f"{name} must have one log-probability per transcript ({len(self.transcripts)}), "
                                 f"got shape {logs.shape}")

    @property
    def p(self) -> np.ndarray:
        """Transcript probabilities under input ``b = 0``."""
        return np.exp(self.log_p)

    @property
    def q(self) -> np.ndarray:
        """Transcript probabilities under input ``b = 1``."""
        return np.exp(self.log_q)

    def _pmfs(self) -> tuple[np.ndarray, np.ndarray]:
        p, q = self.p, self.q
        lost = (np.isfinite(self.log_p) & (p == 0)) | (np.isfinite(self.log_q) & (q == 0))
        if lost.any():
            raise ValueError("some transcript probabilities are below the smallest float (about 1e-308), so the "
                             "divergences cannot be computed from the pmfs; use fewer rounds or larger noise")
        return p / p.sum(), q / q.sum()

    def delta(self, epsilon: ArrayLike, direction: str = "both") -> float | np.ndarray:
        r"""Hockey-stick divergence of the two transcript laws: the :math:`\delta(\varepsilon)` of this adversary.

        ``direction = "both"`` gives :math:`\max(H_{e^\varepsilon}(P\|Q), H_{e^\varepsilon}(Q\|P))`
        (:func:`dp_course.divergences.privacy_profile`); ``"forward"`` only :math:`H(P\|Q)`, ``"backward"``
        only :math:`H(Q\|P)`.

        Raises:
            ValueError: for a negative ``epsilon`` or an unknown direction.
        """
        direction = _check_direction(direction)
        p, q = self._pmfs()
        if direction == "backward":
            p, q = q, p
        return privacy_profile(p, q, epsilon, symmetric=direction == "both")

    def renyi(self, alpha: ArrayLike, direction: str = "both") -> float | np.ndarray:
        r"""Rényi divergence of order ``alpha`` of the two transcript laws (max of both orders by default).

        Uses :func:`dp_course.divergences.renyi_divergence`.

        Raises:
            ValueError: for an order <= 0 or an unknown direction.
        """
        direction = _check_direction(direction)
        p, q = self._pmfs()
        if direction == "forward":
            return renyi_divergence(p, q, alpha)
        if direction == "backward":
            return renyi_divergence(q, p, alpha)
        return np.maximum(renyi_divergence(p, q, alpha), renyi_divergence(q, p, alpha)) \
            if np.ndim(alpha) else max(renyi_divergence(p, q, alpha), renyi_divergence(q, p, alpha))

    def epsilon(self, direction: str = "both") -> float:
        r"""The largest privacy loss :math:`|\ln(P(\tau)/Q(\tau))|` over transcripts (``inf`` if one is impossible
        under one input only): the pure-DP :math:`\varepsilon` of this adversary."""
        direction = _check_direction(direction)
        with np.errstate(invalid="ignore"):
            fwd = self.log_p - self.log_q
        fwd_max = float(np.max(np.where(np.isfinite(self.log_p), fwd, -np.inf)))
        bwd_max = float(np.max(np.where(np.isfinite(self.log_q), -fwd, -np.inf)))
        return {"forward": fwd_max, "backward": bwd_max, "both": max(fwd_max, bwd_max)}[direction]

    def pld(self, direction: str = "forward") -> DiscretePLD:
        """The exact privacy loss distribution of the interaction (``"forward"``: loss ln(P/Q) under ``P``)."""
        if _check_direction(direction) == "both":
            raise ValueError("a PLD has one direction: pass direction='forward' or 'backward'")
        p, q = self._pmfs()
        return DiscretePLD.from_pmfs(p, q) if direction == "forward" else DiscretePLD.from_pmfs(q, p)



def transcript_distribution(adversary: Adversary, system: Any,
                            max_transcripts: int = MAX_TRANSCRIPTS) -> TranscriptDistribution:
    r"""Every transcript of the interaction between ``adversary`` and ``system``, with its probability under
    both inputs.

    .. math::

        \ln P(\tau) = \sum_t \ln \Pr[\mathcal A(\tau_{<t}) = (i_t, x_t)]
                     + \sum_t \ln \Pr[\mathcal M^0_{i_t}(h_{i_t}, x_t) = y_t],

    and :math:`\ln Q(\tau)` the same with :math:`\mathcal M^1`.  The interaction ends when the adversary stops
    (returns ``None``); it must stop once every mechanism has answered its ``rounds`` queries.

    Args:
        adversary: an :class:`~dp_course.interactive.adversaries.Adversary`.
        system: an :class:`~dp_course.interactive.systems.InteractiveMechanism` or a
            :class:`~dp_course.interactive.systems.Composition`.
        max_transcripts: refuse to enumerate more transcripts than this (default 10^6).

    Returns:
        :class:`TranscriptDistribution`.

    Raises:
        ValueError: if the adversary queries a mechanism that does not exist, is exhausted, or is not allowed
            by a sequential order; sends a query out of range; or keeps going after every mechanism is done;
            or if the enumeration exceeds ``max_transcripts``.

    Source: Lyu 2022 (arXiv:2207.09397), eq. (16).
    """
    if not isinstance(adversary, Adversary):
        raise ValueError(f"adversary must be an Adversary (dp_course.interactive.Adversary(policy)), got "
                         f"{type(adversary).__name__}")
    comp: Composition = as_composition(system)
    max_transcripts = check_int("max_transcripts", max_transcripts, lo=1)
    mechs, k = comp.mechanisms, len(comp.mechanisms)
    out_t: list[Transcript] = []
    out_lp: list[float] = []
    out_lq: list[float] = []

    def visit(transcript: Transcript, state: tuple, logs: np.ndarray) -> None:
        actions = adversary.action_probs(transcript)
        if not actions:
            if len(out_t) >= max_transcripts:
                raise ValueError(f"more than max_transcripts = {max_transcripts} transcripts; use a smaller system")
            out_t.append(transcript)
            out_lp.append(float(logs[0]))
            out_lq.append(float(logs[1]))
            return
        allowed = comp.allowed(state)
        for (i, x), a in actions:
            if i >= k:
                raise ValueError(f"{adversary.name} queried mechanism {i}, but there are only {k} (0..{k - 1})")
            if i not in allowed:
                why = ("it has answered all its rounds" if len(state[i]) >= mechs[i].rounds else
                       f"the order is sequential and mechanism {allowed[0] if allowed else None} is not finished")
                raise ValueError(f"{adversary.name} queried mechanism {i} after transcript {transcript}, but {why}")
            if x >= mechs[i].n_queries:
                raise ValueError(f"{adversary.name} sent query {x} to mechanism {i}, which has queries "
                                 f"0..{mechs[i].n_queries - 1}")
            lp_answers = mechs[i]._log_pmfs_unchecked(state[i], x)          # (2, Y), memoised
            log_a = np.log(a)
            for y in range(mechs[i].n_answers):
                step = lp_answers[:, y]
                if np.all(np.isneginf(step)):
                    continue
                new_state = state[:i] + (state[i] + ((x, y),),) + state[i + 1:]
                visit(transcript + ((i, x, y),), new_state, logs + log_a + step)

    visit((), tuple(() for _ in range(k)), np.zeros(2))
    log_p, log_q = np.array(out_lp), np.array(out_lq)
    return TranscriptDistribution(tuple(out_t), check_real_array("log_p", log_p, hi=1e-9, allow_inf=True),
                                  check_real_array("log_q", log_q, hi=1e-9, allow_inf=True))


def describe_transcript(transcript: Transcript, system: Any) -> str:
    """A readable line for a transcript: ``M1: ask -> 1 | M2: reveal -> nothing | ...`` (labels of the system).

    Raises:
        ValueError: if an entry does not fit the system.
    """
    comp = as_composition(system)
    parts = []
    for i, x, y in check_transcript(transcript):
        if not (0 <= i < len(comp.mechanisms)):
            raise ValueError(f"transcript entry ({i}, {x}, {y}) names mechanism {i}, but there are "
                             f"{len(comp.mechanisms)}")
        m = comp.mechanisms[i]
        if not (0 <= x < m.n_queries and 0 <= y < m.n_answers):
            raise ValueError(f"transcript entry ({i}, {x}, {y}) is out of range for mechanism {i}")
        name = f"M{i + 1}: " if len(comp.mechanisms) > 1 else ""
        parts.append(f"{name}{m.queries[x]} -> {m.answers[y]}")
    return " | ".join(parts) if parts else "(empty)"
