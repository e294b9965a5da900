"""Raise every explicit figure font size below 10 points in the lectures to ``"small"`` (issue 22 item 13).

    .venv/bin/python tools/figure_fonts.py [--check] [ROOT]

In the code cells of ``solutions/<lecture>/<lecture>.ipynb``, ``fontsize=7`` (8, 9, 9.5, ...) becomes
``fontsize="small"``: with the course's text sizes (``dp_course.style.FONT_SIZES``, set by every setup cell
through ``use_course_fonts()``) that is 10 points, about 10 pixels on the widest lecture figure at a notebook's
width.  Idempotent (a second run finds nothing); ``--check`` only reports (exit 1 when a cell would change);
``tests/test_plotting.py`` runs it.  Afterwards regenerate the student versions (``dp-course release``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat

SMALL = re.compile(r"\bfontsize\s*=\s*(?:[0-9]|[0-9]\.[0-9]*)(?![0-9.])")


def raise_fonts(source: str) -> str:
    """``source`` with every numeric ``fontsize`` below 10 replaced by ``"small"``."""
    return SMALL.sub('fontsize="small"', source)


def update(path: Path, *, write: bool) -> int:
    """Fix one lecture; the number of code cells changed (or, with ``write=False``, that would change)."""
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            new = raise_fonts(cell.source)
            if new != cell.source:
                changed += 1
                cell.source = new
    if changed and write:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if a cell would change")
    args = parser.parse_args(argv)
    total = 0
    for path in sorted(args.root.glob("solutions/*/*.ipynb")):
        n = update(path, write=not args.check)
        if n:
            total += n
            print(f"{path.relative_to(args.root)}: {n} cells {'with small fonts' if args.check else 'fixed'}")
    return 1 if args.check and total else 0


if __name__ == "__main__":
    raise SystemExit(main())
