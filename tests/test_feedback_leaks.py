"""The feedback leak detector tells a hidden test's text from the student's own answer cells (issue 26).

An instructor's solution line (``var_a = ...``) may also occur in a hidden test; a student who wrote the same line
sees it in their own answer cell, which is not a leak.  :func:`autograder.feedback.feedback.leaked_hidden_lines` with
the
student's own text (:func:`autograder.feedback.feedback.own_text`) flags a hidden line only when the page shows it more
often than the student's own cells do.

* Fixture pages (no kernel): the student's own line is not flagged; the same line also in an output, a test
  cell or anywhere else is; a test cell dressed up as an answer does not count as the student's.
* Every lecture's solution and answer variants (``tests/answer_variants/``): the instructor's own solution
  notebook, and each variant submission, as nbgrader's autograde leaves them (test cells restored with their
  hidden tests), rendered by nbgrader's ``generate_feedback`` with the course's configuration -- without
  executing them (the false flags come from the sources; outputs are covered by the grading and adversarial
  tests): zero leak flags, where the page-wide check of before flagged lecture 05's solution lines.
* Lecture 05's page in Chromium without network: its maths is typeset by the local MathJax copy, without error.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from playwright.sync_api import sync_playwright
from sqlalchemy.exc import SAWarning

import _notebooks as nbs
from autograder.course import cells, course
from autograder.feedback import feedback
from autograder.course.settings import course_config

pytestmark = pytest.mark.xdist_group("nbgrader-leaks")

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium, as the browser test uses it (``tests/browser/``)."""

SECRET = 'expected = gaussian_rdp(alpha=2.0, sigma=1.5)  # HIDDEN-TOKEN'
"""A solution line that a hidden test repeats (the pattern behind lecture 05's false flags)."""


def _cell(source: str, grade_id: str, *, solution: bool, grade: bool, locked: bool) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
                                 "points": 1 if grade else 0, "schema_version": 3}
    return cell


def _source() -> NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        _cell(f"### BEGIN SOLUTION\n{SECRET}\n### END SOLUTION", "ex_answer", solution=True, grade=False,
              locked=False),
        _cell(f"assert True\n### BEGIN HIDDEN TESTS\n{SECRET}\n### END HIDDEN TESTS", "ex_tests", solution=False,
              grade=True, locked=True),
    ])


def _graded(answer: str, tests: str = "assert True") -> NotebookNode:
    nb = _source()
    nb.cells[0].source, nb.cells[1].source = answer, tests
    return nb


def _page(*texts: str) -> str:
    return "<html><body>" + "".join(f"<div class='cell'><pre>{t}</pre></div>" for t in texts) + "</body></html>"


def test_the_students_own_line_is_not_a_leak() -> None:
    own = feedback.own_text(_graded(SECRET), _source())
    assert own == [SECRET]
    page = _page(SECRET.replace(" ", " <span></span>"), "assert True\n# (hidden tests are not shown)")
    assert feedback.leaked_hidden_lines(page, [SECRET], own) == []
    assert feedback.leaked_hidden_lines(page, [SECRET]) == [SECRET]   # the page-wide check of before


@pytest.mark.parametrize("where", ["output", "test cell", "markdown"])
def test_the_same_line_anywhere_else_is_a_leak(where: str) -> None:
    own = feedback.own_text(_graded(SECRET), _source())
    page = _page(SECRET, f"<p>{where}: {SECRET}</p>")
    assert feedback.leaked_hidden_lines(page, [SECRET], own) == [SECRET]


def test_a_leak_without_the_line_in_the_answer_is_caught() -> None:
    own = feedback.own_text(_graded("x = 1"), _source())
    assert feedback.leaked_hidden_lines(_page("x = 1", f"caller said: {SECRET}"), [SECRET], own) == [SECRET]


def test_the_students_own_cells_are_those_nbgrader_takes_from_the_submission() -> None:
    source = _source()
    # a cell the student added (a scratch copy of their answer) is theirs too
    scratch = _graded(SECRET)
    scratch.cells.append(nbformat.v4.new_code_cell(SECRET))
    assert feedback.own_text(scratch, source) == [SECRET, SECRET]
    page = _page(SECRET, SECRET, "assert True\n# (hidden tests are not shown)")
    assert feedback.leaked_hidden_lines(page, [SECRET], feedback.own_text(scratch, source)) == []
    # a test cell relabelled as an answer by its metadata: its grade_id is a test cell's in the source
    fake = _graded("x = 1", SECRET)
    fake.cells[1].metadata["nbgrader"].update(solution=True, grade=False, locked=False)
    assert feedback.own_text(fake, source) == ["x = 1"]
    # a cell locked in the graded notebook is the instructor's, whatever its grade_id
    locked = _graded("x = 1")
    locked.cells.append(_cell(SECRET, "other", solution=False, grade=True, locked=True))
    assert feedback.own_text(locked, source) == ["x = 1"]
    assert feedback.leaked_hidden_lines(_page("x = 1", SECRET), [SECRET], feedback.own_text(locked, source)) == [
        SECRET]


