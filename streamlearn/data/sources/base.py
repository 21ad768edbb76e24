"""The ``Source`` protocol: a table of named columns cut into storage pieces."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from numba import njit

from streamlearn.data.precision import Float64Spans
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import SourceError


class ColumnKind(StrEnum):
    """What a column holds, as far as learning is concerned."""

    NUMERIC = "numeric"
    INTEGER = "integer"
    BOOL = "bool"
    STRING = "string"
    CATEGORICAL = "categorical"
    OTHER = "other"

    @property
    def is_numeric(self) -> bool:
        """True when values convert to float32 without an encoding step."""
        return self in (ColumnKind.NUMERIC, ColumnKind.INTEGER, ColumnKind.BOOL)


@dataclass(frozen=True, slots=True)
class Piece:
    """A unit of storage read in one go (a parquet row group, a zarr chunk row, a partition).

    ``label`` names it in error messages (file path and row group, store and row range).
    ``file_row`` is the row of the piece's first row within its file, for messages.
    """

    n_rows: int
    label: str
    file_row: int = 0


@dataclass(slots=True)
class Block:
    """The rows of one piece, converted: features float32 C-contiguous (or CSR rows), target
    raw, weight float64 (checked and cast to float32 by the dataset, so that a value
    beyond float32's range is named as such). ``spans``: the ranges of the feature columns
    that were float64 before their cast (:mod:`streamlearn.data.precision`), or None."""

    X: np.ndarray | SparseRows
    y: np.ndarray | None
    weight: np.ndarray | None
    spans: Float64Spans | None = None


class Source(Protocol):
    """What a storage adapter provides to ``Dataset``.

    A source knows its columns, their kinds and its pieces from metadata alone; rows are only
    touched by ``read_piece`` and ``read_target``. A source that can read any global row
    range in one request (zarr) also offers ``read_rows(a, b, features, target, weight)``,
    returning a ``Block``; a dataset then reads each chunk's rows directly, and reads chunks
    concurrently.

    A *sparse* source (scipy matrices, svmlight files, a zarr CSR group) sets ``sparse =
    True`` and ``n_features``: its ``columns`` and ``kinds`` list only the target and weight
    columns, its features are the numbered columns ``x0 .. x{n_features - 1}`` (never
    listed one by one), and its blocks hold
    :class:`~streamlearn.data.sparse_rows.SparseRows` with ``n_cols = n_features``, whose
    column indices are distinct within a row and in range. Its reads ignore ``features``.

    A source whose rows are held in this process's memory (numpy arrays, pandas and pyarrow
    tables, scipy matrices) sets ``in_memory = True``: reading a few rows anywhere costs a
    slice, where a stored source reads whole chunks (see :attr:`Dataset.in_memory`).
    """

    description: str
    columns: list[str]
    kinds: dict[str, ColumnKind]
    pieces: list[Piece]

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read piece ``i``: the named feature columns as a float32 matrix, target, weight."""
        ...

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Read only the target column of piece ``i`` (used to discover class labels)."""
        ...

    def known_classes(self, target: str) -> np.ndarray | None:
        """Class labels recorded in metadata (categorical dictionary, store attributes)."""
        ...


#: Up to this many columns, :func:`transpose_into` writes whole rows of ``out``; wider
#: matrices go through square tiles of ``TRANSPOSE_TILE`` x ``TRANSPOSE_TILE`` values.
TRANSPOSE_ROW_COLUMNS = 32
TRANSPOSE_TILE = 16


@njit(cache=True, nogil=True)
def transpose_into(columns: np.ndarray, out: np.ndarray) -> None:
    """Write ``out[i, j] = columns[j, i]`` for a (d, n) ``columns`` and an (n, d) ``out``.

    Up to ``TRANSPOSE_ROW_COLUMNS`` columns, one row of ``out`` at a time (its writes
    contiguous, the ``d`` column streams read in step); wider, by square tiles that stay in
    the first-level cache. On 32 columns about 1.8x, on 100-800 columns about 2-2.5x as
    fast as ``np.ascontiguousarray(columns.T)``.
    """
    d, n = columns.shape
    if d <= TRANSPOSE_ROW_COLUMNS:
        for i in range(n):
            for j in range(d):
                out[i, j] = columns[j, i]
        return
    for i0 in range(0, n, TRANSPOSE_TILE):
        i1 = min(i0 + TRANSPOSE_TILE, n)
        for j0 in range(0, d, TRANSPOSE_TILE):
            j1 = min(j0 + TRANSPOSE_TILE, d)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    out[i, j] = columns[j, i]


def stack_columns(columns: list[np.ndarray], n_rows: int) -> np.ndarray:
    """Stack 1-D columns (float32, or float64 ones cast here) into a float32 C-contiguous
    (n_rows, n_columns) matrix.

    Copies each column into a row of a (d, n) buffer (contiguous writes), then transposes in
    one tiled pass; on this layout that is several times faster than assigning strided
    columns.
    """
    if not columns:
        return np.empty((n_rows, 0), dtype=np.float32)
    buf = np.empty((len(columns), n_rows), dtype=np.float32)
    with np.errstate(over="ignore"):  # beyond float32's range: infinite, named later
        for j, col in enumerate(columns):
            buf[j] = col
    out = np.empty((n_rows, len(columns)), dtype=np.float32)
    transpose_into(buf, out)
    return out


def default_feature_names(n: int) -> list[str]:
    """Names given to the columns of an unnamed matrix: ``x0, x1, ...``."""
    return [f"x{j}" for j in range(n)]


def labels_are_names(labels: Sequence[object]) -> bool:
    """Whether a table's column labels name its columns, by scikit-learn's rule: labels
    that are all strings do (a model fitted on them has ``feature_names_in_`` and reads
    such a table by name); labels none of which is a string (pandas' ``0, 1, ...`` of
    ``pd.DataFrame(X)``) do not, and the columns are read by position.

    Raises
    ------
    SourceError
        For a mix of string and other labels (a ``TypeError``, as scikit-learn raises).
    """
    kinds = sorted({"str" if isinstance(c, str) else type(c).__name__ for c in labels})
    if len(kinds) > 1 and "str" in kinds:
        raise SourceError(
            "Feature names are only supported if all input features have string names, "
            f"but your input has {kinds} as feature name / column name types. If you want "
            "feature names to be stored and validated, you must convert them all to "
            "strings, by using X.columns = X.columns.astype(str) for example. Otherwise "
            "you can remove feature / column names from your input data, or convert them "
            "all to a non-string data type.")
    return kinds == ["str"]


def fresh_name(base: str, taken: Sequence[str] | set[str]) -> str:
    """``base``, or ``base`` with underscores appended until it names no column of
    ``taken``: a name for a target or weight array beside feature columns."""
    name = base
    while name in taken:
        name += "_"
    return name


class NumberedNames(Sequence[str]):
    """The names ``x0 .. x{n-1}`` of a sparse source's columns, made only when asked for.

    A sparse source may have millions of columns; this sequence holds only their number.
    It compares equal to any sequence of the same names.
    """

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[str]:
        return (f"x{j}" for j in range(self.n))

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        if isinstance(i, slice):
            return [f"x{j}" for j in range(*i.indices(self.n))]
        if isinstance(i, np.ndarray | list):  # numpy's indexing: a mask or positions
            positions = np.arange(self.n)[np.asarray(i)]
            out = np.empty(len(positions), dtype=object)
            out[:] = [f"x{j}" for j in positions]
            return out
        j = range(self.n)[i]
        return f"x{j}"

    def __contains__(self, name: object) -> bool:
        return (isinstance(name, str) and name[:1] == "x" and name[1:].isascii()
                and name[1:].isdigit()
                and str(int(name[1:])) == name[1:] and int(name[1:]) < self.n)

    def index(self, name: object, *args: int) -> int:  # type: ignore[override]
        """Position of ``name``."""
        if name not in self:
            raise ValueError(f"{name!r} is not a column")
        return int(str(name)[1:])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NumberedNames):
            return other.n == self.n
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != self.n:
            return False
        return all(a == f"x{j}" for j, a in enumerate(other))

    def __hash__(self) -> int:
        return hash(("NumberedNames", self.n))

    def __repr__(self) -> str:
        return f"NumberedNames({self.n})"


def numpy_kind(dtype: np.dtype) -> ColumnKind:
    """Classify a numpy dtype."""
    if dtype.kind == "b":
        return ColumnKind.BOOL
    if dtype.kind in "iu":
        return ColumnKind.INTEGER
    if dtype.kind == "f":
        return ColumnKind.NUMERIC
    if dtype.kind in "USO" or dtype.kind == "T":
        return ColumnKind.STRING
    return ColumnKind.OTHER
