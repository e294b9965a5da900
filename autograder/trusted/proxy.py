"""The trusted kernel's side of calls into the student's kernel: a link, and proxies for the student's names.

A :class:`StudentLink` is a jupyter_client ``BlockingKernelClient`` of its own on the student kernel's
connection file (a kernel accepts several clients), opened in the trusted kernel.  It uses only the shell
channel (requests and their replies, addressed to this client alone), the control channel (interrupts) and
the heartbeat; it never subscribes to the student's IOPub, so whatever the student's code prints during a
call stays in the student's kernel.  Each request is an empty, silent ``execute_request`` whose user
expression calls :mod:`autograder.trusted.agent` (measured: about 4 ms per round trip on a loaded 2-core
machine, against about 1.2 ms for a comm; see ``docs/design.md`` for why the shell channel wins).

Every reply is hostile data: its size is capped by ZeroMQ (``MAXMSGSIZE``) and :class:`codec.Limits`, it is
parsed as JSON and decoded into plain values only, and an exception the student's code raised comes back
as a type *name* that is re-raised here only as the built-in exception of that name (else
:class:`StudentCodeError`).  Calls are bounded by the deadline of the running test cell: past it the student's
kernel is interrupted and the call raises :class:`StudentTimeout`.
"""

from __future__ import annotations

import builtins
import json
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from queue import Empty
from typing import Any

import zmq
from jupyter_client.blocking.client import BlockingKernelClient

from . import codec
from .plain import PLAIN_DATA
from .agent import MAX_WARNINGS, PROTOCOL

RECEIVE_HWM = 4
"""Messages each socket of the link queues from the student's kernel (ZeroMQ's default: 1000); the same figure
as :data:`autograder.course.limits.RECEIVE_HWM`, which this module (loaded in the trusted kernel) does not import."""

__all__ = ["StudentCodeError", "StudentTimeout", "StudentKernelError", "StudentFunction", "Unavailable",
           "StudentLink", "LinkStats", "builtin_exception", "builtin_warning", "reraise_warnings"]

MAX_MESSAGE_CHARS = 2000
"""Longest message of an exception re-raised from the student's code."""

MAX_LIBRARY_NAMES = 10_000
"""Most names of library functions one call may report (the course library has far fewer functions)."""

MAX_LIBRARY_NAME_CHARS = 500
"""Longest qualified name of a library function a reply may hold."""


class StudentCodeError(Exception):
    """The student's code failed in a way a test cannot use: a non-built-in exception, a result that is not
    plain data, a name that is not a function or plain data."""


class StudentTimeout(StudentCodeError):
    """A call into the student's code did not return within the time left for the test cell."""


class StudentKernelError(StudentCodeError):
    """The student's kernel did not answer a request properly (it died, hangs, or sent a garbled reply)."""


_NOT_RERAISED = (StopIteration, StopAsyncIteration, Warning)
"""Built-in exceptions that would change the control flow of a test (a ``StopIteration`` ends a ``map``
silently) or are not errors; they come back as :class:`StudentCodeError`."""


def builtin_exception(name: Any) -> type[Exception] | None:
    """The built-in exception class called ``name`` that a student's error may be re-raised as, or None."""
    cls = getattr(builtins, name, None) if isinstance(name, str) and name.isidentifier() else None
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, _NOT_RERAISED):
        return cls
    return None


def builtin_warning(name: Any) -> type[Warning] | None:
    """The built-in warning category called ``name`` that a student's warning may be raised again as, or None."""
    cls = getattr(builtins, name, None) if isinstance(name, str) and name.isidentifier() else None
    return cls if isinstance(cls, type) and issubclass(cls, Warning) else None


STUDENT_CODE = "<student's code>"
"""File name under which the warnings of the student's code are raised again (never shown: see
:func:`session.format_warning`)."""


