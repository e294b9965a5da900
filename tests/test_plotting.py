"""The plot helpers draw what they say: data on the axes, labels, scales; bad input gets a clear error."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dp_course import plotting  # noqa: E402
from dp_course.mechanisms import GaussianMechanism, NameAndShame, RandomizedResponse  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_privacy_profile_plots_the_profile():
    pld = RandomizedResponse(1.0).privacy_loss_distribution().self_compose(5)
    eps = np.linspace(0, 4, 50)
    ax = plotting.plot_privacy_profile({"RR": pld, "fn": lambda e: 0.5 * np.exp(-e),
                                        "arr": np.full(50, 0.1)}, eps)
    lines = ax.get_lines()
    assert len(lines) == 3 and ax.get_yscale() == "log"
    y = lines[0].get_ydata()
    expected = pld.delta_for_epsilon(eps)
    np.testing.assert_allclose(y[expected > 0], expected[expected > 0])
    assert np.all(np.isnan(y[expected == 0]))      # zeros are gaps on a log axis, not -inf
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["RR", "fn", "arr"]


def test_pld_plot_atoms_density_and_infinity():
    ax = plotting.plot_pld(RandomizedResponse(1.0).privacy_loss_distribution())
    assert ax.get_xlabel() == "privacy loss $L$" and ax.get_ylabel() == "probability"
    ax = plotting.plot_pld(NameAndShame(0.1).privacy_loss_distribution())
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("+\\infty" in t and "0.1" in t for t in texts)
    ax = plotting.plot_pld(GaussianMechanism(1.0).privacy_loss_distribution())
    x, y = ax.get_lines()[0].get_data()
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=1e-5)
    ax = plotting.plot_pld(RandomizedResponse(0.1).privacy_loss_distribution().self_compose(500))
    assert ax.get_ylabel() == "probability density"


def test_composition_and_rdp_plots():
    ks = np.array([1, 10, 100])
    ax = plotting.plot_composition(ks, {"basic": 0.1 * ks, "sqrt": lambda k: 0.1 * np.sqrt(k)})
    assert ax.get_xscale() == "log" and len(ax.get_lines()) == 2
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), 0.1 * np.sqrt(ks))
    orders = np.array([1.5, 2, 8, 32])
    ax = plotting.plot_rdp_curves(orders, {"gauss": lambda a: a / 2})
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), orders / 2)
    ax = plotting.plot_pmf_pair([0.75, 0.25], [0.25, 0.75], outcomes=["0", "1"])
    assert len(ax.patches) == 4


def test_composition_bounds_reproduces_figure_1_ordering():
    """Lecture Figure 1 setting: optimal <= strong, optimal <= basic, and strong beats basic for large k."""
    from dp_course.composition import optimal_composition_epsilon

    ks = [1, 10, 100, 1000, 10000]
    ax = plotting.plot_composition_bounds(0.01, ks, delta_prime=1e-6)
    basic, strong, optimal = (line.get_ydata() for line in ax.get_lines())
    np.testing.assert_allclose(basic, 0.01 * np.array(ks))
    assert np.all(optimal <= strong + 1e-12) and np.all(optimal <= basic + 1e-12)
    assert strong[-1] < basic[-1]
    assert optimal[2] == pytest.approx(optimal_composition_epsilon(0.01, 0.0, 100, 1e-6), rel=1e-12)
    assert optimal[2] == pytest.approx(0.392263943093472, rel=1e-9)   # issue #3 reference value


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
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
