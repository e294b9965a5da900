"""Lecture 05, Exercise 4 (issue 22): the exact Gaussian privacy profile and calibration, checked from outside.

The exercise's test cells hold hard-coded expected values (lecture rule 10). This file checks those numbers and the
reference solution independently:

* every expected value pasted into the test cells (visible and hidden) is recomputed here with mpmath at 50 digits;
* the reference solution agrees with mpmath at seeded random points off any grid, over the ranges the exercise
  text names (epsilon up to 1000, ln delta down to -5000);
* the reference solution agrees with dp-accounting's analytic Gaussian privacy loss where delta is a float
  (aligned points: the same epsilon on both sides; atol 1e-14 on delta), and the sigma it calibrates meets the
  target according to dp-accounting's profile;
* where delta is a float, the library's ``gaussian_sigma`` gives the same sigma (the library is worth nothing in
  the exercise only because every test cell goes beyond delta = 1e-308).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_mechanism as dpa_mechanism
from scipy import optimize, special

from dp_course.calibration import gaussian_sigma

import _notebooks as nbs

LECTURE = "05_renyi_zcdp"
PROFILE_TESTS = ("ex4a_values", "ex4a_large_epsilon")
SIGMA_TESTS = ("ex4b_values", "ex4b_extremes")


def _solution_namespace() -> dict[str, Any]:
    """The reference answers of Exercise 4 (the solution cells, solution markers removed), with the setup's names."""
    nb = nbs.read_source(LECTURE)
    answers = nbs.answer_cells(nb)
    namespace: dict[str, Any] = {"np": np, "special": special, "optimize": optimize}
    for grade_id in ("ex4a_profile", "ex4b_sigma"):
        exec(nbs.python_source(answers[grade_id].source), namespace)        # noqa: S102 - our own notebook
    return namespace


@pytest.fixture(scope="module")
def solution() -> dict[str, Any]:
    return _solution_namespace()


def _mp_log_delta(epsilon: float, sigma: float, sensitivity: float) -> mpmath.mpf:
    """ln delta(epsilon) of the Gaussian mechanism, from the closed form at 50 digits (no cancellation there)."""
    with mpmath.workdps(50):
        eps, sig, sens = mpmath.mpf(epsilon), mpmath.mpf(sigma), mpmath.mpf(sensitivity)
        first = mpmath.ncdf(sens / (2 * sig) - eps * sig / sens)
        second = mpmath.exp(eps) * mpmath.ncdf(-sens / (2 * sig) - eps * sig / sens)
        return mpmath.log(first - second)


def _mp_sigma(epsilon: float, kappa: float, sensitivity: float, start: float) -> mpmath.mpf:
    """The sigma with ln delta(epsilon) = -kappa, refined at 50 digits from a float starting point."""
    with mpmath.workdps(50):
        x0 = mpmath.log(mpmath.mpf(start) / sensitivity)

        def excess(log_sigma: mpmath.mpf) -> mpmath.mpf:
            return _mp_log_delta(epsilon, mpmath.exp(log_sigma), 1.0) + kappa

        root = mpmath.findroot(excess, (x0 - mpmath.mpf("1e-6"), x0 + mpmath.mpf("1e-6")), solver="illinois")
        return mpmath.exp(root) * sensitivity


def _pasted_cases(grade_id: str) -> list[tuple[float, ...]]:
    """Every tuple of four numbers in a test cell (visible and hidden): the hard-coded (inputs..., expected)."""
    cell = nbs.test_cells(nbs.read_source(LECTURE))[grade_id]
    cases = []
    for node in ast.walk(ast.parse(nbs.python_source(cell.source))):
        if isinstance(node, ast.Tuple) and len(node.elts) == 4:
            try:
                values = tuple(float(ast.literal_eval(e)) for e in node.elts)
            except ValueError:
                continue
            cases.append(values)
    return cases


@pytest.mark.parametrize("grade_id", PROFILE_TESTS)
def test_pasted_profile_values_match_mpmath(grade_id: str) -> None:
    cases = _pasted_cases(grade_id)
    assert len(cases) >= 3, f"{grade_id}: expected the cell's table of hard-coded cases, found {cases}"
    for epsilon, sigma, sensitivity, expected in cases:
        exact = float(_mp_log_delta(epsilon, sigma, sensitivity))
        assert expected == pytest.approx(exact, rel=1e-15), (grade_id, epsilon, sigma, sensitivity)


