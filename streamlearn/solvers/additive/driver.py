"""The additive-kernel SVM as a short sequence of passes (what ``AdditiveSVC.fit`` runs).

1. a reduction pass summarises the features (min, max, mean, std, quantiles), counts the
   training rows and adds up their sample weights; the feature map is fitted from the
   summary or from a given range (a linear model without calibration and without weights
   skips this pass: the store's metadata counts its rows). Data of 64 chunks or more
   whose 16 chunks hold 100,000 rows or more, without weights and without rows dropped
   for missing values, is summarised from 16 ranges spread over it, each the first
   65,536 rows (at most) of a chunk: a quarter of a pass or less, about a million rows
   however large the data (``_summary``);
2. at most ``epochs`` sequential passes, each visiting the chunks in a new seeded random
   order, run PEGASOS or dual coordinate descent (the dual variables live in an
   ``ExampleState``); with ``k > 2`` classes the one-vs-rest or one-vs-one models are
   updated from each row read. With ``tol`` set, a stopping rule ends them earlier (see
   :func:`fit`); reaching ``epochs`` without meeting it is recorded (:class:`Convergence`,
   which binary models the rule still found moving), and the estimator warns
   ``ConvergenceWarning`` once for the whole fit, however many trainings it ran;
3. the held-out calibration rows' scores are binned and a Platt sigmoid is fitted per
   binary model when every model's rows hold at least 10 of each of its labels
   (``MIN_CALIBRATION_ROWS``; else one more pass bins the scores of every row, training
   rows included, and the sigmoids are fitted to those): the bins are
   filled by the last epoch's pass when PEGASOS's stopping rule ended the fit (it
   scored the returned model on those rows), else by a reduction pass of its own (over
   the same 16 ranges on such data, ``_calibration``).

With ``interactions = k > 0`` (B-spline maps), these passes train the per-feature model
first; then one reduction pass screens the pairs of features by its residuals
(:mod:`~streamlearn.solvers.additive.interactions`), and steps 2-3 run again, from the
same summary, on the per-feature bases plus the ``k`` chosen pairs' tensor-product bases
(:class:`~streamlearn.features.pair_terms.BSplinePairMap`). With ``value_terms``, before
the pairs, one reduction pass screens the per-feature model's residuals for features
whose effect jumps at single values
(:mod:`~streamlearn.solvers.additive.value_screening`), and steps 2-3 run again with the
chosen features' value terms, kept when the held-out rows say they pay
(:func:`with_value_terms`); the pairs are then screened on the model kept.

With ``multiclass="auto"`` and 3 to :data:`MAX_AUTO_OVO_CLASSES` classes, all of this
runs one-vs-rest, and the model kept is trained once more one-vs-one, from the same
summary, kept when its probabilities' held-out log-loss is lower
(:func:`_one_vs_one_if_better`); the linear model is then tried in the scheme kept.

Where the held-out share would hold fewer than :data:`MIN_CHECK_ROWS` rows (fewer than
2,000 rows at 0.1) but the rows are at least that many, :data:`MIN_CROSS_FIT_OTHERS` of
them outside the largest class, and an epoch's work ``n_rows * (n_features + 1) *
n_models`` is at most :data:`CROSS_FIT_WORK` (:func:`cross_fit_folds`), the
:data:`CROSS_FIT_FOLDS` folds of the row hash make these choices instead: each candidate
is trained on every fold's other rows (its pairs screened on them) and judged by the
folds' held-out log-loss weighted by their rows, each row held out once
(:func:`_cross_fitted_terms`), by the same rules; the model kept is then trained once on
every row, its probabilities the one slope shared by its binary models (value terms are
not tried there).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from streamlearn.data import Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.row_ranges import run_on_ranges, spread_ranges
from streamlearn.errors import LabelError
from streamlearn.features import BSplineMap, BSplinePairMap, FeatureMap, FourierMap, HermiteMap
from streamlearn.features.pair_terms import PAIR_BASES, move_marginals
from streamlearn.features.tail_transform import TailTransform, choose_tail_transform
from streamlearn.features.value_terms import frequent_values
from streamlearn.solvers.additive.interactions import (
    SCREEN_BINS,
    ResidualModel,
    ScreeningPass,
    bin_edges,
    candidate_features,
    choose_interactions,
    common_bins,
    fast_gains,
)
from streamlearn.solvers.additive.passes import (
    CalibrationPass,
    ClassLogLossPass,
    ClassLoss,
    DcdEpochPass,
    DcdState,
    Holdout,
    ModelPairs,
    PegasosEpochPass,
    PegasosState,
    Summary,
    SummaryPass,
    TrainingRows,
    w_to_w_d,
)
from streamlearn.solvers.additive.value_screening import (
    ValueCountPass,
    ValueScreeningPass,
    choose_value_terms,
    widen_tables,
)
from streamlearn.solvers.calibration import (
    MIN_CALIBRATION_ROWS,
    ScoreHistogram,
    fit_shared_slope,
)
from streamlearn.solvers.compile_ahead import KernelCall, compile_ahead, runs_here
from streamlearn.solvers.dcd import LOSSES, mean_embedding, move_centre
from streamlearn.solvers.embedding import (
    Embedding,
    decision_ovr_chunk,
    embedded_sq_norm,
    embedding_params,
    model_dot,
    model_sq_norm,
    weights_from_w_d,
)
from streamlearn.solvers.kmeans import Standardiser
from streamlearn.solvers.pegasos import NO_AVERAGING

#: ``interactions="auto"`` adds pairs only when at least this many rows are held out to
#: check them on.
MIN_CHECK_ROWS = 200
#: Where the held-out share would hold fewer than :data:`MIN_CHECK_ROWS` rows, this many
#: folds of the row hash choose the settings instead (:func:`cross_fit_folds`): each row is
#: held out once, so the summed held-out log-loss rests on every row.
CROSS_FIT_FOLDS = 5
#: Cross-fitting needs at least this many rows outside the largest class (about 10 a
#: fold, what Platt's sigmoids need of a label, ``MIN_CALIBRATION_ROWS``).
MIN_CROSS_FIT_OTHERS = 50
#: Cross-fitting trains every candidate once a fold; it runs where
#: ``n_rows * (n_features + 1) * n_models`` (``n_models`` the binary models one-vs-rest
#: trains, 1 for two classes), an epoch's work, is at most this. On two shared cores
#: (load 8-11): digits' 1,258 training rows (8.2e5) took 38 s a fit cross-fitted, 0.7 s
#: before, and lowered the test error from 3.04 to 2.52 %; 1,500 rows of 100 features
#: and 10 classes (1.5e6) 35 s, 6.7 s without; 1,500 x 500 (7.5e6) is not cross-fitted.
CROSS_FIT_WORK = 1_000_000
#: ``interactions="auto"`` keeps screened pairs only when they lower the held-out log-loss
#: by at least this share of the per-feature model's for each multiple of its work per row
#: that they add (:func:`pairs_pay`): a pair term is one more surface to embed in every
#: epoch and every prediction, so a small gain must come cheap.
PAIR_GAIN_PER_COST = 0.005
#: ``value_terms="auto"`` keeps value terms only when they lower the held-out log-loss by
#: at least this share of the per-feature model's. They add little work (one entry a term
#: in a row), but a smaller gain is within the noise of the held-out rows: on MNIST odd/even
#: one pixel's term lowered it by 0.12 %, and the test error went from 5.41 to 5.76 %.
VALUE_GAIN = 0.005
#: ``interactions="auto"``: a screened pair whose FAST score reaches this many times the
#: number of binary models is a strong one (:func:`strong_pairs`). A score counts in
#: units of one row's residual variance, and a pair without an interaction scores the
#: best of its 225 cuts of a reduction that is about chi-square with 3 degrees of freedom:
#: 1 to 15 a model on the benchmark's data, where planted pairs score 40 to 3,000. Where
#: some pairs are strong and others not, the strong ones alone are trained too, and kept
#: when they do at least as well on the held-out rows.
STRONG_PAIR_SCORE = 25.0
#: Rows of the describe sample embedded at once (the term importances, the step offset).
SAMPLE_BLOCK_ROWS = 256
#: The term importances keep the terms of the first pass over the sample for the second
#: when they take at most this many bytes (float64 rows x terms x models); else they are
#: computed again.
IMPORTANCE_KEPT_BYTES = 64 * 2**20
#: PEGASOS's rule: a mean held-out hinge loss below this, per binary model, improves by
#: shares of this (a held-out set that the model nearly separates).
LOSS_FLOOR = 0.01
#: ``multiclass="auto"`` tries one-vs-one for at most this many classes: its
#: ``k (k - 1) / 2`` binary models are then at most ``(k - 1) / 2 = 3`` times
#: one-vs-rest's ``k``, so that its candidate training (every held-out row is scored by
#: every model in each epoch and in the calibration passes) and its prediction (every
#: model scores every row) cost a bounded multiple. Ordered labels (ratings, grades,
#: bands) mostly have up to 7 levels; with 10 classes the candidate took usps's fit from
#: 11 to 20 s and pendigits's from 2.0 to 3.0 s, and kept one-vs-rest on both.
MAX_AUTO_OVO_CLASSES = 7
#: Mixed into the seed to choose the calibration rows.
HOLDOUT_SALT = 0x0CA1_1B2A_7E5E_ED00
#: Data of at least this many chunks is described and calibrated from a sample of its
#: chunks ...
DESCRIBE_MIN_CHUNKS = 64
#: ... this many, spread evenly over the rows (see ``_sample_ranges``) ...
DESCRIBE_SAMPLE_CHUNKS = 16
#: ... when they hold at least this many rows (10,000 of them held out for calibration).
DESCRIBE_SAMPLE_ROWS = 100_000
#: Rows of each sampled range at most: the first rows of a larger chunk, so that the
#: sample holds about a million rows however large the chunks (a 16 MiB chunk of 16
#: float32 features holds 262,144 rows, and 16 of them 4.2 million, each trial of the
#: search reading them several times).
DESCRIBE_SAMPLE_RANGE_ROWS = 1 << 16


@dataclass(frozen=True)
class AdditiveConfig:
    """Hyper-parameters of one fit (validated by the estimator).

    Attributes
    ----------
    feature_map : FeatureMap or None
        Unfitted embedding (None: the raw features); fitted in place by :func:`fit`.
    feature_range : tuple of two ndarrays of shape (n_features,), or None
        Range the feature map covers instead of the data's (see :func:`fit_feature_map`).
    solver : {"pegasos", "dcd"}
    multiclass : {"ovr", "ovo", "auto"}
        The binary models of more than two classes; :func:`fit` resolves ``"auto"``
        (:func:`resolve_multiclass`) and trains one-vs-rest, then maybe one-vs-one
        (``ovo_candidate``), so that every training sees ``"ovr"`` or ``"ovo"``.
    C : float
    lam : float or None
    loss : {"hinge", "squared_hinge"}
    epochs : int
        Cap on the training passes.
    tol : float or None
        Stopping rule threshold (None: run ``epochs`` passes, no rule, no warning).
    n_iter_no_change : int
        PEGASOS: passes without a relative improvement larger than ``tol`` before it stops.
    average : bool
    online : bool
    calibration_fraction : float or None
        None: no calibration.
    bias_scale : float
    interactions : int
        Pair terms to screen for and add to a B-spline map (0: none; given pairs come in
        the feature map, a :class:`~streamlearn.features.pair_terms.BSplinePairMap`).
    check_interactions : bool
        Keep the pairs only when they lower the held-out log-loss enough for their cost
        (:func:`pairs_pay`; ``interactions="auto"``); without at least
        :data:`MIN_CHECK_ROWS` held-out rows, add none.
    max_interactions : int
        With ``check_interactions``: screen for this many pairs (at least
        ``interactions``) and, once the first ``interactions`` pay, train twice as many
        of the best in turn while each step pays for its own cost (:func:`more_pairs`).
    pair_grids : tuple of int
        Bases per axis of the pairs' grid (screened or given pairs), tried in order: the
        first, then each finer one while it lowers the held-out log-loss
        (:func:`finer_pair_grids`).
    bases_grid : tuple of int
        B-spline bases per feature, tried in order the same way (:func:`finer_feature_bases`);
        the feature map has the first. Empty: the feature map's own count only.
    spread_tails : bool
        Map crowded features before a B-spline, Fourier or Hermite map (dense rows, not
        zero-preserving, no ``feature_range``), or before the linear model (no feature
        map; the caller leaves it off where that model trains on the features as they
        are), by the rule of :mod:`streamlearn.features.tail_transform`, chosen from the
        describe pass.
    linear_candidate : bool
        With ``bases_grid``: also train the linear model (no feature map) on the same rows
        once the B-spline model is chosen, and keep it instead when its held-out log-loss
        is lower (:func:`_linear_if_better`).
    slope_on_training_rows : bool
        With no rows held out (``calibration_fraction`` None), choose the sigmoids' one
        shared slope (``B = 0``) on the training rows' scores after training
        (:func:`~streamlearn.solvers.calibration.fit_shared_slope`, one more pass), instead
        of the plain logistic's ``A = -1``.
    standardize_linear : bool
        A linear model (no feature map) on dense rows trains on the features standardised
        by the describe pass's mean and standard deviation, folded into its weights
        afterwards (:func:`fold_standardisation`); the describe pass is then always made.
        Without a bias (``bias_scale = 0``) the features are scaled but not centred, so
        the model stays one without an intercept.
    scale_linear : bool
        A linear model on sparse rows, or one that keeps zeros (``zero_preserving``),
        trains on each feature divided by its largest absolute value in the describe pass
        (a column of zeros keeps the scale 1), folded into its weights afterwards: a
        shift would fill the zeros in, a scale keeps them, and a feature's units then do
        not decide how much the penalty holds its weight back (0/1 columns stay as they
        are). The describe pass is then made on dense rows; on sparse rows, which it
        reads whole, only where the fit makes it anyway (rows held out for calibration,
        weights, dropped rows): otherwise the rows train as they are,
        and the fit reads them once an epoch.
    value_terms : bool
        Screen the per-feature model's residuals for features whose effect jumps at single
        values, and keep value terms for them when they lower the held-out log-loss
        (:func:`with_value_terms`; dense rows, a B-spline map that is not zero-preserving).
    ovo_candidate : bool
        With ``multiclass="ovr"``: once the one-vs-rest model is chosen, train its
        settings again with one model per pair of classes, and keep that one when the
        log-loss of its class probabilities on the held-out rows is lower
        (:func:`_one_vs_one_if_better`; set by :func:`resolve_multiclass`). The
        one-vs-one candidate is trained with it on too: a fit with it computes the
        held-out log-loss of its class probabilities (:attr:`compares_models`).
    cross_fit_share : float or None
        The share of the rows to hold out for the choices as asked
        (``calibration_fraction`` with calibrated probabilities, also where the
        estimator holds none out because that share is too small; None: no
        cross-fitting): with ``class_shares``, what :func:`cross_fit_folds` judges by.
    cross_fit_rows : int or None
        The rows of positive weight :func:`cross_fit_folds` counts (None: every row).
    class_shares : tuple of float or None
        The rows (or weight) of each class (None: not known, no cross-fitting).
    folds : tuple of Holdout
        Set by :func:`fit` where :func:`cross_fit_folds` applies: every training is then
        one on each fold's other rows, judged on the fold, and one on every row
        (:func:`_cross_fitted_terms`). Empty: the held-out share, if any, judges.
    """

    feature_map: FeatureMap | None
    feature_range: tuple[np.ndarray, np.ndarray] | None
    solver: str
    multiclass: str
    C: float
    lam: float | None
    loss: str
    epochs: int
    tol: float | None
    average: bool
    online: bool
    calibration_fraction: float | None
    bias_scale: float
    n_iter_no_change: int = 2
    interactions: int = 0
    pair_grids: tuple[int, ...] = (PAIR_BASES,)
    check_interactions: bool = False
    max_interactions: int = 0
    bases_grid: tuple[int, ...] = ()
    spread_tails: bool = False
    linear_candidate: bool = False
    slope_on_training_rows: bool = False
    standardize_linear: bool = False
    scale_linear: bool = False
    value_terms: bool = False
    ovo_candidate: bool = False
    cross_fit_share: float | None = None
    cross_fit_rows: int | None = None
    class_shares: tuple[float, ...] | None = None
    folds: tuple[Holdout, ...] = ()

    @property
    def compares_models(self) -> bool:
        """Whether the fit compares models by their held-out log-loss (pairs or value
        terms checked, grids or counts of bases tried, one-vs-one tried)."""
        return (self.check_interactions or self.value_terms or len(self.pair_grids) > 1
                or len(self.bases_grid) > 1 or self.ovo_candidate)

    @property
    def pg_tol(self) -> float:
        """``dcd``'s second rule: projected gradients spanning at most ``10 tol`` (0.1,
        liblinear's ``eps``, for the default ``tol`` 0.01)."""
        return 10.0 * float(self.tol) if self.tol is not None else 0.0


