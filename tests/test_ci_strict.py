"""The CI switch of tests/conftest.py: with ``DP_COURSE_CI=1`` (set by ``.ci/run``) a skip is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = '''
import pytest

def test_needs_something_from_the_machine():
    pytest.skip("no chromium on this machine")

def test_plain():
    assert 1 + 1 == 2
'''


def _run(tmp_path: Path, ci: bool, *paths: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DP_COURSE_CI"}
    if ci:
        env["DP_COURSE_CI"] = "1"
    env["PYTHONPATH"] = str(Path(__file__).parent)  # the conftest imports the suite's helper modules
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *paths], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_skip_fails_in_ci_only(tmp_path):
    shutil.copyfile(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(SUITE)
    (tmp_path / "test_module_skip.py").write_text('import pytest\npytest.importorskip("no_such_module_dpc")\n')
    local = _run(tmp_path, False, ".")
    assert local.returncode == 0 and "1 passed, 2 skipped" in local.stdout, local.stdout
    ci = _run(tmp_path, True, "test_inner.py")
    assert ci.returncode == 1 and "1 failed, 1 passed" in ci.stdout, ci.stdout
    assert "DP_COURSE_CI=1 makes every skip a failure: no chromium on this machine" in ci.stdout
    ci = _run(tmp_path, True, "test_module_skip.py")  # a whole module skipped at collection
    assert ci.returncode != 0 and "1 error" in ci.stdout, ci.stdout
    assert "makes every skip a failure: could not import 'no_such_module_dpc'" in ci.stdout
