"""The settings of a grading run, and the nbgrader configuration they become.

:class:`GradingSettings` is the one record of what decides a grade besides the submission itself: the limits,
the sandbox the kernels run in, the test guard, and whether feedback is written.  The grader passes it from
:func:`autograder.run.grading.grade` to the workers and the merge step; its JSON form is what the incremental state
hashes, so changing a setting re-grades every submission.

:func:`grading_config` turns the settings into the traitlets :class:`~traitlets.config.Config` that nbgrader
runs with while grading (and while ``dp-course check`` checks a notebook): the course's own configuration
(``nbgrader_config.py``, shared by every command of the kit) with its execution step replaced by
:class:`~autograder.execute.safe_execute.SafeExecute` and the feedback stripped of hidden tests.  It is
written as JSON (:data:`GRADING_CONFIG`) into the course directory a worker grades in, and
:func:`course_config` reads both files back.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from traitlets.config import Config
from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

from .limits import Limits
from .offline_maths import feedback_exporter_config

__all__ = ["COURSE_CONFIG", "GRADING_CONFIG", "HEADLESS_EXECUTE", "SAFE_EXECUTE", "GradingSettings", "course_config",
           "grading_config", "write_grading_config"]

COURSE_CONFIG = "nbgrader_config.py"
"""The course's nbgrader configuration (a copy of ``autograder/nbgrader_config.py``) in a course directory."""

GRADING_CONFIG = "grading_config.json"
"""The grading configuration (:func:`grading_config`, as JSON) in a course directory that grades."""

HEADLESS_EXECUTE = "autograder.isolation.headless.Execute"
"""The execution step of the course's configuration (plain ``nbgrader autograde``)."""

SAFE_EXECUTE = "autograder.execute.safe_execute.SafeExecute"
"""The execution step while grading."""

