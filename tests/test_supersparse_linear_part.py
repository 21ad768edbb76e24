"""The super-sparse classifier's linear part (``linear_part``): ``f(x) = beta . s(x, c) +
w . z + b``, ``w`` fitted by the squared-hinge refit as columns beside the similarities."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import minimize

from streamlearn.data import open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine import LocalEngine, run_chunks
from streamlearn.models.supersparse import SuperSparseClassifier
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.supersparse import driver
from streamlearn.solvers.supersparse.passes import (
    AUTO_LAM_SLACK,
    HingeGramPass,
    Similarity,
    TargetRows,
    ValidationPass,
    design_columns,
    linear_scores,
    mean_abs_steps,
)
from tests.test_model_file import _rewritten


def _similarities(X: np.ndarray, C: np.ndarray, gamma: float) -> np.ndarray:
    d2 = ((X.astype(np.float64)[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def _ring_and_slope(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three features: a ring in the first two, and a label that also rises with the
    third (a boundary neither the ring's prototypes nor a plane draws alone)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    score = np.hypot(X[:, 0], X[:, 1]) - 1.1 + 0.8 * X[:, 2] + 0.3 * rng.normal(size=n)
    return X, (score > 0).astype(np.int64)


def _linear_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    return X, (X @ rng.normal(size=6) + 0.3 * rng.normal(size=n) > 0).astype(np.int64)


def test_design_columns_and_linear_scores_of_dense_and_csr_rows_are_numpys():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0.0
    S = rng.random((7, 3))
    W = rng.normal(size=(4, 2))
    csr = SparseRows.from_scipy(scipy.sparse.csr_matrix(X))
    expected = np.column_stack([S, X.astype(np.float64), np.ones(7)])
    for rows in (X, csr):
        np.testing.assert_array_equal(design_columns(S, rows, True), expected)
        np.testing.assert_allclose(linear_scores(rows, W), X.astype(np.float64) @ W,
                                   rtol=1e-12)
    np.testing.assert_array_equal(design_columns(S, X, False),
                                  np.column_stack([S, np.ones(7)]))


def test_hinge_gram_pass_with_linear_columns_sums_the_active_rows_as_numpy_does():
    X, y = _ring_and_slope(300, seed=1)
    rng = np.random.default_rng(2)
    C = rng.normal(size=(4, 3))
    W = rng.normal(scale=0.3, size=(2, 4 + 3 + 1, 1))
    dataset = open_dataset(X, target=y, chunk_rows=64)
    stats = run_chunks(HingeGramPass(TargetRows("classification"), C, Similarity(0.5), W,
                                     linear=True), dataset.chunks())
    Z = np.column_stack([_similarities(X, C, 0.5), X.astype(np.float64), np.ones(300)])
    t = 2.0 * y - 1.0
    for lane in range(2):
        slack = 1.0 - t * (Z @ W[lane, :, 0])
        active = slack > 0
        np.testing.assert_allclose(stats.G[lane, 0], Z[active].T @ Z[active], rtol=1e-10)
        np.testing.assert_allclose(stats.r[lane, 0], Z[active].T @ t[active], rtol=1e-10)
        assert stats.loss[lane, 0] == pytest.approx(float(np.sum(slack[active] ** 2)),
                                                     rel=1e-10)
    with pytest.raises(ValueError, match="outputs"):  # coefficients of the prototypes only
        HingeGramPass(TargetRows("classification"), C, Similarity(0.5), W[:, :5], linear=True)


def test_newton_refit_on_each_column_set_minimises_the_objective_as_scipy_does():
    """Lanes of the prototypes alone, with the linear part, and the linear part alone,
    in the same passes: each is the minimum of the squared hinge over its own columns
    (the others held at 0), found by scipy on the explicit columns at the same penalty."""
    X, y = _ring_and_slope(500, seed=3)
    v = np.random.default_rng(4).uniform(0.5, 1.5, size=500).astype(np.float32)
    C = np.array([[0.0, 0.0, 0.0], [1.5, 0.0, 0.0], [-1.5, 0.0, 0.0], [0.0, 1.5, 0.0],
                  [0.0, -1.5, 0.0]])
    p, d = C.shape
    dataset = open_dataset(X, target=y, weight=v, chunk_rows=128)
    Z = np.column_stack([_similarities(X, C, 0.5), X.astype(np.float64), np.ones(500)])
    t = 2.0 * y - 1.0
    V = float(v.sum(dtype=np.float64))
    w_squared = np.linalg.lstsq(Z[:, [*range(p), p + d]] * np.sqrt(v)[:, None],
                                t * np.sqrt(v), rcond=None)[0]
    sets = ("prototypes", "both", "linear")
    lams = [1e-3, 1e-3, 1e-2]
    free = np.array([driver.column_mask(s, p, d) for s in sets])
    start = np.array([driver.lane_start(w_squared, s, p, d) for s in sets])
    fit = driver.hinge_newton(LocalEngine(progress=False), dataset,
                              TargetRows("classification"), C, Similarity(0.5), start, lams,
                              tol=1e-12, linear=True, free=free)
    assert not fit.capped
    for lane, lam in enumerate(lams):
        cols = np.flatnonzero(free[lane])

        def objective(u: np.ndarray, lam: float = lam, cols: np.ndarray = cols
                      ) -> tuple[float, np.ndarray]:
            Zc = Z[:, cols]
            slack = np.maximum(1.0 - t * (Zc @ u), 0.0)
            penalty = np.append(u[:-1], 0.0)
            value = float(v @ slack**2) / V + lam * float(penalty @ penalty)
            grad = -2.0 * Zc.T @ (v * slack * t) / V + 2.0 * lam * penalty
            return value, grad

        ref = minimize(objective, start[lane, cols, 0], jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
        assert fit.objective[lane, 0] == pytest.approx(ref.fun, rel=1e-7)
        np.testing.assert_allclose(fit.W[lane, cols, 0], ref.x, rtol=1e-3, atol=1e-4)
        np.testing.assert_array_equal(fit.W[lane, ~free[lane], 0], 0.0)
    # the linear part lowers the objective the prototypes reach alone at the same penalty
    assert fit.objective[1, 0] < fit.objective[0, 0]


def test_auto_keeps_the_linear_part_alone_on_a_linear_problem(monkeypatch: pytest.MonkeyPatch):
    X, y = _linear_rows(2000, seed=5)
    kept = recorded_refits(monkeypatch, "hinge_refit")
    model = SuperSparseClassifier(n_prototypes=8, tol=1e-2).fit(X, y)
    assert model.linear_part_ and kept[-1].lanes == "linear"
    _follows_the_stated_rule(kept[-1])
    np.testing.assert_array_equal(model.dual_coef_, 0.0)  # beta = 0 in that lane
    # the decision is the plane on the standardised features, as numpy computes it
    z = (X.astype(np.float64) - model.shift_) / model.scale_
    np.testing.assert_allclose(model.decision_function(X),
                               z @ model.linear_coef_ + model.intercept_, rtol=1e-9,
                               atol=1e-9)
    off = SuperSparseClassifier(n_prototypes=8, tol=1e-2, linear_part=False).fit(X, y)
    assert not off.linear_part_ and "linear_coef_" not in vars(off)


def test_auto_chooses_by_its_stated_rule_on_a_ring(monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2000, 2)).astype(np.float32)
    y = (np.hypot(X[:, 0], X[:, 1]) + 0.2 * rng.normal(size=2000) > 1.1).astype(np.int64)
    kept = recorded_refits(monkeypatch, "hinge_refit")
    model = SuperSparseClassifier(n_prototypes=12, tol=1e-2).fit(X, y)
    refit = kept[-1]
    _follows_the_stated_rule(refit)
    assert model.linear_part_ == (refit.lanes != "prototypes")
    # a plane cannot draw a ring: the linear part alone is far behind the prototypes
    losses = refit.held_out[1:]
    assert losses[4:].min() > 2 * losses[:2].min()


def recorded_refits(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """What every call of the driver's refit ``name`` returns during the test, in order."""
    kept: list[Any] = []
    refit = getattr(driver, name)

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        kept.append(refit(*args, **kwargs))
        return kept[-1]

    monkeypatch.setattr(driver, name, recording)
    return kept


