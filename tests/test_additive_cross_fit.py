"""``AdditiveSVC`` on 200 to 2,000 rows: five folds of the row hash choose the pairs, the
bases, the linear model and the scheme (``driver.cross_fit_folds``), then the model kept
is trained on every row.

The references: the folds against the row keys by integer arithmetic, each fold's
held-out loss against scikit-learn's ``log_loss`` of that fold's model on the fold's rows,
the choice against the rule applied to their weighted means, and the planted structure.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss

from streamlearn import AdditiveSVC, open_dataset
from streamlearn.features import BSplinePairMap
from streamlearn.io import load_model
from streamlearn.models.additive import MAX_CALIBRATION_SHARE
from streamlearn.solvers.additive import HOLDOUT_SALT, AdditiveConfig, Holdout, driver
from streamlearn.solvers.additive.driver import (
    CROSS_FIT_FOLDS,
    CROSS_FIT_WORK,
    MIN_CROSS_FIT_OTHERS,
    cross_fit_folds,
    pairs_pay,
)
from streamlearn.solvers.calibration import MIN_CALIBRATION_ROWS
from streamlearn.solvers.row_sample import row_keys
from tests.dying_engine import DyingEngine, Interrupted


def _config(share: float | None = 0.1, shares: tuple[float, ...] | None = (1.0, 1.0),
            compares: bool = True) -> AdditiveConfig:
    return AdditiveConfig(feature_map=None, feature_range=None, solver="pegasos",
                          multiclass="ovr", C=1.0, lam=None, loss="hinge", epochs=5,
                          tol=None, average=False, online=False, calibration_fraction=None,
                          bias_scale=1.0, check_interactions=compares,
                          interactions=2 if compares else 0,
                          cross_fit_share=share, class_shares=shares)


def test_folds_hold_out_each_row_once_by_its_key() -> None:
    folds = cross_fit_folds(_config(), 1_000, 4, 2, 7)
    assert len(folds) == CROSS_FIT_FOLDS
    rows = np.arange(30_000)
    masks = np.array([fold.mask(rows) for fold in folds])
    np.testing.assert_array_equal(masks.sum(axis=0), 1)
    # fold j: the keys of the calibration rows' hash in [j / 5, (j + 1) / 5) of their range
    keys = row_keys(rows.astype(np.int64), 7 ^ HOLDOUT_SALT)
    expected = np.array([(int(k) * CROSS_FIT_FOLDS) >> 64 for k in keys])
    np.testing.assert_array_equal(np.argmax(masks, axis=0), expected)
    # the held-out share of the same seed lies in the first fold
    share = Holdout.fraction(0.1, 7 ^ HOLDOUT_SALT).mask(rows)
    assert np.all(masks[0][share])


def test_rule_between_too_few_rows_and_one_held_out_share() -> None:
    assert cross_fit_folds(_config(), 1_999, 4, 2, 0)  # 199.9 rows in the share
    assert not cross_fit_folds(_config(), 2_000, 4, 2, 0)  # 200: the share chooses
    assert cross_fit_folds(_config(), 200, 4, 2, 0)
    assert not cross_fit_folds(_config(), 199, 4, 2, 0)
    assert cross_fit_folds(_config(share=0.25), 799, 4, 2, 0)
    assert not cross_fit_folds(_config(share=0.25), 800, 4, 2, 0)
    assert not cross_fit_folds(_config(share=None), 1_000, 4, 2, 0)  # no calibration
    assert not cross_fit_folds(_config(compares=False), 1_000, 4, 2, 0)  # nothing to choose
    # rows outside the largest class
    n = 1_000
    assert cross_fit_folds(_config(shares=(n - MIN_CROSS_FIT_OTHERS, MIN_CROSS_FIT_OTHERS)),
                           n, 4, 2, 0)
    assert not cross_fit_folds(_config(shares=(n - MIN_CROSS_FIT_OTHERS + 1,
                                               MIN_CROSS_FIT_OTHERS - 1)), n, 4, 2, 0)
    # the work bound: rows x (features + 1) x one-vs-rest models
    d = CROSS_FIT_WORK // (n * 10) - 1
    assert cross_fit_folds(_config(shares=(1.0,) * 10), n, d, 10, 0)
    assert not cross_fit_folds(_config(shares=(1.0,) * 10), n, d + 1, 10, 0)
    assert cross_fit_folds(_config(), n, CROSS_FIT_WORK // n - 1, 2, 0)  # one model
    assert not cross_fit_folds(_config(), n, CROSS_FIT_WORK // n, 2, 0)


def test_many_classes_raise_the_held_out_share_to_twenty_rows_a_class() -> None:
    """Where ``calibration_fraction`` of the rows holds MIN_CHECK_ROWS rows but not 20 of
    each class (many classes), ``fit`` holds out the share that holds 20 a class, up to
    MAX_CALIBRATION_SHARE, and those rows choose the bases and pairs; where even that
    bound cannot, or the share holds fewer than MIN_CHECK_ROWS rows (few rows: the folds'
    regime above), nothing is held out, as before."""
    def share(n_rows: int, n_classes: int) -> float | None:
        y = np.arange(n_rows) % n_classes
        dataset = open_dataset(np.zeros((n_rows, 2), dtype=np.float32), target=y)
        return AdditiveSVC()._calibration_share(dataset)

    assert share(3_000, 2) == 0.1
    assert share(3_000, 20) == pytest.approx(2 * MIN_CALIBRATION_ROWS * 20 / 3_000)
    assert 2 * MIN_CALIBRATION_ROWS * 50 > MAX_CALIBRATION_SHARE * 2_100
    assert share(2_100, 50) is None  # 210 rows in the share, 1,000 wanted: over a quarter
    assert share(1_900, 20) is None  # 190 rows: fewer than MIN_CHECK_ROWS
    X, y = make_classification(3_000, 8, n_informative=6, n_redundant=0, n_classes=20,
                               n_clusters_per_class=1, random_state=0)
    model = AdditiveSVC(progress=False).fit(X, y)
    assert 330 <= model.n_calibration_ <= 470  # 400 expected, by the rows' hash
    assert model.n_train_ + model.n_calibration_ == 3_000
    assert all(loss is not None for _, loss in model.bases_tried_)
    assert "reason" not in model.interaction_check_


def _planted(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_planted_pair_is_kept_by_the_folds_losses(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """Each fold's model is trained without its rows (pairs screened on them too), its
    held-out loss is scikit-learn's log-loss of its probabilities on the fold's rows, and
    the pairs are kept by :func:`pairs_pay` of the losses' weighted means."""
    X, y = _planted(600)
    calls: list[tuple[object, object]] = []
    inner = driver._fit_terms_on

    def spy(*args, **kwargs):
        out = inner(*args, **kwargs)
        calls.append((args[-1], out[0]))
        return out

    monkeypatch.setattr(driver, "_fit_terms_on", spy)
    summed: list[object] = []
    crossed = driver._cross_fitted_terms

    def spy_summed(*args, **kwargs):
        out = crossed(*args, **kwargs)
        summed.append(out[0])
        return out

    monkeypatch.setattr(driver, "_cross_fitted_terms", spy_summed)
    model = AdditiveSVC(n_bases=8, pair_bases=8, progress=False).fit(X, y)
    check = model.interaction_check_
    assert model.cross_fit_["n_folds"] == CROSS_FIT_FOLDS and check["cross_fitted"]
    assert check["kept"] and model.interactions_[0] == ("x0", "x1")
    assert model.n_calibration_ == 0 and model.n_train_ == 600 and not model.calibrated_
    folds = Holdout.folds(CROSS_FIT_FOLDS, 0 ^ HOLDOUT_SALT)
    held = [fold.mask(np.arange(600)) for fold in folds]
    # the trainings: the five folds of each model compared, every row for the
    # per-feature model (its residuals screen the pairs) and for the model kept
    fold_calls = [fit for holdout, fit in calls if holdout is not None]
    assert [h for h, _ in calls if h is not None] == folds * len(summed)
    assert [h for h, _ in calls[:CROSS_FIT_FOLDS + 1]] == [*folds, None]
    assert sum(h is None for h, _ in calls) == 2  # the per-feature model was not kept
    groups = [fold_calls[i:i + CROSS_FIT_FOLDS]
              for i in range(0, len(fold_calls), CROSS_FIT_FOLDS)]
    weights = np.array([h.sum() for h in held], dtype=np.float64)
    means = []
    for group in groups[:2]:  # the per-feature model, then the screened pairs
        losses = []
        for fit, h in zip(group, held, strict=True):
            assert fit.n_train == int((~h).sum()) and fit.n_calibration == int(h.sum())
            fold_model = copy.deepcopy(model)
            fold_model._set_fitted(fit)
            losses.append(log_loss(y[h], fold_model.predict_proba(X[h])[:, 1]))
        np.testing.assert_allclose([fit.held_out_log_loss for fit in group], losses,
                                   rtol=2e-3)
        means.append(float(weights @ np.array(losses) / weights.sum()))
    np.testing.assert_allclose([fit.held_out_log_loss for fit in summed[:2]], means,
                               rtol=2e-3)
    assert check["held_out_log_loss_without"] == summed[0].held_out_log_loss
    assert check["held_out_log_loss_with"] in [fit.held_out_log_loss for fit in summed[1:]]
    # each fold screened its own rows: the planted pair leads every fold's ranking
    for fit in groups[1]:
        assert isinstance(fit.feature_map, BSplinePairMap)
        assert tuple(fit.feature_map.interactions[0]) == (0, 1)
    pair_map = summed[1].feature_map
    assert pairs_pay(means[0], means[1], pair_map, 4)
    assert means[1] < 0.8 * means[0]
    # the model file keeps what the folds said
    loaded = load_model(model.save(tmp_path / "crossfit.slm"))
    assert loaded.cross_fit_ == model.cross_fit_
    assert loaded.interaction_check_ == model.interaction_check_
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_a_linear_rule_keeps_the_linear_model() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1_000, 10)).astype(np.float32)
    y = (X @ rng.normal(size=10) + 1.5 * rng.normal(size=1_000) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no training at its cap
        model = AdditiveSVC(progress=False).fit(X[:700], y[:700])
    check = model.linear_check_
    assert check["cross_fitted"] and check["kept"] and model.feature_map_ is None
    assert check["linear"] < check["curves"]
    assert all(np.isfinite(loss) for _, loss in model.bases_tried_)
    assert model.score(X[700:], y[700:]) > 0.8


def test_two_thousand_and_fewer_than_two_hundred_rows_choose_as_before() -> None:
    X, y = _planted(2_000, seed=1)
    model = AdditiveSVC(n_bases=8, pair_bases=8, progress=False).fit(X, y)
    assert not hasattr(model, "cross_fit_")
    assert "cross_fitted" not in model.interaction_check_
    share = Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT)
    assert model.n_calibration_ == share.count(2_000) and model.calibrated_
    small = AdditiveSVC(n_bases=8, pair_bases=8, progress=False).fit(X[:199], y[:199])
    assert not hasattr(small, "cross_fit_")
    assert small.interaction_check_ == {"kept": False, "reason": (
        "0 held-out rows, fewer than 200 to check pairs on")}
    assert small.n_calibration_ == 0 and small.interactions_ == ()


