"""Candidate scans of the projection search (paper 001) against plain numpy / scipy references."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from scipy.interpolate import BSpline
from scipy.spatial.distance import jensenshannon

from streamlearn.solvers.projection_search import (
    MAX_PAIR_START_FEATURES,
    Candidates,
    FeatureSpread,
    class_histogram_scan_chunk,
    direction_cost,
    drop_candidates,
    first_minimum,
    gram_from_band,
    informative_feature_first,
    js_divergence,
    make_candidates,
    offsets,
    on_support,
    penalty_matrix,
    projection_ranges,
    relax_direction,
    ridge_predict_chunk,
    sequential_coordinate_search,
    spline_fit_costs,
    spline_gram_scan_chunk,
    start_candidates,
    table_predict_chunk,
    weak_learner_table,
)

N_BASES = 8
N_BINS = 12


# -- numpy references ------------------------------------------------------------------------
def design(z: np.ndarray, lo: float, hi: float, n_bases: int, degree: int) -> np.ndarray:
    """Uniform B-spline design matrix from scipy, inputs clamped to ``[lo, hi]``."""
    h = (hi - lo) / (n_bases - degree)
    knots = lo + h * np.arange(-degree, n_bases + 1)
    x = np.clip(z, lo, hi)
    return BSpline.design_matrix(x, knots, degree, extrapolate=True).toarray()


def bins(z: np.ndarray, lo: float, hi: float, n_bins: int) -> np.ndarray:
    return np.clip(np.floor((z - lo) / (hi - lo) * n_bins), 0, n_bins - 1).astype(int)


def spread_of(X: np.ndarray) -> FeatureSpread:
    x = X.astype(np.float64)
    return FeatureSpread(x.min(0), x.max(0), x.mean(0), np.cov(x.T, ddof=0))


def ridge_reference(X, intercept, proj, lo, hi, coef, degree):
    out = np.full(X.shape[0], intercept, dtype=np.float64)
    for k in range(proj.shape[0]):
        z = X.astype(np.float64) @ proj[k]
        out += design(z, lo[k], hi[k], coef.shape[1], degree) @ coef[k]
    return out


def table_reference(X, proj, lo, hi, table):
    out = np.zeros(X.shape[0])
    for k in range(proj.shape[0]):
        out += table[k, bins(X.astype(np.float64) @ proj[k], lo[k], hi[k], table.shape[1])]
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 2, size=(400, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=400)).astype(np.float32)
    codes = (X[:, 0] ** 2 + X[:, 2] ** 2 < 1.5).astype(np.int32)
    weight = rng.uniform(0.5, 2.0, size=400).astype(np.float32)
    proj = rng.normal(size=(2, 4))
    proj /= np.linalg.norm(proj, axis=1, keepdims=True)
    lo, hi = projection_ranges(proj, spread_of(X))
    return X, y, codes, weight, proj, lo, hi


# -- kernels ---------------------------------------------------------------------------------
@pytest.mark.parametrize("degree", [1, 2, 3])
def test_ridge_predict_matches_scipy_bsplines(data, degree):
    X, _, _, _, proj, lo, hi = data
    coef = np.random.default_rng(degree).normal(size=(2, N_BASES))
    got = ridge_predict_chunk(X, 0.25, proj, lo, hi, coef, degree)
    np.testing.assert_allclose(got, ridge_reference(X, 0.25, proj, lo, hi, coef, degree),
                               rtol=1e-9, atol=1e-9)


def test_table_predict_matches_numpy(data):
    X, _, _, _, proj, lo, hi = data
    table = np.random.default_rng(0).normal(size=(2, N_BINS))
    np.testing.assert_allclose(table_predict_chunk(X, proj, lo, hi, table),
                               table_reference(X, proj, lo, hi, table), rtol=1e-12)
    # sparse directions (the kernel visits their non-zeros only), one of them all zeros
    sparse = np.array([[0.0, 0.6, 0.0, -0.8], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    lo3, hi3 = np.append(lo, -1.0), np.append(hi, 1.0)
    table3 = np.random.default_rng(1).normal(size=(3, N_BINS))
    np.testing.assert_allclose(table_predict_chunk(X, sparse, lo3, hi3, table3),
                               table_reference(X, sparse, lo3, hi3, table3), rtol=1e-12)


@pytest.mark.parametrize("degree", [1, 3])
def test_spline_gram_scan_matches_numpy(data, degree):
    X, y, _, weight, proj, lo, hi = data
    spread = spread_of(X)
    coef = np.random.default_rng(1).normal(size=(2, N_BASES)) * 0.1
    alpha = np.array([0.3, -0.2, 0.0, 0.9])
    cands = make_candidates(alpha, np.arange(4), np.array([-0.5, 0.0, 0.7]), spread)
    gram = np.zeros((len(cands), N_BASES, degree + 1))
    rhs = np.zeros((len(cands), N_BASES))
    totals = np.zeros(2)
    for a, b in ((0, 150), (150, 400)):  # two chunks accumulate into the same statistics
        spline_gram_scan_chunk(X[a:b], y[a:b], weight[a:b], 0.25, proj, lo, hi, coef, degree,
                               alpha, *cands.kernel_args(), gram, rhs, totals)
    w = weight.astype(np.float64)
    r = y - ridge_reference(X, 0.25, proj, lo, hi, coef, degree)
    np.testing.assert_allclose(totals, [np.sum(w * r * r), w.sum()], rtol=1e-9)
    full = gram_from_band(gram)
    for c in range(len(cands)):
        u = cands.direction(alpha, c)
        np.testing.assert_allclose(np.linalg.norm(u), 1.0)
        B = design(X.astype(np.float64) @ u, cands.lo[c], cands.hi[c], N_BASES, degree)
        np.testing.assert_allclose(full[c], B.T @ (w[:, None] * B), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rhs[c], B.T @ (w * r), rtol=1e-9, atol=1e-9)


def test_class_histogram_scan_matches_numpy(data):
    X, _, codes, weight, proj, lo, hi = data
    spread = spread_of(X)
    table = np.random.default_rng(2).normal(size=(2, N_BINS)) * 0.5
    class_weight = np.array([1.0 / np.sum(codes == 0), 1.0 / np.sum(codes == 1)])
    alpha = np.array([1.0, 0.0, 0.4, 0.0])
    cands = make_candidates(alpha, np.arange(4), offsets(-1.0, 1.0, 0.5), spread)
    hist = np.zeros((len(cands), N_BINS, 2))
    for a, b in ((0, 99), (99, 400)):
        class_histogram_scan_chunk(X[a:b], codes[a:b], weight[a:b], class_weight, proj, lo, hi,
                                   table, alpha, *cands.kernel_args(), hist)
    ysign = 2.0 * codes - 1.0
    w = weight * class_weight[codes] * np.exp(-ysign * table_reference(X, proj, lo, hi, table))
    for c in range(len(cands)):
        if not np.isfinite(cands.l1[c]):
            continue
        ref = np.zeros((N_BINS, 2))
        b = bins(X.astype(np.float64) @ cands.direction(alpha, c), cands.lo[c], cands.hi[c],
                 N_BINS)
        np.add.at(ref, (b, codes), w)
        np.testing.assert_allclose(hist[c], ref, rtol=1e-9, atol=1e-15)


def test_spline_fit_costs_match_least_squares():
    rng = np.random.default_rng(5)
    z = rng.uniform(0, 1, 300)
    r = np.sin(5 * z) + 0.1 * rng.normal(size=300)
    w = rng.uniform(0.5, 1.5, 300)
    B = design(z, 0.0, 1.0, N_BASES, 3)
    P = 2.0 * penalty_matrix(N_BASES)
    sse, coef = spline_fit_costs((B.T @ (w[:, None] * B))[None], (B.T @ (w * r))[None],
                                 float(np.sum(w * r * r)), P)
    # the same penalised fit as an augmented least-squares problem
    root = np.linalg.cholesky(P + 1e-9 * np.eye(N_BASES)).T
    A = np.vstack([np.sqrt(w)[:, None] * B, root])
    ref = np.linalg.lstsq(A, np.concatenate([np.sqrt(w) * r, np.zeros(N_BASES)]), rcond=None)[0]
    np.testing.assert_allclose(coef[0], ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sse[0], np.sum(w * (r - B @ ref) ** 2), rtol=1e-6)


def test_js_divergence_matches_scipy():
    hist = np.random.default_rng(6).uniform(0, 1, size=(5, N_BINS, 2))
    hist[0, :3, 1] = 0.0  # empty bins in one class
    hist[1, :, 0] = hist[1, :, 1]  # identical class histograms
    ref = np.array([2.0 * jensenshannon(h[:, 1], h[:, 0]) ** 2 for h in hist])
    np.testing.assert_allclose(js_divergence(hist), ref, rtol=1e-10, atol=1e-14)
    assert js_divergence(hist)[1] == pytest.approx(0.0, abs=1e-14)
    separated = np.zeros((1, 4, 2))
    separated[0, :2, 0] = 1.0
    separated[0, 2:, 1] = 1.0
    assert js_divergence(separated)[0] == pytest.approx(2.0 * np.log(2.0))


def test_weak_learner_table_is_half_log_ratio():
    hist = np.array([[3.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
    eps = 0.3 / 3
    ref = 0.5 * np.log((hist[:, 1] / 8.0 + eps) / (hist[:, 0] / 8.0 + eps))
    np.testing.assert_allclose(weak_learner_table(hist, 0.3), ref)


def test_projection_ranges_hold_every_projected_value(data):
    X = data[0]
    U = np.random.default_rng(7).normal(size=(20, 4))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    lo, hi = projection_ranges(U, spread_of(X))
    z = X.astype(np.float64) @ U.T
    # uniform features are well inside mean +- 4 sd: the range is the exact reach
    assert np.all(z.min(0) >= lo - 1e-9) and np.all(z.max(0) <= hi + 1e-9)
    reach = np.abs(U) @ (X.max(0).astype(np.float64) - X.min(0).astype(np.float64))
    np.testing.assert_allclose(hi - lo, reach, rtol=1e-9)


class _CountedCov(np.ndarray):
    """A covariance that records the shapes of the matrix products it takes part in."""

    products: ClassVar[list[tuple[int, ...]]] = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, _CountedCov) else x for x in inputs]
        if ufunc is np.matmul:
            _CountedCov.products.extend(np.shape(x) for x in plain)
        return getattr(ufunc, method)(*plain, **kwargs)


def test_candidate_ranges_match_the_dense_directions():
    """Scales, ranges and ``l1`` of moved coordinates (one, two, back to the zero vector)
    against :func:`projection_ranges` of the explicit unit directions; the covariance is
    multiplied by ``alpha`` alone, never by every candidate's direction."""
    rng = np.random.default_rng(11)
    d = 9
    X = rng.normal(size=(80, d)) * rng.uniform(0.2, 4.0, d) + rng.normal(size=d)
    X[:, 4] = 2.5  # a constant feature: a flat projection
    spread = spread_of(X)
    _CountedCov.products.clear()
    counted = FeatureSpread(spread.minimum, spread.maximum, spread.mean,
                                          spread.cov.view(_CountedCov))
    alpha = np.array([0.0, 0.7, 0.0, -1.3, 0.0, 0.0, 0.2, 0.0, 0.0])
    sets = [make_candidates(alpha, np.arange(d), offsets(-1.0, 1.0, 0.25), counted),
            make_candidates(np.array([0, 0, 0, 0, 1.5, 0, 0, 0, 0.0]), np.arange(d),
                            np.array([-1.5, -0.5, 0.0, 2.0]), counted),
            start_candidates(d, counted, pairs=True)]
    alphas = [alpha, np.eye(d)[4] * 1.5, np.zeros(d)]
    assert all(len(shape) < 2 or shape[0] == d for shape in _CountedCov.products)
    for cands, a in zip(sets, alphas, strict=True):
        A = np.array([cands.raw(a, c) for c in range(len(cands))])
        norm = np.linalg.norm(A, axis=1)
        zero = norm == 0.0
        U = A / np.where(zero, 1.0, norm)[:, None]
        lo, hi = projection_ranges(U, spread)
        np.testing.assert_array_equal(cands.scale == 0.0, zero)
        np.testing.assert_allclose(cands.scale[~zero], 1.0 / norm[~zero], rtol=1e-12)
        np.testing.assert_allclose(cands.lo, lo, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(cands.hi, hi, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(cands.l1, np.where(zero, np.inf, np.abs(U).sum(axis=1)),
                                   rtol=1e-12)
    assert np.sum(sets[1].scale == 0.0) == 1  # 1.5 e_4 - 1.5 e_4, found exactly
    flat = sets[2].feature == 4  # e_4 alone: the constant feature's [2.5 -+ 0.5]
    np.testing.assert_allclose(sets[2].lo[flat][0], 2.0)


def test_make_candidates_marks_the_zero_vector():
    spread = FeatureSpread(np.zeros(3), np.ones(3), np.full(3, 0.5), np.eye(3) / 12)
    cands = make_candidates(np.array([1.0, 0.0, 0.0]), np.arange(3), np.array([-1.0, 1.0]),
                            spread)
    assert np.isinf(cands.l1[0]) and cands.scale[0] == 0.0
    np.testing.assert_allclose(cands.direction(np.array([1.0, 0, 0]), 1), [1.0, 0, 0])
    np.testing.assert_allclose(cands.l1[3], np.sqrt(2.0))


def test_start_candidates_are_coordinates_and_signed_pairs():
    spread = FeatureSpread(np.zeros(3), np.ones(3), np.full(3, 0.5), np.eye(3) / 12)
    starts = start_candidates(3, spread, pairs=True)
    U = np.array([starts.direction(np.zeros(3), c) for c in range(len(starts))])
    h = 2**-0.5
    ref = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [h, h, 0], [h, -h, 0], [h, 0, h],
                    [h, 0, -h], [0, h, h], [0, h, -h]])
    np.testing.assert_allclose(U, ref, atol=1e-15)
    np.testing.assert_allclose(starts.l1, np.abs(ref).sum(axis=1))
    np.testing.assert_allclose(starts.raw(np.zeros(3), 4), [1.0, -1.0, 0.0])
    assert len(start_candidates(3, spread, pairs=False)) == 3


