"""The causes of issue 25 one by one: each extreme input gets the right number or a clear, fast refusal.

The fuzz (tests/test_fuzz_public_api.py) checks every public function for *some* acceptable answer; these
tests pin the answer itself where one is known.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dp_course import adaptive, composition, dpsgd, plotting, renyi, training, widgets, zcdp
from dp_course import interactive as ia
from dp_course.interactive import examples as ex
from dp_course.interactive import optimal
from dp_course.pld import GaussianPLD, GridPLD
from dp_course.rdp_accounting import RDPCurve
from dp_course.subsampling import poisson_subsampled_gaussian_rdp, poisson_subsampled_rdp_bound


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


# ---------------------------------------------------------------------------------------------------------
# second round of issue 25: the cases the fuzz listed as known failures, pinned with their right answers
# ---------------------------------------------------------------------------------------------------------

def test_optimal_composition_refuses_a_composed_loss_beyond_the_floats():
    """k epsilon = 5e308 overflowed to inf inside the PLD, whose error named "losses", not epsilon."""
    with pytest.raises(ValueError, match=r"epsilon must be at most 3\.59539e\+307 for k = 5"):
        composition.optimal_composition_delta(1e308, 0.0, 5, 1.0)
    assert composition.optimal_composition_delta(3e307, 0.0, 5, 1.0) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("method", ["bun_steinke", "improved"])
def test_scenario2_sigma_at_the_float_limits_is_the_closed_form(method):
    """sigma = (B/n) sqrt(T / (2 rho)): epsilon = 1e-300 divided by zero (rho underflowed) and a sensitivity of
    1e308 overflowed in B**2.  Bun-Steinke: sqrt(rho) = eps / (sqrt(L + eps) + sqrt(L)) in closed form."""
    log_inv_delta = -math.log(1e-5)
    tiny = dpsgd.scenario2_gaussian_sigma(1e-300, 1e-5, 10, 100, 1.0, True, "bun_steinke")
    assert tiny == pytest.approx(0.01 * math.sqrt(5.0) * 2.0 * math.sqrt(log_inv_delta) / 1e-300, rel=1e-12)
    one = dpsgd.scenario2_gaussian_sigma(1.0, 1e-5, 10, 100, 1.0, True, method)
    assert dpsgd.scenario2_gaussian_sigma(1.0, 1e-5, 10, 100, 1e308, True, method) == pytest.approx(one * 1e308,
                                                                                                     rel=1e-12)
    with pytest.raises(ValueError, match="beyond the float range .* epsilon = 1e-300"):
        dpsgd.scenario2_gaussian_sigma(1e-300, 1e-5, 10**18, 1, 1e10, True, "bun_steinke")


def test_zcdp_rho_for_dp_at_the_float_limits():
    """epsilon**2 overflowed at 1e308; the improved search started at ln(0) for epsilon = 1e-300."""
    assert zcdp.zcdp_rho_for_dp(1e308, 1e-5) == pytest.approx(1e308, rel=1e-12)
    assert zcdp.zcdp_rho_for_dp(1e308, 1e-5, "improved") == pytest.approx(1e308, rel=1e-12)
    # at a tiny epsilon the improved conversion still allows the rho whose delta(0) is already 1e-5
    rho = zcdp.zcdp_rho_for_dp(1e-300, 1e-5, "improved")
    assert rho > 1e-11 and zcdp.zcdp_to_dp_epsilon(rho, 1e-5) <= 1e-300
    assert rho == pytest.approx(zcdp.zcdp_rho_for_dp(1e-20, 1e-5, "improved"), rel=1e-9)


def test_decompose_refuses_an_epsilon_whose_exponential_overflows():
    rr = ex.randomized_response_system(1.0, 1)
    for eps in (1e308, 10**18, 710.0):
        with pytest.raises(ValueError, match=r"epsilon must be in \(0, 709\.78"):
            ia.decompose(rr, eps, 0.0)


@pytest.mark.parametrize("call,match", [
    (lambda: ex.sparse_vector_system(1e-300, 1, 2, [[0, 1], [1, 0]]), "epsilon = 1e-300 is too small"),
    (lambda: ex.sparse_vector_system(1e-6, 1, 2, [[0, 1], [1, 0]]), "epsilon = 1e-06 is too small"),
    (lambda: ex.guess_and_check_system(1e-300, 1, 2, [[0, 1, 0]], 1, -2, 3), "epsilon = 1e-300 is too small"),
    (lambda: ex.sparse_vector_system(1.0, 1, 2, [[0, 1]], threshold_range=10**18), "threshold_range = 10+"),
    (lambda: ex.laplace_counter_system(1.0, 1, [[0, 1]], -2, 10**18), "low .. high must span"),
    (lambda: ex.guess_and_check_system(1.0, 1, 2, [[0, 1, 0]], 1, -2, 10**18), "low .. high must span"),
    (lambda: ex.laplace_counter_system(1.0, 1, [[0, 1]], 10**18, 3), "low < high, got low = 10+, high = 3"),
    (lambda: ia.worst_case_delta(ex.randomized_response_system(1.0, 40), 1.0), "max_states = 2000000"),
    (lambda: ia.worst_case_renyi(ia.concurrent(*[ex.randomized_response_system(1.0, 7)] * 3), 2.0),
     "max_states = 2000000"),
])
def test_size_guards_of_the_interactive_systems(call, match):
    """Refused by name from the arguments (MemoryError, an unnamed parameter or > 20 s before)."""
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 1.0


def _reference_state_count(system) -> int:
    """States of the programme by brute force: every combination of histories reachable through allowed actions
    and answers possible under one of the inputs (answer_pmfs, the public laws)."""
    comp = ia.as_composition(system)
    seen, todo = set(), [tuple(() for _ in comp.mechanisms)]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        for i in comp.allowed(state):
            m = comp.mechanisms[i]
            for x in range(m.n_queries):
                pmfs = m.answer_pmfs(state[i], x)
                for y in np.flatnonzero((pmfs > 0).any(axis=0)):
                    todo.append(state[:i] + (state[i] + ((x, int(y)),),) + state[i + 1:])
    return len(seen)


SVT = ex.sparse_vector_system(1.0, 2, rounds=3, query_values=[[0, 1], [1, 0], [2, 3]], threshold=1)
GNC = ex.guess_and_check_system(1.0, 1, 3, [[0, 1, 0], [2, 3, 1]], 1, -2, 3)


@pytest.mark.parametrize("system", [
    SVT, GNC, ex.sticky_randomized_response(1.0, 0.2, 4), ia.concurrent(SVT, ex.randomized_response_system(1.0, 2)),
    ia.sequential(GNC, SVT), ex.laplace_counter_system(1.0, 2, [[0, 1], [1, 1]], -2, 3),
    ia.decompose(ex.randomized_response_system(1.0, 2), 1.0, 0.4).pure_part(),
    ia.FunctionMechanism(lambda b, h, x: [1.0, 0.0] if len(h) and h[-1][1] == 0 else [0.5, 0.5], ("a",),
                         ("0", "1"), 4),
], ids=["svt", "gnc", "sticky", "svt+rr", "gnc;svt", "counter", "table", "function"])
def test_state_count_bound_is_exact_for_halting_and_other_systems(system):
    """The cheap bound behind the early refusal counts exactly the states the programme visits for the lecture's
    systems (halting ones included), so it refuses nothing the programme could do."""
    assert optimal.state_count_bound(system) == _reference_state_count(system)


def test_callables_returning_junk_are_refused_by_name():
    with pytest.raises(ValueError, match=r"fn\(orders\) must return real numbers"):
        RDPCurve.from_function(lambda a: "not a number", [2.0, 3.0])
    with pytest.raises(ValueError, match=r"fn\(orders\) must be >= 0, got nan"):
        RDPCurve.from_function(lambda a: a * math.nan, [2.0, 3.0])
    with pytest.raises(ValueError, match=r"rdp\(orders\) must return real numbers .* got None"):
        poisson_subsampled_rdp_bound(lambda a: None, 0.1, [2.0])


def test_integer_parameters_refuse_fractions():
    """2.5 steps or bins was truncated silently; a history of 0.5s was read as query 0, answer 0."""
    for call, name in ((lambda: widgets.dpsgd_explorer(steps=2.5), "steps"),
                       (lambda: plotting.plot_pld(GaussianPLD(0.5).to_grid(0.01), bins=2.5), "bins"),
                       (lambda: ex.randomized_response_system(1.0, 2).log_history_probs([(0.5, 0.5)]), "history")):
        with pytest.raises(ValueError, match=name):
            call()


@pytest.mark.parametrize("rho", [1e31, 1e40, 1e59, 1e200, 1e308])
def test_improved_zcdp_epsilon_at_huge_rho_is_never_zero(rho):
    """The improved conversion's root finder returned NaN beyond rho ~ 1e36, and max(0, NaN) made it an epsilon
    of 0 - a wrong bound with no error.  Up there the improved value is the Bun-Steinke one to float precision."""
    eps = zcdp.zcdp_to_dp_epsilon(rho, 1e-5)
    assert eps == zcdp.zcdp_to_dp_epsilon(rho, 1e-5, method="bun_steinke") and rho <= eps < math.inf
