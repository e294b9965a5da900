"""Mechanisms the course studies, as small frozen descriptions.

Each description validates its parameters when it is created and offers

* ``sample(x, rng)`` – run the mechanism on input ``x`` with a ``numpy.random.Generator``;
* ``output_distributions()`` – the exact output laws on a fixed pair of neighbouring inputs, as pmf arrays
  (finite outputs, with ``outcomes`` naming the entries) or scipy frozen distributions (continuous outputs);
* ``privacy_loss_distribution(...)`` – the privacy loss distribution of that pair (see :mod:`dp_course.pld`).

These descriptions are the one way the library names a mechanism: the RDP, zCDP and DP-SGD functions of
:mod:`dp_course.renyi`, :mod:`dp_course.rdp_accounting`, :mod:`dp_course.zcdp`, :mod:`dp_course.subsampling`
and :mod:`dp_course.dpsgd` accept them too (as
dp-accounting's event descriptions feed all its accountants).  Dependencies go one way: this module builds on
:mod:`dp_course.pld` (which knows no mechanism), and the analysis modules build on this one.

The neighbouring pair used throughout is documented on each class; for the additive-noise mechanisms it is
the worst case, a query whose value moves by the full sensitivity.

Sources: Dwork & Roth, *The Algorithmic Foundations of Differential Privacy* (2014), Sections 3.2–3.3 and
Appendix A; Warner (1965) for randomized response; Kairouz, Oh & Viswanath (2016, arXiv:1402.3214) for the
K-ary version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._validation import check_delta, check_int, check_real, check_real_array, check_rng
from .pld import DiscretePLD, GaussianPLD, GridPLD

__all__ = [
    "RandomizedResponse",
    "KaryRandomizedResponse",
    "LaplaceMechanism",
    "GaussianMechanism",
    "NameAndShame",
    "Mechanism",
    "MECHANISMS",
    "PureDPMechanism",
    "noise_multiplier",
    "mechanism_argument",
]


def _bits(name: str, x: npt.ArrayLike) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == bool:
        arr = arr.astype(int)
    if arr.dtype.kind not in "iuf" or not np.all(np.isin(arr, (0, 1))):
        raise ValueError(f"{name} must contain only bits 0 and 1, got {x!r}")
    return arr.astype(int)


@dataclass(frozen=True)
class RandomizedResponse:
    r"""Binary randomized response: report the true bit with probability :math:`e^\epsilon/(1+e^\epsilon)`.

    The neighbouring pair is the bit 0 versus the bit 1; outputs are the bits ``outcomes = (0, 1)``.
    It is :math:`(\epsilon, 0)`-DP and no better.

    >>> RandomizedResponse(epsilon=np.log(3)).output_distributions()[0]
    array([0.75, 0.25])
    """

    epsilon: float

    outcomes = (0, 1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, lo=0.0))

    @property
    def truth_probability(self) -> float:
        r""":math:`e^\epsilon/(1+e^\epsilon)`, computed as ``1/(1 + e^{-epsilon})``."""
        return float(1.0 / (1.0 + np.exp(-self.epsilon)))

    def sample(self, x: npt.ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Randomize each bit of ``x`` independently; returns an int array of the same shape."""
        bits = _bits("x", x)
        rng = check_rng(rng)
        keep = rng.random(bits.shape) < self.truth_probability
        return np.where(keep, bits, 1 - bits)

    def output_distributions(self) -> tuple[np.ndarray, np.ndarray]:
        """Output pmfs over ``(0, 1)`` on input 0 and on input 1."""
        t = self.truth_probability
        f = float(1.0 / (1.0 + np.exp(self.epsilon)))  # 1 - t without cancellation for large epsilon
        return np.array([t, f]), np.array([f, t])

    def privacy_loss_distribution(self) -> DiscretePLD:
        """Exact PLD: ``+epsilon`` with probability ``e^eps/(1+e^eps)``, ``-epsilon`` otherwise."""
        t, f = self.output_distributions()[0]
        return DiscretePLD([self.epsilon, -self.epsilon], [t, f])


