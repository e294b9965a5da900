"""The kernel's disk use, watched by its launcher: every folder a kernel can write to has a cap.

What a sandboxed kernel can write to (:func:`autograder.isolation.bwrap.command`): its ``/tmp``, its working directory
and ``/dev/shm`` -- tmpfs mounts of ``Limits.tmp_mb`` MiB each, which the kernel cannot grow (it gets "no space
left on device") -- and one host folder, its ZeroMQ socket directory, which cannot be a tmpfs (the grader must
reach the same sockets).  Without a sandbox it writes to its working copy and home (host folders).  ``RLIMIT_FSIZE``
caps each file; :func:`lock_socket_dir` takes the socket folder from the kernel once its sockets exist (before
any student code runs); :class:`DiskWatch` caps the rest: polled by the launcher every :data:`POLL_SECONDS`, it reports
when a host folder has grown past its allowance (bytes or number of entries) or a tmpfs is full, and the
launcher then stops the kernel with that reason in its log (:data:`MARKER`), which the grader reports as
:attr:`autograder.intake.events.EventKind.DISK_LIMIT`.  Between two polls a kernel can overshoot a host folder's cap
by what it writes in :data:`POLL_SECONDS` (each file at most ``RLIMIT_FSIZE``).  Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
import stat
from pathlib import Path

__all__ = ["MARKER", "POLL_SECONDS", "MAX_FILES", "DiskWatch", "usage", "tmpfs_full", "tmpfs_files", "sandbox_pid",
           "lock_socket_dir"]

MARKER = "[launcher] disk limit reached"
"""How the launcher's log line starts when it stopped a kernel for its disk use."""

POLL_SECONDS = 0.2
_FULL_BYTES = 1 << 20  # a tmpfs with less than this left is full
MAX_FILES = 20_000
"""Files (inodes: files, folders, links) each of the sandbox's tmpfs mounts may hold.  Each costs the host about
1 KiB of kernel slab (inode and dentry), outside every byte cap: 400,000 empty files made 368 MB of slab (issue
27).  bwrap passes no ``nr_inodes`` to its tmpfs mounts, so the watch counts them (``statvfs``)."""


def usage(path: Path, max_entries: int) -> tuple[int, int]:
    """(bytes allocated, entries) below ``path``, links not followed; stops counting past ``max_entries``."""
    total = entries = 0
    stack = [str(path)]
    while stack and entries <= max_entries:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as it:
            for e in it:
                entries += 1
                with contextlib.suppress(OSError):
                    st = e.stat(follow_symlinks=False)
                    total += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
    return total, entries


def tmpfs_full(path: str) -> bool:
    """Whether the file system at ``path`` has (almost) no free space or no free inodes left."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_blocks > 0 and (st.f_bavail * st.f_frsize < _FULL_BYTES or (st.f_files > 0 and st.f_favail == 0))


def tmpfs_files(path: str) -> int:
    """The inodes in use on the file system at ``path`` (0 when it cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return max(0, st.f_files - st.f_ffree)


def sandbox_pid(bwrap_pid: int) -> int | None:
    """A process inside the sandbox that ``bwrap_pid`` started (its child), whose ``/proc/PID/root`` is the
    sandbox's root; ``None`` while there is none."""
    with contextlib.suppress(OSError):
        kids = Path(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children").read_text().split()
        if kids:
            return int(kids[0])
    return None


def lock_socket_dir(conn_dir: Path, sockets: int = 5) -> bool:
    """Once the kernel has bound its ``sockets`` ZeroMQ sockets in ``conn_dir``, take the folder from it: owned
    by the grader again (a kernel under a dedicated uid can then create nothing there), else read-only (a
    kernel running as the grader's own user could make it writable again: the watch still caps it).  Whether
    the folder is locked now (``False``: the sockets are not all there yet)."""
    try:
        entries = list(os.scandir(conn_dir))
        if sum(stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode) for e in entries) < sockets:
            return False
        uid, gid = os.getuid(), os.getgid()
        if os.geteuid() == 0:
            for e in entries:
                if e.is_file(follow_symlinks=False):  # the connection file: the kernel has read it
                    os.lchown(e.path, uid, gid)
                    os.chmod(e.path, 0o644)
            os.chown(conn_dir, uid, gid)
        os.chmod(conn_dir, 0o755 if os.geteuid() == 0 else 0o555)
    except OSError:
        return False
    return True


class DiskWatch:
    """The caps of one kernel's writable places.

    Args:
        host_dirs: ``(folder, bytes, entries)``: a host folder the kernel can write to, and by how many bytes and
            entries it may grow beyond what it held when the watch started.
        tmpfs: mount points inside the sandbox (``/tmp``, the working directory, ``/dev/shm``) that must not
            fill up nor hold more than ``max_files`` inodes, looked at through ``/proc/PID/root`` of a sandboxed
            process.
        max_files: the inode cap of each ``tmpfs`` mount (:data:`MAX_FILES`).
    """

    def __init__(self, host_dirs: Sequence[tuple[Path, int, int]], tmpfs: Sequence[str] = (),
                 max_files: int = MAX_FILES) -> None:
        if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 100:
            raise ValueError(f"max_files must be an integer >= 100, got {max_files!r}")
        self.tmpfs = list(tmpfs)
        self.max_files = max_files
        self.caps = {Path(d): (nbytes, entries) for d, nbytes, entries in host_dirs}
        self.base = {d: usage(d, 10**9) for d in self.caps}

    def check(self, sandbox_root: str | None = None) -> str | None:
        """The reason a cap is reached (a line for the log, starting with :data:`MARKER`), else ``None``."""
        for d, (b0, n0) in self.base.items():
            cap_bytes, cap_entries = self.caps[d]
            size, n = usage(d, n0 + cap_entries)
            if size > b0 + cap_bytes or n > n0 + cap_entries:
                return (f"{MARKER}: the kernel wrote {max(0, size - b0) / 2**20:.1f} MiB in {max(0, n - n0)} "
                        f"files to {d} (allowed: {cap_bytes / 2**20:g} MiB, {cap_entries} files); kernel stopped")
        if sandbox_root is not None:
            for mount in self.tmpfs:
                if tmpfs_full(sandbox_root + mount):
                    return f"{MARKER}: {mount} is full (its size is capped); kernel stopped"
                files = tmpfs_files(sandbox_root + mount)
                if files > self.max_files:
                    return (f"{MARKER}: {files} files in {mount} (allowed: {self.max_files} files per folder); "
                            "kernel stopped")
        return None
