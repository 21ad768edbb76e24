"""Super-sparse machines map crowded features before the RBF's standardisation."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.features.tail_transform import SQUEEZE_RATIO
from streamlearn.io import load_model, save_model
from streamlearn.models import SuperSparseClassifier, SuperSparseRegressor


def _outliers(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two informative features; a few rows of feature 0 multiplied by 1e5."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(np.int64)
    return X, y


def test_an_outlier_no_longer_squeezes_its_feature() -> None:
    X, y = _outliers(3000, seed=0)
    Xt, yt = _outliers(2000, seed=1)
    spoiled = X.copy()
    spoiled[:10, 0] *= 1e5  # ten rows of one feature far out; the test rows are clean
    # standardised as it is, the feature's standard deviation is that of the outliers
    q1, q3 = np.quantile(spoiled[:, 0], [0.25, 0.75])
    assert spoiled[:, 0].std() > SQUEEZE_RATIO * (q3 - q1) / 1.349
    mapped = SuperSparseClassifier().fit(spoiled, y)
    plain = SuperSparseClassifier(spread_tails=False).fit(spoiled, y)
    clean = SuperSparseClassifier().fit(X, y)
    assert mapped.feature_transform_.features.tolist() == [0]
    assert not hasattr(clean, "feature_transform_")  # nothing crowded: as before
    err = {name: 1 - m.score(Xt, yt) for name, m in
           [("mapped", mapped), ("plain", plain), ("clean", clean)]}
    assert err["plain"] > err["clean"] + 0.1  # the circle is lost along feature 0
    assert err["mapped"] < err["clean"] + 0.04
    # the prototypes are in the features' own units: mapped, they are the fit's
    transform = mapped.feature_transform_
    z = (transform.apply_bounds(mapped.prototypes_) - mapped.shift_) / mapped.scale_
    np.testing.assert_allclose(z, mapped._fit_prototypes())


@pytest.mark.parametrize("outlier", [1e12, -1e12, 1e30])
def test_one_far_outlier_in_the_informative_feature_is_harmless(outlier: float) -> None:
    """Beyond about 3e10 the map no longer halved the outlier's crowding, the feature was
    left as it was, and its standardisation put every other row on one point: chance."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    Xt = rng.normal(size=(2000, 4))
    yt = (Xt[:, 0] + 0.5 * Xt[:, 1] > 0).astype(int)
    spoiled = X.copy()
    spoiled[0, 0] = outlier
    clean = SuperSparseClassifier().fit(X, y).score(Xt, yt)
    model = SuperSparseClassifier().fit(spoiled, y)
    assert model.feature_transform_.features.tolist() == [0]
    assert model.score(Xt, yt) > clean - 0.05


def test_the_map_travels_with_the_model_file_and_partial_fit(tmp_path) -> None:
    rng = np.random.default_rng(3)
    X = rng.lognormal(0.0, 2.0, size=(2000, 3)).astype(np.float32)
    target = np.log(X[:, 0]) - np.log(X[:, 1]) + 0.1 * rng.normal(size=2000)
    model = SuperSparseRegressor(n_prototypes=20).fit(X, target)
    assert set(model.feature_transform_.features.tolist()) >= {0, 1}
    loaded = load_model(save_model(model, tmp_path / "m.slm"))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # a continued fit reads its rows through the same map
    before = model.score(X, target)
    model.partial_fit(X, target)
    np.testing.assert_array_equal(model.feature_transform_.scale,
                                  loaded.feature_transform_.scale)
    assert model.score(X, target) > before - 0.05


def test_sparse_rows_are_mapped_a_block_at_a_time_as_dense_ones() -> None:
    import scipy.sparse as sp

    from streamlearn.models import supersparse

    X, y = _outliers(3000, seed=2)
    X[:10, 0] *= 1e5
    model = SuperSparseClassifier(n_prototypes=20).fit(X, y)
    assert hasattr(model, "feature_transform_")
    original = supersparse.PREDICT_BLOCK
    try:
        supersparse.PREDICT_BLOCK = 256  # several blocks
        np.testing.assert_allclose(model.decision_function(sp.csr_matrix(X)),
                                   model.decision_function(X), rtol=1e-10, atol=1e-12)
    finally:
        supersparse.PREDICT_BLOCK = original
