"""Shared machinery for the notebook pipeline tests (``test_pipeline.py``, ``test_answer_variants.py``).

Everything here is generic over ``solutions/<name>/<name>.ipynb``: adding a lecture needs no change in this
file, only (for the answer-variant tests) a data file ``tests/answer_variants/<name>.py``.

The expensive part – one real nbgrader course with every lecture generated (:func:`generated_course`), and
per lecture a real ``nbgrader autograde`` run over all its test students in a copy of that course
(:func:`round_trip`) – is built once per test session and shared by both test modules and all xdist workers.
Each lecture's tests form one xdist group (:func:`round_trip_group`), so the workers grade different lectures
at the same time.

Students in the round trip, per lecture:

* ``solution``  – the instructor's source notebook, submitted as is;
* ``untouched`` – the release notebook exactly as a student receives it;
* ``built_solution`` – the release notebook with every answer cell filled with the instructor's solution
  (:func:`build_submission` without replacements: the solution as ``test_one_verdict.py`` submits it);
* ``alt<i>`` / ``wrong<i>`` – the release notebook with every answer cell that has an ``i``-th correct
  alternative / wrong answer in ``tests/answer_variants/<name>.py`` replaced by it, and every other answer
  cell filled with the instructor's solution.  Graded test cells depend on one answer cell each (checked by
  ``test_pipeline.py``), so each answer's variants are judged independently of the others.  To save grading
  time these submissions leave out the plain demonstration cells that no answer or test cell relies on.

Besides the gradebook's scores, the round trip keeps each test cell's verdict with its first error message
(:attr:`RoundTrip.verdicts`): nbgrader's autograde runs every cell in one kernel, the hidden tests restored,
errors allowed, and scores a test cell with ``nbgrader.utils.determine_grade`` -- a Run All in one kernel.  The
differential test ``test_one_verdict.py`` reads its path (a) from there instead of running every submission
again.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import determine_grade

try:  # POSIX; elsewhere each xdist worker builds its own round trip
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

from autograder.course import course, release
from autograder.course.cells import strip_ansi, strip_solution_markers

SOLUTIONS = course.SOLUTIONS_DIR
NOTEBOOKS = course.NOTEBOOKS_DIR
VARIANTS_DIR = Path(__file__).resolve().parent / "answer_variants"

TIME_BUDGET_SECONDS = 20.0
"""Each solution notebook must execute top to bottom within this many seconds (kernel CPU time)."""

MAX_CALLS_PER_TEST_CELL = 50
"""A test cell may call the student's functions at most this many times (``docs/design.md``, test cells: a
few dozen calls, so that they stay cheap when each call crosses to another process)."""

RAISES_TAG = "raises-exception"
"""Cell tag that lets *Run All* (JupyterLab, nbclient) go on after the cell raises."""



# --------------------------------------------------------------------------------------------------------
# reading notebooks
# --------------------------------------------------------------------------------------------------------

def lectures() -> list[str]:
    """Names of the lectures: every ``solutions/<name>/<name>.ipynb``."""
    return course.assignments(SOLUTIONS)


def source_path(name: str) -> Path:
    return SOLUTIONS / name / f"{name}.ipynb"


def read_source(name: str) -> nbformat.NotebookNode:
    return nbformat.read(source_path(name), as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_answer_cell(cell) -> bool:
    """An autograded answer: a code cell with a solution region and no points of its own."""
    m = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(m.get("solution")) and not m.get("grade")


def is_test_cell(cell) -> bool:
    """An autograder test cell: a read-only code cell worth points."""
    m = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(m.get("grade")) and not m.get("solution")


def is_manual_cell(cell) -> bool:
    """A manually graded answer (written answer, or code graded by hand): solution and points together."""
    m = nbgrader_meta(cell)
    return bool(m.get("grade")) and bool(m.get("solution"))


def python_source(source: str) -> str:
    """Cell source with IPython magics and shell escapes commented out, so that ``ast`` can parse it."""
    return "\n".join("# " + line if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())


def defined_names(source: str) -> set[str]:
    """Names a code cell binds at top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(python_source(source)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if not isinstance(node, ast.With) else
                       [i.optional_vars for i in node.items if i.optional_vars is not None])
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def used_names(source: str) -> set[str]:
    """Every name a code cell reads (anywhere, including inside functions)."""
    return {n.id for n in ast.walk(ast.parse(python_source(source)))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def free_names(source: str) -> set[str]:
    """Names a code cell reads but never binds itself (not as a variable, parameter or function)."""
    tree = ast.parse(python_source(source))
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in n.posonlyargs + n.args + n.kwonlyargs + [x for x in (n.vararg, n.kwarg) if x]}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return used_names(source) - bound


def answer_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if is_answer_cell(c)}


