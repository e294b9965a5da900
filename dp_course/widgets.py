r"""Interactive explorers for the lectures (ipywidgets + matplotlib).

Each explorer returns an ``ipywidgets`` box: sliders (and text fields) above an image of the figure, redrawn
when a control changes.  Where widgets are not available (no ``ipywidgets``, or ``DP_COURSE_STATIC_PLOTS=1`` as in
the read-only HTML build) it returns a :class:`StaticExplorer` instead, which Jupyter shows as the figure of
the default setting.  Either way the drawing function is exposed as ``.draw(**values)``: it returns a
matplotlib ``Figure`` (drawn by Agg, unknown to pyplot), so tests and curious students can call it directly.

Explorers:

* :func:`pld_explorer` - the privacy loss distribution of a k-fold composition;
* :func:`composition_explorer` - the privacy profile of k and 2k runs: doubling k moves the curve far less
  than twice as far;
* :func:`simulation_explorer` - two small pmfs, the simulation map F from leaky randomized response, and
  the check that F(U) ~ P and F(V) ~ Q;
* :func:`dpsgd_explorer` - DP-SGD's epsilon as the noise multiplier, the sampling rate and the number of
  steps change;
* :func:`rr_accuracy_explorer` - how accurate a randomized-response survey is, as ε and the number of
  respondents change.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ._validation import check_delta, check_int, check_pmf_pair, check_probability, check_real
from .divergences import privacy_profile
from .dpsgd import dpsgd_rdp
from .leaky import LEAKY_OUTCOMES, leaky_randomized_response
from .mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse
from .pld import PrivacyLossDistribution
from .plotting import (COLORS, new_figure, plot_composition, plot_pld, plot_pmf_pair, plot_privacy_profile,
                       plot_simulation_check, plot_simulation_map, tex_number)
from .rdp_accounting import rdp_to_dp_epsilon_and_order
from .simulation import simulation_map


try:
    import ipywidgets  # type: ignore[import-untyped]
except ImportError:  # the explorers then return a StaticExplorer
    ipywidgets = None

__all__ = ["STATIC_ENV", "widgets_available", "StaticExplorer", "pld_explorer", "composition_explorer",
           "simulation_explorer", "dpsgd_explorer", "rr_accuracy_explorer"]

STATIC_ENV = "DP_COURSE_STATIC_PLOTS"
"""Set this environment variable to ``1`` to get static figures instead of widgets (the HTML build does)."""

COMPOSITION_DELTA = 1e-6
"""The delta at which :func:`composition_explorer` reads off epsilon for k and 2k runs."""


def widgets_available() -> bool:
    """Whether the explorers build widgets: ``ipywidgets`` is importable and ``DP_COURSE_STATIC_PLOTS`` is not 1."""
    return ipywidgets is not None and os.environ.get(STATIC_ENV, "") != "1"


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@dataclass
class StaticExplorer:
    """An explorer without widgets: the figure of its default setting (Jupyter shows it as a PNG)."""

    figure: Figure
    draw: Callable[..., Figure]

    def _repr_png_(self) -> bytes:
        return _png(self.figure)


def _explorer(draw: Callable[..., Figure], defaults: dict[str, Any],
              controls: Callable[[], dict[str, Any]]) -> Any:
    """Controls from ``controls()`` (one per argument of ``draw``) above an image of the figure, redrawn when a
    control changes; or, where widgets are not available, a :class:`StaticExplorer` of ``defaults``."""
    if not widgets_available():
        return StaticExplorer(draw(**defaults), draw)
    widgets = controls()
    image = ipywidgets.Image(format="png")

    def update(change: Any = None) -> None:
        image.value = _png(draw(**{name: w.value for name, w in widgets.items()}))

    for w in widgets.values():
        w.style.description_width = "initial"
        w.observe(update, names="value")
    update()
    box = ipywidgets.VBox([ipywidgets.HBox(list(widgets.values())), image])
    box.draw = draw
    return box


# --------------------------------------------------------------------------------------------------------
# mechanisms with one parameter: PLD and composition explorers
# --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Family:
    symbol: str      # the slider's description and the plot's label
    tex: str
    lo: float
    hi: float
    step: float
    build: Callable[[float], PrivacyLossDistribution]


_MECHANISMS = {
    "randomized response": _Family("ε", r"\varepsilon", 0.02, 2.0, 0.02,
                                   lambda x: RandomizedResponse(x).privacy_loss_distribution()),
    "Gaussian": _Family("σ", r"\sigma", 0.5, 20.0, 0.1,
                        lambda x: GaussianMechanism(sigma=x).privacy_loss_distribution()),
    "Laplace": _Family("ε", r"\varepsilon", 0.02, 2.0, 0.02,
                       lambda x: LaplaceMechanism.from_epsilon(x).privacy_loss_distribution(value_step=x / 200)),
}
_DEFAULT_PARAM = {"randomized response": 0.5, "Gaussian": 2.0, "Laplace": 0.5}
_DEFAULT_COMPOSITION = {"randomized response": 0.1, "Gaussian": 10.0, "Laplace": 0.1}  # the sqrt(k) regime


def _family(mechanism: str) -> _Family:
    if not isinstance(mechanism, str) or mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {sorted(_MECHANISMS)}, got {mechanism!r}")
    return _MECHANISMS[mechanism]


def _param_slider(fam: _Family, value: float) -> Any:
    return ipywidgets.FloatSlider(value=value, min=fam.lo, max=fam.hi, step=fam.step, description=fam.symbol,
                                  continuous_update=False)


def pld_explorer(mechanism: str = "randomized response") -> Any:
    r"""Sliders for the mechanism's parameter (ε, or σ for the Gaussian) and k; plots the PLD of k runs.

    Args:
        mechanism: ``"randomized response"``, ``"Gaussian"`` (sensitivity 1) or ``"Laplace"``.

    Returns:
        An ``ipywidgets.VBox`` (``.draw(param, k)`` returns the figure), or a :class:`StaticExplorer`.

    Raises:
        ValueError: for an unknown mechanism.
    """
    fam = _family(mechanism)

    def draw(param: float, k: int) -> Figure:
        k = int(k)
        fig, (ax,) = new_figure()
        plot_pld(fam.build(param).self_compose(k), ax=ax, label=f"k = {k} run{'s' if k > 1 else ''}")
        ax.set_title(rf"{mechanism}, ${fam.tex} = {param:g}$: privacy loss of $k = {k}$ run{'s' if k > 1 else ''}")
        return fig

    return _explorer(draw, {"param": _DEFAULT_PARAM[mechanism], "k": 1}, lambda: {
        "param": _param_slider(fam, _DEFAULT_PARAM[mechanism]),
        "k": ipywidgets.IntSlider(value=1, min=1, max=200, description="k", continuous_update=False)})


def composition_explorer(mechanism: str = "randomized response") -> Any:
    r"""Sliders for the parameter and k; plots the exact privacy profiles of one run, k runs and 2k runs.

    The point: doubling the number of runs moves the profile far less than twice as far.  The epsilon at
    :data:`COMPOSITION_DELTA` is marked for k and 2k, and the title gives their ratio next to basic
    composition's factor 2: about 1.5 while the spread of the loss (:math:`\varepsilon\sqrt k`) dominates its
    drift (:math:`k\varepsilon^2/2`), as at the default ε = 0.1, k = 50; it tends to 2 only when the drift
    takes over (large k ε²) or when k is so small that kε is already the exact answer.

    Args:
        mechanism: ``"randomized response"``, ``"Gaussian"`` or ``"Laplace"``.

    Returns:
        An ``ipywidgets.VBox`` (``.draw(param, k)`` returns the figure), or a :class:`StaticExplorer`.

    Raises:
        ValueError: for an unknown mechanism.
    """
    fam = _family(mechanism)

    def draw(param: float, k: int) -> Figure:
        k = int(k)
        base = fam.build(param)
        runs = {"one run": base, f"k = {k} runs": base.self_compose(k), f"2k = {2 * k} runs": base.self_compose(2 * k)}
        eps_k, eps_2k = (float(runs[name].epsilon_for_delta(COMPOSITION_DELTA)) for name in list(runs)[1:])
        x_max = max(1.25 * eps_2k, 0.5)
        fig, (ax,) = new_figure()
        plot_privacy_profile(runs, np.linspace(0.0, x_max, 300), ax=ax)
        ax.axhline(COMPOSITION_DELTA, color="0.5", linestyle=":", linewidth=1)
        for eps, color in ((eps_k, ax.get_lines()[1].get_color()), (eps_2k, ax.get_lines()[2].get_color())):
            ax.plot([eps], [COMPOSITION_DELTA], "o", color=color)
            ax.annotate(f"{eps:.2f}", (eps, COMPOSITION_DELTA), xytext=(4, 6), textcoords="offset points",
                        color=color)
        ax.set_ylim(1e-9, 1.5)
        ax.set_xlim(0.0, x_max)
        ratio = eps_2k / eps_k if eps_k > 0 else float("nan")
        ax.set_title(rf"{mechanism}, ${fam.tex} = {param:g}$: doubling $k$ multiplies $\varepsilon$ at "
                     rf"$\delta = 10^{{-6}}$ by {ratio:.2f} (basic composition: 2)", fontsize=10)
        return fig

    start = _DEFAULT_COMPOSITION[mechanism]
    return _explorer(draw, {"param": start, "k": 50}, lambda: {
        "param": _param_slider(fam, start),
        "k": ipywidgets.IntSlider(value=50, min=1, max=250, description="k", continuous_update=False)})


# --------------------------------------------------------------------------------------------------------
# simulation lemma
# --------------------------------------------------------------------------------------------------------

def _parse_pmf(name: str, text: str) -> np.ndarray:
    """Comma- or space-separated non-negative weights, normalised to a pmf."""
    try:
        w = np.array([float(t) for t in text.replace(",", " ").split()], dtype=float)
    except ValueError:
        raise ValueError(f"{name} must be numbers separated by commas, got {text!r}") from None
    if w.size < 2 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"{name} needs at least two non-negative weights with a positive sum, got {text!r}")
    return w / w.sum()


def _message(ax: Axes, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)


def simulation_explorer(p: ArrayLike = (0.5, 0.3, 0.2), q: ArrayLike = (0.25, 0.35, 0.4), epsilon: float = 0.5,
                        delta: float | None = None) -> Any:
    r"""Edit two small pmfs P, Q and (ε, δ); see the simulation map F and the check F(U) ~ P, F(V) ~ Q.

    :math:`U, V` is leaky randomized response with parameters (ε, δ); the simulation lemma says a map
    :math:`F` with :math:`P_U F = P` and :math:`P_V F = Q` exists exactly when P and Q are
    (ε, δ)-indistinguishable, i.e. :math:`\delta \ge \max(H_{e^\varepsilon}(P\|Q), H_{e^\varepsilon}(Q\|P))`.
    The explorer builds :math:`F` with :func:`dp_course.simulation.simulation_map`; with δ below the pair's
    own profile it says which δ is needed instead.

    Args:
        p, q: the starting pmfs (same length, 2 to 6 outcomes); the text fields take comma-separated weights.
        epsilon: starting ε in [0, 3].
        delta: starting δ (default: the pair's own δ(ε), rounded up to the slider's step).

    Returns:
        An ``ipywidgets.VBox`` (``.draw(p, q, epsilon, delta)`` returns the figure; ``p``/``q`` are text),
        or a :class:`StaticExplorer`.

    Raises:
        ValueError: for invalid starting values.

    Source: Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776), Section 2; lecture notes, Lemma 3.1 (ERRATA 3-4).
    """
    p0, q0 = check_pmf_pair("p", p, "q", q)
    if not 2 <= p0.size <= 6:
        raise ValueError(f"p and q must have 2 to 6 outcomes (an explorer shows small pmfs), got {p0.size}")
    eps0 = check_real("epsilon", epsilon, lo=0.0, hi=3.0)
    need0 = float(privacy_profile(p0, q0, eps0))
    d0 = check_delta(delta) if delta is not None else min(np.ceil(need0 * 200 - 1e-9) / 200, 0.5)
    p_text, q_text = (", ".join(f"{v:g}" for v in x) for x in (p0, q0))

    def draw(p: str, q: str, epsilon: float, delta: float) -> Figure:
        fig, (ax_pq, ax_f, ax_chk) = new_figure(3, figsize=(13.0, 4.2))
        try:
            pp, qq = _parse_pmf("P", p), _parse_pmf("Q", q)
            if pp.size != qq.size:
                raise ValueError(f"P and Q need the same number of outcomes, got {pp.size} and {qq.size}")
        except ValueError as exc:
            for ax in (ax_pq, ax_f, ax_chk):
                _message(ax, "")
            _message(ax_f, str(exc))
            return fig
        plot_pmf_pair(pp, qq, ax=ax_pq)
        need = float(privacy_profile(pp, qq, epsilon))
        ax_pq.set_title(rf"needs $\delta \geq {need:.3f}$ at $\varepsilon = {epsilon:g}$")
        if delta + 1e-12 < need:
            _message(ax_f, f"No simulation map: P and Q are not ({epsilon:g}, {delta:g})-indistinguishable.\n"
                                f"Raise δ to at least {need:.3f} (or ε).")
            _message(ax_chk, "")
            return fig
        F = simulation_map(pp, qq, epsilon, delta)
        p_u, p_v = leaky_randomized_response(epsilon, delta)
        plot_simulation_map(F, [str(o) for o in LEAKY_OUTCOMES], ax=ax_f)
        plot_simulation_check(p_u @ F, p_v @ F, pp, qq, ax=ax_chk)
        return fig

    return _explorer(draw, {"p": p_text, "q": q_text, "epsilon": eps0, "delta": d0}, lambda: {
        "p": ipywidgets.Text(value=p_text, description="P", continuous_update=False),
        "q": ipywidgets.Text(value=q_text, description="Q", continuous_update=False),
        "epsilon": ipywidgets.FloatSlider(value=eps0, min=0.0, max=3.0, step=0.05, description="ε",
                                          continuous_update=False),
        "delta": ipywidgets.FloatSlider(value=d0, min=0.0, max=0.5, step=0.005, description="δ",
                                        readout_format=".3f", continuous_update=False)})


# --------------------------------------------------------------------------------------------------------
# DP-SGD accountant
# --------------------------------------------------------------------------------------------------------

def dpsgd_explorer(sigma: float = 1.1, q: float = 0.01, steps: int = 1000, delta: float = 1e-5) -> Any:
    r"""Sliders for the noise multiplier z, the sampling rate q and the number of steps T; plots ε against T.

    ε is the DP-SGD accountant's (:mod:`dp_course.dpsgd`: exact RDP of the Poisson-subsampled Gaussian,
    :math:`T\varepsilon_1(\alpha)`, the Canonne–Kamath–Steinke conversion, minimised over the orders) at the
    fixed ``delta``, on a grid of T up to 10^5; the chosen T is marked, with its ε and the best order.

    The noise multiplier (``sigma`` here, as in :func:`dp_course.dpsgd.dpsgd_epsilon`) is the noise standard
    deviation on the sum of clipped gradients over the clip norm; the slider is labelled z, as in lecture 06,
    where σ is the noise on the averaged gradient.

    Args:
        sigma: starting noise multiplier z in [0.3, 10].
        q: starting sampling rate in [1e-4, 1].
        steps: starting number of steps in [1, 10^5].
        delta: the target δ in (0, 1).

    Returns:
        An ``ipywidgets.VBox`` (``.draw(sigma, q, steps)`` returns the figure), or a :class:`StaticExplorer`.

    Raises:
        ValueError: for starting values out of range.

    Source: Abadi et al. 2016 (arXiv:1607.00133); Mironov, Talwar & Zhang 2019 (arXiv:1908.10530);
    Canonne, Kamath & Steinke 2020 (arXiv:2004.00010).
    """
    s0 = check_real("sigma", sigma, lo=0.3, hi=10.0)
    q0 = check_real("q", q, lo=1e-4, hi=1.0)
    t0 = int(check_real("steps", steps, lo=1, hi=1e5))
    delta = check_delta(delta, allow_zero=False)
    grid = np.unique(np.round(np.logspace(0, 5, 41)).astype(int))

    def draw(sigma: float, q: float, steps: int) -> Figure:
        steps = int(round(steps))
        one_step = dpsgd_rdp(q, sigma, 1)
        eps = np.array([rdp_to_dp_epsilon_and_order(one_step.orders, t * one_step.epsilons, delta)[0] for t in grid])
        eps_t, order = rdp_to_dp_epsilon_and_order(one_step.orders, steps * one_step.epsilons, delta)
        fig, (ax,) = new_figure()
        plot_composition(grid, {rf"$z = {sigma:g}$, $q = {q:g}$": eps}, ax=ax, logy=True,
                         ylabel=rf"$\varepsilon$ at $\delta = {tex_number(delta)}$")
        ax.plot([steps], [eps_t], "o", color="black", label=rf"$T = {steps}$: $\varepsilon = {eps_t:.3g}$")
        ax.set_xlabel("number of steps $T$")
        ax.set_title(rf"DP-SGD: $\varepsilon = {eps_t:.3g}$ after {steps} steps (best Rényi order {order:g})")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return fig

    return _explorer(draw, {"sigma": s0, "q": q0, "steps": t0}, lambda: {
        "sigma": ipywidgets.FloatSlider(value=s0, min=0.3, max=10.0, step=0.1, description="z",
                                        continuous_update=False),
        "q": ipywidgets.FloatLogSlider(value=q0, base=10, min=-4, max=0, step=0.1, description="q",
                                       readout_format=".4f", continuous_update=False),
        "steps": ipywidgets.FloatLogSlider(value=t0, base=10, min=0, max=5, step=0.05, description="T",
                                           readout_format=".0f", continuous_update=False)})


# --------------------------------------------------------------------------------------------------------
# randomized response surveys (lecture 01; written for issue 10, on this module's explorer framework)
# --------------------------------------------------------------------------------------------------------

def rr_accuracy_explorer(true_fraction: float = 0.3, surveys: int = 2000, seed: int = 0) -> Any:
    r"""Sliders for epsilon and the survey size n; histogram of the debiased randomized-response estimate.

    Each drawing simulates ``surveys`` surveys of ``n`` respondents answering with randomized response at
    level :math:`\varepsilon` (truthful with probability :math:`t = e^\varepsilon/(1+e^\varepsilon)`), and
    debiases the share :math:`\hat q` of reported ones (Warner 1965):

    .. math:: \hat\pi = \frac{\hat q - (1 - t)}{2t - 1}, \qquad
              \operatorname{sd}(\hat\pi) = \frac{\sqrt{q(1-q)/n}}{2t - 1}, \quad q = t\pi + (1-t)(1-\pi).

    The histogram window is the true fraction :math:`\pm 4.5` standard deviations, so it follows the spread
    at every :math:`\varepsilon` (the share of estimates outside it, below 1e-5 in theory, is printed when
    there are any).  The simulation is seeded: the same slider values always give the same picture.

    Args:
        true_fraction: the share :math:`\pi` of respondents whose true answer is 1, in [0, 1].
        surveys: number of simulated surveys per drawing, an integer in [10, 10**6] (a cost guard).
        seed: seed of the simulation, an integer >= 0.

    Returns:
        An ``ipywidgets.VBox`` (``.draw(epsilon, n)`` returns the figure), or a :class:`StaticExplorer` of
        the default setting (ε = 1, n = 1000) where widgets are not available.

    Raises:
        ValueError: for a parameter out of range.

    Source: Warner 1965, "Randomized response", JASA 60(309).
    """
    true_fraction = check_probability("true_fraction", true_fraction)
    surveys = check_int("surveys", surveys, lo=10, hi=10**6)
    seed = check_int("seed", seed, lo=0)

    def draw(epsilon: float, n: int) -> Figure:
        n = int(n)
        t = RandomizedResponse(epsilon).truth_probability
        q = t * true_fraction + (1 - t) * (1 - true_fraction)
        gain = 2 * t - 1  # tanh(epsilon / 2): what is left of the signal
        estimates = (np.random.default_rng(seed).binomial(n, q, size=surveys) / n - (1 - t)) / gain
        sd = np.sqrt(q * (1 - q) / n) / gain
        window = (true_fraction - 4.5 * sd, true_fraction + 4.5 * sd)
        outside = np.mean((estimates < window[0]) | (estimates > window[1]))
        fig, (ax,) = new_figure(figsize=(8.5, 3.4))
        ax.hist(estimates, bins=50, range=window, density=True, color=COLORS[0], alpha=0.7,
                label=f"{surveys} simulated surveys")
        ax.axvspan(true_fraction - 2 * sd, true_fraction + 2 * sd, color=COLORS[2], alpha=0.12,
                   label="true fraction ± 2 sd")
        ax.axvline(true_fraction, color="black", linestyle="--", label=f"true fraction {true_fraction:g}")
        note = f"; {outside:.1%} outside the window" if outside > 0 else ""
        ax.set(xlim=window, xlabel="debiased estimate of the fraction", ylabel="density",
               title=f"ε = {epsilon:.2f}, n = {n}: standard deviation {sd:.3f}{note}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return fig

    return _explorer(draw, {"epsilon": 1.0, "n": 1000}, lambda: {
        "epsilon": ipywidgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05, description="ε",
                                             continuous_update=False),
        "n": ipywidgets.IntSlider(value=1000, min=100, max=20_000, step=100, description="n",
                                  continuous_update=False)})
