"""Driver of super-sparse machines (paper 004): the whole fit as a sequence of passes.

:func:`fit` runs, on any engine,

1. a :class:`~.passes.FeatureSpreadPass` for the RBF similarity with ``standardize`` (every
   later pass works on the features standardised by its weighted means and standard
   deviations, so the fit does not depend on the features' units; ``gamma`` is in
   standardised units; the 0/1 indicator columns of a categorical column,
   ``Dataset.indicator_features``, are centred only) or when ``gamma="scale"`` asks for
   the spread, and a
   :class:`~.passes.TeacherScorePass` when the targets are another model's decision values;
   with ``spread_tails`` the first pass also takes each feature's range and a row sample,
   and crowded features are mapped before the standardisation
   (:func:`~streamlearn.features.tail_transform.squeezing_tails`; one more pass for the
   spread of the mapped rows); with ``weight_features`` the sample holds the rows' labels
   or targets, and each standardised feature is divided by its relevance weight
   (:func:`relevance_standardiser`);
2. the initial prototypes: a uniform row sample (of each class, for a classifier), streamed
   k-means, or given;
3. for every candidate ``p`` (largest first, each warm-started from the previous one without
   its smallest ``|beta|``), the alternation of beta-steps (:class:`~.passes.GramPass`) and
   prototype steps (:class:`~.passes.GradientPass` with an adaptive step, or one
   :class:`~.passes.MiniBatchPass` per epoch), then eq. 8's held-out loss
   (:class:`~.passes.ValidationPass`) when there are several candidates;
4. for a classifier with ``refit`` (``loss="auto"``), the squared-hinge coefficients on
   the learned prototypes, their penalty chosen on the held-out rows (:func:`hinge_refit`,
   a few :class:`~.passes.HingeGramPass` Newton passes), and with ``linear_part`` on the
   standardised features beside them (a linear part ``w . z``), kept where the held-out
   rows prefer it; for a regressor with ``linear_part``, the closed-form ridge
   coefficients of the prototypes, the features or both, chosen on the held-out rows
   (:func:`linear_ridge_refit`, one :class:`~.passes.SplitGramPass` with the features as
   columns);
5. for a classifier, the temperature scale of its probabilities (:func:`calibrate`), from
   the held-out rows' statistics of the validation pass, or one more pass over every row
   when the fit held none out.

``lam="auto"`` trains on the rows outside the holdout and chooses the penalty by the held-out
rows' squared loss (:func:`~.passes.choose_lam`) at every accepted beta-step, from the
statistics of a :class:`~.passes.SplitGramPass` (the beta-step's own pass, so choosing reads
no more data); the held-out loss's decrease at an unchanged penalty is then the stopping
rule. The last beta-step takes every row, the held-out ones included, at the penalty chosen
last.

:func:`start_online` and :func:`online_pass` are the same mini-batch steps on in-memory rows
(``partial_fit``). Each returns a :class:`SuperSparseFit`, a frozen dataclass of arrays and
numbers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from streamlearn.data import Chunk, Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.local import LocalEngine
from streamlearn.engine.moments import FeatureMomentsPass
from streamlearn.engine.passes import Together
from streamlearn.errors import DataError
from streamlearn.features.tail_transform import (
    TAIL_SAMPLE_ROWS,
    TailTransform,
    choose_tail_transform,
)
from streamlearn.solvers.calibration import (
    TEMPERATURE_SCALES,
    TemperatureSums,
    best_temperature,
)
from streamlearn.solvers.holdout import MIN_VALIDATION_ROWS, Holdout
from streamlearn.solvers.kmeans import (
    RowSamplePass,
    Standardiser,
    kmeans_plus_plus,
    lloyd,
    streamed_kmeans,
)
from streamlearn.solvers.lbfgs import two_loop
from streamlearn.solvers.mixture.relevance import (
    MAX_RELEVANCE_FEATURES,
    RELEVANCE_BINS,
    LabelledSamplePass,
    feature_relevance,
    relevance_weights,
    target_codes,
)
from streamlearn.solvers.pass_caps import pass_cap
from streamlearn.solvers.supersparse.passes import (
    AUTO_LAM_FALLBACK,
    AUTO_LAM_SLACK,
    LINE_STEPS,
    ClassSamplePass,
    FeatureSpreadPass,
    FeatureSpreadState,
    GradientPass,
    GradientState,
    GramPass,
    GramState,
    HingeGramPass,
    LossState,
    MiniBatchPass,
    MiniBatchState,
    Similarity,
    SimilarityCache,
    SplitGramPass,
    SplitGramState,
    TargetRows,
    TeacherScorePass,
    ValidationPass,
    choose_lam,
    class_quotas,
    column_statistics,
    gcv_choice,
    gcv_lam,
    hinge_curvature,
    hinge_line_objective,
    hinge_newton_point,
    hinge_objective,
    lam_scale,
    mean_abs_steps,
    objective,
    prototype_gamma,
    scale_gamma,
    solve_beta,
    spread_standardiser,
    spread_std,
    squared_loss,
    standardised_spread,
)
from streamlearn.warning_origin import caller_stacklevel

__all__ = ["DAMPING_FLOOR", "DAMPING_RELIEF", "INIT_SALT", "KMEANS_ITERATIONS",
           "LINEAR_PART_MAX_UNKNOWNS", "MIN_STEP_FRACTION", "ONLINE_PATH_LENGTH",
           "REFIT_COLUMN_SETS", "REFIT_LAM_FACTORS", "REFIT_MAX_ITER", "REFIT_MAX_ITER_SMALL",
           "REFIT_PATIENCE", "REFIT_TOL", "STEP_GROWTH", "STEP_SHRINK", "VALIDATION_SALT",
           "HingeNewton", "HingeRefit", "RidgeRefit", "SuperSparseConfig", "SuperSparseFit",
           "fit", "hinge_newton", "hinge_refit", "linear_ridge_refit", "near_constant",
           "online_pass", "online_step_size", "start_online", "target_moments"]

#: Factor applied to the prototype step after an accepted (objective-decreasing) step.
STEP_GROWTH = 1.2
#: Factor applied to the prototype step after a rejected step.
STEP_SHRINK = 0.5
#: The alternation stops when the step falls below this fraction of ``step``.
MIN_STEP_FRACTION = 1e-6
#: The batch alternation stops when its last this many trials lowered the objective by
#: less than ``tol`` times its value each, on average.
STOP_WINDOW = 5
#: Correction pairs of the L-BFGS prototype step (``solver="lbfgs"``).
PROTOTYPE_MEMORY = 5
#: Mixed into the seed for the validation rows of the choice of ``p`` and the init.
VALIDATION_SALT = 0x5AB5_5E1E_C7ED_0004
INIT_SALT = 0x1D17_0004
#: Lloyd iterations of ``init="kmeans"`` on the first ``partial_fit`` call.
KMEANS_ITERATIONS = 10
#: ``gamma="auto"`` with held-out rows: the widths tried at the initial prototypes, as
#: factors of the prototypes' own width (:func:`_choose_gamma`).
AUTO_GAMMA_FACTORS = (1.0, 1.0 / 4.0, 1.0 / 16.0, 1.0 / 64.0)
#: ... a wider RBF replaces the prototypes' own width only when its estimated test loss is
#: at most this fraction of the own width's.
AUTO_GAMMA_GAIN = 0.25
#: :func:`online_pass` keeps the objective after at most this many last ``partial_fit``
#: calls (and entries of a fit's path before them) in ``objective_path``: a model's size
#: does not grow with the number of calls.
ONLINE_PATH_LENGTH = 100
#: Targets whose weighted standard deviation is at most this fraction of their root mean
#: square are constant but for rounding (:func:`near_constant`): ``partial_fit`` learns no
#: prototype step, width or penalty from them.
CONSTANT_TARGETS_RTOL = 1e-10


@dataclass(frozen=True)
class SuperSparseConfig:
    """Hyper-parameters of one fit, already validated.

    Attributes
    ----------
    grid : tuple of int
        Candidate numbers of prototypes, largest first.
    gamma : float, "scale" or "auto"
        RBF width, or the rule that derives it from the data
        (:func:`~.passes.scale_gamma`, :func:`~.passes.prototype_gamma`).
    standardize : bool
        The RBF works on standardised features (ignored for a caller's similarity).
    similarity, similarity_gradient : callable or None
        A caller's similarity and its derivative (None: the RBF).
    lam, coef, step, max_iter, tol, solver, repulsion, repulsion_decay, tradeoff,
    validation_fraction
        As the estimators' parameters of the same names (``lam`` a number or ``"auto"``).
    init : {"random", "kmeans"} or ndarray
        ``"random"``: a uniform sample of rows; with ``class_shares``, a sample of each
        class's rows, :func:`~.passes.class_quotas` of them (at least one a class, the
        rest in proportion to its share), so that every class starts with its share of
        the pool whatever the draw.
    class_shares : tuple of float or None
        The classes' total sample weights (``target="classification"``).
    target : {"regression", "classification", "teacher"}
        Targets are the rows' values, ``+-1`` from class codes (one column per class for
        more than two, see :class:`~.passes.TargetRows`), or ``teacher``'s scores.
    sign_error : bool
        Eq. 8's validation loss: disagreement of the decisions (True; the sign, or the
        largest output with several) or absolute error.
    teacher : object, optional
        With ``decision_function``, for ``target="teacher"``.
    n_classes : int
        Classes of the labels (``target="classification"``) or of the teacher; more than
        two make a model of one output per class sharing the prototypes.
    owner : str
        Name used in messages.
    spread_tails : bool
        Map crowded features (a heavy tail, far outliers) by ``asinh`` before the
        standardisation, by :func:`~streamlearn.features.tail_transform.squeezing_tails`'s
        rule (dense rows, the RBF on standardised features, labels or targets as
        targets; a teacher's decision values are computed on the rows as they are).
    weight_features : bool
        Divide each standardised feature of dense rows of at most
        :data:`~streamlearn.solvers.mixture.relevance.MAX_RELEVANCE_FEATURES` columns by its
        relevance weight (:func:`relevance_standardiser`), so that the RBF's distances
        follow the features that bear on the labels or targets.
    n_rows : int or None
        Rows of positive weight in the training data (a row of weight 0 is no row): they
        decide whether rows are held out for ``lam="auto"`` and whether there are enough
        for the prototypes. None: every row of the dataset counts.
    refit : bool
        A classifier's ``loss="auto"``: after the prototypes, the squared-hinge refit of
        the coefficients (:func:`hinge_refit`) where the fit holds rows out and the
        coefficients are ridge ones (or where :func:`cross_fit_lane` chose its lane).
    linear_part : {"auto", True, False}
        The refit's lanes with a linear part ``z . w`` of the standardised features beside
        the prototypes' similarities (:func:`hinge_refit`; for regression, ridge
        coefficients, :func:`linear_ridge_refit`): ``"auto"`` tries it, and the
        linear part alone, where the coefficients stay at most
        :data:`LINEAR_PART_MAX_UNKNOWNS`; True always fits it; False never.
    refit_lane : (str, float) or None
        The lane of a regressor's ridge coefficients or of a classifier's squared hinge
        refit chosen beforehand (its columns, one of :data:`REFIT_COLUMN_SETS`, and its
        factor of ``lam``): the one :func:`fit` solves on every row after
        :func:`cross_fit_lane` chose it; None: chosen by the held-out rows, if any.
    """

    grid: tuple[int, ...]
    gamma: float | str
    standardize: bool
    lam: float | str
    coef: str
    step: float
    max_iter: int
    tol: float
    solver: str
    repulsion: float
    repulsion_decay: float
    init: Any
    tradeoff: float
    validation_fraction: float
    target: str
    sign_error: bool
    similarity: Callable[[np.ndarray, np.ndarray], Any] | None = None
    similarity_gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None
    teacher: Any = None
    n_classes: int = 2
    owner: str = "SuperSparse"
    spread_tails: bool = False
    weight_features: bool = False
    class_shares: tuple[float, ...] | None = None
    n_rows: int | None = None
    refit: bool = False
    linear_part: bool | str = False
    refit_lane: tuple[str, float] | None = None

    def chooses_lam(self, n_rows: int) -> bool:
        """``lam="auto"`` with enough rows to hold some out: at least
        :data:`~streamlearn.solvers.holdout.MIN_VALIDATION_ROWS` expected in
        ``validation_fraction`` of ``n_rows`` (else ``fit`` chooses the penalty once, by
        :func:`~.passes.gcv_lam` of every row at the initial prototypes, and
        ``partial_fit`` takes :data:`~.passes.AUTO_LAM_FALLBACK` times
        :func:`~.passes.lam_scale`: its first call's rows may hold one class)."""
        return (self.lam == "auto" and 0 < self.validation_fraction < 1
                and self.validation_fraction * n_rows >= MIN_VALIDATION_ROWS)

    @property
    def n_outputs(self) -> int:
        """Outputs of the model: one per class for more than two classes, else one."""
        if self.target == "regression" or self.n_classes <= 2:
            return 1
        return int(self.n_classes)

    def similarity_of(self, gamma: float) -> Similarity:
        """The similarity with RBF width ``gamma``."""
        return Similarity(float(gamma), self.similarity, self.similarity_gradient)


@dataclass(frozen=True)
class SuperSparseFit:
    """A fitted super-sparse machine.

    Attributes
    ----------
    prototypes : ndarray of shape (p, n_features), float64
    coef : ndarray of shape (p, K)
        ``beta``, a column per output.
    intercept : ndarray of shape (K,)
    objective : float
    objective_path : ndarray
        Objective after the first beta-step and after every alternation (``partial_fit``:
        after each of its last :data:`ONLINE_PATH_LENGTH` calls).
    n_iter : int
    selection_path : ndarray of shape (n_candidates, 4)
        ``p``, validation loss, eq. 8's criterion and training objective per candidate.
    gamma : float
        The RBF width used.
    shift, scale : ndarray of shape (n_features,) or None
        The standardisation ``z = (x - shift) / scale`` the prototypes and ``gamma`` live
        in (None: the raw features, for a caller's similarity).
    lam : float
        The penalty used (``lam``, or its ``"auto"`` value).
    proba_scale : float or None
        A classifier's temperature scale ``s`` of ``softmax(s f)`` (None: a regressor or
        a reduced model), see :func:`calibrate`.
    proba_rows : {"held-out", "training"} or None
        The rows ``proba_scale`` was chosen on.
    feature_transform : TailTransform or None
        The map of crowded features the rows were read through before the
        standardisation (``spread_tails``); the prototypes are in its units.
    slopes : ndarray of shape (n_features,) or None
        :func:`~.passes.mean_abs_steps` over a uniform sample of the training rows (the
        spread pass's; None where the fit took none: sparse rows, ``spread_tails=False``
        and no ``weight_features``, a caller's similarity, a reduced model), per standard
        deviation of each feature (the weighted ones' steps times their weights).
    feature_weights : ndarray of shape (n_features,) or None
        ``weight_features``: each feature's relevance weight, by which ``scale`` was
        divided (:func:`relevance_standardiser`); None where none was taken.
    memory : GramState or None
        The beta-step's statistics of every row trained on (targets as given, each row at
        the prototypes of its last step), which ``partial_fit`` adds its rows to; None for
        a reduced model.
    step_gamma : float or None
        :func:`start_online`: the prototypes' own width, which scales ``partial_fit``'s
        prototype step (:func:`online_step_size`) where ``gamma="auto"`` widened the RBF
        (None: ``gamma``).
    loss : {"squared", "squared_hinge"}
        The loss of ``coef`` and ``intercept``: the squared loss of the prototypes' fit,
        or the squared-hinge refit on them (:func:`hinge_refit`).
    refit_lam : float
        The squared-hinge refit's penalty (NaN: none kept); a regressor's, the penalty of
        :func:`linear_ridge_refit`'s kept lane (NaN: it did not run).
    refit_losses : ndarray or None
        :attr:`HingeRefit.held_out` (None: no refit ran); a regressor's,
        :attr:`RidgeRefit.losses`.
    refit_passes : int
        The refit's passes.
    linear : ndarray of shape (d, K) or None
        The linear part ``z . w`` of each output over the standardised features ``z``
        (:func:`hinge_refit`, :func:`linear_ridge_refit`; None: none kept).
    refit_lanes : str
        The design columns of the refit's kept lane: ``"prototypes"``, ``"both"`` (the
        prototypes and the linear part) or ``"linear"`` (the linear part alone, the
        prototypes' coefficients 0); ``""`` where the squared loss's coefficients stay
        (a regressor's ``"prototypes"`` where :func:`linear_ridge_refit` kept them).
    """

    prototypes: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    objective: float
    objective_path: np.ndarray
    n_iter: int
    selection_path: np.ndarray
    gamma: float
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    lam: float = float("nan")
    proba_scale: float | None = None
    proba_rows: str | None = None
    feature_transform: TailTransform | None = None
    memory: GramState | None = None
    slopes: np.ndarray | None = None
    feature_weights: np.ndarray | None = None
    step_gamma: float | None = None
    loss: str = "squared"
    refit_lam: float = float("nan")
    refit_losses: np.ndarray | None = None
    refit_passes: int = 0
    linear: np.ndarray | None = None
    refit_lanes: str = ""

    @property
    def standardiser(self) -> Standardiser | None:
        """The standardisation, or None."""
        if self.shift is None or self.scale is None:
            return None
        return Standardiser(np.asarray(self.shift, dtype=np.float64),
                            np.asarray(self.scale, dtype=np.float64))

    @property
    def n_prototypes(self) -> int:
        """``p``."""
        return int(self.prototypes.shape[0])


def fit(runner: Any, dataset: Dataset, config: SuperSparseConfig, seed: int) -> SuperSparseFit:
    """Fit prototypes and coefficients by streaming over ``dataset``.

    Parameters
    ----------
    runner : engine
        Runs the passes.
    dataset : Dataset
    config : SuperSparseConfig
    seed : int
        Seeds the initial prototypes, the validation rows and the chunk order.

    Returns
    -------
    SuperSparseFit
    """
    n_rows = dataset.n_rows if config.n_rows is None else config.n_rows
    if n_rows < 2:
        raise DataError(f"{config.owner} needs at least 2 rows of positive weight to fit, "
                        f"got {n_rows} (n_samples={dataset.n_rows})")
    if dataset.is_sparse and config.similarity is not None:
        raise TypeError(f"a similarity function takes dense rows; {dataset.source.description} "
                        "holds sparse rows, which train with the RBF similarity")
    holdout = (Holdout.fraction(config.validation_fraction, seed ^ VALIDATION_SALT)
               if len(config.grid) > 1 or config.chooses_lam(n_rows) else None)
    gamma = config.gamma
    std = None
    transform = None
    sample = None
    weights = None
    standardize = config.similarity is None and config.standardize
    if standardize or isinstance(gamma, str):
        dense = standardize and config.teacher is None and not dataset.is_sparse
        weigh = (dense and config.weight_features
                 and 2 <= dataset.n_features <= MAX_RELEVANCE_FEATURES)
        if dense and (config.spread_tails or weigh):
            dataset, transform, spread, sample, labels = _sampled_spread(
                runner, dataset, config, seed, weigh)
        else:
            spread = runner.run(FeatureSpreadPass(dataset.n_features), dataset,
                                description="feature variances")
        if standardize:  # the RBF works on standardised features; sparse rows keep their
            std = (Standardiser.identity(dataset.n_features)  # units (kmeans.SPARSE_UNITS)
                   if dataset.is_sparse
                   else spread_standardiser(spread).unscaled(dataset.indicator_features))
            if weigh:
                codes = relevance_codes(labels, None if config.target == "regression"
                                        else config.n_classes)
                std, weights = relevance_standardiser(std, spread, sample, *codes,
                                                      dataset.indicator_features)
            spread = standardised_spread(spread, std)
        if gamma == "scale":
            gamma = scale_gamma(spread)
        elif gamma == "auto":  # resolved from the initial prototypes, bounded by "scale"
            gamma = ("auto", scale_gamma(spread))
    k = config.n_classes
    if config.teacher is None:
        offset = target_offset(dataset) if config.target == "regression" else 0.0
        folds = None
        if holdout is None and _cross_fits(config, n_rows, dataset.n_features):
            config, folds = cross_fit_lane(runner, dataset, config, std, offset, seed, gamma)
        fitted = _fit_rows(runner, dataset, config,
                           TargetRows(config.target, None, holdout, False, std, k, offset),
                           TargetRows(config.target, None, holdout, True, std, k, offset),
                           seed, gamma)
        if folds is not None:
            fitted = replace(fitted, refit_losses=folds)
        slopes = None
        if sample is not None and std is not None and sample.shape[0] > 0:
            slopes = mean_abs_steps(std.apply(sample), fitted.prototypes, fitted.coef,
                                     fitted.gamma, fitted.linear)
            if weights is not None:  # per standard deviation: one is w_f standardised units
                slopes = slopes * weights
        return replace(fitted, feature_transform=transform, slopes=slopes,
                       feature_weights=weights)
    width = None if config.n_outputs == 1 else config.n_outputs
    with ExampleState(dataset.n_rows, width) as scores:
        runner.run(TeacherScorePass(config.teacher, scores), dataset,
                   description="scores of the reduced model")
        return _fit_rows(runner, dataset, config,
                         TargetRows(config.target, scores, holdout, False, std, k),
                         TargetRows(config.target, scores, holdout, True, std, k), seed, gamma)


def _cross_fits(config: SuperSparseConfig, n_rows: int, n_features: int) -> bool:
    """Whether a fit without held-out rows chooses its lane by :func:`cross_fit_lane`:
    with ridge coefficients and ``lam="auto"`` (which holds rows out where there are
    enough, :meth:`SuperSparseConfig.chooses_lam`) on at least :data:`MIN_CROSS_FIT_ROWS`
    rows, a classifier's ``loss="auto"`` (its squared hinge refit, :func:`hinge_refit`)
    and a regressor's ``linear_part="auto"`` with all its lanes
    (:func:`linear_ridge_refit`)."""
    if (config.teacher is not None or config.coef != "ridge" or config.lam != "auto"
            or n_rows < MIN_CROSS_FIT_ROWS):
        return False
    if config.target == "classification":
        return config.refit
    return (config.target == "regression" and config.linear_part == "auto"
            and refit_column_sets(config, max(config.grid), n_features) == REFIT_COLUMN_SETS)


def cross_fit_lane(runner: Any, dataset: Dataset, config: SuperSparseConfig,
                   std: Standardiser | None, offset: float, seed: int, gamma: Any
                   ) -> tuple[SuperSparseConfig, np.ndarray]:
    """The lane of a regressor's ridge coefficients (:func:`linear_ridge_refit`) or of a
    classifier's squared hinge refit (:func:`hinge_refit`) chosen by
    :data:`CROSS_FIT_FOLDS` folds of the rows, on data too small to hold rows out.

    Each fold's rows are held out of a whole fit (prototypes, ``lam`` and ``gamma`` chosen
    as the fit on every row chooses them, by generalised cross-validation), whose lanes
    they then score; the lanes' held-out mean losses are averaged over the folds, and the
    first lane within :data:`~.passes.AUTO_LAM_SLACK` of the lowest is kept, in the order
    of :data:`REFIT_COLUMN_SETS` and larger penalty first (the simplest the folds cannot
    tell from the best); a classifier keeps it only where its mean squared hinge loss is
    below ``1 - AUTO_LAM_SLACK`` times that of the squared-loss coefficients, as
    :func:`hinge_refit` keeps a lane. The rows score models whose prototypes did not learn
    from them, which a score of the training rows cannot do: the generalised
    cross-validation score of a regressor's lanes on every row favoured the prototypes
    even on a noisy linear target.

    Returns
    -------
    SuperSparseConfig
        ``config`` with ``refit_lane`` set to the kept lane's columns and factor of
        ``lam`` (a classifier that keeps its squared-loss coefficients: ``config``).
    ndarray
        The lanes' mean held-out losses (a classifier's with the squared-loss
        coefficients' first), empty where a fold held out no row.
    """
    k = config.n_classes
    losses = []
    for fold in Holdout.folds(CROSS_FIT_FOLDS, seed ^ FOLD_SALT):
        fitted = _fit_rows(runner, dataset, config,
                           TargetRows(config.target, None, fold, False, std, k, offset),
                           TargetRows(config.target, None, fold, True, std, k, offset),
                           seed, gamma, held_out_chooses=False)
        if fitted.refit_losses is None or len(fitted.refit_losses) == 0:
            return config, np.empty(0)  # a fold held out no row of positive weight
        losses.append(np.asarray(fitted.refit_losses, dtype=np.float64))
    mean = np.mean(losses, axis=0)
    sets = refit_column_sets(config, max(config.grid), dataset.n_features)
    lanes = [(columns, factor) for columns in sets for factor in REFIT_LAM_FACTORS]
    scores = mean if config.target == "regression" else mean[1:]
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        return config, mean
    best = float(finite.min())
    if config.target != "regression" and not best < (1.0 - AUTO_LAM_SLACK) * mean[0]:
        return config, mean
    lane = next(i for i in range(len(lanes)) if scores[i] <= best * (1.0 + AUTO_LAM_SLACK))
    return replace(config, refit_lane=lanes[lane]), mean


def _sampled_spread(runner: Any, dataset: Dataset, config: SuperSparseConfig, seed: int,
                    labelled: bool) -> tuple[Dataset, TailTransform | None, FeatureSpreadState,
                                             np.ndarray, np.ndarray | None]:
    """The first pass of dense rows with ``spread_tails`` or ``weight_features``: the
    dataset (read through the map of its crowded features whose standardisation squeezes
    their middle rows, with ``spread_tails``; else as it is), the map, the spread of the
    rows as read, a uniform sample of them (as read) and, when ``labelled``, the sampled
    rows' class codes or targets. One pass, two when a feature is mapped (the spread of
    the mapped rows)."""
    d = dataset.n_features
    sampler = (LabelledSamplePass(TAIL_SAMPLE_ROWS, d, seed,
                                  targets=config.target == "regression")
               if labelled else RowSamplePass(TAIL_SAMPLE_ROWS, d, seed))
    spread, moments, sampled = runner.run(
        Together(FeatureSpreadPass(d), FeatureMomentsPass(d), sampler),
        dataset, description="feature variances")
    labels = None
    if labelled:
        rows, labels = sampled
    else:
        rows = sampled.values
    sample = np.asarray(rows, dtype=np.float32)
    transform = (choose_tail_transform(dataset, sample, moments.minimum, moments.maximum,
                                       spread_std(spread))
                 if config.spread_tails else None)
    if transform is None:
        return dataset, None, spread, sample, labels
    dataset = dataset.with_feature_transform(transform)
    spread = runner.run(FeatureSpreadPass(dataset.n_features), dataset,
                        description="feature variances of the mapped rows")
    return dataset, transform, spread, transform.apply(sample), labels


def relevance_standardiser(std: Standardiser, spread: FeatureSpreadState, sample: np.ndarray,
                           codes: np.ndarray, n_classes: int, indicators: Sequence[int]
                           ) -> tuple[Standardiser, np.ndarray]:
    """``weight_features``: ``std`` with each varying feature's scale divided by its
    relevance weight, and the weights (1 for indicator and constant columns).

    The weights are ``MixtureSVC``'s (:func:`~streamlearn.solvers.mixture.relevance.
    relevance_weights` of :func:`~streamlearn.solvers.mixture.relevance.feature_relevance`
    on the sampled rows and their ``codes`` of ``n_classes``, :func:`relevance_codes`).
    A weighted feature spans ``w_f`` standard deviations of the RBF's distances, so noise
    features no longer take as much of each distance as the features that decide the
    labels: a ring in two of eight normal features, 5.50 -> 1.17 % test error (three
    70/30 splits of 4,000 rows).
    """
    weights = np.ones(std.scale.shape[0])
    plain = spread_std(spread) > 0
    plain[list(indicators)] = False
    columns = np.flatnonzero(plain)
    if columns.size >= 2 and sample.shape[0] > 1:
        weights[columns] = relevance_weights(feature_relevance(sample[:, columns], codes,
                                                               n_classes))
    return Standardiser(std.shift, std.scale / weights), weights


def relevance_codes(labels: np.ndarray, n_classes: int | None) -> tuple[np.ndarray, int]:
    """Sampled labels as the class codes :func:`relevance_standardiser` weighs by, and
    their number: class codes as they are (``n_classes`` given), or a regressor's targets
    cut at their sample quartiles (``n_classes`` None;
    :func:`~streamlearn.solvers.mixture.relevance.target_codes`)."""
    if n_classes is None:
        return target_codes(labels), RELEVANCE_BINS
    return np.asarray(labels, dtype=np.int64), int(n_classes)


#: :func:`target_offset` averages the targets of at most this many first rows.
OFFSET_ROWS = 4096


def target_offset(dataset: Dataset) -> float:
    """The weighted mean target of the first :data:`OFFSET_ROWS` rows: what a regression
    fit subtracts from every target and adds back to the intercept (``TargetRows.offset``).
    Any value near the targets' mean serves; the model is the same with any."""
    total = weight = 0.0
    for chunk in dataset.chunks(rows=(0, min(dataset.n_rows, OFFSET_ROWS)), prefetch=0):
        v = (np.ones(chunk.n_rows) if chunk.weight is None
             else np.asarray(chunk.weight, dtype=np.float64))
        total += float(v @ np.asarray(chunk.y, dtype=np.float64))
        weight += float(v.sum())
    return total / weight if weight > 0 else 0.0


def _fit_rows(runner: Any, dataset: Dataset, config: SuperSparseConfig, train: TargetRows,
              valid: TargetRows, seed: int, gamma: Any,
              held_out_chooses: bool = True) -> SuperSparseFit:
    """Eq. 8's incremental procedure over the candidates (one candidate: a plain fit).

    ``gamma`` is a number, or ``("auto", scale)``: :func:`~.passes.prototype_gamma` of
    the initial prototypes bounded by ``scale``, ``scale`` when they are not two distinct
    points. Without ``held_out_chooses`` the held-out rows only score the refit's lanes
    (a fold of :func:`cross_fit_lane`): ``lam`` and ``gamma`` are chosen as without
    held-out rows.
    """
    holdout = train.holdout
    C = _initial_prototypes(runner, dataset, config, config.grid[0], seed, train.standardiser)
    choose = (valid if holdout is not None and config.lam == "auto" and held_out_chooses
              else None)
    auto = isinstance(gamma, tuple)
    gamma = _resolve_gamma(gamma, C)
    if auto and config.lam == "auto" and (choose is not None or config.coef == "ridge"):
        gamma = _choose_gamma(runner, dataset, config, train, choose, C, gamma)
    similarity = config.similarity_of(gamma)
    scales = TEMPERATURE_SCALES if config.target == "classification" else None
    w = None
    path: list[tuple[int, float, float, float]] = []
    best: tuple[float, np.ndarray, np.ndarray, list[float], float, GramState | None,
                TemperatureSums | None, GramState] | None = None
    capped: list[int] = []  # the counts whose alternation max_iter stopped: one warning
    for p in config.grid:
        if w is not None and p < C.shape[0]:  # drop the smallest ||beta_j|| (over outputs)
            keep = np.sort(np.argsort(-np.linalg.norm(w[:-1], axis=1), kind="stable")[:p])
            C = C[keep]
            w = np.vstack([w[keep], w[-1:]])
        C, w, history, lam, every_row, stats, at_cap = _alternate(
            runner, dataset, config, train, C, similarity, p, seed, choose)
        if at_cap:
            capped.append(p)
        loss = np.nan
        criterion = 0.0
        if holdout is not None:
            tally: LossState = runner.run(
                ValidationPass(valid, C, w, similarity, config.sign_error, scales), dataset,
                description=f"validate p={p}")
            if tally.weight <= 0:
                raise DataError("no rows were held out to choose n_prototypes; use more "
                                "data or a larger validation_fraction")
            loss = tally.loss / tally.weight
            criterion = loss + config.tradeoff * p
        path.append((p, loss, criterion, history[-1]))
        if best is None or criterion < best[0]:
            best = (criterion, C.copy(), w.copy(), history, lam, every_row,
                    None if holdout is None else tally.temperature, stats)
    assert best is not None
    _warn_cap(config, capped)
    _, C, w, history, lam, every_row, held_out, stats = best
    w_train = w
    if every_row is not None:  # lam="auto": the last beta-step takes the held-out rows too
        w = solve_beta(every_row.G / every_row.weight, every_row.r / every_row.weight, lam,
                       config.coef, w)
    refit = None
    w_squared = w
    linear = False
    if config.refit and config.coef == "ridge" and train.mode == "classification":
        if holdout is not None:
            refit = hinge_refit(runner, dataset, config, train, valid, C, similarity,
                                w_train, lam, None if every_row is None else w)
        elif config.refit_lane is not None:
            refit = hinge_refit_lane(runner, dataset, config, train, C, similarity, w, lam,
                                     config.refit_lane)
        if refit is not None and refit.w is not None:
            w = refit.w
            held_out = refit.temperature
            linear = refit.linear
    ridge = None
    sets = refit_column_sets(config, C.shape[0], dataset.n_features)
    factors = REFIT_LAM_FACTORS
    if config.refit_lane is not None:  # chosen by cross_fit_lane: solved, not chosen
        sets, factors = (config.refit_lane[0],), (config.refit_lane[1],)
        solve = config.refit_lane != ("prototypes", 1.0)  # the beta-step's own
    else:
        solve = sets != ("prototypes",) and (holdout is not None or sets == ("both",))
    if train.mode == "regression" and config.coef == "ridge" and solve:
        ridge = linear_ridge_refit(runner, dataset, train, valid, C, similarity, lam, sets,
                                   every_row is not None, factors)
        if ridge.w is not None:
            w = ridge.w
            linear = ridge.linear
    proba_scale, proba_rows = None, None
    if scales is not None:
        leverage = (ridge_leverage(stats, lam) if holdout is None and config.coef == "ridge"
                    and (refit is None or refit.w is None) else None)
        proba_scale, proba_rows = calibrate(runner, dataset, train, C, w, similarity,
                                            held_out, leverage, linear)
    p = C.shape[0]
    return SuperSparseFit(
        prototypes=np.ascontiguousarray(C),
        coef=np.ascontiguousarray(w[:p]),
        intercept=np.array(w[-1]) + train.offset,
        objective=float(history[-1] if every_row is None
                        else objective(every_row, w_squared if linear or ridge is not None
                                       else w, lam, config.coef)),
        objective_path=np.asarray(history, dtype=np.float64),
        n_iter=len(history) - 1,
        selection_path=np.asarray(path, dtype=np.float64).reshape(-1, 4),
        gamma=float(gamma),
        shift=None if train.standardiser is None else train.standardiser.shift,
        scale=None if train.standardiser is None else train.standardiser.scale,
        lam=float(lam),
        proba_scale=proba_scale,
        proba_rows=proba_rows,
        memory=None if config.target == "teacher" else _offset_statistics(
            every_row if every_row is not None else stats, train.offset),
        loss="squared" if refit is None or refit.w is None else "squared_hinge",
        refit_lam=(float("nan") if refit is None else refit.lam) if ridge is None
        else ridge.lam,
        refit_losses=(None if refit is None else refit.held_out) if ridge is None
        else ridge.losses,
        refit_passes=(0 if refit is None else refit.passes) if ridge is None else 1,
        linear=np.ascontiguousarray(w[p:-1]) if linear else None,
        refit_lanes=("" if refit is None or refit.w is None else refit.lanes)
        if ridge is None else ridge.lanes,
    )


def _offset_statistics(stats: GramState, offset: float) -> GramState:
    """Beta-step statistics of targets ``t - offset`` turned into those of ``t`` (the
    constant column of ``z`` is last)."""
    if offset == 0.0:
        return stats
    sums = stats.r[-1].sum()  # sum_i v_i (t_i - offset), over the outputs
    return replace(stats, r=stats.r + offset * stats.G[:, -1:],
                   yy=stats.yy + 2.0 * offset * sums + offset ** 2 * stats.weight
                   * stats.r.shape[1])


def calibrate(runner: Any, dataset: Dataset, train: TargetRows, C: np.ndarray, w: np.ndarray,
              similarity: Similarity, held_out: TemperatureSums | None,
              leverage: np.ndarray | None = None, linear: bool = False) -> tuple[float, str]:
    """A classifier's temperature scale ``s`` of ``P(c | x) = softmax(s f(x))_c`` and the
    rows it was chosen on.

    The scale of lowest log-loss on the held-out rows (``held_out``, summed by the
    validation pass of the model kept, whose coefficients those rows did not train; no
    extra pass), else on every training row (one more pass; the fit held no rows out)
    against Platt's smoothed targets (:class:`~streamlearn.solvers.calibration.
    TemperatureSums`, which keep rows every scale separates from driving the scale to
    infinity), each row scored by its leave-one-out prediction where ``leverage`` gives
    the ridge beta-step's (:func:`ridge_leverage`; the prototypes saw every row), else by
    the final model. One scale keeps each row's decision: the most probable class is the
    one of the largest output, the sign of a single one. ``linear``: ``w`` holds a linear
    part (:func:`hinge_refit`).
    """
    if held_out is not None and held_out.total_weight > 0:
        return best_temperature(held_out.losses(smoothed=False)), "held-out"
    every = TargetRows(train.mode, train.scores, None, False, train.standardiser,
                       train.n_classes)
    tally: LossState = runner.run(
        ValidationPass(every, C, w, similarity, True, TEMPERATURE_SCALES, leverage, linear),
        dataset,
        description="probability scale")
    assert tally.temperature is not None
    return best_temperature(tally.temperature.losses()), "training"


def ridge_leverage(stats: GramState, lam: float) -> np.ndarray | None:
    """``(A + lam D)^-1 / V`` of the ridge beta-step on ``stats`` (``A = G / V``, ``D`` the
    identity on ``beta``, zero on the intercept): a row's leverage is ``v z^T`` times it
    times ``z`` (see :class:`~.passes.ValidationPass`). None when singular."""
    A = stats.G / stats.weight
    p = A.shape[0] - 1
    M = A.copy()
    M[np.arange(p), np.arange(p)] += lam
    try:
        inverse = np.linalg.inv(M)
    except np.linalg.LinAlgError:
        return None
    return inverse / stats.weight if np.isfinite(inverse).all() else None


def _resolve_gamma(gamma: Any, C: np.ndarray) -> float:
    """A number as it is; ``("auto", scale)`` from the prototypes ``C``, at most
    ``AUTO_GAMMA_LIMIT`` times ``scale`` and ``scale`` itself without two distinct ones."""
    if isinstance(gamma, tuple):
        auto = prototype_gamma(C, gamma[1])
        return float(gamma[1] if auto is None else auto)
    return float(gamma)


def _choose_gamma(runner: Any, dataset: Dataset, config: SuperSparseConfig, train: TargetRows,
                  valid: TargetRows | None, C: np.ndarray, gamma: float) -> float:
    """``gamma="auto"`` with ``lam="auto"``: the width, among :data:`AUTO_GAMMA_FACTORS`
    times the prototypes' own ``gamma``, of the lowest estimated test loss of a beta-step
    at the initial prototypes ``C``, each at its own choice of ``lam``: the held-out rows'
    squared loss (``valid``), or without held-out rows (ridge coefficients) the lowest
    generalised cross-validation score of :func:`~.passes.gcv_lam`.

    The prototypes' own width makes neighbouring prototypes barely overlap, which suits a
    boundary that curves between them; a target that changes smoothly across many
    prototypes (a linear trend, most of all) needs bumps that overlap, which the wider
    RBFs give (``exp(-gamma ||x - c||^2)`` is close to quadratic in ``x`` when ``gamma``
    is small). The wider one of the lowest loss is taken only when that loss is at most
    :data:`AUTO_GAMMA_GAIN` times the prototypes' own width's: a gap that moving the
    prototypes does not close, where a smaller one (two interleaved spirals at their
    initial prototypes) is what the prototype steps then learn away. One pass per width.
    """
    losses = []
    for factor in AUTO_GAMMA_FACTORS:
        similarity = config.similarity_of(gamma * factor)
        label = f"gamma={gamma * factor:.3g}"
        if valid is None:
            losses.append(_width_loss(config, _gram(runner, dataset, train, C, similarity,
                                                    label), None))
            continue
        split: SplitGramState = runner.run(SplitGramPass(train, valid, C, similarity),
                                           dataset, description=label)
        if split.train.weight <= 0 or split.valid.weight <= 0:
            return gamma
        losses.append(_width_loss(config, split.train, split.valid))
    return _chosen_width(gamma, losses)


def _width_loss(config: SuperSparseConfig, train: GramState, valid: GramState | None
                ) -> float:
    """:func:`_choose_gamma`'s estimated test loss of one width from its beta-step
    statistics: the held-out rows' (``valid``) squared loss at the penalty they choose, or
    the lowest generalised cross-validation score of the training rows (infinity when not
    finite)."""
    if valid is None:
        loss = gcv_choice(train, config.coef)[1]
    else:
        lam = choose_lam(train, valid, config.coef)
        w = solve_beta(train.G / train.weight, train.r / train.weight, lam, config.coef, None)
        loss = squared_loss(valid, w)
    return float(loss) if np.isfinite(loss) else np.inf


def _chosen_width(gamma: float, losses: Sequence[float]) -> float:
    """The width of the lowest of ``losses`` (one per :data:`AUTO_GAMMA_FACTORS`), when it
    is at most :data:`AUTO_GAMMA_GAIN` times the prototypes' own width's; else ``gamma``."""
    best = int(np.argmin(losses))
    if np.isfinite(losses[best]) and losses[best] <= AUTO_GAMMA_GAIN * losses[0]:
        return float(gamma * AUTO_GAMMA_FACTORS[best])
    return float(gamma)


def _initial_prototypes(runner: Any, dataset: Dataset, config: SuperSparseConfig, p: int,
                        seed: int, std: Standardiser | None) -> np.ndarray:
    """The initial prototypes, in the units the fit works in (standardised with ``std``)."""
    if not isinstance(config.init, str):
        C = np.array(config.init, dtype=np.float64)
        if C.shape != (p, dataset.n_features):
            raise DataError(f"init has shape {C.shape}; expected ({p}, "
                            f"{dataset.n_features}), one row per prototype of the "
                            "largest n_prototypes")
        if not np.isfinite(C).all():
            raise DataError("init holds NaN or infinite values")
        return C if std is None else (C - std.shift) / std.scale
    n_rows = dataset.n_rows if config.n_rows is None else config.n_rows
    if n_rows < p:
        raise DataError(f"{p} prototypes need at least {p} rows of positive weight, the "
                        f"data has {n_rows}")
    if config.init == "kmeans":
        return streamed_kmeans(dataset, p, engine=runner, seed=seed,
                               standardiser=std).astype(np.float64)
    if config.class_shares is not None and config.target == "classification":
        values = runner.run(ClassSamplePass(class_quotas(p, np.asarray(config.class_shares)),
                                            dataset.n_features, seed ^ INIT_SALT,
                                            dataset.is_sparse), dataset,
                            description="prototype sample")
    else:
        values = runner.run(RowSamplePass(p, dataset.n_features, seed ^ INIT_SALT,
                                          dataset.is_sparse), dataset,
                            description="prototype sample").values
    C = (values.toarray() if isinstance(values, SparseRows) else values).astype(np.float64)
    return C if std is None else (C - std.shift) / std.scale


def _gram(runner: Any, dataset: Dataset, rows: TargetRows, C: np.ndarray,
          similarity: Similarity, label: str) -> GramState:
    stats: GramState = runner.run(GramPass(rows, C, similarity), dataset, description=label)
    if stats.weight <= 0:
        raise DataError("no rows with positive weight to train on")
    return stats


def _alternate(runner: Any, dataset: Dataset, config: SuperSparseConfig, rows: TargetRows,
               C: np.ndarray, similarity: Similarity, p: int, seed: int,
               valid: TargetRows | None = None,
               ) -> tuple[np.ndarray, np.ndarray, list[float], float, GramState | None,
                          GramState, bool]:
    """Beta-steps and prototype steps for ``p`` prototypes, until the convergence rule.

    Returns
    -------
    C, w, history, lam, every_row, stats, capped
        Prototypes, coefficients on ``rows``, objective path, the penalty, (with
        ``valid``, ``lam="auto"``'s held-out rows) the beta-step statistics of every row at
        ``C``, else None, those of ``rows`` at ``C``, and whether ``max_iter`` stopped the
        alternation before the convergence rule.
    """
    tracker = None if valid is None else _LamTracker(config.coef, config.tol)
    beta_step = _BetaStep(runner, dataset, rows, valid, similarity, p, config.coef, tracker)
    if tracker is None:
        lam = (float(config.lam) if config.lam != "auto"
               else gcv_lam(beta_step.stats(C), config.coef))
    else:
        lam = float("nan")  # chosen by the first beta-step
    w, J = beta_step(C, None, lam)
    beta_step.kept = beta_step.last
    if tracker is not None:
        tracker.accept(w)
        lam = tracker.lam
    C, w, history, lam, capped = _descend(runner, dataset, config, rows, C, w, J, similarity,
                                          p, seed, lam, beta_step)
    every_row = None if tracker is None else tracker.every_row()
    assert beta_step.kept is not None
    return C, w, history, lam, every_row, beta_step.kept, capped


class _LamTracker:
    """``lam="auto"`` during an alternation: the penalty chosen at each accepted beta-step
    by the held-out rows' loss (:func:`~.passes.choose_lam`), their loss at it, and the
    statistics of the last accepted step.

    Its stopping rule: the held-out loss, over the last :data:`STOP_WINDOW` accepted steps
    at the same penalty, fell by less than ``STOP_WINDOW * tol`` of its value (the
    prototypes then fit the training rows better without predicting others better).
    """

    def __init__(self, coef: str, tol: float) -> None:
        self.coef = coef
        self.tol = tol
        self.lam = float("nan")
        self.losses: list[float] = []
        self.split: SplitGramState | None = None
        self.trial: tuple[SplitGramState, float] | None = None

    def choose(self, split: SplitGramState, warm: np.ndarray | None) -> float:
        """The penalty of a trial's statistics (kept until :meth:`accept`)."""
        lam = choose_lam(split.train, split.valid, self.coef, warm, self.lam)
        self.trial = (split, lam)
        return lam

    def trial_lam(self) -> float:
        """The penalty the last trial chose."""
        assert self.trial is not None
        return self.trial[1]

    def trial_objective(self, lam: float, warm: np.ndarray) -> float:
        """The last trial's training objective at penalty ``lam``."""
        assert self.trial is not None
        stats = self.trial[0].train
        w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, lam, self.coef, warm)
        return objective(stats, w, lam, self.coef)

    def accept(self, w: np.ndarray) -> None:
        """The trial with coefficients ``w`` is kept."""
        assert self.trial is not None
        previous = self.lam
        self.split, self.lam = self.trial
        valid = self.split.valid
        if self.lam != previous:  # losses at different penalties do not compare
            self.losses = []
        self.losses.append(squared_loss(valid, w) if valid.weight > 0 else np.nan)

    def flat(self) -> bool:
        """The stopping rule."""
        if len(self.losses) <= STOP_WINDOW or not np.isfinite(self.losses[-1 - STOP_WINDOW]):
            return False
        return (self.losses[-1 - STOP_WINDOW] - self.losses[-1]
                <= STOP_WINDOW * self.tol * abs(self.losses[-1]))

    def every_row(self) -> GramState:
        """Statistics of the training and the held-out rows together, at the last accepted
        prototypes."""
        assert self.split is not None
        return self.split.train + self.split.valid


