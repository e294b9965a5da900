"""Grading throughput: ``dp-course grade`` (parallel, sandboxed) vs plain sequential ``nbgrader autograde``.

    PATH=.venv/bin:$PATH python benchmarks/bench_grading.py [--students 20] [--workers 1,2] [--lectures A,B]

Writes benchmarks/results/grading.md and grading.json.  Workload: a class of ``--students`` students x every
lecture in ``solutions/`` (or the ``--lectures`` named).  Each student's notebook is the released notebook
with each answer cell, at random (seeded), either the instructor's solution (70 %) or left as the stub -- a
realistic mix of full, partial and empty work, so both passing and failing tests run.

Side by side in one run, on the same submissions:

1. **plain nbgrader**: a course directory from ``make_course``, the submissions in
   ``submitted/<student>/<lecture>/``, then ``nbgrader autograde <lecture>`` for each lecture, one after
   the other (nbgrader's own sequential loop, its own unsandboxed kernels, no feedback).
2. **this tool** with 1, 2, ... workers: ``autograder.run.grading.grade(force=True)``: intake, sandboxed
   execution with the guard, merge, feedback with hidden tests stripped, grades.csv and the report -- all of
   it inside the timing; the course directory (``generate_assignment``) is built beforehand, untimed, as
   for plain nbgrader.

3. **on a Dask cluster** (``--dask``): the same class graded by ``dp-course grade --scheduler`` on a loopback
   cluster started by this script (``dask scheduler`` and two ``dask worker --nthreads 1`` processes, all on
   127.0.0.1, no dashboard), right after ``--workers 2`` in each round: the ratio ``--workers 2`` time / Dask
   time, round by round (target >= 0.95).  Both runs also time the grader's **merge step per notebook**: the
   main process's work for each finished notebook (merging its rows into the gradebook, its pages and files,
   the state file) plus its share of the outputs written once per run (grades.csv, the LMS exports, the report).

4. **the cost of the feedback**: each worker count in ``--no-feedback-workers`` is timed with and without the
   HTML feedback on the same submissions, in the same round; the extra time with feedback, as a share of the
   time without, is recorded (``feedback_cost``; the kit's target: at most 15 % of grading).

Scores must be identical cell by cell (else the script exits 1).  The machine is shared, so the runs are
interleaved in ``--repeats`` rounds (plain, then each variant) and the best of each is reported, with every
round's time, the machine-wide busy CPU time per notebook and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.modules.setdefault("rfc3987_syntax", None)  # slow optional import of jsonschema, as in the CLI
sys.executable = os.path.abspath(sys.executable)  # `PATH=.venv/bin:...` makes it relative; subprocesses chdir

import nbformat  # noqa: E402

from autograder.course import cells, course  # noqa: E402
from autograder.run import grading, local_cluster  # noqa: E402
from autograder.run.grading import grade  # noqa: E402
from autograder.isolation.isolation import probe  # noqa: E402
from autograder.course.limits import Limits  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def make_class(scratch: Path, lectures: list[str], n: int, dest: Path, seed: int = 2024) -> dict:
    """Flat LMS-style files ``s<i>_<lecture>.ipynb``; returns {(student, lecture): answered cells}."""
    rng = random.Random(seed)
    dest.mkdir(parents=True)
    made = {}
    for lecture in lectures:
        release = cells.student_version(scratch, lecture)
        source = nbformat.read(course.SOLUTIONS_DIR / lecture / f"{lecture}.ipynb", as_version=4)
        full = cells.full_solution(release, source)
        answers = cells.answer_cells(release)
        stubs = {c.metadata["nbgrader"]["grade_id"]: c.source for c in release.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
        for i in range(n):
            nb = full
            kept = []
            for gid in answers:
                if rng.random() < 0.7:
                    kept.append(gid)
                else:
                    nb = cells.set_answer(nb, gid, stubs[gid])
            student = f"s{i:02d}"
            (dest / f"{student}_{lecture}.ipynb").write_text(nbformat.writes(nb))
            made[(student, lecture)] = kept
    return made


def busy_seconds() -> float:
    """Machine-wide CPU busy time so far (all cores, all processes), from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def plain_nbgrader(base: Path, lectures: list[str], subs: Path, tag: str = "") -> tuple[float, dict, dict]:
    from nbgrader.api import Gradebook

    crs = course.make_course(base / f"plain{tag}", lectures)
    for f in sorted(subs.glob("*.ipynb")):
        student, lecture = f.stem.split("_", 1)
        d = crs / "submitted" / student / lecture
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, d / f"{lecture}.ipynb")
    b0, t0 = busy_seconds(), time.perf_counter()
    for lecture in lectures:
        course.nbgrader(["autograde", lecture], cwd=crs, timeout=7200)
    seconds = time.perf_counter() - t0
    busy = busy_seconds() - b0
    scores = {}
    with Gradebook(f"sqlite:///{crs / 'gradebook.db'}") as gb:
        for lecture in lectures:
            for sub in gb.assignment_submissions(lecture):
                for nb in sub.notebooks:
                    for g in nb.grades:
                        scores[(sub.student.id, lecture, g.name)] = g.auto_score
    return seconds, scores, {"busy_core_seconds": round(busy, 1), "load": round(os.getloadavg()[0], 2)}


