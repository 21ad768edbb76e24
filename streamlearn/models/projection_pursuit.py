"""Sparse projection pursuit (paper 001): ``SparsePPRRegressor`` and ``SparseJSBoostClassifier``.

Both models are sums of ridge functions of sparse unit directions,
``F(x) = sum_k f_k(u_k . x)``, learned one term at a time (forward stagewise). Each direction
comes from the "informative feature first" search of paper 001 (Tables 1-2,
:func:`~streamlearn.solvers.projection_search.informative_feature_first`), which minimises
``E = g(u) + lam ||u||_1`` with ``lam = g(u^(0)) / tau`` (eq. 6): for the regression the
residual sum of squares before the term (Table 3), for the classifier the cost of the best
single coordinate; ``tau = inf`` switches the L1 term off (plain PPR and JSBoost). The search
starts from the lowest-cost single coordinate or signed coordinate pair (``start="pairs"``,
the default), as in the paper from the best single coordinate (``start="coordinate"``), or
as in KLBoosting from the gain-weighted sum of all coordinates (``start="weighted"``).

``fit`` is a sequence of passes over the data (the passes and the drivers
:func:`~streamlearn.solvers.projection_pursuit.fit_sparse_ppr` and
:func:`~streamlearn.solvers.projection_pursuit.fit_sparse_jsboost` are in
:mod:`streamlearn.solvers.projection_pursuit`):

1. a reduction pass of weighted feature moments (minimum, maximum, mean, covariance: they
   bound the projected values), the weighted target mean (regression) and class masses
   (classification); with ``spread_tails`` it also samples rows, and a feature that a few
   far outliers (or a heavy tail) would squeeze under the standardisation is mapped by
   ``asinh`` first, the moments then taken again of the mapped rows;
2. for every term, each scan of the search is ONE reduction pass that costs every candidate
   direction ``alpha + delta e_m`` together: the B-spline Gram matrix and right-hand side of
   the projected values (regression) or the weighted class histograms (classification). The
   residuals ``r_i = y_i - F(x_i)`` and the boosting weights ``w_i = s_i c_{y_i} exp(-y_i F(x_i))``
   are recomputed from the model's terms for each row inside the scan kernels, never stored.

:class:`SparsePPRRegressor` (Table 3) fits each ridge function as a penalised B-spline (a
second-order difference penalty of weight ``smoothing``) of the projection, on the residuals.
:class:`SparseJSBoostClassifier` (Table 6) picks the direction of greatest Jensen-Shannon
divergence between the weighted class histograms (eq. 13) and adds the weak learner
``f(z) = 1/2 log(h+(z) / h-(z))`` (real AdaBoost's confidence-rated output, smoothed).
"""

from __future__ import annotations

import math
import os
import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from streamlearn.data import Dataset
from streamlearn.engine.checkpoint import DEFAULT_EVERY
from streamlearn.errors import LabelError
from streamlearn.models.base import (
    ClassifierScore,
    NotOnline,
    RegressorScore,
    StreamEstimator,
    over_dask_blocks,
)

# the passes, their states and the drivers live in the solver package; their names stay
# importable from here
from streamlearn.solvers.calibration import temperature_proba
from streamlearn.solvers.projection_pursuit import (  # noqa: F401
    AUTO_MAX_ROUNDS,
    BACKFIT_TOL,
    PENALTY_ORDER,
    SEARCHES,
    BoostConfig,
    BoostedTerms,
    BoostFit,
    ClassHistograms,
    DataMoments,
    GramStatistics,
    HistogramScanPass,
    MomentsPass,
    RidgeConfig,
    RidgeFit,
    RidgeTerms,
    SearchConfig,
    SplineScanPass,
    fit_sparse_jsboost,
    fit_sparse_ppr,
    search_rounds,
)
from streamlearn.solvers.projection_search import (
    STARTS,
    ridge_predict_chunk,
    table_predict_chunk,
)
from streamlearn.warning_origin import caller_stacklevel

