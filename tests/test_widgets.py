"""Explorers build headless, redraw when a control moves, draw the right thing, and degrade to a static figure
where widgets are not available.  Every figure is rendered (``fig.canvas.draw()``)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dp_course import widgets  # noqa: E402
from dp_course.dpsgd import dpsgd_epsilon  # noqa: E402
from dp_course.mechanisms import GaussianMechanism, RandomizedResponse  # noqa: E402
from dp_course.leaky import leaky_randomized_response  # noqa: E402
from dp_course.simulation import simulation_map  # noqa: E402
from dp_course.widgets import (StaticExplorer, composition_explorer, dpsgd_explorer, pld_explorer,  # noqa: E402
                               simulation_explorer)

MECHANISMS = ["randomized response", "Gaussian", "Laplace"]


def render(fig) -> None:
    fig.canvas.draw()
    fig.savefig(io.BytesIO(), format="png")


def controls(box) -> dict:
    return {w.description: w for w in box.children[0].children}


def legends_clear(fig) -> None:
    for ax in fig.axes:
        if ax.get_legend() is not None:
            box = ax.get_legend().get_window_extent()
            assert not any(box.overlaps(o.get_window_extent()) for o in fig.axes), "a legend covers a panel"


def image(box) -> bytes:
    """The PNG the explorer shows below its controls."""
    return bytes(box.children[1].value)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_one_parameter_explorers_build_redraw_and_say_epsilon(mechanism):
    for make in (pld_explorer, composition_explorer):
        box = make(mechanism)
        c = controls(box)
        symbol = "σ" if mechanism == "Gaussian" else "ε"
        assert set(c) == {symbol, "k"}, "sliders are labelled with the symbol, not 'epsilon='"
        first = image(box)
        assert first.startswith(b"\x89PNG")                               # the first drawing
        c["k"].value = c["k"].value + 1
        assert image(box).startswith(b"\x89PNG") and image(box) != first  # redrawn after the slider moved
        fig = box.draw(param=c[symbol].value, k=3)
        render(fig)
        ax = fig.axes[0]
        assert ax.get_lines() or ax.collections or ax.patches
        assert "epsilon=" not in ax.get_title() and "epsilon=" not in " ".join(
            t.get_text() for t in ax.get_legend().get_texts())
        legends_clear(fig)


def test_composition_explorer_shows_k_and_2k_with_a_readable_y_axis():
    """One run, k runs and 2k runs; epsilon at delta = 1e-6 marked for k and 2k; the y-axis stops at 1e-9
    (not 1e-24), and the title gives the ratio, well below basic composition's 2 at the default setting."""
    fig = composition_explorer("randomized response").draw(param=0.1, k=50)
    render(fig)
    ax = fig.axes[0]
    base = RandomizedResponse(0.1).privacy_loss_distribution()
    eps_grid, delta_k = ax.get_lines()[1].get_data()
    expected = base.self_compose(50).delta_for_epsilon(eps_grid)
    np.testing.assert_allclose(delta_k[expected > 0], expected[expected > 0])
    assert ax.get_ylim() == pytest.approx((1e-9, 1.5))
    marks = [line for line in ax.get_lines() if line.get_marker() == "o"]
    eps_k, eps_2k = (base.self_compose(k).epsilon_for_delta(widgets.COMPOSITION_DELTA) for k in (50, 100))
    np.testing.assert_allclose([m.get_xdata()[0] for m in marks], [eps_k, eps_2k])
    assert 1.3 < eps_2k / eps_k < 1.7
    assert f"{eps_2k / eps_k:.2f}" in ax.get_title()
    assert ax.get_xlim()[1] >= eps_2k, "both marks must be on the plot"


def test_pld_explorer_draws_the_composed_gaussian():
    fig = pld_explorer("Gaussian").draw(param=2.0, k=4)
    render(fig)
    x, y = fig.axes[0].get_lines()[0].get_data()
    np.testing.assert_allclose(y, GaussianMechanism(sigma=2.0).privacy_loss_distribution().self_compose(4).pdf(x))


