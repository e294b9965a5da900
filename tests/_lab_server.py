"""A course JupyterLab server for tests: ``run.py lab --headless`` (as a student, or ``--instructor``) on a free
loopback port, serving a folder of the test's choosing, with no user configuration of this machine; and
``dp-course formgrade OUTPUT --headless`` the same way (:class:`FormgradeServer`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    """``run.py lab --headless`` serving ``root_dir`` (a copy of the course) on a free loopback port."""

    root_dir: Path
    work: Path
    port: int = field(default_factory=free_port)
    token: str = "dp-course-browser-test"
    proc: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The server's environment: no user configuration of this machine, notebook windowing off (so every
        cell is in the page), nothing else changed from a student's session."""
        settings = self.work / "user-settings"
        tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True, exist_ok=True)
        tracker.write_text(json.dumps({"windowingMode": "none"}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
        # as from a desktop launcher: the environment's bin/ is not on PATH (run.py must see to it)
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if d and not Path(d).resolve().is_relative_to(ROOT / ".venv"))
        env.update(JUPYTER_CONFIG_DIR=str(self.work / "jupyter-config"), JUPYTER_RUNTIME_DIR=str(self.work / "rt"),
                   JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(self.work / "ws"),
                   PYTHONDONTWRITEBYTECODE="1")
        return env

    def start(self, timeout: float = 120, instructor: bool = False) -> None:
        log = open(self.work / "server.log", "w")  # noqa: SIM115 - closed with the server
        # stdout is a file, not a terminal: JupyterLab then opens login shells unless configured otherwise
        mode = ["--instructor"] if instructor else []
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run.py"), "lab", "--headless", *mode, "--port", str(self.port), "--",
             f"--ServerApp.token={self.token}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root_dir}"],
            cwd=ROOT, env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                self.api("GET", "status")
                return
            time.sleep(0.5)
        raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def log(self) -> str:
        return (self.work / "server.log").read_text(errors="replace")

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-n:])

    def api(self, method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            data = r.read()
        return json.loads(data) if data else None

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # kernels and terminals live in the server's session: nothing may outlive it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


class FormgradeServer(LabServer):
    """``dp-course formgrade OUTPUT --headless`` on a free loopback port (the environment of
    :meth:`LabServer.env`: no user configuration, the environment's ``bin/`` not on PATH).  ``root_dir`` is
    ``OUTPUT/course``; start it with :meth:`start_formgrade`."""

    def start_formgrade(self, output: Path, timeout: float = 120) -> None:
        log = open(self.work / "server.log", "w")  # noqa: SIM115 - closed with the server
        exe = Path(sys.executable).with_name("dp-course")
        self.proc = subprocess.Popen(
            [str(exe), "formgrade", str(output), "--headless", "--port", str(self.port), "--",
             f"--ServerApp.token={self.token}", "--ServerApp.port_retries=0"],
            cwd=self.work, env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dp-course formgrade exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "status")
                return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"dp-course formgrade did not answer within {timeout:.0f} s:\n{self.log_tail()}")

def copy_course(dest: Path) -> Path:
    """A copy of what a student's JupyterLab serves: the student notebooks and the instructor sources."""
    for name in ("notebooks", "solutions"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest
