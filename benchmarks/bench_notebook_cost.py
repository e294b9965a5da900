"""What one notebook costs to grade, per lecture, and what the grader's main process spends merging it.

    PATH=.venv/bin:$PATH python benchmarks/bench_notebook_cost.py [--copies 3] [--lectures A,B]

The inputs of the capacity table (``benchmarks/capacity.py``, ``docs/cluster.md``).  Writes
``benchmarks/results/notebook_cost.json`` and ``notebook_cost.md``.

Workload: ``--copies`` students hand in the full solution of every lecture in ``solutions/`` (every test runs),
graded by ``autograder.run.grading.grade(workers=1)`` -- the code path of ``dp-course grade --workers 1``,
with the sandbox, the trusted kernel and the feedback pages.  With one worker the jobs run one after the
other, so each finished job closes a window that belongs to it:

* **busy core-seconds per notebook** (the worker side): the CPU time (user + system) of the grader's whole
  process tree -- the worker, its trusted kernel, the student's kernel in its sandbox, the feedback
  renderer -- used between one finished job and the next, minus the main process's own share.  CPU time,
  not wall time: the machine is shared, and CPU time is what another core would have to supply.  Each
  lecture's figure is the median of its copies; the very first job of the run also pays for starting the
  worker and its trusted kernel, which is reported once as ``worker_start``.
* **merge step per notebook** (the main process, the single writer): the wall time and the CPU time of the
  main process's step that merges one finished job into the main gradebook, copies its files, publishes its
  feedback pages and records it in the state file (``_finish`` in ``autograder/run/grading.py``, timed from
  outside by wrapping it here; nothing in the grader is changed).  The main process's per-run costs (course
  set-up and intake before the first job, grades.csv and the report after the last) are reported too.

The machine is shared with other jobs: wall times are inflated by them, CPU times much less.  The load
average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.modules.setdefault("rfc3987_syntax", None)  # slow optional import of jsonschema, as in the CLI
sys.executable = os.path.abspath(sys.executable)  # `PATH=.venv/bin:...` makes it relative; subprocesses chdir

import nbformat  # noqa: E402
import psutil  # noqa: E402

from autograder.course import cells, course  # noqa: E402
from autograder.course.limits import Limits  # noqa: E402
from autograder.isolation.isolation import probe  # noqa: E402
from autograder.run import grading  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def tree_cpu(me: psutil.Process) -> float:
    """CPU seconds used so far by ``me`` and every descendant, living or already reaped by its parent."""
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def own_cpu(me: psutil.Process) -> float:
    """CPU seconds of ``me`` alone (all its threads, no children)."""
    t = me.cpu_times()
    return t.user + t.system


def peak_rss(me: psutil.Process, stop: threading.Event, peak: dict[str, float]) -> None:
    """Until ``stop``: every 0.5 s, the resident memory of ``me``'s descendants (the worker side), the largest
    sum and the largest single process seen, in MB."""
    while not stop.wait(0.5):
        total = largest = 0.0
        for p in me.children(recursive=True):
            try:
                rss = p.memory_info().rss / 2**20
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            total += rss
            largest = max(largest, rss)
        peak["tree_mb"] = max(peak.get("tree_mb", 0.0), total)
        peak["process_mb"] = max(peak.get("process_mb", 0.0), largest)


def make_class(scratch: Path, lectures: list[str], copies: int, dest: Path) -> None:
    """``s<i>_<lecture>.ipynb``: the full solution of every lecture, ``copies`` times."""
    dest.mkdir(parents=True)
    for lecture in lectures:
        release = cells.student_version(scratch, lecture)
        source = nbformat.read(course.SOLUTIONS_DIR / lecture / f"{lecture}.ipynb", as_version=4)
        full = nbformat.writes(cells.full_solution(release, source))
        for i in range(copies):
            (dest / f"s{i:02d}_{lecture}.ipynb").write_text(full)


def measure(subs: Path, out: Path) -> dict[str, Any]:
    """Grade ``subs`` with one worker; the CPU and wall time of every job's window and of every merge step."""
    me = psutil.Process()
    windows: list[dict[str, Any]] = []
    marks = {"tree": tree_cpu(me), "own": own_cpu(me), "wall": time.perf_counter()}
    start = dict(marks)
    first_merge: dict[str, float] = {}
    original = grading._finish

    def timed_finish(run: Any, job: Any, reply: Any, worker_dir: Path) -> None:
        if not first_merge:
            first_merge.update(tree=tree_cpu(me), own=own_cpu(me), wall=time.perf_counter())
        w0, c0 = time.perf_counter(), time.thread_time()
        original(run, job, reply, worker_dir)
        merge_wall, merge_cpu = time.perf_counter() - w0, time.thread_time() - c0
        tree, own, wall = tree_cpu(me), own_cpu(me), time.perf_counter()
        windows.append({"student": job.key[0], "lecture": job.key[1], "crashed": bool(job.fallback),
                        "worker_cpu": round((tree - marks["tree"]) - (own - marks["own"]), 3),
                        "main_cpu": round(own - marks["own"], 3), "wall": round(wall - marks["wall"], 3),
                        "job_seconds": round(reply.seconds, 3), "merge_wall": round(merge_wall, 4),
                        "merge_cpu": round(merge_cpu, 4)})
        marks.update(tree=tree, own=own, wall=wall)

    grading._finish = timed_finish  # type: ignore[attr-defined]
    stop, peak = threading.Event(), {}  # type: ignore[var-annotated]
    sampler = threading.Thread(target=peak_rss, args=(me, stop, peak), daemon=True)
    sampler.start()
    try:
        run = grading.grade(subs, out, workers=1, progress=False, force=True,
                            limits=Limits(cell_timeout=120, notebook_timeout=1200))
    finally:
        grading._finish = original  # type: ignore[attr-defined]
        stop.set()
        sampler.join()
    end = {"tree": tree_cpu(me), "own": own_cpu(me), "wall": time.perf_counter()}
    scores = {f"{r.student}/{r.assignment}": [r.score, r.max_score] for r in run.results}
    flagged = {f"{r.student}/{r.assignment}": [e.kind.value for e in r.events] for r in run.results if r.events}
    return {"windows": windows, "scores": scores, "flagged": flagged,
            "peak_rss_mb": {k: round(v, 1) for k, v in peak.items()},
            "main_before_first_merge_cpu": round(first_merge["own"] - start["own"], 3),
            "tree_before_first_merge_cpu": round(first_merge["tree"] - start["tree"], 3),
            "main_after_last_merge_cpu": round(end["own"] - marks["own"], 3),
            "wall_total": round(end["wall"] - start["wall"], 2), "timings": {k: round(v, 3) for k, v in
                                                                             run.timings.items()}}


