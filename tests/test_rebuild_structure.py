"""``RebuildStructure`` (issue 27 item 1) on the toy assignment, without a kernel: the graded notebook's cells are
rebuilt on the released notebook (every instructor cell once, in its place; answers by ``grade_id``; the student's
own cells after the cell they followed, never before the setup) and every deviation is named.

The end-to-end runs (``dp-course grade`` on lectures 01 and 02, the trusted kernel's names) are in
``tests/adversarial/test_structure.py``; the trusted side's name rules are tested here in-process too.
"""

from __future__ import annotations

import copy
from typing import Any

import nbformat
import pytest
from nbformat.notebooknode import NotebookNode

from adversarial import hostile
from autograder.course import cells
from autograder.guard import kernel_guard
from autograder.intake.events import EventKind
from autograder.intake import rebuild_structure
from autograder.intake.rebuild_structure import EVENTS_KEY, RebuildStructure, rebuild, setup_index, take_events
from autograder.course.settings import course_config
from autograder.trusted import names, proxy, runner


def _shape(nb: NotebookNode) -> list[tuple[str, str | None, str]]:
    return [(c.cell_type, cells.grade_id(c), c.source) for c in nb.cells]


def _index(nb: NotebookNode, gid: str) -> int:
    return hostile.cell_index(nb, gid)


def _scratch(source: str, kind: str = "code") -> NotebookNode:
    return nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)


def _ids(found: list[tuple[str | None, str]]) -> list[str | None]:
    return [gid for gid, _ in found]


def test_an_honest_notebook_keeps_its_shape_and_gets_no_flag(toy: hostile.Toy) -> None:
    for nb in (toy.release, toy.full):
        out, found = rebuild(toy.release, nb)
        assert found == [] and _shape(out) == _shape(nb)


