"""The codec: plain data round-trips exactly; everything else, and every hostile message, is a CodecError."""

from __future__ import annotations

import base64
import enum
import json
import math
import types
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.trusted import codec

# ---- round trips --------------------------------------------------------------------------------------------

_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**300, max_value=2**300)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
            | st.complex_numbers(allow_nan=False))
_arrays = hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.uint16, np.bool_,
                                      np.complex128]),
                     hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
_fractions = st.fractions(max_denominator=10**30) | st.builds(
    Fraction, st.integers(min_value=-2**300, max_value=2**300), st.integers(min_value=1, max_value=2**300))
_ranges = st.builds(range, st.integers(-2**70, 2**70), st.integers(-2**70, 2**70),
                    st.integers(-2**70, 2**70).filter(bool))
_byte_orders = hnp.arrays(st.sampled_from([">f8", ">i4", "<u2", ">c16", "=f4", "|b1", ">u8", ">f2"]),
                          hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
_hashable = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
                         | _fractions | _ranges,
                         lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=6)
_plain = st.recursive(_scalars | _arrays | _byte_orders | _fractions | _ranges,
                      lambda inner: st.lists(inner, max_size=4)
                      | st.tuples(inner, inner) | st.dictionaries(_hashable, inner, max_size=4)
                      | st.sets(_hashable, max_size=4) | st.frozensets(_hashable, max_size=4), max_leaves=20)


