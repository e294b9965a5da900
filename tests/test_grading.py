"""Grading a class (autograder.grading, autograder.report): intake, parallel autograde, merge, outputs.

Built on the toy assignment (``autograder.demo.write_synthetic_assignment``): exercise 1 (two test cells,
1 point each), exercise 2 (2 points), exercise 3 (1 point), all with hidden tests, and a hand-graded answer.
The scores expected below follow from which answers each student got right; the references for
"identical scores" are plain ``nbgrader autograde`` runs, not this tool's own output.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings, strategies as st

from adversarial import hostile
from autograder import course, demo, grading, isolation, report
from autograder.grading import Limits, collect_submissions, grade, notebook_names

pytestmark = pytest.mark.xdist_group("grading")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=10, notebook_timeout=60)
WRONG_EX2 = "def rr_keep_probability(epsilon):\n    return 0.5"   # passes the visible test, fails hidden ones
HIDDEN_CODE = ["laplace_scale(3.0, 0.25)", "rr_keep_probability(math.log(3.0))", "np.arange(10), 6.5"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return hostile.toy(tmp_path_factory.mktemp("toy"))


def _write(path: Path, nb) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
    return path


# --------------------------------------------------------------------------------------------------------
# Intake: layouts, names, broken files (no grading)


@pytest.mark.parametrize("prefix,student", [
    ("alice_", "alice"),                                        # <student>_<notebook>
    ("alice_resubmission_", "alice"),                           # <student>_<anything>_<notebook>
    ("doejane_late_123456_7890123_", "doejane"),                # Canvas download, late
    ("Jane Doe_123456_assignsubmission_file_", "Jane_Doe"),     # Moodle download
    ("  bob-", "bob"),
    ("x/y z_", "x_y_z"),                                        # unsafe characters replaced
])
def test_student_from_prefix(prefix, student):
    assert grading._student_from_prefix(prefix) == student


@settings(max_examples=200)
@given(st.text())
def test_student_ids_are_safe_directory_names(prefix):
    sid = grading._student_from_prefix(prefix)
    assert all(c.isascii() and (c.isalnum() or c in "_.@-") for c in sid)
    assert sid not in (".", "..") and "/" not in sid


@settings(max_examples=80)
@given(st.lists(st.tuples(st.text(alphabet="abcXYZ019_- ().", max_size=12), st.booleans(),
                          st.text(alphabet="abc_- ()1", max_size=6)), min_size=1, max_size=6))
def test_every_file_is_graded_or_reported(specs):
    """Whatever the file names, each file is attributed to a student, or listed as unmatched/duplicate."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        written = set()
        for prefix, with_name, suffix in specs:
            name = f"{prefix}{NAME if with_name else ''}{suffix}.ipynb"
            if name.startswith(".") or "/" in name:
                continue
            (Path(d) / name).write_text("{}")
            written.add(name)
        intake = collect_submissions(Path(d), {NAME: [NAME]})
        seen = [f.origin for f in intake.files] + [p for p, _ in intake.unmatched] + [o for o, _ in intake.duplicates]
        assert sorted(seen) == sorted(written)
        assert all(f.student and f.problem_kind == "not_a_notebook" for f in intake.files)


def test_nbgrader_layout(toy, tmp_path):
    sols, crs, full, release = toy
    _write(tmp_path / "submitted" / "alice" / NAME / f"{NAME}.ipynb", full)
    _write(tmp_path / "submitted" / "bob" / NAME / f"{NAME}.ipynb", release)
    (tmp_path / "submitted" / "bob" / NAME / "timestamp.txt").write_text("2025-01-01 10:00:00")
    intake = collect_submissions(tmp_path, notebook_names(sols))   # the course folder holding submitted/
    assert [(f.student, f.assignment, f.notebook) for f in intake.files] == [
        ("alice", NAME, NAME), ("bob", NAME, NAME)]
    assert intake.unmatched == [] and intake.layout == "folder:nbgrader"


