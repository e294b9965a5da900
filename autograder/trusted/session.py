"""What the grader calls inside the trusted kernel: one notebook at a time, test cells only.

The trusted kernel is an ordinary IPython kernel started by the grader (:class:`runner.TrustedKernel`); it never
runs a student's code.  The grader drives it with silent user expressions such as
``__import__("autograder.trusted.session", fromlist=["x"]).begin('{...}')``:

* :func:`begin` – a fresh namespace for the next notebook (modules stay imported, so the second notebook
  costs milliseconds), the failure display below, and a :class:`proxy.StudentLink` to the student's kernel;
* :func:`prepare` – before each test cell: the cell's deadline, and its free names resolved
  (:func:`names.resolve`).  The grader does not ask for it in a request of its own: it sends the test cell
  with :data:`REQUEST_KEY` in the execute request's metadata, and the ``pre_run_cell`` hook that
  :func:`install_display` registers (:func:`prepare_test_cell`) prepares the cell the kernel is about to run;
* :func:`status` / :func:`finish` – the link's state and counters, and how the last test cell was prepared;
  :func:`finish` closes the link.  The grader asks for :func:`status` as a user expression of the test cell's
  own execute request (evaluated after the cell when it succeeded), and in a request of its own otherwise.

**Failure display.** A failing test shows as one line, ``ExceptionType: message`` (message truncated to
:data:`MAX_FEEDBACK_CHARS`), through IPython's custom exception hook (and ``%xmode Minimal`` underneath, in
case the hook is ever unregistered), so a traceback can never carry the lines of a hidden test into the
feedback.  Warnings are shown without their source line for the same reason.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

from IPython.core.getipython import get_ipython
from IPython.core.interactiveshell import InteractiveShell

from . import codec, names, proxy

__all__ = ["MAX_FEEDBACK_CHARS", "REQUEST_KEY", "STARTUP_MODULES", "begin", "prepare", "prepare_test_cell",
           "status", "finish", "exception_line", "format_warning", "install_display"]

MAX_FEEDBACK_CHARS = 2000
"""Longest exception message a failing test shows."""

REQUEST_KEY = "dpc_test_cell"
"""Key, in an execute request's metadata, of ``{"call_seconds": float | None}``: the request is a test cell, to be
prepared (:func:`prepare`) just before it runs."""

_STATE: dict[str, Any] = {"link": None, "bound": set(), "trusted": frozenset(), "student": None, "prepared": None}

_HOME = os.getcwd()
"""The trusted kernel's own (empty) folder, where it waits between notebooks."""

STARTUP_MODULES = frozenset(sys.modules)
"""Modules imported when the trusted kernel loaded this module (its start): with the modules the notebook's
setup binds, the only ones a name from the student's kernel may stand for (:func:`names.resolve`), so that
what a test may use never depends on the notebooks a worker graded before."""


def _shell() -> InteractiveShell:
    shell = get_ipython()
    if shell is None:
        raise RuntimeError("autograder.trusted.session runs inside an IPython kernel")
    return shell


def exception_line(etype: type[BaseException], value: BaseException | str) -> tuple[str, str]:
    """``(message, display line)`` of a failure: ``"\\x1b[0;31mValueError\\x1b[0m: message"``, truncated."""
    try:
        message = str(value)
    except Exception:  # an exception whose __str__ fails
        message = "(the message could not be shown)"
    if len(message) > MAX_FEEDBACK_CHARS:
        message = message[:MAX_FEEDBACK_CHARS] + " ... (truncated)"
    return message, f"\x1b[0;31m{etype.__name__}\x1b[0m: {message}"


def _show_exception(shell: InteractiveShell, etype: type[BaseException], value: BaseException, tb: Any,
                    tb_offset: int | None = None) -> list[str]:
    """IPython custom exception handler: publish the failure as one line, with no frames and no source."""
    message, line = exception_line(etype, value)
    show = getattr(shell, "_showtraceback", None)    # ipykernel publishes an 'error' message from this
    if show is not None:
        show(etype, message, [line])
    return [line]


def format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                   line: str | None = None) -> str:
    """``warnings.formatwarning`` without the source line (it could be a line of a hidden test)."""
    return f"{category.__name__}: {message}\n"


def install_display(shell: InteractiveShell) -> None:
    """One-line failures and source-free warnings in ``shell``, and the test cells' ``pre_run_cell`` hook
    (:func:`prepare_test_cell`); idempotent."""
    shell.InteractiveTB.set_mode("Minimal")
    shell.set_custom_exc((BaseException,), _show_exception)  # type: ignore[no-untyped-call]
    warnings.formatwarning = format_warning
    if prepare_test_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", prepare_test_cell)


