"""The test guard (autograder.guard.kernel_guard), in-process against an IPython shell: one case per surface.

The guard is a standard-library module that the grader sends to each kernel with its judge of event callbacks
(autograder.guard.library_code); here both are imported and the guard installed on ``InteractiveShell.instance()``,
and "student" code runs through ``shell.run_cell`` as in a kernel.  Each test damages one surface and checks
that :meth:`Guard.before` / :meth:`Guard.after` report it and put the genuine object back.  The fixture undoes
whatever a failing test left (and unlocks ``math``/``numpy``), so the rest of the test process is not affected.
The whole file runs in about a second.
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib
import importlib.abc
import json
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

from autograder.guard import kernel_guard, library_code
from autograder.execute.safe_execute import guard_install_code
from autograder.trusted import runner

pytestmark = pytest.mark.xdist_group("kernel_guard")


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    sh = InteractiveShell.instance()
    saved = [(seq, list(seq)) for seq in (sys.path, sys.meta_path, sys.path_hooks)]
    yield sh
    sh.reset(new_session=False)
    for seq, items in saved:
        seq[:] = items


@pytest.fixture
def guard(shell: InteractiveShell) -> Iterator[kernel_guard.Guard]:
    g = kernel_guard.make_guard(shell, library_code.library_callback)
    yield g
    g.restore()   # whatever a failed test left behind
    g.release()


def _run(shell: InteractiveShell, code: str) -> Any:
    result = shell.run_cell(code, store_history=False, silent=True)
    return result.error_in_exec


def test_a_clean_notebook_needs_no_fix(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    _run(shell, "import math\nimport numpy as np\nx = math.sqrt(4)")
    assert guard.before() == {"fixes": [], "notes": []}
    _run(shell, "y = np.isclose(x, 2.0)")
    report = guard.after()
    assert report == {"fixes": [], "notes": []} and ast.literal_eval(repr(report)) == report  # plain data


def test_module_attributes_are_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    _run(shell, "import math, builtins\nimport numpy as np\nvars(math)['isclose'] = lambda *a, **k: True\n"
                "vars(np)['allclose'] = lambda *a, **k: True\nbuiltins.abs = lambda x: 0")
    fixes = guard.before()["fixes"]
    assert {"math.isclose was replaced", "numpy.allclose was replaced", "builtins.abs was replaced"} <= set(fixes)
    assert math.isclose(1.0, 2.0) is False and abs(-3) == 3 and not np.allclose(1.0, 2.0)


def test_locked_modules_refuse_assignment(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    error = _run(shell, "import math\nmath.isclose = lambda *a, **k: True")
    assert isinstance(error, AttributeError) and "math.isclose is protected" in str(error)
    error = _run(shell, "import numpy\ndel numpy.isclose")
    assert isinstance(error, AttributeError) and "numpy.isclose is protected" in str(error)
    assert _run(shell, "import math\nmath.my_own_constant = 3") is None   # new names are not the tests' helpers
    guard.release()
    assert type(sys.modules["math"]) is type(sys)


def test_sys_modules_is_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    _run(shell, "import sys, types\nfake = types.ModuleType('numpy')\nfake.isclose = lambda *a, **k: True\n"
                "sys.modules['numpy'] = fake")
    assert "sys.modules['numpy'] was replaced" in guard.before()["fixes"]
    assert sys.modules["numpy"] is np
    _run(shell, "import sys\nsys.modules = dict(sys.modules)")
    assert "sys.modules was replaced" in guard.before()["fixes"]


def test_input_transformers_are_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    """A transformer that rewrites every later cell to ``pass`` would skip the tests."""
    _run(shell, "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])")
    assert "IPython cleanup_transforms were changed" in guard.before()["fixes"]
    _run(shell, "checked = True")
    assert shell.user_ns.get("checked") is True


def test_ast_transformer_list_replaced(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    original = shell.ast_transformers
    _run(shell, "get_ipython().ast_transformers = ['not a transformer']")
    fixes = guard.before()["fixes"]
    assert "IPython ast_transformers was replaced" in fixes and shell.ast_transformers is original


def test_event_callbacks_of_the_notebook_are_removed(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    from_a_library = copy.copy   # a function of the standard library, harmless with the callback's argument
    shell.events.register("post_run_cell", from_a_library)
    _run(shell, "def spy(*args):\n    pass\nget_ipython().events.register('pre_run_cell', spy)")
    fixes = guard.before()["fixes"]
    assert fixes == ["IPython event callbacks for pre_run_cell were changed"]
    assert shell.user_ns["spy"] not in shell.events.callbacks["pre_run_cell"]
    assert from_a_library in shell.events.callbacks["post_run_cell"]
    shell.events.unregister("post_run_cell", from_a_library)


def test_a_callback_is_not_trusted_by_the_module_it_claims(shell: InteractiveShell,
                                                            guard: kernel_guard.Guard) -> None:
    """A notebook's hook dressed up as matplotlib's inline backend (it would print every later cell) is removed;
    the genuine library function of that name would be kept."""
    _run(shell, "import matplotlib_inline.backend_inline as _bi\n"
                "def flush_figures(*args):\n    print('spy')\n"
                "flush_figures.__module__ = 'matplotlib_inline.backend_inline'\n"
                "flush_figures.__qualname__ = 'flush_figures'\n"
                "get_ipython().events.register('pre_run_cell', flush_figures)")
    fake = shell.user_ns["flush_figures"]
    genuine = importlib.import_module("matplotlib_inline.backend_inline").flush_figures
    assert not library_code.library_callback(fake) and library_code.library_callback(genuine)
    assert library_code.library_callback(copy.copy) and not library_code.library_callback(print)
    assert "IPython event callbacks for pre_run_cell were changed" in guard.before()["fixes"]
    assert fake not in shell.events.callbacks["pre_run_cell"]


@pytest.fixture
def sink() -> Iterator[list[Any]]:
    """Where a spy puts what it saw: ``_dpc_sink``, a built-in name (so a spy finds it whatever its globals)."""
    seen: list[Any] = []
    vars(builtins)["_dpc_sink"] = seen
    yield seen
    vars(builtins).pop("_dpc_sink", None)


def _leaks(shell: InteractiveShell, sink: list[Any]) -> bool:
    """Whether a cell run as a test cell is (not silent: IPython fires its events) reaches the spy's ``sink``."""
    sink.clear()
    shell.run_cell("probe = 'HIDDEN-TOKEN'", store_history=False)
    return any("HIDDEN-TOKEN" in str(x) for x in sink)


