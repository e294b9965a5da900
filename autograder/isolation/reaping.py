"""No process the grader starts outlives what started it: kernels die with their worker, workers with their run.

A CI run found a trusted kernel alive more than a minute after ``dp-course grade`` had returned (issue 27).  Every
kernel is started by ``jupyter_client`` in a session of its own (``start_new_session``), so neither a signal to
the worker's process group nor the end of the worker reaches it, and ``jupyter_client``'s own shutdown is a
request that a busy or stopped kernel may not answer.  The ways a grading worker ends -- it finishes, raises, is
sent SIGTERM, or is killed (SIGKILL) by the main process after its job's deadline -- must all take its kernels
with it.  Three walls, each enough on its own in the common case:

1. **The kernel dies with the thread that started it** (Linux): :func:`dying_with_parent` wraps the trusted
   kernel's command so that its process asks for ``SIGKILL`` when its parent ends (``prctl(PR_SET_PDEATHSIG)``),
   and :func:`die_with_parent` does the same in a forked child (the worker's feedback renderer).  The kernel
   manager of the trusted kernel is started from the worker's main thread (or ``jupyter_core``'s runner
   thread, which lives as long as the process), so "the thread that started it" ends with the worker.  The
   sandbox launcher of the student's kernel watches its parent instead (:func:`autograder.isolation.sandbox.launch`:
   ``bwrap --die-with-parent`` is bound to the launcher).
2. **The main process kills the tree** of a worker it gives up on (:func:`kill_tree`): the worker and every
   process below it are stopped first (``SIGSTOP``, again until no new process appears, so nothing forks while
   the tree is listed), then killed.
3. **A sweep by tag** (:func:`sweep`): every process a worker starts inherits :data:`TOKEN_VARIABLE` with the
   worker's token (its environment, which ``jupyter_client`` and ``subprocess`` pass on).  After a worker ends,
   and at the end of a run, the main process finds the processes still carrying the token -- orphans too, which
   were adopted by ``init`` and are in no tree of the grader -- and kills them with their trees.  What it finds
   there is a grader fault, and the caller logs it (never silently).

The sandboxed kernel's own processes do not carry the token (the sandbox clears its environment), but they are
below its launcher or ``bwrap`` (with ``--die-with-parent``) in a pid namespace of their own, so killing those
takes them too.

A worker killed mid-notebook also leaves its private folders behind (``/tmp/dpc-*`` of the student's kernel,
``/tmp/dpct-*`` of the trusted kernel: disk only).  Each such folder is marked when it is made (:func:`claim`: a
file :data:`OWNER_FILE` holding the worker's token), and after the worker is gone the main process removes the
folders marked with its token (:func:`left_folders`): only direct children of ``/tmp`` with those prefixes, real
folders owned by the grader's user, with a mark that names this run's worker -- never an instructor's files,
never another run's (its token is another random one).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import psutil

__all__ = ["TOKEN_VARIABLE", "new_token", "dying_with_parent", "die_with_parent", "tagged", "kill_tree", "sweep",
           "describe", "alive", "OWNER_FILE", "FOLDER_PREFIXES", "private_folder", "claim",
           "left_folders"]

TOKEN_VARIABLE = "DPC_GRADER_TOKEN"
"""Environment variable that marks every process of a grading run: ``RUN.WORKER.GENERATION`` (dotted)."""

OWNER_FILE = ".dpc-owner"
"""The mark in a private folder of a grading worker: the worker's token (:func:`claim`)."""

FOLDER_PREFIXES = ("dpc-", "dpct-")
"""Names of the workers' private folders under ``/tmp``: the student's kernel (:class:`KernelSandbox
<autograder.isolation.kernels.KernelSandbox>`) and the trusted kernel (:class:`TrustedKernel
<autograder.trusted.runner.TrustedKernel>`)."""

PR_SET_PDEATHSIG = 1
_PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None) if sys.platform.startswith("linux") else None

_SHIM = """import ctypes, os, sys
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
    parent = os.environ.get("JPY_PARENT_PID", "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)
os.execvp(sys.argv[1], sys.argv[1:])
"""
"""The program of :func:`dying_with_parent`: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, then ``exec`` of the command
(the death signal is kept across ``exec``).  A parent already gone (``JPY_PARENT_PID``, set by ``jupyter_client``,
is not the parent any more: the signal would never come) ends it at once.  No braces: a kernel spec's ``argv``
is formatted by ``jupyter_client``."""


def new_token(parent: str | None = None) -> str:
    """A fresh token, random and unique to this run, or one below ``parent`` (``parent.RANDOM``)."""
    part = secrets.token_hex(6)
    return f"{parent}.{part}" if parent else f"{os.getpid()}-{part}"


