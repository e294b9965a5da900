"""Plots the lectures call, in one consistent style.

Every function draws on a given matplotlib ``Axes`` (or a new one), labels its axes, uses log scales where the
quantity spans orders of magnitude, and returns the ``Axes`` so a notebook can add to it.

>>> import matplotlib; matplotlib.use("Agg")
>>> from dp_course.mechanisms import RandomizedResponse
>>> ax = plot_privacy_profile({"RR, eps=1": RandomizedResponse(1.0).privacy_loss_distribution()})
>>> ax.get_xlabel()
'$\\\\varepsilon$'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ._validation import check_real_array
from .pld import GaussianPLD, PrivacyLossDistribution, _AtomicPLD

__all__ = [
    "COLORS",
    "course_style",
    "plot_privacy_profile",
    "plot_pld",
    "plot_composition",
    "plot_composition_bounds",
    "plot_rdp_curves",
    "plot_pmf_pair",
]

# Colour-blind-safe palette (Okabe & Ito 2008), in the order curves are drawn.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

_STYLE = {
    "axes.prop_cycle": mpl.cycler(color=COLORS),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "legend.frameon": False,
    "font.size": 11,
}


@contextmanager
def course_style():
    """Context manager applying the course's matplotlib style (``with course_style(): ...``)."""
    with mpl.rc_context(_STYLE):
        yield


def _axes(ax):
    if ax is None:
        with course_style():
            _, ax = plt.subplots()
    ax.grid(True, alpha=0.3)
    return ax


def _check_mapping(name: str, curves: Any) -> Mapping:
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(f"{name} must be a non-empty mapping from a label to a curve, got {type(curves).__name__}")
    return curves


def plot_privacy_profile(curves: Mapping[str, Any], epsilons: Sequence[float] | None = None, ax=None,
                         log_delta: bool = True):
    r"""Plot :math:`\delta(\epsilon)` for each curve.

    Args:
        curves: label -> a :class:`~dp_course.pld.PrivacyLossDistribution`, a function ``eps -> delta``
            (vectorised), or an array of deltas matching ``epsilons``.
        epsilons: the epsilon grid (default: 0 to 5 in 200 steps).
        log_delta: logarithmic delta axis (the interesting deltas are small).
    """
    curves = _check_mapping("curves", curves)
    eps = np.linspace(0.0, 5.0, 200) if epsilons is None else check_real_array("epsilons", epsilons, lo=0.0,
                                                                                 ndim=1)
    ax = _axes(ax)
    for label, curve in curves.items():
        if isinstance(curve, PrivacyLossDistribution):
            delta = curve.delta_for_epsilon(eps)
        elif callable(curve):
            delta = np.asarray(curve(eps), dtype=float)
        else:
            delta = check_real_array(f"curves[{label!r}]", curve, lo=0.0, hi=1.0, ndim=1)
            if delta.shape != eps.shape:
                raise ValueError(f"curves[{label!r}] must have one value per epsilon ({eps.size}), got {delta.size}")
        if log_delta:
            delta = np.where(delta > 0, delta, np.nan)  # log axis: leave gaps where delta is exactly 0
        ax.plot(eps, delta, label=str(label))
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\delta(\varepsilon)$")
    if log_delta:
        ax.set_yscale("log")
    ax.set_title("Privacy profile")
    ax.legend()
    return ax


def plot_pld(pld: PrivacyLossDistribution, ax=None, bins: int = 200, label: str | None = None,
             show_mean: bool = True):
    """Plot a privacy loss distribution: atoms as stems, continuous/fine-grid laws as a density.

    An atom at ``+inf`` (e.g. name-and-shame) is drawn as an orange dotted stem to the right of the finite
    losses, marked "+∞" and labelled with its mass.
    """
    if not isinstance(pld, PrivacyLossDistribution):
        raise ValueError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    ax = _axes(ax)
    label = label or type(pld).__name__
    if isinstance(pld, GaussianPLD):
        sd = max(pld.std, 1e-12)
        x = np.linspace(pld.mu - 5 * sd, pld.mu + 5 * sd, 400)
        ax.plot(x, pld.pdf(x), label=label)
        ax.set_ylabel("density")
        hi = x[-1]
    elif isinstance(pld, _AtomicPLD):
        losses, probs = np.asarray(pld.losses), pld.probs
        if losses.size <= 60:
            markers, stems, _ = ax.stem(losses, probs, label=label, basefmt=" ")
            ax.set_ylabel("probability")
        else:
            # many atoms (a grid or a long composition): show mass per unit of loss on `bins` bins
            edges = np.linspace(losses.min(), losses.max() + 1e-12, bins + 1)
            mass, _ = np.histogram(losses, bins=edges, weights=probs)
            ax.stairs(mass / np.diff(edges), edges, label=label, fill=True, alpha=0.6)
            ax.set_ylabel("probability density")
        hi = losses.max() if losses.size else 1.0
    else:  # pragma: no cover - every PLD class is one of the above
        raise ValueError(f"cannot plot a {type(pld).__name__}")
    if pld.infinity_mass > 0:
        # +inf has no place on the axis: draw its atom as a dotted stem well right of the finite losses, inside
        # the axes, with the tick "+∞" under it, so that it is not read as a finite loss
        lo = float(np.min(pld.losses)) if isinstance(pld, _AtomicPLD) and np.size(pld.losses) else hi
        x_inf = hi + max(1.0, 0.25 * (hi - lo))
        ax.vlines(x_inf, 0.0, pld.infinity_mass, colors=COLORS[1], linestyles=":")
        ax.plot([x_inf], [pld.infinity_mass], marker="^", color=COLORS[1], linestyle="none",
                label=rf"$L=+\infty$ (mass {pld.infinity_mass:.3g})")
        left = ax.get_xlim()[0]
        ax.set_xlim(left, x_inf + 0.1 * (x_inf - left))
        finite = [t for t in ax.get_xticks() if left <= t <= hi + 0.5 * (x_inf - hi)]
        ax.set_xticks([*finite, x_inf], [f"{t:g}".replace("-", "\N{MINUS SIGN}") for t in finite] + ["+∞"])
    if show_mean and np.isfinite(pld.mean):
        ax.axvline(pld.mean, color="0.3", linestyle="--", linewidth=1, label=f"mean {pld.mean:.3g}")
    ax.set_xlabel("privacy loss $L$")
    ax.set_title("Privacy loss distribution")
    ax.legend()
    return ax


