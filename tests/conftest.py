"""Shared pytest configuration.

Hypothesis runs derandomized (a fixed seed derived from each test), so every run of the suite sees the
same examples: a failure is reproducible and the suite cannot flake.
"""

from __future__ import annotations

import os

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

settings.register_profile(
    "course",
    derandomize=True,
    deadline=None,
    max_examples=int(os.environ.get("DP_COURSE_HYPOTHESIS_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("course")


# ---- library tests: shared fixtures (issue 12) ------------------------------------------------------------
# Strategies live in tests/strategies.py and definitions from first principles in tests/reference.py; test
# modules import those, never each other.

import pytest  # noqa: E402  (kept inside this block so that it merges apart from the blocks above)

from strategies import PLD_KINDS  # noqa: E402


@pytest.fixture(scope="session", params=sorted(PLD_KINDS))
def pld_kind(request: pytest.FixtureRequest) -> str:
    """Each kind of privacy loss distribution in turn (draw instances with ``strategies.pld_cases(kind)``).

    A test that takes this fixture runs once per kind, like scipy.stats' tests over every distribution.
    """
    return str(request.param)
