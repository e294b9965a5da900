"""Submissions in. Takes a folder or zip of submissions and gives one checked notebook per student
(:mod:`.intake`): bytes read capped and without following links (:mod:`.untrusted_files`), student ids
(:mod:`.student_ids`, :mod:`.lms`), deadlines (:mod:`.deadlines`), lines for the instructor to review
(:mod:`.review`), and the :mod:`.events` every later stage records. It never executes a notebook and never
writes the gradebook.
"""
