"""Which names a test cell takes from the student, and what they become in the trusted kernel.

:func:`free_names` reads a cell's source (IPython syntax allowed) and returns the global names it reads but never
binds – at any depth, inside the helper functions and comprehensions it defines too (``symtable`` does the
scoping).  In the trusted kernel, :func:`resolve` asks the student's kernel about those of them that the
trusted namespace does not define (the setup cell's imports, the test cells' own ``_`` names and the
built-ins always win, so a student who rebinds ``np`` or ``privacy_profile`` changes nothing here) and binds:

* a student's function -> a :class:`proxy.StudentFunction` (every call goes to the student's kernel);
* plain data -> its value (decoded, a copy);
* a module -> the trusted kernel's own module of that name, if it was imported when the kernel started or the
  setup cell binds it (importing a module by a name the student chose would run code the student picked, and
  allowing whatever earlier notebooks happened to import would make a verdict depend on them);
* anything else -> an :class:`proxy.Unavailable` that fails with a clear message when used;
* a name the student's kernel does not have -> nothing (the cell raises ``NameError`` as in one kernel).
"""

from __future__ import annotations

import builtins
import symtable
import sys
import types
from collections.abc import Mapping, MutableMapping, Sequence, Set
from typing import Any

from IPython.core.inputtransformer2 import TransformerManager

from . import codec, proxy

__all__ = ["free_names", "bound_names", "resolve", "python_source"]

_TRANSFORMER = TransformerManager()  # type: ignore[no-untyped-call]


def python_source(source: str) -> str:
    """The Python code IPython runs for a cell (magics and shell escapes become function calls)."""
    return _TRANSFORMER.transform_cell(source)


def _collect(table: symtable.SymbolTable, reads: set[str], binds: set[str]) -> None:
    """Global names read (anywhere below ``table``) and names bound at module level (also via ``global``)."""
    module_level = table.get_type() == "module"
    for sym in table.get_symbols():
        name = sym.get_name()
        if module_level:
            if sym.is_assigned() or sym.is_imported():
                binds.add(name)
            elif sym.is_referenced():
                reads.add(name)
        elif sym.is_global():
            if sym.is_declared_global() and (sym.is_assigned() or sym.is_imported()):
                binds.add(name)
            elif sym.is_referenced():
                reads.add(name)
    for child in table.get_children():
        _collect(child, reads, binds)


def free_names(source: str) -> list[str]:
    """Global names a cell reads but never binds, sorted (empty if the cell does not parse).

    Function and class definitions, imports, assignments (also ``global`` ones inside functions), loop and
    ``with`` targets all bind; parameters and comprehension variables are local to their scope.  A name the
    cell both binds and reads is the cell's own.
    """
    try:
        table = symtable.symtable(python_source(source), "<cell>", "exec")
    except (SyntaxError, ValueError):
        return []
    reads: set[str] = set()
    binds: set[str] = set()
    _collect(table, reads, binds)
    return sorted(reads - binds)


def bound_names(source: str) -> list[str]:
    """Global names a cell binds (definitions, imports, assignments, also ``global`` ones inside functions),
    sorted (empty if the cell does not parse): what an exercise's solution cell asks the student to define, or
    what the setup cell defines."""
    try:
        table = symtable.symtable(python_source(source), "<cell>", "exec")
    except (SyntaxError, ValueError):
        return []
    reads: set[str] = set()
    binds: set[str] = set()
    _collect(table, reads, binds)
    return sorted(binds)


_BUILTINS = frozenset(dir(builtins))


def resolve(names: Sequence[str], namespace: MutableMapping[str, Any], link: proxy.StudentLink,
            bound: set[str], *, trusted: Set[str] = frozenset(), modules: Set[str] | None = None,
            student: Set[str] | None = None) -> dict[str, str]:
    """Bind in ``namespace`` what a test cell needs from the student; return ``{name: kind}``.

    Args:
        names: the cell's free names (:func:`free_names`).
        namespace: the trusted kernel's user namespace.
        link: the link to the student's kernel.
        bound: names bound from the student's kernel for earlier cells; updated.  They are looked up again
            (a helper function of an earlier test cell may use them, and the student's cells may have
            changed them since).
        trusted: names that never come from the student even if absent from ``namespace``.
        modules: names of the modules a student's name may stand for, besides the modules bound in
            ``namespace`` (the setup's imports); None: any module the trusted kernel has imported.
        student: the only names ever asked of the student's kernel (the names the exercises' solution cells
            define); a name outside it that the trusted namespace lacks stays unbound (``NameError``), so an
            instructor name the setup did not bind is never taken from the student.  None: any name.

    Returns:
        ``{name: "function" | "data" | "module" | "other" | "missing" | "error"}`` for the names asked.
    """
    wanted = sorted(n for n in {n for n in names if n not in _BUILTINS and n not in trusted
                                and (n not in namespace or n in bound)} | bound
                    if student is None or n in student)
    if not wanted:
        return {}
    try:
        found = link.describe(wanted)
    except proxy.StudentCodeError as exc:
        for name in wanted:
            namespace[name] = proxy.Unavailable(name, f"unavailable ({exc})")
            bound.add(name)
        return dict.fromkeys(wanted, "error")
    kinds: dict[str, str] = {}
    for name in wanted:
        kind, value = _value(name, found.get(name, {"kind": "missing"}), link, _allowed(namespace, modules))
        kinds[name] = kind
        if kind == "missing":
            if name in bound:
                namespace.pop(name, None)
                bound.discard(name)
        else:
            namespace[name] = value
            bound.add(name)
    return kinds


def _allowed(namespace: Mapping[str, Any], modules: Set[str] | None) -> Set[str] | None:
    if modules is None:
        return None
    return set(modules) | {v.__name__ for v in namespace.values() if isinstance(v, types.ModuleType)}


def _value(name: str, description: dict[str, Any], link: proxy.StudentLink,
           modules: Set[str] | None = None) -> tuple[str, Any]:
    """``(kind, value to bind)`` for one description sent by the student's kernel (checked here)."""
    kind = description.get("kind")
    if kind == "function":
        return "function", proxy.StudentFunction(name, link)
    if kind == "data" and "value" in description:
        try:
            return "data", link.decode(description["value"])
        except codec.CodecError as exc:
            return "other", proxy.Unavailable(name, f"not plain data within the limits ({exc})")
    if kind == "module":
        module_name = description.get("module")
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        if module is not None and (modules is None or module_name in modules):
            return "module", module
        return "other", proxy.Unavailable(name, f"a module ({str(module_name)[:80]}) that the test cell does not "
                                                "import itself")
    if kind == "missing":
        return "missing", None
    what = str(description.get("type", "an object"))[:100]
    why = str(description.get("why", ""))[:300]
    return "other", proxy.Unavailable(name, f"a value of type {what}" + (f" ({why})" if why else ""))
