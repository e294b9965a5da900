"""The grader's preprocessors and pages on tiny fixture notebooks, without a kernel (as nbgrader's own tests).

the kit's nbgrader preprocessors (hidden-test stripping, metadata clean-up), autograder.feedback.feedback (leak check,
the
summary page), autograder.run.report (the instructor's pages), autograder.course.settings (the grading configuration),
autograder.intake.events and autograder.course.cells; autograder.execute.safe_execute's cell loop with the kernel
replaced by a script (the kernel itself: test_grading.py and the adversarial suite).
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest
from nbclient.exceptions import DeadKernelError
from nbformat.notebooknode import NotebookNode
from traitlets.config import Config

from autograder.course import cells, course
from autograder.intake.events import Event, EventKind, Severity
from autograder.feedback.feedback import fallback_feedback, leaked_hidden_lines
from autograder.course.limits import Limits
from autograder.execute.drop_empty_metadata import DropEmptyNbgraderMetadata
from autograder.execute.safe_execute import GUARD_SOURCE, LIBRARY_CODE_SOURCE, SafeExecute, guard_install_code
from autograder.feedback.strip_hidden_tests import StripHiddenTests
from autograder.run.report import write_report
from autograder.run.results import GradeRun, SubmissionResult
from autograder.course.settings import (GRADING_CONFIG, SAFE_EXECUTE, GradingSettings, course_config, grading_config,
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
    # report.md: the line as escaped Markdown text (issue 27 item 3), no HTML
    assert ("- **code to review** (flag) in 00_toy \\[ex1_answer\\]: eve_00_toy.ipynb: cell 4: "
            "x = '\\<script\\>alert('pwned')\\</script\\>'") in md and "<script>" not in md
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
    assert config.SafeExecute.trusted is True   # the default: test cells in the trusted kernel
    single = GradingSettings(settings.limits, "none", trusted=False)
    assert grading_config(single, _course_config(tmp_path), events_dir=tmp_path, mpl_cache=None
                          ).SafeExecute.trusted is False
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
    with pytest.raises(ValueError, match="must start with 'autograder.isolation.headless.Execute'"):
        grading_config(GradingSettings(), config, events_dir=tmp_path, mpl_cache=None)


def test_settings_fingerprint_is_what_the_state_hashed_before() -> None:
    """Settings recorded before trusted verdicts existed read back as single-kernel (as those notebooks were
    graded), so a trusted run grades them again; ``--single-kernel`` settings keep their old fingerprint."""
    limits = Limits(cell_timeout=10, notebook_timeout=60)
    before: dict[str, Any] = {"limits": limits.to_json(), "sandbox": "bwrap", "guard": True, "feedback": False}
    old = GradingSettings.from_json(before)
    assert old.trusted is False and old == GradingSettings(limits, "bwrap", True, False, trusted=False)
    assert old.fingerprint() == json.dumps(before, sort_keys=True)
    settings = GradingSettings(limits, "bwrap", True, False)
    assert settings.trusted is True and settings.fingerprint() == json.dumps({**before, "trusted": True},
                                                                              sort_keys=True)
    assert settings.fingerprint() != old.fingerprint()
    assert GradingSettings.from_json(json.loads(settings.fingerprint())) == settings
    assert GradingSettings.from_json(json.loads(old.fingerprint())) == old
    with pytest.raises(ValueError, match="sandbox must be one of"):
        GradingSettings(sandbox="auto")


def test_the_guard_is_sent_from_its_file() -> None:
    code = guard_install_code("_dpc_guard_x")
    assert (Path(cells.__file__).parent.parent / "guard" / "kernel_guard.py").read_text() == GUARD_SOURCE
    assert (Path(cells.__file__).parent.parent / "guard" / "library_code.py").read_text() == LIBRARY_CODE_SOURCE
    assert repr(GUARD_SOURCE) in code and repr(LIBRARY_CODE_SOURCE) in code
    assert "make_guard(get_ipython(), judge.library_callback)" in code
    assert code.rstrip().endswith("del _dpc_install_guard")
    compile(code, "install", "exec")   # valid Python; running it needs a shell (tests/test_kernel_guard.py)


# --------------------------------------------------------------------------------------------------------
# SafeExecute's cell loop, with the kernel replaced by a script (no kernel, as nbgrader's preprocessor tests)


class _ScriptedKernel(SafeExecute):
    """SafeExecute whose kernel is a script: ``outputs[source]`` is what a cell prints (or the exception its
    execution raises); ``reports[i]`` is the guard's i-th report ({"fixes": [...], "notes": [...]} or None)."""

    def __init__(self, outputs: dict[str, Any], reports: list[dict[str, list[str]] | None], **kw: Any) -> None:
        super().__init__(**kw)
        self.script, self.guard_reports, self.guard_calls = outputs, list(reports), list[str]()
        self.ran: list[str] = []

    @contextlib.contextmanager
    def setup_kernel(self, **kwargs: Any) -> Iterator[None]:
        self.kc = SimpleNamespace(kernel_info=lambda: "kernel_info")
        yield

    def wait_for_reply(self, msg_id: str, cell: NotebookNode | None = None) -> dict[str, Any]:
        return {"content": {"language_info": {"name": "python"}}}

    async def _async_guard_call(self, code: str, timeout: float, report: bool = True) -> dict[str, Any] | None:
        self.guard_calls.append(code)
        if not report:
            return {"fixes": [], "notes": []}
        return self.guard_reports.pop(0) if self.guard_reports else {"fixes": [], "notes": []}

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        self.ran.append(cell.source)
        action = self.script.get(cell.source)
        if isinstance(action, BaseException):
            raise action
        if callable(action):
            action()
        elif action:
            cell.outputs = list(action)
        return cell, resources

    def run(self, nb: NotebookNode, limits: Limits) -> list[Event]:
        """The cell loop of :meth:`SafeExecute.preprocess`, without the sandbox and the kernel around it."""
        self.nb, self.resources = nb, {}
        self.reset_execution_trackers()
        self.clear_before_next_output = False  # as nbclient sets it when a cell starts
        self._events, self._out_bytes, self._truncated, self._nb_name = [], {}, set(), "nb"
        self._limits = limits
        self._kernel_sandbox = SimpleNamespace(workdir=Path("."))
        self._run_cells(limits)
        return self._events