def test_scan_kernels_cost_two_coordinate_candidates(data):
    """Pair starts move two coordinates at once: both kernels against numpy references."""
    X, y, codes, weight, proj, lo, hi = data
    starts = start_candidates(4, spread_of(X), pairs=True)
    alpha = np.zeros(4)
    coef = np.random.default_rng(1).normal(size=(2, N_BASES)) * 0.1
    gram = np.zeros((len(starts), N_BASES, 4))
    rhs = np.zeros((len(starts), N_BASES))
    totals = np.zeros(2)
    spline_gram_scan_chunk(X, y, weight, 0.25, proj, lo, hi, coef, 3, alpha,
                           *starts.kernel_args(), gram, rhs, totals)
    table = np.random.default_rng(2).normal(size=(2, N_BINS)) * 0.5
    hist = np.zeros((len(starts), N_BINS, 2))
    class_histogram_scan_chunk(X, codes, weight, np.ones(2), proj, lo, hi, table, alpha,
                               *starts.kernel_args(), hist)
    w = weight.astype(np.float64)
    r = y - ridge_reference(X, 0.25, proj, lo, hi, coef, 3)
    wb = w * np.exp(-(2.0 * codes - 1.0) * table_reference(X, proj, lo, hi, table))
    full = gram_from_band(gram)
    for c in range(len(starts)):
        z = X.astype(np.float64) @ starts.direction(alpha, c)
        B = design(z, starts.lo[c], starts.hi[c], N_BASES, 3)
        np.testing.assert_allclose(full[c], B.T @ (w[:, None] * B), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rhs[c], B.T @ (w * r), rtol=1e-9, atol=1e-9)
        ref = np.zeros((N_BINS, 2))
        np.add.at(ref, (bins(z, starts.lo[c], starts.hi[c], N_BINS), codes), wb)
        np.testing.assert_allclose(hist[c], ref, rtol=1e-9, atol=1e-15)


