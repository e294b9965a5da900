"""The grader's preprocessors and pages on tiny fixture notebooks, without a kernel (as nbgrader's own tests).

autograder.preprocessors (hidden-test stripping, metadata clean-up), autograder.feedback (leak check, the
summary page), autograder.report (the instructor's pages), autograder.settings (the grading configuration),
autograder.events and autograder.cells.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.notebooknode import NotebookNode
from traitlets.config import Config

from autograder import cells, course
from autograder.events import Event, EventKind, Severity
from autograder.feedback import fallback_feedback, leaked_hidden_lines
from autograder.limits import Limits
from autograder.preprocessors.drop_empty_metadata import DropEmptyNbgraderMetadata
from autograder.preprocessors.safe_execute import GUARD_SOURCE, guard_install_code
from autograder.preprocessors.strip_hidden_tests import StripHiddenTests
from autograder.report import write_report
from autograder.results import GradeRun, SubmissionResult
from autograder.settings import (GRADING_CONFIG, SAFE_EXECUTE, GradingSettings, course_config, grading_config,
                                 write_grading_config)

SECRET = 'assert np.isclose(f(3.0), 12.0), "hidden HIDDEN-TOKEN"'


def _test_cell(source: str, outputs: list[NotebookNode] | None = None, grade_id: str = "t") -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source, outputs=outputs or [])
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id,
                                 "points": 1, "schema_version": 3}
    return cell


# --------------------------------------------------------------------------------------------------------
# Hidden tests out of the feedback


def test_strip_hidden_tests_scrubs_quoted_outputs() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('leak')", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text=f"caller said: {SECRET}\n")]),
        _test_cell(f"assert f(1) == 1\n### BEGIN HIDDEN TESTS\n{SECRET}\n### END HIDDEN TESTS",
                   [nbformat.v4.new_output("error", ename="AssertionError", evalue="hidden HIDDEN-TOKEN",
                                           traceback=["\x1b[0;31m" + SECRET])]),
    ])
    out, _ = StripHiddenTests().preprocess(nb, {})
    assert "[output removed: it quoted hidden test code]" in out.cells[0].outputs[0].text
    assert SECRET not in out.cells[1].source and "hidden tests are not shown" in out.cells[1].source
    err = [o for o in out.cells[1].outputs if o.output_type == "error"][0]
    assert err.traceback == ["AssertionError: hidden HIDDEN-TOKEN"]


def test_strip_hidden_tests_keeps_visible_tests_and_their_output() -> None:
    nb = nbformat.v4.new_notebook(cells=[_test_cell("assert f(1) == 1", [nbformat.v4.new_output(
        "stream", name="stdout", text="checked f(1)\n")])])
    out, _ = StripHiddenTests().preprocess(nb, {})
    assert out.cells[0].source == "assert f(1) == 1" and out.cells[0].outputs[0].text == "checked f(1)\n"


def test_leaked_hidden_lines_reads_the_page_text() -> None:
    page = "<pre>" + SECRET.replace('"', "&quot;").replace(" ", " <span></span>") + "</pre>"
    assert leaked_hidden_lines(page, [SECRET, "short"]) == [SECRET]   # markup and blanks do not hide it
    assert leaked_hidden_lines("<p>nothing</p>", [SECRET]) == []


def test_drop_empty_nbgrader_metadata() -> None:
    emptied, kept = _test_cell("pass"), _test_cell("assert True")
    emptied.metadata["nbgrader"] = {}   # what DeduplicateIds leaves on a duplicated test cell
    nb = nbformat.v4.new_notebook(cells=[emptied, kept])
    out, _ = DropEmptyNbgraderMetadata().preprocess(nb, {})
    assert "nbgrader" not in out.cells[0].metadata and cells.grade_id(out.cells[1]) == "t"


# --------------------------------------------------------------------------------------------------------
# Pages: student text is escaped


def _event(kind: EventKind, detail: str) -> Event:
    return Event(kind, detail, "ex1_answer", "00_toy")


SCRIPT = "<script>alert('pwned')</script>"


def test_fallback_feedback_escapes_what_students_wrote() -> None:
    html = fallback_feedback("eve<b>", "00_toy", "00_toy", {"ex1": (1.0, 2.0), "q4": (None, 2.0)},
                             [_event(EventKind.CELL_TIMEOUT, f"cell 3: {SCRIPT}"),
                              _event(EventKind.SUSPICIOUS_CODE, "not for the student")])
    assert SCRIPT not in html and "&lt;script&gt;" in html and "eve&lt;b&gt;" in html
    assert "Score: <b>1 / 4</b>" in html and "to be graded by hand" in html
    assert "cell time limit reached" in html and "not for the student" not in html


def _run(tmp_path: Path, events: list[Event]) -> GradeRun:
    result = SubmissionResult("eve", "00_toy", ["eve_00_toy.ipynb"], 1.0, 7.0, {"ex1": (1.0, 1.0), "ex2": (0.0, 2.0)},
                              events, 2.5, [])
    return GradeRun(output_dir=tmp_path, results=[result], unmatched=[("x<y>.txt", "not a .ipynb file")],
                    duplicates=[], layout="folder:flat", sandbox="sandbox: bubblewrap", sandbox_warning=None,
                    workers=1, graded_now=1, skipped=0, seconds=3.0, notebooks_graded=1,
                    grades_csv=tmp_path / "grades.csv")


def test_report_escapes_flagged_student_code(tmp_path: Path) -> None:
    """A student's ``<script>`` in a flagged line is text in report.html, never markup."""
    run = _run(tmp_path, [_event(EventKind.SUSPICIOUS_CODE, f"eve_00_toy.ipynb: cell 4: x = '{SCRIPT}'")])
    md_path, html_path = write_report(run)
    html, md = html_path.read_text(), md_path.read_text()
    assert SCRIPT not in html and "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    assert "x&lt;y&gt;.txt" in html
    assert f"- **code to review** (flag) in 00_toy [ex1_answer]: eve_00_toy.ipynb: cell 4: x = '{SCRIPT}'" in md
    assert "| 00_toy | ex2 | 2 | 0.00 | 0/1 | 0/1 | 1/1 | 0/1 |" in md
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["results"][0]["events"][0]["kind"] == "suspicious_code"
    assert (tmp_path / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_leaves_out_what_is_not_a_problem(tmp_path: Path) -> None:
    run = _run(tmp_path, [_event(EventKind.SANDBOX_OFF, "no sandbox"), _event(EventKind.DUPLICATE_FILE, "dup")])
    md_path, _ = write_report(run)
    assert md_path.read_text().split("## Submissions that failed or were flagged\n\n", 1)[1].startswith("None.")
    assert run.table().splitlines()[2].rstrip().endswith("7")   # no notes in the grade table either


# --------------------------------------------------------------------------------------------------------
# Events, cells, settings


@pytest.mark.parametrize("kind", list(EventKind))
def test_event_json_round_trip(kind: EventKind) -> None:
    event = Event(kind, "detail", "cell", "nb", "why" if kind is EventKind.KERNEL_START_FAILED else None)
    data = json.loads(json.dumps(event.to_json()))
    assert data["kind"] == str(kind) and Event.from_json(data) == event
    assert isinstance(kind.severity, Severity) and kind.title
    assert kind.reported == (kind.severity is not Severity.INFO and kind is not EventKind.SANDBOX_OFF)


def test_unknown_event_kind_is_named() -> None:
    with pytest.raises(ValueError, match="event kind must be one of .* got 'nope'"):
        EventKind.from_key("nope")


def test_cell_kinds() -> None:
    answer = nbformat.v4.new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "a", "locked": False}
    written = nbformat.v4.new_markdown_cell("because")
    written.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": "w", "points": 2}
    readonly = nbformat.v4.new_markdown_cell("# Title")
    readonly.metadata["nbgrader"] = {"solution": False, "grade": False, "grade_id": "r", "locked": True}
    plain = nbformat.v4.new_code_cell("x = 1")
    test = _test_cell("assert f(1) == 1")
    kinds = {name: (cells.is_answer_cell(c), cells.is_test_cell(c), cells.is_manual_cell(c),
                    cells.is_instructor_cell(c))
             for name, c in (("answer", answer), ("written", written), ("readonly", readonly), ("plain", plain),
                             ("test", test))}
    assert kinds == {"answer": (True, False, False, False), "written": (False, False, True, False),
                     "readonly": (False, False, False, True), "plain": (False, False, False, False),
                     "test": (False, True, False, True)}
    nb = nbformat.v4.new_notebook(cells=[answer, written, readonly, plain, test])
    assert list(cells.answer_cells(nb)) == ["a"] and list(cells.test_cells(nb)) == ["t"]
    assert cells.grade_ids(nb) == {"a", "w", "r", "t"}
    assert cells.strip_solution_markers(answer.source) == "def f(x):\n    return x"
    assert cells.set_answer(nb, "a", "# mine", mode="append").cells[0].source.endswith("\n# mine")
    with pytest.raises(ValueError, match="grade_id must name a cell"):
        cells.set_answer(nb, "zz", "x")


