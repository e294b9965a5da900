"""Answer variants for ``solutions/07_concurrent_composition``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py`` (a wrong answer may say how many points it may score at
most: trivial answers and library wrappers earn nothing).  Every extra variant index adds one submission to the
nbgrader round trip, so the lists stop at four wrong answers and one alternative (Exercise 3 lists every privacy
bug of issue 22 item 1, each with ``at_most`` 0: every Exercise 3 test cell opens with the same privacy check,
so no privacy bug earns a point; Exercise 1 (b) adds the two answers of item 8).  Each code string replaces a
whole answer cell; the notebook's setup cell has already imported ``np``, ``stats``, ``special``, ``integrate``,
``itertools``, ``math``, the library's interactive tools and ``randomized_response_rdp``.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1 (a): transcript laws
    "ex1a_pmfs": {
        "correct_alt": [
            # transcript by transcript, with the report probability written out
            """
            def transcript_pmfs(eps1, eps_if_one, eps_if_zero):
                def report(b, y, e):
                    return math.exp(e) / (1 + math.exp(e)) if y == b else 1 / (1 + math.exp(e))
                p, q = [], []
                for y1, y2 in itertools.product((0, 1), repeat=2):
                    e2 = eps_if_one if y1 == 1 else eps_if_zero
                    p.append(report(0, y1, eps1) * report(0, y2, e2))
                    q.append(report(1, y1, eps1) * report(1, y2, e2))
                return np.array(p), np.array(q)
            """,
        ],
        "wrong": [
            # not adaptive: the second level is always eps_if_one
            """
            def transcript_pmfs(eps1, eps_if_one, eps_if_zero):
                def rr(e):
                    k = 1 / (1 + np.exp(-e))
                    return np.array([[k, 1 - k], [1 - k, k]])
                a, b = rr(eps1), rr(eps_if_one)
                laws = np.array([[a[s, y1] * b[s, y2] for y1 in (0, 1) for y2 in (0, 1)] for s in (0, 1)])
                return laws[0], laws[1]
            """,
            # the two branches swapped: eps_if_one after a first answer 0
            """
            def transcript_pmfs(eps1, eps_if_one, eps_if_zero):
                def rr(e):
                    k = 1 / (1 + np.exp(-e))
                    return np.array([[k, 1 - k], [1 - k, k]])
                first, second = rr(eps1), {1: rr(eps_if_zero), 0: rr(eps_if_one)}
                laws = np.array([[first[b, y1] * second[y1][b, y2] for y1 in (0, 1) for y2 in (0, 1)]
                                 for b in (0, 1)])
                return laws[0], laws[1]
            """,
            # trivial: uniform laws
            {"code": """
            def transcript_pmfs(eps1, eps_if_one, eps_if_zero):
                return np.full(4, 0.25), np.full(4, 0.25)
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (b): delta with a Gaussian round
    "ex1b_delta": {
        "correct_alt": [
            # the library's Gaussian profile for t >= 0, and H_{e^t}(P||Q) = 1 - e^t + e^t H_{e^-t}(Q||P) for t < 0
            """
            from dp_course.pld import GaussianPLD

            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                def h(t, sigma):
                    pld = GaussianPLD.from_mechanism(sigma)
                    if t >= 0:
                        return pld.delta_for_epsilon(t)
                    return 1 - math.exp(t) + math.exp(t) * pld.delta_for_epsilon(-t)
                k = 1 / (1 + math.exp(-eps1))
                forward = k * h(epsilon - eps1, sigma_if_zero) + (1 - k) * h(epsilon + eps1, sigma_if_one)
                backward = k * h(epsilon - eps1, sigma_if_one) + (1 - k) * h(epsilon + eps1, sigma_if_zero)
                return max(forward, backward)
            """,
        ],
        "wrong": [
            # one order of the inputs only (b = 0 against b = 1); scored 1/3 from the symmetric limits before
            # issue 22 item 8 (the limits now include one perfect and one useless branch, in both orders)
            """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                def g(t, s):
                    m = 1 / s
                    return stats.norm.cdf(m / 2 - t / m) - np.exp(t) * stats.norm.cdf(-m / 2 - t / m)
                k = 1 / (1 + np.exp(-eps1))
                return float(k * g(epsilon - eps1, sigma_if_zero) + (1 - k) * g(epsilon + eps1, sigma_if_one))
            """,
            # the Gaussian profile clipped at 0 (what GaussianPLD.delta_for_epsilon(max(t, 0)) gives)
            """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                def g(t, s):
                    t, m = max(t, 0.0), 1 / s
                    return stats.norm.cdf(m / 2 - t / m) - np.exp(t) * stats.norm.cdf(-m / 2 - t / m)
                k = 1 / (1 + np.exp(-eps1))
                return float(max(k * g(epsilon - eps1, sigma_if_zero) + (1 - k) * g(epsilon + eps1, sigma_if_one),
                                 k * g(epsilon - eps1, sigma_if_one) + (1 - k) * g(epsilon + eps1, sigma_if_zero)))
            """,
            # not adaptive: the first answer's loss is ignored, the Gaussian of the likelier branch only
            """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                m, t = 1 / min(sigma_if_one, sigma_if_zero), epsilon
                return float(stats.norm.cdf(m / 2 - t / m) - np.exp(t) * stats.norm.cdf(-m / 2 - t / m))
            """,
            # trivial: delta = 0
            {"code": """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                return 0.0
            """, "at_most": 0},
            # a missing factor: the Gaussian loss taken as N(mu, 2 mu) with mu = 1 / sigma^2 (not 1 / (2 sigma^2));
            # scored 1/3 from the symmetric limits before issue 22 item 8 (now: the eps1 = 0 limit, Lecture 02's
            # Gaussian delta, catches it)
            """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                def g(t, s):
                    m = np.sqrt(2.0) / s
                    return stats.norm.cdf(m / 2 - t / m) - np.exp(t) * stats.norm.cdf(-m / 2 - t / m)
                k = 1 / (1 + np.exp(-eps1))
                return float(max(k * g(epsilon - eps1, sigma_if_zero) + (1 - k) * g(epsilon + eps1, sigma_if_one),
                                 k * g(epsilon - eps1, sigma_if_one) + (1 - k) * g(epsilon + eps1, sigma_if_zero)))
            """,
            # the quadrature the visible test used to hold, pasted as the answer (it earned 2/3 before issue 22
            # item 8): numerical integration is not exact far in the tail nor for a nearly perfect Gaussian answer
            {"at_most": 0, "code": """
            def two_round_delta(epsilon, eps1, sigma_if_one, sigma_if_zero):
                def order(b):
                    keep = 1.0 / (1.0 + np.exp(-eps1))
                    total = 0.0
                    for y1 in (0, 1):
                        sigma = sigma_if_one if y1 == 1 else sigma_if_zero
                        w_b = keep if y1 == b else 1 - keep
                        w_o = 1 - keep if y1 == b else keep
                        def f(y, w_b=w_b, w_o=w_o, sigma=sigma):
                            other = np.exp(epsilon) * w_o * stats.norm.pdf(y, 1 - b, sigma)
                            return max(0.0, w_b * stats.norm.pdf(y, b, sigma) - other)
                        half = 40 * sigma + abs(epsilon) * sigma**2 + 5
                        total += integrate.quad(f, -half, half, limit=500, epsabs=1e-14, epsrel=1e-12)[0]
                    return total
                return max(order(0), order(1))
            """},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (a): sticky randomized response
    "ex2a_sticky": {
        "correct_alt": [
            # the number of ones is sufficient: Renyi divergence of the two laws of the count, a mixture of binomials
            """
            def sticky_renyi(alpha, epsilon, flip, n):
                k = np.arange(n + 1)
                keep = -np.logaddexp(0, -epsilon)
                other = -np.logaddexp(0, epsilon)
                ones_if_zero = stats.binom.logpmf(k, n, flip)         # coin 0: ones are flips
                ones_if_one = stats.binom.logpmf(k, n, 1 - flip)
                lp = np.logaddexp(keep + ones_if_zero, other + ones_if_one)
                lq = np.logaddexp(other + ones_if_zero, keep + ones_if_one)
                return float(special.logsumexp(alpha * lp + (1 - alpha) * lq) / (alpha - 1))
            """,
        ],
        "wrong": [
            # answers treated as independent randomized responses: grows without bound in n
            """
            def sticky_renyi(alpha, epsilon, flip, n):
                k = 1 / (1 + np.exp(-epsilon))
                p1 = k * (1 - flip) + (1 - k) * flip                  # one answer: randomized response at eps1
                eps1 = np.log(p1 / (1 - p1))
                return float(n * randomized_response_rdp(alpha, eps1))
            """,
            # library wrapper: exhaustive enumeration while it is feasible, the coin's divergence beyond
            {"code": """
            def sticky_renyi(alpha, epsilon, flip, n):
                if n <= 10:
                    return worst_case_renyi(sticky_randomized_response(epsilon, flip, n), alpha)
                return float(randomized_response_rdp(alpha, epsilon))
            """, "at_most": 0},
            # right formula in plain floating point: overflows for large n
            """
            def sticky_renyi(alpha, epsilon, flip, n):
                keep = math.exp(epsilon) / (1 + math.exp(epsilon))
                total = 0.0
                for k in range(n + 1):
                    a = (1 - flip) ** (n - k) * flip ** k
                    d = flip ** (n - k) * (1 - flip) ** k
                    p, q = keep * a + (1 - keep) * d, (1 - keep) * a + keep * d
                    total += math.comb(n, k) * p ** alpha * q ** (1 - alpha)
                return math.log(total) / (alpha - 1)
            """,
            # trivial
            {"code": """
            def sticky_renyi(alpha, epsilon, flip, n):
                return 0.0
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (b): the concurrent composition
    "ex2b_concurrent": {
        "correct_alt": [
            """
            def concurrent_renyi(alpha, sticky_value, eps_fresh, m):
                return sticky_value + sum(randomized_response_rdp(alpha, eps_fresh) for _ in range(m))
            """,
        ],
        "wrong": [
            # the exponential printed at the end of the paper's toy proof (ERRATA 13)
            """
            def concurrent_renyi(alpha, sticky_value, eps_fresh, m):
                return float(np.exp(sticky_value + m * randomized_response_rdp(alpha, eps_fresh)))
            """,
            # the larger of the two: "interleaving lets them overlap"
            """
            def concurrent_renyi(alpha, sticky_value, eps_fresh, m):
                return float(max(sticky_value, m * randomized_response_rdp(alpha, eps_fresh)))
            """,
            # forgets that the fresh mechanism answers m questions
            """
            def concurrent_renyi(alpha, sticky_value, eps_fresh, m):
                return float(sticky_value + randomized_response_rdp(alpha, eps_fresh))
            """,
            # trivial: the sticky mechanism alone
            {"code": """
            def concurrent_renyi(alpha, sticky_value, eps_fresh, m):
                return sticky_value
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 3: Guess-and-Check
    "ex3_gc": {
        "correct_alt": [
            # state as a list, Laplace noise as a difference of exponentials, the test rearranged
            """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                def lap(scale):
                    return rng.exponential(scale) - rng.exponential(scale)
                if state is None:
                    state = [lap(1 / epsilon), 0]
                rho, wrong = state
                if wrong == c:
                    return "HALTED", None, state
                if abs(value - guess) - tolerance >= rho - lap(c / epsilon):
                    return "WRONG", value + lap(c / epsilon), [rho, wrong + 1]
                return "PASS", None, [rho, wrong]
            """,
            # every noise with scipy.stats.laplace.rvs on rng (the same draws as rng.laplace)
            """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (float(stats.laplace.rvs(scale=1 / epsilon, random_state=rng)), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                def lap(scale):
                    return float(stats.laplace.rvs(scale=scale, random_state=rng))
                if abs(value - guess) + lap(c / epsilon) >= tolerance + rho:
                    return "WRONG", value + lap(c / epsilon), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """,
        ],
        "wrong": [
            # the textbook SVT: a new threshold noise for every query (scored 5/7 before the privacy check that
            # opens every Exercise 3 cell; no privacy bug earns a point)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                wrong = 0 if state is None else state[1]
                rho = rng.laplace(0, 1 / epsilon)
                if wrong >= c:
                    return "HALTED", None, (rho, wrong)
                if abs(value - guess) + rng.laplace(0, c / epsilon) >= tolerance + rho:
                    return "WRONG", value + rng.laplace(0, c / epsilon), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # comparison noise at scale 1/epsilon instead of c/epsilon
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, 1 / epsilon) >= tolerance + rho:
                    return "WRONG", value + rng.laplace(0, c / epsilon), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the estimate is the true value: a privacy bug
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the estimate reuses the comparison noise: v = f + gamma (worst-case epsilon 5.50 > 4 on an exact
            # instance)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                gamma = rng.laplace(0, c / epsilon)
                if abs(value - guess) + gamma >= tolerance + rho:
                    return "WRONG", float(value + gamma), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # all three noise scales halved (8 epsilon-DP)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 0.5 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, c / (2 * epsilon)) >= tolerance + rho:
                    return "WRONG", float(value + rng.laplace(0, c / (2 * epsilon))), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the estimate's noise at c/(3 epsilon): the budget split in three once more
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + rng.laplace(0, c / (3 * epsilon))), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the threshold noise at 1/(3 epsilon)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / (3 * epsilon)), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + rng.laplace(0, c / epsilon)), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the comparison noise at 2c/epsilon
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, 2 * c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + rng.laplace(0, c / epsilon)), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # Dwork-Roth's AboveThreshold scales: threshold Lap(2/epsilon), comparison Lap(4c/epsilon)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (rng.laplace(0, 2 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + rng.laplace(0, 4 * c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + rng.laplace(0, c / epsilon)), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # privacy bugs that avoid rng.laplace (issue 22 item 1, second pass): the privacy check follows rng's
            # stream for a difference of exponentials too, and fails noise it cannot follow.
            # all three scales halved, Laplace noise as a difference of exponentials (8 epsilon-DP)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                def lap(scale):
                    return rng.exponential(scale / 2) - rng.exponential(scale / 2)
                if state is None:
                    state = (lap(1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + lap(c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + lap(c / epsilon)), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # the estimate reuses the comparison noise, drawn with rng.standard_exponential
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                def lap(scale):
                    return scale * (rng.standard_exponential() - rng.standard_exponential())
                if state is None:
                    state = (lap(1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                gamma = lap(c / epsilon)
                if abs(value - guess) + gamma >= tolerance + rho:
                    return "WRONG", float(value + gamma), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # every noise from NumPy's global generator, not from rng (the scales right)
            {"at_most": 0, "code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                if state is None:
                    state = (np.random.laplace(0, 1 / epsilon), 0)
                rho, wrong = state
                if wrong >= c:
                    return "HALTED", None, state
                if abs(value - guess) + np.random.laplace(0, c / epsilon) >= tolerance + rho:
                    return "WRONG", float(value + np.random.laplace(0, c / epsilon)), (rho, wrong + 1)
                return "PASS", None, (rho, wrong)
            """},
            # trivial: always PASS
            {"code": """
            def guess_and_check(state, value, guess, tolerance, c, epsilon, rng):
                return "PASS", None, (0.0, 0) if state is None else state
            """, "at_most": 0},
        ],
    },
}
