"""The test guard sent into the student's kernel. Takes the kernel's helpers and IPython's machinery as they were
and gives them back before each instructor cell, reporting what it restored (:mod:`.kernel_guard`,
:mod:`.library_code`). Both files run in the kernel from their text: standard library only, never an import of
the kit.
"""
