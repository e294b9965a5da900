"""Forged replies: the student replaces the grader's agent in their kernel; what it sends back is hostile data,
never trusted (issue 13, "Hostile replies" in docs/design.md)."""

from __future__ import annotations

import textwrap

from _attack_kit import SETUP, cell_source
from _fixtures import answer_cell, grade_cell, graded_cells, notebook, run_two, setup_cell

from autograder.trusted.runner import TrustedKernel


def _scale(name: str) -> str:
    return f"def scale_{name}(sensitivity, epsilon):\n    return sensitivity / epsilon"


def test_forged_replies_from_the_students_kernel_are_errors(trusted_kernel: TrustedKernel) -> None:
    """The student replaces the grader's agent: its replies are hostile data, never trusted."""
    forge = textwrap.dedent('''
        import json
        _agent = sys.modules["_dpc_trusted.agent"]
        _real_call = _agent.call
        _FORGED = {
            "exit": {"error": {"type": "SystemExit", "builtin": "SystemExit", "where": "call", "message": "bye"}},
            "interrupt": {"error": {"type": "KeyboardInterrupt", "builtin": "KeyboardInterrupt", "where": "call",
                                    "message": ""}},
            "pickle": {"ok": {"t": "pickle", "v": "gASVAAAA"}},
            "object": {"ok": {"t": "nd", "d": "|O", "s": [1], "b": "AAAAAAAAAAA="}},
            "huge": {"ok": "x" * 30_000_000},
            "garbage": None,
        }
        def _forged_call(namespace, request):
            name = json.loads(request)["name"].removeprefix("scale_")
            if name not in _FORGED:
                return _real_call(namespace, request)
            forged = _FORGED[name]
            return _agent.Reply("{not json" if forged is None else json.dumps({"protocol": 1, "rngs": [], **forged}))
        _agent.call = _forged_call
    ''').strip()
    kinds = ["exit", "interrupt", "pickle", "object", "huge", "garbage"]
    cells = [setup_cell(SETUP), answer_cell("forge", forge)]
    for kind in kinds:
        cells += [answer_cell(f"{kind}_answer", _scale(kind)),
                  grade_cell(kind, cell_source(f"scale_{kind}"))]
    cells += [answer_cell("honest_answer", _scale("honest")),
              grade_cell("honest", cell_source("scale_honest"))]
    result = run_two(notebook(*cells), trusted_kernel)
    got = {gid: [(o.ename, o.evalue) for o in c.outputs if o.output_type == "error"]
           for gid, c in graded_cells(result.nb).items()}
    assert got.pop("honest") == []
    assert {gid: e[0][0] for gid, e in got.items()} == {
        "exit": "StudentCodeError", "interrupt": "StudentCodeError", "pickle": "StudentCodeError",
        "object": "StudentCodeError", "huge": "StudentKernelError", "garbage": "StudentKernelError"}
    assert all(r.student == "ok" for r in result.tests)
