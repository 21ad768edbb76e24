"""In-memory tables: numpy arrays, pandas DataFrames and pyarrow Tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from streamlearn.data.categories import distinct_values, encode_categories
from streamlearn.data.precision import checked_dtype, column_spans, matrix_spans
from streamlearn.data.sources.arrow_columns import (
    arrow_block,
    arrow_kind,
    arrow_read_as_float64,
    column_categories,
    pandas_index_columns,
    target_array,
)
from streamlearn.data.sources.base import (
    Block,
    ColumnKind,
    Piece,
    default_feature_names,
    numpy_kind,
    stack_columns,
)
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.data.validation import missing_labels
from streamlearn.errors import DataError, LabelError, SchemaError, SourceError

#: Rows per piece of an in-memory source: reads are views or cheap copies, so this only sets
#: the granularity of conversion work.
PIECE_ROWS = 1 << 16


def _pieces(n_rows: int, description: str) -> list[Piece]:
    """Pieces of :data:`PIECE_ROWS` rows. A message names a row as "row R of <label>",
    R counted from the source's first row: a piece that is the whole source is labelled
    by its description alone ("row 3 of DataFrame of 300 rows"), one of several by its
    rows too ("row 70000 of DataFrame of 100000 rows, piece of rows 65536-100000")."""
    if n_rows <= PIECE_ROWS:
        return [Piece(n_rows, description, 0)] if n_rows else []
    return [
        Piece(min(PIECE_ROWS, n_rows - a),
              f"{description}, piece of rows {a}-{min(a + PIECE_ROWS, n_rows)}", a)
        for a in range(0, n_rows, PIECE_ROWS)
    ]


class NumpySource:
    """A 2-D feature matrix with optional target and weight arrays aligned with its rows."""

    in_memory = True

    def __init__(
        self,
        X: Any,
        y: Any = None,
        weight: Any = None,
        feature_names: list[str] | None = None,
        target_name: str = "y",
        weight_name: str = "weight",
    ) -> None:
        X = np.asarray(X)
        if X.ndim != 2:
            raise SourceError(f"X must be 2-D (rows x features), got shape {X.shape}")
        self.description = f"array of shape {X.shape}"
        self._X = X
        #: the columns have no names of their own (``x0, x1, ...`` are given here)
        self.unnamed_features = feature_names is None
        self._feature_names = list(feature_names) if feature_names is not None \
            else default_feature_names(X.shape[1])
        if len(self._feature_names) != X.shape[1]:
            raise SourceError(
                f"{len(self._feature_names)} feature names for {X.shape[1]} columns of X"
            )
        self.kinds: dict[str, ColumnKind] = dict.fromkeys(self._feature_names, numpy_kind(X.dtype))
        self._extra: dict[str, np.ndarray] = {}
        for name, values in ((target_name, y), (weight_name, weight)):
            if values is None:
                continue
            values = np.asarray(values)
            if values.ndim != 1 or values.shape[0] != X.shape[0]:
                raise DataError(
                    f"{name} has shape {values.shape}; "
                    f"expected ({X.shape[0]},), one value per row of X"
                )
            self._extra[name] = values
            self.kinds[name] = numpy_kind(values.dtype)
        self.columns = [*self._feature_names, *self._extra]
        self.pieces = _pieces(X.shape[0], self.description)

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Rows of piece ``i``; a view when X is already float32 and all features are used."""
        p = self.pieces[i]
        a, b = p.file_row, p.file_row + p.n_rows
        X = self._X[a:b]
        if features != self._feature_names:
            X = X[:, [self._feature_names.index(f) for f in features]]
        spans = matrix_spans(X)
        with np.errstate(over="ignore"):  # beyond float32's range: infinite, named later
            X = np.ascontiguousarray(X, dtype=np.float32)
        y = self._extra[target][a:b] if target is not None else None
        w = self._extra[weight][a:b].astype(np.float64, copy=False) if weight is not None else None
        return Block(X=X, y=y, weight=w, spans=spans)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Target values of piece ``i``."""
        p = self.pieces[i]
        return self._extra[target][p.file_row : p.file_row + p.n_rows]

    def known_classes(self, target: str) -> np.ndarray | None:
        """The labels present, read directly from the in-memory array
        (:func:`present_labels`)."""
        return present_labels(self._extra[target], target)


class ScipySparseSource:
    """A ``scipy.sparse`` matrix or array (any format), read as CSR rows without densifying.

    The matrix is converted to CSR once (a copy unless it already is one); rows with
    repeated column indices have them summed, as scipy does. Chunks are slices of its
    arrays: values are cast to float32 and indices to int32 a chunk at a time.
    """

    sparse = True
    in_memory = True

    def __init__(self, matrix: Any, y: Any = None, weight: Any = None,
                 target_name: str = "y", weight_name: str = "weight") -> None:
        from scipy import sparse

        if matrix.ndim != 2:
            raise SourceError(f"a sparse X must be 2-D (rows x features), got {matrix.shape}")
        csr = sparse.csr_array(matrix)
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        if csr.dtype.kind not in "biuf":
            raise SchemaError(f"sparse X holds {csr.dtype}, not numbers")
        self._csr = csr
        self.n_features = int(csr.shape[1])
        self.nnz = int(csr.nnz)
        self.description = (f"sparse {type(matrix).__name__} of shape {csr.shape} "
                            f"({self.nnz:,} non-zeros)")
        self.kinds: dict[str, ColumnKind] = {}
        self._extra: dict[str, np.ndarray] = {}
        for name, values in ((target_name, y), (weight_name, weight)):
            if values is None:
                continue
            values = np.asarray(values)
            if values.ndim != 1 or values.shape[0] != csr.shape[0]:
                raise DataError(f"{name} has shape {values.shape}; "
                                f"expected ({csr.shape[0]},), one value per row of X")
            self._extra[name] = values
            self.kinds[name] = numpy_kind(values.dtype)
        self.columns = list(self._extra)
        self.pieces = _pieces(csr.shape[0], self.description)

    def read_rows(self, a: int, b: int, features: Any, target: str | None,
                  weight: str | None) -> Block:
        """Rows ``a:b`` as :class:`SparseRows` (slices of the CSR arrays)."""
        csr = self._csr
        lo, hi = int(csr.indptr[a]), int(csr.indptr[b])
        X = SparseRows(np.asarray(csr.indptr[a : b + 1], dtype=np.int64) - lo,
                       np.ascontiguousarray(csr.indices[lo:hi], dtype=np.int32),
                       np.ascontiguousarray(csr.data[lo:hi], dtype=np.float32),
                       self.n_features)
        y = self._extra[target][a:b] if target is not None else None
        w = self._extra[weight][a:b].astype(np.float64, copy=False) if weight is not None else None
        return Block(X=X, y=y, weight=w)

    def read_piece(self, i: int, features: Any, target: str | None,
                   weight: str | None) -> Block:
        """Rows of piece ``i``."""
        p = self.pieces[i]
        return self.read_rows(p.file_row, p.file_row + p.n_rows, features, target, weight)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Target values of piece ``i``."""
        p = self.pieces[i]
        return self._extra[target][p.file_row : p.file_row + p.n_rows]

    def known_classes(self, target: str) -> np.ndarray | None:
        """The labels present, read directly from the in-memory array
        (:func:`present_labels`)."""
        return present_labels(self._extra[target], target)