def test_the_config_without_shares_is_not_cross_fitted() -> None:
    config = replace(_config(), class_shares=None)
    assert cross_fit_folds(config, 1_000, 4, 2, 0) == ()


def test_rows_of_weight_zero_do_not_count_toward_the_rule() -> None:
    X, y = _planted(250)
    junk = np.full((150, 4), 3.0, dtype=np.float32)
    weight = np.r_[np.ones(199), np.zeros(150)]
    XA, yA = np.r_[X[:199], junk], np.r_[y[:199], np.zeros(150, dtype=int)]
    kw = dict(n_bases=8, pair_bases=8, progress=False)
    model = AdditiveSVC(**kw).fit(XA, yA, sample_weight=weight)
    assert not hasattr(model, "cross_fit_") and model.n_train_ == 199
    # 200 rows of weight 1 among them: the folds choose
    weight[199 - 1] = weight[-1] = 1.0
    XB = np.r_[XA[:-1], X[199:200]]
    assert AdditiveSVC(**kw).fit(XB, yA, sample_weight=weight).cross_fit_["n_folds"] == 5


def test_a_killed_cross_fitted_fit_resumes_to_the_same_model(tmp_path: Path) -> None:
    """Killed among the folds' trainings, a fit resumed from its checkpoint makes the
    same choices and the same model as one run through."""
    X, y = _planted(300, seed=2)
    params = dict(n_bases=8, pair_bases=8, epochs=3, tol=None, chunk_rows=100,
                  progress=False)
    whole = AdditiveSVC(**params).fit(X, y)
    checkpoint = tmp_path / "ckpt"
    with pytest.raises(Interrupted):  # the per-feature model's folds are 5 x 3 epochs
        AdditiveSVC(**params).fit(X, y, engine=DyingEngine(40, chunk_rows=100),
                                  checkpoint=checkpoint, checkpoint_every=1)
    engine = DyingEngine(10**9, progress=False, chunk_rows=100)
    resumed = AdditiveSVC(**params).fit(X, y, engine=engine, checkpoint=checkpoint,
                                        checkpoint_every=1)
    assert engine.passes.rows_read < whole.n_passes_ * X.shape[0]  # it read only the rest
    assert resumed.interaction_check_ == whole.interaction_check_
    assert resumed.cross_fit_ == whole.cross_fit_
    np.testing.assert_array_equal(resumed.coef_d_, whole.coef_d_)
