"""``SparseRows``: a block of rows in compressed sparse row (CSR) form, float32 values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit


@dataclass(frozen=True, slots=True)
class SparseRows:
    """Rows stored as CSR arrays: row ``r`` holds ``values[indptr[r]:indptr[r + 1]]`` at
    the columns ``indices[indptr[r]:indptr[r + 1]]``; every other entry is zero.

    ``indptr[0]`` is 0 and ``indptr[-1]`` the length of ``indices`` and ``values``. The
    column indices of a row are distinct and in ``[0, n_cols)``; they need not be sorted.

    Attributes
    ----------
    indptr : ndarray of shape (n_rows + 1,), int64
    indices : ndarray of shape (nnz,), int32
    values : ndarray of shape (nnz,), float32
    n_cols : int
        Number of columns (features).
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_cols: int

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.indptr.shape[0] - 1)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, n_cols)``, like a matrix's."""
        return (self.n_rows, int(self.n_cols))

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indptr[-1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the three arrays."""
        return int(self.indptr.nbytes + self.indices.nbytes + self.values.nbytes)

    @property
    def kernel_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, indices, values)``, the form numba kernels take sparse rows in."""
        return (self.indptr, self.indices, self.values)

    def sq_norms(self) -> np.ndarray:
        """``||x_r||^2`` of every row, float64."""
        values = self.values.astype(np.float64)
        rows = np.repeat(np.arange(self.n_rows), np.diff(self.indptr))
        return np.bincount(rows, weights=values * values, minlength=self.n_rows)

    def slice(self, a: int, b: int) -> SparseRows:
        """Rows ``a:b``; ``indices`` and ``values`` are views."""
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        return SparseRows(self.indptr[a : b + 1] - lo, self.indices[lo:hi],
                          self.values[lo:hi], self.n_cols)

    def take(self, rows: np.ndarray) -> SparseRows:
        """The rows at positions ``rows`` (int array), in that order, copied."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.diff(self.indptr)[rows], out=indptr[1:])
        indices = np.empty(int(indptr[-1]), dtype=np.int32)
        values = np.empty(int(indptr[-1]), dtype=np.float32)
        gather_rows(self.indptr, self.indices, self.values, rows, indptr, indices, values)
        return SparseRows(indptr, indices, values, self.n_cols)

    def toarray(self) -> np.ndarray:
        """The rows as a dense float32 C-contiguous matrix."""
        out = np.zeros(self.shape, dtype=np.float32)
        scatter_rows(self.indptr, self.indices, self.values, out)
        return out

    def to_scipy(self) -> Any:
        """The rows as a ``scipy.sparse.csr_array`` (sharing the arrays)."""
        from scipy import sparse

        return sparse.csr_array((self.values, self.indices, self.indptr), shape=self.shape)

    @classmethod
    def from_scipy(cls, matrix: Any) -> SparseRows:
        """Rows of any ``scipy.sparse`` matrix or array, as float32 CSR.

        Duplicate entries of a row are summed (scipy's meaning of them); explicit zeros
        are kept (they cost time, not correctness).
        """
        from scipy import sparse

        csr = sparse.csr_array(matrix)
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        return cls(np.asarray(csr.indptr, dtype=np.int64) - int(csr.indptr[0]),
                   np.ascontiguousarray(csr.indices, dtype=np.int32),
                   np.ascontiguousarray(csr.data, dtype=np.float32), int(csr.shape[1]))

    @classmethod
    def concatenate(cls, parts: Sequence[SparseRows]) -> SparseRows:
        """The rows of ``parts`` one after the other (they must have the same ``n_cols``)."""
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [p.nnz for p in parts[:-1]])
        indptr = np.concatenate([parts[0].indptr[:1]]
                                + [p.indptr[1:] + o for p, o in zip(parts, offsets, strict=True)])
        return cls(indptr, np.concatenate([p.indices for p in parts]),
                   np.concatenate([p.values for p in parts]), parts[0].n_cols)

    @classmethod
    def concatenate_take(cls, parts: Sequence[SparseRows], order: np.ndarray) -> SparseRows:
        """``concatenate(parts).take(order)``, each entry copied once: every part's rows
        are written straight to their places in ``order``, without the concatenated
        temporary (a linear epoch over 2,000,000 rows of 80 entries from a zarr store:
        about 1.3 s against 2.0 s with both copies).

        Parameters
        ----------
        parts : sequence of SparseRows
            Of one ``n_cols``.
        order : ndarray of int
            A permutation of the parts' rows, counted one part after the other.

        Returns
        -------
        SparseRows
        """
        order = np.ascontiguousarray(order, dtype=np.int64)
        n = order.shape[0]
        lengths = np.concatenate([np.diff(p.indptr) for p in parts])
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths[order], out=indptr[1:])
        place = np.empty(n, dtype=np.int64)
        place[order] = np.arange(n, dtype=np.int64)  # where each part's row goes
        indices = np.empty(int(indptr[-1]), dtype=np.int32)
        values = np.empty(int(indptr[-1]), dtype=np.float32)
        first = 0
        for p in parts:
            rows = p.n_rows
            scatter_part(p.indptr, p.indices, p.values, place[first:first + rows], indptr,
                         indices, values)
            first += rows
        return cls(indptr, indices, values, parts[0].n_cols)


def take_rows(X: np.ndarray | SparseRows, positions: np.ndarray) -> np.ndarray | SparseRows:
    """The rows of a chunk's ``X`` (dense or CSR) at ``positions``, copied, in that order."""
    if isinstance(X, SparseRows):
        return X.take(positions)
    return np.ascontiguousarray(X[positions])


@njit(cache=True, nogil=True)
def gather_rows(indptr, indices, values, rows, out_indptr, out_indices, out_values):
    """Copy rows ``rows`` of a CSR block into ``out_*`` (``out_indptr`` already filled)."""
    # one array at a time: each row's copy is then a loop over two arrays, which LLVM
    # vectorises; copying both arrays in one loop did not (2.7x as long)
    _gather(indptr, indices, rows, out_indptr, out_indices)
    _gather(indptr, values, rows, out_indptr, out_values)


@njit(cache=True, nogil=True)
def _gather(indptr, source, rows, out_indptr, out):
    for k in range(rows.shape[0]):
        src = indptr[rows[k]]
        dst = out_indptr[k]
        a = out[dst : out_indptr[k + 1]]
        b = source[src : src + a.shape[0]]
        for e in range(a.shape[0]):
            a[e] = b[e]


@njit(cache=True, nogil=True)
def scatter_part(indptr, indices, values, place, out_indptr, out_indices, out_values):
    """Copy the rows of a CSR block to rows ``place`` of ``out_*`` (``out_indptr``
    already filled), one array at a time (see :func:`gather_rows`)."""
    _scatter(indptr, indices, place, out_indptr, out_indices)
    _scatter(indptr, values, place, out_indptr, out_values)


@njit(cache=True, nogil=True)
def _scatter(indptr, source, place, out_indptr, out):
    # _gather's loop with the indirection on the other side: one kernel with an index
    # array on each side made take() 10 % slower (65,536 rows of 80 entries)
    for r in range(place.shape[0]):
        dst = out_indptr[place[r]]
        a = out[dst : out_indptr[place[r] + 1]]
        b = source[indptr[r] : indptr[r] + a.shape[0]]
        for e in range(a.shape[0]):
            a[e] = b[e]


@njit(cache=True, nogil=True)
def scatter_rows(indptr, indices, values, out):
    """Write the entries of a CSR block into the zero dense matrix ``out``."""
    for r in range(indptr.shape[0] - 1):
        for e in range(indptr[r], indptr[r + 1]):
            out[r, indices[e]] = values[e]


@njit(cache=True, nogil=True)
def first_bad_entry(indptr, indices, n_cols):
    """Position of the first entry whose column is out of range or repeats one of its row's.

    A row whose columns rise strictly and stay in range is valid at once (one read of its
    entries, the usual case: svmlight files and ``convert``'s stores keep rows sorted);
    any other row is checked against a table of the columns seen, made on first need.

    Returns
    -------
    int
        The entry's position in ``indices``, or -1 when every row is valid.
    """
    seen = np.empty(0, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        a, b = indptr[r], indptr[r + 1]
        ordered = True
        prev = -1
        for e in range(a, b):
            j = indices[e]
            if j <= prev or j >= n_cols:
                ordered = False
                break
            prev = j
        if ordered:
            continue
        if seen.shape[0] == 0:
            seen = np.full(n_cols, -1, dtype=np.int64)
        for e in range(a, b):
            j = indices[e]
            if j < 0 or j >= n_cols or seen[j] == r:
                return e
            seen[j] = r
    return -1
