"""Due dates: ``--due LECTURE=2026-10-01T23:59[+02:00]``, kept in the gradebook, and when a submission is late.

A due date is stored as nbgrader's assignment ``duedate`` in the main gradebook (:func:`store_due_dates`), so
it persists from one run to the next and nbgrader's own tools (Formgrader, ``nbgrader export``) see it.
nbgrader keeps times as naive UTC; a due date given without a UTC offset is read in the grading machine's
local time zone.  A submission's time is nbgrader's ``timestamp.txt`` (nbgrader layout) or the LMS's time
of the file (a zip member's date, a file's modification time; see :mod:`autograder.intake.intake`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from .events import EventKind
from .lms import lms_info

__all__ = ["parse_due", "to_utc", "store_due_dates", "due_dates", "utc_stamp", "stamp_and_flag"]


class _File(Protocol):
    origin: str
    notebook: str
    assignment: str
    mtime: float
    timestamp: str | None
    lms_user_id: str
    late: bool
    flags: list[tuple[EventKind, str]]


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


def stamp_and_flag(f: _File, layout: str, due: Mapping[str, dt.datetime] | None) -> None:
    """Set a submitted file's LMS id and time and flag it late.

    Outside nbgrader's layout the file name's LMS id is kept (:func:`autograder.intake.lms.lms_info`) and, without
    nbgrader's ``timestamp.txt``, the file's time (a zip member's date, a file's modification time) becomes the
    submission time.  The file is late (``f.late``, an :attr:`~autograder.intake.events.EventKind.LATE` flag) when
    Canvas marked it ``LATE`` or its time is after ``due[f.assignment]`` (naive UTC).
    """
    info = lms_info(f.origin, f.notebook) if layout != "nbgrader" else None
    if info is not None:
        f.lms_user_id = info.user_id
        if f.timestamp is None and f.mtime > 0:
            f.timestamp = utc_stamp(f.mtime)
        if info.late:
            f.late = True
            f.flags.append((EventKind.LATE, f"marked LATE by {info.system.capitalize()}"))
            return
    when = None
    if f.timestamp:
        try:
            when = parse_utc(f.timestamp)
        except (ValueError, OverflowError, TypeError):
            f.flags.append((EventKind.LATE, f"the submission time {f.timestamp!r} cannot be read; "
                            "lateness unknown"))
            return
    deadline = (due or {}).get(f.assignment)
    if when is not None and deadline is not None and when > deadline:
        f.late = True
        late_by = when - deadline
        f.flags.append((EventKind.LATE, f"submitted {when:%Y-%m-%d %H:%M} UTC, {_span(late_by)} after "
                        f"the due date {deadline:%Y-%m-%d %H:%M} UTC"))


def _span(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{max(1, seconds // 60)} min"
