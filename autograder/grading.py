"""Grade a class: collect submissions, autograde them with nbgrader in parallel workers, merge, report.

``dp-course grade SUBMISSIONS`` calls :func:`grade`.  The pipeline:

1. **Intake** (:func:`collect_submissions`): the submissions folder (or zip) is matched against the
   assignments' notebook names; nbgrader's ``submitted/<student>/<assignment>/<notebook>.ipynb`` and flat
   LMS downloads (``<student>_<anything>_<notebook>.ipynb``, Canvas/Moodle style) are both understood.
   Files over the size cap are never opened; files that are not valid JSON or not notebooks are replaced by
   the untouched release notebook (so nbgrader itself gives them zero) and flagged.
2. **Incremental**: each (student, assignment) gets a content hash; unchanged submissions keep their grade.
3. **Parallel autograde**: ``N`` worker processes, each with its own copy of the nbgrader course
   directory and of the gradebook, run nbgrader's own ``autograde`` and ``generate_feedback`` on one
   submission at a time.  The parent process alone writes the main gradebook: after each job it copies the
   worker's rows for that submission into it, so there are no concurrent writers.
4. **Execution** (:class:`SafeExecute`, nbgrader's ``Execute`` preprocessor with guards): every notebook
   runs in a fresh sandboxed kernel (:mod:`autograder.sandbox`) with per-cell and per-notebook time
   limits, capped output, and a guard that restores monkeypatched helpers before each test cell and
   zeroes a test cell during which they were tampered with.
5. **Outputs**: ``grades.csv`` (``nbgrader export``), per-student HTML feedback with hidden tests removed
   (:mod:`autograder.report`), and the summary report.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # a grading worker: skip a slow optional import of jsonschema (seconds per process)
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

import ast
import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path, PurePosixPath
from queue import Empty
from typing import Any, Callable, Iterable, Sequence

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.preprocessors.execute import NotebookClient
from nbformat.notebooknode import NotebookNode
from nbgrader import utils as nbutils
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Dict, Float, Integer, List, Unicode

from . import headless, isolation, protect, sandbox
from .course import SOLUTIONS_DIR, assignments as list_assignments, make_course, subprocess_env
from .sandbox import Limits

__all__ = ["SafeExecute", "Limits", "SubmissionFile", "Intake", "collect_submissions", "GradeRun",
           "SubmissionResult", "grade", "notebook_names", "suspicious_lines"]

EVENT_KINDS = {
    # kind: (severity, short title) -- "error" marks a submission that lost points to a problem,
    # "flag" something the instructor should look at, "info" a note.
    "too_large": ("error", "notebook over the size limit"),
    "invalid_json": ("error", "not valid JSON"),
    "not_a_notebook": ("error", "not a Jupyter notebook"),
    "nbgrader_failed": ("error", "nbgrader could not grade it"),
    "not_graded": ("error", "could not be graded"),
    "kernel_start_failed": ("error", "the kernel could not start"),
    "kernel_died": ("error", "kernel died"),
    "kernel_unresponsive": ("error", "kernel stopped (did not respond to an interrupt)"),
    "notebook_timeout": ("error", "notebook time limit reached"),
    "cell_timeout": ("flag", "cell time limit reached"),
    "memory_error": ("flag", "memory limit reached"),
    "output_truncated": ("flag", "output truncated"),
    "tampering_restored": ("flag", "monkeypatching undone before tests"),
    "tampering_during_test": ("error", "monkeypatching during a test (test scored zero)"),
    "guard_failed": ("error", "test integrity could not be checked (test scored zero)"),
    "background_threads": ("flag", "background threads during tests"),
    "suspicious_code": ("flag", "code to review"),
    "test_cells_changed": ("flag", "test cells deleted, duplicated or edited"),
    "missing_notebook": ("flag", "notebook missing"),
    "duplicate_file": ("info", "duplicate file ignored"),
    "sandbox_off": ("flag", "graded without a sandbox"),
    "feedback_fallback": ("flag", "feedback replaced by a summary"),
    "worker_crashed": ("error", "grading worker crashed"),
}
"""Kinds of events recorded for a submission, with their severity and a short title for the report."""


def _event(kind: str, detail: str, cell: str | None = None, notebook: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "detail": detail, "cell": cell, "notebook": notebook}



# The guard, as source code run silently in the kernel before the first cell (see SafeExecute).
_GUARD_SOURCE = r'''
def _dpc_make_guard():
    """Kernel-side defence against monkeypatching (installed silently before the first cell)."""
    import builtins
    import sys
    import threading
    import types
    import math      # noqa: F401 - imported so that they are snapshotted
    import cmath     # noqa: F401
    import operator  # noqa: F401
    try:
        import numpy  # noqa: F401
        import numpy.testing  # noqa: F401
        import numpy.linalg  # noqa: F401
        import numpy.random  # noqa: F401
    except Exception:
        pass
    shell = get_ipython()  # noqa: F821 - provided by IPython
    kernel = getattr(shell, "kernel", None)
    missing = object()
    locked_names = ("math", "cmath", "operator", "numpy", "numpy.testing", "numpy.linalg", "numpy.random")
    watched_prefixes = ("numpy", "scipy", "dp_course", "math", "cmath", "operator", "statistics", "fractions",
                        "decimal", "random", "functools", "itertools", "collections", "unittest", "builtins")
    # names IPython and ipykernel rebind themselves around each execution
    volatile_builtins = {"_", "__", "___", "exit", "quit", "get_ipython", "display", "__IPYTHON__", "copyright",
                         "credits", "license", "help", "input", "raw_input"}

    def keep(modname, key):
        if modname == "builtins":
            return key not in volatile_builtins and (not key.startswith("__") or key in (
                "__import__", "__build_class__"))
        return not (key.startswith("__") and key.endswith("__"))

    modules = {}
    snap = {}
    genuine = {}

    def watch(name, mod):
        if name in modules or not isinstance(mod, types.ModuleType):
            return
        modules[name] = mod
        snap[name] = {k: v for k, v in list(vars(mod).items()) if keep(name, k)}
        genuine[id(mod)] = mod
        for v in snap[name].values():
            if callable(v) or isinstance(v, types.ModuleType):
                genuine[id(v)] = v

    def watched(name):
        # public modules of the numeric stack and the course library (private submodules are left out:
        # tests call the public API, and the snapshot stays small enough to check before every cell)
        parts = name.split(".")
        return parts[0] in watched_prefixes and not any(p.startswith("_") for p in parts)

    def watch_new():
        for name, mod in list(sys.modules.items()):
            if watched(name) and name not in modules:
                watch(name, mod)

    class ProtectedModule(types.ModuleType):
        """Module whose snapshotted attributes cannot be replaced by plain assignment."""

        def __setattr__(self, key, value):
            d = snap.get(types.ModuleType.__getattribute__(self, "__name__"))
            if d is not None and key in d and d[key] is not value:
                raise AttributeError(f"{self.__name__}.{key} is protected while the notebook is graded")
            types.ModuleType.__setattr__(self, key, value)

        def __delattr__(self, key):
            d = snap.get(types.ModuleType.__getattribute__(self, "__name__"))
            if d is not None and key in d:
                raise AttributeError(f"{self.__name__}.{key} is protected while the notebook is graded")
            types.ModuleType.__delattr__(self, key)

    def lock():
        for name in locked_names:
            mod = modules.get(name)
            if mod is not None and type(mod) is types.ModuleType:
                try:
                    mod.__class__ = ProtectedModule
                except TypeError:
                    pass

    watch("builtins", builtins)
    watch_new()
    lock()

    tm = shell.input_transformer_manager
    list_attrs = [(tm, "cleanup_transforms"), (tm, "line_transforms"), (tm, "token_transformers"),
                  (shell, "input_transformers_post"), (shell, "ast_transformers")]
    list_snap = [(o, a, getattr(o, a), list(getattr(o, a))) for o, a in list_attrs if hasattr(o, a)]
    events_snap = {k: list(v) for k, v in shell.events.callbacks.items()}
    objs = [o for o in (shell, kernel, getattr(shell, "displayhook", None), getattr(shell, "display_pub", None),
                        getattr(kernel, "session", None), getattr(shell, "compile", None)) if o is not None]
    inst_snap = [(o, {k: v for k, v in vars(o).items() if callable(v)}) for o in objs]
    class_snap = []
    seen = set()
    for o in objs:
        for cls in type(o).__mro__:
            if cls is not object and id(cls) not in seen:
                seen.add(id(cls))
                class_snap.append((cls, dict(vars(cls))))
    handler_snap = [(getattr(kernel, a), dict(getattr(kernel, a))) for a in ("shell_handlers", "control_handlers")
                    if kernel is not None and isinstance(getattr(kernel, a, None), dict)]
    sys_attrs = ("stdout", "stderr", "stdin", "modules")
    sys_snap = {a: getattr(sys, a) for a in sys_attrs if hasattr(sys, a)}
    # Files the notebook writes into its folder must not shadow installed packages.
    cwd_entries = [p for p in sys.path if p in ("", ".")]
    sys.path[:] = [p for p in sys.path if p not in cwd_entries] + cwd_entries
    seq_snap = [(sys.meta_path, list(sys.meta_path)), (sys.path_hooks, list(sys.path_hooks)),
                (sys.path, list(sys.path))]
    threads_at_start = {t.ident for t in threading.enumerate()}
    user_ns = shell.user_ns
    bindings = {}
    state = {"pre": None}

    def restore():
        fixes = []
        if sys.modules is not sys_snap["modules"]:
            sys.modules = sys_snap["modules"]
            fixes.append("sys.modules was replaced")
        for name, mod in modules.items():
            if sys.modules.get(name) is not mod:
                sys.modules[name] = mod
                fixes.append(f"sys.modules[{name!r}] was replaced")
            d = vars(mod)
            for k, v in snap[name].items():
                if d.get(k, missing) is not v:
                    d[k] = v
                    fixes.append(f"{name}.{k} was replaced")
        lock()
        for o, a, original, items in list_snap:
            if getattr(o, a, None) is not original:
                try:
                    setattr(o, a, original)
                except Exception:
                    pass
                fixes.append(f"IPython {a} was replaced")
            if len(original) != len(items) or any(x is not y for x, y in zip(original, items)):
                original[:] = items
                fixes.append(f"IPython {a} were changed")
        for k, v in events_snap.items():
            cur = shell.events.callbacks.get(k)
            if cur is None:
                shell.events.callbacks[k] = cur = []
            keep_cb = [cb for cb in v if any(cb is x for x in cur)]  # the original callbacks that remain
            for cb in cur:
                if any(cb is x for x in v):
                    continue
                mod = getattr(cb, "__module__", None)
                if isinstance(mod, str) and mod and not mod.startswith("__main__"):
                    v.append(cb)  # registered by an installed library (e.g. matplotlib): keep it
                    keep_cb.append(cb)
            missing_cb = [cb for cb in v if not any(cb is x for x in cur)]
            if missing_cb or len(cur) != len(keep_cb):
                cur[:] = [cb for cb in v]
                fixes.append(f"IPython event callbacks for {k} were changed")
        for o, inst in inst_snap:
            d = vars(o)
            for k in list(d):
                if k not in inst and callable(getattr(type(o), k, None)) and callable(d[k]):
                    del d[k]
                    fixes.append(f"{type(o).__name__}.{k} was overridden")
            for k, v in inst.items():
                if d.get(k, missing) is not v:
                    d[k] = v
                    fixes.append(f"{type(o).__name__}.{k} was replaced")
        for cls, cdict in class_snap:
            cur = vars(cls)
            for k, v in cdict.items():
                if cur.get(k, missing) is not v:
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
        for live, items in handler_snap:
            if len(live) != len(items) or any(live.get(k) is not v for k, v in items.items()):
                live.clear()
                live.update(items)
                fixes.append("kernel message handlers were changed")
        for a, v in sys_snap.items():
            if a != "modules" and getattr(sys, a, missing) is not v:
                setattr(sys, a, v)
                fixes.append(f"sys.{a} was replaced")
        for live, items in seq_snap:
            if len(live) != len(items) or any(x is not y for x, y in zip(live, items)):
                live[:] = items
                fixes.append("the import system (sys.path / sys.meta_path / sys.path_hooks) was changed")
        if sys.gettrace() is not None or sys.getprofile() is not None:
            sys.settrace(None)
            sys.setprofile(None)
            fixes.append("a trace or profile function was installed")
        if getattr(threading, "_trace_hook", None) is not None or getattr(threading, "_profile_hook", None):
            threading.settrace(None)
            threading.setprofile(None)
            fixes.append("a thread trace or profile function was installed")
        for name, v in bindings.items():
            cur = user_ns.get(name, missing)
            if cur is not v and id(cur) not in genuine:
                user_ns[name] = v
                fixes.append(f"the name {name!r} was rebound")
        return fixes

    def record():
        for name, v in list(user_ns.items()):
            if not name.startswith("_") and genuine.get(id(v)) is v:
                bindings[name] = v

    class Guard:
        last = {"fixes": [], "notes": []}

        @staticmethod
        def before():
            fixes = restore()
            record()
            state["pre"] = set(sys.modules)
            Guard.last = {"fixes": sorted(set(fixes)), "notes": []}
            return Guard.last

        @staticmethod
        def after():
            fixes = restore()
            pre = state["pre"] or set()
            for name in [n for n in list(sys.modules) if n not in pre]:
                if watched(name):
                    watch(name, sys.modules[name])
            lock()
            record()
            notes = []
            extra = [t for t in threading.enumerate() if t.ident not in threads_at_start and t.is_alive()
                     and not type(t).__module__.startswith(("ipykernel", "zmq", "IPython", "jupyter",
                                                            "tornado", "comm"))]
            if extra:
                notes.append(f"{len(extra)} background thread(s) started by the notebook were running")
            Guard.last = {"fixes": sorted(set(fixes)), "notes": notes}
            return Guard.last

    return Guard
'''


# ----------------------------------------------------------------------------------------------------
# Execution: nbgrader's Execute preprocessor, in a sandboxed kernel, with limits and a guard


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


def _is_trusted(cell: NotebookNode) -> bool:
    """Cells whose code comes from the instructor: test cells and read-only cells (restored by nbgrader)."""
    return nbutils.is_grade(cell) and not nbutils.is_solution(cell) or (
        nbutils.is_locked(cell) and not nbutils.is_solution(cell))


def _output_size(msg: dict[str, Any]) -> int:
    content = msg.get("content", {})
    size = len(content.get("text", "") or "")
    for value in (content.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    for line in content.get("traceback") or []:
        size += len(line)
    return size


class SafeExecute(headless.NoOutputWidget, Execute):
    """nbgrader's ``Execute`` preprocessor, run in a sandboxed kernel with time, output and tamper guards.

    Differences from ``nbgrader.preprocessors.Execute`` (configure as ``c.SafeExecute.<name>``):

    * the kernel is started by :func:`autograder.sandbox.launch` in a fresh temporary working copy of the
      assignment folder (never in the course directory), with ZeroMQ's ``ipc`` transport;
    * ``timeout`` (per cell) is capped by ``notebook_timeout`` (whole notebook); after the notebook limit,
      a dead kernel, or a kernel that ignores the interrupt, the remaining code cells are not run and get an
      error output, so their tests score zero and the feedback says why;
    * output beyond ``max_output_kb`` per cell is dropped (errors and results are always kept);
    * with ``guard``, the kernel snapshots the helper modules (``builtins``, ``math``, ``numpy``, ...), the
      IPython/kernel machinery and the import system before the first cell, makes the attributes of
      ``math``/``numpy`` read-only, restores everything before each instructor cell, and checks again after
      each test cell: a test cell during which something was replaced scores zero;
    * events (timeouts, deaths, truncation, tampering) are written as JSON to ``events_dir``;
    * widgets' output goes into the cell (see :mod:`autograder.headless`: no 60 s stalls).
    """

    notebook_timeout = Float(600.0, help="Seconds the whole notebook may run.").tag(config=True)
    max_output_kb = Integer(256, help="Output kept per cell, KiB.").tag(config=True)
    limits = Dict({}, help="Fields of autograder.sandbox.Limits for the kernel.").tag(config=True)
    sandbox = Unicode("auto", help="Sandbox mode: auto, bwrap or none.").tag(config=True)
    events_dir = Unicode("", help="Directory for the per-notebook event logs.").tag(config=True)
    mpl_cache = Unicode("", help="A prepared matplotlib config/cache dir copied into each kernel.").tag(
        config=True)
    ro_paths = List(Unicode(), [], help="Extra host paths the kernel may read.").tag(config=True)
    guard = Bool(True, help="Defend the tests against monkeypatching.").tag(config=True)
    iopub_timeout = Integer(5).tag(config=True)
    max_message_mb = Integer(64, help="Largest message accepted from the kernel, MiB.").tag(config=True)

    # ---- kernel ---------------------------------------------------------------------------------

    def create_kernel_manager(self):
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import AsyncKernelManager

        km = AsyncKernelManager(config=self.config, transport="ipc",
                                connection_file=str(self._conn_dir / "k.json"))
        km._kernel_spec = KernelSpec(
            argv=[sandbox.PYTHON, "-m", "autograder.sandbox", "launch", str(self._plan_path),
                  "{connection_file}"],
            display_name="Python 3 (sandboxed grader)", language="python", interrupt_mode="message",
            env={}, metadata={})
        try:
            import zmq
            km.context.setsockopt(zmq.MAXMSGSIZE, int(self.max_message_mb) * 1024 * 1024)
        except Exception:  # pragma: no cover - older pyzmq
            pass
        self.km = km
        return km

    def _kernel_limits(self) -> Limits:
        fields = {f.name for f in dataclasses.fields(Limits)}
        values = {k: v for k, v in self.limits.items() if k in fields}
        values["cell_timeout"] = float(self.timeout or 60)
        values["notebook_timeout"] = float(self.notebook_timeout)
        values.setdefault("max_output_kb", int(self.max_output_kb))
        return Limits(**values)

    def _ro_paths(self) -> list[str]:
        import importlib.util
        paths = list(self.ro_paths)
        spec = importlib.util.find_spec("dp_course")
        if spec is not None and spec.submodule_search_locations:
            paths += list(spec.submodule_search_locations)
        return paths

    # ---- the run --------------------------------------------------------------------------------

    def preprocess(self, nb: NotebookNode, resources: dict | None = None, km=None):
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self.shutdown_kernel = "immediate"
        self._events: list[dict[str, Any]] = []
        self._out_bytes: dict[int, int] = {}
        self._truncated: set[int] = set()
        nb_name = (self.resources.get("nbgrader") or {}).get("notebook")
        self._nb_name = nb_name
        info = isolation.probe(self.sandbox)
        if self.sandbox == "bwrap" and not info.isolated:  # the grader found a sandbox; this worker must too
            raise RuntimeError("the sandbox does not work in this grading worker: " + "; ".join(info.problems))
        if not info.isolated:
            self._events.append(_event("sandbox_off", "; ".join(info.problems) or "no sandbox",
                                       notebook=nb_name))
        # short paths: the kernel's Unix sockets live in here (at most 107 bytes per socket path)
        base = Path(tempfile.mkdtemp(prefix="dpc-", dir="/tmp" if os.path.isdir("/tmp") else None))
        started = time.monotonic()
        try:
            os.chmod(base, 0o711)
            workdir = base / "w"
            self._conn_dir = base / "c"
            self._conn_dir.mkdir(mode=0o700)
            src = Path(self.resources.get("metadata", {}).get("path") or ".")
            _copy_workdir(src, workdir)
            limits = self._kernel_limits()
            plan = sandbox.KernelPlan(
                mode=info.mode, bwrap=info.bwrap, drop_uid=info.drops_uid, limit_processes=info.limits_processes,
                workdir=str(workdir),
                conn_dir=str(self._conn_dir), ro_paths=tuple(self._ro_paths()), limits=limits.to_json(),
                log_file=str(base / "kernel.log"),
                mpl_cache=self.mpl_cache if self.mpl_cache and Path(self.mpl_cache).is_dir() else None)
            self._plan_path = plan.write(base / "plan.json")
            self._run_cells(limits)
        finally:
            log_tail = ""
            try:
                log_tail = (base / "kernel.log").read_text(errors="replace")[-2000:]
            except OSError:
                pass
            try:  # the dedicated uid the kernel ran under (recorded so that audits can look for survivors)
                self._kernel_uid: int | None = int((base / "kernel.uid").read_text())
            except (OSError, ValueError):
                self._kernel_uid = None
            sandbox.cleanup(base)
            self._write_events(time.monotonic() - started, log_tail)
        return self.nb, self.resources

    def _run_cells(self, limits: Limits) -> None:
        from jupyter_core.utils import run_sync

        deadline = time.monotonic() + limits.notebook_timeout
        cell_timeout = max(1, int(math.ceil(limits.cell_timeout)))
        stopped: str | None = None
        self._guard_name = "_dpc_guard_" + os.urandom(8).hex()
        guard_call = run_sync(self._async_guard_call)
        kernel = contextlib.ExitStack()
        try:
            kernel.enter_context(self.setup_kernel(cwd=str(self._plan_path.parent / "w")))
        except Exception as exc:  # noqa: BLE001 - whatever stopped it, nothing of the notebook can run
            self._kernel_start_failed(exc)
            return
        with kernel:
            assert self.kc is not None
            info_msg = self.wait_for_reply(self.kc.kernel_info())
            if info_msg is not None:
                self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
            guard_ok = True
            if self.guard:
                guard_ok = guard_call(f"{_GUARD_SOURCE}\n{self._guard_name} = _dpc_make_guard()\n"
                                      "del _dpc_make_guard", 30, False) is not None
                if not guard_ok:
                    self._events.append(_event("guard_failed", "the test guard could not be installed",
                                               notebook=self._nb_name))
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                cell_id = (cell.metadata.get("nbgrader") or {}).get("grade_id")
                if stopped is None and time.monotonic() > deadline - 0.5:
                    stopped = (f"not run: the notebook used up its time limit of "
                               f"{limits.notebook_timeout:g} s")
                    self._events.append(_event("notebook_timeout", f"stopped before cell {index}"
                                               f"{' (' + cell_id + ')' if cell_id else ''}",
                                               cell_id, self._nb_name))
                if stopped is not None:
                    cell.outputs = [_error_output("NotRun", stopped)]
                    cell.execution_count = None
                    continue
                trusted = self.guard and guard_ok and _is_trusted(cell)
                is_test = nbutils.is_grade(cell) and not nbutils.is_solution(cell)
                if trusted:
                    res = guard_call(f"{self._guard_name}.before()", 10)
                    if res is None:
                        self._events.append(_event("guard_failed", "the test guard did not answer before "
                                                   "this cell", cell_id, self._nb_name))
                        guard_ok = False
                    elif res["fixes"]:
                        self._events.append(_event("tampering_restored", "; ".join(res["fixes"]), cell_id,
                                                   self._nb_name))
                self.timeout = max(1, min(cell_timeout, int(deadline - time.monotonic())))
                try:
                    self.preprocess_cell(cell, self.resources, index)
                except DeadKernelError:
                    stopped = "not run: the kernel died in an earlier cell"
                    cell.outputs.append(_error_output(
                        "DeadKernelError", "the kernel died while running this cell (the code exited, "
                        "was killed, or exceeded a resource limit)"))
                    self._events.append(_event(
                        "kernel_died", f"in cell {index}{' (' + cell_id + ')' if cell_id else ''}: the code "
                        f"exited (sys.exit, os._exit), was killed, or went over a limit (memory "
                        f"{limits.memory_mb} MiB, files {limits.max_file_mb} MiB, CPU time); later cells were not run",
                        cell_id, self._nb_name))
                    continue
                except (CellTimeoutError, TimeoutError, RuntimeError) as exc:
                    stopped = "not run: the kernel was stopped after an earlier cell did not respond"
                    cell.outputs.append(_error_output(
                        "CellTimeoutError", f"the cell ran past its time limit and did not respond to an "
                        f"interrupt; the kernel was stopped ({type(exc).__name__})"))
                    self._events.append(_event("kernel_unresponsive", f"cell {index}"
                                               f"{' (' + cell_id + ')' if cell_id else ''}", cell_id,
                                               self._nb_name))
                    continue
                enames = [o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                if "CellTimeoutError" in enames:
                    self._events.append(_event("cell_timeout", f"cell {index} was interrupted after "
                                               f"{self.timeout} s", cell_id, self._nb_name))
                if "MemoryError" in enames:
                    self._events.append(_event("memory_error", f"cell {index} ran out of memory "
                                               f"({limits.memory_mb} MiB)", cell_id, self._nb_name))
                if trusted and guard_ok:
                    res = guard_call(f"{self._guard_name}.after()", 10)
                    if res is None:
                        guard_ok = False
                        self._events.append(_event("guard_failed", "the test guard did not answer after "
                                                   "this cell", cell_id, self._nb_name))
                        if is_test:
                            cell.outputs.append(_error_output(
                                "GradingIntegrityError", "the grader could not verify that this test ran "
                                "with the original helpers; the test scores zero"))
                    else:
                        if res["fixes"] and is_test:
                            cell.outputs.append(_error_output(
                                "GradingIntegrityError", "helpers were replaced while this test ran ("
                                + "; ".join(res["fixes"][:5]) + "); the test scores zero"))
                            self._events.append(_event("tampering_during_test", "; ".join(res["fixes"]),
                                                       cell_id, self._nb_name))
                        elif res["fixes"]:
                            self._events.append(_event("tampering_restored", "; ".join(res["fixes"]),
                                                       cell_id, self._nb_name))
                        if res["notes"] and is_test:
                            self._events.append(_event("background_threads", "; ".join(res["notes"]),
                                                       cell_id, self._nb_name))
                elif self.guard and is_test and not guard_ok:
                    cell.outputs.append(_error_output(
                        "GradingIntegrityError", "the grader could not verify that this test ran with the "
                        "original helpers; the test scores zero"))

    def _kernel_start_failed(self, exc: BaseException) -> None:
        """The kernel did not start: every code cell says why (nothing ran) and an event records it."""
        with contextlib.suppress(Exception):  # it may never have existed
            self._cleanup_kernel()
        try:
            log = (self._plan_path.parent / "kernel.log").read_text(errors="replace")
        except OSError:
            log = ""
        lines = [ln for ln in _clean_kernel_log(log).split(" | ") if ln]
        excs = [ln for ln in lines if _EXC_LINE.match(ln)]
        why = (excs or lines or [f"{type(exc).__name__}: {exc}"])[-1][:300]
        hint = next((h for pattern, h in _START_HINTS if re.search(pattern, why, re.IGNORECASE)), "")
        why += f" -- {hint}" if hint else ""
        text = (f"not run: the Python kernel could not start ({why}). This is a problem of the machine that runs "
                "the notebook, not of the notebook.")
        for cell in self.nb.cells:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [_error_output("KernelStartError", text)]
                cell.execution_count = None
        event = _event("kernel_start_failed", f"{why}. Nothing of the notebook ran, so it scores zero. This is a "
                       "problem of the grading machine, not of the submission: fix it (see the kernel's message) "
                       "and run dp-course grade again; this submission is then graded again.",
                       notebook=self._nb_name)
        event["reason"] = why
        self._events.append(event)

    async def _async_guard_call(self, code: str, timeout: float, report: bool = True) -> dict[str, Any] | None:
        """Run trusted code silently in the kernel; return the guard's report, or None if it failed.

        With ``report``, ``code`` is an *expression* evaluated as a ``user_expression`` of an empty
        execute request: user expressions are ``eval``-ed directly, so input or AST transformers that a
        submission installed cannot rewrite the guard's call (they would rewrite a code cell).
        """
        assert self.kc is not None
        expr = {"r": code} if report else {}
        msg_id = self.kc.execute("" if report else code, silent=True, store_history=False,
                                 user_expressions=expr, allow_stdin=False)
        end = time.monotonic() + timeout
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return None
            try:
                msg = await self.kc.shell_channel.get_msg(timeout=remaining)
            except Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                break
        content = msg.get("content", {})
        if content.get("status") != "ok":
            return None
        if not expr:
            return {"fixes": [], "notes": []}
        r = content.get("user_expressions", {}).get("r", {})
        if r.get("status") != "ok":
            return None
        try:
            value = ast.literal_eval(r["data"]["text/plain"])
        except (ValueError, SyntaxError, KeyError, TypeError):
            return None
        if not (isinstance(value, dict) and isinstance(value.get("fixes"), list)
                and isinstance(value.get("notes"), list)):
            return None
        return {"fixes": [str(x)[:300] for x in value["fixes"]][:50],
                "notes": [str(x)[:300] for x in value["notes"]][:10]}

    # ---- output caps ----------------------------------------------------------------------------

    def output(self, outs, msg, display_id, cell_index):
        msg_type = msg.get("msg_type")
        cap = int(self.max_output_kb) * 1024
        size = _output_size(msg)
        used = self._out_bytes.get(cell_index, 0) + size
        self._out_bytes[cell_index] = used
        if msg_type in ("error", "execute_result"):
            content = msg.get("content", {})
            if content.get("traceback") and sum(len(x) for x in content["traceback"]) > cap:
                content["traceback"] = [x[:2000] for x in content["traceback"][:20]] + ["... (truncated)"]
            data = content.get("data") or {}
            for k, v in list(data.items()):
                if isinstance(v, str) and len(v) > cap:
                    data[k] = v[:cap] + "\n... (truncated)"
            return super().output(outs, msg, display_id, cell_index)
        if used > cap:
            if cell_index not in self._truncated:
                self._truncated.add(cell_index)
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text=f"\n[grader: output truncated after {self.max_output_kb} KiB]\n"))
                cell = self.nb.cells[cell_index]
                self._events.append(_event("output_truncated", f"cell {cell_index} printed more than "
                                           f"{self.max_output_kb} KiB",
                                           (cell.metadata.get("nbgrader") or {}).get("grade_id"),
                                           self._nb_name))
            return None
        return super().output(outs, msg, display_id, cell_index)

    # ---- events ---------------------------------------------------------------------------------

    def _write_events(self, seconds: float, log_tail: str) -> None:
        if not self.events_dir:
            return
        nbg = self.resources.get("nbgrader") or {}
        if not all(nbg.get(k) for k in ("student", "assignment", "notebook")):
            return
        path = Path(self.events_dir) / nbg["student"] / nbg["assignment"] / f"{nbg['notebook']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        died = any(e["kind"] in ("kernel_died", "kernel_unresponsive") for e in self._events)
        path.write_text(json.dumps({"events": self._events, "seconds": round(seconds, 3),
                                    "kernel_log": log_tail if died else "",
                                    "kernel_uid": getattr(self, "_kernel_uid", None)}, indent=1))


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):
    """Remove the empty ``nbgrader`` metadata that ``DeduplicateIds`` leaves on duplicated cells.

    nbgrader 0.9's ``OverwriteCells`` with ``add_missing_cells`` fails (``KeyError: 'grade_id'``) on such
    cells; without the key, the duplicates are ordinary cells, as ``DeduplicateIds`` intends.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if "nbgrader" in cell.metadata and not cell.metadata["nbgrader"].get("grade_id"):
            del cell.metadata["nbgrader"]
        return cell, resources


