"""Hand grading in a real browser: ``dp-course formgrade OUTPUT`` and nbgrader's Formgrader, driven by Debian's
chromium.

The toy assignment (its written answer ``q4_answer`` given a mark scheme) is graded for two students with
nbgrader into a temporary OUTPUT/course; ``dp-course formgrade OUTPUT --headless`` is started without the
environment's ``bin/`` on PATH (as from a desktop launcher).  In the browser: the Formgrader lists the run's two
submissions; a student's grading page shows the mark scheme below the written answer; a score and a comment
typed into the page land in ``OUTPUT/course/gradebook.db``; the maths of the mark scheme is typeset by MathJax
served from the session itself.  Nothing leaves the loopback (a route handler aborts and records any request
that would).

Screenshots go to ``artifacts/browser/``.  Without chromium the module skips with the reason (a failure with
``DP_COURSE_CI=1``).
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from _browser_lab import (ARTIFACTS, CHROMIUM, CHROMIUM_NEEDED, PLAYWRIGHT_NEEDED, Console, formgrader_students,
                          launch, mark, open_formgrader, open_submission, require)
from _lab_server import FormgradeServer
from autograder.course import cells
from autograder import demo
from autograder.course.course import autograde, make_course, submit

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-formgrade")]

NAME = demo.SYNTHETIC_NAME
SCHEME_TOKEN = "MARK-SCHEME-TOKEN"
MODEL_TOKEN = "MODEL-ANSWER-TOKEN"
STUDENT_ANSWER = "STUDENT-ANSWER: the noise scale is sensitivity / epsilon, so it shrinks as epsilon grows."
MATHJAX_BLANK_FONT = "Failed to load resource: net::ERR_FAILED"
COMMENT = "Right idea; say why the output laws may differ more (hand-marked in the browser test)."
Q4_SOURCE = (f"### BEGIN SOLUTION\n{MODEL_TOKEN}: a larger $\\varepsilon$ lets the output distributions on "
             "neighbouring datasets differ more, so less noise is needed.\n\n**Mark scheme (2 points).**\n"
             f"* 1 point – {SCHEME_TOKEN}: the ratio of the output laws is bounded by $e^\\varepsilon$.\n"
             "* 1 point – less noise follows from the larger bound.\n### END SOLUTION")




def toy_with_mark_scheme(solutions: Path) -> Path:
    """The toy assignment whose written answer ``q4_answer`` holds a model answer and a mark scheme, as the
    course's sources write them; returns the source notebook's path."""
    path = demo.write_synthetic_assignment(solutions)
    nb = nbformat.read(path, as_version=4)
    nbformat.write(cells.set_answer(nb, "q4_answer", Q4_SOURCE), path)
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A graded run's OUTPUT folder, its course built with nbgrader directly (faster than ``dp-course grade``,
    same layout: ``OUTPUT/course`` with the gradebook, sources and autograded notebooks): the toy assignment
    for alice (full solution and a written answer) and bob (untouched)."""
    require(CHROMIUM_NEEDED, CHROMIUM.exists())
    work = tmp_path_factory.mktemp("formgrade")
    source = toy_with_mark_scheme(work / "solutions")
    output = work / "grading"
    course = make_course(output / "course", [NAME], solutions_dir=work / "solutions")
    release = cells.student_version(course, NAME)
    full = cells.set_answer(cells.full_solution(release, nbformat.read(source, as_version=4)), "q4_answer",
                            STUDENT_ANSWER)
    submit(course, NAME, "alice", {NAME: full})
    submit(course, NAME, "bob", {NAME: release})
    autograde(course, NAME)
    return work, output


def test_formgrader_shows_the_mark_scheme_and_saves_marks(graded):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(PLAYWRIGHT_NEEDED, False)
    work, output = graded
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = FormgradeServer(root_dir=output / "course", work=work)
    started = time.monotonic()
    server.start_formgrade(output)
    try:
        with sync_playwright() as pw:
            context = launch(pw, work / "profile")
            console = Console()
            console.attach(context, server.base)
            page = context.new_page()
            console.watch(page)
            page.set_default_timeout(30_000)
            open_formgrader(page, server)
            assert formgrader_students(page, server, NAME, NAME) == ["alice", "bob"]
            page.screenshot(path=ARTIFACTS / "formgrade-submissions.png")
            open_submission(page, "alice")
            scheme = page.locator(".dpc-mark-scheme[data-grade-id='q4_answer']")
            scheme.wait_for()
            assert scheme.is_visible()
            assert SCHEME_TOKEN in scheme.locator(".dpc-scheme").inner_text()
            # its maths typeset by the session's own MathJax (nbgrader's page would fetch it from a CDN)
            scheme.locator(".dpc-scheme span.MathJax").first.wait_for()
            # the model answer is one click away, the student's answer is on the page
            assert page.locator(".dpc-model-answer summary").first.inner_text().strip() == "Model answer"
            assert STUDENT_ANSWER.split(":")[0] in page.locator(".nbgrader_cell").filter(
                has=page.locator("#q4_answer")).inner_text()
            # the mark scheme comes right after the answer it is for
            answer_box = page.locator(".nbgrader_cell", has=page.locator("#q4_answer")).bounding_box()
            scheme_box = scheme.bounding_box()
            assert answer_box and scheme_box and scheme_box["y"] >= answer_box["y"] + answer_box["height"] - 1
            mark(page, "q4_answer", 1.5, COMMENT)
            grade_row = _wait_for_hand_mark(output / "course" / "gradebook.db", "alice")
            page.screenshot(path=ARTIFACTS / "formgrade-marked.png", full_page=True)
            context.close()
    finally:
        server.stop()
    assert grade_row == (1.5, COMMENT), grade_row
    errors, external = console.take()
    assert not external, f"requests beyond the loopback (aborted): {external[:5]}"
    # MathJax 2 measures fonts with a blank one at about:blank, which chromium refuses (one error and its failed
    # load); any other failed load would be a 404 (another message) or a request beyond the loopback (above)
    errors = [e for e in errors if "Access to font at 'about:blank'" not in e and e != MATHJAX_BLANK_FONT]
    assert not errors, f"browser console errors: {errors[:5]}"
    assert time.monotonic() - started < 90, "starting the Formgrader and marking one answer took over 90 s"


def _wait_for_hand_mark(db: Path, student: str, timeout: float = 30) -> tuple[float | None, str | None]:
    """The manual score and comment of ``student``'s ``q4_answer`` once both are saved (or what is there after
    ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        with Gradebook(f"sqlite:///{db}") as gb:
            score = gb.find_grade("q4_answer", NAME, NAME, student).manual_score
            comment = gb.find_comment("q4_answer", NAME, NAME, student).manual_comment
        if (score is not None and comment) or time.monotonic() > deadline:
            return (None if score is None else float(score)), comment
        time.sleep(0.5)
