"""Build a read-only HTML version of every lecture: the solutions, executed, without nbgrader's hidden parts.

    python3 run.py html [-o DIR] [--only NAME ...]      (default DIR: build/html; open DIR/index.html)

For each ``solutions/<name>/<name>.ipynb``: hidden tests and mark schemes are removed (nbgrader's own
``ClearHiddenTests`` / ``ClearMarkScheme``), the ``BEGIN/END SOLUTION`` marker lines are dropped, the notebook
is executed in a fresh kernel (in its own folder) with the explorers drawing static figures
(``DP_COURSE_STATIC_PLOTS=1``) and without storing widget state, and nbconvert's ``lab`` template writes
``<name>.html``; ``index.html`` links them.  An error in any cell fails the build (exit status 1, the cells
listed) - a solution notebook runs clean.  MathJax is loaded from its CDN by the reader's browser.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import jinja2
import nbformat
from nbconvert import HTMLExporter
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.cells import strip_solution_markers  # noqa: E402
from autograder.preprocessors.headless import NotebookClient  # noqa: E402
from dp_course.widgets import STATIC_ENV  # noqa: E402

TEMPLATES = Path(__file__).resolve().parent / "templates"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def lectures(solutions_dir: Path, only: list[str] | None = None) -> list[Path]:
    """The source notebooks ``solutions/<name>/<name>.ipynb`` (all, or those named in ``only``)."""
    found = sorted(p / f"{p.name}.ipynb" for p in solutions_dir.iterdir() if (p / f"{p.name}.ipynb").is_file())
    if only:
        missing = sorted(set(only) - {p.stem for p in found})
        if missing:
            raise SystemExit(f"run.py html: no lecture named {', '.join(missing)} in {solutions_dir} "
                             f"(there are: {', '.join(p.stem for p in found)})")
        found = [p for p in found if p.stem in only]
    return found


def reader_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook a reader sees: no hidden tests, no mark schemes, no solution markers."""
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    nb, _ = ClearMarkScheme().preprocess(nb, {})
    for cell in nb.cells:
        cell.source = strip_solution_markers(cell.source)
    return nb


def drop_widget_views(nb: nbformat.NotebookNode) -> None:
    """Widget views need a live kernel: keep what the widget drew, drop the view itself."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]


def title(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        m = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE) if cell.cell_type == "markdown" else None
        if m:
            return m.group(1).strip()
    return fallback


def build_one(source: Path, out_dir: Path, timeout: int) -> tuple[str, list[str]]:
    """Execute and export one lecture; returns its title and the errors its cells raised."""
    nb = reader_version(nbformat.read(source, as_version=4))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            store_widget_state=False, resources={"metadata": {"path": str(source.parent)}})
    client.execute()
    errors = [f"{source.stem}: cell {i}: {o.ename}: {o.evalue}" for i, c in enumerate(nb.cells)
              if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    drop_widget_views(nb)
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb, resources={"metadata": {"name": source.stem}})
    (out_dir / f"{source.stem}.html").write_text(html, encoding="utf-8")
    return title(nb, source.stem), errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py html", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "build" / "html", help="output folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these lectures (e.g. 01_foundations)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sources = lectures(args.solutions, args.only)
    os.environ[STATIC_ENV] = "1"           # inherited by the kernels: explorers draw static figures
    os.environ.pop("MPLBACKEND", None)     # inline figures
    args.output.mkdir(parents=True, exist_ok=True)
    entries, errors = [], []
    for source in sources:
        started = time.monotonic()
        name, errs = build_one(source, args.output, args.timeout)
        entries.append({"file": f"{source.stem}.html", "title": name})
        errors += errs
        print(f"run.py html: {source.stem}.html ({time.monotonic() - started:.0f} s"
              f"{', ' + str(len(errs)) + ' errors' if errs else ''})", flush=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    (args.output / "index.html").write_text(env.get_template("html_index.html.j2").render(lectures=entries),
                                            encoding="utf-8")
    print(f"run.py html: open {args.output / 'index.html'}")
    if errors:
        print("run.py html: cells raised errors (a solution must run clean):\n  " + "\n  ".join(errors),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
