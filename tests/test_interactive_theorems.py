"""The theorems of the concurrent-composition paper, checked exactly on small systems (dp_course.interactive).

* Theorem 1 (approximate DP): the worst interleaving adversary never beats the optimal sequential composition
  bound (Murtagh-Vadhan, dp_course.composition) of the mechanisms' own (eps_i, delta_i).
* Theorem 2 / Corollary 1 (Renyi, zCDP): the worst concurrent Renyi divergence is the *sum* of the
  mechanisms' – ERRATA item 13 (the paper's toy proof concludes e^(eps1 + eps2)).
* Theorem 3: the four-system decomposition, with weights e^eps / (1 + e^eps) – ERRATA item 12 (printed
  e^eps / (1 + eps)); the reduction of Theorem 1's proof to leaky randomized responses.
* Appendix B: private Guess-and-Check is exactly a simulator talking to COMP(A1, A2).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dp_course.composition import murtagh_vadhan_delta
from dp_course.interactive import (Adversary, HiddenStateMechanism, answer_table, best_adversary, concurrent, decompose,
                                   rr_weights, sequential, transcript_distribution, worst_case_delta,
                                   worst_case_epsilon, worst_case_renyi)
from dp_course.interactive.examples import (discrete_laplace_logpmf, discrete_laplace_logsf, guess_and_check_system,
                                            laplace_counter_system, randomized_response_system,
                                            sparse_vector_system, stateless_system, sticky_randomized_response)
from dp_course.rdp_accounting import compose_rdp
from dp_course.renyi import randomized_response_rdp


def random_system(rng, rounds=2, states=2, queries=2, answers=2, concentration=1.0):
    prior = rng.dirichlet(np.ones(states), size=2)
    channel = rng.dirichlet(np.full(answers, concentration), size=(2, states, queries))
    return HiddenStateMechanism(prior, channel, rounds)


def as_dict(dist):
    return {t: (p, q) for t, p, q in zip(dist.transcripts, dist.p, dist.q, strict=True)}


# ---------------------------------------------------------------------------------------------------------
# Theorem 1: never above the sequential composition bound
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_theorem1_interleaving_never_beats_the_sequential_bound(seed):
    """For random stateful mechanisms and any choice of (eps_i, delta_i = delta_i(eps_i)) on their exact
    profiles, the exact worst case over all interleavings is at most the optimal sequential bound."""
    rng = np.random.default_rng(100 + seed)
    m1 = random_system(rng, rounds=2, answers=3, concentration=0.5)
    m2 = random_system(rng, rounds=1, queries=3, concentration=0.5)
    grid = np.linspace(0.0, 3.0, 13)
    con = worst_case_delta(concurrent(m1, m2), grid)
    for e1, e2 in [(0.2, 0.5), (1.0, 1.0), (2.0, 0.3)]:
        d1, d2 = worst_case_delta(m1, e1), worst_case_delta(m2, e2)
        bound = np.array([murtagh_vadhan_delta([e1, e2], t, [d1, d2]) for t in grid])
        assert np.all(con <= bound + 1e-12), f"eps_i = {(e1, e2)}: {con} exceeds the bound {bound}"


def test_theorem1_is_tight_for_randomized_response():
    """One-round randomized responses are the worst (eps_i, 0) mechanisms: concurrent = the bound exactly."""
    eps = [0.5, 1.0, 1.5]
    comp = concurrent(*(randomized_response_system(e, 1) for e in eps))
    for t in (0.0, 0.7, 2.0):
        assert worst_case_delta(comp, t) == pytest.approx(murtagh_vadhan_delta(eps, t), abs=1e-13)


# ---------------------------------------------------------------------------------------------------------
# Theorem 2 and Corollary 1: Renyi additivity (ERRATA 13)
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_theorem2_renyi_of_concurrent_composition_is_the_sum(seed):
    """sup over interleavings of D_alpha(COMP) = sum of the mechanisms' sups, in each direction (the
    exponential moments factorise along every interleaving), and the same for pure DP (alpha = inf)."""
    rng = np.random.default_rng(200 + seed)
    m1, m2 = random_system(rng, rounds=2, states=3), random_system(rng, rounds=2, answers=3)
    alphas = np.array([1.5, 2.0, 4.0, 16.0, np.inf])
    for direction in ("forward", "backward"):
        both = worst_case_renyi(concurrent(m1, m2), alphas, direction)
        one = worst_case_renyi(m1, alphas, direction) + worst_case_renyi(m2, alphas, direction)
        np.testing.assert_allclose(both, one, rtol=1e-10)
    assert worst_case_epsilon(concurrent(m1, m2)) <= worst_case_epsilon(m1) + worst_case_epsilon(m2) + 1e-12


def test_errata13_bound_is_eps1_plus_eps2_not_its_exponential():
    """ERRATA 13: the toy proof of Theorem 2 ends with D_alpha(P||Q) <= e^(eps1 + eps2); the statement (and
    the truth) is eps1 + eps2 = compose_rdp(eps1, eps2), attained by an adversary. The printed value is a
    different number: a test written from the printed proof would fail here."""
    m1, m2 = sticky_randomized_response(1.0, 0.2, 3), randomized_response_system(0.7, 2)
    alpha = 3.0
    e1, e2 = worst_case_renyi(m1, alpha), worst_case_renyi(m2, alpha)
    exact = worst_case_renyi(concurrent(m1, m2), alpha)
    assert exact == pytest.approx(float(compose_rdp([e1], [e2])[0]), rel=1e-11)
    attained = transcript_distribution(best_adversary(concurrent(m1, m2), alpha=alpha), concurrent(m1, m2))
    assert attained.renyi(alpha) == pytest.approx(e1 + e2, rel=1e-10)
    assert abs(exact - math.exp(e1 + e2)) > 1.0


def test_theorem2_is_exact_per_direction_only():
    """Issue 22 item 9: "Renyi DP adds exactly" holds per direction. A one-shot channel (0.6, 0.4)/(0.2, 0.8)
    and its mirror (inputs swapped) are worst in opposite directions: worst-case D_2 = ln 2 = 0.6931 each, but
    their concurrent composition has worst case ln 2 + ln(5/3) = 1.2040 in both directions, not 2 ln 2 = 1.3863."""
    law0, law1 = np.array([0.6, 0.4]), np.array([0.2, 0.8])
    channel = stateless_system(np.array([[law0], [law1]]), rounds=1)
    mirror = stateless_system(np.array([[law1], [law0]]), rounds=1)
    assert worst_case_renyi(channel, 2.0) == pytest.approx(math.log(2), rel=1e-12)
    assert worst_case_renyi(mirror, 2.0) == pytest.approx(math.log(2), rel=1e-12)
    assert worst_case_renyi(channel, 2.0, "backward") == pytest.approx(math.log(5 / 3), rel=1e-12)
    both = concurrent(channel, mirror)
    for direction in ("forward", "backward"):
        assert worst_case_renyi(both, 2.0, direction) == pytest.approx(math.log(10 / 3), rel=1e-12)
    assert worst_case_renyi(both, 2.0) == pytest.approx(1.2039728043, rel=1e-9)
    assert worst_case_renyi(both, 2.0) < 2 * math.log(2) - 0.18


def test_truncated_sparse_vector_is_not_pure_dp():
    """Issue 22 item 9: truncating the threshold noise to [-R, R] breaks pure DP. A query at the window's edge
    (worth R = 9 and R - 1 = 8, threshold 0, epsilon = 1, c = 1) asked n times gives pure-DP epsilon exactly n –
    beyond the untruncated 3 epsilon from n = 4 on – with delta(3 epsilon) about 1.1e-5; away from the edge
    (a wider window) the same queries stay within 3 epsilon."""
    for n_queries in (1, 3, 6, 10, 14):
        edge = sparse_vector_system(1.0, 1, n_queries, [[9, 8]], threshold=0)
        assert worst_case_epsilon(edge) == pytest.approx(n_queries, rel=1e-12)
        delta = worst_case_delta(edge, 3.0)
        if n_queries <= 3:
            assert delta == pytest.approx(0.0, abs=1e-15)
        else:
            assert delta == pytest.approx(1.0837229614840625e-05, rel=1e-9)
    wide = sparse_vector_system(1.0, 1, 14, [[9, 8]], threshold=0, threshold_range=40)
    assert worst_case_epsilon(wide) <= 3.0


def test_corollary1_zcdp_adds():
    """A rho_i-zCDP mechanism has D_alpha <= alpha rho_i for all alpha; the composition's smallest rho (the
    sup of D_alpha / alpha over a grid of orders) is at most rho_1 + rho_2."""
    m1, m2 = sticky_randomized_response(0.8, 0.1, 3), randomized_response_system(0.5, 2)
    alphas = np.geomspace(1.01, 200, 60)
    rho = [float(np.max(worst_case_renyi(m, alphas) / alphas)) for m in (m1, m2)]
    rho_comp = float(np.max(worst_case_renyi(concurrent(m1, m2), alphas) / alphas))
    assert rho_comp <= rho[0] + rho[1] + 1e-12
    assert rho[1] - 1e-12 <= 0.5 ** 2 / 2 * 2          # eps-DP => eps^2/2-zCDP, two rounds (Bun-Steinke 3.5)


def test_sticky_randomized_response_renyi_grows_to_one_coin():
    """Answers that copy one hidden coin reveal at most that coin: D_alpha grows with the rounds towards
    randomized response's at eps (data processing), never above it."""
    alpha, eps = 2.0, 1.0
    values = [worst_case_renyi(sticky_randomized_response(eps, 0.3, n), alpha) for n in range(1, 9)]
    assert all(b > a for a, b in itertools.pairwise(values))
    assert values[-1] < randomized_response_rdp(alpha, eps)


