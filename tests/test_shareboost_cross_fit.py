"""``ShareBoostClassifier`` on fewer than 2,000 rows: five folds of the row hash choose the
rounds, the penalty and the family (``driver.cross_fit``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from streamlearn import ShareBoostClassifier
from streamlearn.solvers.holdout import MIN_VALIDATION_ROWS, Holdout
from streamlearn.solvers.row_sample import row_keys
from streamlearn.solvers.shareboost.driver import (
    CROSS_FIT_FOLDS,
    RARE_CROSS_FIT_ROWS,
    VALIDATION_SALT,
    ShareBoostConfig,
    cross_fit_folds,
)


def _problem(n: int, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    score = X[:, 0] + np.abs(X[:, 1]) - 0.8 + 0.5 * rng.normal(size=n)
    y = np.digitize(score, [-0.5, 0.5])  # three classes
    return X, y


def _config(n_rounds: int | str = "auto", fraction: float | None = 0.1,
            shares: tuple[float, ...] | None = None) -> ShareBoostConfig:
    return ShareBoostConfig(n_rounds=n_rounds, features="linear", l2="auto", refit_iter=10,
                            n_bins=32, n_centres=8, n_radii=4, max_coverage=0.6, tol=1e-3,
                            validation_fraction=fraction, class_shares=shares)


def test_folds_partition_the_rows_by_their_key() -> None:
    folds = Holdout.folds(CROSS_FIT_FOLDS, 12345)
    rows = np.arange(20_000)
    masks = np.array([fold.mask(rows) for fold in folds])
    np.testing.assert_array_equal(masks.sum(axis=0), 1)  # every row held out once
    # fold j: the keys in [j / 5, (j + 1) / 5) of their range, by integer arithmetic
    keys = row_keys(rows.astype(np.int64), 12345)
    expected = np.array([(int(key) * CROSS_FIT_FOLDS) >> 64 for key in keys])
    np.testing.assert_array_equal(np.argmax(masks, axis=0), expected)
    # each about a fifth (binomial standard deviation 57 rows)
    assert np.all(np.abs(masks.sum(axis=1) - 4_000) < 300)
    assert [fold.count(20_000) for fold in folds] == list(masks.sum(axis=1))
    # no lower bound: the one held-out share as before
    below = [int(k) < int(0.1 * 2.0**64) for k in row_keys(rows.astype(np.int64), 7)]
    np.testing.assert_array_equal(Holdout.fraction(0.1, 7).mask(rows), below)


def test_cross_fitting_rule_between_the_fallback_and_one_held_out_share() -> None:
    assert cross_fit_folds(_config(), 1_999, 0) is not None  # 199.9 rows in the share
    assert cross_fit_folds(_config(), 2_000, 0) is None  # 200: one held-out share
    assert cross_fit_folds(_config(), MIN_VALIDATION_ROWS, 0) is not None
    assert cross_fit_folds(_config(), MIN_VALIDATION_ROWS - 1, 0) is None  # too few rows
    assert cross_fit_folds(_config(n_rounds=30), 1_000, 0) is None
    assert cross_fit_folds(_config(fraction=None), 1_000, 0) is None
    assert cross_fit_folds(_config(fraction=0.25), 799, 0) is not None
    assert cross_fit_folds(_config(fraction=0.25), 800, 0) is None
    # 50 rows outside the largest class among all rows, as among the held-out ones
    assert cross_fit_folds(_config(shares=(950.0, 50.0)), 1_000, 0) is not None
    assert cross_fit_folds(_config(shares=(951.0, 49.0)), 1_000, 0) is None
    folds = cross_fit_folds(_config(), 1_000, 3)
    assert folds == Holdout.folds(CROSS_FIT_FOLDS, 3 ^ VALIDATION_SALT)
    # a share of enough rows but fewer than 50 outside the largest class: cross-fitted
    # while all the rows hold 50 and are at most RARE_CROSS_FIT_ROWS
    n = 10_000
    assert cross_fit_folds(_config(shares=(n - 499.0, 499.0)), n, 0) is not None  # 49.9
    assert cross_fit_folds(_config(shares=(n - 500.0, 500.0)), n, 0) is None  # 50: one share
    assert cross_fit_folds(_config(shares=(n - 50.0, 50.0)), n, 0) is not None
    assert cross_fit_folds(_config(shares=(n - 49.0, 49.0)), n, 0) is None  # 50 rounds
    big = RARE_CROSS_FIT_ROWS
    assert cross_fit_folds(_config(shares=(big - 100.0, 100.0)), big, 0) is not None
    assert cross_fit_folds(_config(shares=(big - 100.0, 100.0)), big + 1, 0) is None


def _eq3_loss(model: ShareBoostClassifier, X: np.ndarray, y: np.ndarray) -> float:
    """The mean of eq. 3, ``log sum_c exp(1[c != y] - s_y + s_c)``, by scikit-learn's
    log-loss of the soft-max of the scores with 1 added off the label."""
    scores = model.decision_function(X)
    if scores.ndim == 1:
        scores = np.column_stack([np.zeros_like(scores), scores])
    codes = np.searchsorted(model.classes_, y)
    shifted = scores + (np.arange(scores.shape[1]) != codes[:, None])
    p = np.exp(shifted - shifted.max(axis=1, keepdims=True))
    return float(log_loss(codes, p / p.sum(axis=1, keepdims=True),
                          labels=np.arange(scores.shape[1])))


@pytest.mark.parametrize("features", ["linear", "stumps"])
def test_cross_fitted_rounds_are_those_of_fits_on_each_fold_by_hand(features: str) -> None:
    """Each fold's curve is that of a fit with a number of rounds on the fold's other rows
    (at the same penalty; four features keep linear columns one a round), its held-out
    loss that of scikit-learn; the kept round is the lowest of their weighted sum, and the
    model's columns those of that many rounds on every row."""
    X, y = _problem(400)
    l2 = 1e-3
    model = ShareBoostClassifier(features=features, l2=l2, spread_tails=False,
                                 progress=False).fit(X, y)
    v = model.validation_
    assert v is not None and v["cross_fitted"] and v["n_folds"] == CROSS_FIT_FOLDS
    assert model.proba_rows_ == "cross-fitted" and model.l2_ == l2
    folds = Holdout.folds(CROSS_FIT_FOLDS, 0 ^ VALIDATION_SALT)
    rows = np.arange(X.shape[0])
    held = [fold.mask(rows) for fold in folds]
    np.testing.assert_array_equal(v["folds_held_out_weight"], [h.sum() for h in held])
    assert v["held_out_weight"] == X.shape[0]
    curves = []
    for h, fold_curve in zip(held, v["folds_held_out_loss"], strict=True):
        losses: list[float] = []
        with warnings.catch_warnings(record=True):  # the fold's rounds stop at refit_iter
            # L-BFGS iterations as these do; the warning is about the last one's
            ShareBoostClassifier(n_rounds=len(fold_curve) - 1, features=features, l2=l2,
                                 spread_tails=False, progress=False).fit(
                X[~h], y[~h],
                callback=lambda t, m, h=h, out=losses: out.append(_eq3_loss(m, X[h], y[h])))
        np.testing.assert_allclose(fold_curve, losses, rtol=1e-6)
        curves.append(losses)
    last = len(v["held_out_loss"]) - 1
    assert last >= min(len(c) for c in curves) - 1
    # a fold that ran out of candidates keeps its last model
    weights = np.array([h.sum() for h in held], dtype=np.float64)
    table = np.array([[c[min(t, len(c) - 1)] for t in range(last + 1)] for c in curves])
    summed = weights @ table / weights.sum()
    np.testing.assert_allclose(v["held_out_loss"], summed, rtol=1e-6)
    assert v["best_round"] == int(np.argmin(summed))
    with warnings.catch_warnings(record=True):  # its last round's step, not polished
        every = ShareBoostClassifier(n_rounds=v["best_round"], features=features, l2=l2,
                                     spread_tails=False, progress=False).fit(X, y)
    np.testing.assert_array_equal(model.selected_features_, every.selected_features_)
    np.testing.assert_allclose(model.path_["loss"], every.path_["loss"], rtol=1e-9)


