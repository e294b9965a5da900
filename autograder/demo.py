"""The embedded end-to-end example: a temporary course, sample submissions, a grading run.

``dp-course demo`` builds a course from the first lecture in ``solutions/`` (or, with ``--synthetic`` or
when there is none, from a tiny built-in assignment), writes a handful of submissions -- a full solution,
an untouched notebook, a partly wrong one and a few hostile ones -- grades them with the same code as
``dp-course grade`` and prints, per submission, the score it should get beside the score it got, and where the
report is.

**A busy machine.** Before grading, the demo times the lecture's setup cell (its imports) in a fresh Python
process (:func:`measure_setup`) and raises the per-cell limit to at least three times that plus 5 s, saying so:
on two busy cores the imports alone can take longer than the 10 s default, which would cut the setup cell and
score every submission zero for the wrong reason.

The helpers that make submissions from a source notebook live in :mod:`autograder.course.cells`; the tests and the
benchmark use them and :func:`write_synthetic_assignment` too.
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

import nbformat
from nbformat.notebooknode import NotebookNode

from .course.cells import (answer_cells, full_solution, grade_id as cell_grade_id, is_answer_cell, is_instructor_cell,
                           is_manual_cell, is_test_cell, nbgrader_meta, set_answer, student_version)
from .course.course import SOLUTIONS_DIR, assignments as list_assignments, make_course
from .run.grading import grade
from .course.limits import Limits

__all__ = ["SYNTHETIC_NAME", "write_synthetic_assignment", "HOSTILE", "make_demo_submissions", "run_demo",
           "measure_setup", "expected_scores", "SETUP_FACTOR", "SETUP_MARGIN"]

SETUP_FACTOR, SETUP_MARGIN = 3.0, 5.0
"""The demo's cell limit is at least ``SETUP_FACTOR`` times the measured setup time plus ``SETUP_MARGIN`` s."""

SYNTHETIC_NAME = "00_toy"


def _cell(kind: str, source: str, *, grade_id: str | None = None, grade: bool = False, solution: bool = False,
          locked: bool = False, points: float | None = None) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id is not None:
        meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
                "schema_version": 3, "task": False}
        if grade:
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
        if locked:
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False
    return cast(NotebookNode, cell)


