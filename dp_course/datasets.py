r"""Small real data sets that work offline, prepared for the lectures' models.

Only data bundled inside an installed, well-kept package is used (nothing is downloaded at run time):

* :func:`breast_cancer` - the Wisconsin diagnostic breast-cancer data shipped with scikit-learn
  (569 tumours, 30 real features, label 1 = benign), split into a training and a test part, standardised, with
  an intercept column, ready for logistic regression.

**Privacy caveat.**  The features are standardised with the mean and standard deviation of the *training*
part.  Those statistics are computed from the private records and are not protected by the DP training
that follows; the lectures treat the feature scaling as public knowledge (a deployment would fix it from
domain knowledge or spend part of the privacy budget on it).

Source: W. N. Street, W. H. Wolberg & O. L. Mangasarian (1993), "Nuclear feature extraction for breast tumor
diagnosis"; UCI Machine Learning Repository; ``sklearn.datasets.load_breast_cancer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_breast_cancer

from ._validation import check_int, check_real, check_real_array

__all__ = ["Split", "breast_cancer"]


@dataclass(frozen=True, eq=False)
class Split:
    """A labelled data set split into a training and a test part (arrays are read-only).

    Attributes:
        X_train: ``(n_train, d)`` float array of features (first column: the constant 1 of the intercept).
        y_train: ``(n_train,)`` float array of labels in {0, 1}.
        X_test: ``(n_test, d)`` float array.
        y_test: ``(n_test,)`` float array.
        feature_names: the ``d`` column names (``"intercept"`` first).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]

    def __post_init__(self) -> None:
        names = self.feature_names
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"feature_names must be a list or tuple of strings, got {names!r}")
        for part in ("train", "test"):
            X = check_real_array(f"X_{part}", getattr(self, f"X_{part}"), ndim=2)
            y = check_real_array(f"y_{part}", getattr(self, f"y_{part}"), ndim=1)
            if not np.isin(y, (0.0, 1.0)).all():
                raise ValueError(f"y_{part} must hold labels 0 or 1, got {sorted(set(y.tolist()) - {0.0, 1.0})[:3]}")
            if X.shape[0] != y.shape[0] or X.shape[1] != len(names):
                raise ValueError(f"X_{part} must have one row per label of y_{part} and one column per feature name, "
                                 f"got shape {X.shape} for {y.shape[0]} labels and {len(names)} names")
            for name, arr in ((f"X_{part}", X.copy()), (f"y_{part}", y.copy())):
                arr.flags.writeable = False
                object.__setattr__(self, name, arr)
        object.__setattr__(self, "feature_names", tuple(names))

    @property
    def n_train(self) -> int:
        """Number of training records."""
        return int(self.X_train.shape[0])

    @property
    def dimension(self) -> int:
        """Number of columns, intercept included."""
        return int(self.X_train.shape[1])

    def __repr__(self) -> str:
        return (f"Split(n_train={self.n_train}, n_test={self.X_test.shape[0]}, dimension={self.dimension}, "
                f"positive rate={self.y_train.mean():.3f})")


def breast_cancer(test_fraction: float = 0.2, seed: int = 0) -> Split:
    r"""The breast-cancer data (scikit-learn's bundled copy), split, standardised, with an intercept column.

    The records are shuffled with ``numpy.random.default_rng(seed)``; the last ``round(test_fraction * 569)``
    form the test part.  Each feature :math:`j` is mapped to :math:`(x_j - m_j)/s_j` with the training mean
    :math:`m_j` and standard deviation :math:`s_j` (see the module's privacy caveat), and a constant column of
    ones is put first.

    Args:
        test_fraction: share of the records held out for testing, in (0, 1).
        seed: seed of the shuffle, an integer >= 0.

    Returns:
        :class:`Split` with 31 columns (intercept + 30 features); labels 1 = benign, 0 = malignant.

    Raises:
        ValueError: if ``test_fraction`` is not in (0, 1) or ``seed`` is not an integer >= 0.

    >>> data = breast_cancer()
    >>> data.X_train.shape, data.X_test.shape
    ((455, 31), (114, 31))
    """
    test_fraction = check_real("test_fraction", test_fraction, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    seed = check_int("seed", seed, lo=0)
    raw = load_breast_cancer()
    X, y = np.asarray(raw.data, dtype=float), np.asarray(raw.target, dtype=float)
    n_test = int(round(test_fraction * X.shape[0]))
    if not 1 <= n_test < X.shape[0]:
        raise ValueError(f"test_fraction must leave at least one record in each part, got {test_fraction:g} "
                         f"(of {X.shape[0]} records)")
    order = np.random.default_rng(seed).permutation(X.shape[0])
    train, test = order[:-n_test], order[-n_test:]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)  # a constant column stays constant (none in this data set)

    def prepare(rows: np.ndarray) -> np.ndarray:
        return np.hstack([np.ones((rows.size, 1)), (X[rows] - mean) / std])

    names = ("intercept", *(str(f) for f in raw.feature_names))
    return Split(prepare(train), y[train], prepare(test), y[test], names)