def _course_config(tmp_path: Path) -> Config:
    (tmp_path / "nbgrader_config.py").write_text(course.CONFIG_FILE.read_text())
    return course_config(tmp_path)


def test_grading_config_swaps_in_the_safe_executor(tmp_path: Path) -> None:
    settings = GradingSettings(Limits(cell_timeout=4, notebook_timeout=40), "none", guard=False)
    config = grading_config(settings, _course_config(tmp_path), events_dir=tmp_path / "ev", mpl_cache=None)
    steps = config.Autograde.autograde_preprocessors
    plain = _course_config(tmp_path).Autograde.autograde_preprocessors
    assert steps[0] == SAFE_EXECUTE and steps[1:] == plain[1:]
    assert config.SafeExecute.limits == settings.limits.to_json() and config.SafeExecute.guard is False
    assert config.SafeExecute.sandbox == "none" and config.SafeExecute.events_dir == str(tmp_path / "ev")
    # written as JSON and read back on top of the course's own configuration, as a worker does
    write_grading_config(tmp_path, config)
    back = course_config(tmp_path)
    assert back.Autograde.autograde_preprocessors == steps and back.SafeExecute.limits == config.SafeExecute.limits
    assert back.ClearSolutions.code_stub == _course_config(tmp_path).ClearSolutions.code_stub
    assert back.CourseDirectory.root == str(tmp_path)
    assert json.loads((tmp_path / GRADING_CONFIG).read_text())["SafeExecute"]["sandbox"] == "none"


