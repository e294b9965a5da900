"""What a student sees when a lecture cell fails: one line per unanswered exercise, a test's message first.

*Run All* on a lecture nobody has answered yet runs every self-check and test cell against stubs that
``raise NotImplementedError()``; IPython's default display is a 12–33 line traceback per cell that ends in a
bare ``NotImplementedError:``.  Each lecture's setup cell calls :func:`brief_errors` once, after which

* a ``NotImplementedError`` without a message (nbgrader's stub) shows one line naming the exercise and the
  function that is not written yet::

      NotImplementedError: Exercise 1(a) `uniform_mixture_channel`: not answered yet

* an ``AssertionError`` raised inside a visible test (a function ``_test_<grade_id>``, see ``docs/design.md``,
  "Test cells") shows its message first, then one line saying which test and which line failed;

* every other error keeps IPython's full traceback (it is the student's own bug, and the frames help).

A cell that plots a student's answer and stops at the unanswered stub would show a half-drawn figure (the
inline backend shows every open figure after the cell).  So an unanswered exercise also closes the open pyplot
figures: the cell shows its one line and no figure, as if the answer had been computed before the figure was
created.  (With the inline backend's default ``close_figures=True`` the only open figures are the cell's own.)

Only the *display* changes: the cell still fails, IPython still publishes an ``error`` output with the same
``ename`` and ``evalue`` (only its ``traceback`` lines are shorter), so nbclient still raises
``CellExecutionError`` and nbgrader still scores the test cell zero.  ``%tb`` and ``%debug`` still show the
full traceback.

How: the shell's traceback formatter (``get_ipython().InteractiveTB``) gets an instance attribute
``structured_traceback`` that shortens these two cases and hands everything else to the original method.
Not ``set_custom_exc``: that replaces ``shell.CustomTB``, a method bound on the shell, which the grader's test
guard (``autograder/guard/kernel_guard.py``) restores after every instructor cell and reports as tampering; and in
the grader's trusted kernel a custom handler of the grader's own already shows every failure as one line
(``autograder/trusted/session.py``), which this formatter never overrides (IPython calls a custom handler
before the formatter).
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import matplotlib.pyplot as plt
from IPython import get_ipython

__all__ = ["MAX_EXERCISES", "exercise_label", "brief_errors"]

MAX_EXERCISES = 1000
"""Most entries :func:`brief_errors` accepts (a lecture has a few dozen functions)."""

_RED, _RESET = "\x1b[0;31m", "\x1b[0m"
_LABEL = re.compile(r"^(?:ex|q)(\d+)([a-z]?)(?:_|$)")
_TEST_PREFIX = "_test_"


def exercise_label(grade_id: str) -> str | None:
    """The exercise a ``grade_id`` belongs to, as headed in the lecture: ``"ex1a_channel"`` → ``"Exercise 1(a)"``,
    ``"ex2_estimate"`` → ``"Exercise 2"``; ``None`` for a name that follows no exercise pattern.

    >>> exercise_label("ex3b_release"), exercise_label("ex2_estimate"), exercise_label("setup")
    ('Exercise 3(b)', 'Exercise 2', None)

    Raises:
        TypeError: if ``grade_id`` is not a string.
    """
    if not isinstance(grade_id, str):
        raise TypeError(f"grade_id must be a string such as 'ex1a_channel', got {type(grade_id).__name__}")
    m = _LABEL.match(grade_id)
    if m is None:
        return None
    return f"Exercise {m.group(1)}" + (f"({m.group(2)})" if m.group(2) else "")


def _check_exercises(exercises: Mapping[str, str] | None) -> dict[str, str]:
    if exercises is None:
        return {}
    if not isinstance(exercises, Mapping):
        raise TypeError("exercises must be None or a dict {function name: exercise label} of strings, got "
                        f"{type(exercises).__name__}")
    if len(exercises) > MAX_EXERCISES:
        raise ValueError(f"exercises must have at most {MAX_EXERCISES} entries, got {len(exercises)}")
    for key, value in exercises.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("exercises must map function names (str) to exercise labels (str), got "
                            f"{key!r}: {value!r}")
    return dict(exercises)


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


class _BriefTracebacks:
    """The replacement of ``InteractiveTB.structured_traceback`` (the original kept for every other error)."""

    def __init__(self, original: Callable[..., list[str]], exercises: dict[str, str]) -> None:
        self.original = original
        self.exercises = exercises

    def unanswered(self, frames: list[TracebackType]) -> list[str]:
        plt.close("all")               # no half-drawn figure of the missing answer
        name = frames[-1].tb_frame.f_code.co_name if frames else "<module>"
        if name.startswith("<"):       # raised at the top level of a cell
            return [f"{_RED}NotImplementedError{_RESET}: not answered yet"]
        label = self.exercises.get(name)
        what = f"{label} `{name}`" if label else f"`{name}`"
        return [f"{_RED}NotImplementedError{_RESET}: {what}: not answered yet"]

    @staticmethod
    def failed_test(value: BaseException, frames: list[TracebackType], test: TracebackType) -> list[str]:
        grade_id = test.tb_frame.f_code.co_name[len(_TEST_PREFIX):]
        last = frames[-1]
        code = last.tb_frame.f_code
        line = linecache.getline(code.co_filename, last.tb_lineno).strip()
        where = f"in test {grade_id}" + (f", {code.co_name}" if code.co_name != test.tb_frame.f_code.co_name
                                                   else "")
        return [f"{_RED}AssertionError{_RESET}: {value}",
                f"({where}, line {last.tb_lineno}{': ' + line if line else ''})"]

    def __call__(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None = None,
                 *args: Any, **kwargs: Any) -> list[str]:
        try:
            frames = _frames(tb)
            if isinstance(etype, type) and issubclass(etype, NotImplementedError) and not value.args:
                return self.unanswered(frames)
            if isinstance(etype, type) and issubclass(etype, AssertionError):
                tests = [f for f in frames if f.tb_frame.f_code.co_name.startswith(_TEST_PREFIX)]
                if tests:
                    return self.failed_test(value, frames, tests[0])
        except Exception:  # noqa: BLE001 - never hide the real error behind a failure of the short form
            pass
        return self.original(etype, value, tb, *args, **kwargs)


def brief_errors(exercises: Mapping[str, str] | None = None) -> bool:
    """Show unanswered exercises and failing visible tests briefly in this IPython kernel (see the module).

    Idempotent: calling it again (re-running the setup cell) only replaces the exercise names.

    Args:
        exercises: ``{function name: exercise label}``, e.g. ``{"uniform_mixture_channel": "Exercise 1(a)"}``
            (written into each setup cell by ``tools/brief_errors_setup.py``); a function not listed is named
            without its exercise.

    Returns:
        ``True`` when installed, ``False`` outside IPython (plain Python shows its own tracebacks).

    Raises:
        TypeError: if ``exercises`` is not ``None`` or a mapping of strings to strings.
        ValueError: if it has more than :data:`MAX_EXERCISES` entries.
    """
    names = _check_exercises(exercises)
    shell = get_ipython()
    formatter = getattr(shell, "InteractiveTB", None)
    if formatter is None:
        return False
    current = formatter.__dict__.get("structured_traceback")
    if isinstance(current, _BriefTracebacks):
        current.exercises = names
    else:
        formatter.structured_traceback = _BriefTracebacks(formatter.structured_traceback, names)
    return True
