"""The attacks of issue 13 on the *score* gain nothing when test cells run in the trusted kernel.

Each attack is a submission of its own (:func:`_attack_kit.submission`): a *wrong* answer to ``scale`` plus a
trick that makes its test pass when test cells run in the student's own kernel.  Each is first run in one
kernel, where the trick gains the points (so each case can fail, and does when the defence is missing), then
with two kernels, where it must score exactly what the same notebook without the attack scores (the plain
wrong answer: honest 1 point, ``scale`` 0), with the same feedback, and where the student's kernel – whose
every ``execute_request`` is recorded – never receives a test line or the hidden expected value, plain or
encoded.  (The attacks on the *test source* are in ``test_leaks.py``.)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _attack_kit import (SETUP, WRONG, cell_source, everything_shown, feedback_errors, leaks, requests_received,
                         submission)
from _fixtures import answer_cell, grade_cell, notebook, run_single, run_two, setup_cell, verdicts
from nbformat import NotebookNode

from autograder.trusted.runner import TrustedKernel

ATTACKS: dict[str, tuple[str, str]] = {
    # name: (answer cell defining scale, the check its test cell makes)
    # -- answers that are not numbers: comparison-defeating objects --
    "always_equal": ('''
        class _Yes:
            def __eq__(self, other): return True
            def __lt__(self, other): return True
            def __sub__(self, other): return self
            def __abs__(self): return 0.0
            def __array__(self, dtype=None, copy=None): return np.full(1, 0.25)
        def scale(sensitivity, epsilon):
            return _Yes()''', "_got == _expected and abs(_got - _expected) < 1e-9"),
    "float_subclass": ('''
        class _Liar(float):
            def __eq__(self, other): return True
            __hash__ = float.__hash__
        def scale(sensitivity, epsilon):
            return _Liar(sensitivity * epsilon)''', "_got == _expected"),
    "array_subclass": ('''
        class _Agreeable(np.ndarray):
            def __eq__(self, other): return np.ones(self.shape, dtype=bool)
            def __array_wrap__(self, out, context=None, return_scalar=False): return np.zeros(self.shape)
        def scale(sensitivity, epsilon):
            return np.asarray([sensitivity * epsilon]).view(_Agreeable)''',
        "bool(np.all(_got == _expected)) and float(np.max(np.abs(_got - _expected))) < 1e-9"),
    # -- reading the expected value: frame walks --
    "stack_walk": ('''
        def scale(sensitivity, epsilon):
            frame = sys._getframe(1)
            while frame is not None:
                if "_expected" in frame.f_globals:
                    return frame.f_globals["_expected"]
                frame = frame.f_back
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "inspect_stack": ('''
        import inspect
        def scale(sensitivity, epsilon):
            for info in inspect.stack():
                if "_expected" in info.frame.f_locals:
                    return info.frame.f_locals["_expected"]
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "traceback_walk": ('''
        def scale(sensitivity, epsilon):
            try:
                raise RuntimeError
            except RuntimeError as exc:
                frame = exc.__traceback__.tb_frame
            while frame is not None:
                found = [v for k, v in frame.f_locals.items() if k.startswith("_expected")]
                if found:
                    return found[0]
                frame = frame.f_back
            return sensitivity * epsilon''', "_got == _expected"),
    # -- trace functions --
    "one_shot_trace": ('''
        def scale(sensitivity, epsilon):
            def tracer(frame, event, arg):     # the next isclose the test calls compares b with itself
                if event == "call" and frame.f_code.co_name == "isclose" and "b" in frame.f_locals:
                    frame.f_locals["a"] = frame.f_locals["b"]
                    sys.settrace(None)
            sys.settrace(tracer)
            return sensitivity * epsilon''', "np.isclose(_got, _expected)"),
    "trace_rewrites_result": ('''
        def scale(sensitivity, epsilon):
            caller = sys._getframe(1)
            def local(frame, event, arg):      # before the assert line runs, _got becomes the expected value
                if "_expected" in frame.f_globals and "_got" in frame.f_globals:
                    frame.f_globals["_got"] = frame.f_globals["_expected"]
                    caller.f_trace = None
                    sys.settrace(None)
                return None
            caller.f_trace = local
            sys.settrace(lambda *args: None)
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    # -- tampering that identity checks do not see --
    "code_swap": ('''
        np.testing.assert_allclose.__code__ = (lambda *args, **kwargs: None).__code__
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "np.testing.assert_allclose(_got, _expected) is None"),
    "code_swap_library": ('''
        total_variation.__code__ = (lambda p, q: 0.0).__code__
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''',
        "total_variation(np.array([_got, 1 - _got]), np.array([_expected, 1 - _expected])) < 1e-12"),
    "module_patch": ('''
        math.isclose = lambda *args, **kwargs: True
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "delegate_patch": ('''
        numpy._core.numeric.isclose = lambda *args, **kwargs: np.array([True])
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "np.allclose(_got, _expected)"),
    "library_private_patch": ('''
        import dp_course.divergences
        dp_course.divergences.check_pmf_pair = lambda *args: (np.zeros(1), np.zeros(1))   # what _pair calls
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''',
        "total_variation(np.array([_got, 1 - _got]), np.array([_expected, 1 - _expected])) < 1e-12"),
    "class_patch": ('''
        Fraction.__eq__ = lambda self, other: True
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "Fraction(_got).limit_denominator(100) == Fraction(_expected)"),
    "shadowing": ('''
        class _AnyMath:
            def isclose(self, *args, **kwargs): return True
        math = _AnyMath()
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    # -- a patch installed by the student's function when the test calls it, removed after one use --
    "patch_during_call": ('''
        def scale(sensitivity, epsilon):
            original = np.isclose
            def once(*args, **kwargs):            # answers True once, then removes itself
                np.isclose = original
                return True
            np.isclose = once
            return sensitivity * epsilon''', "np.isclose(_got, _expected)"),
    "builtin_during_call": ('''
        import builtins
        def scale(sensitivity, epsilon):
            original = builtins.abs
            def once(x):
                builtins.abs = original
                return 0.0
            builtins.abs = once
            return sensitivity * epsilon''', "abs(_got - _expected) < 1e-9"),
    # -- IPython's machinery: the input, the exception display, the shell's class --
    "input_transformer": ('''
        get_ipython().input_transformers_post.append(
            lambda lines: [line.replace("assert ", "assert True or ") for line in lines])
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "ast_transformer": ('''
        import ast
        class _NoAsserts(ast.NodeTransformer):
            def visit_Assert(self, node):
                return ast.Pass()
        get_ipython().ast_transformers.append(_NoAsserts())
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "custom_exception_handler": ('''
        get_ipython().set_custom_exc((AssertionError,), lambda shell, etype, value, tb, tb_offset=None: None)
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "shell_class_patch": ('''
        from IPython.core.interactiveshell import InteractiveShell
        InteractiveShell.showtraceback = lambda self, *args, **kwargs: None
        def scale(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
}


LOCAL = ("always_equal", "float_subclass", "array_subclass", "stack_walk", "inspect_stack", "traceback_walk")
"""Attacks that change nothing outside their own answer: shown to work in one kernel together, in one
notebook (each of the others changes the student's process for every later cell, so it is shown alone)."""


def attack(name: str) -> NotebookNode:
    answer, check = ATTACKS[name]
    return submission(textwrap.dedent(answer).strip(), check)


@pytest.fixture(scope="module")
def one_kernel() -> dict[str, bool]:
    """``{attack: passed}`` in one kernel (each attack run once; the local ones share a notebook)."""
    together = notebook(setup_cell(SETUP), *(
        cell for name in LOCAL for cell in (
            answer_cell(f"{name}_answer", textwrap.dedent(ATTACKS[name][0]).strip().replace("scale", name)),
            grade_cell(name, cell_source(name, ATTACKS[name][1])))))
    out = verdicts(run_single(together))
    return {**out, **{name: verdicts(run_single(attack(name)))["scale"] for name in ATTACKS if name not in LOCAL}}


@pytest.fixture(scope="module")
def baseline(trusted_kernel: TrustedKernel) -> NotebookNode:
    """The submissions without the attacks, with two kernels: the plain wrong answer and, in one notebook,
    one test cell per attack (its check, grade id = the attack's name)."""
    return run_two(submission(WRONG, checks={name: check for name, (_, check) in ATTACKS.items()}),
                   trusted_kernel).nb


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_attack_gains_nothing(name: str, trusted_kernel: TrustedKernel, one_kernel: dict[str, bool],
                                  baseline: NotebookNode, tmp_path: Path) -> None:
    assert one_kernel[name], f"{name} does not gain the points in one kernel"
    plain = {"honest": verdicts(baseline)["honest"], "scale": verdicts(baseline)[name]}
    assert plain == {"honest": True, "scale": False}, "the baseline's wrong answer must fail"

    log = tmp_path / "requests.jsonl"
    nb = attack(name)
    result = run_two(nb, trusted_kernel, record=log)
    assert verdicts(result.nb) == plain, f"{name} changed a score"
    assert all(r.student == "ok" for r in result.tests)
    if name not in {"always_equal", "array_subclass"}:         # the student's value differs, as plain data
        assert feedback_errors(result.nb)["scale"] == feedback_errors(baseline)[name], f"{name} changed the feedback"
    assert not leaks(requests_received(log), nb), "a test line reached the student's kernel"
    assert not leaks(everything_shown(result.nb), nb), "a test line reached the outputs"