def test_pair_start_reaches_a_difference_no_single_coordinate_explains():
    """r = (x1 - x2)^2 + 0.3 x3: x3 is the best single coordinate, and no one-coordinate move
    from e3 reaches x1 - x2; the pair start begins at (e1 - e2) / sqrt 2."""
    rng = np.random.default_rng(21)
    X = rng.uniform(0, 1, size=(400, 5)).astype(np.float32)
    x = X.astype(np.float64)
    target = (x[:, 0] - x[:, 1]) ** 2 + 0.3 * x[:, 2]
    r = (target - target.mean() + 0.01 * rng.normal(size=400)).astype(np.float32)
    scan = one_pass_ppr_scan(X, r, np.ones(400, dtype=np.float32), 0.1, 3)
    kwargs = dict(coarse_step=0.25, fine_step=0.05, max_iter=4)
    pairs = informative_feature_first(scan, 5, spread_of(X), lambda g: g / 15.0, start="pairs",
                                      **kwargs)
    single = informative_feature_first(scan, 5, spread_of(X), lambda g: g / 15.0,
                                       start="coordinate", **kwargs)
    u = pairs.alpha * np.sign(pairs.alpha[0])
    np.testing.assert_allclose(u, [2**-0.5, -(2**-0.5), 0, 0, 0], atol=0.05)
    assert single.alpha[2] != 0 and pairs.cost < 0.5 * single.cost


