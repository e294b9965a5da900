"""The course site: every lecture executed and rendered as HTML that reads offline, with an index and the errata.

    python3 run.py site [-o DIR] [--only NAME ...] [--jobs N]        (default DIR: build/site; open DIR/index.html)
    python3 run.py site --solutions [-o DIR] ...                      (instructors: the solutions build)

The default build is the **student version**: the notebooks of ``notebooks/`` exactly as students get them,
executed as a Run All of the untouched notebook would run them (an unanswered exercise shows a one-line note, the
lecture goes on).  ``--solutions`` (``tools/build_solutions_site.py``, instructor kit only) builds the same site
from ``solutions/`` with hidden tests and mark schemes removed and an orange banner on every page saying that it
holds the answers; its default folder is ``build/site-solutions``.

Every page works with no network: MathJax 2 is copied into ``DIR/_static/mathjax/`` from the
``jupyter-server-mathjax`` package the project installs (STIX-Web fonts), no script comes from a CDN, figures and
the explorers' static fallbacks are images inside the page, links between lectures point at the site's pages, and
every "ERRATA n" of the lectures links to its entry of ``errata.html``.  The site builder is nbconvert with a
template (``tools/templates/site/``), the tool the project already uses for its feedback pages
(``docs/design.md``, "The course site", says why not Jupyter Book).  Works in a student copy of the course.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import mistune
import nbformat
from markupsafe import Markup
from nbclient import NotebookClient
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "templates" / "site"
STATIC_ENV = "DP_COURSE_STATIC_PLOTS"  # the explorers draw one static figure (dp_course.widgets.STATIC_ENV)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MATHJAX_DIR = "_static/mathjax"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
MATHJAX_URL = f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"   # relative: every page sits at the site's top
NOT_ANSWERED = "not answered yet: this is the student version of the lecture (open it in JupyterLab to answer)"

STUDENT_BANNER = ("Student version: the exercises are unanswered, as in the notebook you get. To solve them and "
                  "check your answers, open the lecture in JupyterLab, on Binder or in JupyterLite.")

_LECTURE_LINK = re.compile(r"\((?:\.\./)*(?:notebooks/|solutions/)?(?:\d\d_[A-Za-z0-9_]+/)?(\d\d_[A-Za-z0-9_]+)"
                           r"\.ipynb(#[^)]*)?\)")
_DOC_LINK = re.compile(r"\((?:\.\./)*(?:docs/)?(errata|student-guide)\.md(#[^)]*)?\)")
_MD_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`]*`")
_ERRATA = re.compile(r"\bERRATA(?: item)? (\d+)(?: and (\d+))?")
_OBJECTIVES = re.compile(r"\*\*Learning objectives\.\*\*[^\n]*\n[ \t]*\n?"
                         r"((?:[ \t]*(?:[-*]|\d+\.)[^\n]*\n?(?:[ \t]+[^\n]+\n?)*)+)")
_ERRATUM_PARA = re.compile(r"<p><strong>(\d+)\. ")


@dataclass
class Build:
    """What one build makes: which notebooks, how they are prepared, where the pages go."""

    sources: list[Path]
    output: Path
    kind: str = "student"                                   # "student" or "solutions" (the banner's style)
    banner: str = STUDENT_BANNER
    prepare: Callable[[nbformat.NotebookNode], nbformat.NotebookNode] = lambda nb: nb
    allow_unanswered: bool = True                           # NotImplementedError is a note, not a build error
    timeout: int = 120
    jobs: int = 2
    docs: Path = ROOT / "docs"
    errors: list[str] = field(default_factory=list)


def lectures(folder: Path, only: list[str] | None = None, prog: str = "run.py site") -> list[Path]:
    """The notebooks ``folder/<name>/<name>.ipynb`` (all, or those named in ``only``), in lecture order."""
    if not folder.is_dir():
        raise SystemExit(f"{prog}: no folder {folder} (it holds the lectures as <name>/<name>.ipynb)")
    found = sorted(p / f"{p.name}.ipynb" for p in folder.iterdir() if (p / f"{p.name}.ipynb").is_file())
    if only:
        missing = sorted(set(only) - {p.stem for p in found})
        if missing:
            raise SystemExit(f"{prog}: no lecture named {', '.join(missing)} in {folder} "
                             f"(there are: {', '.join(p.stem for p in found)})")
        found = [p for p in found if p.stem in only]
    if not found:
        raise SystemExit(f"{prog}: {folder} holds no lecture (<name>/<name>.ipynb)")
    return found


def title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The notebook's first level-1 heading."""
    for cell in nb.cells:
        m = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE) if cell.cell_type == "markdown" else None
        if m:
            return m.group(1).strip()
    return fallback


