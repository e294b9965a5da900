"""Group ``autograder/`` by pipeline stage (issue 26, item 5): a deterministic, idempotent tool.

Run from the repository root (on a clean work tree, so the result is one reviewable commit)::

    python3 tools/restructure_autograder.py            # move, rewrite, write the stages' __init__ files
    python3 tools/restructure_autograder.py --check    # only say whether every module is in the table

What it does, in this order, and nothing else:

1. checks that every module of ``autograder/`` (sub-folders included) is in :data:`TABLE` and every
   :data:`FIXUPS` line it needs is still there; if not, it **fails before changing anything**, listing what
   is missing (a module another branch added gets one line in the table);
2. rewrites, in every tracked text file of the repository (this file excepted), the old module names to the
   new ones: Python imports through ``ast`` (``from autograder import a, b`` is split by stage, relative imports
   of moved modules become absolute), and everywhere else -- strings, comments, docs, ``pyproject.toml``,
   configuration class paths such as ``autograder.preprocessors.safe_execute.SafeExecute``, ``-m
   autograder.worker`` -- dotted names (longest module prefix) and paths ``autograder/x.py``;
3. applies :data:`FIXUPS`: the few lines that locate files relative to ``__file__`` across a moved boundary;
4. moves the files with ``git mv`` and writes each stage's ``__init__.py`` (its docstring from :data:`STAGES`),
   and the generated section of ``docs/design.md`` between :data:`DOC_BEGIN` and :data:`DOC_END`.

Idempotent: only modules still at their old place are moved and renamed, so a second run finds nothing to move
and writes the same ``__init__`` files and doc section (no change).  At the end it lists what it could not
rewrite by itself (a folder mentioned as ``autograder/preprocessors/``, a ``__file__`` in a moved module not
covered by a fix-up) for a person to look at.

:data:`STAGES` is also the order ``tests/test_lint.py`` enforces: a module imports only from its own stage
or from a stage listed before it (``autograder/__init__.py`` may be imported by all; the top-level modules
:data:`TOP` may import any stage).  The lint imports this file, so the table and the rule are one definition.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "autograder"

STAGES: dict[str, str | None] = {
    "course": (
        "The course: sources, configuration and templates.  Takes the instructor's ``solutions/`` and gives "
        "the nbgrader course directory (:mod:`.course`), the student notebooks (:mod:`.release`, "
        ":mod:`.student_copy`), the one reading of what a cell is (:mod:`.cells`), every limit (:mod:`.limits`) "
        "and the grading settings (:mod:`.settings`, with :mod:`.offline_maths` and :mod:`.templating` for the "
        "pages).  It never reads a submission and never runs a notebook; it imports no other stage."),
    "intake": (
        "Submissions in.  Takes a folder or zip of submissions and gives one checked notebook per student "
        "(:mod:`.intake`): bytes read capped and without following links (:mod:`.untrusted_files`), student ids "
        "(:mod:`.student_ids`, :mod:`.lms`), deadlines (:mod:`.deadlines`), lines for the instructor to review "
        "(:mod:`.review`), and the :mod:`.events` every later stage records.  It never executes a notebook and "
        "never writes the gradebook."),
    "isolation": (
        "Where a student's code runs.  Takes a notebook's kernel request and gives a kernel inside the sandbox: "
        "the launcher (:mod:`.sandbox`, :mod:`.launch_inside`), bubblewrap (:mod:`.bwrap`), what this machine "
        "can isolate (:mod:`.isolation`, :mod:`.probe_inside`), caps on what the kernel writes "
        "(:mod:`.disk_watch`), permissions without a sandbox (:mod:`.protect`), the grader's side of the kernel "
        "(:mod:`.kernels`) and headless execution (:mod:`.headless`).  It never decides a score."),
    "guard": (
        "The test guard sent into the student's kernel.  Takes the kernel's helpers and IPython's machinery as "
        "they were and gives them back before each instructor cell, reporting what it restored "
        "(:mod:`.kernel_guard`, :mod:`.library_code`).  Both files run in the kernel from their text: standard "
        "library only, never an import of the kit."),
    "trusted": None,  # autograder/trusted/__init__.py keeps its own docstring
    "execute": (
        "One notebook executed.  Takes a student's notebook and gives it executed, cell by cell, with the limits "
        "and the guard, the test cells in the trusted kernel (:mod:`.safe_execute`, :mod:`.trusted_tests`), its "
        "metadata cleaned (:mod:`.drop_empty_metadata`) and one-line reasons for what failed "
        "(:mod:`.diagnostics`).  It never writes the gradebook and never sees another submission."),
    "feedback": (
        "What a student reads.  Takes a graded notebook and gives the student's page: hidden tests stripped and "
        "their outputs withheld, markup made safe, hand grading still pending said so, MathJax offline (the "
        "nbgrader preprocessors here), checked for leaks of hidden tests or replaced by a summary "
        "(:mod:`.feedback`).  It never changes a grade."),
    "run": (
        "A grading run.  Takes the checked submissions and gives grades: what is unchanged since the last run "
        "(:mod:`.state`), the course brought up to date (:mod:`.migration`), jobs for the worker processes "
        "(:mod:`.jobs`, :mod:`.workers`, :mod:`.worker`), the one writer of the gradebook (:mod:`.gradebook`, "
        ":mod:`.standings`), results, report and exports (:mod:`.results`, :mod:`.report`, :mod:`.outputs`, "
        ":mod:`.lms_export`), pages refreshed (:mod:`.feedback_refresh`); :mod:`.grading` is the orchestration. "
        "It never deletes or overwrites instructor data implicitly."),
    "check": (
        "The student's self-check.  Takes a student's own notebook and gives the verdict of its visible tests, "
        "run the way the grader runs them (:mod:`.checking`), as terminal text (:mod:`.plaintext`).  It never "
        "runs a hidden test and never writes a gradebook."),
    "formgrade": (
        "The instructor's hand grading.  Takes a grading run's output folder and gives a local JupyterLab with "
        "nbgrader's Formgrader on it (:mod:`.formgrade`, :mod:`.formgrade_server`), each answer shown with its "
        "mark scheme (:mod:`.mark_scheme`).  It listens on 127.0.0.1 only and never grades by itself."),
}
"""The stages, in the order imports may go (a stage imports only itself and the stages before it), with the
docstring of each stage's ``__init__.py`` (what it takes in, gives out, and must never do)."""

