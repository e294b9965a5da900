"""The set-up promises of the README: run.py (quiet, runtime-only for students), the student's and the
instructor's JupyterLab, the Binder environment, and consistent version pins."""

from __future__ import annotations

import asyncio
import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
import yaml
from _lab_server import LabServer
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("run_py", ROOT / "run.py")
run_py = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run_py)


def test_run_py_help_lists_the_commands():
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "--help"], capture_output=True, text=True,
                         check=True).stdout
    for command in ("python3 run.py lab", "python3 run.py test", "run.py lab --instructor", "python3 run.py site",
                    "python3 run.py lite"):
        assert command in out, command


def test_readme_gives_the_two_commands_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert "python3 run.py lab" in readme and "python3 run.py test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 run.py test" in ci


@pytest.fixture
def fake_venv(tmp_path, monkeypatch):
    """run.py pointed at an empty environment folder, with pip replaced by a recorder that prints 300 lines."""
    venv_dir = tmp_path / "venv"
    py = venv_dir / "bin" / "python"
    monkeypatch.setattr(run_py, "VENV", venv_dir)
    monkeypatch.setattr(run_py, "PY", py)
    monkeypatch.setattr(run_py, "STAMP", venv_dir / ".dp-course-stamp")
    monkeypatch.setattr(run_py, "SETUP_LOG", venv_dir / "setup.log")

    class Builder:
        def __init__(self, **kwargs):
            pass

        def create(self, path):
            py.parent.mkdir(parents=True)
            py.write_text("")

    monkeypatch.setattr(run_py.venv, "EnvBuilder", Builder)
    calls = []

    def pip(cmd, cwd=None, stdout=None, stderr=None):
        calls.append(cmd)
        for i in range(300):
            print(f"Collecting package-{i}", file=stdout)
        return pip.rc

    pip.rc = 0
    monkeypatch.setattr(run_py.subprocess, "call", pip)
    return calls, pip, venv_dir


def test_setup_is_one_line_with_pips_output_in_a_log(fake_venv, capsys):
    calls, _, venv_dir = fake_venv
    run_py.ensure_env()
    out = capsys.readouterr()
    assert len(out.out.strip().splitlines()) == 1 and "setup.log" in out.out and not out.err
    assert len((venv_dir / "setup.log").read_text().splitlines()) == 300
    assert calls[-1][-1] == str(ROOT), "students get the runtime dependencies only (no extras)"
    run_py.ensure_env()                     # current: nothing to do
    assert len(calls) == 1 and capsys.readouterr().out == ""
    run_py.ensure_env(("dev",))             # the test command adds the developer extras
    assert calls[-1][-1] == f"{ROOT}[dev]"
    run_py.ensure_env()                     # a superset is current for `lab`
    assert len(calls) == 2


def test_setup_failure_shows_the_end_of_the_log(fake_venv, capsys):
    calls, pip, _ = fake_venv
    pip.rc = 1
    with pytest.raises(SystemExit):
        run_py.ensure_env()
    err = capsys.readouterr().err
    assert "pip exit code 1" in err and "Collecting package-299" in err and "Collecting package-0\n" not in err


