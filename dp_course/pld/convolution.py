r"""Composition helpers for PLDs on a grid: FFT sizes, Chernoff windows and safe tail truncation.

Composing two PLDs on the same grid ``h * Z`` convolves their probability vectors (the loss of a transcript
is the sum of the per-step losses).  These helpers work on plain arrays of grid probabilities (index ``i`` is
the loss ``h * (start + i)``); :class:`dp_course.pld.GridPLD` wraps them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import fft, optimize, special

from .._validation import check_bool, check_int, check_real, check_real_array

__all__ = ["fft_size", "chernoff_window", "truncate_tails", "MAX_FFT_SIZE"]

MAX_FFT_SIZE = 1 << 25
"""FFT composition is done in one shot when the full support has at most this many points."""


def _check_probs(probs: Any) -> np.ndarray:
    return check_real_array("probs", probs, lo=0.0, ndim=1)


def fft_size(n: int) -> int:
    """A fast FFT length >= n (scipy's ``next_fast_len`` for real transforms); ``n`` in [1, 2**40]."""
    return int(fft.next_fast_len(check_int("n", n, lo=1, hi=2**40), real=True))


def chernoff_window(probs: np.ndarray, k: int, tail_mass: float) -> tuple[int, int] | None:
    r"""Offsets ``[lo, hi]`` holding all but ``tail_mass / 2`` of each tail of the ``k``-fold sum.

    The offsets count grid steps from ``k * start``.  Chernoff:
    :math:`P(S > u) \le \exp(k \ln M(t) - t u)` for :math:`t > 0`, with :math:`M` the moment generating
    function of one loss (in grid steps from ``start``, normalised to the finite part); likewise for the lower
    tail.  The bound is minimised over :math:`\ln t` with a bounded scalar search.

    Args:
        probs: probabilities of the grid points of one loss (1-D, >= 0).
        k: number of summands, >= 1.
        tail_mass: total mass allowed outside the window, split over both tails.

    Returns:
        ``(lo, hi)``, or ``None`` when there is nothing to gain (no tail budget, or a single point).
    """
    probs = _check_probs(probs)
    k = check_int("k", k, lo=1)
    tail_mass = check_real("tail_mass", tail_mass, lo=0.0, hi=1.0)
    if tail_mass <= 0 or probs.size < 2 or not probs.sum() > 0:
        return None
    p = probs / probs.sum()
    offsets = np.arange(p.size, dtype=float)
    mean = float(p @ offsets)
    sd = math.sqrt(max(float(p @ (offsets - mean) ** 2), 1e-300))
    log_tail = math.log(tail_mass / 2)
    with np.errstate(divide="ignore"):
        logp = np.log(p)
    centred = offsets - mean

    def bound(log_t: float, sign: float) -> float:
        # (k log M(t) - log tail) / t is convex-ish and unimodal in t > 0: minimise over log t
        t = math.exp(log_t) / sd
        return float((k * special.logsumexp(sign * t * centred + logp) - log_tail) / t)

    def best(sign: float) -> float:
        res = optimize.minimize_scalar(bound, bounds=(math.log(1e-6), math.log(1e3)), args=(sign,),
                                       method="bounded", options={"xatol": 1e-3})
        return float(min(res.fun, bound(math.log(1e3), sign)))

    upper = k * mean + best(1.0)
    lower = k * mean - best(-1.0)
    lo = max(0, math.floor(lower))
    hi = min(k * (p.size - 1), math.ceil(upper))
    return (lo, hi) if hi >= lo else None


def truncate_tails(probs: np.ndarray, tail_mass: float, pessimistic: bool) -> tuple[int, np.ndarray, float]:
    """Drop both tails of mass <= ``tail_mass / 2`` each, on the safe side.

    Pessimistic: the lower tail is moved up to the lowest kept point and the upper tail goes to ``+inf``.
    Optimistic: the lower tail is dropped (moved to ``-inf``) and the upper tail moved down to the highest
    kept point.  Either way every ``delta(eps)`` moves in the safe direction.

    Args:
        probs: grid probabilities (1-D, >= 0).
        tail_mass: total mass that may be truncated, split over both tails.
        pessimistic: which side is safe (see above).

    Returns:
        ``(offset, kept, extra_infinity_mass)``: the kept points start ``offset`` steps above the first input
        point; ``extra_infinity_mass`` is what the pessimistic truncation adds to the atom at ``+inf``.
    """
    probs = _check_probs(probs)
    tm = check_real("tail_mass", tail_mass, lo=0.0, hi=1.0) / 2
    pessimistic = check_bool("pessimistic", pessimistic)
    if not (tm > 0 and probs.size > 2):
        return 0, probs, 0.0
    cum = np.cumsum(probs)
    lo = int(np.searchsorted(cum, tm, side="right"))          # cum[lo - 1] <= tm
    rcum = np.cumsum(probs[::-1])
    hi = probs.size - int(np.searchsorted(rcum, tm, side="right"))  # keep [lo, hi)
    if hi - lo < 1:
        return 0, probs, 0.0
    low_mass = float(cum[lo - 1]) if lo > 0 else 0.0
    high_mass = float(rcum[probs.size - hi - 1]) if hi < probs.size else 0.0
    kept = probs[lo:hi].copy()
    if pessimistic:
        kept[0] += low_mass
        return lo, kept, high_mass
    kept[-1] += high_mass
    return lo, kept, 0.0
