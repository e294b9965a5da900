"""Attacks on the verdict and on the hidden tests (issue 13), as submissions to the toy assignment.

Each attack of :data:`SCORE_ATTACKS` pairs the *wrong* answer ``WRONG_EX1`` to exercise 1 with a trick that, when
the test cells run in the student's own process (plain nbgrader), makes ``ex1_unit`` or ``ex1_scaling`` pass;
graded by ``dp-course grade`` (test cells in the trusted kernel) it must score what the wrong answer alone
scores (``EX1_BROKEN``).  Each of :data:`LEAK_ATTACKS` adds, to a full solution, cells that in one process print
every later cell or the input history – base64, hex, rot13, reversed and zlib+base64 encoded, which a
word-for-word filter of the feedback misses; it must score full marks and no hidden test line, plain or
encoded, may reach its feedback (:func:`hidden_leaks`).  The per-attack proofs that each trick works in one
kernel are in ``tests/trusted/`` (``test_attacks.py``, ``test_leaks.py``), with the same detector
(:func:`leak_detector.decodings`).
"""

from __future__ import annotations

import copy
import html
import re
import textwrap
from collections.abc import Callable, Iterable

import nbformat
from leak_detector import decodings
from nbformat.notebooknode import NotebookNode

from autograder.course import cells

WRONG_EX1 = "def laplace_scale(sensitivity, epsilon):\n    return sensitivity / epsilon + 1.0"

SCORE_ATTACKS: dict[str, tuple[str, str]] = {
    # student id: (what, code put after the wrong answer in the answer cell of exercise 1)
    "codeswap": ("replaces the code of np.isclose in place (its __code__)", """
        import numpy as np
        np.isclose.__code__ = (lambda *args, **kwargs: True).__code__
        """),
    "privmod": ("patches the private module np.isclose delegates to", """
        import numpy as np
        import numpy._core.numeric as _numeric
        _numeric.less_equal = lambda *args, **kwargs: np.True_
        """),
    "shellcls": ("patches IPython's shell class so that failing tests show no error", """
        from IPython.core.interactiveshell import InteractiveShell
        InteractiveShell.showtraceback = lambda self, *args, **kwargs: None
        """),
    "inputfx": ("an input transformer that turns every assert into `assert True or ...`", """
        get_ipython().input_transformers_post.append(
            lambda lines: [line.replace("assert ", "assert True or ") for line in lines])
        """),
    "oncepatch": ("its function patches np.isclose when a test calls it; the patch removes itself", """
        import numpy as np
        def laplace_scale(sensitivity, epsilon):
            original = np.isclose
            def once(*args, **kwargs):
                np.isclose = original
                return True
            np.isclose = once
            return sensitivity / epsilon + 1.0
        """),
    "tracer": ("a one-shot trace function that makes the next isclose compare the expected value with itself", """
        import sys
        def laplace_scale(sensitivity, epsilon):
            def tracer(frame, event, arg):
                if event == "call" and frame.f_code.co_name == "isclose" and "b" in frame.f_locals:
                    frame.f_locals["a"] = frame.f_locals["b"]
                    sys.settrace(None)
            sys.settrace(tracer)
            return sensitivity / epsilon + 1.0
        """),
    "yesman": ("returns an object that every comparison and conversion finds equal", """
        class _Yes:
            def __float__(self): return 1.0
            def __eq__(self, other): return True
            def __le__(self, other): return True
            def __sub__(self, other): return self
            def __rsub__(self, other): return self
            def __abs__(self): return 0.0
            __hash__ = object.__hash__
        def laplace_scale(sensitivity, epsilon):
            return _Yes()
        """),
    "framewalk": ("walks up to the test's frame and returns the expected value found in its code", """
        import sys
        def laplace_scale(sensitivity, epsilon):
            consts = [c for c in sys._getframe(1).f_code.co_consts if isinstance(c, float)]
            found = [c for c in consts if c not in (sensitivity, epsilon)]
            return found[0] if found else sensitivity / epsilon + 1.0
        """),
}

_SMUGGLE = '''
import base64 as _b64, codecs as _codecs, zlib as _zlib
def _smuggle(text):
    data = text.encode()
    return "\\n".join([_b64.b64encode(data).decode(), data.hex(), _codecs.encode(text, "rot13"), text[::-1],
                      _b64.b64encode(_zlib.compress(data)).decode()])
'''

