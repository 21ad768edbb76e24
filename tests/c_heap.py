"""The C heap while a source opens many parquet files: where pyarrow keeps their footers."""

from __future__ import annotations

import ctypes
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def malloc_in_use() -> int:
    """Bytes the C heap has handed out (glibc's ``mallinfo2``): where pyarrow keeps a
    parquet footer, which ``tracemalloc`` does not see."""

    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in names.split()]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    return int(libc.mallinfo2().uordblks)


@contextmanager
def files_in_memory(tables: Sequence[pa.Table], prefix: str) -> Iterator[str]:
    """``tables`` written as ``part-NNNN.parquet`` files of an in-memory directory; yields
    its ``memory://`` URL and removes it afterwards. Skips the test where glibc's
    ``mallinfo2`` is missing."""
    try:
        malloc_in_use()
    except (AttributeError, OSError):
        pytest.skip("needs glibc's mallinfo2")
    fs = fsspec.filesystem("memory")
    root = f"/{prefix}-{uuid.uuid4().hex}"
    try:
        for k, table in enumerate(tables):
            with fs.open(f"{root}/part-{k:04d}.parquet", "wb") as fh:
                pq.write_table(table, fh)
        yield f"memory:/{root}"
    finally:
        fs.rm(root, recursive=True)


def heap_while_opening(
    monkeypatch: pytest.MonkeyPatch, open_files: Callable[[], Any]
) -> tuple[Any, list[int]]:
    """What ``open_files()`` returns, and the C heap in use as each in-memory file is
    opened while it runs."""
    fs = fsspec.filesystem("memory")
    in_use: list[int] = []
    memory_open = type(fs)._open

    def sampled_open(self, *args, **kwargs):
        in_use.append(malloc_in_use())
        return memory_open(self, *args, **kwargs)

    monkeypatch.setattr(type(fs), "_open", sampled_open)
    try:
        opened = open_files()
    finally:
        monkeypatch.undo()
    return opened, in_use