def test_grading_config_refuses_an_unknown_execution_step(tmp_path: Path) -> None:
    config = Config()
    config.Autograde.autograde_preprocessors = ["nbgrader.preprocessors.Execute"]
    with pytest.raises(ValueError, match="must start with 'autograder.preprocessors.headless.Execute'"):
        grading_config(GradingSettings(), config, events_dir=tmp_path, mpl_cache=None)


def test_settings_fingerprint_is_what_the_state_hashed_before() -> None:
    """The incremental state of an output folder graded before the settings record existed stays valid."""
    limits = Limits(cell_timeout=10, notebook_timeout=60)
    before: dict[str, Any] = {"limits": limits.to_json(), "sandbox": "bwrap", "guard": True, "feedback": False}
    settings = GradingSettings(limits, "bwrap", True, False)
    assert settings.fingerprint() == json.dumps(before, sort_keys=True)
    assert GradingSettings.from_json(json.loads(settings.fingerprint())) == settings
    with pytest.raises(ValueError, match="sandbox must be one of"):
        GradingSettings(sandbox="auto")


def test_the_guard_is_sent_from_its_file() -> None:
    code = guard_install_code("_dpc_guard_x")
    assert Path(cells.__file__).with_name("kernel_guard.py").read_text() == GUARD_SOURCE
    assert repr(GUARD_SOURCE) in code and code.rstrip().endswith("del _dpc_install_guard")
    compile(code, "install", "exec")   # valid Python; running it needs a shell (tests/test_kernel_guard.py)