def dying_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that it is killed (SIGKILL) when the thread that started it ends, however it ends (Linux):
    a small Python program (:data:`_SHIM`, standard library, ``-I -S``) sets the death signal, then runs
    ``argv``, so the process keeps its pid and becomes the command.  A ``preexec_fn`` would do the same between
    ``fork`` and ``exec``, which is unsafe in a process with threads (the house rule)."""
    python = os.path.abspath(sys.executable)
    names = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    first = [python] if argv and argv[0] in names else argv[:1]  # as jupyter_client runs a bare "python"
    return [python, "-I", "-S", "-c", _SHIM, *first, *argv[1:]]


def die_with_parent(parent_pid: int, signum: int = signal.SIGKILL) -> None:
    """In a forked child (no ``exec``): be sent ``signum`` when the thread that forked it ends (Linux; elsewhere
    nothing).  If the parent ``parent_pid`` is already gone (the signal would never come), exit at once."""
    if _PRCTL is None:
        return
    _PRCTL(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def _token_of(proc: psutil.Process) -> str | None:
    try:
        value = proc.environ().get(TOKEN_VARIABLE)
    except (psutil.Error, OSError):  # gone, a zombie, or another user's process
        return None
    return None if value is None else str(value)


def tagged(token: str) -> list[psutil.Process]:
    """The live processes (this one excepted) whose :data:`TOKEN_VARIABLE` is ``token`` or below it
    (``token.…``), read from ``/proc/PID/environ``."""
    out = []
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        value = _token_of(proc)
        if value is not None and _below(value, token) and alive(proc):
            out.append(proc)
    return out


def alive(proc: psutil.Process) -> bool:
    """``proc`` still runs (the same process: psutil checks its start time; a zombie counts as gone)."""
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def describe(proc: psutil.Process) -> str:
    """``PID (command line)``, the command line cut to 160 characters."""
    try:
        cmd = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        cmd = "?"
    return f"{proc.pid} ({cmd[:160]})"


def kill_tree(roots: Iterable[psutil.Process], wait: float = 5.0) -> list[str]:
    """Kill ``roots`` and every process below them; returns what was killed (:func:`describe`).

    Each process is stopped (``SIGSTOP``) before its children are listed, until a round finds no new process:
    a process that is stopped cannot fork, so none escapes the listing.  Then all are killed (``SIGKILL``) and
    waited for up to ``wait`` seconds (psutil's checks of the start time keep a reused pid from being hit)."""
    found: dict[int, psutil.Process] = {}
    names: dict[int, str] = {}
    todo = [p for p in roots if alive(p)]
    for _ in range(100):  # a bound, in case a tree keeps growing faster than it is stopped
        todo = [p for p in todo if p.pid not in found]
        if not todo:
            break
        for proc in todo:
            names[proc.pid] = describe(proc)
            with contextlib.suppress(psutil.Error):
                proc.suspend()
            found[proc.pid] = proc
        below: list[psutil.Process] = []
        for proc in todo:
            with contextlib.suppress(psutil.Error):
                below.extend(proc.children(recursive=True))
        todo = below
    killed = []
    for pid, proc in found.items():
        with contextlib.suppress(psutil.Error):
            proc.kill()
            killed.append(names[pid])
    _wait_gone(list(found.values()), wait)
    return killed


def _wait_gone(procs: list[psutil.Process], seconds: float) -> None:
    """Wait until ``procs`` are gone (reaped, or zombies of another parent), at most ``seconds``."""
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs([p for p in procs if alive(p)], timeout=seconds)


def sweep(token: str, wait: float = 5.0) -> list[str]:
    """Kill every process still tagged with ``token`` (or below it), with its tree; returns what was killed.

    Called by the main process after a worker ended and at the end of a run: anything found is a process that
    outlived what started it (the caller logs it as a grader fault)."""
    procs = tagged(token)
    return kill_tree(procs, wait) if procs else []


def _below(value: str, token: str) -> bool:
    return value == token or value.startswith(token + ".")


def private_folder(prefix: str) -> Path:
    """A fresh private folder (mode 0700) directly under ``/tmp`` (short paths: kernels' Unix sockets live in
    such folders; elsewhere the system's temporary folder), named ``prefix`` + random, marked as this grading
    worker's (:func:`claim`) so that the main process removes it if the worker is killed before it could."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if os.path.isdir("/tmp") else None))
    claim(folder)
    return folder


def claim(folder: Path) -> None:
    """Mark ``folder`` (just made, private) as made by this process's grading worker: write the worker's token
    (:data:`TOKEN_VARIABLE` of this process) to ``folder/``:data:`OWNER_FILE`.  Outside a grading run (no token,
    e.g. ``dp-course check``) nothing is written."""
    token = os.environ.get(TOKEN_VARIABLE)
    if token:
        fd = os.open(Path(folder) / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token)


def _mark(folder: Path, uid: int) -> str | None:
    """The token in ``folder``'s mark, if ``folder`` is a real folder (not a link) of ``uid`` with a regular
    mark file of ``uid``; else ``None``."""
    try:
        info = folder.lstat()
        mark = (folder / OWNER_FILE).lstat()
        if not (stat.S_ISDIR(info.st_mode) and info.st_uid == uid and stat.S_ISREG(mark.st_mode)
                and mark.st_uid == uid and mark.st_size <= 256):
            return None
        return (folder / OWNER_FILE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def left_folders(token: str, root: Path = Path("/tmp")) -> list[Path]:
    """The private folders that processes tagged with ``token`` (or below it) made and left under ``root``.

    Only direct children of ``root`` named with a :data:`FOLDER_PREFIXES` prefix that are real folders owned by
    this process's user and marked by :func:`claim` with ``token`` or a token below it.  Call it once the
    processes of ``token`` are gone (after :func:`sweep`): a live worker's folders are in use."""
    uid = os.geteuid()
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    for name in names:
        if name.startswith(FOLDER_PREFIXES):
            value = _mark(Path(root) / name, uid)
            if value is not None and _below(value, token):
                out.append(Path(root) / name)
    return out
