"""The test guard: keeps the helpers a test relies on genuine, inside the kernel that runs a submission.

This module runs **in the student's kernel**.  The executing preprocessor
(:class:`autograder.execute.safe_execute.SafeExecute`) reads this file and :mod:`autograder.guard.library_code`
and executes them, silently and each in a module namespace of its own, before the first cell; then it keeps one
object, ``make_guard(get_ipython(), library_callback)``, under a random name in the kernel.  So this module
imports the standard library only (and not its judge of library callbacks: it is handed over), and it is tested
in-process against an IPython shell (``tests/test_kernel_guard.py``).

A submission can try to make a test pass without the right answer by changing what the test calls: replace
``math.isclose`` or ``numpy.isclose``, swap ``sys.modules["numpy"]``, rewrite later cells with an IPython input
transformer, install a trace function, ...  The guard snapshots each such *surface* when it is installed, and
each surface has one restorer:

=======================  =====================================================================================
:class:`ModuleSurface`   attributes of the helper modules (``builtins``, ``math``, ``numpy``, ``scipy``,
                         ``dp_course``, ...) and their ``sys.modules`` entries; ``math``/``numpy`` are locked
                         (plain assignment to a snapshotted attribute raises)
:class:`ListSurface`     IPython's input and AST transformer lists
:class:`EventSurface`    IPython's event manager and callbacks (those of installed libraries are kept: the judge)
:class:`InstanceSurface` methods bound on the shell, kernel, display hook, session and compiler objects
:class:`ClassSurface`    the dictionaries of those objects' classes
:class:`HandlerSurface`  the kernel's message handlers
:class:`SysSurface`      ``sys.modules``, ``sys.stdout``/``stderr``/``stdin``
:class:`ImportSurface`   ``sys.path``, ``sys.meta_path``, ``sys.path_hooks``
:class:`TraceSurface`    trace and profile functions (``sys`` and ``threading``)
:class:`NameSurface`     names in the notebook's namespace bound to genuine helpers (``np``, ``isclose``)
=======================  =====================================================================================

:meth:`Guard.before` (before each instructor cell) restores everything and reports what it had to fix;
:meth:`Guard.after` (after each instructor cell) does the same, starts watching modules the cell imported, and
notes background threads.  When the test cells run in the student's kernel (``dp-course grade --single-kernel``,
``dp-course check``), a test cell after which something had to be restored scores zero (the preprocessor decides
that); when they run in the trusted kernel (the default while grading), the guard only keeps the student's
kernel in order and reports what it restored: the verdict no longer depends on it.  The reports are plain
dictionaries, read back by the grader with ``ast.literal_eval``.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

__all__ = ["AGENT_MODULES", "AGENT_PACKAGE", "LOCKED_MODULES", "WATCHED_PREFIXES", "Guard", "make_guard", "watched"]

MISSING = object()

LOCKED_MODULES = ("math", "cmath", "operator", "numpy", "numpy.testing", "numpy.linalg", "numpy.random")
"""Modules imported when the guard is installed (so that they are snapshotted) and locked against assignment."""

PRELOADED_MODULES = ("absl.flags",)
"""Libraries a lecture's setup imports that add an import hook when imported (``absl.flags`` puts a
``ReloadDetector`` on ``sys.meta_path``; lecture 06 imports it through dp-accounting): imported before the snapshot,
so that their hook is part of it and the instructor's setup is not reported as changing the import system."""

WATCHED_PREFIXES = ("numpy", "scipy", "dp_course", "math", "cmath", "operator", "statistics", "fractions",
                    "decimal", "random", "functools", "itertools", "collections", "unittest", "builtins")
"""Top-level packages whose public modules are snapshotted (private submodules are left out: tests call the
public API, and the snapshot stays small enough to check before every cell)."""

AGENT_PACKAGE = "_dpc_trusted"
"""The package the grader's agent is loaded under in the student's kernel (``autograder.trusted.runner.PACKAGE``):
its modules are watched and locked like the helpers, so a wrapper a notebook puts on them (to answer the trusted
kernel's calls its own way) is undone before every instructor cell and reported."""

