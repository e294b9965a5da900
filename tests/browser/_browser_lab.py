"""A course JupyterLab (started by ``run.py lab --headless``) and Debian's chromium, driven by Playwright.

Only loopback traffic: the server listens on 127.0.0.1, chromium runs with its background networking off,
every host name resolves to nothing, and a route handler aborts (and records) any request that is not for
the server.  The server works on a copy of the course (Run All and saving never touch the repository).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import http.server
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from _lab_server import ROOT, LabServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_NEEDED = f"Debian's chromium at {CHROMIUM} (`python3 run.py test` installs it as root or with sudo -n)"
PLAYWRIGHT_NEEDED = "the Python package playwright (dev extra: `python3 run.py setup --dev`)"


def require(what: str, ok: bool) -> None:
    """Skip the browser test with the reason when ``ok`` is false -- a failure in CI (``DP_COURSE_CI=1``),
    where every browser test must run."""
    if ok:
        return
    reason = f"browser test needs {what}"
    if os.environ.get("DP_COURSE_CI") == "1":
        pytest.fail(f"{reason} (required in CI: DP_COURSE_CI=1)")
    pytest.skip(reason)


def playwright_or_skip():
    """Playwright's ``sync_playwright`` once Debian's chromium and the playwright package are both there; else the
    test is skipped with the reason (a failure in CI, see :func:`require`)."""
    require(CHROMIUM_NEEDED, CHROMIUM.exists())
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(PLAYWRIGHT_NEEDED, False)
    return sync_playwright


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


@contextlib.contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """A plain static HTTP server on 127.0.0.1 (a free port) over ``folder``, in a thread; yields its base URL
    (ending in ``/``) and stops it on exit.  For the built site and JupyterLite pages."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


ARTIFACTS = Path(os.environ.get("DP_COURSE_ARTIFACTS", ROOT / "artifacts")) / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--no-pings",
                 # no name resolves (the server is addressed by IP): nothing can leave the loopback
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
TAG = "raises-exception"
# a call that draws: a plot helper, pyplot, an explorer or interact (their figures must be in the notebook)
_DRAW_CALL = re.compile(r"(\w+\.)?plot_\w+|plt\.(show|plot|subplots|figure|hist|bar|imshow|scatter)|"
                        r"(\w+\.)?\w*_explorer|(\w+\.)?interact")


def draws(source: str) -> bool:
    """Does the cell call a drawing function at top level (not merely define a function that draws)?"""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(n, ast.Call) and _DRAW_CALL.fullmatch(ast.unparse(n.func)) for n in ast.walk(stmt)):
            return True
    return False


def course_notebooks(root: Path = ROOT) -> list[str]:
    """Every student and solution notebook of the course, as paths relative to the repository."""
    found = [*sorted((root / "notebooks").glob("*/*.ipynb")), *sorted((root / "solutions").glob("*/*.ipynb"))]
    return [str(p.relative_to(root)) for p in found if ".ipynb_checkpoints" not in p.parts]


@dataclass
class Console:
    """What the page said: console errors, uncaught exceptions, requests that tried to leave the loopback."""

    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)

    def attach(self, context, base: str) -> None:
        def route(r):
            if r.request.url.startswith((base, "data:", "blob:")):
                r.continue_()
            else:
                self.external.append(r.request.url)
                r.abort()

        context.route("**/*", route)

    def watch(self, page) -> None:
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

    def take(self) -> tuple[list[str], list[str]]:
        out = (self.errors[:], self.external[:])
        self.errors.clear()
        self.external.clear()
        return out


def launch(playwright, profile: Path):
    """Debian's chromium (never a downloaded browser) with a fresh profile."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900}, device_scale_factor=1)


def front_page_problem(page, base: str, screenshot: Path) -> tuple[str, float]:
    """Open a JupyterLite site's front page at ``base`` and wait (up to 30 s) for its ``#problem`` message; returns
    the message and the seconds it took, after a screenshot to ``screenshot``."""
    started = time.monotonic()
    page.goto(base, wait_until="load")
    page.wait_for_selector("#problem", state="visible", timeout=30_000)
    waited = time.monotonic() - started
    text = page.inner_text("#problem")
    page.screenshot(path=str(screenshot))
    return text, waited


_STATE = """() => {
  const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')]
    .map(p => p.textContent.trim());
  const ind = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  return {prompts, status: ind ? ind.getAttribute('data-status') : null};
}"""


def wait_run_all(page, timeout: float = 240) -> float:
    """Wait until a Run All has started and finished (no cell queued or running, kernel idle for 2 s)."""
    started = time.monotonic()
    deadline = started + timeout
    stable, seen = 0, False
    while time.monotonic() < deadline:
        st = page.evaluate(_STATE)
        running = any(p in ("[*]:", "[*]") for p in st["prompts"])
        seen = seen or running or any(re.fullmatch(r"\[\d+\]:?", p) for p in st["prompts"])
        stable = stable + 1 if seen and not running and st["status"] == "idle" else 0
        if stable >= 4:
            return time.monotonic() - started
        page.wait_for_timeout(500)
    raise TimeoutError(f"Run All did not finish within {timeout:.0f} s")


def open_notebook(page, server: LabServer, rel: str, timeout: float = 90) -> None:
    """Open ``rel`` in a fresh workspace and wait until its kernel has started and the page is connected."""
    page.goto(f"{server.base}/lab/tree/{rel}?reset&token={server.token}")
    deadline = time.monotonic() + timeout
    while not any(s["path"] == rel and s["kernel"]["execution_state"] == "idle" for s in server.api("GET", "sessions")):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel of {rel} did not start within {timeout:.0f} s")
        page.wait_for_timeout(250)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=30_000)
    page.wait_for_timeout(500)


def run_all_and_save(page) -> float:
    """Run → Run All Cells (the kernel is fresh), then File → Save; returns the Run All's wall time."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    seconds = wait_run_all(page)
    page.get_by_role("menuitem", name="File", exact=True).click()
    page.locator("li.lm-Menu-item[data-command='docmanager:save']").click()
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    return seconds