def present_labels(values: np.ndarray, target: str) -> np.ndarray | None:
    """The distinct labels of an in-memory target array, or None for a float one (whose
    classes a scan finds, NaN left out). A missing label of an object array (None, NaN,
    ``pd.NA``) is no class: the dataset drops its row under ``nan_policy="drop"`` and
    refuses it, naming the row, otherwise, as it does a table's missing labels.

    Raises
    ------
    LabelError
        Labels of types that cannot be ordered (numbers mixed with text).
    """
    if values.dtype.kind == "f":
        return None
    if values.dtype.kind == "O":
        values = values[~missing_labels(values)]
    try:
        return np.unique(values)
    except TypeError as exc:
        raise LabelError(f"labels of target {target!r} mix types that cannot be "
                         f"ordered: {exc}") from exc


def pandas_kind(dtype: Any) -> ColumnKind:
    """Classify a pandas dtype (extension types included)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return ColumnKind.CATEGORICAL
    if pd.api.types.is_bool_dtype(dtype):
        return ColumnKind.BOOL
    if pd.api.types.is_integer_dtype(dtype):
        return ColumnKind.INTEGER
    if pd.api.types.is_complex_dtype(dtype):  # a number, but not one feature value
        return ColumnKind.OTHER
    if pd.api.types.is_numeric_dtype(dtype):
        return ColumnKind.NUMERIC
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        return ColumnKind.STRING
    return ColumnKind.OTHER


#: What pandas infers of an object column's non-missing values that makes them numbers.
OBJECT_NUMBER_TYPES = {"integer": ColumnKind.INTEGER, "floating": ColumnKind.NUMERIC,
                       "mixed-integer-float": ColumnKind.NUMERIC,
                       "decimal": ColumnKind.NUMERIC, "boolean": ColumnKind.BOOL}


def pandas_column_kind(series: pd.Series) -> ColumnKind:
    """Classify a pandas column by its dtype and, for an ``object`` column, its values.

    An ``object`` column whose non-missing values are all real numbers (Python or numpy
    integers and floats, ``Decimal``) is a number column, and one of booleans only a
    boolean column, as ``pd.to_numeric`` and ``infer_objects`` read them: its values
    are taken as numbers, in ``fit`` as in ``predict``. Any other ``object`` column (text,
    numbers mixed with text, no value at all) holds categories.
    """
    kind = pandas_kind(series.dtype)
    if kind is ColumnKind.STRING and pd.api.types.is_object_dtype(series.dtype):
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        return OBJECT_NUMBER_TYPES.get(inferred, kind)
    return kind


def pandas_feature(series: pd.Series, name: str, where: str,
                   dtype: type = np.float32) -> np.ndarray:
    """One numeric, boolean or nullable (``Int64``, ``Float64``, ``boolean``) column as
    ``dtype`` (float32; float64 for weights, checked before their cast, and for float64
    features, whose ranges are taken before theirs), missing values
    (``None``, ``NaN``, ``pd.NA``) as NaN. A column of another kind (dates, times and
    durations, whose cast would give nanoseconds; complex numbers, whose cast would drop
    their imaginary part; periods, intervals, nulls) is refused, as ``fit`` refuses it."""
    if pandas_kind(series.dtype) is ColumnKind.OTHER:
        raise SchemaError(f"feature column {name!r} of {where} is {series.dtype}, not numbers; "
                          "encode it as numbers first (a date, e.g., as days since a "
                          "reference date), or leave it out")
    try:
        return series.to_numpy(dtype=dtype, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"feature column {name!r} of {where} holds values that are not "
                          f"numbers ({exc}); encode it, or leave it out") from exc


def passthrough_values(series: pd.Series) -> np.ndarray:
    """A column's values as numpy, missing ones kept: NaN in a float column, None in any
    other (an object array), so that a table written from them holds nulls there."""
    if pd.api.types.is_float_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.astype(object).where(series.notna(), None).to_numpy(dtype=object)


def pandas_target(series: pd.Series, name: str, where: str, file_row: int) -> np.ndarray:
    """The target column as numpy: nullable numbers as plain numpy numbers, categorical
    labels decoded to their values, Arrow-backed decimals as float64. A missing float,
    integer or boolean value is NaN (the
    column then float64, as :func:`~streamlearn.data.sources.arrow_columns.target_array`
    gives it). A missing text or categorical label is None (an object array), which the
    dataset drops under ``nan_policy="drop"`` and refuses otherwise; a missing value of an
    integer target beyond 2**53 (which float64 would round) is an error."""
    dtype = series.dtype
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if pd.api.types.is_float_dtype(dtype) or (arrow is not None and pa.types.is_decimal(arrow)):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    missing = series.isna()
    if missing.any() and (pd.api.types.is_bool_dtype(dtype) or (
            pd.api.types.is_integer_dtype(dtype) and _within_float64(series))):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if missing.any() and not pd.api.types.is_integer_dtype(dtype):
        if isinstance(dtype, pd.CategoricalDtype):
            series = series.astype(dtype.categories.dtype)
        return series.astype(object).where(~missing, None).to_numpy(dtype=object)
    if missing.any():
        first = int(np.flatnonzero(missing.to_numpy())[0])
        raise DataError(
            f"target column {name!r} is missing at row {file_row + first} of {where}; "
            "labels cannot be missing: remove those rows from the data"
        )
    if isinstance(dtype, pd.CategoricalDtype):
        series = series.astype(dtype.categories.dtype)
        dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return series.to_numpy(dtype=bool)
    if pd.api.types.is_integer_dtype(dtype):
        return series.to_numpy(dtype=np.dtype(getattr(dtype, "numpy_dtype", dtype)))
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return series.to_numpy(dtype=object).astype(str)
    return series.to_numpy()


def _within_float64(series: pd.Series) -> bool:
    """Whether every value of an integer column is a float64 number (within 2**53)."""
    if np.dtype(getattr(series.dtype, "numpy_dtype", series.dtype)).itemsize <= 4:
        return True
    low, high = series.min(), series.max()
    return bool(pd.isna(low) or max(abs(int(low)), abs(int(high))) <= 2**53)


def pandas_block(frame: pd.DataFrame, features: list[str], target: str | None,
                 weight: str | None, where: str, file_row: int,
                 categories: dict[str, pd.Index] | None = None) -> Block:
    """Convert rows of a DataFrame to a ``Block``.

    Columns named in ``categories`` are coded by their category lists
    (:func:`~streamlearn.data.categories.encode_categories`).
    """
    n = len(frame)
    categories = categories or {}
    # columns whose cast can round (float64, integers of 32 bits or more) are read as
    # float64 and cast by stack_columns, after their ranges are taken
    cols = [encode_categories(frame[f], categories[f]) if f in categories
            else pandas_feature(frame[f], f, where, np.float64
                                if pandas_read_as_float64(frame[f].dtype) else np.float32)
            for f in features]
    spans = column_spans(cols)
    X = stack_columns(cols, n)
    y = pandas_target(frame[target], target, where, file_row) if target is not None else None
    w = pandas_feature(frame[weight], weight, where, np.float64) if weight is not None else None
    return Block(X=X, y=y, weight=w, spans=spans)


def pandas_read_as_float64(dtype: Any) -> bool:
    """Whether a numeric pandas column of ``dtype`` is read as float64 (its range taken
    before its cast to float32: :mod:`streamlearn.data.precision`): float64 and integers
    of 32 bits or more (numpy, nullable ``Float64``/``Int64`` or Arrow-backed), and
    Arrow-backed decimals, whose values the cast can round."""
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is not None:
        return arrow_read_as_float64(arrow)
    if not (pd.api.types.is_float_dtype(dtype) or pd.api.types.is_integer_dtype(dtype)):
        return False
    return checked_dtype(np.dtype(getattr(dtype, "numpy_dtype", dtype)))


def pandas_categories(frame: pd.DataFrame, names: list[str]) -> dict[str, list[Any]]:
    """Distinct non-missing values of the named columns of a DataFrame."""
    return {name: distinct_values(frame[name]) for name in names}


def known_pandas_categories(dtype: Any) -> tuple[Any, ...] | None:
    """The category list a pandas dtype records (a known ``category`` dtype), else None."""
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is not None:
        return tuple(dtype.categories.tolist())
    return None


class PandasSource:
    """A pandas DataFrame; every column is addressable by name."""

    in_memory = True

    def __init__(self, frame: pd.DataFrame, description: str | None = None) -> None:
        if isinstance(frame.columns, pd.MultiIndex):
            raise SourceError(
                f"the DataFrame's columns have {frame.columns.nlevels} levels "
                f"({frame.columns[0]!r}, ...); give one level of names, e.g. "
                "frame.columns = ['_'.join(map(str, c)) for c in frame.columns]")
        #: the labels of the columns labelled by other things than strings (pandas'
        #: ``0, 1, ...``), by the names ``str(label)`` they are given here: as feature
        #: columns they have no names (:attr:`~streamlearn.data.Dataset.named_features`)
        self.unnamed_columns = {str(c): c for c in frame.columns if not isinstance(c, str)}
        if self.unnamed_columns:
            frame = frame.rename(columns=str)
        if frame.columns.has_duplicates:
            dup = frame.columns[frame.columns.duplicated()].tolist()
            raise SourceError(f"DataFrame has duplicate column names {dup}")
        self._frame = frame
        # rows only: fit adds its target and weight arrays to the frame as columns
        self.description = description or f"DataFrame of {len(frame)} rows"
        self.columns = list(frame.columns)
        self.kinds = {c: pandas_column_kind(frame[c]) for c in self.columns}
        self.pieces = _pieces(len(frame), self.description)

    def _rows(self, i: int) -> pd.DataFrame:
        p = self.pieces[i]
        return self._frame.iloc[p.file_row : p.file_row + p.n_rows]

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None,
        categories: dict[str, pd.Index] | None = None,
    ) -> Block:
        """Rows of piece ``i`` converted to float32 (categorical columns coded)."""
        p = self.pieces[i]
        return pandas_block(self._rows(i), features, target, weight, self.description,
                            p.file_row, categories)

    def read_categories(self, i: int, names: list[str]) -> dict[str, list[Any]]:
        """Distinct values of the named columns in piece ``i``."""
        return pandas_categories(self._rows(i), names)

    def known_categories(self, name: str) -> tuple[Any, ...] | None:
        """Categories of a ``category`` column, else None (found by a scan)."""
        return known_pandas_categories(self._frame[name].dtype)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Target values of piece ``i``."""
        p = self.pieces[i]
        rows = self._rows(i)[[target]]
        block = pandas_block(rows, [], target, None, self.description, p.file_row)
        assert block.y is not None
        return block.y

    def known_classes(self, target: str) -> np.ndarray | None:
        """The categories a categorical target's rows hold (read from its codes; a
        category no row holds is no class, as in the target's values), else None."""
        column = self._frame[target]
        if isinstance(column.dtype, pd.CategoricalDtype):
            codes = np.unique(np.asarray(column.array.codes))
            return np.asarray(column.dtype.categories.take(codes[codes >= 0]))
        return None


