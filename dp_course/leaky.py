r"""Leaky randomized response: the hardest :math:`(\epsilon, \delta)`-indistinguishable pair.

Leaky randomized response is the pair of random variables :math:`U, V` on the four outcomes
``LEAKY_OUTCOMES = (0, 1, "I am U", "I am V")``:

==========  ==============================================  ==============================================
outcome     :math:`P_U`                                     :math:`P_V`
==========  ==============================================  ==============================================
0           :math:`(1-\delta) e^\epsilon / (e^\epsilon + 1)`  :math:`(1-\delta) / (e^\epsilon + 1)`
1           :math:`(1-\delta) / (e^\epsilon + 1)`             :math:`(1-\delta) e^\epsilon / (e^\epsilon + 1)`
"I am U"    :math:`\delta`                                  0
"I am V"    0                                               :math:`\delta`
==========  ==============================================  ==============================================

With probability :math:`\delta` it announces which of the two it is; otherwise it is randomized response at
level :math:`\epsilon`.  By the simulation lemma every :math:`(\epsilon, \delta)`-indistinguishable pair is a
post-processing of it (:mod:`dp_course.simulation`).  This module has its pmfs, a sampler, and the reading of
its outcomes (labels or row indices) that :func:`dp_course.simulation.apply_simulation_map` uses.

References: lecture notes on advanced composition, Section 3.1; Kairouz, Oh & Viswanath (2015,
arXiv:1311.0776), Section 2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from ._numerics import inverse_cdf_sample
from ._validation import MAX_SAMPLE_SIZE, check_delta, check_real, check_rng

__all__ = [
    "LEAKY_OUTCOMES",
    "leaky_randomized_response",
    "sample_leaky_randomized_response",
    "leaky_outcome_indices",
    "MAX_SAMPLE_SIZE",
]

LEAKY_OUTCOMES = (0, 1, "I am U", "I am V")
"""Outcomes of leaky randomized response, in the order of the rows of a simulation map."""

_LABEL_INDEX = {"I am U": 2, "I am V": 3}


def leaky_randomized_response(epsilon: Any, delta: Any) -> tuple[np.ndarray, np.ndarray]:
    r"""The pmfs of :math:`U` and :math:`V` (leaky randomized response) over :data:`LEAKY_OUTCOMES`.

    .. math::

        P_U = \Bigl(\tfrac{(1-\delta) e^\epsilon}{e^\epsilon+1},\ \tfrac{1-\delta}{e^\epsilon+1},\
              \delta,\ 0\Bigr),
        \qquad
        P_V = \Bigl(\tfrac{1-\delta}{e^\epsilon+1},\ \tfrac{(1-\delta) e^\epsilon}{e^\epsilon+1},\
              0,\ \delta\Bigr).

    The pair is :math:`(\epsilon, \delta)`-indistinguishable and is the "hardest" such pair: every other one
    is a post-processing of it (see :func:`dp_course.simulation.simulation_map`).  The entries are computed
    with the logistic function (``e^eps/(e^eps+1) = expit(eps)``), so they stay finite and accurate for any
    epsilon (``1/(e^eps+1)`` underflows gracefully).

    Args:
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).

    Returns:
        ``(p_U, p_V)``, two float arrays of length 4.

    Raises:
        ValueError: for an invalid ``epsilon`` or ``delta``.

    References:
        Lecture notes on advanced composition, Section 3.1 (table of :math:`U, V`); Kairouz, Oh & Viswanath
        (2015, arXiv:1311.0776), Section 2.

    >>> p_u, p_v = leaky_randomized_response(np.log(3), 0.2)
    >>> p_u.round(6).tolist(), p_v.round(6).tolist()
    ([0.6, 0.2, 0.2, 0.0], [0.2, 0.6, 0.0, 0.2])
    """
    eps = check_real("epsilon", epsilon, lo=0.0)
    delta = check_delta(delta)
    hi, lo = (1.0 - delta) * special.expit(eps), (1.0 - delta) * special.expit(-eps)
    return np.array([hi, lo, delta, 0.0]), np.array([lo, hi, 0.0, delta])


def _check_size(size: Any) -> tuple[int, ...]:
    dims = size if isinstance(size, tuple) else (size,)
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"size must be an integer >= 0 or a tuple of them, got {size!r}")
        out.append(int(d))
    if math.prod(out) > MAX_SAMPLE_SIZE:
        raise ValueError(f"size must ask for at most {MAX_SAMPLE_SIZE} samples in all, got {size!r}")
    return tuple(out)


def sample_leaky_randomized_response(epsilon: Any, delta: Any, size: Any, rng: Any,
                                     variable: str = "U") -> np.ndarray:
    """Draw samples of :math:`U` (or :math:`V`) as row indices into :data:`LEAKY_OUTCOMES`.

    Index ``0`` and ``1`` are the outcomes 0 and 1, index ``2`` is "I am U" and ``3`` is "I am V"; the result
    can be fed straight to :func:`dp_course.simulation.apply_simulation_map`.

    Args:
        epsilon: a finite real number >= 0.
        delta: a real number in [0, 1).
        size: number of samples (an integer >= 0) or a shape tuple.
        rng: a ``numpy.random.Generator``.
        variable: ``"U"`` or ``"V"``.

    Returns:
        An int array of the requested shape with entries in {0, 1, 2, 3}.

    Raises:
        ValueError: for invalid parameters.
    """
    p_u, p_v = leaky_randomized_response(epsilon, delta)
    shape = _check_size(size)
    rng = check_rng(rng)
    if not isinstance(variable, str) or variable not in ("U", "V"):
        raise ValueError(f'variable must be "U" or "V", got {variable!r}')
    return inverse_cdf_sample(p_u if variable == "U" else p_v, rng.random(shape))


def leaky_outcome_indices(z: Any) -> np.ndarray:
    """Outcomes of leaky randomized response as row indices 0-3 into :data:`LEAKY_OUTCOMES`.

    Accepts the indices themselves (ints, or floats with integer values) or the labels
    ``0, 1, "I am U", "I am V"`` (mixed freely in an object array or a list), of any shape.

    Args:
        z: outcomes, any shape.

    Returns:
        An int array of the shape of ``z`` with entries in {0, 1, 2, 3}.

    Raises:
        ValueError: for anything that is not an outcome of leaky randomized response.
    """
    arr = np.asarray(z, dtype=object) if not isinstance(z, np.ndarray) or z.dtype.kind in "OUS" \
        else np.asarray(z)
    if arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and np.all(np.isfinite(arr))
                                  and np.all(arr == np.round(arr))):
        idx = arr.astype(int)
    else:
        flat = []
        for item in arr.ravel():
            if isinstance(item, str) and item in _LABEL_INDEX:
                flat.append(_LABEL_INDEX[item])
            elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
                flat.append(int(item))
            else:
                raise ValueError(f"z must contain outcomes of leaky randomized response: indices 0-3 or the "
                                 f"labels {LEAKY_OUTCOMES}, got {item!r}")
        idx = np.array(flat, dtype=int).reshape(arr.shape)
    if idx.size and (idx.min() < 0 or idx.max() > 3):
        bad = idx[(idx < 0) | (idx > 3)].ravel()[0]
        raise ValueError(f"z must contain indices 0-3 into LEAKY_OUTCOMES {LEAKY_OUTCOMES}, got {bad}")
    return idx