AGENT_MODULES = tuple(f"{AGENT_PACKAGE}{suffix}" for suffix in ("", ".plain", ".codec", ".agent"))
"""The agent's modules (locked against assignment once snapshotted)."""

VOLATILE_BUILTINS = frozenset({"_", "__", "___", "exit", "quit", "get_ipython", "display", "__IPYTHON__",
                               "copyright", "credits", "license", "help", "input", "raw_input"})
"""Names IPython and ipykernel rebind themselves around each execution."""

LIBRARY_THREADS = ("ipykernel", "zmq", "IPython", "jupyter", "tornado", "comm")
"""Modules whose threads belong to the kernel itself, not to the notebook."""

Report = dict[str, list[str]]

Judge = Callable[[Any], bool]
"""Whether a callable is a function of an installed library (:func:`autograder.guard.library_code.library_callback`)."""


def watched(name: str) -> bool:
    """Whether the module ``name`` is snapshotted (a public module of a :data:`WATCHED_PREFIXES` package, or one
    of the grader's agent, :data:`AGENT_PACKAGE`)."""
    parts = name.split(".")
    if parts[0] == AGENT_PACKAGE:
        return True
    return parts[0] in WATCHED_PREFIXES and not any(p.startswith("_") for p in parts)


def _keep(modname: str, key: str) -> bool:
    """Whether attribute ``key`` of module ``modname`` belongs in the snapshot."""
    if modname == "builtins":
        return key not in VOLATILE_BUILTINS and (not key.startswith("__") or key in ("__import__", "__build_class__"))
    return not (key.startswith("__") and key.endswith("__"))


def _import_locked_modules() -> None:
    for group in (LOCKED_MODULES[:3], LOCKED_MODULES[3:], PRELOADED_MODULES):
        try:
            for name in group:
                importlib.import_module(name)
        except Exception:  # numpy may be missing; the guard still protects the rest
            pass


def _same_items(live: list[Any], items: list[Any]) -> bool:
    return len(live) == len(items) and all(x is y for x, y in zip(live, items, strict=False))


class ModuleSurface:
    """The helper modules: their attributes, their ``sys.modules`` entries, and the lock on ``math``/``numpy``."""

    def __init__(self) -> None:
        self.modules: dict[str, types.ModuleType] = {}
        self.snap: dict[str, dict[str, Any]] = {}
        self.genuine: dict[int, Any] = {}
        self.protected = _protected_module_class(self.snap)
        self.watch("builtins", builtins)
        self.watch_new()
        self.lock()

    def watch(self, name: str, mod: Any) -> None:
        """Snapshot module ``mod`` (once) and remember its callables and submodules as genuine."""
        if name in self.modules or not isinstance(mod, types.ModuleType):
            return
        self.modules[name] = mod
        self.snap[name] = {k: v for k, v in list(vars(mod).items()) if _keep(name, k)}
        self.genuine[id(mod)] = mod
        for v in self.snap[name].values():
            if callable(v) or isinstance(v, types.ModuleType):
                self.genuine[id(v)] = v

    def watch_new(self, only: Callable[[str], bool] = lambda name: True) -> None:
        """Snapshot every watched module in ``sys.modules`` not snapshotted yet (for which ``only`` holds)."""
        for name, mod in list(sys.modules.items()):
            if watched(name) and name not in self.modules and only(name):
                self.watch(name, mod)

    def lock(self) -> None:
        """Make plain assignment to the snapshotted attributes of :data:`LOCKED_MODULES` (and the agent's) raise."""
        for name in (*LOCKED_MODULES, *AGENT_MODULES):
            mod = self.modules.get(name)
            if mod is not None and type(mod) is types.ModuleType:
                with contextlib.suppress(TypeError):
                    mod.__class__ = self.protected

    def unlock(self) -> None:
        """Undo :meth:`lock` (for in-process tests; the kernel never unlocks)."""
        for name in (*LOCKED_MODULES, *AGENT_MODULES):
            mod = self.modules.get(name)
            if mod is not None and type(mod) is self.protected:
                mod.__class__ = types.ModuleType

    def restore(self) -> list[str]:
        fixes = []
        for name, mod in self.modules.items():
            if sys.modules.get(name) is not mod:
                sys.modules[name] = mod
                fixes.append(f"sys.modules[{name!r}] was replaced")
            d = vars(mod)
            for k, v in self.snap[name].items():
                if d.get(k, MISSING) is not v:
                    d[k] = v
                    fixes.append(f"{name}.{k} was replaced")
        self.lock()
        return fixes


