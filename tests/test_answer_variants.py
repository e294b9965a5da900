"""Do the graded tests accept every correct answer and reject common mistakes?  Checked through real nbgrader.

Data: ``tests/answer_variants/<lecture>.py`` defines ``VARIANTS = {answer grade_id: {"correct_alt": [code],
"wrong": [code, code]}}`` (format in ``tests/answer_variants/01_foundations.py``).  A new lecture only adds
such a file.  For each index ``i`` one submission ``alt<i>`` / ``wrong<i>`` carries the ``i``-th variant of
every answer at once (the other answers keep the instructor's solution); since every test cell exercises a
single answer cell (``test_pipeline.py`` checks that), each answer's tests judge only its own variant:

* a correct alternative must get full marks on every test cell of its answer;
* a wrong answer must lose points on at least one of them, and a wrong answer given with ``at_most`` (a
  trivial answer, a library wrapper where the exercise is a derivation) must score at most that many points
  on them in total, and one given with ``fails`` (a right answer written the way the exercise forbids, e.g. a
  row loop where it asks for vectorised code) must fail exactly those test cells and pass the others.

The submissions are graded in the same ``nbgrader autograde`` run as the round trip of ``test_pipeline.py``
(``_notebooks.round_trip``, one run per lecture).
"""

from __future__ import annotations

import pytest

import _notebooks as nbs

LECTURES = nbs.lectures()


def _cases():
    cases = []
    for name in LECTURES:
        for student, replacements in nbs.variant_students(name).items():
            for aid in sorted(replacements):
                cases.append(pytest.param(name, student, aid, id=f"{name}-{aid}-{student}",
                                          marks=nbs.round_trip_group(name)))
    return cases


@pytest.mark.parametrize("name", LECTURES)
def test_every_answer_has_variants(name):
    answers = nbs.answer_cells(nbs.read_source(name))
    variants = nbs.load_variants(name)
    assert nbs.variants_file(name).is_file(), f"{name}: add {nbs.variants_file(name)} (see the format there)"
    unknown = sorted(set(variants) - set(answers))
    assert not unknown, f"{name}: variants given for cells that are not autograded answer cells: {unknown}"
    for aid, cell in answers.items():
        entry = variants.get(aid, {"correct_alt": [], "wrong": []})
        assert len(entry["correct_alt"]) >= 1 and len(entry["wrong"]) >= 2, (
            f"{name}: answer {aid} needs at least one correct alternative and two wrong answers, has "
            f"{len(entry['correct_alt'])} and {len(entry['wrong'])}")
        for kind, listed in entry.items():
            for i, variant in enumerate(listed):
                assert nbs.defined_names(variant.code) >= nbs.defined_names(cell.source), (
                    f"{name}: {kind} #{i} of {aid} must define {sorted(nbs.defined_names(cell.source))}")


@pytest.mark.parametrize("name, student, answer", _cases())
def test_variant_is_graded_as_expected(name, student, answer, tmp_path_factory):
    tests = nbs.tests_of_answer(nbs.read_source(name))[answer]
    assert tests, f"{name}: answer {answer} has no test cells"
    grades = nbs.round_trip(tmp_path_factory, name).grades[student]
    scores = {tid: (grades[tid].score, grades[tid].max_score) for tid in tests}
    got, best = sum(s for s, _ in scores.values()), sum(m for _, m in scores.values())
    variant = nbs.variant_of(name, student, answer)
    if student.startswith("alt"):
        assert got == best, f"{name}: a correct alternative answer to {answer} lost points {scores}:\n{variant.code}"
    else:
        assert got < best, f"{name}: a wrong answer to {answer} got full marks {scores}:\n{variant.code}"
        if variant.fails is not None:
            unknown = sorted(set(variant.fails) - set(tests))
            assert not unknown, f"{name}: {answer}'s wrong answer names test cells {unknown} that do not test it"
            wrong = {tid: scores[tid] for tid in tests if (scores[tid][0] < scores[tid][1]) != (tid in variant.fails)}
            assert not wrong, (f"{name}: a wrong answer to {answer} must fail exactly {list(variant.fails)} and pass "
                               f"its other tests; it got {scores}:\n{variant.code}")
        if variant.at_most is not None:
            assert got <= variant.at_most, (f"{name}: a wrong answer to {answer} may score at most "
                                            f"{variant.at_most:g} points, got {got:g} {scores}:\n{variant.code}")
