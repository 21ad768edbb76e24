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
whatever the number of rows, and every pass is a pure reduction. Within one corrective
step, whose evaluations read the same columns of the same rows, the anchors' gates of each
chunk are computed once and kept where they take at most 128 MiB (4 bytes a row for each
selected column, its base columns, its class and its weight), or the data has at most
4,096 rows: the same sums, a third less time on a fit of 353 anchors over 8,000 rows.

The loss is eq. 3, ``log sum_c exp(1[c != y] - s_y + s_c)``, averaged over the (weighted)
rows, plus ``l2 ||W||_F^2`` (Sec. 2.1). Candidate columns come in three families:

- ``"linear"``: the raw features, scaled to ``[-1, 1]`` by their largest absolute value;
- ``"stumps"``: ``1[x_f <= theta]`` for ``n_bins - 1`` quantile thresholds per feature
  (Sec. 3.1): one histogram pass scores every threshold of every feature;
- ``"anchors"``: piecewise-linear pieces ``1[||x - v|| < r] [x, 1]`` (Sec. 3.2, App. A.2):
  centres from streamed k-means, radii from distance quantiles, one piece (``d + 1``
  columns) selected per round by the sum of its columns' norms. Distances are measured on
  the features with their spreads kept within a factor 10 of the median spread, or
  divided by their spreads where that gives the sampled rows clearly fewer
  nearest-neighbour errors, and weighted by their relevance to the labels (see
  ``n_centres``). ``gate="soft"`` gives the pieces soft edges (see ``gate``); the default
  hard balls are the paper's.

Every round's training (and optional validation) error is recorded in ``path_``: the whole
sparsity path comes from one run.

The defaults choose the model's size and penalty from the data: ``n_rounds="auto"`` holds
out a share of the rows and keeps the round of lowest held-out loss (on fewer rows, every
row in turn, by five folds), ``l2="auto"`` scales the penalty with the rows' squared norm
over their number and lets the held-out rows pick it or a hundredth of it (see the
parameters). ``n_rounds=T`` with ``l2=0`` is the paper's
algorithm as written. The algorithm lives in :mod:`streamlearn.solvers.shareboost`
(its candidate families, passes and driver stay importable from here).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from streamlearn.data import Dataset
from streamlearn.engine import evaluate
from streamlearn.engine.checkpoint import DEFAULT_EVERY, CheckpointedRunner
from streamlearn.errors import LabelError
from streamlearn.models.base import (
    DENSE_BLOCK_ROWS,
    ClassifierScore,
    NotOnline,
    StreamEstimator,
    classification_dataset,
    has_named_features,
    hashing_of,
    over_dask_blocks,
    record_categories,
    sparse_rows_of,
    storable_classes,
)
from streamlearn.models.class_weight import CLASS_WEIGHT_CONSTRAINT, class_counts
from streamlearn.solvers.calibration import temperature_proba
from streamlearn.solvers.shareboost import driver
from streamlearn.solvers.shareboost.columns import (
    FEATURES,
    AnchorColumns,
    Family,
    LinearColumns,
    StumpColumns,
)
from streamlearn.solvers.shareboost.driver import (
    COVERAGE_RANGE,
    KMEANS_EPOCHS,
    LBFGS_MEMORY,
    SAMPLE_ROWS,
    SCORE_TIE_RTOL,
    CorrectiveStep,
    ShareBoostConfig,
    ShareBoostFit,
    ShareBoostRound,
)
from streamlearn.solvers.shareboost.kernels import decision_chunk
from streamlearn.solvers.shareboost.passes import (
    ColumnScorePass,
    ObjectiveState,
    RestrictedObjectivePass,
    WeightedSummary,
    WeightedSummaryPass,
    WeightedSummaryState,
)
from streamlearn.warning_origin import caller_stacklevel

__all__ = [
    "COVERAGE_RANGE",
    "FEATURES",
    "KMEANS_EPOCHS",
    "LBFGS_MEMORY",
    "SAMPLE_ROWS",
    "SCORE_TIE_RTOL",
    "AnchorColumns",
    "ColumnScorePass",
    "CorrectiveStep",
    "Family",
    "LinearColumns",
    "ObjectiveState",
    "RestrictedObjectivePass",
    "ShareBoostClassifier",
    "StumpColumns",
    "WeightedSummary",
    "WeightedSummaryPass",
    "WeightedSummaryState",
]


