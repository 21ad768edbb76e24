"""``StreamSearchCV``: hyper-parameters tuned inside the stream, by successive halving.

A grid search the scikit-learn way (:class:`~sklearn.model_selection.GridSearchCV`) fits
every candidate on every fold: it reads the data ``n_candidates x cv x epochs`` times. Here
the candidates are *lanes* of the same passes: every chunk is read once and handed to each
candidate still in the race (its ``partial_fit``), rows of a fixed held-out set of blocks are
kept aside for scoring, and at the end of each *rung* the worse candidates are dropped
(successive halving, Jamieson and Talwalkar, 2016; Li et al., 2018). The winner is then
trained on all rows by its own ``fit``.

The schedule, in rows seen by each surviving candidate (its *resource*):

- ``R = ceil(log_factor(n_candidates))`` halvings, rung ``r = 0 .. R`` ends when the
  survivors have seen ``b_r = b_0 * factor**r`` training rows;
- ``b_R = max(epochs * n_train, b_0 * factor**R)`` and
  ``b_0 = max(b_R / factor**R, min(n_train, min_resource))``: on large data the whole race
  fits in ``epochs`` passes (candidates are dropped inside the pass); on small data the first
  rung still sees ``min_resource`` rows (or every training row) and the race takes more
  passes over the (cheap) data;
- after rung ``r``, ``ceil(n_alive / factor)`` candidates with the best held-out score go on.

The last rung can be judged by ``fit`` instead (``final_rung="fit"``, chosen by ``"auto"``
for a model whose ``partial_fit`` does not train the model its ``fit`` would, such as
:class:`~streamlearn.models.MixtureSVC`, which initialises from its first call's rows and
starts every call's dual variables at zero): the race then ends as soon as at most
``factor`` candidates are left, and each of these finalists is trained by its own ``fit``
on the training rows (the held-out blocks left out, :meth:`~streamlearn.data.Dataset.
without_blocks`) and scored on the held-out rows. A part-trained lane ranks settings by how
they train *as lanes*; the finalists are ranked as the user will get them.

A lane also trains what ``fit`` would only when its ``partial_fit`` can learn everything
``fit`` learns. :class:`~streamlearn.models.AdditiveSVC`'s ``fit`` screens feature pairs
(``interactions``) in a streamed pass of its own, which a lane cannot: such a model asks
for a *lane template* (``_lanes_need_template``), the estimator as given (but for its
``_lane_template_params``: for ``AdditiveSVC`` the first count of bases and pair grid that
``"auto"`` tries, and PEGASOS at ``tol`` 0.01) trained once by ``fit`` on the training
rows (at most ``TEMPLATE_ROWS``, whole blocks drawn at random), and
each lane then trains the pairs the template screened (and kept) beside its curves. Without
them the lanes rank settings as the model without pairs would (on letter they preferred 20
bases per feature to 10, where ``fit`` with pairs tests at 6.55 against 5.65 %). The
multiclass scheme of ``AdditiveSVC(multiclass="auto")`` with 3 to 7 classes is another such
choice: the template's ``fit`` keeps one, and the lanes train it (``partial_fit`` alone would
train one-vs-rest, and the race rank models of another scheme than the refit's).

Held-out rows are whole blocks of consecutive rows, drawn at random once: about
``validation_fraction`` of the rows, at most ``max_validation_rows``. They are read once,
kept in memory for scoring, and skipped by the training passes. On stored data a block is
chunk-sized (a read of a stored chunk costs the same for one row as for all of them). On
data held in memory (arrays, tables: :attr:`~streamlearn.data.Dataset.in_memory`), where a
read of a few rows is a slice, the blocks are small (at least ``MEMORY_HELD_OUT_BLOCKS`` of
them) and one is drawn from each of as many equal spans of the rows, so that rows sorted
or grouped by label or by time still give held-out rows from every part of the data. A
class of the training rows that has no held-out row is named by a warning: the race then
ranks the settings on the other classes only.
"""

from __future__ import annotations

import copy
import inspect
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.metaestimators import available_if

from streamlearn.data import Chunk, Dataset
from streamlearn.data.sparse_rows import SparseRows, take_rows
from streamlearn.engine.accounting import recording
from streamlearn.engine.interrupts import interrupts_noted
from streamlearn.engine.local import resolve_engine
from streamlearn.engine.missing_counts import MissingValuesPass
from streamlearn.errors import MissingValueError
from streamlearn.features.missing_values import categorical_columns
from streamlearn.models.base import (
    classification_dataset,
    record_categories,
    record_feature_names,
    regression_dataset,
    resolve_nan_policy,
    retries_reading_gaps,
    warn_of_gaps_found,
)
from streamlearn.models.class_weight import balanced_factors
from streamlearn.models.racing import CLAMPED_SHARE_WARNING, finish_lane, racing
from streamlearn.warning_origin import library_rows

#: Rows the first rung gives each candidate at least (or every training row, when fewer).
MIN_RESOURCE = 10_000
#: Largest slice of a chunk handed to ``partial_fit`` at once (rungs end between slices).
SLICE_ROWS = 4_096
#: Training rows the lane template is fitted on at most (whole blocks drawn at random).
TEMPLATE_ROWS = 100_000
#: Held-out blocks drawn at least from data held in memory, one from each of as many equal
#: spans of its rows (fewer only when there are fewer held-out rows than this).
MEMORY_HELD_OUT_BLOCKS = 200


class HasPartialFit(HasMethods):
    """``partial_fit`` on the estimator's class: a model may offer it on an instance only
    once fitted (``AdditiveSVC(interactions=k)``), and a search trains its lanes from the
    lane template's pairs."""

    def __init__(self) -> None:
        super().__init__(["partial_fit"])

    def is_satisfied_by(self, val: Any) -> bool:
        return callable(getattr(type(val), "partial_fit", None))


def _best_has(name: str) -> Any:
    def check(self: StreamSearchCV) -> bool:
        estimator = getattr(self, "best_estimator_", self.estimator)
        return hasattr(estimator, name)
    return check


