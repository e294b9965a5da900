"""Nothing an instructor made is ever deleted (issue 21, item 1): changed sources are a migration, not a reset.

A class of two on two assignments, the toy (``00_toy``, with the hand-graded ``q4_answer``) and a copy of it under
another name (``01_copy``), is graded once (module fixture); hand marks and comments are then given with nbgrader's
``Gradebook`` API the way Formgrader saves them.  Each test works on a copy of that output folder and checks, in
the gradebook itself, that the marks survive grading a subset, an edit to the other lecture, an edit to the graded
lecture's text and ``--force``; that a changed answer or a changed mark scheme keeps the mark but flags it; that a
removed lecture, an unreadable state or gradebook refuses with a backup; and that a grader killed with SIGKILL in
the middle of re-grading a changed lecture is completed by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from nbgrader.api import Gradebook

from adversarial import hostile
from autograder.course import cells
from autograder import cli, demo
from autograder.run import migration
from autograder.course.course import subprocess_env
from autograder.intake.events import EventKind
from autograder.run.grading import grade
from autograder.course.limits import Limits
from autograder.run.results import GradeRun
from autograder.run.state import GradingState, assignment_fingerprint

pytestmark = pytest.mark.xdist_group("grading-migration")  # shares module fixtures: one xdist worker
TOY = demo.SYNTHETIC_NAME
COPY = "01_copy"
LIMITS = Limits(cell_timeout=20.0, notebook_timeout=120.0)
MARK = (1.5, "Right idea; say which distributions.")    # alice's hand mark and comment on 00_toy's q4_answer
MARK_COPY = (2.0, "Complete.")                           # alice's on 01_copy


class Base:
    """The graded class: sources, submissions, output folder."""

    def __init__(self, root: Path, sols: Path, subs: Path, out: Path, full: nbformat.NotebookNode) -> None:
        self.root, self.sols, self.subs, self.out, self.full = root, sols, subs, out, full


def _db(out: Path) -> str:
    return f"sqlite:///{out / 'course' / 'gradebook.db'}"


def _give_mark(out: Path, assignment: str, student: str, score: float, comment: str) -> None:
    """A hand mark and comment on ``q4_answer``, saved as Formgrader saves them."""
    with Gradebook(_db(out)) as gb:
        g = gb.find_grade("q4_answer", assignment, assignment, student)
        g.manual_score = score
        g.needs_manual_grade = False
        gb.find_comment("q4_answer", assignment, assignment, student).manual_comment = comment
        gb.db.commit()


def _marks(out: Path) -> dict[tuple[str, str], tuple[float, str, bool]]:
    """Every hand mark in the gradebook: ``{(assignment, student): (score, comment, flagged for review)}``."""
    out_marks = {}
    with Gradebook(_db(out)) as gb:
        for a in gb.assignments:
            for sub in a.submissions:
                for nb in sub.notebooks:
                    comments = {c.name: c.manual_comment for c in nb.comments}
                    for g in nb.grades:
                        if g.manual_score is not None:
                            out_marks[a.name, sub.student.id] = (g.manual_score, comments.get(g.name),
                                                                 bool(g.needs_manual_grade))
    return out_marks


def _rows(out: Path, assignment: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Every grade row of ``assignment``: ``{(student, cell): (auto, manual, needs review, row id)}``."""
    with Gradebook(_db(out)) as gb:
        return {(sub.student.id, g.name): (g.auto_score, g.manual_score, g.needs_manual_grade, g.id)
                for sub in gb.find_assignment(assignment).submissions for nb in sub.notebooks for g in nb.grades}


EXPECTED_MARKS = {(TOY, "alice"): (*MARK, False), (COPY, "alice"): (*MARK_COPY, False)}