@dataclass(frozen=True)
class Regularisation:
    """``lam``, ``C`` and the PEGASOS step ``lam`` of a training set.

    Attributes
    ----------
    lam, C : float
        ``C = 1 / (lam n)``, ``n = weight_sum``.
    weight_sum : float
        Total sample weight of the training rows.
    pegasos_lam : float
        ``lam * weight_sum / n_rows``: PEGASOS averages ``s_i loss_i`` over rows, the same
        objective scaled by ``n_rows / weight_sum``.
    """

    lam: float
    C: float
    weight_sum: float
    pegasos_lam: float

    @classmethod
    def of(cls, C: float, lam: float | None, n_rows: int, weight_sum: float) -> Regularisation:
        """``lam`` when given, else ``1 / (C weight_sum)``."""
        lam_ = float(lam) if lam is not None else 1.0 / (C * weight_sum)
        return cls(lam_, 1.0 / (lam_ * weight_sum), float(weight_sum),
                   lam_ * weight_sum / n_rows)


@dataclass(frozen=True)
class AdditiveFit:
    """What :func:`fit` learns.

    Attributes
    ----------
    feature_names : tuple of str, or the NumberedNames of a sparse source
    feature_map : FeatureMap or None
    n_train, n_calibration : int
    regularisation : Regularisation
    coef_d, state_w_d : ndarray of shape (n_models, n_dims + 1), float64
        Models in ``w_d`` form (averaged for PEGASOS with averaging) and last iterates.
    platt_a, platt_b : ndarray of shape (n_models,)
    calibrated : bool
    n_iter, t, average_start : int
    pg_range : float or None
        ``dcd`` only.
    centre_d : ndarray of shape (n_dims + 1,) or None
        ``dcd`` only: the mean embedded row its rows were centred on (:func:`dcd_centre`),
        ``w_d`` form; None when they were not.
    monitor_history : tuple of float
        PEGASOS with a stopping rule: the monitored loss of the model after each epoch but
        the last; ``dcd``: the relative duality gap of the model after each epoch but the
        last (see :func:`fit`).
    importances : ndarray of shape (n_features + n_pairs,) or None
        :func:`term_importances` over the describe pass's row sample (None without one):
        the features', then the pair terms'.
    pair_scores : ndarray of shape (n_pairs,) or None
        The FAST scores of the screened pairs that were chosen (None without screening).
    held_out_log_loss : float or None
        Calibrated log-loss of the held-out rows (None without calibration): of the one
        binary model, or, with more and ``config.compares_models``, of the class
        probabilities (:class:`ClassLogLossPass`, one more pass); else the mean over the
        binary models.
    proba_log_loss : float or None
        With the class probabilities' ``held_out_log_loss``: the log-loss of the
        probabilities :meth:`~streamlearn.models.AdditiveSVC.predict_proba` gives on the
        held-out rows, one-vs-rest's at its temperature (:meth:`ClassLoss.tempered_log_loss`),
        one-vs-one's (no temperature) and two classes' the same as ``held_out_log_loss``;
        None without.
    multiclass : {"ovr", "ovo"}
        The scheme the binary models were trained by (``config.multiclass``, resolved
        from ``"auto"``; two classes have one model either way).
    multiclass_check : dict or None
        With ``config.ovo_candidate`` (``multiclass="auto"``): the held-out log-loss of
        the probabilities of each scheme (``"ovr"``, ``"ovo"``: ``proba_log_loss``;
        ``"ovo"`` None when not trained, then the ``"reason"``) and the one ``"kept"``.
    pair_check : dict or None
        With ``check_interactions``: the screened pairs, both models' held-out log-loss,
        each pair grid tried with its held-out log-loss (``pair_bases``) and whether the
        pairs were kept.
    bases_tried : tuple of (int, float or None)
        With ``config.bases_grid``: each count of bases per feature trained, with its
        held-out log-loss (:func:`finer_feature_bases`).
    feature_transform : TailTransform or None
    fewest_calibration_rows : int or None
        The fewest held-out rows of one label in a binary model's calibration set (None
        without held-out rows). Below
        :data:`~streamlearn.solvers.calibration.MIN_CALIBRATION_ROWS` the sigmoids are
        fitted to the scores of every row, training rows included (one more pass;
        ``calibrated`` False), and ``held_out_log_loss`` is theirs.
    linear_check : dict or None
        With ``config.linear_candidate``: the held-out log-loss of the linear model
        (``linear``) and of the B-spline model chosen (``curves``), and whether the linear
        one was kept (``kept``).
    ranges : ndarray of shape (n_features, 2) or None
        A linear model's (no feature map) observed ``(min, max)`` of each feature, from
        the describe pass (None without one): the span its shape functions are drawn on.
    proba_scale : float
        One-vs-rest with more than two classes and ``config.compares_models``: the
        temperature ``s`` of the class probabilities ``p^s / sum p^s`` of lowest held-out
        log-loss (:meth:`ClassLoss.scale`, from the pass that computes
        ``held_out_log_loss``); 1 otherwise.
    value_check : dict or None
        With ``config.value_terms``: the screened features with their scores, both
        models' held-out log-loss and whether the value terms were kept
        (:func:`with_value_terms`); None when none was screened.
    step_norm_sq : float
        ``R^2`` of PEGASOS's step offset ``t0 = R^2 / lam`` (:func:`step_norm_sq`; 0 for
        ``dcd`` and without a row sample).
    convergence : Convergence or None
        How the training of these models ended: whether the stopping rule was met, and
        for which binary models it was not at the cap (None for a fit made otherwise).
    trainings : tuple of Convergence
        From :func:`fit`: the record of every training the fit ran, in order, this
        model's (``convergence``) among them: the models trained to be compared (counts
        of bases, pairs, grids, value terms, the linear model, one-vs-one) and, on data
        chosen on a sample of chunks, those of the sample.
    fold_fits : tuple of AdditiveFit
        While a cross-fitted search runs (``config.folds``): the same model trained on
        each fold's other rows, whose held-out losses this fit's are the weighted mean
        of; empty in the fit :func:`fit` returns.
    cross_fit : dict or None
        From :func:`fit` where folds chose the settings (:func:`cross_fit_folds`):
        ``n_folds`` and each fold's held-out rows (``fold_rows``); None otherwise.
    pending : tuple of (AdditiveConfig, Summary or None), or None
        While a cross-fitted search runs: a candidate judged by its folds but not yet
        trained on every row (its other fields are its first fold's, its map fitted from
        every row's summary); :func:`fit` trains the one kept from this config and
        summary. None for a trained fit.
    """

    feature_names: tuple[str, ...]
    feature_map: FeatureMap | None
    n_train: int
    n_calibration: int
    regularisation: Regularisation
    coef_d: np.ndarray
    state_w_d: np.ndarray
    platt_a: np.ndarray
    platt_b: np.ndarray
    calibrated: bool
    n_iter: int
    t: int
    average_start: int
    pg_range: float | None
    monitor_history: tuple[float, ...] = ()
    centre_d: np.ndarray | None = None
    importances: np.ndarray | None = None
    pair_scores: np.ndarray | None = None
    held_out_log_loss: float | None = None
    pair_check: dict[str, Any] | None = None
    bases_tried: tuple[tuple[int, float | None], ...] = ()
    feature_transform: TailTransform | None = None
    fewest_calibration_rows: int | None = None
    linear_check: dict[str, Any] | None = None
    ranges: np.ndarray | None = None
    proba_scale: float = 1.0
    value_check: dict[str, Any] | None = None
    step_norm_sq: float = 0.0
    convergence: Convergence | None = None
    trainings: tuple[Convergence, ...] = ()
    proba_log_loss: float | None = None
    multiclass: str = "ovr"
    multiclass_check: dict[str, Any] | None = None
    fold_fits: tuple[AdditiveFit, ...] = ()
    cross_fit: dict[str, Any] | None = None
    pending: tuple[AdditiveConfig, Summary | None] | None = None


def fit_feature_map(feature_map: FeatureMap,
                    feature_range: tuple[np.ndarray, np.ndarray] | None,
                    **stats: Any) -> None:
    """Fit ``feature_map`` from data statistics, or from ``feature_range`` when given.

    A given range replaces the statistics: minimum and maximum are its bounds, mean and
    standard deviation those of the uniform distribution over it (the Hermite map
    standardises by them).
    """
    if feature_range is not None:
        lo, hi = feature_range
        stats = dict(minimum=lo, maximum=hi, mean=(lo + hi) / 2,
                     std=(hi - lo) / np.sqrt(12.0), quantiles=None)
    feature_map.fit_from_stats(**stats)


def knot_per_category(feature_map: FeatureMap, feature_names: Sequence[str],
                      categories: Mapping[str, Sequence[Any]]) -> list[int]:
    """Give each category of a categorical feature a knot of its own, where the bases allow.

    A categorical feature arrives as codes ``0 .. k - 1`` (and ``k`` for a category unseen
    in fit). When ``k + 1`` codes fit on the B-spline grid (``k <= n_bases - degree``), the
    feature's range becomes ``[0, n_bases - degree]``: code ``c`` sits on knot ``c``, so
    with degree 1 it switches on basis ``c`` alone and the model learns one value per
    category (its shape); an unseen category gets the weight of a basis no training row
    touched, zero. With more categories the codes are spread over the range like numbers
    (neighbouring codes share bases); raise ``n_bases`` to separate them.

    A pair map also gives each categorical feature's pair axis a node per category
    (:meth:`~streamlearn.features.BSplinePairMap.set_category_axes`, up to its cap),
    whatever the count of bases.

    Returns
    -------
    list of int
        The features given a knot per category.
    """
    if not isinstance(feature_map, BSplineMap) or not categories:  # pair maps included
        return []
    names = list(feature_names)
    room = feature_map.n_bases - feature_map.degree
    done = []
    for name, values in categories.items():
        if name in names and len(values) <= room:
            j = names.index(name)
            feature_map.lo_[j] = 0.0
            feature_map.hi_[j] = float(room)
            done.append(j)
    if isinstance(feature_map, BSplinePairMap):
        feature_map.set_category_axes({names.index(name): len(values)
                                       for name, values in categories.items()
                                       if name in names})
    return done


def training_rows(config: AdditiveConfig, emb: Embedding, n_features: int,
                  holdout: Holdout | None) -> TrainingRows:
    """How chunks become kernel arrays: embedded on the fly, or materialised first."""
    if config.online or config.feature_map is None:
        return TrainingRows(emb, None, holdout)
    n_columns = config.feature_map.n_output_features(n_features)
    return TrainingRows(embedding_params(None, n_columns), config.feature_map, holdout)


