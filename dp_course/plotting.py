r"""Plots the lectures call, in one consistent style.

Every function draws on a given matplotlib ``Axes`` (or a new one), labels its axes, uses log scales where the
quantity spans orders of magnitude, keeps its legend outside the data area (right of a single panel, below a
panel that has neighbours), and returns the ``Axes`` so a notebook can add to it.  :func:`new_figure` makes a
figure in the course style that is independent of pyplot (the explorers draw on these).  The style itself
(colours, layout, text sizes) is :mod:`dp_course.style`; ``COLORS`` and ``course_style`` are re-exported here.

>>> from dp_course.mechanisms import RandomizedResponse
>>> ax = plot_privacy_profile({"RR, eps=1": RandomizedResponse(1.0).privacy_loss_distribution()})
>>> ax.get_xlabel()
'$\\varepsilon$'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator
from numpy.typing import ArrayLike

from ._validation import check_bool, check_delta, check_epsilon, check_int, check_pmf_pair, check_real, check_real_array
from .composition import advanced_composition, basic_composition, optimal_composition_epsilon
from .pld import DiscretePLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from .style import COLORS, course_style

__all__ = [
    "COLORS",
    "course_style",
    "new_figure",
    "tex_number",
    "plot_privacy_profile",
    "plot_pld",
    "plot_composition",
    "plot_composition_bounds",
    "plot_rdp_curves",
    "plot_pmf_pair",
    "plot_simulation_map",
    "plot_simulation_check",
]

INFINITY_COLOR = COLORS[1]
MAX_BINS = 10**6
"""Most bins :func:`plot_pld` draws (a cost guard)."""
"""Colour of the atom at :math:`L = +\\infty` in :func:`plot_pld` (vermillion)."""


def new_figure(ncols: int = 1, figsize: tuple[float, float] | None = None) -> tuple[Figure, list[Axes]]:
    """A figure in the course style with ``ncols`` panels in a row, drawn by Agg and unknown to pyplot.

    Unknown to pyplot: nothing accumulates while a slider moves, and a notebook shows it only when asked.

    Returns:
        ``(figure, axes)`` with ``axes`` a list of ``ncols`` Axes.

    Raises:
        ValueError: if ``ncols`` is not an integer in [1, 20] or ``figsize`` is not ``None`` or a pair of
            sizes in (0, 100] inches.
    """
    ncols = check_int("ncols", ncols, lo=1, hi=20)
    if figsize is not None:
        if not isinstance(figsize, (tuple, list)) or len(figsize) != 2:
            raise ValueError(f"figsize must be None or a pair (width, height) in inches, got {figsize!r}")
        figsize = (check_real("figsize[0]", figsize[0], lo=0.0, hi=100.0, lo_open=True),
                   check_real("figsize[1]", figsize[1], lo=0.0, hi=100.0, lo_open=True))
    with course_style():
        fig = Figure(figsize=figsize or (7.5 if ncols == 1 else 4.0 * ncols, 4.0))
        FigureCanvasAgg(fig)
        axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def tex_number(x: float) -> str:
    r"""A number written for mathtext: ``{x:g}`` between 1e-3 and 1e4, else :math:`m 	imes 10^{e}`.

    ``f"{1e-6:g}"`` reads "1e-06", which mathtext sets as a subtraction; this gives ``10^{-6}`` instead
    (and ``2.5 \times 10^{-7}`` for 2.5e-7).

    >>> tex_number(1e-6), tex_number(2.5e-7), tex_number(0.05)
    ('10^{-6}', '2.5 \\times 10^{-7}', '0.05')
    """
    x = check_real("x", x, allow_inf=True)
    if x == 0 or not np.isfinite(x) or 1e-3 <= abs(x) < 1e4:
        return f"{x:g}"
    mantissa, exponent = f"{x:.3g}".split("e")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else rf"{mantissa} \times {power}"


def _names(name: str, values: Any) -> list[Any]:
    """Tick labels: a list, tuple or 1-D array (each entry is shown with ``str``)."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.tolist()
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"{name} must be a list or tuple of names, got {values!r}")
    return list(values)


def _axes(ax: Axes | None) -> Axes:
    if ax is not None and not isinstance(ax, Axes):
        raise ValueError(f"ax must be None or a matplotlib Axes (e.g. from new_figure()), got {type(ax).__name__}")
    if ax is None:
        with course_style():
            _, ax = plt.subplots()
    ax.grid(True, alpha=0.3)
    return ax


