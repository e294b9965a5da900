"""The solutions build of the course site (instructors; ``python3 run.py site --solutions``).

    python3 run.py site --solutions [-o DIR] [--only NAME ...] [--jobs N]   (default DIR: build/site-solutions)

The same site as ``tools/build_site.py`` builds for students, made from ``solutions/``: nbgrader's own
``ClearHiddenTests`` and ``ClearMarkScheme`` remove the hidden tests and mark schemes, the ``BEGIN/END SOLUTION``
marker lines are dropped, and every page carries an orange banner saying that it shows the answers.  A cell that
raises fails the build (exit status 1, the cells listed): a solution runs clean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme

import build_site

sys.path.insert(0, str(build_site.ROOT))

from autograder.course.cells import strip_solution_markers  # noqa: E402

SOLUTIONS_BANNER = ("Solutions: this build shows the full answer to every exercise. If you are learning, try each "
                    "exercise first in the student version.")


def reader_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook a reader of the solutions sees: no hidden tests, no mark schemes, no solution markers."""
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    nb, _ = ClearMarkScheme().preprocess(nb, {})
    for cell in nb.cells:
        cell.source = strip_solution_markers(cell.source)
    return nb


def main(argv: list[str] | None = None) -> int:
    root = build_site.ROOT
    args = build_site.parser("run.py site --solutions", root / "build" / "site-solutions", root / "solutions",
                             __doc__).parse_args(argv)
    if args.jobs < 1:
        raise SystemExit(f"run.py site --solutions: --jobs must be at least 1, got {args.jobs}")
    sources = build_site.lectures(args.source, args.only, prog="run.py site --solutions")
    return build_site.run(build_site.Build(sources=sources, output=Path(args.output), kind="solutions",
                                           banner=SOLUTIONS_BANNER, prepare=reader_version, allow_unanswered=False,
                                           timeout=args.timeout, jobs=args.jobs))


if __name__ == "__main__":
    raise SystemExit(main())
