"""Submissions and leak detection for the attack tests (imported by ``test_attacks.py`` and ``test_leaks.py``).

Every attack is a submission of its own: the setup cell, an honest exercise (``scale_honest``) with its test,
and the attacked exercise ``scale`` with its test (a visible check and a hidden one).  The attacked answer is
*wrong* (``scale`` should be sensitivity / epsilon), so the attack has something to gain.  The baseline is the
same notebook with the plain wrong answer and no attack.

:func:`leaks` looks for the lines of the test cells, and for the hidden expected value, in a text *and in every
encoding a student could use to smuggle them past a word-for-word filter*: base64, hex, rot13, reversed text,
zlib+base64 (and zlib+hex) – by decoding every token of the text that could be one of these, not by encoding
the lines (an encoded substring depends on its offset and, for zlib, on everything before it).
"""

from __future__ import annotations

import json
from pathlib import Path

from _fixtures import answer_cell, demo_cell, grade_cell, graded_cells, notebook, setup_cell, text
from leak_detector import decodings
from nbformat import NotebookNode

SETUP = ("import math\nimport sys\nfrom fractions import Fraction\nimport numpy as np\nimport numpy._core.numeric\n"
         "from dp_course.divergences import total_variation")

HIDDEN_VALUE = "0.123456789"
"""The hidden test's expected value (only the trusted kernel may ever hold it)."""

TEST = '''
"""{f} is sensitivity / epsilon."""
_expected = 0.25
_got = {f}(1.0, 4.0)
assert {check}, f"{f}(1, 4) should be 0.25, got {{_got}}"
### BEGIN HIDDEN TESTS
_expected = 0.123456789
_got = {f}(0.123456789 * 3, 3.0)
assert {check}, "hidden check of {f} failed"
### END HIDDEN TESTS
'''

HONEST = "def scale_honest(sensitivity, epsilon):\n    return sensitivity / epsilon"
WRONG = "def scale(sensitivity, epsilon):\n    return sensitivity * epsilon"
PLAIN_CHECK = "math.isclose(_got, _expected)"


def cell_source(f: str, check: str = PLAIN_CHECK) -> str:
    return TEST.format(f=f, check=check).strip()


def submission(answer: str, check: str = PLAIN_CHECK, *, before: tuple[str, ...] = (),
               after: tuple[str, ...] = (), checks: dict[str, str] | None = None) -> NotebookNode:
    """Setup, ``before`` (student cells), the honest exercise and its test, ``answer`` (defines ``scale``) and
    its test (grade id ``scale``, with ``check``; or one test per entry of ``checks``: grade id -> check),
    ``after`` (student cells: the last cells of the notebook)."""
    cells = [setup_cell(SETUP)]
    cells += [answer_cell(f"extra_{i}", src) for i, src in enumerate(before)]
    cells += [answer_cell("honest_answer", HONEST), grade_cell("honest", cell_source("scale_honest")),
              answer_cell("scale_answer", answer)]
    cells += [grade_cell(gid, cell_source("scale", c)) for gid, c in (checks or {"scale": check}).items()]
    cells += [demo_cell(src) for src in after]
    return notebook(*cells)


def test_lines(nb: NotebookNode) -> list[str]:
    """Every distinctive line of every test cell (the hidden ones included)."""
    return [line.strip() for cell in graded_cells(nb).values() for line in cell.source.splitlines()
            if len(line.strip()) > 12 and not line.strip().startswith("###")]


def everything_shown(nb: NotebookNode) -> str:
    """All outputs of all cells: what the student sees, and what nbgrader's feedback shows."""
    return "\n".join(text(c) for c in nb.cells)


def leaks(shown: str, nb: NotebookNode) -> list[str]:
    """The test lines (and the hidden expected value) that ``shown`` contains, plain or encoded."""
    wanted = [*test_lines(nb), HIDDEN_VALUE]
    found = []
    for encoding, view in decodings(shown):
        found += [f"{encoding}: {line}" for line in wanted if line in view]
    return sorted(set(found))


def requests_received(log: Path) -> str:
    """Everything the student's kernel received (the recording kernel's log), code and user expressions."""
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert requests, "the recording kernel recorded nothing: the check below would be empty"
    return "\n".join([r.get("code", "") for r in requests]
                     + [v for r in requests for v in (r.get("user_expressions") or {}).values()])


def feedback_errors(nb: NotebookNode) -> dict[str, list[tuple[str, str]]]:
    return {gid: [(o.ename, o.evalue) for o in c.get("outputs", []) if o.output_type == "error"]
            for gid, c in graded_cells(nb).items()}
