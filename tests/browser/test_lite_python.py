"""Python running in the browser: the JupyterLite site built with a local Pyodide, in Chromium, network blocked.

``run.py lite --pyodide .cache/pyodide/pyodide-<version>`` bundles Pyodide's core and the kernel's own pure-Python
packages (``run.py fetch-pyodide`` downloads them, hash-checked; ``run.py test`` does so before pytest).  Every
request that is not for the site's server on 127.0.0.1 is aborted and recorded (``_browser_lab.Console``), as on
a machine without internet.  What must happen:

* the front page finds Pyodide in the site and goes on to the lecture index (no "cannot be loaded" message);
* lecture 01 opens and its Python kernel starts -- Pyodide's CPython 3.14, from the site alone;
* the lecture's install cell, whose packages (numpy & co. from Pyodide's CDN, ipywidgets from PyPI) cannot be
  fetched, says so in plain words within 30 s and stops; the kernel still runs code;
* a download that never answers (a firewall that drops packets) is reported after 30 s, still waiting.

What this machine cannot show: numpy, scipy or matplotlib in the browser (their Pyodide builds are on Pyodide's
CDN and GitHub releases only, both unreachable here; PyPI has none).  Times and screenshots go to
``artifacts/browser/lite-python-*``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

import pytest

from _browser_lab import ARTIFACTS, Console, front_page_problem, launch, playwright_or_skip, require, serve_folder
from _lab_server import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-lite-python")]
LITE_PY = ROOT / ".venv-lite" / "bin" / "python"
_SPEC = importlib.util.spec_from_file_location("fetch_pyodide", ROOT / "tools" / "fetch_pyodide.py")
fetch_pyodide = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fetch_pyodide)
PACKAGES_FAILED = "The course library could not be installed in this browser"
STILL_WAITING = "Still downloading after 30 s"
KERNEL_IDLE = "() => /Python \\(Pyodide\\) \\| Idle/.test(document.querySelector('.jp-StatusBar-Widget') ? " \
              "document.body.innerText : '')"
LECTURE = "01_foundations/01_foundations.ipynb"
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def python_site(tmp_path_factory):
    require("the JupyterLite tools (.venv-lite: `python3 run.py lite` or `run.py test` sets them up)",
            LITE_PY.exists())
    folder = fetch_pyodide.distribution()
    require("Pyodide's core in .cache/pyodide (`python3 run.py fetch-pyodide` downloads it; `run.py test` does)",
            folder is not None)
    out = tmp_path_factory.mktemp("lite-python") / "site"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "lite", "-o", str(out), "--pyodide", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    TIMES["build_s"] = round(time.monotonic() - started, 1)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    TIMES["site_mb"] = round(sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6, 1)
    with serve_folder(out) as base:
        yield out, base
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "lite-python-times.json").write_text(json.dumps(TIMES, indent=1) + "\n")


def _open_lecture(page, base: str) -> float:
    """Open lecture 01 in the lab; returns the seconds until its Pyodide kernel is idle."""
    started = time.monotonic()
    page.goto(f"{base}lab/index.html?path={LECTURE}")
    page.wait_for_function(KERNEL_IDLE, timeout=240_000)
    return time.monotonic() - started


def _run_install_cell(page) -> None:
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")


def _first_output(page) -> str:
    return page.evaluate("() => { const o = document.querySelector('.jp-Notebook .jp-Cell .jp-OutputArea');"
                         " return o ? o.innerText : ''; }")


def test_python_starts_offline_and_the_install_cell_says_what_it_cannot_fetch(python_site):
    sync_playwright = playwright_or_skip()
    out, base = python_site
    config = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    console = Console()
    with sync_playwright() as pw:
        context = launch(pw, ARTIFACTS.parent / "profile-lite-python")
        console.attach(context, base)
        page = context.new_page()
        console.watch(page)
        started = time.monotonic()
        page.goto(base, wait_until="load")
        page.wait_for_url("**/lab/**", timeout=30_000)         # Pyodide found in the site: straight on
        page.wait_for_function("() => [...document.querySelectorAll('.jp-RenderedMarkdown')]"
                               ".some(e => e.innerText.includes('Lecture'))", timeout=120_000)
        TIMES["front_page_to_index_s"] = round(time.monotonic() - started, 1)
        index = page.inner_text(".jp-RenderedMarkdown >> nth=0")
        page.screenshot(path=str(ARTIFACTS / "lite-python-index.png"))

        TIMES["kernel_ready_s"] = round(_open_lecture(page, base), 1)
        page.screenshot(path=str(ARTIFACTS / "lite-python-kernel-ready.png"))
        started = time.monotonic()
        _run_install_cell(page)
        page.wait_for_function(f"() => {{ const o = document.querySelector('.jp-Notebook .jp-Cell .jp-OutputArea');"
                               f" return o && o.innerText.includes({PACKAGES_FAILED!r}); }}", timeout=60_000)
        TIMES["install_message_s"] = round(time.monotonic() - started, 1)
        message = _first_output(page)
        page.wait_for_function(KERNEL_IDLE, timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "lite-python-package-message.png"))

        # the kernel is alive: a new cell below the install cell runs the browser's Python
        page.locator(".jp-Notebook .jp-Cell").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        page.keyboard.press("Enter")
        page.keyboard.type("import sys; print(sys.platform, sys.version)")
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("() => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell')[1];"
                               " return c && c.querySelector('.jp-OutputArea') &&"
                               " c.querySelector('.jp-OutputArea').innerText.includes('emscripten'); }",
                               timeout=60_000)
        version = page.locator(".jp-Notebook .jp-Cell >> nth=1").locator(".jp-OutputArea").inner_text()
        page.screenshot(path=str(ARTIFACTS / "lite-python-version.png"))
        context.close()
    errors, external = console.take()
    assert "Lecture" in index and "01" in index, index[:500]
    assert TIMES["install_message_s"] < 30, f"the install cell took {TIMES['install_message_s']} s to say so"
    assert "pypi.org" in message or "cdn.jsdelivr.net" in message, message      # the plain words name where
    assert "python3 run.py site" in message, message                           # ... and what to do instead
    assert "emscripten 3.14." in version, version
    # nothing of Pyodide's core came from outside; what was tried outside (and blocked) is the packages' servers
    assert not [u for u in external if "pyodide.mjs" in u or "pyodide.asm" in u or "python_stdlib" in u], external
    outside = ("https://pypi.org/", "https://cdn.jsdelivr.net/pyodide/")
    assert external and all(u.startswith(outside) for u in external), external


def test_a_download_that_never_answers_is_reported_after_30_s(python_site):
    """A firewall that drops packets: the request hangs.  The cell says, at 30 s, what it is waiting for."""
    sync_playwright = playwright_or_skip()
    _, base = python_site
    hanging: list[str] = []
    with sync_playwright() as pw:
        context = launch(pw, ARTIFACTS.parent / "profile-lite-python-hang")

        def route(r):
            if r.request.url.startswith((base, "data:", "blob:")):
                r.continue_()
            else:
                hanging.append(r.request.url)      # never answered: the request stays pending

        context.route("**/*", route)
        page = context.new_page()
        _open_lecture(page, base)
        started = time.monotonic()
        _run_install_cell(page)
        page.wait_for_function(f"() => {{ const o = document.querySelector('.jp-Notebook .jp-Cell .jp-OutputArea');"
                               f" return o && o.innerText.includes({STILL_WAITING!r}); }}", timeout=90_000)
        TIMES["still_waiting_note_s"] = waited = round(time.monotonic() - started, 1)
        page.screenshot(path=str(ARTIFACTS / "lite-python-still-waiting.png"))
        context.close()
    assert hanging, "no request left the site: nothing could hang"
    assert 29 <= waited < 45, f"the note came after {waited} s (expected at 30 s)"


def test_with_the_npm_core_only_the_front_page_says_python_cannot_start(tmp_path):
    """Pyodide's npm package alone (``--pyodide pyodide-<version>.tgz``): the interpreter is in the site but the
    kernel's first package (micropip) is on the CDN, blocked here.  The front page says so, naming that address,
    instead of opening a lecture whose kernel would never start."""
    sync_playwright = playwright_or_skip()
    require("the JupyterLite tools (.venv-lite: `python3 run.py lite` or `run.py test` sets them up)",
            LITE_PY.exists())
    tarball = fetch_pyodide.CACHE / f"pyodide-{fetch_pyodide.PYODIDE_VERSION}.tgz"
    require("Pyodide's npm package in .cache/pyodide (`python3 run.py fetch-pyodide` downloads it; `run.py test` "
            "does)", tarball.is_file())
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "lite", "-o", str(out), "--pyodide", str(tarball)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "static" / "pyodide" / "pyodide.asm.wasm").is_file()
    console = Console()
    with serve_folder(out) as base, sync_playwright() as pw:
        context = launch(pw, ARTIFACTS.parent / "profile-lite-npm-core")
        console.attach(context, base)
        page = context.new_page()
        text, waited = front_page_problem(page, base, ARTIFACTS / "lite-python-npm-core-only.png")
        context.close()
    _, external = console.take()
    assert waited < 30, f"the front page took {waited:.0f} s to say that Python cannot start"
    cdn = f"cdn.jsdelivr.net/pyodide/v{fetch_pyodide.PYODIDE_VERSION}/full/micropip-"
    assert "Python cannot be loaded" in text and cdn in text, text
    assert "fetch-pyodide" in text, text
    assert [u for u in external if cdn in u] and not [u for u in external if "pyodide.asm" in u], external
