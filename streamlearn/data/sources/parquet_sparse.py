"""Parquet files read as sparse rows: list columns of CSR entries, or hashed columns.

Two layouts, both read one row group at a time (a piece is a row group, as for
:class:`~streamlearn.data.sources.parquet.ParquetSource`):

- *list columns*: an ``indices`` column (``list<int>``) and optionally a ``values`` column
  (``list<float>``) hold each row's entries;
- *hashed*: every column but the target and the weight is a feature, hashed into
  ``hash_features`` columns (:mod:`streamlearn.data.hashing`): a numeric column ``c`` with
  value ``v`` gives the entry ``(hash("c"), v)``, a string or categorical one with value
  ``s`` the entry ``(hash("c=s"), 1)``, a ``list<string>`` one an entry ``(hash("c=t"), 1)``
  per token ``t``.

Rows are built per row group with pyarrow compute functions and numba kernels, never a
Python loop per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from numba import njit

from streamlearn.data.hashing import (
    check_hash_features,
    hash_strings,
    hashed_column,
    murmur3_32,
    sort_int64,
    sum_duplicates,
)
from streamlearn.data.sources.arrow_columns import arrow_kind, target_array
from streamlearn.data.sources.base import Block, ColumnKind, Piece
from streamlearn.data.sources.parquet import arrow_filesystem, partition_clash
from streamlearn.data.sources.parquet_handles import ParquetHandles
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError, ReadError, SchemaError, SourceError

#: Largest number of feature columns (column indices are int32).
MAX_INDEX = 2**31 - 1

# How a column becomes hashed entries.
NUMERIC = "numeric"  # (hash of the name, value)
STRING = "string"  # (hash of "name=value", 1)
TOKENS = "tokens"  # (hash of "name=token", 1) per token of a list

#: What each way of hashing takes and gives, for messages.
KIND_WORDS = {NUMERIC: ("numbers", "the column's name times the value"),
              STRING: ("text or categories", "'column=value'"),
              TOKENS: ("lists of text", "'column=token'")}


def check_hashed_kinds(columns: Sequence[str], trained: Sequence[str] | None,
                       given: Sequence[str], types: Sequence[str], where: str) -> None:
    """Refuse columns that would be hashed otherwise than in fit.

    Two column types are compatible when they are hashed alike, the one rule: numbers of
    any width (integers, floats, decimals, booleans) with numbers, text (strings, and
    categoricals of strings or integers) with text, and lists of text with lists of text.
    A column of another kind would give other entries (``column`` times the value against
    ``column=value``) than the model's features, and scores wrong without a sign.

    Parameters
    ----------
    columns : sequence of str
        The columns hashed, in the model's order (``hashed_columns_``).
    trained : sequence of str or None
        How each was hashed in fit (``hashed_kinds_``: ``"numeric"``, ``"string"``,
        ``"tokens"``); None for a model that does not record it, which is not checked.
    given : sequence of str
        How each is hashed in the data now.
    types : sequence of str
        Each column's type in the data now, for the message.
    where : str
        What the data is, for the message.

    Raises
    ------
    SchemaError
        Naming the first such column, its type now and the kind of values it held in fit.
    """
    if trained is None:
        return
    for name, before, now, dtype in zip(columns, trained, given, types, strict=True):
        if before != now:
            (what, how), (had, hashed) = KIND_WORDS[now], KIND_WORDS[before]
            raise SchemaError(
                f"column {name!r} of {where} is {dtype} ({what}, hashed as {how}), but it "
                f"held {had} in fit (hashed as {hashed}): its entries would be other "
                "features than the model's; give the column as it was in fit (types are "
                "compatible when both are numbers, both text or categories, or both lists "
                "of text)")


@dataclass(slots=True)
class _File:
    path: str
    types: dict[str, pa.DataType]  # stored columns, then partition keys
    keys: dict[str, Any]  # hive partition keys: columns constant over the file


# --------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def hashed_rows(
    n_rows: int, rows: np.ndarray, hashes: np.ndarray, values: np.ndarray, n_columns: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR rows from hashed entries given in any row order.

    Entry ``t`` adds ``sign * values[t]`` to row ``rows[t]`` at the column of
    ``hashes[t]`` (:func:`~streamlearn.data.hashing.hashed_column`). Entries of a row
    sharing a column are summed in float64, in the order given, then rounded to float32;
    each row's columns come out ascending.

    Returns
    -------
    indptr : ndarray of int64
    indices : ndarray of int32
    values : ndarray of float32
    """
    total = rows.shape[0]
    start = np.zeros(n_rows + 1, dtype=np.int64)
    for t in range(total):
        start[rows[t] + 1] += 1
    longest = 0
    for r in range(n_rows):
        longest = max(longest, start[r + 1])
        start[r + 1] += start[r]
    fill = start[:n_rows].copy()
    cols = np.empty(total, dtype=np.int64)
    vals = np.empty(total, dtype=np.float64)
    for t in range(total):  # a stable bucket sort by row
        p = fill[rows[t]]
        fill[rows[t]] = p + 1
        column, sign = hashed_column(hashes[t], n_columns)
        cols[p] = column
        vals[p] = sign * values[t]
    order = np.empty(longest, dtype=np.int64)
    scratch = np.empty(longest, dtype=np.float64)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    out_indices = np.empty(total, dtype=np.int32)
    out_values = np.empty(total, dtype=np.float32)
    e = 0
    for r in range(n_rows):
        lo = start[r]
        m = sum_duplicates(cols, vals, lo, start[r + 1], order, scratch)
        for k in range(m):
            out_indices[e + k] = cols[lo + k]
            out_values[e + k] = np.float32(vals[lo + k])
        e += m
        indptr[r + 1] = e
    return indptr, out_indices[:e], out_values[:e]