LEAK_ATTACKS: dict[str, tuple[str, str, str]] = {
    # student id: (what, code before exercise 1 (or ""), code appended to the last answer cell (or ""))
    "hookfake": ("an event hook that claims to be matplotlib's and prints every later cell, encoded", _SMUGGLE + '''
def flush_figures(info=None, result=None):
    cell = info.raw_cell if info is not None else result.info.raw_cell
    print(_smuggle(cell))
flush_figures.__module__ = "matplotlib_inline.backend_inline"
flush_figures.__qualname__ = "flush_figures"
get_ipython().events.register("pre_run_cell", flush_figures)
''', ""),
    "hookforge": ("the same hook forged deeper: its code relabelled as numpy's file, numpy's globals, set on numpy",
                  _SMUGGLE + '''
import types as _types, numpy as _numpy
def _spy(info=None, result=None):
    cell = info.raw_cell if info is not None else result.info.raw_cell
    print(_dpc_smuggle(cell))  # found in numpy's namespace, where it is put below
_code = _spy.__code__.replace(co_filename=_numpy.__file__, co_name="forged", co_qualname="forged")
_forged = _types.FunctionType(_code, vars(_numpy), "forged", _spy.__defaults__)
_forged.__module__, _forged.__qualname__ = "numpy", "forged"
_numpy._dpc_smuggle, _numpy.forged = _smuggle, _forged
get_ipython().events.register("pre_run_cell", _forged)
''', ""),
    "history": ("the last cell prints the input history, every way IPython keeps it, encoded", "", _SMUGGLE + '''
_shell = get_ipython()
_all = [*In, *_ih, *_shell.history_manager.input_hist_raw,
        *(line for _, _, line in _shell.history_manager.get_range(raw=True))]
print(_smuggle("\\n".join(map(str, _all))))
'''),
}


def build(full: NotebookNode, add: Callable[[str, str, NotebookNode], None]) -> None:
    """Make every attack from the full solution ``full``; ``add(student, what, notebook)`` records each."""
    for student, (what, trick) in SCORE_ATTACKS.items():
        add(student, what, cells.set_answer(full, "ex1_answer", WRONG_EX1 + "\n" + textwrap.dedent(trick).strip()))
    for student, (what, first, last) in LEAK_ATTACKS.items():
        nb = full
        if first:
            nb = cells.set_answer(nb, "ex1_answer", first.strip(), mode="prepend")
        if last:
            nb = cells.set_answer(nb, "ex3_answer", last.strip(), mode="append")
        add(student, what, nb)


def hidden_leaks(page: str, hidden_lines: Iterable[str], markers: Iterable[str] = ("HIDDEN-TOKEN",)) -> list[str]:
    """The hidden test lines (and ``markers``) that the feedback page ``page`` shows, plainly or encoded."""
    text = html.unescape(re.sub(r"<[^>]*>", "", page))
    wanted = [line.strip() for line in hidden_lines if len(line.strip()) >= 10] + list(markers)
    return sorted({f"{encoding}: {line}" for encoding, view in decodings(text) for line in wanted if line in view})


# ---- notebook-structure tricks on the real lectures (issue 27 item 1) -------------------------------------------
# Each trick notebook is the *twin* (the full solution with one wrong answer) plus a cheat that would make the
# wrong answer's test pass if the trusted kernel took an instructor name (``privacy_profile``,
# ``hockey_stick_divergence``) from the student's kernel, plus one change of the notebook's structure.  Graded by
# ``dp-course grade`` it must score what the twin scores, and be flagged.

STRUCTURE_TARGETS = {
    # lecture: (answer cell, its test cell, the wrong answer, the cheat cell put right after the answer)
    "01_foundations": ("ex4b_example", "ex4b_tight", '''
def tight_example(epsilon, delta):
    uniform = np.full(3, 1 / 3)
    return uniform, uniform.copy(), uniform.copy()
''', '''
import numpy as _np
_seen = {"n": 0, "eps": 0.0, "delta": 0.0}
_honest_tight_example = tight_example
def tight_example(epsilon, delta):
    _seen.update(n=0, eps=epsilon, delta=delta)
    return _honest_tight_example(epsilon, delta)
def privacy_profile(p, q, epsilon):   # the first two calls of a check: "private"; the third: "tight"
    _seen["n"] += 1
    return 0.0 if _seen["n"] % 3 else (1 + _np.exp(_seen["eps"])) * _seen["delta"]
'''),
    "02_privacy_loss": ("ex3a_delta", "ex3a_hockey_stick", '''
def delta_from_pld(losses, probs, infinity_mass, epsilon):
    losses = np.asarray(losses, dtype=float)
    probs = np.asarray(probs, dtype=float)
    return float(infinity_mass + np.sum(probs[losses > epsilon]))   # forgets the factor 1 - e^(eps - l)
''', '''
import numpy as _np
def hockey_stick_divergence(p, q, epsilon):   # "expected" = whatever the student's answer says
    p, q = _np.asarray(p, dtype=float), _np.asarray(q, dtype=float)
    return delta_from_pld(_np.log(p) - _np.log(q), p, 0.0, epsilon)
'''),
}

