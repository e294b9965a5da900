"""Build nbgrader course directories from the repository's ``solutions/``.

Everything that runs nbgrader (the release, the grader, the student self-check, the tests) goes through
:func:`make_course`, so there is one way to turn the instructor sources into an nbgrader course.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import nbformat
from nbgrader.api import Gradebook

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
CONFIG_FILE = Path(__file__).resolve().parent.parent / "nbgrader_config.py"
HEADER_TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "how_to_use.md"
HEADER_NOTEBOOK = "header.ipynb"
"""File name, inside a course directory, of the notebook whose cells open every student notebook
(``IncludeHeaderFooter.header`` in ``nbgrader_config.py``)."""
HEADER_CELL_ID = "how-to-use-this-notebook"

__all__ = ["REPO_ROOT", "SOLUTIONS_DIR", "NOTEBOOKS_DIR", "CONFIG_FILE", "HEADER_TEMPLATE", "HEADER_NOTEBOOK",
           "HEADER_CELL_ID", "assignments", "course_folder", "subprocess_env", "nbgrader", "header_notebook",
           "drop_header", "make_course", "submit", "autograde", "CellGrade", "read_grades", "fingerprint_dir"]


def assignments(solutions_dir: Path = SOLUTIONS_DIR) -> list[str]:
    """Names of the assignments: every ``solutions/<name>/`` that holds ``<name>.ipynb``, sorted (none if the
    folder does not exist)."""
    if not Path(solutions_dir).is_dir():
        return []
    return sorted(p.name for p in Path(solutions_dir).iterdir()
                  if p.is_dir() and (p / f"{p.name}.ipynb").is_file())


def course_folder(kind: str, given: Path | None = None) -> Path:
    """The folder of instructor sources (``kind="solutions"``) or released notebooks (``kind="notebooks"``).

    ``given`` (a command-line option) wins; else the course repository's own folder when the kit runs from a
    checkout (``python3 run.py`` or an editable install); else ``./<kind>`` in the current directory (the kit
    installed with ``pip install .``, run from a copy of the course).

    Raises:
        ValueError: no such folder with at least one lecture (``<name>/<name>.ipynb``) is found; the message
            says where it looked and which option names one.
    """
    option = {"solutions": "--solutions", "notebooks": "--notebooks"}
    if kind not in option:
        raise ValueError(f"kind must be one of {sorted(option)}, got {kind!r}")
    tried = [Path(given)] if given is not None else [REPO_ROOT / kind, Path.cwd() / kind]
    for folder in tried:
        if assignments(folder):
            return folder.resolve()
    what = "instructor sources (solutions, hidden tests)" if kind == "solutions" else "released student notebooks"
    where = " or ".join(str(p.resolve()) for p in tried)
    raise ValueError(f"{option[kind]} must be a folder of {what} with <lecture>/<lecture>.ipynb inside; none found "
                     f"in {where}. Pass {option[kind]} DIR, or run dp-course from the course repository (or a "
                     f"folder that holds its {kind}/)")


def fingerprint_dir(folder: Path) -> str:
    """A hash of every file under ``folder`` (names and contents; Jupyter's checkpoints and Python's caches left
    out): a course built from the folder must be rebuilt when it changes."""
    h = hashlib.sha256()
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts:
            h.update(p.relative_to(folder).as_posix().encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for nbgrader subprocesses: this interpreter's ``bin`` first on PATH.

    nbgrader shells out to ``alembic``; without the venv's ``bin`` on PATH that fails with
    ``FileNotFoundError: 'alembic'``.
    """
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONHASHSEED"] = env.get("PYTHONHASHSEED", "0")
    if extra:
        env.update(extra)
    return env


