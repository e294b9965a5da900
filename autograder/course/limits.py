"""The limits every kernel that runs a submission works under: the one place they are defined.

The command line's defaults, the grader's settings (:class:`autograder.course.settings.GradingSettings`), the
executing preprocessor (:class:`autograder.execute.safe_execute.SafeExecute`: cell and notebook time,
output) and the kernel launcher (:mod:`autograder.isolation.sandbox`: memory, processes, file sizes, ``/tmp``) all read
:class:`Limits`.  Standard library only: the launcher imports it once per kernel.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["Limits", "RECEIVE_HWM", "MAX_MESSAGE_MB"]

MAX_MESSAGE_MB = 32
"""The largest ZeroMQ message the grader (and the trusted kernel) accepts from a student's kernel, MiB
(``zmq.MAXMSGSIZE``: a bigger one is dropped by ZeroMQ and never reaches Python).  The agent's largest reply
(``trusted.plain.Limits.max_text``, 24 MiB of text) fits; a plot is well under 1 MiB."""

RECEIVE_HWM = 4
"""Messages ZeroMQ queues on each socket that receives from a student's kernel (``zmq.RCVHWM``; ZeroMQ's default
is 1000).  With :data:`MAX_MESSAGE_MB` that bounds each socket's queue at 128 MiB, where ZeroMQ's defaults
allowed 1000 x 64 MiB: an IOPub flood grew the grading worker by 1 GB and a flood of the trusted link's DEALER
socket the trusted kernel by 1.6 GB (issue 27).  The reader drains the queue as it goes; a flood loses messages
(IOPub is a broadcast: output past the cell's cap is dropped anyway), never the grader's memory."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Limits applied to every kernel that runs a submission.

    Args:
        cell_timeout: seconds one cell may run before it is interrupted (and scored as an error).
        notebook_timeout: seconds the whole notebook may run; then the kernel is stopped and the cells not
            yet run score zero.
        memory_mb: memory limit, MiB: the address space of each process of the kernel (``RLIMIT_AS``) and the
            memory of its whole process tree, children and memfd files included
            (:mod:`autograder.isolation.memory_watch`,
            applied by the launcher).
        max_processes: processes and threads the kernel may have (``RLIMIT_NPROC``; applied only under a
            dedicated uid or in the sandbox's own user namespace, where it counts the kernel's processes alone).
        max_file_mb: largest file the kernel may write (``RLIMIT_FSIZE``), MiB.
        tmp_mb: size of the sandbox's private ``/tmp`` and of its working directory (tmpfs), MiB each.
        max_output_kb: output kept per cell (stream text and rich outputs), KiB; the rest is dropped with a
            note, and the submission is flagged.
        max_notebook_mb: notebooks larger than this are refused before they are parsed, MiB.
        feedback_timeout: seconds the feedback page of one notebook may take to render (a child process of the
            worker renders it; past this it is killed and the page is a score-only summary: a stalled render
            costs the page, never the grade).

    Raises:
        ValueError: a limit is not a positive number (the message names it).
    """

    cell_timeout: float = 60.0
    notebook_timeout: float = 600.0
    memory_mb: int = 3072
    max_processes: int = 64
    max_file_mb: int = 64
    tmp_mb: int = 256
    max_output_kb: int = 256
    max_notebook_mb: float = 20.0
    feedback_timeout: float = 60.0

    def __post_init__(self) -> None:
        lower = {"cell_timeout": 0.5, "notebook_timeout": 1.0, "memory_mb": 256, "max_processes": 16,
                 "max_file_mb": 1, "tmp_mb": 8, "max_output_kb": 1, "max_notebook_mb": 0.01,
                 "feedback_timeout": 1.0}
        for name, lo in lower.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value == value \
                    or value < lo or value == float("inf"):
                raise ValueError(f"{name} must be a finite number >= {lo:g}, got {value!r}")
        if self.cell_timeout > self.notebook_timeout:
            raise ValueError(f"cell_timeout must be <= notebook_timeout ({self.notebook_timeout:g}), "
                             f"got {self.cell_timeout!r}")

    @property
    def cell_seconds(self) -> int:
        """The cell time limit in whole seconds, as the executor applies it (at least 1)."""
        return max(1, int(math.ceil(self.cell_timeout)))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        """The inverse of :meth:`to_json` (unknown keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
