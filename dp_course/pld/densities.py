r"""The steps of discretising the PLD of two continuous densities (:meth:`dp_course.pld.GridPLD.from_densities`).

For a pair of continuous distributions :math:`P, Q` whose privacy loss :math:`\ell(y) = \ln p(y) - \ln q(y)`
is monotone in the output :math:`y`, each set :math:`\{\ell > g\}` is a half-line.  So the mass of every loss
bucket :math:`(g_i, g_{i+1}]` under either distribution is an exact difference of cdfs at the ends of those
half-lines.  The steps, in order:

1. :func:`check_frozen_continuous` – the arguments are scipy frozen continuous distributions;
2. :func:`probe_loss` – the bulk of ``P`` (all but ``tail_mass``), the loss on a fine probe of it, and its
   direction (with a clear error when it is not monotone);
3. :func:`rounding_tolerance` – how close to a grid point a loss counts as on it;
4. :func:`loss_range` – the range of losses to cover, widened to known ``loss_bounds``;
5. :func:`level_set_boundaries` – for every grid value :math:`g`, the end of :math:`\{\ell > g\}`
   (vectorised bisection);
6. :func:`bucket_masses` – the mass of each bucket, of the two ends of the grid and of the two tails outside
   the bulk, under one distribution.

Everything here works on plain arrays; :class:`dp_course.pld.GridPLD` turns the masses into a grid PLD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_bool, check_real, check_real_array

__all__ = [
    "LossProfile",
    "check_frozen_continuous",
    "probe_loss",
    "rounding_tolerance",
    "loss_range",
    "level_set_boundaries",
    "bucket_masses",
    "PROBE_POINTS",
]

PROBE_POINTS = 16385
"""Number of outputs at which the loss is probed (monotonicity check and bisection brackets)."""

_FROZEN_METHODS = ("logpdf", "cdf", "sf", "ppf", "isf")


@dataclass(frozen=True)
class LossProfile:
    """The privacy loss of a pair of densities, probed on the bulk ``[y_lo, y_hi]`` of ``P``.

    Attributes:
        p_dist, q_dist: the two scipy frozen continuous distributions.
        y_lo, y_hi: the quantiles of ``P`` at ``tail_mass / 2`` and ``1 - tail_mass / 2``.
        probe: ``PROBE_POINTS`` equally spaced outputs in ``[y_lo, y_hi]``.
        values: the loss at each probe point.
        decreasing: whether the loss decreases in ``y`` (else it increases).
    """

    p_dist: Any
    q_dist: Any
    y_lo: float
    y_hi: float
    probe: np.ndarray
    values: np.ndarray
    decreasing: bool

    def __post_init__(self) -> None:
        check_frozen_continuous("p_dist", self.p_dist)
        check_frozen_continuous("q_dist", self.q_dist)
        y_lo = check_real("y_lo", self.y_lo)
        check_real("y_hi", self.y_hi, lo=y_lo, lo_open=True)
        probe = check_real_array("probe", self.probe, ndim=1)
        values = check_real_array("values", self.values, ndim=1)
        if probe.shape != values.shape:
            raise ValueError(f"probe and values must have the same length, got {probe.size} and {values.size}")
        check_bool("decreasing", self.decreasing)

    def loss(self, y: np.ndarray) -> np.ndarray:
        """``ln p(y) - ln q(y)`` (``inf``/``nan`` where a density vanishes, without warnings)."""
        return _loss(self.p_dist, self.q_dist, check_real_array("y", y))

    @property
    def low(self) -> float:
        """The smallest loss on the probe."""
        return float(self.values[-1] if self.decreasing else self.values[0])

    @property
    def high(self) -> float:
        """The largest loss on the probe."""
        return float(self.values[0] if self.decreasing else self.values[-1])


def _loss(p_dist: Any, q_dist: Any, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(p_dist.logpdf(y) - q_dist.logpdf(y), dtype=float)


def _check_profile(profile: Any) -> LossProfile:
    if not isinstance(profile, LossProfile):
        raise ValueError(f"profile must be a LossProfile (from probe_loss), got {type(profile).__name__}")
    return profile


def check_frozen_continuous(name: str, dist: Any) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``dist`` has the methods of a scipy frozen distribution."""
    if not all(hasattr(dist, a) for a in _FROZEN_METHODS):
        raise ValueError(f"{name} must be a scipy frozen continuous distribution "
                         f"(e.g. scipy.stats.laplace(0, 1)), got {type(dist).__name__}")


