"""Build a JupyterLite site of the course: the student notebooks, running in the browser, nothing to install.

    python3 run.py lite [-o DIR]           (default DIR: build/lite; serve it with any static web server)

Runs in ``.venv-lite`` (``run.py lite`` creates it with the ``lite`` extra of pyproject.toml only).  Steps:

1. a wheel of ``dp_course`` alone (pure Python; depends on numpy, scipy, matplotlib, scikit-learn and
   ipywidgets), built
   with setuptools from a copy of the package - the grading tools (``autograder``, nbgrader) stay out, and so does
   dp-accounting (dm-tree and absl have no Pyodide build): the wheel carries ``dp_course/data/`` instead, whose
   table of lecture 06's exact noise multipliers :mod:`dp_course.pld_calibration` reads when dp-accounting is
   missing;
2. the student notebooks (``notebooks/``, with their README), each with one cell prepended that installs
   that wheel in the browser's Python (``%pip install``, answered from the site's own package index);
3. ``jupyter lite build`` with the Pyodide kernel, the wheel in the site's index (``pypi/all.json``) and
   the JupyterLab widgets extension, so the explorers are live; the course's lab settings
   (``jupyter_config/lab_settings/overrides.json``: Markdown opens rendered, widget state saved with the notebook);
4. the site's front page (``tools/templates/lite/index.html``) replaces JupyterLite's: it checks within 20 s
   that the browser can fetch Pyodide, then opens JupyterLab on the lecture index (the notebooks' ``README.md``), or
   says in plain words why Python cannot start and what to do instead of leaving a kernel that never starts.

At run time the site loads Pyodide and its packages (numpy, scipy, matplotlib, scikit-learn) from Pyodide's CDN -
the version pinned here, :data:`PYODIDE_VERSION`, the one the installed ``jupyterlite-pyodide-kernel`` is built for
- and ipywidgets from PyPI: the only downloads, made by the reader's browser, never by this build. A course that
hosts Pyodide itself passes ``--pyodide FILE`` (a Pyodide release tarball, ``pyodide-<version>.tar.bz2``, local
path or URL): the build copies it into the site and the site fetches nothing from a CDN. What does not work there:
``dp-course check`` and grading (no terminal, no subprocesses, no nbgrader), anything that needs the file system of
your machine; saving keeps work in the browser's storage only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from jupyterlite_pyodide_kernel.constants import PYODIDE_KERNEL_PLUGIN_ID, PYODIDE_MJS, PYODIDE_URL, PYODIDE_VERSION

ROOT = Path(__file__).resolve().parent.parent
FRONT_PAGE = Path(__file__).resolve().parent / "templates" / "lite" / "index.html"
LAB_SETTINGS = ROOT / "jupyter_config" / "lab_settings" / "overrides.json"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/{PYODIDE_MJS}"
RUNTIME_DEPENDENCIES = ["numpy", "scipy", "matplotlib", "scikit-learn", "ipywidgets"]
"""What the wheel declares: every package ``dp_course`` imports (scikit-learn: ``dp_course.datasets``), each one
in Pyodide's own distribution but ipywidgets (from PyPI); ``tests/test_builds.py`` checks the list against the
library's imports."""
INSTALL_CELL_ID = "jupyterlite-install-dp-course"
INSTALL_CELL = ("# JupyterLite only: install the course library into this browser tab's Python (from this site).\n"
                "%pip install -q dp-course")
LITE_CONFIG = {
    "jupyter-lite-schema-version": 0,
    "jupyter-config-data": {
        "appName": "dp-course (JupyterLite)",
        # grading tools need a server: keep nbgrader's extension out of the browser-only site
        "disabledExtensions": ["@jupyter/nbgrader"],
    },
}


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def build_wheel(work: Path) -> Path:
    """A wheel of ``dp_course`` only, built by setuptools (no build isolation: nothing is downloaded)."""
    src = work / "wheel-src"
    shutil.copytree(ROOT / "dp_course", src / "dp_course", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    deps = ", ".join(json.dumps(d) for d in RUNTIME_DEPENDENCIES)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "dp-course"\nversion = "{_version()}"\nrequires-python = ">=3.11"\n'
        f"dependencies = [{deps}]\n"
        'description = "The helper library of the dp-course notebooks (JupyterLite build)."\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["dp_course*"]\n\n'
        '[tool.setuptools.package-data]\ndp_course = ["data/*.json"]\n')
    out = work / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "--disable-pip-version-check", "-w", str(out), str(src)], check=True)
    (wheel,) = out.glob("dp_course-*.whl")
    return wheel


def prepare_contents(dest: Path, notebooks_dir: Path) -> list[Path]:
    """Copy the student notebooks (and their README) with the install cell prepended; returns the notebooks."""
    shutil.copytree(notebooks_dir, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    notebooks = sorted(dest.rglob("*.ipynb"))
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))  # nbformat 4.5 JSON (.venv-lite has no nbformat)
        nb["cells"].insert(0, {"cell_type": "code", "id": INSTALL_CELL_ID, "metadata": {}, "execution_count": None,
                               "outputs": [], "source": INSTALL_CELL.splitlines(keepends=True)})
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return notebooks


def lite_config(local_pyodide: bool) -> dict:
    """``jupyter-lite.json``: the app's settings and, unless the build bundles Pyodide, the pinned CDN address."""
    config = json.loads(json.dumps(LITE_CONFIG))
    if not local_pyodide:
        config["jupyter-config-data"]["litePluginSettings"] = {PYODIDE_KERNEL_PLUGIN_ID: {PYODIDE_URL: PYODIDE_CDN}}
    return config


def build(output: Path, notebooks_dir: Path = ROOT / "notebooks", pyodide: str | None = None) -> Path:
    """Build the site into ``output`` (replaced); returns it.  ``pyodide``: a Pyodide tarball to bundle."""
    with tempfile.TemporaryDirectory(prefix="dp-course-lite-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        contents = work / "contents" / "notebooks"
        prepare_contents(contents, notebooks_dir)
        lite_dir = work / "lite"
        lite_dir.mkdir()
        (lite_dir / "jupyter-lite.json").write_text(json.dumps(lite_config(pyodide is not None), indent=2))
        shutil.copy(LAB_SETTINGS, lite_dir / "overrides.json")
        if output.exists():
            shutil.rmtree(output)
        subprocess.run([sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir),
                        "--contents", str(contents), "--output-dir", str(output.resolve()),
                        "--piplite-wheels", str(wheel), *(["--pyodide", pyodide] if pyodide else [])],
                       check=True, cwd=work)
    shutil.copy(FRONT_PAGE, output / "index.html")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py lite", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "build" / "lite", help="site folder (replaced)")
    parser.add_argument("--pyodide", metavar="FILE", help="bundle this Pyodide release tarball (path or URL) in the "
                        "site instead of loading Pyodide from its CDN")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    site = build(args.output, args.notebooks, args.pyodide)
    print(f"JupyterLite site in {site}: serve it with any static web server, e.g. "
          f"`python3 -m http.server -d {site} --bind 127.0.0.1`, and open its front page (index.html)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
