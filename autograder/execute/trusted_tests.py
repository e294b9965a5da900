"""The trusted kernel of a grading worker, shared by the notebooks it grades (issue "Trusted verdicts").

:class:`~autograder.execute.safe_execute.SafeExecute` runs the test cells of a graded notebook in a
trusted kernel (:class:`autograder.trusted.runner.TrustedKernel`) that never runs a student's code.  nbgrader
makes a new preprocessor for every notebook, so the kernel lives here, one per worker process: started on the
first notebook, reused with a fresh namespace for each next one (about 0.02 s against 1.7 s for a new kernel),
restarted after it failed (:func:`restart`), and stopped when the worker ends (:func:`shutdown`, also at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading

from ..trusted.runner import TrustedKernel

__all__ = ["kernel", "restart", "shutdown"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_kernel: TrustedKernel | None = None


def kernel() -> TrustedKernel:
    """The worker's trusted kernel, started on first use.

    Raises:
        TrustedKernelError: the kernel started but does not answer.
    """
    global _kernel
    with _lock:
        if _kernel is None:
            trusted = TrustedKernel()
            try:
                trusted.start()
            except BaseException:
                trusted.shutdown()
                raise
            _kernel = trusted
        return _kernel


def shutdown() -> None:
    """Stop the worker's trusted kernel (if it runs)."""
    global _kernel
    with _lock:
        if _kernel is not None:
            with contextlib.suppress(Exception):  # stopping a kernel that is already gone
                _kernel.shutdown()
            _kernel = None


def restart() -> TrustedKernel:
    """Stop the trusted kernel and start a new one (after a :class:`TrustedKernelError`: the grader's fault)."""
    log.warning("grade: the trusted kernel failed; starting a new one")
    shutdown()
    return kernel()


atexit.register(shutdown)
