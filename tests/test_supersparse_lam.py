"""``lam="auto"`` of the super-sparse machines against numpy references."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from streamlearn.data import Chunk
from streamlearn.errors import DataError
from streamlearn.models.supersparse import (
    VALIDATION_SALT,
    GramPass,
    GramState,
    Similarity,
    SuperSparseClassifier,
    SuperSparseRegressor,
    TargetRows,
    class_targets,
    start_online,
)
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.supersparse.passes import (
    AUTO_LAM_FALLBACK,
    AUTO_LAM_GRID,
    AUTO_LAM_SLACK,
    SplitGramPass,
    choose_lam,
    gcv_lam,
)
from tests.test_supersparse import _rbf, _standardise


def _wavy(n: int, seed: int, noise: float = 0.3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + noise * rng.normal(size=n)
    return X, y


def _rule(losses) -> int:
    """Index of the largest grid penalty whose held-out loss is within the slack of the
    smallest."""
    losses = np.asarray(losses)
    return int(np.flatnonzero(losses <= losses.min() * (1 + AUTO_LAM_SLACK)).max())


def _ridge_loss(Z_train, y_train, Z_valid, y_valid, lam):
    """Ridge (intercept not penalised) on the training rows; the held-out mean squared loss."""
    A = np.hstack([Z_train, np.ones((len(y_train), 1))])
    M = A.T @ A / len(y_train)
    M[:-1, :-1] += lam * np.eye(Z_train.shape[1])
    w = np.linalg.solve(M, A.T @ y_train / len(y_train))
    e = np.hstack([Z_valid, np.ones((len(y_valid), 1))]) @ w - y_valid
    return float(np.sum(e * e) / len(y_valid))  # summed over the outputs


def _gcv_choice(S, y, scale):
    """The grid penalty of the largest GCV score within the slack of the lowest, from the
    explicit hat matrix ``H = Z (Z^T Z / n + lam D)^-1 Z^T / n`` of ``Z = [S, 1]``."""
    n, p = S.shape
    Z = np.hstack([S, np.ones((n, 1))])
    y = np.reshape(y, (n, -1))
    lams = [f * scale for f in AUTO_LAM_GRID]
    scores = []
    for lam in lams:
        M = Z.T @ Z / n
        M[:p, :p] += lam * np.eye(p)
        H = Z @ np.linalg.solve(M, Z.T) / n
        e = y - H @ y
        scores.append(float(np.sum(e * e) / n) / (1 - np.trace(H) / n) ** 2)
    # the floor: (top eigenvalue of the similarities' covariance / n) noise / var(t)
    top = np.linalg.eigvalsh(np.cov(S, rowvar=False, bias=True))[-1]
    floor = top / n * min(scores) / float(np.sum(np.var(y, axis=0)))
    if floor > lams[0]:
        M = Z.T @ Z / n
        M[:p, :p] += floor * np.eye(p)
        H = Z @ np.linalg.solve(M, Z.T) / n
        e = y - H @ y
        kept = [i for i, lam in enumerate(lams) if lam > floor]
        lams = [floor] + [lams[i] for i in kept]
        scores = [float(np.sum(e * e) / n) / (1 - np.trace(H) / n) ** 2] + [scores[i]
                                                                               for i in kept]
    return lams[_rule(scores)]


def test_choose_lam_is_the_largest_penalty_within_the_slack_of_the_held_out_optimum():
    X, y = _wavy(600, seed=0)
    C = np.array([[-1.5, -1.0], [-0.5, 0.5], [0.5, -0.5], [1.5, 1.0], [0.0, 1.5]])
    similarity = Similarity(2.0)
    holdout = Holdout.fraction(0.3, 7)
    split = SplitGramPass(TargetRows("regression", None, holdout, False),
                          TargetRows("regression", None, holdout, True), C, similarity)
    state = split.start()
    for a in range(0, 600, 250):  # chunked: the statistics add up
        state = split.step(state, Chunk(X[a:a + 250], y[a:a + 250], a))
    held = holdout.mask(np.arange(600))
    assert state.valid.rows == held.sum() and state.train.rows == (~held).sum()
    Z = _rbf(X, C, 2.0)
    scale = np.mean(np.sum(Z[~held] ** 2, axis=1)) / C.shape[0]
    losses = [_ridge_loss(Z[~held], y[~held], Z[held], y[held], f * scale)
              for f in AUTO_LAM_GRID]
    chosen = choose_lam(state.train, state.valid, "ridge")
    assert np.isclose(chosen, AUTO_LAM_GRID[_rule(losses)] * scale, rtol=1e-9)
    # the grid's ends are not the answer here: the held-out loss has an inner minimum, and
    # the slack moves the choice to a larger penalty than the minimum's
    assert 0 < int(np.argmin(losses)) < _rule(losses) < len(AUTO_LAM_GRID) - 1
    # a current penalty within the slack is kept; one outside it is not
    inside = [f * scale for f, loss in zip(AUTO_LAM_GRID, losses, strict=True)
              if min(losses) < loss <= min(losses) * (1 + AUTO_LAM_SLACK)]
    assert inside and choose_lam(state.train, state.valid, "ridge", current=inside[0]) == inside[0]
    assert choose_lam(state.train, state.valid, "ridge",
                      current=AUTO_LAM_GRID[-1] * scale) == chosen
    # no held-out rows: generalised cross-validation on the training rows
    empty = GramState(np.zeros_like(state.valid.G), np.zeros_like(state.valid.r))
    assert choose_lam(state.train, empty, "ridge") == gcv_lam(state.train, "ridge")
    # overflowed held-out statistics: a clear error, not a bare StopIteration
    overflowed = GramState(state.valid.G, state.valid.r, np.nan, state.valid.weight,
                           state.valid.rows)
    with pytest.raises(DataError, match="squared loss is NaN or infinite at every candidate"):
        choose_lam(state.train, overflowed, "ridge")


def test_gcv_lam_matches_the_hat_matrix_and_falls_back_for_lasso():
    X, y = _wavy(150, seed=11, noise=0.5)
    C = X[:12].copy()
    similarity = Similarity(0.8)
    S = _rbf(X, C, 0.8)
    stats = GramPass(TargetRows("regression"), C, similarity).step(
        GramState(np.zeros((13, 13)), np.zeros((13, 1))), Chunk(X, y, 0))
    scale = float(np.mean(np.sum(S ** 2, axis=1)) / 12)
    chosen = gcv_lam(stats, "ridge")
    assert np.isclose(chosen, _gcv_choice(S, y, scale), rtol=1e-9)
    # not a grid end: the score has an interior minimum on these rows
    assert AUTO_LAM_GRID[0] * scale < chosen < AUTO_LAM_GRID[-1] * scale
    # LASSO: the fixed multiple, in the coefficients' units (times the targets' spread)
    assert np.isclose(gcv_lam(stats, "lasso"), AUTO_LAM_FALLBACK * scale * np.std(y))


def test_choose_lam_with_lasso_agrees_with_scikit_learn_lasso_path():
    X, y = _wavy(500, seed=7, noise=1.0)  # 40 wide prototypes on noisy rows: an inner optimum
    C = np.random.default_rng(0).uniform(-2, 2, size=(40, 2))
    holdout = Holdout.fraction(0.3, 9)
    split = SplitGramPass(TargetRows("regression", None, holdout, False),
                          TargetRows("regression", None, holdout, True), C, Similarity(1.0))
    state = split.step(split.start(), Chunk(X, y, 0))
    held = holdout.mask(np.arange(500))
    Z = _rbf(X, C, 1.0)
    # in the coefficients' units: the similarities' scale times the targets' spread
    scale = np.mean(np.sum(Z[~held] ** 2, axis=1)) / C.shape[0] * np.std(y[~held])
    losses, converged = [], []
    for factor in AUTO_LAM_GRID:  # sklearn's Lasso: (1 / 2n)||.||^2 + alpha |w|_1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model = Lasso(alpha=factor * scale / 2, tol=1e-10, max_iter=100_000).fit(
                Z[~held], y[~held])
        converged.append(not any(issubclass(w.category, ConvergenceWarning) for w in caught))
        losses.append(float(np.mean((model.predict(Z[held]) - y[held]) ** 2)))
    # the reference is trusted where it converged; where it did not (the smallest
    # penalties), its held-out loss is far above the optimum, so the choice is not there
    bound = min(losses) * (1 + AUTO_LAM_SLACK)
    assert all(ok or loss > 1.1 * bound for ok, loss in zip(converged, losses, strict=True))
    best = _rule(losses)
    assert 0 < int(np.argmin(losses)) <= best < len(AUTO_LAM_GRID) - 1
    chosen = choose_lam(state.train, state.valid, "lasso")
    assert np.isclose(chosen, AUTO_LAM_GRID[best] * scale, rtol=1e-9)


def test_split_statistics_are_the_two_selections_gram_statistics():
    X, y = _wavy(300, seed=1)
    C = np.array([[-1.0, 0.0], [1.0, 0.5]])
    holdout = Holdout.fraction(0.25, 3)
    rows = [TargetRows("regression", None, holdout, side) for side in (False, True)]
    split = SplitGramPass(*rows, C, Similarity(1.0))
    state = split.step(split.start(), Chunk(X, y, 0))
    for side, rows_ in zip((state.train, state.valid), rows, strict=True):
        plain = GramPass(rows_, C, Similarity(1.0))
        alone = plain.step(plain.start(), Chunk(X, y, 0))
        np.testing.assert_allclose(side.G, alone.G, rtol=1e-12)
        np.testing.assert_allclose(side.r, alone.r, rtol=1e-12)
        assert side.weight == alone.weight and side.yy == alone.yy


@pytest.mark.parametrize("solver", ["lbfgs", "batch", "minibatch"])
def test_auto_lam_is_chosen_at_the_final_prototypes_and_the_last_step_takes_every_row(solver):
    X, y = _wavy(1500, seed=2)
    model = SuperSparseRegressor(n_prototypes=12, max_iter=40, solver=solver,
                                 random_state=4, chunk_rows=400).fit(X, y)
    Z, mean, std = _standardise(X)
    Cz = (model.prototypes_ - mean) / std
    S = _rbf(Z, Cz, model.gamma_)
    held = Holdout.fraction(0.2, 4 ^ VALIDATION_SALT).mask(np.arange(len(y)))
    scale = np.mean(np.sum(S[~held] ** 2, axis=1)) / 12
    losses = [_ridge_loss(S[~held], y[~held], S[held], y[held], f * scale)
              for f in AUTO_LAM_GRID]
    # lam_ meets the rule at the final prototypes: the largest candidate within the slack,
    # or the penalty in use, kept while it stays within it
    at_lam = _ridge_loss(S[~held], y[~held], S[held], y[held], model.lam_)
    bound = min(*losses, at_lam) * (1 + AUTO_LAM_SLACK)
    assert at_lam <= bound
    assert model.lam_ < AUTO_LAM_GRID[-1] * scale
    # the coefficients: ridge at lam_ on every row, the held-out ones included
    A = np.hstack([S, np.ones((len(y), 1))])
    M = A.T @ A / len(y)
    M[:-1, :-1] += model.lam_ * np.eye(12)
    w = np.linalg.solve(M, A.T @ y / len(y))
    np.testing.assert_allclose(np.append(model.dual_coef_, model.intercept_), w, rtol=1e-4,
                               atol=1e-6 * np.abs(w).max())


def test_auto_lam_beats_both_ends_of_its_grid_and_the_former_default_on_new_rows():
    # 200 prototypes on 1,200 noisy rows: the penalty matters
    X, y = _wavy(1200, seed=3, noise=0.5)
    Xt, yt = _wavy(4000, seed=4, noise=0.0)
    auto = SuperSparseRegressor(n_prototypes=200, random_state=0).fit(X, y)
    mse = {"auto": float(np.mean((auto.predict(Xt) - yt) ** 2))}
    Z, mean, std = _standardise(X)
    S = _rbf(Z, (auto.prototypes_ - mean) / std, auto.gamma_)
    scale = float(np.mean(np.sum(S ** 2, axis=1)) / 200)
    for name, lam in (("small", AUTO_LAM_GRID[0] * scale), ("large", AUTO_LAM_GRID[-1] * scale),
                      ("former default", 1e-3)):
        fixed = SuperSparseRegressor(n_prototypes=200, lam=lam, random_state=0).fit(X, y)
        mse[name] = float(np.mean((fixed.predict(Xt) - yt) ** 2))
    assert mse["auto"] < 0.5 * min(mse["small"], mse["large"]), mse
    assert mse["auto"] < mse["former default"], mse


def test_few_rows_keep_a_penalty_on_a_crowded_feature_with_skewed_noise():
    # one feature seen, 30 prototypes crowded on it at the widest gamma allowed, and half
    # the target a hidden feature's square: GCV alone kept lowering the penalty to 1e-9
    # times its scale, and the prototype steps then cancelled coefficients of +-164,
    # predicting 33 beside the rows where the targets stay within [-3, 6]
    rng = np.random.default_rng(1)

    def rows(n):
        X = rng.normal(size=(n, 2))
        return X[:, :1], X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)

    X, y = rows(300)
    Xt, yt = rows(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SuperSparseRegressor().fit(X, y)
    pred = model.predict(Xt)
    spread = y.max() - y.min()
    assert y.min() - spread < pred.min() and pred.max() < y.max() + spread
    r2 = 1 - np.mean((pred - yt) ** 2) / np.var(yt)
    A = np.hstack([X, np.ones((300, 1))])  # the least-squares line, for reference
    line = np.hstack([Xt, np.ones((300, 1))]) @ np.linalg.lstsq(A, y, rcond=None)[0]
    assert r2 > 1 - np.mean((line - yt) ** 2) / np.var(yt) - 0.1


def test_few_rows_choose_lam_by_generalised_cross_validation():
    X, y = _wavy(400, seed=5)  # 0.2 x 400 = 80 rows expected held out: too few to choose
    model = SuperSparseRegressor(n_prototypes=6, max_iter=0, random_state=1).fit(X, y)
    Z, mean, std = _standardise(X)
    S = _rbf(Z, (model.prototypes_ - mean) / std, model.gamma_)
    scale = np.mean(np.sum(S ** 2, axis=1)) / 6
    assert np.isclose(model.lam_, _gcv_choice(S, y, scale), rtol=1e-5)
    # LASSO coefficients keep the fixed multiple of the scale, times the targets' spread
    lasso = SuperSparseRegressor(n_prototypes=6, max_iter=0, coef="lasso",
                                 random_state=1).fit(X, y)
    assert np.isclose(lasso.lam_, AUTO_LAM_FALLBACK * scale * np.std(y), rtol=1e-5)
    # a number is used as it is
    assert SuperSparseRegressor(n_prototypes=6, max_iter=0, lam=0.02).fit(X, y).lam_ == 0.02


def test_partial_fit_chooses_lam_on_its_first_call_and_keeps_it():
    X, y = _wavy(2000, seed=6)
    labels = (y > 0).astype(int) + (X[:, 1] > 1).astype(int)  # three classes
    model = SuperSparseClassifier(n_prototypes=10, random_state=2)
    # the first call's model, from the driver: its lam against a numpy reference
    t = class_targets(labels[:1500], 3)
    weight = np.ones(1500, dtype=np.float32)
    start = start_online(X[:1500], t, weight, model._config("regression", 1500), 2)
    Z = _standardise(X[:1500])[0]
    S = _rbf(Z, start.prototypes, start.gamma)
    held = Holdout.fraction(0.2, 2 ^ VALIDATION_SALT).mask(np.arange(1500))
    scale = np.mean(np.sum(S[~held] ** 2, axis=1)) / 10
    losses = [_ridge_loss(S[~held], t[~held], S[held], t[held], f * scale)
              for f in AUTO_LAM_GRID]
    assert np.isclose(start.lam, AUTO_LAM_GRID[_rule(losses)] * scale, rtol=1e-6)
    # the estimator's first call makes the same choice and the next call keeps it
    model.partial_fit(X[:1500], labels[:1500], classes=[0, 1, 2])
    assert np.isclose(model.lam_, start.lam, rtol=1e-12)
    model.partial_fit(X[1500:], labels[1500:])
    assert np.isclose(model.lam_, start.lam, rtol=1e-12)
    assert model.score(X, labels) > 0.6
