"""nbgrader settings for ``run.py lab --instructor`` without a folder: writing lectures (Create Assignment toolbar).

The course's nbgrader settings are ``autograder/nbgrader_config.py``; this file loads them and points
nbgrader's course directory at the repository, with ``solutions/`` as the source folder. Release and
grade with ``dp-course release`` / ``dp-course grade`` (they write ``notebooks/`` and a report). This session
has no Formgrader (``jupyter_server_config.json`` here switches it to ``autograder.formgrade.formgrade_server``, which
without a grading run only says how to open one): it would list no submission and write a ``gradebook.db``
into the repository. Hand-grade with ``dp-course formgrade OUTPUT`` (``run.py lab --instructor OUTPUT``).
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
load_subconfig(os.path.join(_ROOT, "autograder", "nbgrader_config.py"))  # noqa: F821 - provided by traitlets
c.CourseDirectory.root = _ROOT
c.CourseDirectory.source_directory = "solutions"
