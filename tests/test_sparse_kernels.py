"""Solver kernels on CSR rows (``SparseRows``) against the same kernels on the dense matrix.

The dense kernels are the reference here (they are tested against numpy elsewhere): on
non-negative data with ranges starting at 0, the identity and the zero-preserving B-splines
must give the same encodings, models, dual variables and scores whichever form the rows
come in. Data are tiny and every test reuses the same few compiled kernels: one per kernel,
kind (identity or B-spline) and form of rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from streamlearn.data.sparse_rows import SparseRows
from streamlearn.features import BSplineMap, bspline_encode_row
from streamlearn.solvers.dcd import DCD_OVR, HINGE, dcd_ovr_chunk
from streamlearn.solvers.embedding import (
    BSPLINE,
    DECISION_OVR,
    ENCODED,
    IP_DEGREE,
    IP_MAX_NNZ,
    IP_N_BASES,
    LINEAR,
    decision_ovr_chunk,
    embedding_params,
    encode_sparse_row,
    kernel_rows,
    reads_entries,
    stored_entries,
)
from streamlearn.solvers.ovr import REST, one_model
from streamlearn.solvers.pegasos import PEGASOS_OVR, pegasos_ovr_chunk

#: The encoders' warp argument for uniform knots.
NO_WARP = np.zeros(0)

N_ROWS, N_FEATURES = 14, 5

#: (degree, n_bases, penalty_order) of the zero-preserving B-spline maps tested; None: identity
MAPS = {
    "linear": None,
    "deg1-D0": (1, 5, 0),
    "deg3-D1": (3, 8, 1),
    "deg2-D2": (2, 6, 2),
}


def make_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sparse non-negative rows (rows 2 and 9 empty, feature 4 never zero in row 0) and
    class codes 0..2."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((N_ROWS, N_FEATURES)) < 0.45,
                 rng.uniform(0.05, 3.0, (N_ROWS, N_FEATURES)), 0.0).astype(np.float32)
    X[[2, 9]] = 0.0
    X[0] = [0.0, 1.5, 0.0, 3.0, 2.25]  # the maximum of feature 3 falls on the last knot
    codes = rng.integers(0, 3, N_ROWS).astype(np.int32)
    return X, codes


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, SparseRows, np.ndarray]:
    X, codes = make_data()
    rows = SparseRows.from_scipy(sp.csr_array(X))
    assert rows.nnz == np.count_nonzero(X)
    return X, rows, codes


def reversed_rows(rows: SparseRows) -> SparseRows:
    """The same rows with each row's entries stored in the reverse order of columns."""
    order = np.concatenate([np.arange(rows.indptr[r + 1] - 1, rows.indptr[r] - 1, -1)
                            for r in range(rows.n_rows)]).astype(np.int64)
    return SparseRows(rows.indptr, rows.indices[order], rows.values[order], rows.n_cols)


def embedding(name: str, X: np.ndarray):
    spec = MAPS[name]
    if spec is None:
        return embedding_params(None, X.shape[1])
    degree, n_bases, order = spec
    m = BSplineMap(degree, n_bases, order, zero_preserving=True)
    m.fit(np.zeros(X.shape[1]), X.max(axis=0))  # lo = 0: the range holds the implicit zeros
    return embedding_params(m)


# ------------------------------------------------------------------ encodings
@njit(cache=True)
def sparse_encodings(kind, indptr, indices, values, ipar, fpar, n_dims):
    """Every row's ``encode_sparse_row``, scattered into a dense (n_rows, n_dims) matrix,
    and its number of entries."""
    n = indptr.shape[0] - 1
    out = np.zeros((n, n_dims))
    counts = np.zeros(n, dtype=np.int64)
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    for r in range(n):
        lo, hi = indptr[r], indptr[r + 1]
        nnz = encode_sparse_row(kind, indices[lo:hi], values[lo:hi], ipar, fpar, idx, val)
        counts[r] = nnz
        for e in range(nnz):
            out[r, idx[e]] += val[e]
    return out, counts


def dense_encodings(X: np.ndarray, emb) -> tuple[np.ndarray, np.ndarray]:
    """The dense rows' zero-preserving encodings (``bspline_encode_row``; the identity: the
    non-zero entries), scattered, and their numbers of entries."""
    out = np.zeros((X.shape[0], emb.n_dims))
    counts = np.zeros(X.shape[0], dtype=np.int64)
    if emb.kind == LINEAR:
        out[:] = X
        counts[:] = np.count_nonzero(X, axis=1)
        return out, counts
    nf = emb.n_features
    lo, scale = emb.fpar[:nf], emb.fpar[nf : 2 * nf]
    idx = np.empty(emb.max_nnz, dtype=np.int32)
    val = np.empty(emb.max_nnz, dtype=np.float32)
    n_bases, degree = int(emb.ipar[IP_N_BASES]), int(emb.ipar[IP_DEGREE])
    for r in range(X.shape[0]):
        nnz = bspline_encode_row(X[r], lo, scale, n_bases, degree, True, NO_WARP, idx, val)
        counts[r] = nnz
        np.add.at(out[r], idx[:nnz], val[:nnz])
    return out, counts


