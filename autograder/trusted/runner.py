"""Execute a notebook with two kernels: the student's cells in the student's kernel, test cells in a trusted one.

The cells of a graded notebook (after nbgrader has restored the instructor's cells) play three roles
(:func:`cell_roles`, decided with ``nbgrader.utils``):

* **test** – an autograded test cell (``grade`` without ``solution``): runs in the *trusted* kernel only;
* **setup** – a read-only instructor code cell before the first answer cell (the imports): runs in the student's
  kernel (recorded) and again, silently, in the trusted kernel, which needs the same imports;
* **student** – every other code cell (answers, demonstrations, self-checks): the student's kernel only.

Each cell is executed by nbgrader's own ``Execute`` preprocessor
(:class:`autograder.isolation.headless.Execute`) bound to the kernel of its role, so the outputs – and
nbgrader's verdict on them – are exactly what a single kernel would record, except that a failing test shows
one line (:mod:`autograder.trusted.session`).  Before the first cell, :func:`install_agent` sends the agent into
the student's kernel (from its file).

The integration into ``dp-course grade`` keeps its own student-kernel executor and calls, per notebook:
``install_agent(kc)``, ``trusted.open(...)`` -> :class:`TrustedNotebook`, then ``run_setup`` for setup cells,
``run_test_cell`` for test cells, and ``close()``.  :func:`run_notebook` is that loop for a plain kernel.
"""

from __future__ import annotations

import ast
import json
import math
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async, run_sync
from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader import utils as nbutils

from ..isolation.kernels import copy_workdir
from ..course.limits import Limits as GradingLimits
from ..isolation import headless
from ..isolation.reaping import dying_with_parent, private_folder
from . import agent, codec, loader, plain, session

__all__ = ["PACKAGE", "Settings", "TrustedKernelError", "CellReport", "RunResult", "TrustedKernel",
           "TrustedNotebook", "cell_roles", "install_agent", "agent_install_expression", "run_notebook"]

PACKAGE = "_dpc_trusted"
"""Package name the agent is installed under in the student's kernel."""

_SESSION = "__import__('autograder.trusted.session', fromlist=['begin'])"

_STATUS = "status"
"""Name of the user expression that brings :func:`session.status` back with a test cell's reply."""


MAX_LITERAL_CHARS = 1 << 20
"""The longest user-expression value :func:`_literal` parses (``ast.literal_eval`` of a crafted 16 MiB text
costs the parser about 1 GiB)."""


@dataclass(frozen=True)
class Settings:
    """Knobs of a two-kernel execution.

    Attributes:
        cell_timeout: seconds one cell may run (a test cell: its own code plus its calls); by default the
            grader's (:class:`autograder.course.limits.Limits`).
        notebook_timeout: seconds the whole notebook may run; later cells are not run; by default the
            grader's.
        call_margin: the calls of a test cell must end this long before the cell's limit, so that the
            test fails with the proxy's timeout message rather than nbclient's interrupt.
        interrupt_grace: seconds the student's kernel has to answer after an interrupt.
        heartbeat_seconds: heartbeat silence after which the student's kernel counts as dead.
        max_message_mb: ZeroMQ's cap on one message from the student's kernel.
        limits: caps on every value in both directions (:class:`codec.Limits`).
        package: name the agent is installed under.
        allow_errors: nbclient's ``allow_errors`` for both kernels (nbgrader grades with True).
    """

    cell_timeout: float = GradingLimits.cell_timeout
    notebook_timeout: float = GradingLimits.notebook_timeout
    call_margin: float = 2.0
    interrupt_grace: float = 5.0
    heartbeat_seconds: float = 3.0
    max_message_mb: int = 32
    limits: codec.Limits = codec.DEFAULT_LIMITS
    package: str = PACKAGE
    allow_errors: bool = True


TRUSTED_KERNEL_ARGS = ("--HistoryManager.hist_file=:memory:", "--InteractiveShell.cache_size=0")
"""Options of the trusted kernel: no history file, and no output cache (``Out``, ``_1``, ...), which test cells
do not use and which would make the fresh namespace of each notebook cost a full garbage collection
(``InteractiveShell.reset`` flushes the cache with ``gc.collect()``)."""


