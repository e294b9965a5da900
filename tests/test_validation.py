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

