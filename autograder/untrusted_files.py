"""Read a submission's bytes without trusting it: never through a symbolic link, never more than a cap.

Everything the grader itself reads of a submission (the notebooks, nbgrader's ``timestamp.txt`` next to them,
the members of a zip of submissions) goes through these two functions:

* :func:`read_no_follow` opens a file below a base folder one path component at a time (``openat`` with
  ``O_NOFOLLOW``; folders with ``O_DIRECTORY``), so a symbolic link anywhere below the base -- the file itself
  or a folder in the middle of its path -- is refused instead of followed, even if it appears between a check
  and the read.  A FIFO or device is refused too (opened non-blocking, then checked with ``fstat``).
* :func:`read_member` streams a zip member and stops one byte past the cap: the sizes in a zip's headers are
  claims of the archive's author (a zip bomb declares a small size, or the true one), so they are never
  trusted.  Whatever a corrupt member raises (bad CRC, broken deflate stream, unsupported compression,
  encryption, truncated data) becomes an :class:`UnreadableFile` with a one-line reason.
"""

from __future__ import annotations

import contextlib
import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

__all__ = ["UnreadableFile", "SymlinkFound", "read_no_follow", "read_member", "is_symlink_member"]

_CHUNK = 1 << 20


class UnreadableFile(OSError):
    """A submitted file that cannot be read safely; ``str()`` is the reason, for the report."""


class SymlinkFound(UnreadableFile):
    """A symbolic link in the path of a submitted file (not followed)."""


def _read_fd(fd: int, cap: int) -> bytes:
    """At most ``cap + 1`` bytes from ``fd`` (one more than the cap tells the caller the file is too large)."""
    chunks: list[bytes] = []
    left = cap + 1
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_no_follow(base: Path, rel: str, cap: int) -> bytes:
    """The first ``cap + 1`` bytes (at most) of the regular file ``base / rel``, no symbolic link followed.

    Args:
        base: the trusted folder (the submissions folder; links above it are the instructor's business).
        rel: the file's ``/``-separated path below ``base`` (no ``..``, not absolute).
        cap: the most bytes the caller wants; a longer file returns ``cap + 1`` bytes.

    Raises:
        SymlinkFound: ``rel`` or one of its folders is a symbolic link.
        UnreadableFile: ``rel`` is unsafe, missing, not a regular file, or cannot be read.
    """
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise UnreadableFile(f"unsafe path {rel!r}")
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fds: list[int] = []
    try:
        fds.append(os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC) if last else dir_flags
            try:
                fds.append(os.open(part, flags, dir_fd=fds[-1]))
            except OSError as exc:
                link = False
                with contextlib.suppress(OSError):
                    link = stat.S_ISLNK(os.lstat(part, dir_fd=fds[-1]).st_mode)
                if link:
                    where = "the file" if last else f"its folder {'/'.join(parts[:i + 1])}"
                    raise SymlinkFound(f"{where} is a symbolic link (not followed)") from exc
                raise UnreadableFile(f"cannot open {rel}: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
            raise UnreadableFile(f"{rel} is not a regular file")
        try:
            return _read_fd(fds[-1], cap)
        except OSError as exc:
            raise UnreadableFile(f"cannot read {rel}: {exc.strerror or exc}") from exc
    finally:
        for fd in fds:
            os.close(fd)


def is_symlink_member(info: zipfile.ZipInfo) -> bool:
    """Whether a zip member was a symbolic link where it was packed (Unix mode in its external attributes)."""
    return stat.S_ISLNK(info.external_attr >> 16)


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    """The first ``cap + 1`` bytes (at most) of a zip member, streamed (its declared size is not trusted).

    Raises:
        UnreadableFile: the member is encrypted, uses an unsupported compression, or is corrupt (bad CRC,
            broken compressed data, truncated archive, headers that contradict each other).
    """
    chunks: list[bytes] = []
    left = cap + 1
    try:
        with zf.open(info) as fin:
            while left > 0:
                chunk = fin.read(min(_CHUNK, left))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
    except Exception as exc:  # zipfile, zlib, bz2 and lzma raise many types for one corrupt member
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise UnreadableFile(f"corrupt or unreadable archive member ({type(exc).__name__}: {text})") from exc
    return b"".join(chunks)