def _protected_module_class(snap: dict[str, dict[str, Any]]) -> type[types.ModuleType]:
    """A module class whose snapshotted attributes (in ``snap``) cannot be replaced by plain assignment."""

    class ProtectedModule(types.ModuleType):
        """Module whose snapshotted attributes cannot be replaced by plain assignment."""

        def __setattr__(self, key: str, value: Any) -> None:
            d = snap.get(types.ModuleType.__getattribute__(self, "__name__"))
            if d is not None and key in d and d[key] is not value:
                raise AttributeError(f"{self.__name__}.{key} is protected while the notebook is graded")
            types.ModuleType.__setattr__(self, key, value)

        def __delattr__(self, key: str) -> None:
            d = snap.get(types.ModuleType.__getattribute__(self, "__name__"))
            if d is not None and key in d:
                raise AttributeError(f"{self.__name__}.{key} is protected while the notebook is graded")
            types.ModuleType.__delattr__(self, key)

    return ProtectedModule


class ListSurface:
    """IPython's input transformers and AST transformers (lists a submission could extend or replace)."""

    def __init__(self, shell: Any) -> None:
        tm = shell.input_transformer_manager
        owners = [(tm, "cleanup_transforms"), (tm, "line_transforms"), (tm, "token_transformers"),
                  (shell, "input_transformers_post"), (shell, "ast_transformers")]
        self.snap = [(o, a, getattr(o, a), list(getattr(o, a))) for o, a in owners if hasattr(o, a)]

    def restore(self) -> list[str]:
        fixes = []
        for owner, attr, original, items in self.snap:
            if getattr(owner, attr, None) is not original:
                with contextlib.suppress(Exception):
                    setattr(owner, attr, original)
                fixes.append(f"IPython {attr} was replaced")
            if not _same_items(original, items):
                original[:] = items
                fixes.append(f"IPython {attr} were changed")
        return fixes


class EventSurface:
    """IPython's event manager and its callbacks.  A callback added since the guard was installed stays only while
    ``is_library`` says it is a function of an installed library (judged again each time: a kept function's code
    or defaults can be changed later), whatever module a callback of the notebook claims to come from."""

    def __init__(self, shell: Any, is_library: Judge) -> None:
        self.shell, self.events, self.callbacks = shell, shell.events, shell.events.callbacks
        self.is_library = is_library
        self.snap = {k: list(v) for k, v in self.callbacks.items()}

    def restore(self) -> list[str]:
        fixes = []
        if getattr(self.shell, "events", None) is not self.events or vars(self.events).get("callbacks") is not \
                self.callbacks:
            self.shell.events, self.events.callbacks = self.events, self.callbacks
            fixes.append("IPython's event manager was replaced")
        for event, original in self.snap.items():
            cur = self.callbacks.get(event)
            if cur is None:
                self.callbacks[event] = cur = []
            added = [cb for cb in cur if not any(cb is x for x in original)]
            kept = [cb for cb in added if self.is_library(cb)]  # registered by an installed library
            if len(kept) != len(added) or any(not any(cb is x for x in cur) for cb in original):
                cur[:] = original + kept
                fixes.append(f"IPython event callbacks for {event} were changed")
        return fixes


class InstanceSurface:
    """Callables stored on the kernel's machinery objects (a method overridden on the instance)."""

    def __init__(self, objects: list[Any]) -> None:
        self.snap = [(o, {k: v for k, v in vars(o).items() if callable(v)}) for o in objects]

    def restore(self) -> list[str]:
        fixes = []
        for obj, inst in self.snap:
            d = vars(obj)
            for k in list(d):
                if k not in inst and callable(getattr(type(obj), k, None)) and callable(d[k]):
                    del d[k]
                    fixes.append(f"{type(obj).__name__}.{k} was overridden")
            for k, v in inst.items():
                if d.get(k, MISSING) is not v:
                    d[k] = v
                    fixes.append(f"{type(obj).__name__}.{k} was replaced")
        return fixes


