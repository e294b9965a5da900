"""``dp-course formgrade`` without a browser: reading mark schemes, refusing what is not a grading run, the
JupyterLab command and its environment, ``run.py lab --instructor [OUTPUT]``, and the grading page's exporter --
which shows the mark scheme while nbgrader's feedback, run with the same session configuration, never does.

The real-browser test is ``tests/browser/test_browser_formgrade.py``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jupyter_server_mathjax
import nbformat
import pytest
from nbgrader.server_extensions.formgrader import handlers as nbgrader_handlers
from traitlets.config import Config

from autograder.course import cells
from autograder import cli, demo
from autograder.formgrade import formgrade, formgrade_server
from autograder.course.course import REPO_ROOT, SOLUTIONS_DIR, autograde, make_course, nbgrader, submit
from autograder.formgrade.mark_scheme import (METADATA_KEY, MarkSchemeExporter, exporter_config, mark_schemes,
                                              split_mark_scheme)

pytestmark = pytest.mark.xdist_group("formgrade")  # one module fixture builds a course: one xdist worker

NAME = demo.SYNTHETIC_NAME
SCHEME_TOKEN = "MARK-SCHEME-TOKEN"
MODEL_TOKEN = "MODEL-ANSWER-TOKEN"
STUDENT_ANSWER = "STUDENT-ANSWER: less noise because the scale is sensitivity / epsilon."
Q4_SOURCE = (f"### BEGIN SOLUTION\n{MODEL_TOKEN}: a larger epsilon lets the output laws differ more.\n\n"
             f"**Mark scheme (2 points).**\n* 1 point – {SCHEME_TOKEN}: the ratio bound.\n* 1 point – less noise.\n"
             "### END SOLUTION")

SPEC = importlib.util.spec_from_file_location("run_py_formgrade", REPO_ROOT / "run.py")
run_py = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run_py)


# ---- reading mark schemes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source,scheme,model", [
    # the course's way: the scheme is the end of the model answer, from its heading on
    ("### BEGIN SOLUTION\nProof.\n\n**Mark scheme (2 points).**\n* 1 point - a\n### END SOLUTION",
     "**Mark scheme (2 points).**\n* 1 point - a", "Proof."),
    ("### BEGIN SOLUTION\nProof.\n\n## Mark scheme\n* all\n### END SOLUTION", "## Mark scheme\n* all", "Proof."),
    # nbgrader's way: a region of its own (anywhere in the cell)
    ("### BEGIN SOLUTION\nProof.\n### END SOLUTION\n### BEGIN MARK SCHEME\n* 2 points if ...\n### END MARK SCHEME",
     "* 2 points if ...", "Proof."),
    # no scheme: the model answer only; a cell that is all solution (no markers) is the model answer
    ("### BEGIN SOLUTION\nJust the proof.\n### END SOLUTION", "", "Just the proof."),
    ("A whole-cell answer.", "", "A whole-cell answer."),
    # "mark scheme" inside a sentence is not a heading
    ("### BEGIN SOLUTION\nNo mark scheme here, only prose.\n### END SOLUTION", "",
     "No mark scheme here, only prose."),
])
def test_split_mark_scheme(source, scheme, model):
    assert split_mark_scheme(source) == (scheme, model)


def test_split_mark_scheme_rejects_what_is_not_text():
    with pytest.raises(ValueError, match="source must be a str, got list"):
        split_mark_scheme(["### BEGIN SOLUTION"])


def test_every_written_answer_of_the_course_has_its_mark_scheme():
    """Each hand-graded cell in solutions/ yields a model answer and a scheme whose points match the cell's."""
    found = 0
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        manual = cells.manual_cells(nb)
        schemes = mark_schemes(nb)
        assert set(schemes) == set(manual), path.name
        for gid, ms in schemes.items():
            points = re.search(r"\((\d+(?:\.\d+)?) points?\)", ms.scheme)
            assert ms.scheme.startswith("**Mark scheme") and points, f"{path.name} {gid}: {ms.scheme[:80]!r}"
            assert float(points.group(1)) == ms.points, f"{path.name} {gid}: scheme and cell disagree on points"
            assert ms.model_answer and "Mark scheme" not in ms.model_answer and "### " not in ms.model_answer
            found += 1
    assert found >= 10, found


# ---- what OUTPUT may be ---------------------------------------------------------------------------------

def _fake_run(root: Path) -> Path:
    """An output folder with what formgrade looks for (an empty gradebook file)."""
    (root / "course").mkdir(parents=True)
    (root / "course" / "gradebook.db").write_bytes(b"")
    return root


