"""A grid PLD is never a bound on the wrong side (issue 25).

Two defects returned a wrong "upper bound" with no error:

1. ``pessimistic`` was read by truthiness, so ``pessimistic=None`` quietly built the optimistic (lower-bound)
   grid – in every grid constructor and ``to_grid``;
2. ``RandomizedResponse(0.5).privacy_loss_distribution().to_grid(1e-300)`` overflowed the integer grid index
   and returned a "pessimistic" PLD with delta(0) = 0 instead of 0.245.

Both fail on the code before the fix.  The property test below checks the promise itself over every grid
constructor: pessimistic delta(eps) >= exact >= optimistic delta(eps), for steps from tiny to huge.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dp_course.mechanisms import LaplaceMechanism, RandomizedResponse
from dp_course.pld import DiscretePLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from strategies import pmf_pairs

# Every way to build a grid PLD, as a function of (value_step, pessimistic).
GRID_CONSTRUCTORS: dict[str, Callable[[float, object], GridPLD]] = {
    "GridPLD": lambda step, pess: GridPLD(0, [0.5, 0.5], step, pessimistic=pess),  # type: ignore[arg-type]
    "GridPLD.from_pld": lambda step, pess: GridPLD.from_pld(GaussianPLD(0.5), step, pess),  # type: ignore[arg-type]
    "GridPLD.from_densities": lambda step, pess: GridPLD.from_densities(
        stats.laplace(0, 1), stats.laplace(1, 1), step, pess),  # type: ignore[arg-type]
    "DiscretePLD.to_grid": lambda step, pess: RandomizedResponse(1.0).privacy_loss_distribution().to_grid(
        step, pess),  # type: ignore[arg-type]
    "GaussianPLD.to_grid": lambda step, pess: GaussianPLD(0.5).to_grid(step, pess),  # type: ignore[arg-type]
    "GridPLD.to_grid": lambda step, pess: GridPLD(0, [0.5, 0.5], 0.1).to_grid(step, pess),  # type: ignore[arg-type]
    "LaplaceMechanism.privacy_loss_distribution": lambda step, pess: LaplaceMechanism(1.0).privacy_loss_distribution(
        step, pess),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("constructor", sorted(GRID_CONSTRUCTORS))
@pytest.mark.parametrize("flag", [None, 0, 1, "yes", "False", 1.0, np.array([True])])
def test_pessimistic_must_be_a_bool(constructor: str, flag: object) -> None:
    """Defect 1: only True or False choose the side of the bound; anything else is refused by name."""
    with pytest.raises(ValueError, match=r"pessimistic must be True or False, got"):
        GRID_CONSTRUCTORS[constructor](0.05, flag)


@pytest.mark.parametrize("constructor", sorted(GRID_CONSTRUCTORS))
def test_numpy_bools_still_choose_the_side(constructor: str) -> None:
    """numpy's bools are bools: np.True_ builds the pessimistic grid, np.False_ the optimistic one."""
    assert GRID_CONSTRUCTORS[constructor](0.05, np.True_).pessimistic is True
    assert GRID_CONSTRUCTORS[constructor](0.05, np.False_).pessimistic is False


def test_tiny_step_is_refused_not_overflowed() -> None:
    """Defect 2: a step of 1e-300 cannot index the loss 1.1 exactly; it is refused, naming value_step."""
    rr = RandomizedResponse(0.5).privacy_loss_distribution()
    exact = rr.delta_for_epsilon(0.0)
    assert exact == pytest.approx(0.2449186624037092, rel=1e-12)  # tanh(1/4), the TV of RR at eps = 0.5
    for pess in (True, False):
        with pytest.raises(ValueError, match=r"value_step must be >= .* got 1e-300"):
            rr.to_grid(1e-300, pess)
    # the smallest steps that are accepted still bound delta(0) from the right side
    for step in (1e-6, 1e-7):
        assert rr.to_grid(step, True).delta_for_epsilon(0.0) >= exact - 1e-15
        assert rr.to_grid(step, False).delta_for_epsilon(0.0) <= exact + 1e-15


