"""The Jupyter server extension of the kit's instructor sessions: nbgrader's Formgrader, showing mark schemes.

Enabled (``ServerApp.jpserver_extensions``) in place of nbgrader's own ``nbgrader.server_extensions.formgrader``
by the configuration folders of ``dp-course formgrade`` (``autograder/jupyter_formgrade/``) and of
``run.py lab --instructor`` (``jupyter_config/instructor/``).  What it does depends on the environment variable
:data:`COURSE_ENV`, which ``dp-course formgrade`` sets to the grading run's course directory:

* set: it loads nbgrader's Formgrader (unchanged: its pages, its API, its gradebook writes) and then replaces
  the exporter of the grading page by :class:`autograder.formgrade.mark_scheme.MarkSchemeExporter`, so each hand-graded
  answer shows its mark scheme.  Only that page's exporter changes; nbgrader's *Generate Feedback* builds its
  own exporter from the configuration, which this extension leaves alone, so no mark scheme can reach a
  student's feedback page.
* unset (``run.py lab --instructor`` on the repository, for writing lectures): no Formgrader is loaded -- it
  would create a ``gradebook.db`` in the repository and list no submission -- and ``/formgrader`` answers with
  a page that says how to open one on a grading run.

Why not configure nbgrader's exporter instead: nbgrader's ``generate_feedback`` takes its ``HTMLExporter``
settings from the same configuration files (a ``template_name`` set there replaces its ``feedback`` template),
so a mark-scheme template configured there would leak into students' pages.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.formgrader import formgrader as nbgrader_formgrader
from tornado import web

from .mark_scheme import MarkSchemeExporter, exporter_config

__all__ = ["COURSE_ENV", "LOCAL_MATHJAX", "NO_COURSE_MESSAGE", "install_mark_schemes"]

COURSE_ENV = "DP_COURSE_FORMGRADE_COURSE"
"""Environment variable: the course directory (``OUTPUT/course``) the Formgrader grades."""
LOCAL_MATHJAX = "static/jupyter_server_mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
"""MathJax 2.7 as the ``jupyter_server_mathjax`` server extension serves it (relative to the base URL): the
grading page renders the maths of answers and mark schemes without contacting a CDN."""

NO_COURSE_MESSAGE = (
    "This session was started without a grading run, so there is no Formgrader here (it would grade nothing and "
    "write a gradebook into the repository). Grade first, then open the Formgrader on that run's output folder: "
    "dp-course grade SUBMISSIONS -o grading/  and then  dp-course formgrade grading/  "
    "(or python3 run.py lab --instructor grading/).")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "autograder.formgrade.formgrade_server"}]


class NoCourseHandler(JupyterHandler):
    """``/formgrader`` in a session without a grading run: what to do instead."""

    @web.authenticated
    def get(self, *args: Any) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish("<!DOCTYPE html><html><head><meta charset='utf-8'><title>No grading run</title></head>"
                    f"<body><h1>No grading run opened</h1><p id='dpc-no-course'>{html.escape(NO_COURSE_MESSAGE)}"
                    "</p></body></html>")


def install_mark_schemes(settings: dict[str, Any]) -> MarkSchemeExporter:
    """Replace the Formgrader's page exporter in the web application ``settings`` by a
    :class:`~autograder.formgrade.mark_scheme.MarkSchemeExporter` reading the Formgrader course's ``source`` folder,
    with
    MathJax from this server (:data:`LOCAL_MATHJAX`, served by the ``jupyter_server_mathjax`` extension) instead
    of a CDN."""
    formgrader = settings["nbgrader_formgrader"]
    coursedir = formgrader.coursedir
    exporter = MarkSchemeExporter(Path(coursedir.root) / coursedir.source_directory,
                                  config=exporter_config(formgrader.config))
    exporter.mathjax_url = url_path_join(settings.get("base_url", "/"), LOCAL_MATHJAX)
    settings["nbgrader_exporter"] = exporter
    return exporter


def _load_jupyter_server_extension(serverapp: Any) -> None:
    course = os.environ.get(COURSE_ENV)
    webapp = serverapp.web_app
    if not course:
        base = webapp.settings["base_url"].rstrip("/")
        webapp.add_handlers(".*$", [(f"{base}/formgrader(/.*)?", NoCourseHandler)])
        serverapp.log.info("dp-course: no grading run given, so no Formgrader in this session")
        return
    nbgrader_formgrader.load_jupyter_server_extension(serverapp)
    exporter = install_mark_schemes(webapp.settings)
    serverapp.log.info("dp-course: Formgrader on %s, mark schemes from %s", course, exporter.source_dir)
