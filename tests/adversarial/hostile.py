"""Hostile submissions for the toy assignment (``autograder.demo.write_synthetic_assignment``), built by code.

Each :class:`Hostile` is a submission (notebook JSON or raw bytes) with what grading it must produce: the
score of every autograded test cell and the event kinds the report must show.  Every hostile notebook starts
from a *full solution*, then damages one thing, so that "zero for what it breaks" is exact:

toy assignment test cells: ``ex1_unit`` (1 point) and ``ex1_scaling`` (1) test answer ``ex1_answer``;
``ex2_tests`` (2) tests ``ex2_answer``; ``ex3_tests`` (1) tests ``ex3_answer``.  Full marks: 5 autograded
points (plus the hand-graded ``q4_answer``).

The file names follow an LMS download (``<student>_00_toy.ipynb``).  :func:`build` writes them into a folder
and returns the expectations; ``paths`` gives the absolute paths the snooping notebooks try to read or
write (the course directory, gradebook, solutions, another student's submission, ...).
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import json
import os
import shutil
import stat
import tempfile
import zipfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import nbformat
import psutil
from nbformat.notebooknode import NotebookNode

from adversarial import attacks
from autograder.course import cells
from autograder import demo
from autograder.course.course import make_course

FULL = {"ex1_unit": 1.0, "ex1_scaling": 1.0, "ex2_tests": 2.0, "ex3_tests": 1.0}
EX1_BROKEN = {**FULL, "ex1_unit": 0.0, "ex1_scaling": 0.0}
EX2_BROKEN = {**FULL, "ex2_tests": 0.0}
FROM_EX2_ON = {**FULL, "ex2_tests": 0.0, "ex3_tests": 0.0}
ZERO = {k: 0.0 for k in FULL}
_N = demo.SYNTHETIC_NAME
WRONG_EX1 = "def laplace_scale(sensitivity, epsilon):\n    return sensitivity / epsilon + 1.0"
WRONG_EX2 = "def rr_keep_probability(epsilon):\n    return 0.5"


@dataclass
class Hostile:
    student: str
    what: str
    content: bytes
    scores: dict[str, float]                  # expected score of each autograded test cell
    events: set[str] = field(default_factory=set)   # event kinds that must be reported
    marker: str | None = None                  # printed JSON report of the probe, checked by the tests
    alt_scores: list[dict[str, float]] = field(default_factory=list)  # other acceptable outcomes


class Toy(NamedTuple):
    """The toy assignment: its sources, a course built from them, a full solution and the release notebook."""

    solutions: Path
    course: Path
    full: NotebookNode
    release: NotebookNode


def write_notebook(path: Path, nb: NotebookNode | str) -> Path:
    """Write ``nb`` (a notebook, or its text as is) to ``path``, creating its folder; ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
    return path


def _nb(nb: NotebookNode) -> bytes:
    return nbformat.writes(nb).encode()


def cell_index(nb: NotebookNode, grade_id: str) -> int:
    """The position of the cell ``grade_id`` in ``nb``."""
    for i, c in enumerate(nb.cells):
        if cells.grade_id(c) == grade_id:
            return i
    raise KeyError(grade_id)


def probe_code(marker: str, body: str) -> str:
    """Code that runs ``body`` (which fills the list ``hits``) and prints ``marker`` + JSON(hits)."""
    return (f"import json as _j, os as _os\nhits = []\n{body}\n"
            f"print({marker!r} + _j.dumps(hits))\n")


