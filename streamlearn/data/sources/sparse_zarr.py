"""Zarr v3 groups holding rows in compressed sparse row (CSR) form.

The layout: a group with the attributes ``{"layout": "csr", "n_features": d}`` and 1-D
arrays

- ``indptr`` (int64, ``n_rows + 1`` values, starting at 0): row ``r`` holds the entries
  ``indptr[r]:indptr[r + 1]`` of
- ``indices`` (int32, column of each entry, in ``[0, d)``, distinct within a row) and
- ``data`` (float32, value of each entry);
- ``y`` (``n_rows`` labels or values, any numeric or string dtype; a ``classes`` attribute
  records the label set; may be left out for unlabelled rows) and, optionally, ``weight``
  (float32 sample weights).

Rows are read by global row range: ``indptr[a:b + 1]`` first, then the slices of
``indices`` and ``data`` it points to.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import zarr

from streamlearn.data.readahead import FileRange
from streamlearn.data.sources.base import Block, ColumnKind, Piece, numpy_kind
from streamlearn.data.sources.zarr_chunks import reader_or_none
from streamlearn.data.sources.zarr_store import _read, _row_block, plain_strings, read_arrays
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError, ReadError, SourceError

#: Value of the group's ``layout`` attribute that marks a CSR group.
CSR_LAYOUT = "csr"
#: Arrays every CSR group holds.
REQUIRED_ARRAYS = ("indptr", "indices", "data")
#: Row-aligned arrays a CSR group may hold: the target and the sample weights.
ROW_ARRAYS = ("y", "weight")


def is_sparse_zarr(group: Any, storage_options: dict[str, Any] | None = None) -> bool:
    """Whether a zarr group declares the CSR layout (its ``layout`` attribute is ``"csr"``).

    Parameters
    ----------
    group : zarr.Group, str or path
        The group, or its path or fsspec URL (only its metadata is read).
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    bool
        False also when no zarr group can be opened there (opening it as a source says why).
    """
    try:
        if not isinstance(group, zarr.Group):
            group = zarr.open_group(group, mode="r", storage_options=storage_options)
        return group.attrs.get("layout") == CSR_LAYOUT
    except Exception:
        return False


class SparseZarrSource:
    """Rows of a zarr v3 CSR group (see the module docstring), read by any row range.

    A sparse source: its features are the numbered columns ``x0 .. x{n_features - 1}``, or
    the names in the group's ``feature_names`` attribute (``stored_names``), and its blocks
    hold :class:`~streamlearn.data.sparse_rows.SparseRows`. Its columns are
    ``y`` and ``weight`` when present. Pieces follow the storage chunks of ``y`` (of
    ``indptr`` without ``y``).

    The layout is checked when the source is opened, from metadata and the first and last
    values of ``indptr`` only; each read checks that its rows' ``indptr`` values do not
    decrease. Column indices are read as stored: a :class:`~streamlearn.data.dataset.Dataset`
    checks them (in range, distinct within a row) with the rest of its validation.

    Parameters
    ----------
    store_or_url : str, path or zarr.Group
        A path or fsspec URL of the group, or the opened group.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Attributes
    ----------
    sparse : bool
        Always True.
    n_features : int
        Number of feature columns (the group's ``n_features`` attribute).
    nnz : int
        Number of stored entries.
    n_rows : int
        Number of rows.
    """

    sparse = True

    def __init__(self, store_or_url: Any, storage_options: dict[str, Any] | None = None) -> None:
        if isinstance(store_or_url, zarr.Group):
            group = store_or_url
            self.description = str(store_or_url.store)
        else:
            self.description = str(store_or_url)
            try:
                group = zarr.open_group(store_or_url, mode="r", storage_options=storage_options)
            except FileNotFoundError as exc:
                raise SourceError(f"no zarr group at {store_or_url}") from exc
            except Exception as exc:
                raise ReadError(f"could not open zarr store {store_or_url}: {exc}") from exc
        self._group = group
        where = self.description
        layout = group.attrs.get("layout")
        if layout != CSR_LAYOUT:
            raise SourceError(
                f"zarr group {where} is not a CSR group: its 'layout' attribute is "
                f"{layout!r}, expected {CSR_LAYOUT!r}"
            )
        n_features = group.attrs.get("n_features")
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 0:
            raise SourceError(
                f"zarr CSR group {where} needs a non-negative integer 'n_features' "
                f"attribute, has {n_features!r}"
            )
        self.n_features = int(n_features)
        # the names of a table written in the sparse layout (streamlearn convert): the
        # dataset's feature names, which also select its columns, all in order
        names = group.attrs.get("feature_names")
        self.stored_names: list[str] | None = (
            [str(n) for n in names] if isinstance(names, list)
            and len(names) == self.n_features else None)

        arrays = dict(group.arrays())
        missing = [name for name in REQUIRED_ARRAYS if name not in arrays]
        if missing:
            raise SourceError(
                f"zarr CSR group {where} lacks the array(s) {missing}; it holds "
                f"{sorted(arrays)}; a CSR group holds indptr, indices, data, and y"
            )
        for name in (*REQUIRED_ARRAYS, *ROW_ARRAYS):
            if name in arrays and arrays[name].ndim != 1:
                raise SourceError(
                    f"array {name!r} of zarr CSR group {where} has shape "
                    f"{arrays[name].shape}; expected a 1-D array"
                )
        for name, kinds in (("indptr", "iu"), ("indices", "iu"), ("data", "iufb"),
                            ("weight", "iufb")):
            if name in arrays and np.dtype(arrays[name].dtype).kind not in kinds:
                what = "integer" if kinds == "iu" else "numeric"
                raise SourceError(
                    f"array {name!r} of zarr CSR group {where} has dtype "
                    f"{arrays[name].dtype}; expected an {what} dtype"
                )
        self._indptr = arrays["indptr"]
        self._indices = arrays["indices"]
        self._data = arrays["data"]
        self._arrays = {name: arrays[name] for name in ROW_ARRAYS if name in arrays}
        # arrays whose chunk files are decoded directly (see zarr_chunks); None: by zarr
        self._direct = {name: reader_or_none(arrays[name])
                        for name in ("indptr", "indices", "data", *self._arrays)}
        self._pointer_chunk = threading.local()  # the last indptr chunk file_ranges decoded

        n_ptr = int(self._indptr.shape[0])
        if n_ptr < 1:
            raise DataError(f"array 'indptr' of zarr CSR group {where} is empty; it needs "
                            "n_rows + 1 values, starting at 0")
        self.n_rows = n_ptr - 1
        for name, arr in self._arrays.items():
            if arr.shape[0] != self.n_rows:
                raise DataError(
                    f"zarr CSR group {where}: array {name!r} has {arr.shape[0]} rows but "
                    f"'indptr' has {n_ptr} values (rows + 1 = {self.n_rows} rows)"
                )
        n_entries = int(self._indices.shape[0])
        if self._data.shape[0] != n_entries:
            raise DataError(
                f"zarr CSR group {where}: 'indices' has {n_entries} entries but 'data' has "
                f"{self._data.shape[0]}"
            )
        first = int(_read(self._indptr, 0, 1, where)[0])
        last = int(_read(self._indptr, n_ptr - 1, n_ptr, where)[0]) if n_ptr > 1 else first
        if first != 0:
            raise DataError(f"zarr CSR group {where}: 'indptr' starts at {first}, not 0")
        if last != n_entries:
            raise DataError(
                f"zarr CSR group {where}: 'indptr' ends at {last} but 'indices' and 'data' "
                f"have {n_entries} entries"
            )
        self.nnz = n_entries

        self.columns: list[str] = list(self._arrays)
        self.kinds: dict[str, ColumnKind] = {
            name: numpy_kind(np.dtype(arr.dtype)) for name, arr in self._arrays.items()
        }
        block = _row_block(self._arrays.get("y", self._indptr))
        self.pieces = [
            Piece(min(block, self.n_rows - a),
                  f"{where} rows {a}-{min(a + block, self.n_rows)}", a)
            for a in range(0, self.n_rows, block)
        ]

    def __getstate__(self) -> dict[str, Any]:
        # pickled (e.g. shipped to dask workers) without the read-ahead's per-thread chunk
        state = self.__dict__.copy()
        del state["_pointer_chunk"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pointer_chunk = threading.local()

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read one piece of rows (``features`` is ignored: a sparse source reads them all).

        Parameters
        ----------
        i : int
            Piece number.
        features : list of str
            Ignored.
        target, weight : str or None
            Columns to read as the target and the sample weights.

        Returns
        -------
        Block
        """
        piece = self.pieces[i]
        return self.read_rows(piece.file_row, piece.file_row + piece.n_rows, features, target,
                              weight)

    def file_ranges(self, a: int, b: int, features: list[str], target: str | None,
                    weight: str | None) -> list[FileRange]:
        """The chunk files :meth:`read_rows` reads for rows ``a:b``, for
        :class:`~streamlearn.data.readahead.ReadAhead`: those of ``indptr``, of the rows'
        entries in ``indices`` and ``data`` (found from the two ``indptr`` values that
        bound them) and of the target and weights. None for a store zarr reads itself
        (remote, or another layout), nor where ``indptr`` cannot be read: the read that
        follows reports it."""
        ptr = self._direct["indptr"]
        entries = [self._direct["indices"], self._direct["data"]]
        if ptr is None or b <= a:
            return []
        out = ptr.file_ranges(a, b + 1)
        for name in (target, weight):
            reader = self._direct.get(name) if name is not None else None
            if reader is not None:
                out += reader.file_ranges(a, b)
        try:
            lo, hi = self._pointer(a), self._pointer(b)
        except (ReadError, ValueError):
            return out
        if 0 <= lo <= hi <= self.nnz:
            out += [r for reader in entries if reader is not None
                    for r in reader.file_ranges(lo, hi)]
        return out

    def _pointer(self, row: int) -> int:
        """``indptr[row]``, decoding its storage chunk once for the calling thread (the
        read-ahead asks for the two ends of consecutive row ranges)."""
        reader = self._direct["indptr"]
        assert reader is not None
        k = row // reader.chunk_rows
        cached = getattr(self._pointer_chunk, "chunk", None)
        if cached is None or cached[0] != k:
            lo = k * reader.chunk_rows
            cached = (k, reader.read(lo, min(lo + reader.chunk_rows, reader.shape[0]),
                                     self.description))
            self._pointer_chunk.chunk = cached
        return int(cached[1][row - k * reader.chunk_rows])

    def read_rows(
        self, a: int, b: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read global rows ``a:b`` in one request, whatever storage chunks they span.

        Parameters
        ----------
        a, b : int
            First row and one past the last.
        features : list of str
            Ignored: a sparse source reads every feature.
        target, weight : str or None
            Columns to read as the target and the sample weights.

        Returns
        -------
        Block
            ``X`` is :class:`SparseRows` with ``indptr`` starting at 0 and
            ``n_cols = n_features``; ``weight`` is float64 (the dataset checks it and
            casts it to float32).

        Raises
        ------
        ReadError
            A storage chunk cannot be read or decoded (names the array and rows).
        DataError
            The rows' ``indptr`` decreases or points outside ``indices``.
        """
        where = self.description
        ptr = np.asarray(read_arrays([(self._indptr, self._direct["indptr"], a, b + 1)],
                                     where)[0], dtype=np.int64)
        lo, hi = int(ptr[0]), int(ptr[-1])
        if lo < 0 or hi > self.nnz or (np.diff(ptr) < 0).any():
            raise DataError(
                f"zarr CSR group {where}: 'indptr' of rows {a}-{b} is not a non-decreasing "
                f"sequence within 0..{self.nnz}"
            )
        names = [n for n in (target, weight) if n is not None]
        for name in names:
            if name not in self._arrays:
                raise KeyError(name)
        try:  # the entries, the target and the weights in one request
            read = read_arrays([(self._indices, self._direct["indices"], lo, hi),
                                (self._data, self._direct["data"], lo, hi),
                                *((self._arrays[n], self._direct[n], a, b) for n in names)],
                               where)
        except ReadError:  # read again one by one, to say which rows' entries failed
            read = [self._entries(self._indices, lo, hi, a, b),
                    self._entries(self._data, lo, hi, a, b),
                    *(self._column(n, a, b) for n in names)]
        indices = read[0].astype(np.int32, copy=False)
        values = read[1].astype(np.float32, copy=False)
        X = SparseRows(ptr - lo, np.ascontiguousarray(indices), np.ascontiguousarray(values),
                       self.n_features)
        columns = [plain_strings(v) for v in read[2:]]
        y = columns.pop(0) if target is not None else None
        w = columns.pop(0).astype(np.float64, copy=False) if weight is not None else None
        return Block(X=X, y=y, weight=w)

    def _entries(self, array: zarr.Array, lo: int, hi: int, a: int, b: int) -> np.ndarray:
        try:
            return _read(array, lo, hi, self.description)
        except ReadError as exc:
            raise ReadError(f"{exc} (the entries of rows {a}-{b})") from exc.__cause__

    def _column(self, name: str, a: int, b: int) -> np.ndarray:
        if name not in self._arrays:
            raise KeyError(name)
        # zarr's variable-length strings come as numpy StringDType; labels are plain str
        return plain_strings(_read(self._arrays[name], a, b, self.description))

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Read only the column ``target`` of piece ``i``.

        Parameters
        ----------
        i : int
            Piece number.
        target : str
            ``"y"`` or ``"weight"``.

        Returns
        -------
        ndarray
        """
        piece = self.pieces[i]
        return self._column(target, piece.file_row, piece.file_row + piece.n_rows)

    def known_classes(self, target: str) -> np.ndarray | None:
        """The ``classes`` attribute of the target array or of the group, if recorded.

        Parameters
        ----------
        target : str

        Returns
        -------
        ndarray or None
        """
        classes = self._arrays[target].attrs.get("classes") or self._group.attrs.get("classes")
        return np.asarray(classes) if classes else None