def _legend(ax: Axes, **kwargs: Any) -> None:
    """A legend outside the data area: to the right of a lone panel, below a panel with neighbours in its row."""
    spec = ax.get_subplotspec()
    beside = spec is not None and spec.get_gridspec().ncols > 1
    if beside:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, **kwargs)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def _check_mapping(name: str, curves: Any) -> Mapping:
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(f"{name} must be a non-empty mapping from a label to a curve, got {type(curves).__name__}")
    return curves


def plot_privacy_profile(curves: Mapping[str, Any], epsilons: ArrayLike | None = None, ax: Axes | None = None,
                         log_delta: bool = True) -> Axes:
    r"""Plot the privacy profile :math:`\varepsilon \mapsto \delta(\varepsilon)` of each curve.

    Args:
        curves: label -> a :class:`~dp_course.pld.PrivacyLossDistribution`, a function ``eps -> delta``
            (vectorised), or an array of deltas matching ``epsilons``.
        epsilons: the epsilon grid (default: 0 to 5 in 200 steps).
        ax: the Axes to draw on (default: a new figure).
        log_delta: logarithmic delta axis (the interesting deltas are small); exact zeros are left as gaps.

    Returns:
        The Axes.

    Raises:
        ValueError: for an empty mapping, a negative epsilon, or an array of the wrong length.
    """
    curves = _check_mapping("curves", curves)
    log_delta = check_bool("log_delta", log_delta)
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
    _legend(ax)
    return ax


def _draw_infinity_atom(ax: Axes, lo: float, hi: float, mass: float) -> float:
    """Draw the atom at :math:`+\\infty` as a dotted stem well right of the finite losses (``lo``..``hi``),
    beyond a dotted break and clear of the axis edge, above a tick labelled "+∞"; returns its position."""
    span = max(hi - lo, 1.0)
    pad = 0.5 * (span - (hi - lo))          # a narrow finite part (one atom) sits in a unit-wide window
    x_inf = hi + max(1.0, 0.3 * span)
    ax.vlines([x_inf], 0.0, [mass], colors=INFINITY_COLOR, linestyles=":", linewidth=1.5)
    ax.plot([x_inf], [mass], marker="^", color=INFINITY_COLOR, linestyle="none",
            label=rf"$L = +\infty$ (mass {mass:.3g})")
    right = hi + min(pad, 0.4 * (x_inf - hi))
    ax.axvline(0.5 * (right + x_inf), color="0.6", linestyle=":", linewidth=1)
    left = lo - max(pad, 0.1 * span)
    ax.set_xlim(left, x_inf + 0.15 * (x_inf - left))
    finite_ticks = [t for t in MaxNLocator(nbins=3).tick_values(left, right) if left <= t <= right + 1e-12]
    ax.xaxis.set_major_locator(FixedLocator([*finite_ticks, x_inf]))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: "+∞" if np.isclose(v, x_inf) else f"{v:g}".replace("-", "\N{MINUS SIGN}")))
    return x_inf


def plot_pld(pld: PrivacyLossDistribution, ax: Axes | None = None, bins: int = 200, label: str | None = None,
             show_mean: bool = True) -> Axes:
    r"""Plot a privacy loss distribution: atoms as stems, continuous or fine-grid laws as a density.

    An atom at :math:`L = +\infty` (e.g. name-and-shame) is drawn as a vermillion dotted stem with a triangle,
    beyond a dotted break at least one unit right of the finite losses and clear of the axis edge, above a
    tick labelled "+∞"; its mass is in the legend.

    Args:
        pld: the privacy loss distribution.
        ax: the Axes to draw on (default: a new figure).
        bins: bins of the density view of a law with more than 60 atoms, an integer in [1, 10^6].
        label: legend label (default: the class name).
        show_mean: draw the mean as a dashed line (when finite).

    Returns:
        The Axes.

    Raises:
        ValueError: if ``pld`` is not a privacy loss distribution, or for another argument out of range.
    """
    if not isinstance(pld, PrivacyLossDistribution):
        raise ValueError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    show_mean = check_bool("show_mean", show_mean)
    bins = check_int("bins", bins, lo=1, hi=MAX_BINS)
    if label is not None and not isinstance(label, str):
        raise ValueError(f"label must be None or a string, got {label!r}")
    ax = _axes(ax)
    label = label or type(pld).__name__
    if isinstance(pld, GaussianPLD):
        sd = max(pld.std, 1e-12)
        x = np.linspace(pld.mu - 5 * sd, pld.mu + 5 * sd, 400)
        ax.plot(x, pld.pdf(x), label=label)
        ax.set_ylabel("density")
        lo, hi = x[0], x[-1]
    elif isinstance(pld, (DiscretePLD, GridPLD)):
        losses, probs = np.asarray(pld.losses), pld.probs
        if losses.size <= 60:
            ax.stem(losses, probs, label=label, basefmt=" ")
            ax.set_ylabel("probability")
        else:
            # many atoms (a grid or a long composition): show mass per unit of loss on `bins` bins
            edges = np.linspace(losses.min(), losses.max() + 1e-12, bins + 1)
            mass, _ = np.histogram(losses, bins=edges, weights=probs)
            ax.stairs(mass / np.diff(edges), edges, label=label, fill=True, alpha=0.6)
            ax.set_ylabel("probability density")
        lo, hi = (losses.min(), losses.max()) if losses.size else (0.0, 0.0)
    else:  # pragma: no cover - every PLD class is one of the above
        raise ValueError(f"cannot plot a {type(pld).__name__}")
    if pld.infinity_mass > 0:
        _draw_infinity_atom(ax, float(lo), float(hi), pld.infinity_mass)
    if show_mean and np.isfinite(pld.mean):
        ax.axvline(pld.mean, color="0.3", linestyle="--", linewidth=1, label=f"mean {pld.mean:.3g}")
    ax.set_xlabel("privacy loss $L$")
    ax.set_title("Privacy loss distribution")
    _legend(ax)
    return ax


