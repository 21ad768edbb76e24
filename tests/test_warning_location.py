"""Warnings name the user's line that called the library, however deep they are raised."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from streamlearn.models import (
    AdditiveSVC,
    MixtureSVC,
    ShareBoostClassifier,
    SparsePPRRegressor,
)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 12)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("model, regression", [
    (AdditiveSVC(epochs=1, tol=1e-9, interactions=0), False),
    (MixtureSVC(epochs=1, tol=1e-12, validation_fraction=None), False),
    (ShareBoostClassifier(n_rounds=5, refit_iter=1, tol=0.0), False),
    (SparsePPRRegressor(max_iter=1), True),
], ids=lambda v: type(v).__name__ if not isinstance(v, bool) else "")
def test_a_convergence_warning_names_the_line_of_fit(model, regression):
    X, y = _data()
    target = X @ np.linspace(1.0, 2.0, X.shape[1]) if regression else y
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, target)
    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert ours, "the setting was chosen to stop at its cap"
    assert all(w.filename == __file__ for w in ours), [(w.filename, w.lineno) for w in ours]


def test_a_partial_fit_warning_names_the_line_of_the_call():
    X, y = _data()
    model = AdditiveSVC(feature_range=(-0.5, 0.5), interactions=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.partial_fit(X, y)
    clamped = [w for w in caught if "clamped" in str(w.message)]
    assert clamped and all(w.filename == __file__ for w in clamped)
