"""Student self-check: run your notebook through the grader's pipeline against the *visible* tests only.

``dp-course check NOTEBOOK`` builds a throw-away nbgrader course from the **released** student notebooks
(``notebooks/``) -- never from ``solutions/`` -- so the hidden tests are not on the student's machine and the
check cannot see them.  It then grades the notebook exactly as ``dp-course grade`` does: nbgrader's
``autograde`` with the same sanitising (test cells restored from the release), the same sandboxed
execution, limits and guard (:class:`autograder.execute.safe_execute.SafeExecute`, configured by
:func:`autograder.course.settings.grading_config`), and the test cells in a trusted kernel of their own that reaches
the student's functions through the same proxies and codec (:mod:`autograder.trusted`), so the check and the
grader cannot differ on a visible test.  The result lists, per exercise,
each test cell (visible part) as passed or failed, with the assertion message and the points at stake.

The check reads the notebook's *saved* file: the report opens with the time it was saved ("Checked the version
saved at 14:03:05 – save (Ctrl+S) first") and warns when Jupyter's checkpoint of it (or an interrupted save's
temporary file) was written later with other content (:func:`saved_version`); unsaved changes in a browser
cannot be seen from the command line.

Passing every visible test does not guarantee full marks: the hidden tests run when the instructor grades.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from ..isolation import isolation
from ..course.cells import grade_id, grade_ids, is_manual_cell, nbgrader_meta, strip_ansi
from ..course.course import NOTEBOOKS_DIR, fingerprint_dir, make_course
from ..execute import trusted_tests
from ..execute.diagnostics import last_error
from ..intake.events import Event, EventKind
from ..intake.intake import check_notebook_bytes
from ..isolation.kernels import prepare_mpl_cache
from ..course.limits import Limits
from .plaintext import latex_to_text, markdown_to_text
from ..course.settings import GradingSettings, course_config, grading_config, write_grading_config

__all__ = ["CheckedTest", "CheckResult", "SavedVersion", "saved_version", "find_assignment", "check_notebook",
           "check_notebooks"]

_HEADING = re.compile(r"^#{1,4}\s+((?:Exercise|Question|Task|Problem)\b[^\n]*)", re.IGNORECASE | re.MULTILINE)
_STUDENT = "me"


@dataclasses.dataclass
class CheckedTest:
    """One test cell of the release (its visible checks)."""

    exercise: str
    grade_id: str
    points: float
    passed: bool | None        # None: graded by hand (a written answer)
    message: str


def _clock(mtime: float) -> str:
    """``HH:MM:SS`` of a file time in the local time zone (what the student's clock showed)."""
    return time.strftime("%H:%M:%S", time.localtime(mtime))


@dataclasses.dataclass(frozen=True)
class SavedVersion:
    """Which saved version of a notebook was checked, and copies of it that are newer.

    The check reads the file on disk: what the browser shows but has not saved is not checked.  The command
    line cannot ask JupyterLab for unsaved changes, so it compares the file with the copies Jupyter keeps
    beside it – the checkpoint (``.ipynb_checkpoints/NAME-checkpoint.ipynb``) and an interrupted save's
    temporary file (``.~NAME``) – and reports those saved later than the file with other content.
    """

    saved_at: float
    newer: tuple[tuple[str, float], ...] = ()

    def lines(self) -> list[str]:
        """The lines printed above the results: always which version, and a warning per newer copy."""
        out = [f"Checked the version saved at {_clock(self.saved_at)} – save (Ctrl+S) first: changes that are "
               "only in the browser are not checked."]
        for path, mtime in self.newer:
            out.append(f"WARNING: {path} was written at {_clock(mtime)}, after this file, and differs from it: "
                       "the notebook has changes newer than what was checked. Save it (Ctrl+S) and check again.")
        return out


def saved_version(notebook: Path) -> SavedVersion:
    """The saved version of ``notebook`` that a check reads (its modification time) and Jupyter's copies of
    it written later with other content (see :class:`SavedVersion`)."""
    notebook = Path(notebook)
    mtime = notebook.stat().st_mtime
    data = notebook.read_bytes()
    newer = []
    for copy in (notebook.parent / ".ipynb_checkpoints" / f"{notebook.stem}-checkpoint{notebook.suffix}",
                 notebook.parent / f".~{notebook.name}"):
        if copy.is_file() and not copy.is_symlink():
            copy_mtime = copy.stat().st_mtime
            if copy_mtime > mtime + 1.0 and (copy.stat().st_size != len(data) or copy.read_bytes() != data):
                newer.append((str(copy), copy_mtime))
    return SavedVersion(mtime, tuple(newer))


@dataclasses.dataclass
class CheckResult:
    assignment: str
    notebook: str
    tests: list[CheckedTest]
    events: list[Event]
    sandboxed: bool
    filename: str = ""
    saved: SavedVersion | None = None

    @property
    def passed_points(self) -> float:
        return sum(t.points for t in self.tests if t.passed)

    @property
    def auto_points(self) -> float:
        return sum(t.points for t in self.tests if t.passed is not None)

    @property
    def all_passed(self) -> bool:
        return all(t.passed for t in self.tests if t.passed is not None)

    @property
    def kernel_failed(self) -> str | None:
        """Why the notebook could not be run at all (its kernel did not start), or ``None``."""
        for e in self.events:
            if e.kind is EventKind.KERNEL_START_FAILED:
                return e.reason or e.detail
        return None

    def render(self) -> str:
        """The report printed to the student (plain text: LaTeX maths shown as Unicode)."""
        name = self.filename or self.notebook + ".ipynb"
        if self.kernel_failed:
            return "\n".join([
                f"{name} could not be checked: the Python kernel that runs it did not start.",
                f"Why: {self.kernel_failed}",
                "This is not caused by your notebook. What to do: run the check again; if it keeps failing, "
                "run `python -m autograder.isolation.isolation` to see what this machine allows, try "
                "`dp-course check --sandbox none` (your own notebook needs no sandbox), and if that fails too, "
                "ask your instructor, quoting this message."])
        lines = [f"Checked {name} against the visible tests of {self.assignment}."]
        lines += [*(self.saved.lines() if self.saved else []), ""]
        current = None
        for t in self.tests:
            if t.exercise != current:
                current = t.exercise
                lines.append(current)
            pts = f"{t.points:g} point{'s' if t.points != 1 else ''}"
            if t.passed is None:
                lines.append(f"  [hand-graded] {t.grade_id} ({pts}): your written answer is graded by the instructor")
            else:
                mark = "PASS" if t.passed else "FAIL"
                message = f": {latex_to_text(t.message)}" if t.message else ""
                lines.append(f"  [{mark}] {t.grade_id} ({pts}){message}")
        probs = [e for e in self.events if e.kind.reported and e.kind is not EventKind.SUSPICIOUS_CODE]
        if probs:
            lines += ["", "Problems while running your notebook:"]
            lines += [f"  - {e.title}: {latex_to_text(e.detail[:300])}" for e in probs]
        lines += ["", f"Visible tests passed: {self.passed_points:g} of {self.auto_points:g} autograded points.",
                  "Hidden tests also count when your notebook is graded; passing the visible ones is "
                  "necessary, not sufficient."]
        return "\n".join(lines)


def find_assignment(nb: NotebookNode, filename: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> tuple[str, str]:
    """(assignment, notebook) of a student notebook: by its cells' grade ids, else by its file name.

    Raises:
        ValueError: no released notebook matches.
    """
    candidates = sorted(Path(notebooks_dir).glob("*/*.ipynb"))
    ids = grade_ids(nb)
    best, best_score = None, 0.0
    for path in candidates:
        try:
            rel_ids = grade_ids(nbformat.read(path, as_version=4))
        except Exception:
            continue
        if not rel_ids:
            continue
        score = len(ids & rel_ids) / len(rel_ids)
        if score > best_score:
            best, best_score = path, score
    if best is None or best_score < 0.3:
        stem = Path(filename).stem.lower()
        named = [p for p in candidates if p.stem.lower() in stem]
        if named:
            best = max(named, key=lambda p: len(p.stem))
    if best is None:
        names = sorted({p.parent.name for p in candidates})
        raise ValueError(f"notebook must be one of the course's notebooks {names} (matched by its cells or its "
                         f"file name), got {filename!r}; pass --assignment to choose")
    return best.parent.name, best.stem


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dp-course" / "check"


def _check_course(assignment: str, notebooks_dir: Path) -> Path:
    """An nbgrader course built from the released notebook (cached by the release's content)."""
    fingerprint = fingerprint_dir(Path(notebooks_dir) / assignment)
    cached = _cache_root() / f"{assignment}-{fingerprint[:16]}"
    if not (cached / "gradebook.db").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="dpc-check-build-"))
        try:
            make_course(tmp / "course", [assignment], solutions_dir=Path(notebooks_dir))
            cached.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(cached, ignore_errors=True)
            shutil.move(str(tmp / "course"), str(cached))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return cached


