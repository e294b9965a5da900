"""``dp-course check`` and ``grade`` for a user who is not root and already runs hundreds of threads elsewhere.

``RLIMIT_NPROC`` counts every process and thread of a uid (in its user namespace).  Set on a kernel that runs as
the student's own user, it also counts the student's browser (hundreds of threads), and the kernel could not
start a thread: ``dp-course check`` then failed with nbgrader's "Please see the above traceback" and nothing
else.  This reproduces that situation -- a non-root user with 250 idle threads running in another process --
and runs ``check`` (with and without the sandbox) and ``grade`` (sandboxed, and with ``--no-sandbox``) as that
user, on the toy assignment.

When the suite runs as root, the test creates a system user for this (``useradd``) and runs the commands as
it.  The kit's Python may live where that user cannot enter (a checkout in a private folder, an interpreter
under ``/root``): the commands then run in a mount namespace that shows the interpreter, the checkout and the
test's folder at their usual paths under world-traversable parents (bubblewrap, as root), as the user.  As
any other user, the test runs the commands as itself.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil
import pytest

from adversarial import hostile
from autograder.isolation import bwrap, isolation, protect, sandbox
from autograder.course import course
from autograder import demo

pytestmark = pytest.mark.xdist_group("any_user")
NAME = demo.SYNTHETIC_NAME
USER = "dpc-course-test"
THREADS = 250
_HOLD_THREADS = ("import sys, threading\nstop = threading.Event()\n"
                 f"for _ in range({THREADS}):\n    threading.Thread(target=stop.wait, daemon=True).start()\n"
                 "print('ready', flush=True)\nsys.stdin.read()\n")


@dataclass
class User:
    uid: int
    gid: int
    base: Path               # a folder of the user's, with the course, the submissions and the outputs
    view: list[str]          # command prefix that runs a program as the user (empty: we are that user)

    def run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run([*self.view, *argv], env=self.env(), cwd=self.base, capture_output=True, text=True,
                              timeout=600, **kw)

    def env(self) -> dict[str, str]:
        return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(self.base / "home"),
                "XDG_CACHE_HOME": str(self.base / "cache"), "MPLBACKEND": "Agg", "LANG": "C.UTF-8"}


def _root_view(uid: int, gid: int, base: Path) -> list[str]:
    """As root: run as ``uid`` in a mount namespace where the interpreter, the checkout and ``base`` are reachable."""
    try:
        seen = subprocess.run([sys.executable, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
                              capture_output=True, text=True, user=uid, group=gid, extra_groups=[], cwd="/").stdout
    except OSError:  # the user cannot even reach the executable
        seen = ""
    if seen.strip() != sys.base_prefix:  # unreachable, or a different Python with the same name
        return _namespace(uid, gid, base)
    return ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def _namespace(uid: int, gid: int, base: Path) -> list[str]:
    info = isolation.probe("auto")
    if not info.isolated:
        pytest.skip(f"user {USER} cannot reach this Python ({sandbox.PYTHON}) and no bubblewrap works to show "
                    f"it: {'; '.join(info.problems)}")
    argv = [info.bwrap, "--die-with-parent", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
            "--dev-bind", "/dev", "/dev", "--bind", "/proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    made = {Path("/"), Path("/usr"), Path("/etc"), Path("/tmp"), Path("/proc"), Path("/dev")}
    for kind, path in [*(("--ro-bind", p) for p in bwrap._outermost([*sandbox.python_roots(), course.REPO_ROOT])
                         if Path("/usr") not in (p, *p.parents)), ("--bind", base)]:
        for d in reversed(path.parents):
            if d not in made:
                made.add(d)
                argv += ["--perms", "0755", "--dir", str(d)]
        argv += [kind, str(path), str(path)]
    return [*argv, "--", "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


@pytest.fixture(scope="module")
def user():
    base = Path(tempfile.mkdtemp(prefix="dpc-any-user-"))  # in /tmp itself: reachable for the test user
    os.chmod(base, 0o755)
    if os.geteuid() == 0:
        if shutil.which("useradd") is None:
            pytest.skip("running as root, and useradd is missing to create a non-root test user")
        try:
            pw = pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                           check=True, capture_output=True)
            pw = pwd.getpwnam(USER)
        uid, gid = pw.pw_uid, pw.pw_gid
        view = _root_view(uid, gid, base)
    else:
        uid, gid, view = os.getuid(), os.getgid(), []
    sols, crs, full, release = hostile.toy(base)
    shutil.copytree(crs / "release" / NAME, base / "notebooks" / NAME)
    (base / "subs").mkdir()
    (base / "full.ipynb").write_text(nbformat.writes(full))
    (base / "subs" / f"alice_{NAME}.ipynb").write_text(nbformat.writes(full))
    (base / "subs" / f"bob_{NAME}.ipynb").write_text(nbformat.writes(release))
    (base / "home").mkdir()
    if os.geteuid() == 0:
        for p in [base, *base.rglob("*")]:
            os.lchown(p, uid, gid)
    yield User(uid, gid, base, view)
    protect.remove_tree(base)  # a run without the sandbox leaves its workers' read-only copies


@pytest.fixture(scope="module")
def busy(user):
    """The user, with 250 idle threads running in another process of theirs (as a browser would)."""
    holder = subprocess.Popen([*user.view, sys.executable, "-c", _HOLD_THREADS], env=user.env(), cwd=user.base,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        tasks = sum(p.info["num_threads"] for p in psutil.process_iter(["uids", "num_threads"])
                    if p.info["uids"] and p.info["uids"].real == user.uid and p.info["num_threads"])
        assert tasks >= 200, f"the user runs {tasks} threads; the test needs at least 200"
        yield user
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.parametrize("mode", ["auto", "none"])
def test_check_as_a_busy_user(busy, mode):
    proc = busy.run(["dp-course", "check", "full.ipynb", "--notebooks", "notebooks", "--sandbox", mode,
                     "--cell-timeout", "20"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Visible tests passed: 5 of 5 autograded points." in proc.stdout


@pytest.mark.parametrize("sandboxed", [True, False])
def test_grade_as_a_busy_user(busy, sandboxed):
    if sandboxed and not isolation.probe("auto").isolated:
        pytest.skip("no sandbox works on this machine: " + "; ".join(isolation.probe("auto").problems))
    # one output folder for both runs: the second re-grades (other settings) without rebuilding the course
    proc = busy.run(["dp-course", "grade", "subs", "-o", "out", "--solutions", "solutions", "--workers", "1",
                     "--cell-timeout", "20", "--no-progress", "--no-feedback",
                     *([] if sandboxed else ["--no-sandbox"])])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[0]: line.split()[2:4] for line in proc.stdout.splitlines() if NAME in line}
    assert rows == {"alice": ["5", "7"], "bob": ["0", "7"]}, proc.stdout
    results = json.loads((busy.base / "out" / "results.json").read_text())["results"]
    assert {r["student"] for r in results if r["regraded"]} == {"alice", "bob"}
    assert not [e for r in results for e in r["events"] if e["kind"] in ("kernel_start_failed", "kernel_died")]
    assert ("sandbox: bubblewrap" in proc.stdout) == sandboxed
