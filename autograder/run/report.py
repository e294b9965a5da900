"""The instructor's report of a grading run: ``report.md``, ``report.html``, ``scores.png``, ``results.json``.

:func:`write_report` lays out a :class:`~autograder.run.results.GradeRun`: the protection the kernels had (with a loud
warning when they ran without a sandbox), the grade table, a per-exercise score distribution (plotted and
tabulated), and every submission that failed or was flagged, with the reasons (its reported
:class:`~autograder.intake.events.Event` s).  Both pages are rendered from the Jinja2 templates
``autograder/templates/report.md`` and ``report.html``; the HTML one is autoescaped, since the reasons quote
students' code.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from ..intake.events import Event
from .results import GradeRun, SubmissionResult
from ..course.templating import render

__all__ = ["exercise_table", "write_report"]

Scores = list[tuple[float | None, float]]


@dataclasses.dataclass(frozen=True)
class _ExerciseRow:
    assignment: str
    exercise: str
    points: float
    mean: str
    full: int
    partial: int
    zero: int
    pending: int
    n: int


@dataclasses.dataclass(frozen=True)
class _Reason:
    title: str
    severity: str
    where: str
    detail: str


def exercise_table(run: GradeRun) -> dict[str, dict[str, Scores]]:
    """``{assignment: {exercise: [(score or None if hand-grading is pending, max) per submission]}}``."""
    table: dict[str, dict[str, Scores]] = {}
    for r in run.results:
        for ex, (s, m) in r.exercises.items():
            table.setdefault(r.assignment, {}).setdefault(ex, []).append((s, m))
    return table


def _buckets(vals: Scores) -> tuple[int, int, int, int]:
    """(full marks, partial, zero, pending hand-grading) counts."""
    full = sum(1 for s, m in vals if s is not None and m > 0 and s >= m - 1e-9)
    zero = sum(1 for s, _ in vals if s is not None and s <= 1e-9)
    pend = sum(1 for s, _ in vals if s is None)
    return full, len(vals) - full - zero - pend, zero, pend


def _plot(run: GradeRun, path: Path) -> Path | None:
    table = exercise_table(run)
    rows = [(a, ex, vals) for a in sorted(table) for ex, vals in table[a].items()]
    if not rows:
        return None
    fig = Figure(figsize=(8.5, 0.42 * len(rows) + 1.4))  # no pyplot: no global state, no GUI backend
    ax = fig.subplots()
    labels: list[str] = []
    shares: list[list[float]] = [[], [], [], []]
    for a, ex, vals in rows:
        labels.append(f"{a} · {ex}" if len(table) > 1 else ex)
        for share, count in zip(shares, _buckets(vals), strict=True):
            share.append(count / len(vals))
    y = list(range(len(rows)))[::-1]
    left = [0.0] * len(rows)
    for vals_, color, label in zip(shares, ("#2a9d8f", "#e9c46a", "#e76f51", "#bbbbbb"),
                                   ("full marks", "partial", "zero", "to grade by hand"), strict=True):
        ax.barh(y, vals_, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, vals_, strict=True)]
    for yi, (_, _, vals) in zip(y, rows, strict=True):
        done = [s for s, _ in vals if s is not None]
        text = f"mean {sum(done) / len(done):.2g}/{vals[0][1]:g}" if done else "pending"
        ax.text(1.01, yi, text, va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of submissions")
    ax.set_title(f"Score distribution per exercise ({len(run.results)} submissions)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(rows) > 3 else -0.25), ncol=4,
              fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _reason(e: Event) -> _Reason:
    where = " ".join(x for x in (e.notebook or "", f"[{e.cell}]" if e.cell else "") if x)
    return _Reason(e.title, str(e.severity), where, " ".join(str(e.detail).split())[:600])


def _problems(run: GradeRun) -> list[tuple[SubmissionResult, list[_Reason]]]:
    out = []
    for r in sorted(run.results, key=lambda r: (r.assignment, r.student)):
        reasons = [_reason(e) for e in r.events if e.kind.reported]
        if reasons:
            out.append((r, reasons))
    return out


def _exercise_rows(run: GradeRun) -> list[_ExerciseRow]:
    table = exercise_table(run)
    rows = []
    for a in sorted(table):
        for ex, vals in table[a].items():
            done = [s for s, _ in vals if s is not None]
            mean = f"{sum(done) / len(done):.2f}" if done else "-"
            rows.append(_ExerciseRow(a, ex, vals[0][1], mean, *_buckets(vals), len(vals)))
    return rows


def _context(run: GradeRun, png: Path | None, grades: Sequence[Sequence[str]] | None) -> dict[str, Any]:
    n_nb = max(1, run.notebooks_graded)
    graded_seconds = sum(r.seconds for r in run.results if r.regraded)
    return {
        "run": run, "now": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "warning_lines": [line.strip("! ") for line in (run.sandbox_warning or "").splitlines()
                          if line.strip("! ").strip()],
        "time_per_notebook": (f"{graded_seconds / n_nb:.1f} s of worker time per notebook" if run.graded_now
                              else "nothing needed grading"),
        "results": sorted(run.results, key=lambda r: (r.assignment, r.student)),
        "png": png.name if png else None, "exercises": _exercise_rows(run), "problems": _problems(run),
        "grades": [list(row) for row in grades] if grades else None,
    }


def write_report(run: GradeRun, grades: Sequence[Sequence[str]] | None = None) -> tuple[Path, Path]:
    """Write ``report.md``, ``report.html``, ``scores.png`` and ``results.json`` into the run's output folder.

    ``grades``: the grade table, header first, as :func:`autograder.run.outputs.refresh` reads it from the gradebook
    (the console shows the same rows); without it the table lists the run's results.
    """
    out = Path(run.output_dir)
    context = _context(run, _plot(run, out / "scores.png"), grades)
    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text(render("report.md", **context))
    html_path.write_text(render("report.html", **context))
    run.report_md, run.report_html = md_path, html_path
    (out / "results.json").write_text(json.dumps(run.to_json(), indent=1, default=str))
    return md_path, html_path
