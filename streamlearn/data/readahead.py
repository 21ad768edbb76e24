"""Asking the operating system to read a stream's next chunks from disk ahead of time.

A pass over local files larger than the page cache reads each chunk from disk. The reading
threads wait for the disk, then decode while the disk waits for them: reading and decoding
take turns instead of overlapping. :class:`ReadAhead` walks the stream's chunk order a
bounded number of bytes ahead of the reader and, for each chunk, tells the kernel which
byte ranges of which files will be read soon (``posix_fadvise(POSIX_FADV_WILLNEED)``), so
that the disk reads them into the page cache while the current chunks decode. It reads
no rows itself (a zarr CSR store decodes the ``indptr`` chunk that says where a chunk's
entries lie) and holds no memory of the process beyond that; where ``posix_fadvise`` does
not exist (macOS, Windows) it does nothing.

Sources say where a chunk's bytes lie through ``file_ranges(a, b, features, target,
weight)``: a list of :class:`FileRange`, empty for data not in local files.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

#: Bytes of upcoming chunks advised beyond the chunk being read. Over a 2.1 GB zarr store
#: read from disk, 64 MiB gave the quickest pass of 16, 64, 256 and 1024 MiB.
READAHEAD_BYTES = 64 << 20


class FileRange(NamedTuple):
    """Bytes ``offset : offset + length`` of a local file; ``length`` 0 means to its end."""

    path: str
    offset: int
    length: int


def advise_willneed(ranges: list[FileRange]) -> int:
    """Tell the kernel that ``ranges`` will be read soon; the bytes advised (file sizes
    where a range runs to the end). Files that are missing or cannot be opened are skipped:
    the read that follows reports them."""
    total = 0
    for path, offset, length in ranges:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
            total += length if length else max(os.fstat(fd).st_size - offset, 0)
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


class ReadAhead:
    """Advise the byte ranges of chunks ``0 .. n_chunks - 1`` in order, up to
    ``window_bytes`` beyond the chunk last reported by :meth:`reached`, in a background
    thread.

    Parameters
    ----------
    ranges_of : callable
        ``ranges_of(k)``: the :class:`FileRange` list of chunk ``k`` (in stream order).
    n_chunks : int
    window_bytes : int, optional
        How far ahead of the reader to advise; ``READAHEAD_BYTES`` by default.
    """

    def __init__(self, ranges_of: Callable[[int], list[FileRange]], n_chunks: int,
                 window_bytes: int | None = None) -> None:
        self._ranges_of = ranges_of
        self._n = int(n_chunks)
        self._window = READAHEAD_BYTES if window_bytes is None else int(window_bytes)
        self._reached = 0
        self._stopped = False
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="streamlearn-readahead",
                                        daemon=True)

    @staticmethod
    def available() -> bool:
        """Whether this platform can advise (``os.posix_fadvise``)."""
        return hasattr(os, "posix_fadvise")

    def start(self) -> ReadAhead:
        """Start advising from chunk 0; returns ``self``."""
        self._thread.start()
        return self

    def reached(self, k: int) -> None:
        """The reader has started on chunk ``k``: advise up to the window beyond it."""
        with self._wake:
            if k > self._reached:
                self._reached = k
                self._wake.notify()

    def stop(self) -> None:
        """Stop advising (idempotent); returns once the thread has ended."""
        with self._wake:
            self._stopped = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        ahead: deque[tuple[int, int]] = deque()  # (chunk, bytes advised), not yet reached
        advised = 0
        k = 0
        while k < self._n:
            with self._wake:
                while True:
                    if self._stopped:
                        return
                    while ahead and ahead[0][0] < self._reached:
                        advised -= ahead.popleft()[1]
                    if advised < self._window or k <= self._reached:
                        break
                    self._wake.wait()
                k = max(k, self._reached)
            if k >= self._n:
                return
            try:
                size = advise_willneed(self._ranges_of(k))
            except Exception:  # a hint only: the read itself reports any problem
                size = 0
            ahead.append((k, size))
            advised += size
            k += 1