def test_flat_lms_layout_and_unmatched_files(toy, tmp_path):
    sols, crs, full, release = toy
    names = {
        f"alice_{NAME}.ipynb": "alice",
        f"Bob Smith_12345_assignsubmission_file_{NAME}.ipynb": "Bob_Smith",
        f"carol_late_123_456_{NAME}.ipynb": "carol",
        f"dave_{NAME} (1).ipynb": "dave",
        f"Erin Li_777_assignsubmission_file/{NAME}.ipynb": "Erin_Li",      # Moodle: one folder per student
    }
    for rel in names:
        _write(tmp_path / rel, full)
    (tmp_path / "README.txt").write_text("hello")
    _write(tmp_path / "notes.ipynb", full)
    _write(tmp_path / f"{NAME}.ipynb", full)
    os.symlink("/etc/passwd", tmp_path / f"frank_{NAME}.ipynb")
    intake = collect_submissions(tmp_path, notebook_names(sols))
    got = {f.origin: f.student for f in intake.files}
    assert got == names
    assert dict(intake.unmatched) == {
        "README.txt": "not a .ipynb file",
        "notes.ipynb": "no assignment notebook name in the file name",
        f"{NAME}.ipynb": "no student name before the notebook name",
        f"frank_{NAME}.ipynb": "symbolic link (ignored)",
    }


def test_zip_of_either_layout_and_unsafe_members(toy, tmp_path):
    sols, crs, full, release = toy
    data = nbformat.writes(full)
    zpath = tmp_path / "subs.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(f"submitted/alice/{NAME}/{NAME}.ipynb", data)
        zf.writestr(f"downloads/bob_{NAME}.ipynb", data)
        zf.writestr(f"../evil_{NAME}.ipynb", data)
        zf.writestr("__MACOSX/._junk", "x")
    intake = collect_submissions(zpath, notebook_names(sols), extract_dir=tmp_path / "x")
    assert sorted((f.student, f.origin) for f in intake.files) == [
        ("alice", f"submitted/alice/{NAME}/{NAME}.ipynb"), ("bob", f"downloads/bob_{NAME}.ipynb")]
    assert all(Path(f.path).is_file() and Path(f.path).is_relative_to(tmp_path / "x") for f in intake.files)
    assert (f"../evil_{NAME}.ipynb", "unsafe path in the archive") in intake.unmatched
    assert not (tmp_path / f"evil_{NAME}.ipynb").exists()
    with pytest.raises(ValueError, match="extract_dir is required"):
        collect_submissions(zpath, notebook_names(sols))


def test_duplicates_keep_the_newest(toy, tmp_path):
    sols, crs, full, release = toy
    old = _write(tmp_path / f"alice_{NAME}.ipynb", release)
    new = _write(tmp_path / f"alice_resubmission_{NAME}.ipynb", full)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    intake = collect_submissions(tmp_path, notebook_names(sols))
    assert [f.origin for f in intake.files] == [new.name]
    assert intake.duplicates == [(old.name, new.name)]


def test_broken_files_are_flagged_not_opened(toy, tmp_path):
    sols, crs, full, release = toy
    (tmp_path / f"garbled_{NAME}.ipynb").write_text('{"cells": [ oops')
    (tmp_path / f"jsonish_{NAME}.ipynb").write_text('{"hello": "world"}')
    (tmp_path / f"latin_{NAME}.ipynb").write_bytes(b"\xff\xfe\x00")
    big = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * 30_000)])
    _write(tmp_path / f"whale_{NAME}.ipynb", big)
    intake = collect_submissions(tmp_path, notebook_names(sols), limits=Limits(max_notebook_mb=0.02))
    kinds = {f.student: f.problem_kind for f in intake.files}
    assert kinds == {"garbled": "invalid_json", "jsonish": "not_a_notebook", "latin": "invalid_json",
                     "whale": "too_large"}
    whale = next(f for f in intake.files if f.student == "whale")
    assert "over the limit of 0.02 MB" in whale.problem and whale.sha256.startswith("size:")


