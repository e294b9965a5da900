"""``dp-course feedback OUTPUT``: the students' pages brought up to date with the gradebook, without re-running code.

After ``dp-course grade``, the instructor marks the written answers and comments in Formgrader; those marks live
in the gradebook (``OUTPUT/course/gradebook.db``), and the pages written by ``grade`` do not show them.
:func:`refresh_feedback` regenerates every page whose gradebook rows changed since it was written:

1. **What each page shows.** :func:`page_digest` hashes the gradebook rows a submission's pages show (every grade:
   automatic and manual score, extra credit, "needs manual grade", points; every comment; the late penalty) and
   its autograded notebooks.  ``OUTPUT/feedback/index.json`` keeps the digest each page was written with
   (:func:`record_pages`; ``dp-course grade`` records it too), so an unchanged page is not rewritten.
2. **nbgrader's own feedback step** on the notebooks already autograded in ``OUTPUT/course/autograded/`` (no
   notebook is executed; no kernel starts): nbgrader's ``GenerateFeedback`` converter, built once for all the
   submissions regenerated (:class:`autograder.feedback.feedback_render.FeedbackRenderer`), with the kit's steps
   (:data:`autograder.course.settings.FEEDBACK_STEPS`: hidden tests stripped, answers still to be marked by hand said
   so, MathJax from a local copy).
3. **Published as ``grade`` publishes**: :func:`autograder.feedback.feedback.publish_feedback` checks each page for
hidden
   test lines before it goes to ``OUTPUT/feedback/<student>/<assignment>/`` (else a score-only summary).
4. **The rest follows the gradebook**: each regenerated submission's recorded result (``state.json`` and the
   run's ``results.json``) gets its new pages and feedback events, then :func:`autograder.run.outputs.refresh` writes
   ``grades.csv``, the LMS exports, the report and the grade table from the gradebook (as ``dp-course report``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from ..intake.events import Event, EventKind
from ..feedback.feedback import hidden_test_lines, publish_feedback
from ..feedback.feedback_render import FeedbackRenderer
from .gradebook import db_url, read_scores
from ..course.offline_maths import feedback_exporter_config
from .outputs import load_run, refresh
from .results import SubmissionResult
from ..course.settings import FEEDBACK_STEPS, course_config
from .state import GradingState, OutputFolder, hold

__all__ = ["INDEX", "DIGEST_VERSION", "FeedbackRefresh", "page_digest", "record_pages", "refresh_feedback"]

log = logging.getLogger(__name__)

INDEX = "index.json"
"""The file, in the output folder's ``feedback/``, with the digest each submission's pages were written with."""

DIGEST_VERSION = 1
"""Part of every digest: raise it when the pages' content changes for the same gradebook (a new template)."""

_UNREADABLE = {EventKind.TOO_LARGE, EventKind.INVALID_JSON, EventKind.NOT_A_NOTEBOOK, EventKind.UNREADABLE_FILE,
               EventKind.SYMLINK}
"""Intake problems: the notebook was graded as the untouched release, and its page is the summary."""

_NOT_GRADED = {EventKind.NOT_GRADED, EventKind.NBGRADER_FAILED, EventKind.WORKER_CRASHED}
"""Without a notebook named: nbgrader could not grade the submission at all (every page is the summary)."""


