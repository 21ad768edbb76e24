"""Categorical and string feature columns, coded as float32 numbers in the stream.

A column of categories (a pandas ``category`` column, a pandas or Arrow string column, an
Arrow dictionary column) is delivered in ``Chunk.X`` as the position of each value in the
column's category list: ``0.0 .. k-1`` for ``k`` categories.

- The category list comes from the schema where it records one (the categories of a pandas
  ``category`` column, the known categories of a dask one); otherwise from one scan of the
  column, and is then sorted, so it does not depend on row order.
- A missing value (``None``, ``NaN``, ``pd.NA``, an Arrow null) becomes NaN, so the
  dataset's ``nan_policy`` handles it like any missing number.
- A value that is not in the list (possible only when the list is fixed in advance, as at
  prediction time with the categories seen in ``fit``) gets the reserved code ``k``, one past
  the last category: "a category not seen in training".
- A number matched against a list of text categories is matched by its text (``10`` and
  ``10.0`` name the category ``"10"``): a CSV file reads as numbers the codes that a
  parquet file holds as strings. The other way round, a text matched against a list of
  number categories names the number whose text it is (``"10"`` names ``10``, ``"10.0"``
  nothing).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from streamlearn.errors import SchemaError

#: A column with more distinct values than this is refused as a categorical feature.
MAX_CATEGORIES = 65_536
#: A scanned column whose distinct values exceed this fraction of the rows (and
#: ``MIN_IDENTIFIER_VALUES``) is taken for an identifier or free text, not a category.
MAX_DISTINCT_FRACTION = 0.5
#: Fewer distinct values than this never count as an identifier.
MIN_IDENTIFIER_VALUES = 50
#: How to leave a column out, wherever the data was given.
LEAVE_OUT = ("leave it out: drop it from the table given to fit, or open the data with "
             "open_dataset(..., exclude=[...]) or features=[...] (--exclude or --features "
             "on the command line)")


def category_index(categories: Sequence[Any]) -> pd.Index:
    """A lookup index over a category list (positions are the codes)."""
    return pd.Index(list(categories), dtype=object)


def encode_categories(values: Any, index: pd.Index) -> np.ndarray:
    """Code the values of one column by their position in ``index``.

    Parameters
    ----------
    values : pandas Series, pandas Categorical, numpy array or Arrow array
        The column's values.
    index : pandas Index
        The category list, from :func:`category_index`.

    Returns
    -------
    ndarray of float32
        ``0 .. k-1`` for known categories, ``k = len(index)`` for a value not in the list,
        NaN for a missing value.
    """
    unseen = np.float32(len(index))
    if hasattr(values, "to_pandas") and not isinstance(values, pd.Series | pd.Index):
        values = values.to_pandas()
    if isinstance(values, pd.Series | pd.Index):
        values = values.array if isinstance(values.dtype, pd.CategoricalDtype) else \
            values.to_numpy(dtype=object, na_value=None)
    if isinstance(values, pd.Categorical):  # its categories looked up, then its codes
        lookup = _positions(np.asarray(values.categories, dtype=object), index)
        lookup[lookup < 0] = unseen
        codes = np.asarray(values.codes)
        out = np.full(codes.shape[0], np.nan, dtype=np.float32)
        present = codes >= 0
        out[present] = lookup[codes[present]]
        return out
    array = np.asarray(values, dtype=object)
    missing = pd.isna(array)
    out = _positions(array, index)
    out[out < 0] = unseen
    out[missing] = np.nan
    return out


def _positions(array: np.ndarray, index: pd.Index) -> np.ndarray:
    """Position in ``index`` of each value of an object ``array`` as float32, -1 where it
    is not there; a number is matched to text categories by its text, and a text to
    number categories when it is a number's text (:func:`number_text`)."""
    out = index.get_indexer(array).astype(np.float32)
    unknown = np.flatnonzero((out < 0) & ~pd.isna(array))
    if unknown.size and index.inferred_type == "string":  # numbers read for text codes?
        numbers = unknown[[_is_number(v) for v in array[unknown]]]
        out[numbers] = index.get_indexer([number_text(v) for v in array[numbers]])
    elif unknown.size and index.inferred_type in NUMBER_TYPES:  # text read for numbers?
        texts = pd.Index([number_text(v) for v in index], dtype=object)
        strings = unknown[[isinstance(v, str) for v in array[unknown]]]
        if strings.size and texts.is_unique:
            out[strings] = texts.get_indexer(array[strings])
    return out


