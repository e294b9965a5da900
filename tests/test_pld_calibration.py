"""Lecture 06's exact (PLD) calibration runs wherever the kit runs (issue 23: JupyterLite has no dp-accounting).

* ``dp_course/data/pld_multipliers.json`` (the table read where dp-accounting is missing) equals a fresh
  computation with dp-accounting, entry by entry, and holds every target of lecture 06's ``parameters`` cell;
* with dp-accounting blocked from importing (a meta-path finder in a fresh interpreter, as in Pyodide, where
  dm-tree and absl have no build), :mod:`dp_course.pld_calibration` imports, answers the lecture's parameters
  from the table, and says plainly that anything else needs dp-accounting;
* and lecture 06 itself (its source notebook's code cells, the setup cell to the calibration cell) runs in such
  an interpreter and prints which of the two sources it used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

from dp_course import pld_calibration
from dp_course.pld_calibration import (CACHE_PATH, poisson_gaussian_pld_epsilon,
                                       poisson_gaussian_pld_multiplier)

ROOT = Path(__file__).resolve().parent.parent
LECTURE_06 = ROOT / "solutions" / "06_dp_sgd" / "06_dp_sgd.ipynb"

BLOCKER = textwrap.dedent('''
    import importlib.abc, sys

    class _NoDpAccounting(importlib.abc.MetaPathFinder):
        """As in Pyodide: dp-accounting and the packages it needs cannot be imported."""
        BLOCKED = ("dp_accounting", "absl", "tree")

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, _NoDpAccounting())
''')


def _table() -> list[dict]:
    entries: list[dict] = json.loads(CACHE_PATH.read_text(encoding="utf-8"))["entries"]
    return entries


def _lecture_parameters() -> dict:
    nb = nbformat.read(LECTURE_06, as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "parameters"]
    namespace: dict = {"np": np}
    exec(cell.source, namespace)  # noqa: S102 - the course's own source notebook, constants only
    return namespace


def _without_dp_accounting(code: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not pld_calibration.DP_ACCOUNTING_AVAILABLE, reason="dp-accounting is not installed: the "
                    "table cannot be recomputed here (it is a runtime dependency: `python3 run.py setup`)")
def test_the_table_equals_a_fresh_dp_accounting_computation() -> None:
    """Every entry, recomputed now by dp-accounting's PLD accountant and the same root search."""
    table = _table()
    assert len(table) >= 7
    for entry in table:
        fresh, _ = poisson_gaussian_pld_multiplier(entry["epsilon"], entry["sample_rate"], entry["steps"],
                                                   entry["delta"], orders=entry["orders"], grid=entry["grid"],
                                                   source="compute")
        np.testing.assert_allclose(entry["multiplier"], fresh, rtol=1e-12, atol=1e-14,
                                   err_msg=f"stale entry {entry['epsilon']}: run tools/cache_pld_calibration.py")
        # and it is what the search promises: epsilon met at the multiplier, not met 1 % below it
        eps = poisson_gaussian_pld_epsilon(fresh, entry["sample_rate"], entry["steps"], entry["delta"], entry["grid"])
        assert eps <= entry["epsilon"]
        below = poisson_gaussian_pld_epsilon(0.99 * fresh, entry["sample_rate"], entry["steps"], entry["delta"],
                                             entry["grid"])
        assert below > entry["epsilon"]


def test_the_table_holds_every_target_of_lecture_06() -> None:
    p = _lecture_parameters()
    s3 = p["S3"]
    for target in p["EPSILONS"]:
        z_pld, z_rdp = poisson_gaussian_pld_multiplier(float(target), s3["sample_rate"], s3["steps"], p["DELTA"],
                                                       orders=p["ORDERS"], source="cache")
        assert 0.7 * z_rdp < z_pld < z_rdp, target            # exact accounting needs less noise than RDP


def test_what_the_table_does_not_hold_is_said_plainly() -> None:
    with pytest.raises(LookupError, match=r"no exact multiplier for epsilon=3, sample_rate=0.1, steps=300"):
        poisson_gaussian_pld_multiplier(3.0, 0.1, 300, 1e-5, source="cache")
    with pytest.raises(ValueError, match=r"source must be one of 'auto', 'compute', 'cache', got 'web'"):
        poisson_gaussian_pld_multiplier(1.0, 0.1, 300, 1e-5, source="web")
    with pytest.raises(ValueError, match=r"noise_multiplier=0.01 with grid=0.001 needs about 1e\+07 grid points"):
        poisson_gaussian_pld_epsilon(0.01, 0.1, 10, 1e-5, grid=1e-3)


def test_without_dp_accounting_the_library_answers_from_the_table() -> None:
    entry = _table()[3]
    proc = _without_dp_accounting(f'''
        import json
        from dp_course import pld_calibration as pc
        assert not pc.DP_ACCOUNTING_AVAILABLE
        assert "dp_accounting" not in sys.modules
        entry = json.loads({json.dumps(json.dumps(entry))})
        z, _ = pc.poisson_gaussian_pld_multiplier(entry["epsilon"], entry["sample_rate"], entry["steps"],
                                                  entry["delta"], orders=entry["orders"], grid=entry["grid"])
        assert z == entry["multiplier"], (z, entry["multiplier"])
        for call in (lambda: pc.poisson_gaussian_pld_multiplier(3.0, 0.1, 300, 1e-5),
                     lambda: pc.poisson_gaussian_pld_epsilon(1.0, 0.1, 300, 1e-5)):
            try:
                call()
            except ModuleNotFoundError as err:
                print("MESSAGE", err)
            else:
                raise AssertionError("answered without dp-accounting")
        print("OK")
    ''', timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    messages = [line for line in proc.stdout.splitlines() if line.startswith("MESSAGE")]
    assert len(messages) == 2 and proc.stdout.rstrip().endswith("OK"), proc.stdout
    assert all("dp-accounting is not installed here" in m and "pip install 'dp-accounting" in m for m in messages)
    assert "holds lecture 06's parameters only, not epsilon=3" in messages[0]


@pytest.mark.slow
def test_lecture_06_runs_to_its_calibration_without_dp_accounting() -> None:
    """The source notebook's code cells, from the setup cell to the calibration cell, in an interpreter that
    cannot import dp-accounting: no error, the lecture says where its numbers come from, and they are the table's."""
    nb = nbformat.read(LECTURE_06, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    ids = [c.get("id") for c in cells]
    assert "setup" in ids and "calibration" in ids
    code = "\n\n".join("\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith("%"))
                       for c in cells[:ids.index("calibration") + 1])
    proc = _without_dp_accounting(f'''
        import json
        namespace = {{}}
        exec(compile({code!r}, "06_dp_sgd.ipynb", "exec"), namespace)
        assert "dp_accounting" not in sys.modules
        print("S3 multipliers", json.dumps([float(z) for z in namespace["s3_multipliers"][:, 0]]))
    ''')
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "dp-accounting is not installed here" in proc.stdout, proc.stdout[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("S3 multipliers"))
    p = _lecture_parameters()
    expected = {e["epsilon"]: e["multiplier"] for e in _table()}
    assert json.loads(line.split(" ", 2)[2]) == [expected[float(t)] for t in p["EPSILONS"]]