TOP = ("__init__", "cli", "demo", "nbgrader_config")
"""Modules that stay at the top of ``autograder/``: the package, the command line and the embedded demo (which
drive every stage), and nbgrader's configuration file (loaded by path)."""

DATA = ("templates", "jupyter_formgrade")
"""Folders of data that stay at the top (found through ``__file__``, see :data:`FIXUPS`)."""

TABLE: dict[str, str | None] = {
    # course
    "course": "course", "cells": "course", "limits": "course", "settings": "course", "offline_maths": "course",
    "templating": "course", "release": "course", "student_copy": "course",
    # intake
    "intake": "intake", "untrusted_files": "intake", "student_ids": "intake", "lms": "intake",
    "deadlines": "intake", "review": "intake", "events": "intake", "preprocessors.rebuild_structure": "intake",
    # isolation
    "sandbox": "isolation", "launch_inside": "isolation", "bwrap": "isolation", "isolation": "isolation",
    "probe_inside": "isolation", "disk_watch": "isolation", "protect": "isolation", "kernels": "isolation",
    "preprocessors.headless": "isolation", "memory_watch": "isolation",
    # guard
    "kernel_guard": "guard", "library_code": "guard",
    # trusted (already a package)
    "trusted": "trusted", "trusted.agent": "trusted", "trusted.codec": "trusted", "trusted.loader": "trusted",
    "trusted.names": "trusted", "trusted.plain": "trusted", "trusted.proxy": "trusted",
    "trusted.runner": "trusted", "trusted.session": "trusted",
    # execute
    "preprocessors.safe_execute": "execute", "preprocessors.trusted_tests": "execute",
    "preprocessors.drop_empty_metadata": "execute", "diagnostics": "execute", "preprocessors.output_caps": "execute",
    # feedback
    "feedback": "feedback", "feedback_render": "feedback", "preprocessors.strip_hidden_tests": "feedback",
    "preprocessors.withhold_hidden_outputs": "feedback", "preprocessors.safe_markup": "feedback",
    "preprocessors.pending_hand_grading": "feedback", "preprocessors.offline_maths": "feedback",
    # run
    "grading": "run", "jobs": "run", "workers": "run", "worker": "run", "state": "run", "migration": "run",
    "gradebook": "run", "standings": "run", "results": "run", "report": "run", "outputs": "run",
    "lms_export": "run", "feedback_refresh": "run", "executor": "run", "dask_executor": "run",
    # check
    "checking": "check", "plaintext": "check",
    # formgrade
    "formgrade": "formgrade", "formgrade_server": "formgrade", "mark_scheme": "formgrade",
    # the old package of preprocessors: its modules went to their stages, its __init__ goes
    "preprocessors": None,
    # the top
    **dict.fromkeys(TOP, "."),
    "jupyter_formgrade.nbgrader_config": ".",
}
"""Every module of the flat layout (dotted, relative to ``autograder``) -> its stage; ``"."`` stays where it is,
``None`` is removed (the old ``preprocessors/__init__.py``, whose table of contents the stages replace)."""