@njit(cache=True, nogil=True)
def first_repeated(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, int]:
    """The first row holding a column index twice, and that index; ``(-1, -1)`` if none."""
    scratch = np.empty(16, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        lo = indptr[r]
        n = indptr[r + 1] - lo
        ascending = True
        for k in range(1, n):
            if indices[lo + k] <= indices[lo + k - 1]:
                ascending = False
                break
        if ascending:
            continue
        if n > scratch.shape[0]:
            scratch = np.empty(2 * n, dtype=np.int64)
        for k in range(n):
            scratch[k] = indices[lo + k]
        sort_int64(scratch, n)
        for k in range(1, n):
            if scratch[k] == scratch[k - 1]:
                return r, scratch[k]
    return -1, -1


# --------------------------------------------------------------------------- arrow helpers
def _is_list(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


def _is_text(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_string_view(dtype)
    )


def _is_number(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(dtype)
        or pa.types.is_floating(dtype)
        or pa.types.is_decimal(dtype)
        or pa.types.is_boolean(dtype)
    )


def _is_category(dtype: pa.DataType) -> bool:
    """Strings, or a dictionary of strings or integers (a categorical)."""
    if pa.types.is_dictionary(dtype):
        return _is_text(dtype.value_type) or pa.types.is_integer(dtype.value_type)
    return _is_text(dtype)


def _hashed_kind(name: str, dtype: pa.DataType, where: str) -> str:
    """How column ``name`` is hashed, or a SchemaError saying why it cannot be."""
    if _is_number(dtype):
        return NUMERIC
    if _is_category(dtype):
        return STRING
    if _is_list(dtype) and _is_category(dtype.value_type):
        return TOKENS
    if _is_list(dtype) and _is_number(dtype.value_type):
        raise SchemaError(
            f"column {name!r} of {where} is {dtype}: a list of numbers is ambiguous as hashed "
            "features (positions? a bag of numbers?); store it as indices and values list "
            "columns (indices=, values=), as strings, or leave it out (exclude=)"
        )
    raise SchemaError(
        f"column {name!r} of {where} is {dtype}; hashed features are numeric, string, "
        "categorical or list<string> columns: convert it, or leave it out (exclude=)"
    )


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One Arrow array from a (chunked) column."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return column.chunk(0)
        if pa.types.is_string(column.type):  # offsets could overflow int32 once combined
            column = pc.cast(column, pa.large_string())
        return column.combine_chunks()
    return column


def _valid(array: pa.Array) -> np.ndarray:
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _hash_text(array: pa.Array, prefix: bytes) -> np.ndarray:
    """murmur3 of ``prefix + value`` for each value of a string-like array (nulls too)."""
    if not pa.types.is_large_string(array.type):
        array = pc.cast(array, pa.large_string())
    n = len(array)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[array.offset : array.offset + n + 1]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.empty(0, dtype=np.uint8)
    )
    out = np.empty(n, dtype=np.uint32)
    hash_strings(np.frombuffer(prefix, dtype=np.uint8), offsets, data, out)
    return out


def _category_entries(array: pa.Array, prefix: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the non-null values of a string or dictionary array, and their hashes."""
    if pa.types.is_dictionary(array.type):
        dictionary = array.dictionary
        hashes = _hash_text(dictionary, prefix)
        codes = array.indices
        valid = _valid(codes)
        code = pc.fill_null(codes, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        if dictionary.null_count and len(code):
            valid &= _valid(dictionary)[code]
        rows = np.flatnonzero(valid)
        return rows, hashes[code[rows]]
    rows = np.flatnonzero(_valid(array))
    return rows, _hash_text(array, prefix)[rows]


def _hash_columns(n_rows: int, columns: Sequence[tuple[str, str, pa.Array]],
                  name_hash: dict[str, int], n_features: int, where: str) -> SparseRows:
    """Rows of hashed entries from ``(name, kind, array)`` columns (see
    :class:`ParquetSparseSource`); ``name_hash``: the hashes of the numeric columns' names."""
    rows: list[np.ndarray] = []
    hashes: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for name, kind, array in columns:
        prefix = f"{name}=".encode()
        if kind == NUMERIC:
            v = pc.fill_null(pc.cast(array, pa.float64(), safe=False), 0.0)
            v = np.asarray(v.to_numpy(zero_copy_only=False), dtype=np.float64)
            r = np.flatnonzero(v != 0)  # NaN stays, for the dataset's nan_policy
            rows.append(r)
            hashes.append(np.full(r.shape[0], name_hash[name], dtype=np.uint32))
            vals.append(v[r])
            continue
        if kind == STRING:
            r, h = _category_entries(array, prefix)
        else:
            if not _is_list(array.type):  # pragma: no cover - checked when opened
                raise SchemaError(f"column {name!r} of {where} is {array.type}, not a list")
            parents = pc.list_parent_indices(array).to_numpy(zero_copy_only=False)
            r, h = _category_entries(pc.list_flatten(array), prefix)
            r = parents[r]
        rows.append(np.asarray(r, dtype=np.int64))
        hashes.append(h)
        vals.append(np.ones(r.shape[0], dtype=np.float64))
    indptr, idx, v32 = hashed_rows(
        n_rows,
        np.concatenate(rows).astype(np.int64, copy=False),
        np.concatenate(hashes).astype(np.uint32, copy=False),
        np.concatenate(vals),
        n_features,
    )
    return SparseRows(indptr, idx, v32, n_features)


def hash_table(table: pa.Table, hash_features: int, columns: Sequence[str],
               where: str = "X", kinds: Sequence[str] | None = None) -> SparseRows:
    """Hash the named columns of an in-memory table as :class:`ParquetSparseSource` hashes
    those of a parquet file (its other columns are left out): the rows a model trained on
    hashed parquet columns reads, from a table of the same columns.

    Parameters
    ----------
    table : pyarrow.Table
    hash_features : int
        Number of hashed columns (a power of two).
    columns : sequence of str
        The columns to hash (a model's ``hashed_columns_``).
    where : str
        What the table is, for messages.
    kinds : sequence of str, optional
        How each column was hashed in fit (a model's ``hashed_kinds_``): a column of the
        table that would be hashed otherwise is refused (:func:`check_hashed_kinds`).

    Returns
    -------
    SparseRows
        ``hash_features`` columns; a NaN value of a numeric column stays NaN.

    Raises
    ------
    SchemaError
        A column is missing, of a type that is not hashed, or hashed otherwise than in
        fit.
    """
    hash_features = check_hash_features(hash_features)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise SchemaError(f"{where} lacks the column(s) {missing} hashed in fit (the model's "
                          f"hashed_columns_ {list(columns)}); its columns are "
                          f"{table.column_names}")
    found = [(c, _hashed_kind(c, table.schema.field(c).type, where)) for c in columns]
    check_hashed_kinds(columns, kinds, [k for _, k in found],
                       [str(table.schema.field(c).type) for c in columns], where)
    return _hash_columns(
        table.num_rows, [(c, kind, _array(table.column(c))) for c, kind in found],
        {c: _hash_name(c) for c, kind in found if kind == NUMERIC}, hash_features, where)


# --------------------------------------------------------------------------- source
class ParquetSparseSource:
    """Sparse rows from a parquet file or a directory tree of them (hive partitions too).

    A sparse source (see :class:`~streamlearn.data.sources.base.Source`): its features
    are the numbered columns ``x0 .. x{n_features - 1}``, its ``columns`` and ``kinds``
    list only the target and the weight, and its blocks hold
    :class:`~streamlearn.data.sparse_rows.SparseRows`. Files are taken in sorted path
    order, their row groups in order; a piece is one row group. Opening reads the files'
    footers only (and, in the list layout without ``n_features`` nor statistics, the
    ``indices`` column once), one file at a time: only the rows of each row group, the
    column types and a few sums (values stored per column, the largest index) are kept, so
    a directory of many small files costs little more to open than one file of their rows.

    Parameters
    ----------
    path_or_url : str
        A parquet file or directory, local or an fsspec URL.
    storage_options : dict, optional
        Passed to fsspec.
    target : str or None
        The label column (None: unlabelled rows).
    weight : str, optional
        The sample weight column.
    indices : str, optional
        List layout: a ``list<int>`` column holding each row's column indices, distinct
        within a row and in ``[0, n_features)``.
    values : str, optional
        List layout: a ``list<number>`` column holding the values at ``indices``, a list of
        the same length in every row; by default every value is 1.
    n_features : int, optional
        List layout: the number of feature columns; by default one more than the largest
        index, from the parquet statistics of ``indices`` where every row group has them,
        else by reading that column once.
    hash_features : int, optional
        Hashed layout: a power of two from 2 to 2**30 (e.g. ``2**20``). Every column but
        ``target``, ``weight`` and ``exclude`` is a feature. A numeric or boolean column
        ``c`` with value ``v`` gives ``(hash("c"), v)`` (zeros and nulls give nothing; NaN
        is kept for the dataset's ``nan_policy``); a string or categorical column ``c``
        with value ``s`` gives ``(hash("c=s"), 1)``; a ``list<string>`` column ``c`` gives
        ``(hash("c=t"), 1)`` for each token ``t`` (a repeated token adds up); nulls give
        nothing. The hash is :func:`~streamlearn.data.hashing.murmur3_32` (seed 0) of the
        UTF-8 text; it picks a column and a sign the value is multiplied by
        (:func:`~streamlearn.data.hashing.hashed_column`); a row's entries landing on one
        column are summed. A ``list<number>`` column is an error (ambiguous), and so is a
        column of any other type: leave such columns out with ``exclude``.
    exclude : sequence of str
        Hashed layout: columns that are not features (identifiers, say).
    features : sequence of str, optional
        Hashed layout: the columns to hash (a model's :attr:`hashed_columns`); the others
        are left out, as if excluded.

    Attributes
    ----------
    description : str
    sparse : bool
        Always True.
    n_features : int
    nnz : int
        An upper bound on the stored entries (values stored in the feature columns, from
        the footers; nulls, zeros and collisions are not subtracted), for sizing chunks.
    target, weight : str or None
    hash_features : int or None
    hashed_columns : tuple of str
        Hashed layout: the columns hashed, in file order; empty for the list layout.
    hashed_kinds, hashed_types : tuple of str
        How each hashed column is hashed, and its type.
    pieces : list of Piece
        One per non-empty row group; the label names the file and the row group.

    Raises
    ------
    ValueError
        Neither or both layouts are asked for, or a parameter is invalid.
    SchemaError
        A named column is missing or of an unusable type, or the files' columns differ.
    SourceError, ReadError
        Nothing to read there, or a footer cannot be read.
    """

    sparse = True
    #: A shuffled pass keeps each piece's chunks together: reading a piece costs I/O
    #: and decoding, done once per pass (see ``Dataset.chunks``).
    shuffle_by_piece = True
    #: Row groups may be read, hashed and cut into rows by several threads at once (see
    #: :mod:`~streamlearn.data.sources.parquet_handles`).
    reads_pieces_concurrently = True

    def __init__(
        self,
        path_or_url: str,
        storage_options: dict[str, Any] | None = None,
        *,
        target: str | None,
        weight: str | None = None,
        indices: str | None = None,
        values: str | None = None,
        n_features: int | None = None,
        hash_features: int | None = None,
        exclude: Sequence[str] = (),
        features: Sequence[str] | None = None,
    ) -> None:
        if (indices is None) == (hash_features is None):
            raise ValueError(
                "give either indices= (list columns) or hash_features= (hashed "
                "columns), not " + ("both" if indices is not None else "neither")
            )
        if hash_features is not None:
            hash_features = check_hash_features(hash_features)
            if values is not None:
                raise ValueError(
                    "values= belongs to the list layout (indices=), not to hash_features="
                )
            if n_features is not None and n_features != hash_features:
                raise ValueError(
                    f"n_features={n_features} contradicts hash_features="
                    f"{hash_features}; leave n_features out"
                )
            n_features = hash_features
        elif exclude or features is not None:
            raise ValueError("exclude= and features= belong to the hashed layout (hash_features=)")
        if n_features is not None and (
            isinstance(n_features, bool) or not 0 < int(n_features) <= MAX_INDEX
        ):
            raise ValueError(f"n_features must be in [1, {MAX_INDEX}], got {n_features!r}")
        self.description = str(path_or_url)
        self.target = target
        self.weight = weight
        self.hash_features = hash_features
        self._indices = indices
        self._values = values
        self._fs, path = arrow_filesystem(self.description, storage_options)
        self._files_info: list[_File] = []
        self.pieces: list[Piece] = []
        self._locations: list[tuple[int, int]] = []  # (file, row group) of each piece
        self._handles = ParquetHandles(self._fs, pre_buffer=False)
        self._discover(path)

        first = self._files_info[0]
        roles = [
            (r, c)
            for r, c in (
                ("target", target),
                ("weight", weight),
                ("indices", indices),
                ("values", values),
            )
            if c is not None
        ]
        for info in self._files_info:
            for role, name in roles:
                if name not in info.types:
                    raise SchemaError(
                        f"{role} column {name!r} not found in {info.path}; "
                        f"columns are {sorted(info.types)}"
                    )
        self.columns: list[str] = [c for c in (target, weight) if c is not None]
        self.kinds: dict[str, ColumnKind] = {c: arrow_kind(first.types[c]) for c in self.columns}
        if weight is not None and not self.kinds[weight].is_numeric:
            raise SchemaError(
                f"weight column {weight!r} of {first.path} is {first.types[weight]}, not numeric"
            )
        if hash_features is None:
            self._check_lists()
            self.n_features = (
                int(n_features) if n_features is not None else self._largest_index() + 1
            )
            self.nnz = self._stored([indices])  # type: ignore[list-item]
        else:
            self._features = self._hashed_features(list(exclude), features)
            self.n_features = hash_features
            self.nnz = self._stored([name for name, _ in self._features])

    # ------------------------------------------------------------------ opening
    def _discover(self, path: str) -> None:
        try:
            dataset = pads.dataset(path, filesystem=self._fs, format="parquet", partitioning="hive")
            # each file's path and partition keys, not its fragment: a fragment keeps the
            # footer it has read (tens of KB each), and a directory of many small files
            # would hold every footer at once
            files = sorted(
                (
                    (f.path, pads.get_partition_keys(f.partition_expression) or {})
                    for f in dataset.get_fragments()
                ),
                key=lambda f: f[0],
            )
        except FileNotFoundError as exc:
            raise SourceError(f"no parquet data at {self.description}: {exc}") from exc
        except pa.ArrowTypeError as exc:
            raise partition_clash(self.description, exc) from exc
        except (pa.ArrowInvalid, OSError) as exc:
            raise ReadError(f"could not open parquet data at {self.description}: {exc}") from exc
        if not files:
            raise SourceError(f"no parquet files found under {self.description}")
        partition_types = (
            {f.name: f.type for f in dataset.partitioning.schema}
            if dataset.partitioning is not None
            else {}
        )
        del dataset

        # From each footer only the numbers read later are kept, summed over the files:
        # the values stored in each column that can be a feature column (for nnz) and, in
        # the list layout, the largest index the statistics give. The footer is let go
        # before the next file's is read.
        self._values_stored: dict[str, int] = {}
        self._top_index = -1  # largest index in the statistics of the indices column
        self._unknown_top: list[int] = []  # pieces whose statistics do not give it
        # files alike (most datasets) share one types dict and one dict of partition keys
        shared: dict[tuple[Any, ...], dict[str, Any]] = {}
        previous: tuple[pa.Schema, dict[str, pa.DataType], dict[str, range]] | None = None
        for file_path, file_keys in files:
            try:
                with self._fs.open_input_file(file_path) as handle:
                    file = pq.ParquetFile(handle)
                    metadata, physical = file.metadata, file.schema_arrow
                    del file
            except (pa.ArrowInvalid, OSError) as exc:
                raise ReadError(
                    f"{file_path} is not a readable parquet file ({exc}); remove or replace it"
                ) from exc
            # the schema of the file before is most often this one's
            if previous is None or not physical.equals(previous[0]):
                previous = physical, {f.name: f.type for f in physical}, _leaves(physical)
            _, physical_types, leaves = previous
            types = dict(physical_types)
            for k, v in file_keys.items():
                types[k] = partition_types.get(k, pa.scalar(v).type)
            types = shared.setdefault(("types", *types.items()), types)
            keys = shared.setdefault(("keys", *file_keys.items()), file_keys)
            self._add_file(file_path, types, keys, leaves, metadata)
            del metadata

    def _add_file(
        self,
        path: str,
        types: dict[str, pa.DataType],
        keys: dict[str, Any],
        leaves: dict[str, range],
        metadata: pq.FileMetaData,
    ) -> None:
        """Record a file, its non-empty row groups as pieces, and the numbers of its footer
        read later (values stored, largest index in the statistics)."""
        counted = list(types) if self.hash_features is not None else [self._indices]
        top_leaf = self._top_leaf(types, keys, leaves)
        k_file = len(self._files_info)
        self._files_info.append(_File(path, types, keys))
        file_row = 0
        for rg in range(metadata.num_row_groups):
            group = metadata.row_group(rg)
            n = group.num_rows
            if n == 0:
                continue
            for name in counted:
                if name in keys:
                    stored = n
                elif name in leaves:
                    stored = sum(group.column(j).num_values for j in leaves[name])
                else:
                    continue
                self._values_stored[name] = self._values_stored.get(name, 0) + stored
            if self._indices is not None:
                top = None
                if top_leaf is not None:
                    stats = group.column(top_leaf).statistics
                    if stats is not None and stats.has_min_max:
                        top = int(stats.max)
                if top is None:
                    self._unknown_top.append(len(self.pieces))
                else:
                    self._top_index = max(self._top_index, top)
            self.pieces.append(Piece(n, f"{path} (row group {rg})", file_row))
            self._locations.append((k_file, rg))
            file_row += n

    def _top_leaf(
        self, types: dict[str, pa.DataType], keys: dict[str, Any], leaves: dict[str, range]
    ) -> int | None:
        """The parquet leaf column whose statistics give the largest index of a file in the
        list layout: the indices column's one leaf, where it holds signed integers."""
        name = self._indices
        if name is None or name in keys or name not in leaves or len(leaves[name]) != 1:
            return None
        dtype = types[name]
        if not _is_list(dtype) or not pa.types.is_signed_integer(dtype.value_type):
            return None
        return leaves[name][0]

    def _check_lists(self) -> None:
        for info in self._files_info:
            for name, element, what in (
                (self._indices, pa.types.is_integer, "int"),
                (self._values, _is_number, "number"),
            ):
                if name is None:
                    continue
                dtype = info.types[name]
                if name in info.keys or not _is_list(dtype) or not element(dtype.value_type):
                    raise SchemaError(
                        f"column {name!r} of {info.path} is {dtype}; it must "
                        f"be a list<{what}> column"
                    )

    @property
    def hashed_columns(self) -> tuple[str, ...]:
        """The columns hashed (hashed layout), in file order; empty for the list layout."""
        return tuple(c for c, _ in getattr(self, "_features", ()))

    @property
    def hashed_kinds(self) -> tuple[str, ...]:
        """How each of :attr:`hashed_columns` is hashed: ``"numeric"``, ``"string"`` or
        ``"tokens"`` (see :func:`check_hashed_kinds`)."""
        return tuple(k for _, k in getattr(self, "_features", ()))

    @property
    def hashed_types(self) -> tuple[str, ...]:
        """The type of each of :attr:`hashed_columns` in the first file, for messages."""
        first = self._files_info[0]
        return tuple(str(first.types[c]) for c in self.hashed_columns)

    def _hashed_features(
        self, exclude: list[str], only: Sequence[str] | None
    ) -> list[tuple[str, str]]:
        first = self._files_info[0]
        for role, named in (("exclude", exclude), ("features", only or ())):
            unknown = [c for c in named if c not in first.types]
            if unknown:
                raise SchemaError(
                    f"{role} names column(s) {unknown} not in {first.path}; "
                    f"columns are {sorted(first.types)}"
                )
        skip = {self.target, self.weight, *exclude}
        if only is not None:
            skip |= {c for c in first.types if c not in set(only)}
        features = [
            (c, _hashed_kind(c, t, first.path)) for c, t in first.types.items() if c not in skip
        ]
        if not features:
            raise SchemaError(f"no feature columns left in {self.description}")
        names = {c for c, _ in features}
        for info in self._files_info[1:]:
            others = {c for c in info.types if c not in skip}
            if others != names:
                raise SchemaError(
                    f"{info.path} has the feature columns {sorted(others)} but {first.path} "
                    f"has {sorted(names)}; all files must share their columns"
                )
            for c, kind in features:
                if _hashed_kind(c, info.types[c], info.path) != kind:
                    raise SchemaError(
                        f"column {c!r} is {first.types[c]} in {first.path} but "
                        f"{info.types[c]} in {info.path}"
                    )
        self._name_hash = {c: _hash_name(c) for c, kind in features if kind == NUMERIC}
        return features

    def _largest_index(self) -> int:
        """Largest value of the indices column: from statistics, else read."""
        largest = self._top_index
        name = self._indices
        assert name is not None
        for i in self._unknown_top:
            table, _ = self._read(i, [name])
            flat = pc.list_flatten(_array(table.column(name)))
            found = pc.max(flat).as_py() if len(flat) else None
            largest = max(largest, -1 if found is None else int(found))
        if largest >= MAX_INDEX:
            raise DataError(
                f"column {name!r} of {self.description} holds the index "
                f"{largest}; indices must be below {MAX_INDEX}"
            )
        return largest

    def _stored(self, names: list[str]) -> int:
        """Values stored in the named columns, from the footers (an upper bound on nnz)."""
        return int(sum(self._values_stored.get(name, 0) for name in names))

    # ------------------------------------------------------------------ reading
    def _read(self, i: int, names: list[str]) -> tuple[pa.Table, dict[str, Any]]:
        k, rg = self._locations[i]
        info = self._files_info[k]
        stored = [n for n in dict.fromkeys(names) if n not in info.keys]
        try:
            table = self._handles.read_row_group(info.path, rg, stored)
        except (pa.ArrowException, OSError) as exc:
            raise ReadError(f"could not read {self.pieces[i].label}: {exc}") from exc
        return table, info.keys

    def _column(self, i: int, table: pa.Table, keys: dict[str, Any], name: str) -> pa.Array:
        if name in keys:
            dtype = self._files_info[self._locations[i][0]].types[name]
            return pa.repeat(pa.scalar(keys[name], type=dtype), self.pieces[i].n_rows)
        return _array(table.column(name))

    def _where(self, i: int, row: int) -> str:
        piece = self.pieces[i]
        return f"{piece.label}, row {row} (row {piece.file_row + row} of the file)"

    def _list_rows(self, i: int, table: pa.Table) -> SparseRows:
        n = self.pieces[i].n_rows
        name = self._indices
        assert name is not None
        lists = _array(table.column(name))
        if lists.null_count:
            row = int(np.argmin(_valid(lists)))
            raise DataError(
                f"{self._where(i, row)}: the {name!r} list is null; store an "
                "empty list for a row without entries"
            )
        lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        flat = pc.list_flatten(lists)
        if flat.null_count:
            entry = int(np.argmin(_valid(flat)))
            raise DataError(
                f"{self._where(i, _row_of(indptr, entry))}: the {name!r} list holds a null index"
            )
        idx = flat.to_numpy(zero_copy_only=False)
        bad = np.flatnonzero((idx < 0) | (idx >= self.n_features))
        if bad.size:
            entry = int(bad[0])
            raise DataError(
                f"{self._where(i, _row_of(indptr, entry))}: index {idx[entry]} "
                f"in {name!r} is outside the columns 0..{self.n_features - 1}"
            )
        idx = idx.astype(np.int32)
        row, twice = first_repeated(indptr, idx)
        if row >= 0:
            raise DataError(
                f"{self._where(i, int(row))}: index {twice} appears twice in the {name!r} list"
            )
        if self._values is None:
            return SparseRows(indptr, idx, np.ones(idx.shape[0], dtype=np.float32), self.n_features)
        vname = self._values
        vlists = _array(table.column(vname))
        if vlists.null_count:
            row = int(np.argmin(_valid(vlists)))
            raise DataError(f"{self._where(i, row)}: the {vname!r} list is null")
        vlengths = pc.list_value_length(vlists).to_numpy(zero_copy_only=False)
        differ = np.flatnonzero(vlengths != lengths)
        if differ.size:
            row = int(differ[0])
            raise DataError(
                f"{self._where(i, row)}: {name!r} holds {lengths[row]} indices "
                f"but {vname!r} {vlengths[row]} values"
            )
        vflat = pc.list_flatten(vlists)
        if vflat.null_count:
            entry = int(np.argmin(_valid(vflat)))
            raise DataError(
                f"{self._where(i, _row_of(indptr, entry))}: the {vname!r} list holds a null value"
            )
        vals = np.ascontiguousarray(
            pc.cast(vflat, pa.float32(), safe=False).to_numpy(zero_copy_only=False)
        )
        return SparseRows(indptr, idx, vals, self.n_features)

    def _hashed_rows(self, i: int, table: pa.Table, keys: dict[str, Any]) -> SparseRows:
        columns = [(name, kind, self._column(i, table, keys, name))
                   for name, kind in self._features]
        return _hash_columns(self.pieces[i].n_rows, columns, self._name_hash, self.n_features,
                             self.pieces[i].label)

    def _check_columns(self, target: str | None, weight: str | None) -> None:
        for role, asked, own in (("target", target, self.target), ("weight", weight, self.weight)):
            if asked is not None and asked != own:
                raise SchemaError(
                    f"{role} column {asked!r} was not named when "
                    f"{self.description} was opened as sparse rows ({role}="
                    f"{own!r}); open it again with {role}={asked!r}"
                )

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Read row group ``i`` as sparse rows.

        Parameters
        ----------
        i : int
            Piece number.
        features : list of str
            Ignored: a sparse source reads every feature.
        target, weight : str or None
            The source's target and weight columns, or None to leave them out.

        Returns
        -------
        Block
            ``X`` is :class:`SparseRows` with ``n_cols = n_features``; ``y`` as stored
            (categorical targets decoded); ``weight`` float64 (the dataset checks it and
            casts it to float32).

        Raises
        ------
        DataError
            In the list layout: a null list, a null, negative, out-of-range or repeated
            index, lists of different lengths in a row (names file, row group and row).
        ReadError
            The row group cannot be read.
        """
        self._check_columns(target, weight)
        if self.hash_features is None:
            names = [self._indices, *(c for c in (self._values, target, weight) if c)]
        else:
            names = [c for c, _ in self._features] + [c for c in (target, weight) if c]
        table, keys = self._read(i, names)  # type: ignore[arg-type]
        X = (
            self._list_rows(i, table)
            if self.hash_features is None
            else self._hashed_rows(i, table, keys)
        )
        piece = self.pieces[i]
        y = None
        if target is not None:
            y = (
                np.full(piece.n_rows, keys[target])
                if target in keys
                else target_array(table.column(target), target, piece.label, piece.file_row)
            )
        w = None
        if weight is not None:
            w = pc.cast(self._column(i, table, keys, weight), pa.float64(), safe=False)
            w = np.asarray(pc.fill_null(w, float("nan")).to_numpy(zero_copy_only=False))
        return Block(X=X, y=y, weight=w)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Read only the target column of row group ``i``."""
        self._check_columns(target, None)
        table, keys = self._read(i, [target])
        piece = self.pieces[i]
        if target in keys:
            return np.full(piece.n_rows, keys[target])
        return target_array(table.column(target), target, piece.label, piece.file_row)

    def known_classes(self, target: str) -> np.ndarray | None:
        """Parquet metadata does not record the label set; it is discovered by a scan."""
        return None


def _hash_name(name: str) -> int:
    data = np.frombuffer(name.encode(), dtype=np.uint8)
    return int(murmur3_32(data, 0, data.shape[0], 0))


def _row_of(indptr: np.ndarray, entry: int) -> int:
    """The row holding entry ``entry`` of a CSR block."""
    return int(np.searchsorted(indptr, entry, side="right")) - 1


def _leaves(schema: pa.Schema) -> dict[str, range]:
    """The parquet leaf columns each column of ``schema`` is stored as."""
    leaves: dict[str, range] = {}
    at = 0
    for f in schema:
        width = _leaf_count(f.type)
        leaves[f.name] = range(at, at + width)
        at += width
    return leaves


def _leaf_count(dtype: pa.DataType) -> int:
    """Parquet leaf columns an Arrow column is stored as."""
    if pa.types.is_struct(dtype):
        return sum(_leaf_count(dtype.field(j).type) for j in range(dtype.num_fields))
    if pa.types.is_map(dtype):
        return _leaf_count(dtype.key_type) + _leaf_count(dtype.item_type)
    if _is_list(dtype):
        return _leaf_count(dtype.value_type)
    return 1
