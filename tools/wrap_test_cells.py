"""Put every autograder test cell of ``solutions/`` into the one-function form of ``docs/design.md`` (issue 26).

    .venv/bin/python tools/wrap_test_cells.py [ROOT]

A test cell ``<docstring> <code>`` becomes ``<docstring> def _test_<grade_id>(): <code indented> _test_<grade_id>()``,
so that in the student's kernel it binds nothing but its own function (``tests/test_test_cells.py`` checks the
form).  Idempotent: cells already in that form are left alone.  The code must not hold multi-line strings
other than the docstring (their content would be indented too; the script refuses).  Afterwards regenerate the
student versions (``dp-course release``).  Kept for branches that still add test cells in the old form.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import nbformat


def wrap(source: str, grade_id: str) -> str:
    """The one-function form of a test cell's source (unchanged if it already has it)."""
    tree = ast.parse(source)
    name = f"_test_{grade_id}"
    if len(tree.body) == 3 and isinstance(tree.body[1], ast.FunctionDef) and tree.body[1].name == name:
        return source
    doc = tree.body[0]
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
        raise ValueError(f"test cell {grade_id} must open with a docstring")
    multi = [t.start[0] for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.STRING and t.start[0] != t.end[0] and t.start[0] != doc.lineno]
    if multi:
        raise ValueError(f"test cell {grade_id} has multi-line strings on lines {multi}: wrap it by hand")
    lines = source.splitlines()
    head, rest = lines[:doc.end_lineno], lines[doc.end_lineno:]
    while rest and not rest[0].strip():
        rest.pop(0)
    while rest and not rest[-1].strip():
        rest.pop()
    body = [("    " + line) if line.strip() else "" for line in rest] or ["    pass"]
    return "\n".join([*head, f"def {name}():", *body, "", "", f"{name}()"])


def main(root: Path) -> None:
    for path in sorted(root.glob("solutions/*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        changed = 0
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
                new = wrap(cell.source, meta["grade_id"])
                changed += new != cell.source
                cell.source = new
        if changed:
            nbformat.write(nb, path)
        print(f"{path.relative_to(root)}: {changed} test cells wrapped")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