FIXUPS: list[tuple[str, str, str]] = [
    ("autograder/course.py", "REPO_ROOT = Path(__file__).resolve().parent.parent\n",
     "REPO_ROOT = Path(__file__).resolve().parent.parent.parent\n"),
    ("autograder/course.py", 'Path(__file__).resolve().with_name("nbgrader_config.py")',
     'Path(__file__).resolve().parent.parent / "nbgrader_config.py"'),
    ("autograder/course.py", 'Path(__file__).resolve().parent / "templates"',
     'Path(__file__).resolve().parent.parent / "templates"'),
    ("autograder/templating.py", 'Path(__file__).resolve().with_name("templates")',
     'Path(__file__).resolve().parent.parent / "templates"'),
    ("autograder/offline_maths.py", 'Path(__file__).resolve().parent / "templates"',
     'Path(__file__).resolve().parent.parent / "templates"'),
    ("autograder/mark_scheme.py", 'Path(__file__).resolve().parent / "templates"',
     'Path(__file__).resolve().parent.parent / "templates"'),
    ("autograder/formgrade.py", 'Path(__file__).resolve().parent / "jupyter_formgrade"',
     'Path(__file__).resolve().parent.parent / "jupyter_formgrade"'),
    ("tests/test_preprocessors.py", 'Path(cells.__file__).with_name("kernel_guard.py")',
     '(Path(cells.__file__).parent.parent / "guard" / "kernel_guard.py")'),
    ("tests/test_preprocessors.py", 'Path(cells.__file__).with_name("library_code.py")',
     '(Path(cells.__file__).parent.parent / "guard" / "library_code.py")'),
    ("tests/test_preprocessors.py", "autograder.preprocessors (hidden-test stripping, metadata clean-up)",
     "the kit's nbgrader preprocessors (hidden-test stripping, metadata clean-up)"),
    ("docs/design.md", "| `autograder/preprocessors/` | nbgrader preprocessors, one per file: ",
     "| `autograder/<stage>/` | the grader's stages, one subpackage each (\"The grader\" below lists them); the "
     "nbgrader preprocessors are in the stage that uses them, one per file: "),
]
"""(file at its old place, text, replacement): applied once, when the file's module moves (or, for a file that
does not move, when the restructure is done).  A missing text stops the tool before it changes anything."""

DOC = ROOT / "docs" / "design.md"
DOC_BEGIN = "<!-- autograder stages: generated by tools/restructure_autograder.py -->"
DOC_END = "<!-- end of the generated stages -->"
DRAWING_BEGIN = "<!-- pipeline drawing: module paths rewritten by tools/restructure_autograder.py -->"
DRAWING_END = "<!-- end of the pipeline drawing -->"
TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".yml", ".yaml", ".cfg", ".txt", ".j2", ".html", ".ipynb", ".sh",
                 ".ini", ""}
EXCLUDED = {"tools/restructure_autograder.py", "tests/test_restructure_autograder.py"}
"""Files never rewritten: this tool and its test (their old names are the point)."""
OLD_FILES_WITH_FILE_OK = {"isolation", "sandbox", "trusted.runner", "trusted.loader", "library_code",
                          "preprocessors.safe_execute", "course", "templating", "offline_maths", "mark_scheme",
                          "formgrade"}
"""Moved modules whose ``__file__`` uses were checked by hand (same folder, or a fix-up above)."""


class RestructureError(RuntimeError):
    """The table or the fix-ups do not fit the repository: nothing was changed."""


# --------------------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------------------

def module_path(name: str) -> Path:
    """The file of a dotted module name relative to ``autograder`` (``""`` is the package)."""
    parts = [PACKAGE, *name.split(".")] if name and name != "__init__" else [PACKAGE, "__init__"]
    package = ROOT.joinpath(*parts)
    return package / "__init__.py" if package.is_dir() else package.with_suffix(".py")


