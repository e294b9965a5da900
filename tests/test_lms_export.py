"""LMS downloads: the LMS's own ids kept from the file names, due dates and lateness, duplicates resolved
newest-first with the copy suffix as the tie-break, and the LMS-ready export (autograder.intake.lms, .deadlines,
.intake, .lms_export, .standings); ends with one real grading run of a Moodle zip of the toy assignment."""

from __future__ import annotations

import csv
import datetime as dt
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import cli, demo
from autograder.intake.deadlines import due_dates, parse_due, store_due_dates, to_utc
from autograder.intake.events import EventKind
from autograder.intake.intake import collect_submissions
from autograder.intake.lms import LmsInfo, copy_number, lms_info
from autograder.run.lms_export import write_lms_exports
from autograder.run.standings import Standing, record_students

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission

L3 = "03_simulation_lemma"
NBS = {L3: [L3]}
NB = nbformat.writes(nbformat.v4.new_notebook()).encode()


@pytest.mark.parametrize("rel,info", [
    (f"Zoë Ñúñez_12345_assignsubmission_file_/{L3}.ipynb", LmsInfo("moodle", "12345")),
    (f"Zoë Ñúñez_12345_assignsubmission_file_{L3}.ipynb", LmsInfo("moodle", "12345")),
    (f"course/Jane Doe_777_assignsubmission_file_/sub/{L3}.ipynb", LmsInfo("moodle", "777")),
    (f"nunezzoe_4321_998877_{L3}.ipynb", LmsInfo("canvas", "4321")),
    (f"nunezzoe_LATE_4321_998877_{L3}-1.ipynb", LmsInfo("canvas", "4321", late=True)),
    (f"nunezzoe_late_4321_998877_{L3}.ipynb", LmsInfo("canvas", "4321", late=True)),
    (f"alice_{L3}.ipynb", LmsInfo()),
    (f"submitted/alice/{L3}/{L3}.ipynb", LmsInfo()),
    (f"alice_2024_{L3}.ipynb", LmsInfo()),  # one number is not Canvas's two
])
def test_lms_ids_from_file_names(rel, info):
    assert lms_info(rel, L3) == info


@pytest.mark.parametrize("rel,n", [(f"{L3}.ipynb", 0), (f"{L3} (1).ipynb", 1), (f"{L3} (12).ipynb", 12),
                                   (f"{L3}-1.ipynb", 1), (f"a_1_2_{L3}-2.ipynb", 2), ("x_lecture-2.ipynb", 0)])
def test_copy_numbers(rel, n):
    assert copy_number(rel, "x_lecture-2" if rel.startswith("x_") else L3) == n


def test_due_dates_parse_with_and_without_offset():
    lecture, when = parse_due(f"{L3}=2026-10-01T23:59+02:00")
    assert lecture == L3 and when == dt.datetime(2026, 10, 1, 21, 59)
    assert parse_due(f"{L3}=2026-10-01T23:59")[1] == to_utc(dt.datetime(2026, 10, 1, 23, 59))
    for bad, why in [("2026-10-01", "LECTURE=YYYY"), (f"{L3}=yesterday", "'yesterday' is not a date"),
                     (f"{L3}=", "LECTURE=YYYY")]:
        with pytest.raises(ValueError, match=why) as exc:
            parse_due(bad)
        assert "--due" in str(exc.value) and repr(bad) in str(exc.value)
    with pytest.raises(ValueError, match="--due must name a lecture of"):
        parse_due("99_nope=2026-10-01T12:00", NBS)


