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
from .plotting import course_style, plot_pld, plot_privacy_profile

__all__ = ["pld_explorer", "composition_explorer"]

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