def test_chromium_is_installed_quietly_or_the_reason_is_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_py, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setattr(run_py, "APT_LOG", tmp_path / "apt.log")
    monkeypatch.delenv("DP_COURSE_NO_APT", raising=False)
    monkeypatch.setattr(run_py, "_can_apt", lambda: None)
    run_py.ensure_chromium()
    assert "cannot install it" in capsys.readouterr().out
    calls = []

    def apt(cmd, stdout=None, stderr=None, env=None):
        calls.append(cmd)
        print("Reading package lists...", file=stdout)
        return 0

    monkeypatch.setattr(run_py, "_can_apt", lambda: [])
    monkeypatch.setattr(run_py.subprocess, "call", apt)
    run_py.ensure_chromium()
    assert calls == [["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]]
    out = capsys.readouterr().out
    assert "installing chromium" in out and "could not install chromium" in out  # the fake left no binary
    assert "Reading package lists" in (tmp_path / "apt.log").read_text()


def test_lab_command_line_and_config_folders(monkeypatch):
    seen = {}
    monkeypatch.setattr(run_py, "ensure_env", lambda extras=(): None)
    monkeypatch.setattr(run_py, "_exec", lambda argv, env=None: seen.update(argv=argv, env=env) or 0)
    run_py.main(["lab", "--headless", "--port", "9999", "--", "--ServerApp.root_dir=/elsewhere"])
    argv, env = seen["argv"], seen["env"]
    assert "--ServerApp.root_dir=/elsewhere" in argv and f"--ServerApp.root_dir={ROOT}" not in argv
    assert "--port=9999" in argv and "--ServerApp.ip=127.0.0.1" in argv
    assert f"--LabApp.app_settings_dir={ROOT / 'jupyter_config' / 'lab_settings'}" in argv
    paths = env["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert paths[:2] == [str(ROOT / "jupyter_config" / "student"), str(ROOT / "jupyter_config" / "common")]
    assert "MPLBACKEND" not in env
    run_py.main(["lab", "--instructor"])
    assert seen["env"]["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(ROOT / "jupyter_config" / "instructor")


async def _terminal_says(server: LabServer, command: str, marker: str, timeout: float = 60) -> str:
    name = server.api("POST", "terminals")["name"]
    url = f"ws://127.0.0.1:{server.port}/terminals/websocket/{name}?token={server.token}"
    conn = await websocket_connect(url)
    text = ""
    try:
        await conn.write_message(json.dumps(["stdin", command + "\r"]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while marker not in text.split(command)[-1] and loop.time() < deadline:
            msg = await asyncio.wait_for(conn.read_message(), timeout=max(0.1, deadline - loop.time()))
            if msg is None:
                break
            kind, *payload = json.loads(msg)
            if kind == "stdout":
                text += payload[0]
    finally:
        conn.close()
        server.api("DELETE", f"terminals/{name}")
    return text


def _get(server: LabServer, path: str) -> tuple[int, str]:
    req = urllib.request.Request(f"{server.base}{path}", headers={"Authorization": f"token {server.token}"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


@pytest.mark.parametrize("instructor", [False, True], ids=["student", "instructor"])
def test_lab_session_as_student_and_as_instructor(tmp_path, instructor):
    """One `run.py lab --headless` each, started without a terminal and without the venv on PATH (as from a
    desktop launcher): the terminal finds dp-course; the landing page is the lecture index; students do not
    get nbgrader's tools (browser extension disabled, server handlers absent), instructors do, but without a
    grading run no Formgrader (its page says what to pass; no gradebook is written into the served folder:
    `dp-course formgrade` is tested in tests/test_formgrade.py and tests/browser/); no "No nbgrader_config.py"
    warning; stopping run.py stops the server."""
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    (course / "notebooks" / "README.md").write_text("# Lectures\n")
    server = LabServer(root_dir=course, work=tmp_path)
    repo_db = ROOT / "gradebook.db"  # where the instructor configuration's course directory points
    repo_db_before = repo_db.stat().st_mtime_ns if repo_db.exists() else None
    server.start(instructor=instructor)
    try:
        text = asyncio.run(_terminal_says(server, "command -v dp-course; echo DONE-$?", "DONE-"))
        assert "DONE-0" in text and str(ROOT / ".venv" / "bin" / "dp-course") in text, text
        status, page = _get(server, "/lab")
        assert status == 200
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                      page, re.S).group(1))
        with urllib.request.urlopen(f"{server.base}/?token={server.token}", timeout=20) as r:
            assert r.url.split("?")[0].endswith("/lab/tree/notebooks/README.md"), r.url   # the landing page
        nbgrader_off = "@jupyter/nbgrader" in config.get("disabledExtensions", [])
        formgrader, body = _get(server, "/formgrader")
        assert formgrader == 404
        if instructor:
            assert not nbgrader_off and "python3 run.py lab --instructor grading/" in body, body[:500]
            assert _get(server, "/formgrader/gradebook")[0] == 404
        else:
            assert nbgrader_off and "dp-course formgrade" not in body
        assert not list(course.rglob("gradebook.db")), "a Formgrader without a grading run wrote a gradebook"
        assert (repo_db.stat().st_mtime_ns if repo_db.exists() else None) == repo_db_before, \
            "a Formgrader without a grading run wrote the repository's gradebook.db"
        assert "No nbgrader_config.py file found" not in server.log()
        pid = server.proc.pid
    finally:
        server.stop()
    assert server.proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


# --------------------------------------------------------------------------------------------------------
# Binder (repo2docker): environment.yml and postBuild
# --------------------------------------------------------------------------------------------------------

def _environment() -> dict:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert isinstance(env, dict) and isinstance(env.get("dependencies"), list)
    return env


def _env_pins() -> dict[str, str]:
    pins = {}
    for entry in _environment()["dependencies"]:
        for spec in entry["pip"] if isinstance(entry, dict) else [entry]:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*([<>=!~].*)?", spec)
            assert m, f"environment.yml: cannot read {spec!r}"
            pins[m.group(1).lower().replace("_", "-")] = (m.group(2) or "").replace(" ", "")
    return pins


def test_environment_yml_is_a_repo2docker_conda_environment():
    env = _environment()
    assert env["channels"] == ["conda-forge"]
    assert "pip" in env["dependencies"]
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    version = tuple(int(x) for x in python.split("=")[1].split("."))
    needed = re.match(r">=\s*(\d+)\.(\d+)", tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                      ["requires-python"])
    assert version >= (int(needed.group(1)), int(needed.group(2)))
    assert os.access(ROOT / "postBuild", os.X_OK)
    post = (ROOT / "postBuild").read_text()
    assert "pip install --no-deps -e ." in post and "tools/install_jupyter_config.py" in post


def test_environment_yml_pins_what_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    pins = _env_pins()
    for req in wanted:
        m = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?(.*)", req.replace(" ", ""))
        name, spec = m.group(1).lower().replace("_", "-"), m.group(3)
        if name == project["name"]:
            continue      # the project itself (an extra of it): postBuild installs it
        assert name in pins, f"{name} is in pyproject.toml but not in environment.yml"
        assert pins[name] == spec, f"{name}: pyproject.toml says {spec!r}, environment.yml says {pins[name]!r}"


def _notebook_imports() -> set[str]:
    """Top-level modules imported by any cell of any notebook in notebooks/ and solutions/."""
    modules = set()
    for path in [*ROOT.glob("notebooks/*/*.ipynb"), *ROOT.glob("solutions/*/*.ipynb")]:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Import):
                    modules |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    return modules


def test_environment_yml_lists_every_package_the_notebooks_import():
    modules = _notebook_imports()
    assert {"numpy", "dp_course"} <= modules, "the notebooks were not found or not parsed"
    distributions = importlib.metadata.packages_distributions()
    pins = _env_pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    for module in sorted(modules - set(sys.stdlib_module_names)):
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        assert dists, f"the notebooks import {module!r}, which is not installed in the test environment"
        if project in dists:
            continue      # dp_course: installed by postBuild
        assert dists & set(pins), f"the notebooks import {module!r} (from {sorted(dists)}): add it to environment.yml"


def test_postbuild_installs_the_student_jupyterlab_settings(tmp_path):
    prefix = tmp_path / "env"
    page = prefix / "etc" / "jupyter" / "labconfig" / "page_config.json"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps({"disabledExtensions": {"other": True}, "keep": 1}))
    subprocess.run([sys.executable, str(ROOT / "tools" / "install_jupyter_config.py"), "--prefix", str(prefix)],
                   check=True, capture_output=True)
    merged = json.loads(page.read_text())
    assert merged == {"disabledExtensions": {"other": True, "@jupyter/nbgrader": True}, "keep": 1}
    server = json.loads((prefix / "etc/jupyter/jupyter_server_config.d/zz-dp-course.json").read_text())
    assert not any(server["ServerApp"]["jpserver_extensions"].values())
    # loaded after nbgrader's own conf.d file, so it wins
    assert sorted(["nbgrader.json", "zz-dp-course.json"])[-1] == "zz-dp-course.json"
    overrides = json.loads((prefix / "share/jupyter/lab/settings/overrides.json").read_text())
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Markdown Preview"
    assert (prefix / "etc/jupyter/jupyter_server_config.py").read_text() == \
        (ROOT / "jupyter_config/common/jupyter_server_config.py").read_text()


def test_readme_has_a_binder_badge_that_opens_the_lectures():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"\[!\[[^\]]*Binder[^\]]*\]\(https://mybinder\.org/badge_logo\.svg\)\]\((https://mybinder\.org/v2/"
                  r"gh/[^)\s]+)\)", readme)
    assert m, "README needs a Binder badge"
    assert m.group(1).endswith("?urlpath=lab/tree/notebooks/README.md")


@pytest.mark.parametrize("path", ["run.py", ".ci/run", "postBuild"])
def test_entry_points_are_executable(path):
    assert os.access(ROOT / path, os.X_OK)
