"""Per-feature count, mean, sum of squared deviations, minimum and maximum, mergeable.

A chunk's moments come from :func:`chunk_moments` (two passes over the chunk: the mean first,
then the squared deviations from it, both accumulated in float64). Moments of disjoint sets
of rows combine with :func:`merge_moments`, the pairwise update of Chan, Golub and LeVeque
(1979): with ``n = n_a + n_b`` and ``delta = mean_b - mean_a``,

    ``mean = mean_a + delta n_b / n``,  ``m2 = m2_a + m2_b + delta^2 n_a n_b / n``.

The combination is associative up to float round-off, so a reduction may group chunks in any
order. The population variance is ``m2 / count``. :class:`FeatureMomentsPass` is the pass
that takes them over a dataset.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
from numba import njit

from streamlearn.data.chunk import Chunk


class Moments(NamedTuple):
    """Moments of a set of rows, one entry per feature.

    Attributes
    ----------
    count : int
        Number of rows.
    mean : ndarray of shape (n_features,), float64
    m2 : ndarray of shape (n_features,), float64
        Sum of squared deviations from ``mean``.
    minimum, maximum : ndarray of shape (n_features,), float32
        ``+inf`` and ``-inf`` when ``count`` is 0.
    """

    count: int
    mean: np.ndarray
    m2: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray


#: Largest chunk (entries) whose moments numpy computes instead of
#: :func:`chunk_moments_kernel`: at most a few tenths of a millisecond, where the kernel's
#: compile costs 0.4 s, so that a fit on small data does not compile it.
NUMPY_MOMENTS_ENTRIES = 1 << 17


def chunk_moments(X: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Count, mean, sum of squared deviations, minimum and maximum of each column of ``X``.

    Chunks of at most :data:`NUMPY_MOMENTS_ENTRIES` values are reduced by numpy, larger ones
    by :func:`chunk_moments_kernel`; both add the rows in order, in float64, and give the
    same bits.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32

    Returns
    -------
    count : int
    mean, m2 : ndarray of shape (n_features,), float64
        Zero when ``n_rows`` is 0.
    minimum, maximum : ndarray of shape (n_features,), float32
        ``+inf`` and ``-inf`` when ``n_rows`` is 0.
    """
    n, d = X.shape
    if X.size > NUMPY_MOMENTS_ENTRIES:
        return chunk_moments_kernel(X)
    if n == 0:
        return (0, np.zeros(d), np.zeros(d), np.full(d, np.inf, dtype=np.float32),
                np.full(d, -np.inf, dtype=np.float32))
    # a reduction over axis 0 of a C-ordered array adds one row after the other
    X = np.ascontiguousarray(X)
    mean = X.sum(axis=0, dtype=np.float64) / n
    deviation = X - mean
    m2 = (deviation * deviation).sum(axis=0)
    return n, mean, m2, X.min(axis=0), X.max(axis=0)


@njit(cache=True, nogil=True)
def chunk_moments_kernel(X):
    """:func:`chunk_moments`, compiled: two sweeps of the chunk, the mean first (argument
    and results as for :func:`chunk_moments`)."""
    n, d = X.shape
    mean = np.zeros(d, dtype=np.float64)
    m2 = np.zeros(d, dtype=np.float64)
    minimum = np.full(d, np.inf, dtype=np.float32)
    maximum = np.full(d, -np.inf, dtype=np.float32)
    if n == 0:
        return 0, mean, m2, minimum, maximum
    for i in range(n):
        for j in range(d):
            v = X[i, j]
            mean[j] += v
            if v < minimum[j]:
                minimum[j] = v
            if v > maximum[j]:
                maximum[j] = v
    for j in range(d):
        mean[j] /= n
    for i in range(n):
        for j in range(d):
            dev = X[i, j] - mean[j]
            m2[j] += dev * dev
    return n, mean, m2, minimum, maximum


@njit(cache=True, nogil=True)
def sparse_chunk_moments(indptr, indices, values, n_cols):
    """:func:`chunk_moments` of CSR rows, the entries not stored counting as zeros.

    Takes time in the stored entries (and ``n_cols``), not in ``n_rows x n_cols``: a
    column's squared deviations are those of its stored values plus ``mean^2`` for each
    zero.

    Parameters
    ----------
    indptr : ndarray of shape (n_rows + 1,), int64
    indices : ndarray of int32
    values : ndarray of float32
    n_cols : int

    Returns
    -------
    count, mean, m2, minimum, maximum
        As :func:`chunk_moments` returns them.
    """
    n = indptr.shape[0] - 1
    mean = np.zeros(n_cols, dtype=np.float64)
    m2 = np.zeros(n_cols, dtype=np.float64)
    minimum = np.full(n_cols, np.inf, dtype=np.float32)
    maximum = np.full(n_cols, -np.inf, dtype=np.float32)
    if n == 0:
        return 0, mean, m2, minimum, maximum
    stored = np.zeros(n_cols, dtype=np.int64)
    nnz = indptr[n]
    for e in range(nnz):
        j = indices[e]
        v = values[e]
        mean[j] += v
        stored[j] += 1
        if v < minimum[j]:
            minimum[j] = v
        if v > maximum[j]:
            maximum[j] = v
    for j in range(n_cols):
        mean[j] /= n
        if stored[j] < n:  # some zeros
            minimum[j] = min(minimum[j], np.float32(0.0))
            maximum[j] = max(maximum[j], np.float32(0.0))
            m2[j] = (n - stored[j]) * mean[j] * mean[j]
    for e in range(nnz):
        j = indices[e]
        dev = values[e] - mean[j]
        m2[j] += dev * dev
    return n, mean, m2, minimum, maximum


