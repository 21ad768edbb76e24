"""The super-sparse classifier's squared-hinge refit of its coefficients (``loss="auto"``)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_info

from streamlearn.data import open_dataset
from streamlearn.engine import DaskEngine, LocalEngine, run_chunks
from streamlearn.models.supersparse import SuperSparseClassifier
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.supersparse import driver, passes
from streamlearn.solvers.supersparse.passes import (
    AUTO_LAM_SLACK,
    LINE_STEPS,
    HingeGramPass,
    Similarity,
    SimilarityCache,
    TargetRows,
    hinge_curvature,
    hinge_line_objective,
    hinge_newton_point,
    hinge_objective,
    lane_scores,
    solve_beta,
    symmetric_from_upper,
    upper_gram,
)
from tests.test_model_file import _rewritten
from tests.test_supersparse_linear_part import recorded_refits


def _rings(n: int, seed: int, noise: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Two classes split by a circle, with label noise near it."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    radius = np.hypot(X[:, 0], X[:, 1]) + noise * rng.normal(size=n)
    return X, (radius > 1.1).astype(np.int64)


def _similarities(X: np.ndarray, C: np.ndarray, gamma: float) -> np.ndarray:
    d2 = ((X.astype(np.float64)[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def _ring_problem(n: int, seed: int, grid_side: int, holdout_seed: int, chunk_rows: int):
    """Noisy rings (:func:`_rings`) with prototypes on a ``grid_side`` x ``grid_side``
    grid, the training and held-out roles of a 30 % split, the dataset, numpy's
    similarity columns at width 0.5 (with the intercept's) and the held-out mask."""
    X, y = _rings(n, seed=seed, noise=0.45)
    grid = np.linspace(-2.0, 2.0, grid_side)
    C = np.array([[a, b] for a in grid for b in grid])
    holdout = Holdout.fraction(0.3, holdout_seed)
    train = TargetRows("classification", holdout=holdout)
    held = TargetRows("classification", holdout=holdout, validation=True)
    dataset = open_dataset(X, target=y, chunk_rows=chunk_rows)
    Z = np.column_stack([_similarities(X, C, 0.5), np.ones(n)])
    return y, C, train, held, dataset, Z, holdout.mask(np.arange(n))


def _three_class_rows(n: int, p: int, seed: int, holdout_seed: int):
    """Weighted rows of three classes in 3 features, ``p`` centres, the training and the
    held-out roles of a 30 % split, the dataset in chunks of 64 rows, and numpy's
    similarity columns (with the intercept's) and +-1 targets of the rows."""
    rng = np.random.default_rng(seed)
    K = 3
    X = rng.normal(size=(n, 3)).astype(np.float32)
    labels = rng.integers(0, K, size=n)
    v = rng.uniform(0.2, 2.0, size=n).astype(np.float32)
    C = rng.normal(size=(p, 3))
    holdout = Holdout.fraction(0.3, holdout_seed)
    train = TargetRows("classification", None, holdout, False, None, K)
    held = TargetRows("classification", None, holdout, True, None, K)
    dataset = open_dataset(X, target=labels, weight=v, chunk_rows=64)
    Z = np.column_stack([_similarities(X, C, 0.4), np.ones(n)])
    Y = -np.ones((n, K))
    Y[np.arange(n), labels] = 1.0
    return rng, v, C, train, held, dataset, Z, Y, holdout.mask(np.arange(n))


def test_hinge_gram_pass_sums_the_active_rows_as_numpy_does():
    n, K, p = 300, 3, 5
    rng, v, C, train, held, dataset, Z, Y, out = _three_class_rows(n, p, 0, 7)
    W = rng.normal(scale=0.7, size=(2, p + 1, K))
    got = run_chunks(HingeGramPass(train, C, Similarity(0.4), W, held), dataset.chunks())

    for lane in range(2):
        for c in range(K):
            slack = 1.0 - Y[:, c] * (Z @ W[lane, :, c])
            active = (slack > 0) & ~out
            G = sum(v[i] * np.outer(Z[i], Z[i]) for i in np.flatnonzero(active))
            r = sum(v[i] * Y[i, c] * Z[i] for i in np.flatnonzero(active))
            np.testing.assert_allclose(got.G[lane, c], G, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(got.r[lane, c], r, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(got.loss[lane, c],
                                       np.sum(v[~out] * np.maximum(slack[~out], 0) ** 2),
                                       rtol=1e-9)
            np.testing.assert_allclose(got.held_out[lane, c],
                                       np.sum(v[out] * np.maximum(slack[out], 0) ** 2),
                                       rtol=1e-9)
    assert got.weight == pytest.approx(float(v[~out].sum(dtype=np.float64)))
    assert got.held_out_weight == pytest.approx(float(v[out].sum(dtype=np.float64)))
    assert got.rows == int((~out).sum())
    # merged halves are the whole
    chunks = list(dataset.chunks())
    pass_ = HingeGramPass(train, C, Similarity(0.4), W, held)
    a = run_chunks(pass_, chunks[:2])
    b = run_chunks(pass_, chunks[2:])
    np.testing.assert_allclose(pass_.merge(a, b).G, got.G, rtol=1e-12, atol=1e-12)


def test_cached_similarity_passes_sum_what_recomputing_passes_and_numpy_do():
    n, K, p = 320, 3, 5
    rng, v, C, train, held, dataset, Z, Y, out = _three_class_rows(n, p, 21, 5)  # 5 chunks
    similarity = Similarity(0.4)
    one_chunk = 64 * (p + 1 + K) * 8 + 64 * 4  # a chunk's training rows fit, not two
    caches = [SimilarityCache(C, similarity), SimilarityCache(C, similarity, one_chunk)]
    points = [rng.normal(scale=0.7, size=(2, p + 1, K)) for _ in range(3)]
    for it, W in enumerate(points):
        line = (points[it - 1], W - points[it - 1]) if it else (None, None)
        want = run_chunks(HingeGramPass(train, C, similarity, W, held, *line),
                          dataset.chunks())
        for cache in caches:
            got = run_chunks(HingeGramPass(train, C, similarity, W, held, *line, cache=cache),
                             dataset.chunks())
            for name in ("G", "r", "loss", "held_out", "line"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
            assert (got.weight, got.held_out_weight, got.rows) == (
                want.weight, want.held_out_weight, want.rows)
        # ... which are numpy's at the last point
        for c in range(K):
            active = (1.0 - Y[:, c] * (Z @ W[1, :, c]) > 0) & ~out
            va = v[active].astype(np.float64)
            np.testing.assert_allclose(want.G[1, c], (Z[active].T * va) @ Z[active],
                                       rtol=1e-10, atol=1e-10)
    # every pass after the first read both roles of every chunk from the full cache
    assert (caches[0].misses, caches[0].hits) == (10, 20)
    # the small one kept what fitted, and computed the rest in every pass
    assert 0 < caches[1].nbytes <= one_chunk and caches[1].hits < 20
    assert caches[1].hits + caches[1].misses == 30
    # chunks in another order of rows are computed again, and sum as without the cache
    shuffled = list(dataset.chunks(shuffle=True, seed=3))
    before = caches[0].hits
    got = run_chunks(HingeGramPass(train, C, similarity, points[0], held, cache=caches[0]),
                     shuffled)
    want = run_chunks(HingeGramPass(train, C, similarity, points[0], held), shuffled)
    np.testing.assert_array_equal(got.G, want.G)
    assert caches[0].hits == before
    # a cache serves its own prototypes only, and travels empty
    with pytest.raises(ValueError, match="other prototypes"):
        HingeGramPass(train, C + 1.0, similarity, points[0], held, cache=caches[0])
    shipped = pickle.loads(pickle.dumps(caches[0]))
    assert shipped.nbytes == 0 and shipped.get("train", shuffled[0]) is None


def test_newton_refit_is_the_same_with_and_without_its_similarity_cache(
        monkeypatch: pytest.MonkeyPatch):
    y, C, train, held, dataset, Z, out = _ring_problem(600, 22, 4, 4, 100)
    w0 = np.linalg.lstsq(Z[~out], 2.0 * y[~out] - 1.0, rcond=None)[0]
    caches: list[SimilarityCache] = []

    class Recorded(SimilarityCache):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            caches.append(self)

    monkeypatch.setattr(driver, "SimilarityCache", Recorded)
    engine = LocalEngine(progress=False)
    assert driver.runs_here(engine) and not driver.runs_here(object())
    fits = [driver.hinge_newton(engine, dataset, train, C, Similarity(0.5), w0,
                                [1e-3, 1e-9], 1e-3, held)]
    assert len(caches) == 1 and caches[0].hits == 2 * 6 * (fits[0].passes - 1)
    monkeypatch.setattr(driver, "runs_here", lambda runner: False)
    fits.append(driver.hinge_newton(engine, dataset, train, C, Similarity(0.5), w0,
                                    [1e-3, 1e-9], 1e-3, held))
    assert len(caches) == 1  # no cache where the passes may run elsewhere
    for name in ("W", "objective", "held_out", "steps"):
        np.testing.assert_array_equal(getattr(fits[0], name), getattr(fits[1], name))
    assert fits[0].passes == fits[1].passes > 1


def test_small_systems_are_solved_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(23)
    Z = rng.normal(size=(50, 6))
    A, b = Z.T @ Z / 50, rng.normal(size=(6, 2))
    D = np.diag([1.0] * 5 + [0.0])
    threads: list[int] = []
    solve = np.linalg.solve

    def recorded(M: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        threads.append(max(i["num_threads"] for i in threadpool_info()
                           if i["user_api"] == "blas"))
        return solve(M, rhs)

    monkeypatch.setattr(np.linalg, "solve", recorded)
    outside = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    got = solve_beta(A, b, 0.1, "ridge")
    np.testing.assert_allclose(got, solve(A + 0.1 * D, b), rtol=1e-12)
    monkeypatch.setattr(passes, "SINGLE_THREAD_UNKNOWNS", 5)  # 6 unknowns: as it is
    np.testing.assert_array_equal(solve_beta(A, b, 0.1, "ridge"), got)
    assert threads == [1, outside]
    assert max(i["num_threads"] for i in threadpool_info()
               if i["user_api"] == "blas") == outside  # restored


def test_lane_scores_are_every_lanes_products():
    rng = np.random.default_rng(24)
    Z, W = rng.normal(size=(30, 5)), rng.normal(size=(3, 5, 4))
    got = lane_scores(Z, W)
    assert got.shape == (3, 30, 4) and got.flags.c_contiguous
    for lane in range(3):
        np.testing.assert_allclose(got[lane], Z @ W[lane], rtol=1e-12, atol=1e-12)


def test_upper_gram_is_the_weighted_gram_above_its_diagonal():
    rng = np.random.default_rng(16)
    Z = rng.normal(size=(40, 6))
    v = rng.uniform(0.0, 2.0, size=40)
    full = (Z.T * v) @ Z
    got = upper_gram(Z, v)
    np.testing.assert_allclose(got, np.triu(full), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(symmetric_from_upper(np.stack([got, 2 * got])),
                               np.stack([full, 2 * full]), rtol=1e-12, atol=1e-12)


def test_hinge_gram_pass_sums_few_and_most_rows_inside_the_margin_alike():
    # lane 0 at w = 0 puts every row inside the margin (the Gram of every row less none),
    # lane 1's large coefficients leave few inside (the Gram of those rows)
    rng = np.random.default_rng(17)
    X, y = _rings(500, seed=17)
    C = rng.normal(size=(4, 2))
    Z = np.column_stack([_similarities(X, C, 0.6), np.ones(500)])
    t = 2.0 * y - 1.0
    w1 = np.linalg.lstsq(Z, t, rcond=None)[0] * 6.0
    W = np.stack([np.zeros(5), w1])[:, :, None]
    v = rng.uniform(0.5, 1.5, size=500).astype(np.float32)
    dataset = open_dataset(X, target=y, weight=v, chunk_rows=100)
    got = run_chunks(HingeGramPass(TargetRows("classification"), C, Similarity(0.6), W),
                     dataset.chunks())
    fractions = []
    for lane in range(2):
        active = 1.0 - t * (Z @ W[lane, :, 0]) > 0
        fractions.append(active.mean())
        va = v[active].astype(np.float64)
        np.testing.assert_allclose(got.G[lane, 0], (Z[active].T * va) @ Z[active],
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got.r[lane, 0], Z[active].T @ (va * t[active]),
                                   rtol=1e-10, atol=1e-10)
    assert fractions[0] == 1.0 and fractions[1] < 0.5
    # an output left out of ``outputs`` sums its losses only
    some = run_chunks(HingeGramPass(TargetRows("classification"), C, Similarity(0.6), W,
                                    outputs=np.array([[False], [True]])), dataset.chunks())
    assert not some.G[0].any() and not some.r[0].any()
    np.testing.assert_allclose(some.G[1], got.G[1], rtol=1e-12)
    np.testing.assert_allclose(some.loss, got.loss, rtol=1e-12)


def test_line_search_sums_are_the_objective_along_the_direction():
    X, y = _rings(250, seed=3)
    rng = np.random.default_rng(3)
    C = rng.normal(size=(4, 2))
    base = rng.normal(scale=0.5, size=(2, 5, 1))
    direction = rng.normal(scale=0.5, size=(2, 5, 1))
    at = base + direction
    dataset = open_dataset(X, target=y, chunk_rows=60)
    stats = run_chunks(HingeGramPass(TargetRows("classification"), C, Similarity(0.7), at,
                                     None, base, direction), dataset.chunks())
    lams = np.array([0.1, 1e-3])
    got = hinge_line_objective(stats, base, direction, lams)
    Z = np.column_stack([_similarities(X, C, 0.7), np.ones(250)])
    t = 2.0 * y - 1.0
    for lane in range(2):
        for j, step in enumerate(LINE_STEPS):
            w = base[lane, :, 0] + step * direction[lane, :, 0]
            slack = np.maximum(1.0 - t * (Z @ w), 0.0)
            want = float(slack @ slack) / 250 + lams[lane] * float(w[:-1] @ w[:-1])
            assert got[lane, 0, j] == pytest.approx(want, rel=1e-10)
    # the full step is the pass's own point
    np.testing.assert_allclose(got[:, :, 0], hinge_objective(stats, at, lams), rtol=1e-10)


def test_newton_refit_minimises_the_squared_hinge_objective_as_scipy_does():
    X, y = _rings(600, seed=1)
    v = np.random.default_rng(2).uniform(0.5, 1.5, size=600).astype(np.float32)
    C = np.array([[0.0, 0.0], [1.5, 0.0], [-1.5, 0.0], [0.0, 1.5], [0.0, -1.5]])
    similarity = Similarity(0.5)
    rows = TargetRows("classification")
    dataset = open_dataset(X, target=y, weight=v, chunk_rows=128)
    Z = np.column_stack([_similarities(X, C, 0.5), np.ones(600)])
    t = 2.0 * y - 1.0
    V = float(v.sum(dtype=np.float64))
    w0 = np.linalg.lstsq(Z * np.sqrt(v)[:, None], t * np.sqrt(v), rcond=None)[0]
    lams = [1e-2, 1e-4, 1e-9]  # the last nearly unpenalised: its Newton steps overshoot
    fit = driver.hinge_newton(LocalEngine(progress=False), dataset, rows, C, similarity, w0,
                              lams, tol=1e-12)
    W, J = fit.W, fit.objective
    assert not fit.capped and fit.passes < driver.refit_pass_cap(dataset.n_rows)

    for lane, lam in enumerate(lams):
        def objective(w: np.ndarray, lam: float = lam) -> tuple[float, np.ndarray]:
            slack = np.maximum(1.0 - t * (Z @ w), 0.0)
            penalty = np.append(w[:-1], 0.0)
            value = float(v @ slack**2) / V + lam * float(penalty @ penalty)
            grad = -2.0 * Z.T @ (v * slack * t) / V + 2.0 * lam * penalty
            return value, grad

        ref = minimize(objective, w0, jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
        assert J[lane, 0] == pytest.approx(ref.fun, rel=1e-7)
        assert J[lane, 0] <= ref.fun + 1e-10
        np.testing.assert_allclose(W[lane, :, 0], ref.x, rtol=1e-3, atol=1e-4)
        assert objective(W[lane, :, 0])[0] == pytest.approx(J[lane, 0], rel=1e-9)


def _random_lanes_pass(n: int, seed: int, p: int, lanes: int, gamma: float,
                       chunk_rows: int) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """A :class:`HingeGramPass` over ring rows at random coefficients: the statistics,
    the similarity columns ``Z`` (with the intercept's), the ``+-1`` targets and the
    coefficients (lanes, p + 1, 1)."""
    rng = np.random.default_rng(seed)
    X, y = _rings(n, seed=seed)
    C = rng.normal(size=(p, 2))
    w = rng.normal(scale=0.3, size=(lanes, p + 1, 1))
    dataset = open_dataset(X, target=y, chunk_rows=chunk_rows)
    stats = run_chunks(HingeGramPass(TargetRows("classification"), C, Similarity(gamma), w),
                       dataset.chunks())
    Z = np.column_stack([_similarities(X, C, gamma), np.ones(n)])
    return stats, Z, 2.0 * y - 1.0, w


def test_newton_point_and_objective_of_one_lane_are_the_active_rows_ridge():
    stats, Z, t, w = _random_lanes_pass(200, seed=4, p=3, lanes=1, gamma=1.0, chunk_rows=50)
    active = 1.0 - t * (Z @ w[0, :, 0]) > 0
    Za, ta = Z[active], t[active]
    lam = 0.05
    D = np.diag([1.0, 1.0, 1.0, 0.0])
    expected = np.linalg.solve(Za.T @ Za / 200 + lam * D, Za.T @ ta / 200)
    np.testing.assert_allclose(hinge_newton_point(stats, np.array([lam]), w)[0, :, 0],
                               expected, rtol=1e-9)
    slack = np.maximum(1.0 - t * (Z @ w[0, :, 0]), 0.0)
    assert hinge_objective(stats, w, np.array([lam]))[0, 0] == pytest.approx(
        float(slack @ slack) / 200 + lam * float(w[0, :3, 0] @ w[0, :3, 0]), rel=1e-12)


def test_damped_newton_point_and_curvature_are_numpys():
    stats, Z, t, w = _random_lanes_pass(300, seed=14, p=4, lanes=2, gamma=0.7, chunk_rows=64)
    lams, mu = np.array([1e-3, 1e-6]), np.array([[0.2], [0.0]])
    D = np.diag([1.0, 1.0, 1.0, 1.0, 0.0])
    got = hinge_newton_point(stats, lams, w, mu)
    for lane in range(2):
        active = 1.0 - t * (Z @ w[lane, :, 0]) > 0
        Za, ta = Z[active], t[active]
        expected = np.linalg.solve(Za.T @ Za / 300 + (lams[lane] + mu[lane, 0]) * D,
                                   Za.T @ ta / 300 + mu[lane, 0] * D @ w[lane, :, 0])
        np.testing.assert_allclose(got[lane, :, 0], expected, rtol=1e-9)
        assert hinge_curvature(stats)[lane, 0] == pytest.approx(
            np.trace(Za[:, :4].T @ Za[:, :4]) / (4 * 300), rel=1e-12)
    # no damping is the Newton point
    np.testing.assert_allclose(got[1], hinge_newton_point(stats, lams, w)[1], rtol=1e-12)


def test_early_stop_keeps_the_step_of_lowest_held_out_loss_and_its_count_carries_over():
    # few rows, many prototypes, almost no penalty: the held-out loss turns long before the
    # training objective settles
    y, C, train, held, dataset, Z, out = _ring_problem(900, 15, 5, 3, 128)
    engine = LocalEngine(progress=False)
    t = 2.0 * y - 1.0
    w0 = np.linalg.lstsq(Z[~out], t[~out], rcond=None)[0]
    lams = [1e-3, 1e-9]
    fit = driver.hinge_newton(engine, dataset, train, C, Similarity(0.5), w0, lams, 1e-3,
                              held)
    assert not fit.capped
    # the held-out sums and the objective are numpy's at the kept coefficients
    for lane, lam in enumerate(lams):
        w = fit.W[lane, :, 0]
        slack = np.maximum(1.0 - t * (Z @ w), 0.0)
        assert fit.held_out[lane, 0] == pytest.approx(float(slack[out] @ slack[out]),
                                                      rel=1e-9)
        assert fit.objective[lane, 0] == pytest.approx(
            float(slack[~out] @ slack[~out]) / (~out).sum() + lam * float(w[:-1] @ w[:-1]),
            rel=1e-9)
    # the unpenalised lane stopped on its held-out loss, before its objective settled
    assert fit.steps[1, 0] > 0
    converged = driver.hinge_newton(engine, dataset, train, C, Similarity(0.5), w0, lams[1:],
                                    1e-9)
    assert converged.objective[0, 0] < fit.objective[1, 0]
    slack = np.maximum(1.0 - t * (Z @ converged.W[0, :, 0]), 0.0)
    assert float(slack[out] @ slack[out]) > fit.held_out[1, 0]
    # the same number of kept steps without held-out rows walks the same path to them
    again = driver.hinge_newton(engine, dataset, train, C, Similarity(0.5), w0, lams, 1e-3,
                                steps=fit.steps)
    np.testing.assert_allclose(again.W, fit.W, rtol=1e-12)


def _far_blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping classes, a third of one class's rows far on its own side: rows the
    squared loss pulls back to ``f = 1`` and the squared hinge leaves alone."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2)) + np.where(y[:, None] == 1, 1.0, -1.0) * np.array([1.0, 0.0])
    X[(y == 1) & (rng.random(n) < 0.3)] += np.array([4.0, 3.0])
    return X.astype(np.float32), y


def test_refit_lowers_the_squared_hinge_loss_of_new_rows():
    X, y = _far_blobs(3000, seed=5)
    Xt, yt = _far_blobs(4000, seed=6)
    params = dict(n_prototypes=12, max_iter=30, random_state=0)
    squared = SuperSparseClassifier(loss="squared", **params).fit(X, y)
    refit = SuperSparseClassifier(**params).fit(X, y)
    assert squared.loss_ == "squared" and np.isnan(squared.refit_lam_)
    assert refit.loss_ == "squared_hinge"
    assert refit.refit_lam_ > 0 and refit.lam_ == squared.lam_
    np.testing.assert_array_equal(refit.prototypes_, squared.prototypes_)

    def hinge(model: SuperSparseClassifier) -> float:
        return float(np.mean(np.maximum(1.0 - (2 * yt - 1) * model.decision_function(Xt),
                                        0.0) ** 2))

    assert hinge(refit) < hinge(squared)
    assert refit.score(Xt, yt) >= squared.score(Xt, yt) - 0.01
    # the probabilities were calibrated on the refitted scores, not the squared ones
    assert refit.proba_rows_ == "held-out" and refit.proba_scale_ != squared.proba_scale_
    proba = refit.predict_proba(Xt)
    np.testing.assert_array_equal(refit.classes_[proba.argmax(axis=1)], refit.predict(Xt))
    # partial_fit re-solves the squared loss from the beta-step's memory
    refit.partial_fit(Xt[:500], yt[:500])
    assert refit.loss_ == "squared" and np.isnan(refit.refit_lam_)


#: the slopes of :func:`_noisy_plane`'s labels
PLANE = np.random.default_rng(70).normal(size=6)


def _noisy_plane(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    return X, (X @ PLANE + 0.5 * rng.normal(size=n) > 0).astype(np.int64)


def test_a_fit_without_held_out_rows_chooses_its_refit_by_folds(
        monkeypatch: pytest.MonkeyPatch):
    """Too few rows to hold some out (60 in the share): five folds of the rows each score
    the squared-loss coefficients and the refit's lanes of a fit that did not learn from
    them; the lane that hinge_refit's rule keeps on the folds' mean losses is refitted on
    every row, to the minimum of its squared hinge objective (scipy's, on the explicit
    columns)."""
    X, y = _noisy_plane(300, seed=7)
    folds = recorded_refits(monkeypatch, "hinge_refit")
    final = recorded_refits(monkeypatch, "hinge_refit_lane")
    model = SuperSparseClassifier(n_prototypes=6, tol=1e-2, spread_tails=False).fit(X, y)
    assert len(folds) == driver.CROSS_FIT_FOLDS and len(final) == 1
    mean = np.mean([refit.held_out for refit in folds], axis=0)
    lanes = mean[1:]
    assert lanes.min() < (1 - AUTO_LAM_SLACK) * mean[0]
    first = int(np.flatnonzero(lanes <= lanes.min() * (1 + AUTO_LAM_SLACK))[0])
    columns = driver.REFIT_COLUMN_SETS[first // 2]
    assert final[0].lanes == columns and model.loss_ == "squared_hinge"
    assert model.refit_lam_ == pytest.approx(model.lam_ * driver.REFIT_LAM_FACTORS[first % 2])
    z = (X.astype(np.float64) - model.shift_) / model.scale_
    zc = (model.prototypes_ - model.shift_) / model.scale_
    p, d = zc.shape
    Z = np.column_stack([_similarities(z, zc, model.gamma_), z, np.ones(300)])
    cols = np.flatnonzero(driver.column_mask(columns, p, d))
    t = 2.0 * y - 1.0

    def objective(u: np.ndarray) -> tuple[float, np.ndarray]:
        slack = np.maximum(1.0 - t * (Z[:, cols] @ u), 0.0)
        penalty = np.append(u[:-1], 0.0)
        value = float(slack @ slack) / 300 + model.refit_lam_ * float(penalty @ penalty)
        grad = -2.0 * Z[:, cols].T @ (slack * t) / 300 + 2.0 * model.refit_lam_ * penalty
        return value, grad

    ref = minimize(objective, np.zeros(cols.size), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    # the model's decision lies on those columns, at (near) scipy's minimum
    decision = model.decision_function(X)
    u = np.linalg.lstsq(Z[:, cols], decision, rcond=None)[0]
    np.testing.assert_allclose(Z[:, cols] @ u, decision, rtol=1e-6, atol=1e-6)
    assert ref.fun <= objective(u)[0] <= ref.fun * (1 + 1e-3)
    # better on new rows than the squared loss's coefficients, kept before the folds
    squared = SuperSparseClassifier(n_prototypes=6, tol=1e-2, spread_tails=False,
                                    loss="squared").fit(X, y)
    X_new, y_new = _noisy_plane(4000, seed=8)
    assert model.score(X_new, y_new) > squared.score(X_new, y_new) + 0.01


def test_a_given_lam_without_held_out_rows_keeps_the_squared_loss():
    X, y = _rings(300, seed=7)  # 20 % of 300 rows: too few to hold out
    model = SuperSparseClassifier(n_prototypes=6, tol=1e-2, lam=1e-3).fit(X, y)
    same = SuperSparseClassifier(n_prototypes=6, tol=1e-2, lam=1e-3, loss="squared").fit(X, y)
    assert model.loss_ == "squared"
    np.testing.assert_array_equal(model.dual_coef_, same.dual_coef_)


def test_refit_cap_warns(monkeypatch: pytest.MonkeyPatch):
    X, y = _rings(1500, seed=8)
    monkeypatch.setattr(driver, "REFIT_MAX_ITER", 1)
    monkeypatch.setattr(driver, "REFIT_MAX_ITER_SMALL", 1)
    with pytest.warns(ConvergenceWarning, match="squared hinge refit stopped after 1 "):
        SuperSparseClassifier(n_prototypes=6, max_iter=5).fit(X, y)


def test_multiclass_refit_on_sparse_rows_equals_dense_and_round_trips(tmp_path: Path):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.4] = 0.0
    labels = np.digitize(X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.normal(size=1500), [0.0, 1.0])
    params = dict(n_prototypes=9, max_iter=5, standardize=False, spread_tails=False)
    dense = SuperSparseClassifier(**params).fit(X, labels)
    sparse = SuperSparseClassifier(**params).fit(scipy.sparse.csr_matrix(X), labels)
    assert dense.loss_ == sparse.loss_ == "squared_hinge"
    assert dense.refit_lam_ == pytest.approx(sparse.refit_lam_, rel=1e-9)
    np.testing.assert_allclose(sparse.dual_coef_, dense.dual_coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X))
    loaded = SuperSparseClassifier.load(dense.save(tmp_path / "hinge.slm"))
    assert loaded.loss == "auto" and loaded.loss_ == "squared_hinge"
    np.testing.assert_array_equal(loaded.decision_function(X), dense.decision_function(X))
    # a file from before the parameter holds a squared-loss model
    squared = SuperSparseClassifier(loss="squared", **params).fit(X, labels)
    squared.save(tmp_path / "squared.slm")
    old = _rewritten(tmp_path / "squared.slm", tmp_path / "old.slm",
                     lambda h: (h["metadata"]["params"].pop("loss"),
                                h["metadata"]["learned"].pop("loss_"),
                                h["metadata"]["learned"].pop("refit_lam_")))
    before = SuperSparseClassifier.load(old)
    assert before.loss == "squared" and "loss_" not in vars(before)
    np.testing.assert_array_equal(before.decision_function(X), squared.decision_function(X))
    assert before.fit(X, labels).loss_ == "squared"


def test_refit_on_dask_matches_local(dask_client):
    X, y = _rings(1200, seed=10)
    params = dict(n_prototypes=6, max_iter=4, random_state=0, chunk_rows=200)
    local = SuperSparseClassifier(**params).fit(X, y)
    remote = SuperSparseClassifier(**params).fit(X, y, engine=DaskEngine(dask_client))
    assert local.loss_ == remote.loss_ == "squared_hinge"
    assert remote.refit_lam_ == pytest.approx(local.refit_lam_, rel=1e-9)
    np.testing.assert_allclose(remote.dual_coef_, local.dual_coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
    # with the linear part's columns (the standardised features) beside the similarities
    local = SuperSparseClassifier(linear_part=True, **params).fit(X, y)
    remote = SuperSparseClassifier(linear_part=True, **params).fit(
        X, y, engine=DaskEngine(dask_client))
    assert local.linear_part_ and remote.linear_part_
    np.testing.assert_allclose(remote.linear_coef_, local.linear_coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(remote.dual_coef_, local.dual_coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