@pytest.mark.parametrize("grade_id", SIGMA_TESTS)
def test_pasted_sigma_values_match_mpmath(grade_id: str) -> None:
    cases = _pasted_cases(grade_id)
    assert len(cases) >= 3, f"{grade_id}: expected the cell's table of hard-coded cases, found {cases}"
    for epsilon, kappa, sensitivity, expected in cases:
        exact = _mp_sigma(epsilon, kappa, sensitivity, expected)
        assert expected == pytest.approx(float(exact), rel=1e-15), (grade_id, epsilon, kappa, sensitivity)
        # and it is the boundary: ln delta at the pasted sigma is -kappa to the digits a float carries
        assert float(_mp_log_delta(epsilon, expected, sensitivity)) == pytest.approx(-kappa, rel=1e-13)


def _random_profile_points(seed: int, count: int) -> list[tuple[float, float, float]]:
    """Seeded (epsilon, sigma, sensitivity) with epsilon in [0, 1000] and ln delta in [-5000, -0.01]."""
    rng = np.random.default_rng(seed)
    points: list[tuple[float, float, float]] = []
    while len(points) < count:
        epsilon = float(np.exp(rng.uniform(np.log(1e-6), np.log(1000.0))))
        sigma = float(np.exp(rng.uniform(np.log(0.01), np.log(100.0))))
        sensitivity = float(np.exp(rng.uniform(np.log(0.1), np.log(10.0))))
        log_delta = float(_mp_log_delta(epsilon, sigma, sensitivity))
        # s = sensitivity/sigma below 1e-2 loses digits in any float log-space formula (the two terms agree to
        # many digits there); the exercise's tests stay above it, and so does this check
        if -5000.0 <= log_delta <= -0.01 and sensitivity / sigma >= 1e-2:
            points.append((epsilon, sigma, sensitivity))
    return points


def test_reference_profile_matches_mpmath_off_grid(solution: dict[str, Any]) -> None:
    profile: Callable[..., Any] = solution["gaussian_log_profile"]
    for epsilon, sigma, sensitivity in _random_profile_points(seed=20261127, count=40):
        got = float(profile(epsilon, sigma, sensitivity))
        assert got == pytest.approx(float(_mp_log_delta(epsilon, sigma, sensitivity)), rel=1e-11), (
            epsilon, sigma, sensitivity)


def test_reference_sigma_matches_mpmath_off_grid(solution: dict[str, Any]) -> None:
    calibrate: Callable[..., Any] = solution["calibrate_gaussian_sigma"]
    rng = np.random.default_rng(5)
    for _ in range(15):
        epsilon = float(np.exp(rng.uniform(np.log(0.01), np.log(1000.0))))
        kappa = float(np.exp(rng.uniform(np.log(0.5), np.log(5000.0))))
        sensitivity = float(np.exp(rng.uniform(np.log(0.1), np.log(10.0))))
        got = calibrate(epsilon, kappa, sensitivity)
        exact = _mp_sigma(epsilon, kappa, sensitivity, got)
        assert got == pytest.approx(float(exact), rel=1e-12), (epsilon, kappa, sensitivity)


@pytest.mark.parametrize("sigma, sensitivity", [(1.0, 1.0), (0.37, 1.0), (2.5, 0.8), (7.3, 3.1), (0.9, 2.0)])
def test_reference_profile_matches_dp_accounting(solution: dict[str, Any], sigma: float, sensitivity: float) -> None:
    """The same epsilons on both sides (no grid: dp-accounting's GaussianPrivacyLoss is analytic)."""
    epsilons = np.array([0.0, 0.013, 0.5 * math.sqrt(2), 1.0, math.pi, 7.77, 20.0])
    ours = np.exp(np.asarray(solution["gaussian_log_profile"](epsilons, sigma, sensitivity), dtype=float))
    theirs = np.asarray(dpa_mechanism.GaussianPrivacyLoss(sigma, sensitivity=sensitivity)
                        .get_delta_for_epsilon(epsilons), dtype=float)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("epsilon, delta, sensitivity", [(1.0, 1e-5, 1.0), (0.1, 1e-6, 2.0), (5.0, 1e-3, 1.0),
                                                         (20.0, 1e-10, 0.5), (0.7, 1e-100, 1.0)])
def test_reference_sigma_meets_the_target_by_dp_accounting(solution: dict[str, Any], epsilon: float, delta: float,
                                                           sensitivity: float) -> None:
    sigma = solution["calibrate_gaussian_sigma"](epsilon, math.log(1 / delta), sensitivity)
    loss = dpa_mechanism.GaussianPrivacyLoss(sigma, sensitivity=sensitivity)
    assert loss.get_delta_for_epsilon(epsilon) == pytest.approx(delta, rel=1e-9)
    # and the library's calibration, where delta is a float, is the same sigma
    assert gaussian_sigma(epsilon, delta, sensitivity) == pytest.approx(sigma, rel=1e-10)
