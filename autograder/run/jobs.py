"""What a grading worker is asked to do, and what it answers: one JSON line each way.

The grader (:mod:`autograder.run.workers`) writes a :class:`Job` -- one student's submission of one assignment --
to a worker's stdin; the worker (:mod:`autograder.run.worker`) grades it with nbgrader in its own course directory
and writes a :class:`Reply` to its stdout.  Only plain data crosses: the submitted notebooks travel as paths,
the grades as the gradebook rows of the submission (:func:`autograder.run.gradebook.export_submission`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..intake.intake import SubmissionFile

__all__ = ["JobFile", "Job", "Reply"]


@dataclasses.dataclass(frozen=True)
class JobFile:
    """One notebook of a job: where its bytes are, or ``empty`` to grade the untouched release notebook."""

    notebook: str
    path: str
    empty: bool = False


@dataclasses.dataclass(frozen=True)
class Job:
    """Grade one (student, assignment).

    Args:
        student, assignment: whose submission.
        files: the submitted notebooks.
        hash: the submission's content hash with the settings (kept in the incremental state).
        feedback: also generate the HTML feedback.
        timestamp: nbgrader's submission time (``timestamp.txt``), for late penalties.
        fallback: a second attempt after nbgrader failed: every notebook is graded as the untouched release
            (zero), and ``reason`` says why (``crashed``: the worker process itself died).
    """

    student: str
    assignment: str
    files: tuple[JobFile, ...]
    hash: str
    feedback: bool = True
    timestamp: str | None = None
    fallback: bool = False
    reason: str | None = None
    crashed: bool = False

    @classmethod
    def of(cls, files: Sequence[SubmissionFile], hash: str, *, feedback: bool) -> Job:
        """The job for the files of one (student, assignment); an unreadable file is graded as the release."""
        first = files[0]
        return cls(first.student, first.assignment,
                   tuple(JobFile(f.notebook, str(f.path), bool(f.problem)) for f in files), hash, feedback,
                   next((f.timestamp for f in files if f.timestamp), None))

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    @property
    def label(self) -> str:
        return f"{self.student}/{self.assignment}"

    def as_fallback(self, reason: str, crashed: bool) -> Job:
        """The second attempt: every notebook graded as the untouched release, with the reason."""
        files = tuple(dataclasses.replace(f, empty=True) for f in self.files)
        return dataclasses.replace(self, files=files, fallback=True, reason=reason, crashed=crashed)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "files": [dataclasses.asdict(f) for f in self.files]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        return cls(**{**data, "files": tuple(JobFile(**f) for f in data["files"])})


@dataclasses.dataclass(frozen=True)
class Reply:
    """A worker's answer to a :class:`Job`.

    Args:
        student, assignment: whose submission.
        success: nbgrader autograded it.
        data: the submission's gradebook rows (:func:`autograder.run.gradebook.export_submission`) on success.
        error: the informative line of nbgrader's log when it failed.
        feedback: nbgrader generated the feedback.
        feedback_error: why not.
        events: ``{notebook: what the executor recorded}`` (events, seconds, the kernel's last words).
        seconds, autograde_seconds: time for the whole job, and for nbgrader's ``autograde`` alone.
        feedback_seconds: time the worker took to render the submission's feedback pages.
        crashed: the worker process died on this job (made up by the grader, not sent by a worker).
    """

    student: str | None
    assignment: str | None
    success: bool
    data: dict[str, Any] | None = None
    error: str = ""
    feedback: bool = False
    feedback_error: str = ""
    events: dict[str, Any] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    autograde_seconds: float = 0.0
    crashed: bool = False
    feedback_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
