"""Feedback for the students: nbgrader's page when it shows no hidden test, else a summary of the scores.

nbgrader's ``generate_feedback`` renders each graded notebook, with the hidden tests stripped by
:class:`~autograder.feedback.strip_hidden_tests.StripHiddenTests`.  Before a page is handed out,
:func:`publish_feedback` checks the page itself against the hidden test lines of the course
(:func:`hidden_test_lines`, read with the delimiters the course configures: :func:`test_delimiters`); a page
that still shows one -- or that nbgrader could not produce -- is replaced by a score-only summary
(:func:`fallback_feedback`, a Jinja2 template) and the submission is flagged.

The check tells a hidden test's text from the student's own: an instructor's solution line (``var_a = ...``) may
also occur in a hidden test, and a student who wrote the same line sees it in their own answer cell.  So every
occurrence of a hidden line on the page must be accounted for by the student's own cells (:func:`own_text`:
the cells nbgrader took from the submission, as handed in); one more occurrence -- in a test cell, an output,
anywhere else -- is a leak.  The count is made on the page's text, not on its markup, which a student's
Markdown answer can imitate.  Pages are published beside a local copy of MathJax
(:func:`autograder.course.offline_maths.install_mathjax`).
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests

from ..course.cells import grade_id, hidden_test_regions, is_instructor_cell
from ..intake.events import Event, EventKind
from ..course.offline_maths import install_mathjax
from .pending_hand_grading import PENDING_NOTE
from .strip_hidden_tests import MIN_CHARS, normalise
from ..course.settings import course_config
from ..course.templating import render

__all__ = ["test_delimiters", "hidden_test_lines", "own_text", "leaked_hidden_lines", "fallback_feedback",
           "publish_feedback"]

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


def own_text(graded: nbformat.NotebookNode, source: nbformat.NotebookNode) -> list[str]:
    """The student's own text in a graded notebook: the sources of the cells nbgrader took from the submission.

    nbgrader's autograde restores the source of the instructor's cells (locked cells: test cells, read-only
    text) from the gradebook and of nothing else, so every other cell -- answer cells, written answers, cells the
    student added -- shows on the page what the student handed in.  Left out: a cell locked in ``graded``, and a
    cell carrying the ``grade_id`` of a locked cell of the instructor's ``source`` notebook (whatever its
    metadata claims).
    """
    restored = {cells_grade_id for c in source.cells if is_instructor_cell(c) and (cells_grade_id := grade_id(c))}
    return [str(cell.source) for cell in graded.cells
            if not is_instructor_cell(cell) and grade_id(cell) not in restored]


def leaked_hidden_lines(html_text: str, hidden_lines: Iterable[str], own: Iterable[str] = ()) -> list[str]:
    """Hidden test lines (of at least 10 non-blank characters) that the rendered page shows beyond ``own``.

    Args:
        html_text: the page.
        hidden_lines: the hidden test lines of its notebook (:func:`hidden_test_lines`).
        own: the student's own text on the page (:func:`own_text`): a line that occurs there as often as on the
            whole page is the student's (or the instructor's solution, on the solution's page), not a leak.

    White space and markup are ignored (the page's text is compared with each line, both without blanks).
    """
    text = normalise(html.unescape(re.sub(r"<[^>]*>", "", html_text)))
    mine = [normalise(t) for t in own]
    leaked = []
    for line in hidden_lines:
        key = normalise(line)
        if len(key) >= MIN_CHARS and text.count(key) > sum(t.count(key) for t in mine):
            leaked.append(line)
    return leaked


def _own_text_of(course: Path, student: str, assignment: str, notebook: str) -> list[str]:
    """:func:`own_text` of a graded notebook of the course directory (none when a notebook is missing)."""
    graded = course / "autograded" / student / assignment / f"{notebook}.ipynb"
    source = course / "source" / assignment / f"{notebook}.ipynb"
    if not (graded.is_file() and source.is_file()):
        return []
    return own_text(nbformat.read(graded, as_version=4), nbformat.read(source, as_version=4))


def fallback_feedback(student: str, assignment: str, notebook: str, exercises: Exercises,
                      events: list[Event]) -> str:
    """A score-only feedback page, used when the notebook could not be rendered safely."""
    return render("fallback_feedback.html", student=student, assignment=assignment, notebook=notebook,
                  exercises=exercises, pending=[k for k, (got, _) in exercises.items() if got is None],
                  pending_note=PENDING_NOTE, score=sum(v[0] or 0.0 for v in exercises.values()),
                  max_score=sum(v[1] for v in exercises.values()),
                  notes=[e for e in events if e.kind not in (EventKind.SUSPICIOUS_CODE, EventKind.SANDBOX_OFF)])


def publish_feedback(course: Path, out: Path, student: str, assignment: str, notebooks: list[str], *,
                     rendered: bool, expected: bool, unreadable: set[str], hidden: dict[str, list[str]],
                     exercises: Exercises, events: list[Event], why_missing: str = "") -> list[str]:
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
        why_missing: why nbgrader produced no page (e.g. its render ran out of time), for that event.

    Returns:
        The pages' paths relative to ``out``.
    """
    dest_dir = out / "feedback" / student / assignment
    if notebooks:
        install_mathjax(out / "feedback")
    shutil.rmtree(dest_dir, ignore_errors=True)
    dest_dir.mkdir(parents=True, exist_ok=True)
    pages = []
    for nb in notebooks:
        page = course / "feedback" / student / assignment / f"{nb}.html"
        dest = dest_dir / f"{nb}.html"
        ok = page.is_file() and rendered and nb not in unreadable
        leaked: list[str] = []
        if ok:
            leaked = leaked_hidden_lines(page.read_text(errors="replace"), hidden.get(nb, []),
                                         _own_text_of(course, student, assignment, nb))
            ok = not leaked
        if ok:
            shutil.copyfile(page, dest)
        else:
            why = ("hidden test code was found in nbgrader's feedback" if leaked else
                   "no feedback notebook could be produced" + (f": {why_missing}" if why_missing else ""))
            if leaked or (expected and nb not in unreadable):
                events.append(Event(EventKind.FEEDBACK_FALLBACK, why, notebook=nb))
            dest.write_text(fallback_feedback(student, assignment, nb, exercises, events))
        pages.append(dest.relative_to(out).as_posix())
    return pages