@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("unsorted", [False, True])
def test_encode_sparse_row_matches_the_dense_encoding(data, name: str, unsorted: bool) -> None:
    X, rows, _ = data
    if unsorted:
        rows = reversed_rows(rows)
    emb = embedding(name, X)
    assert emb.kind == (LINEAR if MAPS[name] is None else BSPLINE)
    got, counts = sparse_encodings(emb.kind, *rows.kernel_args, emb.ipar, emb.fpar, emb.n_dims)
    expected, expected_counts = dense_encodings(X, emb)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(got, expected)
    assert (counts[[2, 9]] == 0).all()
    if emb.kind == BSPLINE:  # a zero-preserving map: the bases below ``degree`` are dropped
        assert emb.n_dims == N_FEATURES * (MAPS[name][1] - MAPS[name][0])
        np.testing.assert_array_equal(counts > 0, X.any(axis=1))


@pytest.mark.parametrize("name", list(MAPS))
def test_decision_scores_are_the_encodings(data, name: str) -> None:
    """Scores of unit models ``w_d = e_j`` are the encoding's entries, in both forms."""
    X, rows, _ = data
    emb = embedding(name, X)
    W = np.hstack([np.eye(emb.n_dims), np.zeros((emb.n_dims, 1))])
    dense = decision_ovr_chunk(X, W, 1.0, *emb)
    sparse = decision_ovr_chunk(rows, W, 1.0, *emb)
    np.testing.assert_array_equal(sparse, dense)
    np.testing.assert_array_equal(dense, dense_encodings(X, emb)[0])


@njit(cache=True)
def stored_rows(indptr, indices, values, n_cols):
    """Every row's ``stored_entries``, scattered into a dense matrix, and their counts."""
    csr = (indptr, indices, values)
    n = indptr.shape[0] - 1
    out = np.zeros((n, n_cols), dtype=np.float32)
    counts = np.zeros(n, dtype=np.int64)
    for r in range(n):
        idx, val, nnz = stored_entries(csr, r)
        counts[r] = nnz
        for e in range(nnz):
            out[r, idx[e]] = val[e]
    return out, counts


def test_stored_entries_are_the_rows_themselves(data) -> None:
    """The identity's kernels read a sparse row's entries in place: what they get is the
    row (numpy's dense matrix), and only the identity's sparse kernels do so."""
    X, rows, _ = data
    got, counts = stored_rows(*rows.kernel_args, N_FEATURES)
    np.testing.assert_array_equal(got, X)
    np.testing.assert_array_equal(counts, np.count_nonzero(X, axis=1))
    assert reads_entries(LINEAR, True)
    assert not reads_entries(LINEAR, False) and not reads_entries(BSPLINE, True)


def test_kernel_rows_forms(data) -> None:
    X, rows, _ = data
    dense, csr, sparse = kernel_rows(rows)
    assert sparse and dense.shape == (0, 0) and csr == rows.kernel_args
    dense, csr, sparse = kernel_rows(X)
    assert not sparse and dense is X and csr[0].shape == (1,) and csr[1].shape == (0,)
    assert ENCODED not in (LINEAR, BSPLINE)


# ------------------------------------------------------------------ solver kernels
def models(problem: str, codes: np.ndarray):
    """(codes, positive, negative) of a binary problem or of 3 classes one-vs-rest."""
    if problem == "binary":
        return one_model(np.where(codes == 1, 1.0, -1.0))
    return codes, np.array([0, 1, 2], np.int32), np.full(3, REST, np.int32)


