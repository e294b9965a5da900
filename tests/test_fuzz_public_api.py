"""Bad-input fuzz of every public function, class and method of ``dp_course`` (issue 25).

Each public target (from the modules' ``__all__``, see ``tests/public_api.py``) has one valid call.  The fuzz
replaces one argument at a time by a value of each bad-input class below and accepts exactly two answers:

* a ``ValueError`` or ``TypeError`` whose message names the parameter (e.g. ``"epsilon must be > 0, got -1"``);
* a result whose numbers are finite or ``+inf`` (``-inf`` too where the result is a logarithm) – never NaN.

Any other exception, a NaN, or a call slower than :data:`CALL_BUDGET` (the library must refuse exponential
work from a cheap estimate of its cost, not run it) is a failure.  Two tests run it: one sweeps every
(target, argument, class) once with the class's representative value; a hypothesis test draws further values
of each class (derandomised, bounded number of examples).  :data:`KNOWN_FAILURES` lists what is not fixed yet,
each with its cause; the sweep fails both on a new failure and on a listed one that now passes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_course.pld import PrivacyLossDistribution
from public_api import CALLS, Call, public_targets, target_name

CALL_BUDGET = 5.0
"""Seconds one call may take: generous for a loaded machine (most calls take milliseconds, drawing a widget's
figure up to about 2 s); what it catches is exponential work that a cost guard should have refused."""


def _bad_callable(*args: Any, **kwargs: Any) -> str:
    return "not a number"


BAD_INPUTS: dict[str, Any] = {
    "nan": math.nan,
    "+inf": math.inf,
    "-inf": -math.inf,
    "negative": -1.0,
    "zero": 0,
    "1e-300": 1e-300,
    "1e308": 1e308,
    "10**18": 10**18,
    "10**400": 10**400,
    "2.5": 2.5,
    "None": None,
    "text": "x",
    "bool": True,
    "nan in array": np.array([0.5, math.nan]),
    "2-D array": np.full((2, 2), 0.5),
    "wrong length": np.full(7, 1 / 7),
    "empty": np.array([]),
    "bad callable": _bad_callable,
    "object": object(),
}
"""The bad-input classes of issue 25, each with its representative value."""

BAD_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "nan": st.just(math.nan),
    "+inf": st.just(math.inf),
    "-inf": st.just(-math.inf),
    "negative": st.floats(max_value=-1e-300, allow_infinity=False) | st.integers(max_value=-1),
    "zero": st.sampled_from([0, 0.0, -0.0]),
    "1e-300": st.floats(5e-324, 1e-250),
    "1e308": st.floats(1e250, 1.7e308),
    "10**18": st.integers(10**15, 10**19),
    "10**400": st.integers(10**309, 10**500),
    "2.5": st.floats(0.01, 100.0).filter(lambda x: not x.is_integer()),
    "None": st.none(),
    "text": st.text(max_size=3),
    "bool": st.booleans(),
    "nan in array": st.integers(1, 5).map(lambda n: np.concatenate([np.full(n, 0.5), [math.nan]])),
    "2-D array": st.tuples(st.integers(1, 3), st.integers(2, 3)).map(lambda s: np.full(s, 1.0 / s[1])),
    "wrong length": st.integers(4, 9).map(lambda n: np.full(n, 1.0 / n)),
    "empty": st.just(np.array([])),
    "bad callable": st.sampled_from([_bad_callable, lambda *a, **k: math.nan, lambda *a, **k: None]),
    "object": st.builds(object),
}
"""For the hypothesis test: more values of each class (the sweep uses :data:`BAD_INPUTS`)."""

KNOWN_FAILURES_FILE = Path(__file__).with_name("fuzz_known_failures.json")
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {
    tuple(key.split("|")): cause  # type: ignore[misc]
    for key, cause in json.loads(KNOWN_FAILURES_FILE.read_text(encoding="utf-8")).items()
}
"""``(call key, parameter, class) -> what the call does`` for the failures not fixed yet, from
``tests/fuzz_known_failures.json`` (keys ``"key|parameter|class"``).  Regenerate the file only to *remove*
entries that a fix made pass; a new failure is fixed, not listed."""


def _bad_numbers(value: Any, log_result: bool, depth: int = 0) -> str | None:
    """What is wrong with the numbers in a result (NaN, -inf), or None."""
    if depth > 4 or value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, (float, np.floating, np.ndarray)):
        arr = np.asarray(value)
        if arr.dtype.kind not in "fc":
            return None
        if np.isnan(arr).any():
            return "NaN in the result"
        if not log_result and np.isneginf(arr).any():
            return "-inf in the result"
        return None
    if isinstance(value, (tuple, list)):
        return next((b for v in value[:50] if (b := _bad_numbers(v, log_result, depth + 1))), None)
    if isinstance(value, dict):
        return next((b for v in list(value.values())[:50] if (b := _bad_numbers(v, log_result, depth + 1))), None)
    if isinstance(value, PrivacyLossDistribution):
        return _bad_numbers(value.delta_for_epsilon(np.array([0.0, 1.0])), False, depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return next((b for f in dataclasses.fields(value) if not f.name.startswith("_")
                     if (b := _bad_numbers(getattr(value, f.name), log_result, depth + 1))), None)
    return None


def _names(call: Call, param: str) -> tuple[str, ...]:
    return (param, *call.aliases.get(param, ()))


def outcome(call: Call, param: str, value: Any) -> str | None:
    """Call ``call`` with ``param`` replaced by ``value``; None if the answer is acceptable, else the reason."""
    kwargs = {**call.kwargs, param: value}
    start = time.perf_counter()
    try:
        result = call.call(**kwargs)
        problem = _bad_numbers(result, call.log_result)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        named = any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message) for n in _names(call, param))
        problem = None if named else f"{type(exc).__name__} not naming {param}: {message[:160]}"
    except Exception as exc:  # noqa: BLE001 - any other exception type is the finding
        problem = f"{type(exc).__name__}: {str(exc)[:160]}"
    finally:
        plt.close("all")
    elapsed = time.perf_counter() - start
    if problem is None and elapsed > CALL_BUDGET:
        problem = f"took {elapsed:.1f} s (budget {CALL_BUDGET} s): a cost guard is missing"
    return problem


def test_every_public_target_has_a_call() -> None:
    """A new public function, class or method must be added to tests/public_api.py (then it is fuzzed)."""
    covered = {target_name(c.target) for c in CALLS}
    missing = public_targets() - covered
    assert not missing, f"add a Call to tests/public_api.py for: {sorted(missing)}"
    assert len({c.key for c in CALLS}) == len(CALLS), "two Calls share a key: give one a label"


@pytest.mark.parametrize("call", CALLS, ids=[c.key.removeprefix("dp_course.") for c in CALLS])
def test_valid_call_is_accepted(call: Call) -> None:
    """The valid call of each target works and gives clean numbers (else the fuzz would test nothing)."""
    try:
        result = call.call(**call.kwargs)
        assert _bad_numbers(result, call.log_result) is None
    finally:
        plt.close("all")


def test_sweep_every_argument_with_every_bad_class() -> None:
    """Every (target, argument, bad class) once; failures must be exactly the known ones."""
    found: dict[tuple[str, str, str], str] = {}
    for call in CALLS:
        for param in call.kwargs:
            for cls, value in BAD_INPUTS.items():
                problem = outcome(call, param, value)
                if problem is not None:
                    found[(call.key, param, cls)] = problem
    new = {k: v for k, v in found.items() if k not in KNOWN_FAILURES}
    fixed = sorted(k for k in KNOWN_FAILURES if k not in found)
    report = "\n".join(f"{k}: {v}" for k, v in sorted(new.items()))
    assert not new, f"{len(new)} new failing calls:\n{report}"
    assert not fixed, f"known failures that now pass (remove them from KNOWN_FAILURES): {fixed}"


ARGUMENTS = [(call, param) for call in CALLS for param in call.kwargs]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_drawn_bad_values(data: st.DataObject) -> None:
    """Further values of each class, drawn by hypothesis, on a drawn (target, argument)."""
    call, param = data.draw(st.sampled_from(ARGUMENTS), label="argument")
    cls = data.draw(st.sampled_from(sorted(BAD_STRATEGIES)), label="class")
    if (call.key, param, cls) in KNOWN_FAILURES:
        return
    value = data.draw(BAD_STRATEGIES[cls], label="value")
    problem = outcome(call, param, value)
    assert problem is None, f"{call.key}({param}={value!r}) [{cls}]: {problem}"


def coverage() -> tuple[int, int, int]:
    """(targets, arguments, target-argument-class combinations) the sweep covers."""
    return len({target_name(c.target) for c in CALLS}), len(ARGUMENTS), len(ARGUMENTS) * len(BAD_INPUTS)
