"""The worker's page process (:class:`autograder.feedback.page_process.PageProcess`): one child renders every page
of a worker (so the renderer's caches live across submissions), a stalled page costs only that page (the child
is killed and the next page gets a new one), and the child never outlives the worker.

A stand-in renderer notes the pid of the process that rendered each page in a file, fails for the student
``broken`` (with nbgrader's kind of log), sleeps for ``stall`` and kills itself for ``crash``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from autograder.feedback.page_process import PageProcess


class FakeRenderer:
    """What :class:`~autograder.feedback.feedback_render.FeedbackRenderer` answers, without nbgrader."""

    def __init__(self, notes: Path) -> None:
        self.notes = notes

    def render(self, assignment: str, student: str) -> dict[str, Any]:
        with open(self.notes, "a") as f:
            f.write(f"{student} {os.getpid()}\n")
        if student == "stall":
            time.sleep(60)
        if student == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if student == "broken":
            return {"success": False, "log": "[ERROR] ValueError: a broken page"}
        return {"success": True, "log": ""}


def _renderers(notes: Path) -> dict[str, int]:
    """Which pid rendered each student's page."""
    return {student: int(pid) for student, pid in (line.split() for line in notes.read_text().splitlines())}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _pages(notes: Path) -> PageProcess:
    return PageProcess(FakeRenderer(notes))  # type: ignore[arg-type]  # a stand-in with the same render()


def test_one_child_renders_every_page(tmp_path: Path) -> None:
    pages = _pages(tmp_path / "notes")
    try:
        assert pages.render("a", "alice", 30) == {"success": True, "error": ""}
        assert pages.render("a", "bob", 30)["success"]
        failed = pages.render("a", "broken", 30)
        assert not failed["success"] and "a broken page" in failed["error"]
        child = pages.pid
        assert child is not None
    finally:
        pages.close()
    pids = _renderers(tmp_path / "notes")
    assert pids == {"alice": child, "bob": child, "broken": child}  # the same child, not a fork per page
    assert child != os.getpid() and pages.pid is None and not _alive(child)


def test_a_stalled_page_costs_only_that_page(tmp_path: Path) -> None:
    pages = _pages(tmp_path / "notes")
    try:
        assert pages.render("a", "alice", 30)["success"]
        t0 = time.monotonic()
        stalled = pages.render("a", "stall", 2)
        assert time.monotonic() - t0 < 20
        assert not stalled["success"] and "longer than 2 s" in stalled["error"]
        assert pages.render("a", "bob", 30)["success"]
    finally:
        pages.close()
    pids = _renderers(tmp_path / "notes")
    assert pids["stall"] == pids["alice"] and not _alive(pids["stall"])  # killed, not left sleeping
    assert pids["bob"] != pids["stall"]  # a new child took over


def test_a_child_that_dies_gives_a_reason_and_a_new_child(tmp_path: Path) -> None:
    pages = _pages(tmp_path / "notes")
    try:
        crashed = pages.render("a", "crash", 30)
        assert not crashed["success"] and "ended without an answer" in crashed["error"]
        assert pages.render("a", "alice", 30)["success"]
    finally:
        pages.close()


def test_the_child_dies_with_the_worker(tmp_path: Path) -> None:
    """A worker killed with SIGKILL (no ``close``) takes its page process with it."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(os.path.dirname(__file__))!r})
        from pathlib import Path
        from test_page_process import _pages
        pages = _pages(Path({str(tmp_path / "notes")!r}))
        print(pages.render("a", "alice", 30)["success"], pages.pid, flush=True)
        time.sleep(120)
    """)
    worker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(__file__)))
    try:
        assert worker.stdout is not None
        ok, pid = worker.stdout.readline().split()
        child = int(pid)
        assert ok == "True" and _renderers(tmp_path / "notes") == {"alice": child}
        assert _alive(child)
        worker.kill()
        worker.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _alive(child):
            if time.monotonic() > deadline:
                pytest.fail(f"the page process {child} outlived its worker")
            time.sleep(0.1)
    finally:
        if worker.poll() is None:
            worker.kill()
