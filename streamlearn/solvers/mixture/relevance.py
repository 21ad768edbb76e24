"""Weights of the standardised features by their relevance to the labels (``MixtureSVC``'s
gates; also the RBF of the super-sparse models and ShareBoost's anchor metric).

The mixture's gates are RBFs of the distance to the k-means centres, over every
standardised feature alike. A feature that does not bear on the labels then takes as much
of each distance as one that does: the k-means centres and the gates split the data along
its noise, and every region keeps the whole span of the features that matter. A ring in
two of eight normal features tested at 11.5 % error, at 3.1 % without the six others (two splits).

The driver divides each standardised feature by a weight ``w_f`` in
``[RELEVANCE_FLOOR, 1]`` taken from a labelled row sample (:func:`feature_relevance`,
:func:`relevance_weights`):

* the features' values are cut at their sample quantiles into :data:`RELEVANCE_BINS`
  bins (so the weights, like the standardisation, do not depend on the features' units,
  nor on any increasing map of them);
* a set of cells explains the labels by its *correlation ratio*, the share of the
  one-hot labels' variance between the cells, less ``(cells - 1) / n``, its expected
  value for labels independent of the cells;
* a feature's relevance is the most it explains alone (its bins) or with a partner
  beyond what the partner explains alone (the pairs of their bins): a feature that acts
  through a product with another, as in XOR, explains nothing alone;
* ``w_f = sqrt(r_f / (max_g r_g / 3))`` clipped to ``[RELEVANCE_FLOOR, 1]`` (all 1 when
  no feature explains anything): a feature explaining at least a third of what the most
  relevant one explains keeps its whole spread, below that its squared weight, its share
  of a distance, follows its relevance, and none is dropped;
* with more than :data:`MAX_PAIR_FEATURES` features, the pairs are those among the
  :data:`MAX_PAIR_FEATURES` features whose bins explain the most alone (the pairs' counts
  grow with the square of the features); the others count by their bins alone. Wide data
  with a few features that matter among many is where the weights help most: 480 noise
  columns beside 20 of ``make_classification``'s informative and redundant ones (the
  madelon-like set of ``bench/small_data.py``) took ``MixtureSVC()`` from 9.97 to 5.92 %
  test error and ``SuperSparseClassifier()`` from 8.80 to 6.30 (a tuned RBF SVM 7.23).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.engine.row_sample import BottomKSample
from streamlearn.solvers.threads import single_threaded_blas

#: Quantile bins per feature; a pair of features has the square of this many cells.
RELEVANCE_BINS = 4
#: Least weight of a feature: one that explains nothing keeps a tenth of its spread.
RELEVANCE_FLOOR = 0.1
#: A feature whose relevance is at least this share of the most relevant one's keeps its
#: whole spread. At 1 (weights ``sqrt(r / max r)``) the weaker terms of Friedman-1 (its
#: quadratic and its fifth feature, weights 0.42 and 0.5) lost their gates: test error
#: 10.32 -> 11.38 % over five splits, where this share gives 8.58.
FULL_WEIGHT_SHARE = 1.0 / 3.0
#: Features are weighted on dense data of at most this many columns (each of the sampled
#: rows' values is binned) ...
MAX_RELEVANCE_FEATURES = 1024
#: ... and pairs of features are scored among at most this many of them, those whose bins
#: explain the most alone (all of them up to this many): the pairs cost products of
#: ``(d bins)^2`` per sampled row and class.
MAX_PAIR_FEATURES = 64
#: :func:`_single_relevance` bins and counts this many features at a time, so that its
#: temporaries stay at a few MiB of the sample however wide the rows.
SINGLE_BLOCK_FEATURES = 64


class LabelledSamplePass:
    """Reduction pass: a uniform sample of ``k`` rows of positive weight with their class
    codes or targets (the rows of :class:`~streamlearn.solvers.kmeans.RowSamplePass` of the
    same ``k`` and ``seed``).

    Parameters
    ----------
    k : int
    n_features : int
    seed : int
    targets : bool
        Return the rows' targets as they are (regression; float32) instead of integer
        class codes.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, k: int, n_features: int, seed: int, targets: bool = False) -> None:
        self.k = int(k)
        self.n_features = int(n_features)
        self.seed = int(seed)
        self.targets = bool(targets)

    def start(self) -> BottomKSample:
        """An empty sample of the features and the class code."""
        return BottomKSample(self.k, self.n_features + 1, self.seed)

    def step(self, state: BottomKSample, chunk: Chunk) -> BottomKSample:
        """Offer the chunk's rows of positive weight, the class code as a last column."""
        chunk = chunk.weighted()
        assert chunk.y is not None
        rows = np.empty((chunk.n_rows, self.n_features + 1), dtype=np.float32)
        rows[:, :-1] = chunk.X
        rows[:, -1] = chunk.y
        return state.update(rows, chunk.rows)

    def merge(self, a: BottomKSample, b: BottomKSample) -> BottomKSample:
        """Sample of the union (a new sample)."""
        return a.merge(b)

    def finish(self, state: BottomKSample) -> tuple[np.ndarray, np.ndarray]:
        """The sampled rows ``(m, n_features)`` and their class codes (int64) or targets
        (float64) ``(m,)``."""
        values = np.asarray(state.values)
        labels = values[:, -1].astype(np.float64)
        return (np.ascontiguousarray(values[:, :-1]),
                labels if self.targets else np.rint(labels).astype(np.int64))


