"""The trusted kernel's side of a test cell (``autograder.trusted.session``), in-process: a request marked as a
test cell is prepared by the ``pre_run_cell`` hook and the outcome waits for ``status()``; other cells are left
alone.  With two real kernels: ``test_two_kernels.py``."""

from __future__ import annotations

import json
from types import SimpleNamespace

from autograder.trusted import session


def _info(source: str, meta: dict[str, object] | None) -> SimpleNamespace:
    """What IPython hands a ``pre_run_cell`` callback (``ExecutionInfo``): the cell and its request's metadata."""
    return SimpleNamespace(raw_cell=source, cell_meta=meta, silent=False, store_history=True)


def test_only_a_request_marked_as_a_test_cell_is_prepared() -> None:
    session.status()                                               # clear what an earlier test left
    session.prepare_test_cell(_info("assert f(1) == 1", {"cellId": "abc"}))
    assert json.loads(session.status())["prepared"] is None


def test_a_cell_that_cannot_be_prepared_is_reported_once() -> None:
    """Without a link to a student's kernel (no ``begin``) preparing fails; ``status`` says why (the runner then
    raises ``TrustedKernelError`` and the notebook is graded again), and reading it clears it."""
    session.prepare_test_cell(_info("assert f(1) == 1", {session.REQUEST_KEY: {"call_seconds": 5.0}}))
    first, second = json.loads(session.status()), json.loads(session.status())
    assert first["student"] == "none"
    assert first["prepared"] == {"error": "RuntimeError: prepare() before begin()"}
    assert second["prepared"] is None
