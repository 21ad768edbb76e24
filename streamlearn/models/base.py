"""What every estimator shares: parameters, training data, labels, input checks, save/load.

Estimators follow scikit-learn's conventions: the constructor stores hyper-parameters only
(under the names of its arguments), ``fit`` learns attributes whose names end in ``_``,
``get_params``/``set_params`` read and write the hyper-parameters. Models are saved with
:mod:`streamlearn.io` (JSON metadata and numpy arrays, never pickle).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils import Tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from streamlearn.data import Dataset, open_dataset
from streamlearn.data.categories import category_index, plain_categories
from streamlearn.data.chunk import writeable, writeable_rows
from streamlearn.data.open import named_features, reading_for
from streamlearn.data.precision import matrix_spans, target_spans, warn_of_coarse_columns
from streamlearn.data.sources.base import (
    NumberedNames,
    default_feature_names,
    labels_are_names,
)
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.data.validation import (
    first_infinite,
    first_nonfinite,
    has_missing_features,
    nonfinite_value,
)
from streamlearn.engine.accounting import recording
from streamlearn.engine.checkpoint import CheckpointedRunner, checkpointed
from streamlearn.engine.evaluate import evaluate, label_codes
from streamlearn.engine.interrupts import interrupts_noted
from streamlearn.errors import DataError, LabelError, MissingValueError, SchemaError
from streamlearn.features.category_indicators import (
    MAX_INDICATOR_CATEGORIES,
    CategoryIndicators,
)
from streamlearn.models.class_weight import (
    check_weighted_classes,
    class_factors,
    class_weighted,
    partial_fit_weights,
)
from streamlearn.warning_origin import caller_stacklevel, in_library_rows, library_rows

#: Names shown in an error message before it is abbreviated.
MAX_SHOWN_NAMES = 10


def _shown(names: list[Any]) -> str:
    items = ", ".join(repr(n) for n in names[:MAX_SHOWN_NAMES])
    return f"[{items}{', ...' if len(names) > MAX_SHOWN_NAMES else ''}]"


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _digest(*parts: Any) -> str:
    """A hexadecimal BLAKE2b digest of arrays and values (by their bytes and text)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(f"{part.dtype.str}{part.shape}".encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(repr(part).encode())
    return digest.hexdigest()


def _json_form(value: Any) -> Any:
    """``value`` as JSON that tells it from other values: itself where JSON holds it; numpy
    scalars as numbers; NaN and infinities as text; mappings and sequences item by item;
    arrays (and array-likes) as their dtype, shape and a digest of their values; a
    ``RandomState`` as a digest of its state; a function as its qualified name and a digest
    of its code; any other object as its class's name."""
    if _json_safe(value):
        return value
    if isinstance(value, np.generic) and not isinstance(value, np.void):
        return _json_form(value.item())
    if isinstance(value, float):  # NaN or an infinity
        return repr(value)
    if isinstance(value, Mapping):
        return {str(_json_form(k)): _json_form(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_form(v) for v in value]
    if isinstance(value, np.random.RandomState):
        return {"RandomState": _digest(*value.get_state())}
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        array = np.asarray(value)
        if array.dtype == object:
            return {"array": _json_form(array.tolist())}
        return {"array": {"dtype": array.dtype.str, "shape": list(array.shape),
                          "digest": _digest(array)}}
    if callable(value):
        name = (f"{getattr(value, '__module__', None)}."
                f"{getattr(value, '__qualname__', kind)}")
        code = getattr(value, "__code__", None)
        return {"callable": name, "code": None if code is None
                else _digest(code.co_code, code.co_names, code.co_varnames)}
    return {"object": kind}


class FeatureNames(tuple):
    """Feature names seen in ``fit`` (a tuple), carrying the category list of each
    categorical feature, so that :func:`check_features` codes prediction inputs the same way.

    Parameters
    ----------
    names : sequence of str
    categories : mapping of str to sequence
        Feature name -> categories, for the string and categorical features.
    """

    categories: dict[str, tuple[Any, ...]]

    def __new__(cls, names: Sequence[str],
                categories: Mapping[str, Sequence[Any]]) -> FeatureNames:
        obj = super().__new__(cls, (str(n) for n in names))
        obj.categories = {str(k): plain_categories(v) for k, v in categories.items()}
        return obj

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return tuple(self), self.categories


class FeatureNameArray(np.ndarray):
    """``feature_names_in_`` as scikit-learn shapes it: a 1-D object array of the names
    seen in ``fit``, carrying their category lists in ``categories`` (feature name ->
    categories, empty without categorical features)."""

    categories: dict[str, tuple[Any, ...]]

    def __array_finalize__(self, obj: Any) -> None:
        self.categories = getattr(obj, "categories", {})


class FeatureNamesAttribute:
    """The descriptor behind ``feature_names_in_``.

    A fitted model keeps the names as a tuple (a :class:`FeatureNames` with categorical
    features, a :class:`~streamlearn.data.sources.base.NumberedNames` for a sparse
    source's numbered columns) in its ``__dict__``, as model files store them; reading
    the attribute gives scikit-learn's object array (:class:`FeatureNameArray`), which
    its tools index with masks (``SelectFromModel``, ``get_feature_names_out``).

    As in scikit-learn, the attribute exists only when the training data named its
    columns (a table's or a file's column names): a model fitted on an array, a sparse
    matrix or svmlight rows keeps the names ``x0, x1, ...`` given to its columns for its
    own messages, plots and model files (:func:`feature_names_of`), and has no
    ``feature_names_in_`` (:func:`has_named_features`).
    """

    name = "feature_names_in_"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            names = instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(instance).__name__!s} has no attribute "
                                 f"{self.name!r}; it is set by fit") from None
        if not has_named_features(instance):
            raise AttributeError(f"{type(instance).__name__!s} has no attribute "
                                 f"{self.name!r}: it was fitted on columns without names")
        out = np.empty(len(names), dtype=object)
        out[:] = [str(n) for n in names]
        out = out.view(FeatureNameArray)
        out.categories = dict(getattr(names, "categories", {}))
        return out

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.name] = value

    def __delete__(self, instance: Any) -> None:
        try:
            del instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


#: Learned flag: the model's columns had no names of their own (see
#: :func:`record_feature_names`).
UNNAMED_FLAG = "_unnamed_features_"


def record_feature_names(estimator: Any, names: Sequence[str], named: bool) -> None:
    """Keep the names of the columns a model was fitted on.

    ``names`` go to the model's ``__dict__`` (read by :func:`feature_names_of`, by model
    files and, when ``named``, as ``feature_names_in_``); ``named`` is False for the names
    ``x0, x1, ...`` given to unnamed columns (an array, a sparse matrix, svmlight rows),
    which the model then reads by position and does not expose as ``feature_names_in_``.
    """
    estimator.__dict__["feature_names_in_"] = names
    estimator.__dict__[UNNAMED_FLAG] = not named


def has_column_names(X: Any) -> bool:
    """Whether ``X`` is a table that names its columns (pandas ``columns``, pyarrow or
    polars ``column_names``), as ``fit`` reads one (:class:`~streamlearn.data.Dataset`'s
    ``named_features``)."""
    return getattr(X, "columns", None) is not None or \
        getattr(X, "column_names", None) is not None


def has_named_features(estimator: Any) -> bool:
    """Whether a fitted streamlearn model was trained on named columns (it then has
    ``feature_names_in_``). A model loaded from a file written before the flag was
    kept: unless its names are ``x0, x1, ...``."""
    unnamed = estimator.__dict__.get(UNNAMED_FLAG)
    if unnamed is None:
        names = estimator.__dict__.get("feature_names_in_")
        return (names is not None and not isinstance(names, NumberedNames)
                and list(names) != default_feature_names(len(names)))
    return not unnamed


def feature_names_of(model: Any) -> Sequence[str]:
    """Names of a fitted model's feature columns for display: those seen in ``fit``, or
    ``x0, x1, ...`` for columns without names (kept by a streamlearn model, made here for
    another library's).

    Parameters
    ----------
    model : fitted estimator

    Returns
    -------
    sequence of str
    """
    names = model.__dict__.get("feature_names_in_")
    if names is None:
        names = getattr(model, "feature_names_in_", None)
    if names is None:
        names = default_feature_names(int(model.n_features_in_))
    return names


def record_hashing(estimator: Any, dataset: Dataset) -> None:
    """Keep how the training rows were hashed, so that new data can be read the same way.

    Sets ``hash_features_`` (the number of hashed columns) and, for parquet,
    ``hashed_columns_`` (the columns hashed) and ``hashed_kinds_`` (how each was hashed:
    ``"numeric"``, ``"string"`` or ``"tokens"``, by which data of other column types is
    refused at predict) when the dataset's rows are hashed; removes them otherwise (a
    refit on other data forgets them).
    """
    hashed = getattr(dataset.source, "hash_features", None)
    if hashed is None:
        for name in ("hash_features_", "hashed_columns_", "hashed_kinds_"):
            estimator.__dict__.pop(name, None)
        return
    estimator.hash_features_ = int(hashed)
    columns = tuple(getattr(dataset.source, "hashed_columns", ()))
    if columns:
        estimator.hashed_columns_ = columns
        estimator.hashed_kinds_ = tuple(dataset.source.hashed_kinds)
    else:
        estimator.__dict__.pop("hashed_columns_", None)
        estimator.__dict__.pop("hashed_kinds_", None)


def record_categories(estimator: Any, categories: Mapping[str, Sequence[Any]]) -> None:
    """Keep the category lists of the training data's categorical features on a fitted model.

    Sets ``categories_`` (feature name -> tuple of categories; code ``i`` in the stream
    stands for ``categories_[name][i]``) and makes ``feature_names_in_`` a
    :class:`FeatureNames` carrying them. Without categorical features, removes
    ``categories_`` (a refit on numeric data forgets earlier categories).

    Parameters
    ----------
    estimator : fitted estimator with ``feature_names_in_``
    categories : mapping of str to sequence
    """
    names = estimator.__dict__.get("feature_names_in_")
    if not categories:
        estimator.__dict__.pop("categories_", None)
        if isinstance(names, FeatureNames):
            estimator.feature_names_in_ = tuple(names)
        return
    estimator.categories_ = {str(k): plain_categories(v) for k, v in categories.items()}
    if names is not None:
        estimator.feature_names_in_ = FeatureNames(names, estimator.categories_)


#: What to do about categorical codes read as numbers, said by the warning of
#: :func:`warn_category_codes` (a model may add its own way out before it); another model
#: than ``AdditiveSVC`` is also pointed to :data:`ADDITIVE_ADVICE`.
ONE_HOT_ADVICE = "give it one indicator column per category instead (pandas.get_dummies)"
ADDITIVE_ADVICE = (", or train AdditiveSVC, whose default B-spline map gives each category "
                   "a value of its own")


def warn_category_codes(model: str, counts: Mapping[str, int], advice: str = "") -> None:
    """Warn that ``model`` reads categorical columns as one number each.

    A categorical column arrives as its codes ``0 .. k - 1``, the categories in sorted
    order (:mod:`streamlearn.data.categories`). A model that reads a code as a number puts
    the categories on a line in that order, which means nothing for more than two of them
    (two categories coded 0/1 are one indicator column, which is exact). One
    ``UserWarning`` names the columns with more than two categories and their counts; no
    warning without such columns.

    Parameters
    ----------
    model : str
        The estimator's class name.
    counts : mapping of str to int
        Column name -> number of categories, of the columns read as numbers.
    advice : str, optional
        The model's own way out, said before the general one (:data:`ONE_HOT_ADVICE`).
    """
    many = {name: k for name, k in counts.items() if k > 2}
    if not many:
        return
    listed = ", ".join(f"{name!r} ({k} categories)" for name, k in many.items())
    warnings.warn(f"{model} reads the categorical column(s) {listed} as one number each, "
                  "the position of the category in its sorted list, an order that means "
                  f"nothing to the label; {advice}{ONE_HOT_ADVICE}"
                  f"{'' if model == 'AdditiveSVC' else ADDITIVE_ADVICE}", UserWarning,
                  stacklevel=caller_stacklevel())