def _follows_the_stated_rule(refit: driver.HingeRefit) -> None:
    """The kept lane is the first (prototypes, both, linear; larger penalty first) within
    the slack of the lowest held-out loss, and that loss beats the squared loss's."""
    losses = refit.held_out[1:]
    assert losses.size == 2 * len(driver.REFIT_COLUMN_SETS)
    best = losses.min()
    first = int(np.flatnonzero(losses <= best * (1 + AUTO_LAM_SLACK))[0])
    assert best < (1 - AUTO_LAM_SLACK) * refit.held_out[0]
    assert refit.lanes == driver.REFIT_COLUMN_SETS[first // 2]


def test_linear_part_on_sparse_rows_equals_dense_and_round_trips(tmp_path: Path):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.4] = 0.0
    labels = np.digitize(X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.normal(size=1500), [0.0, 1.0])
    params = dict(n_prototypes=9, tol=1e-2, standardize=False, spread_tails=False,
                  linear_part=True)
    dense = SuperSparseClassifier(**params).fit(X, labels)
    sparse = SuperSparseClassifier(**params).fit(scipy.sparse.csr_matrix(X), labels)
    assert dense.linear_part_ and sparse.linear_part_
    assert dense.linear_coef_.shape == (3, 4)  # one w per class
    np.testing.assert_allclose(sparse.linear_coef_, dense.linear_coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sparse.decision_function(scipy.sparse.csr_matrix(X)),
                               dense.decision_function(X), rtol=1e-6, atol=1e-8)
    # the decision is beta . s + w . x + b, as numpy computes it
    S = _similarities(X, dense.prototypes_, dense.gamma_)
    np.testing.assert_allclose(dense.decision_function(X),
                               S @ dense.dual_coef_.T + X @ dense.linear_coef_.T
                               + dense.intercept_, rtol=1e-9, atol=1e-9)
    proba = dense.predict_proba(X)
    np.testing.assert_array_equal(dense.classes_[proba.argmax(axis=1)], dense.predict(X))
    loaded = SuperSparseClassifier.load(dense.save(tmp_path / "linear.slm"))
    assert loaded.linear_part is True and loaded.linear_part_
    np.testing.assert_array_equal(loaded.decision_function(X), dense.decision_function(X))
    # a file from before the parameter: no linear part, and none when fitted again
    old = _rewritten(tmp_path / "linear.slm", tmp_path / "old.slm",
                     lambda h: (h["metadata"]["params"].pop("linear_part"),))
    assert SuperSparseClassifier.load(old).linear_part is False
    # partial_fit re-solves the squared loss on the prototypes: the linear part goes
    again = loaded.partial_fit(X[:300], labels[:300])
    assert not again.linear_part_ and "linear_coef_" not in vars(again)


