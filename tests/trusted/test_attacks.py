"""The attacks of issue 13 gain nothing when test cells run in the trusted kernel.

Each attack is a *wrong* answer (``scale`` should be sensitivity / epsilon) plus a trick that makes the test
pass when test cells run in the student's own kernel – shown here by running the same notebook in one kernel,
where the trick works (so each case can fail, and does when the defence is missing).  With two kernels every
such test fails exactly as the plain wrong answer does, an honest answer in the same notebook keeps its
points, and the student's kernel – whose every ``execute_request`` is recorded – never receives a line of a
test cell, so hooks and history dumps in it have nothing to show.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from _fixtures import (answer_cell, demo_cell, errors, grade_cell, graded_cells, notebook, run_single, run_two,
                       setup_cell)
from _fixtures import text as shown
from _fixtures import verdicts

SETUP = ("import math\nimport sys\nfrom fractions import Fraction\nimport numpy as np\nimport numpy._core.numeric\n"
         "from dp_course.divergences import total_variation")

TEST = '''
"""{f} is sensitivity / epsilon."""
_expected = 0.25
_got = {f}(1.0, 4.0)
assert {check}, f"{f}(1, 4) should be 0.25, got {{_got}}"
### BEGIN HIDDEN TESTS
_expected = 0.123456789
_got = {f}(0.123456789 * 3, 3.0)
assert {check}, "hidden check of {f} failed"
### END HIDDEN TESTS
'''

WRONG = "return sensitivity * epsilon"

ATTACKS: dict[str, tuple[str, str]] = {
    # name: (answer cell: defines scale_<name>, the check the test cell makes)
    "always_equal": ('''
        class _Yes:
            def __eq__(self, other): return True
            def __lt__(self, other): return True
            def __sub__(self, other): return self
            def __abs__(self): return 0.0
            def __array__(self, dtype=None, copy=None): return np.full(1, 0.25)
        def scale_always_equal(sensitivity, epsilon):
            return _Yes()''', "_got == _expected and abs(_got - _expected) < 1e-9"),
    "float_subclass": ('''
        class _Liar(float):
            def __eq__(self, other): return True
            __hash__ = float.__hash__
        def scale_float_subclass(sensitivity, epsilon):
            return _Liar(sensitivity * epsilon)''', "_got == _expected"),
    "stack_walk": ('''
        def scale_stack_walk(sensitivity, epsilon):
            frame = sys._getframe(1)
            while frame is not None:
                if "_expected" in frame.f_globals:
                    return frame.f_globals["_expected"]
                frame = frame.f_back
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "traceback_walk": ('''
        def scale_traceback_walk(sensitivity, epsilon):
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
    "one_shot_trace": ('''
        def scale_one_shot_trace(sensitivity, epsilon):
            def tracer(frame, event, arg):     # the next check the test calls compares b with itself
                if event == "call" and frame.f_code.co_name == "isclose" and "b" in frame.f_locals:
                    frame.f_locals["a"] = frame.f_locals["b"]
                    sys.settrace(None)
            sys.settrace(tracer)
            return sensitivity * epsilon''', "np.isclose(_got, _expected)"),
    "code_swap": ('''
        np.testing.assert_allclose.__code__ = (lambda *args, **kwargs: None).__code__
        def scale_code_swap(sensitivity, epsilon):
            return sensitivity * epsilon''', "np.testing.assert_allclose(_got, _expected) is None"),
    "module_patch": ('''
        math.isclose = lambda *args, **kwargs: True
        def scale_module_patch(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
    "delegate_patch": ('''
        numpy._core.numeric.isclose = lambda *args, **kwargs: np.array([True])
        def scale_delegate_patch(sensitivity, epsilon):
            return sensitivity * epsilon''', "np.allclose(_got, _expected)"),
    "class_patch": ('''
        Fraction.__eq__ = lambda self, other: True
        def scale_class_patch(sensitivity, epsilon):
            return sensitivity * epsilon''', "Fraction(_got).limit_denominator(100) == Fraction(1, 4)"),
    "patch_during_call": ('''
        def scale_patch_during_call(sensitivity, epsilon):
            original = np.isclose
            def once(*args, **kwargs):            # answers True once, then removes itself
                np.isclose = original
                return True
            np.isclose = once
            return sensitivity * epsilon''', "np.isclose(_got, _expected)"),
    "library_patch": ('''
        import dp_course.divergences
        dp_course.divergences._pair = lambda p, q: (np.zeros(1), np.zeros(1))   # what total_variation calls
        def scale_library_patch(sensitivity, epsilon):
            return sensitivity * epsilon''',
        "total_variation(np.array([_got, 1 - _got]), np.array([0.25, 0.75])) < 1e-12"),
    "shadowing": ('''
        class _AnyMath:
            def isclose(self, *args, **kwargs): return True
        math = _AnyMath()
        def scale_shadowing(sensitivity, epsilon):
            return sensitivity * epsilon''', "math.isclose(_got, _expected)"),
}

LEAKS = '''
get_ipython().events.register("pre_run_cell", lambda info: print("HOOK SAW", info.raw_cell))
sys.addaudithook(lambda event, args: print("AUDIT SAW", args[0]) if event == "compile" and args[0] else None)
'''
HISTORY_DUMP = 'print("HISTORY", In, _ih, list(get_ipython().history_manager.get_range()))'


def _scale(name: str, body: str = "return sensitivity / epsilon") -> str:
    return f"def scale_{name}(sensitivity, epsilon):\n    {body}"


def _attack_notebook(names: list[str], *, leaks: bool = False):
    """Setup; an honest exercise; per attack: its answer cell and its test; optionally hooks and a history
    dump in the student's cells."""
    cells = [setup_cell(SETUP)]
    if leaks:
        cells.append(answer_cell("leaks", LEAKS.strip()))
    cells += [answer_cell("honest_answer", _scale("honest")),
              grade_cell("honest", TEST.format(f="scale_honest", check="math.isclose(_got, _expected)").strip())]
    for name in names:
        cells.append(answer_cell(f"{name}_answer", textwrap.dedent(ATTACKS[name][0]).strip()))
        cells.append(grade_cell(name, TEST.format(f=f"scale_{name}", check=ATTACKS[name][1]).strip()))
    if leaks:
        cells.append(demo_cell(HISTORY_DUMP))
    return notebook(*cells)


