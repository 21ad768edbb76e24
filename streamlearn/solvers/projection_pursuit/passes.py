"""Passes of sparse projection pursuit (paper 001) and their states.

* :class:`MomentsPass`: weighted feature moments, extremes and target/class sums (what
  bounds the projected values);
* :class:`SplineScanPass`: B-spline Gram statistics of every candidate direction of a scan
  (regression, residuals recomputed from :class:`RidgeTerms` row by row);
* :class:`HistogramScanPass`: weighted class histograms of every candidate direction
  (classification, boosting weights recomputed from :class:`BoostedTerms` row by row).

The kernels they call are in :mod:`streamlearn.solvers.projection_search`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from streamlearn.data import Chunk
from streamlearn.solvers.calibration import TemperatureSums
from streamlearn.solvers.holdout import RowSplit, held_out_rows
from streamlearn.solvers.kmeans import Standardiser, chunk_features
from streamlearn.solvers.projection_search import (
    Candidates,
    FeatureSpread,
    class_histogram_scan_chunk,
    spline_gram_scan_chunk,
    table_predict_chunk,
)

__all__ = ["BoostedTerms", "ClassHistograms", "DataMoments", "GramStatistics",
           "HistogramScanPass", "MomentsPass", "RidgeTerms", "SplineScanPass", "chunk_weight"]


# -- the first pass: what bounds the projections ------------------------------------------------
@dataclass
class DataMoments:
    """Result of :class:`MomentsPass`.

    Every statistic is weighted by the sample weights ``s_i``, so that a row of weight ``k``
    counts exactly as ``k`` copies of it and a row of weight 0 as no row at all.

    Attributes
    ----------
    n_rows : int
        Rows read (whatever their weight).
    mean : ndarray of shape (n_features,), float64
        Weighted mean ``sum_i s_i x_i / sum_i s_i``.
    scatter : ndarray of shape (n_features, n_features), float64
        Weighted sum of outer products of the deviations from ``mean``
        (covariance times ``weight``).
    minimum, maximum : ndarray of shape (n_features,), float64
        Extremes over the rows of positive weight.
    weight, weighted_y, weighted_yy : float
        Sums of the sample weights ``s_i``, of ``s_i y_i`` and ``s_i y_i^2`` (regression).
    class_mass : ndarray of shape (n_classes,), float64
        Sum of the sample weights of each class (classification; empty otherwise).
    n_positive : int
        Rows of positive weight.
    """

    n_rows: int
    mean: np.ndarray
    scatter: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    weight: float
    weighted_y: float
    weighted_yy: float
    class_mass: np.ndarray
    n_positive: int = 0

    @property
    def row_count(self) -> float:
        """The rows the fit counts, ``max(weight, n_positive)``: a row of weight ``k``
        counts as ``k`` rows (integer weights act as repeated rows), and weights that sum
        to less than the rows of positive weight are read as the rows' shares, scaled to
        sum to that count (so that scaling them all by a constant changes nothing)."""
        return max(float(self.weight), float(self.n_positive))

    def spread(self, standardiser: Standardiser | None = None) -> FeatureSpread:
        """Bounds of the projected values (:class:`FeatureSpread`), of the standardised
        features when a standardiser is given."""
        cov = self.scatter / self.weight if self.weight > 0 else np.zeros_like(self.scatter)
        if standardiser is None:
            return FeatureSpread(self.minimum, self.maximum, self.mean, cov)
        shift, scale = standardiser.shift, standardiser.scale
        return FeatureSpread((self.minimum - shift) / scale, (self.maximum - shift) / scale,
                             (self.mean - shift) / scale, cov / np.outer(scale, scale))

    def standardiser(self) -> Standardiser:
        """``z = (x - mean) / std`` with the weighted moments (a constant feature keeps the
        scale 1)."""
        var = np.diag(self.scatter) / self.weight if self.weight > 0 else np.zeros(len(self.mean))
        return Standardiser.from_mean_std(self.mean, np.sqrt(np.maximum(var, 0.0)),
                                          self.maximum > self.minimum)



def chunk_weight(chunk: Chunk) -> np.ndarray:
    """Sample weights of a chunk's rows, float32 (ones when it has none)."""
    if chunk.weight is None:
        return np.ones(chunk.n_rows, dtype=np.float32)
    return np.ascontiguousarray(chunk.weight, dtype=np.float32)


