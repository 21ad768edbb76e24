"""Mini-batch k-means over a stream of chunks (Sculley, WWW 2010), seeded by k-means++.

Each chunk is one mini-batch: its rows are assigned to the nearest centre, then every centre
moves to the running mean of all rows ever assigned to it,

    ``c_j <- (n_j c_j + sum_{i in chunk, a_i = j} s_i x_i) / (n_j + sum_{i, a_i = j} s_i)``,

``n_j`` the (weighted) rows assigned to ``c_j`` so far, ``s_i`` the sample weights; the step
of each centre shrinks as ``1 / n_j``. Initial centres come from k-means++ (Arthur and
Vassilvitskii, 2007) on a uniform sample of rows drawn in one pass
(:class:`~streamlearn.engine.row_sample.BottomKSample`), refined by a few Lloyd iterations
on that sample.

Split across workers, :class:`MiniBatchKMeansPass` merges its partial states centre by
centre, weighting each by the rows that partial state assigned to it in this pass.

A :class:`Standardiser` (a per-feature affine map) may be applied to every chunk first, so
that the centres are found in the standardised space.

Chunks of CSR rows (:class:`~streamlearn.data.sparse_rows.SparseRows`) are clustered as they
are: a row's squared distance to a centre is ``||x||^2 - 2 x . c + ||c||^2`` with the inner
products over its stored entries (:func:`assign_rows`), and a centre's new mean adds up its
rows' entries. A standardiser applied to them must not centre them (a zero ``shift``),
which would fill them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
from numba import njit

from streamlearn.data import Chunk, Dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.row_sample import BottomKSample
from streamlearn.errors import DataError

#: A feature whose largest absolute value lies within this factor of the median feature's
#: is of the same unit (:meth:`Standardiser.of_units_apart`).
UNIT_BAND = 10.0

#: Why sparse rows are neither centred nor divided by their standard deviations, and only
#: the features in units apart are scaled.
SPARSE_UNITS = (
    "Centring would fill sparse rows in, and a feature stored in few rows has a standard "
    "deviation far below its values (stored once in n rows: about its value over sqrt(n)), "
    "so dividing by it would make the rarest features the largest. Sparse data (counts, "
    "tf-idf, one-hot codes, hashed tokens) mostly come in units shared by their features, "
    "which are kept; a feature whose largest absolute value lies more than a factor 10 "
    "from the median feature's (a count of thousands beside indicators) is brought to it "
    "(Standardiser.of_units_apart), which keeps the zeros. C='auto' and tau='auto' adapt "
    "to the overall scale.")


@dataclass(frozen=True)
class Standardiser:
    """Per-feature affine map ``z = (x - shift) / scale`` applied to chunks of features.

    Attributes
    ----------
    shift : ndarray of shape (n_features,), float64
    scale : ndarray of shape (n_features,), float64
        Positive.

    Examples
    --------
    >>> s = Standardiser(np.array([1.0, 0.0]), np.array([2.0, 1.0]))
    >>> s.apply(np.array([[3.0, 5.0]], dtype=np.float32))
    array([[1., 5.]], dtype=float32)
    """

    shift: np.ndarray
    scale: np.ndarray

    @classmethod
    def from_moments(cls, count: int, mean: np.ndarray, m2: np.ndarray,
                     minimum: np.ndarray, maximum: np.ndarray) -> Standardiser:
        """Centre on the mean, divide by the (population) standard deviation.

        A feature whose minimum equals its maximum (a constant) keeps the scale 1, so it
        becomes 0 and does not divide by zero.

        Parameters
        ----------
        count : int
            Rows the moments were taken over.
        mean, m2 : ndarray of shape (n_features,)
            Means and sums of squared deviations from them.
        minimum, maximum : ndarray of shape (n_features,)

        Returns
        -------
        Standardiser
        """
        std = np.sqrt(np.maximum(np.asarray(m2, dtype=np.float64), 0.0) / max(int(count), 1))
        return cls.from_mean_std(mean, std, np.asarray(maximum) > np.asarray(minimum))

    @classmethod
    def from_mean_std(cls, mean: np.ndarray, std: np.ndarray,
                      varies: np.ndarray) -> Standardiser:
        """Centre on ``mean``, divide by ``std`` where the feature ``varies`` (and its
        deviation is positive and finite); other features keep the scale 1.

        Parameters
        ----------
        mean, std : ndarray of shape (n_features,)
        varies : ndarray of shape (n_features,), bool

        Returns
        -------
        Standardiser
        """
        mean = np.asarray(mean, dtype=np.float64)
        std = np.asarray(std, dtype=np.float64)
        keep = np.asarray(varies, dtype=bool) & (std > 0) & np.isfinite(std)
        return cls(np.where(np.isfinite(mean), mean, 0.0), np.where(keep, std, 1.0))

    @classmethod
    def from_max_abs(cls, minimum: np.ndarray, maximum: np.ndarray) -> Standardiser:
        """No shift; each feature divided by its largest absolute value (as scikit-learn's
        ``MaxAbsScaler``), which keeps zeros, and so sparse rows, as they are. A feature
        whose largest absolute value is zero or not finite keeps the scale 1.

        Parameters
        ----------
        minimum, maximum : ndarray of shape (n_features,)

        Returns
        -------
        Standardiser
        """
        largest = np.maximum(np.abs(np.asarray(minimum, dtype=np.float64)),
                             np.abs(np.asarray(maximum, dtype=np.float64)))
        keep = (largest > 0) & np.isfinite(largest)
        return cls(np.zeros(largest.shape), np.where(keep, largest, 1.0))

    @classmethod
    def of_units_apart(cls, minimum: np.ndarray, maximum: np.ndarray,
                       band: float = UNIT_BAND) -> Standardiser:
        """No shift; a feature whose largest absolute value lies more than ``band`` times
        above or below the median feature's (over the features not all zero) divided by
        its ratio to that median, the others left as they are: features of one unit
        (counts, tf-idf weights, bands of one sensor) keep it, and a column in other
        units (a count of thousands beside indicators) is brought to theirs. Zeros stay
        zeros, so sparse rows may be scaled.

        Parameters
        ----------
        minimum, maximum : ndarray of shape (n_features,)
        band : float

        Returns
        -------
        Standardiser
        """
        largest = cls.from_max_abs(minimum, maximum).scale
        stored = np.maximum(np.abs(np.asarray(minimum, dtype=np.float64)),
                            np.abs(np.asarray(maximum, dtype=np.float64)))
        stored = stored[(stored > 0) & np.isfinite(stored)]
        if stored.size == 0:
            return cls(np.zeros(largest.shape), np.ones(largest.shape))
        ratio = largest / float(np.median(stored))
        apart = (ratio > band) | (ratio < 1.0 / band)
        return cls(np.zeros(largest.shape), np.where(apart, ratio, 1.0))

    @property
    def keeps_zeros(self) -> bool:
        """Whether the map sends 0 to 0 (no shift): it may then map sparse rows."""
        return not self._centres

    def unscaled(self, columns: Sequence[int]) -> Standardiser:
        """The same map with ``columns`` centred only (scale 1): for 0/1 indicator columns
        of one categorical feature, whose ``k`` columns together then vary about as much
        as one standardised feature (variance ``1 - sum p_i^2``), where dividing each by
        its deviation would give a rare category a value of ``1 / sqrt(p)``.

        Parameters
        ----------
        columns : sequence of int

        Returns
        -------
        Standardiser
        """
        scale = np.array(self.scale, dtype=np.float64)
        scale[list(columns)] = 1.0
        return Standardiser(self.shift, scale)

    @classmethod
    def identity(cls, n_features: int) -> Standardiser:
        """``z = x``: no shift, every scale 1 (how the models take sparse rows)."""
        return cls(np.zeros(int(n_features)), np.ones(int(n_features)))

    @cached_property
    def _centres(self) -> bool:
        # some shift is not zero (computed once: a standardiser is applied to every chunk)
        return bool(np.any(self.shift != 0.0))

    @cached_property
    def _shift(self) -> np.ndarray:
        # shift and scale as the kernel takes them (one compiled version)
        return np.ascontiguousarray(self.shift, dtype=np.float64)

    @cached_property
    def _scale(self) -> np.ndarray:
        return np.ascontiguousarray(self.scale, dtype=np.float64)

    @cached_property
    def _is_identity(self) -> bool:
        return not self._centres and bool(np.all(self.scale == 1.0))

    def apply(self, X: np.ndarray | SparseRows) -> np.ndarray | SparseRows:
        """The standardised features.

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features), or SparseRows
            Sparse rows only with a zero shift (centring would fill them in).

        Returns
        -------
        ndarray of shape (n_rows, n_features), float32, C-contiguous, or SparseRows
        """
        if isinstance(X, SparseRows):
            if self._centres:
                raise ValueError("a standardiser that centres (a non-zero shift) would fill "
                                 "sparse rows in")
            if self._is_identity:  # how the models take sparse rows: nothing to copy
                return X
            values = X.values.astype(np.float64) / self.scale[X.indices]
            return SparseRows(X.indptr, X.indices, values.astype(np.float32), X.n_cols)
        X = np.asarray(X)
        if X.dtype == np.float32 and X.ndim == 2 and X.size > NUMPY_STANDARDISE_ENTRIES:
            out = np.empty(X.shape, dtype=np.float32)
            standardise_rows(np.ascontiguousarray(X), self._shift, self._scale, out)
            return out
        Z = (np.asarray(X, dtype=np.float64) - self.shift) / self.scale
        return np.ascontiguousarray(Z, dtype=np.float32)


#: Dense chunks of more values than this are standardised by :func:`standardise_rows`;
#: smaller ones by numpy (the same values), so that a fit on small data does not compile
#: the kernel.
NUMPY_STANDARDISE_ENTRIES = 1 << 17


@njit(cache=True, nogil=True)
def standardise_rows(X: np.ndarray, shift: np.ndarray, scale: np.ndarray,
                     out: np.ndarray) -> None:
    """``out = float32((float64(X) - shift) / scale)``, row by row in one sweep.

    numpy's ``(X.astype(float64) - shift) / scale`` cast to float32 computes the same
    values (the same operations in the same precision) in four sweeps over float64
    temporaries twice the chunk's size: in a profile of a linear model's epoch over a
    store in the page cache, those sweeps and the page faults of their temporaries took
    about a sixth of all CPU samples.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32, C-contiguous
    shift, scale : ndarray of shape (d,), float64
    out : ndarray of shape (n, d), float32
        Written.
    """
    n, d = X.shape
    for i in range(n):
        for j in range(d):
            out[i, j] = np.float32((np.float64(X[i, j]) - shift[j]) / scale[j])


def chunk_features(chunk: Chunk, standardiser: Standardiser | None) -> np.ndarray | SparseRows:
    """A chunk's features (dense or CSR), standardised when a standardiser is given."""
    return chunk.X if standardiser is None else standardiser.apply(chunk.X)