def _test_lines(nb) -> list[str]:
    """Every distinctive line of every test cell (the hidden ones included)."""
    return [line.strip() for cell in graded_cells(nb).values() for line in cell.source.splitlines()
            if len(line.strip()) > 12 and not line.strip().startswith("###")]


def _check_no_test_line_reached_the_student(nb, log: Path) -> None:
    received = log.read_text()
    requests = [json.loads(line) for line in received.splitlines()]
    assert requests and all(r["user_expressions"] or r["code"] for r in requests)
    for line in _test_lines(nb):
        assert line not in received and json.dumps(line)[1:-1] not in received, f"sent to the student: {line}"
    assert "0.123456789" not in received, "the hidden expected value reached the student's kernel"
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("grade"):
            for line in _test_lines(nb):
                assert line not in shown(cell), f"a student cell showed a test line: {line}"


GROUPS = {"answers_and_frames": ["always_equal", "float_subclass", "stack_walk", "traceback_walk",
                                 "one_shot_trace"],
          "tampering": ["code_swap", "module_patch", "delegate_patch", "class_patch", "patch_during_call",
                        "library_patch"],
          "shadowing": ["shadowing"]}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_attacks_gain_nothing(trusted_kernel, tmp_path, group):
    names = GROUPS[group]
    one_nb = run_single(_attack_notebook(names, leaks=True))
    one = verdicts(one_nb)
    assert one == {"honest": True, **dict.fromkeys(names, True)}, f"an attack does not work in one kernel: {one}"
    student_outputs = "\n".join(shown(c) for c in one_nb.cells if not c.metadata.get("nbgrader", {}).get("grade"))
    assert "### BEGIN HIDDEN TESTS" in student_outputs, "in one kernel the hooks see the hidden tests"
    log = tmp_path / "requests.jsonl"
    nb = _attack_notebook(names, leaks=True)
    result = run_two(nb, trusted_kernel, record=log)
    assert verdicts(result.nb) == {"honest": True, **dict.fromkeys(names, False)}
    plain = _attack_notebook(names)                      # the same wrong answers without the attacks
    for cell in plain.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if gid.removesuffix("_answer") in names and cell.metadata["nbgrader"]["solution"]:
            cell.source = _scale(gid.removesuffix("_answer"), WRONG)
    plain_nb = run_two(plain, trusted_kernel).nb
    assert verdicts(plain_nb) == verdicts(result.nb), "an attack changed a score"
    for gid in set(names) - {"always_equal"}:                 # and the message (plain data came back)
        assert errors(graded_cells(plain_nb)[gid]) == errors(graded_cells(result.nb)[gid]), gid
    _check_no_test_line_reached_the_student(nb, log)
    assert "HOOK SAW" in shown(nb.cells[-1]) or "HISTORY" in shown(nb.cells[-1])


