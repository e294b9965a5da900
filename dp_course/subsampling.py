r"""Privacy amplification by subsampling.

Running a private mechanism on a random subsample of the data makes it more private, because a given person
is left out of the subsample with some probability.  Three results are implemented:

* **Fixed-size sampling without replacement, (epsilon, delta)-DP**, replace-one neighbours: an
  :math:`(\varepsilon, \delta)`-DP mechanism run on a uniformly random subset of size :math:`m` out of
  :math:`n` is :math:`(\ln(1 + \frac{m}{n}(e^\varepsilon - 1)), \frac{m}{n}\delta)`-DP
  (Balle, Barthe & Gaboardi 2018, arXiv:1807.01647, Theorem 9; the slide deck's "Amplification of
  (eps, delta)-DP" slide).
* **Poisson-subsampled Gaussian, exact RDP**, add/remove neighbours: each record is kept independently with
  probability :math:`q`, then Gaussian noise with noise multiplier :math:`\sigma` (standard deviation over
  :math:`\ell_2`-sensitivity) is added.  Its RDP at order :math:`\alpha` is
  :math:`\frac{1}{\alpha-1}\ln A_\alpha` with
  :math:`A_\alpha = \mathbb{E}_{z\sim N(0,\sigma^2)}\big[(1 - q + q\,e^{(2z-1)/(2\sigma^2)})^\alpha\big]`
  (Mironov, Talwar & Zhang 2019, arXiv:1908.10530, Section 3), computed exactly at integer and fractional
  orders.
* **Poisson-subsampled RDP for any mechanism with an RDP curve**, the bound of the slide deck: for integer
  :math:`\alpha \ge 2`,

  .. math:: \varepsilon_q(\alpha) = \frac{1}{\alpha-1}\ln\Big((1-q)^{\alpha-1}(1+(\alpha-1)q)
            + \sum_{i=2}^{\alpha}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i e^{(i-1)\varepsilon(i)}\Big)

  (Zhu & Wang 2019, "Poisson Subsampled Rényi Differential Privacy", ICML, PMLR 97; Steinke 2022,
  arXiv:2210.00597).  For the Gaussian mechanism, :math:`\varepsilon(i) = i/(2\sigma^2)` turns it into the exact
  binomial expansion of :math:`A_\alpha`, so it is tight there.

All sums are evaluated in log-space (``logsumexp`` with signs where needed, ``log1p``, ``log_ndtr``).

The Gaussian noise can be given as a :class:`~dp_course.mechanisms.GaussianMechanism` (its noise multiplier is
``sigma / sensitivity``), and the mechanism before subsampling as any description of :mod:`dp_course.mechanisms`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import integrate, special

from ._numerics import log1mexp
from ._validation import check_delta, check_gaussian_mu, check_orders, check_probability, check_real, check_real_array
from .mechanisms import MECHANISMS, GaussianMechanism, Mechanism, noise_multiplier
from .renyi import mechanism_rdp

__all__ = [
    "MAX_EXPANSION_ORDER",
    "fixed_size_amplification",
    "fixed_size_amplification_epsilon",
    "poisson_subsampled_gaussian_rdp",
    "poisson_subsampled_rdp_bound",
]

_FRAC_TERMS = (48, 400)
"""Numbers of terms summed directly, tried in turn, for the series at fractional orders (Mironov-Talwar-Zhang,
Section 3.3); an order whose tail estimate is still too large after the last one goes to quadrature."""

_EULER_TERMS = 24
"""Number of further terms whose partial sums are averaged to sum the alternating tail of the series."""

_FRAC_REL_TOL = 1e-12
"""Largest allowed bound on the truncated tail of the fractional-order series, relative to ln A_alpha (so
relative to the RDP value); above it more terms are used, and in the end adaptive quadrature."""


# ----------------------------------------------------------------------------------------------------------
# fixed-size sampling without replacement, (epsilon, delta)-DP
# ----------------------------------------------------------------------------------------------------------

def _amplified_epsilon(eps: np.ndarray, q: float) -> np.ndarray:
    """ln(1 + q (e^eps - 1)), stable for every eps >= 0."""
    out = np.empty_like(eps)
    small = eps <= 1.0
    # eps <= 1: log1p(q * expm1(eps)) keeps full relative accuracy when eps or q is tiny
    out[small] = np.log1p(q * np.expm1(eps[small]))
    # eps > 1: factor e^eps out, ln(q e^eps + 1 - q) = eps + ln(q + (1 - q) e^-eps); no overflow
    big = ~small
    out[big] = eps[big] + np.log(q + (1.0 - q) * np.exp(-eps[big]))
    return out


def fixed_size_amplification_epsilon(epsilon: npt.ArrayLike, q: float) -> float | np.ndarray:
    r"""Amplified epsilon for fixed-size sampling without replacement: :math:`\ln(1 + q(e^\varepsilon - 1))`.

    Args:
        epsilon: epsilon of the mechanism run on the subsample, >= 0 (scalar or array).
        q: sampling ratio :math:`m/n` in (0, 1].

    Returns:
        float for scalar ``epsilon``, ndarray of the same shape otherwise.  Never larger than ``epsilon``.

    Raises:
        ValueError: if an argument is out of range.

    Source: Balle, Barthe & Gaboardi 2018 (arXiv:1807.01647), Theorem 9 (replace-one neighbours).

    >>> round(fixed_size_amplification_epsilon(1.0, 0.1), 15)
    0.158565078740429
    """
    scalar = np.ndim(epsilon) == 0
    if scalar:
        eps = np.asarray([check_real("epsilon", epsilon, lo=0.0)])
    else:
        eps = check_real_array("epsilon", epsilon, lo=0.0)
    q = check_probability("q", q, lo_open=True)
    out = _amplified_epsilon(eps.reshape(-1), q).reshape(eps.shape)
    return float(out[0]) if scalar else out


def fixed_size_amplification(epsilon: float, delta: float, q: float) -> tuple[float, float]:
    r"""Privacy of an :math:`(\varepsilon, \delta)`-DP mechanism run on a random size-m subset of n records.

    .. math:: \varepsilon' = \ln\big(1 + \tfrac{m}{n}(e^\varepsilon - 1)\big), \qquad \delta' = \tfrac{m}{n}\delta

    for sampling without replacement and replace-one neighbouring datasets.

    Args:
        epsilon: epsilon of the mechanism on the subsample, >= 0.
        delta: delta of the mechanism on the subsample, in [0, 1).
        q: sampling ratio :math:`m/n` in (0, 1].

    Returns:
        ``(epsilon', delta')`` as floats.

    Raises:
        ValueError: if an argument is out of range.

    Source: Balle, Barthe & Gaboardi 2018 (arXiv:1807.01647), Theorem 9; the slide deck, "Amplification of
    (eps, delta)-DP".
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    q = check_probability("q", q, lo_open=True)
    return float(_amplified_epsilon(np.asarray([epsilon]), q)[0]), q * delta


