"""Independent reference implementations, straight from the definitions (shared by the library tests).

Nothing here imports ``dp_course``: these are the formulas a test compares the library against.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

__all__ = ["hockey_stick", "hockey_stick_over_events", "total_variation"]


def hockey_stick(p: npt.ArrayLike, q: npt.ArrayLike, eps: float) -> float:
    """sum_y (p(y) - e^eps q(y))_+ , the definition of the tight delta of a pair of pmfs."""
    return float(np.sum(np.clip(np.asarray(p) - math.exp(eps) * np.asarray(q), 0.0, None)))


def hockey_stick_over_events(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """sup over all 2^n events E of P(E) - e^eps Q(E) (the definition of the lecture, Section 3.1)."""
    best = 0.0
    for mask in itertools.product([False, True], repeat=len(p)):
        m = np.array(mask)
        best = max(best, p[m].sum() - math.exp(eps) * q[m].sum())
    return best


def total_variation(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """(1/2) sum_y |p(y) - q(y)|."""
    return 0.5 * float(np.sum(np.abs(np.asarray(p, float) - np.asarray(q, float))))
