"""The grader's view of a written answer: its mark scheme and model answer, shown in nbgrader's Formgrader.

The kit's sources keep the model answer of a hand-graded cell between ``### BEGIN SOLUTION`` and
``### END SOLUTION``, ending with a paragraph that starts ``**Mark scheme (N points).**`` (see any written
proof in ``solutions/``).  nbgrader's own convention, a ``### BEGIN MARK SCHEME`` / ``### END MARK SCHEME``
region (task cells and others), is read too.  :func:`mark_schemes` reads both from a source notebook.

:class:`MarkSchemeExporter` is the HTML exporter of the Formgrader's grading page in ``dp-course formgrade``
sessions (:mod:`autograder.formgrade.formgrade_server` installs it): before rendering a student's autograded notebook it
looks up the assignment's source notebook in the course directory and attaches, to each hand-graded cell (in
memory only), the mark scheme and model answer, which the template ``templates/formgrade_mark_scheme/`` shows
below the student's answer.  Nothing is written to any notebook, and nbgrader's feedback exporter (a
different exporter with the ``feedback`` template) never sees it: students' feedback cannot show a mark scheme.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters import HTMLExporter
from nbformat.notebooknode import NotebookNode
from nbgrader import utils as nbutils
from traitlets.config import Config

from ..course.cells import BEGIN_SOLUTION, END_SOLUTION, grade_id

__all__ = ["BEGIN_MARK_SCHEME", "END_MARK_SCHEME", "METADATA_KEY", "TEMPLATE_NAME", "TEMPLATES_DIR", "MarkScheme",
           "split_mark_scheme", "mark_schemes", "MarkSchemeExporter", "exporter_config"]

BEGIN_MARK_SCHEME, END_MARK_SCHEME = "BEGIN MARK SCHEME", "END MARK SCHEME"
"""nbgrader's mark-scheme delimiters (``ClearMarkScheme``: a line containing one opens or closes a region)."""
METADATA_KEY = "dp_course_mark_scheme"
"""Cell metadata key, set in memory on the Formgrader's copy of a notebook, read by the template."""
TEMPLATE_NAME = "formgrade_mark_scheme"
TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
"""Holds ``formgrade_mark_scheme/`` (an nbconvert template based on nbgrader's ``formgrade``)."""