def fit(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int) -> AdditiveFit:
    """Train the binary models of an additive-kernel SVM by streaming over ``dataset``.

    Parameters
    ----------
    runner : engine
        Runs the passes (``run(pass_, dataset, ...)``).
    dataset : Dataset
        With a classification target (``dataset.classes``).
    config : AdditiveConfig
    seed : int
        Seeds the shuffling, the DCD visiting orders and the calibration rows.

    Returns
    -------
    AdditiveFit

    Notes
    -----
    Stopping rules (``config.tol`` not None; both solvers run at most ``config.epochs``
    passes; reaching it without meeting the rule is recorded in the training's
    :class:`Convergence`, with the binary models the rule still found moving, and the
    fit's ``trainings`` hold the record of every training it ran, so that the estimator
    warns ``ConvergenceWarning`` once for them all):

    * ``dcd``: the duality gap. The pass of epoch ``e`` also sums, over the rows it reads,
      the losses ``C_i loss(y_i w_{e-1} . z_i)`` of the model as it was after epoch
      ``e - 1`` (one more sparse dot product per row and model, no extra read), giving
      its primal objective ``P``; the dual objective ``D`` of the same iterate comes from
      the sums of its dual variables. It stops after the first epoch at which
      ``(P - D) / P <= tol`` for every binary model and returns that previous iterate:
      its objective is within ``tol`` of the optimum (weak duality).
      It also stops by liblinear's rule, when the projected gradients of all dual
      variables (and 0) span at most ``10 tol`` in an epoch (0.1, liblinear's ``eps``,
      for the default ``tol``); the projected gradient is ``y_i f(x_i) - 1`` (plus
      ``alpha_i / (2 C_i)`` for the squared hinge) clipped at active bounds. The relative
      gap is what lets ill-conditioned embeddings stop (``penalty_order >= 1``, where
      the projected gradients of a few rows stay large long after the objective has
      settled).
    * PEGASOS: the hinge loss on the calibration rows. The pass of epoch ``e`` also scores
      the rows held out for calibration with a frozen copy of the model as it was after
      epoch ``e - 1`` (the averaged model with ``average``), so no extra pass is needed:
      ``L_e``, the sum over binary models of their mean hinge loss on their held-out rows.
      Without held-out rows (``calibrate=False``) it scores the training rows and ``L_e``
      is the regularised objective ``lam / 2 ||w||^2 + mean hinge loss`` instead; so do
      the epochs after the first scored one when a binary model's held-out rows hold no
      row of one of its labels (:func:`blind`: one row of a class among thousands), whose
      held-out loss only falls as every score goes to the other label (the rule starts
      afresh then, and ``monitor_loss_`` holds that first held-out value before the
      training objective's). It stops
      after ``n_iter_no_change`` consecutive evaluations that improve on the best ``L`` so
      far by less than ``tol`` times it (times 0.01 per binary model when it is below
      that: a nearly separated held-out set), and returns the model it judged last (after epoch
      ``e - 1``), or the one of lowest ``L`` when ``L`` has risen from it by more than
      twice the sampling error of the difference (:func:`rose`; within it, the later
      model, which averages more epochs, is kept); the pass that judged the returned
      model also binned its held-out scores: they are its calibration set, so a fit
      stopped by the rule makes no calibration pass. Every epoch costs a
      full read of the data and the held-out estimate is noisy, so the default asks a
      worthwhile improvement in two (not sklearn's five) consecutive epochs.

    With ``average``, PEGASOS returns the mean of its iterates over at least the last half
    of its epochs (:class:`EpochWindow`; over the second half of the first epoch when it
    stops there): the number of epochs is not known in advance, so each epoch averages its
    own iterates and the window combines them.

    With ``config.interactions = k > 0`` the per-feature model is trained first, a
    screening pass ranks the feature pairs by its residuals (:func:`screen_interactions`),
    and the model with the ``k`` best pairs is trained from the same summary; both
    trainings follow the rules above. With ``config.check_interactions`` the model with
    pairs is returned only when its calibrated log-loss on the held-out rows is lower
    than the per-feature model's by a share that grows with the pairs' cost
    (:func:`pairs_pay`); with fewer than :data:`MIN_CHECK_ROWS` held-out rows no
    pairs are screened, unless folds of the rows judge instead (:func:`cross_fit_folds`:
    every training is then one a fold, :func:`_cross_fitted_terms`, and the model kept
    is trained on every row at the end). The pairs, screened or given, are trained on the grids of
    ``config.pair_grids`` in turn while each lowers the held-out log-loss
    (:func:`finer_pair_grids`). Then, with ``config.bases_grid``, the model kept (with
    its pairs, if any, on their grid) is trained again with each following count of
    bases per feature the same way (:func:`finer_feature_bases`); pairs are screened with
    the first count, the smallest, and checked again at the count kept (:func:`_search_bases`).
    On data whose describe pass reads a sample of chunks
    (:func:`_sample_ranges`) all of this runs on those chunks alone (their own row
    counts, epochs over them only), and the model the sample kept (its count, its pairs
    and their grid) is then trained once on every row: the screening, the checks and the
    searches cost passes over the sample, not a training over the data each.

    With ``config.multiclass="auto"`` (:func:`resolve_multiclass`) the search runs
    one-vs-rest; for 3 to :data:`MAX_AUTO_OVO_CLASSES` classes the model it kept is then
    trained one-vs-one with the same settings and kept when the log-loss of its
    probabilities on the held-out rows is lower (:func:`_one_vs_one_if_better`), before
    the linear model is tried (in the scheme kept); on a sample of chunks the sample
    chooses the scheme, and the final training on every row uses it.

    With ``config.spread_tails`` the describe pass comes first, on those chunks where
    they are read, and its row sample chooses the
    :class:`~streamlearn.features.tail_transform.TailTransform` of crowded features;
    every later pass reads the rows through it (:meth:`Dataset.with_feature_transform`),
    its summary describes the mapped rows, and the fit returns it
    (``AdditiveFit.feature_transform``).
    """
    feature_map = config.feature_map
    search = len(config.bases_grid) > 1 and isinstance(feature_map, BSplineMap)
    classes = dataset.classes
    assert classes is not None
    config = resolve_multiclass(config, len(classes))
    sample = _sample_dataset(dataset) if search else None
    folds = (cross_fit_folds(config, dataset.n_rows, len(dataset.feature_names),
                             len(classes), seed) if sample is None else ())
    if folds:
        config = replace(config, folds=folds, calibration_fraction=None)
    token = _CROSS_FIT.set(_CrossFitState({}, []) if folds else None)
    try:
        with recording_trainings() as trainings:
            summary, transform = _spread_tails(runner, dataset if sample is None else sample,
                                               config, seed)
            if transform is not None:
                dataset = dataset.with_feature_transform(transform)
                sample = None if sample is None else sample.with_feature_transform(transform)
            fitted = _fit_searched(runner, dataset, sample, config, seed, summary)
            if fitted.pending is not None:  # the model the folds kept, on every row
                every_config, every_summary = fitted.pending
                trained, _ = _fit_terms_on(runner, dataset, every_config, seed,
                                           every_summary, True, None)
                fitted = replace(trained, **{name: getattr(fitted, name) for name in (
                    "pair_check", "pair_scores", "linear_check", "value_check",
                    "bases_tried", "multiclass_check")})
    finally:
        _CROSS_FIT.reset(token)
    if folds:  # the model kept was trained on every row: no rows held out of it
        fitted = replace(fitted, n_calibration=0, calibrated=False,
                         fewest_calibration_rows=None, fold_fits=(),
                         cross_fit={"n_folds": len(folds),
                                    "fold_rows": [fold.count(dataset.n_rows)
                                                  for fold in folds]},
                         **{name: {**check, "cross_fitted": True}
                            for name in ("pair_check", "linear_check", "multiclass_check",
                                         "value_check")
                            if (check := getattr(fitted, name)) is not None})
    return replace(fitted, feature_transform=transform, trainings=tuple(trainings))


def _spread_tails(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int
                  ) -> tuple[Summary | None, TailTransform | None]:
    """With ``config.spread_tails``: the describe summary of ``dataset`` and the
    :class:`~streamlearn.features.tail_transform.TailTransform` its sample calls for
    (None when no feature is crowded), the summary then describing the mapped rows.
    Without, or where it does not apply: ``(None, None)``, and the fit describes the
    data itself."""
    fmap = config.feature_map
    mapped = fmap is None or (isinstance(fmap, BSplineMap | FourierMap | HermiteMap)
                              and not fmap.zero_preserving)
    if not (config.spread_tails and mapped and not dataset.is_sparse
            and config.feature_range is None):
        return None, None
    classes = dataset.classes
    assert classes is not None
    holdout = _holdout_of(config, seed)
    summary = _summary(runner, dataset, len(classes), holdout, seed)
    desc = summary.description
    transform = choose_tail_transform(dataset, desc.sample, desc.min, desc.max)
    if transform is None:
        return summary, None
    return replace(summary, description=transform.describe(desc)), transform


def _fit_searched(runner: Any, dataset: Dataset, sample: Dataset | None,
                  config: AdditiveConfig, seed: int, summary: Summary | None) -> AdditiveFit:
    """:func:`fit` once the rows' map is known: on ``sample`` (chunks of ``dataset``, see
    :func:`_sample_dataset`) when given, then once on every row; ``summary``, when
    given, describes ``sample`` if given, else ``dataset``."""
    feature_map = config.feature_map
    search = len(config.bases_grid) > 1 and isinstance(feature_map, BSplineMap)
    if sample is not None:  # choose on a sample of chunks, then train once on all rows
        on_sample, sample_summary = _fit_with_pairs(runner, sample, config, seed, summary)
        best, tried = _search_bases(runner, sample, config, seed, sample_summary, on_sample)
        best = _one_vs_one_if_better(runner, sample, config, seed, sample_summary, best)
        best = _linear_if_better(runner, sample, replace(config, multiclass=best.multiclass),
                                 seed, sample_summary, best)
        # the same count, pairs, grid and scheme, unfitted: no screening, no grid or
        # count search, no scheme tried
        fitted, _ = _fit_with_pairs(runner, dataset, retrain_config(
            config, best.feature_map, best.multiclass), seed)
        # the final training compares no models: it keeps the sample's temperature
        return replace(fitted, bases_tried=tried, pair_check=best.pair_check,
                       pair_scores=best.pair_scores, linear_check=best.linear_check,
                       proba_scale=best.proba_scale, value_check=best.value_check,
                       multiclass_check=best.multiclass_check)
    fitted, summary = _fit_with_pairs(runner, dataset, config, seed, summary)
    if search and summary is not None and isinstance(fitted.feature_map, BSplineMap):
        best, tried = _search_bases(runner, dataset, config, seed, summary, fitted)
        if best is not fitted:
            best = with_importances(best, summary)
        best = _one_vs_one_if_better(runner, dataset, config, seed, summary, best)
        # the linear model is tried in the scheme kept
        best = _linear_if_better(runner, dataset, replace(config, multiclass=best.multiclass),
                                 seed, summary, best)
        return replace(best, bases_tried=tried)
    return _one_vs_one_if_better(runner, dataset, config, seed, summary, fitted)


def resolve_multiclass(config: AdditiveConfig, n_classes: int) -> AdditiveConfig:
    """``config`` with ``multiclass="auto"`` resolved for ``n_classes`` classes.

    One-vs-rest is trained, and one-vs-one tried against it (``ovo_candidate``, see
    :func:`_one_vs_one_if_better`), for 3 to :data:`MAX_AUTO_OVO_CLASSES` classes; two
    classes have one model either way, and more classes make one-vs-one's
    ``k (k - 1) / 2`` models too many to train and predict with by default, so they get
    one-vs-rest alone. ``"ovr"`` and ``"ovo"`` are returned as they are."""
    if config.multiclass != "auto":
        return config
    return replace(config, multiclass="ovr",
                   ovo_candidate=3 <= int(n_classes) <= MAX_AUTO_OVO_CLASSES)


def retrain_config(config: AdditiveConfig, feature_map: FeatureMap | None,
                   multiclass: str) -> AdditiveConfig:
    """``config`` to train the model a search kept once more, as it is: an unfitted copy
    of its map (the same count of bases, pairs, grid and value terms, refitted from the
    summary), its scheme, and nothing to screen, search or compare."""
    chosen = None if feature_map is None else type(feature_map)(**feature_map.get_params())
    grids = (chosen.pair_bases,) if isinstance(chosen, BSplinePairMap) else config.pair_grids
    return replace(config, feature_map=chosen, multiclass=multiclass, interactions=0,
                   check_interactions=False, pair_grids=grids, bases_grid=(),
                   value_terms=False, linear_candidate=False, ovo_candidate=False)


def _one_vs_one_if_better(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                          summary: Summary | None, best: AdditiveFit) -> AdditiveFit:
    """With ``config.ovo_candidate`` (``multiclass="auto"``, 3 to
    :data:`MAX_AUTO_OVO_CLASSES` classes): ``best``, the one-vs-rest model chosen, or the
    same settings trained with one model per pair of classes when the log-loss of its
    class probabilities on the held-out rows is lower; either carries
    ``multiclass_check``.

    The candidate is ``best``'s map unfitted (its count of bases, pairs, grid and value
    terms, or no map for the linear model; :func:`retrain_config`), trained on ``dataset``
    from the same summary by the same rules: one more training, no new search. The
    losses compared are those of the probabilities ``predict_proba`` gives
    (``proba_log_loss``): one-vs-rest's normalised sigmoids at their temperature, which
    the same held-out rows chose, one-vs-one's pairwise coupling, which has none. Before
    the temperature one-vs-rest's normalised sigmoids are less sure than its held-out
    rows show, and one-vs-one would win on the calibration of the probabilities rather
    than on the classes. As for the linear model (:func:`_linear_if_better`), at least
    :data:`MIN_CHECK_ROWS` held-out rows must judge them and both must be calibrated on
    them; otherwise, and without the class probabilities' loss, one-vs-rest is kept
    untried.

    :func:`_fit_searched` runs this before :func:`_linear_if_better`, whose linear
    model is then trained in the scheme kept: the linear model one-vs-one can be what
    ordered classes want (6 normal features, 5 bands of a noisy linear score: one-vs-rest
    keeps 8 bases and 12 pairs to draw the middle bands, whose one-vs-one retraining
    tested at 26.6 % error, and the linear one-vs-one model, the choice of
    ``multiclass="ovo"``'s own search, at 23.8 %)."""
    if not config.ovo_candidate:
        return best
    if (best.proba_log_loss is None or not best.calibrated
            or best.n_calibration < MIN_CHECK_ROWS):
        reason = (f"{best.n_calibration} held-out rows, fewer than {MIN_CHECK_ROWS} to "
                  "compare one-vs-one on" if best.n_calibration < MIN_CHECK_ROWS
                  else "too few held-out rows of a label to calibrate on")
        return replace(best, multiclass_check={
            "kept": "ovr", "ovr": best.proba_log_loss, "ovo": None, "reason": reason})
    # ovo_candidate kept on: its training computes the class probabilities' loss too;
    # the term importances only if it is kept
    ovo, _ = _fit_terms(runner, dataset, replace(
        retrain_config(config, best.feature_map, "ovo"), ovo_candidate=True), seed, summary,
        importances=False)
    kept = (ovo.calibrated and ovo.proba_log_loss is not None
            and ovo.proba_log_loss < best.proba_log_loss)
    check = {"kept": "ovo" if kept else "ovr", "ovr": best.proba_log_loss,
             "ovo": ovo.proba_log_loss}
    if kept:
        ovo = with_importances(ovo, summary)
        return replace(ovo, pair_check=best.pair_check, pair_scores=best.pair_scores,
                       linear_check=best.linear_check, value_check=best.value_check,
                       bases_tried=best.bases_tried, multiclass_check=check)
    return replace(best, multiclass_check=check)


def _linear_if_better(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                      summary: Summary | None, best: AdditiveFit) -> AdditiveFit:
    """With ``config.linear_candidate``: the linear model (the raw features, no map)
    trained on ``dataset`` from the same summary, by the same rules, when its held-out
    log-loss is lower than that of ``best``, the B-spline model chosen; else ``best``.
    Either carries ``linear_check``. As for the counts, at least :data:`MIN_CHECK_ROWS`
    held-out rows must judge them, and both models must be calibrated on them: sigmoids
    fitted to every row's scores (too few held-out rows of a label) have seen the rows
    that would judge them, and the plain logistic of uncalibrated scores is no measure to
    compare two models by (its log-loss grows with the margins of the few rows it gets
    wrong). Per-feature curves can only lose to the
    linear model where the rows cannot pay for them: many features, each with few
    distinct or non-zero values, whose curves fit the noise."""
    if (not config.linear_candidate or best.held_out_log_loss is None or not best.calibrated
            or best.n_calibration < MIN_CHECK_ROWS):
        return best
    linear, _ = _fit_terms(runner, dataset, replace(
        config, feature_map=None, interactions=0, check_interactions=False, bases_grid=()),
        seed, summary)
    kept = (linear.calibrated and linear.held_out_log_loss is not None
            and linear.held_out_log_loss < best.held_out_log_loss)
    check = {"kept": bool(kept), "linear": linear.held_out_log_loss,
             "curves": best.held_out_log_loss}
    if kept:
        return replace(linear, pair_check=best.pair_check, pair_scores=None,
                       linear_check=check, value_check=best.value_check,
                       multiclass_check=best.multiclass_check)
    return replace(best, linear_check=check)


def _search_bases(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                  summary: Summary, fitted: AdditiveFit
                  ) -> tuple[AdditiveFit, tuple[tuple[int, float | None], ...]]:
    """:func:`finer_feature_bases` from ``fitted``, the model kept carrying ``fitted``'s
    pair check and scores. Screened pairs that ``fitted`` kept are checked again at the
    count kept, when it is another: the model without them at that count is trained too,
    and replaces the one with pairs unless they still pay (:func:`pairs_pay`; pairs can
    make up for too few bases and stop paying once the curves have enough)."""
    best, tried = finer_feature_bases(
        runner, dataset, replace(config, feature_map=fitted.feature_map), seed, summary,
        fitted)
    if best is fitted:
        return best, tried
    best = replace(best, pair_scores=fitted.pair_scores, pair_check=fitted.pair_check,
                   value_check=fitted.value_check)
    check, fmap = fitted.pair_check, best.feature_map
    if not (check and check.get("kept") and isinstance(fmap, BSplinePairMap)):
        return best, tried
    plain, _ = _fit_terms(runner, dataset, replace(config, feature_map=without_pairs(fmap)),
                          seed, summary, importances=False)
    without, with_ = plain.held_out_log_loss, best.held_out_log_loss
    kept = (without is None or with_ is None
            or pairs_pay(without, with_, fmap, len(fmap.lo_)))
    check = {**check, "kept": bool(kept), "n_bases": int(fmap.n_bases),
             "held_out_log_loss_without": without, "held_out_log_loss_with": with_}
    if kept:
        return replace(best, pair_check=check), tried
    return replace(plain, pair_check=check, pair_scores=None,
                   value_check=fitted.value_check), tried