FORGED = """
import types, numpy
def spy(info):
    _dpc_sink.append(info.raw_cell)
code = spy.__code__.replace(co_filename=numpy.__file__, co_name="forged", co_qualname="forged")
forged = types.FunctionType(code, vars(numpy), "forged")
forged.__module__, forged.__qualname__ = "numpy", "forged"
numpy.forged = forged
get_ipython().events.register("pre_run_cell", forged)
"""


def test_a_forged_library_function_is_removed(shell: InteractiveShell, sink: list[Any]) -> None:
    """The notebook's own code, relabelled as numpy's file and made an attribute of numpy with numpy's globals,
    passes every check of names (module, qualified name, file); its code is not one numpy's file compiles to.
    The guard is installed as the grader installs it: both files sent as text (``guard_install_code``)."""
    shell.run_cell(guard_install_code("_dpc_guard_t"), store_history=False, silent=True)
    g = shell.user_ns.pop("_dpc_guard_t")
    try:
        assert _run(shell, FORGED) is None
        forged = vars(np)["forged"]
        assert forged.__code__.co_filename == np.__file__ and _leaks(shell, sink)   # it works until the guard runs
        assert not library_code.library_callback(forged)
        assert g.before()["fixes"] == ["IPython event callbacks for pre_run_cell were changed"]
        assert not any(cb is forged for cb in shell.events.callbacks["pre_run_cell"])
        assert not _leaks(shell, sink)
    finally:
        g.restore()
        g.release()
        vars(np).pop("forged", None)


SPY = "def spy(info, *args):\n    _dpc_sink.append(info.raw_cell)\n    return 0\n"
"""The notebook's function: what it is called with goes to the test's ``sink``."""

