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


def _side_steps(score, points: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Mean absolute change of ``score`` (one output) per standardised unit when each row
    of ``points`` steps across each feature's mean by the distance between the means of
    the values on either side, restated with the model's own score at moved rows."""
    Z = points / scale
    out = np.empty(points.shape[1])
    for f in range(points.shape[1]):
        below = Z[:, f] < Z[:, f].mean()
        h = Z[~below, f].mean() - Z[below, f].mean()
        moved = points.copy()
        moved[:, f] += np.where(below, h, -h) * scale[f]
        out[f] = np.abs(score(moved) - score(points)).mean() / h
    return out


def test_supersparse_importances_are_the_mean_step_over_the_rows() -> None:
    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[:, 5] *= 500.0
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1.4).astype(int)
    model = SuperSparseClassifier(random_state=0).fit(X, y)
    importances = model.feature_importances_
    assert set(np.argsort(-importances)[:2]) == {0, 1}
    assert importances.sum() == pytest.approx(1.0)
    # the steps restated with decision_function at moved rows, over the training rows
    # (3,000: the spread pass's sample holds them all; its shift and scale the rows',
    # the standard deviation scale_ times the feature's relevance weight)
    points = X.astype(np.float64)
    std = model.scale_ * model.feature_weights_
    expected = _side_steps(model.decision_function, points, std)
    np.testing.assert_allclose(importances, expected / expected.sum(), rtol=1e-3, atol=1e-5)
    # a model without the rows' steps (one saved before them) takes the prototypes'
    del model.feature_slopes_
    expected = _side_steps(model.decision_function, np.asarray(model.prototypes_), std)
    np.testing.assert_allclose(model.feature_importances_, expected / expected.sum(),
                               rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("regressor", [False, True])
def test_supersparse_importances_see_a_feature_of_two_values(regressor) -> None:
    """A 0/1 feature the score turns on: prototypes settle on its 0 and 1, so the score
    is flat in it at every row (a slope there rated it about 0, below a noise feature);
    the step to its other value ranks the features as permuting them does."""
    from sklearn.inspection import permutation_importance

    from streamlearn.models import SuperSparseClassifier, SuperSparseRegressor

    rng = np.random.default_rng(2)
    n = 600
    X = np.c_[rng.normal(size=n), rng.integers(0, 2, n), rng.normal(size=n),
              rng.normal(size=n)]  # x2 is noise, x3 weaker than x0 and x1
    signal = np.sin(2 * X[:, 0]) + 1.5 * X[:, 1] + 0.3 * X[:, 3]
    if regressor:
        y = signal + 0.1 * rng.normal(size=n)
        model = SuperSparseRegressor(random_state=0).fit(X, y)
    else:
        y = (signal - 0.75 + 0.2 * rng.normal(size=n) > 0).astype(int)
        model = SuperSparseClassifier(random_state=0).fit(X, y)
    importances = model.feature_importances_
    assert importances[1] > 3 * importances[2]
    permuted = permutation_importance(model, X, y, n_repeats=3,
                                      random_state=0).importances_mean
    # every pair that permuting tells apart (x0 and x1 are within 15% of each other)
    for i in range(4):
        for j in range(4):
            if permuted[i] > 1.5 * permuted[j]:
                assert importances[i] > importances[j], (i, j, importances, permuted)


def test_mean_abs_steps_matches_the_similarities_after_the_step() -> None:
    """The separated factors against the similarities of the moved rows themselves, for
    several outputs, a constant feature (0) and a width whose factors would leave double
    precision (the direct path)."""
    from streamlearn.solvers.supersparse.passes import mean_abs_steps

    rng = np.random.default_rng(5)
    Z = rng.normal(size=(40, 4)).astype(np.float32)
    Z[:, 2] = rng.integers(0, 2, 40)
    Z[:, 3] = 0.5
    C = rng.normal(size=(7, 4))
    beta = rng.normal(size=(7, 3))

    def score(rows: np.ndarray, gamma: float) -> np.ndarray:
        sq = ((rows[:, None, :] - C[None, :, :]) ** 2).sum(axis=-1)
        return np.exp(-gamma * sq) @ beta

    Z64 = Z.astype(np.float64)
    for gamma in (0.7, 400.0):
        expected = np.zeros(4)
        for f in range(3):
            below = Z64[:, f] < Z64[:, f].mean()
            h = Z64[~below, f].mean() - Z64[below, f].mean()
            moved = Z64.copy()
            moved[:, f] += np.where(below, h, -h)
            expected[f] = np.abs(score(moved, gamma) - score(Z64, gamma)).mean() / h
        np.testing.assert_allclose(mean_abs_steps(Z, C, beta, gamma), expected,
                                   rtol=1e-9, atol=1e-300)


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
