"""Adversarial suite: one grading run with two honest students and every hostile submission of ``hostile.py``.

Each hostile submission must end with a grade -- zero for what it breaks, exactly (``hostile.Hostile.scores``)
-- and a reason in the report; the batch goes on; the honest students get the same grades as in a run
without the hostile ones; the gradebook stays intact; nothing escapes the sandbox (files, network,
processes).  All hostile notebooks go through one grading run with short limits, so the suite takes about a
minute or two on two cores.

The run uses the sandbox wherever it works (it comes with the package); the tests of what the sandbox keeps
out are skipped with the reason elsewhere (and fail in CI), while grades, reasons and an intact gradebook
are checked in any case.
"""

from __future__ import annotations

import hashlib
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from adversarial import attacks, hostile
from autograder.course import cells, course
from autograder import demo
from autograder.feedback import feedback
from autograder.isolation import isolation
from autograder.intake.events import EventKind, Severity
from autograder.run.grading import grade
from autograder.course.limits import Limits

pytestmark = pytest.mark.xdist_group("adversarial")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=4, notebook_timeout=40, memory_mb=1400, max_notebook_mb=20, tmp_mb=32)
HONEST = {"alice": "full", "bob": "release"}


class _Listener:
    """A TCP server on the host's loopback that records every connection (the sandbox must make none)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections: list[Any] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                return
            self.connections.append(addr)
            conn.close()


@pytest.fixture(scope="module")
def attack(tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("attack")
    sols, crs, full, release = hostile.toy(base)
    out = base / "out"
    subs = base / "subs"
    subs.mkdir()
    for student, kind in HONEST.items():
        (subs / f"{student}_{NAME}.ipynb").write_text(nbformat.writes(full if kind == "full" else release))
    paths = {
        "read_gradebook": str(out / "course" / "gradebook.db"),
        "read_source": str(out / "course" / "source" / NAME / f"{NAME}.ipynb"),
        "read_solutions": str(sols / NAME / f"{NAME}.ipynb"),
        "read_repo_solutions": str(course.SOLUTIONS_DIR),
        "read_repo": str(course.REPO_ROOT / "run.py"),
        "read_other_submission": str(subs / f"alice_{NAME}.ipynb"),
        "read_other_autograded": str(out / "course" / "autograded" / "alice" / NAME / f"{NAME}.ipynb"),
        "read_workers": str(out / "work"),
        "write_course": str(out / "course" / "pwned.txt"),
        "write_source": str(out / "course" / "source" / NAME / f"{NAME}.ipynb"),
        "write_repo": str(course.REPO_ROOT / "dpc-pwned.txt"),
        "write_host_tmp": "/tmp/dpc-pwned.txt",
        "write_submissions": str(subs / "pwned.txt"),
    }
    listener = _Listener()
    cases = hostile.build(subs, full, release, paths, listener.port)
    cases += hostile.build_files(subs, full, release, base / "outside.ipynb")
    source_hash = hashlib.sha256((sols / NAME / f"{NAME}.ipynb").read_bytes()).hexdigest()
    run = grade(subs, out, solutions_dir=sols, workers=2, limits=LIMITS, progress=False, sandbox_mode=grading_sandbox)
    # the honest students alone, for comparison
    clean = base / "clean"
    clean.mkdir()
    for student in HONEST:
        (clean / f"{student}_{NAME}.ipynb").write_bytes((subs / f"{student}_{NAME}.ipynb").read_bytes())
    reference = grade(clean, base / "clean-out", solutions_dir=sols, workers=2, limits=LIMITS, progress=False,
                      sandbox_mode=grading_sandbox)
    yield {"run": run, "cases": {c.student: c for c in cases}, "paths": paths, "listener": listener,
           "reference": reference, "out": out, "sols": sols, "source_hash": source_hash, "fresh": crs}
    listener.sock.close()
    for p in paths.values():
        if p.endswith("pwned.txt"):
            Path(p).unlink(missing_ok=True)


CASES = ["loop", "loopx", "sleeper", "forker", "hog", "flood", "quitter", "exiter", "killer", "grpkiller",
         "garbled", "jsonish", "whale", "deleter", "duplicator", "editor", "snoop", "vandal", "caller",
         "patcher", "sneaky", "trojan", "rewriter", *attacks.SCORE_ATTACKS, *attacks.LEAK_ATTACKS,
         # intake and files (issue 13)
         "linker", "piper", "zipper", "José", "Jose", "filler", "sockfill",
         *("Ann_Lee-" + hashlib.sha256(name.encode()).hexdigest()[:6] for name in ("Ann Lee", "Ann:Lee"))]
NO_KERNEL = {"garbled", "jsonish", "whale", "linker", "piper", "zipper"}  # graded as the release notebook, unrun


def test_every_hostile_case_is_in_the_suite(attack: dict[str, Any]) -> None:
    assert sorted(attack["cases"]) == sorted(CASES)


@pytest.mark.parametrize("student", CASES)
def test_hostile_submission_gets_a_grade_and_a_reason(attack: dict[str, Any], student: str) -> None:
    case = attack["cases"][student]
    run = attack["run"]
    (r,) = [r for r in run.results if r.student == student]
    got = {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"}
    assert got == case.scores or got in case.alt_scores, (case.what, got, r.events)
    kinds = {str(e.kind) for e in r.events}
    assert case.events <= kinds, (case.what, kinds)
    # the reason is in the report, under the submission's heading
    md = run.report_md.read_text()
    for kind in case.events:
        section = md.split(f"### {student} / {NAME}:", 1)
        title = EventKind.from_key(kind).title
        assert len(section) == 2 and title in section[1].split("### ", 1)[0], (student, kind)
    # its feedback exists and shows no hidden test code
    hidden = feedback.hidden_test_lines(run.output_dir / "course")[NAME][NAME]
    html = (run.output_dir / r.feedback[0]).read_text()
    assert feedback.leaked_hidden_lines(html, hidden) == []


@pytest.mark.parametrize("student", [*attacks.SCORE_ATTACKS, *attacks.LEAK_ATTACKS])
def test_attack_shows_no_hidden_line_even_encoded(attack: dict[str, Any], student: str) -> None:
    """Neither its feedback nor any output of its graded notebook holds a hidden test line, plain or encoded."""
    run = attack["run"]
    (r,) = [r for r in run.results if r.student == student]
    hidden = feedback.hidden_test_lines(run.output_dir / "course")[NAME][NAME]
    assert hidden, "the toy assignment has hidden tests to look for"
    graded = nbformat.read(attack["out"] / "course" / "autograded" / student / NAME / f"{NAME}.ipynb", as_version=4)
    outputs = nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(outputs=c.outputs) for c in graded.cells if c.cell_type == "code"]))
    for page in [(run.output_dir / r.feedback[0]).read_text(), outputs]:
        assert attacks.hidden_leaks(page, hidden) == [], student


def test_honest_students_unaffected(attack: dict[str, Any]) -> None:
    run, ref = attack["run"], attack["reference"]
    got = {r.student: r.exercises for r in run.results if r.student in HONEST}
    assert got == {r.student: r.exercises for r in ref.results}
    for r in run.results:
        if r.student in HONEST:
            assert not [e for e in r.events if e.severity is Severity.ERROR], r.events


def test_gradebook_intact(attack: dict[str, Any]) -> None:
    crs = attack["out"] / "course"
    con = sqlite3.connect(crs / "gradebook.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        students = {x for (x,) in con.execute("SELECT id FROM student")}
        assert students == set(HONEST) | set(CASES)
        n_sub = con.execute("SELECT count(*) FROM submitted_assignment").fetchone()[0]
        assert n_sub == len(students)
        # the instructor's cells (test code, checksums, points) are exactly those of a freshly built course
        query = ("SELECT s.name, s.source, s.checksum, g.max_score FROM source_cell s "
                 "LEFT JOIN grade_cells g ON g.id = s.id ORDER BY s.name")
        fresh = sqlite3.connect(attack["fresh"] / "gradebook.db")
        try:
            assert con.execute(query).fetchall() == fresh.execute(query).fetchall()
        finally:
            fresh.close()
        src = nbformat.read(attack["sols"] / NAME / f"{NAME}.ipynb", as_version=4)
        tests = {gid: c.source for gid, c in cells.test_cells(src).items()}
        stored = dict(con.execute("SELECT name, source FROM source_cell").fetchall())
        assert {k: stored[k] for k in tests} == tests
    finally:
        con.close()
    assert hashlib.sha256((attack["sols"] / NAME / f"{NAME}.ipynb").read_bytes()).hexdigest() == attack["source_hash"]


def _probe(attack: dict[str, Any], student: str, marker: str) -> list[object]:
    """What a probing submission printed (it ran in the sandbox: the fixture ``sandbox_info`` skips elsewhere)."""
    found = hostile.probe_output(attack["out"] / "course" / "autograded" / student / NAME / f"{NAME}.ipynb", marker)
    assert found is not None, f"the probing cell of {student} did not run"
    return found


def test_the_suite_ran_in_the_sandbox(attack: dict[str, Any], sandbox_info: isolation.SandboxInfo) -> None:
    md = attack["run"].report_md.read_text()
    assert "sandbox: bubblewrap" in md and "not visible to student code" in md and "WARNING" not in md
    assert not any(e.kind is EventKind.SANDBOX_OFF for r in attack["run"].results for e in r.events)


def test_no_secret_was_readable(attack: dict[str, Any], sandbox_info: isolation.SandboxInfo) -> None:
    assert _probe(attack, "snoop", "SNOOP:") == []


def test_no_file_was_written_outside(attack: dict[str, Any], sandbox_info: isolation.SandboxInfo) -> None:
    # only its private /tmp accepted the write; the host's files were not touched
    assert _probe(attack, "vandal", "VANDAL:") == ["/tmp/dpc-pwned.txt"]
    for key, p in attack["paths"].items():
        if key.startswith("write_"):
            assert not Path(p).exists() or "pwned" not in Path(p).read_text(errors="replace"), p


def test_course_directory_untouched(attack: dict[str, Any]) -> None:
    """Sandbox or not, the run's copy of the sources (hidden tests) is what the instructor wrote."""
    src = attack["out"] / "course" / "source" / NAME / f"{NAME}.ipynb"
    assert b"pwned" not in src.read_bytes() and not (attack["out"] / "course" / "pwned.txt").exists()
    nbformat.read(src, as_version=4)  # still a valid notebook


