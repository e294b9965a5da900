"""The gradebook: a worker's results as plain data, and the only code that writes the main gradebook.

Each worker grades in its own copy of the course directory, gradebook included, so nbgrader never has two
writers on one database.  After a job, the worker reads its rows of the submission
(:func:`export_submission`) and sends them to the grader, whose main process alone writes them into the main
gradebook (:func:`merge_submission`, or :func:`zero_submission` when nbgrader could not grade it at all).
:func:`read_scores` reads a submission's scores back; :func:`export_grades` writes ``grades.csv`` (nbgrader's long
format, from :mod:`autograder.standings`).
"""

from __future__ import annotations

import csv
import datetime as dt
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from .standings import Standing, long_rows, read_standings

__all__ = ["Scores", "db_url", "export_submission", "merge_submission", "zero_submission", "read_scores",
           "export_grades"]

Scores = tuple[float, float, dict[str, tuple[float | None, float]], bool]
"""(score, max score, ``{grade cell: (score or None while hand-grading is pending, max)}``, needs manual grading)."""


def db_url(db: Path) -> str:
    """The SQLAlchemy URL of the gradebook file ``db``."""
    return f"sqlite:///{db}"


def export_submission(url: str, assignment: str, student: str) -> dict[str, Any]:
    """A submission's autograder results from a (worker's) gradebook, as plain data for the grader."""
    with Gradebook(url) as gb:
        sub = gb.find_submission(assignment, student)
        st = sub.student
        return {
            "timestamp": sub.timestamp.isoformat() if sub.timestamp else None,
            "student": {"first_name": st.first_name, "last_name": st.last_name, "email": st.email,
                        "lms_user_id": st.lms_user_id},
            "notebooks": [{"name": nb.name, "late_submission_penalty": nb.late_submission_penalty,
                           "grades": [[g.name, g.auto_score] for g in nb.grades],
                           "comments": [[c.name, c.auto_comment] for c in nb.comments]}
                          for nb in sub.notebooks],
        }


def merge_submission(main_db: Path, assignment: str, student: str, data: dict[str, Any]) -> None:
    """Write one submission's autograder results (from :func:`export_submission`) into the main gradebook."""
    with warnings.catch_warnings(), Gradebook(db_url(main_db)) as gb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's own add_submission triggers these
        gb.update_or_create_student(student, **data["student"])
        ts = dt.datetime.fromisoformat(data["timestamp"]) if data.get("timestamp") else None
        gb.update_or_create_submission(assignment, student, timestamp=ts)
        for wnb in data["notebooks"]:
            mnb = gb.find_submission_notebook(wnb["name"], assignment, student)
            mnb.late_submission_penalty = wnb["late_submission_penalty"]
            for name, auto_score in wnb["grades"]:
                grade = gb.find_grade(name, wnb["name"], assignment, student)
                grade.auto_score = auto_score
                # nbgrader's own rule on re-grading (SaveAutoGrades): a manual grade stays but needs review
                grade.needs_manual_grade = (grade.manual_score is not None) or (auto_score is None)
            for name, auto_comment in wnb["comments"]:
                try:
                    gb.find_comment(name, wnb["name"], assignment, student).auto_comment = auto_comment
                except MissingEntry:
                    continue
        gb.db.commit()


def zero_submission(main_db: Path, assignment: str, student: str) -> None:
    """Last resort when nbgrader cannot grade a submission at all: every grade is zero."""
    with Gradebook(db_url(main_db)) as gb:
        gb.update_or_create_student(student)
        sub = gb.update_or_create_submission(assignment, student)
        for nb in sub.notebooks:
            for g in nb.grades:
                g.auto_score = 0.0
                g.needs_manual_grade = False
        gb.db.commit()


def read_scores(main_db: Path, assignment: str, student: str) -> Scores:
    """A submission's scores from the gradebook (grade cells named ``notebook:cell`` when it has several
    notebooks)."""
    with Gradebook(db_url(main_db)) as gb:
        sub = gb.find_submission(assignment, student)
        exercises: dict[str, tuple[float | None, float]] = {}
        manual = False
        for nb in sub.notebooks:
            for g in nb.grades:
                key = g.name if len(sub.notebooks) == 1 else f"{nb.name}:{g.name}"
                pending = bool(g.needs_manual_grade) and g.manual_score is None
                exercises[key] = (None if pending else float(g.score or 0.0), float(g.max_score or 0.0))
                manual = manual or bool(g.needs_manual_grade)
        return float(sub.score), float(sub.max_score), exercises, manual


def export_grades(course: Path, dest: Path, standings: Sequence[Standing] | None = None) -> Path:
    """``grades.csv`` of a course directory, from its gradebook: nbgrader's long format (the columns of
    ``nbgrader export``, one row per student and lecture, sorted) with blank scores and the status
    ``not submitted`` for a lecture a student did not submit, and the LMS id, the points still to mark by hand,
    the status and lateness (:func:`autograder.standings.long_rows`).  ``standings`` saves reading them again."""
    if standings is None:
        standings = read_standings(Path(course) / "gradebook.db")
    tmp = Path(dest).with_suffix(".csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(long_rows(standings))
    tmp.replace(dest)
    return Path(dest)
