"""A deterministic, mergeable uniform sample of rows ("bottom-k" sample).

Every row gets a 64-bit key, ``splitmix64(row_id XOR c)`` with ``c = splitmix64(seed)``, that
depends only on its global row id and the seed; the sample is the ``k`` rows with the smallest
keys. ``splitmix64`` is a bijection of the 64-bit integers, so distinct rows never share a key,
and the sample is *exactly* the same whatever the chunking and whatever order partial samples
are merged in. Ties (only possible for a repeated row id) are broken by row id.

For a dataset of ``n`` rows the sample is a uniform sample without replacement of size
``min(k, n)``. Quantiles read from it have a rank error of order ``1 / sqrt(k)``: by the
Dvoretzky-Kiefer-Wolfowitz inequality (Massart's constant), the sample's empirical
distribution ``F_k`` satisfies ``P(sup_x |F_k(x) - F(x)| > eps) <= 2 exp(-2 k eps^2)`` for
every feature, e.g. ``eps ~ 0.034`` with probability 0.99 for ``k = 4096`` (sampling without
replacement only concentrates more).
"""

from __future__ import annotations

import warnings

import numpy as np

from streamlearn.data.sparse_rows import SparseRows

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)

#: Threshold of a sample that is not yet full: every row is a candidate.
NOT_FULL = np.uint64(np.iinfo(np.uint64).max)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    # uint64 arithmetic on arrays wraps modulo 2**64, as the hash needs
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


def row_keys(rows: np.ndarray, seed: int | np.integer) -> np.ndarray:
    """Sampling key of each global row id.

    numpy's uint64 arithmetic over the whole array: about 0.1 ms per 65,536 rows, where a
    compiled loop took 0.01 ms but cost every first fit 0.14 s of compiling.

    Parameters
    ----------
    rows : ndarray of shape (n,), int64
        Global row ids.
    seed : int
        Any integer that fits in 64 bits (taken modulo ``2**64``).

    Returns
    -------
    ndarray of shape (n,), uint64
        ``splitmix64(rows[i] XOR splitmix64(seed))``.
    """
    c = _splitmix64(np.array([int(seed) % 2**64], dtype=np.uint64))
    return _splitmix64(np.asarray(rows, dtype=np.int64).view(np.uint64) ^ c)


def keys_below(keys: np.ndarray, threshold: np.uint64) -> np.ndarray:
    """Positions (int64, increasing) of the entries of ``keys`` strictly below ``threshold``.

    numpy's comparison of the uint64 keys with a uint64 threshold (exact; a compiled loop
    cost a first fit 0.13 s of compiling and ran no faster).
    """
    return np.flatnonzero(keys < np.uint64(threshold)).astype(np.int64, copy=False)