def test_student_pattern_overrides_the_rules(toy, tmp_path):
    sols, crs, full, release = toy
    _write(tmp_path / f"zed-hw-{NAME}.ipynb", full)
    intake = collect_submissions(tmp_path, notebook_names(sols), student_pattern=r"^(?P<student>[a-z]+)-")
    assert [f.student for f in intake.files] == ["zed"]
    with pytest.raises(ValueError, match="student_pattern must contain a named group"):
        collect_submissions(tmp_path, notebook_names(sols), student_pattern=r"^([a-z]+)-")


@pytest.mark.parametrize("bad", ["/nonexistent/dp-course-subs", "."])
def test_collect_rejects_bad_sources(toy, tmp_path, bad):
    sols = toy[0]
    src = Path(bad) if bad != "." else tmp_path / "plain.txt"
    if bad == ".":
        src.write_text("not a zip")
    with pytest.raises(ValueError, match="submissions must be"):
        collect_submissions(src, notebook_names(sols), extract_dir=tmp_path)


def test_suspicious_lines_and_changed_test_cells(toy):
    sols, crs, full, release = toy
    nb = demo.set_answer(full, "ex1_answer", "import numpy as np\nnp.isclose = lambda *a, **k: True\nx = 1")
    i = hostile._cell_index(nb, "ex1_answer")
    assert grading.suspicious_lines(nb) == [f"cell {i}: np.isclose = lambda *a, **k: True"]
    assert grading.suspicious_lines(full) == []
    assert grading.changed_test_cells(full, release) == []
    nb = demo.set_answer(full, "ex2_tests", "assert True")
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "ex3_tests"]
    nb.cells.append(nb.cells[hostile._cell_index(nb, "ex1_scaling")])
    assert grading.changed_test_cells(nb, release) == [
        "test cell ex1_scaling appears 2 times (nbgrader graded the last one)",
        "test cell ex2_tests was edited (nbgrader restored the original)",
        "test cell ex3_tests was deleted (nbgrader put it back)"]


# --------------------------------------------------------------------------------------------------------
# A grading run, end to end


def _class(toy, dest: Path) -> Path:
    sols, crs, full, release = toy
    _write(dest / f"alice_{NAME}.ipynb", full)
    _write(dest / f"bob_{NAME}.ipynb", release)
    _write(dest / f"carol_{NAME}.ipynb", demo.set_answer(full, "ex2_answer", WRONG_EX2))
    return dest


EXPECTED = {  # score of each autograded test cell, from which answers are right
    "alice": {"ex1_unit": 1.0, "ex1_scaling": 1.0, "ex2_tests": 2.0, "ex3_tests": 1.0},
    "bob": {"ex1_unit": 0.0, "ex1_scaling": 0.0, "ex2_tests": 0.0, "ex3_tests": 0.0},
    "carol": {"ex1_unit": 1.0, "ex1_scaling": 1.0, "ex2_tests": 0.0, "ex3_tests": 1.0},
}