def reraise_warnings(name: str, found: Any) -> None:
    """Raise again, here, the warnings a call to the student's ``name`` raised in the student's kernel.

    Each one keeps its built-in category (a ``class MyWarning(RuntimeWarning)`` comes back as
    ``RuntimeWarning("MyWarning: ...")``, others as ``UserWarning``) and its message, and is issued as from
    the notebook's own code (module ``__main__``), so the test's warning filters decide as they would in one
    kernel: shown (on stderr, which fails an nbgrader test), recorded (``warnings.catch_warnings(record=True)``),
    ignored, or raised (``simplefilter("error")``).  Anything malformed is dropped (the reply is hostile data).
    """
    if not isinstance(found, list):
        return
    for info in found[:MAX_WARNINGS]:
        if not isinstance(info, dict):
            continue
        category = builtin_warning(info.get("builtin")) or UserWarning
        type_name = str(info.get("type", ""))[:100]
        message = str(info.get("message", ""))[:MAX_MESSAGE_CHARS]
        if type_name != category.__name__:
            message = f"{type_name}: {message}"
        lineno = info.get("lineno")
        warnings.warn_explicit(message, category, STUDENT_CODE, lineno if type(lineno) is int else 0,
                               module="__main__")


def _make_exception(cls: type[Exception], message: str) -> Exception:
    """``cls(message)``, or the nearest base class that can be built from one message."""
    for base in cls.__mro__:
        if isinstance(base, type) and issubclass(base, Exception):
            try:
                return base(message)
            except TypeError:
                continue
    return StudentCodeError(message)                                  # pragma: no cover - Exception(msg) works


@dataclass
class LinkStats:
    """Counters of one link (one notebook)."""

    requests: int = 0
    calls: int = 0
    seconds: float = 0.0
    chars_sent: int = 0
    chars_received: int = 0
    timeouts: int = 0


