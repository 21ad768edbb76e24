"""Psi(0) = 0 variants for sparse inputs (paper 000, Sec. 5), of one sign or both."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import BSpline

from streamlearn.features import (
    BSplineMap,
    FourierMap,
    HermiteMap,
    bspline_encode_row,
    fourier_encode_row,
    hermite_encode_row,
)

#: The encoders' warp argument for uniform knots.
NO_WARP = np.zeros(0)


def sparse_rows(n_rows: int, n_features: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(n_rows, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.6] = 0.0
    X[0] = 0.0
    return X


def zero_preserving_maps():
    mx = np.full(4, 3.0)
    return [
        BSplineMap(degree, 8, order, True).fit(np.zeros(4), mx)
        for degree in (1, 2, 3) for order in (0, 1, 2)
    ] + [
        FourierMap(3, order, True).fit(np.zeros(4), mx) for order in (1, 2)
    ] + [
        HermiteMap(4, order, True).fit(np.full(4, 0.7), np.full(4, 0.9)) for order in (1, 2)
    ]


@pytest.mark.parametrize("m", zero_preserving_maps(), ids=repr)
def test_zero_inputs_embed_to_zero(m):
    X = sparse_rows(30, 4, 0)
    psi = m.transform(X)
    np.testing.assert_array_equal(m.transform(np.zeros((2, 4))), 0.0)
    n_cols = m.n_columns_per_feature
    blocks = psi.reshape(30, 4, n_cols)
    np.testing.assert_array_equal(blocks[X == 0], 0.0)
    indptr, indices, _ = m.transform_csr(X)
    assert indptr[1] == 0  # the all-zero row stores nothing
    assert np.all(X[np.repeat(np.arange(30), np.diff(indptr)), indices // n_cols] != 0)


def test_encoders_write_nothing_for_zero_features():
    X = sparse_rows(20, 4, 1)
    b = BSplineMap(3, 8, 1, True).fit(np.zeros(4), np.full(4, 3.0))
    f = FourierMap(3, 1, True).fit(np.zeros(4), np.full(4, 3.0))
    h = HermiteMap(4, 1, True).fit(np.full(4, 0.7), np.full(4, 0.9))
    idx = np.empty(64, dtype=np.int32)
    val = np.empty(64, dtype=np.float32)
    for row in X:
        nz = np.flatnonzero(row)
        nnz = bspline_encode_row(row, b.lo_, b.scale_, 8, 3, True, NO_WARP, idx, val)
        assert set(idx[:nnz] // 5) == set(nz) and nnz <= 4 * len(nz)
        nnz = fourier_encode_row(row, f.lo_, f.hi_, f.half_width_, f.weights, True, idx, val)
        assert nnz == 6 * len(nz) and set(idx[:nnz] // 6) == set(nz)
        nnz = hermite_encode_row(row, h.mean_, h.std_, h.weights, np.inf, True, idx, val)
        assert nnz == 4 * len(nz) and set(idx[:nnz] // 4) == set(nz)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_bspline_variant_drops_the_bases_supported_at_zero(degree, order):
    """Columns = D_d^-T (of size n - p) applied to the bases p .. n-1 on [0, hi]."""
    n_bases, hi = 9, 2.0
    X = sparse_rows(25, 1, 2)
    h = hi / (n_bases - degree)
    t = (np.arange(n_bases + degree + 1) - degree) * h
    phi = BSpline.design_matrix(np.clip(X[:, 0].astype(np.float64), 0, hi), t, degree).toarray()
    kept = phi[:, degree:]
    n = n_bases - degree
    d = np.linalg.matrix_power(np.eye(n) - np.eye(n, k=-1), order)
    ref = kept @ np.linalg.inv(d)  # rows: (D^-T Phi)^T
    got = BSplineMap(degree, n_bases, order, True).fit([0.5], [hi]).transform(X)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "full, zp",
    [
        (FourierMap(3, 2), FourierMap(3, 2, True)),
        (HermiteMap(4, 2), HermiteMap(4, 2, True)),
    ],
    ids=["fourier", "hermite"],
)
def test_fourier_and_hermite_variants_subtract_psi_of_zero(full, zp):
    stats = dict(minimum=np.zeros(3), maximum=np.full(3, 4.0), mean=np.ones(3), std=np.ones(3))
    full.fit_from_stats(**stats)
    zp.fit_from_stats(**stats)
    X = sparse_rows(15, 3, 3)
    expected = full.transform(X).astype(np.float64) - full.transform(np.zeros((1, 3)))
    expected[np.repeat(X == 0, zp.n_columns_per_feature, axis=1)] = 0.0
    np.testing.assert_allclose(zp.transform(X), expected, atol=1e-6)


def test_bspline_variant_puts_zero_on_a_knot():
    m = BSplineMap(2, 6, 1, True).fit([0.3, -2.0, -1.0, -3.0], [1.0, -0.5, 3.0, 1.0])
    assert m.n_output_features(3) == 3 * 4
    np.testing.assert_allclose(m.lo_[:2], [0.0, -2.0])
    np.testing.assert_allclose(m.hi_[:2], [1.0, 0.0])
    h = (m.hi_ - m.lo_) / m.n_segments
    z = -m.lo_ / h
    np.testing.assert_allclose(z, np.rint(z), atol=1e-12)  # 0 on a knot
    np.testing.assert_allclose(z, [0, 4, 1, 3])  # segments below 0, in proportion
    assert np.all(m.lo_ <= [0.3, -2.0, -1.0, -3.0]) and np.all(m.hi_ >= [1.0, -0.5, 3.0, 1.0])
    with pytest.raises(ValueError, match="both signs.*n_bases - degree >= 2"):
        BSplineMap(2, 3, 1, True).fit([-1.0], [1.0])
    BSplineMap(2, 3, 1, True).fit([-1.0], [-0.5])  # one sign: one segment will do


def two_signed_rows(n_rows: int, n_features: int, seed: int) -> np.ndarray:
    X = sparse_rows(n_rows, n_features, seed)
    flip = np.random.default_rng(seed + 100).random(X.shape) < 0.5
    return np.where(flip, -X, X).astype(np.float32)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_two_signed_bspline_drops_the_bases_supported_at_zero(degree, order):
    """Columns = D_d^-T applied to every basis but the ``degree`` non-zero at 0, on a grid
    with 0 on knot z (scipy's design matrix as the reference), from each of the four ways
    a map is evaluated: numpy, the compiled dense and CSR transforms, the row encoder."""
    from streamlearn.features.bspline import bspline_transform_dense, bspline_transform_numpy

    n_bases = 9
    X = two_signed_rows(40, 3, 5)
    m = BSplineMap(degree, n_bases, order, True).fit(X.min(axis=0), X.max(axis=0))
    n = n_bases - degree
    d = np.linalg.matrix_power(np.eye(n) - np.eye(n, k=-1), order)
    lo, hi = m.lo_.copy(), m.hi_.copy()
    expected = []
    for f in range(3):
        h = (hi[f] - lo[f]) / n
        z = round(-lo[f] / h)
        t = lo[f] + (np.arange(n_bases + degree + 1) - degree) * h
        x = np.clip(X[:, f].astype(np.float64), t[degree], t[n_bases])
        phi = BSpline.design_matrix(x, t, degree).toarray()
        kept = np.delete(phi, np.arange(z, z + degree), axis=1)
        kept[X[:, f] == 0] = 0.0
        expected.append(kept @ np.linalg.inv(d))
    ref = np.hstack(expected)
    np.testing.assert_allclose(m.transform(X), ref, rtol=1e-5, atol=1e-6)
    dense = np.empty_like(ref, dtype=np.float32)
    bspline_transform_dense(X, lo, hi, n_bases, degree, order, True, dense)
    numpy = bspline_transform_numpy(X, lo, hi, n_bases, degree, order, True,
                                    np.empty_like(ref, dtype=np.float32))
    np.testing.assert_array_equal(dense, numpy)
    indptr, indices, data = m.transform_csr(X)
    csr = np.zeros_like(ref)
    for r in range(X.shape[0]):
        csr[r, indices[indptr[r]:indptr[r + 1]]] = data[indptr[r]:indptr[r + 1]]
    np.testing.assert_array_equal(csr, dense)
    if order == 0:  # the encoder writes Phi, before D_d^-T
        idx = np.empty(64, dtype=np.int32)
        val = np.empty(64, dtype=np.float32)
        for r, row in enumerate(X):
            nnz = bspline_encode_row(row, lo, m.scale_, n_bases, degree, True, NO_WARP, idx,
                                     val)
            got = np.zeros(ref.shape[1])
            np.add.at(got, idx[:nnz], val[:nnz])
            np.testing.assert_allclose(got, ref[r], rtol=1e-5, atol=1e-6)
            assert set(idx[:nnz] // n) <= set(np.flatnonzero(row))


