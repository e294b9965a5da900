"""Self-study without installing: `run.py html` and `run.py lite` produce what they promise.

The HTML test builds a reduced course (the toy assignment of ``autograder.demo`` with an explorer added, and
a broken lecture) - the real lectures take ~15 s each to execute and are executed by the browser test anyway;
``python3 run.py html`` on the real course is the same code.  The JupyterLite test builds the real student
notebooks (~15 s).  Neither can run the site's Python here: Pyodide comes from its CDN at run time.
"""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parent.parent
LITE_PY = ROOT / ".venv-lite" / "bin" / "python"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={k: v for k, v in os.environ.items() if k != "DP_COURSE_STATIC_PLOTS"})


def test_html_build_executes_solutions_without_hidden_parts(tmp_path):
    solutions = tmp_path / "solutions"
    toy = write_synthetic_assignment(solutions)
    nb = nbformat.read(toy, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("from dp_course.widgets import pld_explorer\npld_explorer()"))
    nbformat.write(nb, toy)
    broken = solutions / "00_broken" / "00_broken.ipynb"
    broken.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Broken"),
                                                   nbformat.v4.new_code_cell("1 / 0")]), broken)
    out = tmp_path / "html"
    proc = _run("html", "-o", str(out), "--solutions", str(solutions))
    assert proc.returncode == 1, proc.stdout + proc.stderr          # a solution that raises fails the build
    assert "00_broken: cell 1: ZeroDivisionError" in proc.stderr
    page = (out / f"{SYNTHETIC_NAME}.html").read_text()
    assert "toy assignment" in page and "laplace_scale" in page      # executed solutions are shown
    assert "HIDDEN-TOKEN" not in page and "BEGIN HIDDEN TESTS" not in page  # hidden tests are not
    assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page
    assert "application/vnd.jupyter.widget-view+json" not in page
    assert page.count("data:image/png;base64") >= 1, "the explorer's static figure is missing"
    index = (out / "index.html").read_text()
    assert re.search(rf'href="{SYNTHETIC_NAME}\.html">A toy assignment<', index)
    assert 'href="00_broken.html"' in index


def test_html_build_names_the_lectures_it_knows():
    proc = _run("html", "--only", "99_nonexistent", "-o", os.devnull)
    assert proc.returncode != 0
    assert "no lecture named 99_nonexistent" in proc.stderr + proc.stdout
    assert "01_foundations" in proc.stderr + proc.stdout


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
        assert "%pip install -q dp-course" in first, rel
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
    assert requires == {"numpy", "scipy", "matplotlib", "ipywidgets"}
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    extensions = {e["name"] for e in config["federated_extensions"]}
    assert {"@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension"} <= extensions
    assert "@jupyter/nbgrader" not in extensions
