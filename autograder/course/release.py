"""Regenerate ``notebooks/`` (the student versions) from ``solutions/`` (the instructor sources).

    python -m autograder.course.release            # rewrite notebooks/ from solutions/
    python -m autograder.course.release --check    # only report whether notebooks/ is up to date (exit 1 if not)
    python -m autograder.course.release 01_foundations   # regenerate one lecture only

For every ``solutions/<a>/<a>.ipynb`` it builds a throw-away nbgrader course with
:func:`autograder.course.course.make_course` (which runs ``nbgrader generate_assignment``: solutions replaced by
stubs, hidden tests and mark schemes removed, outputs cleared, the "how to use this notebook" cell from
``autograder/templates/how_to_use.md`` added), then copies ``release/<a>/`` to ``notebooks/<a>/`` with the
"how to use" cell placed right below the notebook's title (:func:`place_header`), deleting files that are no
longer generated.  ``notebooks/README.md``, the students' index of lectures, is written from the sources'
titles and points.

The result depends only on ``solutions/`` and the files in ``autograder/``: running it twice changes nothing,
and a test compares ``notebooks/`` byte for byte with a fresh generation.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from collections.abc import Iterable, Sequence

import nbformat

from .cells import is_test_cell, nbgrader_meta
from .course import HEADER_CELL_ID, NOTEBOOKS_DIR, SOLUTIONS_DIR, assignments, make_course

__all__ = ["IGNORED", "INDEX_FILE", "place_header", "release_files", "collect_release", "render_index", "diff",
           "write", "release", "main"]

INDEX_FILE = "README.md"
"""The students' index of lectures, at the top of ``notebooks/``."""

IGNORED = (".ipynb_checkpoints", "__pycache__", ".DS_Store")
"""Names (files or directories) that Jupyter or the OS leave behind: never generated, never deleted."""


def _is_ignored(rel: Path) -> bool:
    return any(part in IGNORED for part in rel.parts)


def _files_under(directory: Path) -> dict[str, bytes]:
    """``{relative posix path: bytes}`` of every file under ``directory`` (ignored names skipped)."""
    out = {}
    if directory.is_dir():
        for path in sorted(directory.rglob("*")):
            rel = path.relative_to(directory)
            if path.is_file() and not _is_ignored(rel):
                out[rel.as_posix()] = path.read_bytes()
    return out


def _title_and_points(notebook_path: Path) -> tuple[str, float, float]:
    """Title (the first ``# `` heading), autograded points and manually graded points of a source notebook."""
    nb = json.loads(notebook_path.read_text(encoding="utf-8"))
    title, auto, manual = notebook_path.stem, 0.0, 0.0
    found_title = False
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if not found_title and cell["cell_type"] == "markdown":
            for line in source.splitlines():
                if line.startswith("# "):
                    title, found_title = line[2:].strip(), True
                    break
        meta = nbgrader_meta(cell)
        if is_test_cell(cell):
            auto += float(meta.get("points", 0))
        elif meta.get("grade"):  # a written answer, or code graded by hand
            manual += float(meta.get("points", 0))
    return title, auto, manual


def _fmt_points(x: float) -> str:
    return f"{x:g}"


