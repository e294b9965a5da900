"""Size tests (issue 26): the Python lines a student's code runs, counted in the student's kernel.

``dp_course.testing.count_python_lines`` counts in one kernel; through the trusted kernel's proxy the agent
(``autograder.trusted.agent.counted_call``) counts in the student's kernel and the count comes back with the
result.  Checked here: the rule itself (cells counted, libraries not, a loop's count grows with the input, a
vectorised answer's does not), that the two implementations count alike, and that a notebook's size tests give
the same verdicts *and the same counts* in one kernel (Run All) and with two kernels (check and grade).
"""

from __future__ import annotations

import linecache
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from _fixtures import (SETUP, answer_cell, errors, grade_cell, graded_cells, notebook, passed, run_single, run_two,
                       setup_cell)

from autograder.trusted import agent
from dp_course.testing import count_python_lines, is_cell_code

ANSWERS = """
def scale_rows(x):
    x = np.asarray(x, dtype=float)
    return x / np.maximum(1.0, np.abs(x).sum(axis=1, keepdims=True))

def _row(r):
    return r / max(1.0, np.abs(r).sum())

def loop_rows(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = _row(x[i])
    return out

def comprehension_rows(x):
    return np.array([r / max(1.0, np.abs(r).sum()) for r in np.asarray(x, dtype=float)])

def apply_rows(x):
    return np.apply_along_axis(_row, 1, np.asarray(x, dtype=float))

def library_loop(x):
    return np.array(list(map(np.sum, np.asarray(x, dtype=float))))
"""