class TestCellClient:
    """The trusted kernel's client as the executor of test cells sees it: its ``execute`` sends the cell with
    :data:`session.REQUEST_KEY` in the request's metadata (the kernel prepares the cell just before running it,
    :func:`session.prepare_test_cell`) and asks for :func:`session.status` as a user expression (evaluated
    after the cell when it succeeded).  One request per test cell instead of three.  Everything else is the
    client's own."""

    def __init__(self, kc: Any) -> None:
        self._kc = kc
        self.call_seconds: float | None = None

    def execute(self, code: str, silent: bool = False, store_history: bool = True,
                user_expressions: dict[str, str] | None = None, allow_stdin: bool | None = None,
                stop_on_error: bool = True) -> str:
        """Send ``code`` as a test cell; its message id."""
        content = {"code": code, "silent": silent, "store_history": store_history,
                   "user_expressions": {**(user_expressions or {}), _STATUS: f"{_SESSION}.status()"},
                   "allow_stdin": False, "stop_on_error": stop_on_error}
        msg = self._kc.session.msg("execute_request", content,
                                   metadata={session.REQUEST_KEY: {"call_seconds": self.call_seconds}})
        self._kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kc, name)


class TrustedKernelError(RuntimeError):
    """The trusted kernel failed (died, or did not answer the grader): a fault of the grader, not the student's;
    the notebook must be graded again."""


@dataclass
class CellReport:
    """What happened around one test cell."""

    index: int
    grade_id: str | None
    kinds: dict[str, str]           # free name -> "function" | "data" | "module" | "other" | "missing" | ...
    student: str                    # state of the student's kernel afterwards: "ok", "unresponsive", "dead"
    seconds: float


@dataclass
class RunResult:
    """The executed notebook (outputs in place), events, and one report per test cell."""

    nb: NotebookNode
    events: list[dict[str, Any]] = field(default_factory=list)
    tests: list[CellReport] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def cell_roles(nb: NotebookNode) -> list[str | None]:
    """``"test"``, ``"setup"`` or ``"student"`` for each cell (None: not a code cell, or blank)."""
    first_answer = next((i for i, c in enumerate(nb.cells) if nbutils.is_solution(c)), len(nb.cells))
    roles: list[str | None] = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            roles.append(None)
        elif nbutils.is_grade(cell) and not nbutils.is_solution(cell):
            roles.append("test")
        elif nbutils.is_locked(cell) and not nbutils.is_solution(cell) and i < first_answer:
            roles.append("setup")
        else:
            roles.append("student")
    return roles


# ---------------------------------------------------------------------------------------------------------
# silent requests
# ---------------------------------------------------------------------------------------------------------

async def _async_request(kc: Any, code: str, expressions: Mapping[str, str], timeout: float) -> dict[str, Any]:
    msg_id = kc.execute(code, silent=True, store_history=False, user_expressions=dict(expressions),
                        allow_stdin=False, stop_on_error=False)
    end = time.monotonic() + timeout
    while True:
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no reply within {timeout:g} s")
        try:
            msg = await ensure_async(kc.shell_channel.get_msg(timeout=remaining))
        except Empty:
            continue
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            return dict(msg.get("content") or {})


_request = run_sync(_async_request)


def _literal(content: Mapping[str, Any], key: str) -> Any:
    """The Python literal that user expression ``key`` of a reply's ``content`` shows.

    Raises:
        RuntimeError: the request or the expression failed.
    """
    result = (content.get("user_expressions") or {}).get(key) or {}
    if content.get("status") != "ok" or result.get("status") != "ok":
        raise RuntimeError(f"{result.get('ename', content.get('ename', '?'))}: "
                           f"{str(result.get('evalue', content.get('evalue', '')))[:500]}")
    text = (result.get("data") or {}).get("text/plain")
    if not isinstance(text, str) or len(text) > MAX_LITERAL_CHARS:  # parsing is bounded before it starts
        raise RuntimeError(f"the reply to {key!r} is not a literal of at most {MAX_LITERAL_CHARS} characters")
    return ast.literal_eval(text)


def _expression(kc: Any, expression: str, timeout: float) -> Any:
    """Evaluate ``expression`` silently in ``kc``'s kernel; the Python literal its ``repr`` shows."""
    return _literal(_request(kc, "", {"r": expression}, timeout), "r")


