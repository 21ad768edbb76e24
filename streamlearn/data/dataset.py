"""``Dataset``: a validated, chunked view of a source that streams ``Chunk``s."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.data.labels import consecutive_codes
from streamlearn.data.prefetch import prefetched, prefetched_map
from streamlearn.data.schema import Schema, Task
from streamlearn.data.sources.base import Block, ColumnKind, Source
from streamlearn.data.validation import (
    NanPolicy,
    fill_nonfinite,
    finite_rows,
    first_nonfinite,
)
from streamlearn.errors import DataError, LabelError, SchemaError

#: Bytes of float32 features per chunk when no ``chunk_rows`` is given.
DEFAULT_CHUNK_BYTES = 16 << 20
#: A classification target with more distinct values than this is almost surely continuous.
MAX_CLASSES = 10_000


def default_chunk_rows(n_features: int) -> int:
    """Rows per chunk so that a chunk's features take about ``DEFAULT_CHUNK_BYTES``."""
    rows = DEFAULT_CHUNK_BYTES // (4 * max(n_features, 1))
    return int(max(1024, min(rows, 1 << 20)) // 1024 * 1024)


class Dataset:
    """Rows of a source, validated and cut into chunks of a requested size.

    Build one with :func:`streamlearn.open_dataset`. A dataset knows its schema from metadata
    (rows, feature names, target) and reads rows only while iterating. Chunk boundaries are
    global row ranges ``[k * chunk_rows, (k + 1) * chunk_rows)``, independent of how the store
    is split into files, row groups or zarr chunks.

    Memory while iterating is at most ``(prefetch + 1)`` chunks, plus one storage piece (a
    parquet row group) being cut where the source is read piece by piece. A zarr store is
    read by row range: each chunk is one read, and with ``prefetch`` the next chunks are read
    concurrently.
    """

    def __init__(
        self,
        source: Source,
        *,
        features: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        target: str | None = None,
        weight: str | None = None,
        task: Task | None = None,
        classes: Sequence[Any] | None = None,
        chunk_rows: int | None = None,
        nan_policy: NanPolicy = "raise",
        prefetch: int = 2,
    ) -> None:
        self.source = source
        columns = list(source.columns)
        for role, name in (("target", target), ("weight", weight)):
            if name is not None and name not in source.kinds:
                raise SchemaError(
                    f"{role} column {name!r} not found in {source.description}; "
                    f"columns are {_listing(columns)}"
                )
        unknown_excluded = [c for c in exclude if c not in source.kinds]
        if unknown_excluded:
            raise SchemaError(
                f"exclude names column(s) {unknown_excluded} not in {source.description}; "
                f"columns are {_listing(columns)}"
            )
        inferred = features is None
        if features is None:
            # A matrix layout (zarr ``X``) names its features; other arrays are not features.
            candidates = getattr(source, "default_features", None) or columns
            features = [c for c in candidates if c not in (target, weight) and c not in exclude]
        features = list(features)
        missing = [f for f in features if f not in source.kinds]
        if missing:
            raise SchemaError(
                f"feature column(s) {missing} not found in {source.description}; "
                f"columns are {_listing(columns)}"
            )
        if len(set(features)) != len(features):
            raise SchemaError(f"features lists a column more than once: {features}")
        for role, name in (("target", target), ("weight", weight)):
            if name is not None and name in features:
                raise SchemaError(f"{role} column {name!r} is also listed as a feature")
        bad = {f: source.kinds[f].value for f in features if not source.kinds[f].is_numeric}
        if bad:
            raise SchemaError(
                f"non-numeric feature column(s) in {source.description}: "
                + ", ".join(f"{k!r} ({v})" for k, v in bad.items())
                + "; encode them as numbers first, or leave them out with "
                "exclude=[...] or features=[...]"
            )
        if weight is not None and not source.kinds[weight].is_numeric:
            raise SchemaError(f"weight column {weight!r} is {source.kinds[weight].value}, "
                              "not numeric")
        if not features:
            raise SchemaError(f"no feature columns left in {source.description}")
        check = getattr(source, "check_columns", None)
        if check is not None:
            needed = [*features, *(c for c in (target, weight) if c is not None)]
            check(needed, every_column=inferred)

        self.n_rows = int(sum(p.n_rows for p in source.pieces))
        if self.n_rows == 0:
            raise DataError(f"{source.description} has no rows")
        self.feature_names: tuple[str, ...] = tuple(features)
        self.target = target
        self.weight = weight
        self.task = _task(task, target, source.kinds.get(target) if target else None)
        self.nan_policy = nan_policy
        self.prefetch = int(prefetch)
        if chunk_rows is not None and int(chunk_rows) < 1:
            raise ValueError(f"chunk_rows must be a positive number of rows, got {chunk_rows}")
        self.chunk_rows = int(chunk_rows) if chunk_rows else default_chunk_rows(len(features))
        self._offsets = np.cumsum([0] + [p.n_rows for p in source.pieces])
        self._classes: np.ndarray | None = None
        if self.task == "classification":
            if classes is not None:
                self._classes = _sorted_classes(np.asarray(classes), target)
            else:
                known = source.known_classes(target)  # type: ignore[arg-type]
                if known is not None:
                    self._classes = _sorted_classes(known, target)

    # ------------------------------------------------------------------ schema
    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return len(self.feature_names)

    @property
    def classes(self) -> np.ndarray | None:
        """Sorted class labels; discovered by one scan of the target column if not recorded."""
        if self.task != "classification":
            return None
        if self._classes is None:
            self._classes = self._scan_classes()
        return self._classes

    @property
    def schema(self) -> Schema:
        """The dataset's :class:`Schema` (resolves ``classes`` if needed)."""
        return Schema(
            n_rows=self.n_rows,
            feature_names=self.feature_names,
            target=self.target,
            task=self.task,
            classes=self.classes,
            weight=self.weight,
            source=self.source.description,
        )

    @property
    def n_chunks(self) -> int:
        """Number of chunks at the current ``chunk_rows``."""
        return -(-self.n_rows // self.chunk_rows)

    def __repr__(self) -> str:
        return (f"Dataset({self.source.description!r}, rows={self.n_rows}, "
                f"features={self.n_features}, target={self.target!r}, "
                f"chunk_rows={self.chunk_rows})")

    def locate(self, row: int) -> str:
        """Describe global ``row`` as 'row R of <piece label>' for messages."""
        i = int(np.searchsorted(self._offsets, row, side="right")) - 1
        piece = self.source.pieces[i]
        return f"row {piece.file_row + row - int(self._offsets[i])} of {piece.label}"

    def _scan_classes(self) -> np.ndarray:
        assert self.target is not None
        found: np.ndarray | None = None
        for i in range(len(self.source.pieces)):
            values = np.unique(self.source.read_target(i, self.target))
            found = values if found is None else np.union1d(found, values)
            if len(found) > MAX_CLASSES:
                break
        assert found is not None
        return _sorted_classes(found, self.target)

    # ---------------------------------------------------------------- streaming
    def chunks(
        self,
        chunk_rows: int | None = None,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        epoch: int = 0,
        prefetch: int | None = None,
        rows: tuple[int, int] | None = None,
        skip: int = 0,
    ) -> Iterator[Chunk]:
        """Iterate over the dataset in chunks.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per chunk (the last may be shorter); defaults to the dataset's.
        shuffle : bool
            Visit chunks in a random order and permute rows within each chunk. The order is
            a function of ``(seed, epoch)`` alone, so runs are reproducible and each epoch
            differs. Only one chunk's rows are ever permuted in memory.
        seed, epoch : int
            Seed of the shuffle and the epoch number mixed into it.
        prefetch : int, optional
            Chunks read ahead in a background thread, or concurrently by up to that many
            threads for a source read by row range (zarr); 0 reads in the calling thread.
        rows : (start, stop), optional
            Restrict the walk to global rows ``start:stop`` (used to split a dataset into
            partitions); chunk boundaries are counted from ``start``.
        skip : int
            Leave out the first ``skip`` chunks of this order, unread (resuming a pass).

        Yields
        ------
        Chunk
        """
        size = int(chunk_rows) if chunk_rows else self.chunk_rows
        if size < 1:
            raise ValueError(f"chunk_rows must be a positive number of rows, got {chunk_rows}")
        lo, hi = rows if rows is not None else (0, self.n_rows)
        if not 0 <= lo <= hi <= self.n_rows:
            raise ValueError(f"rows {rows} outside the dataset's 0..{self.n_rows}")
        starts = np.arange(lo, hi, size, dtype=np.int64)
        # One seed per chunk, drawn up front, so a chunk's row permutation does not depend on
        # which thread cuts it or in what order.
        row_seeds: np.ndarray | None = None
        if shuffle:
            rng = np.random.default_rng([0 if seed is None else int(seed), int(epoch)])
            starts = rng.permutation(starts)
            row_seeds = rng.integers(0, 2**63 - 1, size=len(starts), dtype=np.int64)[skip:]
        starts = starts[skip:]
        classes = self.classes  # resolve before the reader thread starts
        depth = self.prefetch if prefetch is None else int(prefetch)

        def chunk(k: int, reader: _PieceReader | _RangeReader) -> Chunk:
            a = int(starts[k])
            rng = None if row_seeds is None else np.random.default_rng(int(row_seeds[k]))
            return self._chunk(reader, a, min(a + size, hi), classes, rng)

        if hasattr(self.source, "read_rows"):
            ranges = _RangeReader(self)
            return prefetched_map(lambda k: chunk(k, ranges), range(len(starts)), depth)

        def produce() -> Iterator[Chunk]:
            reader = _PieceReader(self)
            for k in range(len(starts)):
                yield chunk(k, reader)

        return prefetched(produce, depth)

    def __iter__(self) -> Iterator[Chunk]:
        return self.chunks()

    def _chunk(self, reader: _PieceReader | _RangeReader, a: int, b: int,
               classes: np.ndarray | None, rng: np.random.Generator | None) -> Chunk:
        X, y_raw, w = reader.rows(a, b)
        keep = None
        if isinstance(self.nan_policy, float):
            if first_nonfinite(X) >= 0:
                X = X.copy()
                fill_nonfinite(X, self.nan_policy)
        elif self.nan_policy == "drop":
            mask = finite_rows(X)
            if w is not None:
                mask &= np.isfinite(w)
            if y_raw is not None and y_raw.dtype.kind == "f":
                mask &= np.isfinite(y_raw)
            if not mask.all():
                keep = np.flatnonzero(mask)
        else:
            flat = first_nonfinite(X)
            if flat >= 0:
                r, c = divmod(flat, X.shape[1])
                raise DataError(
                    f"{X[r, c]} in feature column {self.feature_names[c]!r} at "
                    f"{self.locate(a + r)} (dataset row {a + r}); open the data with "
                    "nan_policy='drop' to skip such rows or nan_policy=<value> to fill them"
                )
        if keep is not None:
            X = X[keep]
            y_raw = y_raw[keep] if y_raw is not None else None
            w = w[keep] if w is not None else None
        index = (keep + a).astype(np.int64) if keep is not None else None
        if w is not None:
            self._check_weights(w, a, index)
        y = self._encode(y_raw, a, index, classes) if y_raw is not None else None
        if rng is not None and X.shape[0] > 1:
            perm = rng.permutation(X.shape[0])
            index = perm + a if index is None else index[perm]
            # np.take gathers rows about twice as fast as fancy indexing
            X = np.take(X, perm, axis=0)
            y = np.take(y, perm) if y is not None else None
            w = np.take(w, perm) if w is not None else None
        return Chunk(X=X, y=y, start=a, index=index, weight=w)

    def _row(self, a: int, index: np.ndarray | None, r: int) -> int:
        return int(index[r]) if index is not None else a + r

    def _check_weights(self, w: np.ndarray, a: int, index: np.ndarray | None) -> None:
        bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
        if bad.size:
            row = self._row(a, index, int(bad[0]))
            raise DataError(
                f"weight column {self.weight!r} is {w[bad[0]]} at {self.locate(row)}; "
                "sample weights must be finite and non-negative"
            )

    def _encode(self, y: np.ndarray, a: int, index: np.ndarray | None,
                classes: np.ndarray | None) -> np.ndarray:
        if y.dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(y))
            if bad.size:
                row = self._row(a, index, int(bad[0]))
                raise DataError(
                    f"target {self.target!r} is {y[bad[0]]} at {self.locate(row)}; "
                    "open the data with nan_policy='drop' to skip such rows"
                )
        if self.task == "regression":
            return y.astype(np.float32, copy=False)
        assert classes is not None
        codes = consecutive_codes(y, classes)
        if codes is not None:
            return codes
        codes = np.searchsorted(classes, y)
        codes = np.minimum(codes, len(classes) - 1)
        wrong = np.flatnonzero(classes[codes] != y)
        if wrong.size:
            row = self._row(a, index, int(wrong[0]))
            raise LabelError(
                f"label {_plain(y[wrong[0]])!r} of target {self.target!r} at {self.locate(row)} "
                f"is not one of the classes {_listing(classes.tolist())}"
            )
        return codes.astype(np.int32)


class _RangeReader:
    """Reads global row ranges directly from a source that supports it (``read_rows``)."""

    def __init__(self, dataset: Dataset) -> None:
        self._ds = dataset

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        ds = self._ds
        block = ds.source.read_rows(  # type: ignore[attr-defined]
            a, b, list(ds.feature_names), ds.target, ds.weight
        )
        return block.X, block.y, block.weight


class _PieceReader:
    """Cuts global row ranges out of storage pieces, keeping the last piece read."""

    def __init__(self, dataset: Dataset) -> None:
        self._ds = dataset
        self._cached: tuple[int, Block] | None = None

    def _block(self, i: int) -> Block:
        if self._cached is not None and self._cached[0] == i:
            return self._cached[1]
        ds = self._ds
        block = ds.source.read_piece(i, list(ds.feature_names), ds.target, ds.weight)
        self._cached = (i, block)
        return block

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        offsets = self._ds._offsets
        first = int(np.searchsorted(offsets, a, side="right")) - 1
        parts: list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = []
        i = first
        while i < len(offsets) - 1 and offsets[i] < b:
            block = self._block(i)
            lo = max(a, int(offsets[i])) - int(offsets[i])
            hi = min(b, int(offsets[i + 1])) - int(offsets[i])
            parts.append((
                block.X[lo:hi],
                block.y[lo:hi] if block.y is not None else None,
                block.weight[lo:hi] if block.weight is not None else None,
            ))
            i += 1
        if len(parts) == 1:
            return parts[0]
        X = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts]) if parts[0][1] is not None else None
        w = np.concatenate([p[2] for p in parts]) if parts[0][2] is not None else None
        return X, y, w