@dataclass
class Race:
    """The state of a search: candidates in training, the rung reached, the scores so far.

    Attributes
    ----------
    candidates : list of estimators
        One per parameter setting (dropped ones keep the model they had).
    alive : list of int
        Indices of the candidates still trained.
    seen : int
        Training rows each alive candidate has seen.
    rung : int
        Current rung.
    scores : list of dict
        Per rung: candidate index -> held-out score at the rung's end.
    resources : list of int
        Rows seen by the survivors at the end of each rung so far.
    started : bool
        Whether the candidates have had their first ``partial_fit`` (which names the classes).
    trained_classes : ndarray of bool, optional
        Per class code, whether a training row of that class was handed to the candidates
        (None for a regression).
    failing : dict
        Candidate index -> error of the candidates whose training raised since the last
        rung's end (out of ``alive``; they get ``error_score`` at the rung's end).
    failed : dict
        Candidate index -> (rung, error) of the candidates that raised, at that rung.
    clamped : dict
        Feature name -> [values the lanes clamped to their feature maps' ranges, rows]
        (:func:`~streamlearn.models.racing.record_clamped`).
    """

    candidates: list[Any]
    alive: list[int]
    seen: int = 0
    rung: int = 0
    scores: list[dict[int, float]] = field(default_factory=list)
    resources: list[int] = field(default_factory=list)
    started: bool = False
    trained_classes: np.ndarray | None = None
    failing: dict[int, str] = field(default_factory=dict)
    failed: dict[int, tuple[int, str]] = field(default_factory=dict)
    clamped: dict[str, list[int]] = field(default_factory=dict)


class Validation:
    """Held-out rows in memory: features, decoded labels, weights."""

    def __init__(self, X: np.ndarray, y: np.ndarray, weight: np.ndarray | None) -> None:
        self.X, self.y, self.weight = X, y, weight

    @property
    def n_rows(self) -> int:
        """Number of held-out rows."""
        return int(self.X.shape[0])


class RacePass:
    """One pass over the training rows: every slice goes to each alive candidate's
    ``partial_fit``; at a rung's end (``halve_in_pass``) the candidates are scored on the
    held-out rows and the worse dropped.

    A sequential pass. On an engine that splits it into lanes (``DaskEngine``), each lane
    trains its own copies and ``merge`` mixes their parameters (weighted mean of the learned
    float arrays, as the engine's parameter mixing does for the built-in solvers); rungs
    then end only between passes.
    """

    kind = "sequential"

    def __init__(self, search: StreamSearchCV, race: Race, dataset: Dataset,
                 held_out: np.ndarray, validation: Validation, budgets: list[int],
                 halve_in_pass: bool) -> None:
        self.search = search
        self.race = race
        self.classes = dataset.classes
        # the first slice goes to the candidates as a table, with its category lists
        self.feature_names = None if dataset.is_sparse else tuple(dataset.feature_names)
        self.categories = {} if dataset.is_sparse else dict(dataset.categories or {})
        self.held_out = held_out
        self.validation = validation
        self.budgets = budgets
        self.halve_in_pass = halve_in_pass
        self.seen_before = race.seen

    def start(self) -> Race:
        return self.race

    def step(self, race: Race, chunk: Chunk) -> Race:
        if race.seen >= self.budgets[-1] or not race.alive:
            return race
        keep = _block_mask(chunk.rows, self.held_out, self.search.block_rows_)
        X = take_rows(chunk.X, np.flatnonzero(keep))
        y = chunk.y[keep] if chunk.y is not None else None
        w = chunk.weight[keep] if chunk.weight is not None else None
        a = 0  # a rung that ends inside a slice: the next rung trains the slice's rest
        while a < X.shape[0]:
            left = self.budgets[-1] - race.seen
            if left <= 0:
                break
            if self.halve_in_pass:
                left = min(left, self.budgets[race.rung] - race.seen)
            b = min(a + SLICE_ROWS, X.shape[0], a + left)
            self._train(race, X.slice(a, b) if isinstance(X, SparseRows) else X[a:b],
                        y[a:b] if y is not None else None, w[a:b] if w is not None else None)
            race.seen += b - a
            if self.halve_in_pass and race.seen >= self.budgets[race.rung]:
                self.search._end_rung(race, self.validation)
            a = b
        return race

    def _train(self, race: Race, X: np.ndarray, codes: np.ndarray | None,
               weight: np.ndarray | None) -> None:
        labels = codes if self.classes is None else self.classes[codes]
        kwargs: dict[str, Any] = {}
        if weight is not None:
            kwargs["sample_weight"] = weight
        first = not race.started
        if first and self.classes is not None:
            kwargs["classes"] = self.classes
        rows = self._table(X) if first and self.categories else X
        if codes is not None and race.trained_classes is not None:
            race.trained_classes[codes] = True
        # chunks of the data's columns, in the lanes' order; summaries only the kept
        # model needs wait for the race's end (racing.finish_lane)
        with library_rows(), racing(race.clamped):
            for i in list(race.alive):
                try:
                    race.candidates[i].partial_fit(rows, labels, **kwargs)
                except Exception as error:
                    if self.search.error_score == "raise":
                        raise
                    race.alive.remove(i)  # its model is left half-trained: out of the race
                    race.failing[i] = _error_text(error)
        race.started = True

    def _table(self, X: np.ndarray) -> pd.DataFrame:
        """Rows of codes as the table they code: the categorical columns as pandas
        categories of the data's lists, so that a candidate's first ``partial_fit`` knows
        them as ``fit`` does (a knot or an indicator column per category)."""
        assert self.feature_names is not None
        columns: dict[str, Any] = {}
        for j, name in enumerate(self.feature_names):
            values = self.categories.get(name)
            if values is None:
                columns[name] = X[:, j]
            else:
                codes = np.where(np.isfinite(X[:, j]) & (X[:, j] < len(values)), X[:, j], -1)
                columns[name] = pd.Categorical.from_codes(codes.astype(np.int64),
                                                          categories=list(values))
        return pd.DataFrame(columns)

    def merge(self, a: Race, b: Race) -> Race:
        da, db = a.seen - self.seen_before, b.seen - self.seen_before
        failing = {**a.failing, **b.failing}  # a candidate that failed in either lane
        merged = Race([clone_fitted(c) for c in a.candidates],
                      [i for i in a.alive if i not in failing],
                      self.seen_before + da + db, a.rung, list(a.scores), list(a.resources),
                      a.started or b.started, _either(a.trained_classes, b.trained_classes),
                      failing, dict(a.failed))
        if da + db == 0 or not (a.started and b.started):
            if b.started and not a.started:
                b.trained_classes, b.failing = merged.trained_classes, failing
                b.alive = [i for i in b.alive if i not in failing]
                return b
            return merged
        for i in merged.alive:
            merged.candidates[i] = mix_parameters(a.candidates[i], b.candidates[i],
                                                  da / (da + db))
        return merged

    def finish(self, race: Race) -> Race:
        return race


