"""Run untrusted notebook kernels behind layered limits (the grader's and the self-check's kernels).

Grading executes code written by students.  Every kernel the grader starts goes through the launcher in
this module, which applies, from the outside in:

1. **A sandbox** (when the machine allows it): `bubblewrap <https://github.com/containers/bubblewrap>`_
   (``apt-get install bubblewrap``) with new pid, network, IPC, UTS and mount namespaces.  The kernel sees
   a read-only system (``/usr``, ``/etc``, the Python installation, the course library), a private,
   size-capped ``/tmp`` and a private, size-capped working directory holding read-only copies of the
   assignment's data files -- and nothing else: no course directory, no gradebook, no solutions, no other
   submission, no home directory, no network (the grader talks to the kernel over Unix sockets in a
   directory bind-mounted into the sandbox, ZeroMQ's ``ipc`` transport).  When the grader runs as root,
   the kernel is moved to a dedicated unprivileged uid (one per kernel), so that the process limit below
   applies (the kernel ignores ``RLIMIT_NPROC`` for root) and file permissions add a second wall.
2. **Resource limits** (``setrlimit``) on the kernel: address space, number of processes/threads, size of
   any file written, CPU time, no core dumps.
3. **Environment scrubbing**: the kernel gets a fixed, minimal environment (no tokens or paths from the
   instructor's shell).
4. **A supervisor** (the process the Jupyter kernel manager actually starts) that kills the whole sandbox
   after a hard wall-clock limit and keeps only the first few kilobytes of the kernel's own stderr.

When bubblewrap is missing or cannot create namespaces, the kernel runs with layers 2-4 only, as the
instructor's user, and :func:`probe` / the CLI say so loudly: the submission can then read every file that
user can read and open network connections.

The cell and notebook time limits, the output caps and the defence against monkeypatching are applied by
the executing preprocessor (:class:`autograder.grading.SafeExecute`), which uses this module to start
its kernels.  This module imports only the standard library: the launcher starts once per kernel.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

__all__ = ["Limits", "SandboxInfo", "SANDBOX_MODES", "probe", "KernelPlan", "kernel_env", "launch",
           "sandbox_argv", "cleanup"]

SANDBOX_MODES = ("auto", "bwrap", "none")
"""``auto``: bubblewrap when it works, else none (with a warning); ``bwrap``: require it; ``none``: off."""

_UID_BASE = 0x6B000000
"""Dedicated uids for kernels started by root: ``_UID_BASE + pid of the launcher`` (unique while it runs)."""

_STDERR_KEEP = 64 * 1024

PYTHON = os.path.abspath(sys.executable)
"""This interpreter, as an absolute path (``sys.executable`` is relative when found through a relative PATH)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Limits applied to every kernel that runs a submission.

    Args:
        cell_timeout: seconds one cell may run before it is interrupted (and scored as an error).
        notebook_timeout: seconds the whole notebook may run; then the kernel is stopped and the cells not
            yet run score zero.
        memory_mb: address-space limit of the kernel (``RLIMIT_AS``), MiB.
        max_processes: processes and threads the kernel may have (``RLIMIT_NPROC``; effective in the
            sandbox or under a dedicated uid).
        max_file_mb: largest file the kernel may write (``RLIMIT_FSIZE``), MiB.
        tmp_mb: size of the sandbox's private ``/tmp`` and of its working directory (tmpfs), MiB each.
        max_output_kb: output kept per cell (stream text and rich outputs), KiB; the rest is dropped with a
            note, and the submission is flagged.
        max_notebook_mb: notebooks larger than this are refused before they are parsed, MiB.

    Raises:
        ValueError: a limit is not a positive number (the message names it).
    """

    cell_timeout: float = 60.0
    notebook_timeout: float = 600.0
    memory_mb: int = 3072
    max_processes: int = 64
    max_file_mb: int = 64
    tmp_mb: int = 256
    max_output_kb: int = 256
    max_notebook_mb: float = 20.0

    def __post_init__(self) -> None:
        lower = {"cell_timeout": 0.5, "notebook_timeout": 1.0, "memory_mb": 256, "max_processes": 16,
                 "max_file_mb": 1, "tmp_mb": 8, "max_output_kb": 1, "max_notebook_mb": 0.01}
        for name, lo in lower.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value == value \
                    or value < lo or value == float("inf"):
                raise ValueError(f"{name} must be a finite number >= {lo:g}, got {value!r}")
        if self.cell_timeout > self.notebook_timeout:
            raise ValueError(f"cell_timeout must be <= notebook_timeout ({self.notebook_timeout:g}), "
                             f"got {self.cell_timeout!r}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SandboxInfo:
    """What isolation the machine gives the kernels (result of :func:`probe`)."""

    mode: str                      # "bwrap" or "none"
    bwrap: str | None              # path of the bwrap binary used
    as_root: bool                  # the grader runs as root
    drops_uid: bool                # kernels run under a dedicated unprivileged uid
    isolates_network: bool
    isolates_filesystem: bool
    pid_namespace: bool
    problems: tuple[str, ...] = ()  # why a stronger layer is missing

    @property
    def isolated(self) -> bool:
        return self.isolates_network and self.isolates_filesystem and self.pid_namespace

    def describe(self) -> str:
        """One line per layer, for logs and the report."""
        yes = {True: "yes", False: "NO"}
        lines = [f"sandbox: {'bubblewrap (' + self.bwrap + ')' if self.mode == 'bwrap' else 'none'}",
                 f"  no network: {yes[self.isolates_network]}; no view of the course or home "
                 f"directories: {yes[self.isolates_filesystem]}; own pid namespace: "
                 f"{yes[self.pid_namespace]}; dedicated unprivileged uid: "
                 f"{yes[self.drops_uid] if self.as_root else 'n/a (not root)'}",
                 "  rlimits: address space, processes, file size, CPU time; scrubbed environment; "
                 "per-cell and per-notebook time limits; output caps"]
        lines += [f"  note: {p}" for p in self.problems]
        return "\n".join(lines)

    def warning(self) -> str | None:
        """A loud banner when submissions are not isolated from the machine, else ``None``."""
        if self.isolated:
            return None
        bar = "!" * 78
        return "\n".join([
            bar,
            "!! WARNING: student code is NOT sandboxed on this machine.",
            "!! It runs with resource and time limits only, and can read every file your user can read",
            "!! (including the solutions and the gradebook) and open network connections.",
            "!! Install bubblewrap to isolate it (Debian/Ubuntu: sudo apt-get install bubblewrap) and make",
            "!! sure unprivileged user namespaces are enabled, or grade inside a disposable VM/container.",
            *[f"!! reason: {p}" for p in self.problems],
            bar])


# ----------------------------------------------------------------------------------------------------
# What the sandbox sees


def _python_roots() -> list[Path]:
    """Directories the kernel's Python needs: the interpreter installation and the environment."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(PYTHON).resolve().parent.parent}
    return sorted(roots)


