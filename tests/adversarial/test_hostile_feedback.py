"""Issue 27 items 2 and 3, graded end to end by ``dp-course grade`` with default options on the toy assignment.

Item 2 (hidden tests' inputs and expectations never reach the student's page):

* ``recorder`` -- a full solution whose functions record every argument they receive and print it, plain, base64,
  hex, rot13 and reversed, both when called and from a later answer cell (state captured during the hidden
  tests);
* ``raiser`` -- its function raises an exception whose message carries the arguments (all encodings) when a
  hidden test calls it (the trusted kernel sends that message back as the test's error); ``raiser_plain`` is the
  same notebook with a message that carries nothing;
* ``wrong`` -- a wrong answer failing a hidden test whose message quotes the expected value (the fixture makes
  the toy's hidden message do so).

Item 3 (no student markup runs in any page): ``marker`` -- a written answer with ``<script>``, ``onerror=``, a
tracking image, ``javascript:`` links and fake bold text, code that publishes HTML, JavaScript and a forged PNG,
and a flagged line of code carrying markup into the report.

Each scores what the same notebook without the trick scores; the pages are parsed with ``html.parser``.
"""

from __future__ import annotations

import contextlib
import re
import textwrap
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from leak_detector import decodings
from playwright.sync_api import sync_playwright

from adversarial import hostile
from autograder.course import cells
from autograder import demo
from autograder.course.course import make_course
from autograder.run.grading import grade
from autograder.feedback.withhold_hidden_outputs import HIDDEN_FAILED, HIDDEN_PASSED, LATER_WITHHELD

pytestmark = pytest.mark.xdist_group("adversarial")
NAME = demo.SYNTHETIC_NAME
EX1_SCALING_FAILS = {**hostile.FULL, "ex1_scaling": 0.0}

# What the hidden tests pass (toy assignment): laplace_scale(3.0, 0.25), rr_keep_probability(+-log 3),
# count_above(np.arange(10), 6.5); each recorded as "ARGS" + repr(args) by the hostile functions.
HIDDEN_INPUTS = ["ARGS(3.0, 0.25)", "ARGS(1.0986122886681098,)", "ARGS(-1.0986122886681098,)", "6.5)"]
CHROMIUM = Path("/usr/bin/chromium")  # as in tests/test_feedback_leaks.py
EXPECTED_MARK = "EXP[12.0]"  # the hidden message of ex1_scaling quotes its expected value so (see the fixture)

ENCODE = textwrap.dedent("""
    import base64 as _b64, codecs as _codecs
    def _shout(text):
        print(text, _b64.b64encode(text.encode()).decode(), text.encode().hex(), _codecs.encode(text, 'rot13'),
              text[::-1])
        return f"{text} {_b64.b64encode(text.encode()).decode()} {text.encode().hex()} " \\
               f"{_codecs.encode(text, 'rot13')} {text[::-1]}"
    SEEN = []
    """)

RECORDER_EX1 = ENCODE + textwrap.dedent("""
    def laplace_scale(sensitivity, epsilon):
        SEEN.append(_shout("ARGS" + repr((sensitivity, epsilon))))
        return sensitivity / epsilon
    """)
RECORDER_EX2 = textwrap.dedent("""
    import math
    def rr_keep_probability(epsilon):
        SEEN.append(_shout("ARGS" + repr((epsilon,))))
        return math.exp(epsilon) / (1 + math.exp(epsilon))
    print(SEEN)
    """)
RECORDER_EX3 = textwrap.dedent("""
    import numpy as np
    def count_above(values, threshold):
        SEEN.append(_shout("ARGS" + repr((list(values), threshold))))
        return int(np.sum(np.asarray(values) > threshold))
    print(SEEN)
    """)
RAISER_EX1 = ENCODE + textwrap.dedent("""
    def laplace_scale(sensitivity, epsilon):
        if (sensitivity, epsilon) != (1.0, 1.0):
            raise ValueError(MESSAGE)
        return sensitivity / epsilon
    """)
MARKUP = ("Less noise. <script>alert('md-script')</script> <img src=x onerror=\"alert('md-onerror')\"> "
          "<img src=\"http://127.0.0.1:9/track.png\"> [click me](javascript:alert('md-link')) "
          "<a href=\"javascript:alert('md-a')\">a</a> <svg onload=\"alert('md-svg')\"></svg> **fake bold**")
MARKER_EX2 = textwrap.dedent("""
    from IPython.display import HTML, Javascript, display
    display(HTML("<script>alert('out-script')</script><b onmouseover=\\"alert('out-handler')\\">hi</b>"))
    display(Javascript("alert('out-js')"))
    display({'image/png': '"><script>alert(\\'out-png\\')</script>', 'text/plain': 'png'}, raw=True)
    display({'image/svg+xml': '<svg onload="alert(1)"></svg>'}, raw=True)
    _report = "socket <img src=http://127.0.0.1:9/r.png> **report bold** [rlink](http://127.0.0.1:9/)"
    """)


