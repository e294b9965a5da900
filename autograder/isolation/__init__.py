"""Where a student's code runs. Takes a notebook's kernel request and gives a kernel inside the sandbox: the
launcher (:mod:`.sandbox`, :mod:`.launch_inside`), bubblewrap (:mod:`.bwrap`), what this machine can isolate
(:mod:`.isolation`, :mod:`.probe_inside`), caps on what the kernel writes (:mod:`.disk_watch`), permissions
without a sandbox (:mod:`.protect`), the grader's side of the kernel (:mod:`.kernels`) and headless execution
(:mod:`.headless`). It never decides a score.
"""