def pairs_pay(without: float, with_: float, pair_map: BSplinePairMap, n_features: int
              ) -> bool:
    """Whether a model with the pairs of ``pair_map``, of held-out log-loss ``with_``, is
    worth keeping over the per-feature model, of ``without``.

    The pairs add ``4 n_pairs`` non-zeros to the ``n_features (degree + 1)`` of a row's
    embedding (zero-preserving or not, the dense count); for each multiple of that work
    they must lower the held-out log-loss by :data:`PAIR_GAIN_PER_COST` of ``without``.
    ``2 d`` pairs beside degree-1 curves (four times the work) need 2 %, beside cubic
    ones (twice) 1 %; 64 pairs beside 784 degree-1 features (16 % more) 0.08 %.
    """
    base = BSplineMap.max_row_nnz(pair_map, n_features) + len(pair_map.value_terms)
    extra = pair_map.max_row_nnz(n_features) - base
    return with_ <= (1.0 - PAIR_GAIN_PER_COST * extra / base) * without


def value_terms_of(feature_map: FeatureMap | None) -> tuple[Any, ...]:
    """The value terms of a map (none but a :class:`BSplinePairMap`'s)."""
    return feature_map.value_terms if isinstance(feature_map, BSplinePairMap) else ()


def without_pairs(fmap: BSplinePairMap) -> BSplineMap:
    """``fmap``'s per-feature curves and value terms, without its pairs (unfitted)."""
    if fmap.value_terms:
        return BSplinePairMap(**{**fmap.get_params(), "interactions": ()})
    return BSplineMap(fmap.degree, fmap.n_bases, fmap.penalty_order, fmap.zero_preserving,
                      fmap.knots)


def with_value_terms(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                     summary: Summary, fitted: AdditiveFit) -> AdditiveFit:
    """``fitted``, the per-feature model, or the same model with value terms when they
    lower its held-out log-loss.

    The candidates are the features of the describe sample with frequent repeated values
    (:func:`~streamlearn.features.value_terms.frequent_values`; categorical codes aside).
    One reduction pass over the training rows (over the ranges of the describe sample on
    data that :func:`_sample_ranges` samples) scores each by the jumps of ``fitted``'s
    residuals at single values (:mod:`~streamlearn.solvers.additive.value_screening`);
    a second one counts the training rows of each value of the chosen features, whose
    tables become every value that
    :data:`~streamlearn.features.value_terms.MIN_VALUE_ROWS` of them hold (at most
    :data:`~streamlearn.features.value_terms.MAX_TABLE_VALUES`, the most frequent:
    :func:`~streamlearn.solvers.additive.value_screening.widen_tables`);
    the model with the chosen features' value terms is trained from the same summary and
    kept when its held-out log-loss is lower than ``fitted``'s by :data:`VALUE_GAIN` of
    it, or by :data:`PAIR_GAIN_PER_COST` for each multiple of the per-feature work per row
    the terms add (one entry per term), as pairs are, where that is more. Nothing is
    screened on sparse rows, with a zero-preserving or non-B-spline map, without
    calibrated held-out rows (at least :data:`MIN_CHECK_ROWS`), where folds choose
    (``config.folds``: the screening and the counting passes would be one a fold), or
    when no feature is a candidate.
    """
    fmap = fitted.feature_map
    if (not isinstance(fmap, BSplineMap) or isinstance(fmap, BSplinePairMap)
            or config.folds
            or fmap.zero_preserving or dataset.is_sparse or not fitted.calibrated
            or fitted.held_out_log_loss is None or fitted.n_calibration < MIN_CHECK_ROWS):
        return fitted
    names = list(dataset.feature_names)
    coded = [names.index(name) for name in (dataset.categories or {}) if name in names]
    sample = summary.description.sample
    candidates = frequent_values(sample, skip=coded)
    if not candidates:
        return fitted
    holdout = _holdout_of(config, seed)
    pass_ = ValueScreeningPass(residual_model(fitted, config, dataset), candidates, holdout)
    ranges = _sample_ranges(dataset)
    if ranges is None:
        state = runner.run(pass_, dataset, description="screen value terms")
    else:
        state = run_on_ranges(runner, pass_, dataset, ranges,
                              description="screen value terms (sample)")
    terms, scores = choose_value_terms(state, pass_, sample)
    if not terms:
        return replace(fitted, value_check={
            "kept": False, "candidates": [int(f) for f in pass_.features],
            "reason": "no feature's residuals jump at its values"})
    # the chosen features' tables: every value enough training rows hold, not only the
    # sample's frequent ones (one more pass, of the chosen features alone)
    counted = [f for f, _ in terms]
    count_pass = ValueCountPass(counted, holdout)
    counts = (runner.run(count_pass, dataset, description="count values")
              if ranges is None else
              run_on_ranges(runner, count_pass, dataset, ranges,
                            description="count values (sample)"))
    terms = widen_tables(terms, counts, counted)
    value_map = BSplinePairMap(fmap.degree, fmap.n_bases, fmap.penalty_order, False, (),
                               config.pair_grids[0], fmap.knots, terms)
    with_values, _ = _fit_terms(runner, dataset, replace(config, feature_map=value_map),
                                seed, summary)
    without, with_ = fitted.held_out_log_loss, with_values.held_out_log_loss
    gain = max(VALUE_GAIN, PAIR_GAIN_PER_COST * len(terms) / fmap.max_row_nnz(len(names)))
    kept = (with_ is not None and with_values.calibrated and with_ <= (1.0 - gain) * without)
    check = {"kept": bool(kept), "screened": [int(f) for f, _ in terms],
             "scores": scores.tolist(), "held_out_log_loss_without": without,
             "held_out_log_loss_with": with_}
    return replace(with_values if kept else fitted, value_check=check)


def strong_pairs(scores: np.ndarray, n_models: int) -> int:
    """How many of the screened pairs (FAST scores best first, added over ``n_models``
    binary models) score at least :data:`STRONG_PAIR_SCORE` a model."""
    return int(np.count_nonzero(scores >= STRONG_PAIR_SCORE * n_models))


def _fit_with_pairs(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                    given: Summary | None = None) -> tuple[AdditiveFit, Summary | None]:
    """:func:`fit` with the feature map's own count of bases; the fit and its summary
    (``given``: the describe summary to use instead of a describe pass)."""
    feature_map = config.feature_map
    given_pairs = isinstance(feature_map, BSplinePairMap)
    # a model with pairs gets its term importances once the grid search has kept it
    fitted, summary = _fit_terms(runner, dataset, config, seed, given,
                                 importances=not given_pairs, on_every_row=True)
    if given_pairs:
        if summary is not None:
            fitted = finer_pair_grids(runner, dataset, config, seed, summary, fitted)[0]
        return with_importances(fitted, summary), summary
    if config.value_terms and summary is not None:
        fitted = with_value_terms(runner, dataset, config, seed, summary, fitted)
    if (config.interactions <= 0 or not isinstance(feature_map, BSplineMap)
            or summary is None or fitted.importances is None):
        return fitted, summary
    if config.check_interactions and (fitted.held_out_log_loss is None
                                      or fitted.n_calibration < MIN_CHECK_ROWS):
        return replace(fitted, pair_check={"kept": False, "reason": (
            f"{fitted.n_calibration} held-out rows, fewer than {MIN_CHECK_ROWS} to check "
            "pairs on")}), summary
    holdout = _holdout_of(config, seed) if fitted.n_calibration > 0 else None
    ranked, ranked_scores = screen_interactions(runner, dataset, fitted, config, summary,
                                                holdout)
    if config.folds and ranked:  # each fold's model screens its own training rows
        _screen_folds(runner, dataset, fitted, config, ranked)
    chosen, scores = ranked[:config.interactions], ranked_scores[:config.interactions]
    if not chosen:
        return replace(fitted, pair_check={"kept": False, "reason": (
            "no screened pair lowered the residuals")} if config.check_interactions else None
        ), summary
    pair_map = BSplinePairMap(feature_map.degree, feature_map.n_bases,
                              feature_map.penalty_order, False, chosen, config.pair_grids[0],
                              feature_map.knots, value_terms_of(fitted.feature_map))
    pair_config = replace(config, feature_map=pair_map, interactions=0)
    with_pairs, _ = _fit_terms(runner, dataset, pair_config, seed, summary,
                               importances=False)
    with_pairs = replace(with_pairs, value_check=fitted.value_check)
    with_pairs, tried = finer_pair_grids(runner, dataset, pair_config, seed, summary,
                                         with_pairs)
    if not config.check_interactions:
        return with_importances(replace(with_pairs, pair_scores=scores), summary), summary
    assert fitted.held_out_log_loss is not None and with_pairs.held_out_log_loss is not None
    kept_map = with_pairs.feature_map
    assert isinstance(kept_map, BSplinePairMap)
    n_strong = strong_pairs(scores, fitted.coef_d.shape[0])
    strong_loss = None
    if 0 < n_strong < len(chosen):  # the strong pairs alone, on the grid kept for all
        strong_map = BSplinePairMap(**{**kept_map.get_params(),
                                       "interactions": chosen[:n_strong]})
        strong, _ = _fit_terms(runner, dataset, replace(pair_config, feature_map=strong_map),
                               seed, summary, importances=False)
        strong = replace(strong, value_check=fitted.value_check)
        strong_loss = strong.held_out_log_loss
        if strong_loss is not None and strong_loss <= with_pairs.held_out_log_loss:
            with_pairs, kept_map = strong, strong_map
            chosen, scores = chosen[:n_strong], scores[:n_strong]
    grown: list[list[Any]] = []
    if len(chosen) == config.interactions < len(ranked) and pairs_pay(
            fitted.held_out_log_loss, with_pairs.held_out_log_loss, kept_map,
            len(kept_map.lo_)):
        with_pairs, kept_map, grown = more_pairs(runner, dataset, pair_config, seed, summary,
                                                 with_pairs, kept_map, ranked)
        chosen = tuple(kept_map.interactions)
        scores = ranked_scores[:len(chosen)]
    kept = pairs_pay(fitted.held_out_log_loss, with_pairs.held_out_log_loss, kept_map,
                     len(kept_map.lo_))
    check = {"kept": bool(kept), "screened": [list(p) for p in chosen],
             "scores": scores.tolist(),
             "held_out_log_loss_without": fitted.held_out_log_loss,
             "held_out_log_loss_with": with_pairs.held_out_log_loss,
             "pair_bases": tried,
             "strong_pairs": [n_strong, strong_loss],
             "n_pairs": grown}
    if kept:
        return with_importances(replace(with_pairs, pair_scores=scores, pair_check=check),
                                summary), summary
    return replace(fitted, pair_check=check), summary


def more_pairs(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
               summary: Summary, fitted: AdditiveFit, pair_map: BSplinePairMap,
               ranked: tuple[tuple[int, int], ...]
               ) -> tuple[AdditiveFit, BSplinePairMap, list[list[Any]]]:
    """The model with the most of the ``ranked`` pairs that pay for themselves.

    ``fitted`` was trained with ``pair_map``, whose pairs are the first of ``ranked``
    (screened, best first). The count of pairs doubles in turn (the next step takes the
    best ``2 k`` of ``ranked``, or all of them), each model trained on ``pair_map``'s
    grid from the same describe summary, and a step is kept when its calibrated held-out
    log-loss is lower than the step before's by :data:`PAIR_GAIN_PER_COST` of it for each
    multiple of the per-feature work per row that the step's pairs add, the rule of
    :func:`pairs_pay` applied to each step's own cost; the first step that does not pay
    ends the search. Many features interact on some data (letter's 16 features: 32 pairs
    test at 6.17 % error, the 64 its held-out rows keep at 4.78 %; ``bench/interactions.py``),
    a few on others, and the held-out rows tell which.

    Returns
    -------
    AdditiveFit
        The model kept, without term importances.
    BSplinePairMap
        Its map.
    list of [int, float or None]
        Each count of pairs trained, the first ``fitted``'s, with its held-out log-loss.
    """
    n_features = len(pair_map.lo_)
    base = BSplineMap.max_row_nnz(pair_map, n_features) + len(pair_map.value_terms)
    tried: list[list[Any]] = [[pair_map.n_pairs, fitted.held_out_log_loss]]
    best, best_map = fitted, pair_map
    while best_map.n_pairs < len(ranked) and best.held_out_log_loss is not None:
        count = min(2 * best_map.n_pairs, len(ranked))
        candidate_map = BSplinePairMap(**{**best_map.get_params(),
                                          "interactions": ranked[:count]})
        candidate, _ = _fit_terms(runner, dataset, replace(config, feature_map=candidate_map),
                                  seed, summary, importances=False)
        loss = candidate.held_out_log_loss
        tried.append([count, loss])
        extra = 4 * (count - best_map.n_pairs)
        if (loss is None or not candidate.calibrated
                or loss > (1.0 - PAIR_GAIN_PER_COST * extra / base) * best.held_out_log_loss):
            break
        best = replace(candidate, value_check=fitted.value_check)
        best_map = candidate.feature_map
        assert isinstance(best_map, BSplinePairMap)
    return best, best_map, tried


def finer_pair_grids(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                     summary: Any, fitted: AdditiveFit) -> tuple[AdditiveFit, list[list[Any]]]:
    """The model with pairs on the finest grid of ``config.pair_grids`` that the held-out
    rows support.

    ``fitted`` is the model trained with ``config.feature_map``, a
    :class:`~streamlearn.features.pair_terms.BSplinePairMap` on the grid
    ``config.pair_grids[0]``. The same pairs are trained again on each following grid
    (from the same describe summary, by the rules of :func:`fit`) while its calibrated
    log-loss on the held-out rows is lower than that of the grid before; the first grid
    that does not lower it ends the search. A fine grid follows a surface that turns
    quickly and overfits a flat or noisy one, which its held-out loss shows. Without
    :data:`MIN_CHECK_ROWS` held-out rows only the first grid is trained.

    Returns
    -------
    AdditiveFit
        The model kept.
    list of [int, float or None]
        Each grid trained, with its held-out log-loss.
    """
    pair_map = config.feature_map
    assert isinstance(pair_map, BSplinePairMap)
    best, tried = _while_held_out_improves(runner, dataset, config, seed, summary, fitted,
                                           "pair_bases", config.pair_grids)
    return best, [list(step) for step in tried]


def finer_feature_bases(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                        summary: Summary, fitted: AdditiveFit
                        ) -> tuple[AdditiveFit, tuple[tuple[int, float | None], ...]]:
    """The model with the most B-spline bases per feature of ``config.bases_grid`` that
    the held-out rows support.

    ``fitted`` is the model trained with ``config.feature_map`` (``bases_grid[0]`` bases
    per feature). The model is trained again with each following count (from the same
    describe summary) while its calibrated log-loss on the held-out rows is lower than
    that of the count before; the first that does not lower it ends the search. Without
    :data:`MIN_CHECK_ROWS` held-out rows only the first count is trained.

    Returns
    -------
    AdditiveFit
        The model kept, without term importances.
    tuple of (int, float or None)
        Each count trained, with its held-out log-loss.
    """
    return _while_held_out_improves(runner, dataset, config, seed, summary, fitted,
                                    "n_bases", config.bases_grid)


def _while_held_out_improves(runner: Any, dataset: Dataset, config: AdditiveConfig,
                             seed: int, summary: Summary, fitted: AdditiveFit, name: str,
                             values: tuple[int, ...]
                             ) -> tuple[AdditiveFit, tuple[tuple[int, float | None], ...]]:
    """Train with the feature map's parameter ``name`` set to each of ``values[1:]`` in
    turn (``fitted`` has ``values[0]``) while the held-out log-loss goes down; the best
    model and each value tried with its held-out log-loss."""
    base = config.feature_map
    assert base is not None
    tried = [(int(values[0]), fitted.held_out_log_loss)]
    best = fitted
    for value in values[1:]:
        if best.held_out_log_loss is None or best.n_calibration < MIN_CHECK_ROWS:
            break
        candidate_map = type(base)(**{**base.get_params(), name: value})
        candidate, _ = _fit_terms(runner, dataset, replace(config, feature_map=candidate_map),
                                  seed, summary, importances=False)
        tried.append((int(value), candidate.held_out_log_loss))
        if (candidate.held_out_log_loss is None
                or not candidate.held_out_log_loss < best.held_out_log_loss):
            break
        best = replace(candidate, value_check=fitted.value_check)
    return best, tuple(tried)