@dataclasses.dataclass
class FeedbackRefresh:
    """What :func:`refresh_feedback` did."""

    output_dir: Path
    regenerated: list[str]          # "<student>/<assignment>" whose pages were written again
    unchanged: list[str]            # "<student>/<assignment>" whose pages were up to date
    summaries: list[str]            # pages (relative to output_dir) that are the score-only summary
    grades_csv: Path
    report_html: Path | None
    seconds: float
    table: str = ""                 # the grade table, from the gradebook (as the report shows it)
    lms_exports: list[Path] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        """The grade table and a few lines for the command line."""
        lines = [self.table, ""] if self.table else []
        lines += [f"feedback: {len(self.regenerated)} submission(s) regenerated, {len(self.unchanged)} unchanged "
                 f"({self.seconds:.1f} s); pages in {self.output_dir / 'feedback'}"]
        if self.summaries:
            lines.append(f"note: {len(self.summaries)} page(s) are a score-only summary (see the report): "
                         + ", ".join(self.summaries[:5]) + (" ..." if len(self.summaries) > 5 else ""))
        lines.append(f"grades:   {self.grades_csv}")
        lines += [f"LMS:      {path}" for path in self.lms_exports]
        lines.append(f"report:   {self.report_html}")
        return "\n".join(lines)


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def page_digest(gb: Gradebook, course: Path, student: str, assignment: str) -> str:
    """The hash of what the pages of one submission show: its gradebook rows and its autograded notebooks.

    Raises:
        nbgrader.api.MissingEntry: the gradebook has no such submission.
    """
    sub = gb.find_submission(assignment, student)
    shown: list[Any] = [DIGEST_VERSION]
    for nb in sorted(sub.notebooks, key=lambda n: n.name):
        shown.append([
            nb.name, nb.late_submission_penalty,
            sorted([g.name, g.auto_score, g.manual_score, g.extra_credit, bool(g.needs_manual_grade), g.max_score]
                   for g in nb.grades),
            sorted([c.name, c.auto_comment or "", c.manual_comment or ""] for c in nb.comments),
            _sha256(course / "autograded" / student / assignment / f"{nb.name}.ipynb"),
        ])
    return hashlib.sha256(json.dumps(shown, default=str).encode()).hexdigest()


def _load_index(feedback_dir: Path) -> dict[str, str]:
    path = feedback_dir / INDEX
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    pages = data.get("pages") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in pages.items()} if isinstance(pages, dict) else {}


def _save_index(feedback_dir: Path, index: dict[str, str]) -> None:
    feedback_dir.mkdir(parents=True, exist_ok=True)
    tmp = feedback_dir / (INDEX + ".tmp")
    tmp.write_text(json.dumps({"version": DIGEST_VERSION, "pages": dict(sorted(index.items()))}, indent=1))
    os.replace(tmp, feedback_dir / INDEX)


def record_pages(output_dir: Path, student: str, assignment: str) -> None:
    """Record that the pages of ``student``'s ``assignment`` show the gradebook as it is now.

    Called after the pages are published (by :func:`refresh_feedback`, and by ``dp-course grade`` for the pages
    it writes), so that the next ``dp-course feedback`` leaves them alone until a grade or comment changes.
    """
    folder = OutputFolder(output_dir)
    with Gradebook(db_url(folder.course / "gradebook.db")) as gb:
        digest = page_digest(gb, folder.course, student, assignment)
    index = _load_index(folder.feedback)
    index[f"{student}/{assignment}"] = digest
    _save_index(folder.feedback, index)


def _feedback_renderer(course: Path) -> FeedbackRenderer:
    """nbgrader's feedback converter on the course directory (one exporter for every submission regenerated), with
    the kit's feedback steps whatever its configuration file says (a course directory made by an older version of
    the kit has nbgrader's default steps, which leak)."""
    config = course_config(course)
    extra = Config()
    extra.GenerateFeedback.preprocessors = list(FEEDBACK_STEPS)
    for key, value in feedback_exporter_config().items():
        setattr(extra.HTMLExporter, key, value)
    config.merge(extra)
    return FeedbackRenderer(CourseDirectory(config=config), config)


def _submissions(course: Path) -> dict[str, tuple[str, str, list[str], str]]:
    """``{"<student>/<assignment>": (student, assignment, notebooks, digest)}`` of every autograded submission."""
    out = {}
    with Gradebook(db_url(course / "gradebook.db")) as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                student = sub.student.id
                if not (course / "autograded" / student / assignment.name).is_dir():
                    continue
                notebooks = sorted(nb.name for nb in sub.notebooks)
                out[f"{student}/{assignment.name}"] = (student, assignment.name, notebooks,
                                                       page_digest(gb, course, student, assignment.name))
    return out


