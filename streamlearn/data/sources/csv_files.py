"""CSV files (plain, ``.gz``, ``.bz2``, ``.xz``), read in byte blocks by dask's CSV reader.

A plain file is cut into blocks of :data:`CSV_BLOCK_BYTES` at line ends
(``dask.dataframe.read_csv``), each block one piece, parsed by pandas when it is read, so
memory stays bounded by a block whatever the size of the files. A compressed file cannot be
cut: it is one piece, read whole (convert it once with ``streamlearn convert`` for bounded
memory and faster epochs). Opening counts every block's rows, one parse of the data, as the
svmlight reader's scan does.

Column types come from the start of the first file: integer columns are parsed as nullable
integers, exactly (a label or id beyond 2**53 is not rounded to a float's precision), and
given back as integers where a block holds no missing value, as floats with NaN where it
does, so that an integer target is a class target as in parquet; a block where such a
column holds other numbers is parsed with floats for all its numbers. A column empty on
those first rows is typed by its first value (:func:`text_after_gaps`): text there (labels
missing on the first rows, say) reads as text. Text columns are categorical features coded
in the stream. A later block that does not parse to those types raises a
:class:`~streamlearn.errors.ReadError` naming the source and the block. Messages about a row
name its line in its file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fsspec
import numpy as np
import pandas as pd

from streamlearn.data.sources.base import ColumnKind
from streamlearn.data.sources.dask_collections import DaskDataFrameSource
from streamlearn.errors import ReadError, SchemaError, SourceError

#: Bytes of a plain CSV file per piece (64 MiB: about 16 MiB of float32 features at four
#: bytes of text per value).
CSV_BLOCK_BYTES = 64 << 20
CSV_SUFFIXES = (".csv", ".tsv")
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")


def is_csv_name(name: str) -> bool:
    """``.csv`` or ``.tsv``, plain or compressed."""
    return name.endswith(CSV_SUFFIXES) or any(
        name.endswith(s + c) for s in CSV_SUFFIXES for c in COMPRESSED_SUFFIXES)


class CsvSource(DaskDataFrameSource):
    """A dask DataFrame read from CSV files, whose parse errors name the file and block.

    A block is parsed whole whichever of its rows a chunk needs; a shuffled pass takes
    each block's chunks together (``shuffle_by_piece``, from
    :class:`~streamlearn.data.sources.dask_collections.DaskDataFrameSource`), so a block
    is parsed once per pass, and again for a chunk that crosses into it from another.
    """

    def __init__(self, frame: Any, description: str,
                 find_unparsed: Callable[[], str | None] | None = None,
                 exact: Any = None,
                 files: list[tuple[str, int]] | None = None) -> None:
        """``frame`` parses every number as a float (its blocks' rows are counted);
        ``exact``, partitioned alike, the first rows' integer columns as nullable
        integers, read first; ``files``, each file's path and number of blocks, in
        order, to name a row's line in its file."""
        self._find_unparsed = find_unparsed
        self._exact = exact
        try:
            super().__init__(frame)
        except (ValueError, TypeError, OSError) as exc:
            raise self._parse_error(f"could not read {description}", exc) from exc
        self.description = description
        for i, piece in enumerate(self.pieces):
            self.pieces[i] = piece.__class__(
                piece.n_rows, f"{description}, block {i} (rows {piece.file_row}-"
                f"{piece.file_row + piece.n_rows})", piece.file_row)
        #: each piece's file and the line of its first row there (the header is line 1),
        #: where the files' blocks are the pieces (as dask cuts them, from file sizes)
        self._first_lines: list[tuple[str, int]] | None = None
        if files is not None and sum(n for _, n in files) == len(self.pieces):
            self._first_lines = []
            pieces = iter(self.pieces)
            for path, n_blocks in files:
                line = 2
                for _ in range(n_blocks):
                    self._first_lines.append((path, line))
                    line += next(pieces).n_rows

    def line_of(self, i: int, row: int) -> str | None:
        """``"line L of FILE"`` of row ``row`` of piece ``i``, one line per row after
        the header (as :func:`first_unparsed_value` counts them), or None where the
        pieces' files are not known.

        Parameters
        ----------
        i : int
            The piece.
        row : int
            The row within the piece.

        Returns
        -------
        str or None
        """
        if self._first_lines is None:
            return None
        path, line = self._first_lines[i]
        return f"line {line + row} of {path}"

    def _compute(self, i: int, names: list[str]) -> Any:
        part = None
        if self._exact is not None:
            try:
                part = super()._compute(i, names, self._exact)
            except (ValueError, TypeError, OSError):
                pass  # an integer column holding other numbers (1.5): read as floats
        if part is None:
            try:
                part = super()._compute(i, names)
            except (ValueError, TypeError, OSError) as exc:
                raise self._parse_error(f"could not parse {self.pieces[i].label}",
                                        exc) from exc
        # integer columns are parsed as nullable integers: exact as int64 where the block
        # misses no value (labels stay 0 and 1, ids beyond 2**53 stay apart), else floats
        # with NaN for the missing ones; parsed as floats, whole numbers become integers
        for name in names:
            column = part[name]
            if self.kinds.get(name) != ColumnKind.INTEGER:
                continue
            if column.dtype.kind == "i":
                part[name] = (column.to_numpy(np.int64) if not column.hasnans else
                              column.to_numpy(np.float64, na_value=np.nan))
            elif column.dtype.kind == "f":
                values = column.to_numpy()
                if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
                    part[name] = values.astype(np.int64)
        return part


    def _parse_error(self, what: str, exc: BaseException) -> ReadError:
        """``what`` failed with ``exc``: where a value does not parse as its column's
        number, the error names the file, line, column and value instead of the parser's
        table of types."""
        if self._find_unparsed is not None and "dtype" in str(exc):
            found = self._find_unparsed()
            if found is not None:
                return ReadError(found)
        return ReadError(f"{what}: {exc}")


def first_unparsed_value(urls: list[str], sep: str, numeric: list[str],
                         storage_options: dict[str, Any] | None) -> str | None:
    """Where the first value of a ``numeric`` column that is not a number lies in the
    files ``urls``: ``"FILE, line L, column 'C': 'VALUE' is not a number ..."``, or None.

    Read as text in blocks of rows, on the error path only (the columns' types come from
    the start of the first file, and a later value breaks them).
    """
    for url in urls:
        with fsspec.open(url, "rb", compression="infer", **(storage_options or {})) as f:
            line = 2  # the header is line 1
            for block in pd.read_csv(f, sep=sep, dtype=str, usecols=numeric,
                                     chunksize=1 << 16):
                for column in numeric:
                    text = block[column]
                    bad = text.notna() & pd.to_numeric(text, errors="coerce").isna()
                    if bad.any():
                        row = int(np.argmax(bad.to_numpy()))
                        return (f"{url.removeprefix('file://')}, line {line + row}, "
                                f"column {column!r}: "
                                f"{text.iloc[row]!r} is not a number, where the file's "
                                "first rows hold numbers in this column; make the column "
                                "all numbers (missing values empty), or all text for a "
                                "categorical feature")
                line += len(block)
    return None


#: Rows per block of the scan for the first value of columns that start empty
#: (:func:`text_after_gaps`): most columns have one in the first block.
GAP_SCAN_ROWS = 1 << 12


def text_after_gaps(urls: list[str], sep: str, numeric: list[str],
                    storage_options: dict[str, Any] | None) -> list[str]:
    """The columns of ``numeric`` whose first value is not a number: read as text.

    The types of a CSV file's columns come from its first rows, where a column empty on
    every one of them (a label missing on the first rows, say) reads as floats. Each
    column of ``numeric`` is read as text, in blocks of :data:`GAP_SCAN_ROWS` rows,
    until its first non-empty value, and is text when that value is not a number; a
    column empty in every file is read whole once, and stays numbers (all missing).

    Parameters
    ----------
    urls : list of str
        The files, in order.
    sep : str
        Field separator.
    numeric : list of str
        The columns read as numbers from the first rows.
    storage_options : dict, optional
        Passed to fsspec.

    Returns
    -------
    list of str
        In the order of ``numeric``.
    """
    pending = list(numeric)
    text: set[str] = set()
    for url in urls:
        if not pending:
            break
        with fsspec.open(url, "rb", compression="infer", **(storage_options or {})) as f:
            for block in pd.read_csv(f, sep=sep, dtype=str, usecols=pending,
                                     chunksize=GAP_SCAN_ROWS):
                for column in list(pending):
                    values = block[column].dropna()
                    if len(values):
                        pending.remove(column)
                        if np.isnan(pd.to_numeric(values.iloc[:1], errors="coerce")).all():
                            text.add(column)
                if not pending:
                    break
    return [c for c in numeric if c in text]


def check_headers(urls: list[str], sep: str, storage_options: dict[str, Any] | None) -> None:
    """Refuse files whose header lines differ from the first file's (the columns of a
    dataset are the first file's; a file lacking one would fail when its rows are read, a
    file with one more would have it dropped unseen), and empty files.

    Raises
    ------
    SchemaError
        A file lacking some of the first file's columns, or holding others.
    ReadError
        An empty file (no header line) or one that does not parse.
    """
    first: list[str] | None = None
    for url in urls:
        try:
            with fsspec.open(url, "rb", compression="infer", **(storage_options or {})) as fh:
                columns = [str(c) for c in pd.read_csv(fh, sep=sep, nrows=0).columns]
        except pd.errors.EmptyDataError:
            raise ReadError(f"{url} is empty: a CSV file starts with a header line of its "
                            "column names") from None
        except (ValueError, OSError, EOFError) as exc:
            raise ReadError(f"could not read CSV {url}: {exc}") from exc
        if first is None:
            first = columns
            continue
        missing = [c for c in first if c not in columns]
        if missing:
            raise SchemaError(f"{url} lacks column(s) {missing} that {urls[0]} has; all "
                              "files of a dataset must share their columns")
        extra = [c for c in columns if c not in first]
        if extra:
            raise SchemaError(f"{url} has column(s) {extra} that {urls[0]} lacks; all "
                              "files of a dataset must share their columns")


def csv_source(url: str, storage_options: dict[str, Any] | None = None) -> CsvSource:
    """The source of a CSV file, or of a directory of them (read in name order).

    Parameters
    ----------
    url : str
        Path or fsspec URL of a ``.csv`` / ``.tsv`` file (plain or compressed), or of a
        directory holding only such files (hidden files and ``_``-prefixed ones ignored).
        ``.tsv`` files are tab-separated.
    storage_options : dict, optional
        Passed to fsspec.

    Returns
    -------
    CsvSource

    Raises
    ------
    SourceError
        A directory without CSV files, or mixing ``.csv`` and ``.tsv``.
    ReadError
        A file that does not parse.
    """
    import dask.dataframe as dd

    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if fs.isdir(path):
        files = sorted(f for f in fs.find(path)
                       if not f.rsplit("/", 1)[-1].startswith((".", "_")))
        if not files or not all(is_csv_name(f) for f in files):
            raise SourceError(f"{url}: a CSV directory holds only .csv or .tsv files "
                              f"(plain, .gz, .bz2 or .xz), found {files[:5]}")
    else:
        files = [path]
    tabs = {".tsv" in f.rsplit("/", 1)[-1] for f in files}
    if len(tabs) > 1:
        raise SourceError(f"{url} mixes .csv and .tsv files; give them separately")
    compressed = any(f.endswith(COMPRESSED_SUFFIXES) for f in files)
    urls = [fs.unstrip_protocol(f) for f in files]
    sep = "\t" if tabs.pop() else ","
    check_headers(urls, sep, storage_options)
    blocks = dict(sep=sep, blocksize=None if compressed else CSV_BLOCK_BYTES,
                  compression="infer", storage_options=storage_options)
    try:
        frame = dd.read_csv(urls, assume_missing=True, **blocks)
        # a column empty on the first rows reads as floats: text if its first value is
        floats = [str(c) for c, t in frame._meta.dtypes.items() if t.kind == "f"]
        text = dict.fromkeys(text_after_gaps(urls, sep, floats, storage_options), object)
        if text:
            frame = dd.read_csv(urls, assume_missing=True, dtype=text, **blocks)
        # the types pandas gives the sample without assume_missing: integer columns stay
        # integers there (labels such as 0/1 are a class target, as in parquet)
        sample = dd.read_csv(urls[:1], sep=sep, dtype=text,
                             blocksize=None, compression="infer",
                             storage_options=storage_options)._meta
        integers = [c for c, t in sample.dtypes.items() if t.kind in "iu"]
        # as nullable integers (a later block may miss a value) they keep every digit of
        # a label or id, which floats round beyond 2**53
        exact = (dd.read_csv(urls, dtype={**dict.fromkeys(integers, "Int64"), **text},
                             assume_missing=True, **blocks) if integers else None)
    except (ValueError, TypeError, OSError, EOFError) as exc:
        raise ReadError(f"could not read CSV {url}: {exc}") from exc
    numeric = [str(c) for c, t in frame._meta.dtypes.items() if t.kind in "iuf"]
    source = CsvSource(frame, f"CSV {url}", lambda: first_unparsed_value(
        urls, sep, numeric, storage_options), exact,
        _blocks_of_files(urls, blocks["blocksize"], storage_options))
    for name, dtype in sample.dtypes.items():
        if str(name) in source.kinds and dtype.kind in "iu":
            source.kinds[str(name)] = ColumnKind.INTEGER
    return source


def _blocks_of_files(urls: list[str], blocksize: int | None,
                     storage_options: dict[str, Any] | None) -> list[tuple[str, int]] | None:
    """Each file's path and number of blocks, as ``dask.dataframe.read_csv`` cuts them
    (from the files' sizes; nothing is read), or None where dask does not tell."""
    from dask.bytes import read_bytes

    try:
        _, blocks, paths = read_bytes(urls, delimiter=b"\n", blocksize=blocksize,
                                      sample=False, compression="infer", include_path=True,
                                      **(storage_options or {}))
    except (ValueError, TypeError, OSError):
        return None
    return [(str(p), len(b)) for p, b in zip(paths, blocks, strict=True)]