@dataclass
class _BetaStep:
    """The beta-step at given prototypes: one pass for the Gram statistics of ``rows``
    (and of the held-out rows ``valid`` with a tracker, whose choice of the penalty
    replaces the one given), then the solve and the objective."""

    runner: Any
    dataset: Dataset
    rows: TargetRows
    valid: TargetRows | None
    similarity: Similarity
    p: int
    coef: str
    tracker: _LamTracker | None
    last: GramState | None = None  # the training rows' statistics of the last call
    kept: GramState | None = None  # ... and of the prototypes kept (the last accepted step)

    def stats(self, C: np.ndarray) -> GramState:
        """The training rows' statistics at ``C`` (no tracker)."""
        return _gram(self.runner, self.dataset, self.rows, C, self.similarity,
                     f"beta-step p={self.p}")

    def __call__(self, C: np.ndarray, warm: np.ndarray | None,
                 lam: float) -> tuple[np.ndarray, float]:
        """Coefficients and objective at ``C``; with a tracker, at the penalty it chooses
        (:meth:`_LamTracker.accept` must follow when the step is kept). Keeps the
        training rows' statistics in ``last``."""
        if self.tracker is None:
            stats = self.stats(C)
        else:
            assert self.valid is not None
            split: SplitGramState = self.runner.run(
                SplitGramPass(self.rows, self.valid, C, self.similarity), self.dataset,
                description=f"beta-step p={self.p}")
            stats = split.train
            if stats.weight <= 0:
                raise DataError("no rows with positive weight to train on")
            lam = self.tracker.choose(split, warm)
        self.last = stats
        w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, lam, self.coef, warm)
        return w, objective(stats, w, lam, self.coef)


