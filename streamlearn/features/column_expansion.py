"""``ColumnExpansion``: a map from the columns given to a model to the columns it reads.

The indicator columns of categorical features
(:class:`~streamlearn.features.category_indicators.CategoryIndicators`) and the
missing-value indicators (:class:`~streamlearn.features.missing_values.MissingValues`)
each read every given column as one or more columns. What follows from that alone lives
here: the column counts, the check of a block of rows, and the sum of per-column values
(importances) back onto the given columns.
"""

from __future__ import annotations

import numpy as np


class ColumnExpansion:
    """The shared part of the maps from given columns to read columns.

    A subclass has ``source_names`` (the given columns), ``feature_names`` (the columns
    read) and :meth:`source_columns` (the given column of each column read).
    """

    source_names: tuple[str, ...]
    feature_names: tuple[str, ...]

    def source_columns(self) -> np.ndarray:
        """The input column of each output column, shape (n_features,)."""
        raise NotImplementedError

    @property
    def n_columns(self) -> int:
        """Columns of the input rows."""
        return len(self.source_names)

    @property
    def n_features(self) -> int:
        """Columns of the output rows."""
        return len(self.feature_names)

    def _given_rows(self, X: np.ndarray) -> np.ndarray:
        """``X`` as an array of rows of the input columns (a ``ValueError`` otherwise)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_columns:
            raise ValueError(f"rows of {self.n_columns} columns expected, got shape "
                             f"{X.shape}")
        return X

    def fold(self, values: np.ndarray) -> np.ndarray:
        """Per-output-column values summed back to one per input column (importances).

        Parameters
        ----------
        values : ndarray of shape (n_features,)

        Returns
        -------
        ndarray of shape (n_columns,), float64
        """
        return np.bincount(self.source_columns(), weights=np.asarray(values, np.float64),
                           minlength=self.n_columns)