class ArrowSource:
    """A pyarrow Table held in memory.

    A column in which ``pyarrow.Table.from_pandas`` stored a frame's index
    (``__index_level_0__`` after a shuffle or a filter, or a named index: the schema's
    pandas metadata lists them) is left out of the columns taken by default, as of a
    parquet file's (:class:`~streamlearn.data.sources.parquet.ParquetSource`):
    ``Table.to_pandas`` reads it back as the index. It can still be named.
    """

    in_memory = True

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        # rows only: fit adds its target and weight arrays to the table as columns
        self.description = f"Table of {table.num_rows} rows"
        index = set(pandas_index_columns(table.schema))
        self.columns = [c for c in table.column_names if c not in index]
        self.kinds = {f.name: arrow_kind(f.type) for f in table.schema}
        self.pieces = _pieces(table.num_rows, self.description)

    def _rows(self, i: int, names: list[str]) -> pa.Table:
        p = self.pieces[i]
        return self._table.slice(p.file_row, p.n_rows).select(list(dict.fromkeys(names)))

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None,
        categories: dict[str, pd.Index] | None = None,
    ) -> Block:
        """Rows of piece ``i`` converted to float32 (categorical columns coded)."""
        names = [*features, *(c for c in (target, weight) if c is not None)]
        p = self.pieces[i]
        return arrow_block(self._rows(i, names), features, target, weight,
                           where=self.description, file_row=p.file_row, categories=categories)

    def read_categories(self, i: int, names: list[str]) -> dict[str, list[Any]]:
        """Distinct values of the named columns in piece ``i``."""
        table = self._rows(i, names)
        return {name: column_categories(table.column(name)) for name in names}

    def known_categories(self, name: str) -> tuple[Any, ...] | None:
        """Not recorded: string and dictionary columns are scanned."""
        return None

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Target values of piece ``i``."""
        p = self.pieces[i]
        return target_array(self._rows(i, [target]).column(target), target,
                            self.description, p.file_row)

    def known_classes(self, target: str) -> np.ndarray | None:
        """The label set is discovered by a scan of the target column."""
        return None
