"""The gradebook: a worker's results as plain data, and the only code that writes the main gradebook.

Each worker grades in its own copy of the course directory, gradebook included, so nbgrader never has two
writers on one database.  After a job, the worker reads its rows of the submission
(:func:`export_submission`) and sends them to the grader, whose main process alone writes them into the main
gradebook (:func:`merge_submission`, or :func:`zero_submission` when nbgrader could not grade it at all).
:func:`read_scores` reads a submission's scores back; :func:`export_grades` writes ``grades.csv`` (nbgrader's long
format, from :mod:`autograder.run.standings`).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import shutil
import sqlite3
import warnings
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from nbgrader.api import (Comment, Grade, Gradebook, MissingEntry, Student, SubmittedAssignment,
                         SubmittedNotebook)
from nbgrader.utils import parse_utc
from sqlalchemy.exc import SAWarning

from .standings import Standing, long_rows, read_standings

__all__ = ["Scores", "CellSets", "HandMark", "db_url", "export_submission", "merge_submission", "zero_submission",
           "read_scores", "export_grades", "check", "backup", "hand_marks", "marks_to_review", "flag_for_review",
           "assignments_held", "remove_assignment", "structure", "sync_structure"]

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


def _submission(gb: Gradebook, assignment: str, student: str, **student_info: Any) -> SubmittedAssignment:
    """The submission's rows, created where missing (student, submission, notebooks, grades, comments) without
    committing: the caller commits once, so an interrupted merge leaves nothing half written."""
    try:
        st = gb.find_student(student)
    except MissingEntry:
        st = Student(id=student)
        gb.db.add(st)
    for key, value in student_info.items():
        setattr(st, key, value)
    try:
        sub = gb.find_submission(assignment, student)
    except MissingEntry:
        sub = SubmittedAssignment(assignment=gb.find_assignment(assignment), student=st)
        gb.db.add(sub)
    _complete(gb, sub)
    return sub


def _complete(gb: Gradebook, sub: SubmittedAssignment) -> None:
    """Add the rows a submission lacks for the assignment's current notebooks and cells (nbgrader's
    ``add_submission`` makes them for a new one; a cell added to the source later needs them too)."""
    have = {nb.notebook.name: nb for nb in sub.notebooks}
    for notebook in sub.assignment.notebooks:
        snb = have.get(notebook.name)
        if snb is None:
            snb = SubmittedNotebook(notebook=notebook, assignment=sub)
            gb.db.add(snb)
        grades = {g.cell_id for g in snb.grades}
        comments = {c.cell_id for c in snb.comments}
        for cell in [*notebook.grade_cells, *notebook.task_cells]:
            if cell.id not in grades:
                gb.db.add(Grade(cell_id=cell.id, notebook=snb))
        for cell in [*notebook.solution_cells, *notebook.task_cells]:
            if cell.id not in comments:
                gb.db.add(Comment(cell_id=cell.id, notebook=snb))
    gb.db.flush()


def merge_submission(main_db: Path, assignment: str, student: str, data: dict[str, Any],
                     review: Collection[tuple[str, str]] = ()) -> None:
    """Write one submission's autograder results (from :func:`export_submission`) into the main gradebook, in
    one transaction.

    Hand marks (``Grade.manual_score``, ``extra_credit``, ``Comment.manual_comment``) are never changed.  A
    hand mark keeps its ``needs_manual_grade`` flag, except that it is raised (kept, flagged for review) for
    the cells in ``review`` (``(notebook, cell)``: the student's answer changed since it was marked).  A cell
    without a hand mark needs one when the autograder could not score it (nbgrader's rule).
    """
    with warnings.catch_warnings(), Gradebook(db_url(main_db)) as gb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's relationships trigger these
        ts = dt.datetime.fromisoformat(data["timestamp"]) if data.get("timestamp") else None
        sub = _submission(gb, assignment, student, **data["student"])
        sub.timestamp = parse_utc(ts) if ts else None
        notebooks = {nb.name: nb for nb in sub.notebooks}
        for wnb in data["notebooks"]:
            mnb = notebooks.get(wnb["name"])
            if mnb is None:
                continue
            mnb.late_submission_penalty = wnb["late_submission_penalty"]
            grades = {g.name: g for g in mnb.grades}
            comments = {c.name: c for c in mnb.comments}
            for name, auto_score in wnb["grades"]:
                grade = grades.get(name)
                if grade is None:
                    continue
                grade.auto_score = auto_score
                if grade.manual_score is None:
                    grade.needs_manual_grade = auto_score is None
                elif (wnb["name"], name) in review:
                    grade.needs_manual_grade = True
            for name, auto_comment in wnb["comments"]:
                if name in comments:
                    comments[name].auto_comment = auto_comment
        gb.db.commit()


def zero_submission(main_db: Path, assignment: str, student: str) -> None:
    """Last resort when nbgrader cannot grade a submission at all: every autograded score is zero (hand marks
    kept), in one transaction."""
    with warnings.catch_warnings(), Gradebook(db_url(main_db)) as gb:
        warnings.simplefilter("ignore", SAWarning)
        sub = _submission(gb, assignment, student)
        for nb in sub.notebooks:
            for g in nb.grades:
                g.auto_score = 0.0
                if g.manual_score is None:
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
    the status and lateness (:func:`autograder.run.standings.long_rows`).  ``standings`` saves reading them again."""
    if standings is None:
        standings = read_standings(Path(course) / "gradebook.db")
    tmp = Path(dest).with_suffix(".csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(long_rows(standings))
    tmp.replace(dest)
    return Path(dest)


# ----------------------------------------------------------------------------------------------------
# Keeping the instructor's work when sources change (autograder.run.migration decides, these write)

CellSets = dict[str, dict[str, dict[str, Any]]]
"""One notebook's nbgrader cells by kind: ``{"grade" | "solution" | "task" | "source": {name: attributes}}``
(the attributes nbgrader's ``update_or_create_*_cell`` take)."""

HandMark = tuple[str, str, str]
"""(student, notebook, cell) of a grade or comment made by hand."""


def check(main_db: Path) -> str | None:
    """Why the gradebook file cannot be used (not a database, damaged, not nbgrader's), or ``None``."""
    try:
        con = sqlite3.connect(f"file:{main_db}?mode=ro", uri=True)
        try:
            status = con.execute("PRAGMA quick_check").fetchone()
            tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    if not status or status[0] != "ok":
        return f"sqlite reports damage: {status[0] if status else 'no answer'}"
    missing = {"assignment", "grade", "comment", "submitted_assignment"} - tables
    return f"not an nbgrader gradebook (no table {', '.join(sorted(missing))})" if missing else None


def backup(main_db: Path, dest_dir: Path) -> Path:
    """A dated copy ``dest_dir/gradebook-YYYYmmdd-HHMMSS.db`` of the gradebook, made with sqlite's backup API
    (a consistent copy even of a database in use); a file that sqlite cannot read is copied byte for byte.
    Written under a temporary name and renamed, so a backup file is always whole.  Returns its path."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    dest = dest_dir / f"gradebook-{stamp}.db"
    n = 1
    while dest.exists():
        n += 1
        dest = dest_dir / f"gradebook-{stamp}-{n}.db"
    tmp = dest.with_suffix(".db.tmp")
    try:
        src = sqlite3.connect(f"file:{main_db}?mode=ro", uri=True)
        out = sqlite3.connect(tmp)
        try:
            src.backup(out)
        finally:
            out.close()
            src.close()
    except sqlite3.Error:
        shutil.copyfile(main_db, tmp)
    os.replace(tmp, dest)
    return dest


def hand_marks(main_db: Path, assignment: str, student: str | None = None) -> list[HandMark]:
    """Every cell of ``assignment`` (of one ``student``, or of all) with a hand-given score or comment."""
    with Gradebook(db_url(main_db)) as gb:
        try:
            subs = gb.find_assignment(assignment).submissions
        except MissingEntry:
            return []
        out = set()
        for sub in subs:
            if student is not None and sub.student.id != student:
                continue
            for nb in sub.notebooks:
                out |= {(sub.student.id, nb.name, g.name) for g in nb.grades
                        if g.manual_score is not None or g.extra_credit}
                out |= {(sub.student.id, nb.name, c.name) for c in nb.comments if c.manual_comment}
        return sorted(out)


def marks_to_review(main_db: Path, assignment: str, student: str) -> list[tuple[str, str]]:
    """``(notebook, cell)`` of the submission's hand marks flagged for review (``needs_manual_grade`` set while
    a manual score is there)."""
    with Gradebook(db_url(main_db)) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return []
        return sorted((nb.name, g.name) for nb in sub.notebooks for g in nb.grades
                      if g.manual_score is not None and g.needs_manual_grade)


def flag_for_review(main_db: Path, assignment: str, cells: Collection[tuple[str, str]]) -> int:
    """Flag every hand mark given in ``cells`` (``(notebook, cell)``) of ``assignment`` for review
    (``needs_manual_grade``; the mark is kept), in one transaction.  Returns how many were flagged."""
    n = 0
    with Gradebook(db_url(main_db)) as gb:
        for sub in gb.find_assignment(assignment).submissions:
            for nb in sub.notebooks:
                for g in nb.grades:
                    if (nb.name, g.name) in cells and g.manual_score is not None and not g.needs_manual_grade:
                        g.needs_manual_grade = True
                        n += 1
        gb.db.commit()
    return n


def assignments_held(main_db: Path) -> dict[str, tuple[int, int]]:
    """``{assignment: (submissions, hand marks)}`` of every assignment in the gradebook."""
    with Gradebook(db_url(main_db)) as gb:
        names = [a.name for a in gb.assignments]
    return {name: (_n_submissions(main_db, name), len(hand_marks(main_db, name))) for name in names}


def _n_submissions(main_db: Path, assignment: str) -> int:
    with Gradebook(db_url(main_db)) as gb:
        return len(gb.find_assignment(assignment).submissions)


def remove_assignment(main_db: Path, assignment: str) -> None:
    """Delete ``assignment`` with every grade and comment of it (only after the instructor allowed it and a
    backup was written)."""
    with warnings.catch_warnings(), Gradebook(db_url(main_db)) as gb:
        warnings.simplefilter("ignore", SAWarning)
        gb.remove_assignment(assignment)


def structure(main_db: Path, assignment: str) -> dict[str, CellSets]:
    """The notebooks and cells the gradebook holds for ``assignment`` (names only), ``{}`` if it has none."""
    with Gradebook(db_url(main_db)) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        return {nb.name: {"grade": {c.name: {} for c in nb.grade_cells},
                          "solution": {c.name: {} for c in nb.solution_cells},
                          "task": {c.name: {} for c in nb.task_cells},
                          "source": {c.name: {} for c in nb.source_cells}} for nb in a.notebooks}


def sync_structure(main_db: Path, assignment: str, wanted: dict[str, CellSets]) -> None:
    """Make the gradebook's notebooks and cells of ``assignment`` those of ``wanted`` (the new source), so that
    ``nbgrader generate_assignment --force`` can update the assignment in place although it has submissions
    (nbgrader refuses to add or remove cells then).  Added notebooks and cells get rows in every existing
    submission; removed ones are deleted with their grades and comments (the caller has refused first where
    hand marks would go, and backed up).  Attributes are left to ``generate_assignment``."""
    with warnings.catch_warnings(), Gradebook(db_url(main_db)) as gb:
        warnings.simplefilter("ignore", SAWarning)
        a = gb.find_assignment(assignment)
        for nb in list(a.notebooks):
            if nb.name not in wanted:
                gb.remove_notebook(nb.name, assignment)
        for name, cells in wanted.items():
            try:
                gb.find_notebook(name, assignment)
            except MissingEntry:
                gb.add_notebook(name, assignment)
            nb = gb.find_notebook(name, assignment)
            have = {"grade": nb.grade_cells, "solution": nb.solution_cells, "task": nb.task_cells,
                    "source": nb.source_cells}
            for kind, rows in have.items():
                for cell in list(rows):
                    if cell.name not in cells[kind]:
                        for row in [*(getattr(cell, "grades", None) or []), *(getattr(cell, "comments", None) or [])]:
                            gb.db.delete(row)
                        gb.db.delete(cell)
            gb.db.commit()
            makers = {"grade": gb.update_or_create_grade_cell, "solution": gb.update_or_create_solution_cell,
                      "task": gb.update_or_create_task_cell, "source": gb.update_or_create_source_cell}
            for kind, create in makers.items():
                for cell_name, attrs in cells[kind].items():
                    create(cell_name, name, assignment, **attrs)
        for sub in gb.find_assignment(assignment).submissions:
            _complete(gb, sub)
        gb.db.commit()
