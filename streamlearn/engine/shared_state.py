"""Per-example state on a scratch zarr store shared by dask workers, one array per partition.

A pass that holds an :class:`~streamlearn.data.example_state.ExampleState` (the dual
variables of dual coordinate descent) cannot share an in-memory array with worker processes.
:class:`SharedExampleState` mirrors it on a path every worker reaches: one zarr array per
partition, so a partition's values stay with the partition from epoch to epoch and no two
tasks write the same storage chunk.

Values are double-buffered: a pass reads buffer ``read`` and writes the other one, and the
engine swaps them only after the whole pass succeeded. A task that is run again (its worker
died, or its result was lost) therefore reads the same values and writes the same results:
a retry never applies an update twice.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.data.state_blocks import StateBlocks, cache_capacity
from streamlearn.errors import EngineError

#: Rows copied at a time between the client's state and the shared store.
COPY_ROWS = 1 << 16


def _rows_only(start: int, n_rows: int) -> Chunk:
    """A chunk with no columns that addresses rows ``start:start + n_rows`` of a state."""
    return Chunk(X=np.empty((n_rows, 0), dtype=np.float32), y=None, start=start)


def state_fingerprint(state: ExampleState) -> str:
    """Hash of all values of ``state``, read ``COPY_ROWS`` rows at a time."""
    digest = hashlib.blake2b(digest_size=16)
    for a in range(0, state.n_rows, COPY_ROWS):
        n = min(COPY_ROWS, state.n_rows - a)
        digest.update(np.ascontiguousarray(state.get(_rows_only(a, n))).tobytes())
    return digest.hexdigest()


@dataclass
class SharedExampleState:
    """Double-buffered copy of an ``ExampleState``, one zarr array per partition and buffer.

    Attributes
    ----------
    root : str
        Directory of the arrays ``{root}/b{buffer}/p{partition}``.
    n_rows : int
    n_columns : int or None
    ranges : list of (start, stop)
        The partitions the arrays follow.
    chunk_rows : int
        Rows per storage chunk: the passes' chunk size, so each chunk written is one
        storage chunk.
    read : int
        The buffer (0 or 1) passes read; the other one is written.
    fingerprint : str
        Hash of the client-side state when the two were last in sync.
    """

    root: str
    n_rows: int
    n_columns: int | None
    ranges: list[tuple[int, int]]
    chunk_rows: int
    read: int = 0
    fingerprint: str = field(default="", compare=False)

    @classmethod
    def create(cls, scratch: str | Path, state: ExampleState, ranges: list[tuple[int, int]],
               chunk_rows: int) -> SharedExampleState:
        """Lay out arrays for ``ranges`` under a new directory of ``scratch``; copy ``state``."""
        root = str(Path(scratch) / f"state-{uuid.uuid4().hex}")
        shared = cls(root, state.n_rows, state.n_columns, list(ranges), int(chunk_rows))
        import zarr

        tail = () if state.n_columns is None else (int(state.n_columns),)
        for buffer in (0, 1):
            for i, (a, b) in enumerate(shared.ranges):
                zarr.create_array(
                    store=shared.path(buffer, i), shape=(b - a, *tail),
                    chunks=(max(1, min(shared.chunk_rows, b - a)), *tail),
                    dtype="float32", fill_value=0.0, overwrite=True)
        shared.push(state)
        return shared

    def path(self, buffer: int, partition: int) -> str:
        """Directory of one partition's array in one buffer."""
        return f"{self.root}/b{buffer}/p{partition}"

    def array(self, buffer: int, partition: int) -> Any:
        """Open one partition's array."""
        import zarr

        return zarr.open_array(self.path(buffer, partition), mode="r+")

    def push(self, state: ExampleState) -> None:
        """Copy the client-side ``state`` into the read buffer."""
        for i, (a, b) in enumerate(self.ranges):
            target = self.array(self.read, i)
            for s in range(a, b, COPY_ROWS):
                e = min(s + COPY_ROWS, b)
                target[s - a : e - a] = state.get(_rows_only(s, e - s))
        self.fingerprint = state_fingerprint(state)

    def pull(self, state: ExampleState) -> None:
        """Copy the read buffer into the client-side ``state``."""
        for i, (a, b) in enumerate(self.ranges):
            source = self.array(self.read, i)
            for s in range(a, b, COPY_ROWS):
                e = min(s + COPY_ROWS, b)
                state.put(_rows_only(s, e - s), np.asarray(source[s - a : e - a]))
        self.fingerprint = state_fingerprint(state)

    def swapped(self) -> SharedExampleState:
        """The same arrays with the buffers' roles exchanged (after a pass wrote)."""
        return SharedExampleState(self.root, self.n_rows, self.n_columns, self.ranges,
                                  self.chunk_rows, 1 - self.read, self.fingerprint)

    def for_partition(self, partition: int, *, writable: bool) -> PartitionState:
        """The view a task walking partition ``partition`` gets in place of the state."""
        return PartitionState(self, partition, writable)

    def remove(self) -> None:
        """Delete the arrays."""
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


