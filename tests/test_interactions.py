"""Pair terms of AdditiveSVC: the tensor-product embedding, FAST screening, the model."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from streamlearn.engine import LocalEngine
from streamlearn.errors import SchemaError
from streamlearn.features import BSplineMap, BSplinePairMap
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import AdditiveSVC
from streamlearn.solvers.additive.driver import (
    PAIR_GAIN_PER_COST,
    STRONG_PAIR_SCORE,
    pairs_pay,
    strong_pairs,
)
from streamlearn.solvers.additive.interactions import (
    NUMPY_BIN_ENTRIES,
    NUMPY_CELL_PAIRS,
    NUMPY_GAIN_ENTRIES,
    add_cell_sums,
    bin_chunk,
    bin_edges,
    bin_rows,
    bin_sums,
    candidate_features,
    common_bins,
    complete_cells,
    fast_gains,
    fast_gains_kernel,
    off_common_cell_sums,
)
from streamlearn.solvers.additive.interactions import fast_gains_numpy as library_gains_numpy
from streamlearn.solvers.embedding import (
    BSPLINE,
    decision_ovr_chunk,
    embedding_params,
    encode_row,
    row_sq_norm,
)
from tests.conftest import killing_engine


def _hats(x: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
    """Degree-1 B-spline bases on ``n`` uniform knots, by interpolation of unit vectors."""
    knots = np.linspace(lo, hi, n)
    return np.stack([np.interp(x, knots, np.eye(n)[j]) for j in range(n)], axis=1)


def _planted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Six features; a label driven by two main effects and the pairs (2, 3) and (4, 5)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    f = (np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 2 * X[:, 2] * X[:, 3]
         - 1.5 * np.sign(X[:, 4] * X[:, 5]))
    return X, (f + 0.3 * rng.normal(size=n) > 0.3).astype(np.int64)


# -- the embedding -----------------------------------------------------------------------
def test_pair_columns_are_the_tensor_product_of_two_hat_bases() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 3, (50, 3)).astype(np.float32)
    X[0] = [-5, 9, 0.5]  # clamped to the ranges
    fmap = BSplinePairMap(degree=3, n_bases=7, penalty_order=1, interactions=[(2, 0), (1, 2)],
                          pair_bases=4).fit([-2, -2, -2], [3, 3, 3])
    Z = fmap.transform(X)
    main = BSplineMap(degree=3, n_bases=7, penalty_order=1).fit([-2] * 3, [3] * 3)
    np.testing.assert_allclose(Z[:, :21], main.transform(X), atol=1e-6)
    clipped = np.clip(X.astype(np.float64), -2, 3)
    for p, (f, g) in enumerate([(0, 2), (1, 2)]):  # stored with f < g
        ref = (_hats(clipped[:, f], -2, 3, 4)[:, :, None]
               * _hats(clipped[:, g], -2, 3, 4)[:, None, :]).reshape(50, 16)
        np.testing.assert_allclose(Z[:, 21 + 16 * p: 21 + 16 * (p + 1)], ref, atol=1e-6)
    assert fmap.interactions == ((0, 2), (1, 2))


def test_on_the_fly_encoding_scores_and_norms_match_the_materialised_embedding() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4)).astype(np.float32)
    fmap = BSplinePairMap(degree=2, n_bases=6, penalty_order=2, interactions=[(0, 3), (1, 2)],
                          pair_bases=5).fit(X.min(0), X.max(0))
    emb = embedding_params(fmap)
    assert emb.kind == BSPLINE and emb.n_dims == 4 * 6 + 2 * 25
    Z = fmap.transform(X).astype(np.float64)
    W = rng.normal(size=(3, emb.n_dims + 1))
    # the kernels hold w_d = D_d^-1 w on the feature blocks, w on the pair blocks
    W_d = W.copy()
    blocks = W_d[:, :24].reshape(3, 4, 6)
    for _ in range(2):
        np.cumsum(blocks, axis=2, out=blocks)
    scores = decision_ovr_chunk(X, W_d, 0.5, *emb)
    np.testing.assert_allclose(scores, Z @ W[:, :-1].T + 0.5 * W[:, -1], rtol=1e-5, atol=1e-6)
    idx = np.empty(emb.max_nnz, dtype=np.int32)
    val = np.empty(emb.max_nnz, dtype=np.float32)
    nnz = encode_row(emb.kind, X[0], emb.ipar, emb.fpar, idx, val)
    assert nnz == 4 * 3 + 2 * 4 and np.all(np.diff(idx[:nnz]) > 0)
    scratch = np.empty(6)
    for r in range(5):
        norm = row_sq_norm(emb.kind, X[r], emb.ipar, emb.fpar, idx, val, scratch)
        assert norm == pytest.approx(float(Z[r] @ Z[r]), rel=1e-5)
    # the squared norms summed with the pair columns left unmaterialised (a pair's block
    # norm is the product of its features' hat norms), rows out of range clamped
    main = BSplineMap(degree=2, n_bases=6, penalty_order=2).fit(X.min(0), X.max(0))
    X[0] = [9.0, -9.0, 0.0, 9.0]
    Z = fmap.transform(X).astype(np.float64)
    assert fmap.sum_sq_norms(X) == pytest.approx(float((Z * Z).sum()), rel=1e-6)
    assert main.sum_sq_norms(X) == pytest.approx(float((Z[:, :24] ** 2).sum()), rel=1e-6)


def test_a_categorical_axis_has_a_node_per_category() -> None:
    from streamlearn.features.pair_terms import MAX_CATEGORY_NODES

    rng = np.random.default_rng(3)
    k, many = 5, MAX_CATEGORY_NODES  # codes 0 .. k - 1, and k for an unseen category
    X = np.column_stack([rng.uniform(-1, 1, 60), rng.integers(0, k, 60),
                         rng.integers(0, many, 60), rng.uniform(-1, 1, 60)]).astype(np.float32)
    X[0, 1] = k  # a category unseen in fit
    fmap = BSplinePairMap(degree=1, n_bases=6, interactions=[(0, 1), (1, 3), (2, 3)],
                          pair_bases=4).fit([-1, 0, 0, -1], [1, k - 1, many - 1, 1])
    fmap.set_category_axes({1: k, 2: many})  # 64 categories: over the cap, a uniform grid
    np.testing.assert_array_equal(fmap.axis_nodes_, [4, k + 1, 4, 4])
    emb = embedding_params(fmap)
    assert emb.n_dims == 4 * 6 + 4 * (k + 1) + (k + 1) * 4 + 16
    Z = fmap.transform(X).astype(np.float64)
    onehot = np.eye(k + 1)[X[:, 1].astype(int)]
    x0, x2, x3 = _hats(X[:, 0], -1, 1, 4), _hats(X[:, 2], 0, many - 1, 4), _hats(X[:, 3], -1,
                                                                              1, 4)
    reference = np.hstack([np.einsum("ni,nj->nij", x0, onehot).reshape(60, -1),
                           np.einsum("ni,nj->nij", onehot, x3).reshape(60, -1),
                           np.einsum("ni,nj->nij", x2, x3).reshape(60, -1)])
    np.testing.assert_allclose(Z[:, 24:], reference, atol=1e-6)
    # on the fly: the same columns, scores and norms
    W = rng.normal(size=(2, emb.n_dims + 1))
    W_d = W.copy()
    np.cumsum(W_d[:, :24].reshape(2, 4, 6), axis=2, out=W_d[:, :24].reshape(2, 4, 6))
    np.testing.assert_allclose(decision_ovr_chunk(X, W_d, 1.0, *emb),
                               Z @ W[:, :-1].T + W[:, -1], rtol=1e-5, atol=1e-6)
    assert fmap.sum_sq_norms(X) == pytest.approx(float((Z * Z).sum()), rel=1e-6)
    # the terms of the pairs from the node values, and the node weights of each axis
    nodes = W[:, 24:-1]
    values = fmap.pair_values(X, nodes)
    starts = np.cumsum([0, 4 * (k + 1), (k + 1) * 4, 16])
    for p in range(3):
        np.testing.assert_allclose(values[:, p, :], Z[:, 24 + starts[p]:24 + starts[p + 1]]
                                   @ nodes[:, starts[p]:starts[p + 1]].T, atol=1e-6)
    fmap.fit_node_weights(X)
    np.testing.assert_allclose(fmap.node_weights_[0, 1, :k + 1], onehot.mean(axis=0))
    np.testing.assert_allclose(fmap.node_weights_.sum(axis=2), 1.0, atol=1e-12)
    # the axes go through the map's dict; one stored before categorical axes has every
    # axis on the uniform grid
    from streamlearn.features import FeatureMap

    back = FeatureMap.from_dict(fmap.to_dict())
    np.testing.assert_array_equal(back.transform(X), fmap.transform(X))
    old = fmap.to_dict()
    del old["state"]["category_nodes_"]
    np.testing.assert_array_equal(FeatureMap.from_dict(old).axis_nodes_, [4, 4, 4, 4])
    del fmap.category_nodes_
    np.testing.assert_array_equal(fmap.axis_nodes_, [4, 4, 4, 4])


def test_pair_terms_train_as_a_linear_svm_on_the_materialised_embedding() -> None:
    """Dual CD on the on-the-fly pair embedding against liblinear on the precomputed one."""
    X, y = _planted(3000, seed=2)
    pairs = [(2, 3), (4, 5)]
    model = AdditiveSVC(solver="dcd", interactions=pairs, n_bases=8, pair_bases=6, C=0.5,
                        tol=1e-5, epochs=2000, calibrate=False).fit(X, y)
    Z = model.feature_map_.transform(X)
    reference = LinearSVC(C=0.5, loss="hinge", dual=True, tol=1e-7, max_iter=200_000,
                          intercept_scaling=1.0).fit(Z, y)
    ours = model.svm_scores(X)[:, 0]
    theirs = reference.decision_function(Z)
    np.testing.assert_allclose(ours, theirs, atol=2e-3 * np.abs(theirs).max())
    assert model.n_iter_ < 2000  # the duality gap rule stopped it
    np.testing.assert_allclose(model.embedding_coef_[0], reference.coef_[0],
                               atol=1e-2 * np.abs(reference.coef_[0]).max())


def test_hat_squared_norms_are_the_row_sums_of_the_squared_hats_to_the_last_bit() -> None:
    from streamlearn.features.pair_terms import hat_sq_norms, hat_values

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-1.5, 1.5, 5000), [-1.0, 1.0, 0.0, 0.25]])  # clamped too
    for nodes in (2, 5, 8, 17):
        hats = hat_values(x, -1.0, 1.0, nodes)
        np.testing.assert_array_equal(hat_sq_norms(x, -1.0, 1.0, nodes),
                                      (hats * hats).sum(axis=1))
    # several columns at once, each on its own grid: each column as alone
    cols = np.stack([x, x / 2, x * 3], axis=1)
    lo, hi, nodes = np.array([-1.0, 0.0, -2.0]), np.array([1.0, 0.5, 4.0]), np.array([8, 3, 5])
    together = hat_sq_norms(cols, lo, hi, nodes)
    for c in range(3):
        np.testing.assert_array_equal(together[:, c],
                                      hat_sq_norms(cols[:, c], lo[c], hi[c], nodes[c]))


def test_purified_pairs_have_no_weighted_marginals_and_the_terms_keep_their_sum() -> None:
    from streamlearn.features.pair_terms import hat_values, pair_marginals
    from streamlearn.solvers.embedding import feature_terms

    X, y = _planted(6000, seed=14)
    # uniform knots (the default): the grid nodes below are evenly spaced in x
    model = AdditiveSVC(interactions=[(0, 1), (2, 3)], chunk_rows=1000).fit(X, y)
    fmap = model.feature_map_
    rng = np.random.default_rng(15)
    np.testing.assert_allclose(hat_values(X[:50, 2], -1.0, 1.0, 8), _hats(X[:50, 2], -1, 1, 8),
                               atol=1e-12)
    # the node weights are the mean hat values of the describe sample (4,096 of the rows)
    np.testing.assert_allclose(fmap.node_weights_[1, 0],
                               _hats(np.clip(X[:, 2], fmap.lo_[2], fmap.hi_[2]), fmap.lo_[2],
                                     fmap.hi_[2], 8).mean(axis=0), atol=0.01)
    np.testing.assert_allclose(fmap.node_weights_.sum(axis=2), 1.0, atol=1e-12)
    H = rng.normal(size=(3, 8, 8))
    rows, cols, _ = pair_marginals(H, fmap.node_weights_[0])
    pure = H - rows[:, :, None] - cols[:, None, :]  # what move_marginals leaves
    wa, wb = fmap.node_weights_[0]
    np.testing.assert_allclose(pure @ wb, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("i,kij->kj", wa, pure), 0.0, atol=1e-12)
    raw = feature_terms(X[:500], model.coef_d_, *model._embedding())
    moved = model.term_contributions(X[:500])
    np.testing.assert_allclose(moved.sum(axis=1), raw.sum(axis=1), atol=1e-9)
    # a pair's term at rows on its grid nodes is its purified node values
    P, main = 8, 6 * model.n_bases_
    H = model.coef_d_[0, main:main + 2 * P * P].reshape(2, P, P)
    rows, cols, _ = pair_marginals(H[1], fmap.node_weights_[1])
    nodes = np.linspace(fmap.lo_[2], fmap.hi_[2], P), np.linspace(fmap.lo_[3], fmap.hi_[3], P)
    grid = np.zeros((P * P, 6), dtype=np.float32)
    grid[:, 2], grid[:, 3] = np.repeat(nodes[0], P), np.tile(nodes[1], P)
    surface = model.term_contributions(grid)[:, 6 + 1, 0].reshape(P, P)
    np.testing.assert_allclose(surface, H[1] - rows[:, None] - cols[None, :], atol=1e-5)
    # with knots at quantiles the nodes sit at the warped positions; the sum is kept
    warped = AdditiveSVC(interactions=[(0, 1), (2, 3)], chunk_rows=1000, knots="quantile"
                         ).fit(X, y)
    raw = feature_terms(X[:500], warped.coef_d_, *warped._embedding())
    np.testing.assert_allclose(warped.term_contributions(X[:500]).sum(axis=1),
                               raw.sum(axis=1), atol=1e-9)
    np.testing.assert_allclose(warped.feature_map_.node_weights_.sum(axis=2), 1.0,
                               atol=1e-12)


# -- screening ---------------------------------------------------------------------------
def test_bin_rows_match_searchsorted_and_list_the_rows_off_the_common_bin() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[:, 2] = (rng.uniform(size=300) < 0.1)  # mostly zero
    X[5, 0] = 0.25  # on an edge: counted at or below, as side="right"
    columns = np.array([2, 0, 3], dtype=np.int64)
    edges = bin_edges(X[:, columns].astype(np.float64), 4)
    edges[1, 1] = 0.25
    common = common_bins(X[:, columns], edges)
    bins = np.empty((3, 300), dtype=np.int32)
    off, n_off = np.empty((3, 300), dtype=np.int32), np.empty(3, dtype=np.int64)
    bin_rows(X, columns, edges, common, bins, off, n_off)
    for c, f in enumerate(columns):
        ref = np.searchsorted(edges[c], X[:, f].astype(np.float64), side="right")
        np.testing.assert_array_equal(bins[c], ref)
        assert common[c] == np.argmax(np.bincount(ref, minlength=4))
        np.testing.assert_array_equal(off[c, : n_off[c]], np.flatnonzero(ref != common[c]))
    assert n_off[0] == np.count_nonzero(X[:, 2])  # the mostly-zero column: its ones
    # +inf is at or above every edge, the +inf padding included; NaN in the first bin
    # (where np.searchsorted would put it last)
    X[6, 3], X[7, 2] = np.inf, np.nan
    odd = np.empty_like(bins)
    bin_rows(X, columns, edges, common, odd, off, n_off)
    assert odd[2, 6] == edges.shape[1] and odd[0, 7] == 0
    odd[2, 6], odd[0, 7] = bins[2, 6], bins[0, 7]
    np.testing.assert_array_equal(odd, bins)


@pytest.mark.parametrize("n", [300, NUMPY_BIN_ENTRIES // 3 + 1])
def test_bin_chunk_numpy_gives_the_kernels_bins_and_bits(n, monkeypatch) -> None:
    # bin_chunk bins small chunks with numpy, larger ones with the kernels: same output
    import streamlearn.solvers.additive.interactions as interactions

    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 2] = rng.uniform(size=n) < 0.1
    X[3, 0], X[4, 3], X[5, 2], X[6, 0] = np.inf, -np.inf, np.nan, 0.25
    columns = np.array([2, 0, 3], dtype=np.int64)
    edges = bin_edges(X[10:, columns].astype(np.float64), 8)
    edges[1, 1] = 0.25
    common = common_bins(X[10:, columns], edges)
    residual, weight = rng.normal(size=(n, 2)), rng.uniform(size=(n, 1))
    got = [np.ones((3, 8, 2)), np.ones((3, 8, 1))]
    used = []
    monkeypatch.setattr(interactions, "bin_rows", lambda *a: used.append(1) or bin_rows(*a))
    bins, off, n_off = bin_chunk(X, columns, edges, common, residual, weight, *got)
    assert len(used) == (n * 3 > NUMPY_BIN_ENTRIES)
    ref_bins, ref_off = np.empty((3, n), np.int32), np.empty((3, n), np.int32)
    ref_n_off = np.empty(3, np.int64)
    bin_rows(X, columns, edges, common, ref_bins, ref_off, ref_n_off)
    ref = [np.ones((3, 8, 2)), np.ones((3, 8, 1))]
    bin_sums(ref_bins, ref_off, ref_n_off, common, residual, weight, *ref)
    np.testing.assert_array_equal(bins, ref_bins)
    np.testing.assert_array_equal(n_off, ref_n_off)
    for c in range(3):
        np.testing.assert_array_equal(off[c, : n_off[c]], ref_off[c, : n_off[c]])
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)


def off_common_lists(bins: np.ndarray, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each candidate's most frequent bin and its rows outside it, as bin_rows fills them."""
    k, n = bins.shape
    common = np.array([np.argmax(np.bincount(b, minlength=B)) for b in bins], dtype=np.int64)
    off = np.zeros((k, n), dtype=np.int32)
    n_off = np.zeros(k, dtype=np.int64)
    for c in range(k):
        rows = np.flatnonzero(bins[c] != common[c])
        off[c, : rows.size], n_off[c] = rows, rows.size
    return common, off, n_off


