"""Due dates: ``--due LECTURE=2026-10-01T23:59[+02:00]``, kept in the gradebook, and when a submission is late.

A due date is stored as nbgrader's assignment ``duedate`` in the main gradebook (:func:`store_due_dates`), so
it persists from one run to the next and nbgrader's own tools (Formgrader, ``nbgrader export``) see it.
nbgrader keeps times as naive UTC; a due date given without a UTC offset is read in the grading machine's
local time zone.  A submission's time is nbgrader's ``timestamp.txt`` (nbgrader layout) or the LMS's time
of the file (a zip member's date, a file's modification time; see :mod:`autograder.intake`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from nbgrader.api import Gradebook

__all__ = ["parse_due", "to_utc", "store_due_dates", "due_dates", "utc_stamp"]


def to_utc(when: dt.datetime) -> dt.datetime:
    """``when`` as a naive UTC time (nbgrader's convention); a naive ``when`` is read as local time."""
    if when.tzinfo is None:
        when = when.astimezone()  # the machine's local time zone
    return when.astimezone(dt.UTC).replace(tzinfo=None)


def parse_due(text: str, lectures: Mapping[str, object] | None = None) -> tuple[str, dt.datetime]:
    """``(lecture, due date as naive UTC)`` from ``LECTURE=YYYY-MM-DDTHH:MM[:SS][+HH:MM]``.

    Raises:
        ValueError: no ``=``, a date that is not ISO 8601, or (when ``lectures`` is given) an unknown lecture;
            the message names ``--due``, the format and the value given.
    """
    lecture, sep, when = text.partition("=")
    fmt = "LECTURE=YYYY-MM-DDTHH:MM with an optional UTC offset such as +02:00"
    if not sep or not lecture.strip() or not when.strip():
        raise ValueError(f"--due must be {fmt}, got {text!r}")
    try:
        parsed = dt.datetime.fromisoformat(when.strip())
    except ValueError:
        raise ValueError(f"--due must be {fmt}; {when.strip()!r} is not a date and time, got {text!r}") from None
    lecture = lecture.strip()
    if lectures is not None and lecture not in lectures:
        raise ValueError(f"--due must name a lecture of {sorted(lectures)}, got {lecture!r} (in {text!r})")
    return lecture, to_utc(parsed)


def store_due_dates(db: Path, due: Mapping[str, dt.datetime]) -> None:
    """Record each assignment's due date (naive UTC) in the gradebook ``db`` (the assignment is created if
    nbgrader has not seen it yet); a due date already stored and not given again stays."""
    if not due:
        return
    with Gradebook(f"sqlite:///{db}") as gb:
        for name, when in due.items():
            gb.update_or_create_assignment(name, duedate=when)


def due_dates(db: Path) -> dict[str, dt.datetime]:
    """``{assignment: due date (naive UTC)}`` of the assignments that have one in the gradebook ``db``."""
    with Gradebook(f"sqlite:///{db}") as gb:
        return {a.name: a.duedate for a in gb.assignments if a.duedate is not None}


def utc_stamp(epoch: float) -> str:
    """An epoch time as nbgrader's ``timestamp.txt`` text (ISO 8601, UTC)."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat()