def screen_interactions(runner: Any, dataset: Dataset, fitted: AdditiveFit,
                        config: AdditiveConfig, summary: Summary, holdout: Holdout | None
                        ) -> tuple[tuple[tuple[int, int], ...], np.ndarray]:
    """The ``config.interactions`` (or ``config.max_interactions``, when more) best feature
    pairs for the per-feature model ``fitted``.

    One reduction pass over the training rows (:class:`ScreeningPass`), over the pairs of
    :func:`~streamlearn.solvers.additive.interactions.candidate_features`, binned at the
    quantiles of the describe sample. On data that :func:`_sample_ranges` samples (at
    least ``DESCRIBE_MIN_CHUNKS`` chunks) the pass reads the ranges it picks, at least
    ``DESCRIBE_SAMPLE_ROWS`` rows, as the describe and calibration passes do: a pair's
    statistics cost ``O(n_pairs)`` a row against an epoch's ``O(n_features)``, and their
    ranking settles long before the whole data are read.

    Returns
    -------
    chosen : tuple of (int, int)
        Best first; fewer than asked when fewer pairs lower the residuals at all.
    scores : ndarray of shape (len(chosen),)
        Their FAST scores.
    """
    assert fitted.importances is not None
    n_features = len(dataset.feature_names)
    candidates = candidate_features(fitted.importances[:n_features], fitted.coef_d.shape[0])
    if candidates.shape[0] < 2:
        return (), np.zeros(0)
    sample = summary.description.sample[:, candidates]
    edges = bin_edges(sample, SCREEN_BINS)
    ranges = _sample_ranges(dataset)
    n_rows = dataset.n_rows if ranges is None else sum(b - a for a, b in ranges)
    pass_ = ScreeningPass(residual_model(fitted, config, dataset), candidates, edges,
                          common_bins(sample, edges), holdout, n_rows)
    if ranges is None:
        state = runner.run(pass_, dataset, description="screen pairs")
    else:  # the ranking of pairs needs no more rows than the chunks of the describe sample
        state = run_on_ranges(runner, pass_, dataset, ranges,
                              description="screen pairs (sample)")
    gains = fast_gains(state.sums, state.weights, pass_.n_bins)
    best = choose_interactions(gains, max(int(config.interactions),
                                          int(config.max_interactions)))
    chosen = tuple((int(f), int(g)) for f, g in pass_.screened[best])
    return chosen, gains[best]


def residual_model(fitted: AdditiveFit, config: AdditiveConfig, dataset: Dataset
                   ) -> ResidualModel:
    """The fitted models as the screening passes take them."""
    assert dataset.classes is not None
    return ResidualModel.of(fitted.coef_d,
                            embedding_params(fitted.feature_map, len(dataset.feature_names)),
                            ModelPairs.of(len(dataset.classes), config.multiclass),
                            config.bias_scale, fitted.platt_a, fitted.platt_b)


def with_importances(fitted: AdditiveFit, summary: Summary | None) -> AdditiveFit:
    """``fitted`` with its term importances over the describe sample of ``summary``.

    Parameters
    ----------
    fitted : AdditiveFit
        A fit, with or without ``importances``.
    summary : Summary or None
        The describe summary it was trained from.

    Returns
    -------
    AdditiveFit
        ``fitted`` itself when it has importances or there is no sample; else a copy with
        :func:`sample_importances` over the sample.
    """
    if fitted.importances is not None or summary is None or fitted.pending is not None:
        return fitted  # a pending fit gets them when trained on every row
    sample = summary.description.sample
    if sample is None or sample.shape[0] == 0:
        return fitted
    emb = embedding_params(fitted.feature_map, len(fitted.feature_names))
    return replace(fitted, importances=sample_importances(sample, fitted.coef_d,
                                                          fitted.feature_map, emb))


def sample_importances(sample: np.ndarray | SparseRows, coef_d: np.ndarray,
                       feature_map: FeatureMap | None, emb: Embedding) -> np.ndarray:
    """:func:`term_importances` of dense rows, :func:`sparse_term_importances` of CSR rows.

    Parameters
    ----------
    sample : ndarray of shape (k, n_features), float32, or SparseRows
    coef_d : ndarray of shape (n_models, n_dims + 1)
    feature_map : FeatureMap or None
    emb : Embedding

    Returns
    -------
    ndarray of shape (n_features + n_pairs,), float64
    """
    if isinstance(sample, SparseRows):
        return sparse_term_importances(sample, coef_d, emb)
    return term_importances(sample, coef_d, feature_map, emb)


def _holdout_of(config: AdditiveConfig, seed: int) -> Holdout | None:
    """The calibration rows of ``config``: its ``calibration_fraction`` of the row hash,
    or None without it and where folds choose (``config.folds``, whose trainings hold
    out each fold in turn, and train the model kept on every row)."""
    if config.calibration_fraction is None or config.folds:
        return None
    return Holdout.fraction(config.calibration_fraction, seed ^ HOLDOUT_SALT)


def cross_fit_folds(config: AdditiveConfig, n_rows: int, n_features: int, n_classes: int,
                    seed: int) -> tuple[Holdout, ...]:
    """The folds that make the choices of a fit whose held-out share is too small.

    A fit with something to choose (:func:`chooses_models`) and calibrated probabilities
    (``config.cross_fit_share`` and ``class_shares`` set) is cross-fitted when that
    share of ``n_rows`` (``config.cross_fit_rows``, the rows of positive weight, when
    given) is expected to hold fewer than :data:`MIN_CHECK_ROWS` rows
    (fewer than 2,000 rows at 0.1) but ``n_rows`` holds at least that many, at least
    :data:`MIN_CROSS_FIT_OTHERS` of them outside the largest class, and
    ``n_rows * (n_features + 1) * n_models`` (``n_models``: ``n_classes``, 1 for two
    classes) is at most :data:`CROSS_FIT_WORK`: the :data:`CROSS_FIT_FOLDS` folds of
    :meth:`~streamlearn.solvers.holdout.Holdout.folds` over the row hash of the
    calibration rows (the same seed), which hold out every row once. Otherwise none
    (empty): the held-out share chooses, or nothing is compared.
    """
    share, shares = config.cross_fit_share, config.class_shares
    if share is None or shares is None or not chooses_models(config):
        return ()
    n = int(n_rows if config.cross_fit_rows is None else config.cross_fit_rows)
    if float(share) * n >= MIN_CHECK_ROWS or n < MIN_CHECK_ROWS:
        return ()
    counts = np.asarray(shares, dtype=np.float64)
    if not counts.sum() > 0 or n * (1.0 - counts.max() / counts.sum()) < MIN_CROSS_FIT_OTHERS:
        return ()
    n_models = 1 if int(n_classes) <= 2 else int(n_classes)
    if n * (int(n_features) + 1) * n_models > CROSS_FIT_WORK:
        return ()
    return tuple(Holdout.folds(CROSS_FIT_FOLDS, seed ^ HOLDOUT_SALT))


def chooses_models(config: AdditiveConfig) -> bool:
    """Whether a fit of ``config`` chooses between models that folds can judge: counts of
    bases (``bases_grid``), screened pairs or the grid of pairs
    (``interactions`` with ``check_interactions`` or ``pair_grids``; given pairs come in a
    :class:`~streamlearn.features.pair_terms.BSplinePairMap`), one-vs-one
    (``ovo_candidate``) or the linear model (``linear_candidate``). Value terms alone do
    not count: folds do not try them (:func:`with_value_terms`)."""
    grids = len(config.pair_grids) > 1
    return (len(config.bases_grid) > 1 or config.ovo_candidate or config.linear_candidate
            or (config.interactions > 0 and (config.check_interactions or grids))
            or (grids and isinstance(config.feature_map, BSplinePairMap)))


@dataclass
class _CrossFitState:
    # per fold: its describe summary (its rows' counts), and for each screening of pairs
    # the ranking of every row's model with that of each fold's model
    summaries: dict[int, Summary]
    rankings: list[tuple[tuple[tuple[int, int], ...], list[tuple[tuple[int, int], ...]]]]


_CROSS_FIT: ContextVar[_CrossFitState | None] = ContextVar("additive_cross_fit",
                                                            default=None)


