"""The output folder of a grading run, and the state that makes re-runs incremental.

``<output>/state.json`` records

* per assignment, the fingerprint of its source folder (:func:`assignment_fingerprint`) *once the course
  directory and gradebook have been brought up to date with it* (:mod:`autograder.run.migration`): an assignment
  whose recorded fingerprint differs from its sources is migrated in place, and exactly its submissions are
  graded again; the other assignments' rows, results and pages are never touched;
* per (student, assignment), the hash of its files together with the grading settings
  (:meth:`autograder.course.settings.GradingSettings.fingerprint`), the fingerprint of the assignment it was graded
  against, and its result: a submission whose hash and assignment fingerprint are unchanged keeps its grade.

Older state files hold one fingerprint of all graded sources (``"course"``) and no per-assignment ones; they
are read as "unknown per assignment", and :mod:`autograder.run.migration` compares the course directory's copy of
each source instead.  The file is replaced atomically (write, then rename), so an interrupted run leaves
either the old or the new state.  An unreadable ``state.json`` raises :class:`StateError` (the migration
refuses to go on without the instructor's consent).

One run at a time works in an output folder: :func:`hold` locks it, and the workers inherit the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..course.course import fingerprint_dir
from ..intake.intake import SubmissionFile
from .results import SubmissionResult

__all__ = ["OutputFolder", "GradingState", "StateError", "assignment_fingerprint", "job_hash", "hold", "LOCK_WAIT"]

log = logging.getLogger(__name__)

LOCK_WAIT = 900.0
"""Seconds a run waits for the output folder held by another run (or by the workers of an interrupted one)."""


class OutputFolder:
    """The layout of a grading run's output folder ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    @property
    def course(self) -> Path:
        """The main nbgrader course directory (gradebook, sources, autograded notebooks)."""
        return self.root / "course"

    @property
    def work(self) -> Path:
        """The workers' private course directories."""
        return self.root / "work"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def grades_csv(self) -> Path:
        return self.root / "grades.csv"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def mpl_cache(self) -> Path:
        return self.root / "cache" / "matplotlib"


@contextlib.contextmanager
def hold(folder: OutputFolder, wait: float = LOCK_WAIT) -> Iterator[int]:
    """Hold the output folder for one grading run: an exclusive ``flock`` on ``<output>/.lock``.

    Yields the lock's file descriptor: the grader passes it to its worker processes, so that a worker left
    running by a grader killed mid-run keeps the folder until that worker ends, and the next run does not
    start grading in its directory meanwhile.  Waits up to ``wait`` seconds for another holder.

    Raises:
        RuntimeError: the folder is still held after ``wait`` seconds.
    """
    folder.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder.lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline, said = time.monotonic() + wait, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the output folder {folder.root} is in use by another grading run (or by a "
                                       f"worker of an interrupted one) after waiting {wait:g} s; wait for it to "
                                       "end, or use another output folder") from None
                if not said:
                    said = True
                    log.info("grade: waiting for another grading run (or an interrupted run's worker) to release "
                             "%s", folder.root)
                time.sleep(1.0)
        yield fd
    finally:
        os.close(fd)


def assignment_fingerprint(solutions_dir: Path, assignment: str) -> str:
    """The hash of one assignment's source folder ``solutions_dir/<assignment>/`` (every file in it)."""
    return fingerprint_dir(Path(solutions_dir) / assignment)


def job_hash(files: Sequence[SubmissionFile], settings: str) -> str:
    """The hash of one submission's files (content, or the problem that keeps them from being graded) with the
    settings' fingerprint."""
    h = hashlib.sha256(settings.encode())
    for f in sorted(files, key=lambda f: f.notebook):
        h.update(f"{f.notebook}\0{f.sha256}\0{f.problem_kind}\n".encode())
    return h.hexdigest()


class StateError(ValueError):
    """``state.json`` exists but cannot be read as a grading state."""