def _unreadable(events: list[Event], notebooks: list[str]) -> set[str]:
    """The notebooks that were graded as the untouched release (their page stays the summary)."""
    if any(e.kind in _NOT_GRADED and not e.notebook for e in events):
        return set(notebooks)
    return {e.notebook for e in events if e.kind in _UNREADABLE | _NOT_GRADED and e.notebook}


def _entry(state: GradingState, key: str) -> tuple[str, SubmissionResult] | None:
    entry = state.data["submissions"].get(key)
    if not entry:
        return None
    return str(entry.get("hash", "")), SubmissionResult.from_json(entry["result"], False)


def refresh_feedback(output_dir: Path, *, everything: bool = False) -> FeedbackRefresh:
    """Regenerate the feedback pages of a grading output folder whose grades or comments changed.

    Args:
        output_dir: the output folder of ``dp-course grade`` (it holds ``course/gradebook.db``).
        everything: regenerate every page, changed or not (``dp-course feedback --all``).

    Returns:
        A :class:`FeedbackRefresh`.

    Raises:
        ValueError: ``output_dir`` holds no gradebook.
    """
    t0 = time.monotonic()
    folder = OutputFolder(output_dir)
    course = folder.course
    if not (course / "gradebook.db").is_file():
        raise ValueError(f"OUTPUT must be the output folder of dp-course grade (with course/gradebook.db inside), "
                         f"got {str(output_dir)!r}, which has no {course / 'gradebook.db'}")
    with hold(folder):  # one writer of state.json and the pages at a time (a grading run holds it too)
        state = GradingState.load(folder.state_file)
        run = load_run(folder.root)
        index = _load_index(folder.feedback)
        submissions = _submissions(course)
        todo = [key for key, (student, assignment, notebooks, digest) in submissions.items()
                if everything or index.get(key) != digest
                or not all((folder.feedback / key / f"{nb}.html").is_file() for nb in notebooks)]
        log.info("feedback: %d submission(s) to regenerate, %d unchanged", len(todo), len(submissions) - len(todo))
        renderer = _feedback_renderer(course)
        hidden = hidden_test_lines(course) if todo else {}
        recorded = {f"{r.student}/{r.assignment}": r for r in run.results}
        summaries: list[str] = []
        for key in todo:
            student, assignment, notebooks, digest = submissions[key]
            result = renderer.render(assignment, student)
            if not result.get("success"):
                log.warning("feedback: nbgrader could not render %s: %s", key, (result.get("error") or "")[-400:])
            known = _entry(state, key)
            before = known[1].events if known else recorded[key].events if key in recorded else []
            events = [e for e in before if e.kind is not EventKind.FEEDBACK_FALLBACK]
            exercises = read_scores(course / "gradebook.db", assignment, student)[2]
            pages = publish_feedback(course, folder.root, student, assignment, notebooks,
                                     rendered=bool(result.get("success")), expected=True,
                                     unreadable=_unreadable(events, notebooks), hidden=hidden.get(assignment, {}),
                                     exercises=exercises, events=events)
            summaries += [page for page, nb in zip(pages, notebooks, strict=True)
                          if any(e.kind is EventKind.FEEDBACK_FALLBACK and e.notebook == nb for e in events)]
            index[key] = digest
            _save_index(folder.feedback, index)
            if known:
                known[1].events, known[1].feedback = events, pages
                state.record(key, known[0], known[1])
            if key in recorded:
                recorded[key].events, recorded[key].feedback = list(events), pages
        run = refresh(folder.root, run)  # grades.csv, LMS exports, report, results.json, console: from the gradebook
        return FeedbackRefresh(folder.root, todo, sorted(set(submissions) - set(todo)), summaries, run.grades_csv,
                               run.report_html, time.monotonic() - t0, run.table(), list(run.lms_exports))