class MomentsPass:
    """Reduction pass: weighted feature moments and covariance, target and class sums.

    Parameters
    ----------
    n_features : int
    n_classes : int
        0 for regression.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, n_features: int, n_classes: int) -> None:
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)

    def start(self) -> DataMoments:
        """Moments of no rows."""
        d = self.n_features
        return DataMoments(0, np.zeros(d), np.zeros((d, d)), np.full(d, np.inf),
                           np.full(d, -np.inf), 0.0, 0.0, 0.0, np.zeros(self.n_classes))

    def step(self, state: DataMoments, chunk: Chunk) -> DataMoments:
        """Merge the chunk's moments into ``state``."""
        if chunk.n_rows == 0:
            return state
        X = chunk.X.astype(np.float64)
        w = chunk_weight(chunk).astype(np.float64)
        total = float(w.sum())
        part = self.start()
        part.n_rows = chunk.n_rows
        if total > 0:
            kept = X[w > 0]
            part.mean = (w @ X) / total
            dev = X - part.mean
            part.scatter = (dev * w[:, None]).T @ dev
            part.minimum, part.maximum = kept.min(axis=0), kept.max(axis=0)
            part.weight = total
            part.n_positive = int(np.count_nonzero(w > 0))
        y = np.asarray(chunk.y)
        if self.n_classes:
            part.class_mass = np.bincount(y, weights=w, minlength=self.n_classes).astype(
                np.float64)
        else:
            y64 = y.astype(np.float64)
            part.weighted_y, part.weighted_yy = float(w @ y64), float(w @ (y64 * y64))
        return self.merge(state, part)

    def merge(self, a: DataMoments, b: DataMoments) -> DataMoments:
        """Combine two states (pairwise update of the weighted mean and scatter; a new state)."""
        total = a.weight + b.weight
        if not (a.weight > 0 and b.weight > 0):
            src = b if b.weight > 0 else a
            mean, scatter = src.mean.copy(), src.scatter.copy()
        else:
            delta = b.mean - a.mean
            mean = a.mean + delta * (b.weight / total)
            scatter = a.scatter + b.scatter + np.outer(delta, delta) * (a.weight * b.weight
                                                                        / total)
        return DataMoments(a.n_rows + b.n_rows, mean, scatter, np.minimum(a.minimum, b.minimum),
                           np.maximum(a.maximum, b.maximum), total,
                           a.weighted_y + b.weighted_y, a.weighted_yy + b.weighted_yy,
                           a.class_mass + b.class_mass, a.n_positive + b.n_positive)

    def finish(self, state: DataMoments) -> DataMoments:
        """The moments."""
        return state


# -- the scans ----------------------------------------------------------------------------------
@dataclass
class RidgeTerms:
    """Terms ``f_k(u_k . x)`` of a projection pursuit regression, as the kernels take them.

    Attributes
    ----------
    intercept : float
    proj : ndarray of shape (n_terms, n_features), float64
    lo, hi : ndarray of shape (n_terms,), float64
    coef : ndarray of shape (n_terms, n_bases), float64
    degree : int
    """

    intercept: float
    proj: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    coef: np.ndarray
    degree: int


@dataclass
class GramStatistics:
    """State of :class:`SplineScanPass`: per-candidate banded Gram matrices
    (``(n, n_bases, degree + 1)``, see :func:`gram_from_band`), right-hand sides and
    ``[sum w r^2, sum w]``."""

    band: np.ndarray
    rhs: np.ndarray
    totals: np.ndarray


class SplineScanPass:
    """Reduction pass: B-spline Gram statistics of every candidate direction.

    Parameters
    ----------
    terms : RidgeTerms
        The model so far (residuals are recomputed from it row by row).
    n_bases : int
    alpha : ndarray of shape (n_features,)
    candidates : Candidates
    standardiser : Standardiser, optional
        Applied to every chunk's features first (the terms and candidates are directions
        over the standardised features).
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, terms: RidgeTerms, n_bases: int, alpha: np.ndarray,
                 candidates: Candidates, standardiser: Standardiser | None = None) -> None:
        self.terms = terms
        self.n_bases = int(n_bases)
        self.alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        self.candidates = candidates
        self.standardiser = standardiser

    def start(self) -> GramStatistics:
        """Zero statistics."""
        n, b = len(self.candidates), self.n_bases
        width = self.terms.degree + 1
        return GramStatistics(np.zeros((n, b, width)), np.zeros((n, b)), np.zeros(2))

    def step(self, state: GramStatistics, chunk: Chunk) -> GramStatistics:
        """Add the chunk's rows (in place)."""
        t = self.terms
        y = np.ascontiguousarray(chunk.y, dtype=np.float32)
        spline_gram_scan_chunk(chunk_features(chunk, self.standardiser), y, chunk_weight(chunk),
                               t.intercept, t.proj, t.lo,
                               t.hi, t.coef, t.degree, self.alpha,
                               *self.candidates.kernel_args(), state.band, state.rhs,
                               state.totals)
        return state

    def merge(self, a: GramStatistics, b: GramStatistics) -> GramStatistics:
        """Sum of two states (a new state)."""
        return GramStatistics(a.band + b.band, a.rhs + b.rhs, a.totals + b.totals)

    def finish(self, state: GramStatistics) -> GramStatistics:
        """The statistics."""
        return state


@dataclass
class BoostedTerms:
    """Weak learners ``table_k[bin(u_k . x)]`` of a boosted projection model.

    Attributes
    ----------
    proj : ndarray of shape (n_terms, n_features), float64
    lo, hi : ndarray of shape (n_terms,), float64
    table : ndarray of shape (n_terms, n_bins), float64
    class_weight : ndarray of shape (2,), float64
        Initial weight of a row of each class, ``1 / (class mass)``.
    """

    proj: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    table: np.ndarray
    class_weight: np.ndarray

    @property
    def prior(self) -> float:
        """The model's intercept, ``1/2 log(W+ / W-)`` of the class masses ``W =
        1 / class_weight``."""
        return 0.5 * math.log(float(self.class_weight[0]) / float(self.class_weight[1]))


