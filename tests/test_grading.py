"""Grading a class, end to end (autograder.run.grading): parallel autograde, merge, feedback, report, re-runs.

Built on the toy assignment (``autograder.demo.write_synthetic_assignment``): exercise 1 (two test cells,
1 point each), exercise 2 (2 points), exercise 3 (1 point), all with hidden tests, and a hand-graded answer.
The scores expected below follow from which answers each student got right; the references for
"identical scores" are plain ``nbgrader autograde`` runs, not this tool's own output.  Intake is tested in
``test_intake.py``, the preprocessors and pages on fixture notebooks in ``test_preprocessors.py``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbgrader.api import Gradebook
from traitlets.config.loader import PyFileConfigLoader

from adversarial import hostile
from autograder.course import cells, course
from autograder import demo
from autograder.feedback import feedback
from autograder.isolation import isolation
from autograder.execute.diagnostics import last_error
from autograder.intake.events import Severity
from autograder.run.grading import grade
from autograder.course.limits import Limits
from autograder.feedback.strip_hidden_tests import StripHiddenTests
from autograder.feedback.withhold_hidden_outputs import HIDDEN_FAILED
from autograder.run.results import GradeRun, SubmissionResult

pytestmark = pytest.mark.xdist_group("grading")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=10, notebook_timeout=60)
WRONG_EX2 = "def rr_keep_probability(epsilon):\n    return 0.5"   # passes the visible test, fails hidden ones
HIDDEN_CODE = ["laplace_scale(3.0, 0.25)", "rr_keep_probability(math.log(3.0))", "np.arange(10), 6.5"]


Graded = tuple[Path, Path, GradeRun]


# --------------------------------------------------------------------------------------------------------
# A grading run, end to end


def _class(toy: hostile.Toy, dest: Path) -> Path:
    hostile.write_notebook(dest / f"alice_{NAME}.ipynb", toy.full)
    hostile.write_notebook(dest / f"bob_{NAME}.ipynb", toy.release)
    hostile.write_notebook(dest / f"carol_{NAME}.ipynb", cells.set_answer(toy.full, "ex2_answer", WRONG_EX2))
    return dest


EXPECTED = {  # score of each autograded test cell, from which answers are right
    "alice": {"ex1_unit": 1.0, "ex1_scaling": 1.0, "ex2_tests": 2.0, "ex3_tests": 1.0},
    "bob": {"ex1_unit": 0.0, "ex1_scaling": 0.0, "ex2_tests": 0.0, "ex3_tests": 0.0},
    "carol": {"ex1_unit": 1.0, "ex1_scaling": 1.0, "ex2_tests": 0.0, "ex3_tests": 1.0},
}


def _auto(r: SubmissionResult) -> dict[str, float | None]:
    return {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"}


@pytest.fixture(scope="module")
def graded(toy: hostile.Toy, tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Graded:
    base = tmp_path_factory.mktemp("graded")
    subs = _class(toy, base / "subs")
    run = grade(subs, base / "out", solutions_dir=toy.solutions, workers=2, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    return base, subs, run


def test_scores_follow_the_answers(graded: Graded) -> None:
    base, subs, run = graded
    assert {r.student: _auto(r) for r in run.results} == EXPECTED
    for r in run.results:
        assert r.exercises["q4_answer"] == ((None, 2.0) if r.student != "bob" else (0.0, 2.0))
        assert r.needs_manual_grade == (r.student != "bob")  # bob left the written answer empty


def _plain_nbgrader_scores(toy: hostile.Toy, base: Path, students: dict[str, Path]) -> dict[str, dict[str, float]]:
    """Reference: nbgrader's own sequential autograde in a fresh course, read from its gradebook."""
    crs = course.make_course(base / "plain", [NAME], solutions_dir=toy.solutions)
    for student, path in students.items():
        dest = crs / "submitted" / student / NAME
        dest.mkdir(parents=True)
        shutil.copyfile(path, dest / f"{NAME}.ipynb")
    course.nbgrader(["autograde", NAME], cwd=crs, timeout=600)
    out = {}
    with Gradebook(f"sqlite:///{crs / 'gradebook.db'}") as gb:
        for student in students:
            nb = gb.find_submission_notebook(NAME, NAME, student)
            out[student] = {g.name: float(g.auto_score) for g in nb.grades if g.name != "q4_answer"}
    return out


