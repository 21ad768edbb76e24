"""ShareBoost's forward greedy selection (paper 003, Algorithm 1) as a sequence of passes.

:func:`fit` runs one summary pass (feature ranges, weighted row sample), builds the candidate
columns (k-means passes for anchors), then one round per selected column: a
:class:`~streamlearn.solvers.shareboost.passes.ColumnScorePass` picks the column whose
gradient column has the largest L1 norm, and the fully corrective step minimises the loss
over all selected columns by L-BFGS, each evaluation one
:class:`~streamlearn.solvers.shareboost.passes.RestrictedObjectivePass`, warm started from
the previous round.

With ``n_rounds="auto"`` a share of the rows is held out (a hash of the row id): rounds go on
until the held-out loss has not improved for a while (:data:`ROUND_PATIENCE`), or no
candidate is left, and the round with the lowest held-out loss is the model. Its rounds of
feature columns add the best-scored in groups that grow with the model
(:data:`COLUMN_GROWTH`). Where that share would hold too few rows, the folds of
:func:`cross_fit` hold out every row once and choose instead, for one fit on every row.

The class probabilities are ``softmax(s f)`` of the class scores ``f`` at one temperature
``s`` (:func:`probability_scale`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from streamlearn.data import Dataset
from streamlearn.errors import LabelError
from streamlearn.features.anchors import AnchorPieces
from streamlearn.features.tail_transform import TailTransform, choose_tail_transform
from streamlearn.solvers.calibration import TemperatureSums, best_temperature
from streamlearn.solvers.holdout import MIN_VALIDATION_ROWS, Holdout
from streamlearn.solvers.kmeans import Standardiser, streamed_kmeans
from streamlearn.solvers.lbfgs import MAX_HALVINGS, lbfgs_minimize
from streamlearn.solvers.mixture.relevance import (
    MAX_RELEVANCE_FEATURES,
    feature_relevance,
    relevance_weights,
)
from streamlearn.solvers.shareboost.columns import (
    AnchorColumns,
    Family,
    LinearColumns,
    StumpColumns,
)
from streamlearn.solvers.shareboost.passes import (
    ChunkMemo,
    ColumnScorePass,
    ObjectiveState,
    RestrictedObjectivePass,
    StepTerms,
    TemperaturePass,
    WeightedSummary,
    WeightedSummaryPass,
    keeps_step_terms,
    keeps_terms,
    numpy_paths,
)

#: Rows of the summary pass's sample (stump thresholds, anchor radii).
SAMPLE_ROWS = 8192
#: Mini-batch k-means passes over the data for the anchors' candidate centres.
KMEANS_EPOCHS = 2
#: Ratio of the largest to the smallest fraction of rows in a centre's candidate balls.
COVERAGE_RANGE = 60.0
#: Column scores this close (relative) to the best are ties, broken by the lowest index.
SCORE_TIE_RTOL = 1e-6
#: Bound on the soft-max loss's curvature along a column, per unit of the column's second
#: moment (the corrective step's diagonal preconditioner).
CURVATURE = 0.25
#: Correction pairs of the corrective step's L-BFGS.
LBFGS_MEMORY = 10
#: The anchors' metric keeps each feature's spread within this factor of the median spread
#: (:func:`spread_factors`): an order of magnitude, wider than the spreads of one unit's
#: features differ by (MNIST's 50 principal components: 0.6 to 3.4 times their median
#: interquartile range), narrower than units do. On the scales set of :func:`anchor_metric`
#: a band of 4 tested as 10 (4.15 % against 4.20).
SPREAD_BAND = 10.0
#: Neighbours of the leave-one-out k-nearest-neighbour check that chooses the anchors'
#: metric (:func:`anchor_metric`, :func:`knn_error`).
KNN_NEIGHBOURS = 5
#: Rows of the describe pass's sample that check runs on (the first of the sample, itself
#: uniform): 2,000 rows cost two ``2000 x 2000`` distance tables, well under a second.
KNN_ROWS = 2000
#: Rows per block of :func:`knn_error`'s distance table (``block x n`` entries at a time).
KNN_BLOCK = 256
#: The anchors' metric leaves the band only where the rows that the other candidate alone
#: classifies rightly outnumber those the band alone does by more than this many standard
#: deviations of that difference under a tie (``sqrt`` of their sum: a sign test on the
#: rows the two classify differently). Closer than that, the two errors differ by the
#: sample's chance: on 5 splits of hastie_10_2 (10 features of equal spread) the lower
#: error alone chose the spreads equalised on 4, by fractions of a point, for a test
#: error of 6.69 % where the band had 6.30 (equalised every time, 6.43).
KNN_TIE_Z = 2.0
#: ``n_rounds="auto"`` stops once this many columns were added without a lower held-out
#: loss ...
ROUND_PATIENCE = 10
#: ... or this share of the kept round's columns, when more (held-out losses plateau for
#: longer as the model grows, and fall again).
ROUND_PATIENCE_SHARE = 0.25
#: ``n_rounds="auto"`` with feature columns: a round adds the best-scored columns up to
#: this share of those already selected (at least one), the paper's variant that selects
#: a group of columns at a time (Sec. 2.1), so that the rounds, each a corrective step
#: over all selected columns, grow with the logarithm of the model's size instead of with
#: the size. Stumps and anchor pieces keep one a round: the stumps of one feature (the
#: balls of one centre) score alike, and groups of them tested worse on satimage, letter,
#: pendigits and usps.
COLUMN_GROWTH = 0.125
#: ``n_rounds="auto"`` with too few rows to hold out: the paper's budget, this many rounds.
FALLBACK_ROUNDS = 50
#: ``n_rounds="auto"`` where the ``validation_fraction`` share would hold fewer than
#: :data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` rows but all the rows hold that
#: many: folds of the cross-fitting that chooses the rounds, the penalty and the family
#: (:func:`cross_fit_folds`). Each row is held out once, so the summed held-out loss rests
#: on every row, not on a tenth of them.
CROSS_FIT_FOLDS = 5
#: ... also with fewer than this many rows outside the largest class expected among the
#: held-out rows (their share of the weight times the held-out rows expected; with two
#: classes, the rows of the rarer one, as for ``SparseJSBoostClassifier``): the held-out
#: curve then rests on a handful of rows. On ``make_classification`` with 0.2 % positives
#: (14,000 training rows, about 3 held-out positives) it kept the intercept-only model on
#: one of three splits (AUC 0.50, ``LogisticRegression`` 0.97) and 4 and 8 columns on the
#: others. A rare class beside other small ones does not stop the rule (shuttle's rarest
#: classes hold no held-out row, its stumps chosen there gave 0.12 % test error, linear
#: columns 2.43).
MIN_HELD_CLASS_ROWS = 50
#: ... and where the held-out share holds fewer than :data:`MIN_HELD_CLASS_ROWS` rows of
#: the rarer classes but all the rows hold that many, cross-fitting (every row held out
#: once) up to this many rows: its six fits cost what one fit of six times the rows does.
#: On ``make_classification``'s two classes of 3 % (4,000 training rows, about 13
#: positives held out) the 50 rounds of linear columns gave the majority's error (3.30 %,
#: AUC 0.58); cross-fitted, anchors chosen, 2.97 % (AUC 0.85). Above it, 50 rounds.
RARE_CROSS_FIT_ROWS = 100_000
#: ``l2="auto"``: ``L2_FACTOR`` times the mean squared norm of a scaled row over the rows.
L2_FACTOR = 0.05
#: ``l2="auto"`` with held-out rows: the multiples of that penalty the kept columns are
#: fitted at (the greedy path runs at the first).
AUTO_L2_RANGE = (1.0, 0.01)
#: ``n_rounds="auto"``: the kept round's columns are fitted again, in at most this many
#: times ``refit_iter`` iterations.
POLISH_ITER_RATIO = 30
#: ``max_rounds`` of a path that runs until the held-out loss stops improving.
UNTIL_HELD_OUT = np.iinfo(np.int64).max
#: Mixes the seed into the hash that picks the held-out rows.
VALIDATION_SALT = 0x5EA2_B0057_0FF


@dataclass(frozen=True)
class ShareBoostConfig:
    """Hyper-parameters of :func:`fit` (see ``ShareBoostClassifier`` for their meaning)."""

    n_rounds: int | str
    features: str
    l2: float | str
    refit_iter: int
    n_bins: int
    n_centres: int
    n_radii: int
    max_coverage: float
    tol: float
    validation_fraction: float | None = None
    spread_tails: bool = False
    #: Anchors: the soft gates' ramp width as a fraction of ``r^2``; 0: hard gates.
    gate_width: float = 0.0
    #: The classes' total sample weights before ``class_weight``'s factors (rows), for
    #: :data:`MIN_HELD_CLASS_ROWS`; None: not known, the held-out rows are counted
    #: whatever their classes.
    class_shares: tuple[float, ...] | None = None


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
        Data passes: the objective evaluations, and with held-out rows one more that
        tallies them at the model returned.
    gradient_norm : float
        Largest gradient entry there.
    converged : bool
        Whether L-BFGS stopped by its own rule (gradient below ``tol``, or no descent step
        left) rather than at ``refit_iter`` iterations.
    held_out_loss, held_out_error : float or None
        Mean loss (eq. 3) and weighted error on the held-out rows there (None without).
    held_out_weight : float
        Weight of the held-out rows (0 without).
    held_out_temperature : TemperatureSums or None
        The held-out rows' class scores at the model returned, summed for the temperature
        of the class probabilities (asked for, and rows held out, only).
    """

    coef: np.ndarray
    intercept: np.ndarray
    value: float
    train_error: float
    n_eval: int
    gradient_norm: float
    converged: bool
    held_out_loss: float | None = None
    held_out_error: float | None = None
    held_out_weight: float = 0.0
    held_out_temperature: TemperatureSums | None = None


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
        Objective and weighted training error after rounds ``0 .. T_run`` (with held-out
        rows, rounds past the kept ``T`` included).
    passes : tuple of int
        Data passes after rounds ``0 .. T_run``.
    converged : bool
        Whether the kept round's corrective step stopped by its own rule, not at
        ``refit_iter``.
    iteration_cap : int
        The L-BFGS iterations that step could take: ``refit_iter``, or
        :data:`POLISH_ITER_RATIO` times it where the kept columns were fitted again.
    gradient_norm : float
        Largest gradient entry at the end of the kept round's corrective step.
    l2 : float
        The penalty used (``l2="auto"`` resolved).
    validation : dict or None
        ``n_rounds="auto"`` with held-out rows: ``held_out_weight``, ``held_out_loss`` and
        ``held_out_error`` after rounds ``0 .. T_run`` of the chosen path, ``best_round``,
        and ``l2_candidates`` with the kept columns' ``l2_held_out_loss`` at each;
        None otherwise.
    feature_transform : TailTransform or None
        The map of crowded features the rows were read through (``spread_tails``).
    proba_scale : float
        The temperature ``s`` of the class probabilities ``softmax(s f)``
        (:func:`probability_scale`).
    proba_rows : {"held-out", "training"}
        The rows ``proba_scale`` was chosen on.
    column_means : ndarray of shape (d,) or None
        Every column's weighted mean over the training rows of positive weight (None:
        not known).
    anchor_metric : dict or None
        Anchors: the choice of their metric (:meth:`AnchorMetric.info`); None otherwise.
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
    iteration_cap: int = 0
    l2: float = 0.0
    validation: dict[str, Any] | None = None
    feature_transform: TailTransform | None = None
    proba_scale: float = 1.0
    proba_rows: str = "training"
    column_means: np.ndarray | None = None
    anchor_metric: dict[str, Any] | None = None

    @property
    def n_iter(self) -> int:
        """Candidates selected (one a round; with ``n_rounds="auto"`` a round may add
        several, :data:`COLUMN_GROWTH`)."""
        return int(self.selected.shape[0])


