"""Feedback after hand grading (issue 21, item 2): ``dp-course feedback OUTPUT`` and nbgrader's own feedback.

A toy class (alice: full solution; carol: a wrong Exercise 2) is graded once; then, as an instructor would:

* before hand grading, each page says the written answer is still to be marked (no "0.0 / 2.0" for it);
* pages load MathJax from a copy beside them (no CDN, no ``http(s)://`` script);
* a hand mark and a comment set with nbgrader's ``Gradebook`` API reach alice's page with ``dp-course feedback``,
  which starts no kernel (kernel start-up and nbclient's execution are patched to fail), leaves carol's unchanged
  page and every autograded notebook alone, and writes ``grades.csv`` and the report from the gradebook;
* no page holds a hidden test line;
* ``nbgrader generate_feedback`` run in the course folder, and the call Formgrader's *Generate Feedback* button
  makes (``NbGraderAPI.generate_feedback`` with the course's configuration, as nbgrader's
  ``server_extensions/formgrader/apihandlers.py`` does), strip the hidden tests too;
* a regenerated page that would still show a hidden line becomes the score-only summary, flagged in the report;
* one :class:`~autograder.feedback.feedback_render.FeedbackRenderer` (the worker's, built once) writes, submission after
  submission, byte for byte the pages nbgrader's ``generate_feedback`` writes, with one exporter for all.
"""

from __future__ import annotations

import csv
import json
import io
import re
from pathlib import Path

import jupyter_client
import nbformat
import nbclient
import pytest
from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

from adversarial import hostile
from autograder.course import cells, course
from autograder import cli, demo
from autograder.feedback import feedback
from autograder.run.feedback_refresh import INDEX, refresh_feedback
from autograder.feedback.feedback_render import FeedbackRenderer, MemoisedHTMLExporter
from autograder.run.grading import grade
from autograder.course.limits import Limits
from autograder.course.offline_maths import MATHJAX_CONFIG
from autograder.feedback.pending_hand_grading import PENDING_NOTE
from autograder.feedback.withhold_hidden_outputs import HIDDEN_FAILED
from autograder.run.results import GradeRun
from autograder.course.settings import FEEDBACK_STEPS, course_config

pytestmark = pytest.mark.xdist_group("grading-feedback")  # shares module fixtures: one xdist worker
NAME = demo.SYNTHETIC_NAME
LIMITS = Limits(cell_timeout=10, notebook_timeout=60)
WRONG_EX2 = "def rr_keep_probability(epsilon):\n    return 0.5"   # passes the visible test, fails hidden ones
HIDDEN_CODE = ["laplace_scale(3.0, 0.25)", "rr_keep_probability(math.log(3.0))", "np.arange(10), 6.5"]
COMMENT = "Good: now name the neighbouring datasets too (Zoë's remark in class)."

Graded = tuple[Path, GradeRun]


@pytest.fixture(scope="module")
def graded(toy: hostile.Toy, tmp_path_factory: pytest.TempPathFactory, grading_sandbox: str) -> Graded:
    base = tmp_path_factory.mktemp("feedback")
    hostile.write_notebook(base / "subs" / f"alice_{NAME}.ipynb", toy.full)
    hostile.write_notebook(base / "subs" / f"carol_{NAME}.ipynb", cells.set_answer(toy.full, "ex2_answer", WRONG_EX2))
    run = grade(base / "subs", base / "out", solutions_dir=toy.solutions, workers=1, limits=LIMITS, progress=False,
                sandbox_mode=grading_sandbox)
    return run.output_dir, run


def _page(out: Path, student: str) -> Path:
    return out / "feedback" / student / NAME / f"{NAME}.html"


def _no_hidden_test(out: Path, html: str, who: str) -> None:
    hidden = feedback.hidden_test_lines(out / "course")[NAME][NAME]
    assert len(hidden) == 4
    assert feedback.leaked_hidden_lines(html, hidden) == [], who
    assert not any(code in html for code in HIDDEN_CODE), who
    assert "BEGIN HIDDEN TESTS" not in html and "HIDDEN-TOKEN-EX1" not in html, who


def _scripts(html: str) -> list[str]:
    return re.findall(r"<script[^>]*\bsrc\s*=\s*[\"']([^\"']*)[\"']", html)


