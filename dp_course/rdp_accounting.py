r"""RDP accounting: compose Rényi DP curves and convert them to :math:`(\varepsilon, \delta)`-DP.

RDP guarantees compose by adding the curves order by order (Mironov 2017, arXiv:1702.07476,
Proposition 1).  A curve converts to :math:`(\varepsilon, \delta)`-DP at each order, and the best order wins:
the classic conversion of Mironov (2017, Proposition 3) and the improved one of Canonne, Kamath & Steinke
(2020, arXiv:2004.00010, Proposition 12), in both directions (epsilon for a delta and delta for an epsilon).
:class:`RDPCurve` is the accountant: a curve tabulated at a fixed set of orders (default
:data:`DEFAULT_ORDERS`, dp-accounting's), built from a mechanism (:mod:`dp_course.renyi`) or a zCDP
parameter (:mod:`dp_course.zcdp`), composed with ``+`` and ``*`` and converted with :meth:`RDPCurve.epsilon`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._validation import DEFAULT_ORDERS, check_delta, check_int, check_orders, check_real, check_real_array
from .mechanisms import GaussianMechanism, LaplaceMechanism, Mechanism, RandomizedResponse
from .renyi import gaussian_rdp, laplace_rdp, mechanism_rdp, randomized_response_rdp
from .zcdp import zcdp_rdp

__all__ = [
    "DEFAULT_ORDERS",
    "CONVERSIONS",
    "RDPCurve",
    "compose_rdp",
    "rdp_to_dp_epsilon",
    "rdp_to_dp_epsilon_and_order",
    "rdp_to_dp_delta",
]

# DEFAULT_ORDERS (dp-accounting's default orders, the default of every ``orders`` argument) is defined with the
# check of that argument in dp_course._validation and exported from here, where the accountant uses it.

CONVERSIONS = ("improved", "classic")
"""Names accepted by the ``method`` argument of the RDP -> (epsilon, delta) conversions."""


def _check_method(method: Any) -> str:
    if not isinstance(method, str) or method not in CONVERSIONS:
        raise ValueError(f"method must be one of {CONVERSIONS}, got {method!r}")
    return method



def compose_rdp(*rdp_values: npt.ArrayLike) -> np.ndarray:
    r"""Compose RDP guarantees at the same orders: :math:`\varepsilon(\alpha) = \sum_i \varepsilon_i(\alpha)`.

    Args:
        *rdp_values: arrays of RDP values (>= 0, ``inf`` allowed), all of the same shape (one entry per
            order).

    Returns:
        ndarray: the element-wise sum.

    Raises:
        ValueError: if no array is given, if values are negative/NaN, or if the shapes differ.

    Source: Mironov 2017 (arXiv:1702.07476), Proposition 1.
    """
    if not rdp_values:
        raise ValueError("compose_rdp needs at least one array of RDP values, got none")
    arrays = [check_real_array(f"rdp_values[{i}]", v, lo=0.0, allow_inf=True) for i, v in enumerate(rdp_values)]
    shape = arrays[0].shape
    for i, arr in enumerate(arrays):
        if arr.shape != shape:
            raise ValueError(f"rdp_values[{i}] must have the shape {shape} of rdp_values[0] (one value per "
                             f"order), got {arr.shape}")
    return np.asarray(np.sum(arrays, axis=0))



# ----------------------------------------------------------------------------------------------------------
# RDP -> (epsilon, delta)
# ----------------------------------------------------------------------------------------------------------

def _check_orders_rdp(orders: npt.ArrayLike | None, rdp: npt.ArrayLike, name: str = "rdp"
                      ) -> tuple[np.ndarray, np.ndarray]:
    orders = check_orders(orders)
    rdp = check_real_array(name, rdp, lo=0.0, allow_inf=True)
    if rdp.ndim == 0:
        rdp = rdp.reshape(1)
    if rdp.shape != orders.shape:
        raise ValueError(f"{name} must have one value per order: orders has shape {orders.shape}, {name} has shape "
                         f"{rdp.shape}")
    return orders, rdp


def _epsilons_per_order(orders: np.ndarray, rdp: np.ndarray, log_delta: float, method: str) -> np.ndarray:
    """Epsilon bound at every order (before the minimum and the clip at 0)."""
    am1 = orders - 1.0
    with np.errstate(invalid="ignore"):
        if method == "classic":
            # Mironov 2017, Proposition 3: eps = r + ln(1/delta)/(alpha - 1)
            eps = rdp - log_delta / am1
        else:
            # Canonne-Kamath-Steinke 2020, Proposition 12:
            # eps = r + ln((alpha-1)/alpha) - (ln delta + ln alpha)/(alpha - 1)
            eps = rdp + np.log1p(-1.0 / orders) - (log_delta + np.log(orders)) / am1
    return np.where(np.isinf(rdp), np.inf, eps)


def rdp_to_dp_epsilon_and_order(orders: npt.ArrayLike | None, rdp: npt.ArrayLike, delta: float,
                                method: str = "improved") -> tuple[float, float]:
    r"""Smallest :math:`\varepsilon` over the orders for an RDP curve at a target :math:`\delta`, and the order.

    ``method="classic"`` (Mironov 2017, arXiv:1702.07476, Proposition 3):
    :math:`\varepsilon = \min_\alpha\, \varepsilon(\alpha) + \ln(1/\delta)/(\alpha-1)`.

    ``method="improved"`` (Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Proposition 12):
    :math:`\varepsilon = \min_\alpha\, \varepsilon(\alpha) + \ln\frac{\alpha-1}{\alpha}
    - \frac{\ln\delta + \ln\alpha}{\alpha-1}`,
    which is smaller than the classic value at every order (by
    :math:`\ln\frac{\alpha}{\alpha-1} + \frac{\ln\alpha}{\alpha-1} > 0`).

    Negative values are clipped to 0 (a mechanism is always :math:`(0, \delta)`-DP for the :math:`\delta`
    it reaches there).

    Args:
        orders: 1-D array of orders > 1 (``None``: :data:`DEFAULT_ORDERS`).
        rdp: RDP values at those orders (>= 0, ``inf`` allowed), same shape.
        delta: target delta in (0, 1).
        method: ``"improved"`` (default) or ``"classic"``.

    Returns:
        ``(epsilon, order)``: floats; ``(inf, nan)`` when every order has infinite RDP.

    Raises:
        ValueError: for bad orders, RDP values, delta or method.
    """
    orders, rdp = _check_orders_rdp(orders, rdp)
    delta = check_delta(delta, allow_zero=False)
    method = _check_method(method)
    eps = _epsilons_per_order(orders, rdp, float(np.log(delta)), method)
    if np.all(np.isinf(eps)):
        return float("inf"), float("nan")
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(orders[i])


def rdp_to_dp_epsilon(orders: npt.ArrayLike | None, rdp: npt.ArrayLike, delta: float,
                      method: str = "improved") -> float:
    r"""Smallest :math:`\varepsilon` over the given orders for a target :math:`\delta` (see
    :func:`rdp_to_dp_epsilon_and_order` for the formulas; this returns only :math:`\varepsilon`).

    Source: Mironov 2017 (arXiv:1702.07476) Proposition 3; Canonne, Kamath & Steinke 2020
    (arXiv:2004.00010) Proposition 12.
    """
    return rdp_to_dp_epsilon_and_order(orders, rdp, delta, method)[0]


def rdp_to_dp_delta(orders: npt.ArrayLike | None, rdp: npt.ArrayLike, epsilon: float,
                    method: str = "improved") -> float:
    r"""Smallest :math:`\delta` over the given orders for an RDP curve at a target :math:`\varepsilon`.

    Inverting the conversions of :func:`rdp_to_dp_epsilon_and_order` at each order:

    * classic (Mironov 2017, Proposition 3):
      :math:`\delta = \exp\big((\alpha-1)(\varepsilon(\alpha) - \varepsilon)\big)`;
    * improved (Canonne, Kamath & Steinke 2020, Proposition 12):
      :math:`\delta = \exp\big((\alpha-1)(\varepsilon(\alpha) - \varepsilon + \ln(1 - 1/\alpha)) - \ln\alpha\big)`.

    The minimum over orders is taken in log-space and capped at 1.

    Args:
        orders: 1-D array of orders > 1 (``None``: :data:`DEFAULT_ORDERS`).
        rdp: RDP values at those orders (>= 0, ``inf`` allowed).
        epsilon: target epsilon >= 0.
        method: ``"improved"`` (default) or ``"classic"``.

    Returns:
        float: delta in [0, 1].

    Raises:
        ValueError: for bad orders, RDP values, epsilon or method.
    """
    orders, rdp = _check_orders_rdp(orders, rdp)
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    method = _check_method(method)
    am1 = orders - 1.0
    with np.errstate(invalid="ignore"):
        if method == "classic":
            log_delta = am1 * (rdp - epsilon)
        else:
            log_delta = am1 * (rdp - epsilon + np.log1p(-1.0 / orders)) - np.log(orders)
    log_delta = np.where(np.isinf(rdp), np.inf, log_delta)
    return float(np.exp(min(0.0, float(np.min(log_delta)))))


# ----------------------------------------------------------------------------------------------------------
# RDP curve object
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RDPCurve:
    r"""An RDP guarantee :math:`\alpha \mapsto \varepsilon(\alpha)` tabulated at a fixed set of orders.

    Curves over the same orders compose by addition (``curve1 + curve2``, ``k * curve``), and convert to
    :math:`(\varepsilon, \delta)`-DP with :meth:`epsilon` / :meth:`delta`.

    Attributes:
        orders: 1-D float array of orders > 1 (read-only).
        epsilons: RDP values at those orders, >= 0, ``inf`` allowed (read-only).

    >>> curve = RDPCurve.gaussian(sigma=1.0, orders=[2.0, 4.0])
    >>> (3 * curve).epsilons
    array([3., 6.])
    """

    orders: np.ndarray
    epsilons: np.ndarray

    def __post_init__(self) -> None:
        orders, eps = _check_orders_rdp(self.orders, self.epsilons, "epsilons")
        orders = orders.copy()
        eps = eps.copy()
        orders.flags.writeable = False
        eps.flags.writeable = False
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    # -- constructors ------------------------------------------------------------------------------------
    @classmethod
    def from_function(cls, fn: Callable[[np.ndarray], Any], orders: npt.ArrayLike | None = None) -> RDPCurve:
        """Tabulate a vectorised function ``fn(orders) -> rdp values`` at ``orders`` (default orders if None)."""
        orders = check_orders(orders)
        if not callable(fn):
            raise ValueError(f"fn must be a callable mapping an array of orders to RDP values, got {fn!r}")
        return cls(orders, np.asarray(fn(orders), dtype=float))

    @classmethod
    def from_mechanism(cls, mechanism: Mechanism, orders: npt.ArrayLike | None = None) -> RDPCurve:
        """RDP curve of any mechanism description (see :func:`mechanism_rdp`).

        >>> RDPCurve.from_mechanism(GaussianMechanism(sigma=1.0), orders=[2.0, 4.0]).epsilons
        array([1., 2.])
        """
        orders = check_orders(orders)
        return cls(orders, np.asarray(mechanism_rdp(orders, mechanism)))

    @classmethod
    def gaussian(cls, sigma: float | GaussianMechanism, sensitivity: float = 1.0,
                 orders: npt.ArrayLike | None = None) -> RDPCurve:
        """RDP curve of the Gaussian mechanism (see :func:`gaussian_rdp`)."""
        orders = check_orders(orders)
        return cls(orders, np.asarray(gaussian_rdp(orders, sigma, sensitivity)))

    @classmethod
    def laplace(cls, scale: float | LaplaceMechanism, sensitivity: float = 1.0,
                orders: npt.ArrayLike | None = None) -> RDPCurve:
        """RDP curve of the Laplace mechanism (see :func:`laplace_rdp`)."""
        orders = check_orders(orders)
        return cls(orders, np.asarray(laplace_rdp(orders, scale, sensitivity)))

    @classmethod
    def randomized_response(cls, epsilon: float | RandomizedResponse,
                            orders: npt.ArrayLike | None = None) -> RDPCurve:
        """RDP curve of binary randomized response (see :func:`randomized_response_rdp`)."""
        orders = check_orders(orders)
        return cls(orders, np.asarray(randomized_response_rdp(orders, epsilon)))

    @classmethod
    def zcdp(cls, rho: float, orders: npt.ArrayLike | None = None) -> RDPCurve:
        r"""The RDP curve :math:`\alpha \mapsto \alpha\rho` implied by :math:`\rho`-zCDP."""
        orders = check_orders(orders)
        return cls(orders, np.asarray(zcdp_rdp(orders, rho)))

    # -- composition -------------------------------------------------------------------------------------
    def compose(self, other: RDPCurve) -> RDPCurve:
        """RDP of running both mechanisms: the values add order by order (Mironov 2017, Proposition 1)."""
        if not isinstance(other, RDPCurve):
            raise ValueError(f"other must be an RDPCurve, got {type(other).__name__}")
        if self.orders.shape != other.orders.shape or not np.array_equal(self.orders, other.orders):
            raise ValueError("the two curves must be tabulated at the same orders to compose; build both with "
                             "the same orders= argument")
        return RDPCurve(self.orders, self.epsilons + other.epsilons)

    def self_compose(self, k: int) -> RDPCurve:
        """RDP of ``k`` runs of the mechanism (``k`` an integer >= 0): the values are multiplied by ``k``."""
        k = check_int("k", k, lo=0)
        return RDPCurve(self.orders, self.epsilons * k)

    def __add__(self, other: RDPCurve) -> RDPCurve:
        return self.compose(other)

    def __mul__(self, k: int) -> RDPCurve:
        return self.self_compose(k)

    __rmul__ = __mul__

    # -- conversions -------------------------------------------------------------------------------------
    def epsilon(self, delta: float, method: str = "improved") -> float:
        """Smallest epsilon over the orders for ``delta`` (see :func:`rdp_to_dp_epsilon_and_order`)."""
        return rdp_to_dp_epsilon_and_order(self.orders, self.epsilons, delta, method)[0]

    def epsilon_and_order(self, delta: float, method: str = "improved") -> tuple[float, float]:
        """``(epsilon, order)`` for ``delta`` (see :func:`rdp_to_dp_epsilon_and_order`)."""
        return rdp_to_dp_epsilon_and_order(self.orders, self.epsilons, delta, method)

    def delta(self, epsilon: float, method: str = "improved") -> float:
        """Smallest delta over the orders for ``epsilon`` (see :func:`rdp_to_dp_delta`)."""
        return rdp_to_dp_delta(self.orders, self.epsilons, epsilon, method)

    def __repr__(self) -> str:
        return f"RDPCurve({self.orders.size} orders in [{self.orders.min():g}, {self.orders.max():g}])"

