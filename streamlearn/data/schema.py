"""What a dataset holds, known without reading its rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Task = Literal["classification", "regression"]


@dataclass(frozen=True)
class Schema:
    """Shape and meaning of a dataset's columns.

    Attributes
    ----------
    n_rows : int
        Number of rows (from file footers, store shapes or in-memory lengths), the rows
        ``nan_policy="drop"`` drops included: those are found only as the rows are read.
    feature_names : tuple of str
        Columns delivered as ``Chunk.X``, in order.
    target : str or None
        Name of the target column.
    task : {"classification", "regression"} or None
        What the target is for; None without a target.
    classes : ndarray or None
        Sorted class labels (classification only); ``Chunk.y`` holds indices into it.
    weight : str or None
        Name of the sample-weight column.
    dtype : numpy dtype
        Dtype of ``Chunk.X`` (always float32).
    source : str
        Where the rows come from, for messages.
    categories : dict of str to tuple
        Category list of each string or categorical feature (``Chunk.X`` holds codes).
    """

    n_rows: int
    feature_names: tuple[str, ...]
    target: str | None
    task: Task | None
    classes: np.ndarray | None
    weight: str | None
    source: str
    dtype: np.dtype = field(default_factory=lambda: np.dtype(np.float32))
    categories: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return len(self.feature_names)

    @property
    def n_classes(self) -> int | None:
        """Number of classes, or None for regression / no target."""
        return None if self.classes is None else len(self.classes)

    def __str__(self) -> str:
        lines = [
            f"source   : {self.source}",
            f"rows     : {self.n_rows:,}",
            f"features : {self.n_features} ({_abbreviate(self.feature_names)})",
            f"dtype    : {self.dtype}",
        ]
        if self.target is not None:
            lines.append(f"target   : {self.target} ({self.task})")
        if self.classes is not None:
            lines.append(f"classes  : {len(self.classes)} ({_abbreviate(self.classes.tolist())})")
        if self.weight is not None:
            lines.append(f"weight   : {self.weight}")
        for name, values in self.categories.items():
            lines.append(f"category : {name} ({len(values)}: {_abbreviate(values)})")
        return "\n".join(lines)


def _abbreviate(items: object, limit: int = 8) -> str:
    seq = list(items) if not hasattr(items, "__getitem__") else items  # type: ignore[attr-defined]
    if len(seq) <= limit:  # type: ignore[arg-type]
        return ", ".join(str(v) for v in seq)  # type: ignore[attr-defined]
    head = [str(v) for v in seq[: limit - 2]]  # type: ignore[index]
    return ", ".join(head) + f", ..., {seq[-1]}"  # type: ignore[index]