def test_relaxed_refit_moves_a_shrunk_direction_to_the_data_on_its_features():
    """r = (x1 + x2 / 4)^2 + noise: the L1 term shrinks the direction toward x1 (or holds
    it there); the relaxed refit (lam = 0) over its features, or over x1 and the ``chosen``
    x2, reaches (4, 1) / sqrt 17 and never touches x3."""
    rng = np.random.default_rng(22)
    X = rng.uniform(0, 1, size=(400, 3)).astype(np.float32)
    x = X.astype(np.float64)
    target = (x[:, 0] + x[:, 1] / 4) ** 2
    r = (target - target.mean() + 0.02 * rng.normal(size=400)).astype(np.float32)
    scan = one_pass_ppr_scan(X, r, np.ones(400, dtype=np.float32), 0.1, 3)
    kwargs = dict(coarse_step=0.25, fine_step=0.05, max_iter=6)
    truth = np.array([4, 1, 0]) / 17**0.5
    shrunk = informative_feature_first(scan, 3, spread_of(X), lambda g: 3 * g,
                                       start="coordinate", **kwargs)
    axis = informative_feature_first(scan, 3, spread_of(X), lambda g: 10 * g,
                                     start="coordinate", **kwargs)
    assert 0 < abs(shrunk.alpha[1] / shrunk.alpha[0]) < 0.2 and shrunk.alpha[2] == 0
    assert np.count_nonzero(axis.alpha) == 1
    # a one-feature direction with nothing chosen beside it has nothing to refit
    assert relax_direction(scan, axis, spread_of(X), **kwargs) is axis
    for found, chosen in ((shrunk, None), (axis, np.array([1]))):
        relaxed = relax_direction(scan, found, spread_of(X), chosen=chosen, **kwargs)
        np.testing.assert_allclose(relaxed.alpha * np.sign(relaxed.alpha[0]), truth,
                                   atol=0.03)
        assert relaxed.fit_cost < found.fit_cost and relaxed.cost == relaxed.fit_cost
        assert relaxed.lam == found.lam and relaxed.n_scans > found.n_scans
        # its cost is that of the direction scanned alone, and its spline that direction's
        alone = direction_cost(scan, relaxed.alpha, spread_of(X))
        assert alone.fit_cost == pytest.approx(relaxed.fit_cost, rel=1e-9)
        np.testing.assert_allclose(alone.stat, relaxed.stat, rtol=1e-9)


