"""The kernel sandbox (autograder.sandbox): what a submission's kernel can and cannot do.

These tests start real kernels through the launcher, as grading does, and measure each layer from the inside:
uid, network, file system view, resource limits (address space, processes, file size), environment; and from
the outside: nothing of the kernel survives its shutdown.  On a machine with bubblewrap (CI installs it,
``.ci/prepare.sh``) the full sandbox is exercised; without it, the tests check that the tool says so loudly
and that the limits still apply.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from autograder import course, sandbox
from autograder.sandbox import Limits

pytestmark = pytest.mark.xdist_group("sandbox")  # shares module fixtures: one xdist worker
HAVE_BWRAP = shutil.which("bwrap") is not None


# --------------------------------------------------------------------------------------------------------
# Limits and probing


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


def test_probe_rejects_unknown_mode():
    with pytest.raises(ValueError, match="sandbox mode must be one of"):
        sandbox.probe("docker")


def test_probe_none_warns_loudly():
    info = sandbox.probe("none")
    assert info.mode == "none" and not info.isolated
    banner = info.warning()
    assert banner is not None and "NOT sandboxed" in banner and "bubblewrap" in banner
    assert "sandbox disabled" in banner


def test_probe_auto_matches_machine():
    info = sandbox.probe("auto")
    if HAVE_BWRAP:
        # CI installs bubblewrap: the full sandbox must work there.
        assert info.mode == "bwrap" and info.isolated, info.describe()
        assert info.warning() is None
        if os.geteuid() == 0:
            assert info.drops_uid
    else:
        assert info.mode == "none" and info.warning() is not None
        assert any("not installed" in p for p in info.problems)


def test_sandbox_argv_hides_the_repository(tmp_path):
    work, conn = tmp_path / "w", tmp_path / "c"
    work.mkdir()
    conn.mkdir()
    (work / "data.csv").write_text("1,2\n")
    argv = sandbox.sandbox_argv("/usr/bin/bwrap", workdir=work, conn_dir=conn,
                                ro_paths=[course.REPO_ROOT / "dp_course"], limits=Limits(), as_root=True)
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"):
        assert flag in argv
    binds = [(argv[i], argv[i + 1], argv[i + 2]) for i in range(len(argv) - 2)
             if argv[i] in ("--bind", "--ro-bind")]
    sources = {Path(src) for _, src, _ in binds}
    assert course.REPO_ROOT not in sources and course.SOLUTIONS_DIR not in sources
    assert not any(src == course.REPO_ROOT or course.SOLUTIONS_DIR.is_relative_to(src) for src in sources)
    writable = [src for kind, src, _ in binds if kind == "--bind"]
    assert writable == [str(conn)], "the only writable host directory is the kernel's socket directory"
    assert (str(work / "data.csv")) in [src for kind, src, _ in binds if kind == "--ro-bind"]


# --------------------------------------------------------------------------------------------------------
# Real kernels


PROBE = r"""
import json, os, socket, resource, sys
out = {"uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
out["env_secret"] = os.environ.get("DPC_TEST_SECRET")
out["sees_repo_solutions"] = os.path.exists(SOLUTIONS)
out["sees_course"] = os.path.exists(COURSE)
out["sees_home"] = os.path.exists(os.path.expanduser("~root/.bashrc")) and os.access(os.path.expanduser("~root/.bashrc"), os.R_OK)
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
# fork bomb, measured: how many children can exist at once
pids, err = [], None
try:
    for _ in range(500):
        pid = os.fork()
        if pid == 0:
            import time; time.sleep(30); os._exit(0)
        pids.append(pid)
except OSError as e:
    err = type(e).__name__
out["forks"] = len(pids); out["fork_error"] = err
print("PROBE:" + json.dumps(out))
"""


async def _run_kernel(mode: str, code: str, limits: Limits, workdir: Path) -> tuple[str, Path, int | None]:
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    info = sandbox.probe(mode)
    base = Path(tempfile.mkdtemp(prefix="dpc-"))
    conn = base / "c"
    conn.mkdir()
    plan = sandbox.KernelPlan(mode=info.mode, bwrap=info.bwrap, drop_uid=info.drops_uid, workdir=str(workdir),
                              conn_dir=str(conn), ro_paths=(str(course.REPO_ROOT / "dp_course"),),
                              limits=limits.to_json(), log_file=str(base / "kernel.log"))
    plan_path = plan.write(base / "plan.json")
    km = AsyncKernelManager(transport="ipc", connection_file=str(conn / "k.json"))
    km._kernel_spec = KernelSpec(argv=[sys.executable, "-m", "autograder.sandbox", "launch", str(plan_path),
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
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == uid:
                    out.append(int(p.name))
            except OSError:
                pass
    return out


@pytest.fixture(scope="module")
def tcp_port():
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    yield srv.getsockname()[1]
    srv.close()


@pytest.mark.parametrize("mode", ["auto", "none"])
def test_kernel_inside_the_sandbox(mode, tmp_path, tcp_port):
    work = tmp_path / "w"
    work.mkdir()
    (work / "data.csv").write_text("1,2\n")
    fake_course = tmp_path / "course"
    fake_course.mkdir()
    limits = Limits(memory_mb=1024, max_processes=32, max_file_mb=2)
    code = (PROBE.replace("SOLUTIONS", repr(str(course.SOLUTIONS_DIR))).replace("COURSE", repr(str(fake_course)))
            .replace("PORT", str(tcp_port)))
    text, base, uid = asyncio.run(_run_kernel(mode, code, limits, work))
    out = json.loads(text.split("PROBE:", 1)[1].splitlines()[0])
    info = sandbox.probe(mode)
    # layers that hold everywhere: scrubbed environment, rlimits, own working copy
    assert out["env_secret"] is None, "the grader's environment must not reach the kernel"
    assert out["as_limit"] == 1024 * 1024 * 1024 and out["nproc_limit"] == 32
    assert out["fsize_ok"] is False, "RLIMIT_FSIZE (2 MB) must stop a 3 MB file"
    assert out["alloc_50mb"] and not out["alloc_1500mb"], "RLIMIT_AS (1 GiB) must stop a 1.5 GB allocation"
    assert out["cwd"] == str(work) and "data.csv" in out["files"]
    if info.drops_uid:
        assert out["uid"] >= 0x6B000000
        # RLIMIT_NPROC applies to a non-root uid: the fork bomb stops below the limit
        assert out["fork_error"] == "BlockingIOError" and out["forks"] < 32, out
    if info.isolated:
        assert out["tcp_loopback"] is False, "no network, not even the host's loopback"
        assert not out["sees_repo_solutions"] and not out["sees_course"] and not out["sees_home"]
        assert out["data_writable"] is False, "the assignment's files are read-only copies"
        assert out["tmp_write"] is True and not Path("/tmp/dpc-host-escape.txt").exists(), "/tmp is private"
    else:
        assert out["tcp_loopback"] is True and out["sees_repo_solutions"]  # what the warning is about
    # nothing of the kernel survives: the fork bomb's sleeping children are gone
    sandbox.cleanup(base)
    assert not base.exists()
    if uid is not None:
        assert _uid_processes(uid) == [], f"processes of the kernel's uid {uid} survived"
    Path("/tmp/dpc-host-escape.txt").unlink(missing_ok=True)


def test_cleanup_kills_escaped_processes(tmp_path):
    """Outside a pid namespace, a process that left the kernel's process group is killed through its uid."""
    if os.geteuid() != 0:
        # only root can switch to a dedicated uid; as a user, cleanup just removes the directory
        base = tmp_path / "b"
        base.mkdir()
        sandbox.cleanup(base)
        assert not base.exists()
        return
    import subprocess
    uid = 0x6B000000 + 4242
    base = tmp_path / "b"
    base.mkdir()
    (base / "kernel.uid").write_text(str(uid))
    proc = subprocess.Popen(["sleep", "60"], preexec_fn=sandbox._demote(uid), start_new_session=True)
    try:
        assert _uid_processes(uid) == [proc.pid]
        sandbox.cleanup(base)
        assert proc.wait(timeout=10) != 0
        assert _uid_processes(uid) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def test_launcher_usage_message(capsys):
    assert sandbox.main(["nonsense"]) == 2
    assert "usage" in capsys.readouterr().err


def test_kernel_plan_round_trip(tmp_path):
    plan = sandbox.KernelPlan(mode="none", bwrap=None, drop_uid=False, workdir="/w", conn_dir="/c",
                              ro_paths=("/a",), limits=Limits().to_json(), log_file="/l")
    assert sandbox.KernelPlan.read(plan.write(tmp_path / "p.json")) == plan