class GradingState:
    """``state.json``: ``{"version": 2, "assignments": {assignment: fingerprint}, "submissions":
    {"<student>/<assignment>": {"hash", "fingerprint", "result"}}}``."""

    VERSION = 2

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.data.setdefault("submissions", {})
        self.data.setdefault("assignments", {})
        self.data["version"] = self.VERSION

    @classmethod
    def load(cls, path: Path) -> GradingState:
        """The state in ``path`` (empty if the file is missing).

        Raises:
            StateError: the file exists but is not a state file (not JSON, not an object of the right shape).
        """
        data: dict[str, Any] = {}
        if path.is_file():
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise StateError(f"{path} cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from exc
            if (not isinstance(data, dict) or not isinstance(data.get("submissions", {}), dict)
                    or not isinstance(data.get("assignments", {}), dict)
                    or not all(isinstance(v, dict) and "result" in v for v in data.get("submissions", {}).values())):
                raise StateError(f"{path} is not a grading state (unexpected content)")
        return cls(path, data)

    def fingerprint(self, assignment: str) -> str | None:
        """The recorded fingerprint of ``assignment`` (``None``: unknown, e.g. an older state file)."""
        fp = self.data["assignments"].get(assignment)
        return str(fp) if fp is not None else None

    def set_fingerprint(self, assignment: str, fingerprint: str, *, adopt: bool = False) -> None:
        """Record that the course directory is up to date with ``fingerprint`` of ``assignment``, and save.

        ``adopt``: the sources did not change since an older state file was written; results recorded
        without an assignment fingerprint are taken as graded against this one (so they are not re-graded).
        """
        self.data["assignments"][assignment] = fingerprint
        if adopt:
            for entry in self._entries(assignment).values():
                entry.setdefault("fingerprint", fingerprint)
        self.save()

    def _entries(self, assignment: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.data["submissions"].items() if k.rsplit("/", 1)[-1] == assignment}

    def keys(self, assignment: str) -> list[str]:
        """The recorded submissions (``"<student>/<assignment>"``) of ``assignment``, sorted."""
        return sorted(self._entries(assignment))

    def stale(self, assignment: str, fingerprint: str) -> list[str]:
        """The recorded submissions of ``assignment`` graded against another version of it than ``fingerprint``."""
        return sorted(k for k, v in self._entries(assignment).items() if v.get("fingerprint") != fingerprint)

    def forget(self, assignment: str) -> None:
        """Drop ``assignment`` and its results (only after the instructor allowed discarding them), and save."""
        self.data["assignments"].pop(assignment, None)
        for key in self._entries(assignment):
            del self.data["submissions"][key]
        self.save()

    def unchanged(self, key: str, h: str, fingerprint: str) -> bool:
        """Whether the submission ``key`` was graded before with the same hash, against the same assignment
        fingerprint."""
        prev = self.data["submissions"].get(key)
        return prev is not None and prev.get("hash") == h and prev.get("fingerprint") == fingerprint

    def record(self, key: str, h: str, result: SubmissionResult, fingerprint: str | None = None) -> None:
        """Keep ``result`` under ``key`` (an empty hash: grade it again next run), graded against the assignment's
        ``fingerprint`` (``None``: the one already recorded for ``key``, e.g. when only its pages changed), and save
        the state."""
        entry = result.to_json()
        entry.pop("regraded")
        if fingerprint is None:
            fingerprint = self.data["submissions"].get(key, {}).get("fingerprint")
        new: dict[str, Any] = {"hash": h, "result": entry}
        if fingerprint is not None:
            new["fingerprint"] = fingerprint
        self.data["submissions"][key] = new
        self.save()

    def save(self) -> None:
        """Write the state (a new file renamed over the old one: never half written)."""
        self.data.pop("course", None)  # the single fingerprint of older versions, now per assignment
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)

    def results(self, regraded: set[str]) -> list[SubmissionResult]:
        """Every result, sorted by key; those in ``regraded`` marked as graded in this run."""
        return [SubmissionResult.from_json(entry["result"], key in regraded)
                for key, entry in sorted(self.data["submissions"].items())]
