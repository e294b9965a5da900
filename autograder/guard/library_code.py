"""Whether a function really belongs to an installed library: judged by what it is, not by what it says.

This module runs **in the student's kernel**, next to the test guard (:mod:`autograder.guard.kernel_guard`): the
executing preprocessor sends this file's text with the guard's and hands :func:`library_callback` to
``make_guard``, which keeps an IPython event callback that a notebook did not register only while this function
says it is a library's (``%matplotlib inline`` registers ``matplotlib_inline.backend_inline.flush_figures``, and
``matplotlib.pyplot`` its ``_draw_all_if_interactive``).  So this module imports the standard library only, and
it is tested in-process (``tests/test_kernel_guard.py``).

Everything a function *says* about itself can be set by a notebook: ``__module__`` and ``__qualname__`` are
writable, ``code.replace(co_filename=..., co_qualname=...)`` makes a copy of the notebook's own code that names a
library's file, ``types.FunctionType(code, vars(numpy))`` gives it a library's globals, and one assignment makes
it an attribute of that library.  What the notebook cannot change is the library's file on disk: a function is
the library's when its code is one that the library's own file compiles to (:func:`compiled_from`: same
bytecode, constants, names and line table, nested code objects included), it runs in that module's globals,
it carries nothing of the notebook along (no closure but a method's ``__class__`` cell; only plain constants
as default arguments) and its qualified name leads from the module to it.  Each file is compiled once (a few
milliseconds; ``matplotlib.pyplot`` about 20 ms) and each code object is judged once.

What this does not judge: a genuine library function can still call back into objects the notebook prepared
(``logging.info`` with a handler of the notebook's on the root logger, a name the notebook set in the
library's module).  While grading, the hidden tests run in the trusted kernel and never reach the student's
kernel; with ``--single-kernel`` the guard is a best effort (see ``docs/design.md``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

__all__ = ["LIBRARY_ROOTS", "PLAIN_DEFAULTS", "library_callback", "compiled_from"]

LIBRARY_ROOTS = tuple(sorted({os.path.realpath(p) + os.sep for k, p in sysconfig.get_paths().items()
                              if k in ("purelib", "platlib", "stdlib", "platstdlib")}))
"""Folders of the installed packages and the standard library (as this kernel sees them)."""

PLAIN_DEFAULTS = (type(None), bool, int, float, complex, str, bytes)
"""Types a library function's default arguments may have here (tuples and frozensets of them too): a copy of a
library function cannot bring a callable of the notebook along as a default."""

MODULE_DICT: Callable[[types.ModuleType], dict[str, Any]] = vars(types.ModuleType)["__dict__"].__get__
CLASS_DICT: Callable[[type], Any] = vars(type)["__dict__"].__get__
MRO: Callable[[type], tuple[type, ...]] = vars(type)["__mro__"].__get__
"""A module's namespace, a class's namespace and its MRO, read through the built-in types' own descriptors (a
subclass, a property or a metaclass of the notebook's cannot answer instead)."""

_file_codes: dict[str, dict[tuple[str, int], list[types.CodeType]]] = {}  # file -> its code objects by name, line
_verdicts: dict[tuple[int, str], tuple[types.CodeType, bool]] = {}  # (id(code), file) -> (code, whether it is its)


