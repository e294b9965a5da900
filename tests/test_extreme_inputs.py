"""The causes of issue 25 one by one: each extreme input gets the right number or a clear, fast refusal.

The fuzz (tests/test_fuzz_public_api.py) checks every public function for *some* acceptable answer; these
tests pin the answer itself where one is known.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dp_course import adaptive, renyi, training, zcdp
from dp_course.pld import GaussianPLD, GridPLD
from dp_course.rdp_accounting import RDPCurve
from dp_course.subsampling import poisson_subsampled_gaussian_rdp


def _rr(history):
    return [0.75, 0.25], [0.25, 0.75]


def test_gaussian_delta_far_beyond_the_loss_is_zero_not_nan():
    """delta(eps) of N(mu, 2 mu) underflows to 0 at huge eps (it was NaN: -inf - -inf)."""
    deltas = GaussianPLD(0.5).delta_for_epsilon(np.array([50.0, 1e160, 1e308]))
    assert deltas.tolist() == [0.0, 0.0, 0.0]


def test_laplace_rdp_at_huge_order_tends_to_epsilon():
    """D_alpha of Laplace(1) rises to eps = 1 as alpha -> inf; at 1e308 it was -inf."""
    values = renyi.laplace_rdp(np.array([1e6, 1e15, 1e308]), 1.0)
    assert np.all(np.isfinite(values)) and np.all(np.diff(values) >= -1e-15)
    assert values[-1] == pytest.approx(1.0, abs=1e-12)


def test_zcdp_delta_at_huge_epsilon_is_zero():
    """zcdp_to_dp_delta at eps >= 1e16 failed inside brentq; delta is 0 to float precision there."""
    for method in ("improved", "bun_steinke"):
        assert zcdp.zcdp_to_dp_delta(0.1, 1e16, method=method) == 0.0
    assert 0.0 < zcdp.zcdp_to_dp_delta(0.1, 2.0) < zcdp.zcdp_to_dp_delta(0.1, 2.0, method="bun_steinke")


def test_gaussian_noise_scales_at_the_float_limits():
    """sigma**2 overflowed at 1e308 and divided by zero at 1e-300."""
    assert zcdp.gaussian_zcdp(1e308) == 0.0 and GaussianPLD.from_mechanism(1e308).mu == 0.0
    assert renyi.gaussian_rdp(2.0, 1e308) == 0.0
    for call in (lambda: zcdp.gaussian_zcdp(1e-300), lambda: GaussianPLD.from_mechanism(1e-300),
                 lambda: renyi.gaussian_rdp(2.0, 1e-300)):
        with pytest.raises(ValueError, match="sigma must be large enough"):
            call()


def test_rdp_curve_names_its_own_parameter():
    with pytest.raises(ValueError, match="epsilons must be >= 0, got nan"):
        RDPCurve([2.0], [math.nan])


@pytest.mark.parametrize("call,match", [
    (lambda: adaptive.composed_map_distribution(_rr, 10**18, 1.0, 0.0), "k must be at most"),
    (lambda: adaptive.transcript_distributions(_rr, 21), "k must be at most 20"),
    (lambda: GaussianPLD(0.5).to_grid(0.01).self_compose(10**18), "k must be"),
    (lambda: GridPLD(0, [0.5, 0.5], 1e-3, tail_mass=0.0).self_compose(10**9), "k = 1000000000 needs"),
    (lambda: poisson_subsampled_gaussian_rdp(0.01, 1.0, [1e18]), "orders must be at most 10000"),
    (lambda: training.gradient_descent(np.ones((4, 2)), np.array([0, 1, 0, 1]), 10**15, 0.1), "steps"),
])
def test_cost_guards_refuse_before_the_work(call, match):
    """Each refusal comes from a cheap estimate of the cost, in well under a second (they used to hang)."""
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 1.0


def test_divergent_training_is_an_error_not_nan():
    """gradient_descent(l2=1e308) returned NaN; now the divergence is reported with its causes."""
    X, y = np.array([[1.0, 0.5], [1.0, -0.5]]), np.array([1, 0])
    with pytest.raises(ValueError, match="diverged .* learning_rate, l2 or noise_scale"):
        training.gradient_descent(X, y, steps=5, learning_rate=0.1, l2=1e308)
    assert np.all(np.isfinite(training.gradient_descent(X, y, steps=5, learning_rate=0.1, l2=0.1)))