def prototype_step(config: SuperSparseConfig, rows: TargetRows, stats: GramState) -> float:
    """The first prototype step: ``step``, divided by the targets' variance (per output)
    for regression targets and a reduced model's scores.

    The prototype gradient grows with the square of the targets' scale; so divided, the
    first steps move the prototypes as far whatever the units of the targets (for class
    targets, +-1, ``step`` as it is). A constant target keeps ``step``.
    """
    if rows.mode == "classification" or stats.weight <= 0:
        return float(config.step)
    mean = stats.r[-1] / stats.weight  # z's last entry is the constant 1
    variance = (stats.yy / stats.weight - float(mean @ mean)) / stats.r.shape[1]
    return float(config.step) / variance if variance > 0 else float(config.step)


def _descend(runner: Any, dataset: Dataset, config: SuperSparseConfig, rows: TargetRows,
             C: np.ndarray, w: np.ndarray, J: float, similarity: Similarity, p: int,
             seed: int, lam: float, beta_step: _BetaStep,
             ) -> tuple[np.ndarray, np.ndarray, list[float], float, bool]:
    """The alternation from ``(C, w)`` with objective ``J`` at penalty ``lam``: at most
    ``max_iter`` prototype-step trials (batch) or epochs (mini-batch). Returns the
    prototypes, coefficients, objective path, penalty and whether that cap stopped it
    before the convergence rule (:func:`_fit_rows` warns once for every count of
    prototypes it stopped).

    With ``lam="auto"`` (a tracker in ``beta_step``), each accepted beta-step sets the
    penalty, and the tracker's held-out rule replaces the objective's: objectives at
    different penalties do not compare.
    """
    coef = config.coef
    tracker = beta_step.tracker
    history = [J]
    assert beta_step.last is not None
    first_step = prototype_step(config, rows, beta_step.last)

    def accepted(w_new: np.ndarray) -> float:
        beta_step.kept = beta_step.last
        if tracker is None:
            return lam
        tracker.accept(w_new)
        return tracker.lam

    concave = False  # the last accepted move bent the objective down
    # relative steps are measured against at least 1e-12 of the first objective, which
    # scales with the targets' units (an absolute floor would stop tiny targets at once)
    floor = 1e-12 * abs(J) if abs(J) > 0 else np.finfo(float).tiny

    def converged() -> bool:
        if concave:  # a plateau's edge, not a minimum: the steps are still growing
            return False
        if tracker is not None:
            return tracker.flat()
        return len(history) > STOP_WINDOW and history[-1 - STOP_WINDOW] - history[-1] <= (
            STOP_WINDOW * config.tol * max(abs(history[-1]), floor))

    if config.solver == "minibatch":
        for t in range(config.max_iter):
            rho = config.repulsion * config.repulsion_decay ** t
            state: MiniBatchState = runner.run(
                MiniBatchPass(rows, MiniBatchState(C, w), similarity, first_step, coef, lam,
                              rho),
                dataset, shuffle=True, seed=seed, epoch=t,
                description=f"mini-batch epoch {t + 1} p={p}")
            C = state.C
            w, J_new = beta_step(C, w, lam)
            lam = accepted(w)
            J_previous, J = J, J_new
            history.append(J)
            if rho == 0 and (converged() if tracker is not None
                             else abs(J_previous - J) <= config.tol * max(abs(J), floor)):
                break
        else:
            return C, w, history, lam, config.max_iter > 0
        return C, w, history, lam, False

    memory = PROTOTYPE_MEMORY if config.solver == "lbfgs" else 0
    step = first_step
    grad: np.ndarray | None = None
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []  # quasi-Newton memory
    previous: tuple[np.ndarray, np.ndarray, float] | None = None  # (C, gradient, lam)
    scale = step
    direction = np.zeros_like(C)
    for t in range(config.max_iter):
        rho = config.repulsion * config.repulsion_decay ** t
        if grad is None:
            g: GradientState = runner.run(GradientPass(rows, C, w, similarity), dataset,
                                          description=f"gradient p={p}")
            grad = (2.0 / g.weight) * g.grad
            total = grad + rho * similarity.penalty_gradient(C) if rho > 0 else grad
            if not np.any(total):
                break  # a stationary point (a constant target or features): no step moves C
            concave = False
            if memory and rho == 0:
                if previous is not None and previous[2] == lam:
                    s_, y_ = C - previous[0], grad - previous[1]
                    sy = float(np.vdot(s_, y_))
                    # curvature along the step, against the norms' product: the same
                    # test whatever the units of the targets (the gradient's scale)
                    if sy > 1e-12 * float(np.linalg.norm(s_) * np.linalg.norm(y_)):
                        pairs.append((s_, y_, 1.0 / sy))
                        if len(pairs) > memory:
                            pairs.pop(0)
                    else:
                        concave = True
                else:
                    pairs.clear()  # a new penalty is a new objective
                previous = (C, grad, lam)
            direction = -two_loop(total, pairs, np.ones_like(C)) if pairs else -total
            if pairs and float(np.vdot(direction, total)) >= 0.0:
                pairs.clear()
                direction = -total
            scale = 1.0 if pairs else step
        trial = C + scale * direction
        trial_w, trial_J = beta_step(trial, w, lam)
        # a trial is judged at the current penalty (the tracker's may have moved)
        compared = (trial_J if tracker is None or tracker.trial_lam() == lam
                    else tracker.trial_objective(lam, w))
        before = J + (rho * similarity.penalty(C) if rho > 0 else 0.0)
        after = compared + (rho * similarity.penalty(trial) if rho > 0 else 0.0)
        if after <= before:
            C, w, J = trial, trial_w, trial_J
            lam = accepted(w)
            grad = None
            if not pairs:
                step *= STEP_GROWTH
            history.append(J)
            if rho == 0 and converged():
                break
        else:
            scale *= STEP_SHRINK
            if not pairs:
                step *= STEP_SHRINK
            history.append(J)
            if scale < MIN_STEP_FRACTION * (1.0 if pairs else first_step):
                break
    else:
        return C, w, history, lam, config.max_iter > 0
    return C, w, history, lam, False