def make_family(summary: WeightedSummary, dataset: Dataset, runner: Any,
                config: ShareBoostConfig, seed: int
                ) -> tuple[Family, int, AnchorMetric | None]:
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
    metric : AnchorMetric or None
        Anchors: their metric and how it was chosen (:func:`anchor_metric`); None otherwise.
    """
    largest = summary.largest
    if config.features == "linear":
        return LinearColumns.of_range(summary.minimum, summary.maximum, largest,
                                      shift=not dataset.is_sparse), 0, None
    if config.features == "stumps":
        thresholds = summary.quantiles(np.arange(1, config.n_bins) / config.n_bins)
        return StumpColumns(np.ascontiguousarray(thresholds, dtype=np.float32)), 0, None
    n_centres = min(int(config.n_centres), summary.n_rows)
    chosen = anchor_metric(summary, 0 if dataset.classes is None else len(dataset.classes))
    metric = chosen.factors
    shift, piece_scale = anchor_linear_map(summary.minimum, summary.maximum)
    # clustered about the features' middles (AnchorPieces.origin: rounding), kept in the
    # space of x * metric (a constant's factor 0: the scale inf)
    scale = np.divide(1.0, metric, out=np.full(metric.shape, np.inf), where=metric > 0)
    centres = streamed_kmeans(dataset, n_centres, engine=runner, epochs=KMEANS_EPOCHS,
                              seed=seed, standardiser=Standardiser(shift, scale))
    centres = np.asarray(centres, dtype=np.float64) + shift * metric
    top = float(config.max_coverage)
    pieces = AnchorPieces.from_sample(centres, summary.sample, int(config.n_radii),
                                      piece_scale, coverage=(top / COVERAGE_RANGE, top),
                                      metric=metric, shift=shift,
                                      gate_width=float(config.gate_width))
    return AnchorColumns(pieces), KMEANS_EPOCHS + 1, chosen


def anchor_linear_map(minimum: np.ndarray, maximum: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The ``shift`` and ``scale`` of the anchor pieces' linear part: each feature moved to
    the middle of its range and divided by half its width, so that it spans ``[-1, 1]``
    whatever its units and offset (a feature moved or stretched by constants gives the
    same columns, and the penalty that ``l2="auto"`` derives from their mean square the
    same value). A constant feature takes scale 0: its column is 0 whatever the rounding
    of its value less the shift (a constant of 3e20, moved in float32 arithmetic, left
    columns so large that the corrective step's L-BFGS overflowed)."""
    low = np.asarray(minimum, dtype=np.float64)
    high = np.asarray(maximum, dtype=np.float64)
    half = 0.5 * (high - low)
    ok = np.isfinite(half) & (half > 0)
    shift = np.where(np.isfinite(low) & np.isfinite(high), 0.5 * (low + high), 0.0)
    return shift, np.where(ok, 1.0 / np.where(ok, half, 1.0), 0.0)


def spread_factors(spread: np.ndarray, band: float = SPREAD_BAND) -> np.ndarray:
    """Per-feature factors that bring every spread within ``band`` of the median spread and
    leave the spreads inside that band as they are, (d,).

    ``clip(s_f, m / band, m band) / (s_f m)``, ``m`` the median of the positive finite
    spreads taken on their logarithms (with an even count, the geometric mean of the middle
    two, so that spreads of 1 and 100 have median 10, not 50.5): a feature of spread
    ``s_f`` spreads ``clip(s_f / m, 1 / band, band)`` once multiplied by its factor.
    Features of one unit (no spread ``band`` times the median or a ``band``-th of it) are
    all divided by ``m`` alone, their spreads' ratios kept; a feature of other units is
    brought to the band's edge. A spread that is 0 or not finite (a constant) takes
    ``1 / m`` (1 where no spread is positive).

    Parameters
    ----------
    spread : ndarray of shape (d,)
    band : float
        At least 1.

    Returns
    -------
    ndarray of shape (d,), float64
    """
    s = np.asarray(spread, dtype=np.float64)
    ok = np.isfinite(s) & (s > 0)
    if not ok.any():
        return np.ones_like(s)
    m = float(np.exp(np.median(np.log(s[ok]))))
    kept = np.clip(s, m / band, m * band)
    return np.where(ok, kept / np.where(ok, s, 1.0), 1.0) / m


@dataclass(frozen=True)
class AnchorMetric:
    """The anchors' metric (:func:`anchor_metric`) and how it was chosen.

    Attributes
    ----------
    factors : ndarray of shape (d,)
        Per-feature factors of the space the distances are measured in.
    chosen : {"band", "equalised"}
        The candidate kept: spreads within :data:`SPREAD_BAND` of the median kept
        (``"band"``), or every feature divided by its spread (``"equalised"``).
    knn_error : dict of str to float, or None
        Each candidate's leave-one-out :data:`KNN_NEIGHBOURS`-nearest-neighbour error on
        the sampled rows (:func:`knn_error`); None where no check ran.
    only_right : dict of str to int, or None
        Each candidate's count of sampled rows that it alone classifies rightly (the other
        wrongly); None where no check ran.
    rows : int
        Sampled rows the check ran on (0: none ran).
    reason : str
        Why it ran or did not: ``"knn"``, ``"proportional"`` (the candidates differ by a
        constant factor: every spread the same), or ``"no labelled sample"`` (fewer than
        :data:`KNN_NEIGHBOURS` + 1 labelled rows, or one class).
    """

    factors: np.ndarray
    chosen: str
    knn_error: dict[str, float] | None
    only_right: dict[str, int] | None
    rows: int
    reason: str

    def info(self) -> dict[str, Any]:
        """The choice as a plain dict (``ShareBoostClassifier.anchor_metric_``)."""
        return {"chosen": self.chosen, "reason": self.reason,
                "knn_error": None if self.knn_error is None else dict(self.knn_error),
                "only_right": None if self.only_right is None else dict(self.only_right),
                "k": KNN_NEIGHBOURS, "rows": int(self.rows)}


