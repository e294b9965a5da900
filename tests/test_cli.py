"""The ``dp-course`` command line (autograder.cli): help with examples, exit codes, and each command end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder import cli, demo
from autograder.course import course
from autograder.isolation import isolation

pytestmark = pytest.mark.xdist_group("cli")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME


def test_top_level_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for cmd in ("release", "grade", "feedback", "check", "demo"):
        assert cmd in text


@pytest.mark.parametrize("cmd", ["release", "grade", "feedback", "check", "demo"])
def test_subcommand_help_has_examples(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([cmd, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and f"dp-course {cmd}" in text


def test_installed_entry_point():
    exe = Path(sys.executable).with_name("dp-course")
    assert exe.is_file(), "pip install -e . creates the dp-course script (pyproject [project.scripts])"
    proc = subprocess.run([str(exe), "grade", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--workers" in proc.stdout


@pytest.mark.parametrize("argv,code,message", [
    (["grade"], 2, "the following arguments are required: SUBMISSIONS"),
    (["grade", "/nonexistent/subs"], 2, "submissions must be an existing folder"),
    (["grade", ".", "--workers", "0"], 2, "workers must be an integer >= 1"),
    (["grade", ".", "--cell-timeout", "0"], 2, "cell_timeout must be a finite number >= 0.5"),
    (["check", "/nonexistent.ipynb"], 2, "notebook must be an existing .ipynb file"),
    (["demo", "--sandbox", "docker"], 2, "invalid choice"),
    (["frobnicate"], 2, "invalid choice"),
])
def test_bad_arguments_exit_2(argv, code, message, capsys):
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    assert rc == code
    assert message in capsys.readouterr().err


def test_grade_and_check_commands(toy, tmp_path, capsys, monkeypatch, grading_sandbox):
    sols, crs, full, release = toy
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / f"alice_{NAME}.ipynb").write_text(nbformat.writes(full))
    (subs / f"bob_{NAME}.ipynb").write_text(nbformat.writes(release))
    (subs / "notes.txt").write_text("x")
    rc = cli.main(["grade", str(subs), "-o", str(tmp_path / "out"), "--solutions", str(sols), "--workers", "2",
                   "--cell-timeout", "10", "--no-progress", *(["--no-sandbox"] if grading_sandbox == "none" else [])])
    out = capsys.readouterr().out
    assert rc == 0
    protection = next(line for line in out.splitlines() if line.startswith("protection: "))
    assert ("sandbox: bubblewrap" in protection) == (grading_sandbox == "bwrap") and "course directory:" in protection
    assert any(line.split()[:4] == ["alice", NAME, "5", "7"] for line in out.splitlines())
    assert any(line.split()[:4] == ["bob", NAME, "0", "7"] for line in out.splitlines())
    assert "report:" in out and "1 file(s) could not be matched" in out
    # the student side, on the released notebooks only
    notebooks = tmp_path / "notebooks"
    shutil.copytree(crs / "release" / NAME, notebooks / NAME)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cli.main(["check", str(subs / f"alice_{NAME}.ipynb"), "--notebooks", str(notebooks)]) == 0
    assert "Visible tests passed: 5 of 5" in capsys.readouterr().out
    assert cli.main(["check", str(subs / f"bob_{NAME}.ipynb"), "--notebooks", str(notebooks)]) == 1
    assert "[FAIL] ex1_unit" in capsys.readouterr().out


def test_demo_runs_quickly_and_grades_the_sample_class(tmp_path, capsys, grading_sandbox):
    t0 = time.monotonic()
    rc = cli.main(["demo", "--synthetic", "--dir", str(tmp_path), "--cell-timeout", "4"])
    elapsed = time.monotonic() - t0
    out = capsys.readouterr().out
    assert rc == 0 and elapsed < 180, elapsed
    assert "report:" in out and str(tmp_path / "graded" / "report.html") in out
    results = {r["student"]: r for r in json.loads((tmp_path / "graded" / "results.json").read_text())["results"]}
    assert set(results) == {"ada", "bert", "cleo", "dave", "mallory1", "mallory2", "mallory3", "mallory4",
                            "mallory5"}
    auto = {s: sum(v[0] or 0 for k, v in r["exercises"].items() if k != "q4_answer") for s, r in results.items()}
    assert auto["ada"] == 5 and auto["bert"] == 0 and auto["dave"] == 0
    assert auto["cleo"] == 2  # exercise 1 done, exercises 2 and 3 left as stubs
    for s in ("mallory1", "mallory2", "mallory3", "mallory4", "mallory5"):
        r = results[s]
        assert r["exercises"]["ex1_unit"][0] == 0 and r["exercises"]["ex1_scaling"][0] == 0, s
        assert r["events"], s   # each hostile one carries a reason
    kinds = {e["kind"] for e in results["dave"]["events"]}
    assert "invalid_json" in kinds
    # each line shows the expected score beside the actual one; the cell limit left room for the imports
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] and line.split()[0] in results}
    assert lines["ada"].split()[-4:] == ["5", "5", "as", "expected"], out
    assert "0 to 3" in lines["mallory1"] and "as expected" in lines["mallory1"], out
    assert "every score is as expected" in out
    assert "the lecture's imports took" in out and "each cell may run" in out


def test_demo_expectations_and_setup_time(toy):
    sols, crs, full, release = toy
    made = {"ada": "", "bert": "", "cleo": "", "dave": "", "mallory1": ""}
    assert demo.expected_scores(release, made) == {"ada": (5, 5), "bert": (0, 0), "cleo": (2, 2), "dave": (0, 0),
                                                   "mallory1": (0, 3)}
    source = nbformat.read(sols / NAME / f"{NAME}.ipynb", as_version=4)
    t = demo.measure_setup(source)
    assert 0 < t < 120
    source.cells[1].source = "%matplotlib inline\nimport no_such_module_here"
    with pytest.raises(RuntimeError, match="No module named 'no_such_module_here'"):
        demo.measure_setup(source)


def test_help_documents_the_course_folders_and_the_opt_out(capsys):
    with pytest.raises(SystemExit):
        cli.main(["grade", "--help"])
    text = capsys.readouterr().out
    assert "--solutions DIR" in text and "--no-sandbox" in text and "UNSAFE" in text
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    assert "--notebooks DIR" in capsys.readouterr().out


def test_grade_refuses_without_a_sandbox(toy, tmp_path, monkeypatch, capsys):
    """Where no sandbox works, grading other people's code stops before any of it runs, and says what to do."""
    sols, crs, full, release = toy
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / f"alice_{NAME}.ipynb").write_text(nbformat.writes(full))
    bare = isolation.SandboxInfo("none", None, None, False, False, False, False, False, False,
                                 ("system bubblewrap /usr/bin/bwrap: cannot create a sandbox here: bwrap: No "
                                  "permissions to create new namespace",))
    monkeypatch.setattr(isolation, "probe", lambda mode="auto": bare)
    rc = cli.main(["grade", str(subs), "-o", str(tmp_path / "out"), "--solutions", str(sols), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "student code cannot be sandboxed on this machine" in err
    assert "No permissions to create new namespace" in err and "--no-sandbox" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists(), "nothing ran"


def test_course_folder_lookup(tmp_path, monkeypatch):
    empty = tmp_path / "installed"   # where the package lives after `pip install .`: no solutions/ next to it
    empty.mkdir()
    monkeypatch.setattr(course, "REPO_ROOT", empty)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"--solutions must be a folder .* Pass --solutions DIR"):
        course.course_folder("solutions")
    demo.write_synthetic_assignment(tmp_path / "solutions")   # ./solutions of the course in the current folder
    assert course.course_folder("solutions") == (tmp_path / "solutions").resolve()
    assert course.course_folder("solutions", tmp_path / "solutions") == (tmp_path / "solutions").resolve()
    with pytest.raises(ValueError, match="--notebooks must be a folder"):
        course.course_folder("notebooks", tmp_path / "nowhere")


def test_installed_package_gives_clear_errors(tmp_path):
    """The kit installed without its repository (as `pip install .` lays it out): no solutions/ or notebooks/ next
    to the package.  `grade` and `check` say what to pass; nothing ends in a traceback."""
    site = tmp_path / "site"
    for pkg in ("autograder", "dp_course"):
        shutil.copytree(course.REPO_ROOT / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    (work / "subs").mkdir(parents=True)
    run = (f"import sys; sys.path.insert(0, {str(site)!r}); import autograder.cli as c; "
           f"assert c.__file__.startswith({str(site)!r}); raise SystemExit(c.main(sys.argv[1:]))")
    for argv, message in [(["grade", "subs"], "--solutions must be a folder of instructor sources"),
                          (["check", "x.ipynb"], "--notebooks must be a folder of released student notebooks"),
                          (["release"], "run it from a checkout")]:
        proc = subprocess.run([sys.executable, "-c", run, *argv], cwd=work, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# ---- errors before any set-up work (issue 21) -------------------------------------------------------------


def _toy_zip(path: Path, names: list[str]) -> Path:
    import zipfile
    with zipfile.ZipFile(path, "w") as zf:
        for n in names:
            zf.writestr(n, "{}")
    return path


@pytest.mark.parametrize("case,message", [
    ("missing", "submissions must be an existing folder or .zip file, got"),
    ("bad regex", "student_pattern must be a regular expression (--student-pattern) with a named group"),
    ("no group", "student_pattern must contain a named group (?P<student>...) (--student-pattern), got '^([a-z]+)_'"),
    ("zip of nothing", "submissions must hold at least one notebook of a lecture being graded (00_toy.ipynb)"),
    ("folder of nothing", "submissions must hold at least one notebook of a lecture being graded (00_toy.ipynb)"),
    ("bad due", "--due must be LECTURE=YYYY-MM-DDTHH:MM"),
    ("due of another lecture", "due (--due) must name a lecture being graded, one of ['00_toy'], got '99_x'"),
])
def test_input_errors_come_before_any_set_up(case, message, tmp_path, capsys, monkeypatch):
    """Each mistake exits 2 with a message naming the parameter and the value, before the course is built or
    the sandbox probed (both are made to fail loudly here, so reaching them fails the test)."""
    sols = tmp_path / "solutions"
    demo.write_synthetic_assignment(sols)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / f"alice_{NAME}.ipynb").write_text("{}")
    args = {"missing": [str(tmp_path / "nowhere")],
            "bad regex": [str(subs), "--student-pattern", "(?P<student>[a-z"],
            "no group": [str(subs), "--student-pattern", "^([a-z]+)_"],
            "zip of nothing": [str(_toy_zip(tmp_path / "w.zip", ["alice_week3.ipynb", "notes/readme.txt"]))],
            "folder of nothing": [str(_folder(tmp_path / "empty", ["bob_week3.ipynb", "readme.txt"]))],
            "bad due": [str(subs), "--due", f"{NAME}=next friday"],
            "due of another lecture": [str(subs), "--due", "99_x=2026-10-01T12:00"]}[case]

    def too_far(*a, **k):
        raise AssertionError("set-up work started before the input was checked")

    monkeypatch.setattr(isolation, "probe", too_far)
    monkeypatch.setattr("autograder.run.grading.prepare_course", too_far)  # the course set-up (migration)
    t0 = time.monotonic()
    try:
        rc = cli.main(["grade", *args, "--solutions", str(sols), "-o", str(tmp_path / "out"), "--no-progress"])
    except SystemExit as exc:  # argparse (--due's format)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err, err
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "out").exists()
    if case == "zip of nothing":
        assert "alice_week3.ipynb" in err


def _folder(path: Path, names: list[str]) -> Path:
    path.mkdir()
    for n in names:
        (path / n).write_text("{}")
    return path


def _run_py(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(course.REPO_ROOT / "run.py"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_run_py_course_help_is_dp_course_help(tmp_path):
    proc = _run_py(["course", "--help"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: dp-course"), proc.stdout + proc.stderr
    for cmd in ("release", "grade", "report", "check", "demo", "student-copy"):
        assert cmd in proc.stdout
    proc = _run_py(["course", "grade", "--help"], tmp_path)
    assert proc.returncode == 0 and "usage: dp-course grade" in proc.stdout and "--due" in proc.stdout


def test_run_py_course_paths_are_relative_to_where_it_is_typed(tmp_path):
    proc = _run_py(["course", "report", "grading"], tmp_path)  # no such folder here (nor in the repository)
    assert proc.returncode == 2 and f"got '{tmp_path / 'grading'}'" in proc.stderr, proc.stderr
    proc = _run_py(["course", "student-copy", "for-students"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "for-students" / "notebooks").is_dir()
    assert not (course.REPO_ROOT / "for-students").exists()
