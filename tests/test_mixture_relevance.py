"""``MixtureSVC(weight_features=True)``: standardised features weighted by their relevance.

References: the correlation ratios are recomputed as the multi-output R^2 of scikit-learn's
``LinearRegression`` of the one-hot labels on one-hot cells cut by ``pandas.qcut``; the
labelled sample is checked against the rows it names; the weights and ``C`` of a fit
against the training rows' own standard deviations (small data: the sample is every row).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression

from streamlearn.data import open_dataset
from streamlearn.models.mixture import MixtureSVC
from streamlearn.solvers.mixture.relevance import (
    RELEVANCE_BINS,
    RELEVANCE_FLOOR,
    LabelledSamplePass,
    feature_relevance,
    relevance_weights,
)


def _explained(cells: np.ndarray, codes: np.ndarray) -> float:
    """R^2 of the one-hot labels on one-hot cells, less ``(cells - 1) / n``."""
    A = pd.get_dummies(pd.Series(cells)).to_numpy(dtype=float)
    Y = pd.get_dummies(pd.Series(codes)).to_numpy(dtype=float)
    fitted = LinearRegression().fit(A, Y).predict(A)
    r2 = 1.0 - ((Y - fitted) ** 2).sum() / ((Y - Y.mean(axis=0)) ** 2).sum()
    return float(r2 - (A.shape[1] - 1) / len(codes))


def _reference_relevance(X: np.ndarray, codes: np.ndarray) -> np.ndarray:
    bins = np.stack([pd.qcut(X[:, f], RELEVANCE_BINS, labels=False) for f in
                     range(X.shape[1])], axis=1)
    d = X.shape[1]
    single = np.array([_explained(bins[:, f], codes) for f in range(d)])
    out = single.copy()
    for f in range(d):
        for g in range(d):
            if g != f:
                pair = _explained(bins[:, f] * RELEVANCE_BINS + bins[:, g], codes)
                out[f] = max(out[f], pair - single[g])
    return out


def _ring(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A ring in the first 2 of 8 normal features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    return X, (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)


def _product(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """XOR of the signs of features 2 and 3 of 8 normal ones."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    return X, (X[:, 2] * X[:, 3] > 0).astype(int)


def test_relevance_is_the_correlation_ratio_of_bins_and_pairs():
    # 402 rows: no linearly interpolated quartile falls on a sampled value
    X, y = _ring(402, seed=1)
    y = y + (X[:, 2] * X[:, 3] > 0)  # three classes
    got = feature_relevance(X.astype(np.float32), y, 3)
    np.testing.assert_allclose(got, _reference_relevance(X.astype(np.float32), y),
                               atol=1e-9)


def test_wide_data_pair_only_the_features_that_explain_most_alone(monkeypatch):
    # beyond MAX_PAIR_FEATURES features (6 here, 64 by default), every feature's bins are
    # scored alone, and pairs only among the 6 that explain the most alone: the product
    # of features 2 and 3 (no marginal effect) is found when feature 2 has one too
    from streamlearn.solvers.mixture import relevance

    monkeypatch.setattr(relevance, "MAX_PAIR_FEATURES", 6)
    monkeypatch.setattr(relevance, "SINGLE_BLOCK_FEATURES", 4)  # blocks of 4, 4 and 2
    rng = np.random.default_rng(4)
    X = rng.normal(size=(402, 10)).astype(np.float32)
    score = X[:, 0] + 0.6 * X[:, 2] + 2.0 * np.sign(X[:, 2] * X[:, 3]) + X[:, 5] * X[:, 6]
    y = np.digitize(score, [-1.0, 1.0])  # three classes
    got = feature_relevance(X, y, 3)
    bins = np.stack([pd.qcut(X[:, f], RELEVANCE_BINS, labels=False) for f in range(10)],
                    axis=1)
    single = np.array([_explained(bins[:, f], y) for f in range(10)])
    top = np.sort(np.argsort(-single, kind="stable")[:6])
    want = single.copy()
    want[top] = _reference_relevance(X[:, top], y)
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert 3 in top and got[3] > single[3] + 0.05  # its product with feature 2
    # a feature that acts only through a product is scored alone outside those 6
    outside = np.setdiff1d(np.arange(10), top)
    np.testing.assert_allclose(got[outside], single[outside], atol=1e-9)


