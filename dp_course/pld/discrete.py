r"""Exact privacy loss distributions with finite support (:class:`DiscretePLD`).

The PLD of a pair of pmfs :math:`(p, q)` puts mass :math:`p_y` on the loss :math:`\ln(p_y/q_y)` (and the mass
of outcomes with :math:`q_y = 0` at :math:`+\infty`).  Composition is exact: the atoms of a sum of two
independent losses are all pairwise sums (merged when equal up to rounding), and the :math:`k`-fold
composition of a two-point law is the binomial law, evaluated in log-space in O(k).
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np
import numpy.typing as npt

from .._numerics import log_binomial_pmf
from .._validation import check_pmf_pair, check_real, check_real_array
from .atomic import AtomicPLD, merge_atoms
from .base import PrivacyLossDistribution
from .grid import GridPLD

__all__ = ["DiscretePLD", "MAX_EXACT_ATOMS"]

MAX_EXACT_ATOMS = 20_000_000
"""Largest support an exact composition may produce before we ask for a grid."""


class DiscretePLD(AtomicPLD):
    r"""An exact privacy loss distribution with finitely many atoms (and possibly an atom at :math:`+\infty`).

    Args:
        losses: the finite loss values (any order; duplicates are merged).
        probs: their probabilities under ``P``.
        infinity_mass: ``P(L = +inf)``.  ``sum(probs) + infinity_mass`` must be 1 (within 1e-9).

    Raises:
        ValueError: if the arrays differ in length, hold NaN or out-of-range values, or do not add up to 1.

    >>> rr = DiscretePLD([1.0, -1.0], [np.e / (1 + np.e), 1 / (1 + np.e)])
    >>> round(rr.delta_for_epsilon(0.0), 6)   # = total variation of randomized response at eps = 1
    0.462117
    """

    def __init__(self, losses: npt.ArrayLike, probs: npt.ArrayLike, infinity_mass: float = 0.0) -> None:
        losses = check_real_array("losses", losses, ndim=1, allow_empty=True)
        probs = check_real_array("probs", probs, lo=0.0, hi=1.0, ndim=1, allow_empty=True)
        if losses.shape != probs.shape:
            raise ValueError(f"losses and probs must have the same length, got {losses.size} and {probs.size}")
        inf = check_real("infinity_mass", infinity_mass, lo=0.0, hi=1.0)
        total = float(probs.sum()) + inf
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"probs and infinity_mass must add up to 1 (within 1e-09), got {total!r}")
        with np.errstate(divide="ignore"):
            lp = np.log(probs)
        self._set(losses, lp, inf)

    def _set(self, losses: np.ndarray, log_probs: np.ndarray, inf: float) -> None:
        self._losses, self._log_probs = merge_atoms(np.asarray(losses, float), np.asarray(log_probs, float))
        self._inf = float(inf)

    @classmethod
    def _from_logs(cls, losses: np.ndarray, log_probs: np.ndarray, infinity_mass: float) -> Self:
        """A PLD from atoms and log-probabilities already known to be valid (no checks)."""
        obj = cls.__new__(cls)
        obj._set(losses, log_probs, infinity_mass)
        return obj

    @classmethod
    def from_pmfs(cls, p: npt.ArrayLike, q: npt.ArrayLike) -> DiscretePLD:
        r"""The exact PLD of a pair of pmfs over the same outcomes: atoms :math:`\ln(p_y/q_y)` w.p. :math:`p_y`.

        Outcomes with ``q_y = 0 < p_y`` go to :attr:`infinity_mass`; outcomes with ``p_y = 0`` carry no mass.

        Raises:
            ValueError: if ``p`` or ``q`` is not a pmf, or their lengths differ.
        """
        p, q = check_pmf_pair("p", p, "q", q)
        pos = p > 0
        inf = float(p[pos & (q == 0)].sum())
        both = pos & (q > 0)
        losses = np.log(p[both]) - np.log(q[both])
        return cls._from_logs(losses, np.log(p[both]), inf)

    def __repr__(self) -> str:
        return f"DiscretePLD(<{self._losses.size} atoms>, infinity_mass={self._inf:g})"

    def to_grid(self, value_step: float = 1e-4, pessimistic: bool = True, tail_mass: float = 1e-15) -> GridPLD:
        """This PLD put on the uniform grid ``value_step * Z`` (see :meth:`GridPLD.from_pld`)."""
        return GridPLD.from_pld(self, value_step=value_step, pessimistic=pessimistic, tail_mass=tail_mass)

    # -- composition ---------------------------------------------------------------------------------------
    def _compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """Exact with another DiscretePLD (all pairwise sums); ``NotImplemented`` otherwise."""
        if not isinstance(other, DiscretePLD):
            return NotImplemented
        return self._convolve(other)

    def _convolve(self, other: DiscretePLD) -> Self:
        """All pairwise sums of atoms, equal sums merged (refused beyond :data:`MAX_EXACT_ATOMS` atoms)."""
        n = self._losses.size * other._losses.size
        if n > MAX_EXACT_ATOMS:
            raise ValueError(f"the exact composition would have {n} atoms (more than {MAX_EXACT_ATOMS}); "
                             "use a grid instead: .to_grid(value_step).compose(...)")
        losses = (self._losses[:, None] + other._losses[None, :]).ravel()
        lp = (self._log_probs[:, None] + other._log_probs[None, :]).ravel()
        inf = 1.0 - (1.0 - self._inf) * (1.0 - other._inf)
        return self._from_logs(losses, lp, inf)

    def _self_compose(self, k: int) -> Self:
        inf = -math.expm1(k * math.log1p(-self._inf)) if self._inf < 1 else 1.0  # 1 - (1 - m)^k
        n = self._losses.size
        if n == 0:
            return self._from_logs(np.empty(0), np.empty(0), inf)
        if n == 1:
            return self._from_logs(self._losses * k, self._log_probs * k, inf)
        if n == 2:
            if k >= MAX_EXACT_ATOMS:
                raise ValueError(f"k must be < {MAX_EXACT_ATOMS} for the exact k-fold composition (it has k + 1 "
                                 f"atoms), got {k}; use a grid instead: .to_grid(value_step).self_compose(k)")
            # k-fold sum of a two-point law: i atoms of the larger loss b and k - i of the smaller a, with
            # probability C(k, i) p_b^i p_a^(k-i) -- the binomial law, evaluated in log-space (O(k)).
            a, b = self._losses
            i = np.arange(k + 1, dtype=float)
            # the finite atoms carry total mass s = 1 - infinity_mass (or less after an optimistic
            # truncation): binomial with p = p_b / s, times s^k
            log_s = np.logaddexp(self._log_probs[0], self._log_probs[1])
            log_pmf = log_binomial_pmf(k, self._log_probs[1] - log_s, self._log_probs[0] - log_s) + k * log_s
            losses = i * b + (k - i) * a
            return self._from_logs(losses, log_pmf, inf)
        # general finite support: exact repeated squaring, merging equal sums
        result: Self | None = None
        base, e = self, k
        while e:
            if e & 1:
                result = base if result is None else result._convolve(base)
            e >>= 1
            if e:
                base = base._convolve(base)
        assert result is not None  # k >= 2, so the loop ran at least once with e & 1
        return result