def check_notebook(notebook: Path, *, assignment: str | None = None, notebooks_dir: Path = NOTEBOOKS_DIR,
                   limits: Limits | None = None, sandbox_mode: str = "auto") -> CheckResult:
    """Run the visible tests of the course on a student's notebook, the way the grader runs them.

    Args:
        notebook: the student's ``.ipynb``.
        assignment: the lecture it belongs to (default: recognised from its cells or file name).
        notebooks_dir: the released notebooks (``notebooks/``); the hidden tests are not in them.
        limits: time and resource limits (default: those of grading).
        sandbox_mode: ``auto``, ``bwrap`` or ``none``.

    Returns:
        A :class:`CheckResult` (``render()`` gives the text shown to the student).

    Raises:
        ValueError: the file is missing, too large, not a notebook, or matches no lecture.
        RuntimeError: ``sandbox_mode="bwrap"`` but no sandbox works here (the message says why).
    """
    (result,) = check_notebooks([notebook], assignment=assignment, notebooks_dir=notebooks_dir, limits=limits,
                                sandbox_mode=sandbox_mode)
    return result


@dataclasses.dataclass(frozen=True)
class _Checked:
    """One notebook of a batch, read and recognised before anything runs."""

    path: Path   # absolute (the check changes the working directory)
    saved: SavedVersion
    assignment: str
    nb_name: str


