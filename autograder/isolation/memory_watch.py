"""The memory of a kernel's whole process tree, watched by its launcher: one cap for the kernel and its children.

``RLIMIT_AS`` (:mod:`autograder.isolation.launch_inside`) caps each process alone: a kernel that forks children, each
under
the limit, used 4.3 GB against a 3 GB limit (issue 27), and memory a process holds outside its address space --
a ``memfd_create`` file written with ``write()`` and never mapped -- is not counted by it at all.  A cgroup v2
with a ``memory.max`` would be the kernel's own answer, but a grader rarely has a delegated, writable one (not
here: cgroup v1 under a container's manager), so the launcher watches instead (:class:`TreeMemory`): a thread
polls every :data:`POLL_SECONDS` and sums, over every process below the launcher (inside the sandbox's pid
namespace, orphans are adopted by the sandbox's own init, so the tree holds them too),

* ``Pss_Anon + Pss_Shmem + SwapPss`` from ``/proc/PID/smaps_rollup``: the process's share of anonymous and
  shared memory (a page shared by forked children is counted once over the tree; file-backed clean pages --
  the Python installation, NumPy -- are cache the host can reclaim and are left out), and
* the blocks of every ``memfd`` file a process of the tree holds open (``/proc/PID/fd`` links to ``/memfd:``),
  each file once.  A memfd both mapped and held open is counted twice (the cap errs on the safe side; honest
  notebooks do not use memfd).

Over the cap, the launcher kills the whole tree and writes a
line starting with :data:`MARKER` to its log, which the grader reports as
:attr:`autograder.intake.events.EventKind.MEMORY_LIMIT` ("memory limit: the kernel and its child processes used X MB,
the limit is Y MB").  Between two polls the tree can overshoot by what it allocates in a poll's time, which a
loaded machine stretches (measured on 2 busy cores: 1.36 GB seen against a 1 GB cap, children of 150 MB each
appearing every 0.3 s; each process stays under ``RLIMIT_AS``).  Standard library only: the launcher imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable

__all__ = ["MARKER", "POLL_SECONDS", "TreeMemory", "descendants", "process_bytes", "memfd_files", "tree_bytes",
           "cgroup_v2_writable"]

MARKER = "[launcher] memory limit reached"
"""How the launcher's log line starts when it stopped a kernel for the memory of its process tree."""

POLL_SECONDS = 0.05
_ROLLUP_KEYS = (b"Pss_Anon:", b"Pss_Shmem:", b"SwapPss:")


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children, ...), from ``/proc/*/task/*/children``."""
    out: list[int] = []
    stack = [pid]
    seen = {pid}
    while stack:
        parent = stack.pop()
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{parent}/task"):
                with contextlib.suppress(OSError, ValueError), \
                        open(f"/proc/{parent}/task/{tid}/children", "rb") as f:
                    for kid in map(int, f.read().split()):
                        if kid not in seen:
                            seen.add(kid)
                            out.append(kid)
                            stack.append(kid)
    return out


def process_bytes(pid: int) -> int:
    """``Pss_Anon + Pss_Shmem + SwapPss`` of ``pid`` in bytes (0 for a process that is gone)."""
    total = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup", "rb") as f:
        for line in f:
            if line.startswith(_ROLLUP_KEYS):
                with contextlib.suppress(ValueError, IndexError):
                    total += int(line.split()[1]) * 1024
    return total


def memfd_files(pid: int) -> dict[tuple[int, int], int]:
    """``{(device, inode): bytes allocated}`` of the ``memfd`` files ``pid`` holds open."""
    out: dict[tuple[int, int], int] = {}
    fd_dir = f"/proc/{pid}/fd"
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                if os.readlink(f"{fd_dir}/{fd}").startswith("/memfd:"):
                    st = os.stat(f"{fd_dir}/{fd}")
                    out[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return out


def tree_bytes(pids: list[int]) -> int:
    """The memory of the processes ``pids`` together: their anonymous and shared memory, plus each memfd once."""
    memfds: dict[tuple[int, int], int] = {}
    total = 0
    for pid in pids:
        total += process_bytes(pid)
        memfds.update(memfd_files(pid))
    return total + sum(memfds.values())


def cgroup_v2_writable() -> str | None:
    """The grader's own cgroup v2 directory when it is delegated to this user (writable, with the memory
    controller available to children), else ``None``.  Reported by the sandbox probe; the watch above is used
    in every case (a cgroup would only add a second wall)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    path = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    if path is None:
        return None
    folder = "/sys/fs/cgroup" + path
    try:
        with open(folder + "/cgroup.controllers") as f:
            controllers = f.read().split()
    except OSError:
        return None
    return folder if "memory" in controllers and os.access(folder, os.W_OK) else None


class TreeMemory:
    """A thread that caps the memory of the process tree below ``root`` (the launcher's child).

    Args:
        root: the pid whose descendants (and itself) form the kernel's tree.
        limit_bytes: the cap.
        on_limit: called once, from the thread, with the log line (starting with :data:`MARKER`) after the
            tree was killed.
    """

    def __init__(self, root: int, limit_bytes: int, on_limit: Callable[[str], None]) -> None:
        self.root = root
        self.limit = int(limit_bytes)
        self.peak = 0
        self.on_limit = on_limit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-memory", daemon=True)

    def start(self) -> TreeMemory:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def sample(self) -> tuple[list[int], int]:
        """(the tree's pids, its memory in bytes) now."""
        pids = [self.root, *descendants(self.root)]
        used = tree_bytes(pids)
        self.peak = max(self.peak, used)
        return pids, used

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            pids, used = self.sample()
            if used > self.limit:
                for pid in reversed(pids):  # the deepest first: the root (bwrap) takes its namespace down last
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                self.on_limit(f"{MARKER}: memory limit: the kernel and its child processes used "
                              f"{used / 2**20:.0f} MB, the limit is {self.limit / 2**20:.0f} MB; kernel stopped")
                return