def _warn_cap(config: SuperSparseConfig, capped: Sequence[int]) -> None:
    """Warn once that ``max_iter`` stopped the alternation before its convergence rule
    for each count of prototypes of ``capped`` (none: no warning)."""
    if not capped:
        return
    what = ("epochs of the mini-batch solver" if config.solver == "minibatch"
            else "prototype steps")
    counts = [str(p) for p in capped]
    shown = counts[0] if len(counts) == 1 else f"{', '.join(counts[:-1])} and {counts[-1]}"
    tried = len(config.grid)
    which = ("" if tried == 1 else
             f" (each of the {tried} counts tried)" if len(capped) == tried else
             f" ({len(capped)} of the {tried} counts tried)")
    warnings.warn(f"{config.owner} stopped after max_iter={config.max_iter} {what} "
                  f"with p={shown} prototypes{which} before the objective changed by less "
                  f"than tol={config.tol} of its value; raise max_iter or tol",
                  ConvergenceWarning, stacklevel=caller_stacklevel())


#: ``loss="auto"``: the penalties of the squared-hinge refit, as multiples of the
#: beta-step's ``lam`` (lanes of the same passes). Smaller ones (0.01 .. 1e-4 were tried)
#: leave fewer rows inside the margin than coefficients on a class the prototypes
#: separate, whose Newton steps overshoot so far that 20-30 passes did not converge
#: (digits, one-vs-rest over 100 prototypes).
REFIT_LAM_FACTORS = (1.0, 1e-1)
#: ... at most this many Newton passes per refit (a ConvergenceWarning at the cap), raised
#: on small data up to the second (:func:`refit_pass_cap`) ...
REFIT_MAX_ITER = 30
REFIT_MAX_ITER_SMALL = 100
#: ... which stops where a step lowers an output's objective by at most this share of its
#: lane's objective at the squared-loss coefficients (:func:`hinge_newton`). Its choice of
#: penalty compares held-out losses that differ by percents (:data:`~.passes.AUTO_LAM_SLACK`
#: is 1 %), which coefficients closer to the optimum than this leave as they are.
REFIT_TOL = 1e-3
#: ... or where this many kept steps in a row have not lowered an output's held-out loss
#: (early stopping; :func:`hinge_newton`).
REFIT_PATIENCE = 3
#: A step the line search cut to ``t`` damps the output's next Newton directions
#: (Levenberg and Marquardt's ``mu``, :func:`~.passes.hinge_newton_point`) by ``1 / t``
#: times their damping, at least this share of the active rows' mean curvature
#: (:func:`~.passes.hinge_curvature`) ...
DAMPING_FLOOR = 1e-3
#: ... and a full step kept multiplies it by this.
DAMPING_RELIEF = 0.25
#: ``linear_part="auto"``: the refit tries a linear part where the coefficients of the
#: prototypes, the features and the intercept number at most this many (the solves stay
#: small, :data:`~.passes.SINGLE_THREAD_UNKNOWNS`; the Gram statistics grow with their
#: square).
LINEAR_PART_MAX_UNKNOWNS = 512
#: The design columns of the refit's lanes, in the order its choice prefers them (the
#: first within :data:`~.passes.AUTO_LAM_SLACK` of the lowest held-out loss).
REFIT_COLUMN_SETS = ("prototypes", "both", "linear")
#: Folds of :func:`cross_fit_lane`, the choice of the refit's lane on data too small to
#: hold rows out ...
CROSS_FIT_FOLDS = 5
#: ... from this many rows of positive weight on (each fold then holds out about 20).
MIN_CROSS_FIT_ROWS = 100
#: Mixed into the seed of :func:`cross_fit_lane`'s folds.
FOLD_SALT = 0xF01D_0004


