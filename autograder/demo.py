"""The embedded end-to-end example: a temporary course, sample submissions, a grading run.

``dp-course demo`` builds a course from the first lecture in ``solutions/`` (or, with ``--synthetic`` or
when there is none, from a tiny built-in assignment), writes a handful of submissions -- a full solution,
an untouched notebook, a partly wrong one and a few hostile ones -- grades them with the same code as
``dp-course grade`` and prints the grade table and where the report is.

The helpers that make submissions from a source notebook are public: the tests and the benchmark use them.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import nbformat
from nbformat.notebooknode import NotebookNode

from .course import SOLUTIONS_DIR, assignments as list_assignments

__all__ = ["SYNTHETIC_NAME", "write_synthetic_assignment", "strip_solution_markers", "student_version",
           "full_solution", "set_answer", "answer_cells", "HOSTILE", "make_demo_submissions", "run_demo"]

SYNTHETIC_NAME = "00_toy"

_BEGIN, _END = "### BEGIN SOLUTION", "### END SOLUTION"


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
    return cell


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
# Making submissions from notebooks


def strip_solution_markers(source: str) -> str:
    """The solution code of a source cell, without the ``### BEGIN/END SOLUTION`` lines."""
    return "\n".join(line for line in source.split("\n") if _BEGIN not in line and _END not in line)


def answer_cells(nb: NotebookNode) -> list[str]:
    """grade_ids of the code answer cells (autograded solution cells) in order."""
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


def student_version(course: Path, assignment: str, notebook: str | None = None) -> NotebookNode:
    """The released (student) notebook of an assignment in an nbgrader course directory."""
    notebook = notebook or assignment
    return nbformat.read(Path(course) / "release" / assignment / f"{notebook}.ipynb", as_version=4)


def full_solution(release_nb: NotebookNode, source_nb: NotebookNode) -> NotebookNode:
    """The release notebook with every answer cell filled in from the source (what a perfect student hands in)."""
    nb = copy.deepcopy(release_nb)
    sources = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source_nb.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if c.metadata.get("nbgrader", {}).get("solution") and gid in sources:
            c.source = strip_solution_markers(sources[gid]) if c.cell_type == "code" else sources[gid]
    return nb


def set_answer(nb: NotebookNode, grade_id: str, source: str, *, mode: str = "replace") -> NotebookNode:
    """Return a copy of ``nb`` whose cell ``grade_id`` is replaced by / prefixed with / followed by ``source``."""
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            if mode == "replace":
                c.source = source
            elif mode == "prepend":
                c.source = source + "\n" + c.source
            elif mode == "append":
                c.source = c.source + "\n" + source
            else:
                raise ValueError(f"mode must be one of ('replace', 'prepend', 'append'), got {mode!r}")
            return nb
    raise ValueError(f"grade_id must name a cell of the notebook, got {grade_id!r}")


def _first_answer_stub(nb: NotebookNode, grade_id: str) -> str:
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return c.source
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
    answers = answer_cells(release)
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
        for i, (key, (what, code)) in enumerate(HOSTILE.items()):
            code = code.replace("SECRETS", repr(secrets))
            put(f"mallory{i + 1}", set_answer(full, answers[0], code, mode="prepend"), f"hostile: {what}")
    return made


# ----------------------------------------------------------------------------------------------------
# The demo


def run_demo(*, workdir: Path | None = None, synthetic: bool = False, assignment: str | None = None,
             workers: int | None = None, cell_timeout: float = 10.0, keep: bool = True,
             sandbox_mode: str = "auto", out: Callable[[str], None] | None = None) -> Path:
    """Build a temporary course, grade a sample class, print the grade table; returns the output folder.

    Args:
        workdir: where to build everything (default: a new temporary directory, kept and printed).
        synthetic: use the built-in toy assignment instead of the first lecture in ``solutions/``.
        assignment: which lecture to use (default: the first one).
        workers: parallel graders (default: number of cores).
        cell_timeout: seconds per cell (the hostile loops run into it).
        keep: keep the folder (otherwise only the returned path's report is meaningful until exit).
        sandbox_mode: ``auto``, ``bwrap`` or ``none``.
        out: where to print (default: stdout).

    Raises:
        ValueError: unknown ``assignment`` or a bad limit.
    """
    from .course import make_course
    from .grading import grade
    from .sandbox import Limits

    say = out or (lambda s: print(s, flush=True))
    t0 = time.monotonic()
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="dp-course-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    if synthetic or not list_assignments(SOLUTIONS_DIR):
        sols = base / "solutions"
        shutil.rmtree(sols, ignore_errors=True)
        write_synthetic_assignment(sols)
        name = SYNTHETIC_NAME
        say(f"demo: using the built-in toy assignment {name}")
    else:
        sols = SOLUTIONS_DIR
        names = list_assignments(sols)
        name = assignment or names[0]
        if name not in names:
            raise ValueError(f"assignment must be one of {names}, got {name!r}")
        say(f"demo: using the lecture {name}")
    source_nb = nbformat.read(sols / name / f"{name}.ipynb", as_version=4)
    scratch = base / "release-course"
    shutil.rmtree(scratch, ignore_errors=True)
    make_course(scratch, [name], solutions_dir=sols)
    subs = base / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    made = make_demo_submissions(scratch, name, source_nb, subs,
                                 secret_paths=[sols / name, base / "graded" / "course" / "gradebook.db"])
    say(f"demo: {len(made)} submissions in {subs}:")
    for student, what in made.items():
        say(f"  {student:10s} {what}")
    limits = Limits(cell_timeout=cell_timeout, notebook_timeout=max(120.0, 12 * cell_timeout))
    run = grade(subs, base / "graded", solutions_dir=sols, assignments=[name], workers=workers, limits=limits,
                sandbox_mode=sandbox_mode, force=True)
    say("")
    say(run.table())
    say("")
    say(f"demo: finished in {time.monotonic() - t0:.0f} s")
    say(f"  report:   {run.report_html}")
    say(f"  grades:   {run.grades_csv}")
    say(f"  feedback: {base / 'graded' / 'feedback'}")
    return base / "graded"
