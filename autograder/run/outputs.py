"""The outputs of a grading folder, rewritten from the gradebook: ``grades.csv``, the LMS exports, the report and
the console table, which therefore always agree.

:func:`refresh` is the one function that writes them.  ``dp-course grade`` calls it at its end,
``dp-course feedback`` after regenerating pages, and ``dp-course report OUTPUT`` on its own (no grading): hand
marks given in Formgrader since the last run appear everywhere at once.  The scores come from the main gradebook
(``OUTPUT/course/gradebook.db``, :mod:`autograder.run.standings`); what happened to each submission (the events, the
files graded, the feedback pages) comes from the run's ``results.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..intake.events import EventKind
from .gradebook import export_grades
from ..intake.lms import LmsInfo, lms_info
from .lms_export import write_lms_exports
from .report import write_report
from .results import GradeRun, SubmissionResult
from .standings import Standing, read_standings

__all__ = ["refresh", "load_run", "grade_rows", "render_table", "TABLE_COLUMNS"]

TABLE_COLUMNS = ("student", "assignment", "score", "max", "status", "late", "notes")
"""The columns of the grade table (console and report)."""


def load_run(output_dir: Path) -> GradeRun:
    """The run recorded in ``output_dir/results.json``.

    Raises:
        ValueError: ``output_dir`` is not a grading output folder (no ``course/gradebook.db``), or its
            ``results.json`` cannot be read; the message names the folder.
    """
    out = Path(output_dir).resolve()
    if not (out / "course" / "gradebook.db").is_file():
        raise ValueError(f"output must be a grading output folder (one that `dp-course grade -o DIR` wrote, with "
                         f"course/gradebook.db), got {str(output_dir)!r}")
    path = out / "results.json"
    if not path.is_file():
        return GradeRun.from_json(out, {})
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"output must hold a readable results.json, got {str(path)!r} ({exc})") from None
    return GradeRun.from_json(out, data)


def _late(st: Standing, result: SubmissionResult | None) -> str:
    if st.late:
        return st.late_text()
    if result is not None and any(e.kind is EventKind.LATE for e in result.events):
        return "late"
    return ""


def grade_rows(standings: Sequence[Standing], results: Sequence[SubmissionResult]) -> list[tuple[str, ...]]:
    """The grade table (header first): one row per student and lecture, as ``grades.csv`` has them.

    ``score`` is the points given so far (blank: not submitted), ``status`` says what is pending; ``notes`` are
    the titles of the submission's reported events (from ``results``).
    """
    by_key = {(r.student, r.assignment): r for r in results}
    rows: list[tuple[str, ...]] = [TABLE_COLUMNS]
    for st in sorted(standings, key=lambda s: (s.assignment, s.student.casefold(), s.student)):
        r = by_key.get((st.student, st.assignment))
        notes = sorted({e.title for e in r.events if e.kind.reported and e.kind is not EventKind.LATE}) if r else []
        rows.append((st.student, st.assignment, "" if st.score is None else f"{st.score:g}", f"{st.max_score:g}",
                     st.status_text(), _late(st, r), "; ".join(notes)[:90]))
    return rows


def render_table(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` (header first) as aligned plain text; the last column is not padded."""
    if not rows:
        return ""
    n = len(rows[0])
    widths = [max(len(str(row[i])) for row in rows) for i in range(n - 1)]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(str(row[i]).ljust(widths[i]) for i in range(n - 1)) + "  " + str(row[-1]))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * len(str(row[-1])))
    return "\n".join(line.rstrip() for line in lines)


def _sync(run: GradeRun, standings: Sequence[Standing]) -> None:
    """Make the run's results say what the gradebook says (scores, pending hand grading); a submission the
    gradebook holds without a result gets one (no events), a result the gradebook does not hold is dropped."""
    by_key = {(s.student, s.assignment): s for s in standings if s.submitted}
    kept = []
    for r in run.results:
        st = by_key.pop((r.student, r.assignment), None)
        if st is None:
            continue
        r.score, r.max_score = st.score or 0.0, st.max_score
        r.exercises, r.needs_manual_grade = dict(st.exercises), st.pending > 0 or st.review > 0
        kept.append(r)
    for (student, assignment), st in by_key.items():
        kept.append(SubmissionResult(student, assignment, [], st.score or 0.0, st.max_score, dict(st.exercises), [],
                                     0.0, [], st.pending > 0 or st.review > 0, regraded=False))
    run.results = sorted(kept, key=lambda r: (r.assignment, r.student))


def refresh(output_dir: Path, run: GradeRun | None = None) -> GradeRun:
    """Rewrite ``grades.csv``, ``grades_lms.csv`` (and ``lms/``), the report and ``results.json`` of a grading
    output folder from its gradebook; returns the run with :attr:`GradeRun.console` (the grade table) set.

    Args:
        output_dir: the grading output folder.
        run: the run that just graded (``dp-course grade``); default: the one recorded in ``results.json``.

    Raises:
        ValueError: ``output_dir`` is not a grading output folder (see :func:`load_run`).
    """
    out = Path(output_dir).resolve()
    if run is None:
        run = load_run(out)
    elif not (out / "course" / "gradebook.db").is_file():
        raise ValueError(f"output must be a grading output folder (with course/gradebook.db), got {str(out)!r}")
    standings = read_standings(out / "course" / "gradebook.db")
    _sync(run, standings)
    ids: dict[tuple[str, str], LmsInfo] = {}
    for r in run.results:
        for origin in r.files:
            info = lms_info(origin, r.assignment)
            if info.system:
                ids[(r.student, r.assignment)] = info
    run.grades_csv = export_grades(out / "course", out / "grades.csv", standings)
    run.lms_exports = write_lms_exports(out, standings, ids)
    rows = grade_rows(standings, run.results)
    run.console = render_table(rows)
    write_report(run, grades=rows)
    return run