def test_auto_penalty_and_family_are_the_lowest_summed_held_out_loss() -> None:
    X, y = _problem(300, d=3)
    auto = ShareBoostClassifier(n_centres=16, progress=False).fit(X, y)
    assert set(auto.families_held_out_loss_) == {"linear", "stumps", "anchors"}
    losses = {}
    for family in ("linear", "stumps", "anchors"):
        model = ShareBoostClassifier(features=family, n_centres=16, progress=False).fit(X, y)
        v = model.validation_
        assert v["cross_fitted"]
        # the lanes: the folds' losses at each multiple of l2_0, weighted by their rows
        lanes = (np.asarray(v["folds_held_out_weight"])
                 @ np.asarray(v["folds_l2_held_out_loss"]) / v["held_out_weight"])
        np.testing.assert_allclose(v["l2_held_out_loss"], lanes, rtol=1e-12)
        chosen = int(np.argmin(lanes))
        assert model.l2_ == v["l2_candidates"][chosen]
        assert v["l2_candidates"][1] == pytest.approx(v["l2_candidates"][0] / 100, rel=1e-12)
        losses[family] = float(lanes[chosen])
    assert auto.families_held_out_loss_ == pytest.approx(losses, rel=1e-12)
    assert auto.features_ == min(losses, key=losses.get)