def objectives(nb: nbformat.NotebookNode) -> str:
    """The Markdown list that follows the notebook's "**Learning objectives.**" line ("" if there is none)."""
    for cell in nb.cells:
        m = _OBJECTIVES.search(cell.source) if cell.cell_type == "markdown" else None
        if m:
            return m.group(1)
    return ""


def link_errata(text: str) -> str:
    """Markdown with every "ERRATA n" (and "ERRATA n and m") outside links and code spans linked to ``errata.html``."""
    def one(m: re.Match[str]) -> str:
        first = f"[ERRATA {m.group(1)}](errata.html#erratum-{m.group(1)})"
        return first + (f" and [{m.group(2)}](errata.html#erratum-{m.group(2)})" if m.group(2) else "")

    out, last = [], 0
    for keep in _MD_LINK.finditer(text):
        out.append(_ERRATA.sub(one, text[last:keep.start()]))
        out.append(keep.group(0))
        last = keep.end()
    out.append(_ERRATA.sub(one, text[last:]))
    return "".join(out)


def site_links(text: str) -> str:
    """Markdown with links to other lectures and to the errata / student guide pointed at the site's pages."""
    text = _LECTURE_LINK.sub(lambda m: f"({m.group(1)}.html{m.group(2) or ''})", text)
    return _DOC_LINK.sub(lambda m: f"({'errata' if m.group(1) == 'errata' else 'guide'}.html{m.group(2) or ''})",
                         text)