def _copy_workdir(src: Path, dest: Path) -> None:
    """The kernel's working copy: the assignment's files (not the notebooks), no symlinks."""
    dest.mkdir(parents=True)
    if not src.is_dir():
        return
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink() and d not in (".ipynb_checkpoints",)]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            p = Path(root) / f
            if p.is_symlink() or not p.is_file() or f.endswith(".ipynb"):
                continue
            shutil.copyfile(p, dest / rel / f)
    os.chmod(dest, 0o755)


# ----------------------------------------------------------------------------------------------------
# Intake: find the submissions, whatever the layout


@dataclasses.dataclass
class SubmissionFile:
    """One notebook file found among the submissions."""

    student: str
    assignment: str
    notebook: str
    path: Path                   # where its bytes are (extracted from the zip if needed)
    origin: str                  # its path relative to the submissions folder / inside the zip
    size: int
    sha256: str = ""
    problem: str | None = None   # why it cannot be graded as is (then the release notebook is graded)
    problem_kind: str | None = None
    review: list[str] = dataclasses.field(default_factory=list)  # suspicious lines, for the instructor
    changes: list[str] = dataclasses.field(default_factory=list)  # test cells deleted/duplicated/edited
    mtime: float = 0.0
    timestamp: str | None = None  # nbgrader's timestamp.txt next to the notebook (late penalties)


