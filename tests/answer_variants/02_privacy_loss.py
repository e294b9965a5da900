"""Answer variants for ``solutions/02_privacy_loss``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py`` (a wrong answer may carry ``at_most``: the most it may
score on its answer's test cells).  Every extra variant index adds one submission to the nbgrader round trip,
so the lists stay short.  Each code string replaces a whole answer cell; the notebook's setup cell has already
imported ``itertools``, ``np``, ``stats``, ``integrate``, ``optimize`` and the library.

The library wrappers below are the loophole of the first version of this lecture: where an exercise is a
derivation, the library's numerical objects must earn nothing.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1: a two-round adaptive rule
    "ex1_transcripts": {
        "correct_alt": [
            # joint probabilities under both data sets, then the log ratio (no per-round sum)
            """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                def pmf(epsilon, bit):
                    t = np.exp(epsilon) / (1 + np.exp(epsilon))
                    return np.array([1 - t, t]) if bit == 1 else np.array([t, 1 - t])
                joint = {}
                for bit in (0, 1):
                    first = pmf(eps1, bit)
                    joint[bit] = np.array([first[y1] * pmf((eps_after_0, eps_after_1)[y1], bit)[y2]
                                           for y1 in (0, 1) for y2 in (0, 1)])
                return np.log(joint[1] / joint[0]), joint[1]
            """,
        ],
        "wrong": [
            # round 2 chosen by the true bit of x (always 1) instead of the first report
            """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                losses, probs = [], []
                for y1, y2 in itertools.product((0, 1), repeat=2):
                    t1 = RandomizedResponse(eps1).truth_probability
                    t2 = RandomizedResponse(eps_after_1).truth_probability
                    losses.append((eps1 if y1 else -eps1) + (eps_after_1 if y2 else -eps_after_1))
                    probs.append((t1 if y1 else 1 - t1) * (t2 if y2 else 1 - t2))
                return np.array(losses), np.array(probs)
            """,
            # probabilities under x' (bit 0) instead of x
            """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                losses, probs = [], []
                for y1, y2 in itertools.product((0, 1), repeat=2):
                    e2 = eps_after_1 if y1 else eps_after_0
                    t1, t2 = RandomizedResponse(eps1).truth_probability, RandomizedResponse(e2).truth_probability
                    losses.append((eps1 if y1 else -eps1) + (e2 if y2 else -e2))
                    probs.append((1 - t1 if y1 else t1) * (1 - t2 if y2 else t2))
                return np.array(losses), np.array(probs)
            """,
            # the ratio the wrong way round: ln(P_x' / P_x)
            """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                losses, probs = [], []
                for y1, y2 in itertools.product((0, 1), repeat=2):
                    e2 = eps_after_1 if y1 else eps_after_0
                    t1, t2 = RandomizedResponse(eps1).truth_probability, RandomizedResponse(e2).truth_probability
                    losses.append(-((eps1 if y1 else -eps1) + (e2 if y2 else -e2)))
                    probs.append((t1 if y1 else 1 - t1) * (t2 if y2 else 1 - t2))
                return np.array(losses), np.array(probs)
            """,
            # no adaptivity: round 2 at the level of round 1
            """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                t = RandomizedResponse(eps1).truth_probability
                losses = [(eps1 if y1 else -eps1) + (eps1 if y2 else -eps1) for y1 in (0, 1) for y2 in (0, 1)]
                probs = [(t if y1 else 1 - t) * (t if y2 else 1 - t) for y1 in (0, 1) for y2 in (0, 1)]
                return np.array(losses), np.array(probs)
            """,
            # trivial: no loss at all
            {"code": """
            def two_round_pld(eps1, eps_after_0, eps_after_1):
                return np.zeros(4), np.full(4, 0.25)
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (a): the loss function
    "ex2a_loss": {
        "correct_alt": [
            # piecewise by region, vectorised with np.select
            """
            def laplace_privacy_loss(y, epsilon):
                y = np.asarray(y, dtype=float)
                return np.select([y <= 0, y >= 1], [epsilon, -epsilon], epsilon * (1 - 2 * y))
            """,
            # straight from the scipy densities (a ratio, then a log)
            """
            def laplace_privacy_loss(y, epsilon):
                b = 1 / epsilon
                return np.log(stats.laplace.pdf(y, loc=0, scale=b) / stats.laplace.pdf(y, loc=1, scale=b))
            """,
        ],
        "wrong": [
            # the ratio the wrong way round: ln(q / p)
            """
            def laplace_privacy_loss(y, epsilon):
                return epsilon * (np.abs(y) - np.abs(y - 1))
            """,
            # forgets the scale 1/epsilon: right for epsilon = 1 only
            """
            def laplace_privacy_loss(y, epsilon):
                return np.abs(y - 1) - np.abs(y)
            """,
            # the Gaussian formula in place of the Laplace one
            """
            def laplace_privacy_loss(y, epsilon):
                return epsilon * ((y - 1) ** 2 - y ** 2) / 2
            """,
            # right for one number, but not for an array (the exercise asks for both)
            """
            def laplace_privacy_loss(y, epsilon):
                if y <= 0:
                    return epsilon
                if y >= 1:
                    return -epsilon
                return epsilon * (1 - 2 * y)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (b): the CDF of L
    "ex2b_cdf": {
        "correct_alt": [
            # the continuous part read off scipy's survival function of the output, vectorised
            """
            def laplace_loss_cdf(x, epsilon):
                x = np.asarray(x, dtype=float)
                threshold = (1 - np.clip(x, -epsilon, epsilon) / epsilon) / 2   # l(y) <= x exactly when y >= threshold
                middle = stats.laplace(0, 1 / epsilon).sf(threshold)
                return np.where(x < -epsilon, 0.0, np.where(x >= epsilon, 1.0, middle))
            """,
        ],
        "wrong": [
            # misses the atom at -epsilon (outputs y >= 1): the continuous part starts from 0
            """
            def laplace_loss_cdf(x, epsilon):
                x = np.asarray(x, dtype=float)
                middle = 0.5 * (np.exp(-(epsilon - x) / 2) - np.exp(-epsilon))
                return np.where(x < -epsilon, 0.0, np.where(x >= epsilon, 1.0, middle))
            """,
            # misses the atom at +epsilon: never reaches 1
            """
            def laplace_loss_cdf(x, epsilon):
                x = np.asarray(x, dtype=float)
                return np.where(x < -epsilon, 0.0, 0.5 * np.exp(-(epsilon - np.minimum(x, epsilon)) / 2))
            """,
            # continuous from the left: P(L < x) instead of P(L <= x)
            """
            def laplace_loss_cdf(x, epsilon):
                x = np.asarray(x, dtype=float)
                return np.where(x <= -epsilon, 0.0, np.where(x > epsilon, 1.0, 0.5 * np.exp(-(epsilon - x) / 2)))
            """,
            # the loophole: the library's grid PLD, built exactly as the visible test builds it
            {"code": """
            def laplace_loss_cdf(x, epsilon):
                grid = LaplaceMechanism.from_epsilon(epsilon).privacy_loss_distribution(
                    value_step=max(epsilon / 1000, 1e-4), pessimistic=False)
                return grid.cdf(x)
            """, "at_most": 0},
            # a trivial law: a point mass at -epsilon is a valid CDF, and earns nothing
            {"code": """
            def laplace_loss_cdf(x, epsilon):
                return np.where(np.asarray(x, dtype=float) >= -epsilon, 1.0, 0.0)
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (c): the mean of L
    "ex2c_mean": {
        "correct_alt": [
            # the series for small epsilon, the closed form elsewhere
            """
            def laplace_loss_mean(epsilon):
                if epsilon < 1e-3:
                    return epsilon**2 / 2 - epsilon**3 / 6 + epsilon**4 / 24 - epsilon**5 / 120
                return epsilon + np.expm1(-epsilon)
            """,
            # the mean assembled from the law of L: two atoms and the integral over the continuous part
            """
            def laplace_loss_mean(epsilon):
                atoms = epsilon * 0.5 - epsilon * 0.5 * np.exp(-epsilon)
                middle = integrate.quad(lambda y: 0.5 * epsilon * np.exp(-epsilon * y) * epsilon * (1 - 2 * y),
                                        0.0, 1.0, epsabs=0, epsrel=1e-13)[0]
                return atoms + middle
            """,
        ],
        "wrong": [
            # the small-epsilon approximation
            """
            def laplace_loss_mean(epsilon):
                return epsilon ** 2 / 2
            """,
            # issue 22 item 8b: the textbook form, whose cancellation loses every digit as epsilon -> 0 (1e-9)
            """
            def laplace_loss_mean(epsilon):
                return epsilon + np.exp(-epsilon) - 1
            """,
            # only the two atoms, forgetting the continuous part
            """
            def laplace_loss_mean(epsilon):
                return epsilon * (1 - np.exp(-epsilon)) / 2
            """,
            # the mean of randomized response instead
            """
            def laplace_loss_mean(epsilon):
                return epsilon * np.tanh(epsilon / 2)
            """,
            # the loophole: the mean of the library's grid PLD (pessimistic, default step: within ~1e-9)
            {"code": """
            def laplace_loss_mean(epsilon):
                return LaplaceMechanism.from_epsilon(epsilon).privacy_loss_distribution().mean
            """, "at_most": 0},
            # the loophole with a 100 times finer grid than the default (about 2e5 atoms per call)
            {"code": """
            def laplace_loss_mean(epsilon):
                return LaplaceMechanism.from_epsilon(epsilon).privacy_loss_distribution(value_step=epsilon / 1e5).mean
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (d): the Theta constants
    "ex2d_constants": {
        "correct_alt": [
            # the best possible constants
            """
            def theta_constants():
                return np.exp(-1.0), 0.5
            """,
            # from the order-2 Lagrange remainder: (eps^2 / 2) e^(-eps) <= E[L] <= eps^2 / 2
            """
            def theta_constants():
                return [0.5 / np.e, 0.5]
            """,
            # exact fractions (issue 26: a Fraction scored 0 in the trusted kernel)
            """
            from fractions import Fraction

            def theta_constants():
                return Fraction(1, 3), Fraction(1, 2)
            """,
        ],
        "wrong": [
            # the limit constant on both sides: fails away from 0
            """
            def theta_constants():
                return 0.5, 0.5
            """,
            # c2 just below 1/2: fails for small epsilon
            """
            def theta_constants():
                return 1 / 3, 0.49
            """,
            # valid but far too loose to show the order
            """
            def theta_constants():
                return 0.01, 1.0
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (a): delta from a discrete PLD
    "ex3a_delta": {
        "correct_alt": [
            # a plain loop with math.expm1
            """
            import math

            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                total = infinity_mass
                for loss, prob in zip(losses, probs):
                    if loss > epsilon:
                        total += prob * -math.expm1(epsilon - loss)
                return total
            """,
            # vectorised with np.where (overflowing exponentials in the unused branch are discarded)
            """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                losses, probs = np.asarray(losses), np.asarray(probs)
                terms = np.where(losses > epsilon, probs * (1 - np.exp(epsilon - losses)), 0.0)
                return infinity_mass + terms.sum()
            """,
        ],
        "wrong": [
            # forgets the atom at +infinity
            """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                losses, probs = np.asarray(losses), np.asarray(probs)
                above = losses > epsilon
                return float(np.sum(probs[above] * -np.expm1(epsilon - losses[above])))
            """,
            # the tail bound P(L > epsilon) in place of the exact delta
            """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                return float(infinity_mass + np.sum(np.asarray(probs)[np.asarray(losses) > epsilon]))
            """,
            # rebuilds q = p e^(-l) and forms e^epsilon q: right for moderate values, nan once e^epsilon overflows
            """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                p = np.asarray(probs)
                q = p * np.exp(-np.asarray(losses))
                return float(np.sum(np.maximum(p - np.exp(epsilon) * q, 0.0)) + infinity_mass)
            """,
            # forgets the positive part: losses below epsilon subtract
            """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                losses, probs = np.asarray(losses), np.asarray(probs)
                return float(infinity_mass + np.sum(probs * -np.expm1(epsilon - losses)))
            """,
            # issue 22 item 8b: "do not use dp_course": the library's DiscretePLD, which refuses a truncated PLD
            {"code": """
            def delta_from_pld(losses, probs, infinity_mass, epsilon):
                return float(DiscretePLD(losses, probs, infinity_mass).delta_for_epsilon(epsilon))
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (b): the Laplace privacy profile
    "ex3b_profile": {
        "correct_alt": [
            # the two contributions written out: atom at +epsilon, continuous part
            """
            def laplace_privacy_profile(epsilon_prime, epsilon):
                gap = np.maximum(epsilon - np.asarray(epsilon_prime, dtype=float), 0.0)
                atom = 0.5 * (1 - np.exp(-gap))
                continuous = 0.5 * (1 - np.exp(-gap / 2)) ** 2
                return atom + continuous
            """,
        ],
        "wrong": [
            # the tail bound P(L > epsilon') instead of the expectation
            """
            def laplace_privacy_profile(epsilon_prime, epsilon):
                e = np.asarray(epsilon_prime, dtype=float)
                return np.where(e < epsilon, 1 - 0.5 * np.exp(-(epsilon - e) / 2), 0.0)
            """,
            # only the atom at +epsilon
            """
            def laplace_privacy_profile(epsilon_prime, epsilon):
                e = np.asarray(epsilon_prime, dtype=float)
                return np.where(e < epsilon, 0.5 * (1 - np.exp(e - epsilon)), 0.0)
            """,
            # forgets the 1/2 in the exponent
            """
            def laplace_privacy_profile(epsilon_prime, epsilon):
                e = np.asarray(epsilon_prime, dtype=float)
                return np.where(e < epsilon, 1 - np.exp(-(epsilon - e)), 0.0)
            """,
            # the loophole: the library's grid PLD at its default step
            {"code": """
            def laplace_privacy_profile(epsilon_prime, epsilon):
                pld = LaplaceMechanism.from_epsilon(epsilon).privacy_loss_distribution()
                return pld.delta_for_epsilon(np.asarray(epsilon_prime, dtype=float))
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 4: tail-bound calibration
    "ex4_sigma": {
        "correct_alt": [
            # the other root formula, -z + sqrt(z^2 + 2 eps) written as 2 eps / (z + sqrt(z^2 + 2 eps)), with logs
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = -stats.norm.ppf(delta)
                return sensitivity * (z + np.hypot(z, np.sqrt(2 * epsilon))) / (2 * epsilon)
            """,
            # root finding on the tail of the library's Gaussian PLD
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                def excess(log_sigma):
                    pld = GaussianPLD.from_mechanism(np.exp(log_sigma), sensitivity)
                    return stats.norm.logsf(epsilon, loc=pld.mean, scale=pld.std) - np.log(delta)
                return float(np.exp(optimize.brentq(excess, -10.0, 60.0, xtol=1e-14, rtol=1e-15)))
            """,
        ],
        "wrong": [
            # the classical textbook calibration: valid, but not the tail-bound sigma
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                return sensitivity * np.sqrt(2 * np.log(1.25 / delta)) / epsilon
            """,
            # ignores the mean of the loss: solves P(s Z > epsilon) = delta
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                return sensitivity * stats.norm.isf(delta) / epsilon
            """,
            # issue 22 item 8b: the quadratic's root in the naive form: cancels as epsilon -> 0 (1e-9)
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = stats.norm.isf(delta)
                return sensitivity / (-z + np.sqrt(z ** 2 + 2 * epsilon))
            """,
            # issue 22 item 8b: stats.norm.ppf(1 - delta): 1 - delta rounds to 1 for a tiny delta (1e-300)
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = stats.norm.ppf(1 - delta)
                return sensitivity * (z + np.sqrt(z * z + 2 * epsilon)) / (2 * epsilon)
            """,
            # forgets the sensitivity (right for sensitivity 1 only)
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = stats.norm.isf(delta)
                return 1.0 / (np.sqrt(z * z + 2 * epsilon) - z)
            """,
        ],
    },
}
