"""Counts calls into the student's functions, per test cell, and scribbles over their arguments; runs inside a
lecture's kernel.

``tests/test_pipeline.py`` sends this file's source as the first cell of a solution notebook it executes,
wraps every function an answer cell defines with :func:`_probe_wrap` right after that cell, and surrounds
each test cell with :func:`_probe_reset` and :func:`_probe_report`.  The names start with ``_probe_`` so
that they cannot clash with the lecture's own names.

**Tests pass copies** (``docs/design.md``, issue 26).  In the trusted kernel of ``dp-course check`` and
``dp-course grade`` the student's function works on a copy of each argument, in one kernel (Run All) on the
test's own object: a test that reads an argument again after the call would see a student's in-place update
in one and not in the other.  So while a test cell runs, each call it makes into the student's code (the
outermost one; not the calls between the student's own functions) is followed by :func:`_probe_scribble` on
its arguments: NumPy arrays are overwritten (NaN, a sentinel integer, negated booleans), lists and dicts
emptied.  A test that relies on its arguments being left alone then fails, with the solution.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, MutableMapping
from typing import Any

import numpy as _probe_np

_probe_calls = {"count": 0, "depth": 0, "in_test": False}

_PROBE_SENTINEL = -987_654


def _probe_scribble(value: Any, result: Any) -> None:
    """Overwrite ``value`` in place (a NumPy array, list or dict), unless the result is (or views) it."""
    if value is result:
        return
    if isinstance(value, _probe_np.ndarray):
        if not value.flags.writeable or (isinstance(result, _probe_np.ndarray)
                                         and _probe_np.may_share_memory(value, result)):
            return
        if value.dtype.kind in "fc":
            value[...] = _probe_np.nan
        elif value.dtype.kind in "iu":
            value[...] = _PROBE_SENTINEL if value.dtype.kind == "i" else 7
        elif value.dtype.kind == "b":
            _probe_np.logical_not(value, out=value)
    elif isinstance(value, (list, dict)):
        value.clear()


def _probe_wrap(namespace: MutableMapping[str, Any], name: str) -> None:
    """Replace the function ``namespace[name]`` by a wrapper that counts its calls and, when a test cell called
    it directly, scribbles over its arguments afterwards (other values: no-op)."""
    func = namespace.get(name)
    if not callable(func):
        return

    @functools.wraps(func)
    def counted(*args: Any, **kwargs: Any) -> Any:
        _probe_calls["count"] += 1
        _probe_calls["depth"] += 1
        try:
            result = func(*args, **kwargs)
        finally:
            _probe_calls["depth"] -= 1
        if _probe_calls["in_test"] and _probe_calls["depth"] == 0:
            for value in (*args, *kwargs.values()):
                _probe_scribble(value, result)
        return result

    namespace[name] = counted


def _probe_reset() -> None:
    _probe_calls["count"] = 0
    _probe_calls["in_test"] = True


def _probe_report(cell_id: str, emit: Callable[[str], Any] = print) -> None:
    """Print ``{"cell": cell_id, "calls": n}`` as one JSON line."""
    _probe_calls["in_test"] = False
    emit(json.dumps({"cell": cell_id, "calls": _probe_calls["count"]}))
