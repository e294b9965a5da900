"""End every lecture's setup cell with how the notebook shows errors and figures (issue 22 items 11 and 13).

    .venv/bin/python tools/brief_errors_setup.py [--check] [ROOT]

Each ``solutions/<lecture>/<lecture>.ipynb`` setup cell (``grade_id`` ``setup``) gets, at its end, the block ::

    # an unanswered exercise shows one line, a failing visible test its message first (dp_course.notebook);
    # figure text readable at the notebook's width (dp_course.style)
    from dp_course.notebook import brief_errors
    from dp_course.style import use_course_fonts
    use_course_fonts()
    brief_errors({"uniform_mixture_channel": "Exercise 1(a)", ...})

with one entry per function defined in an answer cell (``solution`` cells; the label from the cell's
``grade_id`` by :func:`dp_course.notebook.exercise_label`).  Idempotent: an existing block is replaced by the
current one, so re-running after lectures gain or lose exercises brings every setup cell up to date, and a
second run changes nothing.  ``--check`` only reports (exit 1 if a notebook is out of date);
``tests/test_student_view.py`` runs it.  Afterwards regenerate the student versions (``dp-course release``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat

from dp_course.notebook import exercise_label

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_rewrite import main_over_lectures  # noqa: E402 - a sibling

MARKER = "# an unanswered exercise shows one line, a failing visible test its message first (dp_course.notebook);"
HEAD = [MARKER, "# figure text readable at the notebook's width (dp_course.style)",
        "from dp_course.notebook import brief_errors", "from dp_course.style import use_course_fonts",
        "use_course_fonts()"]
WIDTH = 116


def exercises(nb: nbformat.NotebookNode) -> dict[str, str]:
    """``{function name: exercise label}`` of every public function defined in an answer cell."""
    out: dict[str, str] = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("solution"):
            continue
        label = exercise_label(str(meta.get("grade_id", "")))
        if label is None:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                out.setdefault(node.name, label)
    return out


def block(names: dict[str, str]) -> list[str]:
    """The lines appended to the setup cell (the dictionary wrapped at :data:`WIDTH` characters)."""
    items = [f'"{name}": "{label}"' for name, label in names.items()]
    one = f"brief_errors({{{', '.join(items)}}})"
    if len(one) <= WIDTH:
        return [*HEAD, one]
    lines, current = ["brief_errors({"], "    "
    for item in items:
        if len(current) + len(item) + 1 > WIDTH and current.strip():
            lines.append(current.rstrip())
            current = "    "
        current += item + ", "
    lines += [current.rstrip().rstrip(","), "})"]
    return [*HEAD, *lines]


def without_block(source: str) -> list[str]:
    """The setup cell's lines without an earlier block (from the marker to the end of the call)."""
    lines = source.splitlines()
    found = [i for i, line in enumerate(lines) if line == MARKER]
    if not found:
        return lines
    start = found[0]
    end = start
    while end < len(lines) and not (lines[end].startswith("brief_errors(") and lines[end].rstrip().endswith(")")
                                    or lines[end] == "})"):
        end += 1
    rest = lines[:start] + lines[end + 1:]
    while rest and not rest[-1].strip():
        rest.pop()
    return rest


def updated_source(source: str, names: dict[str, str]) -> str:
    """The setup cell's source ending with the current block."""
    lines = without_block(source)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join([*lines, "", *block(names)])


def update(path: Path, *, write: bool) -> bool:
    """Bring one notebook's setup cell up to date; whether it was (or, with ``write=False``, would be) changed."""
    nb = nbformat.read(path, as_version=4)
    setup = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
    if not setup:
        raise ValueError(f"{path}: no setup cell (a code cell with grade_id 'setup')")
    new = updated_source(setup[0].source, exercises(nb))
    if new == setup[0].source:
        return False
    if write:
        setup[0].source = new
        nbformat.write(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    return main_over_lectures(argv, __doc__.split("\n\n")[0], lambda path, write: update(path, write=write),
                              check_help="only report; exit 1 if a setup cell is out of date",
                              report=lambda check, _: f"setup cell {'out of date' if check else 'updated'}")


if __name__ == "__main__":
    raise SystemExit(main())
