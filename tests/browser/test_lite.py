"""The JupyterLite site in Chromium with the network blocked: it says why Python cannot start, and still opens.

``python3 run.py lite`` builds the real site (``.venv-lite``); a plain HTTP server on 127.0.0.1 serves it.  Every
request that is not for that server is aborted (``_browser_lab.Console``), so Pyodide's CDN is unreachable, as on
a machine without internet.  The front page must say so in plain words within 30 s (and name the address it
tried); its "open anyway" link must open JupyterLab on the lecture index, rendered, with the course's settings.
Python running in the page, from a Pyodide bundled with the site (``--pyodide``): ``test_lite_python.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _browser_lab import ARTIFACTS, Console, front_page_problem, launch, playwright_or_skip, require, serve_folder
from _lab_server import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-lite")]
LITE_PY = ROOT / ".venv-lite" / "bin" / "python"


@pytest.fixture(scope="module")
def lite_site(tmp_path_factory):
    require("the JupyterLite tools (.venv-lite: `python3 run.py lite` or `run.py test` sets them up)",
            LITE_PY.exists())
    out = tmp_path_factory.mktemp("lite") / "site"
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "lite", "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with serve_folder(out) as base:
        yield out, base


def test_lite_pins_pyodide_and_carries_the_course_settings(lite_site):
    out, _ = lite_site
    config = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    url = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]["pyodideUrl"]
    assert url.startswith("https://cdn.jsdelivr.net/pyodide/v") and "/full/pyodide.mjs" in url
    overrides = config.get("settingsOverrides", {})
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Markdown Preview"


def test_lite_says_why_python_cannot_start_and_still_opens_the_index(lite_site):
    sync_playwright = playwright_or_skip()
    out, base = lite_site
    console = Console()
    with sync_playwright() as pw:
        context = launch(pw, ARTIFACTS.parent / "profile-lite")
        console.attach(context, base)
        page = context.new_page()
        text, waited = front_page_problem(page, base, ARTIFACTS / "lite-no-pyodide.png")
        page.click("#anyway")
        page.wait_for_function("() => [...document.querySelectorAll('.jp-RenderedMarkdown')]"
                               ".some(e => e.innerText.includes('Lecture'))", timeout=120_000)
        index = page.inner_text(".jp-RenderedMarkdown >> nth=0")
        page.screenshot(path=str(ARTIFACTS / "lite-index.png"))
        context.close()
    _, external = console.take()
    assert waited < 30, f"the front page took {waited:.0f} s to say that Python cannot be loaded"
    assert "Python cannot be loaded" in text and "cdn.jsdelivr.net/pyodide/v" in text, text
    assert "Lecture" in index and "01" in index, index[:500]
    assert any("cdn.jsdelivr.net/pyodide/" in u for u in external), external   # the CDN was tried, and blocked