def _fixture_nb() -> NotebookNode:
    answer = nbformat.v4.new_code_cell("x = 1")
    answer.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "grade_id": "a",
                                   "schema_version": 3}
    return nbformat.v4.new_notebook(cells=[answer, _test_cell("assert x == 1", grade_id="t1"),
                                           nbformat.v4.new_code_cell("y = 2"),
                                           _test_cell("assert y == 2", grade_id="t2")])


LIMITS_FAST = Limits(cell_timeout=1, notebook_timeout=1)


def test_safe_execute_guards_only_the_instructors_cells() -> None:
    ex = _ScriptedKernel({}, [])
    assert ex.run(_fixture_nb(), LIMITS_FAST) == []
    assert ex.ran == ["x = 1", "assert x == 1", "y = 2", "assert y == 2"]
    install, *calls = ex.guard_calls
    assert repr(GUARD_SOURCE) in install
    assert [c.rpartition(".")[2] for c in calls] == ["before()", "after()", "before()", "after()"]  # tests only


def test_safe_execute_without_guard_runs_no_guard() -> None:
    ex = _ScriptedKernel({}, [], guard=False)
    assert ex.run(_fixture_nb(), LIMITS_FAST) == [] and ex.guard_calls == []


def test_safe_execute_a_patch_during_a_test_scores_it_zero() -> None:
    report = {"fixes": ["numpy.isclose was replaced"], "notes": []}
    ex = _ScriptedKernel({}, [{"fixes": [], "notes": []}, report])
    nb = _fixture_nb()
    events = ex.run(nb, LIMITS_FAST)
    assert [(e.kind, e.cell) for e in events] == [(EventKind.TAMPERING_DURING_TEST, "t1")]
    (err,) = nb.cells[1].outputs
    assert err.ename == "GradingIntegrityError" and "numpy.isclose was replaced" in err.evalue
    assert nb.cells[3].outputs == []


def test_safe_execute_a_silent_guard_gives_no_verdict() -> None:
    ex = _ScriptedKernel({}, [None])
    nb = _fixture_nb()
    events = ex.run(nb, LIMITS_FAST)
    assert [e.kind for e in events] == [EventKind.GUARD_FAILED]
    # no verdict for either test: the guard did not answer, so what ran cannot be trusted
    assert [o.ename for c in (nb.cells[1], nb.cells[3]) for o in c.outputs] == ["GradingIntegrityError"] * 2