def test_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if is_test_cell(c)}


def manual_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if is_manual_cell(c)}


def dependencies(nb) -> dict[str, list[str]]:
    """``{test grade_id: [answer grade_ids whose names it uses]}``."""
    provided = {gid: defined_names(c.source) for gid, c in answer_cells(nb).items()}
    return {tid: sorted(aid for aid, names in provided.items() if names & used_names(c.source))
            for tid, c in test_cells(nb).items()}


def tests_of_answer(nb) -> dict[str, list[str]]:
    """``{answer grade_id: [test grade_ids that depend on it]}`` (test cells with one dependency only)."""
    out: dict[str, list[str]] = {aid: [] for aid in answer_cells(nb)}
    for tid, deps in dependencies(nb).items():
        if len(deps) == 1:
            out[deps[0]].append(tid)
    return out


def has_raises_tag(cell) -> bool:
    return RAISES_TAG in cell.get("metadata", {}).get("tags", [])


def stub_raises_at_top_level(cell) -> bool:
    """Whether the stub nbgrader puts in place of this answer cell's solution raises when the cell runs: the
    ``### BEGIN SOLUTION`` line is not indented (the region is not inside a function)."""
    return any(line.startswith("### BEGIN SOLUTION") for line in cell.source.splitlines())


def cells_that_may_raise(nb) -> dict[str, str]:
    """``{cell id: reason}`` for the code cells of a lecture that can raise on an unanswered notebook.

    These are the autograder test cells, answer cells whose stub raises at top level, cells that use a name an
    answer cell defines (they call the student's code), and – followed through the notebook in order – cells
    that use a name bound only by cells that may raise (it may not exist).  ``docs/design.md``, lecture rule 1:
    exactly these cells carry the ``raises-exception`` tag.
    """
    student_names = set().union(*(defined_names(c.source) for c in answer_cells(nb).values()))
    safe: set[str] = set()       # names bound by a cell that cannot raise
    risky: set[str] = set()      # names bound only by cells that may raise
    reasons: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cid = cell.get("id")
        used = used_names(cell.source)
        if is_test_cell(cell):
            reasons[cid] = "autograder test cell"
        elif is_answer_cell(cell):
            if stub_raises_at_top_level(cell):
                reasons[cid] = "its stub raises NotImplementedError at top level"
        elif used & student_names:
            reasons[cid] = f"calls the student's {sorted(used & student_names)}"
        elif used & (risky - safe):
            reasons[cid] = f"uses {sorted(used & (risky - safe))}, bound only by cells that may raise"
        bound = defined_names(cell.source)
        if cid in reasons:
            risky |= bound - safe
        else:
            safe |= bound
    return reasons


# --------------------------------------------------------------------------------------------------------
# answer variants
# --------------------------------------------------------------------------------------------------------

def variants_file(name: str) -> Path:
    return VARIANTS_DIR / f"{name}.py"


@dataclass(frozen=True)
class Variant:
    """One answer variant: the code of the whole answer cell, and for a wrong answer the most it may score on
    its answer's test cells (``None``: anything below full marks) and the test cells it must fail, passing all
    the others (``fails``; ``None``: not pinned)."""

    code: str
    at_most: float | None = None
    fails: tuple[str, ...] | None = None


def _variant(entry) -> Variant:
    if isinstance(entry, str):
        return Variant(textwrap.dedent(entry).strip("\n"))
    at_most = entry.get("at_most")
    fails = entry.get("fails")
    return Variant(textwrap.dedent(entry["code"]).strip("\n"), None if at_most is None else float(at_most),
                   None if fails is None else tuple(fails))


@cache
def load_variants(name: str) -> dict[str, dict[str, list[Variant]]]:
    """``VARIANTS`` from ``tests/answer_variants/<name>.py`` (empty if the file does not exist), with each
    code string dedented.  A wrong answer is a code string or ``{"code": ..., "at_most": points}`` or
    ``{"code": ..., "fails": [test grade_ids]}``."""
    path = variants_file(name)
    if not path.is_file():
        return {}
    spec = importlib.util.spec_from_file_location(f"answer_variants_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {aid: {kind: [_variant(v) for v in entry.get(kind, [])] for kind in ("correct_alt", "wrong")}
            for aid, entry in module.VARIANTS.items()}


KINDS = {"alt": "correct_alt", "wrong": "wrong"}
"""Student-name prefix -> key in a variants entry."""


def variant_students(name: str) -> dict[str, dict[str, str]]:
    """``{student: {answer grade_id: code}}`` for the variant submissions of lecture ``name``.

    Student ``alt<i>`` uses every answer's ``i``-th correct alternative, ``wrong<i>`` every ``i``-th wrong
    answer; answers without such a variant keep the instructor's solution.
    """
    return {student: {aid: v.code for aid, v in answers.items()}
            for student, answers in _variants_by_student(name).items()}