def _same(a, b) -> bool:
    """Equal values of equal types (NaN equals NaN; arrays compare dtype, shape and bits)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):        # byte order is the wire's (little-endian); the values are the same
        little = a.dtype.newbyteorder("<")
        return (little == b.dtype.newbyteorder("<") and a.shape == b.shape
                and a.astype(little).tobytes() == b.astype(little).tobytes())
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (set, frozenset)):                 # members are hashable plain values: == is exact
        return a == b and all(type(x) is type(next(y for y in b if y == x)) for x in a)
    return a == b


@given(_plain)
def test_plain_data_round_trips_exactly(value):
    text = codec.encode(value)
    assert _same(codec.decode(text), value)
    json.loads(text)                                     # strict JSON: no NaN / Infinity tokens


@pytest.mark.parametrize("value", [np.float64(0.1), np.float32(1.5), np.int16(-7), np.uint64(2**64 - 1),
                                   np.bool_(True), np.complex64(1 - 2j), np.float64("nan"), np.float64("-inf")])
def test_numpy_scalars_keep_their_dtype(value):
    back = codec.decode(codec.encode(value))
    assert type(back) is type(value) and (back == value or (np.isnan(back) and np.isnan(value)))


def test_special_values_and_big_integers():
    values = [math.nan, math.inf, -math.inf, 0.1 + 0.2, 5e-324, 2**63, -2**200, 10**1000 // 7, 1.0, 1, True]
    back = codec.decode(codec.encode(values))
    assert _same(back, values) and type(back[-1]) is bool and type(back[-2]) is int and type(back[-3]) is float


def test_containers_keep_their_kind_and_any_hashable_keys():
    value = {1: "a", (2, "b"): [None, (1.5,)], None: {}, 2.5: [], False: (), "s": {"nested": [[]]}}
    back = codec.decode(codec.encode(value))
    assert _same(back, value) and list(back) == list(value)


def test_arrays_keep_shape_dtype_and_are_writeable_copies():
    arr = np.arange(12, dtype=">f8").reshape(3, 4)[:, ::2]          # big-endian, not contiguous
    back = codec.decode(codec.encode(arr))
    assert back.dtype == np.dtype("<f8") and back.shape == (3, 2) and np.array_equal(back, arr)
    back[0, 0] = 99.0                                               # a test may modify what it got
    assert arr[0, 0] == 0.0


def test_subclasses_of_plain_types_travel_as_the_plain_value():
    class Liar(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    class Weird(list):
        pass

    back = codec.decode(codec.encode([Liar(0.25), Weird([1, 2]), np.ma.masked_array([1.0, 2.0], mask=[0, 1])]))
    assert type(back[0]) is float and back[0] == 0.25 and back[0] != 0.3
    assert type(back[1]) is list and type(back[2]) is np.ndarray


def test_generators_travel_as_their_state_once_per_object():
    gens = codec.Generators()
    rng = np.random.default_rng(7)
    text = codec.encode([rng, {"again": rng}, np.random.Generator(np.random.MT19937(3))], generators=gens)
    assert len(gens.items) == 2 and gens.items[0] is rng
    other = codec.Generators()
    a, b, c = codec.decode(text, generators=other)
    assert a is b["again"] and a is not rng and type(c.bit_generator).__name__ == "MT19937"
    assert np.array_equal(a.random(5), np.random.default_rng(7).random(5))
    with pytest.raises(codec.CodecError, match="Generator can only be passed"):
        codec.encode(rng)                                # generators only where the caller collects them
    with pytest.raises(codec.CodecError, match="generator is not accepted"):
        codec.decode(text)


def test_function_references_only_where_allowed():
    marker = object()
    refs = codec.FunctionRefs(name_of=lambda v: "f" if v is marker else None, resolve=lambda name: name.upper())
    text = codec.encode([marker, 1], functions=refs)
    assert codec.decode(text, functions=refs) == ["F", 1]
    with pytest.raises(codec.CodecError, match="function reference"):
        codec.decode(text)


# ---- what is not plain data ---------------------------------------------------------------------------------

class _Answer:
    def __eq__(self, other):
        return True

    def __array__(self, dtype=None, copy=None):
        return np.zeros(3)


@pytest.mark.parametrize("value, what", [
    (_Answer(), "_Answer"), (lambda x: x, "function"), (np.array([1, "a"], dtype=object), "dtype object"),
    (np.array(["a"]), "dtype <U1"), (np.zeros(2, dtype="M8[s]"), "datetime64"), ({1, 2, (x for x in [])}, "generator"),
    (np.zeros(1, dtype=[("a", "f8")]), "dtype"), (np.longdouble(1), "cannot be passed"), (b"bytes", "bytes"),
    (np.random.RandomState(0), "RandomState"), ([1, [2, object()]], "object"),
])
def test_values_that_are_not_plain_data_are_rejected(value, what):
    with pytest.raises(codec.CodecError, match=what):
        codec.encode(value)


class _Colour(enum.IntEnum):
    RED = 2


class _Count(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def test_what_students_return_travels_as_plain_values():
    """The return types of issue 26: sets (the events of lecture 03), fractions (lecture 02), ranges, int
    subclasses, NumPy booleans, 0-d, empty and big-endian arrays, nested keys."""
    cases = [
        ({0, 2, 3}, {0, 2, 3}, set), (frozenset({"a", "b"}), frozenset({"a", "b"}), frozenset),
        (range(2, 11, 3), range(2, 11, 3), range), (Fraction(1, 3), Fraction(1, 3), Fraction),
        (_Colour.RED, 2, int), (_Count(5), 5, int), (np.bool_(False), np.bool_(False), np.bool_),
        ({(1, frozenset({2})): {Fraction(-1, 2): range(3)}}, {(1, frozenset({2})): {Fraction(-1, 2): range(3)}}, dict),
    ]
    for value, expected, kind in cases:
        back = codec.decode(codec.encode(value))
        assert type(back) is kind and back == expected, (value, back)
    assert codec.decode(codec.encode(_Count(5))) != 6                   # its __eq__ stayed behind
    for arr in [np.array(2.5), np.zeros((0, 3)), np.zeros((2, 0, 4), dtype=bool), np.arange(4, dtype=">i4"),
                np.array(7, dtype=">f8"), np.ones((3, 0), dtype=np.complex64)]:
        back = codec.decode(codec.encode(arr))
        assert back.shape == arr.shape and back.dtype == arr.dtype.newbyteorder("<") and np.array_equal(back, arr)
    back = codec.decode(codec.encode(np.arange(3, dtype=">f8")[1]))     # a scalar read from a big-endian array
    assert type(back) is np.float64 and back == 1.0


@pytest.mark.parametrize("make, hint", [
    (lambda: (i for i in range(3)), "a generator: return a list"),
    (lambda: map(abs, [1]), "an iterator (map"), (lambda: zip([1], [2], strict=True), "an iterator (zip"),
    (lambda: {1: 2}.values(), "a dict view"), (lambda: abs, "a function: return the value"),
    (lambda: int, "a class"), (lambda: types, "a module"), (lambda: b"x", "raw bytes"),
    (lambda: np.array([None]), "dtype object"), (lambda: np.array(["a"]), "strings"),
    (lambda: np.random.default_rng(0), "a random generator"), (lambda: np.longdouble(1), "use float64"),
    (lambda: _Answer(), "an object of type"),
])
def test_what_is_not_plain_data_says_what_to_return_instead(make, hint):
    value = make()
    with pytest.raises(codec.CodecError) as info:
        codec.encode(value)
    assert hint in info.value.hint
    assert info.value.culprit is value or isinstance(value, np.generic)     # a NumPy scalar: its 0-d array


def test_limits_apply_while_encoding():
    small = codec.Limits(max_depth=3, max_items=10, max_bytes=100, max_int_bits=64)
    deep: list = []
    for _ in range(5):
        deep = [deep]
    for value, match in [(deep, "nested"), (list(range(11)), "entries"), (np.zeros(20), "bytes"),
                         ("x" * 101, "bytes"), (2**100, "bits")]:
        with pytest.raises(codec.CodecError, match=match):
            codec.encode(value, small)


# ---- hostile messages ---------------------------------------------------------------------------------------

def _nd(dtype: str, shape: list, data: bytes) -> str:
    return json.dumps({"t": "nd", "d": dtype, "s": shape, "b": base64.b64encode(data).decode()})


@pytest.mark.parametrize("text, match", [
    ("[" * 100_000 + "]" * 100_000, "nested"),
    ("[" * 40 + "]" * 40, "nested"),
    ("NaN", "constant"), ("[Infinity]", "constant"),
    ("1" * 5000, "not a valid message"),                              # beyond Python's int-parsing limit
    ('{"t": "int", "hex": "' + "f" * 5000 + '"}', "larger than the limit"),
    ('{"t": "pickle", "v": "gASV"}', "unknown tag"),
    ('{"a": 1}', "unknown tag"),
    ('{"t": "nd", "d": "|O", "s": [1], "b": "AAAAAAAAAAA="}', "not accepted"),
    (_nd("<f8", [2], b"\0" * 8), "wrong length"),
    (_nd("<f8", [2**20, 2**20], b""), "bytes"),
    (_nd("<f8", [-1], b""), "shape"),
    ('{"t": "nd", "d": "<f8", "s": [1], "b": "!!!!!!!!!!!!"}', "base64"),
    ('{"t": "tuple", "v": [1], "extra": 2}', "fields"),
    ('{"t": "dict", "k": [[1]], "v": [2]}', "not hashable"),
    ('{"t": "dict", "k": [1, 2], "v": [2]}', "as many values"),
    ('{"t": "float", "v": "1e5"}', "special float"),
    ('{"t": "complex", "re": "a", "im": 1}', "real parts"),
    ('{"t": "rng", "i": 0, "bg": "Evil", "state": {}}', "not accepted"),
    ('{"t": "fn", "name": "os.system"}', "not accepted"),
    ('{"t": "set", "v": [[1]]}', "not hashable"),
    ('{"t": "frozenset", "v": [{"t": "nd", "d": "<f8", "s": [0], "b": ""}]}', "not hashable"),
    ('{"t": "set", "v": 1}', "must be a list"),
    ('{"t": "range", "v": [1, 2]}', "start, stop and step"),
    ('{"t": "range", "v": [1, 2, 0]}', "step other than 0"),
    ('{"t": "range", "v": [1, 2.5, 1]}', "integers"),
    ('{"t": "range", "v": [1, true, 1]}', "integers"),
    ('{"t": "fraction", "n": 1, "d": 0}', "positive denominator"),
    ('{"t": "fraction", "n": 1, "d": -3}', "positive denominator"),
    ('{"t": "fraction", "n": "1/3", "d": 1}', "integers"),
    ('{"t": "fraction", "n": {"t": "int", "hex": "' + "f" * 5000 + '"}, "d": 1}', "larger than the limit"),
    ("x" * 100, "not a valid message"),
], ids=lambda v: v[:30] if isinstance(v, str) else None)
def test_hostile_messages_are_rejected_cleanly(text, match):
    with pytest.raises(codec.CodecError, match=match):
        codec.decode(text)


def test_message_length_is_checked_before_parsing():
    with pytest.raises(codec.CodecError, match="longer than the limit"):
        codec.loads("[" + "0," * 1000 + "0]", codec.Limits(max_text=100))
    with pytest.raises(codec.CodecError, match="expected JSON text"):
        codec.loads(b"[]")


def test_many_small_items_hit_the_entry_limit():
    with pytest.raises(codec.CodecError, match="entries"):
        codec.decode("[" + ",".join(["[]"] * 200_001) + "]")
    with pytest.raises(codec.CodecError, match="entries"):
        codec.decode(json.dumps({"t": "set", "v": list(range(100_001))}))
    with pytest.raises(codec.CodecError, match="entries"):
        codec.encode(set(range(11)), codec.Limits(max_items=10))


def test_hostile_generator_state_is_rejected():
    gens = codec.Generators()
    bad = json.dumps({"t": "rng", "i": 0, "bg": "PCG64",
                      "state": {"t": "dict", "k": ["bit_generator"], "v": ["MT19937"]}})
    with pytest.raises(codec.CodecError, match="not a valid PCG64 state"):
        codec.decode(bad, generators=gens)
    with pytest.raises(codec.CodecError, match="out of range"):
        codec.decode('{"t": "rng", "i": 3}', generators=codec.Generators())
