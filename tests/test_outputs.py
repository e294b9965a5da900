"""grades.csv, the LMS export, the report and the console table: all read from the gradebook, always in agreement
(autograder.run.outputs, autograder.run.standings), also after hand marks given later (``dp-course report``).

The gradebooks here are built with nbgrader's API (as nbgrader's own autograde and Formgrader write them), so no
notebook runs: the whole file takes a few seconds.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import cli
from autograder.run import outputs
from autograder.intake.events import Event, EventKind
from autograder.run.results import SubmissionResult
from autograder.run.standings import read_standings

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission

L3, L4, L7 = "03_simulation_lemma", "04_strong_composition", "07_concurrent_composition"


def _lecture(gb: Gradebook, name: str, due: dt.datetime | None = None) -> None:
    """A lecture like the toy: 5 autograded points in two cells and a 2-point written answer."""
    gb.add_assignment(name, duedate=due)
    gb.add_notebook(name, name)
    gb.add_grade_cell("ex1_tests", name, name, max_score=5, cell_type="code")
    gb.add_grade_cell("q4_answer", name, name, max_score=2, cell_type="markdown")
    gb.add_solution_cell("q4_answer", name, name)


def _submit(gb: Gradebook, lecture: str, student: str, auto: float, *, marked: float | None = None,
            when: dt.datetime | None = None) -> None:
    """A submission as nbgrader's autograde leaves it: the written answer waits for a hand mark."""
    sub = gb.add_submission(lecture, student, timestamp=when)
    for nb in sub.notebooks:
        for g in nb.grades:
            if g.name == "ex1_tests":
                g.auto_score, g.needs_manual_grade = auto, False
            else:
                g.auto_score, g.needs_manual_grade = None, True
                if marked is not None:
                    g.manual_score, g.needs_manual_grade = marked, False
    gb.db.commit()