def test_pair_cells_from_off_common_rows_equal_every_row_added() -> None:
    rng = np.random.default_rng(3)
    n, B, m = 400, 4, 2
    # a skewed feature (mostly bin 0), a uniform one and one mostly in bin 2
    bins = np.stack([np.where(rng.uniform(size=n) < 0.8, 0, rng.integers(1, B, n)),
                     rng.integers(0, B, n),
                     np.where(rng.uniform(size=n) < 0.7, 2, rng.integers(0, B, n))]
                    ).astype(np.int32)
    common, off, n_off = off_common_lists(bins, B)
    first, second = np.array([0, 0, 1], dtype=np.int64), np.array([1, 2, 2], dtype=np.int64)
    residual, weight = rng.normal(size=(n, m)), rng.uniform(size=(n, m))
    margin_s, margin_w = np.zeros((3, B, m)), np.zeros((3, B, m))
    bin_sums(bins, off, n_off, common, residual, weight, margin_s, margin_w)
    for c in range(3):
        ref, ref_w = np.zeros((B, m)), np.zeros((B, m))
        np.add.at(ref, bins[c], residual)
        np.add.at(ref_w, bins[c], weight)
        np.testing.assert_allclose(margin_s[c], ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(margin_w[c], ref_w, rtol=1e-12, atol=1e-12)
    sums, weights = np.zeros((3, B * B, m)), np.zeros((3, B * B, m))
    off_common_cell_sums(bins, off, n_off, common, first, second, residual, weight, B, sums,
                         weights)
    full_s = complete_cells(sums, margin_s, first, second, common, B)
    full_w = complete_cells(weights, margin_w, first, second, common, B)
    for p in range(3):
        cell = bins[first[p]] * B + bins[second[p]]
        both_off = (bins[first[p]] != common[first[p]]) & (bins[second[p]] != common[second[p]])
        ref_s, ref_w, ref_off = np.zeros((B * B, m)), np.zeros((B * B, m)), np.zeros((B * B, m))
        np.add.at(ref_s, cell, residual)
        np.add.at(ref_w, cell, weight)
        np.add.at(ref_off, cell[both_off], residual[both_off])
        np.testing.assert_allclose(sums[p], ref_off, atol=1e-12)
        np.testing.assert_allclose(full_s[p], ref_s, atol=1e-12)
        np.testing.assert_allclose(full_w[p], ref_w, atol=1e-12)


@pytest.mark.parametrize("m", [1, 3, 9])
def test_cells_and_bins_over_every_row_or_the_lists_equal_every_row_added(m) -> None:
    """Continuous features take every row (EVERY_ROW_SHARE), sparse ones their lists; few
    models are added a model at a time, many a row at a time (MODEL_MAJOR_COLUMNS): each
    way the sums are numpy's of every row, and numpy's path gives the kernels' bits."""
    rng = np.random.default_rng(10 + m)
    n, B = 600, 6
    bins = np.stack([rng.integers(0, B, n), rng.integers(0, B, n),
                     np.where(rng.uniform(size=n) < 0.9, 3, rng.integers(0, B, n)),
                     np.where(rng.uniform(size=n) < 0.95, 0, 1)]).astype(np.int32)
    common, off, n_off = off_common_lists(bins, B)
    assert 3 * n_off[0] > n and 3 * n_off[2] < n  # both ways are taken
    first, second = (a.astype(np.int64) for a in np.triu_indices(4, 1))
    residual, weight = rng.normal(size=(n, m)), rng.uniform(size=(n, 1))
    margin_s, margin_w = np.zeros((4, B, m)), np.zeros((4, B, 1))
    bin_sums(bins, off, n_off, common, residual, weight, margin_s, margin_w)
    sums, weights = np.zeros((6, B * B, m)), np.zeros((6, B * B, 1))
    off_common_cell_sums(bins, off, n_off, common, first, second, residual, weight, B, sums,
                         weights)
    full_s = complete_cells(sums, margin_s, first, second, common, B)
    full_w = complete_cells(weights, margin_w, first, second, common, B)
    for c in range(4):
        ref = np.zeros((B, m))
        np.add.at(ref, bins[c], residual)
        np.testing.assert_allclose(margin_s[c], ref, atol=1e-12)
    for p in range(6):
        cell = bins[first[p]] * B + bins[second[p]]
        ref_s, ref_w = np.zeros((B * B, m)), np.zeros((B * B, 1))
        np.add.at(ref_s, cell, residual)
        np.add.at(ref_w, cell, weight)
        np.testing.assert_allclose(full_s[p], ref_s, atol=1e-12)
        np.testing.assert_allclose(full_w[p], ref_w, atol=1e-12)
    got = [np.zeros_like(sums), np.zeros_like(weights)]
    add_cell_sums(bins, off, n_off, common, first, second, residual, weight, B, *got,
                  kernels=False)
    np.testing.assert_array_equal(got[0], sums)
    np.testing.assert_array_equal(got[1], weights)


def test_one_weight_column_serves_every_model() -> None:
    """One against the rest: the weights' sums kept once equal each model's copy, and
    FAST scores them the same."""
    rng = np.random.default_rng(6)
    n, B, m = 300, 5, 3
    bins = rng.integers(0, B, (2, n)).astype(np.int32)
    common, off, n_off = off_common_lists(bins, B)
    first, second = np.array([0], dtype=np.int64), np.array([1], dtype=np.int64)
    residual = rng.normal(size=(n, m))
    weight = np.repeat(rng.uniform(size=(n, 1)), m, axis=1)
    full, shared = {}, {}
    for out, w in ((full, weight), (shared, np.ascontiguousarray(weight[:, :1]))):
        out["bs"], out["bw"] = np.zeros((2, B, m)), np.zeros((2, B, w.shape[1]))
        bin_sums(bins, off, n_off, common, residual, w, out["bs"], out["bw"])
        out["cs"], out["cw"] = np.zeros((1, B * B, m)), np.zeros((1, B * B, w.shape[1]))
        off_common_cell_sums(bins, off, n_off, common, first, second, residual, w, B,
                             out["cs"], out["cw"])
        out["s"] = complete_cells(out["cs"], out["bs"], first, second, common, B)
        out["w"] = complete_cells(out["cw"], out["bw"], first, second, common, B)
    np.testing.assert_array_equal(shared["s"], full["s"])
    for j in range(m):
        np.testing.assert_array_equal(shared["bw"][..., 0], full["bw"][..., j])
        np.testing.assert_array_equal(shared["w"][..., 0], full["w"][..., j])
    assert fast_gains(shared["s"], shared["w"], B)[0] == \
        pytest.approx(fast_gains(full["s"], full["w"], B)[0], rel=1e-12)


def test_fast_gains_are_the_best_quadrant_split_by_brute_force() -> None:
    rng = np.random.default_rng(4)
    B, m = 5, 2
    a, b = rng.integers(0, B, 300), rng.integers(0, B, 300)
    r = rng.normal(size=(300, m)) + np.where((a >= 2) & (b >= 3), 1.0, 0.0)[:, None]
    sums, weights = np.zeros((1, B * B, m)), np.zeros((1, B * B, m))
    np.add.at(sums[0], a * B + b, r)
    np.add.at(weights[0], a * B + b, 1.0)
    total = 0.0
    for j in range(m):
        sse0 = ((r[:, j] - r[:, j].mean()) ** 2).sum()
        best = 0.0
        for ca in range(B - 1):
            for cb in range(B - 1):
                q = (a <= ca) * 2 + (b <= cb)
                fitted = np.zeros(300)
                for k in range(4):
                    if np.any(q == k):
                        fitted[q == k] = r[q == k, j].mean()
                best = max(best, sse0 - ((r[:, j] - fitted) ** 2).sum())
        total += best
    assert fast_gains(sums, weights, B)[0] == pytest.approx(total, rel=1e-9)


def fast_gains_numpy(sums: np.ndarray, weights: np.ndarray, n_bins: int,
                     noise: np.ndarray | None = None) -> np.ndarray:
    """FAST scores by numpy's cumulative sums over every pair and cut at once."""
    n_pairs, _, m = sums.shape
    S = sums.reshape(n_pairs, n_bins, n_bins, m).cumsum(axis=1).cumsum(axis=2)
    N = weights.reshape(n_pairs, n_bins, n_bins, m).cumsum(axis=1).cumsum(axis=2)

    def quadrants(C: np.ndarray) -> tuple[np.ndarray, ...]:
        q1 = C[:, :-1, :-1]
        q2 = C[:, :-1, -1:] - q1
        q3 = C[:, -1:, :-1] - q1
        q4 = C[:, -1:, -1:] - q1 - q2 - q3
        return q1, q2, q3, q4

    gain = np.zeros(S[:, :-1, :-1].shape)
    for s, n in zip(quadrants(S), quadrants(N), strict=True):
        gain += np.where(n > 0, s * s / np.where(n > 0, n, 1.0), 0.0)
    total_s, total_n = S[:, -1, -1], N[:, -1, -1]
    base = np.where(total_n > 0, total_s**2 / np.where(total_n > 0, total_n, 1.0), 0.0)
    best = np.maximum(gain.reshape(n_pairs, -1, m).max(axis=1) - base, 0.0)
    if noise is not None:
        best = best / np.where(noise > 0, noise, 1.0)[None, :]
    return best.sum(axis=1)


@pytest.mark.parametrize("B", [2, 7, 16])
def test_fast_gains_kernel_matches_numpy(B: int) -> None:
    rng = np.random.default_rng(B)
    n_pairs, m = 40, 3
    weights = rng.uniform(size=(n_pairs, B * B, m)) * (rng.uniform(size=(n_pairs, B * B, m))
                                                       > 0.3)  # empty cells too
    sums = rng.normal(size=weights.shape) * weights
    sums[0], weights[0] = 0.0, 0.0  # a pair with no rows
    noise = np.array([0.5, 0.0, 2.0])
    for given in (None, noise):
        inv_noise = 1.0 / np.where(noise > 0, noise, 1.0) if given is not None else np.ones(m)
        kernel = np.empty(n_pairs)
        fast_gains_kernel(sums, weights, B, inv_noise, kernel)
        np.testing.assert_allclose(kernel, fast_gains_numpy(sums, weights, B, given),
                                   rtol=1e-10, atol=1e-12)
        # fast_gains scores this many cells with numpy: the kernel's bits, shared weights too
        assert sums.size <= NUMPY_GAIN_ENTRIES
        np.testing.assert_array_equal(fast_gains(sums, weights, B, given), kernel)
        shared = np.ascontiguousarray(weights[..., :1])
        fast_gains_kernel(sums, shared, B, inv_noise, kernel)
        np.testing.assert_array_equal(library_gains_numpy(sums, shared, B, inv_noise), kernel)


def test_cell_sums_numpy_gives_the_kernels_bits() -> None:
    rng = np.random.default_rng(8)
    n, B, m, k = 500, 6, 2, 9
    bins = np.where(rng.uniform(size=(k, n)) < 0.6, 1, rng.integers(0, B, (k, n))
                    ).astype(np.int32)
    common, off, n_off = off_common_lists(bins, B)
    first, second = (a.astype(np.int64) for a in np.triu_indices(k, 1))
    assert first.size <= NUMPY_CELL_PAIRS
    residual, weight = rng.normal(size=(n, m)), rng.uniform(size=(n, 1))
    got = [np.ones((first.size, B * B, m)), np.ones((first.size, B * B, 1))]
    ref = [a.copy() for a in got]
    add_cell_sums(bins, off, n_off, common, first, second, residual, weight, B, *got)
    off_common_cell_sums(bins, off, n_off, common, first, second, residual, weight, B, *ref)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bin_edges_and_candidates(monkeypatch) -> None:
    rng = np.random.default_rng(5)
    sample = np.column_stack([rng.normal(size=1000), np.repeat([0.0, 1.0], 500),
                              np.full(1000, 2.0)])
    edges = bin_edges(sample, 4)
    np.testing.assert_allclose(edges[0], np.quantile(sample[:, 0], [0.25, 0.5, 0.75]))
    # few distinct values: one bin each, edges half-way; a constant column: one bin
    np.testing.assert_array_equal(edges[1], [0.5, np.inf, np.inf])
    assert np.isinf(edges[2]).all()
    rare = np.where(np.arange(1000) < 20, 1.0, 0.0)[:, None]  # 2 % ones
    assert bin_edges(rare, 16)[0, 0] == 0.5
    assert np.searchsorted(edges[1], 1.0, side="right") != np.searchsorted(edges[1], 0.0,
                                                                            side="right")
    importances = np.array([0.1, 5.0, 0.0, 3.0, 2.0])
    np.testing.assert_array_equal(candidate_features(importances, 1), np.arange(5))
    # with room for 3 features only, the 3 most important are kept
    from streamlearn.solvers.additive import interactions

    monkeypatch.setattr(interactions, "SCREEN_CELLS", 3 * 256)
    np.testing.assert_array_equal(candidate_features(importances, 1), [1, 3, 4])


def test_screening_finds_the_planted_pairs_and_they_lower_the_error() -> None:
    X, y = _planted(20_000, seed=6)
    Xt, yt = _planted(20_000, seed=7)
    plain = AdditiveSVC(interactions=0).fit(X, y)
    model = AdditiveSVC(interactions=2).fit(X, y)
    assert set(model.interactions_) == {("x2", "x3"), ("x4", "x5")}
    assert model.interaction_scores_.shape == (2,)
    assert np.all(np.diff(model.interaction_scores_) <= 0)
    assert model.interaction_importances_.shape == (2,)
    assert model.feature_importances_.shape == (6,)
    # the planted pairs carry most of the signal an additive model cannot fit
    assert 1 - model.score(Xt, yt) < 0.5 * (1 - plain.score(Xt, yt))


def test_pairs_pay_for_a_gain_in_proportion_to_the_work_they_add() -> None:
    # 2 pairs beside 4 cubic curves: 8 more non-zeros on 16, half the work again
    pairs = BSplinePairMap(degree=3, interactions=[(0, 1), (2, 3)])
    need = PAIR_GAIN_PER_COST * 8 / 16
    without = 0.5
    assert pairs_pay(without, without * (1 - need), pairs, 4)
    assert not pairs_pay(without, without * (1 - 0.9 * need), pairs, 4)
    assert not pairs_pay(without, without, pairs, 4) and not pairs_pay(without, 0.6, pairs, 4)
    # beside 40 features the same pairs add a tenth of that: a tenth of the gain pays
    assert pairs_pay(without, without * (1 - need / 10), pairs, 40)
    assert not pairs_pay(without, without * (1 - need / 20), pairs, 40)


def test_auto_keeps_pairs_only_when_they_lower_the_held_out_log_loss() -> None:
    X, y = _planted(6000, seed=12)
    seen: list[str] = []

    class Recording(LocalEngine):
        def run(self, pass_, data, **options):
            seen.append(type(pass_).__name__)
            return super().run(pass_, data, **options)

    model = AdditiveSVC(chunk_rows=1000, engine=Recording(progress=False)).fit(X, y)
    check = model.interaction_check_
    # the first count, 2 d of the 15 pairs, or all 15 where the step to them paid
    assert check["kept"] and len(model.interactions_) in (min(2 * 6, 15), 15)
    assert len(model.interactions_) == ([[12, None]] + check["n_pairs"])[-1][0] or (
        len(check["n_pairs"]) == 2 and len(model.interactions_) == 12)
    assert pairs_pay(check["held_out_log_loss_without"], check["held_out_log_loss_with"],
                     model.feature_map_, 6)
    assert {("x2", "x3"), ("x4", "x5")} <= set(model.interactions_)
    # one describe pass and one screening pass; the second training reuses the summary
    assert seen.count("SummaryPass") == 1 and seen.count("ScreeningPass") == 1
    # the reported loss is the log-loss of the calibrated probabilities on those rows
    from streamlearn.solvers.additive.driver import HOLDOUT_SALT
    from streamlearn.solvers.holdout import Holdout

    held = Holdout.fraction(0.1, model.random_state ^ HOLDOUT_SALT).mask(np.arange(6000))
    p = model.predict_proba(X[held])[:, 1]
    direct = -np.mean(np.where(y[held] == 1, np.log(p), np.log1p(-p)))
    assert check["held_out_log_loss_with"] == pytest.approx(direct, rel=0.02)
    # a label with no pair structure: pairs that do not help are dropped
    rng = np.random.default_rng(13)
    noise_y = (np.sin(3 * X[:, 0]) + rng.normal(size=6000) > 0).astype(int)
    plain = AdditiveSVC(chunk_rows=1000).fit(X, noise_y)
    c = plain.interaction_check_
    screened = BSplinePairMap(interactions=c["screened"], pair_bases=c["pair_bases"][-1][0])
    assert c["kept"] == pairs_pay(c["held_out_log_loss_without"], c["held_out_log_loss_with"],
                                  screened, 6)
    if not c["kept"]:
        assert plain.interactions_ == () and plain.coef_d_.shape[1] == 6 * plain.n_bases_ + 1
    # one feature, or an embedding without pairs: none are tried, and the check says why
    assert "fewer than two" in AdditiveSVC().fit(X[:, :1], y).interaction_check_["reason"]
    fourier = AdditiveSVC(embedding="fourier").fit(X, y)
    assert fourier.interactions_ == () and "B-spline" in fourier.interaction_check_["reason"]
    # too few held-out rows to check pairs on, and too few rows for folds to check them
    # (tests/test_additive_cross_fit.py): none are tried
    small = AdditiveSVC().fit(X[:199], y[:199])
    assert small.interactions_ == () and not small.interaction_check_["kept"]
    assert "fewer than 200" in small.interaction_check_["reason"]


def test_auto_keeps_the_strong_pairs_alone_when_they_do_as_well() -> None:
    """Two products with no main effects score far above every other pair (STRONG_PAIR_SCORE):
    the model with those two alone is trained beside the one with every screened pair, and
    kept on its lower held-out log-loss; its test error is below the all-pairs model's."""
    def products(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (n, 8)).astype(np.float32)
        f = np.sin(3 * X[:, 3]) + 2 * X[:, 0] * X[:, 1] + 2 * X[:, 2] * X[:, 5]
        return X, (f + 0.5 * rng.normal(size=n) > 0).astype(np.int64)

    X, y = products(8000, 1)
    Xt, yt = products(20_000, 2)
    model = AdditiveSVC().fit(X, y)
    check = model.interaction_check_
    assert set(model.interactions_) == {("x0", "x1"), ("x2", "x5")}
    n_strong, strong_loss = check["strong_pairs"]
    assert n_strong == 2 and check["held_out_log_loss_with"] == strong_loss
    assert check["n_pairs"] == []  # the strong pairs alone: the count does not grow
    assert len(check["scores"]) == 2 and min(check["scores"]) >= STRONG_PAIR_SCORE
    every = AdditiveSVC(interactions=2 * 8).fit(X, y)
    assert 1 - model.score(Xt, yt) < 1 - every.score(Xt, yt)
    assert strong_pairs(np.array([900.0, 60.0, 30.0, 12.0]), 2) == 2


def test_auto_doubles_the_pairs_while_each_step_pays_for_its_work() -> None:
    """Every one of the 28 pairs of 8 features interacts: ``"auto"`` screens for all 28,
    trains the best 16 (2 d) first, then all 28, and keeps them because the step lowers
    the held-out log-loss by more than its work costs (PAIR_GAIN_PER_COST per multiple
    of the per-feature entries a row: 12 pairs x 4 against 8 features x 2); the test
    error is below that of the best 16 alone."""
    sign = np.random.default_rng(0).choice([-1.0, 1.0], (8, 8))

    def products(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (n, 8)).astype(np.float32)
        f = sum(sign[i, j] * X[:, i] * X[:, j] for i, j in itertools.combinations(range(8), 2))
        return X, (f + 0.3 * rng.normal(size=n) > 0).astype(np.int64)

    X, y = products(8000, 1)
    Xt, yt = products(20_000, 2)
    model = AdditiveSVC().fit(X, y)
    check = model.interaction_check_
    (first, first_loss), (grown, grown_loss) = check["n_pairs"]
    assert (first, grown) == (16, 28) and len(model.interactions_) == 28
    assert set(model.interactions_) == {(f"x{i}", f"x{j}")
                                        for i, j in itertools.combinations(range(8), 2)}
    assert grown_loss <= (1 - PAIR_GAIN_PER_COST * (4 * 12) / (8 * 2)) * first_loss
    assert check["held_out_log_loss_with"] == grown_loss
    sixteen = AdditiveSVC(interactions=16).fit(X, y)
    assert 1 - model.score(Xt, yt) < 0.75 * (1 - sixteen.score(Xt, yt))


def _spirals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals of 2.5 turns: a pair surface that turns faster than an 8 x 8
    grid follows (7 % test error on it, none on an 18 x 18 grid)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    r = rng.uniform(0.1, 1.0, n)
    theta = 5 * np.pi * r + np.pi * label
    X = np.c_[r * np.cos(theta), r * np.sin(theta)] + 0.02 * rng.normal(size=(n, 2))
    return X.astype(np.float32), label


def test_auto_pair_grid_grows_while_the_held_out_loss_falls() -> None:
    from streamlearn.features.pair_terms import AUTO_PAIR_BASES

    X, y = _spirals(6000, seed=14)
    Xt, yt = _spirals(6000, seed=15)
    model = AdditiveSVC(random_state=0).fit(X, y)
    coarse = AdditiveSVC(random_state=0, pair_bases=8).fit(X, y)
    tried = model.interaction_check_["pair_bases"]
    grids = [b for b, _ in tried]
    losses = [loss for _, loss in tried]
    assert grids == list(AUTO_PAIR_BASES[:len(grids)])
    kept = grids.index(model.pair_bases_)
    # every grid up to the one kept lowered the loss; the next one, if tried, did not
    assert all(b < a for a, b in itertools.pairwise(losses[:kept + 1]))
    assert kept == len(grids) - 1 or losses[kept + 1] >= losses[kept]
    assert model.interaction_check_["held_out_log_loss_with"] == losses[kept]
    assert model.feature_map_.pair_bases == model.pair_bases_ > 8
    assert model.coef_d_.shape[1] == 2 * model.n_bases_ + model.pair_bases_**2 + 1
    # the fixed coarse grid is the first one tried, trained the same way
    assert coarse.interaction_check_["pair_bases"] == tried[:1]
    assert coarse.pair_bases_ == 8
    assert 1 - coarse.score(Xt, yt) > 0.02
    assert 1 - model.score(Xt, yt) < 0.25 * (1 - coarse.score(Xt, yt))


def test_pair_grid_is_not_searched_without_held_out_rows() -> None:
    X, y = _spirals(3000, seed=16)
    model = AdditiveSVC(interactions=[(0, 1)], calibrate=False).fit(X, y)
    assert model.pair_bases_ == 8 and model.interactions_ == (("x0", "x1"),)
    given = AdditiveSVC(interactions=[(0, 1)], random_state=0).fit(X, y)
    assert given.pair_bases_ > 8  # given pairs are refined like screened ones


def test_given_pairs_are_kept_where_the_linear_model_would_replace_curves() -> None:
    # the label needs the pair (0, 1); the pair given, (1, 3), carries nothing, so the
    # curves' held-out loss is no better than the linear model's
    rng = np.random.default_rng(16)
    X = rng.uniform(-1, 1, (3000, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    plain = AdditiveSVC(interactions=0, random_state=0).fit(X, y)
    assert plain.linear_check_["kept"] and plain.feature_map_ is None
    given = AdditiveSVC(interactions=[(1, 3)], random_state=0).fit(X, y)
    assert given.interactions_ == (("x1", "x3"),)
    assert not hasattr(given, "linear_check_")
    fmap = given.feature_map_
    assert isinstance(fmap, BSplinePairMap) and fmap.interactions == ((1, 3),)
    # the pair's columns: the tensor product of its hat bases over the observed ranges
    P, rows = fmap.pair_bases, X[:50]
    lo, hi = X.min(axis=0), X.max(axis=0)
    expected = np.einsum("ni,nj->nij", _hats(rows[:, 1], lo[1], hi[1], P),
                         _hats(rows[:, 3], lo[3], hi[3], P)).reshape(50, -1)
    np.testing.assert_allclose(fmap.transform(rows)[:, -P * P:], expected, atol=1e-5)


# -- the model ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paired() -> tuple[AdditiveSVC, np.ndarray, np.ndarray]:
    X, y = _planted(4000, seed=8)
    y3 = np.where(X[:, 0] > 0.5, 2, y)
    model = AdditiveSVC(interactions=[("x2", "x3"), (4, 5)], chunk_rows=1000).fit(X, y3)
    return model, X, y3


def test_terms_add_up_to_the_scores_and_surfaces_are_the_pair_terms(paired) -> None:
    model, X, _ = paired
    assert model.interactions_ == (("x2", "x3"), ("x4", "x5"))
    terms = model.term_contributions(X[:100])
    assert terms.shape == (100, 8, 3)
    np.testing.assert_allclose(terms.sum(axis=1) + model.intercept_, model.svm_scores(X[:100]),
                               atol=1e-9)
    surfaces = model.interaction_surfaces(n_points=4)
    assert len(surfaces) == 2 * 16 * 3
    one = surfaces[(surfaces.pair == "x4 x x5") & (surfaces.model == model.classes_[2])]
    grid = np.zeros((len(one), 6), dtype=np.float32)
    grid[:, 4], grid[:, 5] = one.value_a, one.value_b
    expected = model.term_contributions(grid)[:, 7, 2]
    np.testing.assert_allclose(one.contribution, expected, atol=1e-9)
    plain = AdditiveSVC(interactions=0).fit(X, (X[:, 0] > 0).astype(int))
    assert plain.interaction_surfaces().empty


def test_model_file_keeps_the_pairs(paired, tmp_path) -> None:
    model, X, _ = paired
    path = save_model(model, tmp_path / "pairs.slm")
    loaded = load_model(path)
    assert loaded.interactions_ == model.interactions_
    np.testing.assert_array_equal(loaded.predict_proba(X[:300]), model.predict_proba(X[:300]))


def test_a_killed_fit_with_screening_resumes_to_the_same_model(tmp_path) -> None:
    X, y = _planted(4000, seed=9)
    whole = AdditiveSVC(interactions=2, chunk_rows=500).fit(X, y)

    Killed = killing_engine()

    probe = Killed(progress=False)
    AdditiveSVC(interactions=2, chunk_rows=500).fit(X, y, engine=probe)
    n_runs, Killed.runs = Killed.runs, 0
    Killed.kill_at = n_runs - 2  # inside the training with the chosen pairs
    with pytest.raises(RuntimeError, match="killed"):
        AdditiveSVC(interactions=2, chunk_rows=500).fit(X, y, checkpoint=tmp_path / "c",
                                                        engine=Killed(progress=False))
    Killed.kill_at = None
    resumed = AdditiveSVC(interactions=2, chunk_rows=500).fit(
        X, y, checkpoint=tmp_path / "c", engine=Killed(progress=False))
    assert resumed.interactions_ == whole.interactions_
    np.testing.assert_allclose(resumed.coef_d_, whole.coef_d_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"embedding": "fourier", "interactions": 2}, ValueError, "embedding='bspline'"),
    ({"zero_preserving": True, "interactions": 1}, ValueError, "zero_preserving=False"),
    ({"interactions": [("x0", "nope")]}, SchemaError, "'nope'"),
    ({"interactions": [(0, 0)]}, ValueError, "two different features"),
    ({"interactions": [(0, 9)]}, SchemaError, "outside"),
    ({"interactions": [(0, 1), (1, 0)]}, ValueError, "twice"),
    ({"interactions": -1}, ValueError, "interactions"),
    # int() truncated these to features 0 and 1
    ({"interactions": [(0.5, 1)]}, ValueError, r"got 0\.5 in \(0\.5, 1\)"),
    ({"interactions": [(1.9, 3)]}, ValueError, r"got 1\.9 in"),
    ({"interactions": [("x0", 2.0)]}, ValueError, r"got 2\.0 in"),
    ({"interactions": [(True, 2)]}, ValueError, "got True in"),
    ({"interactions": [(np.bool_(False), 2)]}, ValueError, "got np.False_ in|got False in"),
])
def test_bad_interactions_are_refused_clearly(params, error, match) -> None:
    X, y = _planted(300, seed=10)
    with pytest.raises(error, match=match):
        AdditiveSVC(**params).fit(X, y)


