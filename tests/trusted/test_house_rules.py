"""House rules for ``autograder/trusted/`` and its tests (until ``tests/test_lint.py`` covers the grader):
ruff (rules of ``pyproject.toml``), mypy strict, at most 500 lines per file, no imports inside functions, every
public function annotated."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder" / "trusted"
FILES = sorted([*PACKAGE.glob("*.py"), *Path(__file__).parent.glob("*.py"), ROOT / "benchmarks" / "bench_trusted.py"])


def test_ruff():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", *map(str, FILES)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict():
    proc = subprocess.run([sys.executable, "-m", "mypy", str(PACKAGE), "--follow-imports=silent",
                           "--ignore-missing-imports"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_one_job_per_file_and_no_hidden_imports(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 500, f"{path.name} has more than 500 lines"
    tree = ast.parse(source)
    for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        inner = [n.lineno for n in ast.walk(func) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not inner, f"{path.name}: imports inside {func.name} (lines {inner})"


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_public_functions_are_annotated(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            args = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                    if a.arg not in ("self", "cls")]
            missing = [a.arg for a in args if a.annotation is None]
            assert node.returns is not None and not missing, f"{path.name}: {node.name} is not fully annotated"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_private_names_imported_across_modules(path):
    """``from module import _name`` only when ``_name`` is itself a module (``_fixtures``, ``_attack_kit``)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            bad += [f"line {node.lineno}: from {'.' * node.level}{source} import {a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                    and not (path.parent / f"{a.name}.py").exists()]
    assert not bad, f"{path.name} imports private names:\n" + "\n".join(bad)