def library_callback(cb: Any) -> bool:
    """Whether ``cb`` is a function (or a bound method) of an installed library.

    All of these must hold: ``cb`` is a plain Python function (or a method bound to one); its ``__qualname__``
    leads, from the module its ``__module__`` names, to this very function; its globals are that module's
    namespace; it has no closure (but a method's ``__class__`` cell, holding its class) and only
    :data:`PLAIN_DEFAULTS` as default arguments; its code's ``co_filename`` is the module's ``__file__``,
    inside :data:`LIBRARY_ROOTS`; and that file compiles to this code (:func:`compiled_from`).  Attributes are
    read through the built-in types, so no ``__getattr__``, property or metaclass of the notebook runs.
    """
    fn = cb.__func__ if type(cb) is types.MethodType else cb
    if type(fn) is not types.FunctionType or type(fn.__module__) is not str or type(fn.__qualname__) is not str:
        return False
    module = sys.modules.get(fn.__module__)
    if module is None or not issubclass(type(module), types.ModuleType) or fn.__globals__ is not MODULE_DICT(module):
        return False
    owner: Any = None
    target: Any = module
    for part in fn.__qualname__.split("."):
        owner, target = target, _attribute(target, part)
    code, source = fn.__code__, MODULE_DICT(module).get("__file__")
    defaults = (*tuple.__iter__(() if fn.__defaults__ is None else fn.__defaults__),
                *dict.values({} if fn.__kwdefaults__ is None else fn.__kwdefaults__))
    if (target is not fn or not _own_closure(fn, owner) or not all(_plain(v) for v in defaults)
            or type(source) is not str or type(code.co_filename) is not str or type(code.co_qualname) is not str):
        return False
    try:
        path = os.path.realpath(code.co_filename)
        same = path == os.path.realpath(source)
    except (ValueError, OSError):  # a name no file can have (a null byte), a loop of links
        return False
    return same and any(path.startswith(root) for root in LIBRARY_ROOTS) and compiled_from(code, path)


def compiled_from(code: types.CodeType, path: str) -> bool:
    """Whether compiling the Python file ``path`` (as an import does) gives a code object equal to ``code`` -- the
    same bytecode, constants (nested code objects compared the same way), names, variables, flags and line
    table -- with the same qualified name and first line.  ``False`` for a file without Python source.

    The file is compiled once per process and the answer kept per code object (the cache holds the code object,
    so its ``id`` is not reused)."""
    key = (id(code), path)
    if key not in _verdicts or _verdicts[key][0] is not code:
        if path not in _file_codes:
            _file_codes[path] = _code_objects(path)
        found = _file_codes[path].get((code.co_qualname, code.co_firstlineno), [])
        _verdicts[key] = (code, any(code == c for c in found))
    return _verdicts[key][1]


def _code_objects(path: str) -> dict[tuple[str, int], list[types.CodeType]]:
    """The code objects the file ``path`` compiles to, nested ones included, by (qualified name, first line)."""
    try:
        with open(path, "rb") as f:
            todo = [compile(f.read(), path, "exec", dont_inherit=True)]
    except (OSError, SyntaxError, ValueError):  # no source (a .pyc or an extension module): nothing matches
        todo = []
    out: dict[tuple[str, int], list[types.CodeType]] = {}
    while todo:
        code = todo.pop()
        out.setdefault((code.co_qualname, code.co_firstlineno), []).append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return out


def _attribute(obj: Any, name: str) -> Any:
    """``obj``'s attribute ``name`` from its own namespace (a module's, or a class's along its MRO), static and
    class methods unwrapped; ``None`` if there is none or ``obj`` is neither a module nor a class."""
    value: Any
    if issubclass(type(obj), types.ModuleType):
        value = MODULE_DICT(obj).get(name)
    elif issubclass(type(obj), type):
        value = next((CLASS_DICT(k)[name] for k in MRO(obj) if name in CLASS_DICT(k)), None)
    else:
        return None
    return value.__func__ if type(value) in (staticmethod, classmethod) else value


def _own_closure(fn: types.FunctionType, owner: Any) -> bool:
    """Whether ``fn`` has no closure, or only a method's ``__class__`` cell holding ``owner`` (its class)."""
    try:
        return fn.__code__.co_freevars in ((), ("__class__",)) and all(
            c.cell_contents is owner for c in fn.__closure__ or ())
    except ValueError:  # an empty cell
        return False


def _plain(value: Any) -> bool:
    return type(value) in PLAIN_DEFAULTS or (type(value) in (tuple, frozenset) and all(_plain(v) for v in value))
