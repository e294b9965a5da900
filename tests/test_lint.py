"""The house rules of the library and the grader, checked on every test run (so the README's test command and
CI run them).

* ruff (rules E, F, W, B, UP, SIM; line length 120; configured in pyproject.toml) on ``dp_course/``,
  ``autograder/`` and the test files listed in :data:`RUFF_TESTS`;
* mypy (strict, configured in pyproject.toml) on ``dp_course/`` and ``autograder/`` (the grader without the
  two relaxations the numeric library has; the one file left out is ``autograder/nbgrader_config.py``, a
  traitlets configuration file whose ``c`` comes from the loader);
* and what neither tool checks, in both packages: one job per file (at most 500 lines), no import cycles, no
  imports inside functions, no private name imported from another module, every public function annotated;
  and for the grader: no uid changes in ``preexec_fn`` (``subprocess(user=, group=)``), the kernel guard sent
  from its own file, every module in a stage and the stages importing in one direction (the order and the
  table are ``STAGES`` and ``TABLE`` in ``tools/autograder_stages.py``, read from there).

Files whose owner is still changing them are listed in :data:`PENDING` with the reason; their checks are
expected to fail (``xfail(strict=True)``), so the entry must go as soon as the file is fixed.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dp_course", "autograder")
LIBRARY = sorted(p for name in PACKAGES for p in (ROOT / name).rglob("*.py"))
MAX_LINES = 500

RUFF_TESTS = [
    "tests/conftest.py", "tests/strategies.py", "tests/reference.py", "tests/test_lint.py",
    "tests/test_pld.py", "tests/test_pld_invariants.py", "tests/test_mechanisms.py", "tests/test_descriptions.py",
    "tests/test_numerics.py", "tests/test_validation.py", "tests/test_interactive.py",
    "tests/test_interactive_theorems.py", "tests/test_datasets.py", "tests/test_training.py",
    "tests/test_dpsgd_scenarios.py",
    # the grader's
    "tests/test_grading.py", "tests/test_intake.py", "tests/test_kernel_guard.py", "tests/test_preprocessors.py",
    "tests/test_headless.py", "tests/test_check.py", "tests/test_sandbox.py", "tests/test_cli.py",
    "tests/test_any_user.py", "tests/test_untrusted_files.py", "tests/adversarial",
    "tests/test_feedback_refresh.py", "tests/test_feedback_leaks.py", "tests/test_migration.py",
    "tests/browser/test_semester.py",
    # issue 26
    "tests/test_test_cells.py", "tests/test_one_verdict.py", "tests/_call_probe.py",
    # issue 22, what a student sees
    "tests/test_student_view.py",
    "tests/test_restructure_autograder.py",
    # issue 23
    "tests/browser/test_site.py", "tests/browser/test_lite.py", "tests/test_pld_calibration.py",
    # issue 24, item 5: the cluster docs and their sizing table
    "tests/test_cluster_docs.py",
    # issue 26, item 4: the worker's page process
    "tests/test_page_process.py",
]
"""The test files of issue 12 (the other test files belong to branches still editing them)."""

PENDING: dict[tuple[str, str], str] = {}
"""(file relative to the repository, check) -> why it is allowed to fail for now."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _cases(check: str) -> list:
    out = []
    for path in LIBRARY:
        rel = path.relative_to(ROOT).as_posix()
        reason = PENDING.get((rel, check))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(path, id=rel, marks=marks))
    return out


def _is_module(name: str) -> bool:
    """Whether ``name`` (dotted) names an importable module."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is a module, not a package
        return False


def _tool(name: str) -> list[str]:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed: it is in the dev extra (python3 run.py setup, or "
                    f"pip install -e '.[dev]')")
    return [sys.executable, "-m", name]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


# --------------------------------------------------------------------------------------------------------
# the tools
# --------------------------------------------------------------------------------------------------------

def test_ruff() -> None:
    """ruff finds nothing in the library and the library test files (configuration: pyproject.toml)."""
    result = _run([*_tool("ruff"), "check", "--no-cache", *PACKAGES, *RUFF_TESTS])
    assert result.returncode == 0, f"ruff check failed:\n{result.stdout}{result.stderr}"


def test_mypy() -> None:
    """mypy (strict, pyproject.toml) finds no type error in the library and the grader."""
    result = _run(_tool("mypy"))
    assert result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"


def test_ruff_configuration_is_the_agreed_one() -> None:
    """Rules E, F, W, B, UP, SIM at line length 120 (a narrower selection would make test_ruff too easy)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert config["ruff"]["line-length"] == 120
    assert set(config["ruff"]["lint"]["select"]) >= {"E", "F", "W", "B", "UP", "SIM"}
    assert config["mypy"]["strict"] is True
    assert set(config["mypy"]["files"]) >= set(PACKAGES)
    # the grader is checked in full: no relaxation, nothing left out but the traitlets configuration file
    grader = [o for o in config["mypy"]["overrides"] if "autograder.*" in o["module"]]
    assert grader and all(o.get("disallow_any_generics") and o.get("warn_return_any") for o in grader)
    assert not any(o.get(k) for o in config["mypy"]["overrides"] if any(m.startswith("autograder") for m in o["module"])
                   for k in ("ignore_errors", "ignore_missing_imports"))
    assert config["mypy"]["exclude"] == ["autograder/nbgrader_config\\.py$"]


