"""autograder.isolation.reaping: no process the grader starts outlives what started it (issue 27).

Each wall on its own, with small synthetic process trees (no grading run): the tree kill reaches a child in a
session of its own (as ``jupyter_client`` starts kernels) and a stopped one; the sweep finds an orphan that is
in no tree of this process, by its token alone, and leaves other tokens alone; the death signal takes a child
with its parent; and a real trusted kernel, stopped so that it cannot notice anything itself, dies when the
process that started it is killed.  The end-to-end case (a grading worker killed mid-notebook) is in
``tests/adversarial/test_reaping_grade.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from autograder.isolation import memory_watch, reaping
from autograder.run import workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics (/proc, prctl)")


def _gone(pid: int, create_time: float, seconds: float) -> bool:
    """Poll until the process ``pid`` (started at ``create_time``) is gone or a zombie; False after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() != create_time or proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _start(code: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], list[int]]:
    """Run ``code`` in a new interpreter; it prints pids (one line, space-separated) when ready."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip(), "the helper process printed no pids"
    return proc, [int(x) for x in line.split()]


# a parent with a child in its own session (as jupyter_client starts a kernel), which has a child of its own
_TREE = """
    import subprocess, sys, time
    kid = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                            "g = subprocess.Popen(['sleep', '120']); print(g.pid, flush=True); time.sleep(120)"],
                           start_new_session=True, stdout=subprocess.PIPE, text=True)
    grandkid = kid.stdout.readline().strip()
    print(kid.pid, grandkid, flush=True)
    time.sleep(120)
    """


def test_kill_tree_reaches_a_child_in_its_own_session_and_a_stopped_one() -> None:
    proc, (kid, grandkid) = _start(_TREE)
    try:
        os.kill(kid, signal.SIGSTOP)  # a stopped kernel answers nothing, but is killed all the same
        times = {p: psutil.Process(p).create_time() for p in (proc.pid, kid, grandkid)}
        assert os.getpgid(kid) != os.getpgid(proc.pid)  # killing the parent's process group would miss it
        killed = reaping.kill_tree([psutil.Process(proc.pid)])
        assert [int(k.split()[0]) for k in killed] == [proc.pid, kid, grandkid], killed
        assert "sleep 120" in killed[2]
        assert all(_gone(p, t, 5) for p, t in times.items())
    finally:
        proc.kill()
        proc.wait()


_ORPHAN = """
    import os, subprocess, sys, time
    kid = subprocess.Popen(["sleep", "120"], start_new_session=True)
    print(kid.pid, flush=True)
    os._exit(0)  # the child is an orphan now: adopted by init (or a subreaper), in no tree of the test
    """


def test_sweep_finds_an_orphan_by_its_token_and_only_by_it() -> None:
    run = reaping.new_token()
    mine = reaping.new_token(run)
    other = reaping.new_token()   # another run on the same machine: never touched
    proc, (orphan,) = _start(_ORPHAN, {reaping.TOKEN_VARIABLE: mine})
    proc.wait()
    bystander, (kept,) = _start(_ORPHAN, {reaping.TOKEN_VARIABLE: other})
    bystander.wait()
    try:
        created = psutil.Process(orphan).create_time()
        assert orphan not in memory_watch.descendants(os.getpid())
        assert [p.pid for p in reaping.tagged(run)] == [orphan]      # found below the run's token
        assert [p.pid for p in reaping.tagged(mine)] == [orphan]     # and by its own
        assert reaping.tagged(mine + "x") == [] and reaping.tagged(run[:-1]) == []  # tokens match whole parts
        killed = reaping.sweep(run)
        assert len(killed) == 1 and killed[0].startswith(f"{orphan} (sleep 120")
        assert _gone(orphan, created, 5)
        assert reaping.alive(psutil.Process(kept))
        assert reaping.sweep(run) == []
    finally:
        for pid in (orphan, kept):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


_DEATH_SIGNAL = """
    import subprocess, time
    from autograder.isolation import reaping
    kid = subprocess.Popen(reaping.dying_with_parent(["sleep", "120"]), start_new_session=True)
    print(kid.pid, flush=True)
    time.sleep(120)
    """


def test_a_child_started_with_the_death_signal_dies_with_its_parent() -> None:
    proc, (kid,) = _start(_DEATH_SIGNAL)
    created = psutil.Process(kid).create_time()
    deadline = time.monotonic() + 10
    while psutil.Process(kid).cmdline()[:1] != ["sleep"] and time.monotonic() < deadline:
        time.sleep(0.02)   # the small program has set the death signal and become the command
    assert psutil.Process(kid).cmdline() == ["sleep", "120"]
    os.kill(kid, signal.SIGSTOP)
    proc.kill()
    proc.wait()
    assert _gone(kid, created, 10), psutil.Process(kid).cmdline()


_TRUSTED = """
    import time
    from autograder.trusted.runner import TrustedKernel
    kernel = TrustedKernel().start()
    print(kernel.km.provisioner.pid, flush=True)
    time.sleep(300)
    """


@pytest.mark.timeout(300)
def test_the_trusted_kernel_dies_with_the_worker_that_started_it() -> None:
    """The process that started the trusted kernel is killed (SIGKILL: no shutdown, no atexit) while the kernel
    is stopped (it cannot notice that its parent went, as ipykernel's own parent poller would): the kernel
    must still be gone within seconds, not outlive its worker (issue 27).  Its private folder (``/tmp/dpct-*``,
    marked with the worker's token) is left, and the main process's clean-up removes it."""
    token = reaping.new_token()
    proc, (kernel,) = _start(_TRUSTED, {reaping.TOKEN_VARIABLE: f"{token}.w0"})
    try:
        created = psutil.Process(kernel).create_time()
        assert "ipykernel" in " ".join(psutil.Process(kernel).cmdline())
        os.kill(kernel, signal.SIGSTOP)
        proc.kill()
        proc.wait()
        assert _gone(kernel, created, 10), psutil.Process(kernel).cmdline()
    finally:
        proc.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(kernel, signal.SIGKILL)
        left = workers.remove_left_folders(token, "test worker")
    assert [f.name[:5] for f in left] == ["dpct-"], left
    assert not left[0].exists()


def _marked(root: Path, name: str, token: str | None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "w").mkdir()
    (folder / "w" / "answer.py").write_text("x = 1\n")
    if token is not None:
        (folder / reaping.OWNER_FILE).write_text(token)
    return folder


def test_claim_marks_a_folder_with_the_worker_token_only_in_a_run(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(reaping.TOKEN_VARIABLE, raising=False)
    reaping.claim(tmp_path)
    assert not (tmp_path / reaping.OWNER_FILE).exists()  # dp-course check: no run, no mark
    monkeypatch.setenv(reaping.TOKEN_VARIABLE, "123-abc.def")
    reaping.claim(tmp_path)
    mark = tmp_path / reaping.OWNER_FILE
    assert mark.read_text() == "123-abc.def"
    assert stat.S_IMODE(mark.stat().st_mode) == 0o600


def test_left_folders_are_only_the_marked_private_folders_of_the_token(tmp_path: Path) -> None:
    """Only direct children named ``dpc-*``/``dpct-*``, real folders with a regular mark naming the token (or one
    below it): not another run's, not unmarked ones, not other names, not links to a marked folder, not a mark that
    is a link."""
    run = "4242-aaaaaaaaaaaa"
    kernel = _marked(tmp_path, "dpc-kernel1", f"{run}.w0")
    trusted = _marked(tmp_path, "dpct-trusted1", f"{run}.w0.x")
    _marked(tmp_path, "dpc-other-run", "4242-bbbbbbbbbbbb.w0")
    _marked(tmp_path, "dpc-prefix-only", f"{run}0.w0")  # a token that merely starts like it
    _marked(tmp_path, "dpc-unmarked", None)
    _marked(tmp_path, "instructor", f"{run}.w0")
    elsewhere = _marked(tmp_path, "instructor2", f"{run}.w0")
    (tmp_path / "dpc-link").symlink_to(elsewhere)
    linked = _marked(tmp_path, "dpc-linked-mark", None)
    (linked / reaping.OWNER_FILE).symlink_to(elsewhere / reaping.OWNER_FILE)
    (tmp_path / "dpc-file").write_text(f"{run}.w0")
    assert reaping.left_folders(f"{run}.w0", tmp_path) == [kernel, trusted]
    assert reaping.left_folders(run, tmp_path) == [kernel, trusted]
    assert reaping.left_folders(f"{run}.w1", tmp_path) == []
    assert reaping.left_folders(run, tmp_path / "missing") == []


def test_remove_left_folders_deletes_what_a_killed_worker_left_in_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of a worker token makes and claims a folder in ``/tmp`` the way a kernel sandbox does, then is
    killed; the pool's clean-up removes that folder and nothing else of ``/tmp``."""
    token = reaping.new_token()
    other = reaping.new_token()
    code = ("import sys, tempfile\nfrom pathlib import Path\nfrom autograder.isolation import reaping\n"
            "d = Path(tempfile.mkdtemp(prefix='dpc-', dir='/tmp'))\n(d / 'w').mkdir()\n"
            "(d / 'w' / 'big.bin').write_bytes(b'0' * 4096)\nreaping.claim(d)\nprint(d, flush=True)\n"
            "import time\ntime.sleep(600)\n")
    mine, theirs = (subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, reaping.TOKEN_VARIABLE: t}) for t in (f"{token}.w0", other))
    live: Path | None = None
    try:
        assert mine.stdout is not None and theirs.stdout is not None
        left, live = Path(mine.stdout.readline().strip()), Path(theirs.stdout.readline().strip())
        assert (left / reaping.OWNER_FILE).is_file() and live.is_dir()
        mine.kill()
        mine.wait()
        assert left.is_dir()  # SIGKILL: no clean-up of its own
        assert workers.remove_left_folders(token, "test worker") == [left]
        assert not left.exists()
        assert live.is_dir()  # another run's live folder stays
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()
        if live is not None:
            shutil.rmtree(live, ignore_errors=True)
