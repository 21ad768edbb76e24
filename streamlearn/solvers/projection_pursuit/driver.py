"""Drivers of sparse projection pursuit (paper 001): the whole fit as a sequence of passes.

:func:`fit_sparse_ppr` (Table 3) and :func:`fit_sparse_jsboost` (Table 6) run, on any engine,

1. one :class:`~.passes.MomentsPass` (weighted feature moments: they bound the projected
   values; the weighted target mean or the class masses); every later pass standardises
   the features by its weighted means and standard deviations, so the search (its L1 term,
   its unit directions, its steps) does not depend on the features' units, and the
   returned directions are mapped back to the raw features (:func:`raw_directions`).
   With ``spread_tails`` the pass also samples rows, and a crowded feature whose
   standardisation squeezes its middle rows is mapped first
   (:func:`~streamlearn.features.tail_transform.choose_tail_transform`; one more pass, the
   moments of the mapped rows, which every later pass reads: :func:`describe_rows`);
2. for every term, the direction search
   (:func:`~streamlearn.solvers.projection_search.informative_feature_first` or
   :func:`~streamlearn.solvers.projection_search.sequential_coordinate_search`), each of whose
   scans is ONE reduction pass costing every candidate direction together
   (:class:`~.passes.SplineScanPass` or :class:`~.passes.HistogramScanPass`), then the small
   dense work that turns the chosen direction's statistics into the term.

Each returns a frozen dataclass of arrays and numbers (:class:`RidgeFit`, :class:`BoostFit`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from streamlearn.data import Dataset
from streamlearn.engine.passes import Together
from streamlearn.errors import LabelError
from streamlearn.features.tail_transform import (
    TAIL_SAMPLE_ROWS,
    TailTransform,
    choose_tail_transform,
)
from streamlearn.solvers.calibration import TemperatureSums, best_temperature
from streamlearn.solvers.holdout import Holdout, RowSplit, ValueFold
from streamlearn.solvers.kmeans import RowSamplePass, Standardiser
from streamlearn.solvers.projection_pursuit.passes import (
    BoostedTerms,
    BoostTemperaturePass,
    ClassHistograms,
    DataMoments,
    GramStatistics,
    HistogramScanPass,
    MomentsPass,
    RidgeTerms,
    SplineScanPass,
)
from streamlearn.solvers.projection_search import (
    Candidates,
    FeatureSpread,
    SearchResult,
    direction_cost,
    gram_from_band,
    informative_feature_first,
    js_divergence,
    on_support,
    penalty_matrix,
    relax_direction,
    sequential_coordinate_search,
    spline_fit_costs,
    weak_learner_table,
)

__all__ = ["BACKFIT_CYCLES", "BACKFIT_TOL", "PENALTY_ORDER", "SEARCHES", "BoostConfig",
           "BoostFit", "RidgeConfig", "RidgeFit", "SearchConfig", "backfit_converged",
           "clean_direction", "describe_rows",
           "fit_sparse_jsboost", "fit_sparse_ppr", "lowest_round", "search_rounds"]

#: Order of the difference penalty of the ridge splines.
PENALTY_ORDER = 2
#: Rounds of backfitting at most (``RidgeConfig.backfit``): each term's direction and ridge
#: function refitted in turn to the residuals of the others; reaching it while the last
#: round has not converged (:func:`backfit_converged`) warns ``ConvergenceWarning``.
BACKFIT_CYCLES = 10
#: Relative drop of the residual sum of squares for which backfitting moves a term's
#: direction (less is a tie: the term keeps it, its ridge function refitted); a round in
#: which no term moves ends backfitting.
BACKFIT_GAIN = 1e-4
#: ... and a round that lowers the residual sum of squares by at most this share of the
#: total sum of squares (the residual sum of squares of the intercept alone: a gain of
#: ``R^2`` of at most 1e-4) ends it too (:func:`backfit_converged`). Ended only by a round
#: that moved no direction, a move being a drop of ``BACKFIT_GAIN`` of what is left,
#: backfitting ran into its cap and warned on a noise-free linear target (``R^2`` already
#: ``1 - 1e-8`` after the stagewise terms, each round still lowering the rest by a few
#: tenths of a percent) and at the noise floor of ``make_friedman1`` (2,000 rows: the
#: penalised splines refitted in turn traded residual for smoothness, moving directions
#: by 0.1 % of the residual round after round while it stayed within 1 %); both now end
#: after 1 to 3 rounds at the same held-out ``R^2`` (within 5e-4).
BACKFIT_TOL = 1e-4
#: ``n_rounds="auto"`` of SpJSBoost: at most this many rounds (a prediction then costs at
#: most 100 table lookups, over a million rows a second on one core, and a fit at most
#: twice the former fixed 50 rounds) ...
AUTO_MAX_ROUNDS = 100
#: ... stopping after ``max(ROUND_PATIENCE, best / 4)`` rounds without a lower held-out
#: loss (``best`` the rounds of the lowest so far, :func:`lowest_round`); with too few rows
#: to hold out, ``FALLBACK_ROUNDS`` rounds on every row.
ROUND_PATIENCE = 10
FALLBACK_ROUNDS = 50
#: ... also with fewer than this many rows of either class expected among the held-out
#: rows (the class's share of the weight times the held-out rows counted): the held-out
#: curve of a class of 2 % rests on a handful of its rows, a noise that stopped the rounds
#: early. On ``make_classification`` with 2 % positives, 7 and 18 held-out positives kept
#: 3 to 24 rounds and predicted few or no positives (test error 2.1 to 2.5 %, against
#: 1.60 and 2.2 % at 50 rounds); 52 kept 26 and 36 (1.37 and 1.14 %, 50 rounds 1.11).
MIN_HELD_CLASS_ROWS = 50
#: A round lowers the held-out loss when it falls below the lowest so far by more than
#: ``ROUND_LOSS_RTOL`` of that lowest, or ``ROUND_LOSS_ATOL`` of the loss of round 0 (no
#: learner), whichever is more. On separable data the held-out loss keeps halving
#: round after round (1.0, 0.5, 0.25, ...; 1e-8 by round 28), so a strictly lower loss
#: never stopped the rounds before the cap; once it is below ``ROUND_LOSS_ATOL`` of where it
#: started, what is left to win is nothing the held-out rows can tell apart.
ROUND_LOSS_RTOL = 1e-3
ROUND_LOSS_ATOL = 1e-4
#: Mixes the seed into the hash that picks SpJSBoost's held-out rows.
JS_VALIDATION_SALT = 0x75B0_0573_D1CE_0F01
#: Where SpJSBoost holds no rows out and has fewer than ``CROSS_FIT_MAX_ROWS`` rows, the
#: temperature of its probabilities is chosen on out-of-fold scores of
#: ``CROSS_FIT_FOLDS`` more fits of the same rounds (each on the other folds' rows, about
#: two thirds of them), not on the training rows' margins, which the rounds widened (on
#: 700 rows of ``make_classification`` with a fifth of the labels flipped, test log-loss
#: 0.53 at the training rows' scale capped at 1, 0.42 out of fold, as
#: ``LogisticRegression``). Below ``CROSS_FIT_MAX_ROWS`` rows the default
#: ``validation_fraction`` (0.1) holds none out
#: (:data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` expected), so the folds'
#: cost, a fit about four times as long (1,400 rows: 0.45 -> 1.9 s), falls on small data
#: only; five folds lowered the log-loss by 0.004-0.02 more for six times as long.
CROSS_FIT_FOLDS = 3
CROSS_FIT_MAX_ROWS = 2_000
#: Mixes the seed into the hash that splits the rows into those folds.
JS_FOLD_SALT = 0x0F01_D5C8_055F_17ED
#: ``n_terms="auto"``: at most this many terms ...
AUTO_MAX_TERMS = 10
#: ... each kept only while it lowers the residual sum of squares by at least this share
#: (and by Akaike's criterion, :func:`term_pays`).
AUTO_MIN_GAIN = 0.01
#: Direction searches: paper 001's (Table 2) and the cyclic one of KLBoosting it improves on.
SEARCHES = {"informative_first": informative_feature_first,
            "sequential": sequential_coordinate_search}
#: ``max_iter="auto"``: a search of ``d`` features runs at most
#: ``max(AUTO_MIN_ITER, AUTO_ITER_PER_FEATURE * d)`` rounds of the "informative feature
#: first" search, or ``AUTO_MIN_ITER`` sweeps of the sequential one (a sweep already moves
#: every coordinate). A round moves one coordinate, so a direction over all ``d`` features
#: takes ``d - 1`` rounds from a single coordinate, and a coordinate is often moved again
#: once others have; a fixed 20 cut searches short (and warned) in every fit on a linear
#: label of 20 features of 90 % zeros (up to 29 rounds needed) and of 50 such features (up
#: to 58: test error 9.7 % capped, 6.7 % converged, the same fit time).
AUTO_MIN_ITER = 20
AUTO_ITER_PER_FEATURE = 2


def search_rounds(max_iter: int | str, search: str, n_features: int) -> int:
    """Rounds (or sweeps) a direction search may run: ``max_iter``, or the rule of
    ``max_iter="auto"`` (:data:`AUTO_ITER_PER_FEATURE`).

    Parameters
    ----------
    max_iter : int or "auto"
    search : {"informative_first", "sequential"}
    n_features : int

    Returns
    -------
    int
    """
    if max_iter != "auto":
        return int(max_iter)
    if search == "sequential":
        return AUTO_MIN_ITER
    return max(AUTO_MIN_ITER, AUTO_ITER_PER_FEATURE * int(n_features))


@dataclass(frozen=True)
class SearchConfig:
    """Settings of the direction search of every term (validated by the estimator).

    Attributes
    ----------
    tau : float
        Strength of the L1 penalty, ``lam = g0 / tau`` (eq. 6); ``inf`` switches it off.
    search : {"informative_first", "sequential"}
    start : {"pairs", "coordinate", "weighted"}
    search_range, coarse_step, fine_step : float
        ``H``, ``dH``, ``dh`` of Table 2.
    max_iter : int or "auto"
        Rounds (or sweeps) of one search at most; ``"auto"`` as :func:`search_rounds` says.
    """

    tau: float
    search: str
    start: str
    search_range: float
    coarse_step: float
    fine_step: float
    max_iter: int | str

    def lam(self, g0: float) -> float:
        """L1 weight ``|g0| / tau`` (0 for ``tau = inf``)."""
        return abs(g0) / float(self.tau)

    def run(self, scan: Callable[[np.ndarray, Candidates], tuple[np.ndarray, Any]],
            n_features: int, spread: FeatureSpread, penalty_weight: Callable[[float], float],
            null_cost: Callable[[], float] | None = None,
            support: np.ndarray | None = None, drops: bool = False) -> SearchResult:
        """One direction search with these settings; over the features ``support`` only
        when given (:func:`~streamlearn.solvers.projection_search.on_support`; its
        starts, steps and ``max_iter="auto"`` rounds are those of that many features).
        ``drops``: the rounds of the "informative feature first" search also cost dropping
        each coordinate (``informative_feature_first(drops=True)``)."""
        if support is None:
            extra = {"drops": True} if drops and self.search == "informative_first" else {}
            return SEARCHES[self.search](scan, n_features, spread, penalty_weight,
                                         start=self.start, null_cost=null_cost,
                                         **self.steps(n_features), **extra)
        sub_scan, sub_spread, lift = on_support(scan, spread, support)
        return lift(self.run(sub_scan, len(support), sub_spread, penalty_weight, null_cost,
                             drops=drops))

    def steps(self, n_features: int) -> dict[str, Any]:
        """The search's range, steps and rounds over ``n_features`` features, as the
        searches take them."""
        return {"search_range": float(self.search_range),
                "coarse_step": float(self.coarse_step), "fine_step": float(self.fine_step),
                "max_iter": search_rounds(self.max_iter, self.search, n_features)}


def term_pays(rss_before: float, rss_after: float, n_bases: int, n_nonzero: int,
              n_rows: float) -> bool:
    """``n_terms="auto"``: whether a new ridge term is worth its parameters.

    It is when it lowers the residual sum of squares by at least :data:`AUTO_MIN_GAIN` and
    its Akaike criterion falls, ``n log(rss_after / rss_before) + 2 df < 0`` with
    ``df = n_bases + n_nonzero`` (the spline's coefficients and the direction's non-zero
    entries, an upper bound of the term's effective degrees of freedom) and ``n`` the
    training rows as the fit counts them (:attr:`~.passes.DataMoments.row_count`: a row of
    weight ``k`` counts as ``k`` rows, weights summing to less than the rows of positive
    weight as those rows): on 300 rows a term of 8 bases and 2 features must explain 6 % of what
    is left, on 1M rows 1 %.

    Parameters
    ----------
    rss_before, rss_after : float
        Weighted residual sums of squares without and with the term.
    n_bases, n_nonzero : int
    n_rows : float

    Returns
    -------
    bool
    """
    if not rss_before > 0 or n_rows <= 0:
        return False
    df = int(n_bases) + int(n_nonzero)
    ratio = max(float(rss_after), 0.0) / float(rss_before)
    return bool(ratio <= min(1.0 - AUTO_MIN_GAIN, math.exp(-2.0 * df / float(n_rows))))


def backfit_converged(moved: bool, rss_before: float, rss_after: float,
                      total_ss: float) -> bool:
    """Whether a round of backfitting ends it.

    It does when the round moved no term's direction (each kept its own, by more than a tie
    of :data:`BACKFIT_GAIN`, and only the ridge functions were refitted), or when it lowered
    the residual sum of squares by at most :data:`BACKFIT_TOL` times the total sum of
    squares, ``rss_before - rss_after <= BACKFIT_TOL * total_ss`` (a round that raises it,
    as the penalised splines refitted in turn may, included). The tolerance is a share of
    the total, not of what is left, so that a fit of ``R^2 = 1 - 1e-6`` on a noise-free
    target, whose rounds keep lowering the little that is left by a constant factor, has
    converged.

    Parameters
    ----------
    moved : bool
        Whether the round moved a term's direction.
    rss_before, rss_after : float
        Weighted residual sums of squares of the model before and after the round.
    total_ss : float
        Weighted sum of squares of the target about its weighted mean.

    Returns
    -------
    bool
    """
    return not moved or float(rss_before) - float(rss_after) <= BACKFIT_TOL * float(total_ss)


@dataclass(frozen=True)
class RidgeConfig:
    """Settings of a sparse projection pursuit regression.

    Attributes
    ----------
    search : SearchConfig
    n_terms : int or "auto"
        Terms, or ``"auto"``: up to :data:`AUTO_MAX_TERMS`, stopping at the first that
        does not pay for itself (:func:`term_pays`; the first term is always kept).
    n_bases : int
        B-spline bases of each ridge function.
    smoothing : float
        Weight of the difference penalty of the spline coefficients, per row counted:
        it is scaled by ``weight / row_count`` (:attr:`~.passes.DataMoments.row_count`),
        1 for unit or integer weights.
    degree : int
        Spline degree.
    standardize : bool
        Search over standardised features (see :func:`raw_directions`).
    backfit : bool
        After the forward stagewise terms, fit them again without the L1 term over the
        features they chose (with a finite ``tau``), then refit each in turn to the
        residuals of the others (:func:`fit_sparse_ppr`).
    spread_tails : bool
        With ``standardize`` on dense rows, map the crowded features whose
        standardisation squeezes their middle rows first (:func:`describe_rows`).
    """

    search: SearchConfig
    n_terms: int | str
    n_bases: int
    smoothing: float
    degree: int
    standardize: bool = True
    backfit: bool = False
    spread_tails: bool = False


@dataclass(frozen=True)
class RidgeFit:
    """A fitted sparse projection pursuit regression.

    Attributes
    ----------
    intercept : float
        Weighted mean of the target.
    projections : ndarray of shape (n_terms, n_features)
    ranges : ndarray of shape (n_terms, 2)
    spline_coef : ndarray of shape (n_terms, n_bases)
    lambdas, train_sse : ndarray of shape (n_terms,)
    n_scans : int
        Scans (passes) the searches took.
    n_train : int
        Rows read.
    unconverged : tuple of int
        Terms whose search (or backfitting search) stopped at ``max_iter`` while still
        lowering its cost.
    feature_std : ndarray of shape (n_features,) or None
        The training rows' weighted standard deviation of each feature (1 if constant).
    backfit_rounds : int
        Rounds of backfitting run (0 without).
    backfit_converged : bool
        False when backfitting stopped at :data:`BACKFIT_CYCLES` rounds before a round met
        the rule of :func:`backfit_converged`.
    feature_transform : TailTransform or None
        The map of crowded features the rows were read through (``spread_tails``); the
        directions, ranges and ``feature_std`` are then of the mapped features.
    """

    intercept: float
    projections: np.ndarray
    ranges: np.ndarray
    spline_coef: np.ndarray
    lambdas: np.ndarray
    train_sse: np.ndarray
    n_scans: int
    n_train: int
    unconverged: tuple[int, ...]
    feature_std: np.ndarray | None = None
    backfit_rounds: int = 0
    backfit_converged: bool = True
    feature_transform: TailTransform | None = None


@dataclass(frozen=True)
class BoostConfig:
    """Settings of sparse Jensen-Shannon boosting.

    Attributes
    ----------
    search : SearchConfig
    n_rounds : int or "auto"
        Rounds, or ``"auto"``: rounds chosen on held-out rows (:func:`fit_sparse_jsboost`).
    n_bins : int
    smoothing : float
        ``eps = smoothing / n_bins`` added to a weak learner's bin masses.
    standardize : bool
        Search over standardised features (see :func:`raw_directions`).
    validation_fraction : float or None
        Share of the rows ``n_rounds="auto"`` holds out.
    spread_tails : bool
        As :attr:`RidgeConfig.spread_tails`.
    """

    search: SearchConfig
    n_rounds: int | str
    n_bins: int
    smoothing: float
    standardize: bool = True
    validation_fraction: float | None = 0.1
    spread_tails: bool = False


@dataclass(frozen=True)
class BoostFit:
    """A fitted sparse Jensen-Shannon boosting model.

    Attributes
    ----------
    intercept : float
        ``1/2 log(W+ / W-)`` of the class masses.
    class_weight : ndarray of shape (2,)
        Initial row weight of each class, ``1 / (class mass)``.
    projections : ndarray of shape (n_rounds, n_features)
    ranges : ndarray of shape (n_rounds, 2)
    tables : ndarray of shape (n_rounds, n_bins)
    learner_weights, divergences, lambdas : ndarray of shape (n_rounds,)
    n_scans, n_train : int
    unconverged : tuple of int
        Rounds whose search stopped at ``max_iter`` while still lowering its cost.
    feature_std : ndarray of shape (n_features,) or None
        The training rows' weighted standard deviation of each feature (1 if constant).
    validation : dict or None
        ``n_rounds="auto"`` with held-out rows: ``held_out_loss`` (the held-out rows'
        mean log-loss after rounds ``0 .. T_run``), ``best_round`` (the rounds
        kept, :func:`lowest_round`) and ``capped`` (whether :data:`AUTO_MAX_ROUNDS` stopped
        the rounds while the loss was still at its lowest); None otherwise.
    proba_scale : float or None
        The temperature of the probabilities (:func:`boost_probability_scale`).
    proba_rows : {"held-out", "out-of-fold", "training"} or None
        The rows it was chosen on.
    feature_transform : TailTransform or None
        As :attr:`RidgeFit.feature_transform`.
    """

    intercept: float
    class_weight: np.ndarray
    projections: np.ndarray
    ranges: np.ndarray
    tables: np.ndarray
    learner_weights: np.ndarray
    divergences: np.ndarray
    lambdas: np.ndarray
    n_scans: int
    n_train: int
    unconverged: tuple[int, ...]
    feature_std: np.ndarray | None = None
    validation: dict[str, Any] | None = None
    proba_scale: float | None = None
    proba_rows: str | None = None
    feature_transform: TailTransform | None = None


def clean_direction(alpha: np.ndarray) -> np.ndarray:
    """A direction with round-off entries (from the search's float steps) set to exact zero.

    Parameters
    ----------
    alpha : ndarray of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_features,), float64, unit norm
    """
    out = np.array(alpha, dtype=np.float64)
    out[np.abs(out) < 1e-9] = 0.0
    return out / np.linalg.norm(out)


def describe_rows(runner: Any, dataset: Dataset, n_classes: int, spread_tails: bool,
                  seed: int) -> tuple[Dataset, DataMoments, TailTransform | None]:
    """The first pass: the rows as the fit reads them, their moments and the map of
    crowded features they are read through (None for none).

    With ``spread_tails`` on dense rows the pass also draws a uniform sample of
    :data:`~streamlearn.features.tail_transform.TAIL_SAMPLE_ROWS` rows, and the crowded
    features whose weighted standard deviation is above
    :data:`~streamlearn.features.tail_transform.SQUEEZE_RATIO` times their robust spread
    are mapped (:func:`~streamlearn.features.tail_transform.choose_tail_transform`):
    standardised as they are, a few far outliers squeeze the feature's other rows onto one
    point of every projection. The dataset is then read through the map, and the moments
    are those of the mapped rows (one more pass). Sparse rows are read as they are.

    Parameters
    ----------
    runner : engine
    dataset : Dataset
    n_classes : int
        0 for regression.
    spread_tails : bool
    seed : int
        Seeds the row sample.

    Returns
    -------
    (Dataset, DataMoments, TailTransform or None)
    """
    d = len(dataset.feature_names)
    if not spread_tails or dataset.is_sparse:
        return dataset, runner.run(MomentsPass(d, n_classes), dataset,
                                   description="moments"), None
    moments, sampled = runner.run(
        Together(MomentsPass(d, n_classes), RowSamplePass(TAIL_SAMPLE_ROWS, d, seed)),
        dataset, description="moments")
    transform = choose_tail_transform(dataset, np.asarray(sampled.values, dtype=np.float32),
                                      moments.minimum, moments.maximum,
                                      moments.standardiser().scale)
    if transform is None:
        return dataset, moments, None
    dataset = dataset.with_feature_transform(transform)
    return dataset, runner.run(MomentsPass(d, n_classes), dataset,
                               description="moments of the mapped rows"), transform


def raw_directions(projections: np.ndarray, ranges: np.ndarray,
                   std: Standardiser | None) -> tuple[np.ndarray, np.ndarray]:
    """Directions over standardised features as the same projections of the raw ones.

    ``u . z = (u / scale) . x - (u / scale) . shift``: the raw direction is ``u / scale``
    scaled to unit length, ``v = (u / scale) / n`` with ``n = ||u / scale||`` (zero where
    ``u`` is zero, so the sparsity pattern stays), and each range ``[lo, hi]`` of ``u . z``
    becomes ``[(lo + (u / scale) . shift) / n, (hi + (u / scale) . shift) / n]`` for
    ``v . x``: a ridge function, which reads its input's place in its range, sees the same
    values.

    Parameters
    ----------
    projections : ndarray of shape (n_terms, n_features)
    ranges : ndarray of shape (n_terms, 2)
        ``lo``, ``hi`` of each term's projected values.
    std : Standardiser or None
        None: the directions are over the raw features already (returned as they are).

    Returns
    -------
    (ndarray, ndarray)
    """
    if std is None:
        return projections, ranges
    raw = projections / std.scale
    norm = np.linalg.norm(raw, axis=1)
    norm = np.where(norm > 0, norm, 1.0)
    offset = raw @ std.shift
    return raw / norm[:, None], (ranges + offset[:, None]) / norm[:, None]


@dataclass
class _Terms:
    """Forward stagewise terms over the features as searched (:class:`_Stagewise`)."""

    projections: np.ndarray
    ranges: np.ndarray
    spline_coef: np.ndarray
    lambdas: list[float]
    sse: list[float]
    unconverged: list[int]
    n_scans: int
    total_ss: float

    @property
    def n_terms(self) -> int:
        """Terms kept."""
        return int(self.projections.shape[0])


@dataclass
class _Stagewise:
    """The forward stagewise fit of :func:`fit_sparse_ppr` (Table 3) on one dataset: each
    term's direction searched on the residuals of the terms before it, its ridge function
    the penalised spline of its scan."""

    runner: Any
    dataset: Dataset
    std: Standardiser | None
    spread: FeatureSpread
    penalty: np.ndarray
    intercept: float
    n_bases: int
    degree: int
    row_count: float

    def fit(self, search: SearchConfig, max_terms: int, auto: bool,
            support: np.ndarray | None = None, what: str = "") -> _Terms:
        """Up to ``max_terms`` terms searched with ``search`` (over the features ``support``
        only when given); ``auto``: stop at the first term that does not pay
        (:func:`term_pays`, the term dropped). Over a support (the refit, without the L1
        term) the rounds also cost dropping each coordinate
        (:func:`~streamlearn.solvers.projection_search.drop_candidates`). ``what`` starts
        each pass's description."""
        d = len(self.dataset.feature_names)
        out = _Terms(np.zeros((0, d)), np.zeros((0, 2)), np.zeros((0, self.n_bases)), [], [],
                     [], 0, 0.0)
        for k in range(max_terms):
            terms = RidgeTerms(self.intercept, out.projections,
                               np.ascontiguousarray(out.ranges[:, 0]),
                               np.ascontiguousarray(out.ranges[:, 1]), out.spline_coef,
                               self.degree)
            label = f"{what}term {k + 1}/{max_terms}"
            residual_ss: list[float] = []

            def scan(alpha: np.ndarray, cands: Candidates, terms: RidgeTerms = terms,
                     label: str = label, residual_ss: list[float] = residual_ss
                     ) -> tuple[np.ndarray, np.ndarray]:
                stats: GramStatistics = self.runner.run(
                    SplineScanPass(terms, self.n_bases, alpha, cands, self.std), self.dataset,
                    description=f"{label}: {len(cands)} candidates")
                residual_ss.append(float(stats.totals[0]))
                return spline_fit_costs(gram_from_band(stats.band), stats.rhs,
                                        float(stats.totals[0]), self.penalty)

            # Table 3: lam_j = sum_i r_i^2 / tau, the residuals before term j (the first
            # scan has just summed them)
            found = search.run(scan, d, self.spread,
                               lambda g0, rss=residual_ss: search.lam(rss[0]),
                               lambda rss=residual_ss: rss[0], support=support,
                               drops=support is not None)
            out.n_scans += found.n_scans
            if k == 0:  # the first scan's residuals are those of the intercept alone
                out.total_ss = residual_ss[0]
            direction = clean_direction(found.alpha)
            if auto and k > 0 and not term_pays(residual_ss[0], found.fit_cost, self.n_bases,
                                                int(np.count_nonzero(direction)),
                                                self.row_count):
                break  # the term is dropped: n_terms="auto" stops at the first that does not pay
            out.projections = np.vstack([out.projections, direction])
            out.ranges = np.vstack([out.ranges, [found.lo, found.hi]])
            out.spline_coef = np.vstack([out.spline_coef, found.stat])
            out.lambdas.append(found.lam)
            out.sse.append(found.fit_cost)
            if not found.converged:
                out.unconverged.append(k)
        return out