def test_drop_candidates_add_the_direction_without_each_coordinate():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4)).astype(np.float32)
    spread = spread_of(X)
    alpha = np.array([0.0004, 2.0, 0.0, -1.0])
    deltas = offsets(-1.0, 1.0, 0.5)
    grid = make_candidates(alpha, np.arange(4), deltas, spread)
    cands = drop_candidates(alpha, np.arange(4), deltas, spread)
    n = len(grid)
    assert len(cands) == n + 3  # the zero coordinate has nothing to drop
    np.testing.assert_array_equal(cands.delta[:n], grid.delta)
    for c, m in zip(range(n, n + 3), (0, 1, 3), strict=True):
        expected = alpha.copy()
        expected[m] = 0.0
        expected /= np.linalg.norm(expected)
        u = cands.direction(alpha, c)
        assert u[m] == 0.0
        np.testing.assert_allclose(u, expected, rtol=1e-12, atol=0)
        lo, hi = projection_ranges(expected[None], spread)
        np.testing.assert_allclose([cands.lo[c], cands.hi[c]], [lo[0], hi[0]], rtol=1e-9)
        assert cands.l1[c] == pytest.approx(np.abs(expected).sum(), rel=1e-12)
    # a relaxed direction that does not need a coordinate sets it to exactly zero (a
    # fixed grid of moves only shrinks it, round after round): the residual is x1's alone
    x = X.astype(np.float64)
    r = (np.tanh(x[:, 0]) + 0.05 * rng.normal(size=200)).astype(np.float32)
    r -= r.mean()
    scan = one_pass_ppr_scan(X, r, np.ones(200, dtype=np.float32), 0.1, 3)
    start = direction_cost(scan, np.array([1.0, 0.0004, 0.0, 0.0]), spread)
    relaxed = relax_direction(scan, start, spread, coarse_step=0.25, fine_step=0.05,
                              max_iter=6)
    assert relaxed.converged and relaxed.fit_cost < start.fit_cost
    assert relaxed.alpha[1] == 0.0 and relaxed.alpha[0] > 0


def test_search_on_a_support_is_the_search_of_those_columns():
    # r depends on x1 and x3; the other features add noise a search without the L1 term
    # would use
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(300, 5)).astype(np.float32)
    x = X.astype(np.float64)
    r = ((x[:, 0] - x[:, 2]) ** 2 + 0.1 * rng.normal(size=300)).astype(np.float32)
    r -= r.mean()
    w = np.ones(300, dtype=np.float32)
    support = np.array([0, 2, 3])
    kwargs = dict(coarse_step=0.25, fine_step=0.05, max_iter=6, start="pairs")
    scan, spread, lift = on_support(one_pass_ppr_scan(X, r, w, 0.1, 3), spread_of(X),
                                    support)
    found = lift(informative_feature_first(scan, 3, spread, lambda g: 0.0, **kwargs))
    # the reference: numpy least squares per candidate on the columns alone
    cols = np.ascontiguousarray(X[:, support])
    ref = informative_feature_first(separate_ppr_scan(cols, r, w, 0.1, 3), 3,
                                    spread_of(cols), lambda g: 0.0, **kwargs)
    placed = np.zeros(5)
    placed[support] = ref.alpha
    np.testing.assert_allclose(found.alpha, placed, atol=1e-12)
    assert found.alpha[[1, 4]].tolist() == [0.0, 0.0]
    np.testing.assert_allclose([found.lo, found.hi], [ref.lo, ref.hi], rtol=1e-9)
    np.testing.assert_allclose(found.cost, ref.cost, rtol=1e-6)
    np.testing.assert_allclose(found.stat, ref.stat, rtol=1e-4, atol=1e-6)
    assert found.n_scans == ref.n_scans
    np.testing.assert_allclose(np.abs(found.alpha), [2**-0.5, 0, 2**-0.5, 0, 0], atol=0.05)