def render_index(names: Sequence[str], solutions_dir: Path = SOLUTIONS_DIR) -> str:
    """The text of ``notebooks/README.md``: what the folder is, how to work in it, and a table of lectures."""
    rows = []
    for name in names:
        title, auto, manual = _title_and_points(Path(solutions_dir) / name / f"{name}.ipynb")
        points = _fmt_points(auto) + (f" + {_fmt_points(manual)} written" if manual else "")
        rows.append(f"| [{title}]({name}/{name}.ipynb) | {points} |")
    lines = [
        "<!-- Generated from solutions/ by `python3 run.py course release` (python -m autograder.course.release): "
        "edit the sources, not this file. -->",
        "# Lectures",
        "",
        "The course notebooks, in order. Open one, run it from the top "
        "(*Run → Restart Kernel and Run All Cells…*), read, experiment, and solve the exercises.",
        "",
        "| lecture | points |",
        "| --- | --- |",
        *rows,
        "",
        "Below its title, each notebook has a short \"how to use this notebook\" note. In brief: exercises are "
        "the sections headed *Exercise N (k points)*; the cells after each answer are its visible tests; an "
        "exercise you have not answered yet shows one line, \"not answered yet\", and *Run All* carries on; the "
        "grader also runs hidden tests, and written answers are marked by hand.",
        "",
        "## Help",
        "",
        "* **Check an answer** the way the grader will: save the notebook (Ctrl+S), open a terminal "
        "(*File → New → Terminal*) and run `dp-course check notebooks/01_foundations/01_foundations.ipynb` "
        "(your lecture's path); section 3 of the [student guide](../docs/student-guide.md) explains the output.",
        "* **The lecture and its source disagree?** The [errata](../docs/errata.md) list every error of the "
        "source documents with its correction; a lecture's \"ERRATA n\" links there.",
        "* **Stuck, or something does not work?** Section 6 of the [student guide](../docs/student-guide.md) "
        "answers the usual problems; otherwise ask your instructor or teaching assistant (course forum or office "
        "hours). Learning on your own: open an issue in the course's repository.",
        "",
    ]
    return "\n".join(lines)


def place_header(notebook: bytes) -> bytes:
    """Move the "how to use this notebook" cell of a release notebook right below its title.

    nbgrader's ``IncludeHeaderFooter`` puts the cell in front of everything; a student should first see which
    lecture this is.  The title is the first cell when it is a Markdown cell starting with ``# ``; without
    such a title, or without the header cell, the notebook is returned unchanged.  The result is written the
    way nbgrader writes notebooks (``nbformat.writes`` and a final newline), so the release stays
    reproducible byte for byte.
    """
    nb = nbformat.reads(notebook.decode("utf-8"), as_version=4)
    ids = [cell.get("id") for cell in nb.cells]
    if HEADER_CELL_ID not in ids:
        return notebook
    header = nb.cells.pop(ids.index(HEADER_CELL_ID))
    first = nb.cells[0] if nb.cells else None
    has_title = first is not None and first.cell_type == "markdown" and first.source.startswith("# ")
    nb.cells.insert(1 if has_title else 0, header)
    return (str(nbformat.writes(nb)) + "\n").encode("utf-8")


def collect_release(course_root: Path, names: Iterable[str],
                    solutions_dir: Path = SOLUTIONS_DIR) -> dict[str, bytes]:
    """The files ``notebooks/`` should hold for ``names``, read from a course built by ``make_course``.

    Returns ``{posix path relative to notebooks/: content}``, including ``README.md`` (listing ``names``).
    """
    names = list(names)
    files: dict[str, bytes] = {}
    for name in names:
        release_dir = Path(course_root) / "release" / name
        if not release_dir.is_dir():
            raise RuntimeError(f"nbgrader produced no release for {name!r} in {course_root}")
        for rel, data in _files_under(release_dir).items():
            files[f"{name}/{rel}"] = place_header(data) if rel.endswith(".ipynb") else data
    files[INDEX_FILE] = render_index(names, solutions_dir).encode("utf-8")
    return files


def release_files(names: Iterable[str] | None = None,
                  solutions_dir: Path = SOLUTIONS_DIR) -> dict[str, bytes]:
    """Generate the release of ``names`` (default: every lecture) in a temporary course; see
    :func:`collect_release` for the result."""
    names = list(names) if names is not None else assignments(solutions_dir)
    with tempfile.TemporaryDirectory(prefix="dp-course-release-") as tmp:
        root = make_course(Path(tmp) / "course", names, solutions_dir=solutions_dir)
        return collect_release(root, names, solutions_dir)


