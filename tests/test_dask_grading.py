"""Grading on a Dask cluster (``dp-course grade --scheduler``, :mod:`autograder.run.dask_executor`).

The module starts its own cluster on the loopback -- ``dask scheduler`` and two ``dask worker`` processes (one
thread each), every one bound to 127.0.0.1, no dashboard -- and stops it at the end, failure or not.  It grades
the same small class of the toy assignment (right, empty, wrong and hostile submissions) with ``--workers 2`` and
with the cluster, and compares scores, events, ``grades.csv``, the feedback pages and the report.  The fault tests
kill the Dask worker process grading a slow submission (found by its course directory ``w-<host>-<pid>``,
which the grading worker creates when the job starts): once (graded again on another worker, same scores) and
twice (a "grader fault" flag, zero, graded again on the next run).  The scheduler test kills the scheduler
mid-run: the run stops with what it graded recorded, and the next run, on a new cluster, grades the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import psutil
import pytest
from distributed import Client, KilledWorker

from adversarial import hostile
from autograder import demo
from autograder.course import cells
from autograder.course.limits import Limits
from autograder.isolation import memory_watch, reaping
from autograder.run import dask_executor, local_cluster
from autograder.run.executor import check_scheduler_address
from autograder.run.grading import grade
from autograder.run.jobs import Job
from autograder.run.results import GradeRun, SubmissionResult

pytestmark = [pytest.mark.xdist_group("dask"), pytest.mark.slow]
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=30, notebook_timeout=120)
SLEEP = 12  # seconds the slow submission sleeps: time enough to kill its worker mid-notebook
TIMES = re.compile(r"\d+(\.\d+)? ?(s|ms|seconds?)\b|\d{4}-\d\d-\d\d \d\d:\d\d")
PROMPT = re.compile(rb'<div class="prompt input_prompt">In(\xc2\xa0| )\[(\xc2\xa0| |\d)*\]:</div>')


class Cluster(NamedTuple):
    address: str
    client: Client
    log: Path


@contextlib.contextmanager
def _loopback_cluster(base: Path, workers: tuple[str, ...]) -> Iterator[tuple[Cluster, list[subprocess.Popen[bytes]]]]:
    """A scheduler and ``workers`` on 127.0.0.1 (:func:`autograder.run.local_cluster.loopback_cluster`), stopped at
    the end (even on failure), with a client; also gives the processes (the scheduler first) to a test that stops
    one itself."""
    if not local_cluster.DASK.is_file():
        pytest.skip(f"the dask command is not installed next to {sys.executable}")
    with local_cluster.loopback_cluster(base, workers, death_timeout=30) as started:
        assert started.address.startswith("tcp://127.0.0.1:")
        client = Client(started.address, timeout=120, set_as_default=False)
        try:
            client.wait_for_workers(len(workers), timeout=180)
            yield Cluster(started.address, client, started.log), started.processes
        finally:
            client.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Iterator[Cluster]:
    """A scheduler and two workers on 127.0.0.1 for the module's tests."""
    with _loopback_cluster(tmp_path_factory.mktemp("dask"), ("a", "b")) as (started, _):
        yield started


