"""Helpers for the lectures' test cells: a size test that tells vectorised code from a loop, without a clock.

An exercise that says "vectorise: no Python loop over the rows" cannot be checked by timing the answer (a
timing test has no false-failure rate one can state: a loaded machine makes a fast answer slow) nor by reading
its source (``for`` in a docstring, a loop over the two columns, a helper in another cell).  What grows with the
input in a loop is the number of **Python lines the student's own code runs**: a row loop runs its body once per
row, a vectorised answer a fixed number of lines whatever the number of rows (NumPy's loops run in C).  Counting
them is deterministic: the same answer gives the same count on every machine, under any load.

:func:`count_python_lines` calls a function and counts, with :func:`sys.settrace`, the ``line`` events of the
frames that run the student's own code (below): every line executed, and every further pass of a loop, also of a
loop or comprehension written on one line.  A test calls it at two input sizes and compares (lecture 06,
Exercise 1: 8 and 4096 rows; a vectorised answer's count does not change, a row loop's grows by thousands).

**The student's own code** is the code of the notebook's cells – code that IPython compiled from a cell's text
and keeps in :mod:`linecache` without a file behind it (an entry whose modification time is ``None``) – and the
file of the function called (so the helper works on functions defined in a module too).  Library code (NumPy,
SciPy, the standard library) is not counted: a loop inside a library function the student calls does not count,
a loop in the student's own code does, and so does a function of the student's that a library calls once per
row (``np.apply_along_axis``, ``np.vectorize``, ``map`` with the student's function).

**In the grader** the test cells run in a trusted kernel, where the student's function is a proxy
(``autograder/trusted/proxy.py``): the count is then taken in the student's kernel by the grader's agent
(``autograder/trusted/agent.py``, the same rule, implemented again there because the agent is sent into the
kernel as standard-library code) and comes back with the result, so Run All, ``dp-course check`` and
``dp-course grade`` count the same lines.  :func:`count_python_lines` recognises such a proxy by the method
``counted_call`` of its class.  The count is what the student's kernel reports: like any verdict computed from
the student's answer it is a test of the answer, not a security boundary (a student who replaces the agent can
report any number, and gains at most the size test's points).

Standard library only (no ``dp_course`` imports).
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["count_python_lines", "is_cell_code"]


def is_cell_code(filename: str) -> bool:
    """Whether ``filename`` names code compiled from a notebook cell: IPython keeps a cell's text in
    :data:`linecache.cache` with no modification time (``None``), since there is no file behind it."""
    if not isinstance(filename, str):
        raise TypeError(f"filename must be a string (a code object's co_filename), got {type(filename).__name__}")
    entry = linecache.cache.get(filename)
    return isinstance(entry, tuple) and len(entry) == 4 and entry[1] is None


def count_python_lines(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Call ``func(*args, **kwargs)`` and count the Python lines the student's own code runs during the call.

    Args:
        func: the student's function (or, in the grader's trusted kernel, its proxy).
        *args, **kwargs: its arguments.

    Returns:
        ``(result, lines)``: what ``func`` returned, and the number of ``line`` events in the frames of the
        notebook's cells and of ``func``'s own file (see the module docstring).  An exception ``func`` raises
        propagates (no count then).

    Raises:
        TypeError: ``func`` is not callable.
    """
    if not callable(func):
        raise TypeError(f"func must be a callable (the student's function), got {type(func).__name__} {func!r:.80}")
    counted = getattr(type(func), "counted_call", None)
    if counted is not None:                                   # the grader's proxy: counted in the student's kernel
        result, lines = counted(func, *args, **kwargs)
        return result, int(lines)
    return _count(func, args, kwargs)


def _count(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, int]:
    own = getattr(getattr(func, "__code__", None), "co_filename", None)
    lines = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return local

    def start(frame: FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        return local if name == own or is_cell_code(name) else None

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        result = func(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return result, lines
