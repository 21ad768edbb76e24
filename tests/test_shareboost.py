"""ShareBoostClassifier (paper 003) against numpy, scipy and problems with a known answer."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from streamlearn import LocalEngine, open_dataset
from streamlearn.engine import DaskEngine
from streamlearn.errors import LabelError, SchemaError
from streamlearn.features.anchors import AnchorPieces
from streamlearn.models.shareboost import (
    AnchorColumns,
    ColumnScorePass,
    LinearColumns,
    RestrictedObjectivePass,
    ShareBoostClassifier,
)


def shared_problem(n: int, d: int = 30, k: int = 5, shared=(3, 11, 22), seed: int = 0):
    """``k`` classes that all depend on the same few features among ``d``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)).astype(np.float32)
    W = rng.normal(size=(k, len(shared))) * 4.0
    y = np.argmax(X[:, list(shared)] @ W.T + 0.3 * rng.normal(size=(n, k)), axis=1)
    return X, y


def _rho_minus_onehot(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = scores.shape
    onehot = np.eye(k)[y]
    z = (1.0 - onehot) - scores[np.arange(n), y][:, None] + scores
    z -= z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True) - onehot


def _softmax_loss(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = scores.shape
    onehot = np.eye(k)[y]
    z = (1.0 - onehot) - scores[np.arange(n), y][:, None] + scores
    return np.logaddexp.reduce(z, axis=1)


# -- column scores: one reduction pass gives the gradient matrix of eq. 7 ---------------------
def test_column_score_pass_is_eq7_gradient_matrix() -> None:
    rng = np.random.default_rng(0)
    n, d, k = 700, 9, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, k, size=n)
    w32 = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    w = w32.astype(np.float64)
    data = open_dataset(X, target=y, weight=w32, chunk_rows=128)
    scale = 1.0 / np.abs(X).max(axis=0).astype(np.float64)
    family = LinearColumns(scale)
    selected = [5, 1]
    coef = rng.normal(size=(2, k, 1))
    intercept = rng.normal(size=k)
    engine = LocalEngine(chunk_rows=128)
    state = engine.run(ColumnScorePass(family, np.array(selected), coef, intercept), data)
    Z = X.astype(np.float64) * scale
    scores = intercept + Z[:, selected] @ coef[:, :, 0]
    R = w[:, None] * _rho_minus_onehot(scores, y)
    gradient = Z.T @ R  # (d, k): column r of the gradient matrix, times m
    np.testing.assert_allclose(state.gradient, gradient, rtol=1e-6, atol=1e-9)
    assert state.loss == pytest.approx(float(w @ _softmax_loss(scores, y)), rel=1e-9)
    assert state.weight == pytest.approx(float(w.sum()), rel=1e-9)
    np.testing.assert_allclose(family.column_scores(state.gradient) / state.weight,
                               np.abs(gradient).sum(axis=1) / w.sum(), rtol=1e-6)


def test_anchor_passes_match_materialised_features() -> None:
    """Anchor scores and the restricted gradient, split between threads, against numpy."""
    rng = np.random.default_rng(5)
    n, d, k, n_centres, n_radii = 5000, 3, 3, 70, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, k, size=n)
    data = open_dataset(X, target=y, chunk_rows=4500)  # one chunk split in two threads
    pieces = AnchorPieces.from_sample(rng.normal(size=(n_centres, d)), X[:800], n_radii,
                                      np.full(d, 0.5))
    family = AnchorColumns(pieces)
    selected = np.array([5, 42, 101])
    coef = 0.3 * rng.normal(size=(3, k, d + 1))
    intercept = rng.normal(size=k)
    engine = LocalEngine(chunk_rows=4500)
    features = pieces.transform(X, selected).astype(np.float64)  # (n, 3 (d + 1))
    s = intercept + features @ coef.transpose(1, 0, 2).reshape(k, -1).T
    R = _rho_minus_onehot(s, y)
    state = engine.run(RestrictedObjectivePass(family, selected, coef, intercept), data)
    np.testing.assert_allclose(state.gradient.transpose(1, 0, 2).reshape(k, -1),
                               R.T @ features, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state.intercept, R.sum(axis=0), rtol=1e-9, atol=1e-9)
    assert state.loss == pytest.approx(float(_softmax_loss(s, y).sum()), rel=1e-9)
    scores = engine.run(ColumnScorePass(family, selected, coef, intercept), data)
    every = pieces.transform(X, np.arange(n_centres * n_radii)).astype(np.float64)
    expected = np.abs(R.T @ every).reshape(k, n_centres * n_radii, d + 1).sum(axis=(0, 2))
    np.testing.assert_allclose(family.column_scores(scores.gradient), expected, rtol=1e-4)