# --------------------------------------------------------------------------------------------------------
# what the tools do not check
# --------------------------------------------------------------------------------------------------------

def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@pytest.mark.parametrize("path", _cases("length"))
def test_one_job_per_file(path: Path) -> None:
    """No source file of the library or the grader is over 500 lines."""
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines (at most {MAX_LINES}): split it by job"


@pytest.mark.parametrize("path", _cases("imports"))
def test_no_imports_inside_functions(path: Path) -> None:
    """Imports are at module level (an import inside a function hides a dependency or dodges a cycle)."""
    inner = [f"line {node.lineno}: {ast.unparse(node)}" for func in ast.walk(_tree(path))
             if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
             for node in ast.walk(func) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not inner, f"{path.relative_to(ROOT)} imports inside functions:\n" + "\n".join(inner)


def _library_imports(path: Path) -> set[str]:
    """Modules of :data:`PACKAGES` imported at module level by ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _tree(path).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(PACKAGES)}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith(PACKAGES):
                found.add(target)
                # "from .pkg import submodule" imports the submodule too
                found |= {f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")}
    return found


def test_no_import_cycles() -> None:
    """The module-level imports inside dp_course and autograder form no cycle."""
    modules = {_module_name(p): p for p in LIBRARY}
    graph = {m: {t for t in _library_imports(p) if t in modules and t != m} for m, p in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert graph["dp_course.mechanisms"] >= {"dp_course.pld"}, "mechanisms builds on pld (the chosen direction)"
    assert not any(t.startswith("dp_course.mechanisms") for t in graph["dp_course.pld"]), "pld knows no mechanism"


def _library_and_tests() -> list:
    tests = [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in sorted((ROOT / "tests").rglob("*.py"))]
    return _cases("private") + tests


@pytest.mark.parametrize("path", _library_and_tests())
def test_no_private_names_imported_across_modules(path: Path) -> None:
    """``from module import _name`` only for a private *module* (a test of ``_validation`` imports it)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    bad = []
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            source = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            if not alias.name.startswith("_") or alias.name.startswith("__"):
                continue
            if not _is_module(f"{source}.{alias.name}"):
                bad.append(f"line {node.lineno}: from {source} import {alias.name}")
    assert not bad, f"{path.relative_to(ROOT)} imports private names from other modules:\n" + "\n".join(bad)


def _public_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions and methods of module-level classes whose names do not start with '_'."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            found.append(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            found += [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and (not f.name.startswith("_") or f.name == "__init__")]
    return found


@pytest.mark.parametrize("path", _cases("annotations"))
def test_public_functions_are_annotated(path: Path) -> None:
    """Every parameter and the return value of every public function and method carry a type."""
    missing = []
    for func in _public_functions(_tree(path)):
        args = func.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, [args.vararg, args.kwarg])]
        untyped = [a.arg for a in params if a.annotation is None and a.arg not in ("self", "cls")]
        if untyped or func.returns is None:
            missing.append(f"line {func.lineno}: {func.name}({', '.join(untyped)})"
                           + (" -> ?" if func.returns is None else ""))
    assert not missing, f"{path.relative_to(ROOT)}: public functions without types:\n" + "\n".join(missing)


# --------------------------------------------------------------------------------------------------------
# the grader's own rules (issue 12)
# --------------------------------------------------------------------------------------------------------

GRADER = ROOT / "autograder"
ORCHESTRATION = "autograder/run/grading.py"
ORCHESTRATION_LINES = 350
STANDALONE = ["autograder.guard.kernel_guard", "autograder.guard.library_code", "autograder.isolation.launch_inside",
              "autograder.isolation.probe_inside"]
"""Modules sent to another interpreter (the kernel, or ``python -I -S`` in the sandbox) and run from their text."""


