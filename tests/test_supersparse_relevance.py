"""``weight_features`` of the super-sparse models: the RBF over relevance-weighted features.

References: the weights are recomputed from the training rows by the correlation-ratio
reference of ``tests/test_mixture_relevance.py`` (scikit-learn's ``LinearRegression`` on
``pandas.qcut`` cells) and the standardisation from numpy's standard deviations (small
data: the fit's sample is every row); a regressor's target codes against ``pandas.qcut``;
the error and R^2 gains against the same model without weights. The slopes of a weighted
model are restated from ``decision_function`` in ``tests/test_model_importances.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_friedman1

from streamlearn.io import load_model, save_model
from streamlearn.models import SuperSparseClassifier, SuperSparseRegressor
from streamlearn.solvers.mixture.relevance import (
    RELEVANCE_BINS,
    relevance_weights,
    target_codes,
)
from tests.test_mixture_relevance import _reference_relevance, _ring


def test_weights_scale_and_the_ring_among_noise() -> None:
    X, y = _ring(2400)
    Xtr, ytr, Xte, yte = X[:1800], y[:1800], X[1800:], y[1800:]
    model = SuperSparseClassifier().fit(Xtr, ytr)
    expected = relevance_weights(_reference_relevance(Xtr.astype(np.float32), ytr))
    np.testing.assert_allclose(model.feature_weights_, expected, rtol=1e-6)
    np.testing.assert_allclose(np.std(Xtr, axis=0) / model.scale_, expected, rtol=1e-5)
    assert np.all(expected[:2] == 1.0) and np.all(expected[2:] < 0.5)
    plain = SuperSparseClassifier(weight_features=False).fit(Xtr, ytr)
    assert not hasattr(plain, "feature_weights_")
    np.testing.assert_allclose(np.std(Xtr, axis=0) / plain.scale_, 1.0, rtol=1e-5)
    # the RBF's neighbourhoods follow the two features of the ring, not the six of noise
    assert 1 - model.score(Xte, yte) < (1 - plain.score(Xte, yte)) - 0.02


def test_target_codes_are_the_quartiles_of_the_targets() -> None:
    # 1,002 values: no linearly interpolated quartile falls on one (where qcut's bins,
    # closed on the right, and the codes, ties up, would differ)
    t = np.random.default_rng(0).gamma(2.0, size=1002)
    np.testing.assert_array_equal(target_codes(t), pd.qcut(t, RELEVANCE_BINS, labels=False))
    # two values (a binary target): two codes, ties in one bin
    assert np.unique(target_codes(np.repeat([-1.0, 1.0], [300, 700]))).shape == (2,)


def test_regressor_weighs_friedman_noise_down_and_gains() -> None:
    X, y = make_friedman1(3000, noise=1.0, random_state=0)
    Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
    model = SuperSparseRegressor().fit(Xtr, ytr)
    w = model.feature_weights_
    # features 5-9 do not enter Friedman-1's target
    assert np.all(w[5:] < 0.4) and np.all(w[[0, 1, 3]] == 1.0)
    plain = SuperSparseRegressor(weight_features=False).fit(Xtr, ytr)
    assert model.score(Xte, yte) > plain.score(Xte, yte) + 0.005


@pytest.mark.parametrize("estimator", [SuperSparseClassifier, SuperSparseRegressor])
def test_the_weights_travel_with_the_model_file(tmp_path, estimator) -> None:
    X, y = _ring(900, seed=3)
    model = estimator(n_prototypes=8).fit(X, y)
    path = tmp_path / "model.slm"
    save_model(model, path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.feature_weights_, model.feature_weights_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params()["weight_features"] is True


def test_wide_and_sparse_data_are_not_weighed() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 1025))  # more than MAX_RELEVANCE_FEATURES columns
    y = (X[:, 0] > 0).astype(int)
    assert not hasattr(SuperSparseClassifier(n_prototypes=6).fit(X, y), "feature_weights_")
