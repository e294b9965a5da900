"""The test-writing conventions of ``docs/design.md`` ("Test cells"), checked on every test cell of ``solutions/``.

A test cell's verdict must not depend on where it runs (issue 26): in the student's own kernel (Run All in
JupyterLab), or in the trusted kernel of ``dp-course check`` and ``dp-course grade``.  Three conventions make
that so, and this lint enforces them without running anything:

* **one function per test cell**: a test cell is its docstring, one function ``_test_<grade_id>()`` holding
  all of its helpers and data, and the call of that function.  So in one kernel the only name it binds is
  its own, which no answer uses (the prefix ``_test_`` is reserved, checked over the solutions and every
  answer variant): a student's helper called ``_clip_rows`` is never replaced by a test's helper of the same
  name, and a test never calls a student's ``_check`` in place of its own;
* **reads only what it may**: the setup cell's names, built-ins and the names the answer cells define –
  never a name of a demonstration cell or of another test cell (in the trusted kernel those would be
  different objects, or missing);
* **tests pass copies**: checked by running, not here – ``tests/test_pipeline.py``'s
  ``test_solution_executes_within_budget`` runs every solution with the student's functions wrapped so that
  they scribble over their array, list and dict arguments after each call from a test cell
  (``tests/_call_probe.py``); a test that reads an argument again after the call fails there.
"""

from __future__ import annotations

import ast
import builtins

import pytest

import _notebooks as nbs
from autograder.trusted import names, runner

LECTURES = nbs.lectures()
PREFIX = "_test_"


def _setup_names(nb) -> set[str]:
    roles = runner.cell_roles(nb)
    return set().union(*(nbs.defined_names(c.source) for c, role in zip(nb.cells, roles, strict=True)
                         if role == "setup"))


def _answer_names(nb) -> set[str]:
    return set().union(*(nbs.defined_names(c.source) for c in nbs.answer_cells(nb).values()))


def shape_problem(source: str, grade_id: str) -> str | None:
    """Why a test cell's top level is not ``docstring; def _test_<grade_id>(): ...; _test_<grade_id>()``."""
    body = ast.parse(names.python_source(source)).body
    fname = PREFIX + grade_id
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return "it does not open with a docstring"
    rest = body[1:]
    if (len(rest) == 2 and isinstance(rest[0], ast.FunctionDef) and rest[0].name == fname
            and not any(getattr(rest[0].args, k) for k in ("posonlyargs", "args", "kwonlyargs", "vararg", "kwarg"))
            and isinstance(rest[1], ast.Expr) and isinstance(rest[1].value, ast.Call)
            and isinstance(rest[1].value.func, ast.Name) and rest[1].value.func.id == fname
            and not rest[1].value.args and not rest[1].value.keywords):
        return None
    found = ", ".join(ast.unparse(n).splitlines()[0][:60] for n in rest[:4])
    return f"after the docstring it must be `def {fname}():` (everything else inside) and `{fname}()`; found: {found}"


@pytest.mark.parametrize("name", LECTURES)
def test_every_test_cell_lives_in_its_own_function(name):
    """In one kernel a test cell binds only ``_test_<grade_id>``: its helpers cannot replace a student's."""
    problems = {gid: why for gid, cell in nbs.test_cells(nbs.read_source(name)).items()
                if (why := shape_problem(cell.source, gid))}
    assert not problems, f"{name}: test cells not in the one-function form of docs/design.md: {problems}"


@pytest.mark.parametrize("name", LECTURES)
def test_test_cells_read_only_setup_answers_and_builtins(name):
    """A test cell never reads a name that a demonstration cell or another test cell binds."""
    nb = nbs.read_source(name)
    allowed = set(dir(builtins)) | _setup_names(nb) | _answer_names(nb)
    bad = {gid: sorted(set(names.free_names(cell.source)) - allowed) for gid, cell in nbs.test_cells(nb).items()}
    bad = {gid: found for gid, found in bad.items() if found}
    assert not bad, (f"{name}: test cells read names that neither the setup cell, the answers nor Python define "
                     f"(bind them inside the test's own function): {bad}")


@pytest.mark.parametrize("name", LECTURES)
def test_no_answer_uses_the_reserved_prefix(name):
    """``_test_`` names belong to the test cells: no solution or answer variant binds one."""
    nb = nbs.read_source(name)
    codes = {f"solution {gid}": c.source for gid, c in nbs.answer_cells(nb).items()}
    for aid, entry in nbs.load_variants(name).items():
        for kind, listed in entry.items():
            codes |= {f"{kind} #{i} of {aid}": v.code for i, v in enumerate(listed)}
    bad = {where: sorted(n for n in nbs.defined_names(code) if n.startswith(PREFIX)) for where, code in codes.items()}
    bad = {where: found for where, found in bad.items() if found}
    assert not bad, f"{name}: answers bind names reserved for test cells: {bad}"


@pytest.mark.parametrize("source, problem", [
    ('"""doc"""\ndef _test_a():\n    assert f(1) == 2, "f(1)"\n\n_test_a()', None),
    ('"""doc"""\nassert f(1) == 2, "f(1)"', "must be `def _test_a():`"),
    ('"""doc"""\ndef _check():\n    pass\n_check()', "must be `def _test_a():`"),
    ('"""doc"""\ndef _test_a():\n    pass\n_test_a()\n_x = 1', "must be `def _test_a():`"),
    ('"""doc"""\ndef _test_a(x=1):\n    pass\n_test_a()', "must be `def _test_a():`"),
    ('def _test_a():\n    pass\n_test_a()', "docstring"),
])
def test_the_shape_check_itself(source, problem):
    """The lint accepts the convention's form and rejects the usual departures from it."""
    found = shape_problem(source, "a")
    assert (found is None) if problem is None else (found is not None and problem in found)
