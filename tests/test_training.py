"""Logistic regression and noisy clipped SGD (dp_course.training).

References: finite differences and scipy.optimize for the model; the update written out by hand for one step;
exact batch statistics read off a design where every record owns one coordinate; seeded noise statistics with
their false-failure rates stated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dp_course.training import accuracy, gradient_descent, logistic_loss, noisy_sgd, per_example_gradients


def _toy(n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.standard_normal((n, d - 1)) * 2])
    y = (rng.random(n) < 0.5).astype(float)
    return X, y


# ---------------------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------------------

def test_loss_values_and_stability():
    X, y = _toy()
    assert logistic_loss(np.zeros(5), X, y) == pytest.approx(math.log(2), rel=1e-15)
    theta = np.array([0.0, 400.0, 0.0, 0.0, 0.0])          # |z theta| up to ~3000: exp would overflow
    value = logistic_loss(theta, X, y)
    t = X @ theta
    expected = np.mean(np.maximum(t, 0.0) + np.log1p(np.exp(-np.abs(t))) - y * t)
    assert np.isfinite(value) and value == pytest.approx(expected, rel=1e-12)
    assert logistic_loss(np.ones(5), X, y, l2=0.5) == pytest.approx(logistic_loss(np.ones(5), X, y) + 0.5 * 0.5 * 5)
    batch = logistic_loss(np.vstack([np.zeros(5), np.ones(5)]), X, y)
    assert batch.shape == (2,) and batch[1] == pytest.approx(logistic_loss(np.ones(5), X, y))


def test_per_example_gradients_are_the_gradients_of_the_loss():
    """Each row is the gradient of that record's loss (central differences, 1e-7 relative)."""
    X, y = _toy(n=6)
    theta = np.array([0.3, -0.2, 0.5, 0.1, -0.4])
    grads = per_example_gradients(theta, X, y)
    assert grads.shape == (6, 5)
    h = 1e-6
    for i in range(6):
        fd = [(logistic_loss(theta + h * e, X[i:i + 1], y[i:i + 1]) - logistic_loss(theta - h * e, X[i:i + 1],
                                                                                    y[i:i + 1])) / (2 * h)
              for e in np.eye(5)]
        np.testing.assert_allclose(grads[i], fd, rtol=1e-7, atol=1e-9)
    runs = per_example_gradients(np.vstack([theta, 2 * theta]), X, y)
    assert runs.shape == (2, 6, 5)
    np.testing.assert_allclose(runs[1], per_example_gradients(2 * theta, X, y), rtol=1e-15)
    assert per_example_gradients(theta, np.zeros((0, 5)), np.zeros(0)).shape == (0, 5)   # an empty batch


def test_accuracy():
    X = np.array([[1.0, 2.0], [1.0, -2.0], [1.0, 0.5]])
    assert accuracy(np.array([0.0, 1.0]), X, np.array([1.0, 0.0, 0.0])) == pytest.approx(2 / 3)
    np.testing.assert_allclose(accuracy(np.array([[0.0, 1.0], [0.0, -1.0]]), X, np.array([1.0, 0.0, 1.0])),
                               [1.0, 0.0])