@dataclass(frozen=True)
class HingeRefit:
    """The outcome of :func:`hinge_refit`.

    Attributes
    ----------
    w : ndarray of shape (p + 1, K) or None
        The squared-hinge coefficients, intercept last; None when the squared-loss ones
        stay (no lane was better on the held-out rows).
    lam : float
        The penalty kept (NaN with ``w`` None).
    held_out : ndarray of shape (L + 1,)
        The held-out rows' mean squared hinge loss of the squared-loss coefficients, then
        of each lane of :data:`REFIT_LAM_FACTORS`.
    passes : int
        Newton passes run.
    temperature : TemperatureSums or None
        The held-out rows' temperature statistics at the kept lane's coefficients trained
        without them.
    linear : bool
        ``w`` holds a linear part: (p + d + 1, K), the features' coefficients in rows
        ``p .. p + d - 1``.
    lanes : str
        The kept lane's columns, one of :data:`REFIT_COLUMN_SETS` ("" with ``w`` None).
    """

    w: np.ndarray | None
    lam: float
    held_out: np.ndarray
    passes: int
    temperature: TemperatureSums | None = None
    linear: bool = False
    lanes: str = ""


def refit_column_sets(config: SuperSparseConfig, p: int, d: int) -> tuple[str, ...]:
    """The design columns the refit's lanes take (:data:`REFIT_COLUMN_SETS`):
    ``"prototypes"`` alone (``linear_part=False``, or ``"auto"`` with more than
    :data:`LINEAR_PART_MAX_UNKNOWNS` coefficients ``p + d + 1``), ``"both"`` alone
    (``True``), or all three (``"auto"``)."""
    if config.linear_part is True:
        return ("both",)
    if config.linear_part == "auto" and p + d + 1 <= LINEAR_PART_MAX_UNKNOWNS:
        return REFIT_COLUMN_SETS
    return ("prototypes",)