def test_grading_course_accepts_a_grading_run(tmp_path):
    out = _fake_run(tmp_path / "grading")
    assert formgrade.grading_course(out) == (out / "course").resolve()


@pytest.mark.parametrize("make,message", [
    (lambda p: p / "missing", "no such folder"),
    (lambda p: p, "it has no course/gradebook.db (grade first: dp-course grade SUBMISSIONS -o"),
    (lambda p: _fake_run(p / "run") / "course", "that is the run's course folder; pass its parent"),
])
def test_grading_course_refuses_what_is_not_a_grading_run(tmp_path, make, message):
    with pytest.raises(ValueError, match="OUTPUT must be the output folder of a grading run") as exc:
        formgrade.grading_course(make(tmp_path))
    assert message in str(exc.value)


def test_grading_course_refuses_a_sealed_course(tmp_path):
    """A course sealed by a grading run (write bits removed: autograder.isolation.protect) is being graded: no second
    writer."""
    out = _fake_run(tmp_path / "grading")
    db = out / "course" / "gradebook.db"
    db.chmod(stat.S_IMODE(db.stat().st_mode) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        with pytest.raises(ValueError, match="is read-only: a grading run is in progress"):
            formgrade.grading_course(out)
    finally:
        db.chmod(0o600)


def test_grading_course_says_when_the_course_belongs_to_another_user(tmp_path, monkeypatch):
    """A run graded by another user (root: the course is private to it) cannot be read: say so, not a traceback.
    (Simulated: as root, permissions do not stop a read.)"""
    out = _fake_run(tmp_path / "grading")

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_file", denied)
    with pytest.raises(ValueError, match="this user may not read .* open the Formgrader as that user"):
        formgrade.grading_course(out)


def test_summary_counts_and_refuses_a_broken_gradebook(tmp_path, course):
    assert formgrade.summary(course) == formgrade.Summary(assignments=1, submissions=1, to_hand_grade=1)
    broken = _fake_run(tmp_path / "grading") / "course"
    (broken / "gradebook.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match=r"the gradebook .*gradebook.db cannot be read: "):
        formgrade.summary(broken)


# ---- the JupyterLab command ---------------------------------------------------------------------------

def test_lab_command_serves_the_course_on_the_loopback(tmp_path, monkeypatch):
    out = _fake_run(tmp_path / "grading")
    course = str((out / "course").resolve())
    # as from a desktop launcher: the environment's bin/ is not on PATH, and a user's config path is kept after ours
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "/somewhere/else")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    cmd = formgrade.lab_command(out, port=9123, headless=True)
    assert cmd.argv[:3] == [sys.executable, "-m", "jupyterlab"]
    for arg in (f"--ServerApp.root_dir={course}", "--ServerApp.ip=127.0.0.1", "--port=9123", "--no-browser",
                "--LabApp.default_url=/formgrader"):
        assert arg in cmd.argv, arg
    assert str(cmd.cwd) == course and cmd.url == "http://127.0.0.1:9123/formgrader"
    assert cmd.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)  # alembic, dp-course
    paths = cmd.env["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert paths == [str(formgrade.CONFIG_DIR), str(REPO_ROOT / "jupyter_config" / "common"), "/somewhere/else"]
    assert cmd.env[formgrade_server.COURSE_ENV] == course and "MPLBACKEND" not in cmd.env
    assert "--no-browser" not in formgrade.lab_command(out).argv


def test_lab_command_options_after_the_double_dash(tmp_path):
    out = _fake_run(tmp_path / "grading")
    cmd = formgrade.lab_command(out, port=9000, jupyter_args=["--", "--ServerApp.token=t", "--port=9001"])
    assert "--ServerApp.token=t" in cmd.argv and "--port=9001" in cmd.argv and "--port=9000" not in cmd.argv
    for fixed in ("--ServerApp.ip=0.0.0.0", "--ip=0.0.0.0", "--ServerApp.root_dir=/", "--notebook-dir=/"):
        with pytest.raises(ValueError, match=f"jupyter_args must not set {fixed.split('=')[0]}: a Formgrader session "
                                             "always serves OUTPUT/course on 127.0.0.1"):
            formgrade.lab_command(out, jupyter_args=[fixed])


@pytest.mark.parametrize("port", [0, 65536, -1, True, 8.5])
def test_lab_command_checks_the_port(tmp_path, port):
    with pytest.raises(ValueError, match=f"port must be an integer between 1 and 65535, got {port!r}"):
        formgrade.lab_command(_fake_run(tmp_path / "grading"), port=port)


def test_session_configuration_switches_the_formgrader_to_the_kit():
    config = (formgrade.CONFIG_DIR / "jupyter_server_config.json").read_text()
    assert '"nbgrader.server_extensions.formgrader": false' in config
    assert '"autograder.formgrade.formgrade_server": true' in config
    instructor = (REPO_ROOT / "jupyter_config" / "instructor" / "jupyter_server_config.json").read_text()
    assert '"nbgrader.server_extensions.formgrader": false' in instructor
    assert '"autograder.formgrade.formgrade_server": true' in instructor


def test_session_nbgrader_configuration(tmp_path, monkeypatch):
    """nbgrader in a formgrade session (as the Formgrader loads it): the course directory is OUTPUT/course even when
    the user's own configuration names another one, and the kit's settings are in force."""
    out = _fake_run(tmp_path / "grading")
    user = tmp_path / "user-config"
    user.mkdir()
    (user / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.root = '/elsewhere'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(user))
    env = formgrade.lab_command(out).env
    code = ("from nbgrader.apps.baseapp import NbGrader\n"
            "a = NbGrader(); a.load_cwd_config = False; a.load_config_file()\n"
            "print(a.config.CourseDirectory.root, a.config.ClearSolutions.text_stub, sep='|')")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{(out / 'course').resolve()}|YOUR ANSWER HERE", proc.stdout


# ---- the command lines ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,message", [
    (["formgrade"], "the following arguments are required: OUTPUT"),
    (["formgrade", "/nonexistent/grading"], "OUTPUT must be the output folder of a grading run"),
    (["formgrade", ".", "--port", "0"], "port must be an integer between 1 and 65535, got 0"),
    (["formgrade", ".", "--", "--ip=0.0.0.0"], "jupyter_args must not set --ip"),
    (["grade", "subs", "--", "--x"], "options after -- are for dp-course formgrade only"),
])
def test_formgrade_command_errors_exit_2(tmp_path, monkeypatch, argv, message, capsys):
    monkeypatch.chdir(tmp_path)
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    assert rc == 2
    assert message in capsys.readouterr().err