@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("problem", ["binary", "ovr3"])
def test_decision_ovr_chunk_same_scores(data, name: str, problem: str) -> None:
    X, rows, _ = data
    emb = embedding(name, X)
    m = 1 if problem == "binary" else 3
    W = np.random.default_rng(3).normal(size=(m, emb.n_dims + 1))
    dense = decision_ovr_chunk(X, W, 0.7, *emb)
    sparse = decision_ovr_chunk(rows, W, 0.7, *emb)
    assert sparse.shape == (N_ROWS, m)
    np.testing.assert_allclose(sparse, dense, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(decision_ovr_chunk(reversed_rows(rows), W, 0.7, *emb), dense,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sparse[[2, 9]], np.broadcast_to(W[:, -1] * 0.7, (2, m)),
                               rtol=1e-15)


def run_pegasos(X, codes, problem, emb, average_start):
    """Two chunks of PEGASOS steps (rows 0-8, then 9-13) from zero models."""
    c, positive, negative = models(problem, codes)
    weight = np.random.default_rng(4).uniform(0.5, 2.0, N_ROWS).astype(np.float32)
    W = np.zeros((positive.shape[0], emb.n_dims + 1))
    AVG = np.zeros_like(W)
    t = 0
    for a, b in ((0, 9), (9, N_ROWS)):
        part = X[a:b] if isinstance(X, np.ndarray) else X.slice(a, b)
        t = pegasos_ovr_chunk(part, c[a:b], positive, negative, weight[a:b], 0.05, 1.0, W, AVG,
                              t, average_start, *emb)
    return t, W, AVG


def assert_same_pegasos(got, expected) -> None:
    t, W, AVG = got
    assert t == expected[0] == N_ROWS
    np.testing.assert_allclose(W, expected[1], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(AVG, expected[2], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("problem", ["binary", "ovr3"])
def test_pegasos_same_models(data, name: str, problem: str) -> None:
    X, rows, codes = data
    emb = embedding(name, X)
    expected = run_pegasos(X, codes, problem, emb, average_start=4)
    assert np.abs(expected[1]).max() > 0 and np.abs(expected[2]).max() > 0  # steps were taken
    assert_same_pegasos(run_pegasos(rows, codes, problem, emb, average_start=4), expected)


@pytest.mark.parametrize("name", list(MAPS))
def test_pegasos_rows_stored_out_of_column_order(data, name: str) -> None:
    """A row's stored columns need not be sorted (``SparseRows``' contract)."""
    X, rows, codes = data
    emb = embedding(name, X)
    expected = run_pegasos(X, codes, "ovr3", emb, average_start=4)
    assert_same_pegasos(run_pegasos(reversed_rows(rows), codes, "ovr3", emb, 4), expected)


def run_dcd(X, codes, problem, emb):
    c, positive, negative = models(problem, codes)
    m = positive.shape[0]
    cost = np.random.default_rng(5).uniform(0.2, 1.0, N_ROWS)
    alpha = np.zeros((N_ROWS, m), np.float32)
    W = np.zeros((m, emb.n_dims + 1))
    results = []
    for a, b in ((0, 9), (9, N_ROWS)):
        part = X[a:b] if isinstance(X, np.ndarray) else X.slice(a, b)
        block = np.ascontiguousarray(alpha[a:b])
        results.append(dcd_ovr_chunk(part, c[a:b], positive, negative, cost[a:b], block, W,
                                     HINGE, 1.0, 3, 7, *emb))
        alpha[a:b] = block
    return results, alpha, W


def assert_same_dcd(got, expected) -> None:
    for res, ref in zip(got[0], expected[0], strict=True):
        for a, b in zip(res, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-6, atol=1e-7)  # float32 duals
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("problem", ["binary", "ovr3"])
def test_dcd_same_duals_and_models(data, name: str, problem: str) -> None:
    X, rows, codes = data
    emb = embedding(name, X)
    expected = run_dcd(X, codes, problem, emb)
    assert (expected[1] > 0).any() and np.abs(expected[2]).max() > 0
    assert_same_dcd(run_dcd(rows, codes, problem, emb), expected)


@pytest.mark.parametrize("name", list(MAPS))
def test_dcd_rows_stored_out_of_column_order(data, name: str) -> None:
    X, rows, codes = data
    emb = embedding(name, X)
    expected = run_dcd(X, codes, "ovr3", emb)
    assert_same_dcd(run_dcd(reversed_rows(rows), codes, "ovr3", emb), expected)


def test_non_zero_preserving_map_refuses_sparse_rows(data) -> None:
    X, rows, codes = data
    m = BSplineMap(1, 5, 0, zero_preserving=False).fit(np.zeros(N_FEATURES), X.max(axis=0))
    emb = embedding_params(m)
    W = np.zeros((1, emb.n_dims + 1))
    decision_ovr_chunk(X, W, 1.0, *emb)  # dense rows are fine
    with pytest.raises(ValueError, match="zero-preserving B-splines"):
        decision_ovr_chunk(rows, W, 1.0, *emb)
    c, positive, negative = models("binary", codes)
    with pytest.raises(ValueError, match="zero-preserving B-splines"):
        pegasos_ovr_chunk(rows, c, positive, negative, np.ones(N_ROWS, np.float32), 0.1, 1.0,
                          W, np.zeros_like(W), 0, 4, *emb)
    with pytest.raises(ValueError, match="zero-preserving B-splines"):
        dcd_ovr_chunk(rows, c, positive, negative, np.ones(N_ROWS), np.zeros((N_ROWS, 1),
                      np.float32), W, HINGE, 1.0, 1, 0, *emb)
    # refused before a kernel for these rows is made (compiling one costs seconds)
    for family in (DECISION_OVR, PEGASOS_OVR, DCD_OVR):
        assert not [spec for spec in family.kernels
                    if spec.sparse and spec.kind == BSPLINE and not spec.zero_preserving]