def test_scratch_cells_stay_after_the_cell_they_followed_never_before_the_setup(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    nb.cells.insert(_index(nb, "ex1_answer") + 1, _scratch("print(laplace_scale(1, 2))"))
    nb.cells.insert(0, _scratch("x = 1  # before everything"))
    nb.cells.insert(0, _scratch("notes", "markdown"))
    nb.cells.append(_scratch("y = 2"))
    out, found = rebuild(toy.release, nb)
    assert found == []   # cells of one's own are no deviation
    shape = _shape(out)
    setup = _index(out, "setup")
    assert shape[0] == ("markdown", None, "notes")                         # prose may stay on top
    assert shape[setup + 1] == ("code", None, "x = 1  # before everything")  # code: right after the setup
    assert shape[_index(out, "ex1_answer") + 1] == ("code", None, "print(laplace_scale(1, 2))")
    assert shape[-1] == ("code", None, "y = 2")
    assert len(out.cells) == len(toy.full.cells) + 4


def test_a_test_cell_moved_above_its_answer_goes_back(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    test = nb.cells.pop(_index(nb, "ex1_scaling"))
    nb.cells.insert(_index(nb, "ex1_answer"), test)
    out, found = rebuild(toy.release, nb)
    assert _shape(out) == _shape(toy.full)
    assert _ids(found) == ["ex1_scaling"] and "moved" in found[0][1]


@pytest.mark.parametrize("trick", ["delete", "below", "duplicate"])
def test_the_setup_cell_is_put_back_once_in_its_place(toy: hostile.Toy, trick: str) -> None:
    nb = copy.deepcopy(toy.full)
    i = _index(nb, "setup")
    setup = nb.cells.pop(i) if trick != "duplicate" else copy.deepcopy(nb.cells[i])
    if trick == "below":
        nb.cells.append(setup)
    elif trick == "duplicate":
        nb.cells.insert(_index(nb, "ex2_answer"), setup)
    out, found = rebuild(toy.release, nb)
    assert _shape(out) == _shape(toy.full)
    assert _ids(found) == ["setup"]
    assert {"delete": "missing", "below": "moved", "duplicate": "appeared 2 times"}[trick] in found[0][1]


def test_a_retyped_or_relabelled_instructor_cell_is_restored(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    unit = nb.cells[_index(nb, "ex1_unit")]
    unit.cell_type = "markdown"
    del unit["outputs"], unit["execution_count"]
    nb.cells[_index(nb, "ex2_tests")].metadata["nbgrader"]["points"] = 50
    nb.cells[_index(nb, "setup")].source += "\nprivacy_profile = lambda *a: 0.0"
    out, found = rebuild(toy.release, nb)
    assert _shape(out) == _shape(toy.full)
    assert out.cells[_index(out, "ex2_tests")].metadata["nbgrader"]["points"] == 2
    assert sorted(_ids(found)) == ["ex1_unit", "ex2_tests", "setup"]
    assert [t for _, t in found if "type" in t and "markdown" in t]


def test_a_duplicated_answer_keeps_the_last_copy_and_is_flagged(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    other = copy.deepcopy(nb.cells[_index(nb, "ex1_answer")])
    other.source = hostile.WRONG_EX1
    nb.cells.insert(_index(nb, "ex2_answer"), other)           # the copy comes later: nbgrader keeps the last
    out, found = rebuild(toy.release, nb)
    assert out.cells[_index(out, "ex1_answer")].source == hostile.WRONG_EX1
    assert [c for c in out.cells if c.source == hostile.WRONG_EX1] == [out.cells[_index(out, "ex1_answer")]]
    assert len(out.cells) == len(toy.full.cells)
    assert _ids(found) == ["ex1_answer"] and "appeared 2 times" in found[0][1]


def test_a_missing_answer_is_the_stub_and_a_stray_grade_id_a_scratch_cell(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    del nb.cells[_index(nb, "ex2_answer")]
    fake = _scratch("z = 3")
    fake.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "bonus", "points": 9}
    nb.cells.append(fake)
    out, found = rebuild(toy.release, nb)
    stub = toy.release.cells[_index(toy.release, "ex2_answer")].source
    assert out.cells[_index(out, "ex2_answer")].source == stub
    assert "nbgrader" not in out.cells[-1].metadata and out.cells[-1].source == "z = 3"
    assert _ids(found) == [None, "ex2_answer"]
    assert "'bonus'" in found[0][1] and "missing" in found[1][1]


def test_cell_ids_stay_unique(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    dup = copy.deepcopy(nb.cells[_index(nb, "ex3_tests")])
    dup.metadata = {}   # a copied test cell, its metadata removed: the student's own cell, same nbformat id
    nb.cells.append(dup)
    out, _ = rebuild(toy.release, nb)
    ids = [c.get("id") for c in out.cells]
    assert len(ids) == len(set(ids))
    nbformat.validate(out)


def test_fewest_moves() -> None:
    assert rebuild_structure._moved([0, 1, 5, 2, 3, 4]) == {5}
    assert rebuild_structure._moved([3, 0, 1, 2]) == {3}
    assert rebuild_structure._moved([0, 1, 2]) == set() and rebuild_structure._moved([]) == set()


def test_setup_index(toy: hostile.Toy) -> None:
    assert setup_index(toy.release) == _index(toy.release, "setup")
    assert setup_index(nbformat.v4.new_notebook()) is None


def test_the_preprocessor_reads_the_release_and_hands_over_its_events(toy: hostile.Toy) -> None:
    nb = copy.deepcopy(toy.full)
    nb.cells.append(copy.deepcopy(nb.cells[_index(nb, "setup")]))
    nb.metadata[EVENTS_KEY] = [{"kind": "structure_restored", "detail": "planted by the student"}]
    pre = RebuildStructure(config=course_config(toy.course))
    resources: dict[str, Any] = {"nbgrader": {"assignment": hostile._N, "notebook": hostile._N}}
    out, _ = pre.preprocess(nb, resources)
    assert _shape(out) == _shape(toy.full)
    events = take_events(out)
    assert EVENTS_KEY not in out.metadata
    assert [(e.kind, e.cell, e.notebook) for e in events] == [(EventKind.STRUCTURE_RESTORED, "setup", hostile._N)]
    # no release to rebuild on (not part of a course): left as it is, and nothing planted survives
    nb.metadata[EVENTS_KEY] = [{"kind": "structure_restored", "detail": "planted"}]
    out, _ = pre.preprocess(nb, {"nbgrader": {"assignment": "nope", "notebook": "nope"}})
    assert len(out.cells) == len(nb.cells) and take_events(out) == []


def test_structure_events_accept_only_their_kind() -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata[EVENTS_KEY] = [{"kind": "kernel_died", "detail": "x"}, "junk",
                               {"kind": "structure_restored", "detail": "y" * 900, "cell": 3}]
    (event,) = take_events(nb)
    assert event.kind is EventKind.STRUCTURE_RESTORED and len(event.detail) == 500 and event.cell is None


# ---- the trusted kernel takes only the exercises' names from the student -------------------------------------

class _Link:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def describe(self, wanted: list[str]) -> dict[str, Any]:
        self.asked.append(list(wanted))
        return {n: {"kind": "function"} for n in wanted}


def test_only_the_exercises_names_are_asked_of_the_student() -> None:
    link = _Link()
    namespace: dict[str, Any] = {}
    kinds = names.resolve(["tight_example", "privacy_profile", "np"], namespace, link, set(),  # type: ignore[arg-type]
                          student={"tight_example"})
    assert link.asked == [["tight_example"]] and kinds == {"tight_example": "function"}
    assert isinstance(namespace["tight_example"], proxy.StudentFunction)
    assert "privacy_profile" not in namespace     # the setup did not bind it: a NameError, never the student's


def test_bound_names_of_a_solution_and_a_setup() -> None:
    assert names.bound_names("import numpy as np\nfrom x import (a, b)\n%matplotlib inline\n") == ["a", "b", "np"]
    assert names.bound_names("def f(x):\n    global g\n    g = x\n_h = 1\nfor i in []: pass") == [
        "_h", "f", "g", "i"]
    assert names.bound_names("def (") == []


def test_the_guard_watches_the_agent_package() -> None:
    assert kernel_guard.watched("_dpc_trusted.agent") and kernel_guard.watched("_dpc_trusted")
    assert not kernel_guard.watched("numpy._core") and "_dpc_trusted.agent" in kernel_guard.AGENT_MODULES
    assert kernel_guard.AGENT_PACKAGE == runner.PACKAGE

