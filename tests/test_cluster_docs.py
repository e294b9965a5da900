"""docs/cluster.md and its sizing table (issue 24, item 5).

* The table in the docs is exactly what ``benchmarks/capacity.py`` prints from the committed measurements
  (``benchmarks/results/notebook_cost.json``), so neither can drift from the other.
* The capacity model's arithmetic on inputs whose answers are known by hand, and its refusals of bad input.
* Every ``dp-course grade`` option the page names exists in the command, except the options of the Dask
  branch that the page marks as assumed (:data:`ASSUMED_GRADE_OPTIONS`; an entry goes once the option exists).
* The page is linked from the instructor guide and the README, and its worker image is built from
  ``environment.yml`` with the kit installed, without ``solutions/``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from autograder.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cluster.md"

ASSUMED_GRADE_OPTIONS: set[str] = set()
"""Options of ``dp-course grade`` that docs/cluster.md names before the Dask branch (issue 24) has landed."""


def _capacity() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmarks_capacity", ROOT / "benchmarks" / "capacity.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_capacity"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


capacity = _capacity()


def test_docs_table_is_the_scripts_output_on_the_committed_numbers() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "capacity.py")], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert capacity.embedded(DOC.read_text()) == out.rstrip("\n")
    # and the table is made of the measured numbers: every lecture measured, every worker count asked for
    data = json.loads(capacity.RESULTS.read_text())
    lectures = data["summary"]["per_lecture"]
    assert len(lectures) == 7, sorted(lectures)
    rows = [line for line in out.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert [int(r.split("|")[1]) for r in rows] == [2, 8, 32, 128]
    # the README quotes the term's core-hours: the same number
    core_hours = re.search(r"A term costs ([\d,]+) core-hours", out)
    assert core_hours and f"about {core_hours.group(1)} core-hours" in (ROOT / "README.md").read_text()


def test_hours_on_inputs_known_by_hand() -> None:
    # 3.6 core-s per notebook, 10,000 notebooks, 2 workers, no headroom: 18,000 s = 5 h, bound by the workers
    hours, bound = capacity.deadline_hours(3.6, 0.01, 2, students=10_000, headroom=1.0)
    assert hours == pytest.approx(5.0)
    assert bound == "workers"
    # 128 workers would take 0.078 h, but merging 10,000 notebooks at 0.1 s each takes 1000 s: the floor
    hours, bound = capacity.deadline_hours(3.6, 0.1, 128, students=10_000, headroom=1.0)
    assert hours == pytest.approx(1000 / 3600)
    assert bound == "merge step"
    # the headroom multiplies the worker side only
    assert capacity.deadline_hours(3.6, 0.01, 2, students=10_000, headroom=1.5)[0] == pytest.approx(7.5)
    assert capacity.ceiling_per_hour(0.1) == pytest.approx(36_000)


def test_table_sums_a_term_over_the_lectures() -> None:
    inputs = capacity.Inputs({"a": 1.8, "b": 5.4}, 0.001, "test numbers")
    text = capacity.table(inputs, workers=(2,), students=1000, headroom=1.0)
    # a deadline of lecture a: 1000 x 1.8 / 2 = 900 s; of b: 2700 s; average lecture 3.6 core-s: 1800 s
    row = next(line for line in text.splitlines() if line.startswith("| 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["2", "0.50 h", "0.75 h", "1.00 h", "workers"]
    assert "`b`" in text and "3,600,000 notebooks per hour" in text
    assert "A term costs 2 core-hours" in text  # 1000 x (1.8 + 5.4) core-s


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"workers": 0}, "workers"), ({"workers": 2.5}, "workers"), ({"students": -1}, "students"),
    ({"busy": 0.0}, "busy"), ({"busy": float("nan")}, "busy"), ({"merge_seconds": -0.1}, "merge_seconds"),
    ({"headroom": 0.5}, "headroom"),
])
def test_bad_input_is_refused_naming_the_parameter(kwargs: dict, name: str) -> None:
    args = {"busy": 3.0, "merge_seconds": 0.05, "workers": 2, "students": 100, "headroom": 1.25} | kwargs
    with pytest.raises(ValueError, match=rf"^{name} must be .*got {re.escape(repr(kwargs[name]))}$"):
        capacity.deadline_hours(**args)


def test_load_reads_the_measurements_and_takes_an_override(tmp_path: Path) -> None:
    data = {"summary": {"per_lecture": {"01_x": {"busy_core_seconds": 2.0}, "02_y": {"busy_core_seconds": 4.0}},
                        "merge": {"cpu_median": 0.2, "wall_median": 1.5}}}
    path = tmp_path / "cost.json"
    path.write_text(json.dumps(data))
    measured = capacity.load(path)
    assert (dict(measured.busy), measured.merge_seconds, measured.merge_wall_seconds) == \
        ({"01_x": 2.0, "02_y": 4.0}, 0.2, 1.5)
    assert "2,400 notebooks per hour" in capacity.table(measured)  # 3600 / 1.5: the busy head node's line
    given = capacity.load(path, merge_seconds=0.5)
    assert (given.merge_seconds, given.merge_wall_seconds) == (0.5, None)
    assert "7,200 notebooks per hour" in capacity.table(given) and "given as 0.5 s" in capacity.table(given)
    data["summary"]["per_lecture"]["02_y"]["busy_core_seconds"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"busy core-seconds of 02_y must be a finite number > 0, got -1\.0"):
        capacity.load(path)


def test_write_replaces_only_the_marked_block(tmp_path: Path) -> None:
    doc = f"intro\n{capacity.BEGIN}\nold table\n{capacity.END}\noutro\n"
    assert capacity.embed(doc, "new\ntable") == f"intro\n{capacity.BEGIN}\nnew\ntable\n{capacity.END}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        capacity.embed("no markers here", "x")


def _grade_options() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "grade" in a.choices)  # argparse's subparsers
    return {o for a in sub.choices["grade"]._actions for o in a.option_strings}


def test_every_grade_option_named_exists_or_is_marked_assumed() -> None:
    text = DOC.read_text()
    named = set()
    for line in text.splitlines():
        for cmd in re.findall(r"dp-course grade [^`#\n]*", line):
            named |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", cmd))
    real = _grade_options()
    assert named, "the page names no dp-course grade option"
    assert named - real <= ASSUMED_GRADE_OPTIONS, sorted(named - real)
    for option in ASSUMED_GRADE_OPTIONS - real:
        assert "(assumed, issue 24)" in text, option


def test_linked_from_the_guides() -> None:
    assert "(cluster.md)" in (ROOT / "docs" / "instructor-guide.md").read_text()
    assert "(docs/cluster.md)" in (ROOT / "README.md").read_text()


def test_worker_image_is_built_from_environment_yml_with_the_kit_and_without_solutions() -> None:
    block = re.search(r"```dockerfile\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert block, "docs/cluster.md has no Dockerfile example"
    steps = block.group(1)
    assert re.search(r"^COPY environment\.yml", steps, re.M) and "-f environment.yml" in steps
    assert re.search(r"^RUN pip install .*--no-deps \.$", steps, re.M)
    assert re.search(r"^COPY autograder ", steps, re.M) and re.search(r"^COPY dp_course ", steps, re.M)
    assert "solutions" not in "\n".join(line for line in steps.splitlines() if line.startswith("COPY"))
    assert re.search(r"^USER (?!root)", steps, re.M)
