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
from collections.abc import Callable
from typing import Any

import jinja2
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbgrader.converters import GenerateFeedback
from nbconvert.writers.files import FilesWriter
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool
from traitlets.config import Config

__all__ = ["MemoisedHTMLExporter", "ReusableGenerateFeedback", "FeedbackRenderer"]

CACHE_LIMIT = 20000
"""At most this many rendered fragments are kept per filter (each a cell's HTML: a few MB in all)."""


def _bounded(cache: dict[Any, str], key: Any, make: Callable[[], str]) -> str:
    """``cache[key]``, made by ``make()`` the first time; the cache is emptied when it reaches :data:`CACHE_LIMIT`."""
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        hit = cache[key] = make()
    return hit


class MemoisedHTMLExporter(HTMLExporter):
    """nbconvert's ``HTMLExporter`` that renders each distinct cell fragment once per process.

    The pages of one assignment repeat the same instructor cells for every student: the same Markdown text and
    the same locked code.  Three of the template's filters are pure functions of their arguments and the
    exporter's (fixed) settings, so their results are kept and reused, and a page stays byte for byte what
    nbconvert's ``HTMLExporter`` writes:

    * ``highlight_code`` (Pygments): keyed on the notebook's lexer, the source, the language and the cell's
      ``magics_language`` (the only piece of cell metadata the filter reads);
    * ``markdown2html`` (mistune): keyed on the source, and the notebook's folder (``resources.metadata.path``)
      when images are embedded (the only use nbconvert makes of it); a cell with attachments is rendered every
      time;
    * ``clean_html`` (the kit's bleach pass, :func:`autograder.feedback.safe_markup.clean_html`): keyed on the
      HTML it cleans.

    nbconvert's other work (the preprocessors, the Jinja template, its BeautifulSoup pass over the whole page)
    runs for every page as before.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # nbconvert is untyped
        self.highlighted: dict[tuple[str, str, str | None, str | None], str] = {}
        self.markdown: dict[tuple[str, str], str] = {}
        self.cleaned: dict[str, str] = {}

    def register_filter(self, name: str, jinja_filter: Any) -> Any:
        """nbconvert's ``register_filter``; the notebook's ``highlight_code`` (registered by every
        ``from_notebook_node``) is wrapped so that a source already highlighted is not highlighted again."""
        if name == "highlight_code" and type(jinja_filter) is Highlight2HTML:
            jinja_filter = self._highlighter(jinja_filter)
        return super().register_filter(name, jinja_filter)  # type: ignore[no-untyped-call]

    def _highlighter(self, highlight: Highlight2HTML) -> Callable[..., str]:
        lexer = str(highlight.pygments_lexer)
        if highlight.extra_formatter_options:  # a configured formatter: no reuse (the key would not hold it)
            return highlight

        def highlight_code(source: str, language: str | None = None, metadata: Any = None) -> str:
            magics = metadata.get("magics_language") if isinstance(metadata, dict) else None
            key = (lexer, str(source), language, None if magics is None else str(magics))
            return _bounded(self.highlighted, key, lambda: str(highlight(source, language, metadata)))
        return highlight_code

    def default_filters(self) -> Any:
        """nbconvert's filters, with ``markdown2html`` and ``clean_html`` remembered (see the class)."""
        for name, item in super().default_filters():  # type: ignore[no-untyped-call]
            yield name, (self._markdown2html if name == "markdown2html" else item)

    @jinja2.pass_context
    def _markdown2html(self, context: Any, source: str) -> str:
        cell = context.get("cell", {})
        if cell.get("attachments"):
            return str(self.markdown2html(context, source))
        # the notebook's folder is read only to embed images (nbconvert's IPythonRenderer): without that, every
        # student's copy of an instructor cell is one fragment
        path = str(context.get("resources", {}).get("metadata", {}).get("path", "")) if self.embed_images else ""
        return _bounded(self.markdown, (str(source), path), lambda: str(self.markdown2html(context, source)))

    def _create_environment(self) -> Any:
        env = super()._create_environment()  # type: ignore[no-untyped-call]
        clean = env.filters.get("clean_html")
        if clean is not None and not getattr(clean, "jinja_pass_arg", None):
            env.filters["clean_html"] = lambda html: _bounded(self.cleaned, str(html), lambda: clean(html))
        return env


class ReusableGenerateFeedback(GenerateFeedback):  # type: ignore[misc]  # nbgrader is untyped
    """nbgrader's ``GenerateFeedback`` whose writer, exporter and preprocessors are built on the first
    :meth:`start` and kept for the next ones (nbgrader builds them again on every start)."""

    built = Bool(False, help="The writer and exporter exist (built by the first start).")

    def build(self) -> None:
        """Make the writer, the exporter with its steps, and compile its template (once)."""
        if self.built:
            return
        self.writer = FilesWriter(parent=self, config=self.config)  # type: ignore[no-untyped-call]
        # nbgrader's HTMLExporter, with the cell fragments every page repeats rendered once per process
        exporter_class = MemoisedHTMLExporter if self.exporter_class is HTMLExporter else self.exporter_class
        self.exporter = exporter_class(parent=self, config=self.config)
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