def plot_composition(ks: ArrayLike, curves: Mapping[str, Any], ax: Axes | None = None, logx: bool = True,
                     logy: bool = False, ylabel: str = r"total $\varepsilon$") -> Axes:
    r"""Plot total privacy parameters against the number of compositions ``k``.

    Args:
        ks: the numbers of compositions (>= 1).
        curves: label -> array of values (one per k) or a function ``k -> value`` (called per k).
        ax: the Axes to draw on (default: a new figure).
        logx, logy: logarithmic axes.
        ylabel: the y-axis label.

    Returns:
        The Axes.

    Raises:
        ValueError: for ``k < 1``, an empty mapping or an array of the wrong length.
    """
    ks = check_real_array("ks", ks, lo=1.0, ndim=1)
    curves = _check_mapping("curves", curves)
    logx, logy = check_bool("logx", logx), check_bool("logy", logy)
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
    _legend(ax)
    return ax


def plot_composition_bounds(epsilon: float, ks: ArrayLike, delta_prime: float = 1e-6, delta: float = 0.0,
                            ax: Axes | None = None, logx: bool = True) -> Axes:
    r"""Basic, strong (Theorem 1.1) and optimal composition of ``k`` mechanisms that are each (ε, δ)-DP.

    The total :math:`\varepsilon` at total :math:`\delta_{tot} = k\delta + \delta'`: basic
    :math:`k\varepsilon`; strong :math:`\varepsilon\sqrt{2k\ln(1/\delta')} + k\varepsilon(e^\varepsilon-1)`;
    optimal the exact Kairouz–Oh–Viswanath value for the same total delta.  Reproduces Figure 1 of the
    advanced-composition lecture (there: ε = 0.01, δ' = 1e-6, δ = 0) with the optimal curve added.

    Args:
        epsilon: per-mechanism epsilon > 0.
        ks: whole numbers of compositions.
        delta_prime: the extra delta of strong composition, in (0, 1).
        delta: per-mechanism delta in [0, 1).
        ax: the Axes to draw on (default: a new figure).
        logx: logarithmic k axis.

    Returns:
        The Axes.

    Raises:
        ValueError: for parameters out of range or ``ks`` that are not whole numbers.

    Source: Dwork, Rothblum & Vadhan 2010 (strong composition); Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776).
    """
    epsilon = check_epsilon(epsilon, allow_zero=False)
    delta = check_delta(delta)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    logx = check_bool("logx", logx)
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
    ax.set_title(rf"$k$-fold composition of $({tex_number(epsilon)}, {tex_number(delta)})$-DP, "
                 rf"$\delta' = {tex_number(delta_prime)}$")
    return ax


def plot_rdp_curves(orders: ArrayLike, curves: Mapping[str, Any], ax: Axes | None = None,
                    logy: bool = True) -> Axes:
    r"""Plot Rényi-DP curves :math:`\varepsilon(\alpha)` against the order :math:`\alpha`.

    Args:
        orders: the Rényi orders (> 1).
        curves: label -> array of RDP values (one per order) or a function ``orders -> values``.
        ax: the Axes to draw on (default: a new figure).
        logy: logarithmic RDP axis.

    Returns:
        The Axes.

    Raises:
        ValueError: for orders <= 1, an empty mapping or an array of the wrong length.
    """
    orders = check_real_array("orders", orders, lo=1.0, lo_open=True, ndim=1)
    curves = _check_mapping("curves", curves)
    logy = check_bool("logy", logy)
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
    _legend(ax)
    return ax