def _smallest(keys: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` smallest ``(key, row)`` pairs, in increasing order."""
    candidates = np.arange(keys.shape[0])
    if keys.shape[0] > k:
        kth = np.partition(keys, k - 1)[k - 1]
        candidates = np.flatnonzero(keys <= kth)
    order = np.lexsort((rows[candidates], keys[candidates]))
    return candidates[order[:k]]


class BottomKSample:
    """The ``k`` rows of smallest key seen so far, sorted by key.

    Parameters
    ----------
    k : int
        Sample size.
    n_features : int
        Columns of the rows.
    seed : int, default 0
        Selects which uniform sample is drawn; taken modulo ``2**64``.

    Attributes
    ----------
    keys : ndarray of shape (m,), uint64
        Increasing; ``m <= k``.
    rows : ndarray of shape (m,), int64
        Global row ids of the sampled rows.
    values : ndarray of shape (m, n_features), float32
        The sampled rows.
    """

    __slots__ = ("k", "keys", "n_features", "rows", "seed", "values")

    def __init__(self, k: int, n_features: int, seed: int = 0, sparse: bool = False) -> None:
        if k < 1:
            raise ValueError(f"sample size k must be at least 1, got {k}")
        self.k = int(k)
        self.n_features = int(n_features)
        self.seed = np.uint64(int(seed) % 2**64)
        self.keys = np.empty(0, dtype=np.uint64)
        self.rows = np.empty(0, dtype=np.int64)
        self.values: np.ndarray | SparseRows = (
            SparseRows(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                       np.zeros(0, dtype=np.float32), self.n_features) if sparse
            else np.empty((0, self.n_features), dtype=np.float32))

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def __repr__(self) -> str:
        return f"BottomKSample(k={self.k}, n_features={self.n_features}, size={len(self)})"

    @property
    def threshold(self) -> np.uint64:
        """Largest key in a full sample; :data:`NOT_FULL` while fewer than ``k`` rows are held."""
        return self.keys[-1] if len(self) == self.k else NOT_FULL

    def _replace(self, keys, rows, take_old, old_src, new_src, new_values) -> None:
        if isinstance(self.values, SparseRows):
            # the kept old rows, then the new ones, put in key order
            both = SparseRows.concatenate([self.values.take(old_src), new_values.take(new_src)])
            order = np.empty(keys.shape[0], dtype=np.int64)
            order[take_old] = np.arange(old_src.shape[0])
            order[~take_old] = old_src.shape[0] + np.arange(new_src.shape[0])
            self.keys, self.rows, self.values = keys, rows, both.take(order)
            return
        values = np.empty((keys.shape[0], self.n_features), dtype=np.float32)
        values[take_old] = self.values[old_src]
        values[~take_old] = new_values[new_src]
        self.keys, self.rows, self.values = keys, rows, values

    def update(self, X: np.ndarray, rows: np.ndarray) -> BottomKSample:
        """Offer the rows of one chunk to the sample (in place).

        Parameters
        ----------
        X : ndarray of shape (n, n_features), float32
        rows : ndarray of shape (n,), int64
            Global row ids of the rows of ``X``.

        Returns
        -------
        BottomKSample
            ``self``.
        """
        if X.shape[1] != self.n_features:
            raise ValueError(f"sample holds {self.n_features} features, chunk has {X.shape[1]}")
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        keys = row_keys(rows, self.seed)
        pos = keys_below(keys, self.threshold)
        if pos.shape[0] == 0:
            return self
        m = len(self)
        all_keys = np.concatenate([self.keys, keys[pos]])
        all_rows = np.concatenate([self.rows, rows[pos]])
        chosen = _smallest(all_keys, all_rows, self.k)
        take_old = chosen < m
        self._replace(all_keys[chosen], all_rows[chosen], take_old, chosen[take_old],
                      pos[chosen[~take_old] - m], X)
        return self

    def merge(self, other: BottomKSample) -> BottomKSample:
        """Sample of the union of the rows offered to ``self`` and to ``other`` (a new object)."""
        if (other.k, other.n_features, other.seed) != (self.k, self.n_features, self.seed):
            raise ValueError("can only merge samples with the same k, n_features and seed")
        out = BottomKSample(self.k, self.n_features, int(self.seed),
                            isinstance(self.values, SparseRows))
        out.keys, out.rows, out.values = self.keys, self.rows, self.values
        m = len(self)
        all_keys = np.concatenate([self.keys, other.keys])
        all_rows = np.concatenate([self.rows, other.rows])
        chosen = _smallest(all_keys, all_rows, self.k)
        take_old = chosen < m
        out._replace(all_keys[chosen], all_rows[chosen], take_old, chosen[take_old],
                     chosen[~take_old] - m, other.values)
        return out

    def quantiles(self, probs, missing: bool = False) -> np.ndarray:
        """Per-feature quantiles of the sample, linearly interpolated as :func:`numpy.quantile`.

        Parameters
        ----------
        probs : array-like of shape (p,)
            Probabilities in [0, 1].
        missing : bool
            Dense values may be NaN, missing: each feature's quantiles are those of its
            values that are there (:func:`numpy.nanquantile`; NaN for a feature with none).

        Returns
        -------
        ndarray of shape (p, n_features), float64
            NaN while the sample is empty.
        """
        probs = np.atleast_1d(np.asarray(probs, dtype=np.float64))
        if np.any((probs < 0) | (probs > 1)):
            raise ValueError("probabilities must lie in [0, 1]")
        if len(self) == 0:
            return np.full((probs.shape[0], self.n_features), np.nan)
        if isinstance(self.values, SparseRows):
            return sparse_quantiles(self.values, probs)
        values = self.values.astype(np.float64)
        if missing:
            with warnings.catch_warnings():  # a feature with no value: NaN, as documented
                warnings.simplefilter("ignore", RuntimeWarning)
                return np.nanquantile(values, probs, axis=0)
        return np.quantile(values, probs, axis=0)


def sparse_quantiles(rows: SparseRows, probs: np.ndarray) -> np.ndarray:
    """:func:`numpy.quantile` of every column of CSR rows, their zeros included.

    Sorts the stored entries by column and value once (time in the stored entries, not in
    ``n_rows x n_cols``); a column sorted whole is its negative values, its zeros, then
    its positive values, so each order statistic is read off that layout.
    """
    n, d = rows.shape
    vals = rows.values.astype(np.float64)
    order = np.lexsort((vals, rows.indices))
    cols, vals = rows.indices[order], vals[order]
    start = np.searchsorted(cols, np.arange(d))
    stored = np.bincount(cols, minlength=d)
    negative = np.bincount(cols[vals < 0], minlength=d)
    zeros = n - stored

    def order_statistic(i: int) -> np.ndarray:  # the i-th smallest value of every column
        at = np.where(i < negative, start + i, start + i - zeros)
        value = vals[np.clip(at, 0, max(vals.shape[0] - 1, 0))] if vals.shape[0] else 0.0
        return np.where((i >= negative) & (i < negative + zeros), 0.0, value)

    out = np.empty((probs.shape[0], d))
    for q, p in enumerate(probs):
        position = p * (n - 1)
        below = int(np.floor(position))
        frac = position - below
        out[q] = order_statistic(below) * (1 - frac) + order_statistic(min(below + 1, n - 1)) * frac
    return out