def _nb(nb: nbformat.NotebookNode) -> bytes:
    return nbformat.writes(nb).encode()


def _quote_expected(solutions: Path) -> None:
    """The toy's hidden test of exercise 1 with a message that quotes its expected value (as hidden tests may)."""
    path = solutions / NAME / f"{NAME}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = nb.cells[hostile.cell_index(nb, "ex1_scaling")]
    old = '"hidden check HIDDEN-TOKEN-EX1 failed"'
    assert old in cell.source
    cell.source = cell.source.replace("assert np.isclose(laplace_scale(3.0, 0.25), 12.0), " + old,
                                      "_expected = 12.0\nassert np.isclose(laplace_scale(3.0, 0.25), _expected), "
                                      "f'hidden check HIDDEN-TOKEN-EX1 failed: expected EXP[{_expected}]'")
    assert "EXP[" in cell.source
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("hostile-feedback")
    sols = base / "solutions"
    demo.write_synthetic_assignment(sols)
    _quote_expected(sols)
    crs = make_course(base / "release-course", [NAME], solutions_dir=sols)
    full, _release = hostile.make_full(crs, sols)
    subs = base / "subs"
    subs.mkdir()
    message = '_shout("ARGS" + repr((sensitivity, epsilon)))'
    nbs = {
        "alice": full,
        "recorder": cells.set_answer(cells.set_answer(cells.set_answer(
            full, "ex1_answer", RECORDER_EX1), "ex2_answer", RECORDER_EX2), "ex3_answer", RECORDER_EX3),
        "raiser": cells.set_answer(full, "ex1_answer", RAISER_EX1.replace("MESSAGE", message)),
        "raiserplain": cells.set_answer(full, "ex1_answer", RAISER_EX1.replace("MESSAGE", '"no"')),
        "wrong": cells.set_answer(full, "ex1_answer", hostile.WRONG_EX1),
        "marker": cells.set_answer(cells.set_answer(full, "q4_answer", MARKUP), "ex2_answer", MARKER_EX2,
                                   mode="append"),
    }
    for student, nb in nbs.items():
        (subs / f"{student}_{NAME}.ipynb").write_bytes(_nb(nb))
    run = grade(subs, base / "out", solutions_dir=sols, workers=1, progress=False, sandbox_mode=grading_sandbox)
    results = {r.student: r for r in run.results}
    yield {"run": run, "results": results,
           "pages": {s: (run.output_dir / r.feedback[0]).read_text() for s, r in results.items()}}


def _scores(result: Any) -> dict[str, float]:
    return {k: v[0] for k, v in result.exercises.items() if k != "q4_answer"}


class _Page(HTMLParser):
    """A page's scripts, event handlers, URLs, visible text and Content-Security-Policy."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.handlers: list[str] = []
        self.urls: list[str] = []
        self.csp: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.handlers += [f"{tag} {k}" for k in a if k.lower().startswith("on")]
        self.urls += [str(v).strip() for k, v in attrs if k in ("src", "href", "action", "data", "xlink:href")]
        if tag == "meta" and str(a.get("http-equiv", "")).lower() == "content-security-policy":
            self.csp.append(str(a.get("content")))
        if tag == "script":
            self.scripts.append((a, ""))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._in is None:
            self.text.append(data)


def _shows(page: str, needles: list[str]) -> list[str]:
    text = " ".join(_Page(page).text)
    return sorted({f"{enc}: {n}" for enc, view in decodings(text) for n in needles if n in view})


@pytest.mark.parametrize(("student", "like"), [("recorder", "alice"), ("raiser", "raiserplain"),
                                               ("marker", "alice")])
def test_trick_scores_what_the_notebook_without_it_scores(graded: dict[str, Any], student: str, like: str) -> None:
    got = graded["results"]
    assert _scores(got[student]) == _scores(got[like]), (got[student].events, got[like].events)


def test_baselines_score_as_declared(graded: dict[str, Any]) -> None:
    got = graded["results"]
    assert _scores(got["alice"]) == hostile.FULL
    assert _scores(got["raiserplain"]) == EX1_SCALING_FAILS
    assert _scores(got["wrong"]) == hostile.EX1_BROKEN


@pytest.mark.parametrize("student", ["recorder", "raiser"])
def test_no_hidden_input_on_the_page_plain_or_encoded(graded: dict[str, Any], student: str) -> None:
    page = graded["pages"][student]
    assert _shows(page, HIDDEN_INPUTS) == []
    assert HIDDEN_PASSED in page or HIDDEN_FAILED in page


def test_the_recorder_would_show_the_inputs_without_the_rule(graded: dict[str, Any]) -> None:
    """The trick works: the graded notebook (before feedback) holds the hidden inputs, encoded."""
    out = graded["run"].output_dir
    graded_nb = (out / "course" / "autograded" / "recorder" / NAME / f"{NAME}.ipynb").read_text()
    assert _shows(graded_nb, ["ARGS(3.0, 0.25)"]), "the recorder's later cell printed no hidden input"
    assert LATER_WITHHELD in graded["pages"]["recorder"]


def test_a_failing_hidden_test_shows_no_message(graded: dict[str, Any]) -> None:
    page = graded["pages"]["wrong"]
    assert _shows(page, [EXPECTED_MARK, "HIDDEN-TOKEN"]) == []
    assert HIDDEN_FAILED in page
    assert "laplace_scale(1, 1) should be 1" in page  # a visible test keeps its message


def _foreign_scripts(page: _Page) -> list[tuple[dict[str, str | None], str]]:
    """Scripts other than the template's: MathJax from the local copy and its configuration blocks."""
    return [(a, t) for a, t in page.scripts
            if not (str(a.get("src", "")).startswith("../../_static/mathjax/MathJax.js")
                    or (a.get("type") == "text/x-mathjax-config" and "alert" not in t))]


