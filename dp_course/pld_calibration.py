r"""Exact (PLD) calibration of DP-SGD with Poisson batches: dp-accounting where it is installed, a table elsewhere.

Lecture 06 compares its three DP-SGD scenarios at the same privacy levels, each calibrated *exactly*.  For
Scenario 3 (``steps`` Poisson-subsampled Gaussian steps) no closed form exists: the privacy loss distribution
(PLD) accountant of Google's dp-accounting computes :math:`\varepsilon(z)` for a noise multiplier :math:`z`, and a
root search finds the smallest :math:`z` that meets a target.

dp-accounting needs dm-tree and absl, which have no build for Pyodide, so it cannot be installed in the
JupyterLite version of the course.  This module therefore

* calls dp-accounting when it is importable (:data:`DP_ACCOUNTING_AVAILABLE`), exactly as the lecture did;
* otherwise answers from a table shipped with the library (``dp_course/data/pld_multipliers.json``), computed
  in advance by dp-accounting for the lecture's parameters (``tools/cache_pld_calibration.py`` writes it;
  ``tests/test_pld_calibration.py`` recomputes every entry and checks that the table matches), and says
  plainly when a request is not in the table.

The RDP multiplier that brackets the search (:func:`dp_course.dpsgd.dpsgd_sigma_for_epsilon`) is the kit's own
code and is always computed fresh.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize

from ._validation import check_delta, check_int, check_orders, check_probability, check_real
from .dpsgd import dpsgd_sigma_for_epsilon

try:  # not in Pyodide (JupyterLite): dm-tree and absl have no build there
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    DP_ACCOUNTING_AVAILABLE = True
except ImportError:
    DP_ACCOUNTING_AVAILABLE = False

__all__ = ["DP_ACCOUNTING_AVAILABLE", "CACHE_PATH", "SOURCES", "MAX_STEPS", "MAX_NOISE_MULTIPLIER",
           "MAX_GRID_POINTS",
           "poisson_gaussian_pld_epsilon", "poisson_gaussian_pld_multiplier"]

CACHE_PATH = Path(__file__).resolve().parent / "data" / "pld_multipliers.json"
"""The table of multipliers computed in advance by dp-accounting (package data of ``dp_course``)."""

SOURCES = ("auto", "compute", "cache")
"""Where :func:`poisson_gaussian_pld_multiplier` takes its answer: ``"auto"`` computes with dp-accounting when it
is installed and reads the table otherwise; ``"compute"`` always computes; ``"cache"`` always reads the table."""

SEARCH_XTOL = 1e-3
"""Absolute tolerance of the root search on :math:`\\ln z` (the answer is rounded up by this much: safe side)."""

MAX_STEPS = 10**5
"""Most steps :func:`poisson_gaussian_pld_epsilon` composes (the composed PLD's support grows with them)."""

MAX_NOISE_MULTIPLIER = 1e6
"""Largest noise multiplier :func:`poisson_gaussian_pld_epsilon` takes (dp-accounting overflows far above it;
epsilon is 0 to many digits long before)."""

MAX_GRID_POINTS = 10**5
"""Cost guard: at most this many grid points per step, estimated as ``1 / (noise_multiplier**2 * grid)`` (the
privacy loss of a step spreads over about ``1/noise_multiplier**2``; about 3 s at the limit)."""

NOT_INSTALLED = ("dp-accounting is not installed here (it cannot be installed in JupyterLite: dm-tree and absl "
                 "have no Pyodide build); install it with pip install 'dp-accounting>=0.6,<0.7'")


def _require_dp_accounting() -> None:
    if not DP_ACCOUNTING_AVAILABLE:
        raise ModuleNotFoundError(NOT_INSTALLED + " to compute exact PLD numbers")


def poisson_gaussian_pld_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                                 grid: float = 1e-3) -> float:
    r"""Exact (PLD) :math:`\varepsilon` at ``delta`` of ``steps`` Poisson-subsampled Gaussian steps (dp-accounting).

    dp-accounting's ``PLDAccountant`` (pessimistic discretisation on a grid of ``grid`` in the privacy loss),
    composing ``SelfComposedDpEvent(PoissonSampledDpEvent(sample_rate, GaussianDpEvent(noise_multiplier)),
    steps)``; add/remove neighbours.

    Args:
        noise_multiplier: noise standard deviation / clipping norm, in (0, :data:`MAX_NOISE_MULTIPLIER`].
        sample_rate: probability q that a record enters a batch, in (0, 1].
        steps: number of steps T, an integer in [1, :data:`MAX_STEPS`].
        delta: target delta in (0, 1).
        grid: the accountant's ``value_discretization_interval``, in (0, 1].

    Returns:
        float: epsilon (an upper bound, tight up to the grid).

    Raises:
        ValueError: if an argument is out of range, or the grid would be too large (:data:`MAX_GRID_POINTS`).
        ModuleNotFoundError: if dp-accounting is not installed (e.g. in JupyterLite).
    """
    noise_multiplier = check_real("noise_multiplier", noise_multiplier, lo=0.0, hi=MAX_NOISE_MULTIPLIER, lo_open=True)
    sample_rate = check_probability("sample_rate", sample_rate, lo_open=True)
    steps = check_int("steps", steps, lo=1, hi=MAX_STEPS)
    delta = check_delta(delta, allow_zero=False)
    grid = check_real("grid", grid, lo=0.0, hi=1.0, lo_open=True)
    points = math.exp(min(-2.0 * math.log(noise_multiplier) - math.log(grid), 700.0))  # 1 / (z^2 grid), no overflow
    if not points <= MAX_GRID_POINTS:
        raise ValueError(f"noise_multiplier={noise_multiplier:g} with grid={grid:g} needs about {points:.3g} grid "
                         f"points per step (at most {MAX_GRID_POINTS:g}): raise noise_multiplier or grid")
    _require_dp_accounting()
    accountant = PLDAccountant(value_discretization_interval=grid)
    step = PoissonSampledDpEvent(sample_rate, GaussianDpEvent(noise_multiplier))
    accountant.compose(SelfComposedDpEvent(step, steps))
    return float(accountant.get_epsilon(delta))


