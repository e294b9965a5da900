r"""Logistic regression trained by gradient descent and by noisy, clipped SGD (the DP-SGD family).

The model: a record is :math:`x = (z, y)` with features :math:`z \in \mathbb{R}^d` and a label
:math:`y \in \{0, 1\}`, :math:`P(y = 1 \mid z, \theta) = \sigma(z^\top\theta)` with the logistic function
:math:`\sigma(t) = 1/(1 + e^{-t})`; the loss of one record is
:math:`f(\theta; x) = \ln(1 + e^{z^\top\theta}) - y\, z^\top\theta` and its gradient
:math:`\nabla f(\theta; x) = (\sigma(z^\top\theta) - y)\, z`.  The objective is
:math:`F(\theta) = \frac1n\sum_i f(\theta; x_i) + \frac{\lambda}{2}\|\theta\|_2^2`.

:func:`noisy_sgd` runs the update of the slide deck's DP-SGD,

.. math:: \theta_{t+1} = \theta_t - \eta\Big(\frac{1}{m}\sum_{i \in U_t}
          \mathrm{clip}_C\big(\nabla f(\theta_t; x_i)\big) + v_t + \lambda\theta_t\Big),

with a batch :math:`U_t` drawn by Poisson sampling (each record with probability :math:`q`), fixed-size
sampling without replacement or the full data set, and a **public normaliser** :math:`m` that the caller
gives (``normaliser``): the expected batch size :math:`q n_0` for a public :math:`n_0` fixed in advance
(Poisson sampling, add/remove neighbours), the batch size (fixed-size sampling) or :math:`n` (full batches
under replacement, where :math:`n` is public).  The normaliser is never computed from the data: under
add/remove the data-set size :math:`n` is private, and an update divided by :math:`qn` (with noise scaled
alike) reveals it whatever the noise (lecture 06, "the normaliser must be public"); per-example clipping
to :math:`\ell_2` or :math:`\ell_1` norm :math:`C`; and noise :math:`v_t` with independent Gaussian or Laplace
coordinates.  The regulariser's gradient does not
depend on the data and is added after the noise.  The function computes no privacy guarantee: the noise
scale comes from an accountant (:mod:`dp_course.dpsgd`).  Independent runs (seeds, noise levels) are
vectorised: ``runs`` parameter vectors are trained at once, each with its own batches and noise.

Sources: Abadi et al. 2016, "Deep learning with differential privacy" (arXiv:1607.00133), Algorithm 1;
Song, Chaudhuri & Sarwate 2013 (noisy SGD); the slide deck's "Differentially private SGD".
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from ._validation import check_int, check_real, check_real_array, check_rng

__all__ = [
    "MAX_TRAINING_WORK",
    "SAMPLING_SCHEMES",
    "NOISE_KINDS",
    "logistic_loss",
    "per_example_gradients",
    "accuracy",
    "gradient_descent",
    "noisy_sgd",
]

SAMPLING_SCHEMES = ("poisson", "fixed", "full")
"""Batch selection of :func:`noisy_sgd`: Poisson sampling, fixed-size sampling without replacement, full batch."""

NOISE_KINDS = ("gaussian", "laplace")

MAX_TRAINING_WORK = 10**11
"""Largest ``steps * runs * n * d`` (gradient entries computed) a training call accepts: a cost guard, checked
before the first step (10^11 entries are minutes of work; the lectures use below 10^9)."""


def _check_work(steps: int, runs: int, n: int, d: int) -> None:
    if steps * runs * n * d > MAX_TRAINING_WORK:
        raise ValueError(f"steps * runs must be at most {MAX_TRAINING_WORK // (n * d)} on {n} records of {d} features "
                         f"(at most {MAX_TRAINING_WORK:.0e} gradient entries), got steps = {steps}, runs = {runs}")


def _check_finite(theta: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(theta)):
        raise ValueError("the iteration diverged (theta is no longer finite): learning_rate, l2 or noise_scale is "
                         "too large (learning_rate * (l2 + the curvature of the loss) must stay below 2)")
    return theta
"""Noise distributions of :func:`noisy_sgd` (independent coordinates)."""


# ----------------------------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------------------------

def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_real_array("X", X, ndim=2)
    y = check_real_array("y", y, ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X: X has {X.shape[0]} rows, y has {y.shape[0]} labels")
    if not np.all((y == 0.0) | (y == 1.0)):
        bad = y[(y != 0.0) & (y != 1.0)][0]
        raise ValueError(f"y must contain only labels 0 and 1, got {bad!r}")
    return X, y


def _check_theta(theta: Any, d: int) -> np.ndarray:
    theta = check_real_array("theta", theta)
    if theta.ndim not in (1, 2) or theta.shape[-1] != d:
        raise ValueError(f"theta must have shape ({d},) or (runs, {d}) to match the {d} columns of X, "
                         f"got shape {theta.shape}")
    return theta


def _clip_rows(grads: np.ndarray, clip_norm: float, ord: int) -> np.ndarray:
    """Scale each vector along the last axis to norm at most ``clip_norm`` (zero vectors stay zero)."""
    norms = np.linalg.norm(grads, ord=ord, axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0, clip_norm / norms)  # norm 0 -> inf -> 1
    return grads * factor


# ----------------------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------------------

def logistic_loss(theta: ArrayLike, X: ArrayLike, y: ArrayLike, l2: float = 0.0) -> float | np.ndarray:
    r"""Regularised average logistic loss :math:`\frac1n\sum_i \ln(1+e^{z_i^\top\theta}) - y_i z_i^\top\theta
    + \frac{\lambda}{2}\|\theta\|^2`.

    Computed as ``logaddexp(0, t) - y t`` (no overflow for large :math:`|t|`).

    Args:
        theta: parameters, shape ``(d,)`` or ``(runs, d)``.
        X: ``(n, d)`` features.
        y: ``(n,)`` labels in {0, 1}.
        l2: regularisation strength :math:`\lambda \ge 0`.

    Returns:
        float for a 1-D ``theta``, ndarray ``(runs,)`` otherwise.

    Raises:
        ValueError: for bad shapes or values.
    """
    X, y = _check_data(X, y)
    theta = _check_theta(theta, X.shape[1])
    l2 = check_real("l2", l2, lo=0.0)
    t = theta @ X.T  # (n,) or (runs, n)
    loss = np.mean(np.logaddexp(0.0, t) - y * t, axis=-1) + 0.5 * l2 * np.sum(theta**2, axis=-1)
    return float(loss) if theta.ndim == 1 else loss


def per_example_gradients(theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray:
    r"""Gradients of the logistic loss of every record, :math:`(\sigma(z_i^\top\theta) - y_i)\, z_i`.

    Args:
        theta: parameters, shape ``(d,)`` or ``(runs, d)``.
        X: ``(n, d)`` features (``n`` may be 0).
        y: ``(n,)`` labels in {0, 1}.

    Returns:
        ndarray of shape ``(n, d)`` for a 1-D ``theta``, ``(runs, n, d)`` otherwise.

    Raises:
        ValueError: for bad shapes or values.

    >>> per_example_gradients(np.zeros(2), [[1.0, 2.0]], [1.0])
    array([[-0.5, -1. ]])
    """
    X = check_real_array("X", X, ndim=2, allow_empty=True)
    y = check_real_array("y", y, ndim=1, allow_empty=True)
    if X.shape[0]:
        X, y = _check_data(X, y)
    elif y.shape[0]:
        raise ValueError(f"y must have one label per row of X: X has 0 rows, y has {y.shape[0]} labels")
    theta = _check_theta(theta, X.shape[1])
    residual = expit(theta @ X.T) - y  # (n,) or (runs, n)
    return residual[..., None] * X


def accuracy(theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> float | np.ndarray:
    r"""Share of records whose label is predicted right by :math:`\hat y = 1[z^\top\theta > 0]`.

    Returns:
        float for a 1-D ``theta``, ndarray ``(runs,)`` otherwise.

    Raises:
        ValueError: for bad shapes or values.
    """
    X, y = _check_data(X, y)
    theta = _check_theta(theta, X.shape[1])
    acc = np.mean((theta @ X.T > 0.0) == (y == 1.0), axis=-1)
    return float(acc) if theta.ndim == 1 else acc


# ----------------------------------------------------------------------------------------------------------
# training loops
# ----------------------------------------------------------------------------------------------------------

def gradient_descent(X: ArrayLike, y: ArrayLike, steps: int, learning_rate: float, l2: float = 0.0) -> np.ndarray:
    r"""Non-private full-batch gradient descent from :math:`\theta_0 = 0`:
    :math:`\theta_{t+1} = \theta_t - \eta\,\nabla F(\theta_t)`.

    Args:
        X: ``(n, d)`` features.
        y: ``(n,)`` labels in {0, 1}.
        steps: number of steps, an integer >= 0.
        learning_rate: step size :math:`\eta > 0`.
        l2: regularisation strength :math:`\lambda \ge 0`.

    Returns:
        ndarray ``(d,)``: the final parameters.

    Raises:
        ValueError: for bad shapes or values.
    """
    X, y = _check_data(X, y)
    steps = check_int("steps", steps, lo=0)
    learning_rate = check_real("learning_rate", learning_rate, lo=0.0, lo_open=True)
    l2 = check_real("l2", l2, lo=0.0)
    _check_work(steps, 1, *X.shape)
    theta = np.zeros(X.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            grad = (expit(X @ theta) - y) @ X / X.shape[0] + l2 * theta
            theta = theta - learning_rate * grad
    return _check_finite(theta)


def _batches(sampling: str, n: int, runs: int, size: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """``(runs, n)`` 0/1 float mask of the records in each run's batch."""
    if sampling == "full":
        return np.ones((runs, n))
    if sampling == "poisson":
        return (rng.random((runs, n)) < rate).astype(float)
    # fixed size without replacement: the `size` smallest of n uniform keys form a uniform random subset
    chosen = np.argpartition(rng.random((runs, n)), size - 1, axis=1)[:, :size]
    mask = np.zeros((runs, n))
    np.put_along_axis(mask, chosen, 1.0, axis=1)
    return mask


