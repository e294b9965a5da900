"""``OfflineMaths``: the feedback pages load MathJax from a copy beside them, never from a CDN.

Runs inside nbgrader's ``generate_feedback`` (the course's ``nbgrader_config.py`` and the grader's configuration
list it): it makes sure the course's feedback folder holds the copy
(:func:`autograder.course.offline_maths.install_mathjax`,
once) and points the page at it (``resources["mathjax_url"]``, read by the kit's feedback template).  So
``nbgrader generate_feedback`` and Formgrader's *Generate Feedback* button give offline pages too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool

from ..course.offline_maths import MATHJAX_URL, install_mathjax

__all__ = ["OfflineMaths"]


class OfflineMaths(Preprocessor):
    """Point the page at the local MathJax and, with ``install``, copy it into the course's feedback folder."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    install = Bool(True, help="copy MathJax into <course>/<feedback_directory>/_static/ (once)").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        if self.install:
            coursedir = CourseDirectory(config=self.config)
            install_mathjax(Path(coursedir.root) / coursedir.feedback_directory)
        resources["mathjax_url"] = MATHJAX_URL
        return nb, resources
