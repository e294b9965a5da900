"""The attacks of issue 13 on the *hidden test source* find nothing when test cells run in the trusted kernel.

Each is a submission of its own: the honest exercise, the plain wrong answer to ``scale`` (so there is a hidden
test worth reading) and a trick that, in one kernel, puts the test cells' lines into the outputs – plainly or
encoded (base64, hex, rot13, reversed, zlib+base64), which a word-for-word filter of the feedback misses.  In
one kernel each trick shows the hidden lines (so the detector, :func:`_attack_kit.leaks`, and the test can
fail); with two kernels the score is that of the same notebook without the trick, and neither what the
student's kernel received (every ``execute_request`` recorded) nor any output of any cell holds a test line
or the hidden expected value, in any of those encodings.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _attack_kit import WRONG, everything_shown, leaks, requests_received, submission
from _fixtures import run_single, run_two, verdicts
from nbformat import NotebookNode

from autograder.trusted.runner import TrustedKernel

ENCODE = '''
import base64, codecs, zlib
def _smuggle(text):
    data = text.encode()
    return "\\n".join([base64.b64encode(data).decode(), data.hex(), codecs.encode(text, "rot13"), text[::-1],
                      base64.b64encode(zlib.compress(data)).decode()])
'''

LEAKS: dict[str, dict[str, tuple[str, ...] | str]] = {
    # an event hook that says it is matplotlib's inline backend and prints every later cell, encoded
    "library_event_hook": {"before": (ENCODE + '''
def flush_figures(info=None, result=None):
    cell = info.raw_cell if info is not None else result.info.raw_cell
    print(_smuggle(cell))
flush_figures.__module__ = "matplotlib_inline.backend_inline"
flush_figures.__qualname__ = "flush_figures"
get_ipython().events.register("pre_run_cell", flush_figures)
''',)},
    # the same, as an audit hook claiming to be the library's (it sees every compiled source)
    "library_audit_hook": {"before": (ENCODE + '''
def _audit(event, args):
    if event == "compile" and isinstance(args[0], (str, bytes)) and "assert" in str(args[0]):
        print(_smuggle(str(args[0])))
_audit.__module__ = "dp_course.plotting"
sys.addaudithook(_audit)
''',)},
    # a post-execute hook registered under IPython's own name, printing the cell's result info later
    "post_run_hook": {"before": (ENCODE + '''
_seen = []
def _remember(result):
    _seen.append(result.info.raw_cell)
_remember.__module__ = "IPython.core.display_trap"
get_ipython().events.register("post_run_cell", _remember)
''',), "after": ('print(_smuggle("\\n".join(_seen)))',)},
    # the last cell prints the input history, every way it is kept
    "history_dump": {"after": (ENCODE + '''
_shell = get_ipython()
_all = [*In, *_ih, *_shell.history_manager.input_hist_raw,
        *(line for _, _, line in _shell.history_manager.get_range(raw=True))]
print(_smuggle("\\n".join(map(str, _all))))
''',)},
    # the student's function reads the test being run and sends it back in its exception message
    "exception_message": {"answer": ENCODE + '''
def scale(sensitivity, epsilon):
    sources = [get_ipython().user_ns["In"][-1], get_ipython().user_ns["_ih"][-1]]
    raise ValueError(base64.b64encode(zlib.compress("\\n".join(sources).encode())).decode())
'''},
}


def leak(name: str) -> NotebookNode:
    spec = LEAKS[name]
    answer = str(spec.get("answer", WRONG))
    before, after = spec.get("before", ()), spec.get("after", ())
    assert isinstance(before, tuple) and isinstance(after, tuple)
    return submission(textwrap.dedent(answer).strip(), before=before, after=after)


@pytest.fixture(scope="module")
def baseline(trusted_kernel: TrustedKernel) -> NotebookNode:
    """The same submission without any trick, with two kernels."""
    return run_two(submission(WRONG), trusted_kernel).nb


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_the_hidden_tests_do_not_leak(name: str, trusted_kernel: TrustedKernel, baseline: NotebookNode,
                                      tmp_path: Path) -> None:
    one_nb = run_single(leak(name))
    found = leaks(everything_shown(one_nb), one_nb)
    assert any("_expected = 0.123456789" in f for f in found), f"{name} shows no hidden line in one kernel"
    if name != "exception_message":      # the smuggled forms are each found by the detector
        assert {f.split(":")[0] for f in found} >= {"base64", "hex", "rot13", "reversed"}, found

    assert verdicts(baseline) == {"honest": True, "scale": False}
    log = tmp_path / "requests.jsonl"
    nb = leak(name)
    result = run_two(nb, trusted_kernel, record=log)
    assert verdicts(result.nb) == verdicts(baseline), f"{name} changed a score"
    assert not leaks(requests_received(log), nb), "a test line reached the student's kernel"
    assert not leaks(everything_shown(result.nb), nb), "a test line reached the outputs or the feedback"
