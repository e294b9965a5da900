"""Feedback steps of issue 27 items 2 and 3 on tiny notebooks, without a kernel.

``WithholdHiddenOutputs`` (a hidden test's cell shows pass/fail only, the student's cells after it no output),
``SafeMarkup`` (outputs reduced to text and checked images), the Markdown escaping of ``report.md``, and the
feedback steps as nbgrader's configuration lists them.  End to end (``dp-course grade``, a browser):
``tests/adversarial/test_hostile_feedback.py``.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbconvert.filters import markdown2html
from nbformat.notebooknode import NotebookNode
from traitlets.config import Config

from autograder.course.offline_maths import CLEAN_HTML
from autograder.feedback.safe_markup import SafeMarkup, clean_html
from autograder.feedback.withhold_hidden_outputs import (HIDDEN_FAILED, HIDDEN_PASSED, LATER_WITHHELD,
                                                         WithholdHiddenOutputs)
from autograder.course.settings import FEEDBACK_STEPS, course_config
from autograder.course.templating import md_code, md_escape

HIDDEN = "### BEGIN HIDDEN TESTS\nassert f(3.0) == 12.0, f'expected {12.0}'\n### END HIDDEN TESTS"
LEAK = "ValueError: ARGS(3.0, 0.25) KDMuMCwgMC4yNSk="


def _cell(kind: str, source: str, gid: str | None, *, grade: bool = False, solution: bool = False,
          locked: bool = False, outputs: list[NotebookNode] | None = None) -> NotebookNode:
    cell = (nbformat.v4.new_code_cell(source, outputs=outputs or []) if kind == "code"
            else nbformat.v4.new_markdown_cell(source))
    if gid:
        cell.metadata["nbgrader"] = {"grade": grade, "solution": solution, "locked": locked, "grade_id": gid,
                                     "points": 1 if grade else 0, "schema_version": 3}
    return cell


def _error(text: str) -> NotebookNode:
    return nbformat.v4.new_output("error", ename="AssertionError", evalue=text, traceback=[text])


def _stream(text: str) -> NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _source() -> NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        _cell("code", "import math", "setup", locked=True),
        _cell("code", "def f(x):\n    ### BEGIN SOLUTION\n    return 4 * x\n    ### END SOLUTION", "ans1",
              solution=True),
        _cell("code", "assert f(1.0) == 4.0, 'f(1) should be 4'", "visible", grade=True, locked=True),
        _cell("code", "assert f(2.0) == 8.0\n" + HIDDEN, "hidden", grade=True, locked=True),
        _cell("code", "def g(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION", "ans2",
              solution=True),
        _cell("code", "print(f(1.0))", "demo", locked=True),
    ])


def _graded(hidden_outputs: list[NotebookNode]) -> NotebookNode:
    """The autograded notebook as the feedback sees it: hidden region already stripped, outputs recorded."""
    return nbformat.v4.new_notebook(cells=[
        _cell("code", "import math", "setup", locked=True),
        _cell("code", "SEEN = []\ndef f(x):\n    SEEN.append(x)\n    return 4 * x", "ans1", solution=True,
              outputs=[_stream("defined\n")]),
        _cell("code", "assert f(1.0) == 4.0, 'f(1) should be 4'", "visible", grade=True, locked=True,
              outputs=[_error("AssertionError: f(1) should be 4")]),
        _cell("code", "assert f(2.0) == 8.0\n# (hidden tests are not shown)", "hidden", grade=True, locked=True,
              outputs=hidden_outputs),
        _cell("code", "print(SEEN)", "ans2", solution=True, outputs=[_stream("[1.0, 2.0, 3.0]\n")]),
        _cell("code", "print(SEEN)", None, outputs=[_stream("[1.0, 2.0, 3.0]\n")]),           # a cell added
        _cell("code", "print(f(1.0))", "demo", locked=True, outputs=[_stream("4.0\n")]),
    ])


def _course(tmp_path: Path, source: NotebookNode | None) -> Config:
    if source is not None:
        (tmp_path / "source" / "a").mkdir(parents=True)
        nbformat.write(source, tmp_path / "source" / "a" / "nb.ipynb")
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    return config


def _withhold(tmp_path: Path, nb: NotebookNode, source: NotebookNode | None) -> list[list[str]]:
    resources = {"nbgrader": {"assignment": "a", "notebook": "nb", "student": "eve"}}
    out, _ = WithholdHiddenOutputs(config=_course(tmp_path, source)).preprocess(nb, resources)
    return [[str(o.get("text", o.get("evalue", ""))) for o in c.get("outputs", [])] for c in out.cells]


@pytest.mark.parametrize(("outputs", "line"), [([_stream(LEAK), _error(LEAK)], HIDDEN_FAILED),
                                               ([_stream(LEAK)], HIDDEN_PASSED)])
def test_a_hidden_tests_cell_shows_its_verdict_only(tmp_path: Path, outputs: list[NotebookNode], line: str) -> None:
    shown = _withhold(tmp_path, _graded(outputs), _source())
    assert shown[3] == [line + "\n"]
    assert shown[2] == ["AssertionError: f(1) should be 4"]          # a visible test keeps its message
    assert shown[1] == ["defined\n"]                                  # before the hidden test: kept
    assert shown[4] == shown[5] == [LATER_WITHHELD + "\n"]            # the student's cells after it: withheld
    assert shown[6] == ["4.0\n"]                                      # the instructor's cell keeps its output
    assert "ARGS" not in str(shown)


def test_hidden_cells_are_known_from_the_source_not_the_graded_notebook(tmp_path: Path) -> None:
    """The graded test cell shows no delimiter (stripped already, or edited): the source decides."""
    nb = _graded([_error(LEAK)])
    assert "BEGIN HIDDEN" not in str(nb.cells[3].source)
    assert _withhold(tmp_path, nb, _source())[3] == [HIDDEN_FAILED + "\n"]


def test_without_the_source_every_test_cell_is_withheld(tmp_path: Path) -> None:
    shown = _withhold(tmp_path, _graded([_error(LEAK)]), None)
    assert shown[2] == [HIDDEN_FAILED + "\n"] and shown[3] == [HIDDEN_FAILED + "\n"]


def test_one_step_reused_for_many_pages_follows_the_source(tmp_path: Path) -> None:
    """The worker keeps one instance of the step (one exporter per worker): the source is read once, and read
    again when it changes; the graded notebook is never what decides."""
    config = _course(tmp_path, _source())
    step = WithholdHiddenOutputs(config=config)
    resources = {"nbgrader": {"assignment": "a", "notebook": "nb", "student": "eve"}}

    def hidden_cell_output() -> list[str]:
        out, _ = step.preprocess(_graded([_error(LEAK)]), resources)
        return [str(o.get("text", o.get("evalue", ""))) for o in out.cells[3].outputs]

    assert hidden_cell_output() == hidden_cell_output() == [HIDDEN_FAILED + "\n"]
    visible_only = _source()
    visible_only.cells[3].source = "assert f(2.0) == 8.0, 'f(2) should be 8'"   # its hidden region removed
    path = tmp_path / "source" / "a" / "nb.ipynb"
    nbformat.write(visible_only, path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    assert hidden_cell_output() == [LEAK]                                   # a visible test now: its message
    path.unlink()
    assert hidden_cell_output() == [HIDDEN_FAILED + "\n"]                  # no source: fail closed


def _display(data: dict[str, object]) -> NotebookNode:
    return nbformat.v4.new_output("display_data", data=data)


def test_safe_markup_keeps_text_and_checked_images_only() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    cell = nbformat.v4.new_code_cell("x", outputs=[
        _display({"text/html": "<script>alert(1)</script>", "text/plain": "<IPython.core.display.HTML object>"}),
        _display({"application/javascript": "alert(2)"}),
        _display({"image/png": '"><script>alert(3)</script>', "text/plain": "png"}),
        _display({"image/png": png, "image/svg+xml": "<svg onload='alert(4)'/>"}),
    ])
    cell.metadata.update(tags=['x" onmouseover="alert(5)'], nbgrader={"grade_id": 'a"><script>', "grade": False})
    nb = nbformat.v4.new_notebook(cells=[cell])
    cell["id"] = 'x"><img src=x onerror=alert(6)>'
    out, _ = SafeMarkup().preprocess(nb, {})
    datas = [o.data for o in out.cells[0].outputs]
    assert datas == [{"text/plain": "<IPython.core.display.HTML object>"},
                     {"text/plain": "[output of type application/javascript not shown]"},
                     {"text/plain": "png"}, {"image/png": png}]
    c = out.cells[0]
    assert dict(c.metadata) == {"nbgrader": {"grade_id": "cell-0", "grade": False}} and c["id"] == "cell-0"


def test_markdown_escaping_of_the_report() -> None:
    hostile = "eve <img src=http://127.0.0.1:9/t.png> **bold** [x](javascript:alert(1)) a|b _i_ ![i](y)"
    escaped = md_escape(hostile)
    assert re.findall(r"(?<!\\)[<>*\[\]|!`]|(?<![\\\w])_", escaped) == []   # none left unescaped
    assert escaped.replace("\\", "") == hostile        # it renders as the same text
    assert md_escape("Ann_Lee-3f2a José_x 0.67") == "Ann_Lee-3f2a José_x 0.67"   # nothing else changes
    assert md_escape("two\nlines") == "two lines"
    assert md_code("a `b` c") == "``a `b` c``" and md_code("../x_y.ipynb") == "`../x_y.ipynb`"


def test_the_feedback_steps_withhold_and_sanitise(tmp_path: Path) -> None:
    """nbgrader's ``generate_feedback`` (the course's configuration: Formgrader's button, ``dp-course feedback``)
    and the grader run the same steps, these among them, with nbconvert's HTML sanitiser on."""
    (tmp_path / "nbgrader_config.py").write_text(
        (Path(__file__).resolve().parents[1] / "autograder" / "nbgrader_config.py").read_text())
    config = course_config(tmp_path)
    assert config.GenerateFeedback.preprocessors == FEEDBACK_STEPS
    assert FEEDBACK_STEPS.index("autograder.feedback.withhold_hidden_outputs.WithholdHiddenOutputs") > \
        FEEDBACK_STEPS.index("autograder.feedback.strip_hidden_tests.StripHiddenTests")
    assert "autograder.feedback.safe_markup.SafeMarkup" in FEEDBACK_STEPS
    assert config.HTMLExporter.sanitize_html is True
    assert config.HTMLExporter.filters == {"clean_html": CLEAN_HTML}


def test_clean_html_keeps_a_lectures_markdown_and_drops_the_rest() -> None:
    table = clean_html(markdown2html("| $k$ | $\\varepsilon$ |\n| --- | ---: |\n| 1 | $x<y$ |\n\n**bold** [doc](https://x.org)"))
    for tag in ("<table>", "<thead>", "<th>", "<td>", "<strong>bold</strong>", '<a href="https://x.org">doc</a>'):
        assert tag in table, tag
    hostile = clean_html(markdown2html(
        "a <script>alert(1)</script>\n\n<img src=x onerror=alert(2)> [x](javascript:alert(3)) "
        "![t](http://127.0.0.1:9/t.png) <svg onload=alert(4)></svg> <div class='panel' style='color:red'>d</div>"))
    tags = re.findall(r"<[a-z][^>]*>", hostile)                 # the real tags (the rest is escaped text)
    assert [x for x in tags if re.search(r"^<(?:script|img|svg|style)|\s(?:on\w+|class|style|href)=", x)] == []
    assert "alert(1)" in hostile  # shown as text
