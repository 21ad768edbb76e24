"""The super-sparse regressor's linear part (``linear_part``): ``f(x) = beta . s(x, c) +
w . z + b``, closed-form ridge coefficients of the similarities and the standardised
features, the columns chosen on the held-out rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

from streamlearn.data import open_dataset
from streamlearn.engine import run_chunks
from streamlearn.models.supersparse import SuperSparseRegressor
from streamlearn.solvers.supersparse import driver
from streamlearn.solvers.supersparse.passes import (
    AUTO_LAM_SLACK,
    GramPass,
    Similarity,
    TargetRows,
    column_statistics,
)
from tests.test_model_file import _rewritten
from tests.test_supersparse_linear_part import recorded_refits


def _similarities(Z: np.ndarray, C: np.ndarray, gamma: float) -> np.ndarray:
    d2 = ((Z[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def _ridge(Z: np.ndarray, t: np.ndarray, lam: float) -> np.ndarray:
    """numpy's ridge solve of ``(Z'Z / n + lam D) w = Z't / n``, ``D`` the identity but on
    the constant column (last)."""
    D = np.eye(Z.shape[1])
    D[-1, -1] = 0.0
    n = Z.shape[0]
    return np.linalg.solve(Z.T @ Z / n + lam * D, Z.T @ t / n)


#: the slopes of :func:`_wave_and_slope`'s target
SLOPES = np.random.default_rng(100).normal(size=10)


def _wave_and_slope(n: int, seed: int, wave: float) -> tuple[np.ndarray, np.ndarray]:
    """A target mostly linear in ten features, plus ``wave`` times a wave along one."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10)).astype(np.float32)
    y = X @ SLOPES + wave * np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)
    return X, y.astype(np.float32)


def test_gram_pass_with_linear_columns_is_numpys_on_dense_and_csr_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.4] = 0.0
    y = rng.normal(size=200).astype(np.float32).astype(np.float64)
    v = rng.uniform(0.5, 1.5, size=200).astype(np.float32)
    C = rng.normal(size=(3, 4))
    Z = np.column_stack([_similarities(X.astype(np.float64), C, 0.4), X.astype(np.float64),
                         np.ones(200)])
    vd = v.astype(np.float64)
    for rows in (X, scipy.sparse.csr_matrix(X)):
        dataset = open_dataset(rows, target=y, weight=v, chunk_rows=64)
        stats = run_chunks(GramPass(TargetRows("regression"), C, Similarity(0.4), True),
                           dataset.chunks())
        np.testing.assert_allclose(stats.G, Z.T @ (vd[:, None] * Z), rtol=1e-10)
        np.testing.assert_allclose(stats.r[:, 0], Z.T @ (vd * y), rtol=1e-10)
        assert stats.yy == pytest.approx(float(vd @ y**2), rel=1e-12)
        assert stats.weight == pytest.approx(float(vd.sum()), rel=1e-12)
    # the columns of one lane: the prototypes' block and the constant
    mask = driver.column_mask("prototypes", 3, 4)
    alone = column_statistics(stats, mask)
    np.testing.assert_allclose(alone.G, (Z[:, mask]).T @ (vd[:, None] * Z[:, mask]),
                               rtol=1e-10)


def test_linear_part_true_is_numpys_ridge_on_the_explicit_columns():
    """No rows held out (a fixed lam, one n_prototypes): the prototypes and the features
    at lam, solved on every row, equal numpy's ridge solve of ``(s(z, c), z, 1)``."""
    X, y = _wave_and_slope(400, seed=1, wave=1.0)
    lam = 1e-3
    model = SuperSparseRegressor(n_prototypes=6, lam=lam, tol=1e-2, spread_tails=False,
                                 linear_part=True).fit(X, y)
    assert model.linear_part_ and model.refit_lam_ == lam
    z = (X.astype(np.float64) - model.shift_) / model.scale_
    zc = (model.prototypes_ - model.shift_) / model.scale_
    Z = np.column_stack([_similarities(z, zc, model.gamma_), z, np.ones(400)])
    w = _ridge(Z, y, lam)
    np.testing.assert_allclose(model.dual_coef_, w[:6], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.linear_coef_, w[6:-1], rtol=1e-6, atol=1e-8)
    assert model.intercept_ == pytest.approx(w[-1], rel=1e-6)
    np.testing.assert_allclose(model.predict(X), Z @ w, rtol=1e-6, atol=1e-6)
    # the squared loss's prototypes alone, as before the parameter
    off = SuperSparseRegressor(n_prototypes=6, lam=lam, tol=1e-2, spread_tails=False,
                               linear_part=False).fit(X, y)
    assert not off.linear_part_ and "linear_coef_" not in vars(off)
    np.testing.assert_allclose(off.prototypes_, model.prototypes_)
    S = Z[:, :6]
    np.testing.assert_allclose(off.dual_coef_, _ridge(np.column_stack([S, np.ones(400)]),
                                                       y, lam)[:6], rtol=1e-5, atol=1e-7)