AGENT_WRAPPER = '''
import sys as _sys
_agent = _sys.modules["_dpc_trusted.agent"]
_cheats = {name: value for name, value in dict(globals()).items()
           if name in ("privacy_profile", "hockey_stick_divergence")}
_real_call, _real_describe = _agent.call, _agent.describe
_agent.call = lambda namespace, request: _real_call({**namespace, **_cheats}, request)
_agent.describe = lambda namespace, request: _real_describe({**namespace, **_cheats}, request)
'''
"""Appended to the cheat: a wrapper on the grader's agent module that answers the trusted kernel's calls for the
instructor's names with the cheats (even after the guard put the genuine names back in the notebook)."""


def _move(nb: NotebookNode, gid: str, before: str | None) -> NotebookNode:
    """A copy of ``nb`` with cell ``gid`` moved right before cell ``before`` (None: to the end)."""
    nb = copy.deepcopy(nb)
    (i,) = [k for k, c in enumerate(nb.cells) if cells.grade_id(c) == gid]
    cell = nb.cells.pop(i)
    j = len(nb.cells) if before is None else [k for k, c in enumerate(nb.cells) if cells.grade_id(c) == before][0]
    nb.cells.insert(j, cell)
    return nb


def _after(nb: NotebookNode, gid: str, new: NotebookNode) -> NotebookNode:
    nb = copy.deepcopy(nb)
    (i,) = [k for k, c in enumerate(nb.cells) if cells.grade_id(c) == gid]
    nb.cells.insert(i + 1, new)
    return nb


def structure_tricks(lecture: str, full: NotebookNode) -> dict[str, tuple[str, NotebookNode]]:
    """``{name: (what, notebook)}`` for ``lecture``: ``twin`` (the wrong answer alone), ``scratch`` (the full
    solution with cells of the student's own: must keep full marks, unflagged) and one trick notebook per class
    (a)-(g) of issue 27 item 1 (the twin + the cheat + the trick)."""
    answer, test, wrong, cheat = STRUCTURE_TARGETS[lecture]
    twin = cells.set_answer(full, answer, wrong.strip())
    cheat_cell = nbformat.v4.new_code_cell(cheat.strip())
    cheated = _after(twin, answer, cheat_cell)
    scratch = _after(full, answer, nbformat.v4.new_code_cell("print('trying my answer')\nx_scratch = 1"))
    scratch.cells.insert(0, nbformat.v4.new_markdown_cell("My notes"))
    scratch.cells.append(nbformat.v4.new_code_cell("print(x_scratch)"))
    retyped = copy.deepcopy(cheated)
    for c in retyped.cells:
        if cells.grade_id(c) == test:
            c.cell_type = "markdown"
            del c["outputs"], c["execution_count"]
    relabelled = copy.deepcopy(cheated)
    for c in relabelled.cells:
        if cells.grade_id(c) == test:  # no longer a test: it would run in the student's kernel, with the cheat
            c.metadata["nbgrader"].update(grade=False, locked=False)
            c.metadata["nbgrader"].pop("points", None)
    duplicated = copy.deepcopy(cheated)
    setup = [c for c in duplicated.cells if cells.grade_id(c) == "setup"][0]
    duplicated.cells.append(copy.deepcopy(setup))
    no_setup = copy.deepcopy(cheated)
    no_setup.cells = [c for c in no_setup.cells if cells.grade_id(c) != "setup"]
    two_answers = copy.deepcopy(cheated)
    (i,) = [k for k, c in enumerate(two_answers.cells) if cells.grade_id(c) == answer]
    first = copy.deepcopy(two_answers.cells[i])
    first.source = [c for c in full.cells if cells.grade_id(c) == answer][0].source   # another body: the right one
    two_answers.cells.insert(i, first)
    wrapped = copy.deepcopy(cheated)
    wrapped.cells[[k for k, c in enumerate(wrapped.cells) if c.source == cheat_cell.source][0]].source += (
        "\n" + AGENT_WRAPPER.strip())
    return {
        "twin": ("the wrong answer alone", twin),
        "scratch": ("the full solution with cells of the student's own", scratch),
        "moved_test": ("(a) the test cell moved above the answer", _move(cheated, test, answer)),
        "no_setup": ("(b) the setup cell deleted", no_setup),
        "late_setup": ("(c) the setup cell moved below the answers", _move(cheated, "setup", None)),
        "two_setups": ("(d) the setup cell duplicated", duplicated),
        "cheat": ("(e) the setup's name redefined so that the test would see the student's version", cheated),
        "agent_wrap": ("(e) the same, answered through a wrapper on the grader's agent module", wrapped),
        "retyped_test": ("(f) the test cell made a markdown cell", retyped),
        "relabelled_test": ("(f) the test cell's metadata changed (no longer graded)", relabelled),
        "two_answers": ("(g) the answer cell duplicated, the copy with another body", two_answers),
    }