# -- shared estimator plumbing -------------------------------------------------------------
#: Constraints of the direction-search hyper-parameters both estimators share.
_SEARCH_CONSTRAINTS: dict[str, list[Any] | str] = {
    "tau": [Interval(Real, 0, np.inf, closed="right")],  # inf: no L1 penalty
    "search": [StrOptions(set(SEARCHES))],
    "start": [StrOptions(set(STARTS))],
    "search_range": [Interval(Real, 0, np.inf, closed="neither")],
    "coarse_step": [Interval(Real, 0, np.inf, closed="neither")],
    "fine_step": [Interval(Real, 0, np.inf, closed="neither")],
    "max_iter": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "standardize": ["boolean"],
    "spread_tails": ["boolean"],
    "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
    "engine": "no_validation",
    "progress": ["boolean", None],
}


class _ProjectionPursuit(StreamEstimator):
    """Search settings, validation, engines and model files shared by both estimators."""

    _fitted_attribute = "projections_"
    partial_fit = NotOnline("each term's direction search takes several passes over all rows")

    tau: float
    search: str
    start: str
    search_range: float
    coarse_step: float
    fine_step: float
    max_iter: int | str
    chunk_rows: int | None
    engine: Any
    progress: bool | None

    _ARRAYS: tuple[str, ...] = ()

    def _check_params(self) -> None:
        if not self.coarse_step <= self.search_range:
            raise ValueError("coarse_step must lie in (0, search_range], got "
                             f"{self.coarse_step!r}")
        if not self.fine_step <= self.coarse_step:
            raise ValueError(f"fine_step must lie in (0, coarse_step], got {self.fine_step!r}")

    def _search_config(self) -> SearchConfig:
        max_iter = "auto" if self.max_iter == "auto" else int(self.max_iter)
        return SearchConfig(float(self.tau), self.search, self.start, float(self.search_range),
                            float(self.coarse_step), float(self.fine_step), max_iter)

    def _warn_unconverged(self, unconverged: tuple[int, ...], what: str) -> None:
        """One ``ConvergenceWarning`` naming the terms whose search hit ``max_iter``."""
        if not unconverged:
            return
        shown = ", ".join(str(k + 1) for k in unconverged[:10])
        more = f" and {len(unconverged) - 10} more" if len(unconverged) > 10 else ""
        rounds = "sweeps" if self.search == "sequential" else "rounds"
        if self.max_iter == "auto":
            cap = search_rounds("auto", self.search, self.projections_.shape[1])
            setting = f"{cap} {rounds} (max_iter='auto')"
            advice = "give max_iter a larger number"
        else:
            setting, advice = f"max_iter={self.max_iter} {rounds}", "increase max_iter"
        warnings.warn(f"{type(self).__name__}: the direction search of {what} {shown}{more} "
                      f"stopped at {setting} while still lowering its cost; {advice} (or "
                      "coarse_step) for converged directions",
                      ConvergenceWarning, stacklevel=caller_stacklevel())

    @property
    def n_nonzero_(self) -> np.ndarray:
        """Non-zero entries of each term's direction, shape (n_terms,)."""
        self._check_fitted()
        return np.count_nonzero(self.projections_, axis=1)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Each feature's share of what the terms respond to, shape (n_features,), summing
        to 1 (0 for a feature no term uses).

        ``sum_t s_t |a_tf| sigma_f / (hi_t - lo_t)``: moving feature ``f`` by one standard
        deviation ``sigma_f`` (of the training rows) moves term ``t``'s projection by
        ``|a_tf| sigma_f``, a share of the projection's range ``ranges_[t]``; ``s_t`` is the
        spread of the term's ridge function over that range (the range of its spline
        coefficients, or the learner weight times the range of its table), so a term that
        barely varies counts little. Units do not matter.
        """
        self._check_fitted()
        sigma = getattr(self, "feature_std_", None)
        sigma = (np.ones(self.projections_.shape[1]) if sigma is None
                 else np.asarray(sigma))
        width = self.ranges_[:, 1] - self.ranges_[:, 0]
        share = np.where(width > 0, self._term_spreads() / np.where(width > 0, width, 1.0), 0.0)
        # a missing value's indicator column counts for its feature
        weights = self._importances_per_column(
            share @ (np.abs(self.projections_) * sigma[None, :]))
        total = weights.sum()
        return weights / total if total > 0 else weights

    def _term_spreads(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def selected_features_(self) -> np.ndarray:
        """Indices of the features any term uses (a feature whose missing-value indicator
        a term uses among them)."""
        self._check_fitted()
        return self._given_columns(np.flatnonzero(np.any(self.projections_ != 0, axis=0)))

    def _features(self, X: Any) -> np.ndarray:
        """Checked rows as the fit read them: through ``feature_transform_``."""
        values = self._check_X(X)
        transform = getattr(self, "feature_transform_", None)
        return values if transform is None else transform.apply(values)

    def _json_params(self) -> dict[str, Any]:
        params = super()._json_params()
        if self.tau is not None and math.isinf(float(self.tau)):
            params["tau"] = "inf"
        return params


# -- regression --------------------------------------------------------------------------------
class SparsePPRRegressor(RegressorScore, _ProjectionPursuit):
    """Sparse projection pursuit regression (SpPPR, paper 001 Table 3), trained by streaming.

    ``y ~ b + sum_k f_k(u_k . x)`` with each ``f_k`` a penalised cubic B-spline of the
    projection ``u_k . x``; term ``k`` is fitted to the residuals of the terms before it.

    Parameters
    ----------
    n_terms : int or "auto"
        Ridge functions. ``"auto"``: forward stagewise up to 10, stopping at the first
        term that lowers the residual sum of squares by less than 1 % or does not lower
        Akaike's criterion with ``n_bases`` plus its direction's non-zero entries as its
        parameters (:func:`~streamlearn.solvers.projection_pursuit.term_pays`); that term
        is dropped. ``n_iter_`` is the count kept.
    tau : float
        Strength of the L1 penalty on the directions, ``lam = sum_i w_i r_i^2 / tau`` with
        ``r`` the residuals before the term (Table 3, eq. 6); ``inf`` gives plain PPR.
    n_bases : int
        B-spline bases of each ridge function.
    smoothing : float
        Weight of the second-order difference penalty of the spline coefficients, in the
        units of the residual sum of squares of rows of weight 1. Weights that sum to less
        than the rows of positive weight are read as the rows' shares (the penalty scales
        with them), so multiplying them all by a constant changes nothing; otherwise a
        row of weight ``k`` counts as ``k`` rows (see Notes).
    degree : {1, 2, 3}
        Spline degree.
    search : {"informative_first", "sequential"}
        Direction search: paper 001's "informative feature first" (Table 2: each round moves
        the one coordinate that lowers the cost most), or the cyclic 1-D search over every
        coordinate of KLBoosting that the paper compares against.
    start : {"pairs", "coordinate", "weighted"}
        Start of the search: the lowest-cost of the single coordinates and the signed
        coordinate pairs ``(e_i +- e_j) / sqrt 2`` (all costed by one scan; the pairs only
        with at most 64 features, as their number grows with its square), the paper's best
        single coordinate, or KLBoosting's sum of the coordinates weighted by how much each
        lowers the cost alone (here: the residual sum of squares; one more scan). From a single
        coordinate a direction such as ``x1 - x2``, which neither feature explains alone, is
        rarely reached; from the weighted start every coordinate begins non-zero.
    search_range, coarse_step, fine_step : float
        ``H``, ``dH``, ``dh`` of the search (Table 2).
    max_iter : int or "auto"
        Rounds (``"informative_first"``) or sweeps (``"sequential"``) of a search at most.
        A round moves one coordinate of the direction, so a direction over ``k`` features
        takes at least ``k - 1`` rounds from a single coordinate. ``"auto"``: twice the
        features, at least 20 rounds (20 sweeps for ``"sequential"``, each of which moves
        every coordinate; :func:`~streamlearn.solvers.projection_pursuit.search_rounds`).
    backfit : bool
        After the forward stagewise terms, whose L1 term selects the features, fit the
        terms again on those features without it (with a finite ``tau``; as the relaxed
        lasso refits a lasso's selection): forward stagewise from the first, as many
        terms as were kept, by the same search restricted to the chosen features (a
        refitted direction may drop one, never add one). Then refit each term in turn to
        the residuals of the others, its direction without the L1 term over the features
        the terms chose (they stay the model's), as projection pursuit regression
        backfits, until a round moves
        no direction or lowers the residual sum of squares by at most 1e-4 of the total
        sum of squares about the weighted mean (a gain of ``R^2`` of 1e-4; a round that
        raises it also ends: the penalised splines refitted in turn may trade residual for
        smoothness), at most 10 rounds, else ``ConvergenceWarning``
        (:func:`~streamlearn.solvers.projection_pursuit.backfit_converged`). The tolerance
        is a share of the total, not of the residual left, so a noise-free target fitted to
        ``R^2 = 1 - 1e-6`` has converged.
        The L1 term of the search selects the features, and also pulls a direction toward
        the axes (a pair direction costs ``sqrt 2`` times a coordinate); the refit undoes
        that pull, which backfitting from the penalised terms left in poor joint optima
        (two near-coordinate directions), and backfitting the stagewise fit's order. On
        the paper's toy (noise sd 0.5 and 0.1, ``tau=5``) they lower the test MSE by a
        quarter to a half, the features selected unchanged (``bench/projection_pursuit.py``).
        ``lambdas_`` are then the selecting search's and ``train_sse_`` the refitted
        terms'. False fits Table 3 as written.
    standardize : bool
        Search over the features standardised by the training rows' weighted mean and
        standard deviation (a constant feature keeps the scale 1), so that the L1 term, the
        unit directions and the search's steps do not depend on the features' units; the
        directions are then reported over the raw features, scaled to unit length (the
        sparsity pattern is the same). False searches the raw features, as paper 001 does.
    spread_tails : bool
        With ``standardize``, map a crowded feature (a heavy tail, far outliers) by
        ``asinh((x - c) / s)`` before the standardisation, as the super-sparse machines
        do (:class:`~streamlearn.features.tail_transform.TailTransform`'s rule, kept when
        the feature's standard deviation is above 3 times its robust spread,
        :func:`~streamlearn.features.tail_transform.squeezing_tails`), from a sample of
        8,192 rows the moments pass draws: standardised as it is, a few outliers at 1e5
        squeeze every other row of their feature onto one point of each projection's
        range. One more pass when a feature is mapped (``feature_transform_``); the
        directions are then over the mapped features. Without ``standardize`` the features
        are searched as they are. (These models take dense rows only.)
    chunk_rows : int, optional
        Rows per chunk when this estimator opens the data or makes the engine.
    engine : engine, optional
        Runs the passes; a ``LocalEngine`` by default.
    progress : bool, optional
        Progress bars of the default engine.

    Attributes
    ----------
    intercept_ : float
        Weighted mean of the target.
    projections_ : ndarray of shape (n_terms, n_features)
        Unit direction ``u_k`` of each term (exact zeros for unused features), over the
        features as ``feature_transform_`` maps them.
    feature_std_ : ndarray of shape (n_features,)
        Weighted standard deviation of each training feature (1 if constant; of the
        mapped feature where ``feature_transform_`` maps it), for ``feature_importances_``.
    feature_transform_ : TailTransform
        ``spread_tails``: the crowded features mapped before the standardisation (absent
        when none was); every method maps the rows it is given by it first.
    ranges_ : ndarray of shape (n_terms, 2)
        Interval of the projected values each spline spans (values outside are clamped).
    spline_coef_ : ndarray of shape (n_terms, n_bases)
    lambdas_ : ndarray of shape (n_terms,)
        L1 weight used by each term's search.
    train_sse_ : ndarray of shape (n_terms,)
        Weighted residual sum of squares on the training rows after each term of the
        forward stagewise fit (with ``backfit`` and a finite ``tau``, of the terms fitted
        again on the chosen features); with ``backfit``, the last entry is the returned
        model's.
    n_nonzero_ : ndarray of shape (n_terms,)
    n_iter_ : int
        Forward stagewise iterations run: the number of terms fitted.
    n_scans_ : int
        Scans (passes) the searches (and the refit and backfitting) took.
    n_backfit_rounds_ : int
        Rounds of backfitting run (0 with ``backfit=False`` or one term).
    n_train_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        The feature names seen in ``fit``; only when its data named its columns (a
        table, a file), as in scikit-learn: an array's columns are read by position.
    missing_values_ : MissingValues
        With ``fit(..., nan_policy="impute")``: each column's fill value and the columns
        given a missing-value indicator, read after the given columns (absent otherwise;
        :mod:`streamlearn.features.missing_values`).

    Warns
    -----
    ConvergenceWarning
        When the direction search of a term stops at ``max_iter`` rounds while still
        lowering its cost, or backfitting stops at its cap of 10 rounds before a round
        met its rule (see ``backfit``).

    Notes
    -----
    There is no ``partial_fit``: every term's direction search needs several passes over all
    the rows. To train on data larger than memory, pass ``fit`` a streamed
    :class:`~streamlearn.data.Dataset` (:func:`~streamlearn.data.open_dataset`); it reads one
    chunk at a time. Sample weights count rows: the fit counts ``max(W, n+)`` rows, ``W``
    the sum of the weights and ``n+`` the rows of positive weight, so an integer weight
    acts exactly as repeated rows (a row of weight 0 as no row), and weights summing to
    less than ``n+`` (shares such as ``1 / n``) are scaled to sum to ``n+``, which makes
    the fit the same for the weights times any constant that keeps their sum at most
    ``n+``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(2000, 4)).astype(np.float32)
    >>> y = X[:, 0] * X[:, 1]
    >>> model = SparsePPRRegressor(n_terms=2, tau=15).fit(X, y)
    >>> model.score(X, y) > 0.95
    True
    """

    _ARRAYS = ("projections", "ranges", "spline_coef", "lambdas", "train_sse")

    _task = "regression"
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        **_SEARCH_CONSTRAINTS,
        "n_terms": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_bases": [Interval(Integral, PENALTY_ORDER + 1, None, closed="left")],
        "smoothing": [Interval(Real, 0, np.inf, closed="left")],
        "degree": [Interval(Integral, 1, 3, closed="both")],
        "backfit": ["boolean"],
    }

    def __init__(self, n_terms: int | str = "auto", tau: float = 15.0, n_bases: int = 8,
                 smoothing: float = 10.0, degree: int = 3,
                 search: str = "informative_first", start: str = "pairs",
                 search_range: float = 1.0, coarse_step: float = 0.1, fine_step: float = 0.01,
                 max_iter: int | str = "auto", backfit: bool = True, standardize: bool = True,
                 spread_tails: bool = True, chunk_rows: int | None = None,
                 engine: Any = None, progress: bool | None = None) -> None:
        self.n_terms = n_terms
        self.tau = tau
        self.n_bases = n_bases
        self.smoothing = smoothing
        self.degree = degree
        self.search = search
        self.start = start
        self.search_range = search_range
        self.coarse_step = coarse_step
        self.fine_step = fine_step
        self.max_iter = max_iter
        self.backfit = backfit
        self.standardize = standardize
        self.spread_tails = spread_tails
        self.chunk_rows = chunk_rows
        self.engine = engine
        self.progress = progress

    def _check_params(self) -> None:
        least = max(self.degree + 1, PENALTY_ORDER + 1)
        if self.n_bases < least:
            raise ValueError(f"n_bases must be an integer >= {least}, got {self.n_bases!r}")
        super()._check_params()

    def _terms(self) -> RidgeTerms:
        return RidgeTerms(float(self.intercept_), self.projections_,
                          np.ascontiguousarray(self.ranges_[:, 0]),
                          np.ascontiguousarray(self.ranges_[:, 1]), self.spline_coef_,
                          int(self.degree))

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto", engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SparsePPRRegressor:
        """Fit ``n_terms`` ridge functions by streaming over the data.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Target of in-memory ``data`` or the target column name.
        sample_weight : array-like or str, optional
            Non-negative row weights (values or a column name).
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
            Directory where progress is saved; a killed fit run again resumes from it.
        checkpoint_every : int
            Chunks between two checkpoint writes.

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def _run_driver(self, runner: Any, dataset: Dataset, seed: int) -> RidgeFit:
        n_terms = "auto" if self.n_terms == "auto" else int(self.n_terms)
        config = RidgeConfig(self._search_config(), n_terms, int(self.n_bases),
                             float(self.smoothing), int(self.degree), bool(self.standardize),
                             bool(self.backfit), bool(self.spread_tails))
        return fit_sparse_ppr(runner, dataset, config, seed)

    def _set_fitted(self, fitted: RidgeFit) -> None:
        self.intercept_ = fitted.intercept
        self.ranges_ = fitted.ranges
        self.spline_coef_ = fitted.spline_coef
        self.lambdas_ = fitted.lambdas
        self.train_sse_ = fitted.train_sse
        self.n_scans_ = fitted.n_scans
        self.n_iter_ = int(fitted.projections.shape[0])
        self.n_train_ = fitted.n_train
        self.projections_ = fitted.projections
        self.feature_std_ = fitted.feature_std
        self._keep("feature_transform_", fitted.feature_transform)
        self._warn_unconverged(fitted.unconverged, "term")
        self.n_backfit_rounds_ = int(fitted.backfit_rounds)
        if not fitted.backfit_converged:
            warnings.warn(f"SparsePPRRegressor: backfitting stopped after "
                          f"{fitted.backfit_rounds} rounds while its last round still moved "
                          "a direction and lowered the residual sum of squares by more than "
                          f"{BACKFIT_TOL:g} of the total sum of squares; the model is the "
                          "last round's", ConvergenceWarning, stacklevel=caller_stacklevel())

    def _term_spreads(self) -> np.ndarray:
        """Range of each term's spline coefficients (it bounds the ridge function's)."""
        return np.ptp(self.spline_coef_, axis=1)

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``b + sum_k f_k(u_k . x)``.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,), float64
        """
        values = self._features(X)
        t = self._terms()
        return ridge_predict_chunk(values, t.intercept, t.proj, t.lo, t.hi, t.coef, t.degree)

    def staged_predict(self, X: Any) -> np.ndarray:
        """Predictions of the first ``1, 2, ..., n_terms`` terms, shape (n_terms, n)."""
        values = self._features(X)
        t = self._terms()
        out = np.empty((t.proj.shape[0], values.shape[0]))
        for k in range(t.proj.shape[0]):
            out[k] = ridge_predict_chunk(values, 0.0 if k else t.intercept, t.proj[k:k + 1],
                                         t.lo[k:k + 1], t.hi[k:k + 1], t.coef[k:k + 1],
                                         t.degree)
        return np.cumsum(out, axis=0)


# -- classification ----------------------------------------------------------------------------
class SparseJSBoostClassifier(ClassifierScore, _ProjectionPursuit):
    """Sparse Jensen-Shannon boosting (SpJSBoost, paper 001 Table 6), trained by streaming.

    Binary classifier ``sign F(x)``, ``F(x) = sum_k 1/2 log(h+_k(u_k . x) / h-_k(u_k . x))``:
    each round picks the direction whose weighted class histograms differ most (Jensen-Shannon
    divergence, eq. 13) under an L1 penalty, and adds the half log-ratio of its histograms.
    The weight of row ``i`` in round ``k`` is ``s_i exp(-y_i F_{k-1}(x_i)) / (class mass)``.

    Parameters
    ----------
    n_rounds : int or "auto"
        Weak learners. ``"auto"``: hold out ``validation_fraction`` of the rows (by a hash
        of the row id), leave them out of the histograms, score the model on them in the
        first scan of every round (their mean log-loss at temperature 1), stop after
        ``max(10, T / 4)`` rounds without a lower held-out loss (``T`` the rounds of the
        lowest so far) or at 100, and keep the rounds of the lowest (``validation_``). A
        loss is lower only by more than 0.1 % of the lowest so far or 1e-4 of the loss
        before the first round, whichever is more: on separable data the loss keeps
        falling towards 0 by amounts that change no prediction.
        With fewer than 200 rows expected in that share, or fewer than 50 of either class
        (its share of the sample weight, before the class factors of a dataset's
        :meth:`~streamlearn.data.Dataset.with_class_weight`, times those rows; the
        held-out loss of a class of 2 % then rests on a handful of its rows, and stopped
        the rounds before the model predicted it), 50 rounds on every row.
    tau : float
        Strength of the L1 penalty, ``lam = SJS(u^(0)) / tau`` (eq. 6); ``inf`` gives JSBoost.
    n_bins : int
        Uniform bins of each projection's histogram.
    smoothing : float
        ``eps = smoothing / n_bins`` is added to the normalised bin masses ``h+, h-`` of a weak
        learner, which bounds its output where a bin holds one class only.
    search, start, search_range, coarse_step, fine_step, max_iter, standardize, spread_tails
        The direction search, see :class:`SparsePPRRegressor`. The weights of
        ``start="weighted"`` are the divergences of the single coordinates, so
        ``search="sequential", start="weighted", tau=inf`` is KLBoosting's feature search
        (paper 001 ref. [17]), the one the paper contrasts its own with.
    validation_fraction : float or None
        Share of the rows ``n_rounds="auto"`` holds out; None trains on every row
        (``n_rounds="auto"`` then runs 50 rounds).
    chunk_rows : int, optional
    engine : engine, optional
    progress : bool, optional

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Sorted labels; the positive class is ``classes_[1]``.
    projections_ : ndarray of shape (n_rounds, n_features)
        Over the features as ``feature_transform_`` maps them.
    feature_std_ : ndarray of shape (n_features,)
        Weighted standard deviation of each training feature (1 if constant; of the
        mapped feature where ``feature_transform_`` maps it), for ``feature_importances_``.
    feature_transform_ : TailTransform
        ``spread_tails``: the crowded features mapped before the standardisation (absent
        when none was); every method maps the rows it is given by it first.
    ranges_ : ndarray of shape (n_rounds, 2)
        Interval of each learner's bins (values outside go to the end bins).
    tables_ : ndarray of shape (n_rounds, n_bins)
        Output of each weak learner per bin.
    learner_weights_ : ndarray of shape (n_rounds,)
        Mean absolute output of each learner under its round's weights,
        ``sum_b (h+_b + h-_b) |f_b|`` (the ``w_j`` of eq. 14).
    divergences_ : ndarray of shape (n_rounds,)
        Jensen-Shannon divergence of each chosen direction.
    lambdas_ : ndarray of shape (n_rounds,)
    class_weight_ : ndarray of shape (2,)
        Initial row weight of each class.
    intercept_ : float
        ``1/2 log(W+ / W-)`` of the class masses ``W``: the learners are fitted to
        class-balanced weights (Table 6), so their sum is a balanced half log-odds; the
        intercept adds the classes' prior (0 for balanced classes).
    n_nonzero_ : ndarray of shape (n_rounds,)
    n_iter_ : int
        Boosting rounds kept: the number of weak learners.
    proba_scale_ : float
        The temperature of :meth:`predict_proba`: of lowest log-loss on the held-out rows
        of ``n_rounds="auto"`` (one pass after the rounds). With no rows held out and
        fewer than 2,000 rows, of lowest log-loss against Platt's smoothed targets on
        out-of-fold scores: the rows split into three folds by a hash of their feature
        values (copies of a row in one fold), the model's rounds boosted again on each two
        folds with its settings, and each scoring the third (three more fits, about four
        times the fit's time; the learners and decisions are those of the one model on
        every row). On 2,000 rows or more, on the training rows against those targets and
        then at most 1 (the rounds widen the margins of the rows they are fitted to).
    proba_rows_ : {"held-out", "out-of-fold", "training"}
        The rows ``proba_scale_`` was chosen on.
    validation_ : dict or None
        ``n_rounds="auto"`` with held-out rows: ``held_out_loss`` after rounds ``0, 1,
        ...`` (the rounds run past the kept ones included), ``best_round`` and ``capped``;
        None otherwise.
    n_scans_, n_train_, n_features_in_, feature_names_in_

    Warns
    -----
    ConvergenceWarning
        When the direction search of a round stops at ``max_iter`` rounds while still
        lowering its cost, or ``n_rounds="auto"`` reaches 100 rounds while the held-out
        loss is still at its lowest.

    Notes
    -----
    There is no ``partial_fit``: every round's direction search needs several passes over all
    the rows. To train on data larger than memory, pass ``fit`` a streamed
    :class:`~streamlearn.data.Dataset` (:func:`~streamlearn.data.open_dataset`); it reads one
    chunk at a time. Sample weights act exactly as repeated rows.
    """

    _two_classes_only = True

    _ARRAYS = ("classes", "projections", "ranges", "tables", "learner_weights", "divergences",
               "lambdas", "class_weight")

    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        **_SEARCH_CONSTRAINTS,
        "n_rounds": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "smoothing": [Interval(Real, 0, np.inf, closed="neither")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(self, n_rounds: int | str = "auto", tau: float = 15.0, n_bins: int = 16,
                 smoothing: float = 1.0, search: str = "informative_first",
                 start: str = "pairs", search_range: float = 1.0, coarse_step: float = 0.1,
                 fine_step: float = 0.01, max_iter: int | str = "auto", standardize: bool = True,
                 spread_tails: bool = True, validation_fraction: float | None = 0.1,
                 chunk_rows: int | None = None, engine: Any = None,
                 progress: bool | None = None) -> None:
        self.n_rounds = n_rounds
        self.validation_fraction = validation_fraction
        self.tau = tau
        self.n_bins = n_bins
        self.smoothing = smoothing
        self.search = search
        self.start = start
        self.search_range = search_range
        self.coarse_step = coarse_step
        self.fine_step = fine_step
        self.max_iter = max_iter
        self.standardize = standardize
        self.spread_tails = spread_tails
        self.chunk_rows = chunk_rows
        self.engine = engine
        self.progress = progress

    def _terms(self) -> BoostedTerms:
        return BoostedTerms(self.projections_, np.ascontiguousarray(self.ranges_[:, 0]),
                            np.ascontiguousarray(self.ranges_[:, 1]), self.tables_,
                            self.class_weight_)

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto", engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SparseJSBoostClassifier:
        """Boost ``n_rounds`` projection learners by streaming over the data.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Two-class labels of in-memory ``data``, or the target column name.
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
        checkpoint : str or path-like, optional
            Directory where progress is saved; a killed fit run again resumes from it.
        checkpoint_every : int

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def _run_driver(self, runner: Any, dataset: Dataset, seed: int) -> BoostFit:
        classes = dataset.classes
        assert classes is not None
        if len(classes) != 2:
            raise LabelError(f"Only binary classification is supported. "
                             f"SparseJSBoostClassifier is a two-class classifier; the target "
                             f"has {len(classes)} classes: {classes.tolist()[:10]}")
        n_rounds = "auto" if self.n_rounds == "auto" else int(self.n_rounds)
        config = BoostConfig(self._search_config(), n_rounds, int(self.n_bins),
                             float(self.smoothing), bool(self.standardize),
                             None if self.validation_fraction is None
                             else float(self.validation_fraction), bool(self.spread_tails))
        return fit_sparse_jsboost(runner, dataset, config, seed)

    def _set_fitted(self, fitted: BoostFit) -> None:
        self.class_weight_ = fitted.class_weight
        self.intercept_ = fitted.intercept
        self.ranges_ = fitted.ranges
        self.tables_ = fitted.tables
        self.learner_weights_ = fitted.learner_weights
        self.divergences_ = fitted.divergences
        self.lambdas_ = fitted.lambdas
        self.n_scans_ = fitted.n_scans
        self.n_iter_ = int(fitted.projections.shape[0])
        self.n_train_ = fitted.n_train
        self.projections_ = fitted.projections
        self.feature_std_ = fitted.feature_std
        self._keep("feature_transform_", fitted.feature_transform)
        self.validation_ = fitted.validation
        self._keep("proba_scale_", fitted.proba_scale)
        self._keep("proba_rows_", fitted.proba_rows)
        self._warn_unconverged(fitted.unconverged, "round")
        if fitted.validation is not None and fitted.validation["capped"]:
            warnings.warn(f"SparseJSBoostClassifier: n_rounds='auto' stopped at its cap of "
                          f"{AUTO_MAX_ROUNDS} rounds while the held-out loss was still "
                          "falling; give n_rounds a number to run more",
                          ConvergenceWarning, stacklevel=caller_stacklevel())

    def _term_spreads(self) -> np.ndarray:
        """Each round's learner weight times the range of its table."""
        return np.abs(self.learner_weights_) * np.ptp(self.tables_, axis=1)

    @over_dask_blocks
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``intercept_ + F(x)``; positive means ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,), float64
        """
        values = self._features(X)
        t = self._terms()
        return self.intercept_ + table_predict_chunk(values, t.proj, t.lo, t.hi, t.table)

    def staged_decision_function(self, X: Any) -> np.ndarray:
        """Scores with the first ``1, 2, ..., n_rounds`` learners, shape (n_rounds, n)."""
        values = self._features(X)
        t = self._terms()
        out = np.empty((t.proj.shape[0], values.shape[0]))
        for k in range(t.proj.shape[0]):
            out[k] = table_predict_chunk(values, t.proj[k:k + 1], t.lo[k:k + 1],
                                         t.hi[k:k + 1], t.table[k:k + 1])
        return self.intercept_ + np.cumsum(out, axis=0)

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels (``classes_[1]`` where the score is positive).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.int64)]

    @over_dask_blocks
    def predict_proba(self, X: Any) -> np.ndarray:
        """``P(classes_[1] | x) = 1 / (1 + exp(-2 t s(x)))``, ``s`` the score: the logistic
        link of the exponential loss, at the temperature ``t = proba_scale_`` chosen by
        ``fit`` on the held-out rows of ``n_rounds="auto"``, else on out-of-fold scores
        under 2,000 rows, else on the training rows and then at most 1 (``proba_rows_``;
        1 on a model stored without it). ``t`` keeps every decision.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, 2)
        """
        scale = float(getattr(self, "proba_scale_", 1.0))
        return temperature_proba(2.0 * self.decision_function(X), scale)
