"""``EvaluatePass``: scores a fitted model over every chunk of a dataset in one reduction.

Classification: accuracy, log-loss (when the model has ``predict_proba``) and the confusion
matrix; regression: mean squared error, mean absolute error and R^2. Sample weights of the
chunks are respected with scikit-learn's ``sample_weight`` semantics. Every statistic is a
sum (the target's weighted mean and squared deviations combine with Chan et al.'s update), so
chunk results merge in any grouping.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.data.dataset import Dataset
from streamlearn.data.open import (
    check_coded_as_trained,
    check_hashed_as_trained,
    check_named_as_trained,
    named_features,
    open_dataset,
    reading_for,
)
from streamlearn.engine.local import resolve_engine
from streamlearn.errors import LabelError
from streamlearn.warning_origin import library_rows

#: Probabilities are clipped to ``[PROBA_FLOOR, 1]`` before taking logs.
PROBA_FLOOR = 1e-15


@dataclass
class ClassificationTally:
    """Weighted sums behind the classification metrics.

    Attributes
    ----------
    n_rows : int
    weight : float
        Sum of sample weights.
    correct : float
        Weight of correctly predicted rows.
    log_loss : float
        Weighted sum of ``-log p(true class)``.
    confusion : ndarray of shape (n_classes, n_classes), float64
        Weight per (true code, predicted code).
    weighted : bool
        Whether any chunk carried sample weights.
    support : ndarray of shape (n_classes,), float64
        Weight per true code (rows whose prediction lies outside the classes included).
    unseen : ndarray of int64
        Rows holding a category not seen in fit, per categorical feature of the model.
    """

    n_rows: int
    weight: float
    correct: float
    log_loss: float
    confusion: np.ndarray
    weighted: bool
    support: np.ndarray
    unseen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class RegressionTally:
    """Weighted sums behind the regression metrics.

    Attributes
    ----------
    n_rows : int
    weight : float
        Sum of sample weights.
    y_mean : float
        Weighted mean of the target.
    y_m2 : float
        Weighted sum of squared deviations of the target from ``y_mean``.
    squared_error, absolute_error : float
        Weighted sums of squared and absolute residuals.
    unseen : ndarray of int64
        Rows holding a category not seen in fit, per categorical feature of the model.
    """

    n_rows: int
    weight: float
    y_mean: float
    y_m2: float
    squared_error: float
    absolute_error: float
    unseen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def label_codes(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Position of each label in ``classes`` (int64), -1 for labels not in ``classes``."""
    labels = np.asarray(labels)
    order = np.argsort(classes, kind="stable")
    ordered = classes[order]
    pos = np.searchsorted(ordered, labels)
    pos = np.minimum(pos, len(ordered) - 1)
    found = ordered[pos] == labels
    return np.where(found, order[pos], -1).astype(np.int64)


