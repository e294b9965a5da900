r"""The privacy loss distribution of the Gaussian mechanism, in closed form (:class:`GaussianPLD`)."""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from scipy import optimize, special, stats

from .._validation import check_gaussian_mu, check_real, check_real_array
from .base import PrivacyLossDistribution
from .grid import GridPLD

__all__ = ["GaussianPLD"]


class GaussianPLD(PrivacyLossDistribution):
    r"""The privacy loss of the Gaussian mechanism: :math:`L \sim N(\mu, 2\mu)`.

    With noise :math:`N(0, \sigma^2)` on a query of sensitivity :math:`\Delta`, :math:`\mu = \Delta^2/(2\sigma^2)`.
    The tight profile is (Balle & Wang 2018, arXiv:1805.06530, Thm. 8), with :math:`s = \sqrt{2\mu}`,

    .. math:: \delta(\epsilon) = \Phi\left(\frac{s}{2} - \frac{\epsilon}{s}\right)
              - e^{\epsilon}\,\Phi\left(-\frac{s}{2} - \frac{\epsilon}{s}\right),

    evaluated here with ``log_ndtr`` so that it stays accurate for large epsilon.

    Args:
        mu: the mean of the loss, >= 0 (0 is the point mass at 0: no privacy loss).

    Raises:
        ValueError: if ``mu`` is negative or not a finite number.

    >>> round(GaussianPLD.from_mechanism(sigma=1.0).delta_for_epsilon(1.0), 9)
    0.126936738
    """

    def __init__(self, mu: float) -> None:
        self.mu = check_real("mu", mu, lo=0.0)

    @classmethod
    def from_mechanism(cls, sigma: float, sensitivity: float = 1.0) -> GaussianPLD:
        """PLD of Gaussian noise ``N(0, sigma^2)`` on a query of l2-sensitivity ``sensitivity``.

        Raises:
            ValueError: if ``sigma`` or ``sensitivity`` is not > 0.
        """
        sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
        sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
        return cls(check_gaussian_mu(sigma, sensitivity))

    def __repr__(self) -> str:
        return f"GaussianPLD(mu={self.mu:g})"

    @property
    def infinity_mass(self) -> float:
        return 0.0

    @property
    def mean(self) -> float:
        return self.mu

    @property
    def std(self) -> float:
        """Standard deviation ``sqrt(2 mu)``."""
        return math.sqrt(2.0 * self.mu)

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        if self.mu == 0:
            return (x >= 0).astype(float)
        return np.asarray(stats.norm.cdf(x, loc=self.mu, scale=self.std), dtype=float)

    def pdf(self, x: npt.ArrayLike) -> np.ndarray:
        """Density of ``L`` (for plots)."""
        arr = check_real_array("x", x)
        if self.mu > 0:
            return np.asarray(stats.norm.pdf(arr, loc=self.mu, scale=self.std), dtype=float)
        return np.zeros_like(arr)

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(self.mu, self.std, size=n)

    def _log_delta(self, eps: np.ndarray) -> np.ndarray:
        s = self.std
        log_first = special.log_ndtr(s / 2 - eps / s)
        log_second = eps + special.log_ndtr(-s / 2 - eps / s)
        with np.errstate(divide="ignore", invalid="ignore"):
            # log(Phi(a) - e^eps Phi(b)) = log Phi(a) + log(1 - e^{log_second - log_first})
            # where Phi(a) underflows to 0 (eps far beyond the loss), so does delta: log 0, not -inf - -inf = NaN
            gap = np.where(np.isneginf(log_first), -np.inf, log_second - log_first)
            return np.asarray(log_first + np.log(-np.expm1(np.minimum(gap, 0.0))))

    def _delta(self, eps: np.ndarray) -> np.ndarray:
        if self.mu == 0:
            return np.zeros_like(eps)
        return np.exp(self._log_delta(eps))

    def _epsilon(self, delta: float) -> float:
        if delta <= 0:
            return math.inf
        target = math.log(delta)
        s = self.std
        # delta(eps) <= P(L > eps), so eps = mu + s * z with Phi(-z) = delta bounds the answer from above
        hi = self.mu + s * max(-special.ndtri(delta), 1.0) + 1.0

        def excess(e: float) -> float:
            return float(self._log_delta(np.array([e]))[0]) - target

        return float(optimize.brentq(excess, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))

    def _compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """Exact with another GaussianPLD (the means add); ``NotImplemented`` otherwise."""
        if isinstance(other, GaussianPLD):
            return GaussianPLD(self.mu + other.mu)
        return NotImplemented

    def _self_compose(self, k: int) -> Self:
        mu = k * self.mu
        if not math.isfinite(mu):
            raise ValueError(f"k must be at most {math.floor(np.finfo(float).max / self.mu):.3g} for mu = {self.mu:g} "
                             f"(k * mu must be a finite float), got {k}")
        return type(self)(mu)

    def to_grid(self, value_step: float = 1e-4, pessimistic: bool = True, tail_mass: float = 1e-15) -> GridPLD:
        """This PLD put on the uniform grid ``value_step * Z`` (see :meth:`GridPLD.from_pld`)."""
        return GridPLD.from_pld(self, value_step=value_step, pessimistic=pessimistic, tail_mass=tail_mass)

    # -- grid hooks ------------------------------------------------------------------------------------------
    def _loss_range(self, tail_mass: float) -> tuple[float, float]:
        """``mu -+ z s`` with ``Phi(-z) = tail_mass / 2`` (``z = 40`` for ``tail_mass = 0``)."""
        if self.mu == 0:
            return 0.0, 0.0
        s = self.std
        z = -special.ndtri(tail_mass / 2) if tail_mass > 0 else 40.0
        return self.mu - z * s, self.mu + z * s

    def _bucket_masses(self, grid: np.ndarray) -> tuple[tuple[np.ndarray, float, float],
                                                        tuple[np.ndarray, float, float]]:
        """P- and Q-mass of each bucket (grid[i], grid[i+1]] and of the two tails, exactly.

        Under ``Q`` the loss is ``N(-mu, 2 mu)`` (the pair is symmetric).
        """
        s = self.std
        return _interval_masses(stats.norm(self.mu, s), grid), _interval_masses(stats.norm(-self.mu, s), grid)


def _interval_masses(dist: Any, grid: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Masses of ``dist`` in (-inf, g0], (g_i, g_{i+1}], (g_n, inf), using sf in the upper half for accuracy."""
    cdf = dist.cdf(grid)
    sf = dist.sf(grid)
    upper = cdf > 0.5
    inner = np.where(upper[:-1], sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    return np.maximum(inner, 0.0), float(cdf[0]), float(sf[-1])
