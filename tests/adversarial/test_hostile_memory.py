"""Issue 27 item 4: the grader host's memory, graded end to end by ``dp-course grade`` on the toy assignment.

One grading run (one worker, default options but a 1024 MB memory cap, which spares the machine's other users --
a kernel does not start under 512 MB of address space -- and a 10 s feedback time limit, which keeps the run
short) of an honest twin (``alice``, a full solution) and one submission per attack.  A thread of the test
samples, every 50 ms, the memory of every process the run starts (anonymous and shared memory plus memfd
files: :func:`autograder.isolation.memory_watch.tree_bytes`, the launcher's own measure), sorted into the grading
worker,
the trusted kernel, the student's sandboxed kernel tree and the whole run (the host's share), and keeps the
peaks while each submission was graded.  Each test asserts that its hostile notebook gets a grade and a
reason, and that the peaks stay under the figures stated in ``docs/design.md`` (:data:`BOUNDS`); the twin
scores full marks with no error.

* ``treebomb`` -- forks 10 children that each hold 150 MB (each under the per-process limit);
* ``memfd`` -- 28 memfd files of 48 MB written with ``write()`` (each under ``RLIMIT_FSIZE``, never mapped);
* ``inodes`` -- 60,000 empty files in ``/tmp`` (kernel slab outside every byte cap);
* ``iopub`` -- 40 messages of 20 MB sent straight on the kernel's IOPub socket;
* ``outflood`` -- forged ``execute_result``, ``error`` and ``update_display_data`` messages of 1 MB each, 60 of
  each kind (all kept before, past the 256 kB per-cell cap);
* ``guardreply`` -- replaces the guard's methods so that its reply is a 16 MB literal;
* ``dealer`` -- the answer, when a hidden test calls it, sends 12 unsolicited 20 MB replies to the trusted
  kernel's DEALER socket;
* ``mdstall`` -- a Markdown cell that takes nbconvert's renderer minutes (``\\begin{a}`` repeated): the grade
  stands, the page is the summary, with the reason.

After the run, no kernel of it is alive (:func:`test_no_kernel_is_left`): every kernel process the sampler saw,
wherever it is now, and no kernel below this process that was not there before the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from adversarial import hostile, sampling
from autograder.course import cells
from autograder import demo
from autograder.isolation import disk_watch, memory_watch, reaping
from autograder.intake.events import Severity
from autograder.run.grading import grade
from autograder.course.limits import Limits

pytestmark = pytest.mark.xdist_group("adversarial")
NAME = demo.SYNTHETIC_NAME
MB = 2**20
LIMITS = Limits(memory_mb=1024, feedback_timeout=10)
BOUNDS = {"worker": 600 * MB, "trusted": 400 * MB, "student": (1024 + 512) * MB, "host": 2400 * MB}
"""Stated peaks (docs/design.md, "Memory of the grading host"): the student's tree may overshoot its cap by
what it allocates between two polls of the watch, which a loaded machine stretches (370 MB measured)."""


ROLES = ("worker", "trusted", "student", "host")


class Sampler(sampling.ProcessSampler):
    """Samples, every 50 ms, the memory of every process below this one, by role: ``(time, {role: bytes})``."""

    def __init__(self) -> None:
        super().__init__(0.05)
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.roles: dict[int, str] = {}

    def observe(self, pids: list[int]) -> None:
        roles = self.roles
        for pid in pids:
            if pid not in roles or roles[pid] == "worker":  # a fork of the worker may exec a kernel since
                cmd, parent = sampling.cmdline(pid), sampling.parent(pid)
                if "autograder.run.worker" in cmd:
                    roles[pid] = "worker"   # and its fork that renders feedback
                elif "autograder.isolation.sandbox" in cmd or roles.get(parent) == "student":
                    roles[pid] = "student"
                elif "ipykernel" in cmd and roles.get(parent) == "worker":
                    roles[pid] = "trusted"
                else:
                    roles[pid] = "other"
        by_role: dict[str, list[int]] = {}
        for pid in pids:
            by_role.setdefault(roles[pid], []).append(pid)
        sample = {role: memory_watch.tree_bytes(by_role.get(role, [])) for role in ROLES[:3]}
        sample["host"] = memory_watch.tree_bytes([self.root, *pids])
        self.samples.append((time.time(), sample))


def peaks_by_student(samples: list[tuple[float, dict[str, int]]], ends: dict[str, float]) -> dict[str, dict[str, int]]:
    """The peak of each role while each student's job ran: a job runs from the previous job's end (its feedback
    folder in the output, written as soon as the worker replied; one worker) to its own."""
    out: dict[str, dict[str, int]] = {}
    start = 0.0
    for student, end in sorted(ends.items(), key=lambda kv: kv[1]):
        window = [s for t, s in samples if start <= t <= end]
        out[student] = {role: max((s[role] for s in window), default=0) for role in ROLES}
        out[student]["samples"] = len(window)
        start = end
    return out


def _answer(toy: hostile.Toy, grade_id: str, code: str, mode: str = "prepend") -> nbformat.NotebookNode:
    return cells.set_answer(toy.full, grade_id, code, mode=mode)


CASES = ("treebomb", "memfd", "inodes", "iopub", "outflood", "guardreply", "dealer", "mdstall")


def _cases(toy: hostile.Toy) -> dict[str, nbformat.NotebookNode]:
    sleep = "\nimport time\ntime.sleep(8)\n"
    out = {
        "treebomb": _answer(toy, "ex2_answer", textwrap.dedent("""
            import os, time
            for _i in range(10):
                if os.fork() == 0:
                    _hold = bytearray(b'x') * (150 << 20)
                    time.sleep(30)
                    os._exit(0)
                time.sleep(0.3)
            """) + sleep),
        "memfd": _answer(toy, "ex2_answer", textwrap.dedent("""
            import os
            _fds = []
            for _i in range(28):
                _fd = os.memfd_create(f'm{_i}')
                for _j in range(6):
                    os.write(_fd, b'x' * (8 << 20))
                _fds.append(_fd)
            """) + sleep),
        "inodes": _answer(toy, "ex2_answer", textwrap.dedent("""
            import os
            os.makedirs('/tmp/many', exist_ok=True)
            try:
                for _i in range(60000):
                    open(f'/tmp/many/{_i}', 'w').close()
            except OSError:
                pass
            """) + sleep),
        "iopub": _answer(toy, "ex2_answer", textwrap.dedent("""
            _k = get_ipython().kernel
            _big = 'x' * (20 << 20)
            for _i in range(40):
                _k.session.send(_k.iopub_socket, 'stream', {'name': 'stdout', 'text': _big},
                                parent=_k.get_parent('shell'))
            del _big
            """)),
        "outflood": _answer(toy, "ex2_answer", textwrap.dedent("""
            from IPython.display import display
            _k = get_ipython().kernel
            _p = _k.get_parent('shell')
            _mb = 'y' * (1 << 20)
            _h = display('small', display_id=True)
            for _i in range(60):
                _h.update({'text/plain': _mb})
                _k.session.send(_k.iopub_socket, 'execute_result',
                                {'data': {'text/plain': _mb, 'application/json': {'k': _mb}}, 'metadata': {},
                                 'execution_count': 1}, parent=_p)
                _k.session.send(_k.iopub_socket, 'error',
                                {'ename': 'E', 'evalue': _mb[:1000], 'traceback': [_mb]}, parent=_p)
            """)),
        "guardreply": _answer(toy, "ex1_answer", textwrap.dedent("""
            class _Huge:
                def __repr__(self):
                    return '[' + '0,' * (8 << 20) + ']'
            for _name, _g in list(globals().items()):
                if _name.startswith('_dpc_guard_'):
                    _g.before = _g.after = lambda: _Huge()
            """), mode="append"),
        "dealer": _answer(toy, "ex1_answer", textwrap.dedent("""
            def laplace_scale(sensitivity, epsilon):
                _k = get_ipython().kernel
                _ident = _k._parent_ident['shell']
                _big = 'z' * (20 << 20)
                for _i in range(12):
                    _k.session.send(_k.shell_stream.socket, 'execute_reply',
                                    {'status': 'ok', 'junk': _big}, ident=_ident)
                return sensitivity / epsilon
            """), mode="replace"),
    }
    stall = nbformat.v4.new_markdown_cell("\\begin{a}" * 60000)
    nb = cells.set_answer(toy.full, "ex1_answer", "", mode="append")
    nb.cells.append(stall)
    out["mdstall"] = nb
    return out


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory, toy: hostile.Toy, grading_sandbox: str) -> dict[str, Any]:
    """One grading run: the honest twin and every attack, one worker; the peaks while each was graded."""
    tmp = tmp_path_factory.mktemp("memory")
    subs = tmp / "subs"
    hostile.write_notebook(subs / f"alice_{NAME}.ipynb", toy.full)
    for student, nb in _cases(toy).items():
        hostile.write_notebook(subs / f"{student}_{NAME}.ipynb", nb)
    before = _kernels_below_me()  # another module's kernel (a session fixture) is not this run's
    with Sampler() as sampler:
        run = grade(subs, tmp / "out", solutions_dir=toy.solutions, workers=1, limits=LIMITS, progress=False,
                    sandbox_mode=grading_sandbox)
    ends = {p.name: p.stat().st_mtime for p in (run.output_dir / "feedback").iterdir()
            if p.is_dir() and (p / NAME).is_dir()}
    peaks = peaks_by_student(sampler.samples, {s: ends[s] for s in ends})
    lines = [f"{s:>11}: " + ", ".join(f"{r} {v[r] / MB:.0f} MB" for r in ROLES) + f" ({v['samples']} samples)"
             for s, v in peaks.items()]
    (tmp / "peaks.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    return {"run": run, "peaks": peaks, "results": {r.student: r for r in run.results}, "out": tmp / "out",
            "kernels_before": before, "kernels_seen": list(sampler.kernels.values())}


def _kernels_below_me() -> set[int]:
    return {p for p in memory_watch.descendants(os.getpid()) if "ipykernel" in sampling.cmdline(p)}


def _check(memory_run: dict[str, Any], student: str, scores: list[dict[str, float]], events: set[str]) -> Any:
    r = memory_run["results"][student]
    got = {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"}
    assert got in scores, (got, r.events)
    kinds = {str(e.kind) for e in r.events}
    assert events <= kinds, (events, r.events)
    assert r.feedback and (memory_run["run"].output_dir / r.feedback[0]).is_file()
    peaks = memory_run["peaks"][student]
    assert peaks["samples"] > 5 and peaks["worker"] > 0, peaks
    for role, bound in BOUNDS.items():
        assert peaks[role] < bound, (role, peaks[role] / MB)
    return r


def test_the_honest_twin_is_unaffected(memory_run: dict[str, Any]) -> None:
    alice = memory_run["results"]["alice"]
    assert {k: v[0] for k, v in alice.exercises.items() if k != "q4_answer"} == hostile.FULL
    assert not [e for e in alice.events if e.severity is Severity.ERROR], alice.events
    assert set(memory_run["results"]) == {"alice", *CASES}


def test_process_tree_over_the_cap_is_stopped(memory_run: dict[str, Any]) -> None:
    r = _check(memory_run, "treebomb", [hostile.FROM_EX2_ON], {"memory_limit"})
    (why,) = [e.detail for e in r.events if str(e.kind) == "memory_limit"]
    assert "the kernel and its child processes used" in why and "the limit is 1024 MB" in why
    assert memory_run["peaks"]["treebomb"]["student"] > 600 * MB  # it grew past one child before it was stopped


def test_memfd_files_count_against_the_cap(memory_run: dict[str, Any]) -> None:
    _check(memory_run, "memfd", [hostile.FROM_EX2_ON], {"memory_limit"})
    assert memory_run["peaks"]["memfd"]["student"] > 600 * MB


def test_too_many_files_stop_the_kernel(memory_run: dict[str, Any]) -> None:
    r = _check(memory_run, "inodes", [hostile.FROM_EX2_ON], {"disk_limit"})
    assert any("files in /tmp" in e.detail for e in r.events), r.events


def test_iopub_flood_does_not_grow_the_worker(memory_run: dict[str, Any]) -> None:
    # the kernel stopped for its tree's memory (exercises 2 and 3 lost), or, on a loaded machine where the
    # messages queue up inside the kernel, only the flooding cell itself raising MemoryError (exercise 2 lost)
    r = _check(memory_run, "iopub", [hostile.FULL, hostile.FROM_EX2_ON, hostile.EX2_BROKEN], set())
    kinds = {str(e.kind) for e in r.events}
    assert {"output_truncated", "memory_limit"} & kinds or "memory_error" in kinds, r.events
    if {k: v[0] for k, v in r.exercises.items() if k != "q4_answer"} == hostile.EX2_BROKEN:
        assert any(str(e.kind) == "memory_error" and e.cell == "ex2_answer" for e in r.events), r.events


def test_output_is_capped_as_it_streams(memory_run: dict[str, Any]) -> None:
    _check(memory_run, "outflood", [hostile.FULL], {"output_truncated"})
    graded = memory_run["out"] / "course" / "autograded" / "outflood" / NAME / f"{NAME}.ipynb"
    nb = nbformat.read(graded, as_version=4)
    size = len(json.dumps(nb.cells[hostile.cell_index(nb, "ex2_answer")].outputs))
    assert size < 3 * LIMITS.max_output_kb * 1024, size  # before: about 180 MB kept


def test_crafted_guard_reply_is_not_parsed(memory_run: dict[str, Any]) -> None:
    _check(memory_run, "guardreply", [hostile.FULL], {"guard_failed"})


def test_dealer_flood_does_not_grow_the_trusted_kernel(memory_run: dict[str, Any]) -> None:
    _check(memory_run, "dealer", [hostile.FULL, hostile.EX1_BROKEN], set())
    assert memory_run["peaks"]["dealer"]["trusted"] > 0, "the trusted kernel was sampled"


def test_stalled_feedback_render_costs_the_page_not_the_grade(memory_run: dict[str, Any]) -> None:
    r = _check(memory_run, "mdstall", [hostile.FULL], {"feedback_fallback"})
    assert any("took longer than" in e.detail for e in r.events), r.events
    assert "begin{a}" not in (memory_run["run"].output_dir / r.feedback[0]).read_text()


def test_no_kernel_is_left(memory_run: dict[str, Any]) -> None:
    """No kernel of the run outlives it: every kernel process (and sandbox launcher) seen while it ran is gone,
    orphans adopted by ``init`` included, and no kernel below this process appeared (the pool kills what its
    workers left, :mod:`autograder.isolation.reaping`; a few seconds' grace for a kernel that is being reaped).

    Before, a trusted kernel stayed alive below the test process in CI: not one of this run's, but one that
    ``dp-course check`` (``tests/test_check.py``, in-process) had started and kept until the process exited; the
    check now shuts its kernel down, and a kernel that was already there before the run is not this run's."""
    seen = memory_run["kernels_seen"]
    assert len(seen) >= 2 * len(memory_run["results"]), seen  # the sampler saw each notebook's kernels
    deadline = time.monotonic() + 15
    while True:
        left = [p for p in seen if reaping.alive(p)]
        new = _kernels_below_me() - memory_run["kernels_before"]
        if not (left or new) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, [reaping.describe(p) for p in left]
    assert not new, [(p, sampling.cmdline(p)) for p in new]


# ---- the watch itself, without a grading run -------------------------------------------------------------

_TREE = textwrap.dedent("""
    import os, sys, time
    for _i in range(int(sys.argv[1])):
        if os.fork() == 0:
            _hold = bytearray(b'x') * (int(sys.argv[2]) << 20)
            time.sleep(30)
            os._exit(0)
    fd = os.memfd_create('m')
    os.write(fd, b'y' * (int(sys.argv[3]) << 20))
    print('ready', flush=True)
    time.sleep(30)
    """)


def _tree(children: int, each_mb: int, memfd_mb: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _TREE, str(children), str(each_mb), str(memfd_mb)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_tree_bytes_counts_children_and_memfd_once() -> None:
    proc = _tree(3, 40, 50)
    try:
        time.sleep(0.5)  # the children have allocated by now (they started before the memfd was written)
        pids = [proc.pid, *memory_watch.descendants(proc.pid)]
        assert len(pids) == 4
        used = memory_watch.tree_bytes(pids)
        assert 3 * 40 * MB + 50 * MB <= used < 3 * 40 * MB + 50 * MB + 120 * MB, used / MB
        assert sum(memory_watch.memfd_files(proc.pid).values()) >= 50 * MB
        assert sum(memory_watch.process_bytes(p) for p in pids) < used  # the memfd is in no process's memory
    finally:
        proc.kill()
        proc.wait()


def test_tree_memory_kills_the_whole_tree_over_the_cap() -> None:
    proc = _tree(4, 60, 30)
    lines: list[str] = []
    watch = memory_watch.TreeMemory(proc.pid, 200 * MB, lines.append).start()
    try:
        assert proc.wait(timeout=20) == -9
        time.sleep(0.3)
        assert memory_watch.descendants(proc.pid) == []
        (line,) = lines
        assert line.startswith(memory_watch.MARKER) and "the limit is 200 MB" in line
        assert watch.peak > 200 * MB
    finally:
        watch.stop()
        proc.kill()


def test_tree_under_the_cap_is_left_alone() -> None:
    proc = _tree(2, 20, 10)
    lines: list[str] = []
    watch = memory_watch.TreeMemory(proc.pid, 400 * MB, lines.append).start()
    try:
        time.sleep(1.0)
        assert proc.poll() is None and lines == [] and 50 * MB < watch.peak < 400 * MB
    finally:
        watch.stop()
        proc.kill()
        proc.wait()


def test_disk_watch_counts_files_of_a_tmpfs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_files must be an integer >= 100, got 5"):
        disk_watch.DiskWatch([], ["/tmp"], max_files=5)
    watch = disk_watch.DiskWatch([], ["/dev/shm"], max_files=100)
    before = disk_watch.tmpfs_files("/dev/shm")
    if not before:
        pytest.skip("no /dev/shm tmpfs here to count files on")
    folder = Path("/dev/shm") / f"dpc-test-{os.getpid()}"
    folder.mkdir()
    try:
        for i in range(150 if before < 100 else 1):
            (folder / str(i)).touch()
        why = watch.check("")
        assert why is not None and why.startswith(disk_watch.MARKER) and "files in /dev/shm" in why, why
    finally:
        shutil.rmtree(folder)
