"""Answer variants for ``solutions/01_foundations``: what the autograder must accept and reject.

Format (the same for every lecture; ``tests/test_answer_variants.py`` reads ``VARIANTS``)::

    VARIANTS = {
        "<grade_id of an autograded answer cell>": {
            "correct_alt": [code, ...],   # different but correct answers: must get full marks
            "wrong": [code, code, ...],   # typical mistakes: must lose points
        },
    }

Each code string replaces the whole answer cell (so it repeats the ``def`` line) and is dedented before use.
Every autograded answer cell needs at least one correct alternative and two wrong answers.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1 (a): channel of R_p
    "ex1a_channel": {
        "correct_alt": [
            # scalar loops instead of matrix arithmetic
            """
            def uniform_mixture_channel(p, k):
                M = np.empty((k, k))
                for x in range(k):
                    for y in range(k):
                        M[x, y] = (1 - p) / k + (p if x == y else 0.0)
                return M
            """,
            # diagonal and off-diagonal written out
            """
            def uniform_mixture_channel(p, k):
                M = np.full((k, k), (1.0 - p) / k)
                np.fill_diagonal(M, p + (1.0 - p) / k)
                return M
            """,
        ],
        "wrong": [
            # the fallback avoids the true answer (the slide's k-RR shape with p as truth probability)
            """
            def uniform_mixture_channel(p, k):
                M = np.full((k, k), (1 - p) / (k - 1))
                np.fill_diagonal(M, p)
                return M
            """,
            # forgets that the fallback can land on the true answer: rows do not sum to one
            """
            def uniform_mixture_channel(p, k):
                return p * np.eye(k) + (1 - p) / k * (1 - np.eye(k))
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (b): exact epsilon of R_p
    "ex1b_epsilon": {
        "correct_alt": [
            # same value, different algebra
            """
            def uniform_mixture_epsilon(p, k):
                return np.log(p * k + 1 - p) - np.log(1 - p)
            """,
            # computed numerically from the channel
            """
            def uniform_mixture_epsilon(p, k):
                M = p * np.eye(k) + (1 - p) / k
                return float(np.max(np.log(M[:, None, :] / M[None, :, :])))
            """,
        ],
        "wrong": [
            # ratio of "truth" to "fallback" probabilities, forgetting the fallback also hits the truth
            """
            def uniform_mixture_epsilon(p, k):
                return np.log(k * p / (1 - p))
            """,
            # the binary formula, right for k = 2 only (passes the visible checks, fails the hidden ones)
            """
            def uniform_mixture_epsilon(p, k):
                return np.log((1 + p) / (1 - p))
            """,
            # inverts the slide's k-RR truth probability p = e^eps / (k - 1 + e^eps)
            """
            def uniform_mixture_epsilon(p, k):
                return np.log((k - 1) * p / (1 - p)) if p > 0 else 0.0
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 2: frequency estimation
    "ex2_estimate": {
        "correct_alt": [
            # solve the linear system E[f] = M^T pi with the channel, frequencies counted in a loop
            """
            def estimate_frequencies(reports, p, k):
                reports = np.asarray(reports)
                observed = np.array([np.mean(reports == y) for y in range(k)])
                M = p * np.eye(k) + (1 - p) / k
                return np.linalg.solve(M.T, observed)
            """,
        ],
        "wrong": [
            # no debiasing at all
            """
            def estimate_frequencies(reports, p, k):
                return np.bincount(reports, minlength=k) / len(reports)
            """,
            # np.bincount without minlength: too short when the last answers never occur
            """
            def estimate_frequencies(reports, p, k):
                observed = np.bincount(reports) / len(reports)
                return (observed - (1 - p) / k) / p
            """,
            # debiases as if the fallback avoided the true answer
            """
            def estimate_frequencies(reports, p, k):
                observed = np.bincount(reports, minlength=k) / len(reports)
                other = (1 - p) / (k - 1)
                return (observed - other) / (p - other)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (a): sensitivity
    "ex3a_sensitivity": {
        "correct_alt": [
            """
            def clipped_mean_sensitivity(n, lower, upper):
                return abs(lower - upper) * (1.0 / n)
            """,
        ],
        "wrong": [
            # ignores the lower end of the range
            """
            def clipped_mean_sensitivity(n, lower, upper):
                return upper / n
            """,
            # sensitivity of the clipped sum, not of the mean
            """
            def clipped_mean_sensitivity(n, lower, upper):
                return upper - lower
            """,
            # a valid but loose bound
            """
            def clipped_mean_sensitivity(n, lower, upper):
                return 2 * (upper - lower) / n
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (b): private clipped mean
    "ex3b_release": {
        "correct_alt": [
            # Laplace noise as the difference of two exponentials (consumes the generator differently)
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng):
                x = np.asarray(x, dtype=float)
                b = (upper - lower) / (x.size * epsilon)
                return float(np.mean(np.minimum(np.maximum(x, lower), upper)) + b * (rng.exponential() - rng.exponential()))
            """,
            # the library's Laplace mechanism
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng):
                x = np.asarray(x, dtype=float)
                mech = LaplaceMechanism.from_epsilon(epsilon, sensitivity=(upper - lower) / len(x))
                return mech.sample(np.clip(x, lower, upper).mean(), rng)
            """,
        ],
        "wrong": [
            # forgets to clip
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng):
                return float(np.mean(x) + rng.laplace(0.0, (upper - lower) / (len(x) * epsilon)))
            """,
            # noise for the sum, not the mean
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng):
                return float(np.clip(x, lower, upper).mean() + rng.laplace(0.0, (upper - lower) / epsilon))
            """,
            # Gaussian noise with the Laplace scale as standard deviation
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng):
                b = (upper - lower) / (len(x) * epsilon)
                return float(np.clip(x, lower, upper).mean() + rng.normal(0.0, b))
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 4 (b): tight example
    "ex4b_example": {
        "correct_alt": [
            # two outputs suffice: an asymmetric example
            """
            def tight_example(epsilon, delta):
                e = np.exp(epsilon)
                P_minus = np.array([0.0, 1.0])
                P_zero = np.array([delta, 1 - delta])
                P_plus = np.array([(1 + e) * delta, 1 - (1 + e) * delta])
                return P_minus, P_zero, P_plus
            """,
        ],
        "wrong": [
            # only 2 delta on the revealing output: valid, but not tight
            """
            def tight_example(epsilon, delta):
                return (np.array([0.0, 1.0]), np.array([delta, 1 - delta]), np.array([2 * delta, 1 - 2 * delta]))
            """,
            # forgets to renormalise the middle pmf
            """
            def tight_example(epsilon, delta):
                e = np.exp(epsilon)
                return (np.array([0.0, (1 + e) * delta, 1 - (1 + e) * delta]),
                        np.array([delta, delta, 1 - delta]),
                        np.array([(1 + e) * delta, 0.0, 1 - (1 + e) * delta]))
            """,
            # e^eps * 2 delta on the revealing output: tight-looking, but the adjacent pair needs more than delta
            """
            def tight_example(epsilon, delta):
                e = np.exp(epsilon)
                return (np.array([0.0, 1.0]), np.array([delta, 1 - delta]), np.array([2 * e * delta, 1 - 2 * e * delta]))
            """,
        ],
    },
}