def test_a_feature_acting_through_a_product_is_relevant():
    X, y = _product(3000)
    r = feature_relevance(X.astype(np.float32), y, 2)
    alone = feature_relevance(X[:, [2]].astype(np.float32), y, 2)  # no partner
    assert alone[0] < 0.01 < r[2]  # the product only shows with feature 3
    w = relevance_weights(r)
    assert w.max() == 1.0 and np.all(w[2:4] > 0.9) and np.all(np.delete(w, [2, 3]) < 0.3)
    np.testing.assert_allclose(w, np.clip(np.sqrt(np.clip(r, 0, None) * 3 / r.max()),
                                          RELEVANCE_FLOOR, 1.0))
    np.testing.assert_array_equal(relevance_weights(np.array([-0.1, 0.0])), [1.0, 1.0])


def test_labelled_sample_holds_the_rows_it_names():
    X, y = _ring(900)
    ds = open_dataset(X.astype(np.float32), target=y)
    sample = LabelledSamplePass(100, 8, seed=3)
    state = sample.start()
    for chunk in ds.chunks(250):
        state = sample.step(state, chunk)
    rows = state.rows
    values, codes = sample.finish(state)
    np.testing.assert_array_equal(values, X[rows].astype(np.float32))
    np.testing.assert_array_equal(codes, np.searchsorted(ds.classes, y[rows]))
    # as a cluster merges its partitions' samples: the same rows
    parts = [sample.start(), sample.start()]
    for i, chunk in enumerate(ds.chunks(250)):
        parts[i % 2] = sample.step(parts[i % 2], chunk)
    merged = sample.merge(*parts)
    np.testing.assert_array_equal(merged.rows, rows)
    np.testing.assert_array_equal(sample.finish(merged)[1], codes)


def test_weights_and_C_of_a_fit_and_the_ring_among_noise():
    X, y = _ring(2400)
    Xtr, ytr, Xte, yte = X[:1800], y[:1800], X[1800:], y[1800:]
    model = MixtureSVC(progress=False, spread_tails=False).fit(Xtr, ytr)
    weights = np.std(Xtr, axis=0) / model.scale_
    expected = relevance_weights(_reference_relevance(Xtr.astype(np.float32), ytr))
    np.testing.assert_allclose(weights, expected, rtol=1e-5)
    np.testing.assert_allclose(model.C_, 10.0 / (np.sum(expected ** 2) + 1.0), rtol=1e-6)
    plain = MixtureSVC(progress=False, spread_tails=False, weight_features=False)
    plain = plain.fit(Xtr, ytr)
    np.testing.assert_allclose(np.std(Xtr, axis=0) / plain.scale_, 1.0, rtol=1e-5)
    # the gates split the two relevant features, not the six of noise
    error = np.mean(model.predict(Xte) != yte)
    assert error < np.mean(plain.predict(Xte) != yte) - 0.05


def test_a_ring_among_a_hundred_noise_features_is_weighed():
    # beyond MAX_PAIR_FEATURES columns the features are still weighed: those of the ring
    # keep their spread, the noise falls to the floor, and the gates find the ring
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 100))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)
    Xtr, ytr, Xte, yte = X[:2400], y[:2400], X[2400:], y[2400:]
    model = MixtureSVC(progress=False, spread_tails=False).fit(Xtr, ytr)
    weights = np.std(Xtr, axis=0) / model.scale_
    np.testing.assert_allclose(weights[:2], 1.0, rtol=1e-5)
    assert weights[2:].max() < 0.5
    plain = MixtureSVC(progress=False, spread_tails=False, weight_features=False)
    plain = plain.fit(Xtr, ytr)
    assert np.mean(model.predict(Xte) != yte) < np.mean(plain.predict(Xte) != yte) - 0.05