def test_simulation_explorer_builds_the_map_and_verifies_it():
    box = simulation_explorer()
    c = controls(box)
    assert set(c) == {"P", "Q", "ε", "δ"}
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.35, 0.4])
    fig = box.draw(p="5, 3, 2", q="0.25, 0.35, 0.4", epsilon=0.5, delta=0.1)   # weights are normalised
    render(fig)
    ax_pq, ax_f, ax_chk = fig.axes
    F = simulation_map(p, q, 0.5, 0.1)
    np.testing.assert_allclose(ax_f.get_images()[0].get_array(), F)
    p_u, p_v = leaky_randomized_response(0.5, 0.1)
    dots = {line.get_marker(): line.get_ydata() for line in ax_chk.get_lines()}
    np.testing.assert_allclose(dots["o"], p_u @ F)
    np.testing.assert_allclose(dots["s"], p_v @ F)
    np.testing.assert_allclose(dots["o"], p, atol=1e-9)
    legends_clear(fig)
    before = image(box)
    c["ε"].value = 1.0
    assert image(box) != before


@pytest.mark.parametrize("values,message", [
    (dict(p="0.5, 0.3, 0.2", q="0.25, 0.35, 0.4", epsilon=0.1, delta=0.0), "not (0.1, 0)-indistinguishable"),
    (dict(p="0.5, x", q="0.25, 0.35, 0.4", epsilon=0.5, delta=0.1), "P must be numbers"),
    (dict(p="0.5, 0.5", q="0.25, 0.35, 0.4", epsilon=0.5, delta=0.1), "same number of outcomes"),
    (dict(p="0.5, -1", q="0.5, 0.5", epsilon=0.5, delta=0.1), "non-negative weights"),
])
def test_simulation_explorer_explains_instead_of_raising(values, message):
    fig = simulation_explorer().draw(**values)
    render(fig)
    text = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert message in text


def test_simulation_explorer_needed_delta_is_the_pair_profile():
    fig = simulation_explorer().draw(p="0.5, 0.3, 0.2", q="0.25, 0.35, 0.4", epsilon=0.1, delta=0.0)
    render(fig)
    text = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.35, 0.4])
    need = max(np.maximum(p - np.exp(0.1) * q, 0).sum(), np.maximum(q - np.exp(0.1) * p, 0).sum())
    assert f"at least {need:.3f}" in text


def test_dpsgd_explorer_reports_the_accountants_epsilon():
    box = dpsgd_explorer()
    c = controls(box)
    assert set(c) == {"z", "q", "T"}          # z: the noise multiplier (lecture 06's name; sigma in the API)
    fig = box.draw(sigma=1.1, q=0.01, steps=1000)
    render(fig)
    ax = fig.axes[0]
    mark = [line for line in ax.get_lines() if line.get_marker() == "o"][0]
    expected = dpsgd_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5)
    assert mark.get_ydata()[0] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(1.71177, abs=1e-5)      # the accountant's doctest value
    curve = ax.get_lines()[0]
    t, eps = curve.get_data()
    assert np.all(np.diff(eps) >= -1e-12), "epsilon grows with the number of steps"
    legends_clear(fig)
    before = image(box)
    c["z"].value = 2.0
    assert image(box) != before


@pytest.mark.parametrize("make", [lambda: pld_explorer(), lambda: composition_explorer("Gaussian"),
                                  lambda: simulation_explorer(), lambda: dpsgd_explorer()])
@pytest.mark.parametrize("how", ["env", "no-ipywidgets"])
def test_explorers_degrade_to_a_static_figure(make, how, monkeypatch):
    if how == "env":
        monkeypatch.setenv(widgets.STATIC_ENV, "1")
    else:
        monkeypatch.setattr(widgets, "ipywidgets", None)
    assert not widgets.widgets_available()
    out = make()
    assert isinstance(out, StaticExplorer)
    render(out.figure)
    png = out._repr_png_()
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    assert out.figure.axes and (out.figure.axes[0].get_lines() or out.figure.axes[0].patches)


@pytest.mark.parametrize("call,match", [
    (lambda: pld_explorer("exponential"), "mechanism must be one of"),
    (lambda: simulation_explorer(p=[0.5, 0.5], q=[1.0]), "same length"),
    (lambda: simulation_explorer(p=[1 / 7] * 7, q=[1 / 7] * 7), "2 to 6 outcomes"),
    (lambda: simulation_explorer(epsilon=5.0), "epsilon must be"),
    (lambda: dpsgd_explorer(sigma=0.0), "sigma must be"),
    (lambda: dpsgd_explorer(steps=10**6), "steps must be"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