def fit_sparse_ppr(runner: Any, dataset: Dataset, config: RidgeConfig,
                   seed: int = 0) -> RidgeFit:
    """Fit ``config.n_terms`` penalised-spline ridge functions, forward stagewise (Table 3).

    Each term's direction is searched with the L1 term of eq. 8, which chooses its features
    and also pulls the direction toward the coordinate axes (a pair direction costs
    ``sqrt 2`` times a coordinate's L1 norm), and is fitted to the residuals of the terms
    before it only. With ``config.backfit`` and a finite ``tau``, the L1 term has then
    done its work, selecting the features; as the relaxed lasso refits a lasso's
    selection without its penalty, the terms are fitted again, forward stagewise from the
    first, by the same search without the L1 term over the features they chose only (as
    many terms as were kept; a refitted direction may drop a feature, never add one).
    Backfitting alone, started from the penalised terms, stopped in poor joint optima:
    the L1 term puts the first directions on or near the axes (a coordinate costs
    ``1 / sqrt 2`` of a pair direction's L1 norm), each later term is fitted around them,
    and refitting one direction at a time, the other ridge functions held, does not leave
    such a pair (two coordinates with nearly linear ridge functions are a stationary
    point for ``x1 x2``). The terms are then backfitted, as projection
    pursuit regression is (Friedman and Stuetzle, 1981): in turn, each term's direction is
    refitted without the L1 term over the features the terms chose
    (:func:`~streamlearn.solvers.projection_search.relax_direction`, started from the
    direction found) and its ridge function to the residuals of the others, for at most
    :data:`BACKFIT_CYCLES` rounds, until a round moves no direction or lowers the residual
    sum of squares by at most :data:`BACKFIT_TOL` of the total sum of squares
    (:func:`backfit_converged`). The
    features the search chose stay the model's (a refitted or backfitted direction may drop
    one, never add one): the L1 term selects, the refit and backfitting fit. ``lambdas``
    are then the selecting search's, ``train_sse`` the refitted terms' (its last entry the
    backfitted model's).

    Parameters
    ----------
    runner : engine
        Runs the passes (``run(pass_, dataset, description=...)``).
    dataset : Dataset
        Numeric target, optional sample weights.
    config : RidgeConfig
    seed : int
        Seeds the row sample of ``config.spread_tails`` (the rest of the algorithm is
        deterministic given the data).

    Returns
    -------
    RidgeFit

    Raises
    ------
    LabelError
        When the rows have no weight in total.
    """
    d = len(dataset.feature_names)
    dataset, moments, transform = describe_rows(
        runner, dataset, 0, config.standardize and config.spread_tails, seed)
    if not moments.weight > 0:
        raise LabelError("the training rows have no weight (no rows, or all sample "
                         "weights are zero)")
    std = moments.standardiser() if config.standardize else None
    spread = moments.spread(std)
    n_bases, degree = int(config.n_bases), int(config.degree)
    # the weighted sums of squares are in units of a row of weight weight / row_count (1
    # for counts): the penalty in the same units keeps weights that are shares of the rows
    # free of their scale
    unit = moments.weight / moments.row_count
    penalty = float(config.smoothing) * unit * penalty_matrix(n_bases, PENALTY_ORDER)
    intercept = moments.weighted_y / moments.weight
    auto = config.n_terms == "auto"
    max_terms = AUTO_MAX_TERMS if auto else int(config.n_terms)
    stage = _Stagewise(runner, dataset, std, spread, penalty, float(intercept), n_bases,
                       degree, moments.row_count)
    terms = stage.fit(config.search, max_terms, auto)
    total_ss, lambdas, n_scans = terms.total_ss, terms.lambdas, terms.n_scans
    unconverged = list(terms.unconverged)
    chosen = np.flatnonzero(np.any(terms.projections != 0, axis=0))
    if config.backfit and math.isfinite(float(config.search.tau)) and chosen.shape[0] >= 2:
        # the L1 term has selected the features: the terms are fitted again on them
        # without it, from the first (the relaxed lasso's refit, for every term at once)
        refit = stage.fit(replace(config.search, tau=math.inf), terms.n_terms, False,
                          support=chosen, what="refit ")
        n_scans += refit.n_scans
        unconverged = sorted(set(unconverged) | set(refit.unconverged))
        terms = refit
    projections, ranges = terms.projections, terms.ranges
    spline_coef, sse = terms.spline_coef, list(terms.sse)
    rounds, converged = 0, True
    if config.backfit and projections.shape[0] > 1:
        converged = False
        while not converged and rounds < BACKFIT_CYCLES:
            rounds += 1
            moved, rss_before = False, sse[-1]
            for k in range(projections.shape[0]):
                others = np.arange(projections.shape[0]) != k
                rest = RidgeTerms(float(intercept), projections[others],
                                  np.ascontiguousarray(ranges[others, 0]),
                                  np.ascontiguousarray(ranges[others, 1]),
                                  spline_coef[others], degree)

                def scan(alpha: np.ndarray, cands: Candidates, rest: RidgeTerms = rest,
                         k: int = k) -> tuple[np.ndarray, np.ndarray]:
                    stats: GramStatistics = runner.run(
                        SplineScanPass(rest, n_bases, alpha, cands, std), dataset,
                        description=f"backfitting term {k + 1}: {len(cands)} candidates")
                    return spline_fit_costs(gram_from_band(stats.band), stats.rhs,
                                            float(stats.totals[0]), penalty)

                current = direction_cost(scan, projections[k], spread)
                found = relax_direction(scan, current, spread, chosen=chosen,
                                        **config.search.steps(d))
                n_scans += found.n_scans
                if not found.converged and k not in unconverged:
                    unconverged.append(k)
                # the term refitted to the others' residuals, its direction moved only
                # when that lowers the fit by more than a tie
                if found.fit_cost < current.fit_cost * (1.0 - BACKFIT_GAIN):
                    moved = True
                else:
                    found = current
                projections[k] = clean_direction(found.alpha)
                ranges[k] = [found.lo, found.hi]
                spline_coef[k] = found.stat
                sse[-1] = found.fit_cost  # the model's, every term refitted so far
            converged = backfit_converged(moved, rss_before, sse[-1], total_ss)
    projections, ranges = raw_directions(projections, ranges, std)
    return RidgeFit(float(intercept), projections, ranges, spline_coef, np.asarray(lambdas),
                    np.asarray(sse), n_scans, int(moments.n_rows), tuple(sorted(unconverged)),
                    moments.standardiser().scale, rounds, converged, transform)


