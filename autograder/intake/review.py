"""What the instructor should look at in a submission: suspicious code lines and changed test cells.

A reviewing aid, not a defence (the sandbox and the test guard are the defences): the report lists these under
the submission (:class:`~autograder.intake.events.EventKind` ``SUSPICIOUS_CODE`` and ``TEST_CELLS_CHANGED``).
"""

from __future__ import annotations

import re

from nbformat.notebooknode import NotebookNode

from ..course.cells import grade_id, is_instructor_cell, is_test_cell, nbgrader_meta

__all__ = ["SUSPICIOUS", "suspicious_lines", "changed_test_cells"]

SUSPICIOUS = re.compile(
    r"get_ipython|\bIPython\b|ipykernel|sys\.modules|__dict__|__class__|__builtins__|\bbuiltins\b|"
    r"setattr\s*\(|globals\s*\(\s*\)\s*\[|\bgc\.|\binspect\.|ctypes|_getframe|settrace|setprofile|"
    r"\b(?:np|numpy|math|cmath)\.\w+\s*=[^=]|\bisclose\s*=[^=]|\ballclose\s*=[^=]|"
    r"os\.(?:system|fork|kill|_exit|exec\w*|spawn\w*|setsid|chmod|remove|unlink)|\bsubprocess\b|"
    r"multiprocessing|\bsignal\.|\bsocket\b|urllib|requests\.|http\.client|"
    r"sys\.exit|\bexit\s*\(|\bquit\s*\(|open\s*\(\s*['\"]/|\.\./|gradebook|\bsolutions?/")
"""Code that reaches into the kernel, the import system, other modules' attributes, processes, the network or
the file system outside the working folder."""


def suspicious_lines(nb: NotebookNode) -> list[str]:
    """Lines of student-editable code cells that match :data:`SUSPICIOUS` (at most 40, ``cell <i>: <line>``)."""
    found: list[str] = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or is_instructor_cell(cell):
            continue
        for line in str(cell.get("source", "")).splitlines():
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if SUSPICIOUS.search(s):
                found.append(f"cell {i}: {s[:160]}")
    return found[:40]


def changed_test_cells(nb: NotebookNode, release_nb: NotebookNode) -> list[str]:
    """How the submitted notebook's test cells differ from the release's (nbgrader restores them when grading)."""
    changes: list[str] = []
    subs: dict[str, list[NotebookNode]] = {}
    for c in nb.get("cells", []):
        gid = grade_id(c)
        if gid:
            subs.setdefault(gid, []).append(c)
    for c in release_nb.cells:
        gid = grade_id(c)
        if not gid or not is_test_cell(c):
            continue
        meta = nbgrader_meta(c)
        found = subs.get(gid, [])
        if not found:
            changes.append(f"test cell {gid} was deleted (nbgrader put it back)")
        elif len(found) > 1:
            changes.append(f"test cell {gid} appears {len(found)} times (nbgrader graded the last one)")
        else:
            got = found[-1]
            if str(got.get("source", "")) != str(c.source) or nbgrader_meta(got).get("points") != meta.get("points") \
                    or got.get("cell_type") != c.cell_type:
                changes.append(f"test cell {gid} was edited (nbgrader restored the original)")
    return changes
