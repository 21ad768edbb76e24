"""Open parquet files of a source, kept per thread, and row groups read side by side.

A ``pyarrow.parquet.ParquetFile`` is not safe to read from two threads at once (with
``pre_buffer`` two reads on one handle fail in its read cache), so each thread that reads
keeps handles of its own. A row group read while no other is being read is decoded by
Arrow's threads, its columns spread over the cores; row groups read side by side (a
stream's reader threads, see ``Dataset.chunks``) are decoded on one core each, which on
two cores decodes about twice as many rows a second as one reader spreading its columns.

Files behind Python code (an fsspec filesystem other than the local one, wrapped in
``pyarrow.fs.PyFileSystem``) are read by the calling thread alone: no ``pre_buffer``, whose
requests run on Arrow's I/O threads, and no decoding on Arrow's threads, which read a
column's pages as they decode it. An Arrow thread that calls into Python takes the
interpreter's lock; one that does so while the interpreter shuts down is unwound through
C++ frames that may not throw, and the process aborts after its work is done ("terminate
called without an active exception", exit status -6: Arrow's issues 34314 and 50482).
The stream's own reader threads still read row groups side by side.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

#: Files kept open per thread (the least recently used is closed beyond).
OPEN_FILES = 4


class ParquetHandles:
    """Handles on the files of one parquet source.

    Parameters
    ----------
    fs : pyarrow.fs.FileSystem
    pre_buffer : bool
        Read a row group's column chunks in a few large concurrent requests (not for
        files behind Python code, see the module's docstring).
    """

    def __init__(self, fs: pafs.FileSystem, *, pre_buffer: bool) -> None:
        self.fs = fs
        self.pre_buffer = bool(pre_buffer)
        #: whether Arrow's threads may read the files: not where reading calls Python
        self.arrow_threads = not isinstance(fs, pafs.PyFileSystem)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._reading = 0  # row groups being read now, by any thread

    def __getstate__(self) -> dict[str, Any]:
        # pickled (e.g. shipped to dask workers) without open files: the receiver opens them
        return {"fs": self.fs, "pre_buffer": self.pre_buffer}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["fs"], pre_buffer=state["pre_buffer"])  # type: ignore[misc]

    def file(self, path: str) -> pq.ParquetFile:
        """An open handle on ``path`` for the calling thread.

        Page checksums, where the writer stored them, turn silent corruption into an error.
        """
        files: OrderedDict[str, pq.ParquetFile] | None = getattr(self._local, "files", None)
        if files is None:
            files = self._local.files = OrderedDict()
        handle = files.get(path)
        if handle is not None:
            files.move_to_end(path)
            return handle
        handle = pq.ParquetFile(self.fs.open_input_file(path), page_checksum_verification=True,
                                pre_buffer=self.pre_buffer and self.arrow_threads)
        files[path] = handle
        while len(files) > OPEN_FILES:
            files.popitem(last=False)
        return handle

    def row_group_rows(self, path: str, row_group: int) -> int | None:
        """The rows of row group ``row_group`` as the footer of ``path`` now says, ``None``
        where the file has fewer row groups."""
        metadata = self.file(path).metadata
        if not 0 <= row_group < metadata.num_row_groups:
            return None
        return metadata.row_group(row_group).num_rows

    def read_row_group(self, path: str, row_group: int, columns: list[str]) -> pa.Table:
        """Row group ``row_group`` of ``path``, the named columns; Arrow's threads decode it
        when no other row group is being read and the file is not behind Python code, one
        core otherwise."""
        with self._lock:
            self._reading += 1
            alone = self._reading == 1
        try:
            return self.file(path).read_row_group(row_group, columns=columns,
                                                  use_threads=alone and self.arrow_threads)
        finally:
            with self._lock:
                self._reading -= 1
