r"""Zero-concentrated differential privacy (zCDP): the Gaussian mechanism, composition, conversions.

A mechanism is :math:`\rho`-zCDP when its RDP curve is at most :math:`\alpha\rho` at every order
:math:`\alpha > 1` (Bun & Steinke 2016, arXiv:1605.02065, Definition 1.1): one number instead of a curve,
exact for the Gaussian mechanism.  Here: the Gaussian mechanism's :math:`\rho` and the RDP curve a
:math:`\rho` implies, composition (the :math:`\rho` add), pure DP to zCDP, and the conversions to
:math:`(\varepsilon, \delta)`-DP – Bun–Steinke Proposition 1.3 and the improved conversion of Canonne, Kamath &
Steinke (2020, arXiv:2004.00010) optimised exactly over real orders – with the inverse (the largest
:math:`\rho` meeting a target).

Two corrections to the slide deck are implemented here (see ``docs/errata.md``): the zCDP conversion
is :math:`\varepsilon = \rho + 2\sqrt{\rho \ln(1/\delta)}` (item 5, not :math:`\rho + 4\rho\ln(1/\delta)`), and its
inverse is :math:`\rho = (\sqrt{\ln(1/\delta) + \varepsilon} - \sqrt{\ln(1/\delta)})^2` (item 6, with the square).
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize

from ._validation import check_alpha, check_delta, check_gaussian_mu, check_real
from .mechanisms import (MECHANISMS, GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism, PureDPMechanism,
                         RandomizedResponse, mechanism_argument)

__all__ = [
    "gaussian_zcdp",
    "zcdp_rdp",
    "compose_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_to_dp_epsilon",
    "zcdp_to_dp_delta",
    "zcdp_rho_for_dp",
]


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
    mech = mechanism_argument(sigma, GaussianMechanism, "sigma", {"sensitivity": sensitivity})
    if mech is not None:
        sigma, sensitivity = mech.sigma, mech.sensitivity
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    return check_gaussian_mu(sigma, sensitivity)


def zcdp_rdp(alpha: npt.ArrayLike, rho: float) -> float | np.ndarray:
    r""":math:`\rho`-zCDP implies :math:`(\alpha, \alpha\rho)`-RDP for every :math:`\alpha > 1`.

    Source: Bun & Steinke 2016 (arXiv:1605.02065), Definition 1.1.
    """
    a, scalar = check_alpha(alpha)
    rho = check_real("rho", rho, lo=0.0)
    with np.errstate(invalid="ignore"):
        out = np.where(rho == 0.0, 0.0, a * rho)
    return float(out) if scalar else out


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
    return 0.5 * epsilon * epsilon  # +inf beyond 1.8e154 (no OverflowError as from epsilon**2)


def _check_zcdp_method(method: Any) -> str:
    allowed = ("improved", "bun_steinke")
    if not isinstance(method, str) or method not in allowed:
        raise ValueError(f"method must be one of {allowed}, got {method!r}")
    return method


_IMPROVED_RHO_MAX = 1e30
"""Above this rho, the ``"improved"`` conversions (:func:`zcdp_to_dp_epsilon`, :func:`zcdp_rho_for_dp`) give the
Bun-Steinke value: the two agree to float precision there, and the improved root finder breaks down (NaN)."""


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
    bun_steinke = rho + 2.0 * math.sqrt(rho) * math.sqrt(-math.log(delta))  # no rho * ln(1/delta) overflow
    if method == "bun_steinke" or rho > _IMPROVED_RHO_MAX:
        # beyond _IMPROVED_RHO_MAX the improved value is the Bun-Steinke one to float precision, and its
        # root finder breaks down (it returned NaN, which max(0, NaN) turned into a wrong epsilon of 0)
        return bun_steinke
    improved = float(_zcdp_improved_eps_raw(rho, delta))
    return max(0.0, improved) if math.isfinite(improved) else bun_steinke


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
    if epsilon > rho and (epsilon - rho) / (4.0 * rho) * (epsilon - rho) > 800.0:
        # the Bun-Steinke delta exp(-(eps - rho)^2 / (4 rho)) is below e^-800 (0 in floats), and the improved
        # conversion is never larger: delta is 0 to float precision (and brentq would not converge out there)
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
    log_inv_delta = -math.log(delta)
    # (sqrt(L + eps) - sqrt(L))^2 written as (eps / (sqrt(L + eps) + sqrt(L)))^2 - no cancellation, and the
    # ratio is taken before squaring, so eps = 1e308 does not overflow (rho is then about eps)
    rho_bs = (epsilon / (math.sqrt(log_inv_delta + epsilon) + math.sqrt(log_inv_delta))) ** 2
    if method == "bun_steinke" or rho_bs > _IMPROVED_RHO_MAX:
        # beyond _IMPROVED_RHO_MAX the improved rho equals the Bun-Steinke one to float precision (and it is
        # never smaller, so the Bun-Steinke value is on the safe side)
        return float(rho_bs)

    def excess(log_rho: float) -> float:
        return _zcdp_improved_eps_raw(float(np.exp(log_rho)), delta) - epsilon

    # a tiny epsilon squares to 0 (epsilon = 1e-300): start the search at rho = 1e-300 instead
    lo = math.log(max(rho_bs, 1e-300))
    if excess(lo) >= 0.0:  # only by rounding: improved <= Bun-Steinke
        return float(rho_bs)
    step = math.log(2.0)
    hi = lo + step
    while excess(hi) < 0.0:  # the step doubles: from 1e-308 to the root in a few dozen tries
        lo, hi, step = hi, hi + step, 2.0 * step
    log_rho = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=4.0 * np.finfo(float).eps, maxiter=500)
    # return the end of the final bracket on the safe side (epsilon not exceeded)
    rho = float(np.exp(log_rho))
    for _ in range(60):
        if _zcdp_improved_eps_raw(rho, delta) <= epsilon:
            break
        rho *= 1.0 - 1e-13
    return rho