def test_gradient_descent_reaches_the_regularised_optimum():
    """With an l2 penalty the objective is strongly convex: gradient descent converges to scipy's minimiser."""
    X, y = _toy(n=60)
    l2 = 0.2
    theta = gradient_descent(X, y, steps=3000, learning_rate=0.5, l2=l2)
    ref = optimize.minimize(lambda t: logistic_loss(t, X, y, l2), np.zeros(5), method="BFGS",
                            jac=lambda t: per_example_gradients(t, X, y).mean(axis=0) + l2 * t, tol=1e-12).x
    np.testing.assert_allclose(theta, ref, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# noisy_sgd
# ---------------------------------------------------------------------------------------------------------

def test_noiseless_full_batch_unclipped_is_gradient_descent():
    X, y = _toy()
    thetas = noisy_sgd(X, y, steps=50, learning_rate=0.3, clip_norm=np.inf, noise_scale=0.0, sampling="full",
                       normaliser=40, l2=0.1, runs=3, rng=np.random.default_rng(0))
    gd = gradient_descent(X, y, steps=50, learning_rate=0.3, l2=0.1)
    assert thetas.shape == (3, 5)
    np.testing.assert_allclose(thetas, np.tile(gd, (3, 1)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("clip_ord", [1, 2])
def test_one_step_clips_each_example(clip_ord):
    """One full-batch step without noise is theta - eta * mean of the per-example clipped gradients."""
    X, y = _toy(n=30)
    step = noisy_sgd(X, y, steps=1, learning_rate=0.7, clip_norm=0.4, clip_ord=clip_ord, noise_scale=0.0,
                     sampling="full", normaliser=30, rng=np.random.default_rng(1))[0]
    g = per_example_gradients(np.zeros(5), X, y)
    norms = np.linalg.norm(g, ord=clip_ord, axis=1, keepdims=True)
    expected = -0.7 * (g * np.minimum(1.0, 0.4 / norms)).mean(axis=0)
    np.testing.assert_allclose(step, expected, rtol=1e-12)
    # clipping the mean instead would give a different step
    assert not np.allclose(step, -0.7 * g.mean(axis=0) * min(1.0, 0.4 / np.linalg.norm(g.mean(axis=0), clip_ord)))


def _batch_design(n):
    """Record i has features e_i and label 0: its gradient at theta = 0 is e_i / 2, so one noiseless step
    from 0 shows which records were in the batch (and the normaliser)."""
    return np.eye(n), np.zeros(n)


def test_poisson_batches_and_expected_batch_size():
    """Poisson sampling: each record in each run independently with probability q; the sum is divided by q n.

    400 runs x 200 records = 80 000 Bernoulli(0.3) draws: the observed rate has standard error 0.0016, the
    tolerance 0.01 is over 6 standard errors (false failure below 1e-9)."""
    n, q, eta = 200, 0.3, 1.0
    X, y = _batch_design(n)
    thetas = noisy_sgd(X, y, steps=1, learning_rate=eta, clip_norm=np.inf, noise_scale=0.0, sampling="poisson",
                       sample_rate=q, normaliser=q * n, runs=400, rng=np.random.default_rng(2))
    member = thetas != 0.0
    assert abs(member.mean() - q) < 0.01
    np.testing.assert_allclose(thetas[member], -eta * 0.5 / (q * n), rtol=1e-14)
    sizes = member.sum(axis=1)
    assert sizes.std() > 0, "Poisson batches have random sizes"
    # independence across records: the batch sizes have the binomial variance n q (1 - q) = 42 (chi-square
    # bounds for 399 degrees of freedom at 1e-7 on each side)
    ratio = sizes.var(ddof=1) / (n * q * (1 - q))
    assert stats.chi2.ppf(1e-7, 399) / 399 < ratio < stats.chi2.ppf(1 - 1e-7, 399) / 399


def test_fixed_size_batches():
    """Fixed-size sampling: exactly m distinct records per run, each record equally often over many runs.

    500 runs x 50 of 100 records: each record's count is hypergeometric-sum with mean 250 and sd about 11.2; a
    tolerance of 70 is over 6 sd (false failure below 1e-8 for all 100 records together)."""
    n, m = 100, 50
    X, y = _batch_design(n)
    thetas = noisy_sgd(X, y, steps=1, learning_rate=1.0, clip_norm=np.inf, noise_scale=0.0, sampling="fixed",
                       sample_size=m, normaliser=m, runs=500, rng=np.random.default_rng(3))
    member = thetas != 0.0
    assert np.all(member.sum(axis=1) == m)
    np.testing.assert_allclose(thetas[member], -0.5 / m, rtol=1e-14)
    assert np.all(np.abs(member.sum(axis=0) - 250) < 70)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noise_scale_per_run(noise):
    """With all-zero features every gradient vanishes and one step from 0 is -eta * noise.  For each of the
    two runs 20 000 coordinates: the Kolmogorov-Smirnov test against the target law at level 1e-7 (false
    failure 1e-7 per run)."""
    d = 20_000
    X, y = np.zeros((5, d)), np.ones(5)
    scales = np.array([0.3, 2.0])
    thetas = noisy_sgd(X, y, steps=1, learning_rate=0.5, clip_norm=1.0, noise_scale=scales, noise=noise,
                       sampling="full", normaliser=5, runs=2, rng=np.random.default_rng(4))
    law = stats.norm if noise == "gaussian" else stats.laplace
    for run, scale in enumerate(scales):
        assert stats.kstest(-thetas[run] / 0.5, law(scale=scale).cdf).pvalue > 1e-7


def test_same_seed_same_runs():
    X, y = _toy()
    kwargs = dict(steps=5, learning_rate=0.5, clip_norm=1.0, noise_scale=0.1, sampling="poisson", sample_rate=0.2,
                  normaliser=8.0, runs=2)
    a = noisy_sgd(X, y, rng=np.random.default_rng(7), **kwargs)
    b = noisy_sgd(X, y, rng=np.random.default_rng(7), **kwargs)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0], a[1]), "runs must get independent batches and noise"


GOOD = dict(steps=2, learning_rate=0.5, clip_norm=1.0, noise_scale=0.1, sampling="full", normaliser=40, runs=2)


@pytest.mark.parametrize("change,name", [
    ({"steps": -1}, "steps"), ({"learning_rate": 0.0}, "learning_rate"), ({"clip_norm": 0.0}, "clip_norm"),
    ({"noise_scale": -0.1}, "noise_scale"), ({"noise_scale": [0.1, 0.2, 0.3]}, "noise_scale"),
    ({"sampling": "bootstrap"}, "sampling"), ({"noise": "cauchy"}, "noise"), ({"clip_ord": 3}, "clip_ord"),
    ({"clip_ord": True}, "clip_ord"), ({"runs": 0}, "runs"), ({"l2": -1.0}, "l2"),
    ({"sampling": "poisson"}, "sample_rate"), ({"sampling": "poisson", "sample_rate": 1.5}, "sample_rate"),
    ({"sampling": "fixed"}, "sample_size"), ({"sampling": "fixed", "sample_size": 41}, "sample_size"),
    ({"rng": "seed"}, "rng"), ({"normaliser": 0.0}, "normaliser"), ({"normaliser": -4.0}, "normaliser"),
    ({"normaliser": np.inf}, "normaliser"), ({"normaliser": np.nan}, "normaliser"), ({"normaliser": "n"}, "normaliser"),
])
def test_noisy_sgd_bad_input(change, name):
    X, y = _toy()
    kwargs = {**GOOD, "rng": np.random.default_rng(0), **change}
    with pytest.raises(ValueError, match=name):
        noisy_sgd(X, y, **kwargs)


@pytest.mark.parametrize("call,name", [
    (lambda X, y: logistic_loss(np.zeros(4), X, y), "theta"),
    (lambda X, y: logistic_loss(np.zeros(5), X, y[:-1]), "y"),
    (lambda X, y: logistic_loss(np.zeros(5), X, y + 0.5), "y"),
    (lambda X, y: per_example_gradients(np.zeros(5), X[:, :, None], y), "X"),
    (lambda X, y: accuracy(np.zeros((2, 2, 5)), X, y), "theta"),
    (lambda X, y: gradient_descent(X, y, steps=1.5, learning_rate=0.1), "steps"),
    (lambda X, y: logistic_loss(np.zeros(5), np.where(X > 1, np.nan, X), y), "X"),
])
def test_model_bad_input(call, name):
    X, y = _toy()
    with pytest.raises(ValueError, match=name):
        call(X, y)