def variant_of(name: str, student: str, answer: str) -> Variant:
    """The variant of ``answer`` that ``student`` submits (see :func:`variant_students`)."""
    return _variants_by_student(name)[student][answer]


def _variants_by_student(name: str) -> dict[str, dict[str, Variant]]:
    variants = load_variants(name)
    out: dict[str, dict[str, Variant]] = {}
    for prefix, kind in KINDS.items():
        depth = max((len(v[kind]) for v in variants.values()), default=0)
        for i in range(depth):
            out[f"{prefix}{i}"] = {aid: v[kind][i] for aid, v in variants.items() if i < len(v[kind])}
    return out


def build_submission(release_nb, source_nb, replacements: dict[str, str], *, drop_demos: bool = True):
    """A copy of the release notebook with every answer cell filled: by ``replacements[grade_id]`` when
    given, otherwise by the instructor's solution.

    With ``drop_demos`` the plain code cells (demonstrations, plots, widgets, self-checks) are left out when
    no answer or test cell uses a name they define: they cannot change a test's verdict and only cost
    grading time.  The ``solution`` and ``untouched`` submissions of the round trip keep every cell.
    """
    nb = nbformat.from_dict(release_nb)
    solutions = {gid: strip_solution_markers(c.source) for gid, c in answer_cells(source_nb).items()}
    needed = set().union(*(free_names(c.source) for c in source_nb.cells if is_test_cell(c) or is_answer_cell(c)),
                         *(free_names(code) for code in replacements.values()))
    cells = []
    for cell in nb.cells:
        if is_answer_cell(cell):
            gid = nbgrader_meta(cell)["grade_id"]
            cell.source = replacements.get(gid, solutions[gid])
        elif (drop_demos and cell.cell_type == "code" and not nbgrader_meta(cell)
              and not defined_names(cell.source) & needed):
            continue
        cells.append(cell)
    nb.cells = cells
    return nb


# --------------------------------------------------------------------------------------------------------
# the round trip through nbgrader
# --------------------------------------------------------------------------------------------------------