def probe_loss(p_dist: Any, q_dist: Any, tail_mass: float) -> LossProfile:
    """Step 2: the bulk of ``P``, the loss probed on it, and its direction.

    Raises:
        ValueError: if the bulk is not a finite interval, the loss is not finite on it, or the loss is not
            monotone (the message says where it turns); for arguments of the wrong kind or out of range.
    """
    check_frozen_continuous("p_dist", p_dist)
    check_frozen_continuous("q_dist", q_dist)
    tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3, lo_open=True)
    y_lo = float(p_dist.ppf(tail_mass / 2))
    y_hi = float(p_dist.isf(tail_mass / 2))
    if not (np.isfinite(y_lo) and np.isfinite(y_hi) and y_lo < y_hi):
        raise ValueError("p_dist must have a finite quantile range; got "
                         f"[{y_lo}, {y_hi}] for tail_mass={tail_mass:g}")
    probe = np.linspace(y_lo, y_hi, PROBE_POINTS)
    values = _loss(p_dist, q_dist, probe)
    if not np.all(np.isfinite(values)):
        raise ValueError("the privacy loss ln p(y) - ln q(y) must be finite on the bulk of p_dist; "
                         "q_dist has no density where p_dist has mass")
    d = np.diff(values)
    slack = 1e-9 * max(1.0, float(np.max(np.abs(values))))
    if np.all(d <= slack):
        decreasing = True
    elif np.all(d >= -slack):
        decreasing = False
    else:
        k = int(np.flatnonzero(np.sign(d) != np.sign(d[np.argmax(np.abs(d))]))[0])
        raise ValueError("the privacy loss ln p(y) - ln q(y) must be monotone in y for from_densities; "
                         f"it changes direction near y = {probe[k]:.6g}")
    return LossProfile(p_dist, q_dist, y_lo, y_hi, probe, values, decreasing)


def rounding_tolerance(profile: LossProfile, value_step: float) -> float:
    """Step 3: losses this close to a grid point count as on it.

    It must exceed the rounding of ``ln p - ln q`` in the far tails (a few ulps of ``|ln p|``, ~1e-14 at the
    1e-15 quantile), or an atom sitting exactly on a grid point (the plateaus of the Laplace loss) could fall
    into the neighbouring bucket: ``max(min(1e-9 * value_step, 1e-12), 256 ulp * max(1, |ln p| + |loss|))``.
    It is an absolute rounding allowance, not a fraction of the step: a loss ``1e-3`` above a grid point of a
    grid with step ``1e6`` is not on the point (counting it there would put a pessimistic bound below the truth).

    Raises:
        ValueError: if ``value_step`` is not at least 100 times this tolerance.
    """
    profile = _check_profile(profile)
    value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
    p_tails = profile.p_dist.logpdf(profile.probe[[0, -1]])
    log_scale = float(np.max(np.abs(p_tails))) + float(np.max(np.abs(profile.values)))
    tol = max(min(1e-9 * value_step, 1e-12), 256 * np.finfo(float).eps * max(1.0, log_scale))
    if tol >= 0.01 * value_step:
        raise ValueError(f"value_step must be > {100 * tol:.3g} for these densities (rounding of their log "
                         f"densities is ~{tol:.1g}), got {value_step:g}")
    return float(tol)