def test_no_student_markup_runs_in_the_feedback(graded: dict[str, Any]) -> None:
    page = _Page(graded["pages"]["marker"])
    assert _foreign_scripts(page) == []
    assert page.handlers == []
    assert [u for u in page.urls if ":" in u.split("/")[0] and not u.startswith("data:image/")] == []
    assert len(page.csp) == 1
    csp = dict(part.strip().split(" ", 1) for part in page.csp[0].split(";"))
    assert csp["default-src"] == "'none'" and "'unsafe-inline'" not in csp["script-src"]
    assert "http" not in page.csp[0] and "*" not in page.csp[0]
    text = " ".join(page.text)
    assert "fake bold" in text  # the answer is shown, as text
    assert "<b>fake bold" not in graded["pages"]["marker"]


def test_every_page_has_the_policy(graded: dict[str, Any]) -> None:
    for student, html_page in graded["pages"].items():
        assert len(_Page(html_page).csp) == 1, student
    run = graded["run"]
    report = _Page(run.report_html.read_text())
    assert report.csp and report.scripts == [] and report.handlers == []
    assert [u for u in report.urls if ":" in u.split("/")[0]] == []


def test_report_md_escapes_student_strings(graded: dict[str, Any]) -> None:
    md = graded["run"].report_md.read_text()
    section = md.split(f"### marker / {NAME}:", 1)
    assert len(section) == 2, "the flagged line of marker is in the report"
    body = section[1].split("### ", 1)[0]
    assert "report bold" in body
    assert re.findall(r"(?<!\\)(?:<img|\*\*report|\[rlink)", body) == []   # every one escaped
    assert "\\<img src=http://127.0.0.1:9/r.png\\>" in body and "\\*\\*report bold\\*\\*" in body


def test_the_page_in_a_browser_runs_nothing_and_still_typesets(graded: dict[str, Any]) -> None:
    """The hostile page in Chromium, no name resolving: no dialog opens (every payload calls ``alert``), nothing
    is requested but local files, and MathJax (from the local copy, under the page's policy) typesets the
    page's formulas without an error."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no browser: {CHROMIUM} is missing (python3 run.py test installs Debian's chromium)")
    run = graded["run"]
    page = run.output_dir / graded["results"]["marker"].feedback[0]
    dialogs: list[str] = []
    asked: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            tab = browser.new_page()
            tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            tab.on("request", lambda r: asked.append(r.url))
            tab.goto(page.as_uri())
            tab.wait_for_function("window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && "
                                  "document.querySelectorAll('.MathJax').length > 0", timeout=120_000)
            tab.hover("body")
            for selector in ("b", "a", "img", "svg"):
                for handle in tab.query_selector_all(selector):
                    with contextlib.suppress(Exception):
                        handle.hover(timeout=2000)
            typeset = tab.evaluate("document.querySelectorAll('.MathJax').length")
            errors = tab.evaluate("Array.from(document.querySelectorAll('.MathJax_Error, merror'))"
                                  ".map(e => e.textContent)")
        finally:
            browser.close()
    assert dialogs == []
    assert typeset > 0 and errors == [], (typeset, errors[:5])
    assert [u for u in asked if not u.startswith(("file:", "about:", "data:"))] == []
