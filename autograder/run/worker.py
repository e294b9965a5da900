"""A grading worker: ``python -m autograder.run.worker DIR`` grades jobs in its own course directory ``DIR``.

Started and stopped by :class:`autograder.run.workers.WorkerPool`.  ``DIR`` holds a copy of the course's sources,
release and gradebook, its ``nbgrader_config.py`` and the grading configuration
(:data:`autograder.course.settings.GRADING_CONFIG`).  The worker reads :class:`~autograder.run.jobs.Job` lines on stdin
and
answers each with a :class:`~autograder.run.jobs.Reply` line on its original stdout; everything else it prints
(nbgrader, the kernels' launchers) goes to stderr, the pool's ``worker.log``.  For each job it places the
submitted notebooks in ``submitted/``, runs nbgrader's ``autograde`` (whose execution step is
:class:`~autograder.execute.safe_execute.SafeExecute`), renders the feedback pages right away in the
worker's one :class:`~autograder.feedback.page_process.PageProcess` (a child that keeps nbgrader's feedback
converter, its exporter, templates and the fragments every page repeats for all the worker's submissions, under
a time limit per page), and sends the submission's gradebook rows and
the executor's events back.  A job that raises gets an error reply; the worker
goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from ..course.cells import grade_id, grade_ids
from ..execute.diagnostics import last_error
from ..feedback.feedback_render import FeedbackRenderer
from ..feedback.page_process import PageProcess
from .gradebook import export_submission
from .jobs import Job, Reply
from ..course.limits import Limits
from ..execute import trusted_tests
from ..course.settings import course_config

__all__ = ["grade_job", "serve", "main"]


def grade_job(api: Any, root: Path, job: Job, pages: PageProcess | None = None) -> Reply:
    """Autograde one submission and generate its feedback in the worker's course directory ``root``.

    ``pages`` renders the feedback (the worker's own child process, reused for every job); without one, a
    renderer and its process are made for this job alone.
    """
    student, assignment = job.student, job.assignment
    started = time.monotonic()
    for sub in ("submitted", "autograded", "feedback"):
        shutil.rmtree(root / sub / student / assignment, ignore_errors=True)
    shutil.rmtree(root / "events" / student / assignment, ignore_errors=True)
    dest = root / "submitted" / student / assignment
    dest.mkdir(parents=True)
    for f in job.files:
        target = dest / f"{f.notebook}.ipynb"
        if f.empty:  # unreadable submission: grade the untouched release notebook (zero)
            shutil.copyfile(root / "release" / assignment / f"{f.notebook}.ipynb", target)
        else:
            shutil.copyfile(f.path, target)
            _drop_stale_cells(target, root / "source" / assignment / f"{f.notebook}.ipynb")
    if job.timestamp:
        (dest / "timestamp.txt").write_text(job.timestamp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
        res = api.autograde(assignment, student, force=True, create=True)
    t_autograde = time.monotonic() - started
    fb: dict[str, Any] = {"success": False}
    if res.get("success") and job.feedback:
        limits = Limits.from_json(dict(api.config.SafeExecute.get("limits") or {}))
        seconds = limits.feedback_timeout * max(1, len(job.files))
        if pages is not None:
            fb = pages.render(assignment, student, seconds)
        else:
            alone = PageProcess(FeedbackRenderer(api.coursedir, api.config))
            try:
                fb = alone.render(assignment, student, seconds)
            finally:
                alone.close()
    t_feedback = time.monotonic() - started - t_autograde
    data = export_submission(api.coursedir.db_url, assignment, student) if res.get("success") else None
    events = {}
    for p in sorted((root / "events" / student / assignment).glob("*.json")):
        with contextlib.suppress(ValueError):
            events[p.stem] = json.loads(p.read_text())
    return Reply(student, assignment, bool(res.get("success")), data, last_error(res), bool(fb.get("success")),
                 last_error(fb), events, round(time.monotonic() - started, 3), round(t_autograde, 3),
                 feedback_seconds=round(t_feedback, 3))


def _drop_stale_cells(path: Path, source: Path) -> None:
    """Make plain cells of the submitted cells whose ``grade_id`` the source no longer has (a cell removed from
    the source after the student's copy was released).  nbgrader 0.9 would delete only their ``grade_id`` and
    then fail on the graded or solution cell without one (``KeyError: 'grade_id'`` in ``OverwriteCells``)."""
    if not source.is_file():
        return
    known = grade_ids(nbformat.read(source, as_version=4))
    try:
        nb = nbformat.read(path, as_version=4)
        stale = [c for c in nb.cells if grade_id(c) and grade_id(c) not in known]
        for cell in stale:
            del cell.metadata["nbgrader"]
        if stale:
            nbformat.write(nb, path)
    except Exception:  # a student's file, not quite a notebook: nbgrader judges it as it is
        return


_TERMINATED: list[int] = []


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM: end like an exception, so that the kernels are shut down on the way out (``finally``, atexit).
    nbgrader reports what interrupts a job as a failed job, so the loop checks :data:`_TERMINATED` too."""
    _TERMINATED.append(signum)
    raise SystemExit(128 + signum)


def serve(root: Path) -> int:
    """Serve jobs read as JSON lines on stdin; answer on the original stdout.

    However the worker ends -- its input ends, a job raises, SIGTERM -- its trusted kernel and the student's kernel
    of the notebook being graded are shut down on the way out; if it is killed (SIGKILL), they die with it
    (:mod:`autograder.isolation.reaping`) and the main process sweeps what is left."""
    signal.signal(signal.SIGTERM, _terminate)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the worker's log
    root = root.resolve()
    os.chdir(root)
    config = course_config(root)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    # exporter and template built now, before the page process forks: one child renders every page of the worker
    pages = PageProcess(FeedbackRenderer(api.coursedir, config))
    try:
        _serve_lines(api, root, out, pages)
    finally:
        pages.close()
        trusted_tests.shutdown()  # the trusted kernel of this worker (started by the first notebook)
    return 0


def _serve_lines(api: Any, root: Path, out: Any, pages: PageProcess) -> None:
    for line in sys.stdin:
        data = json.loads(line)
        try:
            reply = grade_job(api, root, Job.from_json(data), pages)
        except Exception as exc:  # a broken job must not take the worker down
            traceback.print_exc()
            reply = Reply(data.get("student"), data.get("assignment"), False,
                          error=f"{type(exc).__name__}: {exc}"[:400])
        if _TERMINATED:  # no reply: the job was cut short; the pool sees the worker end, and grades it again
            raise SystemExit(128 + _TERMINATED[0])
        out.write(json.dumps(reply.to_json()) + "\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.run.worker DIR`` (internal: started by ``dp-course grade``)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m autograder.run.worker DIR (internal; use `dp-course grade`)", file=sys.stderr)
        return 2
    return serve(Path(args[0]))


if __name__ == "__main__":
    raise SystemExit(main())