SANITIZE_STEPS = [
    "nbgrader.preprocessors.ClearOutput",
    "autograder.intake.rebuild_structure.RebuildStructure",
    "nbgrader.preprocessors.DeduplicateIds",
    "autograder.execute.drop_empty_metadata.DropEmptyNbgraderMetadata",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
"""nbgrader's sanitising steps of ``autograde``, with the notebook's cells first rebuilt on the released notebook
(``RebuildStructure``: every instructor cell once, in its place; answers matched by ``grade_id``) and the clean-up
``DeduplicateIds`` needs (test cells a student deleted are put back: ``OverwriteCells.add_missing_cells``)."""

FEEDBACK_STEPS = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.feedback.strip_hidden_tests.StripHiddenTests",
    "autograder.feedback.withhold_hidden_outputs.WithholdHiddenOutputs",
    "autograder.feedback.safe_markup.SafeMarkup",
    "autograder.feedback.pending_hand_grading.PendingHandGrading",
    "autograder.feedback.offline_maths.OfflineMaths",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
"""nbgrader's ``generate_feedback`` steps, with the hidden tests stripped, their outputs withheld
(``WithholdHiddenOutputs``), outputs reduced to text and checked images (``SafeMarkup``), the answers still to be
marked by hand said so and MathJax loaded offline (the same list as the course's ``nbgrader_config.py``)."""


@dataclasses.dataclass(frozen=True)
class GradingSettings:
    """What decides a grade besides the submission (see the module's docstring).

    Args:
        limits: time, memory, process, file-size, output and notebook-size limits.
        sandbox: the kernels' sandbox, as found on this machine: ``"bwrap"`` or ``"none"``.
        guard: defend the tests against monkeypatching (off only to benchmark nbgrader itself).
        feedback: write the per-student HTML feedback.
        trusted: run test cells in a trusted kernel of each worker, never in the student's (two kernels per
            notebook, issue "Trusted verdicts"); off (``dp-course grade --single-kernel``) every cell runs in
            the student's kernel, as nbgrader does – the fallback, and the comparison the benchmark makes.

    Raises:
        ValueError: ``sandbox`` is neither ``"bwrap"`` nor ``"none"``.
    """

    limits: Limits = Limits()
    sandbox: str = "bwrap"
    guard: bool = True
    feedback: bool = True
    trusted: bool = True

    def __post_init__(self) -> None:
        if self.sandbox not in ("bwrap", "none"):
            raise ValueError(f"sandbox must be one of ('bwrap', 'none'), got {self.sandbox!r}")

    def to_json(self) -> dict[str, Any]:
        return {"limits": self.limits.to_json(), "sandbox": self.sandbox, "guard": self.guard,
                "feedback": self.feedback, **({"trusted": True} if self.trusted else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GradingSettings:
        return cls(Limits.from_json(data["limits"]), data["sandbox"], bool(data["guard"]), bool(data["feedback"]),
                   bool(data.get("trusted", False)))  # recorded before trusted verdicts: one kernel

    def fingerprint(self) -> str:
        """The canonical JSON text of the settings (the incremental state hashes it with each submission)."""
        return json.dumps(self.to_json(), sort_keys=True)


def course_config(root: Path) -> Config:
    """The nbgrader configuration of the course directory ``root``: its ``nbgrader_config.py`` and, where the
    directory grades, its :data:`GRADING_CONFIG` on top; ``CourseDirectory.root`` is ``root``."""
    root = Path(root)
    config = Config()
    if (root / COURSE_CONFIG).is_file():
        config = PyFileConfigLoader(COURSE_CONFIG, path=str(root)).load_config()
    if (root / GRADING_CONFIG).is_file():
        config.merge(JSONFileConfigLoader(GRADING_CONFIG, path=str(root)).load_config())
    config.CourseDirectory.root = str(root)
    return config


def grading_config(settings: GradingSettings, course: Config, *, events_dir: Path,
                   mpl_cache: Path | None) -> Config:
    """The configuration to grade with, on top of the course's own (``course``, see :func:`course_config`).

    Args:
        settings: limits, sandbox and guard for :class:`~autograder.execute.safe_execute.SafeExecute`.
        course: the course's configuration; its autograde steps start with :data:`HEADLESS_EXECUTE`, which
            is swapped for :data:`SAFE_EXECUTE`.
        events_dir: where the executor writes each notebook's events.
        mpl_cache: a prepared matplotlib cache copied into each kernel (``None``: each builds its own).

    Raises:
        ValueError: the course's autograde steps do not start with :data:`HEADLESS_EXECUTE` (the configuration
            was changed in a way the grader does not know how to extend).
    """
    steps = list(course.Autograde.get("autograde_preprocessors", []))
    if not steps or steps[0] != HEADLESS_EXECUTE:
        raise ValueError(f"the course's c.Autograde.autograde_preprocessors must start with {HEADLESS_EXECUTE!r}, "
                         f"got {steps[:1]!r}")
    c = Config()
    c.Autograde.autograde_preprocessors = [SAFE_EXECUTE, *steps[1:]]
    c.Autograde.sanitize_preprocessors = list(SANITIZE_STEPS)
    c.OverwriteCells.add_missing_cells = True
    c.GenerateFeedback.preprocessors = list(FEEDBACK_STEPS)
    for key, value in feedback_exporter_config().items():  # the kit's template: MathJax from a local copy
        setattr(c.HTMLExporter, key, value)
    c.OfflineMaths.install = False  # the worker's pages are copied out; publish_feedback puts MathJax beside them
    c.SafeExecute.limits = settings.limits.to_json()
    c.SafeExecute.sandbox = settings.sandbox
    c.SafeExecute.events_dir = str(events_dir)
    c.SafeExecute.mpl_cache = str(mpl_cache) if mpl_cache else ""
    c.SafeExecute.guard = settings.guard
    c.SafeExecute.trusted = settings.trusted
    return c


def write_grading_config(root: Path, config: Config) -> Path:
    """Write ``config`` as :data:`GRADING_CONFIG` into the course directory ``root``; returns its path."""
    path = Path(root) / GRADING_CONFIG
    path.write_text(json.dumps(config, indent=1, sort_keys=True))
    return path
