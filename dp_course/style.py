"""The course's matplotlib style: colours, layout, and text sizes readable at a notebook's width.

:func:`course_style` is the whole style for the figures the library draws (:mod:`dp_course.plotting`,
:mod:`dp_course.widgets`); :func:`use_course_fonts`, which every lecture's setup cell calls, sets only the text
sizes for every figure of the notebook (``plt.subplots`` included), so that no lecture figure shows text
smaller than about :data:`MIN_TEXT_PX` pixels when JupyterLab scales it to :data:`NOTEBOOK_WIDTH_PX`.

Why these sizes: the inline backend draws at 100 dpi (1 pt = 100/72 px), the widest lecture figures are
14 inches (1400 px) and are shown scaled to the output area, about :data:`NOTEBOOK_WIDTH_PX` pixels wide on a
1280-pixel screen; the smallest named size, ``"small"`` (0.833 × ``font.size``), is then
12 × 0.833 × 100/72 × 1000/1400 ≈ 9.9 px.  Matplotlib's default (``font.size`` 10, ticks 10, legends 10) gave
about 7–8 px there.  ``tests/test_plotting.py`` measures the rendered text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
from cycler import cycler

if TYPE_CHECKING:  # matplotlib >= 3.9; only the type checker needs it
    from matplotlib.typing import RcKeyType

__all__ = ["COLORS", "NOTEBOOK_WIDTH_PX", "MIN_TEXT_PX", "FONT_SIZES", "course_style", "use_course_fonts"]

# Colour-blind-safe palette (Okabe & Ito 2008), in the order curves are drawn: blue, vermillion, bluish green,
# reddish purple, orange, sky blue, yellow, black.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

NOTEBOOK_WIDTH_PX = 1000
"""Width in pixels at which a figure is assumed to be shown (JupyterLab's output area on a 1280-px screen)."""

MIN_TEXT_PX = 10.0
"""Smallest font size, in screen pixels at :data:`NOTEBOOK_WIDTH_PX`, of any text in a lecture figure (about)."""

FONT_SIZES: dict[RcKeyType, Any] = {
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "legend.title_fontsize": 11,
    "figure.titlesize": 13,
}
"""The text sizes (points) of every course figure."""

_LAYOUT: dict[RcKeyType, Any] = {
    "axes.prop_cycle": cycler(color=COLORS),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.figsize": (7.5, 4.0),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,  # room for the legends outside the axes, no overlaps
    "legend.frameon": False,
}


@contextmanager
def course_style() -> Iterator[None]:
    """Context manager applying the course's matplotlib style (``with course_style(): ...``)."""
    with mpl.rc_context({**_LAYOUT, **FONT_SIZES}):
        yield


def use_course_fonts() -> None:
    """Set the course's text sizes (:data:`FONT_SIZES`) for every later figure of this Python process.

    Only sizes: colours and layout of a notebook's own figures are left as the notebook sets them (a global
    constrained layout would make ``fig.tight_layout()`` warn).  Idempotent.
    """
    mpl.rcParams.update(FONT_SIZES)
