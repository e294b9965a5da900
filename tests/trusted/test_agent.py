"""The student-side agent, the loader and the free-name analysis, in-process (no kernel, milliseconds)."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

from autograder.trusted import agent, codec, loader, names, plain, proxy, runner, session

LIMITS = json.loads(json.dumps(codec.DEFAULT_LIMITS.__dict__))


def _call(namespace: dict, name: str, *args, **kwargs) -> dict:
    gens = codec.Generators()
    request = json.dumps({"name": name, "limits": LIMITS, "args": codec.to_tree(list(args), generators=gens),
                          "kwargs": codec.to_tree(kwargs, generators=gens)})
    return json.loads(repr(agent.call(namespace, request)))


def _describe(namespace: dict, *names_: str) -> dict:
    return json.loads(repr(agent.describe(namespace, json.dumps({"names": list(names_), "limits": LIMITS}))))


# ---- calls ---------------------------------------------------------------------------------------------------

def test_a_call_returns_the_result_by_value():
    namespace = {"f": lambda x, k=1: np.asarray(x) * k}
    reply = _call(namespace, "f", [1.0, 2.0], k=3)
    assert reply["protocol"] == agent.PROTOCOL
    assert np.array_equal(codec.from_tree(reply["ok"]), [3.0, 6.0]) and reply["rngs"] == []


def test_generator_arguments_come_back_advanced():
    def draw(rng, size):
        return rng.normal(size=size)

    rng = np.random.default_rng(5)
    gens = codec.Generators()
    request = json.dumps({"name": "draw", "limits": LIMITS, "args": codec.to_tree([rng, 3], generators=gens),
                          "kwargs": codec.to_tree({})})
    reply = json.loads(repr(agent.call({"draw": draw}, request)))
    expected = np.random.default_rng(5)
    assert np.array_equal(codec.from_tree(reply["ok"]), expected.normal(size=3))
    assert codec.from_tree(reply["rngs"][0]) == expected.bit_generator.state


def test_function_references_in_arguments_are_the_students_functions():
    namespace = {"double": lambda x: 2 * x, "twice": lambda f, x: f(f(x))}
    request = json.dumps({"name": "twice", "limits": LIMITS, "kwargs": codec.to_tree({}),
                          "args": [{"t": "fn", "name": "double"}, 5]})
    assert codec.from_tree(json.loads(repr(agent.call(namespace, request)))["ok"]) == 20


class _MyError(ValueError):
    pass


def _raiser(exc: BaseException):
    def f():
        raise exc
    return f


@pytest.mark.parametrize("exc, type_name, builtin", [
    (ValueError("bad epsilon"), "ValueError", "ValueError"), (NotImplementedError(), "NotImplementedError",
                                                                "NotImplementedError"),
    (_MyError("mine"), "_MyError", "ValueError"), (KeyboardInterrupt(), "KeyboardInterrupt", "KeyboardInterrupt"),
    (SystemExit(3), "SystemExit", "SystemExit"), (np.linalg.LinAlgError("singular"), "LinAlgError", "ValueError"),
])
def test_exceptions_come_back_as_type_builtin_base_and_message(exc, type_name, builtin):
    error = _call({"f": _raiser(exc)}, "f")["error"]
    assert (error["type"], error["builtin"], error["where"]) == (type_name, builtin, "call")
    assert error["message"] == str(exc)[:agent.MAX_MESSAGE_CHARS]


def test_results_that_are_not_plain_data_are_errors():
    class Answer:
        def __eq__(self, other):
            return True

    error = _call({"f": lambda: Answer()}, "f")["error"]
    assert error["where"] == "result" and "Answer" in error["type"]


def test_a_result_that_is_not_plain_data_says_what_to_return_instead():
    error = _call({"f": lambda: (x for x in [1])}, "f")["error"]
    assert error["hint"] == "a generator: return a list instead (list(...) or a list comprehension [...])"
    error = _call({"f": lambda: {"a": map(abs, [1])}}, "f")["error"]
    assert error["hint"].startswith("a dict holding an iterator (map")


class _MyWarning(RuntimeWarning):
    pass


def _warns(x):
    out = np.asarray(x, dtype=float) / np.zeros(1)
    warnings.warn("careful", _MyWarning, stacklevel=1)
    return out


def test_warnings_of_a_call_come_back_with_the_result():
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("default")
        reply = _call({"f": _warns}, "f", [1.0])
    assert [(w["type"], w["builtin"], w["message"]) for w in reply["warnings"]] == [
        ("RuntimeWarning", "RuntimeWarning", "divide by zero encountered in divide"),
        ("_MyWarning", "RuntimeWarning", "careful")]
    assert np.array_equal(codec.from_tree(reply["ok"]), [np.inf]) and outside == []     # recorded, not shown
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # the student's kernel's filters apply, as in one kernel
        error = _call({"f": _warns}, "f", [1.0])["error"]
    assert (error["type"], error["message"]) == ("RuntimeWarning", "divide by zero encountered in divide")


def test_warnings_follow_the_student_kernels_filters_and_come_back_with_errors_too():
    def ignored():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.log(0.0)
        warnings.warn("then fails", UserWarning, stacklevel=1)
        raise ValueError("bad")

    reply = _call({"f": ignored}, "f")
    assert reply["error"]["type"] == "ValueError" and [w["message"] for w in reply["warnings"]] == ["then fails"]
    many = _call({"f": lambda: [warnings.warn(f"w{i}", UserWarning, stacklevel=1) for i in range(50)] and 1}, "f")
    assert len(many["warnings"]) == agent.MAX_WARNINGS


def test_the_proxy_raises_the_students_warnings_again_under_the_tests_filters():
    found = _call({"f": _warns}, "f", [1.0])["warnings"] + [
        {"type": "Evil", "builtin": "SystemExit", "message": "x" * 5000, "lineno": "1"}, "garbage"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proxy.reraise_warnings("f", found)
    assert [(w.category, str(w.message)[:40]) for w in caught] == [
        (RuntimeWarning, "divide by zero encountered in divide"), (RuntimeWarning, "_MyWarning: careful"),
        (UserWarning, "Evil: " + "x" * 34)]
    assert len(str(caught[-1].message)) <= proxy.MAX_MESSAGE_CHARS + 6 and caught[0].filename == proxy.STUDENT_CODE
    with warnings.catch_warnings(), pytest.raises(RuntimeWarning, match="divide by zero"):
        warnings.simplefilter("error")              # a test that requires "no warning" the strict way
        proxy.reraise_warnings("f", found)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        proxy.reraise_warnings("f", found)
    assert caught == []


@pytest.mark.parametrize("request_text", ["not json", json.dumps({"name": "f"}),
                                          json.dumps({"name": "nope", "limits": LIMITS, "args": [],
                                                      "kwargs": {"t": "dict", "k": [], "v": []}})])
def test_malformed_requests_are_answered_not_raised(request_text):
    reply = json.loads(repr(agent.call({"f": print}, request_text)))
    assert reply["error"]["where"] == "request"


def test_messages_are_truncated():
    error = _call({"f": _raiser(ValueError("x" * 10_000))}, "f")["error"]
    assert len(error["message"]) == agent.MAX_MESSAGE_CHARS


# ---- descriptions -------------------------------------------------------------------------------------------

def test_names_are_described_by_kind():
    class Thing:
        pass

    namespace = {"f": len, "g": lambda: 1, "data": [1, (2.5, "x")], "np": np, "Thing": Thing, "obj": Thing(),
                 "big": np.zeros(3, dtype=object)}
    found = _describe(namespace, "f", "g", "data", "np", "Thing", "obj", "big", "absent")["names"]
    assert {k: v["kind"] for k, v in found.items()} == {
        "f": "function", "g": "function", "data": "data", "np": "module", "Thing": "other", "obj": "other",
        "big": "other", "absent": "missing"}
    assert codec.from_tree(found["data"]["value"]) == [1, (2.5, "x")] and found["np"]["module"] == "numpy"
    assert "object" in found["big"]["why"]


# ---- the reply as IPython shows it, and the loader --------------------------------------------------------

@pytest.fixture
def loaded_agent() -> Iterator[str]:
    package = "_dpc_trusted_test"
    sources = {m.__name__.rsplit(".", 1)[1]: Path(m.__file__).read_text() for m in (plain, codec, agent)}
    assert loader.load_package(package, sources) == f"loaded {package}: plain codec agent"
    yield package
    for name in [package, f"{package}.plain", f"{package}.codec", f"{package}.agent"]:
        sys.modules.pop(name, None)


def test_loader_installs_a_package_whose_agent_uses_its_own_codec(loaded_agent):
    loaded = sys.modules[f"{loaded_agent}.agent"]
    assert loaded.codec is sys.modules[f"{loaded_agent}.codec"] and loaded.codec is not codec
    reply = loaded.call({"f": lambda: 1.5}, json.dumps({"name": "f", "limits": LIMITS, "args": [],
                                                          "kwargs": {"t": "dict", "k": [], "v": []}}))
    assert json.loads(repr(reply))["ok"] == 1.5


def test_ipython_sends_the_reply_itself_as_text_plain(loaded_agent):
    """The path a real request takes: a user expression of an IPython shell, evaluated in the user namespace."""
    shell = InteractiveShell.instance()
    try:
        shell.user_ns["f"] = lambda x: x + 1
        request = json.dumps({"name": "f", "limits": LIMITS, "args": [41], "kwargs": {"t": "dict", "k": [], "v": []}})
        expression = f"__import__('sys').modules[{loaded_agent + '.agent'!r}].call(globals(), {request!r})"
        out = shell.user_expressions({"r": expression})["r"]
        assert out["status"] == "ok" and json.loads(out["data"]["text/plain"])["ok"] == 42
    finally:
        InteractiveShell.clear_instance()


def test_the_install_expression_is_built_from_the_files():
    expression = runner.agent_install_expression("_pkg")
    for module in (plain, codec, agent, loader):
        assert repr(Path(module.__file__).read_text()) in expression
    namespace: dict = {}
    try:
        assert eval(expression, namespace) == "loaded _pkg: plain codec agent"  # noqa: S307 - the expression under test
        assert "_pkg.agent" in sys.modules and set(namespace) == {"__builtins__"}
    finally:
        for name in ["_pkg", "_pkg.plain", "_pkg.codec", "_pkg.agent"]:
            sys.modules.pop(name, None)


# ---- free names ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source, expected", [
    ("x = f(y)", ["f", "y"]),
    ("def _check(p, k):\n    return g(p) + k\n_check(1, 2)", ["g"]),
    ("import itertools\nfor _a in itertools.count(): h(_a)", ["h"]),
    ("def _inner():\n    import math\n    return math.pi + q\n", ["q"]),
    ("_v = [f(_i) for _i in range(3)]\n_w = {_k: z for _k in _v}", ["f", "z", "range"]),
    ("%matplotlib inline\n_r = f(1)\n!ls", ["f", "get_ipython"]),
    ("def _set():\n    global _g\n    _g = f()\n_set()\nprint(_g)", ["f", "print"]),
    ("class _T:\n    a = f\n    def m(self):\n        return g\n", ["f", "g"]),
    ("f = 1\nprint(f)", ["print"]),
    ("try:\n    f()\nexcept ValueError as _e:\n    print(_e)", ["ValueError", "f", "print"]),
    ("def broken(:\n    pass", []),
])
def test_free_names(source, expected):
    assert names.free_names(source) == sorted(expected)


class _FakeLink:
    """Answers describe() from a dict of descriptions and records what was asked."""

    def __init__(self, descriptions: dict) -> None:
        self.descriptions = descriptions
        self.asked: list[list[str]] = []

    def describe(self, wanted):
        self.asked.append(list(wanted))
        return {n: self.descriptions[n] for n in wanted if n in self.descriptions}

    def decode(self, tree):
        return codec.from_tree(tree)


def test_resolve_binds_what_the_student_has_and_never_overrides_trusted_names():
    link = _FakeLink({"f": {"kind": "function"}, "data": {"kind": "data", "value": [1, 2]},
                      "np": {"kind": "module", "module": "os"}, "mod": {"kind": "module", "module": "json"},
                      "odd": {"kind": "module", "module": "antigravity"}, "obj": {"kind": "other", "type": "T"},
                      "len": {"kind": "function"}})
    namespace = {"np": np, "_helper": 1}
    bound: set[str] = set()
    kinds = names.resolve(["f", "data", "np", "mod", "odd", "obj", "len", "gone", "_helper"], namespace, link,
                          bound)
    assert link.asked == [["data", "f", "gone", "mod", "obj", "odd"]]        # trusted names and builtins: never
    assert kinds == {"data": "data", "f": "function", "gone": "missing", "mod": "module", "obj": "other",
                     "odd": "other"}
    assert namespace["np"] is np and namespace["mod"] is sys.modules["json"] and namespace["data"] == [1, 2]
    assert isinstance(namespace["f"], proxy.StudentFunction) and "antigravity" not in sys.modules
    with pytest.raises(proxy.StudentCodeError, match="may only use the student's functions and plain data"):
        namespace["obj"] + 1
    with pytest.raises(proxy.StudentCodeError, match="does not import itself"):
        namespace["odd"]()
    # the next cell: names bound from the student are looked up again; a name that disappeared is unbound
    link.descriptions["data"] = {"kind": "missing"}
    names.resolve([], namespace, link, bound)
    assert link.asked[-1] == ["data", "f", "mod", "obj", "odd"] and "data" not in namespace


# ---- trusted-side helpers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [("ValueError", ValueError), ("NotImplementedError", NotImplementedError),
                                       ("AssertionError", AssertionError), ("StopIteration", None),
                                       ("KeyboardInterrupt", None), ("SystemExit", None), ("UserWarning", None),
                                       ("__import__", None), ("os", None), (42, None), ("open", None)])
def test_only_builtin_errors_are_reraised_as_themselves(name, cls):
    assert proxy.builtin_exception(name) is cls


def test_failures_display_as_one_truncated_line_and_warnings_without_source():
    message, line = session.exception_line(AssertionError, AssertionError("x" * 5000))
    assert line.startswith("\x1b[0;31mAssertionError\x1b[0m: xxx") and message.endswith("(truncated)")
    assert len(message) < session.MAX_FEEDBACK_CHARS + 20
    assert session.format_warning("careful", RuntimeWarning, "/hidden.py", 3, "_secret = 1 / 0") == (
        "RuntimeWarning: careful\n")
