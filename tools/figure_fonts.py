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

from notebook_rewrite import of_type, parse_args, rewrite_cells, run_over_lectures  # noqa: E402 - a sibling

SMALL = re.compile(r"\bfontsize\s*=\s*(?:[0-9]|[0-9]\.[0-9]*)(?![0-9.])")


def raise_fonts(source: str) -> str:
    """``source`` with every numeric ``fontsize`` below 10 replaced by ``"small"``."""
    return SMALL.sub('fontsize="small"', source)


def update(path: Path, *, write: bool) -> int:
    """Fix one lecture; the number of code cells changed (or, with ``write=False``, that would change)."""
    return rewrite_cells(path, raise_fonts, of_type("code"), write=write)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv, "only report; exit 1 if a cell would change")
    stale = run_over_lectures(args.root, lambda path, write: update(path, write=write), check=args.check,
                              report=lambda _, n: f"{n} cells {'with small fonts' if args.check else 'fixed'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
