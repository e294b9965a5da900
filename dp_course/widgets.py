"""Interactive explorers for the lectures (ipywidgets + matplotlib).

Each explorer returns an ``ipywidgets`` box of sliders and a plot.  In JupyterLab the plot redraws as the
sliders move; executed headless (CI, ``nbclient``) the widgets are created and the first plot is drawn once,
so a notebook that calls them runs everywhere.  The drawing function is exposed as ``box.draw(**values)`` so
tests (and curious students) can call it directly.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse
from ._validation import check_int, check_probability
from .plotting import COLORS, course_style, plot_pld, plot_privacy_profile

__all__ = ["pld_explorer", "composition_explorer", "rr_accuracy_explorer"]

_MECHANISMS = {
    "randomized response": lambda x: RandomizedResponse(x).privacy_loss_distribution(),
    "Gaussian": lambda x: GaussianMechanism(sigma=1.0 / x).privacy_loss_distribution(),
    "Laplace": lambda x: LaplaceMechanism.from_epsilon(x).privacy_loss_distribution(value_step=x / 200),
}
_PARAMETER = {"randomized response": "epsilon", "Gaussian": "1/sigma", "Laplace": "epsilon"}


def _check_mechanism(mechanism: str) -> str:
    if mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {sorted(_MECHANISMS)}, got {mechanism!r}")
    return mechanism


def _box(draw, controls):
    import ipywidgets as w

    out = w.interactive_output(draw, controls)
    box = w.VBox([w.HBox(list(controls.values())), out])
    box.draw = draw  # type: ignore[attr-defined]
    return box


def pld_explorer(mechanism: str = "randomized response"):
    """Sliders for the mechanism's parameter and the number of compositions k; plots the PLD of the k-fold run."""
    import ipywidgets as w

    mechanism = _check_mechanism(mechanism)

    def draw(param: float, k: int):
        pld = _MECHANISMS[mechanism](param).self_compose(int(k))
        with course_style():
            fig, ax = plt.subplots()
            plot_pld(pld, ax=ax, label=f"{mechanism}, {_PARAMETER[mechanism]}={param:g}, k={int(k)}")
            plt.show()
        return fig

    controls = {"param": w.FloatSlider(value=0.5, min=0.05, max=2.0, step=0.05,
                                       description=_PARAMETER[mechanism], continuous_update=False),
                "k": w.IntSlider(value=1, min=1, max=200, description="k", continuous_update=False)}
    return _box(draw, controls)


def composition_explorer(mechanism: str = "randomized response"):
    """Sliders for the parameter and k; plots the exact privacy profile of the k-fold composition next to k = 1."""
    import ipywidgets as w

    mechanism = _check_mechanism(mechanism)

    def draw(param: float, k: int):
        base = _MECHANISMS[mechanism](param)
        eps = np.linspace(0.0, max(1.0, 3 * param * np.sqrt(int(k))), 200)
        with course_style():
            fig, ax = plt.subplots()
            plot_privacy_profile({"one run": base, f"{int(k)} runs": base.self_compose(int(k))}, eps, ax=ax)
            plt.show()
        return fig

    controls = {"param": w.FloatSlider(value=0.3, min=0.05, max=2.0, step=0.05,
                                       description=_PARAMETER[mechanism], continuous_update=False),
                "k": w.IntSlider(value=10, min=1, max=500, description="k", continuous_update=False)}
    return _box(draw, controls)


def rr_accuracy_explorer(true_fraction: float = 0.3, surveys: int = 2000, seed: int = 0) -> object | None:
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
        surveys: number of simulated surveys per drawing, an integer >= 10.
        seed: seed of the simulation, an integer >= 0.

    Returns:
        an ``ipywidgets`` box (sliders and plot, with the drawing function as ``box.draw(epsilon, n)``), or,
        where ipywidgets is not installed, ``None`` after drawing the default setting as a static plot.

    Raises:
        ValueError: for a parameter out of range.
    """
    true_fraction = check_probability("true_fraction", true_fraction)
    surveys = check_int("surveys", surveys, lo=10)
    seed = check_int("seed", seed, lo=0)

    def draw(epsilon: float, n: int):
        n = int(n)
        t = RandomizedResponse(epsilon).truth_probability
        q = t * true_fraction + (1 - t) * (1 - true_fraction)
        gain = 2 * t - 1  # tanh(epsilon / 2): what is left of the signal
        estimates = (np.random.default_rng(seed).binomial(n, q, size=surveys) / n - (1 - t)) / gain
        sd = np.sqrt(q * (1 - q) / n) / gain
        window = (true_fraction - 4.5 * sd, true_fraction + 4.5 * sd)
        outside = np.mean((estimates < window[0]) | (estimates > window[1]))
        with course_style():
            fig, ax = plt.subplots(figsize=(8, 3.2))
            ax.hist(estimates, bins=50, range=window, density=True, color=COLORS[0], alpha=0.7,
                    label=f"{surveys} simulated surveys")
            ax.axvspan(true_fraction - 2 * sd, true_fraction + 2 * sd, color=COLORS[2], alpha=0.12,
                       label="true fraction ± 2 sd")
            ax.axvline(true_fraction, color="black", linestyle="--", label=f"true fraction {true_fraction:g}")
            note = f"; {outside:.1%} outside the window" if outside > 0 else ""
            ax.set(xlim=window, xlabel="debiased estimate of the fraction", ylabel="density",
                   title=f"ε = {epsilon:.2f}, n = {n}: standard deviation {sd:.3f}{note}")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
            fig.tight_layout()
            plt.show()
        return fig

    try:
        import ipywidgets as w
    except ImportError:  # no widgets (a static HTML export, a minimal install): draw the default setting
        draw(1.0, 1000)
        return None
    controls = {"epsilon": w.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05, description="ε",
                                            continuous_update=False),
                "n": w.IntSlider(value=1000, min=100, max=20_000, step=100, description="n",
                                 continuous_update=False)}
    return _box(draw, controls)
