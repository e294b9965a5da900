"""Maths in the feedback pages without any network: a local copy of MathJax 2 beside the pages.

nbgrader's feedback template loads MathJax from a CDN, so a page opened offline (or where the CDN is blocked)
shows raw ``$\\varepsilon$``.  The PyPI package ``jupyter-server-mathjax`` ships MathJax 2's files; they are
copied once into ``<feedback folder>/_static/mathjax/`` (:func:`install_mathjax`) and every page points at them
with a relative URL (:data:`MATHJAX_URL`: pages sit at ``<feedback folder>/<student>/<assignment>/<notebook>.html``
in nbgrader's layout and in the grader's output folder alike).  The template that uses the URL is
``autograder/templates/nbconvert/feedback/`` (:data:`TEMPLATE_FILE`, extending nbgrader's own ``feedback``
template); :func:`feedback_exporter_config` is the ``HTMLExporter`` configuration that selects it.
"""

from __future__ import annotations

import importlib.resources
import shutil
from pathlib import Path
from typing import Any

import nbgrader

__all__ = ["CLEAN_HTML", "MATHJAX_CONFIG", "MATHJAX_URL", "STATIC_DIR", "TEMPLATE_FILE", "TEMPLATE_BASEDIR",
           "mathjax_source", "install_mathjax", "feedback_exporter_config"]

STATIC_DIR = "_static"
"""The folder, beside the students' folders of a feedback folder, that holds the pages' static files."""

MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
"""The MathJax configuration the pages load (both files are in the packaged copy)."""

MATHJAX_URL = f"../../{STATIC_DIR}/mathjax/MathJax.js?config={MATHJAX_CONFIG}"
"""Where a page at ``<feedback>/<student>/<assignment>/<notebook>.html`` finds MathJax (relative)."""

TEMPLATE_BASEDIR = Path(__file__).resolve().parent.parent / "templates" / "nbconvert"
"""The kit's nbconvert templates (``feedback/`` holds :data:`TEMPLATE_FILE`)."""

TEMPLATE_FILE = "dp_course_feedback.html.j2"
"""nbgrader's feedback template with MathJax loaded from :data:`MATHJAX_URL` instead of the CDN."""

CLEAN_HTML = "autograder.feedback.safe_markup.clean_html"
"""The template's ``clean_html`` filter (by name: nbconvert imports it; this module imports no preprocessor)."""

_NBGRADER_TEMPLATES = Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"
_SKIP = ("localization",)  # MathJax loads translations only for a language other than English


def mathjax_source() -> Path:
    """The MathJax 2 files shipped by ``jupyter-server-mathjax`` (``MathJax.js``, ``config/``, ``jax/``, ...)."""
    return Path(str(importlib.resources.files("jupyter_server_mathjax") / "static"))


def install_mathjax(feedback_dir: Path) -> Path:
    """Copy MathJax into ``feedback_dir/_static/mathjax/`` unless it is there already; returns that folder.

    The copy is made in a temporary folder and renamed into place, so an interrupted copy is never mistaken
    for a complete one.
    """
    dest = Path(feedback_dir) / STATIC_DIR / "mathjax"
    if (dest / "MathJax.js").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(mathjax_source(), tmp, ignore=shutil.ignore_patterns(*_SKIP, "__pycache__"))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def feedback_exporter_config() -> dict[str, Any]:
    """``HTMLExporter`` settings of ``generate_feedback``: the kit's template and :data:`MATHJAX_URL`.

    ``extra_template_basedirs`` must list nbgrader's own templates too: nbgrader adds them only when the option is
    not configured.  ``sanitize_html``: nbconvert cleans the HTML of Markdown cells (and of HTML outputs, which
    :class:`~autograder.feedback.safe_markup.SafeMarkup` has already reduced to text) with bleach, so no
    ``<script>``, event handler or ``javascript:`` link of the student's reaches the page; ``filters``: that
    cleaning is the kit's (:data:`CLEAN_HTML`), also in the kit's ``markdowncell`` block.
    """
    return {"template_name": "feedback", "template_file": TEMPLATE_FILE, "mathjax_url": MATHJAX_URL,
            "sanitize_html": True, "filters": {"clean_html": CLEAN_HTML},
            "extra_template_basedirs": [str(TEMPLATE_BASEDIR), str(_NBGRADER_TEMPLATES)]}