def _recognise(notebook: Path, assignment: str | None, notebooks_dir: Path, limits: Limits) -> _Checked:
    """Validate ``notebook`` (exists, not too large, a notebook) and find its lecture."""
    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {str(notebook)!r}")
    size = notebook.stat().st_size
    if size > limits.max_notebook_mb * 1024 * 1024:
        raise ValueError(f"notebook must be at most {limits.max_notebook_mb:g} MB, got {size / 1e6:.1f} MB "
                         "(clear the outputs: Edit > Clear Outputs of All Cells, then save)")
    saved = saved_version(notebook)
    kind, problem, nb = check_notebook_bytes(notebook.read_bytes())
    if kind or nb is None:
        raise ValueError(f"notebook must be a valid Jupyter notebook: {problem}")
    if assignment is None:
        assignment, nb_name = find_assignment(nb, notebook.name, notebooks_dir)
    else:
        release_dir = Path(notebooks_dir) / assignment
        if not (release_dir / f"{assignment}.ipynb").is_file():
            names = sorted(p.parent.name for p in Path(notebooks_dir).glob("*/*.ipynb"))
            raise ValueError(f"assignment must be one of {names}, got {assignment!r}")
        nb_name = assignment
    return _Checked(Path(os.path.abspath(notebook)), saved, assignment, nb_name)  # the check runs elsewhere


def check_notebooks(notebooks: Sequence[Path], *, assignment: str | None = None,
                    notebooks_dir: Path = NOTEBOOKS_DIR, limits: Limits | None = None,
                    sandbox_mode: str = "auto") -> list[CheckResult]:
    """:func:`check_notebook` for several notebooks at once, in one process: one throw-away course per lecture
    and one trusted kernel for all of them (started once, a fresh namespace for each notebook, as a grading
    worker does), so each further notebook costs only its own sandboxed kernel.  Each notebook is checked
    exactly as it would be on its own (the same course, settings, sandbox and limits), one after the other.

    Args:
        notebooks: the students' ``.ipynb`` files (at least one).
        assignment: the lecture of every notebook (default: recognised for each notebook).
        notebooks_dir, limits, sandbox_mode: as for :func:`check_notebook`.

    Returns:
        One :class:`CheckResult` per notebook, in the order given.

    Raises:
        ValueError: no notebook given, or one of them is missing, too large, not a notebook or matches no
            lecture (raised before any notebook runs), or could not be graded.
        RuntimeError: ``sandbox_mode="bwrap"`` but no sandbox works here (the message says why).
    """
    if not notebooks:
        raise ValueError("notebooks must name at least one .ipynb file, got none")
    limits = limits or Limits()
    batch = [_recognise(Path(nb), assignment, Path(notebooks_dir), limits) for nb in notebooks]
    info = isolation.probe(sandbox_mode)
    if sandbox_mode == "bwrap" and not info.isolated:
        raise RuntimeError("no sandbox works on this machine: " + "; ".join(info.problems))
    results: dict[int, CheckResult] = {}
    try:
        for lecture in dict.fromkeys(c.assignment for c in batch):
            todo = [(i, c) for i, c in enumerate(batch) if c.assignment == lecture]
            results.update(_check_lecture(lecture, todo, Path(notebooks_dir), limits, info))
    finally:
        # the trusted kernel the check started in this process: a check must not leave a kernel running
        # in its caller (a test session, a notebook) until that process exits (issue 27)
        trusted_tests.shutdown()
    return [results[i] for i in range(len(batch))]