# --------------------------------------------------------------------------------------------------------
# Every lecture's solution, as nbgrader's feedback renders it


def _autograded_solution(crs: Path, name: str) -> tuple[NotebookNode, NotebookNode]:
    """(the instructor's solution as autograde leaves it -- test cells restored from the source --, source)."""
    source = nbformat.read(crs / "source" / name / f"{name}.ipynb", as_version=4)
    nb = cells.full_solution(cells.student_version(crs, name), source)
    locked = {cells.grade_id(c): c.source for c in source.cells if cells.is_instructor_cell(c) and cells.grade_id(c)}
    for c in nb.cells:
        gid = cells.grade_id(c)
        if gid in locked:
            c.source = locked[gid]
    return nb, source


class Pages(NamedTuple):
    course: Path
    notebooks: dict[tuple[str, str], tuple[NotebookNode, NotebookNode]]   # (lecture, student) -> (graded, source)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    """Every lecture's solution (student ``instructor``) and answer variants (``alt<i>``, ``wrong<i>``, see
    ``tests/_notebooks.py``), autograded as nbgrader leaves them, and their pages from ``generate_feedback``."""
    names = course.assignments()
    assert len(names) >= 7, names
    crs = course.make_course(tmp_path_factory.mktemp("lectures") / "course", names)
    config = course_config(crs)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    notebooks = {}
    for name in names:
        solution, source = _autograded_solution(crs, name)
        students = {"instructor": solution}
        for student, answers in nbs.variant_students(name).items():
            nb = solution
            for aid, code in answers.items():
                nb = cells.set_answer(nb, aid, code)
            students[student] = nb
        with warnings.catch_warnings(), Gradebook(f"sqlite:///{crs / 'gradebook.db'}") as gb:
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's own add_submission triggers these
            for student, nb in students.items():
                nbformat.write(nb, _mkdir(crs / "autograded" / student / name) / f"{name}.ipynb")
                gb.update_or_create_student(student)
                gb.add_submission(name, student)
                notebooks[name, student] = (nb, source)
        result = api.generate_feedback(name, force=True)   # every student's page, in one nbgrader run
        assert result["success"], result.get("error")
    return Pages(crs, notebooks)


def _html(pages: Pages, name: str, student: str) -> str:
    return (pages.course / "feedback" / student / name / f"{name}.html").read_text()


def test_every_lectures_solution_and_answer_variants_get_their_page(pages: Pages) -> None:
    """The instructor's solution and every answer variant of ``tests/answer_variants/`` (correct alternatives and
    wrong answers, each as a student would hand it in): zero leak flags on each page."""
    hidden = feedback.hidden_test_lines(pages.course)
    for (name, student), (nb, source) in pages.notebooks.items():
        html = _html(pages, name, student)
        assert "hidden tests are not shown" in html, (name, student)
        assert feedback.leaked_hidden_lines(html, hidden[name][name], feedback.own_text(nb, source)) == [], (
            name, student)
    names = sorted({name for name, _ in pages.notebooks})
    assert len(pages.notebooks) > 2 * len(names)
    flagged_before = {name: len(feedback.leaked_hidden_lines(_html(pages, name, "instructor"), hidden[name][name]))
                      for name in names}
    print(f"{len(pages.notebooks)} pages without a leak flag; hidden lines the page-wide check flagged on each "
          f"solution's page: {flagged_before}")
    # the page-wide check of before flagged the instructor's own solution lines (issue 26): lecture 05 among them
    assert flagged_before["05_renyi_zcdp"] > 0, flagged_before


def test_maths_render_offline_in_a_browser(pages: Pages) -> None:
    """Lecture 05's page in Chromium with no name resolving: MathJax comes from the local copy and typesets every
    formula without an error, and the page asks for nothing but local files."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no browser: {CHROMIUM} is missing (python3 run.py test installs Debian's chromium)")
    page = pages.course / "feedback" / "instructor" / "05_renyi_zcdp" / "05_renyi_zcdp.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            tab = browser.new_page()
            asked: list[str] = []
            tab.on("request", lambda r: asked.append(r.url))
            tab.goto(page.as_uri())
            tab.wait_for_function("window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && "
                                  "document.querySelectorAll('.MathJax').length > 0", timeout=120_000)
            typeset = tab.evaluate("document.querySelectorAll('.MathJax').length")
            errors = tab.evaluate("Array.from(document.querySelectorAll('.MathJax_Error, merror'))"
                                  ".map(e => e.textContent)")
        finally:
            browser.close()
    assert typeset > 100 and errors == [], (typeset, errors[:5])
    assert [u for u in asked if not u.startswith(("file:", "about:", "data:"))] == []


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
