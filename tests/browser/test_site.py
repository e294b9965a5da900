"""The course site in Chromium with the network blocked: maths typeset, figures drawn, every link inside the site.

``python3 run.py site`` builds the real student site (all seven lectures) into a temporary folder; a plain HTTP
server on 127.0.0.1 serves it, and Chromium reads every page with every request that is not for that server
aborted and recorded (``_browser_lab.Console``; no host name resolves either).  Per page: MathJax typeset
formulas (no raw TeX left in the text, no "Math Processing Error"), every image loaded, every link and anchor
resolves inside the site, nothing tried to leave the machine, and the page is under 3 MB.  The build time and
page sizes are written to ``artifacts/browser/site.txt``, with a screenshot of each page beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import urldefrag, urljoin

import pytest

from _browser_lab import ARTIFACTS, Console, launch, playwright_or_skip, serve_folder
from _lab_server import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-site")]

MAX_PAGE_BYTES = 3 * 2**20
MATHJAX_BLANK_FONT = "Failed to load resource: net::ERR_FAILED"
_PAGE_STATE = """async () => {
  if (window.MathJax && MathJax.Hub) { await new Promise(done => MathJax.Hub.Queue(done)); }
  const prose = [...document.querySelectorAll('.jp-RenderedMarkdown, main.dpc-page')]
    .map(e => e.innerText).join('\\n');
  const math = document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML').length;
  const images = [...document.images].map(i => ({src: i.src.slice(0, 60), ok: i.complete && i.naturalWidth > 0}));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  return {prose, math, images, links, ids};
}"""
_RAW_TEX = ("\\varepsilon", "\\delta", "\\frac", "\\mathbb", "\\sum", "\\le ", "$$")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    env = {k: v for k, v in os.environ.items() if k != "DP_COURSE_STATIC_PLOTS"}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "site", "-o", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    sizes = {p.name: p.stat().st_size for p in sorted(out.glob("*.html"))}
    (ARTIFACTS / "site.txt").write_text(f"build: {seconds:.0f} s\n" + "".join(
        f"{name}: {size / 2**20:.2f} MB\n" for name, size in sizes.items()) + proc.stdout)
    with serve_folder(out) as base:
        yield out, base


def test_every_site_page_reads_offline(site):
    sync_playwright = playwright_or_skip()
    out, base = site
    lectures = sorted(p.name for p in (ROOT / "notebooks").iterdir() if (p / f"{p.name}.ipynb").is_file())
    pages = ["index.html", "errata.html", "guide.html", *(f"{name}.html" for name in lectures)]
    problems: list[str] = []
    ids_of: dict[str, set[str]] = {}
    links_of: dict[str, list[str]] = {}
    console = Console()
    with sync_playwright() as pw:
        context = launch(pw, ARTIFACTS.parent / "profile-site")
        console.attach(context, base)
        page = context.new_page()
        page.set_default_timeout(120_000)
        console.watch(page)
        for name in pages:
            size = (out / name).stat().st_size
            if size > MAX_PAGE_BYTES:
                problems.append(f"{name}: {size / 2**20:.1f} MB, more than 3 MB")
            page.goto(base + name, wait_until="load")
            state = page.evaluate(_PAGE_STATE)
            page.screenshot(path=str(ARTIFACTS / f"site-{name}.png"), full_page=False)
            raw = [t for t in _RAW_TEX if t in state["prose"]]
            if raw:
                problems.append(f"{name}: raw TeX left in the text: {raw}")
            if "Math Processing Error" in state["prose"]:
                problems.append(f"{name}: MathJax reported a Math Processing Error")
            if (name.startswith(tuple(lectures)) or name == "index.html") and state["math"] < 5:
                problems.append(f"{name}: only {state['math']} typeset formulas")
            if name.startswith(tuple(lectures)) and not state["images"]:
                problems.append(f"{name}: no figure")
            problems += [f"{name}: image not drawn: {i['src']}" for i in state["images"] if not i["ok"]]
            ids_of[name] = set(state["ids"])
            links_of[name] = state["links"]
            errors, external = console.take()
            problems += [f"{name}: request left the machine: {u}" for u in external]
            # MathJax 2 measures fonts with a blank one at about:blank, which chromium refuses (that error and its
            # failed load, as in test_browser_formgrade); any other failed load is a 404 or a blocked request
            problems += [f"{name}: console error: {e}" for e in errors
                         if "Access to font at 'about:blank'" not in e and e != MATHJAX_BLANK_FONT]
        context.close()
    for name, links in links_of.items():
        for href in links:
            target, anchor = urldefrag(urljoin(base + name, href))
            if not target.startswith(base):
                problems.append(f"{name}: link leaves the site: {href}")
                continue
            file = target[len(base):] or "index.html"
            if not (out / file).is_file():
                problems.append(f"{name}: link to a missing page: {href}")
            elif anchor and file in ids_of and anchor not in ids_of[file]:
                problems.append(f"{name}: link to a missing anchor: {href}")
            elif anchor and file not in ids_of:
                problems.append(f"{name}: link to a page the test did not open: {href}")
    assert not problems, "\n".join(problems)