def _auto(r) -> dict[str, float]:
    return {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"}


@pytest.fixture(scope="module")
def graded(toy, tmp_path_factory, grading_sandbox):
    base = tmp_path_factory.mktemp("graded")
    subs = _class(toy, base / "subs")
    run = grade(subs, base / "out", solutions_dir=toy[0], workers=2, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    return base, subs, run


def test_scores_follow_the_answers(graded):
    base, subs, run = graded
    assert {r.student: _auto(r) for r in run.results} == EXPECTED
    for r in run.results:
        assert r.exercises["q4_answer"] == ((None, 2.0) if r.student != "bob" else (0.0, 2.0))
        assert r.needs_manual_grade == (r.student != "bob")  # bob left the written answer empty


def _plain_nbgrader_scores(toy, base: Path, students: dict[str, Path]) -> dict[str, dict[str, float]]:
    """Reference: nbgrader's own sequential autograde in a fresh course, read from its gradebook."""
    from nbgrader.api import Gradebook

    crs = course.make_course(base / "plain", [NAME], solutions_dir=toy[0])
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


def test_same_scores_as_plain_nbgrader_and_as_one_worker(toy, graded, tmp_path, grading_sandbox):
    base, subs, run = graded
    students = {f.name.split("_")[0]: f for f in subs.glob("*.ipynb")}
    assert _plain_nbgrader_scores(toy, tmp_path, students) == {r.student: _auto(r) for r in run.results}
    seq = grade(subs, tmp_path / "seq", solutions_dir=toy[0], workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    assert seq.workers == 1 and {r.student: _auto(r) for r in seq.results} == EXPECTED


def test_grades_csv_is_nbgrader_export(graded):
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


def test_feedback_has_no_hidden_tests(graded):
    base, subs, run = graded
    crs = run.output_dir / "course"
    hidden = report.hidden_test_lines(crs)[NAME][NAME]
    assert len(hidden) == 4 and all("HIDDEN-TOKEN" in line for line in hidden)
    for r in run.results:
        (page,) = r.feedback
        html = (run.output_dir / page).read_text()
        assert f"Score: {r.score:.1f} / 7.0" in html and "hidden tests are not shown" in html
        assert report.leaked_hidden_lines(html, hidden) == []
        assert not any(code in html for code in HIDDEN_CODE), r.student
    # nbgrader's own rendering of the same notebook does show them: the stripping is what removes them
    from nbconvert import HTMLExporter
    raw, _ = HTMLExporter().from_filename(str(crs / "autograded" / "carol" / NAME / f"{NAME}.ipynb"))
    assert report.leaked_hidden_lines(raw, hidden) == hidden
    # carol failed a hidden check: she sees its message, not its code
    carol = (run.output_dir / next(r for r in run.results if r.student == "carol").feedback[0]).read_text()
    assert "hidden check HIDDEN-TOKEN-EX2 failed" in carol


def test_strip_hidden_tests_scrubs_quoted_outputs():
    secret = 'assert np.isclose(f(3.0), 12.0), "hidden HIDDEN-TOKEN"'
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('leak')", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text=f"caller said: {secret}\n")]),
        nbformat.v4.new_code_cell(f"assert f(1) == 1\n### BEGIN HIDDEN TESTS\n{secret}\n### END HIDDEN TESTS",
                                  outputs=[nbformat.v4.new_output("error", ename="AssertionError",
                                                                  evalue="hidden HIDDEN-TOKEN",
                                                                  traceback=["\x1b[0;31m" + secret])]),
    ])
    nb.cells[1].metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "t",
                                        "points": 1, "schema_version": 3}
    out, _ = report.StripHiddenTests().preprocess(nb, {})
    assert "[output removed: it quoted hidden test code]" in out.cells[0].outputs[0].text
    assert secret not in out.cells[1].source and "hidden tests are not shown" in out.cells[1].source
    err = [o for o in out.cells[1].outputs if o.output_type == "error"][0]
    assert err.traceback == ["AssertionError: hidden HIDDEN-TOKEN"]


