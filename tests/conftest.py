"""Shared pytest configuration.

Hypothesis runs derandomized (a fixed seed derived from each test), so every run of the suite sees the
same examples: a failure is reproducible and the suite cannot flake.

Tests that need something from the machine (the sandbox, a browser, ...) skip with a visible reason where it
is missing.  In CI (``DP_COURSE_CI=1``, set by ``.ci/run``) every skip is a failure instead: CI must run the
whole suite, so a missing install step cannot hide behind a skip.
"""

from __future__ import annotations

import os

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

from adversarial import hostile
from autograder.isolation import isolation

matplotlib.use("Agg")

settings.register_profile(
    "course",
    derandomize=True,
    deadline=None,
    max_examples=int(os.environ.get("DP_COURSE_HYPOTHESIS_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("course")

CI_STRICT = os.environ.get("DP_COURSE_CI") == "1"
"""In CI, a skipped test (or module) fails: everything the suite needs must be installed there."""


def _strict(report) -> None:
    if CI_STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, and DP_COURSE_CI=1 makes every skip a failure: {reason.removeprefix('Skipped: ')}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _strict(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _strict(outcome.get_result())


@pytest.fixture(scope="session")
def sandbox_info() -> isolation.SandboxInfo:
    """The sandbox of this machine; the test is skipped (visibly, with the reason) where none works."""
    info = isolation.probe("auto")
    if not info.isolated:
        pytest.skip("no sandbox works on this machine: " + "; ".join(info.problems))
    return info


@pytest.fixture(scope="session")
def grading_sandbox() -> str:
    """The ``sandbox_mode`` for grading tests: ``"bwrap"`` where the sandbox works, else ``"none"`` where grading
    without it is allowed (:func:`autograder.isolation.isolation.grading_refusal`), else a visible skip."""
    if isolation.probe("auto").isolated:
        return "bwrap"
    refusal = isolation.grading_refusal(isolation.probe("none"), "none")
    if refusal:
        pytest.skip(f"grading cannot run on this machine: {refusal}")
    return "none"

# ---- library tests: shared fixtures (issue 12) ------------------------------------------------------------
# Strategies live in tests/strategies.py and definitions from first principles in tests/reference.py; test
# modules import those, never each other.

from strategies import PLD_KINDS  # noqa: E402


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> hostile.Toy:
    """The toy assignment (``autograder.demo.write_synthetic_assignment``), a course built from it, its full
    solution and release notebooks: built once per test module."""
    return hostile.toy(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session", params=sorted(PLD_KINDS))
def pld_kind(request: pytest.FixtureRequest) -> str:
    """Each kind of privacy loss distribution in turn (draw instances with ``strategies.pld_cases(kind)``).

    A test that takes this fixture runs once per kind, like scipy.stats' tests over every distribution.
    """
    return str(request.param)


# ---- scheduling over xdist workers ------------------------------------------------------------------------
# `run.py test` runs pytest-xdist with `--dist loadgroup --no-loadscope-reorder`: each xdist group is one unit
# of work, handed out in collection order to whichever worker is free.  Longest units first keeps the two
# workers of a 2-core machine busy to the end (a long group started last would leave the other worker idle):
# the xdist groups below, in this order (a prefix matches `browser-0`, `nbgrader-01_foundations`, ...), then
# every other group, then the ungrouped tests (small units that fill the gaps at the end).

HEAVY_GROUPS_FIRST = ("browser", "nbgrader", "one-verdict", "grading", "adversarial", "cli", "check", "any_user",
                      "sandbox")
"""Prefixes of the xdist groups that take longest (measured with ``--durations``), longest first."""


def _group_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _schedule_rank(item: pytest.Item) -> int:
    group = _group_of(item)
    if group is None:
        return len(HEAVY_GROUPS_FIRST) + 1
    for rank, prefix in enumerate(HEAVY_GROUPS_FIRST):
        if group == prefix or group.startswith(prefix + "-"):
            return rank
    return len(HEAVY_GROUPS_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the longest xdist groups first (a stable sort: tests keep their order within a rank)."""
    items.sort(key=_schedule_rank)