def old_file(old: str) -> Path:
    """Where a module of :data:`TABLE` lives in the flat layout."""
    path = (ROOT / PACKAGE).joinpath(*old.split("."))
    return path / "__init__.py" if old in ("preprocessors", "trusted") else path.with_suffix(".py")


def new_name(old: str) -> str | None:
    """The dotted name (relative to ``autograder``) a module of the flat layout gets."""
    stage = TABLE[old]
    if stage is None:
        return None
    if stage == ".":
        return old
    if old == "trusted":
        return old
    # autograder/x.py and autograder/preprocessors/x.py -> autograder/<stage>/x.py (also when x is the stage's name)
    return f"{stage}.{old.rsplit('.', 1)[-1]}"


def stage_of(module: str) -> str | None:
    """The stage of a module (dotted, relative to ``autograder``) in either layout; ``"."`` for the top.

    Raises:
        KeyError: the module is neither in a stage's folder nor in :data:`TABLE`.
    """
    first = module.split(".", 1)[0]
    if first in STAGES and (ROOT / PACKAGE / first).is_dir():
        return first
    if first in DATA or module in TOP:
        return "."
    return TABLE[module]


def current_modules() -> list[str]:
    """Every Python module under ``autograder/`` (dotted, relative to it)."""
    out = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT / PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        out.append(".".join(parts))
    return out


def unknown_modules() -> list[str]:
    """Modules of ``autograder/`` that neither sit in a stage's folder nor appear in :data:`TABLE`."""
    out = []
    for module in current_modules():
        try:
            stage_of(module)
        except KeyError:
            out.append(module)
    return out


def pending_moves() -> dict[str, str | None]:
    """Old dotted name -> new dotted name (relative to ``autograder``) for every module still at its old place."""
    moves: dict[str, str | None] = {}
    for old in TABLE:
        if TABLE[old] == "." or TABLE[old] == "trusted":
            continue
        if old_file(old).is_file():
            moves[old] = new_name(old)
    return moves


# --------------------------------------------------------------------------------------------------------
# rewriting
# --------------------------------------------------------------------------------------------------------

