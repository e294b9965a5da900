"""What can happen to a submission while it is graded: the kinds of events, and the event record.

An :class:`Event` only *describes* something that happened (a cell ran out of time, a helper was monkeypatched,
the file was not a notebook); deciding what it means is left to its readers: the report lists the errors and
flags under the submission, the feedback page shows them to the student, ``dp-course check`` prints them.  Each
:class:`EventKind` carries its :class:`Severity` and the short title the report uses.

Events cross process boundaries (the kernel's executor writes them to a file, the worker sends them to the
grader, the grader keeps them in ``state.json`` and ``results.json``) as plain JSON: :meth:`Event.to_json`
and :meth:`Event.from_json`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

__all__ = ["Severity", "EventKind", "Event"]


class Severity(enum.StrEnum):
    """How much an event matters to the grade."""

    ERROR = "error"
    """The submission lost points to a problem (the grade says why)."""
    FLAG = "flag"
    """Something the instructor should look at."""
    INFO = "info"
    """A note."""


class EventKind(enum.Enum):
    """The kinds of events, each with its :attr:`severity` and a short :attr:`title` for the report.

    The value is the kind's name in JSON (:meth:`from_key` and ``str()`` go back and forth).
    """

    severity: Severity
    title: str

    def __new__(cls, value: str, severity: Severity, title: str) -> EventKind:
        member = object.__new__(cls)
        member._value_ = value
        member.severity = severity
        member.title = title
        return member

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def from_key(cls, key: str) -> EventKind:
        """The kind named ``key`` in JSON.

        Raises:
            ValueError: no kind has that name.
        """
        for kind in cls:
            if kind.value == key:
                return kind
        raise ValueError(f"event kind must be one of {[k.value for k in cls]}, got {key!r}")

    TOO_LARGE = "too_large", Severity.ERROR, "notebook over the size limit"
    INVALID_JSON = "invalid_json", Severity.ERROR, "not valid JSON"
    NOT_A_NOTEBOOK = "not_a_notebook", Severity.ERROR, "not a Jupyter notebook"
    UNREADABLE_FILE = "unreadable_file", Severity.ERROR, "unreadable file (corrupt archive member, not a file)"
    SYMLINK = "symlink", Severity.ERROR, "symbolic link (not followed)"
    ID_COLLISION = ("id_collision", Severity.FLAG,
                    "names that give the same student id (both graded, ids made distinct)")
    DISK_LIMIT = "disk_limit", Severity.ERROR, "disk space limit reached (kernel stopped)"
    MEMORY_LIMIT = ("memory_limit", Severity.ERROR,
                    "memory limit of the kernel and its child processes reached (kernel stopped)")
    NBGRADER_FAILED = "nbgrader_failed", Severity.ERROR, "nbgrader could not grade it"
    NOT_GRADED = "not_graded", Severity.ERROR, "could not be graded"
    KERNEL_START_FAILED = "kernel_start_failed", Severity.ERROR, "the kernel could not start"
    KERNEL_DIED = "kernel_died", Severity.ERROR, "kernel died"
    KERNEL_UNRESPONSIVE = ("kernel_unresponsive", Severity.ERROR,
                           "kernel stopped (did not respond to an interrupt)")
    NOTEBOOK_TIMEOUT = "notebook_timeout", Severity.ERROR, "notebook time limit reached"
    CELL_TIMEOUT = "cell_timeout", Severity.FLAG, "cell time limit reached"
    MEMORY_ERROR = "memory_error", Severity.FLAG, "memory limit reached"
    OUTPUT_TRUNCATED = "output_truncated", Severity.FLAG, "output truncated"
    TAMPERING_RESTORED = "tampering_restored", Severity.FLAG, "monkeypatching undone before tests"
    TAMPERING_DURING_TEST = ("tampering_during_test", Severity.ERROR,
                             "monkeypatching during a test (test scored zero)")
    GUARD_FAILED = "guard_failed", Severity.ERROR, "test integrity could not be checked (test scored zero)"
    BACKGROUND_THREADS = "background_threads", Severity.FLAG, "background threads during tests"
    SUSPICIOUS_CODE = "suspicious_code", Severity.FLAG, "code to review"
    TEST_CELLS_CHANGED = "test_cells_changed", Severity.FLAG, "test cells deleted, duplicated or edited"
    STRUCTURE_RESTORED = ("structure_restored", Severity.FLAG,
                          "notebook structure restored from the assignment (instructor cells moved, deleted, "
                          "duplicated, re-typed or edited)")
    MISSING_NOTEBOOK = "missing_notebook", Severity.FLAG, "notebook missing"
    DUPLICATE_FILE = "duplicate_file", Severity.INFO, "duplicate file ignored"
    LATE = "late", Severity.FLAG, "submitted after the due date"
    SANDBOX_OFF = "sandbox_off", Severity.FLAG, "graded without a sandbox"
    FEEDBACK_FALLBACK = "feedback_fallback", Severity.FLAG, "feedback replaced by a summary"
    WORKER_CRASHED = "worker_crashed", Severity.ERROR, "grading worker crashed"
    HAND_MARK_TO_REVIEW = ("hand_mark_to_review", Severity.FLAG,
                           "hand mark to review (the question or the answer changed since it was given)")

    @property
    def reported(self) -> bool:
        """Whether the report lists it under the submission: errors and flags, except that a run without the
        sandbox (said once, at the top of the report) is not repeated for every submission."""
        return self.severity is not Severity.INFO and self is not EventKind.SANDBOX_OFF


@dataclasses.dataclass(frozen=True)
class Event:
    """One thing that happened to a submission.

    Args:
        kind: what happened.
        detail: the specifics, for the instructor (and, in the feedback, the student).
        cell: the ``grade_id`` of the cell it happened in, if any.
        notebook: the notebook it happened in (``None``: the submission as a whole).
        reason: for :attr:`EventKind.KERNEL_START_FAILED`, the kernel's last words, shown to a student by
            ``dp-course check``.
    """

    kind: EventKind
    detail: str
    cell: str | None = None
    notebook: str | None = None
    reason: str | None = None

    @property
    def severity(self) -> Severity:
        return self.kind.severity

    @property
    def title(self) -> str:
        return self.kind.title

    def to_json(self) -> dict[str, Any]:
        """The plain-data form (``reason`` only when there is one)."""
        out: dict[str, Any] = {"kind": self.kind.value, "detail": self.detail, "cell": self.cell,
                               "notebook": self.notebook}
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        """The inverse of :meth:`to_json`.

        Raises:
            ValueError: ``data["kind"]`` names no :class:`EventKind`.
        """
        return cls(EventKind.from_key(data["kind"]), str(data["detail"]), data.get("cell"), data.get("notebook"),
                   data.get("reason"))