def loss_range(profile: LossProfile, loss_bounds: tuple[float, float] | None) -> tuple[float, float]:
    """Step 4: ``(lowest, highest)`` loss to cover: the probed range, widened to ``loss_bounds`` if given.

    Raises:
        ValueError: if ``loss_bounds`` is not an ordered pair of reals containing the probed losses.
    """
    l_bot, l_top = _check_profile(profile).low, profile.high
    if loss_bounds is None:
        return l_bot, l_top
    if not isinstance(loss_bounds, (tuple, list)) or len(loss_bounds) != 2:
        raise ValueError(f"loss_bounds must be None or a pair (lower, upper) of reals, got {loss_bounds!r}")
    b_lo = check_real("loss_bounds[0]", loss_bounds[0])
    b_hi = check_real("loss_bounds[1]", loss_bounds[1], lo=b_lo)
    if l_bot < b_lo - 1e-9 * max(1.0, abs(b_lo)) or l_top > b_hi + 1e-9 * max(1.0, abs(b_hi)):
        raise ValueError(f"loss_bounds must contain the privacy loss, got {loss_bounds!r} but the loss "
                         f"reaches [{l_bot:.6g}, {l_top:.6g}]")
    return min(l_bot, b_lo), max(l_top, b_hi)


def level_set_boundaries(profile: LossProfile, grid: np.ndarray, shift: float) -> np.ndarray:
    """Step 5: for each grid value ``g``, the end ``t`` of ``{y in [y_lo, y_hi] : loss(y) > g + shift}``.

    Pessimistic buckets ``(g, g']`` need ``{loss > g}`` (``shift = +tol``); optimistic buckets ``[g, g')`` need
    ``{loss >= g}`` (``shift = -tol``).  A vectorised bisection, started from brackets read off the probe
    (made monotone with a running extremum), to 1e-13 relative; a set that is empty or the whole bulk gets
    the matching end of the bulk exactly.
    """
    probe, lp = _check_profile(profile).probe, profile.values
    level = check_real_array("grid", grid, ndim=1, allow_empty=True) + check_real("shift", shift)
    if profile.decreasing:
        mono = np.minimum.accumulate(lp)
        j = probe.size - np.searchsorted(mono[::-1], level, side="right")  # first probe not above
    else:
        mono = np.maximum.accumulate(lp)
        j = np.searchsorted(mono, level, side="right")                   # first probe above
    a = probe[np.maximum(j - 1, 0)]
    b = probe[np.minimum(j, probe.size - 1)]
    for _ in range(200):
        if np.all(b - a <= 1e-13 * np.maximum(1.0, np.abs(a))):
            break
        mid = 0.5 * (a + b)
        above = profile.loss(mid) > level
        if profile.decreasing:      # {l > g} = [y_lo, t): move a up while still above
            a = np.where(above, mid, a)
            b = np.where(above, b, mid)
        else:                       # {l > g} = (t, y_hi]
            b = np.where(above, mid, b)
            a = np.where(above, a, mid)
    t = 0.5 * (a + b)
    # exact cases at the ends: if even y_lo (resp. y_hi) is not above g, the set is empty, etc.
    end_lo = profile.loss(np.array([profile.y_lo]))[0] > level
    end_hi = profile.loss(np.array([profile.y_hi]))[0] > level
    if profile.decreasing:
        return np.where(~end_lo, profile.y_lo, np.where(end_hi, profile.y_hi, t))
    return np.where(~end_hi, profile.y_hi, np.where(end_lo, profile.y_lo, t))


def bucket_masses(dist: Any, t: np.ndarray, profile: LossProfile
                  ) -> tuple[np.ndarray, float, float, float, float]:
    """Step 6: masses under ``dist`` of the bulk split at the boundaries ``t``, and of the two tails outside it.

    Each mass is a difference of ``cdf`` values below the median and of ``sf`` values above it (no
    cancellation in either tail).

    Returns:
        ``(inner, above, below, tail_high, tail_low)``: ``inner[i]`` is the mass of bucket ``i`` (between
        grid points ``i`` and ``i + 1``), ``above`` / ``below`` the mass in the bulk beyond the top / below the
        bottom grid point, ``tail_high`` / ``tail_low`` the mass outside the bulk on its high-loss / low-loss
        side.
    """
    check_frozen_continuous("dist", dist)
    t = check_real_array("t", t, ndim=1)
    profile = _check_profile(profile)
    cdf_t, sf_t = dist.cdf(t), dist.sf(t)
    cdf_lo, sf_hi = float(dist.cdf(profile.y_lo)), float(dist.sf(profile.y_hi))
    if profile.decreasing:
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
    return np.maximum(inner, 0.0), max(float(above), 0.0), max(float(below), 0.0), tail_high, tail_low
