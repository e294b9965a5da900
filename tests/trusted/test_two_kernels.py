"""End to end with two real kernels: the same test cells give the same verdicts and messages as in one kernel;
calls are bounded in time; what cannot be passed fails with a clear message; failures show no source."""

from __future__ import annotations

import textwrap

import pytest
from _fixtures import (answer_cell, demo_cell, errors, notebook, passed, run_single, run_two, setup_cell,
                       grade_cell, graded_cells, text)

from autograder.trusted.runner import Settings, cell_roles

HIDDEN = "### BEGIN HIDDEN TESTS"

ANSWERS = {
    "scale": """
        def scale(sensitivity, epsilon):
            ### BEGIN SOLUTION
            return sensitivity / epsilon
            ### END SOLUTION
    """,
    "draw": """
        def draw(rng, size=None):
            return rng.laplace(0.0, 1.0, size=size)
    """,
    "check": """
        class EpsilonError(ValueError):
            pass

        def check_epsilon(epsilon):
            if epsilon <= 0:
                raise EpsilonError(f"epsilon must be > 0, got {epsilon}")
            return float(epsilon)
    """,
    "table": """
        def pmf_table(k):
            return {i: (i / k, np.float32(1 - i / k)) for i in range(k)}, [np.arange(k), None, "ok"]
    """,
    "compose": """
        budget = 1.5

        def double(x):
            return 2 * np.asarray(x)

        def twice(f, x):
            return f(f(x))
    """,
}

TESTS = {
    "scale": f'''
        """scale is sensitivity / epsilon."""
        assert math.isclose(scale(1.0, 2.0), 0.5), f"scale(1, 2) should be 0.5, got {{scale(1.0, 2.0)}}"
        {HIDDEN}
        _expected = 1 / 3
        assert math.isclose(scale(1.0, 3.0), _expected), f"scale(1, 3) should be 1/3, got {{scale(1.0, 3.0)}}"
        ### END HIDDEN TESTS
    ''',
    "draw": '''
        """draw takes its randomness from rng: two calls with one generator differ exactly as in one process."""
        _g = np.random.default_rng(3)
        _first, _second = draw(_g, size=4), draw(_g, size=4)
        _ref = np.random.default_rng(3)
        assert np.array_equal(_first, _ref.laplace(0.0, 1.0, size=4)), f"first draws {_first}"
        assert np.array_equal(_second, _ref.laplace(0.0, 1.0, size=4)), f"second draws {_second}"
        assert _g.bit_generator.state == _ref.bit_generator.state, "the generator did not advance"
        assert np.ndim(draw(np.random.default_rng(1))) == 0, "size=None gives one number"
    ''',
    "check": '''
        """check_epsilon rejects epsilon <= 0 with a ValueError naming it."""
        try:
            check_epsilon(-1)
        except ValueError as _e:
            assert "epsilon" in str(_e), f"the message should name epsilon: {_e}"
        else:
            raise AssertionError("check_epsilon(-1) should raise ValueError")
        assert check_epsilon(2) == 2.0, "a valid epsilon comes back as a float"
    ''',
    "table": '''
        """pmf_table returns plain data of the right types."""
        _t, _extra = pmf_table(4)
        assert sorted(_t) == [0, 1, 2, 3] and isinstance(_t[1], tuple), f"got {_t}"
        assert _t[1][1].dtype == np.float32 and _extra[0].dtype.kind == "i" and _extra[1] is None, f"got {_extra}"
    ''',
    "compose": '''
        """twice applies a function twice; budget is 1.5."""
        assert np.array_equal(twice(double, [1, 2]), [4, 8]), f"twice(double, [1, 2]) gave {twice(double, [1, 2])}"
        assert budget == 1.5, f"budget is {budget}"
    ''',
}

