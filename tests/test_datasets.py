"""The offline data sets (dp_course.datasets): shapes, preparation, reproducibility, no network, bad input."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from dp_course.datasets import Split, breast_cancer


def test_breast_cancer_shapes_and_preparation():
    data = breast_cancer()
    assert isinstance(data, Split)
    assert data.X_train.shape == (455, 31) and data.X_test.shape == (114, 31)
    assert data.y_train.shape == (455,) and data.y_test.shape == (114,)
    assert data.feature_names[0] == "intercept" and len(data.feature_names) == 31
    assert np.all(data.X_train[:, 0] == 1.0) and np.all(data.X_test[:, 0] == 1.0)
    # standardised with the training part's statistics
    np.testing.assert_allclose(data.X_train[:, 1:].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data.X_train[:, 1:].std(axis=0), 1.0, rtol=1e-12)
    assert set(np.unique(data.y_train)) == {0.0, 1.0}
    # every original record appears once, in one of the two parts (labels: 357 benign, 212 malignant)
    assert data.y_train.sum() + data.y_test.sum() == 357
    assert not data.X_train.flags.writeable and not data.y_test.flags.writeable
    assert "n_train=455" in repr(data) and data.n_train == 455 and data.dimension == 31


def test_breast_cancer_undoes_to_the_raw_records():
    """The preparation is an affine map of scikit-learn's records: undoing it gives back the raw rows."""
    raw = load_breast_cancer()
    data = breast_cancer(seed=3)
    order = np.random.default_rng(3).permutation(569)
    train = order[:455]
    mean, std = raw.data[train].mean(axis=0), raw.data[train].std(axis=0)
    np.testing.assert_allclose(data.X_train[:, 1:] * std + mean, raw.data[train], rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(data.y_test, raw.target[order[455:]])


def test_breast_cancer_seeds_and_fractions():
    a, b, c = breast_cancer(seed=0), breast_cancer(seed=0), breast_cancer(seed=1)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.y_train, c.y_train)
    assert breast_cancer(test_fraction=0.5).X_test.shape == (284, 31)


def test_breast_cancer_needs_no_network(monkeypatch):
    """The data ship inside scikit-learn: loading them with every socket connection refused works."""
    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert breast_cancer().X_train.shape == (455, 31)


@pytest.mark.parametrize("kwargs,name", [
    ({"test_fraction": 0.0}, "test_fraction"), ({"test_fraction": 1.0}, "test_fraction"),
    ({"test_fraction": float("nan")}, "test_fraction"), ({"test_fraction": "0.2"}, "test_fraction"),
    ({"test_fraction": 1e-6}, "test_fraction"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
])
def test_breast_cancer_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        breast_cancer(**kwargs)