def column_mask(columns: str, p: int, d: int) -> np.ndarray:
    """The free coefficients of a lane of ``columns`` among ``(beta (p), w (d), b)``."""
    mask = np.ones(p + d + 1, dtype=bool)
    if columns == "prototypes":
        mask[p:p + d] = False
    elif columns == "linear":
        mask[:p] = False
    return mask


def lane_start(w: np.ndarray, columns: str, p: int, d: int) -> np.ndarray:
    """A lane's first coefficients: the squared loss's ``w`` (p + 1, K), the linear part 0
    (and the prototypes' coefficients 0 for the linear part alone), shape (p + d + 1, K)."""
    w = np.asarray(w, dtype=np.float64).reshape(p + 1, -1)
    start = np.zeros((p + d + 1, w.shape[1]))
    if columns != "linear":
        start[:p] = w[:p]
    start[-1] = w[-1]
    return start


@dataclass(frozen=True)
class RidgeRefit:
    """The regressor's lanes of ridge coefficients over the learned prototypes, the
    standardised features or both (:func:`linear_ridge_refit`).

    Attributes
    ----------
    w : ndarray of shape (p + 1, 1), (p + d + 1, 1) or None
        The kept lane's coefficients (with a linear part: the features' in rows
        ``p .. p + d - 1``); None where the first lane, the beta-step's own coefficients,
        is kept.
    lam : float
        The kept lane's penalty.
    lanes : str
        The kept lane's columns, one of :data:`REFIT_COLUMN_SETS`.
    losses : ndarray of shape (n_lanes,)
        Each lane's held-out mean squared loss, in the lanes' order (empty where no row
        was held out).
    """

    w: np.ndarray | None
    lam: float
    lanes: str
    losses: np.ndarray

    @property
    def linear(self) -> bool:
        """``w`` holds a linear part."""
        return self.w is not None and self.lanes != "prototypes"


def linear_ridge_refit(runner: Any, dataset: Dataset, train: TargetRows, valid: TargetRows,
                       C: np.ndarray, similarity: Similarity, lam: float,
                       sets: Sequence[str], every: bool,
                       factors: Sequence[float] = REFIT_LAM_FACTORS) -> RidgeRefit:
    """A regressor's ``linear_part``: ridge coefficients of the design columns ``(s(x, c),
    z, 1)`` at the learned prototypes, a lane for each set of columns of ``sets``
    (:data:`REFIT_COLUMN_SETS`' order) and each penalty of ``factors`` times ``lam``.

    One :class:`~.passes.SplitGramPass` with the features as columns gathers the Gram
    statistics of the training and the held-out rows; every lane is then the closed-form
    ridge solve of its columns' block (:func:`~.passes.solve_beta`, ``w`` penalised as
    ``beta`` is) on the training rows, scored by the held-out rows' mean squared loss
    from their statistics. The first lane within :data:`~.passes.AUTO_LAM_SLACK` of the
    lowest is kept; the first lane (the prototypes at ``lam``) is the beta-step's own
    coefficients, which then stay (``w`` None). With ``every`` (``lam="auto"``, whose last
    beta-step takes every row) the kept lane is solved on every row's statistics. Where
    no row is held out (``linear_part=True`` on such a fit) the first set's lane at
    ``lam`` is solved on every row, unchosen: scores of the training rows would favour
    the prototypes, learned on those rows.
    """
    p, d = C.shape[0], dataset.n_features
    stats: SplitGramState = runner.run(SplitGramPass(train, valid, C, similarity, True),
                                       dataset, description="linear part")
    lanes = [(columns, lam * factor) for columns in sets for factor in factors]
    losses = np.full(len(lanes), np.inf)
    if stats.valid.weight > 0:
        for i, (columns, lane_lam) in enumerate(lanes):
            mask = column_mask(columns, p, d)
            fit = column_statistics(stats.train, mask)
            if fit.weight > 0:
                w = solve_beta(fit.G / fit.weight, fit.r / fit.weight, lane_lam, "ridge")
                losses[i] = squared_loss(column_statistics(stats.valid, mask), w)
        finite = losses[np.isfinite(losses)]
        if finite.size == 0:
            return RidgeRefit(None, float(lam), "prototypes", losses)
        best = float(finite.min())
        lane = next(i for i in range(len(lanes))
                    if losses[i] <= best * (1.0 + AUTO_LAM_SLACK))
    else:
        lane, losses = 0, np.empty(0)
    columns, lane_lam = lanes[lane]
    if columns == "prototypes" and lane_lam == lam:
        return RidgeRefit(None, float(lam), columns, losses)
    mask = column_mask(columns, p, d)
    final = column_statistics(stats.train + stats.valid if every else stats.train, mask)
    if final.weight <= 0:
        raise DataError("no rows of positive weight to fit the linear part on")
    solved = solve_beta(final.G / final.weight, final.r / final.weight, lane_lam, "ridge")
    w = np.zeros((p + d + 1, solved.shape[1]))
    w[mask] = solved
    if columns == "prototypes":
        w = np.vstack([w[:p], w[-1:]])
    return RidgeRefit(w, float(lane_lam), columns, losses)


@dataclass(frozen=True)
class HingeNewton:
    """The outcome of :func:`hinge_newton`.

    Attributes
    ----------
    W : ndarray of shape (L, p + 1, K)
        Each lane's coefficients: per output the last kept, or with held-out rows the kept
        ones of lowest held-out loss.
    objective : ndarray of shape (L, K)
        Their objective.
    held_out : ndarray of shape (L, K)
        Their held-out squared hinge sums (zeros without held-out rows).
    passes : int
        Passes run.
    capped : list of int
        The lanes the cap on the passes (:func:`refit_pass_cap`) stopped.
    first : object
        ``first``'s result; when ``first`` is None, the held-out sums of the first pass,
        at ``w0``, with their weight, ``(sums (K,), weight)``.
    steps : ndarray of shape (L, K)
        The kept Newton steps from ``w0`` to each output's ``W``.
    """

    W: np.ndarray
    objective: np.ndarray
    held_out: np.ndarray
    passes: int
    capped: list[int]
    first: Any
    steps: np.ndarray


def hinge_newton(runner: Any, dataset: Dataset, rows: TargetRows, C: np.ndarray,
                 similarity: Similarity, w0: np.ndarray, lams: Sequence[float], tol: float,
                 held_out: TargetRows | None = None, first: Any = None, label: str = "",
                 steps: np.ndarray | None = None, linear: bool = False,
                 free: np.ndarray | None = None) -> HingeNewton:
    """Keerthi and DeCoste's L2-SVM Newton method from ``w0`` at each penalty of ``lams``
    (one lane each), one :class:`~.passes.HingeGramPass` per iteration, damped where its
    steps overshoot and stopped early on held-out rows.

    Each output of each lane minimises ``(1 / V) sum_i v_i max(0, 1 - y_i f(x_i))^2 + lam
    ||beta||^2`` over the rows of ``rows``. A pass at coefficients ``w`` sums the Gram
    statistics of the rows inside the margin and the objective; the (damped) Newton point
    (:func:`~.passes.hinge_newton_point`) gives the direction. The next pass runs at the
    full step and also sums the objective along the direction at every step of
    :data:`~.passes.LINE_STEPS` (the line search, streamed): the step is kept when no
    step of the line is lower, else the next pass runs at the lowest step ``t``, and the
    output's later directions are damped (Levenberg and Marquardt): its ``mu`` becomes
    ``max(mu, DAMPING_FLOOR * curvature) / t`` and shrinks by :data:`DAMPING_RELIEF`
    after each full step kept. At a small penalty on rows it nearly separates, the
    undamped Newton step overshoots by orders of magnitude for pass after pass.

    An output stops when the pass finds its active set unchanged (the Newton point is the
    current point); when a step lowered its objective by at most ``tol`` times the lane's
    objective at ``w0``, averaged over its outputs (the problem's scale: a class nearly
    separated from the others weighs as little in the lane as its loss does); with
    ``held_out``, when :data:`REFIT_PATIENCE` kept steps in a row have not lowered its
    held-out squared hinge loss below ``1 - tol`` times its lowest, which it then keeps
    (early stopping: at a small penalty the training objective keeps falling long after
    the held-out loss has turned); and with ``steps`` (L, K), after that many kept steps.
    A lane stops when all its outputs have. ``first``, a reduction pass, runs together
    with the first pass.

    The prototypes stay where they are, so the passes share the rows' similarity columns
    (:class:`~.passes.SimilarityCache`, up to :data:`~.passes.SIMILARITY_CACHE_BYTES`)
    when ``runner`` runs them in this process (``LocalEngine``, checkpointed or not); on
    other engines each pass computes them again.

    With ``linear`` the design columns hold the rows' standardised features too
    (:func:`~.passes.design_columns`; ``w0`` then has ``p + d + 1`` rows), and ``free``
    (L, q) restricts each lane to its columns (the others stay 0,
    :func:`~.passes.hinge_newton_point`). ``w0`` is (q, K), every lane's start, or
    (L, q, K), one per lane.

    Returns
    -------
    HingeNewton
    """
    lams = np.asarray(lams, dtype=np.float64)
    L = lams.size
    w0 = np.asarray(w0, dtype=np.float64)
    if w0.ndim == 3:
        at = w0.copy()  # where the next pass runs
    else:
        w0 = w0.reshape(w0.shape[0], -1)
        at = np.repeat(w0[None], L, axis=0)
    K = at.shape[2]
    base = at.copy()  # ... on the line from base along direction
    direction = np.zeros_like(at)
    used = np.ones((L, K))  # the step length of ``at`` along ``direction``
    kept = at.copy()  # each output's coefficients to return ...
    J = np.full((L, K), np.inf)  # ... their objective ...
    held = np.full((L, K), np.inf)  # ... and held-out sums ...
    best_step = np.zeros((L, K), dtype=np.int64)  # ... and the kept step they come from
    step = np.full((L, K), -1, dtype=np.int64)  # kept steps so far (w0 is step 0)
    last_J = np.full((L, K), np.inf)
    start = np.zeros((L, K))  # each output's objective at w0
    done = np.zeros((L, K), dtype=bool)
    damping = np.zeros((L, K))  # each output's Levenberg-Marquardt mu
    first_result: Any = None
    passes = 0
    cache = SimilarityCache(C, similarity, linear=linear) if runs_here(runner) else None
    for it in range(refit_pass_cap(dataset.n_rows)):
        lanes = np.flatnonzero(~done.all(axis=1))
        if lanes.size == 0:
            break
        hinge = HingeGramPass(rows, C, similarity, at[lanes], held_out,
                              *((base[lanes], direction[lanes]) if it else (None, None)),
                              outputs=~done[lanes], cache=cache, linear=linear)
        description = f"squared hinge step {it + 1}{label}"
        if it == 0 and first is not None:
            stats, first_result = runner.run(Together(hinge, first), dataset,
                                             description=description)
        else:
            stats = runner.run(hinge, dataset, description=description)
        passes += 1
        if stats.weight <= 0:
            raise DataError("no rows with positive weight to train on")
        if it == 0 and first is None:
            first_result = (stats.held_out[0].copy(), stats.held_out_weight)
        now = hinge_objective(stats, at[lanes], lams[lanes])
        ran = at[lanes].copy()  # the point the pass ran at
        curvature = hinge_curvature(stats, None if free is None else free[lanes])
        line = (hinge_line_objective(stats, base[lanes], direction[lanes], lams[lanes])
                if it else None)
        moves = []  # the outputs kept at ``ran``: a new direction from there
        for i, lane in enumerate(lanes):
            for c in np.flatnonzero(~done[lane]):
                if line is not None:
                    lowest = int(np.argmin(line[i, c]))
                    if now[i, c] > line[i, c, lowest] + 1e-9 * abs(line[i, c, lowest]):
                        # the step overshot: the next pass runs at the line's lowest
                        # step, and the next directions are damped by about its inverse
                        used[lane, c] = LINE_STEPS[lowest]
                        at[lane, :, c] = (base[lane, :, c]
                                          + used[lane, c] * direction[lane, :, c])
                        damping[lane, c] = (max(damping[lane, c],
                                                DAMPING_FLOOR * curvature[i, c])
                                            / used[lane, c])
                        continue
                if used[lane, c] == 1.0:  # the full step was the line's lowest
                    damping[lane, c] *= DAMPING_RELIEF
                step[lane, c] += 1
                if it == 0:
                    start[lane, c] = now[i, c]
                settled = last_J[lane, c] - now[i, c] <= tol * start[lane].mean()
                last_J[lane, c] = now[i, c]
                if held_out is None or stats.held_out[i, c] < (1.0 - tol) * held[lane, c]:
                    kept[lane, :, c] = ran[i, :, c]
                    J[lane, c] = now[i, c]
                    held[lane, c] = stats.held_out[i, c]
                    best_step[lane, c] = step[lane, c]
                turned = step[lane, c] - best_step[lane, c] >= REFIT_PATIENCE
                budget = steps is not None and step[lane, c] >= steps[lane, c]
                done[lane, c] = settled or turned or budget
                moves.append((i, lane, c))
        if moves:
            newton = hinge_newton_point(stats, lams[lanes], ran, damping[lanes],
                                        None if free is None else free[lanes])
            for i, lane, c in moves:
                done[lane, c] |= np.array_equal(newton[i, :, c], ran[i, :, c])
                base[lane, :, c] = ran[i, :, c]
                direction[lane, :, c] = newton[i, :, c] - ran[i, :, c]
                used[lane, c] = 1.0
                at[lane, :, c] = newton[i, :, c]
    capped = [int(lane) for lane in np.flatnonzero(~done.all(axis=1))]
    if held_out is None:
        held[:] = 0.0
    return HingeNewton(kept, J, held, passes, capped, first_result, best_step)