def lowest_round(curve: list[float]) -> int:
    """The rounds of the lowest held-out loss: the last round that lowered the loss below
    the lowest before it by more than the tolerance (:data:`ROUND_LOSS_RTOL` of that lowest
    or :data:`ROUND_LOSS_ATOL` of ``curve[0]``, whichever is more); 0 when none did.

    Parameters
    ----------
    curve : list of float
        Held-out loss after rounds ``0, 1, ...``.

    Returns
    -------
    int
    """
    best = 0
    for k in range(1, len(curve)):
        tol = max(ROUND_LOSS_RTOL * curve[best], ROUND_LOSS_ATOL * curve[0])
        if curve[k] < curve[best] - tol:
            best = k
    return best


def fit_sparse_jsboost(runner: Any, dataset: Dataset, config: BoostConfig,
                       seed: int = 0) -> BoostFit:
    """Boost ``config.n_rounds`` projection learners by Jensen-Shannon divergence (Table 6).

    ``n_rounds="auto"``: with at least
    :data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` rows expected in the
    ``validation_fraction`` share, those rows (by a hash of the row id) are left out of the
    histograms, and the first scan of each round also sums their log-loss under the model
    so far (its probabilities at temperature 1, ``1 / (1 + exp(-2 (b + F)))``, the
    intercept ``b`` included; not the class-weighted exponential loss the rounds minimise,
    which gives half its weight to the few held-out rows of a rare class); rounds stop
    after ``max(ROUND_PATIENCE, best / 4)`` without a lower held-out loss, or at
    :data:`AUTO_MAX_ROUNDS`, and the model keeps the rounds of the lowest. A loss is lower
    only by more than a tolerance (:func:`lowest_round`), so that a loss creeping towards
    0 on separable data stops the rounds. With fewer rows, or fewer than
    :data:`MIN_HELD_CLASS_ROWS` of either class expected among them (its share of the
    sample weight, before the dataset's class factors, times those rows),
    :data:`FALLBACK_ROUNDS` rounds on every row.

    The temperature of the probabilities: on the held-out rows, else, with fewer than
    :data:`CROSS_FIT_MAX_ROWS` rows, on out-of-fold scores (:func:`_out_of_fold_sums`,
    against Platt's smoothed targets), else on the training rows and at most 1
    (:func:`boost_probability_scale`).

    Parameters
    ----------
    runner : engine
    dataset : Dataset
        Two-class target coded 0 / 1, optional sample weights.
    config : BoostConfig
    seed : int
        Mixed into the hash that picks the held-out rows of ``n_rounds="auto"``, and seeds
        the row sample of ``config.spread_tails`` (the rest of the algorithm is
        deterministic given the data).

    Returns
    -------
    BoostFit

    Raises
    ------
    LabelError
        When a class has no weight.
    """
    factors = dataset.class_factors
    dataset, moments, transform = describe_rows(
        runner, dataset, 2, config.standardize and config.spread_tails, seed)
    if not np.all(moments.class_mass > 0):
        classes = dataset.classes
        shown = [] if classes is None else np.asarray(classes).tolist()
        raise LabelError(f"both classes need rows of positive weight; class masses are "
                         f"{moments.class_mass.tolist()} for {shown}")
    std = moments.standardiser() if config.standardize else None
    spread = moments.spread(std)
    class_weight = 1.0 / moments.class_mass
    intercept = 0.5 * float(np.log(moments.class_mass[1] / moments.class_mass[0]))
    holdout = _boost_holdout(config, moments, seed, factors)
    if config.n_rounds != "auto":
        max_rounds = int(config.n_rounds)
    else:
        max_rounds = AUTO_MAX_ROUNDS if holdout is not None else FALLBACK_ROUNDS
    fit = _boost_rounds(runner, dataset, config, std, spread, class_weight, holdout,
                        max_rounds, choose=holdout is not None)
    validation = None
    if holdout is not None:
        best = lowest_round(fit.curve)
        fit = fit.first(best)
        validation = {"held_out_loss": [float(v) for v in fit.curve], "best_round": best,
                      "capped": best == max_rounds}
    terms = fit.terms(std, class_weight)
    if holdout is None and moments.n_rows < CROSS_FIT_MAX_ROWS:
        sums = _out_of_fold_sums(runner, dataset, config, std, spread, class_weight,
                                 intercept, fit.n_rounds, seed)
        scale, rows = best_temperature(sums.losses()), "out-of-fold"
    else:
        scale, rows = boost_probability_scale(runner, dataset, intercept, terms, holdout)
    return BoostFit(intercept, class_weight, terms.proj, np.column_stack([terms.lo, terms.hi]),
                    terms.table, np.asarray(fit.weights), np.asarray(fit.divergences),
                    np.asarray(fit.lambdas), fit.n_scans, int(moments.n_rows),
                    tuple(fit.unconverged), moments.standardiser().scale, validation, scale,
                    rows, transform)