class NotOnline:
    """Stands where ``partial_fit`` would be, on an estimator whose algorithm is not online.

    Reading ``estimator.partial_fit`` raises ``AttributeError`` with ``reason`` and what to
    do instead, so ``hasattr(estimator, "partial_fit")`` is False (scikit-learn and dask-ml
    take the model for a batch one) while a user who calls it learns why.

    Parameters
    ----------
    reason : str
        Why the algorithm cannot learn from one batch at a time.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        cls = owner.__name__ if owner is not None else type(instance).__name__
        raise AttributeError(f"{cls} has no {self.name}: {self.reason}. To train on data "
                             "larger than memory, give fit a Dataset or a path: it streams "
                             "the rows chunk by chunk")


#: The estimators that train on sparse rows without densifying them.
SPARSE_MODELS = ("AdditiveSVC, MixtureSVC, ShareBoostClassifier(features='linear') and the "
                 "super-sparse machines with the RBF similarity")


class StreamEstimator(BaseEstimator):
    """Base class: a scikit-learn estimator with fitted checks and model files.

    Hyper-parameter access (``get_params``/``set_params``), ``repr`` and cloning come from
    :class:`sklearn.base.BaseEstimator`. Subclasses name the attribute that exists once
    fitted in ``_fitted_attribute``, and list the scikit-learn checks their algorithm cannot
    pass in ``_expected_failed_checks`` (check name -> one-line reason); the test suite and
    the README read that table.

    A subclass's ``fit`` is one call of the template :meth:`_fit_stream`: the subclass
    declares its hyper-parameters' ``_parameter_constraints``, its ``_task``, and the hooks
    :meth:`_check_params` (rules spanning parameters), :meth:`_run_driver` (its
    algorithm) and :meth:`_set_fitted` (attributes from the driver's result). When the
    training data has string or categorical feature columns, the fitted model keeps their
    category lists in ``categories_`` (see :func:`record_categories`); prediction inputs
    are then coded by them (:func:`check_features`); a model that reads a column's codes
    as one number warns of it once at the start of the fit (:func:`warn_category_codes`,
    :meth:`_category_codes_read_as_numbers`). Every fit through the template
    records what it read: ``n_passes_`` (passes over the data, partial passes counted as
    the share of rows they read) and ``bytes_read_`` (see :meth:`_fit_stream`).
    """

    #: Learned attribute whose presence means "fitted".
    _fitted_attribute: ClassVar[str] = "classes_"
    feature_names_in_ = FeatureNamesAttribute()
    #: scikit-learn checks this algorithm is expected to fail, with the reason.
    _expected_failed_checks: ClassVar[dict[str, str]] = {}
    #: Hyper-parameter name -> the values it accepts (scikit-learn's constraint table:
    #: ``Interval``, ``StrOptions``, ``"boolean"``, ``None``, ...); every constructor
    #: parameter has an entry (``"no_validation"`` for any value).
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {}
    #: Target ``fit`` reads its training data for: "classification" or "regression".
    _task: ClassVar[str] = "classification"
    #: ``fit`` takes a :class:`~streamlearn.data.Dataset` (what a search's finalists and
    #: refit are trained on); an estimator of another library fits arrays.
    _fits_datasets: ClassVar[bool] = True
    #: Private learned state (names without the trailing ``_``) that a new ``fit`` forgets
    #: along with the learned attributes.
    _private_state: ClassVar[tuple[str, ...]] = ()
    #: Whether ``fit`` streams sparse rows (scipy matrices, svmlight, zarr CSR) as they are.
    _accepts_sparse: ClassVar[bool] = False
    #: Learned attributes that model files written before a rename hold under an earlier
    #: name: earlier name -> name now (loading reads them under the new one).
    _renamed_attributes: ClassVar[dict[str, str]] = {}

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._accepts_sparse
        tags.input_tags.allow_nan = True  # fit's nan_policy="auto" reads NaN as missing
        return tags

    # -- the fit template ------------------------------------------------------------------
    def _fit_stream(self, data: Any, y: Any, sample_weight: Any, nan_policy: Any,
                    engine: Any, checkpoint: str | os.PathLike[str] | None,
                    checkpoint_every: int, **options: Any) -> Self:
        """What every ``fit`` does around its algorithm's driver.

        Forgets what an earlier fit learned, validates the hyper-parameters before reading
        any data (:meth:`_validate_hyperparameters`), opens the training data for the
        estimator's ``_task``, wraps the engine with checkpoints, runs :meth:`_run_driver`
        and sets the learned attributes: ``n_passes_`` and ``bytes_read_`` (what the fit
        read, below), ``feature_names_in_``, ``n_features_in_``, ``classes_``
        (classifiers), ``svmlight_zero_based_`` (training data read from svmlight text:
        whether its feature indices were taken as zero-based, so that data to predict is
        read the same way), ``hash_features_`` and ``hashed_columns_`` (hashed rows:
        :func:`record_hashing`), then those of the driver's result (:meth:`_set_fitted`) and
        ``categories_`` (:func:`record_categories`), and for a classifier with a
        ``class_weight`` the factors it put on the rows' weights, ``class_weight_``
        (:mod:`~streamlearn.models.class_weight`). A fit that fails, whatever the reason,
        leaves the estimator unfitted.

        ``n_passes_`` (float) is the number of passes the fit made over the training data,
        a pass over part of the rows counting as the share of the rows it read: the rows
        read by every engine run during the fit divided by the data's rows.
        ``bytes_read_`` (int) is the bytes of the chunks those runs walked (features,
        target and weights as float32/int32 values, see
        :mod:`streamlearn.engine.accounting`). A fit resumed from a checkpoint reports the
        passes of the whole fit, those replayed from the checkpoint included.

        Parameters
        ----------
        data, y, sample_weight, nan_policy
            As ``fit`` takes them (see :func:`classification_dataset`).
        engine : engine, optional
            Overrides the ``engine`` parameter for this call.
        checkpoint : str or path-like, optional
            Local directory of the checkpoints a killed fit resumes from (a path or a
            ``file://`` URL; another URL is refused with a ``ValueError``).
        checkpoint_every : int
            Chunks between two checkpoint writes.
        **options
            Further options of the estimator's ``fit``, passed to :meth:`_run_driver`.

        Returns
        -------
        self
        """
        self._forget_fitted()
        try:
            self._validate_hyperparameters()
            retry = retries_reading_gaps(nan_policy, data, checkpoint)
            nan_policy = resolve_nan_policy(nan_policy, data, y, sample_weight)
            with recording() as first_try:
                try:
                    dataset = self._training_dataset(data, y, sample_weight, nan_policy)
                    with interrupts_noted():  # a Ctrl-C a finalizer drops stops the next pass
                        self._fit_dataset(dataset, engine, checkpoint, checkpoint_every,
                                          **options)
                except MissingValueError as exc:
                    if not retry:
                        raise
                    warn_of_gaps_found(exc)
                    self._forget_fitted()
            if retry and not self.is_fitted:  # read again, NaN a missing value
                dataset = self._training_dataset(data, y, sample_weight, "impute")
                with interrupts_noted():
                    self._fit_dataset(dataset, engine, checkpoint, checkpoint_every,
                                      **options)
                # the reads of the first try count too
                self.n_passes_ += float(first_try.passes_over(dataset.n_rows))
                self.bytes_read_ += int(first_try.bytes_read)
        except BaseException:
            self._forget_fitted()  # no half-fitted model
            raise
        return self

    def _fit_dataset(self, dataset: Dataset, engine: Any,
                     checkpoint: str | os.PathLike[str] | None, checkpoint_every: int,
                     **options: Any) -> None:
        """Run the driver on opened training data and set the learned attributes."""
        if dataset.is_sparse and not self._accepts_sparse:
            self._refuse_sparse(dataset.source.description)
        dataset.check_rows_left()  # nan_policy="drop" may have dropped every row
        factors = None
        class_weight = getattr(self, "class_weight", None)
        if (class_weight is not None and self._task == "classification"
                and dataset.task == "classification"):
            dataset, factors = class_weighted(dataset, class_weight)
        if self._task == "classification" and dataset.task == "classification":
            check_weighted_classes(dataset)
        self._warn_category_codes(dataset.categories or {})
        with recording() as passes:
            dataset = self._with_missing_values(dataset, engine)
            dataset = self._with_category_indicators(dataset)
            runner = checkpointed(self._engine(engine), checkpoint, checkpoint_every, self,
                                  dataset)
            try:
                fitted = self._run_driver(runner, dataset, self._seed(), **options)
            finally:
                if isinstance(runner, CheckpointedRunner):
                    runner.release_checkpoint()
        self.n_passes_ = float(passes.passes_over(dataset.n_rows))
        self.bytes_read_ = int(passes.bytes_read)
        record_feature_names(self, dataset.feature_names if dataset.is_sparse
                             else tuple(dataset.feature_names), dataset.named_features)
        self.n_features_in_ = len(self._feature_names)
        if self._task == "classification" and dataset.classes is not None:
            self.classes_ = storable_classes(dataset.classes)
        zero_based = getattr(dataset.source, "zero_based", None)
        if zero_based is not None:  # svmlight text: how its indices were read
            self.svmlight_zero_based_ = bool(zero_based)
        record_hashing(self, dataset)
        self._set_fitted(fitted)
        self._keep_input_columns()
        if factors is not None:
            self.class_weight_ = factors
        record_categories(self, dataset.categories)

    #: Whether the model reads a categorical column through indicator columns
    #: (:class:`~streamlearn.features.category_indicators.CategoryIndicators`, kept in
    #: ``category_indicators_``) rather than as its codes.
    _category_indicators: ClassVar[bool] = False

    def _category_codes_read_as_numbers(self, categories: Mapping[str, Sequence[Any]],
                                        online: bool = False) -> dict[str, int]:
        """The categorical columns this model reads as one number each (their codes), with
        their numbers of categories: every one, or with ``_category_indicators`` those of
        more than ``MAX_INDICATOR_CATEGORIES`` categories; a model with a treatment of its
        own for categories overrides it. ``online``: for the first ``partial_fit`` call."""
        counts = {str(name): len(values) for name, values in categories.items()}
        if self._category_indicators:
            return {name: k for name, k in counts.items() if k > MAX_INDICATOR_CATEGORIES}
        return counts

    def _with_missing_values(self, dataset: Dataset, engine: Any) -> Dataset:
        """The training data as the model reads it under ``nan_policy="impute"``: each
        missing value (NaN) filled, and an indicator column appended for each column with
        one (:mod:`~streamlearn.features.missing_values`, learned in one pass over the
        rows). Sets ``missing_values_`` to the map, or removes it under another policy."""
        if dataset.nan_policy != "impute":
            self._keep("missing_values_", None)
            return dataset
        if dataset.missing_values is not None:  # read through the map already (a search's)
            self._keep("missing_values_", dataset.missing_values)
            return dataset
        if dataset.is_sparse:
            raise DataError(f"nan_policy='impute' reads dense rows; {type(self).__name__} "
                            "was given sparse rows, whose entries not stored are zeros, "
                            "not missing values: drop or fill their NaN entries")
        from streamlearn.engine.missing_counts import MissingValuesPass
        from streamlearn.features.missing_values import categorical_columns

        names = list(dataset.feature_names)
        pass_ = MissingValuesPass(names, categorical_columns(names, dataset.categories),
                                  seed=self._seed())
        missing = self._engine(engine).run(pass_, dataset, description="missing values")
        self._keep("missing_values_", missing)
        return dataset.with_missing_values(missing)

    @property
    def _reading_nan_policy(self) -> str:
        """How a dataset this model scores or predicts is opened: NaN passes to a model
        that reads it as a missing value (``missing_values_``), and is refused otherwise."""
        return "impute" if hasattr(self, "missing_values_") else "raise"

    def _first_call_missing_values(self, values: np.ndarray, feature_names: Sequence[str],
                                   categories: Mapping[str, Sequence[Any]]) -> np.ndarray:
        """A first ``partial_fit`` call's dense rows (categorical columns as codes) as the
        model reads them: where they hold a NaN, the map of missing values learned from
        these rows (``missing_values_``, as ``fit`` learns it from its training rows:
        one pass of :class:`~streamlearn.engine.missing_counts.MissingValuesPass`) fills
        them and appends the indicator columns; else the rows as given, and no map. An
        infinite value is refused as ``fit`` refuses it."""
        if not np.isnan(values).any():
            self._keep("missing_values_", None)
            return values
        from streamlearn.engine import LocalEngine
        from streamlearn.engine.missing_counts import MissingValuesPass
        from streamlearn.features.missing_values import categorical_columns

        names = [str(n) for n in feature_names]
        pass_ = MissingValuesPass(names, categorical_columns(names, categories),
                                  seed=self._seed())
        missing = LocalEngine(progress=False).run(
            pass_, open_dataset(values, nan_policy="impute"), description="missing values")
        self._keep("missing_values_", missing)
        return missing.apply(values)

    def _missing_filled(self, values: np.ndarray) -> np.ndarray:
        """Rows of the given columns with the missing values read as in fit: through
        ``missing_values_`` when the model has it."""
        missing = getattr(self, "missing_values_", None)
        return values if missing is None else missing.apply(values)

    def _with_category_indicators(self, dataset: Dataset) -> Dataset:
        """The training data as the model reads it: with ``_category_indicators``, each
        categorical column of more than two categories (and at most
        ``MAX_INDICATOR_CATEGORIES``) replaced by its indicator columns in every chunk
        (:meth:`~streamlearn.data.Dataset.with_feature_expansion`). Sets
        ``category_indicators_`` to the map, or removes it when there is none."""
        indicators = (None if dataset.is_sparse else
                      self._start_category_indicators(dataset.feature_names,
                                                      dataset.categories))
        return dataset if indicators is None else dataset.with_feature_expansion(indicators)

    def _start_category_indicators(self, feature_names: Sequence[str],
                                   categories: Mapping[str, Sequence[Any]]
                                   ) -> CategoryIndicators | None:
        """Set ``category_indicators_`` for dense rows of the given columns and their
        categories (removed when the model has none); returns it."""
        indicators = None
        if self._category_indicators and categories:
            indicators = CategoryIndicators.of(feature_names, categories)
        self._keep("category_indicators_", indicators)
        return indicators

    def _keep_input_columns(self) -> None:
        """After a driver trained on indicator columns: ``feature_names_in_`` and
        ``n_features_in_`` are those of the columns given, which prediction inputs keep."""
        indicators = getattr(self, "category_indicators_", None)
        if indicators is not None:
            self.feature_names_in_ = indicators.source_names
            self.n_features_in_ = len(self._feature_names)
        missing = getattr(self, "missing_values_", None)
        if missing is not None:  # its columns come before the categories' indicators
            self.feature_names_in_ = missing.source_names
            self.n_features_in_ = len(self._feature_names)

    def _given_feature_names(self, dataset: Dataset) -> Any:
        """The names of the columns given to the fit: ``dataset``'s, the training data as
        the model reads it, less its indicator columns."""
        missing = getattr(self, "missing_values_", None)
        if missing is not None:
            return missing.source_names
        indicators = getattr(self, "category_indicators_", None)
        if indicators is not None:
            return indicators.source_names
        return dataset.feature_names if dataset.is_sparse else tuple(dataset.feature_names)

    @property
    def _read_feature_names(self) -> Sequence[str]:
        """The names of the columns the model reads, which its column indices
        (``selected_features_``, the coordinates of ``prototypes_``) count: those of
        ``category_indicators_`` (``"<column>=<category>"`` in a categorical column's
        place) when it has one, else ``feature_names_in_``."""
        indicators = getattr(self, "category_indicators_", None)
        if indicators is not None:
            return indicators.feature_names
        missing = getattr(self, "missing_values_", None)
        if missing is not None:
            return missing.feature_names
        return self._feature_names

    def _given_columns(self, columns: np.ndarray) -> np.ndarray:
        """The given columns (sorted, distinct) that read columns ``columns`` come from."""
        indicators = getattr(self, "category_indicators_", None)
        columns = np.asarray(columns, dtype=np.int64)
        if indicators is not None:
            columns = indicators.source_columns()[columns]
        missing = getattr(self, "missing_values_", None)
        if missing is not None:
            columns = missing.source_columns()[columns]
        return np.unique(columns)

    def _indicator_rows(self, values: np.ndarray) -> np.ndarray:
        """Rows of the given columns (categorical ones as codes) as the model reads them:
        an unseen category of a two-category column as its neutral value
        (:meth:`_two_category_neutral`), then through ``category_indicators_`` when it
        has one."""
        values = self._neutral_unseen_categories(values)
        indicators = getattr(self, "category_indicators_", None)
        return values if indicators is None else indicators.apply(values)

    def _neutral_unseen_categories(self, values: np.ndarray) -> np.ndarray:
        """``values`` with a code other than 0 and 1 (a category unseen in fit) in a column
        of two categories replaced by the column's neutral value, with
        ``_category_indicators`` (such a column is read as its 0/1 code, one indicator,
        where the code ``2`` of an unseen category would be extrapolated past both)."""
        categories = getattr(self, "categories_", None) or {}
        if not self._category_indicators or not categories:
            return values
        names = [str(n) for n in self._feature_names]
        out = values
        for name, values_of in categories.items():
            if len(values_of) != 2 or str(name) not in names:
                continue
            j = names.index(str(name))
            column = values[:, j]
            unseen = ~np.isnan(column) & (column != 0) & (column != 1)
            if unseen.any():
                if out is values:
                    out = np.array(values, dtype=np.result_type(values.dtype, np.float32))
                out[unseen, j] = self._two_category_neutral(str(name), j)
        return out

    def _two_category_neutral(self, name: str, column: int) -> float:
        """The value an unseen category of the two-category column ``name`` (given column
        ``column``) is read as: the column's training mean, the share of rows of its second
        category, which standardisation by ``shift_`` (the mean) makes 0 so that it
        contributes nothing; 0.5, halfway between the two categories, on a model that keeps
        no such mean. A model that keeps its means elsewhere overrides it."""
        shift = getattr(self, "shift_", None)
        if shift is None:
            return 0.5
        indicators = getattr(self, "category_indicators_", None)
        read = (column if indicators is None
                else int(np.searchsorted(indicators.source_columns(), column)))
        return float(np.asarray(shift, dtype=np.float64)[read])

    def _importances_per_column(self, importances: np.ndarray) -> np.ndarray:
        """Importances of the columns the model reads, one per given column: an indicator
        column's summed into its categorical column's."""
        out = np.asarray(importances, dtype=np.float64)
        indicators = getattr(self, "category_indicators_", None)
        if indicators is not None:
            out = indicators.fold(out)
        missing = getattr(self, "missing_values_", None)
        return out if missing is None else missing.fold(out)

    #: The model's own way out of reading category codes as numbers, said first by the
    #: warning of :func:`warn_category_codes` (ends with "; or " when set).
    _category_advice: ClassVar[str] = ""

    def _warn_category_codes(self, categories: Mapping[str, Sequence[Any]],
                             online: bool = False) -> None:
        """Warn once, at the start of a fit, of the categorical columns of more than two
        categories that this model reads as numbers (:func:`warn_category_codes`)."""
        warn_category_codes(type(self).__name__,
                            self._category_codes_read_as_numbers(categories, online),
                            self._category_advice)

    def _check_partial_fit_target(self, y: Any) -> None:
        """``partial_fit`` takes the chunk's targets, not a column name (``fit`` does)."""
        if isinstance(y, str):
            raise TypeError(f"partial_fit takes y as the chunk's targets (an array), not the "
                            f"name of a column ({y!r}); pass X without it and y = X[{y!r}], "
                            "or use fit, which reads a target column by name")

    def _partial_fit_sample_weight(self, y: Any, classes: Any, sample_weight: Any) -> Any:
        """``partial_fit``'s sample weights times the class factors of ``class_weight``
        (a dict; ``"balanced"`` is a ``ValueError``), or ``sample_weight`` itself."""
        class_weight = getattr(self, "class_weight", None)
        if class_weight is None:
            return sample_weight
        known = (self.classes_ if self.is_fitted
                 else sorted_classes(classes if classes is not None else y))
        codes = encode_labels(y, known)
        return partial_fit_weights(class_weight, known, codes, sample_weight)

    def _class_weight_recorded(self) -> Self:
        """Itself, with ``class_weight_`` set to the factors of a ``partial_fit``'s
        ``class_weight`` dict over ``classes_`` (what ``fit`` records of its own)."""
        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None and not isinstance(class_weight, str):
            self.class_weight_ = class_factors(class_weight, np.asarray(self.classes_))
        return self

    def _keep(self, name: str, value: Any) -> None:
        """Set the learned attribute ``name`` to ``value``, or remove it when None."""
        if value is None:
            self.__dict__.pop(name, None)
        else:
            setattr(self, name, value)

    def _refuse_sparse(self, description: str) -> None:
        """Raise the ``TypeError`` of an estimator given sparse rows it cannot train on."""
        raise TypeError(f"{self!r} takes dense rows; {description} holds sparse rows "
                        f"({SPARSE_MODELS} train on sparse data as it is)")

    def _training_dataset(self, data: Any, y: Any, sample_weight: Any,
                          nan_policy: Any) -> Dataset:
        """The training data opened for the estimator's ``_task``."""
        if sp.issparse(data) and not self._accepts_sparse:
            self._refuse_sparse(f"the {type(data).__name__} of shape {data.shape}")
        opener = (classification_dataset if self._task == "classification"
                  else regression_dataset)
        return opener(data, y, sample_weight, getattr(self, "chunk_rows", None),
                      nan_policy=nan_policy, accept_sparse=self._accepts_sparse)

    def _validate_hyperparameters(self) -> None:
        """Check every hyper-parameter against ``_parameter_constraints`` (scikit-learn's
        ``InvalidParameterError`` names the first that fails), then the rules that span
        several of them (:meth:`_check_params`)."""
        self._validate_params()
        self._check_params()

    def _check_params(self) -> None:
        """Rules that span several hyper-parameters; raise ``ValueError``. None here."""

    def _forget_fitted(self) -> None:
        """Remove every learned attribute (names ending in ``_``) and ``_private_state``."""
        for name in list(vars(self)):
            if (name.endswith("_") and not name.startswith("__")) or \
                    name in self._private_state:
                del self.__dict__[name]

    def _seed(self) -> int:
        """The seed of one fit: ``random_state``, or a fresh one when it is None (0 for an
        estimator without ``random_state``: its algorithm is deterministic)."""
        if "random_state" not in self._param_names():
            return 0
        random_state = self.random_state  # type: ignore[attr-defined]
        if random_state is None:
            return int(np.random.SeedSequence().entropy % 2**31)
        if isinstance(random_state, np.random.RandomState):
            return int(random_state.randint(2**31))
        return int(random_state)

    def _run_driver(self, runner: Any, dataset: Dataset, seed: int, **options: Any) -> Any:
        """Run the algorithm's driver over ``dataset``; returns its fitted state."""
        raise NotImplementedError(f"{type(self).__name__} does not train with _fit_stream")

    def _set_fitted(self, fitted: Any) -> None:
        """Set the learned attributes from the driver's fitted state."""
        raise NotImplementedError(f"{type(self).__name__} does not train with _fit_stream")

    @classmethod
    def _param_names(cls) -> list[str]:
        return list(cls._get_param_names())

    def _json_params(self) -> dict[str, Any]:
        """Hyper-parameters as JSON that tells each value from another (:func:`_json_form`:
        numpy numbers as numbers, arrays by a digest of their values, ...), so that a
        checkpoint's fingerprint refuses a fit with other values of any of them."""
        return {k: _json_form(v) for k, v in self.get_params().items()}

    # -- fitted state -------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        """Whether the estimator has learned its attributes."""
        return hasattr(self, self._fitted_attribute)

    def __sklearn_is_fitted__(self) -> bool:
        return self.is_fitted

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")

    def _check_X(self, X: Any) -> np.ndarray:
        """Prediction inputs checked against the features seen in ``fit`` (categorical
        columns coded by the categories seen in ``fit``)."""
        self._check_fitted()
        values = check_features(X, self._feature_names, type(self).__name__,
                                categories=getattr(self, "categories_", None),
                                unseen=self._unseen_category_reading,
                                named=has_named_features(self),
                                allow_missing=hasattr(self, "missing_values_"))
        return self._missing_filled(values)

    def _unseen_category_reading(self, name: str, k: int) -> str:
        """How the model reads a category unseen in fit of the categorical feature
        ``name`` of ``k`` categories, for the warnings of such values ("they ...")."""
        names = [str(n) for n in self._feature_names]
        if self._category_indicators and k == 2 and name in names:
            neutral = self._two_category_neutral(name, names.index(name))
            return (f"they are read as {neutral:.4g}, the column's training mean, between "
                    "the codes 0 and 1 of its two categories")
        indicators = getattr(self, "category_indicators_", None)
        if (indicators is not None and name in names
                and names.index(name) in indicators.columns):
            return "they set none of its indicator columns"
        return unseen_code_reading(name, k)

    def _check_training_X(self, X: Any) -> np.ndarray:
        """Rows of a ``partial_fit`` call after the first, checked as :meth:`_check_X`
        checks them but for a category the model does not know, which is refused (it
        would be trained as the code of unseen categories): see :func:`check_features`.
        A model whose fit read NaN as missing values (``missing_values_``) reads them so
        here too, through the same map: the fill values and indicator columns learned by
        fit, which a later call does not change (a column that had no gap in fit gets its
        fill value and no indicator)."""
        self._check_fitted()
        values = check_features(X, self._feature_names, type(self).__name__,
                                categories=getattr(self, "categories_", None), training=True,
                                named=has_named_features(self),
                                allow_missing=hasattr(self, "missing_values_"))
        return self._missing_filled(values)

    @property
    def _feature_names(self) -> Any:
        """The names seen in ``fit`` as the model keeps them (a tuple, see
        :class:`FeatureNamesAttribute`)."""
        try:
            return self.__dict__["feature_names_in_"]
        except KeyError:
            raise AttributeError("feature_names_in_ is set by fit") from None

    # -- model files --------------------------------------------------------------------
    def _engine(self, engine: Any) -> Any:
        """The engine of one call: ``engine``, else the ``engine`` parameter, else local."""
        from streamlearn.engine import LocalEngine, resolve_engine

        if engine is not None:
            return resolve_engine(engine)
        if getattr(self, "engine", None) is not None:
            return resolve_engine(self.engine)
        return LocalEngine(chunk_rows=getattr(self, "chunk_rows", None),
                           progress=getattr(self, "progress", None))

    def save(self, path: str | os.PathLike[str]) -> Path | str:
        """Save the fitted model to a file (no pickle; see :func:`streamlearn.io.save_model`).

        Parameters
        ----------
        path : str or path-like
            Destination, conventionally ``*.slm``: a local path or an fsspec URL.

        Returns
        -------
        Path or str
            The local path written, or the URL.
        """
        from streamlearn.io import save_model

        self._check_fitted()
        return save_model(self, path)

    def _set_categories(self, categories: Mapping[str, Sequence[Any]]) -> None:
        """Keep the category lists read from a model file (see :func:`record_categories`)."""
        record_categories(self, categories)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Load a model saved by :meth:`save`; the file must hold this class.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        The estimator, ready to predict.
        """
        from streamlearn.io import load_model

        return load_model(path, expected=cls)


# -- training data ------------------------------------------------------------------------
def classification_dataset(data: Any, y: Any = None, sample_weight: Any = None,
                           chunk_rows: int | None = None, nan_policy: Any = "raise",
                           categories: Mapping[str, Sequence[Any]] | None = None,
                           classes: Sequence[Any] | None = None,
                           accept_sparse: bool = False,
                           reading: Mapping[str, Any] | None = None,
                           features: Sequence[str] | None = None) -> Dataset:
    """Open the training data of a classifier.

    Parameters
    ----------
    data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array-like X
    y : array-like or str, optional
        Labels (with in-memory ``data``) or the target column name; not with a Dataset.
    sample_weight : array-like or str, optional
        Weights (with in-memory ``data``) or the weight column name; not with a Dataset.
    chunk_rows : int, optional
        Rows per chunk for data opened here.
    nan_policy : "raise", "drop", "impute" or float
        NaN and missing values (``None``, ``pd.NA``, nulls) in features opened here: refuse,
        drop the row, read as missing values (``"impute"``, for the model's map:
        :mod:`streamlearn.features.missing_values`), or replace by the number (but in a
        categorical column read as indicator columns, where a missing value sets no
        indicator).
    categories : mapping of str to sequence, optional
        Category lists of categorical features (a fitted model's ``categories_``); by
        default found in the data. A Dataset is re-coded with them when its own differ.
    classes : sequence, optional
        Every label, for data opened here (the first call of an online fit, whose rows may
        not hold them all); by default the labels found in ``y``.
    accept_sparse : bool
        Take a ``scipy.sparse`` X as sparse rows; else refuse it as scikit-learn does.
    reading : mapping, optional
        More :func:`~streamlearn.data.open_dataset` options for a path: how a fitted
        model's training data was read (:func:`~streamlearn.data.open.reading_of`).
    features : sequence of str, optional
        The feature columns to take from a table or path, by name (a fitted model's).

    Returns
    -------
    Dataset
        With a classification target. A Dataset whose task was inferred as regression
        (float labels) is re-read for classification: integral values are class labels,
        others raise ``Unknown label type: continuous``.
    """
    return _task_dataset(data, y, sample_weight, chunk_rows, "classification",
                         "a classifier needs class labels", nan_policy, categories, classes,
                         accept_sparse, reading, features)


def regression_dataset(data: Any, y: Any = None, sample_weight: Any = None,
                       chunk_rows: int | None = None, nan_policy: Any = "raise",
                       categories: Mapping[str, Sequence[Any]] | None = None,
                       accept_sparse: bool = False,
                       reading: Mapping[str, Any] | None = None,
                       features: Sequence[str] | None = None) -> Dataset:
    """Open the training data of a regressor (see :func:`classification_dataset`)."""
    return _task_dataset(data, y, sample_weight, chunk_rows, "regression",
                         "a regressor needs a numeric target", nan_policy, categories,
                         accept_sparse=accept_sparse, reading=reading, features=features)


def _task_dataset(data: Any, y: Any, sample_weight: Any, chunk_rows: int | None, task: str,
                  need: str, nan_policy: Any = "raise",
                  categories: Mapping[str, Sequence[Any]] | None = None,
                  classes: Sequence[Any] | None = None,
                  accept_sparse: bool = False,
                  reading: Mapping[str, Any] | None = None,
                  features: Sequence[str] | None = None) -> Dataset:
    """Open training data (or take a Dataset) and check that its target suits ``task``;
    ``reading``: more :func:`open_dataset` options for a path (a model's
    :func:`~streamlearn.data.open.reading_of`); ``features``: the feature columns to take
    from a table or path, by name."""
    if isinstance(data, Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError("with a Dataset, give the target and weights to open_dataset "
                             "(target=..., weight=...), not to fit")
        dataset = data
        if dataset.task_inferred and dataset.task is not None and dataset.task != task and (
                task == "classification" or _numeric_target(dataset)):
            # float labels for a classifier, integer targets for a regressor: read the
            # target for this task (non-integral labels raise "Unknown label type")
            dataset = dataset.with_task(task)  # type: ignore[arg-type]
        if categories:
            dataset = dataset.with_categories(categories)
    else:
        if _module(data) == "polars":
            data = data.to_arrow() if hasattr(data, "to_arrow") else data
        if is_array_input(data):
            data, y, sample_weight = check_array_input(data, y, sample_weight, task,
                                                       nan_policy, accept_sparse)
        elif y is not None and not isinstance(y, str) and not _is_dask(y):
            keep = _rows_to_keep(y, sample_weight, task, nan_policy)
            if keep is not None and _is_dask(data):
                y, sample_weight = _dask_side_values(y, sample_weight, keep, task)
            else:
                data, y, sample_weight = _drop_table_rows(data, y, sample_weight, keep)
                y = check_target(y, task)
                if sample_weight is not None and not isinstance(sample_weight, str) and \
                        not _is_dask(sample_weight):
                    sample_weight = check_sample_weight(sample_weight, len(y))
        if task == "regression" and isinstance(y, np.ndarray):
            # checked whole by check_target (its warning of a coarse target given): cast
            # here as every chunk would cast it, so that the walks do not warn again
            y = y.astype(np.float32)
        data, y, sample_weight = _attach_columns(data, y, sample_weight)
        more = dict(reading or {}) if isinstance(data, str | os.PathLike) else {}
        if "features" in more:  # hashed columns: the categories belong to plain columns
            categories = None
        elif features is not None:  # a fitted model's columns, by name
            more["features"] = list(features)
        dataset = open_dataset(data, target=y, weight=sample_weight, chunk_rows=chunk_rows,
                               task=task if y is not None else None, nan_policy=nan_policy,
                               categories=categories, classes=classes, **more)
    if dataset.task != task:
        what = "no target" if dataset.task is None else f"a {dataset.task} target"
        raise LabelError(f"{need} but the data has {what}; open it with "
                         f"open_dataset(..., target=..., task={task!r})")
    return dataset


# -- in-memory inputs, checked as scikit-learn checks them ----------------------------------
def is_array_input(data: Any) -> bool:
    """Whether ``data`` is a plain array-like (array, list, sparse matrix), not a table or store.

    Such inputs are checked with scikit-learn's own validation, so its estimators' errors
    and warnings (1-D X, complex values, sparse input, a column-vector ``y``) are the same.
    """
    if isinstance(data, (np.ndarray, list, tuple)) or sp.issparse(data):
        return True
    module = type(data).__module__.split(".")[0]
    return module not in ("pandas", "pyarrow", "dask", "zarr", "polars") and (
        hasattr(data, "__array__") and not isinstance(data, (str, os.PathLike)))


def numeric_array(X: Any, **kwargs: Any) -> Any:
    """scikit-learn's ``check_array(X, **kwargs)``, where a value that is not a number
    raises a :class:`~streamlearn.errors.DataError` (a ``ValueError``) that names it, its
    feature and its row, instead of numpy's ``could not convert string to float``."""
    try:
        return check_array(X, **kwargs)
    except ValueError as error:
        if "could not convert" not in str(error):
            raise
        cells = np.asarray(X, dtype=object)
        if cells.ndim != 2:
            raise
        for c in range(cells.shape[1]):
            for r, value in enumerate(cells[:, c].tolist()):
                try:
                    float(value)
                except (TypeError, ValueError):
                    raise DataError(
                        f"X holds {value!r} in feature 'x{c}' at row {r}, which is not a "
                        "number; give numbers, or a pandas DataFrame, whose string and "
                        "categorical columns are read as categories") from error
        raise


def check_array_input(X: Any, y: Any, sample_weight: Any, task: str,
                      nan_policy: Any = "raise",
                      accept_sparse: bool = False) -> tuple[Any, Any, Any]:
    """Validate in-memory training rows: a 2-D numeric float32 array, a 1-D target, weights.

    Parameters
    ----------
    X : array-like of shape (n, n_features)
    y : array-like of shape (n,) or (n, 1), or str
    sample_weight : array-like of shape (n,), str or None
    task : {"classification", "regression"}
    nan_policy : "raise", "drop", "impute" or float
        With "raise" NaN and infinite values of X are refused here. A missing target (NaN,
        infinity, None, ``pd.NA``) drops its row (with its X and weight) under "drop", as
        streamed data does; else a regressor's raises a ``DataError`` naming the first such
        row and a classifier's a ``LabelError``.
        A NaN or infinite weight likewise drops its row under "drop", as a weight
        column's does, and raises a ``DataError`` naming the first such row otherwise.
    accept_sparse : bool
        Keep a ``scipy.sparse`` X sparse (its stored values checked); else refuse it.

    Returns
    -------
    X : ndarray, float32, or scipy.sparse matrix
    y : ndarray or str
    sample_weight : ndarray, str or None
    """
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None")
    X = numeric_array(X, accept_sparse=["csr", "csc", "coo"] if accept_sparse else False,
                      dtype=[np.float32, np.float64], ensure_all_finite=False,
                      ensure_min_samples=1, ensure_min_features=1)
    if sp.issparse(X):
        if nan_policy == "raise":
            _check_stored_values(X)
    else:
        given = X
        warn_of_coarse_columns(matrix_spans(given), default_feature_names(given.shape[1]),
                               "X")
        with np.errstate(over="ignore"):  # a value beyond float32's range is named below
            X = np.ascontiguousarray(X, dtype=np.float32)
    if nan_policy == "raise" and not sp.issparse(X):
        flat = first_nonfinite(X)
        if flat >= 0:
            r, c = divmod(flat, X.shape[1])
            raise DataError(f"Input X contains {nonfinite_value(given[r, c])} in feature "
                            f"'x{c}' at row {r}; fit with nan_policy='impute' to read NaN "
                            "as a missing value, 'drop' to skip such rows or a number to "
                            "fill them, or replace such values")
    if isinstance(y, str):
        return X, y, sample_weight
    keep = _rows_to_keep(y, sample_weight, task, nan_policy)
    if keep is not None:
        check_consistent_length(X, y)
        if sample_weight is not None and not isinstance(sample_weight, str):
            sample_weight = _kept_weights(sample_weight, keep)
        X = (X.tocsr() if sp.issparse(X) else X)[keep]
        y = _kept_labels(y, keep)
    y = check_target(y, task)
    check_consistent_length(X, y)
    if sample_weight is not None and not isinstance(sample_weight, str):
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
    return X, y, sample_weight


def _check_stored_values(X: Any) -> None:
    """Refuse a ``scipy.sparse`` X whose stored values are not finite in float32, naming
    the first such one (by row, then column), as a dense X's is named."""
    with np.errstate(over="ignore"):  # a value beyond float32's range is named below
        if first_nonfinite(X.data.astype(np.float32)) < 0:
            return
        entries = X.tocoo()
        bad = np.flatnonzero(~np.isfinite(entries.data.astype(np.float32)))
    first = bad[np.lexsort((entries.col[bad], entries.row[bad]))[0]]
    r, c = int(entries.row[first]), int(entries.col[first])
    raise DataError(f"Input X contains {nonfinite_value(entries.data[first])} in feature "
                    f"'x{c}' at row {r} (a stored value); drop or replace such values, or "
                    "fit with nan_policy='drop' or a number")


def check_target(y: Any, task: str) -> np.ndarray:
    """A 1-D target of the right kind; a column vector warns as in scikit-learn.

    A classifier refuses a continuous target (``Unknown label type: continuous``) and a
    regressor a non-numeric or non-finite one, or one beyond float32's range (in which the
    models compute). A regressor's target that the cast to float32 leaves coarse warns
    (:mod:`streamlearn.data.precision`), checked whole.
    """
    if task == "regression":
        kind = np.asarray(y).dtype.kind
        if kind not in "biuf" and not (kind == "O" and _all_numbers(y)):
            raise LabelError(f"a regressor needs a numeric target; y holds {np.asarray(y).dtype} "
                             "values")
        y = check_array(y, ensure_2d=False, dtype="numeric", ensure_all_finite=True,
                        input_name="y")
        y = column_or_1d(y, warn=True).astype(np.float64, copy=False)
        with np.errstate(over="ignore"):  # a value beyond float32's range is named below
            row = first_nonfinite(y.astype(np.float32))
        if row >= 0:
            raise DataError(f"Input y contains {nonfinite_value(y[row], 'target')} at row {row}")
        warn_of_coarse_columns(target_spans(y), ["y"], "the rows given", role="target")
        return y
    _refuse_missing_labels(y)
    y = _numpy_labels(y)
    y = column_or_1d(np.asarray(y, dtype=object) if _is_mixed(y) else y, warn=True)
    check_classification_targets(y)
    return y


def _numpy_labels(y: Any) -> Any:
    """Labels of a pandas nullable integer or boolean dtype (``Int64``, ``boolean``,
    ``int64[pyarrow]``), none missing, as numpy numbers or booleans of that type, so that
    the classes keep the labels' type, as the same column's do when it is the target of a
    table (scikit-learn's ``column_or_1d`` makes them floats); other labels as given."""
    numpy_dtype = getattr(getattr(y, "dtype", None), "numpy_dtype", None)
    if isinstance(getattr(y, "dtype", None), np.dtype) or numpy_dtype is None or \
            np.dtype(numpy_dtype).kind not in "biu" or not hasattr(y, "to_numpy"):
        return y
    return y.to_numpy(dtype=numpy_dtype)


def _kept_labels(y: Any, keep: np.ndarray) -> Any:
    """The labels of the rows ``keep``; a pandas column or array keeps its dtype (a
    nullable one, its missing labels dropped, then reads as its numpy type:
    :func:`_numpy_labels`)."""
    import pandas as pd

    if isinstance(y, pd.Series):
        return y.iloc[np.flatnonzero(keep)]
    if isinstance(y, pd.api.extensions.ExtensionArray):
        return y[keep]
    return _native_labels(np.ravel(y)[keep])


def _native_labels(labels: np.ndarray) -> np.ndarray:
    """Object labels that are all integers, all booleans or all floats once their missing
    ones are dropped, as that numpy type: a None among numbers made the array ``object``,
    which scikit-learn's label checks read as an unknown type. Text and mixed labels are
    returned as given."""
    if labels.dtype != object or labels.size == 0:
        return labels
    booleans = (bool, np.bool_)
    types = {type(v) for v in labels}
    if all(issubclass(t, booleans) for t in types):
        return labels.astype(bool)
    if any(issubclass(t, booleans) for t in types):
        return labels  # booleans among numbers: no one type
    for numbers in ((int, np.integer), (float, np.floating)):
        if all(issubclass(t, numbers) for t in types):
            return np.asarray(labels.tolist())
    return labels


def _rows_to_keep(y: Any, sample_weight: Any, task: str,
                  nan_policy: Any) -> np.ndarray | None:
    """The rows to keep of in-memory data under ``nan_policy="drop"``: those with a target
    (:func:`_rows_with_targets`) and a finite weight, as a weight column's rows are dropped;
    None when every row is kept, or to leave missing values to the checks that name them.

    Raises
    ------
    DataError
        No row left to train on.
    """
    keep = _rows_with_targets(y, task, nan_policy)
    if nan_policy != "drop" or sample_weight is None or isinstance(sample_weight, str) \
            or _is_dask(sample_weight):
        return keep
    w = np.asarray(sample_weight, dtype=np.float64)
    n_rows = np.size(y)
    if w.ndim != 1 or w.shape[0] != n_rows or np.isfinite(w).all():
        return keep  # a wrong shape is refused later, as it is
    keep = np.isfinite(w) if keep is None else keep & np.isfinite(w)
    if not keep.any():
        raise DataError(f"no row of the {n_rows} has both a target and a finite "
                        "sample_weight; nan_policy='drop' left nothing to train on")
    return keep


def _rows_with_targets(y: Any, task: str, nan_policy: Any) -> np.ndarray | None:
    """The rows to keep of an in-memory target with missing values (NaN, infinity, None,
    ``pd.NA``) under ``nan_policy="drop"``; None when none is missing or, for a classifier
    under another policy, to leave them to :func:`check_target`'s ``LabelError``.

    Raises
    ------
    DataError
        A regressor's missing target under another policy (naming the first row), or no
        row left to train on.
    """
    missing = _missing_targets(y)
    if missing is None or not missing.any():
        return None
    if nan_policy != "drop":
        if task != "regression":
            return None
        r = int(np.flatnonzero(missing)[0])
        more = int(missing.sum()) - 1
        raise DataError(f"Input y contains {_missing_value(np.ravel(y)[r])} at row {r}"
                        f"{f' and {more} more rows' if more else ''}; drop or replace such "
                        "targets, or fit with nan_policy='drop' to skip their rows")
    if missing.all():
        raise DataError(f"Input y has no target on any of its {missing.size} rows (all NaN, "
                        "infinite or missing); nan_policy='drop' left nothing to train on")
    return ~missing


def _missing_targets(y: Any) -> np.ndarray | None:
    """Which rows of a 1-D (or column) target have none: NaN, infinity, None or ``pd.NA``;
    None for a target of another shape (refused later as scikit-learn refuses it)."""
    import pandas as pd

    values = np.asarray(y)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        return None
    if values.dtype.kind == "f":
        return ~np.isfinite(values)
    if values.dtype.kind != "O":
        return np.zeros(values.shape[0], dtype=bool)
    return np.asarray(pd.isna(values), dtype=bool) | np.array(
        [isinstance(v, float | np.floating) and bool(np.isinf(v)) for v in values.tolist()],
        dtype=bool)


def _missing_value(value: Any) -> str:
    """A missing target named for a message: NaN, infinity, or the missing value."""
    if isinstance(value, float | np.floating):
        return nonfinite_value(value)
    return f"a missing value ({value!r})"


def _refuse_missing_labels(y: Any) -> None:
    """A ``LabelError`` naming the first missing label (None, NaN, ``pd.NA``) of ``y``."""
    import pandas as pd

    values = np.asarray(y)
    if values.dtype.kind not in "fO":
        return
    missing = np.flatnonzero(pd.isna(values.reshape(-1)))
    if missing.size:
        more = f" and {missing.size - 1} more" if missing.size > 1 else ""
        raise LabelError(f"y has no label at row {int(missing[0])}{more} (None or NaN); a "
                         "classifier needs a label on every row: drop those rows or label "
                         "them")


def _all_numbers(y: Any) -> bool:
    return all(isinstance(v, (int, float, np.number)) for v in np.asarray(y).reshape(-1))


def _is_mixed(y: Any) -> bool:
    return isinstance(y, (list, tuple)) and len({type(v) for v in y}) > 1


def check_sample_weight(sample_weight: Any, n_rows: int, all_zero: bool = False) -> np.ndarray:
    """Weights of ``n_rows`` rows: 1-D, finite within float32's range (in which the models
    compute), non-negative, not all zero (unless ``all_zero``: a later ``partial_fit``
    call may weigh nothing)."""
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_rows, float(w))
    if w.ndim != 1 or w.shape[0] != n_rows:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_rows},)")
    if not np.isfinite(w).all():
        bad = np.flatnonzero(~np.isfinite(w))
        raise DataError(f"sample_weight contains NaN or infinite values (first at row "
                        f"{int(bad[0])}, {bad.size} in all); drop or replace them, or fit "
                        "with nan_policy='drop' to skip their rows")
    with np.errstate(over="ignore"):  # a value beyond float32's range is named below
        row = first_nonfinite(w.astype(np.float32))
    if row >= 0:
        raise DataError(f"sample_weight contains {nonfinite_value(w[row], 'weights')} at row "
                        f"{row}")
    if (w < 0).any():
        row = int(np.flatnonzero(w < 0)[0])
        raise DataError(f"Negative values in data passed to sample_weight: {w[row]:g} at row "
                        f"{row}; weights are non-negative")
    if not all_zero and not (w > 0).any():
        raise ValueError("sample_weight is zero for every row; at least one row needs a "
                         "non-zero weight")
    return w


def _numeric_target(dataset: Dataset) -> bool:
    kind = dataset.source.kinds.get(dataset.target) if dataset.target else None
    return kind is not None and kind.is_numeric


def resolve_nan_policy(nan_policy: Any, data: Any, y: Any = None,
                       sample_weight: Any = None) -> Any:
    """A ``fit``'s ``nan_policy``, with ``"auto"`` (the default) resolved: ``"impute"``
    for training data held in memory (an array, a pandas, polars or pyarrow table) with a
    missing feature value, where finding one costs no read; else ``"raise"``. A file, a
    store or a dask collection is read as under ``"raise"`` first, and when a missing
    value turns up, read again under ``"impute"`` (:func:`retries_reading_gaps`): data
    without gaps pay nothing, and learning how to read the gaps costs the map's pass and
    the rows read before the first gap."""
    if not (isinstance(nan_policy, str) and nan_policy == "auto"):
        return nan_policy
    columns = tuple(str(c) for c in (y, sample_weight) if isinstance(c, str))
    return "impute" if has_missing_features(data, columns) else "raise"


def retries_reading_gaps(nan_policy: Any, data: Any,
                         checkpoint: str | os.PathLike[str] | None = None) -> bool:
    """Whether a fit of this ``nan_policy`` that finds a missing feature value (a
    :class:`~streamlearn.errors.MissingValueError`) starts again under ``"impute"``:
    under ``"auto"``, for data the fit opens itself (a path, a URL, a dask collection).
    A Dataset keeps the policy it was opened with, and a fit with a checkpoint refuses
    the gap as ``"raise"`` does: it resumes only as the fit that wrote the checkpoint read
    the rows."""
    return (isinstance(nan_policy, str) and nan_policy == "auto"
            and not isinstance(data, Dataset) and checkpoint is None)


def warn_of_gaps_found(error: MissingValueError) -> None:
    """The warning of a fit that starts again under ``"impute"``: where the first missing
    value was, and how to skip the first try or refuse the gaps."""
    found = str(error).split("; pass ", 1)[0]
    warnings.warn(f"found a missing value ({found}): the fit starts again, reading NaN "
                  "as missing values (nan_policy='impute': one pass more learns how to "
                  "fill them); pass nan_policy='impute' to skip the first try, or "
                  "nan_policy='raise' to refuse missing values", UserWarning,
                  stacklevel=caller_stacklevel())


def _module(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _is_dask(obj: Any) -> bool:
    return _module(obj) in ("dask", "dask_expr")


def over_dask_blocks(method: Callable[..., Any]) -> Callable[..., Any]:
    """A prediction method that takes a dask array or DataFrame lazily, block by block.

    A dask array (its columns joined into one block) gives a dask array of the method's
    output per row block; a dask DataFrame gives a dask Series (one output per row) or
    DataFrame (one column per class or output) per partition, with the partition's index.
    Nothing is computed but one row, of the first partition that has one, to learn the
    output's shape and type. Other inputs go to the method as they are.
    """

    @functools.wraps(method)
    def wrapper(self: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_dask(X):
            return method(self, X, *args, **kwargs)

        frame = hasattr(X, "map_partitions") and hasattr(X, "columns")
        if (not in_library_rows() and has_named_features(self)
                and not (frame and labels_are_names(list(X.columns)))):
            # once for the collection, not in every block
            warn_unnamed_rows(type(self).__name__)

        def apply(block: Any) -> Any:
            with library_rows():  # the user's rows, warned about above
                return method(self, block, *args, **kwargs)

        if frame:
            return _frame_outputs(X, apply)
        return _array_outputs(X, apply)

    return wrapper


def _array_outputs(X: Any, apply: Callable[[Any], np.ndarray]) -> Any:
    """``apply`` over the row blocks of a 2-D dask array, lazily."""
    if X.ndim != 2:
        raise SchemaError(f"X must be 2-D (rows x features), got a dask array of shape "
                          f"{X.shape}")
    X = X.rechunk({1: -1})  # each block holds whole rows
    probe = np.asarray(apply(np.zeros((1, X.shape[1]), dtype=X.dtype)))
    if probe.ndim == 1:
        return X.map_blocks(apply, dtype=probe.dtype, drop_axis=1, chunks=(X.chunks[0],))
    return X.map_blocks(apply, dtype=probe.dtype,
                        chunks=(X.chunks[0], (probe.shape[1],)))


def _frame_outputs(X: Any, apply: Callable[[Any], np.ndarray]) -> Any:
    """``apply`` over the partitions of a dask DataFrame, lazily, as a dask Series or
    DataFrame indexed like the partitions."""
    import pandas as pd

    row = None
    for i in range(X.npartitions):
        row = X.partitions[i].head(1)
        if len(row):
            break
    if row is None or not len(row):
        raise DataError("the dask DataFrame holds no rows to predict")
    probe = np.asarray(apply(row))

    def outputs(part: pd.DataFrame) -> pd.Series | pd.DataFrame:
        values = (apply(part) if len(part)
                  else np.empty((0, *probe.shape[1:]), dtype=probe.dtype))
        if probe.ndim == 1:
            return pd.Series(values, index=part.index)
        return pd.DataFrame(values, index=part.index)

    meta = (pd.Series(np.empty(0, dtype=probe.dtype)) if probe.ndim == 1
            else pd.DataFrame(np.empty((0, probe.shape[1]), dtype=probe.dtype)))
    return X.map_partitions(outputs, meta=meta)


def _in_memory(model: Any, data: Any, y: Any) -> bool:
    """Whether ``score`` takes ``data`` and ``y`` as rows in memory, rather than streaming
    them as a dataset.

    A dask collection ``data`` is streamed, as ``fit`` streams it (by the ``engine``, its
    blocks read one at a time), unless its columns have no names (a dask array, labels
    ``0, 1, ...``) and the model reads columns by name: it is then predicted by position,
    block by block, as ``predict`` takes it, and only the predictions and ``y`` are held.
    """
    if y is None or isinstance(y, str) or isinstance(data, Dataset):
        return False
    if not _is_dask(data):
        return True
    named = hasattr(data, "columns") and labels_are_names(list(data.columns))
    return named_features(model) is not None and not named


class ClassifierScore(ClassifierMixin):
    """``score`` of a classifier: accuracy, on in-memory rows or streamed over a dataset."""

    _two_classes_only: ClassVar[bool] = False

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        assert tags.classifier_tags is not None
        tags.classifier_tags.multi_class = not self._two_classes_only
        return tags

    @over_dask_blocks
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        proba = self.predict_proba(X)  # type: ignore[attr-defined]
        with np.errstate(divide="ignore"):
            return np.log(proba)

    def score(self, data: Any, y: Any = None, *, sample_weight: Any = None,
              engine: Any = None) -> float:
        """Accuracy on in-memory rows, or streamed over a dataset.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Labels of in-memory ``data`` (or of a dask collection: a dask Series or
            array), or the target column's name.
        sample_weight : array-like or str, optional
            Weights of the rows.
        engine : engine, optional
            Runs the evaluation pass over a dataset or a dask collection, streamed as
            ``fit`` streams it (but a collection without column names, given to a model
            fitted on named columns, is predicted by position as ``predict`` takes it).

        Returns
        -------
        float
        """
        if _in_memory(self, data, y):
            predicted = np.asarray(self.predict(data))  # a dask collection's, computed
            truth = _labels_like(np.asarray(self.classes_), y, predicted.shape[0])
            correct = (predicted == truth).astype(np.float64)
            if sample_weight is None:
                return float(correct.mean())
            w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
            return float((w * correct).sum() / w.sum())
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows,
                                         nan_policy=self._reading_nan_policy,
                                         categories=getattr(self, "categories_", None),
                                         reading=_reading(self, data),
                                         features=named_features(self))
        return float(evaluate(self, dataset, engine=self._engine(engine))["accuracy"])


class RegressorScore(RegressorMixin):
    """``score`` of a regressor: R^2, on in-memory rows or streamed over a dataset."""

    def score(self, data: Any, y: Any = None, *, sample_weight: Any = None,
              engine: Any = None) -> float:
        """Coefficient of determination R^2, on in-memory rows or streamed over a dataset.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Targets of in-memory ``data`` (or of a dask collection: a dask Series or
            array), or the target column's name.
        sample_weight : array-like or str, optional
            Weights of the rows.
        engine : engine, optional
            Runs the evaluation pass over a dataset or a dask collection, streamed as
            ``fit`` streams it (but a collection without column names, given to a model
            fitted on named columns, is predicted by position as ``predict`` takes it).

        Returns
        -------
        float
            For a constant target, 1 when every prediction equals it, else 0 (as
            scikit-learn's ``r2_score``).
        """
        if _in_memory(self, data, y):
            truth = np.asarray(y, dtype=np.float64).reshape(-1)
            predicted = np.asarray(self.predict(data), dtype=np.float64)
            _same_length(truth, predicted.shape[0])
            w = (np.ones_like(truth) if sample_weight is None
                 else np.asarray(sample_weight, dtype=np.float64).reshape(-1))
            resid = truth - predicted
            mean = (w @ truth) / w.sum()
            total = w @ (truth - mean) ** 2
            if total > 0:
                return float(1.0 - (w @ resid**2) / total)
            return 1.0 if not np.any(resid) else 0.0  # a constant target, as scikit-learn
        dataset = regression_dataset(data, y, sample_weight, self.chunk_rows,
                                     nan_policy=self._reading_nan_policy,
                                     categories=getattr(self, "categories_", None),
                                     reading=_reading(self, data),
                                     features=named_features(self))
        return float(evaluate(self, dataset, engine=self._engine(engine))["r2"])


def _as_kind_of(classes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Object-dtype labels as the classes' kind (numbers or text), where they convert."""
    if labels.dtype.kind != "O":
        return labels
    try:
        return labels.astype(classes.dtype if classes.dtype.kind in "biuf" else str)
    except (TypeError, ValueError):
        return labels.astype(str)


def _same_length(truth: np.ndarray, n_rows: int) -> None:
    if truth.shape[0] != n_rows:
        raise ValueError(f"y holds {truth.shape[0]} values but X has {n_rows} rows")


def _labels_like(classes: np.ndarray, y: Any, n_rows: int) -> np.ndarray:
    """In-memory labels to compare with predictions of a model of ``classes``: 1-D, one per
    row, object arrays as the classes' kind; text against numbers is refused by name."""
    truth = np.asarray(y).reshape(-1)
    _same_length(truth, n_rows)
    numeric = classes.dtype.kind in "biuf"
    truth = _as_kind_of(classes, truth)
    text = truth.dtype.kind in "USO"
    if numeric == text:
        kind = "numbers" if numeric else "text"
        raise LabelError(f"the model's classes are {kind} ({_shown(classes.tolist())}) but y "
                         f"holds {'text' if text else 'numbers'} ({truth.dtype})")
    return truth


def _reading(model: Any, data: Any) -> dict[str, Any] | None:
    """How a path is read for ``model`` (:func:`~streamlearn.data.open.reading_for`)."""
    return reading_for(model, data) if isinstance(data, str | os.PathLike) else None


def _fresh_name(base: str, taken: list[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def _drop_table_rows(data: Any, y: Any, sample_weight: Any,
                     keep: np.ndarray | None) -> tuple[Any, Any, Any]:
    """The rows ``keep`` of a table (pandas or pyarrow) with its target and weight arrays;
    everything as given when ``keep`` is None or does not match the table's rows."""
    if keep is None:
        return data, y, sample_weight
    is_pandas = type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "iloc")
    is_arrow = hasattr(data, "filter") and hasattr(data, "num_rows")
    n_rows = len(data) if is_pandas else data.num_rows if is_arrow else None
    if n_rows != keep.size:
        if n_rows is None:
            raise DataError(f"row {int(np.flatnonzero(~keep)[0])} has no target (or a NaN or "
                            "infinite sample_weight); "
                            f"nan_policy='drop' drops such rows of arrays, pandas and pyarrow "
                            f"tables and dask collections, not of a {type(data).__name__}: "
                            "drop them before fit")
        return data, y, sample_weight  # the lengths are refused later, as they are
    rows = np.flatnonzero(keep)
    data = data.iloc[rows] if is_pandas else data.take(rows)
    if sample_weight is not None and not isinstance(sample_weight, str) and \
            not _is_dask(sample_weight):
        sample_weight = _kept_weights(sample_weight, keep)
    return data, _kept_labels(y, keep), sample_weight


def _dask_side_values(y: Any, sample_weight: Any, keep: np.ndarray,
                      task: str) -> tuple[Any, Any]:
    """In-memory targets and weights given beside a dask collection, of which
    ``nan_policy="drop"`` leaves out the rows not in ``keep``: checked on the rows kept,
    but one value per row of the collection still, the missing ones as NaN (a float or
    regression target, weights), ``pd.NA`` (integer or boolean labels, of a nullable
    type, which keeps the classes' type) or None (other labels).

    A collection's rows are read partition by partition (or block by block) when a pass
    needs them, so they are not dropped here but by the dataset as it reads them, as a
    table's target column with missing values is: each partition is matched with its own
    values by position, and its row count stays the collection's.
    """
    import pandas as pd

    checked = check_target(_kept_labels(y, keep), task)
    full: Any
    if checked.dtype.kind == "f" or task == "regression":
        full = np.full(keep.size, np.nan)
        full[keep] = checked
    elif checked.dtype.kind in "biu":
        full = pd.array(np.zeros(keep.size, dtype=checked.dtype),
                        dtype="boolean" if checked.dtype.kind == "b" else "Int64")
        full[keep] = checked
        full[~keep] = pd.NA
    else:
        full = np.full(keep.size, None, dtype=object)
        full[keep] = checked
    if sample_weight is None or isinstance(sample_weight, str) or _is_dask(sample_weight):
        return full, sample_weight
    weights = np.full(keep.size, np.nan)
    weights[keep] = _kept_weights(sample_weight, keep)
    return full, weights


def _kept_weights(sample_weight: Any, keep: np.ndarray) -> np.ndarray:
    """In-memory weights of the rows ``keep``, checked: a dropped row's may be missing."""
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 1 and w.shape[0] == keep.size:
        return check_sample_weight(w[keep], int(keep.sum()))
    return check_sample_weight(w, keep.size)[keep]


def _attach_columns(data: Any, y: Any, sample_weight: Any) -> tuple[Any, Any, Any]:
    """Add label and weight arrays to a table as columns (tables take column names only)."""
    is_pandas = type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "assign")
    is_arrow = hasattr(data, "append_column") and hasattr(data, "column_names")
    if not (is_pandas or is_arrow):
        return data, y, sample_weight
    names = [str(c) for c in (data.columns if is_pandas else data.column_names)]
    out = []
    for base, values in (("y", y), ("weight", sample_weight)):
        if values is None or isinstance(values, str):
            out.append(values)
            continue
        name = _fresh_name(base, names)
        names.append(name)
        column = np.asarray(values)
        if column.dtype.kind == "O":
            column = column.astype(str)
        if is_pandas:
            data = data.assign(**{name: column})
        else:
            data = data.append_column(name, _arrow_array(column))
        out.append(name)
    return data, out[0], out[1]


def _arrow_array(values: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.array(values)


# -- labels -------------------------------------------------------------------------------
def sorted_classes(labels: Any) -> np.ndarray:
    """Sorted distinct labels (strings as a fixed-width unicode array).

    Parameters
    ----------
    labels : array-like

    Returns
    -------
    ndarray
    """
    values = np.asarray(labels)
    if values.ndim != 1:
        values = values.reshape(-1)
    if values.dtype.kind == "O":
        values = values.astype(str)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise LabelError("labels contain NaN or infinite values")
    return np.unique(values)


def encode_labels(y: Any, classes: np.ndarray) -> np.ndarray:
    """Class codes (int32, positions in ``classes``) of the labels ``y``.

    Parameters
    ----------
    y : array-like of shape (n,)
    classes : ndarray
        The known labels.

    Returns
    -------
    ndarray of shape (n,), int32
    """
    labels = _as_kind_of(np.asarray(classes), np.asarray(y).reshape(-1))
    codes = label_codes(labels, classes)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        label = labels[bad[0]]
        label = label.item() if isinstance(label, np.generic) else label
        raise LabelError(f"label {label!r} (row {int(bad[0])}) is not one "
                         f"of the classes {_shown(classes.tolist())}")
    return codes.astype(np.int32)


def storable_classes(classes: np.ndarray) -> np.ndarray:
    """Labels as an array a model file can hold (no Python objects)."""
    classes = np.asarray(classes)
    return classes.astype(str) if classes.dtype.hasobject else classes


# -- prediction inputs --------------------------------------------------------------------
def check_features(X: Any, feature_names: tuple[str, ...], owner: str = "model",
                   categories: Mapping[str, Sequence[Any]] | None = None,
                   training: bool = False,
                   unseen: Callable[[str, int], str] | None = None,
                   named: bool | None = None, allow_missing: bool = False) -> np.ndarray:
    """Validate prediction inputs against the features seen in ``fit``.

    When ``fit`` saw named columns, a table with column names (pandas, polars, pyarrow)
    must hold exactly those columns (they are put in fit order, by name). Otherwise, and for
    plain arrays, columns are taken by position and only their number is checked (a table
    with string column names then gets scikit-learn's warning that the model was fitted
    without feature names).

    Categorical features (those with a category list, from ``categories`` or carried by a
    :class:`FeatureNames` ``feature_names``) are coded by the categories seen in ``fit``:
    a value's position in its list (a numeric array is taken to hold those codes already).
    A value not seen in ``fit`` gets the reserved code
    ``len(categories)``, one past the last, with a ``UserWarning`` naming the column and row
    and saying what the model does with it (``unseen``);
    a missing value is refused like NaN. Rows to train on (``training``) refuse such a
    value instead: the categories are fixed by the model's first training call.

    Parameters
    ----------
    X : array-like of shape (n, n_features) or a table with named columns
    feature_names : tuple of str
        Feature names seen in ``fit``.
    owner : str
        Name of the estimator, for messages.
    categories : mapping of str to sequence, optional
        Category lists of the categorical features; by default those ``feature_names``
        carries.
    training : bool
        The rows are trained on (a ``partial_fit`` call after the first): a category not
        in its list (or the code ``len(categories)`` in numeric rows) raises a
        ``DataError`` naming the column and values, and how to declare every category on
        the first call.
    unseen : callable, optional
        ``unseen(feature, k)``: what the model does with a category unseen in fit of a
        feature of ``k`` categories, said by the warning ("they ..."); by default
        :func:`unseen_code_reading`, the reserved code.
    named : bool, optional
        Whether ``fit`` saw named columns (:func:`has_named_features`); by default, unless
        ``feature_names`` are ``x0, x1, ...`` (a table holding just those columns, in any
        order, is then read by name).
    allow_missing : bool
        NaN (and a table's missing value) is a missing value the model reads
        (``nan_policy="impute"`` in fit, :mod:`streamlearn.features.missing_values`):
        only infinite values are refused.

    Returns
    -------
    ndarray of shape (n, n_features), float32, C-contiguous, writeable, finite (but for
    NaN with ``allow_missing``)
    """
    if isinstance(X, Dataset | str | os.PathLike):
        # fit and score stream these; predictions of every row would be held in memory
        raise TypeError(f"{owner} predicts rows held in memory (an array, a table or a "
                        f"sparse matrix), not a {type(X).__name__}: 'streamlearn predict "
                        "MODEL DATA --out FILE' streams a dataset's predictions to parquet, "
                        "and model.score(DATA) scores it")
    expected = list(feature_names)
    if categories is None:
        categories = getattr(feature_names, "categories", None)
    categories = dict(categories or {})
    if _module(X) == "polars" and hasattr(X, "to_arrow"):
        X = X.to_arrow()
    if _is_dask(X) and hasattr(X, "columns") and hasattr(X, "compute"):
        # a dask DataFrame's rows, computed, are a pandas table: its string and
        # categorical columns are coded like a DataFrame's
        X = X.compute()
    columns = getattr(X, "column_names", None)
    if columns is None:
        columns = getattr(X, "columns", None)
    if isinstance(X, np.ndarray):
        columns = None
    # scikit-learn's rule: string labels name the columns, others (pandas' 0, 1, ...) do
    # not, and a mix is refused
    has_names = columns is not None and labels_are_names(list(columns))
    guessed = named is None
    if named is None:
        named = expected != default_feature_names(len(expected))
    if has_names and not named:
        got = [str(c) for c in columns]
        if guessed and sorted(got) == sorted(expected):
            named = True  # the default names themselves, in any order: by name
        else:
            warnings.warn(f"X has feature names, but {owner} was fitted without feature "
                          "names: its columns are taken by position", UserWarning,
                          stacklevel=caller_stacklevel())
    elif not has_names and named and not guessed and not in_library_rows():
        warn_unnamed_rows(owner)
    if has_names and named and _module(X) == "pyarrow":
        X = _without_stored_index(X, expected)
        columns = X.column_names
    if has_names and named:
        got = [str(c) for c in columns]
        counts = Counter(got)
        repeated = [c for c in counts if counts[c] > 1]
        if repeated:
            raise SchemaError(f"X has duplicate column names {_shown(repeated)}; {owner} "
                              f"reads its features by name (as in fit: {_shown(expected)})")
        missing = [c for c in expected if c not in got]
        extra = [c for c in got if c not in expected]
        if missing or extra:
            raise SchemaError(f"features differ from those seen in fit: expected "
                              f"{_shown(expected)}, got {_shown(got)} (missing "
                              f"{_shown(missing)}, unexpected {_shown(extra)})")
        if got != expected:
            # a pyarrow Table selects by its (string) names; a DataFrame by its own labels
            X = X.select(expected) if _module(X) == "pyarrow" else \
                X[[columns[got.index(c)] for c in expected]]
    if categories and is_array_input(X) and not sp.issparse(X) and \
            np.asarray(X).dtype.kind in "OUST":
        # rows holding category values; numeric rows already hold codes (as chunks do)
        X = _object_table(X, expected)
    if _is_table(X):
        values = _table_values(X, expected, categories, owner, training, unseen)
    else:
        if is_array_input(X):
            X = numeric_array(X, accept_sparse=False, dtype=[np.float32, np.float64],
                              ensure_all_finite=False, ensure_min_features=0)
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] == len(expected):
            warn_of_coarse_columns(matrix_spans(X), expected, "X")
        with np.errstate(over="ignore"):  # a value beyond float32's range is named below
            values = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    if values.ndim != 2:
        raise SchemaError(f"X must be 2-D (rows x features), got shape {values.shape}; "
                          "Reshape your data with X.reshape(-1, 1) for a single feature or "
                          "X.reshape(1, -1) for a single row")
    if values.shape[1] != len(expected):
        raise SchemaError(f"X has {values.shape[1]} features, but {owner} is expecting "
                          f"{len(expected)} features as input (as in fit: "
                          f"{_shown(expected)})")
    if categories and not _is_table(X):
        _check_codes(values, expected, categories, training)
    flat = first_infinite(values) if allow_missing else first_nonfinite(values)
    if flat >= 0:
        r, c = divmod(flat, values.shape[1])
        given = X[r, c] if isinstance(X, np.ndarray) and X.ndim == 2 else values[r, c]
        reads = ("finite values and missing ones (NaN)" if allow_missing else
                 "finite values only: partial_fit reads NaN as a missing value only in a "
                 "model that learned how from its first rows (fit, or a first partial_fit "
                 "call, with a NaN among them); fill or drop the missing values, or train "
                 "again from rows that show the gaps" if training else
                 "finite values only (a model fitted with nan_policy='impute' reads NaN as "
                 "a missing value)")
        raise DataError(f"Input X contains {nonfinite_value(given)} in feature "
                        f"{expected[c]!r} at row {r}; the model reads {reads}")
    return writeable(values)  # a frozen or memory-mapped X: the kernels' compiled type


#: Sparse rows scored by a model that reads dense rows are densified this many at a time.
DENSE_BLOCK_ROWS = 4096


def warn_unnamed_rows(owner: str) -> None:
    """scikit-learn's warning for rows without feature names (an array, a list, a sparse
    matrix, a table labelled ``0, 1, ...``) given to a model fitted on named columns:
    they are taken by position."""
    warnings.warn(f"X does not have valid feature names, but {owner} was fitted with "
                  "feature names", UserWarning, stacklevel=caller_stacklevel())


#: How a model's training rows were hashed: the number of columns, the columns hashed and
#: how each was (None for a model that does not record it).
Hashing = tuple[int, tuple[str, ...], tuple[str, ...] | None]


def hashing_of(model: Any) -> Hashing | None:
    """How a fitted model's training rows were hashed: ``(hash_features_,
    hashed_columns_, hashed_kinds_)`` (no columns for svmlight text, whose entry names
    were hashed), or None for a model of rows that were not hashed."""
    hashed = getattr(model, "hash_features_", None)
    if hashed is None:
        return None
    kinds = getattr(model, "hashed_kinds_", None)
    return (int(hashed), tuple(getattr(model, "hashed_columns_", None) or ()),
            None if kinds is None else tuple(kinds))


def _hashed_input(X: Any, hash_features: int, columns: tuple[str, ...],
                  kinds: tuple[str, ...] | None, owner: str) -> Any:
    """Rows of a model trained on hashed features (:func:`hashing_of`) from ``X``: a table
    (pandas, polars, pyarrow) hashed as the training columns were
    (:func:`~streamlearn.data.sources.parquet_sparse.hash_table`, the hashing of
    ``streamlearn predict`` on a parquet file of those columns; a column that would be
    hashed otherwise than in fit, such as text where fit saw numbers, is refused), anything
    else as given, but for rows of another width than ``hash_features``, refused by a
    message that says how the model reads them."""
    if _module(X) == "polars" and hasattr(X, "to_arrow"):
        X = X.to_arrow()
    how = f"{owner} was trained on hashed features (hash_features_={hash_features}"
    if columns:
        how += f", from the columns hashed_columns_={list(columns)})"
        fix = ("give a table holding those columns (hashed as in fit), or rows hashed so: "
               f"a scipy.sparse matrix of {hash_features} columns; 'streamlearn predict MODEL "
               "DATA' hashes a file's columns as in fit")
    else:
        how += ", from the entry names of svmlight text)"
        fix = (f"give rows hashed so (a scipy.sparse matrix of {hash_features} columns), or "
               "the svmlight file to 'streamlearn predict MODEL DATA', which hashes its names "
               "as in fit")
    if _is_table(X):
        if not columns:
            raise SchemaError(f"{how}: a table's columns cannot be hashed as those names "
                              f"were; {fix}")
        import pyarrow as pa

        from streamlearn.data.sources.parquet_sparse import hash_table

        if _module(X) == "pandas":
            got = [str(c) for c in X.columns]
            missing = [c for c in columns if c not in got]
            if missing:
                raise SchemaError(f"X lacks the column(s) {_shown(missing)}: {how}; {fix}")
            try:
                X = pa.Table.from_pandas(X[[X.columns[got.index(c)] for c in columns]],
                                         preserve_index=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise SchemaError(f"X's hashed columns cannot be read as typed columns "
                                  f"({exc}): {how}") from exc
        return hash_table(X, hash_features, columns, "X", kinds)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] != hash_features:
        raise SchemaError(f"X has {shape[1]} features, but {how}; {fix}")
    return X


def sparse_rows_of(X: Any, n_features: int | None, owner: str,
                   named: bool = False,
                   hashing: Hashing | None = None) -> SparseRows | None:
    """Sparse rows to score as :class:`~streamlearn.data.sparse_rows.SparseRows`, or None.

    Parameters
    ----------
    X : scipy.sparse matrix or array, SparseRows, or anything else (None is returned)
    n_features : int or None
        Columns seen in ``fit``, checked when given: a scipy matrix must have that many
        (as scikit-learn checks); rows read from a file (SparseRows) may have fewer, taken
        as the first ones, the others zero.
    owner : str
        Name of the estimator, for messages.
    named : bool
        Whether ``fit`` saw named columns (:func:`has_named_features`): a scipy matrix,
        whose columns have no names, then gets scikit-learn's warning (not in
        :func:`~streamlearn.warning_origin.library_rows`).
    hashing : (int, tuple of str, tuple of str or None), optional
        How the training rows were hashed (:func:`hashing_of`): a table (pandas, polars,
        pyarrow) is then hashed as a parquet file of its columns is read for the model
        (by ``streamlearn predict``, ``score`` or ``evaluate``), its columns not hashed in
        fit left out, a column of a type hashed otherwise than in fit refused; rows of
        another width than ``hash_features_`` are refused naming it.

    Returns
    -------
    SparseRows or None
        With finite stored values; None when ``X`` is not sparse.
    """
    if hashing is not None and not isinstance(X, SparseRows) and not sp.issparse(X):
        X = _hashed_input(X, *hashing, owner)
    if isinstance(X, SparseRows):
        rows = X
    elif sp.issparse(X):
        if X.ndim != 2:
            raise SchemaError(f"X must be 2-D (rows x features), got shape {X.shape}")
        if X.dtype.kind not in "biuf":  # complex: the cast would drop the imaginary part
            raise SchemaError(f"sparse X holds {X.dtype} values; {owner} reads real numbers")
        if named and not in_library_rows():
            warn_unnamed_rows(owner)
        rows = SparseRows.from_scipy(X)
    else:
        return None
    if n_features is not None and rows.n_cols < n_features and not sp.issparse(X):
        # the columns past its last are zeros, as in an svmlight file whose largest index
        # is smaller than the training data's; a matrix says its width, which must agree
        rows = SparseRows(rows.indptr, rows.indices, rows.values, n_features)
    if n_features is not None and rows.n_cols != n_features:
        raise SchemaError(f"X has {rows.n_cols} features, but {owner} is expecting "
                          f"{n_features} features as input")
    flat = first_nonfinite(rows.values)
    if flat >= 0:
        r = int(np.searchsorted(rows.indptr, flat, side="right")) - 1
        raise DataError(f"Input X contains {rows.values[flat]} in feature "
                        f"'x{int(rows.indices[flat])}' at row {r}; the model reads finite "
                        "values only")
    return writeable_rows(rows)


def coded_table(X: Any) -> tuple[np.ndarray, tuple[str, ...], dict[str, tuple[Any, ...]]] | None:
    """A table with string or categorical columns as float32 codes, its names and categories.

    For the first call of an online fit: the categories are those of ``X`` (the full list
    for a pandas ``category`` column, else the values present). None for plain arrays and
    all-numeric tables. A missing value (NaN, a missing category) stays NaN, for the
    call's map of missing values.

    Parameters
    ----------
    X : pandas DataFrame, pyarrow Table or polars DataFrame

    Returns
    -------
    (values, feature_names, categories) or None
    """
    if _module(X) == "polars" and hasattr(X, "to_arrow"):
        X = X.to_arrow()
    if not _is_table(X):
        return None
    dataset = open_dataset(X, nan_policy="impute")
    if not dataset.categories:
        return None
    values = np.concatenate([chunk.X for chunk in dataset.chunks(prefetch=0)])
    return (np.ascontiguousarray(values, dtype=np.float32), tuple(dataset.feature_names),
            dict(dataset.categories))


def _is_table(X: Any) -> bool:
    """A pandas DataFrame or a pyarrow Table (converted column by column)."""
    module = _module(X)
    return (module == "pandas" and hasattr(X, "columns") and getattr(X, "ndim", 0) == 2) or \
        (module == "pyarrow" and hasattr(X, "column_names"))


def _without_stored_index(table: Any, expected: list[str]) -> Any:
    """A pyarrow Table without the columns in which ``Table.from_pandas`` stored a
    frame's index (:func:`~streamlearn.data.sources.arrow_columns.pandas_index_columns`)
    that are not among the features ``expected``: not a feature unless named, as when the
    table is given to ``fit``."""
    from streamlearn.data.sources.arrow_columns import pandas_index_columns

    index = [c for c in pandas_index_columns(table.schema) if c not in expected
             and c in table.column_names]
    return table.drop_columns(index) if index else table


def _object_table(X: Any, expected: list[str]) -> Any:
    """Array-like rows holding category values (strings) as a DataFrame of fit's columns."""
    import pandas as pd

    values = np.asarray(X, dtype=object)
    if values.ndim != 2 or values.shape[1] != len(expected):
        return X
    return pd.DataFrame(values, columns=expected)


def _check_codes(values: np.ndarray, expected: list[str],
                 categories: dict[str, Any], training: bool = False) -> None:
    """Numeric rows of a model with categorical features hold codes: each categorical
    column an integer in ``0 .. k`` (``k`` for a category unseen in fit, not in rows to
    train on); a ``DataError`` names the first value that is not one."""
    for j, f in enumerate(expected):
        if f not in categories:
            continue
        column = values[:, j]
        k = len(categories[f])
        if training and (column == k).any():
            raise DataError(_undeclared(f, int((column == k).sum()),
                                        f"the code {k} of an unseen one", categories[f]))
        bad = np.flatnonzero(np.isfinite(column) & ((column != np.round(column))
                                                    | (column < 0) | (column > k)))
        if bad.size:
            r = int(bad[0])
            raise DataError(f"feature {f!r} is categorical ({k} categories in fit): numeric "
                            f"rows must hold its codes 0..{k - 1} ({k} for an unseen one), "
                            f"got {column[r]:g} at row {r}; pass a table (DataFrame) with "
                            "the category values instead")


def _table_values(X: Any, expected: list[str], categories: dict[str, Any],
                  owner: str, training: bool = False,
                  unseen_reading: Callable[[str, int], str] | None = None) -> np.ndarray:
    """A table's columns as float32, categorical ones coded; columns taken by position.
    A category not in the model's list is coded ``len(categories)`` with a warning (which
    says what the model does with it: ``unseen_reading(feature, k)``, by default
    :func:`unseen_code_reading`), or refused in rows to train on (``training``)."""
    from streamlearn.data.sources.arrow_columns import arrow_block
    from streamlearn.data.sources.in_memory import pandas_block

    arrow = _module(X) == "pyarrow"
    names = list(X.column_names) if arrow else list(X.columns)
    if len(names) != len(expected):
        raise SchemaError(f"X has {len(names)} features, but {owner} is expecting "
                          f"{len(expected)} features as input (as in fit: "
                          f"{_shown(expected)})")
    lookups = {names[j]: category_index(categories[f])
               for j, f in enumerate(expected) if f in categories}
    if arrow:
        block = arrow_block(X, names, None, None, where="X", categories=lookups)
    else:
        block = pandas_block(X, names, None, None, "X", 0, lookups)
    warn_of_coarse_columns(block.spans, expected, "X")
    values = block.X
    for j, f in enumerate(expected):
        if f not in categories:
            continue
        unseen = np.flatnonzero(values[:, j] == len(categories[f]))
        if unseen.size and training:
            column = X.column(j).take(unseen).to_pylist() if arrow else \
                X.iloc[unseen, j].tolist()
            raise DataError(_undeclared(f, unseen.size, _examples_of(column), categories[f]))
        if unseen.size:
            reading = (unseen_code_reading if unseen_reading is None
                       else unseen_reading)(f, len(categories[f]))
            warnings.warn(f"feature {f!r} holds {unseen.size} value(s) not seen in fit "
                          f"(first at row {int(unseen[0])}); {reading}", UserWarning,
                          stacklevel=caller_stacklevel())
    return values


def unseen_code_reading(name: str, k: int) -> str:
    """What a model that reads the categorical feature ``name`` of ``k`` categories as its
    codes does with a category unseen in fit, for the warnings of such values."""
    return f"they get the code {k}, one past the {k} categories seen in fit"


def _examples_of(values: list[Any], limit: int = 5) -> str:
    """The first ``limit`` distinct values, as text for a message."""
    distinct = list(dict.fromkeys(v.item() if isinstance(v, np.generic) else v
                                  for v in values))
    return ", ".join(repr(v) for v in distinct[:limit]) + (
        ", ..." if len(distinct) > limit else "")


def _undeclared(feature: str, n_rows: int, shown: str, known: Sequence[Any]) -> str:
    """The error of rows to train on holding categories the model's first training call
    did not declare: the column, a few of the values (``shown``), and how to declare
    them."""
    return (f"feature {feature!r} holds {n_rows} row(s) of categories the model does not "
            f"know ({shown}): its categories {_shown(list(known))} were fixed by fit or its "
            "first partial_fit call, and partial_fit cannot add one; give the first call "
            "every category, as a pandas Categorical with the full list (X[col] = "
            "pd.Categorical(X[col], categories=[...]), or a CategoricalDtype), or train "
            "with fit")