@dataclass
class ClassHistograms:
    """State of :class:`HistogramScanPass`: ``(n_candidates, n_bins, 2)`` weighted counts
    of the training rows, and with held-out rows the log-loss of the model so far,
    ``held_loss = sum_i s_i log(1 + exp(-2 y_i (b + F(x_i))))`` with ``b`` its intercept
    (:attr:`BoostedTerms.prior`), and ``held_weight = sum_i s_i``."""

    hist: np.ndarray
    held_loss: float = 0.0
    held_weight: float = 0.0


class HistogramScanPass:
    """Reduction pass: weighted class histograms of every candidate direction.

    Parameters
    ----------
    terms : BoostedTerms
        The model so far (boosting weights are recomputed from it row by row).
    n_bins : int
    alpha : ndarray of shape (n_features,)
    candidates : Candidates
    standardiser : Standardiser, optional
        Applied to every chunk's features first (the terms and candidates are directions
        over the standardised features).
    holdout : Holdout or ValueFold, optional
        Rows left out of the histograms; their log-loss under ``terms`` is summed instead
        (``ClassHistograms.held_loss``), so that the pass that scores the next
        round's candidates also scores the model so far on rows it does not train on.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, terms: BoostedTerms, n_bins: int, alpha: np.ndarray,
                 candidates: Candidates, standardiser: Standardiser | None = None,
                 holdout: RowSplit | None = None) -> None:
        self.terms = terms
        self.n_bins = int(n_bins)
        self.alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        self.candidates = candidates
        self.standardiser = standardiser
        self.holdout = holdout

    def start(self) -> ClassHistograms:
        """Empty histograms."""
        return ClassHistograms(np.zeros((len(self.candidates), self.n_bins, 2)))

    def step(self, state: ClassHistograms, chunk: Chunk) -> ClassHistograms:
        """Add the chunk's rows (in place)."""
        t = self.terms
        codes = np.ascontiguousarray(chunk.y, dtype=np.int32)
        X = chunk_features(chunk, self.standardiser)
        weight = chunk_weight(chunk)
        if self.holdout is not None:
            held = self.holdout.chunk_mask(chunk)
            if held.any():
                rows = np.flatnonzero(held)
                # the probabilities' log-loss, not the class-weighted exponential loss
                # the rounds minimise: that one gives half its weight to the few held-out
                # rows of a rare class, each growing exponentially with its margin
                c = weight[rows].astype(np.float64)
                score = t.prior + table_predict_chunk(np.ascontiguousarray(X[rows]), t.proj,
                                                      t.lo, t.hi, t.table)
                sign = np.where(codes[rows] == 1, 1.0, -1.0)
                state.held_loss += float(np.sum(c * np.logaddexp(0.0, -2.0 * sign * score)))
                state.held_weight += float(np.sum(c))
                weight = np.where(held, np.float32(0.0), weight)
        class_histogram_scan_chunk(X, codes, weight, t.class_weight, t.proj,
                                   t.lo, t.hi, t.table, self.alpha,
                                   *self.candidates.kernel_args(), state.hist)
        return state

    def merge(self, a: ClassHistograms, b: ClassHistograms) -> ClassHistograms:
        """Sum of two states (a new state)."""
        return ClassHistograms(a.hist + b.hist, a.held_loss + b.held_loss,
                               a.held_weight + b.held_weight)

    def finish(self, state: ClassHistograms) -> ClassHistograms:
        """The histograms."""
        return state


class BoostTemperaturePass:
    """Reduction pass: the temperature scaling statistics
    (:class:`~streamlearn.solvers.calibration.TemperatureSums`) of a boosted model's
    logit ``2 (intercept + F(x))`` on some rows.

    Parameters
    ----------
    intercept : float
    terms : BoostedTerms
        The learners, on the raw features.
    holdout : Holdout or ValueFold, optional
        Score the rows it holds out; None scores every row.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, intercept: float, terms: BoostedTerms,
                 holdout: RowSplit | None) -> None:
        self.intercept = float(intercept)
        self.terms = terms
        self.holdout = holdout

    def start(self) -> TemperatureSums:
        """Sums of no rows."""
        return TemperatureSums(2)

    def step(self, state: TemperatureSums, chunk: Chunk) -> TemperatureSums:
        """The sums with the chunk's selected rows added (in place)."""
        rows = held_out_rows(chunk, self.holdout)
        if rows is None:
            return state
        X, codes, weight = rows
        t = self.terms
        score = self.intercept + table_predict_chunk(X, t.proj, t.lo, t.hi, t.table)
        return state.add(2.0 * score, codes, weight)

    def merge(self, a: TemperatureSums, b: TemperatureSums) -> TemperatureSums:
        """The sums of both (a new state)."""
        return a.merge(b)

    def finish(self, state: TemperatureSums) -> TemperatureSums:
        """The sums."""
        return state
