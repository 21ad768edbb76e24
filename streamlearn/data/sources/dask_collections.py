"""Dask arrays and dataframes, read one block / partition at a time."""

from __future__ import annotations

import math
import threading
from typing import Any

import dask
import numpy as np
import pandas as pd

from streamlearn.data.precision import matrix_spans
from streamlearn.data.sources.base import (
    Block,
    ColumnKind,
    Piece,
    default_feature_names,
    numpy_kind,
)
from streamlearn.data.sources.in_memory import (
    known_pandas_categories,
    pandas_block,
    pandas_categories,
    pandas_kind,
    passthrough_values,
)
from streamlearn.errors import DataError, SourceError


class DaskArraySource:
    """A 2-D dask array of features with optional dask (or numpy) target and weight arrays.

    Reading a piece computes its blocks on the current dask scheduler: inside a dask worker
    (``DaskEngine``'s tasks), on the cluster itself (``computes_on_cluster``)."""

    #: Reading computes a dask graph: a worker task reading it must leave the worker's
    #: thread pool first (``distributed.secede``), or the reads wait on busy threads.
    computes_on_cluster = True

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
        #: the columns have no names of their own (``x0, x1, ...`` are given here)
        self.unnamed_features = feature_names is None
        self._feature_names = list(feature_names) if feature_names is not None \
            else default_feature_names(X.shape[1])
        self.kinds: dict[str, ColumnKind] = dict.fromkeys(
            self._feature_names, numpy_kind(np.dtype(X.dtype)))
        self._extra: dict[str, Any] = {}
        for name, values in ((target_name, y), (weight_name, weight)):
            if values is None:
                continue
            if hasattr(values, "compute_chunk_sizes") and any(
                    math.isnan(c) for c in values.chunks[0]):
                raise SourceError(
                    f"the dask array {name} has unknown chunk sizes (from a DataFrame, say); "
                    f"call {name}.compute_chunk_sizes() first, or pass the DataFrame's "
                    "column itself")
            if values.ndim != 1 or values.shape[0] != X.shape[0]:
                raise DataError(
                    f"{name} has shape {values.shape}; expected ({X.shape[0]},), one per row of X"
                )
            self._extra[name] = values
            self.kinds[name] = _values_kind(values)
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
        X = np.asarray(values.pop(0))
        spans = matrix_spans(X)
        with np.errstate(over="ignore"):  # beyond float32's range: infinite, named later
            X = np.ascontiguousarray(X, dtype=np.float32)
        y = values.pop(0) if target is not None else None
        w = values.pop(0).astype(np.float64, copy=False) if weight is not None else None
        return Block(X=X, y=np.asarray(y) if y is not None else None, weight=w, spans=spans)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Compute the target values of one row block."""
        p = self.pieces[i]
        values = self._extra[target][p.file_row : p.file_row + p.n_rows]
        return np.asarray(values.compute() if hasattr(values, "compute") else values)

    def known_classes(self, target: str) -> np.ndarray | None:
        """Discovered by a scan of the target column."""
        return None


#: Held while a thread builds, optimises and computes a dask DataFrame partition: dask's
#: expressions optimise through ``functools.cached_property``, whose lock Python 3.11
#: shares between every instance of a class, so two threads optimising expressions of
#: the same frame at once (a worker running two partition tasks, each with its prefetch
#: thread) could each hold one such lock and wait for the other's, for ever.
_EXPRESSIONS = threading.RLock()


class DaskDataFrameSource:
    """A dask DataFrame, one partition per piece, with optional separate target and weights.

    Partition lengths are not part of a dask DataFrame's metadata; they are computed once
    when the source is opened (a ``len`` of every partition, which parquet-backed frames
    answer from file footers).

    A target or weight given apart from the frame (a dask Series or array, or an in-memory
    array, one value per row of the frame) becomes a column named ``target_name`` /
    ``weight_name``; it is read alongside each partition.

    Reading computes on the current dask scheduler, as for :class:`DaskArraySource`
    (``computes_on_cluster``). A partition is computed whole whichever of its rows a chunk
    needs (its graph re-reads and re-parses its files), so a shuffled pass visits the
    partitions in a random order and each one's chunks together (``shuffle_by_piece``, as
    for parquet row groups).
    """

    shuffle_by_piece = True
    computes_on_cluster = True

    def __init__(self, frame: Any, y: Any = None, weight: Any = None,
                 target_name: str = "y", weight_name: str = "weight") -> None:
        #: the labels of the columns labelled by other things than strings, by the names
        #: ``str(label)`` they are given here (as
        #: :class:`~streamlearn.data.sources.in_memory.PandasSource`'s)
        self.unnamed_columns = {str(c): c for c in frame.columns if not isinstance(c, str)}
        if self.unnamed_columns:
            frame = frame.rename(columns=str)
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
        self._extra: dict[str, Any] = {}
        for name, values in ((target_name, y), (weight_name, weight)):
            if values is None:
                continue
            if name in self.kinds:
                raise SourceError(f"the dask DataFrame already has a column {name!r}")
            self._extra[name] = self._aligned(values, name, [p.n_rows for p in self.pieces])
            self.kinds[name] = _values_kind(values)
            self.columns.append(name)

    @staticmethod
    def _aligned(values: Any, name: str, lengths: list[int]) -> Any:
        """``values`` split like the frame's partitions: a dask Series with the same
        partition lengths, else a dask array with known chunks, else a numpy array."""
        n_rows = sum(lengths)
        module = type(values).__module__.split(".")[0]
        if module in ("dask", "dask_expr") and hasattr(values, "get_partition"):
            if getattr(values, "ndim", 1) != 1:
                raise DataError(f"{name} must be one column, got {type(values).__name__}")
            if values.npartitions == len(lengths):
                got = [int(n) for n in values.map_partitions(len).compute()]
                if got == lengths:
                    return values
            values = values.to_dask_array(lengths=True)
        if module == "dask" and hasattr(values, "chunks"):
            if any(math.isnan(c) for c in values.chunks[0]):
                values = values.compute_chunk_sizes()
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
        else:
            values = np.asarray(values)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
        if values.ndim != 1 or values.shape[0] != n_rows:
            raise DataError(f"{name} has shape {values.shape}; expected ({n_rows},), one "
                            "value per row of the dask DataFrame")
        return values

    def _extra_part(self, name: str, i: int) -> Any:
        values = self._extra[name]
        if hasattr(values, "get_partition"):
            return values.get_partition(i)
        p = self.pieces[i]
        return values[p.file_row : p.file_row + p.n_rows]

    def _compute(self, i: int, names: list[str], frame: Any = None) -> Any:
        """Partition ``i`` with the named columns, extra columns joined by position;
        of ``frame`` (partitioned alike) when given, else of the source's frame.

        One thread of the process at a time builds and computes such a partition
        (:data:`_EXPRESSIONS`)."""
        own = [n for n in names if n not in self._extra]
        extra = [n for n in names if n in self._extra]
        with _EXPRESSIONS:
            part = (self._frame if frame is None else frame).get_partition(i)[own].compute()
            # computed one by one: a dask array and a dataframe expression in one
            # ``dask.compute`` make dask materialise the expression with a warning
            values = [self._extra_part(n, i) for n in extra]
            values = [v.compute() if hasattr(v, "compute") else v for v in values]
        if extra:
            # a pandas array (nullable labels, missing ones dropped as the rows are read)
            # keeps its type, which numpy's would make objects
            part = part.reset_index(drop=True).assign(**{
                n: v if isinstance(v, pd.api.extensions.ExtensionArray) else np.asarray(v)
                for n, v in zip(extra, values, strict=True)})
        return part

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None,
        categories: dict[str, Any] | None = None,
    ) -> Block:
        """Compute one partition and convert it (categorical columns coded)."""
        names = list(dict.fromkeys([*features, *(c for c in (target, weight) if c)]))
        p = self.pieces[i]
        return pandas_block(self._compute(i, names), features, target, weight, p.label, 0,
                            categories)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Compute the target column of one partition."""
        part = self._compute(i, [target])
        block = pandas_block(part, [], target, None, self.pieces[i].label, 0)
        assert block.y is not None
        return block.y

    def read_passthrough(self, i: int, name: str) -> np.ndarray:
        """One column of one partition as it is, to be copied beside predictions: nulls
        kept (None in an object array, NaN in a float one), where a target refuses them."""
        values = self._compute(i, [name])[name]
        if values.isna().any():
            return passthrough_values(values)
        return self.read_target(i, name)

    def read_categories(self, i: int, names: list[str]) -> dict[str, list[Any]]:
        """Distinct values of the named columns in one partition."""
        return pandas_categories(self._compute(i, names), names)

    def known_categories(self, name: str) -> tuple[Any, ...] | None:
        """Categories of a ``category`` column whose categories dask knows, else None."""
        if name in self._extra:
            return None
        column = self._frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype) and column.cat.known:
            return known_pandas_categories(column.dtype)
        return None

    def known_classes(self, target: str) -> np.ndarray | None:
        """Discovered by a scan of the target column."""
        return None


def _values_kind(values: Any) -> ColumnKind:
    dtype = values.dtype
    if isinstance(dtype, np.dtype):
        return numpy_kind(dtype)
    return pandas_kind(dtype)
