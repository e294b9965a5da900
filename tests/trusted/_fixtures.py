"""Small nbgrader notebooks and kernels for the two-kernel tests (imported by the tests in this folder)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbformat import NotebookNode

from autograder.isolation.headless import NotebookClient
from autograder.trusted.runner import RunResult, Settings, TrustedKernel, run_notebook

SETUP = "import math\nimport numpy as np\nfrom scipy import stats"


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float = 0) -> dict[str, Any]:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def setup_cell(source: str = SETUP) -> NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata=_meta("setup", grade=False, solution=False, locked=True))


def answer_cell(grade_id: str, source: str) -> NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata=_meta(grade_id, grade=False, solution=True, locked=False))


def grade_cell(grade_id: str, source: str, points: float = 1) -> NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata=_meta(grade_id, grade=True, solution=False, locked=True,
                                                            points=points))


def demo_cell(source: str) -> NotebookNode:
    return nbformat.v4.new_code_cell(source)


def notebook(*cells: NotebookNode) -> NotebookNode:
    return nbformat.v4.new_notebook(cells=list(cells))


RECORDING_KERNEL = Path(__file__).resolve().with_name("recording_kernel.py")


@contextmanager
def student_kernel(record: Path | None = None) -> Iterator[AsyncKernelManager]:
    """A started student kernel on ZeroMQ's ipc transport (as in the sandbox), shut down afterwards.

    With ``record``, the kernel is :mod:`recording_kernel`, which logs every execute request into that file.
    """
    with tempfile.TemporaryDirectory(prefix="dpcs-", dir="/tmp") as tmp:
        kwargs: dict[str, Any] = {"kernel_name": "python3"}
        if record is not None:
            spec = Path(tmp) / "kernels" / "recording"
            spec.mkdir(parents=True)
            (spec / "kernel.json").write_text(json.dumps({
                "argv": [sys.executable, str(RECORDING_KERNEL), "-f", "{connection_file}"],
                "display_name": "recording", "language": "python", "env": {"DPC_RECORD_LOG": str(record)}}))
            kwargs = {"kernel_name": "recording",
                      "kernel_spec_manager": KernelSpecManager(kernel_dirs=[str(spec.parent)])}
        km = AsyncKernelManager(transport="ipc", connection_file=str(Path(tmp) / "k.json"), **kwargs)
        run_sync(km.start_kernel)(cwd=tmp, extra_arguments=["--HistoryManager.hist_file=:memory:"])
        try:
            yield km
        finally:
            run_sync(km.shutdown_kernel)(now=True)


def run_two(nb: NotebookNode, trusted: TrustedKernel, settings: Settings | None = None,
            record: Path | None = None) -> RunResult:
    """``nb`` executed with two kernels (a fresh student kernel, the shared trusted kernel)."""
    with student_kernel(record) as km:
        return run_notebook(nb, student_km=km, trusted=trusted, settings=settings or Settings())


def run_single(nb: NotebookNode, timeout: int = 60) -> NotebookNode:
    """``nb`` executed in one kernel, as nbgrader did before (errors allowed, like nbgrader's Execute)."""
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True).execute()
    return nb


def errors(cell: NotebookNode) -> list[tuple[str, str]]:
    """``(ename, evalue)`` of the error outputs of a cell."""
    return [(o.ename, o.evalue) for o in cell.get("outputs", []) if o.output_type == "error"]


def text(cell: NotebookNode) -> str:
    """Everything a cell shows: streams, results, errors with their tracebacks."""
    parts = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.extend([o.ename, o.evalue, *o.traceback])
        else:
            parts.extend(str(v) for v in o.get("data", {}).values())
    return "\n".join(parts)


def passed(cell: NotebookNode) -> bool:
    """nbgrader's verdict on a test cell: no error output and nothing on stderr."""
    return not any(o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")
                   for o in cell.get("outputs", []))


def graded_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """``{grade_id: cell}`` of the test cells."""
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")}


def verdicts(nb: NotebookNode) -> dict[str, bool]:
    """``{grade_id: passed}`` for every test cell."""
    return {gid: passed(c) for gid, c in graded_cells(nb).items()}
