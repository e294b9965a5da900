"""``SafeMarkup``: nothing on a feedback page can run the student's markup.

Every output on a feedback page was produced by the student's kernel (test cells' outputs too, in one kernel),
which can publish any MIME bundle: HTML with ``<script>`` or ``onerror=``, JavaScript, SVG with scripts, a
widget view, an ``image/png`` whose "base64" is markup.  This preprocessor runs inside nbgrader's
``generate_feedback`` and keeps, of each output, only:

* ``text/plain`` (escaped by nbconvert's template), so an HTML table becomes its plain-text form;
* ``image/png`` and ``image/jpeg`` whose data is strict base64 (rendered as ``data:`` images, which run nothing);

an output left with nothing shows ``[output of type ... not shown]``.  It also drops cell metadata other than
nbgrader's (``tags`` become CSS classes in the page), cell ids that are not nbformat's ``[A-Za-z0-9_-]+``, and
``grade_id`` s that are not (nbgrader's template writes the ``grade_id`` into the page unescaped).

The Markdown cells are rendered by nbconvert and then cleaned by :func:`clean_html` (bleach, with an
allow-list of text, list and table tags: no ``<script>``, ``<img>``, ``<svg>``, ``<style>``, event handler or
``javascript:`` link), which :func:`autograder.course.offline_maths.feedback_exporter_config` installs as the template's
``clean_html`` filter (nbconvert's own allow-list has no ``<th>``, ``<thead>`` or headings: a lecture's Markdown
table would show its tags), and the page carries a Content-Security-Policy
(:data:`autograder.course.offline_maths.FEEDBACK_CSP`) that forbids inline scripts, event handlers and any origin but
the page's own folder.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import bleach
from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from traitlets import Bool

__all__ = ["ALLOWED_TAGS", "SAFE_MIME_TYPES", "SafeMarkup", "clean_html", "safe_output"]

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul"})
"""The tags a rendered Markdown cell keeps (others are shown as text): no script, style, image, form or frame."""

_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "th": ["align"], "td": ["align"]}
# no class or style: the page's own classes (Bootstrap's panels, nbgrader's score labels) could be imitated

SAFE_MIME_TYPES = ("text/plain", "image/png", "image/jpeg")
"""The output types a feedback page shows."""

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _strict_base64(data: object) -> bool:
    if not isinstance(data, str):
        return False
    try:
        base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def clean_html(html: object) -> str:
    """``html`` with only :data:`ALLOWED_TAGS`, plain attributes and ``http``/``https``/``mailto`` links (bleach);
    anything else is escaped, so it shows as text."""
    text = html.decode() if isinstance(html, bytes) else str(html)
    cleaned: str = bleach.clean(text, tags=ALLOWED_TAGS, attributes=_ATTRIBUTES,
                                protocols={"http", "https", "mailto"}, strip_comments=True)
    return cleaned


def safe_output(output: NotebookNode) -> NotebookNode:
    """``output`` with only :data:`SAFE_MIME_TYPES` in its data (in place; returned for convenience)."""
    if output.get("output_type") not in ("display_data", "execute_result"):
        return output
    data = output.get("data") or {}
    kept = {k: v for k, v in data.items()
            if k == "text/plain" or (k in ("image/png", "image/jpeg") and _strict_base64(v))}
    if not kept:
        kept = {"text/plain": f"[output of type {', '.join(sorted(map(str, data))) or 'none'} not shown]"}
    kept = {k: (v if isinstance(v, str) else "".join(map(str, v)) if isinstance(v, list) else str(v))
            for k, v in kept.items()}
    output["data"] = kept
    output["metadata"] = {}
    return output


class SafeMarkup(Preprocessor):
    """Keep plain text and checked images of every output; drop metadata a template would write unescaped."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        meta = cell.get("metadata") or {}
        nbgrader_meta = meta.get("nbgrader")
        cell["metadata"] = NotebookNode({"nbgrader": nbgrader_meta} if nbgrader_meta else {})
        if isinstance(nbgrader_meta, dict) and "grade_id" in nbgrader_meta and \
                not _SAFE_ID.match(str(nbgrader_meta["grade_id"])):
            nbgrader_meta["grade_id"] = f"cell-{index}"
        if "id" in cell and not _SAFE_ID.match(str(cell["id"])):
            cell["id"] = f"cell-{index}"
        cell.pop("attachments", None)  # a Markdown cell's attachments: any MIME type, shown as images
        for output in cell.get("outputs", []):
            safe_output(output)
        return cell, resources
