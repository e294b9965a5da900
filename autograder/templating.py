"""Jinja2 templates of the grader's pages (``autograder/templates/``): the report and the fallback feedback.

HTML templates are autoescaped: the pages show text that comes from students (suspicious code lines, names,
error messages), which must never become markup.  Markdown templates are not escaped (the Markdown report is
text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

__all__ = ["TEMPLATES", "render"]

TEMPLATES = Path(__file__).resolve().with_name("templates")
"""The folder of the kit's templates."""

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                          autoescape=jinja2.select_autoescape(enabled_extensions=("html",),
                                                              default_for_string=True),
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          keep_trailing_newline=True)
_ENV.filters["g"] = lambda x: f"{x:g}"


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` (``report.html``, ``report.md``, ``fallback_feedback.html``)."""
    return _ENV.get_template(name).render(**context)
