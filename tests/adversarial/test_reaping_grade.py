"""Issue 27: no kernel of a grading run outlives ``dp-course grade``, however its worker ends.

Two bad paths, each forced on the toy assignment with one submission whose exercise 2 sleeps (one worker):

* **killed from outside** -- while the notebook runs, the test stops (SIGSTOP) the worker's trusted kernel and
  the sandbox launcher of the student's kernel (so neither can notice anything by itself: ipykernel's parent
  poller and the launcher's own watch of its parent are out of play, as under a heavy load), then kills the
  worker (SIGKILL: no ``finally``, no atexit).  The trusted kernel dies with its worker (``PR_SET_PDEATHSIG``);
  the launcher is an orphan adopted by ``init``, in no tree of the grader, and the main process's sweep finds
  it by its token and kills it with its sandbox, logging a grader fault.
* **sent SIGTERM** -- the same, but the worker is sent SIGTERM: it ends like an exception and shuts its kernels
  down on the way out.
* **killed on its job's deadline** -- the pool's deadline for the first attempt is cut to a few seconds, so the
  pool itself kills the worker mid-notebook: with its whole tree (kernels in sessions of their own included).

In each, the job is graded again as the untouched notebook (a zero, with the reason), and after ``grade``
returns every kernel process seen during the run is gone (a short grace while the last ones are reaped), and so
is every private ``/tmp`` folder of those kernels (``dpc-*`` of the student's, ``dpct-*`` of the trusted one: a
killed worker cannot remove its own, the main process does, :func:`autograder.run.workers.remove_left_folders`).
"""

from __future__ import annotations

import logging
import re
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from adversarial import hostile, sampling
from autograder import demo
from autograder.course import cells
from autograder.course.limits import Limits
from autograder.isolation import reaping
from autograder.run import workers
from autograder.run.grading import grade

pytestmark = pytest.mark.xdist_group("adversarial-reaping")
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(feedback_timeout=10)
SLEEP = "import time\ntime.sleep(60)\n"
FOLDER = re.compile(r"/tmp/dpct?-[A-Za-z0-9_]+")


def _cmd(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


class Watcher(sampling.ProcessSampler):
    """Records every kernel process (and sandbox launcher) below this process while grading runs; with
    ``kill=True`` it also does the bad thing once the worker runs the sleeping notebook: stops the trusted
    kernel and the launcher, then kills the worker."""

    def __init__(self, kill: bool, signum: int = signal.SIGKILL) -> None:
        super().__init__(0.05)
        self.kill = kill
        self.signum = signum
        self.stopped: list[str] = []
        self.killed_worker = False
        self.armed: float | None = None

    def folders(self) -> set[Path]:
        """The private ``/tmp`` folders of the kernels seen (in their command lines: the trusted kernel's
        connection file, the launcher's plan)."""
        return {Path(m) for cmd in self.commands.values() for m in FOLDER.findall(cmd)}

    def observe(self, pids: list[int]) -> None:
        if not self.kill or self.killed_worker:
            return
        pid = next((p for p in pids if "autograder.run.worker" in sampling.cmdline(p)), None)
        if pid is None:
            return
        try:
            worker = psutil.Process(pid)
            below = worker.children()
        except psutil.Error:
            return
        trusted = [p for p in below if "ipykernel" in _cmd(p)]
        launcher = [p for p in below if "autograder.isolation.sandbox" in _cmd(p)]
        if not (trusted and launcher):
            self.armed = None
            return
        self.armed = self.armed or time.monotonic()
        if time.monotonic() - self.armed < 3:  # the notebook's cells are running (exercise 2 sleeps a minute)
            return
        for p in (*trusted, *launcher):
            p.suspend()
            self.stopped.append(reaping.describe(p))
        worker.send_signal(self.signum)
        self.killed_worker = True


def _run(tmp: Path, toy: hostile.Toy, sandbox: str, kill: bool, signum: int = signal.SIGKILL) -> tuple[Any, Watcher]:
    subs = tmp / "subs"
    nb = cells.set_answer(toy.full, "ex2_answer", SLEEP, mode="prepend")
    hostile.write_notebook(subs / f"sleepy_{NAME}.ipynb", nb)
    with Watcher(kill, signum) as watcher:
        run = grade(subs, tmp / "out", solutions_dir=toy.solutions, workers=1, limits=LIMITS, progress=False,
                    sandbox_mode=sandbox)
    return run, watcher


def _assert_all_gone(watcher: Watcher) -> None:
    assert len(watcher.kernels) >= 3, watcher.kernels  # the trusted kernel, the launcher, the student's kernel
    deadline = time.monotonic() + 15
    left = [p for p in watcher.kernels.values() if reaping.alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p in left if reaping.alive(p)]
    assert not left, [reaping.describe(p) for p in left]
    folders = watcher.folders()  # the private folders of every kernel seen: none is left on disk
    assert {f.name.split("-")[0] for f in folders} == {"dpc", "dpct"}, watcher.commands
    assert not [f for f in folders if f.exists()], [(f, sorted(p.name for p in f.iterdir())) for f in folders
                                                     if f.exists()]


def _assert_graded_again(run: Any) -> None:
    (result,) = run.results
    assert {k: v[0] for k, v in result.exercises.items() if k != "q4_answer"} == hostile.ZERO
    assert any("crashed" in e.detail for e in result.events), result.events


@pytest.mark.timeout(900)
def test_worker_killed_from_outside_leaves_no_kernel(tmp_path: Path, toy: hostile.Toy, grading_sandbox: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="autograder")
    run, watcher = _run(tmp_path, toy, grading_sandbox, kill=True)
    assert watcher.killed_worker and len(watcher.stopped) == 2, watcher.stopped
    _assert_all_gone(watcher)
    _assert_graded_again(run)
    faults = [r.getMessage() for r in caplog.records if "grader fault" in r.getMessage()]
    assert any("autograder.isolation.sandbox launch" in m for m in faults), faults  # the orphaned launcher


@pytest.mark.timeout(900)
def test_worker_sent_sigterm_leaves_no_kernel(tmp_path: Path, toy: hostile.Toy, grading_sandbox: str) -> None:
    """SIGTERM ends the worker like an exception: it shuts its kernels down on the way out (stopped or not)."""
    run, watcher = _run(tmp_path, toy, grading_sandbox, kill=True, signum=signal.SIGTERM)
    assert watcher.killed_worker and len(watcher.stopped) == 2, watcher.stopped
    _assert_all_gone(watcher)
    _assert_graded_again(run)


@pytest.mark.timeout(900)
def test_worker_killed_on_its_deadline_leaves_no_kernel(tmp_path: Path, toy: hostile.Toy, grading_sandbox: str,
                                                        caplog: pytest.LogCaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    init = workers.WorkerPool.__init__

    def short_deadline(self: workers.WorkerPool, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        real = self.deadline
        self.deadline = lambda job: real(job) if job.fallback else 20.0  # the first attempt is "stuck" after 20 s

    monkeypatch.setattr(workers.WorkerPool, "__init__", short_deadline)
    caplog.set_level(logging.WARNING, logger="autograder")
    run, watcher = _run(tmp_path, toy, grading_sandbox, kill=False)
    _assert_all_gone(watcher)
    _assert_graded_again(run)
    messages = [r.getMessage() for r in caplog.records]
    assert any("is stuck; killing it" in m for m in messages), messages
    killed = next(m for m in messages if m.startswith("grade: killed with it:"))
    assert "ipykernel" in killed and "autograder.isolation.sandbox launch" in killed, killed