class PartitionState:
    """What a pass running on a worker sees as its ``ExampleState``: one partition's rows.

    ``get`` reads a row's value as this task has it (written by an earlier chunk of the
    pass, else from before the pass); ``put`` writes into the other buffer (rows it does
    not carry, e.g. dropped by validation, keep their values). :meth:`complete` stores
    what is still kept and copies the storage chunks the pass did not write, so after a
    sequential pass the written buffer holds every row of the partition. Storage chunks
    are read and written through a
    :class:`~streamlearn.data.state_blocks.StateBlocks` cache: a shuffled walk's chunks
    take rows of every storage chunk of their mixing group, and each storage chunk is
    read and written about once a pass rather than once per chunk of its group.
    """

    def __init__(self, shared: SharedExampleState, partition: int, writable: bool) -> None:
        self.n_rows = shared.n_rows
        self.n_columns = shared.n_columns
        self._shared = shared
        self._lo, self._hi = shared.ranges[partition]
        self._src = shared.array(shared.read, partition)
        self._dst = shared.array(1 - shared.read, partition) if writable else None
        row_values = 1 if shared.n_columns is None else int(shared.n_columns)
        self._blocks = StateBlocks(self._src, self._dst, shared.chunk_rows,
                                   cache_capacity(shared.chunk_rows, row_values))

    @property
    def in_memory(self) -> bool:
        """Always False: values live in the shared store."""
        return False

    def _rows(self, chunk: Chunk) -> np.ndarray:
        """The chunk's rows, counted from the partition's first row (checked inside it)."""
        rows = chunk.rows - self._lo
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self._hi - self._lo):
            raise EngineError(
                f"chunk at row {chunk.start} ({chunk.n_rows} rows) lies outside the "
                f"partition {self._lo}-{self._hi} its per-example state was given for")
        return rows

    def get(self, chunk: Chunk) -> np.ndarray:
        """Values of the chunk's rows, in the chunk's row order (a copy)."""
        return self._blocks.get(self._rows(chunk))

    def put(self, chunk: Chunk, values: np.ndarray) -> None:
        """Store ``values`` (in the chunk's row order) for the chunk's rows."""
        if self._dst is None:
            raise EngineError("a reduction pass cannot write per-example state; make it a "
                              "sequential pass")
        self._blocks.put(self._rows(chunk), values)

    def complete(self) -> None:
        """Store the storage chunks still kept, and copy those no ``put`` wrote from the
        read buffer to the written one."""
        if self._dst is None:
            return
        self._blocks.flush()
        size = self._shared.chunk_rows
        for s in range(0, self._hi - self._lo, size):
            if s not in self._blocks.written:
                e = min(s + size, self._hi - self._lo)
                self._dst[s:e] = self._src[s:e]
