"""nbgrader settings of a ``dp-course formgrade`` session (this folder is first on ``JUPYTER_CONFIG_PATH``).

nbgrader's course directory is the grading run's ``OUTPUT/course``, named by the environment variable
``DP_COURSE_FORMGRADE_COURSE`` (set by ``dp-course formgrade``), whatever a user's own nbgrader configuration
says.  The course's own settings are its ``nbgrader_config.py``, which nbgrader loads from that directory.
"""

import os

# `get_config` is provided by traitlets when nbgrader loads this file (looked up so that linters see no
# undefined name)
c = globals()["get_config"]()

_COURSE = os.environ.get("DP_COURSE_FORMGRADE_COURSE")
if _COURSE:
    c.CourseDirectory.root = _COURSE
