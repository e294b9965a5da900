"""``StripHiddenTests``: the feedback a student gets shows no hidden test, nor anything that quotes one.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells carry the full test code --
hidden tests included (nbgrader restores them from the gradebook before running them).  This preprocessor runs
inside ``generate_feedback`` (configured by :func:`autograder.course.settings.grading_config`) and removes:

* the hidden-test regions (``BEGIN HIDDEN TESTS`` ... ``END HIDDEN TESTS``, or whatever nbgrader's
  ``ClearHiddenTests.begin_test_delimeter`` / ``end_test_delimeter`` are configured to) from the test cells'
  source;
* the outputs of test cells that contain hidden tests, except the error name and assertion message;
* any output, anywhere in the notebook, that quotes a line of hidden test code (a submission can print what it
  finds in its caller's frame).

After rendering, :func:`autograder.feedback.feedback.leaked_hidden_lines` checks the page itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Bool

from ..course.cells import hidden_test_regions, strip_ansi

__all__ = ["MIN_CHARS", "StripHiddenTests", "normalise"]

MIN_CHARS = 10
"""Hidden lines shorter than this (without blanks) carry too little to look for reliably."""


def normalise(text: str) -> str:
    """``text`` without any white space (how hidden lines are compared with outputs and pages)."""
    return re.sub(r"\s+", "", text)


def _output_text(output: dict[str, Any]) -> str:
    parts = [str(output.get("text", "")), str(output.get("evalue", ""))]
    parts += [str(x) for x in output.get("traceback", []) or []]
    for v in (output.get("data") or {}).values():
        parts.append(v if isinstance(v, str) else json.dumps(v))
    return strip_ansi("\n".join(parts))


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for s in secrets:
        if s and s in text:
            text = text.replace(s, "[hidden test code removed]")
    return text


class StripHiddenTests(ClearHiddenTests):  # type: ignore[misc]  # nbgrader is untyped
    """Remove hidden tests -- their source, their outputs, and any quotation of them -- from feedback."""

    enforce_metadata = Bool(False).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        secrets: list[str] = []
        for cell in nb.cells:
            secrets += hidden_test_regions(str(cell.source), self.begin_test_delimeter, self.end_test_delimeter)
        self._secrets = sorted({s for s in secrets if len(normalise(s)) >= 4}, key=len, reverse=True)
        self._secrets_norm = [normalise(s) for s in self._secrets if len(normalise(s)) >= MIN_CHARS]
        nb, resources = super().preprocess(nb, resources)
        return nb, resources

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        cell_index: int) -> tuple[NotebookNode, dict[str, Any]]:
        had_hidden = self.begin_test_delimeter in str(cell.source)
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if had_hidden:
            cell.source = cell.source.rstrip("\n") + "\n# (hidden tests are not shown)"
        if cell.cell_type != "code":
            return cell, resources
        new_outputs = []
        for out in cell.get("outputs", []):
            if had_hidden:
                if out.get("output_type") == "error":
                    evalue = _scrub(strip_ansi(str(out.get("evalue", ""))), self._secrets)
                    out["evalue"] = evalue
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {evalue}"]
                    new_outputs.append(out)
                continue
            text = normalise(_output_text(out))
            if any(s in text for s in self._secrets_norm):
                new_outputs.append(nbformat.v4.new_output(
                    "stream", name="stdout", text="[output removed: it quoted hidden test code]\n"))
            else:
                new_outputs.append(out)
        if had_hidden and len(new_outputs) < len(cell.get("outputs", [])):
            new_outputs.insert(0, nbformat.v4.new_output(
                "stream", name="stdout", text="(the output of hidden tests is not shown)\n"))
        cell.outputs = new_outputs
        return cell, resources