@pytest.fixture(scope="module")
def base(toy: hostile.Toy, tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Base:
    root = tmp_path_factory.mktemp("migration")
    sols = root / "solutions"
    shutil.copytree(toy.solutions, sols)
    (sols / COPY).mkdir()
    shutil.copyfile(sols / TOY / f"{TOY}.ipynb", sols / COPY / f"{COPY}.ipynb")
    subs = root / "subs"
    hostile.write_notebook(subs / f"alice_{TOY}.ipynb", toy.full)
    hostile.write_notebook(subs / f"bob_{TOY}.ipynb", toy.release)
    hostile.write_notebook(subs / f"alice_{COPY}.ipynb", toy.full)
    out = root / "out"
    run = grade(subs, out, solutions_dir=sols, workers=1, limits=LIMITS, progress=False, sandbox_mode=grading_sandbox)
    assert {(r.student, r.assignment): r.score for r in run.results} == {
        ("alice", TOY): 5.0, ("bob", TOY): 0.0, ("alice", COPY): 5.0}
    _give_mark(out, TOY, "alice", *MARK)
    _give_mark(out, COPY, "alice", *MARK_COPY)
    assert _marks(out) == EXPECTED_MARKS
    return Base(root, sols, subs, out, toy.full)


def _copy(base: Base, tmp_path: Path) -> Base:
    """A private copy of the graded class (sources, submissions, output) for one test."""
    for name in ("solutions", "subs", "out"):
        shutil.copytree(base.root / name, tmp_path / name, symlinks=True)
    return Base(tmp_path, tmp_path / "solutions", tmp_path / "subs", tmp_path / "out", base.full)


def _grade(b: Base, sandbox: str, **kwargs: Any) -> GradeRun:
    return grade(b.subs, b.out, solutions_dir=b.sols, workers=1, limits=LIMITS, progress=False, sandbox_mode=sandbox,
                 **kwargs)


def _edit(b: Base, assignment: str, grade_id: str, extra: str) -> None:
    path = b.sols / assignment / f"{assignment}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[hostile.cell_index(nb, grade_id)].source += extra
    nbformat.write(nb, path)


def _review_events(run: GradeRun) -> dict[tuple[str, str], list[str | None]]:
    return {(r.assignment, r.student): [e.cell for e in r.events if e.kind is EventKind.HAND_MARK_TO_REVIEW]
            for r in run.results}


def test_marks_survive_a_subset_an_edit_elsewhere_a_text_edit_and_force(base: Base, tmp_path: Path,
                                                                        grading_sandbox: str) -> None:
    b = _copy(base, tmp_path)
    toy_rows, copy_rows = _rows(b.out, TOY), _rows(b.out, COPY)
    page = b.out / "feedback" / "alice" / TOY / f"{TOY}.html"
    page_mtime = page.stat().st_mtime_ns
    # --assignment: the other lecture's rows, results and pages stay as they are
    run = _grade(b, grading_sandbox, assignments=[COPY])
    assert run.graded_now == 0
    assert _rows(b.out, TOY) == toy_rows and _marks(b.out) == EXPECTED_MARKS
    assert {(r.student, r.assignment) for r in run.results} == {("alice", TOY), ("bob", TOY), ("alice", COPY)}
    assert page.stat().st_mtime_ns == page_mtime
    # an erratum in the other lecture: only its submission is graded again, in place (same rows)
    _edit(b, COPY, "intro", "\n\nErratum: a typo fixed.")
    run = _grade(b, grading_sandbox)
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{COPY}"}
    assert _rows(b.out, TOY) == toy_rows and _rows(b.out, COPY) == copy_rows
    assert _marks(b.out) == EXPECTED_MARKS and page.stat().st_mtime_ns == page_mtime
    assert len(list((b.out / "course" / "backups").glob("gradebook-*.db"))) == 1  # written before the update
    # an edit to the graded lecture's text (not the hand-graded cell): its submissions re-graded, marks kept
    _edit(b, TOY, "q4_text", "\n\n(Two sentences are enough.)")
    run = _grade(b, grading_sandbox)
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{TOY}", f"bob/{TOY}"}
    assert _marks(b.out) == EXPECTED_MARKS and _rows(b.out, COPY) == copy_rows
    assert all(not cells for cells in _review_events(run).values())
    alice = next(r for r in run.results if (r.student, r.assignment) == ("alice", TOY))
    assert alice.score == 5.0 + MARK[0] and alice.exercises["q4_answer"] == (MARK[0], 2.0)
    source = nbformat.read(b.out / "course" / "source" / TOY / f"{TOY}.ipynb", as_version=4)
    assert "Two sentences" in source.cells[hostile.cell_index(source, "q4_text")].source  # the new source, in place
    # --force re-grades every submission; the marks stay, unflagged
    run = _grade(b, grading_sandbox, force=True, assignments=[TOY])
    assert run.graded_now == 2 and _marks(b.out) == EXPECTED_MARKS and _rows(b.out, COPY) == copy_rows


def test_changed_answer_or_mark_scheme_keeps_the_mark_and_flags_it(base: Base, tmp_path: Path,
                                                                  grading_sandbox: str) -> None:
    b = _copy(base, tmp_path)
    # alice hands in a new written answer: re-graded, the mark kept but flagged, with an event naming the cell
    hostile.write_notebook(b.subs / f"alice_{TOY}.ipynb",
                           cells.set_answer(b.full, "q4_answer", "Less noise because the ratio may be larger."))
    run = _grade(b, grading_sandbox)
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{TOY}"}
    assert _marks(b.out) == {**EXPECTED_MARKS, (TOY, "alice"): (*MARK, True)}
    assert _review_events(run)[TOY, "alice"] == ["q4_answer"] and _review_events(run)[COPY, "alice"] == []
    # the instructor changes the other lecture's mark scheme: its mark is kept, flagged; bob had none
    _edit(b, COPY, "q4_answer", " Mark scheme: one point for the ratio, one for the noise.")
    run = _grade(b, grading_sandbox)
    assert _marks(b.out) == {(TOY, "alice"): (*MARK, True), (COPY, "alice"): (*MARK_COPY, True)}
    assert _review_events(run)[COPY, "alice"] == ["q4_answer"]
    assert "q4_answer" in run.report_md.read_text() and EventKind.HAND_MARK_TO_REVIEW.title in run.report_md.read_text()


def test_a_removed_lecture_with_grades_refuses_names_it_and_backs_up(base: Base, tmp_path: Path,
                                                                     grading_sandbox: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    b = _copy(base, tmp_path)
    shutil.rmtree(b.sols / COPY)
    before = (b.out / "course" / "gradebook.db").read_bytes()
    args = ["grade", str(b.subs), "-o", str(b.out), "--solutions", str(b.sols), "--workers", "1", "--no-progress",
            *(["--no-sandbox"] if grading_sandbox == "none" else [])]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert f"lecture {COPY} is no longer in" in err and "1 graded submission(s) and 1 hand mark(s)" in err
    assert migration.ALLOW_OPTION in err
    (backup,) = (b.out / "course" / "backups").glob("gradebook-*.db")
    assert str(backup) in err
    assert (b.out / "course" / "gradebook.db").read_bytes() == before  # nothing changed
    con = sqlite3.connect(backup)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("SELECT manual_comment FROM comment WHERE manual_comment IS NOT NULL ORDER BY 1").fetchall() \
        == sorted([(MARK[1],), (MARK_COPY[1],)])
    con.close()
    # with the option it goes on: the lecture leaves the gradebook, the results and the pages; the rest stays
    run = _grade(b, grading_sandbox, allow_discard=True)
    assert _marks(b.out) == {(TOY, "alice"): (*MARK, False)}
    assert {r.assignment for r in run.results} == {TOY} and run.graded_now == 0
    assert not (b.out / "feedback" / "alice" / COPY).exists() and (b.out / "feedback" / "alice" / TOY).is_dir()
    assert len(list((b.out / "course" / "backups").glob("gradebook-*.db"))) == 2


def test_unreadable_state_or_gradebook_refuses_with_a_backup(base: Base, tmp_path: Path, grading_sandbox: str) -> None:
    b = _copy(base, tmp_path)
    (b.out / "state.json").write_text('{"submissions": {"alice/00_toy": ')  # cut off mid-write by another tool
    with pytest.raises(migration.DiscardRefused, match=r"(?s)state\.json cannot be read.*--allow-discard"):
        _grade(b, grading_sandbox)
    assert len(list((b.out / "course" / "backups").glob("gradebook-*.db"))) == 1
    run = _grade(b, grading_sandbox, allow_discard=True, assignments=[COPY])
    assert [p.name.split("-")[0] for p in b.out.glob("state.json.unreadable-*")] == ["state.json.unreadable"]
    assert run.graded_now == 1 and _marks(b.out) == EXPECTED_MARKS  # graded again; the gradebook kept its marks
    assert len(list((b.out / "course" / "backups").glob("gradebook-*.db"))) == 2  # one more before going on
    db = b.out / "course" / "gradebook.db"
    damaged = b"SQLite format 3\x00" + os.urandom(4096)
    db.write_bytes(damaged)
    with pytest.raises(migration.DiscardRefused, match=r"(?s)gradebook \S+ cannot be used.*--allow-discard"):
        _grade(b, grading_sandbox)
    backups = sorted((b.out / "course" / "backups").glob("gradebook-*.db"), key=lambda p: p.stat().st_mtime_ns)
    assert len(backups) == 3 and backups[-1].read_bytes() == damaged == db.read_bytes()  # copied as is, kept


def test_interrupted_migration_is_completed_by_the_next_run(base: Base, tmp_path: Path, grading_sandbox: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped between updating the gradebook and regenerating the assignment (the mark scheme changed): the
    fingerprint is not recorded, so the next run migrates again, keeps the flag and grades the submissions."""
    b = _copy(base, tmp_path)
    _edit(b, TOY, "q4_answer", " Mark scheme: one point per idea.")

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(migration, "nbgrader", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _grade(b, grading_sandbox)
    state = GradingState.load(b.out / "state.json")
    assert state.fingerprint(TOY) != assignment_fingerprint(b.sols, TOY)
    run = _grade(b, grading_sandbox)
    assert _marks(b.out) == {**EXPECTED_MARKS, (TOY, "alice"): (*MARK, True)}
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{TOY}", f"bob/{TOY}"}
    assert GradingState.load(b.out / "state.json").fingerprint(TOY) == assignment_fingerprint(b.sols, TOY)


def test_kill_9_during_a_regrade_then_a_rerun_completes_it(base: Base, tmp_path: Path, grading_sandbox: str) -> None:
    """The graded lecture changes (a re-grade of all its submissions); the grader is killed with SIGKILL once the
    first of them is merged; the next run grades the others, and every mark is still there."""
    b = _copy(base, tmp_path)
    wrong_ex3 = "def count_above(v, t):\n    return 0"
    hostile.write_notebook(b.subs / f"carol_{TOY}.ipynb", cells.set_answer(b.full, "ex3_answer", wrong_ex3))
    _edit(b, TOY, "ex3_text", "\n\nErratum: strictly above.")
    new_fp = assignment_fingerprint(b.sols, TOY)
    state_file = b.out / "state.json"
    args = [sys.executable, "-m", "autograder.cli", "grade", str(b.subs), "-o", str(b.out), "--solutions", str(b.sols),
            "--workers", "1", "--no-progress", "--cell-timeout", str(LIMITS.cell_timeout), "--notebook-timeout",
            str(LIMITS.notebook_timeout), *(["--no-sandbox"] if grading_sandbox == "none" else [])]  # the same settings
    log = tmp_path / "grader.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(args, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            entries = GradingState.load(state_file).data["submissions"]
            if any(e.get("fingerprint") == new_fp for e in entries.values()):
                break
            time.sleep(0.2)
        assert proc.poll() is None, f"the grader ended before it could be killed: {log.read_text()}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    state = GradingState.load(state_file)
    graded = sorted(k for k, e in state.data["submissions"].items() if e.get("fingerprint") == new_fp)
    assert 1 <= len(graded) < 3, graded  # killed mid-run
    run = _grade(b, grading_sandbox)  # waits for the orphaned worker's lock, then completes the run
    toy_results = {r.student: r for r in run.results if r.assignment == TOY}
    killed_run = {k.split("/")[0] for k in graded}
    assert {s for s, r in toy_results.items() if r.regraded} == {"alice", "bob", "carol"} - killed_run
    assert {s: r.score for s, r in toy_results.items()} == {"alice": 5.0 + MARK[0], "bob": 0.0, "carol": 4.0}
    assert GradingState.load(state_file).stale(TOY, new_fp) == []
    assert _marks(b.out) == EXPECTED_MARKS
    con = sqlite3.connect(b.out / "course" / "gradebook.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


def test_an_older_state_file_is_migrated_and_missing_submissions_are_regraded_from_kept_copies(
        base: Base, tmp_path: Path, grading_sandbox: str) -> None:
    """A ``state.json`` of the earlier format (one ``course`` fingerprint) is read without loss: unchanged sources
    re-grade nothing; after an edit, the lecture's submissions are re-graded although the input no longer holds
    them (the copy kept in ``course/submitted``, or for an output folder from before copies were kept, the
    autograded notebook)."""
    b = _copy(base, tmp_path)
    state = GradingState.load(b.out / "state.json")
    legacy = {"course": "0" * 64, "submissions": {k: {"hash": e["hash"], "result": e["result"]}
                                                  for k, e in state.data["submissions"].items()}}
    (b.out / "state.json").write_text(json.dumps(legacy))
    run = _grade(b, grading_sandbox)
    assert run.graded_now == 0 and _marks(b.out) == EXPECTED_MARKS
    assert GradingState.load(b.out / "state.json").fingerprint(TOY) == assignment_fingerprint(b.sols, TOY)
    for f in b.subs.glob(f"*_{TOY}.ipynb"):
        f.unlink()
    shutil.rmtree(b.out / "course" / "submitted" / "bob")
    _edit(b, TOY, "ex1_text", "\n\nErratum: the scale, not the variance.")
    run = _grade(b, grading_sandbox)
    regraded = {(r.student, r.assignment): r for r in run.results if r.regraded}
    assert set(regraded) == {("alice", TOY), ("bob", TOY)}
    assert regraded["alice", TOY].files == [f"course/submitted/alice/{TOY}/{TOY}.ipynb (kept from an earlier run)"]
    assert regraded["bob", TOY].files == [f"course/autograded/bob/{TOY}/{TOY}.ipynb (kept from an earlier run)"]
    assert {k: r.score for k, r in regraded.items()} == {("alice", TOY): 5.0 + MARK[0], ("bob", TOY): 0.0}
    assert _marks(b.out) == EXPECTED_MARKS


def test_cells_added_and_a_hand_marked_cell_removed(base: Base, tmp_path: Path, grading_sandbox: str) -> None:
    """nbgrader refuses to add or remove cells of an assignment with submissions; the migration does it in the
    gradebook first. Removing a hand-marked cell refuses (naming it) until ``allow_discard``."""
    b = _copy(base, tmp_path)
    path = b.sols / COPY / f"{COPY}.ipynb"
    nb = nbformat.read(path, as_version=4)
    note = nbformat.v4.new_markdown_cell("Erratum: exercise 1 asks for the scale.")
    note.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": "erratum_note",
                                 "schema_version": 3}
    nb.cells.insert(hostile.cell_index(nb, "ex1_text") + 1, note)
    del nb.cells[hostile.cell_index(nb, "q4_answer")]
    nbformat.write(nb, path)
    before = (b.out / "course" / "gradebook.db").read_bytes()
    with pytest.raises(migration.DiscardRefused, match=f"cell q4_answer of {COPY}/{COPY}.ipynb .* 1 hand mark"):
        _grade(b, grading_sandbox)
    assert (b.out / "course" / "gradebook.db").read_bytes() == before
    run = _grade(b, grading_sandbox, allow_discard=True)
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{COPY}"}
    assert _marks(b.out) == {(TOY, "alice"): (*MARK, False)}
    alice = next(r for r in run.results if (r.student, r.assignment) == ("alice", COPY))
    assert alice.score == 5.0 and alice.max_score == 5.0 and "q4_answer" not in alice.exercises
    with Gradebook(_db(b.out)) as gb:
        assert "erratum_note" in {c.name for c in gb.find_notebook(COPY, COPY).source_cells}


def test_a_worker_killed_mid_job_leaves_the_submission_to_the_next_run(base: Base, tmp_path: Path,
                                                                      grading_sandbox: str) -> None:
    """SIGKILL of a worker (an administrator, the OOM killer): the run goes on and reports it; the submission is
    not recorded as graded, so the next run grades it properly; the hand mark is still there."""
    b = _copy(base, tmp_path)
    args = [sys.executable, "-m", "autograder.cli", "grade", str(b.subs), "-o", str(b.out), "--solutions", str(b.sols),
            "--workers", "1", "--no-progress", "--force", "--assignment", COPY, "--cell-timeout",
            str(LIMITS.cell_timeout), "--notebook-timeout", str(LIMITS.notebook_timeout),
            *(["--no-sandbox"] if grading_sandbox == "none" else [])]
    log = tmp_path / "grader.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(args, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=err)
    killed = None
    try:
        deadline = time.monotonic() + 300
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            for child in psutil.Process(proc.pid).children():
                with contextlib.suppress(psutil.Error):
                    if "autograder.run.worker" in child.cmdline() and child.children():  # its kernel runs: mid-job
                        child.send_signal(signal.SIGKILL)
                        killed = child.pid
            time.sleep(0.1)
        assert killed is not None, f"no worker was seen grading: {log.read_text()}"
        assert proc.wait(timeout=600) == 0, log.read_text()
    finally:
        proc.kill()
        proc.wait()
    entry = GradingState.load(b.out / "state.json").data["submissions"][f"alice/{COPY}"]
    assert entry["hash"] == "" and [e["kind"] for e in entry["result"]["events"]] == ["worker_crashed"]
    run = _grade(b, grading_sandbox)
    assert {r.student + "/" + r.assignment for r in run.results if r.regraded} == {f"alice/{COPY}"}
    alice = next(r for r in run.results if (r.student, r.assignment) == ("alice", COPY))
    assert alice.score == 5.0 + MARK_COPY[0] and not alice.events
    assert _marks(b.out) == EXPECTED_MARKS


def test_an_older_copy_of_the_kit_config_is_backed_up_and_replaced(tmp_path: Path) -> None:
    """An output folder built before the kit moved its modules holds a copy of nbgrader_config.py naming the old
    paths: the next run replaces it with the kit's (the old one kept in backups/), an up-to-date copy is left alone."""
    course = tmp_path / "course"
    course.mkdir()
    old = "from autograder.course.offline_maths import feedback_exporter_config  # the layout before the restructure\n"
    (course / "nbgrader_config.py").write_text(old)
    backup = migration.refresh_config(course)
    assert backup is not None and backup.parent == course / "backups" and backup.read_text() == old
    assert (course / "nbgrader_config.py").read_bytes() == migration.CONFIG_FILE.read_bytes()
    assert migration.refresh_config(course) is None              # in line now: nothing to do, no second backup
    assert len(list((course / "backups").iterdir())) == 1