def test_pair_indices_are_integers_of_any_kind() -> None:
    fmap = BSplinePairMap(interactions=[(np.int64(3), 1), (np.int32(0), 1)])
    assert fmap.interactions == ((1, 3), (0, 1))
    assert all(type(f) is int for pair in fmap.interactions for f in pair)
    with pytest.raises(ValueError, match=r"got 1\.0 in \(1\.0, 3\)"):
        BSplinePairMap(interactions=[(1.0, 3)])


def test_partial_fit_refuses_to_screen_pairs() -> None:
    X, y = _planted(300, seed=11)
    model = AdditiveSVC(interactions=2, epochs=1, tol=None)
    assert not hasattr(model, "partial_fit")  # scikit-learn's tools ask before calling
    with pytest.raises(AttributeError, match="partial_fit") as raised:
        model.partial_fit(X, y)
    assert "screens no pairs" in str(raised.value.__cause__)  # the reason, in the traceback
    model.fit(X, y)  # fitted, it goes on with the pairs it screened
    before = model.decision_function(X)
    model.partial_fit(X, y)
    assert model.interactions_ and not np.array_equal(model.decision_function(X), before)


def test_partial_fit_trains_the_pairs_it_is_given() -> None:
    X, y = _planted(12_000, seed=12)
    Xt, yt = X[10_000:], y[10_000:]
    chunk = 1000

    def streamed(**params) -> AdditiveSVC:
        model = AdditiveSVC(penalty_order=0, n_bases=8, **params)
        for _ in range(3):
            for a in range(0, 10_000, chunk):
                model.partial_fit(X[a:a + chunk], y[a:a + chunk])
        return model

    paired, plain = streamed(interactions=[("x2", "x3"), (4, 5)]), streamed(interactions=0)
    fmap = paired.feature_map_
    assert isinstance(fmap, BSplinePairMap) and fmap.interactions == ((2, 3), (4, 5))
    assert paired.interactions_ == (("x2", "x3"), ("x4", "x5"))  # named, as fit names them
    assert paired.pair_bases_ == fmap.pair_bases
    assert not isinstance(plain.feature_map_, BSplinePairMap) and plain.interactions_ == ()
    # the first chunk's ranges; a pair's columns are the tensor product of its hat bases
    np.testing.assert_allclose(fmap.lo_, X[:chunk].min(axis=0), rtol=1e-6)
    np.testing.assert_allclose(fmap.hi_, X[:chunk].max(axis=0), rtol=1e-6)
    rows = X[:50]
    P = fmap.pair_bases
    lo, hi = fmap.lo_, fmap.hi_
    expected = np.einsum("ni,nj->nij", _hats(rows[:, 4], lo[4], hi[4], P),
                         _hats(rows[:, 5], lo[5], hi[5], P)).reshape(50, -1)
    np.testing.assert_allclose(fmap.transform(rows)[:, -P * P:], expected, atol=1e-6)
    # the pairs carry the label's two interactions: the paired model errs far less
    assert paired.score(Xt, yt) > plain.score(Xt, yt) + 0.05


def test_partial_fit_continues_a_model_with_pairs_without_growing_its_map(paired) -> None:
    from sklearn.base import clone

    model, X, y3 = paired
    model = clone(model).fit(X, y3)
    before = model.score(X, y3)
    with pytest.warns(UserWarning, match="outside the feature map's range"):
        model.partial_fit(3 * X[:500], y3[:500])
    assert isinstance(model.feature_map_, BSplinePairMap)
    assert model.coef_d_.shape[1] == 6 * model.n_bases_ + 2 * model.pair_bases_**2 + 1
    assert abs(model.score(X, y3) - before) < 0.1
