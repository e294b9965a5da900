"""Jinja2 templates of the grader's pages (``autograder/templates/``): the report and the fallback feedback.

HTML templates are autoescaped: the pages show text that comes from students (suspicious code lines, names,
error messages), which must never become markup.  In Markdown templates every string that can come from a
student (ids, file names, cell names, reasons quoting code) goes through the filter ``md`` (:func:`md_escape`:
text that renders as itself, no HTML, emphasis, link or image) or ``mdcode`` (:func:`md_code`: a code span
no content can close).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2

__all__ = ["TEMPLATES", "md_code", "md_escape", "render"]

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
"""The folder of the kit's templates."""

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                          autoescape=jinja2.select_autoescape(enabled_extensions=("html",),
                                                              default_for_string=True),
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          keep_trailing_newline=True)
_ENV.filters["g"] = lambda x: f"{x:g}"

# Markdown's inline syntax: HTML and autolinks (< > &), emphasis and strike-through (* ~, and _ at a word's edge:
# CommonMark never opens or closes emphasis with an underscore inside a word), code (`), links and images ([ ] !),
# backslash escapes, table cells (|), maths in renderers that have it ($).
_MD_SPECIAL = re.compile(r"[\\`*~\[\]<>&|!$]|(?<![^\W_])_|_(?![^\W_])")


def md_escape(value: object) -> str:
    """``value`` as Markdown text that renders as itself: one line, every inline markup character escaped.

    >>> print(md_escape("<img src=x onerror=alert(1)> **bold** [link](http://x)"))
    \\<img src=x onerror=alert(1)\\> \\*\\*bold\\*\\* \\[link\\](http://x)
    """
    text = " ".join(str(value).split())
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def md_code(value: object) -> str:
    """``value`` as one Markdown code span (no markup inside one), fenced by more backticks than it contains."""
    text = " ".join(str(value).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_ENV.filters["md"] = md_escape
_ENV.filters["mdcode"] = md_code


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` (``report.html``, ``report.md``, ``fallback_feedback.html``)."""
    return _ENV.get_template(name).render(**context)
