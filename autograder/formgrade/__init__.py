"""The instructor's hand grading. Takes a grading run's output folder and gives a local JupyterLab with nbgrader's
Formgrader on it (:mod:`.formgrade`, :mod:`.formgrade_server`), each answer shown with its mark scheme
(:mod:`.mark_scheme`). It listens on 127.0.0.1 only and never grades by itself.
"""
