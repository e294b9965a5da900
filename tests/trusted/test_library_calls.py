"""Library-call tests (issue 22): which functions of the course library a student's function runs.

``dp_course.testing.library_calls`` traces in one kernel; through the trusted kernel's proxy the agent
(``autograder.trusted.agent.traced_call``) traces in the student's kernel and the names come back with the
result.  Checked here: the rule itself (a call into ``GaussianPLD``'s profile code is named, directly, through
the public wrapper or a stored method; SciPy and NumPy alone give no name), that the two implementations name
the same functions, that exceptions propagate and the previous trace function comes back, that bad arguments
get a clear error, and that a notebook's library-call tests give the same verdicts in one kernel (Run All) and
with two kernels (check and grade), also when the student's kernel forges the names.
"""

from __future__ import annotations

import linecache
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from scipy import special
from _fixtures import (SETUP, answer_cell, errors, grade_cell, graded_cells, notebook, passed, run_single, run_two,
                       setup_cell)

from autograder.trusted import agent
from dp_course import testing
from dp_course.pld import GaussianPLD
from dp_course.testing import count_python_lines, library_calls, library_function_name

ANSWERS = """
def own_profile(epsilon, sigma, sensitivity):
    epsilon = np.asarray(epsilon, dtype=float)
    shift, scaled = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    log_first = special.log_ndtr(shift - scaled)
    log_second = epsilon + special.log_ndtr(-shift - scaled)
    return log_first + np.log(-np.expm1(log_second - log_first))

def private_profile(epsilon, sigma, sensitivity):
    pld = GaussianPLD.from_mechanism(sigma, sensitivity)
    return pld._log_delta(np.asarray(epsilon, dtype=float))

_STORED = GaussianPLD.from_mechanism(1.0, 1.0)._log_delta

def stored_profile(epsilon, sigma, sensitivity):
    return _STORED(np.asarray(epsilon, dtype=float))

def public_profile(epsilon, sigma, sensitivity):
    return np.log(GaussianPLD.from_mechanism(sigma, sensitivity).delta_for_epsilon(epsilon))

def failing_profile(epsilon, sigma, sensitivity):
    GaussianPLD.from_mechanism(sigma, sensitivity)
    raise ValueError("sigma is wrong")
"""

GAUSSIAN = "dp_course.pld.gaussian.GaussianPLD."


def _as_cell(source: str, filename: str) -> dict[str, Any]:
    """Run ``source`` as IPython runs a cell: compiled under ``filename``, its text in linecache without mtime."""
    source = textwrap.dedent(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np, "special": special, "GaussianPLD": GaussianPLD}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.fixture
def cells():
    filename = "/tmp/ipykernel_0/h22-library-calls.py"
    yield _as_cell(ANSWERS, filename)
    linecache.cache.pop(filename, None)


def _one_kernel(func, *args):
    return library_calls(func, *args)


def _agent(func, *args):
    result, _, names = agent.traced_call(func, list(args), {})
    return result, names


TRACERS = pytest.mark.parametrize("tracer", [_one_kernel, _agent], ids=["dp_course.testing", "agent"])


@TRACERS
def test_a_call_into_the_gaussian_profile_is_named_and_scipy_alone_is_not(cells, tracer):
    eps = np.array([0.0, 1.0, 50.0])
    own, own_names = tracer(cells["own_profile"], eps, 1.0, 1.0)
    assert own_names == frozenset()                                   # scipy and numpy: no name
    for name in ("private_profile", "stored_profile"):
        got, names = tracer(cells[name], eps, 1.0, 1.0)
        assert np.allclose(got, own, rtol=1e-12), name                # the same numbers: only the trace tells
        assert f"{GAUSSIAN}_log_delta" in names, (name, names)
    _, names = tracer(cells["private_profile"], eps, 1.0, 1.0)
    assert {f"{GAUSSIAN}from_mechanism", f"{GAUSSIAN}__init__"} <= names
    with np.errstate(divide="ignore"):
        _, names = tracer(cells["public_profile"], np.array([0.0, 1.0]), 1.0, 1.0)
    assert f"{GAUSSIAN}_delta" in names and any(n.endswith(".delta_for_epsilon") for n in names), names
    assert all(n.startswith("dp_course.") for n in names)


def test_both_implementations_name_the_same_functions(cells):
    for name in ("own_profile", "private_profile", "stored_profile", "public_profile"):
        with np.errstate(divide="ignore"):
            one, two = _one_kernel(cells[name], 2.0, 0.5, 1.0)[1], _agent(cells[name], 2.0, 0.5, 1.0)[1]
        assert one == two, name


def test_a_library_function_called_directly_is_named_by_module_and_qualified_name():
    _, names = library_calls(GaussianPLD.from_mechanism, 1.0, 1.0)
    assert {n for n in names if n.startswith(GAUSSIAN)} == {f"{GAUSSIAN}from_mechanism", f"{GAUSSIAN}__init__"}
    assert library_function_name(GaussianPLD._log_delta.__code__) == f"{GAUSSIAN}_log_delta"
    assert library_function_name(testing.library_calls.__code__) == "dp_course.testing.library_calls"
    assert library_function_name(_as_cell.__code__) is None