def plot_composition(ks: Sequence[float], curves: Mapping[str, Any], ax=None, logx: bool = True,
                     logy: bool = False, ylabel: str = r"total $\varepsilon$"):
    r"""Plot total privacy parameters against the number of compositions ``k``.

    Args:
        ks: the numbers of compositions.
        curves: label -> array of values (one per k) or a function ``k -> value`` (called per k).
    """
    ks = check_real_array("ks", ks, lo=1.0, ndim=1)
    curves = _check_mapping("curves", curves)
    ax = _axes(ax)
    for label, curve in curves.items():
        values = np.array([curve(int(k)) for k in ks], dtype=float) if callable(curve) else \
            check_real_array(f"curves[{label!r}]", curve, ndim=1, allow_inf=True)
        if values.shape != ks.shape:
            raise ValueError(f"curves[{label!r}] must have one value per k ({ks.size}), got {values.size}")
        ax.plot(ks, values, label=str(label))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("number of compositions $k$")
    ax.set_ylabel(ylabel)
    ax.set_title("Composition")
    ax.legend()
    return ax


def plot_composition_bounds(epsilon: float, ks: Sequence[int], delta_prime: float = 1e-6, delta: float = 0.0,
                            ax=None, logx: bool = True):
    r"""Basic, strong (Theorem 1.1) and optimal composition of ``k`` mechanisms that are each (eps, delta)-DP.

    The total epsilon at total delta ``k * delta + delta_prime`` (the optimal curve is the exact
    Kairouz-Oh-Viswanath value for the same total delta).  Reproduces Figure 1 of the advanced-composition
    lecture (there: eps = 0.01, delta' = 1e-6, delta = 0) with the optimal curve added.
    """
    from .composition import advanced_composition, basic_composition, optimal_composition_epsilon
    from ._validation import check_delta, check_epsilon

    epsilon = check_epsilon(epsilon, allow_zero=False)
    delta = check_delta(delta)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    ks_arr = check_real_array("ks", ks, lo=1.0, ndim=1)
    if not np.all(ks_arr == np.round(ks_arr)):
        raise ValueError(f"ks must contain whole numbers of compositions, got {ks_arr.tolist()}")
    ks_int = [int(k) for k in ks_arr]
    curves = {
        r"basic: $k\varepsilon$": [basic_composition([epsilon] * k, [delta] * k)[0] for k in ks_int],
        "strong (Theorem 1.1)": [advanced_composition(epsilon, delta, k, delta_prime)[0] for k in ks_int],
        "optimal (exact)": [optimal_composition_epsilon(epsilon, delta, k, min(k * delta + delta_prime, 0.999))
                            for k in ks_int],
    }
    ax = plot_composition(ks_arr, {label: np.asarray(v) for label, v in curves.items()}, ax=ax, logx=logx)
    ax.set_title(rf"$k$-fold composition of $({epsilon:g}, {delta:g})$-DP, $\delta' = {delta_prime:g}$")
    return ax


def plot_rdp_curves(orders: Sequence[float], curves: Mapping[str, Any], ax=None, logy: bool = True):
    r"""Plot Rényi-DP curves :math:`\varepsilon(\alpha)` against the order :math:`\alpha`.

    Args:
        orders: the Rényi orders (> 1).
        curves: label -> array of RDP values (one per order) or a function ``orders -> values``.
    """
    orders = check_real_array("orders", orders, lo=1.0, lo_open=True, ndim=1)
    curves = _check_mapping("curves", curves)
    ax = _axes(ax)
    for label, curve in curves.items():
        values = np.asarray(curve(orders), float) if callable(curve) else \
            check_real_array(f"curves[{label!r}]", curve, lo=0.0, ndim=1, allow_inf=True)
        if values.shape != orders.shape:
            raise ValueError(f"curves[{label!r}] must have one value per order ({orders.size}), got {values.size}")
        ax.plot(orders, values, label=str(label))
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(r"order $\alpha$")
    ax.set_ylabel(r"RDP $\varepsilon(\alpha)$")
    ax.set_title("Rényi differential privacy")
    ax.legend()
    return ax


def plot_pmf_pair(p: Any, q: Any, outcomes: Sequence[Any] | None = None, labels: tuple[str, str] = ("P", "Q"),
                  ax=None):
    """Side-by-side bars of two pmfs over the same outcomes (e.g. a mechanism on neighbouring inputs)."""
    from ._validation import check_pmf_pair

    p, q = check_pmf_pair("p", p, "q", q)
    outcomes = list(range(p.size)) if outcomes is None else list(outcomes)
    if len(outcomes) != p.size:
        raise ValueError(f"outcomes must name each of the {p.size} entries, got {len(outcomes)}")
    ax = _axes(ax)
    x = np.arange(p.size)
    ax.bar(x - 0.2, p, width=0.4, label=labels[0])
    ax.bar(x + 0.2, q, width=0.4, label=labels[1])
    ax.set_xticks(x, [str(o) for o in outcomes])
    ax.set_xlabel("outcome")
    ax.set_ylabel("probability")
    ax.legend()
    return ax

