"""Zarr v3 stores: a group with ``X`` (rows x features) and ``y``, or one 1-D array per column."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import numpy as np
import zarr

from streamlearn.data.precision import column_spans, matrix_spans
from streamlearn.data.readahead import FileRange
from streamlearn.data.sources.base import (
    Block,
    ColumnKind,
    Piece,
    default_feature_names,
    numpy_kind,
)
from streamlearn.data.sources.zarr_chunks import ChunkFileReader, reader_or_none
from streamlearn.errors import DataError, ReadError, SourceError
from streamlearn.warning_origin import caller_stacklevel

#: A feature array whose storage chunks hold only some of the columns is warned of when a
#: chunk spans more than this many stream chunks of rows (``ZarrSource.warn_of_column_chunks``).
WIDE_CHUNK_FACTOR = 4


def _read(array: zarr.Array, start: int, stop: int, where: str) -> np.ndarray:
    try:
        return np.asarray(array[start:stop])
    except Exception as exc:  # codec and store errors come in many types
        start, stop, exc = _first_failure(array, start, stop, exc)
        raise ReadError(
            f"could not read rows {start}-{stop} of array {array.path!r} in {where}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def read_together(requests: list[tuple[zarr.Array, int, int]], where: str) -> list[np.ndarray]:
    """Rows ``start:stop`` of several arrays, requested at once.

    zarr decodes the storage chunks of one request in its own worker threads; asking for
    every array of a block in one request lets their decoding overlap instead of running
    one array after the other. A failure is reported as :func:`_read` reports it (the
    array, the first failing rows and the cause).
    """
    if len(requests) < 2:
        return [_read(a, start, stop, where) for a, start, stop in requests]
    try:
        from zarr.core.sync import sync

        async def _all() -> list[Any]:
            return await asyncio.gather(*(a.async_array.getitem(slice(start, stop))
                                          for a, start, stop in requests))

        return [np.asarray(v) for v in sync(_all())]
    except Exception:  # find and name the failing array the slow way
        return [_read(a, start, stop, where) for a, start, stop in requests]


def read_arrays(requests: list[tuple[zarr.Array, ChunkFileReader | None, int, int]],
                where: str) -> list[np.ndarray]:
    """Rows ``start:stop`` of several arrays: those with a
    :class:`~streamlearn.data.sources.zarr_chunks.ChunkFileReader` decoded from their chunk
    files directly, the others by zarr in one request (:func:`read_together`)."""
    out: list[np.ndarray | None] = [None] * len(requests)
    by_zarr = [i for i, (_, reader, _, _) in enumerate(requests) if reader is None]
    if by_zarr:
        read = read_together([(requests[i][0], requests[i][2], requests[i][3])
                              for i in by_zarr], where)
        for i, values in zip(by_zarr, read, strict=True):
            out[i] = values
    for i, (_, reader, start, stop) in enumerate(requests):
        if reader is not None:
            out[i] = reader.read(start, stop, where)
    return out  # type: ignore[return-value]


def plain_strings(values: np.ndarray) -> np.ndarray:
    """``values`` with zarr's variable-length strings (numpy ``StringDType``, kind ``'T'``)
    as fixed-width unicode, which labels, ``np.searchsorted`` and model files expect."""
    if values.dtype.kind == "T":
        width = int(np.strings.str_len(values).max(initial=1))
        return values.astype(f"U{width}")
    return values


def _first_failure(array: zarr.Array, start: int, stop: int,
                   exc: Exception) -> tuple[int, int, Exception]:
    """The rows and error of the first storage chunk in ``start:stop`` that fails to read."""
    step = _row_block(array)
    for lo in range(start - start % step, stop, step):
        hi = min(lo + step, array.shape[0])
        try:
            array[lo:hi]
        except Exception as failure:
            return lo, hi, failure
    return start, stop, exc


def _zip_hint(url: str) -> str:
    """For a store path that names a zip archive, how to open the store inside it."""
    try:
        import fsspec

        with fsspec.open(url, "rb") as handle:
            zipped = handle.read(4) == b"PK\x03\x04"
    except Exception:  # not a file (a missing path, a directory): no hint
        return ""
    return (f": it is a zip archive; open the store inside it as 'zip::{url}' "
            "(format='zarr')" if zipped else "")


def _row_block(array: zarr.Array) -> int:
    shards = getattr(array, "shards", None)
    return int((shards or array.chunks)[0])


class ZarrSource:
    """Rows of a zarr v3 group, read by any row range (pieces are storage chunks or shards).

    Two layouts are understood:

    - *matrix*: a 2-D array ``X`` (rows x features, feature names in its ``feature_names``
      attribute or ``x0, x1, ...``) plus 1-D arrays for the target and optional weights;
      other arrays of the group that are not 1-D arrays of ``X``'s rows (a 3-D array, a
      list of names) are no columns: they are set aside (:attr:`set_aside` says why), and
      naming one as a column is refused with that reason;
    - *columns*: one 1-D array per column, named after it (order from the group's ``columns``
      attribute when present, else sorted by name).

    A ``classes`` attribute on the target array (or group) records the label set, so it need
    not be discovered by a scan.
    """

    def __init__(
        self,
        store: str | zarr.Group,
        storage_options: dict[str, Any] | None = None,
        *,
        matrix_name: str = "X",
    ) -> None:
        if isinstance(store, zarr.Group):
            group = store
            self.description = str(store.store)
        else:
            self.description = str(store)
            try:
                group = zarr.open_group(store, mode="r", storage_options=storage_options)
            except FileNotFoundError as exc:
                raise SourceError(f"no zarr group at {store}{_zip_hint(store)}") from exc
            except Exception as exc:
                raise ReadError(f"could not open zarr store {store}: {exc}") from exc
        self._group = group
        try:
            arrays = {name: arr for name, arr in group.arrays()}
        except Exception as exc:  # an array's metadata that zarr cannot read
            raise ReadError(f"could not open the arrays of zarr store {self.description}: "
                            f"{type(exc).__name__}: {exc}") from exc
        if not arrays:
            raise SourceError(f"zarr group {self.description} holds no arrays")
        self._arrays = arrays
        self._matrix: zarr.Array | None = None
        self._matrix_name = matrix_name
        self.kinds: dict[str, ColumnKind] = {}
        #: arrays of a matrix layout that are not columns (name -> why), see the class doc
        self.set_aside: dict[str, str] = {}

        if matrix_name in arrays and arrays[matrix_name].ndim == 2:
            X = arrays[matrix_name]
            self._matrix = X
            names = X.attrs.get("feature_names") or group.attrs.get("feature_names")
            #: the matrix has no names of its own (``x0, x1, ...`` are given here)
            self.unnamed_features = not names
            self._feature_names = list(names) if names else default_feature_names(X.shape[1])
            if len(self._feature_names) != X.shape[1]:
                raise SourceError(
                    f"{self.description}: feature_names has {len(self._feature_names)} names "
                    f"but {matrix_name!r} has {X.shape[1]} columns"
                )
            kind = numpy_kind(np.dtype(X.dtype))
            self.kinds.update(dict.fromkeys(self._feature_names, kind))
            stored = X.attrs.get("categories") or group.attrs.get("categories") or {}
            #: category lists of the columns that hold codes into them (what ``streamlearn
            #: convert`` writes for string and categorical columns), name -> values
            self.coded_categories: dict[str, tuple[Any, ...]] = {
                str(name): tuple(values) for name, values in dict(stored).items()
                if str(name) in self._feature_names}
            n_rows = X.shape[0]
            others = {}
            for k, a in arrays.items():
                if k == matrix_name:
                    continue
                if a.ndim == 1 and a.shape[0] == n_rows:
                    others[k] = a
                else:
                    self.set_aside[k] = (
                        f"array {k!r} of shape {tuple(a.shape)} is not a column of the "
                        f"{n_rows:,} rows of {matrix_name!r}")
            own_target = str(group.attrs.get("target") or "y")
            if own_target in self.set_aside and arrays[own_target].ndim == 1:
                raise DataError(
                    f"arrays in {self.description} have different numbers of rows: the "
                    f"target {own_target!r} has {arrays[own_target].shape[0]:,}, "
                    f"{matrix_name!r} {n_rows:,}")
            clash = [f for f in self._feature_names if f in others]
            if clash:
                raise SourceError(
                    f"{self.description}: feature_names of {matrix_name!r} names "
                    f"{clash[0]!r}, which is also an array of the group, so the name would "
                    "stand for two columns; rename the feature or the array")
            block = _row_block(X)
        else:
            self._feature_names = []
            self.coded_categories = {}
            others = arrays
            n_rows = next(iter(arrays.values())).shape[0]
            block = _row_block(next(iter(arrays.values())))
        for name, arr in others.items():
            if arr.ndim != 1:
                raise SourceError(
                    f"array {name!r} in {self.description} has shape {arr.shape}; expected a "
                    f"2-D {matrix_name!r} matrix and 1-D column arrays"
                )
            self.kinds[name] = numpy_kind(np.dtype(arr.dtype))
        arrays = {k: a for k, a in arrays.items() if k not in self.set_aside}
        self._arrays = arrays
        lengths = {name: a.shape[0] for name, a in arrays.items()}
        if len(set(lengths.values())) > 1:
            raise DataError(
                f"arrays in {self.description} have different numbers of rows: {lengths}"
            )
        self.default_features: list[str] | None = self._feature_names or None
        #: the target array a writer named in the group's ``target`` attribute (``convert``
        #: names it ``y``, or ``y_`` beside a feature named ``y``), read as the target when
        #: none is given
        stored = group.attrs.get("target")
        self.stored_target: str | None = str(stored) if stored else None
        order = group.attrs.get("columns")
        column_names = sorted(others) if not order else [c for c in order if c in others]
        self.columns: list[str] = [*self._feature_names, *column_names]
        self.pieces = [
            Piece(min(block, n_rows - a),
                  f"{self.description} rows {a}-{min(a + block, n_rows)}", a)
            for a in range(0, n_rows, block)
        ]
        self._offsets = [p.file_row for p in self.pieces]
        # arrays whose chunk files are decoded directly (see zarr_chunks); None: by zarr
        self._direct: dict[str, ChunkFileReader | None] = {
            name: reader_or_none(arr) for name, arr in arrays.items()}

    def warn_of_column_chunks(self, chunk_rows: int, features: list[str]) -> None:
        """Warn (once) of feature arrays stored in chunks that span many stream chunks of
        rows but hold only some of the columns (a matrix chunked by column, one array per
        column in long chunks): each stream chunk read decodes whole storage chunks, so a
        pass decodes every value many times and a read holds far more than a chunk."""
        matrix_used, own, _ = self._arrays_read(features, None, None)
        wide = []
        for name in ([self._matrix_name] if matrix_used else []) + own:
            array = self._arrays[name]
            chunks = tuple(int(c) for c in array.chunks)
            held, of = (chunks[1], array.shape[1]) if array.ndim == 2 else (1, len(features))
            if chunks[0] > WIDE_CHUNK_FACTOR * chunk_rows and held < of:
                wide.append((name, chunks, held, of))
        if not wide:
            return
        name, chunks, held, of = wide[0]
        more = f" (and {len(wide) - 1} more arrays)" if len(wide) > 1 else ""
        warnings.warn(
            f"array {name!r}{more} of {self.description} is stored in chunks of shape "
            f"{chunks} ({chunks[0]:,} rows, {held} of {of} columns): every chunk of "
            f"{chunk_rows:,} rows read decodes whole storage chunks, "
            f"{chunks[0] / chunk_rows:.0f}x the rows it needs, which is slow and holds more "
            "memory than a chunk; `streamlearn convert` rewrites the store in chunks of "
            "whole rows", UserWarning, stacklevel=caller_stacklevel())

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read one storage chunk of rows."""
        a = self._offsets[i]
        return self.read_rows(a, a + self.pieces[i].n_rows, features, target, weight)

    def read_rows(
        self, a: int, b: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read rows ``a:b`` in one request, whatever storage chunks they span.

        Zarr decodes the storage chunks of one request concurrently, and rows are read
        straight into the block, so a stream need not cut and join storage pieces. Arrays
        in the layout :mod:`~streamlearn.data.sources.zarr_chunks` reads (what
        ``streamlearn convert`` writes, in a local directory) are decoded from their chunk
        files directly (:func:`read_arrays`).
        """
        where = self.description
        matrix_used, own, names = self._arrays_read(features, target, weight)
        read = read_arrays([(self._arrays[name], self._direct[name], a, b) for name in names],
                           where)
        matrix = read.pop(0) if matrix_used else None
        columns = {f: read.pop(0) for f in own}
        spans = None
        if matrix is not None and not own:
            X = matrix if features == self._feature_names \
                else matrix[:, [self._feature_names.index(f) for f in features]]
            spans = matrix_spans(X)
            with np.errstate(over="ignore"):  # beyond float32's range: named later
                X = np.ascontiguousarray(X, dtype=np.float32)
        elif features:
            cols = [columns[f] if f in columns else matrix[:, self._feature_names.index(f)]
                    for f in features]
            spans = column_spans(cols)
            with np.errstate(over="ignore"):  # beyond float32's range: named later
                X = np.ascontiguousarray(np.stack(cols, axis=1), dtype=np.float32)
        else:
            X = np.empty((b - a, 0), np.float32)
        y = plain_strings(read.pop(0)) if target is not None else None
        w = read.pop(0).astype(np.float64, copy=False) if weight is not None else None
        return Block(X=X, y=y, weight=w, spans=spans)

    def _arrays_read(self, features: list[str], target: str | None, weight: str | None
                     ) -> tuple[bool, list[str], list[str]]:
        """Whether the matrix is read, the features read from arrays of their own, and
        the names of every array read: the matrix (once, for any of its features), the
        features' own arrays, the target and the weights."""
        matrix_used = self._matrix is not None and any(
            f in self._feature_names for f in features)
        own = [f for f in features if not (matrix_used and f in self._feature_names)]
        names = [self._matrix_name] if matrix_used else []
        names += own + [name for name in (target, weight) if name is not None]
        return matrix_used, own, names

    def file_ranges(self, a: int, b: int, features: list[str], target: str | None,
                    weight: str | None) -> list[FileRange]:
        """The chunk files :meth:`read_rows` reads for rows ``a:b`` (those of arrays it
        decodes from their files; none for a remote store), for
        :class:`~streamlearn.data.readahead.ReadAhead`."""
        return [r for name in self._arrays_read(features, target, weight)[2]
                if (reader := self._direct[name]) is not None
                for r in reader.file_ranges(a, b)]

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Read only the target column of one storage chunk."""
        a = self._offsets[i]
        return plain_strings(
            _read(self._arrays[target], a, a + self.pieces[i].n_rows, self.description))

    def known_classes(self, target: str) -> np.ndarray | None:
        """The ``classes`` attribute of the target array or of the group, if recorded."""
        classes = self._arrays[target].attrs.get("classes") or self._group.attrs.get("classes")
        return plain_strings(np.asarray(classes)) if classes else None
