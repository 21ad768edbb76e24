"""Dask arrays and dataframes, read one block / partition at a time."""

from __future__ import annotations

import math
from typing import Any

import dask
import numpy as np

from streamlearn.data.sources.base import (
    Block,
    ColumnKind,
    Piece,
    default_feature_names,
    numpy_kind,
)
from streamlearn.data.sources.in_memory import pandas_block, pandas_kind
from streamlearn.errors import DataError, SourceError


class DaskArraySource:
    """A 2-D dask array of features with optional dask (or numpy) target and weight arrays."""

    def __init__(self, X: Any, y: Any = None, weight: Any = None,
                 feature_names: list[str] | None = None,
                 target_name: str = "y", weight_name: str = "weight") -> None:
        if X.ndim != 2:
            raise SourceError(f"X must be a 2-D dask array, got shape {X.shape}")
        if any(math.isnan(c) for c in X.chunks[0]):
            raise SourceError(
                "the dask array has unknown chunk sizes; call X.compute_chunk_sizes() first"
            )
        self.description = f"dask array of shape {X.shape}"
        self._X = X
        self._feature_names = list(feature_names) if feature_names is not None \
            else default_feature_names(X.shape[1])
        self.kinds: dict[str, ColumnKind] = dict.fromkeys(
            self._feature_names, numpy_kind(np.dtype(X.dtype)))
        self._extra: dict[str, Any] = {}
        for name, values in ((target_name, y), (weight_name, weight)):
            if values is None:
                continue
            if values.ndim != 1 or values.shape[0] != X.shape[0]:
                raise DataError(
                    f"{name} has shape {values.shape}; expected ({X.shape[0]},), one per row of X"
                )
            self._extra[name] = values
            self.kinds[name] = numpy_kind(np.dtype(values.dtype))
        self.columns = [*self._feature_names, *self._extra]
        self.pieces = []
        a = 0
        for n in X.chunks[0]:
            self.pieces.append(Piece(int(n), f"{self.description} block rows {a}-{a + n}", a))
            a += int(n)

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Compute one row block (all column blocks of it) with the current dask scheduler."""
        p = self.pieces[i]
        a, b = p.file_row, p.file_row + p.n_rows
        X = self._X[a:b]
        if features != self._feature_names:
            X = X[:, [self._feature_names.index(f) for f in features]]
        parts = [X] + [self._extra[c][a:b] for c in (target, weight) if c is not None]
        values = list(dask.compute(*parts))
        X = np.ascontiguousarray(values.pop(0), dtype=np.float32)
        y = values.pop(0) if target is not None else None
        w = values.pop(0).astype(np.float32, copy=False) if weight is not None else None
        return Block(X=X, y=np.asarray(y) if y is not None else None, weight=w)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Compute the target values of one row block."""
        p = self.pieces[i]
        values = self._extra[target][p.file_row : p.file_row + p.n_rows]
        return np.asarray(values.compute() if hasattr(values, "compute") else values)

    def known_classes(self, target: str) -> np.ndarray | None:
        """Discovered by a scan of the target column."""
        return None


class DaskDataFrameSource:
    """A dask DataFrame, one partition per piece.

    Partition lengths are not part of a dask DataFrame's metadata; they are computed once
    when the source is opened (a ``len`` of every partition, which parquet-backed frames
    answer from file footers).
    """

    def __init__(self, frame: Any) -> None:
        self._frame = frame
        self.description = f"dask DataFrame with {frame.npartitions} partitions"
        self.columns = [str(c) for c in frame.columns]
        self.kinds = {str(c): pandas_kind(t) for c, t in frame.dtypes.items()}
        lengths = frame.map_partitions(len).compute()
        self.pieces = []
        a = 0
        for i, n in enumerate(lengths):
            self.pieces.append(Piece(int(n), f"{self.description}, partition {i}", a))
            a += int(n)

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Compute one partition and convert it."""
        names = list(dict.fromkeys([*features, *(c for c in (target, weight) if c)]))
        part = self._frame.get_partition(i)[names].compute()
        p = self.pieces[i]
        return pandas_block(part, features, target, weight, p.label, 0)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Compute the target column of one partition."""
        part = self._frame.get_partition(i)[[target]].compute()
        block = pandas_block(part, [], target, None, self.pieces[i].label, 0)
        assert block.y is not None
        return block.y

    def known_classes(self, target: str) -> np.ndarray | None:
        """Discovered by a scan of the target column."""
        return None
