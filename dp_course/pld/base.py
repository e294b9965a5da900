r"""The interface every privacy loss distribution implements (public methods over private hooks).

A subclass supplies the math in a few private hooks (``_cdf``, ``_sample``, ``_delta``, ``_epsilon``,
``_compose``, ``_self_compose``, and the grid hooks); the public methods here validate their arguments once,
handle the cases every PLD shares (``epsilon = inf``, ``delta`` below the atom at infinity, ``k = 1``) and
shape the output (scalar in, ``float`` out; array in, array of the same shape out).  This is the layout of
``scipy.stats.rv_continuous`` (public ``cdf`` over private ``_cdf``), with one difference: bad arguments raise
a ``ValueError`` naming the parameter instead of returning NaN.
"""

from __future__ import annotations

import abc
import math
from typing import Self

import numpy as np
import numpy.typing as npt

from .._validation import MAX_SAMPLE_SIZE, check_int, check_real_array, check_rng

__all__ = ["PrivacyLossDistribution", "MAX_SAMPLE_SIZE"]


def _epsilon_array(epsilon: npt.ArrayLike) -> tuple[np.ndarray, bool]:
    """Validated epsilons (>= 0, ``inf`` allowed) as a 1-D float array, and whether the input was a scalar."""
    eps = check_real_array("epsilon", epsilon, lo=0.0, allow_inf=True)
    return np.atleast_1d(eps).astype(float).ravel(), eps.ndim == 0