MERGE_SECONDS: list[float] = []
"""Seconds the grader's main process spent merging each finished submission (see :func:`timed_merge`)."""


def timed_merge() -> None:
    """Time each call of the grader's merge step (``grading._finish``: gradebook rows, files and pages of one
    submission, the state file) into :data:`MERGE_SECONDS`: this script's own instrument, the grader unchanged."""
    finish = getattr(grading, "_finish")  # noqa: B009 - a private step, reached on purpose

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return finish(*args, **kwargs)
        finally:
            MERGE_SECONDS.append(time.perf_counter() - t0)

    setattr(grading, "_finish", timed)  # noqa: B010


@contextlib.contextmanager
def loopback_cluster(base: Path, workers: int = 2) -> Iterator[str]:
    """A Dask scheduler and ``workers`` one-thread workers on 127.0.0.1 (no dashboard); yields its address
    (:func:`autograder.run.local_cluster.loopback_cluster`)."""
    with local_cluster.loopback_cluster(base / "dask", [f"bench{i}" for i in range(workers)]) as cluster:
        yield cluster.address


def ours(base: Path, subs: Path, workers: int, tag: str, warm: Path | None = None,
         feedback: bool = True, scheduler: str | None = None) -> tuple[float, dict, dict]:
    """Time ``grade(force=True)`` on the whole class; the course directory is built beforehand (untimed),
    as plain nbgrader's is, by grading ``warm`` (a couple of notebooks) into the same output folder."""
    out = base / f"ours-{tag}"
    kw = dict(workers=workers, progress=False, limits=Limits(cell_timeout=60, notebook_timeout=600),
              feedback=feedback, scheduler=scheduler)
    if warm is not None:
        grade(warm, out, **kw)
    MERGE_SECONDS.clear()
    b0, t0 = busy_seconds(), time.perf_counter()
    run = grade(subs, out, force=True, **kw)
    seconds = time.perf_counter() - t0
    busy = busy_seconds() - b0
    merge = (sum(MERGE_SECONDS) + run.timings.get("outputs", 0.0)) / max(1, run.notebooks_graded)
    scores = {}
    for r in run.results:
        for cell, (s, _m) in r.exercises.items():
            scores[(r.student, r.assignment, cell)] = s
    job_seconds = sum(r.seconds for r in run.results)
    return seconds, scores, {"worker_seconds": round(job_seconds, 1), "busy_core_seconds": round(busy, 1),
                             "worker_autograde_seconds": round(run.timings.get("worker_autograde", 0.0), 1),
                             "worker_feedback_seconds": round(run.timings.get("worker_feedback", 0.0), 1),
                             "load": round(os.getloadavg()[0], 2),
                             "events": sum(len(r.events) for r in run.results),
                             "merge_seconds_per_notebook": round(merge, 4),
                             "finish_seconds_per_notebook": round(sum(MERGE_SECONDS) / max(1, run.notebooks_graded), 4),
                             "outputs_seconds": round(run.timings.get("outputs", 0.0), 2)}