def plot_pmf_pair(p: ArrayLike, q: ArrayLike, outcomes: Sequence[Any] | None = None,
                  labels: tuple[str, str] = ("P", "Q"), ax: Axes | None = None) -> Axes:
    """Side-by-side bars of two pmfs over the same outcomes (e.g. a mechanism on neighbouring inputs).

    Args:
        p, q: pmfs of the same length.
        outcomes: names of the outcomes (default 0, 1, ...).
        labels: legend labels of ``p`` and ``q``.
        ax: the Axes to draw on (default: a new figure).

    Returns:
        The Axes.

    Raises:
        ValueError: for invalid pmfs or a wrong number of outcome names.
    """
    p, q = check_pmf_pair("p", p, "q", q)
    outcomes = list(range(p.size)) if outcomes is None else _names("outcomes", outcomes)
    if not isinstance(labels, (tuple, list)) or len(labels) != 2 or not all(isinstance(s, str) for s in labels):
        raise ValueError(f"labels must be a pair of strings (legend labels of p and q), got {labels!r}")
    if len(outcomes) != p.size:
        raise ValueError(f"outcomes must name each of the {p.size} entries, got {len(outcomes)}")
    ax = _axes(ax)
    x = np.arange(p.size)
    ax.bar(x - 0.2, p, width=0.4, label=labels[0])
    ax.bar(x + 0.2, q, width=0.4, label=labels[1])
    ax.set_xticks(x, [str(o) for o in outcomes])
    ax.set_xlabel("outcome")
    ax.set_ylabel("probability")
    _legend(ax)
    return ax


def plot_simulation_map(F: ArrayLike, row_labels: Sequence[str], ax: Axes | None = None) -> Axes:
    """A simulation map as a heat map: row ``r`` is the law of F's output given leaky outcome ``r``.

    Args:
        F: a row-stochastic matrix (4 x n for leaky randomized response).
        row_labels: one name per row (e.g. :data:`dp_course.leaky.LEAKY_OUTCOMES`).
        ax: the Axes to draw on (default: a new figure).

    Returns:
        The Axes.

    Raises:
        ValueError: for entries outside [0, 1] or a wrong number of row labels.
    """
    f = check_real_array("F", F, lo=-1e-9, hi=1 + 1e-9, ndim=2)
    row_labels = _names("row_labels", row_labels)
    if len(row_labels) != f.shape[0]:
        raise ValueError(f"row_labels must name each of the {f.shape[0]} rows of F, got {len(row_labels)}")
    ax = _axes(ax)
    ax.grid(False)
    ax.imshow(f, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for (r, c), v in np.ndenumerate(f):
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", color="white" if v > 0.6 else "black", fontsize="small")
    ax.set_xticks(range(f.shape[1]), [str(j) for j in range(f.shape[1])])
    ax.set_yticks(range(f.shape[0]), [str(r) for r in row_labels])
    ax.set_xlabel("output of F")
    ax.set_ylabel("leaky RR outcome")
    ax.set_title("simulation map F (rows sum to 1)")
    return ax


def plot_simulation_check(pushed_p: ArrayLike, pushed_q: ArrayLike, p: ArrayLike, q: ArrayLike,
                          ax: Axes | None = None) -> Axes:
    r"""The simulation lemma's check: bars of the targets P and Q, dots of :math:`P_U F` and :math:`P_V F`.

    Args:
        pushed_p, pushed_q: the laws of F(U) and F(V).
        p, q: the target pmfs.
        ax: the Axes to draw on (default: a new figure).

    Returns:
        The Axes (its title gives the largest difference).

    Raises:
        ValueError: for arrays of different lengths.
    """
    pushed_p = check_real_array("pushed_p", pushed_p, ndim=1)
    pushed_q = check_real_array("pushed_q", pushed_q, ndim=1)
    ax = plot_pmf_pair(p, q, labels=("target P", "target Q"), ax=ax)
    if pushed_p.shape != pushed_q.shape or pushed_p.size != len(ax.get_xticks()):
        raise ValueError(f"pushed_p and pushed_q need one entry per outcome ({len(ax.get_xticks())}), got "
                         f"{pushed_p.size} and {pushed_q.size}")
    x = np.arange(pushed_p.size)
    ax.plot(x - 0.2, pushed_p, "o", color="black", label=r"$P_U F$ (law of $F(U)$)")
    ax.plot(x + 0.2, pushed_q, "s", color="0.45", label=r"$P_V F$ (law of $F(V)$)")
    err = max(np.max(np.abs(pushed_p - np.asarray(p, float))), np.max(np.abs(pushed_q - np.asarray(q, float))))
    ax.set_title(f"F(U) ~ P, F(V) ~ Q (max error {err:.0e})")
    _legend(ax)
    return ax
