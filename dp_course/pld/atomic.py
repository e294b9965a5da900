r"""Privacy loss distributions with finitely many atoms: the shared math of the exact and the grid classes.

:math:`\delta(\epsilon)` of finitely many atoms :math:`l_i` with probabilities :math:`p_i` (plus an atom at
:math:`+\infty`) is, between consecutive atoms, of the form :math:`m_\infty + A_j - e^\epsilon B_j` with the
suffix sums :math:`A_j = \sum_{i \ge j} p_i` and :math:`B_j = \sum_{i \ge j} p_i e^{-l_i}`.  Both are kept in
log-space, so :meth:`AtomicPLD.delta_for_epsilon` is a lookup plus a correction for the atoms just above
:math:`\epsilon`, and :meth:`AtomicPLD.epsilon_for_delta` solves the linear equation in :math:`e^\epsilon` on the
right segment (Sommer, Meiser & Mohammadi 2019, "Privacy loss classes", PoPETs, Thm. 1).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_real_array
from .base import PrivacyLossDistribution

__all__ = ["AtomicPLD", "merge_atoms"]

# Atoms closer than this (relative to max(1, |loss|)) are merged: they are the same loss up to rounding.
MERGE_RTOL = 1e-12
# Above epsilon + _NEAR the terms (1 - e^{eps - l}) are >= 1 - e^{-1}, so tail sums have no cancellation;
# atoms within the window are summed one by one with expm1.
_NEAR = 1.0


class AtomicPLD(PrivacyLossDistribution):
    """Finitely many finite atoms (sorted ascending) plus an atom at ``+inf``; the base of the exact and grid PLDs.

    ``isinstance(pld, AtomicPLD)`` tells that :attr:`losses`, :attr:`probs` and :attr:`infinity_mass` list the
    whole law (plots draw such a PLD as stems).  Internally keeps ``losses`` (ascending), ``log_probs``
    (natural log of each atom's probability) and ``infinity_mass``.  Probabilities of the finite atoms need
    not add up to ``1 - infinity_mass`` exactly: a deficit is mass at ``-inf`` (dropped by an optimistic
    truncation), which never contributes to delta.
    """

    _losses: np.ndarray
    _log_probs: np.ndarray
    _inf: float
    _suffix_cache: tuple[np.ndarray, np.ndarray]

    @property
    def losses(self) -> np.ndarray:
        """The finite atoms, ascending (a read-only view)."""
        v = self._losses.view()
        v.flags.writeable = False
        return v

    @property
    def probs(self) -> np.ndarray:
        """Probabilities of the finite atoms."""
        return np.exp(self._log_probs)

    @property
    def log_probs(self) -> np.ndarray:
        """Natural logs of the probabilities of the finite atoms."""
        v = self._log_probs.view()
        v.flags.writeable = False
        return v

    @property
    def infinity_mass(self) -> float:
        return self._inf

    @property
    def mean(self) -> float:
        if self._inf > 0:
            return math.inf
        return float(np.sum(np.exp(self._log_probs) * self._losses))

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0.0], np.cumsum(np.exp(self._log_probs))])
        idx = np.searchsorted(self._losses, x, side="right")
        out = cum[idx]
        out[np.isposinf(x)] = cum[-1] + self._inf
        return np.minimum(out, 1.0)

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        probs = np.append(np.exp(self._log_probs), self._inf)
        probs = probs / probs.sum()
        values = np.append(self._losses, math.inf)
        return values[rng.choice(values.size, size=n, p=probs)]

    # -- delta(eps), accurate in log-space --------------------------------------------------------------------
    def _suffix_logs(self) -> tuple[np.ndarray, np.ndarray]:
        if not hasattr(self, "_suffix_cache"):
            lp = self._log_probs
            with np.errstate(invalid="ignore"):
                log_a = np.logaddexp.accumulate(lp[::-1])[::-1]          # log sum_{i>=j} p_i
                log_b = np.logaddexp.accumulate((lp - self._losses)[::-1])[::-1]  # log sum p_i e^{-l_i}
            self._suffix_cache = (np.append(log_a, -np.inf), np.append(log_b, -np.inf))
        return self._suffix_cache

    def _delta(self, eps: np.ndarray) -> np.ndarray:
        log_a, log_b = self._suffix_logs()
        losses, lp = self._losses, self._log_probs
        first = np.searchsorted(losses, eps, side="right")          # first atom with loss > eps
        far = np.searchsorted(losses, eps + _NEAR, side="right")    # first atom with loss > eps + 1
        # far atoms: sum p_i (1 - e^{eps - l_i}) = A (1 - e^{eps} B / A) with e^{eps} B / A <= e^{-1}
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = eps + log_b[far] - log_a[far]
            far_part = np.where(np.isneginf(log_a[far]), 0.0, np.exp(log_a[far]) * -np.expm1(ratio))
        near_part = np.zeros_like(eps)
        for i in np.flatnonzero(far > first):
            sl = slice(first[i], far[i])
            near_part[i] = np.sum(np.exp(lp[sl]) * -np.expm1(eps[i] - losses[sl]))
        return self._inf + near_part + far_part

    def _epsilon(self, delta: float) -> float:
        """Invert delta(eps) exactly: it is ``inf + A_j - e^eps B_j`` between consecutive atoms."""
        losses = self._losses
        log_a, log_b = self._suffix_logs()
        n = losses.size
        # delta at each atom l_j sums over atoms above it: index j + 1.  Fast (cancellation-prone) values are
        # only used to locate the segment; the bracket is then confirmed with the accurate evaluation.
        with np.errstate(over="ignore", invalid="ignore"):
            approx = self._inf + np.exp(log_a[1:]) - np.exp(losses + log_b[1:])
        j = int(np.searchsorted(-approx, -delta, side="left"))  # first atom with approx delta <= target
        j = min(max(j, 0), n - 1)

        def acc(e: float) -> float:
            return float(self._delta(np.array([e]))[0])

        while j > 0 and losses[j - 1] > 0 and acc(losses[j - 1]) <= delta:
            j -= 1
        while j < n - 1 and acc(losses[j]) > delta:
            j += 1
        lo = max(losses[j - 1], 0.0) if j > 0 else 0.0
        hi = losses[j]
        # on (lo, hi]: delta(eps) = inf + A_j - e^eps B_j, sums over atoms i >= j
        a_j = math.exp(log_a[j])
        log_bj = log_b[j]
        rest = self._inf + a_j - delta
        eps = math.log(rest) - log_bj if rest > 0 else hi
        eps = min(max(eps, lo), hi)
        for _ in range(3):  # Newton polish with the accurate delta: d delta / d eps = -e^eps B_j
            slope = math.exp(eps + log_bj)
            if slope <= 0 or not np.isfinite(slope):
                break
            step = (acc(eps) - delta) / slope
            eps = min(max(eps + step, lo), hi)
            if abs(step) <= 1e-15 * max(1.0, abs(eps)):
                break
        # be conservative: the returned epsilon must satisfy delta(eps) <= delta as evaluated.  When delta is
        # tiny next to an atom, one ulp of eps changes delta(eps) by a lot; step up a few ulps, then bisect.
        for _ in range(8):
            if acc(eps) <= delta or eps >= hi:
                break
            eps = math.nextafter(eps, math.inf)
        if acc(eps) > delta:
            a, b = eps, hi
            for _ in range(200):
                m = 0.5 * (a + b)
                if m <= a or m >= b:
                    break
                a, b = (a, m) if acc(m) <= delta else (m, b)
            eps = b
        return float(eps)


def merge_atoms(losses: np.ndarray, log_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort atoms and merge those equal up to rounding (log-probabilities added with logaddexp).

    Raises:
        ValueError: unless ``losses`` (finite) and ``log_probs`` (<= 1e-9: rounding; ``-inf`` for 0) are 1-D arrays of
            the same length.
    """
    losses = check_real_array("losses", losses, ndim=1, allow_empty=True)
    log_probs = check_real_array("log_probs", log_probs, hi=1e-9, allow_inf=True, ndim=1, allow_empty=True)
    if losses.shape != log_probs.shape:
        raise ValueError(f"losses and log_probs must have the same length, got {losses.size} and {log_probs.size}")
    keep = np.isfinite(log_probs)
    if not keep.all():
        losses, log_probs = losses[keep], log_probs[keep]
    if losses.size == 0:
        return losses, log_probs
    gaps = np.diff(losses)
    if not np.all(gaps >= 0):
        order = np.argsort(losses, kind="stable")
        losses, log_probs = losses[order], log_probs[order]
        gaps = np.diff(losses)
    new_group = gaps > MERGE_RTOL * np.maximum(1.0, np.abs(losses[1:]))
    if new_group.all():  # already sorted and distinct (e.g. a binomial law): nothing to merge
        return losses, log_probs
    starts = np.concatenate([[0], np.flatnonzero(new_group) + 1])
    merged_lp = np.logaddexp.reduceat(log_probs, starts)
    # representative loss: probability-weighted mean within the group (they agree to ~1e-12 anyway)
    weights = np.exp(log_probs - np.repeat(merged_lp, np.diff(np.append(starts, losses.size))))
    merged_l = np.add.reduceat(weights * losses, starts)
    return merged_l, merged_lp