def assign_rows(X: np.ndarray | SparseRows,
                centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`assign_chunk` of dense or CSR rows.

    CSR rows take ``||x||^2 - 2 x . c + ||c||^2`` with the inner products over their stored
    entries, in double precision; dense chunks of at most :data:`NUMPY_ASSIGN_ENTRIES`
    take :func:`assign_numpy`.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    centers : ndarray of shape (k, n_features)

    Returns
    -------
    labels : ndarray of shape (n_rows,), int32
    sq_dist : ndarray of shape (n_rows,), float32
    """
    if not isinstance(X, SparseRows):
        if X.shape[0] * centers.shape[0] <= NUMPY_ASSIGN_ENTRIES:
            return assign_numpy(X, centers)
        return assign_chunk(X, centers)
    C = np.asarray(centers, dtype=np.float64)
    dist = (C * C).sum(axis=1)[None, :] - 2.0 * np.asarray(X.to_scipy() @ C.T)
    labels = np.argmin(dist, axis=1).astype(np.int32)
    best = dist[np.arange(X.n_rows), labels] + X.sq_norms()
    return labels, np.maximum(best, 0.0).astype(np.float32)


def _label_sums(X: SparseRows, labels: np.ndarray, weight: np.ndarray, k: int) -> np.ndarray:
    # sum_{i: labels_i = j} weight_i x_i of CSR rows, (k, d) float64
    from scipy import sparse

    onehot = sparse.csr_array((np.asarray(weight, dtype=np.float64),
                               (labels, np.arange(X.n_rows))), shape=(k, X.n_rows))
    return np.asarray((onehot @ X.to_scipy().astype(np.float64)).toarray())


def minibatch_rows(X: np.ndarray | SparseRows, weight: np.ndarray, centers: np.ndarray,
                   counts: np.ndarray) -> float:
    """:func:`minibatch_step` of dense or CSR rows (the same step, in place).

    Dense chunks of at most :data:`NUMPY_ASSIGN_ENTRIES` take :func:`assign_numpy` and add
    their rows to the centres in numpy, in the kernel's order."""
    if not isinstance(X, SparseRows):
        if X.shape[0] * centers.shape[0] > NUMPY_ASSIGN_ENTRIES:
            return minibatch_step(X, weight, centers, counts)
        labels, sq_dist = assign_numpy(X, centers)
    else:
        labels, sq_dist = assign_rows(X, centers)
    k = centers.shape[0]
    w = np.asarray(weight, dtype=np.float64)
    mass = np.bincount(labels, weights=w, minlength=k)
    if isinstance(X, SparseRows):
        sums = _label_sums(X, labels, w, k)
    else:  # added row after row, as minibatch_step adds them
        sums = np.zeros(centers.shape)
        np.add.at(sums, labels, w[:, None] * X.astype(np.float64))
    moved = mass > 0.0
    total = counts[moved] + mass[moved]
    centers[moved] = (counts[moved, None] * centers[moved] + sums[moved]) / total[:, None]
    counts[moved] = total
    return float(w @ sq_dist.astype(np.float64))


#: Largest ``n_rows x k`` (rows, centres) of a chunk of dense rows whose nearest centres
#: numpy finds (:func:`assign_numpy`, and the mini-batch step around it) instead of
#: :func:`assign_chunk` and :func:`minibatch_step`: a distance matrix of at most 8 MB, a
#: few milliseconds, where compiling the two kernels costs 0.6 s, so that a fit on small
#: data (anchors' centres, the mixture's clusters) does not compile them.
NUMPY_ASSIGN_ENTRIES = 1 << 20


def assign_numpy(X: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`assign_chunk` in numpy: the same distances ``||c||^2 - 2 x . c + ||x||^2`` in
    double precision (summed in another order, so equal up to rounding; the first centre
    wins ties).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    centers : ndarray of shape (k, n_features)

    Returns
    -------
    labels : ndarray of shape (n_rows,), int32
    sq_dist : ndarray of shape (n_rows,), float32
    """
    X64 = np.asarray(X, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    dist = np.einsum("ij,ij->i", C, C)[None, :] - 2.0 * (X64 @ C.T)
    labels = np.argmin(dist, axis=1).astype(np.int32)
    best = dist[np.arange(X64.shape[0]), labels] + np.einsum("ij,ij->i", X64, X64)
    return labels, np.maximum(best, 0.0).astype(np.float32)


#: Lloyd iterations on the sample after k-means++ seeding.
SAMPLE_LLOYD_ITERATIONS = 10
#: Mixed into ``seed`` for the sample of rows the seeding draws from.
SAMPLE_SALT = 0x6B6D_6561_6E73


@njit(cache=True, nogil=True, fastmath=True)
def _dot(a, b):
    # a . b in double precision, summed in SIMD lanes (fastmath lets the sum reassociate)
    s = 0.0
    for f in range(a.shape[0]):
        s += a[f] * b[f]
    return s


@njit(cache=True, nogil=True)
def assign_chunk(X, centers):
    """Nearest centre of every row.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    centers : ndarray of shape (k, n_features), float32 or float64

    Returns
    -------
    labels : ndarray of shape (n_rows,), int32
        Index of the nearest centre (the first one on ties).
    sq_dist : ndarray of shape (n_rows,), float32
        Squared Euclidean distance to it.
    """
    n, d = X.shape
    k = centers.shape[0]
    C = np.empty((k, d))  # double precision, converted once
    c_sq = np.empty(k)
    for j in range(k):
        for f in range(d):
            C[j, f] = centers[j, f]
        c_sq[j] = _dot(C[j], C[j])
    labels = np.empty(n, dtype=np.int32)
    sq_dist = np.empty(n, dtype=np.float32)
    x = np.empty(d)
    for i in range(n):
        for f in range(d):
            x[f] = X[i, f]
        x_sq = _dot(x, x)
        best = np.inf
        arg = 0
        for j in range(k):
            dist = c_sq[j] - 2.0 * _dot(x, C[j])
            if dist < best:
                best = dist
                arg = j
        labels[i] = arg
        sq_dist[i] = np.float32(max(best + x_sq, 0.0))
    return labels, sq_dist


@njit(cache=True, nogil=True)
def minibatch_step(X, weight, centers, counts):
    """One mini-batch k-means step on a chunk (in place).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    weight : ndarray of shape (n_rows,), float32
        Sample weights (``np.ones`` for none).
    centers : ndarray of shape (k, n_features), float64
        Moved to the running means of their rows; updated in place.
    counts : ndarray of shape (k,), float64
        Weighted rows assigned to each centre so far; updated in place.

    Returns
    -------
    float
        Weighted sum of squared distances of the chunk's rows to the centres before the step.
    """
    labels, sq_dist = assign_chunk(X, centers)
    k, d = centers.shape
    sums = np.zeros((k, d))
    mass = np.zeros(k)
    inertia = 0.0
    for i in range(X.shape[0]):
        j = labels[i]
        w = np.float64(weight[i])
        inertia += w * np.float64(sq_dist[i])
        mass[j] += w
        for f in range(d):
            sums[j, f] += w * np.float64(X[i, f])
    for j in range(k):
        if mass[j] > 0.0:
            total = counts[j] + mass[j]
            for f in range(d):
                centers[j, f] = (counts[j] * centers[j, f] + sums[j, f]) / total
            counts[j] = total
    return inertia


@dataclass
class KMeansState:
    """Centres and counts carried through a mini-batch k-means pass.

    Attributes
    ----------
    centers : ndarray of shape (k, n_features), float64
    counts : ndarray of shape (k,), float64
        Weighted rows assigned to each centre since the start of the first pass.
    gained : ndarray of shape (k,), float64
        The part of ``counts`` assigned in this pass (the merge weights).
    inertia : float
        Weighted sum of squared distances met in this pass.
    rows : int
        Rows processed in this pass.
    """

    centers: np.ndarray
    counts: np.ndarray
    gained: np.ndarray
    inertia: float = 0.0
    rows: int = 0


class MiniBatchKMeansPass:
    """Sequential pass: one epoch of mini-batch k-means, one chunk per mini-batch.

    Parameters
    ----------
    centers : ndarray of shape (k, n_features)
        Centres at the start of the pass (not modified).
    counts : ndarray of shape (k,), optional
        Rows assigned to each centre by earlier passes (zeros by default).
    standardiser : Standardiser, optional
        Applied to every chunk's features first.

    Notes
    -----
    Partial states are merged centre by centre, each weighted by the rows it gained in this
    pass; counts add up.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, centers: np.ndarray, counts: np.ndarray | None = None,
                 standardiser: Standardiser | None = None) -> None:
        self.standardiser = standardiser
        self.centers = np.ascontiguousarray(centers, dtype=np.float64)
        k = self.centers.shape[0]
        self.counts = (np.zeros(k) if counts is None
                       else np.ascontiguousarray(counts, dtype=np.float64))

    def start(self) -> KMeansState:
        """Copies of the initial centres and counts."""
        return KMeansState(self.centers.copy(), self.counts.copy(), np.zeros_like(self.counts))

    def step(self, state: KMeansState, chunk: Chunk) -> KMeansState:
        """A mini-batch step on the chunk (in place)."""
        weight = (np.ones(chunk.n_rows, dtype=np.float32) if chunk.weight is None
                  else np.ascontiguousarray(chunk.weight, dtype=np.float32))
        before = state.counts.copy()
        state.inertia += minibatch_rows(chunk_features(chunk, self.standardiser), weight,
                                        state.centers, state.counts)
        state.gained += state.counts - before
        state.rows += chunk.n_rows
        return state

    def merge(self, a: KMeansState, b: KMeansState) -> KMeansState:
        """Centre-wise weighted average of two partial states (a new state)."""
        total = a.gained + b.gained
        safe = np.where(total > 0, total, 1.0)[:, None]
        centers = np.where(total[:, None] > 0,
                           (a.gained[:, None] * a.centers + b.gained[:, None] * b.centers) / safe,
                           a.centers)
        start = a.counts - a.gained
        return KMeansState(centers, start + total, total, a.inertia + b.inertia, a.rows + b.rows)

    def finish(self, state: KMeansState) -> KMeansState:
        """The state after the pass."""
        return state


class RowSamplePass:
    """Reduction pass: a uniform sample of ``k`` rows (see :class:`BottomKSample`).

    Only rows of positive sample weight are offered (a row of weight 0 is no row), each
    with the same chance whatever its weight.

    Parameters
    ----------
    k : int
    n_features : int
    seed : int
    sparse : bool
        Sample CSR rows (into :class:`~streamlearn.data.sparse_rows.SparseRows`).
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, k: int, n_features: int, seed: int, sparse: bool = False) -> None:
        self.k = int(k)
        self.n_features = int(n_features)
        self.seed = int(seed)
        self.sparse = bool(sparse)

    def start(self) -> BottomKSample:
        """An empty sample."""
        return BottomKSample(self.k, self.n_features, self.seed, self.sparse)

    def step(self, state: BottomKSample, chunk: Chunk) -> BottomKSample:
        """Offer the chunk's rows of positive weight (in place)."""
        chunk = chunk.weighted()
        return state.update(chunk.X, chunk.rows)

    def merge(self, a: BottomKSample, b: BottomKSample) -> BottomKSample:
        """Sample of the union (a new sample)."""
        return a.merge(b)

    def finish(self, state: BottomKSample) -> BottomKSample:
        """The sample."""
        return state


def kmeans_plus_plus(X: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: each new centre drawn with probability proportional to ``D(x)^2``.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), or SparseRows
    n_clusters : int
        At most ``n``.
    rng : numpy Generator

    Returns
    -------
    ndarray of shape (n_clusters, n_features), float64
    """
    if isinstance(X, SparseRows):
        return _sparse_kmeans_plus_plus(X, n_clusters, rng)
    X64 = np.asarray(X, dtype=np.float64)
    n = X64.shape[0]
    centers = np.empty((n_clusters, X64.shape[1]))
    centers[0] = X64[rng.integers(n)]
    closest = ((X64 - centers[0]) ** 2).sum(axis=1)
    for j in range(1, n_clusters):
        total = closest.sum()
        pick = rng.integers(n) if total <= 0 else rng.choice(n, p=closest / total)
        centers[j] = X64[pick]
        np.minimum(closest, ((X64 - centers[j]) ** 2).sum(axis=1), out=closest)
    return centers


def _sparse_kmeans_plus_plus(X: SparseRows, n_clusters: int,
                             rng: np.random.Generator) -> np.ndarray:
    # kmeans_plus_plus with the distances from the rows' inner products with each centre
    S = X.to_scipy().astype(np.float64)
    x_sq = X.sq_norms()
    n = X.n_rows
    centers = np.empty((n_clusters, X.n_cols))

    def to(c: np.ndarray) -> np.ndarray:
        return np.maximum(x_sq - 2.0 * (S @ c) + c @ c, 0.0)

    centers[0] = S[[int(rng.integers(n))]].toarray()[0]
    closest = to(centers[0])
    for j in range(1, n_clusters):
        total = closest.sum()
        pick = rng.integers(n) if total <= 0 else rng.choice(n, p=closest / total)
        centers[j] = S[[int(pick)]].toarray()[0]
        np.minimum(closest, to(centers[j]), out=closest)
    return centers


def lloyd(X: np.ndarray | SparseRows, centers: np.ndarray, iterations: int) -> np.ndarray:
    """Lloyd iterations on in-memory rows; a centre left without rows stays where it is.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), float32, or SparseRows
    centers : ndarray of shape (k, n_features)
    iterations : int

    Returns
    -------
    ndarray of shape (k, n_features), float64
    """
    sparse = isinstance(X, SparseRows)
    if not sparse:
        X = np.ascontiguousarray(X, dtype=np.float32)
    centers = np.array(centers, dtype=np.float64)
    k = centers.shape[0]
    for _ in range(iterations):
        labels, _ = assign_rows(X, centers)
        counts = np.bincount(labels, minlength=k).astype(np.float64)
        if sparse:
            sums = _label_sums(X, labels, np.ones(X.n_rows), k)
        else:
            sums = np.zeros_like(centers)
            np.add.at(sums, labels, X.astype(np.float64))
        moved = counts > 0
        new = centers.copy()
        new[moved] = sums[moved] / counts[moved, None]
        if np.array_equal(new, centers):
            break
        centers = new
    return centers


def streamed_kmeans(data: Any, n_clusters: int, *, engine: Any = None, epochs: int = 3,
                    seed: int = 0, init_rows: int | None = None,
                    standardiser: Standardiser | None = None) -> np.ndarray:
    """k-means centres of a dataset, streaming over its chunks.

    One reduction pass draws a uniform sample of ``init_rows`` rows; k-means++ and a few
    Lloyd iterations on the sample give the initial centres; ``epochs`` shuffled passes of
    mini-batch k-means (one chunk per mini-batch) refine them over all rows.

    Parameters
    ----------
    data : Dataset or anything :func:`~streamlearn.data.open_dataset` accepts
    n_clusters : int
        Number of centres ``k``.
    engine : engine, optional
        Runs the passes (``None``, ``"local"``, ``"dask"`` or an engine object).
    epochs : int
        Mini-batch passes over the data (0: the centres of the sample).
    seed : int
        Seeds the sample, the seeding and the shuffling.
    init_rows : int, optional
        Size of the sample the centres are seeded from; default ``max(4096, 20 k)``.
    standardiser : Standardiser, optional
        Cluster the standardised rows ``standardiser.apply(X)`` (the centres are in that
        space); None clusters the rows as they are.

    Returns
    -------
    ndarray of shape (n_clusters, n_features), float32

    Examples
    --------
    >>> import numpy as np
    >>> X = np.vstack([np.zeros((50, 2)), np.ones((50, 2))]).astype(np.float32)
    >>> np.round(np.sort(streamed_kmeans(X, 2)[:, 0]), 3)
    array([0., 1.], dtype=float32)
    """
    from streamlearn.data import open_dataset
    from streamlearn.engine.local import resolve_engine

    k = int(n_clusters)
    if k < 1:
        raise ValueError(f"n_clusters must be at least 1, got {n_clusters}")
    if int(epochs) < 0:
        raise ValueError(f"epochs must be non-negative, got {epochs}")
    dataset = data if isinstance(data, Dataset) else open_dataset(data)
    if dataset.n_rows < k:
        raise DataError(f"k-means with {k} centres needs at least {k} rows, "
                        f"the data has {dataset.n_rows}")
    runner = resolve_engine(engine)
    size = max(4096, 20 * k) if init_rows is None else int(init_rows)
    if size < k:
        raise ValueError(f"init_rows ({size}) must be at least n_clusters ({k})")
    sample: BottomKSample = runner.run(
        RowSamplePass(size, dataset.n_features, seed ^ SAMPLE_SALT, dataset.is_sparse), dataset,
        description="k-means sample")
    rng = np.random.default_rng(seed)
    values = sample.values if standardiser is None else standardiser.apply(sample.values)
    centers = lloyd(values, kmeans_plus_plus(values, k, rng), SAMPLE_LLOYD_ITERATIONS)
    counts = np.zeros(k)
    for epoch in range(int(epochs)):
        state: KMeansState = runner.run(MiniBatchKMeansPass(centers, counts, standardiser),
                                        dataset, shuffle=True, seed=seed, epoch=epoch,
                                        description=f"k-means epoch {epoch + 1}/{epochs}")
        centers, counts = state.centers, state.counts
    return centers.astype(np.float32)