# -- the fully corrective step reaches the optimum of the restricted problem ------------------
def test_corrective_step_reaches_scipy_optimum_of_restricted_problem() -> None:
    X, y = shared_problem(600, d=12, k=3, shared=(2, 7), seed=1)
    l2 = 1e-3
    model = ShareBoostClassifier(n_rounds=3, l2=l2, refit_iter=300, tol=1e-9,
                                 chunk_rows=150).fit(X, y)
    selected = model.selected_features_
    k = 3
    Z = (X * model.family_.scale.astype(np.float32))[:, selected].astype(np.float64)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = theta[:-k].reshape(k, -1), theta[-k:]
        s = Z @ W.T + b
        R = _rho_minus_onehot(s, y) / len(y)
        value = _softmax_loss(s, y).mean() + l2 * np.sum(W * W)
        return value, np.concatenate([(R.T @ Z + 2 * l2 * W).ravel(), R.sum(axis=0)])

    ref = minimize(objective, np.zeros(k * len(selected) + k), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    assert model.path_["loss"][-1] == pytest.approx(ref.fun, rel=1e-7)
    W_ref, b_ref = ref.x[:-k].reshape(k, -1), ref.x[-k:]
    np.testing.assert_allclose(model.column_coef_, W_ref, atol=2e-3)
    # the intercept is defined up to a constant shift shared by every class
    np.testing.assert_allclose(model.intercept_ - model.intercept_.mean(),
                               b_ref - b_ref.mean(), atol=2e-3)
    # every round's objective is no larger than the previous one (nested supports)
    assert np.all(np.diff(model.path_["loss"]) <= 1e-12)


# -- feature sharing: the shared features come first ----------------------------------------
def test_recovers_shared_features_in_first_rounds() -> None:
    shared = (3, 11, 22)
    X_all, y_all = shared_problem(2500, d=30, k=5, shared=shared)
    X, y, X_test, y_test = X_all[:1500], y_all[:1500], X_all[1500:], y_all[1500:]
    model = ShareBoostClassifier(n_rounds=len(shared), chunk_rows=400).fit(X, y)
    assert set(model.selected_features_.tolist()) == set(shared)
    np.testing.assert_array_equal(model.used_features_, sorted(shared))
    assert model.column_coef_.shape == (5, 3)
    # using the shared features alone classifies the problem well
    assert model.score(X_test, y_test) > 0.85
    assert model.path_["n_selected"] == [0, 1, 2, 3]
    assert model.path_["train_error"][-1] < model.path_["train_error"][0]


# -- stumps: the histogram pass picks what an exhaustive search picks -----------------------
def test_stumps_from_histogram_pass_equal_exhaustive_search() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 5)).astype(np.float32)
    X[:, 4] = np.round(X[:, 4])  # ties and repeated thresholds
    y = (X[:, 0] > 0.3).astype(int) + (X[:, 2] ** 2 > 1.0).astype(int)
    states: list[tuple[np.ndarray, list[int]]] = []
    model = ShareBoostClassifier(n_rounds=4, features="stumps", n_bins=12, chunk_rows=200)
    model.fit(X, y, callback=lambda t, m: states.append(
        (m.decision_function(X), m.selected_features_.tolist())))
    thresholds = model.family_.thresholds
    assert thresholds.shape == (5, 11)
    for (scores, chosen), (_, after) in itertools.pairwise(states):
        R = _rho_minus_onehot(scores, y)
        best, best_score = None, -np.inf
        for f in range(5):
            seen = set()
            for b, theta in enumerate(thresholds[f]):
                if theta in seen or f * 11 + b in chosen:
                    continue
                seen.add(theta)
                score = np.abs(R[X[:, f] <= theta].sum(axis=0)).sum()
                if score > best_score + 1e-9:
                    best, best_score = f * 11 + b, score
        assert after[-1] == best
    used = model.used_features_
    assert set(used.tolist()) <= {0, 2, 4} and {0, 2} <= set(used.tolist())


