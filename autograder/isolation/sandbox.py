"""Start untrusted notebook kernels behind layered limits (the grader's and the self-check's kernels).

Grading executes code written by students.  Every kernel the grader starts goes through :func:`launch`, the
program in the kernelspec, which applies, from the outside in:

1. **A sandbox** (when :func:`autograder.isolation.isolation.probe` found one that works here): bubblewrap
   (:mod:`autograder.isolation.bwrap`; it comes with the package) with new pid, network, IPC, UTS and mount namespaces,
   plus a user namespace when the grader is not root.  The kernel sees a read-only system (``/usr``, ``/etc``,
   the Python installation, the course library), a private, size-capped ``/tmp`` and a private, size-capped
   working directory holding read-only copies of the assignment's data files -- and nothing else: no course
   directory, no gradebook, no solutions, no other submission, no home directory, no network (the grader talks
   to the kernel over Unix sockets in a directory bind-mounted into the sandbox, ZeroMQ's ``ipc`` transport).
2. **A dedicated unprivileged uid** when the grader runs as root (one per kernel): file permissions add a
   second wall, and the process limit applies (the kernel ignores ``RLIMIT_NPROC`` for root).
3. **Resource limits** (``setrlimit``): address space, size of any file written, CPU time, no core dumps, and
   the number of processes/threads -- the last only where it counts the kernel's own processes alone (a
   dedicated uid, or the sandbox's own user namespace), never where it would count every process of the
   user who runs the grader (a student's browser alone has hundreds of threads).
4. **Environment scrubbing**: the kernel gets a fixed, minimal environment (no tokens or paths from the
   instructor's shell).
5. **A supervisor** (this launcher) that kills the whole sandbox after a hard wall-clock limit, when the kernel
   fills a place it can write to (:mod:`autograder.isolation.disk_watch`: every such folder is capped, in bytes and in
   files) or when the kernel's whole process tree uses more memory than ``Limits.memory_mb``
   (:mod:`autograder.isolation.memory_watch`: children and memfd files included), or when the grading worker that
   started it is gone (its parent changed: a worker killed on its job's deadline; :data:`ORPHANED`), and keeps
   only the first few kilobytes of the kernel's own output, for the report.  ``bwrap --die-with-parent`` takes
   the sandbox down with the launcher.

Without a sandbox the kernel runs with layers 2-5 (2 only as root), in a private copy of the assignment's
files; :mod:`autograder.isolation.isolation` describes what was in place.  The cell and notebook time limits, the output
caps and the defence against monkeypatching are applied by the executing preprocessor
(:class:`autograder.execute.safe_execute.SafeExecute`), which starts kernels through
:class:`autograder.isolation.kernels.KernelSandbox`.  The limits are :class:`autograder.course.limits.Limits`.  This
module
imports only the standard library: the launcher starts once per kernel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import bwrap, disk_watch, memory_watch
from ..course.limits import Limits

__all__ = ["KernelPlan", "ORPHANED", "PYTHON", "UID_BASE", "python_roots", "kernel_env", "launch", "cleanup"]

UID_BASE = 0x6B000000
"""Dedicated uids for kernels started by root: ``UID_BASE + pid of the launcher`` (unique while it runs)."""

_STDERR_KEEP = 64 * 1024

ORPHANED = "[launcher] the grading worker that started the kernel is gone: kernel killed"
"""The launcher's log line when it stopped a kernel whose worker ended (:mod:`autograder.isolation.reaping`)."""

PYTHON = os.path.abspath(sys.executable)
"""This interpreter, as an absolute path (``sys.executable`` is relative when found through a relative PATH)."""


def python_roots() -> list[Path]:
    """Directories the kernel's Python needs: the interpreter installation, the environment, its libraries."""
    roots = {Path(sys.base_prefix), Path(sys.prefix), Path(PYTHON).resolve().parent.parent}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(Path(path))
    return sorted({p.resolve() for p in roots if p.exists()})