class Rewriter:
    """Old names to new ones in one file's text (built from the moves still to do)."""

    def __init__(self, moves: dict[str, str | None]) -> None:
        self.modules = {f"{PACKAGE}.{old}": (f"{PACKAGE}.{new}" if new else None) for old, new in moves.items()}
        self.old_all = {f"{PACKAGE}.{m}" for m in TABLE} | {PACKAGE}
        self.leftovers: list[str] = []
        self.dotted = re.compile(r"(?<![\w.])autograder(?:\.[A-Za-z_]\w*)+")
        self.paths = re.compile(r"(?<![\w./-])(autograder/)((?:preprocessors|trusted)/)?(\w+)\.py\b"
                                r"|(?<![\w./-])preprocessors/(\w+)\.py\b")

    def module(self, name: str) -> str | None:
        """The new name of an old module name (itself when it does not move)."""
        return self.modules.get(name, name)

    def _dotted(self, match: re.Match[str]) -> str:
        text = match.group(0)
        parts = text.split(".")
        for n in range(len(parts), 1, -1):
            prefix = ".".join(parts[:n])
            if prefix in self.modules:
                new = self.modules[prefix]
                if new is None:
                    self.leftovers.append(text)
                    return text
                return ".".join([new, *parts[n:]])
        return text

    def _path(self, match: re.Match[str]) -> str:
        if match.group(4):
            old = f"preprocessors.{match.group(4)}"
        else:
            old = (match.group(2) or "").replace("/", ".") + match.group(3)
        new = self.modules.get(f"{PACKAGE}.{old}")
        if not new:
            return match.group(0)
        path = new.replace(".", "/") + ".py"
        return path if match.group(1) else path.removeprefix(f"{PACKAGE}/")

    def text(self, text: str) -> str:
        """Dotted names and paths in any text."""
        return self.paths.sub(self._path, self.dotted.sub(self._dotted, text))

    def python(self, text: str, old_module: str | None) -> str:
        """A Python file: imports through ``ast`` (``old_module`` is the file's own dotted name if it is under
        ``autograder/``), then :meth:`text` on everything else."""
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return self.text(text)
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        edits: list[tuple[int, int, str]] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                new = self._import(node, old_module)
                start = offsets[node.lineno - 1] + node.col_offset
                end = offsets[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
                if new is not None:
                    tail = re.match(r"[ \t]*#[^\n]*", text[end:])
                    comment = tail.group(0) if tail else ""
                    indent = " " * node.col_offset
                    joined = ("\n" + indent).join(line + comment for line in new)
                    edits.append((start, end + len(comment), joined))
                else:
                    edits.append((start, end, text[start:end]))
        out, pos = [], 0
        for start, end, replacement in sorted(edits):
            out.append(self.text(text[pos:start]))
            out.append(replacement)
            pos = end
        out.append(self.text(text[pos:]))
        return "".join(out)

    def _import(self, node: ast.Import | ast.ImportFrom, old_module: str | None) -> list[str] | None:
        """The new import statement(s), or ``None`` when it stays as written."""
        if isinstance(node, ast.Import):
            names = []
            changed = False
            for alias in node.names:
                target = self._longest(alias.name)
                if target != alias.name:
                    changed = True
                names.append(target + (f" as {alias.asname}" if alias.asname else ""))
            return [f"import {', '.join(names)}"] if changed else None
        if node.level:
            if old_module is None:
                return None
            if old_module == "__init__":
                package = ""
            elif module_path(old_module).name == "__init__.py":
                package = old_module
            else:
                package = old_module.rpartition(".")[0]
            base = f"{PACKAGE}.{package}".rstrip(".").split(".") if package else [PACKAGE]
            base = base[: len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if not (source == PACKAGE or source.startswith(PACKAGE + ".")):
            return None
        groups: dict[str, list[str]] = {}
        for alias in node.names:
            asname = f" as {alias.asname}" if alias.asname else ""
            sub = f"{source}.{alias.name}"
            if sub in self.old_all and sub in self.modules:  # "from package import module"
                moved_to = self.modules[sub]
                if moved_to is None:
                    raise RestructureError(f"an import of the removed module {sub}")
                parent, _, leaf = moved_to.rpartition(".")
                groups.setdefault(parent, []).append(leaf + asname if leaf == alias.name
                                                     else f"{leaf} as {alias.asname or alias.name}")
            else:
                groups.setdefault(self._longest(source), []).append(alias.name + asname)
        moved = self._moved(old_module)
        if list(groups) == [source] and not (node.level and moved):
            return None
        if node.level and old_module is not None:  # relative stays relative, from the file's new package
            package = self._new_package(old_module)
            return [_from_import(_relative(module, package), names) for module, names in groups.items()]
        return [_from_import(module, names) for module, names in groups.items()]

    def _new_package(self, old_module: str) -> str:
        """The package a file of ``autograder/`` is in after the move (itself for an ``__init__.py``)."""
        if old_module == "__init__":
            return PACKAGE
        full = f"{PACKAGE}.{old_module}"
        new = self.modules.get(full) or full
        return new if module_path(old_module).name == "__init__.py" else new.rpartition(".")[0]

    def _longest(self, name: str) -> str:
        parts = name.split(".")
        for n in range(len(parts), 1, -1):
            prefix = ".".join(parts[:n])
            if prefix in self.modules and self.modules[prefix]:
                return ".".join([self.modules[prefix] or "", *parts[n:]])
        return name

    def _moved(self, old_module: str | None) -> bool:
        return old_module is not None and f"{PACKAGE}.{old_module}" in self.modules


MAX_LINE = 120
"""ruff's line length (pyproject.toml): a line a longer name pushed over it is broken in two (see :func:`reflow`)."""


def reflow(text: str, before: str) -> tuple[str, list[int]]:
    """Break the lines of Python ``text`` that are over :data:`MAX_LINE` and longer than any line of ``before``
    was: at the last space that fits, when that space is inside a comment (the rest goes on a new comment line)
    or a triple-quoted string (a docstring: the rest goes on a new line with the same indentation).  Returns the
    text and the numbers of the long lines it could not break (code, a one-line string)."""
    old_max = max((len(line) for line in before.splitlines()), default=0)
    limit = max(MAX_LINE, old_max)
    stuck: list[int] = []
    while True:
        lines = text.split("\n")
        long_lines = [i for i, line in enumerate(lines) if len(line) > limit and i + 1 not in stuck]
        if not long_lines:
            return text, stuck
        i = long_lines[0]
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip())]
        cut = line.rfind(" ", len(indent) + 1, MAX_LINE + 1)
        kind = _context(text, i + 1, cut) if cut > 0 else None
        if kind == "comment":
            lines[i: i + 1] = [line[:cut].rstrip(), f"{indent}# {line[cut:].strip()}"]
        elif kind == "string":
            lines[i: i + 1] = [line[:cut].rstrip(), indent + line[cut:].lstrip()]
        elif (comma := _comma_in_brackets(text, i + 1)) is not None:
            lines[i: i + 1] = [line[:comma].rstrip(), indent + "    " + line[comma:].lstrip()]
        else:
            stuck.append(i + 1)
            continue
        text = "\n".join(lines)


