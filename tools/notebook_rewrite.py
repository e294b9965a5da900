"""What the tools that rewrite the lecture sources share: find them, rewrite cells, report, check or write.

``tools/figure_fonts.py``, ``tools/link_errata.py`` and ``tools/brief_errors_setup.py`` each change some cells of
every ``solutions/<lecture>/<lecture>.ipynb`` with a pure function of the cell's text.  Each is idempotent and
has a ``--check`` mode (report only, exit 1 when something would change) that a test runs.  This module holds
that loop once; a tool supplies which cells and how their text changes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parent.parent


def lecture_sources(root: Path) -> list[Path]:
    """The instructor's lecture notebooks under ``root`` (``solutions/<lecture>/<lecture>.ipynb``), sorted."""
    return sorted(root.glob("solutions/*/*.ipynb"))


def rewrite_cells(path: Path, rewrite: Callable[[str], str], select: Callable[[nbformat.NotebookNode], bool], *,
                  write: bool) -> int:
    """Apply ``rewrite`` to the source of every cell of ``path`` that ``select`` accepts; the number of cells that
    change (with ``write=False`` nothing is written: the number that *would* change)."""
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell in nb.cells:
        if select(cell):
            new = rewrite(cell.source)
            if new != cell.source:
                changed += 1
                cell.source = new
    if changed and write:
        nbformat.write(nb, path)
    return changed


def of_type(cell_type: str) -> Callable[[nbformat.NotebookNode], bool]:
    """A ``select`` for :func:`rewrite_cells`: the cells of one type (``"code"``, ``"markdown"``)."""
    return lambda cell: bool(cell.cell_type == cell_type)


def parse_args(description: str, argv: list[str] | None, check_help: str) -> argparse.Namespace:
    """The tools' command line: an optional repository ``root`` (default: this one) and ``--check``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("root", nargs="?", type=Path, default=REPO_ROOT)
    parser.add_argument("--check", action="store_true", help=check_help)
    return parser.parse_args(argv)


def run_over_lectures(root: Path, update: Callable[[Path, bool], int | bool], *, check: bool,
                      report: Callable[[Path, int], str]) -> list[Path]:
    """Call ``update(path, write)`` on every lecture (``write`` is ``not check``) and print ``report(path, n)``
    for each one it changed (``n`` cells, or ``True``); the lectures changed (or that would change)."""
    stale = []
    for path in lecture_sources(root):
        n = int(update(path, not check))
        if n:
            stale.append(path)
            print(f"{path.relative_to(root)}: {report(path, n)}")
    return stale


def main_over_lectures(argv: list[str] | None, description: str, update: Callable[[Path, bool], int | bool], *,
                       check_help: str, report: Callable[[bool, int], str]) -> int:
    """A whole tool's ``main``: parse the command line (:func:`parse_args`), run ``update`` over the lectures
    (:func:`run_over_lectures`; ``report(check, n)`` is the line printed per lecture) and return the exit code
    (1 when ``--check`` found a lecture to change)."""
    args = parse_args(description, argv, check_help)
    stale = run_over_lectures(args.root, update, check=args.check, report=lambda _, n: report(args.check, n))
    return 1 if args.check and stale else 0
