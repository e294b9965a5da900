"""The nbgrader preprocessors of the course kit, one per file (as in ``nbgrader/preprocessors/``).

=====================================  ======================================================================
:mod:`.safe_execute`                   ``SafeExecute``: nbgrader's ``Execute`` in a sandboxed kernel, with
                                       time and output limits and the test guard (grading, self-check)
:mod:`.headless`                       ``Execute`` and ``NotebookClient`` without nbclient's Output-widget
                                       emulation (plain ``nbgrader autograde``, the tests)
:mod:`.drop_empty_metadata`            ``DropEmptyNbgraderMetadata``: clean-up after ``DeduplicateIds``
:mod:`.strip_hidden_tests`             ``StripHiddenTests``: hidden tests out of the feedback
=====================================  ======================================================================

Each is configured through traitlets (``c.SafeExecute.limits = {...}``); the grader's configuration is
:func:`autograder.settings.grading_config`.
"""
