"""Notebook text for a terminal: LaTeX maths as Unicode, Markdown emphasis removed (``dp-course check``'s output).

Exercise headings and the messages of test cells are written for a notebook, where ``$\\varepsilon$`` renders
as ε.  A terminal shows the raw source, so :func:`latex_to_text` converts every maths span (``$...$``,
``$$...$$``, ``\\(...\\)``) with pylatexenc's LaTeX-to-Unicode converter and leaves the text around it exactly
as it is (a message may quote Python values such as ``{'a': 1}`` or a Windows path).  A ``$`` opens a span only
when a non-blank character follows it, and closes one only after a non-blank character and when no digit
follows (Pandoc's rule), so prices such as "$5 and $6" stay as they are.
"""

from __future__ import annotations

import re

from pylatexenc.latex2text import LatexNodes2Text

__all__ = ["latex_to_text", "markdown_to_text"]

_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=[^\s\\])\$(?!\d)|\\\((.+?)\\\)", re.DOTALL)
_OPERATORS = re.compile(r"\\(Pr|ln|log|exp|min|max|sup|inf|lim|det|arg|sin|cos|tan)\b")
_GROUPED = re.compile(r"([_^])\{([^{}]*)\}")
_RELATIONS = re.compile(r"\s*([≤≥≈≠→⇒∈∉⊆<>=])\s*")
_CONVERTER = LatexNodes2Text(math_mode="text", strict_latex_spaces=False)


def _group(match: re.Match[str]) -> str:
    """``^{...}`` / ``_{...}``: converted, in parentheses when longer than a character (e^{kε} -> e^(kε))."""
    inner = _CONVERTER.latex_to_text(match.group(2)).strip()
    return f"{match.group(1)}({inner})" if len(inner) > 1 else f"{match.group(1)}{inner}"


def _math(src: str) -> str:
    src = _OPERATORS.sub(r" \1", src)  # \ln(x) -> " ln(x)": pylatexenc drops \Pr and glues \ln to the factor before
    text = _CONVERTER.latex_to_text(_GROUPED.sub(_group, src))
    text = _RELATIONS.sub(r" \1 ", text)
    return re.sub(r"\s+", " ", text).strip()


def latex_to_text(text: str) -> str:
    """``text`` with each LaTeX maths span replaced by readable Unicode (``$\\delta(\\varepsilon)$`` -> δ(ε)).

    Args:
        text: a heading or message; text outside maths spans is returned unchanged.

    Returns:
        The converted text.
    """
    return _MATH.sub(lambda m: _math(next(g for g in m.groups() if g is not None)), str(text))


def markdown_to_text(text: str) -> str:
    """A one-line Markdown heading as plain text: maths converted, ``**``/``__``/backticks removed."""
    text = latex_to_text(text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
    return re.sub(r"`([^`]*)`", r"\1", text).strip()
