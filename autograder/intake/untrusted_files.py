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
* :func:`check_zip_directory` runs before ``zipfile.ZipFile`` opens an archive, which reads and parses its
  whole central directory first: a zip that declares millions of members, or a directory of gigabytes, would
  cost that memory and time before any cap on members applies.  It reads the end of central directory record
  (and the ZIP64 one) with ``struct`` and walks the directory's record headers, as ``zipfile`` will, counting.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

__all__ = ["UnreadableFile", "SymlinkFound", "read_no_follow", "read_member", "is_symlink_member",
           "check_zip_directory", "DIRECTORY_BYTES_PER_MEMBER"]

_CHUNK = 1 << 20

DIRECTORY_BYTES_PER_MEMBER = 1024
"""Central directory bytes allowed per member, on average: a record is 46 bytes plus its name, extra field and
comment (a submission's path and a timestamp field come to about 150-250 bytes)."""

# The zip format's records (APPNOTE.TXT 4.3.12, 4.3.14-16), little-endian
_EOCD = struct.Struct("<4s4H2LH")          # end of central directory: sig, disk, cd disk, entries here, entries,
_EOCD_SIG = b"PK\x05\x06"                  # cd size, cd offset, comment length (22 bytes)
_LOCATOR = struct.Struct("<4sLQL")         # ZIP64 locator: sig, disk, offset of the ZIP64 record, disks (20 bytes)
_LOCATOR_SIG = b"PK\x06\x07"
_EOCD64 = struct.Struct("<4sQ2H2L4Q")       # ZIP64 end of central directory: sig, size, versions, disks, entries
_EOCD64_SIG = b"PK\x06\x06"                # here, entries, cd size, cd offset (56 bytes)
_HEADER = struct.Struct("<4s24x3H12x")      # central directory record: sig, (versions, flags, method, time, crc,
_HEADER_SIG = b"PK\x01\x02"                 # sizes), name, extra, comment lengths, (disk, attributes, offset): 46 bytes


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


def check_zip_directory(path: Path, max_members: int) -> None:
    """Refuse, before ``zipfile`` reads it, a zip whose central directory is too large to read.

    Reads the end of central directory record (the file's last 22 bytes, else the last record signature in its
    last 64 KiB + 22 bytes: a comment of up to 65,535 bytes may follow the record) and, when a ZIP64 locator
    precedes it, the ZIP64 record (right before the locator, where ``zipfile`` looks for it, and where the
    locator points).  Then walks the directory's 46-byte record headers from where ``zipfile`` will start,
    skipping names, extra fields and comments, counting at most ``max_members + 1`` of them (a few milliseconds
    for 20,000).

    Args:
        path: the zip file.
        max_members: the most members accepted (:data:`autograder.intake.intake.MAX_MEMBERS`); the directory may
            declare at most ``max_members * DIRECTORY_BYTES_PER_MEMBER`` bytes.

    Raises:
        UnreadableFile: no end of central directory record; a declared member count over ``max_members``; a
            declared directory size over the bound; or a directory holding more than ``max_members`` records
            (its end record lies).
    """
    max_bytes = max_members * DIRECTORY_BYTES_PER_MEMBER
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        tail_at = max(0, size - _EOCD.size - (1 << 16))
        f.seek(tail_at)
        tail = f.read()
        no_comment = tail[-_EOCD.size:-_EOCD.size + 4] == _EOCD_SIG and tail[-2:] == b"\0\0"
        at = len(tail) - _EOCD.size if no_comment else tail.rfind(_EOCD_SIG)   # as zipfile looks for it
        if at < 0 or at + _EOCD.size > len(tail):
            raise UnreadableFile("not a zip archive (no end of central directory record)")
        _, _, _, here, total, cd_size, _, _ = _EOCD.unpack_from(tail, at)
        eocd = tail_at + at
        zip64 = _zip64_records(f, eocd)
        claims = [(n, b) for n, b, _ in zip64] + [(  # the 32-bit fields hold 0xFFFF... when the ZIP64 ones count
            -1 if zip64 and 0xFFFF in (here, total) else max(here, total),
            -1 if zip64 and cd_size == 0xFFFFFFFF else cd_size)]
        for entries, directory in claims:
            if entries > max_members:
                raise UnreadableFile(f"the archive declares {entries} members, more than the limit of {max_members}")
            if directory > max_bytes:
                raise UnreadableFile(f"the archive declares a central directory of {directory} bytes, more than the "
                                     f"limit of {max_bytes} ({max_members} members)")
        # what zipfile reads: a directory that ends right before the end record, or before the ZIP64 record that
        # is right before the locator
        used = [(b, start) for _, b, start in zip64 if start + b == eocd - _LOCATOR.size - _EOCD64.size]
        directory, start = used[0] if used else (cd_size, eocd - cd_size)
        if start >= 0 and _count_records(f, start, directory, max_members) > max_members:
            raise UnreadableFile(f"the archive's central directory holds more than {max_members} members (its end "
                                 f"record declares {max(c[0] for c in claims)}): refused unread")


def _zip64_records(f: BinaryIO, eocd: int) -> list[tuple[int, int, int]]:
    """(entries, directory size, directory start) of each ZIP64 end record found for the end record at offset
    ``eocd``: right before its locator (where ``zipfile`` reads it), and where the locator points; the directory
    is taken to end right before the record."""
    if eocd < _LOCATOR.size:
        return []
    f.seek(eocd - _LOCATOR.size)
    sig, _, pointed, _ = _LOCATOR.unpack(f.read(_LOCATOR.size))
    if sig != _LOCATOR_SIG:
        return []
    out = []
    for where in dict.fromkeys((eocd - _LOCATOR.size - _EOCD64.size, pointed)):
        if 0 <= where <= eocd - _LOCATOR.size - _EOCD64.size:
            f.seek(where)
            sig, _, _, _, _, _, here, total, cd_size, _ = _EOCD64.unpack(f.read(_EOCD64.size))
            if sig == _EOCD64_SIG:
                out.append((max(here, total), cd_size, where - cd_size))
    return out


def _count_records(f: BinaryIO, start: int, size: int, most: int) -> int:
    """The central directory records in ``size`` bytes from ``start``, counted up to ``most + 1`` (the walk stops
    at a record that is not one: ``zipfile`` then refuses the archive itself)."""
    f.seek(start)
    count = 0
    while size > 0 and count <= most:
        head = f.read(_HEADER.size)
        if len(head) < _HEADER.size or head[:4] != _HEADER_SIG:
            break
        _, name, extra, comment = _HEADER.unpack(head)
        f.seek(name + extra + comment, os.SEEK_CUR)
        size -= _HEADER.size + name + extra + comment
        count += 1
    return count
