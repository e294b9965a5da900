"""One invariant suite run over every kind of privacy loss distribution (in the spirit of scipy.stats' tests).

Every test takes the ``pld_kind`` fixture (tests/conftest.py), so it runs once per kind in
``strategies.PLD_KINDS`` - exact finite, Gaussian, pessimistic and optimistic grids of both, and grids of
continuous densities - on PLDs drawn by hypothesis.  The invariants hold for every PLD of every pair:

* the cdf is a distribution function (non-decreasing, in [0, 1], 1 at +inf);
* delta(eps) is the expectation of (1 - e^(eps - L))_+ over the law, non-increasing in eps and convex in
  e^eps, starts at the total variation of the pair and ends at the atom at +inf;
* composing is convolving: the cdf of ``a.compose(b)`` is ``E[cdf_b(x - L_a)]``, and ``self_compose(3)``
  equals composing three times;
* ``epsilon_for_delta`` inverts ``delta_for_epsilon`` (conservatively, and not more than needed);
* ``sample`` draws from the cdf (DKW bound).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import dp_course.pld as pld_module
from dp_course.pld import AtomicPLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from strategies import PLD_KINDS, pld_cases

# The suite draws many PLDs per kind; a quarter of the profile's examples per test keeps it at a few seconds.
SUITE = settings(max_examples=max(10, settings.default.max_examples // 4))

ATOL = 1e-11
"""Rounding allowance on probabilities (sums of up to ~10^4 terms, FFT round-off ~1e-17 per point)."""


def _points(pld: PrivacyLossDistribution, n: int = 61) -> np.ndarray:
    """Loss values that avoid the atoms: midpoints between atoms (spread over the support) and the ends."""
    if isinstance(pld, AtomicPLD):
        losses = np.asarray(pld.losses)
        if losses.size == 0:
            return np.array([-1.0, 0.5, 1.0])
        mids = 0.5 * (losses[1:] + losses[:-1])
        if mids.size > n:
            mids = mids[np.linspace(0, mids.size - 1, n).astype(int)]
        return np.concatenate([[losses[0] - 1.0], mids, [losses[-1] + 1.0]])
    assert isinstance(pld, GaussianPLD)
    sd = max(pld.std, 1e-3)
    return np.linspace(pld.mu - 6 * sd, pld.mu + 6 * sd, n) + 1e-3 * sd   # off 0 for the point mass


def _eps_range(pld: PrivacyLossDistribution) -> float:
    """An epsilon beyond which delta is (nearly) flat: past the largest finite loss."""
    if isinstance(pld, AtomicPLD):
        top = float(pld.losses[-1]) if pld.losses.size else 0.0
    else:
        assert isinstance(pld, GaussianPLD)
        top = pld.mu + 6 * pld.std
    return min(max(top, 0.0) + 1.0, 50.0)


def _convolution_cdf(a: PrivacyLossDistribution, b: PrivacyLossDistribution, x: np.ndarray) -> np.ndarray:
    """P(L_a + L_b <= x) from the two laws, without the library's composition code."""
    if isinstance(a, AtomicPLD):
        # sum over the atoms of a of P(L_a = l) P(L_b <= x - l); the atom of a at +inf never counts
        if a.losses.size == 0:
            return np.zeros(x.shape)
        cdf_b = np.asarray(b.cdf((x[:, None] - np.asarray(a.losses)[None, :]).ravel())).reshape(x.size, -1)
        return cdf_b @ a.probs
    assert isinstance(a, GaussianPLD) and isinstance(b, GaussianPLD)
    mu = a.mu + b.mu          # N(mu_a, 2 mu_a) * N(mu_b, 2 mu_b) = N(mu_a + mu_b, 2 (mu_a + mu_b))
    if mu == 0:
        return (x >= 0).astype(float)
    return np.asarray(stats.norm.cdf(x, loc=mu, scale=math.sqrt(2 * mu)))


def test_every_pld_class_is_in_the_suite() -> None:
    """Each concrete PLD class exported by dp_course.pld is drawn by at least one kind of the suite."""
    classes = {obj for name in pld_module.__all__ if isinstance(obj := getattr(pld_module, name), type)
               and issubclass(obj, PrivacyLossDistribution) and not getattr(obj, "__abstractmethods__", None)}
    assert classes, "dp_course.pld exports no concrete PLD class"
    missing = classes - set(PLD_KINDS.values())
    assert not missing, f"add a kind for {sorted(c.__name__ for c in missing)} to strategies.PLD_KINDS"


