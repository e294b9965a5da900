"""Widget explorers build headless and draw the right thing when their sliders move."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dp_course.mechanisms import RandomizedResponse  # noqa: E402
from dp_course.widgets import composition_explorer, pld_explorer  # noqa: E402


@pytest.mark.parametrize("mechanism", ["randomized response", "Gaussian", "Laplace"])
def test_explorers_build_and_draw(mechanism):
    for make in (pld_explorer, composition_explorer):
        box = make(mechanism)
        sliders = box.children[0].children
        assert {s.description for s in sliders} >= {"k"}
        fig = box.draw(param=0.5, k=3)
        assert fig.axes and fig.axes[0].get_lines() + list(fig.axes[0].collections) + list(fig.axes[0].patches)
        plt.close("all")


def test_composition_explorer_draws_the_composed_profile():
    fig = composition_explorer("randomized response").draw(param=0.5, k=4)
    line = fig.axes[0].get_lines()[1]
    eps, delta = line.get_data()
    expected = RandomizedResponse(0.5).privacy_loss_distribution().self_compose(4).delta_for_epsilon(eps)
    ok = expected > 0
    np.testing.assert_allclose(delta[ok], expected[ok])
    plt.close("all")


def test_unknown_mechanism():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        pld_explorer("exponential")
