"""Uniform B-spline bases: values against Cox-de Boor and scipy, encoders, materialisation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.interpolate import BSpline

from streamlearn.features.bspline import (
    NUMPY_TRANSFORM_ENTRIES,
    BSplineMap,
    bspline_basis,
    bspline_encode_row,
    bspline_transform,
    bspline_transform_csr,
    bspline_transform_dense,
    bspline_transform_numpy,
    segment_scale,
)

#: The encoders' warp argument for uniform knots.
NO_WARP = np.zeros(0)

DEGREES = (1, 2, 3)


def knots(lo: float, hi: float, n_bases: int, degree: int) -> np.ndarray:
    h = (hi - lo) / (n_bases - degree)
    return lo + (np.arange(n_bases + degree + 1) - degree) * h


def cox_de_boor(x: float, t: np.ndarray, j: int, p: int) -> float:
    """B-spline ``j`` of degree ``p`` on knots ``t`` by the textbook recursion."""
    if p == 0:
        return 1.0 if t[j] <= x < t[j + 1] else 0.0
    left = (x - t[j]) / (t[j + p] - t[j]) * cox_de_boor(x, t, j, p - 1)
    right = (t[j + p + 1] - x) / (t[j + p + 1] - t[j + 1]) * cox_de_boor(x, t, j + 1, p - 1)
    return left + right


def phi_scipy(x: np.ndarray, lo: float, hi: float, n_bases: int, degree: int) -> np.ndarray:
    """Dense B-spline design matrix (clamped inputs) from scipy."""
    xc = np.clip(x.astype(np.float64), lo, hi)
    return BSpline.design_matrix(xc, knots(lo, hi, n_bases, degree), degree).toarray()


def basis_values(x: float, lo: float, hi: float, n_bases: int, degree: int) -> np.ndarray:
    out = np.zeros(4, dtype=np.float32)
    first = bspline_basis(np.float32(x), lo, hi, n_bases, degree, out)
    full = np.zeros(n_bases)
    full[first : first + degree + 1] = out[: degree + 1]
    return full


@pytest.mark.parametrize("degree", DEGREES)
@pytest.mark.parametrize("n_bases", [None, 9])
def test_basis_matches_cox_de_boor(degree, n_bases):
    n_bases = degree + 1 if n_bases is None else n_bases
    lo, hi = -1.5, 2.0
    t = knots(lo, hi, n_bases, degree)
    rng = np.random.default_rng(degree)
    xs = np.concatenate([rng.uniform(lo, hi, 40), [lo, lo + 1e-3]]).astype(np.float32)
    for x in xs:
        ref = [cox_de_boor(float(x), t, j, degree) for j in range(n_bases)]
        np.testing.assert_allclose(basis_values(x, lo, hi, n_bases, degree), ref, atol=2e-7)


@pytest.mark.parametrize("degree", DEGREES)
def test_basis_matches_scipy_including_range_ends(degree):
    lo, hi, n_bases = 0.25, 3.0, 11
    x = np.concatenate([np.linspace(lo, hi, 57), [lo, hi]]).astype(np.float32)
    got = np.array([basis_values(v, lo, hi, n_bases, degree) for v in x])
    np.testing.assert_allclose(got, phi_scipy(x, lo, hi, n_bases, degree), atol=2e-7)


@pytest.mark.parametrize("degree", DEGREES)
def test_partition_of_unity_and_clamping(degree):
    lo, hi, n_bases = -2.0, 5.0, 13
    x = np.random.default_rng(1).uniform(-10, 12, 300).astype(np.float32)
    out = np.zeros(4, dtype=np.float32)
    for v in x:
        first = bspline_basis(v, lo, hi, n_bases, degree, out)
        assert 0 <= first <= n_bases - degree - 1
        assert np.all(out[: degree + 1] >= 0)
        assert abs(float(out[: degree + 1].sum()) - 1.0) < 1e-6
    np.testing.assert_array_equal(basis_values(-100.0, lo, hi, n_bases, degree),
                                  basis_values(lo, lo, hi, n_bases, degree))
    np.testing.assert_array_equal(basis_values(100.0, lo, hi, n_bases, degree),
                                  basis_values(hi, lo, hi, n_bases, degree))


@pytest.mark.parametrize("degree", DEGREES)
def test_encode_row_matches_scipy_design_matrix(degree):
    n_bases = 7
    lo = np.array([0.0, -1.0, 10.0])
    hi = np.array([1.0, 1.0, 20.0])
    X = np.random.default_rng(2).uniform(-2, 22, (20, 3)).astype(np.float32)
    idx = np.empty(3 * (degree + 1), dtype=np.int32)
    val = np.empty(3 * (degree + 1), dtype=np.float32)
    scale = segment_scale(lo, hi, n_bases, degree)
    np.testing.assert_array_equal(scale, (n_bases - degree) / (hi - lo))
    for row in X:
        nnz = bspline_encode_row(row, lo, scale, n_bases, degree, False, NO_WARP, idx, val)
        assert nnz == 3 * (degree + 1)
        dense = np.zeros(3 * n_bases)
        np.add.at(dense, idx[:nnz], val[:nnz])
        ref = np.concatenate(
            [phi_scipy(row[f : f + 1], lo[f], hi[f], n_bases, degree)[0] for f in range(3)]
        )
        np.testing.assert_allclose(dense, ref, atol=2e-7)
        # entries are written feature by feature, in ascending column order
        assert np.all(np.diff(idx[:nnz]) > 0)


def reference_psi(X, lo, hi, n_bases, degree, order):
    """Block-diagonal D_d^-T applied to the scipy design matrix, with dense numpy."""
    d1 = np.eye(n_bases) - np.eye(n_bases, k=-1)
    d = np.linalg.matrix_power(d1, order)
    dinv_t = np.linalg.inv(d).T
    blocks = [phi_scipy(X[:, f], lo[f], hi[f], n_bases, degree) @ dinv_t.T
              for f in range(X.shape[1])]
    return np.hstack(blocks)


@pytest.mark.parametrize("degree", DEGREES)
@pytest.mark.parametrize("order", [0, 1, 2])
def test_transform_dense_and_csr_match_dense_numpy(degree, order):
    n_bases = 8
    lo = np.array([0.0, -3.0])
    hi = np.array([1.0, 3.0])
    X = np.random.default_rng(3).uniform(-4, 4, (25, 2)).astype(np.float32)
    ref = reference_psi(X, lo, hi, n_bases, degree, order)

    out = np.empty((25, 2 * n_bases), dtype=np.float32)
    bspline_transform_dense(X, lo, hi, n_bases, degree, order, False, out)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)

    indptr, indices, data = bspline_transform_csr(X, lo, hi, n_bases, degree, order, False)
    assert indptr.dtype == np.int64 and indices.dtype == np.int32 and data.dtype == np.float32
    assert np.all(data != 0)
    csr = sp.csr_matrix((data, indices, indptr), shape=out.shape).toarray()
    np.testing.assert_array_equal(csr, out)

    m = BSplineMap(degree=degree, n_bases=n_bases, penalty_order=order).fit(lo, hi)
    np.testing.assert_array_equal(m.transform(X), out)
    for a, b in zip(m.transform_csr(X), (indptr, indices, data), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("degree", DEGREES)
@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("zero_preserving", [False, True])
def test_numpy_transform_gives_the_kernels_bits(degree, order, zero_preserving):
    # clamped values on both sides, NaN, the range's ends, and for the zero-preserving
    # variant values at and below lo = 0, on uniform and on warped (float64) positions
    rng = np.random.default_rng(5)
    lo = np.zeros(4) if zero_preserving else np.array([0.0, -3.0, -1.0, 2.0])
    hi = np.array([1.0, 3.0, 2.0, 4.0])
    X = rng.uniform(-4, 5, (300, 4)).astype(np.float32)
    X[0] = np.nan
    X[1] = lo
    X[2] = hi
    X[3, :2] = 0.0
    for Z in (X, X.astype(np.float64) * 1.37):
        n_cols = 9 - (degree if zero_preserving else 0)
        kernel = np.empty((300, 4 * n_cols), dtype=np.float32)
        bspline_transform_dense(Z, lo, hi, 9, degree, order, zero_preserving, kernel)
        got = np.full_like(kernel, np.nan)
        bspline_transform_numpy(Z, lo, hi, 9, degree, order, zero_preserving, got)
        np.testing.assert_array_equal(got, kernel)


def test_transform_takes_numpy_for_small_outputs_only(monkeypatch):
    import streamlearn.features.bspline as bspline

    lo, hi = np.zeros(4), np.ones(4)
    calls = []
    monkeypatch.setattr(bspline, "bspline_transform_dense",
                        lambda *args: calls.append(args[-1].size))
    small = np.empty((8, 4 * 8), dtype=np.float32)
    bspline_transform(np.full((8, 4), 0.3, np.float32), lo, hi, 8, 1, 1, False, small)
    assert calls == []
    ref = np.empty_like(small)
    bspline_transform_dense(np.full((8, 4), 0.3, np.float32), lo, hi, 8, 1, 1, False, ref)
    np.testing.assert_array_equal(small, ref)
    rows = NUMPY_TRANSFORM_ENTRIES // 32 + 1
    big = np.empty((rows, 4 * 8), dtype=np.float32)
    bspline_transform(np.zeros((rows, 4), np.float32), lo, hi, 8, 1, 1, False, big)
    assert calls == [big.size]


def test_d0_embedding_is_sparse():
    m = BSplineMap(degree=2, n_bases=30, penalty_order=0).fit([0.0] * 4, [1.0] * 4)
    X = np.random.default_rng(4).random((10, 4), dtype=np.float32)
    indptr, _, _ = m.transform_csr(X)
    assert np.all(np.diff(indptr) <= 4 * 3)


def test_constant_feature_gets_a_unit_range():
    m = BSplineMap(degree=1, n_bases=5).fit([2.0, 0.0], [2.0, 1.0])
    np.testing.assert_array_equal(m.hi_, [3.0, 1.0])
    assert np.all(np.isfinite(m.transform(np.array([[2.0, 0.5]]))))


@pytest.mark.parametrize("value", [3e20, -1e35, 2.0**60])
def test_a_constant_feature_far_from_zero_keeps_a_range_that_float64_can_tell_apart(value):
    # lo + 1 == lo in float64 beyond 2^53: the width grows with the magnitude instead
    value = float(np.float32(value))  # the rows are float32
    m = BSplineMap(degree=3, n_bases=8).fit([value, 0.0], [value, 1.0])
    assert m.hi_[0] > m.lo_[0] and np.isclose(m.hi_[0] - m.lo_[0], abs(value) * 2.0**-20)
    with np.errstate(all="raise"):
        scale = segment_scale(m.lo_, m.hi_, m.n_bases, m.degree)
    assert np.all(np.isfinite(scale))
    # the constant's row sits on the range's first end: the first basis function's value
    Z = m.transform(np.array([[value, 0.5]], dtype=np.float32))
    np.testing.assert_allclose(Z[0, :8], BSplineMap(degree=3, n_bases=8).fit(
        [0.0], [1.0]).transform(np.zeros((1, 1), dtype=np.float32))[0], atol=1e-6)