def refit_pass_cap(n_rows: int) -> int:
    """The most Newton passes of a refit over ``n_rows`` rows: :data:`REFIT_MAX_ITER`,
    raised on small data to the passes of a million rows read, up to
    :data:`REFIT_MAX_ITER_SMALL` (:func:`~streamlearn.solvers.pass_caps.pass_cap`). On 70 %
    of digits' rows one lane of the held-out refit (prototypes and features, the smaller
    penalty) met its held-out rule after 33 passes, one of six splits past 30."""
    return pass_cap(n_rows, REFIT_MAX_ITER, REFIT_MAX_ITER_SMALL)


def runs_here(runner: Any) -> bool:
    """Whether ``runner`` walks its passes' chunks in this process, one after the other
    (a ``LocalEngine``, also inside a checkpointing runner): state a pass object keeps
    between chunks is then there for the next pass."""
    while not isinstance(runner, LocalEngine):
        inner = getattr(runner, "engine", None)
        if inner is None or inner is runner:
            return False
        runner = inner
    return True


def hinge_refit(runner: Any, dataset: Dataset, config: SuperSparseConfig, train: TargetRows,
                valid: TargetRows, C: np.ndarray, similarity: Similarity, w: np.ndarray,
                lam: float, w_every: np.ndarray | None = None) -> HingeRefit:
    """``loss="auto"``: the squared-hinge coefficients on the learned prototypes, the
    penalty chosen on the held-out rows.

    One lane per penalty of :data:`REFIT_LAM_FACTORS` times the beta-step's ``lam``, each
    fitted by :func:`hinge_newton` (tolerance :data:`REFIT_TOL`, stopped early on the
    held-out rows) from the squared-loss coefficients ``w`` on the training rows (those
    not held out). With a linear part (``config.linear_part``, :func:`refit_column_sets`)
    there is such a pair of lanes for each set of design columns, in the order of
    :data:`REFIT_COLUMN_SETS`: the prototypes alone, the prototypes and the standardised
    features ``z`` (``f = beta . s(x, c) + w . z + b``, ``w`` penalised as ``beta`` is,
    from ``w = 0``), the features alone (from ``beta = 0``); all lanes run in the same
    passes. The first lane in that order whose held-out mean squared hinge loss is within
    :data:`~.passes.AUTO_LAM_SLACK` of the lowest (the larger penalty, and the fewer
    columns, the held-out rows cannot tell from the best, as ``lam="auto"`` chooses)
    replaces ``w`` only when that loss is below ``1 - AUTO_LAM_SLACK`` times the
    squared-loss coefficients' own held-out squared hinge loss (measured by the first
    pass). With ``w_every``, the squared-loss coefficients on every row (``lam="auto"``,
    whose last beta-step takes every row), the kept lane is then fitted on every row
    from ``w_every``, each output by as many kept Newton steps as its held-out loss chose
    (or fewer, where it converges first): the early stop carried over to all the rows, as
    boosting's round count is. The first of those passes also scores the held-out rows at
    the lane's coefficients for the probability scale (:func:`calibrate`), else one
    :class:`~.passes.ValidationPass` does.
    """
    p, d = C.shape[0], dataset.n_features
    sets = refit_column_sets(config, p, d)
    linear = sets != ("prototypes",)
    lanes = [(columns, lam * factor) for columns in sets for factor in REFIT_LAM_FACTORS]
    lams = [lane_lam for _, lane_lam in lanes]
    if linear:
        free = np.array([column_mask(columns, p, d) for columns, _ in lanes])
        start = np.array([lane_start(w, columns, p, d) for columns, _ in lanes])
        held_out = hinge_newton(runner, dataset, train, C, similarity, start, lams,
                                REFIT_TOL, valid, linear=True, free=free)
    else:
        held_out = hinge_newton(runner, dataset, train, C, similarity, w, lams, REFIT_TOL,
                                valid)
    squared_sums, weight = held_out.first
    if weight <= 0:
        raise DataError("no rows were held out to choose the squared hinge penalty")
    losses = np.concatenate([[squared_sums.sum()], held_out.held_out.sum(axis=1)]) / weight
    passes = held_out.passes
    if held_out.capped:
        _warn_refit_cap(config, [lams[lane] for lane in held_out.capped], dataset.n_rows)
    best = float(np.nanmin(losses[1:]))
    if not (np.isfinite(best) and best < (1.0 - AUTO_LAM_SLACK) * losses[0]):
        return HingeRefit(None, float("nan"), losses, passes)
    lane = next(i for i in range(len(lams))
                if losses[1 + i] <= best * (1.0 + AUTO_LAM_SLACK))
    columns = lanes[lane][0]
    keeps_linear = columns != "prototypes"
    w_lane = held_out.W[lane]
    if linear and not keeps_linear:  # the prototypes' lane: its linear part is 0
        w_lane = np.vstack([w_lane[:p], w_lane[-1:]])
    scores = ValidationPass(valid, C, w_lane, similarity, True, TEMPERATURE_SCALES,
                            linear=keeps_linear)
    if w_every is None:
        tally: LossState = runner.run(scores, dataset, description="probability scale")
        return HingeRefit(w_lane, lams[lane], losses, passes + 1, tally.temperature,
                          keeps_linear, columns)
    every = replace(train, holdout=None, validation=False)
    if keeps_linear:
        every_row = hinge_newton(runner, dataset, every, C, similarity,
                                 lane_start(w_every, columns, p, d), [lams[lane]], REFIT_TOL,
                                 first=scores, label=" (every row)",
                                 steps=held_out.steps[lane:lane + 1], linear=True,
                                 free=column_mask(columns, p, d)[None])
    else:
        every_row = hinge_newton(runner, dataset, every, C, similarity, w_every, [lams[lane]],
                                 REFIT_TOL, first=scores, label=" (every row)",
                                 steps=held_out.steps[lane:lane + 1])
    if every_row.capped:
        _warn_refit_cap(config, [lams[lane]], dataset.n_rows)
    return HingeRefit(every_row.W[0], lams[lane], losses, passes + every_row.passes,
                      every_row.first.temperature, keeps_linear, columns)


def hinge_refit_lane(runner: Any, dataset: Dataset, config: SuperSparseConfig,
                     rows: TargetRows, C: np.ndarray, similarity: Similarity, w: np.ndarray,
                     lam: float, lane: tuple[str, float]) -> HingeRefit:
    """``loss="auto"`` without held-out rows, the lane chosen by :func:`cross_fit_lane`:
    the squared-hinge coefficients of ``lane``'s columns (one of
    :data:`REFIT_COLUMN_SETS`) at ``lane``'s factor times ``lam``, fitted by
    :func:`hinge_newton` on every row of ``rows`` from the squared-loss coefficients
    ``w`` to its convergence rule (no held-out rows stop it early)."""
    columns, factor = lane
    p, d = C.shape[0], dataset.n_features
    lane_lam = float(lam * factor)
    keeps_linear = columns != "prototypes"
    if keeps_linear:
        fitted = hinge_newton(runner, dataset, rows, C, similarity,
                              lane_start(w, columns, p, d), [lane_lam], REFIT_TOL,
                              label=" (every row)", linear=True,
                              free=column_mask(columns, p, d)[None])
    else:
        fitted = hinge_newton(runner, dataset, rows, C, similarity, w, [lane_lam], REFIT_TOL,
                              label=" (every row)")
    if fitted.capped:
        _warn_refit_cap(config, [lane_lam], dataset.n_rows)
    return HingeRefit(fitted.W[0], lane_lam, np.empty(0), fitted.passes, None, keeps_linear,
                      columns)


def _warn_refit_cap(config: SuperSparseConfig, lams: Sequence[float], n_rows: int) -> None:
    shown = ", ".join(f"{lam:.3g}" for lam in lams)
    warnings.warn(f"{config.owner}'s squared hinge refit stopped after "
                  f"{refit_pass_cap(n_rows)} "
                  f"Newton passes at lam={shown} before its objective changed by less than "
                  f"{REFIT_TOL} of its value; loss='squared' keeps the squared loss's "
                  "coefficients", ConvergenceWarning, stacklevel=caller_stacklevel())


# -- online (partial_fit) ---------------------------------------------------------------------
def target_moments(t: np.ndarray, weight: np.ndarray,
                   moments: np.ndarray | None = None) -> np.ndarray:
    """The weighted moments of the targets ``t`` (n,) or (n, K), merged into ``moments``.

    Returns an array of shape (3, K): the weight ``V`` (in every column), the weighted
    mean and the weighted sum of squared deviations from it, per output. Two sets of rows
    merge by Chan, Golub and LeVeque's pairwise update, so ``partial_fit`` keeps the
    moments of every target it has trained on without the cancellation of ``sum v t^2 -
    V mean^2`` at a large offset. Rows of zero weight change nothing.
    """
    v = np.asarray(weight, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64).reshape(v.shape[0], -1)
    total = float(v.sum())
    if total <= 0:
        return (np.zeros((3, t.shape[1])) if moments is None
                else np.array(moments, dtype=np.float64))
    mean = (v @ t) / total
    squares = v @ (t - mean) ** 2
    if moments is None or float(moments[0, 0]) <= 0:
        return np.vstack([np.full(t.shape[1], total), mean, squares])
    before = float(moments[0, 0])
    merged = before + total
    delta = mean - moments[1]
    return np.vstack([np.full(t.shape[1], merged), moments[1] + delta * (total / merged),
                      moments[2] + squares + delta ** 2 * (before * total / merged)])


def near_constant(moments: np.ndarray) -> bool:
    """Whether targets of these :func:`target_moments` are constant but for rounding: their
    weighted variance (averaged over the outputs) at most :data:`CONSTANT_TARGETS_RTOL`
    squared times their mean square (so every zero target, or no weight, is constant)."""
    total = float(moments[0, 0])
    if total <= 0:
        return True
    variance = float(np.mean(moments[2])) / total
    square = float(np.mean(moments[1] ** 2)) + variance
    return not variance > CONSTANT_TARGETS_RTOL ** 2 * square


