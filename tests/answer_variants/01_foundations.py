"""Answer variants for ``solutions/01_foundations``: what the autograder must accept and reject.

Format (the same for every lecture; ``tests/test_answer_variants.py`` reads ``VARIANTS``)::

    VARIANTS = {
        "<grade_id of an autograded answer cell>": {
            "correct_alt": [code, ...],   # different but correct answers: must get full marks
            "wrong": [code, ...],         # typical mistakes: must lose points; or
                                          # {"code": code, "at_most": 1}: must score at most 1 point in
                                          # total on the answer's test cells (trivial answers, library
                                          # wrappers where the exercise is a derivation); or
                                          # {"code": code, "fails": [test grade_id, ...]}: must fail
                                          # exactly these test cells of its answer and pass the others
                                          # (a right answer written the way the text forbids)
        },
    }

Each code string replaces the whole answer cell (so it repeats the ``def`` line) and is dedented before use.
Every autograded answer cell needs at least one correct alternative and two wrong answers.  Every extra variant
index adds one submission to the nbgrader round trip, so the lists stay short.
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
            # trivial: the report ignores the truth (a valid channel, but not the one of R_p)
            {"code": """
            def uniform_mixture_channel(p, k):
                return np.full((k, k), 1.0 / k)
            """, "at_most": 1},
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
            # the binary formula, right for k = 2 only (the visible case k = 3 catches it)
            """
            def uniform_mixture_epsilon(p, k):
                return np.log((1 + p) / (1 - p))
            """,
            # inverts the slide's k-RR truth probability p = e^eps / (k - 1 + e^eps)
            """
            def uniform_mixture_epsilon(p, k):
                return np.log((k - 1) * p / (1 - p)) if p > 0 else 0.0
            """,
            # the slide's claim: R_p is as private as k-ary randomized response with truth probability p
            """
            def uniform_mixture_epsilon(p, k):
                return np.log(p * (k - 1) / (1 - p)) if p > 1 / k else 0.0
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
            # clips the estimates to [0, 1]: no longer unbiased (the visible negative case catches it)
            """
            def estimate_frequencies(reports, p, k):
                observed = np.bincount(reports, minlength=k) / len(reports)
                return np.clip((observed - (1 - p) / k) / p, 0.0, 1.0)
            """,
            # clips and renormalises to a distribution: also biased
            """
            def estimate_frequencies(reports, p, k):
                observed = np.bincount(reports, minlength=k) / len(reports)
                est = np.clip((observed - (1 - p) / k) / p, 0.0, None)
                return est / est.sum()
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
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                x = np.asarray(x, dtype=float)
                b = (upper - lower) / (x.size * epsilon)
                centre = np.mean(np.minimum(np.maximum(x, lower), upper))
                return centre + b * (rng.exponential(size=size) - rng.exponential(size=size))
            """,
            # the library's Laplace mechanism, one query value per release
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                x = np.asarray(x, dtype=float)
                mech = LaplaceMechanism.from_epsilon(epsilon, sensitivity=(upper - lower) / len(x))
                centre = np.clip(x, lower, upper).mean()
                return mech.sample(centre if size is None else np.full(size, centre), rng)
            """,
        ],
        "wrong": [
            # forgets to clip
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                return np.mean(x) + rng.laplace(0.0, (upper - lower) / (len(x) * epsilon), size=size)
            """,
            # noise for the sum, not the mean
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                return np.clip(x, lower, upper).mean() + rng.laplace(0.0, (upper - lower) / epsilon, size=size)
            """,
            # Gaussian noise with the Laplace scale as standard deviation
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                b = (upper - lower) / (len(x) * epsilon)
                return np.clip(x, lower, upper).mean() + rng.normal(0.0, b, size=size)
            """,
            # noise scaled to the data's own (clipped) range: a privacy bug, caught by the constant-data case
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                clipped = np.clip(np.asarray(x, dtype=float), lower, upper)
                b = (clipped.max() - clipped.min()) / (len(x) * epsilon)
                return clipped.mean() + rng.laplace(0.0, b, size=size)
            """,
            # ignores the rng argument: the same seed does not give the same release
            """
            def private_clipped_mean(x, lower, upper, epsilon, rng, size=None):
                b = (upper - lower) / (len(x) * epsilon)
                return np.clip(x, lower, upper).mean() + np.random.laplace(0.0, b, size=size)
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
                return (np.array([0.0, 1.0]), np.array([delta, 1 - delta]),
                        np.array([2 * e * delta, 1 - 2 * e * delta]))
            """,
            # trivial: three identical pmfs are private but show nothing; only the formatting point
            {"code": """
            def tight_example(epsilon, delta):
                return np.array([0.5, 0.5]), np.array([0.5, 0.5]), np.array([0.5, 0.5])
            """, "at_most": 1},
            # trivial: the replacement pair is as far apart as possible, but the example is not private
            {"code": """
            def tight_example(epsilon, delta):
                return np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.array([0.0, 1.0])
            """, "at_most": 1},
        ],
    },
    # ---------------------------------------------------------------- Exercise 5 (a): budget of the pipeline
    "ex5a_pipeline": {
        "correct_alt": [
            # the library's basic composition over the list of releases that read the data
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return basic_composition([eps_age] + [eps_income] * int(repeats) + [2 / hist_scale])[0]
            """,
        ],
        "wrong": [
            # charges the post-processed age values (rounded mean, flag) as releases of their own
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return 3 * eps_age + repeats * eps_income + 2 / hist_scale
            """,
            # counts the repeated income releases once
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return eps_age + eps_income + 2 / hist_scale
            """,
            # one count per release: k separate releases of sensitivity 1
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return eps_age + repeats * eps_income + k / hist_scale
            """,
            # add/remove sensitivity of the histogram under replacement
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return eps_age + repeats * eps_income + 1 / hist_scale
            """,
            # charges the largest noisy group again
            """
            def pipeline_epsilon(eps_age, eps_income, repeats, k, hist_scale):
                return eps_age + repeats * eps_income + 4 / hist_scale
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 5 (b): averaging releases
    "ex5b_average": {
        "correct_alt": [
            # variance of an average of iid noises, then its square root
            """
            def averaged_release_sd(epsilon_total, repeats, sensitivity):
                b = sensitivity / (epsilon_total / repeats)
                return np.sqrt(repeats * 2 * b**2) / repeats
            """,
        ],
        "wrong": [
            # each release at the whole budget: averaging looks like it helps
            """
            def averaged_release_sd(epsilon_total, repeats, sensitivity):
                return np.sqrt(2) * sensitivity / epsilon_total / np.sqrt(repeats)
            """,
            # forgets the sqrt(2) of the Laplace standard deviation
            """
            def averaged_release_sd(epsilon_total, repeats, sensitivity):
                return np.sqrt(repeats) * sensitivity / epsilon_total
            """,
            # forgets that averaging divides the standard deviation by sqrt(repeats)
            """
            def averaged_release_sd(epsilon_total, repeats, sensitivity):
                return np.sqrt(2) * sensitivity * repeats / epsilon_total
            """,
            # the variance instead of the standard deviation
            """
            def averaged_release_sd(epsilon_total, repeats, sensitivity):
                return 2 * repeats * (sensitivity / epsilon_total) ** 2
            """,
        ],
    },
}