class ShareBoostClassifier(ClassifierScore, StreamEstimator):
    """Multiclass classifier whose classes share a few greedily selected features.

    A categorical column of more than two categories, and at most 256
    (:data:`~streamlearn.features.category_indicators.MAX_INDICATOR_CATEGORIES`), is read
    as one indicator column per category (``category_indicators_``, built in the stream
    from the column's codes): its codes name categories in sorted order, which means
    nothing as a number. A category unseen in fit sets none of them; in a column of two
    categories (one 0/1 column) it is read as the column's training mean
    (``two_category_means_``), not as the code 2 past both. The candidate columns
    (``selected_features_``) are built on the columns read; ``n_features_in_``,
    ``feature_names_in_``, ``feature_importances_`` and ``used_features_`` are those of
    the given columns. A column of more categories keeps its codes, and ``fit`` warns.

    Parameters
    ----------
    n_rounds : int or "auto"
        Rounds ``T``, one selected column (or anchor piece) each. ``"auto"``: hold out
        ``validation_fraction`` of the rows (by a hash of the row id) and add columns, each
        round the best-scored ones up to an eighth of those already selected (one a round
        below 16, and always for stumps and anchors; the paper's group variant, Sec. 2.1,
        which keeps the number of rounds small on wide data), until
        ``max(10, T_best / 4)`` columns added in a row have not lowered the held-out loss
        (``T_best`` the columns of the best round so far), or no candidate is left; the
        model is the round of lowest held-out loss
        (``validation_`` has the curve). With fewer than 200 rows expected in that share,
        or fewer than 50 outside the largest class (as below) with at most 100,000 rows,
        but at least 200 rows and 50 outside the largest class in all, cross-fitting:
        the rows are split into 5 folds by the same hash (fold ``j`` the keys in
        ``[j / 5, (j + 1) / 5)`` of their range), each fold is held out in turn
        while the rest run the rounds as above, and the round of lowest held-out loss
        summed over the folds (up to the fewest rounds a fold ran by that rule) is kept;
        the model is then fitted on every row with that many rounds (``validation_`` says
        so; on 450 rows of ``make_classification``, 3 classes, test
        accuracy 0.75 with 50 rounds of linear columns, 0.82 cross-fitted, which chose
        anchors; two classes of 3 % in 4,000 rows, about 13 of them held out: 3.30 % test
        error with 50 rounds, the majority's, and 2.97 % cross-fitted). Rows outside the
        largest class count by their share of the sample weight, before
        ``class_weight``'s factors, times the rows (with two classes, the rarer one's):
        the held-out loss of a class of 0.2 % rests on a handful of its rows, and kept the
        intercept-only model. With fewer than 200 rows or 50 outside the largest class in
        all, or more than 100,000 rows and fewer than 50 of them expected in the share,
        50 rounds on every row.
    features : {"auto", "linear", "stumps", "anchors"}
        Candidate columns: the raw features, decision stumps, or piecewise-linear pieces.
        ``"auto"``: with held-out rows (``n_rounds="auto"`` and enough rows, as above,
        held out or cross-fitted) on dense data of at most 64 features, a model of linear
        columns and one of stumps, and one of anchors when ``rows x classes x (features +
        1)`` times the fits (1 held out, 6 cross-fitted: five folds and the final fit) is
        at most 2,000,000 (:data:`~streamlearn.solvers.shareboost.driver.AUTO_ANCHOR_SIZE`:
        the anchors' cost per round grows with it), are fitted on the same split (the same
        folds) and the one of lower held-out loss (summed over the folds) is kept
        (``features_`` says which; a fit of two or three models, the anchors' much the
        dearest; cross-fitted, each six fits, and the stumps only under the anchors'
        bound). Dense data of more features compares linear columns and stumps where that
        product is at most 5,000,000
        (:data:`~streamlearn.solvers.shareboost.driver.AUTO_WIDE_STUMP_SIZE`: a stump
        round of many features and classes costs many times a linear one). Otherwise,
        and on wide data such as images, linear columns (the paper's).
    l2 : float or "auto"
        Frobenius regularisation ``l2 ||W||_F^2`` added to the mean loss (Sec. 2.1).
        ``"auto"``: from ``l2_0 = 0.05 E||z||^2 / n``, ``z`` a training row with each
        feature divided by its largest absolute value (for anchors: moved to the middle of
        its range and divided by half its width, as their pieces' linear part sees it;
        the mean over a row sample) and
        ``n`` the training rows (their total weight): the penalty of an SVM with
        ``C = 10 / E||z||^2`` on summed losses, so a row's largest pull on ``W`` does not
        grow with the width of the data, and the penalty fades as rows accumulate. With
        held-out rows (``n_rounds="auto"``), the columns are chosen at ``l2_0``, the kept
        ones are fitted at ``l2_0`` and at ``l2_0 / 100``, and the held-out loss chooses:
        wide data with few rows per column needs the penalty, narrow data with many rows
        loses accuracy to it. Cross-fitted, each fold's kept columns are fitted at the two
        multiples of its own ``l2_0``, the multiple of lower held-out loss summed over the
        folds is kept, and the final fit takes it times the ``l2_0`` of every row.
        Otherwise ``l2_0``.
    refit_iter : int
        L-BFGS iterations of each round's fully corrective step at most (each costs about
        one pass). With ``n_rounds="auto"``, and with a number of rounds whose last
        corrective step stopped at this cap under a penalty (``l2 > 0``), the kept round's
        columns are then fitted again until the tolerance, for at most ``30 * refit_iter``
        iterations.
    n_bins : int
        ``"stumps"``: thresholds per feature are the ``n_bins - 1`` inner quantiles.
    n_centres : int
        ``"anchors"``: candidate centres (streamed k-means). The balls' distances, and
        k-means's, are measured in one of two metrics on the features' spreads (each
        feature's interquartile range over the describe pass's row sample, its standard
        deviation where that is 0): every feature divided by its spread
        (``"equalised"``), or the features as they are where their spreads lie within a
        factor :data:`~streamlearn.solvers.shareboost.driver.SPREAD_BAND` (10) of their
        median spread and a feature whose spread lies past that band scaled to the band's
        edge (``"band"``, :func:`~streamlearn.solvers.shareboost.driver.spread_factors`);
        each then multiplied by its relevance weight in ``[0.1, 1]``, as ``MixtureSVC``
        weighs its features (from the sampled rows' labels, on at most 1,024 features). The
        band is kept unless up to 2,000 of the sampled rows have a lower leave-one-out
        5-nearest-neighbour error with the spreads equalised by more than chance would
        give (two standard deviations of a sign test on the rows the two classify
        differently; :func:`~streamlearn.solvers.shareboost.driver.anchor_metric`,
        ``anchor_metric_`` has both errors): a feature of large units does not alone
        decide which rows a ball holds, the band keeps the ratios of the spreads of one
        unit's features (the low-variance components of a principal-component
        projection are not magnified to the leading ones' spread) where that keeps like
        rows together, a few far outliers do not widen a feature's spread, and features
        that do not bear on the labels do not split the balls as much as those that do.
    n_radii : int
        ``"anchors"``: candidate radii per centre (distance quantiles).
    max_coverage : float
        ``"anchors"``: fraction of the rows inside a centre's largest ball; the radii hold
        geometrically spaced fractions from ``max_coverage / 60`` up to it. A round's cost
        grows with it (every row inside a centre's largest ball is one scatter-add).
    gate : {"hard", "soft"}
        ``"anchors"`` (and the anchor model of ``features="auto"``): a piece's gate.
        ``"hard"``, the paper's: the ball's indicator ``1[||x - v||^2 < r^2]``.
        ``"soft"``: linear in the squared distance over a ramp of width ``w r^2``
        (``w = gate_width``) centred on the ball's edge,
        ``clip((r^2 (1 + w / 2) - ||x - v||^2) / (w r^2), 0, 1)`` (1 well inside, 1/2 on
        the edge, 0 beyond ``r^2 (1 + w / 2)``;
        :func:`~streamlearn.features.anchors.soft_gates`), so that neighbouring pieces'
        linear functions join without a step. The same float64 arithmetic on the same
        float32 distances in the corrective steps, the final fit and prediction.
        Candidates are scored exactly by their soft gates, every radius of a centre from
        one histogram pass as for hard gates: its bins end at the ramps' ends and also sum
        the rows' squared distances (twice the scatter-adds, and the rows out to the
        largest ramp's end, ``1 + w / 2`` times the largest ball's ``r^2``).
    gate_width : float
        ``gate="soft"``: the ramp's width ``w`` as a fraction of ``r^2``, in ``(0, 2]``
        (at 2 the ramp starts at the centre). Ignored for hard gates.
    tol : float
        A corrective step stops when its largest gradient entry is below ``tol`` times
        the largest column score of the first round (the steepest column of the
        intercept-only model; before it, ``tol`` times the step's first gradient), so the
        rule does not depend on the units of the loss. For anchors the score of a piece
        is divided by its ``d + 1`` columns: it adds the gradient over all of them, the
        rule looks at one entry. When the kept round's step (with
        ``n_rounds="auto"``: its final fit) reaches its iteration cap first, ``fit`` warns
        with a ``ConvergenceWarning``. A number ``n_rounds`` is the model's size, not a
        stopping cap: selection also stops early when no column lowers the loss.
    validation_fraction : float or None
        Share of the rows held out to choose ``n_rounds="auto"`` (ignored for a number);
        where it would hold fewer than 200 rows, five folds that hold out every row once
        choose instead (see ``n_rounds``). None trains on every row, with 50 rounds, as do
        fewer than 200 rows in all.
    spread_tails : bool
        ``features="linear"`` on dense rows: a feature whose rows crowd into a small part
        of its range (a heavy tail, far outliers) enters as ``asinh((x - c) / s)``, by the
        rule of :mod:`~streamlearn.features.tail_transform` on a row sample of the
        describe pass (``feature_transform_``; one more pass when a feature is mapped).
        Every method takes the original values.
    class_weight : dict, "balanced" or None
        Factors on the weights of each class's rows (label -> factor), or ``"balanced"``,
        as scikit-learn's classifiers take them (:mod:`~streamlearn.models.class_weight`
        states the rules); ``class_weight_`` holds the factors used.
    chunk_rows : int, optional
        Rows per chunk for data opened by ``fit``.
    engine : engine, optional
        Runs the passes (``None``, ``"local"``, ``"dask"`` or an engine object); a
        ``LocalEngine`` (with ``chunk_rows`` and ``progress``) by default.
    random_state : int
        Seeds the row sample and k-means.
    progress : bool, optional
        Show a progress bar over each pass of the default local engine.

    Notes
    -----
    Sample weights act as row counts: a row of weight 0 is ignored (also by the feature
    scales and stump thresholds) and a row of integer weight ``w`` counts as ``w`` copies.
    Exception: the anchors' candidate centres and radii (k-means seeded from a uniform row
    sample, distance quantiles over that sample) count a weighted row once.

    There is no ``partial_fit``: every round needs a full pass over all rows (its
    column scores and corrective step are sums over the whole training set), so the model
    cannot be updated from one batch at a time. To train on data larger than memory, give
    ``fit`` a :class:`~streamlearn.data.Dataset` (or a path), which is streamed chunk by
    chunk.

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
    n_iter_ : int
        Columns (or anchor pieces) selected: ``T`` or fewer.
    column_coef_ : ndarray of shape (k, T * q)
        ``W`` restricted to the selected columns, in selection order (``q = 1``, or
        ``d + 1`` columns per anchor piece). There is no ``coef_``: a selected column
        is not a feature (``feature_importances_`` ranks the features).
    intercept_ : ndarray of shape (k,)
    selected_features_ : ndarray of shape (T,), int64
        Selected candidates in selection order: the feature index (``"linear"``),
        ``feature * n_thresholds + bin`` (``"stumps"``), ``centre * n_radii + radius``
        (``"anchors"``).
    path_ : dict of lists
        Of the kept family, after round ``t = 0, 1, ...`` (round 0: intercept only;
        with ``n_rounds="auto"`` also the rounds run past the kept one; cross-fitted, of
        the final fit on every row): ``n_selected``,
        ``loss`` (training objective), ``train_error``, ``validation_error`` (None
        without validation data), ``held_out_loss`` and ``held_out_error`` (None without
        held-out rows), ``passes`` (data passes so far). Each round's values are of its
        corrective step; the model is the kept round's columns fitted again until the
        tolerance (with ``n_rounds="auto"``, and with a number where the last step
        stopped at ``refit_iter`` and ``l2 > 0``), so it can differ a little from its
        round's entries.
    l2_ : float
        The penalty used (``l2="auto"`` resolved).
    validation_ : dict or None
        ``n_rounds="auto"`` with held-out rows: ``cross_fitted`` (False),
        ``held_out_weight``, the held-out ``held_out_loss`` and ``held_out_error`` after
        every round run, ``best_round`` (the kept round; ``path_["n_selected"]`` has its
        columns), ``l2_candidates`` and their ``l2_held_out_loss``. Cross-fitted:
        ``cross_fitted`` (True), ``n_folds``, the same keys with the folds' held-out
        losses and errors summed (their weighted means; ``held_out_weight`` their total
        weight; ``l2_candidates`` the penalties of the final fit), and per fold
        ``folds_held_out_weight``, ``folds_held_out_loss`` (after each round it ran) and
        ``folds_l2_held_out_loss``. None otherwise.
    family_ : LinearColumns, StumpColumns or AnchorColumns
        The candidate columns.
    features_ : str
        Their family (``features="auto"`` resolved).
    families_held_out_loss_ : dict or None
        ``features="auto"`` that compared families: each one's held-out loss (that of its
        final model; cross-fitted, the folds' summed); None otherwise.
    anchor_metric_ : dict
        Where anchors were fitted (kept or compared by ``features="auto"``), how their
        metric was chosen (:func:`~streamlearn.solvers.shareboost.driver.anchor_metric`;
        of the fit on every row when cross-fitted): ``chosen`` (``"band"`` or
        ``"equalised"``), ``reason`` (``"knn"``, or why no check ran: ``"proportional"``,
        ``"no labelled sample"``), ``knn_error`` (each candidate's leave-one-out
        nearest-neighbour error on the sampled rows), ``only_right`` (each candidate's
        count of those rows it alone classifies rightly; both None where no check ran),
        ``k`` and ``rows`` (of the check). Absent where no anchors were fitted.
    feature_transform_ : TailTransform
        ``spread_tails``: the crowded features mapped before the linear columns
        (:class:`~streamlearn.features.tail_transform.TailTransform`); absent when none was.
    proba_scale_ : float
        The temperature ``s`` of :meth:`predict_proba`'s ``softmax(s f)``.
    proba_rows_ : {"held-out", "cross-fitted", "training"}
        The rows ``proba_scale_`` was chosen on (``"cross-fitted"``: the folds' held-out
        rows, each scored by its fold's fit).
    two_category_means_ : dict of str to float
        Each categorical column of two categories (read as its 0/1 code): its training
        mean, the value a category unseen in fit is read as there; absent when there is
        no such column.
    """

    partial_fit = NotOnline("every round scores all candidate columns and re-fits the chosen "
                            "ones over the whole training set")
    _category_indicators: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "n_rounds": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "features": [StrOptions({"auto", *FEATURES})],
        "l2": [Interval(Real, 0, np.inf, closed="left"), StrOptions({"auto"})],
        "refit_iter": [Interval(Integral, 1, None, closed="left")],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "n_centres": [Interval(Integral, 1, None, closed="left")],
        "n_radii": [Interval(Integral, 1, None, closed="left")],
        "max_coverage": [Interval(Real, 0, 1, closed="right")],
        "gate": [StrOptions({"hard", "soft"})],
        "gate_width": [Interval(Real, 0, 2, closed="right")],
        "tol": [Interval(Real, 0, np.inf, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "spread_tails": ["boolean"],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "engine": "no_validation",
        "random_state": ["random_state"],
        "progress": ["boolean", None],
    }

    def __init__(self, n_rounds: int | str = "auto", features: str = "auto",
                 l2: float | str = "auto", refit_iter: int = 10, n_bins: int = 32,
                 n_centres: int = 256, n_radii: int = 8, max_coverage: float = 0.6,
                 gate: str = "hard", gate_width: float = 0.6, tol: float = 1e-3,
                 validation_fraction: float | None = 0.1,
                 spread_tails: bool = True,
                 class_weight: dict[Any, float] | str | None = None,
                 chunk_rows: int | None = None, engine: Any = None, random_state: int = 0,
                 progress: bool | None = None) -> None:
        self.n_rounds = n_rounds
        self.features = features
        self.l2 = l2
        self.refit_iter = refit_iter
        self.n_bins = n_bins
        self.n_centres = n_centres
        self.n_radii = n_radii
        self.max_coverage = max_coverage
        self.gate = gate
        self.gate_width = gate_width
        self.tol = tol
        self.validation_fraction = validation_fraction
        self.spread_tails = spread_tails
        self.class_weight = class_weight
        self.chunk_rows = chunk_rows
        self.engine = engine
        self.random_state = random_state
        self.progress = progress

    # -- training -------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto", engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY, validation: Any = None,
            callback: Callable[[int, ShareBoostClassifier], None] | None = None
            ) -> ShareBoostClassifier:
        """Select shared columns greedily, re-fitting all of them each round.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Labels of in-memory ``data``, or the target column name.
        sample_weight : array-like or str, optional
        nan_policy : "auto", "raise", "drop", "impute" or float, default "auto"
            NaN, infinite and missing values (``None``, ``pd.NA``) in the features of
            data opened here: refuse them, drop the row, or replace them by the number.
            ``"impute"`` reads NaN as missing values (``missing_values_``, one pass more:
            :mod:`streamlearn.features.missing_values`). ``"auto"`` does so for data held
            in memory with a NaN, and for a file, store or dask collection in which the
            fit finds one (it then starts again, with a warning; not with a
            ``checkpoint``): :func:`~streamlearn.models.base.resolve_nan_policy`.
            A missing target (NaN, infinity, None) drops its row under "drop" and is
            refused otherwise.
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
            predicts with its first ``t`` columns. With ``features="auto"`` comparing
            families, it follows each family's rounds in turn.

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every, validation=validation, callback=callback)

    def _config(self, features: str | None = None,
                class_shares: np.ndarray | None = None) -> ShareBoostConfig:
        return ShareBoostConfig(
            n_rounds=self.n_rounds if self.n_rounds == "auto" else int(self.n_rounds),
            features=str(features or self.features),
            l2=self.l2 if self.l2 == "auto" else float(self.l2),
            refit_iter=int(self.refit_iter), n_bins=int(self.n_bins),
            n_centres=int(self.n_centres), n_radii=int(self.n_radii),
            max_coverage=float(self.max_coverage), tol=float(self.tol),
            gate_width=float(self.gate_width) if self.gate == "soft" else 0.0,
            validation_fraction=(None if self.validation_fraction is None
                                 else float(self.validation_fraction)),
            spread_tails=bool(self.spread_tails),
            class_shares=(None if class_shares is None
                          else tuple(float(c) for c in class_shares)))

    def _run_driver(self, runner: Any, dataset: Dataset, seed: int, validation: Any = None,
                    callback: Callable[[int, ShareBoostClassifier], None] | None = None
                    ) -> ShareBoostFit:
        """Run the driver, making the estimator each round's model (``path_``, ``callback``)."""
        # held-out data is evaluated outside the checkpoints
        base_engine = runner.engine if isinstance(runner, CheckpointedRunner) else runner
        classes = dataset.classes
        if classes is None or len(classes) < 2:
            raise LabelError(f"ShareBoostClassifier needs at least two classes, got "
                             f"{[] if classes is None else list(classes)}")
        held_out = None
        if validation is not None:
            if isinstance(validation, tuple):
                held_out = classification_dataset(*validation,
                                                  accept_sparse=self._accepts_sparse)
            else:
                held_out = classification_dataset(validation, accept_sparse=self._accepts_sparse)
        self.path_: dict[str, list[Any]] = {"n_selected": [], "loss": [], "train_error": [],
                                            "validation_error": [], "held_out_loss": [],
                                            "held_out_error": [], "passes": []}

        def on_round(result: ShareBoostRound) -> None:
            """Make the estimator the round's model, extend ``path_``, call ``callback``."""
            if not hasattr(self, "family_"):
                self.classes_ = storable_classes(classes)
                self.feature_names_in_ = self._given_feature_names(dataset)
                self.n_features_in_ = len(self._feature_names)
                # validation tables are coded by the training data's categories
                record_categories(self, dataset.categories or {})
                self.family_ = result.family
            self._set_model(result.selected, result.step.coef, result.step.intercept)
            validation_error = None
            if held_out is not None:
                validation_error = 1.0 - float(
                    evaluate(self, held_out, engine=base_engine)["accuracy"])
            path = self.path_
            path["n_selected"].append(int(result.selected.shape[0]))
            path["loss"].append(result.step.value)
            path["train_error"].append(result.step.train_error)
            path["validation_error"].append(validation_error)
            path["held_out_loss"].append(result.step.held_out_loss)
            path["held_out_error"].append(result.step.held_out_error)
            path["passes"].append(int(result.passes))
            if callback is not None:
                callback(int(result.selected.shape[0]), self)

        shares = None
        if self.n_rounds == "auto" and self.validation_fraction is not None:
            # the held-out rows choose only with enough rows outside the largest class
            # (driver._holdout): one scan of the target and weight columns. Sample weights
            # count as rows, class_weight's factors do not: "balanced" gives a class of 3
            # held-out rows half the weight, not more rows
            shares = class_counts(dataset)
            factors = dataset.class_factors
            if factors is not None:
                factors = np.asarray(factors, dtype=np.float64)
                shares = np.where(factors > 0, shares / np.where(factors > 0, factors, 1.0),
                                  0.0)
        if self.features == "auto":
            families = driver.auto_families(self._config("linear", shares), dataset.n_rows,
                                            len(dataset.feature_names), dataset.is_sparse,
                                            len(classes))
        else:
            families = (str(self.features),)
        fits: list[tuple[float, str, ShareBoostFit, dict[str, list[Any]]]] = []
        for family in families:
            self.__dict__.pop("family_", None)  # on_round records the family's columns
            self.path_ = {name: [] for name in self.path_}
            fitted = driver.fit(runner, dataset, self._config(family, shares), seed,
                                on_round)
            fits.append((driver.held_out_loss(fitted), family, fitted, self.path_))
        _, family, fitted, self.path_ = min(fits, key=lambda f: f[0])
        self.features_ = family
        self.families_held_out_loss_ = ({f[1]: f[0] for f in fits} if len(fits) > 1
                                        else None)
        # the anchors' metric, whether they were kept or only compared
        self._keep("anchor_metric_", next((f[2].anchor_metric for f in fits
                                           if f[2].anchor_metric is not None), None))
        if not fitted.converged:
            warnings.warn(
                f"the corrective step of the kept round stopped at {fitted.iteration_cap} "
                "L-BFGS iterations "
                f"(refit_iter={self.refit_iter}) with its largest gradient entry "
                f"{fitted.gradient_norm:.3g} above the tolerance (tol={self.tol:g} of the "
                "first round's largest column score); increase refit_iter or tol (with "
                "l2=0, classes that a rule separates have no finite optimum: add l2)",
                ConvergenceWarning, stacklevel=caller_stacklevel())
        return fitted

    def _set_fitted(self, fitted: ShareBoostFit) -> None:
        self.family_ = fitted.family
        if fitted.feature_transform is not None:
            self.feature_transform_ = fitted.feature_transform
        else:
            self.__dict__.pop("feature_transform_", None)
        self.l2_ = float(fitted.l2)
        self.validation_ = fitted.validation
        self._set_model(fitted.selected, fitted.coef, fitted.intercept)
        self._keep("proba_scale_", float(fitted.proba_scale))
        self._keep("proba_rows_", fitted.proba_rows)
        self._keep("two_category_means_", self._two_category_means(fitted.column_means))

    def _two_category_means(self, means: np.ndarray | None) -> dict[str, float] | None:
        """The training mean of each two-category column (its 0/1 code) from the means of
        the columns read; None when there is none (or the means are not known)."""
        categories = getattr(self, "categories_", None) or {}
        if means is None or not categories:
            return None
        indicators = getattr(self, "category_indicators_", None)
        # feature_names_in_ may still name the columns read: the given ones are the map's
        names = ([str(n) for n in self._feature_names] if indicators is None
                 else list(indicators.source_names))
        source = None if indicators is None else indicators.source_columns()
        out = {}
        for name, values in categories.items():
            if len(values) == 2 and str(name) in names:
                j = names.index(str(name))
                read = j if source is None else int(np.searchsorted(source, j))
                out[str(name)] = float(means[read])
        return out or None

    def _two_category_neutral(self, name: str, column: int) -> float:
        """An unseen category of a two-category column is read as the column's training
        mean (``two_category_means_``): its score is the mean of the two categories'
        scores, weighted by their rows, through a linear column; 0.5 on a model stored
        without it."""
        return float(getattr(self, "two_category_means_", {}).get(name, 0.5))

    def _set_model(self, selected: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> None:
        self.selected_features_ = selected
        self.n_iter_ = int(selected.shape[0])
        self.coef_groups_ = np.ascontiguousarray(coef, dtype=np.float64)
        self.intercept_ = np.asarray(intercept, dtype=np.float64).copy()

    # -- prediction -----------------------------------------------------------------------
    @property
    def column_coef_(self) -> np.ndarray:
        """``W`` on the selected columns, (k, T * q), columns in selection order."""
        self._check_fitted()
        T, k, q = self.coef_groups_.shape
        return self.coef_groups_.transpose(1, 0, 2).reshape(k, T * q)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Each raw feature's share of the model's absolute weights, shape (n_features,),
        summing to 1 (0 for a feature no selected column reads).

        Per selected column, the mean over classes of its absolute weight, added up per
        raw feature: linear columns are features scaled into ``[-1, 1]``; a feature's
        stumps count as the mean absolute deviation of their sum (a step function) over
        the training rows, each of the bins between its quantile thresholds holding the
        same share of them; an anchor piece counts the weights of its linear part (its
        ball reads every feature and is not counted). A categorical column read as
        indicator columns gets the sum of theirs.
        """
        self._check_fitted()
        weights = self._importances_per_column(
            self.family_.feature_weights(self.selected_features_, self.coef_groups_))
        total = weights.sum()
        return weights / total if total > 0 else weights

    @property
    def used_features_(self) -> np.ndarray:
        """Distinct raw features the model reads (sorted; a categorical column read as
        indicator columns when it reads one of them)."""
        self._check_fitted()
        return self._given_columns(self.family_.used_features(self.selected_features_))

    @property
    def _accepts_sparse(self) -> bool:  # type: ignore[override]
        """Linear columns train on sparse rows as they are (``"auto"`` takes them there);
        stumps and anchors read every feature of every row."""
        return self.features in ("linear", "auto")

    def _class_scores(self, X: Any) -> np.ndarray:
        """Class scores ``W x + b`` on the selected columns, (n, k) float64.

        Sparse rows (a ``scipy.sparse`` matrix) are scored as they are by linear columns,
        and densified a block of rows at a time for stumps and anchors.
        """
        self._check_fitted()
        rows = sparse_rows_of(X, self.n_features_in_, type(self).__name__,
                              named=has_named_features(self),
                              hashing=hashing_of(self))
        if rows is None:
            return self._dense_scores(self._check_X(X))
        if isinstance(self.family_, LinearColumns) and not hasattr(self, "feature_transform_"):
            gates = self.family_.gates(rows, self.selected_features_)
            return decision_chunk(gates, self.family_.base(rows), self.coef_groups_,
                                  self.intercept_)
        return np.concatenate([
            self._dense_scores(rows.slice(a, min(a + DENSE_BLOCK_ROWS, rows.n_rows)).toarray())
            for a in range(0, max(rows.n_rows, 1), DENSE_BLOCK_ROWS)])

    def _dense_scores(self, values: np.ndarray) -> np.ndarray:
        values = self._indicator_rows(values)  # categorical columns as indicators
        transform = getattr(self, "feature_transform_", None)
        if transform is not None:  # the features as the columns were built on
            values = transform.apply(values)
        gates = self.family_.gates(values, self.selected_features_)
        return decision_chunk(gates, self.family_.base(values), self.coef_groups_,
                              self.intercept_)

    @over_dask_blocks
    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``W x + b`` on the selected columns.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n, k), or (n,) with two classes, float64
            Columns in the order of ``classes_``. With two classes, the margin
            ``s_1 - s_0`` of ``classes_[1]`` over ``classes_[0]`` (positive: ``classes_[1]``
            is predicted), as scikit-learn's binary classifiers return.
        """
        scores = self._class_scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    @over_dask_blocks
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``softmax(s f(x))`` of the class scores ``f`` (two classes:
        ``P(classes_[1] | x) = 1 / (1 + exp(-s d(x)))``, ``d`` :meth:`decision_function`).

        ``s`` is ``proba_scale_`` (temperature scaling): the scores minimise the paper's
        margin loss, whose optimum is not the soft-max's (an intercept-only model put 0.097
        on a class of prior 0.19), so ``s`` is the scale of lowest log-loss on the rows
        ``n_rounds="auto"`` held out (cross-fitted: on every row, scored by the fit of the
        fold that held it out), else on the training rows and then at most 1
        (``proba_rows_`` says which). One scale keeps every decision: the most probable
        class is :meth:`predict`'s. A model stored without it takes ``s = 1``, the plain
        soft-max.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, k), rows sum to 1
        """
        return temperature_proba(self._class_scores(X),
                                 float(getattr(self, "proba_scale_", 1.0)))

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """The class of the largest score (eq. 1).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
            ``classes_[argmax(decision_function(X))]``; with two classes,
            ``classes_[1]`` where ``decision_function(X) > 0`` (ties go to ``classes_[0]``).
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]

