"""``RebuildStructure``: the graded notebook's cells rebuilt from the instructor's notebook, not the submission's.

nbgrader's ``OverwriteCells`` restores the *content* of the instructor's cells it finds in a submission, but it
trusts the submission's *order* and *presence*: a test cell moved above its answer, a setup cell deleted, moved
below the answers or duplicated all reach the kernel as the student arranged them.  This step runs first among
the grader's sanitising steps (:data:`autograder.course.settings.SANITIZE_STEPS`) and puts the notebook back in the
instructor's shape before anything else looks at it:

* the template is the released notebook of the assignment in the course directory (the instructor's source with
  the answers replaced by their stubs and the hidden tests out); every template cell with a ``grade_id`` appears
  exactly once, in the template's order, with the template's type, content and metadata (``OverwriteCells``,
  which runs after this step, then puts the gradebook's source back into the locked and test cells: the hidden
  tests);
* the student's answer cells are matched by ``grade_id`` only (never by position) and keep the student's source
  in the template's place; a missing answer cell is the template's stub (it scores what an unanswered exercise
  scores); of several cells with one answer's ``grade_id`` the last is kept, as nbgrader's ``DeduplicateIds``
  keeps it, and the others are dropped;
* every other cell of the submission (a scratch cell, a demonstration cell the student may edit) is kept, right
  after the template cell it followed in the submission, its nbgrader metadata removed; a code cell that would
  land before the setup cell goes right after it instead (see ``docs/design.md``, "Structure from the source").

Every deviation (a cell missing, moved, duplicated, re-typed, its metadata or its locked content edited, a cell
claiming an unknown ``grade_id``) is recorded as an :class:`~autograder.intake.events.EventKind.STRUCTURE_RESTORED`
event.  The events travel in the notebook's metadata (:data:`EVENTS_KEY`, always overwritten here, so a
submission cannot plant one) to :class:`~autograder.execute.safe_execute.SafeExecute`, which removes them
and writes them with its own.
"""

from __future__ import annotations

import bisect
import copy
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader import utils as nbutils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course.cells import grade_id, nbgrader_meta
from .events import Event, EventKind

__all__ = ["EVENTS_KEY", "RebuildStructure", "rebuild", "setup_index", "take_events"]

EVENTS_KEY = "dp_course_structure_events"
"""Notebook metadata key under which this step hands its events to ``SafeExecute`` (which removes it)."""


def setup_index(template: NotebookNode) -> int | None:
    """Index of the setup cell of ``template``: the last locked instructor code cell before the first answer cell
    (the rule of :func:`autograder.trusted.runner.cell_roles`), or None."""
    found: int | None = None
    for i, cell in enumerate(template.cells):
        if nbutils.is_solution(cell):
            break
        if cell.cell_type == "code" and nbutils.is_locked(cell) and not nbutils.is_grade(cell):
            found = i
    return found