def _offline(page: Path) -> None:
    html = page.read_text()
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", html, re.I), page
    (src,) = _scripts(html)
    assert src.endswith(f"MathJax.js?config={MATHJAX_CONFIG}"), src
    mathjax = (page.parent / src.split("?")[0]).resolve()
    assert mathjax.is_file() and mathjax.stat().st_size > 10_000, mathjax
    for name in MATHJAX_CONFIG.split(","):
        assert (mathjax.parent / "config" / f"{name}.js").is_file(), name
    # the packaged MathJax ships the STIX-Web fonts only: fast preview and assistive MathML (which fetch the TeX
    # fonts, a 404 offline) are off, as on the course site, and every file the page names is there beside it
    configs = re.findall(r'<script type="text/x-mathjax-config">(.*?)</script>', html, re.S)
    (config,) = [c for c in configs if "HTML-CSS" in c]      # the kit's (nbconvert's own sets the TeX input only)
    assert re.search(r'"fast-preview":\s*\{disabled:\s*true\}', config), config
    assert re.search(r"AssistiveMML:\s*\{disabled:\s*true\}", config) and "CHTMLpreview: false" in config, config
    assert 'webFont: "STIX-Web"' in config and "availableFonts: []" in config, config
    assert not any(re.search(r"(webFont|font)\s*:\s*\"(?!STIX-Web)", c) for c in configs), configs
    fonts = mathjax.parent / "fonts" / "HTML-CSS"
    assert (fonts / "STIX-Web").is_dir() and not (fonts / "TeX").exists(), sorted(p.name for p in fonts.iterdir())
    for ref in re.findall(r"\b(?:src|href)\s*=\s*[\"']([^\"'#][^\"']*)[\"']", html):
        assert not re.match(r"(https?:)?//", ref), ref
        if not ref.startswith(("data:", "mailto:")):
            assert (page.parent / ref.split("?")[0]).resolve().is_file(), ref
    # every way a page is made (dp-course grade / feedback, nbgrader generate_feedback, Formgrader's button)
    # carries the policy that forbids inline scripts and the network (issue 27 item 3)
    (meta,) = [m for m in re.findall(r"<meta\b[^>]*>", html) if 'http-equiv="Content-Security-Policy"' in m]
    assert "content=\"default-src 'none'; script-src 'self' 'unsafe-eval';" in meta, page


def test_a_page_before_hand_grading_says_what_is_still_to_be_marked(graded: Graded) -> None:
    out, run = graded
    for student in ("alice", "carol"):
        html = _page(out, student).read_text()
        assert html.count(PENDING_NOTE) == 2, student        # at the top and below the answer
        assert "Still to be marked by hand" in html and "<code>q4_answer</code> (2 points)" in html
        assert "Written response" not in html                  # no "(Score: 0.0 / 2.0)" in the contents
        answer = html[html.index('name="comment-q4_answer"'):]
        answer = answer[:answer.index(PENDING_NOTE)]
        assert "Score:" not in answer, student                 # nor in the answer's heading
        _no_hidden_test(out, html, student)


def test_pages_render_maths_offline(graded: Graded) -> None:
    out, run = graded
    for student in ("alice", "carol"):
        _offline(_page(out, student))
    summary = feedback.fallback_feedback("eve", NAME, NAME, {"ex1_unit": (1.0, 1.0), "q4_answer": (None, 2.0)}, [])
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", summary)
    assert "Still to be marked by hand" in summary and f"q4_answer. {PENDING_NOTE}" in summary
    marked = feedback.fallback_feedback("eve", NAME, NAME, {"ex1_unit": (1.0, 1.0), "q4_answer": (1.5, 2.0)}, [])
    assert "Still to be marked" not in marked and PENDING_NOTE not in marked


def _forbid_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("dp-course feedback must not start a kernel or execute a notebook")

    monkeypatch.setattr(jupyter_client.KernelManager, "start_kernel", refuse)
    monkeypatch.setattr(jupyter_client.AsyncKernelManager, "start_kernel", refuse)
    monkeypatch.setattr(nbclient.NotebookClient, "execute", refuse)
    monkeypatch.setattr(nbclient.NotebookClient, "async_execute", refuse)


