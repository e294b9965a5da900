"""Run notebooks headless without nbclient's Output-widget emulation (it stalls cells for a minute).

nbclient mimics a front end for ``ipywidgets.Output``: when a widget cell such as ``interact(...)`` prints or
plots, nbclient answers with a ``comm_msg`` *sent on the shell channel* from the coroutine that reads IOPub,
while another coroutine is waiting on that same socket for the cell's ``execute_reply``.  Now and then the
waiting coroutine misses its wake-up and sleeps until the cell time limit (60 s), after which nbclient
interrupts the kernel and carries on as if nothing had happened -- a silent minute lost per stall
(jupyter/nbclient#312, open).  On this machine it hit about one notebook in ten of the lectures, which
all have interactive explorers.

Grading and the notebook tests need no live widgets, so this module turns the emulation off: the widgets'
output then lands in the cell's own outputs, as in any front end without widget support, and nothing is
ever sent to the kernel behind nbclient's back.  Everything that executes notebooks in this kit uses it:
:class:`Execute` in ``nbgrader_config.py`` (plain ``nbgrader autograde``),
:class:`autograder.execute.safe_execute.SafeExecute` (``dp-course grade`` and ``check``) and
:class:`NotebookClient` (the tests).
"""

from __future__ import annotations

from typing import Any

import nbclient
from nbgrader import preprocessors

__all__ = ["NoOutputWidget", "Execute", "NotebookClient"]


class NoOutputWidget:
    """Mixin for nbclient-based executors: open no client-side Output widgets (widget state is still kept)."""

    def on_comm_open_jupyter_widget(self, msg: dict[str, Any]) -> None:
        return None


class Execute(NoOutputWidget, preprocessors.Execute):  # type: ignore[misc]  # nbgrader is untyped
    """nbgrader's ``Execute`` preprocessor without the Output-widget emulation."""


class NotebookClient(NoOutputWidget, nbclient.NotebookClient):
    """``nbclient.NotebookClient`` without the Output-widget emulation."""