def run_all_problems(nb: nbformat.NotebookNode, *, solution: bool) -> list[str]:
    """What is wrong with a notebook saved after Run All in JupyterLab.

    - Run All must reach the last code cell (an untagged cell that raises stops it there);
    - an error output is allowed only in a cell tagged ``raises-exception`` (an unanswered exercise), and
      not at all in a solution notebook (a full solution passes its own tests);
    - every cell that draws has a figure (an image, or a widget whose first drawing is an image).
    """
    problems = []
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    missed = [i for i, c in code if c.get("execution_count") is None]
    if missed:
        ran = [i for i, c in code if c.get("execution_count") is not None]
        last = ran[-1] if ran else None
        problems.append(f"Run All stopped at cell {last} of {len(nb.cells)}: {len(missed)} of {len(code)} code "
                        f"cells never ran, from cell {missed[0]} on; a cell that can raise on an unanswered "
                        f"exercise must carry the tag {TAG!r}")
    for i, c in code:
        errors = [o for o in c.get("outputs", []) if o.output_type == "error"]
        if not errors:
            continue
        tagged = TAG in c.get("metadata", {}).get("tags", [])
        if solution or not tagged:
            problems.append(f"cell {i} raised {errors[0].ename}: {errors[0].evalue[:200]}"
                            + ("" if tagged else " (untagged: not an expected unanswered-exercise error)"))
    for i, c in code:
        if c.get("execution_count") is None or not draws(c.source):
            continue
        kinds = {k for o in c.get("outputs", []) for k in o.get("data", {})}
        if not kinds & {"image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json"} and not any(
                o.output_type == "error" for o in c.get("outputs", [])):
            problems.append(f"cell {i} draws but has no figure in its output")
    return problems


# ---- nbgrader's Formgrader (dp-course formgrade) ----------------------------------------------------------

FORMGRADER_READY = "() => window.formgrader && formgrader.grades.loaded && formgrader.comments.loaded"
"""True once a Formgrader grading page has bound its score and comment boxes (typing before that is lost)."""


def open_formgrader(page, server: LabServer) -> None:
    """Log in the way JupyterLab's printed address does (the Formgrader with the token)."""
    page.goto(f"{server.base}/formgrader?token={server.token}")
    page.wait_for_url("**/formgrader/manage_assignments")


def formgrader_students(page, server: LabServer, assignment: str, notebook: str) -> list[str]:
    """The student ids the Formgrader's *Manual Grading* table lists for one notebook, sorted."""
    page.goto(f"{server.base}/formgrader/gradebook/{assignment}/{notebook}")
    page.locator("#main-table tr:has(a.name-shown)").first.wait_for()
    return sorted(t.strip() for t in page.locator("#main-table a.name-shown").all_text_contents())


def open_submission(page, student: str) -> None:
    """From the *Manual Grading* table (:func:`formgrader_students`), open ``student``'s grading page and wait
    until its boxes are bound."""
    page.locator("#main-table tr", has=page.locator("a.name-shown", has_text=student)).locator("a.name-hidden") \
        .first.click()
    page.wait_for_url("**/formgrader/submissions/*/")
    page.wait_for_function(FORMGRADER_READY)


def mark(page, grade_id: str, score: float, comment: str) -> None:
    """Type a score and a comment for the answer ``grade_id`` on an open grading page, as a grader does (each
    box is saved when Tab leaves it)."""
    page.locator(f"#{grade_id}").fill(f"{score:g}")
    page.locator(f"#{grade_id}").press("Tab")
    page.locator(f"#{grade_id}-comment").fill(comment)
    page.locator(f"#{grade_id}-comment").press("Tab")
