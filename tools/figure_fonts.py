"""Raise every explicit figure font size below 10 points in the lectures to ``"small"`` (issue 22 item 13).

    .venv/bin/python tools/figure_fonts.py [--check] [ROOT]

In the code cells of ``solutions/<lecture>/<lecture>.ipynb``, ``fontsize=7`` (8, 9, 9.5, ...) becomes
``fontsize="small"``: with the course's text sizes (``dp_course.style.FONT_SIZES``, set by every setup cell
through ``use_course_fonts()``) that is 10 points, about 10 pixels on the widest lecture figure at a notebook's
width.  Idempotent (a second run finds nothing); ``--check`` only reports (exit 1 when a cell would change);
``tests/test_plotting.py`` runs it.  Afterwards regenerate the student versions (``dp-course release``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_rewrite import main_over_lectures, of_type, rewrite_cells  # noqa: E402 - a sibling

SMALL = re.compile(r"\bfontsize\s*=\s*(?:[0-9]|[0-9]\.[0-9]*)(?![0-9.])")


def raise_fonts(source: str) -> str:
    """``source`` with every numeric ``fontsize`` below 10 replaced by ``"small"``."""
    return SMALL.sub('fontsize="small"', source)


def update(path: Path, *, write: bool) -> int:
    """Fix one lecture; the number of code cells changed (or, with ``write=False``, that would change)."""
    return rewrite_cells(path, raise_fonts, of_type("code"), write=write)


def main(argv: list[str] | None = None) -> int:
    return main_over_lectures(argv, __doc__.split("\n\n")[0], lambda path, write: update(path, write=write),
                              check_help="only report; exit 1 if a cell would change",
                              report=lambda check, n: f"{n} cells {'with small fonts' if check else 'fixed'}")


if __name__ == "__main__":
    raise SystemExit(main())
