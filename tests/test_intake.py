"""Intake (autograder.intake, autograder.review): layouts, names, zips, duplicates, broken files -- no grading.

Built on the toy assignment (``autograder.demo.write_synthetic_assignment``).
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings, strategies as st
from nbformat.notebooknode import NotebookNode

from adversarial import hostile
from autograder import cells, demo
from autograder.events import EventKind
from autograder.intake import collect_submissions, notebook_names, student_from_prefix
from autograder.limits import Limits
from autograder.review import changed_test_cells, suspicious_lines

NAME = demo.SYNTHETIC_NAME


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> hostile.Toy:
    return hostile.toy(tmp_path_factory.mktemp("toy"))


def _write(path: Path, nb: NotebookNode | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
    return path


@pytest.mark.parametrize("prefix,student", [
    ("alice_", "alice"),                                        # <student>_<notebook>
    ("alice_resubmission_", "alice"),                           # <student>_<anything>_<notebook>
    ("doejane_late_123456_7890123_", "doejane"),                # Canvas download, late
    ("Jane Doe_123456_assignsubmission_file_", "Jane_Doe"),     # Moodle download
    ("  bob-", "bob"),
    ("x/y z_", "x_y_z"),                                        # unsafe characters replaced
    ("José_", "José"), ("Jose\u0301_", "José"),                  # NFC: one id for both spellings of é
    ("JOSÉ_", "JOSÉ"), ("Zoë Ødegaard_12_", "Zoë_Ødegaard"),     # case and accents kept
    ("李小龍_", "李小龍"), ("प्रिया_", "प्रिया"),                         # other scripts, with their marks
    ("ﬁona_", "ﬁona"),                                          # NFKC would fold the ligature into "fi"
    ("../../etc_", "etc"), ("a\x00b\u202eX_", "a_b_X"),           # path and control characters
])
def test_student_from_prefix(prefix: str, student: str) -> None:
    assert student_from_prefix(prefix) == student


@settings(max_examples=300)
@given(st.text())
def test_student_ids_are_safe_directory_names(prefix: str) -> None:
    sid = student_from_prefix(prefix)
    assert all(c in "_.@-" or unicodedata.category(c)[0] in "LMN" for c in sid)
    assert not sid.startswith((".", "-", "_")) and "/" not in sid and "\0" not in sid
    assert len(sid.encode()) <= 240 and unicodedata.is_normalized("NFC", sid)


@settings(max_examples=80)
@given(st.lists(st.tuples(st.text(alphabet="abcXYZ019_- ().", max_size=12), st.booleans(),
                          st.text(alphabet="abc_- ()1", max_size=6)), min_size=1, max_size=6))
def test_every_file_is_graded_or_reported(specs: list[tuple[str, bool, str]]) -> None:
    """Whatever the file names, each file is attributed to a student, or listed as unmatched/duplicate."""
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
        assert all(f.student and f.problem_kind is EventKind.NOT_A_NOTEBOOK for f in intake.files)


def test_nbgrader_layout(toy: hostile.Toy, tmp_path: Path) -> None:
    _write(tmp_path / "submitted" / "alice" / NAME / f"{NAME}.ipynb", toy.full)
    _write(tmp_path / "submitted" / "bob" / NAME / f"{NAME}.ipynb", toy.release)
    (tmp_path / "submitted" / "bob" / NAME / "timestamp.txt").write_text("2025-01-01 10:00:00")
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions))   # the course folder holding submitted/
    assert [(f.student, f.assignment, f.notebook) for f in intake.files] == [
        ("alice", NAME, NAME), ("bob", NAME, NAME)]
    assert [f.timestamp for f in intake.files] == [None, "2025-01-01 10:00:00"]
    assert intake.unmatched == [] and intake.layout == "folder:nbgrader"


def test_flat_lms_layout_and_unmatched_files(toy: hostile.Toy, tmp_path: Path) -> None:
    names = {
        f"alice_{NAME}.ipynb": "alice",
        f"Bob Smith_12345_assignsubmission_file_{NAME}.ipynb": "Bob_Smith",
        f"carol_late_123_456_{NAME}.ipynb": "carol",
        f"dave_{NAME} (1).ipynb": "dave",
        f"Erin Li_777_assignsubmission_file/{NAME}.ipynb": "Erin_Li",      # Moodle: one folder per student
    }
    for rel in names:
        _write(tmp_path / rel, toy.full)
    (tmp_path / "README.txt").write_text("hello")
    _write(tmp_path / "notes.ipynb", toy.full)
    _write(tmp_path / f"{NAME}.ipynb", toy.full)
    os.symlink("/etc/passwd", tmp_path / f"frank_{NAME}.ipynb")
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions))
    got = {f.origin: f.student for f in intake.files if f.student != "frank"}
    assert got == names
    assert dict(intake.unmatched) == {
        "README.txt": "not a .ipynb file",
        "notes.ipynb": "no assignment notebook name in the file name",
        f"{NAME}.ipynb": "no student name before the notebook name",
    }
    (frank,) = [f for f in intake.files if f.student == "frank"]   # graded (zero) and reported as a link
    assert frank.problem_kind is EventKind.SYMLINK and frank.origin == f"frank_{NAME}.ipynb"


def test_zip_of_either_layout_and_unsafe_members(toy: hostile.Toy, tmp_path: Path) -> None:
    data = nbformat.writes(toy.full)
    zpath = tmp_path / "subs.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(f"submitted/alice/{NAME}/{NAME}.ipynb", data)
        zf.writestr(f"downloads/bob_{NAME}.ipynb", data)
        zf.writestr(f"../evil_{NAME}.ipynb", data)
        zf.writestr("__MACOSX/._junk", "x")
    intake = collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=tmp_path / "x")
    assert sorted((f.student, f.origin) for f in intake.files) == [
        ("alice", f"submitted/alice/{NAME}/{NAME}.ipynb"), ("bob", f"downloads/bob_{NAME}.ipynb")]
    assert all(Path(f.path).is_file() and Path(f.path).is_relative_to(tmp_path / "x") for f in intake.files)
    assert (f"../evil_{NAME}.ipynb", "unsafe path in the archive") in intake.unmatched
    assert not (tmp_path / f"evil_{NAME}.ipynb").exists()
    with pytest.raises(ValueError, match="extract_dir is required"):
        collect_submissions(zpath, notebook_names(toy.solutions))


def test_duplicates_keep_the_newest(toy: hostile.Toy, tmp_path: Path) -> None:
    old = _write(tmp_path / f"alice_{NAME}.ipynb", toy.release)
    new = _write(tmp_path / f"alice_resubmission_{NAME}.ipynb", toy.full)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions))
    assert [f.origin for f in intake.files] == [new.name]
    assert intake.duplicates == [(old.name, new.name)]


def test_broken_files_are_flagged_not_opened(toy: hostile.Toy, tmp_path: Path) -> None:
    (tmp_path / f"garbled_{NAME}.ipynb").write_text('{"cells": [ oops')
    (tmp_path / f"jsonish_{NAME}.ipynb").write_text('{"hello": "world"}')
    (tmp_path / f"latin_{NAME}.ipynb").write_bytes(b"\xff\xfe\x00")
    big = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * 30_000)])
    _write(tmp_path / f"whale_{NAME}.ipynb", big)
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions), limits=Limits(max_notebook_mb=0.02))
    kinds = {f.student: f.problem_kind for f in intake.files}
    assert kinds == {"garbled": EventKind.INVALID_JSON, "jsonish": EventKind.NOT_A_NOTEBOOK,
                     "latin": EventKind.INVALID_JSON, "whale": EventKind.TOO_LARGE}
    whale = next(f for f in intake.files if f.student == "whale")
    assert whale.problem and "over the limit of 0.02 MB" in whale.problem and whale.sha256.startswith("size:")


def test_student_pattern_overrides_the_rules(toy: hostile.Toy, tmp_path: Path) -> None:
    _write(tmp_path / f"zed-hw-{NAME}.ipynb", toy.full)
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions), student_pattern=r"^(?P<student>[a-z]+)-")
    assert [f.student for f in intake.files] == ["zed"]
    with pytest.raises(ValueError, match="student_pattern must contain a named group"):
        collect_submissions(tmp_path, notebook_names(toy.solutions), student_pattern=r"^([a-z]+)-")


@pytest.mark.parametrize("bad", ["/nonexistent/dp-course-subs", "."])
def test_collect_rejects_bad_sources(toy: hostile.Toy, tmp_path: Path, bad: str) -> None:
    src = Path(bad) if bad != "." else tmp_path / "plain.txt"
    if bad == ".":
        src.write_text("not a zip")
    with pytest.raises(ValueError, match="submissions must be"):
        collect_submissions(src, notebook_names(toy.solutions), extract_dir=tmp_path)


def test_suspicious_lines_and_changed_test_cells(toy: hostile.Toy) -> None:
    full, release = toy.full, toy.release
    nb = cells.set_answer(full, "ex1_answer", "import numpy as np\nnp.isclose = lambda *a, **k: True\nx = 1")
    i = hostile.cell_index(nb, "ex1_answer")
    assert suspicious_lines(nb) == [f"cell {i}: np.isclose = lambda *a, **k: True"]
    assert suspicious_lines(full) == []
    assert changed_test_cells(full, release) == []
    nb = cells.set_answer(full, "ex2_tests", "assert True")
    nb.cells = [c for c in nb.cells if cells.grade_id(c) != "ex3_tests"]
    nb.cells.append(nb.cells[hostile.cell_index(nb, "ex1_scaling")])
    assert changed_test_cells(nb, release) == [
        "test cell ex1_scaling appears 2 times (nbgrader graded the last one)",
        "test cell ex2_tests was edited (nbgrader restored the original)",
        "test cell ex3_tests was deleted (nbgrader put it back)"]


@pytest.mark.parametrize("bad", ["/nonexistent/solutions", "99_nope"])
def test_notebook_names_rejects_unknown_assignments(toy: hostile.Toy, bad: str) -> None:
    if bad.startswith("/"):
        assert notebook_names(Path(bad)) == {}   # no assignments at all: grade() says so
    else:
        with pytest.raises(ValueError, match="assignment must be one of"):
            notebook_names(toy.solutions, [bad])