@dataclass(frozen=True)
class KaryRandomizedResponse:
    r"""K-ary randomized response over categories ``0..k-1``.

    Reports the true category with probability :math:`e^\epsilon/(k-1+e^\epsilon)` and each of the other
    :math:`k-1` categories with probability :math:`1/(k-1+e^\epsilon)`; :math:`(\epsilon,0)`-DP.
    The neighbouring pair is category 0 versus category 1.
    """

    epsilon: float
    k: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, lo=0.0))
        object.__setattr__(self, "k", check_int("k", self.k, lo=2))

    @property
    def outcomes(self) -> tuple[int, ...]:
        return tuple(range(self.k))

    def channel(self) -> np.ndarray:
        """The k x k row-stochastic matrix ``M[x, y] = P(output y | input x)``."""
        # e^eps/(k-1+e^eps) = 1/(1 + (k-1)e^{-eps}); written this way it stays finite for large epsilon.
        other = np.exp(-self.epsilon) / (1.0 + (self.k - 1) * np.exp(-self.epsilon))
        truth = 1.0 / (1.0 + (self.k - 1) * np.exp(-self.epsilon))
        m = np.full((self.k, self.k), other)
        np.fill_diagonal(m, truth)
        return m

    def sample(self, x: npt.ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Randomize each category in ``x`` independently."""
        arr = np.asarray(x)
        if arr.dtype.kind not in "iu" or np.any((arr < 0) | (arr >= self.k)):
            raise ValueError(f"x must contain integer categories in [0, {self.k - 1}], got {x!r}")
        rng = check_rng(rng)
        truth = 1.0 / (1.0 + (self.k - 1) * np.exp(-self.epsilon))
        keep = rng.random(arr.shape) < truth
        # a uniformly chosen *other* category: shift by 1..k-1 modulo k
        other = (arr + rng.integers(1, self.k, size=arr.shape)) % self.k
        return np.where(keep, arr, other)

    def output_distributions(self) -> tuple[np.ndarray, np.ndarray]:
        """Output pmfs on input category 0 and on input category 1."""
        m = self.channel()
        return m[0].copy(), m[1].copy()

    def privacy_loss_distribution(self) -> DiscretePLD:
        """Exact PLD of the pair (category 0, category 1)."""
        return DiscretePLD.from_pmfs(*self.output_distributions())


@dataclass(frozen=True)
class LaplaceMechanism:
    r"""Add Laplace noise of scale ``scale`` to a query of :math:`\ell_1`-sensitivity ``sensitivity``.

    :math:`(\Delta/b, 0)`-DP (Dwork & Roth 2014, Theorem 3.6).  The neighbouring pair is the query value 0
    versus the value ``sensitivity``: ``Lap(0, b)`` against ``Lap(sensitivity, b)``.
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_real("scale", self.scale, lo=0.0, lo_open=True))
        object.__setattr__(self, "sensitivity",
                           check_real("sensitivity", self.sensitivity, lo=0.0, lo_open=True))

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0) -> LaplaceMechanism:
        """The Laplace mechanism calibrated to be ``(epsilon, 0)``-DP: scale ``sensitivity / epsilon``."""
        epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
        sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
        return cls(scale=sensitivity / epsilon, sensitivity=sensitivity)

    @property
    def epsilon(self) -> float:
        """The pure-DP level ``sensitivity / scale``."""
        return self.sensitivity / self.scale

    def sample(self, value: npt.ArrayLike, rng: np.random.Generator) -> np.ndarray | float:
        """Release ``value + Lap(0, scale)`` (independent noise per entry of an array ``value``)."""
        v = check_real_array("value", value)
        rng = check_rng(rng)
        out = v + rng.laplace(0.0, self.scale, size=v.shape)
        return float(out) if out.ndim == 0 else out

    def output_distributions(self) -> tuple[Any, Any]:
        """``(Lap(0, scale), Lap(sensitivity, scale))`` as scipy frozen distributions."""
        return stats.laplace(loc=0.0, scale=self.scale), stats.laplace(loc=self.sensitivity, scale=self.scale)

    def privacy_loss_distribution(self, value_step: float = 1e-4, pessimistic: bool = True) -> GridPLD:
        """A discretised PLD of the pair (numerical; see :meth:`dp_course.pld.GridPLD.from_densities`)."""
        # the loss of an eps-DP mechanism lies in [-eps, eps]: this keeps the far tails off +inf
        eps = self.epsilon
        return GridPLD.from_densities(*self.output_distributions(), value_step=value_step,
                                      pessimistic=pessimistic, loss_bounds=(-eps, eps))


@dataclass(frozen=True)
class GaussianMechanism:
    r"""Add :math:`N(0, \sigma^2)` noise to a query of :math:`\ell_2`-sensitivity ``sensitivity``.

    Its privacy loss is exactly :math:`N(\mu, 2\mu)` with :math:`\mu = \Delta^2/(2\sigma^2)` (Balle & Wang
    2018, arXiv:1805.06530, Lemma 3), and it is :math:`\Delta^2/(2\sigma^2)`-zCDP (Bun & Steinke 2016,
    arXiv:1605.02065, Prop. 1.6).  The neighbouring pair is ``N(0, sigma^2)`` against ``N(sensitivity, sigma^2)``.
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_real("sigma", self.sigma, lo=0.0, lo_open=True))
        object.__setattr__(self, "sensitivity",
                           check_real("sensitivity", self.sensitivity, lo=0.0, lo_open=True))

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity``: the noise in units of the sensitivity (the DP-SGD convention)."""
        return self.sigma / self.sensitivity

    def sample(self, value: npt.ArrayLike, rng: np.random.Generator) -> np.ndarray | float:
        """Release ``value + N(0, sigma^2)`` (independent noise per entry)."""
        v = check_real_array("value", value)
        rng = check_rng(rng)
        out = v + rng.normal(0.0, self.sigma, size=v.shape)
        return float(out) if out.ndim == 0 else out

    def output_distributions(self) -> tuple[Any, Any]:
        """``(N(0, sigma^2), N(sensitivity, sigma^2))`` as scipy frozen distributions."""
        return stats.norm(loc=0.0, scale=self.sigma), stats.norm(loc=self.sensitivity, scale=self.sigma)

    def privacy_loss_distribution(self) -> GaussianPLD:
        """The exact Gaussian PLD ``N(mu, 2 mu)``."""
        return GaussianPLD.from_mechanism(self.sigma, self.sensitivity)


