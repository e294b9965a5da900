"""Plain data by value: the only form in which values cross between the student's kernel and the trusted one.

Both sides use this module: the trusted kernel encodes the arguments of a call and decodes its result, the
agent in the student's kernel (:mod:`autograder.trusted.agent`) decodes the arguments and encodes the result.
It needs nothing but the standard library and NumPy, because it is sent into the student's kernel from its
file.

The wire form is JSON text holding a *tree*:

=====================================  ==========================================================
value                                  tree
=====================================  ==========================================================
``None``, ``bool``, ``str``            the JSON value
``int`` of at most 63 bits             a JSON integer; larger: ``{"t": "int", "hex": "-1f..."}``
finite ``float``                       a JSON number (``repr``: exact round trip)
``nan``, ``inf``, ``-inf``             ``{"t": "float", "v": "nan"}``
``complex``                            ``{"t": "complex", "re": tree, "im": tree}``
``list``                               a JSON array of trees
``tuple``                              ``{"t": "tuple", "v": [trees]}``
``dict`` (any hashable plain keys)     ``{"t": "dict", "k": [trees], "v": [trees]}``
``set``, ``frozenset``                 ``{"t": "set", "v": [trees]}``, ``{"t": "frozenset", "v": [trees]}``
``range``                              ``{"t": "range", "v": [start, stop, step]}``
``fractions.Fraction``                 ``{"t": "fraction", "n": numerator, "d": denominator}``
NumPy array (bool / int / float /      ``{"t": "nd", "d": "<f8", "s": [shape], "b": base64 of the
complex dtype, any shape: 0-d, empty)  little-endian C-order buffer}`` (any byte order on the way in)
NumPy scalar of those dtypes           ``{"t": "np", "d": "<f8", "b": base64}`` (keeps its dtype)
``numpy.random.Generator``             ``{"t": "rng", "i": n, "bg": "PCG64", "state": tree}`` (only where the
                                       caller collects generators, see :class:`Generators`)
=====================================  ==========================================================

Decoding never calls code that came with the data: it walks the parsed JSON (built-in types only), checks
every tag, dtype, shape and size, and builds values with ``int``, ``float``, ``complex`` and
``numpy.frombuffer``.  Nothing is unpickled.  Limits on depth, entries, bytes and integer size
(:class:`Limits`) apply while encoding and while decoding, so a hostile peer can neither exhaust memory nor
recursion.  Instances of subclasses of these types (an ``IntEnum`` member, a ``float`` subclass with its own
``__eq__``, a masked array) travel as the plain value; their methods stay behind.  A value outside this list
(an object, a class, a function, a generator, an object-dtype array) is a :class:`CodecError` naming what was
found and what to return instead (:func:`plain.why_not_plain`).  The errors, limits and collectors live in
:mod:`autograder.trusted.plain`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np

from .plain import (DEFAULT_LIMITS, PLAIN_DATA, Budget, CodecError, FunctionRefs, Generators, Limits,
                    describe_type, why_not_plain)

__all__ = ["CodecError", "Limits", "DEFAULT_LIMITS", "Generators", "FunctionRefs", "encode", "decode",
           "to_tree", "from_tree", "loads", "describe_type", "why_not_plain"]

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
"""NumPy bit generators whose state may travel (all of NumPy's; the state is a dict of ints and arrays)."""

_DTYPES = frozenset({"|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
                     "<c8", "<c16"})
"""Array dtypes accepted on the wire: booleans and fixed-size numbers, little-endian."""

_SMALL_INT_BITS = 63


# ---------------------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------------------

def encode(value: Any, limits: Limits = DEFAULT_LIMITS, *, generators: Generators | None = None,
           functions: FunctionRefs | None = None) -> str:
    """JSON text of ``value`` (see the module docstring for the forms).

    Raises:
        CodecError: ``value`` holds something that is not plain data, or breaks a limit.
    """
    return json.dumps(to_tree(value, limits, generators=generators, functions=functions),
                      allow_nan=False, separators=(",", ":"))


def to_tree(value: Any, limits: Limits = DEFAULT_LIMITS, *, generators: Generators | None = None,
            functions: FunctionRefs | None = None) -> Any:
    """The JSON-ready tree of ``value``, within ``limits``."""
    return _Encoder(Budget(limits), generators, functions).tree(value, 0)


class _Encoder:
    def __init__(self, budget: Budget, generators: Generators | None, functions: FunctionRefs | None) -> None:
        self.budget = budget
        self.generators = generators
        self.functions = functions

    def tree(self, value: Any, depth: int) -> Any:
        self.budget.check_depth(depth)
        cls = type(value)
        if value is None or cls is bool:
            return value
        if cls is str:
            self.budget.take_bytes(len(value))
            return value
        if cls is int:
            return self.integer(value)
        if cls is float:
            return self.real(value)
        if cls is complex:
            return {"t": "complex", "re": self.real(value.real), "im": self.real(value.imag)}
        if cls is list:
            self.budget.take_items(len(value))
            return [self.tree(v, depth + 1) for v in value]
        if cls is tuple:
            self.budget.take_items(len(value))
            return {"t": "tuple", "v": [self.tree(v, depth + 1) for v in value]}
        if cls is dict:
            self.budget.take_items(len(value))
            keys, values = list(value.keys()), list(value.values())
            return {"t": "dict", "k": [self.tree(k, depth + 1) for k in keys],
                    "v": [self.tree(v, depth + 1) for v in values]}
        if cls is set or cls is frozenset:
            self.budget.take_items(len(value))
            return {"t": cls.__name__, "v": [self.tree(v, depth + 1) for v in value]}
        if cls is range:
            return {"t": "range", "v": [self.integer(value.start), self.integer(value.stop), self.integer(value.step)]}
        if cls is Fraction:
            return {"t": "fraction", "n": self.integer(value.numerator), "d": self.integer(value.denominator)}
        if isinstance(value, np.ndarray):
            return self.array(value)
        if isinstance(value, np.generic):
            return self.scalar(value)
        if isinstance(value, np.random.Generator):
            return self.generator(value, depth)
        name = self.functions.name_of(value) if self.functions and self.functions.name_of else None
        if name is not None:
            return {"t": "fn", "name": name}
        return self.subclass(value, depth)

    def subclass(self, value: Any, depth: int) -> Any:
        """Instances of subclasses of the plain types travel as the plain value (their methods stay behind)."""
        if isinstance(value, bool):                                   # pragma: no cover - bool is final
            return bool(value)
        if isinstance(value, int):
            return self.integer(int.__index__(value))
        if isinstance(value, float):
            return self.real(float.__float__(value))
        if isinstance(value, complex):
            return self.tree(complex(float.__float__(value.real), float.__float__(value.imag)), depth)
        if isinstance(value, str):
            return self.tree(str.__str__(value), depth)
        for base in (list, tuple, dict, set, frozenset):
            if isinstance(value, base):
                return self.tree(base(value), depth)
        if isinstance(value, Fraction):
            return self.tree(Fraction(int(value.numerator), int(value.denominator)), depth)
        hint = why_not_plain(value)
        raise CodecError(f"a value of type {describe_type(value)} is not plain data ({PLAIN_DATA}): {hint}",
                         culprit=value, hint=hint)

    def integer(self, value: int) -> Any:
        bits = value.bit_length()
        if bits <= _SMALL_INT_BITS:
            return value
        if bits > self.budget.limits.max_int_bits:
            raise CodecError(f"an integer of {bits} bits is larger than the limit of "
                             f"{self.budget.limits.max_int_bits} bits")
        return {"t": "int", "hex": format(value, "x")}

    @staticmethod
    def real(value: float) -> Any:
        if math.isfinite(value):
            return value
        return {"t": "float", "v": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}

    def _buffer(self, arr: np.ndarray) -> tuple[str, str]:
        dtype = arr.dtype
        if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
            raise CodecError(f"a NumPy array of dtype {dtype} is not plain data; only arrays of booleans, "
                             "integers, floats and complex numbers can be passed", culprit=arr,
                             hint=why_not_plain(arr))
        little = dtype.newbyteorder("<")
        if little.str not in _DTYPES:
            hint = f"a NumPy value of dtype {dtype}: use float64, int64, bool, complex128, ... instead"
            raise CodecError(f"NumPy dtype {dtype} cannot be passed (use float64, int64, bool, complex128, ...)",
                             culprit=arr, hint=hint)
        self.budget.take_bytes(arr.size * little.itemsize)
        data = np.ascontiguousarray(arr, dtype=little).tobytes()
        return little.str, base64.b64encode(data).decode("ascii")

    def array(self, value: np.ndarray) -> Any:
        arr = np.asarray(value)
        if type(value) is not np.ndarray:           # subclasses (matrix, masked, ...) travel as plain arrays
            arr = np.array(value, copy=True, subok=False)
        dtype, data = self._buffer(arr)
        return {"t": "nd", "d": dtype, "s": [int(n) for n in arr.shape], "b": data}

    def scalar(self, value: np.generic) -> Any:
        if value.dtype.kind not in "biufc":
            return self.subclass(value, 0)
        dtype, data = self._buffer(np.asarray(value).reshape(()))
        return {"t": "np", "d": dtype, "b": data}

    def generator(self, gen: np.random.Generator, depth: int) -> Any:
        if self.generators is None:
            raise CodecError("a numpy.random.Generator can only be passed as an argument of a call", culprit=gen,
                             hint=why_not_plain(gen))
        known = self.generators.index(gen)
        if known is not None:
            return {"t": "rng", "i": known}
        if type(gen) is not np.random.Generator:
            raise CodecError(f"generators of type {describe_type(gen)} cannot be passed")
        bit_generator = gen.bit_generator
        name = type(bit_generator).__name__
        if name not in _BIT_GENERATORS or type(bit_generator) is not getattr(np.random, name):
            raise CodecError(f"a generator built on {describe_type(bit_generator)} cannot be passed")
        self.generators.items.append(gen)
        return {"t": "rng", "i": len(self.generators.items) - 1, "bg": name,
                "state": self.tree(bit_generator.state, depth + 1)}


# ---------------------------------------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise CodecError(f"the JSON constant {name} is not allowed (non-finite floats travel tagged)")


def loads(text: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Parse JSON text from the other side, after checking its type and length (no NaN / Infinity tokens).

    Raises:
        CodecError: not a string, too long, not JSON, or nested beyond what the parser allows.
    """
    if not isinstance(text, str):
        raise CodecError(f"expected JSON text, got {describe_type(text)}")
    if len(text) > limits.max_text:
        raise CodecError(f"a message of {len(text)} characters is longer than the limit of {limits.max_text}")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except CodecError:
        raise
    except RecursionError:
        raise CodecError("not a valid message: nested too deeply") from None
    except (ValueError, MemoryError) as exc:
        raise CodecError(f"not a valid message: {type(exc).__name__}: {str(exc)[:200]}") from None


def decode(text: Any, limits: Limits = DEFAULT_LIMITS, *, generators: Generators | None = None,
           functions: FunctionRefs | None = None) -> Any:
    """The value encoded in ``text`` by :func:`encode`.

    Raises:
        CodecError: the text is not a well-formed message within ``limits``.
    """
    return from_tree(loads(text, limits), limits, generators=generators, functions=functions)


def from_tree(tree: Any, limits: Limits = DEFAULT_LIMITS, *, generators: Generators | None = None,
              functions: FunctionRefs | None = None) -> Any:
    """The value of a parsed tree (see :func:`loads`); ``generators`` / ``functions`` allow those tags."""
    try:
        return _Decoder(Budget(limits), generators, functions).value(tree, 0)
    except RecursionError:
        raise CodecError("nested too deeply") from None


_TAG_KEYS = {"int": {"hex"}, "float": {"v"}, "complex": {"re", "im"}, "tuple": {"v"}, "dict": {"k", "v"},
             "set": {"v"}, "frozenset": {"v"}, "range": {"v"}, "fraction": {"n", "d"},
             "nd": {"d", "s", "b"}, "np": {"d", "b"}, "rng": {"i", "bg", "state"}, "fn": {"name"}}


class _Decoder:
    def __init__(self, budget: Budget, generators: Generators | None, functions: FunctionRefs | None) -> None:
        self.budget = budget
        self.generators = generators
        self.functions = functions

    def value(self, tree: Any, depth: int) -> Any:
        self.budget.check_depth(depth)
        cls = type(tree)
        if tree is None or cls is bool:
            return tree
        if cls is str:
            self.budget.take_bytes(len(tree))
            return tree
        if cls is int:
            if tree.bit_length() > self.budget.limits.max_int_bits:
                raise CodecError("an integer is larger than the limit")
            return tree
        if cls is float:
            return tree
        if cls is list:
            self.budget.take_items(len(tree))
            return [self.value(v, depth + 1) for v in tree]
        if cls is dict:
            return self.tagged(tree, depth)
        raise CodecError(f"unexpected JSON value of type {cls.__name__}")

    def tagged(self, tree: dict[str, Any], depth: int) -> Any:
        tag = tree.get("t")
        if not isinstance(tag, str) or tag not in _TAG_KEYS:
            raise CodecError(f"unknown tag {str(tag)[:40]!r}")
        keys = set(tree) - {"t"}
        allowed = _TAG_KEYS[tag]
        if not keys <= allowed or (tag != "rng" and keys != allowed):
            raise CodecError(f"tag {tag!r} with fields {sorted(keys)[:10]}, expected {sorted(allowed)}")
        return getattr(self, f"tag_{tag}")(tree, depth)

    def tag_int(self, tree: dict[str, Any], depth: int) -> int:
        text = tree["hex"]
        if not isinstance(text, str) or len(text) > self.budget.limits.max_int_bits // 4 + 2:
            raise CodecError("a large integer is malformed or larger than the limit")
        try:
            return int(text, 16)
        except ValueError:
            raise CodecError("a large integer is malformed") from None

    @staticmethod
    def tag_float(tree: dict[str, Any], depth: int) -> float:
        special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        if tree["v"] not in special:
            raise CodecError(f"unknown special float {str(tree['v'])[:20]!r}")
        return special[tree["v"]]

    def tag_complex(self, tree: dict[str, Any], depth: int) -> complex:
        parts = [self.value(tree[k], depth + 1) for k in ("re", "im")]
        if not all(type(p) in (int, float) for p in parts):
            raise CodecError("a complex number needs real parts")
        return complex(float(parts[0]), float(parts[1]))

    def _list(self, tree: dict[str, Any], key: str) -> list[Any]:
        items = tree[key]
        if type(items) is not list:
            raise CodecError(f"field {key!r} must be a list")
        return items

    def tag_tuple(self, tree: dict[str, Any], depth: int) -> tuple[Any, ...]:
        items = self._list(tree, "v")
        self.budget.take_items(len(items))
        return tuple(self.value(v, depth + 1) for v in items)

    def tag_dict(self, tree: dict[str, Any], depth: int) -> dict[Any, Any]:
        keys, values = self._list(tree, "k"), self._list(tree, "v")
        if len(keys) != len(values):
            raise CodecError("a dict needs as many values as keys")
        self.budget.take_items(len(keys))
        out = {}
        for k, v in zip(keys, values, strict=True):
            key, item = self.value(k, depth + 1), self.value(v, depth + 1)
            try:
                out[key] = item
            except TypeError:
                raise CodecError(f"a dict key of type {describe_type(key)} is not hashable") from None
        return out

    def _members(self, tree: dict[str, Any], depth: int) -> list[Any]:
        items = self._list(tree, "v")
        self.budget.take_items(len(items))
        out = [self.value(v, depth + 1) for v in items]
        for item in out:
            try:
                hash(item)              # decoded values are plain: hashing them runs no foreign code
            except TypeError:
                raise CodecError(f"a set member of type {describe_type(item)} is not hashable") from None
        return out

    def tag_set(self, tree: dict[str, Any], depth: int) -> set[Any]:
        return set(self._members(tree, depth))

    def tag_frozenset(self, tree: dict[str, Any], depth: int) -> frozenset[Any]:
        return frozenset(self._members(tree, depth))

    def _integers(self, trees: list[Any], depth: int) -> list[int]:
        values = [self.value(t, depth + 1) for t in trees]
        if not all(type(v) is int for v in values):
            raise CodecError("expected integers")
        return values

    def tag_range(self, tree: dict[str, Any], depth: int) -> range:
        items = self._list(tree, "v")
        if len(items) != 3:
            raise CodecError("a range needs start, stop and step")
        start, stop, step = self._integers(items, depth)
        if step == 0:
            raise CodecError("a range needs a step other than 0")
        return range(start, stop, step)

    def tag_fraction(self, tree: dict[str, Any], depth: int) -> Fraction:
        numerator, denominator = self._integers([tree["n"], tree["d"]], depth)
        if denominator <= 0:
            raise CodecError("a fraction needs a positive denominator")
        return Fraction(numerator, denominator)

    def _buffer(self, tree: dict[str, Any], count: int) -> tuple[np.dtype, bytes]:
        dtype_str = tree["d"]
        if not isinstance(dtype_str, str) or dtype_str not in _DTYPES:
            raise CodecError(f"dtype {str(dtype_str)[:20]!r} is not accepted")
        dtype = np.dtype(dtype_str)
        nbytes = count * dtype.itemsize
        self.budget.take_bytes(nbytes)
        text = tree["b"]
        if not isinstance(text, str) or len(text) != 4 * ((nbytes + 2) // 3):
            raise CodecError(f"the buffer of an array of {count} elements of {dtype_str} has the wrong length")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise CodecError("an array buffer is not valid base64") from None
        if len(raw) != nbytes:
            raise CodecError("an array buffer has the wrong length")
        return dtype, raw

    def tag_nd(self, tree: dict[str, Any], depth: int) -> np.ndarray:
        shape = tree["s"]
        if (type(shape) is not list or len(shape) > 32
                or not all(type(n) is int and 0 <= n <= self.budget.limits.max_bytes for n in shape)):
            raise CodecError("an array shape must be a list of at most 32 non-negative integers")
        count = math.prod(shape)
        dtype, raw = self._buffer(tree, count)
        return np.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)

    def tag_np(self, tree: dict[str, Any], depth: int) -> np.generic:
        dtype, raw = self._buffer(tree, 1)
        value: np.generic = np.frombuffer(raw, dtype=dtype)[0]
        return value

    def tag_rng(self, tree: dict[str, Any], depth: int) -> np.random.Generator:
        if self.generators is None:
            raise CodecError("a generator is not accepted here")
        index = tree["i"]
        if type(index) is not int or not 0 <= index <= len(self.generators.items):
            raise CodecError("a generator reference is out of range")
        if index < len(self.generators.items):
            if "bg" in tree or "state" in tree:
                raise CodecError("a repeated generator carries a state")
            return self.generators.items[index]
        name = tree.get("bg")
        if name not in _BIT_GENERATORS or "state" not in tree:
            raise CodecError(f"unknown bit generator {str(name)[:20]!r}")
        bit_generator = getattr(np.random, name)()
        try:
            bit_generator.state = self.value(tree["state"], depth + 1)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise CodecError(f"not a valid {name} state: {str(exc)[:200]}") from None
        gen = np.random.Generator(bit_generator)
        self.generators.items.append(gen)
        return gen

    def tag_fn(self, tree: dict[str, Any], depth: int) -> Any:
        if self.functions is None or self.functions.resolve is None:
            raise CodecError("a function reference is not accepted here")
        name = tree["name"]
        if not isinstance(name, str) or not name.isidentifier():
            raise CodecError("a function reference needs a name")
        return self.functions.resolve(name)