def test_no_network_connection(attack: dict[str, Any], sandbox_info: isolation.SandboxInfo) -> None:
    assert _probe(attack, "caller", "NET:") == []
    assert attack["listener"].connections == []


def test_no_process_survives(attack: dict[str, Any]) -> None:
    uids = hostile.kernel_uids(attack["out"])
    if isolation.probe("auto").drops_uid:  # as root: every kernel had a uid of its own, none may live on
        assert len(uids) >= len(CASES) - len(NO_KERNEL), uids  # all but the unreadable notebooks ran a kernel
    assert hostile.kernel_uid_processes(uids) == []


def test_report_lists_every_broken_submission(attack: dict[str, Any]) -> None:
    md = attack["run"].report_md.read_text()
    flagged = md.split("## Submissions that failed or were flagged", 1)[1]
    for student, case in attack["cases"].items():
        if case.events:
            assert f"### {student} / {NAME}:" in flagged, student


@pytest.fixture(scope="module")
def zip_attack(tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str, attack: dict[str, Any]) -> Any:
    """The honest students and a member of every kind of archive trouble, in one zip, graded."""
    base = tmp_path_factory.mktemp("zip-attack")
    subs = attack["out"].parent / "subs"
    honest = {"bob": (subs / f"bob_{NAME}.ipynb").read_bytes()}
    zpath = base / "submissions.zip"
    hostile.hostile_zip(zpath, (subs / f"alice_{NAME}.ipynb").read_bytes(), honest)
    return grade(zpath, base / "out", solutions_dir=attack["sols"], workers=2, limits=LIMITS, progress=False,
                 sandbox_mode=grading_sandbox)


