"""``SafeExecute``: nbgrader's ``Execute`` preprocessor, in a sandboxed kernel, with limits and the test guard.

The execution step of a grading run (``dp-course grade``) and of the self-check (``dp-course check``): nbgrader's
``autograde`` runs it in place of its own ``Execute`` (:func:`autograder.course.settings.grading_config`).  It differs
from ``nbgrader.preprocessors.Execute`` in this (configure as ``c.SafeExecute.<name>``):

* the kernel is started through the sandbox launcher (:class:`autograder.isolation.kernels.KernelSandbox`) in a fresh
  private copy of the assignment's files (never in the course directory), over ZeroMQ's ``ipc`` transport;
* ``limits`` (:class:`autograder.course.limits.Limits`, the one source of every limit) sets the per-cell and
  per-notebook time: after the notebook limit, a dead kernel, or a kernel that ignores the interrupt, the
  remaining code cells are not run and get an error output, so their tests score zero and the feedback says why;
* output beyond ``limits.max_output_kb`` per cell is dropped as it streams (the first error and result are kept,
  shortened; display updates count too);
* with ``guard``, the kernel runs :mod:`autograder.guard.kernel_guard` (sent from its file, with its judge of library
  callbacks, :mod:`autograder.guard.library_code`) before the first cell;
  before each instructor cell the guard restores the helpers and the kernel's machinery, and after each test
  cell it checks again: a test cell during which something was replaced scores zero;
* events (timeouts, deaths, truncation, tampering) are written as JSON to ``events_dir``;
* widgets' output goes into the cell (:mod:`autograder.isolation.headless`: no 60 s stalls);
* with ``trusted`` (the default while grading), test cells run in the worker's trusted kernel
  (:mod:`autograder.execute.trusted_tests`, :mod:`autograder.trusted`), which runs the instructor's setup
  first, before any cell, and reaches the student's functions and values by proxy – only the names the
  exercises' solution cells define, never a name the setup binds – and decides the verdict; the sandboxed
  student kernel runs the student's cells and the setup cell only and never receives a test cell.  The guard
  then protects the student's kernel (what it restores, it reports) but no longer decides a verdict: it
  restores before each instructor cell (so the student's functions run with genuine helpers when a test calls
  them), checks after those that run in the student's kernel (the setup, demonstrations) and after the last
  test cell (what the student's functions changed when the last tests called them).  Without ``trusted``
  (``dp-course grade --single-kernel``, and ``dp-course check``) every cell runs in the student's kernel.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import json
import os
import time
from pathlib import Path
from queue import Empty
from typing import Any, cast

import nbformat
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.client import NotebookClient
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_solution
from traitlets import Bool, Dict, Integer, List, Unicode

from ..isolation import isolation
from ..guard import kernel_guard, library_code
from ..course.cells import error_output, grade_id, is_instructor_cell, is_test_cell
from .diagnostics import kernel_start_reason
from ..intake.events import Event, EventKind
from ..isolation.kernels import KernelSandbox
from ..course.limits import MAX_MESSAGE_MB, Limits
from ..trusted.names import bound_names
from ..trusted.runner import Settings, TrustedKernelError, TrustedNotebook, cell_roles, install_agent
from ..intake import rebuild_structure
from . import trusted_tests
from .output_caps import output_size, shorten
from ..isolation.headless import NoOutputWidget

__all__ = ["SafeExecute", "GUARD_SOURCE", "LIBRARY_CODE_SOURCE", "guard_install_code"]

GUARD_SOURCE = Path(kernel_guard.__file__).read_text(encoding="utf-8")
"""The source of :mod:`autograder.guard.kernel_guard`, as sent to each kernel."""

LIBRARY_CODE_SOURCE = Path(library_code.__file__).read_text(encoding="utf-8")
"""The source of :mod:`autograder.guard.library_code` (the guard's judge of library callbacks), sent with the guard."""

_NO_VERDICT = ("the grader could not verify that this test ran with the original helpers; the test scores zero")


def guard_install_code(name: str) -> str:
    """The silent request that installs the guard as ``name`` in a kernel: :data:`LIBRARY_CODE_SOURCE` and
    :data:`GUARD_SOURCE` run each in a module namespace of its own (nothing of them lands in the notebook's
    namespace but ``name``), and the guard gets the first one's ``library_callback``."""
    return (f"def _dpc_install_guard(judge_source, source):\n"
            f"    import types\n"
            f"    judge = types.ModuleType('_dpc_library_code')\n"
            f"    exec(compile(judge_source, 'library_code.py', 'exec'), judge.__dict__)\n"
            f"    module = types.ModuleType('_dpc_kernel_guard')\n"
            f"    exec(compile(source, 'kernel_guard.py', 'exec'), module.__dict__)\n"
            f"    return module.make_guard(get_ipython(), judge.library_callback)\n"
            f"{name} = _dpc_install_guard({LIBRARY_CODE_SOURCE!r}, {GUARD_SOURCE!r})\n"
            f"del _dpc_install_guard\n")


_GUARD_REPLY_CHARS = 64 * 1024
"""The longest guard report parsed (at most 50 fixes and 10 notes of 300 characters are kept): a crafted reply
of many megabytes grew the worker by 0.9 GB while ``ast.literal_eval`` parsed it (issue 27)."""


def _where(index: int, cell_id: str | None) -> str:
    return f"cell {index}{' (' + cell_id + ')' if cell_id else ''}"


class SafeExecute(NoOutputWidget, Execute):  # type: ignore[misc]  # nbgrader is untyped
    """nbgrader's ``Execute`` preprocessor, run in a sandboxed kernel with time, output and tamper guards."""

    limits = Dict({}, help="The kernel's limits: fields of autograder.course.limits.Limits.").tag(config=True)
    sandbox = Unicode("auto", help="Sandbox mode: auto, bwrap or none.").tag(config=True)
    events_dir = Unicode("", help="Directory for the per-notebook event logs.").tag(config=True)
    mpl_cache = Unicode("", help="A prepared matplotlib config/cache dir copied into each kernel.").tag(
        config=True)
    ro_paths = List(Unicode(), [], help="Extra host paths the kernel may read.").tag(config=True)
    guard = Bool(True, help="Defend the tests against monkeypatching.").tag(config=True)
    trusted = Bool(False, help="Run test cells in the worker's trusted kernel (two kernels per notebook).").tag(
        config=True)
    iopub_timeout = Integer(5).tag(config=True)
    max_message_mb = Integer(MAX_MESSAGE_MB, help="Largest message accepted from the kernel, MiB.").tag(config=True)

    # ---- kernel ---------------------------------------------------------------------------------

    def create_kernel_manager(self) -> Any:
        self.km = self._kernel_sandbox.kernel_manager(self.config, self.max_message_mb)
        return self.km

    # ---- the run --------------------------------------------------------------------------------

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any] | None = None,
                   km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self.shutdown_kernel = "immediate"
        self._events: list[Event] = []
        self._events.extend(rebuild_structure.take_events(self.nb))
        self._trusted_stats: dict[str, Any] | None = None
        self._out_bytes: dict[int, int] = {}
        self._truncated: set[int] = set()
        self._nb_name: str | None = (self.resources.get("nbgrader") or {}).get("notebook")
        info = isolation.probe(self.sandbox)
        if self.sandbox == "bwrap" and not info.isolated:  # the grader found a sandbox; this worker must too
            raise RuntimeError("the sandbox does not work in this grading worker: " + "; ".join(info.problems))
        if not info.isolated:
            self._event(EventKind.SANDBOX_OFF, "; ".join(info.problems) or "no sandbox")
        if not self.trusted:
            self._run_in_sandbox(info)
            return self.nb, self.resources
        original = copy.deepcopy(self.nb)
        try:
            self._run_in_sandbox(info)
        except TrustedKernelError as exc:  # the grader's fault, not the student's: a new kernel, the notebook again
            self.log.warning("the trusted kernel failed (%s); grading the notebook again", exc)
            trusted_tests.restart()
            self.nb.cells = original.cells
            self.nb.metadata = original.metadata
            self._events = [e for e in self._events
                            if e.kind in (EventKind.SANDBOX_OFF, EventKind.STRUCTURE_RESTORED)]
            self._out_bytes, self._truncated = {}, set()
            self.reset_execution_trackers()
            self._run_in_sandbox(info)
        return self.nb, self.resources

    def _run_in_sandbox(self, info: isolation.SandboxInfo) -> None:
        box = self._kernel_sandbox = KernelSandbox.new()
        started = time.monotonic()
        log_tail = ""
        try:
            limits = self._limits = Limits.from_json(self.limits)
            box.prepare(Path(self.resources.get("metadata", {}).get("path") or "."), info, limits,
                        ro_paths=tuple(self.ro_paths), mpl_cache=self.mpl_cache or None)
            self._run_cells(limits)
        finally:
            log_tail = box.kernel_log()[-2000:]
            self._kernel_uid = box.kernel_uid()
            box.cleanup()
            self._write_events(time.monotonic() - started, log_tail)

    def _event(self, kind: EventKind, detail: str, cell: str | None = None, reason: str | None = None) -> None:
        self._events.append(Event(kind, detail, cell, self._nb_name, reason))

    def _run_cells(self, limits: Limits) -> None:
        deadline = time.monotonic() + limits.notebook_timeout
        self.timeout = cell_seconds = limits.cell_seconds
        stopped: str | None = None
        self._guard_name = "_dpc_guard_" + os.urandom(8).hex()
        self._guard_call = run_sync(self._async_guard_call)
        kernel = contextlib.ExitStack()
        try:
            kernel.enter_context(self.setup_kernel(cwd=str(self._kernel_sandbox.workdir)))
        except Exception as exc:  # noqa: BLE001 - whatever stopped it, nothing of the notebook can run
            self._kernel_start_failed(exc)
            return
        with kernel:
            assert self.kc is not None
            info_msg = self.wait_for_reply(self.kc.kernel_info())
            if info_msg is not None:
                self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
            side = self._open_trusted(limits) if self.trusted else None
            if side is not None:
                self._trusted_setup(side, limits)
            roles = cell_roles(self.nb) if side is not None else [None] * len(self.nb.cells)
            last_test = max((i for i, role in enumerate(roles) if role == "test"), default=-1)
            guard_ok = not self.guard or self._install_guard()
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                cell_id = grade_id(cell)
                if stopped is None and time.monotonic() > deadline - 0.5:
                    stopped = f"not run: the notebook used up its time limit of {limits.notebook_timeout:g} s"
                    self._event(EventKind.NOTEBOOK_TIMEOUT, f"stopped before {_where(index, cell_id)}", cell_id)
                if stopped is not None:
                    cell.outputs = [error_output("NotRun", stopped)]
                    cell.execution_count = None
                    continue
                in_trusted = side is not None and roles[index] == "test"
                guarded = self.guard and guard_ok and is_instructor_cell(cell)
                if guarded:
                    guard_ok = self._guard_before(cell_id)
                self.timeout = max(1, min(cell_seconds, int(deadline - time.monotonic())))
                if side is not None and in_trusted:
                    stopped = self._trusted_test(side, cell, index, cell_id)
                else:
                    stopped = self._execute(cell, index, cell_id, limits)
                if stopped is not None:
                    continue
                if guarded and guard_ok and (not in_trusted or index == last_test):
                    guard_ok = self._guard_after(cell, cell_id, verdict=side is None)
                elif self.guard and is_test_cell(cell) and not guard_ok and side is None:
                    cell.outputs.append(error_output("GradingIntegrityError", _NO_VERDICT))
            if side is not None:
                self._trusted_stats = side.close()

    # ---- test cells in the trusted kernel -------------------------------------------------------

    def _open_trusted(self, limits: Limits) -> TrustedNotebook:
        """Install the agent in the student's kernel and open this notebook in the worker's trusted kernel."""
        install_agent(self.kc)
        settings = Settings(cell_timeout=float(limits.cell_seconds), notebook_timeout=float(limits.notebook_timeout),
                            max_message_mb=self.max_message_mb)
        assert self.km is not None
        folder = self._instructor_files()
        return trusted_tests.kernel().open(self.nb, self.km.get_connection_info(), settings=settings, workdir=folder,
                                           resources=self.resources, trusted_names=bound_names(self._setup_source()),
                                           student_names=self._student_names(folder))

    def _trusted_setup(self, side: TrustedNotebook, limits: Limits) -> None:
        """Run the instructor's setup in the trusted kernel, first, before any cell: the names it binds (the
        library's reference functions) are the trusted kernel's own, never taken from the student's kernel."""
        setup = self._setup_source()
        failure = side.run_setup(setup, float(limits.cell_seconds)) if setup else None
        if failure:
            self._event(EventKind.GUARD_FAILED, f"the setup cell failed in the trusted kernel ({failure[:200]}); "
                        "the tests may fail", "setup")

    def _setup_source(self) -> str:
        """The setup cells' source (as ``OverwriteCells`` restored it from the gradebook: the instructor's)."""
        return "\n".join(c.source for c, role in zip(self.nb.cells, cell_roles(self.nb), strict=True)
                         if role == "setup")

    def _student_names(self, folder: Path | None) -> list[str] | None:
        """The names the exercises ask the student to define: what the solution cells of the instructor's source
        notebook bind (the only names the trusted kernel takes from the student's); None without a source."""
        path = folder / f"{self._nb_name}.ipynb" if folder is not None and self._nb_name else None
        if path is None or not path.is_file():
            return None
        source = nbformat.read(path, as_version=4)
        return sorted({name for cell in source.cells if cell.cell_type == "code" and is_solution(cell)
                       for name in bound_names(cell.source)})

    def _instructor_files(self) -> Path | None:
        """The assignment's folder in the course's source directory (the files nbgrader copies next to every
        submission), or None when the notebook is not graded as part of a course."""
        assignment = (self.resources.get("nbgrader") or {}).get("assignment")
        if not assignment:
            return None
        coursedir = CourseDirectory(config=self.config)
        return Path(coursedir.format_path(coursedir.source_directory, ".", assignment))

    def _trusted_test(self, side: TrustedNotebook, cell: NotebookNode, index: int, cell_id: str | None) -> str | None:
        """Run test cell ``cell`` in the trusted kernel (its verdict is what nbgrader records); why the cells
        after it cannot run (the student's kernel died or stopped answering), or ``None``."""
        self.code_cells_executed += 1
        report = side.run_test_cell(cell, index, self.timeout, execution_count=self.code_cells_executed)
        if report.student == "ok":
            return None
        if report.student == "dead":
            self._event(EventKind.KERNEL_DIED, f"in {_where(index, cell_id)}: the student's kernel died during "
                        "a call from this test; later cells were not run", cell_id)
            return "not run: the kernel died in an earlier cell"
        self._event(EventKind.KERNEL_UNRESPONSIVE, f"{_where(index, cell_id)}: a call from this test did not "
                    "end and the student's kernel ignored the interrupt", cell_id)
        return "not run: the kernel was stopped after an earlier cell did not respond"

    def _execute(self, cell: NotebookNode, index: int, cell_id: str | None, limits: Limits) -> str | None:
        """Run one cell; why the cells after it cannot run (the kernel died or stopped answering), or ``None``."""
        try:
            self.preprocess_cell(cell, self.resources, index)
        except DeadKernelError:
            cell.outputs.append(error_output(
                "DeadKernelError", "the kernel died while running this cell (the code exited, was killed, or "
                "exceeded a resource limit)"))
            self._event(EventKind.KERNEL_DIED, f"in {_where(index, cell_id)}: the code exited (sys.exit, "
                        f"os._exit), was killed, or went over a limit (memory {limits.memory_mb} MiB, files "
                        f"{limits.max_file_mb} MiB, CPU time); later cells were not run", cell_id)
            return "not run: the kernel died in an earlier cell"
        except (CellTimeoutError, TimeoutError, RuntimeError) as exc:
            cell.outputs.append(error_output(
                "CellTimeoutError", f"the cell ran past its time limit and did not respond to an interrupt; the "
                f"kernel was stopped ({type(exc).__name__})"))
            self._event(EventKind.KERNEL_UNRESPONSIVE, _where(index, cell_id), cell_id)
            return "not run: the kernel was stopped after an earlier cell did not respond"
        enames = [o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if "CellTimeoutError" in enames:
            self._event(EventKind.CELL_TIMEOUT, f"cell {index} was interrupted after {self.timeout} s", cell_id)
        if "MemoryError" in enames:
            self._event(EventKind.MEMORY_ERROR, f"cell {index} ran out of memory ({limits.memory_mb} MiB)", cell_id)
        return None

    # ---- the guard ------------------------------------------------------------------------------

    def _install_guard(self) -> bool:
        ok = self._guard_call(guard_install_code(self._guard_name), 30, False) is not None
        if not ok:
            self._event(EventKind.GUARD_FAILED, "the test guard could not be installed")
        return ok

    def _guard_before(self, cell_id: str | None) -> bool:
        """Restore the helpers before an instructor cell; whether the guard answered."""
        res = self._guard_call(f"{self._guard_name}.before()", 10)
        if res is None:
            self._event(EventKind.GUARD_FAILED, "the test guard did not answer before this cell", cell_id)
            return False
        if res["fixes"]:
            self._event(EventKind.TAMPERING_RESTORED, "; ".join(res["fixes"]), cell_id)
        return True

    def _guard_after(self, cell: NotebookNode, cell_id: str | None, verdict: bool = True) -> bool:
        """Check an instructor cell after it ran (with ``verdict``, a test cell with tampering scores zero;
        without, the test ran in the trusted kernel and the tampering is only restored and reported); whether
        the guard answered."""
        is_test = is_test_cell(cell) and verdict
        res = self._guard_call(f"{self._guard_name}.after()", 10)
        if res is None:
            self._event(EventKind.GUARD_FAILED, "the test guard did not answer after this cell", cell_id)
            if is_test:
                cell.outputs.append(error_output("GradingIntegrityError", _NO_VERDICT))
            return False
        if res["fixes"] and is_test:
            cell.outputs.append(error_output(
                "GradingIntegrityError", "helpers were replaced while this test ran ("
                + "; ".join(res["fixes"][:5]) + "); the test scores zero"))
            self._event(EventKind.TAMPERING_DURING_TEST, "; ".join(res["fixes"]), cell_id)
        elif res["fixes"]:
            self._event(EventKind.TAMPERING_RESTORED, "; ".join(res["fixes"]), cell_id)
        if res["notes"] and is_test_cell(cell):
            self._event(EventKind.BACKGROUND_THREADS, "; ".join(res["notes"]), cell_id)
        return True

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
        text = (r.get("data") or {}).get("text/plain")
        if not isinstance(text, str) or len(text) > _GUARD_REPLY_CHARS:  # bounded before it is parsed
            return None
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
            return None
        if not (isinstance(value, dict) and isinstance(value.get("fixes"), list)
                and isinstance(value.get("notes"), list)):
            return None
        return {"fixes": [str(x)[:300] for x in value["fixes"]][:50],
                "notes": [str(x)[:300] for x in value["notes"]][:10]}

    # ---- a kernel that did not start ------------------------------------------------------------

    def _kernel_start_failed(self, exc: BaseException) -> None:
        """The kernel did not start: every code cell says why (nothing ran) and an event records it."""
        with contextlib.suppress(Exception):  # it may never have existed
            self._cleanup_kernel()
        why = kernel_start_reason(self._kernel_sandbox.kernel_log(), exc)
        text = (f"not run: the Python kernel could not start ({why}). This is a problem of the machine that runs "
                "the notebook, not of the notebook.")
        for cell in self.nb.cells:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [error_output("KernelStartError", text)]
                cell.execution_count = None
        self._event(EventKind.KERNEL_START_FAILED, f"{why}. Nothing of the notebook ran, so it scores zero. This is a "
                    "problem of the grading machine, not of the submission: fix it (see the kernel's message) "
                    "and run dp-course grade again; this submission is then graded again.", reason=why)

    # ---- output caps ----------------------------------------------------------------------------

    def process_message(self, msg: dict[str, Any], cell: NotebookNode, cell_index: int) -> NotebookNode | None:
        """nbclient's handler of every IOPub message, with the output cap applied first to the messages nbclient
        would otherwise apply without calling :meth:`output`: an ``update_display_data`` (and a display that
        carries a ``display_id``) rewrites earlier outputs in place.  Past the cell's cap such an update is
        dropped and a display loses its id (so it updates nothing), then :meth:`output` drops it."""
        msg_type = msg.get("msg_type")
        content = msg.get("content") or {}
        transient = content.get("transient") if isinstance(content, dict) else None
        if msg_type == "update_display_data" or (msg_type in ("display_data", "execute_result") and transient):
            size = output_size(msg)
            used = self._out_bytes.get(cell_index, 0) + size
            self._out_bytes[cell_index] = used
            msg["_dpc_counted"] = True
            if used > self._limits.max_output_kb * 1024:
                self._note_truncated(cell.outputs, cell_index)
                if msg_type == "update_display_data":
                    return None
                content["transient"] = None
        return cast(NotebookNode | None, super().process_message(msg, cell, cell_index))

    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> NotebookNode | None:
        """Keep a cell's output while it is under ``max_output_kb``, as it streams: past the cap further output
        messages are dropped (not kept until the cell ends).  The cell's first error and first result are kept
        past the cap, shortened to it (the error says why a cell failed); more of them are dropped too (a
        kernel can send any number)."""
        msg_type = msg.get("msg_type")
        cap = self._limits.max_output_kb * 1024
        if not msg.pop("_dpc_counted", False):
            self._out_bytes[cell_index] = self._out_bytes.get(cell_index, 0) + output_size(msg)
        used = self._out_bytes[cell_index]
        if msg_type in ("error", "execute_result"):
            shorten(msg.get("content") or {}, cap)
            first = not any(o.get("output_type") == msg_type for o in outs)
            if used <= cap or first:
                return cast(NotebookNode | None, super().output(outs, msg, display_id, cell_index))
        elif used <= cap:
            return cast(NotebookNode | None, super().output(outs, msg, display_id, cell_index))
        self._note_truncated(outs, cell_index)
        return None

    def _note_truncated(self, outs: list[NotebookNode], cell_index: int) -> None:
        """Once per cell: a note in its outputs and an ``OUTPUT_TRUNCATED`` event."""
        if cell_index in self._truncated:
            return
        max_kb = self._limits.max_output_kb
        self._truncated.add(cell_index)
        outs.append(NotebookNode(output_type="stream", name="stdout",
                                 text=f"\n[grader: output truncated after {max_kb} KiB]\n"))
        self._event(EventKind.OUTPUT_TRUNCATED, f"cell {cell_index} printed more than {max_kb} KiB",
                    grade_id(self.nb.cells[cell_index]))

    # ---- events ---------------------------------------------------------------------------------

    def _write_events(self, seconds: float, log_tail: str) -> None:
        if not self.events_dir:
            return
        nbg = self.resources.get("nbgrader") or {}
        if not all(nbg.get(k) for k in ("student", "assignment", "notebook")):
            return
        path = Path(self.events_dir) / nbg["student"] / nbg["assignment"] / f"{nbg['notebook']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        died = any(e.kind in (EventKind.KERNEL_DIED, EventKind.KERNEL_UNRESPONSIVE) for e in self._events)
        path.write_text(json.dumps({"events": [e.to_json() for e in self._events], "seconds": round(seconds, 3),
                                    "kernel_log": log_tail if died else "",
                                    "kernel_uid": getattr(self, "_kernel_uid", None),
                                    "trusted": self._trusted_stats}, indent=1))