def _first_within_slack(refit: driver.RidgeRefit) -> str:
    """The columns of the first lane (prototypes, both, linear; larger penalty first)
    within the slack of the lowest held-out loss."""
    losses = refit.losses
    assert losses.size == 2 * len(driver.REFIT_COLUMN_SETS)
    first = int(np.flatnonzero(losses <= losses.min() * (1 + AUTO_LAM_SLACK))[0])
    return driver.REFIT_COLUMN_SETS[first // 2]


def test_auto_keeps_the_features_on_a_nearly_linear_target(monkeypatch: pytest.MonkeyPatch):
    X, y = _wave_and_slope(1500, seed=2, wave=1.0)
    kept = recorded_refits(monkeypatch, "linear_ridge_refit")
    model = SuperSparseRegressor(n_prototypes=8, tol=1e-2).fit(X, y)
    refit = kept[-1]
    assert refit.lanes == _first_within_slack(refit)
    assert refit.lanes in ("both", "linear") and model.linear_part_
    # eight prototypes in ten dimensions follow the slopes worse than a plane does
    assert refit.losses[:2].min() > (1 + AUTO_LAM_SLACK) * refit.losses[2:].min()
    # the model is beta . s + w . z + b, as numpy computes it
    z = (X.astype(np.float64) - model.shift_) / model.scale_
    zc = (model.prototypes_ - model.shift_) / model.scale_
    f = (_similarities(z, zc, model.gamma_) @ model.dual_coef_ + z @ model.linear_coef_
         + model.intercept_)
    np.testing.assert_allclose(model.predict(X), f, rtol=1e-6, atol=1e-6)
    # the held-out loss of the kept model beats the prototypes' alone
    off = SuperSparseRegressor(n_prototypes=8, tol=1e-2, linear_part=False).fit(X, y)
    X_new, y_new = _wave_and_slope(2000, seed=3, wave=1.0)
    assert (np.mean((model.predict(X_new) - y_new) ** 2)
            < np.mean((off.predict(X_new) - y_new) ** 2))


def test_auto_chooses_its_lane_by_folds_without_held_out_rows(
        monkeypatch: pytest.MonkeyPatch):
    """Too few rows to hold some out (60 in the share): five folds of the rows each score
    the lanes of a fit that did not learn from them; the lane first within the slack of
    the lowest mean loss is solved on every row, as numpy solves those columns."""
    X, y = _wave_and_slope(300, seed=4, wave=1.0)
    kept = recorded_refits(monkeypatch, "linear_ridge_refit")
    model = SuperSparseRegressor(n_prototypes=6, tol=1e-2, spread_tails=False).fit(X, y)
    assert len(kept) == driver.CROSS_FIT_FOLDS + 1
    folds, final = kept[:-1], kept[-1]
    mean = np.mean([refit.losses for refit in folds], axis=0)
    chosen = _first_within_slack(driver.RidgeRefit(None, 0.0, "", mean))
    assert final.lanes == chosen and final.losses.size == 0  # solved, not chosen again
    # a plane follows this target better than six prototypes in ten dimensions
    assert chosen in ("both", "linear") and model.linear_part_
    first = int(np.flatnonzero(mean <= mean.min() * (1 + AUTO_LAM_SLACK))[0])
    assert model.refit_lam_ == pytest.approx(model.lam_ * driver.REFIT_LAM_FACTORS[first % 2])
    z = (X.astype(np.float64) - model.shift_) / model.scale_
    zc = (model.prototypes_ - model.shift_) / model.scale_
    S = _similarities(z, zc, model.gamma_)
    columns = {"both": [S, z], "linear": [z]}[chosen]
    w = _ridge(np.column_stack([*columns, np.ones(300)]), y.astype(np.float64),
               model.refit_lam_)
    np.testing.assert_allclose(model.linear_coef_, w[-11:-1], rtol=1e-5, atol=1e-7)
    assert model.intercept_ == pytest.approx(w[-1], rel=1e-6)
    np.testing.assert_allclose(model.predict(X), np.column_stack([*columns, np.ones(300)])
                               @ w, rtol=1e-5, atol=1e-5)
    # better on new rows than the prototypes alone, which the fit kept before the folds
    off = SuperSparseRegressor(n_prototypes=6, tol=1e-2, spread_tails=False,
                               linear_part=False).fit(X, y)
    X_new, y_new = _wave_and_slope(2000, seed=3, wave=1.0)
    assert (np.mean((model.predict(X_new) - y_new) ** 2)
            < 0.8 * np.mean((off.predict(X_new) - y_new) ** 2))


def test_a_given_lam_without_held_out_rows_keeps_the_prototypes(
        monkeypatch: pytest.MonkeyPatch):
    X, y = _wave_and_slope(300, seed=4, wave=1.0)
    kept = recorded_refits(monkeypatch, "linear_ridge_refit")
    model = SuperSparseRegressor(n_prototypes=6, tol=1e-2, lam=1e-3).fit(X, y)
    off = SuperSparseRegressor(n_prototypes=6, tol=1e-2, lam=1e-3, linear_part=False).fit(X, y)
    assert kept == [] and not model.linear_part_
    np.testing.assert_array_equal(model.predict(X), off.predict(X))


def test_linear_part_round_trips_and_old_files_load_without_one(tmp_path: Path):
    X, y = _wave_and_slope(1500, seed=5, wave=1.0)
    model = SuperSparseRegressor(n_prototypes=8, tol=1e-2).fit(X, y)
    assert model.linear_part_
    loaded = SuperSparseRegressor.load(model.save(tmp_path / "linear.slm"))
    assert loaded.linear_part == "auto" and loaded.linear_part_
    np.testing.assert_array_equal(loaded.linear_coef_, model.linear_coef_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # a file from before the parameter holds the model without a linear part
    old = _rewritten(tmp_path / "linear.slm", tmp_path / "old.slm",
                     lambda h: (h["metadata"]["params"].pop("linear_part"),))
    assert SuperSparseRegressor.load(old).linear_part is False
    # partial_fit re-solves the squared loss on the prototypes: the linear part goes
    again = loaded.partial_fit(X[:300], y[:300])
    assert not again.linear_part_ and "linear_coef_" not in vars(again)