@pytest.mark.parametrize("start", [10**400, -(2**60)], ids=["10**400", "-2**60"])
def test_grid_start_beyond_the_exact_indices_is_refused(start: int) -> None:
    with pytest.raises(ValueError, match="start must be"):
        GridPLD(start, [1.0], 0.1)


# --------------------------------------------------------------------------------------------------------
# pessimistic >= exact >= optimistic, over every grid constructor, at extreme steps too
# --------------------------------------------------------------------------------------------------------
EXTREME_STEPS = (1e-300, 1e-6, 3.0, 50.0, 1e6, 1e300)
steps = st.one_of(st.sampled_from(EXTREME_STEPS), st.floats(1e-4, 10.0).map(lambda x: float(f"{x:.3g}")))
"""Grid steps from refused (1e-300) and tiny to absurdly coarse (every loss in one or two buckets).

A step of 1e-6 is only tried on the atomic cases (a few points per atom); a continuous PLD on such a grid is
millions of points, correct but slow for a property test."""


def laplace_delta(eps0: float, eps: float) -> float:
    """Exact delta(eps) of the Laplace mechanism with epsilon eps0: 1 - e^{(eps - eps0)/2} for eps < eps0."""
    return -math.expm1((eps - eps0) / 2.0) if eps < eps0 else 0.0


@st.composite
def exact_cases(draw: st.DrawFn) -> tuple[str, Callable[[float, bool], GridPLD], Callable[[float], float]]:
    """A grid constructor together with the exact delta(eps) of what it discretises."""
    kind = draw(st.sampled_from(["pmfs", "gaussian", "laplace-densities", "grid"]))
    if kind == "pmfs":
        p, q = draw(pmf_pairs(max_size=5))
        exact: PrivacyLossDistribution = DiscretePLD.from_pmfs(p, q)
        return f"from_pmfs({p}, {q})", exact.to_grid, exact.delta_for_epsilon  # type: ignore[return-value]
    if kind == "gaussian":
        g = GaussianPLD(draw(st.floats(1e-3, 4.0)))
        return repr(g), g.to_grid, g.delta_for_epsilon  # type: ignore[return-value]
    if kind == "laplace-densities":
        eps0 = draw(st.floats(0.05, 3.0))
        mech = LaplaceMechanism.from_epsilon(eps0)
        return repr(mech), mech.privacy_loss_distribution, lambda e: laplace_delta(eps0, e)
    # an exact grid PLD re-gridded: its own delta is the exact one
    start = draw(st.integers(-20, 20))
    probs = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6)))
    probs = probs / probs.sum() if probs.sum() > 0 else np.ones(probs.size) / probs.size
    base = GridPLD(start, probs, draw(st.sampled_from([0.01, 0.3])), pessimistic=draw(st.booleans()))
    return repr(base), lambda step, pess: GridPLD.from_pld(base, step, pess), base.delta_for_epsilon


@settings(max_examples=50)
@given(case=exact_cases(), step=steps, eps=st.lists(st.floats(0.0, 8.0), min_size=1, max_size=4))
def test_pessimistic_above_exact_above_optimistic(case, step: float, eps: list[float]) -> None:
    """Every grid constructor brackets the exact delta(eps); a step it cannot use is refused by name."""
    label, build, exact_delta = case
    if step == 1e-6 and label.startswith(("GaussianPLD", "LaplaceMechanism")):
        step = 1e-4
    try:
        upper, lower = build(step, True), build(step, False)
    except ValueError as exc:
        assert "value_step" in str(exc), f"{label}: refused step {step} without naming value_step: {exc}"
        assert step < 1e-5, f"{label}: a usable step {step} was refused: {exc}"
        return
    assert upper.pessimistic and not lower.pessimistic
    for e in eps:
        truth = exact_delta(e)
        hi, lo = upper.delta_for_epsilon(e), lower.delta_for_epsilon(e)
        assert math.isfinite(hi) and math.isfinite(lo), f"{label} at step {step}: delta({e}) = {hi}, {lo}"
        assert hi >= truth - 1e-12, f"{label}: pessimistic grid (step {step}) below the truth at eps={e}"
        assert lo <= truth + 1e-12, f"{label}: optimistic grid (step {step}) above the truth at eps={e}"
