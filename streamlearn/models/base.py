"""What every estimator shares: parameters, training data, labels, input checks, save/load.

Estimators follow scikit-learn's conventions: the constructor stores hyper-parameters only
(under the names of its arguments), ``fit`` learns attributes whose names end in ``_``,
``get_params``/``set_params`` read and write the hyper-parameters. Models are saved with
:mod:`streamlearn.io` (JSON metadata and numpy arrays, never pickle).
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, Self

import numpy as np

from streamlearn.data import Dataset, open_dataset
from streamlearn.data.sources.base import default_feature_names
from streamlearn.data.validation import first_nonfinite
from streamlearn.engine.evaluate import evaluate, label_codes
from streamlearn.errors import DataError, LabelError, SchemaError

#: Names shown in an error message before it is abbreviated.
MAX_SHOWN_NAMES = 10


class NotFittedError(RuntimeError):
    """An estimator was used before ``fit``."""


def _shown(names: list[Any]) -> str:
    items = ", ".join(repr(n) for n in names[:MAX_SHOWN_NAMES])
    return f"[{items}{', ...' if len(names) > MAX_SHOWN_NAMES else ''}]"


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


class StreamEstimator:
    """Base class: hyper-parameter access, ``repr``, fitted checks and model files."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Hyper-parameters as a dict of constructor arguments.

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn compatibility; there are no nested estimators.

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set hyper-parameters by name.

        Parameters
        ----------
        **params
            Constructor arguments.

        Returns
        -------
        self
        """
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; "
                                 f"parameters are {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        signature = inspect.signature(type(self).__init__)
        changed = []
        for name, value in self.get_params().items():
            default = signature.parameters[name].default
            same = default is value
            if not same:
                try:
                    same = bool(default == value)
                except (TypeError, ValueError):
                    same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    def _json_params(self) -> dict[str, Any]:
        """Hyper-parameters that can be written as JSON (engine objects become None)."""
        return {k: (v if _json_safe(v) else None) for k, v in self.get_params().items()}

    # -- fitted state -------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        """Whether the estimator has learned its attributes."""
        return hasattr(self, "classes_")

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; "
                                 "call fit(...) or partial_fit(...) first")

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

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted model to a file (no pickle; see :func:`streamlearn.io.save_model`).

        Parameters
        ----------
        path : str or path-like
            Destination, conventionally ``*.slm``.

        Returns
        -------
        Path
        """
        from streamlearn.io import save_model

        self._check_fitted()
        return save_model(self, path)

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
                           chunk_rows: int | None = None) -> Dataset:
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

    Returns
    -------
    Dataset
        With a classification target.
    """
    return _task_dataset(data, y, sample_weight, chunk_rows, "classification",
                         "a classifier needs class labels")


def regression_dataset(data: Any, y: Any = None, sample_weight: Any = None,
                       chunk_rows: int | None = None) -> Dataset:
    """Open the training data of a regressor (see :func:`classification_dataset`)."""
    return _task_dataset(data, y, sample_weight, chunk_rows, "regression",
                         "a regressor needs a numeric target")


def _task_dataset(data: Any, y: Any, sample_weight: Any, chunk_rows: int | None, task: str,
                  need: str) -> Dataset:
    """Open training data (or take a Dataset) and check that its target suits ``task``."""
    if isinstance(data, Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError("with a Dataset, give the target and weights to open_dataset "
                             "(target=..., weight=...), not to fit")
        dataset = data
    else:
        data, y, sample_weight = _attach_columns(data, y, sample_weight)
        dataset = open_dataset(data, target=y, weight=sample_weight, chunk_rows=chunk_rows,
                               task=task if y is not None else None)
    if dataset.task != task:
        what = "no target" if dataset.task is None else f"a {dataset.task} target"
        raise LabelError(f"{need} but the data has {what}; open it with "
                         f"open_dataset(..., target=..., task={task!r})")
    return dataset


def _in_memory(data: Any, y: Any) -> bool:
    return y is not None and not isinstance(y, str) and not isinstance(data, Dataset)


class ClassifierScore:
    """``score`` of a classifier: accuracy, on in-memory rows or streamed over a dataset."""

    def score(self, data: Any, y: Any = None, *, sample_weight: Any = None,
              engine: Any = None) -> float:
        """Accuracy on in-memory rows, or streamed over a dataset.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Labels of in-memory ``data``, or the target column's name.
        sample_weight : array-like or str, optional
            Weights of the rows.
        engine : engine, optional
            Runs the evaluation pass over a dataset.

        Returns
        -------
        float
        """
        if _in_memory(data, y):
            truth = np.asarray(y)
            if truth.dtype.kind == "O":
                truth = truth.astype(str)
            correct = (self.predict(data) == truth.reshape(-1)).astype(np.float64)
            if sample_weight is None:
                return float(correct.mean())
            w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
            return float((w * correct).sum() / w.sum())
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows)
        return float(evaluate(self, dataset, engine=self._engine(engine))["accuracy"])


class RegressorScore:
    """``score`` of a regressor: R^2, on in-memory rows or streamed over a dataset."""

    def score(self, data: Any, y: Any = None, *, sample_weight: Any = None,
              engine: Any = None) -> float:
        """Coefficient of determination R^2, on in-memory rows or streamed over a dataset.

        Parameters
        ----------
        data : array-like X (with ``y``), Dataset, or anything ``open_dataset`` accepts
        y : array-like or str, optional
            Targets of in-memory ``data``, or the target column's name.
        sample_weight : array-like or str, optional
            Weights of the rows.
        engine : engine, optional
            Runs the evaluation pass over a dataset.

        Returns
        -------
        float
            0 when the target is constant.
        """
        if _in_memory(data, y):
            truth = np.asarray(y, dtype=np.float64).reshape(-1)
            w = (np.ones_like(truth) if sample_weight is None
                 else np.asarray(sample_weight, dtype=np.float64).reshape(-1))
            resid = truth - np.asarray(self.predict(data), dtype=np.float64)
            mean = (w @ truth) / w.sum()
            total = w @ (truth - mean) ** 2
            return float(1.0 - (w @ resid**2) / total) if total > 0 else 0.0
        dataset = regression_dataset(data, y, sample_weight, self.chunk_rows)
        return float(evaluate(self, dataset, engine=self._engine(engine))["r2"])


def _fresh_name(base: str, taken: list[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


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
    labels = np.asarray(y)
    if labels.dtype.kind == "O":
        labels = labels.astype(str)
    codes = label_codes(labels.reshape(-1), classes)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        raise LabelError(f"label {labels.reshape(-1)[bad[0]]!r} (row {int(bad[0])}) is not one "
                         f"of the classes {_shown(classes.tolist())}")
    return codes.astype(np.int32)


def storable_classes(classes: np.ndarray) -> np.ndarray:
    """Labels as an array a model file can hold (no Python objects)."""
    classes = np.asarray(classes)
    return classes.astype(str) if classes.dtype.hasobject else classes


# -- prediction inputs --------------------------------------------------------------------
def check_features(X: Any, feature_names: tuple[str, ...]) -> np.ndarray:
    """Validate prediction inputs against the features seen in ``fit``.

    When ``fit`` saw named columns, a table with column names (pandas, pyarrow) must hold
    exactly those columns (they are put in fit order). Otherwise, and for plain arrays,
    columns are taken by position and only their number is checked.

    Parameters
    ----------
    X : array-like of shape (n, n_features) or a table with named columns
    feature_names : tuple of str
        Feature names seen in ``fit``.

    Returns
    -------
    ndarray of shape (n, n_features), float32, C-contiguous, finite
    """
    expected = list(feature_names)
    columns = getattr(X, "column_names", None)
    if columns is None:
        columns = getattr(X, "columns", None)
    named = expected != default_feature_names(len(expected))
    if columns is not None and named and not isinstance(X, np.ndarray):
        got = [str(c) for c in columns]
        missing = [c for c in expected if c not in got]
        extra = [c for c in got if c not in expected]
        if missing or extra:
            raise SchemaError(f"features differ from those seen in fit: expected "
                              f"{_shown(expected)}, got {_shown(got)} (missing "
                              f"{_shown(missing)}, unexpected {_shown(extra)})")
        if got != expected:
            X = X.select(expected) if hasattr(X, "select") else X[expected]
    values = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    if values.ndim == 1 and len(expected) == 1:
        values = values.reshape(-1, 1)
    if values.ndim != 2:
        raise SchemaError(f"X must be 2-D (rows x features), got shape {values.shape}")
    if values.shape[1] != len(expected):
        raise SchemaError(f"X has {values.shape[1]} features, expected {len(expected)} "
                          f"as in fit: {_shown(expected)}")
    flat = first_nonfinite(values)
    if flat >= 0:
        r, c = divmod(flat, values.shape[1])
        raise DataError(f"{values[r, c]} in feature {expected[c]!r} at row {r}; "
                        "predictions need finite values")
    return values