# -- one pass for all candidates vs one evaluation per candidate ------------------------------
def one_pass_ppr_scan(X, r, w, smoothing, degree):
    P = smoothing * penalty_matrix(N_BASES)
    empty = np.zeros((0, X.shape[1]))

    def scan(alpha: np.ndarray, cands: Candidates):
        gram = np.zeros((len(cands), N_BASES, degree + 1))
        rhs = np.zeros((len(cands), N_BASES))
        totals = np.zeros(2)
        spline_gram_scan_chunk(X, r, w, 0.0, empty, np.zeros(0), np.zeros(0),
                               np.zeros((0, N_BASES)), degree, alpha, *cands.kernel_args(),
                               gram, rhs, totals)
        sse, coef = spline_fit_costs(gram_from_band(gram), rhs, totals[0], P)
        return sse, coef

    return scan


def separate_ppr_scan(X, r, w, smoothing, degree):
    P = smoothing * penalty_matrix(N_BASES)
    root = np.linalg.cholesky(P + 1e-9 * np.eye(N_BASES)).T
    sw = np.sqrt(w.astype(np.float64))
    r64 = r.astype(np.float64)

    def scan(alpha: np.ndarray, cands: Candidates):
        g = np.full(len(cands), np.inf)
        coefs = []
        for c in range(len(cands)):
            u = cands.direction(alpha, c)
            B = design(X.astype(np.float64) @ u, cands.lo[c], cands.hi[c], N_BASES, degree)
            A = np.vstack([sw[:, None] * B, root])
            coef = np.linalg.lstsq(A, np.concatenate([sw * r64, np.zeros(N_BASES)]),
                                   rcond=None)[0]
            coefs.append(coef)
            g[c] = np.sum(w * (r64 - B @ coef) ** 2)
        return g, coefs

    return scan


def one_pass_js_scan(X, codes, w):
    empty = np.zeros((0, X.shape[1]))
    cw = np.ones(2)

    def scan(alpha: np.ndarray, cands: Candidates):
        hist = np.zeros((len(cands), N_BINS, 2))
        class_histogram_scan_chunk(X, codes, w, cw, empty, np.zeros(0), np.zeros(0),
                                   np.zeros((0, N_BINS)), alpha, *cands.kernel_args(), hist)
        return -js_divergence(hist), hist

    return scan


def separate_js_scan(X, codes, w):
    w = w.astype(np.float64)

    def scan(alpha: np.ndarray, cands: Candidates):
        g = np.full(len(cands), np.inf)
        for c in range(len(cands)):
            z = X.astype(np.float64) @ cands.direction(alpha, c)
            edges = np.linspace(cands.lo[c], cands.hi[c], N_BINS + 1)
            zc = np.clip(z, cands.lo[c], cands.hi[c])
            hp = np.histogram(zc[codes == 1], edges, weights=w[codes == 1])[0]
            hm = np.histogram(zc[codes == 0], edges, weights=w[codes == 0])[0]
            g[c] = -2.0 * jensenshannon(hp, hm) ** 2
        return g, [None] * len(cands)

    return scan


@pytest.mark.parametrize("start", ["coordinate", "pairs"])
@pytest.mark.parametrize("tau", [15.0, np.inf])
def test_ppr_search_one_pass_equals_separate_evaluation(tau, start):
    rng = np.random.default_rng(11)
    X = rng.uniform(0, 1, size=(300, 4)).astype(np.float32)
    r = (X[:, 0] * X[:, 1] - 0.25 + 0.05 * rng.normal(size=300)).astype(np.float32)
    w = np.ones(300, dtype=np.float32)
    spread = spread_of(X)
    kwargs = dict(coarse_step=0.25, fine_step=0.05, max_iter=4, start=start)
    one = informative_feature_first(one_pass_ppr_scan(X, r, w, 0.1, 3), 4, spread,
                                    lambda g: g / tau, **kwargs)
    sep = informative_feature_first(separate_ppr_scan(X, r, w, 0.1, 3), 4, spread,
                                    lambda g: g / tau, **kwargs)
    np.testing.assert_allclose(one.alpha, sep.alpha, atol=1e-12)
    np.testing.assert_allclose(one.cost, sep.cost, rtol=1e-6)
    np.testing.assert_allclose(one.stat, sep.stat, rtol=1e-4, atol=1e-6)
    # the start scan and at least one coordinate scan (from e_i, at least one move too)
    assert one.n_scans == sep.n_scans >= (2 if start == "pairs" else 3)
    assert np.count_nonzero(one.alpha[:2]) == 2  # x1 x2 needs both coordinates


def test_js_search_one_pass_equals_separate_evaluation():
    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, size=(500, 3)).astype(np.float32)
    codes = (X[:, 0] + 0.6 * X[:, 1] > 0.1).astype(np.int32)
    w = rng.uniform(0.5, 1.5, 500).astype(np.float32)
    spread = spread_of(X)
    kwargs = dict(coarse_step=0.2, fine_step=0.05, max_iter=4)
    one = informative_feature_first(one_pass_js_scan(X, codes, w), 3, spread,
                                    lambda g: abs(g) / 30.0, **kwargs)
    sep = informative_feature_first(separate_js_scan(X, codes, w), 3, spread,
                                    lambda g: abs(g) / 30.0, **kwargs)
    np.testing.assert_allclose(one.alpha, sep.alpha, atol=1e-12)
    np.testing.assert_allclose(one.cost, sep.cost, rtol=1e-9)
    # the direction found separates the classes along x1 + 0.6 x2
    assert one.alpha[1] / one.alpha[0] == pytest.approx(0.6, abs=0.15)


