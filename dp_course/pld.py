r"""Privacy loss distributions (PLDs).

For an ordered pair of distributions :math:`(P, Q)` – the outputs of a mechanism on two neighbouring inputs –
the *privacy loss* of an output :math:`y` is the log-likelihood ratio

.. math:: \ell(y) = \ln \frac{P(y)}{Q(y)},

and the privacy loss *distribution* is the law of :math:`L = \ell(Y)` for :math:`Y \sim P`.  Outputs that
``Q`` never produces have :math:`\ell = +\infty`; their probability is kept as :attr:`infinity_mass`.

Everything about :math:`(\epsilon, \delta)` can be read off the PLD.  The tight :math:`\delta` for a given
:math:`\epsilon` is the hockey-stick divergence

.. math:: \delta(\epsilon) = \mathbb{E}\left[(1 - e^{\epsilon - L})_+\right]
          = P(L = \infty) + \sum_{l > \epsilon} P(L = l)\,(1 - e^{\epsilon - l}),

(Sommer, Meiser & Mohammadi 2019, "Privacy loss classes", PoPETs, Thm. 1; Koskela et al. 2020,
arXiv:1906.03049), and the PLD of an adaptive composition is the convolution of the PLDs (the privacy loss
of a transcript is the sum of the per-step losses).

Classes
-------
* :class:`DiscretePLD` – exact, finite support (plus an atom at :math:`+\infty`).  The k-fold composition of a
  two-point PLD is done through the binomial law in log-space, O(k).
* :class:`GaussianPLD` – :math:`L \sim N(\mu, 2\mu)`, closed form.
* :class:`GridPLD` – losses on a uniform grid, composed by FFT; a pessimistic (upper bound on every
  :math:`\delta(\epsilon)`) or optimistic (lower bound) discretisation of any pair of densities with a
  monotone privacy loss, or of any other PLD.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from ._numerics import log_binomial_pmf
from ._validation import (check_delta, check_int, check_real, check_real_array, check_rng)

__all__ = ["PrivacyLossDistribution", "DiscretePLD", "GaussianPLD", "GridPLD"]

# Atoms closer than this (relative to max(1, |loss|)) are merged: they are the same loss up to rounding.
_MERGE_RTOL = 1e-12
# Above epsilon + _NEAR the terms (1 - e^{eps - l}) are >= 1 - e^{-1}, so tail sums have no cancellation;
# atoms within the window are summed one by one with expm1.
_NEAR = 1.0
# Largest support an exact (non-grid) composition may produce before we ask for a grid.
_MAX_EXACT_ATOMS = 20_000_000
# Grid PLDs: FFT composition is done in one shot when the full support has at most this many points.
_MAX_FFT_SIZE = 1 << 25


def _epsilon_array(epsilon: Any) -> tuple[np.ndarray, bool]:
    eps = check_real_array("epsilon", epsilon, lo=0.0, allow_inf=True)
    return np.atleast_1d(eps).astype(float), eps.ndim == 0


def _delta_array(delta: Any) -> tuple[np.ndarray, bool]:
    d = check_real_array("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    return np.atleast_1d(d).astype(float), d.ndim == 0


def _out(values: np.ndarray, scalar: bool):
    return float(values[0]) if scalar else values


class PrivacyLossDistribution(abc.ABC):
    """Common interface of all privacy loss distributions (see the module docstring).

    Subclasses implement the private hooks; the public methods validate their arguments first.
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
    def _cdf(self, x: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray: ...

    @abc.abstractmethod
    def _delta(self, eps: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _epsilon(self, delta: float) -> float: ...

    @abc.abstractmethod
    def _self_compose(self, k: int) -> "PrivacyLossDistribution": ...

    @abc.abstractmethod
    def _compose(self, other: "PrivacyLossDistribution") -> "PrivacyLossDistribution": ...

    # ---- public API ----------------------------------------------------------------------------------------
    def cdf(self, x):
        """``P(L <= x)``; ``x`` may be a scalar or an array (``+inf`` gives 1)."""
        arr = check_real_array("x", x, allow_inf=True)
        out = self._cdf(np.atleast_1d(arr))
        return float(out[0]) if arr.ndim == 0 else out.reshape(arr.shape)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` privacy losses (``+inf`` included with probability :attr:`infinity_mass`)."""
        n = check_int("n", n, lo=0)
        rng = check_rng(rng)
        return self._sample(n, rng)

    def delta_for_epsilon(self, epsilon):
        r"""The tight :math:`\delta(\epsilon) = \mathbb{E}[(1 - e^{\epsilon - L})_+]` (vectorised).

        Args:
            epsilon: a number >= 0 or an array of them (``+inf`` gives :attr:`infinity_mass`).

        Returns:
            ``float`` for a scalar ``epsilon``, otherwise an array of the same shape.
        """
        eps, scalar = _epsilon_array(epsilon)
        shape = np.shape(epsilon)
        out = np.empty_like(eps)
        finite = np.isfinite(eps)
        out[~finite] = self.infinity_mass
        if finite.any():
            out[finite] = np.clip(self._delta(eps[finite]), 0.0, 1.0)
        return _out(out, scalar) if scalar else out.reshape(shape)

    def epsilon_for_delta(self, delta):
        r"""The smallest :math:`\epsilon \ge 0` with :math:`\delta(\epsilon) \le` ``delta`` (vectorised).

        Exact up to rounding (not a grid search).  Returns ``inf`` when ``delta`` is below
        :attr:`infinity_mass`, where no finite epsilon works.
        """
        deltas, scalar = _delta_array(delta)
        shape = np.shape(delta)
        out = np.array([self._epsilon_checked(float(d)) for d in deltas])
        return _out(out, scalar) if scalar else out.reshape(shape)

    def _epsilon_checked(self, delta: float) -> float:
        if delta < self.infinity_mass:
            return math.inf
        if self._delta(np.array([0.0]))[0] <= delta:
            return 0.0
        return self._epsilon(delta)

    def compose(self, other: "PrivacyLossDistribution") -> "PrivacyLossDistribution":
        """The PLD of running both mechanisms (adaptively): the law of the sum of the two losses."""
        if not isinstance(other, PrivacyLossDistribution):
            raise ValueError(f"other must be a PrivacyLossDistribution, got {type(other).__name__}")
        return self._compose(other)

    def self_compose(self, k: int) -> "PrivacyLossDistribution":
        """The PLD of the ``k``-fold composition of this mechanism with itself (``k >= 1``)."""
        k = check_int("k", k, lo=1)
        return self if k == 1 else self._self_compose(k)

    def to_grid(self, value_step: float = 1e-4, pessimistic: bool = True,
                tail_mass: float = 1e-15) -> "GridPLD":
        """This PLD put on the uniform grid ``value_step * Z`` (see :meth:`GridPLD.from_pld`)."""
        return GridPLD.from_pld(self, value_step=value_step, pessimistic=pessimistic, tail_mass=tail_mass)

    # buckets of the loss grid: used by GridPLD.from_pld
    def _bucket_masses(self, grid: np.ndarray):  # pragma: no cover - overridden
        raise NotImplementedError


# ====================================================================================================
# Distributions with finitely many atoms
# ====================================================================================================
class _AtomicPLD(PrivacyLossDistribution):
    """Finitely many finite atoms (sorted ascending) plus an atom at ``+inf``.

    Internally keeps ``losses`` (ascending), ``log_probs`` (natural log of each atom's probability) and
    ``infinity_mass``.  Probabilities of the finite atoms need not add up to ``1 - infinity_mass`` exactly:
    a deficit is mass at ``-inf`` (dropped by an optimistic truncation), which never contributes to delta.
    """

    _losses: np.ndarray
    _log_probs: np.ndarray
    _inf: float

    @property
    def losses(self) -> np.ndarray:
        """The finite atoms, ascending (a read-only view)."""
        v = self._losses.view()
        v.flags.writeable = False
        return v

    @property
    def probs(self) -> np.ndarray:
        """Probabilities of the finite atoms."""
        return np.exp(self._log_probs)

    @property
    def log_probs(self) -> np.ndarray:
        """Natural logs of the probabilities of the finite atoms."""
        v = self._log_probs.view()
        v.flags.writeable = False
        return v

    @property
    def infinity_mass(self) -> float:
        return self._inf

    @property
    def mean(self) -> float:
        if self._inf > 0:
            return math.inf
        return float(np.sum(np.exp(self._log_probs) * self._losses))

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0.0], np.cumsum(np.exp(self._log_probs))])
        idx = np.searchsorted(self._losses, x, side="right")
        out = cum[idx]
        out[np.isposinf(x)] = cum[-1] + self._inf
        return np.minimum(out, 1.0)

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        probs = np.append(np.exp(self._log_probs), self._inf)
        probs = probs / probs.sum()
        values = np.append(self._losses, math.inf)
        return values[rng.choice(values.size, size=n, p=probs)]

    # -- delta(eps), accurate in log-space --------------------------------------------------------------------
    def _suffix_logs(self):
        if not hasattr(self, "_suffix_cache"):
            lp = self._log_probs
            with np.errstate(invalid="ignore"):
                log_a = np.logaddexp.accumulate(lp[::-1])[::-1]          # log sum_{i>=j} p_i
                log_b = np.logaddexp.accumulate((lp - self._losses)[::-1])[::-1]  # log sum p_i e^{-l_i}
            self._suffix_cache = (np.append(log_a, -np.inf), np.append(log_b, -np.inf))
        return self._suffix_cache

    def _delta(self, eps: np.ndarray) -> np.ndarray:
        log_a, log_b = self._suffix_logs()
        losses, lp = self._losses, self._log_probs
        first = np.searchsorted(losses, eps, side="right")          # first atom with loss > eps
        far = np.searchsorted(losses, eps + _NEAR, side="right")    # first atom with loss > eps + 1
        # far atoms: sum p_i (1 - e^{eps - l_i}) = A (1 - e^{eps} B / A) with e^{eps} B / A <= e^{-1}
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = eps + log_b[far] - log_a[far]
            far_part = np.where(np.isneginf(log_a[far]), 0.0, np.exp(log_a[far]) * -np.expm1(ratio))
        near_part = np.zeros_like(eps)
        for i in np.flatnonzero(far > first):
            sl = slice(first[i], far[i])
            near_part[i] = np.sum(np.exp(lp[sl]) * -np.expm1(eps[i] - losses[sl]))
        return self._inf + near_part + far_part

    def _epsilon(self, delta: float) -> float:
        """Invert delta(eps) exactly: it is ``inf + A_j - e^eps B_j`` between consecutive atoms."""
        losses = self._losses
        log_a, log_b = self._suffix_logs()
        n = losses.size
        # delta at each atom l_j sums over atoms above it: index j + 1.  Fast (cancellation-prone) values are
        # only used to locate the segment; the bracket is then confirmed with the accurate evaluation.
        with np.errstate(over="ignore", invalid="ignore"):
            approx = self._inf + np.exp(log_a[1:]) - np.exp(losses + log_b[1:])
        j = int(np.searchsorted(-approx, -delta, side="left"))  # first atom with approx delta <= target
        j = min(max(j, 0), n - 1)

        def acc(e: float) -> float:
            return float(self._delta(np.array([e]))[0])

        while j > 0 and losses[j - 1] > 0 and acc(losses[j - 1]) <= delta:
            j -= 1
        while j < n - 1 and acc(losses[j]) > delta:
            j += 1
        lo = max(losses[j - 1], 0.0) if j > 0 else 0.0
        hi = losses[j]
        # on (lo, hi]: delta(eps) = inf + A_j - e^eps B_j, sums over atoms i >= j
        a_j = math.exp(log_a[j])
        log_bj = log_b[j]
        rest = self._inf + a_j - delta
        eps = math.log(rest) - log_bj if rest > 0 else hi
        eps = min(max(eps, lo), hi)
        for _ in range(3):  # Newton polish with the accurate delta: d delta / d eps = -e^eps B_j
            slope = math.exp(eps + log_bj)
            if slope <= 0 or not np.isfinite(slope):
                break
            step = (acc(eps) - delta) / slope
            eps = min(max(eps + step, lo), hi)
            if abs(step) <= 1e-15 * max(1.0, abs(eps)):
                break
        # be conservative: the returned epsilon must satisfy delta(eps) <= delta as evaluated.  When delta is
        # tiny next to an atom, one ulp of eps changes delta(eps) by a lot; step up a few ulps, then bisect.
        for _ in range(8):
            if acc(eps) <= delta or eps >= hi:
                break
            eps = math.nextafter(eps, math.inf)
        if acc(eps) > delta:
            a, b = eps, hi
            for _ in range(200):
                m = 0.5 * (a + b)
                if m <= a or m >= b:
                    break
                a, b = (a, m) if acc(m) <= delta else (m, b)
            eps = b
        return float(eps)

    def _bucket_masses(self, grid: np.ndarray):
        """Masses of each atom (used when projecting onto a grid): returns the atoms themselves."""
        return self._losses, np.exp(self._log_probs)


def _merge_atoms(losses: np.ndarray, log_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort atoms and merge those equal up to rounding (log-probabilities added with logaddexp)."""
    keep = np.isfinite(log_probs)
    if not keep.all():
        losses, log_probs = losses[keep], log_probs[keep]
    if losses.size == 0:
        return losses, log_probs
    gaps = np.diff(losses)
    if not np.all(gaps >= 0):
        order = np.argsort(losses, kind="stable")
        losses, log_probs = losses[order], log_probs[order]
        gaps = np.diff(losses)
    new_group = gaps > _MERGE_RTOL * np.maximum(1.0, np.abs(losses[1:]))
    if new_group.all():  # already sorted and distinct (e.g. a binomial law): nothing to merge
        return losses, log_probs
    starts = np.concatenate([[0], np.flatnonzero(new_group) + 1])
    merged_lp = np.logaddexp.reduceat(log_probs, starts)
    # representative loss: probability-weighted mean within the group (they agree to ~1e-12 anyway)
    weights = np.exp(log_probs - np.repeat(merged_lp, np.diff(np.append(starts, losses.size))))
    merged_l = np.add.reduceat(weights * losses, starts)
    return merged_l, merged_lp


class DiscretePLD(_AtomicPLD):
    r"""An exact privacy loss distribution with finitely many atoms (and possibly an atom at :math:`+\infty`).

    Args:
        losses: the finite loss values (any order; duplicates are merged).
        probs: their probabilities under ``P``.
        infinity_mass: ``P(L = +inf)``.  ``sum(probs) + infinity_mass`` must be 1 (within 1e-9).

    >>> rr = DiscretePLD([1.0, -1.0], [np.e / (1 + np.e), 1 / (1 + np.e)])
    >>> round(rr.delta_for_epsilon(0.0), 6)   # = total variation of randomized response at eps = 1
    0.462117
    """

    def __init__(self, losses: Any, probs: Any, infinity_mass: float = 0.0):
        losses = check_real_array("losses", losses, ndim=1, allow_empty=True)
        probs = check_real_array("probs", probs, lo=0.0, hi=1.0, ndim=1, allow_empty=True)
        if losses.shape != probs.shape:
            raise ValueError(f"losses and probs must have the same length, got {losses.size} and {probs.size}")
        inf = check_real("infinity_mass", infinity_mass, lo=0.0, hi=1.0)
        total = float(probs.sum()) + inf
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"probs and infinity_mass must add up to 1 (within 1e-09), got {total!r}")
        with np.errstate(divide="ignore"):
            lp = np.log(probs)
        self._set(losses, lp, inf)

    def _set(self, losses: np.ndarray, log_probs: np.ndarray, inf: float) -> None:
        self._losses, self._log_probs = _merge_atoms(np.asarray(losses, float), np.asarray(log_probs, float))
        self._inf = float(inf)

    @classmethod
    def _from_logs(cls, losses, log_probs, infinity_mass) -> "DiscretePLD":
        obj = cls.__new__(cls)
        obj._set(losses, log_probs, infinity_mass)
        return obj

    @classmethod
    def from_pmfs(cls, p: Any, q: Any) -> "DiscretePLD":
        r"""The exact PLD of a pair of pmfs over the same outcomes: atoms :math:`\ln(p_y/q_y)` w.p. :math:`p_y`.

        Outcomes with ``q_y = 0 < p_y`` go to :attr:`infinity_mass`; outcomes with ``p_y = 0`` carry no mass.
        """
        from ._validation import check_pmf_pair

        p, q = check_pmf_pair("p", p, "q", q)
        pos = p > 0
        inf = float(p[pos & (q == 0)].sum())
        both = pos & (q > 0)
        losses = np.log(p[both]) - np.log(q[both])
        return cls._from_logs(losses, np.log(p[both]), inf)

    def __repr__(self) -> str:
        return f"DiscretePLD(<{self._losses.size} atoms>, infinity_mass={self._inf:g})"

    # -- composition ---------------------------------------------------------------------------------------
    def _compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        if isinstance(other, GridPLD):
            return other._compose(self)
        if not isinstance(other, DiscretePLD):
            raise ValueError(f"cannot compose a DiscretePLD exactly with a {type(other).__name__}; "
                             "put both on a grid first, e.g. a.to_grid(1e-4).compose(b.to_grid(1e-4))")
        n = self._losses.size * other._losses.size
        if n > _MAX_EXACT_ATOMS:
            raise ValueError(f"the exact composition would have {n} atoms (more than {_MAX_EXACT_ATOMS}); "
                             "use a grid instead: .to_grid(value_step).compose(...)")
        losses = (self._losses[:, None] + other._losses[None, :]).ravel()
        lp = (self._log_probs[:, None] + other._log_probs[None, :]).ravel()
        inf = 1.0 - (1.0 - self._inf) * (1.0 - other._inf)
        return DiscretePLD._from_logs(losses, lp, inf)

    def _self_compose(self, k: int) -> "DiscretePLD":
        inf = -math.expm1(k * math.log1p(-self._inf)) if self._inf < 1 else 1.0  # 1 - (1 - m)^k
        n = self._losses.size
        if n == 0:
            return DiscretePLD._from_logs(np.empty(0), np.empty(0), inf)
        if n == 1:
            return DiscretePLD._from_logs(self._losses * k, self._log_probs * k, inf)
        if n == 2:
            # k-fold sum of a two-point law: i atoms of the larger loss b and k - i of the smaller a, with
            # probability C(k, i) p_b^i p_a^(k-i) -- the binomial law, evaluated in log-space (O(k)).
            a, b = self._losses
            i = np.arange(k + 1, dtype=float)
            # the finite atoms carry total mass s = 1 - infinity_mass (or less after an optimistic
            # truncation): binomial with p = p_b / s, times s^k
            log_s = np.logaddexp(self._log_probs[0], self._log_probs[1])
            log_pmf = log_binomial_pmf(k, self._log_probs[1] - log_s, self._log_probs[0] - log_s) + k * log_s
            losses = i * b + (k - i) * a
            return DiscretePLD._from_logs(losses, log_pmf, inf)
        # general finite support: exact repeated squaring, merging equal sums
        result, base, e = None, self, k
        while e:
            if e & 1:
                result = base if result is None else result._compose(base)
            e >>= 1
            if e:
                base = base._compose(base)
        return result  # type: ignore[return-value]


# ====================================================================================================
# Gaussian
# ====================================================================================================
class GaussianPLD(PrivacyLossDistribution):
    r"""The privacy loss of the Gaussian mechanism: :math:`L \sim N(\mu, 2\mu)`.

    With noise :math:`N(0, \sigma^2)` on a query of sensitivity :math:`\Delta`, :math:`\mu = \Delta^2/(2\sigma^2)`.
    The tight profile is (Balle & Wang 2018, arXiv:1805.06530, Thm. 8), with :math:`s = \sqrt{2\mu}`,

    .. math:: \delta(\epsilon) = \Phi\left(\frac{s}{2} - \frac{\epsilon}{s}\right)
              - e^{\epsilon}\,\Phi\left(-\frac{s}{2} - \frac{\epsilon}{s}\right),

    evaluated here with ``log_ndtr`` so that it stays accurate for large epsilon.

    >>> round(GaussianPLD.from_mechanism(sigma=1.0).delta_for_epsilon(1.0), 9)
    0.126936738
    """

    def __init__(self, mu: float):
        self.mu = check_real("mu", mu, lo=0.0)

    @classmethod
    def from_mechanism(cls, sigma: float, sensitivity: float = 1.0) -> "GaussianPLD":
        """PLD of Gaussian noise ``N(0, sigma^2)`` on a query of l2-sensitivity ``sensitivity``."""
        sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
        sensitivity = check_real("sensitivity", sensitivity, lo=0.0, lo_open=True)
        return cls(sensitivity ** 2 / (2.0 * sigma ** 2))

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
        return stats.norm.cdf(x, loc=self.mu, scale=self.std)

    def pdf(self, x):
        """Density of ``L`` (for plots)."""
        arr = check_real_array("x", x)
        return stats.norm.pdf(arr, loc=self.mu, scale=self.std) if self.mu > 0 else np.zeros_like(arr)

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(self.mu, self.std, size=n)

    def _log_delta(self, eps: np.ndarray) -> np.ndarray:
        s = self.std
        log_first = special.log_ndtr(s / 2 - eps / s)
        log_second = eps + special.log_ndtr(-s / 2 - eps / s)
        with np.errstate(divide="ignore"):
            # log(Phi(a) - e^eps Phi(b)) = log Phi(a) + log(1 - e^{log_second - log_first})
            return log_first + np.log(-np.expm1(np.minimum(log_second - log_first, 0.0)))

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
        f = lambda e: float(self._log_delta(np.array([e]))[0]) - target  # noqa: E731
        return float(optimize.brentq(f, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))

    def _compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        if isinstance(other, GaussianPLD):
            return GaussianPLD(self.mu + other.mu)
        if isinstance(other, GridPLD):
            return other._compose(self)
        raise ValueError(f"cannot compose a GaussianPLD exactly with a {type(other).__name__}; "
                         "put both on a grid first, e.g. a.to_grid(1e-4).compose(b.to_grid(1e-4))")

    def _self_compose(self, k: int) -> "GaussianPLD":
        return GaussianPLD(k * self.mu)

    def _bucket_masses(self, grid: np.ndarray):
        """P- and Q-mass of each bucket (grid[i], grid[i+1]] and of the two tails, exactly.

        Under ``Q`` the loss is ``N(-mu, 2 mu)`` (the pair is symmetric).
        """
        s = self.std
        p_cdf = _log_cdf_masses(stats.norm(self.mu, s), grid)
        q_cdf = _log_cdf_masses(stats.norm(-self.mu, s), grid)
        return p_cdf, q_cdf


def _log_cdf_masses(dist, grid: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Masses of ``dist`` in (-inf, g0], (g_i, g_{i+1}], (g_n, inf), using sf in the upper half for accuracy."""
    cdf = dist.cdf(grid)
    sf = dist.sf(grid)
    upper = cdf > 0.5
    inner = np.where(upper[:-1], sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    return np.maximum(inner, 0.0), float(cdf[0]), float(sf[-1])


# ====================================================================================================
# Grid
# ====================================================================================================
class GridPLD(_AtomicPLD):
    r"""A PLD whose finite atoms sit on the grid ``value_step * (start + i)``, composed by FFT.

    Build one with :meth:`from_densities` (a pair of continuous distributions) or :meth:`from_pld` (any
    other PLD).  ``pessimistic=True`` gives an upper bound on :math:`\delta(\epsilon)` for every
    :math:`\epsilon` that survives composition; ``pessimistic=False`` a lower bound.

    Discretisation (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the dots",
    arXiv:2207.04380):

    * pessimistic – the mass of each bucket :math:`(l_i, l_{i+1}]` is split between :math:`l_i` and
      :math:`l_{i+1}`, putting :math:`(P_b - e^{l_i} Q_b)/(1 - e^{-h})` on :math:`l_{i+1}` (:math:`h` the step,
      :math:`P_b, Q_b` the bucket's mass under each distribution).  The resulting hockey-stick curve
      interpolates the true one linearly in :math:`e^\epsilon` between grid points, so it lies above it
      (the true curve is convex in :math:`e^\epsilon`) – error :math:`O(h^2)`;
    * optimistic – each loss is rounded down to the grid – error :math:`O(h)`.

    Composition convolves the two grids with an FFT (``numpy.fft.rfft``); results below ``1e-300`` or
    negative by FFT round-off (about ``1e-17`` of the largest mass) are set to 0.  Tails of total mass below
    ``tail_mass`` are truncated on the safe side: pessimistic – the upper tail goes to ``+inf`` and the lower
    tail up to the lowest kept point; optimistic – the lower tail is dropped and the upper tail moved down to
    the highest kept point.
    """

    def __init__(self, start: int, probs: Any, value_step: float, infinity_mass: float = 0.0,
                 pessimistic: bool = True, tail_mass: float = 1e-15):
        self.value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        self.start = check_int("start", start, lo=None)
        p = check_real_array("probs", probs, lo=0.0, ndim=1)
        self.pessimistic = bool(pessimistic)
        self.tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3)
        inf = check_real("infinity_mass", infinity_mass, lo=0.0, hi=1.0)
        total = float(p.sum()) + inf
        if total > 1.0 + 1e-9:
            raise ValueError(f"probs and infinity_mass must add up to at most 1 (within 1e-09), got {total!r}")
        self._set_grid(self.start, p, inf)

    def _set_grid(self, start: int, probs: np.ndarray, inf: float) -> None:
        probs = np.where(probs < 1e-300, 0.0, probs)
        nz = np.flatnonzero(probs)
        if nz.size:
            probs = probs[nz[0]:nz[-1] + 1]
            start += int(nz[0])
        else:
            probs = np.zeros(1)
        self.start = int(start)
        self._probs = probs
        self._losses = self.value_step * (self.start + np.arange(probs.size))
        with np.errstate(divide="ignore"):
            self._log_probs = np.log(probs)
        self._inf = float(min(inf, 1.0))
        self.__dict__.pop("_suffix_cache", None)

    @classmethod
    def _make(cls, start, probs, value_step, inf, pessimistic, tail_mass) -> "GridPLD":
        obj = cls.__new__(cls)
        obj.value_step = value_step
        obj.pessimistic = pessimistic
        obj.tail_mass = tail_mass
        obj._set_grid(start, np.asarray(probs, float), inf)
        return obj

    @property
    def probs(self) -> np.ndarray:
        return self._probs.copy()

    def __repr__(self) -> str:
        kind = "pessimistic" if self.pessimistic else "optimistic"
        return (f"GridPLD({kind}, value_step={self.value_step:g}, {self._probs.size} points from "
                f"{self._losses[0]:g} to {self._losses[-1]:g}, infinity_mass={self._inf:g})")

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_pld(cls, pld: PrivacyLossDistribution, value_step: float = 1e-4, pessimistic: bool = True,
                 tail_mass: float = 1e-15) -> "GridPLD":
        """Put any PLD on the grid ``value_step * Z`` (pessimistically or optimistically, see the class)."""
        if not isinstance(pld, PrivacyLossDistribution):
            raise ValueError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
        value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3)
        if isinstance(pld, GridPLD):
            if math.isclose(pld.value_step, value_step, rel_tol=1e-12) and pld.pessimistic == pessimistic:
                return pld
            atoms, masses = pld._losses, pld._probs
            return cls._from_atoms(atoms, masses, pld._inf, value_step, pessimistic, tail_mass)
        if isinstance(pld, _AtomicPLD):
            return cls._from_atoms(pld._losses, np.exp(pld._log_probs), pld._inf, value_step, pessimistic,
                                   tail_mass)
        if isinstance(pld, GaussianPLD):
            if pld.mu == 0:
                return cls._make(0, [1.0], value_step, 0.0, pessimistic, tail_mass)
            s = pld.std
            z = -special.ndtri(tail_mass / 2) if tail_mass > 0 else 40.0
            lo = math.floor((pld.mu - z * s) / value_step)
            hi = math.ceil((pld.mu + z * s) / value_step)
            grid = value_step * np.arange(lo, hi + 1)
            (p_in, p_below, p_above), (q_in, _, _) = pld._bucket_masses(grid)
            return cls._from_buckets(lo, grid, p_in, q_in, p_below, p_above, value_step, pessimistic,
                                     tail_mass)
        raise ValueError(f"cannot put a {type(pld).__name__} on a grid")  # pragma: no cover

    @classmethod
    def _from_atoms(cls, atoms, masses, inf, value_step, pessimistic, tail_mass) -> "GridPLD":
        atoms = np.asarray(atoms, float)
        masses = np.asarray(masses, float)
        pos = atoms / value_step
        near = np.round(pos)
        on_grid = np.abs(pos - near) <= 1e-9 * np.maximum(1.0, np.abs(pos))
        lower = np.where(on_grid, near, np.floor(pos)).astype(np.int64)
        if lower.size == 0:
            return cls._make(0, [0.0], value_step, inf, pessimistic, tail_mass)
        lo_idx = int(lower.min())
        out = np.zeros(int(lower.max()) - lo_idx + 2)
        if pessimistic:
            # connect the dots for a single atom l in (g, g + h): a fraction
            # (1 - e^{g - l}) / (1 - e^{-h}) goes up to g + h, the rest stays at g
            up = np.where(on_grid, 0.0,
                          np.expm1(lower * value_step - atoms) / np.expm1(-value_step))
            up = np.clip(up, 0.0, 1.0)
            np.add.at(out, lower - lo_idx + 1, masses * up)
            np.add.at(out, lower - lo_idx, masses * (1.0 - up))
        else:
            np.add.at(out, lower - lo_idx, masses)
        return cls._make(lo_idx, out, value_step, inf, pessimistic, tail_mass)

    @classmethod
    def _from_buckets(cls, lo: int, grid, p_in, q_in, p_below, p_above, value_step, pessimistic,
                      tail_mass, extra: tuple[tuple[int, float], ...] = ()) -> "GridPLD":
        """Grid PLD from exact bucket masses of the buckets between grid points and beyond both ends.

        Pessimistic buckets are ``(g_i, g_{i+1}]`` (below: ``<= g_0``, above: ``> g_n``); optimistic ones are
        ``[g_i, g_{i+1})`` (below: ``< g_0``, above: ``>= g_n``).

        ``extra`` adds ``(index, mass)`` pairs directly to grid points (already rounded the safe way).
        """
        n = grid.size
        out = np.zeros(n)
        for index, mass in extra:
            out[min(max(index, 0), n - 1)] += mass
        inf = 0.0
        if pessimistic:
            # connect the dots: (P_b - e^{g_i} Q_b) / (1 - e^{-h}) of the bucket goes to its upper end
            up = (p_in - np.exp(grid[:-1]) * q_in) / -np.expm1(-value_step)
            up = np.clip(up, 0.0, p_in)
            out[1:] += up
            out[:-1] += p_in - up
            out[0] += p_below          # losses <= grid[0]: rounded up to grid[0]
            inf += p_above             # losses above the grid: unknown, so +inf
        else:
            # buckets are [g_i, g_{i+1}) here, so that an atom sitting on a grid point stays there
            out[:-1] += p_in           # rounded down
            out[-1] += p_above         # losses >= grid[-1]: rounded down to grid[-1]
            # losses < grid[0] are dropped (moved to -inf)
        return cls._make(lo, out, value_step, inf, pessimistic, tail_mass)

    @classmethod
    def from_densities(cls, p_dist, q_dist, value_step: float = 1e-4, pessimistic: bool = True,
                       tail_mass: float = 1e-15, loss_bounds: tuple[float, float] | None = None
                       ) -> "GridPLD":
        r"""Discretise the PLD of two continuous distributions whose privacy loss is monotone in the output.

        Args:
            p_dist, q_dist: scipy frozen continuous distributions (``logpdf``, ``cdf``, ``sf``, ``ppf``,
                ``isf``), e.g. ``scipy.stats.laplace(0, 1)`` and ``scipy.stats.laplace(1, 1)``.
            value_step: grid spacing of the losses (the grid is ``value_step * Z``; choose it to divide the
                values you care about, e.g. the epsilon of a Laplace mechanism, so that atoms are exact).
            pessimistic: upper bound (connect the dots) if True, lower bound (rounding down) if False.
            tail_mass: output mass of ``P`` left outside the discretised range, split over both tails
                (pessimistic: the high-loss tail goes to ``+inf`` unless ``loss_bounds`` bounds it).
            loss_bounds: optional known bounds ``(lower, upper)`` on the privacy loss (e.g. ``(-eps, eps)`` for
                an eps-DP mechanism).  The tails outside the discretised range are then placed at these
                bounds (rounded the safe way) instead of at ``+inf`` / ``-inf``.

        The loss :math:`\ell(y) = \ln p(y) - \ln q(y)` must be monotone (in either direction) in ``y``: then
        each set :math:`\{\ell > l\}` is a half-line whose end is found by bisection, and every bucket's mass
        under both distributions is an exact difference of cdfs.  Losses within ``1e-9 * value_step`` of a
        grid point count as on it (this absorbs rounding in ``logpdf``; at least ~1e-12).

        Raises:
            ValueError: if the loss is not monotone, or the arguments are out of range.
        """
        value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3, lo_open=True)
        for name, d in (("p_dist", p_dist), ("q_dist", q_dist)):
            if not all(hasattr(d, a) for a in ("logpdf", "cdf", "sf", "ppf", "isf")):
                raise ValueError(f"{name} must be a scipy frozen continuous distribution "
                                 f"(e.g. scipy.stats.laplace(0, 1)), got {type(d).__name__}")
        y_lo = float(p_dist.ppf(tail_mass / 2))
        y_hi = float(p_dist.isf(tail_mass / 2))
        if not (np.isfinite(y_lo) and np.isfinite(y_hi) and y_lo < y_hi):
            raise ValueError("p_dist must have a finite quantile range; got "
                             f"[{y_lo}, {y_hi}] for tail_mass={tail_mass:g}")

        def loss(y):
            with np.errstate(divide="ignore", invalid="ignore"):
                return p_dist.logpdf(y) - q_dist.logpdf(y)

        probe = np.linspace(y_lo, y_hi, 16385)
        lp = loss(probe)
        if not np.all(np.isfinite(lp)):
            raise ValueError("the privacy loss ln p(y) - ln q(y) must be finite on the bulk of p_dist; "
                             "q_dist has no density where p_dist has mass")
        d = np.diff(lp)
        slack = 1e-9 * max(1.0, float(np.max(np.abs(lp))))
        if np.all(d <= slack):
            decreasing = True
        elif np.all(d >= -slack):
            decreasing = False
        else:
            k = int(np.flatnonzero(np.sign(d) != np.sign(d[np.argmax(np.abs(d))]))[0])
            raise ValueError("the privacy loss ln p(y) - ln q(y) must be monotone in y for from_densities; "
                             f"it changes direction near y = {probe[k]:.6g}")
        l_top, l_bot = (lp[0], lp[-1]) if decreasing else (lp[-1], lp[0])
        # Losses this close to a grid point count as on it.  It must exceed the rounding of ln p - ln q in the
        # far tails (a few ulps of |ln p|, ~1e-14 at the 1e-15 quantile), or an atom sitting exactly on a grid
        # point (the plateaus of the Laplace loss) could fall into the neighbouring bucket.
        log_scale = float(np.max(np.abs(p_dist.logpdf(probe[[0, -1]])))) + float(np.max(np.abs(lp)))
        tol = max(1e-9 * value_step, 256 * np.finfo(float).eps * max(1.0, log_scale))
        if tol >= 0.01 * value_step:
            raise ValueError(f"value_step must be > {100 * tol:.3g} for these densities (rounding of their log "
                             f"densities is ~{tol:.1g}), got {value_step:g}")
        if loss_bounds is not None:
            b_lo = check_real("loss_bounds[0]", loss_bounds[0])
            b_hi = check_real("loss_bounds[1]", loss_bounds[1], lo=b_lo)
            if l_bot < b_lo - 1e-9 * max(1.0, abs(b_lo)) or l_top > b_hi + 1e-9 * max(1.0, abs(b_hi)):
                raise ValueError(f"loss_bounds must contain the privacy loss, got {loss_bounds!r} but the loss "
                                 f"reaches [{l_bot:.6g}, {l_top:.6g}]")
            l_top, l_bot = max(l_top, b_hi), min(l_bot, b_lo)
        lo = math.floor((l_bot + tol) / value_step)
        hi = math.ceil((l_top - tol) / value_step)
        if hi <= lo:
            hi = lo + 1
        grid = value_step * np.arange(lo, hi + 1)

        # boundary of {l(y) > g} inside [y_lo, y_hi] for every grid value g, by vectorised bisection,
        # started from brackets read off a probe of the (monotone) loss on a fine grid of outputs.
        # pessimistic buckets (g, g'] need {l > g}; optimistic buckets [g, g') need {l >= g}
        shift = tol if pessimistic else -tol
        mono = np.minimum.accumulate(lp) if decreasing else np.maximum.accumulate(lp)
        if decreasing:
            j = probe.size - np.searchsorted(mono[::-1], grid + shift, side="right")  # first probe not above
            a = probe[np.maximum(j - 1, 0)]
            b = probe[np.minimum(j, probe.size - 1)]
        else:
            j = np.searchsorted(mono, grid + shift, side="right")                  # first probe above
            a = probe[np.maximum(j - 1, 0)]
            b = probe[np.minimum(j, probe.size - 1)]
        for _ in range(200):
            if np.all(b - a <= 1e-13 * np.maximum(1.0, np.abs(a))):
                break
            mid = 0.5 * (a + b)
            above = loss(mid) > grid + shift
            if decreasing:          # {l > g} = [y_lo, t): move a up while still above
                a = np.where(above, mid, a)
                b = np.where(above, b, mid)
            else:                   # {l > g} = (t, y_hi]
                b = np.where(above, mid, b)
                a = np.where(above, a, mid)
        t = 0.5 * (a + b)
        # exact cases at the ends: if even y_lo (resp. y_hi) is not above g, the set is empty, etc.
        end_lo = loss(np.array([y_lo]))[0] > grid + shift
        end_hi = loss(np.array([y_hi]))[0] > grid + shift
        if decreasing:
            t = np.where(~end_lo, y_lo, np.where(end_hi, y_hi, t))
        else:
            t = np.where(~end_hi, y_hi, np.where(end_lo, y_lo, t))

        def masses(dist):
            # mass of the bulk [y_lo, y_hi] split at the boundaries t (sorted), via cdf/sf differences
            cdf_t, sf_t = dist.cdf(t), dist.sf(t)
            cdf_lo, sf_hi = float(dist.cdf(y_lo)), float(dist.sf(y_hi))
            if decreasing:
                # region of bucket i (g_i, g_{i+1}]: [t_{i+1}, t_i); t decreasing in i
                inner = np.where(cdf_t[1:] > 0.5, sf_t[1:] - sf_t[:-1], cdf_t[:-1] - cdf_t[1:])
                above = cdf_t[-1] - cdf_lo                 # l > g_top within the bulk
                below = sf_t[0] - sf_hi                    # l <= g_0 within the bulk
                tail_high, tail_low = cdf_lo, sf_hi        # outside the bulk: high-loss and low-loss side
            else:
                inner = np.where(cdf_t[:-1] > 0.5, sf_t[:-1] - sf_t[1:], cdf_t[1:] - cdf_t[:-1])
                above = sf_t[-1] - sf_hi
                below = cdf_t[0] - cdf_lo
                tail_high, tail_low = sf_hi, cdf_lo
            return np.maximum(inner, 0.0), max(above, 0.0), max(below, 0.0), tail_high, tail_low

        p_in, p_above, p_below, p_tail_high, p_tail_low = masses(p_dist)
        q_in, _, _, _, _ = masses(q_dist)
        if pessimistic:
            # outside the bulk: the high-loss tail goes to +inf (or to the top of the grid when loss_bounds
            # bounds it); the low-loss tail (loss <= l_bot) is rounded up to the first grid point >= l_bot
            up_index = math.ceil((l_bot - tol) / value_step) - lo
            extra = [(up_index, p_tail_low)]
            if loss_bounds is not None:
                extra.append((hi - lo, p_tail_high))
                p_tail_high = 0.0
            return cls._from_buckets(lo, grid, p_in, q_in, p_below, p_above + p_tail_high, value_step, True,
                                     tail_mass, extra=tuple(extra))
        # optimistic: the high-loss tail (loss >= l_top) is rounded down to the last grid point <= l_top;
        # the low-loss tail is dropped
        down_index = math.floor((l_top + tol) / value_step) - lo
        return cls._from_buckets(lo, grid, p_in, q_in, p_below, p_above, value_step, False, tail_mass,
                                 extra=((down_index, p_tail_high),))

    # -- composition -----------------------------------------------------------------------------------------
    def _coerce(self, other: PrivacyLossDistribution) -> "GridPLD":
        if isinstance(other, GridPLD):
            if not math.isclose(other.value_step, self.value_step, rel_tol=1e-12):
                raise ValueError(f"value_step must match to compose two grid PLDs, got {self.value_step:g} "
                                 f"and {other.value_step:g}; rebuild one with GridPLD.from_pld(pld, value_step)")
            if other.pessimistic != self.pessimistic:
                raise ValueError("cannot compose a pessimistic grid PLD with an optimistic one: the result "
                                 "would be neither an upper nor a lower bound")
            return other
        return GridPLD.from_pld(other, self.value_step, self.pessimistic, self.tail_mass)

    def _compose(self, other: PrivacyLossDistribution) -> "GridPLD":
        other = self._coerce(other)
        n = self._probs.size + other._probs.size - 1
        size = _fft_size(n)
        conv = np.fft.irfft(np.fft.rfft(self._probs, size) * np.fft.rfft(other._probs, size), size)[:n]
        inf = 1.0 - (1.0 - self._inf) * (1.0 - other._inf)
        return self._truncated(self.start + other.start, np.maximum(conv, 0.0), inf)

    def _self_compose(self, k: int) -> "GridPLD":
        n = k * (self._probs.size - 1) + 1
        inf = -math.expm1(k * math.log1p(-self._inf)) if self._inf < 1 else 1.0
        window = self._chernoff_window(k)
        if window is not None and window[1] - window[0] + 1 < n:
            # Only the part of the k-fold sum inside the window [lo, hi] (total offsets from k * start) is
            # computed, by a cyclic convolution of that length: mass outside the window (at most tail_mass / 2
            # on each side, by the Chernoff bound) wraps around into it.  The lower tail lands near the top
            # of the window (moved up: safe for a pessimistic PLD); the upper tail lands near the bottom
            # (moved down), so a pessimistic PLD adds its bound to infinity_mass.  For an optimistic PLD the
            # wrapped lower tail can raise delta by at most tail_mass / 2.
            lo, hi = window
            size = _fft_size(hi - lo + 1)
            if size >= self._probs.size:
                conv = np.fft.irfft(np.fft.rfft(self._probs, size) ** k, size)
                conv = np.roll(conv, -(lo % size))[: hi - lo + 1]
                if self.pessimistic:
                    inf = min(1.0, inf + self.tail_mass / 2)
                return GridPLD._make(k * self.start + lo, np.maximum(conv, 0.0), self.value_step, inf,
                                     self.pessimistic, self.tail_mass)
        if n <= _MAX_FFT_SIZE:
            size = _fft_size(n)
            conv = np.fft.irfft(np.fft.rfft(self._probs, size) ** k, size)[:n]
            return self._truncated(k * self.start, np.maximum(conv, 0.0), inf)
        # too long for one FFT: square and multiply, truncating the tails after each step
        result, base, e = None, self, k
        while e:
            if e & 1:
                result = base if result is None else result._compose(base)
            e >>= 1
            if e:
                base = base._compose(base)
        return result  # type: ignore[return-value]

    def _chernoff_window(self, k: int) -> tuple[int, int] | None:
        """Offsets [lo, hi] (from ``k * start``) holding all but ``tail_mass / 2`` of each tail of the k-fold sum.

        Chernoff: P(S > u) <= exp(k log M(t) - t u) for t > 0, with M the moment generating function of the
        finite part of one loss (measured in grid steps from ``start``); likewise for the lower tail.
        Returns None when there is nothing to gain.
        """
        if self.tail_mass <= 0 or self._probs.size < 2:
            return None
        p = self._probs / self._probs.sum()
        offsets = np.arange(p.size, dtype=float)
        mean = float(p @ offsets)
        sd = math.sqrt(max(float(p @ (offsets - mean) ** 2), 1e-300))
        log_tail = math.log(self.tail_mass / 2)
        with np.errstate(divide="ignore"):
            logp = np.log(p)
        centred = offsets - mean

        def bound(log_t: float, sign: float) -> float:
            # (k log M(t) - log tail) / t is convex-ish and unimodal in t > 0: minimise over log t
            t = math.exp(log_t) / sd
            return (k * special.logsumexp(sign * t * centred + logp) - log_tail) / t

        def best(sign: float) -> float:
            res = optimize.minimize_scalar(bound, bounds=(math.log(1e-6), math.log(1e3)), args=(sign,),
                                           method="bounded", options={"xatol": 1e-3})
            return float(min(res.fun, bound(math.log(1e3), sign)))

        upper = k * mean + best(1.0)
        lower = k * mean - best(-1.0)
        lo = max(0, math.floor(lower))
        hi = min(k * (p.size - 1), math.ceil(upper))
        return (lo, hi) if hi >= lo else None

    def _truncated(self, start: int, probs: np.ndarray, inf: float) -> "GridPLD":
        """Drop the tails of total mass <= tail_mass / 2 each, on the safe side (see the class docstring)."""
        tm = self.tail_mass / 2
        if tm > 0 and probs.size > 2:
            cum = np.cumsum(probs)
            lo = int(np.searchsorted(cum, tm, side="right"))          # cum[lo - 1] <= tm
            rcum = np.cumsum(probs[::-1])
            hi = probs.size - int(np.searchsorted(rcum, tm, side="right"))  # keep [lo, hi)
            if hi - lo >= 1:
                low_mass = float(cum[lo - 1]) if lo > 0 else 0.0
                high_mass = float(rcum[probs.size - hi - 1]) if hi < probs.size else 0.0
                kept = probs[lo:hi].copy()
                if self.pessimistic:
                    kept[0] += low_mass
                    inf += high_mass
                else:
                    kept[-1] += high_mass
                probs, start = kept, start + lo
        return GridPLD._make(start, probs, self.value_step, inf, self.pessimistic, self.tail_mass)


def _fft_size(n: int) -> int:
    """A fast FFT length >= n (scipy's next_fast_len for real transforms)."""
    from scipy import fft

    return int(fft.next_fast_len(n, real=True))