def _either(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """Elementwise or of two masks, either of which may be None."""
    if a is None or b is None:
        return a if b is None else b
    return a | b


def clone_fitted(estimator: Any) -> Any:
    """A copy of a fitted estimator that shares nothing mutable with it."""
    import copy

    return copy.deepcopy(estimator)


def mix_parameters(a: Any, b: Any, share_a: float) -> Any:
    """Parameter mixing of two copies of one estimator trained on disjoint rows.

    Every learned float array (attribute ending in ``_``) of the same shape in both becomes
    ``share_a * a + (1 - share_a) * b``; everything else is ``a``'s.
    """
    out = clone_fitted(a)
    for name, value in vars(a).items():
        other = getattr(b, name, None)
        if (name.endswith("_") and isinstance(value, np.ndarray) and value.dtype.kind == "f"
                and isinstance(other, np.ndarray) and other.shape == value.shape):
            setattr(out, name, (share_a * value + (1.0 - share_a) * other).astype(value.dtype))
    return out


def _block_mask(rows: np.ndarray, held_out: np.ndarray, block_rows: int) -> np.ndarray:
    """True for the rows outside the held-out blocks."""
    if held_out.size == 0:
        return np.ones(rows.shape[0], dtype=bool)
    return ~np.isin(rows // block_rows, held_out)


class StreamSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Grid search by successive halving over candidates trained side by side in one stream.

    Each chunk is read once for all candidates (each alive candidate's ``partial_fit`` gets
    it), candidates are scored on a fixed set of held-out blocks, and the worse are dropped
    at the end of every rung; the best setting is then trained on all rows by ``fit``
    (``refit``). See the module docstring for the schedule.

    Parameters
    ----------
    estimator : estimator with ``partial_fit``
        The model to tune (cloned for every candidate).
    param_grid : dict or list of dicts
        Settings to try, as :class:`~sklearn.model_selection.ParameterGrid` takes them.
    epochs : int
        Passes over the training rows the survivor gets at least (the race may take more
        on data smaller than ``min_resource * factor**R`` rows).
    factor : int
        Candidates kept after a rung: ``ceil(n_alive / factor)``; each rung has ``factor``
        times the rows of the one before.
    min_resource : int
        Training rows every candidate sees before the first cut (or all, when fewer).
    validation_fraction : float
        Share of the rows held out for scoring, in whole blocks chosen at random (see
        ``chunk_rows``).
    max_validation_rows : int
        Cap on the held-out rows (they are kept in memory): whole blocks of at most this
        many rows, as many as fit.
    scoring : str, callable or None
        Held-out score, as :func:`sklearn.metrics.check_scoring` takes it; None: the
        estimator's ``score`` (accuracy, R^2).
    refit : bool
        Train the best setting on all rows with ``fit`` (else ``best_estimator_`` is the
        race's survivor, trained by ``partial_fit`` on the training rows, or with
        ``final_rung="fit"`` the best finalist, trained by ``fit`` on them).
    final_rung : {"auto", "partial_fit", "fit"}
        How the last candidates are compared: ``"partial_fit"``, as lanes of the race to
        its last rung; ``"fit"``, once at most ``factor`` are left, each trained by its own
        ``fit`` on the training rows and scored on the held-out rows (``factor`` more fits
        on the training rows, the race itself shorter). ``"auto"``: ``"fit"`` for an
        estimator that declares ``_lanes_train_like_fit = False``, else ``"partial_fit"``.
    random_state : int, optional
        Seeds the held-out blocks and the chunk order.
    engine : engine, optional
        Runs the passes (``LocalEngine`` by default; ``DaskEngine`` splits each pass into
        lanes whose candidates are merged by parameter mixing, and rungs then end between
        passes).
    chunk_rows : int, optional
        Rows per chunk for data opened here. The held-out blocks are of
        ``min(chunk_rows, ceil(n_rows / 20), max_validation_rows)`` rows (``block_rows_``),
        the dataset's ``chunk_rows`` standing in when this is None, so that there are at
        least 20 blocks to choose from. On data held in memory
        (:attr:`~streamlearn.data.Dataset.in_memory`), where a few rows are a slice, also
        of at most ``max(1, floor(h / MEMORY_HELD_OUT_BLOCKS))`` rows, ``h`` the held-out
        rows wanted (``min(validation_fraction * n_rows, max_validation_rows)``): at least
        200 held-out blocks (a row each when ``h`` is under 200), drawn one from each of as
        many equal spans of the rows, so that rows sorted by label still give held-out rows
        of every class that fills a span (at most ``1 / 200`` of the rows). Stored rows
        sorted by label should be shuffled: their blocks are chunks drawn anywhere, and a
        warning names the classes of the training rows that no held-out row holds.
    error_score : "raise" or float
        What a setting whose training (``partial_fit``, or the finalist's ``fit``) or
        held-out scoring raises gets, as with ``GridSearchCV``: ``"raise"`` raises the
        error; a number (NaN by default) is its score at that rung, with a
        :class:`~sklearn.exceptions.FitFailedWarning` that names the setting and the error,
        and it leaves the race (its model is left half-trained). A NaN ranks after every
        number. When every setting fails, ``fit`` raises an error that gives their errors.
        The refit of the best setting raises whatever its ``fit`` raises.

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        Held-out score of the best candidate at the last rung it reached. A NaN score
        ranks after every number, as in scikit-learn's searches (with a ``UserWarning``
        naming the settings); NaN only when every setting scored NaN.
    best_index_ : int
    best_estimator_ : estimator
    cv_results_ : dict of lists
        ``params``, ``param_<name>``, ``mean_test_score`` (score at the last rung the
        candidate reached), ``rank_test_score``, ``iter`` (that rung), ``n_resources``
        (training rows it had seen), and ``scores_by_rung`` (the candidate's score at
        each rung it reached); one entry per candidate in each, so that
        ``pandas.DataFrame(cv_results_)`` is a table, as with scikit-learn's searches.
    rung_scores_ : list of dict
        For each rung, candidate index -> held-out score of the candidates it trained.
    n_candidates_ : list of int
        Candidates trained in each rung.
    n_resources_ : list of int
        Training rows of each survivor at the end of each rung (for a rung of finalists
        trained by ``fit``: the training rows).
    final_rung_ : {"partial_fit", "fit"}
        ``final_rung`` resolved.
    n_rounds_ : int
        Rungs run.
    n_validation_ : int
        Held-out rows.
    block_rows_ : int
        Rows of a held-out block (see ``chunk_rows``).
    lane_template_ : estimator or None
        The estimator as given (but for its ``_lane_template_params(dataset)``), trained by
        ``fit`` on the training rows, whose screened pairs the lanes train (see the module
        docstring); None when the lanes need none.
    search_passes_ : float
        Passes over the data made by the race (rows read / rows of the data, the held-out
        rows' single read included), by the lane template's fit and by the finalists'
        fits; with the reads of a first try that found a missing value, when
        ``nan_policy="auto"`` read the data again under ``"impute"``.
    n_passes_ : float
        ``search_passes_`` plus the refit's passes (its ``n_passes_`` when it records them,
        else its ``n_iter_`` plus 2: a describe and a calibration pass).
    refit_time_, search_time_ : float
        Seconds.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        As ``best_estimator_``'s.

    Examples
    --------
    >>> from streamlearn.data.synthetic import additive_problem
    >>> from streamlearn.models import AdditiveSVC
    >>> X, y = additive_problem(20_000)
    >>> search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [0.01, 1.0, 100.0]})
    >>> search.fit(X, y).best_params_ in [{"C": 0.01}, {"C": 1.0}, {"C": 100.0}]
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "estimator": [HasPartialFit()],
        "param_grid": [dict, list],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "factor": [Interval(Integral, 2, None, closed="left")],
        "min_resource": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "max_validation_rows": [Interval(Integral, 1, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
        "final_rung": [StrOptions({"auto", "partial_fit", "fit"})],
        "random_state": ["random_state"],
        "engine": "no_validation",
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "error_score": [StrOptions({"raise"}), Real],
    }

    def __init__(self, estimator: Any, param_grid: Mapping[str, Sequence[Any]] |
                 Sequence[Mapping[str, Sequence[Any]]], *, epochs: int = 1, factor: int = 2,
                 min_resource: int = MIN_RESOURCE, validation_fraction: float = 0.1,
                 max_validation_rows: int = 20_000, scoring: Any = None, refit: bool = True,
                 final_rung: str = "auto", random_state: int | None = 0, engine: Any = None,
                 chunk_rows: int | None = None, error_score: float | str = np.nan) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.epochs = epochs
        self.factor = factor
        self.min_resource = min_resource
        self.validation_fraction = validation_fraction
        self.max_validation_rows = max_validation_rows
        self.scoring = scoring
        self.refit = refit
        self.final_rung = final_rung
        self.random_state = random_state
        self.engine = engine
        self.chunk_rows = chunk_rows
        self.error_score = error_score

    # -- fitting ------------------------------------------------------------------------------
    @interrupts_noted()  # a Ctrl-C that a finalizer drops stops the next pass
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            **fit_params: Any) -> StreamSearchCV:
        """Race the candidates over ``data`` and train the best on all of it.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Target of in-memory ``data`` or the target column's name.
        sample_weight : array-like or str, optional
        **fit_params
            Passed to the refit's ``fit`` (``nan_policy``, ``checkpoint``, ...), and but for
            ``checkpoint`` and ``checkpoint_every`` to the finalists' fits. Every
            candidate reads the data as ``nan_policy`` says (default ``"auto"``: a search
            that finds a missing value in a file, store or dask collection starts again
            under ``"impute"``, as a model's ``fit`` does).

        Returns
        -------
        self
        """
        self._validate_params()
        settings = list(ParameterGrid(self.param_grid))
        if not settings:
            raise ValueError("param_grid holds no setting to try")
        for setting in settings:  # unknown names and bad values fail before any data is read
            candidate = clone(self.estimator).set_params(**setting)
            if hasattr(candidate, "_parameter_constraints"):
                candidate._validate_params()
        foreign = not getattr(self.estimator, "_fits_datasets", False)
        if foreign:  # fit(dataset) is streamlearn's: another estimator fits arrays only
            self._check_foreign(data, y)
        self.scorer_ = check_scoring(self.estimator, scoring=self.scoring)
        given = fit_params.get("nan_policy", "auto")
        retry = retries_reading_gaps(given, data, fit_params.get("checkpoint"))
        nan_policy = resolve_nan_policy(given, data, y, sample_weight)
        with recording() as first_try:
            try:
                return self._search(data, y, sample_weight, nan_policy, fit_params, settings,
                                    foreign)
            except MissingValueError as exc:
                if not retry:
                    raise
                warn_of_gaps_found(exc)
        # read again, NaN a missing value; the reads of the first try count too
        self._search(data, y, sample_weight, "impute", fit_params, settings, foreign)
        extra = first_try.passes_over(self._training_rows)
        self.search_passes_ += extra
        self.n_passes_ += extra
        return self

    def _search(self, data: Any, y: Any, sample_weight: Any, nan_policy: Any,
                fit_params: dict[str, Any], settings: list[dict[str, Any]],
                foreign: bool) -> StreamSearchCV:
        """:meth:`fit` under a resolved ``nan_policy``: the race, then the refit."""
        started = time.perf_counter()
        opener = classification_dataset if is_classifier(self.estimator) else regression_dataset
        dataset = opener(data, y, sample_weight, self.chunk_rows, nan_policy=nan_policy,
                         accept_sparse=True)
        self._training_rows = dataset.n_rows
        if dataset.is_sparse and not get_tags(self.estimator).input_tags.sparse:
            raise TypeError(f"{type(self.estimator).__name__} with these settings does not "
                            "train on sparse (CSR) rows, which this data holds")
        if dataset.is_sparse and not _partial_fit_takes_sparse(self.estimator):
            raise TypeError(f"StreamSearchCV trains its candidates as lanes of "
                            f"{type(self.estimator).__name__}.partial_fit, which takes "
                            "dense rows; this data holds sparse (CSR) rows. Tune on sparse "
                            "rows with a search that fits each setting (GridSearchCV): "
                            f"{type(self.estimator).__name__}.fit streams them")
        dataset.check_rows_left()  # nan_policy="drop" may have dropped every row
        engine = resolve_engine(self.engine)
        seed = self._seed()
        missing, given = None, dataset
        if dataset.nan_policy == "impute" and not dataset.is_sparse:
            # every candidate reads the rows through one map of missing values, which the
            # models fitted on them keep (lanes, finalists and the refit alike)
            missing = engine.run(MissingValuesPass(dataset.feature_names, categorical_columns(
                dataset.feature_names, dataset.categories), seed=seed), dataset,
                description="missing values")
            dataset = dataset.with_missing_values(missing)
        held_out = self._held_out_blocks(dataset, seed)
        # the held-out rows as the fitted models take them (NaN a missing value), and as
        # the lanes read them (through the map)
        given_validation = self._read_validation(engine, given, held_out)
        validation = (given_validation if missing is None else Validation(
            missing.apply(given_validation.X), given_validation.y, given_validation.weight))
        n_train = dataset.n_rows - int(np.sum(self._block_sizes(dataset, held_out)))
        if n_train <= 0 or validation.n_rows == 0:
            raise ValueError(f"too few rows (n_samples = {dataset.n_rows}) to hold out a "
                             "validation set and train on the rest")
        self.final_rung_ = self._final_rung()
        budgets = self._budgets(len(settings), n_train)
        by_fit = self.final_rung_ == "fit"  # one setting too: the finalist fit trains
        if by_fit:  # the race's rungs: those that start with more than `factor` candidates
            budgets = budgets[:self._rungs_above_factor(len(settings))]
        self.budgets_ = budgets
        self._cut_last_rung = by_fit
        self._settings = settings
        self.lane_template_, template_rows = self._lane_template(dataset, held_out, seed,
                                                                engine, fit_params, settings)
        rows_read = validation.n_rows + (0 if missing is None else dataset.n_rows)
        if self.lane_template_ is not None:
            rows_read += dataset.n_rows * _passes_of(self.lane_template_,
                                                     template_rows / dataset.n_rows)
        race = Race([clone(self.estimator).set_params(**s) for s in settings],
                    list(range(len(settings))),
                    trained_classes=(None if dataset.classes is None
                                     else np.zeros(len(dataset.classes), dtype=bool)))
        balanced: dict[Any, float] | None = None
        for candidate in race.candidates:
            lane = self._lane_params(candidate, n_train, dataset, self.lane_template_)
            for name, value in lane.items():
                candidate.set_params(**{name: value})
            if candidate.get_params().get("class_weight") == "balanced":
                # a lane's partial_fit takes the factors fit would compute, as a dict
                balanced = balanced_factors(dataset) if balanced is None else balanced
                candidate.set_params(class_weight=balanced)
        halve_in_pass = bool(getattr(engine, "resumes_mid_pass", False))
        epoch = 0
        while budgets and race.seen < budgets[-1] and race.alive:
            race = engine.run(RacePass(self, race, dataset, held_out, validation, budgets,
                                       halve_in_pass),
                              dataset, shuffle=True, seed=seed, epoch=epoch,
                              description=f"search pass {epoch + 1}")
            rows_read += dataset.n_rows
            epoch += 1
            if not halve_in_pass:
                while race.rung < len(budgets) and race.seen >= budgets[race.rung]:
                    self._end_rung(race, validation)
        # a rung the stream ended inside of (or whose every candidate failed)
        while race.rung < len(budgets) and (race.alive or race.failing):
            self._end_rung(race, validation)
        self._warn_of_absent_classes(dataset, race, validation, held_out.size)
        self._warn_of_clamped_values(race)
        passes = rows_read / dataset.n_rows
        if by_fit:
            passes += self._final_fits(race, settings, dataset.without_blocks(
                held_out, self.block_rows_), given_validation, engine, fit_params,
                n_train / dataset.n_rows, n_train)
        self.search_time_ = time.perf_counter() - started
        self.search_passes_ = passes
        if len(race.failed) == len(settings):
            self._raise_all_failed(race)
        self._record(settings, race, validation)
        if self.refit:
            started = time.perf_counter()
            best = clone(self.estimator).set_params(**self.best_params_)
            if foreign:  # the arrays as given
                weights = {} if sample_weight is None else {"sample_weight": sample_weight}
                best.fit(data, y, **weights)
            else:
                best.fit(dataset, **self._fit_params(engine, fit_params))  # the data as opened
            self.refit_time_ = time.perf_counter() - started
            self.best_estimator_ = best
            self.n_passes_ = self.search_passes_ + _passes_of(best)
        else:
            self.refit_time_ = 0.0
            best = race.candidates[self.best_index_]
            finish_lane(best, validation.X)  # a lane's model: the summaries it skipped
            # the lanes read the rows as arrays: the model takes the data's column names
            # (feature_names_in_ only where the data named its columns, as scikit-learn
            # records them) and category lists, so that it reads a table as fit would
            if not foreign:
                record_feature_names(best, tuple(dataset.feature_names),
                                     dataset.named_features)
                record_categories(best, dataset.categories or {})
                if missing is not None:  # the lane read the columns the map gives
                    best.missing_values_ = missing
                    best._keep_input_columns()
            elif dataset.named_features:
                best.feature_names_in_ = np.asarray(dataset.feature_names, dtype=object)
            else:
                best.__dict__.pop("feature_names_in_", None)
            self.best_estimator_ = best
            self.n_passes_ = self.search_passes_
        if is_classifier(self.estimator):
            self.classes_ = self.best_estimator_.classes_
        self.n_features_in_ = getattr(self.best_estimator_, "n_features_in_", None)
        names = getattr(self.best_estimator_, "feature_names_in_", None)
        if names is not None:
            self.feature_names_in_ = names
        else:
            self.__dict__.pop("feature_names_in_", None)
        return self

    def _seed(self) -> int:
        rs = self.random_state
        if rs is None:
            return int(np.random.SeedSequence().entropy % 2**31)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(2**31))
        return int(rs)

    def _check_foreign(self, data: Any, y: Any) -> None:
        """Refuse, before reading, what an estimator of another library cannot do: train
        the finalists by ``fit`` on a stream, or be refitted on data not in memory."""
        name = type(self.estimator).__name__
        if self._final_rung() == "fit":
            raise TypeError(f"final_rung='fit' trains the finalists by fit on the stream, "
                            f"which {name} (not a streamlearn estimator) cannot read; use "
                            "final_rung='partial_fit'")
        in_memory = (isinstance(data, np.ndarray | list)
                     or type(data).__module__.split(".")[0] == "pandas")
        if self.refit and not (in_memory and y is not None and not isinstance(y, str)):
            raise TypeError(f"refit=True fits {name} (not a streamlearn estimator) on the "
                            "data as arrays, which these are not; pass X and y in memory, or "
                            "refit=False and fit best_params_ yourself")

    def _final_rung(self) -> str:
        if self.final_rung != "auto":
            return str(self.final_rung)
        like_fit = getattr(self.estimator, "_lanes_train_like_fit", True)
        return "partial_fit" if like_fit else "fit"

    def _rungs_above_factor(self, n_candidates: int) -> int:
        """Rungs of successive halving that start with more than ``factor`` candidates."""
        rungs, alive = 0, n_candidates
        while alive > self.factor:
            rungs += 1
            alive = math.ceil(alive / self.factor)
        return rungs

    def _fit_params(self, engine: Any, fit_params: dict[str, Any]) -> dict[str, Any]:
        return {"engine": engine, **fit_params} if self.engine is not None else fit_params

    def _search_fit_params(self, engine: Any, fit_params: dict[str, Any]) -> dict[str, Any]:
        """``fit`` arguments of the fits the search makes before the refit: those given,
        but a checkpoint directory, which holds one fit (the refit's)."""
        own = {k: v for k, v in fit_params.items()
               if k not in ("checkpoint", "checkpoint_every")}
        return self._fit_params(engine, own)

    def _lane_template(self, dataset: Dataset, held_out: np.ndarray, seed: int, engine: Any,
                       fit_params: dict[str, Any], settings: list[dict[str, Any]]
                       ) -> tuple[Any, int]:
        """The estimator as given, or at a setting of the grid, whose lanes need what only
        ``fit`` learns (its ``_lanes_need_template(dataset)``:
        :class:`~streamlearn.models.AdditiveSVC`'s screened pairs), trained by ``fit`` on
        the training rows (at most ``TEMPLATE_ROWS`` of them, in whole blocks drawn at
        random); else None. Of those, the one whose lanes take the most pairs
        (``_lane_pairs``), the estimator as given on a tie: a grid over ``interactions``
        gets its pairs even where the estimator as given has none. Also the rows it was
        trained on."""
        needing = [clone(self.estimator)] + [clone(self.estimator).set_params(**s)
                                             for s in settings]
        needing = [c for c in needing
                   if getattr(c, "_lanes_need_template", lambda d: False)(dataset)]
        if not needing:
            return None, 0
        n_blocks = -(-dataset.n_rows // self.block_rows_)
        training = np.setdiff1d(np.arange(n_blocks), held_out)
        keep = max(1, TEMPLATE_ROWS // self.block_rows_)
        if training.size > keep:
            rng = np.random.default_rng([seed, 0x7E3A1A7E])
            chosen = rng.choice(training, size=keep, replace=False)
            left_out = np.setdiff1d(np.arange(n_blocks), chosen)
        else:
            chosen, left_out = training, held_out
        template = max(needing, key=lambda c: getattr(c, "_lane_pairs", lambda d: 0)(dataset))
        template_params = getattr(template, "_lane_template_params", None)
        if template_params is not None:
            template.set_params(**template_params(dataset))
        template.fit(dataset.without_blocks(left_out, self.block_rows_),
                     **self._search_fit_params(engine, fit_params))
        return template, int(np.sum(self._block_sizes(dataset, chosen)))

    def _final_fits(self, race: Race, settings: list[dict[str, Any]], training: Dataset,
                    validation: Validation, engine: Any, fit_params: dict[str, Any],
                    share: float, n_train: int) -> float:
        """The last rung: every candidate left trained by ``fit`` on the training rows and
        scored on the held-out rows (it replaces the lane in ``race``). Returns the passes
        over the data the fits made."""
        passes = 0.0
        scores = {}
        for i in race.alive:
            finalist = clone(self.estimator).set_params(**settings[i])
            try:
                finalist.fit(training, **self._search_fit_params(engine, fit_params))
                passes += _passes_of(finalist, share)
                scores[i] = self._score(finalist, validation)
            except Exception as error:
                if self.error_score == "raise":
                    raise
                race.failing[i] = _error_text(error)
            race.candidates[i] = finalist
        scores.update(self._fail(race))
        race.scores.append(scores)
        race.resources.append(int(n_train))
        race.rung += 1
        fitted = [i for i in race.alive if i not in race.failed]
        race.alive = [min(fitted, key=lambda i: _score_order(scores[i], i))] if fitted else []
        return passes

    def _held_out_blocks(self, dataset: Dataset, seed: int) -> np.ndarray:
        """Indices of the held-out blocks (sorted): drawn anywhere on stored data, one from
        each of as many equal spans of the rows on data held in memory (see ``chunk_rows``)."""
        n = dataset.n_rows
        block = int(self.chunk_rows or dataset.chunk_rows)
        # at least 20 blocks to choose from, and one block within max_validation_rows
        block = max(1, min(block, -(-n // 20), int(self.max_validation_rows)))
        wanted = min(self.validation_fraction * n, self.max_validation_rows)
        spread = dataset.in_memory
        if spread:  # a few rows anywhere are a slice: many small blocks
            block = max(1, min(block, math.floor(wanted / MEMORY_HELD_OUT_BLOCKS)))
        self.block_rows_ = block
        n_blocks = -(-n // block)
        count = int(min(max(1, math.floor(wanted / block)), n_blocks - 1))
        rng = np.random.default_rng([seed, 0x5EA2C4])
        if spread:  # one block in each of `count` equal spans of the blocks (count < n_blocks)
            edges = np.linspace(0, n_blocks, count + 1).astype(np.int64)
            return rng.integers(edges[:-1], edges[1:]).astype(np.int64)
        return np.sort(rng.choice(n_blocks, size=count, replace=False)).astype(np.int64)

    def _block_sizes(self, dataset: Dataset, held_out: np.ndarray) -> np.ndarray:
        starts = held_out * self.block_rows_
        return np.minimum(starts + self.block_rows_, dataset.n_rows) - starts

    def _read_validation(self, engine: Any, dataset: Dataset,
                         held_out: np.ndarray) -> Validation:
        """Read the held-out blocks once (neighbouring blocks in one read)."""
        parts: list[Chunk] = []
        runs = np.split(held_out, np.flatnonzero(np.diff(held_out) != 1) + 1) \
            if held_out.size else []
        for run in runs:
            lo = int(run[0]) * self.block_rows_
            hi = min((int(run[-1]) + 1) * self.block_rows_, dataset.n_rows)
            parts.extend(engine.reduce(dataset, start=list, step=_collect, merge=_joined,
                                       rows=(lo, hi), description="search validation rows"))
        X: Any = np.empty((0, 0), np.float32)
        if parts and isinstance(parts[0].X, SparseRows):  # scored as a scipy matrix
            X = SparseRows.concatenate([c.X for c in parts]).to_scipy()
        elif parts:
            X = np.concatenate([c.X for c in parts])
        codes = np.concatenate([c.y for c in parts]) if parts else np.empty(0)
        labels = codes if dataset.classes is None else dataset.classes[codes]
        weight = (np.concatenate([c.weight for c in parts])
                  if parts and parts[0].weight is not None else None)
        return Validation(X, labels, weight)

    def _warn_of_absent_classes(self, dataset: Dataset, race: Race, validation: Validation,
                                n_blocks: int) -> None:
        """Warn of the classes the candidates trained on that no held-out row holds (the
        data's classes when no lane trained): the race ranked the settings without them."""
        classes = dataset.classes
        if classes is None:
            return
        trained = race.trained_classes
        if trained is not None and trained.any():
            classes = classes[trained]
        present = set(np.asarray(validation.y).tolist())
        absent = [c for c in np.asarray(classes).tolist() if c not in present]
        if not absent:
            return
        warnings.warn(
            f"the held-out rows ({validation.n_rows}, in {n_blocks} blocks of at most "
            f"{self.block_rows_} consecutive rows) hold no row of the classes "
            f"{absent[:10]}{' ...' if len(absent) > 10 else ''} of the training rows: the "
            "settings were ranked on the other classes only. Rows sorted or grouped by "
            "label leave whole blocks of one class; shuffle the rows (or raise "
            "validation_fraction) so that every class is scored", UserWarning, stacklevel=3)

    def _warn_of_clamped_values(self, race: Race) -> None:
        """One warning for the features of which the lanes clamped more than
        :data:`~streamlearn.models.racing.CLAMPED_SHARE_WARNING` of the values they trained
        on to their feature maps' ranges (each lane's from its first slice of rows, or the
        estimator's ``feature_range``), where each lane would have warned of its own."""
        shares = {name: clamped / rows for name, (clamped, rows) in race.clamped.items()
                  if rows and clamped / rows > CLAMPED_SHARE_WARNING}
        if not shares:
            return
        worst = sorted(shares.items(), key=lambda item: -item[1])
        named = ", ".join(f"{name!r} {share:.1%}" for name, share in worst[:5])
        given = self.estimator.get_params().get("feature_range") is not None
        source = ("the estimator's feature_range" if given else
                  f"each lane's first slice of rows (at most {SLICE_ROWS:,})")
        advice = ("The settings were ranked on the clamped rows." if given else
                  "The settings were ranked on the clamped rows; give the estimator "
                  "feature_range=(min, max) to rank them on the data's range")
        more = " ..." if len(worst) > 5 else ""
        warnings.warn(
            f"the race's lanes clamped values of {len(worst)} feature(s) to their feature "
            f"maps' ranges, which come from {source}: {named}{more} of the values they "
            f"trained on. {advice}", UserWarning, stacklevel=3)

    def _budgets(self, n_candidates: int, n_train: int) -> list[int]:
        """Cumulative training rows of the survivors at the end of each rung."""
        halvings = math.ceil(math.log(n_candidates, self.factor) - 1e-9) if n_candidates > 1 \
            else 0
        growth = self.factor ** halvings
        first = max(self.epochs * n_train / growth, min(n_train, self.min_resource))
        return [math.ceil(first * self.factor ** r) for r in range(halvings + 1)]

    @staticmethod
    def _lane_params(candidate: Any, n_train: int, dataset: Dataset,
                     template: Any = None) -> dict[str, Any]:
        """Settings that make a candidate's ``partial_fit`` train like ``fit`` on
        ``n_train`` rows of ``dataset`` (its ``_lane_params`` hook, when it has one, given
        the lane template when there is one)."""
        hook = getattr(candidate, "_lane_params", None)
        if hook is None:
            return {}
        return hook(n_train, dataset) if template is None else hook(n_train, dataset, template)

    def _end_rung(self, race: Race, validation: Validation) -> None:
        """Score the alive candidates on the held-out rows and keep the best."""
        scores = {}
        for i in race.alive:
            if not race.started:
                scores[i] = -np.inf
                continue
            try:
                scores[i] = self._score(race.candidates[i], validation)
            except Exception as error:
                if self.error_score == "raise":
                    raise
                race.failing[i] = _error_text(error)
        keep = math.ceil((len(race.alive) + len(race.failing)) / self.factor)
        scores.update(self._fail(race))
        race.alive = [i for i in race.alive if i not in race.failed]
        race.scores.append(scores)
        race.resources.append(race.seen)
        if race.rung < len(self.budgets_) - 1 or self._cut_last_rung:
            order = sorted(race.alive, key=lambda i: _score_order(scores[i], i))
            race.alive = sorted(order[:keep])
        race.rung += 1

    def _fail(self, race: Race) -> dict[int, float]:
        """Mark the candidates that raised since the last rung's end as failed at this
        rung, with a ``FitFailedWarning`` each; returns their scores (``error_score``)."""
        scores = {}
        for i, error in sorted(race.failing.items()):
            race.failed[i] = (race.rung, error)
            scores[i] = float(self.error_score)
            warnings.warn(FitFailedWarning(
                f"the setting {self._settings[i]} failed at rung {race.rung} and leaves the "
                f"race with error_score={self.error_score!r} as its score: {error}"),
                stacklevel=4)
        race.failing.clear()
        return scores

    def _raise_all_failed(self, race: Race) -> None:
        """Every setting raised: the error, with their errors (the most common first)."""
        counts: dict[str, list[int]] = {}
        for i, (_, error) in sorted(race.failed.items()):
            counts.setdefault(error, []).append(i)
        listing = "\n".join(
            f"{len(who)} setting(s), such as {self._settings[who[0]]}: {error}"
            for error, who in sorted(counts.items(), key=lambda e: -len(e[1])))
        raise ValueError(f"all {len(race.failed)} settings failed to train or be scored on "
                         "the held-out rows (error_score=" f"{self.error_score!r}); set "
                         f"error_score='raise' to see the first error's traceback:\n{listing}")

    def _score(self, candidate: Any, validation: Validation) -> float:
        """``scoring`` of a candidate on the held-out rows, with their weights where the
        scorer takes them (scikit-learn's scorers do; a plain callable is called as
        ``GridSearchCV`` calls it, without)."""
        weighted = validation.weight is not None and _takes_sample_weight(self.scorer_)
        try:
            with library_rows():  # held-out rows of the data's columns, in fit's order
                if weighted:
                    return float(self.scorer_(candidate, validation.X, validation.y,
                                              sample_weight=validation.weight))
                return float(self.scorer_(candidate, validation.X, validation.y))
        except ValueError as error:
            classes = getattr(candidate, "classes_", None)
            absent = ([] if classes is None else
                      [c for c in np.asarray(classes).tolist()
                       if c not in set(np.asarray(validation.y).tolist())])
            if not absent:
                raise
            raise ValueError(
                f"scoring={self.scoring!r} failed on the held-out rows, which hold no row "
                f"of the classes {absent[:10]} (whole blocks of rows are held out, "
                f"{validation.n_rows} rows): shuffle rows sorted or grouped by label, "
                "raise validation_fraction or max_validation_rows, or score by a rule that "
                f"takes the labels present ({error})") from error

    def _record(self, settings: list[dict[str, Any]], race: Race,
                validation: Validation) -> None:
        last_rung = {}
        for r, scores in enumerate(race.scores):
            for i, s in scores.items():
                last_rung[i] = (r, s)
        mean = np.array([last_rung[i][1] for i in range(len(settings))])
        reached = np.array([last_rung[i][0] for i in range(len(settings))])
        # rank by the rung reached first, then by the score there; a NaN score ranks
        # after every number whatever rung it was taken at (scikit-learn's searches rank
        # NaN last), all NaN scores tied
        undefined = np.isnan(mean)
        tie_key = [(True, 0, 0.0) if undefined[i] else (False, -int(reached[i]), -mean[i])
                   for i in range(len(settings))]
        # among NaN scores, the candidate that went furthest comes first
        order = sorted(range(len(settings)),
                       key=lambda i: (*tie_key[i], -int(reached[i]), i))
        # ties (the same rung and score) share the best of their ranks, as scikit-learn's
        # searches rank them (rankdata's "min")
        rank = np.empty(len(settings), dtype=np.int64)
        for place, i in enumerate(order):
            j = order[place - 1] if place else None
            tied = j is not None and tie_key[i] == tie_key[j]
            rank[i] = rank[j] if tied else place + 1
        # NaN scores the scorer gave (a failed setting's error_score has its own warning)
        scored_nan = undefined & ~np.isin(np.arange(len(settings)), list(race.failed))
        if scored_nan.any():
            named = [settings[i] for i in np.flatnonzero(scored_nan)[:5]]
            which = ("every setting: the race could not rank them, best_params_ is not a "
                     "choice and best_score_ is NaN" if undefined.all() else
                     f"{int(scored_nan.sum())} of the {len(settings)} settings ({named}"
                     f"{', ...' if scored_nan.sum() > 5 else ''}): they rank last")
            warnings.warn(f"scoring={self.scoring!r} gave NaN on the held-out rows for "
                          f"{which}", UserWarning, stacklevel=3)
        results: dict[str, Any] = {"params": settings}
        for name in sorted({k for s in settings for k in s}):
            results[f"param_{name}"] = [s.get(name) for s in settings]
        results["mean_test_score"] = mean.tolist()
        results["rank_test_score"] = rank.tolist()
        results["iter"] = reached.tolist()
        results["n_resources"] = [race.resources[r] for r in reached]
        results["scores_by_rung"] = [[scores[i] for scores in race.scores if i in scores]
                                     for i in range(len(settings))]
        self.cv_results_ = results
        self.rung_scores_ = [dict(s) for s in race.scores]
        self.best_index_ = int(order[0])
        self.best_params_ = dict(settings[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])
        self.n_candidates_ = [len(s) for s in race.scores]
        self.n_resources_ = list(race.resources)
        self.n_rounds_ = len(race.scores)
        self.n_validation_ = validation.n_rows

    def __sklearn_tags__(self) -> Any:
        """The tuned estimator's kind, as scikit-learn's searches report it: a search over a
        classifier is a classifier (stratified folds in ``cross_val_score``, accepted by
        ``VotingClassifier``), over a regressor a regressor."""
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
        tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
        # the lanes train by partial_fit: sparse rows where it takes them too
        tags.input_tags.sparse = (inner.input_tags.sparse
                                  and _partial_fit_takes_sparse(self.estimator))
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        return tags

    @property
    def _expected_failed_checks(self) -> dict[str, str]:
        """scikit-learn checks the search is expected to fail, with the reason: those of
        its estimator, and the weight equivalence check."""
        checks = dict(getattr(self.estimator, "_expected_failed_checks", {}))
        checks.setdefault("check_sample_weight_equivalence_on_dense_data",
                          "the held-out blocks are blocks of consecutive rows drawn at "
                          "random, so a row repeated k times moves them where the same row "
                          "with weight k does not")
        return checks

    # -- prediction ---------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "best_estimator_")

    @available_if(_best_has("predict"))
    def predict(self, X: Any) -> np.ndarray:
        """Predictions of ``best_estimator_``."""
        self._check_fitted()
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of ``best_estimator_``."""
        self._check_fitted()
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log class probabilities of ``best_estimator_``."""
        self._check_fitted()
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """Decision function of ``best_estimator_``."""
        self._check_fitted()
        return self.best_estimator_.decision_function(X)

    def score(self, X: Any, y: Any = None, **params: Any) -> float:
        """``best_estimator_`` scored by ``scoring``, the rule the search ranked by (its own
        ``score`` when ``scoring`` is None).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional
        **params
            Passed to the scorer (``sample_weight``). With scikit-learn's metadata routing
            on, those the scorer requests: ``estimator.set_score_request(sample_weight=True)``
            for ``scoring=None`` (the estimator's own ``score``), the scorer's
            ``set_score_request`` otherwise, as with ``GridSearchCV``.

        Returns
        -------
        float
        """
        self._check_fitted()
        if _routing_enabled():
            params = process_routing(self, "score", **params).scorer.score
        return float(self.scorer_(self.best_estimator_, X, y, **params))

    def get_metadata_routing(self) -> MetadataRouter:
        """How scikit-learn's metadata routing reaches the search.

        ``fit`` takes ``sample_weight`` itself (it streams the weights with the rows, to
        the lanes, the held-out scores and the refit): ``set_fit_request(sample_weight=True)``
        asks a pipeline for them. ``score`` routes its metadata to the scorer, as
        ``GridSearchCV`` does.

        Returns
        -------
        MetadataRouter
        """
        router = MetadataRouter(owner=self).add_self_request(self)
        router.add(scorer=check_scoring(self.estimator, scoring=self.scoring),
                   method_mapping=MethodMapping().add(caller="score", callee="score"))
        return router


def _error_text(error: BaseException) -> str:
    """An error as a warning names it: its type and message."""
    return f"{type(error).__name__}: {error}"


def _score_order(score: float, index: int) -> tuple[bool, float, int]:
    """Sort key of a held-out score, best first: by score, a NaN after every number (as
    scikit-learn's searches rank it), then by place in the grid."""
    undefined = bool(np.isnan(score))
    return undefined, 0.0 if undefined else -float(score), index


def _takes_sample_weight(scorer: Any) -> bool:
    """Whether a scorer takes ``sample_weight``: scikit-learn's scorers, or a callable
    with that parameter or ``**kwargs``."""
    from sklearn.metrics._scorer import _BaseScorer, _PassthroughScorer

    if isinstance(scorer, _BaseScorer | _PassthroughScorer):
        return True
    try:
        parameters = inspect.signature(scorer).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "sample_weight" or p.kind is p.VAR_KEYWORD for p in parameters)


def _passes_of(estimator: Any, share: float = 1.0) -> float:
    """Passes over the whole data a fitted estimator made, trained on ``share`` of its rows
    (``Dataset.without_blocks``): its ``n_passes_`` when it records them, which count the
    rows read against the whole data's already; else its ``n_iter_`` plus 2 (a describe
    and a calibration pass) over its share."""
    passes = getattr(estimator, "n_passes_", None)
    if passes is None:
        return share * (float(getattr(estimator, "n_iter_", 1)) + 2.0)
    return float(passes)


def _collect(parts: list[Chunk], chunk: Chunk) -> list[Chunk]:
    parts.append(chunk)
    return parts


def _joined(a: list[Chunk], b: list[Chunk]) -> list[Chunk]:
    return [*a, *b]


def _partial_fit_takes_sparse(estimator: Any) -> bool:
    """Whether ``estimator.partial_fit`` trains on sparse rows (its class says so with
    ``_partial_fit_takes_sparse``), so that lanes of it can race over CSR chunks."""
    return bool(getattr(type(estimator), "_partial_fit_takes_sparse", False))
