"""The shared parameter checks produce the messages the whole library promises."""

from __future__ import annotations

import numpy as np
import pytest

from dp_course import _validation as v
from dp_course.rdp_accounting import DEFAULT_ORDERS


@pytest.mark.parametrize("call,message", [
    (lambda: v.check_real("epsilon", -1, lo=0, lo_open=True), "epsilon must be > 0, got -1"),
    (lambda: v.check_real("epsilon", float("nan"), lo=0), "epsilon must be a number >= 0, got nan"),
    (lambda: v.check_real("epsilon", float("inf"), lo=0), "epsilon must be finite and >= 0, got inf"),
    (lambda: v.check_real("epsilon", "1", lo=0), "epsilon must be a real number >= 0, got '1' of type str"),
    (lambda: v.check_real("epsilon", True, lo=0), "epsilon must be a real number >= 0, got True"),
    (lambda: v.check_delta(1.0), r"delta must be in \[0, 1\), got 1"),
    (lambda: v.check_delta(-0.5), r"delta must be in \[0, 1\), got -0.5"),
    (lambda: v.check_int("k", 0), "k must be an integer >= 1, got 0"),
    (lambda: v.check_int("k", 2.5), "k must be an integer >= 1, got 2.5"),
    (lambda: v.check_int("k", "3"), "k must be an integer >= 1, got '3'"),
    (lambda: v.check_pmf("p", [0.5, 0.6]), "p must sum to 1 .within 1e-09., got a sum of 1.1"),
    (lambda: v.check_pmf("p", [1.5, -0.5]), r"p must be finite and >= 0, got -0.5 at index 1"),
    (lambda: v.check_pmf("p", [[0.5, 0.5]]), "p must be a 1-dimensional array, got shape"),
    (lambda: v.check_pmf_pair("p", [1.0], "q", [0.5, 0.5]), "p and q must have the same length"),
    (lambda: v.check_rng(3), "rng must be a numpy.random.Generator, e.g. numpy.random.default_rng.0."),
    (lambda: v.check_real_array("x", ["a"]), "x must contain real numbers"),
])
def test_messages(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_conversions():
    assert v.check_real("x", np.float32(0.5)) == 0.5
    assert v.check_real("x", np.array(2.0)) == 2.0
    assert v.check_int("k", 3.0) == 3 and isinstance(v.check_int("k", np.int64(4)), int)
    arr = v.check_real_array("x", [1, 2, 3], lo=0)
    assert arr.dtype == float and arr.tolist() == [1.0, 2.0, 3.0]
    assert v.check_real("x", float("inf"), allow_inf=True) == float("inf")
    rng = np.random.default_rng(0)
    assert v.check_rng(rng) is rng


def test_integers_keep_their_value():
    assert v.check_int("k", 10**20) == 10**20              # exact, not through a float
    assert v.check_int("k", np.float64(1e20)) == 10**20     # an integral float


def test_orders():
    """The orders of every RDP function: None is dp-accounting's default set, a scalar is one order."""
    assert DEFAULT_ORDERS is v.DEFAULT_ORDERS and len(DEFAULT_ORDERS) == 156
    np.testing.assert_array_equal(v.check_orders(None), DEFAULT_ORDERS)
    assert v.check_orders(2).tolist() == [2.0]
    assert v.check_orders([1.5, 64]).tolist() == [1.5, 64.0]
    with pytest.raises(ValueError, match="orders must be finite and > 1, got 1.0 at index 1"):
        v.check_orders([2.0, 1.0])
    with pytest.raises(ValueError, match="alphas must be a 1-dimensional array"):
        v.check_orders([[2.0]], name="alphas")



@pytest.mark.parametrize("value", [None, 0, 1, "True", 1.0, np.array([True])])
def test_check_bool_refuses_truthiness(value):
    """Only True/False (Python or numpy) choose a side: None or 0 must not quietly mean False (issue 25)."""
    with pytest.raises(ValueError, match="pessimistic must be True or False, got"):
        v.check_bool("pessimistic", value)


def test_check_bool_accepts_bools():
    assert v.check_bool("flag", np.True_) is True and v.check_bool("flag", False) is False


@pytest.mark.parametrize("value,message", [
    (10**400, "epsilon must be finite and >= 0, got an integer of 401 digits"),
    (-(10**400), "epsilon must be finite and >= 0, got an integer of 401 digits"),
])
def test_integers_beyond_the_float_range(value, message):
    """float(10**400) raises OverflowError; the checker answers with the parameter's name instead."""
    with pytest.raises(ValueError, match=message):
        v.check_real("epsilon", value, lo=0.0)
    assert v.check_real("x", 10**400, allow_inf=True) == float("inf")
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 of magnitude at most 10\*\*300"):
        v.check_int("k", 10**400)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 of magnitude at most 10\*\*300"):
        v.check_int("k", 1e308)


def test_check_gaussian_mu_without_overflow():
    """mu = (sensitivity / sigma)^2 / 2 as a ratio: sigma = 1e308 gives 0, sigma = 1e-300 is refused by name."""
    assert v.check_gaussian_mu(2.0, 1.0) == 0.125
    assert v.check_gaussian_mu(1e308, 1.0) == 0.0
    assert v.check_gaussian_mu(1e200, 1e100) == pytest.approx(0.5e-200)
    with pytest.raises(ValueError, match="sigma must be large enough .* got sigma = 1e-300"):
        v.check_gaussian_mu(1e-300, 1.0)
