"""A thread that watches the processes a grading run starts below the test process (shared by the adversarial
tests of memory and of reaping; tests import this module, never each other).

:class:`ProcessSampler` lists, every ``interval`` seconds, the processes below this one
(:func:`autograder.isolation.memory_watch.descendants`), remembers every kernel process and sandbox launcher it
sees (``kernels``, with the command line it had then in ``commands``), and passes the list to :meth:`observe
<ProcessSampler.observe>`, which a test overrides to sample memory or to do something bad to the run.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import psutil

from autograder.isolation import memory_watch

__all__ = ["KERNEL_MARKS", "cmdline", "parent", "ProcessSampler"]

KERNEL_MARKS = ("ipykernel", "autograder.isolation.sandbox")
"""What a kernel's (or the sandbox launcher's) command line contains."""


def cmdline(pid: int) -> str:
    """The command line of ``pid``, its arguments joined by spaces; ``""`` when it is gone or unreadable."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def parent(pid: int) -> int:
    """The parent pid of ``pid`` (``/proc/PID/stat``); 0 when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class ProcessSampler:
    """A daemon thread, run as a context manager (started on entry, stopped and joined on exit), that lists the
    processes below this one every ``interval`` seconds and records every kernel process it sees."""

    def __init__(self, interval: float = 0.05) -> None:
        self.root = os.getpid()
        self.interval = interval
        self.kernels: dict[int, psutil.Process] = {}  # every kernel process (and sandbox launcher) seen
        self.commands: dict[int, str] = {}  # their command lines when first seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            pids = memory_watch.descendants(self.root)
            for pid in pids:
                if pid in self.kernels:
                    continue
                cmd = cmdline(pid)
                if any(mark in cmd for mark in KERNEL_MARKS):
                    try:
                        self.kernels[pid] = psutil.Process(pid)
                    except psutil.Error:
                        continue
                    self.commands[pid] = cmd
            self.observe(pids)

    def observe(self, pids: list[int]) -> None:
        """Called from the thread with the processes below this one, after ``kernels`` is updated (override)."""
