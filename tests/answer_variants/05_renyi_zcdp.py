"""Answer variants for ``solutions/05_renyi_zcdp``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py``.  Each code string replaces the whole answer cell.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1 (a): Gaussian Rényi divergence
    "ex1a_renyi": {
        "correct_alt": [
            # the log of the integral, divided by alpha - 1
            """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                alpha = np.asarray(alpha, dtype=float)
                s2 = alpha * sigma_q**2 + (1 - alpha) * sigma_p**2
                with np.errstate(invalid="ignore", divide="ignore"):
                    log_integral = (alpha * (alpha - 1) * (mu_p - mu_q) ** 2 / (2 * s2)
                                    + alpha * np.log(sigma_q) + (1 - alpha) * np.log(sigma_p) - 0.5 * np.log(s2))
                    out = log_integral / (alpha - 1)
                return np.where(s2 > 0, out, np.inf)
            """,
            # in precisions, one order at a time with math
            """
            import math

            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                def one(a):
                    tau = a / sigma_p**2 - (a - 1) / sigma_q**2        # precision of the tilted density
                    if tau <= 0:
                        return math.inf
                    s2 = tau * sigma_p**2 * sigma_q**2
                    return (math.log(sigma_q / sigma_p) - math.log(s2 / sigma_q**2) / (2 * (a - 1))
                            + a * (mu_p - mu_q) ** 2 / (2 * s2))
                return np.vectorize(one, otypes=[float])(alpha)
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                return np.zeros_like(np.asarray(alpha, dtype=float))
            """, "at_most": 0},
            # the equal-variance formula, whatever the variances
            {"code": """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                return np.asarray(alpha, dtype=float) * (mu_p - mu_q) ** 2 / (2 * sigma_q**2)
            """, "at_most": 1},
            # the slides' loose constant
            """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                alpha = np.asarray(alpha, dtype=float)
                s2 = alpha * sigma_q**2 + (1 - alpha) * sigma_p**2
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = (np.log(sigma_q / sigma_p) + np.log(sigma_q**2 / s2) / (2 * (alpha - 1))
                           + alpha * (mu_p - mu_q) ** 2 / s2)
                return np.where(s2 > 0, out, np.inf)
            """,
            # the KL divergence (forgets the order)
            """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                kl = np.log(sigma_q / sigma_p) + (sigma_p**2 + (mu_p - mu_q) ** 2) / (2 * sigma_q**2) - 0.5
                return kl + 0 * np.asarray(alpha, dtype=float)
            """,
            # right where finite, but NaN instead of inf beyond the critical order
            """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                alpha = np.asarray(alpha, dtype=float)
                s2 = alpha * sigma_q**2 + (1 - alpha) * sigma_p**2
                with np.errstate(invalid="ignore", divide="ignore"):
                    return (np.log(sigma_q / sigma_p) + np.log(sigma_q**2 / s2) / (2 * (alpha - 1))
                            + alpha * (mu_p - mu_q) ** 2 / (2 * s2))
            """,
            # P and Q swapped
            """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                alpha = np.asarray(alpha, dtype=float)
                s2 = alpha * sigma_p**2 + (1 - alpha) * sigma_q**2
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = (np.log(sigma_p / sigma_q) + np.log(sigma_p**2 / s2) / (2 * (alpha - 1))
                           + alpha * (mu_p - mu_q) ** 2 / (2 * s2))
                return np.where(s2 > 0, out, np.inf)
            """,
            # numerics instead of the derivation: the library's divergence of the densities on a grid
            {"code": """
            def gaussian_renyi(alpha, mu_p, sigma_p, mu_q, sigma_q):
                y = np.linspace(-35, 35, 100_001)
                p, q = stats.norm.pdf(y, mu_p, sigma_p), stats.norm.pdf(y, mu_q, sigma_q)
                return renyi_divergence(p / p.sum(), q / q.sum(), alpha)
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (a): zCDP -> (epsilon, delta)
    "ex2a_forward": {
        "correct_alt": [
            # epsilon as the conversion evaluated at the optimal order
            """
            def zcdp_to_dp(rho, log_inv_delta):
                alpha = 1.0 + (log_inv_delta / rho) ** 0.5
                return alpha * rho + log_inv_delta / (alpha - 1.0), alpha
            """,
            # a numerical minimiser (issue 22 item 8): Brent's method on u = ln(alpha - 1), where the conversion is
            # convex; its order is accurate to about 1e-8, its epsilon to the last digit
            """
            from scipy import optimize

            def zcdp_to_dp(rho, log_inv_delta):
                def conversion(u):
                    return rho * (1 + np.exp(u)) + log_inv_delta * np.exp(-u)

                best = optimize.minimize_scalar(conversion, bracket=(-60.0, 60.0), tol=1e-12)
                alpha = 1 + np.exp(best.x)
                return float(alpha * rho + log_inv_delta / (alpha - 1)), float(alpha)
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def zcdp_to_dp(rho, log_inv_delta):
                return 0.0, 2.0
            """, "at_most": 0},
            # the slides' misprint (with the right order)
            """
            def zcdp_to_dp(rho, log_inv_delta):
                return rho + 4 * rho * log_inv_delta, 1 + np.sqrt(log_inv_delta / rho)
            """,
            # the library's epsilon and the best order on its grid
            {"code": """
            from dp_course.rdp_accounting import DEFAULT_ORDERS, rdp_to_dp_epsilon_and_order

            def zcdp_to_dp(rho, log_inv_delta):
                orders = np.asarray(DEFAULT_ORDERS)
                _, alpha = rdp_to_dp_epsilon_and_order(orders, rho * orders, np.exp(-log_inv_delta), method="classic")
                return zcdp_to_dp_epsilon(rho, np.exp(-log_inv_delta), method="bun_steinke"), alpha
            """, "at_most": 0},
            # right epsilon, order from a wrong derivative (L/rho instead of its square root)
            """
            def zcdp_to_dp(rho, log_inv_delta):
                return rho + 2 * np.sqrt(rho * log_inv_delta), 1 + log_inv_delta / rho
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (b): the inverse
    "ex2b_inverse": {
        "correct_alt": [
            # sqrt(rho) as the positive root of the quadratic, in the stable form, and alpha from (a)
            """
            def rho_for_target(epsilon, log_inv_delta):
                root = epsilon / (np.sqrt(log_inv_delta) + np.sqrt(log_inv_delta + epsilon))   # sqrt(rho)
                rho = root * root
                return rho, 1 + np.sqrt(log_inv_delta) / root
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def rho_for_target(epsilon, log_inv_delta):
                return epsilon, 2.0
            """, "at_most": 0},
            # the slides' Scenario-2 formula: the square is missing
            """
            def rho_for_target(epsilon, log_inv_delta):
                rho = np.sqrt(log_inv_delta + epsilon) - np.sqrt(log_inv_delta)
                return rho, 1 + np.sqrt(log_inv_delta / rho)
            """,
            # right formula, but it cancels when epsilon << L (fails the hidden cases)
            """
            def rho_for_target(epsilon, log_inv_delta):
                rho = (np.sqrt(log_inv_delta + epsilon) - np.sqrt(log_inv_delta)) ** 2
                return rho, 1 + np.sqrt(log_inv_delta / rho)
            """,
            # the library's rho: cannot take delta = e^(-L) for large L (fails the hidden cases)
            {"code": """
            def rho_for_target(epsilon, log_inv_delta):
                rho = zcdp_rho_for_dp(epsilon, np.exp(-log_inv_delta), method="bun_steinke")
                return rho, 1 + np.sqrt(log_inv_delta / rho)
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (a): subsampled "is there a 1?"
    "ex3a_probability": {
        "correct_alt": [
            # scipy's hypergeometric law
            """
            def or_report_probability(epsilon, m, n, k):
                t = np.exp(epsilon) / (1 + np.exp(epsilon))
                p_none = stats.hypergeom(n, np.asarray(k), m).pmf(0)
                return t - (2 * t - 1) * p_none
            """,
            # product of the ratios (n - m - j)/(n - j), in logs, one k at a time
            """
            def or_report_probability(epsilon, m, n, k):
                t = 1 / (1 + np.exp(-epsilon))
                def one(kk):
                    if n - kk < m:
                        return t
                    j = np.arange(kk)
                    p_none = np.exp(np.sum(np.log1p(-m / (n - j))))
                    return t * (1 - p_none) + (1 - t) * p_none
                return np.vectorize(one, otypes=[float])(k)
            """,
        ],
        "wrong": [
            # trivial answer: the sampling rate
            {"code": """
            def or_report_probability(epsilon, m, n, k):
                return np.full(np.shape(k), m / n)
            """, "at_most": 0},
            # sampling with replacement / independent inclusion
            """
            def or_report_probability(epsilon, m, n, k):
                t = 1 / (1 + np.exp(-epsilon))
                p_none = (1 - m / n) ** np.asarray(k, dtype=float)
                return t * (1 - p_none) + (1 - t) * p_none
            """,
            # forgets the randomized response on the bit
            """
            def or_report_probability(epsilon, m, n, k):
                return 1 - stats.hypergeom(n, np.asarray(k), m).pmf(0)
            """,
            # binomial coefficients in floating point: overflow for large n
            """
            from scipy.special import comb

            def or_report_probability(epsilon, m, n, k):
                t = 1 / (1 + np.exp(-epsilon))
                p_none = comb(n - np.asarray(k), m) / comb(n, m)
                return t * (1 - p_none) + (1 - t) * p_none
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (b): budget per step
    "ex3b_budget": {
        "correct_alt": [
            # the same inversion with math, and for a large budget per step the 1 and the -1 dropped (e^-40 is
            # below the tests' tolerance)
            """
            import math

            def per_step_budget(epsilon, delta, steps, m, n):
                eps_step = epsilon / steps
                if eps_step > 40:
                    return eps_step + math.log(n / m), delta / steps * n / m
                return math.log1p((n / m) * math.expm1(eps_step)), delta / steps * n / m
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def per_step_budget(epsilon, delta, steps, m, n):
                return epsilon, delta
            """, "at_most": 0},
            # basic composition without amplification
            """
            def per_step_budget(epsilon, delta, steps, m, n):
                return epsilon / steps, delta / steps
            """,
            # applies the amplification formula forwards instead of inverting it
            """
            def per_step_budget(epsilon, delta, steps, m, n):
                return np.log1p(m / n * np.expm1(epsilon / steps)), m * delta / (n * steps)
            """,
            # right inversion, but exp(x) - 1 loses the digits when epsilon / T is tiny
            """
            def per_step_budget(epsilon, delta, steps, m, n):
                return np.log(1 + n / m * (np.exp(epsilon / steps) - 1)), n * delta / (m * steps)
            """,
            # right inversion with log1p/expm1, but e^(epsilon/T) overflows for a large budget per step
            """
            def per_step_budget(epsilon, delta, steps, m, n):
                return float(np.log1p(n / m * np.expm1(epsilon / steps))), n * delta / (m * steps)
            """,
            # the library's Scenario 1 (issue 22 item 8): with sensitivity m its Laplace scale is 1 / epsilon0; it
            # shares the overflow above and earns at most the round-trip point
            {"code": """
            from dp_course.dpsgd import scenario1_laplace_scale

            def per_step_budget(epsilon, delta, steps, m, n):
                return 1 / scenario1_laplace_scale(epsilon, steps, m, n, sensitivity=m), n * delta / (m * steps)
            """, "at_most": 1},
        ],
    },
    # ---------------------------------------------------------------- Exercise 4 (a): the exact Gaussian profile
    "ex4a_profile": {
        "correct_alt": [
            # ln(A - B) as a signed logsumexp, one epsilon at a time
            """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                def one(e):
                    a = sensitivity / (2 * sigma) - e * sigma / sensitivity
                    b = -sensitivity / (2 * sigma) - e * sigma / sensitivity
                    return special.logsumexp([special.log_ndtr(a), e + special.log_ndtr(b)], b=[1.0, -1.0])
                out = np.vectorize(one, otypes=[float])(np.asarray(epsilon, dtype=float))
                return float(out) if out.ndim == 0 else out
            """,
            # scipy.stats' logcdf and log1p(-exp(.)) in place of log_ndtr and expm1
            """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                epsilon = np.asarray(epsilon, dtype=float)
                z = epsilon * sigma / sensitivity
                log_a = stats.norm.logcdf(sensitivity / (2 * sigma) - z)
                log_b = epsilon + stats.norm.logcdf(-sensitivity / (2 * sigma) - z)
                return log_a + np.log1p(-np.exp(log_b - log_a))
            """,
        ],
        "wrong": [
            # the formula typed as it stands (linear space): e^epsilon overflows, both terms underflow
            """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                epsilon = np.asarray(epsilon, dtype=float)
                a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
                b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
                with np.errstate(all="ignore"):
                    return np.log(stats.norm.cdf(a) - np.exp(epsilon) * stats.norm.cdf(b))
            """,
            # half in log-space: the second term still formed as e^epsilon Phi(b)
            """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                epsilon = np.asarray(epsilon, dtype=float)
                a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
                b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
                with np.errstate(all="ignore"):
                    log_second = np.log(np.exp(epsilon) * special.ndtr(b))
                    return special.log_ndtr(a) + np.log(-np.expm1(log_second - special.log_ndtr(a)))
            """,
            # the tail bound P(L > epsilon) instead of the profile
            """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                mu = sensitivity**2 / (2 * sigma**2)
                return stats.norm.logsf(np.asarray(epsilon, dtype=float), loc=mu, scale=np.sqrt(2 * mu))
            """,
            # the library's exact profile: right wherever delta is a float, -inf below 1e-308
            {"code": """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                with np.errstate(divide="ignore"):
                    return np.log(GaussianPLD.from_mechanism(sigma, sensitivity).delta_for_epsilon(epsilon))
            """, "at_most": 0},
            # the library's private log-space profile: the same formula, right to the last digit everywhere, so no
            # value can tell it from a derivation. The text makes the whole part library-free ("calls to the
            # library's Gaussian PLD earn nothing for this part") and both test cells trace the call
            # (dp_course.testing.library_calls): 0 of the 3 points
            {"code": """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                pld = GaussianPLD.from_mechanism(sigma, sensitivity)
                return pld._log_delta(np.asarray(epsilon, dtype=float))
            """, "at_most": 0},
            # trivial: delta = 1 everywhere
            {"code": """
            def gaussian_log_profile(epsilon, sigma, sensitivity):
                return np.zeros_like(np.asarray(epsilon, dtype=float))
            """, "at_most": 0},
        ],
    },
    # ---------------------------------------------------------------- Exercise 4 (b): the smallest sigma
    "ex4b_sigma": {
        "correct_alt": [
            # bisection by hand on ln sigma, returning the end that meets the target
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                def meets(log_sigma):
                    return gaussian_log_profile(epsilon, np.exp(log_sigma), 1.0) <= -log_inv_delta
                fails, passes = 0.0, 0.0
                while meets(fails):
                    fails -= 1.0
                while not meets(passes):
                    passes += 1.0
                for _ in range(200):
                    middle = 0.5 * (fails + passes)
                    if middle in (fails, passes):
                        break
                    if meets(middle):
                        passes = middle
                    else:
                        fails = middle
                return float(sensitivity * np.exp(passes))
            """,
            # TOMS 748 on sigma itself, bracketed from the classical formula
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                def excess(sigma):
                    return gaussian_log_profile(epsilon, sigma, 1.0) + log_inv_delta
                high = np.sqrt(2 * (np.log(1.25) + log_inv_delta)) / epsilon
                while excess(high) > 0:
                    high *= 2.0
                low = high / 2
                while excess(low) <= 0:
                    low /= 2.0
                result = optimize.root_scalar(excess, bracket=(low, high), method="toms748", xtol=1e-300,
                                              rtol=4 * np.finfo(float).eps, maxiter=500)
                return float(sensitivity * result.root)
            """,
        ],
        "wrong": [
            # the classical formula: loose below epsilon ~ 8, invalid above
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                return float(sensitivity * np.sqrt(2 * (np.log(1.25) + log_inv_delta)) / epsilon)
            """,
            # the zCDP route: rho of Exercise 2(b), then sigma = Delta / sqrt(2 rho) (valid, not the smallest)
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                rho = (epsilon / (np.sqrt(log_inv_delta + epsilon) + np.sqrt(log_inv_delta))) ** 2
                return float(sensitivity / np.sqrt(2 * rho))
            """,
            # the wrong end of the bracket: a bisection to 1e-9 that returns the end that FAILS the target
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                def meets(log_sigma):
                    return gaussian_log_profile(epsilon, np.exp(log_sigma), 1.0) <= -log_inv_delta
                fails, passes = -1.0, 1.0
                while meets(fails):
                    fails -= 1.0
                while not meets(passes):
                    passes += 1.0
                while passes - fails > 1e-9:
                    middle = 0.5 * (fails + passes)
                    if meets(middle):
                        passes = middle
                    else:
                        fails = middle
                return float(sensitivity * np.exp(fails))
            """,
            # the bracket the wrong way round: takes delta to grow with sigma, and ends at an end of the bracket
            """
            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                low, high = np.log(1e-3), np.log(1e3)
                for _ in range(200):
                    middle = 0.5 * (low + high)
                    if gaussian_log_profile(epsilon, np.exp(middle), 1.0) <= -log_inv_delta:
                        low = middle
                    else:
                        high = middle
                return float(sensitivity * np.exp(low))
            """,
            # the library's calibration: exact wherever delta = e^-kappa is a float, an error below 1e-308
            {"code": """
            from dp_course.calibration import gaussian_sigma

            def calibrate_gaussian_sigma(epsilon, log_inv_delta, sensitivity):
                return gaussian_sigma(epsilon, np.exp(-log_inv_delta), sensitivity)
            """, "at_most": 0},
        ],
    },
}