@dataclass
class _Rounds:
    """The learners of :func:`_boost_rounds` over the standardised features (as searched),
    and the held-out loss of the model after rounds ``0, 1, ...`` where it chose them."""

    projections: np.ndarray
    ranges: np.ndarray
    tables: np.ndarray
    weights: list[float]
    divergences: list[float]
    lambdas: list[float]
    unconverged: list[int]
    n_scans: int
    curve: list[float]

    @property
    def n_rounds(self) -> int:
        """Learners."""
        return int(self.projections.shape[0])

    def first(self, n: int) -> _Rounds:
        """The first ``n`` learners (the same curve)."""
        return _Rounds(self.projections[:n], self.ranges[:n], self.tables[:n],
                       self.weights[:n], self.divergences[:n], self.lambdas[:n],
                       [k for k in self.unconverged if k < n], self.n_scans, self.curve)

    def terms(self, std: Standardiser | None, class_weight: np.ndarray) -> BoostedTerms:
        """The learners over the raw features (:func:`raw_directions`)."""
        projections, ranges = raw_directions(self.projections, self.ranges, std)
        return BoostedTerms(projections, np.ascontiguousarray(ranges[:, 0]),
                            np.ascontiguousarray(ranges[:, 1]), self.tables, class_weight)


def _boost_rounds(runner: Any, dataset: Dataset, config: BoostConfig,
                  std: Standardiser | None, spread: FeatureSpread, class_weight: np.ndarray,
                  holdout: RowSplit | None, max_rounds: int, choose: bool,
                  what: str = "") -> _Rounds:
    """Run ``max_rounds`` rounds on the rows ``holdout`` does not hold out; ``choose``:
    score the model on the held-out rows in the first scan of every round and stop as
    :func:`fit_sparse_jsboost` says (the round after the last is searched to score the
    last). ``what`` starts the description of every pass."""
    d = len(dataset.feature_names)
    n_bins = int(config.n_bins)
    projections, ranges, tables = np.zeros((0, d)), np.zeros((0, 2)), np.zeros((0, n_bins))
    weights: list[float] = []
    divergences: list[float] = []
    lambdas: list[float] = []
    unconverged: list[int] = []
    n_scans = 0
    curve: list[float] = []  # held-out loss after rounds 0, 1, ...
    for k in range(max_rounds + bool(choose)):
        terms = BoostedTerms(projections, np.ascontiguousarray(ranges[:, 0]),
                             np.ascontiguousarray(ranges[:, 1]), tables, class_weight)
        label = f"{what}round {k + 1}/{max_rounds}"
        held: list[float] = []

        def scan(alpha: np.ndarray, cands: Candidates, terms: BoostedTerms = terms,
                 label: str = label, held: list[float] = held
                 ) -> tuple[np.ndarray, np.ndarray]:
            stats: ClassHistograms = runner.run(
                HistogramScanPass(terms, n_bins, alpha, cands, std, holdout), dataset,
                description=f"{label}: {len(cands)} candidates")
            held.append(stats.held_loss / max(stats.held_weight, 1e-300))
            return -js_divergence(stats.hist), stats.hist

        found = config.search.run(scan, d, spread, config.search.lam)
        n_scans += found.n_scans
        if choose:
            curve.append(held[0])  # the model of k rounds, scored by this round's first scan
            best = lowest_round(curve)
            if k == max_rounds or k - best >= max(ROUND_PATIENCE, best // 4):
                break  # the round just searched is not kept
        hist = found.stat
        table = weak_learner_table(hist, float(config.smoothing))
        mass = hist.sum(axis=1) / max(float(hist.sum()), 1e-300)
        projections = np.vstack([projections, clean_direction(found.alpha)])
        ranges = np.vstack([ranges, [found.lo, found.hi]])
        tables = np.vstack([tables, table])
        weights.append(float(mass @ np.abs(table)))
        divergences.append(-found.fit_cost)
        lambdas.append(found.lam)
        if not found.converged:
            unconverged.append(k)
    return _Rounds(projections, ranges, tables, weights, divergences, lambdas, unconverged,
                   n_scans, curve)


def _out_of_fold_sums(runner: Any, dataset: Dataset, config: BoostConfig,
                      std: Standardiser | None, spread: FeatureSpread,
                      class_weight: np.ndarray, intercept: float, n_rounds: int,
                      seed: int) -> TemperatureSums:
    """The temperature sums of out-of-fold scores: the rows split into
    :data:`CROSS_FIT_FOLDS` folds by a hash of their feature values
    (:class:`~streamlearn.solvers.holdout.ValueFold`: copies of a row share its fold, so
    that sample weights act as repeated rows here too); for each fold, the model's
    ``n_rounds`` rounds boosted on the other folds' rows (the model's settings,
    standardisation, class weights and intercept) and their logit ``2 (intercept + F(x))``
    summed on the fold's rows (one more pass)."""
    sums = TemperatureSums(2)
    folds = ValueFold.split(CROSS_FIT_FOLDS, int(seed) ^ JS_FOLD_SALT)
    for j, fold in enumerate(folds):
        what = f"probability scale, fold {j + 1}/{len(folds)}: "
        fit = _boost_rounds(runner, dataset, config, std, spread, class_weight, fold,
                            n_rounds, choose=False, what=what)
        fold_sums: TemperatureSums = runner.run(
            BoostTemperaturePass(intercept, fit.terms(std, class_weight), fold), dataset,
            description=f"{what}scores")
        sums = sums.merge(fold_sums)
    return sums


def boost_probability_scale(runner: Any, dataset: Dataset, intercept: float,
                            terms: BoostedTerms, holdout: Holdout | None
                            ) -> tuple[float, str]:
    """The temperature ``s`` of ``P(classes_[1] | x) = 1 / (1 + exp(-2 s (intercept +
    F(x))))`` and the rows it was chosen on: the scale of lowest log-loss on the rows
    ``n_rounds="auto"`` held out (one more pass), else on every training row against
    Platt's smoothed targets (:class:`~streamlearn.solvers.calibration.TemperatureSums`)
    and then at most 1 (on :data:`CROSS_FIT_MAX_ROWS` rows or more; fewer use
    out-of-fold scores instead, :func:`fit_sparse_jsboost`).

    ``s = 1`` is the logistic link of the exponential loss the rounds minimise; boosting
    grows its margins on the rows it trains on, and on small data (no rows held out, 50
    rounds) the logistic link put near-certain probabilities on test rows it got wrong
    (breast cancer: test log-loss 0.58 at 4 % error). The training rows' margins overstate
    those of new rows, so a scale chosen on them never sharpens the link: on 700 rows of
    ``make_classification`` (train accuracy 0.99, test 0.90) they chose 1.43, and on 300
    rows of noise 1.25 (test log-loss 1.39 against the prior's 0.53).
    """
    sums: TemperatureSums = runner.run(BoostTemperaturePass(intercept, terms, holdout),
                                       dataset, description="probability scale")
    if holdout is not None and sums.total_weight > 0:
        return best_temperature(sums.losses(smoothed=False)), "held-out"
    if holdout is not None:  # nothing held out after all: every row
        sums = runner.run(BoostTemperaturePass(intercept, terms, None), dataset,
                          description="probability scale")
    return min(1.0, best_temperature(sums.losses())), "training"


def _boost_holdout(config: BoostConfig, moments: DataMoments, seed: int,
                   class_factors: np.ndarray | None = None) -> Holdout | None:
    """The rows ``n_rounds="auto"`` holds out, or None (see :func:`fit_sparse_jsboost`);
    ``class_factors`` those of the dataset the moments were taken of (their class masses
    include them)."""
    if config.n_rounds != "auto":
        return None
    holdout = Holdout.for_choosing(config.validation_fraction, int(moments.n_rows),
                                   int(seed) ^ JS_VALIDATION_SALT)
    if holdout is None:
        return None
    mass, weight, rows = moments.class_mass, moments.weight, moments.row_count
    if class_factors is not None:
        # sample weights count as rows, a dataset's class factors do not: factors that
        # give a class of 2 % half the weight add none of its rows (both factors are
        # positive here: a class of no weight was refused)
        mass = mass / np.asarray(class_factors, dtype=np.float64)
        weight = float(mass.sum())
        rows = max(weight, float(moments.n_positive))
    # rows of the rarer class expected among the held-out ones
    rare = float(config.validation_fraction) * rows * float(mass.min()) / weight
    return holdout if rare >= MIN_HELD_CLASS_ROWS else None
