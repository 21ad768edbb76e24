"""Parquet files and directories (hive partitions included), local or through fsspec."""

from __future__ import annotations

from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from streamlearn.data.sources.arrow_columns import (
    arrow_block,
    arrow_kind,
    column_categories,
    pandas_index_columns,
    target_array,
)
from streamlearn.data.sources.base import Block, ColumnKind, Piece
from streamlearn.data.sources.in_memory import passthrough_values
from streamlearn.data.sources.parquet_handles import ParquetHandles
from streamlearn.errors import ReadError, SchemaError, SourceError


def arrow_filesystem(
    url: str, storage_options: dict[str, Any] | None
) -> tuple[pafs.FileSystem, str]:
    """Resolve a path or fsspec URL into a pyarrow filesystem and a path on it.

    Local paths (and ``file://`` URLs) use Arrow's native local filesystem, which is faster
    than going through fsspec; every other protocol is wrapped with ``FSSpecHandler``.
    """
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if isinstance(fs, fsspec.implementations.local.LocalFileSystem):
        return pafs.LocalFileSystem(), path
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path


def file_footer(fs: pafs.FileSystem, path: str) -> tuple[list[int], pa.Schema]:
    """The rows of each row group of the parquet file at ``path`` and its Arrow schema,
    from its footer; the footer itself is let go, so files read one after the other hold
    one footer at a time."""
    with fs.open_input_file(path) as handle:
        file = pq.ParquetFile(handle)
        metadata = file.metadata
        rows = [metadata.row_group(rg).num_rows for rg in range(metadata.num_row_groups)]
        return rows, file.schema_arrow


def partition_clash(url: str, exc: pa.ArrowTypeError) -> SchemaError:
    """The error for parquet data at ``url`` whose hive partition keys pyarrow could not
    merge with the files' columns (``exc``, which names the field): a directory named
    ``key=value`` where the files also hold a column ``key``, of another type."""
    return SchemaError(
        f"the parquet data at {url} has a hive partition key that its files also hold as "
        f"a column, with another type ({exc}); rename the column in the files or the "
        "key=value directories"
    )