WRONG = {
    "scale": "def scale(sensitivity, epsilon):\n    return sensitivity * epsilon",
    "draw": "def draw(rng, size=None):\n    return np.random.default_rng(0).laplace(0.0, 1.0, size=size)",
    "check": "def check_epsilon(epsilon):\n    return float(epsilon)",
    "table": "def pmf_table(k):\n    return {}, []",
    "compose": "budget = 2\ndef double(x):\n    return x\ndef twice(f, x):\n    return f(x)",
}


def _exercise_notebook(answers: dict[str, str]):
    cells = [setup_cell()]
    for key in TESTS:
        cells.append(answer_cell(f"{key}_answer", textwrap.dedent(answers[key]).strip()))
        cells.append(grade_cell(f"{key}_test", textwrap.dedent(TESTS[key]).strip()))
    return notebook(*cells)


@pytest.mark.parametrize("answers, expected", [(ANSWERS, True), (WRONG, False)], ids=["honest", "wrong"])
def test_same_verdicts_and_messages_as_one_kernel(trusted_kernel, answers, expected):
    """Every test cell passes on the honest answers and fails on the wrong ones, in two kernels as in one, with
    the same exception type and message (the test cells are unchanged)."""
    two = run_two(_exercise_notebook(answers), trusted_kernel)
    one = run_single(_exercise_notebook(answers))
    assert {g: passed(c) for g, c in graded_cells(two.nb).items()} == dict.fromkeys(graded_cells(one), expected)
    for gid, cell in graded_cells(one).items():
        assert errors(graded_cells(two.nb)[gid]) == errors(cell), gid
    assert all(report.student == "ok" for report in two.tests) and not two.events
    assert two.stats["calls"] == (9 if expected else 8) and two.stats["timeouts"] == 0   # one per call in the tests
    kinds = {r.grade_id: r.kinds for r in two.tests}
    assert kinds["compose_test"]["budget"] == "data" and kinds["compose_test"]["twice"] == "function"


def test_each_test_cell_is_prepared_from_the_students_state_just_before_it_runs(trusted_kernel):
    """One request per test cell: its names are bound just before it runs, from what the student's kernel holds
    then (a student cell between two tests rebinds ``budget``); a failing cell reports its names and the student
    kernel's state as a passing one does."""
    nb = notebook(setup_cell(), answer_cell("a", "budget = 1.0\ndef f(x):\n    return x"),
                  grade_cell("t1", "assert f(budget) == 1.0"),
                  demo_cell("budget = 2.0"),
                  grade_cell("t2", "assert f(budget) == 1.0, f'budget is {budget}'"))
    result = run_two(nb, trusted_kernel)
    cells = graded_cells(nb)
    assert passed(cells["t1"]) and errors(cells["t2"]) == [("AssertionError", "budget is 2.0")]
    assert [r.kinds for r in result.tests] == [{"budget": "data", "f": "function"}] * 2
    assert [r.student for r in result.tests] == ["ok", "ok"] and not result.events


def test_cell_roles():
    nb = notebook(setup_cell(), demo_cell("x = 1"), answer_cell("a", "def f(): pass"), grade_cell("t", "f()"),
                  demo_cell("   "), setup_cell("import os"))
    assert cell_roles(nb) == ["setup", "student", "student", "test", None, "student"]


def test_a_failure_shows_one_line_and_no_line_of_the_test(trusted_kernel):
    """Tracebacks could carry hidden lines into feedback: a failing test shows only 'Type: message'; warnings
    raised by a hidden line show without that line."""
    source = textwrap.dedent(f'''
        """hidden checks"""
        {HIDDEN}
        _secret_reference = np.log(np.zeros(1))          # a RuntimeWarning on this hidden line
        _unique_marker_1234 = scale(2.0, 1.0) + 0.25
        assert _unique_marker_1234 == 99.0, "scale(2, 1) is not what this hidden test expects"
        ### END HIDDEN TESTS
    ''').strip()
    nb = notebook(setup_cell(), answer_cell("a", textwrap.dedent(ANSWERS["scale"]).strip()), grade_cell("t", source))
    cell = run_two(nb, trusted_kernel).nb.cells[2]
    assert errors(cell) == [("AssertionError", "scale(2, 1) is not what this hidden test expects")]
    assert [o.traceback for o in cell.outputs if o.output_type == "error"] == [
        ["\x1b[0;31mAssertionError\x1b[0m: scale(2, 1) is not what this hidden test expects"]]
    shown = text(cell)
    assert "RuntimeWarning: divide by zero encountered in log" in shown
    for line in source.splitlines()[2:-2]:
        assert line.strip() not in shown, f"a hidden line reached the output: {line}"