def knn_misses(X: np.ndarray, codes: np.ndarray, k: int = KNN_NEIGHBOURS,
               block: int = KNN_BLOCK) -> np.ndarray:
    """Which labelled rows their ``k`` nearest other rows classify wrongly, (n,) bool.

    Each row is classified by the majority class of the ``k`` other rows nearest to it in
    Euclidean distance (leave-one-out; a tie of votes goes to the smallest class code, as
    scikit-learn's ``KNeighborsClassifier`` breaks it). The squared distances are computed
    ``block`` rows at a time (``block x n`` entries), on the rows moved to their mean.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of shape (n,), int
        Class codes, at least 0.
    k : int
        Neighbours, fewer than ``n``.
    block : int
        Rows per block of the distance table.

    Returns
    -------
    ndarray of shape (n,), bool
    """
    X = np.asarray(X, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.int64)
    n = X.shape[0]
    if not 1 <= k < n:
        raise ValueError(f"k-nearest-neighbour error needs 1 <= k < n rows, got k={k}, n={n}")
    X = X - X.mean(axis=0)
    squares = np.einsum("ij,ij->i", X, X)
    n_codes = int(codes.max()) + 1
    misses = np.zeros(n, dtype=bool)
    for start in range(0, n, int(block)):
        stop = min(start + int(block), n)
        m = stop - start
        table = squares[start:stop, None] + squares[None, :] - 2.0 * (X[start:stop] @ X.T)
        table[np.arange(m), np.arange(start, stop)] = np.inf  # leave the row itself out
        table[~np.isfinite(table)] = np.inf
        near = np.argpartition(table, k - 1, axis=1)[:, :k]
        votes = np.zeros((m, n_codes), dtype=np.int64)
        np.add.at(votes, (np.repeat(np.arange(m), k), codes[near].ravel()), 1)
        misses[start:stop] = votes.argmax(axis=1) != codes[start:stop]
    return misses


def knn_error(X: np.ndarray, codes: np.ndarray, k: int = KNN_NEIGHBOURS,
              block: int = KNN_BLOCK) -> float:
    """Leave-one-out ``k``-nearest-neighbour error of labelled rows, in ``[0, 1]``: the
    share of the rows :func:`knn_misses` classifies wrongly, each row counted once."""
    return float(np.mean(knn_misses(X, codes, k, block)))


def anchor_metric(summary: WeightedSummary, n_classes: int) -> AnchorMetric:
    """Per-feature factors of the space the anchors' distances are measured in, chosen
    between two candidates by the sampled rows' nearest neighbours.

    The features' spreads ``s_f``, each feature's interquartile range over the describe
    pass's row sample (weighted, :meth:`WeightedSummary.quantiles`); where that is 0 (a
    feature mostly at one value), its standard deviation over all rows (from the summary's
    sums; their root mean square when the sums of values are not known). The candidates,
    each multiplied by the relevance weights below:

    - ``"equalised"``: ``1 / s_f`` (1 for a constant), every feature's spread made one.

    A feature of spread 0 has a factor (either candidate's) of at most one over its
    largest absolute value, so that it is measured as at most 1 in size; one constant
    over all rows (its minimum equal to its maximum) has the factor 0, as a value it
    takes only at prediction says nothing the fit learned.
      Measured on the raw values, a feature of large units decides alone which rows a ball
      holds: on 5,000 rows of six normal features of scales 1e-4 to 1e6, labelled by a
      product of the 1e2 and 1e4 ones and a sine of the 1e-4 one, test error 20.77 %
      (five splits), 3.41 % so. The quartiles, not the standard deviation, so that a few
      far outliers (a feature with ten rows at 1e5 among normal ones) do not widen the
      feature's spread.
    - ``"band"``: :func:`spread_factors`, spreads within :data:`SPREAD_BAND` of the median
      spread kept as they are, the others brought to the band's edge (the scales set
      4.20 %: the sine's feature, at the band's lower edge, counts a hundredth of the
      product's). Divided by their spreads alike, features of one unit whose spreads
      differ because their variances do lose that difference: the low-variance, noisy
      components of a principal-component projection take as much of each distance as
      the leading ones (MNIST's 50 components, 8,000 rows, 60 hard-gated pieces:
      validation error 5.00 % on the raw components, 9.34 % divided by their interquartile
      ranges, 5.98 % so and weighted as below, 5.16 % weighted alone, as the band keeps
      them).

    Neither is better everywhere, so the data chooses: on the first :data:`KNN_ROWS` rows
    of the describe pass's sample (a uniform sample), each row is classified by its
    :data:`KNN_NEIGHBOURS` nearest other rows under each candidate (:func:`knn_misses`,
    each row counted once). The equalised spreads are kept where the rows they alone
    classify rightly, ``a``, outnumber those the band alone does, ``b``, by more than
    chance would: ``a - b > z sqrt(a + b)``, ``z`` = :data:`KNN_TIE_Z`; otherwise the band
    (a lower error within that margin counts as a tie). Nearest neighbours in a metric
    stand for the balls the metric draws around k-means's centres: rows a metric puts near
    one another should share their label. On the scales set the equalised spreads are
    kept (about 600 rows against 50 of 2,000; test error 3.41 %), on MNIST's 50
    components the band (32 against 77; 7.35 % of the rows wrong against 9.60), and on
    sets whose two errors differ by chance the band (hastie_10_2: 6.30 %, where the lower
    error alone gave 6.69). The check is skipped, and the band kept, where the candidates
    differ by a constant factor (every spread the same: the same balls), or where there
    are fewer than :data:`KNN_NEIGHBOURS` + 1 sampled rows with labels, or one class.

    Each factor is multiplied by the feature's relevance weight in ``[0.1, 1]``,
    ``MixtureSVC``'s rule (:func:`~streamlearn.solvers.mixture.relevance.relevance_weights`
    of :func:`~streamlearn.solvers.mixture.relevance.feature_relevance` on the sampled rows
    and their labels, each row counted once as there; on at most
    :data:`~streamlearn.solvers.mixture.relevance.MAX_RELEVANCE_FEATURES` features):
    unweighted, features that do not bear on the labels take as much of each distance as
    those that do (test error over five splits, within the band:
    ``make_classification``'s 4 classes in 20 features, 8 informative, 22.77 %
    unweighted, 22.23 % weighted; t(2) tails, three of six features informative, 16.37 ->
    11.68 %; Friedman-1 10.69 -> 10.27 %).

    Parameters
    ----------
    summary : WeightedSummary
        The describe pass's result (its row sample and the sampled rows' class codes).
    n_classes : int

    Returns
    -------
    AnchorMetric
    """
    d = summary.largest.shape[0]
    spread = np.zeros(d)
    if summary.sample.shape[0] > 0:
        quartiles = summary.quantiles(np.array([0.25, 0.75]))
        spread = np.nan_to_num(quartiles[:, 1] - quartiles[:, 0])
    if summary.weight > 0:
        mean_square = summary.squares / summary.weight
        if summary.total is not None:
            mean = summary.total / summary.weight
            mean_square = mean_square - mean * mean
        std = np.sqrt(np.maximum(np.nan_to_num(mean_square), 0.0))
        spread = np.where(spread > 0, spread, std)
    weights = np.ones(d)
    codes = summary.sample_codes
    labelled = codes is not None and n_classes > 1
    if labelled and 2 <= d <= MAX_RELEVANCE_FEATURES:
        weights = relevance_weights(feature_relevance(summary.sample, codes, n_classes))
    ok = np.isfinite(spread) & (spread > 0)
    band = weights * spread_factors(spread)
    equalised = weights / np.where(ok, spread, 1.0)
    # a constant adds nothing to a distance between training rows, but squared_distances
    # expands it in float32: a constant of 1e8 measured as it is swamped every other
    # feature's terms (ShareBoost 84.5 % against 92.7 % without it), one of 3e20
    # overflowed. A feature whose spread is 0 is measured as at most 1 in size instead,
    # which leaves every distance as it is in exact arithmetic; one constant over all rows
    # not at all, so that a value it takes only at prediction moves no distance.
    flat = ~ok & (summary.largest > 0)
    cap = 1.0 / np.where(flat, summary.largest, 1.0)
    band = np.where(flat, np.minimum(band, cap), band)
    equalised = np.where(flat, np.minimum(equalised, cap), equalised)
    constant = np.asarray(summary.minimum) == np.asarray(summary.maximum)
    band = np.where(constant, 0.0, band)
    equalised = np.where(constant, 0.0, equalised)
    ratio = spread_factors(spread) * np.where(ok, spread, 1.0)
    if np.ptp(ratio) <= 1e-12 * np.max(ratio):
        return AnchorMetric(band, "band", None, None, 0, "proportional")
    rows = min(summary.sample.shape[0], KNN_ROWS)
    if (not labelled or rows <= KNN_NEIGHBOURS
            or np.unique(summary.sample_codes[:rows]).shape[0] < 2):
        return AnchorMetric(band, "band", None, None, 0, "no labelled sample")
    sample = summary.sample[:rows]
    sample_codes = summary.sample_codes[:rows]
    misses = {name: knn_misses(sample * factors, sample_codes)
              for name, factors in (("equalised", equalised), ("band", band))}
    errors = {name: float(np.mean(missed)) for name, missed in misses.items()}
    only = {"equalised": int(np.sum(misses["band"] & ~misses["equalised"])),
            "band": int(np.sum(misses["equalised"] & ~misses["band"]))}
    if only["equalised"] - only["band"] > KNN_TIE_Z * np.sqrt(only["equalised"] + only["band"]):
        return AnchorMetric(equalised, "equalised", errors, only, rows, "knn")
    return AnchorMetric(band, "band", errors, only, rows, "knn")