def _pair_tuple(pairs: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    return tuple((int(f), int(g)) for f, g in pairs)


def _fold_map(feature_map: FeatureMap | None, j: int, state: _CrossFitState
              ) -> FeatureMap | None:
    """An unfitted copy of ``feature_map`` for fold ``j``: screened pairs (the first
    ``c`` of a ranking of every row's model) become the first ``c`` of the ranking of
    fold ``j``'s model, screened on its own training rows (:func:`_screen_folds`), so
    that a fold's held-out rows judge pairs chosen without them; given pairs stay."""
    if feature_map is None:
        return None
    if isinstance(feature_map, BSplinePairMap) and feature_map.interactions:
        pairs = _pair_tuple(feature_map.interactions)
        for ranked, per_fold in state.rankings:
            if pairs == ranked[:len(pairs)]:
                own = per_fold[j][:len(pairs)]
                if not own:
                    return without_pairs(feature_map)
                return BSplinePairMap(**{**feature_map.get_params(), "interactions": own})
    return type(feature_map)(**feature_map.get_params())


def _cross_fitted_terms(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                        given: Summary | None, importances: bool, on_every_row: bool
                        ) -> tuple[AdditiveFit, Summary | None]:
    """:func:`_fit_terms` where folds choose (``config.folds``, :func:`cross_fit_folds`).

    The model is trained on each fold's other rows (from that fold's describe summary,
    with its pairs screened on them, :func:`_fold_map`), calibrated and judged on the
    fold's held-out rows as the held-out share would be. With ``on_every_row`` (the
    per-feature model, whose residuals screen the pairs) it is trained once on every row
    too, its probabilities the one slope shared by every model chosen on the training
    rows (``slope_on_training_rows``, what a fit without held-out rows does); otherwise
    that training is left ``pending`` for :func:`fit` to run if the model is kept (a
    candidate's training on every row would have its training objective, not held-out
    rows, stop it: most often at the cap of epochs, for a model most often dropped).
    Returned: that fit, whose ``held_out_log_loss`` and ``proba_log_loss`` are the folds'
    weighted by their held-out rows (each row held out once), ``n_calibration`` those
    rows, ``calibrated`` whether every fold was, and ``fold_fits`` the folds' fits: the
    rules that compare two models (:func:`pairs_pay`, :func:`finer_feature_bases`,
    :func:`_linear_if_better`, :func:`_one_vs_one_if_better`) compare these losses as
    they are."""
    state = _CROSS_FIT.get()
    assert state is not None and dataset.classes is not None
    per_fold = []
    for j, fold in enumerate(config.folds):
        summary = state.summaries.get(j)
        if summary is None:
            summary = state.summaries[j] = _summary(runner, dataset, len(dataset.classes),
                                                    fold, seed)
        fold_config = replace(config, folds=(),
                              feature_map=_fold_map(config.feature_map, j, state))
        per_fold.append(_fit_terms_on(runner, dataset, fold_config, seed, summary,
                                      importances, fold)[0])
    every_config = replace(config, folds=(), calibration_fraction=None,
                           slope_on_training_rows=True)
    if on_every_row:
        every, summary = _fit_terms_on(runner, dataset, every_config, seed, given,
                                       importances, None)
    else:  # the map as the training on every row would fit it, for the candidates after
        summary = given
        if config.feature_map is not None:
            if summary is None:
                summary = _summary(runner, dataset, len(dataset.classes), None, seed)
            _fit_map(config.feature_map, config, dataset, summary)
        every = replace(per_fold[0], feature_map=config.feature_map,
                        pending=(every_config, summary))
    weights = np.array([f.n_calibration for f in per_fold], dtype=np.float64)

    def mean(values: list[float | None]) -> float | None:
        if any(v is None for v in values) or not weights.sum() > 0:
            return None
        return float(weights @ np.asarray(values, dtype=np.float64) / weights.sum())

    fewest = [f.fewest_calibration_rows for f in per_fold
              if f.fewest_calibration_rows is not None]
    return replace(every, n_calibration=int(weights.sum()),
                   calibrated=all(f.calibrated for f in per_fold),
                   held_out_log_loss=mean([f.held_out_log_loss for f in per_fold]),
                   proba_log_loss=mean([f.proba_log_loss for f in per_fold]),
                   fewest_calibration_rows=min(fewest) if fewest else None,
                   fold_fits=tuple(per_fold)), summary


def _screen_folds(runner: Any, dataset: Dataset, fitted: AdditiveFit,
                  config: AdditiveConfig, ranked: tuple[tuple[int, int], ...]) -> None:
    """Where folds choose: screen the pairs of each fold's per-feature model
    (``fitted.fold_fits``) on that fold's training rows, and remember each ranking beside
    ``ranked``, every row's (:func:`_fold_map`)."""
    state = _CROSS_FIT.get()
    assert state is not None
    own = [screen_interactions(runner, dataset, fold_fit, config, state.summaries[j],
                               fold)[0]
           for j, (fold, fold_fit) in enumerate(zip(config.folds, fitted.fold_fits,
                                                    strict=True))]
    state.rankings.append((_pair_tuple(ranked), own))


def _fit_terms(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
               given: Summary | None, importances: bool = True, on_every_row: bool = False
               ) -> tuple[AdditiveFit, Summary | None]:
    """:func:`fit` without pair screening; ``given``: a summary to use instead of a
    describe pass; ``importances``: whether to compute the term importances (a model
    whose grid may yet be replaced gets them from :func:`with_importances` once kept).
    Returns the fit and the summary it used. With ``config.folds`` the model is trained
    on every fold's other rows, and on every row only with ``on_every_row``
    (:func:`_cross_fitted_terms`)."""
    if config.folds:
        return _cross_fitted_terms(runner, dataset, config, seed, given, importances,
                                   on_every_row)
    return _fit_terms_on(runner, dataset, config, seed, given, importances,
                         _holdout_of(config, seed))


def _fit_terms_on(runner: Any, dataset: Dataset, config: AdditiveConfig, seed: int,
                  given: Summary | None, importances: bool, holdout: Holdout | None
                  ) -> tuple[AdditiveFit, Summary | None]:
    """:func:`_fit_terms` with the rows ``holdout`` held out for calibration (None:
    none)."""
    classes = dataset.classes
    assert classes is not None
    feature_map = config.feature_map
    summary = given
    described = not (given is None and feature_map is None and holdout is None
                     and dataset.nan_policy != "drop" and not dataset.weighted)
    # sparse rows are described whole: a fit that needs no describe pass otherwise (no
    # rows held out, no map) reads them only for its epochs, and takes them as they are
    scale_only = (feature_map is None and config.scale_linear
                  and (described or not dataset.is_sparse))
    standardize = scale_only or (config.standardize_linear and feature_map is None
                                 and not dataset.is_sparse)
    if not described and not standardize:
        # nothing needs the describe pass: no map to fit, no rows held out, no weights
        # to add up, and the store's metadata counts the training rows
        n_train, n_holdout, train_weight = dataset.n_rows, 0, float(dataset.n_rows)
        sample = None
    else:
        if summary is None:
            summary = _summary(runner, dataset, len(classes), holdout, seed)
        n_train, n_holdout = summary.n_train, summary.n_holdout
        train_weight = summary.train_weight
        sample = summary.description.sample
        if feature_map is not None:
            _fit_map(feature_map, config, dataset, summary)
    if n_train == 0:
        raise LabelError(f"no rows left to train on ({n_holdout} held out for "
                         "calibration); use more data or calibrate=False")
    if not train_weight > 0:
        raise ValueError(f"the sample weights of the {n_train} training rows sum to "
                         f"{train_weight}; at least one row needs a positive weight")
    regularisation = Regularisation.of(config.C, config.lam, n_train, train_weight)
    n_features = len(dataset.feature_names)
    emb = embedding_params(feature_map, n_features)
    raw_sample = sample
    standardiser = None
    if standardize and summary is not None:  # the passes below read standardised rows
        desc = summary.description
        if scale_only:  # zeros kept: each feature over its largest absolute value
            standardiser = Standardiser.from_max_abs(desc.min, desc.max)
        else:
            standardiser = Standardiser.from_mean_std(
                desc.mean, desc.std, np.asarray(desc.max) > np.asarray(desc.min))
        if not config.bias_scale > 0.0:  # no bias to take the shift: scale only
            standardiser = Standardiser(np.zeros_like(standardiser.shift), standardiser.scale)
        dataset = dataset.with_feature_transform(standardiser)
        sample = None if sample is None else standardiser.apply(sample)
    # no row fell in the held-out share (tiny data): train, and monitor, on every row
    rows = training_rows(config, emb, n_features, holdout if n_holdout > 0 else None)
    pairs = ModelPairs.of(len(classes), config.multiclass)
    shape = (len(pairs.positive), rows.emb.n_dims + 1)
    norm_sq = 0.0
    if not dataset.is_sparse:
        compile_later_kernels(runner, config, rows.emb, shape[0], n_features)
    if config.solver == "pegasos":
        norm_sq = step_norm_sq(feature_map, sample, config.bias_scale)
        offset = offset_of(norm_sq, regularisation.pegasos_lam)
        models = _pegasos(runner, dataset, config, rows, pairs, shape, seed, n_train,
                          regularisation, offset)
    else:
        models = _dcd(runner, dataset, config, rows, pairs, shape, seed, n_train,
                      regularisation.C, dcd_centre(sample, rows, config.bias_scale))
    record_training(models.convergence)
    coef_d, state_w_d = models.coef_d, models.state_w_d
    centre_d = models.centre
    if rows.feature_map is not None:
        coef_d, state_w_d = w_to_w_d(coef_d, emb), w_to_w_d(state_w_d, emb)
        if centre_d is not None:
            centre_d = w_to_w_d(centre_d[np.newaxis, :], emb)[0]

    platt_a, platt_b = np.full(shape[0], -1.0), np.zeros(shape[0])
    calibrated = False
    proba_scale = 1.0
    if holdout is not None and n_holdout > 0:
        histogram = models.calibration
        if histogram is None:  # no epoch scored the returned model: a pass of its own
            histogram = _on_held_out(runner, dataset,
                                     CalibrationPass(np.ascontiguousarray(coef_d), emb, pairs,
                                                     config.bias_scale, holdout), "calibrate")
        fewest_rows = histogram.fewest_rows()
        calibrated = fewest_rows >= MIN_CALIBRATION_ROWS
        if calibrated:
            platt_a, platt_b = histogram.fit()
        else:  # too few rows of a label held out: Platt's sigmoids on every row's scores
            platt_a, platt_b = runner.run(
                CalibrationPass(np.ascontiguousarray(coef_d), emb, pairs, config.bias_scale,
                                None), dataset, description="calibrate on every row").fit()
        held_out_loss: float | None = histogram.log_loss(platt_a, platt_b)
        proba_loss = held_out_loss if shape[0] == 1 else None
        if shape[0] > 1 and config.compares_models:  # the classifier's, not its models'
            class_loss: ClassLoss = _on_held_out(runner, dataset, ClassLogLossPass(
                np.ascontiguousarray(coef_d), emb, pairs, len(classes), config.bias_scale,
                platt_a, platt_b, holdout), "held-out log-loss")
            held_out_loss, proba_scale = class_loss.log_loss, class_loss.scale()
            proba_loss = class_loss.tempered_log_loss()
    else:
        held_out_loss = fewest_rows = proba_loss = None
        if config.slope_on_training_rows:  # no rows held out: how sure, from the training rows
            histogram = runner.run(CalibrationPass(np.ascontiguousarray(coef_d), emb, pairs,
                                                   config.bias_scale, None), dataset,
                                   description="probability slope")
            platt_a = np.full(shape[0], fit_shared_slope(histogram))
    if standardiser is not None:  # back to the features' own units
        coef_d, state_w_d, centre_d = fold_standardisation(
            standardiser, config.bias_scale, coef_d, state_w_d, centre_d)
        sample = raw_sample
    term_values = (None if not importances or sample is None or sample.shape[0] == 0
                   else sample_importances(sample, coef_d, feature_map, emb))
    # a sparse source's numbered columns stay a NumberedNames, not a tuple of n strings
    names = dataset.feature_names if dataset.is_sparse else tuple(dataset.feature_names)
    return AdditiveFit(names, feature_map, int(n_train),
                       int(n_holdout), regularisation, np.ascontiguousarray(coef_d),
                       state_w_d, platt_a, platt_b, calibrated, models.n_iter, models.t,
                       models.average_start, models.pg_range, models.monitor_history,
                       centre_d, term_values, held_out_log_loss=held_out_loss,
                       proba_scale=proba_scale,
                       fewest_calibration_rows=fewest_rows,
                       ranges=_linear_ranges(feature_map, summary),
                       step_norm_sq=norm_sq, convergence=models.convergence,
                       proba_log_loss=proba_loss,
                       multiclass=config.multiclass), summary


def _fit_map(feature_map: FeatureMap, config: AdditiveConfig, dataset: Dataset,
             summary: Summary) -> None:
    """Fit ``feature_map`` in place from the describe ``summary`` (or
    ``config.feature_range``), as a training does: ranges, a knot per category, knots
    and pair node weights from the row sample."""
    desc = summary.description
    fit_feature_map(feature_map, config.feature_range, minimum=desc.min, maximum=desc.max,
                    mean=desc.mean, std=desc.std, quantiles=desc.quantiles)
    coded = knot_per_category(feature_map, dataset.feature_names, dataset.categories or {})
    if isinstance(feature_map, BSplineMap):
        feature_map.fit_knots(desc.sample, uniform=coded)
    if isinstance(feature_map, BSplinePairMap):
        feature_map.fit_node_weights(desc.sample)


def compile_later_kernels(runner: Any, config: AdditiveConfig, emb: Embedding, n_models: int,
                          n_features: int) -> None:
    """Hand the kernels that the fit calls after its first training to a second process
    (:func:`~streamlearn.solvers.compile_ahead.compile_ahead`), where passes run in this
    process: the decision kernel of ``emb``'s map (calibration, held-out scores) and, with
    ``config.linear_candidate``, the linear model's kernels: PEGASOS's, or dual coordinate
    descent's with the mean row it centres on, then its decision kernel. Only kernels
    neither compiled nor cached are handed, each once a process, so a fit from a warm
    cache starts nothing."""
    if not runs_here(runner):
        return
    calls = [KernelCall.of("decision_ovr", emb, n_models)]
    if config.linear_candidate:
        linear = embedding_params(None, n_features)
        calls += [KernelCall.of(name, linear, n_models)
                  for name in (("pegasos_ovr",) if config.solver == "pegasos"
                               else ("embedding_sum", "dcd_ovr"))]
        calls.append(KernelCall.of("decision_ovr", linear, n_models))
    compile_ahead(calls)


def fold_standardisation(standardiser: Standardiser, bias_scale: float, coef_d: np.ndarray,
                         state_w_d: np.ndarray, centre_d: np.ndarray | None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Linear models trained on ``z = (x - shift) / scale`` as models of ``x``.

    ``w . z + b bias_scale = (w / scale) . x + (b - (w / scale) . shift / bias_scale)
    bias_scale``: each weight is divided by its feature's scale and the bias weight takes
    the shift (``w_d`` form, bias weight last; the same for the solver's last iterates).
    The DCD centre, a mean row, maps back to ``mu scale + shift``. Without a bias
    (``bias_scale = 0``) no weight can take a shift: the rows were scaled only (a zero
    ``shift``), and the model of ``x`` has no intercept either.

    Parameters
    ----------
    standardiser : Standardiser
    bias_scale : float
    coef_d, state_w_d : ndarray of shape (n_models, n_features + 1)
    centre_d : ndarray of shape (n_features + 1,) or None

    Returns
    -------
    coef_d, state_w_d, centre_d
        New arrays, in the features' units.
    """
    shift = np.asarray(standardiser.shift, dtype=np.float64)
    scale = np.asarray(standardiser.scale, dtype=np.float64)
    biased = float(bias_scale) > 0.0
    if not biased and np.any(shift != 0.0):
        raise ValueError("a model without a bias (bias_scale = 0) cannot take the "
                         "standardisation's shift; scale its rows only")

    def fold(W: np.ndarray) -> np.ndarray:
        out = np.array(W, dtype=np.float64, copy=True)
        out[:, :-1] = W[:, :-1] / scale
        if biased:
            out[:, -1] = W[:, -1] - out[:, :-1] @ shift / float(bias_scale)
        return out

    centre = None
    if centre_d is not None:
        centre = np.array(centre_d, dtype=np.float64, copy=True)
        centre[:-1] = centre[:-1] * scale + shift
    return fold(coef_d), fold(state_w_d), centre


def _linear_ranges(feature_map: FeatureMap | None, summary: Summary | None
                   ) -> np.ndarray | None:
    """``(min, max)`` of each feature for a linear model with a describe summary."""
    if feature_map is not None or summary is None:
        return None
    desc = summary.description
    return np.column_stack([np.asarray(desc.min, dtype=np.float64),
                            np.asarray(desc.max, dtype=np.float64)])


def term_importances(rows: np.ndarray, coef_d: np.ndarray, feature_map: FeatureMap | None,
                     emb: Embedding) -> np.ndarray:
    """Each term's importance (the features', then the pairs'): the mean absolute
    deviation of the term from its mean over ``rows``, averaged over the binary models.
    A pair's term is counted without its weighted marginals, which count for its features
    (:func:`~streamlearn.features.pair_terms.move_marginals`); a feature's value term
    counts with the feature.

    A feature whose curve is flat, or whose values all fall where it is flat, scores 0;
    the unit is that of the SVM scores, so importances of one model compare across
    features whatever their units. The terms are the blocks of the materialised embedding
    times the model's weights, :data:`SAMPLE_BLOCK_ROWS` rows at a time, kept from the
    pass that takes their mean to the one that takes their deviations when they fit in
    :data:`IMPORTANCE_KEPT_BYTES` (embedding the rows was most of the work).

    Parameters
    ----------
    rows : ndarray of shape (k, n_features), float32
    coef_d : ndarray of shape (n_models, n_dims + 1)
    feature_map : FeatureMap or None
        None for the identity.
    emb : Embedding
        The map packed (its ``w_d`` form is ``coef_d``'s).

    Returns
    -------
    ndarray of shape (n_features + n_pairs,), float64
    """
    d, n_cols, main = emb.n_features, emb.n_cols, emb.main_dims
    n_pairs = emb.n_pairs  # pair terms only with a pair map
    paired = isinstance(feature_map, BSplinePairMap)
    pairs_end = main + (feature_map.pair_columns if paired else 0)
    W = np.vstack([weights_from_w_d(np.ascontiguousarray(w), emb.ipar)[:-1] for w in coef_d])
    W_main = np.ascontiguousarray(W[:, :main].reshape(-1, d, n_cols).transpose(1, 2, 0))

    def blocks() -> Any:  # terms of a block of rows, (n, d + n_pairs, m)
        for a in range(0, rows.shape[0], SAMPLE_BLOCK_ROWS):
            X = rows[a:a + SAMPLE_BLOCK_ROWS]
            if paired:  # the pairs' terms from their hat values, their columns unmade
                Psi = np.asarray(feature_map.transform_features(X), dtype=np.float64)
            else:
                Psi = np.asarray(X if feature_map is None else feature_map.transform(X),
                                 dtype=np.float64)
            mains = Psi[:, :main].reshape(X.shape[0], d, n_cols).transpose(1, 0, 2)
            terms = [np.matmul(mains, W_main).transpose(1, 0, 2)]
            if paired:  # each pair feature's hat values, for its terms and marginals
                hats = feature_map.pair_hats(X)
                terms.append(feature_map.pair_values(X, W[:, main:pairs_end], hats))
            block = np.concatenate(terms, axis=1)
            if paired and feature_map.value_terms:  # a value term counts with its feature
                block[:, feature_map.value_features, :] += feature_map.value_values(
                    X, W[:, pairs_end:])
            if paired:  # each pair's marginals to its features
                move_marginals(block, X, feature_map, W, hats)
            yield block

    keep = rows.shape[0] * (d + n_pairs) * W.shape[0] * 8 <= IMPORTANCE_KEPT_BYTES
    kept: list[np.ndarray] = []
    total = 0.0
    for block in blocks():
        total = total + block.sum(axis=0)
        if keep:
            kept.append(block)
    mean = total / rows.shape[0]
    spread = sum(np.abs(block - mean).sum(axis=0)
                 for block in (kept if keep else blocks())) / rows.shape[0]
    return spread.mean(axis=1)


def sparse_term_importances(rows: SparseRows, coef_d: np.ndarray,
                            emb: Embedding) -> np.ndarray:
    """:func:`term_importances` of CSR rows, in time of their stored entries.

    A zero costs nothing in the maps that take sparse rows (:meth:`Embedding.takes_sparse_rows`),
    so a feature's term is zero in every row that does not store it; each stored entry's
    term is the score of a row holding that entry alone.

    Parameters
    ----------
    rows : SparseRows
    coef_d : ndarray of shape (n_models, n_dims + 1)
    emb : Embedding

    Returns
    -------
    ndarray of shape (n_features,), float64
    """
    k, d = rows.shape
    W = np.array(coef_d, dtype=np.float64)
    W[:, -1] = 0.0
    entries = SparseRows(np.arange(rows.nnz + 1, dtype=np.int64), rows.indices, rows.values,
                         d)
    terms = decision_ovr_chunk(entries, W, 0.0, *emb)  # (nnz, m)
    stored = np.bincount(rows.indices, minlength=d)

    def column_sums(values: np.ndarray) -> np.ndarray:
        # per feature and model; np.add.at made these sums 60 % of a partial_fit call
        return np.column_stack([np.bincount(rows.indices, weights=values[:, j], minlength=d)
                                for j in range(values.shape[1])])

    mean = column_sums(terms) / k
    spread = column_sums(np.abs(terms - mean[rows.indices]))
    spread += (k - stored)[:, None] * np.abs(mean)
    return spread.mean(axis=1) / k


def _summary(runner: Any, dataset: Dataset, n_classes: int, holdout: Holdout | None,
             seed: int) -> Summary:
    """The describe statistics and the training rows' count and weight.

    Dense data that :func:`_sample_ranges` samples, without sample weights and without
    rows dropped for missing values, is described from those chunks: the
    feature map's ranges and quantiles come from those rows (a value outside the sampled
    range is clamped to it, like any value outside the training range), and the row counts
    are exact, the held-out rows being a hash of the row number. Otherwise one pass reads
    every row.
    """
    pass_ = SummaryPass(dataset.feature_names, n_classes, holdout, seed, dataset.is_sparse)
    # sparse data is read whole: a rare column may have no value in a sample of chunks
    ranges = None if dataset.is_sparse else _sample_ranges(dataset)
    if (ranges is None or dataset.weighted or dataset.nan_policy == "drop"
            or dataset.leaves_out_blocks):
        summary: Summary = runner.run(pass_, dataset, description="describe")
        return summary
    sampled: Summary = run_on_ranges(runner, pass_, dataset, ranges,
                                     description="describe (sample)")
    n_holdout = holdout.count(dataset.n_rows) if holdout is not None else 0
    n_train = dataset.n_rows - n_holdout
    return Summary(sampled.description, n_train, n_holdout, float(n_train))


def _sample_ranges(dataset: Dataset) -> list[tuple[int, int]] | None:
    """``DESCRIBE_SAMPLE_CHUNKS`` ranges of ``min(chunk_rows, DESCRIBE_SAMPLE_RANGE_ROWS)``
    rows spread evenly over data of at least ``DESCRIBE_MIN_CHUNKS`` chunks whose sample
    holds ``DESCRIBE_SAMPLE_ROWS`` rows or more
    (:func:`~streamlearn.engine.row_ranges.spread_ranges`); None for other data, which is
    read whole."""
    size = _sample_range_rows(dataset)
    if (dataset.n_chunks < DESCRIBE_MIN_CHUNKS
            or DESCRIBE_SAMPLE_CHUNKS * size < DESCRIBE_SAMPLE_ROWS):
        return None
    return spread_ranges(dataset.n_rows, size, DESCRIBE_SAMPLE_CHUNKS)


def _sample_range_rows(dataset: Dataset) -> int:
    """Rows of each range :func:`_sample_ranges` picks."""
    return min(int(dataset.chunk_rows), DESCRIBE_SAMPLE_RANGE_ROWS)


def _sample_dataset(dataset: Dataset) -> Dataset | None:
    """The ranges of :func:`_sample_ranges` as a dataset of their own (the other rows left
    out of every pass, in blocks of the ranges' size), where the describe pass reads a
    sample; else None."""
    ranges = _sample_ranges(dataset)
    if (ranges is None or dataset.is_sparse or dataset.weighted
            or dataset.nan_policy == "drop" or dataset.leaves_out_blocks):
        return None
    size = _sample_range_rows(dataset)
    kept = np.array([a // size for a, _ in ranges], dtype=np.int64)
    blocks = -(-dataset.n_rows // size)
    return dataset.without_blocks(np.setdiff1d(np.arange(blocks), kept), size)


def _on_held_out(runner: Any, dataset: Dataset, pass_: Any, description: str) -> Any:
    """A pass over the held-out rows (the calibration histogram, the class log-loss):
    over the ranges :func:`_sample_ranges` picks (their held-out rows, 10,000 or more,
    are plenty for two Platt parameters per model or a mean loss), else every chunk."""
    ranges = _sample_ranges(dataset)
    if ranges is None:
        return runner.run(pass_, dataset, description=description)
    return run_on_ranges(runner, pass_, dataset, ranges,
                         description=f"{description} (sample)")


@dataclass(frozen=True)
class Convergence:
    """How one training of the binary models ended (:func:`_pegasos`, :func:`_dcd`).

    The solvers train every binary model in the same epochs and stop them together, when
    the stopping rule of :func:`fit` is met; at the cap they record here which models the
    rule still found moving instead of warning, so that a fit that trains several times
    (counts of bases, pairs, value terms, the linear model, one-vs-one) warns once for
    all of them (``AdditiveSVC`` does, from :attr:`AdditiveFit.trainings`).

    Attributes
    ----------
    solver : {"pegasos", "dcd"}
    epochs : int
        The cap on the epochs.
    n_iter : int
        Epochs run.
    tol : float or None
        The rule's threshold (None: no rule, which nothing then judges).
    capped : bool
        Whether the training reached ``epochs`` without meeting the rule (False without
        a rule).
    converged : ndarray of shape (n_models,), bool
        Whether each binary model met the rule: all True when the rule stopped the
        training, all False without a rule; at the cap, False for the models that
        :func:`still_moving` (PEGASOS: its own monitored loss, by the rule, still
        improving) or :func:`dcd_moving` (``dcd``: its own duality gap and projected
        gradients both above their thresholds; else those whose gap is above ``tol``)
        singles out, and for every model when none is singled out (the rule judges them
        together).
    n_iter_no_change : int
        PEGASOS's patience (0 for ``dcd``).
    gap : float or None
        ``dcd`` at the cap: the largest last relative duality gap of the models not
        converged (None when no gap was measured: a single epoch).
    pg_range : float or None
        ``dcd`` at the cap: the widest span of their projected gradients in the last epoch.
    pg_tol : float
        ``dcd``: the projected gradients' threshold (:attr:`AdditiveConfig.pg_tol`).
    """

    solver: str
    epochs: int
    n_iter: int
    tol: float | None
    capped: bool
    converged: np.ndarray
    n_iter_no_change: int = 0
    gap: float | None = None
    pg_range: float | None = None
    pg_tol: float = 0.0

    def describe(self, which: str) -> str:
        """The solver's account of a training stopped at its cap, ``which`` naming the
        models not converged (e.g. ``"3 of the 10 one-vs-rest models (classes 0, 4,
        7)"``), and the remedy.

        Parameters
        ----------
        which : str

        Returns
        -------
        str
        """
        if self.solver == "pegasos":
            return (f"PEGASOS stopped after epochs={self.epochs} with the monitored hinge "
                    f"loss of {which} still improving by more than tol={self.tol} "
                    f"(relative) within the last {self.n_iter_no_change} epochs; raise "
                    "epochs or tol")
        gap = "unknown" if self.gap is None else f"{self.gap:.3g}"
        pg = "unknown" if self.pg_range is None else f"{self.pg_range:.3g}"
        return (f"dual coordinate descent stopped after epochs={self.epochs} with {which} "
                f"short of its rule: a relative duality gap of {gap} > tol={self.tol} "
                f"(projected gradients spanning {pg} > {self.pg_tol:.3g}), so the model may "
                "be far from the optimum; raise epochs or tol (a smaller C converges in "
                "fewer epochs)")


#: The trainings of the :func:`fit` running in this thread (:func:`recording_trainings`).
_TRAININGS: ContextVar[list[Convergence] | None] = ContextVar(
    "streamlearn_additive_trainings", default=None)


@contextmanager
def recording_trainings() -> Iterator[list[Convergence]]:
    """Collect the :class:`Convergence` of every training run in this block (by this
    thread), in order: :func:`fit` returns them as :attr:`AdditiveFit.trainings`. A
    block nested in another collects its own trainings only.

    Yields
    ------
    list of Convergence
    """
    log: list[Convergence] = []
    token = _TRAININGS.set(log)
    try:
        yield log
    finally:
        _TRAININGS.reset(token)


def record_training(convergence: Convergence | None) -> None:
    """Add a training's record to the open :func:`recording_trainings` block, if any."""
    log = _TRAININGS.get()
    if log is not None and convergence is not None:
        log.append(convergence)


def still_moving(values: Sequence[np.ndarray], n_models: int, tol: float, n: int,
                 floor: float) -> np.ndarray:
    """PEGASOS's rule applied to each binary model's own monitored values: whether it is
    unmet for each.

    Parameters
    ----------
    values : sequence of ndarray of shape (n_models,)
        Each model's monitored value after each epoch since the rule (re)started
        (:func:`monitored_losses`).
    n_models : int
    tol, n : float, int
        The rule's threshold and patience (:class:`Patience`).
    floor : float
        The floor of one model's value (:data:`LOSS_FLOOR`).

    Returns
    -------
    ndarray of shape (n_models,), bool
        True for a model whose last ``n`` values did not all improve on its best before
        them by less than ``tol`` times it: :class:`Patience` fed its values ends unmet.
        True for every model without values.
    """
    if not values:
        return np.ones(n_models, dtype=bool)
    moving = []
    for series in np.asarray(values, dtype=np.float64).T:
        rule = Patience(tol, n, floor)
        met = [rule.update(float(v)) for v in series]
        moving.append(not met[-1])
    return np.asarray(moving, dtype=bool)


def dcd_moving(gaps: np.ndarray | None, pg_spans: np.ndarray, tol: float, pg_tol: float
               ) -> np.ndarray:
    """``dcd``'s rule applied to each binary model at the cap: whether it is unmet for each.

    Parameters
    ----------
    gaps : ndarray of shape (n_models,) or None
        Each model's last relative duality gap (:func:`duality_gaps`; None: none measured).
    pg_spans : ndarray of shape (n_models,)
        The span of each model's projected gradients (and 0) in the last epoch.
    tol, pg_tol : float

    Returns
    -------
    ndarray of shape (n_models,), bool
        True for a model whose gap is above ``tol`` (or unknown) and whose projected
        gradients span more than ``pg_tol``.
    """
    above = np.ones(pg_spans.shape[0], dtype=bool) if gaps is None else gaps > tol
    return above & (pg_spans > pg_tol)


@dataclass(frozen=True)
class _Models:
    # what a solver's epochs leave (in the kernel's space)
    coef_d: np.ndarray
    state_w_d: np.ndarray
    n_iter: int
    t: int
    average_start: int
    pg_range: float | None
    monitor_history: tuple[float, ...] = ()
    calibration: ScoreHistogram | None = None  # binned held-out scores of coef_d, if known
    centre: np.ndarray | None = None  # dcd: the mean row its rows were centred on
    convergence: Convergence | None = None  # whether the stopping rule was met, per model


def monitored_loss(state: PegasosState, model: np.ndarray, emb: Embedding, lam: float,
                   held_out: bool) -> float:
    """The value PEGASOS's stopping rule follows, from a pass's monitored losses.

    Parameters
    ----------
    state : PegasosState
        After a :class:`PegasosEpochPass` with ``monitor=model``.
    model : ndarray of shape (m, n_dims + 1)
        The monitored models, in the kernel's space.
    emb : Embedding
        The kernel's embedding (for ``||w||^2``).
    lam : float
        Regularisation of the mean loss.
    held_out : bool
        Whether the losses are on held-out rows (else on the training rows).

    Returns
    -------
    float
        ``sum_j L_j / S_j`` over the binary models, with ``L_j, S_j`` their weighted hinge
        loss and weight (models without rows count 0); on the training rows plus
        ``lam / 2 ||w_j||^2`` each.
    """
    assert state.monitor_loss is not None and state.monitor_weight is not None
    total = state.monitor_weight
    value = float(np.sum(np.where(total > 0, state.monitor_loss / np.where(total > 0, total, 1.0),
                                  0.0)))
    if not held_out:
        dim = emb.n_dims
        value += 0.5 * lam * sum(float(model_sq_norm(w, emb.ipar)) + float(w[dim]) ** 2
                                 for w in model)
    return value


def monitored_losses(state: PegasosState, model: np.ndarray, emb: Embedding, lam: float,
                     held_out: bool) -> np.ndarray:
    """Each binary model's term of :func:`monitored_loss`: ``L_j / S_j`` (0 without
    rows), plus ``lam / 2 ||w_j||^2`` on the training rows.

    Parameters
    ----------
    state, model, emb, lam, held_out
        As for :func:`monitored_loss`.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    assert state.monitor_loss is not None and state.monitor_weight is not None
    total = state.monitor_weight
    values = np.where(total > 0, state.monitor_loss / np.where(total > 0, total, 1.0), 0.0)
    if not held_out:
        dim = emb.n_dims
        values = values + 0.5 * lam * np.array(
            [float(model_sq_norm(w, emb.ipar)) + float(w[dim]) ** 2 for w in model])
    return values


def blind(scores: ScoreHistogram | None) -> bool:
    """Whether some binary model's held-out rows hold no row of one of its labels.

    Parameters
    ----------
    scores : ScoreHistogram or None
        A monitored pass's binned held-out scores (None: none held out).

    Returns
    -------
    bool
    """
    return scores is not None and scores.fewest_rows() == 0


def monitored_error(state: PegasosState) -> float:
    """The sampling error of :func:`monitored_loss`'s value, from the same pass.

    Each binary model's mean loss ``L_j = sum_i s_i l_i / S_j`` has the variance
    ``v_j sum_i s_i^2 / S_j^2`` of a weighted mean of rows drawn at random, with ``v_j`` the
    weighted variance of its rows' losses (Kish's effective count of weighted rows); the
    error is the square root of the sum over the models (the penalty term has none).

    Parameters
    ----------
    state : PegasosState
        After a :class:`PegasosEpochPass` with a monitored model.

    Returns
    -------
    float
    """
    assert state.monitor_loss is not None and state.monitor_weight is not None
    assert state.monitor_loss_sq is not None and state.monitor_weight_sq is not None
    total = state.monitor_weight
    some = total > 0
    mean = state.monitor_loss[some] / total[some]
    spread = np.maximum(state.monitor_loss_sq[some] / total[some] - mean * mean, 0.0)
    return float(np.sqrt(np.sum(spread * state.monitor_weight_sq[some] / total[some] ** 2)))


def rose(last: tuple[float, float], best: tuple[float, float]) -> bool:
    """Whether the monitored loss rose from ``best`` to ``last``, each ``(value, error)``,
    by more than twice the error of their difference (taken as independent, which
    overstates it for the same rows): a rise that sampling noise does not explain.

    Parameters
    ----------
    last, best : tuple of float

    Returns
    -------
    bool
    """
    return bool(last[0] - best[0] > 2.0 * np.hypot(last[1], best[1]))


class Patience:
    """PEGASOS's stopping rule: stop after ``n`` values in a row that improve on the best
    value so far by less than ``tol`` times it (times ``floor`` when the best is below it).

    Parameters
    ----------
    tol : float
    n : int
    floor : float
        Values below it count as ``floor`` in the threshold: on a held-out set that is
        nearly separated, a loss that keeps shrinking by a share of almost nothing is not
        worth another read of the data.
    """

    def __init__(self, tol: float, n: int, floor: float = 0.0) -> None:
        self.tol = float(tol)
        self.n = int(n)
        self.floor = float(floor)
        self.best = np.inf
        self.stale = 0

    def update(self, value: float) -> bool:
        """Record a value; whether the rule is met."""
        threshold = self.tol * max(abs(self.best), self.floor)
        if value < self.best - threshold or not np.isfinite(self.best):
            self.stale = 0
        else:
            self.stale += 1
        self.best = min(self.best, value)
        return self.stale >= self.n


class EpochWindow:
    """Mean of PEGASOS's per-epoch averaged iterates over at least the last half of the
    epochs, in two running sums.

    Epoch ``e`` (from 1) adds the mean of its iterates and their count. The window is
    ``[p / 2, e]`` with ``p`` the largest power of two ``<= e`` (``[1, e]`` for ``e < 2``):
    at ``e = p`` the sum of epochs ``[p / 2, p)`` becomes the older sum and a new one
    starts, so the window always holds between half and three quarters of the epochs run
    (suffix averaging, Rakhlin et al., ICML 2012, without knowing the number of epochs in
    advance), and the early iterates of the large first steps drop out.
    """

    def __init__(self, shape: tuple[int, int]) -> None:
        self.older = np.zeros(shape)
        self.newer = np.zeros(shape)
        self.n_older = 0
        self.n_newer = 0
        self.epochs = 0

    def add(self, mean: np.ndarray, count: int) -> np.ndarray:
        """Add an epoch's mean iterate over ``count`` steps; the window's mean."""
        self.epochs += 1
        e = self.epochs
        if e >= 2 and e & (e - 1) == 0:  # a power of two: the newer sum becomes the older
            self.older, self.n_older = self.newer, self.n_newer
            self.newer, self.n_newer = np.zeros_like(self.older), 0
        self.newer = self.newer + mean * count
        self.n_newer += int(count)
        return (self.older + self.newer) / max(1, self.n_older + self.n_newer)


def step_offset(feature_map: FeatureMap | None, sample: np.ndarray | None, bias_scale: float,
                lam: float) -> int:
    """PEGASOS's step offset ``t0``: steps ``eta_t = 1 / (lam (t0 + k))``, ``k = 1, 2, ...``.

    ``t0 = R^2 / lam``, with ``R^2`` the mean squared norm of the embedded rows (and the
    bias feature) over the describe pass's row sample (:func:`step_norm_sq`), so that the
    first step, ``1 / R^2``, moves a typical row's score by about 1, the size of the
    margin; PEGASOS without an offset starts at ``1 / lam``, which for ``lam = 1 / (C n)``
    is ``C n`` and throws the first iterates far out, so that many epochs go into
    forgetting them. The later steps are PEGASOS's own (``t0`` is small beside ``k`` once
    the offset is spent). 0 without a sample (no describe pass) or when the sample has no
    finite norm.

    Parameters
    ----------
    feature_map : FeatureMap or None
        Fitted map (None: the raw features).
    sample : ndarray of shape (k, d), SparseRows or None
        Rows of the describe pass's sample.
    bias_scale : float
    lam : float
        PEGASOS's ``lam``.

    Returns
    -------
    int
    """
    return offset_of(step_norm_sq(feature_map, sample, bias_scale), lam)


def step_norm_sq(feature_map: FeatureMap | None, sample: np.ndarray | None,
                 bias_scale: float) -> float:
    """``R^2`` of :func:`step_offset`: the mean squared norm of the embedded rows of
    ``sample`` plus ``bias_scale^2``; 0 without rows or when it is not finite.

    Parameters
    ----------
    feature_map : FeatureMap or None
    sample : ndarray of shape (k, d), SparseRows or None
    bias_scale : float

    Returns
    -------
    float
    """
    if sample is None or sample.shape[0] == 0:
        return 0.0
    if isinstance(sample, SparseRows):
        total = embedded_sq_norm(sample, *embedding_params(feature_map, sample.n_cols))
    else:
        total = materialised_sq_norm(feature_map, sample)
    r2 = total / sample.shape[0] + float(bias_scale) ** 2
    return float(r2) if np.isfinite(r2) else 0.0


def offset_of(norm_sq: float, lam: float) -> int:
    """PEGASOS's step offset ``t0 = R^2 / lam`` (:func:`step_offset`) of ``R^2 = norm_sq``;
    0 unless both are positive and the quotient finite.

    Parameters
    ----------
    norm_sq : float
    lam : float

    Returns
    -------
    int
    """
    if not (norm_sq > 0 and lam > 0):
        return 0
    t0 = norm_sq / lam
    return int(min(t0, 2.0**62)) if np.isfinite(t0) else 0


def materialised_sq_norm(feature_map: FeatureMap | None, rows: np.ndarray) -> float:
    """``sum_i ||Psi_d(x_i)||^2`` over dense ``rows``, from the map's materialised transform
    (:meth:`~streamlearn.features.feature_map.FeatureMap.sum_sq_norms`, which leaves pair
    columns unmaterialised).

    :data:`SAMPLE_BLOCK_ROWS` rows are embedded at a time, so memory stays bounded by
    one block whatever the sample's size. The transform is the one
    :func:`term_importances` uses (numpy on small blocks, so a fit on small data compiles
    nothing for it: :func:`~streamlearn.features.bspline.bspline_transform`), which makes
    this cheaper on a first fit than a dedicated kernel
    (:func:`~streamlearn.solvers.embedding.embedded_sq_norm`, used for sparse rows).

    Parameters
    ----------
    feature_map : FeatureMap or None
        Fitted map (None: the raw features).
    rows : ndarray of shape (k, n_features)
        Rows; NaN counts as 0 and infinities as the largest float32.

    Returns
    -------
    float
    """
    rows = np.nan_to_num(np.asarray(rows, dtype=np.float32))
    total = 0.0
    for a in range(0, rows.shape[0], SAMPLE_BLOCK_ROWS):
        block = np.ascontiguousarray(rows[a:a + SAMPLE_BLOCK_ROWS])
        # float32 within a block, float64 across blocks
        total += (float(np.vdot(block, block)) if feature_map is None
                  else feature_map.sum_sq_norms(block))
    return total


def _pegasos(runner: Any, dataset: Dataset, config: AdditiveConfig, rows: TrainingRows,
             pairs: ModelPairs, shape: tuple[int, int], seed: int, n_train: int,
             regularisation: Regularisation, offset: int = 0) -> _Models:
    epochs = int(config.epochs)
    state = PegasosState(np.zeros(shape), np.zeros(shape), int(offset))
    average_start = int(NO_AVERAGING)
    # a held-out hinge loss below LOSS_FLOOR per binary model counts as LOSS_FLOOR
    patience = (Patience(config.tol, config.n_iter_no_change, LOSS_FLOOR * shape[0])
                if config.tol is not None else None)
    window = EpochWindow(shape)
    history: list[float] = []
    # each model's monitored values since the rule (re)started: who is still moving at the cap
    per_model: list[np.ndarray] = []
    model = state.W
    calibration: ScoreHistogram | None = None
    best: tuple[tuple[float, float], np.ndarray, ScoreHistogram | None] | None = None
    held_out = rows.holdout is not None
    epoch = 0
    for epoch in range(epochs):
        if config.average:
            # each epoch averages its own iterates (the first: its second half) and the
            # window averages those of the last half of the epochs
            average_start = state.t + (n_train // 2 if epoch == 0 else 0) + 1
        monitor = model if patience is not None and epoch > 0 else None
        steps_before = state.t
        epoch_pass = PegasosEpochPass(rows, pairs, regularisation.pegasos_lam,
                                      config.bias_scale, average_start, state, monitor,
                                      held_out)
        state = runner.run(epoch_pass, dataset, shuffle=True, seed=seed, epoch=epoch,
                           description=f"pegasos epoch {epoch + 1}/{epochs}")
        averaged = config.average and state.t >= average_start
        latest = (window.add(state.AVG, state.t - max(average_start - 1, steps_before))
                  if averaged else state.W.copy())
        if monitor is not None:
            assert patience is not None
            history.append(monitored_loss(state, monitor, rows.emb, regularisation.lam,
                                          held_out))
            per_model.append(monitored_losses(state, monitor, rows.emb, regularisation.lam,
                                              held_out))
            if held_out and blind(state.monitor_scores):
                # a model's held-out rows hold one of its labels only: their loss falls as
                # its scores all go to that label and cannot judge it; the rule follows
                # the training objective from the next epoch on
                held_out = False
                patience = Patience(config.tol, config.n_iter_no_change,
                                    LOSS_FLOOR * shape[0])
                per_model = []
                model = latest
                continue
            judged = (history[-1], monitored_error(state))
            if best is None or judged[0] <= best[0][0]:
                best = (judged, monitor, state.monitor_scores)
            if patience.update(history[-1]):
                # the model the rule judged last, or the best one if the loss has risen
                # since beyond its noise; calibrated by the scores its pass binned
                model, calibration = monitor, state.monitor_scores
                if rose(judged, best[0]):
                    _, model, calibration = best
                break
        model = latest
    else:
        if patience is not None:  # at the cap: the models whose own loss still moves
            assert config.tol is not None
            moving = still_moving(per_model, shape[0], config.tol, config.n_iter_no_change,
                                  LOSS_FLOOR)
            converged = ~moving if moving.any() else np.zeros(shape[0], dtype=bool)
            return _Models(model, state.W, epoch + 1, int(state.t), average_start, None,
                           tuple(history), calibration, convergence=Convergence(
                               "pegasos", epochs, epoch + 1, config.tol, True, converged,
                               int(config.n_iter_no_change)))
    convergence = Convergence("pegasos", epochs, epoch + 1, config.tol, False,
                              np.full(shape[0], patience is not None),
                              int(config.n_iter_no_change))
    return _Models(model, state.W, epoch + 1, int(state.t), average_start, None,
                   tuple(history), calibration, convergence=convergence)


def dcd_centre(sample: np.ndarray | SparseRows | None, rows: TrainingRows,
               bias_scale: float) -> np.ndarray | None:
    """The row dual coordinate descent centres its embedded rows on in its first epoch:
    their mean over the describe pass's row sample (from the second epoch on, their exact
    weighted mean over the training rows, which that epoch adds up).

    Rows far from the origin in the embedding share a large common part (every row of a
    B-spline map puts weight 1 on each feature's bases, a 0/1 feature on the same basis
    in most rows), so the dual's kernel matrix is a near-constant block plus the
    information, and coordinate descent crawls along the constant (on a9a, 20,000 rows,
    C = 1: a relative duality gap of 0.66 after 50 epochs uncentred, 0.014 centred).
    Centring ``z - mu`` removes that block; the intercept takes ``- w . mu``, so the model
    class is the same and only the intercept's penalty moves to the centred rows'
    intercept (:func:`~streamlearn.solvers.dcd.dcd_ovr_chunk`). With ``mu`` the exact
    weighted mean, the problem is the data's alone: rows repeated ``k`` times and a weight
    of ``k`` give the same one.

    Returns
    -------
    ndarray of shape (n_dims + 1,) or None
        In the kernel's space; None without a sample or a bias (``bias_scale = 0``).
    """
    if sample is None or sample.shape[0] == 0 or not bias_scale > 0.0:
        return None
    X = sample if isinstance(sample, SparseRows) \
        else np.ascontiguousarray(sample, dtype=np.float32)
    if rows.feature_map is not None:  # the kernel takes the materialised rows
        X = rows.feature_map.transform(X)
    return mean_embedding(X, *rows.emb)


def duality_gap(state: DcdState, previous: DcdState, model: np.ndarray,
                emb: Embedding, centre: np.ndarray | None = None,
                bias_scale: float = 1.0) -> float:
    """Relative duality gap of the dual coordinate descent iterate ``previous`` ended with.

    Parameters
    ----------
    state : DcdState
        After a :class:`DcdEpochPass` with ``monitor=model``: the primal losses of ``model``.
    previous : DcdState
        The epoch that ended with ``model``: its dual sums ``alpha_sum`` and ``dual_quad``.
    model : ndarray of shape (m, n_dims + 1)
        ``w(alpha)`` at the end of ``previous``, in ``w_d`` form.
    emb : Embedding
    centre : ndarray of shape (n_dims + 1,), optional
        The rows' centre (:func:`dcd_centre`): the penalised bias weight is then the
        centred rows' ``w[-1] + (w . mu) / bias_scale``.
    bias_scale : float

    Returns
    -------
    float
        ``max_j (P_j - D_j) / P_j`` over the binary models, with
        ``P_j = 1/2 ||w_j||^2 + sum_i C_i loss_ij`` and
        ``D_j = sum_i alpha_ij - 1/2 sum_i D_ii alpha_ij^2 - 1/2 ||w_j||^2``; by weak duality
        ``P_j - D_j >= P_j - P_j* >= 0``, so the primal objective of ``model`` is within this
        share of its optimum.
    """
    return float(np.max(duality_gaps(state, previous, model, emb, centre, bias_scale),
                        initial=0.0))


def duality_gaps(state: DcdState, previous: DcdState, model: np.ndarray,
                 emb: Embedding, centre: np.ndarray | None = None,
                 bias_scale: float = 1.0) -> np.ndarray:
    """Each binary model's relative duality gap ``(P_j - D_j) / P_j`` (0 when
    ``P_j <= 0``); :func:`duality_gap` is their largest.

    Parameters
    ----------
    state, previous, model, emb, centre, bias_scale
        As for :func:`duality_gap`.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    assert state.monitor_loss is not None
    dim = emb.n_dims
    gaps = np.zeros(len(model))
    for j, w in enumerate(model):
        bias = float(w[dim])
        if centre is not None:
            bias += float(model_dot(w, centre, emb.ipar)) / bias_scale
        sq = float(model_sq_norm(w, emb.ipar)) + bias**2
        primal = 0.5 * sq + float(state.monitor_loss[j])
        dual = float(previous.alpha_sum[j]) - float(previous.dual_quad[j]) - 0.5 * sq
        if primal > 0.0:
            gaps[j] = (primal - dual) / primal
    return gaps


