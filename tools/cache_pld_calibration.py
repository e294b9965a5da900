"""Write ``dp_course/data/pld_multipliers.json``: lecture 06's exact (PLD) noise multipliers, for JupyterLite.

    .venv/bin/python tools/cache_pld_calibration.py

Lecture 06 calibrates Scenario 3 with dp-accounting's PLD accountant
(:func:`dp_course.pld_calibration.poisson_gaussian_pld_multiplier`).  dp-accounting cannot be installed in the
browser (JupyterLite), so the library ships this table of the answers for the lecture's parameters (read from
the lecture's ``parameters`` cell) and reads it where dp-accounting is missing.  Run this after changing those
parameters; ``tests/test_pld_calibration.py`` fails until the table matches a fresh computation.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dp_course.pld_calibration import CACHE_PATH, poisson_gaussian_pld_multiplier  # noqa: E402

LECTURE_06 = ROOT / "solutions" / "06_dp_sgd" / "06_dp_sgd.ipynb"
GRID = 1e-3
"""The lecture's discretisation interval of the PLD accountant."""


def lecture_parameters(path: Path = LECTURE_06) -> dict:
    """The constants of lecture 06's ``parameters`` cell (plain assignments; numpy as ``np``)."""
    (cell,) = [c for c in nbformat.read(path, as_version=4).cells if c.get("id") == "parameters"]
    namespace: dict = {"np": np}
    exec(cell.source, namespace)  # noqa: S102 - the course's own source notebook, constants only
    return namespace


def entries(params: dict) -> list[dict]:
    """One table entry per target epsilon of the lecture's trade-off plot, computed by dp-accounting now."""
    s3, delta, orders = params["S3"], float(params["DELTA"]), [float(o) for o in params["ORDERS"]]
    out = []
    for target in params["EPSILONS"]:
        z, _ = poisson_gaussian_pld_multiplier(float(target), s3["sample_rate"], s3["steps"], delta,
                                               orders=orders, grid=GRID, source="compute")
        out.append(dict(epsilon=float(target), sample_rate=float(s3["sample_rate"]), steps=int(s3["steps"]),
                        delta=delta, grid=GRID, orders=orders, multiplier=z))
    return out


def main() -> int:
    about = ("Exact (PLD) noise multipliers of lecture 06's Scenario 3, computed by dp-accounting "
             "(tools/cache_pld_calibration.py); read by dp_course.pld_calibration where dp-accounting is not "
             "installed (JupyterLite).  tests/test_pld_calibration.py recomputes every entry.")
    rows = [json.dumps(entry) for entry in entries(lecture_parameters())]
    text = ("{\n" f' "about": {json.dumps(about)},\n'
            f' "dp_accounting_version": {json.dumps(metadata.version("dp-accounting"))},\n'
            ' "entries": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n")
    json.loads(text)  # well-formed before it is written
    CACHE_PATH.parent.mkdir(parents=True, exist_ok=True)
    CACHE_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {len(rows)} entries to {CACHE_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