def agent_install_expression(package: str = PACKAGE) -> str:
    """The user expression that loads :mod:`plain`, :mod:`codec` and :mod:`agent` (their files' text) into a
    kernel as ``package``, through :func:`loader.load_package` (its file's text)."""
    sources = {m.__name__.rsplit(".", 1)[1]: Path(m.__file__ or "").read_text(encoding="utf-8")
               for m in (plain, codec, agent)}
    loader_source = Path(loader.__file__ or "").read_text(encoding="utf-8")
    return (f"(lambda ns: (exec(compile({loader_source!r}, '<{package}/loader.py>', 'exec'), ns), "
            f"ns['load_package']({package!r}, {sources!r}))[1])({{'__name__': '{package}_loader'}})")


def install_agent(kc: Any, *, package: str = PACKAGE, timeout: float = 30.0) -> None:
    """Install the agent in the student's kernel (``kc``: a started async kernel client) before its first cell.

    Raises:
        RuntimeError: the kernel did not load it.
    """
    answer = _expression(kc, agent_install_expression(package), timeout)
    if not (isinstance(answer, str) and answer.startswith(f"loaded {package}:")):
        raise RuntimeError(f"the agent could not be installed in the student's kernel: {str(answer)[:200]}")


def _connection_json(info: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("transport", "ip", "shell_port", "iopub_port", "stdin_port", "hb_port", "control_port",
            "signature_scheme", "key")
    out = {k: info[k] for k in keys if k in info}
    if isinstance(out.get("key"), bytes):
        out["key"] = out["key"].decode("ascii")
    return out


def _executor(nb: NotebookNode, km: Any, kc: Any, settings: Settings,
              resources: dict[str, Any] | None) -> headless.Execute:
    """nbgrader's ``Execute`` preprocessor bound to an already started kernel (it never starts or stops it)."""
    ex = headless.Execute(timeout=int(math.ceil(settings.cell_timeout)), allow_errors=settings.allow_errors)
    ex.nb, ex.km, ex.kc, ex.owns_km = nb, km, kc, False
    ex.resources = resources or {}
    ex.reset_execution_trackers()
    return ex


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


# ---------------------------------------------------------------------------------------------------------
# the trusted kernel
# ---------------------------------------------------------------------------------------------------------

class TrustedKernel:
    """The trusted kernel of one grading worker: runs test cells (and setup cells), never a student's code.

    Start it once and use it for many notebooks (:meth:`open` gives each a fresh namespace).  It runs in a
    private, empty working directory (so nothing a submission brought can be imported by name), with the
    grader's Python environment; its sockets use ZeroMQ's ``ipc`` transport in a private directory.

    Args:
        km: an unstarted ``AsyncKernelManager`` to use (e.g. with a custom kernel spec); default: ``python3``.
        kernel_name: kernel spec name when ``km`` is None.
        startup_timeout: seconds to wait for the kernel.
    """

    def __init__(self, *, km: AsyncKernelManager | None = None, kernel_name: str = "python3",
                 startup_timeout: float = 60.0) -> None:
        self._dir = private_folder("dpct-")  # a worker killed before shutdown(): the main process removes it
        self.workdir = self._dir / "cwd"
        self.workdir.mkdir()
        self.km = km or AsyncKernelManager(kernel_name=kernel_name, transport="ipc",
                                           connection_file=str(self._dir / "k.json"))
        spec = self.km.kernel_spec  # killed with the thread that starts it (a worker's main one), however it ends
        if spec is not None:
            self.km._kernel_spec = KernelSpec(**{**spec.to_dict(), "argv": dying_with_parent(spec.argv)})
        self.kc: Any = None
        self.startup_timeout = startup_timeout
        self.notebooks = 0

    def start(self) -> TrustedKernel:
        """Start the kernel and load :mod:`autograder.trusted.session` in it."""
        run_sync(self.km.start_kernel)(cwd=str(self.workdir), extra_arguments=list(TRUSTED_KERNEL_ARGS))
        self.kc = self.km.client()
        self.kc.start_channels()
        run_sync(self.kc.wait_for_ready)(timeout=self.startup_timeout)
        self.call("status()", 60.0)
        return self

    def call(self, expression: str, timeout: float) -> dict[str, Any]:
        """``session.<expression>`` in the trusted kernel; its JSON answer.

        Raises:
            TrustedKernelError: no answer within ``timeout``, or an error.
        """
        try:
            answer = _expression(self.kc, f"{_SESSION}.{expression}", timeout)
            return dict(json.loads(answer))
        except (TimeoutError, RuntimeError, ValueError, SyntaxError, KeyError, TypeError) as exc:
            raise TrustedKernelError(f"the trusted kernel failed on {expression[:60]}...: {exc}") from exc

    def open(self, nb: NotebookNode, student_connection: Mapping[str, Any], *, settings: Settings = Settings(),
             workdir: str | Path | None = None, resources: dict[str, Any] | None = None,
             trusted_names: Sequence[str] = (), student_names: Sequence[str] | None = None) -> TrustedNotebook:
        """Start on notebook ``nb``: fresh namespace, and a link to the student's kernel (its connection info,
        ``KernelManager.get_connection_info()``).

        ``workdir``: an instructor-owned folder (the assignment's source folder, never the submission) whose
        files the test cells may read: its files other than notebooks are copied (no symbolic links followed)
        into a fresh private folder of the trusted kernel, where the test cells of this notebook run; by
        default that folder is empty.

        ``trusted_names`` (the setup's names) are never taken from the student's kernel; ``student_names`` (the
        names the exercises' solution cells define), when given, are the only names that are
        (:func:`autograder.trusted.names.resolve`)."""
        files = self._files_dir()
        if workdir:
            copy_workdir(Path(workdir), files)
        else:
            files.mkdir()
        config = {"connection": _connection_json(student_connection), "package": settings.package,
                  "limits": asdict(settings.limits), "max_message_bytes": settings.max_message_mb * 2**20,
                  "interrupt_grace": settings.interrupt_grace, "heartbeat_seconds": settings.heartbeat_seconds,
                  "workdir": str(files), "trusted_names": sorted(trusted_names),
                  "student_names": None if student_names is None else sorted(student_names)}
        self.call(f"begin({json.dumps(config)!r})", 60.0)
        self.notebooks += 1
        return TrustedNotebook(self, _executor(nb, self.km, self.kc, settings, resources), settings)

    def _files_dir(self) -> Path:
        """A fresh, empty folder for the next notebook's test cells (the previous notebook's, and what a failed
        start on this one left, are removed)."""
        for n in (self.notebooks - 1, self.notebooks):
            shutil.rmtree(self._dir / f"files-{n}", ignore_errors=True)
        return self._dir / f"files-{self.notebooks}"

    def shutdown(self) -> None:
        """Stop the kernel and remove its folder."""
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None
        if self.km.has_kernel:
            run_sync(self.km.shutdown_kernel)(now=True)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> TrustedKernel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class TrustedNotebook:
    """The trusted side of one notebook (from :meth:`TrustedKernel.open`)."""

    def __init__(self, kernel: TrustedKernel, executor: headless.Execute, settings: Settings) -> None:
        self.kernel = kernel
        self.executor = executor
        self.settings = settings
        self._client = TestCellClient(executor.kc)
        self._reply: dict[str, Any] = {}
        executor.kc = self._client
        executor.on_cell_executed = self._keep_reply

    def run_setup(self, source: str, timeout: float | None = None) -> str | None:
        """Run a setup cell silently in the trusted kernel; None, or ``"Ename: evalue"`` if it failed."""
        try:
            content = _request(self.kernel.kc, source, {}, timeout or self.settings.cell_timeout)
        except TimeoutError as exc:
            return f"TimeoutError: {exc}"
        if content.get("status") == "ok":
            return None
        return f"{content.get('ename', '?')}: {str(content.get('evalue', ''))[:300]}"

    def run_test_cell(self, cell: NotebookNode, index: int, timeout: float | None = None,
                      execution_count: int | None = None) -> CellReport:
        """Execute test cell ``cell`` (at ``index``) in the trusted kernel; outputs go into ``cell``.

        One execute request does it all (:class:`TestCellClient`): the kernel resolves the cell's free names
        just before it runs it (:func:`session.prepare_test_cell`), its calls must end ``call_margin`` seconds
        before ``timeout``, and the link's state comes back with the reply (a separate :func:`session.status`
        request only when the cell failed).

        Raises:
            TrustedKernelError: the trusted kernel died, did not answer, or could not prepare the cell.
        """
        limit = float(timeout or self.settings.cell_timeout)
        margin = min(self.settings.call_margin, limit / 4)
        started = time.monotonic()
        self._client.call_seconds = limit - margin
        self.executor.timeout = max(1, int(math.ceil(limit + self.settings.interrupt_grace + 1)))
        self._reply = {}
        try:
            self.executor.execute_cell(cell, index, execution_count=execution_count)
        except DeadKernelError as exc:
            raise TrustedKernelError("the trusted kernel died while running a test cell") from exc
        try:
            state = json.loads(_literal(self._reply, _STATUS))
        except (RuntimeError, ValueError, SyntaxError, KeyError, TypeError):  # the cell failed: ask on its own
            state = self.kernel.call("status()", 30.0)
        prepared = state.get("prepared")
        if not isinstance(prepared, dict) or "error" in prepared:
            why = prepared.get("error") if isinstance(prepared, dict) else "the test cell was not prepared"
            raise TrustedKernelError(f"the trusted kernel could not prepare test cell {index}: {why}")
        grade_id = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        return CellReport(index, grade_id, dict(prepared.get("kinds", {})), str(state.get("student")),
                          time.monotonic() - started)

    def _keep_reply(self, cell: NotebookNode, cell_index: int, execute_reply: dict[str, Any]) -> None:
        """nbclient's ``on_cell_executed`` hook: keep the content of the test cell's reply."""
        self._reply = dict(execute_reply.get("content") or {})

    def close(self) -> dict[str, Any]:
        """Close the link to the student's kernel; its counters (calls, seconds, timeouts, ...)."""
        return self.kernel.call("finish()", 30.0)


# ---------------------------------------------------------------------------------------------------------
# the whole notebook
# ---------------------------------------------------------------------------------------------------------

def run_notebook(nb: NotebookNode, *, student_km: AsyncKernelManager, trusted: TrustedKernel,
                 settings: Settings = Settings(), resources: dict[str, Any] | None = None,
                 workdir: str | Path | None = None) -> RunResult:
    """Execute ``nb`` in place: student and setup cells in ``student_km``'s (started) kernel, test cells in
    ``trusted``.  The caller owns both kernels; run each notebook in a fresh student kernel.

    After the notebook time limit, or when the student's kernel dies or stops answering, the remaining code
    cells get a ``NotRun`` error output (their tests score zero) and an event says why.
    """
    result = RunResult(nb)
    kc = student_km.client()
    kc.start_channels()
    try:
        run_sync(kc.wait_for_ready)(timeout=60)
        install_agent(kc, package=settings.package)
        student = _executor(nb, student_km, kc, settings, resources)
        side = trusted.open(nb, student_km.get_connection_info(), settings=settings, workdir=workdir,
                            resources=resources)
        try:
            _run_cells(nb, student, side, settings, result)
        finally:
            result.stats = side.close()
    finally:
        kc.stop_channels()
    return result


def _run_cells(nb: NotebookNode, student: headless.Execute, side: TrustedNotebook, settings: Settings,
               result: RunResult) -> None:
    deadline = time.monotonic() + settings.notebook_timeout
    stopped: str | None = None
    count = 0
    for index, (cell, role) in enumerate(zip(nb.cells, cell_roles(nb), strict=True)):
        if role is None:
            continue
        cell_id = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        left = deadline - time.monotonic()
        if stopped is None and left < 1:
            stopped = f"not run: the notebook used up its time limit of {settings.notebook_timeout:g} s"
            result.events.append({"kind": "notebook_timeout", "detail": f"before cell {index}", "cell": cell_id})
        if stopped is not None:
            cell.outputs, cell.execution_count = [_error_output("NotRun", stopped)], None
            continue
        count += 1
        timeout = min(settings.cell_timeout, left)
        if role == "test":
            report = side.run_test_cell(cell, index, timeout, execution_count=count)
            result.tests.append(report)
            if report.student != "ok":
                stopped = f"not run: the student's kernel stopped answering during test cell {index}"
                result.events.append({"kind": "student_kernel_" + report.student, "detail": f"cell {index}",
                                      "cell": cell_id})
        else:
            student.timeout = max(1, int(math.ceil(timeout)))
            try:
                student.execute_cell(cell, index, execution_count=count)
            except DeadKernelError:
                cell.outputs.append(_error_output("DeadKernelError", "the kernel died while running this cell"))
                stopped = "not run: the kernel died in an earlier cell"
                result.events.append({"kind": "kernel_died", "detail": f"cell {index}", "cell": cell_id})
                continue
            if role == "setup":
                failure = side.run_setup(cell.source, timeout)
                if failure:
                    result.events.append({"kind": "trusted_setup_failed", "detail": failure, "cell": cell_id})
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = count

