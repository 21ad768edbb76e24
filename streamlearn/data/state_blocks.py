"""Per-row values on a zarr array, read and written by storage chunk through a small cache.

A chunk of a shuffled walk holds rows of every chunk of its mixing group
(:mod:`~streamlearn.data.row_mixing`), and the chunks of a group lie anywhere in the
data. Per-row state stored on disk (an :class:`~streamlearn.data.example_state.ExampleState`
too large for memory, a dask partition's dual variables) is therefore touched, chunk after
chunk, in every storage chunk of the group. :class:`StateBlocks` reads and writes only the
storage chunks a chunk's rows fall in, and keeps the last ones used in memory (those
written go back to the store when they leave, or at :meth:`StateBlocks.flush`): each
storage chunk is then read and written about once a pass instead of once per chunk of its
group. Reading the span between a chunk's first and last row, as the state did before,
read most of the store for every chunk of a shuffled epoch.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from streamlearn.data.row_mixing import MIX_CHUNKS

#: Storage chunks a :class:`StateBlocks` keeps in memory: at most those of one mixing
#: group (:data:`~streamlearn.data.row_mixing.MIX_CHUNKS`) ...
CACHE_CHUNKS = MIX_CHUNKS
#: ... in at most this many bytes (the state of a default group, 4 chunks of 131,072 rows,
#: fits with up to 16 values a row).
CACHE_BYTES = 32 << 20


def cache_capacity(block_rows: int, row_values: int) -> int:
    """Storage chunks of ``block_rows`` rows of ``row_values`` float32 values each that a
    cache keeps: :data:`CACHE_CHUNKS`, fewer where they would take more than
    :data:`CACHE_BYTES`, at least 1."""
    block_bytes = 4 * max(int(row_values), 1) * max(int(block_rows), 1)
    return max(1, min(CACHE_CHUNKS, CACHE_BYTES // block_bytes))


class StateBlocks:
    """Rows of an array read from ``source`` and written to ``target`` a storage chunk at a
    time, the storage chunks last used kept in memory (least recently used out first).

    A row's value is the one last written through this object, else the one in
    ``source``. Written storage chunks reach ``target`` as they leave the cache or at
    :meth:`flush`; :attr:`written` lists those that did.

    Parameters
    ----------
    source : zarr array or ndarray
        Values to start from, ``(n_rows, ...)`` float32.
    target : zarr array or ndarray, or None
        Where written values go: ``source`` itself, another array of the same shape, or
        None (read only: :meth:`put` raises ``ValueError``).
    block_rows : int
        Rows of a storage chunk of both arrays.
    capacity : int
        Storage chunks kept in memory (see :func:`cache_capacity`).
    """

    def __init__(self, source: Any, target: Any, block_rows: int, capacity: int) -> None:
        self._source = source
        self._target = target
        self.n_rows = int(source.shape[0])
        self._tail = tuple(source.shape[1:])
        self.block_rows = max(1, int(block_rows))
        self.capacity = max(1, int(capacity))
        self._kept: OrderedDict[int, np.ndarray] = OrderedDict()
        self._dirty: set[int] = set()
        self.written: set[int] = set()

    def _spans(self, rows: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
        """The storage chunks ``rows`` fall in, as ``(start, stop, positions)``: the rows'
        positions in ``rows`` of each."""
        block = rows // self.block_rows
        order = np.argsort(block, kind="stable")
        bounds = np.flatnonzero(np.diff(block[order])) + 1
        out = []
        for part in np.split(order, bounds):
            if part.size:
                s = int(block[part[0]]) * self.block_rows
                out.append((s, min(s + self.block_rows, self.n_rows), part))
        return out

    def _block(self, s: int, e: int) -> np.ndarray:
        """Storage chunk ``s:e`` as this object has it, kept."""
        values = self._kept.get(s)
        if values is not None:
            self._kept.move_to_end(s)
            return values
        stored = self._target if s in self.written else self._source
        values = np.array(stored[s:e], dtype=np.float32)
        self._kept[s] = values
        while len(self._kept) > self.capacity:
            self._leave(*self._kept.popitem(last=False))
        return values

    def _leave(self, s: int, values: np.ndarray) -> None:
        if s in self._dirty:
            self._target[s : s + len(values)] = values
            self._dirty.discard(s)
            self.written.add(s)

    def get(self, rows: np.ndarray) -> np.ndarray:
        """Values of ``rows`` (int64 positions in the arrays), in their order (a copy)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, *self._tail), dtype=np.float32)
        for s, e, part in self._spans(rows):
            out[part] = self._block(s, e)[rows[part] - s]
        return out

    def put(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Set the values of ``rows`` (in their order)."""
        if self._target is None:
            raise ValueError("these per-row values are read only")
        rows = np.asarray(rows, dtype=np.int64)
        values = np.asarray(values, dtype=np.float32)
        for s, e, part in self._spans(rows):
            self._block(s, e)[rows[part] - s] = values[part]
            self._dirty.add(s)

    def flush(self) -> None:
        """Write every kept storage chunk that was written to ``target`` (they stay kept)."""
        for s in sorted(self._dirty):
            values = self._kept[s]
            self._target[s : s + len(values)] = values
            self.written.add(s)
        self._dirty.clear()