def test_search_never_picks_the_zero_vector_without_penalty():
    rng = np.random.default_rng(13)
    X = rng.uniform(0, 1, size=(200, 2)).astype(np.float32)
    r = (X[:, 0] + 0.01 * rng.normal(size=200)).astype(np.float32)
    result = informative_feature_first(
        one_pass_ppr_scan(X, r, np.ones(200, dtype=np.float32), 0.1, 3), 2, spread_of(X),
        lambda g: 0.0, coarse_step=0.5, fine_step=0.1, max_iter=3)
    assert np.all(np.isfinite(result.alpha))
    assert np.linalg.norm(result.alpha) == pytest.approx(1.0)


def test_sequential_search_one_pass_equals_separate_evaluation():
    rng = np.random.default_rng(14)
    X = rng.uniform(0, 1, size=(200, 3)).astype(np.float32)
    r = (X[:, 0] * X[:, 1] - 0.25 + 0.05 * rng.normal(size=200)).astype(np.float32)
    w = np.ones(200, dtype=np.float32)
    spread = spread_of(X)
    kwargs = dict(coarse_step=0.5, fine_step=0.1, max_iter=2)
    one = sequential_coordinate_search(one_pass_ppr_scan(X, r, w, 0.1, 3), 3, spread,
                                       lambda g: 0.0, **kwargs)
    sep = sequential_coordinate_search(separate_ppr_scan(X, r, w, 0.1, 3), 3, spread,
                                       lambda g: 0.0, **kwargs)
    np.testing.assert_allclose(one.alpha, sep.alpha, atol=1e-12)
    np.testing.assert_allclose(one.cost, sep.cost, rtol=1e-6)
    # two sweeps over three coordinates, a coarse and a fine scan each
    assert np.count_nonzero(one.alpha[:2]) == 2 and one.n_scans == 1 + 2 * 3 * 2


def test_weighted_start_is_the_gain_weighted_sum_of_the_coordinates():
    """KLBoosting's start: each coordinate weighted by its divergence (classification) or by
    the drop of the residual sum of squares it gives alone (regression)."""
    rng = np.random.default_rng(15)
    X = rng.uniform(-1, 1, size=(400, 4)).astype(np.float32)
    codes = (X[:, 0] + 0.5 * X[:, 1] > 0.2).astype(np.int32)
    w = rng.uniform(0.5, 1.5, 400).astype(np.float32)
    spread = spread_of(X)
    kwargs = dict(coarse_step=0.5, fine_step=0.1, max_iter=0, start="weighted")
    found = sequential_coordinate_search(one_pass_js_scan(X, codes, w), 4, spread,
                                         lambda g: 0.0, **kwargs)
    singles = start_candidates(4, spread, pairs=False)
    divergence = -separate_js_scan(X, codes, w)(np.zeros(4), singles)[0]
    assert np.all(divergence > 0)
    np.testing.assert_allclose(found.alpha, divergence / np.linalg.norm(divergence), rtol=1e-9)
    assert found.n_scans == 2 and found.fit_cost == pytest.approx(
        separate_js_scan(X, codes, w)(found.alpha, make_candidates(
            found.alpha, np.zeros(1, dtype=np.int64), np.zeros(1), spread))[0][0], rel=1e-9)

    r = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.1 * rng.normal(size=400)).astype(np.float32)
    r -= r.mean()
    ones = np.ones(400, dtype=np.float32)
    rss = float(np.sum(r.astype(np.float64) ** 2))
    found = informative_feature_first(one_pass_ppr_scan(X, r, ones, 0.1, 3), 4, spread,
                                      lambda g: 0.0, null_cost=lambda: rss, **kwargs)
    gain = rss - separate_ppr_scan(X, r, ones, 0.1, 3)(np.zeros(4), singles)[0]
    np.testing.assert_allclose(found.alpha, gain / np.linalg.norm(gain), rtol=1e-6)


def test_weighted_start_falls_back_to_the_best_coordinate():
    """With one informative coordinate the weighted start is that coordinate (no extra scan)."""
    rng = np.random.default_rng(16)
    X = rng.uniform(0, 1, size=(200, 3)).astype(np.float32)
    r = (X[:, 1] - 0.5).astype(np.float32)
    scan = one_pass_ppr_scan(X, r, np.ones(200, dtype=np.float32), 0.1, 3)
    rss = float(np.sum(r.astype(np.float64) ** 2))
    singles = start_candidates(3, spread_of(X), pairs=False)
    g = scan(np.zeros(3), singles)[0]
    # a reference cost between the best coordinate and the others: one positive gain
    found = sequential_coordinate_search(scan, 3, spread_of(X), lambda g: 0.0, max_iter=0,
                                         start="weighted",
                                         null_cost=lambda: 0.5 * (g[1] + min(g[0], g[2])))
    np.testing.assert_array_equal(found.alpha, [0.0, 1.0, 0.0])
    assert found.n_scans == 1 and rss > g[1]
    with pytest.raises(ValueError, match="start must be one of"):
        sequential_coordinate_search(scan, 3, spread_of(X), lambda g: 0.0, start="best")