#: What pandas infers of a category list of numbers (booleans are not numbers here).
NUMBER_TYPES = ("integer", "floating", "mixed-integer-float", "decimal")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_)


def number_text(value: Any) -> str:
    """A value as text, whole numbers without a point (``10.0`` -> ``"10"``): how a
    number names a text category or a class label's column."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def distinct_values(values: Any) -> list[Any]:
    """The distinct non-missing values of one column, as Python scalars (any order)."""
    if hasattr(values, "to_pandas") and not isinstance(values, pd.Series | pd.Index):
        values = values.to_pandas()
    if isinstance(values, pd.Series | pd.Index) and isinstance(values.dtype,
                                                               pd.CategoricalDtype):
        present = np.unique(np.asarray(values.array.codes))
        present = present[present >= 0]
        return values.array.categories.take(present).tolist()
    unique = pd.unique(pd.Series(np.asarray(values, dtype=object)).dropna())
    return [v.item() if isinstance(v, np.generic) else v for v in unique]


def sorted_categories(values: Iterable[Any], column: str, where: str,
                      n_rows: int | None = None) -> tuple[Any, ...]:
    """Distinct values found by a scan, in a deterministic order.

    Values of one type sort naturally; a mix of types sorts by type name, then text.
    A column with more than ``MAX_CATEGORIES`` values, or (given ``n_rows``) with more than
    ``MAX_DISTINCT_FRACTION`` of its rows distinct and at least ``MIN_IDENTIFIER_VALUES``
    values, is refused: it holds identifiers or free text, not categories.
    """
    found = set(values)
    stray = _text_among_numbers(found)
    mostly_numbers = (
        "" if stray is None else
        f"; all its values but {len(stray)} are numbers ({_examples(stray)}): a text cell "
        "makes a number column text, so fix or drop those cells (missing values: "
        "nan_policy) to read it as numbers")
    identifier = n_rows is not None and len(found) >= MIN_IDENTIFIER_VALUES and \
        len(found) > MAX_DISTINCT_FRACTION * n_rows
    if len(found) > MAX_CATEGORIES or identifier:
        counted = f"more than {MAX_CATEGORIES} distinct values" \
            if len(found) > MAX_CATEGORIES else \
            f"{len(found)} distinct values in {n_rows} rows"
        raise SchemaError(
            f"non-numeric feature column {column!r} of {where} has {counted}; it looks "
            f"like an identifier or free text, not a category; {LEAVE_OUT}" + mostly_numbers
        )
    if stray is not None:
        warnings.warn(f"feature column {column!r} of {where} is read as {len(found)} "
                      f"categories{mostly_numbers}", UserWarning, stacklevel=2)
    try:
        return tuple(sorted(found))
    except TypeError:
        return tuple(sorted(found, key=lambda v: (type(v).__name__, str(v))))


#: A text column whose distinct values are at least this many, all numbers but at most
#: ``MAX_STRAY_TEXT`` of them, is taken for a number column spoiled by a few text cells.
MIN_NUMBER_LIKE_VALUES = 10
MAX_STRAY_TEXT = 3


def _text_among_numbers(found: set[Any]) -> list[str] | None:
    """The few values of a text column (or of an object column mixing numbers and text)
    that are not numbers or their text, when all the others are (``MIN_NUMBER_LIKE_VALUES``
    or more of them); else None."""
    if len(found) < MIN_NUMBER_LIKE_VALUES or \
            not all(isinstance(v, str) or _is_number(v) for v in found):
        return None
    stray = []
    for value in found:
        if _is_number(value):
            continue
        try:
            float(value)
        except ValueError:
            stray.append(value)
            if len(stray) > MAX_STRAY_TEXT:
                return None
    return sorted(stray) if stray else None


def _examples(values: list[str]) -> str:
    return ", ".join(repr(v) for v in values)


def plain_categories(categories: Sequence[Any]) -> tuple[Any, ...]:
    """Categories as Python scalars (numpy scalars unwrapped), e.g. to write as JSON."""
    return tuple(v.item() if isinstance(v, np.generic) else v for v in categories)