def _comma_in_brackets(text: str, row: int) -> int | None:
    """The column just after the last comma of line ``row`` that fits in :data:`MAX_LINE` and stands inside
    brackets (where Python allows a line break), or ``None``."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    depth, best = 0, None
    for token in tokens:
        if token.start[0] > row:
            break
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif (token.type == tokenize.OP and token.string == "," and token.start[0] == row and depth > 0
              and token.end[1] < MAX_LINE):
            best = token.end[1]
    return best


def _context(text: str, row: int, col: int) -> str | None:
    """Whether (``row``, ``col``) of Python ``text`` is inside a comment (``"comment"``), a triple-quoted string
    (``"string"``), or neither."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    for token in tokens:
        if token.start > (row, col):
            break
        if not token.start <= (row, col) < token.end:
            continue
        if token.type == tokenize.COMMENT:
            return "comment"
        body = token.string.lstrip("rRbBuUfF")
        if token.type == tokenize.STRING and body[:3] in ('"""', "'''"):
            opened = token.start[1] + len(token.string) - len(body) + 3
            if (token.start[0], opened) <= (row, col) < (token.end[0], token.end[1] - 3):
                return "string"
    return None


def _relative(module: str, package: str) -> str:
    """``module`` (absolute, dotted) as a relative name seen from ``package``: ``..course.limits``."""
    target, here = module.split("."), package.split(".")
    common = 0
    while common < min(len(target), len(here)) and target[common] == here[common]:
        common += 1
    return "." * (len(here) - common + 1) + ".".join(target[common:])


def _from_import(module: str, names: list[str]) -> str:
    head = f"from {module} import "
    line = head + ", ".join(names)
    if len(line) <= MAX_LINE:
        return line
    lines, current = [], head + "("
    for name in names:
        piece = name + ", "
        if len(current) + len(piece.rstrip()) + 1 > MAX_LINE and current.strip() not in ("", head.strip() + " ("):
            lines.append(current.rstrip())
            current = " " * (len(head) + 1)
        current += piece
    lines.append(current.rstrip().removesuffix(",") + ")")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------------------

def tracked_files() -> list[Path]:
    """The repository's tracked text files (but :data:`EXCLUDED`)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    out = []
    for name in names.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and path.suffix in TEXT_SUFFIXES and name not in EXCLUDED:
            out.append(path)
    return out


def _old_module_of(path: Path) -> str | None:
    if not path.is_relative_to(ROOT / PACKAGE) or path.suffix != ".py":
        return None
    parts = list(path.relative_to(ROOT / PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts else "__init__"


def stage_init(stage: str) -> str | None:
    """The text of a stage's ``__init__.py`` (``None``: the stage keeps its own)."""
    doc = STAGES[stage]
    if doc is None:
        return None
    words, lines, line = doc.split(), [], ""
    for word in words:
        if len(line) + 1 + len(word) > 112:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return '"""' + "\n".join(lines) + '\n"""\n'