ZIP_CASES = {"liar": "unreadable_file", "bomb": "too_large", "sneakybomb": "unreadable_file",
             "mangled": "unreadable_file", "nest": "not_a_notebook", "linked": "symlink"}


def test_a_hostile_zip_is_graded_member_by_member(zip_attack: Any, attack: dict[str, Any]) -> None:
    """Lying headers, bombs, damaged members, nested zips, links, unsafe paths: one bad submission each (zero,
    with the reason in the report), and the honest students graded as without them."""
    got = {r.student: r for r in zip_attack.results}
    assert set(got) == set(HONEST) | set(ZIP_CASES)
    ref = {r.student: r.exercises for r in attack["reference"].results}
    assert {s: got[s].exercises for s in HONEST} == ref
    md = zip_attack.report_md.read_text()
    for student, kind in ZIP_CASES.items():
        scores = {k: v[0] for k, v in got[student].exercises.items() if k != "q4_answer"}
        assert scores == hostile.ZERO, student
        assert kind in {str(e.kind) for e in got[student].events}, student
        section = md.split(f"### {student} / {NAME}:", 1)
        assert len(section) == 2 and EventKind.from_key(kind).title in section[1].split("### ", 1)[0], student
    assert "unsafe path in the archive" in md and f"../escape_{NAME}.ipynb" in md