def build(dest: Path, full: NotebookNode, release: NotebookNode, paths: dict[str, str],
          tcp_port: int) -> list[Hostile]:
    """Write every hostile submission into ``dest``; return their expectations.

    Args:
        full: the full-solution notebook (release notebook with answers filled in).
        release: the untouched student notebook.
        paths: absolute paths the snooping notebooks go after (keys: ``read_*`` and ``write_*``).
        tcp_port: a TCP port on 127.0.0.1 where the test listens (the sandbox must not reach it).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    cases: list[Hostile] = []

    def add(student: str, what: str, content: bytes, scores: dict[str, float], events: set[str] | tuple[()] = (),
            marker: str | None = None, alt: list[dict[str, float]] | tuple[()] = ()) -> None:
        cases.append(Hostile(student, what, content, scores, set(events), marker, list(alt)))
        (dest / f"{student}_00_toy.ipynb").write_bytes(content)

    def ex2(code: str) -> bytes:
        return _nb(cells.set_answer(full, "ex2_answer", code, mode="prepend"))

    # --- runaway code ---------------------------------------------------------------------------------
    add("loop", "infinite loop (interruptible)", ex2("while True:\n    pass"), EX2_BROKEN, {"cell_timeout"})
    add("loopx", "infinite loop that ignores the interrupt",
        ex2("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"), FROM_EX2_ON,
        {"kernel_unresponsive"})
    add("sleeper", "sleeps past the time limit", ex2("import time\ntime.sleep(3600)"), EX2_BROKEN,
        {"cell_timeout"})
    # The fork bomb's children are copies of the kernel; whether the kernel survives them varies from run to
    # run, so its own cell scores zero and the rest either runs or is stopped with a reason.
    add("forker", "fork bomb", ex2("import os\nwhile True:\n    os.fork()"), EX2_BROKEN, set(),
        alt=[FROM_EX2_ON])
    add("hog", "memory bomb", ex2("hog = []\nwhile True:\n    hog.append(bytearray(64 * 1024 * 1024))"),
        EX2_BROKEN, {"memory_error"})
    add("flood", "output flood", ex2("for _i in range(60000):\n    print('spam ' * 40)"), FULL,
        {"output_truncated"})
    # --- exits --------------------------------------------------------------------------------------
    add("quitter", "sys.exit()", ex2("import sys\nsys.exit(3)"), EX2_BROKEN)
    add("exiter", "os._exit()", ex2("import os\nos._exit(0)"), FROM_EX2_ON, {"kernel_died"})
    add("killer", "kills its own kernel", ex2("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
        FROM_EX2_ON, {"kernel_died"})
    add("grpkiller", "kills its own process group",
        ex2("import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)"), FROM_EX2_ON, {"kernel_died"})
    # --- broken files -------------------------------------------------------------------------------
    add("garbled", "not valid JSON", b'{"cells": [ this is not json', ZERO, {"invalid_json"})
    add("jsonish", "JSON but not a notebook", json.dumps({"hello": "world", "cells": 3}).encode(), ZERO,
        {"not_a_notebook"})
    huge = nbformat.v4.new_notebook()
    huge.cells.append(nbformat.v4.new_markdown_cell("x" * (200 * 1024 * 1024)))
    add("whale", "a 200 MB notebook", _nb(huge), ZERO, {"too_large"})
    del huge
    # --- test cells ---------------------------------------------------------------------------------
    nb = cells.set_answer(full, "ex1_answer", WRONG_EX1)
    nb.cells = [c for c in nb.cells
                if cells.grade_id(c) not in ("ex1_unit", "ex1_scaling")]
    add("deleter", "wrong answer, its test cells deleted", _nb(nb), EX1_BROKEN, {"test_cells_changed"})
    nb = cells.set_answer(full, "ex2_answer", WRONG_EX2)
    i = cell_index(nb, "ex2_tests")
    dup = copy.deepcopy(nb.cells[i])
    dup.source = "pass"
    dup2 = copy.deepcopy(dup)
    dup["id"], dup2["id"] = "dup-after", "dup-before"
    nb.cells.insert(i + 1, dup)
    nb.cells.insert(i, dup2)
    add("duplicator", "wrong answer, its test cell duplicated (copies emptied)", _nb(nb), EX2_BROKEN,
        {"test_cells_changed"})
    nb = cells.set_answer(full, "ex2_answer", WRONG_EX2)
    i = cell_index(nb, "ex2_tests")
    nb.cells[i].source = "assert True"
    nb.cells[i].metadata["nbgrader"]["points"] = 50
    add("editor", "wrong answer, its test cell edited (and its points raised)", _nb(nb), EX2_BROKEN,
        {"test_cells_changed"})
    # --- snooping -----------------------------------------------------------------------------------
    reads = [v for k, v in paths.items() if k.startswith("read_")]
    body = textwrap.dedent(f"""
        for _p in {reads!r}:
            try:
                if _os.path.isdir(_p):
                    hits.append([_p, sorted(_os.listdir(_p))[:5]])
                else:
                    with open(_p, 'rb') as _f:
                        hits.append([_p, len(_f.read(100))])
            except Exception:
                pass
        for _top in ('/tmp', '/work', '/root', '/home', '/srv', '/var', '/mnt', '/opt'):
            for _root, _dirs, _files in _os.walk(_top):
                _dirs[:] = [d for d in _dirs if d not in ('.venv', '.pyenv', 'site-packages', '.git')]
                for _f in _files:
                    if _f.endswith(('.db', '.ipynb')) or 'HIDDEN' in _f:
                        hits.append(_os.path.join(_root, _f))
        """)
    add("snoop", "reads hidden tests, solutions, the gradebook and others' files",
        _nb(cells.set_answer(full, "ex1_answer", probe_code("SNOOP:", body), mode="prepend")), FULL,
        marker="SNOOP:")
    writes = [v for k, v in paths.items() if k.startswith("write_")]
    body = textwrap.dedent(f"""
        for _p in {writes!r}:
            try:
                with open(_p, 'a') as _f:
                    _f.write('pwned')
                hits.append(_p)
            except Exception:
                pass
        """)
    add("vandal", "writes outside its folder",
        _nb(cells.set_answer(full, "ex1_answer", probe_code("VANDAL:", body), mode="prepend")), FULL,
        marker="VANDAL:")
    body = textwrap.dedent(f"""
        import socket as _s
        for _addr in [('127.0.0.1', {tcp_port}), ('::1', {tcp_port}), ('localhost', {tcp_port})]:
            try:
                _c = _s.create_connection(_addr, timeout=2)
                _c.sendall(b'leak')
                _c.close()
                hits.append(list(_addr))
            except Exception:
                pass
        """)
    add("caller", "opens network connections",
        _nb(cells.set_answer(full, "ex1_answer", probe_code("NET:", body), mode="prepend")), FULL,
        {"suspicious_code"}, marker="NET:")
    # --- monkeypatching ------------------------------------------------------------------------------
    add("patcher", "wrong answer, then monkeypatches numpy.isclose and math.isclose",
        _nb(cells.set_answer(full, "ex1_answer", WRONG_EX1 + "\nimport math\nimport numpy as np\n"
                            "np.isclose = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True")),
        EX1_BROKEN, {"suspicious_code"})
    add("sneaky", "wrong answer, patches through module dicts, builtins and sys.modules",
        _nb(cells.set_answer(full, "ex1_answer", WRONG_EX1 + textwrap.dedent("""
            import builtins, math, sys, types
            import numpy as np
            vars(np)['isclose'] = lambda *a, **k: True
            vars(math)['isclose'] = lambda *a, **k: True
            builtins.abs = lambda x: 0
            fake = types.ModuleType('numpy')
            fake.isclose = lambda *a, **k: True
            sys.modules['numpy'] = fake
            np = fake
            """))), EX1_BROKEN, {"tampering_restored", "suspicious_code"})
    # the test runs in the trusted kernel: the patch in the student's kernel is undone and reported, the wrong
    # answer fails on its own
    add("trojan", "wrong answer that patches isclose when the test calls it",
        _nb(cells.set_answer(full, "ex1_answer", textwrap.dedent("""
            def laplace_scale(sensitivity, epsilon):
                import math
                import numpy
                vars(math)['isclose'] = lambda *a, **k: True
                vars(numpy)['isclose'] = lambda *a, **k: True
                return 0.0
            """))), EX1_BROKEN, {"tampering_restored"})
    add("rewriter", "stub answers, then rewrites every later cell to `pass` (IPython input transformer)",
        _nb(cells.set_answer(release, "ex1_answer",
                            "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])",
                            mode="append")),
        ZERO, {"tampering_restored", "suspicious_code"})
    # --- attacks on the verdict and on the hidden tests (issue 13): test cells run in the trusted kernel --
    attacks.build(full, lambda student, what, nb: add(
        student, what, _nb(nb), FULL if student in attacks.LEAK_ATTACKS else EX1_BROKEN))
    return cases


def build_files(dest: Path, full: NotebookNode, release: NotebookNode, outside: Path) -> list[Hostile]:
    """Write the intake and file cases into ``dest`` (a folder of LMS downloads); return their expectations.

    A symbolic link to another file, a FIFO (a naive reader blocks on it), a zip instead of the notebook, two
    names that differ only in an accent (two students: one full, one untouched), two names that give one safe
    id (both graded, flagged), and kernels that fill their working directory or their socket folder.
    ``outside`` is a file outside the submissions that the link points to.
    """
    cases: list[Hostile] = []

    def case(student: str, what: str, scores: dict[str, float], events: set[str] | tuple[()] = (),
             alt: list[dict[str, float]] | tuple[()] = ()) -> None:
        cases.append(Hostile(student, what, b"", scores, set(events), None, list(alt)))

    outside.write_bytes(_nb(full))
    os.symlink(outside, dest / f"linker_{_N}.ipynb")
    case("linker", "a symbolic link to a full solution elsewhere", ZERO, {"symlink"})
    os.mkfifo(dest / f"piper_{_N}.ipynb")
    case("piper", "a FIFO instead of a file", ZERO, {"unreadable_file"})
    with zipfile.ZipFile(dest / f"zipper_{_N}.zip", "w") as zf:
        zf.writestr(f"zipper_{_N}.ipynb", _nb(full))
    case("zipper", "a zip holding a full solution instead of the notebook", ZERO, {"not_a_notebook"})
    (dest / f"José_{_N}.ipynb").write_bytes(_nb(full))
    case("José", "accented name (a different student from Jose)", FULL)
    (dest / f"Jose_{_N}.ipynb").write_bytes(_nb(release))
    case("Jose", "unaccented name (a different student from José)", ZERO)
    (dest / f"Ann Lee_1_assignsubmission_file_{_N}.ipynb").write_bytes(_nb(full))
    (dest / f"Ann:Lee_{_N}.ipynb").write_bytes(_nb(release))
    for name, scores in (("Ann Lee", FULL), ("Ann:Lee", ZERO)):   # the ids are made distinct: assign_ids
        sid = "Ann_Lee-" + hashlib.sha256(name.encode()).hexdigest()[:6]
        case(sid, f"{name!r}: another name with the same safe id", scores, {"id_collision"})
    fill = textwrap.dedent("""
        import os, time
        try:
            for _i in range(400):
                with open(os.path.join({where}, f'fill{{_i}}'), 'wb') as _f:
                    _f.write(b'x' * (4 << 20))
        except OSError:
            pass
        time.sleep(3)
        """)
    (dest / f"filler_{_N}.ipynb").write_bytes(_nb(cells.set_answer(full, "ex2_answer", fill.format(where="'.'"),
                                                                      mode="prepend")))
    case("filler", "fills its working directory", FROM_EX2_ON, {"disk_limit"})
    sockets = "os.path.dirname(__import__('ipykernel.connect').connect.get_connection_file())"
    (dest / f"sockfill_{_N}.ipynb").write_bytes(_nb(cells.set_answer(full, "ex2_answer", fill.format(
        where=sockets), mode="prepend")))
    # refused (the folder was taken from the kernel's own uid), or stopped by the launcher's watch
    case("sockfill", "fills the folder of its ZeroMQ sockets (a host folder)", FULL, alt=[FROM_EX2_ON])
    return cases


def lie_about_size(zpath: Path, member: str, declared: int) -> None:
    """Patch the uncompressed size of ``member`` in both its local and its central header to ``declared``."""
    data = bytearray(zpath.read_bytes())
    with zipfile.ZipFile(zpath) as zf:
        info = zf.getinfo(member)
    local = info.header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    data[local + 22:local + 26] = declared.to_bytes(4, "little")
    central = data.find(b"PK\x01\x02")
    while int.from_bytes(data[central + 42:central + 46], "little") != local:  # its record points to its header
        central = data.find(b"PK\x01\x02", central + 4)
        assert central >= 0
    data[central + 24:central + 28] = declared.to_bytes(4, "little")
    zpath.write_bytes(bytes(data))


def hostile_zip(zpath: Path, good: bytes, honest: dict[str, bytes] | None = None) -> None:
    """A zip of submissions: ``alice`` (``good``), the ``honest`` ones, and one member of every kind of trouble:
    a header that lies about the size (``liar``), a bomb (``bomb``; ``sneakybomb`` with a lying header), damaged
    compressed bytes (``mangled``), a zip inside (``nest``), unsafe paths (``escape``), a symbolic link
    (``linked``)."""
    bomb = b'{"cells": [], "x": "' + b"0" * (30 << 20) + b'"}'
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"alice_{_N}.ipynb", good)
        for student, data in (honest or {}).items():
            zf.writestr(f"{student}_{_N}.ipynb", data)
        zf.writestr(f"liar_{_N}.ipynb", good)                 # header patched below: declares 100 bytes
        zf.writestr(f"bomb_{_N}.ipynb", bomb)                 # 30 MB of zeros, honest header
        zf.writestr(f"sneakybomb_{_N}.ipynb", bomb)           # header patched below: declares 1 KB
        zf.writestr(f"mangled_{_N}.ipynb", good)              # compressed bytes damaged below
        zf.writestr(f"nest_{_N}.zip", zpath.name)             # a zip inside the zip
        zf.writestr(f"../escape_{_N}.ipynb", good)
        zf.writestr(f"/abs/escape_{_N}.ipynb", good)
        zf.writestr(f"C:\\escape_{_N}.ipynb", good)
        link = zipfile.ZipInfo(f"linked_{_N}.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
        mangled = zf.getinfo(f"mangled_{_N}.ipynb")
    lie_about_size(zpath, f"liar_{_N}.ipynb", 100)
    lie_about_size(zpath, f"sneakybomb_{_N}.ipynb", 1000)
    data = bytearray(zpath.read_bytes())
    start = mangled.header_offset + 30 + len(mangled.filename)
    data[start + 10:start + 40] = bytes(30)
    zpath.write_bytes(bytes(data))


def probe_output(autograded_nb: Path, marker: str) -> list[object] | None:
    """The JSON list a probe cell printed after ``marker`` in an autograded notebook (None if absent)."""
    nb = nbformat.read(autograded_nb, as_version=4)
    for c in nb.cells:
        for o in c.get("outputs", []):
            text = o.get("text", "")
            if marker in text:
                return json.loads(text.split(marker, 1)[1].splitlines()[0])
    return None


def make_full(course: Path, solutions: Path, name: str = demo.SYNTHETIC_NAME) -> tuple[NotebookNode, NotebookNode]:
    """(full solution, release) notebooks of the toy assignment in ``course``."""
    release = cells.student_version(course, name)
    source = nbformat.read(Path(solutions) / name / f"{name}.ipynb", as_version=4)
    return cells.full_solution(release, source), release


_PRISTINE: list[Path] = []
"""The folder the toy was built in once in this process (:func:`toy` copies it)."""


def toy(tmp: Path) -> Toy:
    """The toy assignment in ``tmp/solutions`` and a course built from it in ``tmp/release-course``.

    Built once per process (``nbgrader generate_assignment`` costs seconds, and a dozen test modules each use
    a toy of their own) into a private folder, then copied for each caller: every caller still gets fresh
    files of its own, the same as a build of its own, and notebooks it may change.
    """
    if not _PRISTINE:
        base = Path(tempfile.mkdtemp(prefix="toy-assignment-"))
        atexit.register(shutil.rmtree, base, True)
        demo.write_synthetic_assignment(base / "solutions")
        make_course(base / "release-course", [demo.SYNTHETIC_NAME], solutions_dir=base / "solutions")
        _PRISTINE.append(base)
    sols, course = Path(tmp) / "solutions", Path(tmp) / "release-course"
    shutil.copytree(_PRISTINE[0] / "solutions", sols, symlinks=True, dirs_exist_ok=True)
    shutil.copytree(_PRISTINE[0] / "release-course", course, symlinks=True, dirs_exist_ok=True)
    full, release = make_full(course, sols)
    return Toy(sols, course, full, release)


def kernel_uids(output_dir: Path) -> set[int]:
    """The dedicated uids the kernels of a grading run ran under (from the workers' event logs)."""
    uids: set[int] = set()
    for p in Path(output_dir).glob("work/*/events/*/*/*.json"):
        uid = json.loads(p.read_text()).get("kernel_uid")
        if uid is not None:
            uids.add(int(uid))
    return uids


def kernel_uid_processes(uids: set[int]) -> list[int]:
    """Live processes owned by one of ``uids`` (there must be none after grading).

    Only the uids of one run are looked at: other tests may be grading at the same time, with kernels of
    their own.
    """
    return [p.pid for p in psutil.process_iter(["uids"])
            if p.info["uids"] and uids & {p.info["uids"].real, p.info["uids"].effective}]


__all__ = ["Hostile", "Toy", "build", "build_files", "hostile_zip", "lie_about_size", "probe_output", "probe_code",
           "cell_index", "make_full", "toy", "kernel_uids", "kernel_uid_processes", "FULL", "ZERO", "EX1_BROKEN",
           "EX2_BROKEN", "FROM_EX2_ON"]
