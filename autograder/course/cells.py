"""Which kind of cell is this, and the small pieces of notebook surgery the kit shares.

Every "is this a test cell?" question in the kit (grading, the self-check, the release, the demo, the tests)
is answered here, on top of ``nbgrader.utils`` (nbgrader's own reading of its cell metadata):

==========================  ==============================================================================
answer cell                 a code cell with a solution region and no points of its own (autograded answer)
test cell                   a code cell worth points, without a solution region (nbgrader's "grade cell")
hand-graded cell            points and a solution region together (a written answer; code graded by hand)
instructor cell             a cell whose content nbgrader restores from the gradebook (test and read-only
                            cells): the only cells the grader trusts
==========================  ==============================================================================

The surgery helpers build submissions from a release notebook: fill every answer from the instructor's
source (:func:`full_solution`), replace one cell (:func:`set_answer`); the demo, the tests and the benchmark
use them.  :func:`hidden_test_regions` reads nbgrader's hidden-test delimiters; :func:`strip_ansi` and
:func:`error_output` handle cell outputs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader import utils as nbutils

__all__ = ["BEGIN_SOLUTION", "END_SOLUTION", "nbgrader_meta", "grade_id", "is_answer_cell", "is_test_cell",
           "is_manual_cell", "is_instructor_cell", "answer_cells", "test_cells", "manual_cells", "grade_ids",
           "strip_solution_markers", "student_version", "full_solution", "set_answer", "hidden_test_regions",
           "strip_ansi", "error_output"]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
"""nbgrader's default solution delimiters (the kit's sources use these)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


# ----------------------------------------------------------------------------------------------------
# Which kind of cell


def nbgrader_meta(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The cell's ``nbgrader`` metadata (empty for an ordinary cell)."""
    meta: dict[str, Any] = (cell.get("metadata") or {}).get("nbgrader") or {}
    return meta


def grade_id(cell: Mapping[str, Any]) -> str | None:
    """The cell's nbgrader ``grade_id``, or ``None``."""
    value = nbgrader_meta(cell).get("grade_id")
    return str(value) if value else None


def _node(cell: Mapping[str, Any]) -> NotebookNode:
    return cell if isinstance(cell, NotebookNode) else nbformat.from_dict(cell)


def is_answer_cell(cell: Mapping[str, Any]) -> bool:
    """An autograded answer: a code cell with a solution region and no points of its own."""
    node = _node(cell)
    return node.get("cell_type") == "code" and bool(nbutils.is_solution(node)) and not nbutils.is_grade(node)


def is_test_cell(cell: Mapping[str, Any]) -> bool:
    """An autograder test cell: a code cell worth points, without a solution region."""
    node = _node(cell)
    return node.get("cell_type") == "code" and bool(nbutils.is_grade(node)) and not nbutils.is_solution(node)


def is_manual_cell(cell: Mapping[str, Any]) -> bool:
    """A hand-graded answer (a written answer, or code graded by hand): solution region and points together."""
    node = _node(cell)
    return bool(nbutils.is_grade(node)) and bool(nbutils.is_solution(node))


def is_instructor_cell(cell: Mapping[str, Any]) -> bool:
    """A cell whose content comes from the instructor: nbgrader restores it (test cells, read-only cells)."""
    return bool(nbutils.is_locked(_node(cell)))


def _by_grade_id(nb: NotebookNode, keep: Any) -> dict[str, NotebookNode]:
    return {str(nbgrader_meta(c)["grade_id"]): c for c in nb.cells if keep(c)}


def answer_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """``{grade_id: cell}`` of the answer cells, in notebook order."""
    return _by_grade_id(nb, is_answer_cell)


def test_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """``{grade_id: cell}`` of the test cells, in notebook order."""
    return _by_grade_id(nb, is_test_cell)


def manual_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """``{grade_id: cell}`` of the hand-graded cells, in notebook order."""
    return _by_grade_id(nb, is_manual_cell)


def grade_ids(nb: Mapping[str, Any]) -> set[str]:
    """Every nbgrader ``grade_id`` in the notebook."""
    return {gid for c in nb.get("cells", []) if (gid := grade_id(c))}


# ----------------------------------------------------------------------------------------------------
# Notebook surgery: submissions made from a release notebook


def strip_solution_markers(source: str) -> str:
    """The solution code of a source cell, without the ``### BEGIN/END SOLUTION`` lines."""
    return "\n".join(line for line in source.split("\n") if BEGIN_SOLUTION not in line and END_SOLUTION not in line)


def student_version(course: Path, assignment: str, notebook: str | None = None) -> NotebookNode:
    """The released (student) notebook of an assignment in an nbgrader course directory."""
    notebook = notebook or assignment
    return cast(NotebookNode, nbformat.read(Path(course) / "release" / assignment / f"{notebook}.ipynb",
                                            as_version=4))


def full_solution(release_nb: NotebookNode, source_nb: NotebookNode) -> NotebookNode:
    """The release notebook with every answer cell filled in from the source (what a perfect student hands in)."""
    nb = copy.deepcopy(release_nb)
    sources = {nbgrader_meta(c)["grade_id"]: c.source for c in source_nb.cells if nbutils.is_solution(c)}
    for c in nb.cells:
        gid = nbgrader_meta(c).get("grade_id")
        if nbutils.is_solution(c) and gid in sources:
            c.source = strip_solution_markers(sources[gid]) if c.cell_type == "code" else sources[gid]
    return nb


def set_answer(nb: NotebookNode, grade_id: str, source: str, *, mode: str = "replace") -> NotebookNode:
    """A copy of ``nb`` whose cell ``grade_id`` is replaced by (``mode="replace"``), prefixed with
    (``"prepend"``) or followed by (``"append"``) ``source``.

    Raises:
        ValueError: ``mode`` is none of those, or no cell has that ``grade_id``.
    """
    if mode not in ("replace", "prepend", "append"):
        raise ValueError(f"mode must be one of ('replace', 'prepend', 'append'), got {mode!r}")
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        if nbgrader_meta(c).get("grade_id") == grade_id:
            c.source = {"replace": source, "prepend": source + "\n" + c.source,
                        "append": c.source + "\n" + source}[mode]
            return nb
    raise ValueError(f"grade_id must name a cell of the notebook, got {grade_id!r}")


def hidden_test_regions(source: str, begin: str, end: str) -> list[str]:
    """The non-blank lines between the ``begin`` and ``end`` delimiters (nbgrader's rule: a line containing one),
    stripped."""
    inside, out = False, []
    for line in source.split("\n"):
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside and line.strip():
            out.append(line.strip())
    return out


# ----------------------------------------------------------------------------------------------------
# Outputs


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (tracebacks carry them)."""
    return _ANSI.sub("", text)


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output, as a kernel would send it (the grader adds these to cells it could not run)."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])
