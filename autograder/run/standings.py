"""Where every student stands on every lecture, read from the main gradebook: the one source of every output.

:func:`read_standings` reads nbgrader's gradebook (``OUTPUT/course/gradebook.db``) with nbgrader's API and
returns one :class:`Standing` per student and lecture (every student the gradebook knows, every lecture at
least one of them submitted).  ``grades.csv``, the LMS exports, the report and the console table are all
written from these (:mod:`autograder.run.outputs`), so they agree with each other and with the marks given by hand
in Formgrader.  :func:`record_students` keeps what the file names said about a student (the LMS's id, the
name) in nbgrader's student record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

__all__ = ["Standing", "read_standings", "record_students", "long_rows", "STATUSES", "LONG_COLUMNS"]

STATUSES = ("graded", "hand grading pending", "hand mark to review", "not submitted")
"""The values of :attr:`Standing.status`."""


@dataclasses.dataclass(frozen=True)
class Standing:
    """One student's standing on one lecture, as the gradebook has it.

    ``score`` is the points given so far after nbgrader's late penalty (``None``: not submitted);
    ``pending`` the points of written answers not yet marked by hand; ``review`` the number of hand marks
    flagged for review (their answer or cell changed since they were given).
    """

    student: str
    assignment: str
    submitted: bool
    score: float | None
    raw_score: float | None
    max_score: float
    pending: float = 0.0
    review: int = 0
    late_penalty: float = 0.0
    seconds_late: float = 0.0
    timestamp: dt.datetime | None = None
    duedate: dt.datetime | None = None
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""
    exercises: dict[str, tuple[float | None, float]] = dataclasses.field(default_factory=dict)

    @property
    def late(self) -> bool:
        """Submitted after the lecture's due date (nbgrader's ``total_seconds_late``)."""
        return self.seconds_late > 0

    @property
    def status(self) -> str:
        """One of :data:`STATUSES`."""
        if not self.submitted:
            return "not submitted"
        if self.pending > 0:
            return "hand grading pending"
        if self.review:
            return "hand mark to review"
        return "graded"

    @property
    def final(self) -> bool:
        """Submitted, and nothing left to mark by hand: the score can go to the LMS."""
        return self.submitted and self.pending == 0

    @property
    def name(self) -> str:
        return " ".join(x for x in (self.first_name, self.last_name) if x)

    def status_text(self) -> str:
        """The status as every output shows it, with the points still to mark: ``hand grading pending (2 pts)``."""
        if self.pending > 0:
            return f"{self.status} ({self.pending:g} pts)"
        if self.review:
            return f"{self.status} ({self.review})"
        return self.status

    def late_text(self) -> str:
        """``""`` or how late, e.g. ``late 2.5 h``."""
        if not self.late:
            return ""
        s = self.seconds_late
        return f"late {s / 86400:.1f} d" if s >= 86400 else f"late {s / 3600:.1f} h" if s >= 3600 else \
            f"late {max(1, int(s // 60))} min"


def _grades(sub: Any) -> tuple[dict[str, tuple[float | None, float]], float, int]:
    """``({grade cell: (score or None while pending, max)}, pending points, hand marks to review)``."""
    exercises: dict[str, tuple[float | None, float]] = {}
    pending, review = 0.0, 0
    notebooks = list(sub.notebooks)
    for nb in notebooks:
        for g in nb.grades:
            key = g.name if len(notebooks) == 1 else f"{nb.name}:{g.name}"
            waiting = bool(g.needs_manual_grade) and g.manual_score is None
            exercises[key] = (None if waiting else float(g.score or 0.0), float(g.max_score or 0.0))
            if waiting:
                pending += float(g.max_score or 0.0)
            elif g.needs_manual_grade:
                review += 1
    return exercises, pending, review


def read_standings(db: Path) -> list[Standing]:
    """Every (student, lecture) standing of the gradebook ``db``, sorted by lecture then student.

    Lectures that no student submitted are left out; a student who did not submit a lecture that others did
    gets a ``not submitted`` standing (never a score of zero).
    """
    out: list[Standing] = []
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{db}") as gb:
        warnings.simplefilter("ignore", SAWarning)
        students = sorted(gb.students, key=lambda s: (s.id.casefold(), s.id))
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            if not assignment.submissions:
                continue
            for st in students:
                who = {"first_name": str(st.first_name or ""), "last_name": str(st.last_name or ""),
                       "email": str(st.email or ""), "lms_user_id": str(st.lms_user_id or "")}
                try:
                    sub = gb.find_submission(assignment.name, st.id)
                except MissingEntry:
                    out.append(Standing(st.id, assignment.name, False, None, None, float(assignment.max_score),
                                        duedate=assignment.duedate, first_name=who["first_name"],
                                        last_name=who["last_name"], email=who["email"],
                                        lms_user_id=who["lms_user_id"]))
                    continue
                exercises, pending, review = _grades(sub)
                raw = float(sub.score)
                penalty = float(sub.late_submission_penalty or 0.0)
                out.append(Standing(st.id, assignment.name, True, max(0.0, raw - penalty), raw,
                                    float(sub.max_score), pending, review, penalty,
                                    float(sub.total_seconds_late or 0.0), sub.timestamp, sub.duedate,
                                    who["first_name"], who["last_name"], who["email"], who["lms_user_id"],
                                    exercises))
    return out


class _Found(Protocol):
    student: str
    name: str
    lms_user_id: str


def record_students(db: Path, files: Iterable[_Found]) -> None:
    """Keep what the submissions' file names say about each student in nbgrader's student record: the LMS's
    user id (``lms_user_id``) and, while the record has none, the name (split at its last space into first and
    last name).  A value already there is replaced only by a value found now; nothing is cleared."""
    found: dict[str, _Found] = {}
    for f in files:
        if f.lms_user_id or f.name:
            found[f.student] = f
    if not found:
        return
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{db}") as gb:
        warnings.simplefilter("ignore", SAWarning)
        for sid, f in sorted(found.items()):
            try:
                st = gb.find_student(sid)
            except MissingEntry:
                st = gb.add_student(sid)
            if f.lms_user_id:
                st.lms_user_id = f.lms_user_id
            if f.name and not (st.first_name or st.last_name) and f.name != sid:
                first, _, last = f.name.rpartition(" ")
                st.first_name, st.last_name = (first, last) if first else ("", last)
        gb.db.commit()


LONG_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                "lms_user_id", "raw_score", "late_submission_penalty", "score", "max_score", "pending_points",
                "status", "late"]
"""The columns of ``grades.csv``: nbgrader's ``export`` columns (in its order), then the LMS id, the points still
to mark by hand, the status and lateness."""


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def long_rows(standings: Iterable[Standing]) -> list[list[str]]:
    """The rows of ``grades.csv`` (header first): nbgrader's long format, one row per student and lecture, with
    the scores **blank** (status ``not submitted``) for a lecture the student did not submit."""
    rows = [list(LONG_COLUMNS)]
    for st in sorted(standings, key=lambda s: (s.assignment, s.student.casefold(), s.student)):
        rows.append([st.assignment, st.duedate.isoformat() if st.duedate else "",
                     st.timestamp.isoformat() if st.timestamp else "", st.student, st.last_name, st.first_name,
                     st.email, st.lms_user_id, _num(st.raw_score), _num(st.late_penalty if st.submitted else None),
                     _num(st.score), _num(st.max_score), _num(st.pending if st.submitted else None), st.status,
                     st.late_text()])
    return rows