def test_linear_part_changes_the_importances_as_its_steps_do():
    rng = np.random.default_rng(8)
    Z = rng.normal(size=(40, 3)).astype(np.float32)
    C = rng.normal(size=(5, 3))
    beta = rng.normal(size=(5, 2))
    linear = rng.normal(size=(3, 2))
    Z64 = Z.astype(np.float64)

    def score(rows: np.ndarray) -> np.ndarray:
        return _similarities(rows, C, 0.7) @ beta + rows @ linear

    expected = np.zeros(3)
    for f in range(3):
        below = Z64[:, f] < Z64[:, f].mean()
        h = Z64[~below, f].mean() - Z64[below, f].mean()
        moved = Z64.copy()
        moved[:, f] += np.where(below, h, -h)
        expected[f] = np.abs(score(moved) - score(Z64)).mean() / h
    np.testing.assert_allclose(mean_abs_steps(Z, C, beta, 0.7, linear), expected, rtol=1e-9)


def test_validation_pass_scores_the_linear_part():
    X, y = _ring_and_slope(400, seed=9)
    rng = np.random.default_rng(10)
    C = rng.normal(size=(3, 3))
    w = rng.normal(size=(3 + 3 + 1, 1))
    holdout = Holdout.fraction(0.5, 3)
    held = TargetRows("classification", holdout=holdout, validation=True)
    tally = run_chunks(ValidationPass(held, C, w, Similarity(0.5), True, linear=True),
                       open_dataset(X, target=y, chunk_rows=64).chunks())
    mask = holdout.mask(np.arange(400))
    f = np.column_stack([_similarities(X, C, 0.5), X, np.ones(400)]) @ w[:, 0]
    assert tally.weight == mask.sum()
    assert tally.loss == np.sum((f[mask] > 0) != (y[mask] == 1))


def test_linear_part_of_a_checkpointed_fit_and_its_replay_is_the_plain_fits(tmp_path: Path):
    X, y = _ring_and_slope(1200, seed=11)
    params = dict(n_prototypes=6, tol=1e-2, random_state=0, chunk_rows=200,
                  linear_part=True)
    local = SuperSparseClassifier(**params).fit(X, y)
    assert local.linear_part_
    checkpointed = SuperSparseClassifier(**params).fit(X, y, checkpoint=tmp_path / "ckpt")
    replayed = SuperSparseClassifier(**params).fit(X, y, checkpoint=tmp_path / "ckpt")
    for other in (checkpointed, replayed):
        np.testing.assert_array_equal(other.linear_coef_, local.linear_coef_)
        np.testing.assert_array_equal(other.decision_function(X), local.decision_function(X))
