"""The student's first hour in a real browser: JupyterLab (``run.py lab --headless``) driven by Debian's chromium.

For every notebook in ``notebooks/`` and ``solutions/`` (found afresh on each run, so a new lecture is covered
the day it lands): Run All in JupyterLab; Run All reaches the last cell; errors only in cells tagged
``raises-exception`` (none in a solution); every drawing cell has its figure, rendered in the page; every
explorer renders as widgets and redraws after a slider move; MathJax renders without errors; no console
errors; no request leaves the loopback.  Also: the landing page, and ``dp-course check`` in a JupyterLab
terminal.  The tests form two xdist groups of about equal length (``browser-0``, ``browser-1``): on two
workers each has its own server and browser and the halves run side by side; on one worker (or without xdist)
one server and one browser serve them all, notebooks in sequence.

Screenshots go to ``artifacts/browser/`` (``DP_COURSE_ARTIFACTS`` moves it; not committed).
Without chromium (``/usr/bin/chromium``, installed by ``python3 run.py test`` where it may) the module skips
with the reason; with ``DP_COURSE_CI=1`` that is a failure.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbformat
import pytest

from _browser_lab import (ARTIFACTS, CHROMIUM, CHROMIUM_NEEDED, PLAYWRIGHT_NEEDED, Console, course_notebooks, launch,
                          open_notebook, require, run_all_and_save, run_all_problems)
from _lab_server import LabServer, copy_course

pytestmark = pytest.mark.slow

HALVES = 2
"""The tests are split into this many xdist groups (see the module docstring)."""


def _half(i: int) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"browser-{i % HALVES}")


NOTEBOOKS = course_notebooks()
# notebooks alternate between the halves; the landing page, the two fixtures and the terminal (together about
# one notebook's time) go with the half that has fewer notebooks
NOTEBOOK_PARAMS = [pytest.param(rel, marks=_half(i)) for i, rel in enumerate(NOTEBOOKS)]
FIXTURES = Path(__file__).resolve().parent / "fixtures"




@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab server on a copy of the course and one chromium page for the module's tests on this
    worker."""
    require(CHROMIUM_NEEDED, CHROMIUM.exists())
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(PLAYWRIGHT_NEEDED, False)
    work = tmp_path_factory.mktemp("browser")
    course = copy_course(work / "course")
    for fixture in FIXTURES.glob("*.ipynb"):
        (course / "fixtures").mkdir(exist_ok=True)
        (course / "fixtures" / fixture.name).write_bytes(fixture.read_bytes())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = LabServer(root_dir=course, work=work)
    server.start()
    try:
        with sync_playwright() as pw:
            context = launch(pw, work / "profile")
            console = Console()
            console.attach(context, server.base)
            page = context.new_page()
            console.watch(page)
            page.set_default_timeout(30_000)
            yield server, page, console
            context.close()
    finally:
        server.stop()


def _slug(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", rel.removesuffix(".ipynb")).strip("-")


def _assert_clean(console: Console, what: str) -> None:
    errors, external = console.take()
    assert not external, f"{what}: requests beyond the loopback (aborted): {external[:5]}"
    assert not errors, f"{what}: browser console errors: {errors[:5]}"


@_half(len(NOTEBOOKS))
def test_landing_page_renders_and_hides_instructor_tools(lab):
    server, page, console = lab
    page.goto(f"{server.base}/?token={server.token}")  # what `run.py lab` opens: the server's default URL
    readme = page.locator(".jp-RenderedMarkdown").filter(has_text="Lectures").first
    readme.wait_for(timeout=90_000)
    page.wait_for_timeout(500)
    page.screenshot(path=ARTIFACTS / "landing.png")
    links = readme.locator("a[href*='.ipynb']")
    assert links.count() >= 1, "the landing page shows no link to a lecture"
    assert page.locator(".jp-FileEditor").count() == 0, "notebooks/README.md opened as Markdown source"
    for tool in ("Nbgrader", "Formgrader", "Assignments", "Courses"):
        assert page.get_by_role("menuitem", name=tool, exact=True).count() == 0, f"students see {tool}"
    assert page.locator("[title='Create Assignment'], #create_assignment").count() == 0
    links.first.click()
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=90_000)
    page.wait_for_url(re.compile(r".*/lab/tree/notebooks/01_[^/]+/01_[^/]+\.ipynb"), timeout=10_000)
    server.shutdown_kernels()
    _assert_clean(console, "landing page")


def _log_timing(rel: str, **values) -> None:
    """One JSON line per notebook in artifacts/browser/timings.jsonl (Run All and redraw times)."""
    with open(ARTIFACTS / "timings.jsonl", "a") as f:
        f.write(json.dumps({"notebook": rel, **values}) + "\n")


