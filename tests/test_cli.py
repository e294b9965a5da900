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

from adversarial import hostile
from autograder import cli, demo

pytestmark = pytest.mark.xdist_group("cli")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME


def test_top_level_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for cmd in ("release", "grade", "check", "demo"):
        assert cmd in text


@pytest.mark.parametrize("cmd", ["release", "grade", "check", "demo"])
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


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return hostile.toy(tmp_path_factory.mktemp("cli"))


def test_grade_and_check_commands(toy, tmp_path, capsys, monkeypatch):
    sols, crs, full, release = toy
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / f"alice_{NAME}.ipynb").write_text(nbformat.writes(full))
    (subs / f"bob_{NAME}.ipynb").write_text(nbformat.writes(release))
    (subs / "notes.txt").write_text("x")
    rc = cli.main(["grade", str(subs), "-o", str(tmp_path / "out"), "--solutions", str(sols), "--workers", "2",
                   "--cell-timeout", "10", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
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


def test_demo_runs_quickly_and_grades_the_sample_class(tmp_path, capsys):
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
