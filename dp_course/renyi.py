r"""Rényi differential privacy (RDP) and zero-concentrated DP (zCDP): curves, composition, conversions.

A mechanism is :math:`(\alpha, \varepsilon(\alpha))`-RDP when the Rényi divergence of order :math:`\alpha`
between its output laws on any two neighbouring inputs is at most :math:`\varepsilon(\alpha)`, with

.. math:: D_\alpha(P \| Q) = \frac{1}{\alpha - 1} \ln \mathbb{E}_{x \sim Q}\Big[\big(P(x)/Q(x)\big)^\alpha\Big]

(Mironov 2017, arXiv:1702.07476, Definition 3; the slide deck's version of this display is garbled, see
ERRATA item 9).  It is :math:`\rho`-zCDP when :math:`\varepsilon(\alpha) \le \alpha\rho` for every
:math:`\alpha > 1` (Bun & Steinke 2016, arXiv:1605.02065, Definition 1.1).

What lives here:

* RDP curves of the Gaussian, Laplace and randomized response mechanisms (Mironov 2017, Table II), as
  functions of the order (scalar or array) and as an :class:`RDPCurve` over a fixed set of orders;
* composition (RDP values add order by order; zCDP parameters add);
* conversions to :math:`(\varepsilon, \delta)`-DP: the classic one of Mironov (2017, Proposition 3) and the
  improved one of Canonne, Kamath & Steinke (2020, arXiv:2004.00010, Proposition 12), optimised over a set of
  orders, in both directions (epsilon for a delta and delta for an epsilon);
* zCDP to :math:`(\varepsilon, \delta)` (Bun–Steinke Proposition 1.3 and the improved conversion optimised
  exactly over real orders), the inverse (the largest :math:`\rho` meeting a target), and pure DP to zCDP.

A mechanism can be named by its frozen description from :mod:`dp_course.mechanisms`: :func:`mechanism_rdp` and
:meth:`RDPCurve.from_mechanism` take any description, and the curve and zCDP functions of one mechanism take its
description in place of its parameters (``gaussian_rdp(alpha, GaussianMechanism(2.0))``).

Two corrections to the slide deck are implemented here (see ``docs/errata.md``): the zCDP conversion
is :math:`\varepsilon = \rho + 2\sqrt{\rho \ln(1/\delta)}` (item 5, not :math:`\rho + 4\rho\ln(1/\delta)`), and its
inverse is :math:`\rho = (\sqrt{\ln(1/\delta) + \varepsilon} - \sqrt{\ln(1/\delta)})^2` (item 6, with the square).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize

from ._validation import DEFAULT_ORDERS, check_delta, check_int, check_orders, check_real, check_real_array
from .divergences import renyi_divergence
from .mechanisms import (MECHANISMS, GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism, Mechanism,
                         NameAndShame, PureDPMechanism, RandomizedResponse)

__all__ = [
    "DEFAULT_ORDERS",
    "RDPCurve",
    "gaussian_rdp",
    "laplace_rdp",
    "randomized_response_rdp",
    "mechanism_rdp",
    "compose_rdp",
    "rdp_to_dp_epsilon",
    "rdp_to_dp_epsilon_and_order",
    "rdp_to_dp_delta",
    "gaussian_zcdp",
    "zcdp_rdp",
    "compose_zcdp",
    "zcdp_to_dp_epsilon",
    "zcdp_to_dp_delta",
    "zcdp_rho_for_dp",
    "pure_dp_to_zcdp",
]

# DEFAULT_ORDERS (dp-accounting's default orders, the default of every ``orders`` argument) is defined with the
# check of that argument in dp_course._validation and exported from here, where the RDP functions use it.

CONVERSIONS = ("improved", "classic")
"""Names accepted by the ``method`` argument of the RDP -> (epsilon, delta) conversions."""


# ----------------------------------------------------------------------------------------------------------
# small private helpers
# ----------------------------------------------------------------------------------------------------------

def _out(x: np.ndarray, scalar: bool) -> float | np.ndarray:
    """Scalar in -> float out; array in -> ndarray out."""
    return float(x) if scalar else x


def _check_alpha(alpha: Any, name: str = "alpha") -> tuple[np.ndarray, bool]:
    """Orders for the mechanism curves: real numbers >= 1 (1 is the KL limit); +inf allowed."""
    scalar = np.ndim(alpha) == 0
    if scalar:
        a = np.asarray(check_real(name, alpha, lo=1.0, allow_inf=True))
    else:
        a = check_real_array(name, alpha, lo=1.0, allow_inf=True)
    return a, scalar


def _description(value: Any, kind: type, name: str, extra: dict[str, float]) -> Any:
    """``value`` if it is a description of class ``kind`` (with ``extra`` arguments left at their defaults).

    Returns ``None`` for anything that is not a mechanism description, which the caller then validates as a
    number; a description of another mechanism, or one given together with a non-default ``extra`` argument
    (e.g. ``sensitivity``, which the description already holds), is a ``ValueError``.
    """
    if not isinstance(value, MECHANISMS):
        return None
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be a number or a {kind.__name__}, got {value!r}; for any mechanism "
                         f"use mechanism_rdp(alpha, mechanism)")
    for arg, given in extra.items():
        if given != 1.0:
            raise ValueError(f"{arg} must be left out when {name} is a {kind.__name__} (it holds its own "
                             f"{arg}), got {arg}={given!r}")
    return value


def _expm1_minus_x(x: np.ndarray) -> np.ndarray:
    """g(x) = e^x - 1 - x, accurate to rounding also for tiny |x| (Taylor series for |x| < 0.5)."""
    x = np.asarray(x, dtype=float)
    near = np.abs(x) < 0.5
    xs = np.where(near, x, 0.0)
    series = np.zeros_like(xs)
    term = xs * xs / 2.0
    for n in range(3, 23):  # |x| < 0.5: the omitted terms are below 0.5^20/22! relative
        series = series + term
        term = term * xs / n
    with np.errstate(over="ignore"):
        direct = np.expm1(np.where(near, 0.0, x)) - np.where(near, 0.0, x)
    return np.where(near, series, direct)


def _log_cosh(y: np.ndarray) -> np.ndarray:
    """ln cosh(y) for y >= 0 without overflow or cancellation."""
    y = np.asarray(y, dtype=float)
    small = y < 1.0
    with np.errstate(over="ignore"):
        # small y: cosh y - 1 = 2 sinh^2(y/2), so ln cosh y = log1p(2 sinh^2(y/2)); large y: factor e^y out
        return np.where(small, np.log1p(2.0 * np.sinh(np.minimum(y, 1.0) / 2.0) ** 2),
                        y - np.log(2.0) + np.log1p(np.exp(-2.0 * y)))


def _check_method(method: Any) -> str:
    if method not in CONVERSIONS:
        raise ValueError(f"method must be one of {CONVERSIONS}, got {method!r}")
    return method


# ----------------------------------------------------------------------------------------------------------
# RDP curves of the basic mechanisms
# ----------------------------------------------------------------------------------------------------------

def gaussian_rdp(alpha: npt.ArrayLike, sigma: float | GaussianMechanism,
                 sensitivity: float = 1.0) -> float | np.ndarray:
    r"""RDP of the Gaussian mechanism: :math:`\varepsilon(\alpha) = \alpha \Delta^2 / (2\sigma^2)`.

    The Rényi divergence between :math:`N(0, \sigma^2)` and :math:`N(\Delta, \sigma^2)` at order
    :math:`\alpha`; at :math:`\alpha = 1` it is the KL divergence :math:`\Delta^2/(2\sigma^2)`, and it is
    infinite at :math:`\alpha = \infty`.

    Args:
        alpha: order(s) >= 1 (scalar or array; ``inf`` allowed).
        sigma: noise standard deviation, > 0, or a :class:`~dp_course.mechanisms.GaussianMechanism`
            (which holds its own sensitivity).
        sensitivity: :math:`\ell_2`-sensitivity :math:`\Delta` of the query, > 0.

    Returns:
        float for scalar ``alpha``, ndarray of the same shape otherwise.

    Raises:
        ValueError: if an argument is out of range.

    Source: Mironov 2017 (arXiv:1702.07476), Table II / Proposition 7.

    >>> gaussian_rdp(2.0, sigma=1.0)
    1.0
    """
    a, scalar = _check_alpha(alpha)
    mech = _description(sigma, GaussianMechanism, "sigma", {"sensitivity": sensitivity})
    if mech is not None:
        sigma, sensitivity = mech.sigma, mech.sensitivity
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    return _out(a * sensitivity**2 / (2.0 * sigma**2), scalar)


def laplace_rdp(alpha: npt.ArrayLike, scale: float | LaplaceMechanism,
                sensitivity: float = 1.0) -> float | np.ndarray:
    r"""RDP of the Laplace mechanism with noise scale :math:`b` and :math:`\ell_1`-sensitivity :math:`\Delta`.

    With :math:`\varepsilon = \Delta / b` (Mironov 2017, Table II), for :math:`\alpha > 1`

    .. math:: \varepsilon(\alpha) = \frac{1}{\alpha-1}\ln\Big(\frac{\alpha}{2\alpha-1}e^{(\alpha-1)\varepsilon}
              + \frac{\alpha-1}{2\alpha-1}e^{-\alpha\varepsilon}\Big),

    :math:`\varepsilon(1) = \varepsilon + e^{-\varepsilon} - 1` and :math:`\varepsilon(\infty) = \varepsilon`.
    Evaluated in the stable form (the :math:`e^{(\alpha-1)\varepsilon}` factor taken out of the log)

    .. math:: \varepsilon(\alpha) = \varepsilon + \frac{\ln\frac{\alpha}{2\alpha-1}
              + \ln\big(1 + \frac{\alpha-1}{\alpha}e^{-(2\alpha-1)\varepsilon}\big)}{\alpha - 1},

    which never overflows for large :math:`\alpha` or :math:`\varepsilon`.  When :math:`\alpha\varepsilon < 1`
    the value (about :math:`\alpha\varepsilon^2/2`) is much smaller than :math:`\varepsilon` and the form
    above would cancel; there the bracket minus one is written as
    :math:`[\alpha g((\alpha-1)\varepsilon) + (\alpha-1)g(-\alpha\varepsilon)]/(2\alpha-1)` with
    :math:`g(x) = e^x - 1 - x \ge 0` (Taylor series for small :math:`|x|`), a sum of non-negative terms.

    Args:
        alpha: order(s) >= 1 (scalar or array; ``inf`` allowed).
        scale: Laplace scale :math:`b` > 0, or a :class:`~dp_course.mechanisms.LaplaceMechanism` (which holds
            its own sensitivity).
        sensitivity: :math:`\ell_1`-sensitivity :math:`\Delta` > 0.

    Returns:
        float for scalar ``alpha``, ndarray of the same shape otherwise.

    Raises:
        ValueError: if an argument is out of range.

    Source: Mironov 2017 (arXiv:1702.07476), Table II.
    """
    a, scalar = _check_alpha(alpha)
    mech = _description(scale, LaplaceMechanism, "scale", {"sensitivity": sensitivity})
    if mech is not None:
        scale, sensitivity = mech.scale, mech.sensitivity
    scale = check_real("scale", scale, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    eps = sensitivity / scale
    out = np.empty(a.shape, dtype=float)
    one = a == 1.0
    inf = np.isinf(a)
    mid = ~one & ~inf
    am = a[mid]
    am1 = am - 1.0
    small = am * eps < 1.0
    # alpha * eps < 1: the bracket minus 1 is [alpha g((alpha-1)eps) + (alpha-1) g(-alpha eps)]/(2 alpha - 1)
    # with g(x) = e^x - 1 - x >= 0 (the first-order terms cancel exactly), so no cancellation for tiny eps
    a_s, am1_s = am[small], am1[small]
    excess = (a_s * _expm1_minus_x(am1_s * eps) + am1_s * _expm1_minus_x(-a_s * eps)) / (2.0 * a_s - 1.0)
    vals = np.empty(am.shape)
    vals[small] = np.log1p(excess) / am1_s
    # otherwise: factor e^{(alpha-1)eps} out of the log; log(alpha/(2 alpha - 1)) = log1p(am1) - log1p(2 am1)
    a_b, am1_b = am[~small], am1[~small]
    log_ratio = np.log1p(am1_b) - np.log1p(2.0 * am1_b)
    tail = np.log1p(am1_b / a_b * np.exp(-(2.0 * a_b - 1.0) * eps))
    vals[~small] = eps + (log_ratio + tail) / am1_b
    out[mid] = vals
    out[one] = _expm1_minus_x(np.asarray(-eps))  # KL divergence: eps + e^-eps - 1
    out[inf] = eps
    return _out(out, scalar)


def randomized_response_rdp(alpha: npt.ArrayLike, epsilon: float | RandomizedResponse) -> float | np.ndarray:
    r"""RDP of binary randomized response (truth told w.p. :math:`p = e^\varepsilon/(1+e^\varepsilon)`).

    Mironov 2017, Table II: for :math:`\alpha > 1`

    .. math:: \varepsilon(\alpha) = \frac{1}{\alpha-1}
              \ln\big(p^\alpha(1-p)^{1-\alpha} + (1-p)^\alpha p^{1-\alpha}\big),

    :math:`\varepsilon(1) = (2p-1)\,\varepsilon = \varepsilon\tanh(\varepsilon/2)` and
    :math:`\varepsilon(\infty) = \varepsilon`.  With :math:`p = e^{\varepsilon/2}/(2\cosh(\varepsilon/2))` the
    bracket is :math:`\cosh((2\alpha-1)\varepsilon/2)/\cosh(\varepsilon/2)`, so it is evaluated as

    .. math:: \varepsilon(\alpha) = \frac{\ln\cosh\big((2\alpha-1)\varepsilon/2\big)
              - \ln\cosh(\varepsilon/2)}{\alpha - 1},

    with :math:`\ln\cosh y = \ln(1 + 2\sinh^2(y/2))` for small :math:`y` and
    :math:`y - \ln 2 + \ln(1 + e^{-2y})` otherwise; when :math:`h = (\alpha-1)\varepsilon \le 1` the
    difference is taken as :math:`\ln(1 + 2\sinh^2(h/2) + \tanh(\varepsilon/2)\sinh h)`, a sum of
    non-negative terms (no cancellation as :math:`\alpha \to 1`).

    Args:
        alpha: order(s) >= 1 (scalar or array; ``inf`` allowed).
        epsilon: the randomized response parameter, >= 0, or a
            :class:`~dp_course.mechanisms.RandomizedResponse`.

    Returns:
        float for scalar ``alpha``, ndarray of the same shape otherwise.

    Raises:
        ValueError: if an argument is out of range.

    Source: Mironov 2017 (arXiv:1702.07476), Table II.
    """
    a, scalar = _check_alpha(alpha)
    mech = _description(epsilon, RandomizedResponse, "epsilon", {})
    eps = mech.epsilon if mech is not None else check_real("epsilon", epsilon, lo=0.0)
    out = np.empty(a.shape, dtype=float)
    one = a == 1.0
    inf = np.isinf(a)
    mid = ~one & ~inf
    am = a[mid]
    h = (am - 1.0) * eps
    near = h <= 1.0
    vals = np.empty(am.shape)
    # h = (alpha-1) eps <= 1: ln cosh(y + h) - ln cosh(y) = ln(cosh h + tanh(y) sinh h)
    #   = log1p(2 sinh^2(h/2) + tanh(y) sinh h) with y = eps/2 - non-negative terms, no cancellation near alpha = 1
    hn = h[near]
    vals[near] = np.log1p(2.0 * np.sinh(hn / 2.0) ** 2 + np.tanh(eps / 2.0) * np.sinh(hn)) / (am[near] - 1.0)
    far = ~near
    vals[far] = (_log_cosh((2.0 * am[far] - 1.0) * eps / 2.0) - _log_cosh(np.asarray(eps / 2.0))) / (am[far] - 1.0)
    out[mid] = vals
    out[one] = eps * np.tanh(eps / 2.0)
    out[inf] = eps
    # rounding can leave -1e-17 where the truth is 0 (epsilon = 0)
    return _out(np.maximum(out, 0.0), scalar)


def mechanism_rdp(alpha: npt.ArrayLike, mechanism: Mechanism) -> float | np.ndarray:
    r"""RDP of a mechanism given by its description: the Rényi divergence of its worst neighbouring pair.

    .. math:: \varepsilon(\alpha) = \max\big(D_\alpha(P \| Q),\, D_\alpha(Q \| P)\big)

    for the output laws :math:`(P, Q)` of the description's neighbouring pair (each class of
    :mod:`dp_course.mechanisms` documents its pair, the worst case for that mechanism).  The Gaussian, Laplace
    and randomized response mechanisms use the closed forms of :func:`gaussian_rdp`, :func:`laplace_rdp` and
    :func:`randomized_response_rdp`; k-ary randomized response and name-and-shame the exact divergence of their
    two pmfs (:func:`dp_course.divergences.renyi_divergence`).  Name-and-shame with :math:`\delta > 0` is
    not RDP at any order :math:`\alpha \ge 1` (the value is ``inf``).

    Args:
        alpha: order(s) >= 1 (scalar or array; ``inf`` allowed).
        mechanism: a description from :mod:`dp_course.mechanisms`.

    Returns:
        float for scalar ``alpha``, ndarray of the same shape otherwise.

    Raises:
        ValueError: if ``alpha`` is out of range or ``mechanism`` is not a description.

    Source: Mironov 2017 (arXiv:1702.07476), Definition 3 and Table II.

    >>> mechanism_rdp(2.0, GaussianMechanism(sigma=1.0))
    1.0
    """
    if isinstance(mechanism, GaussianMechanism):
        return gaussian_rdp(alpha, mechanism)
    if isinstance(mechanism, LaplaceMechanism):
        return laplace_rdp(alpha, mechanism)
    if isinstance(mechanism, RandomizedResponse):
        return randomized_response_rdp(alpha, mechanism)
    if isinstance(mechanism, (KaryRandomizedResponse, NameAndShame)):
        a, scalar = _check_alpha(alpha)
        p, q = mechanism.output_distributions()
        out = np.maximum(renyi_divergence(p, q, a), renyi_divergence(q, p, a))
        return _out(np.asarray(out, dtype=float), scalar)
    names = ", ".join(cls.__name__ for cls in MECHANISMS)
    raise ValueError(f"mechanism must be a description from dp_course.mechanisms ({names}), got {mechanism!r}")


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

def _check_orders_rdp(orders: npt.ArrayLike | None, rdp: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    orders = check_orders(orders)
    rdp = check_real_array("rdp", rdp, lo=0.0, allow_inf=True)
    if rdp.ndim == 0:
        rdp = rdp.reshape(1)
    if rdp.shape != orders.shape:
        raise ValueError(f"rdp must have one value per order: orders has shape {orders.shape}, rdp has shape "
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
        orders, eps = _check_orders_rdp(self.orders, self.epsilons)
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


# ----------------------------------------------------------------------------------------------------------
# zCDP
# ----------------------------------------------------------------------------------------------------------

def gaussian_zcdp(sigma: float | GaussianMechanism, sensitivity: float = 1.0) -> float:
    r"""zCDP parameter of the Gaussian mechanism: :math:`\rho = \Delta^2 / (2\sigma^2)`.

    This is the tight statement (Bun & Steinke 2016, arXiv:1605.02065, Proposition 1.6).  The slide deck's
    "noise :math:`N(0, \Delta^2/\rho)` is :math:`\rho`-zCDP" is valid but loose by a factor 2 (ERRATA item 8).

    Args:
        sigma: noise standard deviation > 0, or a :class:`~dp_course.mechanisms.GaussianMechanism`.
        sensitivity: :math:`\ell_2`-sensitivity > 0 (left out with a mechanism, which holds its own).

    Raises:
        ValueError: if ``sigma`` or ``sensitivity`` is not > 0.
    """
    mech = _description(sigma, GaussianMechanism, "sigma", {"sensitivity": sensitivity})
    if mech is not None:
        sigma, sensitivity = mech.sigma, mech.sensitivity
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    return sensitivity**2 / (2.0 * sigma**2)


def zcdp_rdp(alpha: npt.ArrayLike, rho: float) -> float | np.ndarray:
    r""":math:`\rho`-zCDP implies :math:`(\alpha, \alpha\rho)`-RDP for every :math:`\alpha > 1`.

    Source: Bun & Steinke 2016 (arXiv:1605.02065), Definition 1.1.
    """
    a, scalar = _check_alpha(alpha)
    rho = check_real("rho", rho, lo=0.0)
    with np.errstate(invalid="ignore"):
        out = np.where(rho == 0.0, 0.0, a * rho)
    return _out(out, scalar)


def compose_zcdp(*rhos: float) -> float:
    r"""Compose zCDP guarantees: :math:`\rho = \sum_i \rho_i` (Bun & Steinke 2016, arXiv:1605.02065, Lemma 1.7).

    Raises:
        ValueError: if no value is given or a value is negative / not finite.
    """
    if not rhos:
        raise ValueError("compose_zcdp needs at least one rho, got none")
    return float(sum(check_real(f"rhos[{i}]", r, lo=0.0) for i, r in enumerate(rhos)))


def pure_dp_to_zcdp(epsilon: float | PureDPMechanism) -> float:
    r"""An :math:`\varepsilon`-DP mechanism is :math:`\varepsilon^2/2`-zCDP.

    Source: Bun & Steinke 2016 (arXiv:1605.02065), Proposition 1.4.

    Args:
        epsilon: epsilon >= 0, or a pure-DP mechanism description (randomized response, k-ary randomized
            response, Laplace), whose ``epsilon`` is used.

    Raises:
        ValueError: if ``epsilon`` is negative or not finite, or a description that is not pure DP.
    """
    if isinstance(epsilon, MECHANISMS):
        if not isinstance(epsilon, (RandomizedResponse, KaryRandomizedResponse, LaplaceMechanism)):
            raise ValueError(f"epsilon must be a number or a pure-DP mechanism (randomized response, k-ary "
                             f"randomized response, Laplace), got {epsilon!r}")
        epsilon = epsilon.epsilon
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    return 0.5 * epsilon**2


def _check_zcdp_method(method: Any) -> str:
    allowed = ("improved", "bun_steinke")
    if method not in allowed:
        raise ValueError(f"method must be one of {allowed}, got {method!r}")
    return method


def _zcdp_improved_alpha(rho: float, log_inv_delta: float) -> float:
    r"""The order minimising the improved conversion for :math:`\rho`-zCDP.

    With :math:`f(\alpha) = \alpha\rho + \ln(1 - 1/\alpha) - (\ln\delta + \ln\alpha)/(\alpha-1)` one finds
    :math:`f'(\alpha) = \rho + (\ln\delta + \ln\alpha)/(\alpha-1)^2`, so the minimiser solves
    :math:`g(\alpha) = \rho(\alpha-1)^2 + \ln\alpha = \ln(1/\delta)`; :math:`g` increases from 0 to
    :math:`\infty` on :math:`(1, \infty)`, hence a unique root, bracketed by
    :math:`[1, 1 + \sqrt{\ln(1/\delta)/\rho}]`.
    """
    def g(a: float) -> float:
        return rho * (a - 1.0) ** 2 + np.log(a) - log_inv_delta

    hi = 1.0 + np.sqrt(log_inv_delta / rho)
    if g(hi) <= 0.0:  # only by rounding
        return hi
    return optimize.brentq(g, 1.0, hi, xtol=1e-15, rtol=4.0 * np.finfo(float).eps, maxiter=500)


def _zcdp_improved_eps_raw(rho: float, delta: float) -> float:
    """Improved zCDP -> DP epsilon before clipping at 0 (rho > 0, 0 < delta < 1)."""
    log_inv_delta = -np.log(delta)
    a = _zcdp_improved_alpha(rho, log_inv_delta)
    am1 = a - 1.0
    return a * rho + np.log1p(-1.0 / a) + (log_inv_delta - np.log(a)) / am1


def zcdp_to_dp_epsilon(rho: float, delta: float, method: str = "improved") -> float:
    r"""Epsilon of a :math:`\rho`-zCDP mechanism at a target :math:`\delta`.

    * ``"bun_steinke"``: :math:`\varepsilon = \rho + 2\sqrt{\rho\ln(1/\delta)}` (Bun & Steinke 2016,
      arXiv:1605.02065, Proposition 1.3; the slide deck's :math:`\rho + 4\rho\ln(1/\delta)` is wrong,
      ERRATA item 5).
    * ``"improved"`` (default): the conversion of Canonne, Kamath & Steinke 2020 (arXiv:2004.00010,
      Proposition 12) applied to the RDP curve :math:`\alpha\rho` and minimised exactly over real
      :math:`\alpha > 1` (root of :math:`\rho(\alpha-1)^2 + \ln\alpha = \ln(1/\delta)`).  Never larger than
      the Bun–Steinke value.

    Args:
        rho: zCDP parameter >= 0.
        delta: target delta in (0, 1).
        method: ``"improved"`` or ``"bun_steinke"``.

    Returns:
        float: epsilon >= 0.

    Raises:
        ValueError: if an argument is out of range.

    >>> round(zcdp_to_dp_epsilon(1 / 32, 1e-3), 12)
    0.688002455488
    """
    rho = check_real("rho", rho, lo=0.0)
    delta = check_delta(delta, allow_zero=False)
    method = _check_zcdp_method(method)
    if rho == 0.0:
        return 0.0
    if method == "bun_steinke":
        return float(rho + 2.0 * np.sqrt(rho * -np.log(delta)))
    return max(0.0, float(_zcdp_improved_eps_raw(rho, delta)))


def zcdp_to_dp_delta(rho: float, epsilon: float, method: str = "improved") -> float:
    r"""Delta of a :math:`\rho`-zCDP mechanism at a target :math:`\varepsilon`.

    * ``"bun_steinke"``: the classic RDP conversion :math:`\delta = \exp((\alpha-1)(\alpha\rho - \varepsilon))`
      minimised over :math:`\alpha`, i.e. :math:`\delta = \exp(-(\varepsilon-\rho)^2/(4\rho))` for
      :math:`\varepsilon \ge \rho` and 1 otherwise (the inverse of Bun & Steinke 2016, Proposition 1.3).
    * ``"improved"``:
      :math:`\ln\delta = \min_{\alpha>1} (\alpha-1)(\alpha\rho - \varepsilon + \ln(1-1/\alpha)) - \ln\alpha`
      (Canonne, Kamath & Steinke 2020, Proposition 12).  The objective is convex in :math:`\alpha` (second
      derivative :math:`2\rho + 1/(\alpha(\alpha-1)) > 0`), so its stationary point, the root of
      :math:`(2\alpha-1)\rho - \varepsilon + \ln(1-1/\alpha)`, is found by bracketing.

    Args:
        rho: zCDP parameter >= 0.
        epsilon: target epsilon >= 0.
        method: ``"improved"`` or ``"bun_steinke"``.

    Returns:
        float: delta in [0, 1].

    Raises:
        ValueError: if an argument is out of range.
    """
    rho = check_real("rho", rho, lo=0.0)
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    method = _check_zcdp_method(method)
    if rho == 0.0:
        return 0.0
    if method == "bun_steinke":
        if epsilon <= rho:
            return 1.0
        return float(np.exp(-((epsilon - rho) ** 2) / (4.0 * rho)))

    def h_prime(a: float) -> float:
        return (2.0 * a - 1.0) * rho - epsilon + np.log1p(-1.0 / a)

    hi = max(2.0, (epsilon + np.log(2.0) + rho) / (2.0 * rho))
    lo = 1.0 + 1e-12
    if h_prime(lo) >= 0.0:
        a = lo
    else:
        a = optimize.brentq(h_prime, lo, hi, xtol=1e-15, rtol=4.0 * np.finfo(float).eps, maxiter=500)
    log_delta = (a - 1.0) * (a * rho - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    return float(np.exp(min(0.0, log_delta)))


def zcdp_rho_for_dp(epsilon: float, delta: float, method: str = "bun_steinke") -> float:
    r"""Largest :math:`\rho` such that :math:`\rho`-zCDP implies :math:`(\varepsilon, \delta)`-DP.

    * ``"bun_steinke"`` (default, the slide deck's scenario 2): inverting
      :math:`\varepsilon = \rho + 2\sqrt{\rho\ln(1/\delta)}` gives
      :math:`\rho = \big(\sqrt{\ln(1/\delta) + \varepsilon} - \sqrt{\ln(1/\delta)}\big)^2`
      (the slide prints it without the square, ERRATA item 6).
    * ``"improved"``: the largest :math:`\rho` whose improved conversion (:func:`zcdp_to_dp_epsilon`) is at
      most :math:`\varepsilon`; it is at least the Bun–Steinke value.  Found by bracketing on
      :math:`\ln\rho` (the improved epsilon increases continuously with :math:`\rho`).

    Args:
        epsilon: target epsilon > 0.
        delta: target delta in (0, 1).
        method: ``"bun_steinke"`` or ``"improved"``.

    Returns:
        float: rho > 0.

    Raises:
        ValueError: if an argument is out of range.

    Source: Bun & Steinke 2016 (arXiv:1605.02065), Proposition 1.3; Canonne, Kamath & Steinke 2020
    (arXiv:2004.00010), Proposition 12.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    delta = check_delta(delta, allow_zero=False)
    method = _check_zcdp_method(method)
    log_inv_delta = -np.log(delta)
    # (sqrt(L + eps) - sqrt(L))^2 written as eps^2 / (sqrt(L + eps) + sqrt(L))^2 - no cancellation
    rho_bs = epsilon**2 / (np.sqrt(log_inv_delta + epsilon) + np.sqrt(log_inv_delta)) ** 2
    if method == "bun_steinke":
        return float(rho_bs)

    def excess(log_rho: float) -> float:
        return _zcdp_improved_eps_raw(float(np.exp(log_rho)), delta) - epsilon

    lo = np.log(rho_bs)
    if excess(lo) >= 0.0:  # only by rounding: improved <= Bun-Steinke
        return float(rho_bs)
    hi = lo + np.log(2.0)
    while excess(hi) < 0.0:
        lo, hi = hi, hi + np.log(2.0)
    log_rho = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=4.0 * np.finfo(float).eps, maxiter=500)
    # return the end of the final bracket on the safe side (epsilon not exceeded)
    rho = float(np.exp(log_rho))
    for _ in range(60):
        if _zcdp_improved_eps_raw(rho, delta) <= epsilon:
            break
        rho *= 1.0 - 1e-13
    return rho
