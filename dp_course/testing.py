"""Helpers for the lectures' test cells: deterministic tests of *how* an answer computes, without a clock.

A **size test** tells vectorised code from a loop.  An exercise that says "vectorise: no Python loop over the
rows" cannot be checked by timing the answer (a timing test has no false-failure rate one can state: a loaded
machine makes a fast answer slow) nor by reading its source (``for`` in a docstring, a loop over the two
columns, a helper in another cell).  What grows with the input in a loop is the number of **Python lines the
student's own code runs**: a row loop runs its body once per row, a vectorised answer a fixed number of lines
whatever the number of rows (NumPy's loops run in C).  Counting them is deterministic: the same answer gives the
same count on every machine, under any load.

:func:`count_python_lines` calls a function and counts, with :func:`sys.settrace`, the ``line`` events of the
frames that run the student's own code (below): every line executed, and every further pass of a loop, also of a
loop or comprehension written on one line.  A test calls it at two input sizes and compares (lecture 06,
Exercise 1: 8 and 4096 rows; a vectorised answer's count does not change, a row loop's grows by thousands).

A **library-call test** tells a derivation from a call into the course library that computes the same thing.
Where an exercise asks the student to compute something the library already computes exactly (lecture 05,
Exercise 4(a): the Gaussian privacy profile in log-space, which ``GaussianPLD._log_delta`` returns), numbers
cannot separate the two.  :func:`library_calls` calls a function under the same tracer and returns, with the
result, the set of functions of the installed ``dp_course`` package that ran during the call, by qualified name
(``"dp_course.pld.gaussian.GaussianPLD._log_delta"``: the module, from the file's place in the package, and the
code object's ``co_qualname``).  A test asserts that no name of the forbidden code is in it.  Every Python
function of the package that starts running during the call is seen – called directly, through a bound or
stored method, a public wrapper, a ``functools.partial``, or by NumPy or SciPy calling it back – since the
tracer sees every new Python frame; a name is recorded once however often it runs.

**The student's own code** is the code of the notebook's cells – code that IPython compiled from a cell's text
and keeps in :mod:`linecache` without a file behind it (an entry whose modification time is ``None``) – and the
file of the function called (so the helper works on functions defined in a module too).  Library code (NumPy,
SciPy, the standard library) is not counted: a loop inside a library function the student calls does not count,
a loop in the student's own code does, and so does a function of the student's that a library calls once per
row (``np.apply_along_axis``, ``np.vectorize``, ``map`` with the student's function).

**In the grader** the test cells run in a trusted kernel, where the student's function is a proxy
(``autograder/trusted/proxy.py``): the trace is then taken in the student's kernel by the grader's agent
(``autograder/trusted/agent.py``, the same rules, implemented again there because the agent is sent into the
kernel as standard-library code; ``tests/trusted/test_size.py`` and ``tests/trusted/test_library_calls.py``
check both agree) and comes back with the result, so Run All, ``dp-course check`` and ``dp-course grade`` see
the same lines and the same library functions.  :func:`count_python_lines` recognises such a proxy by the method
``counted_call`` of its class, :func:`library_calls` by ``library_call``.  What the helpers return is what the
student's kernel reports: like any verdict computed from the student's answer it is a test of the answer, not a
security boundary (a student who replaces the agent, turns the tracer off with ``sys.settrace(None)``, runs the
library in a thread or copies the library's source into a cell defeats it, and gains at most that test's points).

Standard library only (no ``dp_course`` imports).
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

__all__ = ["count_python_lines", "library_calls", "library_function_name", "is_cell_code"]

LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__))
"""The folder of the installed ``dp_course`` package: code from a file below it is the library's."""


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
    counted = _proxy_method(func, "counted_call")
    if counted is not None:                                   # the grader's proxy: counted in the student's kernel
        result, lines = counted(func, *args, **kwargs)
        return result, int(lines)
    result, lines, _ = _traced(func, args, kwargs)
    return result, lines


def library_calls(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[Any, frozenset[str]]:
    """Call ``func(*args, **kwargs)`` and name the functions of the course library that ran during the call.

    Args:
        func: the student's function (or, in the grader's trusted kernel, its proxy).
        *args, **kwargs: its arguments.

    Returns:
        ``(result, names)``: what ``func`` returned, and the qualified names
        (:func:`library_function_name`, e.g. ``"dp_course.pld.gaussian.GaussianPLD._log_delta"``) of every
        function of the installed ``dp_course`` package whose code started running during the call (see the
        module docstring).  An exception ``func`` raises propagates (no names then).

    Raises:
        TypeError: ``func`` is not callable.
    """
    traced = _proxy_method(func, "library_call")
    if traced is not None:                                    # the grader's proxy: traced in the student's kernel
        result, names = traced(func, *args, **kwargs)
        return result, frozenset(names)
    result, _, names = _traced(func, args, kwargs)
    return result, names


def library_function_name(code: CodeType, library_dir: str = LIBRARY_DIR) -> str | None:
    """The qualified name of a code object of the library below ``library_dir``, else None.

    The module's dotted name comes from the file's place in the package (``<dir>/pld/gaussian.py`` is
    ``dp_course.pld.gaussian``, an ``__init__.py`` the package itself), followed by ``co_qualname``.

    Raises:
        TypeError: ``code`` is not a code object, or ``library_dir`` not a string.
        ValueError: ``library_dir`` is not an absolute, normalised path.
    """
    if not isinstance(code, CodeType):
        raise TypeError(f"code must be a code object (a frame's f_code), got {type(code).__name__}")
    if not isinstance(library_dir, str):
        raise TypeError(f"library_dir must be a string (the package's folder), got {type(library_dir).__name__}")
    if not os.path.isabs(library_dir) or library_dir != os.path.normpath(library_dir):
        raise ValueError(f"library_dir must be an absolute, normalised path (the package's folder), "
                         f"got {library_dir!r:.200}")
    return _library_name(code, library_dir)


def _library_name(code: CodeType, library_dir: str) -> str | None:
    module = _library_module(code.co_filename, library_dir)
    return None if module is None else f"{module}.{code.co_qualname}"


@functools.lru_cache(maxsize=4096)
def _library_module(filename: str, library_dir: str) -> str | None:
    if not (isinstance(filename, str) and filename.startswith(library_dir + os.sep) and filename.endswith(".py")):
        return None
    parts = [os.path.basename(library_dir), *os.path.relpath(filename[:-3], library_dir).split(os.sep)]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _proxy_method(func: Callable[..., Any], method: str) -> Any:
    """The method ``method`` of the grader's proxy class if ``func`` is such a proxy, else None; refuses a
    ``func`` that is not callable."""
    if not callable(func):
        raise TypeError(f"func must be a callable (the student's function), got {type(func).__name__} {func!r:.80}")
    return getattr(type(func), method, None)


def _traced(func: Callable[..., Any], args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> tuple[Any, int, frozenset[str]]:
    """``func(*args, **kwargs)``, the ``line`` events of the student's own frames and the library functions that
    started running; the previous trace function is put back afterwards, also when the call raises."""
    own = getattr(getattr(func, "__code__", None), "co_filename", None)
    lines = 0
    entered: set[str] = set()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return local

    def start(frame: FrameType, event: str, arg: Any) -> Any:
        library = _library_name(frame.f_code, LIBRARY_DIR)
        if library is not None:
            entered.add(library)
        name = frame.f_code.co_filename
        return local if name == own or is_cell_code(name) else None

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        result = func(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return result, lines, frozenset(entered)