def _check_lecture(assignment: str, todo: list[tuple[int, _Checked]], notebooks_dir: Path, limits: Limits,
                   info: isolation.SandboxInfo) -> dict[int, CheckResult]:
    """Grade the notebooks ``todo`` of one lecture in one throw-away course (student ``me``, ``me1``, ...)."""
    cached = _check_course(assignment, notebooks_dir)
    out: dict[int, CheckResult] = {}
    with tempfile.TemporaryDirectory(prefix="dpc-check-") as tmp:
        root = Path(tmp) / "course"
        root.mkdir()
        for sub in ("source", "release"):
            shutil.copytree(cached / sub, root / sub)
        for name in ("gradebook.db", "nbgrader_config.py"):
            shutil.copyfile(cached / name, root / name)
        # the self-check runs the visible tests exactly as grading does: in a trusted kernel, through the same
        # proxies and codec, so the two cannot differ on them (issue 26)
        settings = GradingSettings(limits, info.mode, trusted=True)
        write_grading_config(root, grading_config(settings, course_config(root), events_dir=Path(tmp) / "events",
                                                  mpl_cache=prepare_mpl_cache(_cache_root() / "matplotlib")))
        config = course_config(root)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
            for n, (i, checked) in enumerate(todo):
                student = _STUDENT if n == 0 else f"{_STUDENT}{n}"
                dest = root / "submitted" / student / assignment
                dest.mkdir(parents=True)
                shutil.copyfile(checked.path, dest / f"{checked.nb_name}.ipynb")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
                    res = api.autograde(assignment, student, force=True, create=True)
                if not res.get("success"):
                    which = "" if len(todo) == 1 else f" ({checked.path.name})"
                    raise ValueError(f"notebook{which} could not be checked: {last_error(res)}")
                out[i] = _result(root, Path(tmp) / "events", student, checked, notebooks_dir, info)
        finally:
            os.chdir(cwd)
    return out


def _result(root: Path, events_dir: Path, student: str, checked: _Checked, notebooks_dir: Path,
            info: isolation.SandboxInfo) -> CheckResult:
    """The :class:`CheckResult` of ``student``'s autograded notebook in the check's course ``root``."""
    assignment, nb_name = checked.assignment, checked.nb_name
    graded = nbformat.read(root / "autograded" / student / assignment / f"{nb_name}.ipynb", as_version=4)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook(nb_name, assignment, student)
        scores = {g.name: (g.auto_score, float(g.max_score)) for g in sub.grades}
    events: list[Event] = []
    ev_file = events_dir / student / assignment / f"{nb_name}.json"
    if ev_file.is_file():
        events = [Event.from_json(e) for e in json.loads(ev_file.read_text()).get("events", [])]
    release_nb = nbformat.read(Path(notebooks_dir) / assignment / f"{nb_name}.ipynb", as_version=4)
    messages = _messages(graded)
    tests: list[CheckedTest] = []
    exercise = "(before the first exercise)"
    for cell in release_nb.cells:
        if cell.cell_type == "markdown":
            m = _HEADING.search(str(cell.source))
            if m:
                exercise = markdown_to_text(m.group(1))
        gid = grade_id(cell)
        if not gid or not nbgrader_meta(cell).get("grade") or gid not in scores:
            continue
        auto, max_score = scores[gid]
        if is_manual_cell(cell):  # a written answer: graded by hand
            tests.append(CheckedTest(exercise, gid, max_score, None, ""))
            continue
        passed = auto is not None and auto >= max_score - 1e-9
        tests.append(CheckedTest(exercise, gid, max_score, passed, "" if passed else messages.get(gid, "")))
    return CheckResult(assignment, nb_name, tests, events, info.isolated, checked.path.name, checked.saved)


def _messages(nb: NotebookNode) -> dict[str, str]:
    """The first error of each test cell: ``Name: message`` (the assertion message written for students)."""
    out = {}
    for c in nb.cells:
        gid = grade_id(c)
        if not gid or c.cell_type != "code":
            continue
        for o in c.get("outputs", []):
            if o.get("output_type") == "error":
                ename, evalue = o.get("ename", "Error"), strip_ansi(str(o.get("evalue", ""))).strip()
                if ename == "NotImplementedError" and not evalue:
                    out[gid] = "not answered yet (the answer cell still raises NotImplementedError)"
                else:
                    out[gid] = f"{ename}: {evalue}"[:300] if evalue else ename
                break
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                out[gid] = "the test wrote to stderr (warnings count as failures): " + str(o.get("text"))[:200].strip()
                break
    return out


if __name__ == "__main__":  # pragma: no cover
    print("use `dp-course check NOTEBOOK`", file=sys.stderr)
