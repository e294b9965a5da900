"""``dp-course formgrade OUTPUT``: hand-grade a grading run in nbgrader's Formgrader.

Starts JupyterLab on ``OUTPUT/course`` -- the nbgrader course directory that ``dp-course grade -o OUTPUT``
keeps: the gradebook, the instructor's sources, each student's autograded notebooks -- bound to 127.0.0.1
only, with nbgrader's Formgrader on that course (its course directory is set from the environment variable
:data:`autograder.formgrade.formgrade_server.COURSE_ENV`) and its JupyterLab extension on.  The grader's browser opens
on the Formgrader (``/formgrader``); *Manual Grading* lists the run's submissions, and each written answer is
shown with its mark scheme from the source notebook (:mod:`autograder.formgrade.formgrade_server`,
:mod:`autograder.formgrade.mark_scheme`).  Marks and comments go into ``OUTPUT/course/gradebook.db``.

The session's Jupyter configuration: ``autograder/jupyter_formgrade/`` (the Formgrader switched to the kit's
extension, no update or news checks, nbgrader's course directory) and, in a checkout of the course,
``jupyter_config/common/`` (terminals keep the environment's ``bin/`` on ``PATH``).  The environment's
``bin/`` is put first on ``PATH`` here too: nbgrader shells out to ``alembic``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy.exc import SQLAlchemyError

from ..course.course import REPO_ROOT
from .formgrade_server import COURSE_ENV
from ..run.state import OutputFolder

__all__ = ["CONFIG_DIR", "DEFAULT_PORT", "LabCommand", "Summary", "grading_course", "summary", "lab_command",
           "serve"]

CONFIG_DIR = Path(__file__).resolve().parent.parent / "jupyter_formgrade"
"""The session's Jupyter configuration folder (first on ``JUPYTER_CONFIG_PATH``)."""
COMMON_CONFIG_DIR = REPO_ROOT / "jupyter_config" / "common"
DEFAULT_PORT = 8888
_FIXED = ("--ServerApp.root_dir", "--notebook-dir", "--ServerApp.ip", "--ip", "--ServerApp.allow_remote_access")
"""Options a session never takes from the command line: it serves OUTPUT/course, on the loopback only."""


def grading_course(output: Path) -> Path:
    """The course directory of the grading run in ``output`` (``output/course``), checked.

    Raises:
        ValueError: ``output`` is no grading output folder (no ``course/gradebook.db`` in it); the message
            names the folder, what is missing and what to pass instead.  Also when the gradebook is read-only
            (a grading run is in progress there, or stopped while it had sealed the course).
    """
    given = Path(output)
    where = given.expanduser().resolve()
    usage = ("OUTPUT must be the output folder of a grading run (what you passed to dp-course grade -o; "
             "the default is ./grading)")
    if not where.is_dir():
        raise ValueError(f"{usage}, got {str(given)!r}: no such folder")
    course = OutputFolder(where).course
    try:
        has_gradebook = (course / "gradebook.db").is_file()
    except PermissionError as exc:  # the course is private to the user who graded (autograder.isolation.protect)
        raise ValueError(f"{usage}, got {str(given)!r}: this user may not read {course} (it is private to the user "
                         "who graded it); open the Formgrader as that user") from exc
    if not has_gradebook:
        if (where / "gradebook.db").is_file() and where.name == "course":
            raise ValueError(f"{usage}, got {str(given)!r}: that is the run's course folder; pass its parent, "
                             f"{str(where.parent)!r}")
        raise ValueError(f"{usage}, got {str(given)!r}: it has no course/gradebook.db (grade first: "
                         f"dp-course grade SUBMISSIONS -o {given})")
    # the permission bits, not os.access: root may write anything, but a sealed course means a run is grading
    if any(not stat.S_IMODE(p.stat().st_mode) & stat.S_IWUSR for p in (course, course / "gradebook.db")):
        raise ValueError(f"the gradebook {course / 'gradebook.db'} is read-only: a grading run is in progress on "
                         f"{str(given)!r}, or one stopped early; wait for it, or re-run dp-course grade "
                         f"-o {given}, then open the Formgrader")
    return course


