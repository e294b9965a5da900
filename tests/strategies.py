"""Hypothesis strategies shared by the library tests (import them: ``from strategies import pmf_pairs``).

Test modules never import from each other; what several of them draw lives here.  Each strategy says what it
draws and why its edge cases are there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from scipy import stats

from dp_course.mechanisms import LaplaceMechanism
from dp_course.pld import DiscretePLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from reference import total_variation

__all__ = [
    "pmf",
    "pmf_pairs",
    "weight_lists",
    "normalise",
    "bad_epsilons",
    "bad_deltas",
    "bad_ks",
    "PLDCase",
    "PLD_KINDS",
    "GRID_STEPS",
    "gaussian_tv",
    "pld_cases",
]


# --------------------------------------------------------------------------------------------------------
# probability vectors
# --------------------------------------------------------------------------------------------------------

@st.composite
def pmf(draw: st.DrawFn, n: int) -> np.ndarray:
    """A pmf on n outcomes; about a third of the entries are exactly 0 (at least one entry stays > 0)."""
    w = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-4, 1.0), st.floats(1e-4, 1.0)),
                               min_size=n, max_size=n)))
    if w.sum() == 0:
        w[draw(st.integers(0, n - 1))] = 1.0
    return w / w.sum()


@st.composite
def pmf_pairs(draw: st.DrawFn, min_size: int = 1, max_size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Two pmfs over the same 1..8 outcomes (zeros included: outcomes one of them never produces)."""
    n = draw(st.integers(min_size, max_size))
    return draw(pmf(n)), draw(pmf(n))


weight_lists = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6).filter(lambda v: sum(v) > 0.1)
"""1 to 6 nonnegative weights with a total above 0.1 (turn them into a pmf with :func:`normalise`)."""


def normalise(v: list[float] | np.ndarray) -> np.ndarray:
    """Weights divided by their sum."""
    a = np.asarray(v, float)
    return a / a.sum()


# --------------------------------------------------------------------------------------------------------
# bad input: every public function must answer these with a ValueError naming the parameter
# --------------------------------------------------------------------------------------------------------

bad_epsilons = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.just(float("nan")),
                         st.text(max_size=3), st.none(), st.just(True))
"""Not an epsilon: negative, NaN, text, None, a bool."""

bad_deltas = st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(float("nan")),
                       st.text(max_size=3), st.none())
"""Not a delta in [0, 1): negative, >= 1, NaN, text, None."""

bad_ks = st.one_of(st.integers(max_value=0), st.floats(0.1, 10).filter(lambda x: not x.is_integer()),
                   st.just(float("nan")), st.text(max_size=2), st.just(True))
"""Not a number of compositions >= 1: zero or negative, fractional, NaN, text, a bool."""


# --------------------------------------------------------------------------------------------------------
# privacy loss distributions of every kind, with the total variation of the pair behind them
# --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PLDCase:
    """A PLD and what is known about the pair of distributions ``(P, Q)`` behind it.

    Attributes:
        pld: the privacy loss distribution.
        tv: the total variation distance of ``(P, Q)``, which is ``delta(0)`` of the exact PLD.
        tv_slack: how far below ``tv`` the PLD's ``delta(0)`` may lie (an optimistic grid rounds every loss
            down by less than one step, which lowers ``delta(0)`` by less than ``e^step - 1``); 0 otherwise.
        label: how it was made (shown by hypothesis when a property fails).
    """

    pld: PrivacyLossDistribution
    tv: float
    tv_slack: float
    label: str


PLD_KINDS: dict[str, type[PrivacyLossDistribution]] = {
    "discrete": DiscretePLD,
    "gaussian": GaussianPLD,
    "grid-pessimistic": GridPLD,
    "grid-optimistic": GridPLD,
    "grid-densities": GridPLD,
}
"""Every kind of PLD the invariant suite runs over, and the class each kind produces."""

GRID_STEPS = (1e-2, 2.5e-3)
"""Grid steps drawn for the grid kinds (coarse enough to keep the suite fast)."""


def gaussian_tv(mu: float) -> float:
    """TV of N(0, s^2) and N(D, s^2) with mu = D^2/(2 s^2): 2 Phi(D/(2s)) - 1 = erf(sqrt(mu)/2)."""
    return math.erf(math.sqrt(mu) / 2.0)


@st.composite
def pld_cases(draw: st.DrawFn, kind: str, value_step: float | None = None,
              pessimistic: bool | None = None) -> PLDCase:
    """A PLD of the given kind (see :data:`PLD_KINDS`).

    ``value_step`` and ``pessimistic`` fix the grid of the grid kinds (to draw two PLDs that compose);
    otherwise they are drawn.

    * ``discrete``: the exact PLD of a random pair of pmfs on 1-5 outcomes (zeros included, so atoms at
      ``+inf`` and outcomes without ``P``-mass occur);
    * ``gaussian``: ``N(mu, 2 mu)`` with mu from 0 (the point mass) to 8;
    * ``grid-pessimistic`` / ``grid-optimistic``: one of the two above put on a grid;
    * ``grid-densities``: the Laplace or Gaussian pair discretised by ``GridPLD.from_densities`` (either
      direction).
    """
    if kind not in PLD_KINDS:
        raise ValueError(f"kind must be one of {sorted(PLD_KINDS)}, got {kind!r}")
    if kind == "discrete":
        p, q = draw(pmf_pairs(max_size=5))
        return PLDCase(DiscretePLD.from_pmfs(p, q), total_variation(p, q), 0.0, f"from_pmfs({p}, {q})")
    if kind == "gaussian":
        mu = draw(st.one_of(st.just(0.0), st.floats(1e-3, 8.0)))
        return PLDCase(GaussianPLD(mu), gaussian_tv(mu), 0.0, f"GaussianPLD({mu})")
    step = value_step if value_step is not None else draw(st.sampled_from(GRID_STEPS))
    if kind == "grid-densities":
        pess = pessimistic if pessimistic is not None else draw(st.booleans())
        slack = 0.0 if pess else math.expm1(step)
        if draw(st.booleans()):
            mech = LaplaceMechanism.from_epsilon(draw(st.floats(0.05, 3.0)))
            tv = -math.expm1(-mech.epsilon / 2)  # 1 - e^{-eps/2}
            return PLDCase(mech.privacy_loss_distribution(step, pess), tv, slack,
                           f"{mech}.privacy_loss_distribution({step}, {pess})")
        sigma = draw(st.floats(0.3, 5.0))
        grid = GridPLD.from_densities(stats.norm(0.0, sigma), stats.norm(1.0, sigma), value_step=step,
                                      pessimistic=pess)
        return PLDCase(grid, gaussian_tv(1.0 / (2 * sigma**2)), slack,
                       f"from_densities(N(0, {sigma}^2), N(1, {sigma}^2), {step}, {pess})")
    pess = kind == "grid-pessimistic"
    exact = draw(st.sampled_from(["discrete", "gaussian"]))
    base = draw(pld_cases(exact))
    return PLDCase(base.pld.to_grid(step, pess), base.tv, 0.0 if pess else math.expm1(step),
                   f"{base.label}.to_grid({step}, {pess})")