def summarise(m: dict[str, Any], lectures: list[str], copies: int) -> dict[str, Any]:
    """Per-lecture medians (the run's first job left out where the lecture has other copies), the merge step."""
    wins = m["windows"]
    first = wins[0] if wins else None
    per_lecture = {}
    for lecture in lectures:
        mine = [w for w in wins if w["lecture"] == lecture and not w["crashed"]]
        clean = [w for w in mine if w is not first] or mine
        if not clean:
            continue
        per_lecture[lecture] = {
            "busy_core_seconds": round(statistics.median(w["worker_cpu"] for w in clean), 2),
            "worker_wall_seconds": round(statistics.median(w["job_seconds"] for w in clean), 2),
            "samples": [w["worker_cpu"] for w in mine]}
    others = [per_lecture[first["lecture"]]["busy_core_seconds"]] if first and first["lecture"] in per_lecture \
        else []
    n = len(wins)
    merges_wall = [w["merge_wall"] for w in wins]
    merges_cpu = [w["merge_cpu"] for w in wins]
    return {
        "per_lecture": per_lecture,
        "worker_start_core_seconds": round(first["worker_cpu"] - others[0], 2) if first and others else None,
        "merge": {"wall_median": round(statistics.median(merges_wall), 4) if n else None,
                  "wall_p90": round(sorted(merges_wall)[int(0.9 * (n - 1))], 4) if n else None,
                  "wall_max": round(max(merges_wall), 4) if n else None,
                  "cpu_median": round(statistics.median(merges_cpu), 4) if n else None,
                  "main_cpu_per_window_median": round(statistics.median(w["main_cpu"] for w in wins), 4)
                  if n else None},
        "main_per_run": {"before_first_merge_cpu": m["main_before_first_merge_cpu"],
                         "after_last_merge_cpu": m["main_after_last_merge_cpu"],
                         "after_last_merge_cpu_per_notebook": round(m["main_after_last_merge_cpu"] / n, 4)
                         if n else None},
        "notebooks": n, "copies": copies, "peak_rss_mb": m["peak_rss_mb"],
    }


