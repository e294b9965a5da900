"""Test cells in a trusted kernel: same verdicts as one kernel on every lecture, and what the second kernel costs.

    PATH=.venv/bin:$PATH python benchmarks/bench_trusted.py [--variants] [--lectures 01_foundations,...]

Writes ``benchmarks/results/trusted.md`` and ``trusted.json``.  Side by side in one run:

1. **Verdicts.**  Every lecture's solution notebook, its untouched release (hidden tests restored, as nbgrader's
   autograde does) and, with ``--variants``, every answer-variant submission of ``tests/answer_variants/``
   (built by ``tests/_notebooks.build_submission``) are executed twice: in **one kernel** (nbgrader's
   ``Execute``, as grading did before) and with **two kernels** (:func:`autograder.trusted.runner.run_notebook`,
   one trusted kernel reused for all notebooks, a fresh student kernel per notebook).  For each test cell the
   score nbgrader would give (``nbgrader.utils.determine_grade``), the error type and message are compared;
   every difference is listed.
2. **Cost per notebook.**  CPU time of the kernels (psutil: the one kernel; the student kernel plus the trusted
   kernel's share) and of this process (the clients), and the wall time of the execution (kernel start-up
   excluded on both sides; a student kernel starts the same way in both designs).
3. **Round trip** of one call (a trivial function; a function returning 4000 floats), and the **second
   kernel's per-notebook overhead**: a fresh namespace in a warm trusted kernel against a new trusted kernel,
   both including the setup cell of ``02_privacy_loss`` (the imports).

The machine is shared: the load average is recorded before and after, and CPU times (not wall times) are the
numbers to compare.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))          # _notebooks: lectures, answer variants, submissions
sys.executable = os.path.abspath(sys.executable)

import nbformat  # noqa: E402
import psutil  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from jupyter_core.utils import run_sync  # noqa: E402
from nbgrader.utils import determine_grade  # noqa: E402

import _notebooks as nbs  # noqa: E402
from autograder.isolation import headless  # noqa: E402
from autograder.trusted import runner  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TIMEOUT = 120


def _cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def _pid(km: AsyncKernelManager) -> int:
    return int(km.provisioner.process.pid)  # type: ignore[union-attr]


class Kernel:
    """A student-style kernel on the ipc transport in its own folder."""

    def __init__(self, cwd: Path) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="dpcb-", dir="/tmp")
        self.km = AsyncKernelManager(kernel_name="python3", transport="ipc",
                                     connection_file=str(Path(self._tmp.name) / "k.json"))
        run_sync(self.km.start_kernel)(cwd=str(cwd), extra_arguments=["--HistoryManager.hist_file=:memory:"])

    def close(self) -> None:
        run_sync(self.km.shutdown_kernel)(now=True)
        self._tmp.cleanup()


# ---- submissions -------------------------------------------------------------------------------------------

def submissions(name: str, variants: bool) -> dict[str, nbformat.NotebookNode]:
    """``{student: notebook}``: the solution, the untouched release and (optionally) the answer variants, with
    the hidden tests restored in the test cells (as nbgrader's autograde does)."""
    source = nbs.read_source(name)
    tests = {gid: c.source for gid, c in nbs.test_cells(source).items()}
    release = nbformat.read(nbs.NOTEBOOKS / name / f"{name}.ipynb", as_version=4)

    def restore(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        for cell in nb.cells:
            gid = nbs.nbgrader_meta(cell).get("grade_id")
            if nbs.is_test_cell(cell) and gid in tests:
                cell.source = tests[gid]
        return nb

    out = {"solution": source, "untouched": restore(copy.deepcopy(release))}
    if variants:
        for student, replacements in nbs.variant_students(name).items():
            out[student] = restore(nbs.build_submission(release, source, replacements))
    return out


def verdicts(nb: nbformat.NotebookNode) -> dict[str, dict[str, Any]]:
    """``{grade_id: {"score", "ename", "evalue"}}`` of every autograded test cell."""
    out = {}
    for cell in nb.cells:
        if nbs.is_test_cell(cell):
            score, _ = determine_grade(cell)
            err = next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)
            out[nbs.nbgrader_meta(cell)["grade_id"]] = {
                "score": score, "ename": err.ename if err else None, "evalue": (err.evalue[:300] if err else None)}
    return out


# ---- the two ways of executing a notebook ------------------------------------------------------------------

def run_one_kernel(nb: nbformat.NotebookNode, cwd: Path) -> dict[str, Any]:
    kernel = Kernel(cwd)
    try:
        kc = kernel.km.client()
        kc.start_channels()
        run_sync(kc.wait_for_ready)(timeout=60)
        ex = headless.Execute(timeout=TIMEOUT, allow_errors=True)
        ex.nb, ex.km, ex.kc, ex.owns_km = nb, kernel.km, kc, False
        ex.resources = {}
        ex.reset_execution_trackers()
        cpu0, own0, t0 = _cpu(_pid(kernel.km)), time.process_time(), time.perf_counter()
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and cell.source.strip():
                ex.execute_cell(cell, index)
        wall = time.perf_counter() - t0
        cpu = _cpu(_pid(kernel.km)) - cpu0
        kc.stop_channels()
        return {"wall": wall, "cpu_kernels": cpu, "cpu_client": time.process_time() - own0}
    finally:
        kernel.close()


def run_two_kernels(nb: nbformat.NotebookNode, cwd: Path, trusted: runner.TrustedKernel) -> dict[str, Any]:
    kernel = Kernel(cwd)
    try:
        tpid = _pid(trusted.km)
        cpu0, tcpu0, own0, t0 = _cpu(_pid(kernel.km)), _cpu(tpid), time.process_time(), time.perf_counter()
        result = runner.run_notebook(nb, student_km=kernel.km, trusted=trusted,
                                     settings=runner.Settings(cell_timeout=TIMEOUT))
        wall = time.perf_counter() - t0
        student, trusted_cpu = _cpu(_pid(kernel.km)) - cpu0, _cpu(tpid) - tcpu0
        return {"wall": wall, "cpu_kernels": student + trusted_cpu, "cpu_student": student,
                "cpu_trusted": trusted_cpu, "cpu_client": time.process_time() - own0,
                "calls": result.stats.get("calls", 0), "call_seconds": result.stats.get("seconds", 0.0),
                "events": result.events}
    finally:
        kernel.close()


def compare(lectures: list[str], variants: bool, trusted: runner.TrustedKernel) -> dict[str, Any]:
    rows, diffs = [], []
    for name in lectures:
        cwd = nbs.NOTEBOOKS / name
        for student, nb in submissions(name, variants).items():
            one_nb, two_nb = copy.deepcopy(nb), copy.deepcopy(nb)
            one = run_one_kernel(one_nb, cwd)
            two = run_two_kernels(two_nb, cwd, trusted)
            v1, v2 = verdicts(one_nb), verdicts(two_nb)
            for gid in v1:
                a, b = v1[gid], v2.get(gid)
                if b is None or (a["score"], a["ename"], a["evalue"]) != (b["score"], b["ename"], b["evalue"]):
                    diffs.append({"lecture": name, "student": student, "cell": gid, "one_kernel": a,
                                  "two_kernels": b})
            rows.append({"lecture": name, "student": student, "cells": len(v1), "one": one, "two": two,
                         "points_one": sum(x["score"] for x in v1.values()),
                         "points_two": sum(x["score"] for x in v2.values())})
            print(f"{name:28s} {student:10s} one {one['cpu_kernels']:6.2f} s cpu | two "
                  f"{two['cpu_kernels']:6.2f} s cpu, {two['calls']:4d} calls | points "
                  f"{rows[-1]['points_one']:g} / {rows[-1]['points_two']:g}", flush=True)
    return {"rows": rows, "diffs": diffs}


# ---- round trip and per-notebook overhead ------------------------------------------------------------------

def _cell(source: str, grade_id: str, *, grade: bool, solution: bool) -> nbformat.NotebookNode:
    meta = {"grade": grade, "solution": solution, "locked": not solution, "grade_id": grade_id, "points": 1,
            "schema_version": 3}
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta})


