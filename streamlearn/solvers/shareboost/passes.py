"""ShareBoost's passes over the data (paper 003), each a reduction with a dataclass state.

- :class:`WeightedSummaryPass`: feature ranges and a weighted row sample of the rows of
  positive weight, from which the candidate columns are built;
- :class:`ColumnScorePass`: the gradient matrix of eq. 7 for every candidate column at the
  current ``W`` (one greedy round's choice);
- :class:`RestrictedObjectivePass`: loss and gradient of the problem restricted to the
  selected columns (one evaluation of the fully corrective step), or the loss and errors
  of the rows held out to choose the number of rounds (and what the temperature of the
  class probabilities is chosen by);
- :class:`TemperaturePass`: what the temperature is chosen by, on the training rows.

Rows held out (a :class:`~streamlearn.solvers.holdout.Holdout`) take no part in the summary,
the column scores or the gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from streamlearn.data import Chunk
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import LabelError
from streamlearn.solvers.calibration import TemperatureSums
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.row_sample import BottomKSample
from streamlearn.solvers.shareboost.columns import (
    AnchorColumns,
    Family,
    LinearColumns,
    StumpColumns,
)
from streamlearn.solvers.shareboost.kernels import (
    NUMPY_OBJECTIVE_ENTRIES,
    ObjectiveRows,
    decision,
    decision_chunk,
    exp_lanes,
    linear_gates_csr,
    linear_gates_numpy,
    linear_margin_residuals_chunk,
    linear_objective_chunk,
    margin_residuals_chunk,
    margin_residuals_numpy,
    objective_rows_numpy,
    restricted_objective_chunk,
    single_column_objective_chunk,
    stump_objective_chunk,
    stump_tables,
)
from streamlearn.solvers.threads import (
    MIN_ROWS_PER_THREAD,
    in_threads,
    single_threaded_blas,
    thread_bounds,
)


def chunk_arrays(chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
    """Class codes (int32) and weights (float32, ones without weights) of a chunk."""
    codes = np.ascontiguousarray(chunk.y, dtype=np.int32)
    weight = (np.ones(chunk.n_rows, dtype=np.float32) if chunk.weight is None
              else np.ascontiguousarray(chunk.weight, dtype=np.float32))
    return codes, weight


def training_rows(chunk: Chunk, holdout: Holdout | None) -> Chunk:
    """The chunk with its held-out rows' weights set to zero.

    Every pass's sums are weighted, so a row of weight zero adds nothing to them. Keeping
    the held-out rows in place costs the kernels their share of the rows (a tenth by
    default) and saves copying the other rows of every chunk at every pass, which took as
    long as the passes' arithmetic on wide data.
    """
    if holdout is None:
        return chunk
    held = holdout.mask(chunk.rows)
    if not held.any():
        return chunk
    weight = (np.ones(chunk.n_rows, dtype=np.float32) if chunk.weight is None
              else np.array(chunk.weight, dtype=np.float32))
    weight[held] = 0.0
    return replace(chunk, weight=weight)


class ChunkTerms:
    """What the restricted objective reads of one chunk's training rows and does not change
    with the coefficients: class codes and weights (held-out rows weighted zero), and the
    selected columns' gates and base columns as its path reads them (filled by
    :func:`restricted_objective` as it computes them).

    Attributes
    ----------
    codes, weight : ndarray of shape (n,)
        From :func:`chunk_arrays` of :func:`training_rows`.
    rows : ObjectiveRows or None
        The numpy path's rows (:func:`numpy_paths`).
    gates, base : ndarray or None
        The kernels' gates and base columns (anchors).
    """

    __slots__ = ("base", "codes", "gates", "rows", "weight")

    def __init__(self, codes: np.ndarray, weight: np.ndarray) -> None:
        self.codes = codes
        self.weight = weight
        self.rows: ObjectiveRows | None = None
        self.gates: np.ndarray | None = None
        self.base: np.ndarray | None = None


class ChunkMemo:
    """What passes over the same data computed of each chunk, for later passes to read.

    A chunk is known by its first row and its number of rows; one whose rows are not
    consecutive (shuffled, or rows dropped by validation) is not kept. Meant for data small
    enough for the numpy paths (:func:`keeps_terms`), whose chunks all fit in memory.
    Copied (to another process), it starts empty.
    """

    def __init__(self) -> None:
        self._chunks: dict[tuple[int, int], Any] = {}

    def __reduce__(self) -> tuple[type[ChunkMemo], tuple[()]]:
        return (type(self), ())

    def __len__(self) -> int:
        return len(self._chunks)

    def get(self, chunk: Chunk, make: Callable[[], Any]) -> Any:
        """The chunk's value: the one kept, or ``make()`` (kept when the chunk can be
        known)."""
        key = (int(chunk.start), int(chunk.n_rows))
        if chunk.index is None and key in self._chunks:
            return self._chunks[key]
        value = make()
        if chunk.index is None:
            self._chunks[key] = value
        return value


class StepTerms(ChunkMemo):
    """The :class:`ChunkTerms` of every chunk, kept through the evaluations of one
    corrective step (:class:`RestrictedObjectivePass` ``kept``), in which the data, the
    selected columns and the rows held out do not change: the same numbers as recomputing
    them at every evaluation, once. It keeps float64 copies of the gates of every chunk
    (see :class:`ChunkMemo`).
    """

    def of(self, chunk: Chunk, holdout: Holdout | None) -> ChunkTerms:
        """The chunk's terms: those kept, or new ones."""
        return self.get(chunk, lambda: ChunkTerms(*chunk_arrays(training_rows(chunk,
                                                                              holdout))))