def corrective_step(runner: Any, dataset: Dataset, family: Family, selected: list[int],
                    coef: np.ndarray, intercept: np.ndarray, config: ShareBoostConfig,
                    l2: float, holdout: Holdout | None = None,
                    gtol: float | None = None,
                    second_moments: np.ndarray | None = None,
                    temperature: bool = False,
                    interval_moments: np.ndarray | None = None) -> CorrectiveStep:
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
    l2 : float
        The Frobenius penalty.
    holdout : Holdout, optional
        Rows left out of the loss, whose loss and error are reported.
    gtol : float, optional
        Stop when the largest gradient entry is below this; None: ``config.tol`` times
        its value at the start. For nested columns (stumps, anchors) the gradient is the
        one L-BFGS follows, with respect to the interval values
        (:mod:`~streamlearn.solvers.shareboost.nested_basis`).
    second_moments : ndarray of shape (n_candidates,), optional
        Each candidate's mean square over the training rows (columns that are not nested).
        L-BFGS then runs over the coefficients times ``sqrt(CURVATURE * m_j + 2 l2)``, the
        root of a bound on the objective's curvature along column ``j`` (and the intercept
        times ``sqrt(CURVATURE)``): a diagonal preconditioner, under which columns that
        are rarely non-zero converge with the others. The minimiser and the tolerance on
        the gradient are the same.
    temperature : bool
        With ``holdout``: the pass over the held-out rows also sums their class scores for
        the temperature of the class probabilities (``held_out_temperature``).
    interval_moments : ndarray of shape (T, q, q), optional
        Nested columns (stumps, anchors): the second-moment matrix ``M_t`` of each
        interval's base columns (:func:`interval_moments`). L-BFGS then runs over
        ``L_t^T v_t``, ``v_t`` interval ``t``'s values (each class's ``q``) and ``L_t``
        the Cholesky factor of ``CURVATURE * M_t + 2 l2 (1 + p_t) I``, ``p_t`` 1 where a
        smaller column of the group lies inside column ``t`` (the penalty on ``W`` then
        reads two interval values), and the intercept times ``sqrt(CURVATURE)``: the
        preconditioner of ``second_moments`` in the interval basis, by blocks (with
        ``q = 1``, stumps, the same diagonal), the same minimiser and the same tolerance
        on the gradient with respect to the interval values.

    Returns
    -------
    CorrectiveStep
    """
    shape = coef.shape
    k = intercept.shape[0]
    numpy = numpy_paths(dataset.n_rows)
    # the chunks' gates and codes, computed by the first evaluation for all of them
    kept = (StepTerms() if keeps_step_terms(dataset.n_rows, len(selected) + shape[2])
            else None)
    tally_at: list[tuple[np.ndarray, ObjectiveState]] = []
    chosen = np.array(selected, dtype=np.int64)
    # L-BFGS runs over the interval values of nested columns (stumps of one feature, balls
    # of one centre), the same model better conditioned (nested_basis)
    basis = family.nested_basis(chosen)
    # ... in coordinates theta where a bound on the loss's curvature is about the identity
    # (preconditioning): per selected column t, its q values are v_t = L_t^{-T} theta_t,
    # L_t L_t^T that bound's block over the column's base columns (a number for q = 1);
    # the intercept is theta / head
    factor = None  # (T, q, q) lower-triangular L_t; None: theta holds the values
    head = 1.0
    if second_moments is not None and basis is None:
        along = np.sqrt(CURVATURE * np.asarray(second_moments)[chosen] + 2.0 * l2)
        along[along == 0.0] = 1.0  # l2 = 0 and a column zero on every row: no curvature
        factor = along[:, None, None] * np.eye(shape[2])
        head = float(np.sqrt(CURVATURE))
    if interval_moments is not None and basis is not None:
        inner = (basis.prev_ >= 0).astype(np.float64)
        bound = (CURVATURE * np.asarray(interval_moments, dtype=np.float64)
                 + (2.0 * l2 * (1.0 + inner))[:, None, None] * np.eye(shape[2]))
        factor = np.linalg.cholesky(bound)
        head = float(np.sqrt(CURVATURE))
    inverse = None if factor is None else np.linalg.inv(factor)

    def values(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = theta[:-k].reshape(shape)
        if inverse is not None:
            v = np.einsum("tgf,tcg->tcf", inverse, v)
        return v, theta[-k:] / head

    def weights(theta: np.ndarray) -> np.ndarray:
        v = values(theta)[0]
        return v if basis is None else basis.weights(v)

    def measure(grad: np.ndarray) -> np.ndarray:
        """The gradient with respect to the values and the intercept."""
        if factor is None:
            return grad
        g = np.einsum("tfg,tcg->tcf", factor, grad[:-k].reshape(shape))
        return np.concatenate([g.ravel(), grad[-k:] * head])

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W = weights(theta)
        state: ObjectiveState = runner.run(
            RestrictedObjectivePass(family, chosen, W, values(theta)[1], holdout,
                                    numpy=numpy, kept=kept),
            dataset, description=f"refit {shape[0]} columns")
        total = max(state.weight, np.finfo(np.float64).tiny)
        value = state.loss / total + l2 * float(np.sum(W * W))
        grad_w = state.gradient / total + 2.0 * l2 * W
        if basis is not None:
            grad_w = basis.gradient(grad_w)
        if inverse is not None:
            grad_w = np.einsum("tgf,tcf->tcg", inverse, grad_w)
        grad = np.concatenate([grad_w.ravel(), state.intercept / total / head])
        tally_at.append((theta, state))
        del tally_at[1:-(MAX_HALVINGS + 2)]  # the start, and the last iteration's trials
        return value, grad

    v0 = coef if basis is None else basis.values(coef)
    if factor is not None:
        v0 = np.einsum("tfg,tcf->tcg", factor, v0)
    theta0 = np.concatenate([np.asarray(v0, dtype=np.float64).ravel(), intercept * head])
    start = objective(theta0)
    if gtol is None:
        gtol = float(config.tol) * float(np.max(np.abs(measure(start[1])), initial=0.0))
    result = lbfgs_minimize(objective, theta0, max_iter=int(config.refit_iter),
                            memory=LBFGS_MEMORY, gtol=gtol, start=start,
                            measure=None if factor is None else measure)
    theta = result.x
    tally = next((t for x, t in reversed(tally_at) if np.array_equal(x, theta)), None)
    if tally is None:  # the point returned fell out of the kept trials: one more pass
        objective(theta)
        tally = tally_at[-1][1]
    gradient_norm = float(np.max(np.abs(measure(result.grad)), initial=0.0))
    held_loss = held_error = held_temperature = None
    held_weight = 0.0
    if holdout is not None:  # one pass over the held-out rows, at the model returned
        held = runner.run(RestrictedObjectivePass(family, chosen, weights(theta),
                                                  values(theta)[1], holdout,
                                                  held_out=True, temperature=temperature,
                                                  numpy=numpy),
                          dataset, description=f"held-out loss, {shape[0]} columns")
        held_weight = float(held.held_weight)
        held_temperature = held.temperature
        if held_weight > 0:
            held_loss = held.held_loss / held_weight
            held_error = held.held_errors / held_weight
    return CorrectiveStep(
        coef=np.array(weights(theta), copy=True), intercept=values(theta)[1],
        value=float(result.value),
        train_error=float(tally.errors / max(tally.weight, np.finfo(np.float64).tiny)),
        n_eval=int(result.n_eval) + 1 + (holdout is not None), gradient_norm=gradient_norm,
        converged=gradient_norm <= gtol or result.n_iter < int(config.refit_iter),
        held_out_loss=held_loss, held_out_error=held_error,
        held_out_weight=held_weight, held_out_temperature=held_temperature)


def interval_moments(family: Family, selected: np.ndarray, sample: np.ndarray,
                     sample_weight: np.ndarray) -> np.ndarray | None:
    """Second-moment matrices of the interval columns of nested candidates, on a row sample.

    Column ``t`` of a group of nested columns (stumps of one feature, balls of one
    centre) less the next smaller one of its group is an interval indicator ``u_t``
    (:mod:`~streamlearn.solvers.shareboost.nested_basis`); its base columns are
    ``u_t a``, whose weighted second-moment matrix over the sample, ``E[u_t^2 a a^T]``
    (q x q; ``u_t`` is 0 or 1 for hard gates, between for soft-edged ones), is returned
    plus ``1 / m`` times the identity (``m`` the sampled rows: an interval no sampled row
    lies in counts as one, and every block is positive definite): the curvature the
    corrective step's preconditioner is scaled by (``interval_moments`` of
    :func:`corrective_step`). The whole block, not its diagonal: the base columns of an
    anchor piece, ``[x, 1]`` inside a ball, are nearly collinear there (the ball's rows
    lie near its centre, and features move together), and scaled by their diagonal alone
    the kept pieces' fit on satimage stayed ill-conditioned (condition number 1.2e5 of the
    preconditioned curvature of its 23 pieces, 5.3e4 unscaled, 2.2e3 with the blocks). It
    only conditions L-BFGS, so a sample estimate serves.

    Parameters
    ----------
    family : StumpColumns or AnchorColumns
    selected : ndarray of shape (T,), int64
    sample : ndarray of shape (m, d), float32
        Rows of positive weight (the describe pass's sample).
    sample_weight : ndarray of shape (m,)

    Returns
    -------
    ndarray of shape (T, q, q), float64, or None
        None for columns that are not nested, or without sampled rows.
    """
    selected = np.asarray(selected, dtype=np.int64)
    basis = family.nested_basis(selected)
    weight = np.asarray(sample_weight, dtype=np.float64)
    if basis is None or sample.shape[0] == 0 or not weight.sum() > 0:
        return None
    gates = np.asarray(family.gates(sample, selected), dtype=np.float64)
    inner = basis.prev_
    intervals = gates - np.where(inner >= 0, gates[:, np.maximum(inner, 0)], 0.0)
    base = np.asarray(family.base(sample), dtype=np.float64)
    q = base.shape[1]
    moments = np.empty((selected.shape[0], q, q))
    for t in range(selected.shape[0]):
        rows = np.flatnonzero(intervals[:, t])
        a = base[rows]
        moments[t] = (a.T * (weight[rows] * intervals[rows, t] ** 2)) @ a
    return moments / weight.sum() + np.eye(q) / sample.shape[0]


def auto_l2(summary: WeightedSummary, columns: LinearColumns | None = None) -> float:
    """``l2="auto"``: ``L2_FACTOR * E||z||^2 / n``.

    ``z`` is a row's linear candidate columns (``columns``; by default every feature
    divided by its largest absolute value), ``E`` the weighted mean over all training rows
    (from the summary's per-feature sums of squares and of values,
    :meth:`LinearColumns.mean_squares`) and ``n`` the training rows (their total weight:
    weights act as row counts). The loss is a mean over the rows, so this is the penalty of
    an SVM with ``C = 10 / E||z||^2`` on the summed losses: a row's largest pull on ``W``
    stays the same however wide the data is, and the penalty fades as rows accumulate.
    """
    if summary.weight <= 0:
        return 0.0
    if columns is None:
        columns = LinearColumns.of_range(summary.minimum, summary.maximum, summary.largest,
                                         shift=False)
    if columns.shift is None:  # summed as a dot product, the order the penalty always had
        scale = columns.scale
        mean_square = float(summary.squares @ (scale * scale)) / float(summary.weight)
    else:
        mean_square = float(columns.mean_squares(summary.squares, summary.total,
                                                 summary.weight).sum())
    return L2_FACTOR * mean_square / float(summary.weight)


#: ``features="auto"``: stumps are tried beside linear columns on data of at most this
#: many (dense) features; wider data only under :data:`AUTO_WIDE_STUMP_SIZE`.
AUTO_STUMP_FEATURES = 64
#: ``features="auto"`` on dense data of more than :data:`AUTO_STUMP_FEATURES` features:
#: stumps are tried beside linear columns when ``n_rows x n_classes x (n_features + 1)``
#: times the fits is at most this. The ``n_features x n_bins`` stump candidates of wide
#: data cost many times a linear round, most where the classes are many: on USPS (7,291
#: rows, 10 classes, 256 features; 1.9e7) the stump model took 215 s against 5.4 s for the
#: linear one (two shared cores), for 7.77 % test error against 8.07. Below the bound, on
#: 20,000-row subsets of adult (108 one-hot and numeric columns; 4.4e6) stumps lowered the
#: test error 14.72 -> 14.13 % in 3.3 s (linear 1.4 s), on a9a (123 binary columns;
#: 5.0e6) both gave 15.0 % (stumps 7.7 s), and on 1,400 rows of 200 features of which 20
#: inform (``make_classification``) stumps had 18.8 % error against 22.8.
AUTO_WIDE_STUMP_SIZE = 5_000_000
#: ``features="auto"``: anchors are tried as well (on the data stumps are tried on) when
#: ``n_rows x n_classes x (n_features + 1)`` is at most this. A row adds its ``k x (d + 1)``
#: gradient block to every candidate ball it lies in, in each scoring pass, and to every
#: selected piece whose ball holds it, in each corrective pass, so that product sets the
#: cost of an anchor round. On 20,000-row subsets (two shared cores) an anchor model took
#: 11-47 s where it was at most 1.4e6 (spirals, pendigits, satimage, shuttle, ijcnn1; the
#: linear and stump models 2-9 s together), and lowered the held-out loss on all five
#: (test error: spirals 20.70 -> 1.25 %, pendigits 5.37 -> 3.12, satimage 13.80 -> 11.20,
#: ijcnn1 5.21 -> 3.09; shuttle 0.12 -> 0.20); letter, 7.1e6 (16,000 rows, 26 classes),
#: took over five minutes, its held-out loss still falling one piece a round.
AUTO_ANCHOR_SIZE = 2_000_000


def auto_families(config: ShareBoostConfig, n_rows: int, n_features: int,
                  sparse: bool, n_classes: int) -> tuple[str, ...]:
    """The column families ``features="auto"`` fits, linear first.

    Linear columns and stumps, when rows are held out to compare them (``n_rounds="auto"``
    with enough rows, :func:`_holdout`, or cross-fitted, :func:`cross_fit_folds`) and
    the rows are dense with at most :data:`AUTO_STUMP_FEATURES` features; then anchors too when
    ``n_rows * n_classes * (n_features + 1)`` times the fits (1 with held-out rows,
    ``CROSS_FIT_FOLDS + 1`` cross-fitted) is at most :data:`AUTO_ANCHOR_SIZE`; else linear
    columns alone (the paper's). Cross-fitted, the stumps are held to the same bound as the
    anchors: on digits (1,258 training rows, 10 classes, 64 features; 4.9e6) the
    cross-fitted anchors took 314 s on two shared cores, the stumps 28-40 and the linear
    columns 8-9, where one fit of linear columns had taken 2.3 s. Dense rows of more
    features compare linear columns and stumps where that product is at most
    :data:`AUTO_WIDE_STUMP_SIZE`, and take linear columns alone above it (images).
    """
    single = _holdout(config, n_rows, 0) is not None
    if sparse or not (single or cross_fit_folds(config, n_rows, 0) is not None):
        return ("linear",)
    fits = 1 if single else CROSS_FIT_FOLDS + 1  # cross-fitting: a fit per fold, and one
    size = fits * int(n_rows) * int(n_classes) * (int(n_features) + 1)
    if n_features > AUTO_STUMP_FEATURES:
        return ("linear", "stumps") if size <= AUTO_WIDE_STUMP_SIZE else ("linear",)
    if size <= AUTO_ANCHOR_SIZE:
        return ("linear", "stumps", "anchors")
    return ("linear", "stumps") if single else ("linear",)


def held_out_loss(fitted: ShareBoostFit) -> float:
    """The held-out loss of a fit's final model: at its chosen ``l2`` when ``l2="auto"``
    compared candidates, else at its kept round; ``inf`` without held-out rows."""
    validation = fitted.validation
    if validation is None:
        return float("inf")
    by_l2 = validation.get("l2_held_out_loss")
    if by_l2:
        return float(min(by_l2))
    return float(validation["held_out_loss"][int(validation["best_round"])])


def _holdout(config: ShareBoostConfig, n_rows: int, seed: int) -> Holdout | None:
    """The rows held out to choose the number of rounds, or None (see :func:`fit`)."""
    if config.n_rounds != "auto":
        return None
    holdout = Holdout.for_choosing(config.validation_fraction, n_rows,
                                   seed ^ VALIDATION_SALT)
    if holdout is None or config.class_shares is None:
        return holdout
    rare = float(config.validation_fraction) * int(n_rows) * _others_share(config)
    return holdout if rare >= MIN_HELD_CLASS_ROWS else None


def _others_share(config: ShareBoostConfig) -> float:
    """The share of the weight outside the largest class (1 when it is not known)."""
    if config.class_shares is None:
        return 1.0
    shares = np.asarray(config.class_shares, dtype=np.float64)
    if not shares.sum() > 0:
        return 1.0
    return 1.0 - float(shares.max() / shares.sum())


def cross_fit_folds(config: ShareBoostConfig, n_rows: int, seed: int) -> list[Holdout] | None:
    """The folds that choose ``n_rounds="auto"`` where one held-out share is too small.

    With ``n_rounds="auto"`` and a ``validation_fraction``, when that share of ``n_rows``
    is expected to hold fewer than
    :data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` rows, or fewer than
    :data:`MIN_HELD_CLASS_ROWS` outside the largest class with at most
    :data:`RARE_CROSS_FIT_ROWS` rows in all, but ``n_rows`` holds at least
    ``MIN_VALIDATION_ROWS`` rows, and at least :data:`MIN_HELD_CLASS_ROWS` of them are
    expected outside the largest class (``config.class_shares``): the
    :data:`CROSS_FIT_FOLDS` folds of
    :meth:`~streamlearn.solvers.holdout.Holdout.folds` over the row-id hash of the single
    held-out share (the same seed), which hold out every row once. Otherwise None (one
    held-out share chooses, or none: :func:`fit`).
    """
    if config.n_rounds != "auto" or config.validation_fraction is None:
        return None
    n = int(n_rows)
    if n < MIN_VALIDATION_ROWS:
        return None
    if float(config.validation_fraction) * n >= MIN_VALIDATION_ROWS and (
            _holdout(config, n, seed) is not None or n > RARE_CROSS_FIT_ROWS):
        return None  # the share chooses, or holds too few of a rare class but fitting
        # the rows six times would cost too much
    if config.class_shares is not None and n * _others_share(config) < MIN_HELD_CLASS_ROWS:
        return None
    return Holdout.folds(CROSS_FIT_FOLDS, seed ^ VALIDATION_SALT)


@dataclass(frozen=True)
class _Prepared:
    # the rows as the columns read them (mapped by the tail transform), their summary over
    # the training rows, the candidate columns, the passes spent, the linear columns whose
    # mean squares set the penalty and precondition the corrective steps, the penalty l2_0,
    # the anchors' metric
    dataset: Dataset
    summary: WeightedSummary
    transform: TailTransform | None
    family: Family
    passes: int
    l2: float
    moments: np.ndarray | None
    metric: AnchorMetric | None = None


def _prepare(runner: Any, dataset: Dataset, config: ShareBoostConfig, seed: int, k: int,
             holdout: Holdout | None) -> _Prepared:
    """Describe the training rows (those ``holdout`` keeps), map crowded features, build
    the candidate columns and the penalty (see :func:`fit`)."""
    # stumps and anchors are built from a row sample; linear columns need one only to
    # choose the map of crowded features
    spread = (config.spread_tails and config.features == "linear"
              and not dataset.is_sparse)
    sample_rows = SAMPLE_ROWS if spread or config.features != "linear" else 0
    summary: WeightedSummary = runner.run(
        WeightedSummaryPass(dataset.n_features, sample_rows, seed, k, holdout), dataset,
        description="describe")
    if summary.n_rows == 0:
        raise LabelError("the training data has no rows of positive weight")
    passes = 1
    transform = None
    if spread:
        transform = choose_tail_transform(dataset, summary.sample, summary.minimum,
                                          summary.maximum)
    if transform is not None:  # the columns' scales and the penalty from the mapped rows
        dataset = dataset.with_feature_transform(transform)
        summary = runner.run(WeightedSummaryPass(dataset.n_features, 0, seed, k, holdout),
                             dataset, description="describe the mapped rows")
        passes += 1
    family, extra, metric = make_family(summary, dataset, runner, config, seed)
    passes += extra
    linear = family if isinstance(family, LinearColumns) else None
    if isinstance(family, AnchorColumns) and family.pieces.shift is not None:
        # the pieces' linear part: its own map of the features, whatever their units
        linear = LinearColumns(family.pieces.scale, family.pieces.shift)
    l2 = auto_l2(summary, linear) if config.l2 == "auto" else float(config.l2)
    # the kept columns' fits run preconditioned (corrective_step's second_moments): on MNIST
    # the fit at l2_0 / 100 took 201 passes without, 62 with. The path's steps, capped at
    # refit_iter iterations, keep the plain gradient: preconditioned they chose columns no
    # better and took longer on Fashion-MNIST
    moments = None
    if linear is not None and summary.weight > 0:
        moments = linear.mean_squares(summary.squares, summary.total, summary.weight)
    return _Prepared(dataset, summary, transform, family, passes, l2, moments, metric)


def _l2_factors(config: ShareBoostConfig, choosing: bool) -> tuple[float, ...]:
    """The multiples of the penalty the kept columns are fitted at."""
    return AUTO_L2_RANGE if config.l2 == "auto" and choosing else (1.0,)


def _polish(runner: Any, prep: _Prepared, config: ShareBoostConfig, kept: ShareBoostRound,
            gtol: float | None, l2: float, holdout: Holdout | None,
            intervals: np.ndarray | None) -> CorrectiveStep:
    """The kept round's columns fitted until the tolerance at penalty ``l2``, from the
    path's model; ``intervals`` is :func:`_kept_intervals` of ``prep`` and ``kept``."""
    polish = replace(config, refit_iter=int(config.refit_iter) * POLISH_ITER_RATIO)
    return corrective_step(runner, prep.dataset, prep.family, list(kept.selected),
                           kept.step.coef, kept.step.intercept, polish, l2, holdout, gtol,
                           prep.moments, temperature=holdout is not None,
                           interval_moments=intervals)


def _kept_intervals(prep: _Prepared, kept: ShareBoostRound) -> np.ndarray | None:
    """The :func:`interval_moments` of the kept round's columns, which :func:`_polish`
    runs preconditioned by at every penalty."""
    # nested columns run preconditioned in their interval basis (interval_moments):
    # 78 anchor pieces on 35,000 rows of make_classification took 280 and 264 passes
    # at the two penalties without, 96 and 99 with (held-out loss of the kept penalty
    # 0.17288 -> 0.17281); by each interval's block, satimage's 23 pieces 88 and 63
    # iterations where the diagonal stopped at the 300 cap
    return interval_moments(prep.family, kept.selected, prep.summary.sample,
                            prep.summary.sample_weight)


def _column_means(summary: WeightedSummary) -> np.ndarray | None:
    return (summary.total / summary.weight
            if summary.total is not None and summary.weight > 0 else None)


def fit(runner: Any, dataset: Dataset, config: ShareBoostConfig, seed: int,
        on_round: Callable[[ShareBoostRound], None] | None = None) -> ShareBoostFit:
    """Select shared columns greedily, re-fitting all of them each round.

    ``n_rounds`` a number: that many rounds of one column each (fewer when no column
    lowers the loss); when the last round's corrective step stopped at ``refit_iter``
    iterations and the loss is penalised (``l2 > 0``), its columns are then fitted until
    the tolerance, as ``"auto"``'s kept round is (:data:`POLISH_ITER_RATIO` times as many
    iterations at most). Unpenalised (the paper's loss), classes that a rule separates
    have no finite minimum to fit to, and the last round keeps its capped step.

    ``"auto"``: with at least
    :data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` rows expected in the
    ``validation_fraction`` share, those rows are held out; each round adds the
    best-scored columns up to :data:`COLUMN_GROWTH` of those selected (feature columns;
    one while there are fewer than 16, and one always for stumps and anchors), until
    :data:`ROUND_PATIENCE` columns (or :data:`ROUND_PATIENCE_SHARE` of the best round's
    columns, when more) have been added without lowering the held-out loss, or no
    candidate is left, and the model is the round with the lowest held-out loss. With
    fewer rows in that share but at least as many in all, cross-fitting chooses the
    round instead (:func:`cross_fit_folds`, :func:`cross_fit`). With fewer rows in all,
    or fewer than :data:`MIN_HELD_CLASS_ROWS` outside the largest class
    expected among the held-out rows (``config.class_shares``; with two classes, of the
    rarer one), :data:`FALLBACK_ROUNDS` rounds of one column on every row, at the one
    penalty of ``l2="auto"``. The temperature of the class probabilities
    then comes from :func:`probability_scale`.

    ``l2="auto"``: :func:`auto_l2`; with held-out rows, the greedy path runs at the first
    multiple :data:`AUTO_L2_RANGE` of it, the kept round's columns are then fitted until the
    tolerance at each multiple (preconditioned: linear columns by their mean squares,
    nested ones by the blocks of :func:`interval_moments` on the describe pass's row
    sample),
    and the fit with the lower held-out loss is the model. (A
    greedy path per penalty chose columns that differed little, and doubled the rounds.)

    ``config.spread_tails`` with linear columns on dense rows: the describe pass keeps a
    row sample, whose crowded features get the map of
    :class:`~streamlearn.features.tail_transform.TailTransform`; the rows are then read
    through it (a second describe pass sums the mapped rows), so a column is
    ``asinh((x - c) / s)`` scaled into ``[-1, 1]`` instead of ``x``.

    Parameters
    ----------
    runner : engine
        Runs the passes (possibly a checkpointing wrapper).
    dataset : Dataset
        Classification data with at least two classes.
    config : ShareBoostConfig
    seed : int
        Seeds the row sample, k-means and the held-out rows.
    on_round : callable, optional
        ``on_round(round)`` after every round, round 0 (intercept only) included (of the
        final fit on every row when cross-fitting).

    Returns
    -------
    ShareBoostFit
    """
    if dataset.is_sparse and config.features != "linear":
        raise TypeError(f"features={config.features!r} takes dense rows; "
                        f"{dataset.source.description} holds sparse rows, which train with "
                        "features='linear'")
    classes = dataset.classes
    k = 0 if classes is None else len(classes)
    holdout = _holdout(config, dataset.n_rows, seed)
    if holdout is None:
        folds = cross_fit_folds(config, dataset.n_rows, seed)
        if folds is not None:
            return cross_fit(runner, dataset, config, seed, folds, on_round)
    prep = _prepare(runner, dataset, config, seed, k, holdout)
    dataset, summary, family = prep.dataset, prep.summary, prep.family
    if config.n_rounds != "auto":
        max_rounds = int(config.n_rounds)
    elif holdout is None:
        max_rounds = FALLBACK_ROUNDS
    else:
        max_rounds = UNTIL_HELD_OUT  # until the held-out loss stops improving
    # candidate penalties, the held-out loss chooses
    l2_values = [prep.l2 * factor for factor in _l2_factors(config, holdout is not None)]
    path = _greedy_path(runner, dataset, family, config, k, l2_values[0], holdout, max_rounds,
                        prep.passes, on_round)
    kept = path.rounds[path.best]
    step, l2 = kept.step, path.l2
    polished = []
    if config.n_rounds == "auto" or (not step.converged and l2 > 0):  # the kept columns,
        # fitted until the tolerance at each candidate penalty, from the path's model
        intervals = _kept_intervals(prep, kept)
        polished = [_polish(runner, prep, config, kept, path.gtol, value, holdout, intervals)
                    for value in l2_values]
        best = 0
        if holdout is not None:
            best = min(range(len(l2_values)), key=lambda i: polished[i].held_out_loss)
        step, l2 = polished[best], l2_values[best]
    validation = None
    if holdout is not None:
        validation = {"cross_fitted": False,
                      "held_out_weight": step.held_out_weight,
                      "held_out_loss": [r.step.held_out_loss for r in path.rounds],
                      "held_out_error": [r.step.held_out_error for r in path.rounds],
                      "best_round": path.best,
                      "l2_candidates": list(l2_values),
                      "l2_held_out_loss": [p.held_out_loss for p in polished]}
    scale, rows = probability_scale(runner, dataset, family, kept.selected, step, holdout)
    cap = int(config.refit_iter) * (POLISH_ITER_RATIO if polished else 1)
    return ShareBoostFit(family=family, selected=kept.selected, coef=step.coef,
                         intercept=step.intercept,
                         loss=tuple(r.step.value for r in path.rounds),
                         train_error=tuple(r.step.train_error for r in path.rounds),
                         passes=tuple(r.passes for r in path.rounds),
                         converged=step.converged, gradient_norm=step.gradient_norm,
                         iteration_cap=cap,
                         l2=l2, validation=validation, feature_transform=prep.transform,
                         proba_scale=scale, proba_rows=rows,
                         column_means=_column_means(summary),
                         anchor_metric=None if prep.metric is None else prep.metric.info())


def cross_fit(runner: Any, dataset: Dataset, config: ShareBoostConfig, seed: int,
              folds: list[Holdout],
              on_round: Callable[[ShareBoostRound], None] | None = None) -> ShareBoostFit:
    """``n_rounds="auto"`` chosen by the held-out rows of every fold, then one fit on all.

    Each fold's rows are held out in turn: the rest are described (their own feature
    ranges, thresholds, centres and ``l2_0``), the greedy path runs on them as with one
    held-out share (:func:`fit`: grouped rounds, until the fold's held-out loss has not
    improved for the patience, or no candidate is left), and its held-out loss and error
    are tallied after every round. Summed over the folds (weighted by their held-out
    weight; a fold that ran out of candidates keeps its last model), up to the fewest
    rounds a fold ran by the patience rule (the folds after it stop there: their later
    rounds would not be summed), the curve's lowest round ``T`` is kept. Each
    fold's columns of round ``T`` are then fitted until the tolerance at every multiple
    :data:`AUTO_L2_RANGE` of its ``l2_0`` (``l2="auto"``; the one penalty otherwise), and
    the multiple of lowest summed held-out loss is kept. The model is one fit on every
    row: ``T`` rounds of the same grouped growth at ``l2_0`` (of all the rows), its
    columns fitted until the tolerance at the kept multiple. The temperature of the class
    probabilities is that of lowest log-loss on the folds' held-out class scores at
    their fits of the kept multiple (``proba_rows`` ``"cross-fitted"``).

    Parameters
    ----------
    runner : engine
    dataset : Dataset
    config : ShareBoostConfig
        With ``n_rounds="auto"``.
    seed : int
    folds : list of Holdout
        Disjoint held-out rows covering every row (:meth:`Holdout.folds`).
    on_round : callable, optional
        Called for the rounds of the final fit on every row.

    Returns
    -------
    ShareBoostFit
        ``validation`` holds ``cross_fitted`` (True), ``n_folds``, the summed curve
        (``held_out_weight``, ``held_out_loss`` and ``held_out_error`` per round, their
        weighted means over the folds), ``best_round``, ``l2_candidates`` (of the final
        fit) with their summed ``l2_held_out_loss``, and per fold
        ``folds_held_out_weight``, ``folds_held_out_loss`` (its rounds) and
        ``folds_l2_held_out_loss``.
    """
    classes = dataset.classes
    k = 0 if classes is None else len(classes)
    factors = _l2_factors(config, True)
    runs = []
    passes = 0
    cap = UNTIL_HELD_OUT  # rounds past the fewest a fold ran by the patience rule are not
    # summed: the later folds stop there
    for fold in folds:
        prep = _prepare(runner, dataset, config, seed, k, fold)
        path = _greedy_path(runner, prep.dataset, prep.family, config, k, prep.l2, fold,
                            cap, passes + prep.passes, None, grow=True, held_out_only=True)
        passes = path.rounds[-1].passes
        if path.rounds[0].step.held_out_weight > 0:  # a fold of no held-out weight: none
            runs.append((fold, prep, path))
            if not path.exhausted:
                cap = min(cap, len(path.rounds) - 1)
    if not runs:  # no held-out weight at all: the fit without held-out rows
        return fit(runner, dataset, replace(config, validation_fraction=None), seed, on_round)
    weights = np.array([path.rounds[0].step.held_out_weight for _, _, path in runs])
    ran = [len(path.rounds) - 1 for _, _, path in runs]
    stopped = [r for r, (_, _, path) in zip(ran, runs, strict=True) if not path.exhausted]
    last = min(stopped) if stopped else max(ran)

    def curve(name: str) -> list[float]:
        """The folds' held-out ``name`` after rounds ``0 .. last``, weighted means."""
        table = np.array([[getattr(path.rounds[min(t, r)].step, name) for t in range(last + 1)]
                          for r, (_, _, path) in zip(ran, runs, strict=True)], dtype=np.float64)
        return [float(v) for v in weights @ table / weights.sum()]

    losses = curve("held_out_loss")
    best = int(np.argmin(losses))
    lanes = []
    for fold, prep, path in runs:
        kept = path.rounds[min(best, len(path.rounds) - 1)]
        intervals = _kept_intervals(prep, kept)
        lanes.append([_polish(runner, prep, config, kept, path.gtol, prep.l2 * factor, fold,
                              intervals)
                      for factor in factors])
        passes += sum(step.n_eval for step in lanes[-1])
    lane_losses = [float(sum(w * lane[i].held_out_loss
                             for w, lane in zip(weights, lanes, strict=True)) / weights.sum())
                   for i in range(len(factors))]
    chosen = int(np.argmin(lane_losses))
    sums = None
    for lane in lanes:
        held = lane[chosen].held_out_temperature
        sums = held if sums is None else sums.merge(held)
    # the final model: every row, the chosen rounds and penalty
    prep = _prepare(runner, dataset, config, seed, k, None)
    path = _greedy_path(runner, prep.dataset, prep.family, config, k, prep.l2, None, best,
                        passes + prep.passes, on_round, grow=True)
    kept = path.rounds[-1]
    step = _polish(runner, prep, config, kept, path.gtol, prep.l2 * factors[chosen], None,
                   _kept_intervals(prep, kept))
    if sums is not None and sums.total_weight > 0:
        scale, rows = best_temperature(sums.losses(smoothed=False)), "cross-fitted"
    else:
        scale, rows = probability_scale(runner, prep.dataset, prep.family, kept.selected,
                                        step, None)
    validation = {"cross_fitted": True, "n_folds": len(folds),
                  "held_out_weight": float(weights.sum()),
                  "held_out_loss": losses, "held_out_error": curve("held_out_error"),
                  "best_round": best,
                  "l2_candidates": [prep.l2 * factor for factor in factors],
                  "l2_held_out_loss": lane_losses,
                  "folds_held_out_weight": [float(w) for w in weights],
                  "folds_held_out_loss": [[r.step.held_out_loss for r in path.rounds]
                                          for _, _, path in runs],
                  "folds_l2_held_out_loss": [[s.held_out_loss for s in lane]
                                             for lane in lanes]}
    return ShareBoostFit(family=prep.family, selected=kept.selected, coef=step.coef,
                         intercept=step.intercept,
                         loss=tuple(r.step.value for r in path.rounds),
                         train_error=tuple(r.step.train_error for r in path.rounds),
                         passes=tuple(r.passes for r in path.rounds),
                         converged=step.converged, gradient_norm=step.gradient_norm,
                         iteration_cap=int(config.refit_iter) * POLISH_ITER_RATIO,
                         l2=prep.l2 * factors[chosen], validation=validation,
                         feature_transform=prep.transform, proba_scale=scale,
                         proba_rows=rows, column_means=_column_means(prep.summary),
                         anchor_metric=None if prep.metric is None else prep.metric.info())


