"""The course: sources, configuration and templates. Takes the instructor's ``solutions/`` and gives the nbgrader
course directory (:mod:`.course`), the student notebooks (:mod:`.release`, :mod:`.student_copy`), the one
reading of what a cell is (:mod:`.cells`), every limit (:mod:`.limits`) and the grading settings
(:mod:`.settings`, with :mod:`.offline_maths` and :mod:`.templating` for the pages). It never reads a submission
and never runs a notebook; it imports no other stage.
"""
