"""Grade a class: the orchestration of a grading run, where a reader starts.

``dp-course grade SUBMISSIONS`` calls :func:`grade`.  A run, step by step, and the file that does each step:

1. **Settings** (:mod:`autograder.course.settings`): the limits (:mod:`autograder.course.limits`), the sandbox found on
this
   machine (:mod:`autograder.isolation.isolation`), the guard and the feedback switch make one
   :class:`~autograder.course.settings.GradingSettings`.
2. **Course**: the output folder (:mod:`autograder.run.state`, held by one run at a time) holds an nbgrader course
   directory built from the instructor's sources (:mod:`autograder.course.course`) and the incremental state.  It is
   never rebuilt: a changed assignment is migrated in place, keeping every grade, hand mark and comment, and a
   step that would discard instructor data refuses unless allowed (:mod:`autograder.run.migration`).
3. **Intake** (:mod:`autograder.intake.intake`, :mod:`autograder.intake.review`): the submissions folder or zip is
matched
   against the assignments' notebooks, whatever the layout; broken files are flagged and graded as the untouched
   release (zero).  Unchanged submissions keep their grade; the submissions of a changed assignment are graded
   again (those not in the input from their kept copies in ``course/submitted``).
4. **Workers** (:mod:`autograder.run.workers`, :mod:`autograder.run.worker`, :mod:`autograder.run.jobs`): one process
per
   core, each with its own copy of the course directory and gradebook, runs nbgrader's ``autograde`` on one
   submission at a time and renders its feedback pages right away (:mod:`autograder.feedback.feedback_render`:
   nbgrader's
   feedback exporter built once per worker).
5. **Execution** (:mod:`autograder.execute.safe_execute`): inside ``autograde``, each notebook runs in a
   fresh kernel started through the sandbox launcher (:mod:`autograder.isolation.kernels`,
   :mod:`autograder.isolation.sandbox`),
   with time and output limits and the test guard (:mod:`autograder.guard.kernel_guard`).
6. **Gradebook** (:mod:`autograder.run.gradebook`): the main process alone merges each worker's rows into the main
   gradebook, one transaction per submission, so there is never a second writer nor a half-merged submission.
   Hand marks stay; one whose answer changed is flagged for review.
7. **Feedback** (:mod:`autograder.feedback.feedback`): nbgrader's page per notebook, hidden tests stripped
   (:mod:`autograder.feedback.strip_hidden_tests`) and checked; else a score-only summary.
8. **Outputs** (:mod:`autograder.run.outputs`): ``grades.csv``, the LMS exports, the report and the console table,
   all read from the main gradebook (:func:`autograder.run.outputs.refresh`), with the run's results
   (:mod:`autograder.run.results`) for what happened to each submission.

Progress goes to a tqdm bar; status lines go to the ``autograder`` logger (the command line prints them).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from ..isolation import disk_watch, isolation, memory_watch, protect
from ..course.course import SOLUTIONS_DIR
from ..execute.diagnostics import clean_kernel_log
from ..intake.events import Event, EventKind
from ..feedback.feedback import hidden_test_lines, publish_feedback
from ..intake.deadlines import due_dates, store_due_dates
from .feedback_refresh import record_pages
from .gradebook import merge_submission, read_scores, zero_submission
from ..intake.intake import SubmissionFile, collect_submissions, notebook_names, preview_submissions
from .executor import check_scheduler_address, open_executor
from .jobs import Job, Reply
from ..isolation.kernels import prepare_mpl_cache
from ..course.limits import Limits
from .migration import keep_submission, kept_submissions, marks_to_flag, prepare_course, review_events
from .outputs import refresh
from .results import GradeRun, SubmissionResult
from ..course.settings import GradingSettings, course_config, grading_config
from .standings import record_students
from .state import GradingState, OutputFolder, hold, job_hash

__all__ = ["grade"]

log = logging.getLogger(__name__)


@dataclass
class _Run:
    """What the steps of one grading run share."""

    settings: GradingSettings
    folder: OutputFolder
    notebooks: dict[str, list[str]]      # {assignment: notebook names}
    state: GradingState
    sealed: bool                         # the course directory is sealed while kernels run (no sandbox)
    keep_fds: tuple[int, ...] = ()       # inherited by the workers: the output folder's lock
    files: dict[tuple[str, str], list[SubmissionFile]] = field(default_factory=dict)
    hidden: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    worker_seconds: dict[str, float] = field(default_factory=lambda: {"autograde": 0.0, "feedback": 0.0})
    workers: int | None = None           # how many workers took jobs (a Dask cluster's that accept them)


def grade(submissions: Path, output_dir: Path, *, solutions_dir: Path = SOLUTIONS_DIR,
          assignments: Sequence[str] | None = None, workers: int | None = None, limits: Limits = Limits(),
          sandbox_mode: str = "bwrap", force: bool = False, progress: bool = True,
          student_pattern: str | None = None, guard: bool = True, feedback: bool = True,
          trusted: bool = True, allow_discard: bool = False,
          due: Mapping[str, dt.datetime] | None = None, scheduler: str | None = None) -> GradeRun:
    """Grade every submission under ``submissions``; write grades, feedback and the report to ``output_dir``.

    Args:
        submissions: folder or zip of submissions (see :func:`autograder.intake.intake.collect_submissions`).
        output_dir: where everything goes; it also holds the state that makes re-runs incremental.
        solutions_dir: the instructor's source notebooks (``solutions/<assignment>/<assignment>.ipynb``).
        assignments: which assignments to grade (default: all in ``solutions_dir``).
        workers: parallel worker processes (default: number of CPU cores).
        limits: time, memory, process, file-size, output and notebook-size limits.
        sandbox_mode: ``"bwrap"`` (default: refuse unless the sandbox works here), ``"none"`` (the explicit
            opt-in of ``--no-sandbox``: kernels run on the host, the course directory kept from them by
            permissions, see :mod:`autograder.isolation.protect`) or ``"auto"`` (the sandbox if it works, else as
            ``"none"``; for the demo's own sample class).  See :func:`autograder.isolation.isolation.probe`.
        force: re-grade every submission, even unchanged ones.
        progress: show a progress bar with an ETA on stderr.
        student_pattern: regular expression with a group ``(?P<student>...)`` for unusual file names.
        guard: defend tests against monkeypatching (leave on; off only for benchmarking nbgrader itself).
        feedback: write the per-student HTML feedback (the slowest step after running the notebooks).
        trusted: run test cells in a trusted kernel per worker, which decides the verdicts (default); False
            (``--single-kernel``) runs every cell in the student's kernel, as nbgrader does.
        allow_discard: let the course update discard instructor data it would otherwise refuse to (a removed
            lecture's grades, hand marks on a removed cell, an unreadable state or gradebook; ``--allow-discard``,
            see :mod:`autograder.run.migration`); a backup of the gradebook is written first.
        due: ``{assignment: due date, naive UTC}`` (``--due``, :func:`autograder.intake.deadlines.parse_due`), stored in
            the gradebook (due dates stored earlier stay); late submissions are flagged.
        scheduler: grade on the Dask cluster whose scheduler is at this address (``--scheduler
            tcp://HOST:PORT``, :mod:`autograder.run.dask_executor`) instead of local worker processes; ``workers``
            is then unused.  The submissions and ``output_dir`` must be on a file system the cluster's workers see
            at the same paths.

    Returns:
        A :class:`~autograder.run.results.GradeRun`.

    Raises:
        ValueError: bad ``submissions`` (missing, or nothing in it matches a lecture), ``student_pattern``,
            ``assignments``, ``due``, ``workers`` or ``scheduler`` -- all found before any set-up work.
        RuntimeError: the submissions cannot be protected as ``sandbox_mode`` asks (no sandbox here; or, as
            root without one, no dedicated uid can run the kernels); the message says why and what to do.
        autograder.run.migration.DiscardRefused: (a ``RuntimeError``) updating the course would discard instructor
            data; nothing was graded or changed, the message names what and the option that allows it.
    """
    t0 = time.monotonic()
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    check_scheduler_address(scheduler)
    if sandbox_mode not in isolation.SANDBOX_MODES:
        raise ValueError(f"sandbox_mode must be one of {isolation.SANDBOX_MODES}, got {sandbox_mode!r}")
    nbs = notebook_names(solutions_dir, assignments)
    if not nbs:
        raise ValueError(f"solutions_dir must contain at least one assignment, got {str(solutions_dir)!r}")
    for name in due or {}:
        if name not in nbs:
            raise ValueError(f"due (--due) must name a lecture being graded, one of {sorted(nbs)}, got {name!r}")
    preview_submissions(Path(submissions), nbs, student_pattern)  # bad input fails here, before any set-up
    info = isolation.probe(sandbox_mode)
    refusal = isolation.grading_refusal(info, sandbox_mode)
    if refusal:
        raise RuntimeError(refusal)
    warning = info.warning()
    if warning:
        log.warning(warning)
    folder = OutputFolder(output_dir)
    with hold(folder) as lock_fd:  # one run at a time per output folder; its workers inherit the lock
        return _grade_held(submissions, folder, Path(solutions_dir), nbs, GradingSettings(
            limits, info.mode, guard, feedback, trusted), info, warning, workers, force, progress, student_pattern,
            allow_discard, due or {}, (lock_fd,), t0, scheduler)


def _grade_held(submissions: Path, folder: OutputFolder, solutions_dir: Path, nbs: dict[str, list[str]],
                settings: GradingSettings, info: isolation.SandboxInfo, warning: str | None, workers: int | None,
                force: bool, progress: bool, student_pattern: str | None, allow_discard: bool,
                due: Mapping[str, dt.datetime], keep_fds: tuple[int, ...], t0: float,
                scheduler: str | None = None) -> GradeRun:
    """:func:`grade` once it holds the output folder."""
    timings: dict[str, float] = {}
    limits, feedback = settings.limits, settings.feedback
    run = _Run(settings, folder, nbs, prepare_course(folder, solutions_dir, nbs, allow_discard=allow_discard),
               sealed=not info.isolated, keep_fds=keep_fds)
    course = folder.course
    store_due_dates(course / "gradebook.db", due)
    with tempfile.TemporaryDirectory(prefix="dpc-intake-") as tmp:  # a zip's files live here while jobs run
        releases = {(a, nb): nbformat.read(course / "release" / a / f"{nb}.ipynb", as_version=4)
                    for a in nbs for nb in nbs[a] if (course / "release" / a / f"{nb}.ipynb").is_file()}
        timings["setup"] = time.monotonic() - t0
        intake = collect_submissions(Path(submissions), nbs, limits=limits, extract_dir=Path(tmp),
                                     student_pattern=student_pattern, releases=releases,
                                     due=due_dates(course / "gradebook.db"))
        run.files = intake.jobs()
        kept = kept_submissions(folder, run.state, nbs, run.files)  # of a changed assignment, not in the input
        run.files.update(kept)
        fingerprint = run.settings.fingerprint()
        todo = []
        for (student, assignment), files in run.files.items():
            h = job_hash(files, fingerprint)
            if force or (student, assignment) in kept or not run.state.unchanged(
                    f"{student}/{assignment}", h, run.state.fingerprint(assignment) or ""):
                todo.append(Job.of(files, h, feedback=feedback))
        n_workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
        log.info("grade: %d submissions found (%s); %d to grade, %d unchanged; %d worker(s); sandbox: %s",
                 len(run.files), intake.layout, len(todo), len(run.files) - len(todo), n_workers,
                 f"bubblewrap ({info.bwrap_origin})" if info.isolated else "NONE")
        timings["intake"] = time.monotonic() - t0 - timings["setup"]
        if run.sealed:
            protect.seal(course)
        try:
            regraded = _grade_jobs(run, todo, n_workers, progress, scheduler)
        finally:
            for sealed in (course, *folder.work.glob("w*")):  # workers copied their sources from it
                protect.unseal(sealed)
    timings["grading"] = time.monotonic() - t0 - timings["setup"] - timings["intake"]
    timings["worker_autograde"], timings["worker_feedback"] = run.worker_seconds["autograde"], \
        run.worker_seconds["feedback"]  # summed over the jobs: what the pages cost next to the grading
    t1 = time.monotonic()
    record_students(course / "gradebook.db", intake.files)  # LMS ids and names, kept by nbgrader
    result = GradeRun(output_dir=folder.root, results=run.state.results(regraded), unmatched=intake.unmatched,
                      duplicates=intake.duplicates, layout=intake.layout, sandbox=info.describe(),
                      sandbox_warning=warning, workers=run.workers or n_workers, graded_now=len(regraded),
                      skipped=len(run.files) - len(todo), seconds=time.monotonic() - t0,
                      notebooks_graded=sum(len(nbs[job.assignment]) for job in todo), grades_csv=folder.grades_csv,
                      timings=timings)
    refresh(folder.root, result)  # grades.csv, LMS exports, report, console table: all from the gradebook
    timings["outputs"] = time.monotonic() - t1
    result.seconds = time.monotonic() - t0
    return result


def _grade_jobs(run: _Run, todo: list[Job], n_workers: int, progress: bool,
                scheduler: str | None = None) -> set[str]:
    """Send the jobs to the executor (local workers, or the Dask cluster at ``scheduler``); merge each result as
    it arrives.  Returns the keys graded."""
    done: set[str] = set()
    if not todo:
        return done
    folder, limits = run.folder, run.settings.limits
    config = grading_config(run.settings, course_config(folder.course), events_dir=folder.work / "events",
                            mpl_cache=prepare_mpl_cache(folder.mpl_cache))
    run.hidden = hidden_test_lines(folder.course)

    def deadline(job: Job) -> float:
        # a worker that exceeds every limit it enforces itself (notebook limit + kernel start-up, per notebook)
        # is stuck: the pool kills it, and the job counts as crashed
        return len(job.files) * (limits.notebook_timeout + 180) + 120

    total = sum(len(run.notebooks[job.assignment]) for job in todo)
    with open_executor(scheduler, n_workers, folder.work, folder.course, config, deadline, run.keep_fds,
                       sandbox_mode=run.settings.sandbox) as pool, \
            tqdm(total=total, unit="notebook", disable=not progress, file=sys.stderr) as bar, \
            logging_redirect_tqdm(loggers=[logging.getLogger("autograder")]):
        run.workers = len(pool.workers)
        for job in todo:
            pool.submit(job)
        for worker, job, reply in pool.replies():
            if not reply.success and not job.fallback:
                # nbgrader could not grade it: grade the release notebooks instead (zero) and say why
                pool.assign(worker, job.as_fallback(reply.error or "unknown error", reply.crashed))
                continue
            pool.assign(worker)  # its next job first: merging reads only the reply and files of this one
            with protect.unsealed(folder.course, enabled=run.sealed):
                _finish(run, job, reply, worker.wdir)
            done.add(job.label)
            run.worker_seconds["autograde"] += reply.autograde_seconds
            run.worker_seconds["feedback"] += reply.feedback_seconds
            bar.set_postfix_str(f"{job.label} ({reply.seconds:.1f} s)", refresh=False)
            bar.update(len(run.notebooks[job.assignment]))
    return done


def _submission_events(run: _Run, job: Job, reply: Reply) -> list[Event]:
    """What happened to a submission: intake problems, missing notebooks, the worker's and kernels' events."""
    events: list[Event] = []
    files = run.files[job.key]
    for f in files:
        if f.problem:
            events.append(Event(f.problem_kind or EventKind.NOT_GRADED, f"{f.origin}: {f.problem}; graded as the "
                                "untouched notebook (zero)", notebook=f.notebook))
        if f.review:
            events.append(Event(EventKind.SUSPICIOUS_CODE, f"{f.origin}: " + " | ".join(f.review[:8]),
                                notebook=f.notebook))
        if f.changes:
            events.append(Event(EventKind.TEST_CELLS_CHANGED, "; ".join(f.changes), notebook=f.notebook))
        events.extend(Event(kind, f"{f.origin}: {text}", notebook=f.notebook) for kind, text in f.flags)
    submitted = {f.notebook for f in files}
    for nb in run.notebooks[job.assignment]:
        if nb not in submitted:
            events.append(Event(EventKind.MISSING_NOTEBOOK, f"{nb}.ipynb was not submitted (zero)", notebook=nb))
    if job.fallback:
        kind = EventKind.WORKER_CRASHED if job.crashed else EventKind.NBGRADER_FAILED
        events.append(Event(kind, f"{job.reason}; graded as the untouched notebooks (zero)"))
        return events
    for nb_name, executed in sorted(reply.events.items()):
        events.extend(Event.from_json(e) for e in executed.get("events", []))
        last_words = clean_kernel_log(executed.get("kernel_log") or "")
        if memory_watch.MARKER in last_words:
            events.append(Event(EventKind.MEMORY_LIMIT, last_words[last_words.index(memory_watch.MARKER):][:600],
                                notebook=nb_name))
        elif disk_watch.MARKER in last_words:
            events.append(Event(EventKind.DISK_LIMIT, last_words[last_words.index(disk_watch.MARKER):][:600],
                                notebook=nb_name))
        elif last_words:
            events.append(Event(EventKind.KERNEL_DIED, "the kernel's last words: " + last_words[-600:],
                                notebook=nb_name))
    return events


def _finish(run: _Run, job: Job, reply: Reply, worker_dir: Path) -> None:
    """Merge one finished job into the main gradebook and course directory, write its feedback, record it."""
    student, assignment = job.key
    course = run.folder.course
    events = _submission_events(run, job, reply)
    main_db = course / "gradebook.db"
    if reply.success and reply.data:  # a hand mark whose answer changed since the last submission: flagged
        merge_submission(main_db, assignment, student, reply.data, marks_to_flag(course, run.files[job.key]))
    else:
        events.append(Event(EventKind.NOT_GRADED, f"nbgrader failed twice ({reply.error}); all grades set to zero"))
        zero_submission(main_db, assignment, student)
    keep_submission(course, run.files[job.key], job.timestamp)
    for sub in ("autograded", "feedback"):
        dst = course / sub / student / assignment
        shutil.rmtree(dst, ignore_errors=True)
        src = worker_dir / sub / student / assignment
        if src.is_dir():
            shutil.copytree(src, dst)
    score, max_score, exercises, manual = read_scores(main_db, assignment, student)
    files = run.files[job.key]
    pages = publish_feedback(course, run.folder.root, student, assignment,
                             run.notebooks[assignment] if job.feedback else [],
                             rendered=reply.feedback and not job.fallback, expected=reply.success and not job.fallback,
                             unreadable={f.notebook for f in files if f.problem},
                             hidden=run.hidden.get(assignment, {}), exercises=exercises, events=events,
                             why_missing=reply.feedback_error)
    if pages:  # the pages show the gradebook as it is now: `dp-course feedback` leaves them until it changes
        record_pages(run.folder.root, student, assignment)
    events += review_events(main_db, assignment, student)  # for the instructor (after the student's page)
    result = SubmissionResult(student, assignment, [f.origin for f in files], score, max_score, exercises, events,
                              reply.seconds, pages, manual)
    # the machine's fault (or a worker killed from outside, e.g. by the OOM killer): grade it again next run
    retry = any(e.kind in (EventKind.KERNEL_START_FAILED, EventKind.WORKER_CRASHED) for e in events)
    run.state.record(job.label, "" if retry else job.hash, result, run.state.fingerprint(assignment) or "")