def round_trip(trusted: runner.TrustedKernel, calls: int) -> dict[str, float]:
    """Mean seconds per call of a trivial function and of one returning 4000 floats (in a test cell)."""
    out = {}
    for label, answer, expr in [("trivial", "def f(x):\n    return x", "f(1)"),
                                ("4000 floats", "def f(x):\n    return np.random.default_rng(x).random(4000)",
                                 "f(1)")]:
        nb = nbformat.v4.new_notebook(cells=[
            _cell("import numpy as np", "setup", grade=False, solution=False),
            _cell(answer, "a", grade=False, solution=True),
            _cell(f"for _i in range({calls}):\n    {expr}", "t", grade=True, solution=False)])
        kernel = Kernel(Path(tempfile.gettempdir()))
        try:
            result = runner.run_notebook(nb, student_km=kernel.km, trusted=trusted)
        finally:
            kernel.close()
        out[label] = result.stats["seconds"] / result.stats["calls"]
    return out


def overhead(trusted: runner.TrustedKernel, repeats: int) -> dict[str, list[float]]:
    """Seconds (wall) and CPU seconds (trusted kernel + this process) to get a trusted namespace ready for a
    notebook: ``fresh`` in the warm kernel vs ``new`` kernel, setup cell of 02_privacy_loss included."""
    setup = next(c.source for c in nbs.read_source("02_privacy_loss").cells if c.cell_type == "code")
    student = Kernel(Path(tempfile.gettempdir()))
    out: dict[str, list[float]] = {"fresh_wall": [], "fresh_cpu": [], "new_wall": [], "new_cpu": []}
    empty = nbformat.v4.new_notebook()
    try:
        info = student.km.get_connection_info()
        for _ in range(repeats):
            tpid, own0, t0 = _pid(trusted.km), time.process_time(), time.perf_counter()
            cpu0 = _cpu(tpid)
            side = trusted.open(empty, info)
            side.run_setup(setup)
            side.close()
            out["fresh_wall"].append(time.perf_counter() - t0)
            out["fresh_cpu"].append(_cpu(tpid) - cpu0 + time.process_time() - own0)
            own0, t0 = time.process_time(), time.perf_counter()
            fresh = runner.TrustedKernel().start()
            side = fresh.open(empty, info)
            side.run_setup(setup)
            side.close()
            cpu = _cpu(_pid(fresh.km))
            fresh.shutdown()
            out["new_wall"].append(time.perf_counter() - t0)
            out["new_cpu"].append(cpu + time.process_time() - own0)
    finally:
        student.close()
    return out