def _source(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not importable"
    return Path(spec.origin)


def test_grading_is_orchestration_only() -> None:
    """``grading.py`` is where a reader starts: a few hundred lines that call the step modules, nothing else."""
    n = len((ROOT / ORCHESTRATION).read_text().splitlines())
    assert n <= ORCHESTRATION_LINES, f"{ORCHESTRATION} has {n} lines: move a step into its own module"


@pytest.mark.parametrize("module", STANDALONE)
def test_standalone_programs_use_the_standard_library_only(module: str) -> None:
    """What runs in the kernel or in ``python -I -S`` cannot import the kit (nor anything outside the stdlib)."""
    found = set()
    for node in ast.walk(_tree(_source(module))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module} line {node.lineno}: relative import"
            found.add((node.module or "").split(".")[0])
    outside = found - set(sys.stdlib_module_names) - {"__future__"}
    assert not outside, f"{module} imports {sorted(outside)}"


def _restructure_table() -> types.ModuleType:
    """``tools/autograder_stages.py``: the grader's stages in their order, and the table of modules."""
    path = ROOT / "tools" / "autograder_stages.py"
    spec = importlib.util.spec_from_file_location("autograder_stages", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STAGE_TOOL = _restructure_table()


def test_every_grader_module_has_a_stage() -> None:
    """Each module of ``autograder/`` sits in a stage's folder or is in the restructure tool's table (a new
    module gets one line there, so the stages stay the whole story)."""
    unknown = STAGE_TOOL.unknown_modules()
    assert not unknown, ("modules of autograder/ in no stage: add each to TABLE in "
                         "tools/autograder_stages.py\n  " + "\n  ".join(unknown))


def _stage_rank(module: str) -> float | None:
    """Position of a module's stage in ``STAGES`` (dotted name under ``autograder``); the package itself comes
    before every stage, the top-level modules after all of them; ``None``: a package with no code of its own."""
    if module == "autograder":
        return -1
    stage = STAGE_TOOL.stage_of(module.removeprefix("autograder."))
    if stage is None:
        return None
    return float("inf") if stage == "." else list(STAGE_TOOL.STAGES).index(stage)


def test_stages_import_in_one_direction() -> None:
    """A module of a stage imports only from its own stage or from the stages listed before it in
    ``tools/autograder_stages.py`` (``STAGES``): the data flow of docs/design.md, read from the folders."""
    stages = list(STAGE_TOOL.STAGES)
    back = []
    for path in (p for p in LIBRARY if p.is_relative_to(GRADER)):
        module = _module_name(path)
        rank = _stage_rank(module)
        for target in sorted(_library_imports(path)):
            if not target.startswith("autograder") or target == module:
                continue
            other = _stage_rank(target)
            if rank is not None and other is not None and other > rank:
                where = "the top" if other == float("inf") else stages[int(other)]
                back.append(f"{module} ({stages[int(rank)] if rank >= 0 else 'package'}) imports {target} ({where})")
    assert not back, "imports against the stages' order:\n  " + "\n  ".join(back)


@pytest.mark.parametrize("path", [p for p in LIBRARY if p.is_relative_to(GRADER)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_preexec_fn(path: Path) -> None:
    """Processes change user through ``subprocess(user=, group=, extra_groups=[])``, never a ``preexec_fn``
    (which runs Python between fork and exec, unsafe in a process with threads)."""
    calls = [node.lineno for node in ast.walk(_tree(path)) if isinstance(node, ast.Call)
             and any(k.arg == "preexec_fn" for k in node.keywords)]
    assert not calls, f"{path.relative_to(ROOT)}: preexec_fn on lines {calls}"


# --------------------------------------------------------------------------------------------------------
# docs/errata.md item 11: the slide deck's misspellings stay out of the kit
# --------------------------------------------------------------------------------------------------------

MISSPELLINGS = {r"\breyni": "Rényi", r"\bgradient\s+descend\b": "gradient descent"}


def test_spelling_errata_11() -> None:
    """No library file, test, lecture or page spells "Reyni" or "gradient descend" (docs/errata.md, item 11).

    The errata page itself quotes them, and so does this test.
    """
    skip = {ROOT / "docs" / "errata.md", Path(__file__).resolve()}
    files = [p for pattern in ("dp_course/**/*.py", "tests/**/*.py", "docs/*.md", "*.md", "solutions/**/*.ipynb",
                               "notebooks/**/*.ipynb") for p in ROOT.glob(pattern) if p.resolve() not in skip]
    assert len(files) > 20, "the spelling check found almost nothing to read"
    found = [f"{p.relative_to(ROOT)}: {m.group(0)!r} (write {right})" for p in files
             for pattern, right in MISSPELLINGS.items()
             for m in re.finditer(pattern, p.read_text(encoding="utf-8"), flags=re.IGNORECASE)]
    assert not found, "misspellings from the slide deck:\n" + "\n".join(found)
