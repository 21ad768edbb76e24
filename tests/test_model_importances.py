"""feature_importances_ of the non-additive models (their stated rules, and that they find
the features a generated label depends on), and of AdditiveSVC after partial_fit."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.models import MixtureSVC, ShareBoostClassifier


def _three_class(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 16)).astype(np.float32)
    return X, np.argmax(X[:, [3, 7, 12]] + 0.2 * rng.normal(size=(n, 3)), axis=1)


@pytest.mark.parametrize("features", ["linear", "stumps", "anchors"])
def test_shareboost_importances_are_the_weights_of_the_features_columns(features) -> None:
    X, y = _three_class(3000, seed=0)
    model = ShareBoostClassifier(features=features, random_state=0).fit(X, y)
    importances = model.feature_importances_
    assert importances.shape == (16,) and importances.sum() == pytest.approx(1.0)
    assert np.all(importances >= 0)
    coef = np.abs(model.coef_groups_)  # (T, k, q)
    if features == "linear":
        expected = np.bincount(model.selected_features_, coef[:, :, 0].mean(axis=1), 16)
    elif features == "stumps":
        # each feature's stumps summed on the training rows themselves, their mean
        # absolute deviation (the rule assumes the quantile bins' equal shares)
        feature, threshold = np.divmod(model.selected_features_, model.family_.n_thresholds)
        theta = model.family_.thresholds[feature, threshold]
        expected = np.zeros(16)
        for c in range(coef.shape[1]):
            g = np.zeros((3000, 16))
            for f, t, step in zip(feature, theta, model.coef_groups_[:, c, 0], strict=True):
                g[:, f] += step * (X[:, f] <= t)
            expected += np.abs(g - g.mean(axis=0)).mean(axis=0) / coef.shape[1]
        np.testing.assert_allclose(importances, expected / expected.sum(), atol=0.01)
    else:
        expected = coef[:, :, :16].mean(axis=1).sum(axis=0)
    if features != "stumps":
        np.testing.assert_allclose(importances, expected / expected.sum(), rtol=1e-12)
    if features != "anchors":
        unused = np.setdiff1d(np.arange(16), model.used_features_)
        assert np.all(importances[unused] == 0)
    assert set(np.argsort(-importances)[:3]) == {3, 7, 12}


def test_stump_importances_rank_a_noise_feature_last_as_permutation_does() -> None:
    """Stumps whose steps cancel, or split off few rows, change few scores: a noise
    feature's share stays small (the sum of absolute steps gave it a quarter)."""
    from sklearn.inspection import permutation_importance

    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 3)).astype(np.float32)
    y = (X[:, 0] + 0.6 * X[:, 1] + 0.3 * rng.normal(size=4000) > 0).astype(int)
    model = ShareBoostClassifier(features="stumps", random_state=0).fit(X[:3000], y[:3000])
    permuted = permutation_importance(model, X[3000:], y[3000:], n_repeats=5,
                                      random_state=0).importances_mean
    assert list(np.argsort(-model.feature_importances_)) == list(np.argsort(-permuted))
    assert model.feature_importances_[2] < 0.1


def test_mixture_importances_weigh_the_experts_by_their_components() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (3000, 5)).astype(np.float32)
    X[:, 4] *= 1000.0  # units do not matter: the experts see standardised features
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = MixtureSVC(random_state=0).fit(X, y)
    importances = model.feature_importances_
    expected = (model.xi_[:, :, None] * np.abs(model.expert_coef_[:, :, :5])).sum(axis=(0, 1))
    np.testing.assert_allclose(importances, expected / expected.sum(), rtol=1e-12)
    assert set(np.argsort(-importances)[:2]) == {0, 1}
    assert importances[2:].max() < 0.5 * importances[:2].min()


