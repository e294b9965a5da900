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
hosts Pyodide itself passes ``--pyodide`` one of

* a Pyodide release tarball, ``pyodide-<version>.tar.bz2`` (local path or URL; Pyodide's GitHub releases): the
  core and every package; the build hands it to ``jupyterlite-pyodide-kernel``'s addon and the site fetches
  nothing from a CDN;
* Pyodide's npm package, ``pyodide-<version>.tgz`` (``registry.npmjs.org``; its members under ``package/``): the
  core only (interpreter, standard library, ``pyodide-lock.json``), no packages.  The kernel's own packages
  (micropip, IPython) and the lectures' (numpy, ...) still come from Pyodide's CDN;
* a folder holding an unpacked distribution (``pyodide.mjs`` and ``pyodide-lock.json`` in it, or in its
  ``pyodide/`` or ``package/`` subfolder), e.g. the one ``run.py fetch-pyodide`` assembles
  (``tools/fetch_pyodide.py``: the npm core plus the kernel's pure-Python packages, so Python starts offline).

For the last two the build copies the distribution to the site's ``static/pyodide/`` (where the addon looks for a
local Pyodide) and points every package of ``pyodide-lock.json`` whose file is not in it at Pyodide's CDN at the
pinned version (:func:`place_pyodide`).  When such a package cannot be fetched, the install cell says so in plain
words within 30 s (:data:`INSTALL_CELL`).  What does not work there:
``dp-course check`` and grading (no terminal, no subprocesses, no nbgrader), anything that needs the file system of
your machine; saving keeps work in the browser's storage only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
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
INSTALL_WAIT = 30
"""Seconds the install cell waits before it says in plain words what it is waiting for."""
INSTALL_GIVE_UP = 600
"""Seconds after which the install cell stops waiting for a download that does not answer."""
PACKAGES_FAILED = "The course library could not be installed in this browser"
"""The first words of the install cell's message when a package cannot be fetched (the browser test looks for
them)."""
INSTALL_CELL = f'''# JupyterLite only: install the course library (numpy, scipy, ...) into this browser tab's Python.
# A download that fails, or does not answer within {INSTALL_WAIT} s, is reported here in plain words.
import asyncio, piplite
from IPython.display import Markdown, display

_install = asyncio.ensure_future(piplite.install("dp-course"))
_done, _ = await asyncio.wait([_install], timeout={INSTALL_WAIT})
if not _done:
    display(Markdown("Still downloading after {INSTALL_WAIT} s: numpy, scipy and matplotlib are large, a slow network "
                     "takes minutes. If this does not finish, your network may be blocking the download."))
    _done, _ = await asyncio.wait([_install], timeout={INSTALL_GIVE_UP - INSTALL_WAIT})
_error = _install.exception() if _done else TimeoutError("no answer within {INSTALL_GIVE_UP // 60} minutes")
if _error is not None:
    _install.cancel()
    display(Markdown(f"""**{PACKAGES_FAILED}:** a download failed ({{str(_error).strip().rstrip(".")[:300]}}).

It needs numpy, scipy, matplotlib and scikit-learn from Pyodide's server (cdn.jsdelivr.net) and ipywidgets from
PyPI. You are probably offline, or a firewall or browser setting blocks those addresses. The code cells of this
lecture will not run here; you can still read it. What you can do: try again on another network; read the
lectures in the course's offline site (`python3 run.py site`); install the course on your machine
(`python3 run.py lab`); or ask whoever hosts this site to build it with the full Pyodide release
(`python3 run.py lite --pyodide pyodide-{PYODIDE_VERSION}.tar.bz2`), which needs no outside server."""))
    raise RuntimeError("the course library is not installed: see the message above")
'''
"""The first cell of every lecture in the site: installs ``dp_course`` (from the site's own index) and with it the
packages it needs (Pyodide's, from the CDN unless the site bundles them); says in plain words when one cannot be
fetched, within :data:`INSTALL_WAIT` seconds, and then stops Run All (the rest of the lecture needs the library)."""
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


def _distribution_root(folder: Path) -> Path:
    """The folder of an unpacked Pyodide distribution that holds ``pyodide.mjs`` (itself, ``pyodide/`` or
    ``package/``)."""
    for root in (folder, folder / "pyodide", folder / "package"):
        if (root / PYODIDE_MJS).is_file() and (root / "pyodide-lock.json").is_file():
            return root
    raise ValueError(f"--pyodide: {folder} holds no Pyodide distribution (expected {PYODIDE_MJS} and "
                     "pyodide-lock.json in it, or in its pyodide/ or package/ subfolder)")


def _check_version(root: Path, given: str) -> None:
    """A distribution that says its version (npm's ``package.json``) must be the pinned one."""
    package = root / "package.json"
    if package.is_file():
        version = json.loads(package.read_text(encoding="utf-8")).get("version")
        if version != PYODIDE_VERSION:
            raise ValueError(f"--pyodide: {given} is Pyodide {version}; this build needs Pyodide "
                             f"{PYODIDE_VERSION}, the version the installed jupyterlite-pyodide-kernel is built for")


def place_pyodide(given: str, static: Path) -> Path:
    """Copy a local Pyodide (npm package ``.tgz`` or unpacked folder) to ``static`` (``<lite dir>/static/pyodide``,
    where ``jupyterlite-pyodide-kernel``'s addon takes a local Pyodide from); returns ``static``.

    Every package of ``pyodide-lock.json`` whose file is not in the distribution is pointed at Pyodide's CDN at
    the pinned version (an absolute ``file_name``), so a core-only distribution still finds numpy & co. there.
    Bad input (no such file, not a Pyodide, another version) raises ValueError naming ``--pyodide`` and the value."""
    path = Path(given).expanduser()
    with tempfile.TemporaryDirectory(prefix="dp-course-pyodide-") as tmp:
        if path.is_file() and path.name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(path, "r:gz") as tar:
                if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later: refuse unsafe members
                    tar.extractall(tmp, filter="data")
                else:
                    tar.extractall(tmp)  # noqa: S202 - a Pyodide package the course's builder chose
            path = Path(tmp)
        elif not path.is_dir():
            raise ValueError(f"--pyodide: {given} is neither a Pyodide release tarball (.tar.bz2, path or URL), "
                             "Pyodide's npm package (.tgz) nor a folder with an unpacked Pyodide")
        root = _distribution_root(path)
        _check_version(root, given)
        shutil.copytree(root, static, ignore=shutil.ignore_patterns("*.map", "*.d.ts", "*.html", "README.md"))
    lock_path = static / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    cdn = PYODIDE_CDN.rsplit("/", 1)[0]
    for entry in lock["packages"].values():
        name = entry["file_name"]
        if "://" not in name and not (static / name).is_file():
            entry["file_name"] = f"{cdn}/{name}"
    lock_path.write_text(json.dumps(lock, indent=1), encoding="utf-8")
    return static


def build(output: Path, notebooks_dir: Path = ROOT / "notebooks", pyodide: str | None = None) -> Path:
    """Build the site into ``output`` (replaced); returns it.  ``pyodide``: a Pyodide to bundle (see the module's
    docstring: a release tarball, the npm package or an unpacked folder)."""
    with tempfile.TemporaryDirectory(prefix="dp-course-lite-") as tmp:
        work = Path(tmp)
        lite_dir = work / "lite"
        lite_dir.mkdir()
        addon_pyodide = pyodide
        if pyodide is not None and not pyodide.endswith(".tar.bz2") and "://" not in pyodide:
            place_pyodide(pyodide, lite_dir / "static" / "pyodide")
            addon_pyodide = None
        wheel = build_wheel(work)
        contents = work / "contents" / "notebooks"
        prepare_contents(contents, notebooks_dir)
        (lite_dir / "jupyter-lite.json").write_text(json.dumps(lite_config(pyodide is not None), indent=2))
        shutil.copy(LAB_SETTINGS, lite_dir / "overrides.json")
        if output.exists():
            shutil.rmtree(output)
        subprocess.run([sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir),
                        "--contents", str(contents), "--output-dir", str(output.resolve()),
                        "--piplite-wheels", str(wheel), *(["--pyodide", addon_pyodide] if addon_pyodide else [])],
                       check=True, cwd=work)
    shutil.copy(FRONT_PAGE, output / "index.html")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py lite", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "build" / "lite", help="site folder (replaced)")
    parser.add_argument("--pyodide", metavar="FILE", help="bundle this Pyodide in the site instead of loading it from "
                        "its CDN: a release tarball (.tar.bz2, path or URL: everything), the npm package (.tgz: the "
                        "core only) or a folder with an unpacked distribution (python3 run.py fetch-pyodide makes one)")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        site = build(args.output, args.notebooks, args.pyodide)
    except ValueError as error:
        parser.error(str(error))
    print(f"JupyterLite site in {site}: serve it with any static web server, e.g. "
          f"`python3 -m http.server -d {site} --bind 127.0.0.1`, and open its front page (index.html)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
