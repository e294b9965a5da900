"""The student's self-check. Takes a student's own notebook and gives the verdict of its visible tests, run the way
the grader runs them (:mod:`.checking`), as terminal text (:mod:`.plaintext`). It never runs a hidden test and
never writes a gradebook.
"""