def diff(files: dict[str, bytes], notebooks_dir: Path = NOTEBOOKS_DIR, *,
         names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Compare generated ``files`` with ``notebooks_dir``.

    Returns ``{"changed": [...], "missing": [...], "stale": [...]}`` (relative paths).  With ``names``, only
    those lectures' folders (and the index) are compared; otherwise every file under ``notebooks_dir``.
    """
    on_disk = _files_under(Path(notebooks_dir))
    if names is not None:
        prefixes = tuple(f"{n}/" for n in names)
        on_disk = {k: v for k, v in on_disk.items() if k.startswith(prefixes) or k == INDEX_FILE}
    return {
        "changed": sorted(k for k in files if k in on_disk and on_disk[k] != files[k]),
        "missing": sorted(k for k in files if k not in on_disk),
        "stale": sorted(k for k in on_disk if k not in files),
    }


def write(files: dict[str, bytes], notebooks_dir: Path = NOTEBOOKS_DIR, *,
          names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Make ``notebooks_dir`` hold exactly ``files``: write changed and missing files, delete stale ones.

    Files are rewritten only when their bytes differ, so a second run touches nothing.  Returns what
    :func:`diff` reported before writing.
    """
    notebooks_dir = Path(notebooks_dir)
    report = diff(files, notebooks_dir, names=names)
    for rel in report["changed"] + report["missing"]:
        target = notebooks_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[rel])
    for rel in report["stale"]:
        (notebooks_dir / rel).unlink()
    # remove directories left empty (lectures that no longer exist); leave Jupyter's checkpoints alone
    for directory in sorted((p for p in notebooks_dir.rglob("*") if p.is_dir()), reverse=True):
        if not _is_ignored(directory.relative_to(notebooks_dir)) and not any(directory.iterdir()):
            directory.rmdir()
    return report


def release(names: Iterable[str] | None = None, *, notebooks_dir: Path = NOTEBOOKS_DIR,
            solutions_dir: Path = SOLUTIONS_DIR, check: bool = False) -> dict[str, list[str]]:
    """Regenerate ``notebooks_dir`` from ``solutions_dir`` (or, with ``check``, only compare).

    With ``names`` only those lectures are regenerated (the index always lists every lecture).
    Returns the differences found before writing (see :func:`diff`).
    """
    all_names = assignments(solutions_dir)
    if names is not None:
        names = list(names)
        unknown = [n for n in names if n not in all_names]
        if unknown:
            raise ValueError(f"lecture must be one of {all_names}, got {unknown[0]!r}")
    files = release_files(names if names is not None else all_names, solutions_dir)
    if names is not None:  # the index lists every lecture, whichever were regenerated
        files[INDEX_FILE] = render_index(all_names, solutions_dir).encode("utf-8")
    if check:
        return diff(files, notebooks_dir, names=names)
    return write(files, notebooks_dir, names=names)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m autograder.course.release [--check] [LECTURE ...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder.course.release",
        description="Regenerate the student notebooks in notebooks/ from the instructor sources in solutions/.",
        epilog="examples:\n"
               "  python -m autograder.course.release                  regenerate every lecture\n"
               "  python -m autograder.course.release 01_foundations   regenerate one lecture\n"
               "  python -m autograder.course.release --check          exit 1 if notebooks/ is out of date",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lectures", nargs="*", metavar="LECTURE",
                        help=f"lecture folder names (default: all of {', '.join(assignments()) or 'none'})")
    parser.add_argument("--check", action="store_true",
                        help="do not write; report differences and exit 1 if there are any")
    parser.add_argument("--notebooks-dir", type=Path, default=NOTEBOOKS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        report = release(args.lectures or None, notebooks_dir=args.notebooks_dir, check=args.check)
    except (ValueError, RuntimeError) as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 2
    n_diff = sum(len(v) for v in report.values())
    for kind, verb in (("changed", "changed"), ("missing", "new"), ("stale", "removed")):
        for rel in report[kind]:
            print(f"  {verb:8s} notebooks/{rel}")
    if args.check:
        print("notebooks/ is up to date" if n_diff == 0 else
              f"notebooks/ differs from solutions/ in {n_diff} file(s); run `python3 run.py course release`")
        return 1 if n_diff else 0
    print("notebooks/ was already up to date" if n_diff == 0 else f"notebooks/: {n_diff} file(s) updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