def for_the_page(nb: nbformat.NotebookNode, allow_unanswered: bool) -> nbformat.NotebookNode:
    """The executed notebook as the page shows it: site links, linked errata, no widget views (they need a live
    kernel; the static figure beside them stays) and, in the student version, one line per unanswered exercise
    instead of a ``NotImplementedError`` traceback."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = link_errata(site_links(cell.source))
        elif cell.cell_type == "code":
            outputs = []
            for out in cell.outputs:
                if WIDGET_VIEW in out.get("data", {}):
                    continue
                if allow_unanswered and out.output_type == "error" and out.ename == "NotImplementedError":
                    out = nbformat.v4.new_output("stream", name="stderr", text=NOT_ANSWERED + "\n")
                outputs.append(out)
            cell.outputs = outputs
    return nb


def execute(source: Path, build: Build) -> tuple[nbformat.NotebookNode, list[str]]:
    """Run the prepared notebook in a fresh kernel, in a copy of its folder (files it writes stay out of the
    course); returns it and the errors that count (every error, or every error but an unanswered exercise's)."""
    nb = build.prepare(nbformat.read(source, as_version=4))
    with tempfile.TemporaryDirectory(prefix="dp-course-site-") as tmp:
        workdir = Path(tmp) / source.parent.name
        shutil.copytree(source.parent, workdir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"))
        NotebookClient(nb, timeout=build.timeout, kernel_name="python3", allow_errors=True,
                       store_widget_state=False, resources={"metadata": {"path": str(workdir)}}).execute()
    errors = [f"{source.stem}: cell {i}: {o.ename}: {o.evalue}" for i, c in enumerate(nb.cells)
              if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
              and not (build.allow_unanswered and o.ename == "NotImplementedError")]
    return nb, errors


def install_mathjax(output: Path) -> None:
    """Copy MathJax 2 (the ``jupyter-server-mathjax`` package's files, without translations) into the site."""
    dest = output / MATHJAX_DIR
    if (dest / "MathJax.js").is_file():
        return
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(Path(str(importlib.resources.files("jupyter_server_mathjax") / "static")), dest,
                    ignore=shutil.ignore_patterns("localization", "__pycache__"))


def markdown_html(text: str) -> Markup:
    """The project's own Markdown (docs, objectives) as HTML: tables, raw HTML kept (it is ours, not a student's)."""
    render = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    return Markup(str(render(text)))


def errata_html(text: str) -> Markup:
    """``docs/errata.md`` as HTML, with an anchor ``erratum-n`` on the full text of item n (unless the file has one:
    ``tools/link_errata.py`` writes them for JupyterLab) and ``errata-table-n`` on its table row."""
    html = str(markdown_html(site_links(text)))
    html = _ERRATUM_PARA.sub(lambda m: m.group(0) if f'id="erratum-{m.group(1)}"' in html else
                             f'<p id="erratum-{m.group(1)}"><strong>{m.group(1)}. ', html)   # once, whoever adds it
    return Markup(re.sub(r"<tr>\s*<td>(\d+)</td>", lambda m: f'<tr id="errata-table-{m.group(1)}">\n<td>'
                         f'<a href="#erratum-{m.group(1)}">{m.group(1)}</a></td>', html))


def page_nav(pages: list[dict[str, str]], i: int | None, build: Build, guide: bool) -> dict[str, Any]:
    return {"index": "index.html", "errata": "errata.html", "guide": "guide.html" if guide else "",
            "prev": pages[i - 1] if i else None,
            "next": pages[i + 1] if i is not None and i + 1 < len(pages) else None,
            "banner": build.banner, "build": build.kind}


def run(build: Build) -> int:
    """Make the whole site; returns the exit status (1 when a cell raised an error that counts)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    build.output.mkdir(parents=True, exist_ok=True)
    install_mathjax(build.output)
    os.environ[STATIC_ENV] = "1"           # inherited by the kernels: explorers draw static figures
    os.environ.pop("MPLBACKEND", None)     # inline figures
    started = time.monotonic()

    def one(source: Path) -> tuple[Path, nbformat.NotebookNode, list[str], float]:
        t0 = time.monotonic()
        nb, errs = execute(source, build)
        return source, nb, errs, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=max(1, build.jobs)) as pool:
        done = list(pool.map(one, build.sources))
    pages = [{"href": f"{s.stem}.html", "title": title(nb, s.stem), "stem": s.stem, "number": s.stem[:2]}
             for s, nb, _, _ in done]
    guide = (build.docs / "student-guide.md").is_file()
    exporter = HTMLExporter(template_name="lab", template_file="lecture.html.j2",
                            extra_template_paths=[str(TEMPLATES)], mathjax_url=MATHJAX_URL)
    for i, (source, nb, errs, seconds) in enumerate(done):
        objectives_md = objectives(nb)
        pages[i]["objectives"] = markdown_html(site_links(objectives_md)) if objectives_md else Markup("")
        html, _ = exporter.from_notebook_node(for_the_page(nb, build.allow_unanswered), resources={
            "metadata": {"name": pages[i]["title"]}, "site": page_nav(pages, i, build, guide)})
        (build.output / f"{source.stem}.html").write_text(html, encoding="utf-8")
        build.errors += errs
        size = (build.output / f"{source.stem}.html").stat().st_size
        print(f"run.py site: {source.stem}.html ({seconds:.0f} s, {size / 2**20:.1f} MB"
              f"{', ' + str(len(errs)) + ' errors' if errs else ''})", flush=True)
    nav = page_nav(pages, None, build, guide)

    def write_page(name: str, heading: str, body: Markup) -> None:
        html = env.get_template("page.html.j2").render(title=heading, body=body, site=nav, mathjax_url=MATHJAX_URL)
        (build.output / name).write_text(html, encoding="utf-8")

    heading = "How privacy loss accumulates: the lectures" + (" (solutions)" if build.kind == "solutions" else "")
    intro = ("Every lecture of the course, executed, to read in a browser – no installation and no network needed. "
             + ("This build shows the full solutions." if build.kind == "solutions" else
                "This is the student version: the exercises are left for you."))
    write_page("index.html", heading, Markup(env.get_template("index_body.html.j2").render(
        heading=heading, intro=intro, lectures=pages, site=nav)))
    write_page("errata.html", "Errata", errata_html((build.docs / "errata.md").read_text(encoding="utf-8")))
    if guide:
        write_page("guide.html", "Student guide",
                   markdown_html(site_links((build.docs / "student-guide.md").read_text(encoding="utf-8"))))
    print(f"run.py site: {len(pages)} lectures in {time.monotonic() - started:.0f} s; "
          f"open {build.output / 'index.html'}", flush=True)
    if build.errors:
        print("run.py site: cells raised errors:\n  " + "\n  ".join(build.errors), file=sys.stderr)
        return 1
    return 0


def parser(prog: str, default_output: Path, default_source: Path, doc: str) -> argparse.ArgumentParser:
    """The command line shared by the student and the solutions builds."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0], epilog=doc.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", type=Path, default=default_output,
                   help=f"output folder (default {default_output})")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these lectures (e.g. 01_foundations)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    p.add_argument("--jobs", type=int, default=2, help="lectures executed at once (default 2)")
    p.add_argument("--source", type=Path, default=default_source, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser("run.py site", ROOT / "build" / "site", ROOT / "notebooks", __doc__).parse_args(argv)
    if args.jobs < 1:
        raise SystemExit(f"run.py site: --jobs must be at least 1, got {args.jobs}")
    return run(Build(sources=lectures(args.source, args.only), output=args.output, timeout=args.timeout,
                     jobs=args.jobs))


if __name__ == "__main__":
    raise SystemExit(main())
