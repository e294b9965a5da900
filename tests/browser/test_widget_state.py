"""Explorers survive save and reopen (issue 22 item 12): the widgets' state is saved with the notebook.

Without ``saveState`` (``@jupyter-widgets/jupyterlab-manager``; set in ``jupyter_config/lab_settings/
overrides.json`` for ``run.py lab`` and by ``postBuild`` on Binder) a saved lecture holds widget views whose
models exist nowhere, and reopening it shows "Error displaying widget: model not found" under every explorer.
Here a notebook that calls a lecture's explorer is run and saved in JupyterLab (``run.py lab --headless``,
Debian's chromium), the file is checked for the widget state, and the notebook is reopened in a fresh
workspace with a new kernel that has not run anything: the explorer shows its slider, not the error.
"""

from __future__ import annotations

import nbformat
import pytest

from _browser_lab import (ARTIFACTS, CHROMIUM, CHROMIUM_NEEDED, PLAYWRIGHT_NEEDED, Console, launch, open_notebook,
                          require, run_all_and_save)
from _lab_server import LabServer, copy_course

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-widget-state")]

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
REL = "notebooks/explorer_saved.ipynb"


def _explorer_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%matplotlib inline\nfrom dp_course.widgets import rr_accuracy_explorer"),
        nbformat.v4.new_code_cell("rr_accuracy_explorer(true_fraction=0.3)"),   # lecture 01's explorer
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nb


def test_a_saved_and_reopened_notebook_shows_its_explorer(tmp_path):
    require(CHROMIUM_NEEDED, CHROMIUM.exists())
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(PLAYWRIGHT_NEEDED, False)
    course = copy_course(tmp_path / "course")
    nbformat.write(_explorer_notebook(), course / REL)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = LabServer(root_dir=course, work=tmp_path)
    server.start()
    try:
        with sync_playwright() as pw:
            context = launch(pw, tmp_path / "profile")
            Console().attach(context, server.base)
            page = context.new_page()
            page.set_default_timeout(30_000)
            open_notebook(page, server, REL)
            run_all_and_save(page)
            page.locator(".jp-OutputArea-output .widget-slider").first.wait_for(timeout=60_000)
            saved = nbformat.read(course / REL, as_version=4)
            views = [o["data"][WIDGET_VIEW]["model_id"] for c in saved.cells for o in c.get("outputs", [])
                     if WIDGET_VIEW in o.get("data", {})]
            assert views, "the explorer's output holds no widget view"
            state = saved.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
            missing = [v for v in views if v not in state]
            assert not missing, f"saved without the state of widgets {missing} (saveState off?)"
            server.shutdown_kernels()
            open_notebook(page, server, REL)           # a fresh workspace and a new kernel that ran nothing
            area = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").filter(
                has=page.locator(".widget-slider"))
            area.first.wait_for(timeout=30_000)
            page.screenshot(path=ARTIFACTS / "explorer-reopened.png")
            errors = page.get_by_text("Error displaying widget").count()
            assert errors == 0, f"{errors} widget(s) show 'Error displaying widget' after reopening"
            server.shutdown_kernels()
            context.close()
    finally:
        server.stop()
