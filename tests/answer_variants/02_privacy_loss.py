"""Answer variants for ``solutions/02_privacy_loss``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py``.  Every extra variant index adds one submission to
the nbgrader round trip (about 15 s of grading), so the lists stop at three wrong answers and two alternatives.  Each code string replaces a whole answer cell; the
notebook's setup cell has already imported ``np``, ``stats``, ``integrate``, ``optimize`` and the library.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1 (a): the loss function
    "ex1a_loss": {
        "correct_alt": [
            # scalar only, piecewise by region
            """
            def laplace_privacy_loss(y, epsilon):
                if y <= 0:
                    return epsilon
                if y >= 1:
                    return -epsilon
                return epsilon * (1 - 2 * y)
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
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (b): the CDF of L
    "ex1b_cdf": {
        "correct_alt": [
            # scalar, with the continuous part read off scipy's survival function of the output
            """
            def laplace_loss_cdf(x, epsilon):
                if x < -epsilon:
                    return 0.0
                if x >= epsilon:
                    return 1.0
                threshold = (1 - x / epsilon) / 2      # l(y) <= x exactly when y >= threshold
                return float(stats.laplace(0, 1 / epsilon).sf(threshold))
            """,
        ],
        "wrong": [
            # misses the atom at -epsilon (outputs y >= 1): the continuous part starts from 0
            """
            def laplace_loss_cdf(x, epsilon):
                if x < -epsilon:
                    return 0.0
                if x >= epsilon:
                    return 1.0
                return 0.5 * (np.exp(-(epsilon - x) / 2) - np.exp(-epsilon))
            """,
            # misses the atom at +epsilon: never reaches 1
            """
            def laplace_loss_cdf(x, epsilon):
                if x < -epsilon:
                    return 0.0
                return 0.5 * np.exp(-(epsilon - min(x, epsilon)) / 2)
            """,
            # continuous from the left: P(L < x) instead of P(L <= x)
            """
            def laplace_loss_cdf(x, epsilon):
                if x <= -epsilon:
                    return 0.0
                if x > epsilon:
                    return 1.0
                return 0.5 * np.exp(-(epsilon - x) / 2)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (c): the mean of L
    "ex1c_mean": {
        "correct_alt": [
            # the textbook form, with its (harmless at these epsilons) cancellation
            """
            def laplace_loss_mean(epsilon):
                return epsilon + np.exp(-epsilon) - 1
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
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (d): the Theta constants
    "ex1d_constants": {
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
    # ---------------------------------------------------------------- Exercise 2: delta from a discrete PLD
    "ex2_delta": {
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
        ],
    },
    # ---------------------------------------------------------------- Exercise 3: tail-bound calibration
    "ex3_sigma": {
        "correct_alt": [
            # the quadratic's root in the naive form
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = stats.norm.isf(delta)
                return sensitivity / (-z + np.sqrt(z ** 2 + 2 * epsilon))
            """,
            # root finding on the tail of the library's Gaussian PLD
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                def excess(log_sigma):
                    pld = GaussianPLD.from_mechanism(np.exp(log_sigma), sensitivity)
                    return stats.norm.logsf(epsilon, loc=pld.mean, scale=pld.std) - np.log(delta)
                return float(np.exp(optimize.brentq(excess, -10.0, 10.0, xtol=1e-14, rtol=1e-15)))
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
            # forgets the sensitivity (right for sensitivity 1 only)
            """
            def gaussian_sigma_from_tail(epsilon, delta, sensitivity=1.0):
                z = stats.norm.isf(delta)
                return 1.0 / (np.sqrt(z * z + 2 * epsilon) - z)
            """,
        ],
    },
}
