r"""The worst adversary against a system, by dynamic programming over histories.

For a composition of mechanisms each of which sees only its own history, the probability of a transcript
under either input factorises over the mechanisms (Lyu 2022, eq. (16)): once the adversary is deterministic,

.. math::

    P(\tau) = \prod_i M_i^0(h_i), \qquad Q(\tau) = \prod_i M_i^1(h_i),

where :math:`h_i` is mechanism :math:`i`'s own history at the end.  So everything the future of the interaction
depends on is the *state* :math:`s = (h_1, \dots, h_k)` – not the order in which the queries were interleaved –
and the best adversary is found by backward induction over states (randomised adversaries are mixtures of
deterministic ones and cannot do better: both divergences below are jointly quasi-convex).

* **Hockey-stick** (approximate DP).  With :math:`V(s) = \max_{(i, x)} \sum_y V(s \oplus (i, x, y))` and, at a
  final state, :math:`V(s) = (P(s) - e^{\varepsilon} Q(s))_+`, the value at the empty state is
  :math:`\sup_{\mathcal A} H_{e^\varepsilon}(\mathrm{IT}(\mathcal A : \mathcal M^0) \,\|\,
  \mathrm{IT}(\mathcal A : \mathcal M^1))` (the paper's control function "Lower", eq. (19), is this recursion).
* **Rényi** of order :math:`\alpha > 1`.  :math:`W(s) = \max_{(i, x)} \sum_y p_y^\alpha q_y^{1-\alpha}
  W(s \oplus (i, x, y))` with :math:`W = 1` at a final state, where :math:`p_y, q_y` are the answer laws of the
  queried mechanism; :math:`\sup_{\mathcal A} D_\alpha = \ln W(\emptyset) / (\alpha - 1)`.
* **Pure DP**: :math:`E(s) = \max_{(i,x)} \max_{y} (\ln(p_y / q_y) + E(s \oplus (i, x, y)))`.

The adversary always uses every round of every mechanism (stopping early is a post-processing and never
helps).  The order constraint of the composition (concurrent: any interleaving; sequential: one mechanism after
the other) restricts the actions at each state.  All values are computed for both orders of the inputs at once
and, for the hockey-stick and Rényi recursions, vectorised over an array of :math:`\varepsilon` or
:math:`\alpha`.

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397,
    eqs. (16) and (19), Claim 1 (the adversary that follows the maximisers of "Lower" is optimal).
    I. Mironov, "Rényi differential privacy", CSF 2017, arXiv:1702.07476 (Definition 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._validation import check_int, check_real_array
from .adversaries import Action, Adversary, Transcript, state_of
from .systems import Composition, as_composition

__all__ = ["worst_case_delta", "worst_case_renyi", "worst_case_epsilon", "best_adversary", "MAX_STATES"]

MAX_STATES = 2 * 10**6
"""Refuse dynamic programmes over more states than this."""

_ROWS = {"forward": 0, "backward": 1}


def _check_direction(direction: Any) -> str:
    if not isinstance(direction, str) or direction not in ("both", "forward", "backward"):
        raise ValueError(f"direction must be 'both', 'forward' (b = 0 against b = 1) or 'backward', got {direction!r}")
    return direction


def _hockey_terminal(eps: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    def terminal(logs: np.ndarray) -> np.ndarray:
        out = np.zeros((2, eps.size))
        for row, (lp, lq) in enumerate(((logs[0], logs[1]), (logs[1], logs[0]))):
            if lp == -np.inf:
                continue
            # P (1 - e^(eps - L))_+ with L = ln P - ln Q (L = +inf when Q = 0): no e^eps is ever formed
            gap = eps - (lp - lq) if lq > -np.inf else np.full(eps.size, -np.inf)
            out[row] = np.where(gap < 0, math.exp(lp) * -np.expm1(np.minimum(gap, 0.0)), 0.0)
        return out
    return terminal


def _run(comp: Composition, kind: str, params: np.ndarray, record: bool,
         max_states: int) -> tuple[np.ndarray, dict[tuple, tuple[Action, ...]]]:
    """Backward induction over states; returns the root value (shape (2, n) or (2,)) and, if asked, the
    maximising action per state and row."""
    mechs = comp.mechanisms
    memo: dict[tuple, np.ndarray] = {}
    policy: dict[tuple, tuple[Action, ...]] = {}
    terminal = _hockey_terminal(params)

    def child_term(kind: str, lp: np.ndarray, lq: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The contribution of one answer (log-probabilities ``lp``, ``lq`` under the two inputs) followed by
        the child's value ``v``; a branch impossible under the numerator input contributes nothing (-inf),
        whatever follows it (probability 0 times anything)."""
        n = params.size
        if kind == "renyi":
            # ln(p^a q^(1-a)) for the forward row, ln(q^a p^(1-a)) for the backward row
            fwd = params * lp + (1 - params) * lq + v[0] if lp > -np.inf else np.full(n, -np.inf)
            bwd = params * lq + (1 - params) * lp + v[1] if lq > -np.inf else np.full(n, -np.inf)
            return np.stack([fwd, bwd])
        # pure: log ratio where the numerator is possible (+inf if the denominator is not), -inf otherwise
        fwd = ((lp - lq if lq > -np.inf else np.inf) + v[0]) if lp > -np.inf else -np.inf
        bwd = ((lq - lp if lp > -np.inf else np.inf) + v[1]) if lq > -np.inf else -np.inf
        return np.array([fwd, bwd])

    def value(state: tuple, logs: np.ndarray) -> np.ndarray:
        v = memo.get(state)
        if v is not None:
            return v
        if len(memo) >= max_states:
            raise ValueError(f"the dynamic programme needs more than max_states = {max_states} states; use a "
                             "smaller system (fewer rounds, queries or answers)")
        allowed = comp.allowed(state)
        if not allowed:
            v = terminal(logs) if kind == "hockey" else np.zeros((2, params.size) if kind == "renyi" else 2)
            memo[state] = v
            return v
        best: np.ndarray | None = None
        arg: list[Action] = []
        for i in allowed:
            m = mechs[i]
            for x in range(m.n_queries):
                lpa = m._log_pmfs_unchecked(state[i], x)              # (2, Y)
                terms = []
                for y in range(m.n_answers):
                    lp, lq = lpa[0, y], lpa[1, y]
                    if lp == -np.inf and lq == -np.inf:
                        continue
                    child = state[:i] + (state[i] + ((x, y),),) + state[i + 1:]
                    cv = value(child, logs + lpa[:, y] if kind == "hockey" else logs)
                    terms.append(cv if kind == "hockey" else child_term(kind, lp, lq, cv))
                stacked = np.stack(terms)
                if kind == "hockey":
                    acc = stacked.sum(axis=0)
                elif kind == "renyi":
                    acc = special.logsumexp(stacked, axis=0)
                else:
                    acc = stacked.max(axis=0)
                if best is None:
                    best, arg = acc, [(i, x)] * acc.shape[0]
                elif record:
                    better = acc > best
                    rows = np.any(better, axis=-1) if acc.ndim > 1 else better
                    for r in np.flatnonzero(rows):
                        arg[r] = (i, x)
                    best = np.maximum(best, acc)
                else:
                    best = np.maximum(best, acc)
        assert best is not None                                  # some mechanism had a question left
        memo[state] = best
        if record:
            policy[state] = tuple(arg)
        return best

    root = value(tuple(() for _ in mechs), np.zeros(2))
    return root, policy