@pytest.fixture
def output(tmp_path: Path) -> Path:
    """A grading output folder: alice (03 submitted, written answer pending; 04 not submitted), bob (both, 04 late
    and hand-marked), Zoë Ñúñez with a Moodle participant id (03 only); 07 in the gradebook, never submitted."""
    out = tmp_path / "grading"
    (out / "course").mkdir(parents=True)
    with Gradebook(f"sqlite:///{out / 'course' / 'gradebook.db'}") as gb:
        _lecture(gb, L3)
        _lecture(gb, L4, due=dt.datetime(2026, 10, 8, 21, 59))
        _lecture(gb, L7)
        gb.add_student("alice")
        gb.add_student("bob", first_name="Bob", last_name="Builder", email="bob@example.org")
        gb.add_student("Zoë_Ñúñez", first_name="Zoë", last_name="Ñúñez", lms_user_id="12345")
        _submit(gb, L3, "alice", 5)
        _submit(gb, L3, "bob", 3, marked=2)
        _submit(gb, L4, "bob", 4, marked=1, when=dt.datetime(2026, 10, 9, 0, 59))
        _submit(gb, L3, "Zoë_Ñúñez", 0)
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _console_rows(table: str) -> dict[tuple[str, str], list[str]]:
    """The console table's rows by (student, lecture): columns split at runs of two or more spaces."""
    lines = table.splitlines()
    header = lines[0]
    starts = [header.index(c) for c in outputs.TABLE_COLUMNS]
    out = {}
    for line in lines[2:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        out[(cells[0], cells[1])] = cells
    return out


def _agree(out: Path, table: str) -> dict[tuple[str, str], dict[str, str]]:
    """Assert that the console table, grades.csv and report.md hold the same rows; returns grades.csv's rows."""
    grades = {(r["student_id"], r["assignment"]): r for r in _csv(out / "grades.csv")}
    console = _console_rows(table)
    assert set(grades) == set(console)
    report = (out / "report.md").read_text()
    for key, row in grades.items():
        cells = console[key]
        assert cells[2] == row["score"] and cells[3] == row["max_score"], (key, cells, row)
        assert cells[4].startswith(row["status"]) and cells[5] == row["late"], (key, cells, row)
        assert f"| {' | '.join(cells[:6])} |" in report, (key, cells)
    return grades


def test_not_submitted_is_blank_pending_is_marked_and_everything_agrees(output, capsys):
    assert cli.main(["report", str(output)]) == 0
    table = capsys.readouterr().out.split("\n\ngrades:")[0]
    grades = _agree(output, table)
    assert len(grades) == 6, "3 students x the 2 lectures someone submitted (07: nobody, left out)"
    assert not any(a == L7 for _, a in grades)
    alice3, alice4 = grades[("alice", L3)], grades[("alice", L4)]
    assert alice3["score"] == "5" and alice3["status"] == "hand grading pending" and alice3["pending_points"] == "2"
    assert alice4["score"] == "" and alice4["raw_score"] == "" and alice4["status"] == "not submitted"
    bob4 = grades[("bob", L4)]
    assert bob4["score"] == "5" and bob4["status"] == "graded" and bob4["late"] == "late 3.0 h"
    assert bob4["duedate"].startswith("2026-10-08T21:59") and bob4["email"] == "bob@example.org"
    assert grades[("Zoë_Ñúñez", L3)]["lms_user_id"] == "12345"
    assert "hand grading pending (2 pts)" in _console_rows(table)[("alice", L3)][4]
    # the LMS export: one row per student, a column per lecture
    lms = {r["student_id"]: r for r in _csv(output / "grades_lms.csv")}
    assert list(_csv(output / "grades_lms.csv")[0])[:8] == ["student_id", "lms_user_id", "name", "first_name",
                                                          "last_name", "email", L3, L4]
    assert lms["alice"][L3] == "pending" and lms["alice"][L4] == ""
    assert lms["alice"]["pending"] == f"{L3}: 5 so far, 2 pts to mark"
    assert lms["bob"][L3] == "5" and lms["bob"][L4] == "5" and lms["bob"]["late"] == f"{L4}: late 3.0 h"
    assert lms["Zoë_Ñúñez"]["name"] == "Zoë Ñúñez" and lms["Zoë_Ñúñez"]["lms_user_id"] == "12345"
    assert lms["Zoë_Ñúñez"][L4] == ""


def test_hand_marks_given_later_reach_every_output(output, capsys):
    outputs.refresh(output)
    with Gradebook(f"sqlite:///{output / 'course' / 'gradebook.db'}") as gb:  # as Formgrader saves a mark
        grade = gb.find_grade("q4_answer", L3, L3, "alice")
        grade.manual_score = 1.5
        grade.needs_manual_grade = False
        gb.db.commit()
    run = outputs.refresh(output)
    grades = _agree(output, run.table())
    assert grades[("alice", L3)]["score"] == "6.5" and grades[("alice", L3)]["status"] == "graded"
    assert {r["student_id"]: r for r in _csv(output / "grades_lms.csv")}["alice"][L3] == "6.5"
    results = {(r["student"], r["assignment"]): r for r in json.loads((output / "results.json").read_text())["results"]}
    assert results[("alice", L3)]["score"] == 6.5 and results[("alice", L3)]["exercises"]["q4_answer"] == [1.5, 2.0]
    assert ("alice", L4) not in results, "a lecture not submitted has no result (and no zero)"


def test_events_of_the_run_are_notes_and_late_flags(output):
    run = outputs.load_run(output)
    run.results = [SubmissionResult("Zoë_Ñúñez", L3, [f"Zoë Ñúñez_12345_assignsubmission_file_/{L3}.ipynb"], 0, 7,
                                    {}, [Event(EventKind.CELL_TIMEOUT, "loop"),
                                         Event(EventKind.LATE, "marked LATE by Canvas")], 3.0, [])]
    run = outputs.refresh(output, run)
    row = _console_rows(run.table())[("Zoë_Ñúñez", L3)]
    assert row[5] == "late" and row[6] == EventKind.CELL_TIMEOUT.title
    assert "cell time limit reached" in (output / "report.md").read_text()
    moodle = _csv(output / "lms" / f"moodle_{L3}.csv")
    assert moodle == [{"Identifier": "Participant 12345", "Full name": "Zoë Ñúñez", "Email address": "",
                       "Grade": "", "Maximum Grade": "7"}], "pending hand grading: no grade for the LMS yet"


def test_standings_read_the_gradebook(output):
    st = {(s.student, s.assignment): s for s in read_standings(output / "course" / "gradebook.db")}
    assert st[("alice", L3)].exercises == {"ex1_tests": (5.0, 5.0), "q4_answer": (None, 2.0)}
    assert st[("alice", L4)].score is None and not st[("alice", L4)].submitted
    assert st[("bob", L4)].late and st[("bob", L4)].seconds_late == 3 * 3600
    assert st[("bob", L3)].status == "graded"
    with Gradebook(f"sqlite:///{output / 'course' / 'gradebook.db'}") as gb:  # a kept hand mark flagged for review
        gb.find_grade("q4_answer", L3, L3, "bob").needs_manual_grade = True
        gb.db.commit()
    bob = {(s.student, s.assignment): s for s in read_standings(output / "course" / "gradebook.db")}[("bob", L3)]
    assert bob.status == "hand mark to review" and bob.score == 5 and bob.pending == 0 and bob.final


def test_report_refuses_a_folder_that_is_not_a_grading_output(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "output must be a grading output folder" in err and str(tmp_path) in err
