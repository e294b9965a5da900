"""nbgrader settings for ``run.py lab --instructor`` (Formgrader and the Create Assignment toolbar).

The course's nbgrader settings are ``autograder/nbgrader_config.py``; this file loads them and points
nbgrader's course directory at the repository, with ``solutions/`` as the source folder. Release and
grade with ``dp-course release`` / ``dp-course grade`` (they write ``notebooks/`` and a report); the
Formgrader is for marking written answers and browsing a gradebook.
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
load_subconfig(os.path.join(_ROOT, "autograder", "nbgrader_config.py"))  # noqa: F821 - provided by traitlets
c.CourseDirectory.root = _ROOT
c.CourseDirectory.source_directory = "solutions"