def test_rewriting_the_students_input_machinery_changes_nothing(trusted_kernel, tmp_path):
    """Input and AST transformers in the student's kernel would rewrite every later test cell in one kernel."""
    rewrite = textwrap.dedent('''
        import ast
        get_ipython().input_transformers_post.append(
            lambda lines: [line.replace("assert ", "assert True or ") for line in lines])
        class _NoAsserts(ast.NodeTransformer):
            def visit_Assert(self, node):
                return ast.Pass()
        get_ipython().ast_transformers.append(_NoAsserts())
        def scale_rewrite(sensitivity, epsilon):
            return sensitivity * epsilon''').strip()
    cells = [setup_cell(SETUP), answer_cell("rewrite_answer", rewrite),
             grade_cell("rewrite", TEST.format(f="scale_rewrite", check="math.isclose(_got, _expected)").strip()),
             answer_cell("honest_answer", _scale("honest")),
             grade_cell("honest", TEST.format(f="scale_honest", check="math.isclose(_got, _expected)").strip())]
    assert verdicts(run_single(notebook(*cells))) == {"rewrite": True, "honest": True}
    log = tmp_path / "requests.jsonl"
    nb = notebook(*[c.copy() for c in cells])
    assert verdicts(run_two(nb, trusted_kernel, record=log).nb) == {"rewrite": False, "honest": True}
    _check_no_test_line_reached_the_student(nb, log)


def test_forged_replies_from_the_students_kernel_are_errors(trusted_kernel):
    """The student replaces the grader's agent: its replies are hostile data, never trusted."""
    forge = textwrap.dedent('''
        import json
        _agent = sys.modules["_dpc_trusted.agent"]
        _real_call = _agent.call
        _FORGED = {
            "exit": {"error": {"type": "SystemExit", "builtin": "SystemExit", "where": "call", "message": "bye"}},
            "interrupt": {"error": {"type": "KeyboardInterrupt", "builtin": "KeyboardInterrupt", "where": "call",
                                    "message": ""}},
            "pickle": {"ok": {"t": "pickle", "v": "gASVAAAA"}},
            "object": {"ok": {"t": "nd", "d": "|O", "s": [1], "b": "AAAAAAAAAAA="}},
            "huge": {"ok": "x" * 30_000_000},
            "garbage": None,
        }
        def _forged_call(namespace, request):
            name = json.loads(request)["name"].removeprefix("scale_")
            if name not in _FORGED:
                return _real_call(namespace, request)
            forged = _FORGED[name]
            return _agent.Reply("{not json" if forged is None else json.dumps({"protocol": 1, "rngs": [], **forged}))
        _agent.call = _forged_call
    ''').strip()
    kinds = ["exit", "interrupt", "pickle", "object", "huge", "garbage"]
    cells = [setup_cell(SETUP), answer_cell("forge", forge)]
    for kind in kinds:
        cells += [answer_cell(f"{kind}_answer", _scale(kind)),
                  grade_cell(kind, TEST.format(f=f"scale_{kind}", check="math.isclose(_got, _expected)").strip())]
    cells += [answer_cell("honest_answer", _scale("honest")),
              grade_cell("honest", TEST.format(f="scale_honest", check="math.isclose(_got, _expected)").strip())]
    result = run_two(notebook(*cells), trusted_kernel)
    got = {gid: [(o.ename, o.evalue) for o in c.outputs if o.output_type == "error"]
           for gid, c in graded_cells(result.nb).items()}
    assert got.pop("honest") == []
    assert {gid: e[0][0] for gid, e in got.items()} == {
        "exit": "StudentCodeError", "interrupt": "StudentCodeError", "pickle": "StudentCodeError",
        "object": "StudentCodeError", "huge": "StudentKernelError", "garbage": "StudentKernelError"}
    assert all(r.student == "ok" for r in result.tests)
