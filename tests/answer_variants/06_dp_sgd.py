"""Answer variants for ``solutions/06_dp_sgd``: what the autograder must accept and reject.

Format: see ``tests/answer_variants/01_foundations.py``.  Each code string replaces the whole answer cell.
"""

VARIANTS = {
    # ---------------------------------------------------------------- Exercise 1: per-example clipping
    "ex1_clip": {
        "correct_alt": [
            # min(1, C / norm) with the division by zero silenced
            """
            def clip_per_example(grads, clip_norm, ord=2):
                if ord not in (1, 2) or not clip_norm > 0:
                    raise ValueError(f"need ord in (1, 2) and clip_norm > 0, got ord = {ord}, clip_norm = {clip_norm}")
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                with np.errstate(divide="ignore"):
                    return grads * np.minimum(1.0, clip_norm / norms)
            """,
            # the norms written out, and np.where; the checks one after the other
            """
            def clip_per_example(grads, clip_norm, ord=2):
                if clip_norm <= 0:
                    raise ValueError("clip_norm must be positive")
                grads = np.asarray(grads, dtype=float)
                if ord == 1:
                    norms = np.abs(grads).sum(axis=1)
                elif ord == 2:
                    norms = np.sqrt((grads ** 2).sum(axis=1))
                else:
                    raise ValueError(f"ord must be 1 or 2, not {ord}")
                long = norms > clip_norm
                scale = np.ones_like(norms)
                scale[long] = clip_norm / norms[long]
                return grads * scale[:, None]
            """,
            # a helper of the student's own, named like the library's (issue 26: a test cell's helper of that
            # name replaced it in one kernel)
            """
            def _clip_rows(g, c, ord):
                norms = np.linalg.norm(g, ord=ord, axis=1, keepdims=True)
                return g / np.maximum(1.0, norms / c)

            def clip_per_example(grads, clip_norm, ord=2):
                if not (clip_norm > 0 and ord in (1, 2)):
                    raise ValueError(f"clip_norm must be > 0 and ord 1 or 2; got clip_norm={clip_norm}, ord={ord}")
                return _clip_rows(np.asarray(grads, dtype=float), clip_norm, ord)
            """,
            # a Python loop over the d columns (not the rows): vectorised over the rows, so the size test passes
            """
            def clip_per_example(grads, clip_norm, ord=2):
                if not clip_norm > 0:
                    raise ValueError(f"clip_norm must be > 0, got {clip_norm}")
                if ord not in (1, 2):
                    raise ValueError(f"ord must be 1 or 2, got {ord}")
                grads = np.asarray(grads, dtype=float)
                norms = np.zeros(len(grads))
                for j in range(grads.shape[1]):
                    norms += np.abs(grads[:, j]) ** ord
                norms = norms ** (1.0 / ord)
                return grads / np.maximum(1.0, norms / clip_norm)[:, None]
            """,
        ],
        "wrong": [
            # trivial answer: no clipping
            {"code": """
            def clip_per_example(grads, clip_norm, ord=2):
                return np.asarray(grads, dtype=float)
            """, "at_most": 0},
            # clips each coordinate
            """
            def clip_per_example(grads, clip_norm, ord=2):
                return np.clip(grads, -clip_norm, clip_norm)
            """,
            # rescales every row to norm C, also the short ones
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                return grads * clip_norm / np.where(norms > 0, norms, 1.0)
            """,
            # clips the batch as a whole
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                return grads * min(1.0, clip_norm / np.linalg.norm(grads))
            """,
            # 0/0 for rows of zeros
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                with np.errstate(divide="ignore", invalid="ignore"):
                    return grads / norms * np.minimum(norms, clip_norm)
            """,
            # ignores ord (always Euclidean)
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, axis=1, keepdims=True)
                return grads / np.maximum(1.0, norms / clip_norm)
            """,
            # the library's private helper (issue 22 item 8): right values, but no input validation - it
            # clips to norm 0 and to the 3-norm without complaint; earns only the rows-of-zeros point and the
            # size test's (it is vectorised)
            {"code": """
            from dp_course.training import _clip_rows

            def clip_per_example(grads, clip_norm, ord=2):
                return _clip_rows(np.asarray(grads, dtype=float), clip_norm, ord)
            """, "at_most": 2, "fails": ["ex1_rows", "ex1_l1"]},
            # the solution without the input validation the exercise asks for
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                return grads / np.maximum(1.0, norms / clip_norm)
            """,
            # validates ord but not clip_norm
            """
            def clip_per_example(grads, clip_norm, ord=2):
                if ord not in (1, 2):
                    raise ValueError(f"ord must be 1 or 2, got {ord}")
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                return grads / np.maximum(1.0, norms / clip_norm)
            """,
            # right values, but an unguarded division by the zero norms: a warning (the text says "no warning")
            """
            def clip_per_example(grads, clip_norm, ord=2):
                grads = np.asarray(grads, dtype=float)
                norms = np.linalg.norm(grads, ord=ord, axis=1, keepdims=True)
                return grads * np.where(norms > clip_norm, clip_norm / norms, 1.0)
            """,
            # right in every respect but one: a Python loop over the rows (the text says "vectorise"); loses
            # exactly the size test's point (issue 26)
            {"code": """
            def clip_per_example(grads, clip_norm, ord=2):
                if not clip_norm > 0:
                    raise ValueError(f"clip_norm must be > 0, got {clip_norm}")
                if ord not in (1, 2):
                    raise ValueError(f"ord must be 1 or 2, got {ord}")
                grads = np.asarray(grads, dtype=float)
                out = np.empty_like(grads)
                for i, row in enumerate(grads):
                    norm = np.linalg.norm(row, ord=ord)
                    out[i] = row / max(1.0, norm / clip_norm)
                return out
            """, "fails": ["ex1_vectorised"]},
            # the same with the student's row function handed to np.apply_along_axis (NumPy loops in Python)
            {"code": """
            def clip_per_example(grads, clip_norm, ord=2):
                if not clip_norm > 0:
                    raise ValueError(f"clip_norm must be > 0, got {clip_norm}")
                if ord not in (1, 2):
                    raise ValueError(f"ord must be 1 or 2, got {ord}")
                grads = np.asarray(grads, dtype=float)
                return np.apply_along_axis(lambda row: row / max(1.0, np.linalg.norm(row, ord=ord) / clip_norm),
                                           1, grads)
            """, "fails": ["ex1_vectorised"]},
        ],
    },
    # ---------------------------------------------------------------- Exercise 2: Scenario 2 with a schedule
    "ex2_schedule": {
        "correct_alt": [
            # the library's rho for the target, and the steps' zCDP summed in a loop
            """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                rho = zcdp_rho_for_dp(epsilon, delta)
                delta_2 = 2 * clip_norm / n
                unit_rho = 0.0                      # rho spent with c = 1
                for s in schedule:
                    unit_rho += delta_2**2 / (2 * s**2)
                return np.sqrt(unit_rho / rho) * np.asarray(schedule, dtype=float)
            """,
            # the library's one-step calibration (T = 1 spends the whole budget) and the composition over unequal
            # steps, sum_t s_t^-2, derived by the student: allowed by the text (issue 22 item 8: the text now says
            # what the library is worth, and this answer does the part it is not)
            """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                s = np.asarray(schedule, dtype=float)
                one_step = scenario2_gaussian_sigma(epsilon, delta, 1, n, sensitivity=2 * clip_norm)
                return one_step * np.sqrt(np.sum(s ** -2.0)) * s
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                return np.asarray(schedule, dtype=float)
            """, "at_most": 0},
            # sensitivity C/n: forgets that replacement can flip a clipped gradient
            """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                s = np.asarray(schedule, dtype=float)
                L = np.log(1 / delta)
                rho = (np.sqrt(L + epsilon) - np.sqrt(L)) ** 2
                return (clip_norm / n) * np.sqrt(np.sum(s ** -2.0) / (2 * rho)) * s
            """,
            # the slides' loose premise B^2 / (n^2 sigma^2) per step
            """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                s = np.asarray(schedule, dtype=float)
                L = np.log(1 / delta)
                rho = (np.sqrt(L + epsilon) - np.sqrt(L)) ** 2
                return (2 * clip_norm / n) * np.sqrt(np.sum(s ** -2.0) / rho) * s
            """,
            # the slides' rho without the square (ERRATA 6), the rest right
            """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                s = np.asarray(schedule, dtype=float)
                L = np.log(1 / delta)
                rho = np.sqrt(L + epsilon) - np.sqrt(L)
                return (2 * clip_norm / n) * np.sqrt(np.sum(s ** -2.0) / (2 * rho)) * s
            """,
            # the constant-schedule sigma (library) times the schedule: wrong unless the schedule is constant
            {"code": """
            def scenario2_noise_schedule(epsilon, delta, n, clip_norm, schedule):
                s = np.asarray(schedule, dtype=float)
                return scenario2_gaussian_sigma(epsilon, delta, len(s), n, sensitivity=2 * clip_norm) * s
            """, "at_most": 1},
        ],
    },
    # ---------------------------------------------------------------- Exercise 3 (a): one DP-SGD step
    "ex3a_step": {
        "correct_alt": [
            # gradients and clipping written out, noise from standard normals
            """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                theta = np.asarray(theta, dtype=float)
                X_batch = np.asarray(X_batch, dtype=float).reshape(-1, theta.size)
                residual = 1 / (1 + np.exp(-(X_batch @ theta))) - np.asarray(y_batch, dtype=float)
                grads = residual[:, None] * X_batch
                norms = np.sqrt((grads ** 2).sum(axis=1))
                grads = grads * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))[:, None]
                noise = noise_multiplier * clip_norm * rng.standard_normal(theta.size)
                return theta - learning_rate * (grads.sum(axis=0) + noise) / batch_size
            """,
            # updates theta in place and returns it (issue 26: tests pass copies, so this is right everywhere)
            """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                theta -= learning_rate * (total + rng.normal(0.0, noise_multiplier * clip_norm, size=theta.shape)) / batch_size
                return theta
            """,
        ],
        "wrong": [
            # trivial answer
            {"code": """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                return np.asarray(theta, dtype=float)
            """, "at_most": 0},
            # no clipping
            """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = per_example_gradients(theta, X_batch, y_batch).sum(axis=0)
                noise = rng.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total + noise) / batch_size
            """,
            # clips the summed gradient instead of each example's
            """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = per_example_gradients(theta, X_batch, y_batch).sum(axis=0)
                total = clip_per_example(total[None, :], clip_norm)[0]
                noise = rng.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total + noise) / batch_size
            """,
            # divides by the realised batch size (noise and all: its scale depends on the batch drawn, a privacy bug)
            {"at_most": 0, "code": """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                noise = rng.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total + noise) / max(len(y_batch), 1)
            """},
            # noise on the average instead of the sum
            {"at_most": 0, "code": """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                noise = rng.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total / batch_size + noise)
            """},
            # noise without the clip norm
            {"at_most": 0, "code": """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                noise = rng.normal(0.0, noise_multiplier, size=np.shape(theta))
                return theta - learning_rate * (total + noise) / batch_size
            """},
            # divides only the noise by max(|U|, m): its variance depends on the batch drawn (issue 22 item 3)
            {"at_most": 0, "code": """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                noise = rng.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total / batch_size + noise / max(len(y_batch), batch_size))
            """},
            # ignores rng: numpy's global generator
            """
            def dp_sgd_step(theta, X_batch, y_batch, clip_norm, noise_multiplier, batch_size, learning_rate, rng):
                total = clip_per_example(per_example_gradients(theta, X_batch, y_batch), clip_norm).sum(axis=0)
                noise = np.random.normal(0.0, noise_multiplier * clip_norm, size=np.shape(theta))
                return theta - learning_rate * (total + noise) / batch_size
            """,
        ],
    },
}
