"""Counts calls into the student's functions, per test cell; runs inside a lecture's kernel.

``tests/test_pipeline.py`` sends this file's source as the first cell of a solution notebook it executes,
wraps every function an answer cell defines with :func:`_probe_wrap` right after that cell, and surrounds
each test cell with :func:`_probe_reset` and :func:`_probe_report`.  The names start with ``_probe_`` so
that they cannot clash with the lecture's own names.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, MutableMapping
from typing import Any

_probe_calls = {"count": 0}


def _probe_wrap(namespace: MutableMapping[str, Any], name: str) -> None:
    """Replace the function ``namespace[name]`` by a wrapper that counts its calls (other values: no-op)."""
    func = namespace.get(name)
    if not callable(func):
        return

    @functools.wraps(func)
    def counted(*args: Any, **kwargs: Any) -> Any:
        _probe_calls["count"] += 1
        return func(*args, **kwargs)

    namespace[name] = counted


def _probe_reset() -> None:
    _probe_calls["count"] = 0


def _probe_report(cell_id: str, emit: Callable[[str], Any] = print) -> None:
    """Print ``{"cell": cell_id, "calls": n}`` as one JSON line."""
    emit(json.dumps({"cell": cell_id, "calls": _probe_calls["count"]}))