# ---------------------------------------------------------------------------------------------------------
# Theorem 3: the four-system decomposition (ERRATA 12)
# ---------------------------------------------------------------------------------------------------------

def _leak_mechanism(leak=0.1):
    keep = 1 / (1 + math.e)
    ch = np.zeros((2, 2, 3))
    ch[0, 0, :2], ch[1, 0, :2] = (1 - keep, keep), (keep, 1 - keep)
    ch[0, 1] = (leak, 0.0, 1 - leak)
    ch[1, 1] = (0.0, leak, 1 - leak)
    return stateless_system(ch, 2, ("rr", "reveal"), ("0", "1", "nothing"))


@pytest.mark.parametrize("make", [_leak_mechanism, lambda: sticky_randomized_response(1.0, 0.2, 2),
                                  lambda: random_system(np.random.default_rng(7), rounds=2, answers=3)])
@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_theorem3_decomposition_reproduces_every_interaction(make, eps):
    """With delta = the exact delta(eps): M^b = delta E^b + (1 - delta)(a N^b + (1 - a) N^(1-b)),
    a = e^eps / (1 + e^eps), as tables and as transcript laws of several adversaries; the (1 - delta) part is
    (eps, 0)-indistinguishable; a smaller delta has no decomposition."""
    mech = make()
    delta = worst_case_delta(mech, eps)
    dec = decompose(mech, eps, delta)
    np.testing.assert_allclose(dec.mixture_table(), answer_table(mech), atol=1e-8)
    assert worst_case_delta(dec.pure_part(), eps) <= 1e-8
    w_leak, w_same, w_other = dec.weights
    for adv in (best_adversary(mech, epsilon=eps), best_adversary(mech, alpha=2.0)):
        target = as_dict(transcript_distribution(adv, mech))
        parts = [as_dict(transcript_distribution(adv, s)) for s in (dec.leak, dec.core)]
        for t, (p, q) in target.items():
            e, n = parts[0].get(t, (0.0, 0.0)), parts[1].get(t, (0.0, 0.0))
            assert p == pytest.approx(w_leak * e[0] + w_same * n[0] + w_other * n[1], abs=1e-8)
            assert q == pytest.approx(w_leak * e[1] + w_same * n[1] + w_other * n[0], abs=1e-8)
    if delta > 1e-6:
        with pytest.raises(ValueError, match=r"not \(epsilon, delta\)-indistinguishable"):
            decompose(mech, eps, 0.9 * delta)


