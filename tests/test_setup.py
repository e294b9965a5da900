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
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
import yaml
from _lab_server import LabServer, free_port
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("run_py", ROOT / "run.py")
run_py = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run_py)
_BINDER_SPEC = importlib.util.spec_from_file_location("binder_link", ROOT / "tools" / "binder_link.py")
binder_link = importlib.util.module_from_spec(_BINDER_SPEC)
_BINDER_SPEC.loader.exec_module(binder_link)


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
    # the settings folder JupyterLab reads keeps the widgets' state in saved notebooks (issue 22 item 12)
    lab_overrides = json.loads((ROOT / "jupyter_config" / "lab_settings" / "overrides.json").read_text())
    assert lab_overrides["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
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


def test_environment_yml_pins_what_pyproject_pins_and_no_developer_tools():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _env_pins()
    for req in project["dependencies"]:
        m = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?([^;]*)(;.*)?", req.replace(" ", ""))
        name, spec = m.group(1).lower().replace("_", "-"), m.group(3)
        assert name in pins, f"{name} is in pyproject.toml but not in environment.yml"
        assert pins[name].split(";")[0] == spec, \
            f"{name}: pyproject.toml says {spec!r}, environment.yml says {pins[name]!r}"
    runtime = {re.match(r"[A-Za-z0-9_.\-]+", r).group(0).lower().replace("_", "-") for r in project["dependencies"]}
    for req in project["optional-dependencies"]["dev"]:
        name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower().replace("_", "-")
        if name not in runtime:
            assert name not in pins, f"environment.yml (Binder) installs the developer tool {name}: runtime only"


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
    # explorers still show after a lecture is saved and reopened (issue 22 item 12)
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
    assert (prefix / "etc/jupyter/jupyter_server_config.py").read_text() == \
        (ROOT / "jupyter_config/common/jupyter_server_config.py").read_text()


def test_readme_binder_badge_is_this_repositorys_or_says_how_to_make_it():
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index(binder_link.BEGIN):readme.index(binder_link.END)]
    assert "OWNER" not in readme and "<owner>/<repository>" not in readme, "a placeholder Binder link"
    repository = binder_link.setting(ROOT) or binder_link.remote(ROOT)
    if repository:
        assert binder_link.badge(repository) in block, "the badge is not this repository's: run.py binder --write"
    else:
        assert "run.py binder --write" in block and "mybinder.org/v2" not in block


@pytest.mark.parametrize("url", ["https://github.com/alice/dp-course.git", "https://github.com/alice/dp-course",
                                 "git@github.com:alice/dp-course.git", "ssh://git@github.com/alice/dp-course.git"])
def test_binder_link_comes_from_the_origin_remote(tmp_path, url):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "README.md").write_text(f"# x\n{binder_link.BEGIN}\nhow to\n{binder_link.END}\nrest\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", url], check=True)
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "binder", "--write", "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    link = "https://mybinder.org/v2/gh/alice/dp-course/HEAD?urlpath=lab/tree/notebooks/README.md"
    assert link in proc.stdout
    readme = (tmp_path / "README.md").read_text()
    assert f"{binder_link.BEGIN}\n[![Binder](https://mybinder.org/badge_logo.svg)]({link})\n{binder_link.END}" in readme
    assert readme.endswith("rest\n") and "how to" not in readme


def test_binder_link_setting_wins_and_is_checked(tmp_path):
    text = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text + '\n[tool.dp-course]\nrepository = "course-team/dp-2027"\n')
    assert binder_link.setting(tmp_path) == "course-team/dp-2027"
    (tmp_path / "pyproject.toml").write_text(text + '\n[tool.dp-course]\nrepository = "https://x/y"\n')
    with pytest.raises(ValueError, match=r"repository .* must be \"<owner>/<name>\".*'https://x/y'"):
        binder_link.setting(tmp_path)
    (tmp_path / "pyproject.toml").write_text(text)
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "binder_link.py"), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no GitHub `origin` remote" in proc.stderr


