"""``dp-course student-copy DIR``: what students receive -- the notebooks, the library, the guides; nothing else.

The copy holds the student notebooks (``notebooks/``), the ``dp_course`` library, what installs and opens them
(``pyproject.toml``, ``run.py``, ``environment.yml``, ``postBuild``, the student and common JupyterLab settings
of ``jupyter_config/`` and ``tools/install_jupyter_config.py``), the student guide, the errata and a README for
students.  It never holds ``solutions/`` (answers, hidden tests, mark schemes), ``autograder/`` (the grader: its
demo and tests carry hidden-test text), ``tests/``, the instructor guide or any ``.git`` history.

Without ``autograder/``, the copy's ``pyproject.toml`` installs the ``dp_course`` package only (no
``dp-course`` command), so ``python3 run.py lab`` works from the copy; ``run.py``'s instructor commands say that
this is a student copy.  Students check their answers with the visible test cells in each notebook.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from .course import REPO_ROOT

__all__ = ["STUDENT_FILES", "make_student_copy", "student_pyproject"]

STUDENT_FILES = ("notebooks", "dp_course", "pyproject.toml", "run.py", "environment.yml", "postBuild",
                 "jupyter_config/common", "jupyter_config/student", "jupyter_config/lab_settings",
                 "jupyter_config/README.md", "tools/install_jupyter_config.py", "tools/build_site.py",
                 "tools/templates/site", "docs/student-guide.md",
                 "docs/errata.md")
"""What the copy takes from the repository (paths relative to it)."""

_TABLE = re.compile(r"^\[\[?[^\]\n]+\]\]?\s*$")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".*")

_README = """\
# dp-course: how privacy loss accumulates (student copy)

A Jupyter course on differential privacy. Everything you need to follow the lectures and solve the exercises is
here: the lecture notebooks (`notebooks/`) and the helper library they import (`dp_course/`).

## Start

You need Python 3.11 or newer and access to PyPI the first time:

```bash
python3 run.py lab      # creates .venv on first use (a few minutes), then opens the course in JupyterLab
```

`python3 run.py lab --headless` only serves it and prints the address to open. With conda instead:
`conda env create -f environment.yml`, then `bash postBuild` in that environment and `jupyter lab`.

Start with `notebooks/01_foundations/`. In each notebook, run the cells from the top, answer where it says
`# YOUR CODE HERE`, and run the test cells after each answer: they check it on the spot. Written answers are
marked by hand; some tests are kept back for grading. Hand in the notebook file (`.ipynb`) as your course asks.

Guides: [student guide](docs/student-guide.md) · [errata](docs/errata.md).
"""


def student_pyproject(text: str) -> str:
    """The repository's ``pyproject.toml`` for a copy without ``autograder/``: the ``dp_course`` package only,
    no ``dp-course`` command, no grader package data.

    Raises:
        ValueError: the text does not have the sections this expects (the repository's file changed shape).
    """
    dropped = ("[project.scripts]", "[tool.setuptools.package-data]")
    lines: list[str] = []
    skipping, found = False, set[str]()
    for line in text.splitlines(keepends=True):
        if _TABLE.match(line):
            skipping = line.strip() in dropped
            found |= {line.strip()} if skipping else set()
        if not skipping:
            lines.append(line)
    out, n = re.subn(r'include = \["dp_course\*", "autograder\*"\]', 'include = ["dp_course*"]', "".join(lines))
    if not n or found != set(dropped):
        raise ValueError("pyproject.toml must have [tool.setuptools.packages.find] include = [\"dp_course*\", "
                         "\"autograder*\"], [project.scripts] and [tool.setuptools.package-data] to be turned into "
                         "a student copy's; update autograder/course/student_copy.py with it")
    tomllib.loads(out)  # still valid TOML
    return out


def make_student_copy(dest: Path, repo: Path = REPO_ROOT) -> Path:
    """Write the student copy of the course repository ``repo`` into ``dest`` (a new or empty folder).

    Returns:
        ``dest``, resolved.

    Raises:
        ValueError: ``dest`` exists and is not an empty folder (nothing is ever overwritten), ``dest`` is inside
            ``repo``, or ``repo`` lacks ``notebooks/`` or ``dp_course/``; the message names the path.
    """
    dest, repo = Path(dest).resolve(), Path(repo).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"DIR must be a new or empty folder (a student copy never overwrites anything), got "
                         f"{str(dest)!r}")
    if dest == repo or repo in dest.parents:
        raise ValueError(f"DIR must be outside the course repository {str(repo)!r}, got {str(dest)!r}")
    for needed in ("notebooks", "dp_course"):
        if not (repo / needed).is_dir():
            raise ValueError(f"the course repository must hold {needed}/, and {str(repo)!r} does not")
    dest.mkdir(parents=True, exist_ok=True)
    for rel in STUDENT_FILES:
        src = repo / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=_IGNORE, symlinks=False)
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / "pyproject.toml").write_text(student_pyproject((repo / "pyproject.toml").read_text()))
    (dest / "README.md").write_text(_README)
    return dest
