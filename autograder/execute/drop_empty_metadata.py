"""``DropEmptyNbgraderMetadata``: remove the empty ``nbgrader`` metadata that ``DeduplicateIds`` leaves behind.

nbgrader 0.9's ``OverwriteCells`` with ``add_missing_cells`` fails (``KeyError: 'grade_id'``) on cells whose
``nbgrader`` metadata ``DeduplicateIds`` emptied (the duplicates of a test cell a student copied); without the
key, the duplicates are ordinary cells, as ``DeduplicateIds`` intends.  Runs among the grader's sanitising
steps (:func:`autograder.course.settings.grading_config`), right after ``DeduplicateIds``.
"""

from __future__ import annotations

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

__all__ = ["DropEmptyNbgraderMetadata"]


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):  # type: ignore[misc]  # nbgrader is untyped
    """Remove ``nbgrader`` metadata without a ``grade_id`` (left empty by ``DeduplicateIds``)."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        cell_index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if "nbgrader" in cell.metadata and not cell.metadata["nbgrader"].get("grade_id"):
            del cell.metadata["nbgrader"]
        return cell, resources