def probability_scale(runner: Any, dataset: Dataset, family: Family, selected: np.ndarray,
                      step: CorrectiveStep, holdout: Holdout | None) -> tuple[float, str]:
    """The temperature ``s`` of the class probabilities ``softmax(s f)``, ``f`` the class
    scores of the model ``step``, and the rows it was chosen on.

    The loss (eq. 3) is a margin loss, not the soft-max's log-loss: at its optimum the
    intercept-only model of a class of prior 0.19 predicts 0.097 (``s = 1``). ``s`` is the
    scale of lowest log-loss on the rows ``n_rounds="auto"`` held out (summed by the pass
    that tallies them at the model, no more reading), else on the training rows against
    Platt's smoothed targets (:class:`~streamlearn.solvers.calibration.TemperatureSums`;
    one more pass), then at most 1: a model's margins are wider on the rows it was fitted
    to than on new rows, and a scale above 1 sharpens what they overstate.
    """
    sums = step.held_out_temperature
    if sums is not None and sums.total_weight > 0:
        return best_temperature(sums.losses(smoothed=False)), "held-out"
    sums = runner.run(TemperaturePass(family, selected, step.coef, step.intercept, holdout,
                                      numpy_paths(dataset.n_rows)),
                      dataset, description="probability scale")
    return min(1.0, best_temperature(sums.losses())), "training"