@dataclass(frozen=True)
class NameAndShame:
    r"""Release each record with probability :math:`\delta` ("name and shame", :math:`NS_\delta`).

    It is :math:`(0, \delta)`-DP and no better for any :math:`\epsilon`: its privacy loss is 0 when the
    differing person is not released and :math:`+\infty` when they are.  On the neighbouring pair the output
    concerning the differing person takes the values ``outcomes = ("nothing", "record x", "record x'")``.
    """

    delta: float

    outcomes = ("nothing", "record x", "record x'")

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", check_delta(self.delta))

    def sample(self, records: Iterable[Any], rng: np.random.Generator) -> list[Any]:
        """Return the released records (each kept independently with probability ``delta``), in order."""
        rng = check_rng(rng)
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            raise ValueError(f"records must be a list (or another iterable) of records, got {type(records).__name__}")
        records = list(records)
        keep = rng.random(len(records)) < self.delta
        return [r for r, k in zip(records, keep, strict=True) if k]

    def output_distributions(self) -> tuple[np.ndarray, np.ndarray]:
        """Pmfs over ``outcomes`` when the differing person holds ``x`` and when they hold ``x'``."""
        d = self.delta
        return np.array([1.0 - d, d, 0.0]), np.array([1.0 - d, 0.0, d])

    def privacy_loss_distribution(self) -> DiscretePLD:
        """Exact PLD: 0 with probability ``1 - delta``, ``+inf`` with probability ``delta``."""
        return DiscretePLD.from_pmfs(*self.output_distributions())


Mechanism: TypeAlias = (RandomizedResponse | KaryRandomizedResponse | LaplaceMechanism | GaussianMechanism
                        | NameAndShame)
"""Any mechanism description of this module (for annotations)."""

MECHANISMS = (RandomizedResponse, KaryRandomizedResponse, LaplaceMechanism, GaussianMechanism, NameAndShame)
"""The description classes, for ``isinstance`` checks (``isinstance(m, MECHANISMS)``)."""

PureDPMechanism: TypeAlias = RandomizedResponse | KaryRandomizedResponse | LaplaceMechanism
"""The descriptions that are ``(epsilon, 0)``-DP for their ``epsilon`` attribute."""


def noise_multiplier(sigma: float | GaussianMechanism, name: str = "sigma") -> float:
    """The noise multiplier of DP-SGD given as a number or as the Gaussian mechanism that adds the noise.

    A :class:`GaussianMechanism` gives ``sigma / sensitivity`` (noise standard deviation over the
    l2-sensitivity, i.e. over the clipping norm); a number is checked to be > 0 and returned.

    Raises:
        ValueError: if ``sigma`` is neither a number > 0 nor a GaussianMechanism (the message names ``name``).
    """
    if isinstance(sigma, GaussianMechanism):
        return sigma.noise_multiplier
    if isinstance(sigma, MECHANISMS):
        raise ValueError(f"{name} must be a noise multiplier > 0 or a GaussianMechanism, got {sigma!r}; only "
                         "Gaussian noise has a noise multiplier")
    return check_real(name, sigma, lo=0.0, lo_open=True)


def mechanism_argument(value: Any, kind: type, name: str, extra: dict[str, float]) -> Any:
    """``value`` if it is a description of class ``kind`` given where a number may stand, else ``None``.

    The analyses take a mechanism either by its numbers (``gaussian_rdp(alpha, sigma, sensitivity)``) or by
    its description (``gaussian_rdp(alpha, GaussianMechanism(sigma, sensitivity))``).  This returns ``None``
    for anything that is not a description (the caller then validates it as a number) and the description
    otherwise.  ``extra`` holds the other numeric arguments the caller received, all with default 1.0: a
    description already holds them, so a non-default value next to one is an error.

    Raises:
        ValueError: for a description of another class than ``kind``, or one given together with a
            non-default ``extra`` argument (e.g. ``sensitivity``).
    """
    if not (isinstance(kind, type) and kind in MECHANISMS):
        raise ValueError(f"kind must be one of the mechanism classes {[m.__name__ for m in MECHANISMS]}, got {kind!r}")
    if not isinstance(name, str):
        raise ValueError(f"name must be the parameter's name (a string), got {name!r}")
    if not isinstance(extra, dict):
        raise ValueError(f"extra must be a dict of the other arguments by name, got {extra!r}")
    if not isinstance(value, MECHANISMS):
        return None
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be a number or a {kind.__name__}, got {value!r} (for the RDP curve of "
                         f"any mechanism use dp_course.renyi.mechanism_rdp(alpha, mechanism))")
    for arg, given in extra.items():
        if given != 1.0:
            raise ValueError(f"{arg} must be left out when {name} is a {kind.__name__} (it holds its own "
                             f"{arg}), got {arg}={given!r}")
    return value
