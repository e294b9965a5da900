"""The trusted kernel's agent inside the student's kernel: it describes names and performs calls, by value.

Sent into the student's kernel from its file (with :mod:`autograder.trusted.codec`, by
:mod:`autograder.trusted.loader`) before the first cell.  The trusted kernel reaches it with silent
``execute_request`` messages whose only content is a *user expression* such as::

    __import__("sys").modules["_dpc_trusted.agent"].call(globals(), '{"name": "f", "args": [...], ...}')

so all the student's kernel ever receives from a test is the name of a function and the arguments, as plain
data – never the test's source, its expected values or its comparisons.  IPython evaluates user expressions
directly (no input transformers, no history) and sends the value's ``repr`` back as ``text/plain``; a
:class:`Reply` makes that ``repr`` the JSON answer itself.

Nothing here is trusted: the student can replace this module.  The trusted side treats every reply as hostile
data (it decodes with its own limits and builds only plain values), so tampering with the agent gains no
more than returning a value from an answer does.  The agent is the honest path: it keeps the student's
behaviour as close as possible to a single kernel (exceptions keep their built-in type, a generator argument
comes back advanced).  Standard library and NumPy only.
"""

from __future__ import annotations

import importlib.util
import json
import linecache
import os
import sys
import types
import warnings
from collections.abc import Mapping
from typing import Any

from . import codec

__all__ = ["PROTOCOL", "MAX_WARNINGS", "Reply", "describe", "call", "exception_info", "describe_value",
           "warning_info", "is_cell_code", "counted_call", "library_dir", "traced_call"]

PROTOCOL = 1
"""Version of the request / reply format (checked by the trusted side)."""

MAX_MESSAGE_CHARS = 2000
"""Longest exception message sent back."""

MAX_WARNINGS = 20
"""Most warnings of one call sent back (the first ones)."""

LIBRARY = "dp_course"
"""The course library, whose functions a library-call test names (:func:`traced_call`)."""