class EvaluatePass:
    """Reduction pass that scores ``model`` on every chunk.

    Parameters
    ----------
    model : object
        Fitted estimator with ``predict`` (and optionally ``predict_proba`` and ``classes_``).
    task : {"classification", "regression"}
    classes : ndarray, optional
        Labels of the dataset's class codes (``chunk.y`` indexes it); defaults to the
        model's ``classes_``. Predictions outside ``classes`` count as errors and are left
        out of the confusion matrix, as with scikit-learn's ``confusion_matrix(labels=...)``.
    feature_names : sequence of str, optional
        The chunks' columns: with the model's ``categories_``, the rows holding a category
        not seen in fit (the code one past the model's categories) are counted per feature.

    Notes
    -----
    ``finish`` returns a dict: ``n_rows`` and, for classification, ``accuracy``,
    ``log_loss`` (only when the model has ``predict_proba``; probabilities are aligned from
    ``model.classes_`` to ``classes`` and clipped to ``[1e-15, 1]``) and
    ``confusion_matrix`` (nested lists, rows are true classes; ints unless weighted); for
    regression ``mse``, ``mae`` and ``r2``; ``unseen_categories`` (feature -> rows) when
    some rows hold categories not seen in fit. Metrics of an empty dataset are NaN.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(
        self,
        model: Any,
        *,
        task: Literal["classification", "regression"],
        classes: np.ndarray | None = None,
        feature_names: Any = None,
    ) -> None:
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
        self.model = model
        self.task = task
        categories = getattr(model, "categories_", None) or {}
        names = [] if feature_names is None else list(feature_names)
        #: (column, feature, the code of a category not seen in fit) per categorical feature
        self._categorical = [(names.index(f), f, len(c)) for f, c in categories.items()
                             if f in names]
        self.classes: np.ndarray | None = None
        self.has_proba = False
        self._proba_columns: np.ndarray | None = None
        if task == "classification":
            model_classes = getattr(model, "classes_", None)
            if classes is None:
                if model_classes is None:
                    raise ValueError("classification needs classes, or a model with classes_")
                classes = model_classes
            self.classes = np.asarray(classes)
            if len(np.unique(self.classes)) != len(self.classes):
                raise ValueError("classes must be distinct")
            self.has_proba = hasattr(model, "predict_proba")
            if self.has_proba:
                if model_classes is None:
                    self._proba_columns = np.arange(len(self.classes), dtype=np.int64)
                else:
                    self._proba_columns = label_codes(self.classes, np.asarray(model_classes))

    def __repr__(self) -> str:
        return f"EvaluatePass({type(self.model).__name__}, task={self.task!r})"

    def _unseen_classes(self, support: np.ndarray) -> dict[Any, float | int]:
        """Rows (or weight) per label of the data that the model has no class for."""
        model_classes = getattr(self.model, "classes_", None)
        if model_classes is None or self.classes is None:
            return {}
        missing = label_codes(self.classes, np.asarray(model_classes)) < 0
        return {_plain(label): (float(n) if n != int(n) else int(n))
                for label, n in zip(self.classes[missing], support[missing], strict=True)
                if n > 0}

    def start(self) -> ClassificationTally | RegressionTally:
        """Empty tally."""
        unseen = np.zeros(len(self._categorical), dtype=np.int64)
        if self.task == "classification":
            assert self.classes is not None
            k = len(self.classes)
            return ClassificationTally(0, 0.0, 0.0, 0.0, np.zeros((k, k)), False, np.zeros(k),
                                       unseen)
        return RegressionTally(0, 0.0, 0.0, 0.0, 0.0, 0.0, unseen)

    def step(self, state: Any, chunk: Chunk) -> Any:
        """Score one chunk and add it to ``state`` (in place)."""
        if chunk.y is None:
            raise ValueError("evaluation needs a target, the chunk has none")
        if chunk.n_rows == 0:
            return state
        if chunk.weight is None:
            w = np.ones(chunk.n_rows)
        else:
            w = np.asarray(chunk.weight, dtype=np.float64)
        if self._categorical:
            state.unseen = state.unseen + [
                int(np.count_nonzero(np.asarray(chunk.X[:, j]) == code))
                for j, _, code in self._categorical]
        with library_rows():  # the model's columns, in its order
            if self.task == "classification":
                return self._step_classification(state, chunk, w)
            return self._step_regression(state, chunk, w)

    def _step_classification(self, state: ClassificationTally, chunk: Chunk,
                             w: np.ndarray) -> ClassificationTally:
        assert self.classes is not None
        k = len(self.classes)
        codes = np.asarray(chunk.y, dtype=np.int64)
        if codes.min() < 0 or codes.max() >= k:
            raise ValueError(f"class codes must lie in [0, {k}), got values in "
                             f"[{codes.min()}, {codes.max()}] in the chunk starting at row "
                             f"{chunk.start}")
        predicted = label_codes(np.asarray(self.model.predict(chunk.X)).reshape(-1),
                                self.classes)
        known = predicted >= 0
        state.confusion += np.bincount(codes[known] * k + predicted[known], weights=w[known],
                                       minlength=k * k).reshape(k, k)
        state.correct += float(w[predicted == codes].sum())
        state.support += np.bincount(codes, weights=w, minlength=k)
        if self.has_proba:
            assert self._proba_columns is not None
            proba = np.asarray(self.model.predict_proba(chunk.X), dtype=np.float64)
            columns = self._proba_columns[codes]
            p = np.where(columns >= 0,
                         proba[np.arange(len(codes)), np.maximum(columns, 0)], 0.0)
            p = np.clip(p, PROBA_FLOOR, 1.0)
            state.log_loss += float(-(w * np.log(p)).sum())
        state.n_rows += chunk.n_rows
        state.weight += float(w.sum())
        state.weighted = state.weighted or chunk.weight is not None
        return state

    def _step_regression(self, state: RegressionTally, chunk: Chunk,
                         w: np.ndarray) -> RegressionTally:
        assert chunk.y is not None
        y = np.asarray(chunk.y, dtype=np.float64).reshape(-1)
        residual = y - np.asarray(self.model.predict(chunk.X), dtype=np.float64).reshape(-1)
        weight = float(w.sum())
        part = RegressionTally(chunk.n_rows, weight, 0.0, 0.0,
                               float((w * residual * residual).sum()),
                               float((w * np.abs(residual)).sum()),
                               np.zeros_like(state.unseen))
        if weight > 0:
            part.y_mean = float((w * y).sum() / weight)
            part.y_m2 = float((w * (y - part.y_mean) ** 2).sum())
        return self.merge(state, part)

    def merge(self, a: Any, b: Any) -> Any:
        """Combine the tallies of two disjoint sets of chunks (a new tally)."""
        if isinstance(a, ClassificationTally):
            return ClassificationTally(a.n_rows + b.n_rows, a.weight + b.weight,
                                       a.correct + b.correct, a.log_loss + b.log_loss,
                                       a.confusion + b.confusion, a.weighted or b.weighted,
                                       a.support + b.support, a.unseen + b.unseen)
        weight = a.weight + b.weight
        if a.weight <= 0 or b.weight <= 0:
            y_mean, y_m2 = (a.y_mean, a.y_m2) if b.weight <= 0 else (b.y_mean, b.y_m2)
        else:
            delta = b.y_mean - a.y_mean
            y_mean = a.y_mean + delta * (b.weight / weight)
            y_m2 = a.y_m2 + b.y_m2 + delta * delta * (a.weight * b.weight / weight)
        return RegressionTally(a.n_rows + b.n_rows, weight, y_mean, y_m2,
                               a.squared_error + b.squared_error,
                               a.absolute_error + b.absolute_error, a.unseen + b.unseen)

    def finish(self, state: Any) -> dict[str, Any]:
        """Metrics as a plain dict (see the class notes)."""
        out = self._metrics(state)
        unseen = {f: int(n) for (_, f, _), n in zip(self._categorical, state.unseen,
                                                     strict=True) if n}
        if unseen:
            out["unseen_categories"] = unseen
        return out

    def _metrics(self, state: Any) -> dict[str, Any]:
        nan = float("nan")
        if isinstance(state, ClassificationTally):
            ok = state.weight > 0
            out: dict[str, Any] = {
                "n_rows": int(state.n_rows),
                "accuracy": state.correct / state.weight if ok else nan,
            }
            if self.has_proba:
                out["log_loss"] = state.log_loss / state.weight if ok else nan
            confusion = state.confusion if state.weighted else state.confusion.astype(np.int64)
            out["confusion_matrix"] = confusion.tolist()
            unseen = self._unseen_classes(state.support)
            if unseen:
                out["unseen_classes"] = unseen
            return out
        if state.weight <= 0:
            return {"n_rows": int(state.n_rows), "mse": nan, "mae": nan, "r2": nan}
        if state.y_m2 > 0:
            r2 = 1.0 - state.squared_error / state.y_m2
        else:
            r2 = 1.0 if state.squared_error == 0 else 0.0
        return {
            "n_rows": int(state.n_rows),
            "mse": state.squared_error / state.weight,
            "mae": state.absolute_error / state.weight,
            "r2": float(r2),
        }


def _plain(label: Any) -> Any:
    return label.item() if isinstance(label, np.generic) else label


def evaluate(model: Any, data: Any, *, engine: Any = None) -> dict[str, Any]:
    """Score a fitted model on ``data`` in one streamed pass.

    Parameters
    ----------
    model : object
        Anything with ``predict`` (and, for log-loss, ``predict_proba``), including
        scikit-learn estimators fitted on the same features.
    data : Dataset or anything ``open_dataset`` accepts
        Must have a target.
    engine : engine, optional
        Runs the pass; a ``LocalEngine`` by default.

    Returns
    -------
    dict
        ``accuracy``, ``log_loss``, ``confusion_matrix`` and ``classes`` (the labels of
        its rows and columns: the model's and the data's) for classification; ``mse``,
        ``mae``, ``r2`` for regression; ``n_rows`` always. ``unseen_classes`` (label to
        rows, or to weight when weighted) when the data hold labels the model has no class
        for: those rows count as errors, and ``evaluate`` warns of them;
        ``unseen_categories`` (feature to rows) when categorical features hold categories
        not seen in fit.

    Raises
    ------
    SchemaError
        A ``Dataset`` whose categorical columns are coded by other categories than the
        model's, or a text column where the model saw numbers
        (:func:`~streamlearn.data.open.check_coded_as_trained`); a ``Dataset`` whose
        feature columns are not those of a model trained on named columns, in its order
        (:func:`~streamlearn.data.open.check_named_as_trained`; other data is opened
        with the model's columns, by name); a ``Dataset`` whose rows are hashed otherwise
        than the model's training rows, or hashed where they were not or not where they
        were (:func:`~streamlearn.data.open.check_hashed_as_trained`).

    Warns
    -----
    UserWarning
        When the data hold labels the model was not trained on, or categories not seen
        in fit.
    """
    # a path is read as the model's training data was (svmlight indices, hashing), and
    # categorical columns coded by the model's categories
    if isinstance(data, Dataset):
        dataset = data
    else:
        reading = reading_for(model, data) if isinstance(data, str | os.PathLike) else {}
        names = named_features(model)
        if names is not None and "features" not in reading:
            reading["features"] = names  # the model's columns, by name
        dataset = open_dataset(data, categories=getattr(model, "categories_", None),
                               **reading)
    check_hashed_as_trained(model, dataset)
    check_named_as_trained(model, dataset)
    check_coded_as_trained(model, dataset)
    if dataset.task is None:
        raise LabelError("evaluate needs data with a target; pass target=... to open_dataset")
    model_classes = getattr(model, "classes_", None)
    if model_classes is not None:  # one class, or classes the model lacks, still score
        dataset = dataset.with_classes_of(model_classes)
    scoring = EvaluatePass(model, task=dataset.task, classes=dataset.classes,
                           feature_names=None if dataset.is_sparse else dataset.feature_names)
    metrics = resolve_engine(engine).run(scoring, dataset, description="evaluate")
    reading = getattr(model, "_unseen_category_reading", None)  # what the model does
    counts = {str(f): len(c) for f, c in (getattr(model, "categories_", None) or {}).items()}
    for feature, n in metrics.get("unseen_categories", {}).items():
        said = (reading(str(feature), counts[str(feature)])
                if reading is not None and str(feature) in counts
                else "they were scored as one category past those seen in fit")
        warnings.warn(f"feature {feature!r} holds {n:,} value(s) not seen in fit; {said}",
                      UserWarning, stacklevel=2)
    if dataset.classes is not None:
        metrics["classes"] = dataset.classes.tolist()
    if metrics.get("unseen_classes"):
        warnings.warn(unseen_classes_message(metrics["unseen_classes"]), stacklevel=2)
    return metrics


def unseen_classes_message(unseen: dict[Any, Any]) -> str:
    """One sentence on the rows whose labels the model has no class for."""
    shown = ", ".join(f"{label!r} ({n:,})" for label, n in list(unseen.items())[:10])
    more = f" and {len(unseen) - 10} more" if len(unseen) > 10 else ""
    return (f"the data hold labels the model was not trained on, counted as errors: "
            f"{shown}{more}")