def test_errata12_weights_are_e_eps_over_one_plus_e_eps():
    """ERRATA 12: the randomized-response weights are e^eps/(1+e^eps) and 1/(1+e^eps) (they sum to 1).  The
    printed e^eps/(1+eps) makes the three weights sum to more than 1 and the mixture does not reproduce M^b."""
    eps, mech = 1.0, sticky_randomized_response(1.0, 0.2, 2)
    dec = decompose(mech, eps, worst_case_delta(mech, eps))
    assert sum(rr_weights(eps, 0.1)) == pytest.approx(1.0, abs=1e-15)
    assert rr_weights(eps, 0.0)[1] == pytest.approx(math.e / (1 + math.e), abs=1e-15)
    printed = dec.delta * dec.leak.table + (1 - dec.delta) * (
        math.e / (1 + eps) * dec.core.table + 1 / (1 + math.e) * dec.core.table[::-1])
    assert np.max(np.abs(printed - answer_table(mech))) > 0.1
    assert np.max(np.abs(dec.mixture_table() - answer_table(mech))) < 1e-8


def test_decomposition_of_randomized_response_by_hand():
    """Randomized response at eps with delta = 0: N^b is the point mass on b (F(.|0) = (e^eps P - Q)/(e^eps-1))."""
    dec = decompose(randomized_response_system(1.2, 1), 1.2, 0.0)
    np.testing.assert_allclose(dec.core.table[:, 0, :], [[1.0, 0.0], [0.0, 1.0]], atol=1e-9)


