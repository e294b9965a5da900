"""Keep a grading run's course directory out of student code's reach when there is no sandbox.

With the sandbox (:mod:`autograder.isolation.bwrap`) a kernel never sees the course directory.  Graded with
``--no-sandbox``, kernels run on the host, each in a private copy of the assignment's files
(:func:`autograder.run.grading.SafeExecute`), and the grader adds what file permissions can give:

* the course and worker directories are private to the grader's user (mode 0700): a kernel under a
  dedicated uid (a root grader) can neither read nor write them;
* while kernels run, the course directory is **sealed**: its write permission bits are removed from the
  directory itself, the gradebook, the instructor's sources with the hidden tests and the release, so that
  writing there fails (``PermissionError``) -- for a kernel of a non-root grader this stops a plain write, not
  a deliberate ``chmod`` (the same user owns the files; only the sandbox stops that);
* the main process unseals the directory only while it merges a finished submission, and for good at the end.

Workers copy their sources from the sealed directory, so their copies are read-only too;
:func:`remove_tree` deletes such trees.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["SEALED", "seal", "unseal", "unsealed", "make_private", "remove_tree"]

SEALED = ("source", "release", "gradebook.db", "nbgrader_config.py", "header.ipynb")
"""What :func:`seal` makes read-only inside a course directory (besides the directory itself)."""

_WRITE = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def _walk(path: Path) -> Iterator[Path]:
    """``path`` and, for a directory, everything below it; symbolic links are skipped, never followed."""
    if path.is_symlink() or not path.exists():
        return
    yield path
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                p = Path(root) / name
                if not p.is_symlink():
                    yield p


def _chmod(path: Path, add: int = 0, remove: int = 0) -> None:
    mode = stat.S_IMODE(path.lstat().st_mode)
    new = (mode | add) & ~remove
    if new != mode:
        os.chmod(path, new)


def seal(course: Path) -> None:
    """Remove the write bits from ``course`` itself and from its :data:`SEALED` entries (recursively)."""
    course = Path(course)
    for name in SEALED:
        for p in _walk(course / name):
            _chmod(p, remove=_WRITE)
    if course.is_dir():
        _chmod(course, remove=_WRITE)


def unseal(course: Path) -> None:
    """Give the owner back write permission on ``course`` and its :data:`SEALED` entries."""
    course = Path(course)
    if course.is_dir() and not course.is_symlink():
        _chmod(course, add=stat.S_IWUSR)
    for name in SEALED:
        for p in _walk(course / name):
            _chmod(p, add=stat.S_IWUSR)


@contextlib.contextmanager
def unsealed(course: Path, enabled: bool = True) -> Iterator[None]:
    """Unseal ``course`` for the duration of the block (only the grader's main process writes then)."""
    if not enabled:
        yield
        return
    unseal(course)
    try:
        yield
    finally:
        seal(course)


def make_private(path: Path) -> Path:
    """Create ``path`` if needed and make it accessible to its owner only (mode 0700)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def remove_tree(path: Path) -> None:
    """Delete a directory tree, read-only (sealed) parts included; a missing path is not an error."""
    path = Path(path)
    if path.is_symlink():
        path.unlink()
        return
    for p in _walk(path):
        if p.is_dir():
            _chmod(p, add=stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)
