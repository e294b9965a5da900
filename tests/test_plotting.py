"""The plot helpers draw what they say: data on the axes, labels, scales, legends clear of the data; bad input
gets a clear error.  Every test renders its figure (``fig.canvas.draw()``), as the notebook would."""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path

import matplotlib
import matplotlib.text
import nbformat

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dp_course import plotting, style  # noqa: E402
from dp_course.composition import optimal_composition_epsilon  # noqa: E402
from dp_course.leaky import LEAKY_OUTCOMES, leaky_randomized_response  # noqa: E402
from dp_course.mechanisms import GaussianMechanism, NameAndShame, RandomizedResponse  # noqa: E402
from dp_course.simulation import simulation_map  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def render(ax) -> None:
    """Draw the figure and write it as PNG (what a notebook does; raises on bad mathtext)."""
    ax.figure.canvas.draw()
    ax.figure.savefig(io.BytesIO(), format="png")


def assert_legend_clear(ax) -> None:
    """The legend lies outside every panel of the figure (so it covers no data)."""
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent()
    for other in ax.figure.axes:
        assert not box.overlaps(other.get_window_extent()), (
            f"legend {box} overlaps the panel {other.get_window_extent()} ({other.get_title()!r})")


def test_privacy_profile_plots_the_profile():
    pld = RandomizedResponse(1.0).privacy_loss_distribution().self_compose(5)
    eps = np.linspace(0, 4, 50)
    ax = plotting.plot_privacy_profile({"RR": pld, "fn": lambda e: 0.5 * np.exp(-e),
                                        "arr": np.full(50, 0.1)}, eps)
    render(ax)
    lines = ax.get_lines()
    assert len(lines) == 3 and ax.get_yscale() == "log"
    y = lines[0].get_ydata()
    expected = pld.delta_for_epsilon(eps)
    np.testing.assert_allclose(y[expected > 0], expected[expected > 0])
    assert np.all(np.isnan(y[expected == 0]))      # zeros are gaps on a log axis, not -inf
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["RR", "fn", "arr"]
    assert_legend_clear(ax)


def test_pld_plot_atoms_and_density():
    ax = plotting.plot_pld(RandomizedResponse(1.0).privacy_loss_distribution())
    render(ax)
    assert ax.get_xlabel() == "privacy loss $L$" and ax.get_ylabel() == "probability"
    assert_legend_clear(ax)
    ax = plotting.plot_pld(GaussianMechanism(1.0).privacy_loss_distribution())
    render(ax)
    x, y = ax.get_lines()[0].get_data()
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=1e-5)
    ax = plotting.plot_pld(RandomizedResponse(0.1).privacy_loss_distribution().self_compose(500))
    render(ax)
    assert ax.get_ylabel() == "probability density"


@pytest.mark.parametrize("delta", [0.05, 0.3])
def test_pld_infinity_atom_is_apart_inside_the_axes_and_labelled(delta):
    """Name-and-shame: the atom at +inf sits beyond a break right of every finite loss, clear of the axis edge,
    at a tick labelled +inf, in the documented colour (issue: it was drawn at loss 0.1, at the edge)."""
    pld = NameAndShame(delta).privacy_loss_distribution()
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
    ax = plotting.plot_pld(pld, ax=axes[1])
    render(ax)
    marker = next(line for line in ax.get_lines() if "infty" in line.get_label())
    x_inf, mass = marker.get_xdata()[0], marker.get_ydata()[0]
    assert mass == pytest.approx(delta)
    assert marker.get_color() == plotting.INFINITY_COLOR
    lo, hi = ax.get_xlim()
    finite_max = float(np.max(pld.losses))
    assert x_inf - finite_max >= 0.1 * (hi - lo), "the +inf atom must be set apart from the finite losses"
    assert lo < x_inf < hi and (hi - x_inf) >= 0.08 * (hi - lo), "the +inf atom must not sit at the axis edge"
    labels = {round(t.get_loc(), 9): t.label1.get_text() for t in ax.xaxis.get_major_ticks()}
    assert labels[round(x_inf, 9)] == "+∞"
    assert x_inf >= finite_max + 1.0
    assert "mass" in marker.get_label() and f"{delta:.3g}" in marker.get_label()
    assert_legend_clear(ax)        # below the middle panel, clear of its neighbours


