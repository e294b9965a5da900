"""Trusted verdicts: test cells run in a kernel of their own that never runs a student's code.

The student's kernel runs the student's cells (and the read-only setup cell); a trusted kernel runs the test
cells.  A test cell reaches the student's functions through proxies that call into the student's kernel and
bring back plain data by value; expected values, comparisons and the verdict stay on the trusted side, and
the hidden tests' source never enters the student's kernel.  See ``docs/design.md`` ("Test cells").

Modules, by side:

* both sides: :mod:`.plain` (errors, limits), :mod:`.codec` (plain data on the wire);
* the student's kernel (sent from their files): :mod:`.loader`, :mod:`.agent`;
* the trusted kernel: :mod:`.proxy` (the link and the proxies), :mod:`.names` (free names of a cell and what
  they become), :mod:`.session` (entry points the grader calls);
* the grader: :mod:`.runner` (the trusted kernel, the agent's installation, a notebook run with two kernels).
"""
