"""How long an explorer takes to update when a control moves (target: computed in under 100 ms).

    .venv/bin/python benchmarks/bench_widgets.py

Writes benchmarks/results/widgets.md and widgets.json.  For each explorer, at its default setting and at the
slowest corner of its sliders, three CPU times (best of 7, measured in this one run, so they share the
machine's load):

* ``compute``: the library calls the update makes (the accounting: PLDs and their composition, profiles,
  the simulation map, the RDP accountant), called through the public API exactly as the explorer calls them;
* ``figure``: the explorer's ``draw()`` - the computation plus building the matplotlib figure;
* ``png``: ``draw()`` plus rasterising the figure to the PNG the browser shows.

The target is on ``compute``: ratio = compute / 100 ms (below 1 meets it).  ``png - figure`` is matplotlib's
rendering, the same for any explorer of that size; in the browser add ~0.3 s for the round trip and image
decode (the browser test records the redraw latency per explorer).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from dp_course import widgets  # noqa: E402
from dp_course.divergences import privacy_profile  # noqa: E402
from dp_course.dpsgd import dpsgd_rdp  # noqa: E402
from dp_course.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse  # noqa: E402
from dp_course.rdp_accounting import rdp_to_dp_epsilon_and_order  # noqa: E402
from dp_course.leaky import leaky_randomized_response  # noqa: E402
from dp_course.simulation import simulation_map  # noqa: E402

BUDGET = 0.100
RESULTS = Path(__file__).resolve().parent / "results"
REPEATS = 7

BUILD = {
    "randomized response": lambda x: RandomizedResponse(x).privacy_loss_distribution(),
    "Gaussian": lambda x: GaussianMechanism(sigma=x).privacy_loss_distribution(),
    "Laplace": lambda x: LaplaceMechanism.from_epsilon(x).privacy_loss_distribution(value_step=x / 200),
}


def pld_compute(mechanism, param, k):
    BUILD[mechanism](param).self_compose(k)


def composition_compute(mechanism, param, k):
    base = BUILD[mechanism](param)
    runs = [base, base.self_compose(k), base.self_compose(2 * k)]
    e2 = [r.epsilon_for_delta(widgets.COMPOSITION_DELTA) for r in runs[1:]]
    grid = np.linspace(0.0, max(1.25 * e2[1], 0.5), 300)
    for r in runs:
        r.delta_for_epsilon(grid)


def simulation_compute(p, q, epsilon, delta):
    pp = np.array([float(t) for t in p.split(",")])
    qq = np.array([float(t) for t in q.split(",")])
    pp, qq = pp / pp.sum(), qq / qq.sum()
    privacy_profile(pp, qq, epsilon)
    F = simulation_map(pp, qq, epsilon, delta)
    p_u, p_v = leaky_randomized_response(epsilon, delta)
    return p_u @ F, p_v @ F


def dpsgd_compute(sigma, q, steps, delta=1e-5):
    one = dpsgd_rdp(q, sigma, 1)
    for t in [*np.unique(np.round(np.logspace(0, 5, 41)).astype(int)), steps]:
        rdp_to_dp_epsilon_and_order(one.orders, t * one.epsilons, delta)


CASES = [
    # (explorer, setting, make, compute, values)
    ("pld_explorer", "RR default", lambda: widgets.pld_explorer("randomized response"),
     lambda v: pld_compute("randomized response", **v), dict(param=0.5, k=1)),
    ("pld_explorer", "RR k=200", lambda: widgets.pld_explorer("randomized response"),
     lambda v: pld_compute("randomized response", **v), dict(param=2.0, k=200)),
    ("pld_explorer", "Laplace eps=0.02 k=200", lambda: widgets.pld_explorer("Laplace"),
     lambda v: pld_compute("Laplace", **v), dict(param=0.02, k=200)),
    ("pld_explorer", "Laplace eps=2 k=200", lambda: widgets.pld_explorer("Laplace"),
     lambda v: pld_compute("Laplace", **v), dict(param=2.0, k=200)),
    ("composition_explorer", "RR default", lambda: widgets.composition_explorer("randomized response"),
     lambda v: composition_compute("randomized response", **v), dict(param=0.1, k=50)),
    ("composition_explorer", "RR k=250 (2k=500)", lambda: widgets.composition_explorer("randomized response"),
     lambda v: composition_compute("randomized response", **v), dict(param=2.0, k=250)),
    ("composition_explorer", "Gaussian k=250", lambda: widgets.composition_explorer("Gaussian"),
     lambda v: composition_compute("Gaussian", **v), dict(param=0.5, k=250)),
    ("composition_explorer", "Laplace eps=0.02 k=250", lambda: widgets.composition_explorer("Laplace"),
     lambda v: composition_compute("Laplace", **v), dict(param=0.02, k=250)),
    ("composition_explorer", "Laplace eps=2 k=250", lambda: widgets.composition_explorer("Laplace"),
     lambda v: composition_compute("Laplace", **v), dict(param=2.0, k=250)),
    ("simulation_explorer", "default (3 outcomes)", lambda: widgets.simulation_explorer(),
     lambda v: simulation_compute(**v), dict(p="0.5, 0.3, 0.2", q="0.25, 0.35, 0.4", epsilon=0.5, delta=0.09)),
    ("simulation_explorer", "6 outcomes, eps=3", lambda: widgets.simulation_explorer(),
     lambda v: simulation_compute(**v),
     dict(p="0.3, 0.2, 0.1, 0.1, 0.2, 0.1", q="0.1, 0.1, 0.2, 0.3, 0.1, 0.2", epsilon=3.0, delta=0.0)),
    ("dpsgd_explorer", "default", lambda: widgets.dpsgd_explorer(),
     lambda v: dpsgd_compute(**v), dict(sigma=1.1, q=0.01, steps=1000)),
    ("dpsgd_explorer", "sigma=0.3 q=1 T=1e5", lambda: widgets.dpsgd_explorer(),
     lambda v: dpsgd_compute(**v), dict(sigma=0.3, q=1.0, steps=100_000)),
    ("dpsgd_explorer", "sigma=10 q=1e-4 T=1", lambda: widgets.dpsgd_explorer(),
     lambda v: dpsgd_compute(**v), dict(sigma=10.0, q=1e-4, steps=1)),
]


def best_cpu(fn) -> float:
    times = []
    for _ in range(REPEATS):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> int:
    os.environ[widgets.STATIC_ENV] = "1"     # the drawing function without a widget front end
    rows = []
    for name, setting, make, compute, values in CASES:
        draw = make().draw
        compute(values)                       # warm caches and imports once
        t_compute = best_cpu(lambda c=compute, v=values: c(v))
        t_figure = best_cpu(lambda d=draw, v=values: d(**v))
        t_png = best_cpu(lambda d=draw, v=values: d(**v).savefig(os.devnull, format="png"))
        rows.append(dict(explorer=name, setting=setting, compute_s=t_compute, figure_s=t_figure, png_s=t_png,
                         ratio_to_budget=t_compute / BUDGET))
        print(f"{name:22s} {setting:26s} compute {1e3 * t_compute:7.1f} ms  figure {1e3 * t_figure:7.1f} ms  "
              f"png {1e3 * t_png:7.1f} ms  compute/100ms {t_compute / BUDGET:5.2f}", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    meta = dict(python=sys.version.split()[0], machine=platform.machine(), cpus=os.cpu_count(),
                load_1min_at_end=round(load, 2), repeats=REPEATS, clock="CPU time (process_time), best of repeats")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "widgets.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=2) + "\n")
    lines = ["# Explorer update times", "",
             f"`.venv/bin/python benchmarks/bench_widgets.py`; {meta['clock']}; Python {meta['python']}, "
             f"{meta['cpus']} cores, 1-min load {meta['load_1min_at_end']} at the end of the run.", "",
             "| explorer | setting | compute | figure (compute + artists) | + PNG | compute / 100 ms |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| `{r['explorer']}` | {r['setting']} | {1e3 * r['compute_s']:.1f} ms | {1e3 * r['figure_s']:.1f} ms | "
              f"{1e3 * r['png_s']:.1f} ms | {r['ratio_to_budget']:.2f} |" for r in rows]
    worst = max(rows, key=lambda r: r["compute_s"])
    lines += ["", f"Slowest computation: `{worst['explorer']}`, {worst['setting']}: {1e3 * worst['compute_s']:.1f} ms "
              f"({'within' if worst['compute_s'] < BUDGET else 'OVER'} the 100 ms budget)."]
    (RESULTS / "widgets.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'widgets.md'}")
    return 0 if worst["compute_s"] < BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