def test_composition_and_rdp_plots():
    ks = np.array([1, 10, 100])
    ax = plotting.plot_composition(ks, {"basic": 0.1 * ks, "sqrt": lambda k: 0.1 * np.sqrt(k)})
    render(ax)
    assert ax.get_xscale() == "log" and len(ax.get_lines()) == 2
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), 0.1 * np.sqrt(ks))
    assert_legend_clear(ax)
    orders = np.array([1.5, 2, 8, 32])
    ax = plotting.plot_rdp_curves(orders, {"gauss": lambda a: a / 2})
    render(ax)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), orders / 2)
    assert_legend_clear(ax)
    ax = plotting.plot_pmf_pair([0.75, 0.25], [0.25, 0.75], outcomes=["0", "1"])
    render(ax)
    assert len(ax.patches) == 4
    assert_legend_clear(ax)


def test_composition_bounds_renders_and_reproduces_figure_1_ordering():
    """Lecture Figure 1 setting: optimal <= strong, optimal <= basic, strong beats basic for large k; the figure
    renders (the basic curve's label was not a raw string: ``\\v`` became a vertical tab and savefig raised)."""
    ks = [1, 10, 100, 1000, 10000]
    ax = plotting.plot_composition_bounds(0.01, ks, delta_prime=1e-6)
    render(ax)
    basic, strong, optimal = (line.get_ydata() for line in ax.get_lines())
    assert ax.get_lines()[0].get_label() == r"basic: $k\varepsilon$"
    np.testing.assert_allclose(basic, 0.01 * np.array(ks))
    assert np.all(optimal <= strong + 1e-12) and np.all(optimal <= basic + 1e-12)
    assert strong[-1] < basic[-1]
    assert optimal[2] == pytest.approx(optimal_composition_epsilon(0.01, 0.0, 100, 1e-6), rel=1e-12)
    assert optimal[2] == pytest.approx(0.392263943093472, rel=1e-9)   # issue #3 reference value
    assert_legend_clear(ax)
    assert r"\delta' = 10^{-6}" in ax.get_title(), f"1e-06 in mathtext reads as a subtraction: {ax.get_title()!r}"


@pytest.mark.parametrize("x,tex", [(1e-6, "10^{-6}"), (2.5e-7, r"2.5 \times 10^{-7}"), (0.05, "0.05"), (0.0, "0"),
                                   (1e5, "10^{5}"), (1234.0, "1234")])
def test_tex_number(x, tex):
    """Numbers for mathtext titles: powers of ten as 10^{n}, not "1e-06" (which mathtext sets as 1e − 06)."""
    assert plotting.tex_number(x) == tex


def test_simulation_map_and_check_plots():
    p, q, eps, delta = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.35, 0.4]), 0.5, 0.1
    F = simulation_map(p, q, eps, delta)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    ax = plotting.plot_simulation_map(F, [str(o) for o in LEAKY_OUTCOMES], ax=axes[0])
    p_u, p_v = leaky_randomized_response(eps, delta)
    ax2 = plotting.plot_simulation_check(p_u @ F, p_v @ F, p, q, ax=axes[1])
    render(ax)
    np.testing.assert_allclose(ax.get_images()[0].get_array(), F)
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(o) for o in LEAKY_OUTCOMES]
    dots = [line for line in ax2.get_lines() if line.get_marker() == "o"][0]
    np.testing.assert_allclose(dots.get_ydata(), p, atol=1e-9)
    assert "max error" in ax2.get_title()
    assert_legend_clear(ax2)


