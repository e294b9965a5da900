"""Tests for dp_course.calibration: the inverses of Theorem 1.1, of the optimal composition and of the Gaussian
mechanism's privacy profile.  Each answer is checked by plugging it back into the forward function, against a
closed form computed here, and against the orderings the theory promises."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy import stats

from dp_course import calibration
from dp_course.calibration import (
    advanced_composition_per_step_epsilon,
    gaussian_sigma,
    optimal_composition_per_step_epsilon,
)
from dp_course.composition import advanced_composition, optimal_composition_delta


@pytest.mark.parametrize("eps_total, k, delta_prime", [(1.0, 1, 1e-6), (1.0, 100, 1e-6), (0.1, 10_000, 1e-9),
                                                        (10.0, 50, 1e-3), (500.0, 20, 1e-6), (1.0, 10**6, 1e-6)])
def test_advanced_inverse_round_trip(eps_total, k, delta_prime):
    eps = advanced_composition_per_step_epsilon(eps_total, k, delta_prime)
    assert advanced_composition(eps, 0.0, k, delta_prime)[0] == pytest.approx(eps_total, rel=1e-12)


def test_advanced_inverse_small_epsilon_limit():
    """For small eps, tanh(eps/2) ~ eps/2 and the equation is the quadratic eps sqrt(2kL) + k eps^2 / 2 = total,
    whose positive root is typed in here (the neglected eps^3 terms are below 1e-12 relative)."""
    k, total, log_inv = 10**6, 1.0, math.log(1e6)
    root = (-math.sqrt(2 * k * log_inv) + math.sqrt(2 * k * log_inv + 2 * k * total)) / k
    assert advanced_composition_per_step_epsilon(total, k, 1e-6) == pytest.approx(root, rel=1e-9)
    assert root < total / math.sqrt(2 * k * log_inv)          # the drift term costs ~2 % at this k


@pytest.mark.parametrize("eps_total, delta_total, k", [(1.0, 1e-6, 1), (1.0, 1e-6, 100), (2.0, 1e-5, 1000),
                                                        (0.5, 1e-3, 10), (5.0, 1e-8, 30)])
def test_optimal_inverse_round_trip_and_orderings(eps_total, delta_total, k):
    """At the answer the exact KOV delta equals the target; basic and Theorem 1.1 allow less per step."""
    eps = optimal_composition_per_step_epsilon(eps_total, delta_total, k)
    assert optimal_composition_delta(eps, 0.0, k, eps_total) == pytest.approx(delta_total, rel=1e-9)
    assert eps >= eps_total / k
    assert eps >= advanced_composition_per_step_epsilon(eps_total, k, delta_total) * (1 - 1e-12)
    assert optimal_composition_delta(eps * (1 + 1e-6), 0.0, k, eps_total) > delta_total


def test_optimal_inverse_one_step_by_hand():
    """k = 1: randomized response at eps0 has delta(eps) = (e^eps0 - e^eps)/(1 + e^eps0); solved for eps0."""
    eps_total, delta_total = 1.0, 1e-6
    # (e^a - e^1) = d (1 + e^a)  =>  e^a = (e + d) / (1 - d)
    expected = math.log((math.e + delta_total) / (1 - delta_total))
    assert optimal_composition_per_step_epsilon(eps_total, delta_total, 1) == pytest.approx(expected, rel=1e-12)


def _gaussian_delta(eps, sigma, sensitivity):
    """Balle & Wang (2018), Theorem 8, typed in here with scipy's normal CDF."""
    a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


@pytest.mark.parametrize("eps, delta, sensitivity", [(1.0, 1e-5, 1.0), (0.1, 1e-6, 1.0), (3.0, 1e-3, 2.5),
                                                      (0.5, 1e-10, 10.0), (20.0, 1e-6, 1.0)])
def test_gaussian_sigma_closed_form(eps, delta, sensitivity):
    sigma = gaussian_sigma(eps, delta, sensitivity)
    assert _gaussian_delta(eps, sigma, sensitivity) == pytest.approx(delta, rel=1e-8)
    assert _gaussian_delta(eps, sigma * (1 - 1e-6), sensitivity) > delta            # the smallest such sigma
    assert gaussian_sigma(eps, delta, 1.0) * sensitivity == pytest.approx(sigma, rel=1e-12)


def test_gaussian_sigma_below_the_classical_calibration():
    """The classical sigma = sqrt(2 ln(1.25/delta))/eps (Dwork & Roth, Thm A.1, eps < 1) is valid, so never
    smaller than the exact one."""
    for eps in [0.05, 0.3, 0.9]:
        for delta in [1e-3, 1e-6, 1e-9]:
            assert gaussian_sigma(eps, delta) <= math.sqrt(2 * math.log(1.25 / delta)) / eps


def test_gaussian_sigma_reference_value():
    """Reference (Balle & Wang 2018, Table/Fig. 1 regime): eps = 1, delta = 1e-5 needs sigma ~ 3.7306."""
    assert gaussian_sigma(1.0, 1e-5) == pytest.approx(3.730631634815928, rel=1e-9)


@pytest.mark.parametrize("call, name", [
    (lambda: advanced_composition_per_step_epsilon(0.0, 10, 1e-6), "epsilon_total"),
    (lambda: advanced_composition_per_step_epsilon(1.0, 0, 1e-6), "k"),
    (lambda: advanced_composition_per_step_epsilon(1.0, 10, 0.0), "delta_prime"),
    (lambda: optimal_composition_per_step_epsilon(float("nan"), 1e-6, 10), "epsilon_total"),
    (lambda: optimal_composition_per_step_epsilon(1.0, 1.0, 10), "delta_total"),
    (lambda: optimal_composition_per_step_epsilon(1.0, 1e-6, 2.5), "k"),
    (lambda: gaussian_sigma(-1.0, 1e-6), "epsilon"),
    (lambda: gaussian_sigma(1.0, 0.0), "delta"),
    (lambda: gaussian_sigma(1.0, 1e-6, 0.0), "sensitivity"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()


def test_inverses_are_monotone_in_k():
    ks = [1, 10, 100, 1000]
    adv = [advanced_composition_per_step_epsilon(1.0, k, 1e-6) for k in ks]
    opt = [optimal_composition_per_step_epsilon(1.0, 1e-6, k) for k in ks]
    assert np.all(np.diff(adv) < 0) and np.all(np.diff(opt) < 0)


def test_docstring_examples():
    """The examples in the module's docstrings run and give the values shown."""
    result = doctest.testmod(calibration, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
