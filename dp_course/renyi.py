r"""Rényi differential privacy (RDP) of the basic mechanisms: their curves :math:`\alpha \mapsto \varepsilon(\alpha)`.

A mechanism is :math:`(\alpha, \varepsilon(\alpha))`-RDP when the Rényi divergence of order :math:`\alpha`
between its output laws on any two neighbouring inputs is at most :math:`\varepsilon(\alpha)`, with

.. math:: D_\alpha(P \| Q) = \frac{1}{\alpha - 1} \ln \mathbb{E}_{x \sim Q}\Big[\big(P(x)/Q(x)\big)^\alpha\Big]

(Mironov 2017, arXiv:1702.07476, Definition 3; the slide deck's version of this display is garbled, see
ERRATA item 9).

This module has the curves of the Gaussian, Laplace and randomized response mechanisms (Mironov 2017,
Table II) and of any mechanism description (:func:`mechanism_rdp`), as functions of the order (scalar or
array, :math:`\alpha = 1` and :math:`\infty` included).  Composing curves and converting them to
:math:`(\varepsilon, \delta)`-DP is :mod:`dp_course.rdp_accounting` (with the :class:`RDPCurve` accountant);
zero-concentrated DP is :mod:`dp_course.zcdp`.

A mechanism can be named by its frozen description from :mod:`dp_course.mechanisms`: the curve of one
mechanism takes its description in place of its parameters (``gaussian_rdp(alpha, GaussianMechanism(2.0))``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._validation import check_alpha, check_gaussian_mu, check_real
from .divergences import renyi_divergence
from .mechanisms import (MECHANISMS, GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism, Mechanism,
                         NameAndShame, RandomizedResponse, mechanism_argument)

__all__ = [
    "gaussian_rdp",
    "laplace_rdp",
    "randomized_response_rdp",
    "mechanism_rdp",
]


# ----------------------------------------------------------------------------------------------------------
# small private helpers
# ----------------------------------------------------------------------------------------------------------

def _out(x: np.ndarray, scalar: bool) -> float | np.ndarray:
    """Scalar in -> float out; array in -> ndarray out."""
    return float(x) if scalar else x


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
    a, scalar = check_alpha(alpha)
    mech = mechanism_argument(sigma, GaussianMechanism, "sigma", {"sensitivity": sensitivity})
    if mech is not None:
        sigma, sensitivity = mech.sigma, mech.sensitivity
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    mu = check_gaussian_mu(sigma, sensitivity)
    return _out(np.where(a == np.inf, np.inf, a * mu) if mu > 0 else np.zeros_like(a), scalar)


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
    a, scalar = check_alpha(alpha)
    mech = mechanism_argument(scale, LaplaceMechanism, "scale", {"sensitivity": sensitivity})
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
    # otherwise: factor e^{(alpha-1)eps} out of the log; log(alpha/(2 alpha - 1)) = -log1p((alpha - 1)/alpha)
    # (finite up to alpha = 1e308, where log1p(2 (alpha - 1)) would overflow)
    a_b, am1_b = am[~small], am1[~small]
    log_ratio = -np.log1p(am1_b / a_b)
    with np.errstate(over="ignore"):  # 2 alpha - 1 = inf for alpha near 1e308: e^-inf = 0, as it should
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
    a, scalar = check_alpha(alpha)
    mech = mechanism_argument(epsilon, RandomizedResponse, "epsilon", {})
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
        a, scalar = check_alpha(alpha)
        p, q = mechanism.output_distributions()
        out = np.maximum(renyi_divergence(p, q, a), renyi_divergence(q, p, a))
        return _out(np.asarray(out, dtype=float), scalar)
    names = ", ".join(cls.__name__ for cls in MECHANISMS)
    raise ValueError(f"mechanism must be a description from dp_course.mechanisms ({names}), got {mechanism!r}")