# -- anchors, predictions and model files ---------------------------------------------------
def test_anchors_learn_a_nonlinear_problem_and_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(1500, 2)).astype(np.float32)
    radius = np.hypot(X[:, 0], X[:, 1])
    y = np.digitize(radius, [0.45, 0.85])  # three rings: no linear rule separates them
    labels = np.array(["inner", "middle", "outer"])[y]
    linear = ShareBoostClassifier(n_rounds=2, chunk_rows=500).fit(X, labels)
    # rounds long enough to converge: the path's last entry is then the model itself, not
    # the step before the kept columns' final fit
    model = ShareBoostClassifier(n_rounds=8, features="anchors", n_centres=12, n_radii=6,
                                 refit_iter=300, chunk_rows=500).fit(
        X, labels, validation=(X[:300], labels[:300]))
    assert model.score(X, labels) > 0.9 > linear.score(X, labels) + 0.2
    assert model.column_coef_.shape == (3, 8 * 3)
    assert len(model.path_["validation_error"]) == 9
    assert model.path_["validation_error"][-1] == pytest.approx(
        1.0 - model.score(X[:300], labels[:300]))
    proba = model.predict_proba(X)
    scores = model.decision_function(X)
    # the soft-max at the temperature proba_scale_
    expected = np.exp(model.proba_scale_ * (scores - scores.max(axis=1, keepdims=True)))
    np.testing.assert_allclose(proba, expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_array_equal(model.predict(X), model.classes_[scores.argmax(axis=1)])
    path = model.save(tmp_path / "shareboost.slm")
    loaded = ShareBoostClassifier.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), scores)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.selected_features_, model.selected_features_)
    assert loaded.path_ == model.path_ and loaded.get_params() == model.get_params()


def test_bad_input_is_named() -> None:
    X, y = shared_problem(200, d=6, k=3, shared=(0, 1))
    with pytest.raises(LabelError, match="1 class"):
        ShareBoostClassifier(n_rounds=2).fit(X, np.zeros(200, dtype=int))
    with pytest.raises(ValueError,
                       match="'features' parameter of ShareBoostClassifier must be a str among"):
        ShareBoostClassifier(features="trees").fit(X, y)
    with pytest.raises(ValueError, match="n_rounds"):
        ShareBoostClassifier(n_rounds=-1).fit(X, y)
    with pytest.raises(ValueError, match="max_coverage"):
        ShareBoostClassifier(features="anchors", max_coverage=1.5).fit(X, y)
    model = ShareBoostClassifier(n_rounds=2).fit(X, y)
    with pytest.raises(SchemaError):
        model.predict(X[:, :4])


# -- engines and checkpoints ----------------------------------------------------------------
class Crash(Exception):
    pass


def _crashing_engine(after: int, chunk_rows: int) -> LocalEngine:
    engine = LocalEngine(chunk_rows=chunk_rows)
    plain = engine.run
    seen = [0]

    def run(pass_, data, *, on_chunk=None, **options):
        def hook(done, state):
            seen[0] += 1
            if seen[0] == after:
                raise Crash
            if on_chunk is not None:
                on_chunk(done, state)

        return plain(pass_, data, on_chunk=hook, **options)

    engine.run = run
    return engine


def _assert_same_model(a: ShareBoostClassifier, b: ShareBoostClassifier) -> None:
    np.testing.assert_array_equal(a.selected_features_, b.selected_features_)
    np.testing.assert_array_equal(a.coef_groups_, b.coef_groups_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert a.path_ == b.path_


def test_crashed_fit_resumes_from_checkpoint_to_the_same_model(tmp_path: Path) -> None:
    X, y = shared_problem(800, d=10, k=3, shared=(1, 4))
    params = {"n_rounds": 3, "features": "stumps", "n_bins": 8, "refit_iter": 5,
              "chunk_rows": 200}
    reference = ShareBoostClassifier(**params).fit(X, y)
    for after in (3, 45):  # in the describe pass, in a later round
        path = tmp_path / f"crash-{after}"
        with pytest.raises(Crash):
            ShareBoostClassifier(**params).fit(X, y, engine=_crashing_engine(after, 200),
                                               checkpoint=path, checkpoint_every=1)
        resumed = ShareBoostClassifier(**params).fit(X, y, checkpoint=path,
                                                     checkpoint_every=1)
        _assert_same_model(resumed, reference)


def test_dask_engine_fits_the_same_model(dask_client) -> None:
    X, y = shared_problem(600, d=8, k=3, shared=(0, 5))
    params = {"n_rounds": 2, "features": "stumps", "n_bins": 8, "refit_iter": 4,
              "chunk_rows": 300}
    local = ShareBoostClassifier(**params).fit(X, y)
    remote = ShareBoostClassifier(**params).fit(X, y, engine=DaskEngine(dask_client))
    np.testing.assert_array_equal(remote.selected_features_, local.selected_features_)
    np.testing.assert_allclose(remote.coef_groups_, local.coef_groups_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(remote.intercept_, local.intercept_, rtol=1e-6, atol=1e-9)
