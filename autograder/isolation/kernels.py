"""Start a kernel for untrusted code, on the grader's side: its private folder, its plan, its kernel manager.

Every kernel that runs a submission is started the same way, whatever executes the notebook (today
:class:`autograder.execute.safe_execute.SafeExecute`; an executor that runs the tests in a second,
trusted kernel uses this module for the student's kernel too):

1. :meth:`KernelSandbox.new` makes a short private folder under ``/tmp`` (Unix socket paths are limited to
   107 bytes): ``w/`` the kernel's working copy of the assignment's files (:func:`copy_workdir`: no notebooks,
   no symbolic links), ``c/`` its connection file and ZeroMQ ``ipc`` sockets;
2. :meth:`KernelSandbox.prepare` writes the launcher's plan (:class:`autograder.isolation.sandbox.KernelPlan`: the
   sandbox found by :func:`autograder.isolation.isolation.probe`, the limits, the read-only paths);
3. :meth:`KernelSandbox.kernel_manager` gives jupyter_client's kernel manager whose kernelspec runs the launcher
   (``python -m autograder.isolation.sandbox launch PLAN CONNECTION_FILE``), which applies the sandbox and the limits;
4. :meth:`KernelSandbox.cleanup` kills what is left of the kernel and deletes the folder.

:func:`prepare_mpl_cache` builds matplotlib's font cache once per grading run, copied into each kernel.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager

from . import reaping, sandbox
from ..course.course import subprocess_env
from .isolation import SandboxInfo
from ..course.limits import RECEIVE_HWM, Limits

__all__ = ["KernelSandbox", "copy_workdir", "library_paths", "prepare_mpl_cache"]


def copy_workdir(src: Path, dest: Path) -> None:
    """The kernel's working copy: the assignment's files (not the notebooks), no symbolic links."""
    dest.mkdir(parents=True)
    if not src.is_dir():
        return
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink() and d not in (".ipynb_checkpoints",)]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            p = Path(root) / f
            if p.is_symlink() or not p.is_file() or f.endswith(".ipynb"):
                continue
            shutil.copyfile(p, dest / rel / f)
    os.chmod(dest, 0o755)


def library_paths() -> list[str]:
    """Host paths of the course library (``dp_course``) that a kernel must be able to read."""
    spec = importlib.util.find_spec("dp_course")
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)
    return []


def prepare_mpl_cache(dest: Path) -> Path | None:
    """Build matplotlib's font cache once, to be copied into every kernel (saves seconds per notebook)."""
    dest = Path(dest)
    if any(dest.glob("fontlist-*.json")):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([sandbox.PYTHON, "-c", "import matplotlib.font_manager"],
                              env=subprocess_env({"MPLCONFIGDIR": str(dest)}), capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):  # no cache then: each kernel builds its own
        return None
    return dest if proc.returncode == 0 and any(dest.glob("fontlist-*.json")) else None


class KernelSandbox:
    """The private folder of one kernel, and how to start the kernel in it through the sandbox launcher."""

    def __init__(self, base: Path) -> None:
        self.base = base

    @classmethod
    def new(cls) -> KernelSandbox:
        """A fresh folder directly under ``/tmp`` (short paths: the kernel's Unix sockets live in it), marked as
        the grading worker's (:func:`autograder.isolation.reaping.claim`: removed by the main process if the worker
        is killed before it could)."""
        return cls(reaping.private_folder("dpc-"))

    @property
    def workdir(self) -> Path:
        return self.base / "w"

    @property
    def conn_dir(self) -> Path:
        return self.base / "c"

    @property
    def plan_path(self) -> Path:
        return self.base / "plan.json"

    @property
    def log_file(self) -> Path:
        return self.base / "kernel.log"

    def prepare(self, src: Path, info: SandboxInfo, limits: Limits, *, ro_paths: tuple[str, ...] = (),
                mpl_cache: str | None = None) -> sandbox.KernelPlan:
        """Copy the assignment's files from ``src`` and write the launcher's plan for a kernel with ``limits``."""
        os.chmod(self.base, 0o711)
        self.conn_dir.mkdir(mode=0o700)
        copy_workdir(src, self.workdir)
        plan = sandbox.KernelPlan(
            mode=info.mode, bwrap=info.bwrap, drop_uid=info.drops_uid, limit_processes=info.limits_processes,
            workdir=str(self.workdir), conn_dir=str(self.conn_dir), ro_paths=(*ro_paths, *library_paths()),
            limits=limits.to_json(), log_file=str(self.log_file),
            mpl_cache=mpl_cache if mpl_cache and Path(mpl_cache).is_dir() else None)
        plan.write(self.plan_path)
        return plan

    def kernel_manager(self, config: Any, max_message_mb: int) -> AsyncKernelManager:
        """A kernel manager whose kernel is started by the launcher, talking over ``ipc`` sockets in ``c/``.

        Messages larger than ``max_message_mb`` MiB are refused by ZeroMQ and each socket of the client queues at
        most :data:`autograder.course.limits.RECEIVE_HWM` messages (a kernel cannot flood the grader's memory).
        """
        km = AsyncKernelManager(config=config, transport="ipc", connection_file=str(self.conn_dir / "k.json"))
        km._kernel_spec = KernelSpec(
            argv=[sandbox.PYTHON, "-m", "autograder.isolation.sandbox", "launch", str(self.plan_path),
                "{connection_file}"],
            display_name="Python 3 (sandboxed grader)", language="python", interrupt_mode="message",
            env={}, metadata={})
        with contextlib.suppress(Exception):  # an older pyzmq without the option
            km.context.setsockopt(zmq.MAXMSGSIZE, int(max_message_mb) * 1024 * 1024)
        km.context.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        return km

    def kernel_log(self) -> str:
        """What the kernel printed itself (its first kilobytes, kept by the launcher), or ``""``."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def kernel_uid(self) -> int | None:
        """The dedicated uid the kernel ran under (a root grader), recorded so that audits can look for survivors."""
        try:
            return int((self.base / "kernel.uid").read_text())
        except (OSError, ValueError):
            return None

    def cleanup(self) -> None:
        """Kill what is left of the kernel's dedicated uid, delete the folder
        (:func:`autograder.isolation.sandbox.cleanup`)."""
        sandbox.cleanup(self.base)
