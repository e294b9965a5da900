"""Speed and accuracy of dp_course.pld, side by side with dp-accounting in one run.

    .venv/bin/python benchmarks/bench_pld.py          (or: python3 run.py setup first)

Writes benchmarks/results/pld.md and pld.json.  Two workloads (issue #2):

1. k-fold randomized response at k = 10^6, delta(eps) at a few eps (target: under 1 s, exact).  eps0 = 2^-7 so
   that dp-accounting's grid (step 2^-10) holds the atoms exactly and both answers are comparable.
2. The discretised Laplace PLD (eps0 = 0.1) self-composed 1000 times (target: no slower than dp-accounting at
   equal or better accuracy).  Both use "connect the dots" at the same value step; the error of each is
   measured against a sandwich from a 10x finer grid of ours (pessimistic above, optimistic below the truth).

Each timing is the best of REPEATS runs, the two libraries interleaved so that they see the same machine load.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dp_accounting.pld import privacy_loss_distribution as dpa  # noqa: E402

from dp_course.mechanisms import LaplaceMechanism, RandomizedResponse  # noqa: E402

REPEATS = 3
RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn):
    best, value = math.inf, None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def rr_workload():
    eps0, k, step = 2.0 ** -7, 10 ** 6, 2.0 ** -10
    eps = np.array([40.0, 60.0, 80.0])
    truth = 1 / (1 + math.exp(-eps0))

    def ours():
        pld = RandomizedResponse(eps0).privacy_loss_distribution().self_compose(k)
        return pld.delta_for_epsilon(eps)

    def theirs():
        pld = dpa.PrivacyLossDistribution.create_from_rounded_probability(
            {8: truth, -8: 1 - truth}, 0.0, step).self_compose(k)
        return np.array([pld.get_delta_for_epsilon(e) for e in eps])

    # reference: the definition summed with scipy's binomial log-pmf (independent of both libraries)
    from scipy import stats

    i = np.arange(k + 1)
    losses = (2 * i - k) * eps0
    log_pmf = stats.binom.logpmf(i, k, truth)
    ref = np.array([np.sum(np.exp(log_pmf[losses > e]) * -np.expm1(e - losses[losses > e])) for e in eps])
    rows = []
    t_ours, d_ours = best_time(ours)
    t_theirs, d_theirs = best_time(theirs)
    rows.append({"workload": f"randomized response eps0=2^-7, k=10^6, delta(eps) at eps = {eps.tolist()}",
                 "ours_s": t_ours, "dp_accounting_s": t_theirs, "ratio_theirs_over_ours": t_theirs / t_ours,
                 "ours_delta": d_ours.tolist(), "dp_accounting_delta": d_theirs.tolist(),
                 "reference_delta": ref.tolist(),
                 "ours_max_rel_error": float(np.max(np.abs(d_ours - ref) / ref)),
                 "dp_accounting_max_rel_error": float(np.max(np.abs(d_theirs - ref) / ref)),
                 "target": "ours < 1 s, exact"})
    return rows


def laplace_workload():
    eps0, k, eps = 0.1, 1000, 5.0
    mech = LaplaceMechanism.from_epsilon(eps0)
    # Reference: the pessimistic PLD on a 10x finer grid than the finest compared (its error is second order,
    # ~100x smaller than at step 1e-4); the optimistic one on that grid is a rigorous lower bound.
    fine = 1e-5
    upper = mech.privacy_loss_distribution(fine, True).self_compose(k).delta_for_epsilon(eps)
    lower = mech.privacy_loss_distribution(fine, False).self_compose(k).delta_for_epsilon(eps)
    rows = []
    for step in (1e-3, 1e-4):
        def ours():
            return mech.privacy_loss_distribution(step, True).self_compose(k).delta_for_epsilon(eps)

        def theirs():
            pld = dpa.from_laplace_mechanism(1 / eps0, value_discretization_interval=step)
            return pld.self_compose(k).get_delta_for_epsilon(eps)

        t_ours, d_ours = best_time(ours)
        t_theirs, d_theirs = best_time(theirs)
        rows.append({"workload": f"Laplace eps0=0.1, 1000-fold, pessimistic, step {step:g}, delta(5)",
                     "ours_s": t_ours, "dp_accounting_s": t_theirs,
                     "ratio_theirs_over_ours": t_theirs / t_ours,
                     "ours_delta": d_ours, "dp_accounting_delta": float(d_theirs),
                     "ours_error": d_ours - upper, "dp_accounting_error": float(d_theirs) - upper,
                     "truth_in": [lower, upper], "target": "no slower at equal or better accuracy"})
    return rows


def main() -> None:
    rows = rr_workload() + laplace_workload()
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": sys.version.split()[0], "machine": platform.machine(), "cores": os.cpu_count(),
            "numpy": np.__version__, "date": time.strftime("%Y-%m-%d"),
            "command": ".venv/bin/python benchmarks/bench_pld.py"}
    (RESULTS / "pld.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = ["# PLD benchmark (dp_course vs dp-accounting, same run)", "",
             f"`{meta['command']}` on {meta['cores']} cores, Python {meta['python']}, {meta['date']}.", "",
             "| workload | ours (s) | dp-accounting (s) | speed ratio (theirs / ours) | accuracy |",
             "| --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "ours_max_rel_error" in r:
            acc = (f"max relative difference {r['ours_max_rel_error']:.1e} (ours) vs "
                   f"{r['dp_accounting_max_rel_error']:.1e} (dp-accounting), from sums of scipy's binomial "
                   "log-pmf (itself good to about 1e-9 at k = 10^6)")
        else:
            acc = (f"error {r['ours_error']:.2e} (ours) vs {r['dp_accounting_error']:.2e} (dp-accounting), "
                   "against a 10x finer grid")
        lines.append(f"| {r['workload']} | {r['ours_s']:.3f} | {r['dp_accounting_s']:.3f} | "
                     f"{r['ratio_theirs_over_ours']:.2f} | {acc} |")
    (RESULTS / "pld.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
