"""PEGASOS over chunks with on-the-fly embedding against a plain numpy PEGASOS."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import block_diag

from streamlearn.features import BSplineMap, FourierMap, HermiteMap, difference_matrix
from streamlearn.solvers.embedding import embedding_params, weights_from_w_d
from streamlearn.solvers.pegasos import NO_AVERAGING, pegasos_chunk, pegasos_ovr_chunk


def pegasos_reference(Z, y, weight, lam, bias_scale, w, avg, t, average_start):
    """Textbook PEGASOS (one row per step, no projection) on materialised features; a row
    of weight ``c > 1`` steps by ``c`` plain steps or to its hinge, whichever is shorter,
    but not by less than one plain step."""
    Zb = np.hstack([Z.astype(np.float64), np.full((Z.shape[0], 1), bias_scale)])
    w = w.astype(np.float64).copy()
    total = avg * max(0, t - average_start + 1)
    for r in range(Zb.shape[0]):
        t += 1
        eta = 1.0 / (lam * t)
        violated = y[r] * (w @ Zb[r]) < 1.0
        w *= 1.0 - 1.0 / t
        if violated:
            c = float(weight[r])
            if c > 1.0:
                to_hinge = (1.0 - y[r] * (w @ Zb[r])) / (eta * (Zb[r] @ Zb[r]))
                c = min(c, max(1.0, to_hinge))
            w += eta * c * y[r] * Zb[r]
        if t >= average_start:
            total = total + w
    n_avg = t - average_start + 1
    return w, (total / n_avg if n_avg > 0 else avg), t


def make_problem(n: int, n_features: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, n_features)).astype(np.float32)
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.4 + 0.3 * rng.normal(size=n)
    y = np.where(f > 0, 1.0, -1.0).astype(np.float32)
    weight = rng.integers(1, 4, size=n).astype(np.float32)
    return X, y, weight


def run_online(X, y, weight, m, lam, bias_scale, average_start, chunk_rows):
    emb = embedding_params(m, X.shape[1])
    w_d = np.zeros(emb.n_dims + 1)
    avg = np.zeros_like(w_d)
    t = 0
    for s in range(0, X.shape[0], chunk_rows):
        sl = slice(s, s + chunk_rows)
        t = pegasos_chunk(X[sl], y[sl], weight[sl], lam, bias_scale, w_d, avg, t,
                          average_start, *emb)
    return weights_from_w_d(w_d, emb.ipar), weights_from_w_d(avg, emb.ipar), t


def test_online_bspline_equals_pegasos_on_materialised_transform():
    """The online and precomputed modes give the same weights (B-spline deg 3, D1, 10 bases)."""
    X, y, weight = make_problem(900)
    m = BSplineMap(3, 10, 1).fit(-np.ones(3), np.ones(3))
    lam, bias_scale, start = 1e-2, 1.0, 300
    w, avg, t = run_online(X, y, weight, m, lam, bias_scale, start, chunk_rows=250)
    zeros = np.zeros(m.n_output_features(3) + 1)
    w_ref, avg_ref, t_ref = pegasos_reference(m.transform(X), y, weight, lam, bias_scale,
                                              zeros, zeros, 0, start)
    assert t == t_ref == 900
    scale = np.abs(w_ref).max()
    np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(avg, avg_ref, rtol=1e-5, atol=1e-5 * scale)
    # the averaged model is not trivial: it fits the training data better than a constant
    # (0.53 of the rows are of one label)
    Zb = np.hstack([m.transform(X), np.ones((900, 1), np.float32)])
    assert np.mean(np.sign(Zb @ avg) == y) > 0.8


MAPS = [
    None,
    BSplineMap(1, 20, 0).fit(-np.ones(3), np.ones(3)),
    BSplineMap(2, 8, 2, zero_preserving=True).fit(np.zeros(3), np.ones(3)),
    FourierMap(3, 1).fit(-np.ones(3), np.ones(3)),
    FourierMap(4, 2, zero_preserving=True).fit(-np.ones(3), np.ones(3)),
    HermiteMap(3, 2, clip=3.0).fit(np.zeros(3), np.full(3, 0.6)),
    HermiteMap(3, 1, zero_preserving=True).fit(np.zeros(3), np.full(3, 0.6)),
]


@pytest.mark.parametrize("m", MAPS, ids=repr)
def test_every_kind_matches_reference_with_warm_start(m):
    X, y, weight = make_problem(500, seed=1)
    if isinstance(m, BSplineMap) and m.zero_preserving:
        X = np.abs(X)
    emb = embedding_params(m, 3)
    Z = X if m is None else m.transform(X)
    rng = np.random.default_rng(2)
    lam, bias_scale, t0, start = 0.05, 0.5, 40, 100
    w0 = rng.normal(size=emb.n_dims + 1) * 0.1
    avg0 = rng.normal(size=emb.n_dims + 1) * 0.1
    w_ref, avg_ref, _ = pegasos_reference(Z, y, weight, lam, bias_scale, w0, avg0, t0, start)
    # the kernels take w_d = D^-1 w (bias entry unchanged)
    d = block_diag(*[difference_matrix(emb.n_cols, emb.order)] * 3, [[1.0]])
    w_d, avg = np.linalg.solve(d, w0), np.linalg.solve(d, avg0)
    t = t0
    for s in (0, 130, 260, 390):
        t = pegasos_chunk(X[s:s + 130], y[s:s + 130], weight[s:s + 130], lam, bias_scale,
                          w_d, avg, t, start, *emb)
    assert t == t0 + 500
    np.testing.assert_allclose(weights_from_w_d(w_d, emb.ipar), w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights_from_w_d(avg, emb.ipar), avg_ref, rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("m", [FourierMap(3, 1).fit(-np.ones(3), np.ones(3)),
                               HermiteMap(3, 2, clip=3.0).fit(np.zeros(3), np.full(3, 0.6))],
                         ids=repr)
def test_term_major_deferred_steps_match_reference_per_model(m):
    """Term-major kernels take a row's step in the sweep that scores the next row. One-vs-one
    models of three classes skip the rows of the third class (a pending step is then taken
    on its own), the first step renormalises the lazy scale, averaging starts inside a
    chunk, and chunks end with steps pending; each model against the textbook PEGASOS of
    its rows, the others weighing 0."""
    X, _, weight = make_problem(400, seed=5)
    codes = np.random.default_rng(6).integers(0, 3, size=400).astype(np.int32)
    positive = np.array([0, 0, 1], dtype=np.int32)
    negative = np.array([1, 2, 2], dtype=np.int32)
    emb = embedding_params(m, 3)
    lam, bias_scale, start = 0.05, 0.5, 170
    W = np.zeros((3, emb.n_dims + 1))
    AVG = np.zeros_like(W)
    t = 0
    for s in (0, 150, 300):
        t = pegasos_ovr_chunk(X[s:s + 150], codes[s:s + 150], positive, negative,
                              weight[s:s + 150], lam, bias_scale, W, AVG, t, start, *emb)
    assert t == 400
    zeros = np.zeros(emb.n_dims + 1)
    for j in range(3):
        member = (codes == positive[j]) | (codes == negative[j])
        y = np.where(codes == positive[j], 1.0, -1.0).astype(np.float32)
        w_ref, avg_ref, _ = pegasos_reference(m.transform(X), y, weight * member, lam,
                                              bias_scale, zeros, zeros, 0, start)
        np.testing.assert_allclose(weights_from_w_d(W[j], emb.ipar), w_ref, rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(weights_from_w_d(AVG[j], emb.ipar), avg_ref, rtol=1e-5,
                                   atol=1e-6)
        assert np.abs(avg_ref).max() > 0.1  # the models moved

def test_averaging_not_reached_leaves_avg_untouched_and_weight_zero_rows_only_shrink():
    X, y, _ = make_problem(50, seed=3)
    emb = embedding_params(None, 3)
    w_d = np.array([0.3, -0.2, 0.1, 0.05])
    avg = np.full(4, 7.0)
    t = pegasos_chunk(X, y, np.zeros(50, np.float32), 0.1, 1.0, w_d, avg, 10, 100, *emb)
    assert t == 60
    np.testing.assert_array_equal(avg, 7.0)
    # the shrinks telescope: prod_{k=11}^{60} (1 - 1/k) = 10 / 60
    np.testing.assert_allclose(w_d, np.array([0.3, -0.2, 0.1, 0.05]) * 10 / 60, rtol=1e-12)


def test_first_step_resets_and_lazy_scale_renormalises():
    """A chunk long enough for the lazy scale to drop below its floor equals short chunks."""
    n = 1_100_000
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y = y.astype(np.float32)
    weight = np.ones(n, np.float32)
    emb = embedding_params(None, 2)
    results = []
    for chunk_rows in (n, 100_000):
        w_d = np.full(3, 5.0)  # forgotten at t = 1, where 1 - eta * lam = 0
        avg = np.zeros(3)
        t = 0
        for s in range(0, n, chunk_rows):
            t = pegasos_chunk(X[s:s + chunk_rows], y[s:s + chunk_rows], weight[s:s + chunk_rows],
                              1e-3, 1.0, w_d, avg, t, 1000, *emb)
        results.append((w_d, avg))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-9)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9)
    # a prefix against the reference: the initial weights are gone after the first step
    w_d = np.full(3, 5.0)
    avg = np.zeros(3)
    pegasos_chunk(X[:300], y[:300], weight[:300], 1e-3, 1.0, w_d, avg, 0, NO_AVERAGING, *emb)
    w_ref, _, _ = pegasos_reference(X[:300], y[:300], weight[:300], 1e-3, 1.0, np.zeros(3),
                                    np.zeros(3), 0, NO_AVERAGING)
    np.testing.assert_allclose(w_d, w_ref, rtol=1e-7, atol=1e-5)



@pytest.mark.parametrize("m", [None, BSplineMap(3, 10, 1).fit(-np.ones(3), np.ones(3)),
                               FourierMap(3, 1).fit(-np.ones(3), np.ones(3))], ids=repr)
@pytest.mark.parametrize("t", [1, 200])
def test_a_heavy_row_steps_to_its_hinge_and_no_further(m, t):
    # from w = 0 a row's step moves its margin by eta c ||z||^2 (z the materialised row and
    # the bias feature). A weight c > 1 goes as far as its c plain steps or to the hinge
    # (margin 1), whichever is nearer, and never less far than one plain step; a weight
    # of at most 1 takes the plain step, past the hinge or not
    x = np.array([[0.9, -0.8, 0.7]], np.float32)
    emb = embedding_params(m, 3)
    z = np.append(x[0] if m is None else m.transform(x)[0], 0.5).astype(np.float64)
    lam = 1.0  # eta = 1 / (t + 1)
    plain = (z @ z) / (t + 1)
    for c in (0.5, 1.0, 1.5, 3.0, 5000.0):
        w_d, avg = np.zeros(emb.n_dims + 1), np.zeros(emb.n_dims + 1)
        pegasos_chunk(x, np.ones(1, np.float32), np.array([c], np.float32), lam, 0.5, w_d,
                      avg, t, NO_AVERAGING, *emb)
        margin = c * plain if c <= 1.0 else min(c * plain, max(plain, 1.0))
        assert weights_from_w_d(w_d, emb.ipar) @ z == pytest.approx(margin, rel=1e-6)
