"""Group ``autograder/`` by pipeline stage (issue 26, item 5): a deterministic, idempotent tool (the move is done).

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

The stages, the table of modules and the generated section of ``docs/design.md`` are data, in
``tools/autograder_stages.py`` (read by ``tests/test_lint.py`` too, so the table and the rule are one definition);
this file is the rewriting.  The move was made by commit "Run tools/restructure_autograder.py" and a run now
finds nothing to move; the tool stays for branches that still carry the old names (run it after merging one).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from autograder_stages import (  # noqa: E402 - the sibling file of data, found through this file's folder
    DOC, DOC_BEGIN, DOC_END, PACKAGE, ROOT, STAGES, TABLE, doc_section, module_path, new_name, old_file,
    pending_moves, stage_init, stage_of, unknown_modules)

__all__ = ["DOC", "DOC_BEGIN", "DOC_END", "PACKAGE", "ROOT", "STAGES", "TABLE", "doc_section", "module_path",
           "new_name", "old_file", "pending_moves", "stage_init", "stage_of", "unknown_modules", "Rewriter",
           "RestructureError", "plan", "restructure", "main"]

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

DRAWING_BEGIN = "<!-- pipeline drawing: module paths rewritten by tools/restructure_autograder.py -->"
DRAWING_END = "<!-- end of the pipeline drawing -->"
TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".yml", ".yaml", ".cfg", ".txt", ".j2", ".html", ".ipynb", ".sh",
                 ".ini", ""}
EXCLUDED = {"tools/restructure_autograder.py", "tools/autograder_stages.py",
            "tests/test_restructure_autograder.py"}
"""Files never rewritten: this tool, its table and its test (their old names are the point)."""
OLD_FILES_WITH_FILE_OK = {"isolation", "sandbox", "trusted.runner", "trusted.loader", "library_code",
                          "preprocessors.safe_execute", "course", "templating", "offline_maths", "mark_scheme",
                          "formgrade"}
"""Moved modules whose ``__file__`` uses were checked by hand (same folder, or a fix-up above)."""


class RestructureError(RuntimeError):
    """The table or the fix-ups do not fit the repository: nothing was changed."""


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
                               "tools/autograder_stages.py):\n  " + "\n  ".join(unknown))
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
