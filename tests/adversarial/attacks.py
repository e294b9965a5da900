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

import html
import re
import textwrap
from collections.abc import Callable, Iterable

from leak_detector import decodings
from nbformat.notebooknode import NotebookNode

from autograder import cells

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
