"""nbgrader configuration shared by every command of the course kit.

Loaded by :func:`autograder.course.course.make_course`, which copies it into each temporary nbgrader course
directory it builds, so ``generate_assignment`` (the release), ``autograde`` (grading) and the student
self-check all run with exactly these settings.
"""

from autograder.course.offline_maths import feedback_exporter_config
from autograder.course.settings import FEEDBACK_STEPS

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "dp-course"

# What a student sees in place of a solution region.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# The release must be byte-for-byte reproducible: no execution, no timestamps in the notebooks.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Execution limits while grading (per cell; the whole-notebook limit is enforced by the grading tool).
# A cell that raises does not stop the notebook: nbgrader's Execute always runs with allow_errors=True
# (it is not a configurable option in nbgrader 0.9), so later test cells are still graded.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
# nbgrader's default autograde steps, with its Execute replaced by one that does not emulate the Output
# widget: that emulation stalls widget cells for a whole cell timeout now and then
# (autograder/isolation/headless.py).
c.Autograde.autograde_preprocessors = [
    "autograder.isolation.headless.Execute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Every student notebook opens with the "how to use this notebook" cell (autograder/templates/how_to_use.md);
# make_course writes it to this path inside the course directory, and nbgrader runs with the course
# directory as its working directory.
c.IncludeHeaderFooter.header = "header.ipynb"

# Feedback (nbgrader generate_feedback, Formgrader's "Generate Feedback" button, dp-course feedback): nbgrader's
# default steps (GetGrades, CSSHTMLHeaderPreprocessor) with the hidden tests stripped, the outputs of hidden tests
# (and of the student's cells after them) withheld, every output reduced to text and checked images, the answers
# still to be marked by hand said so, and MathJax loaded from a copy beside the pages instead of a CDN.  The grader
# uses the same list: autograder.course.settings.FEEDBACK_STEPS, the one definition.
c.GenerateFeedback.preprocessors = list(FEEDBACK_STEPS)
for _key, _value in feedback_exporter_config().items():
    setattr(c.HTMLExporter, _key, _value)
