"""The grader's one executor interface: where the grading jobs run.

A grading run (:func:`autograder.run.grading.grade`) hands each :class:`~autograder.run.jobs.Job` (one student's
submission of one assignment, every notebook of it) to an :class:`Executor` and merges each
:class:`~autograder.run.jobs.Reply` as it comes back.  The main process stays the only writer of the gradebook, the
state file and the report; an executor only runs jobs.  Two implementations, one grading path:

* :class:`autograder.run.workers.WorkerPool` (the default): worker processes on this machine (``--workers N``);
* :class:`autograder.run.dask_executor.DaskExecutor`: the workers of a Dask distributed cluster
  (``--scheduler tcp://HOST:PORT``), each of which grades exactly as a local worker does -- it runs the same
  worker program (:mod:`autograder.run.worker`) with the same sandbox check, configuration and limits, and keeps
  it (and so its trusted kernel) for every notebook it grades.

The contract, whichever the executor:

* :meth:`Executor.submit` queues a job; :meth:`Executor.replies` yields ``(slot, job, reply)`` as each job ends,
  where ``slot.wdir`` is the course directory the job was graded in (the grader copies the autograded notebooks and
  feedback pages from there);
* :meth:`Executor.assign` gives the slot its next job (``None``: the next queued one), e.g. the second attempt of a
  job nbgrader failed on (:meth:`~autograder.run.jobs.Job.as_fallback`);
* a worker that dies on a job yields a ``crashed`` reply for it (the ``worker_lost`` outcome): the grader then
  grades the untouched notebooks instead (zero), flags the submission and grades it again on the next run;
* :meth:`Executor.close` (or leaving the ``with`` block) stops the workers the executor started.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from traitlets.config import Config

from .dask_executor import DaskExecutor
from .jobs import Job, Reply
from .workers import WorkerPool

__all__ = ["Slot", "Executor", "open_executor", "check_scheduler_address"]

SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://\S+:\d+")
"""What ``--scheduler`` takes: a Dask scheduler's address with its protocol and port."""


class Slot(Protocol):
    """Where a job ran: a worker's own course directory."""

    wdir: Path


S = TypeVar("S", bound=Slot)


class Executor(Protocol[S]):
    """Runs grading jobs and gives back their replies (see the module's docstring for the contract)."""

    workers: list[Any]  # one entry per worker that takes jobs

    def submit(self, job: Job) -> None:
        """Queue ``job``."""

    def assign(self, slot: S, job: Job | None = None) -> None:
        """Give ``slot`` (idle after its reply) ``job``, or else the next queued job."""

    def replies(self) -> Iterator[tuple[S, Job, Reply]]:
        """Each reply as it arrives, with where it ran and its job, until no job is left."""

    def close(self) -> None:
        """Stop the workers this executor started."""

    def __enter__(self) -> Executor[S]:
        ...

    def __exit__(self, *exc: Any) -> None:
        ...


def check_scheduler_address(scheduler: str | None) -> None:
    """Raise ``ValueError`` unless ``scheduler`` is ``None`` or an address such as ``tcp://127.0.0.1:8786``."""
    if scheduler is not None and (not isinstance(scheduler, str) or not SCHEDULER_ADDRESS.fullmatch(scheduler)):
        raise ValueError("scheduler (--scheduler) must be a Dask scheduler address tcp://HOST:PORT or "
                         f"tls://HOST:PORT, got {scheduler!r}")


def open_executor(scheduler: str | None, size: int, work: Path, course: Path, config: Config,
                  deadline: Callable[[Job], float], keep_fds: tuple[int, ...] = (), *,
                  sandbox_mode: str) -> Executor[Any]:
    """The executor of a run: ``size`` local worker processes, or the Dask cluster at ``scheduler``.

    Args:
        scheduler: a Dask scheduler's address (``--scheduler``); ``None`` grades on this machine.
        size: number of local worker processes (unused with a scheduler: the cluster has its workers).
        work: the output folder's ``work/``: the workers' course directories (with a scheduler, it must be on a
            file system every Dask worker sees at the same path, as the submissions and the output folder).
        course: the main course directory the workers copy.
        config: the grading configuration (:func:`autograder.course.settings.grading_config`).
        deadline: seconds a job may take before its worker counts as stuck and is killed.
        keep_fds: file descriptors the local workers inherit (the output folder's lock).
        sandbox_mode: the sandbox the run grades with (``"bwrap"`` or ``"none"``): a Dask worker where it is
            refused (:func:`autograder.isolation.isolation.grading_refusal`) takes no job.
    """
    check_scheduler_address(scheduler)
    if scheduler is None:
        return WorkerPool(size, work, course, config, deadline, keep_fds)
    return DaskExecutor(scheduler, work, course, config, deadline, sandbox_mode=sandbox_mode)
