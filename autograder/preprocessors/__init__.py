"""The nbgrader preprocessors of the course kit, one per file (as in ``nbgrader/preprocessors/``).

=====================================  ======================================================================
:mod:`.safe_execute`                   ``SafeExecute``: nbgrader's ``Execute`` in a sandboxed kernel, with
                                       time and output limits and the test guard (grading, self-check)
:mod:`.output_caps`                    (helpers of ``SafeExecute``) the size of an output message, and
                                       shortening one to the cell's output cap
:mod:`.headless`                       ``Execute`` and ``NotebookClient`` without nbclient's Output-widget
                                       emulation (plain ``nbgrader autograde``, the tests)
:mod:`.rebuild_structure`              ``RebuildStructure``: the cells rebuilt on the released notebook (every
                                       instructor cell once, in its place; answers by ``grade_id``), each
                                       deviation flagged
:mod:`.drop_empty_metadata`            ``DropEmptyNbgraderMetadata``: clean-up after ``DeduplicateIds``
:mod:`.strip_hidden_tests`             ``StripHiddenTests``: hidden tests out of the feedback
:mod:`.withhold_hidden_outputs`        ``WithholdHiddenOutputs``: a hidden test's cell shows pass/fail only,
                                       the student's cells after it no output
:mod:`.safe_markup`                    ``SafeMarkup``: outputs reduced to text and checked images, metadata a
                                       template writes unescaped dropped (no student markup runs)
:mod:`.pending_hand_grading`           ``PendingHandGrading``: the feedback says which written answers are
                                       still to be marked by hand (instead of "0 / 2")
:mod:`.offline_maths`                  ``OfflineMaths``: the feedback loads MathJax from a copy beside it
=====================================  ======================================================================

Each is configured through traitlets (``c.SafeExecute.limits = {...}``); the grader's configuration is
:func:`autograder.settings.grading_config`.
"""
