"""The grader's stages: ``autograder/`` grouped by pipeline stage (issue 26, item 5) - data, one definition.

:data:`STAGES` is the order ``tests/test_lint.py`` enforces: a module imports only from its own stage or from a
stage listed before it (``autograder/__init__.py`` may be imported by all; the top-level modules :data:`TOP` may
import any stage).  :data:`TABLE` gives every module of the old flat layout its stage, and every new module of
``autograder/`` gets one line there unless it sits in a stage's folder.  The lint, the generated section of
``docs/design.md`` (:func:`doc_section`) and the one-off rewriting tool ``tools/restructure_autograder.py`` (which
did the move) all read this file, so the table and the rule are one definition.

    python3 tools/autograder_stages.py    # print the generated section of docs/design.md
"""

from __future__ import annotations

import ast
import re
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
        "nbgrader preprocessors here), rendered by one converter per worker (:mod:`.feedback_render`) in the "
        "worker's page process (:mod:`.page_process`), checked for leaks of hidden tests or replaced by a summary "
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
    "preprocessors.headless": "isolation", "memory_watch": "isolation", "reaping": "isolation",
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
    "feedback": "feedback", "feedback_render": "feedback", "page_process": "feedback", "preprocessors.strip_hidden_tests": "feedback",
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

DOC = ROOT / "docs" / "design.md"
DOC_BEGIN = "<!-- autograder stages: generated by tools/restructure_autograder.py -->"
DOC_END = "<!-- end of the generated stages -->"


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
# the generated section of docs/design.md
# --------------------------------------------------------------------------------------------------------

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
        f"`tools/autograder_stages.py`): {order}. "
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


if __name__ == "__main__":
    print(doc_section())