# ----------------------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian: exact RDP
# ----------------------------------------------------------------------------------------------------------

def _log_expm1(x: np.ndarray) -> np.ndarray:
    """ln(e^x - 1) for x >= 0 (-inf at 0, inf at inf), as x + ln(1 - e^-x) so that it never overflows."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x + log1mexp(-x)
    out = np.where(x == 0.0, -np.inf, out)
    return np.where(np.isposinf(x), np.inf, out)


MAX_EXPANSION_ORDER = 10**4
"""Largest Rényi order of the subsampled-RDP functions: their binomial expansions have one term per integer
up to the order, for every order (a cost guard: dp-accounting's default orders end at 1024)."""


def _check_expansion_orders(alphas: np.ndarray) -> np.ndarray:
    if alphas.max() > MAX_EXPANSION_ORDER:
        raise ValueError(f"orders must be at most {MAX_EXPANSION_ORDER} for amplification by subsampling (one term "
                         f"per integer up to the order), got {alphas.max():g}")
    return alphas


def _log_binomial_excess(log_q: float, log_1mq: float, alphas: np.ndarray, x: np.ndarray) -> np.ndarray:
    r"""ln(A - 1) for :math:`A = \sum_{i=0}^{\alpha}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i e^{x_i}` with
    :math:`x_0 = x_1 = 0`, at integer orders ``alphas``; ``x[k]`` holds :math:`x_{k+2}`.

    Because the binomial weights sum to 1, :math:`A - 1 = \sum_{i\ge2}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i
    (e^{x_i} - 1)`, a sum of non-negative terms: computing it this way keeps full relative accuracy when
    :math:`A` is within rounding of 1 (tiny q, large sigma), where summing :math:`A` itself would not.
    """
    amax = int(alphas.max())
    i = np.arange(2, amax + 1, dtype=float)[None, :]
    a = alphas[:, None]
    with np.errstate(invalid="ignore"):
        log_terms = (special.gammaln(a + 1.0) - special.gammaln(i + 1.0) - special.gammaln(a - i + 1.0)
                     + i * log_q + (a - i) * log_1mq + _log_expm1(x[: i.size])[None, :])
    log_terms = np.where(i <= a, log_terms, -np.inf)
    return special.logsumexp(log_terms, axis=1)


def _log_a_int(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    r"""ln A_alpha for integer alphas >= 2 by the finite binomial expansion.

    :math:`A_\alpha = \sum_{i=0}^{\alpha}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i e^{(i^2-i)/(2\sigma^2)}`
    (Mironov, Talwar & Zhang 2019, arXiv:1908.10530, Section 3.3; dp-accounting's ``_compute_log_a_int``),
    evaluated as :math:`\ln A = \ln(1 + (A - 1))` with :math:`A - 1` from :func:`_log_binomial_excess`.
    """
    i = np.arange(2, int(alphas.max()) + 1, dtype=float)
    log_excess = _log_binomial_excess(np.log(q), np.log1p(-q), alphas, (i * i - i) / (2.0 * sigma**2))
    return np.logaddexp(0.0, log_excess)


def _log_a_frac_series(q: float, sigma: float, alphas: np.ndarray, n_head: int,
                       n_avg: int = _EULER_TERMS) -> tuple[np.ndarray, np.ndarray]:
    r"""ln A_alpha for fractional alphas by the two generalised binomial series, and an error estimate.

    Split the integral at :math:`z_0 = \sigma^2\ln(1/q - 1) + 1/2`, where :math:`q\mu_1/\mu_0 = 1 - q`.  Below
    it expand :math:`(1-q)^\alpha(1 + x)^\alpha` with :math:`x = \frac{q}{1-q}\mu_1/\mu_0 \le 1`, above it expand
    :math:`(q\mu_1/\mu_0)^\alpha(1 + 1/x)^\alpha`:

    .. math:: A_\alpha = \sum_{i\ge0}\binom{\alpha}{i}\Big[(1-q)^{\alpha-i}q^i e^{(i^2-i)/(2\sigma^2)}
              \Phi\big(\tfrac{z_0 - i}{\sigma}\big) + q^{\alpha-i}(1-q)^i e^{(j^2-j)/(2\sigma^2)}
              \Phi\big(\tfrac{j - z_0}{\sigma}\big)\Big],\quad j = \alpha - i

    (Mironov, Talwar & Zhang 2019, arXiv:1908.10530, Section 3.3).  For non-integer :math:`\alpha` the
    coefficients :math:`\binom{\alpha}{i}` change sign for :math:`i > \alpha + 1`; they are kept with their
    signs (``gammasgn``), so the sum converges to :math:`A_\alpha` itself (summing absolute values, as
    dp-accounting 0.6.0 does, gives an upper bound that can be several per cent too high near
    :math:`\alpha = 1`).

    Past :math:`i > \alpha + 1` the terms alternate in sign with smoothly decreasing sizes, but when
    :math:`e^{-z_0^2/(2\sigma^2)}` is not negligible they decrease only like a power of :math:`i`.  The first
    ``n_head`` terms are summed directly; the partial sums over the next ``n_avg`` terms are averaged
    repeatedly (Euler's transform for alternating series), which converges fast for such tails.  The
    difference between the last two averaging levels is returned as the error estimate on :math:`\ln A`.
    """
    n = n_head + n_avg
    i = np.arange(n, dtype=float)[None, :]
    a = alphas[:, None]
    j = a - i
    z0 = sigma**2 * (np.log1p(-q) - np.log(q)) + 0.5
    log_q, log_1mq = np.log(q), np.log1p(-q)
    log_abs_coef = special.gammaln(a + 1.0) - special.gammaln(i + 1.0) - special.gammaln(j + 1.0)
    sign = special.gammasgn(j + 1.0)  # Gamma(alpha + 1) > 0 and i! > 0
    two_s2 = 2.0 * sigma**2
    log_t0 = log_abs_coef + i * log_q + j * log_1mq + (i * i - i) / two_s2 + special.log_ndtr((z0 - i) / sigma)
    log_t1 = log_abs_coef + j * log_q + i * log_1mq + (j * j - j) / two_s2 + special.log_ndtr((j - z0) / sigma)
    log_b = np.logaddexp(log_t0, log_t1)  # both series share the sign of C(alpha, i)
    log_head, sgn = special.logsumexp(log_b[:, :n_head], axis=1, b=sign[:, :n_head], return_sign=True)
    # tail terms relative to the head, partial sums 0, u_0, u_0 + u_1, ...
    u = sign[:, n_head:] * np.exp(log_b[:, n_head:] - log_head[:, None])
    sums = np.concatenate([np.zeros((u.shape[0], 1)), np.cumsum(u, axis=1)], axis=1)
    prev = sums
    for _ in range(n_avg):
        prev, sums = sums, 0.5 * (sums[:, :-1] + sums[:, 1:])
    tail = sums[:, 0]
    err = np.abs(sums[:, 0] - prev[:, 0]) + np.abs(sums[:, 0] - prev[:, 1])
    log_a = log_head + np.log1p(tail)
    bad = (sgn <= 0) | ~np.isfinite(log_a)
    return np.where(bad, np.nan, log_a), np.where(bad, np.inf, err)


def _log_a_frac(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """ln A_alpha at fractional orders: the signed series with an averaged tail, else adaptive quadrature."""
    log_a = np.full(alphas.shape, np.nan)
    todo = np.ones(alphas.shape, dtype=bool)
    for n_terms in _FRAC_TERMS:
        idx = np.flatnonzero(todo)
        if idx.size == 0:
            break
        # the averaging needs the alternating regime i > alpha + 1
        n = max(n_terms, int(np.ceil(alphas[idx].max())) + 2)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            la, err = _log_a_frac_series(q, sigma, alphas[idx], n)
        # err is an absolute error on ln A; compare with ln A itself (relative error of the RDP value)
        ok = np.isfinite(la) & (err <= _FRAC_REL_TOL * np.abs(la))
        log_a[idx[ok]] = la[ok]
        todo[idx[ok]] = False
    for k in np.flatnonzero(todo):
        log_a[k] = _log_a_quad(q, sigma, float(alphas[k]))
    return log_a


def _log_a_quad(q: float, sigma: float, alpha: float) -> float:
    """ln A_alpha by adaptive quadrature of E_{z ~ N(0, sigma^2)}[(1 - q + q e^{(2z-1)/(2 sigma^2)})^alpha].

    The integrand is handled in log-space and scaled by its maximum before integrating.
    """
    log_q, log_1mq = np.log(q), np.log1p(-q)

    def log_f(z: np.ndarray | float) -> np.ndarray:
        # ln(1 - q + q e^{(2z-1)/(2 sigma^2)}) = logaddexp(ln(1-q), ln q + (2z-1)/(2 sigma^2))
        return (alpha * np.logaddexp(log_1mq, log_q + (2.0 * z - 1.0) / (2.0 * sigma**2))
                - 0.5 * (z / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2.0 * np.pi))

    # The integrand behaves like a mixture of two Gaussian bumps, near 0 (the 1 - q branch) and near alpha
    # (the q e^{...} branch): integrate over [-12 sigma, alpha + 12 sigma] with both centres and the split
    # point z0 as break points, after scaling by the largest value on a grid.
    lo, hi = -12.0 * sigma, alpha + 12.0 * sigma
    z0 = sigma**2 * (log_1mq - log_q) + 0.5
    peak = float(np.max(log_f(np.linspace(lo, hi, 4001))))
    pts = sorted({p for p in (0.0, z0, alpha) if lo < p < hi})
    val, _ = integrate.quad(lambda z: np.exp(log_f(z) - peak), lo, hi,
                            epsabs=0.0, epsrel=1e-13, limit=500, points=pts)
    return peak + float(np.log(val))


def poisson_subsampled_gaussian_rdp(q: float, sigma: float | GaussianMechanism,
                                    orders: npt.ArrayLike | None = None) -> float | np.ndarray:
    r"""Exact RDP of the Poisson-subsampled Gaussian mechanism at the given orders (integer or fractional).

    With add/remove neighbours, each record kept with probability :math:`q` and Gaussian noise of standard
    deviation :math:`\sigma` times the :math:`\ell_2`-sensitivity,

    .. math:: \varepsilon(\alpha) = \frac{1}{\alpha - 1}\ln A_\alpha,\qquad
              A_\alpha = \mathbb{E}_{z\sim N(0,\sigma^2)}\big[(1 - q + q\,e^{(2z-1)/(2\sigma^2)})^\alpha\big].

    Integer orders use the finite binomial expansion
    :math:`A_\alpha = \sum_{i=0}^{\alpha}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i e^{(i^2-i)/(2\sigma^2)}`;
    fractional orders use the two signed series of Mironov, Talwar & Zhang (Section 3.3), truncated after
    1000 terms with a certified tail below 1e-13 relative, falling back to adaptive quadrature otherwise.
    All in log-space.  ``q = 0`` gives 0 and ``q = 1`` gives :math:`\alpha/(2\sigma^2)`.

    Accuracy (checked against 40-digit quadrature in the tests): ~1e-13 relative at integer orders (computed
    as :math:`\ln(1 + (A_\alpha - 1))` with :math:`A_\alpha - 1` a sum of positive terms) and ~1e-12 relative
    at fractional orders down to RDP values of ~1e-8; below that the fractional orders carry an absolute
    error of a few 1e-17 (:math:`A_\alpha` is then within rounding of 1).

    Args:
        q: sampling probability in [0, 1].
        sigma: noise multiplier (noise standard deviation / :math:`\ell_2`-sensitivity), > 0, or the
            :class:`~dp_course.mechanisms.GaussianMechanism` that adds the noise (noise multiplier
            ``sigma / sensitivity``).
        orders: orders > 1 (scalar or 1-D array; ``None``: :data:`dp_course.rdp_accounting.DEFAULT_ORDERS`).

    Returns:
        float for a scalar order, otherwise a 1-D ndarray (``inf`` where the value overflows).

    Raises:
        ValueError: if an argument is out of range.

    Source: Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
    arXiv:1908.10530, Section 3.3 (integer case also in Abadi et al. 2016, arXiv:1607.00133).
    """
    scalar = orders is not None and np.ndim(orders) == 0
    alphas = _check_expansion_orders(check_orders(orders))
    q = check_probability("q", q)
    sigma = noise_multiplier(sigma)
    # 1 / (2 sigma^2): refused by name below sigma ~ 1e-154 (it overflows); 0 above ~1e154, where every term
    # of the expansion is 1 to float precision and the RDP (at most alpha / (2 sigma^2)) is 0
    mu = check_gaussian_mu(sigma, 1.0)
    out = np.empty(alphas.shape, dtype=float)
    if q == 0.0 or mu == 0.0:
        out[:] = 0.0
    elif q == 1.0:
        out[:] = alphas * mu
    else:
        is_int = alphas == np.round(alphas)
        if is_int.any():
            out[is_int] = _log_a_int(q, sigma, alphas[is_int]) / (alphas[is_int] - 1.0)
        frac = ~is_int
        if frac.any():
            fa = alphas[frac]
            log_a = _log_a_frac(q, sigma, fa)
            out[frac] = log_a / (fa - 1.0)
    out = np.maximum(out, 0.0)  # A_alpha >= 1 in exact arithmetic
    return float(out[0]) if scalar else out


# ----------------------------------------------------------------------------------------------------------
# Poisson subsampling for a mechanism with any RDP curve (the slide deck's bound)
# ----------------------------------------------------------------------------------------------------------

def poisson_subsampled_rdp_bound(rdp: Callable[[np.ndarray], Any] | Mechanism, q: float,
                                 orders: npt.ArrayLike | None = None) -> float | np.ndarray:
    r"""RDP of a Poisson-subsampled mechanism from its RDP curve at integer orders (the slide deck's bound).

    For an integer order :math:`\alpha \ge 2`,

    .. math:: \varepsilon_q(\alpha) = \frac{1}{\alpha-1}\ln\Big((1-q)^{\alpha-1}(1+(\alpha-1)q)
              + \sum_{i=2}^{\alpha}\binom{\alpha}{i}(1-q)^{\alpha-i}q^i e^{(i-1)\varepsilon(i)}\Big),

    evaluated with ``logsumexp``.  A fractional order :math:`\alpha` gets the value at :math:`\lceil\alpha\rceil`
    (valid because RDP is nondecreasing in the order); the slide deck states the result in this form.

    How to use it for DP-SGD (ERRATA item 10): pass the per-step curve of the un-subsampled mechanism, e.g.
    :math:`\varepsilon(i) = i\rho` for a :math:`\rho`-zCDP step, evaluate at the order :math:`\alpha` itself,
    and multiply by the number of steps :math:`T`; the slide's :math:`\varepsilon_\gamma(\lceil\alpha\rho\rceil)`
    mixes up the order and the RDP value.

    For the Gaussian mechanism (:math:`\varepsilon(i) = i/(2\sigma^2)`) this equals the exact value of
    :func:`poisson_subsampled_gaussian_rdp`.  Zhu & Wang (2019) prove the bound for mechanisms meeting the
    conditions of their tight result (Gaussian, Laplace, ...), and a general bound in which the terms
    :math:`i \ge 3` carry an extra factor 3; the course's tests check the form above by brute force on random
    finite pairs of distributions.

    Args:
        rdp: vectorised callable mapping an integer-valued float array of orders (>= 2) to the RDP values
            (>= 0, ``inf`` allowed) of the mechanism before subsampling, or that mechanism's description
            (its curve is then :func:`dp_course.renyi.mechanism_rdp`).
        q: sampling probability in [0, 1].
        orders: orders > 1 (scalar or 1-D array; ``None``: :data:`dp_course.rdp_accounting.DEFAULT_ORDERS`).

    Returns:
        float for a scalar order, otherwise a 1-D ndarray.

    Raises:
        ValueError: if an argument is out of range or ``rdp`` returns bad values.

    Sources: the slide deck ("Amplification of Rényi DP"); Zhu & Wang 2019, "Poisson Subsampled Rényi
    Differential Privacy", ICML, PMLR 97:7634-7642; Steinke 2022, arXiv:2210.00597, Section 6.
    """
    curve: Callable[[np.ndarray], Any]
    if isinstance(rdp, MECHANISMS):
        mechanism = rdp

        def curve(orders: np.ndarray) -> Any:
            return mechanism_rdp(orders, mechanism)

    elif callable(rdp):
        curve = rdp
    else:
        raise ValueError(f"rdp must be a callable mapping an array of integer orders to RDP values, or a "
                         f"mechanism description, got {rdp!r}")
    scalar = orders is not None and np.ndim(orders) == 0
    alphas = _check_expansion_orders(check_orders(orders))
    q = check_probability("q", q)
    ks = np.ceil(alphas - 1e-12)  # order used for each requested order (integers stay as they are)
    ks = np.maximum(ks, 2.0)
    kmax = int(ks.max())
    grid = np.arange(2, kmax + 1, dtype=float)
    eps_i = check_real_array("rdp(orders)", np.asarray(curve(grid), dtype=float), lo=0.0, allow_inf=True)
    if eps_i.shape != grid.shape:
        raise ValueError(f"rdp must return one value per order: asked for {grid.size} orders, got an array of "
                         f"shape {eps_i.shape}")
    if q == 0.0:
        out = np.zeros(alphas.shape)
        return float(out[0]) if scalar else out
    if q == 1.0:
        out = eps_i[ks.astype(int) - 2]
        return float(out[0]) if scalar else out
    # (1-q)^{a-1}(1+(a-1)q) is the i = 0 and i = 1 part of the binomial law, so the bracket is
    # 1 + sum_{i>=2} C(a,i)(1-q)^{a-i} q^i (e^{(i-1) eps(i)} - 1): evaluated as ln(1 + excess)
    uniq = np.unique(ks)
    with np.errstate(invalid="ignore"):
        x = (grid - 1.0) * eps_i
    log_excess = _log_binomial_excess(np.log(q), np.log1p(-q), uniq, x)
    vals = np.logaddexp(0.0, log_excess) / (uniq - 1.0)
    out = vals[np.searchsorted(uniq, ks)]
    out = np.maximum(out, 0.0)
    return float(out[0]) if scalar else out