def held_out_rows(chunk: Chunk, holdout: Holdout) -> Chunk | None:
    """The chunk's held-out rows (None when it has none)."""
    held = holdout.mask(chunk.rows)
    return chunk.select(held) if held.any() else None


def selected_gates(family: Family, X: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """Gates of the selected candidates on rows ``X``, (n, T) float32 C-contiguous."""
    return np.ascontiguousarray(family.gates(X, selected), dtype=np.float32)


def class_scores(family: Family, X: np.ndarray | SparseRows, selected: np.ndarray,
                 coef: np.ndarray, intercept: np.ndarray, numpy: bool = False) -> np.ndarray:
    """Class scores ``W x + b`` of rows ``X`` on the selected columns, (n, k) float64
    (``numpy``: by :func:`~streamlearn.solvers.shareboost.kernels.decision`, numpy on a
    small chunk, see :func:`numpy_paths`)."""
    if numpy:
        with single_threaded_blas():  # small products: a BLAS thread costs more than it gains
            return decision(family.gates(X, selected), family.base(X), coef, intercept)
    return decision_chunk(family.gates(X, selected), family.base(X), coef, intercept)


#: Datasets of at most this many rows are fitted by the numpy paths of the passes
#: (:func:`numpy_paths`).
NUMPY_ROWS = 4096


def numpy_paths(n_rows: int) -> bool:
    """Whether the passes over a dataset of ``n_rows`` rows take their numpy paths.

    On at most :data:`NUMPY_ROWS` rows, the restricted problem of linear columns and of
    anchors, the residuals of the anchors' column scores, the linear and anchor column
    scores and the class scores are computed by numpy
    (:mod:`~streamlearn.solvers.shareboost.kernels`) on chunks of at most
    :data:`~streamlearn.solvers.shareboost.kernels.NUMPY_OBJECTIVE_ENTRIES` entries
    (:func:`small_chunk`): the same sums up to rounding, and a first fit on small data
    compiles none of those kernels (about 3 s of a 2,000-row fit's 5.4 s of compiling).
    Larger datasets keep the kernels on every chunk, so what they learn is unchanged.
    """
    return int(n_rows) <= NUMPY_ROWS


#: Datasets of at most this many rows keep their chunks' terms through each corrective step
#: (:class:`StepTerms`, :func:`keeps_step_terms`): those of the numpy paths, whose chunks'
#: gates fit in memory many times over ...
KEEP_TERMS_ROWS = NUMPY_ROWS
#: ... and larger ones where those terms take at most this many bytes.
KEEP_TERMS_BYTES = 128 << 20


def keeps_terms(n_rows: int) -> bool:
    """Whether passes over a dataset of ``n_rows`` rows keep what they computed of each
    chunk for the next ones (:class:`ChunkMemo`): at most :data:`KEEP_TERMS_ROWS` rows."""
    return int(n_rows) <= KEEP_TERMS_ROWS


def keeps_step_terms(n_rows: int, n_columns: int) -> bool:
    """Whether a corrective step on a dataset of ``n_rows`` rows keeps its chunks' terms
    through its evaluations (:class:`StepTerms`): :func:`keeps_terms`, or terms of at
    most :data:`KEEP_TERMS_BYTES` (4 bytes a row for each of the ``n_columns`` gates and
    base columns the step reads, its class code and its weight). Recomputing an anchor's
    gates (a distance per row) at each of the step's evaluations took a quarter of a fit
    that kept 350 anchors on 8,000 rows of two features."""
    return (keeps_terms(n_rows)
            or 4 * int(n_rows) * (int(n_columns) + 2) <= KEEP_TERMS_BYTES)


def small_chunk(n_rows: int, selected: np.ndarray, coef: np.ndarray) -> bool:
    """Whether a chunk of ``n_rows`` rows scored by ``coef`` (T, k, q) takes the numpy
    paths (:data:`~streamlearn.solvers.shareboost.kernels.NUMPY_OBJECTIVE_ENTRIES`)."""
    return n_rows * len(selected) * coef.shape[1] * coef.shape[2] <= NUMPY_OBJECTIVE_ENTRIES


#: Multiply-adds below which OpenBLAS runs a matrix product on one thread whatever its
#: thread count (a matrix-vector product below 9,216 entries, a matrix product below
#: 262,144; a dot product up to 10,000 entries).
SERIAL_BLAS_PRODUCTS = 9216


def serial_blas(n_rows: int, coef: np.ndarray) -> bool:
    """Whether every BLAS call of the numpy objective of rows kept as
    :class:`~streamlearn.solvers.shareboost.kernels.ObjectiveRows` (``n_rows`` rows, ``coef``
    of shape (T, k, q)) runs on one thread whatever BLAS's thread count: its largest
    product, ``n_rows x T x k x q`` (``T x k`` for single columns, which multiply no rows by
    a matrix: ``offsets @ W`` and ``w @ loss``), below :data:`SERIAL_BLAS_PRODUCTS`. Such a
    product needs no :func:`~streamlearn.solvers.threads.single_threaded_blas`: the same
    arithmetic on one thread, without setting and restoring BLAS's thread count (0.1 ms, a
    pass's arithmetic on a few hundred rows)."""
    T, k, q = coef.shape
    if q == 1:
        return max(T * k, int(n_rows)) < SERIAL_BLAS_PRODUCTS
    return int(n_rows) * T * k * q < SERIAL_BLAS_PRODUCTS


# -- passes -------------------------------------------------------------------------------
def restricted_objective(family: Family, X: np.ndarray, selected: np.ndarray,
                         codes: np.ndarray, weight: np.ndarray, coef: np.ndarray,
                         intercept: np.ndarray, grad_coef: np.ndarray,
                         grad_intercept: np.ndarray, numpy: bool = False,
                         kept: ChunkTerms | None = None) -> tuple[float, float, float]:
    """Loss sums of the restricted problem on rows ``X``, its gradient added to
    ``grad_coef`` and ``grad_intercept``, the rows split between threads.

    Stumps are scored from per-feature tables and their gradient taken from histograms of
    the residuals (:func:`~streamlearn.solvers.shareboost.kernels.stump_objective_chunk`);
    other groups of one column by
    :func:`~streamlearn.solvers.shareboost.kernels.single_column_objective_chunk`, anchors
    by :func:`~streamlearn.solvers.shareboost.kernels.restricted_objective_chunk`. With
    ``numpy`` (:func:`numpy_paths`), small chunks (:func:`small_chunk`) of linear columns
    (dense or CSR rows alike) or anchors take
    :func:`~streamlearn.solvers.shareboost.kernels.restricted_objective_numpy` instead, the
    same sums up to rounding without a kernel to compile.

    ``kept`` (:class:`ChunkTerms`, of these rows, family and selected columns) holds what
    an earlier evaluation computed of the rows that does not change with the coefficients
    (the gates and base columns, in the form the path reads them), and receives what this
    one computes: the same numbers, computed once per corrective step.

    Returns
    -------
    loss, weight_sum, errors : float
    """
    if isinstance(family, StumpColumns):
        features, bins = np.divmod(selected, family.n_thresholds)
        hist = family.gradient_state(intercept.shape[0])
        out = stump_statistics(family, X, selected, coef, intercept, codes, weight,
                               np.unique(features), hist, grad_intercept)
        grad_coef[:, :, 0] += np.cumsum(hist, axis=1)[features, bins]
        return out
    single = coef.shape[2] == 1
    linear = isinstance(family, LinearColumns)
    dense_linear = linear and isinstance(X, np.ndarray)
    if numpy and (linear or not single) and small_chunk(_rows(X), selected, coef):
        # small products: a BLAS thread costs more than it gains; on the rows kept, products
        # that BLAS runs on one thread anyway are left without the limit, which costs more
        # than their arithmetic on a few hundred rows
        serial = kept is not None and kept.rows is not None and serial_blas(_rows(X), coef)
        with nullcontext() if serial else single_threaded_blas():
            return _small_restricted_objective(family, X, selected, codes, weight, coef,
                                               intercept, grad_coef, grad_intercept, kept)
    W = np.ascontiguousarray(coef[:, :, 0]) if single else coef
    if dense_linear:
        features = np.ascontiguousarray(selected, dtype=np.int64)
        # the kernel reads x * scale; the columns' shift is folded into the intercept
        offsets = family.offsets(features)
        shifted = intercept - offsets @ W

        def linear_work(lo: int, hi: int
                        ) -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
            grad = np.zeros(W.shape)
            grad_b = np.zeros_like(grad_intercept)
            sums = linear_objective_chunk(X[lo:hi], features, family.scale, codes[lo:hi],
                                          weight[lo:hi], W, shifted, grad, grad_b,
                                          exp_lanes(intercept.shape[0]))
            # d/dW of the shifted columns: x * scale less the offset times d/db
            grad -= np.outer(offsets, grad_b)
            return grad, grad_b, sums

        return _added(in_threads(linear_work, thread_bounds(X.shape[0], MIN_ROWS_PER_THREAD)),
                      grad_coef[:, :, 0], grad_intercept)
    if kept is not None and kept.gates is not None:
        gates, base = kept.gates, kept.base
    else:
        gates = selected_gates(family, X, selected)
        base = family.base(X)
        if kept is not None:
            kept.gates, kept.base = gates, base

    def work(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
        grad = np.zeros(W.shape)
        grad_b = np.zeros_like(grad_intercept)
        kernel = single_column_objective_chunk if single else restricted_objective_chunk
        sums = kernel(gates[lo:hi], base[lo:hi], codes[lo:hi], weight[lo:hi], W, intercept,
                      grad, grad_b, exp_lanes(intercept.shape[0]))
        return grad, grad_b, sums

    return _added(in_threads(work, thread_bounds(X.shape[0], MIN_ROWS_PER_THREAD)),
                  grad_coef[:, :, 0] if single else grad_coef, grad_intercept)


def _small_restricted_objective(family: Family, X: np.ndarray | SparseRows,
                                selected: np.ndarray, codes: np.ndarray, weight: np.ndarray,
                                coef: np.ndarray, intercept: np.ndarray,
                                grad_coef: np.ndarray, grad_intercept: np.ndarray,
                                kept: ChunkTerms | None = None) -> tuple[float, float, float]:
    # restricted_objective of a small chunk (small_chunk) of linear columns or anchors, in
    # numpy (restricted_objective_numpy): no kernel to compile. Linear columns of dense and
    # of CSR rows get the same gates (linear_gates_numpy, linear_gates_csr), hence the same
    # sums
    linear = isinstance(family, LinearColumns)
    rows = None if kept is None else kept.rows
    if rows is None:
        if not linear:
            gates = selected_gates(family, X, selected)
        elif isinstance(X, SparseRows):
            gates = linear_gates_csr(*X.kernel_args, selected, family.scale)
        else:
            gates = linear_gates_numpy(X, selected, family.scale)
        rows = ObjectiveRows(gates, family.base(X), codes, weight)
        if kept is not None:
            kept.rows = rows
    if not linear:
        return objective_rows_numpy(rows, coef, intercept, grad_coef, grad_intercept)
    # the columns' shift folded into the intercept, as for the kernel
    offsets = family.offsets(selected)
    grad = np.zeros(coef.shape)
    grad_b = np.zeros_like(grad_intercept)
    sums = objective_rows_numpy(rows, coef, intercept - offsets @ coef[:, :, 0], grad, grad_b)
    grad_coef[:, :, 0] += grad[:, :, 0] - np.outer(offsets, grad_b)
    grad_intercept += grad_b
    return sums


def _rows(X: np.ndarray | SparseRows) -> int:
    return X.n_rows if isinstance(X, SparseRows) else X.shape[0]


def stump_statistics(family: StumpColumns, X: np.ndarray, selected: np.ndarray,
                     coef: np.ndarray, intercept: np.ndarray, codes: np.ndarray,
                     weight: np.ndarray, hist_features: np.ndarray, hist: np.ndarray,
                     grad_intercept: np.ndarray) -> tuple[float, float, float]:
    """Loss sums of a stump model on rows ``X``, the rows' residuals added to the bins of
    ``hist_features`` in ``hist`` (:func:`~streamlearn.solvers.shareboost.kernels.
    stump_objective_chunk`), the rows split between threads."""
    features, bins = np.divmod(selected, family.n_thresholds)
    table = stump_tables(features, bins, coef, family.thresholds)
    score_features = np.unique(features)
    hist_features = np.asarray(hist_features, dtype=np.int64)

    def work(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
        part = np.zeros_like(hist)
        grad_b = np.zeros_like(grad_intercept)
        sums = stump_objective_chunk(X[lo:hi], family.kernel_thresholds, score_features,
                                     table, codes[lo:hi], weight[lo:hi], intercept,
                                     hist_features, part, grad_b,
                                     exp_lanes(intercept.shape[0]))
        return part, grad_b, sums

    return _added(in_threads(work, thread_bounds(X.shape[0], MIN_ROWS_PER_THREAD)), hist,
                  grad_intercept)


def linear_column_statistics(family: LinearColumns, X: np.ndarray, selected: np.ndarray,
                             W: np.ndarray, intercept: np.ndarray, codes: np.ndarray,
                             weight: np.ndarray, acc: np.ndarray, numpy: bool = False
                             ) -> tuple[float, float, float]:
    """Loss sums of a model of linear columns on dense rows ``X``, and the gradient column of
    every feature added to ``acc`` (a column-score pass's work on one chunk), the rows split
    between threads.

    Parameters
    ----------
    family : LinearColumns
    X : ndarray of shape (n, d), float32
    selected : ndarray of shape (T,), int64
    W : ndarray of shape (T, k), float64
        ``coef[:, :, 0]``, C-contiguous.
    intercept : ndarray of shape (k,)
    codes, weight : ndarray of shape (n,)
        From :func:`chunk_arrays`.
    acc : ndarray of shape (d, k), float64
        Receives the gradient columns (added to).
    numpy : bool
        Small chunks take numpy (:func:`numpy_paths`).

    Returns
    -------
    loss, weight_sum, errors : float
    """
    shifted = intercept - family.offsets(selected) @ W  # the columns' shift, as above
    if numpy and small_chunk(X.shape[0], selected, W[:, :, None]):  # as restricted_objective
        with single_threaded_blas():
            residuals, loss, wsum, errors = margin_residuals_numpy(
                linear_gates_numpy(X, selected, family.scale), family.base(X), codes,
                weight, W[:, :, None], shifted)
            family.accumulate(X, family.base(X), residuals, acc)  # the CSR kernel's sums
        return loss, wsum, errors

    def work(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
        residuals, loss, wsum, errors = linear_margin_residuals_chunk(
            X[lo:hi], selected, family.scale, codes[lo:hi], weight[lo:hi], W, shifted,
            exp_lanes(intercept.shape[0]))
        part = np.zeros_like(acc)
        family.accumulate(X[lo:hi], family.base(X[lo:hi]), residuals, part)
        return part, np.zeros(0), (loss, wsum, errors)

    return _added(in_threads(work, thread_bounds(X.shape[0], MIN_ROWS_PER_THREAD)), acc,
                  np.zeros(0))


def _added(parts: list[tuple[np.ndarray, np.ndarray, tuple[float, float, float]]],
           acc: np.ndarray, acc_intercept: np.ndarray) -> tuple[float, float, float]:
    # the threads' accumulators added to the caller's, their sums added up
    for part, part_b, _ in parts:
        acc += part
        acc_intercept += part_b
    return (sum(p[2][0] for p in parts), sum(p[2][1] for p in parts),
            sum(p[2][2] for p in parts))


@dataclass
class WeightedSummaryState:
    """What the candidate columns are built from: the rows of positive weight only.

    Attributes
    ----------
    n_rows : int
        Rows with a positive weight.
    weight : float
        Sum of the weights.
    largest : ndarray of shape (d,), float64
        Largest absolute value of every feature over the rows of positive weight.
    squares : ndarray of shape (d,), float64
        Weighted sum of every feature's squares over the rows of positive weight.
    sample : BottomKSample or None
        Uniform sample of the rows of positive weight; its last column is the row's weight.
        None when no sample is kept.
    minimum, maximum : ndarray of shape (d,), float64
        Every feature's range over the rows of positive weight (over the stored values of
        sparse rows); ``+inf`` and ``-inf`` before any row.
    total : ndarray of shape (d,), float64
        Weighted sum of every feature over the rows of positive weight.
    """

    n_rows: int
    weight: float
    largest: np.ndarray
    squares: np.ndarray
    sample: BottomKSample | None
    minimum: np.ndarray
    maximum: np.ndarray
    total: np.ndarray


@dataclass(frozen=True)
class WeightedSummary:
    """Result of :class:`WeightedSummaryPass`.

    Attributes
    ----------
    n_rows : int
        Rows with a positive weight.
    weight : float
        Sum of the weights.
    largest : ndarray of shape (d,), float64
        Largest absolute value of every feature over the rows of positive weight.
    squares : ndarray of shape (d,), float64
        Weighted sum of every feature's squares over the rows of positive weight.
    sample : ndarray of shape (m, d), float32
        Uniform sample of ``m = min(sample_size, n_rows)`` rows of positive weight (no rows
        for a sample size of 0).
    sample_weight : ndarray of shape (m,), float64
        Weights of the sampled rows.
    minimum, maximum : ndarray of shape (d,), float64
        Every feature's range over the rows of positive weight (stored values of sparse
        rows).
    total : ndarray of shape (d,), float64 or None
        Weighted sum of every feature over the rows of positive weight (None: not known).
    sample_codes : ndarray of shape (m,), int64, or None
        Class codes of the sampled rows (None: not known).
    """

    n_rows: int
    weight: float
    largest: np.ndarray
    squares: np.ndarray
    sample: np.ndarray
    sample_weight: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    total: np.ndarray | None = None
    sample_codes: np.ndarray | None = None

    def quantiles(self, probabilities: np.ndarray) -> np.ndarray:
        """Weighted quantiles of every feature over the sample, (d, p), ascending per feature.

        The ``p`` quantile is the smallest sampled value whose cumulative weight reaches
        ``p`` times the total (the inverted distribution function), so a row of weight
        ``w`` gives the same quantiles as ``w`` copies of it.
        """
        probabilities = np.asarray(probabilities, dtype=np.float64)
        d = self.sample.shape[1]
        out = np.empty((d, probabilities.shape[0]))
        for f in range(d):
            order = np.argsort(self.sample[:, f], kind="stable")
            cumulative = np.cumsum(self.sample_weight[order])
            at = np.searchsorted(cumulative, probabilities * cumulative[-1], side="left")
            out[f] = self.sample[order[np.minimum(at, order.shape[0] - 1)], f]
        return out


class WeightedSummaryPass:
    """Reduction pass: feature ranges, sums of squares and a weighted row sample, ignoring
    zero-weight rows.

    Rows enter the candidate columns in proportion to their weight: a row of weight 0 is
    left out and a row of weight ``w`` counts as ``w`` copies (the stumps' thresholds are
    weighted quantiles), so fitting with integer weights is fitting on repeated rows.
    Chunks of CSR rows are summarised from their stored entries; they keep no sample
    (only the linear columns, which need none, train on sparse rows).

    Parameters
    ----------
    n_features : int
    sample_size : int
        Rows in the sample the stump thresholds and anchor radii come from; 0 keeps none.
    seed : int
        Selects the sample; the result does not depend on chunking or merge order.
    n_classes : int
        Class codes must lie in ``[0, n_classes)``.
    holdout : Holdout, optional
        Rows left out (they are checked, not summarised).
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, n_features: int, sample_size: int, seed: int, n_classes: int,
                 holdout: Holdout | None = None) -> None:
        self.n_features = int(n_features)
        self.sample_size = int(sample_size)
        self.seed = int(seed)
        self.n_classes = int(n_classes)
        self.holdout = holdout

    def start(self) -> WeightedSummaryState:
        """Empty state."""
        # the sampled rows' features, weight and class code
        sample = (BottomKSample(self.sample_size, self.n_features + 2, self.seed)
                  if self.sample_size > 0 else None)
        return WeightedSummaryState(0, 0.0, np.zeros(self.n_features),
                                    np.zeros(self.n_features), sample,
                                    np.full(self.n_features, np.inf),
                                    np.full(self.n_features, -np.inf),
                                    np.zeros(self.n_features))

    def step(self, state: WeightedSummaryState, chunk: Chunk) -> WeightedSummaryState:
        """Fold the chunk's rows of positive weight into ``state`` (in place)."""
        codes, weight = chunk_arrays(chunk)
        if codes.size and (codes.min() < 0 or codes.max() >= self.n_classes):
            raise LabelError(f"class codes must lie in [0, {self.n_classes}), got values in "
                             f"[{codes.min()}, {codes.max()}] in the chunk starting at row "
                             f"{chunk.start}")
        keep = weight > 0
        if self.holdout is not None:
            keep &= ~self.holdout.mask(chunk.rows)
        if not keep.any():
            return state
        kept = chunk.select(keep)
        w = weight[keep].astype(np.float64)
        state.n_rows += int(keep.sum())
        state.weight += float(w.sum())
        if isinstance(kept.X, SparseRows):
            rows = kept.X
            column = rows.indices
            value = rows.values.astype(np.float64)
            row_weight = np.repeat(w, np.diff(rows.indptr))
            np.maximum.at(state.largest, column, np.abs(value))
            np.minimum.at(state.minimum, column, value)
            np.maximum.at(state.maximum, column, value)
            state.squares += np.bincount(column, weights=row_weight * value * value,
                                         minlength=self.n_features)
            state.total += np.bincount(column, weights=row_weight * value,
                                       minlength=self.n_features)
        else:
            X = kept.X
            np.maximum(state.largest, np.abs(X).max(axis=0), out=state.largest)
            np.minimum(state.minimum, X.min(axis=0), out=state.minimum)
            np.maximum(state.maximum, X.max(axis=0), out=state.maximum)
            X64 = X.astype(np.float64)
            state.squares += w @ (X64 * X64)
            state.total += w @ X64
            if state.sample is not None:
                state.sample.update(np.column_stack([X, weight[keep], codes[keep]])
                                    .astype(np.float32), kept.rows)
        return state

    def merge(self, a: WeightedSummaryState, b: WeightedSummaryState) -> WeightedSummaryState:
        """Combine the states of two disjoint sets of chunks (a new state)."""
        sample = None if a.sample is None or b.sample is None else a.sample.merge(b.sample)
        return WeightedSummaryState(a.n_rows + b.n_rows, a.weight + b.weight,
                                    np.maximum(a.largest, b.largest), a.squares + b.squares,
                                    sample, np.minimum(a.minimum, b.minimum),
                                    np.maximum(a.maximum, b.maximum), a.total + b.total)

    def finish(self, state: WeightedSummaryState) -> WeightedSummary:
        """The summary."""
        values = (np.zeros((0, self.n_features + 2), dtype=np.float32)
                  if state.sample is None else state.sample.values)
        return WeightedSummary(state.n_rows, state.weight, state.largest.copy(),
                               state.squares.copy(), np.ascontiguousarray(values[:, :-2]),
                               values[:, -2].astype(np.float64), state.minimum.copy(),
                               state.maximum.copy(), state.total.copy(),
                               np.rint(values[:, -1]).astype(np.int64))


@dataclass
class ObjectiveState:
    """Weighted sums of one pass: loss, gradient (or column statistics), errors.

    Attributes
    ----------
    loss, weight, errors : float
        Sums of ``w_i loss_i``, ``w_i`` and the weights of misclassified rows.
    gradient : ndarray
        The pass's accumulator (restricted gradient, or candidate statistics).
    intercept : ndarray of shape (k,)
        Gradient with respect to the intercept (restricted pass only).
    held_loss, held_weight, held_errors : float
        The same sums over the held-out rows (restricted pass only).
    temperature : TemperatureSums or None
        The held-out rows' class scores, summed for the temperature of the class
        probabilities (a held-out pass asked for them only).
    """

    loss: float
    weight: float
    errors: float
    gradient: np.ndarray
    intercept: np.ndarray
    held_loss: float = 0.0
    held_weight: float = 0.0
    held_errors: float = 0.0
    temperature: TemperatureSums | None = None

    def combined(self, other: ObjectiveState) -> ObjectiveState:
        """Sum of two states (a new state)."""
        return ObjectiveState(self.loss + other.loss, self.weight + other.weight,
                              self.errors + other.errors, self.gradient + other.gradient,
                              self.intercept + other.intercept,
                              self.held_loss + other.held_loss,
                              self.held_weight + other.held_weight,
                              self.held_errors + other.held_errors,
                              TemperatureSums.merged(self.temperature, other.temperature))


class _ModelPass:
    """A pass over the rows scored by a model of the selected columns: the family, the
    selected candidates, their coefficients, the intercept and the rows held out."""

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, family: Family, selected: np.ndarray, coef: np.ndarray,
                 intercept: np.ndarray, holdout: Holdout | None = None,
                 numpy: bool = False) -> None:
        self.family = family
        self.selected = np.asarray(selected, dtype=np.int64)
        self.coef = coef
        self.intercept = intercept
        self.holdout = holdout
        self.numpy = numpy


class ColumnScorePass(_ModelPass):
    """Reduction pass: gradient matrix of eq. 7 for every candidate column at the current W.

    Parameters
    ----------
    family : LinearColumns, StumpColumns or AnchorColumns
    selected : ndarray of shape (T,), int64
        Selected candidates, in the order of ``coef``.
    coef : ndarray of shape (T, k, q)
    intercept : ndarray of shape (k,)
    holdout : Holdout, optional
        Rows left out.
    numpy : bool
        Small chunks take numpy, not the kernels (on small data: :func:`numpy_paths`).
    bins : ChunkMemo, optional
        Anchors: each chunk's bins of the candidates' histogram on the numpy path
        (:meth:`~streamlearn.solvers.shareboost.columns.AnchorColumns.histogram_bins`),
        which depend on the rows and the candidates alone, shared by the column scores of
        one family on the same data: each chunk's are computed by the first pass and read
        by the others.
    """

    def __init__(self, family: Family, selected: np.ndarray, coef: np.ndarray,
                 intercept: np.ndarray, holdout: Holdout | None = None,
                 numpy: bool = False, bins: ChunkMemo | None = None) -> None:
        super().__init__(family, selected, coef, intercept, holdout, numpy)
        self.bins = bins

    def start(self) -> ObjectiveState:
        """Empty sums."""
        k = self.intercept.shape[0]
        return ObjectiveState(0.0, 0.0, 0.0, self.family.gradient_state(k), np.zeros(k))

    def step(self, state: ObjectiveState, chunk: Chunk) -> ObjectiveState:
        """Residuals of the chunk's rows, folded into every candidate's column (in place)."""
        chunk = training_rows(chunk, self.holdout)
        codes, weight = chunk_arrays(chunk)
        if isinstance(self.family, StumpColumns):  # the bins are the stumps' statistics
            loss, wsum, errors = stump_statistics(
                self.family, chunk.X, self.selected, self.coef, self.intercept, codes, weight,
                np.arange(chunk.X.shape[1]), state.gradient, np.zeros_like(self.intercept))
        elif isinstance(self.family, LinearColumns) and isinstance(chunk.X, np.ndarray):
            loss, wsum, errors = linear_column_statistics(
                self.family, chunk.X, self.selected, np.ascontiguousarray(self.coef[:, :, 0]),
                self.intercept, codes, weight, state.gradient, self.numpy)
        elif self.numpy and small_chunk(chunk.n_rows, self.selected, self.coef):
            with single_threaded_blas():  # numpy, as restricted_objective
                base = self.family.base(chunk.X)
                residuals, loss, wsum, errors = margin_residuals_numpy(
                    selected_gates(self.family, chunk.X, self.selected), base, codes, weight,
                    self.coef, self.intercept)
                if self.bins is not None and isinstance(self.family, AnchorColumns):
                    family = self.family
                    bins = self.bins.get(chunk, lambda: family.histogram_bins(chunk.X))
                    family.accumulate(chunk.X, base, residuals, state.gradient, numpy=True,
                                      bins=bins)
                else:
                    self.family.accumulate(chunk.X, base, residuals, state.gradient,
                                           numpy=True)
        else:
            base = self.family.base(chunk.X)
            gates = selected_gates(self.family, chunk.X, self.selected)
            residuals, loss, wsum, errors = margin_residuals_chunk(
                gates, base, codes, weight, self.coef, self.intercept,
                exp_lanes(self.intercept.shape[0]))
            self.family.accumulate(chunk.X, base, residuals, state.gradient)
        state.loss += loss
        state.weight += wsum
        state.errors += errors
        return state

    def merge(self, a: ObjectiveState, b: ObjectiveState) -> ObjectiveState:
        """Sum of two states (a new state)."""
        return a.combined(b)

    def finish(self, state: ObjectiveState) -> ObjectiveState:
        """The sums."""
        return state


class RestrictedObjectivePass(_ModelPass):
    """Reduction pass: loss and gradient of the problem restricted to the selected columns.

    Parameters
    ----------
    family, selected, coef, intercept, holdout
        As in :class:`ColumnScorePass`.
    held_out : bool
        Tally only the held-out rows of ``holdout`` (their loss, weight and errors, into
        ``held_*``; no gradient), instead of the training rows. A corrective step makes
        this pass once, at the model it returns: tallying them at every evaluation cost
        a fifth of its time.
    temperature : bool
        With ``held_out``: also sum the held-out rows' class scores into a
        :class:`~streamlearn.solvers.calibration.TemperatureSums` (``temperature`` of the
        state), what the temperature of the class probabilities is chosen by.
    numpy : bool
        As in :class:`ColumnScorePass`.
    kept : StepTerms, optional
        The chunks' terms that do not change with the coefficients, shared by the passes
        of one corrective step (same data, family, selected columns and holdout): each
        chunk's are computed by the first pass and read by the others.
    """

    def __init__(self, family: Family, selected: np.ndarray, coef: np.ndarray,
                 intercept: np.ndarray, holdout: Holdout | None = None,
                 held_out: bool = False, temperature: bool = False,
                 numpy: bool = False, kept: StepTerms | None = None) -> None:
        if held_out and holdout is None:
            raise ValueError("held_out=True needs a holdout")
        if temperature and not held_out:
            raise ValueError("temperature=True needs held_out=True")
        super().__init__(family, selected, coef, intercept, holdout, numpy)
        self.held_out = held_out
        self.temperature = temperature
        self.kept = kept

    def start(self) -> ObjectiveState:
        """Empty sums."""
        k = self.intercept.shape[0]
        return ObjectiveState(0.0, 0.0, 0.0, np.zeros_like(self.coef), np.zeros(k),
                              temperature=TemperatureSums(k) if self.temperature else None)

    def step(self, state: ObjectiveState, chunk: Chunk) -> ObjectiveState:
        """Add the chunk's loss and gradient (in place), or its held-out rows' tallies."""
        if self.held_out:
            assert self.holdout is not None
            held = held_out_rows(chunk, self.holdout)
            if held is not None:
                codes, weight = chunk_arrays(held)
                loss, wsum, errors = restricted_objective(
                    self.family, held.X, self.selected, codes, weight, self.coef,
                    self.intercept, np.zeros_like(self.coef), np.zeros_like(self.intercept),
                    self.numpy)
                state.held_loss += loss
                state.held_weight += wsum
                state.held_errors += errors
                if state.temperature is not None:
                    state.temperature.add(
                        class_scores(self.family, held.X, self.selected, self.coef,
                                     self.intercept, self.numpy), codes, weight)
            return state
        if self.kept is not None:
            terms = self.kept.of(chunk, self.holdout)
            codes, weight = terms.codes, terms.weight
        else:
            terms = None
            codes, weight = chunk_arrays(training_rows(chunk, self.holdout))
        loss, wsum, errors = restricted_objective(
            self.family, chunk.X, self.selected, codes, weight, self.coef, self.intercept,
            state.gradient, state.intercept, self.numpy, terms)
        state.loss += loss
        state.weight += wsum
        state.errors += errors
        return state

    def merge(self, a: ObjectiveState, b: ObjectiveState) -> ObjectiveState:
        """Sum of two states (a new state)."""
        return a.combined(b)

    def finish(self, state: ObjectiveState) -> ObjectiveState:
        """The sums."""
        return state


class TemperaturePass(_ModelPass):
    """Reduction pass: the class scores of the training rows, summed into a
    :class:`~streamlearn.solvers.calibration.TemperatureSums` (the temperature of the
    class probabilities of a fit that holds no rows out).

    Parameters
    ----------
    family, selected, coef, intercept, holdout, numpy
        As in :class:`ColumnScorePass` (rows held out are left out).
    """

    def start(self) -> TemperatureSums:
        """Empty sums."""
        return TemperatureSums(self.intercept.shape[0])

    def step(self, state: TemperatureSums, chunk: Chunk) -> TemperatureSums:
        """Add the chunk's training rows (in place)."""
        chunk = training_rows(chunk, self.holdout)
        codes, weight = chunk_arrays(chunk)
        return state.add(class_scores(self.family, chunk.X, self.selected, self.coef,
                                      self.intercept, self.numpy), codes, weight)

    def merge(self, a: TemperatureSums, b: TemperatureSums) -> TemperatureSums:
        """The sums of both (a new state)."""
        return a.merge(b)

    def finish(self, state: TemperatureSums) -> TemperatureSums:
        """The sums."""
        return state
