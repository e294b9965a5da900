"""What a student reads. Takes a graded notebook and gives the student's page: hidden tests stripped and their
outputs withheld, markup made safe, hand grading still pending said so, MathJax offline (the nbgrader
preprocessors here), rendered by one converter per worker (:mod:`.feedback_render`) in the worker's page process
(:mod:`.page_process`), checked for leaks of hidden tests or replaced by a summary (:mod:`.feedback`). It never
changes a grade.
"""
