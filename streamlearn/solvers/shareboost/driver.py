"""ShareBoost's forward greedy selection (paper 003, Algorithm 1) as a sequence of passes.

:func:`fit` runs one summary pass (feature ranges, weighted row sample), builds the candidate
columns (k-means passes for anchors), then one round per selected column: a
:class:`~streamlearn.solvers.shareboost.passes.ColumnScorePass` picks the column whose
gradient column has the largest L1 norm, and the fully corrective step minimises the loss
over all selected columns by L-BFGS, each evaluation one
:class:`~streamlearn.solvers.shareboost.passes.RestrictedObjectivePass`, warm started from
the previous round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.data import Dataset
from streamlearn.errors import LabelError
from streamlearn.features.anchors import AnchorPieces
from streamlearn.solvers.kmeans import streamed_kmeans
from streamlearn.solvers.lbfgs import MAX_HALVINGS, lbfgs_minimize
from streamlearn.solvers.shareboost.columns import (
    AnchorColumns,
    Family,
    LinearColumns,
    StumpColumns,
)
from streamlearn.solvers.shareboost.passes import (
    ColumnScorePass,
    ObjectiveState,
    RestrictedObjectivePass,
    WeightedSummary,
    WeightedSummaryPass,
)

#: Rows of the summary pass's sample (stump thresholds, anchor radii).
SAMPLE_ROWS = 8192
#: Mini-batch k-means passes over the data for the anchors' candidate centres.
KMEANS_EPOCHS = 2
#: Ratio of the largest to the smallest fraction of rows in a centre's candidate balls.
COVERAGE_RANGE = 60.0
#: Column scores this close (relative) to the best are ties, broken by the lowest index.
SCORE_TIE_RTOL = 1e-6
#: Correction pairs of the corrective step's L-BFGS.
LBFGS_MEMORY = 10


@dataclass(frozen=True)
class ShareBoostConfig:
    """Hyper-parameters of :func:`fit` (see ``ShareBoostClassifier`` for their meaning)."""

    n_rounds: int
    features: str
    l2: float
    refit_iter: int
    n_bins: int
    n_centres: int
    n_radii: int
    max_coverage: float
    tol: float


@dataclass(frozen=True)
class CorrectiveStep:
    """Outcome of one fully corrective step (Algorithm 1, line 6).

    Attributes
    ----------
    coef : ndarray of shape (T, k, q)
    intercept : ndarray of shape (k,)
    value : float
        Objective at ``(coef, intercept)``.
    train_error : float
        Weighted training error there.
    n_eval : int
        Objective evaluations (data passes).
    gradient_norm : float
        Largest gradient entry there.
    converged : bool
        Whether L-BFGS stopped by its own rule (gradient below ``tol``, or no descent step
        left) rather than at ``refit_iter`` iterations.
    """

    coef: np.ndarray
    intercept: np.ndarray
    value: float
    train_error: float
    n_eval: int
    gradient_norm: float
    converged: bool


@dataclass(frozen=True)
class ShareBoostRound:
    """The model after one round (round 0: intercept only), given to ``on_round``.

    Attributes
    ----------
    family : LinearColumns, StumpColumns or AnchorColumns
    selected : ndarray of shape (T,), int64
        Selected candidates, in selection order.
    step : CorrectiveStep
        The round's corrective step (its ``coef`` and ``intercept`` are the model).
    passes : int
        Data passes so far.
    """

    family: Family
    selected: np.ndarray
    step: CorrectiveStep
    passes: int


@dataclass(frozen=True)
class ShareBoostFit:
    """Result of :func:`fit`.

    Attributes
    ----------
    family : LinearColumns, StumpColumns or AnchorColumns
        The candidate columns.
    selected : ndarray of shape (T,), int64
        Selected candidates, in selection order.
    coef : ndarray of shape (T, k, q), float64
    intercept : ndarray of shape (k,), float64
    loss, train_error : tuple of float
        Objective and weighted training error after rounds ``0 .. T``.
    passes : tuple of int
        Data passes after rounds ``0 .. T``.
    converged : bool
        Whether the last corrective step stopped by its own rule, not at ``refit_iter``.
    gradient_norm : float
        Largest gradient entry at the end of the last corrective step.
    """

    family: Family
    selected: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    loss: tuple[float, ...]
    train_error: tuple[float, ...]
    passes: tuple[int, ...]
    converged: bool
    gradient_norm: float

    @property
    def n_iter(self) -> int:
        """Rounds run, each of which added one candidate."""
        return int(self.selected.shape[0])


def make_family(summary: WeightedSummary, dataset: Dataset, runner: Any,
                config: ShareBoostConfig, seed: int) -> tuple[Family, int]:
    """Candidate columns from the summary (and k-means for anchors), and the extra passes.

    Parameters
    ----------
    summary : WeightedSummary
    dataset : Dataset
    runner : engine
    config : ShareBoostConfig
    seed : int

    Returns
    -------
    family : LinearColumns, StumpColumns or AnchorColumns
    passes : int
        Data passes spent here.
    """
    largest = summary.largest
    scale = np.where(largest > 0, 1.0 / np.where(largest > 0, largest, 1.0), 1.0)
    if config.features == "linear":
        return LinearColumns(scale), 0
    if config.features == "stumps":
        thresholds = summary.quantiles(np.arange(1, config.n_bins) / config.n_bins)
        return StumpColumns(np.ascontiguousarray(thresholds, dtype=np.float32)), 0
    n_centres = min(int(config.n_centres), summary.n_rows)
    centres = streamed_kmeans(dataset, n_centres, engine=runner, epochs=KMEANS_EPOCHS,
                              seed=seed)
    top = float(config.max_coverage)
    pieces = AnchorPieces.from_sample(centres, summary.sample, int(config.n_radii), scale,
                                      coverage=(top / COVERAGE_RANGE, top))
    return AnchorColumns(pieces), KMEANS_EPOCHS + 1


def corrective_step(runner: Any, dataset: Dataset, family: Family, selected: list[int],
                    coef: np.ndarray, intercept: np.ndarray,
                    config: ShareBoostConfig) -> CorrectiveStep:
    """Fully corrective step: L-BFGS over the selected columns, from ``(coef, intercept)``.

    Parameters
    ----------
    runner : engine
    dataset : Dataset
    family : LinearColumns, StumpColumns or AnchorColumns
    selected : list of int
    coef : ndarray of shape (T, k, q)
    intercept : ndarray of shape (k,)
    config : ShareBoostConfig

    Returns
    -------
    CorrectiveStep
    """
    shape = coef.shape
    k = intercept.shape[0]
    l2 = float(config.l2)
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
    result = lbfgs_minimize(objective, theta0, max_iter=int(config.refit_iter),
                            memory=LBFGS_MEMORY, gtol=float(config.tol))
    theta = result.x
    error = next(e for t, e in reversed(errors_at) if np.array_equal(t, theta))
    gradient_norm = float(np.max(np.abs(result.grad), initial=0.0))
    return CorrectiveStep(
        coef=theta[:-k].reshape(shape).copy(), intercept=theta[-k:].copy(),
        value=float(result.value), train_error=float(error), n_eval=int(result.n_eval),
        gradient_norm=gradient_norm,
        converged=gradient_norm <= float(config.tol) or result.n_iter < int(config.refit_iter))


def fit(runner: Any, dataset: Dataset, config: ShareBoostConfig, seed: int,
        on_round: Callable[[ShareBoostRound], None] | None = None) -> ShareBoostFit:
    """Select up to ``n_rounds`` shared columns greedily, re-fitting all of them each round.

    Parameters
    ----------
    runner : engine
        Runs the passes (possibly a checkpointing wrapper).
    dataset : Dataset
        Classification data with at least two classes.
    config : ShareBoostConfig
    seed : int
        Seeds the row sample and k-means.
    on_round : callable, optional
        ``on_round(round)`` after every round, round 0 (intercept only) included.

    Returns
    -------
    ShareBoostFit
    """
    classes = dataset.classes
    k = 0 if classes is None else len(classes)
    summary: WeightedSummary = runner.run(
        WeightedSummaryPass(dataset.n_features, SAMPLE_ROWS, seed, k), dataset,
        description="describe")
    if summary.n_rows == 0:
        raise LabelError("the training data has no rows of positive weight")
    passes = 1
    family, extra = make_family(summary, dataset, runner, config, seed)
    passes += extra
    q = family.n_base
    selected: list[int] = []
    losses: list[float] = []
    errors: list[float] = []
    pass_counts: list[int] = []

    def record(step: CorrectiveStep) -> None:
        losses.append(step.value)
        errors.append(step.train_error)
        pass_counts.append(passes)
        if on_round is not None:
            on_round(ShareBoostRound(family, np.array(selected, dtype=np.int64), step, passes))

    step = corrective_step(runner, dataset, family, selected, np.zeros((0, k, q)), np.zeros(k),
                           config)
    passes += step.n_eval
    record(step)
    for t in range(int(config.n_rounds)):
        scores_state: ObjectiveState = runner.run(
            ColumnScorePass(family, np.array(selected, dtype=np.int64), step.coef,
                            step.intercept),
            dataset, description=f"score columns {t + 1}/{config.n_rounds}")
        passes += 1
        scores = family.column_scores(scores_state.gradient) / scores_state.weight
        scores[selected] = -np.inf
        top = float(np.max(scores))
        if not np.isfinite(top) or top <= 0.0:
            break  # every useful column is in the model
        # ties (columns equal on the training rows, whose sums differ only by the rounding
        # of the row order) go to the lowest candidate index
        selected.append(int(np.flatnonzero(scores >= top * (1.0 - SCORE_TIE_RTOL))[0]))
        coef = np.concatenate([step.coef, np.zeros((1, k, q))])
        step = corrective_step(runner, dataset, family, selected, coef, step.intercept, config)
        passes += step.n_eval
        record(step)
    return ShareBoostFit(family=family, selected=np.array(selected, dtype=np.int64),
                         coef=step.coef, intercept=step.intercept, loss=tuple(losses),
                         train_error=tuple(errors), passes=tuple(pass_counts),
                         converged=step.converged, gradient_norm=step.gradient_norm)
