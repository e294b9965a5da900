"""One notebook executed. Takes a student's notebook and gives it executed, cell by cell, with the limits and the
guard, the test cells in the trusted kernel (:mod:`.safe_execute`, :mod:`.trusted_tests`), its metadata cleaned
(:mod:`.drop_empty_metadata`) and one-line reasons for what failed (:mod:`.diagnostics`). It never writes the
gradebook and never sees another submission.
"""
