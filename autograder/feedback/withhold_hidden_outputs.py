"""``WithholdHiddenOutputs``: a hidden test shows its verdict and points on the feedback page, nothing else.

A test cell's outputs can carry what a hidden test passes to the student's code and what it expects: a student's
function that raises an exception quoting its arguments (or the seed of the generator it receives) sends them
back in the test's error message, a function run in one kernel prints them into the test cell's output, and a
failing hidden assertion's message may show the expected value.  Encodings (base64, hex, rot13, reversed, ...)
defeat any search for the values, so this preprocessor does not search: it runs inside nbgrader's
``generate_feedback`` (the course's ``nbgrader_config.py`` and :data:`autograder.course.settings.FEEDBACK_STEPS`) and

* replaces every output of a test cell whose *source* has a hidden-test region with one line,
  :data:`HIDDEN_PASSED` or :data:`HIDDEN_FAILED` (the points are in the cell's heading, as nbgrader shows them);
* replaces the outputs of the cells the student wrote (answer cells, cells the student added) that come after
  the first such test cell with :data:`LATER_WITHHELD`: they ran after a hidden test and may print state the
  student's code captured during it (a global list its function appends to).

Which test cells hold hidden tests is decided by ``grade_id`` on the instructor's source notebook
(``<course>/source/<assignment>/<notebook>.ipynb``), never on the graded notebook, whose test cells may have had
their hidden regions stripped already (:class:`~autograder.feedback.strip_hidden_tests.StripHiddenTests`)
or whose metadata the student may have edited.  Without the source notebook every test cell is treated as
holding hidden tests (withholding too much, never too little).  Visible-only test cells keep their messages.

The grading worker keeps one exporter, and so one instance of this step, for all its submissions
(:mod:`autograder.feedback.feedback_render`): what the source notebook says is read once and kept, keyed by the file's
path, modification time and size (a changed source is read again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Bool

from ..course.cells import grade_id, is_instructor_cell, is_test_cell

__all__ = ["HIDDEN_FAILED", "HIDDEN_PASSED", "LATER_WITHHELD", "WithholdHiddenOutputs", "hidden_test_ids"]

HIDDEN_PASSED = "Output of hidden tests is not shown. This cell's tests passed."
HIDDEN_FAILED = "Output of hidden tests is not shown. This cell's tests failed."
LATER_WITHHELD = "Output not shown: this cell ran after a hidden test."


def hidden_test_ids(source: NotebookNode, begin: str, end: str) -> set[str]:
    """The ``grade_id`` s of the test cells of the instructor's ``source`` notebook that hold a hidden region
    (a line containing ``begin`` followed by one containing ``end``, nbgrader's rule)."""
    ids = set()
    for cell in source.cells:
        text = str(cell.get("source", ""))
        gid = grade_id(cell)
        if gid and is_test_cell(cell) and begin in text and end in text.split(begin, 1)[1]:
            ids.add(gid)
    return ids


def _line(text: str) -> NotebookNode:
    out: NotebookNode = nbformat.v4.new_output("stream", name="stdout", text=text + "\n")
    return out


class WithholdHiddenOutputs(Preprocessor):
    """Withhold the outputs of hidden tests and of the student's cells after them (see the module's docstring)."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)  # type: ignore[no-untyped-call]  # nbconvert's is untyped
        self._known: dict[tuple[str, int, int, str, str], tuple[set[str], set[str]]] = {}

    def _source_path(self, resources: dict[str, Any]) -> Path | None:
        info = resources.get("nbgrader") or {}
        if not info.get("assignment") or not info.get("notebook"):
            return None
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
        path = path / f"{info['notebook']}.ipynb"
        return path if path.is_file() else None

    def _source_cells(self, resources: dict[str, Any], begin: str, end: str) -> tuple[set[str], set[str]] | None:
        """``(hidden test ids, instructor cell ids)`` of the source notebook (read once per version of the file),
        or None without one."""
        path = self._source_path(resources)
        if path is None:
            return None
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, begin, end)
        if key not in self._known:
            source: NotebookNode = nbformat.read(path, as_version=4)
            self._known[key] = (hidden_test_ids(source, begin, end),
                                {gid for c in source.cells if is_instructor_cell(c) and (gid := grade_id(c))})
        hidden, instructor = self._known[key]
        return set(hidden), set(instructor)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        delimiters = ClearHiddenTests(config=self.config)
        known = self._source_cells(resources, delimiters.begin_test_delimeter, delimiters.end_test_delimeter)
        if known is None:  # fail closed: every test cell is treated as hidden
            hidden = {gid for c in nb.cells if is_test_cell(c) and (gid := grade_id(c))}
            instructor: set[str] = set()
        else:
            hidden, instructor = known
        after_hidden = False
        for cell in nb.cells:
            if cell.get("cell_type") != "code":
                continue
            gid = grade_id(cell)
            if gid in hidden:
                failed = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
                cell.outputs = [_line(HIDDEN_FAILED if failed else HIDDEN_PASSED)]
                cell["execution_count"] = None
                after_hidden = True
            elif after_hidden and cell.get("outputs") and not (is_instructor_cell(cell) and gid in instructor):
                cell.outputs = [_line(LATER_WITHHELD)]
        return nb, resources
