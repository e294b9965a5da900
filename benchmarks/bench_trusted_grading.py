"""Grading throughput with trusted verdicts: ``dp-course grade --workers 2`` against ``--single-kernel``.

    PATH=.venv/bin:$PATH python benchmarks/bench_trusted_grading.py [--students 6] [--repeats 1] [--lectures A,B]

Writes ``benchmarks/results/trusted_grading.md`` and ``trusted_grading.json``.  Workload: the class of
``bench_grading.make_class`` (``--students`` students x the lectures; each answer the instructor's solution with
probability 0.7, else the stub; seeded), graded end to end (``grade(force=True)``: intake, sandboxed execution,
merge, feedback, report) side by side in one run, in interleaved rounds:

1. **single kernel** (``--single-kernel``): every cell in the student's sandboxed kernel, with the guard – the
   design before issue 13, and what nbgrader does;
2. **trusted** (the default): test cells in each worker's trusted kernel, reused across its notebooks; the
   student's kernel runs the student's cells and the setup.

Scores must be identical cell by cell (else the script exits 1).  The target (issue 13): the trusted run within
15 % of the single-kernel throughput.  The machine is shared: the load average and the machine-wide busy CPU time
per notebook are recorded with every round, and the best round of each side is compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.modules.setdefault("rfc3987_syntax", None)  # slow optional import of jsonschema, as in the CLI
sys.executable = os.path.abspath(sys.executable)  # `PATH=.venv/bin:...` makes it relative; subprocesses chdir

from bench_grading import busy_seconds, make_class  # noqa: E402

from autograder.course import course  # noqa: E402
from autograder.run.grading import grade  # noqa: E402
from autograder.isolation.isolation import probe  # noqa: E402
from autograder.course.limits import Limits  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TARGET = 0.85
"""The trusted run's throughput must be at least this fraction of the single-kernel run's."""


def timed_grade(subs: Path, out: Path, trusted: bool, workers: int) -> tuple[float, dict[Any, Any], dict[str, Any]]:
    """Grade ``subs`` into ``out`` (course set up beforehand by a first run, untimed); seconds, scores, extras."""
    kw: dict[str, Any] = dict(workers=workers, progress=False, limits=Limits(cell_timeout=60, notebook_timeout=600),
                              trusted=trusted)
    b0, t0 = busy_seconds(), time.perf_counter()
    run = grade(subs, out, force=True, **kw)
    seconds = time.perf_counter() - t0
    scores = {(r.student, r.assignment, cell): s for r in run.results for cell, (s, _m) in r.exercises.items()}
    return seconds, scores, {"busy_core_seconds": round(busy_seconds() - b0, 1), "load": round(os.getloadavg()[0], 2),
                             "events": sorted({str(e.kind) for r in run.results for e in r.events})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1, help="interleaved rounds (single, trusted); best reported")
    ap.add_argument("--lectures", default="01_foundations,02_privacy_loss", help="comma-separated lectures")
    args = ap.parse_args()
    lectures = [x for x in course.assignments() if x in args.lectures.split(",")]
    if not lectures:
        print(f"--lectures must name lectures in solutions/ ({', '.join(course.assignments())}), got "
              f"{args.lectures!r}", file=sys.stderr)
        return 2
    info = probe("auto")
    base = Path(tempfile.mkdtemp(prefix="dpc-bench-trusted-"))
    rounds: dict[str, list[dict[str, Any]]] = {"single": [], "trusted": []}
    diffs: list[str] = []
    try:
        scratch = course.make_course(base / "scratch", lectures)
        subs = base / "subs"
        make_class(scratch, lectures, args.students, subs)
        n_nb = args.students * len(lectures)
        load0 = os.getloadavg()
        print(f"{n_nb} notebooks; sandbox {info.mode}; {os.cpu_count()} cores; load {load0[0]:.2f}", flush=True)
        for side in rounds:  # set up each output folder (course, caches) untimed
            timed_grade(subs, base / side, side == "trusted", args.workers)
        for rnd in range(args.repeats):
            scores: dict[str, dict[Any, Any]] = {}
            for side in rounds:
                t, scores[side], extra = timed_grade(subs, base / side, side == "trusted", args.workers)
                rounds[side].append({"seconds": round(t, 2), **extra})
                print(f"[round {rnd + 1}] {side}: {t:.1f} s ({t / n_nb:.2f} s/notebook, "
                      f"{extra['busy_core_seconds'] / n_nb:.2f} busy core-s/notebook, load {extra['load']})",
                      flush=True)
            diffs += [f"{k}: single {scores['single'].get(k)} vs trusted {scores['trusted'].get(k)}"
                      for k in sorted(set(scores["single"]) | set(scores["trusted"]))
                      if scores["single"].get(k) != scores["trusted"].get(k)]
        load1 = os.getloadavg()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    best = {side: min(r["seconds"] for r in rs) for side, rs in rounds.items()}
    ratio = best["single"] / best["trusted"]
    result = {"students": args.students, "lectures": lectures, "notebooks": n_nb, "workers": args.workers,
              "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
              "sandbox": info.mode, "repeats": args.repeats, "scored_cells": len(scores["single"]),
              "load_average_before": [round(x, 2) for x in load0], "load_average_after": [round(x, 2) for x in load1],
              "rounds": rounds, "best_seconds": best, "throughput_ratio": round(ratio, 3), "target": TARGET,
              "identical_scores": not diffs, "diffs": diffs[:20]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "trusted_grading.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / "trusted_grading.md").write_text(render(result))
    print(f"throughput trusted / single = {ratio:.3f} (target >= {TARGET}); identical scores: {not diffs}")
    return 0 if not diffs else 1


def render(r: dict[str, Any]) -> str:
    n = r["notebooks"]
    rows = []
    for side, label in (("single", "`dp-course grade --single-kernel`"), ("trusted", "`dp-course grade` (trusted)")):
        rs = r["rounds"][side]
        rows.append(f"| {label} --workers {r['workers']} | {r['best_seconds'][side]:.1f} | "
                    f"{r['best_seconds'][side] / n:.2f} | {min(x['busy_core_seconds'] for x in rs) / n:.2f} | "
                    + ", ".join(f"{x['seconds']} (load {x['load']})" for x in rs) + " |")
    verdict = "within" if r["throughput_ratio"] >= r["target"] else "NOT within"
    return "\n".join([
        "# Grading throughput with trusted verdicts (issue 13)",
        "",
        f"Generated by `benchmarks/bench_trusted_grading.py`: {r['students']} students x {len(r['lectures'])} "
        f"lecture(s) ({', '.join(r['lectures'])}) = {n} notebooks; {r['cores']} cores; sandbox: {r['sandbox']}; "
        f"Python {r['python']}; load average {r['load_average_before'][0]} before, {r['load_average_after'][0]} "
        "after (the machine is shared; both sides ran interleaved under the same load).  Command: "
        f"`PATH=.venv/bin:$PATH python benchmarks/bench_trusted_grading.py --students {r['students']} --workers "
        f"{r['workers']} --repeats {r['repeats']} --lectures {','.join(r['lectures'])}`.",
        "",
        "Both sides are `dp-course grade --force` end to end (intake, sandboxed execution with the guard, merge, "
        "feedback, report), each output folder set up by an untimed first run.  *single kernel*: every cell in "
        "the student's kernel; *trusted*: test cells in each worker's trusted kernel (reused across its "
        "notebooks, a fresh namespace each), student cells and the setup cell in the student's kernel.",
        "",
        "| run | best wall time (s) | s / notebook | busy core-s / notebook | all rounds (s) |",
        "| --- | ---: | ---: | ---: | --- |",
        *rows,
        "",
        f"Throughput trusted / single kernel: **{r['throughput_ratio']:.2f}** ({verdict} the target of "
        f"{r['target']:.2f}, i.e. at most 15 % slower).  Identical scores: "
        f"**{'yes' if r['identical_scores'] else 'NO'}** ({r['scored_cells']} cells"
        + ("" if r["identical_scores"] else "; differences: " + "; ".join(r["diffs"])) + ").",
        "",
    ])


if __name__ == "__main__":
    raise SystemExit(main())