@pytest.mark.parametrize("kind", ["ppr", "jsboost"])
def test_projection_pursuit_importances_follow_the_terms_and_ignore_units(kind) -> None:
    from streamlearn.models import SparseJSBoostClassifier, SparsePPRRegressor

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    signal = (X[:, 0] + X[:, 1]) ** 2 / 2 + np.sin(X[:, 0] - X[:, 1])
    y = signal + 0.1 * rng.normal(size=3000) if kind == "ppr" else (signal > 1).astype(int)
    cls = SparsePPRRegressor if kind == "ppr" else SparseJSBoostClassifier
    model = cls().fit(X, y)
    importances = model.feature_importances_
    assert set(np.argsort(-importances)[:2]) == {0, 1}
    assert importances.sum() == pytest.approx(1.0)
    unused = np.flatnonzero(~np.any(model.projections_ != 0, axis=0))
    assert np.all(importances[unused] == 0)
    # the rule restated: spread of each term x |a_tf| sd_f / the term's range
    sd = X.astype(np.float64).std(axis=0)
    spread = (np.ptp(model.spline_coef_, axis=1) if kind == "ppr"
              else np.abs(model.learner_weights_) * np.ptp(model.tables_, axis=1))
    width = model.ranges_[:, 1] - model.ranges_[:, 0]
    expected = (spread / width) @ (np.abs(model.projections_) * sd)
    np.testing.assert_allclose(importances, expected / expected.sum(), rtol=1e-3)
    # a feature in other units: the same importances
    scaled = X.copy()
    scaled[:, 1] *= 1000.0
    again = cls().fit(scaled, y).feature_importances_
    np.testing.assert_allclose(again, importances, atol=0.02)


def _finite_slopes(model, points: np.ndarray) -> np.ndarray:
    """Mean absolute slope of decision_function per standard deviation of each feature at
    ``points``, by central differences."""
    sd = model.scale_
    slope = np.empty(points.shape, dtype=np.float64)
    for f in range(points.shape[1]):
        step = np.zeros(points.shape[1])
        step[f] = 1e-3 * sd[f]
        slope[:, f] = (model.decision_function(points + step)
                       - model.decision_function(points - step)) / 2e-3
    return np.abs(slope).mean(axis=0)


def test_supersparse_importances_are_the_mean_slope_over_the_rows() -> None:
    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[:, 5] *= 500.0
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1.4).astype(int)
    model = SuperSparseClassifier(random_state=0).fit(X, y)
    importances = model.feature_importances_
    assert set(np.argsort(-importances)[:2]) == {0, 1}
    assert importances.sum() == pytest.approx(1.0)
    # the slope restated by finite differences of decision_function in standard units,
    # over the training rows (3,000: the spread pass's sample holds them all)
    expected = _finite_slopes(model, X.astype(np.float64))
    np.testing.assert_allclose(importances, expected / expected.sum(), rtol=1e-2, atol=1e-4)
    # a model without the rows' slopes (one saved before them) takes the prototypes'
    del model.feature_slopes_
    expected = _finite_slopes(model, np.asarray(model.prototypes_))
    np.testing.assert_allclose(model.feature_importances_, expected / expected.sum(),
                               rtol=1e-2, atol=1e-4)


def test_supersparse_regressor_importances_follow_the_features_the_target_reads() -> None:
    """A linear target in x0 > x1 > x2 and three noise features: prototypes settle away from
    the rows, where slopes say little; over the rows the order is the target's."""
    from sklearn.inspection import permutation_importance

    from streamlearn.models import SuperSparseRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = 2 * X[:, 0] + X[:, 1] + 0.3 * X[:, 2] + 0.1 * rng.normal(size=3000)
    model = SuperSparseRegressor(random_state=0).fit(X[:2500], y[:2500])
    importances = model.feature_importances_
    assert list(np.argsort(-importances)[:3]) == [0, 1, 2]
    assert importances[3:].max() < importances[2]
    permuted = permutation_importance(model, X[2500:], y[2500:], random_state=0)
    assert list(np.argsort(-permuted.importances_mean)[:3]) == [0, 1, 2]


def test_additive_importances_after_partial_fit_are_over_the_latest_rows() -> None:
    from sklearn.datasets import make_classification

    from streamlearn.models import AdditiveSVC

    X, y = make_classification(2000, 6, n_informative=2, n_redundant=0, random_state=0)
    X = X.astype(np.float32)
    model = AdditiveSVC(interactions=0, progress=False)
    for a in range(0, 2000, 500):
        model.partial_fit(X[a:a + 500], y[a:a + 500], classes=[0, 1])
    # the centred contributions' mean absolute value over the last call's rows
    terms = model.term_contributions(X[1500:])
    expected = np.abs(terms - terms.mean(axis=0)).mean(axis=0).mean(axis=-1)
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-9)
    assert model.interaction_importances_.shape == (0,)