def doc_section() -> str:
    """The generated part of ``docs/design.md``: the stages, their modules, their direction."""
    modules: dict[str, list[str]] = {s: [] for s in STAGES}
    for old, stage in TABLE.items():
        if stage and stage != "." and old != "trusted":
            modules[stage].append(f"`{(new_name(old) or '').rsplit('.', 1)[-1]}`")
    rows = ["| stage (`autograder/<stage>/`) | modules | what it takes in, gives out, must never do |",
            "| --- | --- | --- |"]
    for stage, doc in STAGES.items():
        text = (doc or "Test cells in a trusted kernel (see \"Trusted verdicts\" below).").replace("|", "\\|")
        text = re.sub(r":mod:`\.(\w+)`", r"`\1`", text).replace("``", "`")
        rows.append(f"| `{stage}/` | {', '.join(sorted(modules[stage]))} | {text} |")
    order = " → ".join(f"`{s}`" for s in STAGES)
    return "\n".join([
        DOC_BEGIN,
        "The folder is grouped by stage, one subpackage each, in the one direction imports may go (a stage imports "
        "only itself and the stages before it; `tests/test_lint.py` enforces it from the table in "
        f"`tools/restructure_autograder.py`): {order}. "
        f"At the top of `autograder/`: {', '.join(f'`{t}.py`' for t in TOP)} (the package, the command line, the "
        f"demo and nbgrader's configuration file, which may import any stage) and the data folders "
        f"{', '.join(f'`{d}/`' for d in DATA)}.",
        "",
        *rows,
        "",
        "Imports between the grader's modules, stage by stage (generated from the code; a name without a stage "
        "is in the same stage):",
        "",
        "```",
        *_dependency_lines(),
        "```",
        DOC_END,
    ])


