"""``PendingHandGrading``: a feedback page says which written answers are still to be marked by hand.

Before the instructor marks a written answer, nbgrader's page shows it as "Score: 0.0 / 2.0", which reads as a
zero.  This preprocessor runs inside ``generate_feedback`` after nbgrader's ``GetGrades`` and, for every graded
cell whose mark is still pending in the gradebook (``needs_manual_grade`` and no manual score yet, the rule of
:func:`autograder.run.gradebook.read_scores`):

* drops the cell's score from the page (its heading and the table of contents no longer show "0.0 / 2.0");
* puts a note right below it: "To be marked by hand; your score will be updated.";
* and puts a note at the top of the page listing those answers and their points.

A page made after the marking shows the marks as usual (the pending state is read from the gradebook each time).
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader import utils as nbutils
from nbgrader.api import Gradebook, MissingEntry
from traitlets import Bool

__all__ = ["PENDING_NOTE", "PendingHandGrading"]

PENDING_NOTE = "To be marked by hand; your score will be updated."
"""The note put below each answer still to be marked (and, with the list of answers, at the top)."""


def _note(cell_id: str, text: str) -> NotebookNode:
    cell: NotebookNode = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cell_id  # fixed, not random: the same gradebook gives the same page
    return cell


class PendingHandGrading(Preprocessor):
    """Mark the answers still to be graded by hand (see the module's docstring)."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info = resources["nbgrader"]
        pending: list[tuple[str, float]] = []
        with Gradebook(info["db_url"]) as gb:
            try:  # the notebook's grades in one query (not one per graded cell)
                grades = {g.name: g for g in gb.find_submission_notebook(
                    info["notebook"], info["assignment"], info["student"]).grades}
            except MissingEntry:
                grades = {}
            for cell in nb.cells:
                if not nbutils.is_grade(cell):
                    continue
                gid = cell.metadata.nbgrader["grade_id"]
                grade = grades.get(gid)
                if grade is None:
                    continue
                if grade.needs_manual_grade and grade.manual_score is None:
                    pending.append((gid, float(grade.max_score or 0.0)))
        if not pending:
            return nb, resources
        ids = {gid for gid, _ in pending}
        cells: list[NotebookNode] = []
        for cell in nb.cells:
            cells.append(cell)
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if nbutils.is_grade(cell) and gid in ids:
                cell.metadata.nbgrader["grade"] = False  # no "Score: 0.0 / 2.0" in its heading or the contents
                cell.metadata.nbgrader["pending"] = True
                cells.append(_note(f"pending-{gid}", f"**{PENDING_NOTE}**"))
        listed = "\n".join(f"* `{gid}` ({points:g} point{'s' if points != 1 else ''})" for gid, points in pending)
        top = (f"**Still to be marked by hand.** The score of this page counts only what is marked so far; "
               f"these answers are not marked yet:\n\n{listed}\n\n{PENDING_NOTE}")
        nb.cells = [_note("pending-hand-grading", top), *cells]
        return nb, resources