class StudentFunction:
    """Stands for the student's function ``name`` in the trusted kernel: calling it calls the student's function
    in the student's kernel with the arguments by value, and returns the result by value."""

    def __init__(self, name: str, link: StudentLink) -> None:
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = f"The student's function {name}, run in the student's kernel."
        self._link = link

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._link.call(self.__name__, args, kwargs)

    def counted_call(self, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        """The call, and the number of Python lines the student's own code ran during it, counted in the
        student's kernel (:func:`agent.counted_call`); what :func:`dp_course.testing.count_python_lines` uses
        for a size test when the function is a proxy."""
        return self._link.counted_call(self.__name__, args, kwargs)

    def library_call(self, *args: Any, **kwargs: Any) -> tuple[Any, frozenset[str]]:
        """The call, and the qualified names of the course library's functions that ran during it, traced in
        the student's kernel (:func:`agent.traced_call`); what :func:`dp_course.testing.library_calls` uses for a
        library-call test when the function is a proxy."""
        return self._link.library_call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<student function {self.__name__}>"


def function_name(value: Any) -> str | None:
    """The name a :class:`StudentFunction` stands for (used to pass one as an argument), else None."""
    return value.__name__ if type(value) is StudentFunction else None


class Unavailable:
    """Stands for a student's name that a test cannot use (an object, a class, a module the trusted kernel has
    not imported, a value too large): any use raises :class:`StudentCodeError` saying why."""

    def __init__(self, name: str, reason: str) -> None:
        object.__setattr__(self, "_message", f"{name} is {reason}; test cells may only use the student's "
                                             f"functions and plain data ({PLAIN_DATA})")

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise StudentCodeError(object.__getattribute__(self, "_message"))

    __call__ = __getattr__ = __setattr__ = __getitem__ = __iter__ = __len__ = __bool__ = _fail
    __float__ = __int__ = __index__ = __complex__ = __array__ = __contains__ = _fail
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __neg__ = __abs__ = __pow__ = __rpow__ = _fail
    __hash__ = None                                                                   # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_message').split(';')[0]}>"


def _url(info: Mapping[str, Any], port: str) -> str:
    """ZeroMQ address of one of a kernel's sockets (as jupyter_client builds it: ``ipc://path-port``)."""
    if info.get("transport", "tcp") == "tcp":
        return f"tcp://{info['ip']}:{int(info[port])}"
    return f"{info['transport']}://{info['ip']}-{int(info[port])}"


class StudentLink:
    """A connection from the trusted kernel to the agent in the student's kernel.

    Args:
        connection_info: the student kernel's connection info (``KernelManager.get_connection_info()``, with
            the key as text); ``ipc`` and ``tcp`` transports both work.
        package: the package name the agent was installed under (:func:`runner.install_agent`).
        limits: caps on every message in both directions.
        max_message_bytes: ZeroMQ's cap on one incoming message (bigger ones are dropped by ZeroMQ); each socket
            queues at most :data:`RECEIVE_HWM` incoming messages.
        interrupt_grace: seconds to wait for the student's kernel to answer after an interrupt.
        heartbeat_seconds: silence on the heartbeat after which the student's kernel counts as dead.
    """

    def __init__(self, connection_info: Mapping[str, Any], *, package: str = "_dpc_trusted",
                 limits: codec.Limits = codec.DEFAULT_LIMITS, max_message_bytes: int = 32 * 2**20,
                 interrupt_grace: float = 5.0, heartbeat_seconds: float = 3.0) -> None:
        self.limits = limits
        self.interrupt_grace = interrupt_grace
        self.stats = LinkStats()
        self.state = "ok"             # "ok", "unresponsive", "dead", "closed"
        self._agent = f"__import__('sys').modules[{package + '.agent'!r}]"
        self._deadline: float | None = None
        self._heartbeat_seconds = float(heartbeat_seconds)
        self._context = zmq.Context()
        self._context.setsockopt(zmq.MAXMSGSIZE, int(max_message_bytes))
        self._context.setsockopt(zmq.RCVHWM, RECEIVE_HWM)  # a DEALER flood queues 4 messages, not 1000
        self._context.setsockopt(zmq.SNDTIMEO, 2000)   # a send to a kernel that is gone fails instead of blocking
        self._context.setsockopt(zmq.LINGER, 0)
        info = dict(connection_info)
        self._kc = BlockingKernelClient(context=self._context)
        self._kc.load_connection_info(info)  # type: ignore[arg-type]  # a plain dict of the same keys
        self._kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=True)
        self._hb = self._context.socket(zmq.DEALER)
        self._hb.connect(_url(info, "hb_port"))
        self._pings = 0

    # ---- lifecycle ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the channels and free the sockets (the student's kernel is left running)."""
        if self.state != "closed":
            self._kc.stop_channels()
            self._hb.close()
            self._context.term()
            self.state = "closed"

    def set_deadline(self, seconds: float | None) -> None:
        """Calls from now on must finish within ``seconds`` (None: no limit)."""
        self._deadline = None if seconds is None else time.monotonic() + float(seconds)

    # ---- requests -------------------------------------------------------------------------------------

    def describe(self, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The student kernel's description of each name (see :func:`agent.describe_value`), unchecked
        except for its shape; :func:`names.resolve` turns it into values."""
        request = json.dumps({"names": list(names), "limits": asdict(self.limits)})
        reply = self._request(f"{self._agent}.describe(globals(), {request!r})", "looking up your names")
        found = reply.get("names")
        if not isinstance(found, dict):
            raise StudentKernelError("the student's kernel sent a garbled answer when the test looked up names")
        return {name: found[name] for name in names if isinstance(found.get(name), dict)}

    def decode(self, tree: Any) -> Any:
        """Plain data from a tree the student's kernel sent (see :mod:`codec`)."""
        return codec.from_tree(tree, self.limits)

    def call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """``name(*args, **kwargs)`` in the student's kernel; the result by value.

        Raises:
            TypeError: an argument is not plain data (a mistake in the test).
            the built-in exception the student's code raised (``ValueError``, ``NotImplementedError``, ...),
            StudentCodeError: another exception, or a result that is not plain data,
            StudentTimeout: the call did not finish in time; the student's kernel was interrupted.
        """
        return self._call(name, args, kwargs)[0]

    def counted_call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, int]:
        """As :meth:`call`, and the number of Python lines the student's own code ran during the call, counted
        in the student's kernel (:func:`agent.counted_call`; a size test).

        Raises:
            as :meth:`call`; StudentKernelError: the reply carries no count (a non-negative integer).
        """
        result, lines, _ = self._call(name, args, kwargs, count_lines=True)
        return result, lines

    def library_call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, frozenset[str]]:
        """As :meth:`call`, and the qualified names of the course library's functions that ran during the call,
        traced in the student's kernel (:func:`agent.traced_call`; a library-call test).

        Raises:
            as :meth:`call`; StudentKernelError: the reply carries no list of names (at most
            :data:`MAX_LIBRARY_NAMES` strings of at most :data:`MAX_LIBRARY_NAME_CHARS` characters).
        """
        result, _, names = self._call(name, args, kwargs, library_calls=True)
        return result, names

    def _call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, count_lines: bool = False,
              library_calls: bool = False) -> tuple[Any, int, frozenset[str]]:
        generators = codec.Generators()
        refs = codec.FunctionRefs(name_of=function_name)
        try:
            request = json.dumps({
                "name": name, "limits": asdict(self.limits), **({"count_lines": True} if count_lines else {}),
                **({"library_calls": True} if library_calls else {}),
                "args": codec.to_tree(list(args), self.limits, generators=generators, functions=refs),
                "kwargs": codec.to_tree(dict(kwargs), self.limits, generators=generators, functions=refs),
            }, allow_nan=False, separators=(",", ":"))
        except codec.CodecError as exc:
            raise TypeError(f"a test can only pass plain data to {name}: {exc}") from None
        self.stats.calls += 1
        reply = self._request(f"{self._agent}.call(globals(), {request!r})", f"running {name}")
        self._restore_generators(generators, reply.get("rngs"))
        reraise_warnings(name, reply.get("warnings"))
        if "error" in reply:
            self._raise(name, reply["error"])
        if "ok" not in reply:
            raise StudentKernelError(f"the student's kernel sent a garbled answer for {name}")
        lines = reply.get("lines") if count_lines else 0
        if not (type(lines) is int and 0 <= lines < 2**62):
            raise StudentKernelError(f"the student's kernel sent no count of the lines {name} ran")
        names = reply.get("library") if library_calls else []
        if not (type(names) is list and len(names) <= MAX_LIBRARY_NAMES
                and all(type(n) is str and 0 < len(n) <= MAX_LIBRARY_NAME_CHARS for n in names)):
            raise StudentKernelError(f"the student's kernel sent no list of the library functions {name} ran")
        try:
            return codec.from_tree(reply["ok"], self.limits), lines, frozenset(names)
        except codec.CodecError as exc:
            raise StudentCodeError(f"{name} returned a value that a test cannot use: {exc}") from None

    def _restore_generators(self, generators: codec.Generators, states: Any) -> None:
        """Give each generator argument the state it reached in the student's kernel (as in one process)."""
        if not generators.items:
            return
        if not (isinstance(states, list) and len(states) == len(generators.items)):
            raise StudentKernelError("the student's kernel did not send back the state of the generators")
        for gen, tree in zip(generators.items, states, strict=True):
            try:
                state = codec.from_tree(tree, self.limits)
                if not (isinstance(state, dict) and state.get("bit_generator") == type(gen.bit_generator).__name__):
                    raise ValueError("wrong kind of state")
                gen.bit_generator.state = state
            except (codec.CodecError, ValueError, TypeError, KeyError, OverflowError) as exc:
                raise StudentKernelError(f"the student's kernel sent back an invalid generator state: "
                                         f"{str(exc)[:200]}") from None

    def _raise(self, name: str, info: Any) -> None:
        if not isinstance(info, dict):
            raise StudentKernelError(f"the student's kernel sent a garbled error for {name}")
        type_name = str(info.get("type", "?"))[:100]
        message = str(info.get("message", ""))[:MAX_MESSAGE_CHARS]
        where = info.get("where")
        if where == "result":
            hint = info.get("hint")
            if isinstance(hint, str) and hint:
                raise StudentCodeError(f"{name} returned {hint[:MAX_MESSAGE_CHARS]}")
            raise StudentCodeError(f"{name} returned a value of type {type_name}, which a test cannot use ({message})"
                                   f". Return plain data: {PLAIN_DATA}")
        if type_name == "KeyboardInterrupt" and self.stats.timeouts:
            raise StudentTimeout(f"{name} was interrupted: it ran past the time limit of this test cell")
        cls = builtin_exception(info.get("builtin"))
        if cls is None:
            raise StudentCodeError(f"{name} raised {type_name}: {message}")
        if type_name != cls.__name__:
            message = f"{type_name}: {message}"
        raise _make_exception(cls, message) from None

    def _request(self, expression: str, what: str) -> dict[str, Any]:
        """Send one user expression to the agent; its reply as a JSON object (checked only for being one)."""
        if self.state != "ok":
            raise StudentKernelError(f"the student's kernel is {self.state}; the test could not go on {what}")
        started = time.monotonic()
        budget = None if self._deadline is None else self._deadline - started
        if budget is not None and budget <= 0:
            self.stats.timeouts += 1
            raise StudentTimeout(f"no time was left in this test cell for {what}")
        try:
            msg_id = self._kc.execute("", silent=True, store_history=False, user_expressions={"r": expression},
                                      allow_stdin=False, stop_on_error=False)
        except zmq.ZMQError as exc:
            self.state = "dead"
            raise StudentKernelError(f"the student's kernel cannot be reached ({exc})") from None
        self.stats.requests += 1
        self.stats.chars_sent += len(expression)
        try:
            reply = self._await_reply(msg_id, None if budget is None else started + budget)
        except KeyboardInterrupt:                       # the grader interrupted the trusted kernel
            self.stats.timeouts += 1
            self._interrupt(msg_id)
            raise
        finally:
            self.stats.seconds += time.monotonic() - started
        if reply is None:
            self.stats.timeouts += 1
            answered = self._interrupt(msg_id)
            tail = "" if answered else "; the student's kernel does not respond any more"
            raise StudentTimeout(f"the time limit of this test cell ran out while {what}: the student's code "
                                 f"was interrupted{tail}")
        return self._expression_value(reply, what)

    def _await_reply(self, msg_id: str, end: float | None) -> dict[str, Any] | None:
        """The shell reply to ``msg_id``, or None at ``end``; other messages are dropped."""
        while True:
            remaining = 0.5 if end is None else min(0.5, end - time.monotonic())
            if remaining <= 0:
                return None
            try:
                msg = self._kc.shell_channel.get_msg(timeout=remaining)
            except Empty:
                if self._heart_stopped():
                    self.state = "dead"
                    raise StudentKernelError("the student's kernel stopped answering (it died or was "
                                             "killed)") from None
                continue
            except Exception:  # a garbled or forged message is dropped like any other
                continue
            if isinstance(msg, dict) and msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg

    def _heart_stopped(self) -> bool:
        """Whether the student's kernel fails to echo a heartbeat within ``heartbeat_seconds``.

        The heartbeat is answered by a thread of the kernel outside Python, so a kernel that is busy still
        echoes; one that died (or was killed) does not.  A socket of our own with a unique payload per ping,
        so that a late echo of an earlier ping does not count.
        """
        self._pings += 1
        ping = f"ping {self._pings}".encode()
        try:
            self._hb.send(ping, zmq.NOBLOCK)
        except zmq.ZMQError:
            return True
        end = time.monotonic() + self._heartbeat_seconds
        while (left := end - time.monotonic()) > 0:
            if not self._hb.poll(int(left * 1000)):
                break
            if self._hb.recv() == ping:
                return False
        return True

    def _interrupt(self, msg_id: str) -> bool:
        """Interrupt the student's kernel and wait for the pending reply; False (and the link unusable) if it
        does not come within ``interrupt_grace``."""
        answered = False
        try:
            self._kc.control_channel.send(self._kc.session.msg("interrupt_request", {}))
            answered = self._await_reply(msg_id, time.monotonic() + self.interrupt_grace) is not None
        except (StudentKernelError, zmq.ZMQError):
            answered = False
        finally:                                   # also when the grader interrupts this wait
            if not answered and self.state == "ok":
                self.state = "unresponsive"
        return answered

    def _expression_value(self, reply: dict[str, Any], what: str) -> dict[str, Any]:
        content = reply.get("content")
        if not isinstance(content, dict) or content.get("status") != "ok":
            raise StudentKernelError(f"the student's kernel refused the request while {what}")
        result = (content.get("user_expressions") or {}).get("r")
        if not isinstance(result, dict):
            raise StudentKernelError(f"the student's kernel sent no answer while {what}")
        if result.get("status") != "ok":
            ename = str(result.get("ename", "?"))[:100]
            if ename == "KeyboardInterrupt" and self.stats.timeouts:
                raise StudentTimeout(f"the student's code was interrupted while {what}: it ran past the time "
                                     "limit of this test cell")
            raise StudentKernelError(f"the grader's helper in the student's kernel failed while {what} ({ename}: "
                                     f"{str(result.get('evalue', ''))[:300]})")
        text = (result.get("data") or {}).get("text/plain")
        self.stats.chars_received += len(text) if isinstance(text, str) else 0
        try:
            parsed = codec.loads(text, self.limits)
        except codec.CodecError as exc:
            raise StudentKernelError(f"the student's kernel sent a garbled answer while {what}: {exc}") from None
        if not isinstance(parsed, dict) or parsed.get("protocol") != PROTOCOL:
            raise StudentKernelError(f"the student's kernel sent a garbled answer while {what}")
        return parsed