def write_synthetic_assignment(solutions_dir: Path, name: str = SYNTHETIC_NAME) -> Path:
    """Write a tiny nbgrader source assignment: three autograded exercises and one manually graded answer.

    Exercise 1 (``laplace_scale``, 2 points in two test cells), exercise 2 (``rr_keep_probability``,
    2 points), exercise 3 (``count_above``, 1 point) -- each test cell has visible checks and a
    ``BEGIN/END HIDDEN TESTS`` block whose assertion messages contain ``HIDDEN-TOKEN`` -- and a markdown
    answer worth 2 points graded by hand.  The tests use ``math.isclose`` and ``numpy.isclose`` so that
    monkeypatching them can be tested.  Returns the notebook's path.
    """
    d = Path(solutions_dir) / name
    d.mkdir(parents=True, exist_ok=True)
    cells = [
        _cell("markdown", "# A toy assignment\n\nThree small exercises about the Laplace mechanism and "
              "randomized response, used to test the grading tools.", grade_id="intro", locked=True),
        _cell("code", "import math\nimport numpy as np", grade_id="setup", locked=True),
        _cell("markdown", "## Exercise 1 (2 points)\n\nWrite `laplace_scale(sensitivity, epsilon)`, the "
              "scale $b = \\Delta/\\varepsilon$ of the Laplace mechanism.", grade_id="ex1_text", locked=True),
        _cell("code", "def laplace_scale(sensitivity, epsilon):\n    \"\"\"Noise scale of the Laplace "
              "mechanism.\"\"\"\n    ### BEGIN SOLUTION\n    return sensitivity / epsilon\n    ### END SOLUTION",
              grade_id="ex1_answer", solution=True),
        _cell("code", "\"\"\"Sensitivity 1 and epsilon 1 give scale 1.\"\"\"\nassert math.isclose(laplace_scale("
              "1.0, 1.0), 1.0), \"laplace_scale(1, 1) should be 1\"", grade_id="ex1_unit", grade=True,
              locked=True, points=1),
        _cell("code", "\"\"\"The scale grows with the sensitivity and shrinks with epsilon.\"\"\"\n"
              "assert np.isclose(laplace_scale(2.0, 0.5), 4.0), \"laplace_scale(2, 0.5) should be 4\"\n"
              "### BEGIN HIDDEN TESTS\nassert np.isclose(laplace_scale(3.0, 0.25), 12.0), "
              "\"hidden check HIDDEN-TOKEN-EX1 failed\"\n### END HIDDEN TESTS", grade_id="ex1_scaling",
              grade=True, locked=True, points=1),
        _cell("markdown", "## Exercise 2 (2 points)\n\nWrite `rr_keep_probability(epsilon)`: the probability "
              "$e^\\varepsilon/(1+e^\\varepsilon)$ that binary randomized response reports the true bit.",
              grade_id="ex2_text", locked=True),
        _cell("code", "def rr_keep_probability(epsilon):\n    \"\"\"Probability of reporting the true bit.\"\"\"\n"
              "    ### BEGIN SOLUTION\n    return 1.0 / (1.0 + math.exp(-epsilon))\n    ### END SOLUTION",
              grade_id="ex2_answer", solution=True),
        _cell("code", "\"\"\"epsilon = 0 keeps the bit with probability 1/2; ln 3 with probability 3/4.\"\"\"\n"
              "assert math.isclose(rr_keep_probability(0.0), 0.5), \"rr_keep_probability(0) should be 1/2\"\n"
              "### BEGIN HIDDEN TESTS\nassert math.isclose(rr_keep_probability(math.log(3.0)), 0.75), "
              "\"hidden check HIDDEN-TOKEN-EX2 failed\"\nassert math.isclose(rr_keep_probability(-math.log(3.0)), "
              "0.25), \"hidden check HIDDEN-TOKEN-EX2b failed\"\n### END HIDDEN TESTS", grade_id="ex2_tests",
              grade=True, locked=True, points=2),
        _cell("markdown", "## Exercise 3 (1 point)\n\nWrite `count_above(values, threshold)`: how many values "
              "exceed the threshold.", grade_id="ex3_text", locked=True),
        _cell("code", "def count_above(values, threshold):\n    \"\"\"Number of values strictly above "
              "threshold.\"\"\"\n    ### BEGIN SOLUTION\n    return int(np.sum(np.asarray(values) > threshold))\n"
              "    ### END SOLUTION", grade_id="ex3_answer", solution=True),
        _cell("code", "\"\"\"Counting above a threshold.\"\"\"\nassert count_above([1, 2, 3], 1.5) == 2, "
              "\"count_above([1, 2, 3], 1.5) should be 2\"\n### BEGIN HIDDEN TESTS\nassert count_above("
              "np.arange(10), 6.5) == 3, \"hidden check HIDDEN-TOKEN-EX3 failed\"\n### END HIDDEN TESTS",
              grade_id="ex3_tests", grade=True, locked=True, points=1),
        _cell("markdown", "## Question 4 (2 points, graded by hand)\n\nWhy does a larger epsilon mean less "
              "noise?", grade_id="q4_text", locked=True),
        _cell("markdown", "A larger epsilon allows the output distributions on neighbouring datasets to "
              "differ more, so less noise is needed.", grade_id="q4_answer", grade=True, solution=True,
              points=2),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    path = d / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


# ----------------------------------------------------------------------------------------------------
# The demo class


def _first_answer_stub(nb: NotebookNode, grade_id: str) -> str:
    for c in nb.cells:
        if cell_grade_id(c) == grade_id:
            return str(c.source)
    raise ValueError(grade_id)


# A few hostile submissions that work on any assignment: each damages the first answer cell.
HOSTILE: dict[str, tuple[str, str]] = {
    "infinite_loop": ("a loop that ignores interrupts",
                      "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
    "fork_bomb": ("forks until the process limit stops it",
                  "import os\nwhile True:\n    os.fork()"),
    "memory_bomb": ("allocates memory until the limit stops it",
                    "hog = []\nwhile True:\n    hog.append(bytearray(50 * 1024 * 1024))"),
    "snoop_and_patch": ("looks for the solutions and the gradebook, then monkeypatches isclose",
                        "import math, os\nprint('what I can see:', [p for p in SECRETS if os.path.exists(p)])\n"
                        "math.isclose = lambda *a, **k: True"),
    "exits": ("kills its own kernel", "import os\nos._exit(0)"),
}


def make_demo_submissions(course: Path, assignment: str, source_nb: NotebookNode, dest: Path,
                          hostile: bool = True, secret_paths: Sequence[Path] = ()) -> dict[str, str]:
    """Write the demo class as LMS-style flat files ``<student>_<assignment>.ipynb``; returns descriptions."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    release = student_version(course, assignment)
    full = full_solution(release, source_nb)
    answers = list(answer_cells(release))
    made: dict[str, str] = {}

    def put(student: str, nb: NotebookNode | str, what: str) -> None:
        path = dest / f"{student}_{assignment}.ipynb"
        path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
        made[student] = what

    put("ada", full, "full solution")
    put("bert", release, "untouched release notebook")
    if answers:
        half = copy.deepcopy(full)
        for gid in answers[len(answers) // 2:]:
            half = set_answer(half, gid, _first_answer_stub(release, gid))
        put("cleo", half, f"partly done: answers {', '.join(answers[len(answers) // 2:])} left as stubs")
    put("dave", "{ this is not JSON", "not a notebook (invalid JSON)")
    if hostile and answers:
        secrets = [str(p) for p in (*(secret_paths or ()), SOLUTIONS_DIR, Path(course) / "gradebook.db",
                                    Path(course) / "source")]
        for i, (what, code) in enumerate(HOSTILE.values()):
            code = code.replace("SECRETS", repr(secrets))
            put(f"mallory{i + 1}", set_answer(full, answers[0], code, mode="prepend"), f"hostile: {what}")
    return made


# ----------------------------------------------------------------------------------------------------
# What each sample submission should score, and how long the imports take here


def measure_setup(source_nb: NotebookNode, timeout: float = 600.0) -> float:
    """Seconds the notebook's setup cell (the read-only code cell before the first answer: its imports) takes in
    a fresh Python process on this machine now (IPython ``%``/``!`` lines left out); 0 without a setup cell.

    Raises:
        RuntimeError: the setup code fails or runs past ``timeout`` (the message has its last error line).
    """
    source = ""
    for cell in source_nb.cells:
        if is_answer_cell(cell) or is_manual_cell(cell):
            break
        if cell.cell_type == "code" and is_instructor_cell(cell) and not is_test_cell(cell):
            source = "\n".join(line for line in str(cell.source).splitlines()
                               if not line.lstrip().startswith(("%", "!")))
            break
    if not source.strip():
        return 0.0
    env = {**os.environ, "MPLBACKEND": "Agg"}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dpc-demo-setup-") as tmp:
        try:
            proc = subprocess.run([sys.executable, "-c", source], cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the setup cell's imports took more than {timeout:g} s on this machine") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"the setup cell fails in a fresh Python process: {last}")
    return time.monotonic() - t0


def _points(cell: Mapping[str, object]) -> float:
    return float(nbgrader_meta(cell).get("points") or 0.0)


def expected_scores(release: NotebookNode, made: Mapping[str, str]) -> dict[str, tuple[float, float]]:
    """``{student: (lowest, highest) autograded points}`` that each sample submission of
    :func:`make_demo_submissions` should get (hand-graded answers excluded: they wait for the instructor).

    A test cell counts for the answer cell before it: the full solution gets every point, the untouched and the
    broken notebook none, the half-done one the points of the answers it filled in, and a hostile one none of the
    first answer's points and at most all the others (depending on whether its trick also stops the kernel).
    """
    per_answer: dict[str, float] = {}
    current, total = "", 0.0
    for cell in release.cells:
        if is_answer_cell(cell):
            current = str(cell_grade_id(cell))
        elif is_test_cell(cell):
            per_answer[current] = per_answer.get(current, 0.0) + _points(cell)
            total += _points(cell)
    answers = list(answer_cells(release))
    free = per_answer.get("", 0.0)  # tests before any answer
    half = free + sum(per_answer.get(a, 0.0) for a in answers[:len(answers) // 2])
    out = {}
    for student in made:
        if student == "ada":
            out[student] = (total, total)
        elif student == "cleo":
            out[student] = (half, half)
        elif student.startswith("mallory") and answers:
            out[student] = (0.0, total - per_answer.get(answers[0], 0.0))
        else:  # bert (untouched), dave (not a notebook: graded as the untouched release)
            out[student] = (free, free)
    return out


def _range(lo: float, hi: float) -> str:
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"


def _demo_table(made: Mapping[str, str], expected: Mapping[str, tuple[float, float]],
                actual: Mapping[str, float], manual: float) -> tuple[str, int]:
    """The demo's table (student, submission, expected, got, verdict) and how many scores are off."""
    rows = [("student", "submission", "expected", "got", "")]
    off = 0
    for student, what in made.items():
        lo, hi = expected[student]
        got = actual.get(student)
        ok = got is not None and lo - 1e-9 <= got <= hi + 1e-9
        off += not ok
        rows.append((student, what[:60], _range(lo, hi), "-" if got is None else f"{got:g}",
                     "as expected" if ok else "DIFFERENT (see the report)"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    note = (f"(autograded points; the written answers, {manual:g} points, wait for a hand mark)" if manual
            else "(autograded points)")
    return "\n".join([*(line.rstrip() for line in lines), note]), off


# ----------------------------------------------------------------------------------------------------
# The demo


def run_demo(*, workdir: Path | None = None, synthetic: bool = False, assignment: str | None = None,
             workers: int | None = None, cell_timeout: float = 10.0, sandbox_mode: str = "auto") -> Path:
    """Build a temporary course, grade a sample class, print the grade table; returns the output folder.

    Args:
        workdir: where to build everything (default: a new temporary directory, kept and printed).
        synthetic: use the built-in toy assignment instead of the first lecture in ``solutions/``.
        assignment: which lecture to use (default: the first one).
        workers: parallel graders (default: number of cores).
        cell_timeout: seconds per cell (the hostile loops run into it).
        sandbox_mode: ``auto``, ``bwrap`` or ``none``.

    Raises:
        ValueError: unknown ``assignment`` or a bad limit.
    """
    t0 = time.monotonic()
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="dp-course-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    if synthetic or not list_assignments(SOLUTIONS_DIR):
        sols = base / "solutions"
        shutil.rmtree(sols, ignore_errors=True)
        write_synthetic_assignment(sols)
        name = SYNTHETIC_NAME
        print(f"demo: using the built-in toy assignment {name}", flush=True)
    else:
        sols = SOLUTIONS_DIR
        names = list_assignments(sols)
        name = assignment or names[0]
        if name not in names:
            raise ValueError(f"assignment must be one of {names}, got {name!r}")
        print(f"demo: using the lecture {name}", flush=True)
    source_nb = nbformat.read(sols / name / f"{name}.ipynb", as_version=4)
    scratch = base / "release-course"
    shutil.rmtree(scratch, ignore_errors=True)
    make_course(scratch, [name], solutions_dir=sols)
    subs = base / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    made = make_demo_submissions(scratch, name, source_nb, subs,
                                 secret_paths=[sols / name, base / "graded" / "course" / "gradebook.db"])
    print(f"demo: {len(made)} submissions in {subs}:", flush=True)
    for student, what in made.items():
        print(f"  {student:10s} {what}", flush=True)
    setup = measure_setup(source_nb)
    needed = math.ceil(SETUP_FACTOR * setup + SETUP_MARGIN)
    if needed > cell_timeout:
        print(f"demo: the lecture's imports took {setup:.1f} s here (this machine is busy or slow), so each cell may "
              f"run {needed} s instead of {cell_timeout:g} s ({SETUP_FACTOR:g} x the imports + {SETUP_MARGIN:g} s)",
              flush=True)
        cell_timeout = float(needed)
    else:
        print(f"demo: the lecture's imports took {setup:.1f} s here; each cell may run {cell_timeout:g} s",
              flush=True)
    limits = Limits(cell_timeout=cell_timeout, notebook_timeout=max(120.0, 12 * cell_timeout))
    run = grade(subs, base / "graded", solutions_dir=sols, assignments=[name], workers=workers, limits=limits,
                sandbox_mode=sandbox_mode, force=True)
    release = student_version(scratch, name)
    manual_ids = {str(cell_grade_id(c)) for c in release.cells if is_manual_cell(c)}
    actual = {r.student: sum(s or 0.0 for k, (s, _) in r.exercises.items() if k not in manual_ids)
              for r in run.results if r.assignment == name}
    table, off = _demo_table(made, expected_scores(release, made), actual,
                             sum(_points(c) for c in release.cells if is_manual_cell(c)))
    print("", flush=True)
    print(table, flush=True)
    print("", flush=True)
    print(f"demo: finished in {time.monotonic() - t0:.0f} s; " + (
        "every score is as expected" if not off else f"{off} score(s) differ from the expected: see the report"),
        flush=True)
    print(f"  report:   {run.report_html}", flush=True)
    print(f"  grades:   {run.grades_csv}", flush=True)
    print(f"  feedback: {base / 'graded' / 'feedback'}", flush=True)
    return base / "graded"