def _moved(order: Sequence[int]) -> set[int]:
    """The entries of ``order`` outside one longest increasing subsequence: the fewest cells whose moves explain
    the submission's order (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    prev = [-1] * len(order)
    for i, value in enumerate(order):
        k = bisect.bisect_left(tails, value)
        if k == len(tails):
            tails.append(value)
            tail_at.append(i)
        else:
            tails[k], tail_at[k] = value, i
        prev[i] = tail_at[k - 1] if k else -1
    keep: set[int] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        keep.add(order[i])
        i = prev[i]
    return set(order) - keep


def take_events(nb: NotebookNode) -> list[Event]:
    """The events this step left in ``nb``'s metadata, removed from it (``SafeExecute`` writes them with its own):
    only :attr:`EventKind.STRUCTURE_RESTORED` ones, at most 200, each detail cut to 500 characters."""
    found = nb.metadata.pop(EVENTS_KEY, None)
    events: list[Event] = []
    for data in found if isinstance(found, list) else []:
        if isinstance(data, dict) and data.get("kind") == EventKind.STRUCTURE_RESTORED.value:
            cell, notebook = data.get("cell"), data.get("notebook")
            events.append(Event(EventKind.STRUCTURE_RESTORED, str(data.get("detail"))[:500],
                                cell if isinstance(cell, str) else None,
                                notebook if isinstance(notebook, str) else None))
    return events[:200]


def _describe(cell: Mapping[str, Any]) -> str:
    return f"{cell.get('cell_type')} cell {grade_id(cell)!r}"


Deviation = tuple[str | None, str]
"""``(grade_id of the cell concerned or None, what was restored)``."""


def rebuild(template: NotebookNode, submitted: NotebookNode) -> tuple[NotebookNode, list[Deviation]]:
    """``submitted`` rebuilt on ``template`` (see the module docstring); the notebook and what was restored.

    Args:
        template: the released notebook (the instructor's cells, answers as stubs).
        submitted: the student's notebook.

    Returns:
        ``(notebook, deviations)``: a new notebook (``submitted``'s notebook metadata) and, per deviation, the
        cell's ``grade_id`` and a plain-English sentence; no deviation for a submission in the template's
        shape (whatever cells the student added).
    """
    ids = [grade_id(c) for c in template.cells]
    position = {gid: i for i, gid in enumerate(ids) if gid}
    setup = setup_index(template)
    found: dict[str, list[NotebookNode]] = {}
    after: dict[int, list[NotebookNode]] = {}
    deviations: list[Deviation] = []
    anchor = -1
    for cell in submitted.cells:
        gid = grade_id(cell)
        if gid in position:
            found.setdefault(gid, []).append(cell)
            anchor = position[gid]
            continue
        cell = copy.deepcopy(cell)
        if "nbgrader" in cell.get("metadata", {}):
            if gid:
                deviations.append((None, f"a {cell.get('cell_type')} cell claimed the grade id {gid!r}, which "
                                   "the assignment does not have: kept as the student's own cell"))
            del cell.metadata["nbgrader"]
        place = anchor
        if setup is not None and place < setup and cell.get("cell_type") == "code":
            place = setup  # nothing of the student's runs before the setup cell
        after.setdefault(place, []).append(cell)
    first_order: list[int] = []
    for c in submitted.cells:
        p = position.get(grade_id(c) or "")
        if p is not None and p not in first_order:
            first_order.append(p)
    moved = _moved(first_order)
    cells: list[NotebookNode] = list(after.get(-1, []))
    for i, model in enumerate(template.cells):
        gid = ids[i]
        if gid is None:
            continue  # a template cell without an id (the how-to cell, a demonstration): the student's copy counts
        copies = found.get(gid, [])
        cells.append(_restore(model, copies, deviations, moved=i in moved))
        cells.extend(after.get(i, []))
    nb = copy.deepcopy(submitted)
    nb.cells = _unique_ids(cells)
    return nb, deviations


def _restore(model: NotebookNode, copies: list[NotebookNode], found: list[Deviation], *,
             moved: bool) -> NotebookNode:
    """The template cell ``model`` as it goes into the graded notebook, given the submission's ``copies``."""
    cell = copy.deepcopy(model)
    what = _describe(model)
    gid = grade_id(model)
    deviations: list[str] = []
    if not copies:
        found.append((gid, f"{what} was missing: put back from the assignment"
                      + (" (the exercise's stub)" if nbutils.is_solution(model) else "")))
        return cell
    if len(copies) > 1:
        deviations.append(f"{what} appeared {len(copies)} times: "
                          + ("the last copy kept as the answer, the others not run" if nbutils.is_solution(model)
                             else "one copy kept, from the assignment"))
    if moved:
        deviations.append(f"{what} was moved: put back in its place")
    theirs = copies[-1]
    if theirs.get("cell_type") != model.cell_type:
        deviations.append(f"{what} was changed to a {theirs.get('cell_type')} cell: its type restored")
    if nbgrader_meta(theirs) != nbgrader_meta(model):
        deviations.append(f"{what}: its nbgrader metadata was edited: restored")
    if nbutils.is_solution(model):
        cell.source = theirs.get("source", "")
        if "attachments" in theirs and model.cell_type == "markdown":
            cell["attachments"] = copy.deepcopy(theirs["attachments"])
    elif theirs.get("source", "") != model.source:
        deviations.append(f"{what}: its content was edited: restored")
    if "id" in theirs:
        cell["id"] = theirs["id"]
    found.extend((gid, text) for text in deviations)
    return cell


def _unique_ids(cells: list[NotebookNode]) -> list[NotebookNode]:
    """``cells`` with nbformat cell ids made unique (a kept copy and a scratch cell may share one)."""
    used: set[str] = set()
    for cell in cells:
        if "id" not in cell:
            continue
        if cell["id"] in used:
            cell["id"] = uuid.uuid4().hex[:8]
        used.add(cell["id"])
    return cells


class RebuildStructure(NbGraderPreprocessor):  # type: ignore[misc]  # nbgrader is untyped
    """Rebuild a submitted notebook's cells on the released notebook of its assignment (see the module)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        nbg = resources.get("nbgrader") or {}
        assignment, notebook = nbg.get("assignment"), nbg.get("notebook")
        nb.metadata[EVENTS_KEY] = []
        if not assignment or not notebook:
            return nb, resources
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{notebook}.ipynb"
        if not path.is_file():
            self.log.warning("no released notebook %s: the submission's structure is kept as it is", path)
            return nb, resources
        template = nbformat.read(path, as_version=4)
        rebuilt, deviations = rebuild(template, nb)
        for _, text in deviations:
            self.log.warning("%s: %s", notebook, text)
        rebuilt.metadata[EVENTS_KEY] = [Event(EventKind.STRUCTURE_RESTORED, text, cell, notebook).to_json()
                                        for cell, text in deviations]
        return rebuilt, resources