def noisy_sgd(X: ArrayLike, y: ArrayLike, *, steps: int, learning_rate: float, clip_norm: float,
              noise_scale: ArrayLike, normaliser: float, rng: np.random.Generator, sampling: str = "poisson",
              sample_rate: float | None = None, sample_size: int | None = None, noise: str = "gaussian",
              clip_ord: int = 2, l2: float = 0.0, runs: int = 1) -> np.ndarray:
    r"""Train logistic regression with clipped, noisy (stochastic) gradient descent; ``runs`` runs at once.

    Each step, for every run: draw a batch (see ``sampling``), clip each record's gradient to norm
    ``clip_norm`` (in :math:`\ell_{\mathrm{clip\_ord}}`), sum, divide by the public normaliser :math:`m`
    (``normaliser``), add noise with independent coordinates of scale ``noise_scale``, add
    :math:`\lambda\theta`, and take a step:

    .. math:: \theta \leftarrow \theta - \eta\Big(\frac1m\sum_{i\in U}\mathrm{clip}(\nabla f(\theta; x_i)) + v
              + \lambda\theta\Big).

    Args:
        X: ``(n, d)`` features.
        y: ``(n,)`` labels in {0, 1}.
        steps: number of steps T, an integer >= 0.
        learning_rate: :math:`\eta > 0`.
        clip_norm: :math:`C > 0` (``inf``: no clipping).
        noise_scale: standard deviation (``noise="gaussian"``) or scale :math:`b` (``"laplace"``) of each
            noise coordinate, >= 0; a scalar or one value per run (shape ``(runs,)``).
        normaliser: :math:`m > 0`, the constant the sum of clipped gradients is divided by (required, no
            default).  It must be **public**, i.e. not computed from the private data: for Poisson sampling
            under add/remove neighbours use :math:`m = q n_0` with a public :math:`n_0` (a size announced or
            bounded in advance), never :math:`q n` with the real, private :math:`n`; for fixed-size batches the
            batch size; for full batches under replacement :math:`n` (neighbours have the same size, so
            :math:`n` is public).  ``noise_scale`` is the noise on the *divided* sum, i.e. the noise multiplier
            times ``clip_norm / normaliser``.
        rng: ``numpy.random.Generator`` for the batches and the noise.
        sampling: ``"poisson"`` (needs ``sample_rate`` :math:`q`), ``"fixed"`` (needs ``sample_size``; without
            replacement) or ``"full"``.
        sample_rate: Poisson sampling probability in (0, 1].
        sample_size: fixed batch size, 1 <= m <= n.
        noise: ``"gaussian"`` or ``"laplace"``.
        clip_ord: 2 (:math:`\ell_2` clipping, for Gaussian noise) or 1 (:math:`\ell_1`, for Laplace noise).
        l2: regularisation strength :math:`\lambda \ge 0`.
        runs: number of independent runs, an integer >= 1.

    Returns:
        ndarray ``(runs, d)``: the final parameters of each run (starting from 0).

    Raises:
        ValueError: for bad shapes, values or combinations (e.g. ``sample_rate`` missing for Poisson sampling,
            ``normaliser`` not a finite number > 0).

    Source: Abadi et al. 2016 (arXiv:1607.00133), Algorithm 1; the slide deck's DP-SGD update.
    """
    X, y = _check_data(X, y)
    n, d = X.shape
    steps = check_int("steps", steps, lo=0)
    learning_rate = check_real("learning_rate", learning_rate, lo=0.0, lo_open=True)
    clip_norm = check_real("clip_norm", clip_norm, lo=0.0, lo_open=True, allow_inf=True)
    runs = check_int("runs", runs, lo=1)
    scale = check_real_array("noise_scale", noise_scale, lo=0.0)
    if scale.ndim > 1 or (scale.ndim == 1 and scale.shape[0] != runs):
        raise ValueError(f"noise_scale must be a number or an array of one value per run, shape ({runs},), "
                         f"got shape {scale.shape}")
    scale = np.broadcast_to(scale, (runs,))[:, None]
    rng = check_rng(rng)
    if not isinstance(sampling, str) or sampling not in SAMPLING_SCHEMES:
        raise ValueError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}")
    if not isinstance(noise, str) or noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
    if not isinstance(clip_ord, numbers.Integral) or isinstance(clip_ord, (bool, np.bool_)) or clip_ord not in (1, 2):
        raise ValueError(f"clip_ord must be 1 or 2, got {clip_ord!r}")
    l2 = check_real("l2", l2, lo=0.0)
    normaliser = check_real("normaliser", normaliser, lo=0.0, lo_open=True)
    rate, size = 1.0, n
    if sampling == "poisson":
        if sample_rate is None:
            raise ValueError("sample_rate must be given for sampling='poisson' (a probability in (0, 1])")
        rate = check_real("sample_rate", sample_rate, lo=0.0, hi=1.0, lo_open=True)
    elif sampling == "fixed":
        if sample_size is None:
            raise ValueError(f"sample_size must be given for sampling='fixed' (an integer in [1, {n}])")
        size = check_int("sample_size", sample_size, lo=1, hi=n)
    _check_work(steps, runs, n, d)
    draw = rng.standard_normal if noise == "gaussian" else rng.laplace
    theta = np.zeros((runs, d))
    for _ in range(steps):
        mask = _batches(sampling, n, runs, size, rate, rng)
        grads = per_example_gradients(theta, X, y)  # (runs, n, d)
        clipped = _clip_rows(grads, clip_norm, clip_ord)
        mean_grad = np.einsum("rn,rnd->rd", mask, clipped) / normaliser
        with np.errstate(over="ignore", invalid="ignore"):
            theta = _check_finite(theta - learning_rate * (mean_grad + scale * draw(size=(runs, d)) + l2 * theta))
    return theta
