"""nbgrader settings of a ``dp-course formgrade`` session (this folder is first on ``JUPYTER_CONFIG_PATH``).

The kit's nbgrader settings (``autograder/nbgrader_config.py``) first, so that what the Formgrader's buttons run
(*Generate Feedback* above all) follows the kit's current settings even in a course directory graded by an
older kit; then nbgrader's course directory: the grading run's ``OUTPUT/course``, named by the environment
variable ``DP_COURSE_FORMGRADE_COURSE`` (set by ``dp-course formgrade``), whatever a user's own nbgrader
configuration says.  nbgrader loads the course's own ``nbgrader_config.py`` after this file.
"""

import os

# `get_config` and `load_subconfig` are provided by traitlets when nbgrader loads this file (looked up so that
# linters see no undefined name)
c = globals()["get_config"]()
globals()["load_subconfig"](os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                         "nbgrader_config.py"))

_COURSE = os.environ.get("DP_COURSE_FORMGRADE_COURSE")
if _COURSE:
    c.CourseDirectory.root = _COURSE
