"""One-line reasons from long logs: why nbgrader failed, why a kernel died or could not start.

The grader reports problems in a line or two (the report, the feedback, ``dp-course check``); these helpers
pick the informative line out of nbgrader's captured log, or the kernel's own output.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["EXCEPTION_LINE", "START_HINTS", "clean_kernel_log", "last_error", "kernel_start_reason"]

KERNEL_BANNER = ("NOTE: When using the `ipython kernel` entry point", "To exit, you will have to explicitly quit",
                 '"quit" from a client, or using Ctrl-', "To read more about this, see https://github.com/ipython",
                 "To connect another client to this kernel, use:", "--existing ")
"""Lines of ipykernel's start-up banner (not the kernel's last words)."""

EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$")
"""A line that names a raised exception (``ValueError: ...``)."""

START_HINTS = [
    (r"thread|Resource temporarily unavailable", "it could not start a thread: a limit on the number of processes "
     "and threads (ulimit -u, RLIMIT_NPROC) was reached"),
    (r"MemoryError|Cannot allocate memory", "out of memory: the memory limit (--memory-mb) or the machine's memory"),
    (r"No such file or directory|FileNotFoundError", "a file the kernel needs is missing: is the Python environment "
     "complete (python3 run.py setup)?"),
    (r"Permission denied|PermissionError", "the kernel may not read something it needs: check the permissions of "
     "the Python environment"),
]
"""Patterns of a kernel's last words when it cannot start, and what they mean."""


def clean_kernel_log(text: str) -> str:
    """The kernel's own output without ipykernel's start-up banner, on one line (`` | ``-separated)."""
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not any(ln.strip().startswith(b) for b in KERNEL_BANNER)]
    return " | ".join(lines)


def last_error(res: dict[str, Any]) -> str:
    """The most informative line of a failed nbgrader run (the result of an ``NbGraderAPI`` call): the last
    exception raised, else its last error; empty for a run that succeeded."""
    if res.get("success"):
        return ""
    text = "\n".join(x for x in (res.get("log"), res.get("error")) if x)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    excs = [ln.strip() for ln in lines if EXCEPTION_LINE.match(ln) and "above traceback" not in ln]
    if excs:
        return excs[-1][:400]
    errs = [ln for ln in lines if "[ERROR]" in ln and "see the" not in ln.lower()]
    return (errs[-1] if errs else (lines[-1] if lines else "unknown error")).strip()[:400]


def kernel_start_reason(kernel_log: str, exc: BaseException) -> str:
    """Why a kernel did not start, in a line: its last exception (else its last line, else ``exc``), and a hint
    at the cause where :data:`START_HINTS` knows one."""
    lines = [ln for ln in clean_kernel_log(kernel_log).split(" | ") if ln]
    excs = [ln for ln in lines if EXCEPTION_LINE.match(ln)]
    why = (excs or lines or [f"{type(exc).__name__}: {exc}"])[-1][:300]
    hint = next((h for pattern, h in START_HINTS if re.search(pattern, why, re.IGNORECASE)), "")
    return why + (f" -- {hint}" if hint else "")