def test_theorem1_proof_reduction_to_leaky_randomized_responses():
    """Theorem 1's proof: IT(A : M1^b, M2^b) is the mixture, over the outcomes of two independent leaky
    randomized responses, of IT(A : B1, B2) with B_i = E_i^b (weight delta_i), N_i^b or N_i^(1-b) – checked
    transcript by transcript for the best interleaving adversary (deterministic, so its own factor is 1)."""
    m1, m2 = _leak_mechanism(0.1), sticky_randomized_response(1.0, 0.2, 1)
    decs = [decompose(m, e, worst_case_delta(m, e)) for m, e in ((m1, 0.8), (m2, 0.6))]
    comp = concurrent(m1, m2)
    target = transcript_distribution(best_adversary(comp, epsilon=1.0), comp)
    for t, p, q in zip(target.transcripts, target.p, target.q, strict=True):
        own = [[(x, y) for i, x, y in t if i == j] for j in range(2)]
        mixed = np.zeros(2)                    # (under b = 0, under b = 1)
        for parts in itertools.product(range(3), repeat=2):
            term = np.ones(2)
            for dec, h, part in zip(decs, own, parts, strict=True):
                laws = np.exp((dec.leak if part == 0 else dec.core).log_history_probs(h))  # rows: b = 0, 1
                term *= dec.weights[part] * (laws[::-1] if part == 2 else laws)     # part 2: the other bit
            mixed += term
        assert mixed == pytest.approx([p, q], abs=1e-8), f"transcript {t}"


# ---------------------------------------------------------------------------------------------------------
# Appendix B: Guess-and-Check = a simulator talking to COMP(A1, A2)
# ---------------------------------------------------------------------------------------------------------

def test_discrete_laplace_helpers():
    k = np.arange(-400, 401)
    for scale in (0.5, 2.0, 7.0):
        pmf = np.exp(discrete_laplace_logpmf(k, scale))
        assert pmf.sum() == pytest.approx(1.0, abs=1e-13)
        for t in (-3, 0, 1, 5):
            assert math.exp(discrete_laplace_logsf(t, scale)) == pytest.approx(pmf[k >= t].sum(), rel=1e-12)


def test_laplace_counter_and_sparse_vector_privacy():
    """c answers with DLap(c/eps) noise are exactly eps-DP on sensitivity-1 queries (clamping cannot hurt);
    on these three short queries the truncated single-threshold SVT stays below the continuous version's 3 eps
    (with more queries at the window's edge it does not: test_truncated_sparse_vector_is_not_pure_dp)."""
    for eps, c in [(0.5, 1), (1.0, 2), (1.0, 3)]:
        counter = laplace_counter_system(eps, c, [[0, 1], [2, 1]], -3, 4)
        assert worst_case_epsilon(counter) == pytest.approx(eps, rel=1e-12)
    svt = sparse_vector_system(1.0, 2, 3, [[0, 1], [1, 0], [2, 3], [3, 3]], threshold=1)
    assert 0 < worst_case_epsilon(svt) <= 3.0