def test_weighted_sequential_search_one_pass_equals_separate_evaluation():
    rng = np.random.default_rng(17)
    X = rng.uniform(-1, 1, size=(300, 3)).astype(np.float32)
    codes = (X[:, 0] - 0.4 * X[:, 2] > 0.0).astype(np.int32)
    w = np.ones(300, dtype=np.float32)
    kwargs = dict(coarse_step=0.5, fine_step=0.1, max_iter=2, start="weighted")
    one = sequential_coordinate_search(one_pass_js_scan(X, codes, w), 3, spread_of(X),
                                       lambda g: abs(g) / 30.0, **kwargs)
    sep = sequential_coordinate_search(separate_js_scan(X, codes, w), 3, spread_of(X),
                                       lambda g: abs(g) / 30.0, **kwargs)
    np.testing.assert_allclose(one.alpha, sep.alpha, atol=1e-12)
    np.testing.assert_allclose(one.cost, sep.cost, rtol=1e-9)
    assert one.n_scans == sep.n_scans == 2 + 2 * 3 * 2
    assert one.alpha[2] / one.alpha[0] == pytest.approx(-0.4, abs=0.15)


# -- ties and convergence ------------------------------------------------------------------
def test_first_minimum_gives_near_ties_to_the_first_candidate():
    # 1 + 1e-13 and 1 differ by round-off only: the earlier candidate wins, as np.argmin
    # would give on exactly equal costs
    cost = np.array([3.0, 1.0 + 1e-13, 1.0, 2.0])
    assert np.argmin(cost) == 2 and first_minimum(cost) == 1
    assert first_minimum(np.array([3.0, 1.001, 1.0])) == 2  # a real difference still counts
    assert first_minimum(np.array([np.inf, np.inf])) == 0
    # the width is relative to the scan's costs: tiny costs keep their differences
    assert first_minimum(np.array([2e-12, 1e-12])) == 1


def alignment_scan(target: np.ndarray):
    """A scan whose cost is ``-u . target``: the best direction is ``target / ||target||``."""

    def scan(alpha, cands):
        U = np.array([cands.direction(alpha, c) for c in range(len(cands))])
        g = -(U @ target)
        return g, U

    return scan


@pytest.mark.parametrize("search", [informative_feature_first, sequential_coordinate_search])
def test_search_says_whether_it_converged(search):
    """Reaching (1, ..., 1) / sqrt(6) from a coordinate takes a move of each of the five
    other coordinates: two rounds are too few, twenty are enough."""
    X = np.random.default_rng(15).uniform(size=(50, 6)).astype(np.float32)
    target = np.ones(6)
    kwargs = dict(coarse_step=0.5, fine_step=0.1, start="coordinate")
    short = search(alignment_scan(target), 6, spread_of(X), lambda g: 0.0, max_iter=1,
                   **kwargs)
    assert not short.converged
    full = search(alignment_scan(target), 6, spread_of(X), lambda g: 0.0, max_iter=20,
                  **kwargs)
    assert full.converged
    np.testing.assert_allclose(full.alpha, target / np.sqrt(6), atol=1e-9)
    # max_iter = 0 asks for the start alone: nothing left unfinished
    assert search(alignment_scan(target), 6, spread_of(X), lambda g: 0.0, max_iter=0,
                  **kwargs).converged


@pytest.mark.parametrize("n_features", [MAX_PAIR_START_FEATURES, MAX_PAIR_START_FEATURES + 1])
def test_pair_start_costs_pairs_only_up_to_its_feature_limit(n_features):
    """The signed pairs number n (n - 1): wider data starts from the single coordinates."""
    rng = np.random.default_rng(18)
    X = rng.uniform(-1, 1, size=(50, n_features)).astype(np.float32)
    r = (X[:, 0] - X[:, 1]).astype(np.float32)
    inner = one_pass_ppr_scan(X, r, np.ones(50, dtype=np.float32), 0.1, 3)
    sizes = []

    def scan(alpha, candidates):
        sizes.append(len(candidates.feature))
        return inner(alpha, candidates)

    informative_feature_first(scan, n_features, spread_of(X), lambda g: 0.0, max_iter=0,
                              start="pairs")
    pairs = n_features * (n_features - 1) if n_features <= MAX_PAIR_START_FEATURES else 0
    assert sizes[0] == n_features + pairs
