"""Figures of lectures 01-02 drawn by the library.

* ``rr_accuracy_explorer`` (lecture 01): the histogram window follows the spread at every epsilon, the picture
  is reproducible, and it degrades to a static plot without ipywidgets;
* ``plot_pld`` with an atom at +infinity (name-and-shame, lecture 02): the atom is drawn apart from the finite
  losses and marked +infinity.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dp_course.mechanisms import NameAndShame, RandomizedResponse  # noqa: E402
from dp_course.plotting import plot_pld  # noqa: E402
from dp_course import widgets  # noqa: E402
from dp_course.widgets import rr_accuracy_explorer  # noqa: E402


def _sd(epsilon: float, n: int, fraction: float) -> float:
    """Standard deviation of the debiased estimate, from Warner's formula (independent of the library)."""
    t = np.exp(epsilon) / (1 + np.exp(epsilon))
    q = t * fraction + (1 - t) * (1 - fraction)
    return float(np.sqrt(q * (1 - q) / n) / (2 * t - 1))


@pytest.mark.parametrize("epsilon, n", [(0.1, 100), (1.0, 1000), (10.0, 20_000)])
def test_window_follows_the_spread(epsilon, n):
    pytest.importorskip("ipywidgets", reason="the interactive explorer needs ipywidgets")
    box = rr_accuracy_explorer(true_fraction=0.3)
    assert {s.description for s in box.children[0].children} == {"ε", "n"}
    fig = box.draw(epsilon, n)
    fig.canvas.draw()
    ax = fig.axes[0]
    sd = _sd(epsilon, n, 0.3)
    lo, hi = ax.get_xlim()
    np.testing.assert_allclose([lo, hi], [0.3 - 4.5 * sd, 0.3 + 4.5 * sd], rtol=1e-9)
    assert f"{sd:.3f}" in ax.get_title()
    bars = [p for p in ax.patches if p.get_height() > 0 and p.get_width() < hi - lo]
    assert len(bars) >= 20, f"the histogram should fill its window, {len(bars)} non-empty bars"
    # a 4.5 sd window holds each estimate with probability about 1 - 7e-6; the simulation is seeded, and with
    # the default seed none of the 2000 estimates falls outside, so no note is shown
    assert "outside" not in ax.get_title()
    plt.close("all")


def test_small_epsilon_no_longer_clipped():
    """The inline widget it replaces drew a fixed range (-0.6, 1.2), which held only a third of the
    estimates at epsilon = 0.1 and n = 100; the explorer's window holds them all."""
    pytest.importorskip("ipywidgets", reason="the interactive explorer needs ipywidgets")
    fig = rr_accuracy_explorer().draw(0.1, 100)
    lo, hi = fig.axes[0].get_xlim()
    assert lo < -0.6 - 1 and hi > 1.2 + 1
    plt.close("all")


def test_same_sliders_same_picture():
    pytest.importorskip("ipywidgets", reason="the interactive explorer needs ipywidgets")
    heights = []
    for _ in range(2):
        fig = rr_accuracy_explorer(seed=3).draw(0.5, 500)
        heights.append([p.get_height() for p in fig.axes[0].patches])
        plt.close("all")
    assert heights[0] == heights[1]


def test_static_fallback_without_ipywidgets(monkeypatch):
    monkeypatch.setattr(widgets, "ipywidgets", None)  # as if `import ipywidgets` had failed
    explorer = rr_accuracy_explorer()
    assert isinstance(explorer, widgets.StaticExplorer)
    fig = explorer.figure
    fig.canvas.draw()
    ax = fig.axes[0]
    assert "ε = 1.00, n = 1000" in ax.get_title()
    assert sum(p.get_height() > 0 for p in ax.patches) >= 20
    plt.close("all")


@pytest.mark.parametrize("kwargs, message", [({"true_fraction": 1.5}, "true_fraction must be"),
                                             ({"surveys": 5}, "surveys must be"),
                                             ({"seed": -1}, "seed must be")])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        rr_accuracy_explorer(**kwargs)


@pytest.mark.parametrize("pld, finite_max", [(NameAndShame(0.05).privacy_loss_distribution(), 0.0),
                                             (NameAndShame(0.05).privacy_loss_distribution().compose(
                                                 RandomizedResponse(2.0).privacy_loss_distribution()), 2.0)])
def test_infinite_atom_is_drawn_apart_and_named(pld, finite_max):
    """Name-and-shame's atom at +inf used to sit at loss 0.1, next to its atom at 0, with nothing saying +inf."""
    fig, ax = plt.subplots()
    plot_pld(pld, ax=ax)
    fig.canvas.draw()
    markers = [line for line in ax.get_lines() if line.get_marker() == "^"]
    assert len(markers) == 1
    x_inf, mass = markers[0].get_xdata()[0], markers[0].get_ydata()[0]
    assert mass == pytest.approx(pld.infinity_mass)
    assert x_inf >= finite_max + 1.0, "the +inf atom must stand well apart from the largest finite loss"
    ticks = dict(zip(ax.get_xticks(), (t.get_text() for t in ax.get_xticklabels()), strict=True))
    assert ticks.get(x_inf) == "+∞", f"the atom must stand above a tick '+∞', ticks are {ticks}"
    assert all(t < finite_max + 0.5 * (x_inf - finite_max) for t in ticks if t != x_inf), (
        "no finite tick may sit near the +inf atom")
    lo, hi = ax.get_xlim()
    assert lo <= finite_max and x_inf + 0.05 * (x_inf - lo) < hi, "the +inf atom must lie inside the axes"
    plt.close(fig)