@pytest.mark.parametrize("call,match", [
    (lambda: plotting.plot_composition_bounds(0.01, [1.5]), "ks must contain whole numbers"),
    (lambda: plotting.plot_composition_bounds(-1, [1]), "epsilon must be > 0"),
    (lambda: plotting.plot_privacy_profile({}), "curves must be a non-empty mapping"),
    (lambda: plotting.plot_privacy_profile({"a": [0.1, 0.2]}, [0.0, 1.0, 2.0]), "one value per epsilon"),
    (lambda: plotting.plot_privacy_profile({"a": [0.1]}, [-1.0]), "epsilons must be"),
    (lambda: plotting.plot_pld("rr"), "pld must be a PrivacyLossDistribution"),
    (lambda: plotting.plot_composition([0, 1], {"a": [1, 2]}), "ks must be"),
    (lambda: plotting.plot_rdp_curves([1.0, 2.0], {"a": [1, 2]}), "orders must be"),
    (lambda: plotting.plot_pmf_pair([0.5, 0.5], [1.0]), "same length"),
    (lambda: plotting.plot_simulation_map(np.full((4, 2), 0.5), ["a", "b"]), "row_labels must name each"),
    (lambda: plotting.plot_simulation_map(np.full((4, 2), 2.0), list("abcd")), "F must be"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------------------------------------
# Text readable at a notebook's width (issue 22 item 13)

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 0.95
""""At least about 10 px": a rendered text box (as tall as its font size, for one line) of 9.5 px passes."""


def _lecture_figure_widths() -> list[float]:
    """The widths (inches) of every ``figsize=(w, h)`` in the lectures' code."""
    widths = []
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                widths += [float(w) for w in re.findall(r"figsize\s*=\s*\(\s*([0-9.]+)\s*,", cell.source)]
    return widths


def _rendered_text_px(fig) -> dict[str, float]:
    """Each visible text of ``fig`` (its string) and its rendered height in screen pixels, the figure scaled
    (never enlarged) to ``NOTEBOOK_WIDTH_PX`` as JupyterLab shows an image wider than the output area."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, style.NOTEBOOK_WIDTH_PX / (fig.get_figwidth() * fig.dpi))
    out = {}
    for t in fig.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text().strip():
            box = t.get_window_extent(renderer)
            across = box.width if round(t.get_rotation()) % 180 == 90 else box.height   # a y label is turned
            out[t.get_text()] = across * scale
    return out


def test_lecture_text_is_at_least_10_px_at_the_notebook_width():
    widths = _lecture_figure_widths()
    assert widths, "the lectures draw figures with an explicit figsize"
    widest = max(widths)
    assert widest <= 14, f"a lecture figure {widest} inches wide: check its text at the notebook's width"
    with matplotlib.rc_context():
        style.use_course_fonts()
        fig, axes = plt.subplots(1, 3, figsize=(widest, 4), dpi=100)
        for i, ax in enumerate(axes):
            ax.plot([0, 1], [0, 1e-3], label=f"curve {i}")
            ax.set(title=f"panel {i}", xlabel="k (steps)", ylabel="δ")
            ax.legend(fontsize="small")          # the smallest size the lectures use (tools/figure_fonts.py)
            ax.text(0.5, 5e-4, "note", fontsize="small")
        fig.suptitle("figure title")
        sizes = _rendered_text_px(fig)
    assert {"panel 0", "k (steps)", "curve 2", "note", "figure title"} <= set(sizes)
    small = {text: px for text, px in sizes.items() if px < style.MIN_TEXT_PX * TOLERANCE}
    assert not small, f"text under ~{style.MIN_TEXT_PX:g} px at {style.NOTEBOOK_WIDTH_PX} px: {small}"
    # the measurement can fail: matplotlib's defaults (10 pt, legends 10 pt) on the same figure are too small
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        fig, ax = plt.subplots(figsize=(widest, 4), dpi=100)
        ax.plot([0, 1], [0, 1], label="curve")
        ax.legend(fontsize=8)
        assert _rendered_text_px(fig)["curve"] < style.MIN_TEXT_PX * TOLERANCE


def test_explorer_figures_use_the_course_text_sizes():
    fig, axes = plotting.new_figure(ncols=3)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="x")
        ax.set(title="t", xlabel="x")
        ax.legend()
    sizes = _rendered_text_px(fig)
    assert min(sizes.values()) >= style.MIN_TEXT_PX * TOLERANCE, sizes


def test_use_course_fonts_sets_sizes_only():
    with matplotlib.rc_context():
        layout = matplotlib.rcParams["figure.constrained_layout.use"]
        style.use_course_fonts()
        assert matplotlib.rcParams["font.size"] == style.FONT_SIZES["font.size"]
        assert matplotlib.rcParams["legend.fontsize"] == style.FONT_SIZES["legend.fontsize"]
        assert matplotlib.rcParams["figure.constrained_layout.use"] == layout


def test_no_lecture_sets_a_font_below_10_points():
    fonts = _tool_module("figure_fonts")
    assert fonts.raise_fonts('ax.legend(fontsize=8, loc="x"); ax.text(0, 0, "a", fontsize=9.5)') == \
        'ax.legend(fontsize="small", loc="x"); ax.text(0, 0, "a", fontsize="small")'
    assert fonts.raise_fonts("ax.legend(fontsize=10); ax.text(0, 0, 'a', fontsize=12)") == \
        "ax.legend(fontsize=10); ax.text(0, 0, 'a', fontsize=12)"
    assert fonts.main(["--check", str(ROOT)]) == 0, "run: .venv/bin/python tools/figure_fonts.py"


def _tool_module(name: str):
    spec = importlib.util.spec_from_file_location(f"_tool_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
