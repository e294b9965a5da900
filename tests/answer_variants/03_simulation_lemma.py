"""Answer variants for ``solutions/03_simulation_lemma``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py``.  Every extra variant index adds one submission to the
nbgrader round trip, so the lists stop at two alternatives and three wrong answers (four for the sampler, where
ignoring ``rng`` is a mistake of its own, and for the core pair, where two valid but different core pairs - the
library's and an independent even cut - must earn only the point of the symmetric pairs).  Each code string
replaces a whole answer cell; the notebook's setup cell has already imported ``math``, ``itertools``, ``np``,
``stats``, ``integrate`` and the library names.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1 (a): the table of U and V
    "ex1a_pmfs": {
        "correct_alt": [
            # the table typed in with e^eps / (e^eps + 1) (fine for epsilon <= 50)
            """
            def leaky_rr_pmfs(epsilon, delta):
                e = math.exp(epsilon)
                return ([(1 - delta) * e / (e + 1), (1 - delta) / (e + 1), delta, 0.0],
                        [(1 - delta) / (e + 1), (1 - delta) * e / (e + 1), 0.0, delta])
            """,
        ],
        "wrong": [
            # forgets that 0 and 1 only share the mass 1 - delta
            """
            def leaky_rr_pmfs(epsilon, delta):
                e = math.exp(epsilon)
                p_u = np.array([e / (e + 1), 1 / (e + 1), delta, 0.0])
                return p_u, np.array([1 / (e + 1), e / (e + 1), 0.0, delta])
            """,
            # U says "I am V" and V says "I am U"
            """
            def leaky_rr_pmfs(epsilon, delta):
                e = math.exp(epsilon)
                hi, lo = (1 - delta) * e / (e + 1), (1 - delta) / (e + 1)
                return np.array([hi, lo, 0.0, delta]), np.array([lo, hi, delta, 0.0])
            """,
            # U favours the outcome 1 instead of 0
            """
            def leaky_rr_pmfs(epsilon, delta):
                e = math.exp(epsilon)
                hi, lo = (1 - delta) * e / (e + 1), (1 - delta) / (e + 1)
                return np.array([lo, hi, delta, 0.0]), np.array([hi, lo, 0.0, delta])
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 1 (b): the witness event
    "ex1b_event": {
        "correct_alt": [
            # brute force over every event (the tests use at most 8 outcomes)
            """
            def violating_event(p, q, epsilon, delta):
                p, q = list(p), list(q)
                n = len(p)
                for size in range(1, n + 1):
                    for event in itertools.combinations(range(n), size):
                        pe, qe = sum(p[i] for i in event), sum(q[i] for i in event)
                        if max(pe - math.exp(epsilon) * qe, qe - math.exp(epsilon) * pe) > delta + 1e-12:
                            return list(event)
                return None
            """,
            # the library's verdict, and the worst event of the failing direction as a boolean mask
            """
            def violating_event(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                if is_indistinguishable(p, q, epsilon, delta):
                    return None
                if hockey_stick_divergence(p, q, epsilon) >= hockey_stick_divergence(q, p, epsilon):
                    return p > np.exp(epsilon) * q
                return q > np.exp(epsilon) * p
            """,
            # the worst event as a Python set, the way the lecture's demonstration prints events (issue 26)
            """
            def violating_event(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                for first, second in [(p, q), (q, p)]:
                    gap = first - np.exp(epsilon) * second
                    event = {int(i) for i in np.flatnonzero(gap > 0)}
                    if gap[sorted(event)].sum() > delta + 1e-12:
                        return event
                return None
            """,
        ],
        "wrong": [
            # checks only P(E) <= e^eps Q(E) + delta
            """
            def violating_event(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                gap = p - np.exp(epsilon) * q
                event = np.flatnonzero(gap > 0)
                return event.tolist() if gap[event].sum() > delta + 1e-12 else None
            """,
            # checks single outcomes only, not events
            """
            def violating_event(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                for i in range(p.size):
                    if p[i] > np.exp(epsilon) * q[i] + delta or q[i] > np.exp(epsilon) * p[i] + delta:
                        return [i]
                return None
            """,
            # the library's yes/no, and then every outcome as the "event" (earns the verdict point only)
            {"code": """
            def violating_event(p, q, epsilon, delta):
                if is_indistinguishable(p, q, epsilon, delta):
                    return None
                return list(range(len(p)))
            """, "at_most": 1},
            # issue 22 item 7: the right verdict, but the witness {P > Q} (or {Q > P}) instead of {P > e^eps Q}: fails
            # the visible case p = [0.3, 0.4, 0.3], q = [0.1, 0.3, 0.6], eps = 0.5, delta = 0.07
            {"code": """
            def violating_event(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                if is_indistinguishable(p, q, epsilon, delta):
                    return None
                up, down = np.flatnonzero(p > q), np.flatnonzero(q > p)
                gain_up = p[up].sum() - np.exp(epsilon) * q[up].sum()
                gain_down = q[down].sum() - np.exp(epsilon) * p[down].sum()
                return up.tolist() if gain_up >= gain_down else down.tolist()
            """, "at_most": 1},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (a): the densities
    "ex2a_densities": {
        "correct_alt": [
            # the delta = 0 formula applied to scipy's densities
            """
            def laplace_map_densities(y, epsilon):
                p = stats.laplace.pdf(y, loc=0.0, scale=1 / epsilon)
                q = stats.laplace.pdf(y, loc=1.0, scale=1 / epsilon)
                return (np.exp(epsilon) * p - q) / np.expm1(epsilon), (np.exp(epsilon) * q - p) / np.expm1(epsilon)
            """,
            # piece by piece, with the middle piece as a difference of exponentials
            """
            def laplace_map_densities(y, epsilon):
                y = np.asarray(y, dtype=float)
                f0, f1 = np.zeros_like(y), np.zeros_like(y)
                left, mid, right = y <= 0, (y > 0) & (y < 1), y >= 1
                c = 0.5 * epsilon * (1 + np.exp(-epsilon))
                f0[left] = c * np.exp(epsilon * y[left])
                f1[right] = c * np.exp(-epsilon * (y[right] - 1))
                u = y[mid]
                scale = 0.5 * epsilon / (np.exp(epsilon) - 1)
                f0[mid] = scale * (np.exp(epsilon * (1 - u)) - np.exp(-epsilon * (1 - u)))
                f1[mid] = scale * (np.exp(epsilon * u) - np.exp(-epsilon * u))
                return f0, f1
            """,
        ],
        "wrong": [
            # F(0) = P and F(1) = Q: valid densities, but F(U) is then a mixture of P and Q
            {"code": """
            def laplace_map_densities(y, epsilon):
                return stats.laplace.pdf(y, 0.0, 1 / epsilon), stats.laplace.pdf(y, 1.0, 1 / epsilon)
            """, "at_most": 1},
            # a numerical approximation: the right densities interpolated from a grid of step 0.001
            {"code": """
            def laplace_map_densities(y, epsilon):
                grid = np.arange(-40 / epsilon, 1 + 40 / epsilon, 1e-3)
                p = stats.laplace.pdf(grid, 0.0, 1 / epsilon)
                q = stats.laplace.pdf(grid, 1.0, 1 / epsilon)
                f0, f1 = (np.exp(epsilon) * p - q) / np.expm1(epsilon), (np.exp(epsilon) * q - p) / np.expm1(epsilon)
                return np.interp(y, grid, f0), np.interp(y, grid, f1)
            """, "at_most": 0},
            # F(0) and F(1) swapped
            """
            def laplace_map_densities(y, epsilon):
                p = stats.laplace.pdf(y, 0.0, 1 / epsilon)
                q = stats.laplace.pdf(y, 1.0, 1 / epsilon)
                return (np.exp(epsilon) * q - p) / np.expm1(epsilon), (np.exp(epsilon) * p - q) / np.expm1(epsilon)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 2 (b): the sampler
    "ex2b_sampler": {
        "correct_alt": [
            # rejection sampling: propose from P (for z = 0) or Q (for z = 1), accept with prob. f / (M p)
            """
            def sample_laplace_map(z, epsilon, rng):
                z = np.asarray(z)
                out = np.empty(z.shape)
                for value, centre, sign in ((0, 0.0, 1.0), (1, 1.0, -1.0)):
                    idx = np.flatnonzero(z == value)
                    todo = idx
                    while todo.size:
                        y = centre + rng.laplace(0.0, 1 / epsilon, todo.size)
                        # acceptance 1 - e^(-eps - l) (z = 0) or 1 - e^(-eps + l) (z = 1), l = eps(|y - 1| - |y|)
                        loss = epsilon * (np.abs(y - 1) - np.abs(y))
                        keep = rng.random(todo.size) < -np.expm1(-epsilon - sign * loss)
                        out[todo[keep]] = y[keep]
                        todo = todo[~keep]
                return out
            """,
            # inversion of each piece with cosh instead of sinh^2
            """
            def sample_laplace_map(z, epsilon, rng):
                z = np.asarray(z)
                n = z.size
                u, v, w = rng.random(n), rng.random(n), rng.random(n)
                left = np.log(v) / epsilon                               # -Exp(epsilon)
                middle = 1 - np.arccosh(1 + w * (np.cosh(epsilon) - 1)) / epsilon
                draws = np.where(u < (1 + np.exp(-epsilon)) / 2, left, middle)
                return np.where(z == 0, draws, 1 - draws)
            """,
        ],
        "wrong": [
            # ignores z: always a draw of P
            {"code": """
            def sample_laplace_map(z, epsilon, rng):
                return rng.laplace(0.0, 1 / epsilon, np.shape(z))
            """, "at_most": 1},
            # issue 22 item 7: not a map: looks at the whole of z (its mean) and returns i.i.d. draws of P or Q, which
            # passes every test that feeds samples of U or V; the per-entry test (all-0, all-1 inputs) catches it
            {"code": """
            def sample_laplace_map(z, epsilon, rng):
                z = np.asarray(z)
                return rng.laplace(0.0 if z.mean() < 0.5 else 1.0, 1 / epsilon, z.shape)
            """, "at_most": 1},
            # F(0) and F(1) swapped
            """
            def sample_laplace_map(z, epsilon, rng):
                z = np.asarray(z)
                n = z.size
                pick_left = rng.random(n) < (1 + np.exp(-epsilon)) / 2
                left = -rng.exponential(1.0 / epsilon, n)
                middle = 1.0 - 2.0 / epsilon * np.arcsinh(np.sqrt(rng.random(n)) * np.sinh(epsilon / 2))
                draws = np.where(pick_left, left, middle)
                return np.where(z == 1, draws, 1.0 - draws)
            """,
            # F(0) = P and F(1) = Q
            """
            def sample_laplace_map(z, epsilon, rng):
                z = np.asarray(z)
                return np.where(z == 0, 0.0, 1.0) + rng.laplace(0.0, 1 / epsilon, z.shape)
            """,
            # the right law, but from a fresh unseeded generator instead of rng
            """
            def sample_laplace_map(z, epsilon, rng):
                own = np.random.default_rng()
                z = np.asarray(z)
                n = z.size
                pick_left = own.random(n) < (1 + np.exp(-epsilon)) / 2
                left = -own.exponential(1.0 / epsilon, n)
                middle = 1.0 - 2.0 / epsilon * np.arcsinh(np.sqrt(own.random(n)) * np.sinh(epsilon / 2))
                draws = np.where(pick_left, left, middle)
                return np.where(z == 0, draws, 1.0 - draws)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (a): the core pair
    # The exercise asks for the mixing core pair; any valid core pair earns the point of the symmetric pairs.
    "ex3a_core": {
        "correct_alt": [
            # scale first, then mix the heavier side towards e^-eps times the lighter one
            """
            def core_pair(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                px, qy = np.minimum(p, np.exp(epsilon) * q), np.minimum(q, np.exp(epsilon) * p)
                if px.sum() <= qy.sum():
                    x = (1 - delta) / px.sum() * px
                    y_top, y_low = (1 - delta) / px.sum() * qy, np.exp(-epsilon) * x
                    t = (y_top.sum() - (1 - delta)) / (y_top.sum() - y_low.sum()) if y_top.sum() > y_low.sum() else 0.0
                    return x, (1 - t) * y_top + t * y_low
                y = (1 - delta) / qy.sum() * qy
                x_top, x_low = (1 - delta) / qy.sum() * px, np.exp(-epsilon) * y
                t = (x_top.sum() - (1 - delta)) / (x_top.sum() - x_low.sum()) if x_top.sum() > x_low.sum() else 0.0
                return (1 - t) * x_top + t * x_low, y
            """,
            # theta in closed form from the two hockey-stick divergences (the library's), by recursion for q' lighter
            """
            def core_pair(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                dx, dy = hockey_stick_divergence(p, q, epsilon), hockey_stick_divergence(q, p, epsilon)
                if dx < dy:
                    y, x = core_pair(q, p, epsilon, delta)
                    return x, y
                e = math.exp(epsilon)
                light, heavy = np.minimum(p, e * q), np.minimum(q, e * p)
                denom = (1 - dy) - (1 - dx) / e
                theta = (dx - dy) / denom if denom > 0 else 0.0
                s = (1 - delta) / (1 - dx)
                return s * light, s * ((1 - theta) * heavy + theta * light / e)
            """,
        ],
        "wrong": [
            # the naive repair: scale p' and q' down to mass 1 - delta separately
            {"code": """
            def core_pair(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                px, qy = np.minimum(p, np.exp(epsilon) * q), np.minimum(q, np.exp(epsilon) * p)
                return (1 - delta) * px / px.sum(), (1 - delta) * qy / qy.sum()
            """, "at_most": 1},
            # read off the library's whole map with the corrected equations (7)-(8): x = (1 - delta)(a F0 + b F1).
            # A valid core pair, but the library's (an even cut): a library call earns only the symmetric point.
            {"code": """
            def core_pair(p, q, epsilon, delta):
                F = simulation_map(p, q, epsilon, delta)
                a, b = 1 / (1 + np.exp(-epsilon)), 1 / (1 + np.exp(epsilon))
                return (1 - delta) * (a * F[0] + b * F[1]), (1 - delta) * (b * F[0] + a * F[1])
            """, "at_most": 1},
            # water-filling: lower the heavier side evenly (by bisection) - valid, but not the mixing pair asked for
            {"code": """
            def core_pair(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                a, b = np.minimum(p, math.exp(epsilon) * q), np.minimum(q, math.exp(epsilon) * p)
                swap = a.sum() > b.sum()
                light, heavy = (b, a) if swap else (a, b)
                floor = light * math.exp(-epsilon)
                lo, hi = 0.0, float(heavy.max())
                for _ in range(200):
                    c = (lo + hi) / 2
                    if np.maximum(floor, heavy - c).sum() > light.sum():
                        lo = c
                    else:
                        hi = c
                heavy = np.maximum(floor, heavy - hi)
                heavy *= light.sum() / heavy.sum()          # remove the last rounding of the bisection
                s = (1 - delta) / light.sum()
                light, heavy = s * light, s * heavy
                return (heavy, light) if swap else (light, heavy)
            """, "at_most": 1},
            # p' and q' themselves: masses 1 - delta_x and 1 - delta_y instead of 1 - delta
            """
            def core_pair(p, q, epsilon, delta):
                p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
                return np.minimum(p, np.exp(epsilon) * q), np.minimum(q, np.exp(epsilon) * p)
            """,
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (b): the map from a core
    "ex3b_map": {
        "correct_alt": [
            # rows 0 and 1 from the library's delta = 0 map of the normalised core pair
            """
            def map_from_core(p, q, x, y, epsilon, delta):
                x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
                core = simulation_map(x / x.sum(), y / y.sum(), epsilon, 0.0)
                return np.vstack([core[:2], (np.asarray(p) - x) / delta, (np.asarray(q) - y) / delta])
            """,
            # the 2 x 2 system solved numerically for all outcomes at once
            """
            def map_from_core(p, q, x, y, epsilon, delta):
                a, b = 1 / (1 + np.exp(-epsilon)), 1 / (1 + np.exp(epsilon))
                system = (1 - delta) * np.array([[a, b], [b, a]])
                rows = np.linalg.solve(system, np.vstack([x, y]))
                return np.vstack([rows, (np.asarray(p) - x) / delta, (np.asarray(q) - y) / delta])
            """,
        ],
        "wrong": [
            # the printed equations (7)-(8): no factor 1 - delta, so rows 0 and 1 sum to 1 - delta
            """
            def map_from_core(p, q, x, y, epsilon, delta):
                f0 = (np.exp(epsilon) * x - y) / np.expm1(epsilon)
                f1 = (np.exp(epsilon) * y - x) / np.expm1(epsilon)
                return np.vstack([f0, f1, (np.asarray(p) - x) / delta, (np.asarray(q) - y) / delta])
            """,
            # the two leak rows swapped ("I am U" must produce what is left of p)
            """
            def map_from_core(p, q, x, y, epsilon, delta):
                f0 = (np.exp(epsilon) * x - y) / ((1 - delta) * np.expm1(epsilon))
                f1 = (np.exp(epsilon) * y - x) / ((1 - delta) * np.expm1(epsilon))
                return np.vstack([f0, f1, (np.asarray(q) - y) / delta, (np.asarray(p) - x) / delta])
            """,
            # leak rows not divided by delta
            """
            def map_from_core(p, q, x, y, epsilon, delta):
                f0 = (np.exp(epsilon) * x - y) / ((1 - delta) * np.expm1(epsilon))
                f1 = (np.exp(epsilon) * y - x) / ((1 - delta) * np.expm1(epsilon))
                return np.vstack([f0, f1, np.asarray(p) - x, np.asarray(q) - y])
            """,
            # issue 22 item 7: the library's map, which ignores the given core pair (a valid map, on another core)
            {"code": """
            def map_from_core(p, q, x, y, epsilon, delta):
                return simulation_map(p, q, epsilon, delta)
            """, "at_most": 0},
        ],
    },
}