def _explorers(page):
    """Output areas holding a slider widget and a figure: the explorers (and any ``interact``)."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output:has(.widget-slider)")


def _move_slider_and_wait_for_redraw(page, area) -> float:
    img = area.locator("img").first
    img.wait_for(timeout=30_000)
    before = img.get_attribute("src")
    handle = area.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    value = area.locator(".widget-slider .widget-readout").first.inner_text()
    handle.focus()
    page.keyboard.press("ArrowRight")
    if area.locator(".widget-slider .widget-readout").first.inner_text() == value:
        page.keyboard.press("ArrowLeft")  # the slider was at its maximum
        page.keyboard.press("ArrowLeft")
    started = time.monotonic()
    page.wait_for_function("([el, before]) => { const i = el.querySelector('img'); return i && i.src !== before; }",
                           arg=[area.element_handle(), before], timeout=30_000)
    return time.monotonic() - started


@pytest.mark.parametrize("rel", NOTEBOOK_PARAMS)
def test_run_all_in_jupyterlab(lab, rel):
    server, page, console = lab
    slug = _slug(rel)
    open_notebook(page, server, rel)
    seconds = run_all_and_save(page)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first
    page.screenshot(path=ARTIFACTS / f"{slug}-end.png")
    problems = run_all_problems(nbformat.read(server.root_dir / rel, as_version=4),
                                solution=rel.startswith("solutions/"))
    # figures: every image the notebook holds is rendered in the page
    saved = nbformat.read(server.root_dir / rel, as_version=4)
    n_images = sum("image/png" in o.get("data", {}) for c in saved.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    rendered = panel.locator(".jp-OutputArea-output img").count()
    if rendered < n_images:
        problems.append(f"{n_images} figures in the notebook, {rendered} rendered in the page")
    # maths
    page.wait_for_timeout(1000)
    has_maths = any("$" in c.source for c in saved.cells if c.cell_type == "markdown")
    if has_maths and panel.locator("mjx-container").count() == 0:
        problems.append("the Markdown has maths but MathJax rendered none")
    merrors = panel.locator("mjx-merror").all_inner_texts()
    if merrors:
        problems.append(f"MathJax errors: {merrors[:5]}")
    # explorers: widgets, and a redraw after a slider move
    explorers = _explorers(page)
    redraws: list[float] = []
    for i in range(explorers.count()):
        area = explorers.nth(i)
        try:
            latency = _move_slider_and_wait_for_redraw(page, area)
            redraws.append(round(latency, 2))
        except Exception as exc:  # noqa: BLE001 - reported with the others below
            problems.append(f"explorer {i} did not redraw after a slider move: {type(exc).__name__}: {exc}"[:300])
        area.screenshot(path=ARTIFACTS / f"{slug}-explorer{i}.png")
    if "_explorer(" in "".join(c.source for c in saved.cells) and explorers.count() == 0:
        problems.append("the notebook calls an explorer but no slider widget rendered")
    figures = panel.locator(".jp-OutputArea-output:has(img):not(:has(.widget-slider))")
    for i in range(figures.count()):
        figures.nth(i).screenshot(path=ARTIFACTS / f"{slug}-figure{i}.png")
    _log_timing(rel, run_all_seconds=round(seconds, 1), redraw_seconds=redraws, figures=figures.count())
    server.shutdown_kernels()
    errors, external = console.take()
    problems += [f"console error: {e[:300]}" for e in errors]
    problems += [f"request beyond the loopback (aborted): {u}" for u in external]
    assert not problems, f"{rel} in JupyterLab (Run All {seconds:.0f} s):\n  " + "\n  ".join(problems)


@_half(len(NOTEBOOKS))
@pytest.mark.parametrize("fixture,expect", [
    ("stops_early.ipynb", "Run All stopped"),
    ("tagged_exercise.ipynb", None),
])
def test_run_all_check_catches_a_notebook_that_stops_early(lab, fixture, expect):
    """The same procedure on two small notebooks: an untagged raising cell stops Run All (and the check says
    so); the same cell tagged ``raises-exception`` lets Run All reach the end (and the check passes)."""
    server, page, console = lab
    rel = f"fixtures/{fixture}"
    open_notebook(page, server, rel)
    run_all_and_save(page)
    problems = run_all_problems(nbformat.read(server.root_dir / rel, as_version=4), solution=False)
    server.shutdown_kernels()
    console.take()
    if expect is None:
        assert problems == []
    else:
        assert any(expect in p for p in problems), problems


@_half(len(NOTEBOOKS))
def test_dp_course_check_in_a_jupyterlab_terminal(lab):
    """A terminal opened in JupyterLab finds ``dp-course`` (the server was not started from a terminal)."""
    server, page, console = lab
    page.goto(f"{server.base}/lab?reset&token={server.token}")
    page.get_by_role("menuitem", name="File", exact=True).click()
    page.locator("li.lm-Menu-item[data-type='submenu']", has_text="New").first.click()
    page.locator("li.lm-Menu-item[data-command='terminal:create-new']").first.click()
    term = page.locator(".jp-Terminal").first
    term.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    term.click()
    out = server.work / "check-output.txt"
    page.keyboard.type(f"cd {server.root_dir} && dp-course check notebooks/01_foundations/01_foundations.ipynb "
                       f"> {out} 2>&1; echo \"exit=$?\" >> {out}; cat {out}\n", delay=5)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and "exit=" not in (out.read_text() if out.exists() else ""):
        page.wait_for_timeout(1000)
    page.wait_for_timeout(1500)
    page.screenshot(path=ARTIFACTS / "terminal-dp-course-check.png")
    text = out.read_text() if out.exists() else "(no output file)"
    for t in server.api("GET", "terminals"):
        server.api("DELETE", f"terminals/{t['name']}")
    assert "not found" not in text, text
    m = re.search(r"exit=(\d+)", text)
    assert m and m.group(1) in ("0", "1"), text
    assert "Exercise 1" in text, text
    _assert_clean(console, "terminal")
