"""The grading workers: a pool of processes that owns their start, restart and kill.

Each worker (:mod:`autograder.run.worker`) is a long-lived process with its own copy of the course directory
and gradebook, fed one :class:`~autograder.run.jobs.Job` at a time over a pipe (JSON lines).  The grader's main
process alone merges the results into the main gradebook (:mod:`autograder.run.gradebook`).

Why not :mod:`concurrent.futures`: a ``ProcessPoolExecutor`` cannot do what grading other people's code needs.

* **Kill one worker, keep the others.**  A submission can hang its worker past every limit, or kill it; the
  executor then marks the whole pool broken (``BrokenProcessPool`` for every pending job), and a running call
  cannot be cancelled at all.  Here a stuck worker is killed after its job's deadline, replaced by a fresh
  process with the same index, and only its job is reported (then graded again as the untouched notebook).
* **A private directory per worker.**  Each worker owns a course directory and gradebook that must outlive
  jobs and never be shared; executor workers are anonymous and interchangeable.
* **A job goes back to the same worker.**  When nbgrader fails on a submission, the second attempt (the
  untouched notebooks, for a zero with a reason) runs where the first left its files.
* **Nothing outlives its worker.**  A worker's kernels run in sessions of their own (``jupyter_client``), so
  killing the worker does not reach them.  A stuck worker is killed with its whole tree
  (:func:`autograder.isolation.reaping.kill_tree`), and after any worker ends, and when the pool closes, the
  processes still tagged with the worker's token are killed and logged as a grader fault
  (:func:`autograder.isolation.reaping.sweep`).
* **Plain data, and a log.**  Jobs and replies are JSON lines, so nothing of nbgrader is pickled, and each
  worker's own output (nbgrader's log, the kernels' launchers) goes to its ``worker.log``, whose last line
  explains a crash.
"""

from __future__ import annotations

import copy
import json
import logging
import selectors
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from traitlets.config import Config

import psutil

from ..isolation import protect, reaping, sandbox
from ..course.course import subprocess_env
from .jobs import Job, Reply
from ..course.settings import write_grading_config
import contextlib

__all__ = ["Worker", "WorkerPool", "remove_left_folders"]

log = logging.getLogger(__name__)


class Worker:
    """A worker process and its private course directory ``wdir`` (a copy of the course's ``master``).

    ``token`` tags every process the worker starts (:data:`autograder.isolation.reaping.TOKEN_VARIABLE` in their
    environment); default: a fresh one."""

    def __init__(self, index: int, wdir: Path, master: Path, config: Config, keep_fds: tuple[int, ...] = (),
                 token: str | None = None) -> None:
        self.index = index
        self.wdir = wdir
        self.token = token or reaping.new_token()
        protect.remove_tree(wdir)  # its sources may be read-only copies of a sealed course
        wdir.mkdir(parents=True)
        for sub in ("source", "release"):
            if (master / sub).is_dir():
                shutil.copytree(master / sub, wdir / sub)
        shutil.copyfile(master / "gradebook.db", wdir / "gradebook.db")
        shutil.copyfile(master / "nbgrader_config.py", wdir / "nbgrader_config.py")
        write_grading_config(wdir, config)
        self.log = open(wdir / "worker.log", "ab")  # noqa: SIM115 - the worker's stderr while it lives
        self.proc = subprocess.Popen([sandbox.PYTHON, "-m", "autograder.run.worker", str(wdir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     cwd=wdir, env=subprocess_env({reaping.TOKEN_VARIABLE: self.token}), text=True,
                                     bufsize=1, pass_fds=keep_fds)
        self.job: Job | None = None
        self.started = time.monotonic()

    @property
    def stdout(self) -> IO[str]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def send(self, job: Job) -> None:
        self.job = job
        self.started = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job.to_json()) + "\n")
        self.proc.stdin.flush()

    def last_words(self) -> str:
        """The last line of the worker's log (why it crashed), at most 300 characters."""
        try:
            return (self.wdir / "worker.log").read_text(errors="replace").strip().splitlines()[-1][:300]
        except (OSError, IndexError):
            return ""

    def kill(self) -> list[str]:
        """Kill the worker and every process below it (its kernels, its feedback renderer); returns what was
        killed besides the worker (:func:`autograder.isolation.reaping.kill_tree`)."""
        try:
            root = psutil.Process(self.proc.pid)
        except psutil.Error:  # already gone (and reaped): its orphans are found by the sweep in close()
            return []
        killed = reaping.kill_tree([root])
        self.proc.wait()
        return killed[1:]

    def close(self) -> list[str]:
        """Let the worker finish (end of its input), or kill it with its tree after 30 s; then kill whatever it
        started that is still alive (tagged with its token).  Returns those leftovers (:func:`describe
        <autograder.isolation.reaping.describe>`): the caller reports them as a grader fault."""
        left: list[str] = []
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            left += self.kill()
        left += reaping.sweep(self.token)
        remove_left_folders(self.token, f"grading worker {self.index}")
        self.log.close()
        return left