def _request_metadata(info: Any) -> dict[str, Any]:
    """The metadata of the execute request the kernel is running (IPython passes it as ``info.cell_meta``;
    older versions only through the kernel's parent message)."""
    meta = getattr(info, "cell_meta", None)
    if meta is None:
        kernel = getattr(_shell(), "kernel", None)
        meta = (kernel.get_parent("shell") if kernel is not None else {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def prepare_test_cell(info: Any) -> None:
    """``pre_run_cell`` hook: a cell sent with :data:`REQUEST_KEY` in its request's metadata is prepared
    (:func:`prepare`) before it runs; the outcome (the names' kinds, or why it failed) waits for :func:`status`.
    Other cells (and silent requests, which fire no ``pre_run_cell``) are left alone."""
    request = _request_metadata(info).get(REQUEST_KEY)
    if not isinstance(request, dict):
        return
    seconds = request.get("call_seconds")
    try:
        _STATE["prepared"] = json.loads(prepare(names.free_names(str(info.raw_cell or "")),
                                                float(seconds) if seconds is not None else None))
    except Exception as exc:  # noqa: BLE001 - the grader's fault, reported by status(): the notebook is graded again
        _STATE["prepared"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _close_link() -> dict[str, Any]:
    link = _STATE["link"]
    _STATE["link"] = None
    if link is None:
        return {}
    stats = {**link.stats.__dict__, "student": link.state}
    link.close()
    return stats


def begin(config: str) -> str:
    """Start on a notebook: fresh namespace, failure display, a link to the student's kernel.

    Args:
        config: JSON ``{"connection": {...}, "package": str, "limits": {...}, "max_message_bytes": int,
            "interrupt_grace": float, "heartbeat_seconds": float, "workdir": str | null,
            "trusted_names": [...], "student_names": [...] | null}`` – ``workdir`` an instructor-owned folder to
            run in (never the submission); ``trusted_names`` never come from the student; ``student_names``, when
            given, are the only names that may (:func:`names.resolve`).

    Returns:
        ``'{"ok": true}'``.
    """
    cfg = json.loads(config)
    _close_link()
    shell = _shell()
    shell.reset(new_session=True)  # type: ignore[no-untyped-call]
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
    install_display(shell)
    if cfg.get("workdir"):
        os.chdir(cfg["workdir"])
    _STATE["bound"] = set()
    _STATE["prepared"] = None
    _STATE["trusted"] = frozenset(cfg.get("trusted_names", ()))
    student = cfg.get("student_names")
    _STATE["student"] = frozenset(student) if student is not None else None
    _STATE["link"] = proxy.StudentLink(
        cfg["connection"], package=cfg["package"], limits=codec.Limits(**cfg["limits"]),
        max_message_bytes=int(cfg["max_message_bytes"]), interrupt_grace=float(cfg["interrupt_grace"]),
        heartbeat_seconds=float(cfg["heartbeat_seconds"]))
    return json.dumps({"ok": True})


def prepare(free: list[str], seconds: float | None) -> str:
    """Before a test cell: its calls must end within ``seconds``; bind what it uses from the student.

    Returns:
        JSON ``{"kinds": {name: kind}, "student": link state}`` (:func:`names.resolve`).
    """
    link = _STATE["link"]
    if link is None:
        raise RuntimeError("prepare() before begin()")
    link.set_deadline(seconds)
    kinds = names.resolve(free, _shell().user_ns, link, _STATE["bound"], trusted=_STATE["trusted"],
                          modules=STARTUP_MODULES, student=_STATE["student"])
    return json.dumps({"kinds": kinds, "student": link.state})


def status() -> str:
    """JSON ``{"student": "ok" | "unresponsive" | "dead" | "closed" | "none", "stats": {...}, "prepared": ...}``:
    ``prepared`` is what :func:`prepare_test_cell` made of the last test cell (``{"kinds": ..., ...}``, or
    ``{"error": "..."}``), or ``null`` if no test cell was prepared since the last call; reading it clears it."""
    prepared, _STATE["prepared"] = _STATE["prepared"], None
    link = _STATE["link"]
    if link is None:
        return json.dumps({"student": "none", "stats": {}, "prepared": prepared})
    return json.dumps({"student": link.state, "stats": link.stats.__dict__, "prepared": prepared})


def finish() -> str:
    """Close the link of the current notebook and leave its working folder (the grader removes it); JSON of the
    link's counters (``{}`` if there was none)."""
    os.chdir(_HOME)
    return json.dumps(_close_link())
