r"""Adversaries: (possibly randomised) policies that choose the next query from the transcript so far.

An adversary talking to a :class:`~dp_course.interactive.systems.Composition` of ``k`` mechanisms sees the
*transcript* – a tuple of ``(mechanism, query, answer)`` index triples in the order they happened – and
chooses the next *action* ``(mechanism, query)``, or stops (Lyu 2022, Section 1.1: an adversary is a map
:math:`([k] \times \mathcal X \times \mathcal Y)^* \to \Delta([k] \times \mathcal X)`).

A policy is a plain function of the transcript returning one of

* ``None`` – stop;
* an action, the tuple ``(i, x)`` (or just the integer ``x`` when there is a single mechanism) – a
  deterministic choice;
* a dict ``{(i, x): probability}`` or a list of ``((i, x), probability)`` pairs – a random choice.

:class:`Adversary` wraps such a function and checks what it returns.  For the *worst* adversary against a
system see :func:`dp_course.interactive.optimal.best_adversary`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int

__all__ = ["Transcript", "Action", "Adversary", "fixed_adversary", "state_of", "check_transcript"]

Transcript = tuple[tuple[int, int, int], ...]
"""``((mechanism, query, answer), ...)`` in the order the interaction happened."""

Action = tuple[int, int]
"""``(mechanism, query)``."""


def check_transcript(transcript: Any, name: str = "transcript") -> Transcript:
    """A transcript as a tuple of ``(mechanism, query, answer)`` triples of integers >= 0.

    Raises:
        ValueError: naming ``name`` if ``transcript`` is not a sequence of such triples.
    """
    if not isinstance(transcript, Sequence) or isinstance(transcript, str):
        raise ValueError(f"{name} must be a sequence of (mechanism, query, answer) triples, got "
                         f"{type(transcript).__name__}")
    out = []
    for step in transcript:
        if not isinstance(step, Sequence) or isinstance(step, str) or len(step) != 3:
            raise ValueError(f"{name} must hold (mechanism, query, answer) triples, got {step!r}")
        i, x, y = (check_int(f"{name} entry", v, lo=0) for v in step)
        out.append((i, x, y))
    return tuple(out)


def state_of(transcript: Transcript, k: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Each mechanism's own history, read off a transcript: what mechanism ``i`` has seen is ``state[i]``.

    Raises:
        ValueError: if ``transcript`` is not a sequence of ``(mechanism, query, answer)`` integer triples with
            mechanism indices below ``k``, or ``k`` is not an integer in [1, 10**6].
    """
    k = check_int("k", k, lo=1, hi=10**6)
    own: list[list[tuple[int, int]]] = [[] for _ in range(k)]
    for i, x, y in check_transcript(transcript):
        if i >= k:
            raise ValueError(f"transcript names mechanism {i}, but k = {k} mechanisms")
        own[i].append((x, y))
    return tuple(tuple(h) for h in own)


def _as_action(value: Any) -> Action:
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return (0, check_int("query index", value, lo=0))
    try:
        i, x = value
        return (check_int("mechanism index", i, lo=0), check_int("query index", x, lo=0))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"an action must be (mechanism, query) – two integers – or a query index (in actions "
                         f"or a policy's choice), got {value!r}") from exc


@dataclass(frozen=True)
class Adversary:
    r"""An adversary given by its policy: ``policy(transcript)`` -> ``None`` | action | ``{action: prob}``.

    Args:
        policy: a function of the transcript (a tuple of ``(mechanism, query, answer)`` triples).
        name: a label for plots and tables.

    Raises:
        ValueError: if ``policy`` is not callable; :meth:`action_probs` raises for a malformed choice.
    """

    policy: Callable[[Transcript], Any]
    name: str = "adversary"

    def __post_init__(self) -> None:
        if not callable(self.policy):
            raise ValueError(f"policy must be a function of the transcript, got {self.policy!r}")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string, got {self.name!r}")

    def action_probs(self, transcript: Transcript) -> list[tuple[Action, float]]:
        """The adversary's next move as a list of ``(action, probability)`` pairs (empty list: it stops).

        Raises:
            ValueError: if the policy returns something that is not an action, a mapping or a list of pairs,
                or probabilities that are negative or do not sum to 1 (within 1e-9).
        """
        choice = self.policy(check_transcript(transcript))
        if choice is None:
            return []
        if isinstance(choice, Mapping):
            pairs = list(choice.items())
        elif isinstance(choice, list):
            pairs = choice
        else:
            return [(_as_action(choice), 1.0)]
        out = []
        for action, prob in pairs:
            p = float(prob)
            if not (p >= 0.0) or math.isinf(p):
                raise ValueError(f"{self.name}: action probabilities must be >= 0, got {prob!r} for {action!r}")
            if p > 0:
                out.append((_as_action(action), p))
        total = sum(p for _, p in out)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"{self.name}: action probabilities must sum to 1 (within 1e-9), got {total!r} "
                             f"after transcript {transcript}")
        return out


def fixed_adversary(actions: Sequence[Any], name: str = "fixed schedule") -> Adversary:
    """A non-adaptive adversary: it sends the given actions ``(mechanism, query)`` in order, then stops."""
    if not isinstance(actions, Sequence) or isinstance(actions, str):
        raise ValueError(f"actions must be a list or tuple of actions (mechanism, query) or query indices, "
                         f"got {actions!r}")
    schedule = tuple(_as_action(a) for a in actions)

    def policy(transcript: Transcript) -> Action | None:
        t = len(transcript)
        return schedule[t] if t < len(schedule) else None

    return Adversary(policy, name)
