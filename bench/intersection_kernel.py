"""Exact histogram-intersection (min) kernel matrices, ``K[i, j] = sum_f min(A[i, f], B[j, f])``.

For the exact kernel SVM of the MNIST benchmark (scikit-learn ``SVC(kernel="precomputed")``).
A numba kernel computes the rows of ``K`` for a block of rows of ``A``; blocks run in threads
(the kernel releases the GIL). Sums are float32, as the inputs; the inner loop over features
is vectorised, so the cost is ``n_A * n_B * n_features`` element minima.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from streamlearn.errors import DataError

#: Rows of ``A`` per block handed to a thread.
BLOCK_ROWS = 256


@njit(cache=True, nogil=True, fastmath=True)
def min_kernel_rows(A, B, n_cols, out):
    """``out[i, j] = sum_f min(A[i, f], B[j, f])`` for ``j < n_cols[i]``.

    Parameters
    ----------
    A : ndarray of shape (n, d), float32
    B : ndarray of shape (m, d), float32
    n_cols : ndarray of shape (n,), int64
        Columns computed in each row (``m`` for a full matrix, ``i + 1`` for the lower
        triangle of a symmetric one).
    out : ndarray of shape (n, m), float32
        Written in place.
    """
    d = A.shape[1]
    for i in range(A.shape[0]):
        for j in range(n_cols[i]):
            s = np.float32(0.0)
            for f in range(d):
                s += min(A[i, f], B[j, f])
            out[i, j] = s


def _as_rows(X: np.ndarray, name: str) -> np.ndarray:
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-d array (rows, features), got shape {X.shape}")
    if X.size and not np.isfinite(X).all():
        raise DataError(f"{name} holds NaN or infinite values")
    return X


def intersection_kernel(A: np.ndarray, B: np.ndarray | None = None, *,
                        threads: int | None = None) -> np.ndarray:
    """The min kernel between the rows of ``A`` and ``B`` (``B = A``: symmetric, half the work).

    Parameters
    ----------
    A : ndarray of shape (n, d)
    B : ndarray of shape (m, d), optional
        Default ``A``; then only the lower triangle is computed and mirrored.
    threads : int, optional
        Worker threads (default: the usable CPUs).

    Returns
    -------
    ndarray of shape (n, m), float32
    """
    A = _as_rows(A, "A")
    symmetric = B is None
    B = A if B is None else _as_rows(B, "B")
    if A.shape[1] != B.shape[1]:
        raise DataError(f"A has {A.shape[1]} features and B {B.shape[1]}")
    n, m = A.shape[0], B.shape[0]
    out = np.zeros((n, m), dtype=np.float32)
    starts = range(0, n, BLOCK_ROWS)

    def block(a: int) -> None:
        b = min(n, a + BLOCK_ROWS)
        cols = (np.arange(a + 1, b + 1, dtype=np.int64) if symmetric
                else np.full(b - a, m, dtype=np.int64))
        min_kernel_rows(A[a:b], B, cols, out[a:b])

    workers = threads or len(os.sched_getaffinity(0))
    if symmetric:  # rows of the lower triangle grow: hand out the long ones first
        starts = reversed(starts)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(block, starts))
    if symmetric:  # mirror the lower triangle, one block of rows at a time
        for a in range(0, n, BLOCK_ROWS):
            b = min(n, a + BLOCK_ROWS)
            out[:a, a:b] = out[a:b, :a].T
            diagonal = out[a:b, a:b]
            diagonal += np.tril(diagonal, -1).T
    return out