def round_trip_group(name: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that read lecture ``name``'s round trip: they run on one worker, which
    builds it once, while the other workers take other lectures (``tests/conftest.py`` schedules them early)."""
    return pytest.mark.xdist_group(f"nbgrader-{name}")


@dataclass
class GeneratedCourse:
    """An nbgrader course with every lecture generated (``nbgrader generate_assignment``), and the release
    files read from it."""

    root: Path
    release_files: dict[str, bytes]
    seconds: float


@dataclass
class RoundTrip:
    """One lecture's test students submitted to a copy of the generated course and graded by a real
    ``nbgrader autograde``."""

    name: str
    grades: dict[str, dict[str, course.CellGrade]] = field(default_factory=dict)
    """``{student: {grade_id: CellGrade}}``"""
    verdicts: dict[str, dict[str, tuple[bool, str]]] = field(default_factory=dict)
    """``{student: {test cell grade_id: (passed, first error or stderr)}}`` read from the autograded notebooks"""
    students: list[str] = field(default_factory=list)
    """the students submitted"""
    autograde_log: str = ""
    seconds: float = 0.0


BUILT_SOLUTION = "built_solution"
"""The round trip's student whose notebook is the release with the instructor's answers (:func:`build_submission`)."""


def first_problem(cell) -> str:
    """The first error (or stderr output) of an executed cell, as a verdict's message ("" when none)."""
    for out in cell.get("outputs", []):
        if out.output_type == "error":
            return f"{out.ename}: {strip_ansi(str(out.evalue))}"[:300]
        if out.output_type == "stream" and out.name == "stderr":
            return f"stderr: {out.text}"[:300]
    return ""


def cell_verdicts(nb) -> dict[str, tuple[bool, str]]:
    """``{grade_id: (passed, message)}`` of the executed test cells of ``nb``: nbgrader's verdict on each
    (``determine_grade``: an error or anything on stderr scores zero), passed when it scores its points."""
    out = {}
    for cell in nb.cells:
        if is_test_cell(cell):
            score, max_score = determine_grade(cell)
            out[nbgrader_meta(cell)["grade_id"]] = (score >= max_score, first_problem(cell))
    return out


def _autograded_verdicts(shard: Path, name: str, students: list[str]) -> dict[str, dict[str, tuple[bool, str]]]:
    out = {}
    for student in students:
        path = shard / "autograded" / student / name / f"{name}.ipynb"
        if path.is_file():
            out[student] = cell_verdicts(nbformat.read(path, as_version=4))
    return out


def _autograde_in_shards(root: Path, name: str, students: list[str], shards: int) -> tuple[dict, dict, str]:
    """Autograde the submissions of lecture ``name`` with ``shards`` concurrent ``nbgrader autograde`` runs.

    nbgrader grades one submission after the other; with more than one shard each shard is a copy of the
    course (gradebook included) holding a subset of the submissions, so the shards never share a database.
    Returns the merged grades ``{student: {grade_id: CellGrade}}``, the test cells' verdicts (``RoundTrip.verdicts``)
    and the concatenated logs.
    """
    groups = [g for g in (students[i::shards] for i in range(shards)) if g]
    runs = []
    for i, group in enumerate(groups):
        shard = root
        if len(groups) > 1:
            shard = root.parent / f"{root.name}-shard{i}"
            if shard.exists():
                shutil.rmtree(shard)
            shutil.copytree(root, shard, ignore=shutil.ignore_patterns("autograded", "feedback"))
            for student_dir in (shard / "submitted").iterdir():
                if student_dir.name not in group:
                    shutil.rmtree(student_dir)
        proc = subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", name, "--create", "--force"],
                                cwd=shard, env=course.subprocess_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        runs.append((shard, group, proc))
    grades: dict[str, dict] = {}
    verdicts: dict[str, dict] = {}
    logs = []
    for shard, group, proc in runs:
        out, _ = proc.communicate(timeout=1800)
        logs.append(out)
        if proc.returncode != 0:
            raise RuntimeError(f"nbgrader autograde failed in {shard} (exit {proc.returncode}):\n{out}")
        grades.update(course.read_grades(shard, name))
        verdicts.update(_autograded_verdicts(shard, name, group))
    return grades, verdicts, "\n".join(logs)


_CACHE: dict[str, object] = {}


def _shared(tmp_path_factory, key: str, build):
    """``build(workdir)`` computed once per test session and shared: within a process through a module cache,
    and between pytest-xdist workers through a pickle next to their base temporary directories, guarded by a
    file lock (so it is built once even when tests of the same key run on different workers).  ``workdir``
    stays in pytest's temporary directory (pruned by pytest after a few runs) for inspection after a failure.
    """
    if key in _CACHE:
        return _CACHE[key]
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    pickled = shared / f"{key}.pickle"
    with open(shared / f"{key}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if pickled.is_file():
                result = pickle.loads(pickled.read_bytes())
            else:
                workdir = shared / key
                if workdir.exists():
                    shutil.rmtree(workdir)
                result = build(workdir)
                pickled.write_bytes(pickle.dumps(result))
        finally:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_UN)
    _CACHE[key] = result
    return result


def generated_course(tmp_path_factory) -> GeneratedCourse:
    """Every lecture generated in one nbgrader course (one ``nbgrader generate_assignment`` run), once per
    test session; the round trips of the lectures grade in copies of it."""
    return _shared(tmp_path_factory, "nbgrader-course", _build_course)


def _build_course(workdir: Path) -> GeneratedCourse:
    names = lectures()
    t0 = time.perf_counter()
    root = course.make_course(workdir / "course", names)
    return GeneratedCourse(root=root, release_files=release.collect_release(root, names),
                           seconds=time.perf_counter() - t0)


def round_trip(tmp_path_factory, name: str) -> RoundTrip:
    """Submit lecture ``name``'s test students (see the module docstring) to a copy of the generated course,
    autograde them all (real ``nbgrader autograde``) and read back the gradebook; once per test session.

    One lecture per round trip, so that the xdist workers share the lectures (:func:`round_trip_group`); under
    xdist each is graded by one ``nbgrader autograde`` process, without xdist by one per CPU core.
    """
    generated = generated_course(tmp_path_factory)
    return _shared(tmp_path_factory, f"nbgrader-roundtrip-{name}", lambda workdir: _build_round_trip(
        generated.root, name, workdir))


def _build_round_trip(generated: Path, name: str, workdir: Path) -> RoundTrip:
    root = workdir / "course"
    shutil.copytree(generated, root, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback"))
    source_nb = read_source(name)
    release_nb = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4)
    submissions = {"solution": source_path(name), "untouched": release_nb,
                   BUILT_SOLUTION: build_submission(release_nb, source_nb, {})}
    for student, replacements in variant_students(name).items():
        submissions[student] = build_submission(release_nb, source_nb, replacements)
    for student, nb in submissions.items():
        course.submit(root, name, student, {name: nb})
    t0 = time.perf_counter()
    shards = 1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, min(4, os.cpu_count() or 1))
    grades, verdicts, log = _autograde_in_shards(root, name, list(submissions), shards)
    return RoundTrip(name=name, grades=grades, verdicts=verdicts, students=list(submissions), autograde_log=log,
                     seconds=time.perf_counter() - t0)
