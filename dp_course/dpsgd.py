r"""Privacy accounting for DP-SGD: T steps of the Poisson-subsampled Gaussian mechanism.

Each step of DP-SGD keeps every example independently with probability :math:`q` (Poisson sampling), clips
per-example gradients to norm :math:`C` and adds :math:`N(0, \sigma^2 C^2 I)` noise to their sum; with
add/remove neighbouring datasets this is the Poisson-subsampled Gaussian mechanism with noise multiplier
:math:`\sigma`.  The accountant here

1. computes the exact RDP of one step at every order (integer and fractional) with
   :func:`dp_course.subsampling.poisson_subsampled_gaussian_rdp` (Mironov, Talwar & Zhang 2019,
   arXiv:1908.10530),
2. multiplies by the number of steps :math:`T` (RDP composition, Mironov 2017, Proposition 1),
3. converts to :math:`(\varepsilon, \delta)` with the improved conversion of Canonne, Kamath & Steinke 2020
   (arXiv:2004.00010, Proposition 12), minimised over the orders.

**Fractional orders.**  dp-accounting's default orders (:data:`dp_course.rdp_accounting.DEFAULT_ORDERS`) are mostly
fractional (1.1, ..., 10.9).  They are computed *exactly* here (signed Mironov–Talwar–Zhang series, checked
against multiprecision quadrature in the tests).  dp-accounting 0.6.0 sums the absolute values of the series
terms, which overestimates the RDP at fractional orders (by up to ~5% near order 1.1 for q = 0.01,
sigma = 1.1), so the two accountants agree exactly at integer orders and differ slightly in the final
epsilon when a fractional order is optimal: for q = 0.01, sigma = 1.1, T = 1000, delta = 1e-5 we get
1.7117701 (order 9.6) against dp-accounting's 1.7117702.

The noise of the accountant functions can be given as a number (the noise multiplier) or as the
:class:`~dp_course.mechanisms.GaussianMechanism` that adds it (noise multiplier ``sigma / sensitivity``, the
sensitivity being the clipping norm).

The module also provides the three DP-SGD scenarios of the slide deck as small helpers, with the slide's
algebra corrected where ``docs/errata.md`` says so (items 6, 7, 8, 10).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import optimize, stats

from ._validation import check_delta, check_gaussian_mu, check_int, check_orders, check_probability, check_real
from .mechanisms import GaussianMechanism, noise_multiplier
from .rdp_accounting import RDPCurve, rdp_to_dp_epsilon_and_order
from .subsampling import poisson_subsampled_gaussian_rdp, poisson_subsampled_rdp_bound
from .zcdp import zcdp_rho_for_dp

__all__ = [
    "dpsgd_rdp",
    "dpsgd_epsilon",
    "dpsgd_epsilon_and_order",
    "dpsgd_delta",
    "dpsgd_sigma_for_epsilon",
    "scenario1_laplace_scale",
    "scenario2_gaussian_sigma",
    "scenario3_rdp",
    "scenario3_epsilon",
    "normaliser_leak_delta",
    "normaliser_leak_epsilon",
]

MAX_LEAK_SIZE = 10**15
"""Largest data-set size :func:`normaliser_leak_delta` accepts ((n + 1)/n must differ from 1 in floating point)."""

MAX_LEAK_COUNT = 10**12
"""Largest number of released coordinates ``steps * dim`` :func:`normaliser_leak_delta` accepts."""

SIGMA_SEARCH_RANGE = (1e-3, 1e6)
"""Interval of noise multipliers searched by :func:`dpsgd_sigma_for_epsilon`."""


def dpsgd_rdp(q: float, sigma: float | GaussianMechanism, steps: int,
              orders: npt.ArrayLike | None = None) -> RDPCurve:
    r"""RDP curve of ``steps`` steps of the Poisson-subsampled Gaussian mechanism.

    :math:`\varepsilon_T(\alpha) = T \cdot \frac{1}{\alpha-1}\ln A_\alpha(q, \sigma)` with
    :math:`A_\alpha` as in :func:`dp_course.subsampling.poisson_subsampled_gaussian_rdp`.

    Args:
        q: sampling probability in [0, 1].
        sigma: noise multiplier > 0 (noise standard deviation / clipping norm), or the
            :class:`~dp_course.mechanisms.GaussianMechanism` of one step (noise multiplier
            ``sigma / sensitivity``).
        steps: number of steps T, an integer >= 0.
        orders: orders > 1 (``None``: :data:`dp_course.rdp_accounting.DEFAULT_ORDERS`).

    Returns:
        :class:`dp_course.rdp_accounting.RDPCurve`.

    Raises:
        ValueError: if an argument is out of range.

    Source: Mironov, Talwar & Zhang 2019 (arXiv:1908.10530); Mironov 2017 (arXiv:1702.07476), Proposition 1.
    """
    q = check_probability("q", q)
    sigma = noise_multiplier(sigma)
    steps = check_int("steps", steps, lo=0)
    orders = check_orders(orders)
    return RDPCurve(orders, steps * np.asarray(poisson_subsampled_gaussian_rdp(q, sigma, orders)))


def dpsgd_epsilon_and_order(q: float, sigma: float | GaussianMechanism, steps: int, delta: float,
                            orders: npt.ArrayLike | None = None, method: str = "improved") -> tuple[float, float]:
    r"""``(epsilon, order)``: DP-SGD's :math:`\varepsilon` at ``delta`` and the Rényi order that achieves it.

    See :func:`dpsgd_epsilon`.
    """
    curve = dpsgd_rdp(q, sigma, steps, orders)
    return rdp_to_dp_epsilon_and_order(curve.orders, curve.epsilons, delta, method)


def dpsgd_epsilon(q: float, sigma: float | GaussianMechanism, steps: int, delta: float,
                  orders: npt.ArrayLike | None = None, method: str = "improved") -> float:
    r"""Epsilon of DP-SGD after ``steps`` Poisson-subsampled Gaussian steps, at a target ``delta``.

    .. math:: \varepsilon = \min_\alpha\; T\varepsilon_1(\alpha) + \ln\tfrac{\alpha-1}{\alpha}
              - \frac{\ln\delta + \ln\alpha}{\alpha-1}

    (``method="improved"``, Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Proposition 12) or
    :math:`\min_\alpha T\varepsilon_1(\alpha) + \ln(1/\delta)/(\alpha-1)` (``method="classic"``, Mironov 2017,
    Proposition 3), where :math:`\varepsilon_1` is the exact one-step RDP (integer and fractional orders).

    Args:
        q: sampling probability in [0, 1].
        sigma: noise multiplier > 0, or the :class:`~dp_course.mechanisms.GaussianMechanism` of one step.
        steps: number of steps, integer >= 0.
        delta: target delta in (0, 1).
        orders: orders > 1 (``None``: dp-accounting's default orders).
        method: ``"improved"`` (default) or ``"classic"``.

    Returns:
        float: epsilon >= 0.

    Raises:
        ValueError: if an argument is out of range.

    >>> round(dpsgd_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5), 5)
    1.71177
    """
    return dpsgd_epsilon_and_order(q, sigma, steps, delta, orders, method)[0]


def dpsgd_delta(q: float, sigma: float | GaussianMechanism, steps: int, epsilon: float,
                orders: npt.ArrayLike | None = None, method: str = "improved") -> float:
    r"""Delta of DP-SGD after ``steps`` steps at a target ``epsilon`` (minimum over orders).

    Uses :meth:`dp_course.rdp_accounting.RDPCurve.delta` on the curve of :func:`dpsgd_rdp`.

    Raises:
        ValueError: if an argument is out of range.

    Source: Canonne, Kamath & Steinke 2020 (arXiv:2004.00010), Proposition 12; Mironov 2017, Proposition 3.
    """
    return dpsgd_rdp(q, sigma, steps, orders).delta(epsilon, method)


def dpsgd_sigma_for_epsilon(q: float, steps: int, epsilon: float, delta: float,
                            orders: npt.ArrayLike | None = None, method: str = "improved") -> float:
    r"""Smallest noise multiplier :math:`\sigma` for which DP-SGD is :math:`(\varepsilon, \delta)`-DP.

    The accountant's :math:`\varepsilon(\sigma)` (:func:`dpsgd_epsilon`) does not increase with :math:`\sigma`
    (each one-step RDP value decreases), so the answer is found by bracketing on :math:`\ln\sigma` in
    :data:`SIGMA_SEARCH_RANGE` followed by Brent's method; the returned value satisfies
    :math:`\varepsilon(\sigma) \le` ``epsilon`` (safe side), within a relative 1e-10 of the exact threshold.

    A target can be out of reach: even without any RDP (:math:`\sigma \to \infty`) the conversion leaves
    :math:`\min_\alpha \ln\frac{\alpha-1}{\alpha} - \frac{\ln\delta+\ln\alpha}{\alpha-1} > 0` with a finite set of
    orders; below that floor a ``ValueError`` says so.

    Args:
        q: sampling probability in (0, 1].
        steps: number of steps, integer >= 1.
        epsilon: target epsilon > 0.
        delta: target delta in (0, 1).
        orders: orders > 1 (``None``: dp-accounting's default orders).
        method: ``"improved"`` (default) or ``"classic"``.

    Returns:
        float: sigma.

    Raises:
        ValueError: if an argument is out of range or the target cannot be reached with sigma in
            :data:`SIGMA_SEARCH_RANGE`.
    """
    q = check_probability("q", q, lo_open=True)
    steps = check_int("steps", steps, lo=1)
    epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    delta = check_delta(delta, allow_zero=False)
    orders = check_orders(orders)
    floor, _ = rdp_to_dp_epsilon_and_order(orders, np.zeros_like(orders), delta, method)
    if epsilon <= floor:
        raise ValueError(f"epsilon={epsilon:g} cannot be reached at delta={delta:g}: with these orders (largest "
                         f"{orders.max():g}) the conversion alone costs epsilon={floor:.6g} even with infinite "
                         f"noise; raise epsilon or delta, or add larger orders")

    def excess(log_sigma: float) -> float:
        return dpsgd_epsilon(q, float(np.exp(log_sigma)), steps, delta, orders, method) - epsilon

    lo, hi = (float(np.log(s)) for s in SIGMA_SEARCH_RANGE)
    if excess(hi) > 0.0:
        raise ValueError(f"epsilon={epsilon:g} is not reached even with sigma={SIGMA_SEARCH_RANGE[1]:g} "
                         f"(q={q:g}, steps={steps}, delta={delta:g})")
    if excess(lo) <= 0.0:
        raise ValueError(f"epsilon={epsilon:g} is already met with sigma={SIGMA_SEARCH_RANGE[0]:g}, the smallest "
                         f"noise multiplier searched; the privacy target does not constrain sigma here")
    # shrink the bracket geometrically first (cheap), then Brent
    a, b = lo, hi
    while b - a > 1.0:
        mid = 0.5 * (a + b)
        if excess(mid) > 0.0:
            a = mid
        else:
            b = mid
    root = optimize.brentq(excess, a, b, xtol=1e-11, rtol=1e-12, maxiter=200)
    sigma = float(np.exp(root))
    for _ in range(50):  # step to the safe side of the threshold if Brent stopped just below it
        if excess(np.log(sigma)) <= 0.0:
            break
        sigma *= 1.0 + 1e-11
    return sigma


# ----------------------------------------------------------------------------------------------------------
# The slide deck's three scenarios
# ----------------------------------------------------------------------------------------------------------

def scenario1_laplace_scale(epsilon: float, steps: int, m: int, n: int, sensitivity: float = 1.0) -> float:
    r"""Scenario 1: Laplace scale for :math:`\varepsilon`-DP after T steps of fixed-size subsampled SGD.

    Each step adds :math:`\mathrm{Lap}(b)` noise to the average of :math:`m` clipped gradients drawn without
    replacement from :math:`n` (replace-one neighbours, :math:`\ell_1`-sensitivity of the average
    :math:`B_1/m`), so one step on its subsample is :math:`B_1/(mb)`-DP and, after amplification,
    :math:`\ln(1 + \frac{m}{n}(e^{B_1/(mb)} - 1))`-DP.  Basic composition over :math:`T` steps asks for
    :math:`\varepsilon/T` per step, which solves to

    .. math:: b = \frac{B_1}{m\,\ln\big(1 + \frac{n}{m}(e^{\varepsilon/T} - 1)\big)}.

    (The slide deck prints this same expression.)

    Args:
        epsilon: total epsilon > 0.
        steps: number of steps T >= 1.
        m: subsample size, 1 <= m <= n.
        n: dataset size >= 1.
        sensitivity: :math:`B_1`, the :math:`\ell_1` bound of a clipped gradient difference, > 0.

    Returns:
        float: the Laplace scale b.

    Raises:
        ValueError: if an argument is out of range.

    Sources: the slide deck, "Scenario 1"; amplification: Balle, Barthe & Gaboardi 2018 (arXiv:1807.01647),
    Theorem 9.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    steps = check_int("steps", steps, lo=1)
    n = check_int("n", n, lo=1)
    m = check_int("m", m, lo=1, hi=n)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    per_step = epsilon / steps
    # ln(1 + (n/m) expm1(eps/T)): log1p keeps accuracy when eps/T is tiny
    base_eps = np.log1p(n / m * np.expm1(per_step))
    return float(sensitivity / (m * base_eps))


def scenario2_gaussian_sigma(epsilon: float, delta: float, steps: int, n: int, sensitivity: float = 1.0,
                             tight: bool = True, method: str = "bun_steinke") -> float:
    r"""Scenario 2: Gaussian noise level for :math:`(\varepsilon, \delta)`-DP after T full-batch steps.

    1. The zCDP budget: :math:`\rho = (\sqrt{\ln(1/\delta)+\varepsilon} - \sqrt{\ln(1/\delta)})^2`
       (Bun–Steinke inverse; the slide drops the square, ERRATA item 6).  ``method="improved"`` uses the
       larger :math:`\rho` of the improved conversion instead (:func:`dp_course.zcdp.zcdp_rho_for_dp`).
    2. zCDP composes additively: :math:`\rho/T` per step.
    3. Noise :math:`N(0, \sigma^2)` on the average of :math:`n` clipped gradients (:math:`\ell_2`-sensitivity
       :math:`B_2/n`) is :math:`B_2^2/(2n^2\sigma^2)`-zCDP (tight, ``tight=True``), so
       :math:`\sigma^2 = T B_2^2 / (2 n^2 \rho)`.  With ``tight=False`` the slide's looser premise
       :math:`B_2^2/(n^2\sigma^2)` (valid, but a factor 2 pessimistic: ERRATA item 8) gives
       :math:`\sigma^2 = T B_2^2/(n^2\rho)` - the slide prints :math:`\rho^2` here (ERRATA item 7).

    Args:
        epsilon: total epsilon > 0.
        delta: total delta in (0, 1).
        steps: number of steps T >= 1.
        n: dataset size >= 1.
        sensitivity: :math:`B_2` > 0.
        tight: use the tight zCDP of the Gaussian mechanism (default) or the slide's factor-2 looser one.
        method: ``"bun_steinke"`` (default, as on the slide) or ``"improved"``.

    Returns:
        float: sigma (the standard deviation, not the variance).

    Raises:
        ValueError: if an argument is out of range.

    Sources: the slide deck, "Scenario 2"; Bun & Steinke 2016 (arXiv:1605.02065), Propositions 1.3 and 1.6,
    Lemma 1.7.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    delta = check_delta(delta, allow_zero=False)
    steps = check_int("steps", steps, lo=1)
    n = check_int("n", n, lo=1)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    if not isinstance(tight, (bool, np.bool_)):
        raise ValueError(f"tight must be True or False, got {tight!r}")
    # sigma = (B_2 / n) sqrt(T / (factor rho)), with sqrt(rho) taken without squaring: the Bun-Steinke
    # sqrt(rho) = eps / (sqrt(L + eps) + sqrt(L)) stays positive at eps = 1e-300, where rho itself underflows
    # (the improved rho is never smaller), and B_2 = 1e308 is divided before anything is squared
    log_inv_delta = -math.log(delta)
    root_rho = max(math.sqrt(zcdp_rho_for_dp(epsilon, delta, method)),
                   epsilon / (math.sqrt(log_inv_delta + epsilon) + math.sqrt(log_inv_delta)))
    factor = 2.0 if tight else 1.0
    sigma = sensitivity / n * math.sqrt(steps / factor) / root_rho
    if not math.isfinite(sigma):
        raise ValueError(f"sigma = (sensitivity / n) sqrt(steps / ({factor:g} rho)) is beyond the float range for "
                         f"epsilon = {epsilon:g}, sensitivity = {sensitivity:g}, steps = {steps}, n = {n}: use a "
                         "larger epsilon or n, or a smaller sensitivity")
    return sigma


def scenario3_rdp(sigma: float, q: float, steps: int, batch_size: float, sensitivity: float = 1.0,
                  orders: npt.ArrayLike | None = None, tight: bool = True) -> RDPCurve:
    r"""Scenario 3, steps 1-4: RDP after T steps of Poisson-subsampled noisy SGD, following the slide deck.

    The update is :math:`\theta_{t+1} = \theta_t - \eta\big(\frac1m\sum_{i \in U_t}\mathrm{clip}_{B_2}(g_i) + v_t\big)`
    with :math:`v_t \sim N(0, \sigma^2 I)`, each record in :math:`U_t` independently with probability :math:`q`
    (add/remove neighbours), and :math:`m` = ``batch_size`` a *fixed, public* normaliser, typically the
    expected batch size :math:`qn_0` for a public size :math:`n_0` announced in advance (it need not be an
    integer).  It must not be computed from the private data set: :math:`m = qn` with the real :math:`n` leaks
    :math:`n`, which this accountant does not see (:func:`normaliser_leak_epsilon`).

    1. One step without subsampling: dividing by :math:`m` is post-processing of the noisy sum, the Gaussian
       mechanism with sensitivity :math:`B_2` and noise :math:`m\sigma` (noise multiplier :math:`z = m\sigma/B_2`):
       :math:`\rho = B_2^2/(2m^2\sigma^2)`-zCDP (``tight=True``) or the slide's :math:`B_2^2/(m^2\sigma^2)`
       (``tight=False``, valid but loose by 2, ERRATA item 8).  The slide writes the data set size :math:`n` in
       place of :math:`m` - right only for an update divided by :math:`n`; for the update it runs this credits
       :math:`1/q` times too much noise (ERRATA item 17).  ``batch_size=n`` reproduces the printed step.
    2. zCDP gives the RDP curve :math:`\varepsilon(i) = i\rho`.
    3. Poisson subsampling with rate :math:`q`: :func:`dp_course.subsampling.poisson_subsampled_rdp_bound`
       applied to that curve, evaluated *at the order* :math:`\alpha` (integer; a fractional order uses
       :math:`\lceil\alpha\rceil`).
    4. Composition over T steps: :math:`T\varepsilon_q(\alpha)` (ERRATA item 10: the slide's
       :math:`T\varepsilon_\gamma(\lceil\alpha B_2^2/(n^2\sigma^2)\rceil)` evaluates the bound at the wrong
       argument).

    With ``tight=True`` this is exactly the DP-SGD accountant at noise multiplier :math:`m\sigma/B_2` (at
    integer orders).

    Args:
        sigma: standard deviation > 0 of the noise on the *averaged* clipped gradient.
        q: Poisson sampling rate in [0, 1].
        steps: T >= 0.
        batch_size: the public normaliser m > 0 of the update (the expected batch size q n_0 for a public
            n_0; not the realised batch size).
        sensitivity: :math:`B_2` > 0, the clip norm (add/remove sensitivity of the sum).
        orders: orders > 1 (``None``: the integers 2..64 and 128, 256, 512, 1024).
        tight: see step 1.

    Returns:
        :class:`dp_course.rdp_accounting.RDPCurve`.

    Raises:
        ValueError: if an argument is out of range.

    Sources: the slide deck, "Scenario 3"; Zhu & Wang 2019 (ICML, PMLR 97); Mironov 2017 (arXiv:1702.07476);
    Abadi et al. 2016 (arXiv:1607.00133) for the fixed normaliser.

    >>> curve = scenario3_rdp(sigma=0.05, q=0.1, steps=1, batch_size=45.5, orders=[2.0])
    >>> bool(abs(curve.epsilons[0] - dpsgd_rdp(0.1, 45.5 * 0.05, 1, [2.0]).epsilons[0]) < 1e-12)
    True
    """
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    q = check_probability("q", q)
    steps = check_int("steps", steps, lo=0)
    batch_size = check_real("batch_size", batch_size, lo=0.0, lo_open=True)
    sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
    if not isinstance(tight, (bool, np.bool_)):
        raise ValueError(f"tight must be True or False, got {tight!r}")
    if orders is None:
        orders = [float(a) for a in range(2, 65)] + [128.0, 256.0, 512.0, 1024.0]
    orders = check_orders(orders)
    # rho = sensitivity^2 / (c b^2 sigma^2), c = 2 (tight) or 1: the Gaussian mu of noise b * sigma, times 2 / c
    rho = check_gaussian_mu(batch_size * sigma, sensitivity, "batch_size * sigma") * (1.0 if tight else 2.0)
    per_step = poisson_subsampled_rdp_bound(lambda i: i * rho, q, orders)
    return RDPCurve(orders, steps * np.asarray(per_step))


def scenario3_epsilon(sigma: float, q: float, steps: int, delta: float, batch_size: float,
                      sensitivity: float = 1.0, orders: npt.ArrayLike | None = None, tight: bool = True,
                      method: str = "classic") -> float:
    r"""Scenario 3, step 5: :math:`\varepsilon` at ``delta`` from :func:`scenario3_rdp`.

    The slide converts with the classic bound
    :math:`\delta = e^{-(\alpha-1)(\varepsilon - \varepsilon_T(\alpha))}`,
    i.e. ``method="classic"`` (default); ``method="improved"`` uses Canonne–Kamath–Steinke.  The other
    arguments are those of :func:`scenario3_rdp` (``batch_size``: the normaliser m of the update, not n).

    Raises:
        ValueError: if an argument is out of range.

    Sources: the slide deck, "Scenario 3, step 5"; Mironov 2017 (arXiv:1702.07476), Proposition 3.
    """
    curve = scenario3_rdp(sigma, q, steps, batch_size, sensitivity, orders, tight)
    return curve.epsilon(delta, method)


def _gaussian_scale_delta(epsilon: float, count: int, log_ratio: float) -> float:
    r"""Hockey-stick divergence :math:`H_{e^\varepsilon}(P \| Q)` of :math:`P = N(0, r^2)^{\otimes N}` and
    :math:`Q = N(0, 1)^{\otimes N}` (``log_ratio`` :math:`\ln r \ne 0`, ``count`` :math:`N`), exactly, from the
    chi-square law of :math:`S = \sum x_j^2`: the privacy loss is
    :math:`L = -N\ln r - \frac12(r^{-2} - 1)S`, decreasing in :math:`S` when :math:`r < 1`.  Log-space
    throughout (no overflow of :math:`e^\varepsilon`, no cancellation in :math:`r^{-2} - 1` for :math:`r \to 1`)."""
    slope = 0.5 * math.expm1(-2.0 * log_ratio)              # L = offset - slope * S
    offset = -count * log_ratio
    threshold = (offset - epsilon) / slope                  # L > epsilon  <=>  slope * S < slope * threshold
    scaled = threshold * math.exp(-2.0 * log_ratio)         # the threshold in units of P's variance
    if slope > 0:                                           # r < 1: L > epsilon iff S < threshold
        if threshold <= 0:
            return 0.0
        log_p, log_q = stats.chi2.logcdf(scaled, count), stats.chi2.logcdf(threshold, count)
    else:                                                   # r > 1: L > epsilon iff S > threshold
        log_p, log_q = stats.chi2.logsf(scaled, count), stats.chi2.logsf(threshold, count)
    if not log_p > -math.inf:
        return 0.0
    # P(A) - e^eps Q(A) = P(A) (1 - e^(eps + log Q(A) - log P(A))), the bracket in [0, 1] at the optimal A
    return max(float(-math.exp(log_p) * math.expm1(min(epsilon + log_q - log_p, 0.0))), 0.0)


def normaliser_leak_delta(epsilon: float, n: int, steps: int, dim: int) -> float:
    r"""The privacy the normaliser leak costs: :math:`\delta(\varepsilon)` between :math:`n` and :math:`n + 1`
    all-zero records for DP-SGD whose normaliser is computed from the private size, :math:`m = qn`.

    The leaky update :math:`\theta_{t+1} = \theta_t - \frac{\eta}{qn}\big(\sum_{i \in U_t}
    \mathrm{clip}_C(g_i) + N(0, z^2C^2 I_d)\big)` on records with all-zero features (every gradient is 0)
    releases, over :math:`T` steps (every iterate is released, as DP-SGD's accounting assumes),
    :math:`Td` independent :math:`N(0, (\eta zC/(qn))^2)` coordinates.  On :math:`n + 1` records the standard
    deviation is :math:`n/(n+1)` times as large.  The two laws differ only in scale, so the result depends on
    :math:`n`, :math:`T` and :math:`d` alone - not on the noise multiplier :math:`z`, the sampling rate or the
    learning rate: no amount of noise hides :math:`n`.  Add/remove neighbours (:math:`n` against :math:`n + 1`
    records) are exactly what the accountant of Scenario 3 claims to protect.

    Computed exactly from the chi-square law of the sum of squares (the privacy loss is a function of it), in
    both directions; the larger :math:`\delta` is returned.  With a public normaliser :math:`m = qn_0` the
    two laws are identical and :math:`\delta = 0`.

    Args:
        epsilon: :math:`\varepsilon \ge 0`.
        n: the smaller data set's size, an integer >= 1.
        steps: T >= 1, the number of released steps.
        dim: d >= 1, the number of parameters.

    Returns:
        :math:`\delta(\varepsilon)` in [0, 1].

    Raises:
        ValueError: if an argument is out of range.

    >>> round(normaliser_leak_epsilon(1e-5, n=455, steps=300, dim=31), 3)
    1.152
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    n = check_int("n", n, lo=1, hi=MAX_LEAK_SIZE)
    steps = check_int("steps", steps, lo=1, hi=MAX_LEAK_COUNT)
    dim = check_int("dim", dim, lo=1, hi=MAX_LEAK_COUNT)
    if steps * dim > MAX_LEAK_COUNT:
        raise ValueError(f"steps * dim must be at most {MAX_LEAK_COUNT:.0e} released coordinates, got steps = {steps}, "
                         f"dim = {dim}")
    log_ratio = math.log1p(1.0 / n)                         # ln of (noise sd on n records / on n + 1 records)
    count = steps * dim
    return max(_gaussian_scale_delta(epsilon, count, log_ratio), _gaussian_scale_delta(epsilon, count, -log_ratio))


def normaliser_leak_epsilon(delta: float, n: int, steps: int, dim: int) -> float:
    r"""The smallest :math:`\varepsilon` with :func:`normaliser_leak_delta` :math:`\le` ``delta``: the
    :math:`(\varepsilon, \delta)` that DP-SGD with the private normaliser :math:`m = qn` *at least* costs,
    whatever its noise (a lower bound on its true privacy loss: all-zero records are one pair of neighbours).

    Args:
        delta: in (0, 1).
        n, steps, dim: as in :func:`normaliser_leak_delta`.

    Returns:
        :math:`\varepsilon \ge 0` (0 if :math:`\delta(0)` is already at most ``delta``).

    Raises:
        ValueError: if an argument is out of range.
    """
    delta = check_delta(delta, allow_zero=False)
    if normaliser_leak_delta(0.0, n, steps, dim) <= delta:
        return 0.0
    high = 1.0
    while normaliser_leak_delta(high, n, steps, dim) > delta:
        high *= 2.0
    return float(optimize.brentq(lambda e: normaliser_leak_delta(e, n, steps, dim) - delta, 0.0, high,
                                 xtol=1e-12, rtol=1e-12))