def kernel_env(*, home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment of a kernel: nothing from the grader's shell but these."""
    bindir = str(Path(PYTHON).parent)
    env = {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp" if home.startswith("/tmp") else home,
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{home}/.config/matplotlib",
        "IPYTHONDIR": f"{home}/.ipython",
        "JUPYTER_CONFIG_DIR": f"{home}/.jupyter",
        "JUPYTER_DATA_DIR": f"{home}/.local/share/jupyter",
        "JUPYTER_RUNTIME_DIR": f"{home}/.local/share/jupyter/runtime",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "NBGRADER_EXECUTION": "autograde",
    }
    if extra:
        env.update(extra)
    return env


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """Everything the launcher needs to start one sandboxed kernel (written as JSON next to it)."""

    mode: str                       # "bwrap" or "none"
    bwrap: str | None
    drop_uid: bool
    workdir: str
    conn_dir: str
    ro_paths: tuple[str, ...]
    limits: dict[str, Any]
    log_file: str
    mpl_cache: str | None = None
    limit_processes: bool = False   # apply RLIMIT_NPROC (only where it counts the kernel's processes alone)
    kernel_args: tuple[str, ...] = ("--HistoryManager.hist_file=:memory:",)

    def write(self, path: Path) -> Path:
        Path(path).write_text(json.dumps(dataclasses.asdict(self), indent=1))
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> KernelPlan:
        data = json.loads(Path(path).read_text())
        data["ro_paths"] = tuple(data["ro_paths"])
        data["kernel_args"] = tuple(data["kernel_args"])
        return cls(**data)


def _rlimits(limits: Limits, processes: bool) -> dict[str, Any]:
    """The kernel's rlimits; ``RLIMIT_NPROC`` only with ``processes`` (see :attr:`KernelPlan.limit_processes`)."""
    mib = 1024 * 1024
    cpu = int(limits.notebook_timeout) + 10
    out: dict[str, Any] = {"RLIMIT_AS": int(limits.memory_mb) * mib,
                           "RLIMIT_FSIZE": int(limits.max_file_mb) * mib,
                           "RLIMIT_CPU": [cpu, cpu + 5],
                           "RLIMIT_CORE": 0}
    if processes:
        out["RLIMIT_NPROC"] = int(limits.max_processes)
    return out


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    os.lchown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, gid)


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` (a dedicated kernel uid): ``kill(-1)`` from a child running as it."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(3):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _disk_watch(plan: KernelPlan, limits: Limits) -> disk_watch.DiskWatch:
    """The caps on what the kernel writes: in the sandbox, its tmpfs mounts must not fill up and its socket
    folder (a host folder) may grow by 1 MiB; without one, its working copy and home (host folders) by twice
    ``tmp_mb`` (what ``/tmp`` and the working directory hold in the sandbox) and the socket folder by 1 MiB."""
    mib = 1024 * 1024
    sockets = (Path(plan.conn_dir), mib, 256)
    if plan.mode == "bwrap":
        return disk_watch.DiskWatch([sockets], ["/tmp", "/dev/shm", plan.workdir])
    return disk_watch.DiskWatch([sockets, (Path(plan.workdir), 2 * int(limits.tmp_mb) * mib, 20_000)])


def launch(plan_path: str, connection_file: str, kernel_args: Sequence[str] = ()) -> int:
    """Supervise one kernel: start it (sandboxed as the plan says), wait, clean up; returns its exit code.

    This is the program in the kernelspec's ``argv``; it runs outside the sandbox, as the grader's user.
    """
    parent = os.getppid()
    plan = KernelPlan.read(Path(plan_path))
    limits = Limits.from_json(plan.limits)
    as_root = os.geteuid() == 0
    uid = gid = None
    if plan.drop_uid and as_root:
        uid = gid = UID_BASE + os.getpid()
        _chown_tree(Path(plan.conn_dir), uid, gid)
        Path(plan_path).with_name("kernel.uid").write_text(str(uid))
    workdir = Path(plan.workdir)
    home = "/tmp/home" if plan.mode == "bwrap" else str(workdir / ".home")
    env = kernel_env(home=home)
    extra = [a for a in kernel_args if a.startswith("--HistoryManager.") and a not in plan.kernel_args]
    argv = [PYTHON, "-m", "ipykernel_launcher", "-f", connection_file, *plan.kernel_args, *extra]
    cfg = {"rlimits": _rlimits(limits, plan.limit_processes), "env": env, "argv": argv, "cwd": str(workdir), "uid": uid,
           "gid": gid}
    extra_ro: list[tuple[Path, str]] = []
    if plan.mpl_cache:
        cfg["mpl_cache"] = "/tmp/.dpc-mpl-cache" if plan.mode == "bwrap" else plan.mpl_cache
        if plan.mode == "bwrap":
            extra_ro.append((Path(plan.mpl_cache), "/tmp/.dpc-mpl-cache"))
    inside = Path(__file__).with_name("launch_inside.py").read_text(encoding="utf-8")  # the kernel's first program
    stage2 = [PYTHON, "-I", "-S", "-c", inside, json.dumps(cfg)]
    if plan.mode == "bwrap":
        assert plan.bwrap is not None
        cmd = bwrap.command(plan.bwrap, workdir=workdir, conn_dir=Path(plan.conn_dir),
                            ro_paths=[*python_roots(), *(Path(p) for p in plan.ro_paths)], tmp_mb=limits.tmp_mb,
                            unshare_user=not as_root, extra_ro=extra_ro)
        cmd += ["--clearenv", "--", *stage2]
        popen_env = {"PATH": "/usr/bin:/bin"}
    else:
        Path(home).mkdir(parents=True, exist_ok=True)
        if uid is not None:
            _chown_tree(workdir, uid, uid)
        cmd = stage2
        popen_env = {"PATH": env["PATH"]}
    watch = _disk_watch(plan, limits)
    with open(plan.log_file, "ab") as log:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=popen_env, cwd=str(workdir))

        def drain() -> None:  # keep the first bytes of the kernel's own output, drop the rest
            kept = 0
            assert child.stdout is not None
            while True:
                chunk = child.stdout.read1(65536) if hasattr(child.stdout, "read1") else child.stdout.read(65536)
                if not chunk:
                    break
                if kept < _STDERR_KEEP:
                    log.write(chunk[: _STDERR_KEEP - kept])
                    log.flush()
                    kept += len(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()

        def memory_limit(line: str) -> None:  # from the watch's thread, after it killed the tree
            log.write(f"\n{line}\n".encode())
            log.flush()

        memory = memory_watch.TreeMemory(child.pid, int(limits.memory_mb) * 2**20, memory_limit).start()

        def stop(signum: int, frame: Any) -> None:
            with contextlib.suppress(OSError):
                child.kill()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        deadline = time.monotonic() + limits.notebook_timeout + 60
        rc = None
        locked = False
        while rc is None:
            try:
                rc = child.wait(timeout=max(0.05, min(disk_watch.POLL_SECONDS, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    log.write(b"\n[launcher] hard wall-clock limit reached: kernel killed\n")
                    child.kill()
                if os.getppid() != parent:  # the grading worker is gone (killed): nobody will ask for the kernel
                    log.write(ORPHANED.encode() + b"\n")
                    child.kill()
                locked = locked or disk_watch.lock_socket_dir(Path(plan.conn_dir))
                inner = disk_watch.sandbox_pid(child.pid) if plan.mode == "bwrap" else None
                why = watch.check(f"/proc/{inner}/root" if inner else None)
                if why:
                    log.write(f"\n{why}\n".encode())
                    log.flush()
                    child.kill()
        memory.stop()
        if uid is not None:
            _kill_uid(uid)  # anything that escaped (only possible without the pid namespace)
        reader.join(timeout=2)
    return rc


def cleanup(base: Path) -> None:
    """After a kernel: kill what is left of its dedicated uid (if any) and delete its directory ``base``.

    The launcher records the uid in ``base/kernel.uid``; the kernel manager's SIGKILL of the process group
    does not reach processes that left it, and outside a pid namespace only this catches them.
    """
    base = Path(base)
    uid_file = base / "kernel.uid"
    if uid_file.is_file() and os.geteuid() == 0:
        try:
            uid = int(uid_file.read_text())
        except ValueError:
            uid = None
        if uid is not None and uid >= UID_BASE:
            _kill_uid(uid)
    with contextlib.suppress(OSError):
        os.chmod(base / "c", 0o700)  # read-only once the kernel's sockets were bound (disk_watch.lock_socket_dir)
    shutil.rmtree(base, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m autograder.isolation.sandbox launch PLAN CONNECTION_FILE`` (the kernelspec's command)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 3 and args[0] == "launch":
        return launch(args[1], args[2], args[3:])
    print("usage: python -m autograder.isolation.sandbox launch PLAN CONNECTION_FILE (internal; the sandbox status: "
          "python -m autograder.isolation.isolation)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
