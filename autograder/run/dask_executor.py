"""Grading on a Dask distributed cluster: ``dp-course grade SUBMISSIONS -o OUT --scheduler tcp://HOST:PORT``.

:class:`DaskExecutor` is the second implementation of the grader's executor interface
(:mod:`autograder.run.executor`); the first is the local :class:`~autograder.run.workers.WorkerPool`.  One job is one
Dask task: :func:`grade_on_worker`, run by a Dask worker, hands the job to a grading worker process of its own --
the very program a local worker runs (:mod:`autograder.run.worker`), started the same way
(:class:`autograder.run.workers.Worker`: its own copy of the course directory, the run's grading configuration,
limits and sandbox) -- and returns its plain-data :class:`~autograder.run.jobs.Reply`.  That process is kept on the
Dask worker (in its :class:`GraderPlugin`) for every later job of the run, so the trusted kernel it starts for its
first notebook serves all of them, as locally.  The grader's main process merges each reply: it alone writes the
gradebook, the state file and the report.

What the cluster must provide:

* the same Python environment on every worker (the course kit installed from the same ``environment.yml``);
* one thread per worker (``dask worker --nthreads 1``): a worker grades one notebook at a time;
* one file system at the same path for the submissions and the output folder (a cluster's shared home or
  scratch): the jobs name the submitted notebooks by path, and each worker's course directory is
  ``OUT/work/w-<host>-<pid>/``, from which the grader copies the autograded notebooks and feedback pages.

Faults:

* **A worker that lacks the sandbox** (or runs more than one thread) takes no job: at the start every worker is
  asked (:func:`worker_refusal`, the local rule :func:`autograder.isolation.isolation.grading_refusal`), each that
  refuses is logged with its address and reason, and the jobs are restricted to the others (none left: the run
  stops before grading, naming each worker and why).
* **A worker that dies mid-notebook**: the scheduler gives the task to another worker, at most
  :data:`ALLOWED_FAILURES` more time (the run pins the scheduler's ``allowed_failures`` to it); a second death
  ends the task with ``KilledWorker``, and the job gets a ``crashed`` reply whose error starts with ``grader
  fault``: the grader grades the untouched notebooks (zero), the report shows the flag, and the next run grades
  the submission again.  A grading worker process that dies or outlives the job's deadline (the Dask worker
  alive) is the local case: a ``crashed`` reply, and a fresh process for the next job.
* **A scheduler that goes away**: after :data:`SCHEDULER_GRACE` seconds without it, :meth:`DaskExecutor.replies`
  raises :class:`SchedulerLost`.  Every submission merged so far is in the gradebook and the state file (one
  transaction each); running the same command again grades only the rest.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributed import Client, Future, KilledWorker, WorkerPlugin, get_worker
from traitlets.config import Config

from ..isolation import isolation
from .jobs import Job, Reply
from .workers import Worker

__all__ = ["ALLOWED_FAILURES", "SCHEDULER_GRACE", "GRADER_PLUGIN", "SchedulerLost", "DaskSlot", "GraderPlugin",
           "grade_on_worker", "has_plugin", "worker_refusal", "close_run", "pin_allowed_failures", "DaskExecutor"]

log = logging.getLogger(__name__)

ALLOWED_FAILURES = 1
"""How many more times a job is given to another worker after the worker grading it died."""
SCHEDULER_GRACE = 60.0
"""Seconds without the scheduler before the run stops (the client reconnects meanwhile)."""
POLL = 0.25
"""Seconds between two looks at the running jobs."""
GRADER_PLUGIN = "dp-course-grader"
"""The name of :class:`GraderPlugin` on the workers."""


class SchedulerLost(RuntimeError):
    """The Dask scheduler went away mid-run; what was merged so far is kept, the next run resumes."""


@dataclass(frozen=True)
class DaskSlot:
    """Where a job ran: the Dask worker's address and its grading worker's course directory."""

    wdir: Path
    address: str


class GraderPlugin(WorkerPlugin):
    """Kept by each Dask worker: its grading worker processes, one per run (by run id), stopped with it."""

    def __init__(self) -> None:
        self.slots: dict[str, Worker] = {}
        self.lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {}  # sent to the workers empty: each keeps its own processes

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def teardown(self, worker: Any) -> None:
        for run in list(self.slots):
            self.close(run)

    def close(self, run: str) -> None:
        """Stop the grading worker of ``run`` (its trusted kernel with it), if this Dask worker has one."""
        with self.lock:
            slot = self.slots.pop(run, None)
        if slot is not None:
            slot.close()


def _plugin(dask_worker: Any) -> GraderPlugin:
    plugin = dask_worker.plugins.get(GRADER_PLUGIN)
    if not isinstance(plugin, GraderPlugin):
        raise RuntimeError(f"the Dask worker {dask_worker.address} has no {GRADER_PLUGIN} plugin")
    return plugin


def grade_on_worker(job_json: dict[str, Any], run: str, work: str, course: str, config_json: str,
                    deadline: float) -> dict[str, Any]:
    """The Dask task of one job: grade it with this Dask worker's grading worker process (started for ``run`` on
    its first job, copying the course directory ``course`` into ``work/w-<host>-<pid>``, and kept), and return
    ``{"reply": Reply as JSON, "wdir": its course directory, "worker": this worker's address}``."""
    dask_worker = get_worker()
    plugin = _plugin(dask_worker)
    job = Job.from_json(job_json)
    with plugin.lock:  # one job at a time per Dask worker (it runs one thread; this makes sure)
        slot = plugin.slots.get(run)
        if slot is None or slot.proc.poll() is not None:
            if slot is not None:
                slot.close()
            wdir = Path(work) / f"w-{socket.gethostname()}-{os.getpid()}"
            config = Config(json.loads(config_json))
            config.SafeExecute.events_dir = str(wdir / "events")
            slot = plugin.slots[run] = Worker(0, wdir, Path(course), config)
        slot.send(job)
        ready = select.select([slot.stdout], [], [], deadline)[0]
        if not ready:
            log.warning("grade: the worker grading %s is stuck; killing it", job.label)
            slot.proc.kill()
        line = slot.stdout.readline()
        if line:
            reply = Reply.from_json(json.loads(line))
        else:  # the grading worker died (or was killed): the local rule, a crashed reply and a fresh process
            tail = slot.last_words()
            reply = Reply(job.student, job.assignment, False,
                          error=f"the grading worker process crashed ({tail})", crashed=True)
            plugin.slots.pop(run, None)
            slot.close()
        slot.job = None
        return {"reply": reply.to_json(), "wdir": str(slot.wdir), "worker": str(dask_worker.address)}


def has_plugin(dask_worker: Any = None) -> bool:
    """Whether this Dask worker has its :class:`GraderPlugin` already."""
    return isinstance(getattr(dask_worker, "plugins", {}).get(GRADER_PLUGIN), GraderPlugin)


def worker_refusal(sandbox_mode: str, dask_worker: Any = None) -> str | None:
    """Why this Dask worker must not grade (``None``: it may): not one thread, or the sandbox refused here as a
    local run would refuse it (:func:`autograder.isolation.isolation.grading_refusal`)."""
    nthreads = int(getattr(getattr(dask_worker, "state", None), "nthreads", 1))
    if nthreads != 1:
        return f"it runs {nthreads} threads; a grading worker needs exactly one (dask worker --nthreads 1)"
    return isolation.grading_refusal(isolation.probe(sandbox_mode), sandbox_mode)


def close_run(run: str, dask_worker: Any = None) -> None:
    """Stop this Dask worker's grading worker of ``run`` (at the end of the run)."""
    with contextlib.suppress(RuntimeError):
        _plugin(dask_worker).close(run)


def pin_allowed_failures(count: int, dask_scheduler: Any = None) -> int:
    """Set the scheduler's ``allowed_failures`` (how often a task may lose its worker) to ``count``; the old value."""
    old = int(dask_scheduler.allowed_failures)
    dask_scheduler.allowed_failures = count
    return old


class DaskExecutor:
    """Grading jobs as tasks on the Dask cluster whose scheduler is at ``address`` (see the module's docstring).

    Args:
        address: the scheduler, e.g. ``tcp://10.0.0.5:8786``.
        work, course, config, deadline: as for :class:`~autograder.run.workers.WorkerPool`.
        sandbox_mode: the sandbox the run grades with; a worker where it is refused takes no job.
        timeout: seconds to connect to the scheduler and to wait for a first worker.

    Raises:
        RuntimeError: no scheduler answers at ``address``, or it has no worker after ``timeout``, or every worker
            refuses to grade (the message names each and why).
    """

    def __init__(self, address: str, work: Path, course: Path, config: Config,
                 deadline: Callable[[Job], float], *, sandbox_mode: str, timeout: float = 60) -> None:
        self.work, self.course, self.deadline = Path(work), Path(course), deadline
        self.config_json = json.dumps(config, sort_keys=True)
        self.run = uuid.uuid4().hex[:12]
        self.queue: list[Job] = []
        self.futures: dict[Future[Any], Job] = {}
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except OSError as exc:
            raise RuntimeError(f"no Dask scheduler answers at {address} (--scheduler) within {timeout:g} s: "
                               f"{exc}") from None
        try:
            try:
                self.client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise RuntimeError(f"the Dask scheduler at {address} has no worker after {timeout:g} s: start "
                                   "workers with `dask worker ADDRESS --nthreads 1`") from None
            if not all(self.client.run(has_plugin).values()):  # registering again would stop other runs' workers
                self.client.register_plugin(GraderPlugin(), name=GRADER_PLUGIN)
            old = self.client.run_on_scheduler(pin_allowed_failures, ALLOWED_FAILURES)
            if old != ALLOWED_FAILURES:
                log.info("grade: the scheduler's allowed_failures pinned to %d (was %s)", ALLOWED_FAILURES, old)
            refusals: dict[str, str | None] = self.client.run(worker_refusal, sandbox_mode)
            for addr, why in sorted(refusals.items()):
                if why:
                    log.warning("grade: the Dask worker %s refuses to take jobs: %s", addr, why)
            self.workers = sorted(addr for addr, why in refusals.items() if not why)
            if not self.workers:
                raise RuntimeError("no Dask worker may grade: " + "; ".join(
                    f"{addr}: {why}" for addr, why in sorted(refusals.items())))
            self.restricted = len(self.workers) < len(refusals)
        except BaseException:
            self.client.close()
            raise

    def submit(self, job: Job) -> None:
        """Send ``job`` to the cluster (the scheduler queues it until a worker is free)."""
        future = self.client.submit(grade_on_worker, job.to_json(), self.run, str(self.work), str(self.course),
                                    self.config_json, self.deadline(job), key=f"grade-{job.label}-{uuid.uuid4().hex}",
                                    pure=False, workers=self.workers if self.restricted else None,
                                    allow_other_workers=False)
        self.futures[future] = job

    def assign(self, slot: DaskSlot, job: Job | None = None) -> None:
        """Send ``job`` (if any): the scheduler, not the slot, decides which worker takes it."""
        if job is not None:
            self.submit(job)

    def replies(self) -> Iterator[tuple[DaskSlot, Job, Reply]]:
        """Each reply as its task ends; a task whose workers died :data:`ALLOWED_FAILURES` + 1 times gets a
        ``crashed`` reply saying ``grader fault``.

        Raises:
            SchedulerLost: the scheduler has been away for :data:`SCHEDULER_GRACE` seconds.
        """
        away_since: float | None = None
        while self.futures:
            done = [future for future in self.futures if future.done()]
            if not done:
                time.sleep(POLL)
            if self.client.status == "running":
                away_since = None
            else:
                away_since = away_since or time.monotonic()
                if time.monotonic() - away_since > SCHEDULER_GRACE or self.client.status == "closed":
                    raise SchedulerLost(self._lost())
            for future in done:
                job = self.futures.pop(future)
                yield self._reply(future, job)

    def _lost(self) -> str:
        return (f"the Dask scheduler went away ({len(self.futures)} submission(s) not graded); every submission "
                "graded so far is in the gradebook and the state file: run the same command again to grade the "
                "rest")

    def _reply(self, future: Future[Any], job: Job) -> tuple[DaskSlot, Job, Reply]:
        if future.status == "finished":
            out = future.result()
            return DaskSlot(Path(out["wdir"]), out["worker"]), job, Reply.from_json(out["reply"])
        if future.status != "error":  # cancelled or lost: the scheduler forgot it
            raise SchedulerLost(self._lost())
        exc = future.exception()
        if isinstance(exc, KilledWorker):
            error = (f"grader fault: the Dask workers grading it died {ALLOWED_FAILURES + 1} times "
                     f"(last: {exc.last_worker.address if exc.last_worker else 'unknown'})")
        else:
            error = f"grader fault: the Dask task failed ({type(exc).__name__}: {exc})"[:400]
        log.warning("grade: %s: %s", job.label, error)
        reply = Reply(job.student, job.assignment, False, error=error, crashed=True)
        return DaskSlot(self.work / "none", ""), job, reply

    def close(self) -> None:
        """Stop the run's grading workers on the cluster (not the Dask workers) and disconnect."""
        if self.client.status == "running":
            with contextlib.suppress(Exception):
                self.client.run(close_run, self.run, wait=True)
        self.client.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
