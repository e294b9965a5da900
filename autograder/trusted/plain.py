"""What a message between the two kernels may hold, and how much: the codec's errors, limits and collectors.

:mod:`autograder.trusted.codec` builds on this module; both are sent into the student's kernel from their
files (standard library and NumPy only).  Here:

* :class:`CodecError` – a value that is not plain data, or a message that breaks the wire format or a limit;
  when a *value* is the problem, the error says what it is and what to return instead (:func:`why_not_plain`:
  "a generator: return a list instead ..."), which is what the student reads in ``dp-course check`` and in
  the feedback;
* :class:`Limits` and :class:`Budget` – caps on one message (depth, entries, bytes, integer size, text length);
* :class:`Generators` and :class:`FunctionRefs` – where random generators and references to the student's
  functions may travel.
"""

from __future__ import annotations

import types
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CodecError", "Limits", "DEFAULT_LIMITS", "Budget", "Generators", "FunctionRefs", "describe_type",
           "why_not_plain", "PLAIN_DATA"]

PLAIN_DATA = ("numbers, strings, None, NumPy arrays of numbers or booleans, and lists / tuples / dicts / sets of "
              "these")
"""What a student's function may return, in words."""


class CodecError(ValueError):
    """A value that is not plain data, or a message that breaks the wire format or a limit.

    Attributes:
        culprit: the value that is not plain data (None when the message, not a value, is the problem).
        hint: what that value is and what to return instead (:func:`why_not_plain`), or ``""``.
    """

    def __init__(self, message: str, *, culprit: Any = None, hint: str = "") -> None:
        super().__init__(message)
        self.culprit = culprit
        self.hint = hint


@dataclass(frozen=True)
class Limits:
    """Caps applied to one message, while encoding and while decoding.

    Attributes:
        max_depth: nesting of lists / tuples / dicts / sets (a bare number has depth 0).
        max_items: entries of all lists, tuples, dicts and sets together (array elements are counted in bytes).
        max_bytes: array buffers plus string characters, in total.
        max_int_bits: size of one integer.
        max_text: length of the JSON text accepted by :func:`codec.loads` (checked before parsing).
    """

    max_depth: int = 32
    max_items: int = 100_000
    max_bytes: int = 16 * 2**20
    max_int_bits: int = 4096
    max_text: int = 24 * 2**20

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_items", "max_bytes", "max_int_bits", "max_text"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")


DEFAULT_LIMITS = Limits()


class Budget:
    """What is left of the limits while one message is encoded or decoded."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.items = limits.max_items
        self.bytes = limits.max_bytes

    def take_items(self, n: int) -> None:
        self.items -= n
        if self.items < 0:
            raise CodecError(f"more than {self.limits.max_items} list / tuple / dict / set entries in one message")

    def take_bytes(self, n: int) -> None:
        self.bytes -= n
        if self.bytes < 0:
            raise CodecError(f"more than {self.limits.max_bytes} bytes of arrays and strings in one message")

    def check_depth(self, depth: int) -> None:
        if depth > self.limits.max_depth:
            raise CodecError(f"nested more than {self.limits.max_depth} levels deep")


class Generators:
    """Collects the ``numpy.random.Generator`` objects of one message, in order of first appearance.

    The trusted side encodes a call's arguments with one of these and, after the call, gives each generator
    the state the student's kernel sends back; the student side decodes with one and reports the states.
    The same generator passed twice in one call is one generator on the other side too.
    """

    def __init__(self) -> None:
        self.items: list[np.random.Generator] = []

    def index(self, gen: np.random.Generator) -> int | None:
        return next((i for i, g in enumerate(self.items) if g is gen), None)


@dataclass(frozen=True)
class FunctionRefs:
    """How references to the student's functions travel: ``{"t": "fn", "name": name}``.

    Attributes:
        name_of: on the encoding side, the name of a value that stands for a student function, else None.
        resolve: on the decoding side, the function called ``name``.
    """

    name_of: Callable[[Any], str | None] | None = None
    resolve: Callable[[str], Any] | None = None


def describe_type(value: Any) -> str:
    """``module.qualname`` of a value's type, for messages (reads only the type, never calls the value)."""
    cls = type(value)
    module = getattr(cls, "__module__", "?")
    name = getattr(cls, "__qualname__", "?")
    return name if module == "builtins" else f"{module}.{name}"


_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.LambdaType)

_BY_MODULE = (
    ("pandas", "return a NumPy array (.to_numpy()) or a list instead"),
    ("scipy.stats", "a SciPy distribution is an object: return the numbers it gives (pmf values, samples, ...)"),
    ("matplotlib", "return the numbers, not the figure"),
    ("sympy", "return a number instead (float(...))"),
    ("decimal", "return a float or a fractions.Fraction instead"),
)


def why_not_plain(value: Any) -> str:
    """What ``value`` (which is not plain data) is, and what a student's function should return instead.

    Reads only the value's type (``isinstance``), never calls it; e.g. ``"a generator: return a list instead
    (list(...) or a list comprehension [...])"``.
    """
    if isinstance(value, types.GeneratorType):
        return "a generator: return a list instead (list(...) or a list comprehension [...])"
    if isinstance(value, (KeysView, ValuesView, ItemsView)):
        return f"a dict view ({describe_type(value)}): return a list of it instead (list(...))"
    if isinstance(value, Iterator):
        return (f"an iterator ({describe_type(value)}, e.g. from map, filter, zip or iter): return a list instead "
                "(list(...))")
    if isinstance(value, type):
        return f"a class ({getattr(value, '__qualname__', '?')}): return plain data ({PLAIN_DATA})"
    if isinstance(value, types.ModuleType):
        return "a module: return plain data computed with it"
    if isinstance(value, _FUNCTIONS):
        return "a function: return the value it computes (call it), not the function itself"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"{describe_type(value)} (raw bytes): return a str or a list of numbers instead"
    if isinstance(value, np.random.Generator):
        return "a random generator: return the numbers drawn from it"
    if isinstance(value, np.random.RandomState):
        return "an old-style numpy.random.RandomState: use (and return numbers from) a numpy.random.Generator"
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return ("a NumPy array of Python objects (dtype object): build an array of numbers instead, e.g. "
                    "np.asarray(x, dtype=float)")
        if value.dtype.kind in "US":
            return f"a NumPy array of strings (dtype {value.dtype}): return a list of str instead"
        return f"a NumPy array of dtype {value.dtype}: return an array of numbers or booleans instead"
    module = str(getattr(type(value), "__module__", ""))
    for prefix, advice in _BY_MODULE:
        if module == prefix or module.startswith(prefix + "."):
            return f"a {describe_type(value)}: {advice}"
    return f"an object of type {describe_type(value)}: return plain data instead ({PLAIN_DATA})"