def _mark(out: Path, student: str, score: float, comment: str) -> None:
    with Gradebook(f"sqlite:///{out / 'course' / 'gradebook.db'}") as gb:
        grade_row = gb.find_grade("q4_answer", NAME, NAME, student)
        grade_row.manual_score = score
        grade_row.needs_manual_grade = False
        gb.find_comment("q4_answer", NAME, NAME, student).manual_comment = comment
        gb.db.commit()


def _stamps(out: Path) -> dict[str, int]:
    files = [*(out / "feedback").glob("*/*/*.html"), *(out / "course" / "autograded").rglob("*.ipynb")]
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in files}


def test_hand_marks_and_comments_reach_the_page_without_re_execution(graded: Graded, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out, run = graded
    _forbid_execution(monkeypatch)
    assert (out / "feedback" / INDEX).is_file()               # dp-course grade recorded what its pages show
    before = _stamps(out)
    nothing = refresh_feedback(out)
    assert nothing.regenerated == [] and nothing.unchanged == [f"alice/{NAME}", f"carol/{NAME}"]
    assert _stamps(out) == before                             # unchanged pages are not rewritten

    _mark(out, "alice", 1.5, COMMENT)
    assert cli.main(["feedback", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 submission(s) regenerated, 1 unchanged" in printed and "grades:" in printed
    alice = next(r for r in run.results if r.student == "alice")
    alice_row = next(line for line in printed.splitlines() if line.startswith("alice "))
    assert alice_row.split()[:3] == ["alice", NAME, f"{alice.score + 1.5:g}"]   # the console follows the gradebook
    after = _stamps(out)
    changed = {k for k in before if after[k] != before[k]}
    assert changed == {f"feedback/alice/{NAME}/{NAME}.html"}  # carol's page and every autograded notebook kept

    html = _page(out, "alice").read_text()
    assert PENDING_NOTE not in html and "Still to be marked" not in html
    answer = html[html.index('name="comment-q4_answer"'):]
    assert re.search(r"Score: 1\.5 / 2\.0", answer[:2000]), answer[:2000]
    assert "Zoë&#39;s remark in class" in html or "Zoë's remark in class" in html
    assert "Written response</a> (Score: 1.5 / 2.0)" in html
    _offline(_page(out, "alice"))
    for student in ("alice", "carol"):
        _no_hidden_test(out, _page(out, student).read_text(), student)
    assert _page(out, "carol").read_text().count(PENDING_NOTE) == 2

    # grades.csv, the report and the recorded results follow the gradebook
    table = csv.DictReader(io.StringIO((out / "grades.csv").read_text()))
    rows = {r["student_id"]: float(r["raw_score"]) for r in table}
    with Gradebook(f"sqlite:///{out / 'course' / 'gradebook.db'}") as gb:
        assert rows == {s: float(gb.find_submission(NAME, s).score) for s in ("alice", "carol")}
    assert rows["alice"] == alice.score + 1.5
    assert f"| alice | {NAME} | {rows['alice']:g} |" in (out / "report.md").read_text()

    everything = refresh_feedback(out, everything=True)
    assert everything.regenerated == [f"alice/{NAME}", f"carol/{NAME}"] and everything.summaries == []


def test_nbgrader_generate_feedback_in_the_course_strips_hidden_tests(graded: Graded) -> None:
    out, run = graded
    crs = out / "course"
    steps = PyFileConfigLoader("nbgrader_config.py", path=str(course.CONFIG_FILE.parent)).load_config()
    assert steps.GenerateFeedback.preprocessors == FEEDBACK_STEPS  # the course and the grader agree
    course.nbgrader(["generate_feedback", NAME, "--force"], cwd=crs, timeout=600)
    for student in ("alice", "carol"):
        page = crs / "feedback" / student / NAME / f"{NAME}.html"
        html = page.read_text()
        assert "hidden tests are not shown" in html, student
        _no_hidden_test(out, html, student)
        _offline(page)
    carol = (crs / "feedback" / "carol" / NAME / f"{NAME}.html").read_text()
    assert HIDDEN_FAILED in carol and "HIDDEN-TOKEN-EX2" not in carol  # a failed hidden test: its verdict, no message


def test_formgraders_generate_feedback_button_strips_hidden_tests(graded: Graded) -> None:
    """The button posts to ``GenerateFeedbackHandler``, which calls ``NbGraderAPI.generate_feedback(assignment,
    student)`` with the server's configuration: the course's ``nbgrader_config.py``."""
    out, run = graded
    crs = out / "course"
    page = crs / "feedback" / "carol" / NAME / f"{NAME}.html"
    page.unlink(missing_ok=True)
    config = course_config(crs)
    result = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config).generate_feedback(NAME, "carol")
    assert result["success"], result.get("error")
    html = page.read_text()
    assert "hidden tests are not shown" in html and HIDDEN_FAILED in html and "HIDDEN-TOKEN-EX2" not in html
    _no_hidden_test(out, html, "carol")
    _offline(page)


def test_one_renderer_writes_the_pages_generate_feedback_writes(graded: Graded) -> None:
    """The worker's renderer builds nbgrader's exporter once and reuses it; its pages are nbgrader's own."""
    out, run = graded
    # the grading run timed the pages its worker rendered, next to the grading (the benchmark's measure)
    assert run.timings["worker_feedback"] > 0 and run.timings["worker_autograde"] > 0, run.timings
    crs = out / "course"
    config = course_config(crs)
    renderer = FeedbackRenderer(CourseDirectory(config=config), config)
    pages = {}
    exporters = set()
    remembered = []
    for student in ("alice", "carol", "alice"):
        result = renderer.render(NAME, student)
        assert result["success"], result.get("error")
        exporters.add(id(renderer.converter.exporter))
        pages[student] = _page(crs, student).read_bytes()
        exporter = renderer.converter.exporter
        assert isinstance(exporter, MemoisedHTMLExporter)
        remembered.append((len(exporter.highlighted), len(exporter.markdown), len(exporter.cleaned)))
    assert len(exporters) == 1  # built by the first page, reused by the next two
    # the fragments of the instructor's cells were rendered once: alice's second page needed nothing new
    assert min(remembered[0]) > 0 and remembered[2] == remembered[1], remembered
    assert b"hidden tests are not shown" in pages["carol"] and pages["alice"] != pages["carol"]
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for student in ("alice", "carol"):
        _page(crs, student).unlink()
        result = api.generate_feedback(NAME, student)
        assert result["success"], result.get("error")
        assert _page(crs, student).read_bytes() == pages[student], student
    failed = renderer.render("no_such_lecture", "alice")   # nbgrader's failure is reported, not raised
    assert not failed["success"] and "no_such_lecture" in failed["error"] + failed["log"]
    assert renderer.render(NAME, "carol")["success"]        # and the renderer goes on


def test_feedback_of_a_folder_without_a_gradebook_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["feedback", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "OUTPUT must be the output folder of dp-course grade" in err and "nowhere" in err


def test_a_page_that_would_show_a_hidden_line_is_replaced_by_the_summary(graded: Graded) -> None:
    """Every regenerated page is checked before it is published: a hidden line that reached the notebook
    outside a hidden-test region (here the instructor's locked question text, which the stripping does not touch,
    quoting one) is caught."""
    out, run = graded
    autograded = out / "course" / "autograded" / "carol" / NAME / f"{NAME}.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    hidden = feedback.hidden_test_lines(out / "course")[NAME][NAME]
    question = nb.cells[hostile.cell_index(nb, "q4_text")]
    question.source += f"\n\nFor instance: `{hidden[0]}`"
    autograded.chmod(0o644)  # graded notebooks are kept read-only; the test plays the one who changes it anyway
    nbformat.write(nb, autograded)
    done = refresh_feedback(out)
    assert done.regenerated == [f"carol/{NAME}"]                     # its digest changed with its notebook
    assert done.summaries == [f"feedback/carol/{NAME}/{NAME}.html"]
    html = _page(out, "carol").read_text()
    assert f"Feedback for carol: {NAME} / {NAME}" in html and "hidden test code was found" in html
    _no_hidden_test(out, html, "carol")
    state = json.loads((out / "state.json").read_text())["submissions"][f"carol/{NAME}"]["result"]
    assert [e["kind"] for e in state["events"]].count("feedback_fallback") == 1
    assert "feedback replaced by a summary" in (out / "report.md").read_text()
