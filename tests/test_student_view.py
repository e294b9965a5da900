"""What a student sees (issue 22 items 11 and 13): short errors, linked errata.

* ``dp_course.notebook.brief_errors``: in a real kernel (nbclient), an unanswered exercise is one line and a
  failing visible test shows its message first – and both are still ``error`` outputs, so nbclient raises
  ``CellExecutionError`` and nbgrader still scores zero; other errors keep their traceback; the grader's test
  guard has nothing to restore after it.
* ``tools/brief_errors_setup.py``: every lecture's setup cell calls it with the lecture's current exercises.
* ``tools/link_errata.py``: every "ERRATA n" mention in a lecture's Markdown links to an anchor of the errata
  page that exists.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from autograder.course import course, release
from autograder.guard import kernel_guard, library_code
from autograder.course.cells import strip_ansi
from dp_course import notebook

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_tool_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


setup_tool = _tool("brief_errors_setup")
errata_tool = _tool("link_errata")

SETUP = ('%matplotlib inline\nimport matplotlib.pyplot as plt\nfrom dp_course.notebook import brief_errors\n'
         'brief_errors({"leaky_rr_pmfs": "Exercise 1(a)"})')
STUB = 'def leaky_rr_pmfs(epsilon, delta):\n    """pmfs"""\n    # YOUR CODE HERE\n    raise NotImplementedError()'
SELF_CHECK = "print('self-check')\nleaky_rr_pmfs(1.0, 0.1)"
TEST = ('"""leaky_rr_pmfs sums to one."""\ndef _test_ex1a_sum():\n    def _check(eps):\n'
        '        p = leaky_rr_pmfs(eps, 0.1)\n    _check(1.0)\n\n\n_test_ex1a_sum()')
WRONG = "def leaky_rr_pmfs(epsilon, delta):\n    return [0.5, 0.6]"
FAILING_TEST = ('"""leaky_rr_pmfs sums to one."""\ndef _test_ex1a_sum():\n    def _check(eps):\n'
                '        p = leaky_rr_pmfs(eps, 0.1)\n'
                '        assert abs(sum(p) - 1) < 1e-12, f"epsilon = {eps}: the pmf must sum to 1, got {sum(p)}"\n'
                '    _check(1.0)\n\n\n_test_ex1a_sum()')
OTHER_ERROR = "def helper():\n    return 1 / 0\n\nhelper()"
FIGURE = "fig, ax = plt.subplots()\nax.plot([0, 1], [0, 1])\nax.plot(leaky_rr_pmfs(1.0, 0.1))"


def _run(cells: list[str], allow_errors: bool = True) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors).execute()
    return nb


def _error(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1, f"expected one error output, got {cell.outputs}"
    return errors[0]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    return _run([SETUP, STUB, SELF_CHECK, TEST, FIGURE, WRONG, FAILING_TEST, OTHER_ERROR, FIGURE])


def test_unanswered_exercise_is_one_line_in_a_self_check_and_a_test(executed):
    for index in (2, 3):       # the self-check cell and the test cell calling the stub
        error = _error(executed.cells[index])
        assert (error.ename, error.evalue) == ("NotImplementedError", ""), "what nbgrader and dp-course check read"
        assert [strip_ansi(line) for line in error.traceback] == [
            "NotImplementedError: Exercise 1(a) `leaky_rr_pmfs`: not answered yet"]
    assert executed.cells[2].outputs[0].text == "self-check\n"   # what ran before the stub still shows


def test_a_figure_of_an_unanswered_exercise_is_not_shown_half_drawn(executed):
    images = [[o for o in cell.outputs if o.output_type == "display_data" and "image/png" in o.data]
              for cell in (executed.cells[4], executed.cells[8])]
    assert images[0] == [], "the figure stopped at the stub must not be shown"
    assert strip_ansi(_error(executed.cells[4]).traceback[0]).endswith("`leaky_rr_pmfs`: not answered yet")
    assert len(images[1]) == 1, "the same cell with an answer shows its figure"


def test_failing_visible_test_shows_its_message_first(executed):
    error = _error(executed.cells[6])
    assert error.ename == "AssertionError"
    lines = [strip_ansi(line) for line in error.traceback]
    assert lines[0] == "AssertionError: epsilon = 1.0: the pmf must sum to 1, got 1.1"
    assert len(lines) == 2 and lines[1].startswith("(in test ex1a_sum, _check, line 5: assert abs(sum(p)")


def test_other_errors_keep_their_traceback(executed):
    error = _error(executed.cells[7])
    text = strip_ansi("\n".join(error.traceback))
    assert error.ename == "ZeroDivisionError" and "helper()" in text and "return 1 / 0" in text
    assert len(error.traceback) > 2


def test_an_unanswered_exercise_is_still_an_error_for_nbclient():
    with pytest.raises(CellExecutionError) as info:
        _run([SETUP, STUB, TEST], allow_errors=False)
    assert info.value.ename == "NotImplementedError"


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    sh = InteractiveShell.instance()
    formatter = sh.InteractiveTB
    yield sh
    formatter.__dict__.pop("structured_traceback", None)
    sh.reset(new_session=False)


def test_brief_errors_is_idempotent_and_leaves_the_guard_nothing_to_restore(shell):
    guard = kernel_guard.make_guard(shell, library_code.library_callback)
    try:
        assert shell.run_cell('from dp_course.notebook import brief_errors\nbrief_errors({"f": "Exercise 2"})',
                              store_history=False, silent=True).success
        assert guard.after()["fixes"] == []
        first = shell.InteractiveTB.__dict__["structured_traceback"]
        assert notebook.brief_errors({"g": "Exercise 3"}) is True      # the setup cell run again
        assert shell.InteractiveTB.__dict__["structured_traceback"] is first and first.exercises == {"g": "Exercise 3"}
        assert guard.before()["fixes"] == []
    finally:
        guard.restore()
        guard.release()


def test_brief_errors_outside_ipython_and_bad_input(monkeypatch):
    monkeypatch.setattr(notebook, "get_ipython", lambda: None)
    assert notebook.brief_errors({"f": "Exercise 1"}) is False
    with pytest.raises(TypeError, match="exercises must be None or a dict"):
        notebook.brief_errors(["f"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exercises must map function names"):
        notebook.brief_errors({"f": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"exercises must have at most 1000 entries, got 1001"):
        notebook.brief_errors({f"f{i}": "Exercise 1" for i in range(1001)})


@pytest.mark.parametrize("grade_id,label", [("ex1a_channel", "Exercise 1(a)"), ("ex2_estimate", "Exercise 2"),
                                            ("ex12c", "Exercise 12(c)"), ("q4_answer", "Exercise 4"),
                                            ("setup", None), ("s5_krr", None), ("exam_x", None)])
def test_exercise_label(grade_id, label):
    assert notebook.exercise_label(grade_id) == label


# --------------------------------------------------------------------------------------------------------
# The setup cells (tools/brief_errors_setup.py)


def test_every_setup_cell_calls_brief_errors_with_the_lectures_exercises():
    assert setup_tool.main(["--check", str(ROOT)]) == 0, "run: .venv/bin/python tools/brief_errors_setup.py"
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        names = setup_tool.exercises(nb)
        assert names, f"{path.name}: no answer cell defines a function"
        setup = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
        for name, label in names.items():
            assert f'"{name}": "{label}"' in setup.source
        assert all(len(line) <= 120 for line in setup.source.splitlines())


def test_setup_tool_replaces_its_block_and_keeps_the_rest():
    source = "import numpy as np\n\nnp.set_printoptions(precision=4)"
    once = setup_tool.updated_source(source, {"f": "Exercise 1(a)"})
    assert once.startswith(source + "\n\n" + setup_tool.MARKER)
    assert setup_tool.updated_source(once, {"f": "Exercise 1(a)"}) == once
    many = {f"function_number_{i}": f"Exercise {i}" for i in range(12)}
    twice = setup_tool.updated_source(once, many)
    assert twice.startswith(source + "\n\n") and twice.count(setup_tool.MARKER) == 1 and '"f"' not in twice
    assert setup_tool.updated_source(twice, many) == twice
    assert setup_tool.updated_source(twice, {"f": "Exercise 1(a)"}) == once
    ns: dict[str, object] = {}
    call = twice[twice.index("\nbrief_errors(") + 1:]
    exec(call, {"brief_errors": lambda d: ns.update(d)})  # noqa: S102 - the generated call, with a stand-in
    assert ns == many


# --------------------------------------------------------------------------------------------------------
# ERRATA links (tools/link_errata.py)

MENTIONS = [
    ("(ERRATA 9), and", "([ERRATA 9](../../docs/errata.md#erratum-9)), and"),
    ("(ERRATA item 4;", "([ERRATA item 4](../../docs/errata.md#erratum-4);"),
    ("(ERRATA 5 and 6)", "([ERRATA 5](../../docs/errata.md#erratum-5) and [6](../../docs/errata.md#erratum-6))"),
    ("(ERRATA 6, 7, 8).", "([ERRATA 6](../../docs/errata.md#erratum-6), [7](../../docs/errata.md#erratum-7), "
                          "[8](../../docs/errata.md#erratum-8))."),
    ("(`ERRATA.md` items 12 and 13)", "([`ERRATA.md` items 12](../../docs/errata.md#erratum-12) and "
                                      "[13](../../docs/errata.md#erratum-13))"),
    ("ERRATA 8's factor", "[ERRATA 8](../../docs/errata.md#erratum-8)'s factor"),
]


@pytest.mark.parametrize("text,linked", MENTIONS)
def test_link_mentions(text, linked):
    assert errata_tool.link_mentions(text) == linked
    assert errata_tool.link_mentions(linked) == linked            # idempotent


def _markdown(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_every_errata_mention_links_to_an_anchor_that_exists(folder):
    anchors = errata_tool.anchors((ROOT / "docs" / "errata.md").read_text(encoding="utf-8"))
    items_in_full = {int(n) for n in re.findall(r"\*\*(\d+)\. ", (ROOT / "docs" / "errata.md").read_text())}
    assert anchors == items_in_full, "run: .venv/bin/python tools/link_errata.py"
    for path in sorted((ROOT / folder).glob("*/*.ipynb")):
        for source in _markdown(path):
            assert errata_tool.link_mentions(source) == source, (
                f"{path.relative_to(ROOT)}: an ERRATA mention without its link; run tools/link_errata.py")
            missing = errata_tool.linked_items(source) - anchors
            assert not missing, f"{path.relative_to(ROOT)} links to errata items {missing} that have no anchor"
    assert errata_tool.main(["--check", str(ROOT)]) == 0


def test_errata_anchor_is_inline_and_idempotent():
    page = "### Notes\n\n**3. Lemma 3.1.** *Printed:* max.\n\n**10. Step 4.** x\n"
    once = errata_tool.anchor_items(page)
    assert '<a id="erratum-3"></a>**3. Lemma 3.1.**' in once and '<a id="erratum-10"></a>**10. Step 4.**' in once
    assert errata_tool.anchor_items(once) == once and errata_tool.anchors(once) == {3, 10}



# --------------------------------------------------------------------------------------------------------
# The landing page (notebooks/README.md)


def test_landing_page_ends_with_help_links_for_students():
    index = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    assert index == release.render_index(course.assignments()), "run: python3 run.py course release"
    visible = re.sub(r"<!--.*?-->", "", index, flags=re.DOTALL)
    assert "edit the sources" not in visible, "the instructor note must not be what students read"
    last = visible.rstrip().split("\n## ")[-1]
    assert last.startswith("Help\n"), "the page ends with its help section"
    assert "dp-course check" in last and "Ctrl+S" in last
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", last)
    assert {"../docs/student-guide.md", "../docs/errata.md"} <= set(links)
    for link in links:
        assert (ROOT / "notebooks" / link).resolve().is_file(), f"the help link {link} leads nowhere"
    assert "ask your instructor" in last
