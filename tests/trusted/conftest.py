"""Fixtures of the two-kernel tests: one trusted kernel per test session (as in a grading worker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autograder.trusted.runner import TrustedKernel


@pytest.fixture(scope="session")
def trusted_kernel() -> Iterator[TrustedKernel]:
    """A started trusted kernel, reused by every test (each notebook gets a fresh namespace)."""
    with TrustedKernel() as kernel:
        yield kernel
