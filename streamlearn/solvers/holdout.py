"""``Holdout``: rows set aside by a hash of their global row id, whatever the chunking.

Used for the calibration rows of ``AdditiveSVC``, the validation rows of ``MixtureSVC``,
``ShareBoostClassifier`` and the super-sparse models: the same rows are held out in every
pass, on every engine, after any shuffle, without storing a mask.

``ValueFold``: one fold of a split of the rows by a hash of their feature values
(:func:`value_keys`), for cross-fitting: copies of a row fall in its fold, so that a
sample weight of 2 and a repeated row give the same folds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.data import Chunk
from streamlearn.data.sparse_rows import SparseRows, take_rows
from streamlearn.solvers.row_sample import row_keys

__all__ = ["MIN_VALIDATION_ROWS", "Holdout", "RowSplit", "ValueFold", "held_out_rows",
           "value_keys"]

#: Held-out rows at least (``n_rows * fraction`` expected) for a model to choose by them.
MIN_VALIDATION_ROWS = 200


@dataclass(frozen=True)
class Holdout:
    """A deterministic subset of rows chosen by a hash of their global row id.

    Row ``i`` is held out when ``lower <= row_keys([i], seed) < threshold``; keys are
    uniform 64-bit integers, so about ``(threshold - lower) / 2**64`` of the rows are held
    out, the same rows whatever the chunking, shuffling or engine.

    Attributes
    ----------
    seed : int
    threshold : int
        In ``[0, 2**64]`` (``2**64``: no upper bound).
    lower : int
        In ``[0, threshold]``; 0 by default (no lower bound).
    """

    seed: int
    threshold: int
    lower: int = 0

    @classmethod
    def fraction(cls, fraction: float, seed: int) -> Holdout:
        """Hold out about ``fraction`` of the rows."""
        threshold = min(int(float(fraction) * 2.0**64), 2**64 - 1)
        return cls(int(seed) % 2**64, threshold)

    @classmethod
    def for_choosing(cls, fraction: float | None, n_rows: int, seed: int) -> Holdout | None:
        """``fraction`` of the rows held out for a model to choose a setting by, or None
        when ``fraction`` is None or fewer than :data:`MIN_VALIDATION_ROWS` rows are
        expected in that share of ``n_rows``."""
        if fraction is None or float(fraction) * int(n_rows) < MIN_VALIDATION_ROWS:
            return None
        return cls.fraction(float(fraction), seed)

    @classmethod
    def folds(cls, n_folds: int, seed: int) -> list[Holdout]:
        """The ``n_folds`` folds of a cross-fitting split: fold ``j`` holds the rows whose
        key lies in ``[j 2**64 / n_folds, (j + 1) 2**64 / n_folds)`` (bounds rounded down),
        so every row is held out by exactly one fold."""
        n = int(n_folds)
        if n < 1:
            raise ValueError(f"n_folds must be at least 1, got {n_folds}")
        bounds = [j * 2**64 // n for j in range(n + 1)]
        return [cls(int(seed) % 2**64, bounds[j + 1], bounds[j]) for j in range(n)]

    def mask(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the held-out rows among global row ids ``rows``."""
        keys = row_keys(np.ascontiguousarray(rows, dtype=np.int64), self.seed)
        if self.threshold >= 2**64:
            held = np.ones(keys.shape, dtype=bool)
        else:
            held = keys < np.uint64(self.threshold)
        if self.lower > 0:
            held &= keys >= np.uint64(self.lower)
        return held

    def chunk_mask(self, chunk: Chunk) -> np.ndarray:
        """Boolean mask of the held-out rows of ``chunk``."""
        return self.mask(chunk.rows)

    def count(self, n_rows: int, block: int = 1 << 20) -> int:
        """Held-out rows among row ids ``0 .. n_rows - 1`` (hashed, not read)."""
        held = 0
        for start in range(0, int(n_rows), block):
            held += int(self.mask(np.arange(start, min(start + block, int(n_rows)))).sum())
        return held


#: Mixes the column into the hash of each value of :func:`value_keys`.
_VALUE_SALT = 0x5EED_C01D_F00D_0B0E


def value_keys(X: np.ndarray | SparseRows, seed: int) -> np.ndarray:
    """A 64-bit key of each row from its feature values alone.

    Each nonzero value ``v`` of column ``j`` is hashed with its column
    (:func:`~streamlearn.engine.row_sample.row_keys` of ``j * 2**32 + bits(v)``), the
    row's hashes are summed modulo ``2**64`` (zeros add nothing, so dense and CSR rows of
    the same values agree) and the sum is hashed with ``seed``. Rows of the same values
    share their key, wherever they lie.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), float32, or SparseRows
    seed : int

    Returns
    -------
    ndarray of shape (n,), uint64
    """
    if isinstance(X, SparseRows):
        n = X.n_rows
        cols = np.asarray(X.indices).astype(np.uint64)
        values = np.ascontiguousarray(X.values, dtype=np.float32)
        indptr = np.asarray(X.indptr, dtype=np.int64)
    else:
        dense = np.ascontiguousarray(X, dtype=np.float32)
        n, d = dense.shape
        cols = np.tile(np.arange(d, dtype=np.uint64), n)
        values = dense.reshape(-1)
        indptr = np.arange(n + 1, dtype=np.int64) * d
    code = (cols << np.uint64(32)) | values.view(np.uint32).astype(np.uint64)
    entry = np.where(values != 0, row_keys(code.view(np.int64), _VALUE_SALT), np.uint64(0))
    # row sums modulo 2**64: differences of the running sum (uint64 arithmetic wraps)
    running = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(entry, dtype=np.uint64)])
    total = running[indptr[1:]] - running[indptr[:-1]]
    return row_keys(total.view(np.int64), seed) if n else np.zeros(0, dtype=np.uint64)


@dataclass(frozen=True)
class ValueFold:
    """Fold ``index`` of ``n_folds`` that split the rows by the keys of their feature
    values (:func:`value_keys`): a row is in the fold when its key is ``index`` modulo
    ``n_folds``. Every row is in one fold, copies of a row in the same one.

    Attributes
    ----------
    seed : int
    index : int
        In ``[0, n_folds)``.
    n_folds : int
    """

    seed: int
    index: int
    n_folds: int

    @classmethod
    def split(cls, n_folds: int, seed: int) -> list[ValueFold]:
        """The ``n_folds`` folds of one split."""
        return [cls(int(seed) % 2**64, j, int(n_folds)) for j in range(int(n_folds))]

    def chunk_mask(self, chunk: Chunk) -> np.ndarray:
        """Boolean mask of the rows of ``chunk`` in the fold."""
        keys = value_keys(chunk.X, self.seed)
        return keys % np.uint64(self.n_folds) == np.uint64(self.index)


#: Rows set aside by their row id or by their values.
RowSplit = Holdout | ValueFold


def held_out_rows(chunk: Chunk, holdout: RowSplit | None
                  ) -> tuple[Any, np.ndarray, np.ndarray | None] | None:
    """The features, targets and weights of the rows of ``chunk`` that ``holdout`` holds
    out (every row with None); None when it holds out none of them."""
    X, y, weight = chunk.X, np.asarray(chunk.y), chunk.weight
    if holdout is None:
        return X, y, weight
    keep = np.flatnonzero(holdout.chunk_mask(chunk))
    if keep.size == 0:
        return None
    return take_rows(X, keep), y[keep], None if weight is None else weight[keep]
