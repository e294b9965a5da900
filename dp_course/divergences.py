r"""Divergences between two distributions on the same finite set of outcomes.

Every function here takes a pair of probability mass functions ``p`` and ``q`` - 1-D arrays of the same
length, one entry per outcome - and measures how far apart they are in one of the ways that differential
privacy cares about:

* the **hockey-stick divergence** :math:`H_{e^\epsilon}(P\|Q)` and the **privacy profile**
  :math:`\delta(\epsilon)` built from it; a pair is :math:`(\epsilon,\delta)`-indistinguishable exactly when
  the profile at :math:`\epsilon` is at most :math:`\delta` (:func:`is_indistinguishable`);
* the **total variation distance**, the **Kullback-Leibler divergence** and the **Rényi divergence** of
  order :math:`\alpha`.

All of them work in log-space where probabilities may be tiny, treat outcomes that only one distribution can
produce exactly (they give ``+inf`` where the mathematics says so), and raise a ``ValueError`` naming the bad
argument for invalid input.

References:
    * G. Barthe and F. Olmedo, "Beyond differential privacy: composition theorems and relational logic for
      f-divergences between probabilistic programs", ICALP 2013 (the hockey-stick form of
      :math:`(\epsilon,\delta)`-DP).
    * B. Balle, G. Barthe and M. Gaboardi, "Privacy amplification by subsampling: tight analyses via
      couplings and divergences", NeurIPS 2018, arXiv:1807.01647, Section 2 (privacy profiles).
    * T. van Erven and P. Harremoës, "Rényi divergence and Kullback-Leibler divergence", IEEE Trans. Inf.
      Theory 60(7), 2014, arXiv:1206.2459 (definition, monotonicity in the order, limits, data processing).
    * I. Mironov, "Rényi differential privacy", CSF 2017, arXiv:1702.07476, Definition 3.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import special

from ._validation import check_delta, check_pmf_pair, check_real, check_real_array

__all__ = [
    "hockey_stick_divergence",
    "privacy_profile",
    "is_indistinguishable",
    "total_variation",
    "kl_divergence",
    "renyi_divergence",
]


# --------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------

def _pair(p: npt.ArrayLike, q: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of pmfs (1-D, finite, >= 0, each summing to 1 within 1e-9, same length)."""
    return check_pmf_pair("p", p, "q", q)


def _log_ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``ln(p/q)`` on the support of ``p``: ``+inf`` where ``q = 0``; ``nan`` (unused) where ``p = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, np.log(p) - np.log(q), np.nan)


