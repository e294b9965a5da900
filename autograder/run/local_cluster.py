"""A Dask cluster on this machine's loopback: a scheduler and one-thread workers, all bound to 127.0.0.1.

For trying ``dp-course grade --scheduler`` on one machine before a real cluster (``docs/cluster.md``), and for
the tests and the grading benchmark, which grade the same class with local workers and with Dask and compare::

    python -m autograder.run.local_cluster --workers 2 dask-local/

starts ``dask scheduler --host 127.0.0.1`` (no dashboard) and two ``dask worker --nthreads 1 --nworkers 1``, prints
the scheduler's address (``tcp://127.0.0.1:PORT``: pass it to ``dp-course grade --scheduler``) and keeps them
until Ctrl+C (or SIGTERM).  Nothing listens on any other address.  Each process is started in a process group
of its own and stopped with it (SIGTERM, then SIGKILL after ``grace`` seconds), whatever ends the block.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["DASK", "LoopbackCluster", "loopback_cluster", "stop", "main"]

DASK = Path(sys.executable).with_name("dask")
"""The ``dask`` command of this Python environment (installed with ``distributed``)."""


@dataclasses.dataclass(frozen=True)
class LoopbackCluster:
    """A running loopback cluster: its scheduler's ``address`` (``tcp://127.0.0.1:PORT``), its ``processes``
    (the scheduler first, then the workers in the order named) and the ``log`` they all write to."""

    address: str
    processes: list[subprocess.Popen[bytes]]
    log: Path


def stop(proc: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """Stop ``proc`` with its process group (a worker's nanny and its worker): SIGTERM, SIGKILL after ``grace``
    seconds; if the leader has ended already, whatever is left in its group is killed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def loopback_cluster(base: Path, workers: Sequence[str], *, death_timeout: float | None = None,
                     start_timeout: float = 120.0) -> Iterator[LoopbackCluster]:
    """A scheduler and one worker per name in ``workers`` (``--name``; its files in ``base/NAME``), all on
    127.0.0.1 without a dashboard, stopped when the block ends (even on an error).

    Args:
        base: folder for the scheduler file, the workers' folders and ``cluster.log`` (created if needed).
        workers: the workers' names (at least one).
        death_timeout: seconds a worker lives without its scheduler (``--death-timeout``); ``None``: Dask's.
        start_timeout: seconds to wait for the scheduler's address.

    Raises:
        FileNotFoundError: no ``dask`` command next to this Python (:data:`DASK`).
        ValueError: ``workers`` is empty.
        RuntimeError: the scheduler ended or gave no address within ``start_timeout`` (with the log's tail).
    """
    if not DASK.is_file():
        raise FileNotFoundError(f"the dask command is not installed next to {sys.executable} (package distributed)")
    if not workers:
        raise ValueError("workers must name at least one worker, got none")
    base.mkdir(parents=True, exist_ok=True)
    log = base / "cluster.log"
    sched_file = base / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{DASK.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    extra = ["--death-timeout", f"{death_timeout:g}"] if death_timeout is not None else []
    procs: list[subprocess.Popen[bytes]] = []
    with open(log, "ab") as out:
        try:
            procs.append(subprocess.Popen(
                [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(sched_file)], stdout=out, stderr=out, env=env, start_new_session=True))
            deadline = time.monotonic() + start_timeout
            while not (sched_file.is_file() and sched_file.stat().st_size):
                if procs[0].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Dask scheduler gave no address: {log.read_text()[-2000:]}")
                time.sleep(0.2)
            address = json.loads(sched_file.read_text())["address"]
            if not address.startswith("tcp://127.0.0.1:"):
                raise RuntimeError(f"the Dask scheduler is not on the loopback: {address}")
            for name in workers:
                procs.append(subprocess.Popen(
                    [str(DASK), "worker", "--scheduler-file", str(sched_file), "--host", "127.0.0.1", "--nthreads",
                     "1", "--nworkers", "1", "--no-dashboard", "--name", name, "--local-directory", str(base / name),
                     *extra], stdout=out, stderr=out, env=env, start_new_session=True))
            yield LoopbackCluster(address, procs, log)
        finally:
            for proc in reversed(procs):
                stop(proc)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m autograder.run.local_cluster [--workers N] FOLDER``: run a loopback cluster until Ctrl+C or
    SIGTERM, then stop it."""
    parser = argparse.ArgumentParser(prog="python -m autograder.run.local_cluster", description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="folder for the scheduler file, the workers' files and the log")
    parser.add_argument("--workers", type=int, default=2, help="number of one-thread workers (1 to 64; default 2)")
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= 64:
        parser.error(f"--workers must be from 1 to 64, got {args.workers}")
    # Ctrl+C even where SIGINT came ignored (a background job of a script), and SIGTERM alike: the cluster's
    # processes are in sessions of their own, so only this process's clean-up stops them
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    with loopback_cluster(args.folder, [f"local{i}" for i in range(args.workers)]) as cluster:
        print(f"Dask scheduler: {cluster.address} ({args.workers} workers; log: {cluster.log}); grade with\n"
              f"  dp-course grade SUBMISSIONS -o grading/ --scheduler {cluster.address}\nCtrl+C stops it.",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while all(p.poll() is None for p in cluster.processes):
                time.sleep(1)
        ended = [i for i, p in enumerate(cluster.processes) if p.poll() is not None]
    if ended:
        what = "scheduler" if ended[0] == 0 else f"worker local{ended[0] - 1}"
        print(f"the Dask {what} ended by itself, so the cluster was stopped; see {cluster.log}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