def empty_moments(n_features: int) -> Moments:
    """Moments of no rows: the identity of :func:`merge_moments`."""
    return Moments(
        0,
        np.zeros(n_features, dtype=np.float64),
        np.zeros(n_features, dtype=np.float64),
        np.full(n_features, np.inf, dtype=np.float32),
        np.full(n_features, -np.inf, dtype=np.float32),
    )


def merge_moments(a: tuple, b: tuple) -> Moments:
    """Combine the moments of two disjoint sets of rows (Chan et al.'s parallel update).

    Parameters
    ----------
    a, b : Moments or tuple
        ``(count, mean, m2, minimum, maximum)``, e.g. as returned by :func:`chunk_moments`.

    Returns
    -------
    Moments
        New arrays; the inputs are not modified.
    """
    na, mean_a, m2_a, min_a, max_a = a
    nb, mean_b, m2_b, min_b, max_b = b
    na, nb = int(na), int(nb)  # Python ints: na * nb must not overflow
    if len(mean_a) != len(mean_b):
        raise ValueError(f"cannot merge moments of {len(mean_a)} and {len(mean_b)} features")
    if nb == 0:
        return Moments(na, mean_a.copy(), m2_a.copy(), min_a.copy(), max_a.copy())
    if na == 0:
        return Moments(nb, mean_b.copy(), m2_b.copy(), min_b.copy(), max_b.copy())
    n = na + nb
    delta = mean_b - mean_a
    mean = mean_a + delta * (nb / n)
    m2 = m2_a + m2_b + delta * delta * (na * nb / n)
    return Moments(n, mean, m2, np.minimum(min_a, min_b), np.maximum(max_a, max_b))


class FeatureMomentsPass:
    """Reduction pass: per-feature count, mean, squared deviations, minimum and maximum.

    The unweighted moments of the raw features over the rows of positive sample weight
    (a row of weight 0 is no row: it counts for nothing, not even the minimum and
    maximum; other weights do not scale a row's share); sparse rows: of their stored
    entries and zeros. :meth:`~streamlearn.solvers.kmeans.Standardiser.from_moments` turns
    them into a standardisation.

    Parameters
    ----------
    n_features : int
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, n_features: int) -> None:
        self.n_features = int(n_features)

    def start(self) -> Moments:
        """Moments of no rows."""
        return empty_moments(self.n_features)

    def step(self, state: Moments, chunk: Chunk) -> Moments:
        """Moments with the chunk's rows of positive weight added (a new state)."""
        chunk = chunk.weighted()
        if chunk.is_sparse:
            return merge_moments(state, sparse_chunk_moments(*chunk.X.kernel_args,
                                                             chunk.X.n_cols))
        return merge_moments(state, chunk_moments(chunk.X))

    def merge(self, a: Moments, b: Moments) -> Moments:
        """Moments of the union (a new state)."""
        return merge_moments(a, b)

    def finish(self, state: Moments) -> Moments:
        """The moments."""
        return state


def observed_chunk_moments(X: np.ndarray) -> Moments:
    """:func:`chunk_moments` of the values of ``X`` that are not NaN (missing values,
    ``nan_policy="impute"``): ``count`` per column.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32

    Returns
    -------
    Moments
        ``count`` an int64 array of shape (n_features,); a column with no value has mean
        and m2 0, minimum ``+inf`` and maximum ``-inf``.
    """
    seen = ~np.isnan(X)
    count = seen.sum(axis=0).astype(np.int64)
    mean = np.where(seen, X, 0).sum(axis=0, dtype=np.float64) / np.maximum(count, 1)
    deviation = np.where(seen, X - mean, 0.0)
    m2 = (deviation * deviation).sum(axis=0)
    minimum = np.where(seen, X, np.inf).min(axis=0).astype(np.float32)
    maximum = np.where(seen, X, -np.inf).max(axis=0).astype(np.float32)
    return Moments(count, mean, m2, minimum, maximum)


def merge_observed_moments(a: Moments, b: Moments) -> Moments:
    """:func:`merge_moments` of moments whose ``count`` is one per column
    (:func:`observed_chunk_moments`; a scalar count counts every column)."""
    d = len(a.mean)
    if len(b.mean) != d:
        raise ValueError(f"cannot merge moments of {d} and {len(b.mean)} features")
    na = np.broadcast_to(np.asarray(a.count, dtype=np.float64), (d,))
    nb = np.broadcast_to(np.asarray(b.count, dtype=np.float64), (d,))
    n = na + nb
    share = np.divide(nb, n, out=np.zeros(d), where=n > 0)
    delta = b.mean - a.mean
    mean = a.mean + delta * share
    m2 = a.m2 + b.m2 + delta * delta * na * share
    return Moments((na + nb).astype(np.int64), mean, m2, np.minimum(a.minimum, b.minimum),
                   np.maximum(a.maximum, b.maximum))
