"""Difference penalties: the paper's square D_d, closed-form inverses, Steps A/B, online trick."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import BSpline
from scipy.linalg import block_diag

from streamlearn.features.bspline import BSplineMap, bspline_encode_row
from streamlearn.features.difference_penalty import (
    difference_matrix,
    gram_d,
    inverse_transpose,
    next_block,
    score_d,
    step_a,
    step_b,
    update_d,
    update_d_pair,
)

#: The encoders' warp argument for uniform knots.
NO_WARP = np.zeros(0)

ORDERS = (0, 1, 2)


def paper_d(n: int, order: int) -> np.ndarray:
    """D_d written entry by entry as in paper 000, Sec. 3 (square, extra first row)."""
    d1 = np.zeros((n, n))
    for i in range(n):
        d1[i, i] = 1.0
        if i > 0:
            d1[i, i - 1] = -1.0
    return [np.eye(n), d1, d1 @ d1][order]


def test_difference_matrices_are_the_papers():
    np.testing.assert_array_equal(difference_matrix(5, 0), np.eye(5))
    np.testing.assert_array_equal(difference_matrix(5, 1), paper_d(5, 1))
    d2 = difference_matrix(5, 2)
    np.testing.assert_array_equal(d2[0], [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(d2[1], [-2, 1, 0, 0, 0])
    np.testing.assert_array_equal(d2[2], [1, -2, 1, 0, 0])
    np.testing.assert_array_equal(d2[4], [0, 0, 1, -2, 1])
    # rows after the first compute (negated) differences: (D1 w)_i = w_i - w_{i-1}
    w = np.random.default_rng(0).normal(size=5)
    np.testing.assert_allclose((difference_matrix(5, 1) @ w)[1:], np.diff(w))
    np.testing.assert_allclose((d2 @ w)[2:], np.diff(w, 2))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_closed_form_inverse_transpose(order, n):
    ref = np.linalg.inv(paper_d(n, order)).T
    np.testing.assert_allclose(inverse_transpose(n, order), ref, atol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
def test_steps_a_and_b_apply_inverse_transpose_and_inverse(order):
    n = 9
    a = np.random.default_rng(order).normal(size=n)
    d = paper_d(n, order)
    got = a.copy()
    step_a(got, order)
    np.testing.assert_allclose(got, np.linalg.inv(d).T @ a, rtol=1e-12)
    got = a.copy()
    step_b(got, order)
    np.testing.assert_allclose(got, np.linalg.inv(d) @ a, rtol=1e-12)


def design(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_bases: int, degree: int):
    """Dense Phi of a batch, block per feature, from scipy.interpolate.BSpline."""
    blocks = []
    for f in range(x.shape[1]):
        h = (hi[f] - lo[f]) / (n_bases - degree)
        t = lo[f] + (np.arange(n_bases + degree + 1) - degree) * h
        xc = np.clip(x[:, f].astype(np.float64), lo[f], hi[f])
        blocks.append(BSpline.design_matrix(xc, t, degree).toarray())
    return np.hstack(blocks)


def encode(m: BSplineMap, row: np.ndarray):
    idx = np.empty(m.max_row_nnz(row.shape[0]), dtype=np.int32)
    val = np.empty_like(idx, dtype=np.float32)
    nnz = bspline_encode_row(row, m.lo_, m.scale_, m.n_bases, m.degree, m.zero_preserving,
                             NO_WARP, idx,
                             val)
    return idx, val, nnz


@pytest.mark.parametrize("degree", [1, 3])
@pytest.mark.parametrize("order", ORDERS)
def test_score_d_equals_w_dot_psi(degree, order):
    n_bases, n_features = 10, 3
    m = BSplineMap(degree, n_bases, order).fit(np.zeros(n_features), np.ones(n_features))
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.1, 1.1, (15, n_features)).astype(np.float32)
    w = rng.normal(size=n_bases * n_features)
    dinv = block_diag(*[np.linalg.inv(paper_d(n_bases, order))] * n_features)
    w_d = dinv @ w
    psi = design(X, m.lo_, m.hi_, n_bases, degree) @ dinv  # rows are Psi_d(x)^T = Phi^T D^-1
    for r, row in enumerate(X):
        idx, val, nnz = encode(m, row)
        np.testing.assert_allclose(score_d(w_d, idx, val, nnz), psi[r] @ w, rtol=1e-5)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("zero_preserving", [False, True])
def test_update_d_equals_dense_l_d_product(degree, order, zero_preserving):
    n_bases, n_features = 9, 4
    m = BSplineMap(degree, n_bases, order, zero_preserving).fit(
        np.zeros(n_features), np.full(n_features, 2.0)
    )
    n_cols = m.n_columns_per_feature
    d = paper_d(n_cols, order)
    l_d = block_diag(*[np.linalg.inv(d) @ np.linalg.inv(d).T] * n_features)
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 2.2, (12, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.3] = 0.0
    for row in X:
        w_d = rng.normal(size=n_features * n_cols)
        idx, val, nnz = encode(m, row)
        phi = np.zeros(n_features * n_cols)
        np.add.at(phi, idx[:nnz], val[:nnz])
        expected = w_d + 0.3 * l_d @ phi
        update_d(w_d, idx, val, nnz, n_cols, order, 0.3)
        np.testing.assert_allclose(w_d, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("order", [1, 2])
def test_gram_d_is_the_product_of_the_inverses(order):
    n = 11
    d = paper_d(n, order)
    l_d = np.linalg.inv(d) @ np.linalg.inv(d).T
    got = np.array([[gram_d(order, float(i), float(j)) for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(got, l_d, rtol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
def test_update_d_pair_and_blocks_of_many_entries(order):
    """Two models moved at once equal two single updates; a block with more entries than one
    sweep combines (here 6 and 9 of a feature's 9 columns, in arbitrary order of features)
    still gets the dense L_d product."""
    n_cols, n_features = 9, 3
    rng = np.random.default_rng(8)
    idx = np.array([9, 10, 11, 12, 13, 14, 18, 19, 20, 21, 22, 23, 24, 25, 26], np.int32)
    val = rng.uniform(0.1, 1.0, idx.size).astype(np.float32)
    phi = np.zeros(n_features * n_cols)
    np.add.at(phi, idx, val)
    d = paper_d(n_cols, order)
    l_d = block_diag(*[np.linalg.inv(d) @ np.linalg.inv(d).T] * n_features)
    w_d, avg = rng.normal(size=(2, n_features * n_cols))
    expected_w, expected_avg = w_d + 0.3 * l_d @ phi, avg - 0.7 * l_d @ phi
    update_d_pair(w_d, avg, idx, val, idx.size, n_cols, order, 0.3, -0.7)
    np.testing.assert_allclose(w_d, expected_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(avg, expected_avg, rtol=1e-12, atol=1e-12)
    single = expected_w - 0.3 * l_d @ phi
    update_d(single, idx, val, idx.size, n_cols, order, 0.3)
    np.testing.assert_allclose(single, expected_w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", [1, 2])
def test_online_path_matches_materialised_embedding(order):
    """Updates through Steps A/B keep w_d = D^-1 w for the w trained on transform(X)."""
    n_bases, n_features = 12, 3
    m = BSplineMap(3, n_bases, order).fit(np.full(n_features, -1.0), np.ones(n_features))
    rng = np.random.default_rng(7)
    X = rng.uniform(-1.2, 1.2, (30, n_features)).astype(np.float32)
    psi = m.transform(X).astype(np.float64)
    w = np.zeros(psi.shape[1])
    w_d = np.zeros(psi.shape[1])
    for r, row in enumerate(X):
        idx, val, nnz = encode(m, row)
        eta = 0.1 if r % 3 else -0.05
        np.testing.assert_allclose(score_d(w_d, idx, val, nnz), psi[r] @ w, rtol=1e-5, atol=1e-6)
        w += eta * psi[r]
        update_d(w_d, idx, val, nnz, n_bases, order, eta)
    d = block_diag(*[paper_d(n_bases, order)] * n_features)
    np.testing.assert_allclose(d @ w_d, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("zero_preserving", [False, True])
def test_linear_spline_d1_kernel_approaches_min_kernel(zero_preserving):
    """Implicit kernel K_n(x, y) = Psi(x) . Psi(y) of degree-1 splines with D1 on [0, 1].

    With knot spacing h = 1 / (n_bases - 1) the column Psi_i(x) (i >= 1) is the ramp
    clip((x - (i - 1) h) / h, 0, 1) and Psi_0 = 1, so h (K_n(x, y) - 1) equals min(x, y) up to
    h * f (1 - g) where f <= g are the fractional positions of min(x, y) and max(x, y) in their
    knot interval (non-zero only when both lie in the same interval), at most h / 4. The
    zero-preserving variant drops Psi_0, so h K_n(x, y) itself approximates min(x, y).
    Measured: max over a 401 x 401 grid of |h (K_n - c) - min(x, y)|, c = 1 (or 0), for
    n_bases = 10, 40, 160; it must decrease and be at most h / 4 (1.6e-3 for 160 bases).
    """
    grid = np.linspace(0.0, 1.0, 401).astype(np.float32)
    exact = np.minimum.outer(grid.astype(np.float64), grid.astype(np.float64))
    shift = 0.0 if zero_preserving else 1.0
    errors = []
    for n_bases in (10, 40, 160):
        h = 1.0 / (n_bases - 1)
        m = BSplineMap(1, n_bases, 1, zero_preserving).fit([0.0], [1.0])
        psi = m.transform(grid[:, None]).astype(np.float64)
        k = psi @ psi.T
        err = np.abs(h * (k - shift) - exact).max()
        assert err <= h / 4 + 1e-5
        errors.append(err)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1.6e-3


def test_next_block_splits_an_encoding_into_its_features_in_any_order() -> None:
    # features in any order (as sparse rows store them), each block contiguous and
    # ascending, gaps between features; the reference groups runs of idx // n_cols in numpy
    rng = np.random.default_rng(0)
    n_cols = 7
    for _ in range(50):
        features = rng.permutation(12)[: rng.integers(1, 12)]
        blocks = [np.sort(rng.choice(n_cols, rng.integers(1, 4), replace=False)) + f * n_cols
                  for f in features]
        idx = np.concatenate(blocks).astype(np.int32)
        run = np.flatnonzero(np.diff(idx // n_cols)) + 1
        starts, ends = np.r_[0, run], np.r_[run, idx.size]
        k, base, got = 0, -n_cols, []
        while k < idx.size:
            base, end = next_block(idx, k, idx.size, base, n_cols)
            got.append((base, k, end))
            k = end
        assert got == [((idx[a] // n_cols) * n_cols, a, b)
                       for a, b in zip(starts, ends, strict=True)]