def _entry_matches(entry: dict[str, Any], request: dict[str, Any]) -> bool:
    return all(entry[k] == v for k, v in request.items())


def _read_cache() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(CACHE_PATH.read_text(encoding="utf-8"))["entries"]
    return entries


def poisson_gaussian_pld_multiplier(epsilon: float, sample_rate: float, steps: int, delta: float,
                                    orders: npt.ArrayLike | None = None, grid: float = 1e-3,
                                    source: str = "auto") -> tuple[float, float]:
    r"""Smallest noise multiplier whose exact (PLD) :math:`\varepsilon` is at most ``epsilon``, and the RDP one.

    The RDP accountant's multiplier :math:`z_\mathrm{RDP}` (:func:`dp_course.dpsgd.dpsgd_sigma_for_epsilon` with
    ``orders``) meets the target and is an upper end; Brent's method on :math:`\ln z` in
    :math:`[\ln 0.7 z_\mathrm{RDP}, \ln z_\mathrm{RDP}]` finds where :func:`poisson_gaussian_pld_epsilon` crosses
    ``epsilon``, to :data:`SEARCH_XTOL`, and the answer is rounded up by that tolerance (safe side).  This is the
    calibration of lecture 06's Scenario 3.

    Args:
        epsilon: target epsilon > 0.
        sample_rate: probability q that a record enters a batch, in (0, 1].
        steps: number of steps T, an integer in [1, :data:`MAX_STEPS`].
        delta: target delta in (0, 1).
        orders: Rényi orders > 1 of the RDP bracket (``None``: :data:`dp_course.rdp_accounting.DEFAULT_ORDERS`).
        grid: the PLD accountant's discretisation interval, in (0, 1].
        source: one of :data:`SOURCES` - ``"auto"`` (dp-accounting if installed, else the table),
            ``"compute"`` or ``"cache"``.

    Returns:
        ``(z_pld, z_rdp)``: the exact multiplier and the RDP accountant's.

    Raises:
        ValueError: if an argument is out of range, or the PLD root is not inside the bracket.
        ModuleNotFoundError: if dp-accounting is needed (``"compute"``, or ``"auto"`` without it) but not
            installed; with ``"auto"`` this happens only for parameters the table does not hold.
        LookupError: with ``"cache"``, if the table has no entry for these parameters.
    """
    epsilon = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
    sample_rate = check_probability("sample_rate", sample_rate, lo_open=True)
    steps = check_int("steps", steps, lo=1, hi=MAX_STEPS)
    delta = check_delta(delta, allow_zero=False)
    orders = check_orders(orders)
    grid = check_real("grid", grid, lo=0.0, hi=1.0, lo_open=True)
    if not isinstance(source, str) or source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(repr(s) for s in SOURCES)}, got {source!r}")
    where = f"epsilon={epsilon:g}, sample_rate={sample_rate:g}, steps={steps}, delta={delta:g}, grid={grid:g}"
    try:
        upper = dpsgd_sigma_for_epsilon(sample_rate, steps, epsilon, delta, orders=orders)
    except ValueError as err:
        raise ValueError(f"no RDP noise multiplier to start the search from for {where}: {err}") from err
    if source == "cache" or (source == "auto" and not DP_ACCOUNTING_AVAILABLE):
        request = dict(epsilon=epsilon, sample_rate=sample_rate, steps=steps, delta=delta, grid=grid,
                       orders=[float(o) for o in orders])
        found = [e["multiplier"] for e in _read_cache() if _entry_matches(e, request)]
        if found:
            return float(found[0]), upper
        if source == "cache":
            raise LookupError(f"the table {CACHE_PATH.name} has no exact multiplier for {where} "
                              f"(it holds lecture 06's parameters)")
        raise ModuleNotFoundError(f"{NOT_INSTALLED}; the kit's table of exact multipliers, computed with it in "
                                  f"advance, holds lecture 06's parameters only, not {where}")
    _require_dp_accounting()

    def excess(log_multiplier: float) -> float:
        return poisson_gaussian_pld_epsilon(float(np.exp(log_multiplier)), sample_rate, steps, delta, grid) - epsilon

    try:
        log_z = optimize.brentq(excess, float(np.log(0.7 * upper)), float(np.log(upper)), xtol=SEARCH_XTOL)
    except ValueError as err:  # the same sign at both ends of the bracket, or a step too costly to compute
        raise ValueError(f"no exact multiplier between 0.7 and 1 times the RDP multiplier {upper:.6g} for {where}: "
                         f"{err}") from err
    return float(np.exp(log_z + SEARCH_XTOL)), upper