def test_anchors_are_chosen_where_they_beat_linear_columns() -> None:
    """A diagonal band on 300 rows: linear columns (all that fewer than 2,000 rows got
    before) are near chance, stumps cut it in steps, cross-fitting keeps anchors."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2)).astype(np.float32)
    y = (np.abs(X[:, 0] + X[:, 1]) < 1.0).astype(int)
    train, test = slice(0, 300), slice(300, None)
    model = ShareBoostClassifier(n_centres=32, progress=False).fit(X[train], y[train])
    assert model.validation_["cross_fitted"] and model.features_ == "anchors"
    losses = model.families_held_out_loss_
    assert losses["anchors"] < 0.5 * min(losses["linear"], losses["stumps"])
    reference = LogisticRegression().fit(X[train], y[train]).score(X[test], y[test])
    assert reference < 0.65
    assert model.score(X[test], y[test]) > 0.9


def test_two_thousand_rows_keep_one_held_out_share() -> None:
    """From 200 rows expected in the share on, the fit is the one of before: one held-out
    share by the row hash, no folds (the model of 1,999 rows is cross-fitted)."""
    X, y = _problem(2_000)
    model = ShareBoostClassifier(features="linear", progress=False).fit(X, y)
    v = model.validation_
    assert not v["cross_fitted"] and "folds_held_out_loss" not in v
    share = Holdout.for_choosing(0.1, 2_000, 0 ^ VALIDATION_SALT)
    assert v["held_out_weight"] == share.count(2_000)
    assert model.proba_rows_ == "held-out"
    fewer = ShareBoostClassifier(features="linear", progress=False).fit(X[:1_999], y[:1_999])
    assert fewer.validation_["cross_fitted"] and fewer.validation_["held_out_weight"] == 1_999


def test_a_rare_class_too_few_in_the_share_is_cross_fitted() -> None:
    """Two classes of 3 % in 4,000 rows: the share held about 13 of the rare class, too few
    to choose by, and 50 rounds of linear columns predicted the majority everywhere.
    Cross-fitted, every rare row is held out once and the family is chosen."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(8000, 10, n_informative=6, weights=[0.97], flip_y=0.005,
                               random_state=7)
    X = X.astype(np.float32)
    train, test = slice(0, 4000), slice(4000, None)
    model = ShareBoostClassifier(progress=False).fit(X[train], y[train])
    assert model.validation_["cross_fitted"]
    assert set(model.families_held_out_loss_) == {"linear", "stumps", "anchors"}
    majority = 1.0 - y[test].mean()
    assert model.score(X[test], y[test]) > majority + 0.002
    auc = roc_auc_score(y[test], model.predict_proba(X[test])[:, 1])
    reference = roc_auc_score(y[test], LogisticRegression().fit(X[train], y[train])
                              .predict_proba(X[test])[:, 1])
    assert auc > reference + 0.05
