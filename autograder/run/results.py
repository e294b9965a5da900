"""What a grading run produced: one :class:`SubmissionResult` per (student, assignment), and the :class:`GradeRun`.

:func:`autograder.run.grading.grade` returns a :class:`GradeRun`; :mod:`autograder.run.report` writes it out
(``report.md``, ``report.html``, ``results.json``); the incremental state keeps each result's JSON form
(:meth:`SubmissionResult.to_json`) so that an unchanged submission keeps its grade on the next run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..intake.events import Event

__all__ = ["SubmissionResult", "GradeRun"]


@dataclasses.dataclass
class SubmissionResult:
    """The outcome for one (student, assignment)."""

    student: str
    assignment: str
    files: list[str]
    score: float
    max_score: float
    exercises: dict[str, tuple[float | None, float]]  # grade cell id -> (score or None if hand-grading is pending, max)
    events: list[Event]
    seconds: float
    feedback: list[str]                           # paths relative to the output folder
    needs_manual_grade: bool = False
    regraded: bool = True

    def to_json(self) -> dict[str, Any]:
        """Plain data (events as dictionaries, exercises as lists)."""
        return {"student": self.student, "assignment": self.assignment, "files": list(self.files),
                "score": self.score, "max_score": self.max_score,
                "exercises": {k: list(v) for k, v in self.exercises.items()},
                "events": [e.to_json() for e in self.events], "seconds": self.seconds,
                "feedback": list(self.feedback), "needs_manual_grade": self.needs_manual_grade,
                "regraded": self.regraded}

    @classmethod
    def from_json(cls, data: dict[str, Any], regraded: bool) -> SubmissionResult:
        """The inverse of :meth:`to_json`, with ``regraded`` as given (a result kept from an earlier run)."""
        return cls(student=data["student"], assignment=data["assignment"], files=data["files"], score=data["score"],
                   max_score=data["max_score"], exercises={k: tuple(v) for k, v in data["exercises"].items()},
                   events=[Event.from_json(e) for e in data["events"]], seconds=data["seconds"],
                   feedback=data["feedback"], needs_manual_grade=data.get("needs_manual_grade", False),
                   regraded=regraded)


@dataclasses.dataclass
class GradeRun:
    """Everything a grading run produced (also written to ``<output>/results.json``)."""

    output_dir: Path
    results: list[SubmissionResult]
    unmatched: list[tuple[str, str]]
    duplicates: list[tuple[str, str]]
    layout: str
    sandbox: str
    sandbox_warning: str | None
    workers: int
    graded_now: int
    skipped: int
    seconds: float
    notebooks_graded: int
    grades_csv: Path
    timings: dict[str, float] = dataclasses.field(default_factory=dict)  # seconds per phase
    report_html: Path | None = None
    report_md: Path | None = None
    console: str = ""        # the grade table read from the gradebook (autograder.run.outputs.refresh)
    lms_exports: list[Path] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The content of ``results.json``."""
        return {"results": [r.to_json() for r in self.results], "unmatched": self.unmatched,
                "duplicates": self.duplicates, "layout": self.layout, "workers": self.workers,
                "seconds": self.seconds, "graded_now": self.graded_now, "skipped": self.skipped,
                "sandbox": self.sandbox, "sandbox_warning": self.sandbox_warning,
                "notebooks_graded": self.notebooks_graded, "timings": self.timings}

    @classmethod
    def from_json(cls, output_dir: Path, data: dict[str, Any]) -> GradeRun:
        """The run recorded in ``output_dir/results.json`` (``data``), every result marked as not re-graded
        now (``dp-course report`` rewrites the outputs without grading)."""
        return cls(output_dir=Path(output_dir),
                   results=[SubmissionResult.from_json(r, False) for r in data.get("results", [])],
                   unmatched=[(str(a), str(b)) for a, b in data.get("unmatched", [])],
                   duplicates=[(str(a), str(b)) for a, b in data.get("duplicates", [])],
                   layout=str(data.get("layout", "")), sandbox=str(data.get("sandbox", "")),
                   sandbox_warning=data.get("sandbox_warning"), workers=int(data.get("workers", 0)),
                   graded_now=0, skipped=len(data.get("results", [])), seconds=float(data.get("seconds", 0.0)),
                   notebooks_graded=0, grades_csv=Path(output_dir) / "grades.csv",
                   timings=dict(data.get("timings", {})))

    def table(self) -> str:
        """The plain-text grade table: :attr:`console` (from the gradebook, as ``grades.csv`` and the report
        show it) once :func:`autograder.run.outputs.refresh` ran, else one row per result of this run."""
        if self.console:
            return self.console
        rows = [("student", "assignment", "score", "max", "notes")]
        for r in sorted(self.results, key=lambda r: (r.assignment, r.student)):
            notes = sorted({e.title for e in r.events if e.kind.reported})
            rows.append((r.student, r.assignment, f"{r.score:g}", f"{r.max_score:g}", "; ".join(notes)[:90]))
        widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
        lines = []
        for j, row in enumerate(rows):
            lines.append("  ".join(str(row[i]).ljust(widths[i]) for i in range(4)) + "  " + row[4])
            if j == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 5)
        return "\n".join(lines)