def _dcd(runner: Any, dataset: Dataset, config: AdditiveConfig, rows: TrainingRows,
         pairs: ModelPairs, shape: tuple[int, int], seed: int, n_train: int,
         C: float, centre: np.ndarray | None) -> _Models:
    epochs = int(config.epochs)
    W = np.zeros(shape)
    pg_range = np.inf
    gaps: list[float] = []
    model_gaps: np.ndarray | None = None  # each model's last gap
    pg_spans = np.zeros(shape[0])
    previous: DcdState | None = None
    capped = False
    with ExampleState(dataset.n_rows, shape[0]) as alpha:
        epoch = 0
        for epoch in range(epochs):
            monitor = W if previous is not None else None
            # the first epoch adds up the weighted training rows: from the second on, the
            # rows are centred on their exact mean (the sample's was a first guess)
            sum_rows = epoch == 0 and epochs > 1 and config.bias_scale > 0.0
            epoch_pass = DcdEpochPass(rows, pairs, C, LOSSES[config.loss], config.bias_scale,
                                      alpha, seed * 1000003 + epoch, W, monitor, centre,
                                      sum_rows)
            state: DcdState = runner.run(epoch_pass, dataset, shuffle=True, seed=seed,
                                         epoch=epoch,
                                         description=f"dcd epoch {epoch + 1}/{epochs}")
            if previous is not None and monitor is not None:
                model_gaps = duality_gaps(state, previous, monitor, rows.emb, centre,
                                          config.bias_scale)
                gaps.append(float(np.max(model_gaps, initial=0.0)))
            pg_spans = np.maximum(state.pg_max, 0.0) - np.minimum(state.pg_min, 0.0)
            pg_range = float(np.max(pg_spans))
            if config.tol is not None and gaps and gaps[-1] <= config.tol:
                break  # W, the certified model, is returned
            moved = state.row_sum is not None and state.weight_sum > 0.0
            if moved:
                assert state.row_sum is not None
                exact = state.row_sum / state.weight_sum
                exact[-1] = 0.0
                move_centre(state.W, centre, exact, config.bias_scale, rows.emb.ipar)
                centre = exact
            W, previous = state.W, state
            if config.tol is not None and pg_range <= config.pg_tol and not moved:
                break
        else:
            capped = config.tol is not None
    n_iter = epoch + 1
    if capped:  # at the cap: the models whose own gap and projected gradients are high
        assert config.tol is not None
        moving = dcd_moving(model_gaps, pg_spans, config.tol, config.pg_tol)
        if not moving.any() and model_gaps is not None:  # settled gradients, gaps above
            moving = model_gaps > config.tol
        if not moving.any():
            moving = np.ones(shape[0], dtype=bool)
        convergence = Convergence(
            "dcd", epochs, n_iter, config.tol, True, ~moving, gap=(
                None if model_gaps is None else float(np.max(model_gaps[moving]))),
            pg_range=float(np.max(pg_spans[moving])), pg_tol=config.pg_tol)
    else:
        convergence = Convergence("dcd", epochs, n_iter, config.tol, False,
                                  np.full(shape[0], config.tol is not None),
                                  pg_tol=config.pg_tol)
    return _Models(W, W.copy(), n_iter, n_iter * n_train, int(NO_AVERAGING), pg_range,
                   tuple(gaps), centre=centre, convergence=convergence)
