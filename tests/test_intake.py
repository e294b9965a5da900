"""Intake (autograder.intake.intake, autograder.intake.review): layouts, names, zips, duplicates, broken files -- no
grading.

Built on the toy assignment (``autograder.demo.write_synthetic_assignment``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import struct
import tempfile
import unicodedata
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings, strategies as st

from adversarial import hostile
from autograder.course import cells
from autograder import demo
from autograder.isolation import disk_watch, isolation
from autograder.intake.events import EventKind
from autograder.isolation.kernels import KernelSandbox
from autograder.intake.intake import MAX_MEMBERS, collect_submissions, notebook_names, student_from_prefix
from autograder.course.limits import Limits
from autograder.intake.review import changed_test_cells, suspicious_lines
from autograder.intake.untrusted_files import SymlinkFound, UnreadableFile, read_no_follow

NAME = demo.SYNTHETIC_NAME


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
    hostile.write_notebook(tmp_path / "submitted" / "alice" / NAME / f"{NAME}.ipynb", toy.full)
    hostile.write_notebook(tmp_path / "submitted" / "bob" / NAME / f"{NAME}.ipynb", toy.release)
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
        hostile.write_notebook(tmp_path / rel, toy.full)
    (tmp_path / "README.txt").write_text("hello")
    hostile.write_notebook(tmp_path / "notes.ipynb", toy.full)
    hostile.write_notebook(tmp_path / f"{NAME}.ipynb", toy.full)
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
    old = hostile.write_notebook(tmp_path / f"alice_{NAME}.ipynb", toy.release)
    new = hostile.write_notebook(tmp_path / f"alice_resubmission_{NAME}.ipynb", toy.full)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions))
    assert [f.origin for f in intake.files] == [new.name]
    assert intake.duplicates == [(old.name, new.name)]


def test_broken_files_are_flagged_not_opened(toy: hostile.Toy, tmp_path: Path) -> None:
    (tmp_path / f"garbled_{NAME}.ipynb").write_text('{"cells": [ oops')
    (tmp_path / f"jsonish_{NAME}.ipynb").write_text('{"hello": "world"}')
    (tmp_path / f"latin_{NAME}.ipynb").write_bytes(b"\xff\xfe\x00")
    big = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * 30_000)])
    hostile.write_notebook(tmp_path / f"whale_{NAME}.ipynb", big)
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions), limits=Limits(max_notebook_mb=0.02))
    kinds = {f.student: f.problem_kind for f in intake.files}
    assert kinds == {"garbled": EventKind.INVALID_JSON, "jsonish": EventKind.NOT_A_NOTEBOOK,
                     "latin": EventKind.INVALID_JSON, "whale": EventKind.TOO_LARGE}
    whale = next(f for f in intake.files if f.student == "whale")
    assert whale.problem and "over the limit of 0.02 MB" in whale.problem and whale.sha256.startswith("size:")


def test_student_pattern_overrides_the_rules(toy: hostile.Toy, tmp_path: Path) -> None:
    hostile.write_notebook(tmp_path / f"zed-hw-{NAME}.ipynb", toy.full)
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


# --- hostile archives and files: each is one bad submission, the others are graded ------------------------

def test_hostile_zip_members_are_bad_submissions(toy: hostile.Toy, tmp_path: Path) -> None:
    zpath = tmp_path / "subs.zip"
    hostile.hostile_zip(zpath, nbformat.writes(toy.full).encode())
    extract = tmp_path / "x"
    intake = collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=extract,
                                 limits=Limits(max_notebook_mb=1))
    kinds = {f.student: f.problem_kind for f in intake.files}
    assert kinds == {"alice": None, "liar": EventKind.UNREADABLE_FILE, "bomb": EventKind.TOO_LARGE,
                     "sneakybomb": EventKind.UNREADABLE_FILE, "mangled": EventKind.UNREADABLE_FILE,
                     "nest": EventKind.NOT_A_NOTEBOOK, "linked": EventKind.SYMLINK}
    reasons = {f.student: f.problem for f in intake.files}
    assert "CRC" in str(reasons["liar"]) and "not opened" in str(reasons["bomb"])
    assert "archives inside the submissions are not opened" in str(reasons["nest"])
    assert {p for p, why in intake.unmatched if why == "unsafe path in the archive"} == {
        f"../escape_{NAME}.ipynb", f"/abs/escape_{NAME}.ipynb", f"C:/escape_{NAME}.ipynb"}
    # nothing outside the private folder, nothing big inside it
    written = [p for p in extract.rglob("*") if p.is_file()]
    assert all(p.stat().st_size <= 1 << 20 for p in written) and not list(tmp_path.glob("escape*"))
    assert not (Path("/abs") / f"escape_{NAME}.ipynb").exists()


def test_absurd_member_counts_and_truncated_archives(toy: hostile.Toy, tmp_path: Path) -> None:
    zpath = tmp_path / "many.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for i in range(60):
            zf.writestr(f"s{i:02d}_{NAME}.ipynb", "{}")
    with pytest.raises(ValueError, match="declares 60 members, more than the limit of 25"):
        collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=tmp_path / "x", max_members=25)
    intake = collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=tmp_path / "x", max_members=60,
                                 max_extracted_bytes=20)
    kinds = [f.problem_kind for f in intake.files]   # 2 bytes each: 10 read, then the budget is spent
    assert kinds == [EventKind.NOT_A_NOTEBOOK] * 10 + [EventKind.TOO_LARGE] * 50 and intake.unmatched == []
    # a folder: its first files are read, the others listed
    folder = tmp_path / "many"
    with zipfile.ZipFile(zpath) as zf:
        zf.extractall(folder)
    intake = collect_submissions(folder, notebook_names(toy.solutions), max_members=25)
    assert len(intake.files) == 25
    assert intake.unmatched == [("(35 more files)", "60 files in the submissions; only the first 25 were read")]
    cut = tmp_path / "cut.zip"
    cut.write_bytes(zpath.read_bytes()[: zpath.stat().st_size // 2])   # central directory lost
    with pytest.raises(ValueError, match="readable .zip file"):
        collect_submissions(cut, notebook_names(toy.solutions), extract_dir=tmp_path / "y")
    # inside a folder, a student's (truncated) zip is that student's bad submission; the batch goes on
    folder = tmp_path / "folder"
    hostile.write_notebook(folder / f"alice_{NAME}.ipynb", toy.full)
    (folder / f"bob_{NAME}.zip").write_bytes(cut.read_bytes())
    intake = collect_submissions(folder, notebook_names(toy.solutions))
    assert {f.student: f.problem_kind for f in intake.files} == {"alice": None, "bob": EventKind.NOT_A_NOTEBOOK}


@pytest.mark.parametrize("declared,cap,reason", [
    (65_535, MAX_MEMBERS, "declares 65535 members, more than the limit of 20000"),
    (2, 25, r"holds more than 25 members \(its end record declares 2\)"),   # an end record that understates
])
def test_a_zip_declaring_too_many_members_is_refused_unread(toy: hostile.Toy, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, declared: int, cap: int,
                                                            reason: str) -> None:
    """Its end record is read with struct; zipfile, which would parse the whole directory, is never called."""
    zpath = tmp_path / "subs.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(f"alice_{NAME}.ipynb", nbformat.writes(toy.full))
        for i in range(30):
            zf.writestr(f"d{i}/", "")
    data = bytearray(zpath.read_bytes())
    struct.pack_into("<2H", data, len(data) - 22 + 8, declared, declared)   # the end record's two member counts
    zpath.write_bytes(bytes(data))

    def no_zipfile(*args: object, **kwargs: object) -> None:
        raise AssertionError("zipfile.ZipFile was called on a refused archive")

    with monkeypatch.context() as m:
        m.setattr(zipfile, "ZipFile", no_zipfile)
        with pytest.raises(ValueError, match=f"readable .zip file, got .*subs.zip.*{reason}"):
            collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=tmp_path / "x", max_members=cap)


def test_no_symlink_is_followed(toy: hostile.Toy, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    hostile.write_notebook(outside / "carol" / NAME / f"{NAME}.ipynb", toy.full)
    (outside / "secret.txt").write_text("2099-01-01 00:00:00 secret")
    subs = tmp_path / "course" / "submitted"
    hostile.write_notebook(subs / "alice" / NAME / f"{NAME}.ipynb", toy.full)
    os.symlink(outside / "secret.txt", subs / "alice" / NAME / "timestamp.txt")      # a side file
    os.symlink(outside / "carol", subs / "carol")                                     # a folder mid-path
    hostile.write_notebook(subs / "dan" / NAME / f"{NAME}.ipynb", toy.full)
    intake = collect_submissions(tmp_path / "course", notebook_names(toy.solutions), extract_dir=tmp_path / "x")
    assert [(f.student, f.problem_kind, f.timestamp) for f in intake.files] == [
        ("alice", None, None), ("dan", None, None)]
    alice = intake.files[0]
    assert [k for k, _ in alice.flags] == [EventKind.SYMLINK] and "timestamp.txt" in alice.flags[0][1]
    assert intake.unmatched == [("carol", "symbolic link to a folder (not followed)")]
    assert all(Path(f.path).is_relative_to(tmp_path / "x") for f in intake.files)   # graded from private copies
    # the reader refuses links anywhere in the path, even when they appear after the folder was listed
    os.symlink(outside / "carol" / NAME, subs / "dan" / "linked")
    with pytest.raises(SymlinkFound, match="its folder dan/linked is a symbolic link"):
        read_no_follow(subs, f"dan/linked/{NAME}.ipynb", 1 << 20)
    os.mkfifo(subs / "dan" / "fifo")
    with pytest.raises(UnreadableFile, match="not a regular file"):   # and does not block on a FIFO
        read_no_follow(subs, "dan/fifo", 10)
    assert read_no_follow(subs, f"dan/{NAME}/{NAME}.ipynb", 9) == nbformat.writes(toy.full).encode()[:10]


def test_student_names_keep_accents_and_collisions_are_graded_apart(toy: hostile.Toy, tmp_path: Path) -> None:
    # NFD (a macOS zip): same student ...
    old = hostile.write_notebook(tmp_path / f"Jose\u0301_{NAME}.ipynb", toy.release)
    hostile.write_notebook(tmp_path / f"José_v2_{NAME}.ipynb", toy.full)                  # ... as NFC José
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    hostile.write_notebook(tmp_path / f"Jose_{NAME}.ipynb", toy.full)                    # another student
    hostile.write_notebook(tmp_path / f"Jane Doe_1_assignsubmission_file_{NAME}.ipynb", toy.full)
    # another name, the same safe id
    hostile.write_notebook(tmp_path / f"Jane:Doe_{NAME}.ipynb", toy.full)
    intake = collect_submissions(tmp_path, notebook_names(toy.solutions))
    students = sorted(f.student for f in intake.files)
    assert len(students) == 4 and "José" in students and "Jose" in students
    assert intake.duplicates == [(old.name, f"José_v2_{NAME}.ipynb")]
    assert intake.collisions == [("Jane_Doe", ["Jane Doe", "Jane:Doe"])]
    janes = [f for f in intake.files if f.name.startswith("Jane")]
    assert len({f.student for f in janes}) == 2 and all(f.student.startswith("Jane_Doe-") for f in janes)
    assert all([k for k, _ in f.flags] == [EventKind.ID_COLLISION] for f in janes)


# --- every folder a kernel can write to is capped ------------------------------------------------------------

def test_disk_watch_caps_host_folders_and_full_tmpfs(tmp_path: Path) -> None:
    (tmp_path / "before.bin").write_bytes(b"x" * 300_000)          # what the folder held before: not counted
    watch = disk_watch.DiskWatch([(tmp_path, 1 << 20, 5)])
    assert watch.check() is None
    (tmp_path / "a").write_bytes(b"x" * 900_000)
    assert watch.check() is None
    (tmp_path / "b").write_bytes(b"x" * 300_000)
    assert str(watch.check()).startswith(f"{disk_watch.MARKER}: the kernel wrote 1.")
    for i in range(6):
        (tmp_path / f"e{i}").mkdir()
    assert watch.check() is not None and "files to" in str(watch.check())
    assert disk_watch.tmpfs_full("/nonexistent/dpc") is False
    # a link is counted as itself, never followed
    os.symlink("/usr", tmp_path / "link")
    assert disk_watch.usage(tmp_path, 10**6)[1] == 10


def _fill_code(where: str) -> str:
    return ("import os, time\n"
            f"d = {where}\n"
            "try:\n"
            "    for i in range(40):\n"
            "        with open(os.path.join(d, f'fill{i}'), 'wb') as f:\n"
            "            f.write(b'x' * (4 << 20))\n"
            "except OSError as e:\n"
            "    print('refused:', e.strerror)\n"
            "time.sleep(4)\n")


@pytest.mark.parametrize("where", ["'/tmp'", "os.path.dirname(__import__('ipykernel.connect').connect"
                                            ".get_connection_file())"])
def test_a_kernel_that_fills_a_folder_is_stopped_with_a_reason(where: str, tmp_path: Path) -> None:
    """A real sandboxed kernel writes past the cap of its /tmp (a tmpfs) or of its socket folder (a host folder)."""
    info = isolation.probe("auto")
    if not info.isolated:
        pytest.skip("no sandbox works on this machine: " + "; ".join(info.problems))
    limits = Limits(tmp_mb=8, max_file_mb=4)
    box = KernelSandbox.new()
    try:
        box.prepare(tmp_path, info, limits)
        died, out = asyncio.run(_run(box, _fill_code(where)))
        log = box.kernel_log()
        if where == "'/tmp'":   # a capped tmpfs: the kernel is refused (ENOSPC), then stopped with the reason
            assert died and f"{disk_watch.MARKER}: /tmp is full" in log, (out, log)
        elif info.drops_uid:    # the socket folder: taken from a kernel under its own uid once the sockets exist
            assert not died and "refused: Permission denied" in out, (out, log)
        else:                   # ... or read-only and watched, for a kernel that runs as the grader's user
            assert ("refused: Permission denied" in out and not died) or f"{disk_watch.MARKER}: the kernel" in log
        assert disk_watch.usage(box.conn_dir, 10**6)[0] < 6 << 20     # the host folder stayed small
    finally:
        box.cleanup()


async def _run(box: KernelSandbox, code: str) -> tuple[bool, str]:
    """Run ``code`` in the box's kernel: (whether the kernel was stopped before the code finished, its output)."""
    km = box.kernel_manager(None, 64)
    await km.start_kernel()
    kc = km.client()
    kc.start_channels()
    out: list[str] = []
    try:
        await kc.wait_for_ready(timeout=60)
        msg_id = kc.execute(code)
        for _ in range(100):
            if not await km.is_alive():
                return True, "".join(out)
            with contextlib.suppress(queue.Empty, TimeoutError):
                msg = await kc.get_iopub_msg(timeout=0.1)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle" \
                        and msg["parent_header"].get("msg_id") == msg_id:
                    return False, "".join(out)
        return False, "".join(out)
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)


def test_utf8_member_names_without_the_utf8_flag(toy: hostile.Toy, tmp_path: Path) -> None:
    """macOS and old zip tools store UTF-8 names without the flag that says so: ``José`` is still José."""
    zpath = tmp_path / "mac.zip"
    nfd = unicodedata.normalize("NFD", f"José_{NAME}.ipynb")
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(nfd, nbformat.writes(toy.full))
        zf.writestr(f"Jos\u00e9_resubmitted_{NAME}.ipynb", "{}")
    data = bytearray(zpath.read_bytes())   # clear the UTF-8 flag (bit 11) in every local and central header
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = data.find(sig)
        while i >= 0:
            data[i + at + 1] &= ~0x08
            i = data.find(sig, i + 4)
    zpath.write_bytes(bytes(data))
    with zipfile.ZipFile(zpath) as zf:
        assert all(not info.flag_bits & 0x800 for info in zf.infolist())
    intake = collect_submissions(zpath, notebook_names(toy.solutions), extract_dir=tmp_path / "x")
    assert [f.student for f in intake.files] == ["José"] and len(intake.duplicates) == 1
