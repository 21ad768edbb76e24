"""AdditiveSVC's Fourier and Hermite embeddings on features with heavy tails."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial import hermite_e
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from streamlearn.features.hermite import hermite_weights
from streamlearn.models import AdditiveSVC
from streamlearn.models.additive import HERMITE_SPAN


def heavy_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A Student t(1.5) feature, a uniform one and a lognormal(0, 2) one, each with a
    smooth effect on the label (the uniform one's a sine)."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.standard_t(1.5, n) * 10 + 100, rng.uniform(0, 1, n), rng.lognormal(0, 2, n)]
    f = np.tanh((X[:, 0] - 100) / 10) + np.sin(6 * X[:, 1]) + 0.3 * np.log(X[:, 2])
    return X, (f + 0.3 * rng.normal(size=n) > 0).astype(int)


def test_hermite_map_clamps_far_rows_and_every_feature_counts():
    X, y = heavy_problem(2_000, seed=0)
    Xt, yt = heavy_problem(2_000, seed=100)
    model = AdditiveSVC(embedding="hermite", spread_tails=False, random_state=0).fit(X, y)
    fmap = model.feature_map_
    assert fmap.clip == HERMITE_SPAN
    # a row far out embeds as the feature's mean plus 3 standard deviations: c_n He_n(3)
    far = (fmap.mean_ + 1e4 * fmap.std_).astype(np.float32)[None, :]
    weights = hermite_weights(fmap.n_terms, fmap.penalty_order)
    expected = np.array(
        [
            w * hermite_e.hermeval(HERMITE_SPAN, np.eye(fmap.n_terms + 1)[n])
            for n, w in zip(range(1, fmap.n_terms + 1), weights, strict=True)
        ]
    )
    np.testing.assert_allclose(
        fmap.transform(far).reshape(3, -1), np.tile(expected, (3, 1)), rtol=1e-5
    )
    # unclamped, the tails' rows (squared norms up to 1e10 times the others') took the
    # training over: every weight near 1e-3, accuracy at chance, the sine's feature 0
    linear = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y).score(Xt, yt)
    assert model.score(Xt, yt) > linear + 0.02
    assert model.feature_importances_[1] > 0.5


@pytest.mark.parametrize("embedding", ["fourier", "hermite"])
def test_spread_tails_maps_crowded_features_before_every_embedding(embedding):
    X, y = heavy_problem(2_000, seed=1)
    Xt, yt = heavy_problem(2_000, seed=101)
    bspline = AdditiveSVC(random_state=0).fit(X, y)
    model = AdditiveSVC(embedding=embedding, random_state=0).fit(X, y)
    # the same rule picks the same map: the t and lognormal features, not the uniform one
    ours, theirs = model.feature_transform_, bspline.feature_transform_
    assert ours.features.tolist() == theirs.features.tolist() == [0, 2]
    np.testing.assert_array_equal(ours.centre, theirs.centre)
    np.testing.assert_array_equal(ours.scale, theirs.scale)
    assert model.score(Xt, yt) > bspline.score(Xt, yt) - 0.03
    # the model is the one trained on the mapped rows, and takes the original values (the
    # Hermite map's mean and deviation of a mapped feature come from the describe pass's
    # float32 sample, here every row: equal up to rounding)
    reference = AdditiveSVC(embedding=embedding, spread_tails=False, random_state=0).fit(
        ours.apply(X), y
    )
    np.testing.assert_allclose(
        model.decision_function(Xt[:500]),
        reference.decision_function(ours.apply(Xt[:500])),
        rtol=1e-4,
        atol=1e-6,
    )
    plain = AdditiveSVC(embedding=embedding, spread_tails=False, random_state=0).fit(X, y)
    assert not hasattr(plain, "feature_transform_")


def test_linear_model_is_fitted_on_the_spread_features():
    # sinh(2.5 x) of a linear problem: every feature's rows crowd near 0 and a few far
    # rows take a linear model of the raw values over; the linear embedding takes the map
    # as the curves and the linear candidate of the default fit do
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2_400, 5))
    y = (X @ np.array([1.0, -1.0, 0.7, 0.5, 0.0]) + 0.5 * rng.normal(size=2_400) > 0).astype(int)
    heavy = np.sinh(2.5 * X)
    train, test = slice(0, 1_600), slice(1_600, None)
    model = AdditiveSVC(embedding="linear", random_state=0).fit(heavy[train], y[train])
    t = model.feature_transform_
    assert t.features.tolist() == [0, 1, 2, 3, 4]
    # the model trained, without the rule, on the rows mapped beforehand
    reference = AdditiveSVC(embedding="linear", spread_tails=False, random_state=0).fit(
        t.apply(heavy[train]), y[train]
    )
    np.testing.assert_allclose(
        model.decision_function(heavy[test]),
        reference.decision_function(t.apply(heavy[test])),
        rtol=1e-4,
        atol=1e-6,
    )
    logistic = make_pipeline(StandardScaler(), LogisticRegression()).fit(
        t.apply(heavy[train]), y[train]
    )
    assert model.score(heavy[test], y[test]) > logistic.score(t.apply(heavy[test]), y[test]) - 0.03
    plain = AdditiveSVC(embedding="linear", spread_tails=False, random_state=0)
    assert model.score(heavy[test], y[test]) > plain.fit(heavy[train], y[train]).score(
        heavy[test], y[test]
    ) + 0.04
    # sparse rows of the same values go through the map too (a zero is mapped like any
    # value): the same scores as the dense rows
    from scipy import sparse

    np.testing.assert_allclose(model.decision_function(sparse.csr_matrix(heavy[test])),
                               model.decision_function(heavy[test]), rtol=1e-6, atol=1e-6)
    # a zero-preserving linear model keeps its zeros: no map
    kept = AdditiveSVC(embedding="linear", zero_preserving=True, random_state=0)
    assert not hasattr(kept.fit(heavy[train], y[train]), "feature_transform_")
