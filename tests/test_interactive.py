"""Interactive mechanisms, transcripts and the worst adversary (dp_course.interactive).

References: hand computations for tiny systems (fractions, written out below); randomized response through
dp_course.pld (binomial law) and dp_course.renyi (Mironov's closed form); brute force over every deterministic
adversary of a two-round system; the library's own invariants (probabilities sum to 1, the DP value is
attained by the adversary it returns and never beaten by another one).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dp_course.interactive import (Adversary, FunctionMechanism, HiddenStateMechanism, TableMechanism, answer_table,
                                   best_adversary, concurrent, describe_transcript, fixed_adversary, sequential,
                                   transcript_distribution, worst_case_delta, worst_case_epsilon, worst_case_renyi)
from dp_course.interactive.examples import (randomized_response_system, stateless_system,
                                            sticky_randomized_response)
from dp_course.mechanisms import RandomizedResponse
from dp_course.renyi import randomized_response_rdp


def random_system(rng, rounds=2, states=2, queries=2, answers=2, concentration=1.0):
    """A random stateful mechanism: a hidden state with a random law per input, random answer channels."""
    prior = rng.dirichlet(np.ones(states), size=2)
    channel = rng.dirichlet(np.full(answers, concentration), size=(2, states, queries))
    return HiddenStateMechanism(prior, channel, rounds)


def random_adversary(rng, k, rounds, n_queries):
    """A randomised adversary that splits its probability over the allowed actions, drawn once per history."""
    table: dict = {}

    def policy(transcript):
        used = [sum(1 for i, _, _ in transcript if i == j) for j in range(k)]
        actions = [(i, x) for i in range(k) if used[i] < rounds[i] for x in range(n_queries[i])]
        if not actions:
            return None
        if transcript not in table:
            table[transcript] = rng.dirichlet(np.ones(len(actions)))
        return {a: float(p) for a, p in zip(actions, table[transcript], strict=True)}

    return Adversary(policy, "random")


# ---------------------------------------------------------------------------------------------------------
# reference values by hand
# ---------------------------------------------------------------------------------------------------------

def test_sticky_randomized_response_by_hand():
    """Sticky RR, eps = ln 3 (a = 3/4), flip 1/4, two answers.  By hand, P^0(y1 y2) = a (1-f)^(#0) f^(#1) +
    (1-a) f^(#0) (1-f)^(#1): P^0 = (7, 3, 3, 3)/16 over 00, 01, 10, 11 and P^1 its mirror (3, 3, 3, 7)/16.
    So the worst-case epsilon is ln(7/3) and D_2(P^0 || P^1) = ln(sum P^2 / Q) = ln(49/48 + 3/16 + 3/16 + 9/112)."""
    mech = sticky_randomized_response(math.log(3), 0.25, rounds=2)
    dist = transcript_distribution(fixed_adversary([0, 0]), mech)
    got = {tuple(y for _, _, y in t): (p, q) for t, p, q in zip(dist.transcripts, dist.p, dist.q, strict=True)}
    p = {(0, 0): Fraction(7, 16), (0, 1): Fraction(3, 16), (1, 0): Fraction(3, 16), (1, 1): Fraction(3, 16)}
    q = {(y1, y2): p[(1 - y1, 1 - y2)] for y1, y2 in p}
    for y in p:
        assert got[y][0] == pytest.approx(float(p[y]), abs=1e-15)
        assert got[y][1] == pytest.approx(float(q[y]), abs=1e-15)
    assert worst_case_epsilon(mech) == pytest.approx(math.log(7 / 3), abs=1e-14)
    moment = sum(p[y] ** 2 / q[y] for y in p)                                # E_Q[(P/Q)^2], exactly
    assert moment == Fraction(49, 48) + Fraction(3, 16) + Fraction(3, 16) + Fraction(9, 112)
    exact = math.log(float(moment))
    assert worst_case_renyi(mech, 2.0) == pytest.approx(exact, abs=1e-14)
    assert dist.renyi(2.0) == pytest.approx(exact, abs=1e-14)


def test_single_randomized_response_profile():
    """One randomized response at eps: delta(eps') = (e^eps - e^eps') / (1 + e^eps) below eps, 0 above."""
    eps = 1.3
    mech = randomized_response_system(eps, rounds=1)
    grid = np.array([0.0, 0.4, 1.0, 1.3, 2.0])
    expected = np.maximum(0.0, (np.exp(eps) - np.exp(grid)) / (1 + np.exp(eps)))
    np.testing.assert_allclose(worst_case_delta(mech, grid), expected, rtol=1e-13, atol=1e-15)


def test_adaptive_adversary_by_hand():
    """A stateless mechanism with a query 'rr' (randomized response at ln 3) and 'reveal' (says b w.p. 1/5,
    else 'nothing').  Adversary: 'reveal' first; after 'nothing' it asks 'rr', after a revealed bit 'reveal'
    again.  By hand, under b = 0: (reveal->0, reveal->0) 1/25, (reveal->0, reveal->nothing) 4/25,
    (nothing, rr->0) 4/5 * 3/4 = 3/5, (nothing, rr->1) 1/5; under b = 1 the mirror image."""
    rr = [[0.75, 0.25, 0.0], [0.25, 0.75, 0.0]]
    reveal = [[0.2, 0.0, 0.8], [0.0, 0.2, 0.8]]
    channel = np.array([[rr[0], reveal[0]], [rr[1], reveal[1]]])          # (b, query, answer)
    mech = stateless_system(channel, 2, ("rr", "reveal"), ("0", "1", "nothing"))

    def policy(transcript):
        if not transcript:
            return (0, 1)
        if len(transcript) == 1:
            return (0, 0) if transcript[0][2] == 2 else (0, 1)
        return None

    dist = transcript_distribution(Adversary(policy), mech)
    table = {describe_transcript(t, mech): (p, q) for t, p, q in zip(dist.transcripts, dist.p, dist.q, strict=True)}
    assert table["reveal -> 0 | reveal -> 0"] == pytest.approx((1 / 25, 0.0))
    assert table["reveal -> 0 | reveal -> nothing"] == pytest.approx((4 / 25, 0.0))
    assert table["reveal -> nothing | rr -> 0"] == pytest.approx((3 / 5, 1 / 5))
    assert table["reveal -> nothing | rr -> 1"] == pytest.approx((1 / 5, 3 / 5))
    assert table["reveal -> 1 | reveal -> 1"] == pytest.approx((0.0, 1 / 25))
    assert sum(p for p, _ in table.values()) == pytest.approx(1.0, abs=1e-15)
    # delta(eps) = 1/5 (revealed) + 4/5 * max(0, 3/4 - e^eps / 4) (randomized response)
    for eps in (0.0, 0.5, math.log(3), 2.0):
        assert dist.delta(eps) == pytest.approx(0.2 + 0.8 * max(0.0, 0.75 - math.exp(eps) / 4), abs=1e-14)
    assert dist.epsilon() == math.inf


# ---------------------------------------------------------------------------------------------------------
# cross-checks with dp_course.pld, dp_course.renyi
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps, rounds", [(0.3, 1), (1.0, 3), (2.5, 4)])
def test_randomized_response_rounds_match_pld_and_renyi(eps, rounds):
    """Randomized response with fresh coins over k rounds = k-fold RR: the PLD module's binomial law, the
    Renyi module's closed form times k, and k eps for pure DP; concurrent splitting changes nothing."""
    grid = np.linspace(0.0, rounds * eps + 0.5, 9)
    pld = RandomizedResponse(eps).privacy_loss_distribution().self_compose(rounds)
    mech = randomized_response_system(eps, rounds)
    np.testing.assert_allclose(worst_case_delta(mech, grid), pld.delta_for_epsilon(grid), rtol=1e-11, atol=1e-15)
    alphas = np.array([1.5, 2.0, 7.0])
    np.testing.assert_allclose(worst_case_renyi(mech, alphas), rounds * randomized_response_rdp(alphas, eps),
                               rtol=1e-11)
    assert worst_case_epsilon(mech) == pytest.approx(rounds * eps, rel=1e-13)
    if rounds > 1:
        split = concurrent(randomized_response_system(eps, 1), randomized_response_system(eps, rounds - 1))
        np.testing.assert_allclose(worst_case_delta(split, grid), pld.delta_for_epsilon(grid), rtol=1e-11,
                                   atol=1e-15)


def test_transcript_pld_and_delta_agree():
    """The interaction's DiscretePLD gives the same delta(eps) as the hockey-stick of the transcript laws."""
    rng = np.random.default_rng(3)
    mech = random_system(rng, rounds=2, states=2, queries=2, answers=3)
    dist = transcript_distribution(random_adversary(rng, 1, (2,), (2,)), mech)
    for eps in (0.0, 0.3, 1.0):
        assert dist.pld("forward").delta_for_epsilon(eps) == pytest.approx(dist.delta(eps, "forward"), abs=1e-14)
        assert dist.pld("backward").delta_for_epsilon(eps) == pytest.approx(dist.delta(eps, "backward"), abs=1e-14)
        assert dist.delta(eps) == pytest.approx(max(dist.delta(eps, "forward"), dist.delta(eps, "backward")))


# ---------------------------------------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_transcript_laws_are_distributions_and_factorise(seed):
    """Both transcript laws sum to 1; each transcript's probability is the adversary's choices times each
    mechanism's own history probability (eq. (16))."""
    rng = np.random.default_rng(seed)
    m1, m2 = random_system(rng, rounds=2), random_system(rng, rounds=1, answers=3)
    comp = concurrent(m1, m2)
    dist = transcript_distribution(random_adversary(rng, 2, (2, 1), (2, 2)), comp)
    assert dist.p.sum() == pytest.approx(1.0, abs=1e-13) and dist.q.sum() == pytest.approx(1.0, abs=1e-13)
    ratio = dist.log_p - dist.log_q
    for t, r in zip(dist.transcripts, ratio, strict=True):
        own = [[(x, y) for i, x, y in t if i == j] for j in range(2)]
        logs = m1.log_history_probs(own[0]) + m2.log_history_probs(own[1])
        assert r == pytest.approx(logs[0] - logs[1], abs=1e-12)   # the adversary's own odds cancel


def _all_deterministic_deltas(mech, eps):
    """Brute force for a 2-round single mechanism: every first query and every map answer -> second query."""
    best = 0.0
    for x1 in range(mech.n_queries):
        for plan in itertools.product(range(mech.n_queries), repeat=mech.n_answers):
            def policy(t, x1=x1, plan=plan):
                return (0, x1) if not t else ((0, plan[t[0][2]]) if len(t) == 1 else None)
            best = max(best, transcript_distribution(Adversary(policy), mech).delta(eps))
    return best


@pytest.mark.parametrize("seed", range(3))
def test_dynamic_programme_equals_brute_force_and_is_attained(seed):
    """The DP value equals the best of all deterministic adversaries (brute force), the adversary returned by
    best_adversary attains it, and random randomised adversaries never beat it."""
    rng = np.random.default_rng(10 + seed)
    mech = random_system(rng, rounds=2, states=2, queries=3, answers=2, concentration=0.5)
    for eps in (0.0, 0.4, 1.2):
        value = worst_case_delta(mech, eps)
        assert value == pytest.approx(_all_deterministic_deltas(mech, eps), abs=1e-13)
        attained = transcript_distribution(best_adversary(mech, epsilon=eps), mech).delta(eps)
        assert attained == pytest.approx(value, abs=1e-13)
        for _ in range(3):
            assert transcript_distribution(random_adversary(rng, 1, (2,), (3,)), mech).delta(eps) <= value + 1e-13
    for alpha in (2.0, 5.0):
        adv = best_adversary(mech, alpha=alpha)
        assert transcript_distribution(adv, mech).renyi(alpha) == pytest.approx(worst_case_renyi(mech, alpha),
                                                                                rel=1e-11)


@pytest.mark.parametrize("seed", range(3))
def test_concurrent_is_at_least_sequential(seed):
    """Every sequential adversary is a concurrent one: the concurrent worst case is never smaller."""
    rng = np.random.default_rng(20 + seed)
    m1, m2 = random_system(rng, rounds=2), random_system(rng, rounds=1, queries=3)
    grid = np.linspace(0, 2, 9)
    con = worst_case_delta(concurrent(m1, m2), grid)
    assert np.all(con >= worst_case_delta(sequential(m1, m2), grid) - 1e-13)
    assert np.all(con >= worst_case_delta(sequential(m2, m1), grid) - 1e-13)


def test_interleaving_can_beat_every_sequential_order():
    """The lecture's example: M1 = {randomized response at 2, reveal w.p. 0.35} for two queries, M2 = {RR at 1,
    reveal w.p. 0.2} for one.  At eps = 0.7 the best interleaving adversary gets a larger delta than any
    adversary that finishes one mechanism first (by about 0.0155)."""
    def mech(eps, leak, rounds):
        keep = 1 / (1 + math.exp(-eps))
        ch = np.zeros((2, 2, 3))
        ch[0, 0, :2], ch[1, 0, :2] = (keep, 1 - keep), (1 - keep, keep)
        ch[0, 1] = (leak, 0, 1 - leak)
        ch[1, 1] = (0, leak, 1 - leak)
        return stateless_system(ch, rounds)
    m1, m2 = mech(2.0, 0.35, 2), mech(1.0, 0.2, 1)
    con = worst_case_delta(concurrent(m1, m2), 0.7)
    seq = max(worst_case_delta(sequential(m1, m2), 0.7), worst_case_delta(sequential(m2, m1), 0.7))
    assert con - seq == pytest.approx(0.0155, abs=5e-4)


def test_table_mechanism_reproduces_its_source():
    """A mechanism rebuilt from its joint answer table has the same answer laws and table."""
    rng = np.random.default_rng(5)
    mech = random_system(rng, rounds=3, states=3, queries=2, answers=2)
    table = answer_table(mech)
    assert table.shape == (2, 8, 8)
    np.testing.assert_allclose(table.sum(axis=2), 1.0, atol=1e-13)
    copy = TableMechanism(table, 3)
    np.testing.assert_allclose(answer_table(copy), table, atol=1e-14)
    np.testing.assert_allclose(copy.answer_pmfs(((1, 0), (0, 1)), 1), mech.answer_pmfs(((1, 0), (0, 1)), 1),
                               atol=1e-13)
    assert worst_case_delta(copy, 0.5) == pytest.approx(worst_case_delta(mech, 0.5), abs=1e-13)


def test_function_mechanism_matches_hidden_state():
    """The same randomized response written as a rule gives the same worst case; its laws are memoised."""
    calls = []

    def respond(b, history, query):
        calls.append((b, history, query))
        keep = 1 / (1 + math.exp(-1.0))
        return [keep, 1 - keep] if b == 0 else [1 - keep, keep]

    mech = FunctionMechanism(respond, ("ask",), ("0", "1"), rounds=3)
    assert worst_case_delta(mech, 0.5) == pytest.approx(worst_case_delta(randomized_response_system(1.0, 3), 0.5))
    n = len(calls)
    worst_case_delta(mech, 1.5)
    assert len(calls) == n, "answer laws must be memoised"


def test_descriptions_keep_probabilities_and_accept_numpy_indices():
    """A hidden-state mechanism keeps its prior and channel as probabilities (logs apart); actions may be numpy
    integers."""
    mech = sticky_randomized_response(math.log(3), 0.25, rounds=2)
    np.testing.assert_allclose(mech.prior, [[0.75, 0.25], [0.25, 0.75]])
    np.testing.assert_allclose(np.exp(mech.log_prior), mech.prior)
    dist = transcript_distribution(fixed_adversary([np.int64(0), (np.int64(0), np.int64(0))]), mech)
    assert len(dist.transcripts) == 4


def test_halting_after_c_answers():
    """A hidden-state mechanism with halt_after answers halt_answer for sure after c counted answers."""
    ch = np.zeros((2, 1, 1, 3))
    ch[:, 0, 0, :2] = [[0.5, 0.5], [0.25, 0.75]]
    mech = HiddenStateMechanism(np.ones((2, 1)), ch, rounds=4, halt_after=2, halt_on=(1,), halt_answer=2)
    np.testing.assert_allclose(mech.answer_pmfs(((0, 1), (0, 0), (0, 1)), 0), [[0, 0, 1], [0, 0, 1]])
    np.testing.assert_allclose(mech.answer_pmfs(((0, 1), (0, 0), (0, 0)), 0), [[0.5, 0.5, 0], [0.25, 0.75, 0]])
    dist = transcript_distribution(fixed_adversary([0] * 4), mech)
    assert dist.p.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------

def test_errors_name_the_parameter_and_value():
    rr = randomized_response_system(1.0, 1)
    with pytest.raises(ValueError, match=r"epsilon must be finite and >= 0, got -1"):
        worst_case_delta(rr, -1.0)
    with pytest.raises(ValueError, match=r"alpha must be > 1"):
        worst_case_renyi(rr, 1.0)
    with pytest.raises(ValueError, match=r"direction must be"):
        worst_case_delta(rr, 1.0, direction="up")
    with pytest.raises(ValueError, match=r"prior must have shape \(2, S\)"):
        HiddenStateMechanism(np.ones(3), np.ones((2, 1, 1, 1)), 1)
    with pytest.raises(ValueError, match=r"channel\[b, s, x, :\] must be a pmf"):
        HiddenStateMechanism(np.ones((2, 1)), np.full((2, 1, 1, 2), 0.4), 1)
    with pytest.raises(ValueError, match=r"rounds must be an integer >= 1, got 0"):
        randomized_response_system(1.0, 0)
    with pytest.raises(ValueError, match=r"order must be 'concurrent' or 'sequential'"):
        from dp_course.interactive import Composition
        Composition((rr,), "parallel")
    with pytest.raises(ValueError, match=r"queried mechanism 0 .* answered all its rounds"):
        transcript_distribution(fixed_adversary([0, 0]), rr)
    with pytest.raises(ValueError, match=r"only 1 \(0..0\)"):
        transcript_distribution(fixed_adversary([(3, 0)]), rr)
    with pytest.raises(ValueError, match=r"sum to 1"):
        transcript_distribution(Adversary(lambda t: None if t else {(0, 0): 0.5}), rr)
    with pytest.raises(ValueError, match=r"sequential and mechanism 0 is not finished"):
        transcript_distribution(fixed_adversary([(1, 0)]), sequential(rr, rr))
    bad = FunctionMechanism(lambda b, h, x: [0.5, 0.6], ("ask",), ("0", "1"), 1)
    with pytest.raises(ValueError, match=r"must sum to 1"):
        worst_case_delta(bad, 0.0)
    with pytest.raises(ValueError, match=r"system must be an InteractiveMechanism or a Composition"):
        worst_case_delta("rr", 0.0)
    with pytest.raises(ValueError, match=r"max_states = 3"):
        worst_case_delta(randomized_response_system(1.0, 4), 0.0, max_states=3)
    with pytest.raises(ValueError, match=r"table is not causal"):
        t = np.zeros((2, 4, 4))
        t[:, 0, 0] = t[:, 1, 3] = t[:, 2, 0] = t[:, 3, 0] = 1.0    # first answer depends on the second query
        TableMechanism(t, 2)
