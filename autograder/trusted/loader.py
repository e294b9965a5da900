"""Installs modules sent as source text into a kernel, as one package of their own.

This file is sent into the student's kernel from its file (:func:`autograder.trusted.runner.install_agent`) and
run there once, before the first cell, to load :mod:`autograder.trusted.plain`, :mod:`autograder.trusted.codec` and
:mod:`autograder.trusted.agent` under the package name the grader chose (``_dpc_trusted`` by default).  The
modules keep their relative imports (``from . import codec``), because the package and each module are
registered in ``sys.modules`` before the next one runs.  Standard library only.
"""

from __future__ import annotations

import sys
import types

__all__ = ["load_package"]


def load_package(package: str, sources: dict[str, str]) -> str:
    """Create the package ``package`` with one module per entry of ``sources`` (name -> source), in order.

    Returns:
        ``"loaded <package>: <module names>"``, which the grader checks.
    """
    pkg = types.ModuleType(package, f"Modules the grader sent into this kernel: {', '.join(sources)}.")
    pkg.__path__ = []
    pkg.__package__ = package
    sys.modules[package] = pkg
    for name, source in sources.items():
        module = types.ModuleType(f"{package}.{name}")
        module.__package__ = package
        module.__file__ = f"<{package}/{name}.py>"
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        setattr(pkg, name, module)
    return f"loaded {package}: {' '.join(sources)}"