def remove_left_folders(token: str, whose: str) -> list[Path]:
    """Delete the private ``/tmp`` folders that the processes of ``token`` (ended: call it after
    :func:`autograder.isolation.reaping.sweep`) made and left, as a worker killed mid-notebook does
    (:func:`autograder.isolation.reaping.left_folders`); each is removed like a kernel's folder after its notebook
    (:func:`autograder.isolation.sandbox.cleanup`).  Returns them; logged (``whose`` names their owner)."""
    folders = reaping.left_folders(token)
    for folder in folders:
        sandbox.cleanup(folder)
    if folders:
        log.info("grade: removed %d private folder(s) left by %s: %s", len(folders), whose,
                 ", ".join(map(str, folders)))
    return folders


def _report_left(worker: Worker, left: list[str]) -> None:
    if left:
        log.warning("grade: grader fault: %d process(es) started by grading worker %d outlived it; killed: %s",
                    len(left), worker.index, "; ".join(left))


class WorkerPool:
    """``size`` workers grading in ``work/w<i>/``, copies of the course directory ``course``.

    Args:
        size: number of worker processes.
        work: folder for the workers' directories.
        course: the main course directory (sources, release, gradebook, ``nbgrader_config.py``).
        config: the grading configuration each worker runs nbgrader with
            (:func:`autograder.course.settings.grading_config`); ``events_dir`` is set to each worker's ``events/``.
        deadline: seconds a job may take before its worker counts as stuck and is killed.
        keep_fds: file descriptors the workers inherit (the output folder's lock, :func:`autograder.run.state.hold`:
            a worker outliving a killed grader keeps the folder until it ends).

    Use it as a context manager (the workers are stopped on exit); :meth:`submit` jobs, then iterate
    :meth:`replies`.
    """

    def __init__(self, size: int, work: Path, course: Path, config: Config,
                 deadline: Callable[[Job], float], keep_fds: tuple[int, ...] = ()) -> None:
        self.work, self.course, self.config, self.deadline = work, course, config, deadline
        self.keep_fds = keep_fds
        self.token = reaping.new_token()  # every process of the pool carries token.<its worker's>: close() sweeps
        self.queue: list[Job] = []
        self.selector = selectors.DefaultSelector()
        self.workers: list[Worker] = []
        for i in range(size):
            self.workers.append(self._start(i))

    def _start(self, index: int) -> Worker:
        wdir = self.work / f"w{index}"
        config = copy.deepcopy(self.config)
        config.SafeExecute.events_dir = str(wdir / "events")
        worker = Worker(index, wdir, self.course, config, self.keep_fds, reaping.new_token(self.token))
        self.selector.register(worker.stdout, selectors.EVENT_READ, worker)
        return worker

    def _restart(self, worker: Worker) -> Worker:
        self.selector.unregister(worker.stdout)
        _report_left(worker, worker.close())
        new = self._start(worker.index)
        self.workers[self.workers.index(worker)] = new
        return new

    def submit(self, job: Job) -> None:
        """Queue ``job``; an idle worker takes it now."""
        self.queue.append(job)
        for worker in self.workers:
            if worker.job is None and self.queue:
                worker.send(self.queue.pop(0))

    def assign(self, worker: Worker, job: Job | None = None) -> None:
        """Give an idle ``worker`` ``job``, or else the next queued job (if any)."""
        if job is None and self.queue:
            job = self.queue.pop(0)
        if job is not None:
            worker.send(job)

    def replies(self) -> Iterator[tuple[Worker, Job, Reply]]:
        """Each reply as it arrives, with its worker (idle now: :meth:`assign` it more work) and job.

        A worker that died, or was killed after its job's deadline, is replaced by a fresh one (the one
        yielded) and its job gets a ``crashed`` reply.
        """
        while any(w.job is not None for w in self.workers):
            for w in self.workers:
                if w.job and w.proc.poll() is None and time.monotonic() - w.started > self.deadline(w.job):
                    log.warning("grade: the worker grading %s is stuck; killing it", w.job.label)
                    killed = w.kill()
                    if killed:
                        log.warning("grade: killed with it: %s", "; ".join(killed))
            for key, _ in self.selector.select(timeout=5):
                worker: Worker = key.data
                job = worker.job
                assert job is not None
                line = worker.stdout.readline()
                if line:
                    reply = Reply.from_json(json.loads(line))
                else:  # the worker died
                    tail = worker.last_words()
                    log.warning("grade: a worker crashed while grading %s: %s", job.label, tail)
                    reply = Reply(job.student, job.assignment, False,
                                  error=f"the grading worker process crashed ({tail})", crashed=True)
                    worker = self._restart(worker)
                worker.job = None
                yield worker, job, reply

    def close(self) -> None:
        """Stop every worker; then kill whatever any worker of the pool started that is still alive (a grader
        fault, logged)."""
        try:
            for w in self.workers:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(w.stdout)
                _report_left(w, w.close())
            self.selector.close()
        finally:
            left = reaping.sweep(self.token)
            if left:
                log.warning("grade: grader fault: %d process(es) of this run were still alive after its workers "
                            "ended; killed: %s", len(left), "; ".join(left))
            remove_left_folders(self.token, "this run's workers")

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