def _zip(path: Path, members: dict[str, tuple[tuple[int, ...], bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (when, data) in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def test_equal_times_grade_the_highest_copy_and_newer_times_win(tmp_path):
    noon = (2026, 10, 1, 12, 0, 0)
    marked = {name: NB.replace(b"{", b'{"metadata": {"who": "%s"}, ' % name.encode(), 1) for name in
              (f"alice_{L3}.ipynb", f"alice_{L3} (1).ipynb", f"bob_{L3}-1.ipynb", f"bob_{L3}.ipynb",
               f"cleo_{L3} (1).ipynb", f"cleo_{L3}.ipynb")}
    members = {n: ((2026, 10, 1, 13, 0, 0) if n == f"cleo_{L3}.ipynb" else noon, data) for n, data in marked.items()}
    intake = collect_submissions(_zip(tmp_path / "s.zip", members), NBS, extract_dir=tmp_path / "x")
    kept = {f.student: f.origin for f in intake.files}
    assert kept == {"alice": f"alice_{L3} (1).ipynb", "bob": f"bob_{L3}-1.ipynb", "cleo": f"cleo_{L3}.ipynb"}
    assert sorted(intake.duplicates) == [(f"alice_{L3}.ipynb", f"alice_{L3} (1).ipynb"),
                                         (f"bob_{L3}.ipynb", f"bob_{L3}-1.ipynb"),
                                         (f"cleo_{L3} (1).ipynb", f"cleo_{L3}.ipynb")]


def test_moodle_and_canvas_zip_ids_times_and_lateness(tmp_path):
    due = {L3: to_utc(dt.datetime(2026, 10, 1, 23, 59))}  # the zip's times are local, as the due date without offset
    members = {
        f"Zoë Ñúñez_12345_assignsubmission_file_/{L3}.ipynb": ((2026, 10, 2, 9, 30, 0), NB),   # late
        f"Ann Lee_222_assignsubmission_file_/{L3}.ipynb": ((2026, 10, 1, 23, 0, 0), NB),       # in time
        f"doejane_LATE_4321_998877_{L3}.ipynb": ((2026, 9, 30, 8, 0, 0), NB),                  # Canvas says late
    }
    intake = collect_submissions(_zip(tmp_path / "s.zip", members), NBS, extract_dir=tmp_path / "x", due=due)
    files = {f.student: f for f in intake.files}
    assert set(files) == {"Zoë_Ñúñez", "Ann_Lee", "doejane"}
    assert (files["Zoë_Ñúñez"].lms_user_id, files["Ann_Lee"].lms_user_id, files["doejane"].lms_user_id) == \
        ("12345", "222", "4321")
    assert files["Zoë_Ñúñez"].late and not files["Ann_Lee"].late and files["doejane"].late
    late = [text for kind, text in files["Zoë_Ñúñez"].flags if kind is EventKind.LATE]
    assert late and "9.5 h after the due date" in late[0]
    assert any("marked LATE by Canvas" in text for _, text in files["doejane"].flags)
    assert files["Ann_Lee"].timestamp == to_utc(dt.datetime(2026, 10, 1, 23, 0)).isoformat() + "+00:00"


def test_nbgrader_timestamp_decides_lateness(tmp_path):
    for who, stamp in (("alice", "2026-10-02 08:00:00.000000 UTC"), ("bob", "2026-10-01 08:00:00 UTC")):
        d = tmp_path / "submitted" / who / L3
        d.mkdir(parents=True)
        (d / f"{L3}.ipynb").write_bytes(NB)
        (d / "timestamp.txt").write_text(stamp)
    intake = collect_submissions(tmp_path, NBS, due={L3: dt.datetime(2026, 10, 1, 23, 59)})
    assert {f.student: f.late for f in intake.files} == {"alice": True, "bob": False}
    assert all(f.lms_user_id == "" for f in intake.files)


def test_lms_ids_names_and_due_dates_are_kept_in_the_gradebook(tmp_path):
    db = tmp_path / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_assignment(L3)
        gb.add_student("Zoë_Ñúñez")
    intake = collect_submissions(_zip(tmp_path / "s.zip", {f"Zoë Ñúñez_12345_assignsubmission_file_/{L3}.ipynb":
                                                            ((2026, 10, 2, 9, 30, 0), NB)}),
                                 NBS, extract_dir=tmp_path / "x")
    record_students(db, intake.files)
    record_students(db, [])  # a later run without the file clears nothing
    store_due_dates(db, {L3: dt.datetime(2026, 10, 1, 21, 59)})
    store_due_dates(db, {})
    with Gradebook(f"sqlite:///{db}") as gb:
        st = gb.find_student("Zoë_Ñúñez")
        assert (st.lms_user_id, st.first_name, st.last_name) == ("12345", "Zoë", "Ñúñez")
    assert due_dates(db) == {L3: dt.datetime(2026, 10, 1, 21, 59)}


def _st(student: str, score: float | None, pending: float = 0.0, **kw: str) -> Standing:
    return Standing(student, L3, score is not None, score, score, 7.0, pending, **kw)  # type: ignore[arg-type]


def test_canvas_and_moodle_files_hold_final_scores_only(tmp_path):
    standings = [_st("ann", 7.0, first_name="Ann", last_name="Lee", email="ann@x.org"), _st("bo", 5.0, pending=2.0),
                 _st("cy", None)]
    ids = {("ann", L3): LmsInfo("canvas", "11"), ("bo", L3): LmsInfo("canvas", "12"),
           ("cy", L3): LmsInfo("canvas", "13")}
    paths = write_lms_exports(tmp_path, standings, ids)
    assert [p.name for p in paths] == ["grades_lms.csv", "canvas.csv"]
    with open(tmp_path / "lms" / "canvas.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", L3], ["Ann Lee", "11", "", "", "", "7"],
                    ["bo", "12", "", "", "", ""], ["cy", "13", "", "", "", ""]]
    ids = {k: LmsInfo("moodle", v.user_id) for k, v in ids.items()}
    write_lms_exports(tmp_path, standings, ids)
    with open(tmp_path / "lms" / f"moodle_{L3}.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"]
    assert rows[1:] == [["Participant 11", "Ann Lee", "ann@x.org", "7", "7"], ["Participant 12", "bo", "", "", "7"],
                        ["Participant 13", "cy", "", "", "7"]]


def test_grading_a_moodle_zip_keeps_ids_and_flags_late_work(toy, tmp_path, capsys, grading_sandbox):
    """One real run: a Moodle zip of the toy (a full solution in time, an untouched one late), with --due."""
    sols, _crs, full, release = toy
    name = demo.SYNTHETIC_NAME
    full_b, release_b = nbformat.writes(full).encode(), nbformat.writes(release).encode()
    zpath = _zip(tmp_path / "moodle.zip", {
        f"Zoë Ñúñez_12345_assignsubmission_file_/{name}.ipynb": ((2026, 10, 1, 20, 0, 0), full_b),
        f"Ann Lee_222_assignsubmission_file_/{name}.ipynb": ((2026, 10, 3, 8, 0, 0), release_b),
    })
    out = tmp_path / "out"
    rc = cli.main(["grade", str(zpath), "-o", str(out), "--solutions", str(sols), "--workers", "1", "--no-progress",
                   "--no-feedback", "--due", f"{name}=2026-10-01T23:59", "--cell-timeout", "30",
                   *(["--no-sandbox"] if grading_sandbox == "none" else [])])
    text = capsys.readouterr().out
    assert rc == 0, text
    with open(out / "grades_lms.csv", newline="") as f:
        lms = {r["student_id"]: r for r in csv.DictReader(f)}
    assert lms["Zoë_Ñúñez"]["lms_user_id"] == "12345" and lms["Zoë_Ñúñez"]["name"] == "Zoë Ñúñez"
    # the written answer of the full solution waits for a hand mark; nbgrader scores an untouched one 0 at once
    assert lms["Zoë_Ñúñez"][name] == "pending" and lms["Ann_Lee"][name] == "0"
    assert lms["Ann_Lee"]["late"].startswith(f"{name}: late") and lms["Zoë_Ñúñez"]["late"] == ""
    with open(out / "lms" / f"moodle_{name}.csv", newline="") as f:
        assert sorted(r["Identifier"] for r in csv.DictReader(f)) == ["Participant 12345", "Participant 222"]
    assert due_dates(out / "course" / "gradebook.db") == {name: to_utc(dt.datetime(2026, 10, 1, 23, 59))}
    late_line = next(line for line in text.splitlines() if line.startswith("Ann_Lee"))
    assert "late" in late_line and "0" in late_line.split()
