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
