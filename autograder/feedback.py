"""Feedback for the students: nbgrader's page when it shows no hidden test, else a summary of the scores.

nbgrader's ``generate_feedback`` renders each graded notebook, with the hidden tests stripped by
:class:`~autograder.preprocessors.strip_hidden_tests.StripHiddenTests`.  Before a page is handed out,
:func:`publish_feedback` checks the page itself against the hidden test lines of the course
(:func:`hidden_test_lines`, read with the delimiters the course configures: :func:`test_delimiters`); a page
that still shows one -- or that nbgrader could not produce -- is replaced by a score-only summary
(:func:`fallback_feedback`, a Jinja2 template) and the submission is flagged.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests

from .cells import hidden_test_regions
from .events import Event, EventKind
from .preprocessors.strip_hidden_tests import MIN_CHARS, normalise
from .settings import course_config
from .templating import render

__all__ = ["test_delimiters", "hidden_test_lines", "leaked_hidden_lines", "fallback_feedback", "publish_feedback"]

Exercises = dict[str, tuple[float | None, float]]


def test_delimiters(course: Path) -> tuple[str, str]:
    """nbgrader's ``(begin_test_delimeter, end_test_delimeter)`` as configured in ``course/nbgrader_config.py``."""
    configured = ClearHiddenTests(config=course_config(course))
    return configured.begin_test_delimeter, configured.end_test_delimeter


def hidden_test_lines(course: Path) -> dict[str, dict[str, list[str]]]:
    """``{assignment: {notebook: [hidden test lines]}}`` from the course's source notebooks.

    The regions are found with the course's configured delimiters (:func:`test_delimiters`).  Lines that also
    appear anywhere in the student (release) version are left out: they are not secret.
    """
    course = Path(course)
    begin, end = test_delimiters(course)
    out: dict[str, dict[str, list[str]]] = {}
    for src in sorted((course / "source").glob("*/*.ipynb")):
        assignment, nb_name = src.parent.name, src.stem
        nb = nbformat.read(src, as_version=4)
        lines: list[str] = []
        for cell in nb.cells:
            lines += hidden_test_regions(str(cell.source), begin, end)
        release = course / "release" / assignment / src.name
        visible: set[str] = set()
        if release.is_file():
            rel = nbformat.read(release, as_version=4)
            for cell in rel.cells:
                visible |= {normalise(x) for x in str(cell.source).splitlines()}
        out.setdefault(assignment, {})[nb_name] = [x for x in dict.fromkeys(lines) if normalise(x) not in visible]
    return out


def leaked_hidden_lines(html_text: str, hidden_lines: Iterable[str]) -> list[str]:
    """Hidden test lines (of at least 10 non-blank characters) that occur in the rendered page's text."""
    text = normalise(html.unescape(re.sub(r"<[^>]*>", "", html_text)))
    return [line for line in hidden_lines if len(normalise(line)) >= MIN_CHARS and normalise(line) in text]


def fallback_feedback(student: str, assignment: str, notebook: str, exercises: Exercises,
                      events: list[Event]) -> str:
    """A score-only feedback page, used when the notebook could not be rendered safely."""
    return render("fallback_feedback.html", student=student, assignment=assignment, notebook=notebook,
                  exercises=exercises, score=sum(v[0] or 0.0 for v in exercises.values()),
                  max_score=sum(v[1] for v in exercises.values()),
                  notes=[e for e in events if e.kind not in (EventKind.SUSPICIOUS_CODE, EventKind.SANDBOX_OFF)])


def publish_feedback(course: Path, out: Path, student: str, assignment: str, notebooks: list[str], *,
                     rendered: bool, expected: bool, unreadable: set[str], hidden: dict[str, list[str]],
                     exercises: Exercises, events: list[Event]) -> list[str]:
    """Write the feedback pages of one submission to ``out/feedback/<student>/<assignment>/``.

    Args:
        course: the main course directory (nbgrader's pages are in ``feedback/<student>/<assignment>/``).
        out: the grading run's output folder.
        notebooks: the notebooks to write a page for (none: no feedback).
        rendered: nbgrader generated the feedback of the submission.
        expected: a page was to be expected (the submission was graded as handed in); a missing one is flagged.
        unreadable: notebooks that could not be graded as handed in (their page is the summary).
        hidden: ``{notebook: hidden test lines}`` of the assignment (:func:`hidden_test_lines`).
        exercises: the scores, for the summary.
        events: the submission's events; a ``FEEDBACK_FALLBACK`` event is appended for each page replaced.

    Returns:
        The pages' paths relative to ``out``.
    """
    dest_dir = out / "feedback" / student / assignment
    shutil.rmtree(dest_dir, ignore_errors=True)
    dest_dir.mkdir(parents=True, exist_ok=True)
    pages = []
    for nb in notebooks:
        page = course / "feedback" / student / assignment / f"{nb}.html"
        dest = dest_dir / f"{nb}.html"
        ok = page.is_file() and rendered and nb not in unreadable
        leaked: list[str] = []
        if ok:
            leaked = leaked_hidden_lines(page.read_text(errors="replace"), hidden.get(nb, []))
            ok = not leaked
        if ok:
            shutil.copyfile(page, dest)
        else:
            why = ("hidden test code was found in nbgrader's feedback" if leaked else
                   "no feedback notebook could be produced")
            if leaked or (expected and nb not in unreadable):
                events.append(Event(EventKind.FEEDBACK_FALLBACK, why, notebook=nb))
            dest.write_text(fallback_feedback(student, assignment, nb, exercises, events))
        pages.append(dest.relative_to(out).as_posix())
    return pages
