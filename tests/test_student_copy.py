"""``dp-course student-copy DIR`` (autograder.course.student_copy): what students receive holds no solution, no hidden
test, no mark scheme, no grader and no history -- and still installs and opens."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import is_solution

from autograder import cli
from autograder.course.course import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR
from autograder.course.student_copy import make_student_copy, student_pyproject

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME",
           "END MARK SCHEME")
_BLOCK = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)\n(.*?)### END \1", re.S)


GENERIC = re.compile(r"^(\w+ = np\.asarray\(\w+(, dtype=\w+)?\)|with np\.errstate\(.*\):)$")
"""NumPy idioms that solutions and the library share (converting an argument, silencing a division warning): not
an answer.  Everything else a solution line says must be absent from the copy."""


def _lines(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines()}


def _secret_lines() -> set[str]:
    """Every substantial line (25+ characters) of a solution, hidden test or mark scheme in ``solutions/``, or of
    a solution cell of a written answer, that the released notebooks do not also contain."""
    secret: set[str] = set()
    for path in SOLUTIONS_DIR.glob("*/*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for m in _BLOCK.finditer(cell.source + "\n"):
                secret |= _lines(m.group(2))
            if cell.cell_type == "markdown" and is_solution(cell):
                secret |= _lines(cell.source)
    public: set[str] = set()
    for path in NOTEBOOKS_DIR.glob("*/*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            public |= _lines(cell.source)
    return {line for line in secret - public if len(line) >= 25 and not GENERIC.match(line)}


def _texts(root: Path):
    """(path, lines) of every file of the copy; a notebook's cells and outputs as text."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            parts = [c.source for c in nb.cells]
            parts += [str(o) for c in nb.cells for o in c.get("outputs", [])]
            yield path, "\n".join(parts)
        else:
            yield path, path.read_bytes().decode("utf-8", "replace")


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("students") / "dp-course"
    assert cli.main(["student-copy", str(dest)]) == 0
    return dest


def test_the_scan_finds_what_it_looks_for():
    """The secret lines are many and real: the scan below could fail (run on solutions/ itself it would)."""
    secret = _secret_lines()
    assert len(secret) > 200
    hits = sum(1 for _, text in _texts(SOLUTIONS_DIR) if _lines(text) & secret)
    assert hits == len(list(SOLUTIONS_DIR.glob("*/*.ipynb")))


def test_no_solution_hidden_test_or_mark_scheme_in_the_copy(copy: Path):
    secret = _secret_lines()
    scanned = 0
    for path, text in _texts(copy):
        scanned += 1
        assert not [m for m in MARKERS if m in text], path
        leaked = _lines(text) & secret
        assert not leaked, f"{path.relative_to(copy)}: {sorted(leaked)[:3]}"
    assert scanned > 30


def test_the_copy_holds_what_students_need_and_nothing_else(copy: Path):
    top = sorted(p.name for p in copy.iterdir())
    assert top == ["README.md", "docs", "dp_course", "environment.yml", "jupyter_config", "notebooks", "postBuild",
                   "pyproject.toml", "run.py", "tools"]
    assert sorted(p.name for p in (copy / "docs").iterdir()) == ["errata.md", "student-guide.md"]
    assert {p.name for p in (copy / "notebooks").iterdir() if p.is_dir()} == \
        {p.name for p in NOTEBOOKS_DIR.iterdir() if p.is_dir()}
    assert not list(copy.rglob(".git")) and not list(copy.rglob("__pycache__"))
    assert not (copy / "jupyter_config" / "instructor").exists()
    assert "python3 run.py lab" in (copy / "README.md").read_text()


def test_the_copy_installs_the_library_only_and_run_py_knows_it(copy: Path, tmp_path: Path):
    text = (copy / "pyproject.toml").read_text()
    assert '"autograder*"' not in text and "autograder.cli" not in text and "[project.scripts]" not in text
    assert 'include = ["dp_course*"]' in text
    # the wheel pip builds from the copy (what `run.py lab` installs with `pip install -e`)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(copy)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("dp_course-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("dp_course/") for n in names) and not any(n.startswith("autograder") for n in names)
    assert not any(n.endswith("entry_points.txt") for n in names)
    # run.py lab's JupyterLab finds its settings in the copy; the instructor commands say what this is
    spec = importlib.util.spec_from_file_location("student_run", copy / "run.py")
    assert spec is not None and spec.loader is not None
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    argv = run_py.lab_argv(8888, headless=True)
    settings = Path(next(a for a in argv if a.startswith("--LabApp.app_settings_dir=")).split("=", 1)[1])
    assert settings.is_dir() and settings.parent.parent == copy
    env = run_py.lab_env()
    assert all(Path(p).is_dir() for p in env["JUPYTER_CONFIG_PATH"].split(":")[:2])
    for command in (["course", "check", "x.ipynb"], ["test"]):
        proc = subprocess.run([sys.executable, str(copy / "run.py"), *command], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and "this is a student copy" in proc.stderr, proc.stderr


def test_student_copy_never_overwrites(tmp_path: Path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep")
    assert cli.main(["student-copy", str(tmp_path / "taken")]) == 2
    assert "DIR must be a new or empty folder" in capsys.readouterr().err
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep"
    with pytest.raises(ValueError, match="DIR must be outside the course repository"):
        make_student_copy(REPO_ROOT / "students-here")
    with pytest.raises(ValueError, match="pyproject.toml must have"):
        student_pyproject("[project]\nname = 'x'\n")