class ClassSurface:
    """The class dictionaries of the kernel's machinery objects (their whole method resolution order)."""

    def __init__(self, objects: list[Any]) -> None:
        self.snap: list[tuple[type, dict[str, Any]]] = []
        seen: set[int] = set()
        for obj in objects:
            for cls in type(obj).__mro__:
                if cls is not object and id(cls) not in seen:
                    seen.add(id(cls))
                    self.snap.append((cls, dict(vars(cls))))

    def restore(self) -> list[str]:
        fixes = []
        for cls, cdict in self.snap:
            cur = vars(cls)
            for k, v in cdict.items():
                if cur.get(k, MISSING) is not v:
                    try:
                        setattr(cls, k, v)
                    except (AttributeError, TypeError):
                        continue
                    fixes.append(f"{cls.__name__}.{k} was replaced")
            for k in [k for k in cur if k not in cdict]:
                try:
                    delattr(cls, k)
                except (AttributeError, TypeError):
                    continue
                fixes.append(f"{cls.__name__}.{k} was added")
        return fixes


class HandlerSurface:
    """The kernel's shell and control message handlers."""

    def __init__(self, kernel: Any) -> None:
        self.snap = [(getattr(kernel, a), dict(getattr(kernel, a))) for a in ("shell_handlers", "control_handlers")
                     if kernel is not None and isinstance(getattr(kernel, a, None), dict)]

    def restore(self) -> list[str]:
        fixes = []
        for live, items in self.snap:
            if len(live) != len(items) or any(live.get(k) is not v for k, v in items.items()):
                live.clear()
                live.update(items)
                fixes.append("kernel message handlers were changed")
        return fixes


class SysSurface:
    """``sys.modules`` (the dictionary itself) and the standard streams."""

    ATTRS = ("stdout", "stderr", "stdin", "modules")

    def __init__(self) -> None:
        self.snap = {a: getattr(sys, a) for a in self.ATTRS if hasattr(sys, a)}

    def restore_modules(self) -> list[str]:
        """Put the original ``sys.modules`` back first: the module restorer works on it."""
        if sys.modules is not self.snap["modules"]:
            sys.modules = self.snap["modules"]
            return ["sys.modules was replaced"]
        return []

    def restore(self) -> list[str]:
        fixes = []
        for attr, value in self.snap.items():
            if attr != "modules" and getattr(sys, attr, MISSING) is not value:
                setattr(sys, attr, value)
                fixes.append(f"sys.{attr} was replaced")
        return fixes


class ImportSurface:
    """The import system: ``sys.path`` (with the working folder last), ``sys.meta_path``, ``sys.path_hooks``."""

    def __init__(self) -> None:
        # Files the notebook writes into its folder must not shadow installed packages.
        cwd_entries = [p for p in sys.path if p in ("", ".")]
        sys.path[:] = [p for p in sys.path if p not in cwd_entries] + cwd_entries
        self.snap: list[tuple[list[Any], list[Any]]] = [
            (sys.meta_path, list(sys.meta_path)), (sys.path_hooks, list(sys.path_hooks)), (sys.path, list(sys.path))]

    def restore(self) -> list[str]:
        fixes = []
        for live, items in self.snap:
            if not _same_items(live, items):
                live[:] = items
                fixes.append("the import system (sys.path / sys.meta_path / sys.path_hooks) was changed")
        return fixes


class TraceSurface:
    """Trace and profile functions, of this thread and of new threads."""

    def restore(self) -> list[str]:
        fixes = []
        if sys.gettrace() is not None or sys.getprofile() is not None:
            sys.settrace(None)
            sys.setprofile(None)
            fixes.append("a trace or profile function was installed")
        if getattr(threading, "_trace_hook", None) is not None or getattr(threading, "_profile_hook", None):
            threading.settrace(None)  # None removes the hook
            threading.setprofile(None)
            fixes.append("a thread trace or profile function was installed")
        return fixes


