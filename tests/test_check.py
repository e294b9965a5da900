"""Student self-check (autograder.check.checking): the grader's execution and visible tests, never the hidden ones.

The check course is built from the *released* notebooks only; a notebook that games the visible tests passes
the check although it would fail the hidden tests when graded -- which is how we know the hidden tests are not
there.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from adversarial import hostile
from autograder.course import cells
from autograder.check import checking
from autograder import cli, demo
from autograder.isolation import sandbox
from autograder.check.checking import check_notebook, find_assignment
from autograder.intake.events import EventKind
from autograder.check.plaintext import markdown_to_text
from autograder.course.limits import Limits

pytestmark = pytest.mark.xdist_group("check")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=10, notebook_timeout=60)
# Right on the visible inputs only: passes the visible tests of exercise 1, fails its hidden one.
GAMED_EX1 = ("def laplace_scale(sensitivity, epsilon):\n"
             "    return {(1.0, 1.0): 1.0, (2.0, 0.5): 4.0}.get((sensitivity, epsilon), 0.0)")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("check")
    sols, crs, full, release = hostile.toy(base)
    notebooks = base / "notebooks"
    shutil.copytree(crs / "release" / NAME, notebooks / NAME)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
    yield base, notebooks, full, release
    mp.undo()


def _save(base: Path, name: str, nb) -> Path:
    path = base / name
    path.write_text(nbformat.writes(nb))
    return path


WRONG_EX3 = "def count_above(values, threshold):\n    return 0"
PATCH_EX2 = ("def rr_keep_probability(epsilon):\n    return 0.3\n"
             "import math\nvars(math)['isclose'] = lambda *a, **k: True")
OTHER_TYPES = [
    # a correct answer of another plain type: the codec carries it, as one kernel would
    ("from fractions import Fraction\ndef count_above(values, threshold):\n"
     "    return Fraction(sum(v > threshold for v in values))", True, ""),
    ("def count_above(values, threshold):\n    return (v for v in values if v > threshold)", False,
     "StudentCodeError: count_above returned a generator: return a list instead (list(...) or a list "
     "comprehension [...])"),
    # the student's warning comes back to the test, which (like nbgrader in one kernel) fails on stderr
    ("import warnings\ndef count_above(values, threshold):\n    warnings.warn('counting slowly')\n"
     "    return sum(v > threshold for v in values)", False,
     "the test wrote to stderr (warnings count as failures): UserWarning: counting slowly"),
]


@pytest.fixture(scope="module")
def checked(setup) -> dict[str, checking.CheckResult]:
    """``{name: result}``: the notebooks of the tests below, checked in one batch (``check_notebooks``: one
    trusted kernel for all of them, each notebook in its own kernel, judged as if checked alone -- which
    ``test_a_batch_checks_each_notebook_on_its_own`` tests); one start-up instead of one per test."""
    base, notebooks, full, release = setup
    batch = {"full": full, "untouched": release, "gamed": cells.set_answer(full, "ex1_answer", GAMED_EX1),
             "wrong": cells.set_answer(full, "ex3_answer", WRONG_EX3),
             "patch": cells.set_answer(full, "ex2_answer", PATCH_EX2),
             **{f"other_types{i}": cells.set_answer(full, "ex3_answer", answer)
                for i, (answer, _, _) in enumerate(OTHER_TYPES)}}
    paths = [_save(base, f"{name}.ipynb", nb) for name, nb in batch.items()]
    return dict(zip(batch, checking.check_notebooks(paths, notebooks_dir=notebooks, limits=LIMITS), strict=True))


def test_full_solution_passes_every_visible_test(setup, checked):
    base, notebooks, full, release = setup
    res = checked["full"]
    assert (res.assignment, res.notebook) == (NAME, NAME)
    assert [(t.grade_id, t.points, t.passed) for t in res.tests] == [
        ("ex1_unit", 1.0, True), ("ex1_scaling", 1.0, True), ("ex2_tests", 2.0, True), ("ex3_tests", 1.0, True),
        ("q4_answer", 2.0, None)]
    assert res.all_passed and res.passed_points == 5.0 and res.auto_points == 5.0
    text = res.render()
    assert "Exercise 1 (2 points)" in text and "[PASS] ex2_tests (2 points)" in text
    assert "[hand-graded] q4_answer (2 points)" in text and "Visible tests passed: 5 of 5" in text
    # which saved version was checked, always said (issue 22 item 12)
    saved_at = time.strftime("%H:%M:%S", time.localtime((base / "full.ipynb").stat().st_mtime))
    assert f"Checked the version saved at {saved_at} – save (Ctrl+S) first" in text
    assert "WARNING" not in text


def _kernels_below_me() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if "ipykernel" in " ".join(_cmdline(p))}


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def test_the_check_leaves_no_kernel_running(setup):
    """Issue 27: the check ran in its caller's process and kept its trusted kernel there until that process
    exited (in CI, a test session's: the memory test found it alive after a grading run).  When the check
    returns, every kernel it started is gone."""
    base, notebooks, full, release = setup
    before = _kernels_below_me()
    res = check_notebook(_save(base, "mine.ipynb", full), notebooks_dir=notebooks, limits=LIMITS)
    assert res.tests and all(t.passed is not False for t in res.tests)
    assert _kernels_below_me() - before == set()


def test_a_batch_checks_each_notebook_on_its_own(setup, capsys, monkeypatch):
    """``dp-course check A B C`` (:func:`checking.check_notebooks`): one trusted kernel for the batch, each
    notebook in its own kernel and judged as if checked alone (the wrong answer of the first does not reach the
    next), the reports in the order given, and no kernel left running afterwards."""
    base, notebooks, full, release = setup
    wrong = cells.set_answer(full, "ex3_answer", WRONG_EX3)
    paths = [_save(base, "b_wrong.ipynb", wrong), _save(base, "b_full.ipynb", full),
             _save(base, "b_untouched.ipynb", release)]
    before = _kernels_below_me()
    monkeypatch.chdir(base)  # the notebooks named as a student types them: relative to where the command runs
    rc = cli.main(["check", *(p.name for p in paths), "--notebooks", str(notebooks), "--cell-timeout", "10",
                   "--notebook-timeout", "60"])
    out = capsys.readouterr().out
    assert _kernels_below_me() - before == set()
    assert rc == 1  # not every notebook passes
    reports = out.split("\n\nChecked ")
    assert [r.removeprefix("Checked ").split(" ", 1)[0] for r in reports] == [p.name for p in paths]
    assert "[FAIL] ex3_tests (1 point): AssertionError: count_above([1, 2, 3], 1.5) should be 2" in reports[0]
    assert reports[0].count("[FAIL]") == 1 and "Visible tests passed: 4 of 5" in reports[0]
    assert "[FAIL]" not in reports[1] and "Visible tests passed: 5 of 5" in reports[1]
    assert "Visible tests passed: 0 of 5" in reports[2] and "not answered yet" in reports[2]
    with pytest.raises(ValueError, match="notebooks must name at least one .ipynb file, got none"):
        checking.check_notebooks([], notebooks_dir=notebooks)
    # a bad file in the batch stops it before any notebook runs
    with pytest.raises(ValueError, match="notebook must be an existing .ipynb file"):
        checking.check_notebooks([paths[1], base / "missing.ipynb"], notebooks_dir=notebooks, limits=LIMITS)
    assert _kernels_below_me() - before == set()


def test_untouched_notebook_fails_with_a_helpful_message(checked):
    res = checked["untouched"]
    assert not res.all_passed and res.passed_points == 0.0
    assert {t.message for t in res.tests if t.passed is False} == {
        "not answered yet (the answer cell still raises NotImplementedError)"}


def test_hidden_tests_are_not_run_and_not_present(setup, checked):
    base, notebooks, full, release = setup
    res = checked["gamed"]   # the answer to exercise 1 is GAMED_EX1
    # the hidden check laplace_scale(3.0, 0.25) == 12 would fail; the check only runs the visible ones
    assert res.all_passed
    cache = base / "cache" / "dp-course" / "check"
    texts = [p.read_bytes() for p in cache.rglob("*") if p.is_file()]
    assert texts and not any(b"HIDDEN-TOKEN" in t or b"laplace_scale(3.0, 0.25)" in t for t in texts)


def test_wrong_answer_shows_the_assertion_message(checked):
    res = checked["wrong"]   # the answer to exercise 3 is WRONG_EX3
    failed = [(t.grade_id, t.message) for t in res.tests if t.passed is False]
    assert failed == [("ex3_tests", "AssertionError: count_above([1, 2, 3], 1.5) should be 2")]
    assert "[FAIL] ex3_tests (1 point): AssertionError" in res.render()


@pytest.mark.parametrize("case", range(len(OTHER_TYPES)))
def test_the_check_runs_the_tests_the_way_the_grader_does(checked, case):
    """Issue 26: the check's visible tests run in the trusted kernel, through the grader's proxies and codec."""
    _answer, passed, message = OTHER_TYPES[case]   # the answer to exercise 3
    res = checked[f"other_types{case}"]
    ex3 = next(t for t in res.tests if t.grade_id == "ex3_tests")
    assert (ex3.passed, ex3.message) == (passed, message)
    assert all(t.passed for t in res.tests if t.grade_id != "ex3_tests" and t.passed is not None)


def test_monkeypatching_is_undone_in_the_check_too(checked):
    res = checked["patch"]   # the answer to exercise 2 is PATCH_EX2
    assert [t.grade_id for t in res.tests if t.passed is False] == ["ex2_tests"]
    assert "monkeypatching undone before tests" in res.render()


def test_find_assignment_by_cells_or_name(setup):
    base, notebooks, full, release = setup
    assert find_assignment(full, "renamed copy.ipynb", notebooks) == (NAME, NAME)
    bare = nbformat.v4.new_notebook()
    assert find_assignment(bare, f"alice_{NAME}-Copy1.ipynb", notebooks) == (NAME, NAME)
    with pytest.raises(ValueError, match="notebook must be one of the course's notebooks"):
        find_assignment(bare, "homework.ipynb", notebooks)


@pytest.mark.parametrize("content,match", [
    (None, "notebook must be an existing .ipynb file"),
    ("{ not json", "notebook must be a valid Jupyter notebook: not valid JSON"),
    ('{"cells": 1}', "notebook must be a valid Jupyter notebook: valid JSON but not a Jupyter notebook"),
    ("x" * 30_000, "notebook must be at most 0.02 MB"),
])
def test_check_rejects_bad_files(setup, content, match):
    base, notebooks, full, release = setup
    path = base / "bad.ipynb"
    path.unlink(missing_ok=True)
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=match):
        check_notebook(path, notebooks_dir=notebooks, limits=Limits(max_notebook_mb=0.02))


def test_check_rejects_unknown_assignment(setup):
    base, notebooks, full, release = setup
    with pytest.raises(ValueError, match="assignment must be one of"):
        check_notebook(_save(base, "x.ipynb", full), assignment="99_nope", notebooks_dir=notebooks)


def test_check_course_is_built_from_the_release(setup):
    base, notebooks, full, release = setup
    crs = checking._check_course(NAME, notebooks)
    src = nbformat.read(crs / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    rel = nbformat.read(notebooks / NAME / f"{NAME}.ipynb", as_version=4)
    # every cell of the check course's source is a cell of the release (make_course only drops the header)
    assert {c.source for c in src.cells} <= {c.source for c in rel.cells}
    assert len(src.cells) >= len(rel.cells) - 1


# --------------------------------------------------------------------------------------------------------
# Which saved version was checked (issue 22 item 12)


def _written(path: Path, text: str, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def test_saved_version_names_the_file_time_and_newer_copies(tmp_path):
    t0 = time.mktime((2026, 11, 27, 14, 3, 5, 0, 0, -1))
    nb = _written(tmp_path / "01_x.ipynb", "saved", t0)
    # JupyterLab's Ctrl+S: the file, then its checkpoint (same content, a moment later): no warning
    checkpoint = _written(tmp_path / ".ipynb_checkpoints" / "01_x-checkpoint.ipynb", "saved", t0 + 2)
    saved = checking.saved_version(nb)
    assert saved.saved_at == t0 and saved.newer == ()
    assert saved.lines() == ["Checked the version saved at 14:03:05 – save (Ctrl+S) first: changes that are only "
                             "in the browser are not checked."]
    # a checkpoint with other content written after the file: the file is not the latest version
    _written(checkpoint, "newer answer", t0 + 75)
    saved = checking.saved_version(nb)
    assert saved.newer == ((str(checkpoint), t0 + 75),)
    warning = saved.lines()[1]
    assert warning.startswith(f"WARNING: {checkpoint} was written at 14:04:20, after this file")
    assert "Save it (Ctrl+S) and check again" in warning
    # an interrupted save's temporary file counts too; an older copy does not
    tmp_copy = _written(tmp_path / ".~01_x.ipynb", "half", t0 + 10)
    _written(checkpoint, "older answer", t0 - 60)
    assert checking.saved_version(nb).newer == ((str(tmp_copy), t0 + 10),)


def test_render_says_which_version_and_warns():
    t0 = time.mktime((2026, 11, 27, 9, 0, 1, 0, 0, -1))
    res = checking.CheckResult("01_x", "01_x", [checking.CheckedTest("Exercise 1", "ex1", 1.0, True, "")], [], True,
                               "01_x.ipynb", checking.SavedVersion(t0, (("cp.ipynb", t0 + 3600),)))
    lines = res.render().splitlines()
    assert lines[0] == "Checked 01_x.ipynb against the visible tests of 01_x."
    assert lines[1].startswith("Checked the version saved at 09:00:01 – save (Ctrl+S) first")
    assert lines[2].startswith("WARNING: cp.ipynb was written at 10:00:01, after this file")


# --------------------------------------------------------------------------------------------------------
# Plain text for the terminal, and a kernel that cannot start


def test_render_is_plain_text():
    res = checking.CheckResult("01_x", "01_x", [
        checking.CheckedTest("Exercise 2 (4 points): δ(ε) from a discrete PLD", "ex2", 4.0, False,
                             r"AssertionError: $\delta(\varepsilon)$ must lie in $[0, 1]$, got {'d': 1.5}"),
        checking.CheckedTest("Exercise 2 (4 points): δ(ε) from a discrete PLD", "ex2b", 1.0, True, "")], [], True)
    text = res.render()
    assert "$" not in text and "\\" not in text
    assert "[FAIL] ex2 (4 points): AssertionError: δ(ε) must lie in [0, 1], got {'d': 1.5}" in text


@pytest.mark.parametrize("latex,plain", [
    (r"Exercise 2 (4 points): $\delta(\varepsilon)$ from a PLD", "Exercise 2 (4 points): δ(ε) from a PLD"),
    (r"Exercise 1 (4 points): $k$-ary randomized response", "Exercise 1 (4 points): k-ary randomized response"),
    (r"**Exercise 3**: `laplace_scale` for $\varepsilon = 0.5$", "Exercise 3: laplace_scale for ε = 0.5"),
    (r"$e^{k\varepsilon}$, $\sqrt{2k\ln(1/\delta)}$, $\Pr[M(x) = 1] \le e^\varepsilon$",
     "e^(kε), √(2k ln(1/δ)), Pr[M(x) = 1] ≤ e^ε"),
    ("costs $5 and $6, C:\\temp, {'a': 1}", "costs $5 and $6, C:\\temp, {'a': 1}"),   # not maths: unchanged
])
def test_markdown_and_latex_to_text(latex, plain):
    assert markdown_to_text(latex) == plain


def test_check_prints_latex_of_the_notebook_as_text(setup, tmp_path):
    base, notebooks, full, release = setup
    mine = tmp_path / "notebooks"
    shutil.copytree(notebooks, mine)
    path = mine / NAME / f"{NAME}.ipynb"
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "markdown" and c.source.startswith("## Exercise 3"):
            c.source = c.source.replace("## Exercise 3 (1 point)", r"## Exercise 3 (1 point): values above $\tau$")
        if c.metadata.get("nbgrader", {}).get("grade_id") == "ex3_tests":
            c.source = c.source.replace('"count_above([1, 2, 3], 1.5) should be 2"',
                                        r'r"$|\{x_i > \tau\}|$ should be 2"')  # a raw string, as authors write
    nbformat.write(nb, path)
    wrong = cells.set_answer(full, "ex3_answer", "def count_above(values, threshold):\n    return 0")
    text = check_notebook(_save(base, "latex.ipynb", wrong), notebooks_dir=mine, limits=LIMITS).render()
    assert "Exercise 3 (1 point): values above τ" in text
    assert "[FAIL] ex3_tests (1 point): AssertionError: |{x_i > τ}| should be 2" in text, text
    assert "$" not in text and "\\" not in text


def test_a_kernel_that_cannot_start_is_explained(setup, monkeypatch, capsys):
    base, notebooks, full, release = setup
    monkeypatch.setattr(sandbox, "PYTHON", "/nonexistent/python3")  # every kernel starts through it
    res = check_notebook(_save(base, "mine.ipynb", full), notebooks_dir=notebooks, limits=LIMITS, sandbox_mode="none")
    assert res.kernel_failed and "/nonexistent/python3" in res.kernel_failed
    text = res.render()
    assert "could not be checked: the Python kernel that runs it did not start" in text
    assert "This is not caused by your notebook. What to do:" in text and "above traceback" not in text
    ev = [e for e in res.events if e.kind is EventKind.KERNEL_START_FAILED]
    assert len(ev) == 1 and "run dp-course grade again" in ev[0].detail
    rc = cli.main(["check", str(base / "mine.ipynb"), "--notebooks", str(notebooks), "--sandbox", "none"])
    assert rc == 2 and "did not start" in capsys.readouterr().out