def test_formgrade_help_has_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["formgrade", "--help"])
    text = capsys.readouterr().out
    assert "examples:" in text and "dp-course formgrade grading/" in text and "127.0.0.1" in text


def test_run_py_lab_instructor_with_a_folder_is_dp_course_formgrade(tmp_path, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(run_py, "ensure_env", lambda extras=(): None)
    monkeypatch.setattr(run_py, "_exec", lambda argv, env=None: seen.update(argv=argv, env=env) or 0)
    monkeypatch.chdir(tmp_path)  # a relative OUTPUT is where the command was typed, not the repository
    run_py.main(["lab", "--instructor", "grading", "--headless", "--port", "9999", "--", "--ServerApp.token=t"])
    assert seen["argv"] == [str(run_py.BIN / "dp-course"), "formgrade", str(tmp_path / "grading"), "--port", "9999",
                            "--headless", "--", "--ServerApp.token=t"]
    # without a folder: the authoring session (no Formgrader), and a line saying what to pass instead
    run_py.main(["lab", "--instructor"])
    assert seen["argv"][1:3] == ["-m", "jupyterlab"]
    assert seen["env"]["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(REPO_ROOT / "jupyter_config" / "instructor")
    assert "python3 run.py lab --instructor OUTPUT" in capsys.readouterr().out


# ---- the grading page and the feedback -----------------------------------------------------------------

@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The toy assignment with a mark scheme for ``q4_answer``, graded by nbgrader for alice (full solution and a
    written answer)."""
    work = tmp_path_factory.mktemp("formgrade-course")
    path = demo.write_synthetic_assignment(work / "solutions")
    nbformat.write(cells.set_answer(nbformat.read(path, as_version=4), "q4_answer", Q4_SOURCE), path)
    root = make_course(work / "grading" / "course", [NAME], solutions_dir=work / "solutions")
    release = cells.student_version(root, NAME)
    full = cells.set_answer(cells.full_solution(release, nbformat.read(path, as_version=4)), "q4_answer",
                            STUDENT_ANSWER)
    submit(root, NAME, "alice", {NAME: full})
    autograde(root, NAME)
    return root


def _formgrader_config() -> Config:
    """What nbgrader's FormgradeExtension gives its exporter (``build_extra_config``)."""
    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [nbgrader_handlers.template_path]
    return config


def _resources(notebook: str = NAME) -> dict:
    return {"assignment_id": NAME, "notebook_id": notebook, "submission_id": "s1", "index": 0, "total": 1,
            "base_url": "", "student": "alice", "last_name": None, "first_name": None, "notebook_path": "x"}


def test_grading_page_shows_the_mark_scheme_and_leaves_the_notebook_alone(course):
    autograded = course / "autograded" / "alice" / NAME / f"{NAME}.ipynb"
    before = autograded.read_bytes()
    exporter = MarkSchemeExporter(course / "source", config=exporter_config(_formgrader_config()))
    html, _ = exporter.from_filename(str(autograded), resources=_resources())
    panel = html[html.index('class="panel panel-info dpc-mark-scheme" data-grade-id="q4_answer"'):]
    assert SCHEME_TOKEN in panel and MODEL_TOKEN in panel and "<summary>Model answer</summary>" in panel
    # below the student's answer and its comment box
    assert html.index(STUDENT_ANSWER.split(":")[0]) < html.index("q4_answer-comment") < html.index("dpc-mark-scheme")
    assert html.count("dpc-mark-scheme") == 1  # only the hand-graded cell has one
    assert autograded.read_bytes() == before and METADATA_KEY not in before.decode()


def test_grading_page_says_when_the_source_has_no_mark_scheme(course, tmp_path):
    exporter = MarkSchemeExporter(tmp_path / "no-sources", config=exporter_config(_formgrader_config()))
    html, _ = exporter.from_filename(str(course / "autograded" / "alice" / NAME / f"{NAME}.ipynb"),
                                     resources=_resources())
    assert "No mark scheme found" in html and SCHEME_TOKEN not in html
    assert exporter.schemes_for("..", "etc") is None  # never reads outside the source folder


def test_grading_page_of_every_lecture_shows_each_mark_scheme():
    """The course's own lectures through the grading page (each source rendered as a submission whose written
    answers say something else): one mark-scheme panel per written answer, with its heading, none missing."""
    exporter = MarkSchemeExporter(SOLUTIONS_DIR, config=exporter_config(_formgrader_config()))
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        manual = cells.manual_cells(nb)
        for gid in manual:
            nb = cells.set_answer(nb, gid, "A student's proof.")
        html, _ = exporter.from_notebook_node(nb, resources={**_resources(path.stem), "assignment_id": path.stem})
        panels = re.findall(r'class="panel panel-info dpc-mark-scheme" data-grade-id="([^"]+)"', html)
        assert panels == list(manual), path.name
        assert "No mark scheme found" not in html and html.count("<strong>Mark scheme (") == len(manual), path.name


def test_install_mark_schemes_swaps_only_the_grading_page_exporter(tmp_path):
    """The Formgrader's exporter is replaced by the mark-scheme one (its course's sources, MathJax served by the
    session); the Formgrader's configuration -- which nbgrader's generate_feedback also reads -- is not touched."""
    config = _formgrader_config()
    formgrader = SimpleNamespace(coursedir=SimpleNamespace(root=str(tmp_path), source_directory="source"),
                                 config=config)
    settings = {"nbgrader_formgrader": formgrader, "nbgrader_exporter": None, "base_url": "/base/"}
    exporter = formgrade_server.install_mark_schemes(settings)
    assert settings["nbgrader_exporter"] is exporter and exporter.source_dir == tmp_path / "source"
    assert exporter.template_name == "formgrade_mark_scheme"
    assert exporter.mathjax_url == "/base/" + formgrade_server.LOCAL_MATHJAX
    assert config.HTMLExporter.template_name == "formgrade" and "MarkSchemeExporter" not in config
    # the MathJax files that URL names are installed (jupyter-server-mathjax ships one configuration)
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    name = formgrade_server.LOCAL_MATHJAX.split("config=")[1].split(",")[0]
    assert (static / "MathJax.js").is_file() and (static / "config" / f"{name}.js").is_file()
    assert '"jupyter_server_mathjax": true' in (formgrade.CONFIG_DIR / "jupyter_server_config.json").read_text()


def test_nbgrader_feedback_in_a_formgrade_session_never_shows_the_mark_scheme(course, monkeypatch):
    """nbgrader's generate_feedback (what the Formgrader's button runs) with the session's configuration: the
    page exists and holds the student's answer, but neither the mark scheme nor the model answer."""
    env = formgrade.lab_command(course.parent).env
    for key in ("JUPYTER_CONFIG_PATH", formgrade_server.COURSE_ENV):
        monkeypatch.setenv(key, env[key])
    proc = nbgrader(["generate_feedback", NAME, "--force"], cwd=course, check=False)
    assert proc.returncode == 0, proc.stderr
    page = (course / "feedback" / "alice" / NAME / f"{NAME}.html").read_text()
    assert STUDENT_ANSWER.split(":")[0] in page
    assert SCHEME_TOKEN not in page and MODEL_TOKEN not in page and "dpc-mark-scheme" not in page
