"""``MissingValuesPass``: one reduction pass that learns how a model reads missing values.

It counts each column's missing values (NaN) exactly and keeps a uniform row sample
(:class:`~streamlearn.engine.row_sample.BottomKSample`), from which it makes the
:class:`~streamlearn.features.missing_values.MissingValues` map of ``nan_policy="impute"``:
the fill values (each column's median, a categorical column's most frequent code), the
regressions that predict a numeric column's missing values from the other columns, and the
columns given an indicator.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.engine.row_sample import BottomKSample
from streamlearn.features.missing_values import (
    MAX_REGRESSION_COLUMNS,
    FillRegression,
    MissingValues,
    most_frequent,
)
from streamlearn.warning_origin import caller_stacklevel

#: Rows sampled for the fill values: a median's rank error is then about 0.03 with
#: probability 0.99 (see :mod:`~streamlearn.engine.row_sample`).
SAMPLE_ROWS = 4096


@dataclass
class MissingCounts:
    """Partial state of :class:`MissingValuesPass`: rows, missing values per column and
    the row sample."""

    rows: int
    missing: np.ndarray
    sample: BottomKSample


class MissingValuesPass:
    """Reduction pass that learns the :class:`MissingValues` of dense training rows.

    Parameters
    ----------
    feature_names : sequence of str
    categorical : sequence of int
        Columns of category codes (filled with their most frequent code).
    seed : int
        Selects the row sample; the result does not depend on chunking or merge order.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, feature_names: Sequence[str], categorical: Sequence[int] = (),
                 seed: int = 0) -> None:
        self.feature_names = [str(n) for n in feature_names]
        self.categorical = tuple(int(j) for j in categorical)
        self.seed = int(seed)

    def __repr__(self) -> str:
        return f"MissingValuesPass({len(self.feature_names)} features)"

    def start(self) -> MissingCounts:
        """Empty state."""
        d = len(self.feature_names)
        return MissingCounts(0, np.zeros(d, dtype=np.int64),
                             BottomKSample(SAMPLE_ROWS, d, self.seed))

    def step(self, state: MissingCounts, chunk: Chunk) -> MissingCounts:
        """Fold one chunk into ``state`` (in place)."""
        if chunk.is_sparse or chunk.X.shape[1] != len(self.feature_names):
            raise ValueError(f"dense chunks of {len(self.feature_names)} columns expected")
        state.rows += chunk.n_rows
        state.missing += np.isnan(chunk.X).sum(axis=0)
        state.sample.update(chunk.X, chunk.rows)
        return state

    def merge(self, a: MissingCounts, b: MissingCounts) -> MissingCounts:
        """Combine the states of two disjoint sets of chunks (a new state)."""
        return MissingCounts(a.rows + b.rows, a.missing + b.missing, a.sample.merge(b.sample))

    def finish(self, state: MissingCounts) -> MissingValues:
        """The map: fill values from the sample, indicators where values were missing."""
        sample = np.asarray(state.sample.values, dtype=np.float64)
        fill = []
        for j in range(len(self.feature_names)):
            seen = sample[:, j][~np.isnan(sample[:, j])]
            fill.append(0.0 if seen.size == 0 else
                        most_frequent(seen) if j in self.categorical else
                        float(np.median(seen)))
        columns = np.flatnonzero((state.missing > 0) & (state.missing < state.rows))
        empty = np.flatnonzero(state.missing == state.rows) if state.rows else []
        if len(empty):
            warn_of_empty_columns([self.feature_names[j] for j in empty], state.rows)
        numeric = [j for j in range(len(self.feature_names)) if j not in self.categorical]
        regression = None
        if len(numeric) <= MAX_REGRESSION_COLUMNS and sample.shape[0] > 1:
            filled = np.where(np.isnan(sample), np.asarray(fill), sample)
            regression = FillRegression.fitted(
                sample, filled, [j for j in columns if j in numeric], numeric)
        return MissingValues.of(self.feature_names, fill, columns, regression, empty)


def warn_of_empty_columns(names: Sequence[str], rows: int) -> None:
    """Warn that the columns ``names`` are missing in all ``rows`` training rows: the map
    fills them with 0 and gives them no indicator, so a model learns nothing from them."""
    listed = ", ".join(repr(n) for n in names[:10]) + \
        (f" and {len(names) - 10} more" if len(names) > 10 else "")
    warnings.warn(f"feature column(s) {listed} missing (NaN) in all {rows:,} training rows: "
                  "read as 0, they carry nothing to the model; drop them, or open the data "
                  "with open_dataset(..., exclude=[...]) (--exclude on the command line)",
                  UserWarning, stacklevel=caller_stacklevel())
