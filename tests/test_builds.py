"""Self-study without installing: `run.py site` and `run.py lite` produce what they promise.

The site tests build reduced courses (two small student lectures; the toy assignment of ``autograder.demo`` and
a broken lecture for the solutions build) - the real site is built and read in Chromium, offline, by
``tests/browser/test_site.py``.  The JupyterLite test builds the real student
notebooks (~15 s).  Python running in the site (a local Pyodide core): ``tests/test_lite_pyodide.py`` and
``tests/browser/test_lite_python.py``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.demo import SYNTHETIC_NAME, write_synthetic_assignment
from autograder.course.student_copy import make_student_copy

ROOT = Path(__file__).resolve().parent.parent
LITE_PY = ROOT / ".venv-lite" / "bin" / "python"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={k: v for k, v in os.environ.items() if k != "DP_COURSE_STATIC_PLOTS"})


def _student_lecture(folder: Path, name: str, title: str, extra: list) -> Path:
    """A small student-version lecture: a heading with objectives, an unanswered stub, its call, ``extra``."""
    path = folder / name / f"{name}.ipynb"
    path.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {title}\n\n**Learning objectives.** After this notebook you can\n\n"
                                      "1. compute $e^\\varepsilon$;\n2. read ERRATA 5 and 6.\n"),
        nbformat.v4.new_code_cell("def answer(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"),
        nbformat.v4.new_code_cell("answer(1)"),
        *extra])
    nbformat.write(nb, path)
    return path


def test_site_student_build_reads_offline_and_links_everything(tmp_path):
    notebooks = tmp_path / "notebooks"
    _student_lecture(notebooks, "01_first", "Lecture 01 - First", [
        nbformat.v4.new_markdown_cell("Next: [lecture 02](../02_second/02_second.ipynb); see ERRATA item 3, "
                                      "not `ERRATA 4` in code."),
        nbformat.v4.new_code_cell("from dp_course.widgets import pld_explorer\npld_explorer()")])
    _student_lecture(notebooks, "02_second", "Lecture 02 - Second", [nbformat.v4.new_code_cell("print(6 * 7)")])
    out = tmp_path / "site"
    proc = _run("site", "-o", str(out), "--source", str(notebooks))
    assert proc.returncode == 0, proc.stdout + proc.stderr       # an unanswered exercise is not a build error
    first, second = (out / "01_first.html").read_text(), (out / "02_second.html").read_text()
    assert "not answered yet" in first and "Traceback" not in first
    assert first.count("NotImplementedError") == 1, "only the stub's own `raise` line, no error output"
    assert 'href="02_second.html"' in first and 'rel="next"' in first and 'rel="prev"' in second
    assert 'href="errata.html#erratum-3"' in first and 'href="errata.html#erratum-5"' in first
    assert 'href="errata.html#erratum-6"' in first and "erratum-4" not in first     # code spans stay as they are
    assert "Student version" in first and "42" in second
    assert "application/vnd.jupyter.widget-view+json" not in first
    assert first.count("data:image/png;base64") >= 1, "the explorer's static figure is missing"
    for page in (first, second):
        assert 'src="_static/mathjax/MathJax.js' in page
        assert not re.search(r'<script[^>]+src="(https?:)?//', page), "a script from the network"
    assert (out / "_static" / "mathjax" / "MathJax.js").is_file()
    errata = (out / "errata.html").read_text()
    for n in (3, 5, 6):
        assert f'id="erratum-{n}"' in errata
    index = (out / "index.html").read_text()
    assert 'href="01_first.html">Lecture 01 - First<' in index and "compute $e^\\varepsilon$" in index


def test_site_solutions_build_shows_solutions_without_hidden_parts(tmp_path):
    solutions = tmp_path / "solutions"
    toy = write_synthetic_assignment(solutions)
    broken = solutions / "00_broken" / "00_broken.ipynb"
    broken.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Broken"),
                                                   nbformat.v4.new_code_cell("1 / 0")]), broken)
    out = tmp_path / "site"
    proc = _run("site", "--solutions", "-o", str(out), "--source", str(solutions))
    assert proc.returncode == 1, proc.stdout + proc.stderr          # a solution that raises fails the build
    assert "00_broken: cell 1: ZeroDivisionError" in proc.stderr
    page = (out / f"{toy.stem}.html").read_text()
    assert "toy assignment" in page and "laplace_scale" in page      # executed solutions are shown
    assert "HIDDEN-TOKEN" not in page and "BEGIN HIDDEN TESTS" not in page  # hidden tests are not
    assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page
    assert "Solutions: this build shows the full answer" in page
    index = (out / "index.html").read_text()
    assert re.search(rf'href="{SYNTHETIC_NAME}\.html">A toy assignment<', index)
    assert 'href="00_broken.html"' in index


def test_site_build_names_the_lectures_it_knows():
    proc = _run("site", "--only", "99_nonexistent", "-o", os.devnull)
    assert proc.returncode != 0
    assert "no lecture named 99_nonexistent" in proc.stderr + proc.stdout
    assert "01_foundations" in proc.stderr + proc.stdout


DISTRIBUTIONS = {"numpy": "numpy", "scipy": "scipy", "matplotlib": "matplotlib", "cycler": "matplotlib",
                 "sklearn": "scikit-learn", "ipywidgets": "ipywidgets"}
"""Top-level module the library imports -> the distribution that provides it in Pyodide / PyPI."""
FROM_THE_KERNEL = {"IPython"}
"""Modules every Jupyter kernel has, the Pyodide kernel included (not declared by the wheel)."""


def _library_imports() -> tuple[set[str], set[str]]:
    """Third-party top-level modules ``dp_course`` imports: (always, only inside ``try: ... except ImportError``)."""
    always: set[str] = set()
    guarded: set[str] = set()

    def visit(node: ast.AST, in_try: bool) -> None:
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            for child in node.body:
                visit(child, True)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, in_try)
            return
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("__future__", "dp_course"):
                (guarded if in_try else always).add(top)
        for child in ast.iter_child_nodes(node):
            visit(child, in_try)

    for path in (ROOT / "dp_course").rglob("*.py"):
        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return always, guarded - always


def _lite_runtime_dependencies() -> list[str]:
    tree = ast.parse((ROOT / "tools" / "build_lite.py").read_text(encoding="utf-8"))
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "RUNTIME_DEPENDENCIES" for t in n.targets)]
    deps: list[str] = ast.literal_eval(value)
    return deps


def test_the_lite_wheel_declares_every_package_the_library_needs():
    """The JupyterLite wheel's requirements cover what ``dp_course`` imports unconditionally (Pyodide installs
    nothing else), and what it may do without (dp-accounting, ipywidgets) is imported only under a guard."""
    always, guarded = _library_imports()
    unknown = always - FROM_THE_KERNEL - set(DISTRIBUTIONS)
    assert not unknown, f"dp_course imports {sorted(unknown)}: declare them in tools/build_lite.py"
    needed = {DISTRIBUTIONS[m] for m in always - FROM_THE_KERNEL}
    assert needed <= set(_lite_runtime_dependencies()), sorted(needed - set(_lite_runtime_dependencies()))
    assert "dp_accounting" in guarded and "sklearn" in always


def test_lite_build_has_the_student_notebooks_and_the_wheel(tmp_path):
    if not LITE_PY.exists():
        reason = ("the JupyterLite tools are not installed (.venv-lite; `python3 run.py test` or `run.py lite` "
                  "sets them up)")
        if os.environ.get("DP_COURSE_CI") == "1":
            pytest.fail(reason + " (required in CI: DP_COURSE_CI=1)")
        pytest.skip(reason)
    site = tmp_path / "site"
    proc = _run("lite", "-o", str(site))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (site / "index.html").is_file() and (site / "lab" / "index.html").is_file()
    lectures = sorted(p.relative_to(ROOT / "notebooks") for p in (ROOT / "notebooks").glob("*/*.ipynb"))
    assert lectures
    for rel in lectures:
        nb = json.loads((site / "files" / rel).read_text())
        first = "".join(nb["cells"][0]["source"])
        assert 'piplite.install("dp-course")' in first and "could not be installed in this browser" in first, rel
        original = nbformat.read(ROOT / "notebooks" / rel, as_version=4)
        assert len(nb["cells"]) == len(original.cells) + 1
    assert (site / "files" / "README.md").is_file()
    index = json.loads((site / "pypi" / "all.json").read_text())
    releases = index["dp-course"]["releases"]
    (files,) = releases.values()
    wheel = site / "pypi" / Path(files[0]["url"]).name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
    library = {p.relative_to(ROOT).as_posix() for p in (ROOT / "dp_course").rglob("*.py")}
    assert library <= set(names), f"missing from the wheel: {sorted(library - set(names))}"   # subpackages too
    assert not any(n.startswith("autograder/") for n in names), "the grading tools must stay out of the browser"
    requires = set(re.findall(r"^Requires-Dist: ([A-Za-z0-9_.\-]+)", meta, re.M))
    assert requires == {"numpy", "scipy", "matplotlib", "scikit-learn", "ipywidgets"}
    # lecture 06's exact multipliers travel with the library (dp-accounting has no Pyodide build)
    assert "dp_course/data/pld_multipliers.json" in names
    for rel in lectures:
        text = (site / "files" / rel).read_text()
        assert not re.search(r"\b(from|import)\s+dp_accounting\b", text), f"{rel} imports dp-accounting"
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    extensions = {e["name"] for e in config["federated_extensions"]}
    assert {"@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension"} <= extensions
    assert "@jupyter/nbgrader" not in extensions


def test_site_builds_in_a_student_copy(tmp_path):
    """A student copy has no autograder/ and no solutions/: its own tools/build_site.py still builds the site."""
    copy = make_student_copy(tmp_path / "copy")
    assert not (copy / "autograder").exists() and not (copy / "solutions").exists()
    out = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if k != "DP_COURSE_STATIC_PLOTS"}
    proc = subprocess.run([sys.executable, str(copy / "tools" / "build_site.py"), "--only", "01_foundations",
                           "-o", str(out)], cwd=copy, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    page = (out / "01_foundations.html").read_text()
    assert "Student version" in page and "BEGIN SOLUTION" not in page
    assert (out / "errata.html").is_file() and (out / "guide.html").is_file()