def test_what_a_test_cannot_use_fails_with_a_clear_message(trusted_kernel):
    answers = """
        class Mechanism:
            pass

        mech = Mechanism()
        import json as student_json
        import colorsys

        def make():
            return Mechanism()

        def huge():
            return np.zeros(3_000_000)

        def stop():
            raise StopIteration

        def loud(x):
            print("printed by the student", x)
            return x
    """
    tests = {
        "obj": "mech.run(1)", "cls": "Mechanism()", "ret": "make()", "huge": "huge()",
        "stop": "_out = list(map(lambda _x: stop(), [1, 2]))\nassert _out, 'map stopped early'",
        "mod_ok": "assert student_json.dumps([1]) == '[1]', 'json'",
        "mod_missing": "colorsys.rgb_to_hsv(1.0, 0.0, 0.0)", "absent": "not_defined_anywhere(1)",
        "loud": "assert loud(3) == 3, 'loud'",
    }
    nb = notebook(setup_cell(), answer_cell("a", textwrap.dedent(answers).strip()),
                  *[grade_cell(k, v) for k, v in tests.items()])
    # an earlier notebook of the same worker imported colorsys: this notebook's verdicts must not depend on it
    run_two(notebook(setup_cell("import colorsys")), trusted_kernel)
    result = run_two(nb, trusted_kernel)
    got = {gid: errors(c) for gid, c in graded_cells(result.nb).items()}
    assert got["obj"][0][0] == "StudentCodeError" and "mech is a value of type" in got["obj"][0][1]
    assert "may only use the student's functions and plain data" in got["cls"][0][1]
    assert got["ret"] == [("StudentCodeError", "make returned an object of type __main__.Mechanism: return plain "
                                               "data instead (numbers, strings, None, NumPy arrays of numbers or "
                                               "booleans, and lists / tuples / dicts / sets of these)")]
    assert got["huge"][0][0] == "StudentCodeError" and "bytes" in got["huge"][0][1]
    assert got["stop"][0][0] == "StudentCodeError" and "StopIteration" in got["stop"][0][1]
    assert got["mod_ok"] == [] and got["mod_missing"][0][0] == "StudentCodeError"
    assert got["absent"] == [("NameError", "name 'not_defined_anywhere' is not defined")]
    assert got["loud"] == [] and "printed by the student" not in text(graded_cells(result.nb)["loud"])
    assert all(r.student == "ok" for r in result.tests)


ISSUE_26_ANSWERS = """
    import fractions

    def events():
        return {0, 2}

    def third():
        return fractions.Fraction(1, 3), range(1, 7, 2), frozenset({(1, 2)})

    def noisy(x):
        return np.log(np.asarray(x, dtype=float))

    def quiet(x):
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(x, dtype=float))
"""

ISSUE_26_TESTS = {
    "set": "assert events() == {0, 2}, f'events() gave {events()}'",
    "fraction": ("_f, _r, _s = third()\n"
                 "assert (_f * 3, list(_r), _s) == (1, [1, 3, 5], {(1, 2)}), f'third() gave {third()}'"),
    "warns": "assert noisy([0.0, 1.0])[1] == 0.0, 'log(1) is 0'",
    "recorded": ("import warnings\nwith warnings.catch_warnings(record=True) as _caught:\n"
                 "    warnings.simplefilter('always')\n    noisy([0.0])\n"
                 "assert [(_w.category, str(_w.message)) for _w in _caught] == "
                 "[(RuntimeWarning, 'divide by zero encountered in log')], f'caught {_caught}'"),
    "ignored": "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
               "    assert noisy([1.0])[0] == 0.0 and noisy([0.0])[0] == -np.inf, 'log'",
    "strict": "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('error')\n    noisy([0.0])",
    "quiet": "assert quiet([0.0])[0] == -np.inf, 'log(0) is -inf'",
}