def render(r: dict[str, Any]) -> str:
    s = r["summary"]
    lines = [
        "# What one notebook costs to grade, and the merge step per notebook",
        "",
        f"Generated by `benchmarks/bench_notebook_cost.py`: {s['copies']} copies of the full solution of each of "
        f"{len(r['lectures'])} lecture(s) = {s['notebooks']} notebooks, graded by `grade(workers=1)` (the code "
        f"path of `dp-course grade --workers 1`: sandbox {r['sandbox']}, trusted kernel, feedback pages); "
        f"{r['cores']} cores; Python {r['python']}; load average {r['load_average_before'][0]} before, "
        f"{r['load_average_after'][0]} after (a shared machine: wall times are inflated by other jobs, CPU "
        f"times much less).  Total wall time {r['measurement']['wall_total']} s.  Command: `{r['command']}`.",
        "",
        "*busy core-s* is the CPU time (user + system) of the worker's whole process tree (worker, trusted "
        "kernel, sandboxed student kernel, feedback renderer) between one finished job and the next, the main "
        "process's own share taken out; the median over the copies, the run's first job left out (it also "
        "starts the worker and its trusted kernel).  *worker wall* is the job's wall time as the worker "
        "reports it (`seconds` in `state.json`), under this machine's load.",
        "",
        "| lecture | busy core-s / notebook | worker wall s / notebook (under load) | all copies (core-s) |",
        "| --- | ---: | ---: | --- |",
    ]
    for lecture, v in s["per_lecture"].items():
        lines.append(f"| `{lecture}` | {v['busy_core_seconds']:.2f} | {v['worker_wall_seconds']:.2f} | "
                     f"{', '.join(f'{x:.2f}' for x in v['samples'])} |")
    mean = statistics.mean(v["busy_core_seconds"] for v in s["per_lecture"].values())
    lines += [f"| mean of the lectures | {mean:.2f} | | |", ""]
    scores = r["measurement"]["scores"]
    by_lecture: dict[str, set[tuple[float, float]]] = {}
    for key, (score, top) in scores.items():
        by_lecture.setdefault(key.split("/", 1)[1], set()).add((score, top))
    same = all(len(v) == 1 for v in by_lecture.values())
    lines += [f"Scores: every copy of a lecture got {'the same' if same else 'NOT the same'} score "
              f"({', '.join(f'{k[:2]}: {min(v)[0]:g}/{min(v)[1]:g}' for k, v in sorted(by_lecture.items()))}); "
              f"the points not given are the written answers, marked by hand.  Flagged submissions: "
              f"{len(r['measurement']['flagged'])}.", ""]
    if s["worker_start_core_seconds"] is not None:
        lines += [f"Starting a worker (process, nbgrader, its trusted kernel), once per worker: about "
                  f"{s['worker_start_core_seconds']:.1f} core-s (the first job's excess over its lecture's median).",
                  ""]
    pk = s["peak_rss_mb"]
    if pk:
        lines += [f"Memory of the worker side (sampled every 0.5 s): at most {pk.get('tree_mb', 0):.0f} MB for the "
                  f"worker, its trusted kernel and the student's kernel together; the largest single process "
                  f"{pk.get('process_mb', 0):.0f} MB.", ""]
    mg = s["merge"]
    mp = s["main_per_run"]
    lines += [
        "## Merge step per notebook (the main process, the single writer)",
        "",
        "Timed around the main process's step that merges one finished job (gradebook transaction, copies of the "
        "graded notebook and pages, the hidden-test check of the pages, the state file).",
        "",
        "| measure | seconds |",
        "| --- | ---: |",
        f"| merge step, wall time, median | {mg['wall_median']:.4f} |",
        f"| merge step, wall time, 90th percentile | {mg['wall_p90']:.4f} |",
        f"| merge step, wall time, max | {mg['wall_max']:.4f} |",
        f"| merge step, CPU time, median | {mg['cpu_median']:.4f} |",
        f"| main process CPU per job window (merge + waiting for the worker), median | "
        f"{mg['main_cpu_per_window_median']:.4f} |",
        f"| main process CPU before the first merge (course set-up, intake of all {s['notebooks']} notebooks, "
        f"worker start), per run | {mp['before_first_merge_cpu']:.2f} |",
        f"| main process CPU after the last merge (grades.csv, LMS files, report), per run | "
        f"{mp['after_last_merge_cpu']:.2f} |",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=3, help="full solutions per lecture (default 3)")
    ap.add_argument("--lectures", default="", help="comma-separated lectures (default: every lecture in solutions/)")
    ap.add_argument("--render-only", action="store_true",
                    help="only rewrite notebook_cost.md from the committed notebook_cost.json (no grading)")
    args = ap.parse_args()
    if args.render_only:
        (RESULTS / "notebook_cost.md").write_text(render(json.loads((RESULTS / "notebook_cost.json").read_text())))
        return 0
    lectures = sorted(p.name for p in course.SOLUTIONS_DIR.iterdir() if (p / f"{p.name}.ipynb").is_file())
    if args.lectures:
        wanted = args.lectures.split(",")
        unknown = [x for x in wanted if x not in lectures]
        if unknown:
            print(f"--lectures must name lectures in solutions/ ({', '.join(lectures)}), got {unknown}",
                  file=sys.stderr)
            return 2
        lectures = wanted
    if args.copies < 2:
        print(f"--copies must be at least 2 (the run's first job is left out of its lecture), got {args.copies}",
              file=sys.stderr)
        return 2
    info = probe("auto")
    base = Path(tempfile.mkdtemp(prefix="dpc-cost-"))
    load0 = os.getloadavg()
    try:
        scratch = course.make_course(base / "scratch", lectures)
        subs = base / "subs"
        make_class(scratch, lectures, args.copies, subs)
        m = measure(subs, base / "out")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    load1 = os.getloadavg()
    cmd = "PATH=.venv/bin:$PATH python benchmarks/bench_notebook_cost.py --copies " + str(args.copies) + \
        (f" --lectures {args.lectures}" if args.lectures else "")
    result = {"lectures": lectures, "cores": os.cpu_count(), "platform": platform.platform(),
              "python": platform.python_version(), "sandbox": info.mode, "command": cmd,
              "load_average_before": [round(x, 2) for x in load0],
              "load_average_after": [round(x, 2) for x in load1],
              "measurement": m, "summary": summarise(m, lectures, args.copies)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "notebook_cost.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / "notebook_cost.md").write_text(render(result))
    print(render(result))
    print(f"wrote {RESULTS / 'notebook_cost.md'}")
    full = all(v[0] == v[1] for v in m["scores"].values())
    if not full:
        print(f"note: not every full solution scored full marks: {m['scores']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