def _class(toy: hostile.Toy, dest: Path) -> Path:
    full = toy.full
    hostile.write_notebook(dest / f"alice_{NAME}.ipynb", full)
    hostile.write_notebook(dest / f"bob_{NAME}.ipynb", toy.release)
    hostile.write_notebook(dest / f"carol_{NAME}.ipynb", cells.set_answer(full, "ex2_answer", hostile.WRONG_EX2))
    hostile.write_notebook(dest / f"killer_{NAME}.ipynb", cells.set_answer(
        full, "ex2_answer", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", mode="prepend"))
    return dest


EXPECTED = {"alice": hostile.FULL, "bob": hostile.ZERO, "carol": hostile.EX2_BROKEN, "killer": hostile.FROM_EX2_ON}


def _auto(r: SubmissionResult) -> dict[str, float | None]:
    return {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"}


def _pages(out: Path) -> dict[str, bytes]:
    """Every feedback file, but ``index.json`` (digests of the autograded notebooks, which hold the kernels'
    execution times), with the input prompts' execution counts blanked (a kernel that kills itself may or may not
    have answered with its count first: a race of the kernel's, local or not)."""
    return {str(p.relative_to(out)): PROMPT.sub(b"<prompt>", p.read_bytes())
            for p in sorted((out / "feedback").rglob("*")) if p.is_file() and p.name != "index.json"}


def _report(out: Path) -> str:
    """The report without what differs between any two runs: the times and the workers' own paths."""
    text = (out / "report.md").read_text()
    return TIMES.sub("<time>", text.replace(str(out), "<out>"))


def _ready(cluster: Cluster) -> None:
    cluster.client.wait_for_workers(2, timeout=180)  # a worker killed by a fault test is back (its nanny)


def test_the_cluster_grades_as_local_workers_do(toy: hostile.Toy, cluster: Cluster, tmp_path: Path,
                                                 grading_sandbox: str) -> None:
    _ready(cluster)
    subs = _class(toy, tmp_path / "subs")
    local = grade(subs, tmp_path / "local", solutions_dir=toy.solutions, workers=2, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox)
    dask = grade(subs, tmp_path / "dask", solutions_dir=toy.solutions, workers=2, limits=LIMITS, progress=False,
                 sandbox_mode=grading_sandbox, scheduler=cluster.address)
    assert {r.student: _auto(r) for r in dask.results} == EXPECTED
    assert {r.student: _auto(r) for r in local.results} == EXPECTED
    assert [(r.student, r.score, r.max_score, sorted(e.kind.value for e in r.events)) for r in dask.results] == \
        [(r.student, r.score, r.max_score, sorted(e.kind.value for e in r.events)) for r in local.results]
    assert dask.workers == 2 and dask.graded_now == 4
    workdirs = sorted(p.name for p in (tmp_path / "dask" / "work").iterdir())
    assert len(workdirs) == 2 and all(w.startswith("w-") for w in workdirs), workdirs  # both Dask workers graded
    assert (tmp_path / "dask" / "grades.csv").read_bytes() == (tmp_path / "local" / "grades.csv").read_bytes()
    local_pages, dask_pages = _pages(tmp_path / "local"), _pages(tmp_path / "dask")
    assert len(local_pages) >= 4 and local_pages == dask_pages
    assert _report(tmp_path / "dask") == _report(tmp_path / "local")
    again = grade(subs, tmp_path / "dask", solutions_dir=toy.solutions, limits=LIMITS, progress=False,
                  sandbox_mode=grading_sandbox, scheduler=cluster.address)  # incremental, as locally
    assert again.graded_now == 0 and again.skipped == 4


def _slow_class(toy: hostile.Toy, dest: Path) -> Path:
    hostile.write_notebook(dest / f"alice_{NAME}.ipynb", toy.full)
    hostile.write_notebook(dest / f"slow_{NAME}.ipynb", cells.set_answer(
        toy.full, "ex2_answer", f"import time\ntime.sleep({SLEEP})", mode="prepend"))
    return dest


def _kill_workers_grading(out: Path, student: str, times: int, stop: threading.Event, killed: list[int]) -> None:
    """Kill the Dask worker process that grades ``student`` (a few seconds into the notebook), ``times`` times."""
    pattern = re.compile(r"w-.+-(\d+)")
    while len(killed) < times and not stop.is_set():
        for wdir in (out / "work").glob("w-*") if (out / "work").is_dir() else []:
            m = pattern.fullmatch(wdir.name)
            if m and int(m.group(1)) not in killed and (wdir / "submitted" / student / NAME).is_dir():
                time.sleep(3)  # mid-notebook: it sleeps SLEEP seconds
                pid = int(m.group(1))
                killed.append(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                break
        time.sleep(0.2)


def _grade_killing(toy: hostile.Toy, cluster: Cluster, tmp_path: Path, sandbox: str,
                   kills: int) -> tuple[GradeRun, list[int]]:
    _ready(cluster)
    subs = _slow_class(toy, tmp_path / "subs")
    out = tmp_path / "out"
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_workers_grading, args=(out, "slow", kills, stop, killed), daemon=True)
    killer.start()
    try:
        run = grade(subs, out, solutions_dir=toy.solutions, limits=LIMITS, progress=False, sandbox_mode=sandbox,
                    scheduler=cluster.address)
    finally:
        stop.set()
        killer.join()
    return run, killed


def test_a_worker_that_dies_mid_notebook_its_notebook_is_graded_elsewhere(
        toy: hostile.Toy, cluster: Cluster, tmp_path: Path, grading_sandbox: str) -> None:
    run, killed = _grade_killing(toy, cluster, tmp_path, grading_sandbox, kills=1)
    assert len(killed) == 1
    by = {r.student: r for r in run.results}
    assert _auto(by["slow"]) == hostile.FULL and _auto(by["alice"]) == hostile.FULL
    assert not [e for e in by["slow"].events if e.kind.value in ("worker_crashed", "not_graded")]
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["submissions"][f"slow/{NAME}"]["hash"]  # graded for good: not again next run


def test_a_notebook_whose_workers_die_twice_is_flagged_as_a_grader_fault(
        toy: hostile.Toy, cluster: Cluster, tmp_path: Path, grading_sandbox: str) -> None:
    run, killed = _grade_killing(toy, cluster, tmp_path, grading_sandbox, kills=2)
    assert len(killed) == 2 and killed[0] != killed[1]
    by = {r.student: r for r in run.results}
    assert _auto(by["alice"]) == hostile.FULL
    assert _auto(by["slow"]) == hostile.ZERO  # never a silent zero: flagged, and graded again next run
    faults = [e for e in by["slow"].events if e.kind.value == "worker_crashed"]
    assert faults and "grader fault" in faults[0].detail and "died 2 times" in faults[0].detail
    assert "grader fault" in (tmp_path / "out" / "report.md").read_text()
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["submissions"][f"slow/{NAME}"]["hash"] == ""


def _kill_scheduler_while_grading(out: Path, student: str, scheduler: subprocess.Popen[bytes],
                                  stop: threading.Event) -> None:
    """SIGKILL the scheduler (its whole process group) a few seconds into ``student``'s notebook."""
    while not stop.is_set():
        if any((wdir / "submitted" / student / NAME).is_dir() for wdir in (out / "work").glob("w-*")):
            time.sleep(3)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(scheduler.pid, signal.SIGKILL)
            return
        time.sleep(0.2)


def test_a_scheduler_that_goes_away_stops_the_run_and_the_next_run_resumes(
        toy: hostile.Toy, tmp_path: Path, grading_sandbox: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_executor, "SCHEDULER_GRACE", 10.0)  # the run gives up 10 s after losing it, not 60
    subs = _slow_class(toy, tmp_path / "subs")  # alice first, then slow (one worker: one notebook at a time)
    out = tmp_path / "out"
    with _loopback_cluster(tmp_path / "first", ("a",)) as (first, procs):
        stop = threading.Event()
        killer = threading.Thread(target=_kill_scheduler_while_grading, args=(out, "slow", procs[0], stop),
                                  daemon=True)
        killer.start()
        try:
            with pytest.raises(dask_executor.SchedulerLost, match="run the same command again"):
                grade(subs, out, solutions_dir=toy.solutions, limits=LIMITS, progress=False,
                      sandbox_mode=grading_sandbox, scheduler=first.address)
        finally:
            stop.set()
            killer.join()
        assert procs[0].poll() is not None, "the test did not kill the scheduler"
    state = json.loads((out / "state.json").read_text())["submissions"]
    assert state[f"alice/{NAME}"]["hash"], "alice, graded before the scheduler went, is in the state file"
    assert not state.get(f"slow/{NAME}", {}).get("hash"), "slow was not graded: the next run must grade it"
    with _loopback_cluster(tmp_path / "second", ("b",)) as (second, _):
        again = grade(subs, out, solutions_dir=toy.solutions, limits=LIMITS, progress=False,
                      sandbox_mode=grading_sandbox, scheduler=second.address)
    assert again.graded_now == 1 and again.skipped == 1
    assert {r.student: _auto(r) for r in again.results} == {"alice": hostile.FULL, "slow": hostile.FULL}
    assert "slow" in (out / "grades.csv").read_text() and "alice" in (out / "grades.csv").read_text()


def test_a_worker_that_may_not_grade_says_why() -> None:
    threads = SimpleNamespace(state=SimpleNamespace(nthreads=4))
    why = dask_executor.worker_refusal("none", threads)
    assert why is not None and "4 threads" in why and "--nthreads 1" in why


@pytest.mark.parametrize("bad", ["localhost:8786", "tcp://host", "http://127.0.0.1:8786", "", 8786])
def test_a_bad_scheduler_address_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=r"scheduler \(--scheduler\) must be .*tcp://HOST:PORT.*got"):
        check_scheduler_address(bad)  # type: ignore[arg-type]


def _executor(tmp_path: Path) -> dask_executor.DaskExecutor:
    """A DaskExecutor without a cluster: enough to turn finished tasks into replies."""
    ex = object.__new__(dask_executor.DaskExecutor)
    ex.work, ex.futures = tmp_path, {}
    return ex


def test_a_task_whose_workers_died_twice_becomes_a_grader_fault_reply(tmp_path: Path) -> None:
    job = Job("dave", NAME, (), "h")
    dead = KilledWorker("grade-dave", SimpleNamespace(address="tcp://127.0.0.1:4242"), 1)
    future = SimpleNamespace(status="error", exception=lambda: dead)
    slot, same_job, reply = _executor(tmp_path)._reply(future, job)  # type: ignore[arg-type]
    assert same_job == job and not reply.success and reply.crashed
    assert reply.error.startswith("grader fault") and "died 2 times" in reply.error and "127.0.0.1:4242" in reply.error
    assert not slot.wdir.exists()  # nothing of it is copied into the course


def test_a_task_the_scheduler_forgot_stops_the_run(tmp_path: Path) -> None:
    future = SimpleNamespace(status="cancelled")
    with pytest.raises(dask_executor.SchedulerLost, match="run the same command again"):
        _executor(tmp_path)._reply(future, Job("dave", NAME, (), "h"))  # type: ignore[arg-type]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_local_cluster_command_serves_on_the_loopback_until_ctrl_c(tmp_path: Path, signum: int) -> None:
    """``python -m autograder.run.local_cluster --workers 1 DIR`` (docs/cluster.md): prints a 127.0.0.1 address
    whose scheduler has the worker, and on SIGINT (Ctrl+C) or SIGTERM stops everything and exits 0."""
    if not local_cluster.DASK.is_file():
        pytest.skip(f"the dask command is not installed next to {sys.executable}")
    proc = subprocess.Popen([sys.executable, "-m", "autograder.run.local_cluster", "--workers", "1", str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.match(r"Dask scheduler: (tcp://127\.0\.0\.1:\d+) \(1 workers", first)
        assert match, first
        with Client(match.group(1), timeout=120, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=180)
            assert [w["name"] for w in client.scheduler_info()["workers"].values()] == ["local0"]
        started = [psutil.Process(p) for p in memory_watch.descendants(proc.pid)]
        assert len(started) >= 3, started  # the scheduler, the nanny and its worker
        proc.send_signal(signum)
        assert proc.wait(timeout=120) == 0
        assert not [p for p in started if reaping.alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_local_cluster_command_refuses_a_bad_worker_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        local_cluster.main(["--workers", "0", "somewhere"])
    assert stopped.value.code == 2
    assert "--workers must be from 1 to 64, got 0" in capsys.readouterr().err