# the course's heading of a mark scheme inside a model answer: "**Mark scheme (2 points).**", "## Mark scheme", ...
_SCHEME_HEADING = re.compile(r"^[ \t]*(?:\*\*|__|#+[ \t]*)?mark[ \t]+scheme\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class MarkScheme:
    """What the grader sees next to one hand-graded answer.

    Attributes:
        grade_id: the cell's nbgrader ``grade_id``.
        scheme: the marking guidance (Markdown); empty when the source has none.
        model_answer: the model answer (Markdown for a text cell, code for a code cell); may be empty.
        points: the cell's points (``None`` for a cell without any).
        cell_type: ``"markdown"`` or ``"code"`` (how to show the model answer).
    """

    grade_id: str
    scheme: str
    model_answer: str
    points: float | None
    cell_type: str

    def to_json(self) -> dict[str, Any]:
        return {"grade_id": self.grade_id, "scheme": self.scheme, "model_answer": self.model_answer,
                "points": self.points, "cell_type": self.cell_type}


def _regions(lines: list[str], begin: str, end: str) -> tuple[list[list[str]], list[str]]:
    """The regions between lines containing ``begin`` and ``end`` (delimiter lines dropped), and the lines
    outside them.  An unclosed region runs to the end, as in nbgrader."""
    regions: list[list[str]] = []
    outside: list[str] = []
    inside = False
    for line in lines:
        if begin in line:
            inside = True
            regions.append([])
        elif end in line and inside:
            inside = False
        elif inside:
            regions[-1].append(line)
        else:
            outside.append(line)
    return regions, outside


def split_mark_scheme(source: str) -> tuple[str, str]:
    """``(scheme, model_answer)`` of a hand-graded source cell.

    The scheme is every ``BEGIN/END MARK SCHEME`` region, else the part of the solution region that starts at a
    "Mark scheme" heading (``**Mark scheme ...**``, ``## Mark scheme``, ...), else empty.  The model answer is
    the solution region (every ``BEGIN/END SOLUTION`` region; the whole cell when it has none) without the
    scheme.  Both are stripped of surrounding blank lines.

    >>> split_mark_scheme("### BEGIN SOLUTION\\nProof.\\n\\n**Mark scheme (1 point).** all or nothing\\n"
    ...                   "### END SOLUTION")
    ('**Mark scheme (1 point).** all or nothing', 'Proof.')
    """
    if not isinstance(source, str):
        raise ValueError(f"source must be a str, got {type(source).__name__}")
    scheme_regions, rest = _regions(source.split("\n"), BEGIN_MARK_SCHEME, END_MARK_SCHEME)
    solution_regions, outside = _regions(rest, BEGIN_SOLUTION, END_SOLUTION)
    model = "\n\n".join("\n".join(r).strip("\n") for r in solution_regions) if solution_regions \
        else "\n".join(outside)
    scheme = "\n\n".join("\n".join(r).strip("\n") for r in scheme_regions)
    if not scheme:
        heading = _SCHEME_HEADING.search(model)
        if heading is not None:
            model, scheme = model[:heading.start()], model[heading.start():]
    return scheme.strip("\n").rstrip(), model.strip("\n").rstrip()


def mark_schemes(source_nb: NotebookNode) -> dict[str, MarkScheme]:
    """``{grade_id: MarkScheme}`` of every hand-graded cell (points and a solution region) and task cell of an
    nbgrader *source* notebook, in notebook order."""
    out: dict[str, MarkScheme] = {}
    for cell in source_nb.cells:
        gid = grade_id(cell)
        if gid is None or not ((nbutils.is_grade(cell) and nbutils.is_solution(cell)) or nbutils.is_task(cell)):
            continue
        scheme, model = split_mark_scheme(str(cell.source))
        points = cell.metadata["nbgrader"].get("points")
        out[gid] = MarkScheme(gid, scheme, model, None if points is None else float(points), str(cell.cell_type))
    return out


def exporter_config(base: Config) -> Config:
    """A copy of the Formgrader's configuration ``base`` that makes :class:`MarkSchemeExporter` render with the
    mark-scheme template (nbgrader's ``formgrade`` template extended), for that exporter only."""
    config = copy.deepcopy(base)
    nbgrader_templates = str(Path(nbutils.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates")
    config.MarkSchemeExporter.template_name = TEMPLATE_NAME
    # the course's configuration names the feedback pages' template for every HTMLExporter (nbgrader's
    # generate_feedback reads it there); this page is not a feedback page: its own template's index
    config.MarkSchemeExporter.template_file = "index.html.j2"
    config.MarkSchemeExporter.extra_template_basedirs = [str(TEMPLATES_DIR), nbgrader_templates]
    # so that the template can extend 'formgrade/index.html.j2' by that name
    config.MarkSchemeExporter.extra_template_paths = [nbgrader_templates]
    return config


class MarkSchemeExporter(HTMLExporter):
    """nbgrader's Formgrader page, with each hand-graded answer's mark scheme and model answer below it.

    ``source_dir`` is the course's source folder (``<course>/source``): the notebook of assignment ``a`` named
    ``n`` is read from ``source_dir/a/n.ipynb`` (the resources of nbgrader's ``SubmissionHandler`` name both).
    A missing or unreadable source only leaves the mark scheme out (the page says so for each answer).
    """

    def __init__(self, source_dir: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]  # traitlets' Configurable
        self.source_dir = Path(source_dir)

    def schemes_for(self, assignment: str, notebook: str) -> dict[str, MarkScheme] | None:
        """The mark schemes of one source notebook, or ``None`` when it cannot be read."""
        path = self.source_dir / assignment / f"{notebook}.ipynb"
        if not path.resolve().is_relative_to(self.source_dir.resolve()):
            return None
        try:
            return mark_schemes(nbformat.read(path, as_version=4))
        except (OSError, ValueError):
            return None

    def from_notebook_node(  # type: ignore[override]  # as nbconvert's HTMLExporter: HTML text, not a notebook
            self, nb: NotebookNode, resources: dict[str, Any] | None = None, **kw: Any) -> tuple[str, dict[str, Any]]:
        """Render ``nb`` (a copy of it carries the mark schemes; ``nb`` itself is left as it is)."""
        resources = dict(resources or {})
        assignment, notebook = resources.get("assignment_id"), resources.get("notebook_id")
        if isinstance(assignment, str) and isinstance(notebook, str):
            nb = copy.deepcopy(nb)
            schemes = self.schemes_for(assignment, notebook)
            for cell in nb.cells:
                gid = grade_id(cell)
                if gid is None or not ((nbutils.is_grade(cell) and nbutils.is_solution(cell))
                                       or nbutils.is_task(cell)):
                    continue
                found = None if schemes is None else schemes.get(gid)
                cell.metadata[METADATA_KEY] = found.to_json() if found else {"missing": True}
        html, out = super().from_notebook_node(nb, resources=resources, **kw)
        return str(html), dict(out)
