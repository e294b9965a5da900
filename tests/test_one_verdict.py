"""One verdict everywhere (issue 26): Run All, ``dp-course check`` and ``dp-course grade`` agree on every test.

For each lecture, every submission of the answer-variant round trip – the instructor's solution and every
``alt<i>`` / ``wrong<i>`` student built from ``tests/answer_variants/<lecture>.py`` (``_notebooks.py``) – goes
through the student's three ways of seeing a verdict:

(a) **Run All** in one kernel (every cell run, errors allowed; the ``raises-exception`` tags let JupyterLab's
    Run All go on past every test cell too), the verdict of each test cell being nbgrader's
    (``nbgrader.utils.determine_grade``: an error or anything on stderr scores zero).  That is exactly what the
    answer-variant round trip of ``test_answer_variants.py`` / ``test_pipeline.py`` does (plain
    ``nbgrader autograde``: nbclient, one kernel, hidden tests restored, ``determine_grade``), so path (a) reads
    its verdicts (``_notebooks.RoundTrip.verdicts``) instead of running every submission a second time: the
    round trip is built once per session and shared (the solution is its ``built_solution`` student, the
    submission below);
(b) **dp-course check** (:func:`autograder.check.checking.check_notebooks`, the lecture's submissions in one
    call: one trusted kernel, each submission in its own sandboxed kernel): the trusted kernel, sandboxed student
    kernel, proxies and codec of grading;
(c) **dp-course grade** (:func:`autograder.run.grading.grade`), all the lecture's submissions in one run
    (two workers), the score of each test cell.

All three run the *full* test cells (hidden tests included): Run All on the notebook with the hidden tests
restored (nbgrader's autograde restores them), the check with the course built from ``solutions/`` instead
of ``notebooks/`` – the same machinery on a superset of the visible tests.  A test cell passes when it scores
its points.  Every (submission, test cell) must get the same verdict on the three paths; a disagreement names
the submission, the answers it replaced, the test and the three verdicts with their messages.  Besides, every
correct alternative passes the tests of its answer (so agreement cannot come from three paths failing alike).

The corpus of issue 26 is part of the variant files: a ``set`` from ``violating_event`` (03), ``Fraction``
constants (02), an in-place ``dp_sgd_step``, a ``clip_per_example`` built on a helper named ``_clip_rows`` and
one that divides by zero with a warning (06).

Expensive (every submission through check and grade, and the round trip if no other test built it yet): CI
(``DP_COURSE_CI=1``, ``.ci/run``) runs every lecture; elsewhere lectures 02, 03 and 06, which hold the examples,
run and the others are skipped with the reason, unless ``DP_COURSE_ONE_VERDICT`` says otherwise (``all``, or a
comma-separated list of lectures).  Each lecture prints the number of verdicts compared and the time of each
path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest

import _notebooks as nbs
from autograder.check.checking import check_notebooks
from autograder.run.grading import grade
from autograder.course.limits import Limits

DEFAULT_LECTURES = ["02_privacy_loss", "03_simulation_lemma", "06_dp_sgd"]
LIMITS = Limits()


def selected() -> list[str]:
    """The lectures to compare: ``DP_COURSE_ONE_VERDICT`` (``all`` or a list), else all in CI, else the default."""
    wanted = os.environ.get("DP_COURSE_ONE_VERDICT", "")
    if wanted == "all" or (not wanted and os.environ.get("DP_COURSE_CI") == "1"):
        return nbs.lectures()
    return [n for n in (wanted.split(",") if wanted else DEFAULT_LECTURES) if n in nbs.lectures()]


LECTURES = nbs.lectures()

Verdict = tuple[bool, str]
"""(passed, message) of one test cell."""


def submissions(name: str) -> dict[str, nbformat.NotebookNode]:
    """``{student: notebook as the student hands it in}`` (release + answers, visible tests only)."""
    source = nbs.read_source(name)
    release = nbformat.read(nbs.NOTEBOOKS / name / f"{name}.ipynb", as_version=4)
    out = {"solution": nbs.build_submission(release, source, {})}
    for student, replacements in nbs.variant_students(name).items():
        out[student] = nbs.build_submission(release, source, replacements)
    return out


def _graded_message(output_dir: Path, student: str, name: str, gid: str) -> str:
    """The first error (or stderr) of test cell ``gid`` in the notebook ``dp-course grade`` executed."""
    path = output_dir / "course" / "autograded" / student / name / f"{name}.ipynb"
    if not path.is_file():
        return "(no autograded notebook)"
    cell = next((c for c in nbformat.read(path, as_version=4).cells if nbs.nbgrader_meta(c).get("grade_id") == gid),
                None)
    return nbs.first_problem(cell) if cell is not None else "(no such cell)"


def check(name: str, paths: dict[str, Path], sandbox: str) -> dict[str, dict[str, Verdict]]:
    """Path (b): ``dp-course check`` of every submission, its course built from ``solutions/`` (full tests).

    One batch (:func:`autograder.check.checking.check_notebooks`): one trusted kernel for the lecture, each
    submission in its own sandboxed kernel, exactly as a check of that notebook alone runs it."""
    results = check_notebooks(list(paths.values()), assignment=name, notebooks_dir=nbs.SOLUTIONS, limits=LIMITS,
                              sandbox_mode=sandbox)
    return {student: {t.grade_id: (bool(t.passed), t.message) for t in res.tests if t.passed is not None}
            for student, res in zip(paths, results, strict=True)}


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"one-verdict-{n}"))
                                  for n in LECTURES])
def test_run_all_check_and_grade_agree(name, tmp_path, tmp_path_factory, monkeypatch, grading_sandbox):
    if name not in selected():
        pytest.skip(f"{name}: several minutes; run with DP_COURSE_ONE_VERDICT=all (CI runs every lecture)")
    # the check's course (keyed by the lecture's content) and matplotlib font cache: built once per xdist worker
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "one-verdict-cache"))
    subs = submissions(name)
    folder = tmp_path / "submissions"
    folder.mkdir()
    for student, nb in subs.items():
        nbformat.write(nb, folder / f"{student}_{name}.ipynb")
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    checked = check(name, {student: folder / f"{student}_{name}.ipynb" for student in subs}, grading_sandbox)
    seconds["check"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    run = grade(folder, tmp_path / "graded", solutions_dir=nbs.SOLUTIONS, assignments=[name], workers=2,
                limits=LIMITS, sandbox_mode=grading_sandbox, progress=False, feedback=False)
    seconds["grade"] = time.perf_counter() - t0

    # last: while another xdist worker is still building this lecture's round trip (its tests' group), the
    # check and the grading above run meanwhile instead of waiting for its lock
    t0 = time.perf_counter()
    round_trip = nbs.round_trip(tmp_path_factory, name)   # shared with test_answer_variants / test_pipeline
    one_kernel = {student: round_trip.verdicts.get(nbs.BUILT_SOLUTION if student == "solution" else student, {})
                  for student in subs}
    seconds["run all (the shared round trip)"] = time.perf_counter() - t0
    tests = set(nbs.test_cells(nbs.read_source(name)))
    graded = {r.student: {gid: (score is not None and score >= top,
                                _graded_message(run.output_dir, r.student, name, gid))
                          for gid, (score, top) in r.exercises.items() if gid in tests} for r in run.results}

    variants = nbs.variant_students(name)
    disagreements = []
    for student in subs:
        for gid in sorted(tests):
            verdicts = {"run all": one_kernel[student].get(gid), "check": checked[student].get(gid),
                        "grade": graded.get(student, {}).get(gid)}
            if len({v[0] if v else None for v in verdicts.values()}) > 1:
                answers = ", ".join(sorted(variants.get(student, {}))) or "none (the solution)"
                shown = "; ".join(f"{path}: " + ("missing" if v is None else ("PASS" if v[0] else f"FAIL ({v[1]})"))
                                  for path, v in verdicts.items())
                disagreements.append(f"{name} {student} (answers replaced: {answers}), test {gid}: {shown}")
    compared = len(subs) * len(tests)
    print(f"\n{name}: {len(subs)} submissions x {len(tests)} test cells = {compared} verdicts on 3 paths; "
          + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()))
    assert not disagreements, f"{len(disagreements)} of {compared} verdicts differ:\n" + "\n".join(disagreements)

    # agreement must not come from failing alike: the solution and every correct alternative pass their tests
    of_answer = nbs.tests_of_answer(nbs.read_source(name))
    assert all(v[0] for v in graded["solution"].values()), f"{name}: the solution fails {graded['solution']}"
    lost = {(student, gid): graded[student][gid] for student, answers in variants.items() if student.startswith("alt")
            for aid in answers for gid in of_answer[aid] if not graded[student][gid][0]}
    assert not lost, f"{name}: correct alternatives fail their tests: {lost}"