def _hockey_stick(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    r""":math:`\sum_x (p(x) - e^\epsilon q(x))_+` for every entry of ``eps`` (no validation).

    Each positive term is written as :math:`p\,(1 - e^{\epsilon - L})` with :math:`L = \ln(p/q) > \epsilon`
    (``-expm1``): this never forms :math:`e^\epsilon q`, so it cannot overflow for large ``eps``, and an
    outcome with ``q = 0`` (``L = +inf``) contributes exactly ``p``.
    """
    support = p > 0
    ps, loss = p[support], _log_ratio(p, q)[support]
    eps = np.asarray(eps, dtype=float)
    gap = eps[..., None] - loss                       # epsilon - L, -inf where q = 0
    with np.errstate(invalid="ignore"):
        terms = np.where(gap < 0, ps * -np.expm1(np.minimum(gap, 0.0)), 0.0)
    return terms.sum(axis=-1)


def _as_output(values: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(values) if scalar else values


# --------------------------------------------------------------------------------------------------------
# hockey-stick divergence, privacy profile, indistinguishability
# --------------------------------------------------------------------------------------------------------

def hockey_stick_divergence(p: npt.ArrayLike, q: npt.ArrayLike, epsilon: npt.ArrayLike) -> float | np.ndarray:
    r"""Hockey-stick divergence :math:`H_{e^\epsilon}(P\|Q)` of two pmfs (one direction).

    .. math::

        H_{e^\epsilon}(P\|Q) = \sup_E \bigl(P(E) - e^\epsilon Q(E)\bigr)
                             = \sum_x \bigl(P(x) - e^\epsilon Q(x)\bigr)_+ .

    It is the smallest :math:`\delta` with :math:`P(E) \le e^\epsilon Q(E) + \delta` for every event
    :math:`E` (the supremum is attained at :math:`E = \{x : P(x) > e^\epsilon Q(x)\}`).  Computed as
    :math:`\sum_{L(x) > \epsilon} P(x)(1 - e^{\epsilon - L(x)})` with :math:`L = \ln(P/Q)`, which is exact
    for outcomes with :math:`Q(x) = 0` (they contribute :math:`P(x)` for every :math:`\epsilon`) and cannot
    overflow, whatever the size of :math:`\epsilon`.

    Args:
        p, q: pmfs over the same outcomes (1-D, finite, nonnegative, each summing to 1 within 1e-9).
        epsilon: a finite real number >= 0, or an array of them.

    Returns:
        ``float`` for a scalar ``epsilon``; an array of the shape of ``epsilon`` otherwise.

    Raises:
        ValueError: for an invalid pmf pair or a negative, infinite or NaN ``epsilon``.

    References:
        Barthe & Olmedo (ICALP 2013); Balle, Barthe & Gaboardi (2018, arXiv:1807.01647), Theorem 1.

    >>> hockey_stick_divergence([0.75, 0.25], [0.25, 0.75], 0.0)   # = total variation
    0.5
    >>> hockey_stick_divergence([0.75, 0.25], [0.25, 0.75], np.log(3))   # randomized response at its epsilon
    0.0
    """
    p, q = _pair(p, q)
    eps = check_real_array("epsilon", epsilon, lo=0.0)
    return _as_output(_hockey_stick(p, q, eps), eps.ndim == 0)


def privacy_profile(p: npt.ArrayLike, q: npt.ArrayLike, epsilon: npt.ArrayLike,
                    symmetric: bool = True) -> float | np.ndarray:
    r"""Privacy profile :math:`\delta(\epsilon)` of a pair of pmfs.

    .. math::

        \delta(\epsilon) = \max\bigl(H_{e^\epsilon}(P\|Q),\, H_{e^\epsilon}(Q\|P)\bigr)
        \quad\text{(symmetric)}, \qquad \delta(\epsilon) = H_{e^\epsilon}(P\|Q) \quad\text{(one direction)}.

    The pair is :math:`(\epsilon, \delta)`-indistinguishable exactly when :math:`\delta(\epsilon) \le \delta`
    (symmetric version).  The profile is non-increasing and convex in :math:`e^\epsilon`, equals the total
    variation distance at :math:`\epsilon = 0`, and tends to the mass that one distribution puts where the
    other has none as :math:`\epsilon \to \infty`.

    Args:
        p, q: pmfs over the same outcomes.
        epsilon: a finite real number >= 0, or an array of them.
        symmetric: take the larger of the two directions (default) or only :math:`H(P\|Q)`.

    Returns:
        ``float`` for a scalar ``epsilon``; an array of the shape of ``epsilon`` otherwise.

    Raises:
        ValueError: for an invalid pmf pair, ``epsilon`` or ``symmetric``.

    References:
        Balle, Barthe & Gaboardi (2018, arXiv:1807.01647), Section 2 ("privacy profiles").
    """
    p, q = _pair(p, q)
    eps = check_real_array("epsilon", epsilon, lo=0.0)
    if not isinstance(symmetric, (bool, np.bool_)):
        raise ValueError(f"symmetric must be True or False, got {symmetric!r}")
    out = _hockey_stick(p, q, eps)
    if symmetric:
        out = np.maximum(out, _hockey_stick(q, p, eps))
    return _as_output(out, eps.ndim == 0)


def is_indistinguishable(p: npt.ArrayLike, q: npt.ArrayLike, epsilon: float, delta: float,
                         atol: float = 1e-12) -> bool:
    r"""Whether two pmfs are :math:`(\epsilon, \delta)`-indistinguishable.

    The relation of the lecture: for every event :math:`E`,

    .. math::

        P(E) \le e^\epsilon Q(E) + \delta \quad\text{and}\quad Q(E) \le e^\epsilon P(E) + \delta,

    which holds if and only if both hockey-stick divergences are at most :math:`\delta`.  The check allows a
    rounding slack ``atol``: it returns ``privacy_profile(p, q, epsilon) <= delta + atol``.

    Args:
        p, q: pmfs over the same outcomes.
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).
        atol: nonnegative slack for floating-point rounding (default 1e-12).

    Returns:
        ``True`` or ``False``.

    Raises:
        ValueError: for an invalid pmf pair, ``epsilon``, ``delta`` or ``atol``.

    References:
        Dwork & Roth, *The Algorithmic Foundations of Differential Privacy* (2014), Definition 2.4; the
        lecture notes on advanced composition, Section 3.1.

    >>> is_indistinguishable([0.75, 0.25], [0.25, 0.75], np.log(3), 0.0)
    True
    >>> is_indistinguishable([0.75, 0.25], [0.25, 0.75], 0.5, 0.0)
    False
    """
    p, q = _pair(p, q)
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    atol = check_real("atol", atol, lo=0.0)
    worst = max(float(_hockey_stick(p, q, np.asarray(eps))), float(_hockey_stick(q, p, np.asarray(eps))))
    return bool(worst <= delta + atol)


# --------------------------------------------------------------------------------------------------------
# total variation, Kullback-Leibler, Rényi
# --------------------------------------------------------------------------------------------------------

def total_variation(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    r"""Total variation distance :math:`\tfrac12 \sum_x |P(x) - Q(x)| = \sup_E |P(E) - Q(E)|`.

    It equals the hockey-stick divergence at :math:`\epsilon = 0` (in either direction).

    Args:
        p, q: pmfs over the same outcomes.

    Returns:
        A float in [0, 1].

    Raises:
        ValueError: for an invalid pmf pair.

    References:
        Dwork & Roth (2014), Section 3.5 and Appendix; Balle, Barthe & Gaboardi (2018, arXiv:1807.01647).
    """
    p, q = _pair(p, q)
    return float(min(1.0, 0.5 * np.abs(p - q).sum()))


def kl_divergence(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    r"""Kullback-Leibler divergence in nats, :math:`D(P\|Q) = \sum_{x: P(x) > 0} P(x) \ln(P(x)/Q(x))`.

    ``+inf`` when :math:`P` puts mass on an outcome where :math:`Q` has none; terms with :math:`P(x) = 0`
    count as 0.  The result is clipped at 0 from below (it is nonnegative in exact arithmetic; rounding can
    leave about -1e-17 for nearly equal inputs).

    Args:
        p, q: pmfs over the same outcomes.

    Returns:
        A float in [0, inf].

    Raises:
        ValueError: for an invalid pmf pair.

    References:
        Cover & Thomas, *Elements of Information Theory* (2nd ed., 2006), Section 2.3; van Erven & Harremoës
        (2014, arXiv:1206.2459), Theorem 5 (it is the Rényi divergence of order 1).
    """
    p, q = _pair(p, q)
    return _kl(p, q)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    # scipy's rel_entr(p, q) = p ln(p/q), with 0 for p = 0 and +inf for p > 0 = q.
    return float(max(0.0, special.rel_entr(p, q).sum()))


def _renyi_one(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """Rényi divergence of one order (validated inputs)."""
    if alpha == 1.0:
        return _kl(p, q)
    on_p = p > 0
    only_p = on_p & (q == 0)
    if alpha == math.inf:
        # D_inf = ln max_x P(x)/Q(x) over the support of P (van Erven & Harremoës 2014, Theorem 6).
        if only_p.any():
            return math.inf
        return float(np.max(np.log(p[on_p]) - np.log(q[on_p])))
    if alpha > 1.0 and only_p.any():
        # With alpha > 1 the term P(x)^alpha Q(x)^(1 - alpha) is +inf where Q(x) = 0 < P(x): D = +inf.
        return math.inf
    common = on_p & (q > 0)
    if not common.any():
        # alpha in (0, 1) and disjoint supports: E_Q[(P/Q)^alpha] = 0, so D = +inf.
        return math.inf
    w = p[common]
    t = (alpha - 1.0) * (np.log(w) - np.log(q[common]))
    total_p = math.fsum(p)                      # 1 up to the validation slack; divides the expectation
    lost = math.fsum(p[only_p]) if only_p.any() else 0.0   # P-mass where Q = 0 (only when alpha < 1)
    # log E, with E = E_P[(P/Q)^(alpha-1)] = E_Q[(P/Q)^alpha] over the common support.
    if np.max(np.abs(t)) <= 1.0 and lost <= 0.5:
        # Near alpha = 1 (or P close to Q) E is 1 + (small): write E - 1 = (sum w expm1(t) - lost)/total
        # and take log1p, so that dividing by (alpha - 1) does not amplify a cancellation in ln E.
        log_e = math.log1p((math.fsum(w * np.expm1(t)) - lost) / total_p)
    else:
        # Otherwise E may be huge or tiny: log-sum-exp of ln w + t.
        log_e = float(special.logsumexp(t, b=w)) - math.log(total_p)
    return max(0.0, log_e / (alpha - 1.0))


def renyi_divergence(p: npt.ArrayLike, q: npt.ArrayLike, alpha: npt.ArrayLike) -> float | np.ndarray:
    r"""Rényi divergence of order :math:`\alpha` in nats.

    .. math::

        D_\alpha(P\|Q) = \frac{1}{\alpha - 1} \ln \mathbb{E}_{x\sim Q}\bigl[(P(x)/Q(x))^{\alpha}\bigr]
                       = \frac{1}{\alpha - 1} \ln \mathbb{E}_{x\sim P}\bigl[(P(x)/Q(x))^{\alpha-1}\bigr]

    for :math:`\alpha \in (0, 1) \cup (1, \infty)`, extended by continuity: :math:`D_1` is the
    Kullback-Leibler divergence and :math:`D_\infty = \ln \max_{x: P(x)>0} P(x)/Q(x)`.  It is
    nondecreasing in :math:`\alpha` and satisfies the data processing inequality for every order.

    Supports: for :math:`\alpha \ge 1` the divergence is ``+inf`` as soon as :math:`P` has mass where
    :math:`Q` has none; for :math:`\alpha < 1` it is finite unless the supports are disjoint.

    Numerics: the expectation is evaluated in log-space (``logsumexp``); close to :math:`\alpha = 1` it is
    written as :math:`\ln(1 + \mathbb{E}_P[\mathrm{expm1}((\alpha - 1)L)])` with ``log1p`` so that the
    division by :math:`\alpha - 1` stays accurate.

    .. note::
       The course slide deck prints a garbled expectation in this definition (ERRATA item 9); the formula
       above is the standard one (Mironov 2017, Definition 3).

    Args:
        p, q: pmfs over the same outcomes.
        alpha: the order, a real number > 0 (``1`` gives KL, ``numpy.inf`` the max log ratio), or an array
            of orders.

    Returns:
        ``float`` in [0, inf] for a scalar ``alpha``; an array of the shape of ``alpha`` otherwise.

    Raises:
        ValueError: for an invalid pmf pair or an order that is not > 0 (or NaN).

    References:
        van Erven & Harremoës (2014, arXiv:1206.2459), Definition 2 and Theorems 3, 5, 6, 9;
        Mironov (2017, arXiv:1702.07476), Definition 3.

    >>> round(renyi_divergence([0.5, 0.5], [0.25, 0.75], 2), 12)    # ln(4/3)
    0.287682072452
    """
    p, q = _pair(p, q)
    orders = check_real_array("alpha", alpha, lo=0.0, lo_open=True, allow_inf=True)
    out = np.array([_renyi_one(p, q, float(a)) for a in orders.ravel()], dtype=float).reshape(orders.shape)
    return _as_output(out, orders.ndim == 0)
