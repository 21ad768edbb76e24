"""Super-sparse machines: a few learned virtual prototypes (paper 004).

``f(x) = sum_j beta_j s(x, c_j) + b`` over ``p`` prototypes ``c_j`` that need not be training
rows. ``fit`` minimises the weighted squared loss of eq. 2,

    ``J = (1 / V) sum_i v_i (f(x_i) - y_i)^2 + lam R(beta)``,  ``V = sum_i v_i``,

with ``R = ||beta||^2`` (``coef="ridge"``) or ``||beta||_1`` (``coef="lasso"``), by
alternating two steps, each one streamed pass over the data:

- **beta-step**: a reduction pass accumulates the ``(p + 1) x (p + 1)`` Gram matrix and the
  right-hand side of ``z_i = (s(x_i, c_1..p), 1)``; ridge is then the closed form of eq. 4,
  LASSO coordinate descent on the same statistics. ``J`` itself follows from them;
- **prototype step**: a reduction pass accumulates ``sum_i v_i e_i d s(x_i, c_k) / d c_k``
  (analytic for the RBF similarity, the caller's derivative, or eq. 7's ``x - c`` for a
  black-box similarity), the gradient of eqs. 5-6 at the optimal ``beta``. A repulsion term
  ``rho_t sum_{j != k} d s(c_j, c_k) / d c_k`` with ``rho_t = repulsion * repulsion_decay^t``
  keeps prototypes apart during the first iterations (Sec. III, "Prototype Initialization").

The prototype step size adapts: a step whose new objective (plus the repulsion penalty
``rho_t sum_{j<k} s(c_j, c_k)``) is not lower is undone and the step halved; an accepted step
grows by :data:`STEP_GROWTH`. Without repulsion the objective therefore never increases.
``solver="lbfgs"`` (the default) takes the same full-gradient steps along the L-BFGS
direction of the last 5 prototype steps (step 1, halved until the objective falls), which
reaches the same kind of minimum in a fraction of the passes; ``solver="batch"`` is the
paper's plain gradient step. ``solver="minibatch"`` moves the prototypes once per chunk
instead (one sequential pass per iteration, then one exact beta-step), for data too large
for many full passes.

``n_prototypes`` given as a list selects ``p`` by the incremental procedure of Sec. III
(eq. 8): fit with the largest ``p``, then repeatedly drop the prototypes with the smallest
``|beta|`` and warm-start the next smaller ``p``; the model kept minimises
``validation loss + tradeoff * p`` on rows held out by a hash of their row id.

A classifier of more than two classes has one output per class over one shared pool of
prototypes: ``f_c(x) = sum_j beta_jc s(x, c_j) + b_c`` fitted to ``+1`` for the row's class
and ``-1`` for the others, the sum of the classes' losses minimised by the same passes (the
Gram matrix is shared, each class has its right-hand side), the largest ``f_c`` predicting.

:meth:`SuperSparseClassifier.reduce` fits the prototypes to another model's
``decision_function`` (the SSVM of Sec. III), one output per column of it: the reduced
model needs ``p`` similarity evaluations per prediction instead of one per support vector.

``partial_fit`` takes the mini-batch solver's steps on in-memory rows, one call at a time
(online); its first call initialises the model from its rows.

The passes and the driver live in :mod:`streamlearn.solvers.supersparse`; this module holds
the estimators (parameters, their checks, fitted attributes, model files).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if

from streamlearn.data import Dataset, open_dataset
from streamlearn.data.open import check_coded_as_trained
from streamlearn.data.sources.base import default_feature_names
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.checkpoint import DEFAULT_EVERY
from streamlearn.errors import DataError, LabelError
from streamlearn.features.category_indicators import CategoryIndicators
from streamlearn.models.base import (
    ClassifierScore,
    RegressorScore,
    StreamEstimator,
    check_array_input,
    coded_table,
    encode_labels,
    has_column_names,
    has_named_features,
    hashing_of,
    over_dask_blocks,
    record_categories,
    record_feature_names,
    sorted_classes,
    sparse_rows_of,
    storable_classes,
)
from streamlearn.models.class_weight import (
    CLASS_WEIGHT_CONSTRAINT,
    class_counts,
    weighted_rows,
)
from streamlearn.solvers.calibration import temperature_of, temperature_proba
from streamlearn.solvers.holdout import Holdout  # noqa: F401  (importable from here)
from streamlearn.solvers.kmeans import Standardiser
from streamlearn.solvers.prototypes import rbf_similarities
from streamlearn.solvers.supersparse.driver import (  # noqa: F401  (importable from here)
    INIT_SALT,
    KMEANS_ITERATIONS,
    MIN_STEP_FRACTION,
    STEP_GROWTH,
    STEP_SHRINK,
    VALIDATION_SALT,
    SuperSparseConfig,
    SuperSparseFit,
    online_pass,
    online_step_size,
    start_online,
    target_moments,
)
from streamlearn.solvers.supersparse.driver import fit as fit_supersparse
from streamlearn.solvers.supersparse.passes import (  # noqa: F401  (importable from here)
    LASSO_SWEEPS,
    LASSO_TOL,
    FeatureSpreadPass,
    FeatureSpreadState,
    GradientPass,
    GradientState,
    GramPass,
    GramState,
    LossState,
    MiniBatchPass,
    MiniBatchState,
    Similarity,
    TargetRows,
    TeacherScorePass,
    ValidationPass,
    class_targets,
    linear_scores,
    mean_abs_steps,
    objective,
    scale_gamma,
    solve_beta,
)
from streamlearn.warning_origin import caller_stacklevel

COEFS = ("ridge", "lasso")
SOLVERS = ("lbfgs", "batch", "minibatch")
INITS = ("random", "kmeans")
#: ``n_prototypes="auto"``: at most this many prototypes, or ...
AUTO_PROTOTYPES = 50
#: ... this many per class when that is more (a shared pool for many classes) ...
PROTOTYPES_PER_CLASS = 10
#: ... and at least this many training rows per prototype.
ROWS_PER_PROTOTYPE = 10
#: Rows per block when predicting on in-memory data.
PREDICT_BLOCK = 65_536
#: The beta-step's statistics of every row trained on, which ``partial_fit`` continues.
MEMORY_ATTRIBUTES = ("beta_gram_", "beta_targets_", "beta_sums_")


def auto_prototypes(n_rows: int, n_classes: int = 2) -> int:
    """``n_prototypes="auto"``: ``min(max(50, 10 K), ceil(n_rows / 10))``, at least
    ``min(K, n_rows)``, for ``K``
    classes (``K = 2`` for regression).

    Enough prototypes for a curved boundary (two interleaved spirals need about 50 at the
    width of ``gamma="auto"``) while a prediction still costs 50 similarities; with more
    than five classes, :data:`PROTOTYPES_PER_CLASS` for each class in the shared pool
    (letter's 26 classes: 50 prototypes test at 21.1 % error, 260 at 5.9 %; pendigits'
    10: 2.54 -> 2.17 %; MNIST, 20,000 rows: 4.39 % at 100); and never fewer than
    :data:`ROWS_PER_PROTOTYPE` rows to place each one on small data, but one per class
    where there are rows for it.
    """
    most = max(AUTO_PROTOTYPES, PROTOTYPES_PER_CLASS * int(n_classes))
    floor = max(1, min(int(n_classes), int(n_rows)))
    return max(floor, min(most, -(-int(n_rows) // ROWS_PER_PROTOTYPE)))


# -- the estimators --------------------------------------------------------------------------
class _SuperSparse(StreamEstimator):
    """Shared estimator code of :class:`SuperSparseRegressor` and :class:`SuperSparseClassifier`."""

    _fitted_attribute = "prototypes_"
    _renamed_attributes: ClassVar[dict[str, str]] = {"coef_": "dual_coef_"}
    _category_indicators: ClassVar[bool] = True
    #: ``partial_fit`` takes mini-batch steps from prototypes and ``gamma`` drawn from its
    #: first call's rows, where ``fit`` runs ``solver`` (L-BFGS by default) from all rows:
    #: ``StreamSearchCV`` judges its finalists by ``fit`` (``final_rung="auto"``).
    _lanes_train_like_fit: ClassVar[bool] = False
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        check: "the initial prototypes are a seeded random sample of rows, so a row repeated "
               "k times is not drawn as the same row with weight k is"
        for check in ("check_sample_weight_equivalence_on_dense_data",
                      "check_sample_weight_equivalence_on_sparse_data")
    }

    @property
    def _accepts_sparse(self) -> bool:  # type: ignore[override]
        """The RBF similarity trains on sparse rows as they are (scaled, not centred); a
        similarity function takes dense rows."""
        return isinstance(self.similarity, str)

    def _refuse_sparse_partial_fit(self, X: Any) -> None:
        if sparse_rows_of(X, None, type(self).__name__) is not None:
            raise TypeError("partial_fit takes dense rows; fit streams sparse rows "
                            "(a scipy.sparse matrix, svmlight files or a zarr CSR store)")

    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "n_prototypes": [Interval(Integral, 1, None, closed="left"), "array-like",
                         StrOptions({"auto"})],
        "similarity": [StrOptions({"rbf"}), callable],
        "similarity_gradient": [callable, None],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale", "auto"})],
        "standardize": ["boolean"],
        "spread_tails": ["boolean"],
        "weight_features": ["boolean"],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "coef": [StrOptions(set(COEFS))],
        "step": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "repulsion": [Interval(Real, 0, None, closed="left")],
        "repulsion_decay": [Interval(Real, 0, 1, closed="both")],
        "init": [StrOptions(set(INITS)), "array-like"],
        "tradeoff": [Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="both")],
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "engine": "no_validation",
        "progress": ["boolean", None],
    }
    _sign_error = False

    def __init__(
        self,
        n_prototypes: int | Sequence[int] | str = "auto",
        similarity: str | Callable[[np.ndarray, np.ndarray], Any] = "rbf",
        similarity_gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None,
        gamma: float | str = "auto",
        standardize: bool = True,
        spread_tails: bool = True,
        weight_features: bool = True,
        lam: float | str = "auto",
        coef: str = "ridge",
        step: float = 1.0,
        max_iter: int = 300,
        tol: float = 1e-4,
        solver: str = "lbfgs",
        repulsion: float = 0.0,
        repulsion_decay: float = 0.5,
        init: str | np.ndarray = "random",
        tradeoff: float = 0.0,
        validation_fraction: float = 0.2,
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        self.n_prototypes = n_prototypes
        self.similarity = similarity
        self.similarity_gradient = similarity_gradient
        self.gamma = gamma
        self.standardize = standardize
        self.spread_tails = spread_tails
        self.weight_features = weight_features
        self.lam = lam
        self.coef = coef
        self.step = step
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.repulsion = repulsion
        self.repulsion_decay = repulsion_decay
        self.init = init
        self.tradeoff = tradeoff
        self.validation_fraction = validation_fraction
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -------------------------------------------------------------------
    def _grid(self, n_rows: int | None = None, n_classes: int = 2) -> list[int]:
        """Candidate numbers of prototypes, largest first (``"auto"`` resolved for
        ``n_rows`` training rows of ``n_classes`` classes; unresolved, it counts as one
        candidate)."""
        if isinstance(self.n_prototypes, str):
            return [auto_prototypes(0 if n_rows is None else n_rows, n_classes)]
        values = ([self.n_prototypes] if np.isscalar(self.n_prototypes)
                  else list(self.n_prototypes))
        if not values:
            raise ValueError("n_prototypes must be a positive integer or a non-empty list")
        grid = []
        for value in values:
            if isinstance(value, bool) or int(value) != value or int(value) < 1:
                raise ValueError(f"n_prototypes must hold positive integers, got {value!r}")
            grid.append(int(value))
        return sorted(set(grid), reverse=True)

    def _check_params(self) -> None:
        if len(self._grid()) > 1 and not 0 < self.validation_fraction < 1:
            raise ValueError("validation_fraction must lie strictly between 0 and 1, got "
                             f"{self.validation_fraction}")

    def _similarity(self) -> Similarity:
        """The fitted similarity (RBF width ``gamma_``)."""
        if self.similarity == "rbf":
            return Similarity(float(self.gamma_))
        return Similarity(float(self.gamma_), self.similarity, self.similarity_gradient)

    def _config(self, target: str, n_rows: int, teacher: Any = None,
                n_classes: int = 2, class_shares: np.ndarray | None = None
                ) -> SuperSparseConfig:
        """The driver's view of the hyper-parameters (validated by
        :meth:`_validate_hyperparameters`) for ``n_rows`` training rows of ``n_classes``
        classes (of the labels or of the teacher; ``class_shares``, the labels' weights,
        share the initial prototypes among them)."""
        rbf = self.similarity == "rbf"
        return SuperSparseConfig(
            grid=tuple(self._grid(n_rows, n_classes)),
            gamma=self.gamma if isinstance(self.gamma, str) else float(self.gamma),
            standardize=bool(self.standardize),
            lam=self.lam if isinstance(self.lam, str) else float(self.lam),
            coef=self.coef,
            step=float(self.step),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            solver=self.solver,
            repulsion=float(self.repulsion),
            repulsion_decay=float(self.repulsion_decay),
            init=self.init,
            tradeoff=float(self.tradeoff),
            validation_fraction=float(self.validation_fraction),
            target=target,
            sign_error=self._sign_error,
            similarity=None if rbf else self.similarity,
            similarity_gradient=None if rbf else self.similarity_gradient,
            teacher=teacher,
            n_classes=int(n_classes),
            owner=type(self).__name__,
            spread_tails=bool(self.spread_tails) and rbf,
            weight_features=bool(self.weight_features) and rbf,
            class_shares=(None if class_shares is None
                          else tuple(float(c) for c in class_shares)),
        )

    # -- training ---------------------------------------------------------------------------
    def _run_driver(self, runner: Any, dataset: Dataset, seed: int, mode: str | None = None,
                    teacher: Any = None) -> SuperSparseFit:
        """Fit to the labels or targets (``mode`` None: the estimator's task) or to the
        decision values of a ``teacher`` model (``mode="teacher"``)."""
        mode = self._task if mode is None else mode
        n_classes = 2
        shares = None
        if mode == "classification":
            n_classes = len(_several_classes(dataset.classes))
            shares = class_counts(dataset)  # one scan of the target and weight columns
        elif mode == "teacher":
            n_classes = len(_several_classes(getattr(teacher, "classes_", None)))
        indicators = getattr(self, "category_indicators_", None)
        if teacher is not None and indicators is not None:  # it scores the given columns
            teacher = GivenColumnsTeacher(teacher, indicators)
        rows = weighted_rows(dataset)  # a row of weight 0 is no row
        config = replace(self._config(mode, rows, teacher, n_classes, shares), n_rows=rows,
                         refit=mode == "classification"
                         and getattr(self, "loss", "squared") == "auto",
                         linear_part=getattr(self, "linear_part", False))
        return fit_supersparse(runner, dataset, config, seed)

    def _set_fitted(self, fitted: SuperSparseFit) -> None:
        # prototypes in the features' own units; the fit's are standardised (RBF), of the
        # features as mapped by feature_transform_ (spread_tails)
        std = fitted.standardiser
        self.shift_ = None if std is None else std.shift
        self.scale_ = None if std is None else std.scale
        # a feature constant in training (an infinite scale) is that constant in each
        prototypes = (fitted.prototypes if std is None
                      else fitted.prototypes * np.where(np.isinf(std.scale), 0.0, std.scale)
                      + std.shift)
        transform = fitted.feature_transform
        if transform is None:
            self.__dict__.pop("feature_transform_", None)
        else:
            self.feature_transform_ = transform
            prototypes = np.column_stack([transform.inverse(prototypes[:, j], j)
                                          for j in range(prototypes.shape[1])])
        self.prototypes_ = prototypes
        if fitted.coef.shape[1] == 1:  # one output: beta of shape (p,), a float intercept
            self.dual_coef_ = np.ascontiguousarray(fitted.coef[:, 0])
            self.intercept_ = float(fitted.intercept[0])
        else:  # one row per class, as scikit-learn's linear models
            self.dual_coef_ = np.ascontiguousarray(fitted.coef.T)
            self.intercept_ = np.array(fitted.intercept, dtype=np.float64)
        self.n_prototypes_ = fitted.n_prototypes
        self.objective_ = fitted.objective
        self.objective_path_ = fitted.objective_path
        self.n_iter_ = fitted.n_iter
        self.selection_path_ = fitted.selection_path
        self.gamma_ = fitted.gamma
        self.lam_ = fitted.lam
        self._keep("proba_scale_", fitted.proba_scale)
        if self._task == "classification":
            self.loss_ = fitted.loss
        self.refit_lam_ = float(fitted.refit_lam)
        self.linear_part_ = fitted.linear is not None
        if fitted.linear is None:
            self.__dict__.pop("linear_coef_", None)
        else:  # over the standardised columns read, as dual_coef_ over the prototypes
            linear = np.asarray(fitted.linear, dtype=np.float64)
            self.linear_coef_ = np.ascontiguousarray(
                linear[:, 0] if linear.shape[1] == 1 else linear.T)
        self._keep("proba_rows_", fitted.proba_rows)
        if fitted.slopes is None:
            self.__dict__.pop("feature_slopes_", None)
        else:
            self.feature_slopes_ = np.asarray(fitted.slopes, dtype=np.float64)
        self._keep("feature_weights_", fitted.feature_weights)
        memory = fitted.memory
        if memory is None:
            for name in MEMORY_ATTRIBUTES:
                self.__dict__.pop(name, None)
        else:
            self.beta_gram_ = memory.G
            self.beta_targets_ = memory.r
            self.beta_sums_ = np.array([memory.yy, memory.weight, memory.rows],
                                       dtype=np.float64)

    def _memory(self) -> GramState | None:
        """The beta-step statistics of every row trained on (None: a reduced model, or one
        saved without them)."""
        if not all(hasattr(self, name) for name in MEMORY_ATTRIBUTES):
            return None
        yy, weight, rows = (float(v) for v in self.beta_sums_)
        return GramState(np.array(self.beta_gram_, dtype=np.float64),
                         np.array(self.beta_targets_, dtype=np.float64), yy, weight,
                         int(rows))

    def _standardiser(self) -> Standardiser | None:
        """The fitted standardisation (None: raw features, e.g. a caller's similarity or a
        model stored without one)."""
        shift, scale = getattr(self, "shift_", None), getattr(self, "scale_", None)
        if shift is None or scale is None:
            return None
        return Standardiser(np.asarray(shift, dtype=np.float64),
                            np.asarray(scale, dtype=np.float64))

    def _mapped_prototypes(self) -> np.ndarray:
        """The prototypes as ``feature_transform_`` maps the rows (``prototypes_`` itself
        without one), float64."""
        transform = getattr(self, "feature_transform_", None)
        C = np.array(self.prototypes_, dtype=np.float64)
        return C if transform is None else transform.apply_bounds(C)

    def _mapped_rows(self, values: np.ndarray | SparseRows) -> np.ndarray | SparseRows:
        """Checked rows as the fit read them: categorical columns as indicators
        (``category_indicators_``), then through ``feature_transform_``."""
        if not isinstance(values, SparseRows):
            values = self._indicator_rows(values)
        transform = getattr(self, "feature_transform_", None)
        if transform is None:
            return values
        dense = values.toarray() if isinstance(values, SparseRows) else values
        return transform.apply(dense)

    def _fit_prototypes(self) -> np.ndarray:
        """The prototypes in the units the similarity is computed in."""
        C = self._mapped_prototypes()
        std = self._standardiser()
        return C if std is None else (C - std.shift) / std.scale

    def _linear_outputs(self) -> np.ndarray | None:
        """The linear part's coefficients as (d, K) over the standardised columns read, or
        None."""
        linear = getattr(self, "linear_coef_", None)
        if linear is None:
            return None
        linear = np.asarray(linear, dtype=np.float64)
        return linear[:, None] if linear.ndim == 1 else linear.T

    def _outputs(self) -> tuple[np.ndarray, np.ndarray]:
        """``beta`` as (p, K) and the intercepts as (K,), ``K`` the outputs."""
        coef = np.asarray(self.dual_coef_, dtype=np.float64)
        if coef.ndim == 1:
            return coef[:, None], np.atleast_1d(np.asarray(self.intercept_, dtype=np.float64))
        return coef.T, np.asarray(self.intercept_, dtype=np.float64)

    def _fitted(self) -> SuperSparseFit:
        std = self._standardiser()
        coef, intercept = self._outputs()
        return SuperSparseFit(self._fit_prototypes(), coef,
                              intercept, self.objective_, self.objective_path_,
                              int(self.n_iter_), self.selection_path_, self.gamma_,
                              None if std is None else std.shift,
                              None if std is None else std.scale, self._fitted_lam(),
                              feature_transform=getattr(self, "feature_transform_", None),
                              memory=self._memory(),
                              slopes=getattr(self, "feature_slopes_", None),
                              feature_weights=getattr(self, "feature_weights_", None))

    def _fitted_lam(self) -> float:
        """The penalty the fitted model used (``lam_``; ``lam`` itself for a model fitted
        before ``lam_`` was recorded, or the old default 1e-3 when that is ``"auto"``)."""
        lam = getattr(self, "lam_", None)
        if lam is not None and np.isfinite(lam):
            return float(lam)
        return 1e-3 if isinstance(self.lam, str) else float(self.lam)

    # -- online training ----------------------------------------------------------------------
    def _partial_fit_rows(self, X: np.ndarray, t: np.ndarray, weight: np.ndarray) -> None:
        """One mini-batch pass over in-memory rows (targets ``t``), then their beta-step.

        The first call (nothing fitted yet) initialises the prototypes, the RBF width and the
        coefficients from these rows; the caller has set the feature names.
        """
        # targets of one column per class (more than two classes) size the shared pool
        n_classes = t.shape[1] if t.ndim == 2 and t.shape[1] > 1 else 2
        config = self._config("regression", X.shape[0], n_classes=n_classes)
        if not hasattr(self, "prototypes_"):
            X = np.ascontiguousarray(self._indicator_rows(X))
            indicators = getattr(self, "category_indicators_", None)
            if isinstance(self.n_prototypes, str):
                most = auto_prototypes(1 << 62, n_classes)
                if config.grid[0] < most:
                    warnings.warn(
                        f"n_prototypes='auto' gives {config.grid[0]} prototype(s) for the "
                        f"{X.shape[0]} rows of the first partial_fit call (one per "
                        f"{ROWS_PER_PROTOTYPE} rows, up to {most}), and later calls keep "
                        f"them; pass n_prototypes=... for a stream of small calls",
                        UserWarning, stacklevel=caller_stacklevel())
            start = start_online(X, t, weight, config, self._seed(),
                                 () if indicators is None else indicators.indicator_columns())
            step_gamma = start.gamma if start.step_gamma is None else start.step_gamma
        else:
            start = self._fitted()
            X = np.ascontiguousarray(self._mapped_rows(X))  # as the fit read its rows
            # continuing a fit: its width (a model saved before the width was kept: None)
            step_gamma = getattr(self, "partial_fit_gamma_",
                                 None if hasattr(self, "partial_fit_step_") else start.gamma)
        if step_gamma is None:  # a model file from before the targets' moments: its step
            moments, step = None, float(self.partial_fit_step_)
        else:  # the targets of every call so far size the step
            moments = target_moments(t, weight, getattr(self, "partial_fit_targets_", None))
            step = online_step_size(config, step_gamma, moments)
        fitted = online_pass(start, X, t, weight, config, step, self.chunk_rows)
        self.partial_fit_step_ = step
        if moments is not None:
            self.partial_fit_gamma_ = float(step_gamma)
            self.partial_fit_targets_ = moments
        slopes = None
        weights = start.feature_weights  # a fit's, which the calls after it keep
        if config.similarity is None and fitted.standardiser is not None:  # the call's rows
            Z = fitted.standardiser.apply(X)
            slopes = mean_abs_steps(Z, fitted.prototypes, fitted.coef, fitted.gamma)
            if weights is not None:  # per standard deviation (see the fit's slopes)
                slopes = slopes * weights
        self._set_fitted(replace(fitted, feature_transform=start.feature_transform,
                                 slopes=slopes, feature_weights=weights))

    def _partial_fit_inputs(self, X: Any, y: Any, sample_weight: Any,
                            task: str) -> tuple[np.ndarray, np.ndarray]:
        """Checked float32 rows and float32 weights of a ``partial_fit`` call."""
        if hasattr(self, "prototypes_"):  # tables are coded by the fitted categories
            values, _, weights = check_array_input(self._check_training_X(X), y,
                                                   sample_weight, task)
        else:
            named = has_column_names(X)
            coded = coded_table(X)  # string and categorical columns as codes
            categories: dict[str, Any] = {}
            if coded is not None:
                X, names, categories = coded
            else:
                names = getattr(X, "columns", None)
            values, _, weights = check_array_input(X, y, sample_weight, task,
                                                   nan_policy="impute")
            if values.shape[0] < 2:
                raise DataError(f"the first partial_fit call needs at least 2 rows, got "
                                f"n_samples={values.shape[0]}")
            record_feature_names(
                self, (tuple(str(c) for c in names) if names is not None
                       else tuple(default_feature_names(values.shape[1]))),
                named)
            self.n_features_in_ = values.shape[1]
            # NaN read as missing values, by a map learned from these rows (as fit's
            # default); the categories' indicators then read the columns it gives
            values = self._first_call_missing_values(values, self._feature_names, categories)
            read = getattr(self, "missing_values_", None)
            self._warn_category_codes(categories, online=True)
            self._start_category_indicators(
                self._feature_names if read is None else read.feature_names, categories)
            record_categories(self, categories)
        weight = (np.ones(values.shape[0], dtype=np.float32) if weights is None
                  else np.ascontiguousarray(weights, dtype=np.float32))
        return np.ascontiguousarray(values, dtype=np.float32), weight

    @property
    def feature_importances_(self) -> np.ndarray:
        """Each feature's share of the decision function's change over a step of its own
        spread, shape (n_features,), summing to 1 (RBF similarity only).

        ``feature_slopes_`` normalised: the mean over a uniform sample of the training rows
        (the spread pass's, no extra read; after :meth:`partial_fit`, its latest call's
        rows) and the outputs (one per class for more than two) of
        ``|f(z + s h_f e_f) - f(z)| / h_f``, with ``z`` the standardised features: each row
        steps across feature ``f``'s mean over those rows, up by ``h_f`` from below it
        (``s = 1``), down from above it (``s = -1``), ``h_f`` the distance between the
        means of the values on either side (1.6 standard deviations of a normal feature;
        a 0/1 feature's step lands each row on its other value). For a linear ``f`` this is
        the slope per standard deviation; unlike the slope at the rows, it sees a feature
        of few values, on which prototypes settle so that ``f`` is flat at every row
        however much the feature moves it. Where the fit took no sample (sparse rows,
        ``spread_tails=False`` and ``weight_features=False``, a model made by
        :meth:`reduce`), the same mean over the
        prototypes, stepped across the prototypes' means; prototypes may sit away from the
        rows, so the rows are preferred. Units do not matter. A categorical column read as
        indicator columns gets the sum of theirs (an indicator column, centred but not
        scaled, steps between its 0 and 1).
        """
        self._check_fitted()
        if self.similarity != "rbf" or self._standardiser() is None:
            raise AttributeError("feature_importances_ is defined for the RBF similarity, "
                                 "whose features are standardised")
        slopes = getattr(self, "feature_slopes_", None)
        if slopes is None:
            C = self._fit_prototypes()
            beta, _ = self._outputs()
            slopes = mean_abs_steps(C, C, beta, float(self.gamma_), self._linear_outputs())
            weights = getattr(self, "feature_weights_", None)
            if weights is not None:  # per standard deviation, as the rows' slopes
                slopes = slopes * weights
        weights = self._importances_per_column(np.asarray(slopes, dtype=np.float64))
        total = float(np.sum(weights))
        return weights / total if total > 0 else weights

    # -- prediction -------------------------------------------------------------------------
    def _decision(self, X: Any) -> np.ndarray:
        """``f(x) = sum_j beta_j s(x, c_j) + b``: ``p`` similarity evaluations per row;
        shape (n,) with one output, (n, K) with one per class."""
        self._check_fitted()
        values = sparse_rows_of(X, self.n_features_in_, type(self).__name__,
                              named=has_named_features(self),
                              hashing=hashing_of(self))
        return self._decision_rows(self._check_X(X) if values is None else values)

    def _decision_rows(self, values: np.ndarray | SparseRows) -> np.ndarray:
        """:meth:`_decision` of checked rows."""
        similarity = self._similarity()
        std = self._standardiser()
        beta, intercept = self._outputs()
        # with a standardiser (RBF), the standardised distance from the raw rows and
        # prototypes: no standardised copy of the rows
        C = self._fit_prototypes() if std is None else self._mapped_prototypes()
        dense_only = std is None and similarity.function is not None
        linear = self._linear_outputs()
        raw_linear = linear  # z = x without a standardisation
        if linear is not None and std is not None:  # z . w = x . (w / scale) - shift . that
            raw_linear = linear / std.scale[:, None]
            intercept = intercept - std.shift @ raw_linear
        out = np.empty((values.shape[0], beta.shape[1]))
        for a in range(0, values.shape[0], PREDICT_BLOCK):
            b = min(a + PREDICT_BLOCK, values.shape[0])
            if isinstance(values, SparseRows):  # a similarity function gets dense rows
                block = values.slice(a, b).toarray() if dense_only else values.slice(a, b)
            else:
                block = values[a:b]
            block = self._mapped_rows(block)  # a block at a time: sparse rows densified
            S = (similarity.values(block, C) if std is None
                 else rbf_similarities(block, C, float(self.gamma_), std.scale))
            out[a:a + block.shape[0]] = S @ beta + intercept
            if linear is not None:
                out[a:a + block.shape[0]] += linear_scores(block, raw_linear)
        return out[:, 0] if out.shape[1] == 1 else out

_PARAMS_DOC = """
    A categorical column of more than two categories, and at most 256
    (:data:`~streamlearn.features.category_indicators.MAX_INDICATOR_CATEGORIES`), is read
    as one indicator column per category (``category_indicators_``, built in the stream
    from the column's codes): its codes name categories in sorted order, which means
    nothing as a distance. The indicator columns are centred but not scaled, so that a
    categorical column spreads about as much as one standardised feature, and a category
    unseen in fit sets none of them; in a column of two categories (one 0/1 column) it is
    read as the column's training mean (``shift_``, 0 once standardised; 0.5, halfway,
    without a standardisation), not as the code 2 past both. ``prototypes_``, ``shift_``
    and ``scale_`` are over
    the columns read; ``n_features_in_``, ``feature_names_in_`` and
    ``feature_importances_`` are those of the given columns. :meth:`reduce` hands the
    model it follows the given columns. A column of more categories keeps its codes, and
    ``fit`` warns.

    Parameters
    ----------
    n_prototypes : int, list of int or "auto"
        Number of virtual prototypes ``p``; a list chooses among its values by eq. 8 (the
        incremental procedure of Sec. III) on held-out rows. ``"auto"``:
        ``min(max(50, 10 n_classes), ceil(n_rows / 10))``, but at least one per class
        where there are rows for it (:func:`auto_prototypes`: 10 a class in the shared
        pool of more than five classes; the rows of the first call for
        :meth:`partial_fit`, which warns when they allow fewer than the most).
        ``n_rows`` counts the rows of positive weight: a row of weight 0 is no row, and
        no initial prototype is drawn from one.
    similarity : "rbf" or callable
        ``exp(-gamma ||x - c||^2)``, or any ``s(X, C) -> (n, p)`` array (``X`` float32 rows,
        ``C`` float64 prototypes). Models with a callable similarity cannot be saved.
    similarity_gradient : callable, optional
        ``g(X, C) -> (n, p, d)``, ``d s(x_i, c_k) / d c_k`` of a callable similarity; without
        it the prototype step uses eq. 7's approximation ``x - c``.
    gamma : float, "auto" or "scale"
        RBF width, in the units of ``standardize``. ``"auto"`` derives it from the initial
        prototypes: ``gamma = 1 / (2 D^2)``, ``D^2`` the median over the prototypes of the
        squared distance to the nearest other one, so neighbouring prototypes have
        similarity ``exp(-1/2)`` and each covers its own region whatever the dimension and
        the number of prototypes, but at most 8 times the ``"scale"`` value (the RBF's
        length at least a quarter of the rows' root mean squared distance from their
        mean: prototypes crowd in one or two dimensions, where their nearest distances
        left gaps between them; ``"scale"`` when there are not two distinct prototypes).
        With ``lam="auto"`` the width is then chosen among 1, 1/4, 1/16 and 1/64 times
        that one, by the held-out rows' squared loss of a beta-step at the initial
        prototypes (without held-out rows, ridge coefficients: the lowest generalised
        cross-validation score): a wider RBF is taken only when its loss is at most a
        quarter of the prototypes' own width's. Overlapping bumps follow a target that
        changes smoothly across many prototypes, a linear trend most of all, which narrow
        ones cannot; a smaller gain is what moving the prototypes learns away (two
        interleaved spirals keep their own width). One pass per width.
        :meth:`partial_fit` chooses it the same way on its first call's rows.
        ``"scale"`` derives it from the training rows: ``gamma = 1 / sum_j var_j`` with
        ``var_j`` the (weighted) variance of feature ``j`` (one over the number of varying
        features once standardised; 1 when every feature is constant), so two typical rows
        have similarity about ``exp(-2)``: too wide for a curved boundary in few dimensions
        (two interleaved spirals stay at chance level).
    standardize : bool
        With the RBF similarity, standardise every feature first by the training rows'
        (weighted) mean and standard deviation, ``z = (x - shift_) / scale_`` (a feature
        constant in training takes the scale ``inf``: it is 0 whatever its value at
        prediction, as the fit learned nothing of its other values), and compute
        ``exp(-gamma ||z - z_c||^2)``: the model does not depend on the features' units.
        False computes the RBF on the raw features (to reproduce a kernel machine's
        geometry, e.g. an RBF-SVM's that :meth:`reduce` shrinks). A caller's similarity
        always gets the raw features. Sparse rows keep their units (``shift_`` 0,
        ``scale_`` 1; see :data:`~streamlearn.solvers.kmeans.SPARSE_UNITS`).
    spread_tails : bool
        With the RBF on standardised dense rows, map a crowded feature (a heavy tail, far
        outliers) by ``asinh((x - c) / s)`` before the standardisation, as ``MixtureSVC``
        does (:class:`~streamlearn.features.tail_transform.TailTransform`'s rule, kept
        when the feature's standard deviation is above 3 times its robust spread,
        :func:`~streamlearn.features.tail_transform.squeezing_tails`): standardised as it
        is, one outlier at a million squeezes every other row of its feature onto one
        point, and the prototypes and ``gamma`` follow the outlier. One more pass when a
        feature is mapped. Not for :meth:`reduce` (the teacher scores the rows as they
        are).
    weight_features : bool
        With the RBF on standardised dense rows of at most 1,024 columns
        (:data:`~streamlearn.solvers.mixture.relevance.MAX_RELEVANCE_FEATURES`), divide
        each standardised feature by a weight in ``[0.1, 1]`` from its relevance to the
        labels (a regressor's targets cut at their sample quartiles), by ``MixtureSVC``'s
        rule: on the rows the first pass samples (as ``spread_tails`` samples them, with
        their labels), ``r_f``, the most that feature ``f``'s quartile bins explain of the
        labels alone or beside another feature's bins (beyond what those explain alone),
        as the correlation ratio less its expected value for independent labels, gives
        ``w_f = sqrt(3 r_f / max_g r_g)`` clipped to ``[0.1, 1]``
        (:func:`~streamlearn.solvers.mixture.relevance.relevance_weights`). Standardised
        alike, a feature that does not bear on the labels takes as much of every distance
        as one that does, and the RBF's neighbourhoods span the noise: a ring in two of
        eight normal features, 5.50 -> 1.17 % test error (three 70/30 splits of 4,000
        rows). The bins are quantiles, so the weights do not depend on the features'
        units. ``scale_`` is the standard deviation over the weight
        (``feature_weights_``); indicator columns and constant features keep 1. ``fit``
        only: :meth:`partial_fit` standardises its first call's rows without weights
        (weighted by a first call of 100 rows, a regressor streamed over 1,200 rows in
        calls of 100 lost R^2, 0.76 -> 0.68), and calls after a ``fit`` keep its
        standardisation. Not for :meth:`reduce` (the teacher's scores are no labels).
    lam : float or "auto"
        Regularisation ``lam R(beta)`` of eq. 2. ``"auto"`` chooses it on held-out rows
        (``validation_fraction`` of them, by a hash of the row id): the prototypes are
        trained on the other rows, and the penalty is the largest of
        ``lam_scale * 10^(-9 .. 2)`` by half decades whose beta-step's squared loss on the
        held-out rows is within 1 % of the lowest (the simplest model they cannot tell
        from the best), ``lam_scale`` being the mean squared similarity of a row to a
        prototype (so the grid follows the similarities whatever ``gamma``, ``p`` and the
        dimension), for LASSO coefficients times the targets' standard deviation (their
        penalty is in the coefficients' units, which follow the targets'). It is chosen
        at every accepted beta-step, the penalty in use kept while it stays within the
        1 %; choosing reads no extra data, the held-out rows' Gram
        statistics being gathered in the beta-step's own pass. The alternation then stops
        when the held-out loss at an unchanged penalty fell by less than ``5 tol`` of its
        value over the last 5 accepted steps, and the last beta-step takes every row. With
        fewer than 200 rows expected in the held-out share, ridge coefficients take the
        penalty of the lowest generalised cross-validation score (within 1 %) on every
        row at the initial prototypes (:func:`~streamlearn.solvers.supersparse.passes.gcv_lam`,
        from the same Gram statistics), but at least ``(lambda_max / n) sigma^2 / var(t)``
        (:func:`~streamlearn.solvers.supersparse.passes.gcv_floor`: ``lambda_max`` the
        largest eigenvalue of the covariance of the rows' similarities, ``sigma^2`` the
        lowest GCV score, ``var(t)`` the targets' variance), as the prototype steps then
        train at it with no rows held out; LASSO ones ``lam = 1e-3 lam_scale``.
        :meth:`partial_fit` chooses it once, on its first call's rows (``1e-3 lam_scale``
        with too few to hold some out: those rows may not show every class; ``1e-3``
        times the ridge unit when their targets are constant, whose zero losses tie).
    coef : {"ridge", "lasso"}
        ``R = ||beta||^2`` (closed-form beta-step) or ``||beta||_1`` (coordinate descent).
    step : float
        Initial prototype step (batch solver; adapted: x1.2 after a decrease, x0.5 and
        undone after an increase) or the fixed per-chunk step (mini-batch solver). For
        regression targets (and a reduced model's scores) ``fit`` divides it by the
        targets' variance, so that the fit does not depend on their units.
        :meth:`partial_fit` uses ``step / (gamma_ var(t))``, ``var(t)`` the weighted target
        variance of every call so far (this one's included; ``partial_fit_targets_``), so
        that its default moves prototypes by a fixed share of the data's spread whatever
        the units of features and targets (``gamma_`` the prototypes' own width where
        ``gamma="auto"`` widened the RBF); while the targets seen are constant but for
        rounding (standard deviation at most ``1e-10`` times their root mean square: a
        first block of zero sales, one class) it takes no prototype step. Sized by the
        first call alone, a constant first call left a step 30-6,000 times too large for
        the targets that followed, which threw the prototypes off the data for good.
    max_iter : int
        Alternations (batch: prototype-step trials; mini-batch: epochs); 0 keeps the
        initial prototypes and only solves for ``beta`` (prototype-selection baselines).
        A fit whose alternation reaches it before the rule of ``tol`` warns
        ``ConvergenceWarning`` once, naming every count of ``n_prototypes`` it stopped.
    tol : float
        The batch and L-BFGS solvers stop when their last 5 trials together lowered the
        objective by less than ``5 tol`` times its value (one small step after a halving
        does not stop it; nor, for L-BFGS, a last move along which the objective bent down,
        its gradient grown: a plateau's edge, where the growing steps have yet to reach
        the descent, as on many features, where the RBF's width makes the first steps
        small),
        the mini-batch solver when an epoch changes it by less than ``tol`` times its value
        (once repulsion has decayed to zero). The batch solver also stops when
        its step has shrunk below ``1e-6 * step`` without finding a decrease.
    solver : {"lbfgs", "batch", "minibatch"}
        Full-gradient alternation along the L-BFGS direction of the last 5 prototype steps
        (step 1, halved while the objective does not fall; the gradient step of ``step``
        while there is no history, after a change of ``lam="auto"``'s penalty or while
        repulsion acts), the paper's plain gradient step (``"batch"``), or prototypes moved
        per chunk (one sequential pass per epoch, then an exact beta-step). On 20,000-row
        subsets of seven benchmark sets ``"lbfgs"`` took 20-108 steps where ``"batch"``
        took 35-300, and reached a lower test error on each (three seeds).
    repulsion : float
        Initial weight of the repulsion penalty (0: none).
    repulsion_decay : float
        The repulsion weight at iteration ``t`` is ``repulsion * repulsion_decay^t``.
    init : {"random", "kmeans"} or ndarray of shape (p, n_features)
        Initial prototypes: uniformly sampled rows, streamed k-means centres, or given.
        A classifier's ``"random"`` samples each class's rows: at least one prototype a
        class (while the pool allows), the rest in proportion to the classes' weights
        (:func:`~streamlearn.solvers.supersparse.passes.class_quotas`), so that no class
        starts with fewer than its share by the luck of the draw.
    tradeoff : float
        Eq. 8's price of one prototype, added to the validation loss.
    validation_fraction : float
        Share of rows held out (by a hash of the row id) when ``n_prototypes`` is a list
        or ``lam="auto"``.
    chunk_rows : int, optional
        Rows per chunk when this estimator opens the data or makes the engine.
    random_state : int, optional
        Seeds the initial prototypes, the validation rows and the chunk order.
    engine : engine, optional
        Runs the passes; a ``LocalEngine`` by default.
    progress : bool, optional
        Progress bars for the default engine.

    Attributes
    ----------
    prototypes_ : ndarray of shape (n_prototypes_, n_features), float64
        In the features' own units (for the RBF, mapped back from the standardised space
        the fit works in).
    category_indicators_ : CategoryIndicators
        The indicator columns read in place of categorical columns (absent when there
        are none).
    shift_, scale_ : ndarray of shape (n_features,) or None
        The RBF's standardisation ``z = (x - shift_) / scale_``; None for a caller's
        similarity. Of the mapped features where ``feature_transform_`` maps some.
    feature_slopes_ : ndarray of shape (n_features,)
        The decision function's mean absolute change per standard deviation over a step
        across each feature's mean, over a uniform sample of the training rows (see
        :attr:`feature_importances_`); absent where the fit took no sample.
    feature_weights_ : ndarray of shape (n_features,)
        ``weight_features``: each standardised feature's relevance weight (``scale_`` holds
        the standard deviation over it); absent where the fit weighed none.
    feature_transform_ : TailTransform
        ``spread_tails``: the crowded features mapped before the standardisation (absent
        when none was).
    dual_coef_ : ndarray of shape (n_prototypes_,) or (n_classes, n_prototypes_)
        ``beta``, the weight of each prototype's similarity (as an RBF ``SVC``'s
        ``dual_coef_`` weighs its support vectors); a row per class for a classifier of
        more than two classes. There is no ``coef_``: no weight belongs to one feature
        (``feature_importances_`` ranks them).
    intercept_ : float or ndarray of shape (n_classes,)
    n_prototypes_ : int
    objective_ : float
        Eq. 2's objective on the training rows at the end.
    objective_path_ : ndarray
        Objective after the first beta-step and after every alternation; after
        :meth:`partial_fit`, after each of its last 100 calls (the entries before dropped,
        so that the model's size does not grow with the number of calls; ``n_iter_`` counts
        them all).
    n_iter_ : int
        Alternations run for the model kept. Stopping at ``max_iter`` before the
        convergence rule of ``tol`` warns :class:`~sklearn.exceptions.ConvergenceWarning`.
    gamma_ : float
        The RBF width used (``gamma``, or its ``"auto"`` or ``"scale"`` value).
    lam_ : float
        The penalty used (``lam``, or its ``"auto"`` choice).
    partial_fit_step_ : float
        The prototype step of :meth:`partial_fit`'s latest call: ``step / (gamma
        var(t))`` (0 while the targets seen are constant), ``gamma`` the prototypes' own
        width where ``gamma="auto"`` widened the RBF (whose coefficients then grow as
        ``1 / gamma_``, and the prototype gradient with them).
    partial_fit_gamma_ : float
        That ``gamma`` (``gamma_`` for calls after :meth:`fit`).
    partial_fit_targets_ : ndarray of shape (3, K)
        The targets of every :meth:`partial_fit` call so far, per output: their weight,
        weighted mean and weighted sum of squared deviations from it (merged call by call,
        Chan et al.'s pairwise update), which size ``partial_fit_step_``.
    beta_gram_, beta_targets_ : ndarray of shape (p + 1, p + 1), (p + 1, K)
        The beta-step's statistics ``sum v z z^T`` and ``sum v z t^T`` of every row trained
        on, ``z`` a row's similarities and 1 (each row at the prototypes of its last step).
        :meth:`partial_fit` adds its rows and solves them, so a call of a few rows moves a
        model trained on many by their share.
    beta_sums_ : ndarray of shape (3,)
        ``sum v ||t||^2``, ``sum v`` and the row count of those rows.
    selection_path_ : ndarray of shape (n_candidates, 4)
        Per candidate ``p`` (largest first): ``p``, validation loss, eq. 8's criterion and
        training objective (NaN losses when ``n_prototypes`` is one number).
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        The feature names seen in ``fit``; only when its data named its columns (a
        table, a file), as in scikit-learn: an array's columns are read by position.
    missing_values_ : MissingValues
        With ``fit(..., nan_policy="impute")``: each column's fill value and the columns
        given a missing-value indicator, read after the given columns (absent otherwise;
        :mod:`streamlearn.features.missing_values`).
    n_features_in_ : int
"""


_LINEAR_PART_REGRESSION_DOC = """    linear_part : {"auto", True, False}
        A linear part in the decision function, ``f(x) = sum_j beta_j s(x, c_j) + w . z +
        b`` with ``z`` the standardised features (a virtual prototype of the linear
        kernel), for ridge coefficients: once the prototypes are learned, one more pass
        gathers the Gram statistics of ``(s(x, c), z, 1)`` on the training rows and on the
        held-out ones, and the coefficients are the closed-form ridge solve of a set of
        those columns, ``w`` penalised as ``beta`` is. ``"auto"`` solves six lanes: the
        prototypes alone, the prototypes and the features, the features alone
        (``beta = 0``), each at ``lam_`` and ``lam_ / 10``, and of the lanes within 1 % of
        the lowest held-out mean squared loss keeps the first in that order (the
        simplest the held-out rows cannot tell from the best; the first is the
        beta-step's own coefficients, which then stay). With ``lam="auto"`` the kept lane
        is solved on every row, as the last beta-step is. Where the fit holds no rows out
        (fewer than 200 expected in the ``validation_fraction`` share) but ``lam`` is
        ``"auto"`` and there are at least 100 rows, five folds of the rows (by a hash of
        their position) choose the lane instead: each fold is held out of a whole fit,
        prototypes and penalty included, and scores its lanes; the lane first within 1 %
        of the lowest mean loss over the folds is then solved on every row after the fit
        on every row (five more fits: 0.08 -> 0.35 s on scikit-learn's diabetes set,
        whose test R2 went from 0.378 to 0.420 against ridge's 0.442). No score of the
        training rows can judge the lanes (the prototypes were learned on those rows;
        their generalised cross-validation score favoured them even on a noisy linear
        target). With a given ``lam`` and no rows held out, ``"auto"`` is False. It is
        tried where the prototypes, the features read and the intercept number at most 512
        coefficients
        (:data:`~streamlearn.solvers.supersparse.driver.LINEAR_PART_MAX_UNKNOWNS`); beyond
        that ``"auto"`` is False. True: the prototypes and the features, whatever their
        number, at the penalty of the two the held-out rows choose (``lam_`` without
        held-out rows). False: the prototypes alone at ``lam_`` (the paper's model).
        LASSO coefficients keep the prototypes alone. On sparse rows, which keep their
        units, ``z`` is the rows' values. :meth:`partial_fit` re-solves the squared loss
        on the prototypes and drops the linear part.
"""


class SuperSparseRegressor(RegressorScore, _SuperSparse):
    __doc__ = ("Super-sparse regression: ridge or LASSO over similarities to ``p`` learned "
               "virtual prototypes (paper 004's SRidge and SLASSO).\n"
               + _PARAMS_DOC.replace("\n    Attributes\n",
                                     _LINEAR_PART_REGRESSION_DOC + "\n    Attributes\n", 1)
               + """    linear_part_ : bool
        Whether the model has a linear part (``linear_coef_``, see ``linear_part``).
    linear_coef_ : ndarray of shape (n_columns,)
        The linear part's ``w`` over the standardised columns read (``(x - shift_) /
        scale_``, after ``feature_transform_``); only where ``linear_part_``.
    refit_lam_ : float
        The penalty of ``dual_coef_`` and ``linear_coef_`` where ``linear_part`` solved
        its lanes (``lam_`` or ``lam_ / 10``); NaN where it did not run.

    Validation loss for eq. 8: mean absolute error.
    """)
    _task = "regression"
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        **_SuperSparse._parameter_constraints,
        "linear_part": [StrOptions({"auto"}), "boolean"]}
    #: a model file written before ``linear_part`` holds a model without one, and one
    #: before ``weight_features`` the unweighted standardisation
    _params_before: ClassVar[dict[str, Any]] = {"linear_part": False,
                                                "weight_features": False}

    def __init__(
        self,
        n_prototypes: int | Sequence[int] | str = "auto",
        similarity: str | Callable[[np.ndarray, np.ndarray], Any] = "rbf",
        similarity_gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None,
        gamma: float | str = "auto",
        standardize: bool = True,
        spread_tails: bool = True,
        weight_features: bool = True,
        lam: float | str = "auto",
        coef: str = "ridge",
        step: float = 1.0,
        max_iter: int = 300,
        tol: float = 1e-4,
        solver: str = "lbfgs",
        repulsion: float = 0.0,
        repulsion_decay: float = 0.5,
        init: str | np.ndarray = "random",
        tradeoff: float = 0.0,
        validation_fraction: float = 0.2,
        linear_part: bool | str = "auto",
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        super().__init__(
            n_prototypes=n_prototypes, similarity=similarity,
            similarity_gradient=similarity_gradient, gamma=gamma, standardize=standardize,
            spread_tails=spread_tails, weight_features=weight_features, lam=lam, coef=coef,
            step=step, max_iter=max_iter,
            tol=tol, solver=solver,
            repulsion=repulsion, repulsion_decay=repulsion_decay, init=init,
            tradeoff=tradeoff, validation_fraction=validation_fraction,
            chunk_rows=chunk_rows, random_state=random_state, engine=engine,
            progress=progress)
        self.linear_part = linear_part

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto", engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SuperSparseRegressor:
        """Learn prototypes and coefficients by streaming over the data.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Targets of in-memory ``data``, or the target column name.
        sample_weight : array-like or str, optional
            Non-negative row weights ``v_i``.
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
            Overrides the ``engine`` parameter for this call.
        checkpoint : str or path-like, optional
            Directory where progress is saved; a fit killed and run again resumes from it.
        checkpoint_every : int
            Chunks between two checkpoint writes.

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def partial_fit(self, X: Any, y: Any, sample_weight: Any = None) -> SuperSparseRegressor:
        """One mini-batch pass over in-memory rows, continuing from the current model.

        The rows are cut into blocks of ``chunk_rows`` rows (all rows as one block when
        ``chunk_rows`` is None), visited in the given order; each block takes the mini-batch
        solver's step (a beta-step on the block, then one prototype step of size ``step``
        with repulsion ``repulsion * repulsion_decay^t`` at call ``t``), whatever ``solver``
        is. The call ends with the exact beta-step on all its rows at the new prototypes.

        The first call (or the first after :meth:`fit` failed) initialises the model from
        its rows: ``n_prototypes`` (one number) prototypes drawn without replacement among
        its rows with positive weight, seeded by ``random_state`` (``init="random"``),
        k-means++ and 10 Lloyd iterations on them (``"kmeans"``), or ``init`` itself;
        ``gamma="scale"`` is computed from these rows and kept, and so is ``gamma="auto"``,
        with ``lam="auto"`` chosen as :meth:`fit` chooses it among 1, 1/4, 1/16 and 1/64
        times the prototypes' own width (see ``gamma``): by the squared loss of the
        ``validation_fraction`` of these rows held out to choose ``lam`` (a hash of their
        position in the call), or with too few to hold out, ridge coefficients, by the
        generalised cross-validation score of every row. The prototype step
        (``partial_fit_step_``) is scaled by the prototypes' own width and by the variance
        of the targets of every call so far (none while those are constant). Targets of
        the first call that are constant choose nothing: ``gamma="auto"`` is then the
        prototypes' own width and ``lam="auto"`` ``1e-3`` times the mean squared
        similarity of a row to a prototype. A call after
        :meth:`fit` continues from the fitted prototypes and coefficients.
        A first call whose rows hold a NaN learns how to read missing values from them,
        as ``fit`` does from its rows (``missing_values_``); a later call reads its NaN
        through that map, or ``fit``'s (a column without a gap there: its fill value, no
        indicator). A model without a map (its first rows had no NaN) refuses NaN.

        The first call also fixes the category list of each string or categorical column
        (every category of a pandas ``category`` column, else the values present; a call
        after ``fit`` keeps fit's): a later call holding another category raises a
        ``DataError`` rather than train it as an unseen one, so declare every category on
        the first call with a ``pd.Categorical`` (or ``CategoricalDtype``) of the full list.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
        y : array-like of shape (n,)
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._check_partial_fit_target(y)
        self._validate_hyperparameters()
        self._refuse_sparse_partial_fit(X)
        values, weight = self._partial_fit_inputs(X, y, sample_weight, "regression")
        self._partial_fit_rows(values, np.asarray(y, dtype=np.float64).reshape(-1), weight)
        return self

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, ``f(x)`` (plus ``w . z``, the standardised features', where
        ``linear_part_``).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,)
        """
        return self._decision(X)


@dataclass(frozen=True)
class GivenColumnsTeacher:
    """A model to reduce, scoring rows of the columns the reduced model reads.

    The reduced model reads a categorical column as indicator columns
    (``category_indicators_``); the model it is fitted to takes the given columns, the
    category codes among them, which :meth:`CategoryIndicators.codes` gives back.

    Attributes
    ----------
    model : object
        With ``decision_function(X)`` over the given columns.
    indicators : CategoryIndicators
    """

    model: Any
    indicators: CategoryIndicators

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``model.decision_function`` of the rows as given columns."""
        return self.model.decision_function(self.indicators.codes(X))


def _has_probabilities(model: SuperSparseClassifier) -> bool:
    """Whether ``predict_proba`` applies: not to a model made by ``reduce``."""
    return not getattr(model, "reduced_", False)


_CLASS_WEIGHT_DOC = """    class_weight : dict, "balanced" or None
        Factors on the weights ``v_i`` of each class's rows (label -> factor), or
        ``"balanced"``, as scikit-learn's classifiers take them
        (:mod:`~streamlearn.models.class_weight` states the rules); ``class_weight_``
        holds the factors used. A dict in :meth:`partial_fit`.
    loss : {"auto", "squared"}
        ``"squared"``: the paper's model, coefficients and prototypes of the squared loss
        to ``+-1`` targets. ``"auto"``: the prototypes so learned, then the coefficients
        refitted for the squared hinge ``max(0, 1 - y f)^2`` (one-vs-rest with more
        classes) with the prototypes fixed, by Keerthi and DeCoste's L2-SVM Newton
        method (from the squared-loss coefficients, one streamed pass per iteration over
        the rows inside the margin with a streamed line search; a step the line search
        cuts damps the next ones, as Levenberg and Marquardt's method does). Its ridge
        penalty is ``lam_`` or ``lam_ / 10``, fitted together as lanes of the same
        passes on the rows outside the holdout, each output until the active set stops
        changing, a step lowers the objective by at most 1e-3 of its value at the start,
        or three steps in a row have not lowered its held-out squared hinge loss
        (early stopping: the step of lowest held-out loss is kept; a ConvergenceWarning
        after 30 passes). The lane of lowest mean squared hinge loss on the held-out
        rows (the larger within 1 % of it) is kept only when that loss is more than 1 %
        below the squared-loss coefficients' own; with ``lam="auto"`` its penalty is
        then fitted on every row from the squared-loss coefficients on every row, each
        output by as many steps as its held-out loss chose. Where the fit holds no rows
        out (fewer than 200 expected in the ``validation_fraction`` share) but ``lam`` is
        ``"auto"`` and there are at least 100 rows, five folds of the rows (by a hash of
        their position) choose instead: each fold is held out of a whole fit, prototypes
        and penalty included, and scores the squared-loss coefficients and the lanes;
        the lane kept by the same rule on the folds' mean losses is then fitted on every
        row, to its own stopping rule (five more fits: a noisy plane in six features,
        300 rows, 10.4 -> 7.4 % test error, mean of ten draws; the bundled small sets
        within their splits' noise). A fit that holds no rows out otherwise (fewer rows,
        or a fixed ``lam`` with one ``n_prototypes``), LASSO coefficients and
        :meth:`reduce` keep the squared loss, as does
        :meth:`partial_fit`, whose steps re-solve the squared loss. ``loss_`` says which
        loss the coefficients have. With a ``LocalEngine`` the refit's passes keep the
        rows' similarity columns between them (float64, up to 256 MiB; the rows beyond
        are computed in every pass).
    linear_part : {"auto", True, False}
        A linear part in the refit's decision function, ``f(x) = sum_j beta_j s(x, c_j) +
        w . z + b`` with ``z`` the standardised features (a virtual prototype of the
        linear kernel; ``loss="auto"`` only, one ``w`` per class). ``w`` is fitted by the
        same Newton passes as extra columns beside the similarities, penalised as
        ``beta`` is, from ``w = 0``. ``"auto"`` runs, in the same passes, the refit's two
        penalties on three sets of columns: the prototypes alone, the prototypes and the
        features, the features alone (``beta = 0``); of the lanes
        within 1 % of the lowest held-out squared hinge loss it keeps the first in that
        order (the simplest the held-out rows cannot tell from the best), so the linear
        part is kept only where it lowers that loss by more than 1 %. It is tried where
        the prototypes, the features read and the intercept number at most 512
        coefficients (:data:`~streamlearn.solvers.supersparse.driver.LINEAR_PART_MAX_UNKNOWNS`:
        the refit's statistics grow with their square); beyond that ``"auto"`` is
        False. True: the prototypes and the features, whatever their number. False:
        the prototypes alone (the paper's model with ``loss="squared"``). On sparse rows,
        which keep their units, ``z`` is the rows' values. :meth:`partial_fit`
        re-solves the squared loss on the prototypes and drops the linear part.
"""


class SuperSparseClassifier(ClassifierScore, _SuperSparse):
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        check: "the initial prototypes are a seeded random sample of each class's rows, so a "
               "row repeated k times is not drawn as the same row with weight k is"
        for check in ("check_sample_weight_equivalence_on_dense_data",
                      "check_sample_weight_equivalence_on_sparse_data")
    }
    __doc__ = ("Super-sparse classifier: a ridge or LASSO fit of ``+-1`` labels, or of "
               "another model's scores (:meth:`reduce`, the SSVM), over similarities to ``p`` "
               "learned virtual prototypes.\n\n"
               "    Two classes: one output ``f``, whose sign is the decision. More classes: "
               "one pool of\n    prototypes shared by all classes and a coefficient vector "
               "per class (the feature sharing\n    of paper 003 applied to paper 004's "
               "prototypes), fitted to ``+1`` for the row's class and\n    ``-1`` for the "
               "others; the largest output is the decision. The classes share the Gram\n"
               "    matrix of the beta-step, and the prototype step follows the sum of their "
               "losses.\n"
               + _PARAMS_DOC.replace("\n    Attributes\n",
                                     _CLASS_WEIGHT_DOC + "\n    Attributes\n", 1)
               + """
    classes_ : ndarray of shape (n_classes,)
        Labels; with two, ``f > 0`` predicts ``classes_[1]``.
    proba_scale_ : float
        The temperature ``s`` of :meth:`predict_proba`'s ``softmax(s f)``: of lowest
        log-loss on the held-out rows (scored by the model before its last beta-step
        took them in; no extra pass), else on every training row (one more pass). Absent
        for a model made by :meth:`reduce`.
    proba_rows_ : {"held-out", "training"}
        The rows ``proba_scale_`` was chosen on.
    loss_ : {"squared", "squared_hinge"}
        The loss of ``dual_coef_`` and ``intercept_`` (see ``loss``); ``objective_`` and
        ``objective_path_`` are those of the squared loss the prototypes were learned by.
    refit_lam_ : float
        The squared-hinge refit's penalty (NaN when the squared loss's coefficients stay).
    linear_part_ : bool
        Whether the model has a linear part (``linear_coef_``, see ``linear_part``).
    linear_coef_ : ndarray of shape (n_columns,) or (n_classes, n_columns)
        The linear part's ``w`` over the standardised columns read (``(x - shift_) /
        scale_``, after ``feature_transform_``), one row per class with more than two;
        only where ``linear_part_``.

    Validation loss for eq. 8: the share of held-out rows whose decision differs from the
    target's (the label, or the reduced model's decision). Choosing ``p`` drops the
    prototypes of smallest ``||beta_j||`` over the classes.
    """)

    _sign_error = True
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        **_SuperSparse._parameter_constraints, "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "loss": [StrOptions({"auto", "squared"})],
        "linear_part": [StrOptions({"auto"}), "boolean"]}
    #: a model file written before ``loss`` was a parameter holds the squared loss's model,
    #: one written before ``linear_part`` none, and one before ``weight_features`` the
    #: unweighted standardisation
    _params_before: ClassVar[dict[str, Any]] = {"loss": "squared", "linear_part": False,
                                                "weight_features": False}

    def __init__(
        self,
        n_prototypes: int | Sequence[int] | str = "auto",
        similarity: str | Callable[[np.ndarray, np.ndarray], Any] = "rbf",
        similarity_gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None,
        gamma: float | str = "auto",
        standardize: bool = True,
        spread_tails: bool = True,
        weight_features: bool = True,
        lam: float | str = "auto",
        coef: str = "ridge",
        step: float = 1.0,
        max_iter: int = 300,
        tol: float = 1e-4,
        solver: str = "lbfgs",
        repulsion: float = 0.0,
        repulsion_decay: float = 0.5,
        init: str | np.ndarray = "random",
        tradeoff: float = 0.0,
        validation_fraction: float = 0.2,
        class_weight: dict[Any, float] | str | None = None,
        loss: str = "auto",
        linear_part: bool | str = "auto",
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        super().__init__(
            n_prototypes=n_prototypes, similarity=similarity,
            similarity_gradient=similarity_gradient, gamma=gamma, standardize=standardize,
            spread_tails=spread_tails, weight_features=weight_features, lam=lam, coef=coef,
            step=step, max_iter=max_iter,
            tol=tol, solver=solver,
            repulsion=repulsion, repulsion_decay=repulsion_decay, init=init,
            tradeoff=tradeoff, validation_fraction=validation_fraction,
            chunk_rows=chunk_rows, random_state=random_state, engine=engine,
            progress=progress)
        self.class_weight = class_weight
        self.loss = loss
        self.linear_part = linear_part

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto", engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SuperSparseClassifier:
        """Fit ``f`` to ``+1`` (``classes_[1]``) and ``-1`` (``classes_[0]``) targets, or
        with more classes one output per class to ``+1`` (its class) and ``-1`` (others).

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Labels of in-memory ``data`` (at least two classes), or the target column name.
        sample_weight : array-like or str, optional
            Non-negative row weights ``v_i``.
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
        checkpoint : str or path-like, optional
        checkpoint_every : int

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> SuperSparseClassifier:
        """One mini-batch pass over in-memory rows, continuing from the current model.

        As :meth:`SuperSparseRegressor.partial_fit`, on targets ``+1`` (``classes_[1]``) and
        ``-1`` (``classes_[0]``), or with more classes one column per class (``+1`` for the
        row's class, ``-1`` for the others). The first call fixes the classes: ``classes``
        when given, else the two labels of its ``y`` (with more, ``classes`` is required, as
        scikit-learn's ``SGDClassifier`` requires it on every first call). A model made by
        :meth:`reduce` cannot be continued: its targets are another model's decision
        values on rows it has already seen, not labels.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
        y : array-like of shape (n,)
        classes : array-like of shape (n_classes,), optional
            Every label; needed on the first call unless its ``y`` holds exactly two.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._check_partial_fit_target(y)
        self._validate_hyperparameters()
        self._refuse_sparse_partial_fit(X)
        if getattr(self, "reduced_", False):
            raise ValueError("partial_fit cannot continue a model made by reduce(): reduce "
                             "fits another model's decision values, not labels; reduce again "
                             "on all rows instead")
        if not hasattr(self, "prototypes_"):
            known = sorted_classes(classes if classes is not None else y)
            _several_classes(known)
            if classes is None and len(known) > 2:
                raise LabelError(f"y has {len(known)} classes: pass classes=[...] with all "
                                 "labels on the first call to partial_fit")
        else:
            known = self.classes_
            if classes is not None and not np.array_equal(sorted_classes(classes), known):
                raise LabelError(f"classes {list(classes)} differ from those of the first "
                                 f"call {known.tolist()}")
        sample_weight = self._partial_fit_sample_weight(y, known, sample_weight)
        values, weight = self._partial_fit_inputs(X, y, sample_weight, "classification")
        codes = encode_labels(y, known)
        memory = self._memory() if hasattr(self, "prototypes_") else None
        before = (float(self.proba_scale_), memory.weight) if (
            memory is not None and getattr(self, "proba_scale_", None) is not None) else None
        self._partial_fit_rows(values, class_targets(codes, len(known)), weight)
        self.classes_ = storable_classes(known)
        scale = temperature_of(self._decision_rows(values), codes, weight)
        if before is not None and before[1] > 0:  # the earlier rows keep their share
            share = float(weight.sum()) / (float(weight.sum()) + before[1])
            scale = float(np.exp((1 - share) * np.log(before[0]) + share * np.log(scale)))
        self.proba_scale_ = scale
        self.proba_rows_ = "training"
        return self._class_weight_recorded()

    @classmethod
    def reduce(cls, model: Any, p: int | Sequence[int], data: Any, *,
               sample_weight: Any = None, engine: Any = None,
               checkpoint: str | os.PathLike[str] | None = None,
               checkpoint_every: int = DEFAULT_EVERY, **params: Any) -> SuperSparseClassifier:
        """Reduce a trained classifier to ``p`` virtual prototypes (SSVM, Sec. III).

        The prototypes and coefficients are fitted to ``model.decision_function`` on the rows
        of ``data``, so the reduced classifier mimics the model's decision values. A
        multiclass model's ``K`` decision columns are fitted by ``K`` outputs over one
        shared pool of prototypes.

        Parameters
        ----------
        model : object
            Any fitted classifier with ``classes_`` and ``decision_function(X)`` of shape
            ``(n,)`` for two classes or ``(n, n_classes)`` for more (an estimator of
            streamlearn, a scikit-learn ``SVC``, ...).
        p : int or list of int
            ``n_prototypes`` of the reduced model.
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
            Rows where the model is imitated (labels, if any, are not used). Categorical
            columns are coded by ``model.categories_`` when it has them (the categories
            it was trained with, whatever those ``data`` holds); a ``Dataset`` opened with
            other categories is refused.
        sample_weight : array-like, optional
            Row weights of in-memory ``data``.
        engine, checkpoint, checkpoint_every
            As in :meth:`fit`.
        **params
            Other hyper-parameters of the reduced classifier.

        Returns
        -------
        SuperSparseClassifier
        """
        if not hasattr(model, "decision_function"):
            raise LabelError(f"the model to reduce needs a decision_function; "
                             f"{type(model).__name__} has none")
        classes = getattr(model, "classes_", None)
        if classes is None:
            raise LabelError(f"the model to reduce must be fitted (no classes_ on "
                             f"{type(model).__name__})")
        classes = _several_classes(np.asarray(classes))
        if len(classes) > 2 and getattr(model, "decision_function_shape", None) == "ovo":
            # K (K - 1) / 2 columns, one per pair of classes: as many as K for three
            raise LabelError(f"{type(model).__name__}(decision_function_shape='ovo') scores "
                             "each pair of classes, not each class; set "
                             "decision_function_shape='ovr' (scikit-learn's default) to "
                             "reduce it")
        reduced = cls(n_prototypes=p, **params)
        reduced._validate_hyperparameters()
        if isinstance(data, Dataset):
            if sample_weight is not None:
                raise ValueError("with a Dataset, give the weights to open_dataset")
            dataset = data
        else:  # the model's categories code the rows it is scored on
            dataset = open_dataset(data, weight=sample_weight, chunk_rows=reduced.chunk_rows,
                                   categories=getattr(model, "categories_", None) or None)
        if hasattr(model, "categories_"):
            check_coded_as_trained(model, dataset)
        reduced._fit_dataset(dataset, engine, checkpoint, checkpoint_every, mode="teacher",
                             teacher=model)
        reduced.classes_ = storable_classes(classes)
        reduced.reduced_ = True
        return reduced

    @over_dask_blocks
    def decision_function(self, X: Any) -> np.ndarray:
        """``f(x) = sum_j beta_j s(x, c_j) + b``: ``p`` similarity evaluations per row
        (plus ``w . z``, the standardised features', where ``linear_part_``).

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,) or (n, n_classes), float64
            Two classes: positive values predict ``classes_[1]``. More: one column per
            class, the largest predicts.
        """
        return self._decision(X)

    @available_if(_has_probabilities)
    @over_dask_blocks
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``softmax(s f(x))`` (temperature scaling); two classes:
        ``[1 - p, p]`` with ``p = 1 / (1 + exp(-s f(x)))``.

        ``s`` is ``proba_scale_``, the scale of lowest log-loss on the rows held out by
        ``fit`` (``validation_fraction`` of them, where ``lam="auto"`` or a list of
        ``n_prototypes`` holds some out), else on its training rows (``proba_rows_`` says
        which); each :meth:`partial_fit` call chooses one on its rows and moves the scale
        there in ``log s`` by the call's share of the rows' weight. One scale keeps every
        decision: the most probable class is :meth:`predict`'s. A model made by
        :meth:`reduce` has none (it imitates another model's scores, not labels; wrap it
        in ``CalibratedClassifierCV``).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        self._check_fitted()
        if not hasattr(self, "proba_scale_"):
            raise AttributeError("this model has no probability scale (a model file saved "
                                 "before predict_proba existed); fit it again")
        return temperature_proba(self._decision(X), float(self.proba_scale_))

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels: ``classes_[1]`` where ``f(x) > 0``; with more classes the class
        of the largest output.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        f = self._decision(X)
        return self.classes_[(f > 0).astype(np.int64) if f.ndim == 1 else f.argmax(axis=1)]


def _several_classes(classes: np.ndarray | None) -> np.ndarray:
    """``classes`` when there are at least two; else scikit-learn's error."""
    if classes is None or len(classes) < 2:
        got = None if classes is None else list(np.asarray(classes).tolist())
        raise LabelError(f"Classifier can't train when only one class is present: a "
                         f"super-sparse classifier needs at least two classes, got {got}")
    return np.asarray(classes)