def test_returned_sets_fractions_and_warnings_give_the_verdicts_of_one_kernel(trusted_kernel):
    """Issue 26: sets, fractions, ranges and frozensets come back as themselves, and the student's warnings reach
    the test as in one kernel – unhandled they fail it (stderr), recorded, ignored or turned into errors as the
    test's own filters say."""
    nb = notebook(setup_cell(), answer_cell("a", textwrap.dedent(ISSUE_26_ANSWERS).strip()),
                  *[grade_cell(k, v) for k, v in ISSUE_26_TESTS.items()])
    two = graded_cells(run_two(nb, trusted_kernel).nb)
    one = graded_cells(run_single(notebook(setup_cell(), answer_cell("a", textwrap.dedent(ISSUE_26_ANSWERS).strip()),
                                           *[grade_cell(k, v) for k, v in ISSUE_26_TESTS.items()])))
    expected = {"set": True, "fraction": True, "warns": False, "recorded": True, "ignored": True, "strict": False,
                "quiet": True}
    assert {g: passed(c) for g, c in two.items()} == expected == {g: passed(c) for g, c in one.items()}
    assert "RuntimeWarning: divide by zero encountered in log" in text(two["warns"])
    assert [e[0] for e in errors(two["strict"])] == [e[0] for e in errors(one["strict"])] == ["RuntimeWarning"]


def test_a_call_that_runs_too_long_is_interrupted_and_grading_goes_on(trusted_kernel):
    answers = "import time\n\ndef slow(x):\n    while True:\n        time.sleep(0.01)\n\ndef quick(x):\n    return x"
    nb = notebook(setup_cell(), answer_cell("a", answers), grade_cell("slow", "assert slow(1) == 1, 'slow'"),
                  grade_cell("quick", "assert quick(2) == 2, 'quick'"))
    result = run_two(nb, trusted_kernel, Settings(cell_timeout=6, call_margin=2))
    cells = graded_cells(result.nb)
    assert errors(cells["slow"])[0][0] == "StudentTimeout" and "interrupted" in errors(cells["slow"])[0][1]
    assert passed(cells["quick"]) and result.tests[0].student == "ok" and result.stats["timeouts"] == 1
    assert 3 <= result.tests[0].seconds < 8


@pytest.mark.parametrize("body, state", [
    ("while True:\n        try:\n            time.sleep(0.01)\n        except KeyboardInterrupt:\n            pass",
     "unresponsive"),
    ("os._exit(1)", "dead"),
])
def test_a_student_kernel_that_hangs_or_dies_stops_the_notebook(trusted_kernel, body, state):
    answers = f"import os\nimport time\n\ndef bad(x):\n    {body}\n\ndef good(x):\n    return x"
    nb = notebook(setup_cell(), answer_cell("a", answers), grade_cell("bad", "bad(1)"),
                  demo_cell("print('after')"), grade_cell("good", "assert good(2) == 2, 'good'"))
    result = run_two(nb, trusted_kernel, Settings(cell_timeout=5, call_margin=1, interrupt_grace=1.5,
                                                  heartbeat_seconds=2))
    cells = graded_cells(result.nb)
    assert errors(cells["bad"])[0][0] in ("StudentTimeout", "StudentKernelError")
    assert result.tests[0].student == state
    assert [o.ename for o in result.nb.cells[3].outputs] == ["NotRun"] and errors(cells["good"])[0][0] == "NotRun"
    assert [e["kind"] for e in result.events] == [f"student_kernel_{state}"]
