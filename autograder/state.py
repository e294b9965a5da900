"""The output folder of a grading run, and the state that makes re-runs incremental.

``<output>/state.json`` records a fingerprint of the assignments' sources (a change re-grades everything)
and, per (student, assignment), the hash of its files together with the grading settings
(:meth:`autograder.settings.GradingSettings.fingerprint`) and its result: a submission whose hash is
unchanged keeps its grade.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .course import fingerprint_dir
from .intake import SubmissionFile
from .results import SubmissionResult

__all__ = ["OutputFolder", "GradingState", "course_fingerprint", "job_hash"]


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
    def mpl_cache(self) -> Path:
        return self.root / "cache" / "matplotlib"


def course_fingerprint(solutions_dir: Path, assignments: Iterable[str]) -> str:
    """One hash of the sources of ``assignments`` (each ``solutions_dir/<assignment>/`` folder)."""
    return hashlib.sha256("".join(f"{a}:{fingerprint_dir(Path(solutions_dir) / a)}"
                                  for a in sorted(assignments)).encode()).hexdigest()


def job_hash(files: Sequence[SubmissionFile], settings: str) -> str:
    """The hash of one submission's files (content, or the problem that keeps them from being graded) with the
    settings' fingerprint."""
    h = hashlib.sha256(settings.encode())
    for f in sorted(files, key=lambda f: f.notebook):
        h.update(f"{f.notebook}\0{f.sha256}\0{f.problem_kind}\n".encode())
    return h.hexdigest()


class GradingState:
    """``state.json``: the course fingerprint and ``{"<student>/<assignment>": {"hash", "result"}}``."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.data.setdefault("submissions", {})

    @classmethod
    def load(cls, path: Path) -> GradingState:
        """The state in ``path`` (empty if it is missing or unreadable)."""
        data: dict[str, Any] = {}
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except ValueError:
                data = {}
        return cls(path, data)

    @property
    def course(self) -> str | None:
        return self.data.get("course")

    def reset(self, course: str) -> None:
        """Forget every result: the course (its fingerprint ``course``) changed."""
        self.data = {"course": course, "submissions": {}}

    def unchanged(self, key: str, h: str) -> bool:
        """Whether the submission ``key`` was graded before with the same hash."""
        prev = self.data["submissions"].get(key)
        return prev is not None and prev.get("hash") == h

    def record(self, key: str, h: str, result: SubmissionResult) -> None:
        """Keep ``result`` under ``key`` (an empty hash: grade it again next run) and save the state."""
        entry = result.to_json()
        entry.pop("regraded")
        self.data["submissions"][key] = {"hash": h, "result": entry}
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)

    def results(self, regraded: set[str]) -> list[SubmissionResult]:
        """Every result, sorted by key; those in ``regraded`` marked as graded in this run."""
        return [SubmissionResult.from_json(entry["result"], key in regraded)
                for key, entry in sorted(self.data["submissions"].items())]