def online_step_size(config: SuperSparseConfig, gamma: float, moments: np.ndarray) -> float:
    """``step / (gamma var(t))``: the per-block prototype step of :func:`online_pass`.

    ``var(t)`` is the weighted target variance of :func:`target_moments` (those of every
    ``partial_fit`` call so far, averaged over the outputs). The prototype gradient scales
    with the squared scale of the targets and with ``gamma`` times a distance, so this step
    moves prototypes by the same fraction of the data's spread whatever the units of the
    features and of the targets. At an RBF that ``gamma="auto"`` widened, the coefficients
    grow as ``1 / gamma`` to follow the same target, and the gradient no longer shrinks
    with it: :func:`start_online` passes the prototypes' own width
    (``SuperSparseFit.step_gamma``). Targets that are so far constant (:func:`near_constant`)
    give no direction and no scale: the step is 0 (the prototypes stay where they are).
    """
    if near_constant(moments):
        return 0.0
    variance = float(np.mean(moments[2])) / float(moments[0, 0])
    return config.step / (gamma * variance)


def start_online(X: np.ndarray, t: np.ndarray, weight: np.ndarray, config: SuperSparseConfig,
                 seed: int, indicators: Sequence[int] = ()) -> SuperSparseFit:
    """The model before the first ``partial_fit`` pass, from that call's rows.

    ``indicators``: the columns of ``X`` that are 0/1 indicators of a categorical column,
    centred but not scaled (as :func:`fit_supersparse` takes ``Dataset.indicator_features``).

    Prototypes: ``config.init`` itself, ``p`` distinct rows with positive weight drawn by a
    generator seeded with ``seed`` (``"random"``), or k-means++ and
    :data:`KMEANS_ITERATIONS` Lloyd iterations on those rows (``"kmeans"``). ``gamma``:
    given, :func:`~.passes.scale_gamma` of these rows, or
    :func:`~.passes.prototype_gamma` of these prototypes, with ``lam="auto"`` widened as
    :func:`fit` widens it (:func:`_rows_gamma`). ``lam="auto"``: chosen by the
    squared loss of the rows held out by a hash of their position in this call
    (:func:`~.passes.choose_lam`), when enough are (:meth:`SuperSparseConfig.chooses_lam`).
    Targets constant but for rounding (:func:`near_constant`, e.g. a first block of a
    zero-inflated stream) show no loss to choose by: ``gamma="auto"`` is then the
    prototypes' own width and ``lam="auto"`` :data:`~.passes.AUTO_LAM_FALLBACK` times the
    ridge unit of :func:`~.passes.lam_scale` (the mean squared similarity, which holds no
    target), rather than the widest width and largest penalty their zero losses tie at.
    Coefficients: the exact beta-step on these rows.
    """
    if len(config.grid) > 1:
        raise ValueError("partial_fit needs one n_prototypes; choosing among "
                         f"{sorted(config.grid)} needs held-out rows, which only fit has")
    t = np.asarray(t, dtype=np.float64).reshape(X.shape[0], -1)
    gamma = config.gamma
    counter = FeatureSpreadPass(X.shape[1])
    spread = counter.step(counter.start(), Chunk(X, None, 0, weight=weight))
    std = None
    if config.similarity is None and config.standardize:  # standardised features
        std = spread_standardiser(spread).unscaled(indicators)
        spread = standardised_spread(spread, std)
        X = std.apply(X)
    C = _first_rows_prototypes(X, weight, config, config.grid[0], seed, std)
    if gamma == "scale":
        gamma = scale_gamma(spread)
    step_gamma = None
    constant = near_constant(target_moments(t, weight))
    if gamma == "auto":
        step_gamma = _resolve_gamma(("auto", scale_gamma(spread)), C)
        gamma = step_gamma if constant else _rows_gamma(X, t, weight, C, config, step_gamma,
                                                        seed)
    similarity = config.similarity_of(gamma)
    lam = _rows_lam(X, t, weight, C, config, similarity, seed, constant)
    w, J = _rows_beta(X, t, weight, C, config, similarity, None, lam)
    return SuperSparseFit(C, w[:-1], np.array(w[-1]), J, np.zeros(0), 0,
                          np.array([[C.shape[0], np.nan, np.nan, J]]), float(gamma),
                          None if std is None else std.shift,
                          None if std is None else std.scale, lam, step_gamma=step_gamma)


def online_pass(model: SuperSparseFit, X: np.ndarray, t: np.ndarray, weight: np.ndarray,
                config: SuperSparseConfig, step: float, block_rows: int | None) -> SuperSparseFit:
    """One mini-batch pass over in-memory rows from ``model``, adding them to its memory.

    The rows are cut into blocks of ``block_rows`` (all at once when None), visited in
    order; each block's beta-step solves the statistics of every row trained on so far
    (``model.memory`` and the blocks before, see :class:`~.passes.MiniBatchState`), so a
    few rows move a model of many by their share; the repulsion weight is
    ``repulsion * repulsion_decay^n_iter``. The last beta-step adds the rows at the
    prototypes they moved to to ``model.memory`` and solves that. ``n_iter`` counts the
    calls; ``objective_path`` keeps the last :data:`ONLINE_PATH_LENGTH` objectives.
    """
    similarity = config.similarity_of(model.gamma)
    t = np.asarray(t, dtype=np.float64).reshape(X.shape[0], -1)
    if model.standardiser is not None:
        X = model.standardiser.apply(X)
    rho = config.repulsion * config.repulsion_decay ** model.n_iter
    p, K = model.coef.shape
    memory = model.memory if model.memory is not None else GramState(
        np.zeros((p + 1, p + 1)), np.zeros((p + 1, K)))
    minibatch = MiniBatchPass(TargetRows("regression"),
                              MiniBatchState(np.array(model.prototypes, dtype=np.float64),
                                             np.vstack([model.coef, model.intercept]),
                                             memory=memory),
                              similarity, step, config.coef, model.lam, rho)
    state = minibatch.start()
    size = X.shape[0] if block_rows is None else max(1, int(block_rows))
    for a in range(0, X.shape[0], size):
        state = minibatch.step(state, Chunk(np.ascontiguousarray(X[a:a + size]), t[a:a + size],
                                            a, weight=weight[a:a + size]))
    # the call's rows once more, at the prototypes they moved to, added to the memory
    gram = GramPass(TargetRows("regression"), state.C, similarity)
    every = memory + gram.step(GramState(np.zeros((p + 1, p + 1)), np.zeros((p + 1, K))),
                               Chunk(X, t, 0, weight=weight))
    if every.weight <= 0:
        raise DataError("no rows with positive weight to train on")
    w = solve_beta(every.G / every.weight, every.r / every.weight, model.lam, config.coef,
                   state.w)
    J = objective(every, w, model.lam, config.coef)
    return SuperSparseFit(
        prototypes=np.ascontiguousarray(state.C),
        coef=np.ascontiguousarray(w[:-1]),
        intercept=np.array(w[-1]),
        objective=J,
        objective_path=np.append(model.objective_path, J)[-ONLINE_PATH_LENGTH:],
        n_iter=model.n_iter + 1,
        selection_path=np.array([[state.C.shape[0], np.nan, np.nan, J]]),
        gamma=model.gamma,
        shift=model.shift,
        scale=model.scale,
        lam=model.lam,
        memory=every,
    )


def _rows_beta(X: np.ndarray, t: np.ndarray, weight: np.ndarray, C: np.ndarray,
               config: SuperSparseConfig, similarity: Similarity,
               warm: np.ndarray | None, lam: float) -> tuple[np.ndarray, float]:
    """The exact beta-step and objective at penalty ``lam`` on in-memory rows at
    prototypes ``C`` (targets ``t`` of shape (n, K))."""
    p = C.shape[0]
    gram = GramPass(TargetRows("regression"), C, similarity)
    stats = gram.step(GramState(np.zeros((p + 1, p + 1)), np.zeros((p + 1, t.shape[1]))),
                      Chunk(X, t, 0, weight=weight))
    if stats.weight <= 0:
        raise DataError("no rows with positive weight to train on")
    w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, lam, config.coef, warm)
    return w, objective(stats, w, lam, config.coef)


def _rows_stats(X: np.ndarray, t: np.ndarray, weight: np.ndarray, C: np.ndarray,
                config: SuperSparseConfig, similarity: Similarity, seed: int
                ) -> GramState | SplitGramState:
    """The beta-step statistics of in-memory rows at prototypes ``C``: split into training
    and held-out rows by a hash of their position (seeded as :func:`fit`'s holdout) when
    :meth:`SuperSparseConfig.chooses_lam`, else of every row."""
    p = C.shape[0]
    chunk = Chunk(X, t, 0, weight=weight)

    def zero() -> GramState:  # targets of any width (a column per class)
        return GramState(np.zeros((p + 1, p + 1)), np.zeros((p + 1, t.shape[1])))

    if not config.chooses_lam(X.shape[0]):
        return GramPass(TargetRows("regression"), C, similarity).step(zero(), chunk)
    holdout = Holdout.fraction(config.validation_fraction, seed ^ VALIDATION_SALT)
    split = SplitGramPass(TargetRows("regression", None, holdout, False),
                          TargetRows("regression", None, holdout, True), C, similarity)
    return split.step(SplitGramState(zero(), zero()), chunk)


def _rows_gamma(X: np.ndarray, t: np.ndarray, weight: np.ndarray, C: np.ndarray,
                config: SuperSparseConfig, gamma: float, seed: int) -> float:
    """``gamma="auto"`` of :func:`start_online`: the prototypes' own width ``gamma``, or
    with ``lam="auto"`` a wider one chosen on these rows by :func:`_choose_gamma`'s rule
    (the held-out rows of :func:`_rows_lam`, or the GCV score of every row for ridge
    coefficients when too few are held out)."""
    if config.lam != "auto":
        return gamma
    losses = []
    for factor in AUTO_GAMMA_FACTORS:
        stats = _rows_stats(X, t, weight, C, config, config.similarity_of(gamma * factor),
                            seed)
        if isinstance(stats, GramState):
            if config.coef != "ridge":  # LASSO takes a fixed share of lam_scale here
                return gamma
            losses.append(_width_loss(config, stats, None))
            continue
        if stats.train.weight <= 0 or stats.valid.weight <= 0:
            return gamma
        losses.append(_width_loss(config, stats.train, stats.valid))
    return _chosen_width(gamma, losses)


def _rows_lam(X: np.ndarray, t: np.ndarray, weight: np.ndarray, C: np.ndarray,
              config: SuperSparseConfig, similarity: Similarity, seed: int,
              constant: bool = False) -> float:
    """The penalty of :func:`start_online`: ``lam``, or ``"auto"``'s choice on these rows
    (targets ``constant``: the fallback share of the ridge unit, as nothing can choose)."""
    if config.lam != "auto":
        return float(config.lam)
    if constant:
        stats = GramPass(TargetRows("regression"), C, similarity).step(
            GramState(np.zeros((C.shape[0] + 1, C.shape[0] + 1)), np.zeros((C.shape[0] + 1,
                                                                             t.shape[1]))),
            Chunk(X, t, 0, weight=weight))
        if stats.weight <= 0:
            raise DataError("no rows with positive weight to train on")
        return AUTO_LAM_FALLBACK * lam_scale(stats, "ridge")
    stats = _rows_stats(X, t, weight, C, config, similarity, seed)
    if isinstance(stats, GramState):
        return AUTO_LAM_FALLBACK * lam_scale(stats, config.coef)
    if stats.train.weight <= 0:
        raise DataError("no rows with positive weight to train on")
    return choose_lam(stats.train, stats.valid, config.coef)


def _first_rows_prototypes(X: np.ndarray, weight: np.ndarray, config: SuperSparseConfig,
                           p: int, seed: int, std: Standardiser | None) -> np.ndarray:
    if not isinstance(config.init, str):
        C = np.array(config.init, dtype=np.float64)
        if C.shape != (p, X.shape[1]):
            raise DataError(f"init has shape {C.shape}; expected ({p}, {X.shape[1]})")
        return C if std is None else (C - std.shift) / std.scale
    candidates = np.flatnonzero(weight > 0)
    if candidates.size < p:
        raise DataError(f"{p} prototypes need at least {p} rows with positive weight in "
                        f"the first partial_fit call, it has {candidates.size}")
    rng = np.random.default_rng(seed ^ INIT_SALT)
    if config.init == "kmeans":
        rows = np.ascontiguousarray(X[candidates])
        return lloyd(rows, kmeans_plus_plus(rows, p, rng), KMEANS_ITERATIONS)
    return np.array(X[np.sort(rng.choice(candidates, p, replace=False))], dtype=np.float64)