def nbgrader(args: Sequence[str], cwd: Path, *, timeout: float | None = None,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``python -m nbgrader ARGS`` in the course directory ``cwd`` and capture its output.

    Raises:
        RuntimeError: when ``check`` and nbgrader exits non-zero (the message carries nbgrader's output).
    """
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed with exit code {proc.returncode}:\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return proc


def header_notebook() -> nbformat.NotebookNode:
    """The notebook prepended to every student notebook: one "how to use this notebook" markdown cell.

    Its text is ``autograder/templates/how_to_use.md``; the cell id is fixed so that the release stays
    byte-for-byte reproducible.
    """
    cell = nbformat.v4.new_markdown_cell(HEADER_TEMPLATE.read_text(encoding="utf-8").rstrip("\n"))
    cell["id"] = HEADER_CELL_ID
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata = {}
    return cast(nbformat.NotebookNode, nb)


def drop_header(path: Path) -> None:
    """Remove the "how to use" cell from a copied source (the release puts it below the title), so that a
    course built from *released* notebooks (as ``dp-course check`` does) does not get the header twice."""
    nb = nbformat.read(path, as_version=4)
    kept = [cell for cell in nb.cells if cell.get("id") != HEADER_CELL_ID]
    if len(kept) != len(nb.cells):
        nb.cells = kept
        nbformat.write(nb, path)


def make_course(root: Path, names: Iterable[str] | None = None, *,
                solutions_dir: Path = SOLUTIONS_DIR) -> Path:
    """Create an nbgrader course directory at ``root`` with the given assignments generated.

    ``root/source/<a>`` is a copy of ``solutions/<a>``; ``nbgrader generate_assignment`` then fills
    ``root/release/<a>`` and the gradebook ``root/gradebook.db``.  ``root/header.ipynb`` holds the
    "how to use this notebook" cell that opens every release notebook (a source that already starts with it,
    i.e. a released notebook, has it removed first).  Returns ``root``.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIG_FILE, root / "nbgrader_config.py")
    nbformat.write(header_notebook(), root / HEADER_NOTEBOOK)
    names = list(names) if names is not None else assignments(solutions_dir)
    for name in names:
        src = Path(solutions_dir) / name
        if not (src / f"{name}.ipynb").is_file():
            raise ValueError(f"assignment must be one of {assignments(solutions_dir)}, got {name!r}")
        dst = root / "source" / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        drop_header(dst / f"{name}.ipynb")
    present = {p.name for p in (root / "source").iterdir() if p.is_dir()} if names else set()
    if names and present == set(names):
        # one nbgrader process for all of them: each start-up costs seconds (nbgrader's imports, alembic)
        nbgrader(["generate_assignment", "*", "--force", "--create"], cwd=root)
    else:
        for name in names:
            nbgrader(["generate_assignment", name, "--force", "--create"], cwd=root)
    return root


def submit(root: Path, name: str, student: str,
           notebooks: Mapping[str, nbformat.NotebookNode | Path | str]) -> Path:
    """Place one student's submission of assignment ``name`` into ``root/submitted/<student>/<name>/``.

    ``notebooks`` maps notebook names (without ``.ipynb``) to a notebook object or the path of a notebook
    file.  Any earlier submission of that student is replaced.  Returns the submission directory.
    """
    dst = Path(root) / "submitted" / student / name
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for nb_name, nb in notebooks.items():
        target = dst / f"{nb_name}.ipynb"
        if isinstance(nb, (str, Path)):
            shutil.copyfile(nb, target)
        else:
            nbformat.write(nb, target)
    return dst


def autograde(root: Path, name: str, *, student: str | None = None,
              timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``nbgrader autograde`` on assignment ``name`` for every submitted student (or only ``student``).

    Students missing from the gradebook are created.  Raises ``RuntimeError`` when nbgrader fails as a whole;
    a notebook whose cells raise is *not* a failure (its test cells score zero).
    """
    args = ["autograde", name, "--create", "--force"]
    if student is not None:
        args.append(f"--student={student}")
    return nbgrader(args, cwd=Path(root), timeout=timeout)


@dataclass(frozen=True)
class CellGrade:
    """The grade of one graded cell of one student's notebook, as stored in the gradebook."""

    student: str
    notebook: str
    grade_id: str
    score: float
    max_score: float
    auto_score: float | None
    needs_manual_grade: bool


def read_grades(root: Path, name: str) -> dict[str, dict[str, CellGrade]]:
    """Grades of assignment ``name`` from ``root/gradebook.db``: ``{student: {grade_id: CellGrade}}``.

    Grade ids are unique within an assignment's notebooks (nbgrader requires it), so one level suffices.
    """
    out: dict[str, dict[str, CellGrade]] = {}
    with Gradebook(f"sqlite:///{Path(root).resolve() / 'gradebook.db'}") as gb:
        assignment = gb.find_assignment(name)
        for submission in assignment.submissions:
            student = submission.student.id
            cells = out.setdefault(student, {})
            for nb in submission.notebooks:
                for grade in nb.grades:
                    cells[grade.name] = CellGrade(
                        student=student, notebook=nb.name, grade_id=grade.name, score=float(grade.score),
                        max_score=float(grade.max_score),
                        auto_score=None if grade.auto_score is None else float(grade.auto_score),
                        needs_manual_grade=bool(grade.needs_manual_grade))
    return out
