"""Parameter checks shared by the whole library.

Every public function validates its arguments with these helpers, so that a student who passes a bad
value sees one clear message naming the parameter, the allowed range and the value given, e.g.::

    ValueError: epsilon must be > 0, got -1

and never a NaN result or a traceback from deep inside numpy.  Each checker returns the value converted to
the type the caller works with (``float``, ``int`` or a float ``numpy.ndarray``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, cast

import numpy as np

__all__ = [
    "check_real",
    "check_real_array",
    "check_int",
    "check_bool",
    "check_gaussian_mu",
    "check_probability",
    "check_pmf",
    "check_pmf_pair",
    "check_rng",
    "check_epsilon",
    "check_delta",
    "check_orders",
    "check_alpha",
    "DEFAULT_ORDERS",
    "MAX_SAMPLE_SIZE",
]

MAX_SAMPLE_SIZE = 10**8
"""Most samples a sampler of the library draws in one call (a cost guard: 800 MB of float64)."""

MAX_INT = 10**300
"""Largest magnitude :func:`check_int` accepts: integers are used in float arithmetic, which ends near 1.8e308."""

PMF_ATOL = 1e-9
"""How far from 1 the sum of a probability vector may be."""


def _fmt(value: Any) -> str:
    """Short, readable rendering of an offending value for error messages."""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.ndarray):
        with np.printoptions(threshold=8, edgeitems=3, precision=6):
            return f"array of shape {value.shape}: {value}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _range_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi:g}"
    return "a real number"


def _in_range(x: np.ndarray, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> np.ndarray:
    ok = np.ones(x.shape, dtype=bool)
    if lo is not None:
        ok &= (x > lo) if lo_open else (x >= lo)
    if hi is not None:
        ok &= (x < hi) if hi_open else (x <= hi)
    return ok


def check_real(name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, hi_open: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a real number in the given range.

    Raises:
        ValueError: if ``value`` is not a real number, is NaN, is infinite (unless ``allow_inf``), or lies
            outside the range; the message names ``name``, the range and the value.
    """
    rng_text = _range_text(lo, hi, lo_open, hi_open)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number {rng_text}, got {_fmt(value)} "
                         f"of type {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:  # a Python int beyond the float range, e.g. 10**400
        x = math.inf if cast(int, value) > 0 else -math.inf
    if np.isnan(x):
        raise ValueError(f"{name} must be a number {rng_text}, got nan")
    if np.isinf(x) and isinstance(value, numbers.Integral) and not allow_inf:
        raise ValueError(f"{name} must be finite and {rng_text}, got an integer of "
                         f"{len(str(abs(int(value))))} digits (beyond the float range)")
    if np.isinf(x) and not allow_inf:
        raise ValueError(f"{name} must be finite and {rng_text}, got {x}")
    if not _in_range(np.asarray(x), lo, hi, lo_open, hi_open):
        raise ValueError(f"{name} must be {rng_text}, got {x:g}")
    return x