def _combine(values: np.ndarray, direction: str, scalar: bool) -> float | np.ndarray:
    out = values.max(axis=0) if direction == "both" else values[_ROWS[direction]]
    if scalar:
        return float(np.squeeze(out))
    return np.asarray(out)


def worst_case_delta(system: Any, epsilon: ArrayLike, direction: str = "both",
                     max_states: int = MAX_STATES) -> float | np.ndarray:
    r"""The exact worst-case :math:`\delta(\varepsilon)` of an interactive system over all adversaries.

    .. math::

        \delta(\varepsilon) = \sup_{\mathcal A} \max_{b} H_{e^\varepsilon}\bigl(\mathrm{IT}(\mathcal A :
        \mathcal M^b) \,\|\, \mathrm{IT}(\mathcal A : \mathcal M^{1-b})\bigr),

    the smallest :math:`\delta` for which the system is :math:`(\varepsilon, \delta)`-indistinguishable
    (Lyu 2022, Definition 2).  For a :func:`~dp_course.interactive.systems.concurrent` composition the supremum
    runs over every interleaving policy; for a sequential one over adversaries that finish one mechanism before
    the next.  Computed by backward induction over the mechanisms' own histories (see the module docstring).

    Args:
        system: a mechanism or a composition.
        epsilon: a real number >= 0 or an array of them (vectorised: one pass for all).
        direction: ``"both"`` (default), ``"forward"`` (:math:`b = 0`) or ``"backward"`` (:math:`b = 1`).
        max_states: refuse programmes with more states.

    Returns:
        float for a scalar ``epsilon``, an ndarray of its shape otherwise.

    Raises:
        ValueError: for a negative or NaN ``epsilon``, an unknown direction, or too many states.

    Source: Lyu 2022 (arXiv:2207.09397), eq. (19) and Claim 1.
    """
    comp = as_composition(system)
    eps = check_real_array("epsilon", epsilon, lo=0.0)
    direction = _check_direction(direction)
    root, _ = _run(comp, "hockey", eps.ravel(), False, check_int("max_states", max_states, lo=1))
    out = np.minimum(_combine(root, direction, False), 1.0)       # rounding may leave 1 + 1e-16
    return float(out[0]) if eps.ndim == 0 else out.reshape(eps.shape)