def _dedupe_nested(paths: Sequence[Path]) -> list[Path]:
    """Drop paths that lie inside another path of the list (one bind mount covers them)."""
    out: list[Path] = []
    for p in sorted({Path(x).resolve() for x in paths}, key=lambda q: len(q.parts)):
        if not any(p == q or q in p.parents for q in out):
            out.append(p)
    return out


def sandbox_argv(bwrap: str, *, workdir: Path, conn_dir: Path, ro_paths: Sequence[Path], limits: Limits,
                 as_root: bool, extra_ro: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """The bubblewrap command line (without the command) for one kernel.

    The working directory is a fresh tmpfs at the same path as the host's ``workdir``, into which every
    entry of ``workdir`` is bind-mounted read-only; ``conn_dir`` (the kernel's sockets) is the only host
    directory the kernel can write to.
    """
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--hostname", "sandbox"]
    if not as_root:
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
    tmp_bytes = str(int(limits.tmp_mb) * 1024 * 1024)
    argv += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/tmp"]
    made: set[Path] = {Path("/"), Path("/usr"), Path("/etc"), Path("/tmp"), Path("/proc"), Path("/dev")}

    def parents(target: Path) -> list[str]:
        # bwrap creates missing parent directories with mode 0700, which an unprivileged kernel cannot
        # traverse: create them first, world-readable.
        out: list[str] = []
        for d in reversed(Path(target).parents):
            if d not in made:
                made.add(d)
                out += ["--perms", "0755", "--dir", str(d)]
        return out

    for p in _dedupe_nested([*_python_roots(), *ro_paths]):
        if str(p).startswith("/usr/") or str(p) == "/usr":
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
    argv += parents(Path(conn_dir)) + ["--bind", str(conn_dir), str(conn_dir), "--chdir", str(workdir)]
    return argv


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


# ----------------------------------------------------------------------------------------------------
# Stage 2: runs inside the sandbox (or directly, without one) as the first program; trusted code.

_STAGE2 = r"""
import ctypes, json, os, resource, shutil, sys
cfg = json.loads(sys.argv[1])
for name, value in cfg["rlimits"].items():
    res = getattr(resource, name)
    soft, hard = (value, value) if isinstance(value, int) else value
    resource.setrlimit(res, (soft, hard))
home = cfg["env"]["HOME"]
os.makedirs(home, exist_ok=True)
if cfg.get("mpl_cache") and os.path.isdir(cfg["mpl_cache"]):
    shutil.copytree(cfg["mpl_cache"], cfg["env"]["MPLCONFIGDIR"], dirs_exist_ok=True)
if cfg.get("uid") is not None:
    for root, dirs, files in os.walk(home):
        for n in [root] + [os.path.join(root, f) for f in dirs + files]:
            os.lchown(n, cfg["uid"], cfg["gid"])
if cfg.get("uid") is not None:
    os.setgroups([])
    os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
    os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    if os.getuid() == 0 or os.geteuid() == 0:
        sys.exit("could not drop root")
prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # Linux only
if prctl is not None:
    prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: setuid binaries cannot raise privileges
os.chdir(cfg["cwd"])
os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
"""


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
    kernel_args: tuple[str, ...] = ("--HistoryManager.hist_file=:memory:",)

    def write(self, path: Path) -> Path:
        Path(path).write_text(json.dumps(dataclasses.asdict(self), indent=1))
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> "KernelPlan":
        data = json.loads(Path(path).read_text())
        data["ro_paths"] = tuple(data["ro_paths"])
        data["kernel_args"] = tuple(data["kernel_args"])
        return cls(**data)


def _rlimits(limits: Limits) -> dict[str, Any]:
    mib = 1024 * 1024
    cpu = int(limits.notebook_timeout) + 10
    return {"RLIMIT_AS": int(limits.memory_mb) * mib,
            "RLIMIT_NPROC": int(limits.max_processes),
            "RLIMIT_FSIZE": int(limits.max_file_mb) * mib,
            "RLIMIT_CPU": [cpu, cpu + 5],
            "RLIMIT_CORE": 0}


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


def launch(plan_path: str, connection_file: str, kernel_args: Sequence[str] = ()) -> int:
    """Supervise one kernel: start it (sandboxed as the plan says), wait, clean up; returns its exit code.

    This is the program in the kernelspec's ``argv``; it runs outside the sandbox, as the grader's user.
    """
    plan = KernelPlan.read(Path(plan_path))
    limits = Limits(**plan.limits)
    as_root = os.geteuid() == 0
    uid = gid = None
    if plan.drop_uid and as_root:
        uid = gid = _UID_BASE + os.getpid()
        _chown_tree(Path(plan.conn_dir), uid, gid)
        Path(plan_path).with_name("kernel.uid").write_text(str(uid))
    workdir = Path(plan.workdir)
    home = "/tmp/home" if plan.mode == "bwrap" else str(workdir / ".home")
    env = kernel_env(home=home)
    extra = [a for a in kernel_args if a.startswith("--HistoryManager.") and a not in plan.kernel_args]
    argv = [PYTHON, "-m", "ipykernel_launcher", "-f", connection_file, *plan.kernel_args, *extra]
    cfg = {"rlimits": _rlimits(limits), "env": env, "argv": argv, "cwd": str(workdir), "uid": uid,
           "gid": gid}
    extra_ro: list[tuple[Path, str]] = []
    if plan.mpl_cache:
        cfg["mpl_cache"] = "/tmp/.dpc-mpl-cache" if plan.mode == "bwrap" else plan.mpl_cache
        if plan.mode == "bwrap":
            extra_ro.append((Path(plan.mpl_cache), "/tmp/.dpc-mpl-cache"))
    stage2 = [PYTHON, "-I", "-S", "-c", _STAGE2, json.dumps(cfg)]
    if plan.mode == "bwrap":
        assert plan.bwrap is not None
        cmd = sandbox_argv(plan.bwrap, workdir=workdir, conn_dir=Path(plan.conn_dir),
                           ro_paths=[Path(p) for p in plan.ro_paths], limits=limits, as_root=as_root,
                           extra_ro=extra_ro)
        cmd += ["--clearenv", "--", *stage2]
        popen_env = {"PATH": "/usr/bin:/bin"}
    else:
        Path(home).mkdir(parents=True, exist_ok=True)
        if uid is not None:
            _chown_tree(workdir, uid, gid)
        cmd = stage2
        popen_env = {"PATH": env["PATH"]}
    log = open(plan.log_file, "ab")
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

    def stop(signum: int, frame: Any) -> None:
        try:
            child.kill()
        except OSError:
            pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    deadline = time.monotonic() + limits.notebook_timeout + 60
    rc = None
    while rc is None:
        try:
            rc = child.wait(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                log.write(b"\n[launcher] hard wall-clock limit reached: kernel killed\n")
                child.kill()
    if uid is not None:
        _kill_uid(uid)  # anything that escaped (only possible without the pid namespace)
    reader.join(timeout=2)
    log.close()
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
        if uid is not None and uid >= _UID_BASE:
            _kill_uid(uid)
    shutil.rmtree(base, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------
# Probing the machine

_PROBE_CODE = r"""
import json, os, socket, sys
out = {"uid": os.getuid(), "pid": os.getpid()}
try:  # a listener on the host's loopback: reachable only from the host's network namespace
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=2); s.close(); out["net"] = True
except OSError:
    out["net"] = False
out["sees_secret"] = os.path.exists(sys.argv[1])
print(json.dumps(out))
"""


def _run_probe(mode: str, bwrap: str | None, as_root: bool) -> tuple[dict | None, str]:
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
        cmd = [PYTHON, "-I", "-S", "-c", _PROBE_CODE, str(secret), str(listener.getsockname()[1])]
        if mode == "bwrap":
            assert bwrap is not None
            cmd = sandbox_argv(bwrap, workdir=workdir, conn_dir=conn, ro_paths=[], limits=Limits(),
                               as_root=as_root) + ["--", *cmd]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{type(exc).__name__}: {exc}"
        finally:
            listener.close()
        if proc.returncode != 0:
            return None, (proc.stderr or proc.stdout).strip()[-300:]
        try:
            return json.loads(proc.stdout.strip().splitlines()[-1]), ""
        except (ValueError, IndexError):
            return None, f"unexpected probe output: {proc.stdout[-200:]!r}"


@functools.lru_cache(maxsize=None)
def probe(mode: str = "auto") -> SandboxInfo:
    """Find out which isolation this machine supports, by starting a test sandbox (cached per process).

    Args:
        mode: ``"auto"`` (bubblewrap if it works, else none), ``"bwrap"`` (require bubblewrap) or
            ``"none"`` (no sandbox; limits only).

    Raises:
        ValueError: unknown ``mode``.
        RuntimeError: ``mode="bwrap"`` but bubblewrap is missing or does not work here.
    """
    if mode not in SANDBOX_MODES:
        raise ValueError(f"sandbox mode must be one of {SANDBOX_MODES}, got {mode!r}")
    if sys.platform != "linux":
        if mode == "bwrap":
            raise RuntimeError("the bubblewrap sandbox needs Linux")
        return SandboxInfo("none", None, False, False, False, False, False,
                           (f"sandboxing is implemented for Linux only (this is {sys.platform})",))
    as_root = os.geteuid() == 0
    problems: list[str] = []
    if mode != "none":
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            problems.append("bubblewrap (bwrap) is not installed")
        else:
            result, err = _run_probe("bwrap", bwrap, as_root)
            if result is None:
                problems.append(f"bubblewrap cannot create a sandbox here: {err}")
            elif result["net"] or result["sees_secret"]:
                problems.append("bubblewrap ran but did not isolate the network/filesystem")
            else:
                return SandboxInfo("bwrap", bwrap, as_root, as_root, True, True, True, ())
        if mode == "bwrap":
            raise RuntimeError("sandbox mode 'bwrap' requested but " + "; ".join(problems))
    else:
        problems.append("sandbox disabled (--sandbox none)")
    drops = False
    if as_root:
        # A dedicated uid makes RLIMIT_NPROC effective, but only if that uid can run the interpreter.
        probe_uid = _UID_BASE + 1
        proc = subprocess.run([PYTHON, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
                              capture_output=True, text=True, preexec_fn=_demote(probe_uid), cwd="/")
        ok = proc.returncode == 0 and proc.stdout.strip() == sys.base_prefix
        if ok:
            drops = True
        else:
            problems.append(f"the Python interpreter ({PYTHON}) is not readable by an "
                            "unprivileged uid, so kernels run as root: the process limit does not apply "
                            "(fork bombs are stopped only by the time limits)")
    return SandboxInfo("none", None, as_root, drops, False, False, False, tuple(problems))


def _demote(uid: int):
    def fn() -> None:  # pragma: no cover - runs in the child
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return fn


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m autograder.sandbox launch PLAN CONNECTION_FILE`` (the kernelspec) or ``probe``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 3 and args[0] == "launch":
        return launch(args[1], args[2], args[3:])
    if args and args[0] == "probe":
        info = probe(args[1] if len(args) > 1 else "auto")
        print(info.describe())
        if info.warning():
            print(info.warning())
        return 0
    print("usage: python -m autograder.sandbox launch PLAN CONNECTION_FILE | probe [auto|bwrap|none]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
