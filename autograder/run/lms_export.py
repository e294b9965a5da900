"""Grades for the LMS: one row per student, a column per lecture, the LMS's own ids.

Written by :func:`autograder.run.outputs.refresh` from the gradebook's standings (:mod:`autograder.run.standings`):

* ``grades_lms.csv`` -- any LMS or spreadsheet: ``student_id, lms_user_id, name, first_name, last_name, email``,
  one column per lecture (the score after nbgrader's late penalty; **blank** when the student did not submit;
  ``pending`` while a written answer still has to be marked by hand), then ``pending`` (the lectures still to
  mark, with the points given so far) and ``late``;
* ``lms/canvas.csv`` (when Canvas file names were graded) -- Canvas's gradebook import: ``Student, ID,
  SIS User ID, SIS Login ID, Section`` and a column per lecture; ``ID`` is Canvas's user id from the file names;
* ``lms/moodle_<lecture>.csv`` (when Moodle file names were graded) -- Moodle's *grading worksheet* of that
  assignment: ``Identifier`` (``Participant 12345``: Moodle's participant ids belong to one assignment, so there
  is one file per lecture), ``Full name``, ``Email address``, ``Grade``, ``Maximum Grade``.

The LMS files hold only final scores: a cell is blank when the student did not submit or hand grading is
pending, so an import can never record an unfinished score as the grade.  ``docs/instructor-guide.md`` says
how to import each one.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..intake.lms import LmsInfo
from .standings import Standing

__all__ = ["write_lms_exports", "lms_table"]


def _score(st: Standing) -> str:
    return f"{st.score:g}" if st.final and st.score is not None else ""


def lms_table(standings: Sequence[Standing]) -> list[list[str]]:
    """The rows of ``grades_lms.csv`` (header first): one per student, a column per lecture."""
    lectures = sorted({s.assignment for s in standings})
    by_student: dict[str, dict[str, Standing]] = {}
    for st in standings:
        by_student.setdefault(st.student, {})[st.assignment] = st
    rows = [["student_id", "lms_user_id", "name", "first_name", "last_name", "email", *lectures, "pending", "late"]]
    for student in sorted(by_student, key=lambda s: (s.casefold(), s)):
        mine = by_student[student]
        any_st = next(iter(mine.values()))
        cells = []
        for a in lectures:
            one = mine.get(a)
            cells.append("" if one is None or not one.submitted else "pending" if one.pending > 0 else _score(one))
        pending = "; ".join(f"{a}: {st.score:g} so far, {st.pending:g} pts to mark" for a, st in sorted(mine.items())
                            if st.submitted and st.pending > 0 and st.score is not None)
        late = "; ".join(f"{a}: {st.late_text()}" for a, st in sorted(mine.items()) if st.late)
        rows.append([student, any_st.lms_user_id, any_st.name, any_st.first_name, any_st.last_name, any_st.email,
                     *cells, pending, late])
    return rows


def _write(path: Path, rows: Iterable[Sequence[str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    tmp.replace(path)
    return path


def write_lms_exports(output_dir: Path, standings: Sequence[Standing],
                      ids: Mapping[tuple[str, str], LmsInfo]) -> list[Path]:
    """Write ``grades_lms.csv`` and, where the file names carried their ids, ``lms/canvas.csv`` and
    ``lms/moodle_<lecture>.csv`` (see the module's docstring).

    Args:
        output_dir: the grading output folder.
        standings: every (student, lecture) standing (:func:`autograder.run.standings.read_standings`).
        ids: ``{(student, lecture): what the LMS file names said}`` (from the graded files' paths).

    Returns:
        The files written (each rewritten from the gradebook every time; nothing else in ``lms/`` is touched).
    """
    out = Path(output_dir)
    written = [_write(out / "grades_lms.csv", lms_table(standings))]
    lms_dir = out / "lms"
    lectures = sorted({s.assignment for s in standings})
    canvas = {student for (student, _), info in ids.items() if info.system == "canvas"}
    if canvas:
        by_student: dict[str, dict[str, Standing]] = {}
        for st in standings:
            by_student.setdefault(st.student, {})[st.assignment] = st
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *lectures]]
        for student in sorted(canvas):
            mine = by_student.get(student, {})
            uid = next((info.user_id for (s, _), info in sorted(ids.items()) if s == student and info.user_id), "")
            name = next((st.name for st in mine.values() if st.name), student)
            rows.append([name, uid, "", "", "", *(_score(mine[a]) if a in mine else "" for a in lectures)])
        written.append(_write(lms_dir / "canvas.csv", rows))
    for lecture in lectures:
        moodle = {student: info for (student, a), info in ids.items() if a == lecture and info.system == "moodle"}
        if not moodle:
            continue
        rows = [["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"]]
        for st in standings:
            if st.assignment == lecture and st.student in moodle:
                rows.append([f"Participant {moodle[st.student].user_id}", st.name or st.student, st.email,
                             _score(st), f"{st.max_score:g}"])
        written.append(_write(lms_dir / f"moodle_{lecture}.csv", rows))
    return written