def test_guess_and_check_is_a_simulation_of_comp_a1_a2():
    """Theorem 5's proof, exactly: for an adaptive analyst, the transcript law of Guess-and-Check equals that
    of the simulator (query A1; after 'above' ask A2 for the value) on COMP(A1, A2), mapped back; hence its
    epsilon is at most eps(A1) + eps(A2)."""
    eps, c, rounds, tol, low, high = 1.0, 2, 3, 1, 0, 5
    funcs = [(2, 3), (1, 1)]                                                 # values on input 0 and input 1
    menu = [(0, 5), (0, 2), (0, 3), (1, 1)]                                  # (function, guess)
    rows = [(*funcs[f], tau) for f, tau in menu]
    alg = guess_and_check_system(eps, c, rounds, rows, tol, low, high)
    a1 = sparse_vector_system(eps, c, rounds, [[abs(a - t), abs(b - t)] for a, b, t in rows], threshold=tol)
    a2 = laplace_counter_system(eps, c, funcs, low, high)

    def analyst(replies):
        """Start with f0 at guess 5; after WRONG v re-check f0 at the closer of 2 and 3; after PASS ask f1."""
        if not replies:
            return 0
        if len(replies) == rounds or replies[-1][1] == "HALTED":
            return None
        q, reply = replies[-1]
        if reply == "PASS":
            return 3 if menu[q][0] == 0 else 1
        v = int(reply.split()[1])
        return 1 if abs(v - 2) <= abs(v - 3) else 2

    def direct(t):
        nxt = analyst([(x, alg.answers[y]) for _, x, y in t])
        return None if nxt is None else (0, nxt)

    def replies_of(t):
        out, pending = [], None
        for i, x, y in t:
            if i == 0 and a1.answers[y] == "above":
                pending = x
            elif i == 0:
                out.append((x, "PASS" if a1.answers[y] == "below" else "HALTED"))
            else:
                out.append((pending, f"WRONG {a2.answers[y]}"))
                pending = None
        return out, pending

    def simulator(t):
        replies, pending = replies_of(t)
        if pending is not None:
            return (1, menu[pending][0])
        nxt = analyst(replies)
        return None if nxt is None else (0, nxt)

    d = transcript_distribution(Adversary(direct), alg)
    s = transcript_distribution(Adversary(simulator), concurrent(a1, a2))
    law_d = {tuple((x, alg.answers[y]) for _, x, y in t): (p, q)
             for t, p, q in zip(d.transcripts, d.p, d.q, strict=True)}
    law_s: dict = {}
    for t, p, q in zip(s.transcripts, s.p, s.q, strict=True):
        key = tuple(replies_of(t)[0])
        law_s[key] = tuple(np.add(law_s.get(key, (0.0, 0.0)), (p, q)))
    assert set(law_d) == set(law_s)
    for key, pq in law_d.items():
        assert law_s[key] == pytest.approx(pq, abs=1e-15)
    assert d.epsilon() <= worst_case_epsilon(a1) + worst_case_epsilon(a2) + 1e-12
    small = sparse_vector_system(eps, c, rounds, [[0, 1], [3, 2]], threshold=tol)     # all interleavings
    both = concurrent(small, laplace_counter_system(eps, c, funcs[:1], low, high))
    assert worst_case_epsilon(both) == pytest.approx(worst_case_epsilon(small) + worst_case_epsilon(a2))


def test_sequential_order_is_a_restriction():
    """A sequential composition of one-round mechanisms lets the adversary adapt just as much: same value."""
    m = [randomized_response_system(e, 1) for e in (0.4, 0.9)]
    assert worst_case_delta(sequential(*m), 0.3) == pytest.approx(worst_case_delta(concurrent(*m), 0.3))