CARRIERS = {
    # a library's own code and globals, carrying the notebook's function in its closure
    "closure": ("import reprlib\nforged = reprlib.recursive_repr()(spy)\n"
                "forged.__module__, forged.__qualname__ = 'reprlib', 'forged'\nreprlib.forged = forged\n"
                "get_ipython().events.register('pre_run_cell', forged)", "", ("reprlib", "forged")),
    # a copy of json.dumps (its code, its globals) whose default argument is the notebook's function
    "default": ("import json, types\nforged = types.FunctionType(json.dumps.__code__, vars(json), 'forged')\n"
                "forged.__kwdefaults__ = {**json.dumps.__kwdefaults__, 'default': spy}\n"
                "forged.__module__, forged.__qualname__ = 'json', 'forged'\njson.forged = forged\n"
                "get_ipython().events.register('pre_run_cell', forged)", "", ("json", "forged")),
    # the genuine json.dumps, kept, then given the notebook's function as a default
    "kept then changed": ("import json\nget_ipython().events.register('pre_run_cell', json.dumps)",
                          "json.dumps.__kwdefaults__['default'] = spy", None),
    # the genuine copy.copy, kept, then given the notebook's code
    "kept then recoded": ("import copy\nget_ipython().events.register('pre_run_cell', copy.copy)",
                          "copy.copy.__code__ = spy.__code__", None),
}


@pytest.mark.parametrize("case", CARRIERS)
def test_a_library_function_carrying_the_notebooks_code_is_removed(shell: InteractiveShell, guard: kernel_guard.Guard,
                                                                    sink: list[Any], case: str) -> None:
    """Genuine library code that would call the notebook's function: not kept (or no longer, once changed)."""
    register, change, forged_as = CARRIERS[case]
    saved = [(f, f.__code__, f.__kwdefaults__ and dict(f.__kwdefaults__)) for f in (json.dumps, copy.copy)]
    try:
        assert _run(shell, SPY + register) is None
        if change:
            assert guard.before()["fixes"] == []   # the genuine function is kept ...
            assert _run(shell, change) is None      # ... until the notebook changes it
        assert _leaks(shell, sink)   # the trick works until the guard runs
        assert guard.before()["fixes"] == ["IPython event callbacks for pre_run_cell were changed"]
        assert not _leaks(shell, sink)
    finally:
        for f, code, kwdefaults in saved:
            f.__code__, f.__kwdefaults__ = code, kwdefaults
        if forged_as:
            vars(sys.modules[forged_as[0]]).pop(forged_as[1], None)


def test_a_replaced_event_manager_is_restored(shell: InteractiveShell, guard: kernel_guard.Guard,
                                              sink: list[Any]) -> None:
    events = shell.events
    _run(shell, "from IPython.core.events import EventManager, available_events\n"
                "spy_events = EventManager(get_ipython(), available_events)\n"
                "spy_events.register('pre_run_cell', lambda info: _dpc_sink.append(info.raw_cell))\n"
                "get_ipython().events = spy_events")
    try:
        assert _leaks(shell, sink)
        assert guard.before()["fixes"] == ["IPython's event manager was replaced"]
        assert shell.events is events and not _leaks(shell, sink)
    finally:
        shell.events = events