# ---- report ------------------------------------------------------------------------------------------------

def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def write_report(data: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "trusted.json").write_text(json.dumps(data, indent=1, default=str))
    rows, diffs = data["compare"]["rows"], data["compare"]["diffs"]
    lines = ["# Test cells in a trusted kernel: verdicts and cost", "",
             f"Generated by `benchmarks/bench_trusted.py` ({data['command']}); {data['cores']} cores; Python "
             f"{data['python']}; load average {data['load_before']:.2f} before, {data['load_after']:.2f} after "
             "(the machine is shared: compare CPU times).", "",
             "## Verdicts: one kernel vs two kernels", "",
             "Every test cell of every notebook below was executed both ways; a difference is any change in "
             "nbgrader's score, the error type or the error message.", "",
             "| lecture | notebooks | test cells | differing cells | points (one / two) | kernel CPU s / nb, one "
             "| kernel CPU s / nb, two (student + trusted) | client CPU s / nb, one / two | wall s / nb, one / two "
             "| calls / nb | ms / call |", "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | ---: |"]
    for name in data["lectures"]:
        rs = [r for r in rows if r["lecture"] == name]
        nd = sum(1 for d in diffs if d["lecture"] == name)
        calls = sum(r["two"]["calls"] for r in rs)
        ms = 1000 * sum(r["two"]["call_seconds"] for r in rs) / max(calls, 1)
        lines.append(
            f"| {name} | {len(rs)} | {sum(r['cells'] for r in rs)} | {nd} | "
            f"{sum(r['points_one'] for r in rs):g} / {sum(r['points_two'] for r in rs):g} | "
            f"{_mean([r['one']['cpu_kernels'] for r in rs]):.2f} | "
            f"{_mean([r['two']['cpu_kernels'] for r in rs]):.2f} "
            f"({_mean([r['two']['cpu_student'] for r in rs]):.2f} + {_mean([r['two']['cpu_trusted'] for r in rs]):.2f})"
            f" | {_mean([r['one']['cpu_client'] for r in rs]):.2f} / {_mean([r['two']['cpu_client'] for r in rs]):.2f}"
            f" | {_mean([r['one']['wall'] for r in rs]):.2f} / {_mean([r['two']['wall'] for r in rs]):.2f} | "
            f"{calls / max(len(rs), 1):.0f} | {ms:.1f} |")
    one_cpu = sum(r["one"]["cpu_kernels"] + r["one"]["cpu_client"] for r in rows)
    two_cpu = sum(r["two"]["cpu_kernels"] + r["two"]["cpu_client"] for r in rows)
    lines += ["", f"All notebooks: CPU (kernels + client) {one_cpu:.1f} s in one kernel, {two_cpu:.1f} s with two "
              f"({100 * (two_cpu / one_cpu - 1):+.1f} %).", ""]
    lines += ["## Differences", ""]
    if not diffs:
        lines.append("None: every test cell got the same score, error type and message both ways.")
    for d in diffs:
        a, b = d["one_kernel"], d["two_kernels"] or {}
        lines.append(f"- {d['lecture']} / {d['student']} / `{d['cell']}`: one kernel {a['score']:g} "
                     f"({a['ename']}: {a['evalue']}) -> two kernels {b.get('score')} ({b.get('ename')}: "
                     f"{b.get('evalue')})")
    rt, oh = data["round_trip"], data["overhead"]
    lines += ["", "## Round trip and per-notebook overhead", "",
              "| measure | value |", "| --- | ---: |"]
    lines += [f"| one call, {k} (ms) | {1000 * v:.2f} |" for k, v in rt.items()]
    lines += [f"| trusted namespace for a notebook, fresh in a warm kernel: wall s / CPU s | "
              f"{_mean(oh['fresh_wall']):.2f} / {_mean(oh['fresh_cpu']):.2f} |",
              f"| the same with a new trusted kernel: wall s / CPU s | {_mean(oh['new_wall']):.2f} / "
              f"{_mean(oh['new_cpu']):.2f} |"]
    (RESULTS / "trusted.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lectures", default="", help="comma-separated lecture names (default: all)")
    parser.add_argument("--variants", action="store_true", help="also the answer-variant submissions")
    parser.add_argument("--calls", type=int, default=200, help="calls per round-trip measurement")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the overhead measurement")
    args = parser.parse_args(argv)
    lectures = [x for x in args.lectures.split(",") if x] or nbs.lectures()
    data: dict[str, Any] = {"command": "`PATH=.venv/bin:$PATH python benchmarks/bench_trusted.py "
                            + " ".join(argv if argv is not None else sys.argv[1:]) + "`",
                            "cores": os.cpu_count(), "python": platform.python_version(),
                            "load_before": os.getloadavg()[0], "lectures": lectures}
    with runner.TrustedKernel() as trusted:
        data["compare"] = compare(lectures, args.variants, trusted)
        data["round_trip"] = round_trip(trusted, args.calls)
        data["overhead"] = overhead(trusted, args.repeats)
    data["load_after"] = os.getloadavg()[0]
    write_report(data)
    print((RESULTS / "trusted.md").read_text())
    return 1 if data["compare"]["diffs"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
