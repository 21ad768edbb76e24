"""The ``Source`` protocol: a table of named columns cut into storage pieces."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np


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
    """The rows of one piece, converted: features float32 C-contiguous, target and weight raw."""

    X: np.ndarray
    y: np.ndarray | None
    weight: np.ndarray | None


class Source(Protocol):
    """What a storage adapter provides to ``Dataset``.

    A source knows its columns, their kinds and its pieces from metadata alone; rows are only
    touched by ``read_piece`` and ``read_target``.
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


def stack_columns(columns: list[np.ndarray], n_rows: int) -> np.ndarray:
    """Stack 1-D columns into a float32 C-contiguous (n_rows, n_columns) matrix.

    Copies each column into a row of a (d, n) buffer (contiguous writes), then transposes in
    one pass; on this layout that is about 3x faster than assigning strided columns.
    """
    if not columns:
        return np.empty((n_rows, 0), dtype=np.float32)
    buf = np.empty((len(columns), n_rows), dtype=np.float32)
    for j, col in enumerate(columns):
        buf[j] = col
    return np.ascontiguousarray(buf.T)


def default_feature_names(n: int) -> list[str]:
    """Names given to the columns of an unnamed matrix: ``x0, x1, ...``."""
    return [f"x{j}" for j in range(n)]


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