def _delta_array(delta: npt.ArrayLike) -> tuple[np.ndarray, bool]:
    """Validated deltas in [0, 1) as a 1-D float array, and whether the input was a scalar."""
    d = check_real_array("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    return np.atleast_1d(d).astype(float).ravel(), d.ndim == 0


class PrivacyLossDistribution(abc.ABC):
    r"""Common interface of all privacy loss distributions (see :mod:`dp_course.pld`).

    The law of :math:`L = \ln(P(Y)/Q(Y))` for :math:`Y \sim P`, with an atom :attr:`infinity_mass` at
    :math:`+\infty`.  Subclasses implement the private hooks; the public methods validate their arguments
    first.
    """

    # ---- hooks -------------------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def infinity_mass(self) -> float:
        """``P(L = +inf)``: the probability of an output that the second distribution never produces."""

    @property
    @abc.abstractmethod
    def mean(self) -> float:
        r"""``E[L]``, the KL divergence :math:`D(P \| Q)` (``+inf`` when :attr:`infinity_mass` > 0)."""

    @abc.abstractmethod
    def _cdf(self, x: np.ndarray) -> np.ndarray:
        """``P(L <= x)`` for a validated 1-D array ``x``."""

    @abc.abstractmethod
    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of ``L``."""

    @abc.abstractmethod
    def _delta(self, eps: np.ndarray) -> np.ndarray:
        """``delta(eps)`` for a validated 1-D array of finite ``eps >= 0``."""

    @abc.abstractmethod
    def _epsilon(self, delta: float) -> float:
        """Smallest ``eps`` with ``delta(eps) <= delta``, for ``infinity_mass <= delta < delta(0)``."""

    @abc.abstractmethod
    def _self_compose(self, k: int) -> Self:
        """The ``k``-fold composition, ``k >= 2`` (a PLD of the same class)."""

    @abc.abstractmethod
    def _compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """The composition with ``other``, or ``NotImplemented`` when this class cannot do it exactly.

        :meth:`compose` then asks ``other`` (composition is symmetric), like Python's reflected operators.
        """

    @abc.abstractmethod
    def to_grid(self, value_step: float = 1e-4, pessimistic: bool = True,
                tail_mass: float = 1e-15) -> PrivacyLossDistribution:
        """This PLD put on the uniform grid ``value_step * Z`` (see :meth:`dp_course.pld.GridPLD.from_pld`).

        Every concrete class returns a :class:`dp_course.pld.GridPLD`; the method is declared here and
        implemented by each class (the grid module builds on this one, so this one cannot name it).
        """

    # Grid hooks: a PLD that is not atomic supplies these two so that GridPLD.from_pld can discretise it.
    def _loss_range(self, tail_mass: float) -> tuple[float, float]:
        """An interval ``[lo, hi]`` of losses outside which ``L`` has mass at most ``tail_mass / 2`` per side.

        ``lo == hi`` means that ``L`` is the point mass at ``lo``.
        """
        raise ValueError(f"cannot put a {type(self).__name__} on a grid")

    def _bucket_masses(self, grid: np.ndarray) -> tuple[tuple[np.ndarray, float, float],
                                                        tuple[np.ndarray, float, float]]:
        """Under ``P`` and under ``Q``: masses of the buckets ``(g_i, g_{i+1}]``, of ``L <= g_0``, of ``L > g_n``."""
        raise ValueError(f"cannot put a {type(self).__name__} on a grid")

    # ---- public API ----------------------------------------------------------------------------------------
    def cdf(self, x: npt.ArrayLike) -> float | np.ndarray:
        """``P(L <= x)``; ``x`` may be a scalar or an array (``+inf`` gives 1)."""
        arr = check_real_array("x", x, allow_inf=True)
        out = self._cdf(np.atleast_1d(arr))
        return float(out[0]) if arr.ndim == 0 else out.reshape(arr.shape)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` privacy losses (``+inf`` included with probability :attr:`infinity_mass`)."""
        n = check_int("n", n, lo=0, hi=MAX_SAMPLE_SIZE)
        rng = check_rng(rng)
        return self._sample(n, rng)

    def delta_for_epsilon(self, epsilon: npt.ArrayLike) -> float | np.ndarray:
        r"""The tight :math:`\delta(\epsilon) = \mathbb{E}[(1 - e^{\epsilon - L})_+]` (vectorised).

        Args:
            epsilon: a number >= 0 or an array of them (``+inf`` gives :attr:`infinity_mass`).

        Returns:
            ``float`` for a scalar ``epsilon``, otherwise an array of the same shape.

        Raises:
            ValueError: if an epsilon is negative, NaN or not a number.
        """
        eps, scalar = _epsilon_array(epsilon)
        out = np.empty_like(eps)
        finite = np.isfinite(eps)
        out[~finite] = self.infinity_mass
        if finite.any():
            out[finite] = np.clip(self._delta(eps[finite]), 0.0, 1.0)
        return float(out[0]) if scalar else out.reshape(np.shape(epsilon))

    def epsilon_for_delta(self, delta: npt.ArrayLike) -> float | np.ndarray:
        r"""The smallest :math:`\epsilon \ge 0` with :math:`\delta(\epsilon) \le` ``delta`` (vectorised).

        Exact up to rounding (not a grid search).  Returns ``inf`` when ``delta`` is below
        :attr:`infinity_mass`, where no finite epsilon works.

        Raises:
            ValueError: if a delta is outside [0, 1), NaN or not a number.
        """
        deltas, scalar = _delta_array(delta)
        out = np.array([self._epsilon_checked(float(d)) for d in deltas])
        return float(out[0]) if scalar else out.reshape(np.shape(delta))

    def _epsilon_checked(self, delta: float) -> float:
        if delta < self.infinity_mass:
            return math.inf
        if self._delta(np.array([0.0]))[0] <= delta:
            return 0.0
        return self._epsilon(delta)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """The PLD of running both mechanisms (adaptively): the law of the sum of the two losses.

        Raises:
            ValueError: if ``other`` is not a PLD, or neither class can compose the pair exactly (then put
                both on a grid first).
        """
        if not isinstance(other, PrivacyLossDistribution):
            raise ValueError(f"other must be a PrivacyLossDistribution, got {type(other).__name__}")
        result = self._compose(other)
        if result is NotImplemented:
            result = other._compose(self)
        if result is NotImplemented:
            raise ValueError(f"cannot compose a {type(self).__name__} exactly with a {type(other).__name__}; "
                             "put both on a grid first, e.g. a.to_grid(1e-4).compose(b.to_grid(1e-4))")
        return result

    def self_compose(self, k: int) -> Self:
        """The PLD of the ``k``-fold composition of this mechanism with itself (``k >= 1``), of the same class.

        Raises:
            ValueError: if ``k`` is not an integer >= 1.
        """
        k = check_int("k", k, lo=1)
        return self if k == 1 else self._self_compose(k)
