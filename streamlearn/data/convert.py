"""Write any dataset to a zarr v3 store, streaming it one chunk at a time.

Two layouts are written:

- ``"dense"``: the matrix layout :class:`~streamlearn.data.sources.zarr_store.ZarrSource`
  reads: a 2-D float32 array ``X`` (feature names in its ``feature_names`` attribute), the
  target ``y`` and the sample weights ``weight`` (when the dataset has them; ``y_`` and
  ``weight_`` beside features of those names), named in the group's ``target`` and
  ``weight`` attributes;
- ``"sparse"``: the CSR layout
  :class:`~streamlearn.data.sources.sparse_zarr.SparseZarrSource` reads: ``indptr``,
  ``indices``, ``data``, ``y`` and ``weight``, with the group attributes ``layout="csr"``
  and ``n_features``.

Labels are written as they are in the source (not as class codes), with the label set in
the ``classes`` attribute of ``y``, so that reading the store needs no scan for it;
regression targets are written as the float32 values the stream delivers. Categorical
feature columns are written as their float32 codes, and their category lists are kept in a
``categories`` attribute (next to ``feature_names``); reading the store back gives the
same codes, and the dataset reports the same category lists (``Dataset.categories``), so a
model trained on the store codes new tables as the source was coded.

Each numeric array is compressed with Blosc's LZ4 where that saves at least
``AUTO_MIN_SAVING`` of its bytes, judged on its first storage chunk, else stored as it is
(``compression="auto"``, :func:`compressors`); text labels are compressed with zstd. Arrays
are written in whole storage chunks; memory is one chunk of the stream plus one storage
chunk per array.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numcodecs
import numpy as np
import zarr
from zarr.codecs import BloscCodec, ZstdCodec

from streamlearn.atomic_file import give_new_file_mode, output_target
from streamlearn.data.chunk import Chunk
from streamlearn.data.dataset import Dataset
from streamlearn.data.sources.base import fresh_name
from streamlearn.data.sources.sparse_zarr import CSR_LAYOUT
from streamlearn.data.sources.zarr_chunks import EVERY_CHUNK_WRITTEN
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError

Layout = Literal["auto", "dense", "sparse"]
Compression = Literal["auto", "lz4", "zstd", "none"]
#: Most bytes of one storage chunk of a dense ``X`` (fewer rows per chunk for wide data).
MAX_DENSE_CHUNK_BYTES = 32 << 20
#: Entries per storage chunk of ``indices`` and ``data`` (1 MiB of each). A stream chunk's
#: entries start and end inside storage chunks, which are decoded whole: the waste is about
#: one storage chunk per read, half of the work for a default chunk of sparse rows (25,600
#: rows of 80 entries, 2 million entries) with chunks of 1 << 20 entries, an eighth with these.
SPARSE_CHUNK_ENTRIES = 1 << 18
#: zstd level of ``compression="zstd"`` and of text labels.
ZSTD_LEVEL = 3
#: Blosc level of the LZ4 compression ("lz4", and "auto" where it pays).
LZ4_LEVEL = 5
#: Least share of an array's bytes that LZ4 must save, on its first storage chunk, for
#: ``compression="auto"`` to compress the array.
AUTO_MIN_SAVING = 0.25
COMPRESSIONS = ("auto", "lz4", "zstd", "none")


def compressors(compression: Compression, dtype: Any,
                sample: np.ndarray | None = None) -> tuple[Any, ...]:
    """The zarr compressors of a numeric array stored with ``compression``.

    ``"lz4"``: Blosc's LZ4 after a byte shuffle (each value's bytes regrouped so that the
    exponents and the high bytes of indices sit together), decoded 1.4-2x faster than
    zstd (``bench/codecs.py``) at 1.0-1.15x its size on noisy float32 features and CSR
    columns, 1.6x on image pixels; ``"zstd"``: zstd at level ``ZSTD_LEVEL``, the smallest
    stores; ``"none"``. Text labels are always zstd-compressed.

    ``"auto"``: LZ4 as ``"lz4"`` where it shrinks ``sample`` (the array's first storage
    chunk) by at least ``AUTO_MIN_SAVING`` of its bytes (:func:`lz4_saves`), else none
    (also for no sample, an empty array). Decoding is paid on every epoch, from the page
    cache too, while the bytes saved pay only when the store is read from disk: float32
    values at full precision (noisy features, the tf-idf ``data`` of CSR stores) keep over
    80 % of their bytes under LZ4, and are read faster stored as they are; CSR column
    indices (40 % saved) and image pixels (85 %) stay compressed.
    """
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
    if np.dtype(dtype).kind in "UOT" or compression == "zstd":
        return (ZstdCodec(level=ZSTD_LEVEL),)
    lz4 = (BloscCodec(cname="lz4", clevel=LZ4_LEVEL, shuffle="shuffle"),)
    if compression == "auto":
        return lz4 if sample is not None and lz4_saves(sample) >= AUTO_MIN_SAVING else ()
    if compression == "none":
        return ()
    return lz4


def lz4_saves(sample: np.ndarray) -> float:
    """The share of ``sample``'s bytes that ``compression="lz4"`` saves on it: 1 - (bytes
    of Blosc's LZ4 output, as zarr writes it for a chunk) / (bytes of ``sample``); 0 for
    an empty sample."""
    values = np.ascontiguousarray(sample)
    if values.nbytes == 0:
        return 0.0
    codec = numcodecs.Blosc(cname="lz4", clevel=LZ4_LEVEL, shuffle=numcodecs.Blosc.SHUFFLE,
                            typesize=values.dtype.itemsize)
    return 1.0 - len(codec.encode(values)) / values.nbytes


@dataclass(frozen=True)
class ConvertReport:
    """What :func:`convert` wrote.

    Attributes
    ----------
    out : str
        The store written.
    rows : int
        Rows written.
    features : int
        Feature columns.
    layout : {"dense", "sparse"}
        Layout written.
    nnz : int
        Stored entries (sparse layout), or non-zero feature values (dense layout).
    bytes_written : int
        Size of the store.
    seconds : float
        Wall time of the conversion.
    codecs : dict of str to str
        The compressor each array was stored with, by array name: ``"lz4"`` (Blosc),
        ``"zstd"`` or ``"none"``.
    """

    out: str
    rows: int
    features: int
    layout: str
    nnz: int
    bytes_written: int
    seconds: float
    codecs: dict[str, str] = field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        """Rows written per second."""
        return self.rows / max(self.seconds, 1e-9)


def convert(
    dataset: Dataset,
    out: str | os.PathLike[str],
    *,
    layout: Layout = "auto",
    chunk_rows: int | None = None,
    overwrite: bool = False,
    compression: Compression = "auto",
    progress: Callable[[int], Any] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> ConvertReport:
    """Write the rows of ``dataset`` to a zarr v3 store at ``out``.

    Parameters
    ----------
    dataset : Dataset
        What to write (from :func:`streamlearn.open_dataset`): its features, its target
        and its sample weights when it has them, rows in order (after its ``nan_policy``).
    out : str or path
        Path or fsspec URL of the store to create.
    layout : {"auto", "dense", "sparse"}
        ``"dense"``: a 2-D ``X`` matrix; ``"sparse"``: CSR arrays; ``"auto"``: sparse when
        the dataset's source is sparse, else dense. Either source converts to either layout.
    chunk_rows : int, optional
        Rows per storage chunk, and per chunk of the stream; by default the dataset's
        ``chunk_rows``. A dense ``X`` holds at most ``MAX_DENSE_CHUNK_BYTES`` per chunk
        (fewer rows for wide data).
    overwrite : bool
        Replace an existing ``out`` that is a zarr store; otherwise an existing ``out`` is
        refused (a file or a directory that is not a zarr store always is).
    compression : {"auto", "lz4", "zstd", "none"}
        How the numeric arrays are compressed (:func:`compressors`; text labels always
        with zstd). ``"auto"``: each array with LZ4 where that saves at least
        ``AUTO_MIN_SAVING`` (a quarter) of the bytes of its first storage chunk, else
        not at all: decoding is paid on every epoch, the bytes saved only on reads from
        disk, so values that barely compress (float32 at full precision, such as the
        ``data`` of CSR stores) are stored as they are, while indices, pixels and labels
        are compressed. ``"lz4"``, ``"zstd"`` and ``"none"`` use that codec for every
        numeric array: ``"lz4"`` decodes fastest of the two compressors, ``"zstd"``
        makes the smallest store (image-like data: about half of lz4's). What each
        array got is in :attr:`ConvertReport.codecs` and the store's zarr metadata.
    progress : callable, optional
        Called with the number of rows of each chunk once it is written.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    ConvertReport

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is False, or it is not a zarr store.
    ValueError
        An unknown ``layout``, or a ``chunk_rows`` below 1.
    DataError
        No rows left to write (every row dropped by the dataset's ``nan_policy``).

    Notes
    -----
    A local store is written into a temporary directory next to ``out`` and renamed into
    place when complete, so an interrupted conversion never leaves a partial store at
    ``out``. A store at a remote URL is written in place.
    """
    started = time.perf_counter()
    if layout not in ("auto", "dense", "sparse"):
        raise ValueError(f"layout must be 'auto', 'dense' or 'sparse', got {layout!r}")
    compressors(compression, np.float32, None)  # refuses an unknown one before reading
    source_sparse = bool(getattr(dataset.source, "sparse", False))
    chosen = ("sparse" if source_sparse else "dense") if layout == "auto" else layout
    if chunk_rows is not None and int(chunk_rows) < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {chunk_rows}")
    rows = int(chunk_rows) if chunk_rows else int(dataset.chunk_rows)
    rows = min(rows, max(int(dataset.n_rows), 1))  # no storage chunk longer than the data
    dataset = dataset.with_any_classes()  # one class is data too: written, not refused

    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    url = os.fspath(out)
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if fs.exists(path) and not overwrite:
        raise FileExistsError(f"{url} exists; pass overwrite=True (--overwrite) to replace it")
    if fs.exists(path) and not _is_zarr_store(fs, path):
        # overwrite replaces a store, never a file or a directory of other things
        raise FileExistsError(f"{url} exists and is not a zarr store; overwrite=True "
                              "(--overwrite) replaces a zarr store only: remove it yourself "
                              "or write elsewhere")
    local = isinstance(fs, LocalFileSystem)
    if not local and url.rstrip("/") == str(dataset.source.description).rstrip("/"):
        raise ValueError(f"{url} is the store being read; write to another place")

    with _destination(url, path, local, overwrite) as target:
        group = zarr.open_group(target, mode="w",
                                storage_options=None if local else storage_options)
        writer = _DenseWriter(group, dataset, rows, compression) if chosen == "dense" \
            else _SparseWriter(group, dataset, rows, compression)
        n_written = 0
        for chunk in dataset.chunks(chunk_rows=rows, shuffle=False):
            writer.write(chunk)
            n_written += chunk.n_rows
            if progress is not None:
                progress(chunk.n_rows)
        if n_written == 0:
            raise DataError(f"no rows left to write from {dataset.source.description} "
                            "(every row was dropped by the nan_policy)")
        writer.close(n_written)
    try:
        size = int(fs.du(path, total=True))
    except Exception:  # a store without listings (some object stores) has no size to tell
        size = 0
    return ConvertReport(out=url, rows=n_written, features=dataset.n_features, layout=chosen,
                         nnz=writer.nnz, bytes_written=size,
                         seconds=time.perf_counter() - started,
                         codecs={a.name: a.codec for a in writer.appenders()})


def _is_zarr_store(fs: Any, path: str) -> bool:
    """Whether ``path`` is a zarr group (a directory with its ``zarr.json``)."""
    return bool(fs.isdir(path)) and bool(fs.exists(f"{path.rstrip('/')}/zarr.json"))


@contextlib.contextmanager
def _destination(url: str, path: str, local: bool, overwrite: bool) -> Iterator[str]:
    """Where to write: a temporary sibling directory renamed to ``path`` on success (local
    paths; a symbolic link is followed, and the store it names replaced), or ``url``
    itself."""
    if not local:
        yield url
        return
    final = os.fspath(output_target(path, directory=True).path)
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.", suffix=".tmp", dir=parent)
    try:
        yield tmp
        old = None
        if os.path.lexists(final):
            if not overwrite:
                raise FileExistsError(f"{url} appeared while it was being written; pass "
                                      "overwrite=True (--overwrite) to replace it")
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.", suffix=".old",
                                   dir=parent)
        give_new_file_mode(tmp, final)  # mkdtemp's is owner-only
        if old is not None:
            os.replace(final, os.path.join(old, "store"))
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Appender:
    """Appends rows to a zarr array in whole storage chunks, growing it as they come.

    The array is created at the first write, so that ``compression="auto"`` judges its
    codec on the first storage chunk (:func:`compressors`). Rows short of a whole chunk
    wait in memory until more arrive or :meth:`close`.
    """

    def __init__(self, group: zarr.Group, name: str, shape: tuple[int, ...],
                 chunks: tuple[int, ...], dtype: Any, compression: Compression,
                 attributes: dict[str, Any] | None = None) -> None:
        self._group, self.name, self._shape, self._chunks = group, name, shape, chunks
        self._dtype, self._compression = dtype, compression
        self._attributes = attributes
        self.array: zarr.Array | None = None
        self.step = int(chunks[0])
        self.length = 0
        self._pending: list[np.ndarray] = []
        self._n_pending = 0

    def _create(self, first: np.ndarray | None) -> zarr.Array:
        """The array, compressed as ``first`` (its first storage chunk, or None when it
        holds no rows) tells."""
        sample = None if first is None else np.asarray(first, dtype=self._dtype)
        # every chunk written, the all-zero ones too, and marked so: a reader then tells a
        # lost chunk file from one zarr left out as empty
        return self._group.create_array(
            self.name, shape=self._shape, chunks=self._chunks, dtype=self._dtype,
            compressors=compressors(self._compression, self._dtype, sample),
            attributes={**(self._attributes or {}), EVERY_CHUNK_WRITTEN: True},
            config={"write_empty_chunks": True})

    def append(self, values: np.ndarray) -> None:
        if values.shape[0] == 0:
            return
        self._pending.append(values)
        self._n_pending += values.shape[0]
        if self._n_pending < self.step:
            return
        block = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        whole = self._n_pending // self.step * self.step
        self._write(block[:whole])
        rest = block[whole:]
        self._pending = [rest.copy()] if rest.shape[0] else []
        self._n_pending = rest.shape[0]

    def _write(self, block: np.ndarray) -> None:
        if self.array is None:
            self.array = self._create(block[:self.step])
        end = self.length + block.shape[0]
        if end > self.array.shape[0]:
            grown = max(end, 2 * self.array.shape[0])
            self.array.resize((grown, *self.array.shape[1:]))
        self.array[self.length:end] = block
        self.length = end

    def close(self) -> None:
        if self._pending:
            block = self._pending[0] if len(self._pending) == 1 \
                else np.concatenate(self._pending)
            self._pending, self._n_pending = [], 0
            self._write(block)
        if self.array is None:
            self.array = self._create(None)
        if self.array.shape[0] != self.length:
            self.array.resize((self.length, *self.array.shape[1:]))

    @property
    def codec(self) -> str:
        """The name of the array's compressor (``"none"`` when it has none)."""
        found = [] if self.array is None else list(self.array.compressors)
        if not found:
            return "none"
        codec = found[0]
        name = getattr(getattr(codec, "cname", None), "value", None)
        return str(name) if name else type(codec).__name__.removesuffix("Codec").lower()


def _create(group: zarr.Group, name: str, shape: tuple[int, ...], chunks: tuple[int, ...],
            dtype: Any, compression: Compression,
            attributes: dict[str, Any] | None = None) -> _Appender:
    return _Appender(group, name, shape, chunks, dtype, compression, attributes)


class _Writer:
    """Writes the target and weights of chunks (shared by both layouts)."""

    def __init__(self, group: zarr.Group, dataset: Dataset, rows: int,
                 compression: Compression, names: tuple[str, str] = ("y", "weight")) -> None:
        self.dataset = dataset
        self.nnz = 0
        n = dataset.n_rows
        self._classes = (integral_labels(dataset.classes) if dataset.task == "classification"
                         else None)
        self._y: _Appender | None = None
        self._weight: _Appender | None = None
        if dataset.target is not None:
            if self._classes is not None:
                classes = self._classes
                dtype: Any = str if classes.dtype.kind in "UOT" else classes.dtype
                attributes = {"classes": classes.tolist()}
            else:
                dtype, attributes = np.float32, None
            self._y = _create(group, names[0], (n,), (rows,), dtype, compression, attributes)
        if dataset.weight is not None:
            self._weight = _create(group, names[1], (n,), (rows,), np.float32, compression)

    def write_columns(self, chunk: Chunk) -> None:
        if self._y is not None:
            assert chunk.y is not None
            y = self._classes[chunk.y] if self._classes is not None else chunk.y
            self._y.append(y)
        if self._weight is not None:
            assert chunk.weight is not None
            self._weight.append(chunk.weight)

    def appenders(self) -> list[_Appender]:
        """The arrays written, features first."""
        return [a for a in (self._y, self._weight) if a is not None]

    def close_columns(self, n_rows: int) -> None:
        for appender in (self._y, self._weight):
            if appender is not None:
                appender.close()
                assert appender.length == n_rows


def _feature_attributes(dataset: Dataset) -> dict[str, Any]:
    """``feature_names`` (left out for the numbered columns of a sparse source) and
    ``categories`` (when some features are category codes)."""
    attributes: dict[str, Any] = {}
    if not getattr(dataset.source, "sparse", False):
        attributes["feature_names"] = [str(n) for n in dataset.feature_names]
    categories = getattr(dataset, "categories", None) or {}
    if categories:
        attributes["categories"] = {str(name): [_json_value(v) for v in values]
                                    for name, values in categories.items()}
    return attributes


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


class _DenseWriter(_Writer):
    """Writes the matrix layout: ``X`` (rows x features), ``y``, ``weight``."""

    def __init__(self, group: zarr.Group, dataset: Dataset, rows: int,
                 compression: Compression) -> None:
        # the target and weight arrays share the features' namespace: a feature named y
        # keeps its name, the target is y_ (recorded in the group's attributes)
        names = tuple(fresh_name(base, set(map(str, dataset.feature_names)))
                      for base in ("y", "weight"))
        super().__init__(group, dataset, rows, compression, names)
        if dataset.target is not None:
            group.attrs["target"] = names[0]
        if dataset.weight is not None:
            group.attrs["weight"] = names[1]
        d = dataset.n_features
        self._x_rows = max(1, min(rows, MAX_DENSE_CHUNK_BYTES // (4 * max(d, 1))))
        self._X = _create(group, "X", (dataset.n_rows, d), (self._x_rows, d), np.float32,
                          compression, _feature_attributes(dataset))

    def write(self, chunk: Chunk) -> None:
        X = chunk.X
        if isinstance(X, SparseRows):
            for a in range(0, X.n_rows, self._x_rows):
                part = X.slice(a, min(a + self._x_rows, X.n_rows))
                self.nnz += int(np.count_nonzero(part.values))
                self._X.append(part.toarray())
        else:
            self.nnz += int(np.count_nonzero(X))
            self._X.append(X)
        self.write_columns(chunk)

    def appenders(self) -> list[_Appender]:
        return [self._X, *super().appenders()]

    def close(self, n_rows: int) -> None:
        self._X.close()
        self.close_columns(n_rows)


class _SparseWriter(_Writer):
    """Writes the CSR layout: ``indptr``, ``indices``, ``data``, ``y``, ``weight``."""

    def __init__(self, group: zarr.Group, dataset: Dataset, rows: int,
                 compression: Compression) -> None:
        super().__init__(group, dataset, rows, compression)
        group.attrs.update({"layout": CSR_LAYOUT, "n_features": dataset.n_features,
                            **_feature_attributes(dataset)})
        self._indptr = _create(group, "indptr", (dataset.n_rows + 1,), (rows,), np.int64,
                               compression)
        self._indptr.append(np.zeros(1, dtype=np.int64))
        self._indices = _create(group, "indices", (0,), (SPARSE_CHUNK_ENTRIES,), np.int32,
                                compression)
        self._data = _create(group, "data", (0,), (SPARSE_CHUNK_ENTRIES,), np.float32,
                             compression)

    def write(self, chunk: Chunk) -> None:
        X = chunk.X
        if isinstance(X, SparseRows):
            indptr, indices, values = X.indptr, X.indices, X.values
        else:
            indptr, indices, values = _dense_to_csr(X)
        self._indptr.append(np.asarray(indptr[1:], dtype=np.int64) + self.nnz)
        self._indices.append(np.ascontiguousarray(indices, dtype=np.int32))
        self._data.append(np.ascontiguousarray(values, dtype=np.float32))
        self.nnz += int(indptr[-1])
        self.write_columns(chunk)

    def appenders(self) -> list[_Appender]:
        return [self._indptr, self._indices, self._data, *super().appenders()]

    def close(self, n_rows: int) -> None:
        for appender in (self._indptr, self._indices, self._data):
            appender.close()
        assert self._indptr.length == n_rows + 1 and self._indices.length == self.nnz
        self.close_columns(n_rows)


def _dense_to_csr(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero entries of a dense matrix as CSR arrays (columns sorted within rows)."""
    nonzero = X != 0
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(nonzero.sum(axis=1), out=indptr[1:])
    _, columns = np.nonzero(nonzero)
    return indptr, columns.astype(np.int32), X[nonzero].astype(np.float32, copy=False)


def integral_labels(classes: np.ndarray | None) -> np.ndarray | None:
    """Class labels to write: float labels that are all whole numbers (svmlight's) as int64,
    so that the store reopens as a classification target; others as they are."""
    if classes is None or classes.dtype.kind != "f":
        return classes
    if np.all(classes == np.round(classes)) and np.all(np.abs(classes) < 2**53):
        return classes.astype(np.int64)
    return classes