def test_safe_execute_a_dead_kernel_stops_the_notebook() -> None:
    ex = _ScriptedKernel({"assert x == 1": DeadKernelError("gone")}, [])
    nb = _fixture_nb()
    events = ex.run(nb, LIMITS_FAST)
    assert [(e.kind, e.cell) for e in events] == [(EventKind.KERNEL_DIED, "t1")]
    assert nb.cells[1].outputs[0].ename == "DeadKernelError"
    assert [c.outputs[0].ename for c in nb.cells[2:]] == ["NotRun", "NotRun"] and ex.ran == ["x = 1", "assert x == 1"]


def test_safe_execute_the_notebook_time_limit_stops_later_cells() -> None:
    ex = _ScriptedKernel({"x = 1": lambda: time.sleep(0.6)}, [])
    nb = _fixture_nb()
    events = ex.run(nb, LIMITS_FAST)
    assert [(e.kind, e.cell) for e in events] == [(EventKind.NOTEBOOK_TIMEOUT, "t1")]
    assert ex.ran == ["x = 1"] and all(c.outputs[0].ename == "NotRun" for c in nb.cells[1:])
    assert "time limit of 1 s" in nb.cells[1].outputs[0].evalue


@pytest.mark.parametrize("ename,kind", [("CellTimeoutError", EventKind.CELL_TIMEOUT),
                                        ("MemoryError", EventKind.MEMORY_ERROR)])
def test_safe_execute_names_a_cell_that_failed_for_a_limit(ename: str, kind: EventKind) -> None:
    ex = _ScriptedKernel({"y = 2": [cells.error_output(ename, "limit")]}, [])
    assert [(e.kind, e.cell) for e in ex.run(_fixture_nb(), LIMITS_FAST)] == [(kind, None)]


def test_safe_execute_caps_the_output_of_a_cell() -> None:
    ex = _ScriptedKernel({}, [])
    ex.run(_fixture_nb(), Limits(cell_timeout=1, notebook_timeout=1, max_output_kb=1))
    outs: list[NotebookNode] = []
    line = {"msg_type": "stream", "header": {"msg_type": "stream"}, "parent_header": {"msg_id": "m"},
            "content": {"name": "stdout", "text": "x" * 400}}
    for _ in range(5):  # 2000 bytes: the third message goes over 1 KiB
        ex.output(outs, copy.deepcopy(line), None, 1)
    text = "".join(o.text for o in outs)
    assert text.count("x") == 800 and text.endswith("[grader: output truncated after 1 KiB]\n")
    assert [(e.kind, e.cell) for e in ex._events] == [(EventKind.OUTPUT_TRUNCATED, "t1")]


class _FakeTrustedSide:
    """What ``TrustedKernel.open`` returns, scripted: ``students[i]`` is the student's kernel state after the
    i-th test cell (default ``"ok"``); every call is recorded."""

    def __init__(self, students: list[str] | None = None) -> None:
        self.students = list(students or [])
        self.calls: list[tuple[str, Any]] = []

    def run_setup(self, source: str, timeout: float | None = None) -> str | None:
        self.calls.append(("setup", source))
        return None

    def run_test_cell(self, cell: NotebookNode, index: int, timeout: float | None = None,
                      execution_count: int | None = None) -> SimpleNamespace:
        self.calls.append(("test", cell.source))
        return SimpleNamespace(student=self.students.pop(0) if self.students else "ok")

    def close(self) -> dict[str, Any]:
        self.calls.append(("close", None))
        return {"calls": 0}


def _trusted(side: _FakeTrustedSide, reports: list[dict[str, list[str]] | None]) -> _ScriptedKernel:
    ex = _ScriptedKernel({}, reports, trusted=True)
    ex._open_trusted = lambda limits: side  # type: ignore[method-assign]  # no kernels in this unit test
    return ex


def _setup_cell(source: str) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": "setup",
                                 "schema_version": 3}
    return cell


