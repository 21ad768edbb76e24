"""Dual coordinate descent over chunks against a numpy reference and liblinear."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.linalg import block_diag
from sklearn.svm import LinearSVC

from streamlearn.data.chunk import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.features import BSplineMap, FourierMap, HermiteMap, difference_matrix
from streamlearn.solvers.dcd import (
    HINGE,
    LOSSES,
    SQUARED_HINGE,
    dcd_chunk,
    primal_loss_chunk,
    primal_objective,
    row_orders,
)
from streamlearn.solvers.embedding import embedding_params, model_sq_norm, weights_from_w_d


def make_problem(n: int, n_features: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 + 0.3 * X[:, 2] * X[:, 3]
    y = np.where(f + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0).astype(np.float32)
    return X, y


def spline_map(X: np.ndarray, order: int = 1) -> BSplineMap:
    return BSplineMap(3, 10, order).fit(X.min(axis=0), X.max(axis=0))


def d_matrix(emb) -> np.ndarray:
    """Dense block-diagonal D_d (w = D_d w_d) with a unit entry for the bias weight."""
    return block_diag(*[difference_matrix(emb.n_cols, emb.order)] * emb.n_features, [[1.0]])


def dcd_reference(Z, y, c, alpha, w, loss, bias_scale, orders):
    """Hsieh et al. (2008), Algorithm 1, on materialised features with a bias column."""
    Zb = np.hstack([Z.astype(np.float64), np.full((Z.shape[0], 1), bias_scale)])
    alpha = alpha.astype(np.float64)
    w = w.copy()
    qd = (Zb * Zb).sum(axis=1)
    first = []
    for sweep, order in enumerate(orders):
        for i in order:
            if c[i] <= 0:
                continue
            upper, diag = (c[i], 0.0) if loss == "hinge" else (np.inf, 0.5 / c[i])
            g = y[i] * (w @ Zb[i]) - 1.0 + diag * alpha[i]
            pg = min(g, 0.0) if alpha[i] == 0 else (max(g, 0.0) if alpha[i] >= upper else g)
            if sweep == 0:
                first.append(pg)
            if abs(pg) > 1e-12:
                new = min(max(alpha[i] - g / (qd[i] + diag), 0.0), upper)
                w += (new - alpha[i]) * y[i] * Zb[i]
                alpha[i] = new
    return alpha, w, max(first), min(first)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("embedding", ["linear", "bspline_d1", "fourier", "hermite"])
def test_dcd_chunk_equals_reference_sweeps(loss, embedding):
    # the trigonometric and Hermite maps run their rows in term-major order (dcd_ovr_chunk
    # permutes the model for the kernel and back), the others in the map's order
    X, y = make_problem(150, seed=1)
    m = {"linear": None, "bspline_d1": spline_map(X),
         "fourier": FourierMap(3, 1).fit(X.min(axis=0), X.max(axis=0)),
         "hermite": HermiteMap(4, 1, clip=3.0).fit(X.mean(axis=0), X.std(axis=0))
         }[embedding]
    emb = embedding_params(m, 4)
    Z = X if m is None else m.transform(X)
    rng = np.random.default_rng(2)
    c = 0.3 * rng.integers(0, 3, size=150).astype(np.float64)  # some rows weigh 0
    bias_scale, n_inner, seed = 0.7, 3, 11
    # warm start: alpha from an earlier pass, w_d consistent with it
    alpha0 = np.where(c > 0, rng.uniform(0, 0.3, 150), 0.0).astype(np.float32)
    w0 = (alpha0 * y) @ np.hstack([Z, np.full((150, 1), bias_scale)]).astype(np.float64)
    orders = row_orders(150, n_inner, seed)
    a_ref, w_ref, pg_max_ref, pg_min_ref = dcd_reference(Z, y, c, alpha0, w0, loss, bias_scale,
                                                         orders)
    alpha = alpha0.copy()
    w_d = np.linalg.solve(d_matrix(emb), w0)  # the kernel keeps w_d = D^-1 w
    pg_max, pg_min, alpha_sum, dual_quad = dcd_chunk(
        X, y, c, alpha, w_d, LOSSES[loss], bias_scale, n_inner, seed, *emb
    )
    np.testing.assert_allclose(alpha, a_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights_from_w_d(w_d, emb.ipar), w_ref, rtol=1e-5, atol=1e-5)
    assert alpha[c == 0].max() == 0.0
    np.testing.assert_allclose([pg_max, pg_min], [pg_max_ref, pg_min_ref], rtol=1e-5)
    np.testing.assert_allclose(alpha_sum, a_ref.sum(), rtol=1e-6)
    expected_quad = 0.0 if loss == "hinge" else (a_ref[c > 0] ** 2 / (4 * c[c > 0])).sum()
    np.testing.assert_allclose(dual_quad, expected_quad, rtol=1e-5)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("fourier", [False, True], ids=["bspline_d2", "fourier"])
def test_dcd_monitor_sums_the_primal_loss_of_a_frozen_model(loss, fourier):
    from streamlearn.solvers.dcd import dcd_ovr_chunk
    from streamlearn.solvers.ovr import one_model

    X, y = make_problem(120, seed=4)
    # (degree 2 with D2: a kernel other tests compile too; the cubic one has D1 elsewhere)
    m = (FourierMap(4, 2).fit(X.min(axis=0), X.max(axis=0)) if fourier
         else BSplineMap(2, 10, 2).fit(X.min(axis=0), X.max(axis=0)))
    emb = embedding_params(m, 4)
    Z = np.hstack([m.transform(X).astype(np.float64), np.full((120, 1), 0.7)])
    rng = np.random.default_rng(5)
    c = 0.4 * rng.integers(0, 3, size=120).astype(np.float64)
    frozen_w = rng.normal(scale=0.3, size=Z.shape[1])  # in w form
    frozen_d = np.linalg.solve(d_matrix(emb), frozen_w)[np.newaxis, :]
    # numpy: sum_i C_i loss(y_i w . z_i) on the materialised embedding
    v = np.maximum(0.0, 1.0 - y * (Z @ frozen_w))
    expected = np.sum(c * (v if loss == "hinge" else v * v))
    codes, positive, negative = one_model(y)
    W = np.zeros((1, Z.shape[1]))
    alpha = np.zeros((120, 1), np.float32)
    summed = np.zeros(1)
    dcd_ovr_chunk(X, codes, positive, negative, c, alpha, W, LOSSES[loss], 0.7, 2, 3, *emb,
                  frozen_d, summed)
    np.testing.assert_allclose(summed[0], expected, rtol=1e-5)
    # the other kernel that scores a chunk agrees
    loss_code = LOSSES[loss]
    np.testing.assert_allclose(
        summed[0], primal_loss_chunk(X, y, c, frozen_d[0], loss_code, 0.7, *emb), rtol=1e-9)
    # the monitor leaves the training arithmetic alone
    W2, alpha2 = np.zeros_like(W), np.zeros_like(alpha)
    dcd_ovr_chunk(X, codes, positive, negative, c, alpha2, W2, LOSSES[loss], 0.7, 2, 3, *emb)
    np.testing.assert_array_equal(W, W2)
    np.testing.assert_array_equal(alpha, alpha2)


def test_empty_chunk_and_zero_sweeps_change_nothing():
    emb = embedding_params(None, 3)
    w_d = np.ones(4)
    X = np.ones((5, 3), np.float32)
    y = np.ones(5, np.float32)
    alpha = np.zeros(5, np.float32)
    res = dcd_chunk(X[:0], y[:0], np.ones(0), alpha[:0], w_d, HINGE, 1.0, 2, 0, *emb)
    assert res == (-np.inf, np.inf, 0.0, 0.0)
    res = dcd_chunk(X, y, np.ones(5), alpha, w_d, HINGE, 1.0, 0, 0, *emb)
    assert res[:2] == (-np.inf, np.inf)
    np.testing.assert_array_equal(w_d, 1.0)


def test_row_orders_are_seeded_permutations():
    a = row_orders(50, 3, 7)
    assert a.shape == (3, 50)
    for row in a:
        np.testing.assert_array_equal(np.sort(row), np.arange(50))
    assert not np.array_equal(a[0], a[1])
    np.testing.assert_array_equal(a, row_orders(50, 3, 7))
    assert not np.array_equal(a, row_orders(50, 3, 8))


def fit_blocks(X, y, c, emb, loss, *, n_chunks=4, n_inner=2, max_epochs=1000, gap_tol=2e-4,
               bias_scale=1.0, seed=0):
    """Block minimisation over chunks with alpha in an ExampleState; stops on the duality gap."""
    n = X.shape[0]
    bounds = np.linspace(0, n, n_chunks + 1).astype(int)
    chunks = [Chunk(X[a:b], y[a:b], start=int(a)) for a, b in itertools.pairwise(bounds)]
    w_d = np.zeros(emb.n_dims + 1)
    rng = np.random.default_rng(seed)
    with ExampleState(n) as state:
        for epoch in range(max_epochs):
            alpha_sum = dual_quad = 0.0
            for k in rng.permutation(n_chunks):
                ch = chunks[k]
                alpha = state.get(ch)
                cc = c[ch.rows]
                res = dcd_chunk(ch.X, ch.y, cc, alpha, w_d, LOSSES[loss], bias_scale, n_inner,
                                epoch * n_chunks + int(k), *emb)
                state.put(ch, alpha)
                alpha_sum += res[2]
                dual_quad += res[3]
            w_sq = model_sq_norm(w_d, emb.ipar) + w_d[-1] ** 2
            primal = 0.5 * w_sq + sum(
                primal_loss_chunk(ch.X, ch.y, c[ch.rows], w_d, LOSSES[loss], bias_scale, *emb)
                for ch in chunks
            )
            dual = alpha_sum - dual_quad - 0.5 * w_sq
            assert primal >= dual - 1e-6 * abs(primal)
            if primal - dual <= gap_tol * primal:
                break
        alpha = state.to_numpy()
    return w_d, alpha, primal, epoch


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_block_minimisation_reaches_liblinear_objective(loss):
    X, y = make_problem(2000)
    Z = spline_map(X).transform(X)
    C = 0.02
    svc = LinearSVC(loss=loss, dual=True, C=C, fit_intercept=True, intercept_scaling=1,
                    tol=1e-6, max_iter=1_000_000).fit(Z, y)
    # liblinear's intercept is the weight of a regularised constant feature (value 1)
    p_ref = primal_objective(Z, y, svc.coef_[0], svc.intercept_[0], C, loss)
    emb = embedding_params(None, Z.shape[1])
    w_d, alpha, primal, epoch = fit_blocks(Z, y, np.full(2000, C), emb, loss)
    assert epoch < 999
    assert abs(primal - p_ref) <= 1e-3 * p_ref
    # the streamed objective is the materialised one, and w = sum_i y_i alpha_i z_i
    assert primal == pytest.approx(primal_objective(Z, y, w_d[:-1], w_d[-1], C, loss), rel=1e-9)
    Zb = np.hstack([Z, np.ones((2000, 1), np.float32)]).astype(np.float64)
    np.testing.assert_allclose((alpha * y) @ Zb, w_d, rtol=1e-6, atol=1e-8)
    if loss == "hinge":
        assert alpha.min() >= 0.0 and alpha.max() <= np.float32(C)


def test_online_bspline_equals_dcd_on_materialised_transform():
    X, y = make_problem(1200, seed=3)
    m = spline_map(X)
    c = np.full(1200, 0.05)
    online = embedding_params(m)
    w_d, _, primal, _ = fit_blocks(X, y, c, online, "squared_hinge", max_epochs=25,
                                   gap_tol=0.0, n_chunks=3)
    Z = m.transform(X)
    w_ref, _, primal_ref, _ = fit_blocks(Z, y, c, embedding_params(None, Z.shape[1]),
                                         "squared_hinge", max_epochs=25, gap_tol=0.0, n_chunks=3)
    assert primal == pytest.approx(primal_ref, rel=1e-6)
    w = weights_from_w_d(w_d, online.ipar)
    np.testing.assert_allclose(w, w_ref, rtol=1e-4, atol=1e-4 * np.abs(w_ref).max())
    assert primal == pytest.approx(primal_objective(Z, y, w[:-1], w[-1], 0.05, "squared_hinge"),
                                   rel=1e-6)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_integer_weights_equal_repeated_rows(loss):
    X, y = make_problem(600, seed=4)
    m = BSplineMap(2, 8, 0).fit(X.min(axis=0), X.max(axis=0))
    emb = embedding_params(m)
    C = 0.1
    weight = np.random.default_rng(5).integers(1, 4, size=600)
    w_d, _, _, epoch = fit_blocks(X, y, C * weight.astype(np.float64), emb, loss, gap_tol=1e-4)
    Xr, yr = np.repeat(X, weight, axis=0), np.repeat(y, weight)
    w_rep, _, _, epoch_rep = fit_blocks(Xr, yr, np.full(Xr.shape[0], C), emb, loss,
                                        gap_tol=1e-4)
    assert max(epoch, epoch_rep) < 999
    Z = m.transform(X)

    def objective(w_d):
        w = weights_from_w_d(w_d, emb.ipar)
        return primal_objective(Z, y, w[:-1], w[-1], C, loss, sample_weight=weight)

    assert objective(w_d) == pytest.approx(objective(w_rep), rel=1e-3)


def test_primal_loss_chunk_matches_numpy():
    X, y = make_problem(300, seed=6)
    m = spline_map(X, order=2)
    emb = embedding_params(m)
    rng = np.random.default_rng(7)
    w_d = rng.normal(size=emb.n_dims + 1) * 0.2
    c = rng.uniform(0.5, 2.0, size=300)
    w = weights_from_w_d(w_d, emb.ipar)
    Z = m.transform(X)
    for loss, code in (("hinge", HINGE), ("squared_hinge", SQUARED_HINGE)):
        got = primal_loss_chunk(X, y, c, w_d, code, 0.5, *emb)
        scores = Z.astype(np.float64) @ w[:-1] + 0.5 * w[-1]
        m_ = np.maximum(0.0, 1.0 - y * scores)
        expected = (c * (m_ if loss == "hinge" else m_**2)).sum()
        assert got == pytest.approx(expected, rel=1e-5)
        full = primal_objective(Z, y, w[:-1], w[-1], 1.0, loss, bias_scale=0.5, sample_weight=c)
        assert full == pytest.approx(0.5 * (w @ w) + expected, rel=1e-5)
    with pytest.raises(ValueError, match="loss"):
        primal_objective(Z, y, w[:-1], w[-1], 1.0, "log")


# ------------------------------------------------------------------ centred rows
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_centred_sweeps_equal_sweeps_over_centred_rows(loss):
    # dcd on rows x with centre mu is dcd on the rows x - mu, then its intercept takes
    # - w . mu: same dual variables, same weights, same scores of every row
    X, y = make_problem(400, seed=8)
    X = X + np.float32(3.0)  # rows far from the origin: a near-constant block in the kernel
    emb = embedding_params(None, X.shape[1])
    mu = np.zeros(X.shape[1] + 1)
    mu[:-1] = X.astype(np.float64).mean(axis=0)
    c, bias = np.full(400, 0.3), 0.7
    alpha, w_d = np.zeros(400, np.float32), np.zeros(X.shape[1] + 1)
    alpha_ref, w_ref = alpha.copy(), w_d.copy()
    Xc = (X.astype(np.float64) - mu[:-1]).astype(np.float32)
    for sweep in range(3):
        out = dcd_chunk(X, y, c, alpha, w_d, LOSSES[loss], bias, 2, sweep, *emb, centre=mu)
        ref = dcd_chunk(Xc, y, c, alpha_ref, w_ref, LOSSES[loss], bias, 2, sweep, *emb)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(alpha, alpha_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w_d[:-1], w_ref[:-1], rtol=1e-5, atol=1e-6)
        # the same scores: w . x + b_own = w . (x - mu) + b_centred
        np.testing.assert_allclose(X @ w_d[:-1] + bias * w_d[-1],
                                   Xc @ w_ref[:-1] + bias * w_ref[-1], rtol=1e-5, atol=1e-5)


def test_mean_embedding_is_the_mean_of_the_materialised_rows():
    from streamlearn.data.sparse_rows import SparseRows
    from streamlearn.solvers.dcd import mean_embedding

    X, _ = make_problem(300, seed=9)
    X = np.abs(X)
    for order in (0, 1, 2):
        for zero_preserving in (False, True):
            m = BSplineMap(2, 7, order, zero_preserving).fit(np.zeros(4), X.max(axis=0))
            emb = embedding_params(m)
            mu_d = mean_embedding(X, *emb)
            # w = D_d w_d: in w the mean of the materialised rows Psi_d(x)
            np.testing.assert_allclose(d_matrix(emb) @ mu_d,
                                       np.append(m.transform(X).mean(axis=0), 0.0),
                                       rtol=1e-6, atol=1e-9)
            if zero_preserving:
                X0 = X.copy()
                X0[X0 < 0.5] = 0.0
                sparse_emb = embedding_params(m, 4)
                np.testing.assert_allclose(
                    mean_embedding(SparseRows.from_scipy(__import__("scipy").sparse.csr_array(X0)),
                                   *sparse_emb),
                    mean_embedding(X0, *emb), rtol=1e-9, atol=1e-12)


def test_centred_bspline_sweeps_reach_liblinear_on_the_centred_embedding():
    # centring changes only the intercept's penalty: the optimum of
    # 1/2 (||w||^2 + b_c^2) + C sum loss(y (w . (z - mu) + b_c)), which liblinear finds on
    # the materialised centred rows
    X, y = make_problem(1500, seed=10)
    m = spline_map(X, order=1)
    emb = embedding_params(m)
    from streamlearn.solvers.dcd import mean_embedding

    mu_d = mean_embedding(X, *emb)
    C = 0.05
    w_d = np.zeros(emb.n_dims + 1)
    alpha = np.zeros(1500, np.float32)
    for epoch in range(300):
        pg_max, pg_min, _, _ = dcd_chunk(X, y, np.full(1500, C), alpha, w_d, HINGE, 1.0, 1,
                                         epoch, *emb, centre=mu_d)
        if pg_max - pg_min < 1e-5:
            break
    assert epoch < 299
    Z = m.transform(X).astype(np.float64)
    mu = Z.mean(axis=0)
    svc = LinearSVC(loss="hinge", dual=True, C=C, intercept_scaling=1, tol=1e-9,
                    max_iter=10**7).fit(Z - mu, y)
    w = weights_from_w_d(w_d, emb.ipar)
    b_centred = w[-1] + w[:-1] @ mu  # back to the centred rows' intercept
    ours = primal_objective(Z - mu, y, w[:-1], b_centred, C, "hinge")
    ref = primal_objective(Z - mu, y, svc.coef_[0], svc.intercept_[0], C, "hinge")
    assert ours == pytest.approx(ref, rel=1e-4)
    np.testing.assert_allclose(Z @ w[:-1] + w[-1], (Z - mu) @ svc.coef_[0] + svc.intercept_[0],
                               atol=2e-3 * np.abs(Z @ w[:-1]).max())
