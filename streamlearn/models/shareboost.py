"""``ShareBoostClassifier``: multiclass prediction with few shared features (paper 003).

The model is a ``k x d`` matrix ``W`` with at most ``T`` non-zero columns, predicting
``argmax_y (W x + b)_y`` (eq. 1); columns are shared by all classes. ``fit`` is forward greedy
selection (Algorithm 1), one round per selected column:

1. a reduction pass accumulates the gradient matrix of eq. 7 at the current ``W`` for every
   candidate column (``rho`` of eq. 6 per row, then ``sum_i x_ir (rho_i - e_{y_i})``), and
   the column (or group of columns, Sec. 2.1) with the largest L1 norm joins the model;
2. the fully corrective step (Algorithm 1, line 6) minimises the loss over all selected
   columns by L-BFGS, every objective and gradient evaluation one reduction pass, warm
   started from the previous round's ``W``.

The selected columns are recomputed from each chunk's features in every pass (a column
lookup, a comparison with a threshold, or the distances to the selected anchors: one small
matrix product) rather than cached per row, so memory stays at a chunk and the model
whatever the number of rows, and every pass is a pure reduction.

The loss is eq. 3, ``log sum_c exp(1[c != y] - s_y + s_c)``, averaged over the (weighted)
rows, plus ``l2 ||W||_F^2`` (Sec. 2.1). Candidate columns come in three families:

- ``"linear"``: the raw features, scaled to ``[-1, 1]`` by their largest absolute value;
- ``"stumps"``: ``1[x_f <= theta]`` for ``n_bins - 1`` quantile thresholds per feature
  (Sec. 3.1): one histogram pass scores every threshold of every feature;
- ``"anchors"``: piecewise-linear pieces ``1[||x - v|| < r] [x, 1]`` (Sec. 3.2, App. A.2):
  centres from streamed k-means, radii from distance quantiles, one piece (``d + 1``
  columns) selected per round by the sum of its columns' norms.

Every round's training (and optional validation) error is recorded in ``path_``: the whole
sparsity path comes from one run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from streamlearn.data import Chunk, Dataset
from streamlearn.engine import DescribePass, Description, evaluate, resolve_engine
from streamlearn.engine.checkpoint import DEFAULT_EVERY, checkpointed
from streamlearn.errors import LabelError
from streamlearn.features.anchors import AnchorPieces, squared_distances
from streamlearn.models.base import (
    ClassifierScore,
    StreamEstimator,
    check_features,
    classification_dataset,
    storable_classes,
)
from streamlearn.solvers.kmeans import streamed_kmeans
from streamlearn.solvers.lbfgs import MAX_HALVINGS, lbfgs_minimize
from streamlearn.solvers.shareboost import (
    anchor_gradients,
    anchor_histogram_chunk,
    decision_chunk,
    linear_gates_chunk,
    linear_gradient_chunk,
    margin_residuals_chunk,
    restricted_objective_chunk,
    stump_gates_chunk,
    stump_gradients,
    stump_histogram_chunk,
)

FEATURES = ("linear", "stumps", "anchors")
#: Rows of the describe pass's sample (stump thresholds, anchor radii).
SAMPLE_ROWS = 8192
#: Mini-batch k-means passes over the data for the anchors' candidate centres.
KMEANS_EPOCHS = 2
#: Ratio of the largest to the smallest fraction of rows in a centre's candidate balls.
COVERAGE_RANGE = 60.0
#: Correction pairs of the corrective step's L-BFGS.
LBFGS_MEMORY = 10
#: Threads that share one chunk's kernels (which release the GIL), at most.
MAX_THREADS = 4
#: Rows (corrective step) or centres (anchor scores) a thread gets at least.
MIN_ROWS_PER_THREAD = 2048
MIN_CENTRES_PER_THREAD = 32


def _split(n: int, smallest: int) -> np.ndarray:
    """Bounds of contiguous parts of ``range(n)``, one per thread, each ``smallest`` or more."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = max(1, min(MAX_THREADS, cores or 1, n // max(smallest, 1)))
    return np.linspace(0, n, parts + 1).astype(np.int64)