@dataclasses.dataclass
class Intake:
    """What :func:`collect_submissions` found."""

    files: list[SubmissionFile]
    unmatched: list[tuple[str, str]]      # (path, reason) of files that could not be attributed
    duplicates: list[tuple[str, str]]     # (ignored path, kept path)
    layout: str

    def jobs(self) -> dict[tuple[str, str], list[SubmissionFile]]:
        out: dict[tuple[str, str], list[SubmissionFile]] = {}
        for f in self.files:
            out.setdefault((f.student, f.assignment), []).append(f)
        for v in out.values():
            v.sort(key=lambda f: f.notebook)
        return dict(sorted(out.items()))


def notebook_names(solutions_dir: Path = SOLUTIONS_DIR,
                   names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """``{assignment: [notebook names]}`` for the given (default: all) assignments of ``solutions_dir``."""
    names = list(names) if names is not None else list_assignments(solutions_dir)
    out = {}
    for a in names:
        d = Path(solutions_dir) / a
        if not (d / f"{a}.ipynb").is_file():
            raise ValueError(f"assignment must be one of {list_assignments(solutions_dir)}, got {a!r}")
        out[a] = sorted(p.stem for p in d.glob("*.ipynb"))
    return out


_SAFE_ID = re.compile(r"[^A-Za-z0-9_.@-]+")


def _student_from_prefix(prefix: str) -> str:
    """Student id from the part of an LMS file name before the notebook name: its first ``_``-separated token.

    ``alice_`` -> ``alice``; ``alice_resubmission_`` -> ``alice``; Canvas ``doejane_late_123456_7890123_``
    -> ``doejane``; Moodle ``Jane Doe_123456_assignsubmission_file_`` -> ``Jane_Doe``.  Ids that contain
    ``_`` need ``student_pattern``.
    """
    tokens = [t for t in re.split(r"_+", prefix.strip(" _-.")) if t.strip(" -.")]
    name = tokens[0] if tokens else ""
    return _SAFE_ID.sub("_", name).strip("._-")


def _match_notebook(stem: str, notebooks: dict[str, list[str]]) -> tuple[str, str, int, int] | None:
    """Find the rightmost (then longest) known notebook name inside ``stem``."""
    best = None
    low = stem.lower()
    for assignment, nbs in notebooks.items():
        for nb in nbs:
            start = low.rfind(nb.lower())
            if start < 0:
                continue
            end = start + len(nb)
            key = (end, len(nb))
            if best is None or key > best[0]:
                best = (key, assignment, nb, start, end)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


def suspicious_lines(nb: NotebookNode) -> list[str]:
    """Lines of student-editable cells that touch the grading machinery, for the instructor to review.

    This is a reviewing aid, not a defence: it lists code that reaches into the kernel, the import system,
    other modules' attributes, processes, the network or the file system outside the working folder.
    """
    found: list[str] = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or _is_trusted(cell):
            continue
        for line in str(cell.get("source", "")).splitlines():
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if _SUSPICIOUS.search(s):
                found.append(f"cell {i}: {s[:160]}")
    return found[:40]


_SUSPICIOUS = re.compile(
    r"get_ipython|\bIPython\b|ipykernel|sys\.modules|__dict__|__class__|__builtins__|\bbuiltins\b|"
    r"setattr\s*\(|globals\s*\(\s*\)\s*\[|\bgc\.|\binspect\.|ctypes|_getframe|settrace|setprofile|"
    r"\b(?:np|numpy|math|cmath)\.\w+\s*=[^=]|\bisclose\s*=[^=]|\ballclose\s*=[^=]|"
    r"os\.(?:system|fork|kill|_exit|exec\w*|spawn\w*|setsid|chmod|remove|unlink)|\bsubprocess\b|"
    r"multiprocessing|\bsignal\.|\bsocket\b|urllib|requests\.|http\.client|"
    r"sys\.exit|\bexit\s*\(|\bquit\s*\(|open\s*\(\s*['\"]/|\.\./|gradebook|\bsolutions?/")


def changed_test_cells(nb: NotebookNode, release_nb: NotebookNode) -> list[str]:
    """How the submitted notebook's test and read-only cells differ from the release (nbgrader restores them)."""
    changes: list[str] = []
    subs: dict[str, list[NotebookNode]] = {}
    for c in nb.get("cells", []):
        gid = (c.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
        if gid:
            subs.setdefault(gid, []).append(c)
    for c in release_nb.cells:
        meta = c.metadata.get("nbgrader") or {}
        gid = meta.get("grade_id")
        if not gid or not (meta.get("grade") and not meta.get("solution")):
            continue
        found = subs.get(gid, [])
        if not found:
            changes.append(f"test cell {gid} was deleted (nbgrader put it back)")
        elif len(found) > 1:
            changes.append(f"test cell {gid} appears {len(found)} times (nbgrader graded the last one)")
        else:
            got = found[-1]
            gmeta = got.get("metadata", {}).get("nbgrader") or {}
            if str(got.get("source", "")) != str(c.source) or gmeta.get("points") != meta.get("points") \
                    or got.get("cell_type") != c.cell_type:
                changes.append(f"test cell {gid} was edited (nbgrader restored the original)")
    return changes


def _check_notebook_bytes(data: bytes) -> tuple[str | None, str | None, NotebookNode | None]:
    """(problem kind, problem text, notebook) for the raw bytes of a submitted file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid_json", f"not UTF-8 text ({exc.reason} at byte {exc.start})", None
    try:
        json.loads(text)
    except ValueError as exc:
        return "invalid_json", f"not valid JSON: {str(exc)[:200]}", None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types for "JSON but not a notebook"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return "not_a_notebook", f"valid JSON but not a Jupyter notebook: {msg[:200]}", None
    return None, None, nb


def collect_submissions(src: Path, notebooks: dict[str, list[str]], *, limits: Limits = Limits(),
                        extract_dir: Path | None = None, student_pattern: str | None = None,
                        releases: dict[tuple[str, str], NotebookNode] | None = None) -> Intake:
    """Find and check every submitted notebook under ``src`` (a folder or a ``.zip``).

    Args:
        src: the submissions: nbgrader's ``submitted/`` folder (or the course folder holding it), a flat
            folder of LMS downloads, nested per-student folders, or a zip of any of these.
        notebooks: ``{assignment: [notebook names]}`` (see :func:`notebook_names`).
        limits: ``limits.max_notebook_mb`` is the size above which a file is not opened.
        extract_dir: where to unpack a zip (required for a zip).
        student_pattern: optional regular expression with a named group ``student``, matched against
            the file's path relative to ``src`` (``/``-separated), overriding the built-in rules.
        releases: ``{(assignment, notebook): release notebook}``; when given, deleted, duplicated or edited
            test cells are reported (nbgrader restores them when grading).

    Returns:
        An :class:`Intake`; files that could not be attributed to a student and an assignment notebook are
        listed in ``unmatched`` with the reason.

    Raises:
        ValueError: ``src`` does not exist, is neither a folder nor a zip, or the zip is unsafe to unpack.
    """
    if not Path(src).exists():
        raise ValueError(f"submissions must be an existing folder or .zip file, got {str(src)!r}")
    src = Path(src).resolve()
    pattern = re.compile(student_pattern) if student_pattern else None
    if pattern is not None and "student" not in pattern.groupindex:
        raise ValueError(f"student_pattern must contain a named group (?P<student>...), got {student_pattern!r}")
    cap = int(limits.max_notebook_mb * 1024 * 1024)
    entries: list[tuple[str, Path | None, int, float, zipfile.ZipInfo | None]] = []
    zf = None
    if src.is_file():
        if not zipfile.is_zipfile(src):
            raise ValueError(f"submissions must be a folder or a .zip file, got the file {str(src)!r}")
        if extract_dir is None:
            raise ValueError("extract_dir is required to read a zip of submissions")
        zf = zipfile.ZipFile(src)
        for info in zf.infolist():
            if info.is_dir():
                continue
            entries.append((info.filename, None, info.file_size,
                            _dt.datetime(*info.date_time).timestamp(), info))
        layout_root = "zip"
    elif src.is_dir():
        base = src / "submitted" if (src / "submitted").is_dir() else src
        for root, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
            for f in sorted(files):
                p = Path(root) / f
                if p.is_symlink():
                    entries.append((p.relative_to(base).as_posix(), None, -1, 0.0, None))
                    continue
                st = p.stat()
                entries.append((p.relative_to(base).as_posix(), p, st.st_size, st.st_mtime, None))
        layout_root = "folder"
    else:
        raise ValueError(f"submissions must be a folder or a .zip file, got {str(src)!r}")

    files: list[SubmissionFile] = []
    unmatched: list[tuple[str, str]] = []
    layouts: set[str] = set()
    timestamps: dict[tuple[str, str], str] = {}
    for rel, path, size, mtime, info in entries:
        parts = PurePosixPath(rel).parts
        name = parts[-1] if parts else rel
        if name.startswith(".") or "__MACOSX" in parts or name in ("timestamp.txt", "Thumbs.db"):
            continue
        if rel.startswith("/") or ".." in parts:
            unmatched.append((rel, "unsafe path in the archive"))
            continue
        if size < 0:
            unmatched.append((rel, "symbolic link (ignored)"))
            continue
        if not name.endswith(".ipynb"):
            unmatched.append((rel, "not a .ipynb file"))
            continue
        stem = name[: -len(".ipynb")]
        student = assignment = nb = None
        if pattern is not None:
            m = pattern.search(rel)
            hit = _match_notebook(stem, notebooks)
            if m and hit:
                student = _SAFE_ID.sub("_", m.group("student")).strip("._-")
                assignment, nb = hit[0], hit[1]
                layouts.add("pattern")
        elif len(parts) >= 3 and parts[-2] in notebooks and stem in notebooks[parts[-2]]:
            student, assignment, nb = _SAFE_ID.sub("_", parts[-3]).strip("._-"), parts[-2], stem
            layouts.add("nbgrader")
            if path is not None and (path.parent / "timestamp.txt").is_file():
                timestamps[(student, assignment)] = (path.parent / "timestamp.txt").read_text(
                    errors="replace")[:64].strip()
        else:
            hit = _match_notebook(stem, notebooks)
            if hit:
                assignment, nb, start, _ = hit
                # the student is named in the file name, else by the folder it is in (Moodle: one per student)
                student = _student_from_prefix(stem[:start])
                if not student and len(parts) > 1:
                    student = _student_from_prefix(parts[-2] + "_")
                layouts.add("flat")
        if not (student and assignment and nb):
            reason = ("no assignment notebook name in the file name" if not assignment
                      else "no student name before the notebook name")
            unmatched.append((rel, reason))
            continue
        if zf is not None:
            dest = Path(extract_dir) / "files" / f"{len(files):05d}.ipynb"
            dest.parent.mkdir(parents=True, exist_ok=True)
            if size <= cap:
                with zf.open(info) as fin, open(dest, "wb") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
                    if fout.tell() > cap:  # lying header
                        size = fout.tell()
            path = dest
        files.append(SubmissionFile(student, assignment, nb, path, rel, size, mtime=mtime))
    if zf is not None:
        zf.close()

    # Duplicates: keep the newest file per (student, assignment, notebook).
    by_key: dict[tuple[str, str, str], SubmissionFile] = {}
    duplicates: list[tuple[str, str]] = []
    for f in sorted(files, key=lambda f: (f.mtime, f.origin)):
        key = (f.student, f.assignment, f.notebook)
        if key in by_key:
            duplicates.append((by_key[key].origin, f.origin))
        by_key[key] = f
    kept = sorted(by_key.values(), key=lambda f: (f.student, f.assignment, f.notebook))

    for f in kept:
        if f.size > cap:
            f.problem_kind = "too_large"
            f.problem = (f"the file is {f.size / 1e6:.1f} MB, over the limit of {limits.max_notebook_mb:g} MB;"
                         " it was not opened")
            f.sha256 = f"size:{f.size}:{f.mtime}"
            continue
        data = Path(f.path).read_bytes()
        f.sha256 = hashlib.sha256(data).hexdigest()
        kind, text, nb = _check_notebook_bytes(data)
        if kind:
            f.problem_kind, f.problem = kind, text
        elif nb is not None:
            f.review = suspicious_lines(nb)
            if releases and (f.assignment, f.notebook) in releases:
                f.changes = changed_test_cells(nb, releases[(f.assignment, f.notebook)])
    layout = "+".join(sorted(layouts)) or "none"
    for f in kept:
        f.timestamp = timestamps.get((f.student, f.assignment))
    return Intake(kept, unmatched, duplicates, f"{layout_root}:{layout}")


# ----------------------------------------------------------------------------------------------------
# Workers: one process per core, each with its own copy of the course directory and gradebook

_WORKER_CONFIG = """

# ---- added by autograder.grading for grading runs (not part of the shared configuration) ----
# the shared configuration (above) lists nbgrader's autograde steps with its Execute first: swap in ours
assert c.Autograde.autograde_preprocessors[0] == "autograder.headless.Execute"
c.Autograde.autograde_preprocessors = ["autograder.grading.SafeExecute", *c.Autograde.autograde_preprocessors[1:]]
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "autograder.grading.DropEmptyNbgraderMetadata",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.OverwriteCells.add_missing_cells = True
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.report.StripHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
c.SafeExecute.timeout = {cell_timeout}
c.SafeExecute.notebook_timeout = {notebook_timeout!r}
c.SafeExecute.max_output_kb = {max_output_kb}
c.SafeExecute.limits = {limits!r}
c.SafeExecute.sandbox = {sandbox!r}
c.SafeExecute.events_dir = {events_dir!r}
c.SafeExecute.mpl_cache = {mpl_cache!r}
c.SafeExecute.guard = {guard!r}
"""


def grading_config(*, limits: Limits, sandbox_mode: str, events_dir: Path, mpl_cache: Path | None,
                   guard: bool = True) -> str:
    """The lines appended to a course directory's ``nbgrader_config.py`` for grading and checking."""
    return _WORKER_CONFIG.format(
        cell_timeout=max(1, int(math.ceil(limits.cell_timeout))), notebook_timeout=float(limits.notebook_timeout),
        max_output_kb=int(limits.max_output_kb), limits=limits.to_json(), sandbox=sandbox_mode,
        events_dir=str(events_dir), mpl_cache=str(mpl_cache) if mpl_cache else "", guard=bool(guard))


def prepare_mpl_cache(dest: Path) -> Path | None:
    """Build matplotlib's font cache once, to be copied into every kernel (saves seconds per notebook)."""
    dest = Path(dest)
    if any(dest.glob("fontlist-*.json")):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([sandbox.PYTHON, "-c", "import matplotlib.font_manager"],
                              env=subprocess_env({"MPLCONFIGDIR": str(dest)}), capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):  # no cache then: each kernel builds its own
        return None
    return dest if proc.returncode == 0 and any(dest.glob("fontlist-*.json")) else None


def _worker_main(wdir: str) -> int:
    """Serve grading jobs read as JSON lines on stdin; answer on the original stdout."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the worker's log
    root = Path(wdir).resolve()
    os.chdir(root)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    coursedir = CourseDirectory(config=config)
    api = NbGraderAPI(coursedir=coursedir, config=config)
    for line in sys.stdin:
        job = json.loads(line)
        try:
            reply = _worker_job(api, root, job)
        except Exception as exc:  # a broken job must not take the worker down
            import traceback

            traceback.print_exc()
            reply = {"student": job.get("student"), "assignment": job.get("assignment"), "success": False,
                     "error": f"{type(exc).__name__}: {exc}"[:400], "feedback": False, "feedback_error": "",
                     "events": {}, "seconds": 0.0}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


def _worker_job(api, root: Path, job: dict[str, Any]) -> dict[str, Any]:
    """Autograde one submission and generate its feedback in a worker's course directory."""
    import warnings

    student, assignment = job["student"], job["assignment"]
    started = time.monotonic()
    for sub in ("submitted", "autograded", "feedback"):
        shutil.rmtree(root / sub / student / assignment, ignore_errors=True)
    shutil.rmtree(root / "events" / student / assignment, ignore_errors=True)
    dest = root / "submitted" / student / assignment
    dest.mkdir(parents=True)
    for f in job["files"]:
        target = dest / f"{f['notebook']}.ipynb"
        if f.get("empty"):  # unreadable submission: grade the untouched release notebook (zero)
            shutil.copyfile(root / "release" / assignment / f"{f['notebook']}.ipynb", target)
        else:
            shutil.copyfile(f["path"], target)
    if job.get("timestamp"):
        (dest / "timestamp.txt").write_text(job["timestamp"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
        res = api.autograde(assignment, student, force=True, create=True)
    t_autograde = time.monotonic() - started
    fb = {"success": False}
    if res.get("success") and job.get("feedback", True):
        fb = api.generate_feedback(assignment, student, force=True)
    data = _export_submission(api.coursedir.db_url, assignment, student) if res.get("success") else None
    events = {}
    for p in sorted((root / "events" / student / assignment).glob("*.json")):
        try:
            events[p.stem] = json.loads(p.read_text())
        except ValueError:
            pass
    return {"student": student, "assignment": assignment, "success": bool(res.get("success")), "data": data,
            "error": _last_error(res), "feedback": bool(fb.get("success")),
            "feedback_error": _last_error(fb), "events": events,
            "seconds": round(time.monotonic() - started, 3), "autograde_seconds": round(t_autograde, 3)}


_START_HINTS = [
    (r"thread|Resource temporarily unavailable", "it could not start a thread: a limit on the number of processes "
     "and threads (ulimit -u, RLIMIT_NPROC) was reached"),
    (r"MemoryError|Cannot allocate memory", "out of memory: the memory limit (--memory-mb) or the machine's memory"),
    (r"No such file or directory|FileNotFoundError", "a file the kernel needs is missing: is the Python environment "
     "complete (python3 run.py setup)?"),
    (r"Permission denied|PermissionError", "the kernel may not read something it needs: check the permissions of "
     "the Python environment"),
]
"""Patterns of a kernel's last words when it cannot start, and what they mean."""

_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$")


def _last_error(res: dict[str, Any]) -> str:
    """The most informative line of a failed nbgrader run: the last exception raised, else its last error."""
    if res.get("success"):
        return ""
    text = "\n".join(x for x in (res.get("log"), res.get("error")) if x)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    excs = [ln.strip() for ln in lines if _EXC_LINE.match(ln) and "above traceback" not in ln]
    if excs:
        return excs[-1][:400]
    errs = [ln for ln in lines if "[ERROR]" in ln and "see the" not in ln.lower()]
    return (errs[-1] if errs else (lines[-1] if lines else "unknown error")).strip()[:400]


class _Worker:
    """A worker process and its private course directory."""

    def __init__(self, index: int, wdir: Path, master: Path, config_extra: str):
        self.index = index
        self.wdir = wdir
        protect.remove_tree(wdir)  # its sources may be read-only copies of a sealed course
        wdir.mkdir(parents=True)
        for sub in ("source", "release"):
            if (master / sub).is_dir():
                shutil.copytree(master / sub, wdir / sub)
        shutil.copyfile(master / "gradebook.db", wdir / "gradebook.db")
        (wdir / "nbgrader_config.py").write_text((master / "nbgrader_config.py").read_text() + config_extra)
        self.log = open(wdir / "worker.log", "ab")
        self.proc = subprocess.Popen([sandbox.PYTHON, "-m", "autograder.grading", "--worker", str(wdir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     cwd=wdir, env=subprocess_env(), text=True, bufsize=1)
        self.job: dict[str, Any] | None = None
        self.started = time.monotonic()

    def send(self, job: dict[str, Any]) -> None:
        self.job = job
        self.started = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ----------------------------------------------------------------------------------------------------
# Merging a worker's result into the main gradebook (only the parent process does this)


def _export_submission(db_url: str, assignment: str, student: str) -> dict[str, Any]:
    """A submission's autograder results from a (worker's) gradebook, as plain data for the parent."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        sub = gb.find_submission(assignment, student)
        st = sub.student
        return {
            "timestamp": sub.timestamp.isoformat() if sub.timestamp else None,
            "student": {"first_name": st.first_name, "last_name": st.last_name, "email": st.email,
                        "lms_user_id": st.lms_user_id},
            "notebooks": [{"name": nb.name, "late_submission_penalty": nb.late_submission_penalty,
                           "grades": [[g.name, g.auto_score] for g in nb.grades],
                           "comments": [[c.name, c.auto_comment] for c in nb.comments]}
                          for nb in sub.notebooks],
        }


def _merge_submission(master_db: Path, assignment: str, student: str, data: dict[str, Any]) -> None:
    """Write one submission's autograder results (from :func:`_export_submission`) into the main gradebook."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{master_db}") as mgb:
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's own add_submission triggers these
        mgb.update_or_create_student(student, **data["student"])
        ts = _dt.datetime.fromisoformat(data["timestamp"]) if data.get("timestamp") else None
        mgb.update_or_create_submission(assignment, student, timestamp=ts)
        for wnb in data["notebooks"]:
            mnb = mgb.find_submission_notebook(wnb["name"], assignment, student)
            mnb.late_submission_penalty = wnb["late_submission_penalty"]
            for name, auto_score in wnb["grades"]:
                mg = mgb.find_grade(name, wnb["name"], assignment, student)
                mg.auto_score = auto_score
                # nbgrader's own rule on re-grading (SaveAutoGrades): a manual grade stays but needs review
                mg.needs_manual_grade = (mg.manual_score is not None) or (auto_score is None)
            for name, auto_comment in wnb["comments"]:
                try:
                    mgb.find_comment(name, wnb["name"], assignment, student).auto_comment = auto_comment
                except MissingEntry:
                    continue
        mgb.db.commit()


def _zero_submission(master_db: Path, assignment: str, student: str) -> None:
    """Last resort when nbgrader cannot grade a submission at all: every grade is zero."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{master_db}") as gb:
        gb.update_or_create_student(student)
        sub = gb.update_or_create_submission(assignment, student)
        for nb in sub.notebooks:
            for g in nb.grades:
                g.auto_score = 0.0
                g.needs_manual_grade = False
        gb.db.commit()


# ----------------------------------------------------------------------------------------------------
# The grading run


@dataclasses.dataclass
class SubmissionResult:
    """The outcome for one (student, assignment)."""

    student: str
    assignment: str
    files: list[str]
    score: float
    max_score: float
    exercises: dict[str, tuple[float | None, float]]  # grade cell id -> (score or None if hand-grading is pending, max)
    events: list[dict[str, Any]]
    seconds: float
    feedback: list[str]                           # paths relative to the output folder
    needs_manual_grade: bool = False
    regraded: bool = True


@dataclasses.dataclass
class GradeRun:
    """Everything a grading run produced (also written to ``<output>/results.json``)."""

    output_dir: Path
    results: list[SubmissionResult]
    unmatched: list[tuple[str, str]]
    duplicates: list[tuple[str, str]]
    layout: str
    sandbox: str
    sandbox_warning: str | None
    workers: int
    graded_now: int
    skipped: int
    seconds: float
    notebooks_graded: int
    grades_csv: Path
    timings: dict[str, float] = dataclasses.field(default_factory=dict)  # seconds per phase
    report_html: Path | None = None
    report_md: Path | None = None

    def table(self) -> str:
        """A plain-text grade table (one row per submission)."""
        rows = [("student", "assignment", "score", "max", "notes")]
        for r in sorted(self.results, key=lambda r: (r.assignment, r.student)):
            notes = sorted({EVENT_KINDS.get(e["kind"], ("", e["kind"]))[1] for e in r.events
                            if EVENT_KINDS.get(e["kind"], ("info",))[0] != "info"
                            and e["kind"] != "sandbox_off"})
            rows.append((r.student, r.assignment, f"{r.score:g}", f"{r.max_score:g}",
                         "; ".join(notes)[:90]))
        widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
        lines = []
        for j, row in enumerate(rows):
            lines.append("  ".join(str(row[i]).ljust(widths[i]) for i in range(4)) + "  " + row[4])
            if j == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 5)
        return "\n".join(lines)


class _Progress:
    """A one-line progress bar with an ETA on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.total, self.done, self.enabled = total, 0, enabled
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, n: int, label: str) -> None:
        self.done += n
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        frac = self.done / self.total if self.total else 1.0
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        bar = "#" * int(28 * frac) + "." * (28 - int(28 * frac))
        text = (f"[{bar}] {self.done}/{self.total} notebooks  {_fmt_s(elapsed)} elapsed"
                f"  ETA {_fmt_s(eta) if eta == eta else '?'}  {label}")
        if self.tty:
            self.stream.write("\r" + text[:150].ljust(150))
            if self.done >= self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def _fmt_s(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


def _fingerprint_dir(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(d).rglob("*")):
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts:
            h.update(p.relative_to(d).as_posix().encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _job_hash(files: list[SubmissionFile], settings: str) -> str:
    h = hashlib.sha256(settings.encode())
    for f in sorted(files, key=lambda f: f.notebook):
        h.update(f"{f.notebook}\0{f.sha256}\0{f.problem_kind}\n".encode())
    return h.hexdigest()


def _scores(master_db: Path, assignment: str, student: str) -> tuple[float, float, dict, bool]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{master_db}") as gb:
        sub = gb.find_submission(assignment, student)
        exercises = {}
        manual = False
        for nb in sub.notebooks:
            for g in nb.grades:
                key = g.name if len(sub.notebooks) == 1 else f"{nb.name}:{g.name}"
                pending = bool(g.needs_manual_grade) and g.manual_score is None
                exercises[key] = (None if pending else float(g.score or 0.0), float(g.max_score or 0.0))
                manual = manual or bool(g.needs_manual_grade)
        return float(sub.score), float(sub.max_score), exercises, manual


def grade(submissions: Path, output_dir: Path, *, solutions_dir: Path = SOLUTIONS_DIR,
          assignments: Sequence[str] | None = None, workers: int | None = None, limits: Limits = Limits(),
          sandbox_mode: str = "bwrap", force: bool = False, progress: bool = True,
          student_pattern: str | None = None, guard: bool = True, feedback: bool = True,
          log: Callable[[str], None] | None = None) -> GradeRun:
    """Grade every submission under ``submissions``; write grades, feedback and the report to ``output_dir``.

    Args:
        submissions: folder or zip of submissions (see :func:`collect_submissions`).
        output_dir: where everything goes; it also holds the state that makes re-runs incremental.
        solutions_dir: the instructor's source notebooks (``solutions/<assignment>/<assignment>.ipynb``).
        assignments: which assignments to grade (default: all in ``solutions_dir``).
        workers: parallel worker processes (default: number of CPU cores).
        limits: time, memory, process, file-size, output and notebook-size limits.
        sandbox_mode: ``"bwrap"`` (default: refuse unless the sandbox works here), ``"none"`` (the explicit
            opt-in of ``--no-sandbox``: kernels run on the host, the course directory kept from them by
            permissions, see :mod:`autograder.protect`) or ``"auto"`` (the sandbox if it works, else as
            ``"none"``; for the demo's own sample class).  See :func:`autograder.isolation.probe`.
        force: re-grade every submission, even unchanged ones.
        progress: show a progress bar with an ETA on stderr.
        student_pattern: regular expression with a group ``(?P<student>...)`` for unusual file names.
        guard: defend tests against monkeypatching (leave on; off only for benchmarking nbgrader itself).
        feedback: write the per-student HTML feedback (the slowest step after running the notebooks).
        log: where to send status lines (default: stderr).

    Returns:
        A :class:`GradeRun`.

    Raises:
        ValueError: bad ``submissions``, ``assignments`` or ``workers``.
        RuntimeError: the submissions cannot be protected as ``sandbox_mode`` asks (no sandbox here; or, as
            root without one, no dedicated uid can run the kernels); the message says why and what to do.
    """
    from . import report

    t0 = time.monotonic()
    timings: dict[str, float] = {}
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if sandbox_mode not in isolation.SANDBOX_MODES:
        raise ValueError(f"sandbox_mode must be one of {isolation.SANDBOX_MODES}, got {sandbox_mode!r}")
    nbs = notebook_names(solutions_dir, assignments)
    if not nbs:
        raise ValueError(f"solutions_dir must contain at least one assignment, got {str(solutions_dir)!r}")
    info = isolation.probe(sandbox_mode)
    refusal = isolation.grading_refusal(info, sandbox_mode)
    if refusal:
        raise RuntimeError(refusal)
    warning = info.warning()
    if warning:
        say(warning)
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    course = out / "course"
    state_path = out / "state.json"
    state: dict[str, Any] = {}
    if state_path.is_file():
        try:
            state = json.loads(state_path.read_text())
        except ValueError:
            state = {}
    course_fp = hashlib.sha256("".join(f"{a}:{_fingerprint_dir(Path(solutions_dir) / a)}"
                                       for a in sorted(nbs)).encode()).hexdigest()
    settings = json.dumps({"limits": limits.to_json(), "sandbox": info.mode, "guard": guard,
                           "feedback": feedback}, sort_keys=True)
    protect.unseal(course)  # an earlier run without a sandbox may have stopped with it sealed
    if state.get("course") != course_fp or not (course / "gradebook.db").is_file():
        if course.exists():
            say("grade: the assignments changed since the last run; re-grading everything")
        protect.remove_tree(course)
        shutil.rmtree(out / "feedback", ignore_errors=True)
        state = {"course": course_fp, "submissions": {}}
        make_course(course, sorted(nbs), solutions_dir=solutions_dir)
    state.setdefault("submissions", {})
    for private in (course, out / "work"):  # kernels without a sandbox must not even read these
        protect.make_private(private)

    with tempfile.TemporaryDirectory(prefix="dpc-intake-") as tmp:
        releases = {(a, nb): nbformat.read(course / "release" / a / f"{nb}.ipynb", as_version=4)
                    for a in nbs for nb in nbs[a] if (course / "release" / a / f"{nb}.ipynb").is_file()}
        timings["setup"] = time.monotonic() - t0
        intake = collect_submissions(Path(submissions), nbs, limits=limits, extract_dir=Path(tmp),
                                     student_pattern=student_pattern, releases=releases)
        jobs_all = intake.jobs()
        todo: list[tuple[tuple[str, str], list[SubmissionFile], str]] = []
        for key, files in jobs_all.items():
            h = _job_hash(files, settings)
            prev = state["submissions"].get(f"{key[0]}/{key[1]}")
            if force or prev is None or prev.get("hash") != h:
                todo.append((key, files, h))
        # keep the files we need beyond the intake's temp dir lifetime: jobs read them while it exists
        n_workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
        total_nbs = sum(len(nbs[k[1]]) for k, _, _ in todo)
        say(f"grade: {len(jobs_all)} submissions found ({intake.layout}); {len(todo)} to grade, "
            f"{len(jobs_all) - len(todo)} unchanged; {n_workers} worker(s); "
            f"sandbox: {'bubblewrap (' + str(info.bwrap_origin) + ')' if info.isolated else 'NONE'}")
        bar = _Progress(total_nbs, progress)
        timings["intake"] = time.monotonic() - t0 - timings["setup"]
        if not info.isolated:
            protect.seal(course)
        try:
            results_now = _run_jobs(todo, nbs, course, out, n_workers, limits, info, guard, bar, state,
                                    state_path, say, feedback)
        finally:
            for sealed in (course, *(out / "work").glob("w*")):  # workers copied their sources from it
                protect.unseal(sealed)
        notebooks_graded = sum(len(nbs[k[1]]) for k, _, _ in todo)

    # grades.csv through nbgrader's own exporter
    grades_csv = out / "grades.csv"
    timings["grading"] = time.monotonic() - t0 - timings["setup"] - timings["intake"]
    t1 = time.monotonic()
    export_grades(course, grades_csv)
    timings["export"] = time.monotonic() - t1
    results = []
    for key, entry in sorted(state["submissions"].items()):
        r = entry["result"]
        results.append(SubmissionResult(
            student=r["student"], assignment=r["assignment"], files=r["files"], score=r["score"],
            max_score=r["max_score"], exercises={k: tuple(v) for k, v in r["exercises"].items()},
            events=r["events"], seconds=r["seconds"], feedback=r["feedback"],
            needs_manual_grade=r.get("needs_manual_grade", False), regraded=key in results_now))
    run = GradeRun(output_dir=out, results=results, unmatched=intake.unmatched, duplicates=intake.duplicates,
                   layout=intake.layout, sandbox=info.describe(), sandbox_warning=warning,
                   workers=n_workers, graded_now=len(results_now), skipped=len(jobs_all) - len(todo),
                   seconds=time.monotonic() - t0, notebooks_graded=notebooks_graded, grades_csv=grades_csv,
                   timings=timings)
    report.write_report(run, course)
    run.seconds = time.monotonic() - t0
    return run


def export_grades(course: Path, dest: Path) -> Path:
    """``grades.csv`` of a course directory: nbgrader's CSV export plugin (``nbgrader export``), rows sorted."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    import csv

    with Gradebook(f"sqlite:///{Path(course) / 'gradebook.db'}") as gb:
        plugin = CsvExportPlugin()
        plugin.to = str(dest)
        plugin.export(gb)
    # rows in a stable order (the database's order depends on which worker finished first)
    with open(dest, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) > 1:
        head, body = rows[0], rows[1:]
        ia, isd = head.index("assignment"), head.index("student_id")
        body.sort(key=lambda r: (r[ia], r[isd]))
        with open(dest, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([head, *body])
    return Path(dest)


def _run_jobs(todo, nbs, course: Path, out: Path, n_workers: int, limits: Limits, info, guard: bool,
              bar: _Progress, state: dict, state_path: Path, say, feedback: bool = True) -> set[str]:
    """Send the jobs to the workers, merge each result into the main gradebook as it arrives."""
    import selectors

    from . import report

    done: set[str] = set()
    if not todo:
        return done
    mpl_cache = prepare_mpl_cache(out / "cache" / "matplotlib")
    work = out / "work"
    events_root = lambda w: w / "events"  # noqa: E731
    hidden = report.hidden_test_lines(course)
    queue = list(todo)
    retry: dict[tuple[str, str], int] = {}
    workers: list[_Worker] = []
    sel = selectors.DefaultSelector()

    def start_worker(i: int) -> _Worker:
        wdir = work / f"w{i}"
        extra = grading_config(limits=limits, sandbox_mode=info.mode if info.mode == "bwrap" else "none",
                               events_dir=events_root(wdir), mpl_cache=mpl_cache, guard=guard)
        w = _Worker(i, wdir, course, extra)
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        return w

    def make_job(key, files, h, empty_all=False):
        student, assignment = key
        payload = []
        for f in files:
            payload.append({"notebook": f.notebook, "path": str(f.path),
                            "empty": bool(empty_all or f.problem)})
        return {"student": student, "assignment": assignment, "files": payload, "hash": h,
                "fallback": empty_all, "timestamp": next((f.timestamp for f in files if f.timestamp), None),
                "feedback": feedback}

    jobs_by_key = {k: (files, h) for k, files, h in todo}

    def next_job():
        if queue:
            key, files, h = queue.pop(0)
            return make_job(key, files, h)
        return None

    try:
        for i in range(n_workers):
            w = start_worker(i)
            workers.append(w)
            job = next_job()
            if job:
                w.send(job)
        # a worker that exceeds every limit it enforces itself (notebook limit + kernel start-up, per notebook)
        # is stuck: kill it; the loop below then treats it as crashed
        job_limit = lambda job: len(job["files"]) * (limits.notebook_timeout + 180) + 120  # noqa: E731
        active = sum(1 for w in workers if w.job)
        while active:
            for w in workers:
                if w.job and w.proc.poll() is None and time.monotonic() - w.started > job_limit(w.job):
                    say(f"grade: the worker grading {w.job['student']}/{w.job['assignment']} is stuck; killing it")
                    w.proc.kill()
            for sk, _ in sel.select(timeout=5):
                w: _Worker = sk.data
                line = w.proc.stdout.readline()
                job = w.job
                assert job is not None
                key = (job["student"], job["assignment"])
                if not line:  # the worker died
                    sel.unregister(w.proc.stdout)
                    w.close()
                    tail = ""
                    try:
                        tail = (w.wdir / "worker.log").read_text(errors="replace").strip().splitlines()[-1][:300]
                    except (OSError, IndexError):
                        pass
                    say(f"grade: a worker crashed while grading {key[0]}/{key[1]}: {tail}")
                    reply = {"success": False, "error": f"the grading worker process crashed ({tail})",
                             "events": {}, "seconds": 0.0, "feedback": False, "crashed": True}
                    idx = workers.index(w)
                    workers[idx] = w = start_worker(w.index)
                else:
                    reply = json.loads(line)
                files, h = jobs_by_key[key]
                if not reply["success"] and not job["fallback"]:
                    # nbgrader could not grade it: grade the release notebooks instead (zero) and say why
                    retry[key] = retry.get(key, 0) + 1
                    fb_job = make_job(key, files, h, empty_all=True)
                    fb_job["reason"] = reply.get("error") or "unknown error"
                    fb_job["crashed"] = bool(reply.get("crashed"))
                    w.send(fb_job)
                    continue
                # give the worker its next job first: merging reads only the reply and files of this job
                w.job = None
                nxt = next_job()
                if nxt:
                    w.send(nxt)
                with protect.unsealed(course, enabled=not info.isolated):
                    _finish(job, reply, w, files, h, course, out, nbs, hidden, state, state_path)
                done.add(f"{key[0]}/{key[1]}")
                bar.update(len(nbs[key[1]]), f"{key[0]}/{key[1]} ({reply['seconds']:.1f} s)")
            active = sum(1 for w in workers if w.job)
    finally:
        for w in workers:
            try:
                sel.unregister(w.proc.stdout)
            except (KeyError, ValueError):
                pass
            w.close()
        sel.close()
    return done


_KERNEL_BANNER = ("NOTE: When using the `ipython kernel` entry point", "To exit, you will have to explicitly quit",
                  '"quit" from a client, or using Ctrl-', "To read more about this, see https://github.com/ipython",
                  "To connect another client to this kernel, use:", "--existing ")


def _clean_kernel_log(text: str) -> str:
    """The kernel's own output without ipykernel's start-up banner, on one line."""
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not any(ln.strip().startswith(b) for b in _KERNEL_BANNER)]
    return " | ".join(lines)


def _finish(job, reply, w: _Worker, files: list[SubmissionFile], h: str, course: Path, out: Path, nbs,
            hidden, state: dict, state_path: Path) -> None:
    """Merge one finished job into the main course directory, gradebook and state."""
    from . import report

    student, assignment = job["student"], job["assignment"]
    events: list[dict[str, Any]] = []
    for f in files:
        if f.problem:
            events.append(_event(f.problem_kind or "not_graded", f"{f.origin}: {f.problem}; graded as the "
                                 "untouched notebook (zero)", notebook=f.notebook))
        if f.review:
            events.append(_event("suspicious_code", f"{f.origin}: " + " | ".join(f.review[:8]),
                                 notebook=f.notebook))
        if f.changes:
            events.append(_event("test_cells_changed", "; ".join(f.changes), notebook=f.notebook))
    submitted = {f.notebook for f in files}
    for nb in nbs[assignment]:
        if nb not in submitted:
            events.append(_event("missing_notebook", f"{nb}.ipynb was not submitted (zero)", notebook=nb))
    if job.get("fallback"):
        kind = "worker_crashed" if job.get("crashed") else "nbgrader_failed"
        events.append(_event(kind, f"{job.get('reason')}; graded as the untouched notebooks (zero)"))
    for nb_name, ev in sorted((reply.get("events") or {}).items()):
        if job.get("fallback"):
            continue
        events.extend(ev.get("events", []))
        log_text = _clean_kernel_log(ev.get("kernel_log") or "")
        if log_text:
            events.append(_event("kernel_died", "the kernel's last words: " + log_text[-600:], notebook=nb_name))
    master_db = course / "gradebook.db"
    if reply["success"] and reply.get("data"):
        _merge_submission(master_db, assignment, student, reply["data"])
    else:
        events.append(_event("not_graded", f"nbgrader failed twice ({reply.get('error')}); all grades "
                             "set to zero"))
        _zero_submission(master_db, assignment, student)
    for sub in ("autograded", "feedback"):
        dst = course / sub / student / assignment
        shutil.rmtree(dst, ignore_errors=True)
        srcd = w.wdir / sub / student / assignment
        if srcd.is_dir():
            shutil.copytree(srcd, dst)
    fb_out = out / "feedback" / student / assignment
    shutil.rmtree(fb_out, ignore_errors=True)
    fb_out.mkdir(parents=True, exist_ok=True)
    score, max_score, exercises, manual = _scores(master_db, assignment, student)
    feedback = []
    unreadable = {f.notebook for f in files if f.problem}
    for nb in (nbs[assignment] if job.get("feedback", True) else []):
        html = course / "feedback" / student / assignment / f"{nb}.html"
        dest = fb_out / f"{nb}.html"
        ok = html.is_file() and reply.get("feedback") and not job.get("fallback") and nb not in unreadable
        leaked: list[str] = []
        if ok:
            text = html.read_text(errors="replace")
            leaked = report.leaked_hidden_lines(text, hidden.get(assignment, {}).get(nb, []))
            if leaked:
                ok = False
        if ok:
            shutil.copyfile(html, dest)
        else:
            why = ("hidden test code was found in nbgrader's feedback" if leaked else
                   "no feedback notebook could be produced")
            if leaked or (not job.get("fallback") and reply["success"] and nb not in unreadable):
                events.append(_event("feedback_fallback", why, notebook=nb))
            dest.write_text(report.fallback_feedback(student, assignment, nb, exercises, events))
        feedback.append(dest.relative_to(out).as_posix())
    result = {"student": student, "assignment": assignment, "files": [f.origin for f in files],
              "score": score, "max_score": max_score, "exercises": exercises, "events": events,
              "seconds": reply.get("seconds", 0.0), "feedback": feedback, "needs_manual_grade": manual}
    retry = any(e["kind"] == "kernel_start_failed" for e in events)  # a machine problem: grade it again next run
    state["submissions"][f"{student}/{assignment}"] = {"hash": "" if retry else h, "result": result}
    _atomic_write(state_path, json.dumps(state, indent=1))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        raise SystemExit(_worker_main(sys.argv[2]))
    print("usage: python -m autograder.grading --worker DIR (internal; use `dp-course grade`)", file=sys.stderr)
    raise SystemExit(2)