def worst_case_renyi(system: Any, alpha: ArrayLike, direction: str = "both",
                     max_states: int = MAX_STATES) -> float | np.ndarray:
    r"""The exact worst-case Rényi divergence of an interactive system over all adversaries.

    .. math::

        \varepsilon(\alpha) = \sup_{\mathcal A} \max_b D_\alpha\bigl(\mathrm{IT}(\mathcal A : \mathcal M^b)
        \,\|\, \mathrm{IT}(\mathcal A : \mathcal M^{1-b})\bigr),

    the smallest :math:`\varepsilon` for which the system is :math:`(\alpha, \varepsilon)`-Rényi close
    (Lyu 2022, Definition 3).  Order ``inf`` gives the pure-DP :math:`\varepsilon` (:func:`worst_case_epsilon`).

    Args:
        system: a mechanism or a composition.
        alpha: order(s) > 1 (``numpy.inf`` allowed), scalar or array.
        direction: ``"both"``, ``"forward"`` or ``"backward"``.
        max_states: refuse programmes with more states.

    Returns:
        float for a scalar ``alpha``, an ndarray of its shape otherwise (``inf`` where an answer is possible
        under one input only).

    Raises:
        ValueError: for an order <= 1 or NaN, an unknown direction, or too many states.

    Source: Lyu 2022 (arXiv:2207.09397), Theorem 2 and its proof (the "budget" :math:`\ell_t`, eq. (32), is
    :math:`W` at a state of one mechanism, raised to :math:`1/(\alpha - 1)`).
    """
    comp = as_composition(system)
    a = check_real_array("alpha", alpha, lo=1.0, lo_open=True, allow_inf=True)
    direction = _check_direction(direction)
    flat = a.ravel()
    finite = np.isfinite(flat)
    out = np.empty((2, flat.size))
    if finite.any():
        root, _ = _run(comp, "renyi", flat[finite], False, check_int("max_states", max_states, lo=1))
        out[:, finite] = root / (flat[finite] - 1.0)
    if (~finite).any():
        root, _ = _run(comp, "pure", np.empty(0), False, check_int("max_states", max_states, lo=1))
        out[:, ~finite] = root[:, None]
    res = _combine(np.maximum(out, 0.0), direction, a.ndim == 0)
    return res if a.ndim == 0 else np.asarray(res).reshape(a.shape)


def worst_case_epsilon(system: Any, direction: str = "both", max_states: int = MAX_STATES) -> float:
    r"""The exact pure-DP :math:`\varepsilon` of an interactive system: the largest
    :math:`|\ln(P(\tau)/Q(\tau))|` any adversary can provoke (``inf`` if some transcript is possible under one
    input only).

    Raises:
        ValueError: for an unknown direction or too many states.
    """
    comp = as_composition(system)
    direction = _check_direction(direction)
    root, _ = _run(comp, "pure", np.empty(0), False, check_int("max_states", max_states, lo=1))
    return float(root.max() if direction == "both" else root[_ROWS[direction]])


def best_adversary(system: Any, epsilon: float | None = None, alpha: float | None = None,
                   direction: str = "both", max_states: int = MAX_STATES) -> Adversary:
    r"""A deterministic adversary that attains the worst case found by :func:`worst_case_delta` (at ``epsilon``),
    :func:`worst_case_renyi` (at ``alpha``) or, with neither given, :func:`worst_case_epsilon`.

    Its policy reads each mechanism's own history off the transcript and plays the maximising action of the
    dynamic programme at that state (the adversary :math:`\mathcal A^*` of the paper's Claim 1).  With
    ``direction = "both"`` it targets the order of the inputs with the larger value.

    Args:
        system: a mechanism or a composition.
        epsilon: a real number >= 0, or ``None``.
        alpha: an order > 1, or ``None`` (give at most one of ``epsilon`` and ``alpha``).
        direction: ``"both"``, ``"forward"`` or ``"backward"``.
        max_states: refuse programmes with more states.

    Returns:
        :class:`~dp_course.interactive.adversaries.Adversary`.

    Raises:
        ValueError: for invalid arguments or too many states.
    """
    comp = as_composition(system)
    direction = _check_direction(direction)
    if epsilon is not None and alpha is not None:
        raise ValueError("give epsilon (approximate DP) or alpha (Rényi), not both")
    if epsilon is not None:
        kind, params = "hockey", check_real_array("epsilon", [epsilon], lo=0.0)
    elif alpha is not None:
        kind, params = "renyi", check_real_array("alpha", [alpha], lo=1.0, lo_open=True)
    else:
        kind, params = "pure", np.empty(0)
    root, policy = _run(comp, kind, params, True, check_int("max_states", max_states, lo=1))
    flat = root.reshape(2, -1)[:, 0] if root.ndim > 1 else root
    row = int(np.argmax(flat)) if direction == "both" else _ROWS[direction]
    k = len(comp.mechanisms)
    label = {"hockey": f"ε = {params[0]:g}", "renyi": f"α = {params[0]:g}", "pure": "pure ε"}[kind] \
        if params.size else "pure ε"

    def play(transcript: Transcript) -> Action | None:
        state = state_of(transcript, k)
        if not comp.allowed(state):
            return None
        return policy[state][row]

    return Adversary(play, name=f"best adversary ({label}, {'forward' if row == 0 else 'backward'})")
