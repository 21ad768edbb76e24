"""Indicator columns of categorical features, built from their codes as chunks stream by.

A categorical column arrives as codes ``0 .. k-1`` (:mod:`streamlearn.data.categories`).
A model that reads features as numbers would put the categories on a line in the sorted
order of their names; :class:`CategoryIndicators` replaces such a column by ``k``
indicator columns instead (one-hot), the rule being:

- a column of more than two and at most ``MAX_INDICATOR_CATEGORIES`` categories becomes
  ``k`` indicator columns, in the column's place, named ``"<column>=<category>"``;
- a column of two categories stays its 0/1 code (one indicator, exactly); there the
  model reads a category unseen in fit as the column's training mean, not as the code
  ``2`` past both (``StreamEstimator._indicator_rows``, before this map);
- a column of more categories stays its codes (the model's fit warns of it);
- a code that names no category of the list (``k``, a category unseen in fit; NaN, a
  missing value, which ``nan_policy=<number>`` leaves missing in such a column) sets no
  indicator: every indicator of the column is 0, which is neutral.

The map keeps every other column as it is, so a model keeps the raw columns as its public
input and applies :meth:`CategoryIndicators.apply` to them, in training (through
:meth:`~streamlearn.data.Dataset.with_feature_expansion`) and at prediction alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.features.column_expansion import ColumnExpansion

#: A categorical column with more categories than this keeps its codes.
MAX_INDICATOR_CATEGORIES = 256


@dataclass(frozen=True)
class CategoryIndicators(ColumnExpansion):
    """One-hot columns in place of the categorical columns of a table of codes.

    Attributes
    ----------
    source_names : tuple of str
        Names of the input columns.
    columns : tuple of int
        The input columns replaced by indicators, ascending.
    counts : tuple of int
        Their numbers of categories (one indicator column each).
    feature_names : tuple of str
        Names of the output columns.

    Examples
    --------
    >>> m = CategoryIndicators.of(["x", "c"], {"c": ("a", "b", "z")})
    >>> m.feature_names
    ('x', 'c=a', 'c=b', 'c=z')
    >>> m.apply(np.array([[0.5, 2.0], [1.0, 3.0]], dtype=np.float32))
    array([[0.5, 0. , 0. , 1. ],
           [1. , 0. , 0. , 0. ]], dtype=float32)
    """

    source_names: tuple[str, ...]
    columns: tuple[int, ...]
    counts: tuple[int, ...]
    feature_names: tuple[str, ...]

    @classmethod
    def of(cls, feature_names: Sequence[str], categories: Mapping[str, Sequence[Any]],
           max_categories: int = MAX_INDICATOR_CATEGORIES) -> CategoryIndicators | None:
        """The indicators of a table's categorical columns by the module's rule.

        Parameters
        ----------
        feature_names : sequence of str
            The table's columns.
        categories : mapping of str to sequence
            Column name -> its categories (code ``i`` is ``categories[name][i]``).
        max_categories : int
            Most categories a column may have to be given indicators.

        Returns
        -------
        CategoryIndicators or None
            None when no column qualifies.
        """
        names = [str(n) for n in feature_names]
        chosen = sorted(names.index(str(name)) for name, values in categories.items()
                        if str(name) in names and 2 < len(values) <= max_categories)
        if not chosen:
            return None
        lists = {str(name): list(values) for name, values in categories.items()}
        out: list[str] = []
        for j, name in enumerate(names):
            if j in chosen:
                out.extend(f"{name}={value}" for value in lists[name])
            else:
                out.append(name)
        return cls(tuple(names), tuple(chosen), tuple(len(lists[names[j]]) for j in chosen),
                   tuple(out))

    def source_columns(self) -> np.ndarray:
        """The input column of each output column, shape (n_features,)."""
        width = np.ones(self.n_columns, dtype=np.int64)
        width[list(self.columns)] = self.counts
        return np.repeat(np.arange(self.n_columns), width)

    def indicator_columns(self) -> tuple[int, ...]:
        """The output columns that are indicators, ascending."""
        source = self.source_columns()
        return tuple(int(i) for i in np.flatnonzero(np.isin(source, self.columns)))

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Rows of codes with their categorical columns replaced by indicators.

        Parameters
        ----------
        X : ndarray of shape (n, n_columns)

        Returns
        -------
        ndarray of shape (n, n_features), float32
        """
        X = self._given_rows(X)
        source = self.source_columns()
        out = np.ascontiguousarray(X[:, source], dtype=np.float32)
        start = 0
        rows = np.arange(X.shape[0])
        for j, k in zip(self.columns, self.counts, strict=True):
            first = start + int(np.searchsorted(source[start:], j))
            codes = X[:, j]
            known = (codes >= 0) & (codes < k) & (codes == np.floor(codes))
            block = np.zeros((X.shape[0], k), dtype=np.float32)
            block[rows[known], codes[known].astype(np.int64)] = 1.0
            out[:, first:first + k] = block
            start = first + k
        return out

    def codes(self, Z: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`apply`: rows of the input columns, each categorical column
        the code of its indicator set (``k``, a category unseen in fit, where none is).

        Parameters
        ----------
        Z : ndarray of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_columns), float32
        """
        Z = np.asarray(Z)
        source = self.source_columns()
        out = np.empty((Z.shape[0], self.n_columns), dtype=np.float32)
        firsts = np.searchsorted(source, np.arange(self.n_columns))
        for j, first in enumerate(firsts):
            out[:, j] = Z[:, first]
        for j, k in zip(self.columns, self.counts, strict=True):
            block = Z[:, firsts[j]:firsts[j] + k]
            out[:, j] = np.where(block.max(axis=1) > 0, np.argmax(block, axis=1), k)
        return out