def _in_threads(work: Callable[[int, int], Any], bounds: np.ndarray) -> list[Any]:
    """``work(lo, hi)`` for consecutive bounds, in threads when there are several parts."""
    if len(bounds) == 2:
        return [work(int(bounds[0]), int(bounds[1]))]
    with ThreadPoolExecutor(len(bounds) - 1) as pool:
        return list(pool.map(work, bounds[:-1].tolist(), bounds[1:].tolist()))


# -- candidate column families ------------------------------------------------------------
def _ones(n: int) -> np.ndarray:
    return np.ones((n, 1), dtype=np.float32)


@dataclass
class LinearColumns:
    """Candidates are the features ``x_f * scale_f``; candidate ``f`` is feature ``f``."""

    scale: np.ndarray
    n_base = 1

    @property
    def n_candidates(self) -> int:
        """Number of candidate columns."""
        return int(self.scale.shape[0])

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[1]``."""
        return _ones(X.shape[0])

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator of the gradient matrix."""
        return np.zeros((self.n_candidates, k))

    def accumulate(self, X: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                   acc: np.ndarray) -> None:
        """Add one chunk's gradient columns to ``acc``."""
        linear_gradient_chunk(X, residuals, self.scale, acc)

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """L1 norm of every candidate's gradient column (eq. 7, before ``1 / m``)."""
        return np.abs(acc).sum(axis=1)

    def gates(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Values of the given candidates, (n, T) float32."""
        return linear_gates_chunk(X, np.asarray(candidates, dtype=np.int64), self.scale)

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the given candidates read."""
        return np.unique(np.asarray(candidates, dtype=np.int64))

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        return {"scale": self.scale}


@dataclass
class StumpColumns:
    """Candidates ``1[x_f <= theta_{f,b}]``; candidate ``f * n_thresholds + b``.

    Attributes
    ----------
    thresholds : ndarray of shape (d, n_thresholds), float32, ascending per feature
    """

    thresholds: np.ndarray
    n_base = 1

    @property
    def n_thresholds(self) -> int:
        """Thresholds per feature."""
        return int(self.thresholds.shape[1])

    @property
    def n_candidates(self) -> int:
        """Number of candidate columns."""
        return int(self.thresholds.size)

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[1]``."""
        return _ones(X.shape[0])

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator: per feature, bins between thresholds."""
        return np.zeros((self.thresholds.shape[0], self.n_thresholds + 1, k))

    def accumulate(self, X: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                   acc: np.ndarray) -> None:
        """Add one chunk's residuals to the bins."""
        stump_histogram_chunk(X, residuals, self.thresholds, acc)

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """L1 norm of every stump's gradient column; repeated thresholds score ``-inf``."""
        scores = np.abs(stump_gradients(acc)).sum(axis=2)
        repeated = np.zeros_like(scores, dtype=bool)
        repeated[:, 1:] = self.thresholds[:, 1:] <= self.thresholds[:, :-1]
        scores[repeated] = -np.inf
        return scores.ravel()

    def split(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Feature and threshold of each candidate."""
        features, bins = np.divmod(np.asarray(candidates, dtype=np.int64), self.n_thresholds)
        return features, np.ascontiguousarray(self.thresholds[features, bins])

    def gates(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Stump values of the given candidates, (n, T) float32."""
        features, thresholds = self.split(candidates)
        return stump_gates_chunk(X, features, thresholds)

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the given stumps read."""
        return np.unique(self.split(candidates)[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        return {"thresholds": self.thresholds}


@dataclass
class AnchorColumns:
    """Candidate groups ``1[||x - v_c|| < r_{c,j}] [x, 1]``; candidate ``c * n_radii + j``."""

    pieces: AnchorPieces

    @property
    def n_base(self) -> int:
        """Columns per group, ``d + 1``."""
        return self.pieces.n_base

    @property
    def n_candidates(self) -> int:
        """Number of candidate groups."""
        return self.pieces.n_centres * self.pieces.n_radii

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[x * scale, 1]``."""
        return self.pieces.base(X)

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator: per centre, bins between radii (float32, see the kernel)."""
        p = self.pieces
        return np.zeros((p.n_centres, p.n_radii, p.n_base, k), dtype=np.float32)

    def accumulate(self, X: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                   acc: np.ndarray) -> None:
        """Add one chunk's ``a_i R_i^T`` to the bin of each centre's smallest ball.

        The centres are split between threads, each with its own block of distances (one
        matrix product) and its own rows of ``acc``.
        """
        centres, radii2 = self.pieces.centres, self.radii2

        def work(lo: int, hi: int) -> None:
            anchor_histogram_chunk(squared_distances(X, centres[lo:hi]), base, residuals,
                                   radii2[lo:hi], acc[lo:hi])

        _in_threads(work, _split(centres.shape[0], MIN_CENTRES_PER_THREAD))

    @property
    def radii2(self) -> np.ndarray:
        """Squared radii, (n_centres, n_radii) float64."""
        return self.pieces.radii ** 2

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """Sum of the L1 norms of each group's columns (Sec. 2.1); repeated radii ``-inf``."""
        scores = np.abs(anchor_gradients(acc)).sum(axis=(2, 3), dtype=np.float64)
        radii = self.pieces.radii
        repeated = np.zeros_like(scores, dtype=bool)
        repeated[:, 1:] = radii[:, 1:] <= radii[:, :-1]
        scores[repeated] = -np.inf
        return scores.ravel()

    def selected_pieces(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centres (T, d) and radii (T,) of the given candidates."""
        c, j = np.divmod(np.asarray(candidates, dtype=np.int64), self.pieces.n_radii)
        return (np.ascontiguousarray(self.pieces.centres[c]),
                np.ascontiguousarray(self.pieces.radii[c, j]))

    def gates(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Ball indicators of the given candidates, (n, T) float32."""
        return self.pieces.gates(X, *self.selected_pieces(candidates))

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the pieces read: all of them, once a piece is selected."""
        if len(candidates) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.arange(self.pieces.centres.shape[1], dtype=np.int64)

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        return {"scale": self.pieces.scale, "centres": self.pieces.centres,
                "radii": self.pieces.radii}


Family = LinearColumns | StumpColumns | AnchorColumns


def _family_from_arrays(kind: str, arrays: dict[str, np.ndarray]) -> Family:
    if kind == "linear":
        return LinearColumns(np.asarray(arrays["scale"], dtype=np.float64))
    if kind == "stumps":
        return StumpColumns(np.ascontiguousarray(arrays["thresholds"], dtype=np.float32))
    return AnchorColumns(AnchorPieces(np.ascontiguousarray(arrays["centres"], dtype=np.float32),
                                      np.asarray(arrays["radii"], dtype=np.float64),
                                      np.asarray(arrays["scale"], dtype=np.float64)))


def _chunk_arrays(chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
    codes = np.ascontiguousarray(chunk.y, dtype=np.int32)
    weight = (np.ones(chunk.n_rows, dtype=np.float32) if chunk.weight is None
              else np.ascontiguousarray(chunk.weight, dtype=np.float32))
    return codes, weight


def _gates(family: Family, chunk: Chunk, selected: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(family.gates(chunk.X, selected), dtype=np.float32)


# -- passes -------------------------------------------------------------------------------
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
    """

    loss: float
    weight: float
    errors: float
    gradient: np.ndarray
    intercept: np.ndarray

    def combined(self, other: ObjectiveState) -> ObjectiveState:
        """Sum of two states (a new state)."""
        return ObjectiveState(self.loss + other.loss, self.weight + other.weight,
                              self.errors + other.errors, self.gradient + other.gradient,
                              self.intercept + other.intercept)


class ColumnScorePass:
    """Reduction pass: gradient matrix of eq. 7 for every candidate column at the current W.

    Parameters
    ----------
    family : LinearColumns, StumpColumns or AnchorColumns
    selected : ndarray of shape (T,), int64
        Selected candidates, in the order of ``coef``.
    coef : ndarray of shape (T, k, q)
    intercept : ndarray of shape (k,)
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, family: Family, selected: np.ndarray, coef: np.ndarray,
                 intercept: np.ndarray) -> None:
        self.family = family
        self.selected = np.asarray(selected, dtype=np.int64)
        self.coef = coef
        self.intercept = intercept

    def start(self) -> ObjectiveState:
        """Empty sums."""
        k = self.intercept.shape[0]
        return ObjectiveState(0.0, 0.0, 0.0, self.family.gradient_state(k), np.zeros(k))

    def step(self, state: ObjectiveState, chunk: Chunk) -> ObjectiveState:
        """Residuals of the chunk's rows, folded into every candidate's column (in place)."""
        codes, weight = _chunk_arrays(chunk)
        base = self.family.base(chunk.X)
        gates = _gates(self.family, chunk, self.selected)
        residuals, loss, wsum, errors = margin_residuals_chunk(
            gates, base, codes, weight, self.coef, self.intercept)
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


class RestrictedObjectivePass:
    """Reduction pass: loss and gradient of the problem restricted to the selected columns.

    Parameters
    ----------
    family, selected, coef, intercept
        As in :class:`ColumnScorePass`.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, family: Family, selected: np.ndarray, coef: np.ndarray,
                 intercept: np.ndarray) -> None:
        self.family = family
        self.selected = np.asarray(selected, dtype=np.int64)
        self.coef = coef
        self.intercept = intercept

    def start(self) -> ObjectiveState:
        """Empty sums."""
        k = self.intercept.shape[0]
        return ObjectiveState(0.0, 0.0, 0.0, np.zeros_like(self.coef), np.zeros(k))

    def step(self, state: ObjectiveState, chunk: Chunk) -> ObjectiveState:
        """Add the chunk's loss and gradient (in place)."""
        codes, weight = _chunk_arrays(chunk)
        gates = _gates(self.family, chunk, self.selected)
        base = self.family.base(chunk.X)

        def work(lo: int, hi: int) -> tuple[float, float, float, np.ndarray, np.ndarray]:
            first = lo == 0  # the first part adds straight into the state
            grad = state.gradient if first else np.zeros_like(state.gradient)
            grad_b = state.intercept if first else np.zeros_like(state.intercept)
            sums = restricted_objective_chunk(gates[lo:hi], base[lo:hi], codes[lo:hi],
                                              weight[lo:hi], self.coef, self.intercept,
                                              grad, grad_b)
            return (*sums, grad, grad_b)

        for i, (loss, wsum, errors, grad, grad_b) in enumerate(
                _in_threads(work, _split(chunk.n_rows, MIN_ROWS_PER_THREAD))):
            if i > 0:
                state.gradient += grad
                state.intercept += grad_b
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


# -- the estimator ------------------------------------------------------------------------
class ShareBoostClassifier(ClassifierScore, StreamEstimator):
    """Multiclass classifier whose classes share a few greedily selected features.

    Parameters
    ----------
    n_rounds : int
        Rounds ``T``: selected columns (or anchor pieces) at most.
    features : {"linear", "stumps", "anchors"}
        Candidate columns: the raw features, decision stumps, or piecewise-linear pieces.
    l2 : float
        Frobenius regularisation ``l2 ||W||_F^2`` added to the mean loss (Sec. 2.1).
    refit_iter : int
        L-BFGS iterations of each fully corrective step (each costs about one pass).
    n_bins : int
        ``"stumps"``: thresholds per feature are the ``n_bins - 1`` inner quantiles.
    n_centres : int
        ``"anchors"``: candidate centres (streamed k-means).
    n_radii : int
        ``"anchors"``: candidate radii per centre (distance quantiles).
    max_coverage : float
        ``"anchors"``: fraction of the rows inside a centre's largest ball; the radii hold
        geometrically spaced fractions from ``max_coverage / 60`` up to it. A round's cost
        grows with it (every row inside a centre's largest ball is one scatter-add).
    tol : float
        A corrective step stops when its largest gradient entry is below ``tol``.
    chunk_rows : int, optional
        Rows per chunk for data opened by ``fit``.
    engine : engine, optional
        Default engine of ``fit`` (``None``, ``"local"``, ``"dask"`` or an engine object).
    random_state : int
        Seeds the row sample and k-means.

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
    coef_ : ndarray of shape (k, T * q)
        ``W`` restricted to the selected columns, in selection order (``q = 1``, or
        ``d + 1`` columns per anchor piece).
    intercept_ : ndarray of shape (k,)
    selected_features_ : ndarray of shape (T,), int64
        Selected candidates in selection order: the feature index (``"linear"``),
        ``feature * n_thresholds + bin`` (``"stumps"``), ``centre * n_radii + radius``
        (``"anchors"``).
    path_ : dict of lists
        After round ``t = 0, 1, ..., T`` (round 0: intercept only): ``n_selected``,
        ``loss`` (training objective), ``train_error``, ``validation_error`` (None
        without validation data), ``passes`` (data passes so far).
    family_ : LinearColumns, StumpColumns or AnchorColumns
        The candidate columns.
    """

    def __init__(self, n_rounds: int = 50, features: str = "linear", l2: float = 0.0,
                 refit_iter: int = 30, n_bins: int = 32, n_centres: int = 256,
                 n_radii: int = 8, max_coverage: float = 0.6, tol: float = 1e-6,
                 chunk_rows: int | None = None,
                 engine: Any = None, random_state: int = 0) -> None:
        self.n_rounds = n_rounds
        self.features = features
        self.l2 = l2
        self.refit_iter = refit_iter
        self.n_bins = n_bins
        self.n_centres = n_centres
        self.n_radii = n_radii
        self.max_coverage = max_coverage
        self.tol = tol
        self.chunk_rows = chunk_rows
        self.engine = engine
        self.random_state = random_state

    def _validate(self) -> None:
        if self.features not in FEATURES:
            raise ValueError(f"features must be one of {FEATURES}, got {self.features!r}")
        for name, low in (("n_rounds", 0), ("refit_iter", 1), ("n_bins", 2), ("n_centres", 1),
                          ("n_radii", 1)):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not np.isfinite(self.l2) or self.l2 < 0:
            raise ValueError(f"l2 must be a finite number >= 0, got {self.l2!r}")
        if not 0.0 < self.max_coverage <= 1.0:
            raise ValueError(f"max_coverage must be in (0, 1], got {self.max_coverage!r}")
        if not np.isfinite(self.tol) or self.tol < 0:
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol!r}")

    def _engine(self, engine: Any) -> Any:
        return resolve_engine(engine if engine is not None else self.engine)

    # -- training -------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None, engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY, validation: Any = None,
            callback: Callable[[int, ShareBoostClassifier], None] | None = None
            ) -> ShareBoostClassifier:
        """Select ``n_rounds`` shared columns greedily, re-fitting all of them each round.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Labels of in-memory ``data``, or the target column name.
        sample_weight : array-like or str, optional
        engine : engine, optional
            Runs the passes; defaults to the ``engine`` parameter, else a ``LocalEngine``.
        checkpoint : str or path-like, optional
            Directory where the fit records its progress; a fit started again with the same
            checkpoint resumes where it stopped and ends with the same model (see
            :mod:`streamlearn.engine.checkpoint`).
        checkpoint_every : int
            Chunks between two checkpoint writes (and at the end of every pass).
        validation : Dataset, path, or (X, y), optional
            Data whose error is recorded in ``path_`` after every round.
        callback : callable, optional
            ``callback(t, model)`` after round ``t`` (0: intercept only); the model then
            predicts with its first ``t`` columns.

        Returns
        -------
        self
        """
        self._validate()
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows)
        base_engine = self._engine(engine)
        runner = checkpointed(base_engine, checkpoint, checkpoint_every, self, dataset)
        classes = dataset.classes
        if classes is None or len(classes) < 2:
            raise LabelError(f"ShareBoostClassifier needs at least two classes, got "
                             f"{[] if classes is None else list(classes)}")
        held_out = None
        if validation is not None:
            if isinstance(validation, tuple):
                held_out = classification_dataset(*validation)
            else:
                held_out = classification_dataset(validation)
        k = len(classes)
        seed = int(self.random_state)
        probabilities = np.arange(1, self.n_bins) / self.n_bins
        summary: Description = runner.run(
            DescribePass(list(dataset.feature_names), probabilities=probabilities,
                         sample_size=SAMPLE_ROWS, seed=seed, n_classes=k),
            dataset, description="describe")
        if summary.n_rows == 0:
            raise LabelError("the training data has no rows")
        passes = 1
        family, extra = self._make_family(summary, dataset, runner, seed)
        passes += extra

        self.classes_ = storable_classes(classes)
        self.feature_names_in_ = tuple(dataset.feature_names)
        self.n_features_in_ = len(self.feature_names_in_)
        self.family_ = family
        q = family.n_base
        self.path_: dict[str, list[Any]] = {"n_selected": [], "loss": [], "train_error": [],
                                            "validation_error": [], "passes": []}
        selected: list[int] = []
        coef = np.zeros((0, k, q))
        intercept = np.zeros(k)
        coef, intercept, value, error, used = self._refit(runner, dataset, family, selected,
                                                          coef, intercept)
        passes += used
        self._record(selected, coef, intercept, value, error, passes, held_out, base_engine,
                     callback)
        for t in range(int(self.n_rounds)):
            scores_state: ObjectiveState = runner.run(
                ColumnScorePass(family, np.array(selected, dtype=np.int64), coef, intercept),
                dataset, description=f"score columns {t + 1}/{self.n_rounds}")
            passes += 1
            scores = family.column_scores(scores_state.gradient) / scores_state.weight
            scores[selected] = -np.inf
            best = int(np.argmax(scores))
            if not np.isfinite(scores[best]) or scores[best] <= 0.0:
                break  # every useful column is in the model
            selected.append(best)
            coef = np.concatenate([coef, np.zeros((1, k, q))])
            coef, intercept, value, error, used = self._refit(runner, dataset, family,
                                                              selected, coef, intercept)
            passes += used
            self._record(selected, coef, intercept, value, error, passes, held_out,
                         base_engine, callback)
        return self

    def _make_family(self, summary: Description, dataset: Dataset, runner: Any,
                     seed: int) -> tuple[Family, int]:
        """Candidate columns from the describe pass (and k-means for anchors); extra passes."""
        largest = np.maximum(np.abs(summary.min), np.abs(summary.max))
        scale = np.where(largest > 0, 1.0 / np.where(largest > 0, largest, 1.0), 1.0)
        if self.features == "linear":
            return LinearColumns(scale), 0
        if self.features == "stumps":
            thresholds = np.sort(summary.quantiles.T, axis=1)
            return StumpColumns(np.ascontiguousarray(thresholds, dtype=np.float32)), 0
        n_centres = min(int(self.n_centres), summary.n_rows)
        centres = streamed_kmeans(dataset, n_centres, engine=runner, epochs=KMEANS_EPOCHS,
                                  seed=seed)
        top = float(self.max_coverage)
        pieces = AnchorPieces.from_sample(centres, summary.sample, int(self.n_radii), scale,
                                          coverage=(top / COVERAGE_RANGE, top))
        return AnchorColumns(pieces), KMEANS_EPOCHS + 1

    def _refit(self, runner: Any, dataset: Dataset, family: Family, selected: list[int],
               coef: np.ndarray, intercept: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, float, float, int]:
        """Fully corrective step: L-BFGS over the selected columns, from ``(coef, intercept)``.

        Returns the new ``coef`` and ``intercept``, the objective, the training error at
        them and the passes used.
        """
        shape = coef.shape
        k = intercept.shape[0]
        l2 = float(self.l2)
        errors_at: list[tuple[np.ndarray, float]] = []
        chosen = np.array(selected, dtype=np.int64)

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            W = theta[:-k].reshape(shape)
            state: ObjectiveState = runner.run(
                RestrictedObjectivePass(family, chosen, W, theta[-k:]), dataset,
                description=f"refit {shape[0]} columns")
            total = max(state.weight, np.finfo(np.float64).tiny)
            value = state.loss / total + l2 * float(np.sum(W * W))
            grad = np.concatenate([(state.gradient / total + 2.0 * l2 * W).ravel(),
                                   state.intercept / total])
            errors_at.append((theta, state.errors / total))
            del errors_at[1:-(MAX_HALVINGS + 2)]  # the start, and the last iteration's trials
            return value, grad

        theta0 = np.concatenate([coef.ravel(), intercept])
        result = lbfgs_minimize(objective, theta0, max_iter=int(self.refit_iter),
                                memory=LBFGS_MEMORY, gtol=float(self.tol))
        theta = result.x
        error = next(e for t, e in reversed(errors_at) if np.array_equal(t, theta))
        return (theta[:-k].reshape(shape).copy(), theta[-k:].copy(), result.value, error,
                result.n_eval)

    def _record(self, selected: list[int], coef: np.ndarray, intercept: np.ndarray,
                value: float, error: float, passes: int, held_out: Dataset | None,
                runner: Any, callback: Callable[[int, ShareBoostClassifier], None] | None
                ) -> None:
        """Set the fitted attributes to the current round's model and extend ``path_``."""
        self._set_model(np.array(selected, dtype=np.int64), coef, intercept)
        validation_error = None
        if held_out is not None:
            validation_error = 1.0 - float(evaluate(self, held_out, engine=runner)["accuracy"])
        path = self.path_
        path["n_selected"].append(len(selected))
        path["loss"].append(float(value))
        path["train_error"].append(float(error))
        path["validation_error"].append(validation_error)
        path["passes"].append(int(passes))
        if callback is not None:
            callback(len(selected), self)

    def _set_model(self, selected: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> None:
        self.selected_features_ = selected
        self.coef_groups_ = np.ascontiguousarray(coef, dtype=np.float64)
        self.intercept_ = np.asarray(intercept, dtype=np.float64).copy()

    # -- prediction -----------------------------------------------------------------------
    @property
    def coef_(self) -> np.ndarray:
        """``W`` on the selected columns, (k, T * q), columns in selection order."""
        self._check_fitted()
        T, k, q = self.coef_groups_.shape
        return self.coef_groups_.transpose(1, 0, 2).reshape(k, T * q)

    @property
    def used_features_(self) -> np.ndarray:
        """Distinct raw features the model reads (sorted)."""
        self._check_fitted()
        return self.family_.used_features(self.selected_features_)

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``W x + b`` on the selected columns.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n, k), float64, columns in the order of ``classes_``
        """
        self._check_fitted()
        values = check_features(X, self.feature_names_in_, type(self).__name__)
        gates = self.family_.gates(values, self.selected_features_)
        return decision_chunk(gates, self.family_.base(values), self.coef_groups_,
                              self.intercept_)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Soft-max of the class scores.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, k), rows sum to 1
        """
        scores = self.decision_function(X)
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The class of the largest score (eq. 1).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    # -- model files ----------------------------------------------------------------------
    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metadata = {
            "params": self._json_params(),
            "family": self.features,
            "feature_names_in": list(self.feature_names_in_),
            "path": self.path_,
        }
        arrays = {
            "classes": storable_classes(self.classes_),
            "coef_groups": self.coef_groups_,
            "intercept": self.intercept_,
            "selected": self.selected_features_,
            **{f"family_{name}": value for name, value in self.family_.arrays().items()},
        }
        return metadata, arrays

    @classmethod
    def _from_state(cls, metadata: dict[str, Any],
                    arrays: dict[str, np.ndarray]) -> ShareBoostClassifier:
        valid = cls._param_names()
        model = cls(**{k: v for k, v in metadata.get("params", {}).items() if k in valid})
        family = {name[len("family_"):]: value for name, value in arrays.items()
                  if name.startswith("family_")}
        model.family_ = _family_from_arrays(str(metadata["family"]), family)
        model.feature_names_in_ = tuple(metadata["feature_names_in"])
        model.n_features_in_ = len(model.feature_names_in_)
        model.path_ = metadata["path"]
        model.classes_ = arrays["classes"]
        model._set_model(np.asarray(arrays["selected"], dtype=np.int64),
                         np.asarray(arrays["coef_groups"], dtype=np.float64),
                         np.asarray(arrays["intercept"], dtype=np.float64))
        return model
