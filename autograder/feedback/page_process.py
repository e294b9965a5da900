"""One long-lived child process of a grading worker that renders its feedback pages, under a time limit.

A student's Markdown cell can stall the renderer (a regular expression that backtracks for hours, in C, where no
signal interrupts it), so pages are never rendered in the worker itself: a stalled page would hold the worker
until the job's deadline, and the student would score zero.  Forking a fresh child for every page kept the
worker safe, but threw away, with each child, everything the renderer had learnt: the fragments of the
instructor's cells that every page of an assignment repeats (:class:`~.feedback_render.MemoisedHTMLExporter`).

:class:`PageProcess` forks the worker once, after its :class:`~.feedback_render.FeedbackRenderer` is built, and
sends that child one request per submission over a pipe.  The child renders the pages and answers with
nbgrader's result; its caches live as long as it does.  A page that takes longer than its time limit gets the
child killed (the grade is already in the gradebook; the page becomes the score-only summary) and the next
request forks a new child.  The child dies with the worker (:func:`~autograder.isolation.reaping.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from typing import Any

from .feedback_render import FeedbackRenderer
from ..execute.diagnostics import last_error
from ..isolation.reaping import die_with_parent

__all__ = ["PageProcess"]

REPLY_LIMIT = 1 << 20
"""Bytes of one answer the worker reads at most (an answer is a short JSON line)."""


class PageProcess:
    """Renders submissions' pages in one child process of the worker, each within ``seconds``.

    Args:
        renderer: the worker's renderer, built before the first fork (its exporter and template are inherited).
    """

    def __init__(self, renderer: FeedbackRenderer) -> None:
        self.renderer = renderer
        self.pid: int | None = None
        self.requests = -1
        self.answers = -1
        self.pending = b""

    def render(self, assignment: str, student: str, seconds: float) -> dict[str, Any]:
        """The pages of ``student``'s ``assignment``: ``{"success": bool, "error": str}``; never raises for a
        page that fails or stalls (past ``seconds`` the child is killed and the result says why)."""
        if self.pid is None:
            self._start()
        request = json.dumps({"assignment": assignment, "student": student}).encode() + b"\n"
        try:
            os.write(self.requests, request)
        except OSError:  # the child is gone: a new one takes the request
            self._stop()
            self._start()
            os.write(self.requests, request)
        deadline = time.monotonic() + seconds
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.answers], [], [], left)[0]:
                self._stop()
                return {"success": False, "error": f"rendering the feedback took longer than {seconds:g} s "
                                                   "(stopped; the grade is kept)"}
            chunk = os.read(self.answers, 65536)
            if not chunk or len(self.pending) + len(chunk) > REPLY_LIMIT:
                self._stop()
                return {"success": False, "error": "the feedback renderer ended without an answer"}
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        try:
            out = json.loads(line)
        except ValueError:
            self._stop()
            return {"success": False, "error": "the feedback renderer ended without an answer"}
        return {"success": bool(out.get("success")), "error": str(out.get("error", ""))[:400]}

    def close(self) -> None:
        """End the child (it exits when its requests end; killed if it does not within a few seconds)."""
        self._stop(grace=5.0)

    def _start(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork ended by os._exit)
            code = 1
            try:
                die_with_parent(worker)  # a worker killed while a page renders takes the renderer with it
                os.close(req_w)
                os.close(ans_r)
                self._serve(req_r, ans_w)
                code = 0
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(ans_w)
        self.pid, self.requests, self.answers, self.pending = pid, req_w, ans_r, b""

    def _serve(self, requests: int, answers: int) -> None:  # pragma: no cover - runs in the child
        buffer = b""
        while True:
            while b"\n" not in buffer:
                chunk = os.read(requests, 65536)
                if not chunk:
                    return
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            job = json.loads(line)
            res = self.renderer.render(str(job["assignment"]), str(job["student"]))
            data = json.dumps({"success": bool(res.get("success")), "error": last_error(res)}).encode() + b"\n"
            while data:
                data = data[os.write(answers, data):]

    def _stop(self, grace: float = 0.0) -> None:
        if self.pid is None:
            return
        for fd in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        end = time.monotonic() + grace
        while time.monotonic() < end:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        self.pid, self.requests, self.answers, self.pending = None, -1, -1, b""
