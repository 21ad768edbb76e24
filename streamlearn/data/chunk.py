"""The unit of work every pass consumes: a block of rows as float32 arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.data.sparse_rows import SparseRows


@dataclass(frozen=True, slots=True)
class Chunk:
    """A block of consecutive rows of a dataset, ready for numba kernels.

    A dataset's chunks hold writeable arrays (:func:`writeable_rows`), whatever their
    source hands it.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features), float32, C-contiguous, or SparseRows
        Feature values, validated finite: dense, or CSR rows of a sparse source
        (:class:`~streamlearn.data.sparse_rows.SparseRows`, see :attr:`is_sparse`).
    y : ndarray of shape (n_rows,) or None
        Target. For classification, int32 class codes indexing ``Dataset.classes``;
        for regression, float32 values; None when the dataset has no target.
    start : int
        Global index of the first row of the block this chunk was cut from.
    index : ndarray of shape (n_rows,), int64, or None
        Global row index of each row when rows are not ``start, start+1, ...``
        (rows shuffled within the chunk, or rows dropped by validation).
    weight : ndarray of shape (n_rows,), float32, or None
        Sample weights.
    """

    X: np.ndarray | SparseRows
    y: np.ndarray | None
    start: int
    index: np.ndarray | None = None
    weight: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        """Number of rows in the chunk."""
        return int(self.X.shape[0])

    @property
    def is_sparse(self) -> bool:
        """Whether ``X`` holds CSR rows."""
        return isinstance(self.X, SparseRows)

    @property
    def rows(self) -> np.ndarray:
        """Global row index of every row (int64), whether or not ``index`` is set."""
        if self.index is not None:
            return self.index
        return np.arange(self.start, self.start + self.n_rows, dtype=np.int64)

    def select(self, keep: np.ndarray) -> Chunk:
        """The rows where the boolean mask ``keep`` is True, keeping their global ids."""
        taken = np.flatnonzero(np.asarray(keep, dtype=bool))
        # np.take gathers rows about twice as fast as a boolean mask
        X = (self.X.take(taken) if isinstance(self.X, SparseRows)
             else np.take(self.X, taken, axis=0))
        return Chunk(X,
                     None if self.y is None else np.take(self.y, taken), self.start,
                     np.take(self.rows, taken),
                     None if self.weight is None else np.take(self.weight, taken))

    def weighted(self) -> Chunk:
        """The rows of positive sample weight (the chunk itself when it has no weight 0).

        A row of weight 0 is no row: passes that take statistics of the rows as they are
        (moments, row samples) read the chunk through this.
        """
        if self.weight is None:
            return self
        keep = np.asarray(self.weight) > 0
        return self if keep.all() else self.select(keep)

    @property
    def nbytes(self) -> int:
        """Bytes held by the chunk's arrays."""
        total = self.X.nbytes
        for a in (self.y, self.index, self.weight):
            if a is not None:
                total += a.nbytes
        return total


def writeable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy of it when it is read-only.

    numba types a read-only array apart from a writeable one, and would compile every kernel
    a second time for read-only inputs: an array the caller froze or memory-mapped
    (``setflags(write=False)``, joblib), one deserialised from a buffer, a zero-copy view
    of an Arrow column. Copying a chunk or a model costs far less than a compile, and a
    writeable array is passed on as it is.
    """
    return a if a.flags.writeable else a.copy()


def writeable_rows(X: np.ndarray | SparseRows) -> np.ndarray | SparseRows:
    """Dense or CSR rows whose arrays are all writeable (:func:`writeable`): the type
    every kernel is compiled for."""
    if not isinstance(X, SparseRows):
        return writeable(X)
    if all(a.flags.writeable for a in X.kernel_args):
        return X
    return SparseRows(writeable(X.indptr), writeable(X.indices), writeable(X.values), X.n_cols)