@dataclass(frozen=True)
class Summary:
    """What a grading run's gradebook holds, for the start-up line."""

    assignments: int
    submissions: int
    to_hand_grade: int

    def describe(self) -> str:
        return (f"{self.submissions} submission(s) of {self.assignments} assignment(s), "
                f"{self.to_hand_grade} with answers to grade by hand")


def summary(course: Path) -> Summary:
    """Count the assignments, submissions and submissions waiting for hand grading in ``course/gradebook.db``.

    Raises:
        ValueError: the gradebook cannot be read as one (the message names the file and the database's error).
    """
    db = Path(course) / "gradebook.db"
    try:
        with Gradebook(f"sqlite:///{db}") as gb:
            assignments = gb.assignments
            subs = [s for a in assignments for s in a.submissions]
            return Summary(len(assignments), len(subs), sum(bool(s.needs_manual_grade) for s in subs))
    except SQLAlchemyError as exc:
        raise ValueError(f"the gradebook {db} cannot be read: {str(exc).splitlines()[0]}") from exc


@dataclass(frozen=True)
class LabCommand:
    """How to start the session: run ``argv`` in ``cwd`` with ``env``; the Formgrader is at ``url``."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    url: str


def _check_port(port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer between 1 and 65535, got {port!r}")


def lab_command(output: Path, *, port: int = DEFAULT_PORT, headless: bool = False,
                jupyter_args: Sequence[str] = ()) -> LabCommand:
    """The JupyterLab command of a Formgrader session on the grading run in ``output``.

    ``jupyter_args`` are extra JupyterLab options (``--ServerApp.token=...``); one given there replaces the
    session's default of the same name, except the folder served and the address (``--ServerApp.root_dir``,
    ``--ServerApp.ip`` and their aliases), which are refused.

    Raises:
        ValueError: ``output`` is not a grading output folder (:func:`grading_course`), ``port`` is not in
            1-65535, or ``jupyter_args`` tries to change the folder or the address.
    """
    _check_port(port)
    extra = [a for a in jupyter_args if a != "--"]
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    fixed = sorted(given & set(_FIXED))
    if fixed:
        raise ValueError(f"jupyter_args must not set {', '.join(fixed)}: a Formgrader session always serves "
                         f"OUTPUT/course on 127.0.0.1, got {' '.join(extra)!r}")
    course = grading_course(output)
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={course}", "--ServerApp.ip=127.0.0.1",
            f"--port={port}", "--LabApp.default_url=/formgrader"]
    if headless:
        argv.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # containers and CI machines often run as root
    argv = [a for a in argv if a.split("=", 1)[0] not in given] + extra
    return LabCommand(argv, _env(course), course, f"http://127.0.0.1:{port}/formgrader")


def _env(course: Path) -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)  # not resolved: a venv's python is a symbolic link
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")  # alembic (nbgrader), dp-course in terminals
    folders = [str(CONFIG_DIR)] + ([str(COMMON_CONFIG_DIR)] if COMMON_CONFIG_DIR.is_dir() else [])
    rest = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p and p not in folders]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([*folders, *rest])
    env[COURSE_ENV] = str(course)
    env.pop("MPLBACKEND", None)  # inline plots in live notebooks opened from the Formgrader
    return env


def serve(output: Path, *, port: int = DEFAULT_PORT, headless: bool = False,
          jupyter_args: Sequence[str] = ()) -> int:
    """Start the Formgrader session on ``output`` (see :func:`lab_command`) and return JupyterLab's exit status.

    On POSIX this process becomes JupyterLab (``exec``), so Ctrl-C and a supervisor's signals reach it directly.
    """
    cmd = lab_command(output, port=port, headless=headless, jupyter_args=jupyter_args)
    print(f"dp-course formgrade: {cmd.cwd}: {summary(cmd.cwd).describe()}", file=sys.stderr)
    print(f"dp-course formgrade: the Formgrader opens at {cmd.url} (Manual Grading lists the submissions; "
          "JupyterLab itself is at /lab; JupyterLab prints the address with its token below). Ctrl-C stops it.",
          file=sys.stderr, flush=True)
    sys.stdout.flush()
    if os.name == "posix":
        os.chdir(cmd.cwd)
        os.execve(cmd.argv[0], cmd.argv, cmd.env)
    return subprocess.call(cmd.argv, cwd=cmd.cwd, env=cmd.env)  # pragma: no cover - not POSIX
