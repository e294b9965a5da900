r"""Privacy loss distributions on a uniform grid of losses, composed by FFT (:class:`GridPLD`).

Any PLD can be put on the grid ``value_step * Z`` pessimistically (an upper bound on every
:math:`\delta(\epsilon)`) or optimistically (a lower bound), and so can the PLD of two continuous densities
with a monotone privacy loss (:meth:`GridPLD.from_densities`, whose steps live in
:mod:`dp_course.pld.densities`).  Composition helpers (FFT sizes, Chernoff windows, tail truncation) live in
:mod:`dp_course.pld.convolution`.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from .._validation import check_bool, check_int, check_real, check_real_array
from .atomic import AtomicPLD
from .base import PrivacyLossDistribution
from .convolution import MAX_FFT_SIZE, chernoff_window, fft_size, truncate_tails
from .densities import (bucket_masses, check_frozen_continuous, level_set_boundaries, loss_range, probe_loss,
                        rounding_tolerance)

__all__ = ["GridPLD", "MAX_GRID_POINTS", "MAX_GRID_INDEX"]

MAX_GRID_POINTS = MAX_FFT_SIZE
"""A single PLD is put on at most this many grid points (``value_step`` too small for its losses is refused)."""

MAX_GRID_INDEX = 2**52
"""Largest ``|loss / value_step|``: beyond it grid indices are not exact in floating point (nor in int64)."""


def check_grid_span(lo_loss: float, hi_loss: float, value_step: float) -> None:
    """Refuse, before any array is made, a grid ``value_step * Z`` that cannot hold losses in ``[lo, hi]``.

    The cost of a grid is its number of points, ``(hi - lo) / value_step``: at most :data:`MAX_GRID_POINTS`.
    Indices must stay exact: ``|loss| / value_step`` at most :data:`MAX_GRID_INDEX` (a step of ``1e-300``
    would otherwise overflow the integer grid index and lose the mass it rounds).

    Raises:
        ValueError: naming ``value_step``, the smallest step that would do and the value given.
    """
    reach = max(abs(lo_loss), abs(hi_loss))
    if not (math.isfinite(lo_loss) and math.isfinite(hi_loss)):
        raise ValueError(f"the losses must be finite to be put on a grid, got [{lo_loss!r}, {hi_loss!r}]")
    need = max((hi_loss - lo_loss) / MAX_GRID_POINTS, reach / MAX_GRID_INDEX)
    if value_step < need:
        raise ValueError(f"value_step must be >= {need:.3g} for losses in [{lo_loss:.6g}, {hi_loss:.6g}] (at most "
                         f"{MAX_GRID_POINTS} grid points, grid indices up to 2**52), got {value_step!r}")


class GridPLD(AtomicPLD):
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

    Args:
        start: grid index of the first probability (the loss ``value_step * start``).
        probs: probabilities of consecutive grid points.
        value_step: the grid step, > 0.
        infinity_mass: ``P(L = +inf)``; ``sum(probs) + infinity_mass`` must be at most 1 (within 1e-9).
        pessimistic: whether this grid bounds the truth from above (True) or below (False).
        tail_mass: mass each composition may truncate, in [0, 1e-3].

    Raises:
        ValueError: if an argument is out of range.
    """

    value_step: float
    start: int
    pessimistic: bool
    tail_mass: float
    _probs: np.ndarray

    def __init__(self, start: int, probs: npt.ArrayLike, value_step: float, infinity_mass: float = 0.0,
                 pessimistic: bool = True, tail_mass: float = 1e-15) -> None:
        self.value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        self.start = check_int("start", start, lo=None)
        p = check_real_array("probs", probs, lo=0.0, ndim=1)
        self.pessimistic = check_bool("pessimistic", pessimistic)
        self.tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3)
        inf = check_real("infinity_mass", infinity_mass, lo=0.0, hi=1.0)
        if abs(self.start) + p.size > MAX_GRID_INDEX:
            raise ValueError(f"start must be within +-{MAX_GRID_INDEX} - len(probs), got {self.start}")
        check_grid_span(self.start * self.value_step, (self.start + p.size) * self.value_step, self.value_step)
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
    def _make(cls, start: int, probs: npt.ArrayLike, value_step: float, inf: float, pessimistic: bool,
              tail_mass: float) -> Self:
        """A grid PLD from arguments already known to be valid (no checks)."""
        obj = cls.__new__(cls)
        obj.value_step = value_step
        obj.pessimistic = pessimistic
        obj.tail_mass = tail_mass
        obj._set_grid(start, np.asarray(probs, float), inf)
        return obj

    @property
    def probs(self) -> np.ndarray:
        """Probabilities of the grid points from :attr:`start` on (a copy)."""
        return self._probs.copy()

    def __repr__(self) -> str:
        kind = "pessimistic" if self.pessimistic else "optimistic"
        return (f"GridPLD({kind}, value_step={self.value_step:g}, {self._probs.size} points from "
                f"{self._losses[0]:g} to {self._losses[-1]:g}, infinity_mass={self._inf:g})")

    def to_grid(self, value_step: float = 1e-4, pessimistic: bool = True, tail_mass: float = 1e-15) -> GridPLD:
        """This PLD on the grid ``value_step * Z`` (itself when the step and the direction already match)."""
        return GridPLD.from_pld(self, value_step=value_step, pessimistic=pessimistic, tail_mass=tail_mass)

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_pld(cls, pld: PrivacyLossDistribution, value_step: float = 1e-4, pessimistic: bool = True,
                 tail_mass: float = 1e-15) -> GridPLD:
        """Put any PLD on the grid ``value_step * Z`` (pessimistically or optimistically, see the class).

        Atoms are split between their two neighbouring grid points (connect the dots) or rounded down; a
        continuous PLD is cut into buckets between grid points whose masses it computes exactly.

        Raises:
            ValueError: if ``pld`` is not a PLD, or an argument is out of range.
        """
        if not isinstance(pld, PrivacyLossDistribution):
            raise ValueError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
        value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        pessimistic = check_bool("pessimistic", pessimistic)
        tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3)
        if isinstance(pld, GridPLD):
            if math.isclose(pld.value_step, value_step, rel_tol=1e-12) and pld.pessimistic == pessimistic:
                return pld
            check_grid_span(float(pld._losses[0]), float(pld._losses[-1]), value_step)
            return cls._from_atoms(pld._losses, pld._probs, pld._inf, value_step, pessimistic, tail_mass)
        if isinstance(pld, AtomicPLD):
            losses = pld.losses
            if losses.size:
                check_grid_span(float(losses[0]), float(losses[-1]), value_step)
            return cls._from_atoms(losses, pld.probs, pld.infinity_mass, value_step, pessimistic, tail_mass)
        lo_loss, hi_loss = pld._loss_range(tail_mass)
        check_grid_span(lo_loss, hi_loss, value_step)
        if hi_loss <= lo_loss:  # a point mass
            inf = pld.infinity_mass
            return cls._from_atoms(np.array([lo_loss]), np.array([1.0 - inf]), inf, value_step, pessimistic,
                                   tail_mass)
        lo = math.floor(lo_loss / value_step)
        hi = math.ceil(hi_loss / value_step)
        grid = value_step * np.arange(lo, hi + 1)
        (p_in, p_below, p_above), (q_in, _, _) = pld._bucket_masses(grid)
        return cls._from_buckets(lo, grid, p_in, q_in, p_below, p_above, value_step, pessimistic, tail_mass)

    @classmethod
    def _from_atoms(cls, atoms: npt.ArrayLike, masses: npt.ArrayLike, inf: float, value_step: float,
                    pessimistic: bool, tail_mass: float) -> GridPLD:
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
    def _from_buckets(cls, lo: int, grid: np.ndarray, p_in: np.ndarray, q_in: np.ndarray, p_below: float,
                      p_above: float, value_step: float, pessimistic: bool, tail_mass: float,
                      extra: tuple[tuple[int, float], ...] = ()) -> GridPLD:
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
    def from_densities(cls, p_dist: Any, q_dist: Any, value_step: float = 1e-4, pessimistic: bool = True,
                       tail_mass: float = 1e-15, loss_bounds: tuple[float, float] | None = None) -> GridPLD:
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

        Returns:
            GridPLD: the pessimistic or optimistic discretisation.

        The loss :math:`\ell(y) = \ln p(y) - \ln q(y)` must be monotone (in either direction) in ``y``: then
        each set :math:`\{\ell > l\}` is a half-line whose end is found by bisection, and every bucket's mass
        under both distributions is an exact difference of cdfs.  Losses within ``1e-9 * value_step`` of a
        grid point count as on it (this absorbs rounding in ``logpdf``; at least ~1e-12).  The steps are the
        functions of :mod:`dp_course.pld.densities`.

        Raises:
            ValueError: if the loss is not monotone, or the arguments are out of range.
        """
        value_step = check_real("value_step", value_step, lo=0.0, lo_open=True)
        pessimistic = check_bool("pessimistic", pessimistic)
        tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1e-3, lo_open=True)
        check_frozen_continuous("p_dist", p_dist)
        check_frozen_continuous("q_dist", q_dist)
        profile = probe_loss(p_dist, q_dist, tail_mass)
        tol = rounding_tolerance(profile, value_step)
        l_bot, l_top = loss_range(profile, loss_bounds)
        check_grid_span(l_bot, l_top, value_step)
        lo = math.floor((l_bot + tol) / value_step)
        hi = max(math.ceil((l_top - tol) / value_step), lo + 1)
        grid = value_step * np.arange(lo, hi + 1)
        t = level_set_boundaries(profile, grid, tol if pessimistic else -tol)
        p_in, p_above, p_below, p_tail_high, p_tail_low = bucket_masses(p_dist, t, profile)
        q_in = bucket_masses(q_dist, t, profile)[0]
        if pessimistic:
            # outside the bulk: the high-loss tail goes to +inf (or to the top of the grid when loss_bounds
            # bounds it); the low-loss tail (loss <= l_bot) is rounded up to the first grid point >= l_bot
            extra = [(math.ceil((l_bot - tol) / value_step) - lo, p_tail_low)]
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
    def _coerce(self, other: PrivacyLossDistribution) -> GridPLD:
        """``other`` on this grid (same step and direction), or a ValueError for an incompatible grid."""
        if isinstance(other, GridPLD):
            if not math.isclose(other.value_step, self.value_step, rel_tol=1e-12):
                raise ValueError(f"value_step must match to compose two grid PLDs, got {self.value_step:g} "
                                 f"and {other.value_step:g}; rebuild one with GridPLD.from_pld(pld, value_step)")
            if other.pessimistic != self.pessimistic:
                raise ValueError("cannot compose a pessimistic grid PLD with an optimistic one: the result "
                                 "would be neither an upper nor a lower bound")
            return other
        return GridPLD.from_pld(other, self.value_step, self.pessimistic, self.tail_mass)

    def _compose(self, other: PrivacyLossDistribution) -> Self:
        """A grid absorbs any PLD: ``other`` is put on this grid first, then the two are convolved."""
        other = self._coerce(other)
        n = self._probs.size + other._probs.size - 1
        size = fft_size(n)
        conv = np.fft.irfft(np.fft.rfft(self._probs, size) * np.fft.rfft(other._probs, size), size)[:n]
        inf = 1.0 - (1.0 - self._inf) * (1.0 - other._inf)
        return self._truncated(self.start + other.start, np.maximum(conv, 0.0), inf)

    def _self_compose(self, k: int) -> Self:
        if k * (abs(self.start) + self._probs.size) > MAX_GRID_INDEX:
            raise ValueError(f"k must be at most {MAX_GRID_INDEX // (abs(self.start) + self._probs.size)} on this grid "
                             f"(the losses of the k-fold sum would leave the exact grid indices), got {k}")
        n = k * (self._probs.size - 1) + 1
        inf = -math.expm1(k * math.log1p(-self._inf)) if self._inf < 1 else 1.0
        window = chernoff_window(self._probs, k, self.tail_mass)
        width = n if window is None else window[1] - window[0] + 1
        if width > MAX_GRID_POINTS:
            raise ValueError(f"k = {k} needs {width} grid points (more than {MAX_GRID_POINTS}); k must be smaller, "
                             f"or the grid coarser (a larger value_step)")
        if window is not None and window[1] - window[0] + 1 < n:
            # Only the part of the k-fold sum inside the window [lo, hi] (total offsets from k * start) is
            # computed, by a cyclic convolution of that length: mass outside the window (at most tail_mass / 2
            # on each side, by the Chernoff bound) wraps around into it.  The lower tail lands near the top
            # of the window (moved up: safe for a pessimistic PLD); the upper tail lands near the bottom
            # (moved down), so a pessimistic PLD adds its bound to infinity_mass.  For an optimistic PLD the
            # wrapped lower tail can raise delta by at most tail_mass / 2.
            lo, hi = window
            size = fft_size(hi - lo + 1)
            if size >= self._probs.size:
                conv = np.fft.irfft(np.fft.rfft(self._probs, size) ** k, size)
                conv = np.roll(conv, -(lo % size))[: hi - lo + 1]
                if self.pessimistic:
                    inf = min(1.0, inf + self.tail_mass / 2)
                return self._make(k * self.start + lo, np.maximum(conv, 0.0), self.value_step, inf,
                                  self.pessimistic, self.tail_mass)
        if n <= MAX_FFT_SIZE:
            size = fft_size(n)
            conv = np.fft.irfft(np.fft.rfft(self._probs, size) ** k, size)[:n]
            return self._truncated(k * self.start, np.maximum(conv, 0.0), inf)
        # too long for one FFT: square and multiply, truncating the tails after each step
        result: Self | None = None
        base, e = self, k
        while e:
            if e & 1:
                result = base if result is None else result._compose(base)
            e >>= 1
            if e:
                base = base._compose(base)
        assert result is not None  # k >= 1, so the loop ran at least once with e & 1
        return result

    def _truncated(self, start: int, probs: np.ndarray, inf: float) -> Self:
        """Drop the tails of total mass <= tail_mass / 2 each, on the safe side (see the class docstring)."""
        offset, kept, extra_inf = truncate_tails(probs, self.tail_mass, self.pessimistic)
        return self._make(start + offset, kept, self.value_step, inf + extra_inf, self.pessimistic,
                          self.tail_mass)
