"""The course kit's tools: release, grading (``dp-course grade``), the self-check, the demo.

Start reading at :mod:`autograder.cli` (the command line) or :mod:`autograder.run.grading` (a grading run, step by
step, with the module of each step); ``docs/design.md`` has the data flow.
"""

import sys

# jsonschema (under nbformat) imports the optional IRI checker rfc3987_syntax when present: seconds per process
# (it compiles a grammar) for a format no notebook uses.  Every process of the kit -- the command line, each
# grading worker -- imports this package before nbformat.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