def quantile_bins(X: np.ndarray, bins: int = RELEVANCE_BINS) -> np.ndarray:
    """Each value's bin among its feature's sample quantiles ``1/bins, .., (bins-1)/bins``
    (ties share a bin): int64 codes in ``[0, bins)``."""
    X = np.asarray(X, dtype=np.float64)
    codes = np.empty(X.shape, dtype=np.int64)
    probs = np.arange(1, bins) / bins
    for f in range(X.shape[1]):
        edges = np.unique(np.quantile(X[:, f], probs))
        codes[:, f] = np.searchsorted(edges, X[:, f], side="right")
    return codes


def feature_relevance(X: np.ndarray, codes: np.ndarray, n_classes: int,
                      bins: int = RELEVANCE_BINS) -> np.ndarray:
    """Each feature's relevance: the most its quantile bins explain of the labels alone, or
    together with another feature's beyond what that one's explain alone (see the module).

    The class counts of every pair of bins are products of the rows' one-hot bins
    ``O`` (``n x d bins``), ``O^T diag(y == c) O`` for each class ``c``; the diagonal
    blocks (a feature with itself) hold its bins alone. With more than
    :data:`MAX_PAIR_FEATURES` features, each feature's bins alone are scored from their
    class counts, and the pairs among the :data:`MAX_PAIR_FEATURES` that explain the most
    alone (:func:`_single_relevance`): a feature that acts only through a product with
    another is then found among those only.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Sampled rows.
    codes : ndarray of shape (n,), int
        Their class codes in ``[0, n_classes)``.
    n_classes : int
    bins : int

    Returns
    -------
    ndarray of shape (d,)
        Correlation ratios less their expected value under independence (may be below 0).
    """
    n, d = X.shape
    codes = np.asarray(codes, dtype=np.int64)
    if n < 2 or n_classes < 2:
        return np.zeros(d)
    if d > MAX_PAIR_FEATURES:
        single = _single_relevance(X, codes, n_classes, bins)
        top = np.sort(np.argsort(-single, kind="stable")[:MAX_PAIR_FEATURES])
        relevance = single.copy()
        relevance[top] = feature_relevance(X[:, top], codes, n_classes, bins)
        return relevance
    share = np.bincount(codes, minlength=n_classes) / n
    label_sq = float(np.sum(share ** 2))  # 1 - the one-hot labels' total variance
    if label_sq >= 1.0:
        return np.zeros(d)
    onehot = np.zeros((n, d * bins))
    onehot[np.arange(n)[:, None], np.arange(d) * bins + quantile_bins(X, bins)] = 1.0
    # small products: BLAS's threads cost more than they give (0.5 s against 0.05 s for
    # 8,192 rows of 22 features on two busy cores)
    with single_threaded_blas():
        count = onehot.T @ onehot
        squares = np.zeros_like(count)
        for c in range(n_classes):
            of_class = onehot[codes == c]
            if of_class.shape[0]:
                squares += np.square(of_class.T @ of_class)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_cell = np.where(count > 0, squares / count, 0.0)
    between = per_cell.reshape(d, bins, d, bins).sum(axis=(1, 3)) / n - label_sq
    used = np.count_nonzero(count.reshape(d, bins, d, bins), axis=(1, 3))
    explained = between / (1.0 - label_sq) - (used - 1) / n
    single = np.diag(explained).copy()
    gain = explained - single[None, :]  # feature f beside g, beyond g alone
    np.fill_diagonal(gain, -np.inf)
    return np.maximum(single, gain.max(axis=1)) if d > 1 else single