def _as_cell(source: str, filename: str) -> dict[str, Any]:
    """Run ``source`` as IPython runs a cell: compiled under ``filename``, its text in linecache without mtime."""
    source = textwrap.dedent(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.fixture
def cell_functions():
    filename = "/tmp/ipykernel_0/h18-size-test.py"
    yield _as_cell(ANSWERS, filename)
    linecache.cache.pop(filename, None)


def _counts(ns: dict[str, Any], name: str, counter) -> tuple[int, int]:
    rows = {n: np.random.default_rng(n).standard_normal((n, 4)) for n in (8, 512)}
    return tuple(counter(ns[name], rows[n]) for n in (8, 512))  # type: ignore[return-value]


def _one_kernel(func, x):
    return count_python_lines(func, x)[1]


def _agent(func, x):
    return agent.counted_call(func, [x], {})[1]


@pytest.mark.parametrize("counter", [_one_kernel, _agent], ids=["dp_course.testing", "agent"])
def test_a_loop_over_the_rows_grows_with_the_rows_and_vectorised_code_does_not(cell_functions, counter):
    small, large = _counts(cell_functions, "scale_rows", counter)
    assert small == large == 2                        # two lines, whatever the number of rows
    for looping in ("loop_rows", "comprehension_rows", "apply_rows"):
        small, large = _counts(cell_functions, looping, counter)
        assert large - small >= 504, f"{looping}: {small} lines on 8 rows, {large} on 512"
    small, large = _counts(cell_functions, "library_loop", counter)      # the loop runs in library code only
    assert small == large == 1


def test_both_implementations_count_the_same_lines(cell_functions):
    for name in ("scale_rows", "loop_rows", "comprehension_rows", "apply_rows", "library_loop"):
        assert _counts(cell_functions, name, _one_kernel) == _counts(cell_functions, name, _agent), name


def test_the_result_comes_back_and_the_previous_trace_function_is_restored(cell_functions):
    def previous(frame, event, arg):
        return None

    x = np.arange(6.0).reshape(3, 2)
    old = sys.gettrace()
    sys.settrace(previous)
    try:
        got, lines = count_python_lines(cell_functions["scale_rows"], x)
        assert sys.gettrace() is previous
        with pytest.raises(ZeroDivisionError):
            count_python_lines(lambda: 1 / 0)
        assert sys.gettrace() is previous
        with pytest.raises(ZeroDivisionError):
            agent.counted_call(lambda: 1 / 0, [], {})
        assert sys.gettrace() is previous
    finally:
        sys.settrace(old)
    assert np.array_equal(got, cell_functions["scale_rows"](x)) and lines == 2


def test_only_cells_and_the_functions_own_file_count():
    assert not is_cell_code(np.__file__) and not is_cell_code("<string>")

    def here(x):                   # a function of this file: its own file counts, numpy's does not
        total = 0
        for value in x:
            total += value
        return total

    (six, with_three), (zero, with_none) = count_python_lines(here, [1, 2, 3]), count_python_lines(here, [])
    assert (six, zero) == (6, 0) and with_none >= 3 and with_three - with_none == 6   # 2 lines per pass
    assert count_python_lines(np.sum, [1, 2, 3])[1] == 0


@pytest.mark.parametrize("bad", [None, 3, "f"])
def test_a_value_that_is_not_a_function_is_refused_naming_func(bad):
    with pytest.raises(TypeError, match="func must be a callable"):
        count_python_lines(bad)


SIZE_TEST = '''
"""{name} does not loop over the rows."""
def _test_{name}():
    def _lines(n):
        x = np.random.default_rng(n).standard_normal((n, 4))
        got, lines = count_python_lines({name}, x.copy())
        assert np.allclose(got, x / np.maximum(1.0, np.abs(x).sum(axis=1, keepdims=True))), "wrong values"
        return lines

    small, large = _lines(8), _lines(1024)
    assert large <= small + 20, f"{name} ran {{small}} lines on 8 rows and {{large}} on 1024"


_test_{name}()
'''

NAMES = ("scale_rows", "loop_rows", "comprehension_rows", "apply_rows")


def _size_notebook():
    # the helper imported by the test function itself (below) and, as in the lectures, by the setup cell too
    setup = setup_cell(SETUP + "\nfrom dp_course.testing import count_python_lines")
    return notebook(setup, answer_cell("a", textwrap.dedent(ANSWERS).strip()),
                    *[grade_cell(n, SIZE_TEST.format(name=n).strip()) for n in NAMES])


def test_size_tests_give_the_same_verdicts_and_counts_in_one_kernel_and_in_two(trusted_kernel):
    two = graded_cells(run_two(_size_notebook(), trusted_kernel).nb)
    one = graded_cells(run_single(_size_notebook()))
    expected = {"scale_rows": True, "loop_rows": False, "comprehension_rows": False, "apply_rows": False}
    assert {g: passed(c) for g, c in two.items()} == expected == {g: passed(c) for g, c in one.items()}
    for name in NAMES[1:]:                      # the messages hold the counts: the same lines were counted
        assert errors(two[name]) == errors(one[name]) and "ran " in errors(two[name])[0][1], name


FORGE_COUNT = '''
import json
import sys
_agent = sys.modules["_dpc_trusted.agent"]
_real_call = _agent.call
_LINES = {"negative": -5, "text": "12", "missing": None, "huge": 2**70}
def _forged_call(namespace, request):
    reply = json.loads(repr(_real_call(namespace, request)))
    kind = json.loads(request)["name"].removesuffix("_rows").removeprefix("forged_")
    if kind in _LINES and "lines" in reply:
        reply.pop("lines")
        if _LINES[kind] is not None:
            reply["lines"] = _LINES[kind]
    return _agent.Reply(json.dumps(reply))
_agent.call = _forged_call
''' + "".join(f"\ndef forged_{k}_rows(x):\n    return x\n" for k in ("negative", "text", "missing", "huge"))

FORGED_TEST = '''
"""A forged count is an error."""
def _test_{kind}():
    from dp_course.testing import count_python_lines
    count_python_lines(forged_{kind}_rows, [1.0])


_test_{kind}()
'''


def test_a_forged_count_from_the_students_kernel_is_an_error(trusted_kernel):
    """The count is hostile data too: a reply without a non-negative integer count is StudentKernelError."""
    kinds = ("negative", "text", "missing", "huge")
    nb = notebook(setup_cell(), answer_cell("forge", FORGE_COUNT.strip()),
                  *[grade_cell(k, FORGED_TEST.format(kind=k).strip()) for k in kinds])
    cells = graded_cells(run_two(nb, trusted_kernel).nb)
    assert {k: errors(cells[k])[0][0] for k in kinds} == dict.fromkeys(kinds, "StudentKernelError")