def test_safe_execute_trusted_runs_test_cells_only_in_the_trusted_kernel() -> None:
    side = _FakeTrustedSide()
    nb = _fixture_nb()
    nb.cells.insert(0, _setup_cell("import math"))
    ex = _trusted(side, [])
    assert ex.run(nb, LIMITS_FAST) == []
    assert ex.ran == ["import math", "x = 1", "y = 2"]      # the student's kernel never receives a test cell
    assert side.calls == [("setup", "import math"), ("test", "assert x == 1"), ("test", "assert y == 2"),
                          ("close", None)]


def test_safe_execute_trusted_tampering_is_restored_not_a_verdict() -> None:
    """With the verdict in the trusted kernel, the guard restores the student's kernel before each test cell (the
    student's functions then run with genuine helpers) and checks again after the last one only.  A patch the
    student's functions made when the tests called them is undone and reported; the tests keep the verdicts the
    trusted kernel gave them."""
    report = {"fixes": ["numpy.isclose was replaced"], "notes": ["1 thread still running"]}
    nb = _fixture_nb()
    ex = _trusted(_FakeTrustedSide(), [report, {"fixes": [], "notes": []}, report])
    events = ex.run(nb, LIMITS_FAST)
    assert [(e.kind, e.cell) for e in events] == [(EventKind.TAMPERING_RESTORED, "t1"),
                                                  (EventKind.TAMPERING_RESTORED, "t2"),
                                                  (EventKind.BACKGROUND_THREADS, "t2")]
    assert "numpy.isclose was replaced" in events[1].detail
    assert [c.rsplit(".", 1)[-1] for c in ex.guard_calls[1:]] == ["before()", "before()", "after()"]
    assert nb.cells[1].outputs == [] and nb.cells[3].outputs == []


def test_safe_execute_trusted_guards_instructor_cells_of_the_students_kernel() -> None:
    """A locked instructor cell that runs in the student's kernel (a demonstration) is guarded before and after,
    as in one kernel; a test cell only before (the last one also after)."""
    demo = nbformat.v4.new_code_cell("show(x)")
    demo.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": "demo",
                                 "schema_version": 3}
    nb = _fixture_nb()
    nb.cells.insert(2, demo)
    ex = _trusted(_FakeTrustedSide(), [])
    assert ex.run(nb, LIMITS_FAST) == []
    assert [c.rsplit(".", 1)[-1] for c in ex.guard_calls[1:]] == ["before()", "before()", "after()", "before()",
                                                                  "after()"]


@pytest.mark.parametrize(("state", "kind"), [("dead", EventKind.KERNEL_DIED),
                                              ("unresponsive", EventKind.KERNEL_UNRESPONSIVE)])
def test_safe_execute_trusted_a_lost_student_kernel_stops_the_notebook(state: str, kind: EventKind) -> None:
    side = _FakeTrustedSide([state])
    nb = _fixture_nb()
    ex = _trusted(side, [])
    events = ex.run(nb, LIMITS_FAST)
    assert [(e.kind, e.cell) for e in events] == [(kind, "t1")]
    assert ex.ran == ["x = 1"] and [c[0] for c in side.calls] == ["test", "close"]
    assert [o.ename for c in nb.cells[2:] for o in c.outputs] == ["NotRun", "NotRun"]


def test_safe_execute_trusted_runs_the_setup_there_first() -> None:
    """The instructor's setup runs in the trusted kernel before any cell of the notebook runs anywhere (issue 27:
    a test moved above the setup found the setup's names missing there and took them from the student)."""
    side = _FakeTrustedSide()
    nb = _fixture_nb()
    nb.cells.insert(0, _setup_cell("from dp_course.divergences import privacy_profile"))
    ex = _trusted(side, [])
    seen: list[int] = []
    setup = side.run_setup

    def run_setup(source: str, timeout: float | None = None) -> str | None:
        seen.append(len(ex.ran))
        return setup(source, timeout) or "ImportError: no module"

    side.run_setup = run_setup  # type: ignore[method-assign]
    events = ex.run(nb, LIMITS_FAST)
    assert seen == [0] and side.calls[0] == ("setup", "from dp_course.divergences import privacy_profile")
    assert [c[0] for c in side.calls].count("setup") == 1     # once: not again when the setup cell comes
    assert [(e.kind, e.cell) for e in events] == [(EventKind.GUARD_FAILED, "setup")]