@TRACERS
def test_exceptions_propagate_and_the_previous_trace_function_is_restored(cells, tracer):
    def previous(frame, event, arg):
        return None

    old = sys.gettrace()
    sys.settrace(previous)
    try:
        with pytest.raises(ValueError, match="sigma is wrong"):
            tracer(cells["failing_profile"], 1.0, 1.0, 1.0)
        assert sys.gettrace() is previous
        got, names = tracer(cells["own_profile"], 1.0, 1.0, 1.0)
        assert sys.gettrace() is previous
    finally:
        sys.settrace(old)
    assert np.isclose(float(got), -2.0640664465003905, rtol=1e-12) and names == frozenset()


def test_the_size_test_still_counts_the_same_lines_on_the_shared_tracer(cells):
    _, lines = count_python_lines(cells["own_profile"], 1.0, 1.0, 1.0)
    assert lines == agent.counted_call(cells["own_profile"], [1.0, 1.0, 1.0], {})[1] == 5


@pytest.mark.parametrize("bad", [None, 3, "f"])
def test_a_value_that_is_not_a_function_is_refused_naming_func(bad):
    with pytest.raises(TypeError, match="func must be a callable"):
        library_calls(bad)
    with pytest.raises(TypeError, match="code must be a code object"):
        library_function_name(bad)  # type: ignore[arg-type]


LIBRARY_TEST = '''
"""{name} computes the profile itself."""
def _test_{name}():
    _got, _entered = library_calls({name}, np.array([0.0, 1.0, 5.0]), 1.0, 1.0)
    assert np.allclose(_got, [-0.9599, -2.0641, -14.3613], atol=1e-4), f"wrong values {{_got}}"
    _gaussian = sorted(n for n in _entered if n.startswith("dp_course.pld.gaussian."))
    assert not _gaussian, f"{name} calls the library's Gaussian PLD: {{_gaussian}}"


_test_{name}()
'''

NAMES = ("own_profile", "private_profile", "stored_profile")


def _library_notebook():
    setup = setup_cell(SETUP + "\nfrom scipy import special\nfrom dp_course.pld import GaussianPLD"
                       "\nfrom dp_course.testing import library_calls")
    return notebook(setup, answer_cell("a", textwrap.dedent(ANSWERS).strip()),
                    *[grade_cell(n, LIBRARY_TEST.format(name=n).strip()) for n in NAMES])


def test_library_call_tests_give_the_same_verdicts_and_messages_in_one_kernel_and_in_two(trusted_kernel):
    two = graded_cells(run_two(_library_notebook(), trusted_kernel).nb)
    one = graded_cells(run_single(_library_notebook()))
    expected = {"own_profile": True, "private_profile": False, "stored_profile": False}
    assert {g: passed(c) for g, c in two.items()} == expected == {g: passed(c) for g, c in one.items()}
    for name in NAMES[1:]:                      # the messages hold the names: the same functions were seen
        assert errors(two[name]) == errors(one[name]), name
        assert "GaussianPLD._log_delta" in errors(two[name])[0][1], name


FORGE_NAMES = '''
import json
import sys
_agent = sys.modules["_dpc_trusted.agent"]
_real_call = _agent.call
_NAMES = {"missing": None, "text": "dp_course", "numbers": [1, 2], "long": ["x" * 600], "many": ["a"] * 10001}
def _forged_call(namespace, request):
    reply = json.loads(repr(_real_call(namespace, request)))
    kind = json.loads(request)["name"].removeprefix("forged_")
    if kind in _NAMES and "library" in reply:
        reply.pop("library")
        if _NAMES[kind] is not None:
            reply["library"] = _NAMES[kind]
    return _agent.Reply(json.dumps(reply))
_agent.call = _forged_call
''' + "".join(f"\ndef forged_{k}(x):\n    return x\n" for k in ("missing", "text", "numbers", "long", "many"))

FORGED_TEST = '''
"""A forged list of names is an error."""
def _test_{kind}():
    from dp_course.testing import library_calls
    library_calls(forged_{kind}, [1.0])


_test_{kind}()
'''


def test_forged_names_from_the_students_kernel_are_an_error(trusted_kernel):
    """The names are hostile data too: a reply without a list of short strings is StudentKernelError."""
    kinds = ("missing", "text", "numbers", "long", "many")
    nb = notebook(setup_cell(), answer_cell("forge", FORGE_NAMES.strip()),
                  *[grade_cell(k, FORGED_TEST.format(kind=k).strip()) for k in kinds])
    cells = graded_cells(run_two(nb, trusted_kernel).nb)
    assert {k: errors(cells[k])[0][0] for k in kinds} == dict.fromkeys(kinds, "StudentKernelError")


@pytest.mark.parametrize("bad, error", [(3, TypeError), (None, TypeError), ("", ValueError),
                                        ("dp_course", ValueError), ("/tmp/../tmp", ValueError)])
def test_a_library_folder_that_is_not_an_absolute_path_is_refused_naming_library_dir(bad, error):
    with pytest.raises(error, match="library_dir must be"):
        library_function_name(library_calls.__code__, bad)