def _task(task: Task | None, target: str | None, kind: ColumnKind | None) -> Task | None:
    if target is None:
        if task is not None:
            raise LabelError(f"task={task!r} needs a target column; pass target=...")
        return None
    if task is not None and task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    assert kind is not None
    if task == "regression" and not kind.is_numeric:
        raise LabelError(f"target {target!r} is {kind.value}; regression needs a numeric target")
    if task is not None:
        return task
    if kind == ColumnKind.NUMERIC:
        return "regression"
    if kind == ColumnKind.OTHER:
        raise LabelError(f"target {target!r} has a type that is neither labels nor numbers")
    return "classification"


def _sorted_classes(values: np.ndarray, target: str | None) -> np.ndarray:
    try:
        classes = np.unique(np.asarray(values))
    except TypeError as exc:
        raise LabelError(f"labels of target {target!r} mix types that cannot be ordered: "
                         f"{exc}") from exc
    if classes.dtype.kind == "f" and not np.isfinite(classes).all():
        raise LabelError(f"target {target!r} has NaN or infinite labels; drop those rows first")
    if len(classes) < 2:
        raise LabelError(
            f"target {target!r} has 1 class ({_listing(classes.tolist())}); "
            "a classifier needs at least two"
        )
    if len(classes) > MAX_CLASSES:
        raise LabelError(
            f"target {target!r} has more than {MAX_CLASSES} distinct values; "
            "for a continuous target use task='regression'"
        )
    if classes.dtype.kind == "O":
        classes = classes.astype(str)
    return classes


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _listing(items: list[Any], limit: int = 12) -> str:
    shown = ", ".join(repr(v) for v in items[:limit])
    return f"[{shown}{', ...' if len(items) > limit else ''}]"