def _imports_of(path: Path) -> set[str]:
    """Dotted names (relative to ``autograder``) of the grader's modules imported at module level by ``path``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    package = parts if path.name == "__init__.py" else parts[:-1]
    known = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
             for p in (ROOT / PACKAGE).rglob("*.py")}
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        found |= {t for t in targets if t in known and t != PACKAGE}
    own = ".".join(parts)
    return {t.removeprefix(f"{PACKAGE}.") for t in found if t != own}


def _dependency_lines() -> list[str]:
    out = []
    for stage in [*STAGES, "."]:
        folder = ROOT / PACKAGE / stage if stage != "." else ROOT / PACKAGE
        files = sorted(folder.rglob("*.py") if stage != "." else [folder / f"{t}.py" for t in TOP])
        plain, lines = [], []
        for path in files:
            name = path.stem if path.name != "__init__.py" else "__init__"
            deps = sorted(d.removeprefix(f"{stage}.") for d in _imports_of(path))
            deps = [d for d in deps if d != stage]
            if deps:
                lines.append(f"  {name} -> {', '.join(deps)}")
            elif name != "__init__":
                plain.append(name)
        out.append(f"{stage}/" if stage != "." else "(top)")
        if plain:
            out.append(f"  {', '.join(plain)}: no other module of the grader")
        out += lines
    return [_wrapped(line) for line in out]


def _wrapped(line: str, width: int = 116) -> str:
    if len(line) <= width:
        return line
    head, rest, pieces = line[:width], line[width:], []
    cut = head.rfind(", ") + 2
    pieces.append(line[:cut].rstrip())
    rest = line[cut:]
    while len(rest) > width - 6:
        cut = rest[: width - 6].rfind(", ") + 2
        pieces.append("      " + rest[:cut].rstrip())
        rest = rest[cut:]
    pieces.append("      " + rest)
    return "\n".join(pieces)


def _drawing_names(text: str, moves: dict[str, str | None]) -> str:
    """Bare module files in the pipeline drawing (``intake.py``) named with their stage (``intake/intake.py``),
    padding taken from the spaces after them so the columns stay."""
    if DRAWING_BEGIN not in text or DRAWING_END not in text:
        return text
    by_file: dict[str, str] = {}
    for old, new in moves.items():
        if new:
            by_file.setdefault(old.rsplit(".", 1)[-1], new.replace(".", "/"))
    for old, new in moves.items():  # a top-level module wins over a preprocessor of the same name
        if new and "." not in old:
            by_file[old] = new.replace(".", "/")

    def stage(match: re.Match[str]) -> str:
        new = by_file.get(match.group(1))
        if new is None:
            return match.group(0)
        spaces = match.group(2)
        added = len(new) - len(match.group(1))
        return f"{new}.py" + (spaces[added:] if len(spaces) > added + 1 else (" " if spaces else ""))

    head, _, rest = text.partition(DRAWING_BEGIN)
    drawing, _, tail = rest.partition(DRAWING_END)
    drawing = re.sub(r"(?<![\w/.])(\w+)\.py\b( *)", stage, drawing)
    return head + DRAWING_BEGIN + drawing + DRAWING_END + tail


def plan(moves: dict[str, str | None]) -> tuple[dict[Path, str], list[str]]:
    """Every file's new text (keyed by its current path) and the leftovers, without touching the disk.

    Raises:
        RestructureError: a fix-up's text is missing.
    """
    rewriter = Rewriter(moves)
    changed: dict[Path, str] = {}
    missing: list[str] = []
    too_long: list[str] = []
    fixups: dict[str, list[tuple[str, str]]] = {}
    for rel, old, new in FIXUPS:
        fixups.setdefault(rel, []).append((old, new))
    for path in tracked_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if moves and rel in fixups:
            for old, new in fixups[rel]:
                if old not in text:
                    missing.append(f"{rel}: {old!r}")
                text = text.replace(old, new)
        if path.suffix == ".py":
            new_text, stuck = reflow(rewriter.python(text, _old_module_of(path)), text)
            too_long.extend(f"{rel}:{n}: over {MAX_LINE} characters" for n in stuck)
        else:
            new_text = rewriter.text(text)
        if path == DOC and moves:
            new_text = _drawing_names(new_text, moves)
        if new_text != path.read_text(encoding="utf-8"):
            changed[path] = new_text
    if missing:
        raise RestructureError("fix-ups whose text is no longer there (update FIXUPS):\n  " + "\n  ".join(missing))
    leftovers = sorted(set(rewriter.leftovers)) + too_long
    for old, dest in moves.items():
        if dest and old not in OLD_FILES_WITH_FILE_OK and "__file__" in old_file(old).read_text(encoding="utf-8"):
            leftovers.append(f"autograder/{old.replace('.', '/')}.py uses __file__: check it in its new place")
    return changed, leftovers


def _with_doc_section(text: str) -> str:
    if DOC_BEGIN not in text or DOC_END not in text:
        return text
    head, _, rest = text.partition(DOC_BEGIN)
    _, _, tail = rest.partition(DOC_END)
    return head + doc_section() + tail


def _git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def restructure() -> list[str]:
    """Do it (see the module docstring); the leftovers for a person to look at.

    Raises:
        RestructureError: modules not in the table, or fix-ups that no longer fit (nothing changed).
    """
    unknown = unknown_modules()
    if unknown:
        raise RestructureError("modules of autograder/ not in TABLE (add one line each in "
                               "tools/restructure_autograder.py):\n  " + "\n  ".join(unknown))
    moves = pending_moves()
    changed, leftovers = plan(moves)
    for path, text in changed.items():
        path.write_text(text, encoding="utf-8")
    for stage in STAGES:
        (ROOT / PACKAGE / stage).mkdir(exist_ok=True)
    # a module named like its stage first goes aside (autograder/intake.py cannot live beside autograder/intake/)
    for old, new in sorted(moves.items()):
        source = old_file(old)
        if new is None:
            _git("rm", "-qf", str(source.relative_to(ROOT)))
            continue
        target = ROOT / PACKAGE / (new.replace(".", "/") + ".py")
        _git("mv", str(source.relative_to(ROOT)), str(target.relative_to(ROOT)))
    for stage in STAGES:
        init = ROOT / PACKAGE / stage / "__init__.py"
        init_text = stage_init(stage)
        if init_text is not None and (not init.is_file() or init.read_text(encoding="utf-8") != init_text):
            init.write_text(init_text, encoding="utf-8")
            _git("add", str(init.relative_to(ROOT)))
    if DOC.is_file():
        text = DOC.read_text(encoding="utf-8")
        if _with_doc_section(text) != text:
            DOC.write_text(_with_doc_section(text), encoding="utf-8")
    old_dir = ROOT / PACKAGE / "preprocessors"
    if old_dir.is_dir() and not any(old_dir.glob("*.py")):
        try:
            for junk in old_dir.rglob("*"):
                if junk.is_file() and "__pycache__" in junk.parts:
                    junk.unlink()
            for folder in sorted(old_dir.rglob("*"), reverse=True):
                folder.rmdir()
            old_dir.rmdir()
        except OSError as error:
            leftovers.append(f"autograder/preprocessors/ could not be removed: {error}")
    return leftovers


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only check that every module is in the table")
    args = parser.parse_args(argv)
    try:
        if args.check:
            unknown = unknown_modules()
            if unknown:
                raise RestructureError("modules of autograder/ not in TABLE:\n  " + "\n  ".join(unknown))
            print(f"every module is in the table; {len(pending_moves())} still to move")
            return 0
        leftovers = restructure()
    except RestructureError as error:
        print(f"restructure_autograder: {error}", file=sys.stderr)
        return 1
    print("done" + (": look at these by hand:\n  " + "\n  ".join(leftovers) if leftovers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