@SUITE
@given(data=st.data())
def test_kind_draws_its_class(pld_kind: str, data: st.DataObject) -> None:
    """The strategy of each kind produces the class PLD_KINDS promises (so the suite tests what it says)."""
    case = data.draw(pld_cases(pld_kind))
    assert type(case.pld) is PLD_KINDS[pld_kind]
    if pld_kind.startswith("grid-"):
        assert isinstance(case.pld, GridPLD)
        assert case.pld.pessimistic == (case.tv_slack == 0.0)


@SUITE
@given(data=st.data())
def test_cdf_is_a_distribution_function(pld_kind: str, data: st.DataObject) -> None:
    """The cdf is non-decreasing, within [0, 1], and reaches 1 at +inf (the atom at +inf included)."""
    case = data.draw(pld_cases(pld_kind))
    pld = case.pld
    x = np.sort(np.concatenate([_points(pld), np.asarray(pld.losses) if isinstance(pld, AtomicPLD) else []]))
    c = np.asarray(pld.cdf(x))
    assert np.all((c >= 0.0) & (c <= 1.0)), f"{case.label}: cdf outside [0, 1]"
    assert np.all(np.diff(c) >= -ATOL), f"{case.label}: cdf decreases"
    assert pld.cdf(math.inf) == pytest.approx(1.0, abs=1e-12), f"{case.label}: cdf(+inf) != 1"
    assert c[-1] <= 1.0 - pld.infinity_mass + ATOL, f"{case.label}: finite losses carry the atom at +inf"


@SUITE
@given(data=st.data())
def test_delta_is_nonincreasing_and_convex_in_exp_epsilon(pld_kind: str, data: st.DataObject) -> None:
    """delta(eps) = E[(1 - e^eps e^-L)_+] is an average of convex, non-increasing functions of t = e^eps."""
    case = data.draw(pld_cases(pld_kind))
    pld = case.pld
    t = np.linspace(1.0, math.exp(_eps_range(pld)), 401)
    d = np.asarray(pld.delta_for_epsilon(np.log(t)))
    assert np.all(np.diff(d) <= ATOL), f"{case.label}: delta increases"
    assert np.all(np.diff(d, 2) >= -ATOL), f"{case.label}: delta is not convex in e^eps"
    assert np.all(d >= pld.infinity_mass - ATOL), f"{case.label}: delta below the atom at +inf"
    assert pld.delta_for_epsilon(math.inf) == pld.infinity_mass


def _delta_from_law(pld: PrivacyLossDistribution, eps: float) -> float:
    """E[(1 - e^(eps - L))_+] summed (atoms) or integrated (Gaussian) in plain floating point."""
    if isinstance(pld, AtomicPLD):
        losses = np.asarray(pld.losses)
        return pld.infinity_mass + float(np.sum(pld.probs * np.clip(-np.expm1(eps - losses), 0.0, None)))
    assert isinstance(pld, GaussianPLD)
    if pld.mu == 0:
        return 0.0
    law = stats.norm(pld.mu, pld.std)
    value, _ = integrate.quad(lambda loss: -math.expm1(eps - loss) * law.pdf(loss), eps, math.inf, epsabs=1e-14,
                              epsrel=1e-12, limit=200)
    return float(value)


@SUITE
@given(data=st.data(), eps=st.floats(0.0, 6.0))
def test_delta_is_the_expectation_over_the_law(pld_kind: str, data: st.DataObject, eps: float) -> None:
    """delta(eps) = P(L = inf) + E[(1 - e^(eps - L))_+ ; L finite], from the atoms or the density."""
    case = data.draw(pld_cases(pld_kind))
    assert case.pld.delta_for_epsilon(eps) == pytest.approx(_delta_from_law(case.pld, eps), rel=1e-9, abs=1e-12), \
        case.label


