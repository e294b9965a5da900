"""Notebook-structure tricks on the real lectures (issue 27 item 1), graded end to end by ``dp-course grade``.

Lecture 01 (``ex4b_tight``) and lecture 02 (``ex3a_hockey_stick``): each trick notebook of
:func:`attacks.structure_tricks` (a test cell moved above its answer, the setup cell deleted, moved below the
answers or duplicated, a setup name redefined – also answered through a wrapper on the grader's agent module –, a
test cell re-typed or relabelled, an answer cell duplicated with another body) is the honest *twin* (a wrong
answer) plus a cheat that would pass the test if the trusted kernel took ``privacy_profile`` or
``hockey_stick_divergence`` from the student's kernel.  All go through one grading run with the default options
(sandbox and trusted verdicts on, two workers: the machine's two cores); each must score exactly what its twin
scores in the same batch and carry a flag naming the deviation, and an honest full solution with scratch
cells keeps full marks, unflagged.

Slow (two real lectures, 22 notebooks): about ten minutes on two busy cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from adversarial import attacks
from autograder.course import cells, course
from autograder.run.grading import grade
from autograder.run.results import SubmissionResult

pytestmark = [pytest.mark.xdist_group("adversarial-structure"),
              pytest.mark.timeout(2400)]  # one grading run of 22 lecture notebooks, one worker: 10-15 minutes
LECTURES = sorted(attacks.STRUCTURE_TARGETS)
TRICKS = ["moved_test", "no_setup", "late_setup", "two_setups", "cheat", "agent_wrap", "retyped_test",
          "relabelled_test", "two_answers"]
TAMPERING = {"tampering_restored", "tampering_during_test"}


def _student(name: str) -> str:
    return name.replace("_", "")   # file names are <student>_<lecture>.ipynb: no underscore in the student


@pytest.fixture(scope="module")
def structure_run(tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("structure")
    crs = course.make_course(base / "release-course", LECTURES)
    subs = base / "subs"
    subs.mkdir()
    whats: dict[tuple[str, str], str] = {}
    for lecture in LECTURES:
        release = cells.student_version(crs, lecture)
        source = nbformat.read(crs / "source" / lecture / f"{lecture}.ipynb", as_version=4)
        full = cells.full_solution(release, source)
        for name, (what, nb) in attacks.structure_tricks(lecture, full).items():
            whats[(lecture, name)] = what
            (subs / f"{_student(name)}_{lecture}.ipynb").write_text(nbformat.writes(nb))
    run = grade(subs, base / "out", assignments=LECTURES, workers=2, progress=False, sandbox_mode=grading_sandbox)
    yield {"run": run, "whats": whats}


def _result(run: Any, lecture: str, name: str) -> SubmissionResult:
    (r,) = [r for r in run.results if r.student == _student(name) and r.assignment == lecture]
    return r


@pytest.mark.parametrize("lecture", LECTURES)
def test_the_twin_loses_the_points_of_its_wrong_answer(structure_run: dict[str, Any], lecture: str) -> None:
    """So that a trick that gains them shows (the comparisons below can fail)."""
    test = attacks.STRUCTURE_TARGETS[lecture][1]
    score, points = _result(structure_run["run"], lecture, "twin").exercises[test]
    assert score == 0 and points > 0


@pytest.mark.parametrize("lecture", LECTURES)
def test_an_honest_notebook_with_scratch_cells_keeps_full_marks_unflagged(structure_run: dict[str, Any],
                                                                          lecture: str) -> None:
    r = _result(structure_run["run"], lecture, "scratch")
    assert all(score == points for score, points in r.exercises.values() if score is not None), r.exercises
    kinds = {str(e.kind) for e in r.events}
    assert "structure_restored" not in kinds and not kinds & TAMPERING, r.events


@pytest.mark.parametrize("name", TRICKS)
@pytest.mark.parametrize("lecture", LECTURES)
def test_a_structure_trick_scores_what_its_twin_scores_and_is_flagged(structure_run: dict[str, Any], lecture: str,
                                                                      name: str) -> None:
    run = structure_run["run"]
    what = structure_run["whats"][(lecture, name)]
    r, twin = _result(run, lecture, name), _result(run, lecture, "twin")
    assert r.exercises == twin.exercises, (what, r.exercises, twin.exercises, r.events)
    flags = [e for e in r.events if str(e.kind) in {"structure_restored", *TAMPERING}]
    assert flags, (what, r.events)
    if name not in ("cheat", "agent_wrap"):  # a change of structure: named, with the cell concerned
        assert [e for e in r.events if str(e.kind) == "structure_restored"], (what, r.events)
    md = run.report_md.read_text()
    section = md.split(f"### {_student(name)} / {lecture}:", 1)
    assert len(section) == 2 and flags[0].title in section[1].split("### ", 1)[0], what


def test_the_flags_name_the_cell(structure_run: dict[str, Any]) -> None:
    run = structure_run["run"]
    for lecture in LECTURES:
        answer, test = attacks.STRUCTURE_TARGETS[lecture][:2]
        expected = {"moved_test": test, "no_setup": "setup", "late_setup": "setup", "two_setups": "setup",
                    "retyped_test": test, "relabelled_test": test, "two_answers": answer}
        for name, cell in expected.items():
            cells_flagged = {e.cell for e in _result(run, lecture, name).events if str(e.kind) == "structure_restored"}
            assert cell in cells_flagged, (lecture, name, cells_flagged)