def _single_relevance(X: np.ndarray, codes: np.ndarray, n_classes: int,
                      bins: int = RELEVANCE_BINS) -> np.ndarray:
    """What each feature's quantile bins explain of the labels alone (the diagonal of
    :func:`feature_relevance`'s pairs), from the class counts of its bins: memory and
    work linear in the features."""
    n, d = X.shape
    share = np.bincount(codes, minlength=n_classes) / n
    label_sq = float(np.sum(share ** 2))
    if label_sq >= 1.0:
        return np.zeros(d)
    out = np.empty(d)
    for lo in range(0, d, SINGLE_BLOCK_FEATURES):
        hi = min(lo + SINGLE_BLOCK_FEATURES, d)
        cells = (np.arange(hi - lo) * bins)[None, :] + quantile_bins(X[:, lo:hi], bins)
        counts = np.bincount((cells * n_classes + codes[:, None]).ravel(),
                             minlength=(hi - lo) * bins * n_classes
                             ).reshape(hi - lo, bins, n_classes)
        count = counts.sum(axis=2).astype(np.float64)
        squares = np.square(counts.astype(np.float64)).sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_cell = np.where(count > 0, squares / count, 0.0)
        between = per_cell.sum(axis=1) / n - label_sq
        used = np.count_nonzero(count, axis=1)
        out[lo:hi] = between / (1.0 - label_sq) - (used - 1) / n
    return out


def target_codes(targets: np.ndarray, bins: int = RELEVANCE_BINS) -> np.ndarray:
    """A regression target's sampled values as class codes for :func:`feature_relevance`:
    their bin among the sample's quantiles ``1/bins, .., (bins-1)/bins`` (ties share a
    bin), so that a feature is relevant by how its bins separate low, middle and high
    targets, whatever the target's units.

    Parameters
    ----------
    targets : ndarray of shape (n,)
    bins : int

    Returns
    -------
    ndarray of shape (n,), int64 in ``[0, bins)``
    """
    return quantile_bins(np.asarray(targets, dtype=np.float64).reshape(-1, 1), bins)[:, 0]


def relevance_weights(relevance: np.ndarray, floor: float = RELEVANCE_FLOOR) -> np.ndarray:
    """``sqrt(r / (FULL_WEIGHT_SHARE max r))`` clipped to ``[floor, 1]`` per feature; all 1
    when no ``r`` is above 0.

    Parameters
    ----------
    relevance : ndarray of shape (d,)
    floor : float

    Returns
    -------
    ndarray of shape (d,)
    """
    r = np.asarray(relevance, dtype=np.float64)
    top = float(r.max()) if r.size else 0.0
    if not top > 0.0:
        return np.ones_like(r)
    share = np.clip(r, 0.0, None) / (FULL_WEIGHT_SHARE * top)
    return np.clip(np.sqrt(share), floor, 1.0)