class NameSurface:
    """Names in the notebook's namespace that are bound to genuine helpers (``np``, ``isclose``, ...)."""

    def __init__(self, user_ns: dict[str, Any], genuine: dict[int, Any]) -> None:
        self.user_ns = user_ns
        self.genuine = genuine
        self.bindings: dict[str, Any] = {}

    def record(self) -> None:
        """Remember the public names now bound to a genuine helper."""
        for name, v in list(self.user_ns.items()):
            if not name.startswith("_") and self.genuine.get(id(v)) is v:
                self.bindings[name] = v

    def restore(self) -> list[str]:
        fixes = []
        for name, v in self.bindings.items():
            cur = self.user_ns.get(name, MISSING)
            if cur is not v and id(cur) not in self.genuine:
                self.user_ns[name] = v
                fixes.append(f"the name {name!r} was rebound")
        return fixes


class Guard:
    """The surfaces of one kernel, snapshotted when the guard is made; see the module's docstring."""

    def __init__(self, shell: Any, is_library: Judge) -> None:
        _import_locked_modules()
        kernel = getattr(shell, "kernel", None)
        self.modules = ModuleSurface()
        objects = [o for o in (shell, kernel, getattr(shell, "displayhook", None), getattr(shell, "display_pub", None),
                               getattr(kernel, "session", None), getattr(shell, "compile", None),
                               getattr(shell, "events", None)) if o is not None]
        self.lists = ListSurface(shell)
        self.events = EventSurface(shell, is_library)
        self.instances = InstanceSurface(objects)
        self.classes = ClassSurface(objects)
        self.handlers = HandlerSurface(kernel)
        self.sys = SysSurface()
        self.imports = ImportSurface()
        self.traces = TraceSurface()
        self.threads_at_start = {t.ident for t in threading.enumerate()}
        self.names = NameSurface(shell.user_ns, self.modules.genuine)
        self.modules_before: set[str] = set()
        self.last: Report = {"fixes": [], "notes": []}

    def restore(self) -> list[str]:
        """Restore every surface; what had to be fixed, one line each."""
        fixes = self.sys.restore_modules()
        for surface in (self.modules, self.lists, self.events, self.instances, self.classes, self.handlers,
                        self.sys, self.imports, self.traces, self.names):
            fixes += surface.restore()
        return fixes

    def before(self) -> Report:
        """Before an instructor cell: restore everything, remember the names bound to helpers."""
        fixes = self.restore()
        self.names.record()
        self.modules_before = set(sys.modules)
        self.last = {"fixes": _capped(fixes), "notes": []}
        return self.last

    def after(self) -> Report:
        """After an instructor cell: restore everything, watch the modules it imported, note background threads."""
        fixes = self.restore()
        self.modules.watch_new(only=lambda name: name not in self.modules_before)
        self.modules.lock()
        self.names.record()
        notes = []
        extra = [t for t in threading.enumerate() if t.ident not in self.threads_at_start and t.is_alive()
                 and not type(t).__module__.startswith(LIBRARY_THREADS)]
        if extra:
            notes.append(f"{len(extra)} background thread(s) started by the notebook were running")
        self.last = {"fixes": _capped(fixes), "notes": notes}
        return self.last

    def release(self) -> None:
        """Unlock the locked modules (for in-process tests; in a kernel the guard stays until the kernel ends)."""
        self.modules.unlock()


def _capped(fixes: list[str], keep: int = 49) -> list[str]:
    """The distinct fixes, sorted, at most ``keep`` of 300 characters (the grader parses a report of at most
    64 KiB and keeps no more than this), with a last line saying how many more there were."""
    lines = sorted({f[:300] for f in fixes})
    return lines[:keep] + ([f"... and {len(lines) - keep} more"] if len(lines) > keep else [])


def make_guard(shell: Any, is_library: Judge) -> Guard:
    """Install the guard on an IPython ``shell`` (``get_ipython()`` in a kernel): snapshot every surface.
    ``is_library`` decides which callbacks registered later belong to installed libraries (the executing
    preprocessor passes :func:`autograder.guard.library_code.library_callback`, sent with this module)."""
    return Guard(shell, is_library)