class Reply:
    """A reply whose ``repr`` is its JSON text, so that IPython's ``text/plain`` of it is the JSON itself."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _reply(content: dict[str, Any]) -> Reply:
    return Reply(json.dumps({"protocol": PROTOCOL, **content}, allow_nan=False, separators=(",", ":")))


def exception_info(exc: BaseException, where: str) -> dict[str, str]:
    """What the trusted side needs to re-raise ``exc``: its type name, its nearest built-in base class
    (``ValueError`` for a ``class MyError(ValueError)``), its message (truncated) and where it happened
    (``"request"``, ``"call"`` or ``"result"``)."""
    cls = type(exc)
    builtin = next((c.__name__ for c in cls.__mro__ if c.__module__ == "builtins"), "BaseException")
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - the student's __str__ may raise anything
        message = "(the exception's message could not be read)"
    return {"type": str(cls.__name__)[:100], "builtin": builtin, "message": message[:MAX_MESSAGE_CHARS],
            "where": where}


def warning_info(record: warnings.WarningMessage) -> dict[str, Any]:
    """What the trusted side needs to raise a warning again: its category's name, its nearest built-in
    category (``RuntimeWarning`` for a ``class MyWarning(RuntimeWarning)``), its message (truncated) and line."""
    category = record.category if isinstance(record.category, type) else UserWarning
    builtin = next((c.__name__ for c in category.__mro__ if c.__module__ == "builtins"), "UserWarning")
    try:
        message = str(record.message)
    except BaseException:  # noqa: BLE001 - the student's __str__ may raise anything
        message = "(the warning's message could not be read)"
    lineno = record.lineno if type(record.lineno) is int else 0
    return {"type": str(category.__name__)[:100], "builtin": builtin, "message": message[:MAX_MESSAGE_CHARS],
            "lineno": lineno}


def describe_value(value: Any, limits: codec.Limits) -> dict[str, Any]:
    """How the trusted side should see one of the student's names.

    ``{"kind": "module", "module": name}`` for a module, ``{"kind": "function"}`` for anything callable
    that is not a class, ``{"kind": "data", "value": tree}`` for plain data, else
    ``{"kind": "other", "type": ..., "why": ...}``.
    """
    if isinstance(value, types.ModuleType):
        return {"kind": "module", "module": str(value.__name__)}
    if isinstance(value, type):
        return {"kind": "other", "type": f"class {value.__name__}", "why": "a class"}
    if callable(value):
        return {"kind": "function", "type": codec.describe_type(value)}
    try:
        return {"kind": "data", "value": codec.to_tree(value, limits)}
    except codec.CodecError as exc:
        return {"kind": "other", "type": codec.describe_type(value), "why": str(exc)[:MAX_MESSAGE_CHARS]}


def _limits(request: Mapping[str, Any]) -> codec.Limits:
    return codec.Limits(**request["limits"])


def describe(namespace: Mapping[str, Any], request: str) -> Reply:
    """Describe the names in ``request`` (``{"names": [...], "limits": {...}}``) as found in ``namespace``.

    Returns:
        ``{"names": {name: description}}`` (:func:`describe_value`; ``{"kind": "missing"}`` for an unbound
        name), or ``{"error": ...}`` for a malformed request.
    """
    try:
        parsed = json.loads(request)
        limits = _limits(parsed)
        names = [str(n) for n in parsed["names"]]
    except Exception as exc:  # noqa: BLE001 - any malformed request is reported, never raised
        return _reply({"error": exception_info(exc, "request")})
    out: dict[str, Any] = {}
    for name in names:
        if name not in namespace:
            out[name] = {"kind": "missing"}
        else:
            out[name] = describe_value(namespace[name], limits)
    return _reply({"names": out})


def _function(namespace: Mapping[str, Any], name: str) -> Any:
    if name not in namespace:
        raise NameError(f"name {name!r} is not defined")
    func = namespace[name]
    if not callable(func) or isinstance(func, type):
        raise TypeError(f"{name!r} is not a function")
    return func


def call(namespace: Mapping[str, Any], request: str) -> Reply:
    """Call the student's function named in ``request`` with its arguments; answer with the result by value.

    ``request`` is ``{"name": ..., "args": tree, "kwargs": tree, "limits": {...}}``, with ``"count_lines": true``
    for a size test and ``"library_calls": true`` for a library-call test (:func:`traced_call`).  Generators in the
    arguments are rebuilt from their state, references ``{"t": "fn"}`` become the student's functions of
    that name.  The student's output during the call goes to the student's kernel as usual, which the
    trusted side does not read.  The warnings the call raises are recorded instead of shown (under the
    student's kernel's warning filters, as in one kernel) and sent back, so the test sees them as if the
    call had run in its own kernel.

    Returns:
        ``{"ok": tree, "rngs": [state trees], "warnings": [warning_info]}`` – the result, the final state of
        each generator argument and the first :data:`MAX_WARNINGS` warnings, ``"lines": count`` and
        ``"library": [sorted names]`` when the request asked for them – or ``{"error": exception_info,
        "rngs": [...], "warnings": [...]}``.  A result that is not plain data is an error with ``where ==
        "result"``, whose message says what it is and what to return instead (:func:`plain.why_not_plain`).
    """
    generators = codec.Generators()
    try:
        parsed = json.loads(request)
        limits = _limits(parsed)
        refs = codec.FunctionRefs(resolve=lambda fname: _function(namespace, fname))
        args = codec.from_tree(parsed["args"], limits, generators=generators, functions=refs)
        kwargs = codec.from_tree(parsed["kwargs"], limits, generators=generators, functions=refs)
        if type(args) is not list or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
            raise TypeError("malformed arguments")
        func = _function(namespace, str(parsed["name"]))
        count = parsed.get("count_lines") is True
        library = parsed.get("library_calls") is True
    except Exception as exc:  # noqa: BLE001 - reported to the trusted side
        return _reply({"error": exception_info(exc, "request"), "rngs": []})
    lines, names = 0, frozenset[str]()
    with warnings.catch_warnings(record=True) as caught:
        try:
            if count or library:
                result, lines, names = traced_call(func, args, kwargs)
            else:
                result = func(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt too: the grader's interrupt on timeout
            return _reply({"error": exception_info(exc, "call"), "rngs": _states(generators, limits),
                           "warnings": [warning_info(w) for w in caught[:MAX_WARNINGS]]})
    states = _states(generators, limits)
    raised = [warning_info(w) for w in caught[:MAX_WARNINGS]]
    try:
        tree = codec.to_tree(result, limits)
    except codec.CodecError as exc:
        info = exception_info(exc, "result")
        info["type"] = codec.describe_type(result)[:100]
        if exc.hint:
            inside = "" if exc.culprit is result else f"{_article(info['type'])} holding "
            info["hint"] = f"{inside}{exc.hint}"[:MAX_MESSAGE_CHARS]
        return _reply({"error": info, "rngs": states, "warnings": raised})
    return _reply({"ok": tree, "rngs": states, "warnings": raised, **({"lines": lines} if count else {}),
                   **({"library": sorted(names)} if library else {})})


def is_cell_code(filename: str) -> bool:
    """Whether ``filename`` names code compiled from a notebook cell: IPython keeps a cell's text in
    :data:`linecache.cache` with no modification time (``None``).  The same rule as
    :func:`dp_course.testing.is_cell_code` (this module cannot import the course library)."""
    entry = linecache.cache.get(filename)
    return isinstance(entry, tuple) and len(entry) == 4 and entry[1] is None


def counted_call(func: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, int]:
    """``func(*args, **kwargs)`` and the number of Python lines the student's own code ran during it: the
    ``line`` events (:func:`sys.settrace`) of frames of the notebook's cells and of ``func``'s own file.  The
    same count as :func:`dp_course.testing.count_python_lines` in one kernel (``tests/trusted/test_size.py``
    compares them); the previous trace function is put back afterwards, also when the call raises."""
    result, lines, _ = traced_call(func, args, kwargs)
    return result, lines


def library_dir() -> str | None:
    """The folder of the course library (:data:`LIBRARY`) this kernel imports, found without importing it;
    None if it is not installed."""
    spec = importlib.util.find_spec(LIBRARY)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return os.path.abspath(locations[0]) if locations else None


def traced_call(func: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, int, frozenset[str]]:
    """``func(*args, **kwargs)``, the Python lines the student's own code ran during it (:func:`counted_call`)
    and the qualified names of the course library's functions that started running during it (a frame whose
    file lies below :func:`library_dir`: ``"dp_course.pld.gaussian.GaussianPLD._log_delta"``).  The same rules
    as :func:`dp_course.testing.count_python_lines` and :func:`dp_course.testing.library_calls` in one kernel
    (``tests/trusted/test_size.py`` and ``test_library_calls.py`` compare them); the previous trace function is
    put back afterwards, also when the call raises."""
    own = getattr(getattr(func, "__code__", None), "co_filename", None)
    root = library_dir()
    prefix = None if root is None else root + os.sep
    lines = 0
    modules: dict[str, str | None] = {}
    entered: set[str] = set()

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return local

    def start(frame: types.FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        if prefix is not None and name.startswith(prefix) and name.endswith(".py"):
            if name not in modules:
                dotted = [LIBRARY, *os.path.relpath(name[:-3], root).split(os.sep)]
                modules[name] = ".".join(dotted[:-1] if dotted[-1] == "__init__" else dotted)
            entered.add(f"{modules[name]}.{frame.f_code.co_qualname}")
        return local if name == own or is_cell_code(name) else None

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        result = func(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return result, lines, frozenset(entered)


def _article(type_name: str) -> str:
    return f"{'an' if type_name[:1].lower() in 'aeiou' else 'a'} {type_name}"


def _states(generators: codec.Generators, limits: codec.Limits) -> list[Any]:
    """The bit-generator state of every generator argument, after the call."""
    try:
        return [codec.to_tree(g.bit_generator.state, limits) for g in generators.items]
    except codec.CodecError:
        return []