def test_same_scores_as_plain_nbgrader_and_as_one_worker(toy: hostile.Toy, graded: Graded, tmp_path: Path,
                                                         grading_sandbox: str) -> None:
    base, subs, run = graded
    students = {f.name.split("_")[0]: f for f in subs.glob("*.ipynb")}
    assert _plain_nbgrader_scores(toy, tmp_path, students) == {r.student: _auto(r) for r in run.results}
    seq = grade(subs, tmp_path / "seq", solutions_dir=toy.solutions, workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    assert seq.workers == 1 and {r.student: _auto(r) for r in seq.results} == EXPECTED


def test_grades_csv_is_nbgrader_export(graded: Graded) -> None:
    base, subs, run = graded
    rows = list(csv.DictReader(io.StringIO(run.grades_csv.read_text())))
    assert [r["student_id"] for r in rows] == ["alice", "bob", "carol"]
    assert {r["student_id"]: float(r["raw_score"]) for r in rows} == {"alice": 5.0, "bob": 0.0, "carol": 3.0}
    assert all(float(r["max_score"]) == 7.0 and r["assignment"] == NAME for r in rows)
    # the main gradebook holds every student, merged from the workers' copies
    con = sqlite3.connect(run.output_dir / "course" / "gradebook.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert sorted(x for (x,) in con.execute("SELECT id FROM student")) == ["alice", "bob", "carol"]
    con.close()


def test_feedback_has_no_hidden_tests(graded: Graded) -> None:
    base, subs, run = graded
    crs = run.output_dir / "course"
    hidden = feedback.hidden_test_lines(crs)[NAME][NAME]
    assert len(hidden) == 4 and all("HIDDEN-TOKEN" in line for line in hidden)
    for r in run.results:
        (page,) = r.feedback
        html = (run.output_dir / page).read_text()
        assert f"Score: {r.score:.1f} / 7.0" in html and "hidden tests are not shown" in html
        assert feedback.leaked_hidden_lines(html, hidden) == []
        assert not any(code in html for code in HIDDEN_CODE), r.student
    # nbgrader's own rendering of the same notebook does show them: the stripping is what removes them
    raw, _ = HTMLExporter().from_filename(str(crs / "autograded" / "carol" / NAME / f"{NAME}.ipynb"))
    assert feedback.leaked_hidden_lines(raw, hidden) == hidden
    # carol failed a hidden check: she sees that it failed, not its code nor its message (issue 27 item 2)
    carol = (run.output_dir / next(r for r in run.results if r.student == "carol").feedback[0]).read_text()
    assert HIDDEN_FAILED in carol and "HIDDEN-TOKEN-EX2" not in carol


def test_report_files(graded: Graded) -> None:
    base, subs, run = graded
    md = run.report_md.read_text()
    for student in ("alice", "bob", "carol"):
        assert f"| {student} | {NAME} |" in md
    assert "## Score distribution per exercise" in md
    assert "| 00_toy | ex2_tests | 2 | 0.67 | 1/3 | 0/3 | 2/3 | 0/3 |" in md
    assert (run.output_dir / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = run.report_html.read_text()
    assert "<img" in html and "scores.png" in html and "<table>" in html
    assert "<td>alice</td><td>00_toy</td><td>5</td><td>7</td>" in html
    results = json.loads((run.output_dir / "results.json").read_text())
    assert {r["student"] for r in results["results"]} == {"alice", "bob", "carol"}


def test_rerun_grades_only_new_or_changed(toy: hostile.Toy, graded: Graded, tmp_path: Path,
                                          grading_sandbox: str) -> None:
    base, subs, run = graded
    work = tmp_path / "subs"
    shutil.copytree(subs, work)
    out = tmp_path / "out"
    shutil.copytree(run.output_dir, out)
    before = {r.student: r.exercises for r in run.results}
    again = grade(work, out, solutions_dir=toy.solutions, workers=2, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    assert again.graded_now == 0 and again.skipped == 3
    assert {r.student: r.exercises for r in again.results} == before
    # carol fixes exercise 2, dan hands in late: only those two are graded
    hostile.write_notebook(work / f"carol_{NAME}.ipynb", toy.full)
    hostile.write_notebook(work / f"dan_{NAME}.ipynb", toy.full)
    third = grade(work, out, solutions_dir=toy.solutions, workers=2, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    assert third.graded_now == 2 and third.skipped == 2
    scores = {r.student: _auto(r) for r in third.results}
    assert scores == {**EXPECTED, "carol": EXPECTED["alice"], "dan": EXPECTED["alice"]}
    assert {r.student for r in third.results if r.regraded} == {"carol", "dan"}


def test_regrade_keeps_manual_grades(toy: hostile.Toy, graded: Graded, tmp_path: Path,
                                     grading_sandbox: str) -> None:
    """A resubmission that changes another answer is re-graded; the hand mark stays, and is not flagged for review
    (its answer did not change: ``tests/test_migration.py`` has the changed ones)."""
    base, subs, run = graded
    out = tmp_path / "out"
    shutil.copytree(run.output_dir, out)
    db = f"sqlite:///{out / 'course' / 'gradebook.db'}"
    with Gradebook(db) as gb:
        g = gb.find_grade("q4_answer", NAME, NAME, "alice")
        g.manual_score = 1.5
        g.needs_manual_grade = False  # as Formgrader saves a hand mark
        gb.db.commit()
    work = tmp_path / "subs"
    shutil.copytree(subs, work)
    wrong_ex3 = "def count_above(v, t):\n    return 0"
    hostile.write_notebook(work / f"alice_{NAME}.ipynb", cells.set_answer(toy.full, "ex3_answer", wrong_ex3))
    again = grade(work, out, solutions_dir=toy.solutions, workers=1, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    alice = next(r for r in again.results if r.student == "alice")
    assert _auto(alice)["ex3_tests"] == 0.0
    with Gradebook(db) as gb:
        g = gb.find_grade("q4_answer", NAME, NAME, "alice")
        assert g.manual_score == 1.5 and not g.needs_manual_grade
    assert not [e for e in alice.events if e.kind.value == "hand_mark_to_review"]
    assert alice.score == 4.0 + 1.5


@pytest.mark.parametrize("kwargs,match", [
    ({"workers": 0}, "workers must be an integer >= 1"),
    ({"workers": 1.5}, "workers must be an integer >= 1"),
    ({"sandbox_mode": "docker"}, "sandbox_mode must be one of"),
    ({"assignments": ["99_nope"]}, "assignment must be one of"),
])
def test_grade_rejects_bad_arguments(toy: hostile.Toy, tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        grade(tmp_path, tmp_path / "out", solutions_dir=toy.solutions, **kwargs)


# --------------------------------------------------------------------------------------------------------
# The real lectures


def test_real_lectures_full_solutions_get_full_marks(tmp_path: Path, grading_sandbox: str) -> None:
    """Every lecture in solutions/: the solution (as a student hands it in) gets every autograded point."""
    lectures = course.assignments()
    assert lectures, "solutions/ holds no lecture"
    scratch = course.make_course(tmp_path / "c", lectures)
    subs = tmp_path / "subs"
    for name in lectures:
        source = nbformat.read(course.SOLUTIONS_DIR / name / f"{name}.ipynb", as_version=4)
        full = cells.full_solution(cells.student_version(scratch, name), source)
        hostile.write_notebook(subs / f"ada_{name}.ipynb", full)
    run = grade(subs, tmp_path / "out", workers=2, limits=Limits(cell_timeout=60, notebook_timeout=300),
                progress=False, sandbox_mode=grading_sandbox)
    assert {r.assignment for r in run.results} == set(lectures)
    for r in run.results:
        auto = {k: v for k, v in r.exercises.items() if v[0] is not None}
        assert auto and all(s == m for s, m in auto.values()), (r.assignment, r.exercises, r.events)
        bad = [e for e in r.events if e.severity is Severity.ERROR or str(e.kind).startswith("tampering")]
        assert not bad, bad


# --------------------------------------------------------------------------------------------------------
# Hidden tests with the delimiters the course configures


SECRET_BEGIN, SECRET_END = "BEGIN SECRET CHECKS", "END SECRET CHECKS"


@pytest.fixture
def secret_delimiters(toy: hostile.Toy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy assignment with its hidden tests between other delimiters, and a course config naming them."""
    sols = tmp_path / "solutions"
    shutil.copytree(toy.solutions, sols)
    nb_path = sols / NAME / f"{NAME}.ipynb"
    nb_path.write_text(nb_path.read_text().replace("BEGIN HIDDEN TESTS", SECRET_BEGIN)
                       .replace("END HIDDEN TESTS", SECRET_END))
    config = tmp_path / "nbgrader_config.py"
    config.write_text(course.CONFIG_FILE.read_text() + f"\nc.ClearHiddenTests.begin_test_delimeter = {SECRET_BEGIN!r}"
                      f"\nc.ClearHiddenTests.end_test_delimeter = {SECRET_END!r}\n")
    monkeypatch.setattr(course, "CONFIG_FILE", config)
    return sols


def test_hidden_tests_follow_the_configured_delimiters(secret_delimiters: Path, tmp_path: Path) -> None:
    crs = course.make_course(tmp_path / "c", [NAME], solutions_dir=secret_delimiters)
    assert feedback.test_delimiters(crs) == (SECRET_BEGIN, SECRET_END)
    hidden = feedback.hidden_test_lines(crs)[NAME][NAME]
    assert len(hidden) == 4 and all("HIDDEN-TOKEN" in line for line in hidden)
    assert "HIDDEN-TOKEN" not in (crs / "release" / NAME / f"{NAME}.ipynb").read_text()  # nbgrader used them too
    source = nbformat.read(crs / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(crs)).load_config()
    stripped, _ = StripHiddenTests(config=config).preprocess(nbformat.from_dict(source), {})
    assert not any("HIDDEN-TOKEN" in c.source or SECRET_BEGIN in c.source for c in stripped.cells)
    # with nbgrader's default delimiters nothing would have been found: the configuration is what counts
    unchanged, _ = StripHiddenTests().preprocess(nbformat.from_dict(source), {})
    assert sum("HIDDEN-TOKEN" in c.source for c in unchanged.cells) == 3


def test_feedback_strips_hidden_tests_with_configured_delimiters(toy: hostile.Toy, secret_delimiters: Path,
                                                                 tmp_path: Path, grading_sandbox: str) -> None:
    subs = tmp_path / "subs"
    hostile.write_notebook(subs / f"carol_{NAME}.ipynb", cells.set_answer(toy.full, "ex2_answer", WRONG_EX2))
    run = grade(subs, tmp_path / "out", solutions_dir=secret_delimiters, workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    (carol,) = run.results
    assert _auto(carol) == EXPECTED["carol"]
    html = (run.output_dir / carol.feedback[0]).read_text()
    hidden = feedback.hidden_test_lines(run.output_dir / "course")[NAME][NAME]
    assert len(hidden) == 4 and feedback.leaked_hidden_lines(html, hidden) == []
    assert not any(code in html for code in HIDDEN_CODE) and SECRET_BEGIN not in html
    assert HIDDEN_FAILED in html and "HIDDEN-TOKEN-EX2" not in html and "hidden tests are not shown" in html


# --------------------------------------------------------------------------------------------------------
# Data files of the assignment, read by test cells in the trusted kernel


def test_trusted_test_cells_read_the_assignments_data_files(tmp_path: Path, grading_sandbox: str) -> None:
    """A test cell that reads a data file kept next to the source notebook finds it in the trusted kernel (a
    private copy of the instructor's files, made for each notebook) and passes for a right answer."""
    sols = tmp_path / "solutions"
    demo.write_synthetic_assignment(sols)
    src = sols / NAME / f"{NAME}.ipynb"
    nb = nbformat.read(src, as_version=4)
    cell = nb.cells[hostile.cell_index(nb, "ex1_unit")]
    cell.source = ('import json\nwith open("reference.json") as _f:\n    _ref = json.load(_f)\n'
                   'assert math.isclose(laplace_scale(1.0, 0.5), _ref["scale"])\n' + cell.source)
    nbformat.write(nb, src)
    (sols / NAME / "reference.json").write_text(json.dumps({"scale": 2.0}))
    full, _release = hostile.make_full(course.make_course(tmp_path / "built", [NAME], solutions_dir=sols), sols)
    subs = tmp_path / "subs"
    hostile.write_notebook(subs / f"alice_{NAME}.ipynb", full)
    hostile.write_notebook(subs / f"carol_{NAME}.ipynb", cells.set_answer(full, "ex2_answer", WRONG_EX2))
    run = grade(subs, tmp_path / "out", solutions_dir=sols, workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    assert {r.student: _auto(r) for r in run.results} == {s: EXPECTED[s] for s in ("alice", "carol")}
    assert not [e for r in run.results for e in r.events if e.kind.severity is Severity.ERROR], run.results


# --------------------------------------------------------------------------------------------------------
# Graded with --no-sandbox: the course directory is still out of reach


def test_no_sandbox_keeps_the_course_directory_from_student_code(toy: hostile.Toy, tmp_path: Path) -> None:
    sols, full = toy.solutions, toy.full
    out = tmp_path / "out"
    targets = [out / "course" / "pwned.txt", out / "course" / "gradebook.db",
               out / "course" / "source" / NAME / f"{NAME}.ipynb", out / "course" / "release" / NAME / f"{NAME}.ipynb",
               out / "work" / "w0" / "source" / NAME / f"{NAME}.ipynb"]
    body = (f"for _p in {[str(p) for p in targets]!r}:\n    try:\n        with open(_p, 'a') as _f:\n"
            "            _f.write('pwned')\n        hits.append(_p)\n    except OSError:\n        pass")
    subs = tmp_path / "subs"
    hostile.write_notebook(subs / f"alice_{NAME}.ipynb", full)
    vandal = cells.set_answer(full, "ex1_answer", hostile.probe_code("VANDAL:", body), mode="prepend")
    hostile.write_notebook(subs / f"vandal_{NAME}.ipynb", vandal)
    info = isolation.probe("none")
    refusal = isolation.grading_refusal(info, "none")
    if refusal:  # a root grader that cannot move kernels to a dedicated uid: it refuses instead
        assert info.as_root and not info.drops_uid
        with pytest.raises(RuntimeError, match="dedicated unprivileged uid"):
            grade(subs, out, solutions_dir=sols, workers=1, limits=LIMITS, progress=False, sandbox_mode="none")
        return
    run = grade(subs, out, solutions_dir=sols, workers=1, limits=LIMITS, progress=False, sandbox_mode="none")
    autograded = out / "course" / "autograded" / "vandal" / NAME / f"{NAME}.ipynb"
    assert hostile.probe_output(autograded, "VANDAL:") == [], "student code wrote into the course directory"
    assert {r.student: _auto(r) for r in run.results} == {"alice": EXPECTED["alice"], "vandal": EXPECTED["alice"]}
    assert not (out / "course" / "pwned.txt").exists()
    assert b"pwned" not in (out / "course" / "source" / NAME / f"{NAME}.ipynb").read_bytes()
    md = run.report_md.read_text()
    assert "WARNING: student code was not sandboxed" in md and info.course_protection() in md
    assert os.access(out / "course" / "gradebook.db", os.W_OK), "unsealed after the run (formgrader writes to it)"


def test_last_error_skips_nbgraders_see_above() -> None:
    log = ("[AutogradeApp | ERROR] There was an error processing assignment\nTraceback (most recent call last):\n"
           "RuntimeError: Kernel died before replying to kernel_info\n"
           "nbgrader.converters.base.NbGraderException: Please see the the above traceback\n")
    assert last_error({"success": False, "log": log}) == (
        "RuntimeError: Kernel died before replying to kernel_info")