@SUITE
@given(data=st.data())
def test_delta_at_zero_is_total_variation(pld_kind: str, data: st.DataObject) -> None:
    """delta(0) = sum_y (P(y) - Q(y))_+ = TV(P, Q); an optimistic grid may lie below by its rounding."""
    case = data.draw(pld_cases(pld_kind))
    d0 = case.pld.delta_for_epsilon(0.0)
    assert case.tv - case.tv_slack - 1e-10 <= d0 <= case.tv + 1e-10, \
        f"{case.label}: delta(0) = {d0!r}, total variation {case.tv!r} (slack {case.tv_slack:g})"


@SUITE
@given(data=st.data())
def test_composition_is_convolution(pld_kind: str, data: st.DataObject) -> None:
    """cdf of a.compose(b) at x is E[cdf_b(x - L_a)] (the losses of independent runs add)."""
    a = data.draw(pld_cases(pld_kind), label="a")
    grid = a.pld if isinstance(a.pld, GridPLD) else None
    b = data.draw(pld_cases(pld_kind, value_step=grid.value_step if grid else None,
                            pessimistic=grid.pessimistic if grid else None), label="b")
    composed = a.pld.compose(b.pld)
    assert type(composed) is type(a.pld)
    x = _points(composed)
    np.testing.assert_allclose(composed.cdf(x), _convolution_cdf(a.pld, b.pld, x), rtol=0, atol=ATOL,
                               err_msg=f"{a.label} with {b.label}")
    expected_inf = 1.0 - (1.0 - a.pld.infinity_mass) * (1.0 - b.pld.infinity_mass)
    assert composed.infinity_mass == pytest.approx(expected_inf, abs=1e-14)


@SUITE
@given(data=st.data())
def test_self_compose_is_repeated_compose(pld_kind: str, data: st.DataObject) -> None:
    """self_compose(3) (binomial law, FFT power, closed form) equals composing three times."""
    case = data.draw(pld_cases(pld_kind))
    pld = case.pld
    fast, slow = pld.self_compose(3), pld.compose(pld).compose(pld)
    eps = np.linspace(0.0, 3 * _eps_range(pld), 31)
    np.testing.assert_allclose(fast.delta_for_epsilon(eps), slow.delta_for_epsilon(eps), rtol=1e-9, atol=ATOL,
                               err_msg=case.label)


@SUITE
@given(data=st.data())
def test_epsilon_for_delta_inverts_delta(pld_kind: str, data: st.DataObject) -> None:
    """The returned epsilon meets the target delta and no smaller epsilon does (targets inside the range)."""
    case = data.draw(pld_cases(pld_kind))
    pld = case.pld
    d0, inf = float(pld.delta_for_epsilon(0.0)), pld.infinity_mass
    for f in (0.1, 0.5, 0.9):
        target = inf + f * (d0 - inf)
        if target <= 1e-300 or d0 - inf <= 1e-12:
            continue
        eps = float(pld.epsilon_for_delta(target))
        assert math.isfinite(eps) and eps >= 0.0
        assert pld.delta_for_epsilon(eps) <= target * (1 + 1e-9) + 1e-15, f"{case.label}: eps too small"
        if eps > 0:
            assert pld.delta_for_epsilon(eps * (1 - 1e-6)) > target * (1 - 1e-12), f"{case.label}: eps too large"
    if inf > 0:
        assert pld.epsilon_for_delta(inf / 2) == math.inf


@SUITE
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_sample_follows_cdf(pld_kind: str, data: st.DataObject, seed: int) -> None:
    """Empirical cdf of 50,000 seeded draws within 0.02 of the cdf everywhere.

    DKW: P(sup_x |F_n(x) - F(x)| > t) <= 2 exp(-2 n t^2) = 2 e^-40 ~ 8.5e-18 per example.
    """
    case = data.draw(pld_cases(pld_kind))
    pld, n = case.pld, 50_000
    draws = np.sort(pld.sample(n, np.random.default_rng(seed)))
    assert draws.shape == (n,)
    x = _points(pld)
    empirical = np.searchsorted(draws, x, side="right") / n
    assert np.max(np.abs(empirical - np.asarray(pld.cdf(x)))) < 0.02, case.label
    assert abs(np.mean(np.isposinf(draws)) - pld.infinity_mass) < 0.02
