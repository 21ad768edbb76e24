"""The describe pass over sparse rows: the statistics of the dense rows, zeros counted."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from streamlearn import open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.describe import describe
from streamlearn.engine.moments import chunk_moments, sparse_chunk_moments
from streamlearn.engine.row_sample import sparse_quantiles


def _matrix(seed: int = 0) -> sp.csr_array:
    M = sp.random_array((300, 12), density=0.2, format="csr", random_state=seed)
    M.data -= 0.3  # negative values too
    return sp.csr_array(M.astype(np.float32))


def test_sparse_moments_match_dense():
    M = _matrix()
    rows = SparseRows.from_scipy(M)
    got = sparse_chunk_moments(*rows.kernel_args, rows.n_cols)
    want = chunk_moments(np.ascontiguousarray(M.toarray()))
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_sparse_quantiles_match_numpy():
    M = _matrix(1)
    probs = np.array([0.0, 0.05, 0.25, 0.5, 0.75, 0.99, 1.0])
    want = np.quantile(M.toarray().astype(np.float64), probs, axis=0)
    np.testing.assert_allclose(sparse_quantiles(SparseRows.from_scipy(M), probs), want,
                               rtol=1e-12, atol=1e-12)


def test_describe_sparse_is_describe_dense():
    M = _matrix(2)
    y = np.arange(M.shape[0]) % 3
    sparse = describe(open_dataset(M, target=y, chunk_rows=70), sample_size=50)
    dense = describe(open_dataset(M.toarray(), target=y, chunk_rows=70), sample_size=50)
    for name in ("mean", "std", "min", "max", "quantiles"):
        np.testing.assert_allclose(getattr(sparse, name), getattr(dense, name), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
    np.testing.assert_array_equal(sparse.sample_rows, dense.sample_rows)
    np.testing.assert_array_equal(sparse.sample.toarray(), dense.sample)
    np.testing.assert_array_equal(sparse.class_counts, dense.class_counts)