def check_real_array(name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
                     lo_open: bool = False, hi_open: bool = False, allow_inf: bool = False,
                     ndim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Return ``value`` as a float array after checking every entry is a real number in range.

    Scalars are accepted (0-d arrays) unless ``ndim`` says otherwise.
    """
    rng_text = _range_text(lo, hi, lo_open, hi_open)
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise ValueError(f"{name} must be an array of real numbers {rng_text}, got {_fmt(value)}") from exc
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must contain real numbers {rng_text}, got {_fmt(value)} "
                         f"(dtype {arr.dtype})")
    arr = arr.astype(float, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-dimensional array, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got an array of shape {arr.shape}")
    bad = np.isnan(arr)
    if not allow_inf:
        bad |= np.isinf(arr)
    bad |= ~_in_range(np.where(np.isnan(arr), 0.0 if lo is None else lo, arr), lo, hi, lo_open, hi_open) \
        & ~np.isnan(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f" at index {idx[0] if len(idx) == 1 else idx}" if arr.ndim else ""
        what = "finite and " if not allow_inf else ""
        raise ValueError(f"{name} must be {what}{rng_text}, got {float(arr[idx])!r}{where}")
    return arr


def check_int(name: str, value: Any, *, lo: int | None = 1, hi: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer in ``[lo, hi]``.

    Floats with an integral value (``3.0``) are accepted; ``2.5``, ``True`` and strings are not.
    """
    rng_text = _range_text(lo, hi, False, False)
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer {rng_text}, got {value!r}")
    if isinstance(value, numbers.Integral):
        k = int(value)
    elif isinstance(value, numbers.Real) and np.isfinite(float(value)) and float(value).is_integer():
        k = int(float(value))
    else:
        raise ValueError(f"{name} must be an integer {rng_text}, got {_fmt(value)}")
    if (lo is not None and k < lo) or (hi is not None and k > hi):
        raise ValueError(f"{name} must be an integer {rng_text}, got {k}")
    if abs(k) > MAX_INT:
        what = "" if lo is None and hi is None else f" {rng_text}"
        raise ValueError(f"{name} must be an integer{what} of magnitude at most 10**300 (within the float range), "
                         f"got an integer of {len(str(abs(k)))} digits")
    return k


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` as a ``bool`` after checking it is ``True`` or ``False`` (a Python or numpy bool).

    Nothing else is accepted: ``None``, ``0`` or ``"yes"`` would otherwise be read by truthiness, and a
    flag such as ``pessimistic=None`` would silently pick the other side of a bound.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {_fmt(value)} of type {type(value).__name__}")
    return bool(value)


def check_gaussian_mu(sigma: float, sensitivity: float, name: str = "sigma") -> float:
    r"""``mu = (sensitivity / sigma)^2 / 2`` of Gaussian noise, for already checked positive floats.

    Computed as a ratio first, so that ``sigma = 1e308`` gives 0 instead of overflowing ``sigma**2``; a ``mu``
    beyond the float range (``sigma = 1e-300``) is refused naming ``name`` (the noise scale as the caller
    calls it) and ``sensitivity``.
    """
    ratio = sensitivity / sigma
    mu = 0.5 * ratio * ratio
    if not math.isfinite(mu):
        raise ValueError(f"{name} must be large enough that (sensitivity / {name})^2 / 2 is a finite float "
                         f"(sensitivity / {name} below 1.8e154), got {name} = {sigma:g} with sensitivity = "
                         f"{sensitivity:g}")
    return mu


def check_epsilon(value: Any, name: str = "epsilon", *, allow_zero: bool = True,
                  allow_inf: bool = False) -> float:
    """An epsilon: a real number >= 0 (or > 0 when ``allow_zero`` is False)."""
    return check_real(name, value, lo=0.0, lo_open=not allow_zero, allow_inf=allow_inf)


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A delta: a probability in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    return check_real(name, value, lo=0.0, hi=1.0, lo_open=not allow_zero, hi_open=True)


def check_probability(name: str, value: Any, *, lo_open: bool = False, hi_open: bool = False) -> float:
    """A probability in [0, 1] (ends optionally open)."""
    return check_real(name, value, lo=0.0, hi=1.0, lo_open=lo_open, hi_open=hi_open)


def check_pmf(name: str, value: Any, *, atol: float = PMF_ATOL) -> np.ndarray:
    """Return a 1-D probability vector after checking entries are finite, >= 0 and sum to 1 within ``atol``."""
    p = check_real_array(name, value, lo=0.0, ndim=1)
    total = float(p.sum())
    if abs(total - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1 (within {atol:g}), got a sum of {total!r}; "
                         f"normalise it with {name} / {name}.sum() if that is what you meant")
    return p


def check_pmf_pair(name_p: str, p: Any, name_q: str, q: Any, *, atol: float = PMF_ATOL
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Two probability vectors over the same outcomes (same length)."""
    p = check_pmf(name_p, p, atol=atol)
    q = check_pmf(name_q, q, atol=atol)
    if p.shape != q.shape:
        raise ValueError(f"{name_p} and {name_q} must have the same length (one entry per outcome), "
                         f"got {p.size} and {q.size}")
    return p, q


def check_rng(value: Any, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator``; anything else gets a message that says how to make one."""
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator, e.g. numpy.random.default_rng(0), "
                         f"got {_fmt(value)} of type {type(value).__name__}")
    return value


DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)
"""The Rényi orders dp-accounting 0.6.0 uses by default (``DEFAULT_RDP_ORDERS`` in
``dp_accounting/rdp/rdp_privacy_accountant.py``): 1.1, 1.2, ..., 10.9, then 11, ..., 63, and 128, 256, 512,
1024 - 156 orders, 99 of them fractional."""


def check_orders(orders: Any, name: str = "orders") -> np.ndarray:
    """Rényi orders: a non-empty 1-D array of finite reals > 1 (a scalar becomes a one-element array).

    ``None`` stands for :data:`DEFAULT_ORDERS` (exported as :data:`dp_course.rdp_accounting.DEFAULT_ORDERS`).
    """
    if orders is None:
        return np.asarray(DEFAULT_ORDERS, dtype=float)
    if np.ndim(orders) == 0:
        orders = [orders]
    return check_real_array(name, orders, lo=1.0, lo_open=True, ndim=1)


def check_alpha(alpha: Any, name: str = "alpha") -> tuple[np.ndarray, bool]:
    """Rényi order(s) of a mechanism's RDP curve: reals >= 1 (1 is the KL limit), ``inf`` allowed.

    Unlike :func:`check_orders` (the orders an accountant tabulates, > 1 and finite), this accepts the two
    limits of the curve.  Returns the orders as a float array and whether ``alpha`` was a scalar (the caller
    then returns a float: scalar in, float out).
    """
    scalar = np.ndim(alpha) == 0
    if scalar:
        return np.asarray(check_real(name, alpha, lo=1.0, allow_inf=True)), True
    return check_real_array(name, alpha, lo=1.0, allow_inf=True), False