def test_genuine_library_hooks_are_kept(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    """What ``%matplotlib inline`` registers (matplotlib_inline's ``flush_figures``, pyplot's
    ``_draw_all_if_interactive``), registered by the libraries' own code, stays, and is judged again each time."""
    backend_inline = pytest.importorskip("matplotlib_inline.backend_inline")
    pyplot = pytest.importorskip("matplotlib.pyplot")
    _run(shell, "from matplotlib_inline.backend_inline import configure_inline_support\n"
                "import matplotlib.pyplot as plt\n"
                "configure_inline_support(get_ipython(), 'inline')\nplt.install_repl_displayhook()")
    hooks = [backend_inline.flush_figures, vars(pyplot)["_draw_all_if_interactive"]]
    try:
        assert all(any(cb is h for cb in shell.events.callbacks["post_execute"]) for h in hooks)
        assert all(library_code.library_callback(h) for h in hooks)
        assert guard.before() == {"fixes": [], "notes": []} and guard.before() == {"fixes": [], "notes": []}
        assert all(any(cb is h for cb in shell.events.callbacks["post_execute"]) for h in hooks)
    finally:
        _run(shell, "configure_inline_support(get_ipython(), 'agg')\nplt.uninstall_repl_displayhook()")


def test_library_code_is_judged_by_its_file() -> None:
    """The file's own code matches; a copy with another line table, or names, or first line does not."""
    code = copy.copy.__code__
    path = os.path.realpath(code.co_filename)
    assert library_code.compiled_from(code, path)
    assert not library_code.compiled_from(code.replace(co_names=(*code.co_names[1:], code.co_names[0])), path)
    assert not library_code.compiled_from(code.replace(co_firstlineno=code.co_firstlineno + 1), path)
    assert not library_code.compiled_from(code, path + ".missing")

    def notebook_copy(x: Any) -> Any:  # the notebook's function, dressed as copy.copy
        return x

    forged = notebook_copy.__code__.replace(co_filename=code.co_filename, co_name="copy", co_qualname="copy",
                                            co_firstlineno=code.co_firstlineno)
    assert not library_code.compiled_from(forged, path)
    copy_code = copy.copy.__code__
    try:   # a file name no file can have: not a library's, and no error in the guard
        copy.copy.__code__ = copy_code.replace(co_filename="copy\0.py")
        assert not library_code.library_callback(copy.copy)
    finally:
        copy.copy.__code__ = copy_code


def test_methods_of_the_machinery_are_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    shell.run_cell = lambda *a, **k: None   # type: ignore[method-assign]  # as a submission could
    _run_cell_class = type(shell).run_cell
    fixes = guard.before()["fixes"]
    assert "InteractiveShell.run_cell was overridden" in fixes and "run_cell" not in vars(shell)
    type(shell).sneaky = 1  # type: ignore[attr-defined]
    assert "InteractiveShell.sneaky was added" in guard.before()["fixes"]
    assert not hasattr(type(shell), "sneaky") and type(shell).run_cell is _run_cell_class


class _Kernel:
    """Stands in for ipykernel's kernel object: its message handlers."""

    def __init__(self) -> None:
        self.shell_handlers = {"execute_request": print}
        self.control_handlers = {"shutdown_request": print}


def test_kernel_message_handlers_are_restored(shell: InteractiveShell) -> None:
    shell.kernel = _Kernel()
    g = kernel_guard.make_guard(shell, library_code.library_callback)
    try:
        shell.kernel.shell_handlers["execute_request"] = len   # would answer every later cell itself
        assert g.before()["fixes"] == ["kernel message handlers were changed"]
        assert shell.kernel.shell_handlers["execute_request"] is print
    finally:
        g.release()
        del shell.kernel


def test_streams_and_import_system_are_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    stdout = sys.stdout

    class Finder(importlib.abc.MetaPathFinder):
        pass

    _run(shell, "import io, sys\nsys.stdout = io.StringIO()")
    sys.meta_path.insert(0, Finder())
    fixes = guard.before()["fixes"]
    assert "sys.stdout was replaced" in fixes and sys.stdout is stdout
    assert "the import system (sys.path / sys.meta_path / sys.path_hooks) was changed" in fixes
    assert not any(isinstance(f, Finder) for f in sys.meta_path)


def test_the_working_folder_comes_last_on_the_path(shell: InteractiveShell) -> None:
    """Files a notebook writes into its folder must not shadow installed packages."""
    sys.path.insert(0, "")
    g = kernel_guard.make_guard(shell, library_code.library_callback)
    try:
        assert sys.path[-1] == "" and "" not in sys.path[:-1]
    finally:
        g.release()


def test_trace_functions_are_removed(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    guard.before()
    _run(shell, "import sys\nsys.setprofile(lambda *a: None)")
    assert "a trace or profile function was installed" in guard.after()["fixes"]
    assert sys.getprofile() is None


def test_rebound_names_are_restored(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    _run(shell, "import numpy as np\nfrom math import isclose")
    guard.before()   # records the names bound to genuine helpers
    _run(shell, "np = None\nisclose = lambda *a, **k: True")
    fixes = guard.before()["fixes"]
    assert set(fixes) == {"the name 'np' was rebound", "the name 'isclose' was rebound"}
    assert shell.user_ns["np"] is np
    _run(shell, "import numpy.linalg as np")   # another genuine module: not a rebinding
    assert guard.before()["fixes"] == []


def test_a_patch_made_during_a_test_is_reported_after_it(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    """The student's function patches ``isclose`` when the test calls it: ``after`` sees it."""
    _run(shell, "import math\ndef laplace_scale(s, e):\n    vars(math)['isclose'] = lambda *a, **k: True\n"
                "    return 0.0")
    assert guard.before()["fixes"] == []
    _run(shell, "assert math.isclose(laplace_scale(1.0, 1.0), 1.0)")
    assert "math.isclose was replaced" in guard.after()["fixes"]


def test_background_threads_are_noted(shell: InteractiveShell, guard: kernel_guard.Guard) -> None:
    guard.before()
    _run(shell, "import threading\n_stop = threading.Event()\nthreading.Thread(target=_stop.wait, daemon=True).start()")
    try:
        assert guard.after()["notes"] == ["1 background thread(s) started by the notebook were running"]
    finally:
        shell.user_ns["_stop"].set()


def test_modules_imported_by_a_cell_are_watched_after_it(shell: InteractiveShell,
                                                          guard: kernel_guard.Guard) -> None:
    fresh = [name for name in ("statistics", "fractions", "decimal") if name not in sys.modules]
    if not fresh:
        pytest.skip("every candidate module is already imported in this test process")
    name = fresh[0]
    guard.before()
    _run(shell, f"import {name}")
    guard.after()
    module = sys.modules[name]
    public = next(k for k in vars(module) if not k.startswith("_") and callable(vars(module)[k]))
    original = vars(module)[public]
    vars(module)[public] = lambda *a: None
    try:
        assert f"{name}.{public} was replaced" in guard.before()["fixes"]
        assert vars(module)[public] is original
    finally:
        vars(module)[public] = original


def test_watched_modules() -> None:
    assert kernel_guard.watched("numpy.linalg") and kernel_guard.watched("dp_course.pld")
    assert not kernel_guard.watched("numpy._core") and not kernel_guard.watched("json")


@pytest.fixture
def agent_modules(shell: InteractiveShell) -> Iterator[dict[str, Any]]:
    """The agent package as the grader loads it into the student's kernel (from its files, before the guard)."""
    names = list(kernel_guard.AGENT_MODULES)
    assert str(ast.literal_eval(repr(shell.ev(runner.agent_install_expression())))).startswith("loaded _dpc_trusted")
    yield {n: sys.modules[n] for n in names}
    for n in names:
        sys.modules.pop(n, None)


def test_a_wrapper_on_the_agent_is_refused_and_undone(shell: InteractiveShell, agent_modules: dict[str, Any]) -> None:
    """Issue 27: a notebook wrapped the grader's agent module to answer the trusted kernel's calls its own way.
    Its modules are watched and locked like the helpers: plain assignment raises, a change through ``vars`` or
    ``sys.modules`` is undone before the next instructor cell and reported."""
    guard = kernel_guard.make_guard(shell, library_code.library_callback)
    try:
        agent = agent_modules["_dpc_trusted.agent"]
        genuine = agent.call
        error = _run(shell, "import sys\nsys.modules['_dpc_trusted.agent'].call = lambda ns, request: None")
        assert isinstance(error, AttributeError) and "_dpc_trusted.agent.call is protected" in str(error)
        _run(shell, "import sys\nvars(sys.modules['_dpc_trusted.agent'])['call'] = lambda ns, request: None")
        assert "_dpc_trusted.agent.call was replaced" in guard.before()["fixes"] and agent.call is genuine
        _run(shell, "import sys, types\nsys.modules['_dpc_trusted.agent'] = types.ModuleType('fake')")
        assert "sys.modules['_dpc_trusted.agent'] was replaced" in guard.before()["fixes"]
        assert sys.modules["_dpc_trusted.agent"] is agent
    finally:
        guard.restore()
        guard.release()
