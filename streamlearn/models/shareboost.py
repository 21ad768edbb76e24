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
sparsity path comes from one run. The algorithm lives in :mod:`streamlearn.solvers.shareboost`
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
    ClassifierScore,
    NotOnline,
    StreamEstimator,
    classification_dataset,
    storable_classes,
)
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
        A corrective step stops when its largest gradient entry is below ``tol``; when the
        last round's step reaches ``refit_iter`` iterations first, ``fit`` warns with a
        ``ConvergenceWarning``. ``n_rounds`` is the model's size, not a stopping cap:
        selection also stops early when no column lowers the loss.
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
        Rounds run, each of which added one column (or anchor piece): ``T`` or fewer.
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

    partial_fit = NotOnline("every round scores all candidate columns and re-fits the chosen "
                            "ones over the whole training set")
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "weights act as row counts, but with l2=0 the check's separable data (15 rows, "
            "30 features) has no finite optimum: 30 rounds of corrective steps let the "
            "weights grow, and the rounding of row sums taken in another order grows to "
            "~1e-6 in predict_proba, above the check's rtol of 1e-7",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "n_rounds": [Interval(Integral, 0, None, closed="left")],
        "features": [StrOptions(set(FEATURES))],
        "l2": [Interval(Real, 0, np.inf, closed="left")],
        "refit_iter": [Interval(Integral, 1, None, closed="left")],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "n_centres": [Interval(Integral, 1, None, closed="left")],
        "n_radii": [Interval(Integral, 1, None, closed="left")],
        "max_coverage": [Interval(Real, 0, 1, closed="right")],
        "tol": [Interval(Real, 0, np.inf, closed="left")],
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "engine": "no_validation",
        "random_state": ["random_state"],
        "progress": ["boolean", None],
    }

    def __init__(self, n_rounds: int = 50, features: str = "linear", l2: float = 0.0,
                 refit_iter: int = 30, n_bins: int = 32, n_centres: int = 256,
                 n_radii: int = 8, max_coverage: float = 0.6, tol: float = 1e-6,
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
        self.tol = tol
        self.chunk_rows = chunk_rows
        self.engine = engine
        self.random_state = random_state
        self.progress = progress

    # -- training -------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "raise", engine: Any = None,
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
        nan_policy : "raise", "drop" or float
            NaN, infinite and missing values (``None``, ``pd.NA``) in the features of
            data opened here: refuse them, drop the row, or replace them by the number.
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
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every, validation=validation, callback=callback)

    def _config(self) -> ShareBoostConfig:
        return ShareBoostConfig(
            n_rounds=int(self.n_rounds), features=str(self.features), l2=float(self.l2),
            refit_iter=int(self.refit_iter), n_bins=int(self.n_bins),
            n_centres=int(self.n_centres), n_radii=int(self.n_radii),
            max_coverage=float(self.max_coverage), tol=float(self.tol))

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
                held_out = classification_dataset(*validation)
            else:
                held_out = classification_dataset(validation)
        self.path_: dict[str, list[Any]] = {"n_selected": [], "loss": [], "train_error": [],
                                            "validation_error": [], "passes": []}

        def on_round(result: ShareBoostRound) -> None:
            """Make the estimator the round's model, extend ``path_``, call ``callback``."""
            if not hasattr(self, "family_"):
                self.classes_ = storable_classes(classes)
                self.feature_names_in_ = tuple(dataset.feature_names)
                self.n_features_in_ = len(self.feature_names_in_)
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
            path["passes"].append(int(result.passes))
            if callback is not None:
                callback(int(result.selected.shape[0]), self)

        fitted = driver.fit(runner, dataset, self._config(), seed, on_round)
        if not fitted.converged:
            warnings.warn(
                f"the corrective step of the last round stopped at refit_iter="
                f"{self.refit_iter} L-BFGS iterations with its largest gradient entry "
                f"{fitted.gradient_norm:.3g} above tol={self.tol:g}; increase refit_iter "
                "or tol (with l2=0, classes that a rule separates have no finite optimum: "
                "add l2)", ConvergenceWarning, stacklevel=5)
        return fitted

    def _set_fitted(self, fitted: ShareBoostFit) -> None:
        self.family_ = fitted.family
        self._set_model(fitted.selected, fitted.coef, fitted.intercept)

    def _set_model(self, selected: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> None:
        self.selected_features_ = selected
        self.n_iter_ = int(selected.shape[0])
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

    def _class_scores(self, X: Any) -> np.ndarray:
        """Class scores ``W x + b`` on the selected columns, (n, k) float64."""
        values = self._check_X(X)
        gates = self.family_.gates(values, self.selected_features_)
        return decision_chunk(gates, self.family_.base(values), self.coef_groups_,
                              self.intercept_)

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

    def predict_proba(self, X: Any) -> np.ndarray:
        """Soft-max of the class scores.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, k), rows sum to 1
        """
        scores = self._class_scores(X)
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
            ``classes_[argmax(decision_function(X))]``; with two classes,
            ``classes_[1]`` where ``decision_function(X) > 0`` (ties go to ``classes_[0]``).
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]

