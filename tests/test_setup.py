"""The set-up promises of the README: run.py, the headless JupyterLab, and consistent version pins."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_py_help_lists_both_readme_commands():
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "python3 run.py lab" in out and "python3 run.py test" in out


def test_readme_gives_the_two_commands_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert "python3 run.py lab" in readme and "python3 run.py test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 run.py test" in ci


def test_headless_lab_serves_the_course():
    """`python3 run.py lab --headless` starts a server that lists the student notebooks."""
    port, token = _free_port(), "dp-course-test"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(ROOT / ".venv" / "test-runtime"))
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "lab", "--headless", "--port", str(port),
                             "--", f"--ServerApp.token={token}", "--ServerApp.port_retries=0"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        listing = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/api/contents/notebooks?token={token}"
                with urllib.request.urlopen(url, timeout=2) as r:
                    listing = json.load(r)
                break
            except OSError:
                time.sleep(0.5)
        assert listing is not None, "JupyterLab did not start within 90 s"
        names = {item["name"] for item in listing["content"]}
        assert "README.md" in names and any(re.match(r"\d\d_", n) for n in names)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10) as r:
            assert r.status == 200 and b"JupyterLab" in r.read()
        # run.py replaced itself with JupyterLab: stopping the process we started stops the server
        proc.terminate()
        assert proc.wait(timeout=30) is not None
        assert not _session_alive(proc.pid), "JupyterLab outlived `run.py lab` being stopped"
    finally:
        if proc.poll() is None or _session_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _session_alive(sid: int) -> bool:
    """Is any process left in session ``sid`` (the test started run.py as a session leader)?"""
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                return True
    return False


def _env_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+)\s*([<>=!~].*)?$", line)
        if m and m.group(1) not in {"pip", "python"}:
            pins[m.group(1).lower()] = (m.group(2) or "").replace(" ", "")
    return pins


def test_environment_yml_pins_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    pins = _env_pins()
    for req in wanted:
        m = re.match(r"([A-Za-z0-9_.\-]+)(.*)", req.replace(" ", ""))
        name, spec = m.group(1).lower(), m.group(2)
        assert name in pins, f"{name} is in pyproject.toml but not in environment.yml"
        assert pins[name] == spec, f"{name}: pyproject.toml says {spec!r}, environment.yml says {pins[name]!r}"


@pytest.mark.parametrize("path", ["run.py", ".ci/run", "postBuild"])
def test_entry_points_are_executable(path):
    assert os.access(ROOT / path, os.X_OK)