class ParquetSource:
    """A parquet file or a directory tree of parquet files, read one row group at a time.

    Files are taken in sorted path order; within a file, row groups in order. Each file's
    footer is read when the source is opened (row counts and schemas), no data pages, one
    file at a time: only the rows of each row group and the column kinds are kept, so a
    directory of many small files costs little more to open than one file of their rows.
    """

    #: A shuffled pass keeps each piece's chunks together: reading a piece costs I/O
    #: and decoding, done once per pass (see ``Dataset.chunks``).
    shuffle_by_piece = True
    #: Row groups may be read by several threads at once (see
    #: :mod:`~streamlearn.data.sources.parquet_handles`).
    #: No ``file_ranges``: ``pre_buffer`` already reads a row group's column chunks in
    #: large concurrent requests, and advising the next row groups to the kernel on top
    #: (:mod:`streamlearn.data.readahead`) made a pass from disk slower, not quicker.
    reads_pieces_concurrently = True

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.description = url
        self._fs, path = arrow_filesystem(url, storage_options)
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
            raise SourceError(f"no parquet data at {url}: {exc}") from exc
        except pa.ArrowTypeError as exc:
            raise partition_clash(url, exc) from exc
        except (pa.ArrowInvalid, OSError) as exc:
            raise ReadError(f"could not open parquet data at {url}: {exc}") from exc
        if not files:
            raise SourceError(f"no parquet files found under {url}")
        partition_kinds = (
            {f.name: arrow_kind(f.type) for f in dataset.partitioning.schema}
            if dataset.partitioning is not None
            else {}
        )
        del dataset

        self.pieces: list[Piece] = []
        self._locations: list[tuple[str, int, dict[str, Any]]] = []
        self._file_columns: dict[str, dict[str, ColumnKind]] = {}
        self._index_columns: set[str] = set()
        # files alike (most datasets) share one kinds dict and one dict of partition keys
        shared: dict[tuple[Any, ...], dict[str, Any]] = {}
        previous: tuple[pa.Schema, dict[str, ColumnKind]] | None = None
        for file_path, file_keys in files:
            try:
                rows, physical = file_footer(self._fs, file_path)
            except (pa.ArrowInvalid, OSError) as exc:
                raise ReadError(
                    f"{file_path} is not a readable parquet file ({exc}); remove or replace it"
                ) from exc
            # the schema of the file before (metadata too) is most often this one's
            if previous is None or not physical.equals(previous[0], check_metadata=True):
                self._index_columns.update(pandas_index_columns(physical))
                previous = physical, {f.name: arrow_kind(f.type) for f in physical}
            kinds = dict(previous[1])
            kinds.update({k: partition_kinds.get(k, ColumnKind.OTHER) for k in file_keys})
            kinds = shared.setdefault(("kinds", *kinds.items()), kinds)
            keys = shared.setdefault(("keys", *file_keys.items()), file_keys)
            self._file_columns[file_path] = kinds
            file_row = 0
            for rg, n in enumerate(rows):
                if n == 0:
                    continue
                self.pieces.append(Piece(n, f"{file_path} (row group {rg})", file_row))
                self._locations.append((file_path, rg, keys))
                file_row += n

        first = next(iter(self._file_columns.values()))
        # a stored pandas index (the row labels of a filtered or shuffled frame) is no
        # column to learn from: pandas reads it back as the index, and so it is left out
        # of the columns taken by default (it can still be named)
        self.columns: list[str] = [c for c in first if c not in self._index_columns]
        self.kinds: dict[str, ColumnKind] = dict(first)
        # pre_buffer: a row group's column chunks are read in a few large, concurrent
        # requests, not one small read per column (each a disk seek, or a round trip to an
        # object store)
        self._handles = ParquetHandles(self._fs, pre_buffer=True)

    def check_columns(self, needed: list[str], *, every_column: bool) -> None:
        """Check every file holds the ``needed`` columns with compatible kinds.

        With ``every_column`` (features were inferred as "all columns"), a file with columns
        the first file lacks is an error too, since the feature set would be ambiguous.
        """
        paths = list(self._file_columns)
        first_path = paths[0]
        first = self._file_columns[first_path]
        for path in paths[1:]:
            kinds = self._file_columns[path]
            missing = [c for c in needed if c not in kinds]
            if missing:
                raise SchemaError(
                    f"{path} lacks column(s) {missing} that {first_path} has; "
                    "all files of a dataset must share their schema"
                )
            for c in needed:
                if kinds[c].is_numeric != first[c].is_numeric:
                    raise SchemaError(
                        f"column {c!r} is {first[c].value} in {first_path} but "
                        f"{kinds[c].value} in {path}; all files must agree on column types"
                    )
            if every_column:
                extra = [c for c in kinds if c not in first and c not in self._index_columns]
                if extra:
                    raise SchemaError(
                        f"{path} has column(s) {extra} that {first_path} lacks; "
                        "pass features=[...] to choose the columns explicitly"
                    )

    def _read(self, i: int, names: list[str]) -> tuple[pa.Table, dict[str, Any]]:
        path, rg, keys = self._locations[i]
        stored = [n for n in dict.fromkeys(names) if n not in keys]
        piece = self.pieces[i]
        try:
            n_rows = self._handles.row_group_rows(path, rg)
        except (pa.ArrowException, OSError) as exc:
            raise ReadError(f"could not read {piece.label}: {exc}") from exc
        # a file replaced since the source was opened may cut its rows into other row
        # groups: read as it is, row group ``rg`` would hold other rows than the piece's
        if n_rows != piece.n_rows:
            now = "no such row group" if n_rows is None else f"{n_rows} rows"
            raise ReadError(
                f"{path} changed since it was opened: row group {rg} held {piece.n_rows} "
                f"rows, now {now}; open the dataset again"
            )
        try:
            table = self._handles.read_row_group(path, rg, stored)
        except (pa.ArrowException, OSError) as exc:
            raise ReadError(f"could not read {piece.label}: {exc}") from exc
        return table, keys

    def read_piece(
        self,
        i: int,
        features: list[str],
        target: str | None,
        weight: str | None,
        categories: dict[str, Any] | None = None,
    ) -> Block:
        """Read one row group (categorical columns coded by ``categories``)."""
        names = [*features, *(c for c in (target, weight) if c is not None)]
        table, keys = self._read(i, names)
        piece = self.pieces[i]
        return arrow_block(
            table,
            features,
            target,
            weight,
            where=piece.label,
            file_row=piece.file_row,
            constants=keys,
            categories=categories,
        )

    def read_categories(self, i: int, names: list[str]) -> dict[str, list[Any]]:
        """Distinct values of the named columns in one row group (only those are read)."""
        table, keys = self._read(i, names)
        return {
            name: [keys[name]] if name in keys else column_categories(table.column(name))
            for name in names
        }

    def known_categories(self, name: str) -> tuple[Any, ...] | None:
        """Parquet keeps dictionaries per row group, not per file: found by a scan."""
        return None

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Read only the target column of one row group."""
        table, keys = self._read(i, [target])
        piece = self.pieces[i]
        if target in keys:
            return np.full(piece.n_rows, keys[target])
        return target_array(table.column(target), target, piece.label, piece.file_row)

    def read_passthrough(self, i: int, name: str) -> np.ndarray:
        """One column of one row group as it is, to be copied beside predictions: nulls
        kept (None in an object array, NaN in a float one), where a target refuses them."""
        table, keys = self._read(i, [name])
        piece = self.pieces[i]
        if name in keys:
            return np.full(piece.n_rows, keys[name])
        column = table.column(name)
        if column.null_count == 0 or pa.types.is_floating(column.type):
            return target_array(column, name, piece.label, piece.file_row)
        return passthrough_values(column.to_pandas(integer_object_nulls=True))

    def known_classes(self, target: str) -> np.ndarray | None:
        """Parquet metadata does not record the label set; it is discovered by a scan."""
        return None