@dataclass(frozen=True)
class _GreedyPath:
    # the rounds of one greedy selection at penalty l2 (round 0: intercept only), the index
    # of the round kept (the lowest held-out loss; the last round without held-out rows),
    # and the corrective steps' gradient tolerance (None: no column was scored); exhausted:
    # it stopped because no candidate was left (later rounds would keep its last model)
    l2: float
    rounds: list[ShareBoostRound]
    best: int
    gtol: float | None
    exhausted: bool = False


def _greedy_path(runner: Any, dataset: Dataset, family: Family, config: ShareBoostConfig,
                 k: int, l2: float, holdout: Holdout | None, max_rounds: int, passes: int,
                 on_round: Callable[[ShareBoostRound], None] | None, grow: bool = False,
                 held_out_only: bool = False) -> _GreedyPath:
    """Algorithm 1 at penalty ``l2`` for ``k`` classes: up to ``max_rounds`` rounds, from
    ``passes`` data passes so far (see :func:`fit`). Feature columns are added in growing
    groups (:data:`COLUMN_GROWTH`) when ``max_rounds`` is :data:`UNTIL_HELD_OUT` or
    ``grow``; ``held_out_only`` stops the path when ``holdout`` holds no weight."""
    q = family.n_base
    selected: list[int] = []
    rounds: list[ShareBoostRound] = []
    # the anchors' histogram bins of every chunk, the same in each round's column scores
    bins = ChunkMemo() if keeps_terms(dataset.n_rows) else None

    def record(step: CorrectiveStep) -> None:
        rounds.append(ShareBoostRound(family, np.array(selected, dtype=np.int64), step,
                                      passes))
        if on_round is not None:
            on_round(rounds[-1])

    step = corrective_step(runner, dataset, family, selected, np.zeros((0, k, q)), np.zeros(k),
                           config, l2, holdout)
    passes += step.n_eval
    record(step)
    best = 0
    gtol: float | None = None
    exhausted = False
    t = 0
    while t < max_rounds:
        if held_out_only and step.held_out_loss is None:
            break
        scores_state: ObjectiveState = runner.run(
            ColumnScorePass(family, np.array(selected, dtype=np.int64), step.coef,
                            step.intercept, holdout, numpy_paths(dataset.n_rows), bins),
            dataset, description=f"score columns {t + 1}"
            + ("" if max_rounds == UNTIL_HELD_OUT else f"/{max_rounds}"))
        passes += 1
        scores = family.column_scores(scores_state.gradient) / scores_state.weight
        scores[selected] = -np.inf
        top = float(np.max(scores))
        if not np.isfinite(top) or top <= 0.0:
            exhausted = True
            break  # every useful column is in the model
        if gtol is None:  # the steepest column of the intercept-only model sets the scale:
            # its score adds |gradient| over the classes and the group's q base columns, the
            # tolerance is on one entry, so the score counts per base column
            gtol = float(config.tol) * top / q
        # ties (columns equal on the training rows, whose sums differ only by the rounding
        # of the row order) go to the lowest candidate index
        first = int(np.flatnonzero(scores >= top * (1.0 - SCORE_TIE_RTOL))[0])
        added = [first]
        if (grow or max_rounds == UNTIL_HELD_OUT) and isinstance(family, LinearColumns):
            group = max(1, int(COLUMN_GROWTH * len(selected)))
            scores[first] = -np.inf
            ranked = np.argsort(-scores, kind="stable")[:group - 1]
            added += [int(c) for c in ranked if np.isfinite(scores[c]) and scores[c] > 0.0]
        selected.extend(added)
        coef = np.concatenate([step.coef, np.zeros((len(added), k, q))])
        step = corrective_step(runner, dataset, family, selected, coef, step.intercept, config,
                               l2, holdout, gtol)
        passes += step.n_eval
        record(step)
        t += 1
        if step.held_out_loss is None:
            best = t
            continue
        best_loss = rounds[best].step.held_out_loss
        assert best_loss is not None
        if step.held_out_loss < best_loss:
            best = t
            continue
        kept = len(rounds[best].selected)
        if len(selected) - kept >= max(ROUND_PATIENCE, int(ROUND_PATIENCE_SHARE * kept)):
            break
    return _GreedyPath(l2, rounds, best, gtol, exhausted)