def test_report_files(graded):
    base, subs, run = graded
    md = run.report_md.read_text()
    for student in ("alice", "bob", "carol"):
        assert f"| {student} | {NAME} |" in md
    assert "## Score distribution per exercise" in md
    assert "| 00_toy | ex2_tests | 2 | 0.67 | 1/3 | 0/3 | 2/3 | 0/3 |" in md
    assert (run.output_dir / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = run.report_html.read_text()
    assert "<img" in html and "scores.png" in html and "<table>" in html
    results = json.loads((run.output_dir / "results.json").read_text())
    assert {r["student"] for r in results["results"]} == {"alice", "bob", "carol"}


def test_rerun_grades_only_new_or_changed(toy, graded, tmp_path, grading_sandbox):
    base, subs, run = graded
    work = tmp_path / "subs"
    shutil.copytree(subs, work)
    out = tmp_path / "out"
    shutil.copytree(run.output_dir, out)
    before = {r.student: r.exercises for r in run.results}
    again = grade(work, out, solutions_dir=toy[0], workers=2, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    assert again.graded_now == 0 and again.skipped == 3
    assert {r.student: r.exercises for r in again.results} == before
    # carol fixes exercise 2, dan hands in late: only those two are graded
    _write(work / f"carol_{NAME}.ipynb", toy[2])
    _write(work / f"dan_{NAME}.ipynb", toy[2])
    third = grade(work, out, solutions_dir=toy[0], workers=2, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    assert third.graded_now == 2 and third.skipped == 2
    scores = {r.student: _auto(r) for r in third.results}
    assert scores == {**EXPECTED, "carol": EXPECTED["alice"], "dan": EXPECTED["alice"]}
    assert {r.student for r in third.results if r.regraded} == {"carol", "dan"}


def test_regrade_keeps_manual_grades_for_review(toy, graded, tmp_path, grading_sandbox):
    from nbgrader.api import Gradebook

    base, subs, run = graded
    out = tmp_path / "out"
    shutil.copytree(run.output_dir, out)
    db = f"sqlite:///{out / 'course' / 'gradebook.db'}"
    with Gradebook(db) as gb:
        g = gb.find_grade("q4_answer", NAME, NAME, "alice")
        g.manual_score = 1.5
        gb.db.commit()
    work = tmp_path / "subs"
    shutil.copytree(subs, work)
    _write(work / f"alice_{NAME}.ipynb", demo.set_answer(toy[2], "ex3_answer", "def count_above(v, t):\n    return 0"))
    again = grade(work, out, solutions_dir=toy[0], workers=1, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    alice = next(r for r in again.results if r.student == "alice")
    assert _auto(alice)["ex3_tests"] == 0.0
    with Gradebook(db) as gb:
        g = gb.find_grade("q4_answer", NAME, NAME, "alice")
        assert g.manual_score == 1.5 and g.needs_manual_grade  # kept, but flagged for review (nbgrader's rule)


@pytest.mark.parametrize("kwargs,match", [
    ({"workers": 0}, "workers must be an integer >= 1"),
    ({"workers": 1.5}, "workers must be an integer >= 1"),
    ({"sandbox_mode": "docker"}, "sandbox_mode must be one of"),
    ({"assignments": ["99_nope"]}, "assignment must be one of"),
])
def test_grade_rejects_bad_arguments(toy, tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        grade(tmp_path, tmp_path / "out", solutions_dir=toy[0], **kwargs)


# --------------------------------------------------------------------------------------------------------
# The real lectures


def test_real_lectures_full_solutions_get_full_marks(tmp_path, grading_sandbox):
    """Every lecture in solutions/: the solution (as a student hands it in) gets every autograded point."""
    lectures = course.assignments()
    assert lectures, "solutions/ holds no lecture"
    scratch = course.make_course(tmp_path / "c", lectures)
    subs = tmp_path / "subs"
    for name in lectures:
        source = nbformat.read(course.SOLUTIONS_DIR / name / f"{name}.ipynb", as_version=4)
        _write(subs / f"ada_{name}.ipynb", demo.full_solution(demo.student_version(scratch, name), source))
    run = grade(subs, tmp_path / "out", workers=2, limits=Limits(cell_timeout=60, notebook_timeout=300),
                progress=False, sandbox_mode=grading_sandbox)
    assert {r.assignment for r in run.results} == set(lectures)
    for r in run.results:
        auto = {k: v for k, v in r.exercises.items() if v[0] is not None}
        assert auto and all(s == m for s, m in auto.values()), (r.assignment, r.exercises, r.events)
        bad = [e for e in r.events if grading.EVENT_KINDS[e["kind"]][0] == "error"
               or e["kind"].startswith("tampering")]
        assert not bad, bad


# --------------------------------------------------------------------------------------------------------
# Hidden tests with the delimiters the course configures


SECRET_BEGIN, SECRET_END = "BEGIN SECRET CHECKS", "END SECRET CHECKS"


@pytest.fixture
def secret_delimiters(toy, tmp_path, monkeypatch):
    """The toy assignment with its hidden tests between other delimiters, and a course config naming them."""
    sols = tmp_path / "solutions"
    shutil.copytree(toy[0], sols)
    nb_path = sols / NAME / f"{NAME}.ipynb"
    nb_path.write_text(nb_path.read_text().replace("BEGIN HIDDEN TESTS", SECRET_BEGIN)
                       .replace("END HIDDEN TESTS", SECRET_END))
    config = tmp_path / "nbgrader_config.py"
    config.write_text(course.CONFIG_FILE.read_text() + f"\nc.ClearHiddenTests.begin_test_delimeter = {SECRET_BEGIN!r}"
                      f"\nc.ClearHiddenTests.end_test_delimeter = {SECRET_END!r}\n")
    monkeypatch.setattr(course, "CONFIG_FILE", config)
    return sols


def test_hidden_tests_follow_the_configured_delimiters(secret_delimiters, tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    crs = course.make_course(tmp_path / "c", [NAME], solutions_dir=secret_delimiters)
    assert report.test_delimiters(crs) == (SECRET_BEGIN, SECRET_END)
    hidden = report.hidden_test_lines(crs)[NAME][NAME]
    assert len(hidden) == 4 and all("HIDDEN-TOKEN" in line for line in hidden)
    assert "HIDDEN-TOKEN" not in (crs / "release" / NAME / f"{NAME}.ipynb").read_text()  # nbgrader used them too
    source = nbformat.read(crs / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(crs)).load_config()
    stripped, _ = report.StripHiddenTests(config=config).preprocess(nbformat.from_dict(source), {})
    assert not any("HIDDEN-TOKEN" in c.source or SECRET_BEGIN in c.source for c in stripped.cells)
    # with nbgrader's default delimiters nothing would have been found: the configuration is what counts
    unchanged, _ = report.StripHiddenTests().preprocess(nbformat.from_dict(source), {})
    assert sum("HIDDEN-TOKEN" in c.source for c in unchanged.cells) == 3


def test_feedback_strips_hidden_tests_with_configured_delimiters(toy, secret_delimiters, tmp_path, grading_sandbox):
    subs = tmp_path / "subs"
    _write(subs / f"carol_{NAME}.ipynb", demo.set_answer(toy[2], "ex2_answer", WRONG_EX2))
    run = grade(subs, tmp_path / "out", solutions_dir=secret_delimiters, workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    (carol,) = run.results
    assert _auto(carol) == EXPECTED["carol"]
    html = (run.output_dir / carol.feedback[0]).read_text()
    hidden = report.hidden_test_lines(run.output_dir / "course")[NAME][NAME]
    assert len(hidden) == 4 and report.leaked_hidden_lines(html, hidden) == []
    assert not any(code in html for code in HIDDEN_CODE) and SECRET_BEGIN not in html
    assert "hidden check HIDDEN-TOKEN-EX2 failed" in html and "hidden tests are not shown" in html


# --------------------------------------------------------------------------------------------------------
# Graded with --no-sandbox: the course directory is still out of reach


def test_no_sandbox_keeps_the_course_directory_from_student_code(toy, tmp_path):
    sols, crs, full, release = toy
    out = tmp_path / "out"
    targets = [out / "course" / "pwned.txt", out / "course" / "gradebook.db",
               out / "course" / "source" / NAME / f"{NAME}.ipynb", out / "course" / "release" / NAME / f"{NAME}.ipynb",
               out / "work" / "w0" / "source" / NAME / f"{NAME}.ipynb"]
    body = (f"for _p in {[str(p) for p in targets]!r}:\n    try:\n        with open(_p, 'a') as _f:\n"
            "            _f.write('pwned')\n        hits.append(_p)\n    except OSError:\n        pass")
    subs = tmp_path / "subs"
    _write(subs / f"alice_{NAME}.ipynb", full)
    _write(subs / f"vandal_{NAME}.ipynb", demo.set_answer(full, "ex1_answer", hostile._probe_code("VANDAL:", body),
                                                         mode="prepend"))
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


def test_last_error_skips_nbgraders_see_above():
    log = ("[AutogradeApp | ERROR] There was an error processing assignment\nTraceback (most recent call last):\n"
           "RuntimeError: Kernel died before replying to kernel_info\n"
           "nbgrader.converters.base.NbGraderException: Please see the the above traceback\n")
    assert grading._last_error({"success": False, "log": log}) == (
        "RuntimeError: Kernel died before replying to kernel_info")
