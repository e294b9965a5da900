"""One vocabulary: every analysis accepts the frozen mechanism descriptions of dp_course.mechanisms.

The RDP, zCDP, subsampling and DP-SGD functions take a description wherever they take the mechanism (as
dp-accounting's events feed all its accountants); the numeric signatures keep working and give the same
numbers.  Cross-checked against dp-accounting's own events for the same mechanisms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given
from hypothesis import strategies as st

from dp_course.divergences import renyi_divergence
from dp_course.dpsgd import dpsgd_delta, dpsgd_epsilon, dpsgd_epsilon_and_order, dpsgd_rdp
from dp_course.mechanisms import (MECHANISMS, GaussianMechanism, KaryRandomizedResponse, LaplaceMechanism,
                                  NameAndShame, RandomizedResponse, noise_multiplier)
from dp_course.rdp_accounting import DEFAULT_ORDERS, RDPCurve
from dp_course.renyi import gaussian_rdp, laplace_rdp, mechanism_rdp, randomized_response_rdp
from dp_course.zcdp import gaussian_zcdp, pure_dp_to_zcdp
from dp_course.subsampling import poisson_subsampled_gaussian_rdp, poisson_subsampled_rdp_bound

ORDERS = np.array(DEFAULT_ORDERS)
INT_ORDERS = ORDERS[np.round(ORDERS) == ORDERS]
ALPHAS = np.array([1.0, 1.5, 2.0, 3.0, 7.5, 32.0, np.inf])

DESCRIPTIONS = [
    RandomizedResponse(0.7),
    KaryRandomizedResponse(1.2, 5),
    LaplaceMechanism(scale=2.0, sensitivity=3.0),
    GaussianMechanism(sigma=1.5, sensitivity=2.0),
    NameAndShame(0.05),
    NameAndShame(0.0),
]


# --------------------------------------------------------------------------------------------------------
# RDP of a description
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mech", [m for m in DESCRIPTIONS if not isinstance(m, (LaplaceMechanism, GaussianMechanism))],
                         ids=repr)
def test_mechanism_rdp_is_the_renyi_divergence_of_the_pair(mech):
    """For pmf mechanisms the RDP is max(D_alpha(P||Q), D_alpha(Q||P)) of the pair the description names
    (binary randomized response too, whose closed form is checked this way)."""
    p, q = mech.output_distributions()
    expected = np.maximum(renyi_divergence(p, q, ALPHAS), renyi_divergence(q, p, ALPHAS))
    np.testing.assert_allclose(mechanism_rdp(ALPHAS, mech), expected, rtol=1e-12, atol=1e-15)


def test_mechanism_rdp_uses_the_closed_forms():
    g, lap, rr = GaussianMechanism(1.5, 2.0), LaplaceMechanism(2.0, 3.0), RandomizedResponse(0.7)
    np.testing.assert_array_equal(mechanism_rdp(ALPHAS, g), gaussian_rdp(ALPHAS, 1.5, 2.0))
    np.testing.assert_array_equal(mechanism_rdp(ALPHAS, lap), laplace_rdp(ALPHAS, 2.0, 3.0))
    np.testing.assert_array_equal(mechanism_rdp(ALPHAS, rr), randomized_response_rdp(ALPHAS, 0.7))
    assert mechanism_rdp(2.0, g) == pytest.approx(2.0 * 4.0 / (2 * 1.5**2), rel=1e-15)   # alpha D^2/(2 s^2)
    assert isinstance(mechanism_rdp(2.0, KaryRandomizedResponse(1.0, 3)), float)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_kary_with_two_categories_is_binary_randomized_response(eps):
    """k = 2 is binary randomized response: the pmf route and the closed form agree."""
    np.testing.assert_allclose(mechanism_rdp(ALPHAS, KaryRandomizedResponse(eps, 2)),
                               mechanism_rdp(ALPHAS, RandomizedResponse(eps)), rtol=1e-12, atol=1e-15)


def test_name_and_shame_is_not_rdp():
    """A record released with probability delta > 0 is never hidden: D_alpha = inf for alpha >= 1."""
    assert np.all(np.isinf(mechanism_rdp(ALPHAS, NameAndShame(0.05))))
    np.testing.assert_array_equal(mechanism_rdp(ALPHAS, NameAndShame(0.0)), 0.0)


@pytest.mark.parametrize("mech", DESCRIPTIONS, ids=repr)
def test_rdp_curve_from_mechanism(mech):
    curve = RDPCurve.from_mechanism(mech)
    np.testing.assert_array_equal(curve.orders, ORDERS)
    np.testing.assert_array_equal(curve.epsilons, mechanism_rdp(ORDERS, mech))
    np.testing.assert_array_equal(RDPCurve.from_mechanism(mech, orders=[2, 5]).orders, [2.0, 5.0])


def test_curve_constructors_accept_their_description():
    assert RDPCurve.gaussian(GaussianMechanism(1.5, 2.0)).epsilons.tolist() == \
        RDPCurve.gaussian(1.5, 2.0).epsilons.tolist()
    assert RDPCurve.laplace(LaplaceMechanism(2.0, 3.0)).epsilons.tolist() == \
        RDPCurve.laplace(2.0, 3.0).epsilons.tolist()
    assert RDPCurve.randomized_response(RandomizedResponse(0.7)).epsilons.tolist() == \
        RDPCurve.randomized_response(0.7).epsilons.tolist()


@pytest.mark.parametrize("mech,event", [
    (GaussianMechanism(sigma=3.0, sensitivity=2.0), dp_event.GaussianDpEvent(1.5)),
    (LaplaceMechanism(scale=2.0, sensitivity=1.0), dp_event.LaplaceDpEvent(2.0)),
    # dp-accounting's k-ary response answers uniformly over all k with probability p; ours is that mixture
    # with p = k / (k - 1 + e^eps) (ERRATA item 14: the eps-DP k-ary response, not "truth or uniform" at the
    # slide's probability)
    (KaryRandomizedResponse(1.0, 4), dp_event.RandomizedResponseDpEvent(4 / (3 + math.e), 4)),
    (RandomizedResponse(0.5), dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(0.5)), 2)),
])
@pytest.mark.parametrize("count", [1, 50])
def test_descriptions_match_dp_accounting_events(mech, event, count):
    """The same mechanism named both ways: equal epsilon and optimal order (integer orders, improved
    conversion), composed `count` times."""
    acc = dpa_rdp.RdpAccountant(orders=list(INT_ORDERS), neighboring_relation=dpa_rdp.NeighborRel.REPLACE_ONE)
    acc.compose(dp_event.SelfComposedDpEvent(event, count))
    theirs = acc.get_epsilon_and_optimal_order(1e-6)
    ours = (count * RDPCurve.from_mechanism(mech, INT_ORDERS)).epsilon_and_order(1e-6)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-9)
    assert ours[1] == theirs[1]


# --------------------------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------------------------

def test_zcdp_of_descriptions():
    assert gaussian_zcdp(GaussianMechanism(1.5, 2.0)) == gaussian_zcdp(1.5, 2.0) == pytest.approx(4 / 4.5)
    for mech in (RandomizedResponse(0.7), KaryRandomizedResponse(0.7, 3), LaplaceMechanism.from_epsilon(0.7)):
        assert pure_dp_to_zcdp(mech) == pytest.approx(0.5 * 0.7**2, rel=1e-15)


@pytest.mark.parametrize("call,match", [
    (lambda: pure_dp_to_zcdp(GaussianMechanism(1.0)), "epsilon must be a number or a pure-DP mechanism"),
    (lambda: pure_dp_to_zcdp(NameAndShame(0.1)), "epsilon must be a number or a pure-DP mechanism"),
    (lambda: gaussian_zcdp(LaplaceMechanism(1.0)), "sigma must be a number or a GaussianMechanism"),
    (lambda: gaussian_zcdp(GaussianMechanism(1.0), sensitivity=2.0), "sensitivity must be left out"),
    (lambda: gaussian_rdp(2.0, GaussianMechanism(1.0), 3.0), "sensitivity must be left out"),
    (lambda: laplace_rdp(2.0, GaussianMechanism(1.0)), "scale must be a number or a LaplaceMechanism"),
    (lambda: randomized_response_rdp(2.0, KaryRandomizedResponse(1.0, 3)),
     "epsilon must be a number or a RandomizedResponse, got .*mechanism_rdp"),
    (lambda: mechanism_rdp(2.0, "gaussian"), "mechanism must be a description from dp_course.mechanisms"),
    (lambda: mechanism_rdp(0.5, RandomizedResponse(1.0)), "alpha must be"),
    (lambda: RDPCurve.from_mechanism(3.0), "mechanism must be a description"),
])
def test_wrong_description_is_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------------------------------------
# subsampling and DP-SGD
# --------------------------------------------------------------------------------------------------------

def test_noise_multiplier():
    assert GaussianMechanism(sigma=3.0, sensitivity=2.0).noise_multiplier == 1.5
    assert noise_multiplier(GaussianMechanism(sigma=3.0, sensitivity=2.0)) == 1.5
    assert noise_multiplier(1.1) == 1.1
    with pytest.raises(ValueError, match="sigma must be a noise multiplier > 0 or a GaussianMechanism"):
        noise_multiplier(LaplaceMechanism(1.0))
    with pytest.raises(ValueError, match="sigma must be > 0, got -1"):
        noise_multiplier(-1)


def test_subsampled_gaussian_accepts_the_mechanism():
    mech = GaussianMechanism(sigma=2.2, sensitivity=2.0)          # noise multiplier 1.1
    np.testing.assert_array_equal(poisson_subsampled_gaussian_rdp(0.01, mech),
                                  poisson_subsampled_gaussian_rdp(0.01, 1.1))
    assert poisson_subsampled_gaussian_rdp(0.01, mech, 8.0) == poisson_subsampled_gaussian_rdp(0.01, 1.1, 8.0)


@pytest.mark.parametrize("q", [0.0, 0.003, 0.2, 1.0])
def test_subsampled_bound_accepts_a_description(q):
    """A description in place of the RDP callable gives the same bound; for the Gaussian it is exact."""
    orders = np.arange(2.0, 40.0)
    g = GaussianMechanism(sigma=1.3)
    np.testing.assert_allclose(poisson_subsampled_rdp_bound(g, q, orders),
                               poisson_subsampled_gaussian_rdp(q, 1.3, orders), rtol=1e-12, atol=1e-300)
    lap = LaplaceMechanism.from_epsilon(0.8)
    np.testing.assert_array_equal(poisson_subsampled_rdp_bound(lap, q, orders),
                                  poisson_subsampled_rdp_bound(lambda a: laplace_rdp(a, lap), q, orders))
    assert np.all(np.isinf(poisson_subsampled_rdp_bound(NameAndShame(0.1), 0.5, orders)))


def test_subsampled_bound_rejects_other_things():
    with pytest.raises(ValueError, match="rdp must be a callable .* or a mechanism description"):
        poisson_subsampled_rdp_bound(3.0, 0.1, [2.0])


@given(st.floats(0.001, 1.0), st.floats(0.3, 20.0), st.floats(0.1, 10.0), st.integers(0, 5000))
def test_dpsgd_accepts_the_gaussian_mechanism(q, noise, clip, steps):
    """DP-SGD with noise N(0, (noise * clip)^2) on clipped gradients (sensitivity clip) is the accountant at
    noise multiplier `noise`, whichever way the noise is named."""
    mech = GaussianMechanism(sigma=noise * clip, sensitivity=clip)
    multiplier = mech.noise_multiplier
    orders = INT_ORDERS[:20]
    np.testing.assert_array_equal(dpsgd_rdp(q, mech, steps, orders).epsilons,
                                  dpsgd_rdp(q, multiplier, steps, orders).epsilons)
    assert dpsgd_epsilon_and_order(q, mech, steps, 1e-5, orders) == \
        dpsgd_epsilon_and_order(q, multiplier, steps, 1e-5, orders)
    assert dpsgd_epsilon(q, mech, steps, 1e-5, orders) == dpsgd_epsilon(q, multiplier, steps, 1e-5, orders)
    assert dpsgd_delta(q, mech, steps, 2.0, orders) == dpsgd_delta(q, multiplier, steps, 2.0, orders)


def test_dpsgd_reference_value_through_the_description():
    """The DP-SGD reference (issue #3: q = 0.01, sigma = 1.1, 1000 steps, delta = 1e-5 -> 1.71177)."""
    assert dpsgd_epsilon(0.01, GaussianMechanism(sigma=1.1), 1000, 1e-5) == pytest.approx(1.71177, rel=1e-4)


def test_dpsgd_rejects_other_mechanisms():
    with pytest.raises(ValueError, match="sigma must be a noise multiplier > 0 or a GaussianMechanism"):
        dpsgd_epsilon(0.01, LaplaceMechanism(1.0), 100, 1e-5)


def test_every_description_is_covered():
    """Each description class appears in the tables above (a new mechanism must be added to the analyses)."""
    assert {type(m) for m in DESCRIPTIONS} == set(MECHANISMS)
