"""``tools/restructure_autograder.py`` (issue 26 item 5): how it rewrites names, on small texts.

The tool rewrites every tracked file but this one (its inputs below are old names on purpose).  Whether the
repository itself follows the stages is ``tests/test_lint.py`` (``test_every_grader_module_has_a_stage``,
``test_stages_import_in_one_direction``).
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> types.ModuleType:
    path = ROOT / "tools" / "restructure_autograder.py"
    spec = importlib.util.spec_from_file_location("restructure_autograder", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()
MOVES = {old: tool.new_name(old) for old, stage in tool.TABLE.items() if stage not in (".", "trusted")}


def rewrite(text: str, module: str | None = None) -> str:
    return tool.Rewriter(MOVES).python(text, module)


def test_the_table_names_every_stage_and_only_stages() -> None:
    """Each module goes to a stage of ``STAGES`` (or stays at the top, or goes); every stage has modules."""
    stages = {s for s in tool.TABLE.values() if s not in (None, ".")}
    assert stages == set(tool.STAGES)
    assert tool.new_name("isolation") == "isolation.isolation"
    assert tool.new_name("preprocessors.safe_execute") == "execute.safe_execute"
    assert tool.new_name("trusted.codec") == "trusted.codec" and tool.new_name("cli") == "cli"
    assert tool.new_name("preprocessors") is None


def test_absolute_imports_are_split_by_stage() -> None:
    out = rewrite("from autograder import cells, cli, isolation  # noqa: E402\n")
    assert out == ("from autograder.course import cells  # noqa: E402\n"
                   "from autograder import cli  # noqa: E402\n"
                   "from autograder.isolation import isolation  # noqa: E402\n")
    assert rewrite("from autograder.preprocessors.headless import Execute as E\n") == \
        "from autograder.isolation.headless import Execute as E\n"
    assert rewrite("import autograder.worker\n") == "import autograder.run.worker\n"


def test_relative_imports_stay_relative_from_the_new_package() -> None:
    text = "from . import gradebook, protect\nfrom .cells import grade_id\nfrom .preprocessors import headless\n"
    assert rewrite(text, "migration") == ("from . import gradebook\nfrom ..isolation import protect\n"
                                          "from ..course.cells import grade_id\nfrom ..isolation import headless\n")
    # a module that does not move keeps its imports of modules that do not move
    assert rewrite("from . import codec, plain\n", "trusted.runner") == "from . import codec, plain\n"


def test_names_in_strings_comments_and_paths() -> None:
    """The longest old module prefix is replaced: configuration class paths, ``-m``, patch targets, paths."""
    text = ('SAFE = "autograder.preprocessors.safe_execute.SafeExecute"\n'
            'cmd = [python, "-m", "autograder.worker"]  # see autograder/preprocessors/headless.py\n'
            'monkeypatch.setattr("autograder.isolation.probe", fake)\n'
            'doc = "autograder/trusted/runner.py, autograder.trusted.codec, autograder.cli:main"\n')
    assert rewrite(text) == ('SAFE = "autograder.execute.safe_execute.SafeExecute"\n'
                             'cmd = [python, "-m", "autograder.run.worker"]  # see autograder/isolation/headless.py\n'
                             'monkeypatch.setattr("autograder.isolation.isolation.probe", fake)\n'
                             'doc = "autograder/trusted/runner.py, autograder.trusted.codec, autograder.cli:main"\n')


def test_a_second_pass_changes_nothing() -> None:
    """Idempotent: once moved, nothing is pending, and a rewriter without moves leaves the text as it is."""
    once = rewrite("from autograder import cells, isolation\nx = 'autograder.limits.Limits'\n")
    assert tool.Rewriter({}).python(once, None) == once


@pytest.mark.parametrize("line, kind", [
    ("    # " + "word " * 30, "comment"),
    ('    """' + "word " * 30, "string"),
])
def test_lines_pushed_over_the_limit_are_broken_where_python_allows(line: str, kind: str) -> None:
    text = f"def f() -> None:\n{line.rstrip()}\n" + ('    """\n' if kind == "string" else "    pass\n")
    out, stuck = tool.reflow(text, "")
    assert not stuck and max(len(x) for x in out.splitlines()) <= tool.MAX_LINE
    words = [w for w in out.split() if w != "#"]
    assert words == [w for w in text.split() if w != "#"]  # nothing lost, only a line break (and a "#") added
    assert out.count("\n") == text.count("\n") + 1
    code = 'x = f("' + "a" * 70 + '", "' + "b" * 70 + '")\n'
    out, stuck = tool.reflow(code, "")
    assert not stuck and out == 'x = f("' + "a" * 70 + '",\n    "' + "b" * 70 + '")\n'
    assert tool.reflow('x = "' + "a" * 130 + '"\n', "")[1] == [1]  # a long string literal: left, reported


def test_every_stage_init_is_one_short_paragraph() -> None:
    for stage in tool.STAGES:
        text = tool.stage_init(stage)
        if text is None:
            continue
        assert text.startswith('"""') and text.endswith('"""\n') and "\n\n" not in text
        assert max(len(line) for line in text.splitlines()) <= tool.MAX_LINE
        assert "never" in text, f"the {stage} stage's docstring says what it must never do"
