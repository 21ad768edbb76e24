"""Psi(0) = 0 variants for sparse non-negative inputs (paper 000, Sec. 5)."""

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
        nnz = fourier_encode_row(row, f.lo_, f.hi_, f.weights, True, idx, val)
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


def test_bspline_variant_needs_non_negative_inputs():
    with pytest.raises(ValueError, match="non-negative"):
        BSplineMap(2, 6, 1, True).fit([-1.0], [1.0])
    m = BSplineMap(2, 6, 1, True).fit([0.3], [1.0])
    np.testing.assert_array_equal(m.lo_, [0.0])
    assert m.n_output_features(3) == 3 * 4
