"""``class_weight``: per-class factors on the rows' weights, as scikit-learn's classifiers take.

A classifier's ``class_weight`` is None (every class 1), a dict from label to factor (labels
left out keep 1), or ``"balanced"``: ``n / (k n_c)`` for class ``c`` with ``n_c`` of the
``n`` rows and ``k`` classes, so that every class weighs the same in the loss and the total
weight stays ``n`` (scikit-learn's ``compute_class_weight``). With sample weights, ``n_c``
and ``n`` are sums of the weights, as scikit-learn counts them: a row of weight 0 counts
as no row, one of weight 2 as two. ``fit`` multiplies every row's sample weight by its
class's factor as the rows are read (:meth:`~streamlearn.data.Dataset.with_class_weight`);
``"balanced"`` counts the classes first, by one scan of the target and weight columns
alone. ``partial_fit`` takes a dict (a stream's class counts are not known at its first
chunk) and multiplies the chunk's weights by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.utils._param_validation import StrOptions

from streamlearn.data import Dataset
from streamlearn.data.validation import missing_labels
from streamlearn.errors import LabelError

#: The ``_parameter_constraints`` entry of ``class_weight``.
CLASS_WEIGHT_CONSTRAINT: list[Any] = [dict, StrOptions({"balanced"}), None]

def class_factors(class_weight: Mapping[Any, float] | str | None, classes: np.ndarray,
                  counts: np.ndarray | None = None) -> np.ndarray:
    """The factor of each class in ``classes`` (float64, in their order).

    Parameters
    ----------
    class_weight : dict, "balanced" or None
    classes : ndarray
        The sorted labels.
    counts : ndarray, optional
        Rows (or summed sample weights) of each class; needed for ``"balanced"``.

    Raises
    ------
    ValueError
        A dict naming a label that is not a class, or a factor that is not a finite
        non-negative number; ``"balanced"`` without counts or with a class of no rows.
    """
    k = len(classes)
    if class_weight is None:
        return np.ones(k)
    if isinstance(class_weight, str):
        if counts is None:
            raise ValueError("class_weight='balanced' needs the class counts")
        counts = np.asarray(counts, dtype=np.float64)
        if (counts <= 0).any():
            empty = [_plain(c) for c in classes[counts <= 0]]
            raise ValueError(f"class_weight='balanced': classes {empty} have no rows of "
                             "positive weight")
        return counts.sum() / (k * counts)
    factors = np.ones(k)
    listed = [_plain(c) for c in classes.tolist()]
    as_text = {str(c): c for c in listed}
    # a label written as text (a JSON key, a command line's --param) names its class too
    class_weight = {(label if _plain(label) in listed or str(label) not in as_text
                     else as_text[str(label)]): factor
                    for label, factor in class_weight.items()}
    unknown = [label for label in class_weight if _plain(label) not in listed]
    if unknown:
        raise ValueError(f"class_weight names {unknown!r}, which are not among the classes "
                         f"{listed[:20]}")
    for label, factor in class_weight.items():
        try:
            value = float(factor)
        except (TypeError, ValueError):
            value = float("nan")
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"class_weight[{label!r}] is {factor!r}; class weights are "
                             "finite non-negative numbers")
        factors[listed.index(_plain(label))] = value
    if not factors.any():
        raise ValueError(f"class_weight {dict(class_weight)!r} gives every class the factor "
                         "0: no row would count")
    return factors


def _present(labels: np.ndarray) -> np.ndarray | slice:
    """The labels that are not missing text labels (None, which cannot be ordered among
    strings, and counts for no class: reading the rows drops or refuses it)."""
    missing = missing_labels(labels) if labels.dtype.kind == "O" else None
    return slice(None) if missing is None else ~missing


def class_counts(dataset: Dataset) -> np.ndarray:
    """Rows of each class of ``dataset`` (in the order of its ``classes``), or with a weight
    column their summed weights (float64), by one scan of its target and weight columns
    (nothing else is read); times the dataset's ``class_factors`` when it has them (the
    weight of each class as the rows are read).

    A weight that is negative or not finite counts as 0 here: reading the rows refuses
    it, naming the row."""
    assert dataset.target is not None and dataset.classes is not None
    classes = dataset.classes
    counts = np.zeros(len(classes), dtype=np.float64)
    for i in range(len(dataset.source.pieces)):
        labels = np.asarray(dataset.source.read_target(i, dataset.target))
        present = _present(labels)
        labels = labels[present]
        found = np.searchsorted(classes, labels)
        inside = found < len(classes)
        inside[inside] &= classes[found[inside]] == labels[inside]
        if dataset.weight is None:
            weight = np.ones(inside.sum())
        else:
            w = np.asarray(dataset.source.read_target(i, dataset.weight), dtype=np.float64)
            weight = np.where(np.isfinite(w) & (w > 0), w, 0.0)[present][inside]
        counts += np.bincount(found[inside], weights=weight, minlength=len(classes))
    factors = dataset.class_factors
    return counts if factors is None else counts * np.asarray(factors, dtype=np.float64)


def weighted_rows(dataset: Dataset) -> int:
    """Rows of ``dataset`` whose weight is positive (its sample weight times its class's
    factor, as the rows are read), by one scan of its target and weight columns (nothing
    is read for unweighted data: ``n_rows``). A row of weight 0 is no row.

    A weight that is negative or not finite counts as 0 here: reading the rows refuses
    it, naming the row. Without classes (a regression target) only the weight column is
    read."""
    if dataset.weight is None and dataset.class_factors is None:
        return int(dataset.n_rows)
    if dataset.classes is None:
        assert dataset.weight is not None
        rows = 0
        for i in range(len(dataset.source.pieces)):
            w = np.asarray(dataset.source.read_target(i, dataset.weight), dtype=np.float64)
            rows += int(np.count_nonzero(np.isfinite(w) & (w > 0)))
        return rows
    assert dataset.target is not None and dataset.classes is not None
    classes = dataset.classes
    factors = (np.ones(len(classes)) if dataset.class_factors is None
               else np.asarray(dataset.class_factors, dtype=np.float64))
    rows = 0
    for i in range(len(dataset.source.pieces)):
        labels = np.asarray(dataset.source.read_target(i, dataset.target))
        present = _present(labels)
        labels = labels[present]
        found = np.searchsorted(classes, labels)
        inside = found < len(classes)
        inside[inside] &= classes[found[inside]] == labels[inside]
        weight = factors[found[inside]]
        if dataset.weight is not None:
            w = np.asarray(dataset.source.read_target(i, dataset.weight), dtype=np.float64)
            weight = weight * np.where(np.isfinite(w) & (w > 0), w, 0.0)[present][inside]
        rows += int(np.count_nonzero(weight > 0))
    return rows


def check_weighted_classes(dataset: Dataset) -> None:
    """Refuse weighted training data whose weights leave fewer than two classes with rows
    of positive weight (a scan of its target and weight columns, :func:`class_counts`;
    nothing is read for unweighted data).

    Raises
    ------
    LabelError
    """
    if dataset.weight is None and dataset.class_factors is None:
        return
    assert dataset.classes is not None
    counts = class_counts(dataset)
    kept = [_plain(c) for c, n in zip(dataset.classes.tolist(), counts, strict=True) if n > 0]
    if len(kept) < 2:
        zero = [_plain(c) for c, n in zip(dataset.classes.tolist(), counts, strict=True)
                if not n > 0]
        raise LabelError(f"the sample and class weights leave {len(kept)} class(es) with rows "
                         f"of positive weight ({kept}; {zero} weigh 0): a classifier needs "
                         "two")


def balanced_factors(dataset: Dataset) -> dict[Any, float]:
    """``class_weight="balanced"`` of ``dataset`` as the dict ``partial_fit`` takes: label ->
    ``n / (k n_c)``, from one scan of its target and weight columns (:func:`class_counts`)."""
    assert dataset.classes is not None
    factors = class_factors("balanced", dataset.classes, class_counts(dataset))
    return {_plain(c): float(f) for c, f in zip(dataset.classes.tolist(), factors,
                                                strict=True)}


def class_weighted(dataset: Dataset, class_weight: Mapping[Any, float] | str | None
                   ) -> tuple[Dataset, np.ndarray]:
    """``dataset`` with its rows weighted by ``class_weight``, and the factors used."""
    assert dataset.classes is not None
    counts = class_counts(dataset) if isinstance(class_weight, str) else None
    factors = class_factors(class_weight, dataset.classes, counts)
    return dataset.with_class_weight(factors), factors


def partial_fit_weights(class_weight: Mapping[Any, float] | str | None, classes: np.ndarray,
                        codes: np.ndarray, sample_weight: np.ndarray | None
                        ) -> np.ndarray | None:
    """One ``partial_fit`` chunk's sample weights times its rows' class factors.

    Raises
    ------
    ValueError
        For ``"balanced"``, which needs the class counts of the whole stream.
    """
    if class_weight is None:
        return sample_weight
    if isinstance(class_weight, str):
        raise ValueError("class_weight='balanced' needs the class counts of all rows, which "
                         "partial_fit does not see; pass a dict of factors (e.g. n / (k n_c) "
                         "from counts of a sample), or use fit")
    factor = class_factors(class_weight, classes)[codes]
    if sample_weight is None:
        return factor.astype(np.float32)
    weight = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    if weight.shape != factor.shape:
        raise ValueError(f"y has {factor.size} rows but sample_weight has {weight.size}")
    return (factor * weight).astype(np.float32)


def _plain(label: Any) -> Any:
    return label.item() if isinstance(label, np.generic) else label