@pytest.mark.parametrize("path", ["run.py", ".ci/run", "postBuild"])
def test_entry_points_are_executable(path):
    assert os.access(ROOT / path, os.X_OK)


def test_postbuild_runs_and_binder_lab_starts_with_the_student_settings(tmp_path):
    """What repo2docker does after the conda environment, as far as this machine allows: postBuild runs in a fresh
    environment (a venv on top of the test environment, no index and no build isolation: nothing is downloaded),
    and the JupyterLab of that environment starts and serves the course's lab settings (Markdown opens rendered;
    every key of jupyter_config/lab_settings/overrides.json)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "artifacts", "__pycache__",
                                                              ".ipynb_checkpoints", "*.egg-info"))
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    site_packages = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        capture_output=True, text=True, check=True).stdout.strip())
    # the packages of environment.yml: the test environment's, as a plain path (its own .pth files, among them
    # its editable dp_course, are not read: postBuild's editable install is the one that counts)
    (site_packages / "zz_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # what conda puts into the env's prefix with JupyterLab and nbgrader: JupyterLab's application files (linked
    # from the test environment) and nbgrader's file enabling its server extensions (which postBuild overrides)
    lab = Path(sys.prefix) / "share" / "jupyter"
    conf_d = env_dir / "etc" / "jupyter" / "jupyter_server_config.d"
    conf_d.mkdir(parents=True)
    shutil.copy(Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json", conf_d)
    (env_dir / "share" / "jupyter" / "lab").mkdir(parents=True)
    for rel in ("lab/static", "lab/schemas", "lab/themes", "labextensions"):
        if (lab / rel).exists():
            (env_dir / "share" / "jupyter" / rel).symlink_to(lab / rel)
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}", "PIP_NO_INDEX": "1",
           "VIRTUAL_ENV": str(env_dir), "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)
    # nothing to download: the build backend (setuptools) comes from the environment, not from an isolated build
    (tmp_path / "pip.conf").write_text("[install]\nno-build-isolation = false\n")
    env["PIP_CONFIG_FILE"] = str(tmp_path / "pip.conf")
    proc = subprocess.run(["bash", "postBuild"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    overrides = json.loads((env_dir / "share/jupyter/lab/settings/overrides.json").read_text())
    wanted = json.loads((ROOT / "jupyter_config/lab_settings/overrides.json").read_text())
    for plugin, keys in wanted.items():
        assert {k: overrides[plugin][k] for k in keys} == keys, plugin
    where = subprocess.run([str(py), "-c", "import dp_course, sys; print(dp_course.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(repo)), where.stdout + where.stderr   # postBuild's editable install
    port = free_port()
    server = subprocess.Popen([str(py), "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                               "--IdentityProvider.token=binder-test", f"--ServerApp.root_dir={repo}",
                               *(["--allow-root"] if os.geteuid() == 0 else [])],
                              cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        settings, deadline = None, time.monotonic() + 120
        while settings is None and time.monotonic() < deadline and server.poll() is None:
            try:
                url = (f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/docmanager-extension:plugin"
                       "?token=binder-test")
                with urllib.request.urlopen(url, timeout=10) as reply:
                    settings = json.loads(reply.read())
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        if settings is None:
            server.terminate()
            pytest.fail(f"JupyterLab did not start within 120 s: {server.communicate(timeout=30)[1][-3000:]}")
        # the server applies overrides.json to the plugin's schema defaults
        default = settings["schema"]["properties"]["defaultViewers"].get("default", {})
        assert default.get("markdown") == "Markdown Preview", settings["schema"]["properties"]["defaultViewers"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token=binder-test", timeout=30) as reply:
            assert reply.status == 200 and b"JupyterLab" in reply.read()
        with pytest.raises(urllib.error.HTTPError, match="404"):      # students get no grading tools
            urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader?token=binder-test", timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=30)