def same(plain: dict, mine: dict) -> list[str]:
    diffs = []
    for key in sorted(set(plain) | set(mine)):
        a, b = plain.get(key), mine.get(key)
        # a hand-graded answer is "pending" (None) in our results and None/0 in nbgrader's auto_score
        if (a or 0.0) != (b or 0.0):
            diffs.append(f"{key}: nbgrader {a} vs ours {b}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=20)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts to time (default 1,2)")
    ap.add_argument("--no-feedback-workers", default="2",
                    help="worker counts to time again without the HTML feedback (default 2; '' for none)")
    ap.add_argument("--dask", action="store_true",
                    help="also grade with --scheduler on a loopback Dask cluster of two workers, after --workers 2 "
                         "in each round (2 must be among --workers)")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite grading.md from benchmarks/results/grading.json")
    ap.add_argument("--lectures", default="",
                    help="comma-separated lectures to grade (default: every lecture in solutions/)")
    ap.add_argument("--repeats", type=int, default=2,
                    help="rounds of (plain, each variant), interleaved; the best of each is reported")
    args = ap.parse_args()
    if args.render:
        (RESULTS / "grading.md").write_text(render(json.loads((RESULTS / "grading.json").read_text())))
        return 0
    lectures = course.assignments()
    if args.lectures:
        unknown = sorted(set(args.lectures.split(",")) - set(lectures))
        if unknown:
            print(f"--lectures must name lectures in solutions/ ({', '.join(lectures)}), got {unknown}",
                  file=sys.stderr)
            return 2
        lectures = [x for x in lectures if x in args.lectures.split(",")]
    if not lectures:
        print("no lectures in solutions/", file=sys.stderr)
        return 2
    variants: list[tuple[int, bool | str]] = [(int(x), True) for x in args.workers.split(",") if x]
    if args.dask:
        if (2, True) not in variants:
            print(f"--dask compares with --workers 2: --workers must include 2, got {args.workers!r}", file=sys.stderr)
            return 2
        variants.insert(variants.index((2, True)) + 1, (2, "dask"))
    variants += [(int(x), False) for x in args.no_feedback_workers.split(",") if x]
    info = probe("auto")
    timed_merge()
    base = Path(tempfile.mkdtemp(prefix="dpc-bench-"))
    try:
        with contextlib.ExitStack() as stack:
            scheduler = stack.enter_context(loopback_cluster(base)) if args.dask else None
            return _bench(args, lectures, variants, info, base, scheduler)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _bench(args: argparse.Namespace, lectures: list[str], variants: list[tuple[int, bool | str]], info, base: Path,
           scheduler: str | None) -> int:
    scratch = course.make_course(base / "scratch", lectures)
    subs = base / "subs"
    make_class(scratch, lectures, args.students, subs)
    n_nb = args.students * len(lectures)
    load0 = os.getloadavg()
    print(f"{n_nb} notebooks ({args.students} students x {lectures}); sandbox {info.mode}; "
          f"{os.cpu_count()} cores; load {load0[0]:.2f}", flush=True)
    warm = _subset(subs, base / "warm", 2)
    ours(base, warm, 1, "warm")  # warm-up: caches both sides use (matplotlib fonts, bytecode)
    plain_runs: list[dict] = []
    runs: dict[tuple[int, bool], list[dict]] = {v: [] for v in variants}
    s_plain: dict = {}
    ok = True
    for rnd in range(args.repeats):
        t, s_plain, extra = plain_nbgrader(base, lectures, subs, tag=str(rnd))
        plain_runs.append({"seconds": round(t, 2), **extra})
        print(f"[round {rnd + 1}] plain nbgrader autograde: {t:.1f} s ({t / n_nb:.2f} s/notebook, "
              f"{extra['busy_core_seconds'] / n_nb:.2f} busy core-s/notebook, load {extra['load']})", flush=True)
        for w, fb in variants:
            if w == 1 and rnd > 0:
                continue  # one worker is only for the scaling: once is enough
            tag = f"w{w}{'' if fb is True else '-nofb' if fb is False else '-dask'}-{rnd}"
            t, s, extra = ours(base, subs, w, tag, warm=warm, feedback=bool(fb),
                               scheduler=scheduler if fb == "dask" else None)
            diffs = same(s_plain, s)
            ok = ok and not diffs
            runs[(w, fb)].append({"seconds": round(t, 2), "identical_scores": not diffs, "diffs": diffs[:20],
                                  **extra})
            how = ', no feedback' if fb is False else ' (Dask cluster)' if fb == "dask" else ''
            print(f"[round {rnd + 1}] dp-course grade, {w} worker(s){how}: {t:.1f} s "
                  f"({t / n_nb:.2f} s/notebook, {extra['busy_core_seconds'] / n_nb:.2f} busy core-s/notebook, "
                  f"load {extra['load']}), identical scores: {not diffs}; merge step "
                  f"{1000 * extra['merge_seconds_per_notebook']:.0f} ms/notebook", flush=True)
    t_plain = min(r["seconds"] for r in plain_runs)
    summary = []
    for (w, fb), rs in runs.items():
        best = min(r["seconds"] for r in rs)
        summary.append({"workers": w, "feedback": bool(fb), "dask": fb == "dask", "seconds": best,
                        "per_notebook": round(best / n_nb, 3),
                        "speedup_vs_plain": round(t_plain / best, 3),
                        "identical_scores": all(r["identical_scores"] for r in rs), "rounds": rs})
    costs = feedback_costs([x for x in summary if not x["dask"]])
    dask = dask_ratio(summary)
    if dask:
        print(f"Dask / --workers 2: ratio {dask['ratio']:.3f} (rounds {dask['rounds']})", flush=True)
    for c in costs:
        print(f"feedback cost, {c['workers']} worker(s): {c['with_feedback']:.1f} s with, "
              f"{c['without_feedback']:.1f} s without: {100 * c['ratio']:+.1f} % wall time; in the workers "
              f"{c['worker_feedback_seconds']:.1f} s of pages for {c['worker_autograde_seconds']:.1f} s of "
              f"autograde ({100 * (c['worker_ratio'] or 0):.1f} %)", flush=True)
    load1 = os.getloadavg()
    result = {
        "students": args.students, "lectures": lectures, "all_lectures": not args.lectures, "notebooks": n_nb,
        "cores": os.cpu_count(),
        "platform": platform.platform(), "python": platform.python_version(), "sandbox": info.mode,
        "load_average_before": [round(x, 2) for x in load0], "load_average_after": [round(x, 2) for x in load1],
        "plain_nbgrader": {"seconds": round(t_plain, 2), "per_notebook": round(t_plain / n_nb, 3),
                           "rounds": plain_runs},
        "dp_course_grade": summary, "scored_cells": len(s_plain), "repeats": args.repeats,
        "feedback_cost": costs, "dask": dask,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "grading.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / "grading.md").write_text(render(result))
    print(f"wrote {RESULTS / 'grading.md'}")
    return 0 if ok else 1


def feedback_costs(summary: list[dict]) -> list[dict]:
    """For each worker count timed with and without feedback: the extra time the feedback takes, as a share of
    grading without it (best against best, and round by round: the two runs of a round share the machine's load)."""
    out = []
    for fb in summary:
        nofb = [x for x in summary if x["workers"] == fb["workers"] and not x["feedback"]]
        if not fb["feedback"] or not nofb:
            continue
        rounds = [round(a["seconds"] / b["seconds"] - 1, 3)
                  for a, b in zip(fb["rounds"], nofb[0]["rounds"], strict=True)]
        graded = sum(x.get("worker_autograde_seconds", 0.0) for x in fb["rounds"])
        rendered = sum(x.get("worker_feedback_seconds", 0.0) for x in fb["rounds"])
        out.append({"workers": fb["workers"], "with_feedback": fb["seconds"], "without_feedback": nofb[0]["seconds"],
                    "ratio": round(fb["seconds"] / nofb[0]["seconds"] - 1, 3), "rounds": rounds,
                    "worker_autograde_seconds": round(graded, 1), "worker_feedback_seconds": round(rendered, 1),
                    "worker_ratio": round(rendered / graded, 3) if graded else None})
    return out


def dask_ratio(summary: list[dict]) -> dict | None:
    """``--workers 2`` time / Dask time (>= 1: the cluster is as fast), best against best and round by round, and
    the merge step per notebook of both."""
    local = [x for x in summary if x["workers"] == 2 and x["feedback"] and not x.get("dask")]
    dask = [x for x in summary if x.get("dask")]
    if not local or not dask:
        return None
    rounds = [round(a["seconds"] / b["seconds"], 3)
              for a, b in zip(local[0]["rounds"], dask[0]["rounds"], strict=True)]
    return {"local_seconds": local[0]["seconds"], "dask_seconds": dask[0]["seconds"],
            "ratio": round(local[0]["seconds"] / dask[0]["seconds"], 3), "rounds": rounds,
            "merge_local": min(x["merge_seconds_per_notebook"] for x in local[0]["rounds"]),
            "merge_dask": min(x["merge_seconds_per_notebook"] for x in dask[0]["rounds"]),
            "finish_local": min(x["finish_seconds_per_notebook"] for x in local[0]["rounds"]),
            "finish_dask": min(x["finish_seconds_per_notebook"] for x in dask[0]["rounds"]),
            "outputs_seconds": min(x["outputs_seconds"] for x in local[0]["rounds"])}


def _subset(subs: Path, dest: Path, k: int) -> Path:
    dest.mkdir(parents=True)
    for f in sorted(subs.glob("*.ipynb"))[:k]:
        shutil.copyfile(f, dest / f.name)
    return dest


def render(r: dict) -> str:
    plain = r["plain_nbgrader"]
    lines = [
        "# Grading throughput: `dp-course grade` vs plain `nbgrader autograde`",
        "",
        f"Generated by `benchmarks/bench_grading.py`: {r['students']} students x {len(r['lectures'])} lecture(s) "
        f"({', '.join(r['lectures'])}) = {r['notebooks']} notebooks; {r['cores']} cores; sandbox: {r['sandbox']}; "
        f"Python {r['python']}; load average {r['load_average_before'][0]} before, "
        f"{r['load_average_after'][0]} after (the machine is shared; both sides ran under the same load).",
        "",
        "Plain nbgrader runs `nbgrader autograde <lecture>` per lecture, sequentially, unsandboxed, without "
        "feedback, with the course's `nbgrader_config.py` (nbgrader's own steps; its Execute only skips "
        "nbclient's Output-widget emulation, which stalls widget cells for a full cell timeout now and then "
        "on busy cores: `autograder/isolation/headless.py`, jupyter/nbclient#312).  `dp-course grade --force` "
        "is timed end to end except the course set-up (built beforehand "
        "for both): intake, sandboxed execution with the monkeypatch guard, merge into one gradebook, feedback "
        "(HTML, hidden tests stripped), grades.csv and the report.",
        "",
        f"Each configuration ran in {r['repeats']} interleaved round(s) (plain, then each variant"
        + ("; one worker only in the first round" if any(x["workers"] == 1 for x in r["dp_course_grade"]) else "")
        + ") and the best wall time is reported; every round is listed in the last column with its own "
        "speed-up against the plain run of the same round.  *busy core-s / notebook* is the machine-wide CPU "
        "time used during the run divided by the number of notebooks (it includes other jobs on the machine).  "
        "Command: `PATH=.venv/bin:$PATH python benchmarks/bench_grading.py --students "
        f"{r['students']} --workers "
        f"{','.join(str(x['workers']) for x in r['dp_course_grade'] if x.get('feedback', True) and not x.get('dask'))}"
        + (" --dask " if r.get("dask") else " ")
        + "--no-feedback-workers "
        f"'{','.join(str(x['workers']) for x in r['dp_course_grade'] if not x.get('feedback', True))}' "
        f"--repeats {r['repeats']}"
        + (f" --lectures {','.join(r['lectures'])}" if r.get("all_lectures") is False else "") + "`.",
        "",
        "| run | best wall time (s) | s / notebook | speed-up vs plain | busy core-s / notebook | identical "
        "scores | all rounds (s) |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
        f"| plain `nbgrader autograde` (sequential) | {plain['seconds']:.1f} | {plain['per_notebook']:.2f} | 1.00 | "
        f"{min(x['busy_core_seconds'] for x in plain['rounds']) / r['notebooks']:.2f} | - | "
        f"{', '.join(str(x['seconds']) for x in plain['rounds'])} |",
    ]
    for run in r["dp_course_grade"]:
        flag = "" if run.get("feedback", True) else " --no-feedback"

        busy = min(x["busy_core_seconds"] for x in run["rounds"]) / r["notebooks"]
        label = "`dp-course grade --scheduler ADDRESS` (Dask, 2 loopback workers)" if run.get("dask") else \
            f"`dp-course grade --workers {run['workers']}{flag}`"
        lines.append(f"| {label} | {run['seconds']:.1f} | "
                     f"{run['per_notebook']:.2f} | {run['speedup_vs_plain']:.2f} | {busy:.2f} | "
                     f"{'yes' if run['identical_scores'] else 'NO'} ({r['scored_cells']} cells) | "
                     + ", ".join(f"{x['seconds']} ({p['seconds'] / x['seconds']:.2f}x)"
                                 for x, p in zip(run["rounds"], plain["rounds"])) + " |")
    dask = r.get("dask")
    if dask:
        lines += [
            "",
            "## Grading on a Dask cluster",
            "",
            "`dp-course grade --scheduler tcp://HOST:PORT` on a loopback cluster started by the benchmark (`dask "
            "scheduler` and two `dask worker --nthreads 1 --nworkers 1`, all on 127.0.0.1), right after "
            "`--workers 2` in each round, on the same submissions and the same machine.  *ratio* is the "
            "`--workers 2` time divided by the Dask time (target >= 0.95: the cluster path costs at most 5 %).",
            "",
            "| `--workers 2` (s) | Dask, 2 workers (s) | ratio | each round |",
            "| ---: | ---: | ---: | --- |",
            f"| {dask['local_seconds']:.1f} | {dask['dask_seconds']:.1f} | {dask['ratio']:.3f} | "
            + ", ".join(f"{x:.3f}" for x in dask["rounds"]) + " |",
            "",
            "**Merge step per notebook**: the grader's main process, the one writer, does this for every "
            "notebook whatever the workers: merge the submission's rows into the gradebook (one transaction), copy "
            "its autograded notebook and pages, check and publish the pages, save the state file; plus its share of "
            "the outputs written once per run (grades.csv, the LMS exports, the report: "
            f"{dask['outputs_seconds']:.1f} s in this run, over {r['notebooks']} notebooks).  It bounds the "
            "throughput of any number of workers: at most 1 / (merge step) notebooks per second.",
            "",
            "| merge step per notebook (main process, best round) | with `--workers 2` | with Dask |",
            "| --- | ---: | ---: |",
            f"| per notebook: gradebook, files, pages, state file (ms) | {1000 * dask['finish_local']:.0f} | "
            f"{1000 * dask['finish_dask']:.0f} |",
            f"| with the outputs' share of this run (ms) | {1000 * dask['merge_local']:.0f} | "
            f"{1000 * dask['merge_dask']:.0f} |",
            "",
            "For a large class, the first line is the one that scales: the outputs are written once per run "
            "(their share shrinks with the number of notebooks).  The load average in the header applies: on a "
            "machine this loaded, every step is several times slower than on an idle one.",
        ]
    costs = r.get("feedback_cost") or []
    if costs:
        lines += [
            "",
            "## What the feedback costs",
            "",
            "Generating a student's page must cost at most 15 % of grading the notebook.  Each worker renders the "
            "pages of the submission it has just graded, with nbgrader's feedback exporter built once per worker "
            "and the fragments of the cells every page repeats rendered once "
            "(`autograder/feedback/feedback_render.py`); the grader's main process checks each page for "
            "hidden-test lines and publishes it.  Two measures, side by side on the same submissions: *in the workers*, the time "
            "spent rendering pages against the time in nbgrader's `autograde`, summed over the jobs of the runs "
            "with feedback (each page timed next to its own grading, under the same load: the measure of the "
            "target); and the *wall time* of the whole run with and without `--no-feedback` (which also holds "
            "the main process's checks, and the machine's load changing between two runs).",
            "",
            "| workers | pages in the workers (s) | autograde in the workers (s) | page / grading | wall time with "
            "feedback (s) | without (s) | wall-time difference (each round) |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        lines += [f"| {c['workers']} | "
                  + (f"{c['worker_feedback_seconds']:.1f} | {c['worker_autograde_seconds']:.1f} | "
                     f"{100 * c['worker_ratio']:.1f} % | " if c.get("worker_ratio") is not None else "- | - | - | ")
                  + f"{c['with_feedback']:.1f} | {c['without_feedback']:.1f} | {100 * c['ratio']:+.1f} % ("
                  + ", ".join(f"{100 * x:+.1f} %" for x in c["rounds"]) + ") |" for c in costs]
        if max(r["load_average_before"][0], r["load_average_after"][0]) > 2 * r["cores"]:
            lines += ["", f"**The machine was overloaded during this run** (load average above twice its {r['cores']} "
                      "cores, from other jobs): the kernels, the pages and the other jobs queued for the same cores, "
                      "and the two wall times ran under different loads, so these ratios measure the machine more "
                      "than the feedback.  The CPU each page costs, measured apart from the load, is in "
                      "`docs/design.md` (*What a page costs*)."]
    lines += [
        "",
        "## How throughput scales with cores",
        "",
        "Each worker grades one notebook at a time in its own kernel, so throughput grows with the number of "
        "workers until the cores are busy: on this 2-core machine, 1 -> 2 workers is the scaling that can be "
        "measured.  The serial part per run is small (course set-up once, merging each result into the "
        "gradebook, grades.csv and the report: a few seconds), so on N cores expect close to N times the "
        "one-worker throughput while N is much smaller than the number of notebooks, and memory allows "
        "N kernels (each kernel may use up to the `--memory-mb` limit, 3 GB by default; typically "
        "150-300 MB).  More workers than cores gives nothing: the kernels compete for the same cores.  "
        "The default is one worker per core (`--workers` overrides).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
