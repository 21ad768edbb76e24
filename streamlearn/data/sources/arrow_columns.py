"""Converting Arrow columns (parquet row groups, in-memory tables) into a ``Block``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamlearn.data.categories import distinct_values, encode_categories
from streamlearn.data.precision import column_spans
from streamlearn.data.sources.base import Block, ColumnKind, stack_columns
from streamlearn.errors import DataError, SchemaError


def arrow_kind(dtype: pa.DataType) -> ColumnKind:
    """Classify an Arrow type."""
    if pa.types.is_boolean(dtype):
        return ColumnKind.BOOL
    if pa.types.is_integer(dtype):
        return ColumnKind.INTEGER
    if pa.types.is_floating(dtype) or pa.types.is_decimal(dtype):
        return ColumnKind.NUMERIC
    if pa.types.is_dictionary(dtype):
        return ColumnKind.CATEGORICAL
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return ColumnKind.STRING
    if pa.types.is_string_view(dtype):
        return ColumnKind.STRING
    return ColumnKind.OTHER


def pandas_index_columns(schema: pa.Schema) -> list[str]:
    """The columns in which pandas stored a frame's index (``__index_level_0__`` or a
    named index), from the schema's pandas metadata; a ``RangeIndex`` is not stored."""
    try:
        metadata = schema.pandas_metadata or {}
    except (ValueError, TypeError):  # malformed metadata: no index to leave out
        return []
    return [c for c in metadata.get("index_columns", ()) if isinstance(c, str)]


def feature_array(column: pa.ChunkedArray | pa.Array, name: str = "",
                  where: str = "", dtype: pa.DataType | None = None) -> np.ndarray:
    """One numeric or boolean Arrow column as float32 (or ``dtype``: float64 for weights,
    checked before their cast, and for the features :func:`arrow_read_as_float64` names,
    whose ranges are taken before theirs), nulls as NaN."""
    dtype = dtype or pa.float32()
    if column.type != dtype:
        try:
            column = pc.cast(column, dtype, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"feature column {name!r} of {where} is {column.type}, which "
                              f"does not convert to numbers ({exc})") from exc
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column.to_numpy(zero_copy_only=False)


def arrow_read_as_float64(dtype: pa.DataType) -> bool:
    """Whether a numeric feature column of Arrow type ``dtype`` is read as float64 (its
    range taken before its cast to float32: :mod:`streamlearn.data.precision`): float64,
    decimals, and integers of 32 bits or more, whose values the cast can round."""
    return (dtype == pa.float64() or pa.types.is_decimal(dtype)
            or (pa.types.is_integer(dtype) and dtype.bit_width >= 32))


def column_categories(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Distinct non-null values of a string or dictionary column, as Python scalars."""
    if pa.types.is_dictionary(column.type):
        column = _decoded(column)
    return distinct_values(pc.unique(column).drop_null().to_pylist())


def category_codes(column: pa.ChunkedArray | pa.Array, index: Any) -> np.ndarray:
    """A string or dictionary column coded by the category list ``index`` (float32)."""
    if pa.types.is_dictionary(column.type):
        column = _decoded(column)
    values = column.to_numpy(zero_copy_only=False) if isinstance(column, pa.Array) else \
        np.concatenate([c.to_numpy(zero_copy_only=False) for c in column.chunks]) \
        if column.num_chunks else np.empty(0, dtype=object)
    return encode_categories(values, index)


def _decoded(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    if isinstance(column, pa.Array):
        return column.dictionary_decode()
    return pa.chunked_array([c.dictionary_decode() for c in column.chunks],
                            type=column.type.value_type)


def target_array(column: pa.ChunkedArray, name: str, where: str, file_row: int) -> np.ndarray:
    """The target column as numpy; categorical targets decoded to their values.

    Nulls in a floating-point, integer or boolean target become NaN (the column then
    float64), handled by the dataset's ``nan_policy`` as a NaN label is; the dataset gives
    an integer or boolean target's classes their type back. A null text or categorical
    label is None (an object array), which the dataset drops under ``nan_policy="drop"``
    and refuses otherwise. In an integer target with values beyond 2**53 (which float64
    rounds) nulls are an error, since no label can stand in for them. A decimal target (a
    database's ``NUMERIC`` labels or values) is a number column: read as float64, as a
    float target is.
    """
    if pa.types.is_decimal(column.type):
        column = pc.cast(column, pa.float64())
    if pa.types.is_floating(column.type):
        return feature_array(column) if column.type == pa.float32() else \
            column.to_numpy() if column.null_count == 0 else \
            pc.fill_null(column, float("nan")).to_numpy()
    if column.null_count and (
        pa.types.is_boolean(column.type)
        or (pa.types.is_integer(column.type) and exact_in_float64(column))
    ):
        return pc.fill_null(pc.cast(column, pa.float64()), float("nan")).to_numpy()
    if pa.types.is_dictionary(column.type):
        column = pa.chunked_array(
            [c.dictionary_decode() for c in column.chunks], type=column.type.value_type
        )
    if column.null_count and not pa.types.is_integer(column.type):
        return column.to_numpy()  # an object array, None where null
    if column.null_count:
        first = pc.index(pc.is_null(column), True).as_py()
        raise DataError(
            f"target column {name!r} is null at row {file_row + first} of {where}; "
            "labels cannot be missing: remove those rows from the data"
        )
    return column.to_numpy()


def exact_in_float64(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether every value of an integer column is a float64 number (within 2**53)."""
    if column.type.bit_width <= 32:
        return True
    extremes = pc.min_max(column)
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    return low is None or max(abs(low), abs(high)) <= 2**53


def arrow_block(
    table: pa.Table,
    features: list[str],
    target: str | None,
    weight: str | None,
    *,
    where: str,
    file_row: int = 0,
    constants: dict[str, Any] | None = None,
    categories: dict[str, Any] | None = None,
) -> Block:
    """Convert the rows of ``table`` to a ``Block``.

    ``constants`` supplies columns absent from the table but constant over it (hive
    partition keys taken from the file's path). Columns named in ``categories`` (name ->
    category index) are coded (:mod:`streamlearn.data.categories`).
    """
    constants = constants or {}
    categories = categories or {}
    n = table.num_rows

    def column(name: str) -> pa.ChunkedArray:
        if name in constants:
            return pa.chunked_array([pa.array([constants[name]] * n)])
        return table.column(name)

    # columns whose cast can round (float64, integers of 32 bits or more, decimals) are
    # read as float64 and cast by stack_columns, after their ranges are taken
    def feature(name: str) -> np.ndarray:
        values = column(name)
        if name in categories:
            return category_codes(values, categories[name])
        return feature_array(values, name, where,
                             pa.float64() if arrow_read_as_float64(values.type) else None)

    cols = [feature(f) for f in features]
    spans = column_spans(cols)
    X = stack_columns(cols, n)
    y = target_array(column(target), target, where, file_row) if target is not None else None
    w = (feature_array(column(weight), weight, where, pa.float64()) if weight is not None
         else None)
    return Block(X=X, y=y, weight=w, spans=spans)
