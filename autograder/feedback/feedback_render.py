"""Feedback pages rendered in the grading worker, with one exporter for all of the worker's submissions.

nbgrader's ``NbGraderAPI.generate_feedback`` makes a new ``GenerateFeedback`` converter on every call, and with
it a new ``HTMLExporter`` (its Jinja2 environment, the templates found, loaded and compiled) and a new instance
of every feedback step -- for every submission, again.  That set-up cost about as much as grading the notebook.

:class:`FeedbackRenderer` is the same nbgrader converter, configured exactly as ``generate_feedback`` configures
it (the course's configuration with the kit's steps, :data:`autograder.course.settings.FEEDBACK_STEPS`: hidden tests
stripped, their outputs withheld, outputs sanitised, hand grading said so, MathJax offline; the kit's template
with its Content-Security-Policy), whose exporter, writer and steps are built once, by the first page, and
reused for every later submission of the process.  Each call runs nbgrader's own conversion loop for one
submission (``convert_notebooks``: the destination folder, supplementary files, each page, the permissions), so
a page is byte for byte the page ``generate_feedback`` writes.  The worker (:mod:`autograder.run.worker`) renders
each submission right after grading it, and ``dp-course feedback`` (:mod:`autograder.run.feedback_refresh`) uses
one renderer for all the submissions it regenerates.
"""

from __future__ import annotations

import io
import logging
import os
import traceback
from typing import Any

from nbgrader.converters import GenerateFeedback
from nbconvert.writers.files import FilesWriter
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool
from traitlets.config import Config

__all__ = ["ReusableGenerateFeedback", "FeedbackRenderer"]


class ReusableGenerateFeedback(GenerateFeedback):  # type: ignore[misc]  # nbgrader is untyped
    """nbgrader's ``GenerateFeedback`` whose writer, exporter and preprocessors are built on the first
    :meth:`start` and kept for the next ones (nbgrader builds them again on every start)."""

    built = Bool(False, help="The writer and exporter exist (built by the first start).")

    def build(self) -> None:
        """Make the writer, the exporter with its steps, and compile its template (once)."""
        if self.built:
            return
        self.writer = FilesWriter(parent=self, config=self.config)  # type: ignore[no-untyped-call]
        self.exporter = self.exporter_class(parent=self, config=self.config)
        for pp in self.preprocessors:
            self.exporter.register_preprocessor(pp)
        _ = self.exporter.template       # the Jinja template, loaded and compiled now
        self.built = True

    def start(self) -> None:
        """nbgrader's ``BaseConverter.start`` with the writer, exporter and steps made only once."""
        self.build()
        self.init_notebooks()
        here = os.getcwd()
        os.chdir(self.coursedir.root)
        try:
            self.convert_notebooks()
        finally:
            os.chdir(here)


class FeedbackRenderer:
    """Writes the feedback pages of one submission at a time into ``coursedir``'s ``feedback/`` folder.

    Args:
        coursedir: the course directory (the worker's own copy, or the output folder's ``course/``).
        config: its configuration, with the feedback steps and exporter settings
            (:func:`autograder.course.settings.grading_config`, or ``dp-course feedback``'s own).
    """

    def __init__(self, coursedir: CourseDirectory, config: Config) -> None:
        self.coursedir = coursedir
        extra = Config()
        extra.HTMLExporter.template_name = "feedback"  # as NbGraderAPI.generate_feedback sets it
        self.converter = ReusableGenerateFeedback(coursedir=coursedir, config=config)
        self.converter.update_config(extra)
        self.converter.force = True
        self.converter.log = logging.getLogger("autograder.feedback.feedback_render")
        self.converter.build()   # before any fork: a worker renders each submission in a child of its own

    def render(self, assignment: str, student: str) -> dict[str, Any]:
        """Render every autograded notebook of ``student``'s ``assignment``; nbgrader's result dictionary.

        Returns:
            ``{"success": bool, "error": traceback or log text, "log": the converter's log}``, as
            ``NbGraderAPI.generate_feedback`` returns it (a failure never raises).
        """
        buff = io.StringIO()
        handler = logging.StreamHandler(buff)
        handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
        log = self.converter.log
        log.addHandler(handler)
        saved = (self.coursedir.assignment_id, self.coursedir.student_id)
        self.coursedir.assignment_id, self.coursedir.student_id = assignment, student
        try:
            self.converter.start()
        except Exception:  # nbgrader's failures (NbGraderException, a template error, ...)
            return {"success": False, "error": traceback.format_exc(), "log": buff.getvalue()}
        finally:
            self.coursedir.assignment_id, self.coursedir.student_id = saved
            log.removeHandler(handler)
        return {"success": True, "log": buff.getvalue()}
